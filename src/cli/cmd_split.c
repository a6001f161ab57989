/* cmd_split.c: `scm split`: split neuron r of a K-student fixed point into
 * daughters with output weights mu_j v_r (sum mu_j = 1), classify the
 * split line by the parent's inner Hessian and check each sample point
 * against the full Hessian of the larger network (and optionally the
 * perturbation test).  The study is the library's (scm_split_args_check
 * and scm_split_args_run in include/scm/split.h); the
 * command parses, calls, prints the table and writes the JSON result
 * atomically (docs/split.md); the table is scm_split_study_text. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_opts.h"
#include "cli_util.h"
#include "commands.h"
#include "scm/output.h"
#include "scm/split.h"

#define ME "scm split"
#define MAX_LAMBDA SCM_SPLIT_MAX_SAMPLES
#define MAX_DAUGHTERS SCM_SPLIT_MAX_DAUGHTERS

int scm_cmd_split(int argc, char **argv)
{
    scm_split_args a;
    scm_split_args_default(&a);
    int quiet = 0;
    const char *out = NULL;
    const cli_opt opts[] = {
        CLI_O("--K", CLI_LONG, &a.K, 1, 1000, "K", "number of students"),
        CLI_O("--M", CLI_LONG, &a.M, 1, 1000, "M", "number of teachers"),
        CLI_O("--k1", CLI_LONG, &a.k1, 0, 1000, "N", "the lowest-loss point with N anti-aligned students"),
        CLI_O("--index", CLI_LONG, &a.index, 0, 1000000, "I", "point I of the list sorted by loss"),
        CLI_O("--loss", CLI_NUM, &a.loss, 0, 0, "L", "the point of loss nearest L"),
        CLI_O("--point", CLI_STR, &a.point, 0, 0, "FILE", "the point from FILE"),
        CLI_O("--neuron", CLI_LONG, &a.neuron, 0, 999, "r", "the student split (0-based; required)"),
        CLI_OPT_ACTIVATION(&a.actname),
        CLI_L("--lambda", a.lam, 0, MAX_LAMBDA, &a.nl, "a,b,...", "split weights lambda of two daughters"),
        CLI_O("--lambda-grid", CLI_LONG, &a.grid, 1, MAX_LAMBDA, "N",
              "N lambdas evenly in [-0.5, 1.5] (default 9)"),
        CLI_L("--weights", a.w, 0, MAX_DAUGHTERS, &a.nw, "m1,m2,..", "one split into several daughters (sum 1)"),
        CLI_O("--d", CLI_LONG, &a.d, 1, 2000, "D", "dimension of the realisation (default K + M + 1)"),
        CLI_O("--starts", CLI_LONG, &a.starts, 0, 1000000, "N",
              "Newton starts of the enumeration (default 100)"),
        CLI_F("--polish", &a.polish, "Newton-polish a point read from FILE first"),
        CLI_F("--perturb", &a.perturb,
              "also the perturbation test at each point (3 trials at\nperturbation sizes 1e-4, "
              "1e-3, 1e-2, GD then the CVODE flow)"),
        CLI_O("-o", CLI_STR, &out, 0, 0, "FILE", "JSON result file"),
        CLI_OPT_QUIET(&quiet, "no table"),
        CLI_OPT_END};
    const cli_cmd cmd = {
        ME,
        "usage: scm split --K K --M M [--k1 N | --index I | --loss L] --neuron r\n"
        "                 [--lambda a,b,... | --lambda-grid N | --weights mu1,mu2,...]\n"
        "       scm split --point FILE [--index I] --neuron r [...]\n"
        "\n"
        "Split student r (0-based) of a fixed point into daughters with output\n"
        "weights mu_j v_r, sum mu_j = 1 (two daughters: lambda, 1 - lambda).  Prints\n"
        "the parent's inner Hessian (residual-weighted second derivative of its\n"
        "feature: eigenvalues of d H_r on the span of students and teachers and on\n"
        "the complement) and its class, then for each split point the residual of\n"
        "the larger flow, the Hessian's inertia (measured and predicted), its\n"
        "smallest eigenvalue without the explained zero modes, and the verdict.\n"
        "The fixed point is enumerated (T = I, v = v* = 1, built-in ansatze) and\n"
        "chosen by --k1 (lowest loss with N anti-aligned students), --index (in the\n"
        "list sorted by loss) or --loss (nearest); or read from FILE: a `scm\n"
        "fixed-points -o` result (with --index) or an object with Q, R and\n"
        "optionally v, vs, T, activation.\n",
        opts, CLI_EXIT_TEXT("0 done, 1 a computation failed"), NULL, 0};
    int prc = cli_parse(&cmd, argc, argv);
    if (prc >= 0)
        return prc;
    scm_error err;
    scm_error_clear(&err);
    if (scm_split_args_check(&a, &err))
        return cli_usage_error(ME, "%s", err.msg);
    if (!a.point && !scm_activation_find(a.actname ? a.actname : "relu"))
        return cli_usage_error(ME, "unknown activation '%s' (relu, erf, linear)",
                               a.actname ? a.actname : "relu");
    scm_split_run r;
    scm_status st = scm_split_args_run(&a, &r, &err);
    int rc = st ? cli_fail(ME, &err, CLI_EXIT_OF(st)) : 0;
    if (!rc && !quiet)
        rc = cli_print(ME, scm_split_study_text(&r.study));
    if (!rc && out)
        rc = cli_write_json(ME, out, scm_split_study_json(&r.study), 0);
    scm_split_run_free(&r);
    return rc;
}
