/* test_rule.c: the training rules (rule.h) against weight space.
 *  - right-hand side (ReLU, erf, linear): at random states, each rule's dy/dtau equals the
 *    weight-space update direction of MATH.md section 8 (the gradient
 *    G = d eps / dW of scm_weights_grad projected row by row off w_k for
 *    normalised, the Riemannian gradient G - sym(G W^T) W / d for stiefel,
 *    -d G and dv = -(eta_v/eta) d eps/dv for two_layer, with d eps/dv by
 *    central differences of the loss) mapped to (dQ, dR, dv), to 1e-9;
 *    the weight-space dQ_kk (normalised) and dQ (stiefel) vanish there;
 *  - retraction: the overlaps of the weight-space retraction (rows rescaled;
 *    polar W -> (W W^T/d)^(-1/2) W, computed with GSL's eigensolver on W)
 *    equal the rule's retract;
 *  - trajectories: CVODE on each rule against the weight-space ODE of the
 *    same direction integrated by GSL rk8pd (a different integrator on a
 *    different representation) at t = 4 and, through a plateau, t = 100,
 *    to 1e-7 (the Stiefel direction extended off the manifold so that the
 *    weight-space run keeps it: stiefel_x); on the record
 *    Q_kk = 1 exactly (normalised), Q = I exactly (stiefel), and for
 *    two_layer ReLU with eta_v = eta the imbalance Q_kk - v_k^2 is conserved
 *    to 1e-7, while with eta_v = 2 eta it moves by more than 1e-2;
 *  - configuration: every bad combination is a named error. */
#include <gsl/gsl_eigen.h>
#include <gsl/gsl_errno.h>
#include <gsl/gsl_odeiv2.h>
#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../bench/saad_solla.h"
#include "scm/config.h"
#include "scm/init.h"
#include "scm/traj.h"
#include "scm/twolayer.h"
#include "scm/weights.h"
#include "testutil.h"

static const scm_rule *const rules[] = {&scm_rule_gd, &scm_rule_normalised, &scm_rule_stiefel,
                                        &scm_rule_two_layer};
#define NRULES 4

/* The weight-space direction of rule r at (W, v): Wdot (K x d), vdot (K). */
typedef struct {
    const scm_rule *r;
    const scm_model *m;
    long d;
    const double *Ws;
    double ratio;
    scm_status st;
} wspace;

/* X of the Stiefel direction G - X W / d.  On the manifold (W W^T = d I)
 * X = sym(G W^T), the Riemannian gradient of MATH.md section 8.  Off it
 * (the integrator's drift in a weight-space run) that choice moves
 * Q = W W^T / d by dE/dtau = sym(P) E + E sym(P), E = Q - I, which grows
 * exponentially where sym(P) has positive eigenvalues (docs/rules.md); the
 * extension X Q + Q X = 2 sym(G W^T), solved in Q's eigenbasis, keeps
 * W W^T constant and equals the rule on the manifold. */
static void stiefel_x(int K, long d, const double *W, const double *G, double *X)
{
    gsl_matrix *A = gsl_matrix_alloc((size_t)K, (size_t)K), *U = gsl_matrix_alloc((size_t)K, (size_t)K);
    gsl_vector *L = gsl_vector_alloc((size_t)K);
    gsl_eigen_symmv_workspace *ws = gsl_eigen_symmv_alloc((size_t)K);
    double *S = malloc(sizeof *S * (size_t)(K * K)), *Y = malloc(sizeof *Y * (size_t)(K * K));
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
    gsl_eigen_symmv(A, L, U, ws);
    /* Y = U^T S U scaled by 2 / (lambda_i + lambda_j); X = U Y U^T */
    for (int i = 0; i < K; i++)
        for (int j = 0; j < K; j++) {
            double s = 0.0;
            for (int k = 0; k < K; k++)
                for (int l = 0; l < K; l++)
                    s += gsl_matrix_get(U, (size_t)k, (size_t)i) * S[k * K + l] *
                         gsl_matrix_get(U, (size_t)l, (size_t)j);
            Y[i * K + j] = 2.0 * s / (gsl_vector_get(L, (size_t)i) + gsl_vector_get(L, (size_t)j));
        }
    for (int k = 0; k < K; k++)
        for (int l = 0; l < K; l++) {
            double s = 0.0;
            for (int i = 0; i < K; i++)
                for (int j = 0; j < K; j++)
                    s += gsl_matrix_get(U, (size_t)k, (size_t)i) * Y[i * K + j] *
                         gsl_matrix_get(U, (size_t)l, (size_t)j);
            X[k * K + l] = s;
        }
    gsl_eigen_symmv_free(ws);
    gsl_vector_free(L);
    gsl_matrix_free(A);
    gsl_matrix_free(U);
    free(S);
    free(Y);
}

