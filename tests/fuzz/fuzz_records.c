/* libFuzzer target: arbitrary bytes as a file of record bundles to the one
 * reader of record files (kluabench.record.reader: items, parse, the strict
 * checks compare needs) and to what compare and plot do with what it
 * accepts, with the checks of oracle.records (tests/fuzz/oracle.lua).
 * Built and run by `make fuzz` and `make fuzz-run`. */
#include "fuzz_lua.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc;
  (void)argv;
  fuzz_setup("records");
  return 0;
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size) {
  fuzz_check(data, size);
  return 0;
}
