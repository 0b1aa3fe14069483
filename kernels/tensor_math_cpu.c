/* CPU twin of the tensor arithmetic (tensor_math.h): the numerical
 * reference for the CUDA twin, and a usable backend on its own.
 *
 * Bit-exactness with the CUDA twin rests on each element being one IEEE
 * operation in the compute type (f32 for bf16/f16/f32, f64 for f64) and one
 * rounding to the dtype: this file must be compiled without floating-point
 * contraction (ISO C mode, -std=c11, has -ffp-contract=off in GCC). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "tensor_math.h"

/* ---- element access ------------------------------------------------------ */

static inline float load_f(const void *p, kb_dtype t, int64_t i) {
  switch (t) {
  case KB_BF16: return kb_bf16_to_f32(((const uint16_t *)p)[i]);
  case KB_F16: return kb_f16_to_f32(((const uint16_t *)p)[i]);
  default: return ((const float *)p)[i];
  }
}

static inline void store_f(void *p, kb_dtype t, int64_t i, float x) {
  switch (t) {
  case KB_BF16: ((uint16_t *)p)[i] = kb_f32_to_bf16(x); break;
  case KB_F16: ((uint16_t *)p)[i] = kb_f32_to_f16(x); break;
  default: ((float *)p)[i] = x; break;
  }
}

/* ---- element-wise ------------------------------------------------------------ */

/* Elements go through blocks of BLK values of the compute type: loaded
 * (widened, or gathered along broadcast strides), combined by one loop per
 * operation (which the compiler vectorises), stored (narrowed). */
enum { BLK = 512 };

static void widen(float *dst, const void *src, kb_dtype t, int64_t i0, int n) {
  const uint16_t *h = (const uint16_t *)src + i0;
  if (t == KB_BF16) for (int j = 0; j < n; j++) dst[j] = kb_bf16_to_f32(h[j]);
  else if (t == KB_F16) for (int j = 0; j < n; j++) dst[j] = kb_f16_to_f32(h[j]);
  else memcpy(dst, (const float *)src + i0, (size_t)n * sizeof(float));
}

static void narrow(void *dst, kb_dtype t, int64_t i0, const float *src, int n) {
  uint16_t *h = (uint16_t *)dst + i0;
  if (t == KB_BF16) for (int j = 0; j < n; j++) h[j] = kb_f32_to_bf16(src[j]);
  else if (t == KB_F16) for (int j = 0; j < n; j++) h[j] = kb_f32_to_f16(src[j]);
  else memcpy((float *)dst + i0, src, (size_t)n * sizeof(float));
}

/* Where an operand read along broadcast strides is: the output's
 * coordinates and the operand's element offset, advanced one output
 * element at a time (no division per element). */
typedef struct {
  int64_t coord[KB_MATH_MAX_DIMS], offset;
} walker;

static void walk_step(const kb_math_binary_args *a, const int64_t *stride, walker *w) {
  for (int d = a->ndim - 1; d >= 0; d--) {
    w->offset += stride[d];
    if (++w->coord[d] < a->shape[d]) return;
    w->offset -= stride[d] * a->shape[d];
    w->coord[d] = 0;
  }
}

/* Loads n values of an operand for output elements i0.. into dst (f32 or
 * f64 as the dtype computes). */
static void load_operand(const kb_math_binary_args *a, const void *p, int dense, const int64_t *stride, walker *w,
                         int64_t i0, int n, void *dst) {
  const int f64 = a->dtype == KB_F64;
  if (dense) {
    if (f64) memcpy(dst, (const double *)p + i0, (size_t)n * sizeof(double));
    else widen(dst, p, a->dtype, i0, n);
    return;
  }
  for (int j = 0; j < n; j++) {
    if (f64) ((double *)dst)[j] = ((const double *)p)[w->offset];
    else ((float *)dst)[j] = load_f(p, a->dtype, w->offset);
    walk_step(a, stride, w);
  }
}

#define KB_APPLY(T, op, x, y, n, swap)                                                        \
  do {                                                                                       \
    T *restrict x_ = (x);                                                                    \
    const T *restrict y_ = (y);                                                              \
    switch ((op) * 2 + (swap)) {                                                             \
    case KB_MATH_ADD * 2: case KB_MATH_ADD * 2 + 1: for (int j = 0; j < (n); j++) x_[j] = x_[j] + y_[j]; break; \
    case KB_MATH_MUL * 2: case KB_MATH_MUL * 2 + 1: for (int j = 0; j < (n); j++) x_[j] = x_[j] * y_[j]; break; \
    case KB_MATH_SUB * 2: for (int j = 0; j < (n); j++) x_[j] = x_[j] - y_[j]; break;         \
    case KB_MATH_SUB * 2 + 1: for (int j = 0; j < (n); j++) x_[j] = y_[j] - x_[j]; break;     \
    case KB_MATH_DIV * 2: for (int j = 0; j < (n); j++) x_[j] = x_[j] / y_[j]; break;         \
    default: for (int j = 0; j < (n); j++) x_[j] = y_[j] / x_[j]; break;                      \
    }                                                                                        \
  } while (0)

