/* basin.c: basin certificates of strict minima and the alignment they use;
 * see basin.h (the argument) and docs/sweeps.md ("Early stop"). */
#include "scm/basin.h"

#include <gsl/gsl_eigen.h>
#include <gsl/gsl_errno.h>
#include <gsl/gsl_matrix.h>
#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/linalg.h"
#include "scm/hessian.h"
#include "scm/weights.h"

/* ---- alignment and distance ---- */

typedef struct {
    int k, rank;
    double key;
} skey;

static int skey_cmp(const void *a, const void *b)
{
    const skey *x = a, *y = b;
    if (x->rank != y->rank)
        return x->rank < y->rank ? -1 : 1;
    if (x->key != y->key)
        return x->key < y->key ? -1 : 1;
    return (x->k > y->k) - (x->k < y->k);
}

scm_status scm_basin_canonical(const scm_model *m, const double *Q, const double *R, double *Qc,
                               double *Rc, int *sperm, int *tperm)
{
    const int K = m->K, M = m->M;
    scm_alignment *kind = malloc(sizeof *kind * (size_t)K);
    int *partner = malloc(sizeof *partner * (size_t)K);
    double *cosine = malloc(sizeof *cosine * (size_t)K);
    skey *s = malloc(sizeof *s * (size_t)K);
    int *sp = malloc(sizeof *sp * (size_t)K), *tp = malloc(sizeof *tp * (size_t)M);
    char *used = calloc((size_t)M, 1);
    scm_status st = SCM_ENOMEM;
    if (!kind || !partner || !cosine || !s || !sp || !tp || !used)
        goto out;
    if ((st = scm_model_align(m, Q, R, 1e-6, kind, partner, cosine)))
        goto out;
    for (int k = 0; k < K; k++) {
        s[k].k = k;
        if (kind[k] == SCM_ALIGN_DEAD) {
            s[k].rank = 2;
            s[k].key = 0.0;
        } else if (partner[k] < 0) {
            s[k].rank = 1;
            s[k].key = -Q[k * K + k];
        } else {
            s[k].rank = 0;
            s[k].key = cosine[k];
        }
    }
    qsort(s, (size_t)K, sizeof *s, skey_cmp);
    int nt = 0;
    for (int i = 0; i < K; i++) {
        sp[i] = s[i].k;
        int p = partner[s[i].k];
        if (kind[s[i].k] != SCM_ALIGN_DEAD && p >= 0 && !used[p]) {
            used[p] = 1;
            tp[nt++] = p;
        }
    }
    for (int n = 0; n < M; n++)
        if (!used[n])
            tp[nt++] = n;
    for (int i = 0; i < K; i++) {
        for (int j = 0; j < K; j++)
            Qc[i * K + j] = Q[sp[i] * K + sp[j]];
        for (int n = 0; n < M; n++)
            Rc[i * M + n] = R[sp[i] * M + tp[n]];
    }
    if (sperm)
        memcpy(sperm, sp, sizeof *sp * (size_t)K);
    if (tperm)
        memcpy(tperm, tp, sizeof *tp * (size_t)M);
    st = SCM_OK;
out:
    free(kind);
    free(partner);
    free(cosine);
    free(s);
    free(sp);
    free(tp);
    free(used);
    return st;
}

/* tr(Q - R R^T) (T = I): the squared norm of the students outside the span. */
static double span_defect(int K, int M, const double *Q, const double *R)
{
    double z = 0.0;
    for (int k = 0; k < K; k++) {
        z += Q[k * K + k];
        for (int n = 0; n < M; n++)
            z -= R[k * M + n] * R[k * M + n];
    }
    return z;
}

double scm_basin_dist2(const scm_model *m, const double *Qc1, const double *Rc1,
                       const double *Qc2, const double *Rc2)
{
    const int K = m->K, M = m->M;
    double d2 = 0.0;
    for (long i = 0; i < (long)K * M; i++)
        d2 += (Rc1[i] - Rc2[i]) * (Rc1[i] - Rc2[i]);
    /* each defect is >= 0 up to round-off and integration error */
    d2 += fmax(0.0, span_defect(K, M, Qc1, Rc1)) + fmax(0.0, span_defect(K, M, Qc2, Rc2));
    return d2;
}

