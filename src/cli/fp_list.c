/* fp_list.c (CLI): the deduplicated fixed points of the built-in ansätze;
 * see fp_list.h. */
#include "fp_list.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_util.h"

static int cmp_fp(const void *a, const void *b)
{
    const scm_cli_fp *x = a, *y = b;
    return x->eps < y->eps ? -1 : x->eps > y->eps;
}

int scm_cli_fp_list(int K, int M, const scm_activation *act, long starts, scm_cli_fp **out,
                    int *nout)
{
    scm_error err;
    scm_fp_opts o;
    scm_fp_opts_default(&o);
    o.n_random = (int)starts;
    o.threads = cli_cpu_count(); /* the list does not depend on it */
    int n = 0, cap = 0, rc = 0;
    scm_cli_fp *c = NULL;
    for (int a = 0; a < scm_ansatz_builtin_count() && !rc; a++) {
        const char *file, *text = scm_ansatz_builtin_text(a, &file);
        scm_ansatz *an = scm_ansatz_parse(text, strlen(text), file, &err);
        int lo, hi;
        if (!an || scm_ansatz_applies(an, K, M, &lo, &hi) != 1) {
            scm_ansatz_free(an);
            continue;
        }
        for (int k1 = lo; k1 <= hi && !rc; k1++) {
            scm_ansatz_inst *in = scm_ansatz_instantiate(an, (double)K, (double)M, k1, &err);
            scm_fp_set set;
            scm_fp_set_init(&set);
            if (in && scm_fp_enumerate(an, in, act, &o, NULL, 0, &set, &err) == SCM_OK)
                for (int i = 0; i < set.n && !rc; i++) {
                    scm_fp_point *q = &set.pt[i];
                    double res = q->polished ? q->res_polish : q->res_full;
                    if (!q->Q || !(res < 1e-12))
                        continue;
                    scm_fp_structure s;
                    scm_fp_classify(in, q->x, &s);
                    int dup = 0;
                    for (int j = 0; j < n && !dup; j++)
                        dup = fabs(c[j].eps - q->eps) < 1e-10 && fabs(c[j].trQ - s.trQ) < 1e-6 &&
                              fabs(c[j].normR2 - s.normR2) < 1e-6;
                    if (dup)
                        continue;
                    if (n == cap) {
                        cap = cap ? 2 * cap : 16;
                        scm_cli_fp *nc = realloc(c, sizeof *c * (size_t)cap);
                        if (!nc) {
                            rc = 1;
                            break;
                        }
                        c = nc;
                    }
                    scm_cli_fp *e = &c[n];
                    e->eps = q->eps;
                    e->trQ = s.trQ;
                    e->normR2 = s.normR2;
                    e->n_anti = s.n_anti;
                    snprintf(e->ansatz, sizeof e->ansatz, "%s k1 = %d", scm_ansatz_name(an), k1);
                    e->Q = malloc(sizeof *e->Q * (size_t)(K * K));
                    e->R = malloc(sizeof *e->R * (size_t)(K * M));
                    if (!e->Q || !e->R) {
                        free(e->Q);
                        free(e->R);
                        rc = 1;
                        break;
                    }
                    memcpy(e->Q, q->Q, sizeof *e->Q * (size_t)(K * K));
                    memcpy(e->R, q->R, sizeof *e->R * (size_t)(K * M));
                    n++;
                }
            scm_fp_set_free(&set);
            scm_ansatz_inst_free(in);
        }
        scm_ansatz_free(an);
    }
    if (c)
        qsort(c, (size_t)n, sizeof *c, cmp_fp);
    *out = c;
    *nout = n;
    return rc;
}

void scm_cli_fp_free(scm_cli_fp *fp, int n)
{
    for (int i = 0; fp && i < n; i++) {
        free(fp[i].Q);
        free(fp[i].R);
    }
    free(fp);
}
