/* test_staircase.c: the staircase module (staircase.h).
 *
 *  1. a synthetic loss curve with two logistic steps (plateaus 0.3 and 0.1,
 *     then 0.05): the plateaus, their losses, and escape times equal to the
 *     analytic crossing of |d eps / d tau| = rate_tol * eps;
 *  2. the fit against exact lines and its standard error against noisy ones;
 *  3. the known answer: K = M = 2 erf from small initialisations (alpha
 *     1e-3 .. 1e-7, d = 1000): one plateau at the symmetric fixed point
 *     (polished independently, eps = 0.0116108), and escape times whose
 *     slope against log(1 / alpha) is 1 / lambda, lambda the largest real
 *     part of the (F_Q, F_R) Jacobian there, and also -d times the
 *     smallest eigenvalue of the weight-space Hessian;
 *  4. the origin of two-layer training (scm_stair_origin): its loss against
 *     the teachers' moments, its escape rate against the Stein form (erf,
 *     linear), a search on the sphere with the arc-cosine kernel (ReLU),
 *     random directions (ReLU, a general T) and the +-ReLU pair, whose
 *     target is linear (rate |a| / 2);
 *  5. error paths;
 *  6. the study of `scm staircase` (scm_stair_study_run) at K = M = 2 erf,
 *     three alphas: its first run against scm_traj_run with the documented
 *     settings, its plateaus against scm_stair_detect and scm_stair_match on
 *     its curves, its fixed points against scm_fplist_find, its fit against
 *     scm_stair_fit of the escape times, its JSON against its rows, the
 *     polish variant (v* != 1) against scm_stair_polish of a plateau's
 *     middle state, and its bad inputs. */
#include <gsl/gsl_eigen.h>
#include <gsl/gsl_errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scm/fixedpoint.h"
#include "scm/fplist.h"
#include "scm/init.h"
#include "scm/split.h"
#include "scm/staircase.h"
#include "scm/traj.h"
#include "testutil.h"

static double synth(double t, double *deriv)
{
    /* 0.05 + 0.2 s((50 - t) / 2) + 0.05 s((150 - t) / 3), s the logistic */
    double a = exp((t - 50.0) / 2.0), b = exp((t - 150.0) / 3.0);
    double e = 0.05 + 0.2 / (1.0 + a) + 0.05 / (1.0 + b);
    *deriv = -0.2 * a / (2.0 * (1.0 + a) * (1.0 + a)) - 0.05 * b / (3.0 * (1.0 + b) * (1.0 + b));
    return e;
}

static void test_synthetic(void)
{
    const long n = 4001;
    double *t = calloc(n, sizeof *t), *e = calloc(n, sizeof *e), dd;
    for (long i = 0; i < n; i++) {
        t[i] = 0.1 * (double)i;
        e[i] = synth(t[i], &dd);
    }
    scm_stair_opts o;
    scm_stair_opts_default(&o);
    scm_stair_plateau pl[8];
    int np;
    scm_error err;
    CHECK(scm_stair_detect(t, e, n, &o, pl, 8, &np, &err) == SCM_OK, "detect: %s", err.msg);
    CHECK(np == 3, "synthetic: %d plateaus, want 3", np);
    const double want_eps[3] = {0.3, 0.1, 0.05};
    for (int k = 0; k < np && k < 3; k++)
        CHECK_CLOSE(pl[k].eps, want_eps[k], 1e-3, 0.0, "synthetic plateau loss");
    /* escape: first crossing of |eps'| = rate_tol eps after the plateau starts,
     * found by bisection on the analytic derivative */
    for (int k = 0; k < 2 && k < np; k++) {
        double lo = pl[k].t_start + 1.0, hi = k ? 150.0 : 50.0;
        for (int it = 0; it < 100; it++) {
            double mid = 0.5 * (lo + hi), em = synth(mid, &dd);
            if (fabs(dd) <= o.rate_tol * em)
                lo = mid;
            else
                hi = mid;
        }
        /* the finite-difference rate on a grid of 0.1, log-interpolated: the
         * logistic's rate is exponential to O(e^(-x)) here, the midpoint rule
         * exact to O(h^2) */
        CHECK(fabs(pl[k].t_end - lo) <= 0.01, "escape time %g, analytic crossing %g", pl[k].t_end,
              lo);
    }
    free(t);
    free(e);
}

