/* test_flow.c: the loss and the right-hand side of the (Q, R) flow.
 *  - eps(Q, R) against a seeded Monte Carlo estimate of 1/2 E[(phi - phi*)^2]
 *    from explicit weight vectors, within 5 standard errors;
 *  - the matrix form (F_Q, F_R) against the textbook I3-sum form, to 1e-12,
 *    at random states, for all activations, K != M, non-identity T and
 *    second layers;
 *  - the global minimum is a fixed point with eps = 0;
 *  - a dead ReLU student (zero row) is the same as no student;
 *  - the Jacobian-vector product and the full Jacobian of (F_Q, F_R)
 *    against central differences of the rhs (and the Jacobian against
 *    the product);
 *  - error statuses: a state beyond Cauchy-Schwarz, NaN, bad T;
 *  - scm_flow_rhs_gv: the flow of scm_flow_rhs to the bit and the v
 *    gradient of scm_twolayer_grad_v (1e-14), a dead ReLU student included;
 *  - the frozen-S preconditioner against the same operator assembled as a
 *    dense K^2 x K^2 (and KM x KM) matrix, clamped in its own eigenbasis. */
#include <gsl/gsl_eigen.h>
#include <gsl/gsl_errno.h>
#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>
#include <stdlib.h>
#include <string.h>

#include "core/flow_internal.h"
#include "scm/flow.h"
#include "scm/twolayer.h"
#include "testutil.h"

typedef struct {
    int K, M, d;
    double *W, *Ws, *Q, *R, *T, *v, *vs;
} state;

/* Random weights in dimension d and their overlaps. */
static state random_state(gsl_rng *r, int K, int M, int d, int plain)
{
    state s = {K, M, d, malloc(sizeof(double) * K * d), malloc(sizeof(double) * M * d),
               malloc(sizeof(double) * K * K), malloc(sizeof(double) * K * M),
               malloc(sizeof(double) * M * M), malloc(sizeof(double) * K),
               malloc(sizeof(double) * M)};
    for (int i = 0; i < K * d; i++)
        s.W[i] = gsl_ran_gaussian(r, 1.0) * sqrt(0.3 + (double)(i % 3));
    for (int i = 0; i < M * d; i++)
        s.Ws[i] = plain ? 0.0 : gsl_ran_gaussian(r, 1.0);
    if (plain) /* orthonormal teacher: T = I */
        for (int m = 0; m < M; m++)
            s.Ws[m * d + m] = sqrt((double)d);
    for (int k = 0; k < K; k++)
        s.v[k] = plain ? 1.0 : 0.4 + gsl_rng_uniform(r);
    for (int m = 0; m < M; m++)
        s.vs[m] = plain ? 1.0 : 0.3 + gsl_rng_uniform(r);
    for (int a = 0; a < K; a++)
        for (int b = 0; b < K; b++) {
            double x = 0;
            for (int j = 0; j < d; j++)
                x += s.W[a * d + j] * s.W[b * d + j];
            s.Q[a * K + b] = x / d;
        }
    for (int a = 0; a < K; a++)
        for (int b = 0; b < M; b++) {
            double x = 0;
            for (int j = 0; j < d; j++)
                x += s.W[a * d + j] * s.Ws[b * d + j];
            s.R[a * M + b] = x / d;
        }
    for (int a = 0; a < M; a++)
        for (int b = 0; b < M; b++) {
            double x = 0;
            for (int j = 0; j < d; j++)
                x += s.Ws[a * d + j] * s.Ws[b * d + j];
            s.T[a * M + b] = x / d;
        }
    return s;
}

static void free_state(state *s)
{
    free(s->W);
    free(s->Ws);
    free(s->Q);
    free(s->R);
    free(s->T);
    free(s->v);
    free(s->vs);
}

/* 1/2 E[(phi - phi*)^2] over x ~ N(0, I_d), with its standard error. */
static void mc_loss(gsl_rng *r, const scm_activation *act, const state *s, long n, double *mean,
                    double *se)
{
    double sum = 0, sum2 = 0;
    double *x = malloc(sizeof(double) * s->d);
    for (long i = 0; i < n; i++) {
        for (int j = 0; j < s->d; j++)
            x[j] = gsl_ran_gaussian_ziggurat(r, 1.0);
        double phi = 0;
        for (int k = 0; k < s->K; k++) {
            double l = 0;
            for (int j = 0; j < s->d; j++)
                l += s->W[k * s->d + j] * x[j];
            phi += s->v[k] * act->g(l / sqrt((double)s->d));
        }
        for (int m = 0; m < s->M; m++) {
            double l = 0;
            for (int j = 0; j < s->d; j++)
                l += s->Ws[m * s->d + j] * x[j];
            phi -= s->vs[m] * act->g(l / sqrt((double)s->d));
        }
        double e = 0.5 * phi * phi;
        sum += e;
        sum2 += e * e;
    }
    *mean = sum / n;
    *se = sqrt((sum2 / n - *mean * *mean) / (n - 1));
    free(x);
}

static const scm_activation *const acts[] = {&scm_act_relu, &scm_act_erf, &scm_act_linear};

