/* fp_list.h (CLI): the fixed points the built-in ansätze give at (K, M)
 * for an activation (T = I, v = v* = 1): every enumerated point with a
 * full state and full residual < 1e-12, deduplicated across ansätze and k1
 * (same loss to 1e-10, tr Q and ||R||_F^2 to 1e-6), sorted by loss.  Used
 * by `scm split` (choosing a parent) and `scm staircase` (matching
 * plateaus). */
#ifndef SCM_CLI_FP_LIST_H
#define SCM_CLI_FP_LIST_H

#include "scm/fixedpoint.h"

/* The deflation default of `scm fixed-points` (scm_fp_opts.deflate), which
 * `scm crosscheck` enumerates with too. */
#define SCM_FP_CLI_DEFLATE 2
/* Passes of the k1 sweep (scm_fp_sweep_k1) of `scm fixed-points` without
 * --k1, and of `scm crosscheck` */
#define SCM_FP_CLI_SWEEP_PASSES 8
#define SCM_STR_(x) #x
#define SCM_STR(x) SCM_STR_(x)

typedef struct {
    double eps, trQ, normR2, n_anti;
    double *Q, *R;   /* K x K, K x M (owned) */
    char ansatz[64]; /* "name k1 = N" */
} scm_cli_fp;

/* Fills *out (n_out entries; free with scm_cli_fp_free).  Returns 0, or 1
 * when out of memory. */
int scm_cli_fp_list(int K, int M, const scm_activation *act, long starts, scm_cli_fp **out,
                    int *nout);
void scm_cli_fp_free(scm_cli_fp *fp, int n);

#endif
