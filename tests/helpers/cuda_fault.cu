// A Lua C module that poisons the CUDA context when it is loaded: it runs a
// kernel that writes to an illegal address and waits for it, as a buggy
// kernel would. tests/reliability_spec.lua (#gpu) builds it with nvcc,
// require()s it inside a kluabench process and checks that the engine then
// reports the sticky error and refuses to go on (engine/backend/backend_cuda.c,
// g_sticky).
//
// It needs no Lua header: require() calls luaopen_cuda_fault(L), which
// returns no value, so require returns true. Its own copy of the CUDA
// runtime shares the device's primary context with kluabench's, which is
// what makes the fault reach the engine.
#include <cstdio>
#include <cuda_runtime.h>

__global__ void write_to_nowhere(int *p) { *p = 1; }

extern "C" int luaopen_cuda_fault(void *L) {
  (void)L;
  write_to_nowhere<<<1, 1>>>(reinterpret_cast<int *>(0x10));
  cudaError_t e = cudaDeviceSynchronize();
  std::fprintf(stderr, "cuda_fault: the faulting kernel returned %s\n", cudaGetErrorName(e));
  return 0;
}
