/* test_traj_weights.c: the (Q, R) flow integrated by CVODE (scm_traj_run)
 * against weight-space gradient flow dW/dtau = -d grad_W eps, with the
 * closed-form gradient of scm_weights_grad, realised by scm_weights_realise
 * in d = K + M and integrated by a different integrator (GSL odeiv2,
 * rk8pd), mapped back with scm_weights_overlaps at the recorded output
 * times; eps is non-increasing along the record and agrees between the two
 * runs.  Then the global minimum Q = R = T = I, v = v* is a fixed point, and
 * random K = M runs (M = 1, 2, ReLU) reach it.
 *
 * Tolerance of the comparison: CVODE (BDF) runs at rtol 1e-10, atol 1e-12
 * and GSL at epsrel 1e-12, epsabs 1e-13; these bound local errors per step.
 * Over a run of a few hundred to a few thousand steps of a dissipative flow
 * the global error is a few hundred times the local tolerance at most, so
 * 1e-7 (relative to the size of Q, R) leaves a margin of a few orders of
 * magnitude over the ~1e-10..1e-9 actually observed (printed below) while
 * still being 1e5 times smaller than any error of the bookkeeping (a wrong
 * factor in A, B or the gradient changes the trajectory at O(1) at these
 * times).  Plateau escapes amplify errors exponentially, which is why
 * t_max stays at a few hundred. */
#include <gsl/gsl_errno.h>
#include <gsl/gsl_odeiv2.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "scm/init.h"
#include "scm/traj.h"
#include "scm/weights.h"
#include "testutil.h"

static double worst_state, worst_eps, worst_monotone, worst_wmono, worst_fixed;

static double *dalloc(long n) { return calloc((size_t)(n > 0 ? n : 1), sizeof(double)); }

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

/* ---------------------------------------------------------------- weight-space flow */

typedef struct {
    scm_flow *fl;
    long d;
    const double *Ws;
    scm_status st;
    long n_eval;
} wflow;

static int wflow_rhs(double t, const double *y, double *dydt, void *params)
{
    (void)t;
    wflow *w = params;
    const long n = (long)scm_flow_model(w->fl)->K * w->d;
    w->n_eval++;
    scm_status st = scm_weights_grad(w->fl, w->d, y, w->Ws, NULL, dydt);
    if (st) {
        w->st = st;
        return GSL_EBADFUNC;
    }
    for (long i = 0; i < n; i++)
        dydt[i] *= -(double)w->d; /* dW/dtau = -(S W + B W*) = -d G */
    return GSL_SUCCESS;
}

typedef struct {
    const char *act;
    int K, M;
    unsigned long seed;
    double t_max;
    int general; /* a non-identity T and second layers not all one */
} traj_case;

/* A fixed non-identity PSD T (M <= 3) and second layers. */
static const double T_gen[3][9] = {
    {1.3},
    {1.2, 0.35, 0.35, 0.7},
    {1.2, 0.3, -0.2, 0.3, 0.8, 0.1, -0.2, 0.1, 1.5},
};
static const double v_gen[] = {1.2, 0.6, -0.5, 0.9}, vs_gen[] = {0.8, 1.4, 1.1};