static void test_loss_mc(gsl_rng *r)
{
    for (int a = 0; a < 3; a++) {
        state s = random_state(r, 3, 2, 7, 0);
        scm_error e;
        scm_model *m = scm_model_alloc(3, 2, acts[a], s.T, s.v, s.vs, &e);
        CHECK(m != NULL, "model: %s", e.msg);
        scm_flow *fl = scm_flow_alloc(m);
        double eps, mean, se;
        CHECK(scm_flow_loss(fl, s.Q, s.R, &eps) == SCM_OK, "loss status");
        mc_loss(r, acts[a], &s, 400000, &mean, &se);
        CHECK(fabs(eps - mean) < 5 * se, "%s: eps %.8g vs MC %.8g +- %.2g", acts[a]->name, eps,
              mean, se);
        CHECK(se < 0.02 * mean, "%s: MC error bar %.3g too wide for a meaningful test",
              acts[a]->name, se);
        scm_flow_free(fl);
        scm_model_free(m);
        free_state(&s);
    }
}

static void test_matrix_vs_i3(gsl_rng *r)
{
    const int sizes[][2] = {{1, 1}, {2, 3}, {4, 4}, {5, 2}, {7, 6}};
    for (int a = 0; a < 3; a++)
        for (int z = 0; z < 5; z++)
            for (int plain = 0; plain < 2; plain++) {
                int K = sizes[z][0], M = sizes[z][1];
                state s = random_state(r, K, M, K + M + 3, plain);
                scm_error e;
                scm_model *m = scm_model_alloc(K, M, acts[a], s.T, s.v, s.vs, &e);
                CHECK(m != NULL, "model: %s", e.msg);
                scm_flow *fl = scm_flow_alloc(m);
                double *FQ = malloc(sizeof(double) * K * K), *FR = malloc(sizeof(double) * K * M);
                double *GQ = malloc(sizeof(double) * K * K), *GR = malloc(sizeof(double) * K * M);
                CHECK(scm_flow_rhs(fl, s.Q, s.R, FQ, FR, NULL) == SCM_OK, "rhs status");
                CHECK(scm_flow_rhs_i3(fl, s.Q, s.R, GQ, GR) == SCM_OK, "rhs_i3 status");
                double scale = 0, diff = 0;
                for (int i = 0; i < K * K; i++) {
                    scale = fmax(scale, fabs(GQ[i]));
                    diff = fmax(diff, fabs(FQ[i] - GQ[i]));
                    CHECK(FQ[i] == FQ[(i % K) * K + i / K], "F_Q not symmetric");
                }
                for (int i = 0; i < K * M; i++) {
                    scale = fmax(scale, fabs(GR[i]));
                    diff = fmax(diff, fabs(FR[i] - GR[i]));
                }
                CHECK(diff <= 1e-12 * scale, "%s K=%d M=%d plain=%d: matrix vs I3 differ by %.3g (scale %.3g)",
                      acts[a]->name, K, M, plain, diff, scale);
                CHECK(scale > 1e-3, "state too close to a fixed point to test anything");
                free(FQ);
                free(FR);
                free(GQ);
                free(GR);
                scm_flow_free(fl);
                scm_model_free(m);
                free_state(&s);
            }
}

static void test_global_minimum(void)
{
    for (int a = 0; a < 3; a++)
        for (int M = 1; M <= 5; M += 2) {
            scm_error e;
            scm_model *m = scm_model_alloc(M, M, acts[a], NULL, NULL, NULL, &e);
            scm_flow *fl = scm_flow_alloc(m);
            double *Q = calloc(M * M, sizeof(double)), *R = calloc(M * M, sizeof(double));
            double *FQ = malloc(sizeof(double) * M * M), *FR = malloc(sizeof(double) * M * M);
            for (int i = 0; i < M; i++)
                Q[i * M + i] = R[i * M + i] = 1.0;
            double eps = 1;
            CHECK(scm_flow_rhs(fl, Q, R, FQ, FR, &eps) == SCM_OK, "rhs at the minimum");
            CHECK(fabs(eps) < 1e-15, "%s M=%d: eps at the global minimum = %g", acts[a]->name, M, eps);
            double mx = 0;
            for (int i = 0; i < M * M; i++)
                mx = fmax(mx, fmax(fabs(FQ[i]), fabs(FR[i])));
            CHECK(mx < 1e-15, "%s M=%d: |F| at the global minimum = %g", acts[a]->name, M, mx);
            free(Q);
            free(R);
            free(FQ);
            free(FR);
            scm_flow_free(fl);
            scm_model_free(m);
        }
}

static void test_errors(void)
{
    scm_error e;
    scm_model *m = scm_model_alloc(2, 1, &scm_act_relu, NULL, NULL, NULL, &e);
    scm_flow *fl = scm_flow_alloc(m);
    double Q[4] = {1, 0.2, 0.2, 0}, R[2] = {0.5, 0}, FQ[4], FR[2], eps;
    CHECK(scm_flow_rhs(fl, Q, R, FQ, FR, &eps) == SCM_ENOTPSD,
          "a zero-norm student with a non-zero overlap not reported");
    double Q2[4] = {1, 0, 0, 1}, R2[2] = {1.5, 0};
    CHECK(scm_flow_rhs(fl, Q2, R2, FQ, FR, &eps) == SCM_ENOTPSD, "R beyond Cauchy-Schwarz not reported");
    double Q3[4] = {1, NAN, NAN, 1}, R3[2] = {0.1, 0};
    CHECK(scm_flow_rhs(fl, Q3, R3, FQ, FR, &eps) != SCM_OK, "NaN not reported");
    scm_flow_free(fl);
    scm_model_free(m);
    /* model validation */
    double Tbad[4] = {1, 2, 2, 1}, Tasym[4] = {1, 0.1, 0.2, 1};
    CHECK(scm_model_alloc(2, 2, &scm_act_relu, Tbad, NULL, NULL, &e) == NULL && e.code == SCM_ENOTPSD,
          "non-PSD T accepted");
    CHECK(strstr(e.msg, "positive semi-definite") != NULL, "message: %s", e.msg);
    CHECK(scm_model_alloc(2, 2, &scm_act_relu, Tasym, NULL, NULL, &e) == NULL && e.code == SCM_EINVAL,
          "asymmetric T accepted");
    CHECK(scm_model_alloc(0, 2, &scm_act_relu, NULL, NULL, NULL, &e) == NULL, "K = 0 accepted");
    double Tsing[4] = {1, 1, 1, 1}; /* PSD but singular: allowed */
    scm_model *ms = scm_model_alloc(2, 2, &scm_act_relu, Tsing, NULL, NULL, &e);
    CHECK(ms != NULL, "singular PSD T rejected: %s", e.msg);
    scm_model_free(ms);
}

