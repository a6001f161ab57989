/* cmd_stability.c: `scm stability`: the stability of one fixed point, given
 * as a family (K, M, k1 and optionally an ansatz file: the lowest-loss
 * enumerated point with k1 anti-aligned students) or as entry i of a
 * `scm fixed-points -o` result file.  Prints a table and writes a JSON
 * result atomically (docs/stability.md).  The point comes from
 * scm_stabpoint_get (the file's or the family's), its analysis from
 * scm_stab_analyse, the report from scm_stabpoint_text and the result
 * object from scm_stabpoint_json. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_opts.h"
#include "cli_util.h"
#include "commands.h"
#include "scm/output.h"
#include "scm/stabpoint.h"
#include "scm/stabpoint_text.h"

#define ME "scm stability"

static const char st_head[] =
    "usage: scm stability --K K --M M --k1 N [--index I | --loss L] [--ansatz FILE]\n"
    "                     [options]\n"
    "       scm stability --point FP.json --index I [options]\n"
    "\n"
    "Stability of a fixed point: the perturbation test (W + N(0, s^2) for each\n"
    "perturbation size s, GD steps W <- W - h d grad eps of step h, then the\n"
    "CVODE flow from the perturbed overlaps) and the spectra (weight-space\n"
    "Hessian with symmetry zero modes, Jacobian of (F_Q, F_R)).  The k1 family\n"
    "(T = I, v = v* = 1) lists every specialised enumerated point with k1\n"
    "anti-aligned students by loss; the one analysed is, by default, the\n"
    "lowest-loss minimum candidate (no positive eigenvalue of the Jacobian of\n"
    "the flow: the plateau where training stalls); --index I or --loss L picks\n"
    "any other listed point.\n";

/* The command line. */
typedef struct {
    long K, M, k1, index, starts, d, steps, trials, seed;
    int quiet, flow, hess, dense, perturb;
    double loss;
    const char *point, *ansatz, *out, *actname;
    scm_stab_opts o;
} st_args;

/* The command line into g: -1 to go on, else the exit status. */
static int parse_args(int argc, char **argv, st_args *g)
{
    memset(g, 0, sizeof *g);
    g->K = g->M = g->k1 = g->index = -1;
    g->starts = 100;
    g->steps = 1000;
    g->trials = 10;
    g->seed = 1;
    g->flow = g->hess = 1;
    g->loss = NAN;
    scm_stab_opts_default(&g->o);
    scm_stab_opts *o = &g->o;
    const cli_opt opts[] = {
        CLI_O("--K", CLI_LONG, &g->K, 1, 10000, "K", "number of students"),
        CLI_O("--M", CLI_LONG, &g->M, 1, 10000, "M", "number of teachers"),
        CLI_O("--k1", CLI_LONG, &g->k1, 0, 10000, "N",
              "the family: the points with N anti-aligned students\n(built-in ansatze, or --ansatz)"),
        CLI_O("--index", CLI_LONG, &g->index, 0, 1000000, "I",
              "the family's point I (0: lowest loss) instead"),
        CLI_O("--loss", CLI_NONNEG, &g->loss, 0, 0, "L",
              "the family's point of loss L (1e-6 relative) instead"),
        CLI_O("--ansatz", CLI_STR, &g->ansatz, 0, 0, "FILE", "an ansatz file"),
        CLI_O("--starts", CLI_LONG, &g->starts, 0, 1000000, "N",
              "Newton starts of the enumeration (default 100)"),
        CLI_O("--point", CLI_STR, &g->point, 0, 0, "FILE",
              "a `scm fixed-points -o` result; --index I picks the point"),
        CLI_OPT_ACTIVATION(&g->actname),
        CLI_O("--d", CLI_LONG, &g->d, 1, 100000, "D", "dimension of the realisation (default K + M)"),
        CLI_O("--steps", CLI_LONG, &g->steps, 0, 100000000, "N", "GD steps (default 1000)"),
        CLI_O("--gd-step", CLI_POS, &o->eta, 0, 0, "H", "GD step in flow time (default 0.01)"),
        CLI_O("--eta", CLI_POS, &o->eta, 0, 0, NULL, NULL), /* the old name, for one release */
        CLI_L("--perturb-size", o->sigma, 1, SCM_STAB_MAX_SIGMA, &o->n_sigma, "S1,S2,...",
              "perturbation sizes s (default 1e-4,1e-3,1e-2,1e-1)"),
        CLI_L("--sigma", o->sigma, 1, SCM_STAB_MAX_SIGMA, &o->n_sigma, NULL, NULL),
        CLI_O("--trials", CLI_LONG, &g->trials, 1, 100000, "N", "trials per size (default 10)"),
        CLI_O("--seed", CLI_LONG, &g->seed, 0, 2147483647L, "S",
              "seed of the perturbations (default 1)"),
        CLI_O("--t-max", CLI_POS, &o->t_max, 0, 0, "T", "CVODE run length (default 1e5)"),
        CLI_O("--verdict-size-max", CLI_POS, &o->verdict_sigma_max, 0, 0, "S",
              "larger perturbation sizes do not enter the\nverdict (default 1e-2)"),
        CLI_O("--verdict-sigma-max", CLI_POS, &o->verdict_sigma_max, 0, 0, NULL, NULL),
        {"--no-flow", CLI_FLAG, &g->flow, 0, 0, NULL, "GD only (no CVODE runs)", NULL, NULL, NULL},
        {"--no-hessian", CLI_FLAG, &g->hess, 0, 0, NULL, "skip the Hessian (large K d; --dense only)",
         NULL, NULL, NULL},
        CLI_F("--dense", &g->dense,
              "dense spectra in weight space (default: the symmetric\nspectrum of the point's "
              "ansatz, any K; docs/stability.md)"),
        CLI_C("--perturb", &g->perturb, "auto|weights|qr|none", "MODE",
              "the perturbation test with GD steps in weight space,\nor the flow in (Q, R) from "
              "the mapped perturbation\n(auto, the default: weights for K d <= 800, else qr\nfor "
              "K <= 30, else none)"),
        CLI_O("-o", CLI_STR, &g->out, 0, 0, "FILE", "JSON result file"),
        CLI_OPT_QUIET(&g->quiet, "no table, no progress"),
        CLI_OPT_END};
    const cli_cmd cmd = {ME, st_head, opts,
                         CLI_EXIT_TEXT("0 done (also a family without a minimum), 1 a\n"
                                       "computation failed"),
                         NULL, 0};
    return cli_parse(&cmd, argc, argv);
}

