/* fptable_seeds.c: the seeds of scm_fp_table_run from earlier results
 * (`scm fixed-points --seed-from FILE`): the listed points of other
 * fixed-points result files, typically at M - 1 (continuation in M), each
 * with its ansatz name, instance and scalars by name (a point's instance
 * is "instance"; files written before issue 25 have it under "k1").  The
 * scalar names point into the parsed documents, which the list keeps. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <sys/stat.h>

#include "landscape/fptable_internal.h"
#include "scm/output.h"

/* Largest --seed-from file read (a result of K = M = 200 is a few MB). */
#define SEEDS_FILE_MAX ((size_t)256 << 20)

struct scm_fp_table_seeds {
    int n, cap, ndocs;
    scm_fp_seed *seed;
    const char **ansatz;
    cJSON *docs[SCM_FP_TABLE_MAX_FILES];
};

scm_fp_table_seeds *scm_fp_table_seeds_alloc(void)
{
    return calloc(1, sizeof(scm_fp_table_seeds));
}

void scm_fp_table_seeds_free(scm_fp_table_seeds *L)
{
    if (!L)
        return;
    for (int i = 0; i < L->n; i++) {
        free((void *)L->seed[i].names);
        free((void *)L->seed[i].values);
    }
    free(L->seed);
    free(L->ansatz);
    for (int i = 0; i < L->ndocs; i++)
        cJSON_Delete(L->docs[i]);
    free(L);
}

int scm_fp_table_seeds_count(const scm_fp_table_seeds *s)
{
    return s ? s->n : 0;
}

/* The instance of point p: "instance", or in older files "k1"; *key its name. */
static const cJSON *seed_instance(const cJSON *p, const char **key)
{
    const cJSON *in = cJSON_GetObjectItemCaseSensitive(p, "instance");
    *key = in ? "instance" : "k1";
    return in ? in : cJSON_GetObjectItemCaseSensitive(p, "k1");
}

/* The name of the first field of point p that is missing or bad, or NULL. */
static const char *seed_bad_field(const cJSON *p)
{
    const char *key;
    const cJSON *an = cJSON_GetObjectItemCaseSensitive(p, "ansatz");
    const cJSON *k1 = seed_instance(p, &key);
    const cJSON *sc = cJSON_GetObjectItemCaseSensitive(p, "scalars");
    /* range first: casting a double beyond int (1e300) to int is undefined */
    const char *bad = !cJSON_IsString(an) ? "ansatz"
                      : !cJSON_IsNumber(k1) || !(fabs(k1->valuedouble) <= 1e9) ||
                              k1->valuedouble != floor(k1->valuedouble)
                          ? key
                      : !cJSON_IsObject(sc) ? "scalars" : NULL;
    const cJSON *v;
    if (!bad)
        cJSON_ArrayForEach(v, sc) if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble)) bad = "scalars";
    return bad;
}

/* Append point p (checked by seed_bad_field): 0, or -1 for no memory. */
static int seed_append(scm_fp_table_seeds *L, const cJSON *p)
{
    const char *key;
    const cJSON *an = cJSON_GetObjectItemCaseSensitive(p, "ansatz");
    const cJSON *k1 = seed_instance(p, &key);
    const cJSON *sc = cJSON_GetObjectItemCaseSensitive(p, "scalars");
    int n = cJSON_GetArraySize(sc);
    if (L->n == L->cap) {
        int nc = L->cap ? 2 * L->cap : 64;
        scm_fp_seed *ns = realloc(L->seed, sizeof *ns * (size_t)nc);
        if (ns)
            L->seed = ns;
        const char **na = ns ? realloc(L->ansatz, sizeof *na * (size_t)nc) : NULL;
        if (!ns || !na)
            return -1;
        L->ansatz = na;
        L->cap = nc;
    }
    const char **names = malloc(sizeof *names * (size_t)(n ? n : 1));
    double *vals = malloc(sizeof *vals * (size_t)(n ? n : 1));
    if (!names || !vals) {
        free(names);
        free(vals);
        return -1;
    }
    int c = 0;
    const cJSON *v;
    cJSON_ArrayForEach(v, sc) {
        names[c] = v->string;
        vals[c++] = v->valuedouble;
    }
    L->seed[L->n] = (scm_fp_seed){(int)k1->valuedouble, n, names, vals};
    L->ansatz[L->n++] = an->valuestring;
    return 0;
}

scm_status scm_fp_table_seeds_read(scm_fp_table_seeds *L, const char *path, scm_error *err)
{
    if (L->ndocs == SCM_FP_TABLE_MAX_FILES)
        return scm_error_set(err, SCM_EINVAL, "at most %d --seed-from files",
                             SCM_FP_TABLE_MAX_FILES);
    size_t len = 0;
    scm_error rerr;
    struct stat sb;
    if (stat(path, &sb) == 0 && S_ISDIR(sb.st_mode))
        return scm_error_set(err, SCM_EINVAL, "--seed-from: cannot read '%s': it is a directory",
                             path);
    /* bounded, as configs and families files are (issue 26: /dev/zero) */
    char *text = scm_output_read_file(path, SEEDS_FILE_MAX, &len, &rerr);
    if (!text)
        return scm_error_set(err, rerr.code, "--seed-from: %s", rerr.msg);
    if (strlen(text) != len) {
        free(text);
        return scm_error_set(err, SCM_EINVAL, "--seed-from '%s' holds a NUL byte: not JSON",
                             path);
    }
    cJSON *doc = cJSON_ParseWithLength(text, len);
    free(text);
    if (!doc)
        return scm_error_set(err, SCM_EINVAL, "--seed-from '%s': not valid JSON (or nested "
                                              "deeper than %d levels)", path, CJSON_NESTING_LIMIT);
    const cJSON *pts = cJSON_GetObjectItemCaseSensitive(doc, "fixed_points");
    if (!cJSON_IsArray(pts)) {
        cJSON_Delete(doc);
        return scm_error_set(err, SCM_EINVAL, "--seed-from '%s': not a fixed-points result (no "
                                              "\"fixed_points\" array)", path);
    }
    L->docs[L->ndocs++] = doc;
    int idx = 0;
    const cJSON *p;
    cJSON_ArrayForEach(p, pts) {
        const char *bad = seed_bad_field(p);
        if (bad)
            return scm_error_set(err, SCM_EINVAL,
                                 "--seed-from '%s': fixed_points[%d]: missing or bad '%s'", path,
                                 idx, bad);
        if (seed_append(L, p))
            return scm_error_set(err, SCM_ENOMEM, "out of memory reading '%s'", path);
        idx++;
    }
    return SCM_OK;
}

/* The seeds of ansatz name (an array the caller frees; NULL only for no
 * memory). */
scm_fp_seed *fpt_seeds_of(const scm_fp_table_seeds *sl, const char *name, int *n)
{
    int total = sl ? sl->n : 0;
    scm_fp_seed *mine = malloc(sizeof *mine * (size_t)(total ? total : 1));
    *n = 0;
    for (int q = 0; mine && q < total; q++)
        if (strcmp(sl->ansatz[q], name) == 0)
            mine[(*n)++] = sl->seed[q];
    return mine;
}
