/* parallel.c: see parallel.h. */
#include "core/parallel.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>

enum { PAR_MAX_THREADS = 64 };

typedef struct {
    void (*fn)(void *ctx, int tid, int i);
    void *ctx;
    int n;
    atomic_int next;
} par_loop;

typedef struct {
    par_loop *loop;
    int tid;
} par_worker;

static void run_items(par_loop *l, int tid)
{
    for (int i; (i = atomic_fetch_add(&l->next, 1)) < l->n;)
        l->fn(l->ctx, tid, i);
}

static void *worker(void *arg)
{
    par_worker *w = arg;
    run_items(w->loop, w->tid);
    return NULL;
}

/* The items of l on nthreads threads, the calling one included, with the
 * tids tid0 .. tid0 + nthreads - 1. */
static void run_on(par_loop *l, int nthreads, int tid0)
{
    if (nthreads > PAR_MAX_THREADS)
        nthreads = PAR_MAX_THREADS;
    if (nthreads > l->n)
        nthreads = l->n;
    pthread_t th[PAR_MAX_THREADS];
    par_worker w[PAR_MAX_THREADS];
    int started = 0;
    for (int t = 1; t < nthreads; t++) {
        w[started] = (par_worker){l, tid0 + t};
        if (pthread_create(&th[started], NULL, worker, &w[started]) != 0)
            break;
        started++;
    }
    run_items(l, tid0);
    for (int t = 0; t < started; t++)
        pthread_join(th[t], NULL);
}

void scm_parallel_for(int nthreads, int n, void (*fn)(void *ctx, int tid, int i), void *ctx)
{
    par_loop l = {fn, ctx, n, 0};
    run_on(&l, nthreads, 0);
}

struct scm_background {
    par_loop loop;
    par_worker w;
    pthread_t th;
};

scm_background *scm_background_start(int n, void (*fn)(void *ctx, int tid, int i), void *ctx)
{
    scm_background *b = malloc(sizeof *b);
    if (!b)
        return NULL;
    b->loop.fn = fn;
    b->loop.ctx = ctx;
    b->loop.n = n;
    atomic_init(&b->loop.next, 0);
    b->w = (par_worker){&b->loop, 0};
    if (pthread_create(&b->th, NULL, worker, &b->w) != 0) {
        free(b);
        return NULL;
    }
    return b;
}

void scm_background_finish(scm_background *b, int nthreads)
{
    if (!b)
        return;
    run_on(&b->loop, nthreads < 1 ? 1 : nthreads, 1);
    pthread_join(b->th, NULL);
    free(b);
}

void scm_background_stop(scm_background *b)
{
    if (!b)
        return;
    atomic_store(&b->loop.next, b->loop.n); /* no item is taken any more */
    pthread_join(b->th, NULL);
    free(b);
}

int scm_threads_online(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n < 1 ? 1 : n > 16 ? 16 : (int)n;
}
