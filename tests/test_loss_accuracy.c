/* test_loss_accuracy.c: the losses scmode reports (issue 25, item 5).
 *  - the realisable state of flow.h (scm_flow_realisable): a PSD state is
 *    returned bit for bit; a state pushed out of the PSD cone along a known
 *    direction is brought back onto Q = R R^T, the size of the push
 *    reported, and its loss equals the one computed from the weights
 *    (linear units: 1/2 |sum_k w_k - sum_m w*_m|^2, no kernel);
 *  - an erf state beyond the Cauchy-Schwarz bound (what CVODE's
 *    interpolation produced at the output points of a loose run) has no
 *    loss of its own but a finite realisable one;
 *  - compare-style runs (scm compare's integrator options) that end at
 *    the global minimum report eps >= 0 at every point and say when the
 *    state's own loss was negative (eps_zeroed, eps_proj > 0), and the
 *    sweep record says so ("eps_of") and parses back;
 *  - erf, K = 3, M = 2, sgd training v, rtol 1e-3: every output point has
 *    a finite loss >= 0, or the run fails naming the reason;
 *  - the binary128 flow of flow_ext.h (the tail stage's) against the
 *    library's double flow at a generic state (T, v, v* general), its
 *    dC = -(S C + C S) against dQ - dR T^-1 R^T - R T^-1 dR^T, a singular
 *    T refused;
 *  - accuracy of a trajectory's loss against a reference computed another
 *    way: RK4 with a fixed step of 1/400 in long double (80-bit) in the
 *    variables (C, R), C = Q - R R^T (so that C keeps its relative
 *    precision down to eps = 1e-12), the loss summed in binary128 (its own
 *    kernels); shown accurate by step halving to 1e-8 down to eps < 1e-12.
 *    For linear units the exact eps(tau) = eps(0) exp(-2 K tau).
 *    Asserted: 1e-6 relative at every output point with eps in [1e-12,
 *    1e-4] with the tail stage (traj.h tail_eps = 1e-4, after a first
 *    stage at rtol 1e-10 without a loose stage): ReLU and erf at K = M = 3,
 *    ReLU at K = M = 5, erf at K = 4, M = 3.  Printed: the errors without
 *    it, with scm compare's options, and for linear units, which the tail
 *    stage does not take (docs/sweeps.md, "Reported losses"). */
#include <stdlib.h>
#include <string.h>

#include "scm/flow.h"
#include "scm/flow_ext.h"
#include "scm/init.h"
#include "scm/sweep.h"
#include "scm/traj.h"
#include "test_loss_accuracy_ref.h"
#include "testutil.h"

/* scm compare's integrator (src/studies/compare.c, base_text), without the
 * stopping tests, which the caller sets. */
static void compare_opts(scm_traj_opts *o)
{
    scm_traj_opts_default(o);
    o->linsol = SCM_LINSOL_GMRES;
    o->grad_stop = 1e-10;
    o->eps_stop = 1e-10;
    o->loose_until = 1e-6;
    o->loose_rtol = 1e-4;
    o->loose_atol = 1e-6;
    o->analytic_jv = 2;
    o->krylov_dim = 20;
    o->max_steps = 100000;
}

/* ---- the realisable state ---- */