/* A dead ReLU student (all-zero row) is the same as no student: eps and the
 * live rows of F equal those of the model without it, in both forms, and
 * its own rows are zero. */
static void test_dead_student(gsl_rng *r)
{
    const int K = 3, M = 2, dead = 1;
    state s = random_state(r, K - 1, M, 6, 0);
    scm_error e;
    double v3[3] = {s.v[0], 0.7, s.v[1]};
    scm_model *m2 = scm_model_alloc(K - 1, M, &scm_act_relu, s.T, s.v, s.vs, &e);
    scm_model *m3 = scm_model_alloc(K, M, &scm_act_relu, s.T, v3, s.vs, &e);
    scm_flow *f2 = scm_flow_alloc(m2), *f3 = scm_flow_alloc(m3);
    double Q3[9] = {0}, R3[6] = {0}, FQ2[4], FR2[4], FQ3[9], FR3[6], GQ3[9], GR3[6], e2, e3;
    const int live[2] = {0, 2};
    for (int a = 0; a < 2; a++) {
        for (int b = 0; b < 2; b++)
            Q3[live[a] * K + live[b]] = s.Q[a * (K - 1) + b];
        for (int n = 0; n < M; n++)
            R3[live[a] * M + n] = s.R[a * M + n];
    }
    CHECK(scm_flow_rhs(f2, s.Q, s.R, FQ2, FR2, &e2) == SCM_OK, "K-1 rhs");
    CHECK(scm_flow_rhs(f3, Q3, R3, FQ3, FR3, &e3) == SCM_OK, "rhs with a dead student");
    CHECK(scm_flow_rhs_i3(f3, Q3, R3, GQ3, GR3) == SCM_OK, "rhs_i3 with a dead student");
    CHECK_CLOSE(e3, e2, 1e-14, 0, "eps with a dead student");
    for (int a = 0; a < 2; a++) {
        for (int b = 0; b < 2; b++) {
            CHECK_CLOSE(FQ3[live[a] * K + live[b]], FQ2[a * 2 + b], 1e-13, 1e-15, "F_Q live");
            CHECK_CLOSE(GQ3[live[a] * K + live[b]], FQ2[a * 2 + b], 1e-13, 1e-15, "I3 F_Q live");
        }
        for (int n = 0; n < M; n++) {
            CHECK_CLOSE(FR3[live[a] * M + n], FR2[a * M + n], 1e-13, 1e-15, "F_R live");
            CHECK_CLOSE(GR3[live[a] * M + n], FR2[a * M + n], 1e-13, 1e-15, "I3 F_R live");
        }
    }
    for (int j = 0; j < K; j++)
        CHECK(FQ3[dead * K + j] == 0 && GQ3[dead * K + j] == 0, "dead row of F_Q not zero");
    for (int n = 0; n < M; n++)
        CHECK(FR3[dead * M + n] == 0 && GR3[dead * M + n] == 0, "dead row of F_R not zero");
    scm_flow_free(f2);
    scm_flow_free(f3);
    scm_model_free(m2);
    scm_model_free(m3);
    free_state(&s);
}

/* A small student parallel to a large one, its overlap beyond the bound by
 * integration-error size (1e-9 absolute, 1e-5 of the pair's own scale):
 * accepted, with the kernel values (eps, A, B) of the state with the
 * overlap on the bound; a large
 * excess is still rejected. */
static void test_cs_clamp(void)
{
    scm_error e;
    scm_model *m = scm_model_alloc(2, 1, &scm_act_relu, NULL, NULL, NULL, &e);
    scm_flow *fl = scm_flow_alloc(m);
    const double a = 1.0, b = 1e-8, n = sqrt(a * b);
    double Qx[4] = {a, n + 1e-9, n + 1e-9, b}, Qn[4] = {a, n, n, b}, R[2] = {0.9, 0.9e-4};
    double FQx[4], FRx[2], FQn[4], FRn[2], ex, en;
    CHECK(scm_flow_rhs(fl, Qx, R, FQx, FRx, &ex) == SCM_OK, "small excess rejected");
    CHECK(scm_flow_rhs(fl, Qn, R, FQn, FRn, &en) == SCM_OK, "state on the bound");
    CHECK(ex == en, "eps with a clamped overlap %.17g differs from the one on the bound %.17g", ex, en);
    /* the kernels see the clamped overlap: A and B equal exactly (F differs,
     * as it multiplies Q itself) */
    double Ax[4], Bx[2], An[4], Bn[2];
    CHECK(scm_flow_grad(fl, Qx, R, NULL, Ax, Bx) == SCM_OK && scm_flow_grad(fl, Qn, R, NULL, An, Bn) == SCM_OK,
          "grad status");
    CHECK(memcmp(Ax, An, sizeof Ax) == 0 && memcmp(Bx, Bn, sizeof Bx) == 0,
          "A, B with a clamped overlap differ from those on the bound");
    double Qbig[4] = {a, n + 1e-4, n + 1e-4, b};
    CHECK(scm_flow_rhs(fl, Qbig, R, FQx, FRx, &ex) == SCM_ENOTPSD, "a large excess accepted");
    scm_flow_free(fl);
    scm_model_free(m);
}

