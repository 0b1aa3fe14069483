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

/* ---- element-wise: a op b ----------------------------------------------- */

static inline float binary_f(kb_math_binary_op op, float x, float y) {
  switch (op) {
  case KB_MATH_ADD: return x + y;
  case KB_MATH_SUB: return x - y;
  case KB_MATH_MUL: return x * y;
  default: return x / y;
  }
}

static inline double binary_d(kb_math_binary_op op, double x, double y) {
  switch (op) {
  case KB_MATH_ADD: return x + y;
  case KB_MATH_SUB: return x - y;
  case KB_MATH_MUL: return x * y;
  default: return x / y;
  }
}

/* Element offsets of a and b for output index i (the broadcast strides). */
static void offsets(const kb_math_binary_args *a, int64_t i, int64_t *oa, int64_t *ob) {
  int64_t ia = 0, ib = 0;
  for (int d = a->ndim - 1; d >= 0; d--) {
    const int64_t c = i % a->shape[d];
    i /= a->shape[d];
    ia += c * a->a_stride[d];
    ib += c * a->b_stride[d];
  }
  *oa = a->a_dense ? -1 : ia;
  *ob = a->b_dense ? -1 : ib;
}

static const char *binary_cpu(const kb_math_binary_args *a) {
  const int general = !a->a_dense || (a->b && !a->b_dense);
  const int f64 = a->dtype == KB_F64;
  const float sf = (float)a->scalar;
  for (int64_t i = 0; i < a->numel; i++) {
    int64_t ia = i, ib = i;
    if (general) {
      offsets(a, i, &ia, &ib);
      if (ia < 0) ia = i;
      if (ib < 0) ib = i;
    }
    if (f64) {
      const double x = ((const double *)a->a)[ia];
      const double y = a->b ? ((const double *)a->b)[ib] : a->scalar;
      ((double *)a->out)[i] = a->scalar_first ? binary_d(a->op, y, x) : binary_d(a->op, x, y);
    } else {
      const float x = load_f(a->a, a->dtype, ia);
      const float y = a->b ? load_f(a->b, a->dtype, ib) : sf;
      store_f(a->out, a->dtype, i, a->scalar_first ? binary_f(a->op, y, x) : binary_f(a->op, x, y));
    }
  }
  return NULL;
}

/* ---- element-wise: op(x) ------------------------------------------------- */

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
  } else {
    for (int64_t i = 0; i < a->n; i++) store_f(a->out, a->dtype, i, unary_f(a->op, load_f(a->x, a->dtype, i)));
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
