/* exec_mpi_internal.h: what the two halves of the MPI executor share: the
 * sweep's runs (exec_mpi.c) and a comparison's jobs (exec_mpi_jobs.c).
 * Both are driven by rank 0 one at a time, so their messages never meet;
 * the protocol is at the top of each file. */
#ifndef SCM_EXEC_MPI_INTERNAL_H
#define SCM_EXEC_MPI_INTERNAL_H

#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "scm/status.h"

enum {
    TAG_JOB = 1,
    TAG_READY,
    TAG_WORK,
    TAG_RESULT,
    TAG_ERROR,
    TAG_DONE,
    TAG_TASK,       /* 0 -> w: one job of a comparison, or its end */
    TAG_TASK_RESULT /* w -> 0: its result */
};
enum { JOB_QUIT = 0, JOB_SWEEP = 1, JOB_TASKS = 2 };

/* A job: this head, then (JOB_SWEEP) the sweep's header (NUL-terminated),
 * then the families with their points (scm_sweep_families_json: the early
 * stop needs the points, which the header does not carry). */
typedef struct {
    int32_t kind, certify;
    uint64_t base;
    double match_rtol, match_atol, dead_q, loose_grad_stop;
    double certify_grad, certify_global, certify_rmax;
} job_head;

/* Sleep a little, longer each time up to 5 ms (*us: the last nap). */
static inline void xmpi_nap(long *us)
{
    struct timespec ts = {0, *us * 1000L};
    nanosleep(&ts, NULL);
    if (*us < 5000)
        *us *= 2;
}

/* Wait for a message from src (or MPI_ANY_SOURCE) with tag (or
 * MPI_ANY_TAG) without spinning (Open MPI's blocking calls spin a core);
 * its envelope in *status. */
static inline void xmpi_wait_probe(int src, int tag, MPI_Status *status)
{
    long us = 50;
    int flag = 0;
    for (;;) {
        MPI_Iprobe(src, tag, MPI_COMM_WORLD, &flag, status);
        if (flag)
            return;
        xmpi_nap(&us);
    }
}

/* Fault injection for the tests: the environment variable var = "r:k"
 * makes rank r fail the k-th run or job it computes (nth == k); unset, or
 * another rank or count: SCM_OK. */
static inline scm_status xmpi_injected_failure(const char *var, int rank, long nth, scm_error *err)
{
    const char *v = getenv(var);
    long r, k;
    if (v && sscanf(v, "%ld:%ld", &r, &k) == 2 && r == rank && nth == k)
        return scm_error_set(err, SCM_EINVAL, "failure injected by %s=%s", var, v);
    return SCM_OK;
}

/* A worker's part of a JOB_TASKS job (exec_mpi_jobs.c): compute the jobs
 * rank 0 sends until it sends the end, then answer DONE; SCM_OK.  A job
 * message that cannot be received (no memory for it) is SCM_ENOMEM, and
 * the caller must end the MPI job. */
scm_status xmpi_worker_tasks(int rank);

#endif