static void test_realisable(void)
{
    enum { K = 3, M = 3, D = 3 };
    scm_error e;
    scm_model *m = scm_model_alloc(K, M, &scm_act_linear, NULL, NULL, NULL, &e);
    /* students in the teacher span (weights = rows of R, T = I): Q = R R^T */
    const double R[K * M] = {0.9, 0.1, -0.2, 0.05, 1.1, 0.3, -0.15, 0.2, 0.85};
    double Q[K * K], Qp[K * K], Qs[K * K], proj;
    for (int k = 0; k < K; k++)
        for (int l = 0; l < K; l++) {
            Q[k * K + l] = 0.0;
            for (int n = 0; n < D; n++)
                Q[k * K + l] += R[k * M + n] * R[l * M + n];
        }
    /* a PSD state with a positive Schur complement: returned bit for bit */
    memcpy(Qs, Q, sizeof Q);
    for (int k = 0; k < K; k++)
        Qs[k * K + k] += 0.01 * (k + 1);
    CHECK(scm_flow_realisable(m, Qs, R, Qp, &proj) == SCM_OK, "realisable");
    CHECK(proj == 0.0 && memcmp(Qp, Qs, sizeof Qs) == 0, "a PSD state is kept: proj %g", proj);
    /* pushed out of the cone: Q - 2.5e-7 u u^T, u a unit vector */
    const double u[K] = {0.6, -0.48, 0.64};
    const double push = 2.5e-7;
    for (int k = 0; k < K; k++)
        for (int l = 0; l < K; l++)
            Qs[k * K + l] = Q[k * K + l] - push * u[k] * u[l];
    CHECK(scm_flow_realisable(m, Qs, R, Qp, &proj) == SCM_OK, "realisable");
    CHECK_CLOSE(proj, push, 1e-8, 0.0, "the projection's size");
    double dmax = 0.0;
    for (int i = 0; i < K * K; i++)
        dmax = fmax(dmax, fabs(Qp[i] - Q[i]));
    CHECK(dmax <= 1e-15, "projected back onto Q = R R^T: max diff %g", dmax);
    CHECK(scm_model_check_state(m, Qp, R, 1e-12, &e) == SCM_OK, "the projection is PSD: %s", e.msg);
    /* the loss: the state's own is negative by the push; the realisable
     * one is that of the weights, 1/2 |sum_k w_k - sum_m w*_m|^2 */
    scm_flow *fl = scm_flow_alloc(m);
    double own, real, want = 0.0;
    CHECK(scm_flow_loss(fl, Qs, R, &own) == SCM_OK, "own loss");
    CHECK(scm_flow_loss_realisable(fl, Qs, R, &real, &proj) == SCM_OK, "realisable loss");
    for (int n = 0; n < M; n++) {
        double s = -1.0;
        for (int k = 0; k < K; k++)
            s += R[k * M + n];
        want += 0.5 * s * s;
    }
    CHECK(own < want - 1e-8, "the pushed state's own loss is below the true one: %g vs %g", own, want);
    CHECK_CLOSE(real, want, 1e-12, 1e-15, "realisable loss = the weights' loss");
    scm_flow_free(fl);
    scm_model_free(m);

    /* erf: a student pair beyond Cauchy-Schwarz by 1e-3 (relative) has no
     * loss of its own (the kernels refuse it) but a finite realisable one */
    scm_model *me = scm_model_alloc(2, 1, &scm_act_erf, NULL, NULL, NULL, &e);
    scm_flow *fe = scm_flow_alloc(me);
    double Qe[4] = {1.0, 1.001, 1.001, 1.0}, Re[2] = {0.7, 0.7}, le;
    CHECK(scm_flow_loss(fe, Qe, Re, &le) == SCM_ENOTPSD, "erf: no loss beyond Cauchy-Schwarz");
    CHECK(scm_flow_loss_realisable(fe, Qe, Re, &le, &proj) == SCM_OK && isfinite(le) && le >= 0,
          "erf: realisable loss %g", le);
    /* C = Q - R R^T = [[0.51, 0.511], [0.511, 0.51]]: eigenvalues 1.021, -0.001 */
    CHECK_CLOSE(proj, 1e-3, 1e-9, 0.0, "erf: the projection's size");
    scm_flow_free(fe);
    scm_model_free(me);
}

/* ---- compare-style runs at the global minimum ---- */

