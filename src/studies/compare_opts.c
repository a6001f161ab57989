/* compare_opts.c: what a comparison's options must satisfy before it runs
 * (compare.h): no file it writes may be one of its inputs or a path the
 * output module refuses, and a --rule list names distinct known rules.
 * Checked before any file is touched, so that a refused command leaves
 * nothing behind. */
#include <stdio.h>
#include <string.h>

#include "scm/compare.h"
#include "scm/output.h"
#include "scm/rule.h"

scm_status scm_compare_check_outputs(const scm_compare_opts *o, scm_error *err)
{
    static const char *const sfx[] = {".config.json", ".runs.jsonl", ".summary.json",
                                      ".families.json"};
    const char *ins[SCM_COMPARE_MAX_K + 1];
    int nin = 0;
    ins[nin++] = o->config_name;
    for (int j = 0; j < o->nK; j++)
        ins[nin++] = o->families[j];
    char path[4200];
    scm_status st;
    snprintf(path, sizeof path, "%s.json", o->prefix);
    if ((st = scm_output_check_out(path, ins, nin, err)))
        return st;
    snprintf(path, sizeof path, "%s.md", o->prefix);
    if ((st = scm_output_check_out(path, ins, nin, err)))
        return st;
    for (int j = 0; j < o->nK; j++)
        for (int q = 0; q < 4; q++) {
            snprintf(path, sizeof path, "%s.K%ld%s", o->prefix, o->K[j], sfx[q]);
            if (q == 3 && o->families[j] && strcmp(path, o->families[j]) == 0)
                continue; /* the families given are read, this name is not written */
            for (int i = 0; i < nin; i++)
                if (ins[i] && scm_output_same_file(path, ins[i]) && !(q == 3 && i == j + 1))
                    return scm_error_set(err, SCM_EINVAL,
                                         "the output '%s' is also an input ('%s'); refused",
                                         path, ins[i]);
        }
    return SCM_OK;
}

int scm_compare_rules_list(char *list, const char **rules, int cap, scm_error *err)
{
    int n = 0;
    for (char *save = NULL, *t = strtok_r(list, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        if (n == cap || !scm_rule_find(t))
            return scm_error_set(err, SCM_EINVAL, "--rule: '%s' is not a rule (%s; at most %d)",
                                 t, scm_rule_names(), cap), -1;
        for (int j = 0; j < n; j++)
            if (!strcmp(rules[j], t))
                return scm_error_set(err, SCM_EINVAL, "--rule: '%s' given twice", t), -1;
        rules[n++] = t;
    }
    return n;
}
