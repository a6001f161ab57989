/* test_sgd.c: the eta term of one-pass SGD (sgd.h).
 *
 *  1. the four-variate orthant probability against exact values (1/5 for
 *     equicorrelation 1/2, products for block-independent covariances);
 *  2. I4 for erf against a 4-D Gauss-Hermite product quadrature (a different
 *     computation: no tilting identity) to 1e-9, and for ReLU against exact
 *     special cases (repeated arguments, independent blocks) to 1e-10;
 *  3. I4 for all activations against seeded Monte Carlo (5 sigma) at awkward
 *     covariances, repeated and parallel arguments included;
 *  4. G against a weight-space Monte Carlo: realised W, W*, fresh x, noisy
 *     labels, delta_k delta_l averaged (5 sigma);
 *  5. the eta-term scaling: one SGD step in large d moves Q by
 *     (eta/d)(F_Q + eta G) on average;
 *  6. dead ReLU students give zero rows; bad inputs give statuses;
 *  7. G (erf: shared pair quantities; ReLU: shared P4) against the
 *     term-by-term sum of scm_sgd_i4 at random states (1e-13, 1e-10). */
#include <gsl/gsl_eigen.h>
#include <gsl/gsl_errno.h>
#include <gsl/gsl_integration.h>
#include <gsl/gsl_linalg.h>
#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scm/flow.h"
#include "scm/init.h"
#include "scm/rule.h"
#include "scm/sgd.h"
#include "scm/traj.h"
#include "scm/weights.h"
#include "testutil.h"

static const scm_activation *const acts[] = {&scm_act_relu, &scm_act_erf, &scm_act_linear};

/* Covariance L L^T / norm from a 4 x r factor (awkward entries). */
static void cov_from(const double *L, int r, double *C)
{
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++) {
            double s = 0.0;
            for (int k = 0; k < r; k++)
                s += L[i * r + k] * L[j * r + k];
            C[i * 4 + j] = s;
        }
}

/* A set of test covariances: generic, correlated, repeated (a = b, a = c,
 * c = e, a = b = c = e), parallel with other norms, rank 3. */
#define N_COV 9
static void test_cov(int t, double *C)
{
    static const double gen[16] = {1.385, 0.2, -0.31, 0.1,   0.4, 0.877, 0.15, -0.5,
                                   -0.27, 0.6, 1.12,  0.33,  0.05, -0.44, 0.29, 0.71};
    double L[16];
    memcpy(L, gen, sizeof L);
    switch (t) {
    case 0:
        break; /* generic */
    case 1:    /* strongly correlated */
        for (int k = 0; k < 4; k++)
            L[4 + k] = 0.9 * L[k] + 0.2 * L[4 + k], L[12 + k] = -0.8 * L[8 + k] + 0.3 * L[12 + k];
        break;
    case 2: /* a = b */
        memcpy(L + 4, L, 4 * sizeof *L);
        break;
    case 3: /* a = c */
        memcpy(L + 8, L, 4 * sizeof *L);
        break;
    case 4: /* c = e */
        memcpy(L + 12, L + 8, 4 * sizeof *L);
        break;
    case 5: /* a = b = c = e */
        for (int i = 1; i < 4; i++)
            memcpy(L + 4 * i, L, 4 * sizeof *L);
        break;
    case 6: /* e parallel to b, another norm; a = c */
        for (int k = 0; k < 4; k++)
            L[12 + k] = 0.385 * L[4 + k];
        memcpy(L + 8, L, 4 * sizeof *L);
        break;
    case 7: /* rank 3: e in the span of a, b, c */
        for (int k = 0; k < 4; k++)
            L[12 + k] = 0.5 * L[k] - 0.7 * L[4 + k] + 0.385 * L[8 + k];
        break;
    default: /* c anti-parallel to a */
        for (int k = 0; k < 4; k++)
            L[8 + k] = -0.6 * L[k];
        break;
    }
    cov_from(L, 4, C);
}

/* Symmetric square root factor of C (4 x 4, PSD): C = F F^T. */
static void sqrt_factor(const double *C, double *F)
{
    gsl_matrix *A = gsl_matrix_alloc(4, 4), *V = gsl_matrix_alloc(4, 4);
    gsl_vector *e = gsl_vector_alloc(4);
    gsl_eigen_symmv_workspace *ws = gsl_eigen_symmv_alloc(4);
    for (int i = 0; i < 16; i++)
        A->data[i] = C[i];
    gsl_eigen_symmv(A, e, V, ws);
    for (int i = 0; i < 4; i++)
        for (int k = 0; k < 4; k++)
            F[i * 4 + k] = gsl_matrix_get(V, i, k) * sqrt(fmax(gsl_vector_get(e, k), 0.0));
    gsl_eigen_symmv_free(ws);
    gsl_vector_free(e);
    gsl_matrix_free(V);
    gsl_matrix_free(A);
}

static double act_i4_sample(const scm_activation *act, const double *x)
{
    return act->dg(x[0]) * act->dg(x[1]) * act->g(x[2]) * act->g(x[3]);
}

