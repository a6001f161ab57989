/* stability.c: the perturbation test and the whole analysis of a fixed
 * point (scm_stab_analyse); see stability.h and docs/stability.md.  The
 * Hessian, smoothness and zero modes are in core/hessian.c. */
#include "scm/stability.h"

#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "scm/fixedpoint.h"
#include "scm/traj.h"
#include "scm/weights.h"
#include "stability_internal.h"

/* ---- small helpers ---- */

static double *dalloc(size_t n) { return calloc(n ? n : 1, sizeof(double)); }

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* NaN when n = 0 or an entry is NaN (a diverged trial: qsort needs an
 * order). */
double scm_stab_median(double *x, int n)
{
    if (n <= 0)
        return NAN;
    for (int i = 0; i < n; i++)
        if (isnan(x[i]))
            return NAN;
    qsort(x, (size_t)n, sizeof *x, cmp_double);
    return n % 2 ? x[n / 2] : 0.5 * (x[n / 2 - 1] + x[n / 2]);
}

double scm_stab_vmax(const double *x, int n)
{
    double m = -INFINITY;
    for (int i = 0; i < n; i++) {
        if (isnan(x[i]))
            return NAN; /* a diverged trial (fmax would drop it) */
        m = fmax(m, x[i]);
    }
    return n ? m : NAN;
}

/* ---- options, names ---- */

void scm_stab_opts_default(scm_stab_opts *o)
{
    memset(o, 0, sizeof *o);
    o->d = 0;
    o->n_steps = 1000;
    o->eta = 0.01;
    o->n_sigma = 4;
    o->sigma[0] = 1e-4;
    o->sigma[1] = 1e-3;
    o->sigma[2] = 1e-2;
    o->sigma[3] = 1e-1;
    o->n_trials = 10;
    o->seed = 1;
    o->run_flow = 1;
    o->t_max = 1e5;
    o->same_tol = 1e-8;
    o->near_tol = 1e-6;
    o->global_tol = 1e-10;
    o->verdict_sigma_max = 1e-2;
    o->zero_rel_tol = 1e-6;
    o->smooth_tol = 1e-9;
    o->hessian = 1;
    o->jacobian = 1;
}

void scm_stab_opts_three_sigma(scm_stab_opts *o)
{
    scm_stab_opts_default(o);
    o->n_trials = 3;
    o->n_sigma = 3;
    o->sigma[0] = 1e-4;
    o->sigma[1] = 1e-3;
    o->sigma[2] = 1e-2;
}

scm_status scm_stab_opts_check(const scm_stab_opts *o, scm_error *err)
{
    if (o->n_steps < 0)
        return scm_error_set(err, SCM_EINVAL, "steps must be >= 0, got %d", o->n_steps);
    if (!(o->eta > 0.0 && isfinite(o->eta)))
        return scm_error_set(err, SCM_EINVAL, "eta must be > 0 and finite, got %g", o->eta);
    if (o->n_sigma < 0 || o->n_sigma > SCM_STAB_MAX_SIGMA)
        return scm_error_set(err, SCM_EINVAL, "between 0 and %d sigma values, got %d",
                             SCM_STAB_MAX_SIGMA, o->n_sigma);
    for (int i = 0; i < o->n_sigma; i++)
        if (!(o->sigma[i] > 0.0 && isfinite(o->sigma[i])))
            return scm_error_set(err, SCM_EINVAL, "sigma must be > 0 and finite, got %g",
                                 o->sigma[i]);
    if (o->n_trials < 1)
        return scm_error_set(err, SCM_EINVAL, "trials must be >= 1, got %d", o->n_trials);
    if (!(o->t_max > 0.0 && isfinite(o->t_max)))
        return scm_error_set(err, SCM_EINVAL, "t_max must be > 0 and finite, got %g", o->t_max);
    if (!(o->same_tol > 0.0) || !(o->global_tol > 0.0) || !(o->zero_rel_tol > 0.0) ||
        !(o->smooth_tol > 0.0))
        return scm_error_set(err, SCM_EINVAL, "tolerances must be > 0");
    if (!(o->near_tol >= o->same_tol))
        return scm_error_set(err, SCM_EINVAL, "near_tol (%g) must be >= same_tol (%g)",
                             o->near_tol, o->same_tol);
    return SCM_OK;
}

const char *scm_stab_dest_str(scm_stab_dest d)
{
    switch (d) {
    case SCM_DEST_SAME: return "same";
    case SCM_DEST_GLOBAL: return "global_min";
    case SCM_DEST_OTHER: return "other";
    default: return "failed";
    }
}