static void compare_run(const traj_case *c)
{
    const scm_activation *act = scm_activation_find(c->act);
    const int K = c->K, M = c->M;
    const long d = K + M;
    scm_error err;
    scm_model *m = c->general ? scm_model_alloc(K, M, act, T_gen[M - 1], v_gen, vs_gen, &err)
                              : scm_model_alloc(K, M, act, NULL, NULL, NULL, &err);
    CHECK(m != NULL, "model: %s", err.msg);
    if (!m)
        return;
    double *Q0 = dalloc(K * K), *R0 = dalloc(K * M), *Q = dalloc(K * K), *R = dalloc(K * M),
           *W = dalloc(K * d), *Ws = dalloc(M * d);
    scm_status st = scm_init_random(m, 1000, 1.0, c->seed, Q0, R0, &err);
    CHECK(st == SCM_OK, "init: %s", err.msg);

    scm_traj_opts o;
    scm_traj_opts_default(&o);
    o.rtol = 1e-10;
    o.atol = 1e-12;
    o.t_max = c->t_max;
    o.t_first = 0.1;
    o.n_out = 25;
    o.grad_stop = 0.0;
    o.eps_stop = 0.0;
    scm_traj_result res;
    clock_t t0 = clock();
    st = scm_traj_run(m, &scm_rule_gd, Q0, R0, &o, &res, &err);
    double cv_sec = (double)(clock() - t0) / CLOCKS_PER_SEC;
    CHECK(st == SCM_OK, "%s K=%d M=%d: traj_run: %s", c->act, K, M, err.msg);
    if (st) {
        scm_model_free(m);
        free(Q0), free(R0), free(Q), free(R), free(W), free(Ws);
        return;
    }
    CHECK(res.stop == SCM_STOP_T_MAX && res.t == c->t_max,
          "%s K=%d M=%d seed %lu: stop %s at t = %g (%s)", c->act, K, M, c->seed,
          scm_stop_reason_str(res.stop), res.t, res.err.msg);
    CHECK(res.n_out >= o.n_out, "only %ld recorded points", res.n_out);

    /* eps never increases along the record beyond 1e-12 relative, up to a
     * floor of 1e-11 eps(0): the state carries integration errors of order
     * atol = 1e-12 per entry, and near the ReLU global minimum (parallel
     * neurons, correlation clamped at 1) eps is first order in errors that
     * leave the Gram manifold -- the recorded eps there even dips to
     * -8e-13 before coming back. */
    const double eps0 = res.out_eps[0];
    double mono = 0.0;
    for (long i = 1; i < res.n_out; i++) {
        double inc = (res.out_eps[i] - res.out_eps[i - 1]) / eps0;
        mono = fmax(mono, inc);
        CHECK(res.out_eps[i] <= res.out_eps[i - 1] + 1e-12 * fabs(res.out_eps[i - 1]) +
                                    1e-11 * eps0,
              "%s K=%d M=%d: eps increases from %.17g to %.17g at t = %g", c->act, K, M,
              res.out_eps[i - 1], res.out_eps[i], res.out_t[i]);
    }
    worst_monotone = fmax(worst_monotone, mono);

    /* the same run in weight space */
    st = scm_weights_realise(m, Q0, R0, d, W, Ws, &err);
    CHECK(st == SCM_OK, "realise: %s", err.msg);
    scm_flow *fl = scm_flow_alloc(m);
    wflow wf = {fl, d, Ws, SCM_OK, 0};
    gsl_odeiv2_system sys = {wflow_rhs, NULL, (size_t)(K * d), &wf};
    gsl_odeiv2_driver *drv =
        gsl_odeiv2_driver_alloc_y_new(&sys, gsl_odeiv2_step_rk8pd, 1e-4, 1e-13, 1e-12);
    /* a budget (the runs take ~1000 steps), so that a wrong gradient that
     * makes the flow stiff or divergent fails instead of hanging */
    gsl_odeiv2_driver_set_nmax(drv, 100000);
    double t = 0.0, err_state = 0.0, err_eps = 0.0, eps_w_prev = 0.0;
    t0 = clock();
    for (long i = 0; i < res.n_out; i++) {
        double ti = res.out_t[i];
        if (ti > t) {
            int gs = gsl_odeiv2_driver_apply(drv, &t, ti, W);
            CHECK(gs == GSL_SUCCESS, "%s K=%d M=%d: GSL driver fails at t = %g (%d, %s)", c->act,
                  K, M, t, gs, scm_status_str(wf.st));
            if (gs != GSL_SUCCESS)
                break;
        }
        scm_weights_overlaps(m, d, W, Ws, Q, R);
        const double *Qc = res.out_Q + i * K * K, *Rc = res.out_R + i * K * M;
        double scale = fmax(max_abs(Qc, K * K), max_abs(Rc, K * M));
        double e = fmax(max_diff(Q, Qc, K * K), max_diff(R, Rc, K * M)) / scale;
        err_state = fmax(err_state, e);
        CHECK(e <= 1e-7, "%s K=%d M=%d seed %lu: state differs by %.3g (relative) at t = %g",
              c->act, K, M, c->seed, e, ti);
        double eps_w;
        st = scm_weights_grad(fl, d, W, Ws, &eps_w, NULL);
        CHECK(st == SCM_OK, "weights_grad: %s", scm_status_str(st));
        /* the weight-space state is always a true Gram matrix: its eps is
         * non-increasing to 1e-12 relative and round-off (1e-14 eps0) */
        if (i > 0)
            CHECK(eps_w <= eps_w_prev + 1e-12 * fabs(eps_w_prev) + 1e-14 * eps0,
                  "%s K=%d M=%d: weight-space eps increases from %.17g to %.17g at t = %g",
                  c->act, K, M, eps_w_prev, eps_w, ti);
        worst_wmono = fmax(worst_wmono, i > 0 ? (eps_w - eps_w_prev) / eps0 : 0.0);
        eps_w_prev = eps_w;
        /* A state error delta (<= 1e-7, relative) moves eps by
         * |grad eps| delta; near a smooth minimum |grad eps| ~ sqrt(eps), so
         * the scale of the difference is |eps| + sqrt(|eps| eps0); near the
         * ReLU minimum eps is first order in the state error (see above),
         * hence the floor 1e-9 eps0 (observed: ~1e-12 eps0 there). */
        double ec = res.out_eps[i], escale = fabs(ec) + sqrt(fabs(ec) * eps0);
        double ee = fabs(eps_w - ec) / (1e-7 * escale + 1e-9 * eps0);
        err_eps = fmax(err_eps, ee);
        CHECK(fabs(eps_w - ec) <= 1e-7 * escale + 1e-9 * eps0,
              "%s K=%d M=%d seed %lu: eps %.17g (weights) vs %.17g (CVODE) at t = %g",
              c->act, K, M, c->seed, eps_w, ec, ti);
    }
    double gsl_sec = (double)(clock() - t0) / CLOCKS_PER_SEC;
    worst_state = fmax(worst_state, err_state);
    worst_eps = fmax(worst_eps, err_eps);
    printf("%-6s K=%d M=%d%s seed %lu t_max %g: eps %.3g -> %.3g, max state diff %.2g, "
           "eps diff %.2g of tol; CVODE %ld steps (%.2fs), GSL %ld rhs (%.2fs)\n",
           c->act, K, M, c->general ? " (T, v general)" : "", c->seed, c->t_max, res.out_eps[0], res.out_eps[res.n_out - 1], err_state,
           err_eps, res.n_steps, cv_sec, wf.n_eval, gsl_sec);
    gsl_odeiv2_driver_free(drv);
    scm_flow_free(fl);
    scm_traj_result_free(&res);
    scm_model_free(m);
    free(Q0), free(R0), free(Q), free(R), free(W), free(Ws);
}