/* 1. Orthant probabilities. */
static void test_orthant(scm_sgd_work *w)
{
    double C[16], p;
    for (int i = 0; i < 16; i++)
        C[i] = i % 5 == 0 ? 2.385 : 0.5 * 2.385;
    CHECK(scm_sgd_orthant4(C, &p, w) == SCM_OK, "orthant4 status");
    CHECK_CLOSE(p, 0.2, 1e-11, 0.0, "P4 equicorrelated 1/2 = 1/5");
    /* independent blocks (0,1) and (2,3), with cross terms zero */
    double r = 0.385, s = -0.71;
    memset(C, 0, sizeof C);
    C[0] = 1.3, C[5] = 0.7, C[10] = 2.1, C[15] = 0.45;
    C[1] = C[4] = r * sqrt(C[0] * C[5]);
    C[11] = C[14] = s * sqrt(C[10] * C[15]);
    CHECK(scm_sgd_orthant4(C, &p, w) == SCM_OK, "orthant4 status");
    double want = (0.25 + asin(r) / (2 * M_PI)) * (0.25 + asin(s) / (2 * M_PI));
    CHECK_CLOSE(p, want, 1e-11, 0.0, "P4 block product");
    /* one variable independent of three: P4 = P3 / 2 (trivariate closed form) */
    double L[16] = {1, 0, 0, 0, 0.3, 0.9, 0, 0, -0.4, 0.2, 0.8, 0, 0, 0, 0, 1.7};
    cov_from(L, 4, C);
    CHECK(scm_sgd_orthant4(C, &p, w) == SCM_OK, "orthant4 status");
    double r01 = C[1] / sqrt(C[0] * C[5]), r02 = C[2] / sqrt(C[0] * C[10]),
           r12 = C[6] / sqrt(C[5] * C[10]);
    want = 0.5 * (0.125 + (asin(r01) + asin(r02) + asin(r12)) / (4 * M_PI));
    CHECK_CLOSE(p, want, 1e-11, 0.0, "P4 = P3 / 2");
}

/* 2a. erf I4 by a 4-D Gauss-Hermite product rule on x = F z. */
static double erf_i4_gh(const double *C)
{
    enum { N = 64 }; /* converged to ~1e-11 at these covariances (40 is not) */
    gsl_integration_fixed_workspace *q =
        gsl_integration_fixed_alloc(gsl_integration_fixed_hermite, N, 0.0, 0.5, 0.0, 0.0);
    const double *z = gsl_integration_fixed_nodes(q), *wt = gsl_integration_fixed_weights(q);
    double F[16], sum = 0.0, norm = 0.0;
    sqrt_factor(C, F);
    for (int i = 0; i < N; i++)
        norm += wt[i];
    for (int i = 0; i < N; i++)
        for (int j = 0; j < N; j++)
            for (int k = 0; k < N; k++)
                for (int l = 0; l < N; l++) {
                    double zz[4] = {z[i], z[j], z[k], z[l]}, x[4];
                    for (int a = 0; a < 4; a++)
                        x[a] = F[a * 4] * zz[0] + F[a * 4 + 1] * zz[1] + F[a * 4 + 2] * zz[2] +
                               F[a * 4 + 3] * zz[3];
                    sum += wt[i] * wt[j] * wt[k] * wt[l] * act_i4_sample(&scm_act_erf, x);
                }
    gsl_integration_fixed_free(q);
    return sum / (norm * norm * norm * norm);
}

/* g'(x)^2 g(x)^2 phi(z), x = sd z */
static double erf_diag_integrand(double z, void *p)
{
    double x = *(double *)p * z;
    return act_i4_sample(&scm_act_erf, (double[4]){x, x, x, x}) * exp(-0.5 * z * z) /
           sqrt(2 * M_PI);
}

static double relu_pair_f(double a, double b, double c)
{
    scm_pair p;
    scm_act_relu.pair(a, b, c, &p);
    return p.f;
}

static void test_exact(scm_sgd_work *w)
{
    double C[16], got;
    for (int t = 0; t < N_COV; t++) {
        if (t == 0 || t == 1 || t == 3 || t == 7) { /* a sample; GH costs 1.7e7 points */
            test_cov(t, C);
            CHECK(scm_sgd_i4(&scm_act_erf, C, &got, NULL) == SCM_OK, "erf status");
            CHECK_CLOSE(got, erf_i4_gh(C), 1e-9, 1e-12, "erf I4 vs Gauss-Hermite");
        }
    }
    /* erf, a = b = c = e: a 1-D integral (GH converges slowly along it) */
    test_cov(5, C);
    {
        double sd = sqrt(C[0]), val, err;
        gsl_function F = {erf_diag_integrand, &sd};
        gsl_integration_workspace *iw = gsl_integration_workspace_alloc(200);
        gsl_integration_qagi(&F, 0.0, 1e-13, 200, iw, &val, &err);
        gsl_integration_workspace_free(iw);
        CHECK(scm_sgd_i4(&scm_act_erf, C, &got, NULL) == SCM_OK, "erf status");
        CHECK_CLOSE(got, val, 1e-10, 0.0, "erf I4 (a, a, a, a) vs 1-D quadrature");
    }
    /* ReLU: a = b = c = e of variance q: E[1(a > 0) a^2] = q / 2 */
    test_cov(5, C);
    CHECK(scm_sgd_i4(&scm_act_relu, C, &got, w) == SCM_OK, "relu status");
    CHECK_CLOSE(got, C[0] / 2, 1e-12, 0.0, "relu I4 all equal");
    /* independent blocks: I4 = P(a > 0, b > 0) f(c, e) */
    memset(C, 0, sizeof C);
    C[0] = 1.3, C[5] = 0.7, C[10] = 2.1, C[15] = 0.45;
    C[1] = C[4] = 0.385 * sqrt(C[0] * C[5]);
    C[11] = C[14] = -0.2 * sqrt(C[10] * C[15]);
    CHECK(scm_sgd_i4(&scm_act_relu, C, &got, w) == SCM_OK, "relu status");
    CHECK_CLOSE(got, (0.25 + asin(0.385) / (2 * M_PI)) * relu_pair_f(C[10], C[15], C[11]), 1e-10,
                0.0, "relu I4 independent blocks");
    /* a = b, c = e: E[1(a > 0) c+^2], and a = c, b = e: E[a+ b+] = f */
    double L[16] = {1.1, 0.3, 0, 0, 1.1, 0.3, 0, 0, -0.4, 0.9, 0.2, 0, -0.4, 0.9, 0.2, 0};
    cov_from(L, 4, C);
    double want_ac = 0.0;
    { /* E[1(a>0) c+^2] = E[c^2 1(a>0,c>0)]: by a 1-D integral over the angle */
        double ra = sqrt(C[0]), rc = sqrt(C[10]), rho = C[2] / (ra * rc);
        double th = acos(rho); /* angle between a and c */
        /* E[c^2 1(...)] = C_cc * (1/pi) int_{cone} cos^2 = C_cc/(2 pi) [(pi-th) + sin(th)cos(th)]
         * with c = rc (cos(phi)), region of width pi - th. */
        want_ac = C[10] / (2 * M_PI) * ((M_PI - th) + sin(th) * cos(th));
    }
    CHECK(scm_sgd_i4(&scm_act_relu, C, &got, w) == SCM_OK, "relu status");
    CHECK_CLOSE(got, want_ac, 1e-10, 0.0, "relu I4 (a, a, c, c)");
    double L2[16] = {1.1, 0.3, 0, 0, -0.4, 0.9, 0.2, 0, 1.1, 0.3, 0, 0, -0.4, 0.9, 0.2, 0};
    cov_from(L2, 4, C);
    CHECK(scm_sgd_i4(&scm_act_relu, C, &got, w) == SCM_OK, "relu status");
    CHECK_CLOSE(got, relu_pair_f(C[0], C[5], C[1]), 1e-10, 0.0, "relu I4 (a, b, a, b) = f");
}

