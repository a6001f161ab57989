/* test_fixedpoint.c: the Newton enumeration, checked against computations
 * of another kind:
 *  - the published K = M = 7, k1 = 1 point (eps ~ 0.02320, overlap ~ -0.633)
 *    and, to 12 digits, a BFGS minimisation of the population loss in
 *    weight space (gradient (1/d)(S W + B W*), weights realised here by a
 *    Cholesky factor of the Gram matrix) started near it;
 *  - every solution: full-flow residual, invariance, a Gram matrix that
 *    model.c's Cholesky check accepts, and a CVODE run from a tiny
 *    perturbation whose loss agrees with the fixed point's;
 *  - continuation in M (real group sizes) against a fresh enumeration at
 *    the end point;
 *  - the global minimum k1 = 0 (eps = 0 exactly, Q = R = I);
 *  - the flow from random initial conditions (small K) ends at fixed
 *    points whose losses are among the enumerated ones;
 *  - a deferred polish (scm_fp_point_polish) against the polish inside the
 *    enumeration, and the polish from a perturbed point back to it;
 *  - the polish with the closed-form Jacobian against the one with central
 *    differences, from the same perturbed points;
 *  - the k1 sweep (fpsweep.h): every solution's full-flow residual, and
 *    the k1 = 1 reference family reached at K = M = 7;
 *  - the continuation in M (scm_fp_sweep_grow): the reference point, the
 *    full-flow residual of every solution, the plateau of every family
 *    that random starts find;
 *  - deflated Newton against plain Newton with the same starts: no root of
 *    the plain enumeration lost, every added root a root of the full flow
 *    (its residual computed without the ansatz) and distinct from the
 *    others, and more distinct roots for the same number of starts. */
#include <gsl/gsl_errno.h>
#include <gsl/gsl_blas.h>
#include <gsl/gsl_linalg.h>
#include <gsl/gsl_multimin.h>
#include <gsl/gsl_rng.h>
#include <stdlib.h>
#include <string.h>

#include "scm/fixedpoint.h"
#include "scm/fpsweep.h"
#include "scm/init.h"
#include "scm/traj.h"
#include "core/linalg.h"
#include "testutil.h"

static scm_ansatz *load_builtin(const char *name)
{
    for (int i = 0; i < scm_ansatz_builtin_count(); i++) {
        const char *t = scm_ansatz_builtin_text(i, NULL);
        scm_error e;
        scm_ansatz *a = scm_ansatz_parse(t, strlen(t), "builtin", &e);
        if (a && strcmp(scm_ansatz_name(a), name) == 0)
            return a;
        scm_ansatz_free(a);
    }
    return NULL;
}

/* W (K x d) and W* (M x d) with W W^T / d = Q etc., from a lower Cholesky
 * factor L of G = [[T, R^T], [R, Q]] (teachers first), d = K + M:
 * row i of [W*; W] is sqrt(d) L_i. */
static int realise(int K, int M, const double *Q, const double *R, double *W, double *Ws)
{
    int n = K + M;
    double *L = calloc((size_t)(n * n), sizeof *L);
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++)
            L[i * n + j] = i < M && j < M ? (i == j)
                           : i < M       ? R[(j - M) * M + i]
                           : j < M       ? R[(i - M) * M + j]
                                         : Q[(i - M) * K + (j - M)];
    for (int i = 0; i < n; i++) { /* semidefinite-tolerant Cholesky */
        for (int j = 0; j <= i; j++) {
            double s = L[i * n + j];
            for (int k = 0; k < j; k++)
                s -= L[i * n + k] * L[j * n + k];
            if (i == j)
                L[i * n + i] = s > 0.0 ? sqrt(s) : 0.0;
            else
                L[i * n + j] = L[j * n + j] > 1e-12 ? s / L[j * n + j] : 0.0;
        }
        for (int j = i + 1; j < n; j++)
            L[i * n + j] = 0.0;
    }
    double sd = sqrt((double)n);
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) {
            double v = sd * L[i * n + j];
            if (i < M)
                Ws[i * n + j] = v;
            else
                W[(i - M) * n + j] = v;
        }
    free(L);
    return n;
}

typedef struct {
    scm_flow *fl;
    int K, M, d;
    const double *Ws;
    double *Q, *R, *A, *B;
} wparams;

static void overlaps(wparams *p, const double *W)
{
    int K = p->K, M = p->M, d = p->d;
    for (int k = 0; k < K; k++) {
        for (int l = 0; l < K; l++) {
            double s = 0.0;
            for (int i = 0; i < d; i++)
                s += W[k * d + i] * W[l * d + i];
            p->Q[k * K + l] = s / d;
        }
        for (int m = 0; m < M; m++) {
            double s = 0.0;
            for (int i = 0; i < d; i++)
                s += W[k * d + i] * p->Ws[m * d + i];
            p->R[k * M + m] = s / d;
        }
    }
}

static double w_f(const gsl_vector *w, void *vp)
{
    wparams *p = vp;
    overlaps(p, w->data);
    double e;
    if (scm_flow_loss(p->fl, p->Q, p->R, &e))
        return GSL_NAN;
    return e;
}

static void w_df(const gsl_vector *w, void *vp, gsl_vector *g)
{
    wparams *p = vp;
    int K = p->K, M = p->M, d = p->d;
    overlaps(p, w->data);
    if (scm_flow_grad(p->fl, p->Q, p->R, NULL, p->A, p->B)) {
        gsl_vector_set_all(g, GSL_NAN);
        return;
    }
    for (int k = 0; k < K; k++)
        for (int i = 0; i < d; i++) {
            double s = 0.0;
            for (int l = 0; l < K; l++)
                s += (p->A[k * K + l] + p->A[l * K + k]) * w->data[l * d + i];
            for (int m = 0; m < M; m++)
                s += p->B[k * M + m] * p->Ws[m * d + i];
            g->data[k * d + i] = s / d;
        }
}

static void w_fdf(const gsl_vector *w, void *vp, double *f, gsl_vector *g)
{
    *f = w_f(w, vp);
    w_df(w, vp, g);
}

