/* exec_mpi.c (exec): the MPI executor of a sweep's runs, for `scm-mpi`
 * (include/scm/exec_mpi.h; docs/sweeps.md, "MPI and clusters").
 *
 * Rank 0 runs the command exactly as `scm` does: it parses the arguments,
 * reads and writes every file (resume, header, records, summaries,
 * reports) and computes runs on one thread of its own.  The other ranks
 * own no file: each waits for a job, computes the runs rank 0 hands it one
 * at a time, and returns their records.  A run is a pure function of
 * (config, base seed, index, families, options), so wherever it runs its
 * record is the same bytes; rank 0 parks records in a reorder window and
 * emits them in index order, as the threaded executor does, so the runs
 * file is byte-identical to `scm sweep --threads T` of the same seeds.
 *
 * Protocol (tags below; all messages between rank 0 and one worker, whose
 * order MPI preserves):
 *   0 -> w  JOB     kind, base seed, sweep options, and the sweep header
 *                   (config used, families) as JSON text; kind QUIT ends
 *                   the worker's process.
 *   w -> 0  READY   0, or the reason the worker cannot run this job (its
 *                   rebuilt header must equal the one sent: a config that
 *                   does not survive the round trip is refused, not run).
 *   0 -> w  WORK    (position, index) of one run; position END: finish the
 *                   runs received, then DONE; position ABORT: drop them,
 *                   then DONE.  Rank 0 keeps DEPTH runs queued per worker
 *                   so that no worker waits for its next run.
 *   w -> 0  RESULT  (position, record);  ERROR (position, status, message)
 *   w -> 0  DONE    the worker is back waiting for a job.
 * A job ends when every worker has sent DONE and rank 0's own thread has
 * stopped, so no message of a job can reach the next one.  Waits poll
 * (MPI_Iprobe, then a sleep of up to 5 ms) instead of blocking: Open MPI's
 * blocking calls spin a core, and workers wait whenever rank 0 works
 * alone (family enumeration, stability, traces of scm compare).
 *
 * Failures: a run error on any rank stops the sweep (ABORT to the others)
 * and is reported with its rank; a rank that dies takes the job down
 * (mpirun's default), and the runs file, written and fsync'ed one record
 * at a time by rank 0, is a prefix that --resume completes.  Nothing here
 * prints or aborts: errors travel back as scm_status + scm_error, and the
 * program decides (a worker that cannot read its job has no way to tell
 * rank 0, so scm-mpi's main aborts the job then). */
#include <mpi.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "scm/config.h"
#include "scm/exec_mpi.h"
#include "scm/output.h"
#include "scm/sweep.h"
#include "scm/sweepfile.h"
#include "exec/exec_mpi_internal.h"

enum { POS_END = -1, POS_ABORT = -2 };
#define DEPTH 2 /* runs queued per worker */

typedef struct {
    long pos, index;
} work_msg;

typedef struct {
    long pos;
    scm_sweep_record rec;
} result_msg;

typedef struct {
    long pos;
    int code;
    char msg[sizeof(((scm_error *)0)->msg)];
} error_msg;

/* ---- polling waits ------------------------------------------------------ */

/* ---- fault injection (tests) -------------------------------------------- */

/* SCM_MPI_TEST_FAIL=r:k makes rank r fail the k-th run (k >= 1) it
 * computes in a job as a run error would (out of memory, say), so that
 * tests/test_sweep_mpi.sh can drive the error path: the sweep stops, the
 * message names the rank, the file keeps the records before the failed
 * run.  (By the k-th run, not by index: which runs a rank gets depends on
 * timing, but every worker is handed DEPTH runs before anything else
 * starts.)  k = 0: worker
 * rank r refuses every job (its READY carries the error).  Unset: no
 * effect (xmpi_injected_failure). */
#define FAIL_RUN_VAR "SCM_MPI_TEST_FAIL"

/* ---- worker ranks ------------------------------------------------------- */

