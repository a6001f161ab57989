/* test_stability.c: the stability module (stability.h).
 *
 *  1. closed-form Hessian vs central differences of scm_weights_grad at
 *     random weights (relu, erf, linear; several K, M, d) and at the
 *     symmetric saddle;
 *  2. the closed form's second derivatives vs central differences of the
 *     loss itself (second differences of eps, computed without the gradient);
 *  3. the global minimum Q = R = I (K = M): no negative eigenvalue, exactly
 *     the predicted number of zero modes (0: the students are in the
 *     teacher span), the perturbation test returns;
 *  4. the symmetric saddle of the early plateau (one student group, found
 *     by Newton in a one-group ansatz): students outside the teacher span
 *     (p = 1), so the rotation zero modes (d - M) - 1 are counted for two d;
 *     a negative eigenvalue; the perturbation test escapes;
 *  5. linear units: the zero modes (K - 1) d at a critical point off the
 *     teacher span;
 *  6. the verdicts of the two tests agree at enumerated points of the k1 = 1
 *     family at K = M = 6 (a minimum and saddles);
 *  7. non-smooth and kernel-singular points are detected: a dead student
 *     (no Hessian, the verdict comes from the perturbation test alone),
 *     parallel students and a student aligned with its teacher (the closed
 *     form refuses; the finite-difference Hessian converges and is the
 *     limit of the closed form at nearby smooth points, i.e. the Hessian
 *     exists there);
 *  8. error paths. */
#include <gsl/gsl_errno.h>
#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scm/fixedpoint.h"
#include "scm/stability.h"
#include "scm/stabpoint.h"
#include "scm/weights.h"
#include "testutil.h"

static gsl_rng *rng;

static double *dalloc(long n) { return calloc((size_t)(n > 0 ? n : 1), sizeof(double)); }

static double max_rel_diff(const double *A, const double *B, long n)
{
    double m = 0.0, dm = 0.0;
    for (long i = 0; i < n; i++) {
        m = fmax(m, fabs(A[i]));
        dm = fmax(dm, fabs(A[i] - B[i]));
    }
    return m > 0.0 ? dm / m : dm;
}

/* 1 and 2: random weights, closed form vs FD of the gradient and vs second
 * differences of the loss. */
static void test_hessian_random(const scm_activation *act, int K, int M, long d)
{
    scm_error err;
    scm_model *m = scm_model_alloc(K, M, act, NULL, NULL, NULL, &err);
    scm_flow *fl = scm_flow_alloc(m);
    long Kd = (long)K * d;
    double *W = dalloc(Kd), *Ws = dalloc((long)M * d), *H = dalloc(Kd * Kd),
           *Hf = dalloc(Kd * Kd);
    /* teachers: sqrt(d) e_m realise T = I */
    for (int n = 0; n < M; n++)
        Ws[n * d + n] = sqrt((double)d);
    for (long i = 0; i < Kd; i++)
        W[i] = gsl_ran_gaussian(rng, 1.0) + 0.385;
    scm_status s1 = scm_stab_hessian(fl, d, W, Ws, H, &err);
    CHECK(s1 == SCM_OK, "%s closed-form Hessian: %s", act->name, err.msg);
    scm_status s2 = scm_stab_hessian_fd(fl, d, W, Ws, 0.0, Hf, &err);
    CHECK(s2 == SCM_OK, "%s FD Hessian: %s", act->name, err.msg);
    double rd = max_rel_diff(H, Hf, Kd * Kd);
    CHECK(rd < 1e-7, "%s K=%d M=%d d=%ld: closed form vs FD of the gradient: rel diff %.3g",
          act->name, K, M, d, rd);
    /* symmetric */
    double asym = 0.0;
    for (long i = 0; i < Kd; i++)
        for (long j = 0; j < Kd; j++)
            asym = fmax(asym, fabs(H[i * Kd + j] - H[j * Kd + i]));
    CHECK(asym < 1e-14, "%s: closed-form Hessian asymmetric by %.3g", act->name, asym);
    /* second differences of the loss along random directions u, w:
     * (e(+u+w) - e(+u-w) - e(-u+w) + e(-u-w)) / (4 h^2) = u^T H w */
    double *u = dalloc(Kd), *w = dalloc(Kd), *Wp = dalloc(Kd);
    for (int rep = 0; rep < 3; rep++) {
        for (long i = 0; i < Kd; i++) {
            u[i] = gsl_ran_gaussian(rng, 1.0);
            w[i] = gsl_ran_gaussian(rng, 1.0);
        }
        const double h = 1e-4;
        double e[4];
        for (int c = 0; c < 4; c++) {
            double su = c < 2 ? 1.0 : -1.0, sw = c % 2 ? -1.0 : 1.0;
            for (long i = 0; i < Kd; i++)
                Wp[i] = W[i] + h * (su * u[i] + sw * w[i]);
            scm_weights_grad(fl, d, Wp, Ws, &e[c], NULL);
        }
        double fd = (e[0] - e[1] - e[2] + e[3]) / (4.0 * h * h), uHw = 0.0, scale = 0.0;
        for (long i = 0; i < Kd; i++)
            for (long j = 0; j < Kd; j++) {
                uHw += u[i] * H[i * Kd + j] * w[j];
                scale += fabs(u[i] * H[i * Kd + j] * w[j]);
            }
        /* loss differences lose ~1e-16 / h^2 = 1e-8 absolutely */
        CHECK_CLOSE(fd, uHw, 1e-5, 1e-6 * scale + 1e-7, "u^T H w vs second differences of eps");
    }
    free(u);
    free(w);
    free(Wp);
    free(W);
    free(Ws);
    free(H);
    free(Hf);
    scm_flow_free(fl);
    scm_model_free(m);
}

