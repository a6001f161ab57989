/* parallel.h: a loop over independent items on a few threads (internal).
 *
 * Each item's result must depend only on the item (and on per-thread
 * scratch chosen by the caller through tid), never on which thread ran it
 * or in which order: then the results, and everything computed from them
 * in item order afterwards, do not depend on the number of threads. */
#ifndef SCM_PARALLEL_H
#define SCM_PARALLEL_H

/* Call fn(ctx, tid, i) for i = 0 .. n - 1 on at most nthreads threads
 * (tid in [0, nthreads), the calling thread is tid 0), items taken from a
 * shared counter.  If a thread cannot be started its share goes to the
 * others, so every item runs exactly once whatever happens. */
void scm_parallel_for(int nthreads, int n, void (*fn)(void *ctx, int tid, int i), void *ctx);

/* A loop over items on a thread of its own, started now so that it
 * overlaps other work (scm_map: the next row's enumerations while a row's
 * sweeps run), items taken in order as scm_parallel_for takes them (its
 * thread is tid 0).  NULL when no thread (or memory) could be had: nothing
 * runs then, and the caller computes the items itself. */
typedef struct scm_background scm_background;
scm_background *scm_background_start(int n, void (*fn)(void *ctx, int tid, int i), void *ctx);

/* The items not yet taken run on nthreads threads, the calling one included
 * (tids 1 .. nthreads); returns when every item has run, b freed.  NULL: a
 * no-op. */
void scm_background_finish(scm_background *b, int nthreads);

/* No item is taken any more; returns when the one running (if any) has
 * ended, b freed: the items not run are left as they were.  NULL: a
 * no-op. */
void scm_background_stop(scm_background *b);

/* The default thread count ("all processors"): the processors online,
 * clamped to 1 .. 16. */
int scm_threads_online(void);

#endif
