/* The honest corpus as a plugin, honest_ops (tests/honest/, docs/TRUST.md):
 * kernels a new user brings, which the harness must pass with no finding.
 *
 * One file, built two ways (the Makefile picks by CUDA=): with nvcc into a
 * library whose kernels have a CUDA entry (ops.cuh's kernels, launched on the
 * engine's stream) and a CPU twin, or as C (cc -x c) with the CPU twins only.
 * The twins are plain C: f32 accumulators, sequential loops, bf16 and f16
 * converted by hand (to nearest even). Kernels, each "out, x" / "out, x, w[, b]"
 * / "out, a, b" on tensors of one dtype (f32, bf16 or f16), x rows x cols:
 *
 *   softmax, layernorm (eps 1e-5), rmsnorm (eps 1e-6), scan: out rows x cols
 *   sum: out has rows elements; matmul: out (m x n) = a (m x k) b (k x n)
 *
 * and for each an <op>_ref: the same in float64 (double accumulators) into an
 * f64 out, from inputs of any of the three dtypes: the benchmark's reference
 * (tests/honest/bench.lua), on the CPU or on the GPU. */
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "kluabench_plugin.h"
#ifdef __CUDACC__
#include <cuda_runtime.h>
#include "ops.cuh"
#define HONEST_EXPORT extern "C"
#else
#define HONEST_EXPORT
#define HONEST_BLOCK 256
#define HONEST_TILE 16
#define HONEST_LAYERNORM_EPS 1e-5f
#define HONEST_RMSNORM_EPS 1e-6f
#endif

#define LAYERNORM_EPS_F64 1e-5
#define RMSNORM_EPS_F64 1e-6

/* ---- bf16 and f16 by hand ------------------------------------------------------- */

static float f32_of_bits(uint32_t u) {
  float f;
  memcpy(&f, &u, 4);
  return f;
}

static uint32_t bits_of_f32(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  return u;
}

static float bf16_to_f32(uint16_t h) { return f32_of_bits((uint32_t)h << 16); }

/* To nearest even; NaN stays NaN (quiet). */
static uint16_t f32_to_bf16(float f) {
  uint32_t u = bits_of_f32(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x0040u);
  return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

static float f16_to_f32(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
  if (e == 0) { /* zero or subnormal: m * 2^-24, exact in f32 */
    float v = (float)m * 5.9604644775390625e-8f;
    return sign ? -v : v;
  }
  if (e == 31) return f32_of_bits(sign | 0x7f800000u | (m << 13));
  return f32_of_bits(sign | ((e + 112u) << 23) | (m << 13));
}

/* To nearest even, with subnormals; past the largest f16 (65504) is inf. */
static uint16_t f32_to_f16(float f) {
  uint32_t u = bits_of_f32(f);
  uint32_t sign = (u >> 16) & 0x8000u, a = u & 0x7fffffffu;
  if (a > 0x7f800000u) return (uint16_t)(sign | 0x7e00u);
  if (a >= 0x47800000u) return (uint16_t)(sign | 0x7c00u); /* >= 2^16, or inf */
  if (a >= 0x38800000u) {                                   /* a normal f16 (or rounds to inf) */
    uint32_t h = (a - 0x38000000u) >> 13, rest = a & 0x1fffu;
    if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) h++;
    return (uint16_t)(sign | h);
  }
  if (a <= 0x33000000u) return (uint16_t)sign; /* at most 2^-25: ties to even 0 */
  {                                            /* subnormal: round(a * 2^24) */
    uint32_t e = a >> 23, mant = (a & 0x7fffffu) | 0x800000u, shift = 126u - e;
    uint32_t h = mant >> shift, rest = mant & ((1u << shift) - 1u), half = 1u << (shift - 1u);
    if (rest > half || (rest == half && (h & 1u))) h++;
    return (uint16_t)(sign | h);
  }
}

/* ---- tensors as rows of floats (and doubles) --------------------------------------- */

#define T_(a, i) (&(a)[i].u.tensor)

static const char *dtype_name(kb_plugin_dtype d) {
  switch (d) {
  case KB_PLUGIN_BF16: return "bf16";
  case KB_PLUGIN_F16: return "f16";
  case KB_PLUGIN_F32: return "f32";
  case KB_PLUGIN_F64: return "f64";
  }
  return "an unknown dtype";
}

