/* simulate.c: weight-space training of a finite-d network; see simulate.h.
 *
 * The online inner loop is what costs: per sample, d Gaussians, K dot
 * products of length d (the students), M of length r <= M (the teacher
 * lives in the first rank(T) coordinates after scm_weights_realise) and K
 * axpys.  The constraint retractions are folded into the same pass where
 * they can be: a row's new squared norm is known before the update,
 *   ||w_k + c_k x||^2 = ||w_k||^2 + 2 c_k sqrt(d) lambda_k + c_k^2 ||x||^2,
 * and so is the new Gram matrix for the Stiefel case,
 *   (W + c x^T)(W + c x^T)^T = W W^T + c u^T + u c^T + ||x||^2 c c^T, u = W x,
 * from the values of the previous retraction (||w_k||^2 = d, W W^T = d I).
 * Round-off in those tracked values is cleared by an exact retraction (from
 * the Gram matrix computed from W) every SIM_EXACT_EVERY steps. */
#include "scm/simulate.h"

#include <gsl/gsl_eigen.h>
#include <gsl/gsl_errno.h>
#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "scm/flow.h"
#include "scm/weights.h"

/* Exact retraction this often (steps); between, the tracked norms. */
#define SIM_EXACT_EVERY 1024
/* A Gram eigenvalue below this fraction of d makes the polar retraction
 * singular (a row of W collapsing onto the others). */
#define SIM_STIEFEL_MIN_EIG 1e-8

struct scm_sim {
    scm_model *m; /* own copy: v is trained in place */
    scm_flow *fl;
    scm_sim_opts o;
    long d, r;          /* dimension, teacher support (first r coordinates) */
    double *W, *Wtmp;   /* K x d students (row-major), spare for the polar step */
    double *Ws;         /* M x d teachers */
    double *x;          /* online: the current sample */
    double *X, *y;      /* batch: n x d samples, n labels */
    double *grad;       /* batch: K x d gradient accumulator */
    double *gram, *P;   /* K x K */
    double *lam, *coef, *dv, *u; /* K */
    gsl_rng *rng;
    gsl_eigen_symmv_workspace *eig;
    gsl_matrix *A, *V;
    gsl_vector *ev;
    long steps;
};

void scm_sim_opts_default(scm_sim_opts *o)
{
    memset(o, 0, sizeof *o);
    o->mode = SCM_SIM_ONLINE;
    o->d = 1000;
    o->n = 0;
    o->eta = 0.05;
    o->eta_v_ratio = 0.0;
    o->noise = 0.0;
    o->constraint = SCM_SIM_FREE;
    o->seed = 1;
}

scm_status scm_sim_opts_check(const scm_sim_opts *o, const scm_model *m, scm_error *err)
{
    if (o->d < (long)m->K + m->M)
        return scm_error_set(err, SCM_EINVAL, "simulate: d = %ld must be >= K + M = %d", o->d,
                             m->K + m->M);
    if (!(o->eta > 0.0 && isfinite(o->eta)))
        return scm_error_set(err, SCM_EINVAL, "simulate: eta must be > 0, got %g", o->eta);
    if (!(o->eta_v_ratio >= 0.0 && isfinite(o->eta_v_ratio)))
        return scm_error_set(err, SCM_EINVAL, "simulate: eta_v_ratio must be >= 0, got %g",
                             o->eta_v_ratio);
    if (!(o->noise >= 0.0 && isfinite(o->noise)))
        return scm_error_set(err, SCM_EINVAL, "simulate: noise must be >= 0, got %g", o->noise);
    if (o->mode == SCM_SIM_BATCH) {
        if (o->n < 1)
            return scm_error_set(err, SCM_EINVAL, "simulate: batch mode needs n >= 1, got %ld",
                                 o->n);
        if (o->n > SCM_SIM_BATCH_MAX / o->d)
            return scm_error_set(err, SCM_EINVAL,
                                 "simulate: the batch n d = %ld x %ld exceeds %ld numbers", o->n,
                                 o->d, SCM_SIM_BATCH_MAX);
    } else if (o->mode != SCM_SIM_ONLINE) {
        return scm_error_set(err, SCM_EINVAL, "simulate: unknown mode %d", (int)o->mode);
    }
    if (o->constraint == SCM_SIM_STIEFEL && m->K > o->d)
        return scm_error_set(err, SCM_EINVAL, "simulate: Stiefel needs K <= d");
    return SCM_OK;
}

