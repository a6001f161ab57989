/* test_split.c: the split module (split.h).
 *
 *  1. the embedding: the split point has the parent's loss and is a fixed
 *     point of the larger flow (residual ~ 1e-15) for every lambda,
 *     negative ones and several daughters, with non-uniform parent v;
 *  2. the inner Hessian H_r (closed form, order-parameter representation)
 *     against second differences of the loss of the split network in
 *     weight space along the daughters' difference u = (mu_b e, -mu_a e),
 *     whose curvature is mu_a mu_b e^T H_r e (erf and ReLU, at fixed points
 *     and at random states), and in the complement of the span;
 *  3. the inner Hessian against a seeded Monte Carlo average of
 *     v_r (phi - phi*)(x) g''(lambda_r) (e . x)^2 / d (erf), within 5
 *     standard errors;
 *  4. the complement value h_perp = v_r E[res g''(lambda_r)] equals
 *     -w_r . grad_r eps (erf: g'' = -x g'), computed by scm_weights_grad:
 *     zero at a fixed point, non-zero elsewhere;
 *  5. the decoupling: s-type directions (both daughters move together)
 *     and u-type ones are H-orthogonal under the closed-form Hessian of
 *     stability.c;
 *  6. the classes: a PD, an ND and an indefinite erf parent; at sample
 *     lambdas (and splits into three) the full Hessian's inertia equals the
 *     prediction exactly, the verdicts follow the rule, and the perturbation
 *     test agrees where the Hessian gives a strict answer;
 *  7. error paths;
 *  8. the study of `scm split`: the samples, a parent read from a file and
 *     chosen among the enumerated points, the study against direct calls
 *     of the checks above, its result object and its errors. */
#include <gsl/gsl_errno.h>
#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scm/fixedpoint.h"
#include "scm/fplist.h"
#include "scm/output.h"
#include "scm/split.h"
#include "scm/weights.h"
#include "testutil.h"

static gsl_rng *rng;

static double *dalloc(long n) { return calloc((size_t)(n > 0 ? n : 1), sizeof(double)); }

/* A parent: model and a state polished to a fixed point (if polish). */
typedef struct {
    scm_model *m;
    double *Q, *R;
} parent;

static parent make_parent(const scm_activation *act, int K, int M, const double *T,
                          const double *v, const double *vs, const double *Q0, const double *R0,
                          int polish)
{
    scm_error err;
    parent p;
    p.m = scm_model_alloc(K, M, act, T, v, vs, &err);
    p.Q = dalloc(K * K);
    p.R = dalloc(K * M);
    memcpy(p.Q, Q0, sizeof *p.Q * (size_t)(K * K));
    memcpy(p.R, R0, sizeof *p.R * (size_t)(K * M));
    if (polish) {
        scm_flow *fl = scm_flow_alloc(p.m);
        double res;
        scm_status st = scm_fp_polish(fl, p.Q, p.R, 100, 1e-13, &res, &err);
        CHECK(st == SCM_OK && res < 1e-12, "polish of the %s parent K=%d M=%d: residual %.3g",
              act->name, K, M, res);
        scm_flow_free(fl);
    }
    return p;
}

static void parent_free(parent *p)
{
    scm_model_free(p->m);
    free(p->Q);
    free(p->R);
}

static double loss(const scm_model *m, const double *Q, const double *R)
{
    scm_flow *fl = scm_flow_alloc(m);
    double e = NAN;
    scm_flow_loss(fl, Q, R, &e);
    scm_flow_free(fl);
    return e;
}

/* 1. */
static void test_embed(const parent *p, int r, int n, const double *mu)
{
    const int K = p->m->K, M = p->m->M, Kc = K + n - 1;
    double *vc = dalloc(Kc), *Qc = dalloc(Kc * Kc), *Rc = dalloc(Kc * M);
    double *FQ = dalloc(Kc * Kc), *FR = dalloc(Kc * M);
    scm_error err;
    CHECK(scm_split_embed(p->m, p->Q, p->R, r, n, mu, vc, Qc, Rc, &err) == SCM_OK, "embed: %s",
          err.msg);
    double vsum = 0.0;
    for (int k = 0; k < Kc; k++)
        vsum += (k == r || k >= K) ? vc[k] : 0.0;
    CHECK_CLOSE(vsum, p->m->v[r], 1e-14, 1e-15, "daughters' output weights sum to v_r");
    scm_model *mc = scm_split_model(p->m, n, vc, &err);
    scm_flow *fl = scm_flow_alloc(mc);
    double eps;
    scm_flow_rhs(fl, Qc, Rc, FQ, FR, &eps);
    double res = 0.0;
    for (int i = 0; i < Kc * Kc; i++)
        res = fmax(res, fabs(FQ[i]));
    for (int i = 0; i < Kc * M; i++)
        res = fmax(res, fabs(FR[i]));
    CHECK(res < 1e-12, "%s K=%d n=%d mu0=%g: residual of the larger flow %.3g", p->m->act->name,
          K, n, mu[0], res);
    CHECK_CLOSE(eps, loss(p->m, p->Q, p->R), 1e-12, 1e-15, "split point's loss = parent's");
    scm_flow_free(fl);
    scm_model_free(mc);
    free(vc);
    free(Qc);
    free(Rc);
    free(FQ);
    free(FR);
}

