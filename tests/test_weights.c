/* test_weights.c: the weight-space module (weights.h) and, through it, the
 * derivative bookkeeping of flow.c.
 *
 *  1. realise / overlaps round trip at valid states built from random weight
 *     vectors, singular ones included (students in the teacher span, K > M,
 *     a singular T, duplicated and zero students), in several d; W* depends
 *     on T alone; non-PSD, non-symmetric, non-finite input and too small a d
 *     are rejected, round-off is tolerated;
 *  2. scm_weights_grad against central differences of the loss in weight
 *     space and against (1/d)(S W + B W*) with A, B from scm_flow_grad;
 *  3. the flow identity d eps / dtau = sum A F_Q + sum B F_R
 *     = -scm_flow_grad_norm2 = -d |G|^2, three ways;
 *  4. A and B against central differences of eps in (Q, R), one entry of Q
 *     at a time (no symmetrising).  scm_flow_loss reads only the upper
 *     triangle of Q (Q_kl, k < l, stands for both (k,l) and (l,k) terms), so
 *     one-entry differences of it give 2 A_kl above the diagonal and 0 below;
 *     the one-entry differences are therefore taken of the MATH.md double
 *     sum (eps_math, equal to scm_flow_loss at symmetric Q), and
 *     scm_flow_loss itself is differenced per diagonal entry, per R entry
 *     and per symmetric pair (k,l),(l,k) (giving A_kl + A_lk). */
#include <gsl/gsl_errno.h>
#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scm/flow.h"
#include "scm/init.h"
#include "scm/weights.h"
#include "testutil.h"

static gsl_rng *rng;

static const scm_activation *const acts[] = {&scm_act_relu, &scm_act_erf, &scm_act_linear};
#define N_ACTS 3

/* Worst errors seen, for the summary. */
static double worst_roundtrip, worst_fd_w, worst_formula, worst_identity, worst_fd_qr;

static double *dalloc(long n) { return calloc((size_t)(n > 0 ? n : 1), sizeof(double)); }

static void randn(double *x, long n, double s)
{
    for (long i = 0; i < n; i++)
        x[i] = gsl_ran_gaussian(rng, s);
}

/* Gram products of row sets X (a x p) and Y (b x p) divided by p. */
static void gram(int a, int b, long p, const double *X, const double *Y, double *out)
{
    for (int i = 0; i < a; i++)
        for (int j = 0; j < b; j++) {
            double s = 0.0;
            for (long c = 0; c < p; c++)
                s += X[i * p + c] * Y[j * p + c];
            out[i * b + j] = s / (double)p;
        }
}

static double max_abs(const double *x, long n)
{
    double m = 0.0;
    for (long i = 0; i < n; i++)
        m = fmax(m, fabs(x[i]));
    return m;
}

static double max_diff(const double *x, const double *y, long n)
{
    double m = 0.0;
    for (long i = 0; i < n; i++)
        m = fmax(m, fabs(x[i] - y[i]));
    return m;
}

/* Random second-layer weights, not all one and of both signs. */
static void rand_second_layer(double *v, int n)
{
    for (int i = 0; i < n; i++) {
        v[i] = gsl_ran_flat(rng, 0.4, 1.6);
        if (gsl_rng_uniform(rng) < 0.25)
            v[i] = -v[i];
    }
}

/* ---------------------------------------------------------------- 1 */

typedef struct {
    const char *name;
    int K, M;
    long p;       /* dimension the random vectors are drawn in */
    int span;     /* students are combinations of the teachers */
    int tdep;     /* last teacher = combination of the others: T singular */
    int dup;      /* student 1 = student 0 */
    int zero;     /* student 0 is the zero vector */
    int rank;     /* rank of the joint Gram matrix */
} rt_case;

static const rt_case rt_cases[] = {
    {"generic K=M=2", 2, 2, 10, 0, 0, 0, 0, 4},
    {"generic K=2 M=3", 2, 3, 9, 0, 0, 0, 0, 5},
    {"rank-deficient p=3, K=3 M=2", 3, 2, 3, 0, 0, 0, 0, 3},
    {"students in teacher span, K=4 > M=2", 4, 2, 6, 1, 0, 0, 0, 2},
    {"students in teacher span, K=M=3", 3, 3, 5, 1, 0, 0, 0, 3},
    {"T singular, K=2 M=3", 2, 3, 8, 0, 1, 0, 0, 4},
    {"T singular and students in span, K=5 M=3", 5, 3, 10, 1, 1, 0, 0, 2},
    {"everything rank 2, K=M=3", 3, 3, 2, 0, 0, 0, 0, 2},
    {"duplicate student, K=3 M=2", 3, 2, 12, 0, 0, 1, 0, 4},
    {"zero student, K=3 M=2", 3, 2, 12, 0, 0, 0, 1, 4},
    {"K=1 M=1", 1, 1, 4, 0, 0, 0, 0, 2},
    {"K=6 M=4 generic", 6, 4, 20, 0, 0, 0, 0, 10},
};