static scm_stab_opts quick_opts(void)
{
    scm_stab_opts o;
    scm_stab_opts_default(&o);
    o.n_trials = 3;
    o.n_sigma = 2;
    o.sigma[0] = 1e-4;
    o.sigma[1] = 1e-2;
    o.t_max = 1e4;
    return o;
}

/* 3: the global minimum. */
static void test_global_min(const scm_activation *act, int K, long d)
{
    scm_error err;
    scm_model *m = scm_model_alloc(K, K, act, NULL, NULL, NULL, &err);
    double *Q = dalloc(K * K), *R = dalloc(K * K);
    for (int k = 0; k < K; k++)
        Q[k * K + k] = R[k * K + k] = 1.0;
    scm_stab_opts o = quick_opts();
    o.d = d;
    scm_stab_result r;
    scm_status st = scm_stab_analyse(m, Q, R, &o, &r, &err);
    CHECK(st == SCM_OK, "global min analyse: %s", err.msg);
    CHECK(r.hessian_done, "%s global min: Hessian computed", act->name);
    /* ReLU: every student is parallel to its teacher: closed form refused */
    CHECK(r.hessian_closed == (act != &scm_act_relu), "%s global min: closed form used = %d",
          act->name, r.hessian_closed);
    CHECK(r.zm.p == 0 && r.zm.total == 0, "global min: predicted zero modes %ld (p %d)",
          r.zm.total, r.zm.p);
    CHECK(r.counts.n_neg == 0, "%s K=%d d=%ld global min: %d negative eigenvalues (min %.3g)",
          act->name, K, d, r.counts.n_neg, r.eval_small[0]);
    CHECK(r.counts.n_zero == r.zm.total, "%s global min: %d zero eigenvalues, predicted %ld",
          act->name, r.counts.n_zero, r.zm.total);
    CHECK(r.hverdict == SCM_HVERDICT_MIN, "global min Hessian verdict %s",
          scm_hverdict_str(r.hverdict));
    CHECK(r.verdict == SCM_VERDICT_STABLE, "%s global min perturbation verdict %s", act->name,
          scm_verdict_str(r.verdict));
    CHECK(r.agree == 1, "global min: the two tests agree");
    for (int i = 0; i < r.n_rows; i++)
        CHECK(r.rows[i].dist_max < r.rows[i].dist0_med, "sigma %g: GD returns (%.3g -> %.3g)",
              r.rows[i].sigma, r.rows[i].dist0_med, r.rows[i].dist_max);
    CHECK(r.jacobian_done && r.jac_re_max < 0.0, "global min: Jacobian re max %.3g",
          r.jac_re_max);
    free(Q);
    free(R);
    scm_model_free(m);
}

