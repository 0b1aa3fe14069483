/* The seed key kb.randn mixes into every seed (kb.trust.seed_key sets it;
 * trust.h says why). A file of its own so that tensor.c (kb.randn) and
 * trust.c (kb.trust.seed_key) both call it without calling each other. */
#include "trust.h"

static uint64_t g_seed_key;

uint64_t kb_splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

uint64_t kb_seed_key_get(void) { return g_seed_key; }

void kb_seed_key_set(uint64_t key) { g_seed_key = key; }

uint64_t kb_seed_keyed(uint64_t seed) {
  if (g_seed_key == 0) return seed;
  return kb_splitmix64(seed ^ kb_splitmix64(g_seed_key));
}
