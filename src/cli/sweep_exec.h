/* sweep_exec.h (CLI): who computes the runs of `scm sweep` and `scm
 * compare`.  The same CLI sources are linked into two programs with two
 * executors, each program's main() handing its own to scm_main, which
 * passes it down to the commands:
 *
 *   scm      exec_threads.c: scm_sweep_exec, pthreads of one process;
 *   scm-mpi  scm_mpi.c: scm_exec_mpi_sweep (src/exec/, exec_mpi.h), the
 *            ranks of an MPI job (docs/sweeps.md, "MPI and clusters");
 *            rank 0 runs the command, writes every file and computes too,
 *            the other ranks compute runs it hands out.
 *
 * Either way the records reach the caller's emit callback in index order,
 * so the runs file does not depend on the executor.  libscm knows nothing
 * of MPI (the MPI executor is the separate library of src/exec): it takes
 * the executor as a function pointer (sweepfile.h), and neither executor
 * keeps global state. */
#ifndef SCM_CLI_SWEEP_EXEC_H
#define SCM_CLI_SWEEP_EXEC_H

#include <stddef.h>

#include "scm/compare.h"
#include "scm/sweep.h"
#include "scm/sweepfile.h"

typedef struct {
    /* The contract of scm_sweep_exec (sweep.h): run indices[0 .. n-1]
     * (increasing), call emit once per run in that order, serialised.
     * SCM_EINVAL if emit stopped the sweep, else the first run error (under
     * MPI its message names the rank). */
    scm_sweep_exec_fn sweep_fn;
    /* 0 if this executor accepts --threads nthreads, else -1 with the
     * reason in msg (checked before any file is touched). */
    int (*check_fn)(int nthreads, char *msg, size_t len);
    /* How many runs compute at once with --threads nthreads, and what one
     * of them is called ("thread", "MPI rank"), for the timing line. */
    int (*width_fn)(int nthreads);
    const char *unit;
    /* 1: --threads defaults to 1 (scm-mpi: one run per rank); 0: to the
     * processors online. */
    int one_thread;
    /* The executor of a comparison's other jobs, the families of each K
     * and the stability verdicts (compare.h: scm_compare_jobs_exec on the
     * threads, scm_exec_mpi_jobs on the ranks), for compare and map. */
    scm_compare_jobs_fn jobs_fn;
} cli_executor;

#endif
