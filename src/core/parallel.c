/* parallel.c: see parallel.h. */
#include "core/parallel.h"

#include <pthread.h>
#include <stdatomic.h>
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

void scm_parallel_for(int nthreads, int n, void (*fn)(void *ctx, int tid, int i), void *ctx)
{
    par_loop l = {fn, ctx, n, 0};
    if (nthreads > PAR_MAX_THREADS)
        nthreads = PAR_MAX_THREADS;
    if (nthreads > n)
        nthreads = n;
    pthread_t th[PAR_MAX_THREADS];
    par_worker w[PAR_MAX_THREADS];
    int started = 0;
    for (int t = 1; t < nthreads; t++) {
        w[started] = (par_worker){&l, t};
        if (pthread_create(&th[started], NULL, worker, &w[started]) != 0)
            break;
        started++;
    }
    run_items(&l, 0);
    for (int t = 0; t < started; t++)
        pthread_join(th[t], NULL);
}

int scm_threads_online(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n < 1 ? 1 : n > 16 ? 16 : (int)n;
}