/* Rebuild the job from its header text; 0, or an error in err. */
static scm_status worker_setup(const char *text, const char *fams_text, const job_head *h,
                               const scm_sweep_opts *o, scm_config **c,
                               scm_sweep_families *fams, scm_model **m, scm_error *err)
{
    scm_status st = SCM_OK;
    cJSON *hj = cJSON_Parse(text);
    char *ctext = hj ? scm_output_print(cJSON_GetObjectItemCaseSensitive(hj, "config"), 1)
                     : NULL;
    cJSON_Delete(hj);
    if (!ctext)
        return scm_error_set(err, SCM_EINVAL, "the job's header has no config");
    st = scm_config_parse(ctext, "(the sweep's config, from rank 0)", NULL, 0, c, err);
    free(ctext);
    if (st)
        return st;
    if ((st = scm_sweep_families_parse(fams_text, "(the sweep's families, from rank 0)", fams,
                                       err)))
        return st;
    /* The round trip must be exact: the header rebuilt from what this rank
     * parsed equals the one rank 0 wrote. */
    char *again = scm_sweep_header_json_opts(*c, h->base, 0, 0, 1, fams, o);
    int same = again && strcmp(again, text) == 0;
    free(again);
    if (!same)
        return scm_error_set(err, SCM_EINVAL,
                             "the sweep's config or families do not survive the trip to a "
                             "worker rank unchanged");
    *m = scm_config_model(*c, err);
    if (!*m)
        return err->code ? err->code : SCM_EINVAL;
    /* the points' canonical forms and certificates, once for all runs */
    return fams->n > 0 ? scm_sweep_families_prepare(fams, *m, err) : SCM_OK;
}