double scm_basin_dist2_rate(const scm_model *m, const double *Rcs, const double *FQc,
                            const double *FRc)
{
    const int K = m->K, M = m->M;
    double r = 0.0;
    for (int k = 0; k < K; k++)
        r += FQc[k * K + k];
    for (long i = 0; i < (long)K * M; i++)
        r -= 2.0 * Rcs[i] * FRc[i];
    return r;
}

/* ---- the certificate of a point ---- */

void scm_basin_opts_default(scm_basin_opts *o)
{
    o->n_random = 24;
    o->n_eig = 6;
    o->seed = 1;
    o->r_max = 0.05;
    o->r_min = 1e-6;
    o->shrink = 0.5;
    o->curv_frac = 0.5;
    o->safety = 2.0;
    o->mu_rel_min = 1e-7;
    o->proved = 1;
}

/* The Hessian-free curvature U . H(u) U of f in flow units at the weights
 * u = W / sqrt(d), by central differences of the closed-form gradient:
 * grad_u f = sqrt(d) dEps/dW (weights.h). */
typedef struct {
    scm_flow *fl;
    long d, n;
    const double *Ws;
    double *Wp, *Gp, *Gm;
} curv_ws;

static scm_status curvature(curv_ws *w, const double *u, const double *U, double h, double *c)
{
    const double sd = sqrt((double)w->d);
    for (long i = 0; i < w->n; i++)
        w->Wp[i] = sd * (u[i] + h * U[i]);
    scm_status st = scm_weights_grad(w->fl, w->d, w->Wp, w->Ws, NULL, w->Gp);
    if (st)
        return st;
    for (long i = 0; i < w->n; i++)
        w->Wp[i] = sd * (u[i] - h * U[i]);
    if ((st = scm_weights_grad(w->fl, w->d, w->Wp, w->Ws, NULL, w->Gm)))
        return st;
    double s = 0.0;
    for (long i = 0; i < w->n; i++)
        s += U[i] * (w->Gp[i] - w->Gm[i]);
    *c = sd * s / (2.0 * h);
    return SCM_OK;
}

static void normalise(double *x, long n)
{
    double s = 0.0;
    for (long i = 0; i < n; i++)
        s += x[i] * x[i];
    s = sqrt(s);
    for (long i = 0; i < n; i++)
        x[i] /= s;
}

/* Constants of the Lipschitz bounds of the ReLU pair Hessians (basin.h,
 * docs/sweeps.md "How rigorous"): the aa block G(a; b) = N / (2 pi |a|),
 * N = |c| P + c c^T / |c|, c = P b, P = I - a a^T / |a|^2, moves by at most
 * (LIP_GA |b| |da| / |a| + LIP_GB |db|) / (2 pi |a|); the ab block
 * E[1{a.x > 0} 1{b.x > 0} x x^T] by at most LIP_AB (|da| / |a| + |db| / |b|). */
#define LIP_GA (4.0 + 2.0 / sqrt(3.0)) /* d|c|, |c| dP, d(c c^T / |c|), N d|a| / |a| */
#define LIP_GB (1.0 + 2.0 / sqrt(3.0)) /* d|c| and d(c c^T / |c|) through P db */
#define LIP_AB sqrt(3.0 / (2.0 * M_PI)) /* E[delta(a.x) |da.x| (y.x)^2] <= sqrt(3) |da| / (sqrt(2 pi) |a|) */

