/* sweep.c: random-initialisation sweeps; see sweep.h.  A run is a pure
 * function of (configuration, base seed, index, families, options), so the
 * parallel driver only has to hand the records to the caller in index
 * order: workers take indices from a shared counter and park finished
 * records in a ring buffer (a window of slots ahead of the next record to
 * emit), and whichever worker completes the next record in order emits it
 * and any that follow. */
#include "scm/sweep.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scm/basin.h"
#include "scm/init.h"
#include "scm/output.h"

/* ---- seeds ------------------------------------------------------------- */

static uint64_t splitmix64(uint64_t x)
{
    /* Steele, Lea and Flood (2014), the SplittableRandom finaliser. */
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

static uint32_t fmix32(uint32_t h)
{
    /* MurmurHash3's finaliser: a bijection of 32-bit words. */
    h ^= h >> 16;
    h *= 0x85ebca6bU;
    h ^= h >> 13;
    h *= 0xc2b2ae35U;
    h ^= h >> 16;
    return h;
}

unsigned long scm_sweep_seed(uint64_t base, long index)
{
    uint32_t b = (uint32_t)splitmix64(base);
    return (unsigned long)fmix32(b + (uint32_t)(uint64_t)index);
}

/* ---- families ---------------------------------------------------------- */

static void cache_free(scm_sweep_cache *c);

void scm_sweep_families_free(scm_sweep_families *f)
{
    if (!f)
        return;
    for (int i = 0; f->f && i < f->n; i++) {
        free(f->f[i].Q);
        free(f->f[i].R);
    }
    free(f->f);
    cache_free(f->cache);
    f->f = NULL;
    f->cache = NULL;
    f->n = 0;
}

/* A rows x cols matrix from a JSON array of arrays: the shape in *rows,
 * *cols (0 if a is not one), the entries malloc'ed in *out. */
static int json_matrix_any(const cJSON *a, int *rows, int *cols, double **out)
{
    *rows = *cols = 0;
    *out = NULL;
    if (!cJSON_IsArray(a))
        return 0;
    int r = cJSON_GetArraySize(a), c = r > 0 ? cJSON_GetArraySize(cJSON_GetArrayItem(a, 0)) : 0;
    if (r < 1 || c < 1 || r > 100000 || c > 100000)
        return -1;
    double *x = malloc(sizeof(double) * (size_t)r * (size_t)c);
    if (!x)
        return -2;
    int i = 0;
    for (const cJSON *row = a->child; row; row = row->next, i++) {
        if (!cJSON_IsArray(row) || cJSON_GetArraySize(row) != c) {
            free(x);
            return -1;
        }
        int j = 0;
        for (const cJSON *v = row->child; v; v = v->next, j++) {
            if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble)) {
                free(x);
                return -1;
            }
            x[(long)i * c + j] = v->valuedouble;
        }
    }
    *rows = r;
    *cols = c;
    *out = x;
    return 0;
}

scm_status scm_sweep_families_parse(const char *text, const char *source,
                                    scm_sweep_families *out, scm_error *err)
{
    out->n = 0;
    out->f = NULL;
    out->cache = NULL;
    cJSON *root = cJSON_Parse(text);
    if (!root)
        return scm_error_set(err, SCM_EINVAL, "%s: invalid JSON", source);
    const cJSON *arr = root;
    if (cJSON_IsObject(root)) {
        arr = cJSON_GetObjectItemCaseSensitive(root, "families");
        if (!arr)
            arr = cJSON_GetObjectItemCaseSensitive(root, "fixed_points");
        if (!arr)
            arr = cJSON_GetObjectItemCaseSensitive(root, "points");
    }
    scm_status st = SCM_OK;
    int n = 0;
    if (!cJSON_IsArray(arr)) {
        st = scm_error_set(err, SCM_EINVAL,
                           "%s: expected an array of families (or an object with one under "
                           "\"families\" or \"points\")",
                           source);
        goto out;
    }
    n = cJSON_GetArraySize(arr);
    out->f = calloc((size_t)(n > 0 ? n : 1), sizeof *out->f);
    if (!out->f) {
        st = scm_error_set(err, SCM_ENOMEM, "%s: out of memory", source);
        goto out;
    }
    int i = 0;
    for (const cJSON *it = arr->child; it; it = it->next, i++) {
        scm_sweep_family *f = &out->f[i];
        const cJSON *loss = cJSON_GetObjectItemCaseSensitive(it, "loss");
        if (!loss)
            loss = cJSON_GetObjectItemCaseSensitive(it, "eps");
        if (cJSON_IsNull(loss)) {
            i--; /* a point without a loss (a failed check upstream): skipped */
            continue;
        }
        /* scm fixed-points writes the ansatz's k1 parameter (the size of a
         * group, which may be the aligned one) and the actual anti-aligned
         * count under structure.anti: the latter is the family's k1. */
        const cJSON *k1 = cJSON_GetObjectItemCaseSensitive(
            cJSON_GetObjectItemCaseSensitive(it, "structure"), "anti");
        if (!k1)
            k1 = cJSON_GetObjectItemCaseSensitive(it, "k1");
        const cJSON *name = cJSON_GetObjectItemCaseSensitive(it, "family");
        if (!name)
            name = cJSON_GetObjectItemCaseSensitive(it, "ansatz");
        if (!cJSON_IsObject(it) || !cJSON_IsNumber(loss) || !isfinite(loss->valuedouble)) {
            st = scm_error_set(err, SCM_EINVAL, "%s: family %d: needs a finite number 'loss'",
                               source, i);
            goto out;
        }
        if (!cJSON_IsNumber(k1) || k1->valuedouble != floor(k1->valuedouble) ||
            k1->valuedouble < 0 || k1->valuedouble > 1e6) {
            st = scm_error_set(err, SCM_EINVAL,
                               "%s: family %d: needs a non-negative integer 'k1'", source, i);
            goto out;
        }
        if (name && !cJSON_IsString(name)) {
            st = scm_error_set(err, SCM_EINVAL, "%s: family %d: 'family' must be a string",
                               source, i);
            goto out;
        }
        snprintf(f->name, sizeof f->name, "%s", name ? name->valuestring : "family");
        f->k1 = (int)k1->valuedouble;
        f->eps = loss->valuedouble;
        snprintf(f->stability, sizeof f->stability, "unknown");
        const cJSON *stab = cJSON_GetObjectItemCaseSensitive(it, "stability");
        const cJSON *sv = cJSON_GetObjectItemCaseSensitive(stab, "verdict"),
                    *sh = cJSON_GetObjectItemCaseSensitive(stab, "hessian_verdict");
        if (cJSON_IsString(stab))
            snprintf(f->stability, sizeof f->stability, "%.63s", stab->valuestring);
        else if (cJSON_IsString(sv))
            snprintf(f->stability, sizeof f->stability, "%.30s/%.30s", sv->valuestring,
                     cJSON_IsString(sh) ? sh->valuestring : "-");
        /* the point, when given: Q (K x K) and R (K x M) */
        int qr, qc, rr, rc;
        int e1 = json_matrix_any(cJSON_GetObjectItemCaseSensitive(it, "Q"), &qr, &qc, &f->Q);
        int e2 = json_matrix_any(cJSON_GetObjectItemCaseSensitive(it, "R"), &rr, &rc, &f->R);
        if (e1 == -2 || e2 == -2) {
            st = scm_error_set(err, SCM_ENOMEM, "%s: out of memory", source);
            goto out;
        }
        if (e1 || e2 || (f->Q && !f->R) || (f->R && !f->Q) ||
            (f->Q && (qr != qc || rr != qr))) {
            st = scm_error_set(err, SCM_EINVAL,
                               "%s: family %d: 'Q' and 'R' must be K x K and K x M matrices",
                               source, i);
            goto out;
        }
        f->K = f->Q ? qr : 0;
        f->M = f->Q ? rc : 0;
    }
    out->n = i;
out:
    if (st) {
        out->n = out->f ? n : 0; /* every entry (calloc'ed: the rest is NULL) */
        scm_sweep_families_free(out);
    }
    cJSON_Delete(root);
    return st;
}

