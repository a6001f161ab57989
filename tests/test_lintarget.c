/* test_lintarget.c: the two-layer loss derivatives (twolayer.h) and the
 * saddle manifold of the linear target as a +-ReLU pair (lintarget.h).
 *  - d eps / dv against central differences of scm_flow_loss in v, and the
 *    (W, v) Hessian against second differences of the loss, at a generic
 *    point, for relu and erf;
 *  - the singular teacher overlap of the pair is accepted, and the loss on
 *    the manifold is t / 4 against a seeded Monte Carlo average of the
 *    realised network (error bar) and the closed form;
 *  - on the manifold, for several c and d: the gradient in (W, v) vanishes,
 *    the Hessian is PSD with exactly d + 2 zero and d positive eigenvalues
 *    (the count derived in lintarget.h), and along the flat directions the
 *    loss falls like s^3 (non-strict saddle) when an output weight is
 *    negative (c < -1 or c > 0), and rises like s^4 for c in (-1, 0);
 *  - small-initialisation runs (two_layer): the phases come in order, the
 *    imbalance Q_kk - v_k^2 is conserved, and the end of the growth phase
 *    moves with log(1/alpha) at the slope 2 / sqrt(t) of the linearised
 *    growth (v_k, |w_k| grow at rate sqrt(t) / 2 along +-a, so the output
 *    coefficient v_k |w_k| ~ alpha^2 exp(sqrt(t) tau) reaches O(1) at
 *    tau = (2 / sqrt(t)) log(1/alpha)), for t = 1 and t = 2.25;
 *  - the study of `scm lintarget` (scm_lintarget_study_run) at tiny sizes:
 *    its rows equal the runs, phases and saddle checks made directly, its
 *    fit through two points is their slope, its tables have one line per
 *    row and per recorded point, and bad options and refused runs are
 *    errors. */
#include <gsl/gsl_errno.h>
#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "scm/lintarget.h"
#include "scm/twolayer.h"
#include "testutil.h"

static void test_derivatives(const scm_activation *act)
{
    const int K = 3, M = 2;
    const long d = 5;
    const double T[4] = {1.3, 0.2, 0.2, 0.7}, vs[2] = {1.1, -0.6};
    double v[3] = {0.9, -0.4, 1.25};
    scm_model *m = scm_model_alloc(K, M, act, T, v, vs, NULL);
    double Q[9], R[6], W[15], Ws[10], x[18];
    /* teachers realising T, then random students */
    double Q0[9] = {1, 0, 0, 0, 1, 0, 0, 0, 1}, R0[6] = {0};
    CHECK(scm_weights_realise(m, Q0, R0, d, W, Ws, NULL) == SCM_OK, "realise the teachers");
    gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(r, 11);
    for (long i = 0; i < K * d; i++) /* generic students */
        W[i] = 0.385 + gsl_ran_gaussian(r, 1.0);
    scm_weights_overlaps(m, d, W, Ws, Q, R);
    double gv[3];
    CHECK(scm_twolayer_grad_v(m, Q, R, v, gv) == SCM_OK, "grad_v");
    scm_flow *fl = scm_flow_alloc(m);
    for (int k = 0; k < K; k++) {
        const double h = 1e-6, v0 = m->v[k];
        double ep, em;
        m->v[k] = v0 + h;
        scm_flow_loss(fl, Q, R, &ep);
        m->v[k] = v0 - h;
        scm_flow_loss(fl, Q, R, &em);
        m->v[k] = v0;
        CHECK_CLOSE(gv[k], (ep - em) / (2 * h), 1e-7, 1e-9, "d eps / dv vs differences");
    }
    /* the Hessian against second differences of the loss */
    const int n = K * (int)d + K;
    double *H = malloc(sizeof *H * (size_t)(n * n));
    CHECK(scm_twolayer_hessian(m, d, W, Ws, v, 1e-5, H, NULL) == SCM_OK, "Hessian");
    memcpy(x, W, sizeof W);
    memcpy(x + K * d, v, sizeof v);
    double e0, worst = 0.0, hmax = 0.0;
    scm_twolayer_grad(m, d, x, Ws, x + K * d, &e0, NULL, NULL);
    const double h = 1e-4;
    for (int i = 0; i < n; i += 2)
        for (int j = i; j < n; j += 3) {
            double e[4];
            const int si[4] = {1, 1, -1, -1}, sj[4] = {1, -1, 1, -1};
            for (int q = 0; q < 4; q++) {
                double y[18];
                memcpy(y, x, sizeof y);
                y[i] += si[q] * h;
                y[j] += sj[q] * h;
                scm_twolayer_grad(m, d, y, Ws, y + K * d, &e[q], NULL, NULL);
            }
            double fd = (e[0] - e[1] - e[2] + e[3]) / (4 * h * h);
            worst = fmax(worst, fabs(fd - H[i * n + j]));
            hmax = fmax(hmax, fabs(H[i * n + j]));
        }
    CHECK(worst < 1e-5 * fmax(1.0, hmax), "%s: Hessian vs second differences of the loss: %g",
          act->name, worst);
    free(H);
    scm_flow_free(fl);
    scm_model_free(m);
    gsl_rng_free(r);
}

