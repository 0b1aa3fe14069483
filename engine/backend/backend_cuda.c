/* The CUDA backend: device memory, one non-blocking stream per process on
 * which every launch, copy and event is queued, and CUDA graphs. Every CUDA
 * call goes through CU(), which turns a failure into a message carrying the
 * call and the error name. Errors that poison the context (an illegal
 * address in a kernel, say) are remembered (cuda_context.c): every later
 * call reports that the process cannot continue, instead of printing
 * numbers. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cuda_runtime.h>
#include "backend.h"
#include "../../kernels/tensor_ops.h"
#include "cuda_context.h"
#include "trace.h"
#include "trust_cuda.h"

/* Every runtime call, refused once the context is dead (cuda_context.h):
 * a failure becomes "<what>: cudaErrorX (text)". */
#define CU(call, what)                                                                         \
  do {                                                                                         \
    const char *dead_ = kb_cuda_refuse(what);                                                  \
    if (dead_) return dead_;                                                                   \
    cudaError_t e_ = (call);                                                                   \
    if (e_ != cudaSuccess) return kb_cuda_fail(what, (int)e_);                                 \
  } while (0)

#define STREAM(b) ((cudaStream_t)(b)->stream)

/* With the guard bytes (backend.h) on either side of what is returned. */
static const char *cu_alloc(const kb_backend *b, void **out, size_t bytes) {
  char what[96];
  snprintf(what, sizeof what, "cudaMalloc(%zu bytes)", bytes);
  *out = NULL;
  if (bytes > SIZE_MAX - 2 * KB_GUARD_BYTES) return kb_cuda_fail(what, (int)cudaErrorMemoryAllocation);
  void *base = NULL;
  CU(cudaMalloc(&base, bytes + 2 * KB_GUARD_BYTES), what);
  *out = (char *)base + KB_GUARD_BYTES;
  return NULL;
}

static void cu_release(const kb_backend *b, void *p) {
  /* Freeing cannot be reported from __gc; a failure here means the context
   * is already dead and the next checked call will say so. */
  if (p) (void)cudaFree((char *)p - KB_GUARD_BYTES);
}

static const char *cu_copy(const kb_backend *b, void *dst, const void *src, size_t n) {
  if (dst == src || n == 0) return NULL;
  CU(cudaMemcpyAsync(dst, src, n, cudaMemcpyDeviceToDevice, STREAM(b)), "cudaMemcpyAsync(device to device)");
  return NULL;
}

/* Host copies synchronise: the host buffer is pageable and may go away. */
static const char *cu_to_host(const kb_backend *b, void *dst, const void *src, size_t n) {
  if (n == 0) return NULL;
  CU(cudaMemcpyAsync(dst, src, n, cudaMemcpyDeviceToHost, STREAM(b)), "cudaMemcpyAsync(device to host)");
  CU(cudaStreamSynchronize(STREAM(b)), "cudaStreamSynchronize after device-to-host copy");
  return NULL;
}

/* The staging buffers of host_stage (backend.h): kb.compare_elements and its kin copy a device
 * tensor through them a slice at a time. A fresh pageable buffer of a whole tensor read 1.9 GB/s
 * (0.28 s a kb.compare_elements of two 268 MB tensors on the H200's host, 2026-12-04). */
static struct {
  void *p;
  size_t bytes;
  int pinned;
} g_stage[2];

static const char *cu_host_stage(const kb_backend *b, int slot, size_t bytes, void **out) {
  (void)b;
  *out = NULL;
  if (slot < 0 || slot > 1) return "host_stage: the slot must be 0 or 1";
  if (g_stage[slot].bytes < bytes) {
    /* a power of two from 1 MiB: a run of growing requests re-pins a slot a few times, not at each
     * request (cudaMallocHost of 64 MB costs milliseconds), and never holds twice what it needs */
    size_t want = (size_t)1 << 20;
    while (want < bytes) want <<= 1;
    bytes = want;
    if (g_stage[slot].pinned) (void)cudaFreeHost(g_stage[slot].p);
    else free(g_stage[slot].p);
    g_stage[slot].p = NULL;
    g_stage[slot].bytes = 0;
    void *p = NULL;
    int pinned = cudaMallocHost(&p, bytes) == cudaSuccess;
    if (!pinned) {
      (void)cudaGetLastError(); /* not sticky: the pageable buffer below serves */
      p = malloc(bytes);
      if (!p) return "host_stage: out of host memory for a staging buffer";
    }
    g_stage[slot].p = p;
    g_stage[slot].bytes = bytes;
    g_stage[slot].pinned = pinned;
  }
  *out = g_stage[slot].p;
  return NULL;
}

static const char *cu_from_host(const kb_backend *b, void *dst, const void *src, size_t n) {
  if (n == 0) return NULL;
  CU(cudaMemcpyAsync(dst, src, n, cudaMemcpyHostToDevice, STREAM(b)), "cudaMemcpyAsync(host to device)");
  CU(cudaStreamSynchronize(STREAM(b)), "cudaStreamSynchronize after host-to-device copy");
  return NULL;
}

