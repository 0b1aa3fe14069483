/* kb.trust: the engine's part in catching a kernel that games the timer
 * (trust.h, docs/TRUST.md). Every function here observes or resets state;
 * stdlib/kluabench/trust/ decides when to call them and what a finding
 * means.
 *
 *   kb.trust.seed_key([key]) -> previous key     kb.randn's seeds mixed with key (0: off)
 *   kb.trust.threads() -> {{tid, name, state, run_ns}}, own tid
 *   kb.trust.arm(t) -> t                         a pattern in t's guard bytes
 *   kb.trust.guard_check(t) -> true | false, why whether a kernel wrote them
 *   kb.trust.device_synchronize([device])        every stream, not only the engine's
 *   kb.trust.l2_state([device]) -> {supported, persisting_limit, window_bytes, hit_ratio}
 *   kb.trust.l2_reset([device])                  persisting lines, set-aside and window off */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/syscall.h>
#include "trust.h"
#include "../backend/trust_cuda.h"

/* ---- the seed key --------------------------------------------------------- */

/*** Sets (with an integer) or reads the key kb.randn mixes into every seed; 0, the default, is none.
 *
 * With key 0, kb.randn gives the documented values; with another key, kb.randn(shape, dtype, seed)
 * gives the same values for the same seed and key, and others for another key. kluabench.suite
 * sets a key drawn at run time for the whole run (records carry it).
 *
 * @signature kb.trust.seed_key([key]) -> previous key
 * @section trust
 * @example
 *   local before = kb.trust.seed_key(42)
 *   local x = kb.randn({4}, "f32", 1, "cpu")
 *   kb.trust.seed_key(before)
 */
/* kb.trust.seed_key([key]) -> the key before the call */
static int l_seed_key(lua_State *L) {
  lua_Integer before = (lua_Integer)kb_seed_key_get();
  if (!lua_isnoneornil(L, 1)) {
    int ok;
    lua_Integer k = lua_tointegerx(L, 1, &ok);
    if (!ok) return luaL_argerror(L, 1, lua_pushfstring(L, "seed key must be an integer, got %s", luaL_typename(L, 1)));
    kb_seed_key_set((uint64_t)k);
  }
  lua_pushinteger(L, before);
  return 1;
}

/* ---- the thread census ---------------------------------------------------- */

/* One task of /proc/self/task: its name and state from stat (the name sits
 * in parentheses and may hold any byte, so the state is read after the last
 * ')'), its time on a CPU in ns from schedstat (-1 where the kernel has no
 * schedstat). Returns 0 when the task vanished meanwhile. */
static int read_task(long tid, char name[64], char *state, long long *run_ns) {
  char path[96], buf[512];
  snprintf(path, sizeof path, "/proc/self/task/%ld/stat", tid);
  FILE *f = fopen(path, "r");
  if (!f) return 0;
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = '\0';
  char *open = strchr(buf, '('), *close = strrchr(buf, ')');
  if (!open || !close || close < open || close[1] != ' ') return 0;
  size_t len = (size_t)(close - open - 1);
  if (len > 63) len = 63;
  memcpy(name, open + 1, len);
  name[len] = '\0';
  *state = close[2];
  *run_ns = -1;
  snprintf(path, sizeof path, "/proc/self/task/%ld/schedstat", tid);
  f = fopen(path, "r");
  if (f) {
    long long ns;
    if (fscanf(f, "%lld", &ns) == 1) *run_ns = ns;
    fclose(f);
  }
  return 1;
}

/*** The threads of the process from /proc/self/task: id, name, state and time on a CPU (ns).
 *
 * run_ns is read from schedstat and left out where the kernel has none. The second result is the
 * calling thread's id.
 *
 * @signature kb.trust.threads() -> {{tid, name, state, run_ns}}, own tid | nil, why
 * @section trust
 * @example
 *   local list, me = kb.trust.threads()
 *   print(#list, me)
 */
/* kb.trust.threads() -> {{tid, name, state, run_ns}}, tid of the caller */
static int l_threads(lua_State *L) {
  DIR *d = opendir("/proc/self/task");
  if (!d) {
    lua_pushnil(L);
    lua_pushstring(L, "kb.trust.threads: cannot read /proc/self/task (no procfs?)");
    return 2;
  }
  lua_newtable(L);
  int i = 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    char name[64], state;
    long long run_ns;
    long tid = strtol(e->d_name, NULL, 10);
    if (!read_task(tid, name, &state, &run_ns)) continue;
    lua_createtable(L, 0, 4);
    lua_pushinteger(L, tid);
    lua_setfield(L, -2, "tid");
    lua_pushstring(L, name);
    lua_setfield(L, -2, "name");
    lua_pushlstring(L, &state, 1);
    lua_setfield(L, -2, "state");
    if (run_ns >= 0) {
      lua_pushinteger(L, run_ns);
      lua_setfield(L, -2, "run_ns");
    }
    lua_rawseti(L, -2, ++i);
  }
  closedir(d);
  lua_pushinteger(L, (lua_Integer)syscall(SYS_gettid));
  return 2;
}

