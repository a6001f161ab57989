/* test_euler_baseline.c: the benchmark's Saad-Solla equations
 * (bench/saad_solla.h, written independently of libscm) against other
 * computations of the same quantities, so that the benchmark compares
 * `scm run` with a correct baseline and cross-checks the library:
 *
 * - I2, I3 against libscm's erf pair kernel f and three-point kernel i3
 *   (relative 1e-12; two derivations of the same closed forms);
 * - I4 = E[g'(a) g'(b) g(c) g(e)] against seeded Monte Carlo (4e6 samples,
 *   5 standard errors), at covariances with awkward entries;
 * - the right-hand side at eta = 0 with v fixed against scm_flow_rhs (the
 *   matrix form of the flow; relative 1e-10), its dv/dtau against a central
 *   finite difference of scm_flow_loss in v (1e-7), and its eta term
 *   eta E[delta_k delta_l] against Monte Carlo (5 standard errors);
 * - libscm's `sgd` rule: its whole right-hand side and the benchmark
 *   trajectory against these equations are in test_rule.c. */
#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "../bench/saad_solla.h"
#include "scm/flow.h"
#include "testutil.h"

#define K 3
#define M 2
#define N (K + M)

/* An awkward PSD state: Q, R with T = I, v, v*. */
static const double Q[K * K] = {0.83, 0.127, -0.21, 0.127, 0.61, 0.043, -0.21, 0.043, 1.17};
static const double R[K * M] = {0.385, -0.12, 0.07, 0.455, -0.25, 0.19};
static const double v[K] = {0.93, -0.41, 1.27};
static const double vs[M] = {1.0, 0.77};

static void cov(double *C) { ss_cov(K, M, Q, R, C); }

static void test_i2_i3(void)
{
    double C[N * N];
    cov(C);
    for (int a = 0; a < N; a++)
        for (int b = 0; b < N; b++) {
            scm_pair p;
            scm_act_erf.pair(C[a * N + a], C[b * N + b], C[a * N + b], &p);
            CHECK_CLOSE(ss_i2(C, N, a, b), p.f, 1e-12, 1e-15, "I2");
            for (int c = 0; c < N; c++) {
                scm_cov3 c3 = {C[a * N + a], C[b * N + b], C[c * N + c],
                               C[a * N + b], C[a * N + c], C[b * N + c]};
                double i3;
                scm_act_erf.i3(&c3, &i3);
                CHECK_CLOSE(ss_i3(C, N, a, b, c), i3, 1e-12, 1e-15, "I3");
            }
        }
}

/* Monte Carlo of E[g'(x_a) g'(x_b) g(x_c) g(x_e)] and of
 * E[delta_k delta_l], x ~ N(0, C) via the Cholesky factor of C. */