double scm_basin_hessian_shift(const scm_model *m, const double *Qs, double r)
{
    const int K = m->K, M = m->M;
    if (!(r >= 0.0))
        return INFINITY;
    double worst = 0.0;
    for (int k = 0; k < K; k++) {
        const double ak = sqrt(Qs[k * K + k]) - r; /* |w_k| on the ball */
        if (!(ak > 0.0))
            return INFINITY;
        double row = 0.0; /* block row k: sum over blocks of block-norm bounds */
        for (int l = 0; l < K; l++) {
            if (l == k)
                continue;
            const double al = sqrt(Qs[l * K + l]) - r, bl = sqrt(Qs[l * K + l]) + r;
            if (!(al > 0.0))
                return INFINITY;
            const double w = fabs(m->v[k] * m->v[l]);
            row += w * (LIP_GA * bl * r / ak + LIP_GB * r) / (2.0 * M_PI * ak); /* G(w_k; w_l) */
            row += w * LIP_AB * (r / ak + r / al);                              /* Phi(w_k, w_l) */
        }
        for (int n = 0; n < M; n++) { /* teachers fixed, of norm sqrt(T_nn) */
            const double bn = m->T ? sqrt(m->T[n * M + n]) : 1.0;
            row += fabs(m->v[k] * m->vs[n]) * LIP_GA * bn * r / (2.0 * M_PI * ak * ak);
        }
        worst = fmax(worst, row);
    }
    return worst;
}

/* The largest r <= r_hi with scm_basin_hessian_shift(r) <= budget (it
 * increases with r), by bisection; 0 if none. */
static double proved_radius(const scm_model *m, const double *Qs, double r_hi, double budget)
{
    if (scm_basin_hessian_shift(m, Qs, r_hi) <= budget)
        return r_hi;
    double lo = 0.0, hi = r_hi;
    for (int i = 0; i < 80; i++) {
        const double mid = 0.5 * (lo + hi);
        if (scm_basin_hessian_shift(m, Qs, mid) <= budget)
            lo = mid;
        else
            hi = mid;
    }
    return lo;
}

/* The checks that need no Hessian: T = I, the point in the teacher span,
 * no dead student, the proved radius only for ReLU.  A refusal fills
 * cert->why. */
static scm_status cert_screen(const scm_model *m, const double *Qs, const double *Rs,
                              const scm_basin_opts *o, scm_basin_cert *cert, scm_error *err)
{
    const int K = m->K, M = m->M;
    for (int a = 0; a < M; a++)
        for (int b = 0; b < M; b++)
            if (m->T && m->T[a * M + b] != (a == b ? 1.0 : 0.0))
                return scm_error_set(err, SCM_EINVAL, "basin certificates need T = I");
    cert->span_defect = span_defect(K, M, Qs, Rs);
    double qmax = 0.0;
    for (int k = 0; k < K; k++)
        qmax = fmax(qmax, Qs[k * K + k]);
    if (!(fabs(cert->span_defect) <= 1e-8 * fmax(1.0, qmax))) {
        snprintf(cert->why, sizeof cert->why, "students outside the teacher span (tr(Q - R R^T) = %.3g)",
                 cert->span_defect);
        return SCM_OK;
    }
    for (int k = 0; k < K; k++)
        if (!(Qs[k * K + k] > 1e-6)) {
            snprintf(cert->why, sizeof cert->why, "student %d is dead (Q_kk = %.3g)", k,
                     Qs[k * K + k]);
            return SCM_OK;
        }
    if (o->proved && m->act != &scm_act_relu) {
        snprintf(cert->why, sizeof cert->why,
                 "the proved radius is for ReLU (activation %s): use the sampled one",
                 m->act->name);
        return SCM_OK;
    }
    return SCM_OK;
}

/* What a certificate works with: the point's weights W (n = K d) and the
 * teachers' Ws, the Hessian H in flow units, the directions of the sampled
 * radius and their eigen- and random-number workspaces. */
typedef struct {
    long d, n;
    int n_eig, ndir;
    scm_flow *fl;
    double *W, *Ws, *H, *u, *us, *dirs;
    curv_ws w;
    gsl_vector *ev;
    gsl_matrix *evec;
    gsl_eigen_symmv_workspace *ews;
    gsl_rng *rng;
    double *Qin; /* R* R*^T: the Q of the point as it lies in the teacher span */
} cert_ws;

static void cert_ws_free(cert_ws *c)
{
    scm_flow_free(c->fl);
    free(c->W);
    free(c->Ws);
    free(c->H);
    free(c->u);
    free(c->us);
    free(c->dirs);
    free(c->w.Wp);
    free(c->w.Gp);
    free(c->w.Gm);
    if (c->ev)
        gsl_vector_free(c->ev);
    if (c->evec)
        gsl_matrix_free(c->evec);
    if (c->ews)
        gsl_eigen_symmv_free(c->ews);
    if (c->rng)
        gsl_rng_free(c->rng);
    free(c->Qin);
}

