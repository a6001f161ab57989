/* model.c: construction and validation of a teacher-student model. */
#include "scm/model.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/linalg.h"

void scm_model_free(scm_model *m)
{
    if (!m)
        return;
    free(m->T);
    free(m->v);
    free(m->vs);
    free(m);
}

/* Cholesky of the symmetric n x n matrix G shifted by tol * max diag;
 * returns -1 if it succeeds, else the failing pivot. */
static int shifted_cholesky_fails(const double *G, int n, double tol)
{
    double *L = malloc(sizeof *L * (size_t)n * (size_t)n);
    if (!L)
        return -2;
    double dmax = 0.0;
    for (int i = 0; i < n; i++)
        dmax = fmax(dmax, fabs(G[i * n + i]));
    memcpy(L, G, sizeof *L * (size_t)n * (size_t)n);
    double shift = tol * (dmax > 0.0 ? dmax : 1.0);
    for (int i = 0; i < n; i++)
        L[i * n + i] += shift;
    int piv = scm_linalg_cholesky(L, n);
    free(L);
    return piv;
}

scm_model *scm_model_alloc(int K, int M, const scm_activation *act, const double *T,
                           const double *v, const double *vs, scm_error *err)
{
    if (K < 1 || M < 1) {
        scm_error_set(err, SCM_EINVAL, "K and M must be >= 1 (got K = %d, M = %d)", K, M);
        return NULL;
    }
    if (!act) {
        scm_error_set(err, SCM_EINVAL, "no activation given");
        return NULL;
    }
    scm_model *m = calloc(1, sizeof *m);
    if (!m) {
        scm_error_set(err, SCM_ENOMEM, "out of memory allocating the model");
        return NULL;
    }
    m->K = K;
    m->M = M;
    m->act = act;
    m->T = calloc((size_t)M * (size_t)M, sizeof *m->T);
    m->v = malloc(sizeof *m->v * (size_t)K);
    m->vs = malloc(sizeof *m->vs * (size_t)M);
    if (!m->T || !m->v || !m->vs) {
        scm_model_free(m);
        scm_error_set(err, SCM_ENOMEM, "out of memory allocating the model");
        return NULL;
    }
    for (int i = 0; i < M; i++)
        for (int j = 0; j < M; j++)
            m->T[i * M + j] = T ? T[i * M + j] : (i == j);
    for (int k = 0; k < K; k++)
        m->v[k] = v ? v[k] : 1.0;
    for (int n = 0; n < M; n++)
        m->vs[n] = vs ? vs[n] : 1.0;

    for (int i = 0; i < M * M; i++)
        if (!isfinite(m->T[i])) {
            scm_error_set(err, SCM_EINVAL, "T[%d][%d] is not finite", i / M, i % M);
            scm_model_free(m);
            return NULL;
        }
    for (int k = 0; k < K; k++)
        if (!isfinite(m->v[k])) {
            scm_error_set(err, SCM_EINVAL, "v[%d] is not finite", k);
            scm_model_free(m);
            return NULL;
        }
    for (int n = 0; n < M; n++)
        if (!isfinite(m->vs[n])) {
            scm_error_set(err, SCM_EINVAL, "v_star[%d] is not finite", n);
            scm_model_free(m);
            return NULL;
        }
    double tmax = scm_linalg_max_abs(m->T, (long)M * M);
    for (int i = 0; i < M; i++)
        for (int j = 0; j < i; j++)
            if (fabs(m->T[i * M + j] - m->T[j * M + i]) > 1e-12 * tmax) {
                scm_error_set(err, SCM_EINVAL, "T is not symmetric: T[%d][%d] = %.17g but T[%d][%d] = %.17g",
                              i, j, m->T[i * M + j], j, i, m->T[j * M + i]);
                scm_model_free(m);
                return NULL;
            }
    int piv = shifted_cholesky_fails(m->T, M, 1e-12);
    if (piv != -1) {
        if (piv == -2)
            scm_error_set(err, SCM_ENOMEM, "out of memory checking T");
        else
            scm_error_set(err, SCM_ENOTPSD,
                          "T is not positive semi-definite (Cholesky fails at pivot %d)", piv);
        scm_model_free(m);
        return NULL;
    }
    return m;
}

