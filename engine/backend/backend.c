/* Choosing the default backend: auto (cuda when a device is usable, else cpu,
 * silently), or what --backend / KLUABENCH_BACKEND asked for. */
#include <stdio.h>
#include <string.h>
#include "backend.h"

static const kb_backend *g_default;

#ifndef KB_WITH_CUDA
const kb_backend *kb_backend_cuda(int ordinal, const char **why) {
  *why = "this kluabench was built without CUDA (make CUDA=1 with nvcc on PATH)";
  return NULL;
}
#endif

const kb_backend *kb_default_backend(void) {
  if (!g_default) kb_select_backend(NULL, 0);
  return g_default;
}

const char *kb_select_backend(const char *name, int ordinal) {
  static char msg[512];
  const char *why = NULL;
  if (!name || !*name) {
    const kb_backend *cuda = kb_backend_cuda(ordinal, &why);
    g_default = cuda ? cuda : kb_backend_cpu();
    return NULL;
  }
  if (strcmp(name, "cpu") == 0) {
    g_default = kb_backend_cpu();
    return NULL;
  }
  if (strcmp(name, "cuda") == 0) {
    const kb_backend *cuda = kb_backend_cuda(ordinal, &why);
    if (cuda) {
      g_default = cuda;
      return NULL;
    }
    snprintf(msg, sizeof msg, "backend 'cuda' (device %d) is not usable: %s", ordinal, why);
    return msg;
  }
  snprintf(msg, sizeof msg, "unknown backend '%s' (expected 'cpu' or 'cuda')", name);
  return msg;
}
