// CUDA twins of the element-wise tensor primitives (tensor_ops.h). These
// prepare inputs and are never timed, so they favour clarity: one element
// per thread in a grid-stride loop.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <stdio.h>

extern "C" {
#include "philox.h"
#include "tensor_ops.h"
}

namespace {

thread_local char g_err[256];

const char *launch_error(const char *what) {
  cudaError_t e = cudaGetLastError();
  if (e == cudaSuccess) return nullptr;
  snprintf(g_err, sizeof g_err, "%s launch: %s (%s)", what, cudaGetErrorName(e),
           cudaGetErrorString(e));
  return g_err;
}

// Store x (already rounded to f32 where the dtype is narrower) as dtype t,
// rounding to nearest even as the CPU twin does.
__device__ __forceinline__ void store(void *p, kb_dtype t, size_t i, double x) {
  switch (t) {
  case KB_BF16: static_cast<__nv_bfloat16 *>(p)[i] = __float2bfloat16_rn((float)x); break;
  case KB_F16: static_cast<__half *>(p)[i] = __float2half_rn((float)x); break;
  case KB_F32: static_cast<float *>(p)[i] = (float)x; break;
  default: static_cast<double *>(p)[i] = x; break;
  }
}

__device__ __forceinline__ double load(const void *p, kb_dtype t, size_t i) {
  switch (t) {
  case KB_BF16: return __bfloat162float(static_cast<const __nv_bfloat16 *>(p)[i]);
  case KB_F16: return __half2float(static_cast<const __half *>(p)[i]);
  case KB_F32: return static_cast<const float *>(p)[i];
  default: return static_cast<const double *>(p)[i];
  }
}

__global__ void fill_kernel(void *p, kb_dtype t, size_t n, double x) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
       i += (size_t)gridDim.x * blockDim.x)
    store(p, t, i, x);
}

__global__ void randn_kernel(void *p, kb_dtype t, size_t n, uint64_t seed) {
  size_t pairs = (n + 1) / 2;
  for (size_t j = blockIdx.x * (size_t)blockDim.x + threadIdx.x; j < pairs;
       j += (size_t)gridDim.x * blockDim.x) {
    double z0, z1;
    kb_philox_normal2(seed, j, &z0, &z1);
    store(p, t, 2 * j, (float)z0);
    if (2 * j + 1 < n) store(p, t, 2 * j + 1, (float)z1);
  }
}

__global__ void convert_kernel(void *dst, kb_dtype dt, const void *src, kb_dtype st, size_t n) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
       i += (size_t)gridDim.x * blockDim.x)
    store(dst, dt, i, load(src, st, i));
}

/* Named so that kernel traces can tell it from the work being measured
 * (trace_cupti.c marks it internal). */
__global__ void kb_hold_spin(uint64_t ns) {
  uint64_t start, now;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  do {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  } while (now - start < ns);
}

unsigned blocks_for(size_t n) {
  size_t b = (n + 255) / 256;
  return (unsigned)(b < 65535 ? (b ? b : 1) : 65535);
}

} // namespace

extern "C" const char *kb_fill_cuda(void *p, kb_dtype t, size_t n, double x, void *stream) {
  if (n == 0) return nullptr;
  fill_kernel<<<blocks_for(n), 256, 0, (cudaStream_t)stream>>>(p, t, n, x);
  return launch_error("fill");
}

extern "C" const char *kb_randn_cuda(void *p, kb_dtype t, size_t n, uint64_t seed, void *stream) {
  if (n == 0) return nullptr;
  randn_kernel<<<blocks_for((n + 1) / 2), 256, 0, (cudaStream_t)stream>>>(p, t, n, seed);
  return launch_error("randn");
}

extern "C" const char *kb_convert_cuda(void *dst, kb_dtype dt, const void *src, kb_dtype st,
                                       size_t n, void *stream) {
  if (n == 0) return nullptr;
  if (dt == st) {
    cudaError_t e = cudaMemcpyAsync(dst, src, n * kb_dtype_size(dt), cudaMemcpyDeviceToDevice,
                                    (cudaStream_t)stream);
    if (e == cudaSuccess) return nullptr;
    snprintf(g_err, sizeof g_err, "cudaMemcpyAsync(%zu bytes): %s (%s)", n * kb_dtype_size(dt),
             cudaGetErrorName(e), cudaGetErrorString(e));
    return g_err;
  }
  convert_kernel<<<blocks_for(n), 256, 0, (cudaStream_t)stream>>>(dst, dt, src, st, n);
  return launch_error("convert");
}

extern "C" const char *kb_spin_cuda(uint64_t ns, void *stream) {
  kb_hold_spin<<<1, 1, 0, (cudaStream_t)stream>>>(ns);
  return launch_error("spin");
}