scm_status scm_model_check_state(const scm_model *m, const double *Q, const double *R,
                                 double tol, scm_error *err)
{
    int K = m->K, M = m->M, n = K + M;
    for (long i = 0; i < (long)K * K; i++)
        if (!isfinite(Q[i]))
            return scm_error_set(err, SCM_ENAN, "Q[%ld][%ld] is not finite", i / K, i % K);
    for (long i = 0; i < (long)K * M; i++)
        if (!isfinite(R[i]))
            return scm_error_set(err, SCM_ENAN, "R[%ld][%ld] is not finite", i / M, i % M);
    double *G = malloc(sizeof *G * (size_t)n * (size_t)n);
    if (!G)
        return scm_error_set(err, SCM_ENOMEM, "out of memory checking the state");
    /* Teachers first: the Schur complement then is the part of the students
     * outside the teacher span, the block that drifts at a fixed point. */
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) {
            double g;
            if (i < M && j < M)
                g = m->T[i * M + j];
            else if (i < M)
                g = R[(j - M) * M + i];
            else if (j < M)
                g = R[(i - M) * M + j];
            else
                g = Q[(i - M) * K + (j - M)];
            G[i * n + j] = g;
        }
    int piv = shifted_cholesky_fails(G, n, tol);
    free(G);
    if (piv == -2)
        return scm_error_set(err, SCM_ENOMEM, "out of memory checking the state");
    if (piv != -1)
        return scm_error_set(err, SCM_ENOTPSD,
                             "the Gram matrix [[Q, R], [R^T, T]] is not positive semi-definite "
                             "(Cholesky fails at %s %d)",
                             piv < M ? "teacher" : "student", piv < M ? piv : piv - M);
    return SCM_OK;
}

typedef struct {
    double abs_c;
    int k, m;
} align_pair;

static int align_pair_cmp(const void *a, const void *b)
{
    const align_pair *x = a, *y = b;
    if (x->abs_c != y->abs_c)
        return x->abs_c > y->abs_c ? -1 : 1;
    if (x->k != y->k)
        return x->k < y->k ? -1 : 1;
    return (x->m > y->m) - (x->m < y->m);
}

scm_status scm_model_align(const scm_model *m, const double *Q, const double *R, double dead_q,
                           scm_alignment *kind, int *partner, double *cosine)
{
    const int K = m->K, M = m->M;
    align_pair *pairs = malloc(sizeof *pairs * (size_t)K * (size_t)M + 1);
    int *taken = calloc((size_t)M + 1, sizeof *taken);
    if (!pairs || !taken) {
        free(pairs);
        free(taken);
        return SCM_ENOMEM;
    }
    size_t np = 0;
    for (int k = 0; k < K; k++) {
        double q = Q[(size_t)k * K + k];
        partner[k] = -1;
        if (cosine)
            cosine[k] = 0.0;
        kind[k] = q > dead_q && q > 0.0 ? SCM_ALIGN_UNPAIRED : SCM_ALIGN_DEAD;
        if (kind[k] == SCM_ALIGN_DEAD)
            continue;
        for (int j = 0; j < M; j++) {
            double t = m->T[(size_t)j * M + j];
            if (!(t > 0.0))
                continue; /* a zero teacher has no direction */
            double c = fabs(R[(size_t)k * M + j]) / sqrt(q * t);
            pairs[np++] = (align_pair){isnan(c) ? 0.0 : c, k, j};
        }
    }
    qsort(pairs, np, sizeof *pairs, align_pair_cmp);
    for (size_t i = 0; i < np; i++) {
        int k = pairs[i].k, j = pairs[i].m;
        if (partner[k] >= 0 || taken[j])
            continue;
        partner[k] = j;
        taken[j] = 1;
        double c = R[(size_t)k * M + j] / sqrt(Q[(size_t)k * K + k] * m->T[(size_t)j * M + j]);
        if (cosine)
            cosine[k] = c;
        kind[k] = c < -SCM_ALIGN_COS_TOL  ? SCM_ALIGN_ANTI
                  : c > SCM_ALIGN_COS_TOL ? SCM_ALIGN_ALIGNED
                                          : SCM_ALIGN_NONE;
    }
    free(pairs);
    free(taken);
    return SCM_OK;
}

scm_status scm_model_count_anti(const scm_model *m, const double *Q, const double *R,
                                double dead_q, int *n_anti)
{
    scm_alignment *kind = malloc(sizeof *kind * (size_t)m->K);
    int *partner = malloc(sizeof *partner * (size_t)m->K);
    scm_status st = kind && partner ? scm_model_align(m, Q, R, dead_q, kind, partner, NULL)
                                    : SCM_ENOMEM;
    *n_anti = 0;
    for (int k = 0; st == SCM_OK && k < m->K; k++)
        *n_anti += kind[k] == SCM_ALIGN_ANTI;
    free(kind);
    free(partner);
    return st;
}