void scm_sim_free(scm_sim *s)
{
    if (!s)
        return;
    scm_flow_free(s->fl);
    scm_model_free(s->m);
    free(s->W);
    free(s->Wtmp);
    free(s->Ws);
    free(s->x);
    free(s->X);
    free(s->y);
    free(s->grad);
    free(s->gram);
    free(s->P);
    free(s->lam);
    free(s->coef);
    free(s->dv);
    free(s->u);
    if (s->rng)
        gsl_rng_free(s->rng);
    if (s->eig)
        gsl_eigen_symmv_free(s->eig);
    gsl_matrix_free(s->A);
    gsl_matrix_free(s->V);
    gsl_vector_free(s->ev);
    free(s);
}

/* Four partial sums: the compiler keeps them in registers without
 * reassociating floating point itself. */
static double dot(long n, const double *a, const double *b)
{
    double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0;
    long i = 0;
    for (; i + 4 <= n; i += 4) {
        s0 += a[i] * b[i];
        s1 += a[i + 1] * b[i + 1];
        s2 += a[i + 2] * b[i + 2];
        s3 += a[i + 3] * b[i + 3];
    }
    for (; i < n; i++)
        s0 += a[i] * b[i];
    return (s0 + s1) + (s2 + s3);
}

/* Gram matrix W W^T (K x K) computed from the weights. */
static void gram_exact(const scm_sim *s, double *G)
{
    const int K = s->m->K;
    for (int k = 0; k < K; k++)
        for (int l = k; l < K; l++)
            G[k * K + l] = G[l * K + k] = dot(s->d, s->W + k * s->d, s->W + l * s->d);
}

/* P = sqrt(d) G^(-1/2) for the symmetric positive definite G (K x K). */
static scm_status inv_sqrt(scm_sim *s, const double *G, scm_error *err)
{
    const int K = s->m->K;
    for (int k = 0; k < K; k++)
        for (int l = 0; l < K; l++)
            gsl_matrix_set(s->A, (size_t)k, (size_t)l, G[k * K + l]);
    if (gsl_eigen_symmv(s->A, s->ev, s->V, s->eig) != GSL_SUCCESS)
        return scm_error_set(err, SCM_ESINGULAR, "simulate: eigendecomposition of W W^T failed");
    const double sd = sqrt((double)s->d);
    for (int j = 0; j < K; j++) {
        double e = gsl_vector_get(s->ev, (size_t)j);
        if (!(e > SIM_STIEFEL_MIN_EIG * (double)s->d))
            return scm_error_set(err, SCM_ESINGULAR,
                                 "simulate: W W^T / d has eigenvalue %.3g at step %ld: the "
                                 "students are (nearly) linearly dependent, no Stiefel retraction",
                                 e / (double)s->d, s->steps);
        gsl_vector_set(s->ev, (size_t)j, sd / sqrt(e));
    }
    for (int k = 0; k < K; k++)
        for (int l = 0; l < K; l++) {
            double p = 0.0;
            for (int j = 0; j < K; j++)
                p += gsl_matrix_get(s->V, (size_t)k, (size_t)j) * gsl_vector_get(s->ev, (size_t)j) *
                     gsl_matrix_get(s->V, (size_t)l, (size_t)j);
            s->P[k * K + l] = p;
        }
    return SCM_OK;
}

/* W <- P W (through the spare buffer). */
static void apply_P(scm_sim *s)
{
    const int K = s->m->K;
    const long d = s->d;
    for (int k = 0; k < K; k++) {
        double *out = s->Wtmp + k * d;
        memset(out, 0, sizeof *out * (size_t)d);
        for (int l = 0; l < K; l++) {
            const double p = s->P[k * K + l];
            const double *w = s->W + l * d;
            for (long i = 0; i < d; i++)
                out[i] += p * w[i];
        }
    }
    double *t = s->W;
    s->W = s->Wtmp;
    s->Wtmp = t;
}