/* The published point and the weight-space cross-check. */
static void test_reference_m7(void)
{
    scm_ansatz *a = load_builtin("k1");
    CHECK(a != NULL, "no k1 ansatz");
    if (!a)
        return;
    int K = 7, M = 7;
    scm_error e;
    scm_ansatz_inst *in = scm_ansatz_instantiate(a, K, M, 1, &e);
    scm_fp_opts o;
    scm_fp_opts_default(&o);
    scm_fp_set s;
    scm_fp_set_init(&s);
    CHECK(scm_fp_enumerate(a, in, &scm_act_relu, &o, NULL, 0, &s, &e) == SCM_OK, "%s", e.msg);
    int best = -1, ianti = scm_ansatz_inst_find(in, "R[anti,tanti].diag");
    for (int p = 0; p < s.n; p++) {
        scm_fp_structure st;
        scm_fp_classify(in, s.pt[p].x, &st);
        if (st.n_anti == 1 && st.n_aligned == 6 && (best < 0 || s.pt[p].eps < s.pt[best].eps))
            best = p;
    }
    CHECK(best >= 0, "no k1 = 1 solution with one anti-aligned student");
    if (best >= 0) {
        scm_fp_point *p = &s.pt[best];
        /* the published values, to their quoted digits */
        CHECK(fabs(p->eps - 0.02320) < 5e-6, "eps = %.10g, published ~ 0.02320", p->eps);
        CHECK(fabs(p->x[ianti] - (-0.633)) < 5e-4, "overlap %.6g, published ~ -0.633",
              p->x[ianti]);
        CHECK(p->res_block < 1e-12 && p->res_full < 1e-12 && p->res_polish < 1e-12,
              "residuals %g %g %g", p->res_block, p->res_full, p->res_polish);
        CHECK(p->inv_dev < 1e-14 && p->block_vs_full < 1e-13, "invariance %g, block/full %g",
              p->inv_dev, p->block_vs_full);
        /* weight space: perturb, minimise with BFGS, compare */
        int n = K + M, dim = K * n;
        double *W = malloc(sizeof(double) * (size_t)(K * n)), *Ws = malloc(sizeof(double) * (size_t)(M * n));
        realise(K, M, p->Q, p->R, W, Ws);
        scm_model *m = scm_model_alloc(K, M, &scm_act_relu, NULL, NULL, NULL, &e);
        wparams wp = {scm_flow_alloc(m), K, M, n, Ws, malloc(sizeof(double) * 49),
                      malloc(sizeof(double) * 49), malloc(sizeof(double) * 49),
                      malloc(sizeof(double) * 49)};
        gsl_vector *w = gsl_vector_alloc((size_t)dim);
        gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);
        for (int i = 0; i < dim; i++)
            w->data[i] = W[i] + 1e-3 * (gsl_rng_uniform(r) - 0.5);
        double e_start = w_f(w, &wp);
        CHECK(e_start > p->eps, "perturbation raises the loss");
        gsl_multimin_function_fdf fn = {w_f, w_df, w_fdf, (size_t)dim, &wp};
        gsl_multimin_fdfminimizer *mn =
            gsl_multimin_fdfminimizer_alloc(gsl_multimin_fdfminimizer_vector_bfgs2, (size_t)dim);
        gsl_multimin_fdfminimizer_set(mn, &fn, w, 1e-3, 0.1);
        /* BFGS stalls in its line search well before round-off; restart it
         * from its best point until the gradient is below 1e-13 */
        int it = 0, gst = GSL_CONTINUE;
        for (int restart = 0; restart < 50 && gst != GSL_SUCCESS; restart++) {
            gsl_vector_memcpy(w, mn->x);
            gsl_multimin_fdfminimizer_set(mn, &fn, w, 1e-6, 0.1);
            do {
                gst = gsl_multimin_fdfminimizer_iterate(mn);
                if (gst)
                    break;
                gst = gsl_multimin_test_gradient(mn->gradient, 1e-13);
            } while (gst == GSL_CONTINUE && ++it < 20000);
        }
        /* BFGS stalls once loss differences reach round-off (|grad| ~ 1e-8);
         * finish with plain gradient descent, which needs gradients only */
        gsl_vector_memcpy(w, mn->x);
        gsl_vector *g = gsl_vector_alloc((size_t)dim);
        double eta = 4.0, gn = INFINITY;
        int gd = 0;
        for (; gd < 400000; gd++) {
            w_df(w, &wp, g);
            double gnew = gsl_blas_dnrm2(g);
            if (gnew < 1e-13)
                break;
            if (gnew > 2.0 * gn)
                eta *= 0.5;
            gn = gnew;
            gsl_blas_daxpy(-eta, g, w);
        }
        w_df(w, &wp, g);
        CHECK(gsl_blas_dnrm2(g) < 1e-13, "weight-space descent: |grad| = %g after %d steps",
              gsl_blas_dnrm2(g), gd);
        gsl_vector_free(g);
        double e_w = w_f(w, &wp);
        CHECK_CLOSE(e_w, p->eps, 1e-12, 0.0, "weight-space minimum vs fixed point loss");
        overlaps(&wp, w->data);
        double dr = 0.0;
        for (int i = 0; i < K * M; i++)
            dr = fmax(dr, fabs(wp.R[i] - p->R[i]));
        CHECK(dr < 1e-5, "weight-space minimum's R differs by %g", dr);
        printf("M = 7, k1 = 1: eps = %.13g (fixed point), %.13g (BFGS + GD in W, %d BFGS iterations), "
               "R[anti,tanti] = %.10g\n",
               p->eps, e_w, it, p->x[ianti]);
        (void)gst;
        gsl_multimin_fdfminimizer_free(mn);
        gsl_vector_free(w);
        gsl_rng_free(r);
        free(wp.Q);
        free(wp.R);
        free(wp.A);
        free(wp.B);
        scm_flow_free(wp.fl);
        scm_model_free(m);
        free(W);
        free(Ws);
    }
    scm_fp_set_free(&s);
    scm_ansatz_inst_free(in);
    scm_ansatz_free(a);
}

/* All families at K = M = 5: residuals, PSD, global minimum, CVODE. */
static void test_all_families(int K, int M, const char *name, double *losses, int *nloss)
{
    scm_ansatz *a = load_builtin(name);
    CHECK(a != NULL, "no %s ansatz", name);
    if (!a)
        return;
    int lo, hi;
    CHECK(scm_ansatz_applies(a, K, M, &lo, &hi) == 1, "%s applies at %d, %d", name, K, M);
    scm_model *m = scm_model_alloc(K, M, &scm_act_relu, NULL, NULL, NULL, NULL);
    scm_fp_opts o;
    scm_fp_opts_default(&o);
    for (int k1 = lo; k1 <= hi; k1++) {
        scm_error e;
        scm_ansatz_inst *in = scm_ansatz_instantiate(a, K, M, k1, &e);
        scm_fp_set s;
        scm_fp_set_init(&s);
        CHECK(scm_fp_enumerate(a, in, &scm_act_relu, &o, NULL, 0, &s, &e) == SCM_OK, "%s",
              e.msg);
        CHECK(s.n > 0, "%s k1 = %d: no solution", name, k1);
        int found_zero = 0;
        for (int p = 0; p < s.n; p++) {
            scm_fp_point *pt = &s.pt[p];
            CHECK(pt->res_block < 1e-12 && pt->res_full < 1e-12 && pt->res_polish < 1e-12,
                  "%s k1=%d eps %.6g: residuals %g %g %g", name, k1, pt->eps, pt->res_block,
                  pt->res_full, pt->res_polish);
            CHECK(pt->inv_dev < 1e-13, "invariance defect %g", pt->inv_dev);
            CHECK(pt->block_vs_full < 1e-13, "block vs full %g", pt->block_vs_full);
            CHECK_CLOSE(pt->eps_full, pt->eps, 1e-10, 1e-13, "full vs block loss");
            CHECK(scm_model_check_state(m, pt->Q, pt->R, 1e-8, &e) == SCM_OK,
                  "model.c rejects a solution's Gram matrix: %s", e.msg);
            for (int q = 0; q < p; q++) {
                double d = 0.0;
                for (int c = 0; c < pt->nsc; c++)
                    d = fmax(d, fabs(pt->x[c] - s.pt[q].x[c]));
                CHECK(d >= o.dedup_tol, "duplicate solutions %d, %d", p, q);
            }
            if (fabs(pt->eps) < 1e-14)
                found_zero = 1;
            if (*nloss < 4096)
                losses[(*nloss)++] = pt->eps;
        }
        if (k1 == 0 && strcmp(name, "k1") == 0)
            CHECK(found_zero, "k1 = 0 must contain the global minimum eps = 0");
        /* the lowest solution: CVODE from a tiny perturbation */
        int best = 0;
        for (int p = 1; p < s.n; p++)
            if (s.pt[p].eps < s.pt[best].eps)
                best = p;
        if (s.n > 0 && k1 == lo + 1) {
            scm_fp_point *pt = &s.pt[best];
            double *Q = malloc(sizeof(double) * (size_t)(K * K + K * M));
            double *R = Q + K * K;
            /* perturb in weight space, where the fixed point has zero
             * gradient: the loss changes at second order only */
            int d = K + M;
            double *W = malloc(sizeof(double) * (size_t)(K * d));
            double *Ws = malloc(sizeof(double) * (size_t)(M * d));
            realise(K, M, pt->Q, pt->R, W, Ws);
            for (int i = 0; i < K * d; i++)
                W[i] += 1e-6 * ((i * 7919) % 13 - 6);
            wparams wp = {NULL, K, M, d, Ws, Q, R, NULL, NULL};
            overlaps(&wp, W);
            free(W);
            free(Ws);
            scm_traj_opts to;
            scm_traj_opts_default(&to);
            to.t_max = 50.0;
            to.record = 1;
            to.grad_stop = 0.0;
            scm_traj_result res;
            CHECK(scm_traj_run(m, &scm_rule_gd, Q, R, &to, &res, &e) == SCM_OK, "%s", e.msg);
            CHECK(res.stop != SCM_STOP_FAILED, "CVODE failed: %s", res.err.msg);
            CHECK_CLOSE(res.out_eps[0], pt->eps, 0.0, 1e-9, "loss at the perturbed start (second order)");
            CHECK(res.eps <= pt->eps + 1e-9, "the flow raised the loss: %.12g > %.12g", res.eps,
                  pt->eps);
            scm_traj_result_free(&res);
            free(Q);
        }
        scm_fp_set_free(&s);
        scm_ansatz_inst_free(in);
    }
    scm_model_free(m);
    scm_ansatz_free(a);
}