static scm_status w_direction(const wspace *w, const double *W, const double *v, double *Wdot,
                              double *vdot)
{
    const scm_model *m0 = w->m;
    const int K = m0->K;
    const long d = w->d;
    scm_model *m = scm_model_alloc(K, m0->M, m0->act, m0->T, v, m0->vs, NULL);
    scm_flow *fl = scm_flow_alloc(m);
    scm_status st = scm_weights_grad(fl, d, W, w->Ws, NULL, Wdot); /* G */
    if (!st && w->r == &scm_rule_normalised)
        for (int k = 0; k < K; k++) {
            const double *wk = W + k * d;
            double *gk = Wdot + k * d, gw = 0.0, ww = 0.0;
            for (long i = 0; i < d; i++) {
                gw += gk[i] * wk[i];
                ww += wk[i] * wk[i];
            }
            for (long i = 0; i < d; i++)
                gk[i] -= gw / ww * wk[i];
        }
    if (!st && w->r == &scm_rule_stiefel) {
        /* G - X W / d, with X = sym(G W^T) on the manifold */
        double *X = malloc(sizeof *X * (size_t)(K * K)), *Gc = malloc(sizeof *Gc * (size_t)(K * d));
        memcpy(Gc, Wdot, sizeof *Gc * (size_t)(K * d));
        stiefel_x(K, d, W, Gc, X);
        for (int k = 0; k < K; k++)
            for (long i = 0; i < d; i++) {
                double s = 0.0;
                for (int l = 0; l < K; l++)
                    s += X[k * K + l] * W[l * d + i];
                Wdot[k * d + i] = Gc[k * d + i] - s / (double)d;
            }
        free(X);
        free(Gc);
    }
    for (long i = 0; i < K * d; i++)
        Wdot[i] *= -(double)d;
    if (!st && vdot) {
        if (w->r == &scm_rule_two_layer) {
            /* d eps / dv by central differences of the loss */
            double *Q = malloc(sizeof *Q * (size_t)(K * K)), *R = malloc(sizeof *R * (size_t)(K * m0->M));
            scm_weights_overlaps(m, d, W, w->Ws, Q, R);
            for (int k = 0; k < K && !st; k++) {
                const double h = 1e-5, v0 = m->v[k];
                double ep, em;
                m->v[k] = v0 + h;
                st = scm_flow_loss(fl, Q, R, &ep);
                m->v[k] = v0 - h;
                if (!st)
                    st = scm_flow_loss(fl, Q, R, &em);
                m->v[k] = v0;
                vdot[k] = -w->ratio * (ep - em) / (2 * h);
            }
            free(Q);
            free(R);
        } else {
            memset(vdot, 0, sizeof *vdot * (size_t)K);
        }
    }
    scm_flow_free(fl);
    scm_model_free(m);
    return st;
}

static void overlaps_rate(const scm_model *m, long d, const double *W, const double *Wdot,
                          const double *Ws, double *dQ, double *dR)
{
    const int K = m->K, M = m->M;
    for (int k = 0; k < K; k++) {
        for (int l = 0; l < K; l++) {
            double s = 0.0;
            for (long i = 0; i < d; i++)
                s += Wdot[k * d + i] * W[l * d + i] + W[k * d + i] * Wdot[l * d + i];
            dQ[k * K + l] = s / (double)d;
        }
        for (int n = 0; n < M; n++) {
            double s = 0.0;
            for (long i = 0; i < d; i++)
                s += Wdot[k * d + i] * Ws[n * d + i];
            dR[k * M + n] = s / (double)d;
        }
    }
}

/* A random state of model m in weight space (d = K + M + 2), on the rule's
 * manifold. */
static void random_state(const scm_rule *r, const scm_model *m, gsl_rng *g, long d, double *W,
                         double *Ws)
{
    const int K = m->K, M = m->M;
    double *Q = malloc(sizeof *Q * (size_t)(K * K)), *R = malloc(sizeof *R * (size_t)(K * M));
    scm_init_random(m, d, 1.0, gsl_rng_get(g), Q, R, NULL);
    scm_weights_realise(m, Q, R, d, W, Ws, NULL);
    for (int k = 0; k < K; k++) /* move each student towards teacher k % M */
        for (long i = 0; i < d; i++)
            W[k * d + i] += 0.385 * (k % 2 ? -1 : 1) * Ws[(k % M) * d + i];
    scm_weights_overlaps(m, d, W, Ws, Q, R);
    if (r->retract) { /* back on the manifold: realise the retracted overlaps */
        r->retract(m, Q, R, NULL);
        scm_weights_realise(m, Q, R, d, W, Ws, NULL);
    }
    free(Q);
    free(R);
}

static void test_rhs(const scm_activation *act)
{
    gsl_rng *g = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(g, 3);
    const int K = 3, M = 2;
    const long d = K + M + 2;
    const double T[4] = {1.2, 0.3, 0.3, 0.8}, v[3] = {0.9, -0.7, 1.3}, vs[2] = {1.1, 0.6};
    for (int ir = 0; ir < NRULES; ir++) {
        const scm_rule *r = rules[ir];
        scm_model *m = scm_model_alloc(K, M, act, T, v, vs, NULL);
        scm_flow *fl = scm_flow_alloc(m);
        scm_rule_params p;
        scm_rule_params_default(&p);
        p.lr_v_ratio = 0.77;
        const long n = r->dim(m);
        double W[21], Ws[14], Wdot[21], dQ[9], dR[6], dv[3], Q[9], R[6];
        double *y = malloc(sizeof *y * (size_t)n), *yd = malloc(sizeof *yd * (size_t)n),
               *yw = malloc(sizeof *yw * (size_t)n), *sc = malloc(sizeof *sc * (size_t)r->scratch(m));
        for (int trial = 0; trial < 3; trial++) {
            random_state(r, m, g, d, W, Ws);
            scm_weights_overlaps(m, d, W, Ws, Q, R);
            const double vv[3] = {0.9 + 0.1 * trial, -0.7, 1.3 - 0.2 * trial};
            const double *vuse = r->trains_v ? vv : v;
            wspace w = {r, m, d, Ws, p.lr_v_ratio, SCM_OK};
            CHECK(w_direction(&w, W, vuse, Wdot, dv) == SCM_OK, "weight-space direction");
            overlaps_rate(m, d, W, Wdot, Ws, dQ, dR);
            r->pack(m, dQ, dR, dv, yw);
            r->pack(m, Q, R, vuse, y);
            double eps;
            CHECK(r->rhs(&p, fl, y, yd, &eps, sc) == SCM_OK, "%s rhs", r->name);
            double worst = 0.0, scale = 0.0;
            for (long i = 0; i < n; i++) {
                worst = fmax(worst, fabs(yd[i] - yw[i]));
                scale = fmax(scale, fabs(yw[i]));
            }
            CHECK(worst < 1e-9 * fmax(1.0, scale), "%s %s trial %d: rhs vs weight space %g (scale %g)",
                  act->name, r->name, trial, worst, scale);
            if (r == &scm_rule_normalised)
                for (int k = 0; k < K; k++)
                    CHECK(fabs(dQ[k * K + k]) < 1e-12 * fmax(1.0, scale),
                          "normalised: weight-space dQ_kk = %g", dQ[k * K + k]);
            if (r == &scm_rule_stiefel)
                for (int k = 0; k < K * K; k++)
                    CHECK(fabs(dQ[k]) < 1e-12 * fmax(1.0, scale), "stiefel: weight-space dQ = %g",
                          dQ[k]);
        }
        free(y);
        free(yd);
        free(yw);
        free(sc);
        scm_flow_free(fl);
        scm_model_free(m);
    }
    gsl_rng_free(g);
}

