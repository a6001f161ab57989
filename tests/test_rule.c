/* test_rule.c: the training rules of rule.c against weight space.
 *
 * (b) Right-hand sides: a state (Q, R, v) is realised as weights W, W* in
 *     d = K + M (scm_weights_realise); the population gradient G = d eps/dW
 *     comes from scm_weights_grad (the kernels' chain rule in weight space,
 *     not the A, B algebra of flow.c) and d eps/dv from central differences
 *     of the loss in v (exact: eps is quadratic in v); the rule's
 *     weight-space direction (MATH.md section 8) is applied, mapped back to
 *     dQ, dR (and dv), and compared with scm_rule_rhs to 1e-10 relative.
 * (c) Trajectories: CVODE (scm_traj_run, rtol 1e-10) against the same
 *     weight-space directions integrated by GSL's rk8pd, mapped back at the
 *     recorded times; tolerance 1e-7 relative, as test_traj_weights.c
 *     argues for gd.  Along the GSL run the manifold (||w_k||^2 = d, or
 *     W W^T = d I) is kept by the projected direction alone, to GSL's
 *     tolerance: a check that the direction is tangent.
 * (a) Invariants along CVODE runs: Q_kk = 1 (normalised) and Q = I
 *     (stiefel) in every recorded state, eps non-increasing, and for
 *     two_layer ReLU at lr_v_ratio 1 the imbalance Q_kk - v_k^2 conserved
 *     (homogeneity), to 1e-7; at another ratio it is not (the test could
 *     fail).  The final eps of a two_layer run is the loss at the trained
 *     v.
 * Projections of a random init: normalised equals normalising the realised
 *     rows; stiefel gives Q = I and keeps R^T Q^-1 R (the projection of the
 *     teachers on the students' span, which a change of basis inside the
 *     span leaves alone). */
#include <gsl/gsl_eigen.h>
#include <gsl/gsl_errno.h>
#include <gsl/gsl_odeiv2.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scm/init.h"
#include "scm/traj.h"
#include "scm/weights.h"
#include "testutil.h"

static double worst_rhs, worst_traj, worst_tangent, worst_imb;

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

/* ------------------------------------------------------ weight-space directions */

/* d eps / dv by central differences of the loss at overlaps (Q, R); the
 * model's v is moved and restored (eps is quadratic in v: exact up to
 * round-off, ~1e-14 here). */
static scm_status dv_fd(scm_flow *fl, scm_model *m, const double *Q, const double *R, double *dv)
{
    const double h = 1e-2;
    for (int k = 0; k < m->K; k++) {
        double v0 = m->v[k], ep, em;
        m->v[k] = v0 + h;
        scm_status st = scm_flow_loss(fl, Q, R, &ep);
        m->v[k] = v0 - h;
        if (!st)
            st = scm_flow_loss(fl, Q, R, &em);
        m->v[k] = v0;
        if (st)
            return st;
        dv[k] = (ep - em) / (2.0 * h);
    }
    return SCM_OK;
}

typedef enum { R_GD, R_NORM, R_STIEFEL, R_TWO } rule_kind;

/* dW/dtau (K x d) of the rule at W (and dv/dtau for two_layer, v = m->v).
 * Q, R are scratch.  G is scratch (K x d). */
