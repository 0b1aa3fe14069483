/* kb.nvml: clocks, temperature, power and throttle reasons of a GPU, read
 * through NVML. NVML is opened with dlopen on first use and never linked, so
 * the binary starts where the driver is absent; kb.nvml.available() then says
 * why. Only the handful of NVML entry points below are declared, by hand,
 * with the types and enum values of nvml.h (stable across NVML releases
 * since the _v2 entry points of CUDA 5). Policy (when to sample, what counts
 * as throttled) is stdlib/kluabench/measure/clocks.lua. */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <lauxlib.h>
#include "../core/kb.h"
#include "nvml.h"

/* ---- the few NVML declarations we need ---------------------------------- */

typedef int nvml_ret; /* nvmlReturn_t */
typedef struct nvml_device_st *nvml_device;

enum { NVML_OK = 0, NVML_ERR_NOT_SUPPORTED = 3 };
enum { NVML_CLOCK_SM = 1, NVML_CLOCK_MEM = 2 };                 /* nvmlClockType_t */
enum { NVML_ID_APP_TARGET = 1, NVML_ID_APP_DEFAULT = 2, NVML_ID_BOOST_MAX = 3 }; /* nvmlClockId_t */
enum { NVML_TEMPERATURE_GPU = 0 };                              /* nvmlTemperatureSensors_t */

/* Bits of nvmlClocksEventReasons (formerly ClocksThrottleReasons), with the
 * names nvidia-smi prints for them (--query-gpu clocks_event_reasons.*). */
static const struct {
  unsigned long long bit;
  const char *name;
} reason_names[] = {
    {0x001ULL, "gpu_idle"},
    {0x002ULL, "applications_clocks_setting"},
    {0x004ULL, "sw_power_cap"},
    {0x008ULL, "hw_slowdown"},
    {0x010ULL, "sync_boost"},
    {0x020ULL, "sw_thermal_slowdown"},
    {0x040ULL, "hw_thermal_slowdown"},
    {0x080ULL, "hw_power_brake_slowdown"},
    {0x100ULL, "display_clock_setting"},
};

/* The library, resolved once. state: 0 not tried yet, 1 usable, -1 failed
 * (why says how); a failure is final for the process. */
static struct {
  int state;
  char why[512];
  void *lib;
  nvml_ret (*init)(void);
  nvml_ret (*shutdown)(void);
  const char *(*error_string)(nvml_ret);
  nvml_ret (*count)(unsigned *);
  nvml_ret (*by_index)(unsigned, nvml_device *);
  nvml_ret (*by_pci)(const char *, nvml_device *);
  nvml_ret (*by_uuid)(const char *, nvml_device *);
  nvml_ret (*clock_info)(nvml_device, int, unsigned *);
  nvml_ret (*max_clock)(nvml_device, int, unsigned *);
  nvml_ret (*clock)(nvml_device, int, int, unsigned *);
  nvml_ret (*temperature)(nvml_device, int, unsigned *);
  nvml_ret (*power)(nvml_device, unsigned *);
  nvml_ret (*reasons)(nvml_device, unsigned long long *);
  nvml_ret (*energy)(nvml_device, unsigned long long *); /* mJ since the driver loaded */
  const char *reasons_call; /* which of the two names `reasons` came from */
  nvml_ret (*name)(nvml_device, char *, unsigned);
  nvml_ret (*uuid)(nvml_device, char *, unsigned);
} nv;

#define NVML_LIB "libnvidia-ml.so.1"

/* ---- loading ------------------------------------------------------------- */

static void *sym(const char *name) { return dlsym(nv.lib, name); }

static int fail_load(const char *fmt, const char *a, const char *b) {
  snprintf(nv.why, sizeof nv.why, fmt, a, b);
  if (nv.lib) dlclose(nv.lib);
  nv.lib = NULL;
  nv.state = -1;
  return 0;
}

/* Resolves every entry point; the first five are required, the others may
 * be missing in old drivers (their fields are then reported unsupported). */
