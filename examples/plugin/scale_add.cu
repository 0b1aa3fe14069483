/* The CUDA entry of the scale_add plugin (scale_add.c has the CPU twin and
 * the registration): queued on the engine's stream, never synchronised. */
#include <stdio.h>
#include <cuda_runtime.h>
#include "kluabench_plugin.h"

extern "C" int scale_add_check(const kb_plugin_arg *a, int n, char *err, size_t errlen);

__global__ void scale_add_kernel(float *out, const float *x, const float *y, float alpha, int64_t n) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
    out[i] = alpha * x[i] + y[i];
}

extern "C" int scale_add_cuda(const kb_plugin_arg *a, int n, void *stream, char *err, size_t errlen) {
  if (scale_add_check(a, n, err, errlen)) return (int)cudaErrorInvalidValue;
  const int64_t numel = a[0].u.tensor.numel;
  if (numel == 0) return 0;
  const int threads = 256;
  int64_t blocks = (numel + threads - 1) / threads;
  if (blocks > 65535 * 16) blocks = 65535 * 16;
  scale_add_kernel<<<(unsigned)blocks, threads, 0, (cudaStream_t)stream>>>(
      (float *)a[0].u.tensor.data, (const float *)a[1].u.tensor.data, (const float *)a[2].u.tensor.data,
      (float)a[3].u.f, numel);
  cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) {
    snprintf(err, errlen, "scale_add_kernel launch: %s", cudaGetErrorString(e));
    return (int)e;
  }
  return 0;
}