static void test_fit(void)
{
    double x[5] = {1, 2, 3.5, 4, 7}, y[5], s, c, se;
    for (int i = 0; i < 5; i++)
        y[i] = 2.385 * x[i] - 0.5;
    CHECK(scm_stair_fit(x, y, 5, &s, &c, &se) == SCM_OK, "fit");
    CHECK_CLOSE(s, 2.385, 1e-13, 0.0, "slope of an exact line");
    CHECK_CLOSE(c, -0.5, 1e-12, 1e-13, "intercept of an exact line");
    CHECK(se < 1e-12, "zero residual, se %g", se);
    /* residuals +-0.1 alternating on 4 points x = 0..3: se = sqrt(ss / 2 / sxx) */
    double x2[4] = {0, 1, 2, 3}, y2[4] = {0.1, 0.9, 2.1, 2.9};
    scm_stair_fit(x2, y2, 4, &s, &c, &se);
    double ss = 0.0;
    for (int i = 0; i < 4; i++)
        ss += pow(y2[i] - (s * x2[i] + c), 2);
    CHECK_CLOSE(se, sqrt(ss / 2.0 / 5.0), 1e-12, 0.0, "slope standard error");
    CHECK(scm_stair_fit(x2, y2, 2, &s, &c, &se) == SCM_EINVAL, "two points");
    double x3[3] = {1, 1, 1};
    CHECK(scm_stair_fit(x3, y2, 3, &s, &c, &se) == SCM_EINVAL, "equal x");
}

static void test_known_answer(void)
{
    scm_error err;
    scm_model *m = scm_model_alloc(2, 2, &scm_act_erf, NULL, NULL, NULL, &err);
    scm_flow *fl = scm_flow_alloc(m);
    /* the symmetric plateau: both students equal, in the teacher span */
    const double q = 1.0 / 3.0, r = 1.0 / sqrt(6.0);
    double Q[4] = {q, q, q, q}, R[4] = {r, r, r, r}, res, eps_fp;
    CHECK(scm_fp_polish(fl, Q, R, 100, 1e-14, &res, &err) == SCM_OK, "polish: res %g", res);
    scm_flow_loss(fl, Q, R, &eps_fp);
    double re_max, re_min;
    CHECK(scm_fp_full_stability(fl, Q, R, &re_max, &re_min) == SCM_OK, "Jacobian");
    const long dh = 5;
    double ev[10];
    scm_stab_counts c;
    scm_stab_zero_modes z;
    int closed;
    CHECK(scm_split_hessian(m, Q, R, dh, 1e-6, ev, &c, &z, &closed, &err) == SCM_OK, "Hessian: %s",
          err.msg);
    const double lam_h = -(double)dh * ev[0];
    CHECK_CLOSE(lam_h, re_max, 1e-4, 0.0, "unstable rate: Hessian vs (F_Q, F_R) Jacobian");

    const double alphas[5] = {1e-3, 1e-4, 1e-5, 1e-6, 1e-7};
    double x[5], y[5];
    int ny = 0;
    for (int a = 0; a < 5; a++) {
        double Q0[4], R0[4];
        scm_init_random(m, 1000, alphas[a], 7, Q0, R0, &err);
        scm_traj_opts o;
        scm_traj_opts_default(&o);
        o.t_max = 3000;
        o.t_first = 1e-2;
        o.n_out = 3000;
        o.eps_stop = 1e-10;
        o.grad_stop = 0;
        /* below the symmetry-breaking part ~ alpha / sqrt d (docs/staircase.md) */
        o.atol = 1e-2 * alphas[a] * alphas[a] / 1000.0;
        o.rtol = 1e-10;
        scm_traj_result tr;
        CHECK(scm_traj_run(m, &scm_rule_gd, Q0, R0, &o, &tr, &err) == SCM_OK, "run: %s", err.msg);
        scm_stair_opts so;
        scm_stair_opts_default(&so);
        scm_stair_plateau pl[8];
        int np;
        scm_stair_detect(tr.out_t, tr.out_eps, tr.n_out, &so, pl, 8, &np, &err);
        /* the plateau (the run stops at eps_stop, in the last descent) */
        int k = scm_stair_match(np ? pl[0].eps : NAN, &eps_fp, 1, 1e-6);
        CHECK(np >= 1 && k == 0, "alpha %g: %d plateaus, first at %g, fixed point %g", alphas[a],
              np, np ? pl[0].eps : NAN, eps_fp);
        if (np >= 1 && k == 0) {
            x[ny] = log(1.0 / alphas[a]);
            y[ny++] = pl[0].t_end;
        }
        scm_traj_result_free(&tr);
    }
    double s, c0, se;
    CHECK(scm_stair_fit(x, y, ny, &s, &c0, &se) == SCM_OK, "fit");
    printf("K = M = 2 erf: escape-time slope %.5g +- %.2g, 1 / lambda = %.5g\n", s, se,
           1.0 / re_max);
    CHECK_CLOSE(s, 1.0 / re_max, 1e-3, 0.0, "slope of escape times vs log(1/alpha) = 1/lambda");
    scm_flow_free(fl);
    scm_model_free(m);
}

/* scm_stair_polish against two other computations: (a) gd, K = M = 2 erf,
 * from a state near the symmetric plateau with the students apart: the
 * fixed point scm_fp_polish finds and its (F_Q, F_R) Jacobian rate;
 * (b) two_layer, K = 2, M = 2 erf, both students and both v equal: the
 * point is the K = 1 network with v = 2 v_1, so its loss is the K = 1
 * two-layer minimum, reached here by integrating the K = 1 flow. */