static void test_compare_runs(void)
{
    enum { K = 4, M = 4 };
    scm_error e;
    scm_model *m = scm_model_alloc(K, M, &scm_act_relu, NULL, NULL, NULL, &e);
    scm_traj_opts o;
    compare_opts(&o);
    o.record = 1;
    int n_global = 0, n_zeroed = 0, n_rec_ok = 0;
    for (unsigned long seed = 1; seed <= 12; seed++) {
        double Q0[K * K], R0[K * M];
        CHECK(scm_init_random(m, 1000, 1.0, seed, Q0, R0, &e) == SCM_OK, "init: %s", e.msg);
        scm_traj_result r;
        CHECK(scm_traj_run(m, &scm_rule_gd, Q0, R0, &o, &r, &e) == SCM_OK, "run: %s", e.msg);
        if (r.stop == SCM_STOP_EPS) {
            n_global++;
            CHECK(r.eps >= 0.0, "seed %lu: final eps %g", seed, r.eps);
            for (long i = 0; i < r.n_out; i++)
                CHECK(isfinite(r.out_eps[i]) && r.out_eps[i] >= 0.0, "seed %lu: out_eps[%ld] = %g",
                      seed, i, r.out_eps[i]);
            scm_flow *fl = scm_flow_alloc(m);
            double own;
            CHECK(scm_flow_loss(fl, r.Q, r.R, &own) == SCM_OK, "own loss");
            scm_flow_free(fl);
            CHECK((own < 0.0) == r.eps_zeroed, "seed %lu: own loss %g, zeroed %d", seed, own,
                  r.eps_zeroed);
            if (r.eps_zeroed) {
                n_zeroed++;
                CHECK(r.eps == 0.0 && r.eps_proj > 0.0 && r.eps_proj < 1e-6,
                      "seed %lu: zeroed loss %g, projection %g", seed, r.eps, r.eps_proj);
                /* the sweep record says so, and reads back */
                scm_sweep_record rec;
                memset(&rec, 0, sizeof rec);
                rec.index = 0;
                rec.seed = seed;
                rec.stop = r.stop;
                rec.converged = 1;
                rec.t = r.t;
                rec.eps = r.eps;
                rec.max_F = r.max_F;
                scm_sweep_opts so;
                scm_sweep_opts_default(&so);
                scm_sweep_classify(m, r.Q, r.R, r.eps, NULL, &so, &rec);
                char *line = scm_sweep_record_json(&rec);
                scm_sweep_record back;
                int ok = line && strstr(line, "\"eps_of\":\"global_minimum\"") &&
                         scm_sweep_record_parse(line, &back, &e) == SCM_OK && back.eps_zeroed &&
                         back.psd_gap == rec.psd_gap && rec.psd_gap > 0.0;
                CHECK(ok, "record: %s", line ? line : "(null)");
                /* "eps_of" on a record whose eps is not 0 is refused, naming it */
                char *bad = line ? strstr(line, "\"eps\":0,") : NULL;
                if (bad) {
                    char *twisted = malloc(strlen(line) + 8);
                    size_t pre = (size_t)(bad - line) + strlen("\"eps\":");
                    sprintf(twisted, "%.*s1e-3%s", (int)pre, line, bad + strlen("\"eps\":0"));
                    CHECK(scm_sweep_record_parse(twisted, &back, &e) != SCM_OK &&
                              strstr(e.msg, "eps_of"),
                          "eps_of with eps 1e-3 refused: %s", e.msg);
                    free(twisted);
                }
                CHECK(bad != NULL, "the record's eps is 0: %s", line ? line : "(null)");
                n_rec_ok += ok;
                free(line);
            }
        }
        scm_traj_result_free(&r);
    }
    CHECK(n_global >= 6, "runs at the global minimum: %d of 12", n_global);
    CHECK(n_zeroed >= 1, "runs whose own final loss was negative: %d", n_zeroed);
    printf("compare-style relu K = M = 4: %d of 12 at the global minimum, %d with a negative own "
           "loss (reported as 0), %d records checked\n", n_global, n_zeroed, n_rec_ok);
    scm_model_free(m);
}

/* ---- erf sgd, two-layer, rtol 1e-3 ---- */

static void test_erf_sgd_outputs(void)
{
    enum { K = 3, M = 2 };
    scm_error e;
    scm_model *m = scm_model_alloc(K, M, &scm_act_erf, NULL, NULL, NULL, &e);
    int n_bad = 0, n_failed = 0;
    for (unsigned long seed = 1; seed <= 8; seed++) {
        double Q0[K * K], R0[K * M];
        scm_init_random(m, 1000, 1.0, seed, Q0, R0, &e);
        scm_traj_opts o;
        scm_traj_opts_default(&o);
        o.rtol = 1e-3;
        o.rule_params.eta = 0.5;
        o.rule_params.lr_v_ratio = 1.0;
        scm_traj_result r;
        CHECK(scm_traj_run(m, &scm_rule_sgd, Q0, R0, &o, &r, &e) == SCM_OK, "run: %s", e.msg);
        if (r.stop == SCM_STOP_FAILED) {
            n_failed++;
            CHECK(r.err.msg[0] != '\0', "seed %lu: a failure names its reason", seed);
        }
        for (long i = 0; i < r.n_out; i++)
            n_bad += !(isfinite(r.out_eps[i]) && r.out_eps[i] >= 0.0);
        CHECK(r.stop == SCM_STOP_FAILED || (isfinite(r.eps) && r.eps >= 0.0),
              "seed %lu: final eps %g", seed, r.eps);
        scm_traj_result_free(&r);
    }
    CHECK(n_bad == 0, "erf sgd at rtol 1e-3: %d output points without a finite loss >= 0", n_bad);
    printf("erf sgd K = 3, M = 2, rtol 1e-3: 8 runs, %d failed (naming why), %d bad points\n",
           n_failed, n_bad);
    scm_model_free(m);
}

