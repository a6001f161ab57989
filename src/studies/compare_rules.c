/* compare_rules.c: the table across training rules of `scm compare
 * --rule R1,R2,...` (compare.h; docs/rules.md): per rule and K, read from
 * the summaries of the per-rule compares (PREFIX.<rule>.K<K>.summary.json),
 * the fraction of runs reaching the global minimum (eps below eps_stop)
 * and not converged, with 95% Wilson intervals, the fraction ending with
 * no anti-aligned student, and the most frequent other end class; as the
 * object of PREFIX.rules.json and the text of PREFIX.rules.md. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scm_version.h"
#include "studies/compare_internal.h"

/* One (rule, K) cell read from PREFIX.R.K<K>.summary.json. */
typedef struct {
    long runs, global, not_conv, top_count;
    long anti0; /* converged runs with no anti-aligned student */
    char top[96];
} cell;

static scm_status read_cell(const char *path, cell *c, scm_error *err)
{
    memset(c, 0, sizeof *c);
    cJSON *s = scm_compare_read_json(path);
    if (!s)
        return scm_error_set(err, SCM_EIO, "cannot read the summary '%s'", path);
    const cJSON *done = cJSON_GetObjectItemCaseSensitive(s, "done"),
                *cls = cJSON_GetObjectItemCaseSensitive(s, "classes"),
                *anti = cJSON_GetObjectItemCaseSensitive(s, "by_anti");
    int ok = cJSON_IsNumber(done) && cJSON_IsArray(cls) && cJSON_IsArray(anti);
    int matched = 0; /* some run was matched to a family */
    c->runs = ok ? (long)done->valuedouble : 0;
    for (const cJSON *it = ok ? cls->child : NULL; it; it = it->next) {
        const cJSON *fam = cJSON_GetObjectItemCaseSensitive(it, "family");
        /* the global minimum is recognised by its loss, without a family list */
        matched |= cJSON_IsString(fam) && strcmp(fam->valuestring, "global_minimum") != 0;
    }
    for (const cJSON *it = ok ? cls->child : NULL; it; it = it->next) {
        const cJSON *name = cJSON_GetObjectItemCaseSensitive(it, "class"),
                    *count = cJSON_GetObjectItemCaseSensitive(it, "count");
        if (!cJSON_IsString(name) || !cJSON_IsNumber(count)) {
            ok = 0;
            break;
        }
        long n = (long)count->valuedouble;
        if (!matched && strcmp(name->valuestring, "unmatched") == 0)
            continue; /* no families (a rule other than gd): by anti count below */
        if (strncmp(name->valuestring, "global_minimum", 14) == 0)
            c->global += n;
        else if (strcmp(name->valuestring, "not_converged") == 0)
            c->not_conv += n;
        else if (n > c->top_count) {
            c->top_count = n;
            snprintf(c->top, sizeof c->top, "%s", name->valuestring);
        }
    }
    for (const cJSON *it = ok ? anti->child : NULL; it; it = it->next) {
        const cJSON *a = cJSON_GetObjectItemCaseSensitive(it, "anti"),
                    *count = cJSON_GetObjectItemCaseSensitive(it, "count");
        if (!cJSON_IsNumber(a) || !cJSON_IsNumber(count)) {
            ok = 0;
            break;
        }
        long n = (long)count->valuedouble;
        if (a->valuedouble == 0)
            c->anti0 = n;
        else if (!matched && n > c->top_count) {
            c->top_count = n;
            snprintf(c->top, sizeof c->top, "%d anti-aligned", (int)a->valuedouble);
        }
    }
    cJSON_Delete(s);
    if (!ok)
        return scm_error_set(err, SCM_EINVAL,
                             "'%s' is not a sweep summary (needs done, classes and by_anti)", path);
    return SCM_OK;
}

static cJSON *frac_json(long k, long n)
{
    double lo, hi;
    scm_sweep_wilson(k, n, &lo, &hi);
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "count", (double)k);
    cJSON_AddNumberToObject(o, "fraction", n ? (double)k / (double)n : 0.0);
    cJSON *w = cJSON_AddArrayToObject(o, "wilson95");
    cJSON_AddItemToArray(w, cJSON_CreateNumber(lo));
    cJSON_AddItemToArray(w, cJSON_CreateNumber(hi));
    return o;
}

