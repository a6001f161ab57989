/* family.c: the points of one k1 family (family.h): enumeration over the
 * ansätze, the specialised points with k1 anti-aligned students, merged,
 * sorted by loss and classified by the flow's Jacobian. */
#include "scm/family.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *scm_fam_class_str(scm_fam_class c)
{
    switch (c) {
    case SCM_FAM_SADDLE_BLOCK:
        return "saddle (block)";
    case SCM_FAM_SADDLE:
        return "saddle";
    case SCM_FAM_MIN_CANDIDATE:
        return "min_candidate";
    case SCM_FAM_BLOCK_STABLE:
        break;
    }
    return "block_stable (full not checked)";
}

static void point_free(scm_fam_point *p)
{
    free(p->names);
    free(p->x);
    free(p->Q);
    free(p->R);
}

void scm_family_free(scm_family *fam)
{
    for (int i = 0; i < fam->n; i++)
        point_free(&fam->pt[i]);
    free(fam->pt);
    memset(fam, 0, sizeof *fam);
}

/* The merge criterion of scm fixed-points and the plateau table. */
static int same_point(const scm_fam_point *a, double eps, const scm_fp_structure *s)
{
    const double tol = 1e-9;
    return fabs(a->eps - eps) <= tol * fmax(1e-3, fabs(eps)) &&
           fabs(a->trQ - s->trQ) <= tol * fmax(1.0, fabs(s->trQ)) &&
           fabs(a->normR2 - s->normR2) <= tol * fmax(1.0, fabs(s->normR2));
}

/* Append point p of instance in (ansatz name, instance k1) to fam, or count
 * a hit on the point it duplicates. */
static scm_status add_point(scm_family *fam, const scm_ansatz_inst *in, const char *ansatz,
                            int inst_k1, const scm_fp_point *p, const scm_fp_structure *s,
                            scm_blockflow *bf)
{
    double eps = p->polished ? p->eps_polish : p->eps;
    for (int i = 0; i < fam->n; i++)
        if (same_point(&fam->pt[i], eps, s)) {
            fam->pt[i].hits += p->hits;
            return SCM_OK;
        }
    scm_fam_point *np = realloc(fam->pt, sizeof *np * (size_t)(fam->n + 1));
    if (!np)
        return SCM_ENOMEM;
    fam->pt = np;
    scm_fam_point *q = &fam->pt[fam->n];
    memset(q, 0, sizeof *q);
    const size_t KK = (size_t)fam->K * fam->K, KM = (size_t)fam->K * fam->M;
    q->nsc = p->nsc;
    q->names = malloc(sizeof *q->names * (size_t)(p->nsc + 1));
    q->x = malloc(sizeof *q->x * (size_t)(p->nsc + 1));
    q->Q = malloc(sizeof *q->Q * KK);
    q->R = malloc(sizeof *q->R * KM + 1);
    if (!q->names || !q->x || !q->Q || !q->R) {
        point_free(q);
        return SCM_ENOMEM;
    }
    fam->n++;
    for (int c = 0; c < p->nsc; c++)
        snprintf(q->names[c], sizeof q->names[c], "%s", scm_ansatz_inst_scalar_name(in, c));
    memcpy(q->x, p->x, sizeof *q->x * (size_t)p->nsc);
    memcpy(q->Q, p->Q, sizeof *q->Q * KK);
    memcpy(q->R, p->R, sizeof *q->R * KM);
    q->eps = eps;
    q->res = p->polished ? p->res_polish : p->res_full;
    q->trQ = s->trQ;
    q->normR2 = s->normR2;
    q->full_re_max = NAN;
    snprintf(q->ansatz, sizeof q->ansatz, "%s", ansatz);
    q->instance = inst_k1;
    q->n_anti = fam->k1;
    q->hits = p->hits;
    q->block_re_max = NAN;
    q->cls = SCM_FAM_BLOCK_STABLE;
    if (eps > SCM_FAM_RES_TOL &&
        scm_fp_block_stability(bf, p->x, &q->block_re_max, NULL) == SCM_OK &&
        q->block_re_max > SCM_FAM_EIG_TOL)
        q->cls = SCM_FAM_SADDLE_BLOCK;
    return SCM_OK;
}

