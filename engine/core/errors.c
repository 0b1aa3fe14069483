/* How every binding raises an error the same way: a message from a
 * backend or a check as a Lua error (kb_raise), and the refusal to make a
 * native resource inside a __gc metamethod (kb_check_not_finalizing).
 * General helpers, kept out of the binding of any one type (kb.h declares
 * them), so that graph.c and tensor.c need not require each other. */
#include <lauxlib.h>
#include <lua.h>

#include "kb.h"

int kb_raise(lua_State *L, const char *msg) { return luaL_error(L, "%s", msg); }

/* lua_gc answers -1 to everything while a finalizer runs (Lua 5.4.4+). */
void kb_check_not_finalizing(lua_State *L, const char *what) {
  if (lua_gc(L, LUA_GCISRUNNING) < 0)
    luaL_error(L, "cannot create %s inside a __gc metamethod (its memory might never be released)",
               what);
}