static scm_status wdir(rule_kind rk, double ratio, scm_flow *fl, scm_model *m, long d,
                       const double *W, const double *Ws, double *D, double *dv, double *G,
                       double *Q, double *R)
{
    const int K = m->K;
    scm_status st = scm_weights_grad(fl, d, W, Ws, NULL, G);
    if (st)
        return st;
    for (long i = 0; i < K * d; i++)
        D[i] = -(double)d * G[i];
    if (rk == R_NORM) {
        /* g_k minus its radial part */
        for (int k = 0; k < K; k++) {
            double gw = 0.0, ww = 0.0;
            for (long i = 0; i < d; i++) {
                gw += G[k * d + i] * W[k * d + i];
                ww += W[k * d + i] * W[k * d + i];
            }
            for (long i = 0; i < d; i++)
                D[k * d + i] += (double)d * gw / ww * W[k * d + i];
        }
    } else if (rk == R_STIEFEL) {
        /* -d G + X W with X = sym(G W^T) on the manifold (MATH.md section 8).
         * Off it (GSL's drift) that direction moves W W^T away
         * exponentially (d(Q - I) = Ps (Q - I) + (Q - I) Ps); the extension
         * X Q + Q X = 2 sym(G W^T) keeps W W^T constant, and is the rule
         * on the manifold.  Solved in Q's eigenbasis. */
        double *S = dalloc((long)K * K), *X = dalloc((long)K * K);
        gsl_matrix *A = gsl_matrix_alloc((size_t)K, (size_t)K),
                   *U = gsl_matrix_alloc((size_t)K, (size_t)K);
        gsl_vector *ev = gsl_vector_alloc((size_t)K);
        gsl_eigen_symmv_workspace *ws = gsl_eigen_symmv_alloc((size_t)K);
        for (int k = 0; k < K; k++)
            for (int l = 0; l < K; l++) {
                double a = 0.0, b = 0.0, q = 0.0;
                for (long i = 0; i < d; i++) {
                    a += G[k * d + i] * W[l * d + i];
                    b += G[l * d + i] * W[k * d + i];
                    q += W[k * d + i] * W[l * d + i];
                }
                S[k * K + l] = 0.5 * (a + b);
                gsl_matrix_set(A, (size_t)k, (size_t)l, q / (double)d);
            }
        gsl_eigen_symmv(A, ev, U, ws);
        /* X~ = U^T S U, X~_ij *= 2 / (lambda_i + lambda_j), X = U X~ U^T */
        for (int i = 0; i < K; i++)
            for (int j = 0; j < K; j++) {
                double s = 0.0;
                for (int k = 0; k < K; k++)
                    for (int l = 0; l < K; l++)
                        s += gsl_matrix_get(U, (size_t)k, (size_t)i) * S[k * K + l] *
                             gsl_matrix_get(U, (size_t)l, (size_t)j);
                X[i * K + j] = 2.0 * s / (gsl_vector_get(ev, (size_t)i) + gsl_vector_get(ev, (size_t)j));
            }
        for (int k = 0; k < K; k++)
            for (int l = 0; l < K; l++) {
                double s = 0.0;
                for (int i = 0; i < K; i++)
                    for (int j = 0; j < K; j++)
                        s += gsl_matrix_get(U, (size_t)k, (size_t)i) * X[i * K + j] *
                             gsl_matrix_get(U, (size_t)l, (size_t)j);
                S[k * K + l] = s;
            }
        for (int k = 0; k < K; k++)
            for (int l = 0; l < K; l++)
                for (long i = 0; i < d; i++)
                    D[k * d + i] += S[k * K + l] * W[l * d + i];
        gsl_eigen_symmv_free(ws);
        gsl_vector_free(ev);
        gsl_matrix_free(A);
        gsl_matrix_free(U);
        free(S);
        free(X);
    } else if (rk == R_TWO) {
        scm_weights_overlaps(m, d, W, Ws, Q, R);
        if ((st = dv_fd(fl, m, Q, R, dv)))
            return st;
        for (int k = 0; k < K; k++)
            dv[k] *= -ratio;
    }
    return SCM_OK;
}

/* dQ = (D W^T + W D^T) / d, dR = D Ws^T / d. */
static void map_back(const scm_model *m, long d, const double *W, const double *Ws,
                     const double *D, double *dQ, double *dR)
{
    const int K = m->K, M = m->M;
    for (int k = 0; k < K; k++) {
        for (int l = 0; l < K; l++) {
            double s = 0.0;
            for (long i = 0; i < d; i++)
                s += D[k * d + i] * W[l * d + i] + W[k * d + i] * D[l * d + i];
            dQ[k * K + l] = s / (double)d;
        }
        for (int n = 0; n < M; n++) {
            double s = 0.0;
            for (long i = 0; i < d; i++)
                s += D[k * d + i] * Ws[n * d + i];
            dR[k * M + n] = s / (double)d;
        }
    }
}

