/* cmd_compare_rules.c: `scm compare --rule R1,R2,...`: one `scm compare`
 * per training rule (the same M, K list, runs, seeds, config and options,
 * with --set rule=R and the prefix PREFIX.R), then one table across rules
 * (scm_compare_rules_table, compare.h; docs/rules.md).  Writes
 * PREFIX.rules.json and PREFIX.rules.md atomically, and PREFIX.rules.png
 * (plot_rules.py) unless --no-plots. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_plot.h"
#include "cli_util.h"
#include "commands.h"
#include "scm/compare.h"
#include "scm/output.h"
#include "scm/rule.h"

#define ME "scm compare"
#define MAX_RULES 8
#define MAX_K 64

int scm_cmd_compare_rules(int argc, char **argv, const cli_executor *ex)
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
        if ((!strcmp(argv[i], "--rule") || !strcmp(argv[i], "-o") ||
             !strcmp(argv[i], "--prefix")) && i + 1 < argc) {
            if (!strcmp(argv[i], "--rule"))
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
    char rbuf[256], pbuf[64];
    const char *rules[MAX_RULES];
    int nr = 0;
    scm_error err;
    if (!rules_arg) {
        fprintf(stderr, ME ": --rule needs a list of rules (%s)\n", scm_rule_names());
        goto out;
    }
    snprintf(rbuf, sizeof rbuf, "%s", rules_arg);
    if ((nr = scm_compare_rules_list(rbuf, rules, MAX_RULES, &err)) < 0) {
        fprintf(stderr, ME ": %s\n", err.msg);
        goto out;
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
        fprintf(stderr, ME ": --prefix: longer than 900 characters\n");
        goto out;
    }
    for (int r = 0; r < nr; r++) {
        snprintf(setv[r], sizeof setv[r], "rule=%s", rules[r]);
        snprintf(outv[r], sizeof outv[r], "%.900s.%.64s", prefix, rules[r]);
        int n = ns;
        sub[n++] = "--set";
        sub[n++] = setv[r];
        sub[n++] = "--prefix";
        sub[n++] = outv[r];
        sub[n] = NULL;
        printf("== rule %s: scm compare -o %s\n", rules[r], outv[r]);
        fflush(stdout);
        int c = scm_cmd_compare(n, sub, ex);
        if (c) {
            fprintf(stderr, ME ": the compare of rule %s ended with status %d\n", rules[r], c);
            rc = c;
            goto out;
        }
    }
    /* the table across rules */
    cJSON *root = NULL;
    char *md = NULL;
    if (scm_compare_rules_table(prefix, M, Ks, nK, rules, nr, &root, &md,
                                &err)) {
        rc = cli_fail(ME, &err, 1);
        goto out;
    }
    char pj[1200], pm[1200];
    snprintf(pj, sizeof pj, "%.900s.rules.json", prefix);
    snprintf(pm, sizeof pm, "%.900s.rules.md", prefix);
    rc = cli_write_json_with(ME, pj, root, 0, pm, md, strlen(md));
    if (!rc) {
        printf("wrote      %s.rules.json, %s.rules.md\n", prefix, prefix);
        if (!no_plots)
            rc = cli_plot(ME, "plot_rules.py", pj, NULL, quiet);
    }
    free(md);
    cJSON_Delete(root);
out:
    free(sub);
    return rc;
}