/* ---- the references (test_loss_accuracy_ref.h) ---- */

/* Linear units, v = v* = 1, any T: eps = 1/2 |s|^2 with s = sum_k w_k -
 * sum_m w*_m (the weights' error vector).  gd moves every w_k by -s
 * (dw_k/dtau = -d eps/dw_k), so ds/dtau = -K s and eps(tau) = eps(0)
 * exp(-2 K tau) exactly (in the overlaps: d eps/dtau = sum A dQ + sum B dR
 * = -K (1'Q1 - 2 1'R1 + 1'T1) = -2 K eps, with A = J/2, B = -J). */
static double ref_linear(int K, double eps0, double t)
{
    return eps0 * exp(-2.0 * K * t);
}

/* The options of an accuracy run: scm compare's (the loose stage included)
 * or tight ones (rtol 1e-12, atol 1e-14, no loose stage), with or without
 * the tail stage (tail_eps 1e-4). */
enum { OPT_TIGHT = 1, OPT_TAIL = 2, OPT_MID = 4 };

/* The reported loss against the reference at 80 log-spaced output points;
 * asserted (when assert_ok) 1e-6 relative at every point with eps in
 * [1e-12, 1e-4]; the worst errors in [1e-8, 1e-4] and [1e-12, 1e-8) are
 * printed.  Returns the run's steps. */
static long accuracy_case(const char *name, const scm_activation *act, int K, int M,
                          unsigned long seed, double t_max, int flags, int assert_ok)
{
    scm_error e;
    scm_model *m = scm_model_alloc(K, M, act, NULL, NULL, NULL, &e);
    double Q0[64], R0[64];
    scm_init_random(m, 1000, 1.0, seed, Q0, R0, &e);
    scm_traj_opts o;
    compare_opts(&o);
    o.eps_stop = o.grad_stop = 0.0;
    o.t_max = t_max;
    o.t_first = t_max / 400;
    o.n_out = 80;
    if (flags & OPT_TIGHT) {
        o.loose_until = 0.0;
        o.rtol = 1e-12;
        o.atol = 1e-14;
    }
    if (flags & OPT_TAIL)
        o.tail_eps = 1e-4;
    if (flags & OPT_MID) {
        o.loose_until = 0.0;
        o.rtol = 1e-10;
        o.atol = 1e-12;
    }
    scm_traj_result r;
    CHECK(scm_traj_run(m, &scm_rule_gd, Q0, R0, &o, &r, &e) == SCM_OK && r.stop != SCM_STOP_FAILED,
          "%s: run: %s", name, r.err.msg);
    double *ref = malloc(sizeof(double) * (size_t)r.n_out);
    if (act == &scm_act_linear)
        for (long i = 0; i < r.n_out; i++)
            ref[i] = ref_linear(K, r.out_eps[0], r.out_t[i]);
    else
        ref_run(act, K, M, Q0, R0, r.out_t, r.n_out, 1.0L / 400, ref);
    double worst_hi = 0.0, worst_lo = 0.0, eps_lo = 1.0;
    int n_in = 0;
    for (long i = 0; i < r.n_out; i++) {
        const double want = ref[i], rel = fabs(r.out_eps[i] - want) / want;
        if (!(want >= 1e-12 && want <= 1e-4))
            continue;
        n_in++;
        if (want >= 1e-8)
            worst_hi = fmax(worst_hi, rel);
        else
            worst_lo = fmax(worst_lo, rel), eps_lo = fmin(eps_lo, want);
        if (assert_ok)
            CHECK(rel <= 1e-6, "%s: t = %g: eps %.10g, reference %.10g (rel %.2g)", name,
                  r.out_t[i], r.out_eps[i], want, rel);
    }
    CHECK(n_in >= 6 && eps_lo < 1e-11, "%s: %d points in [1e-12, 1e-4], the lowest %g", name,
          n_in, eps_lo);
    printf("%-12s %-8s %-5s: rel. error <= %.2g for eps in [1e-8, 1e-4], <= %.2g in [%.1g, 1e-8)"
           "; %ld steps (tail %ld from t = %.4g)\n",
           name, flags & OPT_TIGHT ? "tight" : flags & OPT_MID ? "1e-10" : "compare", flags & OPT_TAIL ? "tail" : "-",
           worst_hi, worst_lo, eps_lo, r.n_steps, r.tail_steps, r.tail_t);
    long steps = r.n_steps;
    free(ref);
    scm_traj_result_free(&r);
    scm_model_free(m);
    return steps;
}