/* ---- classification ---------------------------------------------------- */

void scm_sweep_opts_default(scm_sweep_opts *o)
{
    o->match_rtol = 1e-8;
    o->match_atol = 1e-10;
    o->dead_q = 1e-3;
    o->loose_grad_stop = 0.0;
    o->certify = 0;
    o->certify_grad = 1e-3;
    o->certify_global = 1e-3;
    o->certify_rmax = 0.05;
}

scm_status scm_sweep_opts_check(const scm_sweep_opts *o, scm_error *err)
{
    if (!(o->match_rtol >= 0.0 && o->match_rtol < 1.0))
        return scm_error_set(err, SCM_EINVAL, "match_rtol must be in [0, 1), got %g",
                             o->match_rtol);
    if (!(o->match_atol >= 0.0 && isfinite(o->match_atol)))
        return scm_error_set(err, SCM_EINVAL, "match_atol must be >= 0, got %g", o->match_atol);
    if (!(o->dead_q >= 0.0 && isfinite(o->dead_q)))
        return scm_error_set(err, SCM_EINVAL, "dead_q must be >= 0, got %g", o->dead_q);
    if (!(o->loose_grad_stop >= 0.0 && isfinite(o->loose_grad_stop)))
        return scm_error_set(err, SCM_EINVAL, "loose_grad_stop must be >= 0, got %g",
                             o->loose_grad_stop);
    if (!(o->certify_grad > 0.0 && isfinite(o->certify_grad)))
        return scm_error_set(err, SCM_EINVAL, "certify_grad must be > 0, got %g", o->certify_grad);
    if (!(o->certify_global >= 0.0 && o->certify_global < 1.0))
        return scm_error_set(err, SCM_EINVAL, "certify_global must be in [0, 1), got %g",
                             o->certify_global);
    if (!(o->certify_rmax > 0.0 && o->certify_rmax <= 10.0))
        return scm_error_set(err, SCM_EINVAL, "certify_rmax must be in (0, 10], got %g",
                             o->certify_rmax);
    return SCM_OK;
}

void scm_sweep_classify(const scm_model *m, const double *Q, const double *R, double eps,
                        const scm_sweep_families *fams, const scm_sweep_opts *o,
                        scm_sweep_record *rec)
{
    const int K = m->K, M = m->M;
    rec->n_anti = rec->n_dead = rec->n_shared = 0;
    int live = 0, distinct = 0;
    /* M is small (a model size): a byte per teacher, on the stack in chunks
     * would be overkill; count distinct picks by a quadratic scan. */
    int picks_cap = K;
    int picks_buf[64];
    int *picks = picks_cap <= 64 ? picks_buf : malloc(sizeof(int) * (size_t)picks_cap);
    for (int k = 0; k < K; k++) {
        if (!(Q[k * K + k] >= o->dead_q)) {
            rec->n_dead++;
            continue;
        }
        int best = 0;
        for (int n = 1; n < M; n++)
            if (fabs(R[k * M + n]) > fabs(R[k * M + best]))
                best = n;
        int seen = 0;
        if (picks)
            for (int j = 0; j < live; j++)
                seen |= picks[j] == best;
        if (picks)
            picks[live] = best;
        live++;
        distinct += !seen;
    }
    rec->n_shared = picks ? live - distinct : 0;
    if (picks != picks_buf)
        free(picks);
    /* the anti-aligned count of every tool (model.h); -1 without memory */
    if (scm_model_count_anti(m, Q, R, o->dead_q, &rec->n_anti) != SCM_OK)
        rec->n_anti = -1;

    rec->matched = 0;
    rec->family[0] = '\0';
    rec->k1 = -1;
    if (!rec->converged) {
        snprintf(rec->cls, sizeof rec->cls, "not_converged");
        return;
    }
    int best = -1;
    double best_d = 0.0;
    int best_struct = 0;
    for (int i = 0; fams && i < fams->n; i++) {
        const scm_sweep_family *f = &fams->f[i];
        const int zero = fabs(f->eps) <= o->match_atol; /* a global minimum */
        /* below eps_stop a run is at a global minimum up to integration
         * error, which may exceed match_atol: any zero-loss family is it */
        double d = rec->stop == SCM_STOP_EPS && zero ? 0.0 : fabs(eps - f->eps);
        if (!(d <= o->match_rtol * fabs(f->eps) + o->match_atol))
            continue;
        int s = f->k1 == rec->n_anti && rec->n_dead == 0 && rec->n_shared == 0;
        if (best < 0 || s > best_struct || (s == best_struct && d < best_d)) {
            best = i;
            best_d = d;
            best_struct = s;
        }
    }
    if (best >= 0 && fabs(fams->f[best].eps) <= o->match_atol) {
        /* one class for the global minimum, whichever ansatz lists it */
        rec->matched = 1;
        snprintf(rec->family, sizeof rec->family, "global_minimum");
        rec->k1 = 0;
    } else if (best >= 0) {
        rec->matched = 1;
        snprintf(rec->family, sizeof rec->family, "%s", fams->f[best].name);
        rec->k1 = fams->f[best].k1;
    } else if (rec->stop == SCM_STOP_EPS) {
        /* eps below eps_stop: the global minimum whether or not listed. */
        rec->matched = 1;
        snprintf(rec->family, sizeof rec->family, "global_minimum");
        rec->k1 = 0;
    }
    if (rec->matched && best >= 0 && strcmp(rec->family, "global_minimum") != 0) {
        /* Several families of one name and k1 (distinct losses): number
         * them by loss, #0 the lowest, so that the classes stay apart. */
        const scm_sweep_family *b = &fams->f[best];
        int same = 0, below = 0;
        for (int i = 0; i < fams->n; i++) {
            const scm_sweep_family *f = &fams->f[i];
            if (strcmp(f->name, b->name) != 0 || f->k1 != b->k1)
                continue;
            int dup = 0;
            for (int j = 0; j < i && !dup; j++)
                dup = strcmp(fams->f[j].name, f->name) == 0 && fams->f[j].k1 == f->k1 &&
                      fabs(fams->f[j].eps - f->eps) <= o->match_rtol * fabs(f->eps) + o->match_atol;
            if (dup)
                continue;
            same++;
            below += f->eps < b->eps - (o->match_rtol * fabs(b->eps) + o->match_atol);
        }
        if (same > 1)
            snprintf(rec->cls, sizeof rec->cls, "%.60s/k1=%d#%d", rec->family, rec->k1, below);
        else
            snprintf(rec->cls, sizeof rec->cls, "%.60s/k1=%d", rec->family, rec->k1);
    } else if (rec->matched)
        snprintf(rec->cls, sizeof rec->cls, "%s/k1=%d", rec->family, rec->k1);
    else
        snprintf(rec->cls, sizeof rec->cls, "unmatched");
}


