/* stability_qr.c: the perturbation test of a fixed point in (Q, R)
 * (scm_stab_perturb_qr, stabpoint.h): the perturbation is drawn in weight
 * space, around the realisation W of the point in dimension d, mapped to
 * the overlaps, and the (Q, R) flow integrated with CVODE from there.  No
 * GD steps in weight space: a run costs O(K^2 (K + M)) per step, whatever
 * d.  The destinations are classified as in scm_stab_analyse
 * (stability.c): the same loss, the global minimum, another loss, a failed
 * run; a run that did not settle within near_tol of the point's loss is
 * neither a return nor an escape. */
#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "scm/stabpoint.h"
#include "scm/traj.h"
#include "scm/weights.h"
#include "stability_internal.h"

typedef struct {
    const scm_model *m;
    const double *Q, *R;
    const scm_stab_opts *o;
    double eps;
    long d;
    double *W, *Ws, *Wp, *Qp, *Rp, *buf;
    scm_flow *fl;
    gsl_rng *rng;
    scm_traj_opts to;
} qr_ws;

static void qr_ws_free(qr_ws *w)
{
    free(w->W);
    free(w->Ws);
    free(w->Wp);
    free(w->Qp);
    free(w->Rp);
    free(w->buf);
    scm_flow_free(w->fl);
    if (w->rng)
        gsl_rng_free(w->rng);
}

static double dist_qr(const qr_ws *w)
{
    const int K = w->m->K, M = w->m->M;
    double s = 0.0;
    for (int i = 0; i < K * K; i++)
        s = fmax(s, fabs(w->Qp[i] - w->Q[i]));
    for (int i = 0; i < K * M; i++)
        s = fmax(s, fabs(w->Rp[i] - w->R[i]));
    return s;
}

/* One flow run from (Qp, Rp), counted in row; *same, *esc as the
 * destination says; its final loss appended to fe. */
static void qr_flow(qr_ws *w, scm_stab_row *row, double *fe, int *n_fe, int *same, int *esc)
{
    const scm_stab_opts *o = w->o;
    scm_traj_result tr;
    scm_error te;
    if (scm_traj_run(w->m, &scm_rule_gd, w->Qp, w->Rp, &w->to, &tr, &te)) {
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
        if (fabs(ef - w->eps) <= o->same_tol) {
            row->n_same++;
            *same = 1;
        } else if (unsettled && fabs(ef - w->eps) <= o->near_tol) {
            /* still on its way: no verdict */
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

static void qr_row(qr_ws *w, scm_stab_row *row, double sigma, int si)
{
    const int nt = w->o->n_trials;
    const long Kd = (long)w->m->K * w->d;
    memset(row, 0, sizeof *row);
    row->sigma = sigma;
    row->n = nt;
    row->other_eps_min = INFINITY;
    row->other_eps_max = -INFINITY;
    double *d0 = w->buf, *de = w->buf + nt, *fe = w->buf + 2 * nt;
    int n_fe = 0, n_ret = 0, n_esc = 0, n_div = 0;
    for (int t = 0; t < nt; t++) {
        for (long i = 0; i < Kd; i++)
            w->Wp[i] = w->W[i] + gsl_ran_gaussian(w->rng, sigma);
        scm_weights_overlaps(w->m, w->d, w->Wp, w->Ws, w->Qp, w->Rp);
        d0[t] = dist_qr(w);
        double e0 = NAN;
        de[t] = scm_flow_loss(w->fl, w->Qp, w->Rp, &e0) ? NAN : e0 - w->eps;
        int same = 0, esc = 0;
        if (!isfinite(d0[t]) || !isfinite(de[t]))
            n_div++; /* the perturbed start is not a finite state: no flow */
        else if (w->o->run_flow)
            qr_flow(w, row, fe, &n_fe, &same, &esc);
        n_ret += same;
        n_esc += esc;
        scm_stab_progress(w->o, si, t);
    }
    row->dist0_max = row->dist_max = scm_stab_vmax(d0, nt);
    row->deps_max = scm_stab_vmax(de, nt);
    row->dist0_med = row->dist_med = scm_stab_median(d0, nt);
    row->deps_med = scm_stab_median(de, nt);
    row->flow_eps_med = scm_stab_median(fe, n_fe);
    row->verdict = n_div > 0     ? SCM_VERDICT_DIVERGED
                   : n_esc > 0   ? SCM_VERDICT_UNSTABLE
                   : n_ret == nt ? SCM_VERDICT_STABLE
                                 : SCM_VERDICT_UNDECIDED;
}

scm_status scm_stab_perturb_qr(const scm_model *m, const double *Q, const double *R,
                               const scm_stab_opts *o, scm_stab_result *r, scm_error *err)
{
    scm_status st = scm_stab_opts_check(o, err);
    if (st)
        return st;
    const int K = m->K, M = m->M;
    qr_ws w;
    memset(&w, 0, sizeof w);
    w.m = m;
    w.Q = Q;
    w.R = R;
    w.o = o;
    w.eps = r->eps;
    w.d = o->d > 0 ? o->d : K + M;
    const size_t Kd = (size_t)K * (size_t)w.d;
    w.W = malloc(sizeof *w.W * Kd);
    w.Wp = malloc(sizeof *w.Wp * Kd);
    w.Ws = malloc(sizeof *w.Ws * (size_t)M * (size_t)w.d);
    w.Qp = malloc(sizeof *w.Qp * (size_t)K * K);
    w.Rp = malloc(sizeof *w.Rp * (size_t)K * M);
    w.buf = malloc(sizeof *w.buf * (size_t)(3 * o->n_trials));
    w.fl = scm_flow_alloc(m);
    w.rng = gsl_rng_alloc(gsl_rng_mt19937);
    if (!w.W || !w.Wp || !w.Ws || !w.Qp || !w.Rp || !w.buf || !w.fl || !w.rng) {
        qr_ws_free(&w);
        return scm_error_set(err, SCM_ENOMEM, "out of memory in the (Q, R) perturbation test");
    }
    gsl_rng_set(w.rng, o->seed);
    if ((st = scm_weights_realise(m, Q, R, w.d, w.W, w.Ws, err))) {
        qr_ws_free(&w);
        return st;
    }
    scm_traj_opts_default(&w.to);
    w.to.t_max = o->t_max;
    w.to.record = 0;
    w.to.analytic_jv = 2;
    w.to.krylov_dim = 20;
    for (int si = 0; si < o->n_sigma; si++) {
        qr_row(&w, &r->rows[si], o->sigma[si], si);
        r->n_rows = si + 1;
    }
    scm_stab_verdict_of_rows(o, r);
    qr_ws_free(&w);
    return SCM_OK;
}
