/* libFuzzer target: arbitrary bytes as what `kluabench merge` reads, the
 * manifest and a shard file with its samples file (MANIFEST \0 SHARD \0
 * SAMPLES), to shards.parse_manifest, the tolerant reader of shard files
 * (kluabench.record.reader.items) and merge.gather, with the checks of
 * oracle.merge (tests/fuzz/oracle.lua). Built and run by `make fuzz` and
 * `make fuzz-run`. */
#include "fuzz_lua.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc;
  (void)argv;
  fuzz_setup("merge");
  return 0;
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size) {
  fuzz_check(data, size);
  return 0;
}