/* The split point with two daughters realised in dimension d: child model,
 * weights Wc ((K + 1) x d; daughters are rows r and K), teachers Ws. */
typedef struct {
    scm_model *mc;
    long d;
    double *Wc, *Ws;
} split_w;

static split_w realise_split(const parent *p, int r, double lam, long d)
{
    const int K = p->m->K, M = p->m->M, Kc = K + 1;
    double mu[2] = {lam, 1.0 - lam};
    double *vc = dalloc(Kc), *Qc = dalloc(Kc * Kc), *Rc = dalloc(Kc * M);
    scm_error err;
    split_w s = {NULL, d, dalloc(Kc * d), dalloc(M * d)};
    scm_split_embed(p->m, p->Q, p->R, r, 2, mu, vc, Qc, Rc, &err);
    s.mc = scm_split_model(p->m, 2, vc, &err);
    CHECK(scm_weights_realise(s.mc, Qc, Rc, d, s.Wc, s.Ws, &err) == SCM_OK, "realise: %s",
          err.msg);
    /* make the daughters bit-identical (the realisation is exact only to round-off) */
    memcpy(s.Wc + (long)K * d, s.Wc + (long)r * d, sizeof *s.Wc * (size_t)d);
    free(vc);
    free(Qc);
    free(Rc);
    return s;
}

static void split_w_free(split_w *s)
{
    scm_model_free(s->mc);
    free(s->Wc);
    free(s->Ws);
}

static double eTHe(const double *H, const double *e, long d)
{
    double s = 0.0;
    for (long i = 0; i < d; i++)
        for (long j = 0; j < d; j++)
            s += e[i] * H[i * d + j] * e[j];
    return s;
}

/* 2 (and 4 at the same realisation): second differences of the loss along
 * the daughters' difference.  rtol: 1e-5 for erf; ReLU's loss is C^2 but
 * not C^3 at coinciding neurons (a |angle|^3 term), so its second
 * difference is off by O(h): 1e-3 at h = 1e-4. */
static void test_inner_fd(const parent *p, int r, double lam, double rtol)
{
    const int K = p->m->K, M = p->m->M;
    const long d = K + M + 2, Kcd = (long)(K + 1) * d;
    scm_split_inner h;
    scm_error err;
    CHECK(scm_split_inner_hessian(p->m, p->Q, p->R, r, 1e-6, &h, &err) == SCM_OK,
          "inner Hessian: %s", err.msg);
    split_w s = realise_split(p, r, lam, d);
    double *Hr = dalloc(d * d), *e = dalloc(d), *Wp = dalloc(Kcd);
    scm_split_inner_weights(&h, d, s.Wc, s.Ws, Hr); /* parent rows = the first K */
    scm_flow *fl = scm_flow_alloc(s.mc);
    for (int rep = 0; rep < 4; rep++) {
        for (long i = 0; i < d; i++)
            e[i] = gsl_ran_gaussian(rng, 1.0);
        if (rep == 3) { /* a direction in the complement of the span */
            memset(e, 0, sizeof *e * (size_t)d);
            e[d - 1] = 1.0;
        }
        /* second differences at t and t/2, Richardson-extrapolated (erf:
         * the O(t^2) error cancels) */
        const double t = p->m->act == &scm_act_relu ? 1e-4 : 2e-3;
        double fdt[2];
        for (int k = 0; k < 2; k++) {
            const double tk = k ? 0.5 * t : t;
            double ev[3];
            for (int c = 0; c < 3; c++) {
                double sg = c - 1.0;
                memcpy(Wp, s.Wc, sizeof *Wp * (size_t)Kcd);
                for (long i = 0; i < d; i++) {
                    Wp[(long)r * d + i] += sg * tk * (1.0 - lam) * e[i];
                    Wp[(long)K * d + i] -= sg * tk * lam * e[i];
                }
                scm_weights_grad(fl, d, Wp, s.Ws, &ev[c], NULL);
            }
            fdt[k] = (ev[0] - 2.0 * ev[1] + ev[2]) / (tk * tk);
        }
        double fd = p->m->act == &scm_act_relu ? fdt[1] : fdt[1] + (fdt[1] - fdt[0]) / 3.0;
        double want = lam * (1.0 - lam) * eTHe(Hr, e, d);
        double scale = fabs(lam * (1.0 - lam)) * fabs(eTHe(Hr, e, d));
        /* loss differences lose ~1e-16 / (t/2)^2, amplified by the extrapolation */
        CHECK_CLOSE(fd, want, rtol, 4e-15 / (t * t) + 1e-3 * rtol * scale,
                    rep == 3 ? "complement: curvature along the daughters' difference"
                             : "curvature along the daughters' difference vs mu_a mu_b e^T H_r e");
    }
    /* ReLU: H_r w_r = 0 (lambda delta(lambda) = 0, homogeneity) */
    if (p->m->act == &scm_act_relu) {
        double hw = 0.0, hmax = 0.0;
        for (long i = 0; i < d; i++) {
            double s2 = 0.0;
            for (long j = 0; j < d; j++) {
                s2 += Hr[i * d + j] * s.Wc[(long)r * d + j];
                hmax = fmax(hmax, fabs(Hr[i * d + j]));
            }
            hw = fmax(hw, fabs(s2));
        }
        CHECK(hw <= 1e-12 * hmax * d, "ReLU: |H_r w_r| = %.3g (max |H_r| %.3g)", hw, hmax);
        CHECK(h.homog_zero == 1 && h.n_zero == 1, "ReLU: one span zero, explained (%d, %d)",
              h.homog_zero, h.n_zero);
    }
    /* 4: h_perp = v_r E[res g''] = -w_r . grad_r eps (erf) */
    if (p->m->act == &scm_act_erf) {
        double *G = dalloc((long)K * d);
        scm_flow *fp = scm_flow_alloc(p->m);
        scm_weights_grad(fp, d, s.Wc, s.Ws, NULL, G);
        double wg = 0.0, gmax = 0.0;
        for (long i = 0; i < d; i++) {
            wg += s.Wc[(long)r * d + i] * G[(long)r * d + i];
            gmax = fmax(gmax, fabs(G[(long)r * d + i]));
        }
        CHECK_CLOSE(h.h_perp, -wg, 1e-10, 1e-13, "h_perp = -w_r . grad_r eps");
        CHECK(h.perp_flat == (gmax < 1e-10), "complement flat iff a fixed point (|grad| %.3g)",
              gmax);
        scm_flow_free(fp);
        free(G);
    }
    scm_flow_free(fl);
    split_w_free(&s);
    scm_split_inner_free(&h);
    free(Hr);
    free(e);
    free(Wp);
}

