/* test_simulate.c: a finite-d network trained in weight space (scm_sim)
 * against the (Q, R) ODE integrated by scm_traj_run from the same realised
 * start (docs/simulate.md, section "Tests", says why these tolerances).
 *
 * All runs start from one fixed state (erf, K = M = 2, T = I, well away from
 * the symmetric plateau, where fluctuations would be amplified
 * exponentially); the seeds differ only by their sample streams, so that
 * for an observable X (eps, each entry of Q and R at time tau)
 *   X_sim - X_ode = bias + noise,
 * with a bias common to the seeds and noise of mean zero and standard
 * deviation ~ sqrt(eta tau / d) (a sum of tau d / eta steps of size eta / d).
 *
 * 1. Scaling: the spread over seeds of X_sim - X_ode (root mean square over
 *    the observables of their standard deviations) is fitted against d in
 *    {250, 1000, 4000}; the slope must be -1/2 within +-0.15 (the fit's
 *    statistical error with these seeds is about 0.06).  For every rule
 *    (gd, normalised, stiefel, two_layer) against its ODE.
 * 2. Agreement with the gradient flow (erf and ReLU, d = 1000): online SGD
 *    at finite eta follows the flow plus an O(eta) term (MATH.md section 8), so the flow is the eta -> 0
 *    limit.  The means over seeds at eta and eta / 2 are extrapolated
 *    (2 m(eta/2) - m(eta)) and must match the ODE within 4 standard errors
 *    plus an allowance of 0.2 (eta/2)^2 for the O(eta^2) rest and 4 / d for
 *    the finite-d bias.  The un-extrapolated mean at eta must NOT match for eps
 *    (it is the eta term that makes it differ; the test can tell).
 *    The same for normalised (sphere) and Stiefel runs (erf, d = 1000)
 *    against the constrained population gradient flow integrated in weight
 *    space (projected closed-form gradient, RK4), which agrees with those
 *    rules' ODEs to 1e-8 (checked) without going through (Q, R); and for
 *    normalised, stiefel and two_layer against their ODEs.
 * 3. Retractions: normalised (sphere) and Stiefel runs keep Q_kk = 1 and
 *    Q = I to 1e-12, in online and batch mode.
 * 4. Finite eta, both layers trained: online SGD at eta = 0.5 with v
 *    trained against the Saad-Solla ODE (bench/saad_solla.h, independent of
 *    libscm, with the eta^2 I4 term), d = 2000, within 4 s.e. + 4 / d; the
 *    same against the library's sgd rule (erf with noise and v trained,
 *    ReLU), and the spread ~ d^-1/2 for sgd.
 * 5. Batch mode (full-batch GD on n = 50 d samples) follows the flow to the
 *    empirical-risk error O(sqrt(d / n)); reproducibility; bad options.
 * 6. The study of `scm simulate` (scm_simulate_study_*): each seed's records
 *    against direct scm_traj_run and scm_sim calls from the same start, the
 *    statistics recomputed from them, thread independence, the result
 *    object and the CSV against the records, bad input. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_errno.h>
#include <gsl/gsl_odeiv2.h>

#include "../bench/saad_solla.h"
#include "scm/simulate.h"
#include "scm/traj.h"
#include "scm/weights.h"
#include "testutil.h"

#define K 2
#define M 2
#define NOBS (1 + K * (K + 1) / 2 + K * M + K)

static const double Q0[K * K] = {0.5, 0.1, 0.1, 0.4};
static const double R0[K * M] = {0.3, 0.05, 0.02, 0.2};

/* eps, upper triangle of Q, R, v: the observables. */
static void observables(double eps, const double *Q, const double *R, const double *v, double *x)
{
    int j = 0;
    x[j++] = eps;
    for (int k = 0; k < K; k++)
        for (int l = k; l < K; l++)
            x[j++] = Q[k * K + l];
    for (int i = 0; i < K * M; i++)
        x[j++] = R[i];
    for (int k = 0; k < K; k++)
        x[j++] = v[k];
}

/* The ODE for the simulation options o at tau from the realised start (Qs,
 * Rs, v(0) = the model's v): returns the observables in x. */
typedef void (*ode_fn)(const scm_model *m, const scm_sim_opts *o, const double *Qs,
                       const double *Rs, double tau, double *x);

/* Tight CVODE options to tau, recording only the end. */
static scm_traj_opts tight_opts(double tau)
{
    scm_traj_opts o;
    scm_traj_opts_default(&o);
    o.rtol = 1e-11;
    o.atol = 1e-13;
    o.t_max = tau;
    o.t_first = tau / 2;
    o.n_out = 1;
    o.eps_stop = 0.0;
    o.grad_stop = 0.0;
    return o;
}

/* The rule whose ODE the simulation options o follow as eta -> 0. */
static const scm_rule *rule_of(const scm_sim_opts *o)
{
    if (o->constraint == SCM_SIM_SPHERE)
        return &scm_rule_normalised;
    if (o->constraint == SCM_SIM_STIEFEL)
        return &scm_rule_stiefel;
    return o->eta_v_ratio > 0.0 ? &scm_rule_two_layer : &scm_rule_gd;
}