/* Retract W onto its constraint from the exact Gram matrix. */
static scm_status retract_exact(scm_sim *s, scm_error *err)
{
    const int K = s->m->K;
    const long d = s->d;
    if (s->o.constraint == SCM_SIM_FREE)
        return SCM_OK;
    gram_exact(s, s->gram);
    if (s->o.constraint == SCM_SIM_STIEFEL) {
        scm_status st = inv_sqrt(s, s->gram, err);
        if (!st)
            apply_P(s);
        return st;
    }
    for (int k = 0; k < K; k++) {
        const double n2 = s->gram[k * K + k];
        if (!(n2 > 0.0 && isfinite(n2)))
            return scm_error_set(err, SCM_ESINGULAR,
                                 "simulate: student %d has squared norm %g at step %ld, it cannot "
                                 "be normalised",
                                 k, n2, s->steps);
        const double a = sqrt((double)d / n2);
        for (long i = 0; i < d; i++)
            s->W[k * d + i] *= a;
    }
    return SCM_OK;
}

/* The labelled sample's error e = phi - y and per-student terms, from the
 * preactivations lam (K) and the teacher's output ystar.  Fills s->coef
 * (first-layer step of each row, to be multiplied by x) and s->dv (second
 * layer); scale is 1 online, 1/n for one term of a batch sum. */
static double sample_terms(scm_sim *s, const double *lam, double y, double scale)
{
    const scm_model *m = s->m;
    double phi = 0.0;
    for (int k = 0; k < m->K; k++)
        phi += m->v[k] * m->act->g(lam[k]);
    const double e = phi - y;
    const double cw = -s->o.eta / sqrt((double)s->d) * e * scale;
    const double cv = -s->o.eta * s->o.eta_v_ratio / (double)s->d * e * scale;
    for (int k = 0; k < m->K; k++) {
        s->coef[k] = cw * m->v[k] * m->act->dg(lam[k]);
        s->dv[k] = cv * m->act->g(lam[k]);
    }
    return e;
}

/* The teacher's label of x: phi*(x) (+ noise). */
static double label(scm_sim *s, const double *x)
{
    const scm_model *m = s->m;
    const double isd = 1.0 / sqrt((double)s->d);
    double ys = 0.0;
    for (int n = 0; n < m->M; n++)
        ys += m->vs[n] * m->act->g(dot(s->r, s->Ws + n * s->d, x) * isd);
    if (s->o.noise > 0.0)
        ys += sqrt(s->o.noise) * gsl_ran_gaussian_ziggurat(s->rng, 1.0);
    return ys;
}

/* W += coef x^T with the online retraction folded in (see the top). */
static scm_status online_update(scm_sim *s, double xx, scm_error *err)
{
    const int K = s->m->K;
    const long d = s->d;
    const double sd = sqrt((double)d);
    const double *x = s->x;
    if (s->o.constraint == SCM_SIM_SPHERE) {
        for (int k = 0; k < K; k++) {
            const double c = s->coef[k];
            const double n2 = (double)d + 2.0 * c * sd * s->lam[k] + c * c * xx;
            if (!(n2 > 0.0))
                return scm_error_set(err, SCM_ESINGULAR,
                                     "simulate: student %d reached zero norm at step %ld", k,
                                     s->steps);
            const double a = sqrt((double)d / n2), ac = a * c;
            double *w = s->W + k * d;
            for (long i = 0; i < d; i++)
                w[i] = a * w[i] + ac * x[i];
        }
        return SCM_OK;
    }
    for (int k = 0; k < K; k++) {
        const double c = s->coef[k];
        double *w = s->W + k * d;
        if (c != 0.0)
            for (long i = 0; i < d; i++)
                w[i] += c * x[i];
    }
    if (s->o.constraint != SCM_SIM_STIEFEL)
        return SCM_OK;
    for (int k = 0; k < K; k++)
        s->u[k] = sd * s->lam[k];
    for (int k = 0; k < K; k++)
        for (int l = 0; l < K; l++)
            s->gram[k * K + l] = (k == l ? (double)d : 0.0) + s->coef[k] * s->u[l] +
                                 s->u[k] * s->coef[l] + xx * s->coef[k] * s->coef[l];
    scm_status st = inv_sqrt(s, s->gram, err);
    if (!st)
        apply_P(s);
    return st;
}