/* A flow run cut short (t_max = 0.05, no GD, sigma 5e-4) ends near the point it started
 * next to, not on it: with near_tol it makes the row undecided, never an
 * escape; with near_tol = same_tol (no such allowance) the same runs count
 * as escapes to "other" losses, which is what the rule prevents. */
static void test_unsettled(void)
{
    const int K = 3;
    scm_error err;
    scm_model *m = scm_model_alloc(K, K, &scm_act_relu, NULL, NULL, NULL, &err);
    double *Q = dalloc(K * K), *R = dalloc(K * K);
    for (int k = 0; k < K; k++)
        Q[k * K + k] = R[k * K + k] = 1.0;
    scm_stab_opts o = quick_opts();
    o.n_sigma = 1;
    o.sigma[0] = 5e-4; /* end losses ~2e-7: above same_tol, below near_tol */
    o.n_steps = 0;
    o.t_max = 0.05;
    o.hessian = 0;
    scm_stab_result r;
    CHECK(scm_stab_analyse(m, Q, R, &o, &r, &err) == SCM_OK, "unsettled analyse: %s", err.msg);
    CHECK(r.rows[0].n_unsettled == 3 && r.rows[0].n_same == 0 && r.rows[0].n_other == 0 &&
              r.rows[0].n_global == 0 && r.verdict == SCM_VERDICT_UNDECIDED,
          "near_tol: unsettled %d same %d other %d global %d (median loss %g), verdict %s",
          r.rows[0].n_unsettled,
          r.rows[0].n_same, r.rows[0].n_other, r.rows[0].n_global, r.rows[0].flow_eps_med,
          scm_verdict_str(r.verdict));
    o.near_tol = o.same_tol;
    CHECK(scm_stab_analyse(m, Q, R, &o, &r, &err) == SCM_OK, "unsettled analyse 2: %s", err.msg);
    CHECK(r.rows[0].n_other == 3 && r.verdict == SCM_VERDICT_UNSTABLE,
          "without near_tol: other %d, verdict %s", r.rows[0].n_other, scm_verdict_str(r.verdict));
    o.near_tol = 0.5 * o.same_tol;
    CHECK(scm_stab_analyse(m, Q, R, &o, &r, &err) == SCM_EINVAL && strstr(err.msg, "near_tol"),
          "near_tol below same_tol refused: %s", err.msg);
    free(Q);
    free(R);
    scm_model_free(m);
}

static const char sym_text[] =
    "{\"name\": \"sym\", \"description\": \"one student group, one teacher group\","
    " \"students\": {\"all\": \"K\"}, \"teachers\": {\"t\": \"M\"}, \"pairs\": {}}";

/* The symmetric fixed point with Q diag != off (students not parallel) and
 * R > 0: Newton in the one-group ansatz. */
static int find_sym_saddle(int K, double *Q, double *R)
{
    scm_error err;
    scm_ansatz *a = scm_ansatz_parse(sym_text, strlen(sym_text), "sym", &err);
    if (!a)
        return 0;
    scm_ansatz_inst *in = scm_ansatz_instantiate(a, K, K, 0, &err);
    scm_fp_opts fo;
    scm_fp_opts_default(&fo);
    fo.n_random = 60;
    scm_fp_set set;
    scm_fp_set_init(&set);
    int found = 0;
    if (in && scm_fp_enumerate(a, in, &scm_act_relu, &fo, NULL, 0, &set, &err) == SCM_OK) {
        int iq = scm_ansatz_inst_find(in, "Q[all,all].diag"),
            io = scm_ansatz_inst_find(in, "Q[all,all].off"), ir = scm_ansatz_inst_find(in, "R[all,t]");
        double best = INFINITY;
        for (int i = 0; i < set.n; i++) {
            const double *x = set.pt[i].x;
            if (x[iq] - x[io] > 0.05 && x[ir] > 0.0 && set.pt[i].eps < best &&
                scm_ansatz_to_full(in, x, Q, R) == SCM_OK) {
                best = set.pt[i].eps;
                found = 1;
            }
        }
    }
    scm_fp_set_free(&set);
    scm_ansatz_inst_free(in);
    scm_ansatz_free(a);
    return found;
}