/* n elements of t from element off, as floats (exact). */
static void load_row(const kb_plugin_tensor *t, int64_t off, int64_t n, float *dst) {
  if (t->dtype == KB_PLUGIN_F32) {
    memcpy(dst, (const float *)t->data + off, (size_t)n * sizeof(float));
  } else if (t->dtype == KB_PLUGIN_BF16) {
    const uint16_t *s = (const uint16_t *)t->data + off;
    for (int64_t j = 0; j < n; j++) dst[j] = bf16_to_f32(s[j]);
  } else {
    const uint16_t *s = (const uint16_t *)t->data + off;
    for (int64_t j = 0; j < n; j++) dst[j] = f16_to_f32(s[j]);
  }
}

/* n floats into t from element off, rounded to t's dtype. */
static void store_row(const kb_plugin_tensor *t, int64_t off, int64_t n, const float *src) {
  if (t->dtype == KB_PLUGIN_F32) {
    memcpy((float *)t->data + off, src, (size_t)n * sizeof(float));
  } else if (t->dtype == KB_PLUGIN_BF16) {
    uint16_t *d = (uint16_t *)t->data + off;
    for (int64_t j = 0; j < n; j++) d[j] = f32_to_bf16(src[j]);
  } else {
    uint16_t *d = (uint16_t *)t->data + off;
    for (int64_t j = 0; j < n; j++) d[j] = f32_to_f16(src[j]);
  }
}

/* n elements of t from element off, as doubles (exact). */
static void load_row_f64(const kb_plugin_tensor *t, int64_t off, int64_t n, double *dst) {
  if (t->dtype == KB_PLUGIN_F32) {
    const float *s = (const float *)t->data + off;
    for (int64_t j = 0; j < n; j++) dst[j] = s[j];
  } else if (t->dtype == KB_PLUGIN_BF16) {
    const uint16_t *s = (const uint16_t *)t->data + off;
    for (int64_t j = 0; j < n; j++) dst[j] = bf16_to_f32(s[j]);
  } else {
    const uint16_t *s = (const uint16_t *)t->data + off;
    for (int64_t j = 0; j < n; j++) dst[j] = f16_to_f32(s[j]);
  }
}

/* ---- the arguments, checked -------------------------------------------------------- */

/* What an entry works on: rows x cols of x (m x k of a for matmul, n
 * the columns of b and out). */
typedef struct {
  int64_t rows, cols, n;
} shape;

/* The message into err; returns 1 (a CPU entry's failure). */
static int fail(char *err, size_t errlen, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err, errlen, fmt, ap);
  va_end(ap);
  return 1;
}

static int is_half_or_f32(kb_plugin_dtype d) {
  return d == KB_PLUGIN_F32 || d == KB_PLUGIN_BF16 || d == KB_PLUGIN_F16;
}

/* Tensors 1..nargs-1 of one dtype (f32, bf16, f16), and out (argument 0) of
 * that dtype, or f64 for a reference. */
static int check_dtypes(const kb_plugin_arg *a, int nargs, int ref, char *err, size_t errlen) {
  kb_plugin_dtype d = T_(a, 1)->dtype;
  if (!is_half_or_f32(d)) {
    return fail(err, errlen, "argument 2 must be an f32, bf16 or f16 tensor, got %s", dtype_name(d));
  }
  for (int i = 2; i < nargs; i++)
    if (T_(a, i)->dtype != d)
      return fail(err, errlen, "argument %d is %s, argument 2 is %s: the inputs share one dtype", i + 1,
                  dtype_name(T_(a, i)->dtype), dtype_name(d));
  kb_plugin_dtype want = ref ? KB_PLUGIN_F64 : d;
  if (T_(a, 0)->dtype != want)
    return fail(err, errlen, "out must be %s%s, got %s", dtype_name(want), ref ? " (the reference)" : " (as the inputs)",
                dtype_name(T_(a, 0)->dtype));
  return 0;
}

/* x (argument 2) as a rows x cols matrix: 2-D. */
static int check_x(const kb_plugin_tensor *x, shape *s, char *err, size_t errlen) {
  if (x->ndim != 2) return fail(err, errlen, "x must be 2-D (rows x cols), got %d dimensions", x->ndim);
  s->rows = x->shape[0];
  s->cols = x->shape[1];
  s->n = s->cols;
  return 0;
}