/* Monte Carlo loss of the realised network at the saddle point. */
static void test_loss_mc(void)
{
    const double t = 1.7, c = 0.385, beta[2] = {0.8, 1.3};
    double Q[4], R[4], v[2];
    CHECK(scm_lintarget_saddle(t, c, beta, Q, R, v, NULL) == SCM_OK, "saddle point");
    scm_model *m = scm_lintarget_model(2, t, v, NULL);
    CHECK(m != NULL, "the singular T of the pair is accepted");
    if (!m)
        return;
    scm_flow *fl = scm_flow_alloc(m);
    double eps;
    CHECK(scm_flow_loss(fl, Q, R, &eps) == SCM_OK, "loss");
    CHECK_CLOSE(eps, t / 4, 1e-13, 0.0, "closed-form loss on the manifold");
    const long d = 3;
    double W[6], Ws[6];
    CHECK(scm_weights_realise(m, Q, R, d, W, Ws, NULL) == SCM_OK, "realise");
    gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(r, 5);
    const int N = 400000;
    double s = 0, s2 = 0;
    for (int i = 0; i < N; i++) {
        double x[3], phi = 0, phis = 0;
        for (int j = 0; j < 3; j++)
            x[j] = gsl_ran_gaussian(r, 1.0);
        for (int k = 0; k < 2; k++) {
            double lk = 0, nk = 0;
            for (int j = 0; j < 3; j++) {
                lk += W[k * d + j] * x[j] / sqrt((double)d);
                nk += Ws[k * d + j] * x[j] / sqrt((double)d);
            }
            phi += v[k] * fmax(lk, 0.0);
            phis += m->vs[k] * fmax(nk, 0.0);
        }
        double l = 0.5 * (phi - phis) * (phi - phis);
        s += l;
        s2 += l * l;
    }
    double mean = s / N, se = sqrt((s2 / N - mean * mean) / N);
    CHECK(fabs(mean - t / 4) < 5 * se, "Monte Carlo loss %g +- %g vs t/4 = %g", mean, se, t / 4);
    gsl_rng_free(r);
    scm_flow_free(fl);
    scm_model_free(m);
}

