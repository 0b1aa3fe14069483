/* kb.trust: what the harness needs to catch a kernel that games the timer
 * (docs/TRUST.md): the seed key mixed into kb.randn, a census of the
 * process's threads, guard bytes around tensors, a synchronisation of the
 * whole device and the persisting-L2 state (the CUDA calls of those two:
 * backend/trust_cuda.h). Policy (when to look, what
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

#endif
