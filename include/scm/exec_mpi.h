/* exec_mpi.h: the runs of a sweep computed by the ranks of an MPI job
 * (src/exec/, built only when MPI is found, as the small library scmexecmpi
 * that scm-mpi links; libscm itself knows nothing of MPI).  docs/sweeps.md,
 * "MPI and clusters", describes the protocol.
 *
 * The caller owns MPI: it calls MPI_Init_thread with at least
 * MPI_THREAD_FUNNELED (rank 0 computes on one thread of its own besides the
 * one that talks to the workers) and MPI_Finalize.  Rank 0 runs the program
 * and hands scm_exec_mpi_sweep to the sweep (scm_sweep_file_opts.exec);
 * every other rank calls scm_exec_mpi_worker, which returns when rank 0
 * calls scm_exec_mpi_quit.  Records reach emit in index order, the same
 * bytes as scm_sweep_exec's, so a runs file does not depend on the ranks.
 *
 * Nothing here prints, exits, aborts or keeps global state.  For tests,
 * SCM_MPI_TEST_FAIL=r:k in the environment makes rank r fail the k-th run
 * it computes in a job (k = 0: worker rank r refuses every job). */
#ifndef SCM_EXEC_MPI_H
#define SCM_EXEC_MPI_H

#include <stdint.h>

#include "scm/compare.h"
#include "scm/status.h"
#include "scm/sweepfile.h"

/* On rank 0: the contract of scm_sweep_exec (scm_sweep_exec_fn), over every
 * rank of MPI_COMM_WORLD with one run per rank (nthreads must be 1).  A
 * run error on any rank stops the sweep and is returned with a message
 * that names the rank ("rank 2: run 17: ..."); so is a worker that refuses
 * the job (its config or families did not survive the trip unchanged). */
scm_status scm_exec_mpi_sweep(const scm_config *c, uint64_t base, const long *indices, long n,
                              int nthreads, const scm_sweep_families *fams,
                              const scm_sweep_opts *o, scm_sweep_emit_fn emit, void *user,
                              scm_error *err);

/* On rank 0: the contract of scm_compare_jobs_fn (compare.h), a
 * comparison's jobs (the families of each K, the stability verdicts) over
 * every rank of MPI_COMM_WORLD, one job per rank at a time (rank 0 too, on
 * a thread of its own); nthreads is not used.  A job that fails on any
 * rank stops the handing out and is returned naming the rank.  For tests,
 * SCM_MPI_TEST_FAIL_TASK=r:k makes rank r fail the k-th job it computes
 * in one call. */
scm_status scm_exec_mpi_jobs(scm_compare_job *jobs, int n, int nthreads, scm_error *err);

/* On every rank but 0 (rank is the caller's): compute the jobs rank 0
 * hands out until it calls scm_exec_mpi_quit; SCM_OK then.  An error
 * (a malformed job message, out of memory for one) cannot be reported to
 * rank 0, which would wait for this rank for ever: the caller must end
 * the job (MPI_Abort). */
scm_status scm_exec_mpi_worker(int rank, scm_error *err);

/* On rank 0, once, at the end: every worker's scm_exec_mpi_worker returns. */
void scm_exec_mpi_quit(void);

#endif
