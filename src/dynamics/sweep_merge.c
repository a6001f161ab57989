/* sweep_merge.c: the runs files of one sweep (its shards, or one file)
 * into one summary (sweepfile.h, what `scm merge` computes).  Every file
 * must carry the same header but for its shard, every record must belong
 * to its file's shard with its seed, and no run may appear twice; the runs
 * missing are counted and the first 20 listed. */
#include "scm/sweepfile.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scm/output.h"
#include "sweep_io.h"

typedef struct {
    scm_sweep_record *r;
    int file;
} merge_rec;

/* What the files read so far hold. */
typedef struct {
    const char *const *paths;
    cJSON *ref;      /* the first header, less its shard */
    char *ref_text;
    long runs;
    uint64_t base;
    int *shard_i, *shard_n;
    merge_rec *recs;
    long nrec, caprec;
} merge_state;

static int merge_cmp(const void *a, const void *b)
{
    const merge_rec *x = a, *y = b;
    return (x->r->index > y->r->index) - (x->r->index < y->r->index);
}

/* 1 when x is a JSON integer in [lo, hi]. */
static int is_int_in(const cJSON *x, double lo, double hi)
{
    return cJSON_IsNumber(x) && x->valuedouble == floor(x->valuedouble) &&
           x->valuedouble >= lo && x->valuedouble <= hi;
}

/* Line 1 of file fi: a sweep header, the same as the first file's but for
 * the shard, and a shard no earlier file had. */
static scm_status merge_header(merge_state *m, int fi, const char *p, scm_error *err)
{
    const char *path = m->paths[fi];
    cJSON *h = cJSON_Parse(p);
    const cJSON *tag = cJSON_GetObjectItemCaseSensitive(h, "scm_sweep");
    const cJSON *sh = cJSON_GetObjectItemCaseSensitive(h, "shard");
    const cJSON *rn = cJSON_GetObjectItemCaseSensitive(h, "runs");
    const cJSON *sd = cJSON_GetObjectItemCaseSensitive(h, "seed");
    if (!cJSON_IsObject(h) || !cJSON_IsNumber(tag) || tag->valuedouble != 1 ||
        !cJSON_IsArray(sh) || cJSON_GetArraySize(sh) != 2 || !cJSON_IsNumber(rn) ||
        !cJSON_IsNumber(sd)) {
        cJSON_Delete(h);
        if (p[0] != '\0' && p[strlen(p) - 1] == '\r')
            return scm_error_set(err, SCM_EINVAL,
                                 "'%s' has CRLF line ends (\\r\\n; converted by an editor or "
                                 "a transfer?); scm sweep writes \\n only",
                                 path);
        return scm_error_set(err, SCM_EINVAL, "'%s' line 1: not a scm sweep header", path);
    }
    /* the ranges scm sweep writes: runs in [1, 1e9], shard 0 <= i < n <= 1e6, seed in [0, 2^53) */
    const cJSON *s0 = cJSON_GetArrayItem(sh, 0), *s1 = cJSON_GetArrayItem(sh, 1);
    if (!is_int_in(rn, 1, 1e9) || !is_int_in(sd, 0, 9007199254740991.0) ||
        !is_int_in(s1, 1, 1e6) || !is_int_in(s0, 0, 1e6) || s0->valuedouble >= s1->valuedouble) {
        cJSON_Delete(h);
        return scm_error_set(err, SCM_EINVAL,
                             "'%s' line 1: a sweep header with runs, seed or shard out of "
                             "range (runs in [1, 1e9], seed in [0, 2^53), shard i/n with "
                             "0 <= i < n <= 1e6)",
                             path);
    }
    m->shard_i[fi] = (int)cJSON_GetArrayItem(sh, 0)->valuedouble;
    m->shard_n[fi] = (int)cJSON_GetArrayItem(sh, 1)->valuedouble;
    cJSON_DeleteItemFromObjectCaseSensitive(h, "shard");
    char *ht = scm_output_print(h, 1);
    if (!ht) {
        cJSON_Delete(h);
        return scm_error_set(err, SCM_ENOMEM, "out of memory");
    }
    if (!m->ref) {
        m->ref = h;
        m->ref_text = ht;
        m->runs = (long)rn->valuedouble;
        m->base = (uint64_t)sd->valuedouble;
    } else {
        int same = strcmp(ht, m->ref_text) == 0;
        free(ht);
        cJSON_Delete(h);
        if (!same)
            return scm_error_set(err, SCM_EINVAL,
                                 "'%s' is from a different sweep than '%s' (config, "
                                 "seed, runs or families differ)",
                                 path, m->paths[0]);
    }
    scm_status st = SCM_OK;
    for (int fj = 0; fj < fi; fj++)
        if (m->shard_n[fj] == m->shard_n[fi] && m->shard_i[fj] == m->shard_i[fi])
            st = scm_error_set(err, SCM_EINVAL, "'%s' and '%s' are the same shard %d/%d",
                               m->paths[fj], path, m->shard_i[fi], m->shard_n[fi]);
    return st;
}