static void test_polish(void)
{
    scm_error err;
    scm_rule_params rp;
    scm_rule_params_default(&rp);
    scm_model *m = scm_model_alloc(2, 2, &scm_act_erf, NULL, NULL, NULL, &err);
    scm_flow *fl = scm_flow_alloc(m);
    const double q = 1.0 / 3.0, r = 1.0 / sqrt(6.0);
    double Q[4] = {q, q, q, q}, R[4] = {r, r, r, r}, res, eps_fp, re_max, re_min;
    CHECK(scm_fp_polish(fl, Q, R, 100, 1e-14, &res, &err) == SCM_OK, "fp polish");
    scm_flow_loss(fl, Q, R, &eps_fp);
    CHECK(scm_fp_full_stability(fl, Q, R, &re_max, &re_min) == SCM_OK, "Jacobian");
    /* students apart by ~1e-3 in weight space (a valid Gram: w_2 = w_1 + u) */
    double Q1[4] = {Q[0], Q[0] + 1e-3 * R[0], Q[0] + 1e-3 * R[0], Q[0] + 2e-3 * R[0] + 1e-6};
    double R1[4] = {R[0], R[1], R[2] + 1e-3, R[3]};
    double y[7], eps, lam; /* 3 (upper triangle of Q) + 4 (R) */
    CHECK(scm_rule_gd.dim(m) == 7 && scm_rule_two_layer.dim(m) == 9, "state sizes");
    scm_rule_gd.pack(m, Q1, R1, NULL, y);
    CHECK(scm_stair_polish(&scm_rule_gd, &rp, fl, y, 1e-9, 50, &eps, &lam, &res, &err) ==
              SCM_OK,
          "stair polish (gd): %s", err.msg);
    CHECK_CLOSE(eps, eps_fp, 1e-9, 0.0, "gd: polished loss = enumerated fixed point's");
    CHECK_CLOSE(lam, re_max, 1e-4, 0.0, "gd: escape rate = (F_Q, F_R) Jacobian's");

    /* (b): the K = 1 minimum by the flow */
    scm_model *m1 = scm_model_alloc(1, 2, &scm_act_erf, NULL, NULL, NULL, &err);
    double q0 = 0.2, r0[2] = {0.3, 0.1}, v0 = 0.5;
    scm_traj_opts o;
    scm_traj_opts_default(&o);
    o.t_max = 1e5;
    o.grad_stop = 1e-12;
    o.v0 = &v0;
    scm_traj_result tr;
    CHECK(scm_traj_run(m1, &scm_rule_two_layer, &q0, r0, &o, &tr, &err) == SCM_OK &&
              tr.stop == SCM_STOP_FIXED_POINT,
          "K = 1 two-layer run to its minimum");
    double v2[2] = {0.5, 0.5}, Q2[4] = {0.2, 0.2, 0.2, 0.2}, R2[4] = {0.3, 0.1, 0.3, 0.1};
    double y2[9]; /* 3 + 4 + 2 (v) */
    scm_rule_two_layer.pack(m, Q2, R2, v2, y2);
    CHECK(scm_stair_polish(&scm_rule_two_layer, &rp, fl, y2, 1e-9, 50, &eps, &lam, &res, &err) ==
              SCM_OK,
          "stair polish (two_layer): %s", err.msg);
    double Qp[4], Rp[4], vp[2];
    scm_rule_two_layer.unpack(m, y2, Qp, Rp, vp);
    printf("two_layer K = 2 equal students: eps %.10g (K = 1 flow: %.10g), v %.6g %.6g "
           "(K = 1: %.6g), lambda %.6g\n",
           eps, tr.eps, vp[0], vp[1], tr.v[0], lam);
    CHECK_CLOSE(eps, tr.eps, 1e-7, 0.0, "two_layer: polished loss = K = 1 minimum");
    CHECK_CLOSE(vp[0] + vp[1], tr.v[0], 1e-5, 1e-7, "two_layer: v_1 + v_2 = K = 1 v");
    CHECK(lam > 0.0, "two_layer: the equal-student point is unstable (lambda %g)", lam);
    scm_traj_result_free(&tr);
    scm_model_free(m1);
    scm_flow_free(fl);
    scm_model_free(m);
}

static void test_errors(void)
{
    double t[3] = {0, 1, 1}, e[3] = {1, 1, 1};
    scm_stair_opts o;
    scm_stair_opts_default(&o);
    scm_stair_plateau pl[2];
    int np;
    scm_error err;
    CHECK(scm_stair_detect(t, e, 3, &o, pl, 2, &np, &err) == SCM_EINVAL &&
              strstr(err.msg, "not increasing"),
          "equal times: %s", err.msg);
    double t2[3] = {0, 1, 2}, e2[3] = {1, NAN, 1};
    CHECK(scm_stair_detect(t2, e2, 3, &o, pl, 2, &np, &err) == SCM_EINVAL &&
              strstr(err.msg, "point 1"),
          "NaN loss: %s", err.msg);
    o.min_dur = 0;
    CHECK(scm_stair_detect(t2, e, 3, &o, pl, 2, &np, &err) == SCM_EINVAL &&
              strstr(err.msg, "min_dur"),
          "min_dur 0: %s", err.msg);
    CHECK(scm_stair_match(0.5, e, 3, 1e-3) == -1, "no match far away");
}

