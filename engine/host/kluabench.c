/* luaopen_kluabench: the C core of the "kluabench" module, assembled from
 * one binding file per type or area, of every role folder (core/, os/,
 * usercode/, and signals.c here). The host registers it as
 * package.preload["kluabench.core"]; stdlib/kluabench/init.lua wraps it.
 * It sits with the host, above every folder it assembles, so that the role
 * folders call one way only: host/ > usercode/ > os/ > core/ > backend/. */
#include "../core/kb.h"
#include "../core/trust.h"
#include "../os/nvml.h"
#include "../usercode/usercode.h"
#include "signals.h"

/* The built-in kernel families, one line each: engine/core/X.c binds
 * kernels/X.h and defines kb_open_X. Adding a kernel adds its line here and
 * touches no other engine file (docs/ADDING_A_KERNEL.md). */
#define KB_KERNEL_BINDINGS(X) X(rope)

#define KB_DECLARE_OPEN(name) void kb_open_##name(lua_State *L);
#define KB_CALL_OPEN(name) kb_open_##name(L);
#define KB_NAME(name) #name,
KB_KERNEL_BINDINGS(KB_DECLARE_OPEN)

/*** The built-in kernel families of this binary ("rope"), each a table kb.<family>.
 *
 * @signature kb.builtin_kernels() -> {family, ...}
 * @section device
 * @example
 *   for _, f in ipairs(kb.builtin_kernels()) do print(f) end
 */
/* kb.builtin_kernels() -> {"rope", ...}: the families above, in order.
 * stdlib/kluabench/kernels/init.lua loads kluabench.kernels.<family> for
 * each (its title, cost model and sources for records). */
static int l_builtin_kernels(lua_State *L) {
  static const char *const names[] = {KB_KERNEL_BINDINGS(KB_NAME) NULL};
  lua_createtable(L, (int)(sizeof names / sizeof names[0]) - 1, 0);
  for (int i = 0; names[i]; i++) {
    lua_pushstring(L, names[i]);
    lua_rawseti(L, -2, i + 1);
  }
  return 1;
}

int luaopen_kluabench(lua_State *L) {
  lua_newtable(L);
  kb_open_device(L);
  kb_open_tensor(L);
  kb_open_tensor_math(L);
  kb_open_timing(L);
  kb_open_graph(L);
  KB_KERNEL_BINDINGS(KB_CALL_OPEN)
  lua_pushcfunction(L, l_builtin_kernels);
  lua_setfield(L, -2, "builtin_kernels");
  kb_open_digest(L);
  kb_open_jcs(L);
  kb_open_tensor_io(L); /* after jcs: it keeps kb.jcs.encode and decode */
  kb_open_fs(L);
  kb_open_trace(L);
  kb_open_trust(L);
  kb_open_signals(L);
  kb_open_nvml(L);
  kb_open_process(L);
  kb_open_usercode(L);
  kb_open_compare_elements(L);
  kb_open_sqlite(L);
  kb_open_pq(L);
  kb_open_memstats(L);
  return 1;
}