static const scm_rule *rule_of(rule_kind rk)
{
    return rk == R_GD ? &scm_rule_gd
         : rk == R_NORM ? &scm_rule_normalised
         : rk == R_STIEFEL ? &scm_rule_stiefel
                           : &scm_rule_two_layer;
}

/* ------------------------------------------------------ models and states */

static const double T_gen[9] = {1.2, 0.3, -0.2, 0.3, 0.8, 0.1, -0.2, 0.1, 1.5};
static const double v_gen[] = {1.2, 0.6, -0.5, 0.9, 0.7}, vs_gen[] = {0.8, 1.4, 1.1};

/* M = 3 with T general or I; v general or ones. */
static scm_model *make_model(const scm_activation *act, int K, int M, int general)
{
    scm_error err;
    double T[9];
    for (int a = 0; a < M; a++)
        for (int b = 0; b < M; b++)
            T[a * M + b] = T_gen[a * 3 + b];
    scm_model *m = general ? scm_model_alloc(K, M, act, T, v_gen, vs_gen, &err)
                           : scm_model_alloc(K, M, act, NULL, NULL, NULL, &err);
    CHECK(m != NULL, "model: %s", err.msg);
    return m;
}

/* A random state on the rule's manifold. */
static scm_status make_state(const scm_rule *r, const scm_model *m, unsigned long seed,
                             double sigma, double *Q, double *R)
{
    scm_error err;
    scm_status st = scm_init_random(m, 1000, sigma, seed, Q, R, &err);
    if (!st)
        st = scm_rule_project(r, m, Q, R, &err);
    CHECK(st == SCM_OK, "state: %s", err.msg);
    return st;
}

/* ------------------------------------------------------ (b) right-hand sides */

