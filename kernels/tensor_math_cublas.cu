// The CUDA twin of matmul (tensor_math.h): cublasGemmStridedBatchedEx on
// the engine's stream. libcublas is opened with dlopen on the first matmul,
// as engine/usercode/nvrtc.c opens NVRTC, so the static binary neither links nor
// needs it; the header only gives the function types.
//
// Row-major C[m, n] = A[m, k] B[k, n] is column-major C^T = B^T A^T, so the
// call passes B first with n and m swapped and no transposes.
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <cublas_api.h>
#include <cuda_runtime.h>
#include "tensor_math.h"

namespace {

constexpr size_t kWorkspaceBytes = 32u << 20; /* what PyTorch gives cuBLAS on Hopper */

/* The C entry point (the header also declares C++ overloads of this name). */
typedef cublasStatus_t (*gemm_fn)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int,
                                  const void *, const void *, cudaDataType, int, long long int,
                                  const void *, cudaDataType, int, long long int, const void *, void *,
                                  cudaDataType, int, long long int, int, cublasComputeType_t,
                                  cublasGemmAlgo_t);

struct Cublas {
  int state = 0; /* 0 not tried, 1 usable, -1 failed */
  char why[768] = "";
  char path[640] = "";
  void *lib = nullptr;
  cublasHandle_t handle = nullptr;
  void *workspace = nullptr;
  decltype(&cublasCreate_v2) create = nullptr;
  decltype(&cublasSetStream_v2) set_stream = nullptr;
  decltype(&cublasSetMathMode) set_math_mode = nullptr;
  decltype(&cublasSetWorkspace_v2) set_workspace = nullptr; /* optional (cuBLAS < 11) */
  decltype(&cublasGetStatusName) status_name = nullptr;     /* optional */
  gemm_fn gemm = nullptr;
};
Cublas g;
thread_local char g_msg[512];

char g_dlerror[256]; /* why the last dlopen failed */

void *try_open(const char *path) {
  void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (h) snprintf(g.path, sizeof g.path, "%s", path);
  else snprintf(g_dlerror, sizeof g_dlerror, "%s", dlerror());
  return h;
}

void *open_cublas() {
  const char *env = getenv("KLUABENCH_CUBLAS");
  if (env && *env) return try_open(env);
  static const char *const names[] = {"libcublas.so", "libcublas.so.13", "libcublas.so.12",
                                      "libcublas.so.11", nullptr};
  void *h = nullptr;
  for (int i = 0; names[i] && !h; i++) h = try_open(names[i]);
  const char *home = getenv("CUDA_HOME");
  char p[600];
  if (!h && home && *home) snprintf(p, sizeof p, "%s/lib64/libcublas.so", home), h = try_open(p);
  if (!h) h = try_open("/usr/local/cuda/lib64/libcublas.so");
  return h;
}

template <typename F> bool bind(F &fn, const char *name, bool optional) {
  fn = reinterpret_cast<F>(dlsym(g.lib, name));
  if (fn || optional) return true;
  snprintf(g.why, sizeof g.why, "%s has no symbol %s (cuBLAS too old?)", g.path, name);
  return false;
}

const char *status_text(cublasStatus_t s) {
  static char num[32];
  if (g.status_name) return g.status_name(s);
  snprintf(num, sizeof num, "cuBLAS status %d", (int)s);
  return num;
}

