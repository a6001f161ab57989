/* sweep_exec.h (CLI): who computes the runs of `scm sweep` (and so of
 * `scm compare`, which runs its sweeps through scm_cmd_sweep).  The same
 * CLI sources are linked into two programs with two executors:
 *
 *   scm      exec_threads.c: scm_sweep_exec, pthreads of one process;
 *   scm-mpi  exec_mpi.c: the ranks of an MPI job (docs/sweeps.md, "MPI and
 *            clusters"); rank 0 runs the command, writes every file and
 *            computes too, the other ranks compute runs it hands out.
 *
 * Either way the records reach the caller's emit callback in index order,
 * so the runs file does not depend on the executor.  libscm knows nothing
 * of MPI: the choice is made at link time, and neither executor keeps
 * global state. */
#ifndef SCM_CLI_SWEEP_EXEC_H
#define SCM_CLI_SWEEP_EXEC_H

#include <stddef.h>

#include "scm/sweep.h"

/* The contract of scm_sweep_exec (sweep.h): run indices[0 .. n-1]
 * (increasing), call emit once per run in that order, serialised.
 * SCM_EINVAL if emit stopped the sweep, else the first run error (under MPI
 * its message names the rank). */
scm_status cli_sweep_exec(const scm_config *c, uint64_t base, const long *indices, long n,
                          int nthreads, const scm_sweep_families *fams, const scm_sweep_opts *o,
                          scm_sweep_emit_fn emit, void *user, scm_error *err);

/* 0 if this executor accepts --threads nthreads, else -1 with the reason
 * in msg (checked before any file is touched). */
int cli_sweep_exec_check(int nthreads, char *msg, size_t len);

/* How many runs compute at once with --threads nthreads, and what one of
 * them is called ("thread", "MPI rank"), for the timing line. */
int cli_sweep_exec_width(int nthreads);
const char *cli_sweep_exec_unit(void);

#endif