/* That rule's ODE by scm_traj_run (lr_v_ratio = o->eta_v_ratio, v(0) the
 * model's v). */
static void ode_rule(const scm_model *m, const scm_sim_opts *so, const double *Qs,
                     const double *Rs, double tau, double *x)
{
    scm_traj_opts o = tight_opts(tau);
    if (so->eta_v_ratio > 0.0)
        o.rule_params.lr_v_ratio = so->eta_v_ratio;
    scm_traj_result r;
    scm_error err;
    scm_status st = scm_traj_run(m, rule_of(so), Qs, Rs, &o, &r, &err);
    CHECK(st == SCM_OK && r.stop == SCM_STOP_T_MAX, "ODE: %s", st ? err.msg : r.err.msg);
    if (st == SCM_OK)
        observables(r.eps, r.Q, r.R, r.v, x);
    scm_traj_result_free(&r);
}

/* The library's sgd rule (scm_traj_run) at the simulation's eta, noise and
 * lr_v_ratio = eta_v_ratio (0: v fixed). */
static void ode_sgd(const scm_model *m, const scm_sim_opts *so, const double *Qs,
                    const double *Rs, double tau, double *x)
{
    scm_traj_opts o = tight_opts(tau);
    o.rule_params.eta = so->eta;
    o.rule_params.noise = so->noise;
    o.rule_params.lr_v_ratio = so->eta_v_ratio;
    scm_traj_result r;
    scm_error err;
    scm_status st = scm_traj_run(m, &scm_rule_sgd, Qs, Rs, &o, &r, &err);
    CHECK(st == SCM_OK && r.stop == SCM_STOP_T_MAX, "sgd ODE: %s", st ? err.msg : r.err.msg);
    if (st == SCM_OK)
        observables(r.eps, r.Q, r.R, r.v, x);
    scm_traj_result_free(&r);
}

/* The Saad-Solla equations of online SGD at finite eta with both layers
 * trained (eta_v = eta), bench/saad_solla.h, written independently of
 * libscm, integrated by GSL's rk8pd at 1e-12. */
static int ss_gsl(double t, const double *y, double *f, void *params)
{
    (void)t;
    ss_rhs(params, y, f, NULL);
    return GSL_SUCCESS;
}

static void ode_saad_solla(const scm_model *m, const scm_sim_opts *o, const double *Qs,
                           const double *Rs, double tau, double *x)
{
    ss_params p = {K, M, o->eta, 1.0, m->vs};
    double y[K * K + K * M + K], eps;
    memcpy(y, Qs, sizeof(double) * K * K);
    memcpy(y + K * K, Rs, sizeof(double) * K * M);
    memcpy(y + K * K + K * M, m->v, sizeof(double) * K);
    gsl_odeiv2_system sys = {ss_gsl, NULL, K * K + K * M + K, &p};
    gsl_odeiv2_driver *drv =
        gsl_odeiv2_driver_alloc_y_new(&sys, gsl_odeiv2_step_rk8pd, 1e-3, 1e-12, 1e-12);
    double t = 0.0;
    CHECK(gsl_odeiv2_driver_apply(drv, &t, tau, y) == GSL_SUCCESS, "rk8pd");
    gsl_odeiv2_driver_free(drv);
    double f[K * K + K * M + K];
    ss_rhs(&p, y, f, &eps);
    observables(eps, y, y + K * K, y + K * K + K * M, x);
}

/* The constrained population gradient flow in weight space (MATH.md
 * section 8), an eta -> 0 reference for the sphere and Stiefel runs that
 * does not go through any ODE in (Q, R): W realised in d = K + M from the
 * realised start, dW/dtau = -d P_W(grad_W eps) with the closed-form
 * gradient scm_weights_grad and the projection of the rule (sphere: each
 * row minus its radial part; Stiefel: G - sym(G W^T) W / d), classical RK4
 * with dtau = 1e-3 followed by a Gram-Schmidt re-orthonormalisation (an
 * O(h^5) correction per step). */
#define DW (K + M)
static void proj_grad(scm_flow *fl, scm_sim_constraint c, const double *W, const double *Ws,
                      double *F)
{
    double G[K * DW];
    if (scm_weights_grad(fl, DW, W, Ws, NULL, G) != SCM_OK)
        memset(G, 0xff, sizeof G); /* NaN: fails the comparison downstream */
    double S[K * K];
    for (int k = 0; k < K; k++)
        for (int l = 0; l < K; l++) {
            double gw = 0.0;
            for (int i = 0; i < DW; i++)
                gw += G[k * DW + i] * W[l * DW + i];
            S[k * K + l] = gw;
        }
    for (int k = 0; k < K; k++)
        for (int i = 0; i < DW; i++) {
            double f = G[k * DW + i];
            if (c == SCM_SIM_SPHERE)
                f -= S[k * K + k] / DW * W[k * DW + i];
            else
                for (int l = 0; l < K; l++)
                    f -= 0.5 * (S[k * K + l] + S[l * K + k]) / DW * W[l * DW + i];
            F[k * DW + i] = -DW * f;
        }
}