/* The overlaps of the weight-space retractions against rule->retract. */
static void test_retract(void)
{
    const int K = 3, M = 2;
    const long d = 9;
    scm_model *m = scm_model_alloc(K, M, &scm_act_relu, NULL, NULL, NULL, NULL);
    double Q[9], R[6], W[27], Ws[18], Qw[9], Rw[6];
    scm_init_random(m, d, 1.3, 17, Q, R, NULL);
    scm_weights_realise(m, Q, R, d, W, Ws, NULL);
    /* normalised: rows to norm sqrt(d) */
    double Wn[27];
    memcpy(Wn, W, sizeof W);
    for (int k = 0; k < K; k++) {
        double s = 0.0;
        for (long i = 0; i < d; i++)
            s += W[k * d + i] * W[k * d + i];
        for (long i = 0; i < d; i++)
            Wn[k * d + i] *= sqrt((double)d / s);
    }
    scm_weights_overlaps(m, d, Wn, Ws, Qw, Rw);
    double Qr[9], Rr[6];
    memcpy(Qr, Q, sizeof Q);
    memcpy(Rr, R, sizeof R);
    CHECK(scm_rule_normalised.retract(m, Qr, Rr, NULL) == SCM_OK, "normalised retract");
    double worst = 0.0;
    for (int i = 0; i < 9; i++)
        worst = fmax(worst, fabs(Qr[i] - Qw[i]));
    for (int i = 0; i < 6; i++)
        worst = fmax(worst, fabs(Rr[i] - Rw[i]));
    CHECK(worst < 1e-13, "normalised retraction vs weight space: %g", worst);
    /* stiefel: polar factor of W through the SVD-free route (W W^T)^(-1/2) W,
     * here with GSL's eigensolver on W W^T formed in weight space */
    gsl_matrix *A = gsl_matrix_alloc(3, 3), *V = gsl_matrix_alloc(3, 3);
    gsl_vector *L = gsl_vector_alloc(3);
    gsl_eigen_symmv_workspace *ws = gsl_eigen_symmv_alloc(3);
    for (int k = 0; k < K; k++)
        for (int l = 0; l < K; l++) {
            double s = 0.0;
            for (long i = 0; i < d; i++)
                s += W[k * d + i] * W[l * d + i];
            gsl_matrix_set(A, (size_t)k, (size_t)l, s / (double)d);
        }
    gsl_eigen_symmv(A, L, V, ws);
    double Wp[27] = {0};
    for (int k = 0; k < K; k++)
        for (int l = 0; l < K; l++) {
            double c = 0.0;
            for (int j = 0; j < K; j++)
                c += gsl_matrix_get(V, (size_t)k, (size_t)j) * gsl_matrix_get(V, (size_t)l, (size_t)j) /
                     sqrt(gsl_vector_get(L, (size_t)j));
            for (long i = 0; i < d; i++)
                Wp[k * d + i] += c * W[l * d + i];
        }
    scm_weights_overlaps(m, d, Wp, Ws, Qw, Rw);
    memcpy(Qr, Q, sizeof Q);
    memcpy(Rr, R, sizeof R);
    CHECK(scm_rule_stiefel.retract(m, Qr, Rr, NULL) == SCM_OK, "stiefel retract");
    worst = 0.0;
    for (int i = 0; i < 9; i++)
        worst = fmax(worst, fabs(Qr[i] - Qw[i]));
    for (int i = 0; i < 6; i++)
        worst = fmax(worst, fabs(Rr[i] - Rw[i]));
    CHECK(worst < 1e-12, "stiefel retraction vs weight space: %g", worst);
    /* a student of zero norm cannot be retracted */
    double Qz[9] = {0, 0, 0, 0, 1, 0, 0, 0, 1}, Rz[6] = {0};
    scm_error e;
    CHECK(scm_rule_normalised.retract(m, Qz, Rz, &e) == SCM_ESINGULAR && strstr(e.msg, "student 0"),
          "normalised: zero student");
    double Qs[9] = {1, 1, 0, 1, 1, 0, 0, 0, 1};
    CHECK(scm_rule_stiefel.retract(m, Qs, Rz, &e) == SCM_ESINGULAR && strstr(e.msg, "fewer than"),
          "stiefel: parallel students");
    gsl_eigen_symmv_free(ws);
    gsl_vector_free(L);
    gsl_matrix_free(A);
    gsl_matrix_free(V);
    scm_model_free(m);
}

/* ---- trajectories against the weight-space ODE ------------------------- */

typedef struct {
    wspace w;
    int K;
} wode;

static int wode_rhs(double t, const double *y, double *dydt, void *params)
{
    (void)t;
    wode *o = params;
    const long nW = (long)o->K * o->w.d;
    scm_status st = w_direction(&o->w, y, y + nW, dydt, dydt + nW);
    if (st) {
        o->w.st = st;
        return GSL_EBADFUNC;
    }
    return GSL_SUCCESS;
}