const char *scm_verdict_str(scm_verdict v)
{
    switch (v) {
    case SCM_VERDICT_STABLE: return "stable";
    case SCM_VERDICT_UNSTABLE: return "unstable";
    case SCM_VERDICT_DIVERGED: return "diverged";
    default: return "undecided";
    }
}

int scm_stab_agree(scm_hverdict hv, scm_verdict v)
{
    if ((hv != SCM_HVERDICT_MIN && hv != SCM_HVERDICT_SADDLE) ||
        (v != SCM_VERDICT_STABLE && v != SCM_VERDICT_UNSTABLE))
        return -1;
    return (hv == SCM_HVERDICT_MIN) == (v == SCM_VERDICT_STABLE);
}

const char *scm_hverdict_str(scm_hverdict v)
{
    switch (v) {
    case SCM_HVERDICT_MIN: return "min";
    case SCM_HVERDICT_SADDLE: return "saddle";
    case SCM_HVERDICT_DEGENERATE: return "degenerate";
    case SCM_HVERDICT_INCONSISTENT: return "inconsistent";
    case SCM_HVERDICT_NONFINITE: return "not_finite";
    default: return "none";
    }
}

/* ---- the analysis ---- */

static double dist_qr(int K, int M, const double *Q0, const double *R0, const double *Q,
                      const double *R)
{
    double s = 0.0;
    for (int i = 0; i < K * K; i++)
        s = fmax(s, fabs(Q[i] - Q0[i]));
    for (int i = 0; i < K * M; i++)
        s = fmax(s, fabs(R[i] - R0[i]));
    return s;
}

static scm_status hessian_part(const scm_model *m, scm_flow *fl, long d, const double *W,
                               const double *Ws, const scm_stab_opts *o, scm_stab_result *res,
                               scm_error *err)
{
    const long Kd = (long)m->K * d;
    scm_status st = SCM_OK;
    double *H = dalloc((size_t)Kd * (size_t)Kd), *Hf = dalloc((size_t)Kd * (size_t)Kd);
    double *ev = dalloc((size_t)Kd);
    if (!H || !Hf || !ev) {
        st = scm_error_set(err, SCM_ENOMEM, "out of memory for the Hessian");
        goto out;
    }
    scm_error e2;
    if (scm_stab_hessian_fd(fl, d, W, Ws, 0.0, Hf, &e2))
        goto out; /* no Hessian here: the perturbation test decides */
    if (res->smooth.closed_form && scm_stab_hessian(fl, d, W, Ws, H, &e2) == SCM_OK) {
        double hm = 0.0, dm = 0.0;
        for (long i = 0; i < Kd * Kd; i++) {
            hm = fmax(hm, fabs(H[i]));
            dm = fmax(dm, fabs(H[i] - Hf[i]));
        }
        res->hessian_closed = 1;
        res->hessian_fd_diff = hm > 0.0 ? dm / hm : dm;
    } else {
        memcpy(H, Hf, sizeof *H * (size_t)Kd * (size_t)Kd);
        res->hessian_fd_diff = NAN;
    }
    for (long i = 0; i < Kd * Kd; i++)
        if (!isfinite(H[i])) {
            res->hverdict = SCM_HVERDICT_NONFINITE; /* no spectrum, no verdict */
            goto out;
        }
    if ((st = scm_stab_spectrum(H, (int)Kd, o->zero_rel_tol, ev, &res->counts))) {
        scm_error_set(err, st, "the Hessian's eigenvalues failed (%s)", scm_status_str(st));
        goto out;
    }
    res->hessian_done = 1;
    res->n_small = (int)(Kd < SCM_STAB_N_SMALL ? Kd : SCM_STAB_N_SMALL);
    for (int i = 0; i < res->n_small; i++)
        res->eval_small[i] = ev[i];
    res->eval_max = ev[Kd - 1];
    int finite = 1;
    for (long i = 0; i < Kd; i++)
        finite &= isfinite(ev[i]) != 0;
    if (!finite)
        res->hverdict = SCM_HVERDICT_NONFINITE;
    else if (res->counts.n_neg > 0)
        res->hverdict = SCM_HVERDICT_SADDLE;
    else if (res->counts.n_zero == res->zm.total)
        res->hverdict = SCM_HVERDICT_MIN;
    else if (res->counts.n_zero > res->zm.total)
        res->hverdict = SCM_HVERDICT_DEGENERATE;
    else
        res->hverdict = SCM_HVERDICT_INCONSISTENT;
out:
    free(H);
    free(Hf);
    free(ev);
    return st;
}