/* A record line of file fi: one run of its shard, with its seed. */
static scm_status merge_record(merge_state *m, int fi, const char *p, long lineno,
                               scm_error *err)
{
    if (m->nrec == m->caprec) {
        long cap = m->caprec ? 2 * m->caprec : 1024;
        merge_rec *nr = realloc(m->recs, sizeof *nr * (size_t)cap);
        if (!nr)
            return scm_error_set(err, SCM_ENOMEM, "out of memory");
        m->recs = nr;
        m->caprec = cap;
    }
    scm_sweep_record *r = malloc(sizeof *r);
    if (!r)
        return scm_error_set(err, SCM_ENOMEM, "out of memory");
    scm_error e;
    if (scm_sweep_record_parse(p, r, &e)) {
        free(r);
        return scm_error_set(err, SCM_EINVAL, "'%s' line %ld: %s", m->paths[fi], lineno, e.msg);
    }
    if (r->index >= m->runs || r->index % m->shard_n[fi] != m->shard_i[fi] ||
        r->seed != scm_sweep_seed(m->base, r->index)) {
        scm_status st = scm_error_set(err, SCM_EINVAL,
                                      "'%s' line %ld: run %ld does not belong to this sweep "
                                      "(runs %ld, shard %d/%d, or its seed)",
                                      m->paths[fi], lineno, r->index, m->runs, m->shard_i[fi],
                                      m->shard_n[fi]);
        free(r);
        return st;
    }
    m->recs[m->nrec].r = r;
    m->recs[m->nrec].file = fi;
    m->nrec++;
    return SCM_OK;
}

/* Read file fi: its header, then its records, line by line. */
static scm_status merge_file(merge_state *m, int fi, scm_error *err)
{
    const char *path = m->paths[fi];
    FILE *f = scm_sweep_io_open(path, err);
    if (!f)
        return err ? err->code : SCM_EINVAL;
    char *buf = NULL;
    size_t cap = 0, n;
    int nl, rc;
    long lineno = 0;
    scm_status st = SCM_OK;
    while (!st && (rc = scm_sweep_io_line(f, &buf, &cap, &n, &nl)) > 0) {
        lineno++;
        if (!nl) {
            st = scm_error_set(err, SCM_EINVAL,
                               "'%s' line %ld: truncated line (no newline; a killed sweep? "
                               "finish it with scm sweep --resume)",
                               path, lineno);
            break;
        }
        if (lineno == 1)
            st = merge_header(m, fi, buf, err);
        else
            st = merge_record(m, fi, buf, lineno, err);
    }
    if (!st && rc < 0)
        st = scm_sweep_io_error(rc, path, lineno + 1, err);
    if (!st && lineno == 0)
        st = scm_error_set(err, SCM_EINVAL, "'%s' is empty", path);
    free(buf);
    fclose(f);
    return st;
}