/* t holds n elements. */
static int check_numel(const kb_plugin_tensor *t, const char *name, int64_t n, char *err, size_t errlen) {
  if (t->numel == n) return 0;
  return fail(err, errlen, "%s has %lld elements, want %lld", name, (long long)t->numel, (long long)n);
}

/* out, x[, w[, b]]: out as x (or `rows` elements for a sum), w and b cols. */
static int check_rows(const kb_plugin_arg *a, int nargs, int ref, int reduce, shape *s, char *err, size_t errlen) {
  if (check_dtypes(a, nargs, ref, err, errlen) || check_x(T_(a, 1), s, err, errlen)) return 1;
  if (check_numel(T_(a, 0), "out", reduce ? s->rows : s->rows * s->cols, err, errlen)) return 1;
  if (!reduce && (T_(a, 0)->ndim != 2 || T_(a, 0)->shape[0] != s->rows))
    return fail(err, errlen, "out must be rows x cols (%lld x %lld), as x", (long long)s->rows, (long long)s->cols);
  if (nargs > 2 && check_numel(T_(a, 2), "w", s->cols, err, errlen)) return 1;
  if (nargs > 3 && check_numel(T_(a, 3), "b", s->cols, err, errlen)) return 1;
  return 0;
}

/* out, a, b: a m x k, b k x n, out m x n. */
static int check_matmul(const kb_plugin_arg *a, int nargs, int ref, shape *s, char *err, size_t errlen) {
  if (check_dtypes(a, nargs, ref, err, errlen)) return 1;
  const kb_plugin_tensor *o = T_(a, 0), *x = T_(a, 1), *y = T_(a, 2);
  if (x->ndim != 2 || y->ndim != 2 || o->ndim != 2)
    return fail(err, errlen, "out, a and b must be 2-D matrices, got %d, %d and %d dimensions", o->ndim, x->ndim,
                y->ndim);
  s->rows = x->shape[0];
  s->cols = x->shape[1];
  s->n = y->shape[1];
  if (y->shape[0] != s->cols)
    return fail(err, errlen, "b has %lld rows, a has %lld columns", (long long)y->shape[0], (long long)s->cols);
  if (o->shape[0] != s->rows || o->shape[1] != s->n)
    return fail(err, errlen, "out must be %lld x %lld (a's rows x b's columns), got %lld x %lld", (long long)s->rows,
                (long long)s->n, (long long)o->shape[0], (long long)o->shape[1]);
  return 0;
}

/* ---- the CPU twins: f32 accumulators, sequential loops ------------------------------- */

/* Scratch rows of floats; NULL (and err) when memory is short. */
static float *scratch(int64_t n, char *err, size_t errlen) {
  float *p = (float *)malloc((size_t)(n > 0 ? n : 1) * sizeof(float));
  if (!p) snprintf(err, errlen, "out of memory for %lld floats of scratch", (long long)n);
  return p;
}

static void softmax_row(float *y, const float *x, int64_t n) {
  float m = -INFINITY, s = 0.0f;
  for (int64_t j = 0; j < n; j++) m = x[j] > m ? x[j] : m;
  for (int64_t j = 0; j < n; j++) {
    y[j] = expf(x[j] - m);
    s += y[j];
  }
  for (int64_t j = 0; j < n; j++) y[j] = y[j] / s;
}

static void layernorm_row(float *y, const float *x, const float *w, const float *b, int64_t n) {
  float s = 0.0f, q = 0.0f;
  for (int64_t j = 0; j < n; j++) s += x[j];
  const float mean = s / (float)n;
  for (int64_t j = 0; j < n; j++) q += (x[j] - mean) * (x[j] - mean);
  const float rstd = 1.0f / sqrtf(q / (float)n + HONEST_LAYERNORM_EPS);
  for (int64_t j = 0; j < n; j++) y[j] = (x[j] - mean) * rstd * w[j] + b[j];
}

static void rmsnorm_row(float *y, const float *x, const float *w, int64_t n) {
  float q = 0.0f;
  for (int64_t j = 0; j < n; j++) q += x[j] * x[j];
  const float rrms = 1.0f / sqrtf(q / (float)n + HONEST_RMSNORM_EPS);
  for (int64_t j = 0; j < n; j++) y[j] = x[j] * rrms * w[j];
}