/* Draw a valid state of case c: the model (with T = Ws Ws^T / p) and
 * (Q, R). */
static scm_model *rt_state(const rt_case *c, double *Q, double *R)
{
    const int K = c->K, M = c->M;
    const long p = c->p;
    double *Wp = dalloc(K * p), *Wsp = dalloc(M * p), *T = dalloc(M * M), *C = dalloc(K * M);
    randn(Wsp, M * p, 1.0);
    if (c->tdep && M >= 2) {
        double a = gsl_ran_gaussian(rng, 1.0);
        for (long j = 0; j < p; j++) { /* w*_{M-1} = a w*_0 - 0.5 w*_1 (or a w*_0) */
            double s = a * Wsp[j];
            if (M >= 3)
                s -= 0.5 * Wsp[p + j];
            Wsp[(M - 1) * p + j] = s;
        }
    }
    if (c->span) {
        randn(C, K * M, 1.0);
        for (int k = 0; k < K; k++)
            for (long j = 0; j < p; j++) {
                double s = 0.0;
                for (int n = 0; n < M; n++)
                    s += C[k * M + n] * Wsp[n * p + j];
                Wp[k * p + j] = s;
            }
    } else {
        randn(Wp, K * p, 1.3);
    }
    if (c->dup && K >= 2)
        memcpy(Wp + p, Wp, sizeof(double) * (size_t)p);
    if (c->zero)
        memset(Wp, 0, sizeof(double) * (size_t)p);
    gram(M, M, p, Wsp, Wsp, T);
    for (int a = 0; a < M; a++) /* exactly symmetric */
        for (int b = 0; b < a; b++)
            T[a * M + b] = T[b * M + a];
    gram(K, K, p, Wp, Wp, Q);
    for (int a = 0; a < K; a++)
        for (int b = 0; b < a; b++)
            Q[a * K + b] = Q[b * K + a];
    gram(K, M, p, Wp, Wsp, R);
    scm_error err;
    scm_model *m = scm_model_alloc(K, M, &scm_act_relu, T, NULL, NULL, &err);
    CHECK(m != NULL, "%s: model: %s", c->name, err.msg);
    free(Wp);
    free(Wsp);
    free(T);
    free(C);
    return m;
}

/* Realise (Q, R) of model m in dimension d and check the round trip; returns
 * the status.  Also checks that coordinates >= rank are zero. */
static scm_status roundtrip(const char *name, const scm_model *m, const double *Q,
                            const double *R, long d, int rank, double *Ws_out)
{
    const int K = m->K, M = m->M;
    double *W = dalloc(K * d), *Ws = dalloc(M * d), *Q2 = dalloc(K * K), *R2 = dalloc(K * M),
           *T2 = dalloc(M * M);
    for (long i = 0; i < K * d; i++) /* garbage in: realise must write every entry */
        W[i] = 7.0;
    for (long i = 0; i < M * d; i++)
        Ws[i] = -7.0;
    scm_error err;
    scm_error_clear(&err);
    scm_status st = scm_weights_realise(m, Q, R, d, W, Ws, &err);
    if (st == SCM_OK) {
        scm_weights_overlaps(m, d, W, Ws, Q2, R2);
        gram(M, M, d, Ws, Ws, T2);
        double scale = fmax(max_abs(Q, K * K), max_abs(m->T, M * M));
        double e = fmax(max_diff(Q, Q2, K * K), fmax(max_diff(R, R2, K * M),
                                                     max_diff(m->T, T2, M * M))) / scale;
        worst_roundtrip = fmax(worst_roundtrip, e);
        CHECK(e <= 1e-12, "%s, d = %ld: round trip error %.3g (relative to %.3g)", name, d, e,
              scale);
        /* Q2 from overlaps must be exactly symmetric */
        int sym = 1;
        for (int k = 0; k < K; k++)
            for (int l = 0; l < k; l++)
                sym &= Q2[k * K + l] == Q2[l * K + k];
        CHECK(sym, "%s: overlaps Q not exactly symmetric", name);
        double tail = 0.0;
        for (int i = 0; i < K; i++)
            for (long c = rank; c < d; c++)
                tail = fmax(tail, fabs(W[i * d + c]));
        for (int i = 0; i < M; i++)
            for (long c = rank; c < d; c++)
                tail = fmax(tail, fabs(Ws[i * d + c]));
        CHECK(tail == 0.0, "%s, d = %ld: coordinates beyond rank %d not zero (%.3g)", name, d,
              rank, tail);
        if (Ws_out)
            memcpy(Ws_out, Ws, sizeof(double) * (size_t)(M * d));
    }
    free(W);
    free(Ws);
    free(Q2);
    free(R2);
    free(T2);
    return st;
}

