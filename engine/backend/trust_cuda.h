/* The CUDA side of kb.trust (core/trust.h, trust_cuda.c): the whole
 * device's synchronisation and the persisting-L2 state. Here with the
 * backend, whose flush resets that state after a plugin ran. Declared with
 * CUDA=1 only. */
#ifndef KB_TRUST_CUDA_H
#define KB_TRUST_CUDA_H

#include <stddef.h>

#ifdef KB_WITH_CUDA
/* Set by usercode/plugin.c after every CUDA entry of a plugin: the
 * only route by which a user's host code can change the persisting-L2
 * state between the harness's samples. backend_cuda.c's flush resets that
 * state (kb_trust_cuda_l2_reset) before the next sample when it is set. */
extern volatile int kb_trust_plugin_cuda_ran;
/* cudaDeviceSynchronize: every stream of the context, not only the engine's. */
const char *kb_trust_cuda_device_sync(void);
/* The persisting-L2 set-aside (cudaLimitPersistingL2CacheSize) and the
 * access-policy window of `stream`. *supported = 0 where the device has
 * neither (then the sizes are 0). */
const char *kb_trust_cuda_l2_state(void *stream, size_t *limit, size_t *window_bytes, float *hit_ratio,
                                   int *supported);
/* Persisting lines back to normal (cudaCtxResetPersistingL2Cache), the
 * set-aside to 0 and the stream's window cleared; a device without
 * persisting L2 is not an error. */
const char *kb_trust_cuda_l2_reset(void *stream);
#endif

#endif