static scm_status online_step(scm_sim *s, scm_error *err)
{
    const scm_model *m = s->m;
    const long d = s->d;
    const double isd = 1.0 / sqrt((double)d);
    double *x = s->x, xx = 0.0;
    for (long i = 0; i < d; i++) {
        const double z = gsl_ran_gaussian_ziggurat(s->rng, 1.0);
        x[i] = z;
        xx += z * z;
    }
    for (int k = 0; k < m->K; k++)
        s->lam[k] = dot(d, s->W + k * d, x) * isd;
    const double e = sample_terms(s, s->lam, label(s, x), 1.0);
    if (!isfinite(e))
        return scm_error_set(err, SCM_ENAN, "simulate: the output is not finite at step %ld",
                             s->steps);
    scm_status st = online_update(s, xx, err);
    if (st)
        return st;
    for (int k = 0; k < m->K; k++)
        m->v[k] += s->dv[k];
    return SCM_OK;
}

static scm_status batch_step(scm_sim *s, scm_error *err)
{
    const scm_model *m = s->m;
    const int K = m->K;
    const long d = s->d, n = s->o.n;
    const double isd = 1.0 / sqrt((double)d), scale = 1.0 / (double)n;
    double *dvsum = s->u;
    memset(s->grad, 0, sizeof *s->grad * (size_t)K * (size_t)d);
    memset(dvsum, 0, sizeof *dvsum * (size_t)K);
    for (long mu = 0; mu < n; mu++) {
        const double *x = s->X + mu * d;
        for (int k = 0; k < K; k++)
            s->lam[k] = dot(d, s->W + k * d, x) * isd;
        const double e = sample_terms(s, s->lam, s->y[mu], scale);
        if (!isfinite(e))
            return scm_error_set(err, SCM_ENAN,
                                 "simulate: the output on sample %ld is not finite at step %ld",
                                 mu, s->steps);
        for (int k = 0; k < K; k++) {
            const double c = s->coef[k];
            double *g = s->grad + k * d;
            dvsum[k] += s->dv[k];
            if (c != 0.0)
                for (long i = 0; i < d; i++)
                    g[i] += c * x[i];
        }
    }
    for (long i = 0; i < (long)K * d; i++)
        s->W[i] += s->grad[i];
    for (int k = 0; k < K; k++)
        m->v[k] += dvsum[k];
    return retract_exact(s, err);
}

/* Allocation of every buffer; 0 on no memory. */
static int sim_buffers(scm_sim *s)
{
    const int K = s->m->K, M = s->m->M;
    const long d = s->d;
    s->W = malloc(sizeof(double) * (size_t)K * (size_t)d);
    s->Wtmp = malloc(sizeof(double) * (size_t)K * (size_t)d);
    s->Ws = malloc(sizeof(double) * (size_t)M * (size_t)d);
    s->x = malloc(sizeof(double) * (size_t)d);
    s->gram = malloc(sizeof(double) * (size_t)K * (size_t)K);
    s->P = malloc(sizeof(double) * (size_t)K * (size_t)K);
    s->lam = malloc(sizeof(double) * (size_t)K);
    s->coef = malloc(sizeof(double) * (size_t)K);
    s->dv = malloc(sizeof(double) * (size_t)K);
    s->u = malloc(sizeof(double) * (size_t)K);
    s->rng = gsl_rng_alloc(gsl_rng_taus2);
    s->eig = gsl_eigen_symmv_alloc((size_t)K);
    s->A = gsl_matrix_alloc((size_t)K, (size_t)K);
    s->V = gsl_matrix_alloc((size_t)K, (size_t)K);
    s->ev = gsl_vector_alloc((size_t)K);
    if (s->o.mode == SCM_SIM_BATCH) {
        s->X = malloc(sizeof(double) * (size_t)s->o.n * (size_t)d);
        s->y = malloc(sizeof(double) * (size_t)s->o.n);
        s->grad = malloc(sizeof(double) * (size_t)K * (size_t)d);
        if (!s->X || !s->y || !s->grad)
            return 0;
    }
    return s->W && s->Wtmp && s->Ws && s->x && s->gram && s->P && s->lam && s->coef && s->dv &&
           s->u && s->rng && s->eig && s->A && s->V && s->ev;
}