static void scan_row(float *y, const float *x, int64_t n) {
  float s = 0.0f;
  for (int64_t j = 0; j < n; j++) y[j] = s += x[j];
}

enum op { SOFTMAX, LAYERNORM, RMSNORM, SUM, SCAN };

/* The row ops on the CPU: each row of x (and w, b) as floats, the result
 * stored rounded to out's dtype. */
static int rows_cpu(enum op op, const kb_plugin_arg *a, int nargs, char *err, size_t errlen) {
  shape s;
  if (check_rows(a, nargs, 0, op == SUM, &s, err, errlen)) return 1;
  float *x = scratch(s.cols, err, errlen), *y = scratch(s.cols, err, errlen);
  float *w = nargs > 2 ? scratch(s.cols, err, errlen) : NULL, *b = nargs > 3 ? scratch(s.cols, err, errlen) : NULL;
  int bad = !x || !y || (nargs > 2 && !w) || (nargs > 3 && !b);
  if (!bad) {
    if (w) load_row(T_(a, 2), 0, s.cols, w);
    if (b) load_row(T_(a, 3), 0, s.cols, b);
    for (int64_t r = 0; r < s.rows; r++) {
      load_row(T_(a, 1), r * s.cols, s.cols, x);
      if (op == SUM) {
        float sum = 0.0f;
        for (int64_t j = 0; j < s.cols; j++) sum += x[j];
        store_row(T_(a, 0), r, 1, &sum);
        continue;
      }
      if (op == SOFTMAX) softmax_row(y, x, s.cols);
      else if (op == LAYERNORM) layernorm_row(y, x, w, b, s.cols);
      else if (op == RMSNORM) rmsnorm_row(y, x, w, s.cols);
      else scan_row(y, x, s.cols);
      store_row(T_(a, 0), r * s.cols, s.cols, y);
    }
  }
  free(x), free(y), free(w), free(b);
  return bad;
}

/* out = a b: each out element a sum over k in order, in an f32 accumulator. */
static int matmul_cpu(const kb_plugin_arg *a, int nargs, char *err, size_t errlen) {
  shape s;
  if (check_matmul(a, nargs, 0, &s, err, errlen)) return 1;
  /* b as floats once (exact), a's rows as they come */
  float *arow = scratch(s.cols, err, errlen), *b = scratch(s.cols * s.n, err, errlen), *acc = scratch(s.n, err, errlen);
  int bad = !arow || !b || !acc;
  if (!bad) load_row(T_(a, 2), 0, s.cols * s.n, b);
  for (int64_t i = 0; !bad && i < s.rows; i++) {
    load_row(T_(a, 1), i * s.cols, s.cols, arow);
    for (int64_t j = 0; j < s.n; j++) acc[j] = 0.0f;
    for (int64_t k = 0; k < s.cols; k++)
      for (int64_t j = 0; j < s.n; j++) acc[j] += arow[k] * b[k * s.n + j];
    store_row(T_(a, 0), i * s.n, s.n, acc);
  }
  free(arow), free(b), free(acc);
  return bad;
}

#define CPU_ENTRY(name, op)                                                                         \
  static int name##_cpu(const kb_plugin_arg *a, int n, void *stream, char *err, size_t errlen) { \
    (void)stream;                                                                                   \
    return rows_cpu(op, a, n, err, errlen);                                                         \
  }
CPU_ENTRY(softmax, SOFTMAX)
CPU_ENTRY(layernorm, LAYERNORM)
CPU_ENTRY(rmsnorm, RMSNORM)
CPU_ENTRY(sum, SUM)
CPU_ENTRY(scan, SCAN)

static int matmul_cpu_entry(const kb_plugin_arg *a, int n, void *stream, char *err, size_t errlen) {
  (void)stream;
  return matmul_cpu(a, n, err, errlen);
}

/* ---- the references on the CPU: float64 throughout ----------------------------------- */

