/* Broken plugins for tests/plugin_spec.lua and tests/adversarial_engine_spec.lua,
 * one per PLUGIN_VARIANT:
 * 1 built for another ABI version, 2 a kernel with a bad signature,
 * 3 no kluabench_plugin symbol at all, 4 a CPU entry that fails,
 * 5 entries whose messages misbehave (no terminating NUL; escape and
 *   carriage-return bytes), the same C functions as CUDA and CPU entries
 *   (they touch no argument, and 1 is cudaErrorInvalidValue, which leaves
 *   the context usable), 6 a kernel of 33 parameters (one more than a
 *   plugin kernel may take). */
#include <stdio.h>
#include <string.h>
#include "kluabench_plugin.h"

static int fail_cpu(const kb_plugin_arg *a, int n, void *stream, char *err, size_t errlen) {
  (void)a, (void)n, (void)stream;
  snprintf(err, errlen, "this entry always fails");
  return 1;
}

/* Fills all of err, leaving no NUL: the engine must not read past it. */
static int unterminated_cpu(const kb_plugin_arg *a, int n, void *stream, char *err, size_t errlen) {
  (void)a, (void)n, (void)stream;
  memset(err, 'A', errlen);
  return 1;
}

/* A message that would clear the terminal and overwrite the line if printed raw. */
static int control_cpu(const kb_plugin_arg *a, int n, void *stream, char *err, size_t errlen) {
  (void)a, (void)n, (void)stream;
  snprintf(err, errlen, "bad\033[2J\rthing\xff");
  return 1;
}

#if PLUGIN_VARIANT == 3
int not_a_plugin(void) { return 3; }
#else
#define T8 "tensor, tensor, tensor, tensor, tensor, tensor, tensor, tensor, "
static const kb_plugin_kernel kernels[] = {
#if PLUGIN_VARIANT == 2
    {"bad", "tensor, float3", NULL, fail_cpu, NULL},
#elif PLUGIN_VARIANT == 5
    {"unterminated", "tensor", unterminated_cpu, unterminated_cpu, NULL},
    {"control", "tensor", control_cpu, control_cpu, NULL},
#elif PLUGIN_VARIANT == 6
    {"wide", T8 T8 T8 T8 "tensor", NULL, fail_cpu, NULL},
#else
    {"fails", "tensor, i64", NULL, fail_cpu, "always fails"},
#endif
};
static const kb_plugin plugin = {PLUGIN_VARIANT == 1 ? KB_PLUGIN_ABI_VERSION + 1 : KB_PLUGIN_ABI_VERSION,
                                 "broken", "0", (int)(sizeof kernels / sizeof kernels[0]), kernels};
const kb_plugin *kluabench_plugin(void) { return &plugin; }
#endif
