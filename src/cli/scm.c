/* scm.c: the `scm` command-line program's dispatcher, scm_main (main()
 * is in exec_threads.c for scm and exec_mpi.c for scm-mpi; sweep_exec.h).
 * The only place that touches process-wide state: GSL's error handler
 * (switched off, so that GSL returns codes instead of aborting), standard
 * streams and exit codes. */
#include <gsl/gsl_errno.h>
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "scm_version.h"

static void usage(FILE *f)
{
    fprintf(f,
            "usage: scm <command> [options]\n"
            "\n"
            "Exact high-dimensional dynamics of soft committee machines (two-layer\n"
            "networks) in the teacher-student setting.\n"
            "\n"
            "commands:\n"
            "  run CONFIG.json       integrate the (Q, R) flow from one initial condition\n"
            "  fixed-points          enumerate the block-symmetric fixed-point families\n"
            "  crosscheck            random runs (ODE, weight-space GD) vs the enumeration\n"
            "  sweep CONFIG.json     many random initialisations, classified (JSON lines)\n"
            "  merge RUNS.jsonl...   combine sweep shards into a summary\n"
            "  compare               sweeps for several K side by side: a report\n"
            "  stability             stability of a fixed point: perturbations and spectra\n"
            "  simulate CONFIG.json  a real network of dimension d trained beside the ODE\n"
            "  lintarget             the linear target as a +-ReLU pair: phases, saddles\n"
            "  split                 split a neuron of a fixed point: the lambda line's class\n"
            "  staircase             plateaus of small-initialisation runs, escape times\n"
            "  certify               existence proofs of fixed points in ball arithmetic\n"
            "  map                   the basins of the families over a grid (docs/map.md)\n"
            "\n"
            "options:\n"
            "  -h, --help            this message; `scm <command> --help` for a command\n"
            "  -V, --version         print the version\n");
}

int scm_main(int argc, char **argv, const cli_executor *ex)
{
    gsl_set_error_handler_off();
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    const char *cmd = argv[1];
    if (strcmp(cmd, "-h") == 0 || strcmp(cmd, "--help") == 0 || strcmp(cmd, "help") == 0) {
        usage(stdout);
        return 0;
    }
    if (strcmp(cmd, "-V") == 0 || strcmp(cmd, "--version") == 0) {
        printf("scm (scmode) %s\n", SCM_VERSION);
        return 0;
    }
    if (strcmp(cmd, "run") == 0)
        return scm_cmd_run(argc - 1, argv + 1);
    if (strcmp(cmd, "sweep") == 0)
        return scm_cmd_sweep(argc - 1, argv + 1, ex);
    if (strcmp(cmd, "merge") == 0)
        return scm_cmd_merge(argc - 1, argv + 1);
    if (strcmp(cmd, "compare") == 0) {
        for (int i = 2; i < argc; i++) /* several rules: one compare each, one table */
            if (strcmp(argv[i], "--rule") == 0)
                return scm_cmd_compare_rules(argc - 1, argv + 1, ex);
        return scm_cmd_compare(argc - 1, argv + 1, ex);
    }
    if (strcmp(cmd, "map") == 0)
        return scm_cmd_map(argc - 1, argv + 1, ex);
    if (strcmp(cmd, "stability") == 0)
        return scm_cmd_stability(argc - 1, argv + 1);
    if (strcmp(cmd, "simulate") == 0)
        return scm_cmd_simulate(argc - 1, argv + 1);
    if (strcmp(cmd, "lintarget") == 0)
        return scm_cmd_lintarget(argc - 1, argv + 1);
    if (strcmp(cmd, "staircase") == 0)
        return scm_cmd_staircase(argc - 1, argv + 1);
    if (strcmp(cmd, "split") == 0)
        return scm_cmd_split(argc - 1, argv + 1);
    if (strcmp(cmd, "certify") == 0)
        return scm_cmd_certify(argc - 1, argv + 1);
    if (strcmp(cmd, "crosscheck") == 0)
        return scm_cmd_crosscheck(argc - 1, argv + 1);
    if (strcmp(cmd, "fixed-points") == 0)
        return scm_cmd_fixed_points(argc - 1, argv + 1);
    fprintf(stderr, "scm: unknown command '%s' (see scm --help)\n", cmd);
    return 2;
}