static double maxabs(const double *x, int n)
{
    double mx = 0.0;
    for (int i = 0; i < n; i++)
        mx = fmax(mx, fabs(x[i]));
    return mx;
}

/* The product after a right-hand side at the same point reuses that call's
 * A and B (flow.c, g_valid): the result must be bitwise a fresh flow's,
 * and a changed second layer (scm_flow_set_v, or its buffer changed in
 * place) or a moved point must not reuse them. */
static void test_jvp_reuse(gsl_rng *r)
{
    for (size_t a = 0; a < sizeof acts / sizeof acts[0]; a++) {
        const int K = 5, M = 4;
        state s = random_state(r, K, M, K + M + 3, 0);
        scm_error e;
        scm_model *m = scm_model_alloc(K, M, acts[a], s.T, s.v, s.vs, &e);
        CHECK(m != NULL, "model: %s", e.msg);
        double dQ[25], dR[20], FQ[25], FR[20], eps, vb[5], Q2[25];
        double JQ[25], JR[20], JQf[25], JRf[20];
        for (int k = 0; k < K; k++)
            for (int l = k; l < K; l++)
                dQ[k * K + l] = dQ[l * K + k] = gsl_ran_gaussian(r, 1.0);
        for (int i = 0; i < K * M; i++)
            dR[i] = gsl_ran_gaussian(r, 1.0);
        for (int k = 0; k < K; k++)
            vb[k] = 2.385 * s.v[k];
        memcpy(Q2, s.Q, sizeof Q2);
        Q2[0] *= 1.0 + 1e-9;
        for (int c = 0; c < 4; c++) {
            /* c = 0: same point and v (reused); 1: rhs under another v;
             * 2: v's buffer changed after the rhs; 3: rhs at another point */
            scm_flow *fl = scm_flow_alloc(m), *fresh = scm_flow_alloc(m);
            if (c == 1 || c == 2)
                scm_flow_set_v(fl, vb);
            CHECK(scm_flow_rhs(fl, c == 3 ? Q2 : s.Q, s.R, FQ, FR, &eps) == SCM_OK, "rhs");
            if (c == 1)
                scm_flow_set_v(fl, NULL);
            if (c == 2) {
                vb[1] *= 1.5;
                scm_flow_set_v(fresh, vb);
            }
            CHECK(scm_flow_jvp(fl, s.Q, s.R, dQ, dR, JQ, JR) == SCM_OK, "jvp");
            CHECK(scm_flow_jvp(fresh, s.Q, s.R, dQ, dR, JQf, JRf) == SCM_OK, "jvp fresh");
            CHECK(memcmp(JQ, JQf, sizeof JQ) == 0 && memcmp(JR, JRf, sizeof JR) == 0,
                  "%s, case %d: the product after a rhs differs from a fresh flow's",
                  acts[a]->name, c);
            scm_flow_free(fl);
            scm_flow_free(fresh);
        }
        scm_model_free(m);
        free_state(&s);
    }
}

/* Every copy of the linearisation (flow_internal.h: plain, AVX2, AVX-512
 * where the CPU has them) gives the Jacobian-vector product of the plain
 * one bit for bit, at widths whose loops leave every remainder, with and
 * without a dead student. */
static void test_jvp_copies(gsl_rng *r)
{
    static const int sizes[][2] = {{5, 3}, {13, 11}, {21, 19}, {42, 40}};
    int copies = 0;
    for (size_t z = 0; z < sizeof sizes / sizeof sizes[0]; z++)
        for (int dead = -1; dead < 1; dead++) {
            const int K = sizes[z][0], M = sizes[z][1];
            const long KK = (long)K * K, KM = (long)K * M;
            state s = random_state(r, K, M, K + M + 4, 0);
            if (dead >= 0) {
                for (int l = 0; l < K; l++)
                    s.Q[dead * K + l] = s.Q[l * K + dead] = 0.0;
                for (int n = 0; n < M; n++)
                    s.R[dead * M + n] = 0.0;
            }
            scm_error e;
            scm_model *m = scm_model_alloc(K, M, &scm_act_relu, s.T, s.v, s.vs, &e);
            CHECK(m != NULL, "model: %s", e.msg);
            double *dQ = malloc(sizeof(double) * (size_t)(2 * KK + 2 * KM + KK + KM));
            double *dR = dQ + KK, *J0 = dR + KM, *J = J0 + KK + KM;
            for (int k = 0; k < K; k++)
                for (int l = k; l < K; l++)
                    dQ[k * K + l] = dQ[l * K + k] = gsl_ran_gaussian(r, 1.0);
            for (long i = 0; i < KM; i++)
                dR[i] = gsl_ran_gaussian(r, 1.0);
            for (int isa = SCM_LINALG_PLAIN; isa <= SCM_LINALG_AVX512; isa++) {
                scm_flow *fl = scm_flow_alloc(m);
                if (scm_flow_set_isa(fl, (scm_linalg_isa)isa) == 0) {
                    double *out = isa == SCM_LINALG_PLAIN ? J0 : J;
                    CHECK(scm_flow_jvp(fl, s.Q, s.R, dQ, dR, out, out + KK) == SCM_OK,
                          "jvp status, copy %d", isa);
                    CHECK(memcmp(out, J0, sizeof(double) * (size_t)(KK + KM)) == 0,
                          "K=%d M=%d dead=%d: the jvp of copy %d differs from the plain one's",
                          K, M, dead, isa);
                    copies += isa != SCM_LINALG_PLAIN;
                }
                scm_flow_free(fl);
            }
            free(dQ);
            scm_model_free(m);
            free_state(&s);
        }
    printf("# jvp: %d comparisons of a wider copy with the plain one\n", copies);
}

