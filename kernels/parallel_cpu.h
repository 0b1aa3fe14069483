/* Splitting a CPU twin's loop over the cores: kb_cpu_parallel_for runs
 * fn(ctx, begin, end) over contiguous ranges covering [0, n), on up to one
 * thread per online core (at most KB_CPU_MAX_THREADS) and no more than one
 * per `grain` items, so small calls stay on the calling thread. The ranges
 * are fixed by n and the thread count only; fn must write only its own range,
 * so the result does not depend on the split (counter-based randn, element-wise
 * conversions). A thread that cannot be started leaves its range to the
 * calling thread: the loop always completes. */
#ifndef KB_PARALLEL_CPU_H
#define KB_PARALLEL_CPU_H

#include <stddef.h>

#define KB_CPU_MAX_THREADS 16

typedef void (*kb_cpu_range_fn)(void *ctx, size_t begin, size_t end);

/* How many threads a loop of n items gets (1 .. KB_CPU_MAX_THREADS). */
int kb_cpu_threads(size_t n, size_t grain);

void kb_cpu_parallel_for(size_t n, size_t grain, kb_cpu_range_fn fn, void *ctx);

#endif