/* K <= 3, M <= 3.  t_max = 4 throughout; t_max = 100 takes ReLU K = 3,
 * M = 2 through its plateau, where the unextended weight-space Stiefel
 * direction left the manifold by 1e-3 (stiefel_x). */
static void test_trajectories(const scm_activation *act, int K, int M, double t_max)
{
    const long d = K + M;
    for (int ir = 0; ir < NRULES; ir++) {
        const scm_rule *r = rules[ir];
        const double v[3] = {1.0, 0.8, 1.2};
        scm_model *m = scm_model_alloc(K, M, act, NULL, v, NULL, NULL);
        double Q0[9], R0[9], W[18 + 3], Ws[18];
        scm_init_random(m, 200, 1.0, 5 + (unsigned long)ir, Q0, R0, NULL);
        scm_traj_opts o;
        scm_traj_opts_default(&o);
        o.rtol = 1e-10;
        o.atol = 1e-12;
        o.t_max = t_max;
        o.n_out = 20;
        o.eps_stop = o.grad_stop = 0.0;
        o.rule_params.lr_v_ratio = 1.0;
        scm_traj_result res;
        scm_error e;
        CHECK(scm_traj_run(m, r, Q0, R0, &o, &res, &e) == SCM_OK && res.stop == SCM_STOP_T_MAX,
              "%s %s: run %s", act->name, r->name, res.stop == SCM_STOP_FAILED ? res.err.msg : e.msg);
        if (res.stop != SCM_STOP_T_MAX)
            continue;
        /* the weight-space ODE from the retracted start (the record's t = 0) */
        CHECK(scm_weights_realise(m, res.out_Q, res.out_R, d, W, Ws, NULL) == SCM_OK, "realise");
        memcpy(W + K * d, v, sizeof v);
        wode od = {{r, m, d, Ws, 1.0, SCM_OK}, K};
        gsl_odeiv2_system sys = {wode_rhs, NULL, (size_t)(K * d + K), &od};
        gsl_odeiv2_driver *drv = gsl_odeiv2_driver_alloc_y_new(&sys, gsl_odeiv2_step_rk8pd, 1e-3,
                                                              1e-13, 1e-12);
        double t = 0.0;
        gsl_odeiv2_driver_set_nmax(drv, 200000);
        int gs = gsl_odeiv2_driver_apply(drv, &t, t_max, W);
        gsl_odeiv2_driver_free(drv);
        CHECK(gs == GSL_SUCCESS, "%s: weight-space ODE", r->name);
        double Qw[9], Rw[9];
        scm_weights_overlaps(m, d, W, Ws, Qw, Rw);
        double worst = 0.0, drift = 0.0;
        for (int i = 0; i < K * K; i++)
            worst = fmax(worst, fabs(Qw[i] - res.Q[i]));
        for (int i = 0; i < K * M; i++)
            worst = fmax(worst, fabs(Rw[i] - res.R[i]));
        for (int k = 0; r->trains_v && k < K; k++)
            worst = fmax(worst, fabs(W[K * d + k] - res.v[k]));
        /* the weight-space run keeps the manifold by its direction alone */
        for (int k = 0; k < K; k++)
            for (int l = 0; l < K; l++)
                if ((r == &scm_rule_normalised && k == l) || r == &scm_rule_stiefel)
                    drift = fmax(drift, fabs(Qw[k * K + l] - (k == l)));
        CHECK(worst < 1e-7, "%s %s K=%d M=%d: CVODE vs weight-space rk8pd at t = %g: %g",
              act->name, r->name, K, M, t_max, worst);
        CHECK(drift < 1e-9, "%s %s: the weight-space run leaves the manifold by %g", act->name,
              r->name, drift);
        /* invariants along the record */
        double inv = 0.0;
        for (long i = 0; i < res.n_out; i++) {
            const double *Q = res.out_Q + i * K * K, *vv = res.out_v + i * K;
            for (int k = 0; k < K; k++) {
                if (r == &scm_rule_normalised)
                    inv = fmax(inv, fabs(Q[k * K + k] - 1.0));
                if (r == &scm_rule_stiefel)
                    for (int l = 0; l < K; l++)
                        inv = fmax(inv, fabs(Q[k * K + l] - (k == l)));
                if (r == &scm_rule_two_layer && act == &scm_act_relu)
                    inv = fmax(inv, fabs((Q[k * K + k] - vv[k] * vv[k]) -
                                         (res.out_Q[k * K + k] - res.out_v[k] * res.out_v[k])));
            }
        }
        if (r == &scm_rule_normalised || r == &scm_rule_stiefel)
            CHECK(inv == 0.0, "%s: the manifold is exact in the state, deviation %g", r->name, inv);
        if (r == &scm_rule_two_layer && act == &scm_act_relu) {
            CHECK(inv < 1e-7, "two_layer relu: imbalance moved by %g", inv);
            /* and it is not conserved when eta_v != eta: the check can fail */
            scm_traj_result r2;
            o.rule_params.lr_v_ratio = 2.0;
            CHECK(scm_traj_run(m, r, Q0, R0, &o, &r2, &e) == SCM_OK, "ratio 2 run");
            double moved = 0.0;
            for (int k = 0; k < K; k++)
                moved = fmax(moved, fabs((r2.Q[k * K + k] - r2.v[k] * r2.v[k]) -
                                         (r2.out_Q[k * K + k] - r2.out_v[k] * r2.out_v[k])));
            CHECK(moved > 1e-2, "two_layer with eta_v = 2 eta: imbalance moved only %g", moved);
            scm_traj_result_free(&r2);
        }
        scm_traj_result_free(&res);
        scm_model_free(m);
    }
}