static void check_rhs(rule_kind rk, const scm_activation *act, int K, int M, int general,
                      unsigned long seed)
{
    const double ratio = 0.73;
    scm_rule r = *rule_of(rk);
    r.params.lr_v_ratio = ratio;
    scm_model *m = make_model(act, K, M, general);
    if (!m)
        return;
    const long d = K + M, n = r.dim(m);
    double *Q = dalloc(K * K), *R = dalloc(K * M), *W = dalloc(K * d), *Ws = dalloc(M * d),
           *D = dalloc(K * d), *G = dalloc(K * d), *dQ = dalloc(K * K), *dR = dalloc(K * M),
           *dv = dalloc(K), *Qs = dalloc(K * K), *Rs = dalloc(K * M), *y = dalloc(n),
           *yd = dalloc(n), *Qr = dalloc(K * K), *Rr = dalloc(K * M),
           *scratch = dalloc(r.scratch(m));
    scm_flow *fl = scm_flow_alloc(m);
    scm_error err;
    if (make_state(&r, m, seed, 0.8, Q, R))
        goto out;
    scm_status st = scm_weights_realise(m, Q, R, d, W, Ws, &err);
    CHECK(st == SCM_OK, "realise: %s", err.msg);
    r.pack(m, Q, R, y);
    if (r.has_v) /* a second layer away from the model's */
        for (int k = 0; k < K; k++)
            y[n - K + k] = 0.9 - 0.37 * k + 0.05 * (double)seed;
    /* the rule at the model's v ... */
    double eps;
    st = scm_rule_rhs(&r, fl, y, yd, &eps, scratch);
    CHECK(st == SCM_OK, "%s rhs: %s", r.name, scm_status_str(st));
    /* ... and in weight space at the same v */
    double *vsave = dalloc(K);
    memcpy(vsave, m->v, sizeof(double) * (size_t)K);
    if (r.has_v)
        memcpy(m->v, y + n - K, sizeof(double) * (size_t)K);
    st = wdir(rk, ratio, fl, m, d, W, Ws, D, dv, G, Qs, Rs);
    CHECK(st == SCM_OK, "weight-space direction: %s", scm_status_str(st));
    double eps_w;
    scm_weights_grad(fl, d, W, Ws, &eps_w, NULL);
    memcpy(m->v, vsave, sizeof(double) * (size_t)K);
    free(vsave);
    map_back(m, d, W, Ws, D, dQ, dR);
    r.unpack(m, yd, Qr, Rr);
    double scale = fmax(max_abs(dQ, K * K), max_abs(dR, K * M));
    double e;
    if (rk == R_STIEFEL) {
        /* the state is R; the weight-space dQ must vanish (tangent) */
        e = max_diff(dR, Rr, K * M);
        worst_tangent = fmax(worst_tangent, max_abs(dQ, K * K) / scale);
        CHECK(max_abs(dQ, K * K) <= 1e-12 * scale, "stiefel: weight-space dQ = %.3g",
              max_abs(dQ, K * K));
    } else {
        if (rk == R_NORM) {
            /* only off-diagonal Q is state; the diagonal must not move */
            for (int k = 0; k < K; k++) {
                worst_tangent = fmax(worst_tangent, fabs(dQ[k * K + k]) / scale);
                CHECK(fabs(dQ[k * K + k]) <= 1e-12 * scale, "normalised: weight-space dQ_%d%d = %.3g",
                      k, k, dQ[k * K + k]);
                Qr[k * K + k] = dQ[k * K + k];
            }
        }
        e = fmax(max_diff(dQ, Qr, K * K), max_diff(dR, Rr, K * M));
    }
    if (rk == R_TWO) {
        double ev = max_diff(dv, yd + n - K, K);
        scale = fmax(scale, max_abs(dv, K));
        e = fmax(e, ev);
        CHECK(ev <= 1e-10 * scale, "two_layer dv: diff %.3g", ev);
    }
    e /= scale;
    worst_rhs = fmax(worst_rhs, e);
    CHECK(e <= 1e-10, "%s %s K=%d M=%d%s seed %lu: rhs differs from weight space by %.3g",
          r.name, act->name, K, M, general ? " general" : "", seed, e);
    CHECK_CLOSE(eps, eps_w, 1e-12, 1e-14, "eps of the rule vs weight space");
out:
    scm_flow_free(fl);
    scm_model_free(m);
    free(Q), free(R), free(W), free(Ws), free(D), free(G), free(dQ), free(dR), free(dv);
    free(Qs), free(Rs), free(y), free(yd), free(Qr), free(Rr), free(scratch);
}

/* ------------------------------------------------------ (c) + (a) trajectories */

typedef struct {
    rule_kind rk;
    double ratio;
    scm_flow *fl;
    scm_model *m;
    long d;
    const double *Ws;
    double *G, *Q, *R;
    scm_status st;
} wsys;

/* y = (W, v) for two_layer, W otherwise. */
static int wsys_rhs(double t, const double *y, double *dydt, void *params)
{
    (void)t;
    wsys *w = params;
    const int K = w->m->K;
    if (w->rk == R_TWO)
        memcpy(w->m->v, y + K * w->d, sizeof(double) * (size_t)K);
    scm_status st = wdir(w->rk, w->ratio, w->fl, w->m, w->d, y, w->Ws, dydt, dydt + K * w->d,
                         w->G, w->Q, w->R);
    if (st) {
        w->st = st;
        return GSL_EBADFUNC;
    }
    return GSL_SUCCESS;
}