/* 4: the symmetric saddle. */
static void test_sym_saddle(int K)
{
    scm_error err;
    scm_model *m = scm_model_alloc(K, K, &scm_act_relu, NULL, NULL, NULL, &err);
    double *Q = dalloc(K * K), *R = dalloc(K * K);
    int ok = find_sym_saddle(K, Q, R);
    CHECK(ok, "symmetric saddle K = M = %d found", K);
    if (ok) {
        /* sanity: equal overlaps with all teachers */
        for (int k = 0; k < K; k++)
            for (int n = 0; n < K; n++)
                CHECK(fabs(R[k * K + n] - R[0]) < 1e-14, "symmetric R");
        long ds[2] = {2 * K, 2 * K + 3};
        for (int di = 0; di < 2; di++) {
            scm_stab_opts o = quick_opts();
            o.d = ds[di];
            scm_stab_result r;
            CHECK(scm_stab_analyse(m, Q, R, &o, &r, &err) == SCM_OK, "saddle analyse %s",
                  err.msg);
            CHECK(r.residual < 1e-12, "saddle residual %.3g", r.residual);
            CHECK(r.hessian_closed, "saddle: closed-form Hessian (smooth point)");
            CHECK(r.hessian_fd_diff < 1e-7, "saddle: closed form vs FD %.3g", r.hessian_fd_diff);
            /* the students leave the teacher span: Q - R R^T has rank 1 (K = 2) */
            long n = ds[di] - K, p = r.zm.p;
            CHECK(p >= 1, "saddle: students outside the span (p = %ld)", p);
            CHECK(r.zm.rotation == p * n - p * (p + 1) / 2 && r.zm.rotation > 0,
                  "rotation zero modes %ld", r.zm.rotation);
            CHECK(r.counts.n_zero == r.zm.total,
                  "K=%d d=%ld saddle: %d zero eigenvalues, predicted %ld (p = %ld)", K, ds[di],
                  r.counts.n_zero, r.zm.total, p);
            CHECK(r.counts.n_neg > 0, "saddle: negative eigenvalue (min %.3g)", r.eval_small[0]);
            CHECK(r.hverdict == SCM_HVERDICT_SADDLE, "saddle Hessian verdict %s",
                  scm_hverdict_str(r.hverdict));
            CHECK(r.verdict == SCM_VERDICT_UNSTABLE, "saddle perturbation verdict %s",
                  scm_verdict_str(r.verdict));
            CHECK(r.agree == 1, "saddle: the two tests agree");
            CHECK(r.jacobian_done && r.jac_re_max > 1e-6, "saddle: Jacobian re max %.3g",
                  r.jac_re_max);
            int lower = 1;
            for (int i = 0; i < r.n_rows; i++)
                lower &= r.rows[i].n_same == 0 && r.rows[i].flow_eps_med < r.eps - 1e-3;
            CHECK(lower, "saddle: every flow run ends lower");
        }
        /* closed form vs FD at the saddle in a larger d, directly */
        long d = 2 * K + 2, Kd = K * d;
        double *W = dalloc(Kd), *Ws = dalloc(K * d), *H = dalloc(Kd * Kd), *Hf = dalloc(Kd * Kd);
        scm_flow *fl = scm_flow_alloc(m);
        CHECK(scm_weights_realise(m, Q, R, d, W, Ws, &err) == SCM_OK, "realise %s", err.msg);
        scm_stab_hessian(fl, d, W, Ws, H, &err);
        scm_stab_hessian_fd(fl, d, W, Ws, 0.0, Hf, &err);
        double rd = max_rel_diff(H, Hf, Kd * Kd);
        CHECK(rd < 1e-7, "saddle closed vs FD %.3g", rd);
        free(W);
        free(Ws);
        free(H);
        free(Hf);
        scm_flow_free(fl);
    }
    free(Q);
    free(R);
    scm_model_free(m);
}

/* 5: linear units: eps = 1/2 |sum w_k - sum w*_m|^2 / d; a critical point
 * with students off the span: w_1 = w*_1 + u, w_2 = w*_2 - u. */