/* 3: Monte Carlo of v_r E[res g''(lambda_r) (e . x)^2] / d, erf. */
static void test_inner_mc(const parent *p, int r)
{
    const int K = p->m->K, M = p->m->M;
    const long d = K + M + 1, N = 400000;
    scm_split_inner h;
    scm_error err;
    scm_split_inner_hessian(p->m, p->Q, p->R, r, 1e-6, &h, &err);
    double *W = dalloc((long)K * d), *Ws = dalloc((long)M * d), *Hr = dalloc(d * d);
    double *x = dalloc(d), *e = dalloc(d);
    scm_weights_realise(p->m, p->Q, p->R, d, W, Ws, &err);
    scm_split_inner_weights(&h, d, W, Ws, Hr);
    for (long i = 0; i < d; i++)
        e[i] = gsl_ran_gaussian(rng, 1.0);
    const double sd = sqrt((double)d), c2 = sqrt(2.0 / M_PI);
    double s1 = 0.0, s2 = 0.0;
    for (long n = 0; n < N; n++) {
        for (long i = 0; i < d; i++)
            x[i] = gsl_ran_gaussian(rng, 1.0);
        double res = 0.0, lr = 0.0, ex = 0.0;
        for (int k = 0; k < K + M; k++) {
            const double *w = k < K ? W + (long)k * d : Ws + (long)(k - K) * d;
            double l = 0.0;
            for (long i = 0; i < d; i++)
                l += w[i] * x[i];
            l /= sd;
            res += (k < K ? p->m->v[k] : -p->m->vs[k - K]) * erf(l / M_SQRT2);
            if (k == r)
                lr = l;
        }
        for (long i = 0; i < d; i++)
            ex += e[i] * x[i];
        double g2 = -lr * c2 * exp(-0.5 * lr * lr);
        double val = p->m->v[r] * res * g2 * ex * ex / (double)d;
        s1 += val;
        s2 += val * val;
    }
    double mean = s1 / N, se = sqrt((s2 / N - mean * mean) / N);
    double want = eTHe(Hr, e, d);
    CHECK(fabs(mean - want) <= 5.0 * se, "Monte Carlo e^T H_r e = %.6g +- %.2g, closed form %.6g",
          mean, se, want);
    scm_split_inner_free(&h);
    free(W);
    free(Ws);
    free(Hr);
    free(x);
    free(e);
}

/* 5: s-type and u-type directions are H-orthogonal (closed-form Hessian). */
static void test_decoupling(const parent *p, int r, double lam)
{
    const int K = p->m->K, M = p->m->M;
    const long d = K + M + 1, Kcd = (long)(K + 1) * d;
    split_w s = realise_split(p, r, lam, d);
    scm_flow *fl = scm_flow_alloc(s.mc);
    double *H = dalloc(Kcd * Kcd), *a = dalloc(Kcd), *u = dalloc(Kcd);
    scm_error err;
    CHECK(scm_stab_hessian(fl, d, s.Wc, s.Ws, H, &err) == SCM_OK, "Hessian: %s", err.msg);
    for (long i = 0; i < Kcd; i++)
        a[i] = gsl_ran_gaussian(rng, 1.0);
    for (long i = 0; i < d; i++) { /* both daughters move together */
        a[(long)K * d + i] = a[(long)r * d + i];
        double e = gsl_ran_gaussian(rng, 1.0);
        u[(long)r * d + i] = (1.0 - lam) * e;
        u[(long)K * d + i] = -lam * e;
    }
    double x = 0.0, scale = 0.0;
    for (long i = 0; i < Kcd; i++)
        for (long j = 0; j < Kcd; j++) {
            x += a[i] * H[i * Kcd + j] * u[j];
            scale += fabs(a[i] * H[i * Kcd + j] * u[j]);
        }
    CHECK(fabs(x) <= 1e-13 * scale, "s^T H u = %.3g (scale %.3g): not decoupled", x, scale);
    scm_flow_free(fl);
    split_w_free(&s);
    free(H);
    free(a);
    free(u);
}