/* h(u) for ReLU with diagonal T: sum_m v*_m sqrt(T_m) J(u_m) / (2 pi),
 * J(c) = sin(a) + (pi - a) c, a = acos c (the arc-cosine kernel). */
static double relu_gain_diag(const double *Td, const double *vs, int M, const double *u)
{
    double h = 0.0;
    for (int n = 0; n < M; n++) {
        double c = fmax(-1.0, fmin(1.0, u[n])), a = acos(c);
        h += vs[n] * sqrt(Td[n]) * (sin(a) + (M_PI - a) * c) / (2.0 * M_PI);
    }
    return h;
}

static void test_origin(void)
{
    scm_error err;
    const double Td[3] = {4.0, 1.0, 0.25}, vs[3] = {2.0, 1.0, 0.5};
    double T[9] = {0};
    for (int n = 0; n < 3; n++)
        T[n * 3 + n] = Td[n];
    double eps0, lam0;
    /* erf: E[phi*^2] = sum v^2 (2/pi) asin(T/(1+T)) (independent odd units);
     * lam0 = g'(0) |E[phi* x]|, |E[phi* x]|^2 = sum v^2 T (2/pi)/(1+T) */
    scm_model *m = scm_model_alloc(2, 3, &scm_act_erf, T, NULL, vs, &err);
    CHECK(scm_stair_origin(m, &eps0, &lam0, &err) == SCM_OK, "origin erf: %s", err.msg);
    double e = 0.0, q = 0.0;
    for (int n = 0; n < 3; n++) {
        e += vs[n] * vs[n] * (2.0 / M_PI) * asin(Td[n] / (1.0 + Td[n]));
        q += vs[n] * vs[n] * Td[n] * (2.0 / M_PI) / (1.0 + Td[n]);
    }
    CHECK_CLOSE(eps0, 0.5 * e, 1e-13, 0.0, "origin erf: eps0");
    CHECK_CLOSE(lam0, sqrt(2.0 / M_PI) * sqrt(q), 1e-13, 0.0, "origin erf: lam0 (Stein)");
    scm_model_free(m);
    /* linear: eps0 = v*^T T v* / 2, lam0 = sqrt(v*^T T v*) */
    m = scm_model_alloc(2, 3, &scm_act_linear, T, NULL, vs, &err);
    CHECK(scm_stair_origin(m, &eps0, &lam0, &err) == SCM_OK, "origin linear: %s", err.msg);
    double vTv = 0.0;
    for (int n = 0; n < 3; n++)
        vTv += vs[n] * vs[n] * Td[n];
    CHECK_CLOSE(eps0, 0.5 * vTv, 1e-14, 0.0, "origin linear: eps0");
    CHECK_CLOSE(lam0, sqrt(vTv), 1e-14, 0.0, "origin linear: lam0");
    scm_model_free(m);
    /* ReLU, diagonal T: eps0 from E[relu^2] = T/2, E[relu] = sqrt(T/(2 pi));
     * lam0 against a grid on the sphere refined by a pattern search */
    m = scm_model_alloc(2, 3, &scm_act_relu, T, NULL, vs, &err);
    CHECK(scm_stair_origin(m, &eps0, &lam0, &err) == SCM_OK, "origin relu: %s", err.msg);
    e = 0.0;
    for (int n = 0; n < 3; n++)
        for (int l = 0; l < 3; l++)
            e += vs[n] * vs[l] *
                 (n == l ? Td[n] / 2.0 : sqrt(Td[n] * Td[l]) / (2.0 * M_PI));
    CHECK_CLOSE(eps0, 0.5 * e, 1e-13, 0.0, "origin relu: eps0");
    double best = -1.0, th = 0.0, ph = 0.0;
    for (int i = 0; i <= 180; i++)
        for (int j = 0; j < 360; j++) {
            double a = i * M_PI / 180.0, b = j * M_PI / 180.0;
            double u[3] = {cos(a), sin(a) * cos(b), sin(a) * sin(b)};
            double h = relu_gain_diag(Td, vs, 3, u);
            if (h > best)
                best = h, th = a, ph = b;
        }
    for (double step = 0.01; step > 1e-12; step *= 0.7)
        for (int rep = 0; rep < 20; rep++) {
            int moved = 0;
            for (int k = 0; k < 4; k++) {
                double a = th + (k == 0 ? step : k == 1 ? -step : 0.0);
                double b = ph + (k == 2 ? step : k == 3 ? -step : 0.0);
                double u[3] = {cos(a), sin(a) * cos(b), sin(a) * sin(b)};
                double h = relu_gain_diag(Td, vs, 3, u);
                if (h > best)
                    best = h, th = a, ph = b, moved = 1;
            }
            if (!moved)
                break;
        }
    CHECK_CLOSE(lam0, best, 1e-10, 0.0, "origin relu: lam0 against the sphere search");
    scm_model_free(m);
    /* ReLU, a general T (B B^T, B random) with mixed-sign v*: lam0 is an
     * upper bound of h over random directions and nearly attained */
    const int M = 4;
    double B[16], T4[16], v4[4] = {1.0, -0.7, 0.4, 1.3};
    unsigned long rng = 12345;
    for (int i = 0; i < 16; i++) {
        rng = rng * 6364136223846793005UL + 1442695040888963407UL;
        B[i] = (double)(rng >> 11) / 9007199254740992.0 - 0.5;
    }
    for (int i = 0; i < M; i++)
        for (int j = 0; j < M; j++) {
            T4[i * M + j] = 0.0;
            for (int k = 0; k < M; k++)
                T4[i * M + j] += B[i * M + k] * B[j * M + k];
        }
    m = scm_model_alloc(2, M, &scm_act_relu, T4, NULL, v4, &err);
    CHECK(scm_stair_origin(m, &eps0, &lam0, &err) == SCM_OK, "origin relu T4: %s", err.msg);
    double hmax = -INFINITY;
    for (int s = 0; s < 200000; s++) {
        double u[4], nrm = 0.0;
        for (int k = 0; k < 4; k++) { /* Box-Muller */
            rng = rng * 6364136223846793005UL + 1442695040888963407UL;
            double u1 = ((double)(rng >> 11) + 0.5) / 9007199254740992.0;
            rng = rng * 6364136223846793005UL + 1442695040888963407UL;
            double u2 = (double)(rng >> 11) / 9007199254740992.0;
            u[k] = sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2);
            nrm += u[k] * u[k];
        }
        /* h(u) = sum_m v_m E[relu(u.x) relu(w*_m.x)], w*_m = row m of B */
        double h = 0.0;
        for (int n = 0; n < M; n++) {
            double c = 0.0;
            for (int k = 0; k < M; k++)
                c += u[k] * B[n * M + k];
            c /= sqrt(nrm);
            double tn = sqrt(T4[n * M + n]), rho = fmax(-1.0, fmin(1.0, c / tn)), a = acos(rho);
            h += v4[n] * tn * (sin(a) + (M_PI - a) * rho) / (2.0 * M_PI);
        }
        hmax = fmax(hmax, h);
    }
    CHECK(lam0 >= hmax - 1e-14 && lam0 - hmax < 1e-3 * lam0,
          "origin relu T4: lam0 %.12g against the best of 2e5 random directions %.12g", lam0,
          hmax);
    scm_model_free(m);
    /* the +-ReLU pair (singular T): phi* = a . x, h(u) = u . a / 2 */
    double Tp[4] = {2.25, -2.25, -2.25, 2.25}, vp[2] = {1.0, -1.0};
    m = scm_model_alloc(2, 2, &scm_act_relu, Tp, NULL, vp, &err);
    CHECK(m != NULL, "pair model: %s", err.msg);
    if (m) {
        CHECK(scm_stair_origin(m, &eps0, &lam0, &err) == SCM_OK, "origin pair: %s", err.msg);
        CHECK_CLOSE(lam0, 1.5 / 2.0, 1e-12, 0.0, "origin pair: lam0 = |a| / 2");
        CHECK_CLOSE(eps0, 2.25 / 2.0, 1e-12, 0.0, "origin pair: eps0 = |a|^2 / 2");
        scm_model_free(m);
    }
}

