/* Timing primitives: kluabench.Event (a device event, or the host clock on
 * cpu), elapsed time, synchronisation, the L2 flush, the host clock and the
 * stream-holding spin. CUDA graphs are graph.c's. Policy (how many samples,
 * when to flush, which mode) lives in the stdlib's protocols
 * (stdlib/kluabench/measure/: the modes, stopping rules, do_bench). */
#include <string.h>
#include <time.h>
#include "kb.h"

#define KB_EVENT_MT "kluabench.Event"

typedef struct {
  const kb_backend *dev;
  void *ev; /* NULL once destroyed */
  int recorded;
} kb_event;

/* ---- events -------------------------------------------------------------- */

static kb_event *check_event(lua_State *L, int arg) {
  kb_event *e = (kb_event *)luaL_checkudata(L, arg, KB_EVENT_MT);
  if (!e->ev) luaL_argerror(L, arg, "event has been destroyed");
  return e;
}

/*** A new timing event (a CUDA event, or the host clock on cpu).
 *
 * @signature kb.event([device]) -> Event
 * @section timing
 * @example
 *   local x = kb.randn({1 << 20}, "f32", 1)
 *   local e0, e1 = kb.event(), kb.event()
 *   e0:record(); x:add_(1); e1:record()
 *   e1:synchronize()
 *   print(kb.elapsed_ms(e0, e1))
 */
static int l_event(lua_State *L) {
  const kb_backend *dev = kb_check_device(L, 1);
  kb_check_not_finalizing(L, "an event");
  kb_event *e = (kb_event *)lua_newuserdatauv(L, sizeof *e, 0);
  memset(e, 0, sizeof *e);
  luaL_setmetatable(L, KB_EVENT_MT);
  e->dev = dev;
  KB_TRY(L, dev->event_create(dev, &e->ev));
  return 1;
}

/*** Records the event on the stream.
 *
 * @signature ev:record() -> ev
 * @section timing
 * @example
 *   local start = kb.event()
 *   start:record()
 */
static int ev_record(lua_State *L) {
  kb_event *e = check_event(L, 1);
  KB_TRY(L, e->dev->event_record(e->dev, e->ev));
  e->recorded = 1;
  lua_settop(L, 1);
  return 1;
}

/*** Waits until the work before the event has finished.
 *
 * @signature ev:synchronize() -> ev
 * @section timing
 * @example
 *   local stop = kb.event()
 *   stop:record()
 *   stop:synchronize() -- the host waits until the work before the record is done
 */
static int ev_synchronize(lua_State *L) {
  kb_event *e = check_event(L, 1);
  KB_TRY(L, e->dev->event_synchronize(e->dev, e->ev));
  lua_settop(L, 1);
  return 1;
}

/*** Releases the event now (also `__gc` and `__close`); safe twice.
 *
 * @signature ev:destroy()
 * @section timing
 * @example
 *   local e <close> = kb.event()
 */
static int ev_destroy(lua_State *L) {
  kb_event *e = (kb_event *)luaL_checkudata(L, 1, KB_EVENT_MT);
  if (e->ev) e->dev->event_destroy(e->dev, e->ev);
  e->ev = NULL;
  return 0;
}

/*** Milliseconds between two recorded events of one device.
 *
 * Both events must have been recorded; synchronize on stop first.
 *
 * @signature kb.elapsed_ms(start, stop) -> ms
 * @section timing
 * @example
 *   local e0, e1 = kb.event(), kb.event()
 *   e0:record(); kb.empty({1 << 20}):fill_(1); e1:record()
 *   e1:synchronize()
 *   local ms = kb.elapsed_ms(e0, e1)
 */
/* elapsed_ms(start, end): milliseconds between two recorded events. */
static int l_elapsed_ms(lua_State *L) {
  kb_event *a = check_event(L, 1), *b = check_event(L, 2);
  if (!a->recorded) luaL_argerror(L, 1, "event has not been recorded");
  if (!b->recorded) luaL_argerror(L, 2, "event has not been recorded");
  if (a->dev != b->dev)
    luaL_argerror(L, 2, lua_pushfstring(L, "event is on %s, start event on %s", b->dev->device, a->dev->device));
  double ms = 0;
  KB_TRY(L, a->dev->event_elapsed_ms(a->dev, a->ev, b->ev, &ms));
  lua_pushnumber(L, ms);
  return 1;
}

