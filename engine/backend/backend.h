/* The backend interface: what the bindings need from a device. Two
 * implementations: backend_cpu.c (always present) and backend_cuda.c (when
 * built with CUDA=1 and a device is usable). Every function that can fail
 * returns NULL on success or a message that names the failed call and, for
 * CUDA, the error name ("cudaMalloc(1073741824 bytes): cudaErrorMemoryAllocation
 * (out of memory)"); the message lives in a static buffer until the next call. */
#ifndef KB_BACKEND_H
#define KB_BACKEND_H

#include <stddef.h>
#include <stdint.h>
#include "../../kernels/dtype.h"

typedef struct kb_backend kb_backend;

/* Guard bytes around every allocation: alloc returns a pointer with
 * KB_GUARD_BYTES of the allocation before it and KB_GUARD_BYTES after the
 * `bytes` asked for, so that kb.trust can arm them with a pattern and find a
 * kernel that wrote outside its tensor (engine/core/trust.c, docs/TRUST.md).
 * 256 keeps the pointer as aligned as cudaMalloc's and aligned_alloc(64)'s. */
#define KB_GUARD_BYTES 256

/* A kernel entry bound to its arguments (engine/core/X.c adapts an operations
 * table's typed entries to this): NULL on success or a message. */
typedef const char *(*kb_kernel_fn)(void *args);

/* What kb.device_info() reports. Fields a backend cannot know stay 0 / "". */
typedef struct {
  char name[256];          /* "NVIDIA H200" or the CPU model name */
  char arch[32];           /* "sm_90" or the machine ("x86_64") */
  int sm_count;            /* multiprocessors (cuda) */
  int cores;               /* online CPU cores (cpu) */
  int sm_clock_khz, mem_clock_khz, mem_bus_bits;
  size_t l2_bytes, memory_bytes;
  int driver_version, runtime_version; /* CUDA's encoding: 13000 = 13.0 */
} kb_device_info;

struct kb_backend {
  const char *kind;   /* "cpu" or "cuda" */
  char device[16];    /* "cpu" or "cuda:N": what t.device says */
  int ordinal;        /* CUDA device number, 0 on cpu */
  void *stream;       /* the one stream all work is queued on (cudaStream_t) */

  const char *(*alloc)(const kb_backend *b, void **out, size_t bytes);
  void (*release)(const kb_backend *b, void *p);
  /* copies within this device, and between it and host memory */
  const char *(*copy)(const kb_backend *b, void *dst, const void *src, size_t bytes);
  const char *(*to_host)(const kb_backend *b, void *host_dst, const void *src, size_t bytes);
  const char *(*from_host)(const kb_backend *b, void *dst, const void *host_src, size_t bytes);
  /* cuda (NULL on cpu, whose tensors are read in place): *out = host buffer `slot` (0 or 1) of at
   * least `bytes`, which to_host fills at the bus's speed (pinned; pageable when pinned memory
   * cannot be had); grown on demand, kept for the process, overwritten by the next use */
  const char *(*host_stage)(const kb_backend *b, int slot, size_t bytes, void **out);

  const char *(*fill)(const kb_backend *b, void *p, kb_dtype t, size_t n, double x);
  const char *(*randn)(const kb_backend *b, void *p, kb_dtype t, size_t n, uint64_t seed);
  const char *(*convert)(const kb_backend *b, void *dst, kb_dtype dt, const void *src,
                         kb_dtype st, size_t n);
  /* Runs one kernel entry of this device, fn(args), with what the backend
   * does around every kernel: cpu times it into kb.trace under `name`; cuda
   * refuses once the context is dead and marks it dead when the launch
   * poisoned it. The backend knows no kernel: the bindings pick a kernel's
   * operations table (kernels/X.h) and pass its entries through here. */
  const char *(*run_kernel)(const kb_backend *b, const char *name, kb_kernel_fn fn, void *args);

  /* timing: an event is an opaque handle; on cpu it stores the host clock */
  const char *(*event_create)(const kb_backend *b, void **ev);
  void (*event_destroy)(const kb_backend *b, void *ev);
  const char *(*event_record)(const kb_backend *b, void *ev);
  const char *(*event_synchronize)(const kb_backend *b, void *ev);
  const char *(*event_elapsed_ms)(const kb_backend *b, void *start, void *end, double *ms);
  const char *(*synchronize)(const kb_backend *b);
  /* overwrite `bytes` of scratch so that no earlier data stays in a cache */
  const char *(*flush)(const kb_backend *b, void *scratch, size_t bytes);
  /* hold the stream for ~ns (cuda); on cpu a no-op */
  const char *(*spin)(const kb_backend *b, uint64_t ns);
  /* CUDA graphs: capture everything queued between begin and end, replay it */
  const char *(*graph_begin)(const kb_backend *b);
  const char *(*graph_end)(const kb_backend *b, void **graph);
  const char *(*graph_launch)(const kb_backend *b, void *graph);
  void (*graph_destroy)(const kb_backend *b, void *graph);
  const char *(*info)(const kb_backend *b, kb_device_info *out);
  /* device memory now: free and total bytes as the driver counts them (every
   * process's allocations and the context itself are in use); the cpu
   * backend has no memory of its own and reports 0 and 0 */
  const char *(*mem_info)(const kb_backend *b, size_t *free_bytes, size_t *total_bytes);
  /* kernel tracing (trace.h): NULL when this device can be traced, else why
   * not; switch the recording on or off; deliver what has completed to
   * kb_trace_add */
  const char *(*trace_available)(const kb_backend *b);
  const char *(*trace_enable)(const kb_backend *b, int on);
  const char *(*trace_flush)(const kb_backend *b);
};

/* The host backend; always available. */
const kb_backend *kb_backend_cpu(void);
/* The CUDA backend for device `ordinal`, or NULL with *why set when CUDA is
 * not compiled in or no usable device exists. */
const kb_backend *kb_backend_cuda(int ordinal, const char **why);

/* The process-wide default backend (what kb.backend() names and where new
 * tensors go unless told otherwise); chosen once by main.c. */
const kb_backend *kb_default_backend(void);
/* name: "cpu", "cuda" or NULL/"" for auto (cuda if usable, else cpu).
 * Returns NULL on success, else a message ("--backend cuda: no CUDA device: ..."). */
const char *kb_select_backend(const char *name, int ordinal);

#endif
