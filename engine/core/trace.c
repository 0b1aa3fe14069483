/* kb.trace: the kernels (and memory copies) that ran on a device, each with
 * its start and end on the device's clock. On cuda the records come from
 * CUPTI (trace_cupti.c), on cpu from the host clock around each of the cpu
 * backend's kernels. Records accumulate in the backends' trace buffer
 * (backend/trace_buffer.c) between kb.trace.start() and kb.trace.collect() /
 * stop(). Policy (which records a measurement sums) lives in
 * stdlib/kluabench/measure/init.lua. */
#include <stdlib.h>
#include <string.h>
#include "kb.h"
#include "../backend/trace.h"

static const kb_backend *tracing; /* the device being traced, or NULL */

static void set_int(lua_State *L, const char *k, lua_Integer v) {
  lua_pushinteger(L, v);
  lua_setfield(L, -2, k);
}

static void push_xyz(lua_State *L, const char *k, const int32_t v[3]) {
  lua_createtable(L, 3, 0);
  for (int i = 0; i < 3; i++) {
    lua_pushinteger(L, v[i]);
    lua_rawseti(L, -2, i + 1);
  }
  lua_setfield(L, -2, k);
}

static int by_start(const void *a, const void *b) {
  const kb_trace_rec *x = a, *y = b;
  return x->start_ns < y->start_ns ? -1 : x->start_ns > y->start_ns;
}

/* Moves the records gathered so far into a Lua list, ordered by start time
 * (CUPTI delivers buffers in completion order). Pushes the list and the
 * number of records lost since the last call. */
static void push_records(lua_State *L) {
  size_t n;
  uint64_t lost;
  kb_trace_rec *mine = kb_trace_take(&n, &lost);
  if (n > 1) qsort(mine, n, sizeof *mine, by_start);
  lua_createtable(L, (int)n, 0);
  for (size_t i = 0; i < n; i++) {
    const kb_trace_rec *r = &mine[i];
    lua_createtable(L, 0, 12);
    lua_pushstring(L, r->name);
    lua_setfield(L, -2, "name");
    lua_pushstring(L, r->kind);
    lua_setfield(L, -2, "kind");
    set_int(L, "start_ns", (lua_Integer)r->start_ns);
    set_int(L, "end_ns", (lua_Integer)r->end_ns);
    set_int(L, "ns", r->end_ns >= r->start_ns ? (lua_Integer)(r->end_ns - r->start_ns) : 0);
    if (strcmp(r->kind, "kernel") == 0) {
      push_xyz(L, "grid", r->grid);
      push_xyz(L, "block", r->block);
    } else {
      set_int(L, "bytes", (lua_Integer)r->bytes);
    }
    set_int(L, "stream", r->stream);
    set_int(L, "correlation", r->correlation);
    lua_pushboolean(L, r->internal);
    lua_setfield(L, -2, "internal");
    lua_rawseti(L, -2, (lua_Integer)i + 1);
  }
  free(mine);
  lua_pushinteger(L, (lua_Integer)lost);
}

/*** Whether the device can be traced (on cuda: whether CUPTI loads), and why not.
 *
 * @signature kb.trace.available([device]) -> true | false, why
 * @section trace
 * @example
 *   local ok, why = kb.trace.available()
 *   if not ok then print(why) end
 */
/* kb.trace.available([device]) -> true | false, why */
static int l_available(lua_State *L) {
  const kb_backend *dev = kb_check_device(L, 1);
  const char *why = dev->trace_available(dev);
  lua_pushboolean(L, why == NULL);
  if (!why) return 1;
  lua_pushstring(L, why);
  return 2;
}

/*** Records every kernel and copy the device runs from now on.
 *
 * An error when tracing is already on, or when the device cannot be traced (the message says why).
 * Records left from an earlier trace are discarded.
 *
 * @signature kb.trace.start([device])
 * @section trace
 * @example
 *   local q = kb.randn({1, 128, 32, 16}, "bf16", 1)
 *   local k = kb.randn({1, 128, 8, 16}, "bf16", 2)
 *   local f = kb.rope.freqs(128, 16)
 *   kb.trace.start()
 *   kb.rope.llama4_fwd(q, k, f)
 *   kb.synchronize()
 *   for _, r in ipairs(kb.trace.stop()) do print(r.name, r.ns) end
 */
/* kb.trace.start([device]): records from now on; a second start while on
 * is an error (one tracer per process, and a nested start would steal the
 * outer one's records). Discards records left from an earlier trace. */
static int l_start(lua_State *L) {
  const kb_backend *dev = kb_check_device(L, 1);
  if (tracing)
    return luaL_error(L, "kb.trace.start: tracing is already on (on %s); call kb.trace.stop() first",
                      tracing->device);
  const char *why = dev->trace_available(dev);
  if (why) return luaL_error(L, "kb.trace.start: cannot trace %s: %s", dev->device, why);
  KB_TRY(L, dev->trace_enable(dev, 1));
  tracing = dev;
  size_t n;
  uint64_t lost;
  free(kb_trace_take(&n, &lost)); /* what an earlier trace left */
  return 0;
}

/*** The records of the work completed so far (synchronise first), oldest first; the buffer is
 * emptied.
 *
 * A record: name (demangled on cuda), kind ("kernel" or "memcpy"), start_ns, end_ns, ns
 * (duration), grid and block ({x, y, z}, kernels), bytes (copies), stream, correlation, internal
 * (true for kluabench's own stream-holding spin kernel). dropped: records the tracer lost since
 * the last call.
 *
 * @signature kb.trace.collect() -> records, dropped
 * @section trace
 * @example
 *   local x = kb.randn({1 << 20}, "f32", 1)
 *   kb.trace.start()
 *   x:add_(1)
 *   kb.synchronize()
 *   local recs, dropped = kb.trace.collect() -- tracing goes on
 *   kb.trace.stop()
 */
/* kb.trace.collect() -> records, dropped: every record of work that has
 * completed (the caller synchronises first), then cleared. */
static int l_collect(lua_State *L) {
  if (!tracing) return luaL_error(L, "kb.trace.collect: tracing is off (call kb.trace.start() first)");
  KB_TRY(L, tracing->trace_flush(tracing));
  push_records(L);
  return 2;
}

/*** Switches tracing off and returns what was not collected yet (an empty list when it was off).
 *
 * @signature kb.trace.stop() -> records, dropped
 * @section trace
 * @example
 *   local recs = kb.trace.stop()
 */
/* kb.trace.stop() -> records, dropped: switches tracing off and returns
 * what was not collected yet. Stopping when off returns an empty list. */
static int l_stop(lua_State *L) {
  if (tracing) {
    const kb_backend *dev = tracing;
    tracing = NULL;
    KB_TRY(L, dev->trace_flush(dev));
    KB_TRY(L, dev->trace_enable(dev, 0));
  }
  push_records(L);
  return 2;
}

/*** The device being traced ("cpu", "cuda:0"), or nil.
 *
 * @signature kb.trace.active() -> device | nil
 * @section trace
 * @example
 *   print(kb.trace.active())
 */
/* kb.trace.active() -> device name being traced, or nil */
static int l_active(lua_State *L) {
  if (!tracing) return 0;
  lua_pushstring(L, tracing->device);
  return 1;
}

void kb_open_trace(lua_State *L) {
  static const luaL_Reg fns[] = {
      {"available", l_available}, {"start", l_start}, {"collect", l_collect},
      {"stop", l_stop},           {"active", l_active}, {NULL, NULL},
  };
  luaL_newlib(L, fns);
  lua_setfield(L, -2, "trace");
}
