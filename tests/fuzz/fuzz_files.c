/* fuzz_files.c: hostile input for the readers of user files (issue 26,
 * items 2, 3, 7, 14, 19).  The bytes are written to a scratch file, which
 * the reader then opens by its path as the command would:
 *   runs:     a runs file, merged alone (scm merge) and resumed by a fixed
 *             sweep (scm sweep --resume);
 *   families: a families file (scm sweep --families, compare --families);
 *   seeds:    a result file for scm fixed-points --seed-from.
 * Each accepted input must yield a consistent object, each refusal a
 * message, and a refused resume must leave the file as it was. */
#define _GNU_SOURCE /* mkstemp */
#include "fuzz_entry.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "landscape/fptable_internal.h"
#include "scm/config.h"
#include "scm/fptable.h"
#include "scm/sweep.h"
#include "scm/sweepfile.h"

/* ---- the scratch file (one per process, removed at exit) ---------------- */

static char scratch_path[4096];

static void scratch_remove(void)
{
    if (scratch_path[0])
        unlink(scratch_path);
}

/* The scratch file holding exactly data (NULL when it cannot be made). */
static const char *scratch_write(const uint8_t *data, size_t size)
{
    if (!scratch_path[0]) {
        const char *dir = getenv("TMPDIR");
        snprintf(scratch_path, sizeof scratch_path, "%s/scm-fuzz-XXXXXX",
                 dir && dir[0] ? dir : "/tmp");
        int fd = mkstemp(scratch_path);
        if (fd < 0) {
            scratch_path[0] = '\0';
            return NULL;
        }
        close(fd);
        atexit(scratch_remove);
    }
    FILE *f = fopen(scratch_path, "wb");
    if (!f)
        return NULL;
    size_t w = size ? fwrite(data, 1, size, f) : 0;
    if (fclose(f) != 0 || w != size)
        return NULL;
    return scratch_path;
}

/* 1 when the scratch file holds exactly data. */
static int scratch_holds(const uint8_t *data, size_t size)
{
    FILE *f = fopen(scratch_path, "rb");
    if (!f)
        return 0;
    int same = 1;
    size_t i = 0;
    int ch;
    while ((ch = getc(f)) != EOF && same)
        same = i < size && (uint8_t)ch == data[i++];
    same = same && i == size && ch == EOF;
    fclose(f);
    return same;
}

/* The scratch file's length; when it is a prefix of data 1 in *prefix. */
static long scratch_prefix(const uint8_t *data, size_t size, int *prefix)
{
    FILE *f = fopen(scratch_path, "rb");
    if (!f)
        abort();
    long n = 0;
    int ch;
    *prefix = 1;
    while ((ch = getc(f)) != EOF) {
        if ((size_t)n >= size || (uint8_t)ch != data[n])
            *prefix = 0;
        n++;
    }
    fclose(f);
    return n;
}

/* ---- runs ---------------------------------------------------------------- */

/* The golden test's sweep (tests/golden/cases.sh, sw.json): runs 8, seed
 * init.seed = 7, shard 0/1; its runs file is in the corpus. */
static const char runs_config[] = "{\"model\": {\"K\": 3, \"M\": 3}, \"init\": {\"seed\": 7}, "
                                  "\"integrator\": {\"linear_solver\": \"dense\"}}";
enum { RUNS_RUNS = 8, RUNS_SEED = 7 };

/* scm merge of the file alone: a consistent summary, or a message; and a
 * file accepted once is refused when given twice (the same shard). */
static void runs_merge(const char *path)
{
    scm_sweep_merge_result res;
    scm_error err;
    scm_error_clear(&err);
    const char *one[] = {path}, *two[] = {path, path};
    scm_status st = scm_sweep_merge(one, 1, &res, &err);
    scm_fuzz_check_error(st, &err);
    if (st) {
        if (res.json || res.summary)
            abort(); /* a failed merge hands nothing back */
        return;
    }
    if (!res.json || !res.summary || res.runs < 1 || res.records < 0 ||
        res.records > res.runs || res.missing != res.runs - res.records ||
        (res.missing == 0) != (res.first_missing < 0) || res.first_missing >= res.runs)
        abort();
    scm_sweep_merge_result_free(&res);
    scm_error_clear(&err);
    st = scm_sweep_merge(two, 2, &res, &err);
    if (st == SCM_OK)
        abort();
    scm_fuzz_check_error(st, &err);
    scm_sweep_merge_result_free(&res);
}

