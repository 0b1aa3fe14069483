/* CUPTI's activity API as the CUDA backend's kernel tracer. CUPTI is opened
 * with dlopen on first use and never linked (the binary stays free of
 * toolkit libraries and starts where CUPTI is absent); only the types of
 * cupti.h are used at compile time. Records are the device's own start and
 * end timestamps of each kernel and copy: the durations Nsight Systems
 * shows, and the same timer Nsight Compute's gpu__time_duration reads.
 *
 * Where the library is looked for: $KLUABENCH_CUPTI (a path), then the
 * loader's search path, then $CUDA_HOME and /usr/local/cuda under lib64,
 * lib, extras/CUPTI/lib64 and targets/x86_64-linux/lib. */
#include <dlfcn.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cupti.h>
#include "trace.h"

/* libstdc++'s demangler (the CUDA build links libstdc++ anyway). */
extern char *__cxa_demangle(const char *mangled, char *buf, size_t *n, int *status);

static struct cupti_lib {
  int state; /* 0 not tried, 1 usable, -1 failed for good */
  char why[768];
  char path[512];
  void *lib;
  CUptiResult (*get_version)(uint32_t *);
  CUptiResult (*result_string)(CUptiResult, const char **);
  CUptiResult (*enable)(CUpti_ActivityKind);
  CUptiResult (*disable)(CUpti_ActivityKind);
  CUptiResult (*register_callbacks)(CUpti_BuffersCallbackRequestFunc,
                                    CUpti_BuffersCallbackCompleteFunc);
  CUptiResult (*flush_all)(uint32_t);
  CUptiResult (*next_record)(uint8_t *, size_t, CUpti_Activity **);
  CUptiResult (*dropped)(CUcontext, uint32_t, size_t *);
  int registered, on;
} cu;

static char msg[768];

static const char *fail(const char *call, CUptiResult r) {
  const char *s = "unknown error";
  if (cu.result_string) cu.result_string(r, &s);
  snprintf(msg, sizeof msg, "%s: CUPTI error %d (%s)", call, (int)r, s);
  return msg;
}

#define CUPTI(call, what)                                                                      \
  do {                                                                                         \
    CUptiResult r_ = (call);                                                                   \
    if (r_ != CUPTI_SUCCESS) return fail(what, r_);                                            \
  } while (0)

/* ---- records ------------------------------------------------------------- */

enum { BUFFER_BYTES = 4 << 20, ALIGN = 8 };

static void CUPTIAPI buffer_requested(uint8_t **buffer, size_t *size, size_t *max_records) {
  *buffer = aligned_alloc(ALIGN, BUFFER_BYTES);
  *size = *buffer ? BUFFER_BYTES : 0;
  *max_records = 0;
}

/* A kernel's name as written in the source ("rope_fused_kernel<...>"),
 * demangled when it can be. */
static void add_kernel(const CUpti_ActivityKernel10 *k) {
  int status = -1;
  char *plain = k->name ? __cxa_demangle(k->name, NULL, NULL, &status) : NULL;
  const char *name = status == 0 && plain ? plain : (k->name ? k->name : "?");
  kb_trace_rec r = {
      .name = name, .kind = "kernel", .start_ns = k->start, .end_ns = k->end,
      .grid = {k->gridX, k->gridY, k->gridZ}, .block = {k->blockX, k->blockY, k->blockZ},
      .stream = k->streamId, .correlation = k->correlationId,
      .internal = strstr(name, "kb_hold_spin") != NULL,
  };
  kb_trace_add(&r);
  free(plain);
}

static const char *copy_kind(uint8_t kind) {
  switch (kind) {
  case CUPTI_ACTIVITY_MEMCPY_KIND_HTOD: return "memcpy HtoD";
  case CUPTI_ACTIVITY_MEMCPY_KIND_DTOH: return "memcpy DtoH";
  case CUPTI_ACTIVITY_MEMCPY_KIND_DTOD: return "memcpy DtoD";
  case CUPTI_ACTIVITY_MEMCPY_KIND_PTOP: return "memcpy PtoP";
  default: return "memcpy";
  }
}

static void add_copy(const CUpti_ActivityMemcpy6 *m) {
  kb_trace_rec r = {
      .name = copy_kind(m->copyKind), .kind = "memcpy", .start_ns = m->start, .end_ns = m->end,
      .stream = m->streamId, .correlation = m->correlationId, .bytes = m->bytes,
  };
  kb_trace_add(&r);
}

static void CUPTIAPI buffer_completed(CUcontext ctx, uint32_t stream, uint8_t *buffer,
                                      size_t size, size_t valid) {
  CUpti_Activity *rec = NULL;
  while (valid > 0 && cu.next_record(buffer, valid, &rec) == CUPTI_SUCCESS) {
    if (rec->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL || rec->kind == CUPTI_ACTIVITY_KIND_KERNEL)
      add_kernel((const CUpti_ActivityKernel10 *)rec);
    else if (rec->kind == CUPTI_ACTIVITY_KIND_MEMCPY)
      add_copy((const CUpti_ActivityMemcpy6 *)rec);
  }
  size_t lost = 0;
  if (cu.dropped && cu.dropped(ctx, stream, &lost) == CUPTI_SUCCESS && lost)
    kb_trace_dropped(lost);
  free(buffer);
}

/* ---- loading ------------------------------------------------------------- */

static void *try_open(const char *path) {
  void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (h) snprintf(cu.path, sizeof cu.path, "%s", path);
  return h;
}

