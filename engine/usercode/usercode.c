/* kb.cuda, kb.plugin and kb.python: the tables of user code (docs/KERNELS.md),
 * which luaopen_kluabench adds through kb_open_usercode and the binding
 * files fill: signature.c (parse_signature), nvrtc.c (compile), module.c
 * (load, and the Module and Kernel types), plugin.c (kb.plugin), python.c
 * (kb.python: Python functions as providers), and
 * kb.loaded_code (loaded_code.c), the list of what they loaded. Here so that
 * none of those files needs another's opener. */
#include "usercode.h"

void kb_open_usercode(lua_State *L) {
  lua_newtable(L);
  kb_open_signature(L);
  kb_open_nvrtc(L);
  kb_open_module(L);
  lua_setfield(L, -2, "cuda");
  lua_newtable(L);
  kb_open_plugin(L);
  lua_setfield(L, -2, "plugin");
  lua_newtable(L);
  kb_open_python(L);
  lua_setfield(L, -2, "python");
  kb_open_loaded_code(L);
}