/* One row of the reference of op from x (and w, b) into y, in double. */
static void row_f64(enum op op, double *y, const double *x, const double *w, const double *b, int64_t n) {
  double s = 0.0, q = 0.0, m = -INFINITY;
  switch (op) {
  case SOFTMAX:
    for (int64_t j = 0; j < n; j++) m = x[j] > m ? x[j] : m;
    for (int64_t j = 0; j < n; j++) s += y[j] = exp(x[j] - m);
    for (int64_t j = 0; j < n; j++) y[j] /= s;
    break;
  case LAYERNORM:
    for (int64_t j = 0; j < n; j++) s += x[j];
    s /= (double)n;
    for (int64_t j = 0; j < n; j++) q += (x[j] - s) * (x[j] - s);
    q = 1.0 / sqrt(q / (double)n + LAYERNORM_EPS_F64);
    for (int64_t j = 0; j < n; j++) y[j] = (x[j] - s) * q * w[j] + b[j];
    break;
  case RMSNORM:
    for (int64_t j = 0; j < n; j++) q += x[j] * x[j];
    q = 1.0 / sqrt(q / (double)n + RMSNORM_EPS_F64);
    for (int64_t j = 0; j < n; j++) y[j] = x[j] * q * w[j];
    break;
  case SUM:
    for (int64_t j = 0; j < n; j++) s += x[j];
    y[0] = s;
    break;
  case SCAN:
    for (int64_t j = 0; j < n; j++) y[j] = s += x[j];
    break;
  }
}

static double *scratch_f64(int64_t n, char *err, size_t errlen) {
  double *p = (double *)malloc((size_t)(n > 0 ? n : 1) * sizeof(double));
  if (!p) snprintf(err, errlen, "out of memory for %lld doubles of scratch", (long long)n);
  return p;
}

static int rows_ref_cpu(enum op op, const kb_plugin_arg *a, int nargs, char *err, size_t errlen) {
  shape s;
  if (check_rows(a, nargs, 1, op == SUM, &s, err, errlen)) return 1;
  double *x = scratch_f64(s.cols, err, errlen), *w = NULL, *b = NULL;
  if (nargs > 2) w = scratch_f64(s.cols, err, errlen);
  if (nargs > 3) b = scratch_f64(s.cols, err, errlen);
  int bad = !x || (nargs > 2 && !w) || (nargs > 3 && !b);
  if (!bad) {
    if (w) load_row_f64(T_(a, 2), 0, s.cols, w);
    if (b) load_row_f64(T_(a, 3), 0, s.cols, b);
    double *out = (double *)T_(a, 0)->data;
    for (int64_t r = 0; r < s.rows; r++) {
      load_row_f64(T_(a, 1), r * s.cols, s.cols, x);
      row_f64(op, op == SUM ? out + r : out + r * s.cols, x, w, b, s.cols);
    }
  }
  free(x), free(w), free(b);
  return bad;
}

static int matmul_ref_cpu(const kb_plugin_arg *a, int n, void *stream, char *err, size_t errlen) {
  (void)stream;
  shape s;
  if (check_matmul(a, n, 1, &s, err, errlen)) return 1;
  double *arow = scratch_f64(s.cols, err, errlen), *brow = scratch_f64(s.n, err, errlen);
  int bad = !arow || !brow;
  double *out = (double *)T_(a, 0)->data;
  for (int64_t i = 0; !bad && i < s.rows; i++) {
    load_row_f64(T_(a, 1), i * s.cols, s.cols, arow);
    for (int64_t j = 0; j < s.n; j++) out[i * s.n + j] = 0.0;
    for (int64_t k = 0; k < s.cols; k++) {
      load_row_f64(T_(a, 2), k * s.n, s.n, brow);
      for (int64_t j = 0; j < s.n; j++) out[i * s.n + j] += arow[k] * brow[j];
    }
  }
  free(arow), free(brow);
  return bad;
}

#define REF_CPU_ENTRY(name, op)                                                                         \
  static int name##_ref_cpu(const kb_plugin_arg *a, int n, void *stream, char *err, size_t errlen) { \
    (void)stream;                                                                                       \
    return rows_ref_cpu(op, a, n, err, errlen);                                                         \
  }
REF_CPU_ENTRY(softmax, SOFTMAX)
REF_CPU_ENTRY(layernorm, LAYERNORM)
REF_CPU_ENTRY(rmsnorm, RMSNORM)
REF_CPU_ENTRY(sum, SUM)
REF_CPU_ENTRY(scan, SCAN)

/* ---- the CUDA entries: ops.cuh's kernels on the engine's stream ----------------------- */
#ifdef __CUDACC__