/* ---- the early stop and the tagging (basin.h) --------------------------- */

/* The points' canonical forms (for the model the cache was made for) and
 * their certificates, computed on first need under the mutex. */
struct scm_sweep_cache {
    pthread_mutex_t mu;
    int K, M, n;
    char *has;           /* the point is given and has the model's shape */
    double *Qc, *Rc;     /* n canonical points */
    char *cert_done;
    scm_basin_cert *cert;
    double low;          /* the lowest positive family loss (INFINITY: none) */
};

static void cache_free(scm_sweep_cache *c)
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

static scm_sweep_cache *cache_make(const scm_sweep_families *f, const scm_model *m)
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
        cache_free(c);
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
            cache_free(c);
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
    cache_free(f->cache);
    f->cache = cache_make(f, m);
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

/* What the traj callback of one run needs and finds. */
typedef struct {
    const scm_model *m;
    const scm_sweep_families *f;
    scm_sweep_cache *c;
    const scm_sweep_opts *o;
    double t_max, grad_stop; /* the run's: a certified run must be one that converges in time */
    double *Qc, *Rc;   /* the state, canonical */
    int point;         /* certified: the point, -1 the global rule */
    double dist, radius;
    scm_status st;     /* an error inside the callback (no memory) */
    scm_error err;
} certify_ctx;