/* The analytic Jacobian-vector product against central differences of the
 * rhs (step 1e-5, truncation ~1e-10), at random states of each activation,
 * T = I and a general T, with and without a dead ReLU student (whose
 * direction entries, set non-zero, must be ignored); two directions at one
 * point exercise the cached linearisation, the next state its renewal. */
static void test_jvp(gsl_rng *r)
{
    for (size_t a = 0; a < sizeof acts / sizeof acts[0]; a++)
        for (int plain = 0; plain <= 1; plain++)
            for (int dead = -1; dead < (acts[a] == &scm_act_relu ? 4 : 0); dead++) {
                const int K = 4, M = 3;
                state s = random_state(r, K, M, K + M + 4, plain);
                scm_error e;
                scm_model *m = scm_model_alloc(K, M, acts[a], s.T, s.v, s.vs, &e);
                CHECK(m != NULL, "model: %s", e.msg);
                scm_flow *fl = scm_flow_alloc(m);
                if (dead >= 0) {
                    for (int l = 0; l < K; l++)
                        s.Q[dead * K + l] = s.Q[l * K + dead] = 0.0;
                    for (int n = 0; n < M; n++)
                        s.R[dead * M + n] = 0.0;
                }
                for (int dir = 0; dir < 2; dir++) {
                    double dQ[16], dR[12], JQ[16], JR[12], Qp[16], Rp[12], Qm[16], Rm[12];
                    double FQp[16], FRp[12], FQm[16], FRm[12];
                    for (int k = 0; k < K; k++)
                        for (int l = k; l < K; l++)
                            dQ[k * K + l] = dQ[l * K + k] = gsl_ran_gaussian(r, 1.0);
                    for (int i = 0; i < K * M; i++)
                        dR[i] = gsl_ran_gaussian(r, 1.0);
                    CHECK(scm_flow_jvp(fl, s.Q, s.R, dQ, dR, JQ, JR) == SCM_OK, "jvp status");
                    if (dead >= 0) { /* the difference quotient keeps the dead row at zero */
                        for (int l = 0; l < K; l++)
                            dQ[dead * K + l] = dQ[l * K + dead] = 0.0;
                        for (int n = 0; n < M; n++)
                            dR[dead * M + n] = 0.0;
                    }
                    const double h = 1e-5;
                    for (int i = 0; i < K * K; i++) {
                        Qp[i] = s.Q[i] + h * dQ[i];
                        Qm[i] = s.Q[i] - h * dQ[i];
                    }
                    for (int i = 0; i < K * M; i++) {
                        Rp[i] = s.R[i] + h * dR[i];
                        Rm[i] = s.R[i] - h * dR[i];
                    }
                    CHECK(scm_flow_rhs(fl, Qp, Rp, FQp, FRp, NULL) == SCM_OK &&
                              scm_flow_rhs(fl, Qm, Rm, FQm, FRm, NULL) == SCM_OK,
                          "rhs status");
                    double scale = fmax(maxabs(JQ, K * K), maxabs(JR, K * M));
                    double diff = 0.0;
                    for (int i = 0; i < K * K; i++)
                        diff = fmax(diff, fabs(JQ[i] - (FQp[i] - FQm[i]) / (2 * h)));
                    for (int i = 0; i < K * M; i++)
                        diff = fmax(diff, fabs(JR[i] - (FRp[i] - FRm[i]) / (2 * h)));
                    CHECK(diff <= 1e-7 * scale,
                          "%s plain=%d dead=%d dir=%d: Jv vs differences %.3g (scale %.3g)",
                          acts[a]->name, plain, dead, dir, diff, scale);
                    CHECK(scale > 1e-3, "Jv too small to test anything");
                }
                scm_flow_free(fl);
                scm_model_free(m);
                free_state(&s);
            }
    /* two parallel students: not resolved in closed form */
    double Q[4] = {1, 1, 1, 1}, R[2] = {0.3, 0.3}, dQ[4] = {1, 0, 0, 1}, dR[2] = {1, 1};
    double JQ[4], JR[2], T[1] = {1};
    scm_error e;
    scm_model *m = scm_model_alloc(2, 1, &scm_act_relu, T, NULL, NULL, &e);
    scm_flow *fl = scm_flow_alloc(m);
    CHECK(scm_flow_jvp(fl, Q, R, dQ, dR, JQ, JR) == SCM_ESINGULAR,
          "parallel students: jvp not SCM_ESINGULAR");
    scm_flow_free(fl);
    scm_model_free(m);
}

/* Pack (Q upper triangle, R) as scm_flow_jacobian's unknowns. */
static void pack(int K, int M, const double *Q, const double *R, double *u)
{
    int p = 0;
    for (int k = 0; k < K; k++)
        for (int l = k; l < K; l++)
            u[p++] = Q[k * K + l];
    for (int i = 0; i < K * M; i++)
        u[p++] = R[i];
}