/* Continuation from M = 7 to 12 vs a fresh enumeration at M = 12. */
static void test_continuation(void)
{
    scm_ansatz *a = load_builtin("k1");
    if (!a)
        return;
    scm_error e;
    scm_fp_opts o;
    scm_fp_opts_default(&o);
    o.polish_max_K = 0;
    double eps_at[2] = {NAN, NAN};
    double *x7 = NULL;
    int nsc = 0;
    for (int w = 0; w < 2; w++) {
        int M = w ? 12 : 7;
        scm_ansatz_inst *in = scm_ansatz_instantiate(a, M, M, 1, &e);
        scm_fp_set s;
        scm_fp_set_init(&s);
        scm_fp_enumerate(a, in, &scm_act_relu, &o, NULL, 0, &s, &e);
        int best = -1;
        for (int p = 0; p < s.n; p++) {
            scm_fp_structure st;
            scm_fp_classify(in, s.pt[p].x, &st);
            if (st.n_anti == 1 && st.n_aligned == M - 1 &&
                (best < 0 || s.pt[p].eps < s.pt[best].eps))
                best = p;
        }
        CHECK(best >= 0, "no k1 = 1 family at M = %d", M);
        if (best >= 0) {
            eps_at[w] = s.pt[best].eps;
            if (!w) {
                nsc = s.pt[best].nsc;
                x7 = malloc(sizeof(double) * (size_t)nsc);
                memcpy(x7, s.pt[best].x, sizeof(double) * (size_t)nsc);
            }
        }
        scm_fp_set_free(&s);
        scm_ansatz_inst_free(in);
    }
    if (x7) {
        scm_fp_branch b;
        CHECK(scm_fp_continue(a, 0.0, 1.0, 7.0, x7, 12.0, 0.5, &scm_act_relu, &o, &b, &e) ==
                  SCM_OK,
              "%s", e.msg);
        CHECK(!b.ended_early, "branch ended at M = %g: %s", b.M_last, b.why);
        CHECK(b.n > 0 && b.M[b.n - 1] == 12.0, "branch end");
        if (b.n > 0)
            CHECK_CLOSE(b.eps[b.n - 1], eps_at[1], 1e-12, 0.0, "continued vs enumerated at M=12");
        for (int i = 1; i < b.n; i++)
            CHECK(b.res[i] < 1e-11, "residual %g at M = %g", b.res[i], b.M[i]);
        scm_fp_branch_free(&b);
        free(x7);
    }
    scm_ansatz_free(a);
}

/* Bad options and non-convergence are reported, not aborted on. */
static void test_errors(void)
{
    scm_fp_opts o;
    scm_fp_opts_default(&o);
    o.max_iter = 0;
    scm_error e;
    CHECK(scm_fp_opts_check(&o, &e) == SCM_EINVAL && strstr(e.msg, "max_iter"), "max_iter");
    scm_ansatz *a = load_builtin("k1");
    if (!a)
        return;
    scm_ansatz_inst *in = scm_ansatz_instantiate(a, 5, 5, 2, &e);
    scm_blockflow *bf = scm_blockflow_alloc(in, &scm_act_relu);
    scm_fp_opts_default(&o);
    o.max_iter = 1;
    double x[32] = {0}, res;
    for (int c = 0; c < scm_ansatz_inst_nscalars(in); c++)
        x[c] = 0.3 + 0.01 * c;
    scm_blockflow_set_q_from_r(bf, x, 0.5);
    scm_status st = scm_fp_solve(bf, x, &o, &res);
    CHECK(st == SCM_ENOCONV || st == SCM_ESINGULAR, "one iteration from afar: %s",
          scm_status_str(st));
    scm_blockflow_free(bf);
    scm_ansatz_inst_free(in);
    scm_ansatz_free(a);
}

/* The flow from random initial conditions stops at enumerated losses. */
static void test_random_flow(int K, int M, const double *losses, int nloss, int runs)
{
    scm_model *m = scm_model_alloc(K, M, &scm_act_relu, NULL, NULL, NULL, NULL);
    double *Q = malloc(sizeof(double) * (size_t)(K * K + K * M)), *R = Q + K * K;
    scm_traj_opts to;
    scm_traj_opts_default(&to);
    to.record = 0;
    to.t_max = 1e7;
    int matched = 0, global = 0;
    for (int s = 1; s <= runs; s++) {
        scm_error e;
        scm_init_random(m, 1000, 1.0, (unsigned long)s, Q, R, &e);
        scm_traj_result res;
        scm_traj_run(m, &scm_rule_gd, Q, R, &to, &res, &e);
        if (res.stop == SCM_STOP_EPS || res.eps < 1e-9) {
            global++;
        } else if (res.stop == SCM_STOP_FIXED_POINT) {
            int ok = 0;
            for (int i = 0; i < nloss && !ok; i++)
                ok = fabs(losses[i] - res.eps) < 1e-8;
            CHECK(ok, "K=%d M=%d seed %d: the flow stops at eps %.12g, not enumerated", K, M, s,
                  res.eps);
            matched += ok;
        }
        scm_traj_result_free(&res);
    }
    printf("K = %d, M = %d: %d runs, %d global minima, %d at enumerated spurious points\n", K,
           M, runs, global, matched);
    free(Q);
    scm_model_free(m);
}

/* Deferred polish = polish inside the enumeration; a perturbed point
 * (off the roundoff floor) is pulled back to the same fixed point. */
static void test_deferred_polish(void)
{
    scm_ansatz *a = load_builtin("k1");
    scm_error e;
    scm_ansatz_inst *in = scm_ansatz_instantiate(a, 6, 6, 1, &e);
    scm_fp_opts o;
    scm_fp_opts_default(&o);
    o.n_random = 30;
    scm_fp_set s0, s1;
    scm_fp_set_init(&s0);
    scm_fp_set_init(&s1);
    CHECK(scm_fp_enumerate(a, in, &scm_act_relu, &o, NULL, 0, &s0, &e) == SCM_OK, "%s", e.msg);
    o.polish_defer = 1;
    CHECK(scm_fp_enumerate(a, in, &scm_act_relu, &o, NULL, 0, &s1, &e) == SCM_OK, "%s", e.msg);
    CHECK(s0.n == s1.n && s0.n > 0, "%d vs %d solutions", s0.n, s1.n);
    int n_back = 0;
    for (int p = 0; p < s0.n && p < s1.n; p++) {
        CHECK(!s1.pt[p].polished, "deferred: point %d polished", p);
        scm_fp_opts off = o;
        off.polish_max_K = 0;
        CHECK(scm_fp_point_polish(&s1.pt[p], &scm_act_relu, &off, &e) == SCM_OK &&
                  !s1.pt[p].polished,
              "polished with polish_max_K = 0");
        CHECK(scm_fp_point_polish(&s1.pt[p], &scm_act_relu, &o, &e) == SCM_OK, "%s", e.msg);
        CHECK(s1.pt[p].polished && s0.pt[p].polished, "point %d not polished", p);
        CHECK(s1.pt[p].res_polish == s0.pt[p].res_polish, "residual %g vs %g",
              s1.pt[p].res_polish, s0.pt[p].res_polish);
        CHECK_CLOSE(s1.pt[p].eps_polish, s0.pt[p].eps_polish, 0.0, 0.0, "polished loss");
        /* perturb by 1e-7 and polish again: back below the target, same loss */
        scm_fp_point *pt = &s1.pt[p];
        for (int i = 0; i < 36; i++)
            pt->R[i] += 1e-7 * (double)((i * 7) % 5 - 2);
        pt->polished = 0;
        CHECK(scm_fp_point_polish(pt, &scm_act_relu, &o, &e) == SCM_OK, "%s", e.msg);
        if (pt->polish_status == SCM_OK) {
            CHECK(pt->res_polish < 1e-12, "re-polished residual %g", pt->res_polish);
            CHECK_CLOSE(pt->eps_polish, s0.pt[p].eps, 1e-9, 1e-12, "re-polished loss");
            CHECK(pt->polish_shift > 1e-8, "the polish moved by %g only", pt->polish_shift);
            n_back++;
        }
    }
    CHECK(n_back >= s0.n / 2, "only %d of %d perturbed points polished back", n_back, s0.n);
    scm_fp_set_free(&s0);
    scm_fp_set_free(&s1);
    scm_ansatz_inst_free(in);
    scm_ansatz_free(a);
}

/* The minimum-norm least-squares solution by GSL's complete orthogonal
 * decomposition (the dense method the polish used before LSQR). */