/* ---- sgd ---------------------------------------------------------------- */

/* The sgd rule's dy/dtau at (Q, R, v) with params p. */
static void sgd_eval(const scm_rule *r, const scm_model *m, const scm_rule_params *p,
                     const double *Q, const double *R, const double *v, double *yd)
{
    scm_flow *fl = scm_flow_alloc(m);
    const long n = r->dim(m);
    double *y = malloc(sizeof *y * (size_t)n), *sc = malloc(sizeof *sc * (size_t)r->scratch(m));
    r->pack(m, Q, R, v, y);
    scm_status st = r->rhs(p, fl, y, yd, NULL, sc);
    CHECK(st == SCM_OK, "%s rhs: %s", r->name, scm_status_str(st));
    free(y);
    free(sc);
    scm_flow_free(fl);
}

/* The Q part of (a - b) / h, unpacked (K x K). */
static void q_rate(const scm_model *m, const double *a, const double *b, double h, double *G)
{
    const long n = scm_rule_sgd.dim(m);
    double *dy = malloc(sizeof *dy * (size_t)n), *R = malloc(sizeof *R * (size_t)(m->K * m->M));
    for (long i = 0; i < n; i++)
        dy[i] = (a[i] - b[i]) / h;
    scm_rule_sgd.unpack(m, dy, G, R, NULL);
    free(dy);
    free(R);
}

/* eta = 0 is gd (lr_v_ratio 0) and two_layer (lr_v_ratio > 0), to the bit;
 * R and v never get an eta term. */
static void test_sgd_limit(const scm_activation *act)
{
    const int K = 3, M = 2;
    const double T[4] = {1.2, 0.3, 0.3, 0.8}, v[3] = {0.9, -0.7, 1.3}, vs[2] = {1.1, 0.6};
    const double Q[9] = {0.83, 0.127, -0.21, 0.127, 0.61, 0.043, -0.21, 0.043, 1.17};
    const double R[6] = {0.385, -0.12, 0.07, 0.455, -0.25, 0.19}, vt[3] = {0.8, 0.35, -1.1};
    scm_model *m = scm_model_alloc(K, M, act, T, v, vs, NULL);
    const long n = scm_rule_sgd.dim(m), ng = scm_rule_gd.dim(m);
    double a[32], b[32];
    scm_rule_params p, q;
    scm_rule_params_default(&p);
    scm_rule_params_default(&q);
    p.lr_v_ratio = 0.0;
    sgd_eval(&scm_rule_sgd, m, &p, Q, R, v, a);
    sgd_eval(&scm_rule_gd, m, &q, Q, R, NULL, b);
    CHECK(memcmp(a, b, sizeof(double) * (size_t)ng) == 0, "%s: sgd at eta 0 != gd", act->name);
    for (int k = 0; k < K; k++)
        CHECK(a[ng + k] == 0.0, "%s: sgd with lr_v_ratio 0 moves v", act->name);
    p.lr_v_ratio = q.lr_v_ratio = 0.77;
    sgd_eval(&scm_rule_sgd, m, &p, Q, R, vt, a);
    sgd_eval(&scm_rule_two_layer, m, &q, Q, R, vt, b);
    CHECK(memcmp(a, b, sizeof(double) * (size_t)n) == 0, "%s: sgd at eta 0 != two_layer",
          act->name);
    /* eta > 0: the R and v parts are unchanged */
    p.eta = 0.37;
    p.noise = 0.05;
    sgd_eval(&scm_rule_sgd, m, &p, Q, R, vt, a);
    const long nq = ng - K * M;
    CHECK(memcmp(a + nq, b + nq, sizeof(double) * (size_t)(n - nq)) == 0,
          "%s: the eta term reaches R or v", act->name);
    scm_model_free(m);
}

/* The whole erf right-hand side (eta, trained v) against the Saad-Solla
 * sums of bench/saad_solla.h (written independently, its I4 checked against
 * Monte Carlo in test_euler_baseline), T = I, no noise; and a CVODE run of
 * the benchmark case (erf K = M = 4, both layers, finite eta) against those
 * equations integrated by GSL rk8pd. */
typedef struct {
    ss_params p;
} ss_sys;

static int ss_gsl(double t, const double *y, double *dydt, void *params)
{
    (void)t;
    ss_rhs(&((ss_sys *)params)->p, y, dydt, NULL);
    return GSL_SUCCESS;
}