static void unpack(int K, int M, const double *u, double *Q, double *R)
{
    int p = 0;
    for (int k = 0; k < K; k++)
        for (int l = k; l < K; l++)
            Q[k * K + l] = Q[l * K + k] = u[p++];
    for (int i = 0; i < K * M; i++)
        R[i] = u[p++];
}

/* max |J - (central differences of the packed rhs, step h)| over the
 * columns of live students; J is n x n. */
static double jac_fd_diff(scm_flow *fl, int K, int M, const double *Q, const double *R,
                          const double *J, const int *dead_col)
{
    const int n = K * (K + 1) / 2 + K * M;
    double *u = malloc(sizeof(double) * (size_t)n * 4), *up = u + n, *fp = u + 2 * n,
           *fm = u + 3 * n;
    double *Qt = malloc(sizeof(double) * (size_t)(2 * K * K + 2 * K * M)), *Rt = Qt + K * K,
           *FQ = Rt + K * M, *FR = FQ + K * K;
    pack(K, M, Q, R, u);
    double diff = 0.0;
    for (int j = 0; j < n; j++) {
        if (dead_col && dead_col[j])
            continue;
        const double h = 1e-5;
        for (int side = 0; side < 2; side++) {
            memcpy(up, u, sizeof(double) * (size_t)n);
            up[j] += side ? -h : h;
            unpack(K, M, up, Qt, Rt);
            CHECK(scm_flow_rhs(fl, Qt, Rt, FQ, FR, NULL) == SCM_OK, "rhs next to the point");
            pack(K, M, FQ, FR, side ? fm : fp);
        }
        for (int i = 0; i < n; i++)
            diff = fmax(diff, fabs(J[i * n + j] - (fp[i] - fm[i]) / (2.0 * h)));
    }
    free(u);
    free(Qt);
    return diff;
}

/* The closed-form Jacobian (scm_flow_jacobian) against central differences
 * of the rhs (step 1e-5: truncation ~1e-10 relative) and against
 * scm_flow_jvp on every unit direction (the same second derivatives, a
 * dense product: to round-off), at random states of each activation with
 * K < M and K > M, T = I and a general T with general v, v*, and with a
 * dead ReLU student (its rows and columns zero).  The tolerance resolves a
 * change of one entry by 1e-6 of the largest: checked by perturbing one
 * entry of J, which must fail the comparison. */
static void test_jacobian(gsl_rng *r)
{
    const int sizes[2][2] = {{4, 3}, {3, 5}};
    for (size_t a = 0; a < sizeof acts / sizeof acts[0]; a++)
        for (int sz = 0; sz < 2; sz++)
            for (int plain = 0; plain <= 1; plain++)
                for (int dead = -1; dead < (acts[a] == &scm_act_relu ? 1 : 0); dead++) {
                    const int K = sizes[sz][0], M = sizes[sz][1];
                    const int n = K * (K + 1) / 2 + K * M;
                    state s = random_state(r, K, M, K + M + 4, plain);
                    scm_error e;
                    scm_model *m = scm_model_alloc(K, M, acts[a], s.T, s.v, s.vs, &e);
                    CHECK(m != NULL, "model: %s", e.msg);
                    scm_flow *fl = scm_flow_alloc(m);
                    int *dead_col = calloc((size_t)n, sizeof(int));
                    if (dead >= 0) { /* student 1 dead */
                        for (int l = 0; l < K; l++)
                            s.Q[1 * K + l] = s.Q[l * K + 1] = 0.0;
                        for (int t = 0; t < M; t++)
                            s.R[1 * M + t] = 0.0;
                        int p = 0;
                        for (int k = 0; k < K; k++)
                            for (int l = k; l < K; l++, p++)
                                dead_col[p] = k == 1 || l == 1;
                        for (int k = 0; k < K; k++)
                            for (int t = 0; t < M; t++, p++)
                                dead_col[p] = k == 1;
                    }
                    double *J = malloc(sizeof(double) * (size_t)n * (size_t)n);
                    CHECK(scm_flow_jacobian(fl, s.Q, s.R, J) == SCM_OK, "jacobian status");
                    double scale = maxabs(J, n * n);
                    double diff = jac_fd_diff(fl, K, M, s.Q, s.R, J, dead_col);
                    CHECK(diff <= 1e-7 * scale && scale > 1e-2,
                          "%s K=%d M=%d plain=%d dead=%d: J vs differences %.3g (scale %.3g)",
                          acts[a]->name, K, M, plain, dead, diff, scale);
                    /* the dead student's columns are zero */
                    double dz = 0.0;
                    for (int j = 0; j < n; j++)
                        if (dead_col[j])
                            for (int i = 0; i < n; i++)
                                dz = fmax(dz, fabs(J[i * n + j]));
                    CHECK(dz == 0.0, "dead columns not zero (%g)", dz);
                    /* against the Jacobian-vector product, column by column */
                    double dQ[25], dR[25], JQ[25], JR[25], u[64], uz[64], jv = 0.0;
                    for (int j = 0; j < n; j++) {
                        memset(uz, 0, sizeof uz);
                        uz[j] = 1.0;
                        unpack(K, M, uz, dQ, dR);
                        CHECK(scm_flow_jvp(fl, s.Q, s.R, dQ, dR, JQ, JR) == SCM_OK, "jvp");
                        pack(K, M, JQ, JR, u);
                        for (int i = 0; i < n; i++)
                            jv = fmax(jv, fabs(J[i * n + j] - u[i]));
                    }
                    CHECK(jv <= 1e-13 * scale, "%s: J vs Jv %.3g (scale %.3g)", acts[a]->name,
                          jv, scale);
                    /* the comparison's resolution: one entry off by 1e-6 of the scale */
                    int i0 = (int)gsl_rng_uniform_int(r, (unsigned long)n);
                    int j0 = (int)gsl_rng_uniform_int(r, (unsigned long)n);
                    while (dead_col[j0])
                        j0 = (j0 + 1) % n;
                    J[i0 * n + j0] += 1e-6 * scale;
                    CHECK(jac_fd_diff(fl, K, M, s.Q, s.R, J, dead_col) > 1e-7 * scale,
                          "a perturbed entry passes the comparison");
                    free(J);
                    free(dead_col);
                    scm_flow_free(fl);
                    scm_model_free(m);
                    free_state(&s);
                }
    /* two parallel students: not resolved in closed form; set_v: refused */
    double Q[4] = {1, 1, 1, 1}, R[2] = {0.3, 0.3}, J[25], T[1] = {1}, v[2] = {1, 2};
    scm_error e;
    scm_model *m = scm_model_alloc(2, 1, &scm_act_relu, T, NULL, NULL, &e);
    scm_flow *fl = scm_flow_alloc(m);
    CHECK(scm_flow_jacobian(fl, Q, R, J) == SCM_ESINGULAR,
          "parallel students: jacobian not SCM_ESINGULAR");
    double Q2[4] = {1, 0.2, 0.2, 1.3};
    scm_flow_set_v(fl, v);
    CHECK(scm_flow_jacobian(fl, Q2, R, J) == SCM_EINVAL, "set_v: jacobian not SCM_EINVAL");
    scm_flow_set_v(fl, NULL);
    CHECK(scm_flow_jacobian(fl, Q2, R, J) == SCM_OK, "jacobian after set_v(NULL)");
    scm_flow_free(fl);
    scm_model_free(m);
}