/* The references themselves: RK4 at h and h / 2 agree to 1e-8 relative at
 * every output point of a run down to eps ~ 1e-12 (its error is h^4), ten
 * times below what it checks; its flow is the library's at a generic state;
 * the linear closed form is the library's loss along a tight run. */
static void test_reference(void)
{
    enum { K = 3, M = 3 };
    scm_error e;
    scm_model *m = scm_model_alloc(K, M, &scm_act_relu, NULL, NULL, NULL, &e);
    double Q0[K * K], R0[K * M], ts[6] = {20.0, 60.0, 120.0, 160.0, 200.0, 250.0}, a[6], b[6];
    scm_init_random(m, 1000, 1.0, 3, Q0, R0, &e);
    ref_run(&scm_act_relu, K, M, Q0, R0, ts, 6, 1.0L / 400, a);
    ref_run(&scm_act_relu, K, M, Q0, R0, ts, 6, 1.0L / 800, b);
    for (int i = 0; i < 6; i++)
        CHECK(fabs(a[i] - b[i]) <= 1e-8 * b[i], "reference at t = %g: %.15g vs %.15g", ts[i],
              a[i], b[i]);
    CHECK(b[5] < 1e-12, "the step-halving check reaches eps < 1e-12: %g", b[5]);
    /* its flow against the library's at the start (double) */
    scm_flow *fl = scm_flow_alloc(m);
    double FQ[K * K], FR[K * M], eps;
    ld q[K * K], r[K * M], fq[K * K], fr[K * M];
    for (int i = 0; i < K * K; i++)
        q[i] = Q0[i];
    for (int i = 0; i < K * M; i++)
        r[i] = R0[i];
    ld el = ref_flow(&scm_act_relu, K, M, q, r, fq, fr, NULL);
    CHECK(scm_flow_rhs(fl, Q0, R0, FQ, FR, &eps) == SCM_OK, "flow");
    CHECK_CLOSE(eps, (double)el, 1e-13, 0.0, "reference loss");
    for (int i = 0; i < K * K; i++)
        CHECK_CLOSE(FQ[i], (double)fq[i], 1e-12, 1e-14, "reference F_Q");
    for (int i = 0; i < K * M; i++)
        CHECK_CLOSE(FR[i], (double)fr[i], 1e-12, 1e-14, "reference F_R");
    scm_flow_free(fl);
    scm_model_free(m);

    /* linear: the closed form against a tight run while eps >= 1e-4 (the
     * double (Q, R) state's error, ~1e-11 absolute, is below 1e-7 there) */
    scm_model *ml = scm_model_alloc(K, M, &scm_act_linear, NULL, NULL, NULL, &e);
    scm_init_random(ml, 1000, 1.0, 3, Q0, R0, &e);
    scm_traj_opts o;
    scm_traj_opts_default(&o);
    o.rtol = 1e-12;
    o.atol = 1e-14;
    o.eps_stop = o.grad_stop = 0.0;
    o.t_max = 3.0;
    scm_traj_result tr;
    CHECK(scm_traj_run(ml, &scm_rule_gd, Q0, R0, &o, &tr, &e) == SCM_OK, "linear run");
    for (long i = 0; i < tr.n_out; i++)
        if (tr.out_eps[i] >= 1e-4)
            CHECK(fabs(tr.out_eps[i] / ref_linear(K, tr.out_eps[0], tr.out_t[i]) - 1) <= 1e-7,
                  "linear closed form at t = %g: %.12g vs %.12g", tr.out_t[i], tr.out_eps[i],
                  ref_linear(K, tr.out_eps[0], tr.out_t[i]));
    scm_traj_result_free(&tr);
    scm_model_free(ml);
}