#define KERNEL(expr)                                                                           \
  do {                                                                                         \
    const char *dead_ = kb_cuda_refuse("kernel launch");                                       \
    if (dead_) return dead_;                                                                   \
    return kb_cuda_kernel_fail(expr);                                                          \
  } while (0)

static const char *cu_fill(const kb_backend *b, void *p, kb_dtype t, size_t n, double x) {
  KERNEL(kb_fill_cuda(p, t, n, x, b->stream));
}

static const char *cu_randn(const kb_backend *b, void *p, kb_dtype t, size_t n, uint64_t seed) {
  KERNEL(kb_randn_cuda(p, t, n, seed, b->stream));
}

static const char *cu_convert(const kb_backend *b, void *dst, kb_dtype dt, const void *src,
                              kb_dtype st, size_t n) {
  KERNEL(kb_convert_cuda(dst, dt, src, st, n, b->stream));
}

/* The engine's one launch (built-in kernels, plugin entries, kernel:launch):
 * refused on a dead context, naming the kernel; a failure that poisons the
 * context is marked so. */
static const char *cu_run_kernel(const kb_backend *b, const char *name, kb_kernel_fn fn,
                                 void *args) {
  const char *dead = kb_cuda_refuse(name);
  if (dead) return dead;
  return kb_cuda_kernel_fail(fn(args));
}

static const char *cu_event_create(const kb_backend *b, void **ev) {
  CU(cudaEventCreate((cudaEvent_t *)ev), "cudaEventCreate");
  return NULL;
}

static void cu_event_destroy(const kb_backend *b, void *ev) {
  if (ev) (void)cudaEventDestroy((cudaEvent_t)ev);
}

static const char *cu_event_record(const kb_backend *b, void *ev) {
  CU(cudaEventRecord((cudaEvent_t)ev, STREAM(b)), "cudaEventRecord");
  return NULL;
}

static const char *cu_event_synchronize(const kb_backend *b, void *ev) {
  CU(cudaEventSynchronize((cudaEvent_t)ev), "cudaEventSynchronize");
  return NULL;
}

static const char *cu_event_elapsed_ms(const kb_backend *b, void *s, void *e, double *ms) {
  float f = 0;
  CU(cudaEventElapsedTime(&f, (cudaEvent_t)s, (cudaEvent_t)e), "cudaEventElapsedTime");
  *ms = f;
  return NULL;
}

static const char *cu_synchronize(const kb_backend *b) {
  CU(cudaStreamSynchronize(STREAM(b)), "cudaStreamSynchronize");
  return NULL;
}

/* memset of the whole scratch buffer, with a changing byte so that no
 * hardware shortcut can skip it; queued on the stream like any kernel. */
static const char *cu_flush(const kb_backend *b, void *scratch, size_t bytes) {
  static unsigned char counter;
  /* a plugin's host code may have set a persisting-L2 window that would keep
   * its data in L2 through the flush: reset before the next sample (only
   * then, since built-in and compiled kernels cannot touch it) */
  if (kb_trust_plugin_cuda_ran) {
    const char *e = kb_trust_cuda_l2_reset(b->stream);
    if (e) return e;
    kb_trust_plugin_cuda_ran = 0;
  }
  CU(cudaMemsetAsync(scratch, ++counter, bytes, STREAM(b)), "cudaMemsetAsync(L2 flush buffer)");
  return NULL;
}

static const char *cu_spin(const kb_backend *b, uint64_t ns) {
  KERNEL(kb_spin_cuda(ns, b->stream));
}

static const char *cu_graph_begin(const kb_backend *b) {
  /* Relaxed: allocations made while capturing stay legal (they are not part
   * of the graph; the caller keeps them alive for as long as the graph). */
  CU(cudaStreamBeginCapture(STREAM(b), cudaStreamCaptureModeRelaxed), "cudaStreamBeginCapture");
  return NULL;
}

static const char *cu_graph_end(const kb_backend *b, void **out) {
  cudaGraph_t g = NULL;
  cudaGraphExec_t exec = NULL;
  CU(cudaStreamEndCapture(STREAM(b), &g), "cudaStreamEndCapture");
  cudaError_t e = cudaGraphInstantiate(&exec, g, 0);
  (void)cudaGraphDestroy(g);
  if (e != cudaSuccess) return kb_cuda_fail("cudaGraphInstantiate", (int)e);
  *out = exec;
  return NULL;
}

static const char *cu_graph_launch(const kb_backend *b, void *g) {
  CU(cudaGraphLaunch((cudaGraphExec_t)g, STREAM(b)), "cudaGraphLaunch");
  return NULL;
}

static void cu_graph_destroy(const kb_backend *b, void *g) {
  if (g) (void)cudaGraphExecDestroy((cudaGraphExec_t)g);
}

