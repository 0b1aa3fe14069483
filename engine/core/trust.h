/* kb.trust: what the harness needs to catch a kernel that games the timer
 * (docs/TRUST.md): the seed key mixed into kb.randn, a census of the
 * process's threads, guard bytes around tensors, a synchronisation of the
 * whole device and the persisting-L2 state. Policy (when to look, what
 * counts as a violation) lives in stdlib/kluabench/trust/. */
#ifndef KB_TRUST_H
#define KB_TRUST_H

#include <stddef.h>
#include <stdint.h>
#include "kb.h"

/* The seed kb.randn passes to the backend: seed itself while the key is 0
 * (kb.randn's values as documented), else a mix of seed and the key that
 * kb.trust.seed_key set, so that inputs cannot be predicted from the seeds a
 * script writes. */
uint64_t kb_seed_keyed(uint64_t seed);
/* The key itself (engine/core/seed_key.c): 0 is none. */
uint64_t kb_seed_key_get(void);
void kb_seed_key_set(uint64_t key);
/* SplitMix64's output function (Steele, Lea, Flood 2014): the mix of the keys and of the guard pattern. */
uint64_t kb_splitmix64(uint64_t x);

void kb_open_trust(lua_State *L);

#ifdef KB_WITH_CUDA
/* trust_cuda.c. Set by plugin.c after every CUDA entry of a plugin: the
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