/* The binary128 flow of flow_ext.h against the library's double flow at a
 * generic state (T, v, v* not the identity and ones), for every activation:
 * the loss and dQ to 1e-12, dR to 1e-12, and dC = dQ - dR T^-1 R^T - R T^-1
 * dR^T (the identity the tail stage integrates). */
static void test_flow_ext(void)
{
    enum { K = 3, M = 2 };
    const scm_activation *acts[3] = {&scm_act_relu, &scm_act_erf, &scm_act_linear};
    const double T[M * M] = {1.3, 0.2, 0.2, 0.7}, v[K] = {0.9, 1.2, 0.6}, vs[M] = {1.1, 0.8};
    const double Q[K * K] = {1.1, 0.3, -0.2, 0.3, 0.8, 0.1, -0.2, 0.1, 1.4};
    const double R[K * M] = {0.5, -0.3, 0.2, 0.4, -0.1, 0.6};
    for (int a = 0; a < 3; a++) {
        scm_error e;
        scm_model *m = scm_model_alloc(K, M, acts[a], T, v, vs, &e);
        scm_flow *fl = scm_flow_alloc(m);
        scm_flow_ext *x = scm_flow_ext_alloc(m, &e);
        CHECK(m && fl && x, "alloc: %s", e.msg);
        double FQ[K * K], FR[K * M], eps, C[K * K], dC[K * K], dR[K * M], dQ[K * K], ex, Qb[K * K];
        CHECK(scm_flow_rhs(fl, Q, R, FQ, FR, &eps) == SCM_OK, "flow");
        scm_flow_ext_schur(x, Q, R, C);
        scm_flow_ext_q(x, C, R, Qb);
        for (int i = 0; i < K * K; i++)
            CHECK_CLOSE(Qb[i], Q[i], 1e-15, 1e-16, "Q from C");
        CHECK(scm_flow_ext_rhs(x, C, R, dC, dR, dQ, &ex) == SCM_OK, "ext flow");
        CHECK_CLOSE(ex, eps, 1e-12, 1e-15, "ext loss");
        double el;
        CHECK(scm_flow_ext_loss(x, C, R, &el) == SCM_OK && el == ex, "ext loss alone");
        for (int i = 0; i < K * K; i++)
            CHECK_CLOSE(dQ[i], FQ[i], 1e-11, 1e-14, "dQ");
        for (int i = 0; i < K * M; i++)
            CHECK_CLOSE(dR[i], FR[i], 1e-11, 1e-14, "dR");
        /* T^-1 of the 2 x 2 T by its closed form */
        const double det = T[0] * T[3] - T[1] * T[2];
        const double Ti[4] = {T[3] / det, -T[1] / det, -T[2] / det, T[0] / det};
        for (int k = 0; k < K; k++)
            for (int l = 0; l < K; l++) {
                double w = FQ[k * K + l];
                for (int p = 0; p < M; p++)
                    for (int n = 0; n < M; n++)
                        w -= Ti[p * M + n] *
                             (FR[k * M + p] * R[l * M + n] + R[k * M + p] * FR[l * M + n]);
                CHECK_CLOSE(dC[k * K + l], w, 1e-10, 1e-13, "dC");
            }
        scm_flow_ext_free(x);
        scm_flow_free(fl);
        scm_model_free(m);
    }
    /* a singular T is refused, naming it */
    scm_error e;
    const double Ts[4] = {1.0, 1.0, 1.0, 1.0};
    scm_model *ms = scm_model_alloc(K, M, &scm_act_erf, Ts, NULL, NULL, &e);
    CHECK(ms && scm_flow_ext_alloc(ms, &e) == NULL && e.code == SCM_ESINGULAR &&
              strstr(e.msg, "singular"), "singular T: %s", e.msg);
    scm_model_free(ms);
}