static int resolve(void) {
  *(void **)&nv.init = sym("nvmlInit_v2");
  *(void **)&nv.shutdown = sym("nvmlShutdown");
  *(void **)&nv.error_string = sym("nvmlErrorString");
  *(void **)&nv.by_index = sym("nvmlDeviceGetHandleByIndex_v2");
  *(void **)&nv.clock_info = sym("nvmlDeviceGetClockInfo");
  const char *missing = !nv.init           ? "nvmlInit_v2"
                        : !nv.shutdown     ? "nvmlShutdown"
                        : !nv.error_string ? "nvmlErrorString"
                        : !nv.by_index     ? "nvmlDeviceGetHandleByIndex_v2"
                        : !nv.clock_info   ? "nvmlDeviceGetClockInfo"
                                           : NULL;
  if (missing) return fail_load("%s has no symbol %s (driver too old?)", NVML_LIB, missing);
  *(void **)&nv.count = sym("nvmlDeviceGetCount_v2");
  *(void **)&nv.by_pci = sym("nvmlDeviceGetHandleByPciBusId_v2");
  *(void **)&nv.by_uuid = sym("nvmlDeviceGetHandleByUUID");
  *(void **)&nv.max_clock = sym("nvmlDeviceGetMaxClockInfo");
  *(void **)&nv.clock = sym("nvmlDeviceGetClock");
  *(void **)&nv.temperature = sym("nvmlDeviceGetTemperature");
  *(void **)&nv.power = sym("nvmlDeviceGetPowerUsage");
  *(void **)&nv.name = sym("nvmlDeviceGetName");
  *(void **)&nv.uuid = sym("nvmlDeviceGetUUID");
  *(void **)&nv.energy = sym("nvmlDeviceGetTotalEnergyConsumption");
  nv.reasons_call = "nvmlDeviceGetCurrentClocksEventReasons";
  *(void **)&nv.reasons = sym(nv.reasons_call);
  if (!nv.reasons) {
    nv.reasons_call = "nvmlDeviceGetCurrentClocksThrottleReasons";
    *(void **)&nv.reasons = sym(nv.reasons_call);
  }
  return 1;
}

/* Shuts NVML down when the Lua state closes (the sentinel's __gc). */
static int nvml_gc(lua_State *L) {
  if (nv.state == 1) {
    nv.shutdown();
    dlclose(nv.lib);
    nv.lib = NULL;
    nv.state = 0;
  }
  return 0;
}

/* 1 when NVML is loaded and initialised, else 0 with nv.why set. */
static int load(lua_State *L) {
  if (nv.state) return nv.state == 1;
  dlerror();
  nv.lib = dlopen(NVML_LIB, RTLD_NOW | RTLD_LOCAL);
  if (!nv.lib) {
    const char *e = dlerror();
    return fail_load("cannot load %s (no NVIDIA driver here?): %s", NVML_LIB, e ? e : "?");
  }
  if (!resolve()) return 0;
  nvml_ret r = nv.init();
  if (r != NVML_OK) return fail_load("nvmlInit_v2: %s%s", nv.error_string(r), "");
  nv.state = 1;
  /* A sentinel whose __gc shuts NVML down with the Lua state. */
  lua_newuserdatauv(L, 1, 0);
  lua_newtable(L);
  lua_pushcfunction(L, nvml_gc);
  lua_setfield(L, -2, "__gc");
  lua_setmetatable(L, -2);
  lua_setfield(L, LUA_REGISTRYINDEX, "kluabench.nvml.sentinel");
  return 1;
}

/* ---- helpers -------------------------------------------------------------- */

static long long now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts); /* the clock kb.clock_ns() reads */
  return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* Pushes nil and "what(device): NVML message"; returns 2 for `return`. */
static int push_fail(lua_State *L, const char *what, const char *dev, nvml_ret r) {
  lua_pushnil(L);
  lua_pushfstring(L, "%s(device %s): %s", what, dev, nv.error_string(r));
  return 2;
}

/* The device at `arg`: nil -> index 0, an integer -> NVML index, a string
 * "GPU-..." -> UUID, any other string -> PCI bus id ("00000000:19:00.0").
 * NVML numbers GPUs in PCI order and ignores CUDA_VISIBLE_DEVICES, so the
 * CUDA ordinal and the NVML index can differ; a UUID or bus id is exact.
 * Returns 1 with *out set, or 0 with nil, message pushed. `label` receives a
 * printable name of the device for messages. */
static int get_device(lua_State *L, int arg, nvml_device *out, char *label, size_t n) {
  nvml_ret r;
  const char *call;
  if (lua_isnoneornil(L, arg) || lua_type(L, arg) == LUA_TNUMBER) {
    lua_Integer i = luaL_optinteger(L, arg, 0);
    if (i < 0) luaL_argerror(L, arg, "device index must be >= 0");
    snprintf(label, n, "%lld", (long long)i);
    call = "nvmlDeviceGetHandleByIndex_v2";
    r = nv.by_index((unsigned)i, out);
  } else {
    const char *s = kb_check_cstring(L, arg, NULL, "device");
    snprintf(label, n, "%s", s);
    int is_uuid = strncmp(s, "GPU-", 4) == 0;
    call = is_uuid ? "nvmlDeviceGetHandleByUUID" : "nvmlDeviceGetHandleByPciBusId_v2";
    nvml_ret (*by)(const char *, nvml_device *) = is_uuid ? nv.by_uuid : nv.by_pci;
    if (!by) {
      lua_pushnil(L);
      lua_pushfstring(L, "%s is not in this NVML", call);
      return 0;
    }
    r = by(s, out);
  }
  if (r != NVML_OK) {
    push_fail(L, call, label, r);
    return 0;
  }
  return 1;
}