static void test_linear_modes(void)
{
    const int K = 2, M = 2;
    const long d = 5, Kd = K * d;
    scm_error err;
    scm_model *m = scm_model_alloc(K, M, &scm_act_linear, NULL, NULL, NULL, &err);
    double Q[4] = {1.0 + 0.3, -0.3, -0.3, 1.0 + 0.3}, R[4] = {1, 0, 0, 1};
    scm_stab_zero_modes z;
    CHECK(scm_stab_predict_zero_modes(m, Q, R, d, 1e-9, &z) == SCM_OK, "linear zero modes");
    CHECK(z.p == 1 && z.rotation == (d - M) - 1, "linear: p %d rotation %ld", z.p, z.rotation);
    CHECK(z.total == (K - 1) * d, "linear: predicted %ld", z.total);
    double *W = dalloc(Kd), *Ws = dalloc(M * d), *H = dalloc(Kd * Kd), *ev = dalloc(Kd);
    CHECK(scm_weights_realise(m, Q, R, d, W, Ws, &err) == SCM_OK, "realise %s", err.msg);
    scm_flow *fl = scm_flow_alloc(m);
    CHECK(scm_stab_hessian(fl, d, W, Ws, H, &err) == SCM_OK, "linear Hessian %s", err.msg);
    /* independent: H = (1/d) [[I, I], [I, I]] */
    double dev = 0.0;
    for (long i = 0; i < Kd; i++)
        for (long j = 0; j < Kd; j++)
            dev = fmax(dev, fabs(H[i * Kd + j] - ((i % d) == (j % d) ? 1.0 / d : 0.0)));
    CHECK(dev < 1e-15, "linear Hessian = (J (x) I) / d: dev %.3g", dev);
    scm_stab_counts c;
    CHECK(scm_stab_spectrum(H, (int)Kd, 1e-6, ev, &c) == SCM_OK, "spectrum");
    CHECK(c.n_zero == z.total && c.n_pos == d && c.n_neg == 0, "linear counts %d/%d/%d",
          c.n_neg, c.n_zero, c.n_pos);
    CHECK_CLOSE(ev[Kd - 1], 2.0 / d, 1e-13, 0.0, "linear top eigenvalue K / d");
    free(W);
    free(Ws);
    free(H);
    free(ev);
    scm_flow_free(fl);
    scm_model_free(m);
}

/* 6: enumerated points of the k1 ansatz at K = M = 4: the two verdicts
 * agree wherever both decide. */
static void test_agreement(void)
{
    const int K = 6;
    scm_error err;
    const char *file, *text = NULL;
    for (int i = 0; i < scm_ansatz_builtin_count(); i++) {
        const char *t = scm_ansatz_builtin_text(i, &file);
        if (strstr(file, "k1.json") && !strstr(file, "extra"))
            text = t;
    }
    CHECK(text != NULL, "built-in k1 ansatz");
    if (!text)
        return;
    scm_ansatz *a = scm_ansatz_parse(text, strlen(text), file, &err);
    scm_model *m = scm_model_alloc(K, K, &scm_act_relu, NULL, NULL, NULL, &err);
    int compared = 0, n_min = 0, n_saddle = 0;
    for (int k1 = 1; k1 <= 1; k1++) {
        scm_ansatz_inst *in = scm_ansatz_instantiate(a, K, K, k1, &err);
        scm_fp_opts fo;
        scm_fp_opts_default(&fo);
        fo.n_random = 30;
        scm_fp_set set;
        scm_fp_set_init(&set);
        scm_fp_enumerate(a, in, &scm_act_relu, &fo, NULL, 0, &set, &err);
        for (int i = 0; i < set.n && i < 4; i++) {
            if (!set.pt[i].Q || !(set.pt[i].res_polish < 1e-12 || set.pt[i].res_full < 1e-12))
                continue;
            scm_stab_opts o = quick_opts();
            o.sigma[0] = 1e-3;
            scm_stab_result r;
            if (scm_stab_analyse(m, set.pt[i].Q, set.pt[i].R, &o, &r, &err))
                continue;
            if (r.agree < 0 || !r.smooth.closed_form)
                continue;
            compared++;
            n_min += r.hverdict == SCM_HVERDICT_MIN;
            n_saddle += r.hverdict == SCM_HVERDICT_SADDLE;
            CHECK(r.agree == 1, "k1=%d eps=%.10g: Hessian %s vs perturbation %s", k1, r.eps,
                  scm_hverdict_str(r.hverdict), scm_verdict_str(r.verdict));
            CHECK((r.jac_re_max > 1e-6) == (r.hverdict == SCM_HVERDICT_SADDLE),
                  "eps=%.10g: Jacobian re max %.3g vs Hessian %s", r.eps, r.jac_re_max,
                  scm_hverdict_str(r.hverdict));
        }
        scm_fp_set_free(&set);
        scm_ansatz_inst_free(in);
    }
    CHECK(compared >= 2 && n_min >= 1 && n_saddle >= 1,
          "agreement compared at %d points (%d minima, %d saddles)", compared, n_min, n_saddle);
    printf("verdict agreement: %d points compared (%d minima, %d saddles)\n", compared, n_min,
           n_saddle);
    scm_model_free(m);
    scm_ansatz_free(a);
}