/* 6: the class of the line and the verdicts at sample points. */
typedef enum { RULE_PD, RULE_ND, RULE_INDEF } rule;

/* The verdict the rule of docs/split.md gives for mu (parent a minimum). */
static scm_hverdict rule_verdict(rule c, int n, const double *mu)
{
    int np = 0, nn = 0;
    for (int j = 0; j < n; j++) {
        np += mu[j] > 0.0;
        nn += mu[j] < 0.0;
    }
    if (c == RULE_PD)
        return nn ? SCM_HVERDICT_SADDLE : SCM_HVERDICT_MIN;
    if (c == RULE_ND)
        return np > 1 ? SCM_HVERDICT_SADDLE : SCM_HVERDICT_MIN;
    return np - 1 + nn > 0 ? SCM_HVERDICT_SADDLE : SCM_HVERDICT_MIN;
}

static void test_classes(const parent *p, int r, rule c, scm_split_class want,
                         const double *perturb_lam, const scm_verdict *perturb_want, int n_perturb)
{
    const int K = p->m->K, M = p->m->M;
    const long d = K + M + 1;
    scm_split_inner h;
    scm_error err;
    CHECK(scm_split_inner_hessian(p->m, p->Q, p->R, r, 1e-6, &h, &err) == SCM_OK,
          "inner Hessian: %s", err.msg);
    CHECK(h.cls == want, "class %s, want %s", scm_split_class_str(h.cls),
          scm_split_class_str(want));
    CHECK(h.perp_flat, "erf at a fixed point: flat complement (h_perp = %.3g)", h.h_perp);
    double *ev = dalloc((long)K * d);
    scm_stab_counts pc;
    scm_stab_zero_modes pz;
    int closed;
    CHECK(scm_split_hessian(p->m, p->Q, p->R, d, 1e-6, ev, &pc, &pz, &closed, &err) == SCM_OK,
          "parent Hessian: %s", err.msg);
    CHECK(pc.n_neg == 0 && pc.n_zero == pz.total, "the parent is a minimum (%d neg, %d zero)",
          pc.n_neg, pc.n_zero);
    const double mus[][3] = {{-0.6, 1.6, 0}, {0.0, 1.0, 0}, {0.35, 0.65, 0}, {0.5, 0.5, 0},
                             {1.0, 0.0, 0},  {1.4, -0.4, 0}, {0.2, 0.3, 0.5}, {0.7, 0.6, -0.3},
                             {-0.2, -0.3, 1.5}};
    for (int i = 0; i < 9; i++) {
        int n = i < 6 ? 2 : 3;
        scm_split_point pt;
        scm_status st = scm_split_check(p->m, p->Q, p->R, &h, n, mus[i], d, 1e-6, &pc, pz.total,
                                        &pt, &err);
        CHECK(st == SCM_OK, "split check: %s", err.msg);
        CHECK(pt.residual < 1e-12, "residual %.3g", pt.residual);
        CHECK(pt.match, "mu = (%g, %g, %g): Hessian inertia %d/%d/%d, predicted %ld/%ld/%ld",
              mus[i][0], mus[i][1], mus[i][2], pt.counts.n_neg, pt.counts.n_zero,
              pt.counts.n_pos, pt.pred.n_neg, pt.pred.n_zero, pt.pred.n_pos);
        scm_hverdict rv = rule_verdict(c, n, mus[i]);
        CHECK(pt.verdict == rv, "mu = (%g, %g, %g), class %s: verdict %s, the rule says %s",
              mus[i][0], mus[i][1], mus[i][2], scm_split_class_str(h.cls),
              scm_hverdict_str(pt.verdict), scm_hverdict_str(rv));
        CHECK((pt.verdict == SCM_HVERDICT_SADDLE) == (pt.eval_min < 0.0),
              "smallest non-explained eigenvalue %.3g vs verdict %s", pt.eval_min,
              scm_hverdict_str(pt.verdict));
    }
    /* the perturbation test at some lambdas */
    for (int i = 0; i < n_perturb; i++) {
        double mu[2] = {perturb_lam[i], 1.0 - perturb_lam[i]};
        double *vc = dalloc(K + 1), *Qc = dalloc((K + 1) * (K + 1)), *Rc = dalloc((K + 1) * M);
        scm_split_embed(p->m, p->Q, p->R, r, 2, mu, vc, Qc, Rc, &err);
        scm_model *mc = scm_split_model(p->m, 2, vc, &err);
        scm_stab_opts o;
        scm_stab_opts_three_sigma(&o);
        o.d = d;
        o.hessian = 0;
        o.jacobian = 0;
        scm_stab_result res;
        CHECK(scm_stab_analyse(mc, Qc, Rc, &o, &res, &err) == SCM_OK, "perturbation: %s",
              err.msg);
        CHECK(res.verdict == perturb_want[i],
              "lambda = %g, class %s: perturbation test %s, want %s", mu[0],
              scm_split_class_str(h.cls), scm_verdict_str(res.verdict),
              scm_verdict_str(perturb_want[i]));
        scm_model_free(mc);
        free(vc);
        free(Qc);
        free(Rc);
    }
    free(ev);
    scm_split_inner_free(&h);
}

