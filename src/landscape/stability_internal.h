/* stability_internal.h: the summaries of perturbation trials and their
 * progress calls, shared by the weight-space test (stability.c) and the
 * (Q, R) test (stability_qr.c). */
#ifndef SCM_STABILITY_INTERNAL_H
#define SCM_STABILITY_INTERNAL_H

#include "scm/stability.h"

/* The median of x[0 .. n-1] (sorts x); NaN when n = 0 or an entry is NaN
 * (a diverged trial: qsort needs an order). */
double scm_stab_median(double *x, int n);

/* The largest of x[0 .. n-1]; NaN when n = 0 or an entry is NaN (fmax
 * would drop a diverged trial). */
double scm_stab_vmax(const double *x, int n);

/* o->progress after trial t (from 0) of row si, if set. */
void scm_stab_progress(const scm_stab_opts *o, int si, int t);

#endif