static void cod_lssolve(const double *A, long m, long n, const double *b, double *x)
{
    gsl_matrix *T = gsl_matrix_alloc((size_t)m, (size_t)n);
    gsl_vector *tq = gsl_vector_alloc((size_t)(m < n ? m : n));
    gsl_vector *tz = gsl_vector_alloc((size_t)(m < n ? m : n));
    gsl_vector *work = gsl_vector_alloc((size_t)n), *res = gsl_vector_alloc((size_t)m);
    gsl_permutation *perm = gsl_permutation_alloc((size_t)n);
    memcpy(T->data, A, sizeof(double) * (size_t)(m * n));
    gsl_vector_const_view bv = gsl_vector_const_view_array(b, (size_t)m);
    gsl_vector_view xv = gsl_vector_view_array(x, (size_t)n);
    size_t rank = 0;
    CHECK(gsl_linalg_COD_decomp_e(T, tq, tz, perm, 1e-10, &rank, work) == GSL_SUCCESS &&
              gsl_linalg_COD_lssolve(T, tq, tz, perm, rank, &bv.vector, &xv.vector,
                                     res) == GSL_SUCCESS,
          "COD");
    gsl_matrix_free(T);
    gsl_vector_free(tq);
    gsl_vector_free(tz);
    gsl_vector_free(work);
    gsl_vector_free(res);
    gsl_permutation_free(perm);
}

/* scm_linalg_lsqr (the polish's Newton step) against the dense COD on
 * sparse systems: full rank, rank deficient and consistent (the minimum
 * norm solution, not just any solution), and inconsistent (the
 * least-squares solution); an iteration cap is reported as SCM_ENOCONV. */
static void test_lsqr(void)
{
    gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(r, 11);
    enum { M = 60, N = 40 };
    static double A[M * N], B[M * N], b[M], x[N], y[N], x0[N];
    for (int kind = 0; kind < 3; kind++) {
        long m = kind == 2 ? M : N, n = N;
        memset(A, 0, sizeof A);
        if (kind == 1) { /* rank 12: A = U V with sparse U, V */
            static double U[N * 12], V[12 * N];
            for (int i = 0; i < N * 12; i++)
                U[i] = gsl_rng_uniform(r) < 0.3 ? gsl_rng_uniform(r) - 0.5 : 0.0;
            for (int i = 0; i < 12 * N; i++)
                V[i] = gsl_rng_uniform(r) < 0.3 ? gsl_rng_uniform(r) - 0.5 : 0.0;
            for (long i = 0; i < m; i++)
                for (long j = 0; j < n; j++)
                    for (int k = 0; k < 12; k++)
                        A[i * n + j] += U[i * 12 + k] * V[k * N + j];
        } else {
            for (long i = 0; i < m; i++)
                for (long j = 0; j < n; j++)
                    A[i * n + j] = (i == j ? 2.0 : 0.0) +
                                   (gsl_rng_uniform(r) < 0.15 ? gsl_rng_uniform(r) - 0.5 : 0.0);
        }
        if (kind == 1) { /* consistent: b in the range */
            for (long j = 0; j < n; j++)
                x0[j] = gsl_rng_uniform(r) - 0.5;
            for (long i = 0; i < m; i++) {
                b[i] = 0.0;
                for (long j = 0; j < n; j++)
                    b[i] += A[i * n + j] * x0[j];
            }
        } else {
            for (long i = 0; i < m; i++)
                b[i] = gsl_rng_uniform(r) - 0.5;
        }
        scm_csr S;
        CHECK(scm_csr_from_dense(A, m, n, &S) == SCM_OK, "csr");
        memcpy(B, A, sizeof B);
        long it = 0;
        CHECK(scm_linalg_lsqr(&S, b, x, 1e-14, 20 * n, &it) == SCM_OK, "kind %d: LSQR: %ld", kind,
              it);
        cod_lssolve(B, m, n, b, y);
        double d = 0.0, ny = 0.0;
        for (long j = 0; j < n; j++) {
            d = fmax(d, fabs(x[j] - y[j]));
            ny = fmax(ny, fabs(y[j]));
        }
        CHECK(d <= 1e-9 * ny, "kind %d: LSQR vs COD %g (|x| %g, %ld iterations)", kind, d, ny, it);
        if (kind == 1) { /* the minimum norm: smaller than the x0 that made b */
            double nx = 0.0, n0 = 0.0;
            for (long j = 0; j < n; j++)
                nx += x[j] * x[j], n0 += x0[j] * x0[j];
            CHECK(nx < n0 * (1.0 - 1e-3), "kind 1: |x|^2 %g vs %g", nx, n0);
        }
        CHECK(scm_linalg_lsqr(&S, b, x, 1e-14, 2, &it) == SCM_ENOCONV && it == 2,
              "kind %d: cap of 2 iterations", kind);
        printf("lsqr kind %d (%ld x %ld, nnz %ld): max |x - x_COD| %.2g\n", kind, m, n, S.nnz, d);
        scm_csr_free(&S);
    }
    gsl_rng_free(r);
}

/* The polish with the closed-form Jacobian (scm_fp_polish) against the
 * central-difference one (scm_fp_polish_fd) from the same perturbed points
 * (relu and erf, K = M = 6): where the differences converge the closed
 * form converges to the same fixed point (loss to 1e-13, state to 1e-9);
 * it may converge where they do not (counted and printed). */
static void test_polish_jacobians(void)
{
    const scm_activation *acts[2] = {&scm_act_relu, &scm_act_erf};
    scm_ansatz *a = load_builtin("k1");
    for (int ia = 0; ia < 2; ia++) {
        scm_error e;
        scm_ansatz_inst *in = scm_ansatz_instantiate(a, 6, 6, 1, &e);
        scm_fp_opts o;
        scm_fp_opts_default(&o);
        o.n_random = 30;
        o.polish_defer = 1;
        scm_fp_set s;
        scm_fp_set_init(&s);
        CHECK(scm_fp_enumerate(a, in, acts[ia], &o, NULL, 0, &s, &e) == SCM_OK, "%s", e.msg);
        scm_model *m = scm_model_alloc(6, 6, acts[ia], NULL, NULL, NULL, &e);
        scm_flow *fl = scm_flow_alloc(m);
        int n_ok = 0, n_only = 0;
        for (int p = 0; p < s.n; p++) {
            double Qa[36], Ra[36], Qf[36], Rf[36], ra, rf, ea, ef;
            memcpy(Qa, s.pt[p].Q, sizeof Qa);
            memcpy(Ra, s.pt[p].R, sizeof Ra);
            for (int i = 0; i < 36; i++)
                Ra[i] += 1e-7 * (double)((i * 7) % 5 - 2);
            memcpy(Qf, Qa, sizeof Qa);
            memcpy(Rf, Ra, sizeof Ra);
            scm_status sa = scm_fp_polish(fl, Qa, Ra, 6, 1e-14, &ra, &e);
            scm_status sf = scm_fp_polish_fd(fl, Qf, Rf, 6, 1e-14, &rf, &e);
            /* differences fail where a step of 1e-6 leaves the domain (erf's
             * global minimum, R = Q = I, is on the Cauchy-Schwarz bound) or
             * stall on their truncation error: the closed form must do at
             * least as well */
            CHECK(sa == SCM_OK || sf != SCM_OK,
                  "%s eps %.10g: status %d (closed form) vs %d (differences)", acts[ia]->name,
                  s.pt[p].eps, sa, sf);
            if (sa == SCM_OK && sf != SCM_OK)
                n_only++;
            if (sa || sf)
                continue;
            n_ok++;
            CHECK(scm_flow_loss(fl, Qa, Ra, &ea) == SCM_OK &&
                      scm_flow_loss(fl, Qf, Rf, &ef) == SCM_OK,
                  "loss");
            CHECK(fabs(ea - ef) <= 1e-13, "%s: polished loss %.15g vs %.15g", acts[ia]->name, ea,
                  ef);
            double d = 0.0;
            for (int i = 0; i < 36; i++)
                d = fmax(d, fmax(fabs(Qa[i] - Qf[i]), fabs(Ra[i] - Rf[i])));
            CHECK(d <= 1e-9, "%s eps %.10g: polished states differ by %g", acts[ia]->name,
                  ea, d);
            CHECK(ra < 1e-14 && rf < 1e-14, "residuals %g, %g", ra, rf);
        }
        CHECK(n_ok >= s.n / 2 && n_ok > 0, "%s: only %d of %d points polished", acts[ia]->name,
              n_ok, s.n);
        printf("polish K = M = 6, %s: %d points, %d the same with both Jacobians, %d polished "
               "by the closed form only\n",
               acts[ia]->name, s.n, n_ok, n_only);
        scm_flow_free(fl);
        scm_model_free(m);
        scm_fp_set_free(&s);
        scm_ansatz_inst_free(in);
    }
    scm_ansatz_free(a);
}