static void md_frac(md_buf *b, long k, long n)
{
    double lo, hi;
    scm_sweep_wilson(k, n, &lo, &hi);
    scm_compare_md_printf(b, " %.4f [%.4f, %.4f] (%ld) |", n ? (double)k / (double)n : 0.0,
                   lo, hi, k);
}

/* One Markdown table: per rule (rows) and K (columns), the fraction key of
 * the JSON cells. */
static void md_key_table(md_buf *md, const cJSON *rows, const long *Ks, int nK, const char *key)
{
    scm_compare_md_printf(md, "| rule |");
    for (int j = 0; j < nK; j++)
        scm_compare_md_printf(md, " K = %ld |", Ks[j]);
    scm_compare_md_printf(md, "\n| --- |");
    for (int j = 0; j < nK; j++)
        scm_compare_md_printf(md, " --- |");
    scm_compare_md_printf(md, "\n");
    for (const cJSON *o = rows->child; o; o = o->next) {
        scm_compare_md_printf(md, "| %s |",
                       cJSON_GetObjectItemCaseSensitive(o, "rule")->valuestring);
        for (const cJSON *e = cJSON_GetObjectItemCaseSensitive(o, "K")->child; e; e = e->next) {
            const cJSON *f = cJSON_GetObjectItemCaseSensitive(e, key);
            md_frac(md, (long)cJSON_GetObjectItemCaseSensitive(f, "count")->valuedouble,
                    (long)cJSON_GetObjectItemCaseSensitive(e, "runs")->valuedouble);
        }
        scm_compare_md_printf(md, "\n");
    }
}

/* The rows of the JSON and the first Markdown table, one rule at a time;
 * ncmd lists the cells with unconverged runs. */
static scm_status rules_rows(const char *prefix, const long *Ks, int nK, const char *const *rules,
                             int nr, cJSON *rows, md_buf *md, char *ncmd, size_t ncap,
                             scm_error *err)
{
    size_t nlen = 0;
    scm_status st = SCM_OK;
    for (int r = 0; r < nr && !st; r++) {
        cJSON *o = cJSON_CreateObject(), *cells = cJSON_AddArrayToObject(o, "K");
        cJSON_AddStringToObject(o, "rule", rules[r]);
        cJSON_AddItemToArray(rows, o);
        scm_compare_md_printf(md, "| %s |", rules[r]);
        for (int j = 0; j < nK && !st; j++) {
            char outv[1024], path[1200];
            snprintf(outv, sizeof outv, "%.900s.%.64s", prefix, rules[r]);
            snprintf(path, sizeof path, "%.1023s.K%ld.summary.json", outv, Ks[j]);
            cell c;
            if ((st = read_cell(path, &c, err)))
                break;
            cJSON *e = cJSON_CreateObject();
            cJSON_AddNumberToObject(e, "K", (double)Ks[j]);
            cJSON_AddNumberToObject(e, "runs", (double)c.runs);
            cJSON_AddItemToObject(e, "global_minimum", frac_json(c.global, c.runs));
            cJSON_AddItemToObject(e, "no_anti_aligned", frac_json(c.anti0, c.runs));
            cJSON_AddItemToObject(e, "not_converged", frac_json(c.not_conv, c.runs));
            cJSON_AddStringToObject(e, "most_frequent_other", c.top);
            cJSON_AddItemToObject(e, "most_frequent_other_count", frac_json(c.top_count, c.runs));
            cJSON_AddItemToArray(cells, e);
            md_frac(md, c.global, c.runs);
            if (c.not_conv && nlen < ncap - 200)
                nlen += (size_t)snprintf(ncmd + nlen, ncap - nlen,
                                         "- %s, K = %ld: %ld of %ld runs not converged\n",
                                         rules[r], Ks[j], c.not_conv, c.runs);
        }
        scm_compare_md_printf(md, "\n");
    }
    return st;
}

/* The rest of the Markdown: the most frequent other ends, the runs with no
 * anti-aligned student, the notes. */