/* The state of one analysis: the point (Q, R) of m, its realisation in
 * weights (W, Ws: d dimensions), the perturbed weights Wp with their
 * gradient G and overlaps Qp, Rp, scratch FQ, FR (also the flow's start),
 * the trials' statistics buf (4 n_trials) and the perturbations' rng. */
typedef struct {
    const scm_model *m;
    const double *Q, *R;
    const scm_stab_opts *o;
    scm_stab_result *res;
    int K, M;
    long d, Kd;
    scm_flow *fl;
    double *W, *Ws, *Wp, *G, *Qp, *Rp, *FQ, *FR, *buf;
    gsl_rng *rng;
    scm_traj_opts to;
} stab_ws;

static void stab_ws_free(stab_ws *w)
{
    scm_flow_free(w->fl);
    free(w->W);
    free(w->Ws);
    free(w->Wp);
    free(w->G);
    free(w->Qp);
    free(w->Rp);
    free(w->FQ);
    free(w->FR);
    free(w->buf);
    if (w->rng)
        gsl_rng_free(w->rng);
}

/* SCM_ENOMEM if any part is missing; w can be freed either way. */
static scm_status stab_ws_alloc(stab_ws *w, const scm_model *m, const double *Q, const double *R,
                                const scm_stab_opts *o, scm_stab_result *res, long d)
{
    const int K = m->K, M = m->M;
    const long Kd = (long)K * d;
    memset(w, 0, sizeof *w);
    w->m = m;
    w->Q = Q;
    w->R = R;
    w->o = o;
    w->res = res;
    w->K = K;
    w->M = M;
    w->d = d;
    w->Kd = Kd;
    w->fl = scm_flow_alloc(m);
    w->W = dalloc((size_t)Kd);
    w->Ws = dalloc((size_t)M * d);
    w->Wp = dalloc((size_t)Kd);
    w->G = dalloc((size_t)Kd);
    w->Qp = dalloc((size_t)K * K);
    w->Rp = dalloc((size_t)K * M);
    w->FQ = dalloc((size_t)K * K);
    w->FR = dalloc((size_t)K * M);
    w->buf = dalloc((size_t)o->n_trials * 4);
    w->rng = gsl_rng_alloc(gsl_rng_mt19937);
    if (!w->fl || !w->W || !w->Ws || !w->Wp || !w->G || !w->Qp || !w->Rp || !w->FQ || !w->FR ||
        !w->buf || !w->rng)
        return SCM_ENOMEM;
    return SCM_OK;
}

/* The point itself: loss and residual, its weights, smoothness, the zero
 * modes, the Hessian and the flow's Jacobian (where smooth and asked). */
static scm_status stab_point(stab_ws *w, scm_error *err)
{
    const scm_model *m = w->m;
    const scm_stab_opts *o = w->o;
    scm_stab_result *res = w->res;
    const double *Q = w->Q, *R = w->R;
    const int K = w->K, M = w->M;
    const long d = w->d;
    scm_status st;
    if ((st = scm_flow_rhs(w->fl, Q, R, w->FQ, w->FR, &res->eps)))
        return scm_error_set(err, st, "the flow cannot be evaluated at the point (%s)",
                             scm_status_str(st));
    double r = 0.0;
    for (int i = 0; i < K * K; i++)
        r = fmax(r, fabs(w->FQ[i]));
    for (int i = 0; i < K * M; i++)
        r = fmax(r, fabs(w->FR[i]));
    res->residual = r;
    if ((st = scm_weights_realise(m, Q, R, d, w->W, w->Ws, err)))
        return st;
    scm_stab_smoothness(m, Q, R, o->smooth_tol, &res->smooth);
    if ((st = scm_stab_predict_zero_modes(m, Q, R, d, o->smooth_tol, &res->zm)))
        return scm_error_set(err, st, "zero modes: the dimension d = %ld is below the rank", d);
    if (o->hessian && res->smooth.smooth &&
        (st = hessian_part(m, w->fl, d, w->W, w->Ws, o, res, err)))
        return st;
    if (o->jacobian && res->smooth.smooth) {
        /* a spectrum with inf or NaN is not reported as one */
        if (scm_fp_full_stability(w->fl, Q, R, &res->jac_re_max, &res->jac_re_min) == SCM_OK &&
            isfinite(res->jac_re_max) && isfinite(res->jac_re_min))
            res->jacobian_done = 1;
    }
    return SCM_OK;
}