static void count_note(void *user, const char *msg)
{
    (void)msg;
    (*(int *)user)++;
}

/* The enumerator's study (T = I, v* = 1, gd). */
static void test_study_enumerator(void)
{
    scm_stair_study_opts o;
    scm_stair_study_opts_default(&o);
    CHECK(o.K == -1 && o.act == &scm_act_erf && o.rule == &scm_rule_gd && o.n_out == 3000 &&
              o.T_diag[7] == 1.0 && o.vstar[0] == 1.0,
          "study defaults");
    o.K = o.M = 2;
    o.n_alpha = 3;
    o.alpha[0] = 1e-3;
    o.alpha[1] = 1e-4;
    o.alpha[2] = 2.385e-6;
    o.n_out = 600;
    o.t_max = 2000;
    o.starts = 10;
    scm_stair_study s;
    scm_error err;
    CHECK(scm_stair_study_run(&o, &s, &err) == SCM_OK, "study: %s", err.msg);
    CHECK(!s.polish && s.n_rows == 3 && s.n_fits == 1, "study: polish %d, %d rows, %d fits",
          s.polish, s.n_rows, s.n_fits);
    /* the fixed points: the list, and lambda as the list gives it (by
     * symmetry; test_fplist_symmetric checks it against the dense
     * closed-form Jacobian) */
    scm_fplist_point *fp = NULL;
    int nfp = 0;
    scm_fplist_find(2, 2, &scm_act_erf, 10, 1, &fp, &nfp, NULL);
    scm_model *m = scm_model_alloc(2, 2, &scm_act_erf, NULL, NULL, NULL, &err);
    scm_flow *fl = scm_flow_alloc(m);
    CHECK(s.n_fp == nfp, "study: %d fixed points, the list %d", s.n_fp, nfp);
    for (int f = 0; f < nfp && f < s.n_fp; f++) {
        CHECK(s.fp_eps[f] == fp[f].eps && s.fp_lam[f] == fp[f].jac_re_max &&
                  !strcmp(s.fp_name[f], fp[f].ansatz),
              "fixed point %d as listed", f);
    }
    /* the first run, made directly with the settings staircase.h lists */
    if (s.n_rows == 3) {
        double Q0[4], R0[4], v0[2] = {1e-3, 1e-3};
        scm_init_random(m, 1000, 1e-3, 1, Q0, R0, &err);
        scm_traj_opts to;
        scm_traj_opts_default(&to);
        to.t_max = 2000;
        to.t_first = 1e-2;
        to.n_out = 600;
        to.eps_stop = 1e-10;
        to.grad_stop = 0;
        to.atol = fmin(to.atol, 1e-2 * 1e-3 * 1e-3 / 1000.0);
        to.rtol = 1e-10;
        to.dead_tol = fmin(to.dead_tol, 1e-4 * 1e-3 * 1e-3);
        to.v0 = v0;
        scm_traj_result tr;
        CHECK(scm_traj_run(m, &scm_rule_gd, Q0, R0, &to, &tr, &err) == SCM_OK, "run: %s",
              err.msg);
        CHECK(tr.n_out == s.rows[0].tr.n_out && tr.t == s.rows[0].tr.t &&
                  tr.eps == s.rows[0].tr.eps && tr.n_steps == s.rows[0].tr.n_steps,
              "first run as made directly: t %g / %g", tr.t, s.rows[0].tr.t);
        scm_traj_result_free(&tr);
    }
    /* plateaus and matches on the study's own curves; the escape times fitted */
    double x[3], y[3], eps_fp[64];
    int ny = 0;
    for (int f = 0; f < s.n_fp; f++)
        eps_fp[f] = s.fp_eps[f];
    for (int a = 0; a < s.n_rows; a++) {
        const scm_stair_study_row *r = &s.rows[a];
        long n = 0;
        while (n < r->tr.n_out && r->tr.out_eps[n] > 1e-12)
            n++;
        scm_stair_plateau pl[16];
        int np;
        scm_stair_detect(r->tr.out_t, r->tr.out_eps, n, &o.so, pl, 16, &np, &err);
        CHECK(r->n_curve == n && r->np == np && np >= 1, "alpha %g: %d plateaus, detected %d",
              r->alpha, r->np, np);
        for (int k = 0; k < np && k < r->np; k++)
            CHECK(r->pl[k].t_end == pl[k].t_end && r->pl[k].eps == pl[k].eps &&
                      r->match[k] == scm_stair_match(pl[k].eps, eps_fp, s.n_fp, 1e-4),
                  "alpha %g plateau %d", r->alpha, k);
        if (np >= 1 && pl[0].i_end < n - 1) {
            x[ny] = log(1.0 / r->alpha);
            y[ny++] = pl[0].t_end;
        }
    }
    double slope = NAN, icpt, se;
    CHECK(ny == 3 && scm_stair_fit(x, y, ny, &slope, &icpt, &se) == SCM_OK, "direct fit");
    if (s.n_fits == 1) {
        CHECK(s.fits[0].slope == slope && s.fits[0].se == se && s.fits[0].n == 3 &&
                  s.fits[0].lambda == s.fp_lam[s.fits[0].fp],
              "fit: slope %g, direct %g", s.fits[0].slope, slope);
        CHECK_CLOSE(s.fits[0].slope, 1.0 / s.fits[0].lambda, 2e-3, 0.0, "slope = 1 / lambda");
    }
    /* the JSON holds the rows */
    cJSON *j = scm_stair_study_json(&o, &s);
    const cJSON *runs = cJSON_GetObjectItemCaseSensitive(j, "runs");
    const cJSON *fits = cJSON_GetObjectItemCaseSensitive(j, "fits");
    CHECK(cJSON_GetArraySize(runs) == 3 && cJSON_GetArraySize(fits) == s.n_fits, "json sizes");
    const cJSON *tau = cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(runs, 1), "tau");
    CHECK(s.n_rows == 3 && cJSON_GetArraySize(tau) == s.rows[1].tr.n_out, "json: curve length");
    const cJSON *js = cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(fits, 0), "slope");
    CHECK(cJSON_IsNumber(js) && js->valuedouble == slope, "json: the slope");
    cJSON_Delete(j);
    scm_fplist_free(fp, nfp);
    scm_flow_free(fl);
    scm_model_free(m);
    scm_stair_study_free(&s);
}