static void test_i4_mc(void)
{
    double C[N * N], L[N * N] = {0};
    cov(C);
    for (int i = 0; i < N; i++)
        for (int j = 0; j <= i; j++) {
            double s = C[i * N + j];
            for (int k = 0; k < j; k++)
                s -= L[i * N + k] * L[j * N + k];
            L[i * N + j] = i == j ? sqrt(s) : s / L[j * N + j];
        }
    static const int quads[4][4] = {{0, 1, 2, 3}, {0, 0, 3, 4}, {1, 2, 2, 0}, {2, 1, 4, 4}};
    double s1[4] = {0}, s2[4] = {0}, d1[K * K] = {0}, d2[K * K] = {0};
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(rng, 2024);
    const long S = 4000000;
    for (long s = 0; s < S; s++) {
        double z[N], x[N], g[N], dg[N];
        for (int i = 0; i < N; i++)
            z[i] = gsl_ran_gaussian_ziggurat(rng, 1.0);
        for (int i = 0; i < N; i++) {
            x[i] = 0.0;
            for (int j = 0; j <= i; j++)
                x[i] += L[i * N + j] * z[j];
            g[i] = scm_act_erf.g(x[i]);
            dg[i] = scm_act_erf.dg(x[i]);
        }
        for (int q = 0; q < 4; q++) {
            const double f = dg[quads[q][0]] * dg[quads[q][1]] * g[quads[q][2]] * g[quads[q][3]];
            s1[q] += f;
            s2[q] += f * f;
        }
        double err = 0.0;
        for (int k = 0; k < K; k++)
            err += v[k] * g[k];
        for (int m = 0; m < M; m++)
            err -= vs[m] * g[K + m];
        for (int k = 0; k < K; k++)
            for (int l = 0; l < K; l++) {
                const double f = err * err * v[k] * v[l] * dg[k] * dg[l];
                d1[k * K + l] += f;
                d2[k * K + l] += f * f;
            }
    }
    gsl_rng_free(rng);
    for (int q = 0; q < 4; q++) {
        const double mean = s1[q] / S, se = sqrt((s2[q] / S - mean * mean) / S);
        const double want = ss_i4(C, N, quads[q][0], quads[q][1], quads[q][2], quads[q][3]);
        printf("I4 %d: closed form %.8f  Monte Carlo %.8f +- %.1e\n", q, want, mean, se);
        CHECK(fabs(want - mean) < 5.0 * se, "I4 quad %d: %.8g vs MC %.8g +- %.2g", q, want, mean,
              se);
    }
    /* The eta term of dQ/dtau: the difference of the rhs at eta and at 0. */
    ss_params p0 = {K, M, 0.0, 0.0, vs}, p1 = {K, M, 1.0, 0.0, vs};
    double y[K * K + K * M + K], f0[K * K + K * M + K], f1[K * K + K * M + K];
    memcpy(y, Q, sizeof Q);
    memcpy(y + K * K, R, sizeof R);
    memcpy(y + K * K + K * M, v, sizeof v);
    ss_rhs(&p0, y, f0, NULL);
    ss_rhs(&p1, y, f1, NULL);
    for (int i = 0; i < K * K; i++) {
        const double mean = d1[i] / S, se = sqrt((d2[i] / S - mean * mean) / S);
        CHECK(fabs(f1[i] - f0[i] - mean) < 5.0 * se, "E[delta delta] %d: %.8g vs MC %.8g +- %.2g",
              i, f1[i] - f0[i], mean, se);
    }
}

static void test_rhs_vs_flow(void)
{
    scm_error err;
    scm_model *m = scm_model_alloc(K, M, &scm_act_erf, NULL, v, vs, &err);
    scm_flow *fl = scm_flow_alloc(m);
    double FQ[K * K], FR[K * M], eps;
    scm_flow_rhs(fl, Q, R, FQ, FR, &eps);
    ss_params p = {K, M, 0.0, 1.0, vs};
    double y[K * K + K * M + K], f[K * K + K * M + K], e;
    memcpy(y, Q, sizeof Q);
    memcpy(y + K * K, R, sizeof R);
    memcpy(y + K * K + K * M, v, sizeof v);
    ss_rhs(&p, y, f, &e);
    CHECK_CLOSE(e, eps, 1e-12, 1e-15, "eps");
    for (int i = 0; i < K * K; i++)
        CHECK_CLOSE(f[i], FQ[i], 1e-10, 1e-13, "dQ/dtau");
    for (int i = 0; i < K * M; i++)
        CHECK_CLOSE(f[K * K + i], FR[i], 1e-10, 1e-13, "dR/dtau");
    /* dv_k/dtau = -d eps / d v_k (eta_v = eta): central difference. */
    for (int k = 0; k < K; k++) {
        const double h = 1e-5, v0 = m->v[k];
        double ep, em;
        m->v[k] = v0 + h;
        scm_flow_loss(fl, Q, R, &ep);
        m->v[k] = v0 - h;
        scm_flow_loss(fl, Q, R, &em);
        m->v[k] = v0;
        CHECK_CLOSE(f[K * K + K * M + k], -(ep - em) / (2 * h), 1e-7, 1e-9, "dv/dtau");
    }
    scm_flow_free(fl);
    scm_model_free(m);
}

int main(void)
{
    test_i2_i3();
    test_rhs_vs_flow();
    test_i4_mc();
    return TEST_SUMMARY();
}
