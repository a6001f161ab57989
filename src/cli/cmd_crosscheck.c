/* cmd_crosscheck.c: `scm crosscheck`: random runs (the ODE and weight-space
 * GD in d = M) classified against the fixed-point enumeration with the
 * options of `scm fixed-points` (crosscheck.h); a readable summary and a
 * JSON result file listing every unmatched and every non-converged end
 * point.  Exit status 3 when an end point is unmatched (docs/crosscheck.md).
 * The computation is scm_xc_check_compute (crosscheck.h), whose notes
 * between the steps are the progress lines. */
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
    int method;
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
              "random Newton starts per (ansatz, instance) (default\n200)"),
        CLI_O("--fp-seed", CLI_LONG, &o->fp_seed, 0, 2147483647L, "S", "seed of those starts (default 1)"),
        CLI_O("--deflate", CLI_LONG, &o->deflate, 0, 1000, "N",
              "deflated Newton rounds (default " SCM_STR(SCM_FP_TABLE_DEFLATE) ")"),
        CLI_O("--sweep-passes", CLI_LONG, &o->sweep_passes, 0, 1000, "P",
              "k1 sweep passes (default " SCM_STR(SCM_FP_TABLE_SWEEP_PASSES) ")"),
        CLI_O("--gd-max-iter", CLI_LONG, &o->run.gd_max_iter, 1, 100000000L, "N",
              "GD iteration budget (default 200000)"),
        CLI_OPT_THREADS(&o->threads),
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
    scm_error err;
    if (scm_xc_check_opts_named(o, g->K, g->M, g->actname, g->method, &err))
        return cli_usage_error(XC_ME, "%s", err.msg);
    o->n_ansatz = files.n;
    o->ansatz_files = g->files; /* threads 0: the processors online */
    return -1;
}

/* A step of the computation done: its line on stderr. */
static void xc_note(void *ctx, const char *line)
{
    (void)ctx;
    fprintf(stderr, XC_ME ": %s\n", line);
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
    if (scm_xc_check_new(&g.o, &c, &err))
        return cli_fail(XC_ME, &err, 2);
    rc = scm_xc_check_compute(c, xc_note, NULL, &err) ? cli_fail(XC_ME, &err, 1) : 0;
    if (!rc)
        rc = cli_print(XC_ME, scm_xc_check_text(c, g.quiet));
    if (!rc && g.out)
        rc = cli_write_json(XC_ME, g.out, scm_xc_check_json(c), 0);
    if (!rc && scm_xc_check_unmatched(c))
        rc = 3;
    scm_xc_check_free(c);
    return rc;
}