/* scm_flow_rhs_gv: (F_Q, F_R) and eps to the bit those of scm_flow_rhs, gv
 * those of scm_twolayer_grad_v (which evaluates the kernels again) to
 * 1e-14, at random states of every activation with a second layer other
 * than the model's; with a dead ReLU student gv_k = 0. */
static void test_rhs_gv(gsl_rng *r)
{
    const int sizes[][2] = {{1, 1}, {2, 3}, {4, 4}, {5, 2}};
    for (int a = 0; a < 3; a++)
        for (int z = 0; z < 4; z++) {
            const int K = sizes[z][0], M = sizes[z][1];
            state s = random_state(r, K, M, K + M + 3, 0);
            scm_model *m = scm_model_alloc(K, M, acts[a], s.T, s.v, s.vs, NULL);
            scm_flow *fl = scm_flow_alloc(m);
            double FQ[25], FR[25], GQ[25], GR[25], gv[5], gr[5], v[5], e1, e2;
            for (int k = 0; k < K; k++)
                v[k] = 0.385 - 0.61 * k;
            if (a == 0 && K > 2) { /* ReLU: student 1 dead */
                for (int l = 0; l < K; l++)
                    s.Q[K + l] = s.Q[l * K + 1] = 0.0;
                for (int n = 0; n < M; n++)
                    s.R[M + n] = 0.0;
            }
            scm_flow_set_v(fl, v);
            CHECK(scm_flow_rhs(fl, s.Q, s.R, FQ, FR, &e1) == SCM_OK, "rhs");
            CHECK(scm_flow_rhs_gv(fl, s.Q, s.R, GQ, GR, &e2, gv) == SCM_OK, "rhs_gv");
            CHECK(scm_twolayer_grad_v(m, s.Q, s.R, v, gr) == SCM_OK, "grad_v");
            CHECK(memcmp(FQ, GQ, sizeof(double) * K * K) == 0 &&
                      memcmp(FR, GR, sizeof(double) * K * M) == 0 && e1 == e2,
                  "%s K=%d M=%d: rhs_gv's flow differs from rhs", acts[a]->name, K, M);
            for (int k = 0; k < K; k++)
                CHECK_CLOSE(gv[k], gr[k], 1e-14, 1e-15, "gv vs scm_twolayer_grad_v");
            if (a == 0 && K > 2)
                CHECK(gv[1] == 0.0, "dead student: gv = %g", gv[1]);
            scm_flow_free(fl);
            scm_model_free(m);
            free_state(&s);
        }
}

/* x = V diag(1 / (1 + gamma max(mu, 0))) V^T b for the symmetric n x n
 * operator L (overwritten), by GSL's eigensolver: the clamped inverse that
 * scm_flow_precond_solve applies through S's eigenbasis instead.  Counts
 * the clamped eigenvalues into *neg. */
static void clamped_solve(double *L, int n, double gamma, const double *b, double *x, int *neg)
{
    gsl_matrix_view Lv = gsl_matrix_view_array(L, (size_t)n, (size_t)n);
    gsl_vector *mu = gsl_vector_alloc((size_t)n);
    gsl_matrix *V = gsl_matrix_alloc((size_t)n, (size_t)n);
    gsl_eigen_symmv_workspace *w = gsl_eigen_symmv_alloc((size_t)n);
    CHECK(gsl_eigen_symmv(&Lv.matrix, mu, V, w) == GSL_SUCCESS, "dense eigensolver");
    for (int i = 0; i < n; i++)
        x[i] = 0.0;
    for (int j = 0; j < n; j++) {
        double c = 0.0, m = gsl_vector_get(mu, (size_t)j);
        for (int i = 0; i < n; i++)
            c += gsl_matrix_get(V, (size_t)i, (size_t)j) * b[i];
        *neg += m < 0.0;
        c /= 1.0 + gamma * (m > 0.0 ? m : 0.0);
        for (int i = 0; i < n; i++)
            x[i] += c * gsl_matrix_get(V, (size_t)i, (size_t)j);
    }
    gsl_eigen_symmv_free(w);
    gsl_matrix_free(V);
    gsl_vector_free(mu);
}