static int certify_cb(void *user, double t, const double *Q, const double *R, double eps,
                      double max_F)
{
    certify_ctx *x = user;
    scm_sweep_cache *c = x->c;
    if (x->st)
        return 0;
    if (isfinite(c->low) && eps < x->o->certify_global * c->low) {
        x->point = -1; /* no listed family but a zero-loss one lies below */
        x->dist = x->radius = NAN;
        return 1;
    }
    if (!(max_F < x->o->certify_grad))
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
static void tag_near(const scm_model *m, const scm_sweep_families *f, scm_sweep_cache *c,
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
    int canon = Qc && Rc && isfinite(eps) && scm_basin_canonical(m, Q, R, Qc, Rc, NULL, NULL) == SCM_OK;
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
static void classify_certified(const scm_model *m, const double *Q, const double *R,
                               const certify_ctx *x, const scm_sweep_families *fams,
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

static int accept_loose(const scm_sweep_record *r)
{
    return r->matched && r->k1 == r->n_anti && r->n_dead == 0 && r->n_shared == 0;
}

static void fill_from_traj(scm_sweep_record *rec, const scm_traj_result *tr)
{
    rec->stop = tr->stop;
    rec->converged = tr->stop == SCM_STOP_FIXED_POINT || tr->stop == SCM_STOP_EPS ||
                     tr->stop == SCM_STOP_CERTIFIED;
    if (rec->converged)
        rec->why[0] = '\0';
    else if (tr->stop == SCM_STOP_FAILED)
        snprintf(rec->why, sizeof rec->why, "%s", tr->err.msg);
    else
        snprintf(rec->why, sizeof rec->why, "%s", scm_stop_reason_str(tr->stop));
    rec->eps = tr->eps;
    rec->max_F = tr->max_F;
}

scm_status scm_sweep_run_one(const scm_config *c, const scm_model *m, uint64_t base,
                             long index, const scm_sweep_families *fams,
                             const scm_sweep_opts *o, scm_sweep_record *rec, scm_error *err)
{
    memset(rec, 0, sizeof *rec);
    if (c->init != SCM_INIT_RANDOM)
        return scm_error_set(err, SCM_EINVAL, "a sweep needs init.type = \"random\"");
    if (index < 0)
        return scm_error_set(err, SCM_EINVAL, "run index %ld is negative", index);
    scm_status st = scm_sweep_opts_check(o, err);
    if (st)
        return st;
    const int K = m->K, M = m->M;
    scm_sweep_cache *cache = NULL, *own = NULL;
    certify_ctx cx;
    memset(&cx, 0, sizeof cx);
    double *Q0 = malloc(sizeof(double) * (size_t)K * (size_t)K);
    double *R0 = malloc(sizeof(double) * (size_t)K * (size_t)M);
    scm_traj_result tr, tr2;
    memset(&tr, 0, sizeof tr);
    memset(&tr2, 0, sizeof tr2);
    if (!Q0 || !R0) {
        st = scm_error_set(err, SCM_ENOMEM, "out of memory in sweep run %ld", index);
        goto out;
    }
    rec->index = index;
    rec->seed = scm_sweep_seed(base, index);
    if ((st = scm_init_random(m, c->d, c->sigma, rec->seed, Q0, R0, err)))
        goto out;
    if (c->scale != 1.0)
        scm_init_scale(m, c->scale, Q0, R0);

    scm_traj_opts to = c->traj;
    to.record = 0;
    /* the families' shared cache, or one for this run alone */
    if (fams && fams->n > 0) {
        cache = fams->cache;
        if (!cache || cache->K != K || cache->M != M)
            cache = own = cache_make(fams, m);
        if (!cache) {
            st = scm_error_set(err, SCM_ENOMEM, "out of memory in sweep run %ld", index);
            goto out;
        }
    }
    if (o->certify && cache) {
        cx.m = m;
        cx.f = fams;
        cx.c = cache;
        cx.o = o;
        cx.t_max = to.t_max;
        cx.grad_stop = to.grad_stop;
        cx.Qc = malloc(sizeof(double) * (size_t)K * (size_t)K);
        cx.Rc = malloc(sizeof(double) * (size_t)K * (size_t)M);
        if (!cx.Qc || !cx.Rc) {
            st = scm_error_set(err, SCM_ENOMEM, "out of memory in sweep run %ld", index);
            goto out;
        }
        to.certify = certify_cb;
        to.certify_user = &cx;
        to.certify_from = o->certify_grad; /* evaluate the loose stage's flow below it */
    }
    const scm_traj_result *fin = &tr;
    int two_stage = o->loose_grad_stop > to.grad_stop && to.grad_stop > 0.0;
    scm_traj_opts t1 = to;
    if (two_stage)
        t1.grad_stop = o->loose_grad_stop;
    if ((st = scm_traj_run(m, c->rule, Q0, R0, &t1, &tr, err)))
        goto out;
    fill_from_traj(rec, &tr);
    rec->t = tr.t;
    rec->steps = tr.n_steps;
    rec->rhs = tr.n_rhs;
    scm_sweep_classify(m, tr.Q, tr.R, tr.eps, fams, o, rec);
    if (two_stage && tr.stop == SCM_STOP_FIXED_POINT && !accept_loose(rec)) {
        /* Not recognisably in a known basin: finish with the strict rule. */
        scm_traj_opts t2 = to;
        t2.v0 = tr.v; /* a rule that trains v goes on from the v reached */
        t2.t_max = to.t_max - tr.t;
        t2.max_steps = to.max_steps - tr.n_steps;
        if (t2.t_max > 0.0 && t2.max_steps >= 1 && t2.t_first > t2.t_max)
            t2.t_first = t2.t_max;
        if (t2.t_max <= 0.0 || t2.max_steps < 1) {
            rec->converged = 0;
            rec->stop = t2.t_max <= 0.0 ? SCM_STOP_T_MAX : SCM_STOP_MAX_STEPS;
            snprintf(rec->why, sizeof rec->why, "%s", scm_stop_reason_str(rec->stop));
            scm_sweep_classify(m, tr.Q, tr.R, tr.eps, fams, o, rec);
        } else {
            if ((st = scm_traj_run(m, c->rule, tr.Q, tr.R, &t2, &tr2, err)))
                goto out;
            fill_from_traj(rec, &tr2);
            rec->t = tr.t + tr2.t;
            rec->steps = tr.n_steps + tr2.n_steps;
            rec->rhs = tr.n_rhs + tr2.n_rhs;
            scm_sweep_classify(m, tr2.Q, tr2.R, tr2.eps, fams, o, rec);
            fin = &tr2;
        }
    }
    if (cx.st) { /* out of memory inside the early stop */
        st = cx.st;
        if (err)
            *err = cx.err;
        goto out;
    }
    rec->cert_point = -1;
    rec->cert_dist = rec->cert_radius = rec->cert_loss = NAN;
    if (fin->stop == SCM_STOP_CERTIFIED)
        classify_certified(m, fin->Q, fin->R, &cx, fams, o, rec);
    if (!rec->converged)
        tag_near(m, fams, cache, fin->Q, fin->R, fin->eps, rec);
    else
        rec->near = -1;
out:
    scm_traj_result_free(&tr);
    scm_traj_result_free(&tr2);
    free(Q0);
    free(R0);
    free(cx.Qc);
    free(cx.Rc);
    cache_free(own);
    return st;
}

/* ---- JSON lines -------------------------------------------------------- */

char *scm_sweep_record_json(const scm_sweep_record *r)
{
    cJSON *o = cJSON_CreateObject();
    if (!o)
        return NULL;
    cJSON_AddNumberToObject(o, "index", (double)r->index);
    cJSON_AddNumberToObject(o, "seed", (double)r->seed);
    cJSON_AddStringToObject(o, "stop", scm_stop_reason_str(r->stop));
    cJSON_AddBoolToObject(o, "converged", r->converged);
    if (r->converged)
        cJSON_AddNullToObject(o, "why");
    else
        cJSON_AddStringToObject(o, "why", r->why);
    cJSON_AddNumberToObject(o, "t", r->t);
    cJSON_AddNumberToObject(o, "eps", r->eps);
    cJSON_AddNumberToObject(o, "max_F", r->max_F);
    cJSON_AddNumberToObject(o, "steps", (double)r->steps);
    cJSON_AddNumberToObject(o, "rhs", (double)r->rhs);
    cJSON_AddStringToObject(o, "class", r->cls);
    if (r->matched) {
        cJSON_AddStringToObject(o, "family", r->family);
        cJSON_AddNumberToObject(o, "k1", r->k1);
    } else {
        cJSON_AddNullToObject(o, "family");
        cJSON_AddNullToObject(o, "k1");
    }
    cJSON_AddNumberToObject(o, "anti", r->n_anti);
    cJSON_AddNumberToObject(o, "dead", r->n_dead);
    cJSON_AddNumberToObject(o, "shared", r->n_shared);
    if (r->stop == SCM_STOP_CERTIFIED) {
        cJSON *c = cJSON_AddObjectToObject(o, "cert");
        cJSON_AddNumberToObject(c, "loss", r->cert_loss);
        if (r->cert_point >= 0) {
            cJSON_AddNumberToObject(c, "point", r->cert_point);
            cJSON_AddNumberToObject(c, "dist", r->cert_dist);
            cJSON_AddNumberToObject(c, "radius", r->cert_radius);
        } else {
            cJSON_AddNullToObject(c, "point");
            cJSON_AddStringToObject(c, "rule", "global");
        }
    }
    if (!r->converged && r->near >= 0) {
        cJSON *c = cJSON_AddObjectToObject(o, "near");
        cJSON_AddNumberToObject(c, "point", r->near);
        cJSON_AddStringToObject(c, "family", r->near_family);
        cJSON_AddNumberToObject(c, "k1", r->near_k1);
        cJSON_AddNumberToObject(c, "loss", r->near_loss);
        if (isfinite(r->near_dist))
            cJSON_AddNumberToObject(c, "dist", r->near_dist);
        else
            cJSON_AddNullToObject(c, "dist");
        cJSON_AddStringToObject(c, "stability", r->near_stability);
    }
    char *s = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    return s;
}

static int get_num(const cJSON *o, const char *key, int nullable, double *v)
{
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, key);
    if (nullable && cJSON_IsNull(x)) {
        *v = NAN;
        return 1;
    }
    if (!cJSON_IsNumber(x))
        return 0;
    *v = x->valuedouble;
    return 1;
}

static int get_int(const cJSON *o, const char *key, double lo, double hi, long *v)
{
    double x;
    if (!get_num(o, key, 0, &x) || x != floor(x) || x < lo || x > hi)
        return 0;
    *v = (long)x;
    return 1;
}

scm_status scm_sweep_record_parse(const char *line, scm_sweep_record *r, scm_error *err)
{
    memset(r, 0, sizeof *r);
    cJSON *o = cJSON_Parse(line);
    if (!o)
        return scm_error_set(err, SCM_EINVAL, "not valid JSON");
    scm_status st = SCM_OK;
    const char *bad = NULL;
    long x;
    double d;
    if (!cJSON_IsObject(o)) {
        bad = "(not an object)";
        goto out;
    }
    if (!get_int(o, "index", 0, 9007199254740992.0, &r->index)) {
        bad = "index";
        goto out;
    }
    if (!get_int(o, "seed", 0, 4294967295.0, &x)) {
        bad = "seed";
        goto out;
    }
    r->seed = (unsigned long)x;
    const cJSON *stop = cJSON_GetObjectItemCaseSensitive(o, "stop");
    int found = 0;
    for (int s = SCM_STOP_T_MAX; cJSON_IsString(stop) && s <= SCM_STOP_CERTIFIED; s++)
        if (strcmp(stop->valuestring, scm_stop_reason_str((scm_stop_reason)s)) == 0) {
            r->stop = (scm_stop_reason)s;
            found = 1;
        }
    if (!found) {
        bad = "stop";
        goto out;
    }
    const cJSON *conv = cJSON_GetObjectItemCaseSensitive(o, "converged");
    if (!cJSON_IsBool(conv) ||
        (cJSON_IsTrue(conv) != (r->stop == SCM_STOP_FIXED_POINT || r->stop == SCM_STOP_EPS ||
                                r->stop == SCM_STOP_CERTIFIED))) {
        bad = "converged";
        goto out;
    }
    r->converged = cJSON_IsTrue(conv);
    const cJSON *why = cJSON_GetObjectItemCaseSensitive(o, "why");
    if (r->converged ? !cJSON_IsNull(why) : !cJSON_IsString(why)) {
        bad = "why";
        goto out;
    }
    if (!r->converged)
        snprintf(r->why, sizeof r->why, "%s", why->valuestring);
    if (!get_num(o, "t", 1, &r->t)) {
        bad = "t";
        goto out;
    }
    if (!get_num(o, "eps", 1, &r->eps)) {
        bad = "eps";
        goto out;
    }
    if (!get_num(o, "max_F", 1, &r->max_F)) {
        bad = "max_F";
        goto out;
    }
    if (!get_int(o, "steps", 0, 9e15, &r->steps)) {
        bad = "steps";
        goto out;
    }
    if (!get_int(o, "rhs", 0, 9e15, &r->rhs)) {
        bad = "rhs";
        goto out;
    }
    const cJSON *cls = cJSON_GetObjectItemCaseSensitive(o, "class");
    if (!cJSON_IsString(cls) || strlen(cls->valuestring) >= sizeof r->cls) {
        bad = "class";
        goto out;
    }
    snprintf(r->cls, sizeof r->cls, "%s", cls->valuestring);
    const cJSON *fam = cJSON_GetObjectItemCaseSensitive(o, "family");
    if (cJSON_IsString(fam) && strlen(fam->valuestring) < sizeof r->family) {
        r->matched = 1;
        snprintf(r->family, sizeof r->family, "%s", fam->valuestring);
        if (!get_int(o, "k1", 0, 1e6, &x)) {
            bad = "k1";
            goto out;
        }
        r->k1 = (int)x;
    } else if (cJSON_IsNull(fam)) {
        r->k1 = -1;
        if (!cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(o, "k1"))) {
            bad = "k1";
            goto out;
        }
    } else {
        bad = "family";
        goto out;
    }
    if (!get_int(o, "anti", 0, 1e6, &x)) {
        bad = "anti";
        goto out;
    }
    r->n_anti = (int)x;
    if (!get_int(o, "dead", 0, 1e6, &x)) {
        bad = "dead";
        goto out;
    }
    r->n_dead = (int)x;
    if (!get_int(o, "shared", 0, 1e6, &x)) {
        bad = "shared";
        goto out;
    }
    r->n_shared = (int)x;
    r->cert_point = -1;
    r->cert_dist = r->cert_radius = r->cert_loss = NAN;
    const cJSON *cert = cJSON_GetObjectItemCaseSensitive(o, "cert");
    if ((r->stop == SCM_STOP_CERTIFIED) != cJSON_IsObject(cert) ||
        (cert && !get_num(cert, "loss", 0, &r->cert_loss))) {
        bad = "cert";
        goto out;
    }
    if (cert && !cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(cert, "point"))) {
        if (!get_int(cert, "point", 0, 1e9, &x) || !get_num(cert, "dist", 0, &r->cert_dist) ||
            !get_num(cert, "radius", 0, &r->cert_radius)) {
            bad = "cert";
            goto out;
        }
        r->cert_point = (int)x;
    }
    r->near = -1;
    r->near_dist = r->near_loss = NAN;
    const cJSON *near = cJSON_GetObjectItemCaseSensitive(o, "near");
    if (near) {
        const cJSON *nf = cJSON_GetObjectItemCaseSensitive(near, "family"),
                    *ns = cJSON_GetObjectItemCaseSensitive(near, "stability");
        if (r->converged || !cJSON_IsObject(near) || !get_int(near, "point", 0, 1e9, &x) ||
            !get_num(near, "loss", 0, &r->near_loss) || !get_num(near, "dist", 1, &r->near_dist) ||
            !cJSON_IsString(nf) || strlen(nf->valuestring) >= sizeof r->near_family ||
            !cJSON_IsString(ns) || strlen(ns->valuestring) >= sizeof r->near_stability) {
            bad = "near";
            goto out;
        }
        r->near = (int)x;
        long k1n;
        if (!get_int(near, "k1", 0, 1e6, &k1n)) {
            bad = "near";
            goto out;
        }
        r->near_k1 = (int)k1n;
        snprintf(r->near_family, sizeof r->near_family, "%s", nf->valuestring);
        snprintf(r->near_stability, sizeof r->near_stability, "%s", ns->valuestring);
    }
    (void)d;
out:
    if (bad)
        st = scm_error_set(err, SCM_EINVAL, "missing or invalid field '%s'", bad);
    cJSON_Delete(o);
    return st;
}