/* Linear units in weight space at finite d (d = 40, K = 3, M = 2, v and v*
 * not ones, T = W* W*^T / d not the identity): gd in time tau is
 * dw_k/dtau = -d d eps / dw_k = -v_k r, r = sum_k v_k w_k - sum_m v*_m w*_m,
 * integrated by RK4 in long double (step 1e-3), Q, R and eps = |r|^2 / (2 d)
 * from the weights; against the run of the same start with the tail stage
 * (its closed form, traj_tail_linear.c), entered at eps < 1e-4: eps to 1e-6
 * relative down to 1e-12, Q and R to 1e-9.  Checks the closed form's signs
 * and scales where v != 1 and T != I. */
static void test_linear_weights(void)
{
    enum { K = 3, M = 2, D = 40 };
    const double v[K] = {0.8, 1.3, -0.6}, vs[M] = {1.1, 0.7};
    ld W[K][D], Ws[M][D];
    srand48(11);
    for (int i = 0; i < D; i++) { /* Box-Muller */
        for (int k = 0; k < K + M; k++) {
            const double u1 = drand48() + 1e-300, u2 = drand48();
            const ld z = sqrtl(-2.0L * logl(u1)) * cosl(6.283185307179586476925L * u2);
            if (k < K)
                W[k][i] = 0.5L * z;
            else
                Ws[k - K][i] = z;
        }
    }
    double T[M * M], Q0[K * K], R0[K * M];
    for (int n = 0; n < M; n++)
        for (int p = 0; p < M; p++) {
            ld s = 0;
            for (int i = 0; i < D; i++)
                s += Ws[n][i] * Ws[p][i];
            T[n * M + p] = (double)(s / D);
        }
    /* the weights' overlaps, rounded as the model sees them */
    for (int k = 0; k < K; k++) {
        for (int l = 0; l < K; l++) {
            ld s = 0;
            for (int i = 0; i < D; i++)
                s += W[k][i] * W[l][i];
            Q0[k * K + l] = (double)(s / D);
        }
        for (int n = 0; n < M; n++) {
            ld s = 0;
            for (int i = 0; i < D; i++)
                s += W[k][i] * Ws[n][i];
            R0[k * M + n] = (double)(s / D);
        }
    }
    scm_error e;
    scm_model *m = scm_model_alloc(K, M, &scm_act_linear, T, v, vs, &e);
    CHECK(m != NULL, "model: %s", e.msg);
    scm_traj_opts o;
    scm_traj_opts_default(&o);
    o.rtol = 1e-10;
    o.atol = 1e-12;
    o.eps_stop = 1e-13;
    o.grad_stop = 0.0;
    o.t_max = 20.0;
    o.t_first = 0.01;
    o.n_out = 60;
    o.tail_eps = 1e-4;
    scm_traj_result r;
    CHECK(scm_traj_run(m, &scm_rule_gd, Q0, R0, &o, &r, &e) == SCM_OK &&
              r.stop == SCM_STOP_EPS && isfinite(r.tail_t),
          "linear weights run: stop %s, tail from %g: %s", scm_stop_reason_str(r.stop), r.tail_t,
          r.err.msg);
    /* RK4 on the weights to each output time */
    ld t = 0, h = 1e-3L, k1[K][D], k2[K][D], k3[K][D], k4[K][D], Wt[K][D];
    double worst = 0.0, wq = 0.0, lowest = 1.0;
    for (long j = 0; j < r.n_out; j++) {
        while (t < (ld)r.out_t[j]) {
            const ld hs = (ld)r.out_t[j] - t < h ? (ld)r.out_t[j] - t : h;
            ld(*ks[4])[D] = {k1, k2, k3, k4};
            const ld c[4] = {0, 0.5L, 0.5L, 1};
            for (int st = 0; st < 4; st++) {
                for (int k = 0; k < K; k++)
                    for (int i = 0; i < D; i++)
                        Wt[k][i] = W[k][i] + (st ? c[st] * hs * ks[st - 1][k][i] : 0);
                for (int i = 0; i < D; i++) {
                    ld res = 0;
                    for (int k = 0; k < K; k++)
                        res += v[k] * Wt[k][i];
                    for (int n = 0; n < M; n++)
                        res -= vs[n] * Ws[n][i];
                    for (int k = 0; k < K; k++)
                        ks[st][k][i] = -v[k] * res;
                }
            }
            for (int k = 0; k < K; k++)
                for (int i = 0; i < D; i++)
                    W[k][i] += hs / 6 * (k1[k][i] + 2 * k2[k][i] + 2 * k3[k][i] + k4[k][i]);
            t += hs;
        }
        ld rr = 0;
        for (int i = 0; i < D; i++) {
            ld res = 0;
            for (int k = 0; k < K; k++)
                res += v[k] * W[k][i];
            for (int n = 0; n < M; n++)
                res -= vs[n] * Ws[n][i];
            rr += res * res;
        }
        const double want = (double)(rr / (2 * D));
        if (want >= 1e-12) {
            const double rel = fabs(r.out_eps[j] - want) / want;
            worst = fmax(worst, rel);
            lowest = fmin(lowest, want);
            CHECK(rel <= 1e-6, "linear weights: t = %g: eps %.12g, weights %.12g (rel %.2g)",
                  r.out_t[j], r.out_eps[j], want, rel);
        }
        for (int k = 0; k < K; k++) {
            for (int l = 0; l < K; l++) {
                ld s = 0;
                for (int i = 0; i < D; i++)
                    s += W[k][i] * W[l][i];
                wq = fmax(wq, fabs(r.out_Q[j * K * K + k * K + l] - (double)(s / D)));
            }
            for (int n = 0; n < M; n++) {
                ld s = 0;
                for (int i = 0; i < D; i++)
                    s += W[k][i] * Ws[n][i];
                wq = fmax(wq, fabs(r.out_R[j * K * M + k * M + n] - (double)(s / D)));
            }
        }
    }
    CHECK(lowest < 1e-11, "linear weights: the check reaches eps %g", lowest);
    CHECK(wq <= 1e-9, "linear weights: Q, R against the weights' overlaps: max diff %g", wq);
    printf("linear K = 3, M = 2, v != 1, T != I, d = 40: eps against the weights <= %.2g "
           "(down to %.2g), Q, R within %.2g; tail from t = %.4g, %ld steps (%ld in the tail)\n",
           worst, lowest, wq, r.tail_t, r.n_steps, r.tail_steps);
    scm_traj_result_free(&r);
    /* a rule whose flow does not close is refused, naming it */
    CHECK(scm_traj_run(m, &scm_rule_normalised, Q0, R0, &o, &r, &e) == SCM_EINVAL &&
              strstr(e.msg, "tail_eps") && strstr(e.msg, "normalised"),
          "tail_eps with rule normalised refused: %s", e.msg);
    scm_model_free(m);
}