static void *open_cupti(void) {
  const char *env = getenv("KLUABENCH_CUPTI");
  if (env && *env) return try_open(env);
  static const char *const names[] = {"libcupti.so.13", "libcupti.so"};
  static const char *const dirs[] = {"lib64", "lib", "extras/CUPTI/lib64", "targets/x86_64-linux/lib"};
  const char *homes[] = {getenv("CUDA_HOME"), "/usr/local/cuda"};
  void *h = NULL;
  for (size_t i = 0; !h && i < 2; i++) h = try_open(names[i]);
  for (size_t r = 0; !h && r < 2; r++) {
    if (!homes[r] || !*homes[r]) continue;
    for (size_t d = 0; !h && d < 4; d++)
      for (size_t i = 0; !h && i < 2; i++) {
        char p[512];
        snprintf(p, sizeof p, "%s/%s/%s", homes[r], dirs[d], names[i]);
        h = try_open(p);
      }
  }
  return h;
}

const char *kb_cupti_load(void) {
  if (cu.state == 1) return NULL;
  if (cu.state == -1) return cu.why;
  cu.state = -1;
  cu.lib = open_cupti();
  if (!cu.lib) {
    const char *env = getenv("KLUABENCH_CUPTI");
    snprintf(cu.why, sizeof cu.why, "CUPTI not found (%s: %s); set KLUABENCH_CUPTI to the path "
             "of libcupti.so.13 (it comes with the CUDA Toolkit)",
             env && *env ? env : "libcupti.so.13 on the loader path, $CUDA_HOME, /usr/local/cuda",
             dlerror());
    return cu.why;
  }
  static const struct { const char *name; size_t off; } syms[] = {
      {"cuptiGetVersion", offsetof(struct cupti_lib, get_version)},
      {"cuptiGetResultString", offsetof(struct cupti_lib, result_string)},
      {"cuptiActivityEnable", offsetof(struct cupti_lib, enable)},
      {"cuptiActivityDisable", offsetof(struct cupti_lib, disable)},
      {"cuptiActivityRegisterCallbacks", offsetof(struct cupti_lib, register_callbacks)},
      {"cuptiActivityFlushAll", offsetof(struct cupti_lib, flush_all)},
      {"cuptiActivityGetNextRecord", offsetof(struct cupti_lib, next_record)},
      {"cuptiActivityGetNumDroppedRecords", offsetof(struct cupti_lib, dropped)},
  };
  for (size_t i = 0; i < sizeof syms / sizeof syms[0]; i++) {
    void *f = dlsym(cu.lib, syms[i].name);
    if (!f) {
      snprintf(cu.why, sizeof cu.why, "%s has no symbol %s", cu.path, syms[i].name);
      dlclose(cu.lib);
      cu.lib = NULL;
      return cu.why;
    }
    memcpy((char *)&cu + syms[i].off, &f, sizeof f);
  }
  /* The record layouts read here (CUpti_ActivityKernel10's leading fields,
   * unchanged since CUDA 11) need a CUPTI of at least the headers' major
   * version; an older one may deliver records of another shape. */
  uint32_t v = 0;
  if (cu.get_version(&v) != CUPTI_SUCCESS || v / 10000 < CUPTI_API_VERSION / 10000) {
    snprintf(cu.why, sizeof cu.why, "%s is CUPTI API version %u; kluabench was built against %d "
             "and needs that major version or newer", cu.path, v, CUPTI_API_VERSION);
    dlclose(cu.lib);
    cu.lib = NULL;
    return cu.why;
  }
  /* Registering the buffers is where another CUPTI client (Nsight
   * Compute or Systems, compute-sanitizer) shows: only one may subscribe. */
  CUptiResult r = cu.register_callbacks(buffer_requested, buffer_completed);
  if (r != CUPTI_SUCCESS) {
    snprintf(cu.why, sizeof cu.why, "%.600s%s", fail("cuptiActivityRegisterCallbacks", r),
             r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED
                 ? " (another CUPTI client holds it: a profiler or compute-sanitizer)" : "");
    return cu.why;
  }
  cu.registered = 1;
  cu.state = 1;
  return NULL;
}

const char *kb_cupti_enable(int on) {
  const char *why = kb_cupti_load();
  if (why) return why;
  /* KIND_KERNEL, CUPTI's serial mode, not CONCURRENT_KERNEL: the
   * concurrent mode instruments every kernel, which slowed the reference
   * path's many short-lived blocks by 9 % on the H200, while serialising
   * kernels costs kluabench nothing (all its work is on one stream). */
  if (on && !cu.on) {
    CUPTI(cu.enable(CUPTI_ACTIVITY_KIND_KERNEL), "cuptiActivityEnable(CUPTI_ACTIVITY_KIND_KERNEL)");
    CUptiResult r = cu.enable(CUPTI_ACTIVITY_KIND_MEMCPY);
    if (r != CUPTI_SUCCESS) {
      cu.disable(CUPTI_ACTIVITY_KIND_KERNEL);
      return fail("cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMCPY)", r);
    }
  } else if (!on && cu.on) {
    CUPTI(cu.disable(CUPTI_ACTIVITY_KIND_KERNEL), "cuptiActivityDisable(CUPTI_ACTIVITY_KIND_KERNEL)");
    CUPTI(cu.disable(CUPTI_ACTIVITY_KIND_MEMCPY), "cuptiActivityDisable(CUPTI_ACTIVITY_KIND_MEMCPY)");
  }
  cu.on = on;
  return NULL;
}

/* Forced: also the buffers still being filled, so that every record of the
 * work completed so far reaches kb_trace_add before this returns. */
const char *kb_cupti_flush(void) {
  if (cu.state != 1 || !cu.registered) return NULL;
  CUPTI(cu.flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED), "cuptiActivityFlushAll");
  return NULL;
}
