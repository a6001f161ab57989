/* test_compare_opts.c: what a comparison's options must satisfy before it
 * runs (compare_opts.c).  scm_compare_check_outputs on every file a
 * comparison writes against its inputs (by name and through a hard link,
 * the families file given under the very name of K's allowed, a directory
 * refused by scm_output_check_path), and scm_compare_rules_list on lists
 * checked against scm_rule_find. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "scm/compare.h"
#include "scm/rule.h"
#include "testutil.h"

static void opts_for(scm_compare_opts *o, const char *prefix, const char *config)
{
    scm_compare_opts_default(o);
    o->M = 2;
    o->nK = 2;
    o->K[0] = 2;
    o->K[1] = 3;
    o->runs = 4;
    o->prefix = prefix;
    o->config_name = config;
}

static void test_outputs(const char *dir)
{
    scm_error err;
    scm_compare_opts o;
    char cfg[512], pfx[512], link_name[600], fam[600];
    snprintf(cfg, sizeof cfg, "%s/base.json", dir);
    snprintf(pfx, sizeof pfx, "%s/cmp", dir);
    FILE *f = fopen(cfg, "w");
    CHECK(f != NULL, "cannot create %s", cfg);
    if (!f)
        return;
    fputs("{}\n", f);
    fclose(f);

    opts_for(&o, pfx, cfg);
    CHECK(scm_compare_check_outputs(&o, &err) == SCM_OK, "distinct files refused: %s", err.msg);
    opts_for(&o, pfx, NULL);
    CHECK(scm_compare_check_outputs(&o, &err) == SCM_OK, "no config: %s", err.msg);

    /* every output name, in turn, made the config */
    const char *names[] = {".json", ".md", ".K2.config.json", ".K3.runs.jsonl",
                           ".K2.summary.json", ".K3.families.json"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        char out[700];
        snprintf(out, sizeof out, "%s%s", pfx, names[i]);
        opts_for(&o, pfx, out);
        CHECK(scm_compare_check_outputs(&o, &err) == SCM_EINVAL && strstr(err.msg, out) &&
                  strstr(err.msg, "refused"),
              "the output %s as the config: %s", names[i], err.msg);
    }
    /* the same file under another name (a hard link to the config) */
    snprintf(link_name, sizeof link_name, "%s.K3.summary.json", pfx);
    CHECK(link(cfg, link_name) == 0, "link");
    opts_for(&o, pfx, cfg);
    CHECK(scm_compare_check_outputs(&o, &err) == SCM_EINVAL && strstr(err.msg, link_name),
          "a hard link to the config: %s", err.msg);
    unlink(link_name);

    /* families: K's own name is read, not written; as another K's output refused */
    snprintf(fam, sizeof fam, "%s.K2.families.json", pfx);
    opts_for(&o, pfx, cfg);
    o.families[0] = fam;
    CHECK(scm_compare_check_outputs(&o, &err) == SCM_OK, "K's own families name: %s", err.msg);
    snprintf(fam, sizeof fam, "%s.K2.runs.jsonl", pfx);
    CHECK(scm_compare_check_outputs(&o, &err) == SCM_EINVAL && strstr(err.msg, fam),
          "a families file that K's runs file would overwrite: %s", err.msg);
    snprintf(fam, sizeof fam, "%s.K3.families.json", pfx);
    CHECK(scm_compare_check_outputs(&o, &err) == SCM_EINVAL,
          "K = 2's families file as K = 3's output");

    /* a directory where the report goes */
    char rep[600];
    snprintf(rep, sizeof rep, "%s.json", pfx);
    CHECK(mkdir(rep, 0700) == 0, "mkdir");
    opts_for(&o, pfx, cfg);
    CHECK(scm_compare_check_outputs(&o, &err) != SCM_OK, "a directory as the report");
    rmdir(rep);
    unlink(cfg);
}

static void test_rules(void)
{
    scm_error err;
    const char *rules[8];
    char list[128];
    snprintf(list, sizeof list, "gd,two_layer,stiefel");
    int n = scm_compare_rules_list(list, rules, 8, &err);
    CHECK(n == 3 && !strcmp(rules[0], "gd") && !strcmp(rules[2], "stiefel"),
          "three rules: %d", n);
    for (int i = 0; i < n; i++)
        CHECK(scm_rule_find(rules[i]) != NULL, "'%s' is not a rule", rules[i]);
    snprintf(list, sizeof list, "gd,adam");
    CHECK(scm_compare_rules_list(list, rules, 8, &err) == -1 && strstr(err.msg, "'adam'"),
          "an unknown rule: %s", err.msg);
    snprintf(list, sizeof list, "gd,normalised,gd");
    CHECK(scm_compare_rules_list(list, rules, 8, &err) == -1 && strstr(err.msg, "twice"),
          "a rule twice: %s", err.msg);
    snprintf(list, sizeof list, "gd,normalised");
    CHECK(scm_compare_rules_list(list, rules, 1, &err) == -1 && strstr(err.msg, "at most 1"),
          "more than cap: %s", err.msg);
    snprintf(list, sizeof list, ",,");
    CHECK(scm_compare_rules_list(list, rules, 8, &err) == 0, "an empty list has no rules");
}

int main(void)
{
    char dir[] = "/tmp/scm_test_compare_opts_XXXXXX";
    CHECK(mkdtemp(dir) != NULL, "mkdtemp");
    test_outputs(dir);
    rmdir(dir);
    test_rules();
    return TEST_SUMMARY();
}