static void reorthonormalise(scm_sim_constraint c, double *W)
{
    for (int k = 0; k < K; k++) {
        double *w = W + k * DW;
        for (int l = 0; c == SCM_SIM_STIEFEL && l < k; l++) {
            double p = 0.0;
            for (int i = 0; i < DW; i++)
                p += w[i] * W[l * DW + i];
            for (int i = 0; i < DW; i++)
                w[i] -= p / DW * W[l * DW + i];
        }
        double n2 = 0.0;
        for (int i = 0; i < DW; i++)
            n2 += w[i] * w[i];
        for (int i = 0; i < DW; i++)
            w[i] *= sqrt(DW / n2);
    }
}

static void ode_constrained(const scm_model *m, const scm_sim_opts *o, const double *Qs,
                            const double *Rs, double tau, double *x)
{
    double W[K * DW], Ws[M * DW], Wt[K * DW], k1[K * DW], k2[K * DW], k3[K * DW], k4[K * DW];
    double Q[K * K], R[K * M], eps;
    scm_error err;
    CHECK(scm_weights_realise(m, Qs, Rs, DW, W, Ws, &err) == SCM_OK, "realise: %s", err.msg);
    scm_flow *fl = scm_flow_alloc(m);
    const int n = (int)lround(tau / 1e-3);
    const double h = tau / n;
    for (int s = 0; s < n; s++) {
        proj_grad(fl, o->constraint, W, Ws, k1);
        for (int i = 0; i < K * DW; i++)
            Wt[i] = W[i] + 0.5 * h * k1[i];
        proj_grad(fl, o->constraint, Wt, Ws, k2);
        for (int i = 0; i < K * DW; i++)
            Wt[i] = W[i] + 0.5 * h * k2[i];
        proj_grad(fl, o->constraint, Wt, Ws, k3);
        for (int i = 0; i < K * DW; i++)
            Wt[i] = W[i] + h * k3[i];
        proj_grad(fl, o->constraint, Wt, Ws, k4);
        for (int i = 0; i < K * DW; i++)
            W[i] += h / 6.0 * (k1[i] + 2.0 * k2[i] + 2.0 * k3[i] + k4[i]);
        reorthonormalise(o->constraint, W);
    }
    scm_weights_overlaps(m, DW, W, Ws, Q, R);
    scm_flow_loss(fl, Q, R, &eps);
    observables(eps, Q, R, m->v, x);
    scm_flow_free(fl);
}

static scm_sim_opts opts(scm_sim_mode mode, long d, long n, double eta, double eta_v_ratio,
                         scm_sim_constraint c)
{
    scm_sim_opts o;
    scm_sim_opts_default(&o);
    o.mode = mode;
    o.d = d;
    o.n = n;
    o.eta = eta;
    o.eta_v_ratio = eta_v_ratio;
    o.constraint = c;
    return o;
}

/* S seeds (sample seeds 100, 101, ...) of the options tmpl to tau: mean
 * and standard deviation over the seeds of X_sim - X_ode per observable. */
static void run_seeds(const scm_model *m, ode_fn ode_at, const scm_sim_opts *tmpl, double tau,
                      int S, double *mean, double *sd)
{
    double s1[NOBS] = {0}, s2[NOBS] = {0}, ode[NOBS], x[NOBS], Qs[K * K], Rs[K * M], Q[K * K],
           R[K * M], v[K], eps;
    for (int s = 0; s < S; s++) {
        scm_sim_opts o = *tmpl;
        o.seed = 100 + (unsigned long)s;
        scm_error err;
        scm_sim *sim = scm_sim_alloc(m, &o, Q0, R0, &err);
        CHECK(sim != NULL, "alloc: %s", err.msg);
        if (!sim)
            return;
        if (s == 0) {
            /* The realisation reproduces the start (it is deterministic;
             * with a constraint it is the retracted start). */
            scm_sim_state(sim, Qs, Rs, NULL, NULL, &err);
            for (int i = 0; o.constraint == SCM_SIM_FREE && i < K * K; i++)
                CHECK_CLOSE(Qs[i], Q0[i], 0, 1e-12, "realised Q(0)");
            ode_at(m, &o, Qs, Rs, tau, ode);
        }
        CHECK(scm_sim_advance(sim, tau, &err) == SCM_OK, "advance: %s", err.msg);
        CHECK(fabs(scm_sim_time(sim) - tau) <= 0.5 * o.eta / (double)o.d, "time reached");
        CHECK(scm_sim_state(sim, Q, R, v, &eps, &err) == SCM_OK, "state: %s", err.msg);
        observables(eps, Q, R, v, x);
        for (int j = 0; j < NOBS; j++) {
            s1[j] += x[j] - ode[j];
            s2[j] += (x[j] - ode[j]) * (x[j] - ode[j]);
        }
        scm_sim_free(sim);
    }
    for (int j = 0; j < NOBS; j++) {
        mean[j] = s1[j] / S;
        sd[j] = sqrt(fmax(s2[j] - s1[j] * s1[j] / S, 0.0) / (S - 1));
    }
}

static double rms(const double *x)
{
    double s = 0.0;
    for (int j = 0; j < NOBS; j++)
        s += x[j] * x[j];
    return sqrt(s / NOBS);
}

/* The spread over S[i] seeds at d = ds[i] (the options tmpl otherwise, time
 * tau) against the ODE ode_at: exponent -1/2 +- 0.15. */
