/* The Lua states of the engine: a pooled allocator for small blocks (lua_alloc.c). */
#ifndef KB_LUA_ALLOC_H
#define KB_LUA_ALLOC_H
#include <lua.h>

/* A new state with the engine's allocator and a panic handler; NULL when out of memory. */
lua_State *kb_lua_newstate(void);
/* Closes a state made by kb_lua_newstate and returns its pool. */
void kb_lua_close(lua_State *L);

#endif
