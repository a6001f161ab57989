/* commands.h (CLI): the subcommands of `scm`.  Each takes the arguments
 * after the subcommand name (argv[0] is the subcommand), prints its own
 * usage on --help, reports errors on stderr as "scm <cmd>: message", and
 * returns the process exit status: 0 success, 1 a failed computation (a
 * result file that says so may exist), 2 bad input or usage. */
#ifndef SCM_CLI_COMMANDS_H
#define SCM_CLI_COMMANDS_H

#include "sweep_exec.h"

/* The whole program: argv[1] is the command (scm.c); ex computes the runs
 * of sweep and compare (the program's own executor, sweep_exec.h). */
int scm_main(int argc, char **argv, const cli_executor *ex);

int scm_cmd_run(int argc, char **argv);
int scm_cmd_fixed_points(int argc, char **argv);
int scm_cmd_sweep(int argc, char **argv, const cli_executor *ex);
int scm_cmd_stability(int argc, char **argv);
int scm_cmd_merge(int argc, char **argv);
int scm_cmd_compare(int argc, char **argv, const cli_executor *ex);
int scm_cmd_map(int argc, char **argv, const cli_executor *ex); /* scm map: docs/map.md */
/* scm compare --rule R1,R2,...: one compare per rule and a table across rules */
int scm_cmd_compare_rules(int argc, char **argv, const cli_executor *ex);
int scm_cmd_simulate(int argc, char **argv);
int scm_cmd_lintarget(int argc, char **argv);
int scm_cmd_split(int argc, char **argv);
int scm_cmd_staircase(int argc, char **argv);
/* scm crosscheck: exit 3 when an end point is unmatched */
int scm_cmd_crosscheck(int argc, char **argv);
/* scm certify: existence proofs in ball arithmetic (docs/certify.md) */
int scm_cmd_certify(int argc, char **argv);

#endif