static void test_precond(gsl_rng *r)
{
    const int K = 4, M = 3, KK = 16, KM = 12;
    int neg_total = 0;
    for (size_t a = 0; a < sizeof acts / sizeof acts[0]; a++)
        for (int kind = 0; kind < 3; kind++) {
            state s = random_state(r, K, M, K + M + 4, kind == 0);
            if (kind == 2) /* second-layer signs mixed: S indefinite */
                s.v[1] = -s.v[1], s.v[3] = -s.v[3];
            scm_error e;
            scm_model *m = scm_model_alloc(K, M, acts[a], s.T, s.v, s.vs, &e);
            CHECK(m != NULL, "model: %s", e.msg);
            scm_flow *fl = scm_flow_alloc(m);
            double rQ[16], rR[12], zQ[16], zR[12], A[16], B[12], S[16];
            CHECK(scm_flow_precond_solve(fl, 1.0, rQ, rR, zQ, zR) == SCM_EINVAL,
                  "a solve without a set-up is refused");
            CHECK(scm_flow_precond_setup(fl, s.Q, s.R) == SCM_OK, "set-up");
            CHECK(scm_flow_grad(fl, s.Q, s.R, NULL, A, B) == SCM_OK, "grad");
            for (int k = 0; k < K; k++)
                for (int l = 0; l < K; l++)
                    S[k * K + l] = A[k * K + l] + A[l * K + k];
            for (int k = 0; k < K; k++)
                for (int l = k; l < K; l++)
                    rQ[k * K + l] = rQ[l * K + k] = gsl_ran_gaussian(r, 1.0);
            for (int i = 0; i < KM; i++)
                rR[i] = gsl_ran_gaussian(r, 1.0);
            CHECK(scm_flow_precond_solve(fl, -1.0, rQ, rR, zQ, zR) == SCM_EINVAL,
                  "gamma < 0 is refused");
            const double gammas[3] = {0.0, 0.3, 7.0};
            for (int g = 0; g < 3; g++) {
                const double gamma = gammas[g];
                CHECK(scm_flow_precond_solve(fl, gamma, rQ, rR, zQ, zR) == SCM_OK, "solve");
                /* X -> S X + X S on row-major vec(X), and X -> S X on K x M */
                double LQ[16 * 16] = {0}, LR[12 * 12] = {0}, xQ[16], xR[12];
                for (int k = 0; k < K; k++)
                    for (int l = 0; l < K; l++)
                        for (int j = 0; j < K; j++) {
                            LQ[(k * K + l) * KK + j * K + l] += S[k * K + j];
                            LQ[(k * K + l) * KK + k * K + j] += S[j * K + l];
                        }
                for (int k = 0; k < K; k++)
                    for (int n = 0; n < M; n++)
                        for (int j = 0; j < K; j++)
                            LR[(k * M + n) * KM + j * M + n] = S[k * K + j];
                int neg = 0;
                clamped_solve(LQ, KK, gamma, rQ, xQ, &neg);
                clamped_solve(LR, KM, gamma, rR, xR, &neg);
                if (gamma > 0.0)
                    neg_total += neg;
                double dq = 0.0, dr = 0.0, nz = 0.0, nr = 0.0;
                for (int i = 0; i < KK; i++) {
                    dq = fmax(dq, fabs(zQ[i] - xQ[i]));
                    nz += zQ[i] * zQ[i], nr += rQ[i] * rQ[i];
                }
                for (int i = 0; i < KM; i++) {
                    dr = fmax(dr, fabs(zR[i] - xR[i]));
                    nz += zR[i] * zR[i], nr += rR[i] * rR[i];
                }
                CHECK(dq < 1e-12 && dr < 1e-12, "%s kind %d gamma %g: Q off by %g, R by %g",
                      acts[a]->name, kind, gamma, dq, dr);
                CHECK(nz <= nr * (1.0 + 1e-12), "the inverse does not damp: |z|^2 %g > |r|^2 %g",
                      nz, nr);
                /* z may alias r */
                double aQ[16], aR[12];
                memcpy(aQ, rQ, sizeof aQ);
                memcpy(aR, rR, sizeof aR);
                CHECK(scm_flow_precond_solve(fl, gamma, aQ, aR, aQ, aR) == SCM_OK &&
                          memcmp(aQ, zQ, sizeof aQ) == 0 && memcmp(aR, zR, sizeof aR) == 0,
                      "aliased solve differs");
            }
            scm_flow_free(fl);
            scm_model_free(m);
            free_state(&s);
        }
    CHECK(neg_total > 0, "no case with a negative eigenvalue (the clamp untested)");
}

int main(void)
{
    gsl_set_error_handler_off();
    gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(r, 20261202);
    test_matrix_vs_i3(r);
    test_global_minimum();
    test_errors();
    test_dead_student(r);
    test_cs_clamp();
    test_jvp(r);
    test_jvp_copies(r);
    test_jvp_reuse(r);
    test_jacobian(r);
    test_rhs_gv(r);
    test_precond(r);
    test_loss_mc(r);
    gsl_rng_free(r);
    return TEST_SUMMARY();
}