/* A launch, checked: its error (or the last one) as an entry's return, with the kernel's name. */
static int launch(const void *fn, const char *what, dim3 grid, dim3 block, void **args, cudaStream_t s, char *err,
                  size_t errlen) {
  cudaError_t e = cudaLaunchKernel(fn, grid, block, args, 0, s);
  if (e == cudaSuccess) e = cudaGetLastError();
  if (e == cudaSuccess) return 0;
  snprintf(err, errlen, "%s: %s", what, cudaGetErrorString(e));
  return (int)e;
}

/* ops.cuh's kernel of op for dtype d, and its name. */
#define PICK(op, d) \
  ((d) == KB_PLUGIN_F32 ? (const void *)op##_f32 : (d) == KB_PLUGIN_BF16 ? (const void *)op##_bf16 : (const void *)op##_f16)
#define PICK_NAME(op, d) ((d) == KB_PLUGIN_F32 ? #op "_f32" : (d) == KB_PLUGIN_BF16 ? #op "_bf16" : #op "_f16")

/* Blocks for one row each, grid-strided past 2^20 rows. */
static unsigned row_blocks(int64_t rows) { return (unsigned)(rows > (1 << 20) ? (1 << 20) : rows); }

static int rows_cuda(enum op op, const kb_plugin_arg *a, int nargs, void *stream, char *err, size_t errlen) {
  shape s;
  if (check_rows(a, nargs, 0, op == SUM, &s, err, errlen)) return (int)cudaErrorInvalidValue;
  if (s.rows == 0) return 0;
  kb_plugin_dtype d = T_(a, 1)->dtype;
  void *out = T_(a, 0)->data, *x = T_(a, 1)->data, *w = nargs > 2 ? T_(a, 2)->data : NULL,
       *b = nargs > 3 ? T_(a, 3)->data : NULL;
  long long rows = s.rows, cols = s.cols;
  void *two[] = {&out, &x, &rows, &cols}, *three[] = {&out, &x, &w, &rows, &cols},
       *four[] = {&out, &x, &w, &b, &rows, &cols};
  dim3 grid(row_blocks(s.rows)), block(HONEST_BLOCK);
  cudaStream_t st = (cudaStream_t)stream;
  switch (op) {
  case SOFTMAX: return launch(PICK(softmax, d), PICK_NAME(softmax, d), grid, block, two, st, err, errlen);
  case LAYERNORM: return launch(PICK(layernorm, d), PICK_NAME(layernorm, d), grid, block, four, st, err, errlen);
  case RMSNORM: return launch(PICK(rmsnorm, d), PICK_NAME(rmsnorm, d), grid, block, three, st, err, errlen);
  case SUM: return launch(PICK(sum, d), PICK_NAME(sum, d), grid, block, two, st, err, errlen);
  case SCAN: return launch(PICK(scan, d), PICK_NAME(scan, d), grid, block, two, st, err, errlen);
  }
  return 0;
}

/* The matmul's grid: tiles of out, tile rows grid-strided past 65535. */
static dim3 matmul_grid(const shape *s) {
  int64_t gx = (s->n + HONEST_TILE - 1) / HONEST_TILE, gy = (s->rows + HONEST_TILE - 1) / HONEST_TILE;
  return dim3((unsigned)gx, (unsigned)(gy > 65535 ? 65535 : gy));
}

static int matmul_cuda(const kb_plugin_arg *a, int n, void *stream, char *err, size_t errlen) {
  shape s;
  if (check_matmul(a, n, 0, &s, err, errlen)) return (int)cudaErrorInvalidValue;
  if (s.rows == 0 || s.n == 0) return 0;
  if ((s.n + HONEST_TILE - 1) / HONEST_TILE > 0x7fffffff) {
    snprintf(err, errlen, "b has %lld columns, more than a grid's x can tile", (long long)s.n);
    return (int)cudaErrorInvalidValue;
  }
  kb_plugin_dtype d = T_(a, 1)->dtype;
  void *out = T_(a, 0)->data, *x = T_(a, 1)->data, *y = T_(a, 2)->data;
  long long m = s.rows, k = s.cols, nn = s.n;
  void *args[] = {&out, &x, &y, &m, &k, &nn};
  return launch(PICK(matmul, d), PICK_NAME(matmul, d), matmul_grid(&s), dim3(HONEST_TILE, HONEST_TILE), args,
                (cudaStream_t)stream, err, errlen);
}

#define CUDA_ENTRY(name, op)                                                                         \
  static int name##_cuda(const kb_plugin_arg *a, int n, void *stream, char *err, size_t errlen) { \
    return rows_cuda(op, a, n, stream, err, errlen);                                                 \
  }