/* The polish variant (v* != 1) and the bad inputs. */
static void test_study_polish(void)
{
    scm_stair_study_opts o;
    scm_stair_study_opts_default(&o);
    o.K = o.M = 2;
    o.n_alpha = 1;
    o.alpha[0] = 1e-3;
    o.vstar[0] = 1.3;
    o.n_out = 400;
    o.t_max = 2000;
    int notes = 0;
    o.note = count_note;
    o.note_user = &notes;
    scm_stair_study s;
    scm_error err;
    CHECK(scm_stair_study_run(&o, &s, &err) == SCM_OK, "polish study: %s", err.msg);
    CHECK(s.polish && s.n_rows == 1 && s.rows[0].np >= 1 && notes == 0,
          "polish study: %d plateaus, %d notes", s.n_rows ? s.rows[0].np : -1, notes);
    if (s.n_rows == 1 && s.rows[0].np >= 1) {
        const scm_stair_study_row *r = &s.rows[0];
        scm_model *m = scm_model_alloc(2, 2, &scm_act_erf, NULL, NULL, o.vstar, &err);
        scm_flow *fl = scm_flow_alloc(m);
        long i = (r->pl[0].i_start + r->pl[0].i_end) / 2;
        double y[8], eps, lam, resid;
        scm_rule_gd.pack(m, r->tr.out_Q + i * 4, r->tr.out_R + i * 4, NULL, y);
        scm_rule_params rp;
        scm_rule_params_default(&rp);
        CHECK(scm_stair_polish(&scm_rule_gd, &rp, fl, y, 1e-9, 50, &eps, &lam, &resid, &err) ==
                  SCM_OK,
              "direct polish: %s", err.msg);
        int f = r->match[0];
        CHECK(f >= 0 && f < s.n_fp && s.fp_eps[f] == eps && s.fp_lam[f] == lam &&
                  r->resid[0] == resid && !strcmp(s.fp_name[f], "newton polish"),
              "plateau 0: the polished point (%g, %g)", eps, lam);
        scm_flow_free(fl);
        scm_model_free(m);
    }
    scm_stair_study_free(&s);

    scm_stair_study_opts bad = o;
    bad.K = 0;
    CHECK(scm_stair_study_run(&bad, &s, &err) == SCM_EINVAL && s.refused, "K = 0 refused");
    scm_stair_study_free(&s);
    bad = o;
    bad.d = 1;
    CHECK(scm_stair_study_run(&bad, &s, &err) == SCM_EINVAL && s.refused, "d < M refused");
    scm_stair_study_free(&s);
    bad = o;
    bad.rule = &scm_rule_sgd;
    CHECK(scm_stair_study_run(&bad, &s, &err) == SCM_EINVAL && s.refused, "rule sgd refused");
    scm_stair_study_free(&s);
    bad = o;
    bad.T_diag[1] = -1.0;
    CHECK(scm_stair_study_run(&bad, &s, &err) != SCM_OK && s.refused && s.n_rows == 0,
          "T not PSD refused: %s", err.msg);
    scm_stair_study_free(&s);
}