/* Where the flow from the perturbed start (Q0, R0) ends, counted in row:
 * *same if at the point's loss, *esc if clearly elsewhere; its final loss
 * appended to fe (*n_fe) unless the run failed. */
static void stab_trial_flow(stab_ws *w, scm_stab_row *row, const double *Q0, const double *R0,
                            double *fe, int *n_fe, int *same, int *esc)
{
    const scm_stab_opts *o = w->o;
    const double eps = w->res->eps;
    scm_traj_result tr;
    scm_error te;
    if (scm_traj_run(w->m, &scm_rule_gd, Q0, R0, &w->to, &tr, &te)) {
        row->n_failed++;
        return;
    }
    if (tr.stop == SCM_STOP_FAILED) {
        row->n_failed++;
    } else {
        double ef = tr.eps;
        fe[(*n_fe)++] = ef;
        const int unsettled = tr.stop == SCM_STOP_T_MAX || tr.stop == SCM_STOP_MAX_STEPS;
        row->n_unsettled += unsettled;
        if (fabs(ef - eps) <= o->same_tol) {
            row->n_same++;
            *same = 1;
        } else if (unsettled && fabs(ef - eps) <= o->near_tol) {
            /* still on its way, in or out: no verdict */
        } else if (ef < o->global_tol) {
            row->n_global++;
            *esc = 1;
        } else {
            row->n_other++;
            row->other_eps_min = fmin(row->other_eps_min, ef);
            row->other_eps_max = fmax(row->other_eps_max, ef);
            *esc = 1;
        }
    }
    scm_traj_result_free(&tr);
}

/* 1 if the n entries of x are finite. */
static int all_finite(const double *x, long n)
{
    for (long i = 0; i < n; i++)
        if (!isfinite(x[i]))
            return 0;
    return 1;
}

/* Trial t of row: a Gaussian perturbation of the weights, o->n_steps GD
 * steps in weight space, and (with run_flow) the flow from the perturbed
 * overlaps.  d0, d1, de get the trial's distances and loss change; *ret
 * and *esc say whether it returned or escaped; *div that the perturbed
 * state, the GD steps or their loss left the finite numbers (then neither
 * a return nor an escape, and no flow run). */
static void stab_trial(stab_ws *w, scm_stab_row *row, int t, double *d0, double *d1, double *de,
                       double *fe, int *n_fe, int *ret, int *esc, int *div)
{
    const scm_model *m = w->m;
    const scm_stab_opts *o = w->o;
    const int K = w->K, M = w->M;
    const long d = w->d, Kd = w->Kd;
    double *Wp = w->Wp, *Qp = w->Qp, *Rp = w->Rp;
    for (long i = 0; i < Kd; i++)
        Wp[i] = w->W[i] + gsl_ran_gaussian(w->rng, row->sigma);
    scm_weights_overlaps(m, d, Wp, w->Ws, Qp, Rp);
    d0[t] = dist_qr(K, M, w->Q, w->R, Qp, Rp);
    *ret = *esc = 0;
    *div = !isfinite(d0[t]);
    double *Q0 = w->FQ, *R0 = w->FR; /* the perturbed start for the flow */
    memcpy(Q0, Qp, sizeof *Q0 * (size_t)K * K);
    memcpy(R0, Rp, sizeof *R0 * (size_t)K * M);
    scm_status gs = *div ? SCM_ENAN : SCM_OK;
    for (int s = 0; s < o->n_steps && !gs; s++) {
        gs = scm_weights_grad(w->fl, d, Wp, w->Ws, NULL, w->G);
        if (!gs)
            for (long i = 0; i < Kd; i++)
                Wp[i] -= o->eta * (double)d * w->G[i];
        if (!gs && !all_finite(Wp, Kd))
            gs = SCM_ENAN;
    }
    double e1 = NAN;
    if (!gs) {
        scm_weights_overlaps(m, d, Wp, w->Ws, Qp, Rp);
        gs = scm_flow_loss(w->fl, Qp, Rp, &e1);
    }
    d1[t] = gs ? INFINITY : dist_qr(K, M, w->Q, w->R, Qp, Rp);
    de[t] = gs ? NAN : e1 - w->res->eps;
    *div |= gs == SCM_ENAN || !isfinite(d1[t]) || !isfinite(de[t]);
    int grew = !(d1[t] <= d0[t]);
    row->n_grew += grew;
    if (*div)
        return;
    int same = 0;
    if (o->run_flow) {
        stab_trial_flow(w, row, Q0, R0, fe, n_fe, &same, esc);
    } else {
        same = !grew;
        *esc = grew;
    }
    *ret = same && !grew;
}