static const char *binary_cpu(const kb_math_binary_args *a) {
  const int f64 = a->dtype == KB_F64;
  double xb[BLK], yb[BLK]; /* f32 blocks use the front half of each as floats */
  walker wa, wb;
  memset(&wa, 0, sizeof wa);
  memset(&wb, 0, sizeof wb);
  if (!a->b) { /* the number, rounded to the compute type once */
    for (int j = 0; j < BLK; j++) {
      if (f64) yb[j] = a->scalar;
      else ((float *)yb)[j] = (float)a->scalar;
    }
  }
  for (int64_t i0 = 0; i0 < a->numel; i0 += BLK) {
    const int n = a->numel - i0 < BLK ? (int)(a->numel - i0) : BLK;
    load_operand(a, a->a, a->a_dense, a->a_stride, &wa, i0, n, xb);
    if (a->b) load_operand(a, a->b, a->b_dense, a->b_stride, &wb, i0, n, yb);
    if (f64) {
      KB_APPLY(double, a->op, xb, yb, n, a->scalar_first);
      memcpy((double *)a->out + i0, xb, (size_t)n * sizeof(double));
    } else {
      KB_APPLY(float, a->op, (float *)xb, (const float *)yb, n, a->scalar_first);
      narrow(a->out, a->dtype, i0, (const float *)xb, n);
    }
  }
  return NULL;
}

static inline float unary_f(kb_math_unary_op op, float x) {
  switch (op) {
  case KB_MATH_NEG: return -x;
  case KB_MATH_EXP: return expf(x);
  case KB_MATH_SQRT: return sqrtf(x);
  default: return 1.0f / sqrtf(x);
  }
}

static inline double unary_d(kb_math_unary_op op, double x) {
  switch (op) {
  case KB_MATH_NEG: return -x;
  case KB_MATH_EXP: return exp(x);
  case KB_MATH_SQRT: return sqrt(x);
  default: return 1.0 / sqrt(x);
  }
}

static const char *unary_cpu(const kb_math_unary_args *a) {
  if (a->dtype == KB_F64) {
    const double *x = a->x;
    double *out = a->out;
    for (int64_t i = 0; i < a->n; i++) out[i] = unary_d(a->op, x[i]);
    return NULL;
  }
  float b[BLK];
  for (int64_t i0 = 0; i0 < a->n; i0 += BLK) {
    const int n = a->n - i0 < BLK ? (int)(a->n - i0) : BLK;
    widen(b, a->x, a->dtype, i0, n);
    for (int j = 0; j < n; j++) b[j] = unary_f(a->op, b[j]);
    narrow(a->out, a->dtype, i0, b, n);
  }
  return NULL;
}

/* ---- reductions ------------------------------------------------------------ */

static inline double load_d(const void *p, kb_dtype t, int64_t i) {
  return t == KB_F64 ? ((const double *)p)[i] : (double)load_f(p, t, i);
}

static inline void store_d(void *p, kb_dtype t, int64_t i, double x) {
  if (t == KB_F64) ((double *)p)[i] = x;
  else store_f(p, t, i, (float)x);
}

/* The larger of m and x as tensor_math.h defines max: NaN wins, +0 beats
 * -0. Commutative and associative, so the CUDA twin's tree agrees. */
static inline double max_step(double m, double x) {
  if (isnan(m) || isnan(x)) return NAN;
  if (x > m || (x == m && signbit(m) && !signbit(x))) return x;
  return m;
}

static const char *reduce_cpu(const kb_math_reduce_args *a) {
  for (int64_t o = 0; o < a->outer; o++) {
    for (int64_t in = 0; in < a->inner; in++) {
      const int64_t base = o * a->n * a->inner + in;
      double acc = a->op == KB_MATH_MAX ? load_d(a->x, a->dtype, base) : 0.0;
      for (int64_t k = a->op == KB_MATH_MAX ? 1 : 0; k < a->n; k++) {
        const double x = load_d(a->x, a->dtype, base + k * a->inner);
        acc = a->op == KB_MATH_MAX ? max_step(acc, x) : acc + x;
      }
      if (a->op == KB_MATH_MEAN) acc = acc / (double)a->n;
      store_d(a->out, a->dtype, o * a->inner + in, acc);
    }
  }
  return NULL;
}

/* ---- matmul ---------------------------------------------------------------- */

/* For each row i of a: acc[0..n) = sum over p of a[i, p] * b[p, :], in f64
 * with p ascending, then rounded once. b is widened to f64 once per matrix
 * (k * n doubles), so the inner loop is a plain f64 multiply-add over a row. */
static const char *matmul_cpu(const kb_math_matmul_args *a) {
  const int64_t m = a->m, n = a->n, k = a->k;
  if (m == 0 || n == 0) return NULL;
  double *acc = malloc((size_t)n * sizeof(double));
  double *bw = malloc((size_t)(k ? k : 1) * (size_t)n * sizeof(double));
  if (!acc || !bw) {
    free(acc);
    free(bw);
    return "matmul: out of host memory for the f64 accumulators";
  }
  for (int64_t bi = 0; bi < a->batch; bi++) {
    const int64_t a0 = bi * a->a_batch_stride, b0 = bi * a->b_batch_stride, c0 = bi * m * n;
    if (bi == 0 || a->b_batch_stride != 0)
      for (int64_t j = 0; j < k * n; j++) bw[j] = load_d(a->b, a->dtype, b0 + j);
    for (int64_t i = 0; i < m; i++) {
      for (int64_t j = 0; j < n; j++) acc[j] = 0.0;
      for (int64_t p = 0; p < k; p++) {
        const double x = load_d(a->a, a->dtype, a0 + i * k + p);
        const double *row = bw + p * n;
        for (int64_t j = 0; j < n; j++) acc[j] += x * row[j];
      }
      for (int64_t j = 0; j < n; j++) store_d(a->out, a->dtype, c0 + i * n + j, acc[j]);
    }
  }
  free(acc);
  free(bw);
  return NULL;
}

const kb_tensor_math_ops kb_tensor_math_ops_cpu = {binary_cpu, unary_cpu, reduce_cpu, matmul_cpu};