/* Issue 26 item 12: extreme options are named bad input (SCM_EINVAL,
 * refused, the option and its value in the message) before any run; at
 * alpha = 1e-300 the study said "integrator.atol must be > 0". */
static void test_ranges(void)
{
    scm_stair_study_opts o;
    scm_stair_study_opts_default(&o);
    o.K = o.M = 2;
    o.n_alpha = 1;
    o.alpha[0] = 1e-3;
    o.n_out = 50;
    o.t_max = 100;
    struct {
        const char *what, *want;
        int field; /* 0 alpha, 1 T_diag[1], 2 vstar[0], 3 lr (two_layer), 4 t_max, 5 rate_tol */
        double v;
    } cases[] = {
        {"alpha 1e-300", "alpha = 1e-300", 0, 1e-300}, {"alpha 1e300", "alpha = 1e+300", 0, 1e300},
        {"alpha 1e-21", "alpha = 1e-21", 0, 1e-21},
        {"alpha nan", "alpha = nan", 0, NAN},          {"T 1e300", "T_diag[1] = 1e+300", 1, 1e300},
        {"T 1e-300", "T_diag[1] = 1e-300", 1, 1e-300}, {"T -1", "T_diag[1] = -1", 1, -1.0},
        {"vstar 1e300", "vstar[0] = 1e+300", 2, 1e300}, {"vstar -inf", "vstar[0] = -inf", 2, -INFINITY},
        {"lr 1e300", "lr_v_ratio = 1e+300", 3, 1e300}, {"lr 1e-300", "lr_v_ratio = 1e-300", 3, 1e-300},
        {"t_max 1e300", "t_max = 1e+300", 4, 1e300},   {"t_max 1e-300", "t_max = 1e-300", 4, 1e-300},
        {"rate_tol inf", "rate_tol", 5, INFINITY},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        scm_stair_study_opts b = o;
        double v = cases[i].v;
        switch (cases[i].field) {
        case 0: b.alpha[0] = v; break;
        case 1: b.T_diag[1] = v; break;
        case 2: b.vstar[0] = v; break;
        case 3: b.rule = &scm_rule_two_layer; b.rp.lr_v_ratio = v; break;
        case 4: b.t_max = v; break;
        default: b.so.rate_tol = v; break;
        }
        scm_stair_study s;
        scm_error e;
        scm_status st = scm_stair_study_run(&b, &s, &e);
        CHECK(st == SCM_EINVAL && s.refused && s.n_rows == 0 && strstr(e.msg, cases[i].want),
              "%s: refused by name (status %d, refused %d: '%s')", cases[i].what, st, s.refused,
              e.msg);
        scm_stair_study_free(&s);
    }
    /* the edge is accepted: erf, gd from alpha = 1e-20 waits at the
     * symmetric saddle the enumerator lists (its escape time there is set
     * by integration error, docs/staircase.md "Ranges") */
    scm_stair_study_opts b = o;
    b.alpha[0] = SCM_STAIR_ALPHA_MIN;
    b.t_max = 2e3;
    b.n_out = 200;
    scm_stair_study s;
    scm_error e;
    CHECK(scm_stair_study_run(&b, &s, &e) == SCM_OK && s.n_rows == 1 && s.rows[0].np >= 1,
          "alpha = 1e-20: %s", e.msg);
    if (s.n_rows == 1 && s.rows[0].np >= 1) {
        int f = s.rows[0].match[0];
        CHECK(f >= 0 && fabs(s.fp_eps[f] - 0.01161084031) < 1e-10,
              "alpha = 1e-20: the plateau is the enumerated saddle (match %d)", f);
    }
    scm_stair_study_free(&s);
}

