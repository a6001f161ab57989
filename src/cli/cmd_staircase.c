/* cmd_staircase.c: `scm staircase`: parses the options and runs the study
 * of staircase.h (scm_stair_study_run: runs of the first-layer flow, or
 * two_layer, from small random initialisations of scale alpha, the plateaus
 * of each loss curve matched to fixed points, and the escape times against
 * log(1 / alpha) with a fitted slope, compared with 1 / lambda;
 * docs/staircase.md).  Prints a table and writes the study's JSON (with the
 * loss curves) atomically; the table is scm_stair_study_text, the rules of
 * the options scm_stair_study_opts_named. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_opts.h"
#include "cli_util.h"
#include "commands.h"
#include "scm/output.h"
#include "scm/staircase.h"

#define ME "scm staircase"

/* The study's problems that do not stop it, as they come. */
static void note_stderr(void *user, const char *msg)
{
    (void)user;
    fprintf(stderr, ME ": %s\n", msg);
}

/* The study, its table and its JSON. */
static int staircase(const scm_stair_study_opts *o, const char *out, int quiet)
{
    scm_error err;
    scm_stair_study s;
    int rc = 0;
    if (scm_stair_study_run(o, &s, &err))
        rc = cli_fail(ME, &err, s.refused ? 2 : 1);
    else if (!quiet)
        rc = cli_print(ME, scm_stair_study_text(o, &s));
    if (!rc && out)
        rc = cli_write_json(ME, out, scm_stair_study_json(o, &s), 1);
    scm_stair_study_free(&s);
    return rc;
}

int scm_cmd_staircase(int argc, char **argv)
{
    scm_stair_study_opts o;
    scm_stair_study_opts_default(&o);
    int quiet = 0, nT = 0, nvs = 0;
    const char *out = NULL, *actname = "relu", *rulename = "gd";
    const cli_opt opts[] = {
        CLI_O("--K", CLI_LONG, &o.K, 1, 200, "K", "number of students"),
        CLI_O("--M", CLI_LONG, &o.M, 1, 200, "M", "number of teachers"),
        CLI_OPT_ACTIVATION(&actname),
        CLI_O("--rule", CLI_STR, &rulename, 0, 0, "NAME",
              "gd (default) or two_layer (v trained too, from\nv(0) = alpha: the small scale on "
              "both layers)"),
        CLI_O("--lr-v-ratio", CLI_POS, &o.rp.lr_v_ratio, 0, 0, "R", "two_layer: eta_v / eta (default 1)"),
        CLI_L("--T-diag", o.T_diag, 1, SCM_STAIR_STUDY_MAX_M, &nT, "LIST",
              "teacher overlaps T = diag(LIST) (M entries; default I)"),
        CLI_L("--vstar", o.vstar, 0, SCM_STAIR_STUDY_MAX_M, &nvs, "LIST",
              "teacher second layer (M entries; default 1)\nWith two_layer, T != I or v* != 1 "
              "each plateau is\nmatched to the fixed point a Newton polish of its\nmiddle state "
              "reaches (loss, lambda of its Jacobian)."),
        CLI_L("--alpha", o.alpha, 1, SCM_STAIR_STUDY_MAX_ALPHA, &o.n_alpha, "LIST",
              "initialisation scales (at least 3 for a fit)"),
        CLI_O("--d", CLI_LONG, &o.d, 1, 100000000, "D", "dimension of the initialisation (default 1000)"),
        CLI_O("--seed", CLI_LONG, &o.seed, 0, 2147483647L, "S", "seed of the initialisation (default 1)"),
        CLI_O("--t-max", CLI_POS, &o.t_max, 0, 0, "T", "run length (default 1e4)"),
        CLI_O("--n-out", CLI_LONG, &o.n_out, 10, 1000000, "N", "log-spaced recorded points (default 3000)"),
        CLI_O("--rate-tol", CLI_POS, &o.so.rate_tol, 0, 0, "R", "plateau threshold (default 1e-4)"),
        CLI_O("--min-dur", CLI_POS, &o.so.min_dur, 0, 0, "T", "shortest plateau in tau (default 5)"),
        CLI_O("--match-tol", CLI_POS, &o.match_tol, 0, 0, "R",
              "relative loss tolerance of the matching (default 1e-4)"),
        CLI_O("--starts", CLI_LONG, &o.starts, 0, 1000000, "N",
              "Newton starts of the enumeration (default 50)"),
        CLI_O("-o", CLI_STR, &out, 0, 0, "FILE", "JSON result file (with the loss curves)"),
        CLI_OPT_QUIET(&quiet, "no table"),
        CLI_OPT_END};
    const cli_cmd cmd = {
        ME,
        "usage: scm staircase --K K --M M --alpha a1,a2,... [options]\n"
        "\n"
        "Runs of the first-layer flow (rule gd, T = I, v = v* = 1) from random\n"
        "initialisations w_k ~ N(0, alpha^2 I_d), one per alpha (same seed); the\n"
        "plateaus of each loss curve (|d eps/d tau| <= rate-tol * eps for at least\n"
        "min-dur) matched to the fixed points the built-in ansatze give at (K, M);\n"
        "for each fixed point reached from at least 3 alphas, the slope of the\n"
        "escape times against log(1/alpha), compared with 1/lambda (lambda: the\n"
        "largest real part of the (F_Q, F_R) Jacobian there).\n",
        opts, CLI_EXIT_TEXT("0 done, 1 a computation failed"), NULL, 0};
    int prc = cli_parse(&cmd, argc, argv);
    if (prc >= 0)
        return prc;
    if (o.K < 0 || o.M < 0 || o.n_alpha == 0)
        return cli_usage_error(ME, "--K, --M and --alpha are required");
    scm_error err;
    if (scm_stair_study_opts_named(&o, actname, rulename, nT, nvs, 0, &err))
        return cli_fail(ME, &err, 2);
    o.note = note_stderr;
    return staircase(&o, out, quiet);
}
