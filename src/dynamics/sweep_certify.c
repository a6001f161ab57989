/* sweep_certify.c: the early stop of sweep runs inside the certified basin
 * of a listed strict minimum or below the global rule's loss, and the
 * tagging of unconverged runs with the listed point they sit near; see
 * sweep_certify.h, basin.h and docs/sweeps.md ("Early stop"). */
#include "dynamics/sweep_certify.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int sweep_certify_applies(const scm_config *c, const scm_model *m)
{
    if (c->rule != &scm_rule_gd)
        return 0;
    for (int a = 0; a < m->M; a++)
        for (int b = 0; b < m->M; b++)
            if (m->T && m->T[a * m->M + b] != (a == b ? 1.0 : 0.0))
                return 0;
    return 1;
}

void sweep_cache_free(scm_sweep_cache *c)
{
    if (!c)
        return;
    pthread_mutex_destroy(&c->mu);
    free(c->has);
    free(c->Qc);
    free(c->Rc);
    free(c->cert_done);
    free(c->cert);
    free(c);
}

scm_sweep_cache *sweep_cache_make(const scm_sweep_families *f, const scm_model *m)
{
    const int K = m->K, M = m->M, n = f->n;
    scm_sweep_cache *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->K = K;
    c->M = M;
    c->n = n;
    c->has = calloc((size_t)(n + 1), 1);
    c->Qc = malloc(sizeof(double) * (size_t)(n + 1) * (size_t)K * (size_t)K);
    c->Rc = malloc(sizeof(double) * (size_t)(n + 1) * (size_t)K * (size_t)M);
    c->cert_done = calloc((size_t)(n + 1), 1);
    c->cert = calloc((size_t)(n + 1), sizeof *c->cert);
    pthread_mutex_init(&c->mu, NULL);
    if (!c->has || !c->Qc || !c->Rc || !c->cert_done || !c->cert) {
        sweep_cache_free(c);
        return NULL;
    }
    c->low = INFINITY;
    scm_sweep_opts d;
    scm_sweep_opts_default(&d);
    for (int i = 0; i < n; i++) {
        if (f->f[i].eps > d.match_atol)
            c->low = fmin(c->low, f->f[i].eps);
        if (!f->f[i].Q || f->f[i].K != K || f->f[i].M != M)
            continue;
        if (scm_basin_canonical(m, f->f[i].Q, f->f[i].R, c->Qc + (long)i * K * K,
                                c->Rc + (long)i * K * M, NULL, NULL)) {
            sweep_cache_free(c);
            return NULL;
        }
        c->has[i] = 1;
    }
    return c;
}

scm_status scm_sweep_families_prepare(scm_sweep_families *f, const scm_model *m, scm_error *err)
{
    if (!f || (f->cache && f->cache->K == m->K && f->cache->M == m->M))
        return SCM_OK;
    sweep_cache_free(f->cache);
    f->cache = sweep_cache_make(f, m);
    return f->cache ? SCM_OK
                    : scm_error_set(err, SCM_ENOMEM, "out of memory preparing the families");
}

/* The certificate of point i, computed once (under the mutex: a second
 * thread waits rather than repeat it).  The radius is capped at half the
 * aligned distance to the nearest other listed point, since the ball may
 * hold no other critical point. */
static scm_status cache_cert(scm_sweep_cache *c, const scm_sweep_families *f,
                             const scm_model *m, int i, double r_max, scm_basin_cert *out,
                             scm_error *err)
{
    pthread_mutex_lock(&c->mu);
    scm_status st = SCM_OK;
    if (!c->cert_done[i]) {
        scm_basin_opts bo;
        scm_basin_opts_default(&bo);
        bo.r_max = r_max;
        st = scm_basin_certify_point(m, f->f[i].Q, f->f[i].R, &bo, &c->cert[i], err);
        if (st == SCM_OK && c->cert[i].ok) {
            const long KK = (long)c->K * c->K, KM = (long)c->K * c->M;
            for (int j = 0; j < c->n; j++) {
                if (j == i || !c->has[j])
                    continue;
                double d = sqrt(scm_basin_dist2(m, c->Qc + j * KK, c->Rc + j * KM,
                                                c->Qc + i * KK, c->Rc + i * KM));
                if (d > 1e-9) /* the same point listed twice is no other point */
                    c->cert[i].radius = fmin(c->cert[i].radius, 0.5 * d);
            }
        }
        if (st == SCM_OK)
            c->cert_done[i] = 1;
    }
    *out = c->cert[i];
    pthread_mutex_unlock(&c->mu);
    return st;
}

