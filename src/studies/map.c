/* map.c: the map of global convergence over (M, K - M); see map.h. */
#include "scm/map.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/parallel.h"
#include "scm/config.h"
#include "scm/sweep.h"

#define MAP_MAX_SETS 256
#define MAP_PATH_LEN 4200
#define GLOBAL_CLASS "global_minimum/k1=0"

void scm_map_opts_default(scm_map_opts *o)
{
    memset(o, 0, sizeof *o);
    o->runs = -1;
    o->law = SCM_INIT_LAW_GAUSSIAN;
    o->threads = 1;
}

/* One item of a list: an integer or lo:hi[:step]. */
static scm_status parse_item(const char *tok, const char *what, long *lo, long *hi, long *step,
                             scm_error *err)
{
    long v[3] = {0, 0, 1};
    int n = 0;
    const char *p = tok;
    for (;;) {
        char *end;
        errno = 0;
        long x = strtol(p, &end, 10);
        if (end == p || errno || (*end != ':' && *end != '\0') || n == 3)
            return scm_error_set(err, SCM_EINVAL, "%s: '%s' is not an integer or a range "
                                 "lo:hi[:step]", what, tok);
        v[n++] = x;
        if (*end == '\0')
            break;
        p = end + 1;
    }
    if (n == 1)
        v[1] = v[0];
    if (n == 3 && v[2] < 1)
        return scm_error_set(err, SCM_EINVAL, "%s: the step of '%s' must be >= 1", what, tok);
    if (v[1] < v[0])
        return scm_error_set(err, SCM_EINVAL, "%s: the range '%s' is empty (hi < lo)", what, tok);
    *lo = v[0];
    *hi = v[1];
    *step = v[2];
    return SCM_OK;
}