static void test_manifold(void)
{
    const double t = 1.7, beta[2] = {0.8, 1.3};
    const double cs[] = {-2.5, -0.4, 0.385, 1.7};
    const long ds[] = {2, 3, 5};
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 3; j++) {
            scm_lintarget_saddle_report a, b;
            scm_error err;
            const double s0 = 0.01;
            int ok = scm_lintarget_saddle_check(t, cs[i], beta, ds[j], s0, &a, &err) == SCM_OK &&
                     scm_lintarget_saddle_check(t, cs[i], beta, ds[j], 2 * s0, &b, &err) == SCM_OK;
            CHECK(ok, "saddle check c = %g d = %ld: %s", cs[i], ds[j], err.msg);
            if (!ok)
                continue;
            CHECK(a.grad_max < 1e-12, "c = %g: gradient %g", cs[i], a.grad_max);
            CHECK_CLOSE(a.eps, t / 4, 1e-13, 0.0, "loss on the manifold");
            CHECK(a.n_neg == 0 && a.n_zero == (int)ds[j] + 2 && a.n_pos == (int)ds[j],
                  "c = %g d = %ld: %d negative, %d zero, %d positive eigenvalues (min %g)", cs[i],
                  ds[j], a.n_neg, a.n_zero, a.n_pos, a.eval_min);
            double ratio = b.descent_min / a.descent_min;
            if (cs[i] < -1.0 || cs[i] > 0.0)
                CHECK(a.descent_min < 0.0 && fabs(ratio - 8.0) < 0.08,
                      "c = %g: flat-direction change %g, ratio %g (cubic descent wants 8)", cs[i],
                      a.descent_min, ratio);
            else
                CHECK(a.descent_min > 0.0 && fabs(ratio - 16.0) < 0.5,
                      "c = %g: flat-direction change %g, ratio %g (quartic rise wants 16)", cs[i],
                      a.descent_min, ratio);
        }
    scm_lintarget_saddle_report r;
    const double bad_beta[2] = {0.8, 0.0};
    CHECK(scm_lintarget_saddle_check(t, 0.5, bad_beta, 3, 0.01, &r, NULL) == SCM_EINVAL,
          "beta = 0 rejected");
    CHECK(scm_lintarget_saddle_check(t, 0.5, beta, 1, 0.01, &r, NULL) == SCM_EINVAL,
          "d = 1 rejected");
    CHECK(scm_lintarget_saddle_check(-1.0, 0.5, beta, 3, 0.01, &r, NULL) == SCM_EINVAL,
          "t < 0 rejected");
    CHECK(scm_lintarget_model(2, 0.0, NULL, NULL) == NULL, "t = 0 rejected");
}

static void test_phases(double t)
{
    const double alphas[3] = {1e-3, 1e-4, 1e-5};
    double x[3], y[3];
    for (int i = 0; i < 3; i++) {
        scm_traj_result r;
        scm_error e;
        CHECK(scm_lintarget_run(t, alphas[i], 1000, 7, 200, 800, &r, &e) == SCM_OK, "run: %s",
              e.msg);
        CHECK(r.stop == SCM_STOP_EPS, "alpha %g: stop %s (%s)", alphas[i],
              scm_stop_reason_str(r.stop), r.err.msg);
        const double v0[2] = {alphas[i], -alphas[i]};
        scm_model *m = scm_lintarget_model(2, t, v0, NULL);
        scm_lintarget_phase_opts o;
        scm_lintarget_phase_opts_default(&o);
        scm_lintarget_phases ph;
        CHECK(scm_lintarget_phases_detect(m, &r, &o, &ph, &e) == SCM_OK, "phases: %s", e.msg);
        CHECK(ph.t_align < ph.t_grow_end && ph.t_grow_start < ph.t_grow_end &&
                  ph.t_grow_end < ph.t_conv,
              "alpha %g: phases out of order %g %g %g %g", alphas[i], ph.t_align, ph.t_grow_start,
              ph.t_grow_end, ph.t_conv);
        CHECK(ph.imbalance_drift < 1e-5, "alpha %g: imbalance drift %g", alphas[i],
              ph.imbalance_drift);
        /* the students end on +a and -a with coefficients +-sqrt(t) */
        CHECK(fabs(r.v[0] * sqrt(r.Q[0]) - sqrt(t)) < 1e-3 &&
                  fabs(r.v[1] * sqrt(r.Q[3]) + sqrt(t)) < 1e-3,
              "alpha %g: final coefficients %g %g", alphas[i], r.v[0] * sqrt(r.Q[0]),
              r.v[1] * sqrt(r.Q[3]));
        x[i] = log(1.0 / alphas[i]);
        y[i] = ph.t_grow_end;
        scm_model_free(m);
        scm_traj_result_free(&r);
    }
    double s1 = (y[1] - y[0]) / (x[1] - x[0]), s2 = (y[2] - y[1]) / (x[2] - x[1]);
    CHECK_CLOSE(s1, 2.0 / sqrt(t), 0.01, 0.0, "growth-end slope vs log(1/alpha), 1e-3..1e-4");
    CHECK_CLOSE(s2, 2.0 / sqrt(t), 0.01, 0.0, "growth-end slope vs log(1/alpha), 1e-4..1e-5");
    scm_traj_result r;
    CHECK(scm_lintarget_run(t, 0.0, 1000, 7, 200, 800, &r, NULL) == SCM_EINVAL, "alpha = 0 rejected");
}