/* ---------------------------------------------------------------- global minimum */

static void test_fixed_point(void)
{
    static const scm_activation *const acts[] = {&scm_act_relu, &scm_act_erf, &scm_act_linear};
    static const double vval[] = {1.0, 0.7, -1.3, 2.1, 0.4};
    for (int ai = 0; ai < 3; ai++)
        for (int K = 1; K <= 5; K++)
            for (int vi = 0; vi < 2; vi++) {
                const int M = K;
                double v[5], I[25] = {0}, R[25] = {0}, FQ[25], FR[25], eps, g2;
                for (int k = 0; k < K; k++) {
                    v[k] = vi ? vval[k] : 1.0;
                    I[k * K + k] = R[k * K + k] = 1.0;
                }
                scm_error err;
                scm_model *m = scm_model_alloc(K, M, acts[ai], NULL, v, v, &err);
                scm_flow *fl = scm_flow_alloc(m);
                scm_status st = scm_flow_rhs(fl, I, R, FQ, FR, &eps);
                CHECK(st == SCM_OK, "%s K=%d: rhs at the global minimum: %s", acts[ai]->name, K,
                      scm_status_str(st));
                st = scm_flow_grad_norm2(fl, I, R, &g2);
                CHECK(st == SCM_OK, "grad_norm2: %s", scm_status_str(st));
                double F = fmax(max_abs(FQ, K * K), max_abs(FR, K * M));
                worst_fixed = fmax(worst_fixed, fmax(F, fabs(eps)));
                CHECK(F <= 1e-14, "%s K=%d v %s: max |F| = %.3g at Q = R = T = I",
                      acts[ai]->name, K, vi ? "random" : "ones", F);
                CHECK(fabs(eps) <= 1e-14, "%s K=%d: eps = %.3g at the global minimum",
                      acts[ai]->name, K, eps);
                /* g2 is a sum of cancelling traces: zero to round-off only */
                CHECK(fabs(g2) <= 1e-13, "%s K=%d: grad_norm2 = %.3g at the global minimum",
                      acts[ai]->name, K, g2);
                /* and in weight space: W = W*, zero gradient */
                double W[50], Ws[50], G[50];
                st = scm_weights_realise(m, I, R, 2 * K, W, Ws, &err);
                CHECK(st == SCM_OK && max_diff(W, Ws, K * 2 * K) <= 1e-15,
                      "%s K=%d: realised W != W* at R = Q = T = I", acts[ai]->name, K);
                st = scm_weights_grad(fl, 2 * K, W, Ws, &eps, G);
                CHECK(st == SCM_OK && max_abs(G, K * 2 * K) <= 1e-14 && fabs(eps) <= 1e-14,
                      "%s K=%d: weight-space gradient %.3g, eps %.3g at the global minimum",
                      acts[ai]->name, K, max_abs(G, K * 2 * K), eps);
                scm_flow_free(fl);
                scm_model_free(m);
            }
}

