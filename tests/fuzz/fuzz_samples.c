/* libFuzzer target: arbitrary bytes as a records file and, after a NUL, the samples file beside it, to the
 * record reader as `kluabench verify` runs it (kluabench.record.reader, the samples index of
 * kluabench.record.evidence, verify.problems and the run's claims), with the checks of
 * oracle.samples (tests/fuzz/oracle.lua): a differential check of the index against a plain
 * reading of the samples text.
 * Built and run by `make fuzz` and `make fuzz-run`. */
#include "fuzz_lua.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc;
  (void)argv;
  fuzz_setup("samples");
  return 0;
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size) {
  fuzz_check(data, size);
  return 0;
}