/* The k1 sweep at K = M = 7: each solution is a fixed point of the full
 * flow, and the published k1 = 1 point is among them. */
static void test_sweep(void)
{
    scm_ansatz *a = load_builtin("k1");
    scm_fp_opts o;
    scm_fp_opts_default(&o);
    o.n_random = 5;
    o.polish_max_K = 0;
    scm_fp_sweep sw;
    scm_error e;
    CHECK(scm_fp_sweep_k1(a, 7, 7, &scm_act_relu, &o, 1, &sw, &e) == SCM_EINVAL,
          "max_passes 1 accepted");
    CHECK(scm_fp_sweep_k1(a, 7, 6, &scm_act_relu, &o, 4, &sw, &e) == SCM_EINVAL,
          "k1 applied at K != M");
    CHECK(scm_fp_sweep_k1(a, 7, 7, &scm_act_relu, &o, 10, &sw, &e) == SCM_OK, "%s", e.msg);
    CHECK(sw.n == 8 && sw.k1_min == 0 && sw.k1_max == 7, "range %d..%d", sw.k1_min, sw.k1_max);
    int ref = 0, total = 0;
    for (int i = 0; i < sw.n; i++)
        for (int p = 0; p < sw.set[i].n; p++) {
            scm_fp_point *pt = &sw.set[i].pt[p];
            total++;
            CHECK(pt->full && pt->res_full < 1e-12, "k1 = %d eps %.8g: full residual %g",
                  i, pt->eps, pt->res_full);
            if (i == 1 && fabs(pt->eps - 0.0232027) < 1e-6)
                ref = 1;
        }
    CHECK(ref, "the k1 = 1 point eps = 0.0232027 is not among %d solutions", total);
    scm_fp_sweep_free(&sw);
    scm_ansatz_free(a);
}

/* Seeds from another (K, M) (scm_fp_sweep_k1_seeded, `scm fixed-points
 * --seed-from`): the k1_one ansatz at K = M = 8 with 20 random starts,
 * seeded with the solutions of K = M = 7 (names mapped by the library,
 * passed here by name as a result file would give them).  The seeded list
 * holds every solution of the unseeded one (the seeds are tried last and
 * only add), each instance tried exactly its seeds, and the solutions only
 * the seeds found are fixed points of the full flow. */
static void test_seeded(void)
{
    scm_ansatz *a = load_builtin("k1_one");
    scm_fp_opts o;
    scm_fp_opts_default(&o);
    o.n_random = 20;
    o.polish_max_K = 0;
    scm_fp_sweep s7, s8, s8s;
    scm_error e;
    CHECK(scm_fp_sweep_k1(a, 7, 7, &scm_act_relu, &o, 8, &s7, &e) == SCM_OK, "%s", e.msg);
    int ns = 0;
    for (int i = 0; i < s7.n; i++)
        ns += s7.set[i].n;
    scm_fp_seed *seeds = malloc(sizeof *seeds * (size_t)ns);
    const char **names = malloc(sizeof *names * (size_t)ns * 32);
    int q = 0;
    for (int i = 0; i < s7.n; i++)
        for (int p = 0; p < s7.set[i].n; p++, q++) {
            int nsc = scm_ansatz_inst_nscalars(s7.inst[i]);
            CHECK(nsc <= 32, "scalars %d", nsc);
            for (int c = 0; c < nsc && c < 32; c++)
                names[(size_t)q * 32 + (size_t)c] = scm_ansatz_inst_scalar_name(s7.inst[i], c);
            seeds[q] = (scm_fp_seed){s7.k1_min + i, nsc, names + (size_t)q * 32, s7.set[i].pt[p].x};
        }
    int *tried = NULL;
    CHECK(scm_fp_sweep_k1(a, 8, 8, &scm_act_relu, &o, 8, &s8, &e) == SCM_OK, "%s", e.msg);
    CHECK(scm_fp_sweep_k1_seeded(a, 8, 8, &scm_act_relu, &o, 8, seeds, ns, &s8s, &tried, &e) ==
              SCM_OK && tried,
          "%s", e.msg);
    int lost = 0, added = 0, bad = 0;
    for (int i = 0; i < s8.n; i++) {
        int want = 0;
        for (int r = 0; r < ns; r++)
            want += seeds[r].k1 == s8.k1_min + i;
        CHECK(tried && tried[i] == want, "k1 = %d: %d seeds tried, %d given", i, tried ? tried[i] : -1,
              want);
        for (int p = 0; p < s8.set[i].n; p++) {
            int found = 0;
            for (int r = 0; r < s8s.set[i].n && !found; r++)
                found = fabs(s8s.set[i].pt[r].eps - s8.set[i].pt[p].eps) <=
                        1e-10 * fmax(1.0, fabs(s8.set[i].pt[p].eps));
            lost += !found;
        }
        for (int r = 0; r < s8s.set[i].n; r++) {
            int old = 0;
            for (int p = 0; p < s8.set[i].n && !old; p++)
                old = fabs(s8s.set[i].pt[r].eps - s8.set[i].pt[p].eps) <=
                      1e-10 * fmax(1.0, fabs(s8.set[i].pt[p].eps));
            if (!old) {
                added++;
                bad += !(s8s.set[i].pt[r].full && s8s.set[i].pt[r].res_full < 1e-12);
            }
        }
    }
    CHECK(lost == 0, "%d solutions of the unseeded sweep lost with seeds", lost);
    CHECK(added > 0 && bad == 0, "seeds added %d solutions, %d not fixed points of the full flow",
          added, bad);
    printf("k1_one K = M = 8, 20 random starts: %d seeds from K = M = 7 added %d solutions\n", ns,
           added);
    free(tried);
    free(names);
    free(seeds);
    scm_fp_sweep_free(&s8s);
    scm_fp_sweep_free(&s8);
    scm_fp_sweep_free(&s7);
    scm_ansatz_free(a);
}

/* Continuation in M (scm_fp_sweep_grow): from M0 = 6 to M1 = 7 the
 * published k1 = 1 point is reached; every solution at M1 = 12 is a fixed
 * point of the full flow (scm_ansatz_to_full + scm_flow_rhs, a different
 * computation from the block residual: below the acceptance 1e-10 and
 * equal to the block residual to 1e-12) with a PSD Gram matrix; at M1 =
 * 12 the lowest loss of every family (n_anti) that 200 random starts per
 * k1 find among specialised points is among the continuation's; bad
 * arguments are refused. */