/* 7: non-smooth and kernel-singular points. */
static void test_nonsmooth(void)
{
    scm_error err;
    const int K = 2, M = 2;
    scm_model *m = scm_model_alloc(K, M, &scm_act_relu, NULL, NULL, NULL, &err);
    /* a dead student */
    double Qd[4] = {0, 0, 0, 1}, Rd[4] = {0, 0, 0.6, 0.3};
    scm_stab_smooth s;
    scm_stab_smoothness(m, Qd, Rd, 1e-9, &s);
    CHECK(s.n_dead == 1 && !s.smooth && !s.closed_form, "dead student detected: %s", s.what);
    scm_stab_opts o = quick_opts();
    o.n_sigma = 1;
    o.n_trials = 1;
    o.t_max = 100;
    scm_stab_result r;
    CHECK(scm_stab_analyse(m, Qd, Rd, &o, &r, &err) == SCM_OK, "dead analyse %s", err.msg);
    CHECK(!r.hessian_done && r.hverdict == SCM_HVERDICT_NONE && r.agree == -1,
          "dead: no Hessian, verdict from the perturbation test only");

    /* parallel students (same direction) and a student parallel to a teacher:
     * the closed form refuses, FD converges and matches the closed form's
     * limit from nearby smooth points */
    const long d = 4, Kd = K * d;
    double *W = dalloc(Kd), *Ws = dalloc(M * d), *H = dalloc(Kd * Kd), *Hf = dalloc(Kd * Kd),
           *Hf2 = dalloc(Kd * Kd);
    for (int n = 0; n < M; n++)
        Ws[n * d + n] = sqrt((double)d);
    scm_flow *fl = scm_flow_alloc(m);
    const double base[2][4] = {{0.9, 0.7, 0.385, 0.0}, {1.2, 0.0, 0.0, 0.0}};
    for (int cse = 0; cse < 2; cse++) {
        /* case 0: w_1 = 1.7 w_0 (parallel students); case 1: w_0 along teacher 0 */
        for (int i = 0; i < d; i++) {
            W[i] = base[cse][i];
            W[d + i] = cse == 0 ? 1.7 * base[cse][i] : 0.3 + 0.2 * i;
        }
        double Q[4], R[4];
        scm_weights_overlaps(m, d, W, Ws, Q, R);
        scm_stab_smoothness(m, Q, R, 1e-9, &s);
        CHECK(s.smooth && !s.closed_form && (cse == 0 ? s.n_par_ss == 1 : s.n_par_st == 1),
              "case %d: kernel-singular point detected: %s", cse, s.what);
        CHECK(scm_stab_hessian(fl, d, W, Ws, H, &err) == SCM_ESINGULAR,
              "case %d: closed form refuses", cse);
        CHECK(scm_stab_hessian_fd(fl, d, W, Ws, 1e-4, Hf, &err) == SCM_OK, "FD %s", err.msg);
        CHECK(scm_stab_hessian_fd(fl, d, W, Ws, 5e-5, Hf2, &err) == SCM_OK, "FD %s", err.msg);
        /* first order in h (the third derivative jumps here, docs/stability.md):
         * halving h again must roughly halve the change */
        double *Hf3 = dalloc(Kd * Kd);
        CHECK(scm_stab_hessian_fd(fl, d, W, Ws, 2.5e-5, Hf3, &err) == SCM_OK, "FD %s", err.msg);
        double conv1 = max_rel_diff(Hf, Hf2, Kd * Kd), conv2 = max_rel_diff(Hf2, Hf3, Kd * Kd);
        CHECK(conv1 < 1e-3 && conv2 < 0.7 * conv1 && conv2 > 0.3 * conv1,
              "case %d: FD Hessian converges (first order) in h: %.3g then %.3g", cse, conv1,
              conv2);
        free(Hf3);
        /* tilt by delta in coordinate 3: the closed form exists and tends to Hf */
        double prev = INFINITY;
        for (int t = 0; t < 3; t++) {
            double delta = t == 0 ? 1e-2 : t == 1 ? 1e-3 : 1e-4;
            double *Wt = dalloc(Kd);
            memcpy(Wt, W, sizeof *W * (size_t)Kd);
            Wt[(cse == 0 ? d : 0) + 3] += delta;
            CHECK(scm_stab_hessian(fl, d, Wt, Ws, H, &err) == SCM_OK, "tilted closed form %s",
                  err.msg);
            double diff = max_rel_diff(Hf2, H, Kd * Kd);
            CHECK(diff < prev && diff < 20.0 * delta,
                  "case %d: closed form at tilt %g differs from the FD Hessian at the "
                  "singular point by %.3g (previous %.3g)",
                  cse, delta, diff, prev);
            prev = diff;
            free(Wt);
        }
    }
    free(W);
    free(Ws);
    free(H);
    free(Hf);
    free(Hf2);
    scm_flow_free(fl);
    scm_model_free(m);
}

