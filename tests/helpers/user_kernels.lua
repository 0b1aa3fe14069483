-- CUDA source the user-kernel specs compile (tests/usercode_spec.lua and,
-- on the GPU, tests/usercode_gpu_spec.lua).
local M = {}

M.SCALE = [[
extern "C" __global__ void scale(float *y, const float *x, float a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i];
}
template <typename T> __global__ void twice(T *y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = y[i] + y[i];
}
]]

return M
