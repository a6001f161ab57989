/* sweep.c: random-initialisation sweeps; see sweep.h.  A run is a pure
 * function of (configuration, base seed, index, families, options), so the
 * parallel driver only has to hand the records to the caller in index
 * order: workers take indices from a shared counter and park finished
 * records in a ring buffer (a window of slots ahead of the next record to
 * emit), and whichever worker completes the next record in order emits it
 * and any that follow.  The early stop and the tagging of unconverged runs
 * are in sweep_certify.c, the summary in sweep_summary.c. */
#include "scm/sweep.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scm/init.h"
#include "scm/output.h"
#include "sweep_certify.h"

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
    if (o->certify < 0 || o->certify > 2)
        return scm_error_set(err, SCM_EINVAL, "certify must be 0, 1 or 2, got %d", o->certify);
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
    if ((st = scm_traj_run(m, c->rule, Q0, R0, &t1, &tr, err)))
        goto out;
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
        if ((st = scm_traj_run(m, c->rule, Q0, R0, &t1, &tr, err)))
            goto out;
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
    if (r->loose_retries)
        cJSON_AddNumberToObject(o, "loose_retries", r->loose_retries);
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
    char *s = scm_output_print(o, 1);
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
    long retries = 0;
    if (cJSON_GetObjectItemCaseSensitive(o, "loose_retries") &&
        !get_int(o, "loose_retries", 1, 1, &retries)) {
        bad = "loose_retries";
        goto out;
    }
    r->loose_retries = (int)retries;
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
        if (so->certify == 2)
            cJSON_AddBoolToObject(ce, "basin", 0);
        else /* the radii from the Hessian's Lipschitz bound (basin.h) */
            cJSON_AddStringToObject(ce, "basin", "proved");
    }
    char *s = scm_output_print(o, 1);
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