/* 6b: a line with a zero of H_r on the span (K = 1, M = 2, v = 2: its
 * lambda = 1/2 point is the K = M = 2 plateau): the zero is not explained,
 * so points without a negative eigenvalue are degenerate, not minima. */
static void test_semidefinite(const parent *p)
{
    const long d = p->m->K + p->m->M + 1;
    scm_split_inner h;
    scm_error err;
    scm_split_inner_hessian(p->m, p->Q, p->R, 0, 1e-6, &h, &err);
    CHECK(h.cls == SCM_SPLIT_SEMIDEF && h.n_zero == 1 && h.n_neg == 1,
          "K = 1, M = 2, v = 2: class %s, span %d neg %d zero", scm_split_class_str(h.cls),
          h.n_neg, h.n_zero);
    double *ev = dalloc((long)p->m->K * d);
    scm_stab_counts pc;
    scm_stab_zero_modes pz;
    int closed;
    scm_split_hessian(p->m, p->Q, p->R, d, 1e-6, ev, &pc, &pz, &closed, &err);
    const double mus[3][2] = {{1.5, -0.5}, {0.5, 0.5}, {-0.3, 1.3}};
    const scm_hverdict want[3] = {SCM_HVERDICT_DEGENERATE, SCM_HVERDICT_SADDLE,
                                  SCM_HVERDICT_DEGENERATE};
    for (int i = 0; i < 3; i++) {
        scm_split_point pt;
        scm_split_check(p->m, p->Q, p->R, &h, 2, mus[i], d, 1e-6, &pc, pz.total, &pt, &err);
        CHECK(pt.match && pt.verdict == want[i], "lambda %g: match %d, verdict %s, want %s",
              mus[i][0], pt.match, scm_hverdict_str(pt.verdict), scm_hverdict_str(want[i]));
    }
    free(ev);
    scm_split_inner_free(&h);
}

/* 7. */
static void test_errors(const parent *p)
{
    scm_error err;
    const int K = p->m->K, M = p->m->M;
    double *vc = dalloc(K + 4), *Qc = dalloc((K + 4) * (K + 4)), *Rc = dalloc((K + 4) * M);
    double mu1[1] = {1.0}, mubad[2] = {0.3, 0.6}, munan[2] = {NAN, 1.0}, mu[2] = {0.5, 0.5};
    CHECK(scm_split_embed(p->m, p->Q, p->R, 0, 1, mu1, vc, Qc, Rc, &err) == SCM_EINVAL &&
              strstr(err.msg, "2 daughters"),
          "one daughter: %s", err.msg);
    CHECK(scm_split_embed(p->m, p->Q, p->R, 0, 2, mubad, vc, Qc, Rc, &err) == SCM_EINVAL &&
              strstr(err.msg, "sum to 1"),
          "weights not summing to 1: %s", err.msg);
    CHECK(scm_split_embed(p->m, p->Q, p->R, 0, 2, munan, vc, Qc, Rc, &err) == SCM_EINVAL &&
              strstr(err.msg, "not finite"),
          "NaN weight: %s", err.msg);
    double mubig[2] = {1e300, -1e300};
    CHECK(scm_split_embed(p->m, p->Q, p->R, 0, 2, mubig, vc, Qc, Rc, &err) == SCM_EINVAL &&
              strstr(err.msg, "out of range") && !strstr(err.msg, "sum to"),
          "weight 1e300: %s", err.msg);
    CHECK(scm_split_embed(p->m, p->Q, p->R, K, 2, mu, vc, Qc, Rc, &err) == SCM_EINVAL &&
              strstr(err.msg, "out of range"),
          "neuron out of range: %s", err.msg);
    scm_split_inner h;
    CHECK(scm_split_inner_hessian(p->m, p->Q, p->R, -1, 1e-6, &h, &err) == SCM_EINVAL,
          "inner: neuron -1");
    /* ReLU: a dead neuron, a neuron parallel to a teacher */
    double Q[4] = {0.0, 0.0, 0.0, 1.0}, R[4] = {0.0, 0.0, 0.3, 0.2};
    scm_model *m = scm_model_alloc(2, 2, &scm_act_relu, NULL, NULL, NULL, &err);
    CHECK(scm_split_inner_hessian(m, Q, R, 0, 1e-6, &h, &err) == SCM_EDEAD &&
              strstr(err.msg, "dead"),
          "dead ReLU neuron: %s", err.msg);
    double Q2[4] = {1.0, 0.1, 0.1, 1.0}, R2[4] = {1.0, 0.0, 0.1, 0.4};
    CHECK(scm_split_inner_hessian(m, Q2, R2, 0, 1e-6, &h, &err) == SCM_ESINGULAR &&
              strstr(err.msg, "teacher 0"),
          "ReLU student parallel to a teacher: %s", err.msg);
    scm_model_free(m);
    free(vc);
    free(Qc);
    free(Rc);
}

