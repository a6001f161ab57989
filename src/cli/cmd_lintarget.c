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

#include "cli_util.h"
#include "commands.h"
#include "scm/lintarget.h"
#include "scm/output.h"

#define ME "scm lintarget"

static void usage(FILE *f)
{
    fprintf(f,
            "usage: scm lintarget [--alpha A1,A2,...] [--t T] [--d D] [--seed S]\n"
            "                     [--t-max T] [--n-out N] [--c C1,C2,...] [-o PREFIX] [-q]\n"
            "\n"
            "The linear target a.x = ReLU(a.x) - ReLU(-a.x) (M = 2, T = t [[1,-1],[-1,1]],\n"
            "v* = (1, -1)) learnt by K = 2 ReLU students with both layers trained\n"
            "(rule two_layer), from w_k ~ N(0, I_d) scaled by alpha and v(0) = alpha (1, -1).\n"
            "For each alpha: the phases (alignment, joint growth, convergence) and the\n"
            "drift of the conserved imbalance Q_kk - v_k^2; the phase times fitted\n"
            "against log(1/alpha); and the saddle manifold v1 w1 = (c + 1) a,\n"
            "v2 w2 = -c a checked at each c (stationarity, loss t/4, Hessian counts,\n"
            "third-order descent).\n"
            "\n"
            "  --alpha LIST   initial scales (default 1e-1,1e-2,1e-3,1e-4,1e-5,1e-6)\n"
            "  --t T          |a|^2 / d (default 1)\n"
            "  --d D          dimension of the random start (default 1000)\n"
            "  --seed S       seed of the random start (default 1)\n"
            "  --t-max T      end of each run (default 200)\n"
            "  --n-out N      recorded points per run (default 600)\n"
            "  --c LIST       points of the saddle manifold (default -2.5,-0.4,0.385,1.7)\n"
            "  -o PREFIX      output prefix (default lintarget)\n"
            "  -q             no table\n"
            "\n"
            "exit status: 0 done, 1 a run failed, 2 bad input.\n");
}

/* The table of the runs, with the failed runs named on stderr. */
static void print_runs(const scm_lintarget_study *s, int quiet)
{
    if (!quiet)
        printf("%-8s %-8s %-9s %-9s %-9s %-9s %-8s %-9s %s\n", "alpha", "log1/a", "t_align",
               "t_grow0", "t_grow1", "t_conv", "rate", "b_drift", "stop");
    for (int i = 0; i < s->n_rows; i++) {
        const scm_lintarget_study_row *w = &s->rows[i];
        if (w->stop == SCM_STOP_FAILED)
            fprintf(stderr, ME ": alpha = %g: the run failed: %s\n", w->alpha, w->run_err.msg);
        if (!quiet)
            printf("%-8.1e %-8.4g %-9.5g %-9.5g %-9.5g %-9.5g %-8.4g %-9.2e %s\n", w->alpha,
                   w->log_inv_alpha, w->ph.t_align, w->ph.t_grow_start, w->ph.t_grow_end,
                   w->ph.t_conv, w->ph.rate, w->ph.imbalance_drift, scm_stop_reason_str(w->stop));
    }
}

static void print_saddle(const scm_lintarget_study *s)
{
    printf("\nsaddle manifold v1 w1 = (c+1) a, v2 w2 = -c a (d = 3, beta = 0.8, 1.3):\n"
           "%-8s %-12s %-9s %-5s %-5s %-5s %-12s %-7s %s\n", "c", "eps", "grad", "neg",
           "zero", "pos", "change(s)", "ratio", "verdict");
    for (int i = 0; i < s->n_saddle; i++) {
        const scm_lintarget_saddle_row *w = &s->saddle[i];
        const scm_lintarget_saddle_report *a = &w->at_s;
        printf("%-8.4g %-12.10g %-9.2e %-5d %-5d %-5d %-12.4e %-7.3g %s\n", w->c, a->eps,
               a->grad_max, a->n_neg, a->n_zero, a->n_pos, a->descent_min, w->ratio, w->verdict);
    }
}