static void test_roundtrip(void)
{
    for (size_t ci = 0; ci < sizeof rt_cases / sizeof rt_cases[0]; ci++) {
        const rt_case *c = &rt_cases[ci];
        for (int rep = 0; rep < 4; rep++) {
            const int K = c->K, M = c->M, n = K + M;
            double *Q = dalloc(K * K), *R = dalloc(K * M);
            scm_model *m = rt_state(c, Q, R);
            if (!m) {
                free(Q);
                free(R);
                continue;
            }
            const long ds[] = {c->rank, n, n + 7, 50};
            for (int i = 0; i < 4; i++) {
                if (ds[i] < c->rank)
                    continue;
                scm_status st = roundtrip(c->name, m, Q, R, ds[i], c->rank, NULL);
                CHECK(st == SCM_OK, "%s, d = %ld: realise fails (%s)", c->name, ds[i],
                      scm_status_str(st));
            }
            /* d below the rank: SCM_EINVAL with a message */
            {
                long d = c->rank - 1;
                if (d >= 1) {
                    double *W = dalloc(K * d), *Ws = dalloc(M * d);
                    scm_error err;
                    scm_error_clear(&err);
                    scm_status st = scm_weights_realise(m, Q, R, d, W, Ws, &err);
                    CHECK(st == SCM_EINVAL && strstr(err.msg, "rank") != NULL,
                          "%s: d = %ld below rank %d: got %s (%s)", c->name, d, c->rank,
                          scm_status_str(st), err.msg);
                    free(W);
                    free(Ws);
                }
            }
            /* Full-rank T: W* lives in the first M coordinates and depends on T
             * alone: the same W* for a rescaled state. */
            if (!c->tdep && c->p >= M) {
                long d = n + 3;
                double *Ws1 = dalloc(M * d), *Ws2 = dalloc(M * d);
                double *Q2 = dalloc(K * K), *R2 = dalloc(K * M);
                memcpy(Q2, Q, sizeof(double) * (size_t)(K * K));
                memcpy(R2, R, sizeof(double) * (size_t)(K * M));
                scm_init_scale(m, 1.7, Q2, R2);
                scm_status s1 = roundtrip(c->name, m, Q, R, d, c->rank, Ws1);
                scm_status s2 = roundtrip(c->name, m, Q2, R2, d, c->rank, Ws2);
                CHECK(s1 == SCM_OK && s2 == SCM_OK, "%s: realise fails", c->name);
                double tail = 0.0;
                for (int i = 0; i < M; i++)
                    for (long j = M; j < d; j++)
                        tail = fmax(tail, fabs(Ws1[i * d + j]));
                CHECK(tail == 0.0, "%s: W* not in the first M coordinates (%.3g)", c->name, tail);
                CHECK(max_diff(Ws1, Ws2, M * d) == 0.0,
                      "%s: W* depends on the state (%.3g)", c->name, max_diff(Ws1, Ws2, M * d));
                free(Ws1);
                free(Ws2);
                free(Q2);
                free(R2);
            }
            scm_model_free(m);
            free(Q);
            free(R);
        }
    }

    /* Random initial states (T = I and a non-identity T) realised in K + M. */
    for (int rep = 0; rep < 6; rep++) {
        const int K = 2 + rep % 4, M = 1 + rep % 3;
        double *T = dalloc(M * M), *Wsp = dalloc(M * 7);
        randn(Wsp, M * 7, 1.0);
        gram(M, M, 7, Wsp, Wsp, T);
        for (int a = 0; a < M; a++)
            for (int b = 0; b < a; b++)
                T[a * M + b] = T[b * M + a];
        for (int ti = 0; ti < 2; ti++) {
            scm_error err;
            scm_model *m = scm_model_alloc(K, M, &scm_act_erf, ti ? T : NULL, NULL, NULL, &err);
            double *Q = dalloc(K * K), *R = dalloc(K * M);
            scm_status st = scm_init_random(m, 1000, 1.0, 100u + (unsigned)rep, Q, R, &err);
            CHECK(st == SCM_OK, "init: %s", err.msg);
            st = roundtrip("scm_init_random state", m, Q, R, K + M, K + M, NULL);
            CHECK(st == SCM_OK, "init state: realise fails (%s)", scm_status_str(st));
            scm_model_free(m);
            free(Q);
            free(R);
        }
        free(T);
        free(Wsp);
    }
}