static void test_scaling(const scm_model *m, ode_fn ode_at, const scm_sim_opts *tmpl,
                         const int *S, double tau)
{
    const long ds[3] = {250, 1000, 4000};
    double lx[3], ly[3], mean[NOBS], sd[NOBS];
    const char *name = ode_at == ode_sgd ? "sgd" : rule_of(tmpl)->name;
    for (int i = 0; i < 3; i++) {
        scm_sim_opts o = *tmpl;
        o.d = ds[i];
        run_seeds(m, ode_at, &o, tau, S[i], mean, sd);
        lx[i] = log((double)ds[i]);
        ly[i] = log(rms(sd));
        printf("scaling %s: d = %5ld  spread %.4g  (x sqrt(d) = %.4g)\n", name, ds[i], rms(sd),
               rms(sd) * sqrt((double)ds[i]));
    }
    const double mx = (lx[0] + lx[1] + lx[2]) / 3, my = (ly[0] + ly[1] + ly[2]) / 3;
    double sxy = 0.0, sxx = 0.0;
    for (int i = 0; i < 3; i++) {
        sxy += (lx[i] - mx) * (ly[i] - my);
        sxx += (lx[i] - mx) * (lx[i] - mx);
    }
    const double slope = sxy / sxx;
    printf("scaling: fitted exponent %.3f (want -0.5 +- 0.15)\n", slope);
    CHECK(fabs(slope + 0.5) <= 0.15, "%s: spread ~ d^%.3f, want d^-0.5", name, slope);
}

static void test_agreement(const scm_model *m, ode_fn ode_at, scm_sim_constraint c,
                           double eta_v_ratio, long d, int S)
{
    const double eta = 0.2, tau = 1.0;
    double m1[NOBS], sd1[NOBS], m2[NOBS], sd2[NOBS];
    const scm_sim_opts o1 = opts(SCM_SIM_ONLINE, d, 0, eta, eta_v_ratio, c);
    const scm_sim_opts o2 = opts(SCM_SIM_ONLINE, d, 0, eta / 2, eta_v_ratio, c);
    printf("agreement: %s, rule %s, %s, d = %ld, %d seeds\n", m->act->name, rule_of(&o1)->name,
           ode_at == ode_rule ? "its ODE" : "weight-space flow", d, S);
    run_seeds(m, ode_at, &o1, tau, S, m1, sd1);
    run_seeds(m, ode_at, &o2, tau, S, m2, sd2);
    for (int j = 0; j < NOBS; j++) {
        const double ext = 2.0 * m2[j] - m1[j];
        const double se = sqrt(4.0 * sd2[j] * sd2[j] + sd1[j] * sd1[j]) / sqrt((double)S);
        const double allow = 4.0 * se + 0.2 * (eta / 2) * (eta / 2) + 4.0 / (double)d;
        printf("agreement: obs %d  mean(eta) %+.3e  mean(eta/2) %+.3e  extrapolated %+.3e  "
               "(4 s.e. %.1e, allowance %.1e)\n",
               j, m1[j], m2[j], ext, 4.0 * se, allow);
        CHECK(fabs(ext) <= allow, "observable %d: extrapolated gap %.3g > %.3g", j, ext, allow);
    }
    /* The eta term itself is visible in eps: the plain mean at eta is off. */
    const double se1 = sd1[0] / sqrt((double)S);
    CHECK(fabs(m1[0]) > 4.0 * se1 + 4.0 / (double)d,
          "eps at eta = %g: the O(eta) term should show, mean %.3g, s.e. %.3g", eta, m1[0], se1);
}

/* Finite eta, both layers: online SGD at eta = 0.5 with v trained against
 * the Saad-Solla ODE with its eta^2 term, no extrapolation: the bias is
 * finite-d only, allowance 4 s.e. + 4 / d (as in test_agreement). */
static void test_finite_eta(void)
{
    static const double v0[K] = {0.5, 1.5};
    scm_error err;
    scm_model *m = scm_model_alloc(K, M, &scm_act_erf, NULL, v0, NULL, &err);
    const long d = 2000;
    const int S = 16;
    double mean[NOBS], sd[NOBS];
    const scm_sim_opts o = opts(SCM_SIM_ONLINE, d, 0, 0.5, 1.0, SCM_SIM_FREE);
    run_seeds(m, ode_saad_solla, &o, 1.5, S, mean, sd);
    for (int j = 0; j < NOBS; j++) {
        const double se = sd[j] / sqrt((double)S), allow = 4.0 * se + 4.0 / (double)d;
        printf("finite eta: obs %d  mean gap %+.3e  (4 s.e. %.1e, allowance %.1e)\n", j, mean[j],
               4.0 * se, allow);
        CHECK(fabs(mean[j]) <= allow, "observable %d: gap %.3g > %.3g", j, mean[j], allow);
    }
    /* v moves over this time (by ~0.1: the check is about something). */
    double x[NOBS];
    ode_saad_solla(m, &o, Q0, R0, 1.5, x);
    CHECK(fmax(fabs(x[NOBS - 2] - v0[0]), fabs(x[NOBS - 1] - v0[1])) > 0.05,
          "v(1.5) = %g, %g from %g, %g", x[NOBS - 2], x[NOBS - 1], v0[0], v0[1]);
    printf("finite eta: v(0) = %g, %g -> v(1.5) = %.4f, %.4f\n", v0[0], v0[1], x[NOBS - 2],
           x[NOBS - 1]);
    scm_model_free(m);
}