char *scm_sweep_header_json(const scm_config *c, uint64_t base, long runs, int shard_i,
                            int shard_n, const scm_sweep_families *fams)
{
    return scm_sweep_header_json_opts(c, base, runs, shard_i, shard_n, fams, NULL);
}

char *scm_sweep_header_json_opts(const scm_config *c, uint64_t base, long runs, int shard_i,
                                 int shard_n, const scm_sweep_families *fams,
                                 const scm_sweep_opts *so)
{
    cJSON *o = cJSON_CreateObject();
    if (!o)
        return NULL;
    cJSON_AddNumberToObject(o, "scm_sweep", 1);
    cJSON_AddItemToObject(o, "config", cJSON_Duplicate(c->used, 1));
    cJSON_AddNumberToObject(o, "seed", (double)base);
    cJSON_AddNumberToObject(o, "runs", (double)runs);
    cJSON *sh = cJSON_AddArrayToObject(o, "shard");
    cJSON_AddItemToArray(sh, cJSON_CreateNumber(shard_i));
    cJSON_AddItemToArray(sh, cJSON_CreateNumber(shard_n));
    cJSON *fa = cJSON_AddArrayToObject(o, "families");
    for (int i = 0; fams && i < fams->n; i++) {
        cJSON *f = cJSON_CreateObject();
        cJSON_AddStringToObject(f, "family", fams->f[i].name);
        cJSON_AddNumberToObject(f, "k1", fams->f[i].k1);
        cJSON_AddNumberToObject(f, "loss", fams->f[i].eps);
        cJSON_AddItemToArray(fa, f);
    }
    if (so && so->certify) {
        cJSON *ce = cJSON_AddObjectToObject(o, "certify");
        cJSON_AddNumberToObject(ce, "grad", so->certify_grad);
        cJSON_AddNumberToObject(ce, "global", so->certify_global);
        cJSON_AddNumberToObject(ce, "rmax", so->certify_rmax);
    }
    char *s = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    return s;
}

/* ---- parallel execution ------------------------------------------------ */

typedef struct {
    const scm_config *c;
    const scm_model *m;
    uint64_t base;
    const long *idx;
    long n;
    const scm_sweep_families *fams;
    const scm_sweep_opts *o;
    scm_sweep_emit_fn emit;
    void *user;

    pthread_mutex_t mu;
    pthread_cond_t cv;
    long window;       /* ring buffer slots */
    scm_sweep_record *ring;
    char *done;        /* per slot */
    long next_take, next_emit;
    int stop;
    scm_status st;
    scm_error err;
} sweep_shared;