static void rules_md_rest(const cJSON *rows, const long *Ks, int nK, const char *ncmd,
                          md_buf *md)
{
    size_t nlen = strlen(ncmd);
    /* the most frequent other end of each cell, from the JSON rows */
    scm_compare_md_printf(md, "\nMost frequent other end class (count):\n\n| rule |");
    for (int j = 0; j < nK; j++)
        scm_compare_md_printf(md, " K = %ld |", Ks[j]);
    scm_compare_md_printf(md, "\n| --- |");
    for (int j = 0; j < nK; j++)
        scm_compare_md_printf(md, " --- |");
    scm_compare_md_printf(md, "\n");
    for (const cJSON *o = rows->child; o; o = o->next) {
        scm_compare_md_printf(md, "| %s |",
                       cJSON_GetObjectItemCaseSensitive(o, "rule")->valuestring);
        for (const cJSON *e = cJSON_GetObjectItemCaseSensitive(o, "K")->child; e; e = e->next) {
            const char *top = cJSON_GetObjectItemCaseSensitive(e, "most_frequent_other")->valuestring;
            double n = cJSON_GetObjectItemCaseSensitive(
                           cJSON_GetObjectItemCaseSensitive(e, "most_frequent_other_count"), "count")
                           ->valuedouble;
            scm_compare_md_printf(md, " %s (%.0f) |", *top ? top : "-", n);
        }
        scm_compare_md_printf(md, "\n");
    }
    scm_compare_md_printf(md,
                   "\nConverged runs that end with no anti-aligned student (k1 = 0). "
                   "For the manifold rules (normalised: Q_kk = 1; stiefel: Q = I) with K > M "
                   "the loss cannot reach 0 with v = 1, and this is their best end "
                   "(docs/rules.md):\n\n");
    md_key_table(md, rows, Ks, nK, "no_anti_aligned");
    scm_compare_md_printf(md,
                   "\nThe end classes of gd are its fixed-point families; the other rules "
                   "have no family list (their fixed points differ from gd's) and are "
                   "classed by their anti-aligned count.\n");
    scm_compare_md_printf(md, "\n%s", nlen ? "Not converged (t_max or max_steps):\n\n" : "");
    scm_compare_md_printf(md, "%s", ncmd);
}

scm_status scm_compare_rules_table(const char *prefix, long M, const long *Ks, int nK,
                                   const char *const *rules, int nr, cJSON **json, char **md_out,
                                   scm_error *err)
{
    *json = NULL;
    *md_out = NULL;
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "scmode_version", SCM_VERSION);
    cJSON_AddStringToObject(root, "command", "compare --rule");
    cJSON_AddNumberToObject(root, "M", (double)M);
    cJSON *ka = cJSON_AddArrayToObject(root, "K");
    for (int j = 0; j < nK; j++)
        cJSON_AddItemToArray(ka, cJSON_CreateNumber((double)Ks[j]));
    cJSON *rows = cJSON_AddArrayToObject(root, "rules");
    md_buf mdb = {malloc(4096), 0, 4096, 0}, *md = &mdb;
    if (!mdb.p) {
        cJSON_Delete(root);
        return scm_error_set(err, SCM_ENOMEM, "out of memory");
    }
    mdb.p[0] = '\0';
    scm_compare_md_printf(md,
                   "# Reaching the global minimum, per training rule: M = %ld\n\n"
                   "Fraction of runs whose loss fell below eps_stop, with 95%% Wilson "
                   "intervals and counts; the per-rule reports are PREFIX.<rule>.md.\n\n"
                   "| rule |",
                   M);
    for (int j = 0; j < nK; j++)
        scm_compare_md_printf(md, " K = %ld |", Ks[j]);
    scm_compare_md_printf(md, "\n| --- |");
    for (int j = 0; j < nK; j++)
        scm_compare_md_printf(md, " --- |");
    scm_compare_md_printf(md, "\n");
    char ncmd[8192] = "";
    scm_status st = rules_rows(prefix, Ks, nK, rules, nr, rows, md, ncmd, sizeof ncmd, err);
    if (!st)
        rules_md_rest(rows, Ks, nK, ncmd, md);
    if (!st && (!root || md->oom))
        st = scm_error_set(err, SCM_ENOMEM, "out of memory");
    if (st) {
        cJSON_Delete(root);
        free(md->p);
        return st;
    }
    *json = root;
    *md_out = md->p;
    return SCM_OK;
}