/* 2b. ReLU I4 by a different reduction: x = L z with L the Cholesky factor
 * (order a, b, c, e), so that the orthant is z1 > 0, z2 > t2(z1), z3 >
 * t3(z1, z2), z4 > t4(z1, z2, z3); the z4 integral of e 1(e > 0) phi(z4) is
 * m Phi(m / s) + s phi(m / s) (e = m + s z4), and the other three are nested
 * GSL qagiu integrals of smooth functions on their domains. */
typedef struct {
    double L[4][4], z[3];
    gsl_integration_workspace *ws[3];
} nest;

static double nest_level(double zk, void *p);
static double nest_int(nest *q, int level)
{
    double lo = 0.0; /* z_level > -(sum_{j<level} L_lj z_j) / L_ll */
    for (int j = 0; j < level; j++)
        lo -= q->L[level][j] * q->z[j];
    lo /= q->L[level][level];
    struct {
        nest *q;
        int level;
    } arg = {q, level};
    gsl_function F = {nest_level, &arg};
    double val, err;
    /* phi(z) < 1e-23 beyond |z| = 10: a finite range keeps the
     * integrand's scale (qagiu's map to (0, 1] loses the narrow ones) */
    gsl_integration_qag(&F, lo, fmax(lo, 0.0) + 10.0, 1e-15, 1e-12, 1000, GSL_INTEG_GAUSS31,
                        q->ws[level], &val, &err);
    return val;
}

static double nest_level(double zk, void *p)
{
    struct {
        nest *q;
        int level;
    } *arg = p;
    nest *q = arg->q;
    int level = arg->level;
    q->z[level] = zk;
    double w = exp(-0.5 * zk * zk) / sqrt(2 * M_PI);
    if (level < 2)
        return w * nest_int(q, level + 1);
    double c = q->L[2][0] * q->z[0] + q->L[2][1] * q->z[1] + q->L[2][2] * q->z[2];
    double m = q->L[3][0] * q->z[0] + q->L[3][1] * q->z[1] + q->L[3][2] * q->z[2],
           s = q->L[3][3];
    return w * c * (m * 0.5 * erfc(-m / s / sqrt(2.0)) + s * exp(-0.5 * m * m / (s * s)) / sqrt(2 * M_PI));
}

static double relu_i4_nested(const double *C)
{
    nest q;
    gsl_matrix *A = gsl_matrix_alloc(4, 4);
    for (int i = 0; i < 16; i++)
        A->data[i] = C[i];
    gsl_linalg_cholesky_decomp1(A);
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++)
            q.L[i][j] = j <= i ? gsl_matrix_get(A, i, j) : 0.0;
    gsl_matrix_free(A);
    for (int k = 0; k < 3; k++)
        q.ws[k] = gsl_integration_workspace_alloc(1000);
    double v = nest_int(&q, 0);
    for (int k = 0; k < 3; k++)
        gsl_integration_workspace_free(q.ws[k]);
    return v;
}

static void test_relu_nested(scm_sgd_work *w)
{
    /* a = b (the diagonal of G): I4(a, a, c, e) = E[1(a > 0) c+ e+] =
     * 2 I4(a, b', c, e) with b' independent of the rest, full rank */
    const double qs[4] = {0.385, 1.385, 2.7183, 0.1};
    for (int t = 0; t < 4; t++) {
        double C[16], D[16], got;
        test_cov(0, C);
        for (int i = 0; i < 4; i++) /* a of variance qs[t]: rescale row/col 0 */
            for (int j = 0; j < 4; j++)
                C[i * 4 + j] *= (i == 0 ? sqrt(qs[t] / 1.385 / 1.385) : 1.0) *
                                (j == 0 ? sqrt(qs[t] / 1.385 / 1.385) : 1.0);
        memcpy(D, C, sizeof D);
        for (int i = 0; i < 4; i++)
            C[4 + i] = C[i * 4 + 1] = C[i]; /* b = a */
        C[5] = C[0];
        for (int i = 0; i < 4; i++)
            D[4 + i] = D[i * 4 + 1] = 0.0; /* b independent */
        D[5] = 0.77;
        CHECK(scm_sgd_i4(&scm_act_relu, C, &got, w) == SCM_OK, "relu status");
        CHECK_CLOSE(got, 2 * relu_i4_nested(D), 1e-9, 0.0, "relu I4 (a, a, c, e) vs nested");
    }
    for (int t = 0; t < 2; t++) { /* the full-rank covariances */
        double C[16], got;
        test_cov(t, C);
        CHECK(scm_sgd_i4(&scm_act_relu, C, &got, w) == SCM_OK, "relu status");
        CHECK_CLOSE(got, relu_i4_nested(C), 1e-9, 0.0, "relu I4 vs nested quadrature");
    }
}