static void test_sgd_saad_solla(void)
{
    const int K = 3, M = 2;
    const double v[3] = {0.9, -0.7, 1.3}, vs[2] = {1.1, 0.6};
    const double Q[9] = {0.83, 0.127, -0.21, 0.127, 0.61, 0.043, -0.21, 0.043, 1.17};
    const double R[6] = {0.385, -0.12, 0.07, 0.455, -0.25, 0.19};
    scm_model *m = scm_model_alloc(K, M, &scm_act_erf, NULL, v, vs, NULL);
    scm_rule_params p;
    scm_rule_params_default(&p);
    p.eta = 0.73;
    p.lr_v_ratio = 0.45;
    double yd[32], Qd[9], Rd[6], vd[3];
    sgd_eval(&scm_rule_sgd, m, &p, Q, R, v, yd);
    scm_rule_sgd.unpack(m, yd, Qd, Rd, vd);
    ss_params sp = {K, M, p.eta, p.lr_v_ratio, vs};
    double y[18], f[18];
    memcpy(y, Q, sizeof Q);
    memcpy(y + 9, R, sizeof R);
    memcpy(y + 15, v, sizeof v);
    ss_rhs(&sp, y, f, NULL);
    double worst = 0.0, scale = 0.0;
    for (int i = 0; i < 9; i++)
        worst = fmax(worst, fabs(Qd[i] - f[i])), scale = fmax(scale, fabs(f[i]));
    for (int i = 0; i < 6; i++)
        worst = fmax(worst, fabs(Rd[i] - f[9 + i])), scale = fmax(scale, fabs(f[9 + i]));
    for (int i = 0; i < 3; i++)
        worst = fmax(worst, fabs(vd[i] - f[15 + i])), scale = fmax(scale, fabs(f[15 + i]));
    printf("sgd erf rhs vs Saad-Solla sums: %.3g (scale %.3g)\n", worst, scale);
    CHECK(worst < 1e-12 * scale, "sgd erf rhs vs Saad-Solla: %g (scale %g)", worst, scale);
    scm_model_free(m);

    /* the benchmark trajectory: erf K = M = 4, eta = 0.5, eta_v = eta */
    const int K4 = 4;
    scm_model *m4 = scm_model_alloc(K4, K4, &scm_act_erf, NULL, NULL, NULL, NULL);
    double Q0[16], R0[16];
    scm_init_random(m4, 1000, 0.4, 77, Q0, R0, NULL);
    scm_traj_opts o;
    scm_traj_opts_default(&o);
    o.rtol = 1e-10;
    o.atol = 1e-12;
    o.t_max = 300.0;
    o.n_out = 10;
    o.eps_stop = o.grad_stop = 0.0;
    o.rule_params.eta = 0.5;
    o.rule_params.lr_v_ratio = 1.0;
    scm_traj_result res;
    scm_error e;
    CHECK(scm_traj_run(m4, &scm_rule_sgd, Q0, R0, &o, &res, &e) == SCM_OK &&
              res.stop == SCM_STOP_T_MAX,
          "sgd K = M = 4 run: %s", res.stop == SCM_STOP_FAILED ? res.err.msg : e.msg);
    double ys[16 + 16 + 4], t = 0.0;
    const double ones[4] = {1, 1, 1, 1};
    memcpy(ys, Q0, sizeof Q0);
    memcpy(ys + 16, R0, sizeof R0);
    memcpy(ys + 32, ones, sizeof ones);
    ss_sys sys_p = {{K4, K4, 0.5, 1.0, ones}};
    gsl_odeiv2_system sys = {ss_gsl, NULL, 36, &sys_p};
    gsl_odeiv2_driver *drv =
        gsl_odeiv2_driver_alloc_y_new(&sys, gsl_odeiv2_step_rk8pd, 1e-3, 1e-13, 1e-12);
    gsl_odeiv2_driver_set_nmax(drv, 200000);
    worst = 0.0;
    for (long i = 0; i < res.n_out; i++) {
        if (res.out_t[i] > t)
            CHECK(gsl_odeiv2_driver_apply(drv, &t, res.out_t[i], ys) == GSL_SUCCESS, "GSL");
        for (int j = 0; j < 16; j++)
            worst = fmax(worst, fmax(fabs(ys[j] - res.out_Q[i * 16 + j]),
                                     fabs(ys[16 + j] - res.out_R[i * 16 + j])));
        for (int k = 0; k < 4; k++)
            worst = fmax(worst, fabs(ys[32 + k] - res.out_v[i * 4 + k]));
    }
    gsl_odeiv2_driver_free(drv);
    printf("sgd erf K = M = 4, eta 0.5, both layers, t = 300: eps %.4g -> %.4g, CVODE vs "
           "Saad-Solla rk8pd %.3g, %ld steps\n",
           res.out_eps[0], res.eps, worst, res.n_steps);
    CHECK(worst < 1e-7, "sgd benchmark trajectory vs Saad-Solla rk8pd: %g", worst);
    scm_traj_result_free(&res);
    scm_model_free(m4);
}

/* The eta and noise terms against quantities computed another way:
 * linear: delta_k = v_k (phi - phi* - xi), so G = v v^T (2 eps + sigma^2)
 * exactly; the noise term sigma^2 v_k v_l E[g'(a) g'(b)] against the
 * closed forms 1/4 + asin(rho)/(2 pi) (ReLU, an orthant probability) and
 * (2/pi) / sqrt((1 + a)(1 + b) - c^2) (erf); ReLU's eta term against
 * seeded Monte Carlo of E[delta_k delta_l] (1e6 samples, 5 standard
 * errors). */
