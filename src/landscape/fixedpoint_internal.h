/* fixedpoint_internal.h (internal): what the files of the fixed-point search
 * share.  fixedpoint.c (the block-level Newton enumeration and the drivers
 * that check or polish many points on threads) calls the full-space work
 * on one point in fixedpoint_full.c through the declarations below; the
 * continuation in M (fixedpoint_continue.c) uses only scm/fixedpoint.h. */
#ifndef SCM_FIXEDPOINT_INTERNAL_H
#define SCM_FIXEDPOINT_INTERNAL_H

#include <math.h>

#include "landscape/ansatz_internal.h"
#include "scm/fixedpoint.h"
#include "scm/model.h"

/* max |x_i|, or NaN as soon as an x_i is NaN (fmax alone would drop it, and
 * a residual with a NaN entry would pass for a small one). */
static inline double scm_fp_max_abs(const double *x, long n)
{
    double m = 0.0;
    for (long i = 0; i < n; i++) {
        if (isnan(x[i]))
            return NAN;
        m = fmax(m, fabs(x[i]));
    }
    return m;
}

/* The full (K, M) space's model and flow, for the checks and the polish;
 * one per thread.  Both NULL when not allocated. */
typedef struct {
    scm_model *m;
    scm_flow *fl;
} scm_fp_full_space;

/* Allocate f's model (T = I, v = v* = 1) and flow for (K, M) and act.
 * SCM_ENOMEM (err set) or the model's error; on failure f->m, f->fl are
 * NULL.  Free with scm_fp_full_space_free (also safe on a zeroed f). */
scm_status scm_fp_full_space_alloc(scm_fp_full_space *f, int K, int M, const scm_activation *act,
                                   scm_error *err);
void scm_fp_full_space_free(scm_fp_full_space *f);

/* The full-space polish of point p on fl, a flow of p's (K, M): p->Q, p->R
 * (its full state) are polished in place by scm_fp_polish and the polish
 * fields filled (polished, polish_status, res_polish, polish_shift,
 * eps_polish).  A polish that does not converge is recorded, not an error;
 * errors only for no memory. */
scm_status scm_fp_full_polish_point(scm_fp_point *p, scm_flow *fl, const scm_fp_opts *o,
                                    scm_error *err);

/* Full-space checks of block solution p of instance in on fl, a flow of
 * the instance's integer (K, M); Fblock is the block residual at p->x.
 * Allocates p->Q, p->R (owned by p) with the full state, fills full,
 * res_full, eps_full, inv_dev, block_vs_full, and polishes p unless
 * K > o->polish_max_K or o->polish_defer.  A flow that fails at the
 * state leaves p->full = 0; errors only for no memory. */
scm_status scm_fp_full_checks(scm_fp_point *p, const scm_ansatz_inst *in, scm_flow *fl,
                              const scm_fp_opts *o, const double *Fblock, scm_error *err);

#endif
