/* cmd_crosscheck.c: `scm crosscheck`: random runs (the ODE and weight-space
 * GD in d = M) classified against the fixed-point enumeration with the
 * options of `scm fixed-points` (crosscheck.h); a readable summary and a
 * JSON result file listing every unmatched and every non-converged end
 * point.  Exit status 3 when an end point is unmatched (docs/crosscheck.md).
 * The computation is scm_xc_check_* (crosscheck.h), step by step so that
 * the progress lines come between the steps. */
#include <gsl/gsl_errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_util.h"
#include "commands.h"
#include "fp_list.h"
#include "scm/crosscheck.h"
#include "scm/output.h"

#define XC_ME "scm crosscheck"

static void xc_usage(FILE *f)
{
    fprintf(f,
            "usage: scm crosscheck --K K --M M [--runs N] [--method ode|gd|both] [-o OUT.json]\n"
            "\n"
            "Is the fixed-point enumeration complete?  N random runs of the ODE (d = 1000,\n"
            "sigma = 1, CVODE, as a sweep run) and N runs of gradient descent in weight\n"
            "space (d = M), every end point polished and classified against the fixed\n"
            "points `scm fixed-points` lists with the same options.  Unmatched end points\n"
            "are listed with their loss, alignment and groups of equal overlaps (and Q,\n"
            "R in the JSON); runs that did not converge are listed as such.\n"
            "\n"
            "  --K K, --M M       numbers of students and teachers\n"
            "  --runs N           runs per method (default 200)\n"
            "  --seed S           base seed of the runs (default 1; run i uses\n"
            "                     scm_sweep_seed(S, i))\n"
            "  --first I          first run index (default 0)\n"
            "  --method M         ode, gd or both (default both)\n"
            "  --activation NAME  relu (default), erf or linear\n"
            "  --ansatz FILE      enumerate these ansätze only (repeatable; default the\n"
            "                     built-in ones)\n"
            "  --starts N         random Newton starts per (ansatz, k1) (default 200)\n"
            "  --fp-seed S        seed of those starts (default 1)\n"
            "  --deflate N        deflated Newton rounds (default "
            SCM_STR(SCM_FP_CLI_DEFLATE) ")\n"
            "  --sweep-passes P   k1 sweep passes (default " SCM_STR(SCM_FP_CLI_SWEEP_PASSES) ")\n"
            "  --gd-max-iter N    GD iteration budget (default 200000)\n"
            "  --threads T        threads for the runs and the enumeration (default: the\n"
            "                     processors online, at most 16); the result does not\n"
            "                     depend on T\n"
            "  -o FILE            JSON result file\n"
            "  -q, --quiet        no per-point listing (the counts only)\n"
            "\n"
            "exit status: 0 every converged end point matched, 3 some did not (the\n"
            "result is complete either way), 1 a computation failed, 2 bad input,\n"
            "4 the result file could not be written.\n");
}

/* The command line. */
typedef struct {
    scm_xc_check_opts o;
    long K, M, threads;
    const char *files[SCM_XC_MAX_ANSATZ], *out, *actname;
    int quiet;
} xc_args;

/* One option with a value: -1 to go on, else the exit status. */
static int parse_value(const char *a, const char *v, xc_args *g)
{
    int bad = 0;
    scm_xc_check_opts *o = &g->o;
    if (strcmp(a, "--K") == 0)
        bad = cli_opt_long(XC_ME, a, v, 1, 1000, &g->K);
    else if (strcmp(a, "--M") == 0)
        bad = cli_opt_long(XC_ME, a, v, 1, 1000, &g->M);
    else if (strcmp(a, "--runs") == 0)
        bad = cli_opt_long(XC_ME, a, v, 1, 100000000L, &o->runs);
    else if (strcmp(a, "--seed") == 0)
        bad = cli_opt_long(XC_ME, a, v, 0, 2147483647L, &o->seed);
    else if (strcmp(a, "--first") == 0)
        bad = cli_opt_long(XC_ME, a, v, 0, 2147483647L, &o->first);
    else if (strcmp(a, "--starts") == 0)
        bad = cli_opt_long(XC_ME, a, v, 0, 1000000, &o->starts);
    else if (strcmp(a, "--fp-seed") == 0)
        bad = cli_opt_long(XC_ME, a, v, 0, 2147483647L, &o->fp_seed);
    else if (strcmp(a, "--deflate") == 0)
        bad = cli_opt_long(XC_ME, a, v, 0, 1000, &o->deflate);
    else if (strcmp(a, "--sweep-passes") == 0)
        bad = cli_opt_long(XC_ME, a, v, 0, 1000, &o->sweep_passes);
    else if (strcmp(a, "--gd-max-iter") == 0)
        bad = cli_opt_long(XC_ME, a, v, 1, 100000000L, &o->run.gd_max_iter);
    else if (strcmp(a, "--threads") == 0)
        bad = cli_opt_long(XC_ME, a, v, 1, 64, &g->threads);
    else if (strcmp(a, "--method") == 0) {
        if (strcmp(v, "ode") == 0 || strcmp(v, "gd") == 0 || strcmp(v, "both") == 0) {
            o->ode = strcmp(v, "gd") != 0;
            o->gd = strcmp(v, "ode") != 0;
        } else {
            fprintf(stderr, XC_ME ": --method needs ode, gd or both, got '%s'\n", v);
            bad = -1;
        }
    } else if (strcmp(a, "--activation") == 0)
        g->actname = v;
    else if (strcmp(a, "-o") == 0)
        g->out = v;
    else if (strcmp(a, "--ansatz") == 0) {
        if (o->n_ansatz == SCM_XC_MAX_ANSATZ) {
            fprintf(stderr, XC_ME ": at most %d --ansatz files\n", SCM_XC_MAX_ANSATZ);
            return 2;
        }
        g->files[o->n_ansatz++] = v;
    } else {
        fprintf(stderr, XC_ME ": unknown option '%s'\n", a);
        xc_usage(stderr);
        return 2;
    }
    return bad ? 2 : -1;
}

/* The command line into g: -1 to go on, else the exit status. */
static int parse_args(int argc, char **argv, xc_args *g)
{
    memset(g, 0, sizeof *g);
    scm_xc_check_opts_default(&g->o);
    g->K = g->M = -1;
    g->threads = cli_cpu_count();
    g->actname = "relu";
    g->o.deflate = SCM_FP_CLI_DEFLATE;
    g->o.sweep_passes = SCM_FP_CLI_SWEEP_PASSES;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            xc_usage(stdout);
            return 0;
        }
        if (strcmp(a, "-q") == 0 || strcmp(a, "--quiet") == 0) {
            g->quiet = 1;
            continue;
        }
        if (!v) {
            fprintf(stderr, XC_ME ": unknown option or missing value: '%s'\n", a);
            xc_usage(stderr);
            return 2;
        }
        int rc = parse_value(a, v, g);
        if (rc >= 0)
            return rc;
        i++;
    }
    if (g->K < 0 || g->M < 0) {
        fprintf(stderr, XC_ME ": --K and --M are required\n");
        xc_usage(stderr);
        return 2;
    }
    g->o.act = scm_activation_find(g->actname);
    if (!g->o.act) {
        fprintf(stderr, XC_ME ": unknown activation '%s' (relu, erf, linear)\n", g->actname);
        return 2;
    }
    g->o.K = (int)g->K;
    g->o.M = (int)g->M;
    g->o.threads = (int)g->threads;
    g->o.ansatz_files = g->files;
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
    gsl_set_error_handler_off();
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
