/* cmd_crosscheck.c: `scm crosscheck`: random runs (the ODE and weight-space
 * GD in d = M) classified against the fixed-point enumeration with the
 * options of `scm fixed-points` (crosscheck.h); a readable summary and a
 * JSON result file listing every unmatched and every non-converged end
 * point.  Exit status 3 when an end point is unmatched (docs/crosscheck.md).
 * The computation is scm_xc_check_* (crosscheck.h), step by step so that
 * the progress lines come between the steps. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_opts.h"
#include "cli_util.h"
#include "commands.h"
#include "scm/crosscheck.h"
#include "scm/fptable.h"
#include "scm/output.h"

#define XC_ME "scm crosscheck"
/* The enumeration uses the defaults of `scm fixed-points` (fptable.h). */
#define SCM_STR_(x) #x
#define SCM_STR(x) SCM_STR_(x)

/* The command line. */
typedef struct {
    scm_xc_check_opts o;
    long K, M;
    int threads, method;
    const char *files[SCM_XC_MAX_ANSATZ], *out, *actname;
    int quiet;
} xc_args;

/* The command line into g: -1 to go on, else the exit status. */
static int parse_args(int argc, char **argv, xc_args *g)
{
    memset(g, 0, sizeof *g);
    scm_xc_check_opts_default(&g->o);
    g->K = g->M = -1;
    g->method = 2;
    g->actname = "relu";
    g->o.deflate = SCM_FP_TABLE_DEFLATE;
    g->o.sweep_passes = SCM_FP_TABLE_SWEEP_PASSES;
    scm_xc_check_opts *o = &g->o;
    cli_strs files = {g->files, 0, SCM_XC_MAX_ANSATZ};
    const cli_opt opts[] = {
        CLI_O("--K", CLI_LONG, &g->K, 1, 1000, "K", "number of students"),
        CLI_O("--M", CLI_LONG, &g->M, 1, 1000, "M", "number of teachers"),
        CLI_O("--runs", CLI_LONG, &o->runs, 1, 100000000L, "N", "runs per method (default 200)"),
        CLI_O("--seed", CLI_LONG, &o->seed, 0, 2147483647L, "S",
              "base seed of the runs (default 1; run i uses\nscm_sweep_seed(S, i))"),
        CLI_O("--first", CLI_LONG, &o->first, 0, 2147483647L, "I", "first run index (default 0)"),
        CLI_C("--method", &g->method, "ode|gd|both", "M", "ode, gd or both (default both)"),
        CLI_OPT_ACTIVATION(&g->actname),
        CLI_O("--ansatz", CLI_STRS, &files, 0, 0, "FILE",
              "enumerate these ansätze only (repeatable; default the\nbuilt-in ones)"),
        CLI_O("--starts", CLI_LONG, &o->starts, 0, 1000000, "N",
              "random Newton starts per (ansatz, k1) (default 200)"),
        CLI_O("--fp-seed", CLI_LONG, &o->fp_seed, 0, 2147483647L, "S", "seed of those starts (default 1)"),
        CLI_O("--deflate", CLI_LONG, &o->deflate, 0, 1000, "N",
              "deflated Newton rounds (default " SCM_STR(SCM_FP_TABLE_DEFLATE) ")"),
        CLI_O("--sweep-passes", CLI_LONG, &o->sweep_passes, 0, 1000, "P",
              "k1 sweep passes (default " SCM_STR(SCM_FP_TABLE_SWEEP_PASSES) ")"),
        CLI_O("--gd-max-iter", CLI_LONG, &o->run.gd_max_iter, 1, 100000000L, "N",
              "GD iteration budget (default 200000)"),
        CLI_OPT_THREADS(&g->threads),
        CLI_O("-o", CLI_STR, &g->out, 0, 0, "FILE", "JSON result file"),
        CLI_OPT_QUIET(&g->quiet, "no per-point listing (the counts only)"),
        CLI_OPT_END};
    const cli_cmd cmd = {
        XC_ME,
        "usage: scm crosscheck --K K --M M [--runs N] [--method ode|gd|both] [-o OUT.json]\n"
        "\n"
        "Is the fixed-point enumeration complete?  N random runs of the ODE (d = 1000,\n"
        "sigma = 1, CVODE, as a sweep run) and N runs of gradient descent in weight\n"
        "space (d = M), every end point polished and classified against the fixed\n"
        "points `scm fixed-points` lists with the same options.  Unmatched end points\n"
        "are listed with their loss, alignment and groups of equal overlaps (and Q,\n"
        "R in the JSON); runs that did not converge are listed as such.\n",
        opts,
        CLI_EXIT_TEXT("0 every converged end point matched, 3 some did not (the\nresult is "
                      "complete either way), 1 a computation failed"),
        NULL, 0};
    int rc = cli_parse(&cmd, argc, argv);
    if (rc >= 0)
        return rc;
    if (g->K < 0 || g->M < 0)
        return cli_usage_error(XC_ME, "--K and --M are required");
    g->o.act = scm_activation_find(g->actname);
    if (!g->o.act)
        return cli_usage_error(XC_ME, "unknown activation '%s' (relu, erf, linear)", g->actname);
    o->ode = g->method != 1;
    o->gd = g->method != 0;
    o->n_ansatz = files.n;
    o->K = (int)g->K;
    o->M = (int)g->M;
    o->threads = g->threads ? g->threads : cli_cpu_count();
    o->ansatz_files = g->files;
    return -1;
}

