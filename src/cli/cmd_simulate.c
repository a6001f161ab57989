/* cmd_simulate.c (CLI): `scm simulate`, a finite-d network trained in weight
 * space beside the ODE from the same realised initial overlaps, for several
 * seeds (the study of include/scm/simulate.h, scm_simulate_study_*); writes
 * PREFIX.json, PREFIX.csv and, when python3 with matplotlib is there,
 * PREFIX.png (docs/simulate.md).  The command parses its options, reads the
 * config, calls the library, prints the summary, writes the files and runs
 * the plot script. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli_opts.h"
#include "cli_plot.h"
#include "cli_util.h"
#include "commands.h"
#include "scm/output.h"
#include "scm/simulate.h"
#include "scm/simulate_text.h"

#define ME "scm simulate"
#define MAX_SETS 64

/* ------------------------------------------------------------------ the command */

/* One seed done: the progress line. */
static void sim_progress(void *ctx, int done, int total)
{
    cli_progress_show(ctx, "simulate: seeds", done, total, NULL, done == total);
}

/* The command line: -1 to go on, else the exit status. */
static int parse_args(int argc, char **argv, const char **config, const char **prefix,
                      cli_strs *set, cli_strs *unset, scm_simulate_study_opts *cli, int *quiet,
                      int *noplot)
{
    long d = -1, n = -1;
    int seeds = -1, mode = -1;
    double eta = -1.0, t_max = -1.0;
    cli_strs pos = {config, 0, 1};
    const cli_opt opts[] = {
        CLI_O("--d", CLI_LONG, &d, 1, 100000000L, "D", "dimension of the network (default 1000)"),
        CLI_O("--seeds", CLI_INT, &seeds, 1, SCM_SIMULATE_MAX_SEEDS, "S", "seeds (default 4)"),
        CLI_C("--mode", &mode, "online|batch", "MODE",
              "online: one-pass SGD on fresh samples (default);\nbatch: full-batch GD on N "
              "fixed samples"),
        CLI_O("--n", CLI_LONG, &n, 1, 1000000000L, "N", "samples of batch mode"),
        CLI_O("--eta", CLI_POS, &eta, 0, 0, "ETA", "learning rate (online 0.05, batch 0.02 d)"),
        CLI_O("--t-max", CLI_POS, &t_max, 0, 0, "T", "end time (default 10)"),
        CLI_O("--prefix", CLI_STR, prefix, 0, 0, "PREFIX",
              "of the files written (default: CONFIG's name with .sim;\n-o PREFIX is its old "
              "spelling, kept for this release)"),
        CLI_O("-o", CLI_STR, prefix, 0, 0, NULL, NULL),
        CLI_OPT_SET(set), CLI_OPT_UNSET(unset), CLI_OPT_THREADS(&cli->threads),
        CLI_F("--no-plot", noplot, "no figure"),
        CLI_OPT_QUIET(quiet, "no summary"),
        CLI_OPT_END};
    const cli_cmd cmd = {
        ME,
        "usage: scm simulate CONFIG.json [--d D] [--seeds S] [--mode online|batch] [--n N]\n"
        "                    [--eta ETA] [--t-max T] [--prefix PREFIX] [--set key=value]...\n"
        "                    [--unset key]... [--threads T] [--no-plot] [-q]\n"
        "\n"
        "Train a real network of dimension D (one-pass SGD on fresh Gaussian samples, or\n"
        "full-batch GD on N fixed samples) with the config's rule from S seeds, and the\n"
        "ODE from each seed's realised Q(0), R(0); write PREFIX.json, PREFIX.csv and\n"
        "PREFIX.png (the plot needs python3 with matplotlib).  The options override the\n"
        "config's \"simulate\" section.  Time is tau = eta t / d.  The output does not\n"
        "depend on the number of threads.\n",
        opts, CLI_EXIT_TEXT("0 done, 1 a run failed (the result file says which and why)"),
        &pos, 0};
    int rc = cli_parse(&cmd, argc, argv);
    if (rc >= 0)
        return rc;
    if (!*config)
        return cli_usage_error(ME, "CONFIG.json is required");
    scm_simulate_study_opts_given(cli, d, seeds, mode, n, eta, t_max);
    if (cli->threads == 0)
        cli->threads = cli_cpu_count();
    return -1;
}