scm_sim *scm_sim_alloc(const scm_model *m, const scm_sim_opts *o, const double *Q0,
                       const double *R0, scm_error *err)
{
    if (scm_sim_opts_check(o, m, err))
        return NULL;
    scm_sim *s = calloc(1, sizeof *s);
    if (!s) {
        scm_error_set(err, SCM_ENOMEM, "simulate: out of memory");
        return NULL;
    }
    s->o = *o;
    s->d = o->d;
    s->m = scm_model_alloc(m->K, m->M, m->act, m->T, m->v, m->vs, err);
    if (!s->m)
        goto fail;
    s->fl = scm_flow_alloc(s->m);
    if (!s->fl || !sim_buffers(s)) {
        scm_error_set(err, SCM_ENOMEM, "simulate: out of memory (d = %ld, n = %ld)", o->d, o->n);
        goto fail;
    }
    if (scm_weights_realise(s->m, Q0, R0, s->d, s->W, s->Ws, err) || retract_exact(s, err))
        goto fail;
    /* The teacher support: label() reads only its first r coordinates. */
    s->r = 0;
    for (int n = 0; n < m->M; n++)
        for (long i = s->r; i < s->d; i++)
            if (s->Ws[n * s->d + i] != 0.0)
                s->r = i + 1;
    gsl_rng_set(s->rng, o->seed);
    if (o->mode == SCM_SIM_BATCH) {
        const long n = o->n, d = s->d;
        for (long i = 0; i < n * d; i++)
            s->X[i] = gsl_ran_gaussian_ziggurat(s->rng, 1.0);
        for (long mu = 0; mu < n; mu++)
            s->y[mu] = label(s, s->X + mu * d);
    }
    return s;
fail:
    scm_sim_free(s);
    return NULL;
}

scm_status scm_sim_advance(scm_sim *s, double t, scm_error *err)
{
    if (!(t >= 0.0 && isfinite(t)))
        return scm_error_set(err, SCM_EINVAL, "simulate: time %g is not a finite t >= 0", t);
    const double target = nearbyint(t * (double)s->d / s->o.eta);
    while ((double)s->steps < target) {
        scm_status st = s->o.mode == SCM_SIM_BATCH ? batch_step(s, err) : online_step(s, err);
        if (st)
            return st;
        s->steps++;
        if (s->o.mode == SCM_SIM_ONLINE && s->steps % SIM_EXACT_EVERY == 0 &&
            (st = retract_exact(s, err)))
            return st;
    }
    return SCM_OK;
}

double scm_sim_time(const scm_sim *s) { return (double)s->steps * s->o.eta / (double)s->d; }

long scm_sim_steps(const scm_sim *s) { return s->steps; }

scm_status scm_sim_state(scm_sim *s, double *Q, double *R, double *v, double *eps,
                         scm_error *err)
{
    scm_weights_overlaps(s->m, s->d, s->W, s->Ws, Q, R);
    if (v)
        memcpy(v, s->m->v, sizeof *v * (size_t)s->m->K);
    if (!eps)
        return SCM_OK;
    scm_status st = scm_flow_loss(s->fl, Q, R, eps);
    if (st)
        return scm_error_set(err, st, "simulate: the loss at step %ld: %s", s->steps,
                             scm_status_str(st));
    return SCM_OK;
}