/* scm sweep --resume of the fixed sweep on the file (opened, not run): a
 * refusal leaves the file as it was; an acceptance keeps a prefix of it
 * ending at a newline, or starts it afresh with the header. */
static void runs_resume(const char *path, const uint8_t *data, size_t size)
{
    static scm_config *c; /* parsed once: the same for every input */
    scm_error err;
    scm_error_clear(&err);
    if (!c && scm_config_parse(runs_config, "fuzz", NULL, 0, &c, &err) != SCM_OK)
        abort();
    scm_sweep_file_opts o;
    scm_sweep_file_opts_default(&o);
    o.runs = RUNS_RUNS;
    o.seed = RUNS_SEED;
    o.resume = 1;
    scm_sweep_file *sf = NULL;
    scm_status st = scm_sweep_file_open(path, c, NULL, &o, &sf, &err);
    scm_fuzz_check_error(st, &err);
    if (st) {
        if (sf || !scratch_holds(data, size))
            abort(); /* refused: nothing handed back, the file untouched */
        return;
    }
    long total = scm_sweep_file_total(sf), resumed = scm_sweep_file_resumed(sf);
    scm_sweep_file_free(sf);
    int prefix;
    long n = scratch_prefix(data, size, &prefix);
    if (total != RUNS_RUNS || resumed < 0 || resumed > total)
        abort();
    if (resumed > 0 && (!prefix || n == 0 || data[n - 1] != '\n'))
        abort(); /* records resumed: the file is the input's valid lines */
    if (!prefix) { /* rewritten: only from a cut header, and now one header line */
        char *h = scm_sweep_header_json_opts(c, RUNS_SEED, RUNS_RUNS, 0, 1, NULL, &o.sweep);
        if (!h || (size_t)n != strlen(h) + 1 || size > strlen(h) || memcmp(data, h, size) != 0)
            abort();
        free(h);
    }
}

int scm_fuzz_runs(const uint8_t *data, size_t size)
{
    const char *path = scratch_write(data, size);
    if (!path)
        return 0;
    runs_merge(path);
    if (!scratch_holds(data, size))
        abort(); /* merge only reads */
    runs_resume(path, data, size);
    return 0;
}

/* ---- families ------------------------------------------------------------ */

/* 1 when a and b hold the same families. */
static int families_equal(const scm_sweep_families *a, const scm_sweep_families *b)
{
    if (a->n != b->n)
        return 0;
    for (int i = 0; i < a->n; i++) {
        const scm_sweep_family *x = &a->f[i], *y = &b->f[i];
        if (strcmp(x->name, y->name) != 0 || x->k1 != y->k1 || !(x->eps == y->eps) ||
            x->K != y->K || x->M != y->M || strcmp(x->stability, y->stability) != 0 ||
            (x->Q == NULL) != (y->Q == NULL))
            return 0;
        for (long j = 0; x->Q && j < (long)x->K * x->K; j++)
            if (!(x->Q[j] == y->Q[j]))
                return 0;
        for (long j = 0; x->Q && j < (long)x->K * x->M; j++)
            if (!(x->R[j] == y->R[j]))
                return 0;
    }
    return 1;
}

/* Every family well formed: a name and stability, k1 >= 0, a finite loss,
 * a point of shape K, M >= 1 with finite entries or none. */
static void families_check(const scm_sweep_families *f)
{
    if (f->n < 0 || (f->n > 0 && !f->f))
        abort();
    for (int i = 0; i < f->n; i++) {
        const scm_sweep_family *x = &f->f[i];
        if (!memchr(x->name, '\0', sizeof x->name) ||
            !memchr(x->stability, '\0', sizeof x->stability) || x->k1 < 0 || x->k1 > 1000000 ||
            !isfinite(x->eps) || (x->Q == NULL) != (x->R == NULL) ||
            (x->Q ? x->K < 1 || x->M < 1 : x->K != 0 || x->M != 0))
            abort();
        for (long j = 0; x->Q && j < (long)x->K * x->K; j++)
            if (!isfinite(x->Q[j]))
                abort();
        for (long j = 0; x->Q && j < (long)x->K * x->M; j++)
            if (!isfinite(x->R[j]))
                abort();
    }
}

