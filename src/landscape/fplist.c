/* fplist.c: the deduplicated fixed points of the built-in ansätze at (K, M)
 * (fplist.h), the candidates `scm split` and `scm staircase` start from. */
#include "scm/fplist.h"

#include "scm/symstab.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmp_fp(const void *a, const void *b)
{
    const scm_fplist_point *x = a, *y = b;
    return x->eps < y->eps ? -1 : x->eps > y->eps;
}

/* The largest real part of the flow Jacobian's eigenvalues at the state
 * (Q, R) of instance in (polished or not: projected onto the ansatz, since
 * a defective eigenvalue moves like the square root of the state's
 * change), by symmetry; NaN where that is refused. */
static double jac_re_max(const scm_ansatz_inst *in, const scm_activation *act, int nsc,
                         const double *Q, const double *R)
{
    scm_symstab_result res;
    scm_error e;
    double v = NAN, *x = malloc(sizeof *x * (size_t)(nsc > 0 ? nsc : 1));
    memset(&res, 0, sizeof res);
    if (x && scm_ansatz_project(in, Q, R, x, NULL) == SCM_OK &&
        scm_stab_symmetric_jacobian(in, act, x, NULL, &res, &e) == SCM_OK && res.n > 0) {
        v = res.eig[0].value;
        for (int i = 1; i < res.n; i++)
            v = fmax(v, res.eig[i].value);
    }
    scm_symstab_result_free(&res);
    free(x);
    return v;
}

/* Append point q of instance in (k1 of ansatz an) to the list unless it
 * duplicates one; returns 1 when out of memory. */
static int add_point(int K, int M, const scm_ansatz *an, int k1, const scm_ansatz_inst *in,
                     const scm_activation *act, const scm_fp_point *q, scm_fplist_point **c,
                     int *n, int *cap)
{
    scm_fp_structure s;
    scm_fp_classify(in, q->x, &s);
    int dup = 0;
    for (int j = 0; j < *n && !dup; j++)
        dup = fabs((*c)[j].eps - q->eps) < 1e-10 && fabs((*c)[j].trQ - s.trQ) < 1e-6 &&
              fabs((*c)[j].normR2 - s.normR2) < 1e-6;
    if (dup)
        return 0;
    if (*n == *cap) {
        int ncap = *cap ? 2 * *cap : 16;
        scm_fplist_point *nc = realloc(*c, sizeof *nc * (size_t)ncap);
        if (!nc)
            return 1;
        *c = nc;
        *cap = ncap;
    }
    scm_fplist_point *e = &(*c)[*n];
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
        return 1;
    }
    memcpy(e->Q, q->Q, sizeof *e->Q * (size_t)(K * K));
    memcpy(e->R, q->R, sizeof *e->R * (size_t)(K * M));
    e->jac_re_max = jac_re_max(in, act, q->nsc, e->Q, e->R);
    (*n)++;
    return 0;
}

scm_status scm_fplist_find(int K, int M, const scm_activation *act, long starts, int threads,
                           scm_fplist_point **out, int *n_out, scm_error *err)
{
    scm_error e;
    scm_fp_opts o;
    scm_fp_opts_default(&o);
    o.n_random = (int)starts;
    o.threads = threads;
    int n = 0, cap = 0, rc = 0;
    scm_fplist_point *c = NULL;
    for (int a = 0; a < scm_ansatz_builtin_count() && !rc; a++) {
        const char *file, *text = scm_ansatz_builtin_text(a, &file);
        scm_ansatz *an = scm_ansatz_parse(text, strlen(text), file, &e);
        int lo, hi;
        if (!an || scm_ansatz_applies(an, K, M, &lo, &hi) != 1) {
            scm_ansatz_free(an);
            continue;
        }
        for (int k1 = lo; k1 <= hi && !rc; k1++) {
            scm_ansatz_inst *in = scm_ansatz_instantiate(an, (double)K, (double)M, k1, &e);
            scm_fp_set set;
            scm_fp_set_init(&set);
            if (in && scm_fp_enumerate(an, in, act, &o, NULL, 0, &set, &e) == SCM_OK)
                for (int i = 0; i < set.n && !rc; i++) {
                    const scm_fp_point *q = &set.pt[i];
                    double res = q->polished ? q->res_polish : q->res_full;
                    if (q->Q && res < 1e-12)
                        rc = add_point(K, M, an, k1, in, act, q, &c, &n, &cap);
                }
            scm_fp_set_free(&set);
            scm_ansatz_inst_free(in);
        }
        scm_ansatz_free(an);
    }
    if (c)
        qsort(c, (size_t)n, sizeof *c, cmp_fp);
    *out = c;
    *n_out = n;
    return rc ? scm_error_set(err, SCM_ENOMEM, "out of memory listing the fixed points at K = "
                                               "%d, M = %d", K, M)
              : SCM_OK;
}

void scm_fplist_free(scm_fplist_point *fp, int n)
{
    for (int i = 0; fp && i < n; i++) {
        free(fp[i].Q);
        free(fp[i].R);
    }
    free(fp);
}