/* ---- guard bytes ------------------------------------------------------------ */

static unsigned char g_pattern[KB_GUARD_BYTES];
static int g_pattern_ready;

/* One pattern per process, not a constant a kernel could write back. */
static void init_pattern(void) {
  if (g_pattern_ready) return;
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  uint64_t x = kb_splitmix64((uint64_t)ts.tv_nsec ^ ((uint64_t)getpid() << 32) ^ (uint64_t)(uintptr_t)&ts);
  for (size_t i = 0; i < KB_GUARD_BYTES; i += 8) {
    x = kb_splitmix64(x);
    memcpy(g_pattern + i, &x, 8);
  }
  g_pattern_ready = 1;
}

/*** Writes a pattern into the guard bytes before and after t (every allocation has them).
 *
 * kb.trust.guard_bytes on each side; the pattern is drawn once per process. A tensor whose storage
 * another library owns (one a Python function returned, kb.python) has no guard bytes: nothing is
 * written around it, and guard_check finds nothing to compare.
 *
 * @signature kb.trust.arm(t) -> t
 * @section trust
 * @example
 *   local t = kb.empty({256}, "f32")
 *   kb.trust.arm(t)
 */
/* kb.trust.arm(t) -> t: the pattern in the guard bytes before and after t */
static int l_arm(lua_State *L) {
  kb_tensor *t = kb_check_tensor(L, 1);
  init_pattern();
  lua_settop(L, 1);
  if (t->owner_release) return 1; /* bytes around it are the other library's */
  char *p = t->data;
  KB_TRY(L, t->dev->from_host(t->dev, p - KB_GUARD_BYTES, g_pattern, KB_GUARD_BYTES));
  KB_TRY(L, t->dev->from_host(t->dev, p + kb_tensor_nbytes(t), g_pattern, KB_GUARD_BYTES));
  t->guarded = 1;
  return 1;
}

/* Counts the bytes of got that differ from the pattern; *first gets the
 * index of the first (in the direction away from the tensor). */
static int changed(const unsigned char *got, int after, int *first) {
  int n = 0;
  *first = -1;
  for (int k = 0; k < KB_GUARD_BYTES; k++) {
    int i = after ? k : KB_GUARD_BYTES - 1 - k; /* k bytes away from the tensor */
    if (got[i] != g_pattern[i]) {
      if (*first < 0) *first = k;
      n++;
    }
  }
  return n;
}

/*** Whether the guard bytes around t still hold the pattern kb.trust.arm wrote.
 *
 * why says how many bytes after the end or before the start were written and the first one. An
 * error when t (or any tensor) was never armed.
 *
 * @signature kb.trust.guard_check(t) -> true | false, why
 * @section trust
 * @example
 *   local t = kb.empty({256}, "f32")
 *   kb.trust.arm(t)
 *   print(kb.trust.guard_check(t)) --> true
 */
/* kb.trust.guard_check(t) -> true | false, why */
static int l_guard_check(lua_State *L) {
  kb_tensor *t = kb_check_tensor(L, 1);
  if (!g_pattern_ready) return luaL_error(L, "kb.trust.guard_check: no tensor was armed (call kb.trust.arm(t) first)");
  if (t->owner_release) { /* no guard bytes: storage another library owns (kb.trust.arm wrote none) */
    lua_pushboolean(L, 1);
    return 1;
  }
  /* the guard bytes of a tensor never armed were never written: nothing to compare */
  if (!t->guarded) return luaL_argerror(L, 1, "the tensor was never armed (call kb.trust.arm(t) first)");
  unsigned char before[KB_GUARD_BYTES], after[KB_GUARD_BYTES];
  char *p = t->data;
  KB_TRY(L, t->dev->to_host(t->dev, before, p - KB_GUARD_BYTES, KB_GUARD_BYTES));
  KB_TRY(L, t->dev->to_host(t->dev, after, p + kb_tensor_nbytes(t), KB_GUARD_BYTES));
  int fb, fa;
  int nb = changed(before, 0, &fb), na = changed(after, 1, &fa);
  if (nb == 0 && na == 0) {
    lua_pushboolean(L, 1);
    return 1;
  }
  luaL_Buffer b;
  luaL_buffinit(L, &b);
  if (na) {
    lua_pushfstring(L, "%d of the %d bytes after its end were written (the first at byte %d past the end)", na,
                    KB_GUARD_BYTES, fa);
    luaL_addvalue(&b);
  }
  if (nb) {
    if (na) luaL_addstring(&b, "; ");
    lua_pushfstring(L, "%d of the %d bytes before its start were written (the first at byte %d before it)", nb,
                    KB_GUARD_BYTES, fb + 1);
    luaL_addvalue(&b);
  }
  luaL_pushresult(&b);
  lua_pushboolean(L, 0);
  lua_insert(L, -2);
  return 2;
}