/* The manifold rules' ODEs (scm_traj_run) against the constrained
 * population flow integrated in weight space, from the retracted start of a
 * simulation: the two references of the constrained simulations agree to
 * the integrators' accuracy (CVODE 1e-11, RK4 with dtau = 1e-3: ~1e-12 per
 * unit time; 1e-8 leaves room and is 1e5 times below any wrong projection). */
static void test_references(const scm_model *m, scm_sim_constraint c)
{
    scm_sim_opts o = opts(SCM_SIM_ONLINE, 100, 0, 0.1, 0.0, c);
    scm_error err;
    scm_sim *sim = scm_sim_alloc(m, &o, Q0, R0, &err);
    double Qs[K * K], Rs[K * M], a[NOBS], b[NOBS];
    scm_sim_state(sim, Qs, Rs, NULL, NULL, &err);
    scm_sim_free(sim);
    ode_rule(m, &o, Qs, Rs, 1.0, a);
    ode_constrained(m, &o, Qs, Rs, 1.0, b);
    double dmax = 0.0;
    for (int j = 0; j < NOBS; j++)
        dmax = fmax(dmax, fabs(a[j] - b[j]));
    printf("references: %s ODE vs weight-space flow at tau = 1: max difference %.2e\n",
           rule_of(&o)->name, dmax);
    CHECK(dmax < 1e-8, "%s: ODE and weight-space flow differ by %.3g", rule_of(&o)->name, dmax);
}

/* Online SGD at finite eta (tmpl: eta, noise, eta_v_ratio) against the
 * library's sgd rule, d = 2000, tau = 1.5, 16 seeds: every observable within
 * 4 s.e. + 4 / d (as test_finite_eta, which uses the Saad-Solla sums). */
static void test_sgd(const scm_model *m, const scm_sim_opts *tmpl)
{
    scm_sim_opts o = *tmpl;
    o.d = 2000;
    const int S = 16;
    double mean[NOBS], sd[NOBS];
    run_seeds(m, ode_sgd, &o, 1.5, S, mean, sd);
    printf("sgd (%s, eta %g, noise %g, eta_v %g):\n", m->act->name, o.eta, o.noise,
           o.eta_v_ratio);
    for (int j = 0; j < NOBS; j++) {
        const double se = sd[j] / sqrt((double)S), allow = 4.0 * se + 4.0 / (double)o.d;
        printf("sgd: obs %d  mean gap %+.3e  (4 s.e. %.1e, allowance %.1e)\n", j, mean[j],
               4.0 * se, allow);
        CHECK(fabs(mean[j]) <= allow, "sgd observable %d: gap %.3g > %.3g", j, mean[j], allow);
    }
}

static void test_retractions(const scm_model *m)
{
    for (int mode = 0; mode < 2; mode++)
        for (int c = 1; c <= 2; c++) {
            scm_sim_opts o;
            scm_sim_opts_default(&o);
            o.mode = mode ? SCM_SIM_BATCH : SCM_SIM_ONLINE;
            o.d = 300;
            o.n = mode ? 2000 : 0;
            o.eta = mode ? 6.0 : 0.3;
            o.constraint = (scm_sim_constraint)c;
            scm_error err;
            scm_sim *sim = scm_sim_alloc(m, &o, Q0, R0, &err);
            CHECK(sim != NULL, "alloc: %s", err.msg);
            if (!sim)
                continue;
            double Q[K * K], R[K * M], eps0, eps1;
            for (int rep = 0; rep < 2; rep++) {
                CHECK(scm_sim_advance(sim, rep ? 1.5 : 0.0, &err) == SCM_OK, "%s", err.msg);
                scm_sim_state(sim, Q, R, NULL, rep ? &eps1 : &eps0, &err);
                for (int k = 0; k < K; k++)
                    for (int l = 0; l < K; l++) {
                        const int on = k == l || c == 2;
                        if (on)
                            CHECK_CLOSE(Q[k * K + l], k == l ? 1.0 : 0.0, 0, 1e-12,
                                        c == 1 ? "sphere Q_kk" : "Stiefel Q");
                    }
            }
            /* It learns: the loss drops along the constrained run. */
            CHECK(eps1 < 0.8 * eps0, "constraint %d mode %d: eps %.4g -> %.4g", c, mode, eps0,
                  eps1);
            scm_sim_free(sim);
        }
}

static void test_batch(const scm_model *m)
{
    /* Full-batch GD (step dtau = eta / d = 0.01) on n = 50 d samples: the
     * empirical gradient differs from the population one by O(sqrt(d / n)) =
     * 0.14 relative, so the state follows the flow to a few percent; a wrong
     * step scale or sign would be off by O(1). */
    double mean[NOBS], sd[NOBS];
    const scm_sim_opts o = opts(SCM_SIM_BATCH, 100, 5000, 1.0, 0.0, SCM_SIM_FREE);
    run_seeds(m, ode_rule, &o, 1.0, 3, mean, sd);
    for (int j = 0; j < NOBS; j++)
        CHECK(fabs(mean[j]) < 0.05, "batch: observable %d off the flow by %.3g", j, mean[j]);
    printf("batch: rms gap to the flow %.3g\n", rms(mean));
}