static void worker_job(const char *text, const char *fams_text, const job_head *h, int rank)
{
    scm_error err;
    scm_error_clear(&err);
    scm_config *c = NULL;
    scm_model *m = NULL;
    scm_sweep_families fams = {0, NULL, NULL};
    scm_sweep_opts o;
    scm_sweep_opts_default(&o);
    o.match_rtol = h->match_rtol;
    o.match_atol = h->match_atol;
    o.dead_q = h->dead_q;
    o.loose_grad_stop = h->loose_grad_stop;
    o.certify = h->certify;
    o.certify_grad = h->certify_grad;
    o.certify_global = h->certify_global;
    o.certify_rmax = h->certify_rmax;
    scm_status st = worker_setup(text, fams_text, h, &o, &c, &fams, &m, &err);
    if (st == SCM_OK) /* SCM_MPI_TEST_FAIL=r:0: rank r refuses the job */
        st = xmpi_injected_failure(FAIL_RUN_VAR, rank, 0, &err);
    error_msg ready;
    memset(&ready, 0, sizeof ready);
    ready.code = st;
    if (st)
        snprintf(ready.msg, sizeof ready.msg, "%s", err.msg);
    MPI_Send(&ready, (int)sizeof ready, MPI_BYTE, 0, TAG_READY, MPI_COMM_WORLD);
    if (st)
        goto out; /* rank 0 ends the job without work for this rank */

    work_msg q[DEPTH + 1];
    int qn = 0, ended = 0, aborted = 0;
    long nth = 0; /* runs computed in this job */
    result_msg *res = malloc(sizeof *res);
    for (;;) {
        /* Take the work that has arrived; wait for some when idle. */
        while (!ended) {
            MPI_Status s;
            int flag = 0;
            if (qn == 0)
                xmpi_wait_probe(0, TAG_WORK, &s);
            else
                MPI_Iprobe(0, TAG_WORK, MPI_COMM_WORLD, &flag, &s);
            if (qn > 0 && !flag)
                break;
            work_msg w;
            MPI_Recv(&w, (int)sizeof w, MPI_BYTE, 0, TAG_WORK, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            if (w.pos < 0) {
                ended = 1;
                aborted = w.pos == POS_ABORT;
            } else if (qn <= DEPTH) {
                q[qn++] = w;
            }
        }
        if (aborted || qn == 0)
            break;
        work_msg w = q[0];
        memmove(q, q + 1, sizeof *q * (size_t)--qn);
        scm_status rs = res ? SCM_OK : SCM_ENOMEM;
        if (rs == SCM_OK) {
            scm_error_clear(&err);
            rs = xmpi_injected_failure(FAIL_RUN_VAR, rank, ++nth, &err);
            if (rs == SCM_OK)
                rs = scm_sweep_run_one(c, m, h->base, w.index, &fams, &o, &res->rec, &err);
        } else {
            scm_error_set(&err, SCM_ENOMEM, "out of memory");
        }
        if (rs == SCM_OK) {
            res->pos = w.pos;
            MPI_Send(res, (int)sizeof *res, MPI_BYTE, 0, TAG_RESULT, MPI_COMM_WORLD);
        } else {
            error_msg e;
            memset(&e, 0, sizeof e);
            e.pos = w.pos;
            e.code = rs;
            snprintf(e.msg, sizeof e.msg, "%s", err.msg);
            MPI_Send(&e, (int)sizeof e, MPI_BYTE, 0, TAG_ERROR, MPI_COMM_WORLD);
        }
    }
    free(res);
    /* After an error rank 0 sends ABORT: wait for END or ABORT so that no
     * WORK message of this job is left behind. */
    while (!ended) {
        MPI_Status s;
        xmpi_wait_probe(0, TAG_WORK, &s);
        work_msg w;
        MPI_Recv(&w, (int)sizeof w, MPI_BYTE, 0, TAG_WORK, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        ended = w.pos < 0;
    }
    MPI_Send(NULL, 0, MPI_BYTE, 0, TAG_DONE, MPI_COMM_WORLD);
out:
    scm_model_free(m);
    scm_sweep_families_free(&fams);
    scm_config_free(c);
}

/* A worker's life: jobs until QUIT. */
scm_status scm_exec_mpi_worker(int rank, scm_error *err)
{
    for (;;) {
        MPI_Status s;
        xmpi_wait_probe(0, TAG_JOB, &s);
        int len = 0;
        MPI_Get_count(&s, MPI_BYTE, &len);
        char *buf = len >= (int)sizeof(job_head) ? malloc((size_t)len + 1) : NULL;
        if (!buf) /* no way to report it to rank 0 within the protocol */
            return scm_error_set(err, len < (int)sizeof(job_head) ? SCM_EINVAL : SCM_ENOMEM,
                                 "rank %d: %s (a job of %d bytes)", rank,
                                 len < (int)sizeof(job_head) ? "malformed job message"
                                                             : "out of memory",
                                 len);
        MPI_Recv(buf, len, MPI_BYTE, 0, TAG_JOB, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        buf[len] = '\0';
        job_head h;
        memcpy(&h, buf, sizeof h);
        if (h.kind == JOB_QUIT) {
            free(buf);
            return SCM_OK;
        }
        if (h.kind == JOB_TASKS) {
            free(buf);
            scm_status st = xmpi_worker_tasks(rank);
            if (st)
                return scm_error_set(err, st, "rank %d: cannot receive a job of a comparison",
                                     rank);
            continue;
        }
        /* the header, then after its NUL the families */
        const char *text = buf + sizeof h, *nul = memchr(text, '\0', (size_t)len - sizeof h);
        worker_job(text, nul && nul < buf + len ? nul + 1 : "[]", &h, rank);
        free(buf);
    }
}

void scm_exec_mpi_quit(void)
{
    int nranks = 1;
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    job_head quit;
    memset(&quit, 0, sizeof quit);
    quit.kind = JOB_QUIT;
    for (int w = 1; w < nranks; w++)
        MPI_Send(&quit, (int)sizeof quit, MPI_BYTE, w, TAG_JOB, MPI_COMM_WORLD);
}

/* ---- rank 0 ------------------------------------------------------------- */

typedef struct {
    const scm_config *c;
    const scm_model *m;
    uint64_t base;
    const long *idx;
    long n;
    const scm_sweep_families *fams;
    const scm_sweep_opts *o;

    pthread_mutex_t mu;
    pthread_cond_t cv;
    long window;
    scm_sweep_record *ring;
    char *done;
    long next_take, next_emit; /* positions in idx */
    long local_runs;           /* runs taken by rank 0's thread */
    int stop, local_done;
    scm_status st;
    scm_error err;
} master;

/* Record the first failure; the caller holds the lock. */
static void master_fail(master *s, scm_status st, const scm_error *e)
{
    if (s->stop)
        return;
    s->stop = 1;
    s->st = st;
    s->err = *e;
    pthread_cond_broadcast(&s->cv);
}

/* Store the record of position pos; the caller holds the lock. */
static void master_store(master *s, long pos, const scm_sweep_record *r)
{
    if (s->stop || pos < s->next_emit || pos >= s->next_emit + s->window)
        return;
    s->ring[pos % s->window] = *r;
    s->done[pos % s->window] = 1;
}

/* Rank 0's own compute thread: takes positions like a worker, but from
 * memory. */
static void *master_local(void *arg)
{
    master *s = arg;
    scm_sweep_record rec;
    scm_error err;
    pthread_mutex_lock(&s->mu);
    for (;;) {
        while (!s->stop && s->next_take < s->n && s->next_take >= s->next_emit + s->window)
            pthread_cond_wait(&s->cv, &s->mu);
        if (s->stop || s->next_take >= s->n)
            break;
        long pos = s->next_take++;
        pthread_mutex_unlock(&s->mu);
        scm_error_clear(&err);
        scm_status st = xmpi_injected_failure(FAIL_RUN_VAR, 0, ++s->local_runs, &err);
        if (st == SCM_OK)
            st = scm_sweep_run_one(s->c, s->m, s->base, s->idx[pos], s->fams, s->o, &rec, &err);
        pthread_mutex_lock(&s->mu);
        if (st) {
            scm_error e;
            scm_error_set(&e, st, "rank 0: run %ld: %s", s->idx[pos], err.msg);
            master_fail(s, st, &e);
            break;
        }
        master_store(s, pos, &rec);
    }
    s->local_done = 1;
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

static void send_work(int w, long pos, long index)
{
    work_msg m = {pos, index};
    MPI_Send(&m, (int)sizeof m, MPI_BYTE, w, TAG_WORK, MPI_COMM_WORLD);
}

/* Send the job to every worker and collect their READY; 0, or the first
 * refusal in err (the workers that accepted get ABORT and answer DONE). */
static scm_status master_start(const char *header, const char *fams_text, uint64_t base,
                               const scm_sweep_opts *o, int nranks, scm_error *err)
{
    size_t hl = strlen(header) + 1, fl = strlen(fams_text);
    job_head h = {JOB_SWEEP, o->certify, base, o->match_rtol, o->match_atol, o->dead_q,
                  o->loose_grad_stop, o->certify_grad, o->certify_global, o->certify_rmax};
    if (hl + fl > (size_t)INT32_MAX - sizeof h)
        return scm_error_set(err, SCM_EINVAL, "the sweep's header is too long for MPI");
    char *buf = malloc(sizeof h + hl + fl);
    if (!buf)
        return scm_error_set(err, SCM_ENOMEM, "out of memory starting the MPI sweep");
    memcpy(buf, &h, sizeof h);
    memcpy(buf + sizeof h, header, hl); /* with its NUL */
    memcpy(buf + sizeof h + hl, fams_text, fl);
    for (int w = 1; w < nranks; w++)
        MPI_Send(buf, (int)(sizeof h + hl + fl), MPI_BYTE, w, TAG_JOB, MPI_COMM_WORLD);
    free(buf);
    scm_status st = SCM_OK;
    char *ok = calloc((size_t)nranks, 1);
    for (int got = 1; got < nranks; got++) {
        MPI_Status s;
        xmpi_wait_probe(MPI_ANY_SOURCE, TAG_READY, &s);
        error_msg e;
        MPI_Recv(&e, (int)sizeof e, MPI_BYTE, s.MPI_SOURCE, TAG_READY, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);
        if (e.code == SCM_OK && ok)
            ok[s.MPI_SOURCE] = 1;
        else if (st == SCM_OK)
            st = scm_error_set(err, e.code ? (scm_status)e.code : SCM_ENOMEM, "rank %d: %s",
                               s.MPI_SOURCE, e.code ? e.msg : "out of memory");
    }
    if (st) {
        for (int w = 1; w < nranks; w++)
            if (!ok || ok[w]) {
                send_work(w, POS_ABORT, 0);
                MPI_Recv(NULL, 0, MPI_BYTE, w, TAG_DONE, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            }
    }
    free(ok);
    return st;
}

/* Receive every message that has arrived; returns how many. */
static int master_receive(master *s, int *outstanding, char *finished, result_msg *res)
{
    int got = 0;
    for (;;) {
        MPI_Status st;
        int flag = 0;
        MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &st);
        if (!flag)
            return got;
        got++;
        const int w = st.MPI_SOURCE;
        if (st.MPI_TAG == TAG_RESULT) {
            MPI_Recv(res, (int)sizeof *res, MPI_BYTE, w, TAG_RESULT, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE);
            outstanding[w]--;
            pthread_mutex_lock(&s->mu);
            master_store(s, res->pos, &res->rec);
            pthread_mutex_unlock(&s->mu);
        } else if (st.MPI_TAG == TAG_ERROR) {
            error_msg e;
            MPI_Recv(&e, (int)sizeof e, MPI_BYTE, w, TAG_ERROR, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            outstanding[w]--;
            scm_error se;
            scm_error_set(&se, (scm_status)e.code, "rank %d: run %ld: %s", w,
                          e.pos >= 0 && e.pos < s->n ? s->idx[e.pos] : -1L, e.msg);
            pthread_mutex_lock(&s->mu);
            master_fail(s, (scm_status)e.code, &se);
            pthread_mutex_unlock(&s->mu);
        } else if (st.MPI_TAG == TAG_DONE) {
            MPI_Recv(NULL, 0, MPI_BYTE, w, TAG_DONE, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            finished[w] = 1;
        } else {
            /* Nothing else is sent to rank 0 during a job: a protocol bug.
             * Drop the message and stop the sweep; the workers still get
             * ABORT and answer DONE, so the job ends cleanly. */
            int len = 0;
            MPI_Get_count(&st, MPI_BYTE, &len);
            char *junk = malloc(len > 0 ? (size_t)len : 1);
            MPI_Recv(junk, junk ? len : 0, MPI_BYTE, w, st.MPI_TAG, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE);
            free(junk);
            scm_error se;
            scm_error_set(&se, SCM_EINVAL, "rank 0: unexpected message (tag %d) from rank %d",
                          st.MPI_TAG, w);
            pthread_mutex_lock(&s->mu);
            master_fail(s, SCM_EINVAL, &se);
            pthread_mutex_unlock(&s->mu);
        }
    }
}

/* Emit the records that are next in order; returns how many. */
static int master_emit(master *s, scm_sweep_emit_fn emit, void *user)
{
    int n = 0;
    scm_sweep_record r;
    pthread_mutex_lock(&s->mu);
    while (!s->stop && s->next_emit < s->n && s->done[s->next_emit % s->window]) {
        const long e = s->next_emit % s->window;
        r = s->ring[e];
        s->done[e] = 0;
        pthread_mutex_unlock(&s->mu);
        int stop = emit(&r, user); /* the file's I/O, outside the lock */
        pthread_mutex_lock(&s->mu);
        s->next_emit++;
        n++;
        if (stop) {
            scm_error se;
            scm_error_set(&se, SCM_EINVAL, "the sweep was stopped at run %ld", r.index);
            master_fail(s, SCM_EINVAL, &se);
        }
    }
    if (n)
        pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
    return n;
}

/* Keep every worker's queue full; END or ABORT when there is no more to
 * give.  Returns how many messages were sent. */
static int master_hand_out(master *s, int nranks, int *outstanding, char *ended)
{
    int sent = 0;
    for (int w = 1; w < nranks; w++) {
        if (ended[w])
            continue;
        pthread_mutex_lock(&s->mu);
        while (!s->stop && outstanding[w] < DEPTH && s->next_take < s->n &&
               s->next_take < s->next_emit + s->window) {
            long pos = s->next_take++;
            pthread_mutex_unlock(&s->mu);
            send_work(w, pos, s->idx[pos]);
            outstanding[w]++;
            sent++;
            pthread_mutex_lock(&s->mu);
        }
        int stop = s->stop, all = s->next_take >= s->n;
        pthread_mutex_unlock(&s->mu);
        if (stop || all) {
            send_work(w, stop ? POS_ABORT : POS_END, 0);
            ended[w] = 1;
            sent++;
        }
    }
    return sent;
}

scm_status scm_exec_mpi_sweep(const scm_config *c, uint64_t base, const long *indices, long n,
                              int nthreads, const scm_sweep_families *fams,
                              const scm_sweep_opts *o, scm_sweep_emit_fn emit, void *user,
                              scm_error *err)
{
    if (nthreads != 1)
        return scm_error_set(err, SCM_EINVAL, "scm-mpi computes one run per rank: start more "
                                              "ranks (mpirun -np N) instead of --threads");
    if (n < 0 || (n > 0 && !indices) || !emit)
        return scm_error_set(err, SCM_EINVAL, "bad sweep arguments");
    for (long i = 1; i < n; i++)
        if (indices[i] <= indices[i - 1])
            return scm_error_set(err, SCM_EINVAL, "run indices must increase");
    scm_status st = scm_sweep_opts_check(o, err);
    if (st)
        return st;
    if (n == 0)
        return SCM_OK;
    int nranks = 1;
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    master s;
    memset(&s, 0, sizeof s);
    int *outstanding = calloc((size_t)nranks, sizeof *outstanding);
    char *ended = calloc((size_t)nranks, 1), *finished = calloc((size_t)nranks, 1);
    result_msg *res = malloc(sizeof *res);
    char *header = scm_sweep_header_json_opts(c, base, 0, 0, 1, fams, o);
    char *fams_text = scm_sweep_families_json(fams);
    /* rank 0's thread runs on the list the workers read back (its own copy,
     * with the cache of the points' canonical forms and certificates) */
    scm_sweep_families shared = {0, NULL, NULL};
    scm_model *m = scm_config_model(c, err);
    if (!m) {
        st = err && err->code ? err->code : SCM_EINVAL;
        goto out;
    }
    s.window = 64L * ((long)(nranks - 1) * DEPTH + 1);
    s.ring = malloc(sizeof *s.ring * (size_t)s.window);
    s.done = calloc((size_t)s.window, 1);
    if (fams_text && (st = scm_sweep_families_parse(fams_text, "(the sweep's families)",
                                                     &shared, err)))
        goto out;
    if (shared.n > 0 && (st = scm_sweep_families_prepare(&shared, m, err)))
        goto out;
    if (!outstanding || !ended || !finished || !res || !header || !fams_text || !s.ring ||
        !s.done) {
        st = scm_error_set(err, SCM_ENOMEM, "out of memory starting the MPI sweep");
        goto out;
    }
    if ((st = master_start(header, fams_text, base, o, nranks, err)))
        goto out;
    s.c = c;
    s.m = m;
    s.base = base;
    s.idx = indices;
    s.n = n;
    s.fams = &shared;
    s.o = o;
    pthread_mutex_init(&s.mu, NULL);
    pthread_cond_init(&s.cv, NULL);
    /* Every worker's first runs before rank 0's thread starts: on a busy
     * machine that thread could otherwise take every run of a short sweep
     * before the main thread hands any out. */
    master_hand_out(&s, nranks, outstanding, ended);
    pthread_t th;
    int local = pthread_create(&th, NULL, master_local, &s) == 0;
    if (!local) {
        scm_error se;
        scm_error_set(&se, SCM_ENOMEM, "rank 0: cannot start its compute thread");
        pthread_mutex_lock(&s.mu);
        master_fail(&s, SCM_ENOMEM, &se);
        s.local_done = 1;
        pthread_mutex_unlock(&s.mu);
    }
    for (;;) {
        int busy = master_receive(&s, outstanding, finished, res);
        busy += master_emit(&s, emit, user);
        busy += master_hand_out(&s, nranks, outstanding, ended);
        int all = 1;
        for (int w = 1; w < nranks; w++)
            all &= finished[w];
        pthread_mutex_lock(&s.mu);
        all &= s.local_done;
        pthread_mutex_unlock(&s.mu);
        if (all) {
            master_emit(&s, emit, user); /* the last records in order */
            break;
        }
        if (!busy) {
            struct timespec ts = {0, 500000L};
            nanosleep(&ts, NULL);
        }
    }
    if (local)
        pthread_join(th, NULL);
    pthread_cond_destroy(&s.cv);
    pthread_mutex_destroy(&s.mu);
    st = s.st;
    if (st && err)
        *err = s.err;
    else if (!st && s.next_emit != n)
        st = scm_error_set(err, SCM_EINVAL, "rank 0: %ld of %ld runs were not emitted",
                           n - s.next_emit, n);
out:
    free(outstanding);
    free(ended);
    free(finished);
    free(res);
    free(header);
    free(fams_text);
    scm_sweep_families_free(&shared);
    free(s.ring);
    free(s.done);
    scm_model_free(m);
    return st;
}