/* Expect realise to fail with code (and, if want is not NULL, a message
 * containing it). */
static void expect_fail(const char *what, int K, int M, const double *T, const double *Q,
                        const double *R, long d, scm_status code, const char *want)
{
    scm_error err;
    scm_model *m = scm_model_alloc(K, M, &scm_act_relu, T, NULL, NULL, &err);
    CHECK(m != NULL, "%s: model: %s", what, err.msg);
    if (!m)
        return;
    long dd = d > 0 ? d : 1;
    double *W = dalloc(K * dd), *Ws = dalloc(M * dd);
    scm_error_clear(&err);
    scm_status st = scm_weights_realise(m, Q, R, d, W, Ws, &err);
    CHECK(st == code && err.code == code && (!want || strstr(err.msg, want)),
          "%s: got %s (\"%s\"), want %s with \"%s\"", what, scm_status_str(st), err.msg,
          scm_status_str(code), want ? want : "");
    scm_model_free(m);
    free(W);
    free(Ws);
}

static void test_reject(void)
{
    {   /* |Q_01| > sqrt(Q_00 Q_11) */
        double Q[] = {1.0, 1.2, 1.2, 1.0}, R[] = {0.0, 0.0};
        expect_fail("Cauchy-Schwarz in Q", 2, 1, NULL, Q, R, 10, SCM_ENOTPSD, "student 1");
    }
    {   /* pairwise fine, jointly not: eigenvalue -0.2 along (1,1,1) */
        double Q[] = {1, -0.6, -0.6, -0.6, 1, -0.6, -0.6, -0.6, 1}, R[] = {0.1, 0.0, 0.2};
        expect_fail("three students, pairwise valid", 3, 1, NULL, Q, R, 10, SCM_ENOTPSD,
                    "student 2");
    }
    {   /* R_00^2 > Q_00 T_00 */
        double Q[] = {1.0}, R[] = {1.001};
        expect_fail("Cauchy-Schwarz in R", 1, 1, NULL, Q, R, 10, SCM_ENOTPSD, "student 0");
    }
    {   /* students jointly inconsistent with the teachers: Q = I, R = [[.8,.8]] */
        double Q[] = {1.0}, R[] = {0.8, 0.8};
        expect_fail("student too aligned with two orthogonal teachers", 1, 2, NULL, Q, R, 10,
                    SCM_ENOTPSD, "student 0");
    }
    {   /* a zero teacher and a zero student with overlap 1: all pivots vanish,
         * only the residual off-diagonal betrays it */
        double T[] = {0.0}, Q[] = {0.0}, R[] = {1.0};
        expect_fail("zero-norm pair with overlap", 1, 1, T, Q, R, 10, SCM_ENOTPSD, "teacher 0");
    }
    {   /* negative squared norm */
        double Q[] = {-1.0, 0.0, 0.0, 1.0}, R[] = {0.0, 0.0};
        expect_fail("negative Q_00", 2, 1, NULL, Q, R, 10, SCM_ENOTPSD, "student 0");
    }
    {   /* negative eigenvalue in T itself cannot get into a model; T singular
         * with R off its span: T = [[1,1],[1,1]], R = [[0.5,-0.5]] */
        double T[] = {1, 1, 1, 1}, Q[] = {1.0}, R[] = {0.5, -0.5};
        expect_fail("R outside the span of a singular T", 1, 2, T, Q, R, 10, SCM_ENOTPSD,
                    NULL);
    }
    {   /* not symmetric */
        double Q[] = {1.0, 0.1, 0.2, 1.0}, R[] = {0.0, 0.0};
        expect_fail("non-symmetric Q", 2, 1, NULL, Q, R, 10, SCM_EINVAL, "symmetric");
    }
    {   /* not finite */
        double Q[] = {1.0, 0.0, 0.0, 1.0}, R[] = {NAN, 0.0};
        expect_fail("NaN in R", 2, 1, NULL, Q, R, 10, SCM_ENAN, "R[0][0]");
    }
    {   /* d < 1, d below the rank */
        double Q[] = {1.0, 0.0, 0.0, 1.0}, R[] = {0.0, 0.0};
        expect_fail("d = 0", 2, 1, NULL, Q, R, 0, SCM_EINVAL, "d");
        expect_fail("d = 2 for rank 3", 2, 1, NULL, Q, R, 2, SCM_EINVAL, "rank 3");
    }

    /* Round-off is tolerated, more is not: a student exactly in the span of
     * the teachers, with Q_00 lowered by 1e-13 (accepted, round trip still
     * to 1e-12) and by 1e-8 (rejected). */
    {
        const int K = 2, M = 2;
        double T[] = {1.5, 0.3, 0.3, 0.8};
        double Q[4], R[4];
        /* w_0 = 0.7 w*_0 - 0.4 w*_1, w_1 generic */
        double c0 = 0.7, c1 = -0.4;
        R[0] = c0 * T[0] + c1 * T[2];
        R[1] = c0 * T[1] + c1 * T[3];
        Q[0] = c0 * R[0] + c1 * R[1];
        R[2] = 0.2;
        R[3] = -0.1;
        Q[1] = Q[2] = c0 * R[2] + c1 * R[3]; /* w_0 . w_1 is fixed by R */
        Q[3] = 2.0;
        scm_error err;
        scm_model *m = scm_model_alloc(K, M, &scm_act_relu, T, NULL, NULL, &err);
        double Qa[4];
        memcpy(Qa, Q, sizeof Qa);
        scm_status st = roundtrip("student in span", m, Qa, R, 4, 3, NULL);
        CHECK(st == SCM_OK, "student in span: %s", scm_status_str(st));
        Qa[0] = Q[0] - 1e-13;
        st = roundtrip("student in span, Q_00 - 1e-13", m, Qa, R, 4, 3, NULL);
        CHECK(st == SCM_OK, "round-off below the tolerance rejected: %s", scm_status_str(st));
        Qa[0] = Q[0] - 1e-8;
        double W[8], Ws[8];
        st = scm_weights_realise(m, Qa, R, 4, W, Ws, &err);
        CHECK(st == SCM_ENOTPSD && strstr(err.msg, "student 0"),
              "Q_00 - 1e-8 on a student in the span: got %s (%s)", scm_status_str(st), err.msg);
        /* and a Q off by 1e-14 of asymmetry is fine, and is symmetrised: Q
         * and Q^T give the same weights, bit for bit */
        memcpy(Qa, Q, sizeof Qa);
        Qa[1] += 1e-14;
        st = scm_weights_realise(m, Qa, R, 4, W, Ws, &err);
        CHECK(st == SCM_OK, "asymmetry 1e-14 rejected: %s", err.msg);
        double W2[8], Ws2[8];
        Qa[2] = Qa[1];
        Qa[1] = Q[1];
        st = scm_weights_realise(m, Qa, R, 4, W2, Ws2, &err);
        CHECK(st == SCM_OK && max_diff(W, W2, 8) == 0.0 && max_diff(Ws, Ws2, 8) == 0.0,
              "realise(Q) and realise(Q^T) differ by %.3g", max_diff(W, W2, 8));
        scm_model_free(m);
    }
}