scm_status scm_map_parse_list(const char *text, const char *what, long lo_ok, long hi_ok,
                              long *out, int max, int *n, scm_error *err)
{
    *n = 0;
    if (!text || !*text)
        return scm_error_set(err, SCM_EINVAL, "%s: empty list", what);
    char buf[512];
    if (strlen(text) >= sizeof buf)
        return scm_error_set(err, SCM_EINVAL, "%s: list too long", what);
    memcpy(buf, text, strlen(text) + 1);
    for (char *tok = buf, *next; tok; tok = next) {
        next = strchr(tok, ',');
        if (next)
            *next++ = '\0';
        long lo = 0, hi = -1, step = 1;
        scm_status st = parse_item(tok, what, &lo, &hi, &step, err);
        if (st)
            return st;
        for (long x = lo; x <= hi; x += step) {
            if (x < lo_ok || x > hi_ok)
                return scm_error_set(err, SCM_EINVAL, "%s: %ld is out of [%ld, %ld] ('%s')", what,
                                     x, lo_ok, hi_ok, text);
            for (int q = 0; q < *n; q++)
                if (out[q] == x)
                    return scm_error_set(err, SCM_EINVAL, "%s lists %ld twice ('%s')", what, x,
                                         text);
            if (*n >= max)
                return scm_error_set(err, SCM_EINVAL, "%s: more than %d values ('%s')", what,
                                     max, text);
            out[(*n)++] = x;
        }
    }
    return SCM_OK;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, long n)
{
    if (n == 0)
        return NAN;
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

scm_status scm_map_median_times(const char *runs_path, double *t_conv, double *t_global,
                                scm_error *err)
{
    FILE *f = fopen(runs_path, "r");
    if (!f)
        return scm_error_set(err, SCM_EIO, "cannot read '%s': %s", runs_path, strerror(errno));
    char *line = NULL;
    size_t cap = 0;
    long n = 0, ng = 0, alloc = 0, lineno = 0;
    double *tc = NULL, *tg = NULL;
    scm_status st = SCM_OK;
    while (getline(&line, &cap, f) > 0) {
        if (lineno++ == 0)
            continue; /* the header */
        cJSON *r = cJSON_Parse(line);
        const cJSON *conv = cJSON_GetObjectItemCaseSensitive(r, "converged");
        const cJSON *t = cJSON_GetObjectItemCaseSensitive(r, "t");
        const cJSON *cls = cJSON_GetObjectItemCaseSensitive(r, "class");
        if (cJSON_IsTrue(conv) && cJSON_IsNumber(t)) {
            if (n == alloc) {
                alloc = alloc ? 2 * alloc : 256;
                double *a = realloc(tc, sizeof(double) * (size_t)alloc);
                double *b = a ? realloc(tg, sizeof(double) * (size_t)alloc) : NULL;
                if (a)
                    tc = a;
                if (b)
                    tg = b;
                if (!a || !b) {
                    cJSON_Delete(r);
                    st = scm_error_set(err, SCM_ENOMEM, "out of memory reading '%s'", runs_path);
                    break;
                }
            }
            tc[n++] = t->valuedouble;
            if (cJSON_IsString(cls) && strcmp(cls->valuestring, GLOBAL_CLASS) == 0)
                tg[ng++] = t->valuedouble;
        }
        cJSON_Delete(r);
    }
    free(line);
    fclose(f);
    if (!st) {
        *t_conv = median(tc, n);
        *t_global = median(tg, ng);
    }
    free(tc);
    free(tg);
    return st;
}

/* The override sets of row M: the user's, then init.law (and init.d = M). */
static int row_sets(const scm_map_opts *o, long M, const char **sets, char *law_set, char *d_set)
{
    int n = 0;
    for (int i = 0; i < o->nsets; i++)
        sets[n++] = o->sets[i];
    snprintf(law_set, 64, "init.law=\"%s\"", scm_init_law_name(o->law));
    sets[n++] = law_set;
    if (scm_init_law_needs_d_eq_M(o->law)) {
        snprintf(d_set, 64, "init.d=%ld", M);
        sets[n++] = d_set;
    }
    return n;
}

static int set_names(const char *set, const char *key)
{
    size_t n = strlen(key);
    return strncmp(set, key, n) == 0 && (set[n] == '=' || set[n] == ' ');
}

/* The law of the map: o->law, or the config's init.law (see map.h). */
static scm_status map_law(const scm_map_opts *o, scm_init_law *law, scm_error *err)
{
    *law = o->law;
    if (!o->config_text)
        return SCM_OK;
    cJSON *root = cJSON_Parse(o->config_text);
    const cJSON *l = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(root, "init"), "law");
    scm_status st = SCM_OK;
    scm_init_law cl;
    if (cJSON_IsString(l)) {
        if (scm_init_law_find(l->valuestring, &cl))
            st = scm_error_set(err, SCM_EINVAL, "%s: 'init.law' must be \"gaussian\", "
                               "\"xavier\" or \"xavier_uniform\", got \"%s\"",
                               o->config_name ? o->config_name : "config", l->valuestring);
        else if (o->law_given && cl != o->law)
            st = scm_error_set(err, SCM_EINVAL, "--law %s contradicts init.law \"%s\" of %s",
                               scm_init_law_name(o->law), l->valuestring,
                               o->config_name ? o->config_name : "the config");
        else
            *law = cl;
    } else if (l) {
        st = scm_error_set(err, SCM_EINVAL, "'init.law' must be a string");
    }
    cJSON_Delete(root);
    return st;
}

/* Everything checked before the first file: options, and every cell's
 * config; *init gets the first cell's initialisation (law, d, sigma, scale,
 * seed). */