/* 2c. Across the merge threshold: c at angle th from a.  Merged (th = 0)
 * and unmerged values lie on one smooth curve: the second difference
 * I4(0) - 2 I4(th) + I4(2 th) is O(th^2), while each difference is O(th). */
static double relu_i4_angle(double th, scm_sgd_work *w)
{
    double A[16] = {1, 0, 0, 0, 0.3, 0.9, 0, 0, cos(th), 0.6 * sin(th), 0.8 * sin(th), 0,
                    -0.2, 0.4, 0.5, 0.7};
    double C[16], r = NAN;
    cov_from(A, 4, C);
    CHECK(scm_sgd_i4(&scm_act_relu, C, &r, w) == SCM_OK, "relu status");
    return r;
}

static void test_merge_continuity(scm_sgd_work *w)
{
    for (double th = 1e-3; th > 5e-8; th /= 10) {
        double i0 = relu_i4_angle(0.0, w), i1 = relu_i4_angle(th, w),
               i2 = relu_i4_angle(2 * th, w);
        CHECK(fabs(i1 - i0) > 1e-3 * th, "the angle %g is resolved (%g)", th, i1 - i0);
        /* curvature ~0.09 here: a jump or lost digits would exceed it */
        CHECK(fabs(i0 - 2 * i1 + i2) < 0.2 * th * th + 1e-10, "second difference %g across the merge at %g",
              i0 - 2 * i1 + i2, th);
    }
}

/* 3. Monte Carlo. */
static void test_mc(gsl_rng *rng, scm_sgd_work *w)
{
    const long n = 1000000;
    for (int t = 0; t < N_COV; t++) {
        double C[16], F[16];
        test_cov(t, C);
        sqrt_factor(C, F);
        double s[3] = {0}, s2[3] = {0};
        for (long it = 0; it < n; it++) {
            double z[4], x[4];
            for (int k = 0; k < 4; k++)
                z[k] = gsl_ran_gaussian_ziggurat(rng, 1.0);
            for (int a = 0; a < 4; a++)
                x[a] = F[a * 4] * z[0] + F[a * 4 + 1] * z[1] + F[a * 4 + 2] * z[2] +
                       F[a * 4 + 3] * z[3];
            for (int a = 0; a < 3; a++) {
                double y = act_i4_sample(acts[a], x);
                s[a] += y;
                s2[a] += y * y;
            }
        }
        for (int a = 0; a < 3; a++) {
            double mean = s[a] / n, se = sqrt((s2[a] / n - mean * mean) / n), got;
            scm_status st = scm_sgd_i4(acts[a], C, &got, w);
            CHECK(st == SCM_OK, "%s cov %d: status %d", acts[a]->name, t, st);
            CHECK(fabs(got - mean) <= 5 * se + 1e-12, "%s cov %d: I4 %.10g, MC %.10g +- %.2g",
                  acts[a]->name, t, got, mean, se);
        }
    }
}

/* A model with K = 3 students, M = 2 teachers, awkward T, v, v* and a state
 * (Q, R) from random weight vectors in p = 6 dimensions; student 2 is dead
 * (zero vector) when dead is set. */
enum { TK = 3, TM = 2 };
static scm_model *test_model(const scm_activation *act, gsl_rng *rng, int dead, double *Q,
                             double *R)
{
    enum { P = 6 };
    double W[TK * P], Ws[TM * P], T[TM * TM];
    for (int i = 0; i < TK * P; i++)
        W[i] = gsl_ran_gaussian(rng, 0.8);
    for (int i = 0; i < TM * P; i++)
        Ws[i] = gsl_ran_gaussian(rng, 0.6);
    if (dead)
        memset(W + 2 * P, 0, P * sizeof *W);
    for (int i = 0; i < TK; i++) {
        for (int j = 0; j < TK; j++) {
            double q = 0;
            for (int c = 0; c < P; c++)
                q += W[i * P + c] * W[j * P + c];
            Q[i * TK + j] = q / P * 2.385;
        }
        for (int m = 0; m < TM; m++) {
            double r = 0;
            for (int c = 0; c < P; c++)
                r += W[i * P + c] * Ws[m * P + c];
            R[i * TM + m] = r / P * 2.385;
        }
    }
    for (int m = 0; m < TM; m++)
        for (int n = 0; n < TM; n++) {
            double t = 0;
            for (int c = 0; c < P; c++)
                t += Ws[m * P + c] * Ws[n * P + c];
            T[m * TM + n] = t / P * 2.385;
        }
    const double v[TK] = {0.9, -0.45, 1.3}, vs[TM] = {1.1, 0.7};
    return scm_model_alloc(TK, TM, act, T, v, vs, NULL);
}

/* One sample: lambda, nu from x (first r = K + M coordinates of the
 * realisation), noisy label, delta. */
static void sample_delta(const scm_model *m, const double *W, const double *Ws, int r,
                         const double *x, double xi, double *lam, double *delta)
{
    double phi = 0.0, phis = 0.0;
    for (int k = 0; k < TK; k++) {
        lam[k] = 0.0;
        for (int c = 0; c < r; c++)
            lam[k] += W[k * r + c] * x[c];
        phi += m->v[k] * m->act->g(lam[k]);
    }
    for (int n = 0; n < TM; n++) {
        double nu = 0.0;
        for (int c = 0; c < r; c++)
            nu += Ws[n * r + c] * x[c];
        phis += m->vs[n] * m->act->g(nu);
    }
    for (int k = 0; k < TK; k++)
        delta[k] = m->v[k] * m->act->dg(lam[k]) * (phi - phis - xi);
}

