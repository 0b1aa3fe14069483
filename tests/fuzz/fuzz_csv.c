/* libFuzzer target: arbitrary bytes as a Liger benchmark CSV to the
 * importer (kluabench.liger.parse, then row_to_bundle for every row) and to
 * the RFC 4180 reader, with the checks of oracle.csv (tests/fuzz/oracle.lua).
 * Built and run by `make fuzz` and `make fuzz-run`. */
#include "fuzz_lua.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc;
  (void)argv;
  fuzz_setup("csv");
  return 0;
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size) {
  fuzz_check(data, size);
  return 0;
}
