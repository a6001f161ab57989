/* init.c: exact sampling of random initial overlaps; see init.h. */
#include "scm/init.h"

#include <gsl/gsl_eigen.h>
#include <gsl/gsl_errno.h>
#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* L with L L^T = T for a PSD T, from its eigendecomposition (so that a
 * singular T is fine): L = V diag(sqrt(max(lambda, 0))). */
static scm_status teacher_factor(const scm_model *m, double *L, scm_error *err)
{
    const int M = m->M;
    gsl_matrix *A = gsl_matrix_alloc((size_t)M, (size_t)M);
    gsl_matrix *V = gsl_matrix_alloc((size_t)M, (size_t)M);
    gsl_vector *ev = gsl_vector_alloc((size_t)M);
    gsl_eigen_symmv_workspace *w = gsl_eigen_symmv_alloc((size_t)M);
    scm_status st = SCM_OK;
    if (!A || !V || !ev || !w) {
        st = scm_error_set(err, SCM_ENOMEM, "out of memory factorising T");
        goto out;
    }
    for (int i = 0; i < M; i++)
        for (int j = 0; j < M; j++)
            gsl_matrix_set(A, (size_t)i, (size_t)j, m->T[i * M + j]);
    if (gsl_eigen_symmv(A, ev, V, w) != GSL_SUCCESS) {
        st = scm_error_set(err, SCM_ESOLVER, "eigendecomposition of T failed");
        goto out;
    }
    for (int i = 0; i < M; i++)
        for (int j = 0; j < M; j++) {
            double lam = gsl_vector_get(ev, (size_t)j);
            L[i * M + j] = gsl_matrix_get(V, (size_t)i, (size_t)j) * sqrt(lam > 0.0 ? lam : 0.0);
        }
out:
    gsl_matrix_free(A);
    gsl_matrix_free(V);
    gsl_vector_free(ev);
    if (w)
        gsl_eigen_symmv_free(w);
    return st;
}

scm_status scm_init_random(const scm_model *m, long d, double sigma, unsigned long seed,
                           double *Q, double *R, scm_error *err)
{
    const int K = m->K, M = m->M;
    if (d < M)
        return scm_error_set(err, SCM_EINVAL, "init.d = %ld must be >= M = %d", d, M);
    if (!(sigma > 0.0 && isfinite(sigma)))
        return scm_error_set(err, SCM_EINVAL, "init.sigma must be > 0, got %g", sigma);
    const long rest = d - M; /* dimensions orthogonal to the teacher span */
    const int direct = rest < K;
    double *L = malloc(sizeof(double) * (size_t)M * (size_t)M);
    double *a = malloc(sizeof(double) * (size_t)K * (size_t)M);
    double *G = calloc((size_t)K * (size_t)K, sizeof(double));
    double *b = direct && rest > 0 ? malloc(sizeof(double) * (size_t)K * (size_t)rest) : NULL;
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    scm_status st = SCM_OK;
    if (!L || !a || !G || !rng || (direct && rest > 0 && !b)) {
        st = scm_error_set(err, SCM_ENOMEM, "out of memory sampling the initial state");
        goto out;
    }
    if ((st = teacher_factor(m, L, err)))
        goto out;
    gsl_rng_set(rng, seed);
    for (long i = 0; i < (long)K * M; i++)
        a[i] = gsl_ran_gaussian_ziggurat(rng, 1.0);
    if (direct) {
        for (long i = 0; i < (long)K * rest; i++)
            b[i] = gsl_ran_gaussian_ziggurat(rng, 1.0);
        for (int k = 0; k < K; k++)
            for (int l = 0; l <= k; l++) {
                double s = 0.0;
                for (long j = 0; j < rest; j++)
                    s += b[k * rest + j] * b[l * rest + j];
                G[k * K + l] = G[l * K + k] = s;
            }
    } else {
        /* Bartlett: G = C C^T, C lower triangular, C_ii^2 ~ chi^2(rest - i),
         * C_ij ~ N(0, 1) below the diagonal. */
        double *C = calloc((size_t)K * (size_t)K, sizeof(double));
        if (!C) {
            st = scm_error_set(err, SCM_ENOMEM, "out of memory sampling the initial state");
            goto out;
        }
        for (int i = 0; i < K; i++) {
            C[i * K + i] = sqrt(gsl_ran_chisq(rng, (double)(rest - i)));
            for (int j = 0; j < i; j++)
                C[i * K + j] = gsl_ran_gaussian_ziggurat(rng, 1.0);
        }
        for (int k = 0; k < K; k++)
            for (int l = 0; l <= k; l++) {
                double s = 0.0;
                for (int j = 0; j <= l; j++)
                    s += C[k * K + j] * C[l * K + j];
                G[k * K + l] = G[l * K + k] = s;
            }
        free(C);
    }
    const double s2 = sigma * sigma / (double)d, s1 = sigma / sqrt((double)d);
    for (int k = 0; k < K; k++) {
        for (int l = 0; l < K; l++) {
            double s = G[k * K + l];
            for (int j = 0; j < M; j++)
                s += a[k * M + j] * a[l * M + j];
            Q[k * K + l] = s2 * s;
        }
        for (int n = 0; n < M; n++) {
            double s = 0.0;
            for (int j = 0; j < M; j++)
                s += a[k * M + j] * L[n * M + j];
            R[k * M + n] = s1 * s;
        }
    }
out:
    free(L);
    free(a);
    free(G);
    free(b);
    if (rng)
        gsl_rng_free(rng);
    return st;
}