/* 4. G against E[delta_k delta_l] over realised weights (d = r: the
 * overlaps, not d, fix the law of (lambda, nu)), and the dead rows. */
static void test_g_mc(gsl_rng *rng)
{
    const long n = 400000;
    const double sigma2 = 0.385;
    enum { r = TK + TM };
    for (int a = 0; a < 3; a++)
        for (int dead = 0; dead < 2; dead++) {
            double Q[TK * TK], R[TK * TM], G[TK * TK], W[TK * r], Ws[TM * r];
            scm_model *m = test_model(acts[a], rng, dead, Q, R);
            scm_sgd_work *w = scm_sgd_work_alloc(TK, TM);
            scm_error err;
            CHECK(m && w, "alloc");
            scm_status st = scm_sgd_term(m, Q, R, m->v, sigma2, G, w, &err);
            CHECK(st == SCM_OK, "%s: sgd term: %s", acts[a]->name, err.msg);
            CHECK(scm_weights_realise(m, Q, R, r, W, Ws, &err) == SCM_OK, "realise: %s",
                  err.msg);
            /* realise scales by sqrt(d): lambda = W x / sqrt(d) */
            for (int i = 0; i < TK * r; i++)
                W[i] /= sqrt((double)r);
            for (int i = 0; i < TM * r; i++)
                Ws[i] /= sqrt((double)r);
            double s[TK * TK] = {0}, s2[TK * TK] = {0};
            for (long it = 0; it < n; it++) {
                double x[r], lam[TK], delta[TK];
                for (int c = 0; c < r; c++)
                    x[c] = gsl_ran_gaussian_ziggurat(rng, 1.0);
                sample_delta(m, W, Ws, r, x, gsl_ran_gaussian_ziggurat(rng, sqrt(sigma2)), lam,
                             delta);
                for (int i = 0; i < TK * TK; i++) {
                    double y = delta[i / TK] * delta[i % TK];
                    s[i] += y;
                    s2[i] += y * y;
                }
            }
            for (int i = 0; i < TK * TK; i++) {
                double mean = s[i] / n, se = sqrt(fmax(s2[i] / n - mean * mean, 0.0) / n);
                CHECK(fabs(G[i] - mean) <= 5 * se + 1e-12, "%s dead %d: G[%d][%d] %.8g, MC %.8g +- %.2g",
                      acts[a]->name, dead, i / TK, i % TK, G[i], mean, se);
                if (dead && acts[a] == &scm_act_relu && (i / TK == 2 || i % TK == 2))
                    CHECK(G[i] == 0.0, "dead relu row: G[%d][%d] = %g", i / TK, i % TK, G[i]);
            }
            scm_sgd_work_free(w);
            scm_model_free(m);
        }
}

/* 5. One SGD step in dimension d = 1e6, averaged over samples: E[Q' - Q] d /
 * eta = F_Q + eta G and E[R' - R] d / eta = F_R.  W and W* live in the first
 * r coordinates, so the other d - r coordinates of x enter only through
 * |x|^2, drawn as a chi-square: the step is exact in distribution. */
static void test_step(gsl_rng *rng)
{
    const long n = 1000000;
    const double d = 1e6, eta = 1.7;
    enum { r = TK + TM };
    for (int a = 0; a < 2; a++) {
        double Q[TK * TK], R[TK * TM], G[TK * TK], FQ[TK * TK], FR[TK * TM], W[TK * r],
            Ws[TM * r];
        scm_model *m = test_model(acts[a], rng, 0, Q, R);
        scm_sgd_work *w = scm_sgd_work_alloc(TK, TM);
        scm_flow *fl = scm_flow_alloc(m);
        CHECK(scm_sgd_term(m, Q, R, m->v, 0.0, G, w, NULL) == SCM_OK, "sgd term");
        CHECK(scm_flow_rhs(fl, Q, R, FQ, FR, NULL) == SCM_OK, "flow rhs");
        CHECK(scm_weights_realise(m, Q, R, r, W, Ws, NULL) == SCM_OK, "realise");
        for (int i = 0; i < TK * r; i++)
            W[i] /= sqrt((double)r); /* unit-d rows: lambda = W x, Q = W W^T */
        for (int i = 0; i < TM * r; i++)
            Ws[i] /= sqrt((double)r);
        int resolved = 0;
        double sq[TK * TK] = {0}, sq2[TK * TK] = {0}, sr[TK * TM] = {0}, sr2[TK * TM] = {0};
        for (long it = 0; it < n; it++) {
            double x[r], lam[TK], delta[TK], x2 = gsl_ran_chisq(rng, d - r);
            for (int c = 0; c < r; c++) {
                x[c] = gsl_ran_gaussian_ziggurat(rng, 1.0);
                x2 += x[c] * x[c];
            }
            sample_delta(m, W, Ws, r, x, 0.0, lam, delta);
            /* w_k' = w_k - (eta / sqrt d) delta_k x in d dimensions; with
             * w.x / sqrt d = lambda: d (Q' - Q) / eta = -(delta_k lambda_l
             * + delta_l lambda_k) + eta delta_k delta_l |x|^2 / d. */
            for (int k = 0; k < TK; k++) {
                for (int l = 0; l < TK; l++) {
                    double y = -(delta[k] * lam[l] + delta[l] * lam[k]) +
                               eta * delta[k] * delta[l] * x2 / d;
                    sq[k * TK + l] += y;
                    sq2[k * TK + l] += y * y;
                }
                for (int j = 0; j < TM; j++) {
                    double nu = 0.0;
                    for (int c = 0; c < r; c++)
                        nu += Ws[j * r + c] * x[c];
                    double y = -delta[k] * nu;
                    sr[k * TM + j] += y;
                    sr2[k * TM + j] += y * y;
                }
            }
        }
        for (int i = 0; i < TK * TK; i++) {
            double mean = sq[i] / n, se = sqrt((sq2[i] / n - mean * mean) / n);
            double want = FQ[i] + eta * G[i];
            CHECK(fabs(want - mean) <= 5 * se, "%s: dQ[%d][%d]: F_Q + eta G = %.8g, step %.8g +- %.2g",
                  acts[a]->name, i / TK, i % TK, want, mean, se);
            /* the eta term is resolved: without it the step disagrees */
            if (fabs(eta * G[i]) > 20 * se) {
                resolved++;
                CHECK(fabs(FQ[i] - mean) > 5 * se, "%s: eta G[%d] not resolved", acts[a]->name, i);
            }
        }
        CHECK(resolved >= 3, "%s: only %d entries resolve the eta term", acts[a]->name, resolved);
        for (int i = 0; i < TK * TM; i++) {
            double mean = sr[i] / n, se = sqrt((sr2[i] / n - mean * mean) / n);
            CHECK(fabs(FR[i] - mean) <= 5 * se, "%s: dR[%d][%d]: F_R = %.8g, step %.8g +- %.2g",
                  acts[a]->name, i / TM, i % TM, FR[i], mean, se);
        }
        scm_flow_free(fl);
        scm_sgd_work_free(w);
        scm_model_free(m);
    }
}

