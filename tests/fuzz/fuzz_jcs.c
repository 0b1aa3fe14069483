/* libFuzzer target: arbitrary bytes as JSON text to the stdlib's reader
 * (json.decode, lua-cjson) and the canonical writer kb.jcs.encode, with the
 * fixed-point checks of oracle.jcs (tests/fuzz/oracle.lua): decode never
 * crashes or raises, and encode(decode(x)) reads back as itself. Built and
 * run by `make fuzz` and `make fuzz-run`. */
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