/* The enumeration and the runs, with the progress lines: 0 or 1. */
static int compute(const scm_xc_check_opts *o, scm_xc_check *c)
{
    scm_error err;
    if (scm_xc_check_enumerate(c, &err)) {
        fprintf(stderr, XC_ME ": %s\n", err.msg);
        return 1;
    }
    const scm_xc_list *l = scm_xc_check_list(c);
    fprintf(stderr, XC_ME ": K = %d, M = %d: %d fixed points enumerated (%d instances) in "
                    "%.1f s\n",
            o->K, o->M, l->n, l->n_instances, scm_xc_check_enum_seconds(c));
    for (int me = SCM_XC_ODE; me <= SCM_XC_GD; me++) {
        if (!(me == SCM_XC_ODE ? o->ode : o->gd))
            continue;
        if (scm_xc_check_run(c, (scm_xc_method)me, &err)) {
            fprintf(stderr, XC_ME ": %s\n", err.msg);
            return 1;
        }
        fprintf(stderr, XC_ME ": %s: %ld runs in %.1f s\n", scm_xc_method_str((scm_xc_method)me),
                o->runs, scm_xc_check_tally(c, (scm_xc_method)me)->seconds);
    }
    return 0;
}

int scm_cmd_crosscheck(int argc, char **argv)
{
    xc_args g;
    int rc = parse_args(argc, argv, &g);
    if (rc >= 0)
        return rc;
    if (cli_check_output(XC_ME, g.out, g.files, g.o.n_ansatz))
        return 2;

    scm_error err;
    scm_xc_check *c = NULL;
    if (scm_xc_check_new(&g.o, &c, &err)) {
        fprintf(stderr, XC_ME ": %s\n", err.msg);
        return 2;
    }
    rc = compute(&g.o, c);
    char *text = rc ? NULL : scm_xc_check_text(c, g.quiet);
    if (!rc && !text) {
        fprintf(stderr, XC_ME ": out of memory\n");
        rc = 1;
    }
    if (text)
        fputs(text, stdout);
    free(text);
    if (!rc && g.out) {
        cJSON *root = scm_xc_check_json(c);
        if (!root) {
            fprintf(stderr, XC_ME ": out of memory\n");
            rc = 1;
        } else if (scm_output_write_json(g.out, root, 0, &err)) {
            fprintf(stderr, XC_ME ": %s\n", err.msg);
            rc = CLI_EXIT_IO;
        }
        cJSON_Delete(root);
    }
    if (!rc && scm_xc_check_unmatched(c))
        rc = 3;
    scm_xc_check_free(c);
    return rc;
}