static void test_grow(void)
{
    scm_ansatz *a = load_builtin("k1");
    scm_fp_opts o;
    scm_fp_opts_default(&o);
    o.full_max_K = 0;
    scm_fp_sweep sw;
    scm_error e;
    CHECK(scm_fp_sweep_grow(a, 0, 8, 7, 0, 1, &scm_act_relu, &o, &sw, NULL, &e) == SCM_EINVAL,
          "M1 < M0 accepted");
    CHECK(scm_fp_sweep_grow(a, 0, 2, 7, 0, 1, &scm_act_relu, &o, &sw, NULL, &e) == SCM_EINVAL,
          "a base with 3 instances accepted");
    CHECK(scm_fp_sweep_grow(a, 1, 6, 7, 0, 1, &scm_act_relu, &o, &sw, NULL, &e) == SCM_EINVAL,
          "k1 ansatz at K = M + 1 accepted");
    CHECK(scm_fp_sweep_grow(a, 0, 6, 7, 0, 1, &scm_act_relu, &o, &sw, NULL, &e) == SCM_OK, "%s", e.msg);
    int ref = 0;
    for (int p = 0; p < sw.set[1].n; p++)
        ref |= fabs(sw.set[1].pt[p].eps - 0.0232027149136) < 1e-10;
    CHECK(ref, "the k1 = 1 point eps = 0.0232027149136 not reached from M0 = 6");
    scm_fp_sweep_free(&sw);

    const int M = 12;
    scm_fp_grow_stats gs;
    CHECK(scm_fp_sweep_grow(a, 0, 8, M, 0, 1, &scm_act_relu, &o, &sw, &gs, &e) == SCM_OK, "%s", e.msg);
    CHECK(gs.anchors > 0 && gs.reached >= gs.anchors && gs.base >= gs.reached, "stats %d %d %d",
          gs.base, gs.reached, gs.anchors);
    scm_model *m = scm_model_alloc(M, M, &scm_act_relu, NULL, NULL, NULL, &e);
    scm_flow *fl = scm_flow_alloc(m);
    double Q[M * M], R[M * M], FQ[M * M], FR[M * M], worst = 0.0, gworst = 0.0;
    int total = 0;
    for (int i = 0; i < sw.n; i++)
        for (int p = 0; p < sw.set[i].n; p++) {
            scm_fp_point *pt = &sw.set[i].pt[p];
            total++;
            CHECK((int)pt->k1 == i && pt->M == M, "point labelled k1 = %g, M = %g in set %d",
                  pt->k1, pt->M, i);
            double eps;
            CHECK(scm_ansatz_to_full(sw.inst[i], pt->x, Q, R) == SCM_OK &&
                      scm_flow_rhs(fl, Q, R, FQ, FR, &eps) == SCM_OK,
                  "full flow at k1 = %d", i);
            double r = 0.0;
            for (int j = 0; j < M * M; j++)
                r = fmax(r, fmax(fabs(FQ[j]), fabs(FR[j])));
            worst = fmax(worst, r);
            gworst = fmin(gworst, pt->gram_min);
            CHECK(pt->res_block < o.accept && fabs(r - pt->res_block) <= 1e-12,
                  "k1 = %d eps %.10g: full residual %g, block %g", i, pt->eps, r, pt->res_block);
            CHECK(fabs(eps - pt->eps) <= 1e-12 * fmax(1.0, fabs(eps)), "loss %.15g vs %.15g",
                  eps, pt->eps);
            CHECK(pt->gram_min >= -o.psd_tol, "gram_min %g", pt->gram_min);
        }
    /* the plateau of each family found by random starts */
    double best_rand[M + 1], best_grow[M + 1];
    for (int f = 0; f <= M; f++)
        best_rand[f] = best_grow[f] = INFINITY;
    o.n_random = 200;
    for (int i = 0; i < sw.n; i++) {
        scm_fp_set s;
        scm_fp_set_init(&s);
        CHECK(scm_fp_enumerate(a, sw.inst[i], &scm_act_relu, &o, NULL, 0, &s, &e) == SCM_OK,
              "%s", e.msg);
        for (int src = 0; src < 2; src++) {
            const scm_fp_set *t = src ? &sw.set[i] : &s;
            for (int p = 0; p < t->n; p++) {
                scm_fp_structure st;
                CHECK(scm_fp_classify(sw.inst[i], t->pt[p].x, &st) == SCM_OK, "classify");
                if (st.n_other != 0)
                    continue;
                double *b = src ? best_grow : best_rand;
                int f = (int)st.n_anti;
                b[f] = fmin(b[f], t->pt[p].eps);
            }
        }
        scm_fp_set_free(&s);
    }
    int fam = 0;
    for (int f = 0; f <= M; f++) {
        if (!isfinite(best_rand[f]))
            continue;
        fam++;
        CHECK(best_grow[f] <= best_rand[f] * (1 + 1e-10) + 1e-14,
              "family %d: lowest loss %.12g by random starts, %.12g by continuation", f,
              best_rand[f], best_grow[f]);
    }
    printf("continuation in M, M = 8 -> %d: %d solutions, worst full residual %.2g, worst Gram "
           "eigenvalue %.2g; the plateaus of %d families as random starts find them\n",
           M, total, worst, gworst, fam);
    scm_flow_free(fl);
    scm_model_free(m);
    scm_fp_sweep_free(&sw);
    scm_ansatz_free(a);
}

/* The continuation in M with probes and the closure in k1, against an
 * enumeration made another way: data/plateau_table.csv (random starts at
 * every M plus continuation seeds from M - 1, bench/gen_plateau_table).
 * At K = M = 20 every min* row of the table (a specialised fixed point
 * whose block and full Jacobians have no positive eigenvalue) must be among
 * the points of scm_fp_sweep_grow from M0 = 8 with 3 probes (same loss to
 * 1e-10 relative; the table's losses have 12 digits); and the result must
 * not depend on the number of threads. */
static void test_grow_probes(void)
{
    const int M = 20;
    scm_ansatz *a = load_builtin("k1");
    scm_fp_opts o;
    scm_fp_opts_default(&o);
    o.full_max_K = 0;
    scm_fp_sweep sw, sw2;
    scm_fp_grow_stats gs;
    scm_error e;
    CHECK(scm_fp_sweep_grow(a, 0, 8, M, 22, 1, &scm_act_relu, &o, &sw, NULL, &e) == SCM_EINVAL,
          "22 probes for 21 instances accepted");
    CHECK(scm_fp_sweep_grow(a, 0, 8, M, 3, 1, &scm_act_relu, &o, &sw, &gs, &e) == SCM_OK, "%s",
          e.msg);
    CHECK(gs.probed > 0, "the probes found nothing new");
    o.threads = 2;
    CHECK(scm_fp_sweep_grow(a, 0, 8, M, 3, 1, &scm_act_relu, &o, &sw2, NULL, &e) == SCM_OK, "%s",
          e.msg);
    int same = sw.n == sw2.n;
    for (int i = 0; same && i < sw.n; i++) {
        same = sw.set[i].n == sw2.set[i].n;
        for (int p = 0; same && p < sw.set[i].n; p++)
            same = memcmp(sw.set[i].pt[p].x, sw2.set[i].pt[p].x,
                          sizeof(double) * (size_t)sw.set[i].pt[p].nsc) == 0;
    }
    CHECK(same, "1 and 2 threads give different solutions");
    FILE *f = fopen("../data/plateau_table.csv", "r");
    if (!f)
        f = fopen("data/plateau_table.csv", "r");
    CHECK(f != NULL, "data/plateau_table.csv not found");
    char line[4096];
    int rows = 0, missing = 0;
    while (f && fgets(line, sizeof line, f)) {
        int K, MM, fam;
        double loss;
        char cls[64];
        if (sscanf(line, "%d,%d,%*d,%d,%*d,%*d,%lf,%*[^,],%*[^,],%*[^,],%*[^,],%63[^,]", &K, &MM,
                   &fam, &loss, cls) != 5 ||
            K != M || MM != M || strncmp(cls, "min", 3) != 0 ||
            strstr(line, ",k1_one,")) /* the rows of the k1 ansatz, which is grown */
            continue;
        rows++;
        int found = 0;
        for (int i = 0; i < sw.n && !found; i++)
            for (int p = 0; p < sw.set[i].n && !found; p++)
                found = fabs(sw.set[i].pt[p].eps - loss) <= 1e-10 * fmax(1e-3, loss);
        missing += !found;
        CHECK(found, "K = M = %d: the table's min* point of family %d, loss %.12g, not found", M,
              fam, loss);
    }
    if (f)
        fclose(f);
    CHECK(rows >= 20, "only %d min* rows at K = M = %d in the table", rows, M);
    printf("continuation in M with 3 probes, M = 8 -> %d: %d of the table's %d min* rows found; "
           "%d anchors, %d new from the probes\n",
           M, rows - missing, rows, gs.anchors, gs.probed);
    scm_fp_sweep_free(&sw);
    scm_fp_sweep_free(&sw2);
    scm_ansatz_free(a);
}

/* The families k1 = 1, 2, 3 at K = M = 1000 by scm_fp_sweep_grow from
 * M0 = 8 with the fixed-k1 paths up to k1 = 3 (secant steps in M with a
 * chord corrector and a fresh-Jacobian retry, then the closure in k1),
 * against scm_fp_continue (Newton with a
 * fresh Jacobian at every step) from the lowest k1 point of positive loss
 * at K = M = 8 to M = 1000: the same loss.  Before the retries the k1 = 1
 * path left its branch at M = 212.68 for a crossing one outside the PSD
 * cone, and the closure went from k1 = 1 to the point beside the k1 = 2
 * family (loss 0.00058473254, Gram eigenvalue -1e-4) instead of the family
 * (0.00058473251, on the PSD boundary). */