/*** Milliseconds from ev to stop; the method form of kb.elapsed_ms(ev, stop).
 *
 * @signature ev:elapsed_ms(stop) -> ms
 * @section timing
 * @example
 *   local start, stop = kb.event(), kb.event()
 *   start:record(); kb.empty({1 << 20}):fill_(1); stop:record()
 *   stop:synchronize()
 *   print(start:elapsed_ms(stop))
 */
static int ev_elapsed_ms(lua_State *L) { return l_elapsed_ms(L); }

static int ev_tostring(lua_State *L) {
  kb_event *e = (kb_event *)luaL_checkudata(L, 1, KB_EVENT_MT);
  lua_pushfstring(L, "kluabench.Event(%s%s)", e->dev->device,
                  !e->ev ? ", destroyed" : (e->recorded ? ", recorded" : ""));
  return 1;
}

/*** Waits until all queued work on the device has finished.
 *
 * @signature kb.synchronize([device])
 * @section timing
 * @example
 *   kb.synchronize()
 */
/* ---- device-wide --------------------------------------------------------- */

static int l_synchronize(lua_State *L) {
  const kb_backend *dev = kb_check_device(L, 1);
  KB_TRY(L, dev->synchronize(dev));
  return 0;
}

/*** Wall-clock nanoseconds since the Unix epoch, for timestamps (intervals use kb.clock_ns).
 *
 * @signature kb.time_ns() -> integer
 * @section timing
 * @example
 *   print(os.date("!%Y-%m-%dT%H:%M:%SZ", kb.time_ns() // 1000000000))
 */
/* time_ns(): wall-clock nanoseconds since the Unix epoch (for timestamps;
 * intervals use clock_ns). */
static int l_time_ns(lua_State *L) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  lua_pushinteger(L, (lua_Integer)ts.tv_sec * 1000000000 + ts.tv_nsec);
  return 1;
}

/*** The host monotonic clock in nanoseconds.
 *
 * @signature kb.clock_ns() -> integer
 * @section timing
 * @example
 *   local x = kb.randn({1 << 20}, "f32", 1)
 *   local t0 = kb.clock_ns(); x:add_(1); kb.synchronize()
 *   print((kb.clock_ns() - t0) / 1e6, "ms")
 */
static int l_clock_ns(lua_State *L) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  lua_pushinteger(L, (lua_Integer)ts.tv_sec * 1000000000 + ts.tv_nsec);
  return 1;
}

/* One flush buffer per device, allocated on first use and grown when a
 * larger flush is asked for; it lives until the process ends. */
typedef struct {
  const kb_backend *dev;
  void *p;
  size_t bytes, default_bytes;
} flush_buf;

static flush_buf g_flush[4];

/* Twice the L2 (or last-level cache), asked once per device: querying the
 * device costs about a millisecond, far more than the flush itself. */
static size_t default_flush_bytes(lua_State *L, flush_buf *f, const kb_backend *dev) {
  if (f->dev == dev && f->default_bytes) return f->default_bytes;
  kb_device_info info;
  KB_TRY(L, dev->info(dev, &info));
  size_t l2 = info.l2_bytes ? info.l2_bytes : (size_t)32 << 20;
  f->dev = dev;
  f->default_bytes = 2 * l2;
  return f->default_bytes;
}

/*** Overwrites a buffer of twice the L2 (the last-level cache on cpu) so no input stays cached.
 *
 * The buffer is allocated once per device and reused; a larger request grows it. Call it outside
 * the timed region.
 *
 * @signature kb.flush_l2([bytes [, device]]) -> bytes
 * @section timing
 * @example
 *   local x = kb.randn({1 << 20}, "f32", 1)
 *   local start, stop = kb.event(), kb.event()
 *   kb.flush_l2()
 *   start:record(); x:add_(1); stop:record()
 */
