/* crosscheck_internal.h: what the files of the cross-check share
 * (crosscheck.c, crosscheck_gd.c, crosscheck_check.c,
 * crosscheck_report.c); not installed. */
#ifndef SCM_CROSSCHECK_INTERNAL_H
#define SCM_CROSSCHECK_INTERNAL_H

#include <stddef.h>

#include "scm/crosscheck.h"

/* max |x_i|, NaN if one is not finite. */
double scm_xc_max_abs(const double *x, size_t n);

/* Gradient descent in weight space, d = M, teachers sqrt(M) e_m, from the
 * students drawn with seed (crosscheck.h).  On return Q (K x K) and R
 * (K x M) hold the overlaps of the last iterate and r->converged, r->why,
 * r->res, r->work are set.  Errors: no memory (a run that fails
 * numerically is a run with converged = 0). */
scm_status scm_xc_gd_run(int K, int M, const scm_activation *act, unsigned long seed,
                         const scm_xc_opts *o, double *Q, double *R, scm_xc_run *r,
                         scm_error *err);

/* A distinct unmatched loss: a loss within the match tolerance of an
 * earlier one is counted with it. */
typedef struct {
    double eps;
    int count[2];         /* per method */
    long first_index[2];  /* its first run per method (-1: none) */
} scm_xc_umloss;

struct scm_xc_check {
    int K, M;
    const scm_activation *act;
    long runs, seed, first, starts, fp_seed, deflate, sweep_passes;
    int threads;
    int meth_lo, meth_hi;        /* the methods, SCM_XC_ODE .. SCM_XC_GD */
    scm_ansatz *ans[SCM_XC_MAX_ANSATZ];
    int n_ans;
    scm_fp_opts fo;              /* the enumeration's options */
    scm_xc_opts xo;
    scm_xc_list *lists;          /* [K + 1]: the list at K' once done[K'] */
    int *done;
    const scm_xc_list *main_list; /* lists[K] after the enumeration */
    double t_enum;
    scm_xc_run *run;             /* [runs * methods]: nrun filled */
    long nrun;
    scm_xc_umloss *um;           /* the distinct unmatched losses, num of them */
    int num;
    int *counts;                 /* [2 * main_list->n]: runs per point and method */
    scm_xc_tally tally[2];
};

#endif