/* 8. the study of `scm split` (scm_split_parent_*, scm_split_samples,
 *    scm_split_study_*): against the lower-level calls directly. */

/* Write text to a new temporary file; its path into path (PATH_MAX). */
static int write_temp(const char *text, char *path)
{
    snprintf(path, 64, "/tmp/test_split_XXXXXX");
    int fd = mkstemp(path);
    if (fd < 0)
        return 0;
    FILE *f = fdopen(fd, "w");
    const int ok = f && fputs(text, f) >= 0;
    if (f)
        fclose(f);
    return ok;
}

static void test_study_samples(void)
{
    scm_split_sample *s = NULL;
    int ns = 0;
    scm_error err;
    const double lam[2] = {0.25, 2.0}, w[3] = {0.2, 0.3, 0.5}, wbad[2] = {0.3, 0.6};
    CHECK(scm_split_samples(NULL, 0, 3, NULL, 0, &s, &ns, &err) == SCM_OK && ns == 3, "grid");
    for (int i = 0; s && i < ns; i++)
        CHECK(s[i].n == 2 && s[i].mu[0] == -0.5 + i && s[i].mu[1] == 1.0 - s[i].mu[0],
              "grid sample %d: (%g, %g)", i, s[i].mu[0], s[i].mu[1]);
    free(s);
    CHECK(scm_split_samples(lam, 2, 0, NULL, 0, &s, &ns, &err) == SCM_OK && ns == 2 &&
              s[1].mu[0] == 2.0 && s[1].mu[1] == -1.0,
          "lambdas");
    free(s);
    CHECK(scm_split_samples(NULL, 0, 0, w, 3, &s, &ns, &err) == SCM_OK && ns == 1 &&
              s[0].n == 3 && s[0].mu[2] == 0.5,
          "weights");
    free(s);
    CHECK(scm_split_samples(NULL, 0, 0, wbad, 2, &s, &ns, &err) == SCM_EINVAL &&
              strstr(err.msg, "must sum to 1"),
          "weights summing to 0.9: %s", err.msg);
    free(s);
    /* issue 26 item 19: lambda 1e300 gives weights (1e300, -1e300) that sum
     * to 0 in doubles; the message was "they sum to 0", now the range */
    const double huge[2] = {0.5, 1e300}, whuge[3] = {1e300, -1e300, 1.0};
    CHECK(scm_split_samples(huge, 2, 0, NULL, 0, &s, &ns, &err) == SCM_EINVAL &&
              strstr(err.msg, "--lambda 1e+300 is out of range") && !strstr(err.msg, "sum to 0"),
          "lambda 1e300: %s", err.msg);
    free(s);
    CHECK(scm_split_samples(NULL, 0, 0, whuge, 3, &s, &ns, &err) == SCM_EINVAL &&
              strstr(err.msg, "weight 0 = 1e+300"),
          "weights 1e300: %s", err.msg);
    free(s);
    const double edge[2] = {-SCM_SPLIT_MU_MAX, SCM_SPLIT_MU_MAX};
    CHECK(scm_split_samples(edge, 2, 0, NULL, 0, &s, &ns, &err) == SCM_OK && ns == 2 &&
              s[0].mu[0] + s[0].mu[1] == 1.0 && s[1].mu[0] + s[1].mu[1] == 1.0,
          "lambda +-1e3 accepted, weights summing to 1 exactly: %s", err.msg);
    free(s);
}