static void check_traj(rule_kind rk, const char *actname, int K, int M, int general,
                       unsigned long seed, double ratio, double t_max)
{
    const scm_activation *act = scm_activation_find(actname);
    scm_rule r = *rule_of(rk);
    r.params.lr_v_ratio = ratio;
    scm_model *m = make_model(act, K, M, general);
    if (!m)
        return;
    const long d = K + M, nw = K * d + (r.has_v ? K : 0);
    double *Q0 = dalloc(K * K), *R0 = dalloc(K * M), *Q = dalloc(K * K), *R = dalloc(K * M),
           *Ws = dalloc(M * d), *y = dalloc(nw), *G = dalloc(K * d), *vm = dalloc(K);
    memcpy(vm, m->v, sizeof(double) * (size_t)K);
    scm_error err;
    scm_traj_result res;
    memset(&res, 0, sizeof res);
    scm_flow *fl = scm_flow_alloc(m);
    gsl_odeiv2_driver *drv = NULL;
    if (make_state(&r, m, seed, 0.7, Q0, R0))
        goto out;
    scm_traj_opts o;
    scm_traj_opts_default(&o);
    o.rtol = 1e-10;
    o.atol = 1e-12;
    o.t_max = t_max;
    o.t_first = 0.1;
    o.n_out = 20;
    o.grad_stop = o.eps_stop = 0.0;
    scm_status st = scm_traj_run(m, &r, Q0, R0, &o, &res, &err);
    CHECK(st == SCM_OK && res.stop == SCM_STOP_T_MAX, "%s %s K=%d: traj: %s %s", r.name,
          actname, K, st ? err.msg : scm_stop_reason_str(res.stop), res.err.msg);
    if (st || res.stop != SCM_STOP_T_MAX)
        goto out;
    CHECK(res.has_v == r.has_v, "result has_v");
    /* (a) invariants along the record */
    double imb_drift = 0.0, inv = 0.0;
    for (long i = 0; i < res.n_out; i++) {
        const double *Qi = res.out_Q + i * K * K;
        for (int k = 0; k < K; k++)
            for (int l = 0; l < K; l++) {
                if (rk == R_STIEFEL || (rk == R_NORM && k == l))
                    inv = fmax(inv, fabs(Qi[k * K + l] - (k == l)));
            }
        if (i > 0)
            CHECK(res.out_eps[i] <= res.out_eps[i - 1] + 1e-12 * fabs(res.out_eps[i - 1]) +
                                        1e-11 * res.out_eps[0],
                  "%s %s: eps increases %.17g -> %.17g at t = %g", r.name, actname,
                  res.out_eps[i - 1], res.out_eps[i], res.out_t[i]);
        if (r.has_v)
            for (int k = 0; k < K; k++) {
                double a0 = res.out_Q[k * K + k] - res.out_v[k] * res.out_v[k];
                double ai = Qi[k * K + k] - res.out_v[i * K + k] * res.out_v[i * K + k];
                imb_drift = fmax(imb_drift, fabs(ai - a0));
            }
    }
    CHECK(inv == 0.0, "%s: manifold left by %.3g in the record", r.name, inv);
    if (r.has_v && act == &scm_act_relu) {
        double vmove = max_diff(res.v, res.out_v, K);
        if (ratio == 1.0) {
            worst_imb = fmax(worst_imb, imb_drift);
            CHECK(imb_drift <= 1e-7, "two_layer relu ratio 1: imbalance drifts by %.3g", imb_drift);
        } else {
            /* the invariant is specific to ratio 1: here it must move */
            CHECK(imb_drift > 1e-4, "two_layer relu ratio %g: imbalance drifts only %.3g", ratio,
                  imb_drift);
        }
        CHECK(vmove > 1e-3, "two_layer: v moved by %.3g only", vmove);
    }
    if (r.has_v) {
        /* the final loss is at the trained v */
        memcpy(m->v, res.v, sizeof(double) * (size_t)K);
        double e;
        scm_flow_loss(fl, res.Q, res.R, &e);
        CHECK_CLOSE(res.eps, e, 1e-12, 1e-15, "two_layer final eps at the trained v");
        memcpy(m->v, vm, sizeof(double) * (size_t)K);
    }
    /* (c) the weight-space ODE */
    st = scm_weights_realise(m, Q0, R0, d, y, Ws, &err);
    CHECK(st == SCM_OK, "realise: %s", err.msg);
    if (r.has_v)
        memcpy(y + K * d, m->v, sizeof(double) * (size_t)K);
    wsys ws = {rk, ratio, fl, m, d, Ws, G, Q, R, SCM_OK};
    gsl_odeiv2_system sys = {wsys_rhs, NULL, (size_t)nw, &ws};
    drv = gsl_odeiv2_driver_alloc_y_new(&sys, gsl_odeiv2_step_rk8pd, 1e-4, 1e-13, 1e-12);
    gsl_odeiv2_driver_set_nmax(drv, 100000);
    double t = 0.0, worst = 0.0, tan = 0.0;
    for (long i = 0; i < res.n_out; i++) {
        if (res.out_t[i] > t) {
            int gs = gsl_odeiv2_driver_apply(drv, &t, res.out_t[i], y);
            CHECK(gs == GSL_SUCCESS, "%s: GSL fails at t = %g (%d, %s)", r.name, t, gs,
                  scm_status_str(ws.st));
            if (gs != GSL_SUCCESS)
                break;
        }
        scm_weights_overlaps(m, d, y, Ws, Q, R);
        const double *Qc = res.out_Q + i * K * K, *Rc = res.out_R + i * K * M;
        double scale = fmax(max_abs(Qc, K * K), max_abs(Rc, K * M));
        double e = fmax(max_diff(Q, Qc, K * K), max_diff(R, Rc, K * M));
        if (r.has_v) {
            scale = fmax(scale, max_abs(res.out_v + i * K, K));
            e = fmax(e, max_diff(y + K * d, res.out_v + i * K, K));
        }
        worst = fmax(worst, e / scale);
        for (int k = 0; k < K; k++)
            for (int l = 0; l < K; l++)
                if (rk == R_STIEFEL || (rk == R_NORM && k == l))
                    tan = fmax(tan, fabs(Q[k * K + l] - (k == l)));
    }
    worst_traj = fmax(worst_traj, worst);
    CHECK(worst <= 1e-7, "%s %s K=%d M=%d seed %lu: CVODE vs weight space differ by %.3g",
          r.name, actname, K, M, seed, worst);
    CHECK(tan <= 1e-9, "%s: the weight-space run leaves the manifold by %.3g", r.name, tan);
    printf("%-10s %-6s K=%d M=%d%s ratio %g t_max %g: eps %.4g -> %.4g, CVODE vs weights %.2g, "
           "manifold drift (weights) %.2g, %ld steps\n",
           r.name, actname, K, M, general ? " general" : "", ratio, t_max, res.out_eps[0],
           res.eps, worst, tan, res.n_steps);
out:
    if (drv)
        gsl_odeiv2_driver_free(drv);
    scm_traj_result_free(&res);
    scm_flow_free(fl);
    scm_model_free(m);
    free(Q0), free(R0), free(Q), free(R), free(Ws), free(y), free(G), free(vm);
}