/* ---------------------------------------------------------------- 2, 3 */

/* A random point: model with T = Ws Ws^T / d from random Ws (non-identity
 * T, or T = I with Ws realised), random v, v*; random W (K x d). */
static scm_model *rand_point(const scm_activation *act, int K, int M, long d, int t_identity,
                             double *W, double *Ws)
{
    double *T = dalloc(M * M), v[16], vs[16];
    rand_second_layer(v, K);
    rand_second_layer(vs, M);
    scm_error err;
    scm_model *m;
    if (t_identity) {
        m = scm_model_alloc(K, M, act, NULL, v, vs, &err);
        /* W* with W* W*^T / d = I: realise Q = I, R = 0 and keep W* */
        double *Q = dalloc(K * K), *R = dalloc(K * M);
        for (int k = 0; k < K; k++)
            Q[k * K + k] = 1.0;
        scm_status st = scm_weights_realise(m, Q, R, d, W, Ws, &err);
        CHECK(st == SCM_OK, "realise T = I: %s", err.msg);
        free(Q);
        free(R);
    } else {
        randn(Ws, M * d, 1.0);
        gram(M, M, d, Ws, Ws, T);
        for (int a = 0; a < M; a++)
            for (int b = 0; b < a; b++)
                T[a * M + b] = T[b * M + a];
        m = scm_model_alloc(K, M, act, T, v, vs, &err);
    }
    CHECK(m != NULL, "model: %s", err.msg);
    randn(W, K * d, 1.0);
    free(T);
    return m;
}

static double loss_at(scm_flow *fl, long d, const double *W, const double *Ws, double *Q,
                      double *R)
{
    double e = NAN;
    scm_weights_overlaps(scm_flow_model(fl), d, W, Ws, Q, R);
    scm_status st = scm_flow_loss(fl, Q, R, &e);
    CHECK(st == SCM_OK, "loss: %s", scm_status_str(st));
    return e;
}