/* PREFIX.json and PREFIX.csv, both or neither: 0, or the exit status. */
static int write_files(const scm_simulate_study *st, const scm_simulate_result *res,
                       const char *json_path, const char *csv_path)
{
    cJSON *json = scm_simulate_study_json(st, res);
    size_t len = 0;
    char *csv = scm_simulate_study_csv(st, res, &len);
    int rc = cli_write_json_with(ME, json_path, json, 1, csv_path, csv, len);
    free(csv);
    cJSON_Delete(json);
    return rc;
}

int scm_cmd_simulate(int argc, char **argv)
{
    const char *config = NULL, *prefix = NULL, *sets[MAX_SETS], *unsets[MAX_SETS];
    cli_strs set = {sets, 0, MAX_SETS}, unset = {unsets, 0, MAX_SETS};
    int quiet = 0, noplot = 0;
    scm_simulate_study_opts cli;
    scm_simulate_study_opts_default(&cli);
    cli.threads = 0;
    int a = parse_args(argc, argv, &config, &prefix, &set, &unset, &cli, &quiet, &noplot);
    if (a >= 0)
        return a;
    scm_simulate_study st;
    scm_simulate_result res;
    memset(&st, 0, sizeof st);
    memset(&res, 0, sizeof res);
    char *pfx = NULL, *path[3] = {NULL, NULL, NULL}; /* PREFIX.json, .csv, .png */
    scm_error err;
    scm_error_clear(&err);
    size_t len = 0;
    char *text = unset.n ? cli_config_text(ME, config, unsets, unset.n, &len)
                         : scm_output_read_file(config, (size_t)1 << 30, &len, &err);
    int rc = 2;
    if (!text) {
        if (!unset.n)
            fprintf(stderr, "%s: cannot read '%s' as JSON\n", ME, config);
        goto done;
    }
    if (scm_simulate_study_setup(text, len, config, sets, set.n, &cli, &st, &err)) {
        fprintf(stderr, "%s: %s\n", ME, err.msg);
        goto done;
    }
    pfx = prefix ? NULL : cli_output_name(config, ".sim");
    prefix = prefix ? prefix : pfx;
    if (!prefix || scm_simulate_study_paths(prefix, path, &err)) {
        fprintf(stderr, "%s: out of memory\n", ME);
        goto done;
    }
    cli_progress pr;
    cli_progress_start(&pr, 0);
    st.opts.progress = quiet ? NULL : sim_progress;
    st.opts.progress_ctx = &pr;
    scm_status s = scm_simulate_study_run(&st, &res, &err);
    if (s) {
        rc = cli_fail(ME, &err, s == SCM_ENOMEM ? 1 : 2);
        goto done;
    }
    if ((rc = write_files(&st, &res, path[0], path[1])))
        goto done;
    if (!quiet) /* out of memory here is said, not an exit status */
        cli_print(ME, scm_simulate_study_text(&st, &res));
    const int plotted = !noplot &&
                        cli_plot(ME, "plot_simulate.py", path[1], path[2], quiet) == 0 &&
                        access(path[2], F_OK) == 0;
    if (!quiet)
        printf("wrote      %s, %s%s%s\n", path[0], path[1], plotted ? ", " : "",
               plotted ? path[2] : "");
    if (res.failed)
        fprintf(stderr, "%s: a run failed (the result file says which and why)\n", ME);
    rc = res.failed ? 1 : 0;
done:
    scm_simulate_result_free(&res);
    scm_simulate_study_free(&st);
    free(text);
    free(pfx);
    for (int i = 0; i < 3; i++)
        free(path[i]);
    return rc;
}