static void *sweep_worker(void *arg)
{
    sweep_shared *s = arg;
    scm_sweep_record rec;
    scm_error err;
    pthread_mutex_lock(&s->mu);
    for (;;) {
        while (!s->stop && s->next_take < s->n && s->next_take >= s->next_emit + s->window)
            pthread_cond_wait(&s->cv, &s->mu);
        if (s->stop || s->next_take >= s->n)
            break;
        long pos = s->next_take++;
        pthread_mutex_unlock(&s->mu);
        scm_error_clear(&err);
        scm_status st = scm_sweep_run_one(s->c, s->m, s->base, s->idx[pos], s->fams, s->o,
                                          &rec, &err);
        pthread_mutex_lock(&s->mu);
        if (st) {
            if (!s->stop) {
                s->st = st;
                s->err = err;
                s->stop = 1;
            }
            pthread_cond_broadcast(&s->cv);
            break;
        }
        s->ring[pos % s->window] = rec;
        s->done[pos % s->window] = 1;
        while (!s->stop && s->next_emit < s->n && s->done[s->next_emit % s->window]) {
            long e = s->next_emit % s->window;
            if (s->emit(&s->ring[e], s->user)) {
                s->stop = 1;
                s->st = scm_error_set(&s->err, SCM_EINVAL, "the sweep was stopped at run %ld",
                                      s->ring[e].index);
            }
            s->done[e] = 0;
            s->next_emit++;
        }
        pthread_cond_broadcast(&s->cv);
    }
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

scm_status scm_sweep_exec(const scm_config *c, uint64_t base, const long *indices, long n,
                          int nthreads, const scm_sweep_families *fams,
                          const scm_sweep_opts *o, scm_sweep_emit_fn emit, void *user,
                          scm_error *err)
{
    if (nthreads < 1 || nthreads > 1024)
        return scm_error_set(err, SCM_EINVAL, "threads must be in [1, 1024], got %d", nthreads);
    if (n < 0 || (n > 0 && !indices) || !emit)
        return scm_error_set(err, SCM_EINVAL, "bad sweep arguments");
    for (long i = 1; i < n; i++)
        if (indices[i] <= indices[i - 1])
            return scm_error_set(err, SCM_EINVAL, "run indices must increase");
    scm_status st = scm_sweep_opts_check(o, err);
    if (st)
        return st;
    if (n == 0)
        return SCM_OK;
    scm_model *m = scm_config_model(c, err);
    if (!m)
        return err ? err->code : SCM_EINVAL;
    /* the threads share one cache of the points (canonical forms,
     * certificates): a shallow copy of the list carries it */
    scm_sweep_families shared = {0, NULL, NULL};
    if (fams && fams->n > 0) {
        shared = *fams;
        if (!shared.cache || shared.cache->K != m->K || shared.cache->M != m->M)
            shared.cache = cache_make(fams, m);
        if (!shared.cache) {
            scm_model_free(m);
            return scm_error_set(err, SCM_ENOMEM, "out of memory preparing the families");
        }
    }
    sweep_shared s;
    memset(&s, 0, sizeof s);
    s.c = c;
    s.m = m;
    s.base = base;
    s.idx = indices;
    s.n = n;
    s.fams = fams ? &shared : NULL;
    s.o = o;
    s.emit = emit;
    s.user = user;
    s.window = 16L * nthreads;
    s.ring = malloc(sizeof *s.ring * (size_t)s.window);
    s.done = calloc((size_t)s.window, 1);
    pthread_t *th = nthreads > 1 ? malloc(sizeof *th * (size_t)nthreads) : NULL;
    if (!s.ring || !s.done || (nthreads > 1 && !th)) {
        st = scm_error_set(err, SCM_ENOMEM, "out of memory starting the sweep");
        goto out;
    }
    pthread_mutex_init(&s.mu, NULL);
    pthread_cond_init(&s.cv, NULL);
    if (nthreads == 1) {
        sweep_worker(&s);
    } else {
        int started = 0;
        for (; started < nthreads; started++)
            if (pthread_create(&th[started], NULL, sweep_worker, &s) != 0)
                break;
        if (started == 0) {
            sweep_worker(&s); /* no threads to be had: run here */
        }
        for (int i = 0; i < started; i++)
            pthread_join(th[i], NULL);
    }
    pthread_cond_destroy(&s.cv);
    pthread_mutex_destroy(&s.mu);
    st = s.st;
    if (st && err)
        *err = s.err;
out:
    free(th);
    free(s.ring);
    free(s.done);
    if (fams && shared.cache != fams->cache)
        cache_free(shared.cache);
    scm_model_free(m);
    return st;
}

/* ---- summary ----------------------------------------------------------- */

#define WILSON_Z 1.959963984540054

void scm_sweep_wilson(long k, long n, double *lo, double *hi)
{
    /* Wilson (1927): the roots in p of (k/n - p)^2 = z^2 p (1 - p) / n. */
    if (n <= 0) {
        *lo = 0.0;
        *hi = 1.0;
        return;
    }
    const double z2 = WILSON_Z * WILSON_Z, nn = (double)n, p = (double)k / nn;
    const double den = 1.0 + z2 / nn;
    const double ctr = (p + z2 / (2.0 * nn)) / den;
    const double half = WILSON_Z / den * sqrt(p * (1.0 - p) / nn + z2 / (4.0 * nn * nn));
    *lo = k == 0 ? 0.0 : fmax(0.0, ctr - half);
    *hi = k == n ? 1.0 : fmin(1.0, ctr + half);
}

typedef struct {
    char cls[80];
    char family[64];
    int matched, k1;
    long count;
    double eps_min, eps_max;
} sum_class;

typedef struct {
    int point;
    char family[64], stability[64];
    int k1;
    double loss, dist_min, dist_max, eps_min, eps_max;
    long count;
} sum_near;

struct scm_sweep_summary {
    long runs, done, converged;
    long n_tmax, n_maxsteps, n_failed;
    int ncls, capcls;
    sum_class *cls;
    int nanti;
    long *anti; /* converged runs by anti-aligned count */
    long hist[SCM_SWEEP_HIST_NBINS], hist_under, hist_over, hist_nan;
    long n_unm, cap_unm;
    double *unm; /* losses of converged unmatched runs */
    double steps_sum, rhs_sum, t_sum;
    long steps_max, rhs_max;
    double t_max;
    long n_cert, n_cert_global;
    int nnear, capnear;
    sum_near *near; /* unconverged runs by the point they sit near */
};

scm_sweep_summary *scm_sweep_summary_alloc(long runs)
{
    scm_sweep_summary *s = calloc(1, sizeof *s);
    if (s)
        s->runs = runs;
    return s;
}

void scm_sweep_summary_free(scm_sweep_summary *s)
{
    if (!s)
        return;
    free(s->cls);
    free(s->anti);
    free(s->unm);
    free(s->near);
    free(s);
}

scm_status scm_sweep_summary_add(scm_sweep_summary *s, const scm_sweep_record *r)
{
    /* a certified run counts with the loss of the point it converges to */
    const double eps = r->stop == SCM_STOP_CERTIFIED ? r->cert_loss : r->eps;
    int c = 0;
    while (c < s->ncls && strcmp(s->cls[c].cls, r->cls) != 0)
        c++;
    if (c == s->ncls) {
        if (s->ncls == s->capcls) {
            int cap = s->capcls ? 2 * s->capcls : 8;
            sum_class *nc = realloc(s->cls, sizeof *nc * (size_t)cap);
            if (!nc)
                return SCM_ENOMEM;
            s->cls = nc;
            s->capcls = cap;
        }
        sum_class *k = &s->cls[s->ncls++];
        memset(k, 0, sizeof *k);
        snprintf(k->cls, sizeof k->cls, "%s", r->cls);
        snprintf(k->family, sizeof k->family, "%s", r->family);
        k->matched = r->matched;
        k->k1 = r->k1;
        k->eps_min = k->eps_max = eps;
    }
    sum_class *k = &s->cls[c];
    k->count++;
    k->eps_min = fmin(k->eps_min, eps);
    k->eps_max = fmax(k->eps_max, eps);
    s->done++;
    if (r->converged) {
        s->converged++;
        if (r->n_anti < 0)
            return SCM_ENOMEM; /* the classification ran out of memory */
        if (r->n_anti >= s->nanti) {
            long *na = realloc(s->anti, sizeof *na * (size_t)(r->n_anti + 1));
            if (!na)
                return SCM_ENOMEM;
            for (int i = s->nanti; i <= r->n_anti; i++)
                na[i] = 0;
            s->anti = na;
            s->nanti = r->n_anti + 1;
        }
        s->anti[r->n_anti]++;
        if (!isfinite(eps))
            s->hist_nan++;
        else if (eps < pow(10.0, SCM_SWEEP_HIST_LO))
            s->hist_under++;
        else {
            int b = (int)floor((log10(eps) - SCM_SWEEP_HIST_LO) * SCM_SWEEP_HIST_PER_DECADE);
            if (b >= SCM_SWEEP_HIST_NBINS)
                s->hist_over++;
            else
                s->hist[b < 0 ? 0 : b]++;
        }
        if (!r->matched) {
            if (s->n_unm == s->cap_unm) {
                long cap = s->cap_unm ? 2 * s->cap_unm : 16;
                double *nu = realloc(s->unm, sizeof *nu * (size_t)cap);
                if (!nu)
                    return SCM_ENOMEM;
                s->unm = nu;
                s->cap_unm = cap;
            }
            s->unm[s->n_unm++] = eps;
        }
    } else if (r->stop == SCM_STOP_T_MAX) {
        s->n_tmax++;
    } else if (r->stop == SCM_STOP_MAX_STEPS) {
        s->n_maxsteps++;
    } else {
        s->n_failed++;
    }
    if (r->stop == SCM_STOP_CERTIFIED) {
        s->n_cert++;
        s->n_cert_global += r->cert_point < 0;
    }
    if (!r->converged && r->near >= 0) {
        int q = 0;
        while (q < s->nnear && s->near[q].point != r->near)
            q++;
        if (q == s->nnear) {
            if (s->nnear == s->capnear) {
                int cap = s->capnear ? 2 * s->capnear : 8;
                sum_near *nn = realloc(s->near, sizeof *nn * (size_t)cap);
                if (!nn)
                    return SCM_ENOMEM;
                s->near = nn;
                s->capnear = cap;
            }
            sum_near *g = &s->near[s->nnear++];
            memset(g, 0, sizeof *g);
            g->point = r->near;
            snprintf(g->family, sizeof g->family, "%s", r->near_family);
            snprintf(g->stability, sizeof g->stability, "%s", r->near_stability);
            g->k1 = r->near_k1;
            g->loss = r->near_loss;
            g->dist_min = g->dist_max = r->near_dist;
            g->eps_min = g->eps_max = r->eps;
        }
        sum_near *g = &s->near[q];
        g->count++;
        g->dist_min = fmin(g->dist_min, r->near_dist);
        g->dist_max = fmax(g->dist_max, r->near_dist);
        g->eps_min = fmin(g->eps_min, r->eps);
        g->eps_max = fmax(g->eps_max, r->eps);
    }
    s->steps_sum += (double)r->steps;
    s->rhs_sum += (double)r->rhs;
    s->t_sum += r->t;
    if (r->steps > s->steps_max)
        s->steps_max = r->steps;
    if (r->rhs > s->rhs_max)
        s->rhs_max = r->rhs;
    if (r->t > s->t_max)
        s->t_max = r->t;
    return SCM_OK;
}

/* Matched families first (by k1, then name), then unmatched, then not
 * converged: an order that does not depend on the order of the records. */
static int class_rank(const sum_class *c)
{
    if (c->matched)
        return 0;
    return strcmp(c->cls, "unmatched") == 0 ? 1 : 2;
}

static int class_cmp(const void *a, const void *b)
{
    const sum_class *x = a, *y = b;
    int rx = class_rank(x), ry = class_rank(y);
    if (rx != ry)
        return rx < ry ? -1 : 1;
    if (rx == 0 && x->k1 != y->k1)
        return x->k1 < y->k1 ? -1 : 1;
    return strcmp(x->cls, y->cls);
}

static int near_cmp(const void *a, const void *b)
{
    const sum_near *x = a, *y = b;
    return (x->point > y->point) - (x->point < y->point);
}

static int dbl_cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

void scm_sweep_summary_brief(const scm_sweep_summary *s, char *buf, size_t len)
{
    if (len == 0)
        return;
    buf[0] = '\0';
    sum_class *tmp = s->ncls ? malloc(sizeof *tmp * (size_t)s->ncls) : NULL;
    if (s->ncls && !tmp)
        return;
    if (tmp) {
        memcpy(tmp, s->cls, sizeof *tmp * (size_t)s->ncls);
        qsort(tmp, (size_t)s->ncls, sizeof *tmp, class_cmp);
    }
    size_t used = 0;
    for (int i = 0; i < s->ncls && used + 1 < len; i++) {
        int n = snprintf(buf + used, len - used, "%s%s %ld", i ? ", " : "", tmp[i].cls,
                         tmp[i].count);
        if (n < 0)
            break;
        used += (size_t)n;
    }
    free(tmp);
}

static cJSON *wilson_json(long k, long n)
{
    double lo, hi;
    scm_sweep_wilson(k, n, &lo, &hi);
    cJSON *a = cJSON_CreateArray();
    cJSON_AddItemToArray(a, cJSON_CreateNumber(lo));
    cJSON_AddItemToArray(a, cJSON_CreateNumber(hi));
    return a;
}

cJSON *scm_sweep_summary_json(const scm_sweep_summary *s)
{
    cJSON *o = cJSON_CreateObject();
    if (!o)
        return NULL;
    cJSON_AddNumberToObject(o, "runs", (double)s->runs);
    cJSON_AddNumberToObject(o, "done", (double)s->done);
    cJSON_AddNumberToObject(o, "converged", (double)s->converged);
    cJSON *nc = cJSON_AddObjectToObject(o, "not_converged");
    cJSON_AddNumberToObject(nc, "total", (double)(s->done - s->converged));
    cJSON_AddNumberToObject(nc, "t_max", (double)s->n_tmax);
    cJSON_AddNumberToObject(nc, "max_steps", (double)s->n_maxsteps);
    cJSON_AddNumberToObject(nc, "failed", (double)s->n_failed);
    cJSON *ce = cJSON_AddObjectToObject(o, "certified");
    cJSON_AddNumberToObject(ce, "total", (double)s->n_cert);
    cJSON_AddNumberToObject(ce, "global_rule", (double)s->n_cert_global);
    cJSON_AddNumberToObject(ce, "basin", (double)(s->n_cert - s->n_cert_global));
    /* Unconverged runs by the listed point they sit nearest, by point. */
    cJSON *na = cJSON_AddArrayToObject(o, "not_converged_near");
    sum_near *ns = s->nnear ? malloc(sizeof *ns * (size_t)s->nnear) : NULL;
    if (ns) {
        memcpy(ns, s->near, sizeof *ns * (size_t)s->nnear);
        qsort(ns, (size_t)s->nnear, sizeof *ns, near_cmp);
        for (int i = 0; i < s->nnear; i++) {
            cJSON *g = cJSON_CreateObject();
            cJSON_AddNumberToObject(g, "point", ns[i].point);
            cJSON_AddStringToObject(g, "family", ns[i].family);
            cJSON_AddNumberToObject(g, "k1", ns[i].k1);
            cJSON_AddNumberToObject(g, "loss", ns[i].loss);
            cJSON_AddStringToObject(g, "stability", ns[i].stability);
            cJSON_AddNumberToObject(g, "count", (double)ns[i].count);
            cJSON_AddNumberToObject(g, "fraction", s->done ? (double)ns[i].count / (double)s->done : 0.0);
            cJSON_AddItemToObject(g, "wilson95", wilson_json(ns[i].count, s->done));
            if (isfinite(ns[i].dist_min)) {
                cJSON_AddNumberToObject(g, "dist_min", ns[i].dist_min);
                cJSON_AddNumberToObject(g, "dist_max", ns[i].dist_max);
            } else {
                cJSON_AddNullToObject(g, "dist_min");
                cJSON_AddNullToObject(g, "dist_max");
            }
            cJSON_AddNumberToObject(g, "eps_min", ns[i].eps_min);
            cJSON_AddNumberToObject(g, "eps_max", ns[i].eps_max);
            cJSON_AddItemToArray(na, g);
        }
        free(ns);
    }

    sum_class *tmp = s->ncls ? malloc(sizeof *tmp * (size_t)s->ncls) : NULL;
    if (tmp) {
        memcpy(tmp, s->cls, sizeof *tmp * (size_t)s->ncls);
        qsort(tmp, (size_t)s->ncls, sizeof *tmp, class_cmp);
    }
    cJSON *cl = cJSON_AddArrayToObject(o, "classes");
    for (int i = 0; tmp && i < s->ncls; i++) {
        cJSON *c = cJSON_CreateObject();
        cJSON_AddStringToObject(c, "class", tmp[i].cls);
        if (tmp[i].matched) {
            cJSON_AddStringToObject(c, "family", tmp[i].family);
            cJSON_AddNumberToObject(c, "k1", tmp[i].k1);
        } else {
            cJSON_AddNullToObject(c, "family");
            cJSON_AddNullToObject(c, "k1");
        }
        cJSON_AddNumberToObject(c, "count", (double)tmp[i].count);
        cJSON_AddNumberToObject(c, "fraction",
                                s->done ? (double)tmp[i].count / (double)s->done : 0.0);
        cJSON_AddItemToObject(c, "wilson95", wilson_json(tmp[i].count, s->done));
        cJSON_AddNumberToObject(c, "eps_min", tmp[i].eps_min);
        cJSON_AddNumberToObject(c, "eps_max", tmp[i].eps_max);
        cJSON_AddItemToArray(cl, c);
    }
    free(tmp);

    cJSON *ba = cJSON_AddArrayToObject(o, "by_anti");
    for (int a = 0; a < s->nanti; a++) {
        if (!s->anti[a])
            continue;
        cJSON *c = cJSON_CreateObject();
        cJSON_AddNumberToObject(c, "anti", a);
        cJSON_AddNumberToObject(c, "count", (double)s->anti[a]);
        cJSON_AddNumberToObject(c, "fraction", (double)s->anti[a] / (double)s->done);
        cJSON_AddItemToObject(c, "wilson95", wilson_json(s->anti[a], s->done));
        cJSON_AddItemToArray(ba, c);
    }

    /* Distinct unmatched losses: sorted, grouped within 1e-6 relative. */
    cJSON *um = cJSON_AddArrayToObject(o, "unmatched_losses");
    double *u = s->n_unm ? malloc(sizeof *u * (size_t)s->n_unm) : NULL;
    if (u) {
        memcpy(u, s->unm, sizeof *u * (size_t)s->n_unm);
        qsort(u, (size_t)s->n_unm, sizeof *u, dbl_cmp);
        for (long i = 0; i < s->n_unm;) {
            long j = i + 1;
            while (j < s->n_unm && fabs(u[j] - u[i]) <= 1e-6 * fabs(u[i]) + 1e-12)
                j++;
            cJSON *c = cJSON_CreateObject();
            cJSON_AddNumberToObject(c, "eps", u[i]);
            cJSON_AddNumberToObject(c, "eps_max", u[j - 1]);
            cJSON_AddNumberToObject(c, "count", (double)(j - i));
            cJSON_AddItemToArray(um, c);
            i = j;
        }
        free(u);
    }

    cJSON *h = cJSON_AddObjectToObject(o, "loss_histogram");
    cJSON_AddStringToObject(h, "of", "final eps of converged runs");
    cJSON_AddNumberToObject(h, "log10_lo", SCM_SWEEP_HIST_LO);
    cJSON_AddNumberToObject(h, "log10_hi", SCM_SWEEP_HIST_HI);
    cJSON_AddNumberToObject(h, "bins_per_decade", SCM_SWEEP_HIST_PER_DECADE);
    cJSON *hc = cJSON_AddArrayToObject(h, "counts");
    for (int b = 0; b < SCM_SWEEP_HIST_NBINS; b++)
        cJSON_AddItemToArray(hc, cJSON_CreateNumber((double)s->hist[b]));
    cJSON_AddNumberToObject(h, "below", (double)s->hist_under);
    cJSON_AddNumberToObject(h, "above", (double)s->hist_over);
    cJSON_AddNumberToObject(h, "nan", (double)s->hist_nan);

    cJSON *w = cJSON_AddObjectToObject(o, "solver");
    double nd = s->done ? (double)s->done : 1.0;
    cJSON_AddNumberToObject(w, "steps_mean", s->steps_sum / nd);
    cJSON_AddNumberToObject(w, "steps_max", (double)s->steps_max);
    cJSON_AddNumberToObject(w, "rhs_mean", s->rhs_sum / nd);
    cJSON_AddNumberToObject(w, "rhs_max", (double)s->rhs_max);
    cJSON_AddNumberToObject(w, "tau_mean", s->t_sum / nd);
    cJSON_AddNumberToObject(w, "tau_max", s->t_max);
    return o;
}