/* NULL once cuBLAS is loaded and a handle exists, else why not (kept). */
const char *load() {
  if (g.state) return g.state > 0 ? nullptr : g.why;
  g.state = -1;
  g.lib = open_cublas();
  if (!g.lib) {
    const char *env = getenv("KLUABENCH_CUBLAS");
    if (env && *env)
      snprintf(g.why, sizeof g.why, "matmul on cuda needs cuBLAS: KLUABENCH_CUBLAS=%s cannot be opened (%s)", env,
               g_dlerror);
    else
      snprintf(g.why, sizeof g.why,
               "matmul on cuda needs cuBLAS, which was not found (tried libcublas.so[.13|.12|.11] on the library "
               "path, $CUDA_HOME/lib64 and /usr/local/cuda/lib64: %s): install the CUDA toolkit's cuBLAS or set "
               "KLUABENCH_CUBLAS to libcublas.so",
               g_dlerror);
    return g.why;
  }
  if (!bind(g.create, "cublasCreate_v2", false) || !bind(g.set_stream, "cublasSetStream_v2", false) ||
      !bind(g.set_math_mode, "cublasSetMathMode", false) ||
      !bind(g.gemm, "cublasGemmStridedBatchedEx", false) ||
      !bind(g.set_workspace, "cublasSetWorkspace_v2", true) ||
      !bind(g.status_name, "cublasGetStatusName", true))
    return g.why;
  cublasStatus_t s = g.create(&g.handle);
  if (s != CUBLAS_STATUS_SUCCESS) {
    snprintf(g.why, sizeof g.why, "cublasCreate (%s): %s", g.path, status_text(s));
    return g.why;
  }
  s = g.set_math_mode(g.handle, (cublasMath_t)(CUBLAS_DEFAULT_MATH |
                                                CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION));
  if (s != CUBLAS_STATUS_SUCCESS) {
    snprintf(g.why, sizeof g.why, "cublasSetMathMode: %s", status_text(s));
    return g.why;
  }
  if (g.set_workspace) {
    cudaError_t e = cudaMalloc(&g.workspace, kWorkspaceBytes);
    if (e != cudaSuccess) {
      snprintf(g.why, sizeof g.why, "cudaMalloc(%zu bytes) for the cuBLAS workspace: %s (%s)",
               kWorkspaceBytes, cudaGetErrorName(e), cudaGetErrorString(e));
      (void)cudaGetLastError();
      return g.why;
    }
    s = g.set_workspace(g.handle, g.workspace, kWorkspaceBytes);
    if (s != CUBLAS_STATUS_SUCCESS) {
      snprintf(g.why, sizeof g.why, "cublasSetWorkspace: %s", status_text(s));
      return g.why;
    }
  }
  g.state = 1;
  return nullptr;
}

} // namespace

extern "C" const char *kb_math_matmul_cublas(const kb_math_matmul_args *a) {
  if (a->batch == 0 || a->m == 0 || a->n == 0) return nullptr;
  const char *why = load();
  if (why) return why;
  cublasStatus_t s = g.set_stream(g.handle, (cudaStream_t)a->stream);
  if (s != CUBLAS_STATUS_SUCCESS) {
    snprintf(g_msg, sizeof g_msg, "cublasSetStream: %s", status_text(s));
    return g_msg;
  }
  cudaDataType type;
  cublasComputeType_t compute = CUBLAS_COMPUTE_32F;
  switch (a->dtype) {
  case KB_BF16: type = CUDA_R_16BF; break;
  case KB_F16: type = CUDA_R_16F; break;
  case KB_F32: type = CUDA_R_32F; break;
  default: type = CUDA_R_64F, compute = CUBLAS_COMPUTE_64F; break;
  }
  const float one_f = 1.0f, zero_f = 0.0f;
  const double one_d = 1.0, zero_d = 0.0;
  const void *alpha = compute == CUBLAS_COMPUTE_64F ? (const void *)&one_d : (const void *)&one_f;
  const void *beta = compute == CUBLAS_COMPUTE_64F ? (const void *)&zero_d : (const void *)&zero_f;
  const int m = (int)a->m, n = (int)a->n, k = (int)a->k;
  s = g.gemm(g.handle, CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, alpha, a->b, type, n, a->b_batch_stride,
             a->a, type, k, a->a_batch_stride, beta, a->out, type, n, (long long)m * n, (int)a->batch,
             compute, CUBLAS_GEMM_DEFAULT);
  if (s != CUBLAS_STATUS_SUCCESS) {
    snprintf(g_msg, sizeof g_msg, "cublasGemmStridedBatchedEx(%s, batch %d, [%d, %d] x [%d, %d]): %s",
             a->dtype == KB_BF16 ? "bf16" : a->dtype == KB_F16 ? "f16" : a->dtype == KB_F32 ? "f32" : "f64",
             (int)a->batch, m, k, k, n, status_text(s));
    return g_msg;
  }
  return nullptr;
}