/* Properties are fixed for the process: asked once (the query costs ~1 ms). */
static const char *cu_info(const kb_backend *b, kb_device_info *out) {
  static kb_device_info cached;
  static int have;
  if (have) {
    *out = cached;
    return NULL;
  }
  struct cudaDeviceProp p;
  memset(out, 0, sizeof *out);
  CU(cudaGetDeviceProperties(&p, b->ordinal), "cudaGetDeviceProperties");
  snprintf(out->name, sizeof out->name, "%s", p.name);
  snprintf(out->arch, sizeof out->arch, "sm_%d%d", p.major, p.minor);
  out->sm_count = p.multiProcessorCount;
  out->l2_bytes = (size_t)p.l2CacheSize;
  out->memory_bytes = p.totalGlobalMem;
  out->mem_bus_bits = p.memoryBusWidth;
  CU(cudaDeviceGetAttribute(&out->sm_clock_khz, cudaDevAttrClockRate, b->ordinal),
     "cudaDeviceGetAttribute(cudaDevAttrClockRate)");
  CU(cudaDeviceGetAttribute(&out->mem_clock_khz, cudaDevAttrMemoryClockRate, b->ordinal),
     "cudaDeviceGetAttribute(cudaDevAttrMemoryClockRate)");
  CU(cudaDriverGetVersion(&out->driver_version), "cudaDriverGetVersion");
  CU(cudaRuntimeGetVersion(&out->runtime_version), "cudaRuntimeGetVersion");
  cached = *out;
  have = 1;
  return NULL;
}

static const char *cu_mem_info(const kb_backend *b, size_t *free_bytes, size_t *total_bytes) {
  *free_bytes = *total_bytes = 0;
  CU(cudaMemGetInfo(free_bytes, total_bytes), "cudaMemGetInfo");
  return NULL;
}

/* Tracing through CUPTI (trace_cupti.c): records carry device timestamps. */
static const char *cu_trace_available(const kb_backend *b) { return kb_cupti_load(); }
static const char *cu_trace_enable(const kb_backend *b, int on) { return kb_cupti_enable(on); }
static const char *cu_trace_flush(const kb_backend *b) { return kb_cupti_flush(); }

static kb_backend cuda_backend = {
    .kind = "cuda",
    .alloc = cu_alloc,
    .release = cu_release,
    .copy = cu_copy,
    .to_host = cu_to_host,
    .from_host = cu_from_host,
    .host_stage = cu_host_stage,
    .fill = cu_fill,
    .randn = cu_randn,
    .convert = cu_convert,
    .run_kernel = cu_run_kernel,
    .event_create = cu_event_create,
    .event_destroy = cu_event_destroy,
    .event_record = cu_event_record,
    .event_synchronize = cu_event_synchronize,
    .event_elapsed_ms = cu_event_elapsed_ms,
    .synchronize = cu_synchronize,
    .flush = cu_flush,
    .spin = cu_spin,
    .graph_begin = cu_graph_begin,
    .graph_end = cu_graph_end,
    .graph_launch = cu_graph_launch,
    .graph_destroy = cu_graph_destroy,
    .info = cu_info,
    .mem_info = cu_mem_info,
    .trace_available = cu_trace_available,
    .trace_enable = cu_trace_enable,
    .trace_flush = cu_trace_flush,
};

/* One device per process: the first successful call fixes the ordinal. */
const kb_backend *kb_backend_cuda(int ordinal, const char **why) {
  static int initialised;
  static char reason[512];
  if (initialised) {
    if (cuda_backend.stream && cuda_backend.ordinal == ordinal) return &cuda_backend;
    *why = cuda_backend.stream ? "only one CUDA device can be used per process" : reason;
    return NULL;
  }
  initialised = 1;
  int n = 0;
  cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) {
    snprintf(reason, sizeof reason, "cudaGetDeviceCount: %s (%s)", cudaGetErrorName(e),
             cudaGetErrorString(e));
  } else if (ordinal < 0 || ordinal >= n) {
    snprintf(reason, sizeof reason, "device %d does not exist (%d CUDA device%s)", ordinal, n,
             n == 1 ? "" : "s");
  } else if ((e = cudaSetDevice(ordinal)) != cudaSuccess ||
             (e = cudaStreamCreateWithFlags((cudaStream_t *)&cuda_backend.stream,
                                            cudaStreamNonBlocking)) != cudaSuccess) {
    snprintf(reason, sizeof reason, "device %d: %s (%s)", ordinal, cudaGetErrorName(e),
             cudaGetErrorString(e));
  } else {
    cuda_backend.ordinal = ordinal;
    snprintf(cuda_backend.device, sizeof cuda_backend.device, "cuda:%d", ordinal);
    return &cuda_backend;
  }
  (void)cudaGetLastError();
  *why = reason;
  return NULL;
}
