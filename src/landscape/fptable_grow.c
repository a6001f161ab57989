/* fptable_grow.c: scm_fp_table_run with grow_from = M0: every k1 at
 * (K, M) by scm_fp_sweep_grow (continuation in M from M0, probes, the
 * closure in k1), block level: the ansatz scalars, loss, block residual
 * and Gram eigenvalue of each point, no full (Q, R) state, so that it
 * serves K = M = 1000 in about a second.  An ansatz that does not apply at
 * both M0 and M is skipped (an error when it was named). */
#include <stdlib.h>

#include "landscape/fptable_internal.h"

scm_status fpt_grow_run(scm_fp_table *t, int named, const scm_fp_opts *o, scm_error *err)
{
    long K = t->K, M = t->M, M0 = t->grow_from;
    t->grow = calloc((size_t)(t->nans ? t->nans : 1), sizeof *t->grow);
    if (!t->grow)
        return scm_error_set(err, SCM_ENOMEM, "out of memory");
    for (int a = 0; a < t->nans; a++) {
        int lo, hi;
        const char *name = scm_ansatz_name(t->ans[a]);
        if (scm_ansatz_applies(t->ans[a], (int)(M0 + K - M), (int)M0, &lo, &hi) != 1 ||
            scm_ansatz_applies(t->ans[a], (int)K, (int)M, &lo, &hi) != 1) {
            if (named)
                return scm_error_set(err, SCM_EINVAL,
                                     "ansatz '%s' does not apply at M0 = %ld or M = %ld with "
                                     "K - M = %ld", name, M0, M, K - M);
            continue;
        }
        fpt_grow *g = &t->grow[t->ngrow];
        scm_error e;
        int np = (int)(t->probes < 0 ? M / 100 + 1 : t->probes);
        if (np > hi - lo + 1)
            np = hi - lo + 1;
        scm_status st = scm_fp_sweep_grow(t->ans[a], (int)(K - M), (int)M0, (int)M, np,
                                          (int)t->fixed_k1, t->act, o, &g->sw, &g->gs, &e);
        if (st)
            return scm_error_set(err, st == SCM_EINVAL ? SCM_EINVAL : fpt_failed(st),
                                 "ansatz '%s': %s", name, e.msg);
        g->ansatz = a;
        g->probes = np;
        for (int i = 0; i < g->sw.n; i++)
            g->points += g->sw.set[i].n;
        t->ngrow++;
    }
    if (t->ngrow == 0)
        return scm_error_set(err, SCM_EINVAL,
                             "no ansatz applies at both M0 = %ld and M = %ld with K - M = %ld",
                             M0, M, K - M);
    t->grow_done = 1;
    return SCM_OK;
}
