/* Tensor arithmetic, the reference path of a benchmark: element-wise
 * operations with broadcasting, reductions over one dimension and matrix
 * products. Each entry has a CUDA twin (tensor_math.cu; matmul through
 * cuBLAS, tensor_math_cublas.cu) and a CPU twin (tensor_math_cpu.c) with
 * the same contract; the binding (engine/core/tensor_math.c) checks shapes,
 * dtypes and devices before any of these run, so the kernels trust what
 * passes (inputs and outputs on the kernel's device, an output either equal
 * to an input at the same index or not overlapping it).
 *
 * Arithmetic: bf16, f16 and f32 values are computed in f32, f64 values in
 * f64, and each output is rounded once to the dtype (nearest even). The
 * element-wise operations are IEEE operations on both twins (+, -, *, /,
 * sqrt and 1/sqrt are correctly rounded; nothing is contracted into a
 * fused multiply-add), so the twins agree bit for bit, except exp: the
 * C library's expf/exp and CUDA's differ by up to 2 ulp of the compute
 * type. Reductions (sum, mean) accumulate in f64 for every dtype and round
 * once; max is exact. matmul accumulates in f64 on the CPU and in f32 (f64
 * for f64) in cuBLAS. */
#ifndef KB_TENSOR_MATH_H
#define KB_TENSOR_MATH_H

#include <stddef.h>
#include <stdint.h>
#include "dtype.h"

#ifdef __cplusplus
extern "C" {
#endif

#define KB_MATH_MAX_DIMS 8

typedef enum { KB_MATH_ADD = 0, KB_MATH_SUB, KB_MATH_MUL, KB_MATH_DIV } kb_math_binary_op;
typedef enum { KB_MATH_NEG = 0, KB_MATH_EXP, KB_MATH_SQRT, KB_MATH_RSQRT } kb_math_unary_op;
typedef enum { KB_MATH_SUM = 0, KB_MATH_MEAN, KB_MATH_MAX } kb_math_reduce_op;

/* out = a op b over out's shape. a and b are read at element offsets
 * sum(index[d] * stride[d]): a stride of 0 repeats the operand along that
 * dimension (broadcasting). `dense` says the operand's offset is the output
 * index itself (same shape, contiguous), the fast path. b == NULL means the
 * operand is `scalar` (rounded to the compute type first); scalar_first
 * computes scalar op a instead of a op scalar. a, b and out share dtype. */
typedef struct {
  kb_math_binary_op op;
  kb_dtype dtype;
  int ndim; /* of out, 0 to KB_MATH_MAX_DIMS */
  int64_t shape[KB_MATH_MAX_DIMS];
  int64_t a_stride[KB_MATH_MAX_DIMS], b_stride[KB_MATH_MAX_DIMS];
  int a_dense, b_dense;
  int64_t numel; /* of out */
  const void *a, *b;
  double scalar;
  int scalar_first;
  void *out; /* may equal a (in place, a dense) */
  void *stream;
} kb_math_binary_args;

/* out[i] = op(x[i]) for i < n; out may equal x. */
typedef struct {
  kb_math_unary_op op;
  kb_dtype dtype;
  int64_t n;
  const void *x;
  void *out;
  void *stream;
} kb_math_unary_args;

/* x viewed as [outer, n, inner]: out[o, i] = op over k < n of x[o, k, i].
 * sum and mean accumulate in f64 (mean = sum / n, NaN for n = 0); max
 * needs n > 0, is NaN when any element is, and prefers +0 to -0 (so that
 * the result never depends on the order of the elements). */
typedef struct {
  kb_math_reduce_op op;
  kb_dtype dtype;
  int64_t outer, n, inner;
  const void *x;
  void *out; /* outer * inner elements, never overlapping x */
  void *stream;
} kb_math_reduce_args;

/* out[b] = a[b] @ b[b] for b < batch, row-major: a[b] is [m, k] at
 * a + b * a_batch_stride elements (a stride of 0 shares one matrix across
 * the batch), likewise b[b] [k, n]; out[b] is [m, n] at out + b * m * n.
 * k may be 0 (out is then all zeros). */
typedef struct {
  kb_dtype dtype;
  int64_t batch, m, n, k;
  int64_t a_batch_stride, b_batch_stride;
  const void *a, *b;
  void *out; /* never overlapping a or b */
  void *stream;
} kb_math_matmul_args;

/* One table per backend, as kernels/rope.h has: every entry returns NULL on
 * success or a message naming the failed call. */
typedef struct {
  const char *(*binary)(const kb_math_binary_args *a);
  const char *(*unary)(const kb_math_unary_args *a);
  const char *(*reduce)(const kb_math_reduce_args *a);
  const char *(*matmul)(const kb_math_matmul_args *a);
} kb_tensor_math_ops;

extern const kb_tensor_math_ops kb_tensor_math_ops_cpu;  /* tensor_math_cpu.c */
extern const kb_tensor_math_ops kb_tensor_math_ops_cuda; /* tensor_math.cu; CUDA builds only */

/* tensor_math_cublas.cu: the CUDA matmul through cuBLAS, opened with dlopen
 * on first use ($KLUABENCH_CUBLAS, else libcublas.so[.13|.12|.11] on the
 * library path, $CUDA_HOME/lib64, /usr/local/cuda/lib64), so the binary
 * does not link it. Math mode: default (no TF32), reduced-precision
 * reductions disallowed; a 32 MiB workspace of its own (so that matmuls can
 * be captured into CUDA graphs). */
const char *kb_math_matmul_cublas(const kb_math_matmul_args *a);

#ifdef __cplusplus
}
#endif

#endif
