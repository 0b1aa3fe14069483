/* The CUDA side of kb.trust (trust_cuda.h): the whole device's synchronisation
 * and the persisting-L2 state that an access-policy window uses to keep a
 * kernel's data in L2 across the harness's flush. Compiled with CUDA=1 only.
 * Calls refuse once the context is dead, as every backend call does. */
#include <stdio.h>
#include <string.h>
#include <cuda_runtime.h>
#include "cuda_context.h"
#include "trust_cuda.h"

volatile int kb_trust_plugin_cuda_ran;

static const char *fail(const char *what, cudaError_t e) {
  return kb_cuda_external_fail(what, (int)e, cudaGetErrorName(e), cudaGetErrorString(e));
}

/* A device or driver without persisting L2 (before sm_80, or MIG/vGPU
 * setups that refuse it) answers with one of these. */
static int unsupported(cudaError_t e) {
  return e == cudaErrorUnsupportedLimit || e == cudaErrorNotSupported || e == cudaErrorInvalidValue;
}

const char *kb_trust_cuda_device_sync(void) {
  const char *dead = kb_cuda_refuse("cudaDeviceSynchronize");
  if (dead) return dead;
  cudaError_t e = cudaDeviceSynchronize();
  return e == cudaSuccess ? NULL : fail("cudaDeviceSynchronize", e);
}

const char *kb_trust_cuda_l2_state(void *stream, size_t *limit, size_t *window_bytes, float *hit_ratio,
                                   int *supported) {
  *limit = *window_bytes = 0;
  *hit_ratio = 0;
  *supported = 0;
  const char *dead = kb_cuda_refuse("cudaDeviceGetLimit(cudaLimitPersistingL2CacheSize)");
  if (dead) return dead;
  cudaError_t e = cudaDeviceGetLimit(limit, cudaLimitPersistingL2CacheSize);
  if (e != cudaSuccess) {
    if (unsupported(e)) {
      (void)cudaGetLastError();
      return NULL;
    }
    return fail("cudaDeviceGetLimit(cudaLimitPersistingL2CacheSize)", e);
  }
  *supported = 1;
  cudaStreamAttrValue v;
  memset(&v, 0, sizeof v);
  e = cudaStreamGetAttribute((cudaStream_t)stream, cudaStreamAttributeAccessPolicyWindow, &v);
  if (e != cudaSuccess) {
    if (unsupported(e)) {
      (void)cudaGetLastError();
      return NULL;
    }
    return fail("cudaStreamGetAttribute(cudaStreamAttributeAccessPolicyWindow)", e);
  }
  *window_bytes = v.accessPolicyWindow.num_bytes;
  *hit_ratio = v.accessPolicyWindow.hitRatio;
  return NULL;
}

const char *kb_trust_cuda_l2_reset(void *stream) {
  const char *dead = kb_cuda_refuse("cudaCtxResetPersistingL2Cache");
  if (dead) return dead;
  cudaStreamAttrValue v;
  memset(&v, 0, sizeof v); /* num_bytes 0: no window */
  cudaError_t e = cudaStreamSetAttribute((cudaStream_t)stream, cudaStreamAttributeAccessPolicyWindow, &v);
  if (e != cudaSuccess && !unsupported(e)) return fail("cudaStreamSetAttribute(no access-policy window)", e);
  e = cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, 0);
  if (e != cudaSuccess && !unsupported(e)) return fail("cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, 0)", e);
  e = cudaCtxResetPersistingL2Cache();
  if (e != cudaSuccess && !unsupported(e)) return fail("cudaCtxResetPersistingL2Cache", e);
  (void)cudaGetLastError(); /* an unsupported answer above is not the next call's error */
  return NULL;
}
