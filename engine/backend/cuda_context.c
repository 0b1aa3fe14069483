/* The CUDA context's health (cuda_context.h): the first error that
 * poisoned it, remembered for the process, and the messages of failed
 * calls. Shared by every file that calls CUDA, below all of them: the
 * backend (backend_cuda.c), kb.trust's CUDA side (trust_cuda.c), and user
 * kernels (usercode/module.c, usercode/plugin.c). */
#include <stdio.h>
#include "cuda_context.h"

#ifdef KB_WITH_CUDA
#include <cuda_runtime.h>

static char cu_err[512];

/* g_sticky: the first error that poisoned the CUDA context, else cudaSuccess.
 *
 * CUDA errors come in two kinds. Most concern one call (a cudaMalloc larger
 * than the free memory, an invalid argument): cudaGetLastError() clears them
 * and the next call works. kb_cuda_fail clears them, which is why an
 * allocation larger than the device is a Lua error naming the size after
 * which the engine keeps working. A kernel that faults (illegal or
 * misaligned address, trap, device assert, ...) instead corrupts the
 * context: every later runtime call in the process returns that error,
 * nothing clears it, and only a new process recovers. Kernels run
 * asynchronously, so the fault usually surfaces in a later, unrelated call
 * (the next synchronising copy, event or launch check); is_sticky() goes by
 * the error code, not by the call that reported it.
 *
 * g_sticky is set by the first call that sees such an error and never
 * cleared. From then on every call is refused before it is made
 * (kb_cuda_refuse: the backend's CU() and KERNEL(), kb.trust's CUDA calls,
 * module and plugin launches), with "<call>: <error name> (<text>); the
 * CUDA context is unusable, kluabench cannot continue". The Lua error ends a script (exit status 1)
 * unless the script catches it, and a caught one comes back on every later
 * device call, so no number is ever timed or printed from a broken context.
 * Releases (cu_release, from free() and __gc) ignore failures, as they must.
 * tests/reliability_spec.lua (#gpu) provokes a fault from a helper library
 * (tests/helpers/cuda_fault.cu) and checks this. */
static cudaError_t g_sticky = cudaSuccess;

#define KB_STICKY_TAIL "; the CUDA context is unusable, kluabench cannot continue"

static int is_sticky(cudaError_t e) {
  switch (e) {
  case cudaErrorIllegalAddress:
  case cudaErrorLaunchFailure:
  case cudaErrorHardwareStackError:
  case cudaErrorIllegalInstruction:
  case cudaErrorMisalignedAddress:
  case cudaErrorInvalidAddressSpace:
  case cudaErrorInvalidPc:
  case cudaErrorAssert:
  case cudaErrorLaunchTimeout:
  case cudaErrorECCUncorrectable:
    return 1;
  default:
    return 0;
  }
}

/* Format "what: cudaErrorX (text)"; clears a non-sticky error so that the
 * next call starts clean, and marks the context dead on a sticky one. */
const char *kb_cuda_fail(const char *what, int code) {
  cudaError_t e = (cudaError_t)code;
  if (is_sticky(e) && g_sticky == cudaSuccess) g_sticky = e;
  else if (!is_sticky(e)) (void)cudaGetLastError();
  snprintf(cu_err, sizeof cu_err, "%s: %s (%s)%s", what, cudaGetErrorName(e),
           cudaGetErrorString(e), g_sticky != cudaSuccess ? KB_STICKY_TAIL : "");
  return cu_err;
}

/* A kernel wrapper's message: mark the context when the launch poisoned it,
 * and say so. */
const char *kb_cuda_kernel_fail(const char *msg) {
  if (msg) {
    cudaError_t e = cudaPeekAtLastError();
    if (is_sticky(e) && g_sticky == cudaSuccess) g_sticky = e;
    if (g_sticky != cudaSuccess) {
      snprintf(cu_err, sizeof cu_err, "%s%s", msg, KB_STICKY_TAIL);
      return cu_err;
    }
  }
  return msg;
}

const char *kb_cuda_refuse(const char *what) {
  return g_sticky != cudaSuccess ? kb_cuda_fail(what, (int)g_sticky) : NULL;
}

/* The driver API's CUresult and the runtime's cudaError_t agree on the
 * codes is_sticky() lists (700, 702, 710, 714-719, 214). */
const char *kb_cuda_external_fail(const char *what, int code, const char *name, const char *text) {
  cudaError_t e = (cudaError_t)code;
  if (is_sticky(e) && g_sticky == cudaSuccess) g_sticky = e;
  snprintf(cu_err, sizeof cu_err, "%s: %s (%s)%s", what, name ? name : cudaGetErrorName(e),
           text ? text : cudaGetErrorString(e), g_sticky != cudaSuccess ? KB_STICKY_TAIL : "");
  return cu_err;
}

#else

/* Without CUDA no user kernel reaches a GPU: nothing can poison a context. */
const char *kb_cuda_refuse(const char *what) { return NULL; }

const char *kb_cuda_external_fail(const char *what, int code, const char *name, const char *text) {
  static char msg[512];
  snprintf(msg, sizeof msg, "%s: %s (%s)", what, name ? name : "error", text ? text : "no CUDA");
  (void)code;
  return msg;
}
#endif