int main(void)
{
    test_realisable();
    test_compare_runs();
    test_erf_sgd_outputs();
    test_flow_ext();
    test_reference();
    /* asserted: a first stage at rtol 1e-10 and the tail stage */
    accuracy_case("relu 3/3", &scm_act_relu, 3, 3, 3, 250.0, OPT_MID | OPT_TAIL, 1);
    accuracy_case("erf 3/3", &scm_act_erf, 3, 3, 3, 600.0, OPT_MID | OPT_TAIL, 1);
    accuracy_case("relu 5/5", &scm_act_relu, 5, 5, 3, 900.0, OPT_MID | OPT_TAIL, 1);
    accuracy_case("erf 4/3", &scm_act_erf, 4, 3, 3, 1500.0, OPT_MID | OPT_TAIL, 1);
    /* printed (docs/sweeps.md, "Reported losses"): without the tail stage,
     * and with scm compare's loose stage */
    accuracy_case("relu 3/3", &scm_act_relu, 3, 3, 3, 250.0, 0, 0);
    accuracy_case("relu 3/3", &scm_act_relu, 3, 3, 3, 250.0, OPT_TAIL, 0);
    accuracy_case("erf 3/3", &scm_act_erf, 3, 3, 3, 600.0, OPT_TAIL, 0);
    accuracy_case("linear 3/3", &scm_act_linear, 3, 3, 3, 6.0, OPT_TIGHT, 0);
    accuracy_case("linear 3/3", &scm_act_linear, 3, 3, 3, 6.0, 0, 0);
    /* asserted: linear units with the tail stage's closed form */
    accuracy_case("linear 3/3", &scm_act_linear, 3, 3, 3, 6.0, OPT_MID | OPT_TAIL, 1);
    accuracy_case("linear 5/3", &scm_act_linear, 5, 3, 4, 4.0, OPT_MID | OPT_TAIL, 1);
    test_linear_weights();
    return TEST_SUMMARY();
}