/* The study of neuron r of p (read back from a file) against direct calls. */
static void test_study_run(const parent *p, int r)
{
    const int K = p->m->K, M = p->m->M;
    cJSON *j = cJSON_CreateObject();
    cJSON_AddItemToObject(j, "Q", scm_output_matrix(p->Q, K, K));
    cJSON_AddItemToObject(j, "R", scm_output_matrix(p->R, K, M));
    cJSON_AddItemToObject(j, "v", scm_output_vector(p->m->v, K));
    char *text = scm_output_print(j, 0), path[64];
    cJSON_Delete(j);
    CHECK(text && write_temp(text, path), "temporary file");
    free(text);
    scm_split_parent sp;
    memset(&sp, 0, sizeof sp);
    scm_error err;
    CHECK(scm_split_parent_load(path, -1, &sp, &err) == SCM_OK, "load: %s", err.msg);
    remove(path);
    CHECK(sp.K == K && sp.M == M && !strcmp(sp.act, "erf") && sp.v && !sp.T && !sp.vs &&
              memcmp(sp.Q, p->Q, sizeof(double) * (size_t)(K * K)) == 0 &&
              memcmp(sp.R, p->R, sizeof(double) * (size_t)(K * M)) == 0 &&
              sp.v[K - 1] == p->m->v[K - 1],
          "the point read back");
    scm_split_sample *s = NULL;
    int ns = 0;
    scm_split_samples(NULL, 0, 4, NULL, 0, &s, &ns, &err);
    scm_split_study_opts o;
    scm_split_study_opts_default(&o);
    o.neuron = r;
    scm_split_study st;
    CHECK(scm_split_study_run(&sp, &o, s, ns, &st, &err) == SCM_OK, "study: %s", err.msg);
    const long d = K + M + 1;
    CHECK(st.d == d && st.residual <= 1e-9 && strstr(sp.desc, "; residual "), "d %ld, desc %s",
          st.d, sp.desc);
    scm_split_inner h;
    scm_stab_counts pc;
    scm_stab_zero_modes pz;
    double *ev = dalloc((long)K * d);
    int closed;
    scm_split_inner_hessian(p->m, p->Q, p->R, r, 1e-6, &h, &err);
    scm_split_hessian(p->m, p->Q, p->R, d, 1e-6, ev, &pc, &pz, &closed, &err);
    CHECK(st.inner.rank == h.rank && st.inner.cls == h.cls &&
              memcmp(st.inner.eval, h.eval, sizeof(double) * (size_t)h.rank) == 0,
          "inner Hessian as computed directly");
    CHECK(st.parent_counts.n_neg == pc.n_neg && st.parent_counts.n_zero == pc.n_zero &&
              st.parent_zero.total == pz.total,
          "parent Hessian as computed directly");
    for (int i = 0; i < ns; i++) {
        scm_split_point pt;
        scm_split_check(p->m, p->Q, p->R, &h, 2, s[i].mu, d, 1e-6, &pc, pz.total, &pt, &err);
        CHECK(s[i].pt.counts.n_neg == pt.counts.n_neg && s[i].pt.counts.n_zero == pt.counts.n_zero &&
                  s[i].pt.residual == pt.residual && s[i].pt.verdict == pt.verdict &&
                  !s[i].perturbed,
              "sample %d as checked directly", i);
    }
    cJSON *res = scm_split_study_json(&st);
    const cJSON *pts = cJSON_GetObjectItem(res, "points");
    CHECK(cJSON_GetArraySize(pts) == ns &&
              cJSON_GetObjectItem(res, "neuron")->valueint == r &&
              !strcmp(cJSON_GetObjectItem(cJSON_GetObjectItem(res, "inner_hessian"), "class")
                          ->valuestring,
                      scm_split_class_str(h.cls)) &&
              cJSON_GetObjectItem(cJSON_GetArrayItem(pts, 2), "negative")->valueint ==
                  s[2].pt.counts.n_neg,
          "the result object");
    cJSON_Delete(res);
    scm_split_study_free(&st);
    /* Bad input: a neuron out of range, a state that is not a fixed point. */
    o.neuron = K;
    CHECK(scm_split_study_run(&sp, &o, s, ns, &st, &err) == SCM_EINVAL &&
              strstr(err.msg, "out of range"),
          "neuron out of range: %s", err.msg);
    scm_split_study_free(&st);
    o.neuron = r;
    sp.Q[0] *= 1.01;
    CHECK(scm_split_study_run(&sp, &o, s, ns, &st, &err) == SCM_EINVAL &&
              strstr(err.msg, "not a fixed point"),
          "not a fixed point: %s", err.msg);
    scm_split_study_free(&st);
    o.polish = 1;
    CHECK(scm_split_study_run(&sp, &o, s, 1, &st, &err) == SCM_OK && st.residual <= 1e-12 &&
              strstr(sp.desc, ", Newton-polished"),
          "polished: %s (%s)", err.msg, sp.desc);
    scm_split_study_free(&st);
    scm_split_inner_free(&h);
    free(ev);
    free(s);
    scm_split_parent_free(&sp);
}

/* A fixed-points result file, and the choice among enumerated points. */
static void test_study_parents(void)
{
    scm_error err;
    scm_split_parent sp;
    char path[64];
    CHECK(write_temp("{\"activation\": \"relu\", \"fixed_points\": [{\"Q\": [[1]], \"R\": "
                     "[[1, 0]]}, {\"Q\": [[2]], \"R\": [[0.5, 0.25]]}]}",
                     path),
          "temporary file");
    memset(&sp, 0, sizeof sp);
    CHECK(scm_split_parent_load(path, 1, &sp, &err) == SCM_OK && sp.K == 1 && sp.M == 2 &&
              sp.Q[0] == 2.0 && sp.R[1] == 0.25 && !strcmp(sp.act, "relu") &&
              strstr(sp.desc, "[1]"),
          "entry 1: %s", err.msg);
    scm_split_parent_free(&sp);
    CHECK(scm_split_parent_load(path, 2, &sp, &err) == SCM_EINVAL && strstr(err.msg, "[0, 2)"),
          "index 2: %s", err.msg);
    scm_split_parent_free(&sp);
    remove(path);
    CHECK(scm_split_parent_load(path, -1, &sp, &err) == SCM_EIO, "a missing file");
    scm_split_parent_free(&sp);
    scm_fplist_point *c = NULL;
    int n = 0;
    CHECK(scm_fplist_find(2, 2, &scm_act_erf, 10, 1, &c, &n, &err) == SCM_OK && n > 1,
          "enumeration: %d points", n);
    for (int i = 0; i < n && i < 2; i++) {
        memset(&sp, 0, sizeof sp);
        CHECK(scm_split_parent_choose(2, 2, &scm_act_erf, 10, 2, -1, i, NAN, &sp, &err) ==
                      SCM_OK &&
                  memcmp(sp.Q, c[i].Q, 4 * sizeof(double)) == 0 &&
                  memcmp(sp.R, c[i].R, 4 * sizeof(double)) == 0,
              "index %d: the listed point", i);
        scm_split_parent_free(&sp);
        memset(&sp, 0, sizeof sp);
        CHECK(scm_split_parent_choose(2, 2, &scm_act_erf, 10, 1, -1, -1, c[i].eps + 1e-13, &sp,
                                      &err) == SCM_OK &&
                  strstr(sp.desc, i ? "point 1 of" : "point 0 of"),
              "loss of point %d: %s", i, sp.desc);
        scm_split_parent_free(&sp);
    }
    memset(&sp, 0, sizeof sp);
    CHECK(scm_split_parent_choose(2, 2, &scm_act_erf, 10, 1, -1, n, NAN, &sp, &err) ==
                  SCM_EINVAL &&
              strstr(err.msg, "out of range"),
          "index %d: %s", n, err.msg);
    scm_split_parent_free(&sp);
    scm_fplist_free(c, n);
}