/* The merged summary object, the missing runs counted and listed. */
static scm_status merge_summary(merge_state *m, scm_sweep_merge_result *res, scm_error *err)
{
    res->summary = scm_sweep_summary_alloc(m->runs);
    if (!res->summary)
        return scm_error_set(err, SCM_ENOMEM, "out of memory");
    for (long j = 0; j < m->nrec; j++)
        if (scm_sweep_summary_add(res->summary, m->recs[j].r))
            return scm_error_set(err, SCM_ENOMEM, "out of memory");
    res->json = cJSON_CreateObject();
    if (!res->json)
        return scm_error_set(err, SCM_ENOMEM, "out of memory");
    cJSON_AddStringToObject(res->json, "command", "merge");
    cJSON_AddItemToObject(res->json, "sweep", m->ref);
    m->ref = NULL;
    cJSON *sj = scm_sweep_summary_json(res->summary);
    if (!sj)
        return scm_error_set(err, SCM_ENOMEM, "out of memory");
    cJSON_AddItemToObject(res->json, "summary", sj);
    /* Missing runs: indices in [0, runs) not present. */
    cJSON *mi = cJSON_AddObjectToObject(sj, "missing");
    cJSON_AddNumberToObject(mi, "count", (double)(m->runs - m->nrec));
    cJSON *first = cJSON_AddArrayToObject(mi, "first");
    long j = 0, listed = 0;
    for (long i = 0; i < m->runs && listed < 20; i++) {
        while (j < m->nrec && m->recs[j].r->index < i)
            j++;
        if (j >= m->nrec || m->recs[j].r->index != i) {
            cJSON_AddItemToArray(first, cJSON_CreateNumber((double)i));
            if (listed == 0)
                res->first_missing = i;
            listed++;
        }
    }
    res->runs = m->runs;
    res->records = m->nrec;
    res->missing = m->runs - m->nrec;
    return SCM_OK;
}

scm_status scm_sweep_merge(const char *const *paths, int n, scm_sweep_merge_result *res,
                           scm_error *err)
{
    memset(res, 0, sizeof *res);
    res->first_missing = -1;
    if (!paths || n < 1)
        return scm_error_set(err, SCM_EINVAL, "no runs files to merge");
    merge_state m;
    memset(&m, 0, sizeof m);
    m.paths = paths;
    m.shard_i = calloc((size_t)n, sizeof *m.shard_i);
    m.shard_n = calloc((size_t)n, sizeof *m.shard_n);
    scm_status st = SCM_OK;
    if (!m.shard_i || !m.shard_n)
        st = scm_error_set(err, SCM_ENOMEM, "out of memory");
    for (int fi = 0; fi < n && !st; fi++)
        st = merge_file(&m, fi, err);
    if (!st) {
        if (m.nrec > 1) /* a header-only file has no records (m.recs NULL) */
            qsort(m.recs, (size_t)m.nrec, sizeof *m.recs, merge_cmp);
        for (long j = 1; j < m.nrec && !st; j++)
            if (m.recs[j].r->index == m.recs[j - 1].r->index)
                st = scm_error_set(err, SCM_EINVAL, "run %ld appears twice ('%s' and '%s')",
                                   m.recs[j].r->index, paths[m.recs[j - 1].file],
                                   paths[m.recs[j].file]);
    }
    if (!st)
        st = merge_summary(&m, res, err);
    for (long k = 0; k < m.nrec; k++)
        free(m.recs[k].r);
    free(m.recs);
    cJSON_Delete(m.ref);
    free(m.ref_text);
    free(m.shard_i);
    free(m.shard_n);
    if (st) {
        scm_sweep_merge_result_free(res);
        res->first_missing = -1;
    }
    return st;
}

void scm_sweep_merge_result_free(scm_sweep_merge_result *res)
{
    if (!res)
        return;
    cJSON_Delete(res->json);
    scm_sweep_summary_free(res->summary);
    memset(res, 0, sizeof *res);
}