static scm_status cert_ws_alloc(cert_ws *c, const scm_model *m, const scm_basin_opts *o,
                                scm_error *err)
{
    const int K = m->K, M = m->M;
    const long d = K + M, n = (long)K * d;
    c->d = d;
    c->n = n;
    c->n_eig = o->n_eig < (int)n ? o->n_eig : (int)n;
    c->ndir = 2 * c->n_eig + c->n_eig + o->n_random;
    c->fl = scm_flow_alloc(m);
    c->W = malloc(sizeof(double) * (size_t)n);
    c->Ws = malloc(sizeof(double) * (size_t)(M * d));
    c->H = malloc(sizeof(double) * (size_t)(n * n));
    c->u = malloc(sizeof(double) * (size_t)n);
    c->us = malloc(sizeof(double) * (size_t)n);
    c->dirs = malloc(sizeof(double) * (size_t)(c->ndir * n));
    c->w = (curv_ws){c->fl, d, n, c->Ws, malloc(sizeof(double) * (size_t)n),
                     malloc(sizeof(double) * (size_t)n), malloc(sizeof(double) * (size_t)n)};
    c->ev = gsl_vector_alloc((size_t)n);
    c->evec = gsl_matrix_alloc((size_t)n, (size_t)n);
    c->ews = gsl_eigen_symmv_alloc((size_t)n);
    c->rng = gsl_rng_alloc(gsl_rng_mt19937);
    c->Qin = malloc(sizeof(double) * (size_t)K * (size_t)K);
    if (!c->fl || !c->W || !c->Ws || !c->H || !c->u || !c->us || !c->dirs || !c->w.Wp ||
        !c->w.Gp || !c->w.Gm || !c->ev || !c->evec || !c->ews || !c->rng || !c->Qin)
        return scm_error_set(err, SCM_ENOMEM, "out of memory in the basin certificate");
    return SCM_OK;
}

/* The weights of the point and its closed-form Hessian in flow units.  The
 * point as it lies in the teacher span, u* = (R*, 0): its listed Q*
 * carries the solver's error as a span defect of 1e-9 or so, which as
 * weights outside the span would be 3e-5, no longer small against a
 * proved radius.  The argument is about this u* (its mu, its gradient,
 * its distance, exact in scm_basin_dist2 up to the defect) */
static void cert_hessian(cert_ws *c, const scm_model *m, const double *Rs, scm_basin_cert *cert)
{
    const int K = m->K, M = m->M;
    const long d = c->d, n = c->n;
    double *H = c->H;
    scm_error e2;
    scm_linalg_gemm(K, K, M, Rs, Rs, 1, c->Qin); /* R* R*^T */
    if (scm_weights_realise(m, c->Qin, Rs, d, c->W, c->Ws, &e2)) {
        snprintf(cert->why, sizeof cert->why, "cannot realise the point: %.150s", e2.msg);
        return;
    }
    if (scm_stab_hessian(c->fl, d, c->W, c->Ws, H, &e2)) {
        snprintf(cert->why, sizeof cert->why, "no closed-form Hessian: %.160s", e2.msg);
        return;
    }
    /* flow units: f(u) = eps(sqrt(d) u), so H_u = d H_W; symmetrised */
    for (long i = 0; i < n; i++)
        for (long j = 0; j <= i; j++) {
            double h = 0.5 * (double)d * (H[i * n + j] + H[j * n + i]);
            H[i * n + j] = H[j * n + i] = h;
        }
}

/* The extreme eigenvalues of H (a third of the cost of the eigenvectors):
 * most points a run passes near are saddles, refused here. */