static void test_grow_families(void)
{
    const int M1 = 1000;
    scm_ansatz *a = load_builtin("k1");
    scm_fp_opts o;
    scm_fp_opts_default(&o);
    o.full_max_K = 0;
    o.threads = 2;
    scm_error e;
    scm_fp_sweep sw;
    scm_fp_grow_stats gs;
    CHECK(scm_fp_sweep_grow(a, 0, 8, M1, 0, 3, &scm_act_relu, &o, &sw, &gs, &e) == SCM_OK, "%s",
          e.msg);
    for (int k1 = 1; k1 <= 3; k1++) {
        scm_ansatz_inst *in = scm_ansatz_instantiate(a, 8, 8, k1, &e);
        scm_fp_set s;
        scm_fp_set_init(&s);
        CHECK(in && scm_fp_enumerate(a, in, &scm_act_relu, &o, NULL, 0, &s, &e) == SCM_OK, "%s",
              e.msg);
        int best = -1;
        for (int p = 0; p < s.n; p++)
            if (s.pt[p].eps > 1e-8 && (best < 0 || s.pt[p].eps < s.pt[best].eps))
                best = p;
        CHECK(best >= 0, "no k1 = %d point of positive loss at K = M = 8", k1);
        if (best >= 0) {
            scm_fp_branch b;
            CHECK(scm_fp_continue(a, 0.0, k1, 8.0, s.pt[best].x, M1, 0.0, &scm_act_relu, &o, &b,
                                  &e) == SCM_OK,
                  "%s", e.msg);
            CHECK(!b.ended_early && b.n > 0, "scm_fp_continue ended at M = %g: %s", b.M_last,
                  b.why);
            /* compared by the scalars: the loss at M = 1000 sums O(M^2) terms,
             * its round-off (1e-9) is larger than the gap to the solution
             * beside the k1 = 2 family */
            double ref = b.n > 0 ? b.eps[b.n - 1] : NAN, dmin = INFINITY;
            for (int p = 0; b.n > 0 && p < sw.set[k1].n; p++) {
                double d = 0.0;
                for (int c = 0; c < b.nsc && c < sw.set[k1].pt[p].nsc; c++)
                    d = fmax(d, fabs(sw.set[k1].pt[p].x[c] - b.x[(size_t)(b.n - 1) * b.nsc + c]));
                dmin = fmin(dmin, d);
            }
            scm_fp_branch_free(&b);
            CHECK(dmin < 1e-8, "k1 = %d at M = %d: scm_fp_continue's point (loss %.12g, from "
                               "%.12g at M = 8) not in the continuation in M (nearest %.3g)",
                  k1, M1, ref, s.pt[best].eps, dmin);
            printf("k1 = %d from M = 8 (loss %.10g) to %d: loss %.12g, the scalars of both "
                   "continuations within %.2g\n", k1, s.pt[best].eps, M1, ref, dmin);
        }
        scm_fp_set_free(&s);
        scm_ansatz_inst_free(in);
    }
    printf("continuation in M, 8 -> %d (fixed_max 3): %d paths from %d base solutions reach it\n",
           M1, gs.reached, gs.base);
    scm_fp_sweep_free(&sw);
    scm_ansatz_free(a);
}

/* Deflation (scm_fp_opts.deflate) with the same starts as plain Newton. */
static int deflation_case(const char *name, int K, int M, int k1, int n_random)
{
    scm_ansatz *a = load_builtin(name);
    scm_error e;
    scm_ansatz_inst *in = scm_ansatz_instantiate(a, K, M, k1, &e);
    CHECK(in != NULL, "%s", e.msg);
    scm_fp_opts o;
    scm_fp_opts_default(&o);
    o.n_random = n_random;
    o.polish_max_K = 0;
    scm_fp_set s0, s1;
    scm_fp_set_init(&s0);
    scm_fp_set_init(&s1);
    CHECK(scm_fp_enumerate(a, in, &scm_act_relu, &o, NULL, 0, &s0, &e) == SCM_OK, "%s", e.msg);
    CHECK(s0.n_deflated == 0 && s0.n_deflated_new == 0, "deflation ran with deflate = 0");
    o.deflate = 3;
    CHECK(scm_fp_enumerate(a, in, &scm_act_relu, &o, NULL, 0, &s1, &e) == SCM_OK, "%s", e.msg);
    /* nothing lost: every plain root is a deflated root */
    for (int p = 0; p < s0.n; p++) {
        int found = 0;
        for (int q = 0; q < s1.n && !found; q++) {
            double d = 0.0;
            for (int c = 0; c < s0.pt[p].nsc; c++)
                d = fmax(d, fabs(s0.pt[p].x[c] - s1.pt[q].x[c]));
            found = d < o.dedup_tol;
        }
        CHECK(found, "%s K=%d M=%d k1=%d: plain root %d (loss %.12g) lost with deflation",
              name, K, M, k1, p, s0.pt[p].eps);
    }
    /* the plain solves are the same; a root deflation finds first may be
     * found again by a later plain solve */
    CHECK(s1.n >= s0.n && s1.n <= s0.n + s1.n_deflated_new,
          "%d roots, %d plain, %d found by deflation", s1.n, s0.n, s1.n_deflated_new);
    /* every root is a root of the full flow and distinct from the others */
    for (int p = 0; p < s1.n; p++) {
        CHECK(s1.pt[p].full && s1.pt[p].res_full < 1e-11, "root %d: full residual %g", p,
              s1.pt[p].res_full);
        for (int q = 0; q < p; q++) {
            double d = 0.0;
            for (int c = 0; c < s1.pt[p].nsc; c++)
                d = fmax(d, fabs(s1.pt[p].x[c] - s1.pt[q].x[c]));
            CHECK(d >= o.dedup_tol, "roots %d and %d coincide", p, q);
        }
    }
    int gained = s1.n - s0.n;
    printf("# deflation %s K=%d M=%d k1=%d, %d random starts: %d roots plain, %d deflated "
           "(%d deflated solves)\n",
           name, K, M, k1, n_random, s0.n, s1.n, s1.n_deflated);
    scm_fp_set_free(&s0);
    scm_fp_set_free(&s1);
    scm_ansatz_inst_free(in);
    scm_ansatz_free(a);
    return gained;
}

static void test_deflation(void)
{
    int gained = 0;
    gained += deflation_case("k1", 6, 6, 2, 10);
    gained += deflation_case("k1", 7, 7, 1, 10);
    gained += deflation_case("k1_extra", 7, 6, 1, 10);
    gained += deflation_case("k1_extra", 9, 8, 3, 10);
    CHECK(gained > 0, "deflation found no root beyond plain Newton in four cases");
}


/* Two points equal bit for bit in everything the enumeration computes. */
static int same_point(const scm_fp_point *a, const scm_fp_point *b, long KK, long KM)
{
    if (a->nsc != b->nsc || memcmp(a->x, b->x, sizeof(double) * (size_t)a->nsc) != 0)
        return 0;
    const double fa[] = {a->eps, a->res_block, a->jac_smin, a->jac_smax, a->gram_min,
                         a->res_full, a->inv_dev, a->res_polish, a->eps_polish};
    const double fb[] = {b->eps, b->res_block, b->jac_smin, b->jac_smax, b->gram_min,
                         b->res_full, b->inv_dev, b->res_polish, b->eps_polish};
    for (size_t i = 0; i < sizeof fa / sizeof fa[0]; i++)
        if (memcmp(&fa[i], &fb[i], sizeof(double)) != 0)
            return 0;
    if (a->hits != b->hits || a->full != b->full || a->polished != b->polished)
        return 0;
    if (!a->Q != !b->Q || (a->Q && (memcmp(a->Q, b->Q, sizeof(double) * (size_t)KK) ||
                                    memcmp(a->R, b->R, sizeof(double) * (size_t)KM))))
        return 0;
    return 1;
}

/* opts.threads: the sweep (random starts, neighbour seeds, deflation,
 * checks and polish), the enumeration of one instance and the polish of a
 * list give the same points, bit for bit, on 1, 2 and 3 threads; the
 * two-step enumeration (solves, then checks) is scm_fp_enumerate. */