static void test_grad(void)
{
    static const int KM[][2] = {{1, 1}, {2, 2}, {3, 2}, {2, 3}, {4, 4}, {5, 2}};
    for (int ai = 0; ai < N_ACTS; ai++)
        for (size_t ki = 0; ki < sizeof KM / sizeof KM[0]; ki++)
            for (int rep = 0; rep < 3; rep++) {
                const int K = KM[ki][0], M = KM[ki][1];
                const long d = K + M + 2 + rep;
                double *W = dalloc(K * d), *Ws = dalloc(M * d), *G = dalloc(K * d),
                       *G2 = dalloc(K * d), *Q = dalloc(K * K), *R = dalloc(K * M),
                       *A = dalloc(K * K), *B = dalloc(K * M), *S = dalloc(K * K);
                scm_model *m = rand_point(acts[ai], K, M, d, rep == 0, W, Ws);
                scm_flow *fl = scm_flow_alloc(m);
                double eps, eps_only, eps_ref;
                scm_status st = scm_weights_grad(fl, d, W, Ws, &eps, G);
                CHECK(st == SCM_OK, "%s K=%d M=%d: weights_grad %s", acts[ai]->name, K, M,
                      scm_status_str(st));
                /* eps = scm_flow_loss at the overlaps; the NULL variants agree */
                eps_ref = loss_at(fl, d, W, Ws, Q, R);
                CHECK(eps == eps_ref, "%s: eps %.17g vs flow loss %.17g", acts[ai]->name, eps,
                      eps_ref);
                st = scm_weights_grad(fl, d, W, Ws, &eps_only, NULL);
                CHECK(st == SCM_OK && eps_only == eps, "eps-only call differs");
                st = scm_weights_grad(fl, d, W, Ws, NULL, G2);
                CHECK(st == SCM_OK && max_diff(G, G2, K * d) == 0.0, "G-only call differs");

                /* central differences in weight space */
                const double h = 1e-5;
                const double gscale = max_abs(G, K * d);
                double worst = 0.0;
                for (long i = 0; i < K * d; i++) {
                    double w0 = W[i];
                    W[i] = w0 + h;
                    double ep = loss_at(fl, d, W, Ws, Q, R);
                    W[i] = w0 - h;
                    double em = loss_at(fl, d, W, Ws, Q, R);
                    W[i] = w0;
                    double fd = (ep - em) / (2.0 * h);
                    worst = fmax(worst, fabs(fd - G[i]) / gscale);
                }
                worst_fd_w = fmax(worst_fd_w, worst);
                CHECK(worst <= 1e-8, "%s K=%d M=%d d=%ld: weight-space FD error %.3g (scale %.3g)",
                      acts[ai]->name, K, M, d, worst, gscale);

                /* (1/d)(S W + B W*) with A, B from scm_flow_grad */
                scm_weights_overlaps(m, d, W, Ws, Q, R);
                st = scm_flow_grad(fl, Q, R, NULL, A, B);
                CHECK(st == SCM_OK, "flow_grad: %s", scm_status_str(st));
                for (int k = 0; k < K; k++)
                    for (int l = 0; l < K; l++)
                        S[k * K + l] = A[k * K + l] + A[l * K + k];
                double fe = 0.0;
                for (int k = 0; k < K; k++)
                    for (long j = 0; j < d; j++) {
                        double s = 0.0;
                        for (int l = 0; l < K; l++)
                            s += S[k * K + l] * W[l * d + j];
                        for (int n = 0; n < M; n++)
                            s += B[k * M + n] * Ws[n * d + j];
                        fe = fmax(fe, fabs(s / (double)d - G[k * d + j]));
                    }
                fe /= gscale;
                worst_formula = fmax(worst_formula, fe);
                CHECK(fe <= 1e-13, "%s K=%d M=%d: G vs (S W + B W*)/d: %.3g", acts[ai]->name, K, M,
                      fe);

                scm_flow_free(fl);
                scm_model_free(m);
                free(W);
                free(Ws);
                free(G);
                free(G2);
                free(Q);
                free(R);
                free(A);
                free(B);
                free(S);
            }
}

