// CUDA twin of the tensor arithmetic (tensor_math.h). These kernels make
// references and inputs, and are not tuned: one element per thread in a
// grid-stride loop, every operation written with the explicitly rounded
// intrinsics (__fadd_rn, __fdiv_rn, __fsqrt_rn, ...) so that nvcc cannot
// contract or approximate them and the CPU twin gets the same bits.
// Reductions: a block per output element, f64 partial sums combined in a
// fixed tree (deterministic from run to run); rows of at most 32 elements
// are summed by one thread in order, as the CPU twin does.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <stdio.h>
#include "tensor_math.h"

namespace {

thread_local char g_err[256];

const char *launch_error(const char *what) {
  cudaError_t e = cudaGetLastError();
  if (e == cudaSuccess) return nullptr;
  snprintf(g_err, sizeof g_err, "%s launch: %s (%s)", what, cudaGetErrorName(e),
           cudaGetErrorString(e));
  return g_err;
}

unsigned blocks_for(int64_t n) {
  int64_t b = (n + 255) / 256;
  return (unsigned)(b < 65535 ? (b ? b : 1) : 65535);
}

__device__ __forceinline__ float load_f(const void *p, kb_dtype t, int64_t i) {
  switch (t) {
  case KB_BF16: return __bfloat162float(static_cast<const __nv_bfloat16 *>(p)[i]);
  case KB_F16: return __half2float(static_cast<const __half *>(p)[i]);
  default: return static_cast<const float *>(p)[i];
  }
}

__device__ __forceinline__ void store_f(void *p, kb_dtype t, int64_t i, float x) {
  switch (t) {
  case KB_BF16: static_cast<__nv_bfloat16 *>(p)[i] = __float2bfloat16_rn(x); break;
  case KB_F16: static_cast<__half *>(p)[i] = __float2half_rn(x); break;
  default: static_cast<float *>(p)[i] = x; break;
  }
}

__device__ __forceinline__ double load_d(const void *p, kb_dtype t, int64_t i) {
  return t == KB_F64 ? static_cast<const double *>(p)[i] : (double)load_f(p, t, i);
}

__device__ __forceinline__ void store_d(void *p, kb_dtype t, int64_t i, double x) {
  if (t == KB_F64) static_cast<double *>(p)[i] = x;
  else store_f(p, t, i, __double2float_rn(x));
}

__device__ __forceinline__ float binary_f(kb_math_binary_op op, float x, float y) {
  switch (op) {
  case KB_MATH_ADD: return __fadd_rn(x, y);
  case KB_MATH_SUB: return __fsub_rn(x, y);
  case KB_MATH_MUL: return __fmul_rn(x, y);
  default: return __fdiv_rn(x, y);
  }
}

__device__ __forceinline__ double binary_d(kb_math_binary_op op, double x, double y) {
  switch (op) {
  case KB_MATH_ADD: return __dadd_rn(x, y);
  case KB_MATH_SUB: return __dsub_rn(x, y);
  case KB_MATH_MUL: return __dmul_rn(x, y);
  default: return __ddiv_rn(x, y);
  }
}

__device__ __forceinline__ float unary_f(kb_math_unary_op op, float x) {
  switch (op) {
  case KB_MATH_NEG: return -x;
  case KB_MATH_EXP: return expf(x);
  case KB_MATH_SQRT: return __fsqrt_rn(x);
  default: return __fdiv_rn(1.0f, __fsqrt_rn(x));
  }
}

__device__ __forceinline__ double unary_d(kb_math_unary_op op, double x) {
  switch (op) {
  case KB_MATH_NEG: return -x;
  case KB_MATH_EXP: return exp(x);
  case KB_MATH_SQRT: return __dsqrt_rn(x);
  default: return __ddiv_rn(1.0, __dsqrt_rn(x));
  }
}

/* The arguments by value: the kernel reads them from constant memory. */
__global__ void binary_kernel(kb_math_binary_args a) {
  const bool general = !a.a_dense || (a.b && !a.b_dense);
  const float sf = __double2float_rn(a.scalar);
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < a.numel;
       i += (int64_t)gridDim.x * blockDim.x) {
    int64_t ia = i, ib = i;
    if (general) {
      int64_t r = i, oa = 0, ob = 0;
      for (int d = a.ndim - 1; d >= 0; d--) {
        const int64_t c = r % a.shape[d];
        r /= a.shape[d];
        oa += c * a.a_stride[d];
        ob += c * a.b_stride[d];
      }
      if (!a.a_dense) ia = oa;
      if (!a.b_dense) ib = ob;
    }
    if (a.dtype == KB_F64) {
      const double x = static_cast<const double *>(a.a)[ia];
      const double y = a.b ? static_cast<const double *>(a.b)[ib] : a.scalar;
      static_cast<double *>(a.out)[i] = a.scalar_first ? binary_d(a.op, y, x) : binary_d(a.op, x, y);
    } else {
      const float x = load_f(a.a, a.dtype, ia);
      const float y = a.b ? load_f(a.b, a.dtype, ib) : sf;
      store_f(a.out, a.dtype, i, a.scalar_first ? binary_f(a.op, y, x) : binary_f(a.op, x, y));
    }
  }
}