int sweep_certify_cb(void *user, double t, const double *Q, const double *R, double eps,
                      double max_F)
{
    sweep_certify_ctx *x = user;
    scm_sweep_cache *c = x->c;
    if (x->st)
        return 0;
    if (isfinite(c->low) && eps < x->o->certify_global * c->low) {
        x->point = -1; /* no listed family but a zero-loss one lies below */
        x->dist = x->radius = NAN;
        return 1;
    }
    if (x->o->certify == 2 || !(max_F < x->o->certify_grad))
        return 0;
    const int K = c->K, M = c->M;
    const long KK = (long)K * K, KM = (long)K * M;
    int canon = 0;
    scm_basin_opts bo;
    scm_basin_opts_default(&bo);
    bo.r_max = x->o->certify_rmax;
    for (int i = 0; i < c->n; i++) {
        const double L = x->f->f[i].eps;
        /* inside a certified ball the point is the minimum of the loss */
        if (!c->has[i] || eps < L - 1e-9 * fmax(1.0, L) || eps - L > 1e-3 * fmax(L, 1e-3))
            continue;
        if (!canon) {
            if ((x->st = scm_basin_canonical(x->m, Q, R, x->Qc, x->Rc, NULL, NULL))) {
                scm_error_set(&x->err, x->st, "out of memory in the early stop");
                return 0;
            }
            canon = 1;
        }
        double d2 = scm_basin_dist2(x->m, x->Qc, x->Rc, c->Qc + i * KK, c->Rc + i * KM);
        if (!(d2 < bo.r_max * bo.r_max))
            continue;
        scm_basin_cert cert;
        if ((x->st = cache_cert(c, x->f, x->m, i, x->o->certify_rmax, &cert, &x->err)))
            return 0;
        if (!cert.ok || !(d2 < cert.radius * cert.radius))
            continue;
        int ok = 0;
        double dist;
        if ((x->st = scm_basin_check_state(x->m, c->Qc + i * KK, c->Rc + i * KM, &cert, x->Qc,
                                           x->Rc, bo.curv_frac, &ok, &dist, &x->err)))
            return 0;
        /* In the ball the distance decays at least like exp(-mu t / 2)
         * (phi'' >= mu / 2 along every ray).  The full run stops when
         * max |F| < grad_stop, or at t_max unconverged: certify only a run
         * that reaches grad_stop before t_max, taking max |F| to shrink in
         * proportion to the distance with a factor 10 to spare (at a very
         * flat minimum the certificate holds but the full run ends at t_max,
         * and its class is not_converged). */
        if (ok && x->grad_stop > 0.0) {
            double t_need = 1.0 / (bo.curv_frac * cert.mu) *
                            log(fmax(1.0, 10.0 * max_F / x->grad_stop));
            ok = t + t_need < x->t_max;
        }
        if (ok) {
            x->point = i;
            x->dist = dist;
            x->radius = cert.radius;
            return 1;
        }
    }
    return 0;
}

/* Tag a run that did not converge with the listed point it sits nearest. */
void sweep_tag_near(const scm_model *m, const scm_sweep_families *f, scm_sweep_cache *c,
                     const double *Q, const double *R, double eps, scm_sweep_record *rec)
{
    rec->near = -1;
    rec->near_dist = rec->near_loss = NAN;
    if (!f || f->n == 0)
        return;
    const int K = m->K, M = m->M;
    const long KK = (long)K * K, KM = (long)K * M;
    int best = -1;
    double bd = INFINITY;
    double *Qc = c ? malloc(sizeof(double) * (size_t)KK) : NULL;
    double *Rc = c ? malloc(sizeof(double) * (size_t)KM) : NULL;
    int canon = Qc && Rc && scm_basin_canonical(m, Q, R, Qc, Rc, NULL, NULL) == SCM_OK;
    for (int i = 0; canon && i < c->n; i++) {
        if (!c->has[i])
            continue;
        double d2 = scm_basin_dist2(m, Qc, Rc, c->Qc + i * KK, c->Rc + i * KM);
        if (d2 < bd) {
            bd = d2;
            best = i;
        }
    }
    free(Qc);
    free(Rc);
    if (best >= 0) {
        rec->near_dist = sqrt(bd);
    } else { /* losses only: the nearest loss */
        for (int i = 0; i < f->n && isfinite(eps); i++)
            if (fabs(f->f[i].eps - eps) < bd) {
                bd = fabs(f->f[i].eps - eps);
                best = i;
            }
        if (best < 0)
            return;
    }
    rec->near = best;
    rec->near_loss = f->f[best].eps;
    snprintf(rec->near_family, sizeof rec->near_family, "%s", f->f[best].name);
    rec->near_k1 = f->f[best].k1;
    snprintf(rec->near_stability, sizeof rec->near_stability, "%s", f->f[best].stability);
}

/* The class of a certified run: the one a run converged onto its point
 * (or, by the global rule, below eps_stop) gets. */
void sweep_classify_certified(const scm_model *m, const double *Q, const double *R,
                               const sweep_certify_ctx *x, const scm_sweep_families *fams,
                               const scm_sweep_opts *o, scm_sweep_record *rec)
{
    rec->converged = 1;
    rec->why[0] = '\0';
    rec->stop = x->point >= 0 ? SCM_STOP_FIXED_POINT : SCM_STOP_EPS;
    scm_sweep_classify(m, Q, R, x->point >= 0 ? fams->f[x->point].eps : 0.0, fams, o, rec);
    rec->stop = SCM_STOP_CERTIFIED;
    rec->cert_point = x->point;
    rec->cert_dist = x->dist;
    rec->cert_radius = x->radius;
    rec->cert_loss = x->point >= 0 ? fams->f[x->point].eps : 0.0;
}
