/* CUDA graphs (kluabench.Graph) and the pinning of what they capture.
 *
 * kb.graph(fn) runs fn while the stream is captured. Every tensor checked
 * (kb_check_tensor) or created (kb_push_tensor) during the capture is noted
 * here: its pin count goes up and the graph keeps it in its user value, so
 * it lives at least as long as the graph, and free() and <close> refuse it
 * while the graph is live (tensor.c). Freeing the graph unpins them. */
#include <string.h>
#include "kb.h"

#define KB_GRAPH_MT "kluabench.Graph"

typedef struct {
  const kb_backend *dev;
  void *exec; /* NULL once freed */
} kb_graph;

/* While capturing, g_capture_ref is a registry reference to a table that
 * collects every tensor checked or created: the graph keeps it as its user
 * value, so those tensors live (and stay pinned) as long as the graph. */
static int g_capture_ref = LUA_NOREF;

void kb_capture_note(lua_State *L, int idx) {
  if (g_capture_ref == LUA_NOREF) return;
  idx = lua_absindex(L, idx);
  lua_rawgeti(L, LUA_REGISTRYINDEX, g_capture_ref);
  lua_pushvalue(L, idx);
  if (lua_rawget(L, -2) == LUA_TNIL) {
    kb_tensor *t = (kb_tensor *)lua_touserdata(L, idx);
    t->pins++;
    lua_pushvalue(L, idx);
    lua_pushboolean(L, 1);
    lua_rawset(L, -4);
  }
  lua_pop(L, 2);
}

int kb_capturing(void) { return g_capture_ref != LUA_NOREF; }

/* Values that are not tensors (a module whose kernel was launched) are kept
 * in the same table, with value false: alive, never pinned. */
void kb_capture_keep(lua_State *L, int idx) {
  if (g_capture_ref == LUA_NOREF) return;
  idx = lua_absindex(L, idx);
  lua_rawgeti(L, LUA_REGISTRYINDEX, g_capture_ref);
  lua_pushvalue(L, idx);
  if (lua_rawget(L, -2) == LUA_TNIL) {
    lua_pushvalue(L, idx);
    lua_pushboolean(L, 0);
    lua_rawset(L, -4);
  }
  lua_pop(L, 2);
}

static kb_graph *check_graph(lua_State *L, int arg) {
  kb_graph *g = (kb_graph *)luaL_checkudata(L, arg, KB_GRAPH_MT);
  if (!g->exec) luaL_argerror(L, arg, "graph has been freed");
  return g;
}

static void unpin_all(lua_State *L, int graph_idx) {
  lua_getiuservalue(L, graph_idx, 1);
  if (lua_istable(L, -1)) {
    lua_pushnil(L);
    while (lua_next(L, -2)) {
      int pinned = lua_toboolean(L, -1);
      lua_pop(L, 1);
      kb_tensor *t = pinned ? (kb_tensor *)lua_touserdata(L, -1) : NULL;
      if (t && t->pins > 0) t->pins--;
    }
  }
  lua_pop(L, 1);
  lua_pushnil(L);
  lua_setiuservalue(L, graph_idx, 1);
}

/*** Captures the device work fn queues into a graph to replay.
 *
 * fn runs once during capture and must only queue device work (no host copies or synchronisation).
 * Tensors it uses stay alive and pinned as long as the graph. Needs the cuda backend: on cpu it
 * raises an error.
 *
 * @signature kb.graph(fn [, device]) -> Graph
 * @section timing
 * @example
 *   local q = kb.randn({1, 2048, 32, 16}, "bf16", 1)
 *   local k = kb.randn({1, 2048, 8, 16}, "bf16", 2)
 *   local f = kb.rope.freqs(2048, 16)
 *   local g = kb.graph(function() kb.rope.llama4_fwd(q, k, f, {inplace = true}) end)
 *   g:replay(10)
 */
/* graph(fn [, device]): runs fn once while capturing the stream and returns
 * a kluabench.Graph to replay. fn must only queue device work (no host
 * copies, no synchronisation: CUDA refuses those during capture). */
static int l_graph(lua_State *L) {
  luaL_checktype(L, 1, LUA_TFUNCTION);
  const kb_backend *dev = kb_check_device(L, 2);
  if (g_capture_ref != LUA_NOREF) return luaL_error(L, "graph: already capturing (graphs do not nest)");
  kb_check_not_finalizing(L, "a graph");
  kb_graph *g = (kb_graph *)lua_newuserdatauv(L, sizeof *g, 1);
  memset(g, 0, sizeof *g);
  luaL_setmetatable(L, KB_GRAPH_MT);
  int gi = lua_gettop(L);
  g->dev = dev;
  lua_newtable(L);
  lua_pushvalue(L, -1);
  lua_setiuservalue(L, gi, 1);
  KB_TRY(L, dev->graph_begin(dev));
  g_capture_ref = luaL_ref(L, LUA_REGISTRYINDEX);
  lua_pushvalue(L, 1);
  int rc = lua_pcall(L, 0, 0, 0);
  luaL_unref(L, LUA_REGISTRYINDEX, g_capture_ref);
  g_capture_ref = LUA_NOREF;
  void *exec = NULL;
  const char *err = dev->graph_end(dev, &exec);
  if (rc != LUA_OK) {
    if (exec) dev->graph_destroy(dev, exec);
    unpin_all(L, gi);
    return lua_error(L); /* the function's own error, untouched */
  }
  if (err) {
    unpin_all(L, gi);
    return kb_raise(L, err);
  }
  g->exec = exec;
  lua_settop(L, gi);
  return 1;
}

/*** Launches the graph n times (default 1).
 *
 * @signature g:replay([n]) -> g
 * @section timing
 * @example
 *   local x = kb.randn({1 << 20}, "f32", 1)
 *   local g = kb.graph(function() x:add_(1) end)
 *   g:replay(100); kb.synchronize()
 */
/* g:replay([n]): launch the graph n times (default 1). */
static int gr_replay(lua_State *L) {
  kb_graph *g = check_graph(L, 1);
  lua_Integer n = luaL_optinteger(L, 2, 1);
  if (n < 1) luaL_argerror(L, 2, "replay count must be >= 1");
  for (lua_Integer i = 0; i < n; i++) KB_TRY(L, g->dev->graph_launch(g->dev, g->exec));
  lua_settop(L, 1);
  return 1;
}

/*** Frees the graph and unpins its tensors; safe twice (also `__gc`, `__close`).
 *
 * @signature g:free()
 * @section timing
 * @example
 *   local x = kb.randn({1 << 20}, "f32", 1)
 *   local g = kb.graph(function() x:add_(1) end)
 *   g:free()
 */
static int gr_free(lua_State *L) {
  kb_graph *g = (kb_graph *)luaL_checkudata(L, 1, KB_GRAPH_MT);
  if (!g->exec) return 0;
  g->dev->graph_destroy(g->dev, g->exec);
  g->exec = NULL;
  unpin_all(L, 1);
  return 0;
}

static int gr_tostring(lua_State *L) {
  kb_graph *g = (kb_graph *)luaL_checkudata(L, 1, KB_GRAPH_MT);
  lua_pushfstring(L, "kluabench.Graph(%s%s)", g->dev->device, g->exec ? "" : ", freed");
  return 1;
}

static const luaL_Reg graph_methods[] = {{"replay", gr_replay}, {"free", gr_free}, {NULL, NULL}};

void kb_open_graph(lua_State *L) {
  kb_new_class(L, KB_GRAPH_MT, graph_methods, gr_free, gr_tostring);
  lua_pushcfunction(L, l_graph);
  lua_setfield(L, -2, "graph");
}