static scm_status map_check(const scm_map_opts *o, cJSON **init, scm_error *err)
{
    if (o->nM < 1 || o->nM > SCM_MAP_MAX_M || o->ndK < 1 || o->ndK > SCM_MAP_MAX_DK)
        return scm_error_set(err, SCM_EINVAL, "--M and --dK need 1 .. %d and 1 .. %d values",
                             SCM_MAP_MAX_M, SCM_MAP_MAX_DK);
    if (o->runs < 1)
        return scm_error_set(err, SCM_EINVAL, "--runs must be >= 1, got %ld", o->runs);
    if (!o->prefix || !*o->prefix)
        return scm_error_set(err, SCM_EINVAL, "no output prefix");
    if ((unsigned)o->law > SCM_INIT_LAW_XAVIER_UNIFORM)
        return scm_error_set(err, SCM_EINVAL, "unknown init law %d", (int)o->law);
    if (o->nsets > MAP_MAX_SETS - 4)
        return scm_error_set(err, SCM_EINVAL, "too many --set options");
    if (o->n_ansatz < 0 || o->n_ansatz > SCM_COMPARE_MAX_ANSATZ ||
        (o->n_ansatz > 0 && !o->ansatz_files))
        return scm_error_set(err, SCM_EINVAL, "at most %d --ansatz files",
                             SCM_COMPARE_MAX_ANSATZ);
    if (o->n_ansatz > 0) { /* the files read and checked once, before any cell */
        scm_status st = scm_compare_ansatz_check(o->M[0] + o->dK[0], o->M[0], o->ansatz_files,
                                                 o->n_ansatz, err);
        if (st)
            return st;
    }
    for (int i = 0; i < o->nsets; i++) {
        if (set_names(o->sets[i], "init.law"))
            return scm_error_set(err, SCM_EINVAL, "--set %s: the map sets init.law from --law",
                                 o->sets[i]);
        if (scm_init_law_needs_d_eq_M(o->law) && set_names(o->sets[i], "init.d"))
            return scm_error_set(err, SCM_EINVAL, "--set %s: under --law %s init.d is M",
                                 o->sets[i], scm_init_law_name(o->law));
    }
    const char *sets[MAP_MAX_SETS];
    char law_set[64], d_set[64], kset[64], mset[64];
    for (int i = 0; i < o->nM; i++)
        for (int j = 0; j < o->ndK; j++) {
            int n = row_sets(o, o->M[i], sets, law_set, d_set);
            snprintf(kset, sizeof kset, "model.K=%ld", o->M[i] + o->dK[j]);
            snprintf(mset, sizeof mset, "model.M=%ld", o->M[i]);
            sets[n++] = kset;
            sets[n++] = mset;
            scm_config *c = NULL;
            scm_status st = scm_config_parse(o->config_text ? o->config_text : "{}",
                                             o->config_name ? o->config_name : "(default config)",
                                             sets, n, &c, err);
            if (!st && !*init) {
                *init = cJSON_CreateObject();
                cJSON_AddStringToObject(*init, "law", scm_init_law_name(c->law));
                if (scm_init_law_needs_d_eq_M(c->law))
                    cJSON_AddStringToObject(*init, "d", "M");
                else
                    cJSON_AddNumberToObject(*init, "d", (double)c->d);
                cJSON_AddNumberToObject(*init, "sigma", c->sigma);
                cJSON_AddNumberToObject(*init, "scale", c->scale);
                cJSON_AddNumberToObject(*init, "seed", o->have_seed ? (double)o->seed : (double)c->seed);
            }
            scm_config_free(c);
            if (st) {
                char msg[sizeof err->msg];
                snprintf(msg, sizeof msg, "%s", err->msg);
                return scm_error_set(err, st, "M = %ld, K = %ld: %s", o->M[i],
                                     o->M[i] + o->dK[j], msg);
            }
        }
    return SCM_OK;
}

/* {count, fraction, wilson95} of k among n. */
static cJSON *share(long k, long n)
{
    double lo, hi;
    scm_sweep_wilson(k, n, &lo, &hi);
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "count", (double)k);
    cJSON_AddNumberToObject(o, "fraction", n > 0 ? (double)k / (double)n : 0.0);
    cJSON *w = cJSON_AddArrayToObject(o, "wilson95");
    cJSON_AddItemToArray(w, cJSON_CreateNumber(lo));
    cJSON_AddItemToArray(w, cJSON_CreateNumber(hi));
    return o;
}

static double num(const cJSON *o, const char *key)
{
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsNumber(x) ? x->valuedouble : NAN;
}

static const char *str(const cJSON *o, const char *key)
{
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsString(x) ? x->valuestring : NULL;
}

/* The families_reached entry of (K, class) in a compare report. */
static const cJSON *reached(const cJSON *report, long K, const char *cls)
{
    const cJSON *e;
    cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(report, "families_reached"))
    {
        const char *c = str(e, "class");
        if ((long)num(e, "K") == K && c && strcmp(c, cls) == 0)
            return e;
    }
    return NULL;
}