static void test_identity(void)
{
    static const int KM[][2] = {{1, 1}, {2, 2}, {3, 2}, {2, 4}, {4, 4}, {6, 3}};
    for (int ai = 0; ai < N_ACTS; ai++)
        for (size_t ki = 0; ki < sizeof KM / sizeof KM[0]; ki++)
            for (int rep = 0; rep < 4; rep++) {
                const int K = KM[ki][0], M = KM[ki][1], n = K + M;
                const long p = n + 3;
                double *Wp = dalloc(K * p), *Wsp = dalloc(M * p), *Q = dalloc(K * K),
                       *R = dalloc(K * M), *A = dalloc(K * K), *B = dalloc(K * M),
                       *FQ = dalloc(K * K), *FR = dalloc(K * M), *W = dalloc(K * n),
                       *Ws = dalloc(M * n), *G = dalloc(K * n), *Gp = dalloc(K * p);
                scm_model *m = rand_point(acts[ai], K, M, p, rep == 1, Wp, Wsp);
                scm_flow *fl = scm_flow_alloc(m);
                scm_weights_overlaps(m, p, Wp, Wsp, Q, R);
                scm_status st = scm_flow_grad(fl, Q, R, NULL, A, B);
                st = st ? st : scm_flow_rhs(fl, Q, R, FQ, FR, NULL);
                double g2 = NAN;
                st = st ? st : scm_flow_grad_norm2(fl, Q, R, &g2);
                CHECK(st == SCM_OK, "flow: %s", scm_status_str(st));
                double deps = 0.0;
                for (int i = 0; i < K * K; i++)
                    deps += A[i] * FQ[i];
                for (int i = 0; i < K * M; i++)
                    deps += B[i] * FR[i];
                /* realised in d = K + M, and the original vectors in d = p */
                scm_error err;
                st = scm_weights_realise(m, Q, R, n, W, Ws, &err);
                CHECK(st == SCM_OK, "realise: %s", err.msg);
                st = scm_weights_grad(fl, n, W, Ws, NULL, G);
                CHECK(st == SCM_OK, "weights_grad: %s", scm_status_str(st));
                double gw = 0.0, gwp = 0.0;
                for (long i = 0; i < K * n; i++)
                    gw += G[i] * G[i];
                gw *= (double)n; /* |dW/dtau|^2 / d = d |G|^2 */
                st = scm_weights_grad(fl, p, Wp, Wsp, NULL, Gp);
                CHECK(st == SCM_OK, "weights_grad: %s", scm_status_str(st));
                for (long i = 0; i < K * p; i++)
                    gwp += Gp[i] * Gp[i];
                gwp *= (double)p;
                double e1 = fabs(deps + g2) / g2, e2 = fabs(gw - g2) / g2,
                       e3 = fabs(gwp - g2) / g2;
                worst_identity = fmax(worst_identity, fmax(e1, fmax(e2, e3)));
                CHECK(g2 > 0.0, "%s: grad_norm2 = %g at a random state", acts[ai]->name, g2);
                CHECK(e1 <= 1e-12, "%s K=%d M=%d: A.F_Q + B.F_R = %.17g vs -g2 = %.17g (%.3g)",
                      acts[ai]->name, K, M, deps, -g2, e1);
                CHECK(e2 <= 1e-12, "%s K=%d M=%d: d|G|^2 (realised) = %.17g vs g2 = %.17g (%.3g)",
                      acts[ai]->name, K, M, gw, g2, e2);
                CHECK(e3 <= 1e-12, "%s K=%d M=%d: d|G|^2 (original) = %.17g vs g2 = %.17g (%.3g)",
                      acts[ai]->name, K, M, gwp, g2, e3);
                scm_flow_free(fl);
                scm_model_free(m);
                free(Wp);
                free(Wsp);
                free(Q);
                free(R);
                free(A);
                free(B);
                free(FQ);
                free(FR);
                free(W);
                free(Ws);
                free(G);
                free(Gp);
            }
}

/* ---------------------------------------------------------------- 4 */

/* eps exactly as MATH.md section 1 writes it, the double sum over all
 * (k, l) with Q_kl in the (k, l) term: defined for any K x K array, which
 * is what "all K^2 entries independent" differentiates. */
static double eps_math(const scm_model *m, const double *Q, const double *R)
{
    const int K = m->K, M = m->M;
    double e = 0.0;
    scm_pair p;
    for (int k = 0; k < K; k++)
        for (int l = 0; l < K; l++) {
            m->act->pair(Q[k * K + k], Q[l * K + l], Q[k * K + l], &p);
            e += 0.5 * m->v[k] * m->v[l] * p.f;
        }
    for (int k = 0; k < K; k++)
        for (int n = 0; n < M; n++) {
            m->act->pair(Q[k * K + k], m->T[n * M + n], R[k * M + n], &p);
            e -= m->v[k] * m->vs[n] * p.f;
        }
    for (int a = 0; a < M; a++)
        for (int b = 0; b < M; b++) {
            m->act->pair(m->T[a * M + a], m->T[b * M + b], m->T[a * M + b], &p);
            e += 0.5 * m->vs[a] * m->vs[b] * p.f;
        }
    return e;
}