/* The device argument's type, checked before NVML is loaded so that a wrong
 * one is an error on every machine, not only where NVML is present. */
static void check_device_arg(lua_State *L, int arg) {
  int t = lua_type(L, arg);
  if (t == LUA_TSTRING) kb_check_cstring(L, arg, NULL, "device"); /* a UUID or PCI bus id is C text to NVML */
  if (t == LUA_TNONE || t == LUA_TNIL || t == LUA_TSTRING) return;
  if (t != LUA_TNUMBER) luaL_typeerror(L, arg, "device index, UUID or PCI bus id");
  if (luaL_checkinteger(L, arg) < 0) luaL_argerror(L, arg, "device index must be >= 0");
}

/* One NVML query into the table on top: on success sets field = value*scale;
 * NOT_SUPPORTED (or an entry point this NVML lacks) leaves the field absent
 * and appends its name to the list at `unsup`; any other failure returns 0
 * with nil, message pushed. */
typedef struct {
  lua_State *L;
  const char *dev;
  int unsup; /* stack index of the "unsupported" list */
} query;

static int put(query *q, const char *field, int present, const char *call, nvml_ret r,
               double value) {
  lua_State *L = q->L;
  if (present && r == NVML_OK) {
    if (value == (double)(lua_Integer)value) lua_pushinteger(L, (lua_Integer)value);
    else lua_pushnumber(L, value);
    lua_setfield(L, -2, field);
    return 1;
  }
  if (!present || r == NVML_ERR_NOT_SUPPORTED) {
    lua_pushstring(L, field);
    lua_rawseti(L, q->unsup, (lua_Integer)lua_rawlen(L, q->unsup) + 1);
    return 1;
  }
  push_fail(L, call, q->dev, r);
  return 0;
}

/* A string query (name, UUID) into field of the table on top, as put(). */
static int put_string(query *q, nvml_device d, const char *field,
                      nvml_ret (*get)(nvml_device, char *, unsigned), const char *call) {
  char buf[256];
  nvml_ret r = get ? get(d, buf, sizeof buf) : NVML_ERR_NOT_SUPPORTED;
  if (!get || r != NVML_OK) return put(q, field, get != NULL, call, r, 0);
  lua_pushstring(q->L, buf);
  lua_setfield(q->L, -2, field);
  return 1;
}

/* Sets t.throttle (names), t.throttle_mask on the table on top. */
static int put_reasons(query *q, nvml_device d) {
  lua_State *L = q->L;
  unsigned long long mask = 0;
  nvml_ret r = nv.reasons ? nv.reasons(d, &mask) : NVML_ERR_NOT_SUPPORTED;
  if (!nv.reasons || r == NVML_ERR_NOT_SUPPORTED) return put(q, "throttle", 0, NULL, r, 0);
  if (r != NVML_OK) {
    push_fail(L, nv.reasons_call, q->dev, r);
    return 0;
  }
  lua_newtable(L);
  int k = 0;
  for (size_t i = 0; i < sizeof reason_names / sizeof reason_names[0]; i++)
    if (mask & reason_names[i].bit) {
      lua_pushstring(L, reason_names[i].name);
      lua_rawseti(L, -2, ++k);
    }
  lua_setfield(L, -2, "throttle");
  lua_pushinteger(L, (lua_Integer)mask);
  lua_setfield(L, -2, "throttle_mask");
  return 1;
}

/* ---- Lua functions --------------------------------------------------------- */

#define NEED_NVML(L)                                                                           \
  do {                                                                                         \
    if (!load(L)) {                                                                            \
      lua_pushnil(L);                                                                          \
      lua_pushstring(L, nv.why);                                                               \
      return 2;                                                                                \
    }                                                                                          \
  } while (0)

/*** Whether NVML could be loaded and initialised, and why not.
 *
 * @signature kb.nvml.available() -> true | false, reason
 * @section nvml
 * @example
 *   local ok, why = kb.nvml.available()
 *   if not ok then print("no clocks: " .. why) end
 */
/* available() -> true | false, reason */
static int l_available(lua_State *L) {
  if (load(L)) {
    lua_pushboolean(L, 1);
    return 1;
  }
  lua_pushboolean(L, 0);
  lua_pushstring(L, nv.why);
  return 2;
}

