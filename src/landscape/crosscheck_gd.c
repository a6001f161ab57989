/* crosscheck_gd.c: the weight-space gradient-descent runs of the
 * cross-check (crosscheck.h): d = M, teachers sqrt(M) e_m, students drawn
 * N(0, gd_sigma^2), Barzilai-Borwein steps with an Armijo backtracking
 * safeguard, dead students dropped.  One named step per function; the
 * loop in scm_xc_gd_run strings them together. */
#include <float.h>
#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "landscape/crosscheck_internal.h"
#include "scm/weights.h"

/* The state of one run.  W holds all K students (dead rows zero), Wl and
 * Gl the nlive live rows packed and their gradient, Wt and Gt the last
 * accepted iterate (the line search's start and the BB difference). */
typedef struct {
    int K, M;
    long d;
    const scm_activation *act;
    const scm_xc_opts *o;
    double *W, *Ws, *Wt, *Gt, *Wl, *Gl;
    int *live, nlive;
    scm_model *m; /* of the nlive live students; NULL after one died */
    scm_flow *fl;
    double eps, alpha;
    int have_last;
} gd_state;

double scm_xc_max_abs(const double *x, size_t n)
{
    double m = 0.0;
    for (size_t i = 0; i < n; i++) {
        if (!isfinite(x[i]))
            return NAN;
        m = fmax(m, fabs(x[i]));
    }
    return m;
}

/* The live rows of src packed into dst (nlive x M). */
static void pack(const gd_state *s, const double *src, double *dst)
{
    int q = 0;
    for (int k = 0; k < s->K; k++)
        if (s->live[k])
            memcpy(dst + (size_t)(q++) * s->M, src + (size_t)k * s->M,
                   sizeof(double) * (size_t)s->M);
}

static void gd_free(gd_state *s, gsl_rng *rng)
{
    scm_flow_free(s->fl);
    scm_model_free(s->m);
    free(s->W);
    free(s->Ws);
    free(s->live);
    if (rng)
        gsl_rng_free(rng);
}

/* The buffers, the teachers and the students drawn from seed. */
static scm_status gd_setup(gd_state *s, gsl_rng *rng, unsigned long seed, scm_error *err)
{
    size_t KM = (size_t)s->K * (size_t)s->M;
    s->W = malloc(sizeof(double) * KM * 6);
    s->Ws = calloc((size_t)s->M * (size_t)s->M, sizeof(double));
    s->live = malloc(sizeof(int) * (size_t)s->K);
    if (!s->W || !s->Ws || !rng || !s->live)
        return scm_error_set(err, SCM_ENOMEM, "out of memory in a GD run");
    s->Wt = s->W + 2 * KM;
    s->Gt = s->W + 3 * KM;
    s->Wl = s->W + 4 * KM;
    s->Gl = s->W + 5 * KM;
    for (int i = 0; i < s->M; i++)
        s->Ws[i * s->M + i] = sqrt((double)s->d);
    gsl_rng_set(rng, seed);
    for (size_t i = 0; i < KM; i++)
        s->W[i] = gsl_ran_gaussian(rng, s->o->gd_sigma);
    s->nlive = s->K;
    for (int k = 0; k < s->K; k++)
        s->live[k] = 1;
    s->eps = NAN;
    s->alpha = 0.1;
    return SCM_OK;
}

/* The model of the live students and their gradient, after the start or
 * a death.  *stop when the gradient fails (r->why says so). */
static scm_status gd_model(gd_state *s, scm_xc_run *r, int *stop, scm_error *err)
{
    s->m = scm_model_alloc(s->nlive, s->M, s->act, NULL, NULL, NULL, err);
    s->fl = s->m ? scm_flow_alloc(s->m) : NULL;
    if (!s->fl)
        return err && !s->m ? err->code : scm_error_set(err, SCM_ENOMEM, "out of memory");
    pack(s, s->W, s->Wl);
    scm_status st = scm_weights_grad(s->fl, s->d, s->Wl, s->Ws, &s->eps, s->Gl);
    if (st) {
        snprintf(r->why, sizeof r->why, "the gradient fails at the start (%s)",
                 scm_status_str(st));
        *stop = 1;
    }
    s->have_last = 0;
    return SCM_OK;
}