/* 8: errors. */
static void test_errors(void)
{
    scm_error err;
    scm_stab_opts o;
    scm_stab_opts_default(&o);
    CHECK(scm_stab_opts_check(&o, &err) == SCM_OK, "defaults valid");
    o.eta = -1;
    CHECK(scm_stab_opts_check(&o, &err) == SCM_EINVAL, "negative eta rejected");
    scm_stab_opts_default(&o);
    o.n_trials = 0;
    CHECK(scm_stab_opts_check(&o, &err) == SCM_EINVAL, "zero trials rejected");
    scm_stab_opts_default(&o);
    o.sigma[1] = 0.0;
    CHECK(scm_stab_opts_check(&o, &err) == SCM_EINVAL, "sigma 0 rejected");
    scm_model *m = scm_model_alloc(2, 2, &scm_act_relu, NULL, NULL, NULL, &err);
    double Q[4] = {1, 0, 0, 1}, R[4] = {1.5, 0, 0, 1}; /* not PSD */
    scm_stab_opts_default(&o);
    scm_stab_result r;
    CHECK(scm_stab_analyse(m, Q, R, &o, &r, &err) == SCM_ENOTPSD, "non-PSD state rejected");
    double R2[4] = {0.6, 0.3, 0.1, 0.5};
    o.d = 2; /* rank of the Gram matrix is 4 */
    CHECK(scm_stab_analyse(m, Q, R2, &o, &r, &err) == SCM_EINVAL, "d below rank rejected: %s",
          err.msg);
    scm_model_free(m);
}

/* Issue 26 item 13: a perturbation test that leaves the finite numbers
 * (GD step 1e300, perturbation size 1e300) is "diverged", never a verdict.
 * The old code called the saddle "unstable" (its distance, inf, "grew")
 * and the minimum "undecided" from inf and NaN. */