void scm_init_scale(const scm_model *m, double s, double *Q, double *R)
{
    for (long i = 0; i < (long)m->K * m->K; i++)
        Q[i] *= s * s;
    for (long i = 0; i < (long)m->K * m->M; i++)
        R[i] *= s;
}

static const char *const law_names[3] = {"gaussian", "xavier", "xavier_uniform"};

const char *scm_init_law_name(scm_init_law law)
{
    return (unsigned)law < 3 ? law_names[law] : "?";
}

int scm_init_law_find(const char *name, scm_init_law *law)
{
    for (int i = 0; name && i < 3; i++)
        if (strcmp(name, law_names[i]) == 0) {
            *law = (scm_init_law)i;
            return 0;
        }
    return -1;
}

int scm_init_law_needs_d_eq_M(scm_init_law law)
{
    return law == SCM_INIT_LAW_XAVIER || law == SCM_INIT_LAW_XAVIER_UNIFORM;
}

/* The teacher's coordinates: row m of L is w*_m / sqrt(d) on the first M
 * axes (the axes themselves for a diagonal T). */
static scm_status teacher_rows(const scm_model *m, double *L, scm_error *err)
{
    const int M = m->M;
    int diag = 1;
    for (int i = 0; i < M; i++)
        for (int j = 0; j < M; j++)
            if (i != j && m->T[i * M + j] != 0.0)
                diag = 0;
    if (!diag)
        return teacher_factor(m, L, err);
    for (int i = 0; i < M; i++)
        for (int j = 0; j < M; j++)
            L[i * M + j] = i == j ? sqrt(m->T[i * M + i] > 0.0 ? m->T[i * M + i] : 0.0) : 0.0;
    return SCM_OK;
}

/* Uniform coordinates: w_k in R^d with iid U(-sqrt 3, sqrt 3) sigma
 * coordinates, Q = W W^T / d, R_km = w_k . w*_m / d. */
static scm_status init_uniform(const scm_model *m, long d, double sigma, unsigned long seed,
                               double *Q, double *R, scm_error *err)
{
    const int K = m->K, M = m->M;
    double *L = malloc(sizeof(double) * (size_t)M * (size_t)M);
    double *w = malloc(sizeof(double) * (size_t)K * (size_t)d);
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    scm_status st = SCM_OK;
    if (!L || !w || !rng) {
        st = scm_error_set(err, SCM_ENOMEM, "out of memory sampling the initial state");
        goto out;
    }
    if ((st = teacher_rows(m, L, err)))
        goto out;
    gsl_rng_set(rng, seed);
    const double a = sqrt(3.0) * sigma;
    for (long i = 0; i < (long)K * d; i++)
        w[i] = a * (2.0 * gsl_rng_uniform(rng) - 1.0);
    for (int k = 0; k < K; k++) {
        for (int l = 0; l <= k; l++) {
            double s = 0.0;
            for (long j = 0; j < d; j++)
                s += w[k * d + j] * w[l * d + j];
            Q[k * K + l] = Q[l * K + k] = s / (double)d;
        }
        for (int n = 0; n < M; n++) {
            double s = 0.0; /* w*_m = sqrt(d) L_m. on the first M axes */
            for (int j = 0; j < M; j++)
                s += w[k * d + j] * L[n * M + j];
            R[k * M + n] = s / sqrt((double)d);
        }
    }
out:
    free(L);
    free(w);
    if (rng)
        gsl_rng_free(rng);
    return st;
}

scm_status scm_init_sample(const scm_model *m, scm_init_law law, long d, double sigma,
                           unsigned long seed, double *Q, double *R, scm_error *err)
{
    if ((unsigned)law > SCM_INIT_LAW_XAVIER_UNIFORM)
        return scm_error_set(err, SCM_EINVAL, "unknown init.law %d", (int)law);
    if (scm_init_law_needs_d_eq_M(law) && d != m->M)
        return scm_error_set(err, SCM_EINVAL, "init.law \"%s\" needs init.d = model.M = %d, got %ld",
                             law_names[law], m->M, d);
    if (law != SCM_INIT_LAW_XAVIER_UNIFORM)
        return scm_init_random(m, d, sigma, seed, Q, R, err);
    if (d < m->M)
        return scm_error_set(err, SCM_EINVAL, "init.d = %ld must be >= M = %d", d, m->M);
    if (!(sigma > 0.0 && isfinite(sigma)))
        return scm_error_set(err, SCM_EINVAL, "init.sigma must be > 0, got %g", sigma);
    return init_uniform(m, d, sigma, seed, Q, R, err);
}