static void test_sgd_terms(void)
{
    const int K = 3, M = 2, N = 5;
    const double v[3] = {0.9, -0.7, 1.3}, vs[2] = {1.1, 0.6}, T[4] = {1.2, 0.3, 0.3, 0.8};
    const double Q[9] = {0.83, 0.127, -0.21, 0.127, 0.61, 0.043, -0.21, 0.043, 1.17};
    const double R[6] = {0.385, -0.12, 0.07, 0.455, -0.25, 0.19};
    const double eta = 0.31, s2 = 0.17;
    double a[32], b[32], G[9];
    scm_rule_params p;
    scm_rule_params_default(&p);
    p.lr_v_ratio = 0.0;
    for (int ia = 0; ia < 3; ia++) {
        const scm_activation *act = ia == 0 ? &scm_act_linear : ia == 1 ? &scm_act_relu : &scm_act_erf;
        scm_model *m = scm_model_alloc(K, M, act, T, v, vs, NULL);
        /* noise: at eta, with and without sigma^2 */
        p.eta = eta;
        p.noise = s2;
        sgd_eval(&scm_rule_sgd, m, &p, Q, R, v, a);
        p.noise = 0.0;
        sgd_eval(&scm_rule_sgd, m, &p, Q, R, v, b);
        q_rate(m, a, b, eta * s2, G);
        double worst = 0.0;
        for (int k = 0; k < K; k++)
            for (int l = 0; l < K; l++) {
                const double qa = Q[k * K + k], qb = Q[l * K + l], c = Q[k * K + l];
                const double e = act == &scm_act_linear ? 1.0
                                 : act == &scm_act_relu
                                     ? 0.25 + asin(c / sqrt(qa * qb)) / (2.0 * M_PI)
                                     : (2.0 / M_PI) / sqrt((1.0 + qa) * (1.0 + qb) - c * c);
                worst = fmax(worst, fabs(G[k * K + l] - v[k] * v[l] * e));
            }
        CHECK(worst < 1e-9, "%s: noise term vs closed form: %g", act->name, worst);
        if (act == &scm_act_linear) {
            /* the whole eta term: v v^T 2 eps */
            p.eta = 0.0;
            sgd_eval(&scm_rule_sgd, m, &p, Q, R, v, a);
            q_rate(m, b, a, eta, G);
            scm_flow *fl = scm_flow_alloc(m);
            double eps;
            scm_flow_loss(fl, Q, R, &eps);
            scm_flow_free(fl);
            worst = 0.0;
            for (int i = 0; i < 9; i++)
                worst = fmax(worst, fabs(G[i] - v[i / 3] * v[i % 3] * 2.0 * eps));
            CHECK(worst < 1e-10, "linear: eta term vs v v^T 2 eps: %g", worst);
        }
        if (act == &scm_act_relu) {
            p.eta = 0.0;
            sgd_eval(&scm_rule_sgd, m, &p, Q, R, v, a);
            q_rate(m, b, a, eta, G);
            /* Monte Carlo of E[delta_k delta_l], the joint law of (lambda, nu) */
            double C[25], L[25] = {0};
            for (int i = 0; i < N; i++)
                for (int j = 0; j < N; j++)
                    C[i * N + j] = i < K && j < K ? Q[i * K + j]
                                   : i < K        ? R[i * M + j - K]
                                   : j < K        ? R[j * M + i - K]
                                                  : T[(i - K) * M + j - K];
            for (int i = 0; i < N; i++)
                for (int j = 0; j <= i; j++) {
                    double s = C[i * N + j];
                    for (int k = 0; k < j; k++)
                        s -= L[i * N + k] * L[j * N + k];
                    L[i * N + j] = i == j ? sqrt(s) : s / L[j * N + j];
                }
            gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
            gsl_rng_set(rng, 909);
            const long S = 1000000;
            double s1[9] = {0}, sq[9] = {0};
            for (long smp = 0; smp < S; smp++) {
                double z[5], x[5], err = 0.0;
                for (int i = 0; i < N; i++)
                    z[i] = gsl_ran_gaussian_ziggurat(rng, 1.0);
                for (int i = 0; i < N; i++) {
                    x[i] = 0.0;
                    for (int j = 0; j <= i; j++)
                        x[i] += L[i * N + j] * z[j];
                }
                for (int k = 0; k < K; k++)
                    err += v[k] * fmax(x[k], 0.0);
                for (int n = 0; n < M; n++)
                    err -= vs[n] * fmax(x[K + n], 0.0);
                for (int k = 0; k < K; k++)
                    for (int l = 0; l < K; l++) {
                        const double f = (x[k] > 0 && x[l] > 0) ? v[k] * v[l] * err * err : 0.0;
                        s1[k * K + l] += f;
                        sq[k * K + l] += f * f;
                    }
            }
            gsl_rng_free(rng);
            double zmax = 0.0;
            for (int i = 0; i < 9; i++) {
                const double mean = s1[i] / S, se = sqrt((sq[i] / S - mean * mean) / S);
                zmax = fmax(zmax, fabs(G[i] - mean) / se);
                CHECK(fabs(G[i] - mean) < 5.0 * se, "relu eta term [%d]: %.8g vs MC %.8g +- %.2g",
                      i, G[i], mean, se);
            }
            printf("sgd relu eta term vs Monte Carlo (1e6): worst %.2f standard errors\n", zmax);
        }
        scm_model_free(m);
    }
}

/* eta -> 0: the sgd trajectory tends to gd's, linearly in eta. */
static void test_sgd_eta_to_zero(void)
{
    const int K = 3, M = 3;
    scm_model *m = scm_model_alloc(K, M, &scm_act_relu, NULL, NULL, NULL, NULL);
    double Q0[9], R0[9];
    scm_init_random(m, 1000, 0.7, 31, Q0, R0, NULL);
    scm_traj_opts o;
    scm_traj_opts_default(&o);
    o.rtol = 1e-11;
    o.atol = 1e-13;
    o.t_max = 20.0;
    o.record = 0;
    o.eps_stop = o.grad_stop = 0.0;
    scm_traj_result g, s;
    scm_error e;
    CHECK(scm_traj_run(m, &scm_rule_gd, Q0, R0, &o, &g, &e) == SCM_OK, "gd run");
    double diff[3];
    const double etas[3] = {4e-3, 2e-3, 1e-3};
    o.rule_params.lr_v_ratio = 0.0;
    for (int i = 0; i < 3; i++) {
        o.rule_params.eta = etas[i];
        CHECK(scm_traj_run(m, &scm_rule_sgd, Q0, R0, &o, &s, &e) == SCM_OK &&
                  s.stop == SCM_STOP_T_MAX,
              "sgd run");
        diff[i] = 0.0;
        for (int j = 0; j < 9; j++)
            diff[i] = fmax(diff[i], fmax(fabs(s.Q[j] - g.Q[j]), fabs(s.R[j] - g.R[j])));
        scm_traj_result_free(&s);
    }
    printf("sgd -> gd at t = 20: |state difference| %.3g, %.3g, %.3g at eta = 4e-3, 2e-3, 1e-3\n",
           diff[0], diff[1], diff[2]);
    CHECK(diff[2] > 1e-6 && fabs(diff[0] / diff[1] - 2.0) < 0.05 &&
              fabs(diff[1] / diff[2] - 2.0) < 0.05,
          "sgd -> gd not linear in eta: %g %g %g", diff[0], diff[1], diff[2]);
    scm_traj_result_free(&g);
    scm_model_free(m);
}