/* The flow's residual from the gradient: dR/dtau = -G Ws^T = -sqrt(M) G,
 * dQ/dtau = -(G W^T + W G^T) (d = M). */
static double gd_residual(const gd_state *s)
{
    const int M = s->M;
    const double *Gl = s->Gl, *Wl = s->Wl;
    double fmax_ = sqrt((double)s->d) * scm_xc_max_abs(Gl, (size_t)s->nlive * M);
    for (int k = 0; k < s->nlive; k++)
        for (int l = k; l < s->nlive; l++) {
            double sum = 0.0;
            for (int i = 0; i < M; i++)
                sum += Gl[k * M + i] * Wl[l * M + i] + Wl[k * M + i] * Gl[l * M + i];
            fmax_ = fmax(fmax_, fabs(sum));
        }
    return fmax_;
}

/* The stopping test's scale: the smallest Q_kk of a small student (as the
 * ODE's continuation: its rows of F scale with its norm), else 1. */
static double gd_qsmall(const gd_state *s)
{
    double qsmall = 1.0;
    for (int k = 0; k < s->nlive; k++) {
        double qk = 0.0;
        for (int i = 0; i < s->M; i++)
            qk += s->Wl[k * s->M + i] * s->Wl[k * s->M + i];
        qk /= (double)s->d;
        if (qk <= s->o->dead_q)
            qsmall = fmin(qsmall, qk);
    }
    return qsmall;
}

/* The step length from Barzilai-Borwein (s.s / s.y), after a first step. */
static void gd_bb_alpha(gd_state *s)
{
    size_t nl = (size_t)s->nlive * s->M;
    if (!s->have_last)
        return;
    double ss = 0.0, sy = 0.0;
    for (size_t i = 0; i < nl; i++) {
        double sd = s->Wl[i] - s->Wt[i], y = (double)s->d * (s->Gl[i] - s->Gt[i]);
        ss += sd * sd;
        sy += sd * y;
    }
    s->alpha = sy > 0.0 ? fmin(fmax(ss / sy, 1e-8), 1e4) : fmin(2.0 * s->alpha, 1e4);
}

/* Armijo backtracking from Wt: eps(W - a h) <= eps - 1e-4 a |h|^2, h = d G.
 * Returns 1 with the step taken (Wl, Gl, *e1), 0 when no step is
 * acceptable (Wl, Gl left at the trial point). */
static int gd_line_search(gd_state *s, double *e1)
{
    size_t nl = (size_t)s->nlive * s->M;
    double *Wl = s->Wl, *Gl = s->Gl, *Wt = s->Wt, *Gt = s->Gt, d = (double)s->d;
    double g2 = 0.0;
    for (size_t i = 0; i < nl; i++)
        g2 += d * Gl[i] * d * Gl[i];
    *e1 = NAN;
    memcpy(Wt, Wl, sizeof(double) * nl);
    memcpy(Gt, Gl, sizeof(double) * nl);
    for (int ls = 0; ls < 60; ls++) {
        for (size_t i = 0; i < nl; i++)
            Wl[i] = Wt[i] - s->alpha * d * Gt[i];
        scm_status gs = scm_weights_grad(s->fl, s->d, Wl, s->Ws, e1, Gl);
        if (gs == SCM_OK && *e1 <= s->eps - 1e-4 * s->alpha * g2)
            return 1;
        /* Below the loss's round-off the decrease cannot be measured:
         * eps sums (nlive + M)^2 / 2 kernel terms of order one, whose
         * cancellation leaves an absolute error ~ (nlive + M)^2 1e-16.
         * There a step is taken if the loss stays within that round-off
         * and the gradient shrinks. */
        double floor = 8.0 * DBL_EPSILON * (double)((s->nlive + s->M) * (s->nlive + s->M));
        if (gs == SCM_OK && 1e-4 * s->alpha * g2 <= floor && *e1 <= s->eps + floor) {
            double h2 = 0.0;
            for (size_t i = 0; i < nl; i++)
                h2 += d * Gl[i] * d * Gl[i];
            if (h2 < g2)
                return 1;
        }
        s->alpha *= 0.5;
    }
    return 0;
}