/*** The number of GPUs NVML sees.
 *
 * @signature kb.nvml.count() -> n | nil, message
 * @section nvml
 * @example
 *   print(kb.nvml.count())
 */
/* count() -> number of GPUs NVML sees | nil, msg */
static int l_count(lua_State *L) {
  NEED_NVML(L);
  unsigned n = 0;
  if (!nv.count) {
    lua_pushnil(L);
    lua_pushstring(L, "nvmlDeviceGetCount_v2 is not in this NVML");
    return 2;
  }
  nvml_ret r = nv.count(&n);
  if (r != NVML_OK) return push_fail(L, "nvmlDeviceGetCount_v2", "-", r);
  lua_pushinteger(L, n);
  return 1;
}

/*** Clocks now: sm_mhz, mem_mhz, temp_c, power_w, throttle (names), throttle_mask, t_ns.
 *
 * "quick" reads only the SM clock and the throttle reasons, the two cheapest queries, for use
 * between samples. t_ns is on kb.clock_ns()'s clock.
 *
 * @signature kb.nvml.sample([device [, "quick"]]) -> table | nil, message
 * @section nvml
 * @example
 *   local s = kb.nvml.sample()
 *   if s then print(s.sm_mhz, s.temp_c, table.concat(s.throttle, ",")) end
 */
/* sample([device [, "quick"]]) -> {sm_mhz, mem_mhz, temp_c, power_w,
 * throttle = {names}, throttle_mask, t_ns, unsupported = {fields}} | nil, msg.
 * "quick" reads only the SM clock and the throttle reasons (the two cheapest
 * queries, for per-sample use). t_ns is kb.clock_ns()'s clock, read first. */
static int l_sample(lua_State *L) {
  static const char *const kinds[] = {"full", "quick", NULL};
  int quick = luaL_checkoption(L, 2, "full", kinds) == 1;
  check_device_arg(L, 1);
  NEED_NVML(L);
  long long t = now_ns();
  char label[96];
  nvml_device d;
  if (!get_device(L, 1, &d, label, sizeof label)) return 2;
  lua_newtable(L); /* unsupported */
  query q = {L, label, lua_gettop(L)};
  lua_newtable(L); /* the sample */
  lua_pushinteger(L, t);
  lua_setfield(L, -2, "t_ns");
  unsigned v = 0;
  nvml_ret r = nv.clock_info(d, NVML_CLOCK_SM, &v);
  if (!put(&q, "sm_mhz", 1, "nvmlDeviceGetClockInfo(SM)", r, v)) return 2;
  if (!put_reasons(&q, d)) return 2;
  if (!quick) {
    r = nv.clock_info(d, NVML_CLOCK_MEM, &v);
    if (!put(&q, "mem_mhz", 1, "nvmlDeviceGetClockInfo(MEM)", r, v)) return 2;
    r = nv.temperature ? nv.temperature(d, NVML_TEMPERATURE_GPU, &v) : NVML_ERR_NOT_SUPPORTED;
    if (!put(&q, "temp_c", nv.temperature != NULL, "nvmlDeviceGetTemperature", r, v)) return 2;
    r = nv.power ? nv.power(d, &v) : NVML_ERR_NOT_SUPPORTED;
    if (!put(&q, "power_w", nv.power != NULL, "nvmlDeviceGetPowerUsage", r, v / 1000.0))
      return 2;
  }
  lua_pushvalue(L, q.unsup);
  lua_setfield(L, -2, "unsupported");
  return 1;
}

/*** The GPU's total-energy counter (mJ since the driver loaded) and kb.clock_ns()'s clock just before.
 *
 * nvmlDeviceGetTotalEnergyConsumption (Volta and later). The counter moves in steps (every ~100 ms
 * on an H200): measure/energy.lua opens and closes its windows on them.
 *
 * @signature kb.nvml.energy([device]) -> mJ, t_ns | nil, message
 * @section nvml
 * @example
 *   print(kb.nvml.energy())
 */
/* energy([device]) -> mJ, t_ns | nil, msg: the device's total energy counter
 * (nvmlDeviceGetTotalEnergyConsumption: millijoules since the driver was
 * loaded; Volta and later) and kb.clock_ns()'s clock read just before it.
 * The counter moves in steps (every ~100 ms on an H200), so a difference of
 * two readings means something only over a window of many steps; the policy
 * (windows aligned to the steps) is stdlib/kluabench/measure/energy.lua. */
