/* libFuzzer target: arbitrary bytes as a records file and, after a NUL, its samples file, to the
 * history's add path (`kluabench history add`: history_point.read, then
 * history.store.add_bundles into an in-memory SQLite database), with the checks of
 * oracle.history (tests/fuzz/oracle.lua): nothing verify refuses is added, adding again adds
 * nothing.
 * Built and run by `make fuzz` and `make fuzz-run`. */
#include "fuzz_lua.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc;
  (void)argv;
  fuzz_setup("history");
  return 0;
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size) {
  fuzz_check(data, size);
  return 0;
}