/* Unpack the live rows into W and drop the students that died (zeroed,
 * the model freed for gd_model to rebuild).  Returns 1 if one died. */
static int gd_drop_dead(gd_state *s)
{
    const int M = s->M;
    int q = 0, died = 0;
    for (int k = 0; k < s->K; k++)
        if (s->live[k]) {
            memcpy(s->W + (size_t)k * M, s->Wl + (size_t)(q++) * M, sizeof(double) * (size_t)M);
            double n2 = 0.0;
            for (int i = 0; i < M; i++)
                n2 += s->W[k * M + i] * s->W[k * M + i];
            if (s->act == &scm_act_relu && n2 / (double)s->d < s->o->traj.dead_tol) {
                s->live[k] = 0;
                memset(s->W + (size_t)k * M, 0, sizeof(double) * (size_t)M);
                died = 1;
            }
        }
    if (died) {
        s->nlive = 0;
        for (int k = 0; k < s->K; k++)
            s->nlive += s->live[k];
        scm_flow_free(s->fl);
        scm_model_free(s->m);
        s->fl = NULL;
        s->m = NULL;
    }
    return died;
}

/* The overlaps of every student (dead rows are zero) into Q, R. */
static scm_status gd_overlaps(gd_state *s, double *Q, double *R, scm_error *err)
{
    scm_model *mf = scm_model_alloc(s->K, s->M, s->act, NULL, NULL, NULL, err);
    if (!mf)
        return err ? err->code : SCM_ENOMEM;
    int q = 0;
    for (int k = 0; k < s->K; k++)
        if (s->live[k] && s->m)
            memcpy(s->W + (size_t)k * s->M, s->Wl + (size_t)(q++) * s->M,
                   sizeof(double) * (size_t)s->M);
    scm_weights_overlaps(mf, s->d, s->W, s->Ws, Q, R);
    scm_model_free(mf);
    return SCM_OK;
}

scm_status scm_xc_gd_run(int K, int M, const scm_activation *act, unsigned long seed,
                         const scm_xc_opts *o, double *Q, double *R, scm_xc_run *r,
                         scm_error *err)
{
    gd_state s;
    memset(&s, 0, sizeof s);
    s.K = K;
    s.M = M;
    s.d = M;
    s.act = act;
    s.o = o;
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    scm_status st = gd_setup(&s, rng, seed, err);
    if (st) {
        gd_free(&s, rng);
        return st;
    }
    long it = 0;
    r->converged = 0;
    snprintf(r->why, sizeof r->why, "iteration budget (%ld) spent", o->gd_max_iter);
    for (;;) {
        int stop = 0;
        if (!s.m && ((st = gd_model(&s, r, &stop, err)) || stop))
            break;
        double fmax_ = gd_residual(&s);
        r->res = fmax_;
        if (s.eps < o->traj.eps_stop || fmax_ < o->gd_tol * gd_qsmall(&s)) {
            r->converged = 1;
            r->why[0] = '\0';
            break;
        }
        if (it >= o->gd_max_iter)
            break;
        it++;
        gd_bb_alpha(&s);
        double e1;
        if (!gd_line_search(&s, &e1)) {
            size_t nl = (size_t)s.nlive * M;
            memcpy(s.Wl, s.Wt, sizeof(double) * nl);
            memcpy(s.Gl, s.Gt, sizeof(double) * nl);
            snprintf(r->why, sizeof r->why,
                     "line search failed at iteration %ld (loss %.12g, max |F| %.3g)", it, s.eps,
                     fmax_);
            break;
        }
        s.eps = e1;
        s.have_last = 1;
        if (gd_drop_dead(&s) && s.nlive == 0) {
            snprintf(r->why, sizeof r->why, "every student died");
            break;
        }
    }
    if (!st) {
        r->work = it;
        st = gd_overlaps(&s, Q, R, err);
    }
    gd_free(&s, rng);
    return st;
}