static int l_energy(lua_State *L) {
  check_device_arg(L, 1);
  NEED_NVML(L);
  char label[96];
  nvml_device d;
  if (!get_device(L, 1, &d, label, sizeof label)) return 2;
  if (!nv.energy) {
    lua_pushnil(L);
    lua_pushstring(L, "nvmlDeviceGetTotalEnergyConsumption is not in this NVML (driver too old?)");
    return 2;
  }
  unsigned long long mj = 0;
  long long t = now_ns();
  nvml_ret r = nv.energy(d, &mj);
  if (r != NVML_OK) return push_fail(L, "nvmlDeviceGetTotalEnergyConsumption", label, r);
  lua_pushinteger(L, (lua_Integer)mj);
  lua_pushinteger(L, t);
  return 2;
}

/*** name, uuid, and the max, application, default and boost clocks of a GPU.
 *
 * Application clocks that differ from their defaults mean someone set them (nvidia-smi -ac).
 *
 * @signature kb.nvml.info([device]) -> table | nil, message
 * @section nvml
 * @example
 *   local i = kb.nvml.info()
 *   if i then print(i.name, i.max_sm_mhz) end
 */
/* info([device]) -> {name, uuid, max_sm_mhz, max_mem_mhz, app_sm_mhz,
 * app_mem_mhz, default_app_sm_mhz, default_app_mem_mhz, boost_max_sm_mhz,
 * unsupported = {fields}} | nil, msg. Application clocks that differ from
 * their defaults mean someone set them (nvidia-smi -ac). */
static int l_info(lua_State *L) {
  check_device_arg(L, 1);
  NEED_NVML(L);
  char label[96];
  nvml_device d;
  if (!get_device(L, 1, &d, label, sizeof label)) return 2;
  lua_newtable(L);
  query q = {L, label, lua_gettop(L)};
  lua_newtable(L);
  if (!put_string(&q, d, "name", nv.name, "nvmlDeviceGetName")) return 2;
  if (!put_string(&q, d, "uuid", nv.uuid, "nvmlDeviceGetUUID")) return 2;
  nvml_ret r;
  static const struct {
    const char *field;
    int type, id; /* id < 0: max clock */
  } clocks[] = {
      {"max_sm_mhz", NVML_CLOCK_SM, -1},
      {"max_mem_mhz", NVML_CLOCK_MEM, -1},
      {"app_sm_mhz", NVML_CLOCK_SM, NVML_ID_APP_TARGET},
      {"app_mem_mhz", NVML_CLOCK_MEM, NVML_ID_APP_TARGET},
      {"default_app_sm_mhz", NVML_CLOCK_SM, NVML_ID_APP_DEFAULT},
      {"default_app_mem_mhz", NVML_CLOCK_MEM, NVML_ID_APP_DEFAULT},
      {"boost_max_sm_mhz", NVML_CLOCK_SM, NVML_ID_BOOST_MAX},
  };
  for (size_t i = 0; i < sizeof clocks / sizeof clocks[0]; i++) {
    unsigned v = 0;
    int max = clocks[i].id < 0;
    int present = max ? nv.max_clock != NULL : nv.clock != NULL;
    r = !present ? NVML_ERR_NOT_SUPPORTED
        : max    ? nv.max_clock(d, clocks[i].type, &v)
                 : nv.clock(d, clocks[i].type, clocks[i].id, &v);
    if (!put(&q, clocks[i].field, present, max ? "nvmlDeviceGetMaxClockInfo" : "nvmlDeviceGetClock",
             r, v))
      return 2;
  }
  lua_pushvalue(L, q.unsup);
  lua_setfield(L, -2, "unsupported");
  return 1;
}

/*** The throttle reasons this build knows, by bit of throttle_mask.
 *
 * @signature kb.nvml.reason_names() -> {[bit] = name}
 * @section nvml
 * @example
 *   for bit, name in pairs(kb.nvml.reason_names()) do print(bit, name) end
 */
/* reason_names() -> {[bit] = name, ...}: the throttle reasons this build knows. */
static int l_reason_names(lua_State *L) {
  lua_newtable(L);
  for (size_t i = 0; i < sizeof reason_names / sizeof reason_names[0]; i++) {
    lua_pushstring(L, reason_names[i].name);
    lua_rawseti(L, -2, (lua_Integer)reason_names[i].bit);
  }
  return 1;
}

static const luaL_Reg functions[] = {{"available", l_available}, {"count", l_count},
                                     {"sample", l_sample},       {"info", l_info},
                                     {"energy", l_energy},
                                     {"reason_names", l_reason_names}, {NULL, NULL}};

void kb_open_nvml(lua_State *L) {
  luaL_newlib(L, functions);
  lua_setfield(L, -2, "nvml");
}
