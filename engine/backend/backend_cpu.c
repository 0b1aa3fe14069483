/* The CPU backend: host memory, synchronous kernels, events on the host
 * monotonic clock. It is the numerical reference for the CUDA backend and
 * the whole backend on machines without a GPU. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/utsname.h>
#include "backend.h"
#include "../../kernels/tensor_ops.h"
#include "trace.h"

static char cpu_err[256];

static const char *cpu_alloc(const kb_backend *b, void **out, size_t bytes) {
  /* 64-byte alignment: whole cache lines, and room for 16-byte vector access;
   * the guard bytes (backend.h) on either side */
  *out = NULL;
  if (bytes > SIZE_MAX - 2 * KB_GUARD_BYTES - 63) {
    snprintf(cpu_err, sizeof cpu_err, "out of host memory allocating %zu bytes", bytes);
    return cpu_err;
  }
  size_t rounded = (bytes + 2 * KB_GUARD_BYTES + 63) / 64 * 64;
  char *base = aligned_alloc(64, rounded);
  if (base) {
    *out = base + KB_GUARD_BYTES;
    return NULL;
  }
  snprintf(cpu_err, sizeof cpu_err, "out of host memory allocating %zu bytes", bytes);
  return cpu_err;
}

static void cpu_release(const kb_backend *b, void *p) {
  if (p) free((char *)p - KB_GUARD_BYTES);
}

/* A kernel of this backend, timed on the host clock while kb.trace is on:
 * the cpu backend's counterpart of CUPTI's kernel records (the work the
 * CUDA backend runs as kernels or copies; the L2 flush, a memset there, is
 * not traced on either). */
#define TRACED(kind_, name_, bytes_, call)                                                    \
  do {                                                                                         \
    if (!kb_trace_cpu_on) return (call);                                                       \
    uint64_t t0_ = kb_trace_now_ns();                                                          \
    const char *err_ = (call);                                                                 \
    kb_trace_rec r_ = {.name = (name_), .kind = (kind_), .start_ns = t0_,                      \
                       .end_ns = kb_trace_now_ns(), .bytes = (bytes_)};                        \
    kb_trace_add(&r_);                                                                         \
    return err_;                                                                               \
  } while (0)

static const char *do_copy(void *dst, const void *src, size_t n) {
  if (dst != src) memmove(dst, src, n);
  return NULL;
}

static const char *cpu_copy(const kb_backend *b, void *dst, const void *src, size_t n) {
  TRACED("memcpy", "memcpy HtoH", n, do_copy(dst, src, n));
}

static const char *cpu_fill(const kb_backend *b, void *p, kb_dtype t, size_t n, double x) {
  TRACED("kernel", "kb_fill_cpu", 0, kb_fill_cpu(p, t, n, x));
}

static const char *cpu_randn(const kb_backend *b, void *p, kb_dtype t, size_t n, uint64_t seed) {
  TRACED("kernel", "kb_randn_cpu", 0, kb_randn_cpu(p, t, n, seed));
}

static const char *cpu_convert(const kb_backend *b, void *dst, kb_dtype dt, const void *src,
                               kb_dtype st, size_t n) {
  TRACED("kernel", "kb_convert_cpu", 0, kb_convert_cpu(dst, dt, src, st, n));
}

static const char *cpu_run_kernel(const kb_backend *b, const char *name, kb_kernel_fn fn,
                                  void *args) {
  TRACED("kernel", name, 0, fn(args));
}

static const char *cpu_trace_available(const kb_backend *b) { return NULL; }

static const char *cpu_trace_enable(const kb_backend *b, int on) {
  kb_trace_cpu_on = on;
  return NULL;
}

static const char *cpu_trace_flush(const kb_backend *b) { return NULL; }

static double now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* A CPU event is the host time at which it was recorded (NaN before). */
static const char *cpu_event_create(const kb_backend *b, void **ev) {
  double *t = malloc(sizeof *t);
  if (!t) return "out of host memory creating an event";
  *t = -1;
  *ev = t;
  return NULL;
}

static void cpu_event_destroy(const kb_backend *b, void *ev) { free(ev); }

static const char *cpu_event_record(const kb_backend *b, void *ev) {
  *(double *)ev = now_ns();
  return NULL;
}

static const char *cpu_event_synchronize(const kb_backend *b, void *ev) { return NULL; }

static const char *cpu_event_elapsed_ms(const kb_backend *b, void *s, void *e, double *ms) {
  double t0 = *(double *)s, t1 = *(double *)e;
  if (t0 < 0 || t1 < 0) return "elapsed_ms: an event has not been recorded";
  *ms = (t1 - t0) / 1e6;
  return NULL;
}

static const char *cpu_synchronize(const kb_backend *b) { return NULL; }

/* Writing a buffer larger than the last-level cache evicts earlier data. */
static const char *cpu_flush(const kb_backend *b, void *scratch, size_t bytes) {
  volatile unsigned char *p = scratch;
  for (size_t i = 0; i < bytes; i += 64) p[i] = (unsigned char)(p[i] + 1);
  return NULL;
}

static const char *cpu_spin(const kb_backend *b, uint64_t ns) { return NULL; }

