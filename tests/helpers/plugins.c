/* Broken plugins for tests/plugin_spec.lua, one per PLUGIN_VARIANT:
 * 1 built for another ABI version, 2 a kernel with a bad signature,
 * 3 no kluabench_plugin symbol at all, 4 a CPU entry that fails. */
#include <stdio.h>
#include "kluabench_plugin.h"

static int fail_cpu(const kb_plugin_arg *a, int n, void *stream, char *err, size_t errlen) {
  (void)a, (void)n, (void)stream;
  snprintf(err, errlen, "this entry always fails");
  return 1;
}

#if PLUGIN_VARIANT == 3
int not_a_plugin(void) { return 3; }
#else
static const kb_plugin_kernel kernels[] = {
#if PLUGIN_VARIANT == 2
    {"bad", "tensor, float3", NULL, fail_cpu, NULL},
#else
    {"fails", "tensor, i64", NULL, fail_cpu, "always fails"},
#endif
};
static const kb_plugin plugin = {PLUGIN_VARIANT == 1 ? KB_PLUGIN_ABI_VERSION + 1 : KB_PLUGIN_ABI_VERSION,
                                 "broken", "0", 1, kernels};
const kb_plugin *kluabench_plugin(void) { return &plugin; }
#endif