static scm_status cert_eigenvalues(cert_ws *c, const scm_basin_opts *o, scm_basin_cert *cert,
                                   scm_error *err)
{
    const long n = c->n;
    double *Hc = malloc(sizeof(double) * (size_t)(n * n));
    gsl_eigen_symm_workspace *sws = gsl_eigen_symm_alloc((size_t)n);
    if (!Hc || !sws) {
        free(Hc);
        if (sws)
            gsl_eigen_symm_free(sws);
        return scm_error_set(err, SCM_ENOMEM, "out of memory in the basin certificate");
    }
    memcpy(Hc, c->H, sizeof(double) * (size_t)(n * n));
    gsl_matrix_view Hcv = gsl_matrix_view_array(Hc, (size_t)n, (size_t)n);
    int gs = gsl_eigen_symm(&Hcv.matrix, c->ev, sws);
    free(Hc);
    gsl_eigen_symm_free(sws);
    if (gs != GSL_SUCCESS) {
        snprintf(cert->why, sizeof cert->why, "the Hessian's eigensolver failed");
        return SCM_OK;
    }
    double lo = INFINITY, hi = -INFINITY;
    for (long i = 0; i < n; i++) {
        lo = fmin(lo, gsl_vector_get(c->ev, (size_t)i));
        hi = fmax(hi, gsl_vector_get(c->ev, (size_t)i));
    }
    cert->mu = lo;
    cert->lam_max = hi;
    if (!(lo > o->mu_rel_min * fabs(hi)))
        snprintf(cert->why, sizeof cert->why,
                 "not a strict minimum: smallest Hessian eigenvalue %.3g (largest %.3g)", lo, hi);
    return SCM_OK;
}

/* The proved radius (ReLU): H(u) >= curv_frac mu on the ball where the
 * Hessian moves by at most (1 - curv_frac) mu (the eigensolver's and the
 * Hessian's round-off, about n eps lambda_max, allowed for generously). */
static void cert_proved(cert_ws *c, const scm_model *m, const scm_basin_opts *o,
                        scm_basin_cert *cert)
{
    const int K = m->K;
    const long d = c->d, n = c->n;
    const double mu_eff = cert->mu - 1e-9 * fabs(cert->lam_max);
    const double cmin = o->curv_frac * mu_eff;
    double r_hi = o->r_max;
    for (int k = 0; k < K; k++)
        r_hi = fmin(r_hi, 0.999 * sqrt(c->Qin[k * K + k]));
    const double r = proved_radius(m, c->Qin, r_hi, mu_eff - cmin);
    /* the listed point is a fixed point only to its residual: with
     * g = grad f(u*), the distance decreases wherever it exceeds
     * |g| / cmin, so the ball is invariant if r is larger than that */
    if (scm_weights_grad(c->fl, d, c->W, c->Ws, NULL, c->w.Gp) != SCM_OK) {
        snprintf(cert->why, sizeof cert->why, "no gradient at the point");
        return;
    }
    double g2 = 0.0;
    for (long i = 0; i < n; i++)
        g2 += c->w.Gp[i] * c->w.Gp[i];
    cert->grad = sqrt((double)d * g2); /* grad_u f = sqrt(d) dEps/dW */
    if (!(r >= o->r_min) || !(r > 2.0 * cert->grad / cmin)) {
        snprintf(cert->why, sizeof cert->why,
                 "the proved radius %.3g is below %.3g or twice |grad| / (%.3g mu) = %.3g", r,
                 o->r_min, o->curv_frac, 2.0 * cert->grad / cmin);
        return;
    }
    cert->ok = 1;
    cert->radius = r;
}

/* The sampled directions: the softest eigenvectors (both signs), random
 * combinations of them, random unit vectors; their number. */
static int cert_directions(cert_ws *c, const scm_basin_opts *o)
{
    const long n = c->n;
    const int n_eig = c->n_eig;
    double *dirs = c->dirs;
    gsl_rng_set(c->rng, o->seed);
    int nd = 0;
    for (int j = 0; j < n_eig; j++)
        for (int sg = -1; sg <= 1; sg += 2, nd++)
            for (long i = 0; i < n; i++)
                dirs[nd * n + i] = sg * gsl_matrix_get(c->evec, (size_t)i, (size_t)j);
    for (int j = 0; j < n_eig; j++, nd++) {
        memset(dirs + nd * n, 0, sizeof(double) * (size_t)n);
        for (int q = 0; q < n_eig; q++) {
            double a = gsl_ran_gaussian(c->rng, 1.0);
            for (long i = 0; i < n; i++)
                dirs[nd * n + i] += a * gsl_matrix_get(c->evec, (size_t)i, (size_t)q);
        }
        normalise(dirs + nd * n, n);
    }
    for (int j = 0; j < o->n_random; j++, nd++) {
        for (long i = 0; i < n; i++)
            dirs[nd * n + i] = gsl_ran_gaussian(c->rng, 1.0);
        normalise(dirs + nd * n, n);
    }
    return nd;
}

