/* cmd_stability.c: `scm stability`: the stability of one fixed point, given
 * as a family (K, M, k1 and optionally an ansatz file: the lowest-loss
 * enumerated point with k1 anti-aligned students) or as entry i of a
 * `scm fixed-points -o` result file.  Prints a table and writes a JSON
 * result atomically (docs/stability.md).  The point comes from
 * scm_stabpoint_args_get (the file's or the family's), its analysis from
 * scm_stab_analyse, the report from scm_stabpoint_text and the result
 * object from scm_stabpoint_json. */
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
    scm_stabpoint_args a;
    int quiet, dense, perturb;
    const char *out;
    scm_stab_opts o;
} st_args;

/* The command line into g: -1 to go on, else the exit status. */
static int parse_args(int argc, char **argv, st_args *g)
{
    memset(g, 0, sizeof *g);
    scm_stabpoint_args_default(&g->a);
    scm_stab_opts_default(&g->o);
    scm_stab_opts *o = &g->o;
    const cli_opt opts[] = {
        CLI_O("--K", CLI_LONG, &g->a.K, 1, 10000, "K", "number of students"),
        CLI_O("--M", CLI_LONG, &g->a.M, 1, 10000, "M", "number of teachers"),
        CLI_O("--k1", CLI_LONG, &g->a.k1, 0, 10000, "N",
              "the family: the points with N anti-aligned students\n(built-in ansatze, or --ansatz)"),
        CLI_O("--index", CLI_LONG, &g->a.index, 0, 1000000, "I",
              "the family's point I (0: lowest loss) instead"),
        CLI_O("--loss", CLI_NONNEG, &g->a.loss, 0, 0, "L",
              "the family's point of loss L (1e-6 relative) instead"),
        CLI_O("--ansatz", CLI_STR, &g->a.ansatz, 0, 0, "FILE", "an ansatz file"),
        CLI_O("--starts", CLI_LONG, &g->a.starts, 0, 1000000, "N",
              "Newton starts of the enumeration (default 100)"),
        CLI_O("--point", CLI_STR, &g->a.point, 0, 0, "FILE",
              "a `scm fixed-points -o` result; --index I picks the point"),
        CLI_OPT_ACTIVATION(&g->a.actname),
        CLI_O("--d", CLI_LONG, &g->a.d, 1, 100000, "D", "dimension of the realisation (default K + M)"),
        CLI_O("--steps", CLI_LONG, &g->a.steps, 0, 100000000, "N", "GD steps (default 1000)"),
        CLI_O("--gd-step", CLI_POS, &o->eta, 0, 0, "H", "GD step in flow time (default 0.01)"),
        CLI_O("--eta", CLI_POS, &o->eta, 0, 0, NULL, NULL), /* the old name, for one release */
        CLI_L("--perturb-size", o->sigma, 1, SCM_STAB_MAX_SIGMA, &o->n_sigma, "S1,S2,...",
              "perturbation sizes s (default 1e-4,1e-3,1e-2,1e-1)"),
        CLI_L("--sigma", o->sigma, 1, SCM_STAB_MAX_SIGMA, &o->n_sigma, NULL, NULL),
        CLI_O("--trials", CLI_LONG, &g->a.trials, 1, 100000, "N", "trials per size (default 10)"),
        CLI_O("--seed", CLI_LONG, &g->a.seed, 0, 2147483647L, "S",
              "seed of the perturbations (default 1)"),
        CLI_O("--t-max", CLI_POS, &o->t_max, 0, 0, "T", "CVODE run length (default 1e5)"),
        CLI_O("--verdict-size-max", CLI_POS, &o->verdict_sigma_max, 0, 0, "S",
              "larger perturbation sizes do not enter the\nverdict (default 1e-2)"),
        CLI_O("--verdict-sigma-max", CLI_POS, &o->verdict_sigma_max, 0, 0, NULL, NULL),
        {"--no-flow", CLI_FLAG, &g->a.flow, 0, 0, NULL, "GD only (no CVODE runs)", NULL, NULL, NULL},
        {"--no-hessian", CLI_FLAG, &g->a.hessian, 0, 0, NULL, "skip the Hessian (large K d; --dense only)",
         NULL, NULL, NULL},
        CLI_F("--dense", &g->dense,
              "dense spectra in weight space (default: the symmetric\nspectrum of the point's "
              "ansatz, any K; docs/stability.md)"),
        CLI_C("--perturb", &g->perturb, "auto|weights|qr|none", "MODE",
              "the perturbation test with GD steps in weight space,\nor the flow in (Q, R) from "
              "the mapped perturbation\n(auto, the default: weights for K d <= 800, else qr\nfor "
              "K <= 30, else none; weights on the dense path)"),
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
    scm_error err;
    if (scm_stabpoint_args_check(&g->a, &err))
        return cli_usage_error(ME, "%s", err.msg);
    return scm_stabpoint_args_opts(&g->a, &g->o, &err) ? cli_fail(ME, &err, 2) : -1;
}

/* One perturbation trial done: the progress line (cli_progress_show). */
static void st_progress(void *ctx, int done, int total)
{
    cli_progress_show(ctx, "stability: trials", done, total, NULL, done == total);
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
    scm_status st = scm_stabpoint_args_get(&g.a, &sp, &act, &err);
    rc = st ? cli_fail(ME, &err, CLI_EXIT_OF(st)) : 0;
    cli_progress pr;
    cli_progress_start(&pr, 0);
    g.o.progress = g.quiet ? NULL : st_progress;
    g.o.progress_ctx = &pr;
    if (!rc) {
        st = scm_stabpoint_analyse(&sp, act, &g.o, g.dense, g.perturb, g.a.ansatz, &r, &err);
        rc = st ? cli_fail(ME, &err, st == SCM_ENOMEM ? 1 : 2) : 0;
    }
    if (!rc && !g.quiet)
        rc = cli_print(ME, scm_stabpoint_text(&sp, act, &g.o, &r));
    if (!rc && g.out)
        rc = cli_write_json(ME, g.out, scm_stabpoint_json(&sp, act, &g.o, &r), 0);
    scm_stabpoint_free(&sp);
    return rc;
}