__global__ void unary_kernel(kb_math_unary_args a) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < a.n;
       i += (int64_t)gridDim.x * blockDim.x) {
    if (a.dtype == KB_F64)
      static_cast<double *>(a.out)[i] = unary_d(a.op, static_cast<const double *>(a.x)[i]);
    else
      store_f(a.out, a.dtype, i, unary_f(a.op, load_f(a.x, a.dtype, i)));
  }
}

/* max as tensor_math.h defines it (NaN wins, +0 beats -0). */
__device__ __forceinline__ double max_step(double m, double x) {
  if (isnan(m) || isnan(x)) return __longlong_as_double(0x7ff8000000000000LL);
  if (x > m || (x == m && signbit(m) && !signbit(x))) return x;
  return m;
}

__device__ __forceinline__ double finish(const kb_math_reduce_args &a, double acc) {
  return a.op == KB_MATH_MEAN ? __ddiv_rn(acc, (double)a.n) : acc;
}

/* Short rows: one thread per output, elements in order (the CPU's order). */
__global__ void reduce_short_kernel(kb_math_reduce_args a) {
  const int64_t outputs = a.outer * a.inner;
  for (int64_t j = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; j < outputs;
       j += (int64_t)gridDim.x * blockDim.x) {
    const int64_t o = j / a.inner, in = j % a.inner, base = o * a.n * a.inner + in;
    double acc = a.op == KB_MATH_MAX ? load_d(a.x, a.dtype, base) : 0.0;
    for (int64_t k = a.op == KB_MATH_MAX ? 1 : 0; k < a.n; k++) {
      const double x = load_d(a.x, a.dtype, base + k * a.inner);
      acc = a.op == KB_MATH_MAX ? max_step(acc, x) : __dadd_rn(acc, x);
    }
    store_d(a.out, a.dtype, j, finish(a, acc));
  }
}

constexpr int kReduceThreads = 256;

/* Long rows: a block per output (grid-stride over outputs), each thread
 * strides over the row, then a tree over the block's partials. */
__global__ void reduce_block_kernel(kb_math_reduce_args a) {
  __shared__ double part[kReduceThreads];
  const int64_t outputs = a.outer * a.inner;
  for (int64_t j = blockIdx.x; j < outputs; j += gridDim.x) {
    const int64_t o = j / a.inner, in = j % a.inner, base = o * a.n * a.inner + in;
    double acc = a.op == KB_MATH_MAX ? load_d(a.x, a.dtype, base) : 0.0;
    for (int64_t k = threadIdx.x; k < a.n; k += blockDim.x) {
      const double x = load_d(a.x, a.dtype, base + k * a.inner);
      acc = a.op == KB_MATH_MAX ? max_step(acc, x) : __dadd_rn(acc, x);
    }
    part[threadIdx.x] = acc;
    __syncthreads();
    for (int s = kReduceThreads / 2; s > 0; s >>= 1) {
      if ((int)threadIdx.x < s)
        part[threadIdx.x] = a.op == KB_MATH_MAX ? max_step(part[threadIdx.x], part[threadIdx.x + s])
                                                : __dadd_rn(part[threadIdx.x], part[threadIdx.x + s]);
      __syncthreads();
    }
    if (threadIdx.x == 0) store_d(a.out, a.dtype, j, finish(a, part[0]));
    __syncthreads(); /* part[] is reused by the next output */
  }
}

const char *binary_cuda(const kb_math_binary_args *a) {
  if (a->numel == 0) return nullptr;
  binary_kernel<<<blocks_for(a->numel), 256, 0, (cudaStream_t)a->stream>>>(*a);
  return launch_error("tensor binary op");
}

const char *unary_cuda(const kb_math_unary_args *a) {
  if (a->n == 0) return nullptr;
  unary_kernel<<<blocks_for(a->n), 256, 0, (cudaStream_t)a->stream>>>(*a);
  return launch_error("tensor unary op");
}

const char *reduce_cuda(const kb_math_reduce_args *a) {
  const int64_t outputs = a->outer * a->inner;
  if (outputs == 0) return nullptr;
  if (a->n <= 32) {
    reduce_short_kernel<<<blocks_for(outputs), 256, 0, (cudaStream_t)a->stream>>>(*a);
  } else {
    const unsigned grid = (unsigned)(outputs < 65535 ? outputs : 65535);
    reduce_block_kernel<<<grid, kReduceThreads, 0, (cudaStream_t)a->stream>>>(*a);
  }
  return launch_error("tensor reduction");
}

} // namespace

/* extern (tensor_math.h declares it extern "C"), as kb_rope_ops_cuda. */
extern "C" const kb_tensor_math_ops kb_tensor_math_ops_cuda = {binary_cuda, unary_cuda, reduce_cuda,
                                                               kb_math_matmul_cublas};