/* Is R (K x K) within tol of a permutation matrix? */
static double perm_distance(const double *R, int K)
{
    int used[8] = {0};
    double dist = 0.0;
    for (int k = 0; k < K; k++) {
        int best = 0;
        for (int n = 1; n < K; n++)
            if (fabs(R[k * K + n]) > fabs(R[k * K + best]))
                best = n;
        if (used[best])
            return INFINITY;
        used[best] = 1;
        for (int n = 0; n < K; n++)
            dist = fmax(dist, fabs(R[k * K + n] - (n == best)));
    }
    return dist;
}

static void test_reach_minimum(void)
{
    for (int M = 1; M <= 2; M++)
        for (unsigned long seed = 1; seed <= 4; seed++) {
            const int K = M;
            scm_error err;
            scm_model *m = scm_model_alloc(K, M, &scm_act_relu, NULL, NULL, NULL, &err);
            double Q0[4], R0[4];
            scm_status st = scm_init_random(m, 1000, 1.0, 1000 + seed, Q0, R0, &err);
            CHECK(st == SCM_OK, "init: %s", err.msg);
            scm_traj_opts o;
            scm_traj_opts_default(&o);
            o.t_max = 1e5;
            o.record = 0;
            scm_traj_result res;
            st = scm_traj_run(m, &scm_rule_gd, Q0, R0, &o, &res, &err);
            CHECK(st == SCM_OK, "traj_run: %s", err.msg);
            if (st) {
                scm_model_free(m);
                continue;
            }
            double pd = perm_distance(res.R, K), qd = 0.0;
            for (int k = 0; k < K; k++)
                for (int l = 0; l < K; l++)
                    qd = fmax(qd, fabs(res.Q[k * K + l] - (k == l)));
            printf("relu K=M=%d seed %lu: stop %s at t = %.4g, eps %.3g, |R - P| %.2g, "
                   "|Q - I| %.2g, %ld steps\n",
                   M, 1000 + seed, scm_stop_reason_str(res.stop), res.t, res.eps, pd, qd,
                   res.n_steps);
            CHECK(res.stop == SCM_STOP_EPS || res.stop == SCM_STOP_FIXED_POINT,
                  "relu K=M=%d seed %lu: stop %s (%s)", M, 1000 + seed,
                  scm_stop_reason_str(res.stop), res.err.msg);
            CHECK(res.eps < 1e-10, "relu K=M=%d seed %lu: final eps %.3g", M, 1000 + seed,
                  res.eps);
            CHECK(pd < 1e-3, "relu K=M=%d seed %lu: R is %.3g from a permutation", M,
                  1000 + seed, pd);
            CHECK(qd < 1e-3, "relu K=M=%d seed %lu: Q is %.3g from I", M, 1000 + seed, qd);
            scm_traj_result_free(&res);
            scm_model_free(m);
        }
}

int main(void)
{
    gsl_set_error_handler_off();
    static const traj_case cases[] = {
        {"relu", 2, 2, 11, 200.0, 0},  {"relu", 2, 2, 12, 200.0, 0}, {"relu", 3, 2, 13, 200.0, 0},
        {"relu", 3, 2, 14, 200.0, 0},  {"relu", 4, 4, 15, 100.0, 0}, {"relu", 4, 4, 16, 100.0, 0},
        {"erf", 3, 3, 17, 200.0, 0},   {"erf", 3, 3, 18, 200.0, 0},  {"linear", 2, 2, 19, 50.0, 0},
        {"linear", 2, 2, 20, 50.0, 0},
        /* beyond the defaults: T not I, v and v* not all one */
        {"relu", 3, 2, 21, 200.0, 1}, {"erf", 2, 3, 22, 200.0, 1}, {"linear", 4, 3, 23, 50.0, 1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        compare_run(&cases[i]);
    test_fixed_point();
    test_reach_minimum();
    printf("worst: state %.3g, eps %.3g of its tolerance, eps increase %.3g (CVODE), "
           "%.3g (weights) of eps(0), |F|,|eps| at minimum %.3g\n",
           worst_state, worst_eps, worst_monotone, worst_wmono, worst_fixed);
    return TEST_SUMMARY();
}
