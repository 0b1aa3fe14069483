/* luaopen_kluabench: the C core of the "kluabench" module, assembled from
 * one binding file per type or area. The host registers it as
 * package.preload["kluabench.core"]; stdlib/kluabench/init.lua wraps it. */
#include "kb.h"
#include "nvml.h"
#include "signals.h"
#include "usercode.h"

int luaopen_kluabench(lua_State *L) {
  lua_newtable(L);
  kb_open_device(L);
  kb_open_tensor(L);
  kb_open_timing(L);
  kb_open_rope(L);
  kb_open_digest(L);
  kb_open_jcs(L);
  kb_open_fs(L);
  kb_open_trace(L);
  kb_open_signals(L);
  kb_open_nvml(L);
  kb_open_usercode(L);
  kb_open_compare_elements(L);
  return 1;
}