static const char *cpu_graph_begin(const kb_backend *b) {
  return "graphs need the cuda backend (this tensor or backend is cpu)";
}
static const char *cpu_graph_end(const kb_backend *b, void **g) { return cpu_graph_begin(b); }
static const char *cpu_graph_launch(const kb_backend *b, void *g) { return cpu_graph_begin(b); }
static void cpu_graph_destroy(const kb_backend *b, void *g) {}

/* The first line of a small sysfs file into buf (newline cut); 0 when it
 * cannot be read. */
static int read_sys_line(const char *path, char *buf, size_t size) {
  FILE *f = fopen(path, "r");
  if (!f) return 0;
  int ok = fgets(buf, (int)size, f) != NULL;
  fclose(f);
  if (ok) buf[strcspn(buf, "\n")] = 0;
  return ok;
}

/* "32768K", "1M", "1024" -> bytes; 0 when the text is not a size. */
static size_t parse_cache_size(const char *s) {
  char *end;
  unsigned long long v = strtoull(s, &end, 10);
  if (end == s) return 0;
  if (*end == 'K') v <<= 10;
  else if (*end == 'M') v <<= 20;
  else if (*end == 'G') v <<= 30;
  return (size_t)v;
}

/* The size of the highest-level data or unified cache of cpu0 as sysfs
 * lists it (/sys/devices/system/cpu/cpu0/cache/index*), 0 when there is
 * none. sysfs is preferred to sysconf: on virtual machines glibc's
 * _SC_LEVEL3_CACHE_SIZE can report the host's cache (256 MiB where sysfs
 * says 32 MiB), and cold mode would flush eight times what it must. */
static size_t sysfs_llc_bytes(void) {
  size_t best = 0;
  int best_level = 0;
  for (int i = 0; i < 16; i++) {
    char path[96], level[32], type[32], size[32];
    snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/level", i);
    if (!read_sys_line(path, level, sizeof level)) continue;
    snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/type", i);
    if (read_sys_line(path, type, sizeof type) && strcmp(type, "Instruction") == 0) continue;
    snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/size", i);
    if (!read_sys_line(path, size, sizeof size)) continue;
    int lv = atoi(level);
    size_t bytes = parse_cache_size(size);
    if (bytes > 0 && lv >= best_level) {
      best_level = lv;
      best = bytes;
    }
  }
  return best;
}

/* Model name from /proc/cpuinfo; last-level cache size from sysfs, else
 * sysconf. */
static const char *cpu_info(const kb_backend *b, kb_device_info *out) {
  memset(out, 0, sizeof *out);
  FILE *f = fopen("/proc/cpuinfo", "r");
  char line[512];
  while (f && fgets(line, sizeof line, f)) {
    if (strncmp(line, "model name", 10) == 0) {
      const char *v = strchr(line, ':');
      if (v) {
        v++;
        while (*v == ' ' || *v == '\t') v++;
        snprintf(out->name, sizeof out->name, "%.*s", (int)strcspn(v, "\n"), v);
      }
      break;
    }
  }
  if (f) fclose(f);
  if (!out->name[0]) snprintf(out->name, sizeof out->name, "unknown CPU");
  struct utsname u;
  snprintf(out->arch, sizeof out->arch, "%.31s", uname(&u) == 0 ? u.machine : "unknown");
  out->cores = (int)sysconf(_SC_NPROCESSORS_ONLN);
  out->l2_bytes = sysfs_llc_bytes();
  if (out->l2_bytes == 0) {
    long l3 = sysconf(_SC_LEVEL3_CACHE_SIZE), l2 = sysconf(_SC_LEVEL2_CACHE_SIZE);
    out->l2_bytes = (size_t)(l3 > 0 ? l3 : (l2 > 0 ? l2 : 0));
  }
  long pages = sysconf(_SC_PHYS_PAGES), psize = sysconf(_SC_PAGESIZE);
  out->memory_bytes = pages > 0 && psize > 0 ? (size_t)pages * (size_t)psize : 0;
  return NULL;
}

static const char *cpu_mem_info(const kb_backend *b, size_t *free_bytes, size_t *total_bytes) {
  *free_bytes = *total_bytes = 0;
  return NULL;
}

static const kb_backend cpu_backend = {
    .kind = "cpu",
    .device = "cpu",
    .alloc = cpu_alloc,
    .release = cpu_release,
    .copy = cpu_copy,
    .to_host = cpu_copy,
    .from_host = cpu_copy,
    .fill = cpu_fill,
    .randn = cpu_randn,
    .convert = cpu_convert,
    .run_kernel = cpu_run_kernel,
    .event_create = cpu_event_create,
    .event_destroy = cpu_event_destroy,
    .event_record = cpu_event_record,
    .event_synchronize = cpu_event_synchronize,
    .event_elapsed_ms = cpu_event_elapsed_ms,
    .synchronize = cpu_synchronize,
    .flush = cpu_flush,
    .spin = cpu_spin,
    .graph_begin = cpu_graph_begin,
    .graph_end = cpu_graph_end,
    .graph_launch = cpu_graph_launch,
    .graph_destroy = cpu_graph_destroy,
    .info = cpu_info,
    .mem_info = cpu_mem_info,
    .trace_available = cpu_trace_available,
    .trace_enable = cpu_trace_enable,
    .trace_flush = cpu_trace_flush,
};

const kb_backend *kb_backend_cpu(void) { return &cpu_backend; }