static void add_num_or_null(cJSON *o, const char *key, double x)
{
    if (isfinite(x))
        cJSON_AddNumberToObject(o, key, x);
    else
        cJSON_AddNullToObject(o, key);
}

/* One family of a cell: a class of the summary with its plateau and verdict. */
static cJSON *cell_family(const cJSON *cls, const cJSON *report, long K, long done)
{
    const char *name = str(cls, "class");
    const cJSON *r = reached(report, K, name);
    cJSON *f = share((long)num(cls, "count"), done);
    cJSON_AddStringToObject(f, "class", name);
    const cJSON *k1 = cJSON_GetObjectItemCaseSensitive(cls, "k1");
    if (cJSON_IsNumber(k1))
        cJSON_AddNumberToObject(f, "k1", k1->valuedouble);
    else
        cJSON_AddNullToObject(f, "k1");
    double loss = r ? num(r, "loss") : NAN;
    add_num_or_null(f, "loss", isfinite(loss) ? loss : num(cls, "eps_min"));
    const char *v = r ? str(r, "verdict") : NULL, *hv = r ? str(r, "hessian_verdict") : NULL;
    cJSON_AddStringToObject(f, "verdict", v ? v : "-");
    cJSON_AddStringToObject(f, "hessian_verdict", hv ? hv : "-");
    return f;
}

/* The cell (M, K) from its sweep summary, the row's report and its runs file. */
static scm_status make_cell(const scm_map_opts *o, long M, long dK, const cJSON *summary,
                            const cJSON *report, cJSON **out, scm_error *err)
{
    const long K = M + dK;
    long done = (long)num(summary, "done"), global = 0;
    const cJSON *cls;
    cJSON_ArrayForEach(cls, cJSON_GetObjectItemCaseSensitive(summary, "classes"))
    {
        const char *c = str(cls, "class");
        if (c && strcmp(c, GLOBAL_CLASS) == 0)
            global = (long)num(cls, "count");
    }
    char path[MAP_PATH_LEN], sum[MAP_PATH_LEN];
    snprintf(path, sizeof path, "%s.M%ld.K%ld.runs.jsonl", o->prefix, M, K);
    snprintf(sum, sizeof sum, "%s.M%ld.K%ld.summary.json", o->prefix, M, K);
    double tc, tg;
    scm_status st = scm_map_median_times(path, &tc, &tg, err);
    if (st)
        return st;
    cJSON *cell = cJSON_CreateObject();
    cJSON_AddNumberToObject(cell, "M", (double)M);
    cJSON_AddNumberToObject(cell, "K", (double)K);
    cJSON_AddNumberToObject(cell, "dK", (double)dK);
    cJSON_AddNumberToObject(cell, "runs", (double)o->runs);
    cJSON_AddNumberToObject(cell, "done", (double)done);
    cJSON_AddItemToObject(cell, "global", share(global, done));
    cJSON *fams = cJSON_AddArrayToObject(cell, "families");
    cJSON_ArrayForEach(cls, cJSON_GetObjectItemCaseSensitive(summary, "classes"))
    {
        const char *c = str(cls, "class");
        if (c && strcmp(c, GLOBAL_CLASS) != 0 && strcmp(c, "not_converged") != 0)
            cJSON_AddItemToArray(fams, cell_family(cls, report, K, done));
    }
    const cJSON *nc = cJSON_GetObjectItemCaseSensitive(summary, "not_converged");
    cJSON_AddItemToObject(cell, "not_converged", share((long)num(nc, "total"), done));
    add_num_or_null(cell, "median_t_converged", tc);
    add_num_or_null(cell, "median_t_global", tg);
    cJSON *files = cJSON_AddObjectToObject(cell, "files");
    cJSON_AddStringToObject(files, "runs", path);
    cJSON_AddStringToObject(files, "summary", sum);
    *out = cell;
    return SCM_OK;
}

