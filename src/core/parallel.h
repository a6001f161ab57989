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

/* The default thread count ("all processors"): the processors online,
 * clamped to 1 .. 16. */
int scm_threads_online(void);

#endif