/* The largest real part of the eigenvalues of the closed-form Jacobian of
 * (F_Q, F_R) (scm_flow_jacobian, assembled densely; GSL's nonsymmetric
 * eigensolver), NaN where it is refused. */
static double dense_jac_re_max(scm_flow *fl, int K, int M, const double *Q, const double *R)
{
    const long n = (long)K * (K + 1) / 2 + (long)K * M;
    double *J = malloc(sizeof *J * (size_t)(n * n)), v = NAN;
    gsl_vector_complex *ev = gsl_vector_complex_alloc((size_t)n);
    gsl_eigen_nonsymm_workspace *w = gsl_eigen_nonsymm_alloc((size_t)n);
    if (J && ev && w && scm_flow_jacobian(fl, Q, R, J) == SCM_OK) {
        gsl_matrix_view A = gsl_matrix_view_array(J, (size_t)n, (size_t)n);
        if (gsl_eigen_nonsymm(&A.matrix, ev, w) == GSL_SUCCESS) {
            v = -INFINITY;
            for (long i = 0; i < n; i++)
                v = fmax(v, GSL_REAL(gsl_vector_complex_get(ev, (size_t)i)));
        }
    }
    gsl_eigen_nonsymm_free(w);
    gsl_vector_complex_free(ev);
    free(J);
    return v;
}

/* scm_fplist_point.jac_re_max (the flow Jacobian's spectrum by symmetry,
 * what the study reports as lambda) against the dense closed-form
 * Jacobian at every listed point where both exist: K = M, M + 1 and M + 3
 * (k1_extra beyond M + 2), ReLU and erf.  Not against the central
 * differences of scm_fp_full_stability: at points with parallel students
 * (the Gram matrix on the boundary of the PSD cone, where the flow clamps
 * the overlaps) those are off by up to 40% (K = 7, M = 4, erf). */
static void test_fplist_symmetric(void)
{
    static const struct {
        int K, M;
        const scm_activation *act;
    } cases[] = {{2, 2, &scm_act_erf}, {4, 3, &scm_act_relu}, {6, 3, &scm_act_relu},
                 {5, 5, &scm_act_relu}, {7, 4, &scm_act_erf}};
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        const int K = cases[c].K, M = cases[c].M;
        scm_fplist_point *fp = NULL;
        int nfp = 0, compared = 0;
        scm_error err;
        CHECK(scm_fplist_find(K, M, cases[c].act, 20, 1, &fp, &nfp, &err) == SCM_OK,
              "fplist K = %d, M = %d: %s", K, M, err.msg);
        scm_model *m = scm_model_alloc(K, M, cases[c].act, NULL, NULL, NULL, &err);
        scm_flow *fl = scm_flow_alloc(m);
        for (int f = 0; f < nfp; f++) {
            double dense = dense_jac_re_max(fl, K, M, fp[f].Q, fp[f].R);
            if (!isfinite(dense) || !isfinite(fp[f].jac_re_max))
                continue;
            compared++;
            CHECK(fabs(fp[f].jac_re_max - dense) <= 1e-7 * fmax(1.0, fabs(dense)),
                  "K = %d, M = %d, %s (loss %.10g): lambda by symmetry %.12g, dense %.12g", K,
                  M, fp[f].ansatz, fp[f].eps, fp[f].jac_re_max, dense);
        }
        CHECK(compared >= 1 && compared * 2 >= nfp,
              "K = %d, M = %d: %d of %d points compared", K, M, compared, nfp);
        scm_flow_free(fl);
        scm_model_free(m);
        scm_fplist_free(fp, nfp);
    }
}

int main(void)
{
    gsl_set_error_handler_off();
    test_ranges();
    test_synthetic();
    test_fit();
    test_known_answer();
    test_polish();
    test_origin();
    test_errors();
    test_study_enumerator();
    test_study_polish();
    test_fplist_symmetric();
    return TEST_SUMMARY();
}
