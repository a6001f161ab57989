/* fp_list.h (CLI): a thin wrapper of scm_fplist_find (scm/fplist.h), the
 * fixed points the built-in ansätze give at (K, M), used by `scm split`
 * and `scm staircase`; and the defaults of the enumeration options the
 * commands share. */
#ifndef SCM_CLI_FP_LIST_H
#define SCM_CLI_FP_LIST_H

#include "scm/fplist.h"

/* The deflation default of `scm fixed-points` (scm_fp_opts.deflate), which
 * `scm crosscheck` enumerates with too. */
#define SCM_FP_CLI_DEFLATE 2
/* Passes of the k1 sweep (scm_fp_sweep_k1) of `scm fixed-points` without
 * --k1, and of `scm crosscheck` */
#define SCM_FP_CLI_SWEEP_PASSES 8
#define SCM_STR_(x) #x
#define SCM_STR(x) SCM_STR_(x)

/* The list now lives in the library (scm/fplist.h); these names stay for
 * `scm split` and `scm staircase` until they call it directly. */
typedef scm_fplist_point scm_cli_fp;

/* scm_fplist_find on the processors online.  Returns 0, or 1 when out of
 * memory. */
int scm_cli_fp_list(int K, int M, const scm_activation *act, long starts, scm_cli_fp **out,
                    int *nout);
void scm_cli_fp_free(scm_cli_fp *fp, int n);

#endif
