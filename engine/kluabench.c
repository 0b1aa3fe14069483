/* luaopen_kluabench: the C core of the "kluabench" module, assembled from
 * one binding file per type or area. The host registers it as
 * package.preload["kluabench.core"]; stdlib/kluabench/init.lua wraps it. */
#include "kb.h"
#include "nvml.h"
#include "signals.h"

/* The built-in kernel families, one line each: engine/X.c binds
 * kernels/X.h and defines kb_open_X. Adding a kernel adds its line here and
 * touches no other engine file (docs/ADDING_A_KERNEL.md). */
#define KB_KERNEL_BINDINGS(X) X(rope)

#define KB_DECLARE_OPEN(name) void kb_open_##name(lua_State *L);
#define KB_CALL_OPEN(name) kb_open_##name(L);
KB_KERNEL_BINDINGS(KB_DECLARE_OPEN)

int luaopen_kluabench(lua_State *L) {
  lua_newtable(L);
  kb_open_device(L);
  kb_open_tensor(L);
  kb_open_timing(L);
  KB_KERNEL_BINDINGS(KB_CALL_OPEN)
  kb_open_digest(L);
  kb_open_jcs(L);
  kb_open_fs(L);
  kb_open_trace(L);
  kb_open_signals(L);
  kb_open_nvml(L);
  return 1;
}