/* Enumerate one instance and add its family members. */
static scm_status scan_instance(scm_family *fam, const scm_ansatz *a, int kk,
                                const scm_activation *act, const scm_fp_opts *o, scm_error *err)
{
    scm_ansatz_inst *in = scm_ansatz_instantiate(a, fam->K, fam->M, kk, err);
    if (!in)
        return SCM_OK; /* the instance does not exist here (a negative size) */
    scm_blockflow *bf = scm_blockflow_alloc(in, act);
    scm_fp_set set;
    scm_fp_set_init(&set);
    scm_status st = bf ? scm_fp_enumerate(a, in, act, o, NULL, 0, &set, err) : SCM_ENOMEM;
    fam->n_instances++;
    for (int i = 0; st == SCM_OK && i < set.n; i++) {
        const scm_fp_point *p = &set.pt[i];
        scm_fp_structure s;
        double res = p->polished ? p->res_polish : p->res_full;
        if (!p->Q || !(res < SCM_FAM_RES_TOL))
            continue;
        st = scm_fp_classify(in, p->x, &s);
        if (st == SCM_OK && s.n_anti == (double)fam->k1 && s.n_other == (double)(fam->K - fam->M))
            st = add_point(fam, in, scm_ansatz_name(a), kk, p, &s, bf);
    }
    if (st == SCM_ENOMEM)
        scm_error_set(err, st, "out of memory enumerating the family");
    scm_fp_set_free(&set);
    scm_blockflow_free(bf);
    scm_ansatz_inst_free(in);
    return st;
}

static int cmp_loss(const void *pa, const void *pb)
{
    const scm_fam_point *a = pa, *b = pb;
    return (a->eps > b->eps) - (a->eps < b->eps);
}

scm_status scm_family_find(int K, int M, int k1, scm_ansatz *const *ans, int n_ans,
                           const scm_activation *act, const scm_fp_opts *o, scm_family *fam,
                           scm_error *err)
{
    memset(fam, 0, sizeof *fam);
    fam->K = K;
    fam->M = M;
    fam->k1 = k1;
    if (K < 1 || M < 1 || k1 < 0 || k1 > K)
        return scm_error_set(err, SCM_EINVAL, "family K = %d, M = %d, k1 = %d out of range", K,
                             M, k1);
    int applied = 0;
    for (int a = 0; a < n_ans; a++) {
        int lo, hi;
        if (scm_ansatz_applies(ans[a], K, M, &lo, &hi) != 1)
            continue;
        applied++;
        for (int kk = lo; kk <= hi; kk++) {
            if (kk != k1 && !(K == M && kk == K - k1))
                continue;
            scm_status st = scan_instance(fam, ans[a], kk, act, o, err);
            if (st)
                return st;
        }
    }
    if (!applied)
        return scm_error_set(err, SCM_EINVAL, "no ansatz applies at K = %d, M = %d", K, M);
    if (fam->n > 1) /* qsort's array may not be NULL, even for no element */
        qsort(fam->pt, (size_t)fam->n, sizeof *fam->pt, cmp_loss);
    return SCM_OK;
}

scm_status scm_family_check_full(scm_family *fam, int i, const scm_activation *act,
                                 scm_error *err)
{
    scm_fam_point *p = &fam->pt[i];
    if (p->cls != SCM_FAM_BLOCK_STABLE)
        return SCM_OK;
    scm_model *m = scm_model_alloc(fam->K, fam->M, act, NULL, NULL, NULL, err);
    scm_flow *fl = m ? scm_flow_alloc(m) : NULL;
    scm_status st = fl ? scm_fp_full_stability(fl, p->Q, p->R, &p->full_re_max, NULL) : SCM_ENOMEM;
    if (st == SCM_OK)
        p->cls = p->full_re_max > SCM_FAM_EIG_TOL ? SCM_FAM_SADDLE : SCM_FAM_MIN_CANDIDATE;
    else
        scm_error_set(err, st, "full Jacobian of the point at loss %.12g: %s", p->eps,
                      scm_status_str(st));
    scm_flow_free(fl);
    scm_model_free(m);
    return st;
}

scm_status scm_family_default(scm_family *fam, const scm_activation *act, int *index,
                              scm_error *err)
{
    *index = -1;
    for (int i = 0; i < fam->n; i++) {
        scm_status st = scm_family_check_full(fam, i, act, err);
        if (st)
            return st;
        if (fam->pt[i].cls == SCM_FAM_MIN_CANDIDATE) {
            *index = i;
            return SCM_OK;
        }
    }
    return SCM_OK;
}

int scm_family_by_loss(const scm_family *fam, double eps, double rtol)
{
    int best = -1;
    for (int i = 0; i < fam->n; i++) {
        double d = fabs(fam->pt[i].eps - eps);
        if (d <= rtol * fabs(eps) && (best < 0 || d < fabs(fam->pt[best].eps - eps)))
            best = i;
    }
    return best;
}