/* Lines of a text (each ends with a newline). */
static long count_lines(const char *s, size_t len)
{
    long n = 0;
    for (size_t i = 0; i < len; i++)
        n += s[i] == '\n';
    return n;
}

static void test_study(void)
{
    scm_lintarget_study_opts o;
    scm_lintarget_study_opts_default(&o);
    CHECK(o.n_alpha == 6 && o.alpha[5] == 1e-6 && o.n_c == 4 && o.c[2] == 0.385 && o.t == 1.0,
          "study defaults");
    o.n_alpha = 2;
    o.alpha[0] = 2.385e-2;
    o.alpha[1] = 1e-3;
    o.n_c = 2;
    o.c[0] = 0.5;
    o.c[1] = -0.5;
    o.d = 60;
    o.seed = 3;
    o.t = 1.3;
    o.t_max = 120;
    o.n_out = 40;
    scm_lintarget_study s;
    scm_error e;
    CHECK(scm_lintarget_study_run(&o, &s, &e) == SCM_OK, "study: %s", e.msg);
    CHECK(s.n_rows == 2 && s.n_saddle == 2 && s.json && s.phases_csv && s.traces_csv,
          "study rows %d, saddle rows %d", s.n_rows, s.n_saddle);
    long points = 0;
    double lx[2] = {0}, tge[2] = {0};
    for (int i = 0; i < 2 && s.n_rows == 2; i++) {
        scm_traj_result r;
        CHECK(scm_lintarget_run(o.t, o.alpha[i], o.d, o.seed, o.t_max, o.n_out, &r, &e) == SCM_OK,
              "direct run: %s", e.msg);
        const double v0[2] = {o.alpha[i], -o.alpha[i]};
        scm_model *m = scm_lintarget_model(2, o.t, v0, NULL);
        scm_lintarget_phase_opts po;
        scm_lintarget_phase_opts_default(&po);
        scm_lintarget_phases ph;
        CHECK(scm_lintarget_phases_detect(m, &r, &po, &ph, &e) == SCM_OK, "phases: %s", e.msg);
        const scm_lintarget_study_row *w = &s.rows[i];
        CHECK(w->alpha == o.alpha[i] && w->stop == r.stop && w->n_steps == r.n_steps &&
                  w->final_eps == r.eps && w->final_v[0] == r.v[0] && w->final_v[1] == r.v[1],
              "row %d: the run as made directly", i);
        /* bit for bit (NaN where a phase end is not reached) */
        CHECK(memcmp(&w->ph, &ph, sizeof ph) == 0, "row %d: the phases as detected directly", i);
        CHECK(w->log_inv_alpha == log(1.0 / o.alpha[i]), "row %d: log(1/alpha)", i);
        lx[i] = log(1.0 / o.alpha[i]);
        tge[i] = ph.t_grow_end;
        points += r.n_out;
        scm_model_free(m);
        scm_traj_result_free(&r);
    }
    CHECK(count_lines(s.phases_csv, s.phases_len) == 1 + 2, "phases table lines");
    CHECK(count_lines(s.traces_csv, s.traces_len) == 1 + points, "traces table: %ld points",
          points);
    const cJSON *runs = cJSON_GetObjectItemCaseSensitive(s.json, "runs");
    CHECK(cJSON_GetArraySize(runs) == 2, "json runs");
    const cJSON *fit = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(s.json, "fits_vs_log_inv_alpha"), "t_grow_end");
    const cJSON *slope = cJSON_GetObjectItemCaseSensitive(fit, "slope");
    CHECK(cJSON_IsNumber(slope), "t_grow_end fit has a slope");
    if (cJSON_IsNumber(slope))
        CHECK_CLOSE(slope->valuedouble, (tge[1] - tge[0]) / (lx[1] - lx[0]), 1e-10, 0.0,
                    "fit through two points: their slope");
    const double beta[2] = {0.8, 1.3};
    for (int i = 0; i < 2 && s.n_saddle == 2; i++) {
        scm_lintarget_saddle_report a, b;
        CHECK(scm_lintarget_saddle_check(o.t, o.c[i], beta, 3, 0.01, &a, &e) == SCM_OK &&
                  scm_lintarget_saddle_check(o.t, o.c[i], beta, 3, 0.02, &b, &e) == SCM_OK,
              "direct saddle check: %s", e.msg);
        const scm_lintarget_saddle_row *w = &s.saddle[i];
        CHECK(w->c == o.c[i] && w->at_s.eps == a.eps && w->at_s.n_zero == a.n_zero &&
                  w->at_s.descent_min == a.descent_min && w->at_2s.descent_min == b.descent_min &&
                  w->ratio == b.descent_min / a.descent_min,
              "saddle row %d: the checks made directly", i);
    }
    /* c = 0.5: v2 < 0, cubic descent; c = -0.5: flat to third order */
    CHECK(s.n_saddle == 2 && !strcmp(s.saddle[0].verdict, "non-strict saddle (cubic descent)") &&
              !strcmp(s.saddle[1].verdict, "flat to third order (no descent found)"),
          "verdicts %s / %s", s.n_saddle ? s.saddle[0].verdict : "-",
          s.n_saddle > 1 ? s.saddle[1].verdict : "-");
    scm_lintarget_study_free(&s);

    scm_lintarget_study_opts bad = o;
    bad.alpha[1] = 1.5;
    CHECK(scm_lintarget_study_run(&bad, &s, &e) == SCM_EINVAL && !s.json, "alpha >= 1 refused");
    scm_lintarget_study_free(&s);
    bad = o;
    bad.n_c = SCM_LINTARGET_STUDY_MAX + 1;
    CHECK(scm_lintarget_study_run(&bad, &s, &e) == SCM_EINVAL, "too many cs refused");
    scm_lintarget_study_free(&s);
    bad = o;
    bad.t = -1.0;
    CHECK(scm_lintarget_study_run(&bad, &s, &e) != SCM_OK && s.refused && s.n_rows == 0 &&
              !s.json && strstr(e.msg, "t = -1 ") != NULL,
          "t < 0 refused (%s)", e.msg);
    scm_lintarget_study_free(&s);
}

