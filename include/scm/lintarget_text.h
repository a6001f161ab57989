/* lintarget_text.h: the tables of `scm lintarget` as text (studies;
 * lintarget_text.c), so that the library does not print. */
#ifndef SCM_LINTARGET_TEXT_H
#define SCM_LINTARGET_TEXT_H

#include "scm/lintarget.h"

/* The table of the runs of s (scm_lintarget_study_run: per alpha the
 * phase times, rate, drift and stop reason) and, when saddle is nonzero,
 * the saddle manifold's table after a blank line.  NUL-terminated,
 * malloc'ed (the caller frees); NULL if out of memory. */
char *scm_lintarget_study_text(const scm_lintarget_study *s, int saddle);

#endif
