/* libFuzzer target: arbitrary bytes as JSON text to kb.jcs.canonicalize,
 * kb.jcs.decode/encode and the stdlib's reader (output.decode), with the
 * round-trip checks of oracle.jcs (tests/fuzz/oracle.lua). Built and run by
 * `make fuzz` and `make fuzz-run`. */
#include "fuzz_lua.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc;
  (void)argv;
  fuzz_setup("jcs");
  return 0;
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size) {
  fuzz_check(data, size);
  return 0;
}
