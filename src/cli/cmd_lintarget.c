/* cmd_lintarget.c: `scm lintarget`: the linear target as a +-ReLU pair
 * (docs/lintarget.md).  Parses the options, runs the study
 * (scm_lintarget_study_run: K = 2 two-layer trajectories from small
 * initialisations alpha, their three phases, the fits against
 * log(1/alpha), the saddle manifold at several c), prints its tables and
 * writes PREFIX.json, PREFIX.phases.csv and PREFIX.traces.csv atomically. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_opts.h"
#include "cli_util.h"
#include "commands.h"
#include "scm/lintarget.h"
#include "scm/lintarget_text.h"
#include "scm/output.h"

#define ME "scm lintarget"

/* The failed runs named on stderr. */
static void print_failed(const scm_lintarget_study *s)
{
    for (int i = 0; i < s->n_rows; i++)
        if (s->rows[i].stop == SCM_STOP_FAILED)
            fprintf(stderr, ME ": alpha = %g: the run failed: %s\n", s->rows[i].alpha,
                    s->rows[i].run_err.msg);
}

/* The three files, all or none: 0, or the exit status. */
static int write_files(const scm_lintarget_study *s, const char *prefix, int quiet)
{
    char p[3][4096];
    snprintf(p[0], sizeof p[0], "%s.phases.csv", prefix);
    snprintf(p[1], sizeof p[1], "%s.traces.csv", prefix);
    snprintf(p[2], sizeof p[2], "%s.json", prefix);
    const char *paths[3] = {p[0], p[1], p[2]};
    size_t len[3] = {s->phases_len, s->traces_len, 0};
    char *json = cli_json_text(s->json, 0, &len[2]);
    const char *data[3] = {s->phases_csv, s->traces_csv, json};
    int rc = json ? cli_write_files(ME, 3, paths, data, len)
                  : (fprintf(stderr, ME ": out of memory\n"), 1);
    free(json);
    if (!rc && !quiet)
        printf("\nwrote      %s.json, %s.phases.csv, %s.traces.csv\n", prefix, prefix, prefix);
    return rc;
}

int scm_cmd_lintarget(int argc, char **argv)
{
    scm_lintarget_study_opts o;
    scm_lintarget_study_opts_default(&o);
    int quiet = 0, n_out = o.n_out;
    long d = o.d, seed = (long)o.seed;
    const char *prefix = "lintarget";
    const cli_opt opts[] = {
        CLI_L("--alpha", o.alpha, 1, SCM_LINTARGET_STUDY_MAX, &o.n_alpha, "LIST",
              "initial scales (default 1e-1,1e-2,1e-3,1e-4,1e-5,1e-6)"),
        CLI_O("--t", CLI_POS, &o.t, 0, 0, "T", "|a|^2 / d (default 1)"),
        CLI_O("--d", CLI_LONG, &d, 3, 100000000, "D", "dimension of the random start (default 1000)"),
        CLI_O("--seed", CLI_LONG, &seed, 0, 2147483647L, "S", "seed of the random start (default 1)"),
        CLI_O("--t-max", CLI_POS, &o.t_max, 0, 0, "T", "end of each run (default 200)"),
        CLI_O("--n-out", CLI_INT, &n_out, 3, 1000000, "N", "recorded points per run (default 600)"),
        CLI_L("--c", o.c, 0, SCM_LINTARGET_STUDY_MAX, &o.n_c, "LIST",
              "points of the saddle manifold (default -2.5,-0.4,0.385,1.7)"),
        CLI_O("--prefix", CLI_STR, &prefix, 0, 0, "PREFIX",
              "of the files written (default lintarget; -o PREFIX\nis its old spelling, kept for "
              "this release)"),
        CLI_O("-o", CLI_STR, &prefix, 0, 0, NULL, NULL),
        CLI_OPT_QUIET(&quiet, "no table"),
        CLI_OPT_END};
    const cli_cmd cmd = {
        ME,
        "usage: scm lintarget [--alpha A1,A2,...] [--t T] [--d D] [--seed S]\n"
        "                     [--t-max T] [--n-out N] [--c C1,C2,...] [--prefix PREFIX] [-q]\n"
        "\n"
        "The linear target a.x = ReLU(a.x) - ReLU(-a.x) (M = 2, T = t [[1,-1],[-1,1]],\n"
        "v* = (1, -1)) learnt by K = 2 ReLU students with both layers trained\n"
        "(rule two_layer), from w_k ~ N(0, I_d) scaled by alpha and v(0) = alpha (1, -1).\n"
        "For each alpha: the phases (alignment, joint growth, convergence) and the\n"
        "drift of the conserved imbalance Q_kk - v_k^2; the phase times fitted\n"
        "against log(1/alpha); and the saddle manifold v1 w1 = (c + 1) a,\n"
        "v2 w2 = -c a checked at each c (stationarity, loss t/4, Hessian counts,\n"
        "third-order descent).\n",
        opts, CLI_EXIT_TEXT("0 done, 1 a run failed"), NULL, 0};
    int prc = cli_parse(&cmd, argc, argv);
    if (prc >= 0)
        return prc;
    scm_error err;
    if (scm_lintarget_study_opts_check(&o, &err))
        return cli_usage_error(ME, "%s", err.msg);
    o.d = d;
    o.seed = (unsigned long)seed;
    o.n_out = n_out;

    scm_lintarget_study s;
    scm_status st = scm_lintarget_study_run(&o, &s, &err);
    print_failed(&s);
    int rc = s.n_failed ? 1 : 0;
    if (!quiet) /* out of memory here is said, not an exit status */
        cli_print(ME, scm_lintarget_study_text(&s, !st || s.n_rows == o.n_alpha));
    if (st) {
        rc = cli_fail(ME, &err, s.refused ? 2 : 1);
    } else {
        int w = write_files(&s, prefix, quiet);
        rc = w ? w : rc;
    }
    scm_lintarget_study_free(&s);
    return rc;
}