/* 6. Bad inputs. */
static void test_bad(gsl_rng *rng)
{
    double Q[TK * TK], R[TK * TM], G[TK * TK], C[16], out;
    scm_model *m = test_model(&scm_act_relu, rng, 0, Q, R);
    scm_sgd_work *w = scm_sgd_work_alloc(TK, TM), *w2 = scm_sgd_work_alloc(TK + 1, TM);
    scm_error err;
    CHECK(scm_sgd_term(m, Q, R, m->v, -0.1, G, w, &err) == SCM_EINVAL &&
              strstr(err.msg, "sigma2"), "negative sigma2: %s", err.msg);
    CHECK(scm_sgd_term(m, Q, R, m->v, NAN, G, w, &err) == SCM_EINVAL, "NaN sigma2");
    CHECK(scm_sgd_term(m, Q, R, m->v, 0.0, G, w2, &err) == SCM_EINVAL, "work of other size");
    double v[TK] = {1, INFINITY, 1};
    CHECK(scm_sgd_term(m, Q, R, v, 0.0, G, w, &err) == SCM_EINVAL && strstr(err.msg, "v[1]"),
          "infinite v: %s", err.msg);
    double Qb[TK * TK];
    memcpy(Qb, Q, sizeof Qb);
    Qb[1] = Qb[3] = 2.0 * sqrt(Q[0] * Q[4]);
    CHECK(scm_sgd_term(m, Qb, R, m->v, 0.0, G, w, &err) == SCM_ENOTPSD, "non-PSD Q: %s", err.msg);
    Qb[1] = Qb[3] = NAN;
    CHECK(scm_sgd_term(m, Qb, R, m->v, 0.0, G, w, &err) == SCM_ENAN, "NaN Q: %s", err.msg);
    test_cov(0, C);
    CHECK(scm_sgd_i4(&scm_act_relu, C, &out, NULL) == SCM_EINVAL, "relu I4 without work");
    C[1] = C[4] = 1.1 * sqrt(C[0] * C[5]);
    CHECK(scm_sgd_i4(&scm_act_erf, C, &out, NULL) == SCM_ENOTPSD, "|rho| > 1");
    C[0] = -1.0;
    CHECK(scm_sgd_i4(&scm_act_erf, C, &out, NULL) == SCM_EINVAL, "negative variance");
    C[0] = NAN;
    CHECK(scm_sgd_i4(&scm_act_linear, C, &out, NULL) == SCM_EINVAL, "NaN entry");
    CHECK(scm_sgd_work_alloc(0, 1) == NULL, "K = 0 work");
    scm_sgd_work_free(w2);
    scm_sgd_work_free(w);
    scm_model_free(m);
}

/* 7. G of scm_sgd_term against the term-by-term sum through scm_sgd_i4 on
 * each 4 x 4 covariance, over all (i, j) rather than i <= j, with the noise
 * term from the pair kernel: erf (whose G shares the pair quantities of
 * (k, l) across its (K + M)^2 terms) to 1e-13 relative, ReLU (whose G shares
 * the orthant probability P4 of four distinct units across the tuples over
 * them; the reference computes it for every tuple, in that tuple's order)
 * to 1e-10; random states of several sizes, non-identity T, a zero and a
 * negative student weight, two parallel students. */