/* The row of perturbation size sigma: its trials, their statistics and
 * the row's verdict. */
static void stab_row(stab_ws *w, scm_stab_row *row, double sigma, int si)
{
    const int nt = w->o->n_trials;
    memset(row, 0, sizeof *row);
    row->sigma = sigma;
    row->n = nt;
    row->other_eps_min = INFINITY;
    row->other_eps_max = -INFINITY;
    double *d0 = w->buf, *d1 = w->buf + nt, *de = w->buf + 2 * nt, *fe = w->buf + 3 * nt;
    int n_fe = 0, n_ret = 0, n_esc = 0, n_div = 0;
    for (int t = 0; t < nt; t++) {
        int ret, esc, div;
        stab_trial(w, row, t, d0, d1, de, fe, &n_fe, &ret, &esc, &div);
        n_ret += ret;
        n_esc += esc;
        n_div += div;
        scm_stab_progress(w->o, si, t);
    }
    row->dist0_max = scm_stab_vmax(d0, nt);
    row->dist_max = scm_stab_vmax(d1, nt);
    row->deps_max = scm_stab_vmax(de, nt);
    row->dist0_med = scm_stab_median(d0, nt);
    row->dist_med = scm_stab_median(d1, nt);
    row->deps_med = scm_stab_median(de, nt);
    row->flow_eps_med = scm_stab_median(fe, n_fe);
    row->verdict = n_div > 0   ? SCM_VERDICT_DIVERGED
                   : n_esc > 0   ? SCM_VERDICT_UNSTABLE
                   : n_ret == nt ? SCM_VERDICT_STABLE
                                 : SCM_VERDICT_UNDECIDED;
}

void scm_stab_progress(const scm_stab_opts *o, int si, int t)
{
    if (o->progress)
        o->progress(o->progress_ctx, si * o->n_trials + t + 1, o->n_sigma * o->n_trials);
}

void scm_stab_verdict_of_rows(const scm_stab_opts *o, scm_stab_result *res)
{
    int any_escape = 0, all_return = 1, rows_in = 0, diverged = 0;
    for (int si = 0; si < res->n_rows; si++) {
        const scm_stab_row *row = &res->rows[si];
        if (row->sigma <= o->verdict_sigma_max) {
            rows_in++;
            diverged |= row->verdict == SCM_VERDICT_DIVERGED;
            any_escape |= row->verdict == SCM_VERDICT_UNSTABLE;
            all_return &= row->verdict == SCM_VERDICT_STABLE;
        }
    }
    res->verdict = diverged                    ? SCM_VERDICT_DIVERGED
                   : any_escape                ? SCM_VERDICT_UNSTABLE
                   : rows_in > 0 && all_return ? SCM_VERDICT_STABLE
                                               : SCM_VERDICT_UNDECIDED;
    res->agree = scm_stab_agree(res->hverdict, res->verdict);
}

scm_status scm_stab_analyse(const scm_model *m, const double *Q, const double *R,
                            const scm_stab_opts *o, scm_stab_result *res, scm_error *err)
{
    const int K = m->K, M = m->M;
    memset(res, 0, sizeof *res);
    res->hverdict = SCM_HVERDICT_NONE;
    res->verdict = SCM_VERDICT_UNDECIDED;
    res->agree = -1;
    scm_status st = scm_stab_opts_check(o, err);
    if (st)
        return st;
    const long d = o->d > 0 ? o->d : K + M;
    res->d = d;
    stab_ws w;
    if ((st = stab_ws_alloc(&w, m, Q, R, o, res, d))) {
        st = scm_error_set(err, SCM_ENOMEM, "out of memory in the stability analysis");
        goto out;
    }
    gsl_rng_set(w.rng, o->seed);
    if ((st = stab_point(&w, err)))
        goto out;

    /* perturbation test */
    scm_traj_opts_default(&w.to);
    w.to.t_max = o->t_max;
    w.to.record = 0;
    for (int si = 0; si < o->n_sigma; si++) {
        stab_row(&w, &res->rows[si], o->sigma[si], si);
        res->n_rows = si + 1;
    }
    scm_stab_verdict_of_rows(o, res);
out:
    stab_ws_free(&w);
    return st;
}