/* ---- the device ---------------------------------------------------------------- */

/*** Waits for every stream of the device (cudaDeviceSynchronize), not only the engine's; on cpu nothing.
 *
 * @signature kb.trust.device_synchronize([device])
 * @section trust
 * @example
 *   kb.trust.device_synchronize()
 */
/* kb.trust.device_synchronize([device]): on cuda every stream of the
 * context (work a plugin queued on a stream of its own included); on cpu,
 * whose kernels run to completion, nothing. */
static int l_device_synchronize(lua_State *L) {
  const kb_backend *dev = kb_check_device(L, 1);
#ifdef KB_WITH_CUDA
  if (kb_on_cuda(dev)) KB_TRY(L, kb_trust_cuda_device_sync());
#else
  (void)dev;
#endif
  return 0;
}

/*** The persisting-L2 set-aside and the access-policy window of the engine's stream.
 *
 * supported is false on cpu and where the device has no persisting L2.
 *
 * @signature kb.trust.l2_state([device]) -> {supported, persisting_limit, window_bytes, hit_ratio}
 * @section trust
 * @example
 *   print(kb.trust.l2_state().supported)
 */
/* kb.trust.l2_state([device]) -> {supported, persisting_limit, window_bytes, hit_ratio} */
static int l_l2_state(lua_State *L) {
  const kb_backend *dev = kb_check_device(L, 1);
  size_t limit = 0, window = 0;
  float hit = 0;
  int supported = 0;
#ifdef KB_WITH_CUDA
  if (kb_on_cuda(dev)) KB_TRY(L, kb_trust_cuda_l2_state(dev->stream, &limit, &window, &hit, &supported));
#else
  (void)dev;
#endif
  lua_createtable(L, 0, 4);
  lua_pushboolean(L, supported);
  lua_setfield(L, -2, "supported");
  lua_pushinteger(L, (lua_Integer)limit);
  lua_setfield(L, -2, "persisting_limit");
  lua_pushinteger(L, (lua_Integer)window);
  lua_setfield(L, -2, "window_bytes");
  lua_pushnumber(L, hit);
  lua_setfield(L, -2, "hit_ratio");
  return 1;
}

/*** Persisting L2 lines back to normal, the set-aside to 0 and the engine stream's window cleared.
 *
 * @signature kb.trust.l2_reset([device])
 * @section trust
 * @example
 *   kb.trust.l2_reset()
 */
/* kb.trust.l2_reset([device]) */
static int l_l2_reset(lua_State *L) {
  const kb_backend *dev = kb_check_device(L, 1);
#ifdef KB_WITH_CUDA
  if (kb_on_cuda(dev)) KB_TRY(L, kb_trust_cuda_l2_reset(dev->stream));
#else
  (void)dev;
#endif
  return 0;
}

/*** The guard bytes on each side of every allocation.
 *
 * @signature kb.trust.guard_bytes -> 256
 * @section trust
 * @kind value
 * @example
 *   print(kb.trust.guard_bytes)
 */
void kb_open_trust(lua_State *L) {
  static const luaL_Reg fns[] = {
      {"seed_key", l_seed_key},
      {"threads", l_threads},
      {"arm", l_arm},
      {"guard_check", l_guard_check},
      {"device_synchronize", l_device_synchronize},
      {"l2_state", l_l2_state},
      {"l2_reset", l_l2_reset},
      {NULL, NULL},
  };
  luaL_newlib(L, fns);
  lua_pushinteger(L, KB_GUARD_BYTES);
  lua_setfield(L, -2, "guard_bytes");
  lua_setfield(L, -2, "trust");
}