/* ------------------------------------------------------ projections of an init */

static void check_projection(const scm_activation *act, int K, int M, unsigned long seed)
{
    scm_model *m = make_model(act, K, M, 1);
    if (!m)
        return;
    const long d = K + M;
    double Q[25], R[15], Qn[25], Rn[15], Qw[25], Rw[15], W[40], Ws[24];
    scm_error err;
    scm_status st = scm_init_random(m, 1000, 0.6, seed, Q, R, &err);
    CHECK(st == SCM_OK, "init: %s", err.msg);
    /* normalised: the rows of a realisation, normalised */
    memcpy(Qn, Q, sizeof Q);
    memcpy(Rn, R, sizeof R);
    st = scm_rule_project(&scm_rule_normalised, m, Qn, Rn, &err);
    CHECK(st == SCM_OK, "project: %s", err.msg);
    scm_weights_realise(m, Q, R, d, W, Ws, &err);
    for (int k = 0; k < K; k++) {
        double s = 0.0;
        for (long i = 0; i < d; i++)
            s += W[k * d + i] * W[k * d + i];
        for (long i = 0; i < d; i++)
            W[k * d + i] *= sqrt((double)d / s);
    }
    scm_weights_overlaps(m, d, W, Ws, Qw, Rw);
    CHECK(max_diff(Qn, Qw, K * K) <= 1e-13 && max_diff(Rn, Rw, K * M) <= 1e-13,
          "normalised projection vs normalised rows: %.3g %.3g", max_diff(Qn, Qw, K * K),
          max_diff(Rn, Rw, K * M));
    /* stiefel: Q = I and R^T Q^-1 R kept; R^T Q^-1 R = Ws P Ws^T / d with P
     * the projector on the rows of W: computed from the orthonormalised
     * rows of a realisation by Gram-Schmidt (a different orthonormalisation) */
    memcpy(Qn, Q, sizeof Q);
    memcpy(Rn, R, sizeof R);
    st = scm_rule_project(&scm_rule_stiefel, m, Qn, Rn, &err);
    CHECK(st == SCM_OK, "project: %s", err.msg);
    double qi = 0.0;
    for (int k = 0; k < K; k++)
        for (int l = 0; l < K; l++)
            qi = fmax(qi, fabs(Qn[k * K + l] - (k == l)));
    CHECK(qi == 0.0, "stiefel projection: |Q - I| = %.3g", qi);
    scm_weights_realise(m, Q, R, d, W, Ws, &err);
    for (int k = 0; k < K; k++) {
        for (int l = 0; l < k; l++) {
            double s = 0.0;
            for (long i = 0; i < d; i++)
                s += W[k * d + i] * W[l * d + i];
            for (long i = 0; i < d; i++)
                W[k * d + i] -= s / (double)d * W[l * d + i];
        }
        double s = 0.0;
        for (long i = 0; i < d; i++)
            s += W[k * d + i] * W[k * d + i];
        for (long i = 0; i < d; i++)
            W[k * d + i] *= sqrt((double)d / s);
    }
    scm_weights_overlaps(m, d, W, Ws, Qw, Rw);
    double e = 0.0;
    for (int a = 0; a < M; a++)
        for (int b = 0; b < M; b++) {
            double x = 0.0, z = 0.0;
            for (int k = 0; k < K; k++) {
                x += Rn[k * M + a] * Rn[k * M + b];
                z += Rw[k * M + a] * Rw[k * M + b];
            }
            e = fmax(e, fabs(x - z));
        }
    CHECK(e <= 1e-12, "stiefel projection: R^T R differs from Gram-Schmidt's by %.3g", e);
    /* the polar factor is symmetric in the students: a permuted state gives
     * the permuted projection (Gram-Schmidt would not) */
    double Qp[25], Rp[15];
    for (int k = 0; k < K; k++) {
        int pk = K - 1 - k;
        for (int l = 0; l < K; l++)
            Qp[k * K + l] = Q[pk * K + (K - 1 - l)];
        for (int n = 0; n < M; n++)
            Rp[k * M + n] = R[pk * M + n];
    }
    st = scm_rule_project(&scm_rule_stiefel, m, Qp, Rp, &err);
    double pe = 0.0;
    for (int k = 0; k < K; k++)
        for (int n = 0; n < M; n++)
            pe = fmax(pe, fabs(Rp[k * M + n] - Rn[(K - 1 - k) * M + n]));
    CHECK(st == SCM_OK && pe <= 1e-13, "stiefel projection not permutation-equivariant: %.3g", pe);
    /* a rank-deficient W cannot be orthonormalised */
    double Qs[4] = {1, 1, 1, 1}, Rs[2] = {0.1, 0.1};
    scm_model *m2 = make_model(act, 2, 1, 0);
    CHECK(scm_rule_project(&scm_rule_stiefel, m2, Qs, Rs, &err) == SCM_EINVAL &&
              strstr(err.msg, "singular"),
          "singular Q: %s", err.msg);
    double Qz[4] = {0, 0, 0, 1}, Rz[2] = {0, 0.1};
    CHECK(scm_rule_project(&scm_rule_normalised, m2, Qz, Rz, &err) == SCM_EINVAL &&
              strstr(err.msg, "student 0"),
          "zero student: %s", err.msg);
    scm_model_free(m2);
    scm_model_free(m);
}