/* ---- configuration ------------------------------------------------------ */

static void expect_config_error(const char *text, const char *want)
{
    scm_config *c = NULL;
    scm_error e;
    scm_error_clear(&e);
    scm_status st = scm_config_parse(text, "cfg", NULL, 0, &c, &e);
    CHECK(st == SCM_EINVAL && strstr(e.msg, want), "config %s: status %d, message '%s', want '%s'",
          text, st, e.msg, want);
    scm_config_free(c);
}

static void test_config(void)
{
    expect_config_error("{\"model\":{\"K\":2,\"M\":2},\"rule\":\"sgdx\"}", "'rule' must be one of");
    expect_config_error("{\"model\":{\"K\":2,\"M\":2},\"rule_params\":{\"lr_v_ratio\":2}}",
                        "applies to rules two_layer and sgd only");
    expect_config_error(
        "{\"model\":{\"K\":2,\"M\":2},\"rule\":\"two_layer\",\"rule_params\":{\"lr_v_ratio\":0}}",
        "lr_v_ratio must be > 0");
    expect_config_error(
        "{\"model\":{\"K\":2,\"M\":2},\"rule\":\"two_layer\",\"rule_params\":{\"eta\":1}}",
        "'rule_params.eta' applies to rule sgd only");
    expect_config_error("{\"model\":{\"K\":2,\"M\":2},\"rule\":\"normalised\",\"init\":{\"scale\":0.1}}",
                        "'init.scale' = 0.1 has no effect with rule normalised");
    expect_config_error("{\"model\":{\"K\":4,\"M\":2},\"rule\":\"stiefel\",\"init\":{\"d\":3}}",
                        "rule stiefel needs K = 4 orthonormal students");
    expect_config_error("{\"model\":{\"K\":2,\"M\":2},\"rule\":3}", "'rule' must be a string");
    expect_config_error("{\"model\":{\"K\":2,\"M\":2},\"rule\":\"sgd\"}",
                        "rule sgd needs 'rule_params.eta'");
    expect_config_error("{\"model\":{\"K\":2,\"M\":2},\"rule_params\":{\"eta\":0.1}}",
                        "'rule_params.eta' applies to rule sgd only");
    expect_config_error(
        "{\"model\":{\"K\":2,\"M\":2},\"rule\":\"two_layer\",\"rule_params\":{\"noise\":0.1}}",
        "'rule_params.noise' applies to rule sgd only");
    expect_config_error("{\"model\":{\"K\":2,\"M\":2},\"rule\":\"sgd\",\"rule_params\":{\"eta\":-1}}",
                        "rule_params.eta must be >= 0, got -1");
    expect_config_error(
        "{\"model\":{\"K\":2,\"M\":2},\"rule\":\"sgd\",\"rule_params\":{\"eta\":1,\"noise\":-0.5}}",
        "rule_params.noise must be >= 0, got -0.5");
    expect_config_error(
        "{\"model\":{\"K\":2,\"M\":2},\"rule\":\"sgd\",\"rule_params\":{\"eta\":1,\"lr_v_ratio\":-1}}",
        "rule_params.lr_v_ratio must be >= 0 for rule sgd");
    expect_config_error(
        "{\"model\":{\"K\":2,\"M\":2},\"rule\":\"sgd\",\"rule_params\":{\"eta\":\"big\"}}",
        "'rule_params.eta' must be a finite number");
    scm_config *c = NULL;
    CHECK(scm_config_parse("{\"model\":{\"K\":2,\"M\":2},\"rule\":\"two_layer\",\"rule_params\":{"
                           "\"lr_v_ratio\":0.5}}",
                           "cfg", NULL, 0, &c, NULL) == SCM_OK &&
              c->rule == &scm_rule_two_layer && c->traj.rule_params.lr_v_ratio == 0.5,
          "a good two_layer config");
    scm_config_free(c);
}

int main(void)
{
    gsl_set_error_handler_off();
    test_rhs(&scm_act_relu);
    test_rhs(&scm_act_erf);
    test_rhs(&scm_act_linear);
    test_retract();
    test_trajectories(&scm_act_relu, 3, 3, 4.0);
    test_trajectories(&scm_act_erf, 3, 3, 4.0);
    test_trajectories(&scm_act_linear, 3, 3, 4.0);
    test_trajectories(&scm_act_relu, 3, 2, 100.0);
    test_trajectories(&scm_act_erf, 3, 2, 100.0);
    test_sgd_limit(&scm_act_relu);
    test_sgd_limit(&scm_act_erf);
    test_sgd_limit(&scm_act_linear);
    test_sgd_saad_solla();
    test_sgd_terms();
    test_sgd_eta_to_zero();
    test_config();
    {
        /* a good sgd config: defaults lr_v_ratio 0 (v fixed), noise 0 */
        scm_config *c = NULL;
        CHECK(scm_config_parse("{\"model\":{\"K\":2,\"M\":2},\"rule\":\"sgd\",\"rule_params\":{"
                               "\"eta\":0.5}}",
                               "cfg", NULL, 0, &c, NULL) == SCM_OK &&
                  c->rule == &scm_rule_sgd && c->traj.rule_params.eta == 0.5 &&
                  c->traj.rule_params.lr_v_ratio == 0.0 && c->traj.rule_params.noise == 0.0,
              "a good sgd config");
        scm_config_free(c);
    }
    return TEST_SUMMARY();
}
