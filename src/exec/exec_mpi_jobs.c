/* exec_mpi_jobs.c (exec): a comparison's jobs (compare.h: the families of
 * each K, the stability verdicts) over the ranks of an MPI job, for
 * `scm-mpi compare` and `scm-mpi map` (include/scm/exec_mpi.h, issue 29).
 * Before, rank 0 enumerated every cell's families alone while the other
 * ranks waited; now each job goes to whichever rank is free.
 *
 * A job's result is a pure function of its text (scm_compare_job_run), so
 * wherever it is computed the bytes are the same, and rank 0 keeps each
 * result at its job's index: the comparison's files do not depend on the
 * ranks.
 *
 * Protocol (tags of exec_mpi_internal.h; messages between rank 0 and one
 * worker, whose order MPI preserves):
 *   0 -> w  JOB          kind JOB_TASKS (the head only): the worker's
 *                        scm_exec_mpi_worker enters xmpi_worker_tasks.
 *   0 -> w  TASK         (index, job text), one at a time per worker: a
 *                        job takes seconds, so no queue is needed; index
 *                        -1: no more, the worker answers DONE and waits
 *                        for the next JOB.
 *   w -> 0  TASK_RESULT  (index, status, message, result text).
 * Rank 0 computes jobs on a thread of its own too (all of them with
 * -np 1), taking them from the same counter.  A job that fails on any rank
 * stops the handing out (the jobs under way finish) and is returned with
 * its rank.  Rank 0 that cannot allocate a result's buffer cannot receive
 * it: MPI's default error handler then ends the job (as a rank that dies
 * does). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "exec/exec_mpi_internal.h"
#include "scm/compare.h"
#include "scm/exec_mpi.h"

typedef struct {
    int64_t index;
    int32_t code, pad;
    char msg[sizeof(((scm_error *)0)->msg)];
} task_head;

/* SCM_MPI_TEST_FAIL_TASK=r:k makes rank r fail the k-th job (k >= 1) it
 * computes in one batch, as a job whose run failed, so that the tests can
 * see that the workers compute jobs and drive the error path.  Unset: no
 * effect (xmpi_injected_failure). */
#define FAIL_JOB_VAR "SCM_MPI_TEST_FAIL_TASK"

/* ---- worker ranks ------------------------------------------------------- */

/* Send the result of job index: its status, message and text. */
static void send_result(int64_t index, scm_status st, const scm_error *err, const char *out)
{
    size_t ol = st == SCM_OK && out ? strlen(out) : 0;
    if (ol > (size_t)INT32_MAX - sizeof(task_head)) {
        st = SCM_ENOMEM;
        ol = 0;
    }
    char *buf = malloc(sizeof(task_head) + ol);
    task_head h;
    memset(&h, 0, sizeof h);
    h.index = index;
    h.code = buf ? st : SCM_ENOMEM;
    if (h.code == SCM_ENOMEM && st != SCM_ENOMEM)
        snprintf(h.msg, sizeof h.msg, "out of memory for a job's result");
    else if (st)
        snprintf(h.msg, sizeof h.msg, "%s", st == SCM_ENOMEM && !err->msg[0] ? "out of memory"
                                                                             : err->msg);
    if (!buf) {
        MPI_Send(&h, (int)sizeof h, MPI_BYTE, 0, TAG_TASK_RESULT, MPI_COMM_WORLD);
        return;
    }
    memcpy(buf, &h, sizeof h);
    if (ol)
        memcpy(buf + sizeof h, out, ol);
    MPI_Send(buf, (int)(sizeof h + ol), MPI_BYTE, 0, TAG_TASK_RESULT, MPI_COMM_WORLD);
    free(buf);
}

