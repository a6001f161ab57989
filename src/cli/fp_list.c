/* fp_list.c (CLI): the fixed-point list of scm/fplist.h on the processors
 * online; see fp_list.h. */
#include "fp_list.h"

#include "cli_util.h"

int scm_cli_fp_list(int K, int M, const scm_activation *act, long starts, scm_cli_fp **out,
                    int *nout)
{
    return scm_fplist_find(K, M, act, starts, cli_cpu_count(), out, nout, NULL) != SCM_OK;
}

void scm_cli_fp_free(scm_cli_fp *fp, int n) { scm_fplist_free(fp, n); }