int main(void)
{
    gsl_set_error_handler_off();
    rng = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(rng, 2385);
    /* erf parents: M = 1 with a teacher the student cannot fit (PD and ND
     * lines), K = 1, M = 2 (indefinite), K = 2, M = 3 with non-uniform v */
    double T2[1] = {2.0}, T8[1] = {8.0}, vs15[1] = {1.5}, vs05[1] = {0.5};
    double Q1[1] = {1.0}, R1[1] = {0.5}, Qs[1] = {0.5}, Rs[2] = {0.5, 0.5};
    double Q23[4] = {0.6, 0.1, 0.1, 0.6}, R23[6] = {0.5, 0.5, 0.1, 0.1, 0.1, 0.7};
    double v23[2] = {1.15, 0.85};
    parent pd = make_parent(&scm_act_erf, 1, 1, T2, NULL, vs15, Q1, R1, 1);
    parent nd = make_parent(&scm_act_erf, 1, 1, T8, NULL, vs05, Q1, R1, 1);
    parent in = make_parent(&scm_act_erf, 1, 2, NULL, NULL, NULL, Qs, Rs, 1);
    parent p23 = make_parent(&scm_act_erf, 2, 3, NULL, v23, NULL, Q23, R23, 1);
    parent rnd = make_parent(&scm_act_erf, 2, 3, NULL, v23, NULL, Q23, R23, 0);
    parent relu = make_parent(&scm_act_relu, 2, 3, NULL, v23, NULL, Q23, R23, 0);

    const double lams[] = {-0.6, 0.0, 0.3, 0.5, 1.7};
    for (int i = 0; i < 5; i++) {
        double mu[2] = {lams[i], 1.0 - lams[i]};
        test_embed(&p23, 1, 2, mu);
        test_embed(&pd, 0, 2, mu);
    }
    const double mu3[3] = {0.2, -0.5, 1.3};
    test_embed(&p23, 0, 3, mu3);

    test_inner_fd(&pd, 0, 0.3, 1e-5);
    test_inner_fd(&nd, 0, -0.4, 1e-5);
    test_inner_fd(&in, 0, 0.5, 1e-5);
    test_inner_fd(&p23, 1, 0.3, 1e-5);
    test_inner_fd(&rnd, 0, 0.7, 1e-5);
    test_inner_fd(&relu, 1, 0.3, 1e-3);
    test_inner_fd(&relu, 0, 1.3, 1e-3);

    test_inner_mc(&p23, 0);
    test_inner_mc(&rnd, 1);
    test_inner_mc(&nd, 0);

    test_decoupling(&p23, 0, 0.3);
    test_decoupling(&rnd, 1, 1.6);

    const double lpd[2] = {0.5, 1.4}, lnd[1] = {0.5}, lin[1] = {0.35};
    const scm_verdict wpd[2] = {SCM_VERDICT_STABLE, SCM_VERDICT_UNSTABLE},
                      wnd[1] = {SCM_VERDICT_UNSTABLE}, win[1] = {SCM_VERDICT_UNSTABLE};
    test_classes(&pd, 0, RULE_PD, SCM_SPLIT_PD, lpd, wpd, 2);
    test_classes(&nd, 0, RULE_ND, SCM_SPLIT_ND, lnd, wnd, 1);
    test_classes(&in, 0, RULE_INDEF, SCM_SPLIT_INDEFINITE, lin, win, 1);

    double v2[1] = {2.0};
    parent semi = make_parent(&scm_act_erf, 1, 2, NULL, v2, NULL, Qs, Rs, 1);
    test_semidefinite(&semi);
    parent_free(&semi);

    test_errors(&p23);
    test_study_samples();
    test_study_run(&p23, 1);
    test_study_parents();

    parent_free(&pd);
    parent_free(&nd);
    parent_free(&in);
    parent_free(&p23);
    parent_free(&rnd);
    parent_free(&relu);
    gsl_rng_free(rng);
    return TEST_SUMMARY();
}