static void test_g_reference(gsl_rng *rng, const scm_activation *act, double tol)
{
    static const int sizes[][2] = {{1, 1}, {3, 2}, {4, 4}, {5, 3}, {2, 6}};
    double worst = 0.0;
    scm_sgd_work *wi = scm_sgd_work_alloc(1, 1); /* for scm_sgd_i4 (ReLU) */
    for (size_t c = 0; c < sizeof sizes / sizeof sizes[0]; c++) {
        const int K = sizes[c][0], M = sizes[c][1], n = K + M, P = n + 2;
        double *W = malloc(sizeof *W * (size_t)(n * P)), *Q = malloc(sizeof *Q * (size_t)(K * K));
        double *R = malloc(sizeof *R * (size_t)(K * M)), *T = malloc(sizeof *T * (size_t)(M * M));
        double *J = malloc(sizeof *J * (size_t)(n * n)), *G = malloc(sizeof *G * (size_t)(K * K));
        double *v = malloc(sizeof *v * (size_t)K), *vs = malloc(sizeof *vs * (size_t)M);
        for (int i = 0; i < n * P; i++)
            W[i] = gsl_ran_gaussian(rng, 1.0);
        if (K >= 3)
            for (int i = 0; i < P; i++)
                W[2 * P + i] = 0.385 * W[P + i]; /* student 2 parallel to student 1 */
        for (int i = 0; i < n; i++)
            for (int j = 0; j < n; j++) {
                double s = 0.0;
                for (int a = 0; a < P; a++)
                    s += W[i * P + a] * W[j * P + a];
                J[i * n + j] = 1.385 * s / P;
            }
        for (int k = 0; k < K; k++) {
            for (int l = 0; l < K; l++)
                Q[k * K + l] = J[k * n + l];
            for (int m = 0; m < M; m++)
                R[k * M + m] = J[k * n + K + m];
            v[k] = k == 1 ? 0.0 : (k % 2 ? -0.73 : 1.1) + 0.1 * k;
        }
        for (int m = 0; m < M; m++) {
            for (int o = 0; o < M; o++)
                T[m * M + o] = J[(K + m) * n + K + o];
            vs[m] = 0.9 - 0.2 * m;
        }
        scm_model *mod = scm_model_alloc(K, M, act, T, v, vs, NULL);
        scm_sgd_work *w = scm_sgd_work_alloc(K, M);
        scm_error err;
        const double sigma2 = 0.385;
        scm_status st = scm_sgd_term(mod, Q, R, v, sigma2, G, w, &err);
        CHECK(st == SCM_OK, "%s G (K = %d, M = %d): %s", act->name, K, M, err.msg);
        double scale = 0.0, diff = 0.0;
        for (int k = 0; k < K; k++)
            for (int l = 0; l < K; l++) {
                double ref = 0.0;
                for (int i = 0; i < n; i++)
                    for (int j = 0; j < n; j++) {
                        const int idx[4] = {k, l, i, j};
                        double C[16], val;
                        for (int a = 0; a < 4; a++)
                            for (int b = 0; b < 4; b++)
                                C[a * 4 + b] = J[idx[a] * n + idx[b]];
                        CHECK(scm_sgd_i4(act, C, &val, wi) == SCM_OK, "i4");
                        const double ui = i < K ? v[i] : -vs[i - K], uj = j < K ? v[j] : -vs[j - K];
                        ref += ui * uj * val;
                    }
                scm_pair p;
                CHECK(act->pair(J[k * n + k], J[l * n + l], J[k * n + l], &p) == SCM_OK, "pair");
                ref = v[k] * v[l] * (ref + sigma2 * p.fc);
                scale = fmax(scale, fabs(ref));
                diff = fmax(diff, fabs(G[k * K + l] - ref));
                if (v[k] == 0.0 || v[l] == 0.0)
                    CHECK(G[k * K + l] == 0.0, "%s G with a zero weight", act->name);
            }
        CHECK(diff <= tol * scale, "%s G (K = %d, M = %d) vs the scm_sgd_i4 sums: %.3g "
              "(scale %.3g)", act->name, K, M, diff, scale);
        worst = fmax(worst, diff / scale);
        scm_sgd_work_free(w);
        scm_model_free(mod);
        free(W), free(Q), free(R), free(T), free(J), free(G), free(v), free(vs);
    }
    scm_sgd_work_free(wi);
    printf("%s G vs the term-by-term scm_sgd_i4 sums: worst %.3g relative\n", act->name, worst);
}

/* Two states of a ReLU K = M = 3 sgd run (eta = 0.1, seed 784653434 of a
 * sweep) approaching the global minimum: tau = 58.8 (loss 2e-6, PSD) and
 * tau = 88.9 (loss 1e-7; the Gram matrix of (Q, R, T) is PSD only to
 * -1.1e-7, the integration error).  On the second the ReLU reduction used
 * to return E[delta_1^2] = -3.4e-5 (I4(a, b, c, e) and I4(b, a, e, c) 6e-5
 * apart), which drove the run outside the PSD cone: 1e5 steps to tau =
 * 100.8, ending at a loss of -5.8e-7.  Now the joint covariance is
 * projected onto the PSD cone first.  Independent bound: with v = 1 and no
 * label noise, E[delta_k^2] = E[g'(lambda_k)^2 Delta^2] <= E[Delta^2] =
 * 2 eps; and G is a Gram matrix.  Then the whole run from that seed must
 * reach eps_stop in a few hundred steps. */