/* Per M the smallest dK (of those run, in increasing dK) with a global
 * fraction >= 0.99, or null. */
static cJSON *smallest_dK(const scm_map_opts *o, const cJSON *cells)
{
    cJSON *arr = cJSON_CreateArray();
    for (int i = 0; i < o->nM; i++) {
        const cJSON *best = NULL, *c;
        cJSON_ArrayForEach(c, cells)
        {
            const cJSON *g = cJSON_GetObjectItemCaseSensitive(c, "global");
            if ((long)num(c, "M") == o->M[i] && num(g, "fraction") >= 0.99 &&
                (!best || num(c, "dK") < num(best, "dK")))
                best = c;
        }
        cJSON *e = cJSON_CreateObject();
        cJSON_AddNumberToObject(e, "M", (double)o->M[i]);
        if (best) {
            cJSON_AddNumberToObject(e, "dK", num(best, "dK"));
            const cJSON *g = cJSON_GetObjectItemCaseSensitive(best, "global");
            cJSON_AddNumberToObject(e, "fraction", num(g, "fraction"));
            cJSON_AddItemToObject(e, "wilson95", cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(g, "wilson95"), 1));
        } else {
            cJSON_AddNullToObject(e, "dK");
        }
        cJSON_AddItemToArray(arr, e);
    }
    return arr;
}

/* The options of row M's comparison, with what they point to. */
typedef struct {
    scm_compare_opts co;
    const char *sets[MAP_MAX_SETS];
    char law_set[64], d_set[64], prefix[MAP_PATH_LEN];
} map_row_args;

/* Row M: a comparison over K = M + dK. */
static void row_opts(const scm_map_opts *o, long M, map_row_args *a)
{
    scm_compare_opts *co = &a->co;
    scm_compare_opts_default(co);
    co->M = M;
    co->nK = o->ndK;
    for (int j = 0; j < o->ndK; j++)
        co->K[j] = M + o->dK[j];
    co->runs = o->runs;
    co->config_text = o->config_text;
    co->config_name = o->config_name;
    co->nsets = row_sets(o, M, a->sets, a->law_set, a->d_set);
    co->sets = a->sets;
    co->ansatz_files = o->ansatz_files;
    co->n_ansatz = o->n_ansatz;
    snprintf(a->prefix, sizeof a->prefix, "%s.M%ld", o->prefix, M);
    co->prefix = a->prefix;
    co->have_seed = o->have_seed;
    co->seed = o->seed;
    co->threads = o->threads;
    co->traces = 0;
    co->no_stability = o->no_stability;
    co->certify = o->certify;
    co->exec = o->exec;
    co->jobs = o->jobs;
    co->event = o->event;
    co->event_user = o->event_user;
}

/* A row's enumerations, computed ahead on a thread of their own while the
 * row before runs its sweeps (map.h, ahead). */
typedef struct {
    scm_compare_job jobs[SCM_COMPARE_MAX_K];
    int n;
    scm_background *bg;
} map_ahead;

static void ahead_one(void *ctx, int tid, int i)
{
    (void)tid;
    scm_compare_job *job = (scm_compare_job *)ctx + i;
    scm_error e;
    if (scm_compare_job_run(job->in, 1, &job->out, &e)) { /* the row computes it again */
        free(job->out);
        job->out = NULL;
    }
}

/* Row M's enumeration jobs, started; with none (a configuration the row
 * will refuse, no memory, no thread) the row computes them itself. */
static void ahead_start(const scm_map_opts *o, long M, map_ahead *a)
{
    map_row_args ra;
    row_opts(o, M, &ra);
    scm_error e;
    if (scm_compare_families_jobs(&ra.co, a->jobs, &a->n, &e) == SCM_OK && a->n > 0)
        a->bg = scm_background_start(a->n, ahead_one, a->jobs);
}

/* Stopped (failed: stop, else every job run), and freed. */
static void ahead_end(map_ahead *a, int failed)
{
    if (failed)
        scm_background_stop(a->bg);
    else
        scm_background_finish(a->bg, 1);
    for (int q = 0; q < a->n; q++) {
        free(a->jobs[q].in);
        free(a->jobs[q].out);
    }
    memset(a, 0, sizeof *a);
}

