/* sweep.c: random-initialisation sweeps; see sweep.h.  A run is a pure
 * function of (configuration, base seed, index, families, options), so the
 * parallel driver only has to hand the records to the caller in index
 * order: workers take indices from a shared counter and park finished
 * records in a ring buffer (a window of slots ahead of the next record to
 * emit), and whichever worker completes the next record in order emits it
 * and any that follow.  The early stop and the tagging of unconverged runs
 * are in sweep_certify.c, the classification of an end state in
 * sweep_classify.c, the runs file's lines in sweep_record.c, the summary
 * in sweep_summary.c. */
#include "scm/sweep.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scm/init.h"
#include "scm/output.h"
#include "dynamics/sweep_certify.h"

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

void scm_sweep_families_free(scm_sweep_families *f)
{
    if (!f)
        return;
    for (int i = 0; f->f && i < f->n; i++) {
        free(f->f[i].Q);
        free(f->f[i].R);
    }
    free(f->f);
    sweep_cache_free(f->cache);
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
    /* shape and entries first, so that the allocation is bounded by the
     * numbers in the input (a first row of 1e5 and 1e5 empty rows would ask
     * for 80 GB) */
    for (const cJSON *row = a->child; row; row = row->next) {
        if (!cJSON_IsArray(row) || cJSON_GetArraySize(row) != c)
            return -1;
        for (const cJSON *v = row->child; v; v = v->next)
            if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble))
                return -1;
    }
    double *x = malloc(sizeof(double) * (size_t)r * (size_t)c);
    if (!x)
        return -2;
    int i = 0;
    for (const cJSON *row = a->child; row; row = row->next, i++) {
        int j = 0;
        for (const cJSON *v = row->child; v; v = v->next, j++)
            x[(long)i * c + j] = v->valuedouble;
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
        /* "fixed_points" first: a `scm fixed-points` result also has a
         * "families" table (one entry per family, its minimum only), and
         * runs are classified against every listed point */
        arr = cJSON_GetObjectItemCaseSensitive(root, "fixed_points");
        if (!arr)
            arr = cJSON_GetObjectItemCaseSensitive(root, "families");
        if (!arr)
            arr = cJSON_GetObjectItemCaseSensitive(root, "points");
    }
    scm_status st = SCM_OK;
    int n = 0;
    if (!cJSON_IsArray(arr)) {
        st = scm_error_set(err, SCM_EINVAL,
                           "%s: expected an array of families (or an object with one under "
                           "\"fixed_points\", \"families\" or \"points\")",
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

static cJSON *json_rows(const double *A, int rows, int cols)
{
    cJSON *a = cJSON_CreateArray();
    for (int i = 0; a && i < rows; i++) {
        cJSON *r = cJSON_CreateDoubleArray(A + (long)i * cols, cols);
        if (!r) {
            cJSON_Delete(a);
            return NULL;
        }
        cJSON_AddItemToArray(a, r);
    }
    return a;
}

char *scm_sweep_families_json(const scm_sweep_families *f)
{
    cJSON *a = cJSON_CreateArray();
    int ok = a != NULL;
    for (int i = 0; ok && f && i < f->n; i++) {
        const scm_sweep_family *e = &f->f[i];
        cJSON *o = cJSON_CreateObject();
        ok = o && cJSON_AddStringToObject(o, "family", e->name) &&
             cJSON_AddNumberToObject(o, "k1", e->k1) &&
             cJSON_AddNumberToObject(o, "loss", e->eps) &&
             cJSON_AddStringToObject(o, "stability", e->stability);
        if (ok && e->Q) {
            cJSON *Q = json_rows(e->Q, e->K, e->K), *R = json_rows(e->R, e->K, e->M);
            ok = Q && R;
            if (ok) {
                cJSON_AddItemToObject(o, "Q", Q);
                cJSON_AddItemToObject(o, "R", R);
            } else {
                cJSON_Delete(Q);
                cJSON_Delete(R);
            }
        }
        if (o)
            cJSON_AddItemToArray(a, o);
    }
    /* cJSON prints a double with 17 significant digits when 15 do not give
     * it back, so the text round-trips exactly */
    char *s = ok ? scm_output_print(a, 1) : NULL;
    cJSON_Delete(a);
    return s;
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

/* A run whose trajectory cannot start or go on (a student too small for
 * the loose stage, a refused state: scm_traj_run's error e) becomes a
 * failed record naming the reason, classified at its start (Q, R), so that
 * the sweep goes on; SCM_ENOMEM stays an error of the sweep. */
static scm_status run_refused(const scm_model *m, const double *Q, const double *R,
                              const scm_sweep_families *fams, const scm_sweep_opts *o,
                              scm_sweep_record *rec, scm_status st, const scm_error *e,
                              scm_error *err)
{
    if (st == SCM_ENOMEM) {
        if (err)
            *err = *e;
        return st;
    }
    rec->stop = SCM_STOP_FAILED;
    rec->converged = 0;
    snprintf(rec->why, sizeof rec->why, "the run cannot go on: %.480s", e->msg);
    rec->eps = rec->max_F = NAN;
    scm_sweep_classify(m, Q, R, NAN, fams, o, rec);
    rec->converged = 0;
    rec->cert_point = -1;
    rec->cert_dist = rec->cert_radius = rec->cert_loss = NAN;
    rec->near = -1;
    rec->near_dist = rec->near_loss = NAN;
    rec->near_k1 = -1;
    return SCM_OK;
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
    sweep_certify_ctx cx;
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
    if ((st = scm_init_sample(m, c->law, c->d, c->sigma, rec->seed, Q0, R0, err)))
        goto out;
    if (c->scale != 1.0)
        scm_init_scale(m, c->scale, Q0, R0);

    scm_traj_opts to = c->traj;
    to.record = 0;
    /* the families' shared cache, or one for this run alone */
    if (fams && fams->n > 0) {
        cache = fams->cache;
        if (!cache || cache->K != K || cache->M != M)
            cache = own = sweep_cache_make(fams, m);
        if (!cache) {
            st = scm_error_set(err, SCM_ENOMEM, "out of memory in sweep run %ld", index);
            goto out;
        }
    }
    if (o->certify && cache && sweep_certify_applies(c, m)) {
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
        to.certify = sweep_certify_cb;
        to.certify_user = &cx;
        to.certify_from = o->certify_grad; /* evaluate the loose stage's flow below it */
    }
    const scm_traj_result *fin = &tr;
    int two_stage = o->loose_grad_stop > to.grad_stop && to.grad_stop > 0.0;
    scm_traj_opts t1 = to;
    if (two_stage)
        t1.grad_stop = o->loose_grad_stop;
    scm_error e;
    if ((st = scm_traj_run(m, c->rule, Q0, R0, &t1, &tr, &e))) {
        st = run_refused(m, Q0, R0, fams, o, rec, st, &e, err);
        goto out;
    }
    long spent_steps = 0, spent_rhs = 0;
    scm_traj_opts def;
    scm_traj_opts_default(&def);
    if (tr.stop == SCM_STOP_FAILED && tr.loose_failed &&
        (t1.loose_rtol > def.loose_rtol || t1.loose_atol > def.loose_atol)) {
        /* The loose stage failed (near parallel or vanishing students its
         * error can cross the PSD boundary): the run again from the start
         * with the default loose stage, which the looser one only speeds up. */
        spent_steps = tr.n_steps;
        spent_rhs = tr.n_rhs;
        scm_traj_result_free(&tr);
        t1.loose_rtol = fmin(t1.loose_rtol, def.loose_rtol);
        t1.loose_atol = fmin(t1.loose_atol, def.loose_atol);
        to.loose_rtol = t1.loose_rtol;
        to.loose_atol = t1.loose_atol;
        rec->loose_retries = 1;
        if ((st = scm_traj_run(m, c->rule, Q0, R0, &t1, &tr, &e))) {
            st = run_refused(m, Q0, R0, fams, o, rec, st, &e, err);
            rec->steps = spent_steps;
            rec->rhs = spent_rhs;
            goto out;
        }
    }
    fill_from_traj(rec, &tr);
    rec->t = tr.t;
    rec->steps = spent_steps + tr.n_steps;
    rec->rhs = spent_rhs + tr.n_rhs;
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
            cx.t_max = t2.t_max; /* the second stage's clock starts at 0 */
            if ((st = scm_traj_run(m, c->rule, tr.Q, tr.R, &t2, &tr2, err)))
                goto out;
            fill_from_traj(rec, &tr2);
            rec->t = tr.t + tr2.t;
            rec->steps = spent_steps + tr.n_steps + tr2.n_steps;
            rec->rhs = spent_rhs + tr.n_rhs + tr2.n_rhs;
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
        sweep_classify_certified(m, fin->Q, fin->R, &cx, fams, o, rec);
    if (!rec->converged)
        sweep_tag_near(m, fams, cache, fin->Q, fin->R, fin->eps, rec);
    else
        rec->near = -1;
out:
    scm_traj_result_free(&tr);
    scm_traj_result_free(&tr2);
    free(Q0);
    free(R0);
    free(cx.Qc);
    free(cx.Rc);
    sweep_cache_free(own);
    return st;
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
            shared.cache = sweep_cache_make(fams, m);
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
        sweep_cache_free(shared.cache);
    scm_model_free(m);
    return st;
}