static void test_g_near_minimum(void)
{
    static const double Q1[9] = {1.0018031360408495, 5.594075389717009e-07, 2.2536661587178284e-07,
                                 5.594075389717009e-07, 1.0009382145236636, 4.2579690974328175e-06,
                                 2.2536661587178284e-07, 4.2579690974328175e-06, 0.9972516478513898};
    static const double R1[9] = {0.0025347680888788858, 1.00089647112866, -0.0016275774348309881,
                                 1.0004610953905482, -0.002528145128441252, 0.0030104466875058703,
                                 -0.0029964136139429415, 0.0016317300482024688, 0.9986188780643287};
    static const double Q2[9] = {1.0001176268882266, 1.758952123997673e-07, -2.6010473582363846e-08,
                                 1.758952123997673e-07, 1.0000616816923318, 5.014298324070485e-09,
                                 -2.6010473582363846e-08, 5.014298324070485e-09, 0.9998207489799368};
    static const double R2[9] = {0.00016563310096729354, 1.0000588613343575, -0.00010672524005152989,
                                 1.0000306470094082, -0.0001656397383813117, 0.00019635014444661963,
                                 -0.0001962909729427655, 0.00010675230503717032, 0.9999103886347891};
    const double v[3] = {1, 1, 1};
    const double *Qs[2] = {Q1, Q2}, *Rs[2] = {R1, R2};
    scm_error e;
    scm_model *m = scm_model_alloc(3, 3, &scm_act_relu, NULL, NULL, NULL, &e);
    scm_flow *fl = scm_flow_alloc(m);
    scm_sgd_work *w = scm_sgd_work_alloc(3, 3);
    for (int s = 0; s < 2; s++) {
        double G[9], eps = NAN;
        CHECK(scm_sgd_term(m, Qs[s], Rs[s], v, 0.0, G, w, &e) == SCM_OK, "state %d: %s", s,
              e.msg);
        if (s == 0) {
            CHECK(scm_flow_loss(fl, Qs[s], Rs[s], &eps) == SCM_OK, "loss");
        } else {
            /* the state is outside the cone: project its joint covariance
             * here (eigenvalues clipped by GSL), and take the loss and G of
             * the projected model (T included), a PSD state */
            double C[36], V[36], P[36];
            for (int a = 0; a < 6; a++)
                for (int b = 0; b < 6; b++)
                    C[a * 6 + b] = a < 3 && b < 3 ? Qs[s][a * 3 + b]
                                   : a < 3        ? Rs[s][a * 3 + b - 3]
                                   : b < 3        ? Rs[s][b * 3 + a - 3]
                                                  : (a == b);
            gsl_matrix_view cv = gsl_matrix_view_array(C, 6, 6), vv = gsl_matrix_view_array(V, 6, 6);
            gsl_vector *ev = gsl_vector_alloc(6);
            gsl_eigen_symmv_workspace *ws = gsl_eigen_symmv_alloc(6);
            gsl_eigen_symmv(&cv.matrix, ev, &vv.matrix, ws);
            CHECK(gsl_vector_min(ev) < -1e-8, "state 1 is outside the cone (%g)",
                  gsl_vector_min(ev));
            for (int a = 0; a < 6; a++)
                for (int b = 0; b < 6; b++) {
                    P[a * 6 + b] = 0.0;
                    for (int c = 0; c < 6; c++)
                        if (gsl_vector_get(ev, (size_t)c) > 0.0)
                            P[a * 6 + b] += gsl_vector_get(ev, (size_t)c) * V[a * 6 + c] * V[b * 6 + c];
                }
            gsl_vector_free(ev);
            gsl_eigen_symmv_free(ws);
            double Qp[9], Rp[9], Tp[9], Gp[9];
            for (int a = 0; a < 3; a++)
                for (int b = 0; b < 3; b++) {
                    Qp[a * 3 + b] = P[a * 6 + b];
                    Rp[a * 3 + b] = P[a * 6 + b + 3];
                    Tp[a * 3 + b] = P[(a + 3) * 6 + b + 3];
                }
            scm_model *mp = scm_model_alloc(3, 3, &scm_act_relu, Tp, NULL, NULL, &e);
            scm_flow *fp = mp ? scm_flow_alloc(mp) : NULL;
            CHECK(fp && scm_flow_loss(fp, Qp, Rp, &eps) == SCM_OK, "projected loss");
            CHECK(fp && scm_sgd_term(mp, Qp, Rp, v, 0.0, Gp, w, &e) == SCM_OK, "projected G: %s",
                  e.msg);
            double d = 0.0;
            for (int i = 0; i < 9; i++)
                d = fmax(d, fabs(G[i] - Gp[i]));
            CHECK(d <= 1e-12, "G of the state vs of its projection here: %g", d);
            scm_flow_free(fp);
            scm_model_free(mp);
        }
        for (int k = 0; k < 3; k++) {
            CHECK(G[k * 3 + k] >= 0.0 && G[k * 3 + k] <= 2.0 * fabs(eps) * 1.01 + 1e-12,
                  "state %d: E[delta_%d^2] = %g outside [0, 2 eps = %g]", s, k, G[k * 3 + k],
                  2.0 * eps);
            for (int l = 0; l < 3; l++)
                CHECK(G[k * 3 + l] * G[k * 3 + l] <= G[k * 3 + k] * G[l * 3 + l] * (1 + 1e-6) + 1e-24,
                      "state %d: G not a Gram matrix at (%d, %d)", s, k, l);
        }
    }
    /* the run itself, with scm compare's integrator settings */
    double Q0[9], R0[9];
    CHECK(scm_init_random(m, 1000, 1.0, 784653434UL, Q0, R0, &e) == SCM_OK, "init");
    scm_traj_opts o;
    scm_traj_opts_default(&o);
    o.linsol = SCM_LINSOL_GMRES;
    o.rtol = 1e-8;
    o.atol = 1e-10;
    o.t_max = 1e5;
    o.eps_stop = 1e-10;
    o.grad_stop = 1e-10;
    o.max_steps = 3000;
    o.loose_rtol = 1e-6;
    o.loose_atol = 1e-8;
    o.loose_until = 1e-6;
    o.record = 0;
    o.rule_params.eta = 0.1;
    scm_traj_result res;
    CHECK(scm_traj_run(m, &scm_rule_sgd, Q0, R0, &o, &res, &e) == SCM_OK, "run: %s", e.msg);
    CHECK(res.stop == SCM_STOP_EPS && res.eps >= -1e-12 && res.eps < 1e-10,
          "sgd ReLU run to the global minimum: stop %s, eps %g, %ld steps (%s)",
          scm_stop_reason_str(res.stop), res.eps, res.n_steps,
          res.stop == SCM_STOP_FAILED ? res.err.msg : "");
    scm_traj_result_free(&res);
    scm_sgd_work_free(w);
    scm_flow_free(fl);
    scm_model_free(m);
}

int main(void)
{
    gsl_set_error_handler_off();
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(rng, 20261203);
    scm_sgd_work *w = scm_sgd_work_alloc(3, 2);
    test_orthant(w);
    test_exact(w);
    test_relu_nested(w);
    test_merge_continuity(w);
    test_mc(rng, w);
    test_g_mc(rng);
    test_step(rng);
    test_bad(rng);
    test_g_reference(rng, &scm_act_erf, 1e-13);
    test_g_reference(rng, &scm_act_relu, 1e-10);
    test_g_near_minimum();
    scm_sgd_work_free(w);
    gsl_rng_free(rng);
    return TEST_SUMMARY();
}
