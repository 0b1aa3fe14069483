/* Kernel tracing: what ran on the device and when, one record per kernel
 * or memory copy, with device timestamps. The CUDA backend fills it from
 * CUPTI's activity API (trace_cupti.c, loaded with dlopen); the cpu backend
 * times its own kernels with the host clock. Both append to one buffer
 * (trace_buffer.c); kb.trace (core/trace.c) is the Lua side: start,
 * collect, stop. */
#ifndef KB_TRACE_H
#define KB_TRACE_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
  const char *name;   /* interned for the life of the process */
  const char *kind;   /* "kernel" or "memcpy" (static strings) */
  uint64_t start_ns, end_ns;
  int32_t grid[3], block[3];
  uint32_t stream, correlation;
  uint64_t bytes;     /* memcpy: bytes copied; kernel: 0 */
  int internal;       /* kluabench's own work (the stream-holding spin) */
} kb_trace_rec;

/* Appends a record (thread-safe: CUPTI delivers from its own thread).
 * `name` is copied. Records beyond KB_TRACE_MAX are counted as dropped. */
void kb_trace_add(const kb_trace_rec *r);
/* Adds n to the dropped count (records the tracer itself lost). */
void kb_trace_dropped(uint64_t n);
/* Whether the cpu backend should time its kernels now. */
extern volatile int kb_trace_cpu_on;
/* Host monotonic clock, ns (the cpu backend's trace clock). */
uint64_t kb_trace_now_ns(void);
/* Takes the records gathered so far out of the buffer, which starts empty
 * again: returns them (the caller frees them; NULL when none), their count
 * in *n and in *lost the records dropped since the last take. */
kb_trace_rec *kb_trace_take(size_t *n, uint64_t *lost);

#ifdef KB_WITH_CUDA
/* trace_cupti.c: load CUPTI (NULL when usable, else why not), switch the
 * activity records of kernels and copies on or off, and flush the
 * buffers CUPTI holds into kb_trace_add. */
const char *kb_cupti_load(void);
const char *kb_cupti_enable(int on);
const char *kb_cupti_flush(void);
#endif

#endif
