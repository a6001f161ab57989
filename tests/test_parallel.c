/* test_parallel.c: src/core/parallel.h.  scm_parallel_for runs every item
 * exactly once on 1 to 8 threads, each with a tid below the count; a
 * background loop (scm_background_start) finished with helpers runs every
 * item exactly once, its own thread as tid 0 and the helpers as 1 .. T;
 * stopped at once it leaves items not run; NULL is a no-op for both. */
#include <stdatomic.h>
#include <string.h>

#include "core/parallel.h"
#include "testutil.h"

enum { N = 400, TIDS = 16 };

typedef struct {
    atomic_int runs[N];
    atomic_int bad_tid;
    int max_tid; /* tids must be in [0, max_tid] */
    long spin;   /* work per item */
    atomic_int by_tid[TIDS];
} items;

static void item(void *ctx, int tid, int i)
{
    items *x = ctx;
    volatile double acc = 0.0;
    for (long k = 0; k < x->spin; k++)
        acc += 1e-9 * (double)k;
    if (tid < 0 || tid > x->max_tid || tid >= TIDS)
        atomic_fetch_add(&x->bad_tid, 1);
    else
        atomic_fetch_add(&x->by_tid[tid], 1);
    atomic_fetch_add(&x->runs[i], 1);
}

static void reset(items *x, int max_tid, long spin)
{
    for (int i = 0; i < N; i++)
        atomic_init(&x->runs[i], 0);
    for (int t = 0; t < TIDS; t++)
        atomic_init(&x->by_tid[t], 0);
    atomic_init(&x->bad_tid, 0);
    x->max_tid = max_tid;
    x->spin = spin;
}

/* items run: how many ran, and whether any ran twice */
static int count_runs(items *x, int *twice)
{
    int ran = 0;
    *twice = 0;
    for (int i = 0; i < N; i++) {
        int r = atomic_load(&x->runs[i]);
        ran += r > 0;
        *twice |= r > 1;
    }
    return ran;
}

int main(void)
{
    static items x;
    int twice;
    for (int T = 1; T <= 8; T++) {
        reset(&x, T - 1, 200);
        scm_parallel_for(T, N, item, &x);
        CHECK(count_runs(&x, &twice) == N && !twice && atomic_load(&x.bad_tid) == 0,
              "parallel_for on %d threads", T);
    }
    for (int T = 1; T <= 4; T++) { /* background, then finished with T threads */
        reset(&x, T, 20000);
        scm_background *b = scm_background_start(N, item, &x);
        CHECK(b != NULL, "no background thread");
        scm_background_finish(b, T);
        CHECK(count_runs(&x, &twice) == N && !twice && atomic_load(&x.bad_tid) == 0,
              "background finished with %d threads: %d items ran, twice %d, bad tids %d", T,
              count_runs(&x, &twice), twice, atomic_load(&x.bad_tid));
    }
    /* stopped at once: 400 items of about 1 ms each cannot all have run */
    reset(&x, 0, 2000000);
    scm_background *b = scm_background_start(N, item, &x);
    CHECK(b != NULL, "no background thread");
    scm_background_stop(b);
    int ran = count_runs(&x, &twice);
    CHECK(ran < N && !twice, "stopped: %d of %d items ran (twice: %d)", ran, N, twice);
    scm_background_finish(NULL, 2);
    scm_background_stop(NULL);
    return TEST_SUMMARY();
}