static void test_diverged(void)
{
    const int K = 2;
    scm_error err;
    scm_model *m = scm_model_alloc(K, K, &scm_act_relu, NULL, NULL, NULL, &err);
    double *Q = dalloc(K * K), *R = dalloc(K * K), *Qm = dalloc(K * K), *Rm = dalloc(K * K);
    for (int k = 0; k < K; k++)
        Qm[k * K + k] = Rm[k * K + k] = 1.0;
    int ok = find_sym_saddle(K, Q, R);
    CHECK(ok, "symmetric saddle found");
    for (int flow = 0; flow <= 1 && ok; flow++) {
        scm_stab_opts o = quick_opts();
        o.run_flow = flow;
        o.eta = 1e300;
        scm_stab_result r;
        CHECK(scm_stab_analyse(m, Q, R, &o, &r, &err) == SCM_OK, "saddle, eta 1e300: %s", err.msg);
        CHECK(r.verdict == SCM_VERDICT_DIVERGED && r.agree == -1 &&
                  r.rows[0].verdict == SCM_VERDICT_DIVERGED &&
                  !strcmp(scm_verdict_str(r.verdict), "diverged") && isnan(r.rows[0].deps_med) &&
                  isnan(r.rows[0].deps_max),
              "saddle, eta 1e300, flow %d: verdict %s, agree %d, deps %g %g", flow,
              scm_verdict_str(r.verdict), r.agree, r.rows[0].deps_med, r.rows[0].deps_max);
        CHECK(r.hverdict == SCM_HVERDICT_SADDLE, "the Hessian still says saddle");
        CHECK(scm_stab_analyse(m, Qm, Rm, &o, &r, &err) == SCM_OK, "min, eta 1e300: %s", err.msg);
        CHECK(r.verdict == SCM_VERDICT_DIVERGED && r.agree == -1,
              "min, eta 1e300, flow %d: verdict %s", flow, scm_verdict_str(r.verdict));
        /* a huge perturbation: the perturbed state itself is not finite */
        o = quick_opts();
        o.run_flow = flow;
        o.sigma[1] = 1e300;
        o.verdict_sigma_max = 1e301;
        CHECK(scm_stab_analyse(m, Qm, Rm, &o, &r, &err) == SCM_OK, "sigma 1e300: %s", err.msg);
        CHECK(r.rows[1].verdict == SCM_VERDICT_DIVERGED && r.verdict == SCM_VERDICT_DIVERGED,
              "sigma 1e300, flow %d: rows %s %s, verdict %s", flow,
              scm_verdict_str(r.rows[0].verdict), scm_verdict_str(r.rows[1].verdict),
              scm_verdict_str(r.verdict));
        /* out of the verdict it does not decide, the other row does */
        o.verdict_sigma_max = 1e-2;
        CHECK(scm_stab_analyse(m, Qm, Rm, &o, &r, &err) == SCM_OK &&
                  r.rows[1].verdict == SCM_VERDICT_DIVERGED &&
                  r.verdict == SCM_VERDICT_STABLE,
              "sigma 1e300 not in the verdict, flow %d: verdict %s", flow,
              scm_verdict_str(r.verdict));
    }
    /* the (Q, R) path: the same rule */
    scm_stab_opts o = quick_opts();
    o.sigma[1] = 1e300;
    o.verdict_sigma_max = 1e301;
    scm_stab_result r;
    memset(&r, 0, sizeof r);
    r.hverdict = SCM_HVERDICT_MIN;
    CHECK(scm_stab_perturb_qr(m, Qm, Rm, &o, &r, &err) == SCM_OK &&
              r.rows[1].verdict == SCM_VERDICT_DIVERGED && r.verdict == SCM_VERDICT_DIVERGED &&
              r.agree == -1,
          "qr, sigma 1e300: row %s, verdict %s, agree %d", scm_verdict_str(r.rows[1].verdict),
          scm_verdict_str(r.verdict), r.agree);
    CHECK(scm_stab_agree(SCM_HVERDICT_MIN, SCM_VERDICT_STABLE) == 1 &&
              scm_stab_agree(SCM_HVERDICT_SADDLE, SCM_VERDICT_STABLE) == 0 &&
              scm_stab_agree(SCM_HVERDICT_MIN, SCM_VERDICT_DIVERGED) == -1 &&
              scm_stab_agree(SCM_HVERDICT_NONFINITE, SCM_VERDICT_STABLE) == -1 &&
              !strcmp(scm_hverdict_str(SCM_HVERDICT_NONFINITE), "not_finite"),
          "agreement table");
    free(Q);
    free(R);
    free(Qm);
    free(Rm);
    scm_model_free(m);
}

int main(void)
{
    gsl_set_error_handler_off();
    rng = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(rng, 2385);
    test_hessian_random(&scm_act_relu, 3, 2, 6);
    test_hessian_random(&scm_act_relu, 2, 3, 7);
    test_hessian_random(&scm_act_erf, 3, 2, 6);
    test_hessian_random(&scm_act_linear, 2, 2, 4);
    test_global_min(&scm_act_relu, 3, 6);
    test_global_min(&scm_act_relu, 4, 10);
    test_global_min(&scm_act_erf, 3, 6);
    test_sym_saddle(2);
    test_sym_saddle(3);
    test_linear_modes();
    test_agreement();
    test_nonsmooth();
    test_unsettled();
    test_errors();
    test_diverged();
    gsl_rng_free(rng);
    return TEST_SUMMARY();
}