/* The options among themselves, and into g->o: -1 to go on, else 2. */
static int check_args(st_args *g)
{
    int family = g->K >= 0 || g->M >= 0 || g->k1 >= 0;
    const char *why = NULL;
    if (g->point && family)
        why = "give either --point FILE --index I or --K --M --k1, not both";
    else if (g->point && isfinite(g->loss))
        why = "--loss selects in a family (--K --M --k1), not in --point files";
    else if (g->index >= 0 && isfinite(g->loss))
        why = "give --index or --loss, not both";
    else if (g->point && g->index < 0)
        why = "--point needs --index";
    if (why)
        return cli_usage_error(ME, "%s", why);
    if (!g->point && (g->K < 0 || g->M < 0 || g->k1 < 0))
        return cli_usage_error(ME, "--K, --M and --k1 are required (or --point FILE --index I)");
    if (!g->point && g->k1 > g->K)
        return cli_usage_error(ME, "--k1 %ld exceeds K = %ld", g->k1, g->K);
    g->o.d = g->d;
    g->o.n_steps = (int)g->steps;
    g->o.n_trials = (int)g->trials;
    g->o.seed = (unsigned long)g->seed;
    g->o.run_flow = g->flow;
    g->o.hessian = g->hess;
    scm_error err;
    if (scm_stab_opts_check(&g->o, &err)) {
        fprintf(stderr, ME ": %s\n", err.msg);
        return 2;
    }
    return -1;
}

/* One perturbation trial done: the progress line (cli_progress_show). */
static void st_progress(void *ctx, int done, int total)
{
    cli_progress_show(ctx, "stability: trials", done, total, NULL, done == total);
}

/* The point to analyse (from the file or the family) and its activation:
 * the exit status. */
static int get_point(const st_args *g, scm_stabpoint *sp, const scm_activation **act)
{
    scm_error err;
    scm_family_pick_opts fo;
    scm_family_pick_opts_default(&fo);
    fo.K = (int)g->K;
    fo.M = (int)g->M;
    fo.k1 = (int)g->k1;
    fo.ansatz_file = g->ansatz;
    fo.starts = g->starts;
    fo.threads = cli_cpu_count(); /* the family does not depend on it */
    fo.index = g->index;
    fo.loss = g->loss;
    scm_status st = scm_stabpoint_get(g->point, g->index, g->actname, &fo, sp, act, &err);
    if (st)
        fprintf(stderr, ME ": %s\n", err.msg);
    return !st ? 0 : st == SCM_EINVAL || st == SCM_EIO ? 2 : 1;
}

int scm_cmd_stability(int argc, char **argv)
{
    st_args g;
    int rc = parse_args(argc, argv, &g);
    if (rc < 0)
        rc = check_args(&g);
    if (rc >= 0)
        return rc;

    scm_stabpoint sp;
    const scm_activation *act = NULL;
    scm_stab_result r;
    scm_error err;
    rc = get_point(&g, &sp, &act);
    cli_progress pr;
    cli_progress_start(&pr, 0);
    g.o.progress = g.quiet ? NULL : st_progress;
    g.o.progress_ctx = &pr;
    if (!rc) {
        scm_status st = scm_stabpoint_analyse(&sp, act, &g.o, g.dense, g.perturb, g.ansatz, &r,
                                              &err);
        if (st) {
            fprintf(stderr, ME ": %s\n", err.msg);
            rc = st == SCM_ENOMEM ? 1 : 2;
        }
    }
    if (!rc && !g.quiet) {
        char *text = scm_stabpoint_text(&sp, act, &g.o, &r);
        if (!text) {
            fprintf(stderr, ME ": out of memory\n");
            rc = 1;
        } else {
            fputs(text, stdout);
            free(text);
        }
    }
    if (!rc && g.out) {
        cJSON *root = scm_stabpoint_json(&sp, act, &g.o, &r);
        rc = cli_write_json(ME, g.out, root, 0);
        cJSON_Delete(root);
    }
    scm_stabpoint_free(&sp);
    return rc;
}
