/* cmd_compare_rules.c: `scm compare --rule R1,R2,...`: one `scm compare`
 * per training rule (the same M, K list, runs, seeds, config and options,
 * with --set rule=R and the prefix PREFIX.R), then one table across rules:
 * per rule and K, the fraction of runs reaching the global minimum (eps
 * below eps_stop) and the fraction not converged, with 95% Wilson
 * intervals, the fraction ending with no anti-aligned student, and the
 * most frequent other end class (docs/rules.md).  Writes PREFIX.rules.json
 * and PREFIX.rules.md atomically, and PREFIX.rules.png (plot_rules.py)
 * unless --no-plots. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_plot.h"
#include "cli_util.h"
#include "commands.h"
#include "scm/output.h"
#include "scm/rule.h"
#include "scm/sweep.h"
#include "scm_version.h"

#define ME "scm compare"
#define MAX_RULES 8
#define MAX_K 64

/* One (rule, K) cell read from PREFIX.R.K<K>.summary.json. */
typedef struct {
    long runs, global, not_conv, top_count;
    long anti0; /* converged runs with no anti-aligned student */
    char top[96];
} cell;

static int read_cell(const char *path, cell *c)
{
    memset(c, 0, sizeof *c);
    cJSON *s = cli_read_json(path);
    if (!s) {
        fprintf(stderr, ME ": cannot read the summary '%s'\n", path);
        return -1;
    }
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
        fprintf(stderr, ME ": '%s' is not a sweep summary (needs done, classes and by_anti)\n",
                path);
    return ok ? 0 : -1;
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

static void md_frac(char **buf, size_t *len, size_t *cap, long k, long n)
{
    double lo, hi;
    scm_sweep_wilson(k, n, &lo, &hi);
    cli_buf_printf(buf, len, cap, " %.4f [%.4f, %.4f] (%ld) |", n ? (double)k / (double)n : 0.0,
                   lo, hi, k);
}

/* One Markdown table: per rule (rows) and K (columns), the fraction key of
 * the JSON cells. */
static void md_key_table(char **md, size_t *len, size_t *cap, const cJSON *rows, const long *Ks,
                         int nK, const char *key)
{
    cli_buf_printf(md, len, cap, "| rule |");
    for (int j = 0; j < nK; j++)
        cli_buf_printf(md, len, cap, " K = %ld |", Ks[j]);
    cli_buf_printf(md, len, cap, "\n| --- |");
    for (int j = 0; j < nK; j++)
        cli_buf_printf(md, len, cap, " --- |");
    cli_buf_printf(md, len, cap, "\n");
    for (const cJSON *o = rows->child; o; o = o->next) {
        cli_buf_printf(md, len, cap, "| %s |",
                       cJSON_GetObjectItemCaseSensitive(o, "rule")->valuestring);
        for (const cJSON *e = cJSON_GetObjectItemCaseSensitive(o, "K")->child; e; e = e->next) {
            const cJSON *f = cJSON_GetObjectItemCaseSensitive(e, key);
            md_frac(md, len, cap, (long)cJSON_GetObjectItemCaseSensitive(f, "count")->valuedouble,
                    (long)cJSON_GetObjectItemCaseSensitive(e, "runs")->valuedouble);
        }
        cli_buf_printf(md, len, cap, "\n");
    }
}

int scm_cmd_compare_rules(int argc, char **argv)
{
    const char *rules_arg = NULL, *prefix = NULL;
    long M = -1, Ks[MAX_K];
    int nK = 0, no_plots = 0, quiet = 0;
    /* the arguments of each per-rule compare: ours less --rule and -o */
    char **sub = calloc((size_t)argc + 8, sizeof *sub);
    int ns = 0;
    if (!sub) {
        fprintf(stderr, ME ": out of memory\n");
        return 1;
    }
    sub[ns++] = argv[0];
    for (int i = 1; i < argc; i++) {
        if ((!strcmp(argv[i], "--rule") || !strcmp(argv[i], "-o")) && i + 1 < argc) {
            if (argv[i][1] == '-')
                rules_arg = argv[i + 1];
            else
                prefix = argv[i + 1];
            i++;
            continue;
        }
        no_plots |= !strcmp(argv[i], "--no-plots");
        quiet |= !strcmp(argv[i], "-q") || !strcmp(argv[i], "--quiet");
        if (!strcmp(argv[i], "--M") && i + 1 < argc)
            cli_parse_long(argv[i + 1], 1, 100000, &M);
        if (!strcmp(argv[i], "--K") && i + 1 < argc) {
            char buf[512];
            snprintf(buf, sizeof buf, "%s", argv[i + 1]);
            for (char *t = strtok(buf, ","); t && nK < MAX_K; t = strtok(NULL, ","))
                if (cli_parse_long(t, 1, 100000, &Ks[nK]))
                    nK++;
        }
        sub[ns++] = argv[i];
    }
    int rc = 2;
    char rbuf[256], *rules[MAX_RULES], pbuf[64];
    int nr = 0;
    if (!rules_arg) {
        fprintf(stderr, ME ": --rule needs a list of rules (%s)\n", scm_rule_names());
        goto out;
    }
    snprintf(rbuf, sizeof rbuf, "%s", rules_arg);
    for (char *t = strtok(rbuf, ","); t; t = strtok(NULL, ",")) {
        if (nr == MAX_RULES || !scm_rule_find(t)) {
            fprintf(stderr, ME ": --rule: '%s' is not a rule (%s; at most %d)\n", t,
                    scm_rule_names(), MAX_RULES);
            goto out;
        }
        for (int j = 0; j < nr; j++)
            if (!strcmp(rules[j], t)) {
                fprintf(stderr, ME ": --rule: '%s' given twice\n", t);
                goto out;
            }
        rules[nr++] = t;
    }
    if (nr == 0 || M < 0 || nK == 0) {
        fprintf(stderr, ME ": --rule needs --M, --K and --runs (see scm compare --help)\n");
        goto out;
    }
    if (!prefix) {
        snprintf(pbuf, sizeof pbuf, "compare_M%ld", M);
        prefix = pbuf;
    }
    /* one compare per rule */
    char setv[MAX_RULES][96], outv[MAX_RULES][1024];
    if (strlen(prefix) > 900) {
        fprintf(stderr, ME ": -o: the prefix is longer than 900 characters\n");
        goto out;
    }
    for (int r = 0; r < nr; r++) {
        snprintf(setv[r], sizeof setv[r], "rule=%s", rules[r]);
        snprintf(outv[r], sizeof outv[r], "%.900s.%.64s", prefix, rules[r]);
        int n = ns;
        sub[n++] = "--set";
        sub[n++] = setv[r];
        sub[n++] = "-o";
        sub[n++] = outv[r];
        sub[n] = NULL;
        printf("== rule %s: scm compare -o %s\n", rules[r], outv[r]);
        fflush(stdout);
        int c = scm_cmd_compare(n, sub);
        if (c) {
            fprintf(stderr, ME ": the compare of rule %s ended with status %d\n", rules[r], c);
            rc = c;
            goto out;
        }
    }
    /* the table across rules */
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "scmode_version", SCM_VERSION);
    cJSON_AddStringToObject(root, "command", "compare --rule");
    cJSON_AddNumberToObject(root, "M", (double)M);
    cJSON *ka = cJSON_AddArrayToObject(root, "K");
    for (int j = 0; j < nK; j++)
        cJSON_AddItemToArray(ka, cJSON_CreateNumber((double)Ks[j]));
    cJSON *rows = cJSON_AddArrayToObject(root, "rules");
    size_t len = 0, cap = 4096;
    char *md = malloc(cap);
    if (!md) {
        cJSON_Delete(root);
        fprintf(stderr, ME ": out of memory\n");
        rc = 1;
        goto out;
    }
    md[0] = '\0';
    cli_buf_printf(&md, &len, &cap,
                   "# Reaching the global minimum, per training rule: M = %ld\n\n"
                   "Fraction of runs whose loss fell below eps_stop, with 95%% Wilson "
                   "intervals and counts; the per-rule reports are PREFIX.<rule>.md.\n\n"
                   "| rule |",
                   M);
    for (int j = 0; j < nK; j++)
        cli_buf_printf(&md, &len, &cap, " K = %ld |", Ks[j]);
    cli_buf_printf(&md, &len, &cap, "\n| --- |");
    for (int j = 0; j < nK; j++)
        cli_buf_printf(&md, &len, &cap, " --- |");
    cli_buf_printf(&md, &len, &cap, "\n");
    char ncmd[8192] = "";
    size_t nlen = 0;
    rc = 0;
    for (int r = 0; r < nr && !rc; r++) {
        cJSON *o = cJSON_CreateObject(), *cells = cJSON_AddArrayToObject(o, "K");
        cJSON_AddStringToObject(o, "rule", rules[r]);
        cJSON_AddItemToArray(rows, o);
        cli_buf_printf(&md, &len, &cap, "| %s |", rules[r]);
        for (int j = 0; j < nK && !rc; j++) {
            char path[1200];
            snprintf(path, sizeof path, "%.1023s.K%ld.summary.json", outv[r], Ks[j]);
            cell c;
            if (read_cell(path, &c)) {
                rc = 1;
                break;
            }
            cJSON *e = cJSON_CreateObject();
            cJSON_AddNumberToObject(e, "K", (double)Ks[j]);
            cJSON_AddNumberToObject(e, "runs", (double)c.runs);
            cJSON_AddItemToObject(e, "global_minimum", frac_json(c.global, c.runs));
            cJSON_AddItemToObject(e, "no_anti_aligned", frac_json(c.anti0, c.runs));
            cJSON_AddItemToObject(e, "not_converged", frac_json(c.not_conv, c.runs));
            cJSON_AddStringToObject(e, "most_frequent_other", c.top);
            cJSON_AddItemToObject(e, "most_frequent_other_count", frac_json(c.top_count, c.runs));
            cJSON_AddItemToArray(cells, e);
            md_frac(&md, &len, &cap, c.global, c.runs);
            if (c.not_conv && nlen < sizeof ncmd - 200)
                nlen += (size_t)snprintf(ncmd + nlen, sizeof ncmd - nlen,
                                         "- %s, K = %ld: %ld of %ld runs not converged\n",
                                         rules[r], Ks[j], c.not_conv, c.runs);
        }
        cli_buf_printf(&md, &len, &cap, "\n");
    }
    if (!rc) {
        /* the most frequent other end of each cell, from the JSON rows */
        cli_buf_printf(&md, &len, &cap, "\nMost frequent other end class (count):\n\n| rule |");
        for (int j = 0; j < nK; j++)
            cli_buf_printf(&md, &len, &cap, " K = %ld |", Ks[j]);
        cli_buf_printf(&md, &len, &cap, "\n| --- |");
        for (int j = 0; j < nK; j++)
            cli_buf_printf(&md, &len, &cap, " --- |");
        cli_buf_printf(&md, &len, &cap, "\n");
        for (const cJSON *o = rows->child; o; o = o->next) {
            cli_buf_printf(&md, &len, &cap, "| %s |",
                           cJSON_GetObjectItemCaseSensitive(o, "rule")->valuestring);
            for (const cJSON *e = cJSON_GetObjectItemCaseSensitive(o, "K")->child; e; e = e->next) {
                const char *top = cJSON_GetObjectItemCaseSensitive(e, "most_frequent_other")->valuestring;
                double n = cJSON_GetObjectItemCaseSensitive(
                               cJSON_GetObjectItemCaseSensitive(e, "most_frequent_other_count"), "count")
                               ->valuedouble;
                cli_buf_printf(&md, &len, &cap, " %s (%.0f) |", *top ? top : "-", n);
            }
            cli_buf_printf(&md, &len, &cap, "\n");
        }
        cli_buf_printf(&md, &len, &cap,
                       "\nConverged runs that end with no anti-aligned student (k1 = 0). "
                       "For the manifold rules (normalised: Q_kk = 1; stiefel: Q = I) with K > M "
                       "the loss cannot reach 0 with v = 1, and this is their best end "
                       "(docs/rules.md):\n\n");
        md_key_table(&md, &len, &cap, rows, Ks, nK, "no_anti_aligned");
        cli_buf_printf(&md, &len, &cap,
                       "\nThe end classes of gd are its fixed-point families; the other rules "
                       "have no family list (their fixed points differ from gd's) and are "
                       "classed by their anti-aligned count.\n");
        cli_buf_printf(&md, &len, &cap, "\n%s", nlen ? "Not converged (t_max or max_steps):\n\n" : "");
        cli_buf_printf(&md, &len, &cap, "%s", ncmd);
        char path[1200];
        scm_error err;
        snprintf(path, sizeof path, "%.900s.rules.json", prefix);
        if (scm_output_write_json(path, root, 0, &err) == SCM_OK) {
            snprintf(path, sizeof path, "%.900s.rules.md", prefix);
            if (scm_output_write_atomic(path, md, len, &err) == SCM_OK) {
                printf("wrote      %s.rules.json, %s.rules.md\n", prefix, prefix);
                snprintf(path, sizeof path, "%.900s.rules.json", prefix);
                if (!no_plots)
                    rc = cli_plot(ME, "plot_rules.py", path, quiet);
            } else {
                rc = 1;
            }
        } else {
            rc = 1;
        }
        if (rc)
            fprintf(stderr, ME ": %s\n", err.msg);
    }
    free(md);
    cJSON_Delete(root);
out:
    free(sub);
    return rc;
}