static void test_reproducible_and_errors(const scm_model *m)
{
    scm_sim_opts o;
    scm_sim_opts_default(&o);
    o.d = 200;
    o.eta = 0.4;
    double Q1[K * K], R1[K * M], Q2[K * K], R2[K * M];
    scm_error err;
    for (int rep = 0; rep < 2; rep++) {
        scm_sim *s = scm_sim_alloc(m, &o, Q0, R0, &err);
        scm_sim_advance(s, 0.7, &err);
        scm_sim_state(s, rep ? Q2 : Q1, rep ? R2 : R1, NULL, NULL, &err);
        scm_sim_free(s);
    }
    CHECK(memcmp(Q1, Q2, sizeof Q1) == 0 && memcmp(R1, R2, sizeof R1) == 0,
          "same seed, different result");

    scm_sim_opts b = o;
    b.d = 3;
    CHECK(scm_sim_alloc(m, &b, Q0, R0, &err) == NULL && strstr(err.msg, "d = 3"), "d: %s",
          err.msg);
    b = o;
    b.eta = -1;
    CHECK(scm_sim_alloc(m, &b, Q0, R0, &err) == NULL && strstr(err.msg, "eta"), "eta: %s",
          err.msg);
    b = o;
    b.mode = SCM_SIM_BATCH;
    CHECK(scm_sim_alloc(m, &b, Q0, R0, &err) == NULL && strstr(err.msg, "n >= 1"), "n: %s",
          err.msg);
    b.n = SCM_SIM_BATCH_MAX;
    CHECK(scm_sim_alloc(m, &b, Q0, R0, &err) == NULL && strstr(err.msg, "exceeds"), "big: %s",
          err.msg);
    const double Qbad[K * K] = {0.05, 0.0, 0.0, 0.05};
    CHECK(scm_sim_alloc(m, &o, Qbad, R0, &err) == NULL && err.code == SCM_ENOTPSD,
          "a non-PSD start: %s", err.msg);
    scm_sim *s = scm_sim_alloc(m, &o, Q0, R0, &err);
    CHECK(scm_sim_advance(s, NAN, &err) == SCM_EINVAL, "advance to NaN");
    scm_sim_free(s);
}

/* ---- the study of `scm simulate` (scm_simulate_study_*) ---- */

static const char study_cfg[] =
    "{\"model\": {\"K\": 2, \"M\": 2, \"activation\": \"erf\"}, \"init\": {\"seed\": 7},"
    " \"integrator\": {\"t_first\": 0.1, \"n_out\": 6},"
    " \"simulate\": {\"d\": 80, \"seeds\": 3, \"eta\": 0.3, \"t_max\": 1.5}}";

static scm_status study_setup(const char *text, const char *const *sets, int nsets,
                              const scm_simulate_study_opts *cli, scm_simulate_study *st,
                              scm_error *err)
{
    return scm_simulate_study_setup(text, strlen(text), "cfg.json", sets, nsets, cli, st, err);
}

/* Each seed's ODE records equal a direct scm_traj_run from the realised
 * start, and its network's end state a direct scm_sim run. */
static void study_check_seed(const scm_simulate_study *st, const scm_simulate_seed *r, int s)
{
    scm_error err;
    scm_config cc = *st->config;
    cc.seed = st->config->seed + (unsigned long)s;
    CHECK(r->init_seed == cc.seed, "seed %d: init seed %lu", s, r->init_seed);
    double Q[K * K], R[K * M], Qe[K * K], Re[K * M], ve[K], eps;
    CHECK(scm_config_initial_state(&cc, st->model, Q, R, &err) == SCM_OK, "%s", err.msg);
    scm_sim_opts o = st->opts.sim;
    o.seed = scm_simulate_sample_seed(cc.seed);
    scm_sim *sim = scm_sim_alloc(st->model, &o, Q, R, &err);
    CHECK(sim != NULL, "%s", err.msg);
    if (!sim)
        return;
    scm_sim_state(sim, Q, R, NULL, NULL, &err);
    scm_traj_opts to = cc.traj;
    to.t_max = st->opts.t_max;
    to.eps_stop = to.grad_stop = 0.0;
    to.record = 1;
    scm_traj_result tr;
    CHECK(scm_traj_run(st->model, cc.rule, Q, R, &to, &tr, &err) == SCM_OK, "%s", err.msg);
    CHECK(tr.n_out == r->n && r->n > 1, "seed %d: %ld records, direct %ld", s, r->n, tr.n_out);
    const long n = r->n - 1;
    if (tr.n_out == r->n) {
        CHECK(tr.out_eps[n] == r->eps_ode[n], "seed %d: ODE end eps", s);
        CHECK(memcmp(tr.out_Q + n * K * K, r->Q_ode + n * K * K, sizeof Q) == 0, "ODE end Q");
        CHECK(memcmp(tr.out_R + n * K * M, r->R_ode + n * K * M, sizeof R) == 0, "ODE end R");
        scm_sim_advance(sim, tr.out_t[n], &err);
        scm_sim_state(sim, Qe, Re, ve, &eps, &err);
        CHECK(eps == r->eps_sim[n], "seed %d: network end eps %.17g vs %.17g", s, eps,
              r->eps_sim[n]);
        CHECK(memcmp(Qe, r->Q_sim + n * K * K, sizeof Qe) == 0, "network end Q");
        CHECK(scm_sim_steps(sim) == r->steps, "steps %ld vs %ld", scm_sim_steps(sim), r->steps);
    }
    scm_traj_result_free(&tr);
    scm_sim_free(sim);
}