/* flush_l2([bytes [, device]]): overwrite `bytes` (default twice the L2, or
 * twice the last-level cache on cpu) so that no input stays cached. Returns
 * the bytes written. */
static int l_flush_l2(lua_State *L) {
  const kb_backend *dev = kb_check_device(L, 2);
  lua_Integer req = luaL_optinteger(L, 1, 0);
  if (req < 0) luaL_argerror(L, 1, "flush size must be >= 0 bytes");
  flush_buf *f = NULL;
  for (int i = 0; i < 4 && !f; i++)
    if (g_flush[i].dev == dev || !g_flush[i].dev) f = &g_flush[i];
  if (!f) return luaL_error(L, "flush_l2: too many devices");
  f->dev = dev;
  size_t bytes = req ? (size_t)req : default_flush_bytes(L, f, dev);
  if (f->bytes < bytes) {
    kb_check_not_finalizing(L, "an L2 flush buffer");
    if (f->p) f->dev->release(f->dev, f->p);
    f->p = NULL;
    f->bytes = 0;
    KB_TRY(L, dev->alloc(dev, &f->p, bytes));
    f->bytes = bytes;
  }
  KB_TRY(L, dev->flush(dev, f->p, bytes));
  lua_pushinteger(L, (lua_Integer)bytes);
  return 1;
}

/* __gc of a sentinel in the registry: the flush buffers go when the Lua
 * state closes, so that nothing the engine allocated outlives lua_close and
 * leak checkers (valgrind, compute-sanitizer --leak-check full) see none. */
static int release_flush_buffers(lua_State *L) {
  for (int i = 0; i < 4; i++) {
    if (g_flush[i].p) g_flush[i].dev->release(g_flush[i].dev, g_flush[i].p);
    g_flush[i].p = NULL;
    g_flush[i].bytes = 0;
  }
  return 0;
}

/*** Queues a kernel that busy-waits about ns nanoseconds on the device.
 *
 * Holds the stream so that the start event and the kernel are queued before the GPU reaches them:
 * launch overhead stays out of the measured time. Does nothing on cpu.
 *
 * @signature kb.spin(ns [, device])
 * @section timing
 * @example
 *   local x = kb.randn({1 << 20}, "f32", 1)
 *   local start, stop = kb.event(), kb.event()
 *   kb.spin(20000); start:record(); x:add_(1); stop:record()
 */
/* spin(ns [, device]): queue a kernel that busy-waits ~ns on the device, so
 * that work queued behind it is enqueued before the GPU reaches it. */
static int l_spin(lua_State *L) {
  lua_Integer ns = luaL_checkinteger(L, 1);
  if (ns < 0) luaL_argerror(L, 1, "spin time must be >= 0 ns");
  const kb_backend *dev = kb_check_device(L, 2);
  KB_TRY(L, dev->spin(dev, (uint64_t)ns));
  return 0;
}

static const luaL_Reg event_methods[] = {{"record", ev_record},
                                         {"synchronize", ev_synchronize},
                                         {"elapsed_ms", ev_elapsed_ms},
                                         {"destroy", ev_destroy},
                                         {NULL, NULL}};

static const luaL_Reg functions[] = {{"event", l_event},       {"elapsed_ms", l_elapsed_ms},
                                     {"synchronize", l_synchronize}, {"clock_ns", l_clock_ns},
                                     {"time_ns", l_time_ns},
                                     {"flush_l2", l_flush_l2}, {"spin", l_spin},
                                     {NULL, NULL}};

void kb_open_timing(lua_State *L) {
  kb_new_class(L, KB_EVENT_MT, event_methods, ev_destroy, ev_tostring);
  lua_newuserdatauv(L, 0, 0);
  lua_createtable(L, 0, 1);
  lua_pushcfunction(L, release_flush_buffers);
  lua_setfield(L, -2, "__gc");
  lua_setmetatable(L, -2);
  lua_setfield(L, LUA_REGISTRYINDEX, "kluabench.flush_buffers");
  luaL_setfuncs(L, functions, 0);
}