/* One row of M, with the enumerations done ahead (if any). */
static scm_status map_row(const scm_map_opts *o, long M, const map_ahead *done, cJSON *cells,
                          scm_map_result *res, scm_error *err)
{
    map_row_args ra;
    row_opts(o, M, &ra);
    ra.co.done_jobs = done->jobs;
    ra.co.n_done_jobs = done->n;
    scm_compare_result cr;
    scm_status st = scm_compare_run(&ra.co, &cr, err);
    if (st) {
        res->failed_input = cr.failed_input;
    } else {
        for (int j = 0; j < o->ndK && !st; j++) {
            cJSON *cell = NULL;
            st = make_cell(o, M, o->dK[j], cr.summaries[j], cr.report, &cell, err);
            if (!st)
                cJSON_AddItemToArray(cells, cell);
        }
    }
    scm_compare_result_free(&cr);
    return st;
}

/* The rows in turn; with o->ahead (and two threads or more) each row's
 * enumerations are started before the row above runs. */
static scm_status map_rows(const scm_map_opts *o, cJSON *cells, scm_map_result *res,
                           scm_error *err)
{
    const int ahead = o->ahead && o->threads >= 2;
    map_ahead a[2];
    memset(a, 0, sizeof a);
    scm_status st = SCM_OK;
    for (int i = 0; i < o->nM && !st; i++) {
        map_ahead *cur = &a[i % 2], *next = &a[(i + 1) % 2];
        scm_background_finish(cur->bg, o->threads); /* its jobs not yet taken: here */
        cur->bg = NULL;
        if (ahead && i + 1 < o->nM)
            ahead_start(o, o->M[i + 1], next);
        if ((st = map_row(o, o->M[i], cur, cells, res, err)))
            res->failed_M = o->M[i];
        ahead_end(cur, 0);
    }
    ahead_end(&a[0], 1);
    ahead_end(&a[1], 1);
    return st;
}

static cJSON *long_array(const long *v, int n)
{
    cJSON *a = cJSON_CreateArray();
    for (int i = 0; i < n; i++)
        cJSON_AddItemToArray(a, cJSON_CreateNumber((double)v[i]));
    return a;
}

scm_status scm_map_run(const scm_map_opts *opts, scm_map_result *res, scm_error *err)
{
    memset(res, 0, sizeof *res);
    res->failed_M = -1;
    scm_map_opts resolved = *opts; /* with the law resolved */
    const scm_map_opts *o = &resolved;
    cJSON *init = NULL;
    scm_status st = map_law(opts, &resolved.law, err);
    if (!st)
        st = map_check(o, &init, err);
    if (st) {
        cJSON_Delete(init);
        res->failed_input = 1;
        return st;
    }
    cJSON *map = cJSON_CreateObject();
    cJSON_AddStringToObject(map, "command", "map");
    cJSON_AddStringToObject(map, "law", scm_init_law_name(o->law));
    cJSON_AddItemToObject(map, "M", long_array(o->M, o->nM));
    cJSON_AddItemToObject(map, "dK", long_array(o->dK, o->ndK));
    cJSON_AddNumberToObject(map, "runs", (double)o->runs);
    if (o->n_ansatz > 0)
        cJSON_AddItemToObject(map, "ansatz",
                              cJSON_CreateStringArray(o->ansatz_files, o->n_ansatz));
    cJSON_AddItemToObject(map, "init", init);
    cJSON *cells = cJSON_AddArrayToObject(map, "cells");
    st = map_rows(o, cells, res, err);
    if (st) {
        cJSON_Delete(map);
        return st;
    }
    cJSON_AddItemToObject(map, "smallest_dK_99", smallest_dK(o, cells));
    res->map = map;
    res->csv = scm_map_csv(map);
    if (!res->csv)
        return scm_error_set(err, SCM_ENOMEM, "out of memory");
    return SCM_OK;
}

void scm_map_result_free(scm_map_result *res)
{
    cJSON_Delete(res->map);
    free(res->csv);
    res->map = NULL;
    res->csv = NULL;
}