CUDA_ENTRY(softmax, SOFTMAX)
CUDA_ENTRY(layernorm, LAYERNORM)
CUDA_ENTRY(rmsnorm, RMSNORM)
CUDA_ENTRY(sum, SUM)
CUDA_ENTRY(scan, SCAN)

/* The references on the GPU: one thread per row (per element for the
 * matmul), double accumulators, the CPU's row_f64 as device code. */
__device__ double ld64(float v) { return v; }
__device__ double ld64(__nv_bfloat16 v) { return (double)__bfloat162float(v); }
__device__ double ld64(__half v) { return (double)__half2float(v); }

template <typename T>
__global__ void rows_ref_kernel(int op, double *out, const T *x, const T *w, const T *b, long long rows,
                                long long cols) {
  for (long long r = blockIdx.x * (long long)blockDim.x + threadIdx.x; r < rows; r += (long long)gridDim.x * blockDim.x) {
    const T *xr = x + r * cols;
    double *y = op == SUM ? out + r : out + r * cols;
    double s = 0.0, q = 0.0, m = -HUGE_VAL;
    switch (op) {
    case SOFTMAX:
      for (long long j = 0; j < cols; j++) m = fmax(m, ld64(xr[j]));
      for (long long j = 0; j < cols; j++) s += y[j] = exp(ld64(xr[j]) - m);
      for (long long j = 0; j < cols; j++) y[j] /= s;
      break;
    case LAYERNORM:
      for (long long j = 0; j < cols; j++) s += ld64(xr[j]);
      s /= (double)cols;
      for (long long j = 0; j < cols; j++) q += (ld64(xr[j]) - s) * (ld64(xr[j]) - s);
      q = 1.0 / sqrt(q / (double)cols + LAYERNORM_EPS_F64);
      for (long long j = 0; j < cols; j++) y[j] = (ld64(xr[j]) - s) * q * ld64(w[j]) + ld64(b[j]);
      break;
    case RMSNORM:
      for (long long j = 0; j < cols; j++) q += ld64(xr[j]) * ld64(xr[j]);
      q = 1.0 / sqrt(q / (double)cols + RMSNORM_EPS_F64);
      for (long long j = 0; j < cols; j++) y[j] = ld64(xr[j]) * q * ld64(w[j]);
      break;
    case SUM:
      for (long long j = 0; j < cols; j++) s += ld64(xr[j]);
      y[0] = s;
      break;
    case SCAN:
      for (long long j = 0; j < cols; j++) y[j] = s += ld64(xr[j]);
      break;
    }
  }
}

template <typename T>
__global__ void matmul_ref_kernel(double *out, const T *a, const T *b, long long m, long long k, long long n) {
  for (long long e = blockIdx.x * (long long)blockDim.x + threadIdx.x; e < m * n; e += (long long)gridDim.x * blockDim.x) {
    const long long i = e / n, j = e % n;
    double acc = 0.0;
    for (long long p = 0; p < k; p++) acc += ld64(a[i * k + p]) * ld64(b[p * n + j]);
    out[e] = acc;
  }
}

#define PICK_T(kernel, d)                                                                                    \
  ((d) == KB_PLUGIN_F32 ? (const void *)kernel<float> : (d) == KB_PLUGIN_BF16 ? (const void *)kernel<__nv_bfloat16> \
                                                                             : (const void *)kernel<__half>)

static unsigned flat_blocks(int64_t n) {
  int64_t b = (n + 255) / 256;
  return (unsigned)(b < 1 ? 1 : b > 65535 * 16 ? 65535 * 16 : b);
}

static int rows_ref_cuda(enum op op, const kb_plugin_arg *a, int nargs, void *stream, char *err, size_t errlen) {
  shape s;
  if (check_rows(a, nargs, 1, op == SUM, &s, err, errlen)) return (int)cudaErrorInvalidValue;
  if (s.rows == 0) return 0;
  int o = (int)op;
  void *out = T_(a, 0)->data, *x = T_(a, 1)->data, *w = nargs > 2 ? T_(a, 2)->data : NULL,
       *b = nargs > 3 ? T_(a, 3)->data : NULL;
  long long rows = s.rows, cols = s.cols;
  void *args[] = {&o, &out, &x, &w, &b, &rows, &cols};
  return launch(PICK_T(rows_ref_kernel, T_(a, 1)->dtype), "rows_ref_kernel", dim3(flat_blocks(s.rows)), dim3(256),
                args, (cudaStream_t)stream, err, errlen);
}