/* The statistics recomputed from the per-seed records. */
static void study_check_stats(const scm_simulate_result *res)
{
    CHECK(res->n_stats == res->runs[0].n, "n_stats %ld", res->n_stats);
    for (long i = 0; i < res->n_stats; i++) {
        double d[8], mean = 0.0, var = 0.0, ms = 0.0;
        const int S = res->seeds;
        for (int s = 0; s < S; s++) {
            const scm_simulate_seed *r = res->runs + s;
            d[s] = r->eps_sim[i] - r->eps_ode[i];
            mean += d[s] / S;
            double dev = 0.0;
            for (int j = 0; j < K * K; j++)
                dev = fmax(dev, fabs(r->Q_sim[i * K * K + j] - r->Q_ode[i * K * K + j]));
            for (int j = 0; j < K * M; j++)
                dev = fmax(dev, fabs(r->R_sim[i * K * M + j] - r->R_ode[i * K * M + j]));
            for (int j = 0; j < K; j++)
                dev = fmax(dev, fabs(r->v_sim[i * K + j] - r->v_ode[i * K + j]));
            ms += dev * dev / S;
        }
        for (int s = 0; s < S; s++)
            var += (d[s] - mean) * (d[s] - mean) / (S - 1);
        const scm_simulate_stat *st = res->stats + i;
        CHECK(st->seeds == S, "stat %ld: %d seeds", i, st->seeds);
        CHECK(st->t == res->runs[0].t[i], "stat %ld: t", i);
        CHECK_CLOSE(st->eps_diff_mean, mean, 1e-9, 1e-15, "eps_diff_mean");
        CHECK_CLOSE(st->eps_diff_se, sqrt(var / S), 1e-6, 1e-15, "eps_diff_se");
        CHECK_CLOSE(st->state_dev_rms, sqrt(ms), 1e-12, 1e-15, "state_dev_rms");
    }
}

/* The result object and the CSV against the records. */
static void study_check_output(const scm_simulate_study *st, const scm_simulate_result *res)
{
    cJSON *j = scm_simulate_study_json(st, res);
    const cJSON *seeds = cJSON_GetObjectItem(j, "seeds"), *sum = cJSON_GetObjectItem(j, "summary");
    CHECK(cJSON_GetArraySize(seeds) == res->seeds, "json seeds");
    CHECK(cJSON_GetArraySize(sum) == res->n_stats, "json summary");
    CHECK(strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(j, "status")), "ok") == 0, "status");
    const cJSON *tr = cJSON_GetObjectItem(cJSON_GetArrayItem(seeds, 1), "trajectory");
    const cJSON *last = cJSON_GetArrayItem(tr, (int)res->runs[1].n - 1);
    CHECK(cJSON_GetObjectItem(cJSON_GetObjectItem(last, "ode"), "eps")->valuedouble ==
              res->runs[1].eps_ode[res->runs[1].n - 1],
          "json seed 1 end eps");
    size_t len = 0;
    char *csv = scm_simulate_study_csv(st, res, &len);
    long lines = 0, want = 1;
    for (size_t i = 0; csv && i < len; i++)
        lines += csv[i] == '\n';
    for (int s = 0; s < res->seeds; s++)
        want += 2 * res->runs[s].n;
    CHECK(csv && strlen(csv) == len && lines == want, "csv: %ld lines, want %ld", lines, want);
    free(csv);
    cJSON_Delete(j);
}

static void study_errors(void)
{
    scm_simulate_study st;
    scm_simulate_study_opts cli;
    scm_simulate_study_opts_default(&cli);
    scm_error err;
    const char *set1[] = {"simulate.foo=1"}, *set2[] = {"rule=sgd", "rule_params.eta=0.3"};
    CHECK(study_setup("{not json", NULL, 0, &cli, &st, &err) == SCM_EINVAL &&
              strcmp(err.msg, "cannot read 'cfg.json' as JSON") == 0,
          "not JSON: %s", err.msg);
    CHECK(study_setup(study_cfg, set1, 1, &cli, &st, &err) == SCM_EINVAL &&
              strstr(err.msg, "unknown key 'simulate.foo'") != NULL,
          "unknown key: %s", err.msg);
    cli.sim.mode = SCM_SIM_BATCH;
    cli.given = SCM_SIMULATE_GIVEN_MODE;
    CHECK(study_setup(study_cfg, NULL, 0, &cli, &st, &err) == SCM_EINVAL &&
              strstr(err.msg, "batch mode needs the number of samples") != NULL,
          "batch without n: %s", err.msg);
    CHECK(study_setup(study_cfg, set2, 2, &cli, &st, &err) == SCM_EINVAL &&
              strstr(err.msg, "rule sgd is one-pass online SGD") != NULL,
          "sgd batch: %s", err.msg);
    CHECK(st.config == NULL && st.model == NULL, "nothing held after a failure");
}

