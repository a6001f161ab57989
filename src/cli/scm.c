/* scm.c: the `scm` command-line program's dispatcher, scm_main (main()
 * is in exec_threads.c for scm and scm_mpi.c for scm-mpi; sweep_exec.h).
 * The only place that touches process-wide state: GSL's error handler
 * (switched off, so that GSL returns codes instead of aborting), standard
 * streams and exit codes. */
#include <gsl/gsl_errno.h>
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "scm_version.h"

/* scm compare, or with --rule R1,R2,... one compare per rule and a table
 * across rules. */
static int cmd_compare_any(int argc, char **argv, const cli_executor *ex)
{
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "--rule") == 0)
            return scm_cmd_compare_rules(argc, argv, ex);
    return scm_cmd_compare(argc, argv, ex);
}

/* A command: its name, what follows it in the usage line, its line of
 * help, and its function (run, or run_ex for those that take the
 * program's executor). */
typedef struct {
    const char *name, *args, *help;
    int (*run)(int argc, char **argv);
    int (*run_ex)(int argc, char **argv, const cli_executor *ex);
} cli_command;

static const cli_command commands[] = {
    {"run", "CONFIG.json", "integrate the (Q, R) flow from one initial condition", scm_cmd_run,
     NULL},
    {"fixed-points", "", "enumerate the block-symmetric fixed-point families",
     scm_cmd_fixed_points, NULL},
    {"crosscheck", "", "random runs (ODE, weight-space GD) vs the enumeration",
     scm_cmd_crosscheck, NULL},
    {"sweep", "CONFIG.json", "many random initialisations, classified (JSON lines)", NULL,
     scm_cmd_sweep},
    {"merge", "RUNS.jsonl...", "combine sweep shards into a summary", scm_cmd_merge, NULL},
    {"compare", "", "sweeps for several K side by side: a report", NULL, cmd_compare_any},
    {"stability", "", "stability of a fixed point: perturbations and spectra",
     scm_cmd_stability, NULL},
    {"simulate", "CONFIG.json", "a real network of dimension d trained beside the ODE",
     scm_cmd_simulate, NULL},
    {"lintarget", "", "the linear target as a +-ReLU pair: phases, saddles", scm_cmd_lintarget,
     NULL},
    {"split", "", "split a neuron of a fixed point: the lambda line's class", scm_cmd_split,
     NULL},
    {"staircase", "", "plateaus of small-initialisation runs, escape times", scm_cmd_staircase,
     NULL},
    {"certify", "", "existence proofs of fixed points in ball arithmetic", scm_cmd_certify,
     NULL},
    {"map", "", "the basins of the families over a grid (docs/map.md)", NULL, scm_cmd_map},
};
#define N_COMMANDS (sizeof commands / sizeof commands[0])

static void usage(FILE *f)
{
    fprintf(f, "usage: scm <command> [options]\n"
               "\n"
               "Exact high-dimensional dynamics of soft committee machines (two-layer\n"
               "networks) in the teacher-student setting.\n"
               "\n"
               "commands:\n");
    for (size_t i = 0; i < N_COMMANDS; i++) {
        char head[64];
        snprintf(head, sizeof head, "%s%s%s", commands[i].name, commands[i].args[0] ? " " : "",
                 commands[i].args);
        fprintf(f, "  %-21s %s\n", head, commands[i].help);
    }
    fprintf(f, "\n"
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
    for (size_t i = 0; i < N_COMMANDS; i++)
        if (strcmp(cmd, commands[i].name) == 0)
            return commands[i].run ? commands[i].run(argc - 1, argv + 1)
                                   : commands[i].run_ex(argc - 1, argv + 1, ex);
    fprintf(stderr, "scm: unknown command '%s' (see scm --help)\n", cmd);
    return 2;
}
