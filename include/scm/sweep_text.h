/* sweep_text.h: the summary of a sweep as text (dynamics;
 * sweep_summary_text.c), so that the library does not print. */
#ifndef SCM_SWEEP_TEXT_H
#define SCM_SWEEP_TEXT_H

#include "scm/sweep.h"
#include "scm/sweepfile.h"

/* The runs done of total and how many converged, then one line per class
 * with its count, fraction and 95% Wilson interval, as in the summary's
 * JSON (scm_sweep_summary_json).  NUL-terminated, malloc'ed (the caller
 * frees); NULL if out of memory. */
char *scm_sweep_summary_text(const scm_sweep_summary *sum, long total);

/* The final lines of `scm sweep`: scm_sweep_summary_text, then the timing
 * of new_runs runs in secs seconds on width units (unit: "thread", "rank";
 * plural when width != 1) with runs per second and seconds per run (0 when
 * secs or new_runs is 0).  NULL if out of memory; the caller frees. */
char *scm_sweep_summary_text_timed(const scm_sweep_summary *sum, long total, long new_runs,
                                   double secs, int width, const char *unit);

/* The lines of `scm merge` after writing the summary to out: "merged" with
 * the records read from nfiles files and the summary in brief
 * (scm_sweep_summary_brief), then "wrote" out.  NULL if out of memory;
 * the caller frees. */
char *scm_sweep_merge_text(const scm_sweep_merge_result *res, int nfiles, const char *out);

#endif
