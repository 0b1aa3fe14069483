// Kernels for tests/usercode_gpu_spec.lua, built by the Makefile (CUDA=1)
// into build/usercode/test_kernels.{cubin,ptx,fatbin}.
extern "C" __global__ void fill_index(float *out, float scale, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = scale * (float)i;
}

extern "C" __global__ void empty_kernel() {}