static void test_fd_qr(void)
{
    static const int KM[][2] = {{1, 1}, {2, 2}, {3, 2}, {2, 3}, {4, 4}};
    const double h = 1e-6;
    for (int ai = 0; ai < N_ACTS; ai++)
        for (size_t ki = 0; ki < sizeof KM / sizeof KM[0]; ki++)
            for (int rep = 0; rep < 3; rep++) {
                const int K = KM[ki][0], M = KM[ki][1];
                const long p = K + M + 3;
                double *Wp = dalloc(K * p), *Wsp = dalloc(M * p), *Q = dalloc(K * K),
                       *R = dalloc(K * M), *A = dalloc(K * K), *B = dalloc(K * M);
                scm_model *m = rand_point(acts[ai], K, M, p, rep == 2, Wp, Wsp);
                scm_flow *fl = scm_flow_alloc(m);
                scm_weights_overlaps(m, p, Wp, Wsp, Q, R);
                double eps;
                scm_status st = scm_flow_grad(fl, Q, R, &eps, A, B);
                CHECK(st == SCM_OK, "flow_grad: %s", scm_status_str(st));
                double e_ref = eps_math(m, Q, R);
                CHECK_CLOSE(eps, e_ref, 1e-14, 1e-15, "scm_flow_loss vs the MATH.md double sum");
                const double scale = fmax(max_abs(A, K * K), max_abs(B, K * M));
                double worst = 0.0;
                /* one entry of Q at a time, no symmetrising: the MATH.md loss */
                for (int i = 0; i < K * K; i++) {
                    double q0 = Q[i];
                    Q[i] = q0 + h;
                    double ep = eps_math(m, Q, R);
                    Q[i] = q0 - h;
                    double em = eps_math(m, Q, R);
                    Q[i] = q0;
                    double err = fabs((ep - em) / (2.0 * h) - A[i]) / scale;
                    worst = fmax(worst, err);
                    CHECK(err <= 1e-8, "%s K=%d M=%d: A[%d][%d] = %.12g vs FD %.12g",
                          acts[ai]->name, K, M, i / K, i % K, A[i], (ep - em) / (2.0 * h));
                }
                /* scm_flow_loss itself: diagonal entries one at a time, an
                 * off-diagonal pair (k,l),(l,k) together gives A_kl + A_lk */
                for (int k = 0; k < K; k++)
                    for (int l = k; l < K; l++) {
                        double q0 = Q[k * K + l], ep, em;
                        Q[k * K + l] = Q[l * K + k] = q0 + h;
                        scm_flow_loss(fl, Q, R, &ep);
                        Q[k * K + l] = Q[l * K + k] = q0 - h;
                        scm_flow_loss(fl, Q, R, &em);
                        Q[k * K + l] = Q[l * K + k] = q0;
                        double want = k == l ? A[k * K + k] : A[k * K + l] + A[l * K + k];
                        double err = fabs((ep - em) / (2.0 * h) - want) / scale;
                        worst = fmax(worst, err);
                        CHECK(err <= 1e-8, "%s K=%d M=%d: symmetric FD of scm_flow_loss at (%d,%d)",
                              acts[ai]->name, K, M, k, l);
                        if (k != l)
                            CHECK(A[k * K + l] == A[l * K + k], "A not symmetric at (%d,%d)", k,
                                  l);
                    }
                for (int i = 0; i < K * M; i++) {
                    double r0 = R[i], ep, em;
                    R[i] = r0 + h;
                    scm_flow_loss(fl, Q, R, &ep);
                    R[i] = r0 - h;
                    scm_flow_loss(fl, Q, R, &em);
                    R[i] = r0;
                    double err = fabs((ep - em) / (2.0 * h) - B[i]) / scale;
                    worst = fmax(worst, err);
                    CHECK(err <= 1e-8, "%s K=%d M=%d: B[%d][%d] = %.12g vs FD %.12g",
                          acts[ai]->name, K, M, i / M, i % M, B[i], (ep - em) / (2.0 * h));
                }
                worst_fd_qr = fmax(worst_fd_qr, worst);
                scm_flow_free(fl);
                scm_model_free(m);
                free(Wp);
                free(Wsp);
                free(Q);
                free(R);
                free(A);
                free(B);
            }
}

int main(void)
{
    gsl_set_error_handler_off();
    rng = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(rng, 20240611u);
    test_roundtrip();
    test_reject();
    test_grad();
    test_identity();
    test_fd_qr();
    printf("worst errors: round trip %.3g, weight-space FD %.3g, G vs (SW+BW*)/d %.3g, "
           "flow identity %.3g, (Q,R) FD %.3g\n",
           worst_roundtrip, worst_fd_w, worst_formula, worst_identity, worst_fd_qr);
    gsl_rng_free(rng);
    return TEST_SUMMARY();
}