/* The sampled radius: the largest r_max shrink^i >= r_min at which the
 * curvature along every sampled ray, at r/4, r/2 and r, is at least
 * curv_frac mu, divided by the safety factor. */
static void cert_sampled(cert_ws *c, const scm_basin_opts *o, scm_basin_cert *cert)
{
    const long n = c->n;
    gsl_matrix_view Hv = gsl_matrix_view_array(c->H, (size_t)n, (size_t)n);
    if (gsl_eigen_symmv(&Hv.matrix, c->ev, c->evec, c->ews) != GSL_SUCCESS) {
        snprintf(cert->why, sizeof cert->why, "the Hessian's eigensolver failed");
        return;
    }
    gsl_eigen_symmv_sort(c->ev, c->evec, GSL_EIGEN_SORT_VAL_ASC);
    cert->mu = gsl_vector_get(c->ev, 0);
    cert->lam_max = gsl_vector_get(c->ev, (size_t)n - 1);
    if (!(cert->mu > o->mu_rel_min * fabs(cert->lam_max))) {
        snprintf(cert->why, sizeof cert->why,
                 "not a strict minimum: smallest Hessian eigenvalue %.3g (largest %.3g)",
                 cert->mu, cert->lam_max);
        return;
    }
    const int nd = cert_directions(c, o);
    const double sd = sqrt((double)c->d), cmin = o->curv_frac * cert->mu;
    for (long i = 0; i < n; i++)
        c->us[i] = c->W[i] / sd;
    double found = 0.0;
    for (double r = o->r_max; r >= o->r_min && found == 0.0; r *= o->shrink) {
        int pass = 1;
        for (int j = 0; j < nd && pass; j++)
            for (int q = 1; q <= 4 && pass; q *= 2) {
                const double s = r / (double)(4 / q); /* r/4, r/2, r */
                const double *U = c->dirs + j * n;
                for (long i = 0; i < n; i++)
                    c->u[i] = c->us[i] + s * U[i];
                double cv;
                /* h: small against s, large against round-off of the gradient */
                if (curvature(&c->w, c->u, U, fmin(1e-4, 0.25 * s), &cv) != SCM_OK ||
                    !(cv >= cmin))
                    pass = 0;
            }
        if (pass)
            found = r;
    }
    if (found == 0.0) {
        snprintf(cert->why, sizeof cert->why,
                 "the curvature along a sampled ray falls below %.3g mu within radius %.3g",
                 o->curv_frac, o->r_min);
        return;
    }
    cert->ok = 1;
    cert->radius = found / o->safety;
}

scm_status scm_basin_certify_point(const scm_model *m, const double *Qs, const double *Rs,
                                   const scm_basin_opts *o, scm_basin_cert *cert,
                                   scm_error *err)
{
    memset(cert, 0, sizeof *cert);
    cert->mu = cert->lam_max = cert->grad = NAN;
    /* each step that refuses the point says why, and the next ones are skipped */
    scm_status st = cert_screen(m, Qs, Rs, o, cert, err);
    if (st || cert->why[0])
        return st;
    cert_ws c = {0};
    st = cert_ws_alloc(&c, m, o, err);
    if (!st)
        cert_hessian(&c, m, Rs, cert);
    if (!st && !cert->why[0])
        st = cert_eigenvalues(&c, o, cert, err);
    if (!st && !cert->why[0]) {
        if (o->proved)
            cert_proved(&c, m, o, cert);
        else
            cert_sampled(&c, o, cert);
    }
    cert_ws_free(&c);
    return st;
}