/* The three files, the JSON last. */
static int write_files(const scm_lintarget_study *s, const char *prefix, int quiet)
{
    scm_error err;
    char path[4096];
    snprintf(path, sizeof path, "%s.phases.csv", prefix);
    if (scm_output_write_atomic(path, s->phases_csv, s->phases_len, &err))
        goto wfail;
    snprintf(path, sizeof path, "%s.traces.csv", prefix);
    if (scm_output_write_atomic(path, s->traces_csv, s->traces_len, &err))
        goto wfail;
    snprintf(path, sizeof path, "%s.json", prefix);
    if (scm_output_write_json(path, s->json, 0, &err))
        goto wfail;
    if (!quiet)
        printf("\nwrote      %s.json, %s.phases.csv, %s.traces.csv\n", prefix, prefix, prefix);
    return 0;
wfail:
    fprintf(stderr, ME ": %s\n", err.msg);
    return 1;
}

int scm_cmd_lintarget(int argc, char **argv)
{
    scm_lintarget_study_opts o;
    scm_lintarget_study_opts_default(&o);
    int quiet = 0;
    double t = o.t, t_max = o.t_max;
    long d = o.d, seed = (long)o.seed, n_out = o.n_out;
    const char *prefix = "lintarget";
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        }
        if (!strcmp(a, "-q")) {
            quiet = 1;
            continue;
        }
        if (!v) {
            fprintf(stderr, ME ": unknown option or missing value: '%s'\n", a);
            usage(stderr);
            return 2;
        }
        int bad = 0;
        if (!strcmp(a, "--alpha"))
            bad = cli_opt_list(ME, a, v, 1, o.alpha, SCM_LINTARGET_STUDY_MAX, &o.n_alpha);
        else if (!strcmp(a, "--c"))
            bad = cli_opt_list(ME, a, v, 0, o.c, SCM_LINTARGET_STUDY_MAX, &o.n_c);
        else if (!strcmp(a, "--t"))
            bad = cli_opt_positive(ME, a, v, &t);
        else if (!strcmp(a, "--t-max"))
            bad = cli_opt_positive(ME, a, v, &t_max);
        else if (!strcmp(a, "--d"))
            bad = cli_opt_long(ME, a, v, 3, 100000000, &d);
        else if (!strcmp(a, "--seed"))
            bad = cli_opt_long(ME, a, v, 0, 2147483647L, &seed);
        else if (!strcmp(a, "--n-out"))
            bad = cli_opt_long(ME, a, v, 3, 1000000, &n_out);
        else if (!strcmp(a, "-o"))
            prefix = v;
        else {
            fprintf(stderr, ME ": unknown option '%s'\n", a);
            usage(stderr);
            return 2;
        }
        if (bad)
            return 2;
        i++;
    }
    for (int i = 0; i < o.n_alpha; i++)
        if (!(o.alpha[i] < 1.0)) {
            fprintf(stderr, ME ": --alpha values must be in (0, 1) (small initialisation), got %g\n",
                    o.alpha[i]);
            return 2;
        }
    o.t = t;
    o.t_max = t_max;
    o.d = d;
    o.seed = (unsigned long)seed;
    o.n_out = (int)n_out;

    scm_lintarget_study s;
    scm_error err;
    scm_status st = scm_lintarget_study_run(&o, &s, &err);
    print_runs(&s, quiet);
    int rc = s.n_failed ? 1 : 0;
    if (!quiet && (!st || s.n_rows == o.n_alpha))
        print_saddle(&s);
    if (st) {
        fprintf(stderr, ME ": %s\n", err.msg);
        rc = s.refused ? 2 : 1;
    } else if (write_files(&s, prefix, quiet)) {
        rc = 1;
    }
    scm_lintarget_study_free(&s);
    return rc;
}