static int matmul_ref_cuda(const kb_plugin_arg *a, int n, void *stream, char *err, size_t errlen) {
  shape s;
  if (check_matmul(a, n, 1, &s, err, errlen)) return (int)cudaErrorInvalidValue;
  if (s.rows == 0 || s.n == 0) return 0;
  void *out = T_(a, 0)->data, *x = T_(a, 1)->data, *y = T_(a, 2)->data;
  long long m = s.rows, k = s.cols, nn = s.n;
  void *args[] = {&out, &x, &y, &m, &k, &nn};
  return launch(PICK_T(matmul_ref_kernel, T_(a, 1)->dtype), "matmul_ref_kernel", dim3(flat_blocks(s.rows * s.n)),
                dim3(256), args, (cudaStream_t)stream, err, errlen);
}

#define REF_CUDA_ENTRY(name, op)                                                                         \
  static int name##_ref_cuda(const kb_plugin_arg *a, int n, void *stream, char *err, size_t errlen) { \
    return rows_ref_cuda(op, a, n, stream, err, errlen);                                                 \
  }
REF_CUDA_ENTRY(softmax, SOFTMAX)
REF_CUDA_ENTRY(layernorm, LAYERNORM)
REF_CUDA_ENTRY(rmsnorm, RMSNORM)
REF_CUDA_ENTRY(sum, SUM)
REF_CUDA_ENTRY(scan, SCAN)
#define CUDA_FN(f) f
#else
#define CUDA_FN(f) NULL
#endif

/* ---- the plugin ------------------------------------------------------------------------ */

#define SIG2 "tensor, tensor"
#define SIG3 "tensor, tensor, tensor"
#define SIG4 "tensor, tensor, tensor, tensor"
static const kb_plugin_kernel honest_kernels[] = {
    {"softmax", SIG2, CUDA_FN(softmax_cuda), softmax_cpu, "out = softmax(x) along each row (max subtracted)"},
    {"layernorm", SIG4, CUDA_FN(layernorm_cuda), layernorm_cpu, "out = layernorm(x) * w + b per row, eps 1e-5"},
    {"rmsnorm", SIG3, CUDA_FN(rmsnorm_cuda), rmsnorm_cpu, "out = x / rms(x) * w per row, eps 1e-6"},
    {"sum", SIG2, CUDA_FN(sum_cuda), sum_cpu, "out[row] = the sum of x's row (out has rows elements)"},
    {"matmul", SIG3, CUDA_FN(matmul_cuda), matmul_cpu_entry, "out (m x n) = a (m x k) b (k x n)"},
    {"scan", SIG2, CUDA_FN(scan_cuda), scan_cpu, "out = inclusive prefix sums of x along each row"},
    {"softmax_ref", SIG2, CUDA_FN(softmax_ref_cuda), softmax_ref_cpu, "softmax in float64 into an f64 out"},
    {"layernorm_ref", SIG4, CUDA_FN(layernorm_ref_cuda), layernorm_ref_cpu, "layernorm in float64 into an f64 out"},
    {"rmsnorm_ref", SIG3, CUDA_FN(rmsnorm_ref_cuda), rmsnorm_ref_cpu, "rmsnorm in float64 into an f64 out"},
    {"sum_ref", SIG2, CUDA_FN(sum_ref_cuda), sum_ref_cpu, "the row sums in float64 into an f64 out"},
    {"matmul_ref", SIG3, CUDA_FN(matmul_ref_cuda), matmul_ref_cpu, "the matmul in float64 into an f64 out"},
    {"scan_ref", SIG2, CUDA_FN(scan_ref_cuda), scan_ref_cpu, "the prefix sums in float64 into an f64 out"},
};

static const kb_plugin honest_plugin = {KB_PLUGIN_ABI_VERSION, "honest_ops", "1.0.0",
                                        (int)(sizeof honest_kernels / sizeof honest_kernels[0]), honest_kernels};

HONEST_EXPORT const kb_plugin *kluabench_plugin(void) { return &honest_plugin; }