static void test_study(void)
{
    scm_simulate_study st;
    scm_simulate_study_opts cli;
    scm_simulate_study_opts_default(&cli);
    scm_error err;
    const char *sets[] = {"simulate.seeds=4"};
    /* The command line's d over the section's; seeds from --set. */
    cli.sim.d = 60;
    cli.given = SCM_SIMULATE_GIVEN_D;
    cli.threads = 3;
    if (study_setup(study_cfg, sets, 1, &cli, &st, &err)) {
        CHECK(0, "setup: %s", err.msg);
        return;
    }
    CHECK(st.opts.sim.d == 60 && st.opts.seeds == 4 && st.opts.sim.eta == 0.3 &&
              st.opts.t_max == 1.5 && st.config->d == 60,
          "resolved: d %ld, seeds %d, eta %g", st.opts.sim.d, st.opts.seeds, st.opts.sim.eta);
    scm_simulate_result res, res1;
    CHECK(scm_simulate_study_run(&st, &res, &err) == SCM_OK, "run: %s", err.msg);
    CHECK(res.seeds == 4 && !res.failed, "seeds %d, failed %d", res.seeds, res.failed);
    for (int s = 0; s < res.seeds; s++)
        study_check_seed(&st, res.runs + s, s);
    study_check_stats(&res);
    study_check_output(&st, &res);
    /* One thread: the same numbers. */
    st.opts.threads = 1;
    CHECK(scm_simulate_study_run(&st, &res1, &err) == SCM_OK, "run: %s", err.msg);
    for (int s = 0; s < res.seeds; s++)
        CHECK(res1.runs[s].n == res.runs[s].n &&
                  memcmp(res1.runs[s].eps_sim, res.runs[s].eps_sim,
                         sizeof(double) * (size_t)res.runs[s].n) == 0,
              "seed %d differs with 1 thread", s);
    scm_simulate_result_free(&res1);
    scm_simulate_result_free(&res);
    scm_simulate_study_free(&st);
    study_errors();
}

int main(void)
{
    gsl_set_error_handler_off();
    scm_error err;
    scm_model *m = scm_model_alloc(K, M, &scm_act_erf, NULL, NULL, NULL, &err);
    if (!m)
        return 1;
    test_study();
    test_reproducible_and_errors(m);
    test_retractions(m);
    test_batch(m);
    static const int S_gd[3] = {24, 24, 12}, S_rule[3] = {24, 16, 8};
    scm_sim_opts t = opts(SCM_SIM_ONLINE, 0, 0, 0.5, 0.0, SCM_SIM_FREE);
    test_scaling(m, ode_rule, &t, S_gd, 1.0);
    test_agreement(m, ode_rule, SCM_SIM_FREE, 0.0, 1000, 24);
    scm_model *relu = scm_model_alloc(K, M, &scm_act_relu, NULL, NULL, NULL, &err);
    test_agreement(relu, ode_rule, SCM_SIM_FREE, 0.0, 1000, 16);
    scm_model_free(relu);
    /* The other rules: against their ODEs (and the manifold ones against
     * the weight-space projected flow too); two_layer from v(0) = (0.5, 1.5). */
    static const double v0[K] = {0.5, 1.5};
    scm_model *m2 = scm_model_alloc(K, M, &scm_act_erf, NULL, v0, NULL, &err);
    for (int c = SCM_SIM_SPHERE; c <= SCM_SIM_STIEFEL; c++) {
        test_references(m, (scm_sim_constraint)c);
        test_agreement(m, ode_rule, (scm_sim_constraint)c, 0.0, 1000, 16);
        t = opts(SCM_SIM_ONLINE, 0, 0, 0.5, 0.0, (scm_sim_constraint)c);
        test_scaling(m, ode_rule, &t, S_rule, 0.5);
    }
    test_agreement(m2, ode_rule, SCM_SIM_FREE, 1.0, 1000, 16);
    t = opts(SCM_SIM_ONLINE, 0, 0, 0.5, 1.0, SCM_SIM_FREE);
    test_scaling(m2, ode_rule, &t, S_rule, 0.5);
    /* sgd: finite eta against the library's sgd ODE, no extrapolation; erf
     * with v trained and label noise, ReLU with v fixed. */
    t.noise = 0.1;
    test_scaling(m2, ode_sgd, &t, S_gd, 0.5);
    test_sgd(m2, &t);
    scm_model *relu2 = scm_model_alloc(K, M, &scm_act_relu, NULL, NULL, NULL, &err);
    t = opts(SCM_SIM_ONLINE, 0, 0, 0.5, 0.0, SCM_SIM_FREE);
    test_sgd(relu2, &t);
    scm_model_free(relu2);
    scm_model_free(m2);
    test_finite_eta();
    scm_model_free(m);
    return TEST_SUMMARY();
}