/* Issue 26 item 12: extreme options are named bad input (SCM_EINVAL,
 * refused, the option and its value in the message), never an empty reason
 * or a numerical failure. */
static void test_ranges(void)
{
    scm_lintarget_study_opts o;
    scm_lintarget_study_opts_default(&o);
    o.n_alpha = 1;
    o.alpha[0] = 1e-2;
    o.n_c = 1;
    o.c[0] = 0.5;
    o.d = 40;
    o.t_max = 60;
    o.n_out = 30;
    struct {
        const char *what, *want;
        int field; /* 0 alpha, 1 t, 2 t_max, 3 c, 4 n_out */
        double v;
    } cases[] = {
        {"alpha 1e-300", "alpha = 1e-300", 0, 1e-300}, {"alpha 1e-101", "alpha = 1e-101", 0, 1e-101},
        {"alpha nan", "alpha = nan", 0, NAN},          {"alpha inf", "alpha = inf", 0, INFINITY},
        {"alpha -1", "alpha = -1", 0, -1.0},           {"t 1e300", "t = 1e+300", 1, 1e300},
        {"t 1e-300", "t = 1e-300", 1, 1e-300},         {"t nan", "t = nan", 1, NAN},
        {"t_max 1e300", "t_max = 1e+300", 2, 1e300},   {"t_max 1e-300", "t_max = 1e-300", 2, 1e-300},
        {"t_max inf", "t_max = inf", 2, INFINITY},     {"c 1e300", "c = 1e+300", 3, 1e300},
        {"c nan", "c = nan", 3, NAN},                  {"c -inf", "c = -inf", 3, -INFINITY},
        {"n_out 2", "n_out", 4, 2},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        scm_lintarget_study_opts b = o;
        double v = cases[i].v;
        if (cases[i].field == 0)
            b.alpha[0] = v;
        else if (cases[i].field == 1)
            b.t = v;
        else if (cases[i].field == 2)
            b.t_max = v;
        else if (cases[i].field == 3)
            b.c[0] = v;
        else
            b.n_out = (int)v;
        scm_lintarget_study s;
        scm_error e;
        scm_status st = scm_lintarget_study_run(&b, &s, &e);
        CHECK(st == SCM_EINVAL && s.refused && s.n_rows == 0 && !s.json &&
                  strstr(e.msg, cases[i].want) != NULL,
              "%s: refused by name (status %d, refused %d: '%s')", cases[i].what, st, s.refused,
              e.msg);
        scm_lintarget_study_free(&s);
    }
    /* alpha below t^(1/4): at t = 1e-4 the initialisation 0.5 is not small */
    scm_lintarget_study_opts b = o;
    b.t = 1e-4;
    b.alpha[0] = 0.5;
    scm_lintarget_study s;
    scm_error e;
    CHECK(scm_lintarget_study_run(&b, &s, &e) == SCM_EINVAL && s.refused &&
              strstr(e.msg, "not a small initialisation"),
          "alpha above t^(1/4) refused: %s", e.msg);
    scm_lintarget_study_free(&s);
    /* the run itself: a named reason, not an empty one */
    scm_traj_result r;
    e.msg[0] = 0;
    CHECK(scm_lintarget_run(1.0, 1e-300, 40, 1, 60, 30, &r, &e) == SCM_EINVAL &&
              strstr(e.msg, "alpha = 1e-300"),
          "run at alpha 1e-300: '%s'", e.msg);
    scm_traj_result_free(&r);
    /* the edges are accepted and the growth law holds there: t_grow_end is
     * (2 / sqrt t) log(1/alpha) + O(1), so the two smallest alphas
     * accepted give slope 2 (t = 1) */
    b = o;
    b.n_alpha = 2;
    b.alpha[0] = 1e-90;
    b.alpha[1] = SCM_LINTARGET_ALPHA_MIN;
    b.t_max = 1e3;
    b.n_out = 400;
    CHECK(scm_lintarget_study_run(&b, &s, &e) == SCM_OK && s.n_rows == 2 && s.n_failed == 0,
          "alpha 1e-90, 1e-100: %s", e.msg);
    if (s.n_rows == 2)
        CHECK_CLOSE((s.rows[1].ph.t_grow_end - s.rows[0].ph.t_grow_end) /
                        (s.rows[1].log_inv_alpha - s.rows[0].log_inv_alpha),
                    2.0, 0.02, 0.0, "t_grow_end slope at alpha 1e-90 .. 1e-100");
    scm_lintarget_study_free(&s);
}

int main(void)
{
    gsl_set_error_handler_off();
    test_derivatives(&scm_act_relu);
    test_derivatives(&scm_act_erf);
    test_loss_mc();
    test_manifold();
    test_phases(1.0);
    test_phases(2.25);
    test_study();
    test_ranges();
    return TEST_SUMMARY();
}
