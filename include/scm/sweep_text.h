/* sweep_text.h: the summary of a sweep as text (dynamics;
 * sweep_summary_text.c), so that the library does not print. */
#ifndef SCM_SWEEP_TEXT_H
#define SCM_SWEEP_TEXT_H

#include "scm/sweep.h"

/* The runs done of total and how many converged, then one line per class
 * with its count, fraction and 95% Wilson interval, as in the summary's
 * JSON (scm_sweep_summary_json).  NUL-terminated, malloc'ed (the caller
 * frees); NULL if out of memory. */
char *scm_sweep_summary_text(const scm_sweep_summary *sum, long total);

#endif