scm_status scm_basin_check_state(const scm_model *m, const double *Qcs, const double *Rcs,
                                 const scm_basin_cert *cert, const double *Qc, const double *Rc,
                                 double curv_frac, int *ok, double *dist, scm_error *err)
{
    const int K = m->K, M = m->M;
    const long d = K + M, n = (long)K * d;
    *ok = 0;
    *dist = sqrt(scm_basin_dist2(m, Qc, Rc, Qcs, Rcs));
    if (!cert->ok || !(*dist < cert->radius) || !(*dist > 0.0)) {
        *ok = cert->ok && *dist == 0.0;
        return SCM_OK;
    }
    scm_flow *fl = scm_flow_alloc(m);
    double *W = malloc(sizeof(double) * (size_t)n), *Ws = malloc(sizeof(double) * (size_t)(M * d));
    double *Wst = malloc(sizeof(double) * (size_t)n), *Ws2 = malloc(sizeof(double) * (size_t)(M * d));
    double *U = malloc(sizeof(double) * (size_t)n), *u = malloc(sizeof(double) * (size_t)n);
    double *FQ = malloc(sizeof(double) * (size_t)(K * K)), *FR = malloc(sizeof(double) * (size_t)(K * M));
    curv_ws w = {fl, d, n, Ws, malloc(sizeof(double) * (size_t)n),
                 malloc(sizeof(double) * (size_t)n), malloc(sizeof(double) * (size_t)n)};
    scm_status st = SCM_OK;
    if (!fl || !W || !Ws || !Wst || !Ws2 || !U || !u || !FQ || !FR || !w.Wp || !w.Gp || !w.Gm) {
        st = scm_error_set(err, SCM_ENOMEM, "out of memory in the basin check");
        goto out;
    }
    /* the exact condition at the state: the distance decreases */
    if (scm_flow_rhs(fl, Qc, Rc, FQ, FR, NULL) != SCM_OK ||
        !(scm_basin_dist2_rate(m, Rcs, FQ, FR) < 0.0))
        goto out;
    /* both realised with the teachers on the first M coordinates (T = I:
     * the same Ws), so u - u* is the displacement of the distance above */
    scm_error e2;
    double *Qin = malloc(sizeof(double) * (size_t)K * (size_t)K);
    if (!Qin) {
        st = scm_error_set(err, SCM_ENOMEM, "out of memory in the basin check");
        goto out;
    }
    scm_linalg_gemm(K, K, M, Rcs, Rcs, 1, Qin); /* the point as certified: R* R*^T */
    int bad = scm_weights_realise(m, Qin, Rcs, d, W, Ws, &e2) ||
              scm_weights_realise(m, Qc, Rc, d, Wst, Ws2, &e2);
    free(Qin);
    if (bad)
        goto out;
    const double sd = sqrt((double)d);
    double nrm = 0.0;
    for (long i = 0; i < n; i++) {
        U[i] = (Wst[i] - W[i]) / sd;
        nrm += U[i] * U[i];
    }
    nrm = sqrt(nrm);
    /* the realised distance to the in-span point is the formula's without
     * the point's span defect: at most it, else no claim */
    if (!(nrm <= *dist * (1.0 + 1e-6) + 1e-12))
        goto out;
    *dist = nrm; /* the distance the certificate is about */
    if (!(nrm < cert->radius) || !(nrm > 0.0))
        goto out;
    for (long i = 0; i < n; i++)
        U[i] /= nrm;
    const double cmin = curv_frac * cert->mu;
    for (int q = 0; q < 3; q++) {
        double s = fmin((q == 0 ? 0.5 : q == 1 ? 1.0 : 2.0) * *dist, 0.9 * cert->radius), c;
        for (long i = 0; i < n; i++)
            u[i] = W[i] / sd + s * U[i];
        if (curvature(&w, u, U, fmin(1e-4, 0.25 * s), &c) != SCM_OK || !(c >= cmin))
            goto out;
    }
    *ok = 1;
out:
    scm_flow_free(fl);
    free(W);
    free(Ws);
    free(Wst);
    free(Ws2);
    free(U);
    free(u);
    free(FQ);
    free(FR);
    free(w.Gp);
    free(w.Gm);
    free(w.Wp);
    return st;
}