/* A given Q(0) off the manifold is refused by the integrator. */
static void check_off_manifold(void)
{
    scm_model *m = make_model(&scm_act_erf, 2, 1, 0);
    double Q[4] = {1, 0.2, 0.2, 1.1}, R[2] = {0.1, 0.2};
    scm_traj_opts o;
    scm_traj_opts_default(&o);
    scm_traj_result res;
    scm_error err;
    scm_status st = scm_traj_run(m, &scm_rule_normalised, Q, R, &o, &res, &err);
    CHECK(st == SCM_EINVAL && strstr(err.msg, "Q[1][1]"), "normalised off the sphere: %s",
          err.msg);
    Q[3] = 1.0;
    st = scm_traj_run(m, &scm_rule_stiefel, Q, R, &o, &res, &err);
    CHECK(st == SCM_EINVAL && strstr(err.msg, "Q[0][1]"), "stiefel off Q = I: %s", err.msg);
    scm_model_free(m);
}

int main(void)
{
    gsl_set_error_handler_off();
    static const rule_kind rks[] = {R_GD, R_NORM, R_STIEFEL, R_TWO};
    static const char *const acts[] = {"relu", "erf", "linear"};
    for (int ri = 0; ri < 4; ri++)
        for (int ai = 0; ai < 3; ai++)
            for (int general = 0; general < 2; general++)
                for (unsigned long seed = 1; seed <= 3; seed++) {
                    int K = 2 + (int)seed, M = 3 - general;
                    check_rhs(rks[ri], scm_activation_find(acts[ai]), K, M, general,
                              100 * seed + (unsigned long)(10 * ri + ai));
                }
    check_traj(R_NORM, "relu", 3, 2, 0, 11, 1.0, 100.0);
    check_traj(R_NORM, "erf", 3, 3, 1, 12, 1.0, 100.0);
    check_traj(R_STIEFEL, "relu", 3, 2, 0, 13, 1.0, 100.0);
    check_traj(R_STIEFEL, "erf", 2, 3, 1, 14, 1.0, 100.0);
    check_traj(R_TWO, "relu", 3, 2, 0, 15, 1.0, 100.0);
    check_traj(R_TWO, "relu", 3, 3, 1, 16, 1.0, 100.0);
    check_traj(R_TWO, "relu", 3, 2, 0, 15, 2.5, 100.0);
    check_traj(R_TWO, "erf", 3, 3, 1, 17, 0.6, 100.0);
    check_traj(R_TWO, "linear", 2, 2, 1, 18, 1.0, 20.0);
    for (unsigned long s = 1; s <= 3; s++) {
        check_projection(&scm_act_relu, 3, 2, 40 + s);
        check_projection(&scm_act_erf, 4, 3, 50 + s);
    }
    check_off_manifold();
    printf("worst: rhs vs weight space %.3g (relative), weight-space dQ off the tangent %.3g, "
           "CVODE vs weight-space ODE %.3g, ReLU imbalance drift %.3g\n",
           worst_rhs, worst_tangent, worst_traj, worst_imb);
    return TEST_SUMMARY();
}