static void test_threads(void)
{
    scm_ansatz *a = load_builtin("k1_one");
    scm_error e;
    scm_fp_opts o;
    scm_fp_opts_default(&o);
    o.n_random = 20;
    o.deflate = 2;
    o.threads = 0;
    CHECK(scm_fp_opts_check(&o, &e) == SCM_EINVAL && strstr(e.msg, "threads"), "threads 0");
    o.threads = 65;
    CHECK(scm_fp_opts_check(&o, &e) == SCM_EINVAL && strstr(e.msg, "threads"), "threads 65");
    scm_fp_sweep sw[3];
    for (int t = 0; t < 3; t++) {
        o.threads = t + 1;
        CHECK(scm_fp_sweep_k1(a, 8, 8, &scm_act_relu, &o, 8, &sw[t], &e) == SCM_OK, "%s", e.msg);
    }
    int total = 0;
    for (int t = 1; t < 3; t++)
        for (int i = 0; i < sw[0].n; i++) {
            CHECK(sw[t].set[i].n == sw[0].set[i].n, "threads %d, k1 = %d: %d vs %d points",
                  t + 1, i, sw[t].set[i].n, sw[0].set[i].n);
            for (int p = 0; p < sw[0].set[i].n && p < sw[t].set[i].n; p++, total++)
                CHECK(same_point(&sw[t].set[i].pt[p], &sw[0].set[i].pt[p], 64, 64),
                      "threads %d, k1 = %d, point %d differs", t + 1, i, p);
        }
    CHECK(total > 100, "only %d points compared", total);

    /* one instance: scm_fp_enumerate on 1 and 3 threads, and in two steps */
    scm_ansatz_inst *in = scm_ansatz_instantiate(a, 8, 8, 3, &e);
    scm_fp_set s1, s3, s2;
    scm_fp_set_init(&s1);
    scm_fp_set_init(&s3);
    scm_fp_set_init(&s2);
    o.threads = 1;
    CHECK(scm_fp_enumerate(a, in, &scm_act_relu, &o, NULL, 0, &s1, &e) == SCM_OK, "%s", e.msg);
    o.threads = 3;
    CHECK(scm_fp_enumerate(a, in, &scm_act_relu, &o, NULL, 0, &s3, &e) == SCM_OK, "%s", e.msg);
    CHECK(scm_fp_enumerate_solves(a, in, &scm_act_relu, &o, NULL, 0, &s2, &e) == SCM_OK &&
              scm_fp_check_points(in, &scm_act_relu, &o, s2.pt, s2.n, &e) == SCM_OK,
          "%s", e.msg);
    CHECK(s1.n == s3.n && s1.n == s2.n && s1.n > 3, "%d, %d, %d points", s1.n, s3.n, s2.n);
    CHECK(s1.n_deflated == s3.n_deflated && s1.n_noprog == s3.n_noprog &&
              s1.n_converged == s3.n_converged,
          "start counts differ between 1 and 3 threads");
    for (int p = 0; p < s1.n && p < s3.n && p < s2.n; p++) {
        CHECK(same_point(&s1.pt[p], &s3.pt[p], 64, 64), "enumerate: point %d differs", p);
        CHECK(same_point(&s1.pt[p], &s2.pt[p], 64, 64), "two steps: point %d differs", p);
    }

    /* the polish of a list, deferred: one after another and on 2 threads */
    scm_fp_set d1, d2;
    scm_fp_set_init(&d1);
    scm_fp_set_init(&d2);
    o.polish_defer = 1;
    o.threads = 1;
    CHECK(scm_fp_enumerate(a, in, &scm_act_relu, &o, NULL, 0, &d1, &e) == SCM_OK, "%s", e.msg);
    CHECK(scm_fp_enumerate(a, in, &scm_act_relu, &o, NULL, 0, &d2, &e) == SCM_OK, "%s", e.msg);
    scm_fp_point **list = malloc(sizeof *list * (size_t)(d2.n + 1));
    for (int p = 0; p < d1.n; p++)
        CHECK(scm_fp_point_polish(&d1.pt[p], &scm_act_relu, &o, &e) == SCM_OK, "%s", e.msg);
    for (int p = 0; p < d2.n; p++)
        list[p] = &d2.pt[p];
    o.threads = 2;
    CHECK(scm_fp_points_polish(list, d2.n, &scm_act_relu, &o, &e) == SCM_OK, "%s", e.msg);
    int polished = 0;
    for (int p = 0; p < d1.n && p < d2.n; p++) {
        CHECK(same_point(&d1.pt[p], &d2.pt[p], 64, 64), "polish: point %d differs", p);
        CHECK(same_point(&d1.pt[p], &s1.pt[p], 64, 64), "deferred polish: point %d differs", p);
        polished += d2.pt[p].polished;
    }
    CHECK(polished == d2.n, "%d of %d points polished", polished, d2.n);
    free(list);
    scm_fp_set_free(&s1);
    scm_fp_set_free(&s2);
    scm_fp_set_free(&s3);
    scm_fp_set_free(&d1);
    scm_fp_set_free(&d2);
    scm_ansatz_inst_free(in);
    for (int t = 0; t < 3; t++)
        scm_fp_sweep_free(&sw[t]);
    scm_ansatz_free(a);
}

/* The chain in M (scm_fp_sweep_k1_chain): k1_one at K = M = 7 chained
 * from M0 = 4 holds every point of the plain sweep at 7 (compared by
 * loss), runs 4 links, tried seeds at M, and every point it adds is a
 * fixed point of the full flow; bad M0 is refused. */
static void test_chain(void)
{
    scm_ansatz *a = load_builtin("k1_one");
    scm_error e;
    scm_fp_opts o;
    scm_fp_opts_default(&o);
    o.n_random = 20;
    o.deflate = 2;
    o.polish_max_K = 0;
    o.threads = 2;
    scm_fp_sweep plain, chain;
    int *tried = NULL, steps = -1;
    CHECK(scm_fp_sweep_k1_chain(a, 0, 0, 7, &scm_act_relu, &o, 8, NULL, 0, &chain, NULL, &steps,
                                &e) == SCM_EINVAL,
          "M0 = 0 accepted");
    CHECK(scm_fp_sweep_k1_chain(a, 0, 8, 7, &scm_act_relu, &o, 8, NULL, 0, &chain, NULL, &steps,
                                &e) == SCM_EINVAL,
          "M0 > M accepted");
    CHECK(scm_fp_sweep_k1(a, 7, 7, &scm_act_relu, &o, 8, &plain, &e) == SCM_OK, "%s", e.msg);
    CHECK(scm_fp_sweep_k1_chain(a, 0, 4, 7, &scm_act_relu, &o, 8, NULL, 0, &chain, &tried, &steps,
                                &e) == SCM_OK,
          "%s", e.msg);
    CHECK(steps == 4, "%d links, want 4 (M = 4 .. 7)", steps);
    int n_plain = 0, n_chain = 0, lost = 0, added = 0, bad = 0, seeds = 0;
    for (int i = 0; i < chain.n; i++) {
        seeds += tried ? tried[i] : 0;
        n_chain += chain.set[i].n;
    }
    for (int i = 0; i < plain.n; i++)
        for (int p = 0; p < plain.set[i].n; p++, n_plain++) {
            int found = 0;
            for (int j = 0; j < chain.n && !found; j++)
                for (int q = 0; q < chain.set[j].n && !found; q++)
                    found = fabs(chain.set[j].pt[q].eps - plain.set[i].pt[p].eps) <=
                            1e-10 * fmax(1e-3, fabs(plain.set[i].pt[p].eps));
            lost += !found;
        }
    for (int j = 0; j < chain.n; j++)
        for (int q = 0; q < chain.set[j].n; q++) {
            const scm_fp_point *pt = &chain.set[j].pt[q];
            int found = 0;
            for (int i = 0; i < plain.n && !found; i++)
                for (int p = 0; p < plain.set[i].n && !found; p++)
                    found = fabs(plain.set[i].pt[p].eps - pt->eps) <=
                            1e-10 * fmax(1e-3, fabs(pt->eps));
            if (found)
                continue;
            added++;
            bad += !(pt->full && pt->res_full < 1e-11);
        }
    CHECK(lost == 0, "the chain lost %d of %d points of the plain sweep", lost, n_plain);
    CHECK(seeds > 0, "no seed tried at M = 7");
    CHECK(bad == 0, "%d of %d added points are not fixed points of the full flow", bad, added);
    printf("# chain k1_one M = 4 -> 7: %d points against %d plain (%d added), %d seeds at M = 7\n",
           n_chain, n_plain, added, seeds);
    free(tried);
    scm_fp_sweep_free(&plain);
    scm_fp_sweep_free(&chain);
    scm_ansatz_free(a);
}

int main(void)
{
    gsl_set_error_handler_off();
    static double losses[4096];
    int nloss = 0;
    test_reference_m7();
    test_errors();
    test_all_families(5, 5, "k1", losses, &nloss);
    test_random_flow(5, 5, losses, nloss, 30);
    nloss = 0;
    test_all_families(4, 3, "k1_extra", losses, &nloss);
    test_continuation();
    test_deferred_polish();
    test_lsqr();
    test_polish_jacobians();
    test_grow();
    test_grow_probes();
    test_grow_families();
    test_sweep();
    test_seeded();
    test_deflation();
    test_threads();
    test_chain();
    return TEST_SUMMARY();
}