scm_status xmpi_worker_tasks(int rank)
{
    long nth = 0; /* jobs computed in this batch */
    for (;;) {
        MPI_Status s;
        xmpi_wait_probe(0, TAG_TASK, &s);
        int len = 0;
        MPI_Get_count(&s, MPI_BYTE, &len);
        char *buf = len >= (int)sizeof(int64_t) ? malloc((size_t)len + 1) : NULL;
        if (!buf) /* cannot be received: the caller ends the MPI job */
            return len < (int)sizeof(int64_t) ? SCM_EINVAL : SCM_ENOMEM;
        MPI_Recv(buf, len, MPI_BYTE, 0, TAG_TASK, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        buf[len] = '\0';
        int64_t index;
        memcpy(&index, buf, sizeof index);
        if (index < 0) {
            free(buf);
            MPI_Send(NULL, 0, MPI_BYTE, 0, TAG_DONE, MPI_COMM_WORLD);
            return SCM_OK;
        }
        scm_error err;
        scm_error_clear(&err);
        char *out = NULL;
        scm_status st = xmpi_injected_failure(FAIL_JOB_VAR, rank, ++nth, &err);
        if (st == SCM_OK)
            st = scm_compare_job_run(buf + sizeof index, 1, &out, &err);
        free(buf);
        send_result(index, st, &err, out);
        free(out);
    }
}

/* ---- rank 0 ------------------------------------------------------------- */

typedef struct {
    scm_compare_job *jobs;
    int n;
    pthread_mutex_t mu;
    int next;       /* the next job to hand out */
    int stop;       /* a job failed: hand out no more */
    int local_done; /* rank 0's thread has ended */
    long local_jobs;
    int failed; /* the index of the failure kept (the lowest), or -1 */
    scm_status st;
    scm_error err;
} tasks;

/* Record the failure of job i (its message names the rank); keeps the one
 * of the lowest index.  The caller holds the lock. */
static void tasks_fail(tasks *t, int i, int rank, scm_status st, const char *msg)
{
    t->stop = 1;
    if (t->failed >= 0 && t->failed < i)
        return;
    t->failed = i;
    t->st = st;
    scm_error_set(&t->err, st, "rank %d: %s", rank, msg);
}

/* The next job for anyone, or -1. */
static int tasks_take(tasks *t)
{
    pthread_mutex_lock(&t->mu);
    int i = !t->stop && t->next < t->n ? t->next++ : -1;
    pthread_mutex_unlock(&t->mu);
    return i;
}

/* Rank 0's own compute thread. */
static void *tasks_local(void *arg)
{
    tasks *t = arg;
    for (int i; (i = tasks_take(t)) >= 0;) {
        scm_error err;
        scm_error_clear(&err);
        char *out = NULL;
        scm_status st = xmpi_injected_failure(FAIL_JOB_VAR, 0, ++t->local_jobs, &err);
        if (st == SCM_OK)
            st = scm_compare_job_run(t->jobs[i].in, 1, &out, &err);
        pthread_mutex_lock(&t->mu);
        if (st)
            tasks_fail(t, i, 0, st, err.msg);
        else
            t->jobs[i].out = out;
        pthread_mutex_unlock(&t->mu);
    }
    pthread_mutex_lock(&t->mu);
    t->local_done = 1;
    pthread_mutex_unlock(&t->mu);
    return NULL;
}

/* Send job i (or the end, i < 0) to worker w. */
static scm_status send_task(tasks *t, int w, int i)
{
    const int64_t index = i;
    size_t il = i >= 0 ? strlen(t->jobs[i].in) : 0;
    if (il > (size_t)INT32_MAX - sizeof index)
        return SCM_EINVAL;
    char *buf = malloc(sizeof index + il);
    if (!buf)
        return SCM_ENOMEM;
    memcpy(buf, &index, sizeof index);
    if (il)
        memcpy(buf + sizeof index, t->jobs[i].in, il);
    MPI_Send(buf, (int)(sizeof index + il), MPI_BYTE, w, TAG_TASK, MPI_COMM_WORLD);
    free(buf);
    return SCM_OK;
}

/* Keep every worker busy; the end to those left without a job.  Returns
 * how many messages were sent. */
static int hand_out(tasks *t, int nranks, int *busy, char *ended)
{
    int sent = 0;
    for (int w = 1; w < nranks; w++) {
        if (ended[w] || busy[w] >= 0)
            continue;
        int i = tasks_take(t);
        scm_status st = i >= 0 ? send_task(t, w, i) : SCM_OK;
        if (st) { /* this job could not be sent: a failure of rank 0's */
            pthread_mutex_lock(&t->mu);
            tasks_fail(t, i, 0, st, "cannot send a job");
            pthread_mutex_unlock(&t->mu);
            i = -1;
        }
        if (i >= 0) {
            busy[w] = i;
        } else {
            send_task(t, w, -1);
            ended[w] = 1;
        }
        sent++;
    }
    return sent;
}

/* Receive the one message that has arrived, if any; returns 1 if one did. */
static int receive(tasks *t, int *busy, char *finished)
{
    MPI_Status s;
    int flag = 0;
    MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &s);
    if (!flag)
        return 0;
    const int w = s.MPI_SOURCE;
    int len = 0;
    MPI_Get_count(&s, MPI_BYTE, &len);
    char *buf = malloc(len > 0 ? (size_t)len + 1 : 1);
    MPI_Recv(buf, buf ? len : 0, MPI_BYTE, w, s.MPI_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    pthread_mutex_lock(&t->mu);
    if (s.MPI_TAG == TAG_DONE) {
        finished[w] = 1;
    } else if (s.MPI_TAG != TAG_TASK_RESULT || len < (int)sizeof(task_head)) {
        tasks_fail(t, -1, 0, SCM_EINVAL, "an unexpected message from a worker");
    } else {
        task_head h;
        memcpy(&h, buf, sizeof h);
        const int i = busy[w];
        busy[w] = -1;
        h.msg[sizeof h.msg - 1] = '\0';
        buf[len] = '\0';
        char *out = h.code ? NULL : malloc((size_t)len - sizeof h + 1);
        if (h.index != i || i < 0)
            tasks_fail(t, -1, 0, SCM_EINVAL, "a worker returned another job than it was given");
        else if (h.code)
            tasks_fail(t, i, w, (scm_status)h.code, h.msg);
        else if (!out)
            tasks_fail(t, i, 0, SCM_ENOMEM, "out of memory for a job's result");
        else
            t->jobs[i].out = strcpy(out, buf + sizeof h);
        if (t->jobs[i < 0 ? 0 : i].out != out)
            free(out);
    }
    pthread_mutex_unlock(&t->mu);
    free(buf);
    return 1;
}

scm_status scm_exec_mpi_jobs(scm_compare_job *jobs, int n, int nthreads, scm_error *err)
{
    (void)nthreads; /* one job per rank at a time, on one thread */
    if (n < 0 || (n > 0 && !jobs))
        return scm_error_set(err, SCM_EINVAL, "bad job arguments");
    if (n == 0)
        return SCM_OK;
    int nranks = 1;
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    tasks t;
    memset(&t, 0, sizeof t);
    t.jobs = jobs;
    t.n = n;
    t.failed = -1;
    int *busy = malloc(sizeof *busy * (size_t)nranks);
    char *ended = calloc((size_t)nranks, 1), *finished = calloc((size_t)nranks, 1);
    if (!busy || !ended || !finished) {
        free(busy);
        free(ended);
        free(finished);
        return scm_error_set(err, SCM_ENOMEM, "out of memory starting the MPI jobs");
    }
    for (int w = 0; w < nranks; w++)
        busy[w] = -1;
    pthread_mutex_init(&t.mu, NULL);
    job_head h;
    memset(&h, 0, sizeof h);
    h.kind = JOB_TASKS;
    for (int w = 1; w < nranks; w++)
        MPI_Send(&h, (int)sizeof h, MPI_BYTE, w, TAG_JOB, MPI_COMM_WORLD);
    /* the workers' first jobs before rank 0's thread takes any */
    hand_out(&t, nranks, busy, ended);
    pthread_t th;
    const int local = pthread_create(&th, NULL, tasks_local, &t) == 0;
    if (!local) {
        pthread_mutex_lock(&t.mu);
        tasks_fail(&t, -1, 0, SCM_ENOMEM, "cannot start its compute thread");
        t.local_done = 1;
        pthread_mutex_unlock(&t.mu);
    }
    long us = 50;
    for (;;) {
        int busy_now = receive(&t, busy, finished);
        busy_now += hand_out(&t, nranks, busy, ended);
        int all = 1;
        for (int w = 1; w < nranks; w++)
            all &= finished[w];
        pthread_mutex_lock(&t.mu);
        all &= t.local_done;
        pthread_mutex_unlock(&t.mu);
        if (all)
            break;
        if (busy_now)
            us = 50;
        else
            xmpi_nap(&us);
    }
    if (local)
        pthread_join(th, NULL);
    pthread_mutex_destroy(&t.mu);
    free(busy);
    free(ended);
    free(finished);
    if (t.st && err)
        *err = t.err;
    return t.st;
}