int scm_fuzz_families(const uint8_t *data, size_t size)
{
    const char *path = scratch_write(data, size);
    if (!path)
        return 0;
    scm_sweep_families f = {0, NULL, NULL}, g = {0, NULL, NULL};
    scm_error err;
    scm_error_clear(&err);
    scm_status st = scm_sweep_families_load(path, &f, &err);
    scm_fuzz_check_error(st, &err);
    if (st) {
        if (f.n != 0 || f.f)
            abort(); /* a failed read hands nothing back */
        return 0;
    }
    families_check(&f);
    /* the list written as scm-mpi hands it to its workers reads back the same */
    char *text = scm_sweep_families_json(&f);
    if (text) {
        if (scm_sweep_families_parse(text, "round trip", &g, &err) != SCM_OK ||
            !families_equal(&f, &g))
            abort();
        scm_sweep_families_free(&g);
    }
    free(text);
    /* the shape check of scm sweep: passes, or names the family */
    scm_error_clear(&err);
    scm_fuzz_check_error(scm_sweep_families_check_shape(&f, 3, 3, "fuzz", &err), &err);
    scm_sweep_families_free(&f);
    return 0;
}

/* ---- seeds --------------------------------------------------------------- */

/* The reader's seeds against the document read by cJSON directly: as
 * many seeds as points, and per ansatz name the seeds of its points in
 * order, each with the point's instance and scalars (names and values).
 * times: how often the file was read into L. */
static void seeds_check(const scm_fp_table_seeds *L, const uint8_t *data, size_t size,
                        int times)
{
    cJSON *doc = cJSON_ParseWithLength((const char *)data, size);
    const cJSON *pts = cJSON_GetObjectItemCaseSensitive(doc, "fixed_points");
    if (!cJSON_IsArray(pts) || scm_fp_table_seeds_count(L) != times * cJSON_GetArraySize(pts))
        abort();
    const cJSON *p;
    cJSON_ArrayForEach(p, pts) {
        const char *name = cJSON_GetObjectItemCaseSensitive(p, "ansatz")->valuestring;
        int n, j = 0;
        scm_fp_seed *mine = fpt_seeds_of(L, name, &n);
        if (!mine)
            abort();
        const cJSON *q;
        cJSON_ArrayForEach(q, pts) { /* the points of this name, in order */
            if (strcmp(cJSON_GetObjectItemCaseSensitive(q, "ansatz")->valuestring, name) != 0)
                continue;
            const cJSON *in = cJSON_GetObjectItemCaseSensitive(q, "instance");
            if (!in)
                in = cJSON_GetObjectItemCaseSensitive(q, "k1");
            const cJSON *sc = cJSON_GetObjectItemCaseSensitive(q, "scalars"), *v;
            if (j >= n || mine[j].k1 != in->valuedouble ||
                mine[j].n != cJSON_GetArraySize(sc))
                abort();
            int s = 0;
            cJSON_ArrayForEach(v, sc) {
                if (strcmp(mine[j].names[s], v->string) != 0 ||
                    !(mine[j].values[s] == v->valuedouble) || !isfinite(mine[j].values[s]))
                    abort();
                s++;
            }
            j++;
        }
        if (n != times * j)
            abort();
        free(mine);
    }
    cJSON_Delete(doc);
}

int scm_fuzz_seeds(const uint8_t *data, size_t size)
{
    const char *path = scratch_write(data, size);
    if (!path)
        return 0;
    scm_fp_table_seeds *L = scm_fp_table_seeds_alloc();
    if (!L)
        return 0;
    scm_error err;
    scm_error_clear(&err);
    scm_status st = scm_fp_table_seeds_read(L, path, &err);
    scm_fuzz_check_error(st, &err);
    if (st == SCM_OK) {
        seeds_check(L, data, size, 1);
        /* the same file again adds as many */
        if (scm_fp_table_seeds_read(L, path, &err) != SCM_OK)
            abort();
        seeds_check(L, data, size, 2);
    }
    scm_fp_table_seeds_free(L);
    return 0;
}
