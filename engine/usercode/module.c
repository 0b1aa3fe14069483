/* kluabench.Module and kluabench.Kernel: user kernels from a cubin, PTX or
 * fatbin (kb.cuda.load, or kb.cuda.compile in nvrtc.c), launched through the
 * CUDA driver API on the engine's stream.
 *
 * The driver library is opened with dlopen (as NVML and CUPTI are) and only
 * the entry points below are declared, by hand, with the types of cuda.h, so
 * this file builds without CUDA headers and the binary links no CUDA
 * library. The runtime (backend_cuda.c) made the device's primary context
 * current when it created the stream; the driver calls here use that same
 * context, so tensors, events and graphs are shared.
 *
 * A module is loaded into the context when its first kernel is asked for,
 * which lets kb.cuda.compile work on a machine without a GPU. A kernel's
 * signature is parsed once; kernel:launch packs the arguments into a buffer
 * inside the kernel's userdata and calls cuLaunchKernel: no allocation per
 * launch. */
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include "../backend/cuda_context.h"
#include "usercode.h"

/* ---- the driver API, declared by hand ------------------------------------ */

typedef int CUresult;
typedef int CUdevice;
typedef struct CUctx_st *CUcontext;
typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;
typedef struct CUstream_st *CUstream;

enum { CUDA_SUCCESS = 0 };
enum { CU_JIT_ERROR_LOG_BUFFER = 5, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES = 6 }; /* CUjit_option */
enum { CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8 };
enum { CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR = 39 };
enum { CU_STREAM_CAPTURE_STATUS_NONE = 0 };

/* CUfunction_attribute values and the names kernel:attributes() gives them. */
static const struct { int attr; const char *name; } FUNC_ATTRS[] = {
    {0, "max_threads_per_block"}, {1, "shared_bytes"},  {2, "const_bytes"},
    {3, "local_bytes"},           {4, "registers"},     {5, "ptx_version"},
    {6, "binary_version"},        {8, "max_dynamic_shared_bytes"},
};

static struct {
  int state; /* 0 not tried, 1 usable, -1 failed (why says how) */
  char why[256];
  void *lib;
  CUresult (*init)(unsigned);
  CUresult (*driver_version)(int *);
  CUresult (*error_name)(CUresult, const char **);
  CUresult (*error_string)(CUresult, const char **);
  CUresult (*device_get)(CUdevice *, int);
  CUresult (*device_attribute)(int *, int, CUdevice);
  CUresult (*ctx_get_current)(CUcontext *);
  CUresult (*ctx_set_current)(CUcontext);
  CUresult (*primary_ctx_retain)(CUcontext *, CUdevice);
  CUresult (*module_load)(CUmodule *, const void *, unsigned, int *, void **);
  CUresult (*module_unload)(CUmodule);
  CUresult (*module_function)(CUfunction *, CUmodule, const char *);
  CUresult (*func_attribute)(int *, int, CUfunction);
  CUresult (*func_set_attribute)(CUfunction, int, int);
  CUresult (*occupancy)(int *, CUfunction, int, size_t);
  CUresult (*launch)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                     unsigned, CUstream, void **, void **);
  CUresult (*stream_synchronize)(CUstream);
  CUresult (*stream_is_capturing)(CUstream, int *);
} drv;

#define CUDA_LIB "libcuda.so.1"

/* Opens the driver library once; NULL when usable, else why not. */
static const char *drv_load(void) {
  if (drv.state) return drv.state > 0 ? NULL : drv.why;
  drv.state = -1;
  drv.lib = dlopen(CUDA_LIB, RTLD_NOW | RTLD_LOCAL);
  if (!drv.lib) {
    snprintf(drv.why, sizeof drv.why, "cannot open %s: %s", CUDA_LIB, dlerror());
    return drv.why;
  }
  static const struct { void **fn; const char *name; } syms[] = {
      {(void **)&drv.init, "cuInit"},
      {(void **)&drv.driver_version, "cuDriverGetVersion"},
      {(void **)&drv.error_name, "cuGetErrorName"},
      {(void **)&drv.error_string, "cuGetErrorString"},
      {(void **)&drv.device_get, "cuDeviceGet"},
      {(void **)&drv.device_attribute, "cuDeviceGetAttribute"},
      {(void **)&drv.ctx_get_current, "cuCtxGetCurrent"},
      {(void **)&drv.ctx_set_current, "cuCtxSetCurrent"},
      {(void **)&drv.primary_ctx_retain, "cuDevicePrimaryCtxRetain"},
      {(void **)&drv.module_load, "cuModuleLoadDataEx"},
      {(void **)&drv.module_unload, "cuModuleUnload"},
      {(void **)&drv.module_function, "cuModuleGetFunction"},
      {(void **)&drv.func_attribute, "cuFuncGetAttribute"},
      {(void **)&drv.func_set_attribute, "cuFuncSetAttribute"},
      {(void **)&drv.occupancy, "cuOccupancyMaxActiveBlocksPerMultiprocessor"},
      {(void **)&drv.launch, "cuLaunchKernel"},
      {(void **)&drv.stream_synchronize, "cuStreamSynchronize"},
      {(void **)&drv.stream_is_capturing, "cuStreamIsCapturing"},
  };
  for (size_t i = 0; i < sizeof syms / sizeof syms[0]; i++) {
    *syms[i].fn = dlsym(drv.lib, syms[i].name);
    if (!*syms[i].fn) {
      snprintf(drv.why, sizeof drv.why, "%s has no symbol %s (driver too old?)", CUDA_LIB, syms[i].name);
      dlclose(drv.lib);
      drv.lib = NULL;
      return drv.why;
    }
  }
  CUresult r = drv.init(0);
  if (r != CUDA_SUCCESS) {
    snprintf(drv.why, sizeof drv.why, "cuInit: CUDA error %d", r);
    return drv.why;
  }
  drv.state = 1;
  return NULL;
}

/* "<what>: CUDA_ERROR_X (text)", marking the context when the error poisons it. */
static const char *drv_fail(const char *what, CUresult r) {
  const char *name = NULL, *text = NULL;
  if (drv.error_name(r, &name) != CUDA_SUCCESS) name = NULL;
  if (drv.error_string(r, &text) != CUDA_SUCCESS) text = NULL;
  char nb[32];
  if (!name) snprintf(nb, sizeof nb, "CUDA error %d", r), name = nb;
  return kb_cuda_external_fail(what, r, name, text ? text : "no description");
}

#define DRV(L, call, what)                                                                     \
  do {                                                                                         \
    CUresult r_ = (call);                                                                      \
    if (r_ != CUDA_SUCCESS) kb_raise((L), drv_fail((what), r_));                               \
  } while (0)

/* The CUDA device the user kernels run on: the default backend, which must
 * be cuda; its primary context is made current if no context is. */
static const kb_backend *cuda_device(lua_State *L, const char *fn) {
  const kb_backend *dev = kb_default_backend();
  if (strcmp(dev->kind, "cuda") != 0)
    luaL_error(L, "%s: user kernels run on a CUDA device, and the backend is %s "
                  "(compiling works anywhere; loading and launching need --backend cuda)", fn, dev->kind);
  const char *why = drv_load();
  if (why) luaL_error(L, "%s: the CUDA driver API is not usable: %s", fn, why);
  const char *dead = kb_cuda_refuse(fn);
  if (dead) kb_raise(L, dead);
  CUcontext ctx = NULL;
  DRV(L, drv.ctx_get_current(&ctx), "cuCtxGetCurrent");
  if (!ctx) {
    CUdevice d;
    DRV(L, drv.device_get(&d, dev->ordinal), "cuDeviceGet");
    DRV(L, drv.primary_ctx_retain(&ctx, d), "cuDevicePrimaryCtxRetain");
    DRV(L, drv.ctx_set_current(ctx), "cuCtxSetCurrent");
  }
  return dev;
}

/* ---- modules --------------------------------------------------------------- */

/* uservalues: 1 the image (string), 2 the PTX (string or nil), 3 info (table) */
typedef struct {
  CUmodule mod; /* NULL until loaded */
  const kb_backend *dev;
  char format[8];
} kb_module;

static kb_module *check_module(lua_State *L, int arg) {
  return (kb_module *)luaL_checkudata(L, arg, KB_MODULE_MT);
}

void kb_push_module(lua_State *L, int img, int ptx, const char *format, int info) {
  img = lua_absindex(L, img), ptx = lua_absindex(L, ptx), info = lua_absindex(L, info);
  size_t n = 0;
  const char *bytes = lua_tolstring(L, img, &n);
  char hex[65];
  KB_TRY(L, kb_sha256_hex(bytes, n, hex));
  kb_module *m = (kb_module *)lua_newuserdatauv(L, sizeof *m, 3);
  memset(m, 0, sizeof *m);
  snprintf(m->format, sizeof m->format, "%s", format);
  luaL_setmetatable(L, KB_MODULE_MT);
  lua_pushvalue(L, img);
  lua_setiuservalue(L, -2, 1);
  lua_pushvalue(L, ptx);
  lua_setiuservalue(L, -2, 2);
  lua_pushstring(L, format);
  lua_setfield(L, info, "format");
  lua_pushfstring(L, "sha256:%s", hex);
  lua_setfield(L, info, "sha256");
  lua_pushinteger(L, (lua_Integer)n);
  lua_setfield(L, info, "bytes");
  lua_pushvalue(L, info);
  lua_setiuservalue(L, -2, 3);
  /* every module passes here, compiled (source_sha256 set) or loaded */
  lua_getfield(L, info, "sha256");
  lua_getfield(L, info, "source_sha256");
  lua_getfield(L, info, "name");
  lua_getfield(L, info, "path");
  const char *src = lua_tostring(L, -3);
  kb_note_code(L, src ? "nvrtc" : format, src ? src : lua_tostring(L, -4), src ? lua_tostring(L, -4) : NULL,
               lua_tostring(L, -2), lua_tostring(L, -1));
  lua_pop(L, 4);
}

/* Loads the image into the context (once); a loader's complaint (a corrupt
 * cubin, PTX for a newer ISA) comes with the JIT's error log. */
static void module_load(lua_State *L, kb_module *m, int idx) {
  if (m->mod) return;
  const kb_backend *dev = cuda_device(L, "kernel");
  lua_getiuservalue(L, idx, 1);
  size_t n = 0;
  const char *image = lua_tolstring(L, -1, &n);
  char log[4096] = "";
  int opts[2] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
  void *vals[2] = {log, (void *)(uintptr_t)sizeof log};
  CUmodule mod = NULL;
  CUresult r = drv.module_load(&mod, image, 2, opts, vals);
  if (r != CUDA_SUCCESS) {
    char what[96];
    snprintf(what, sizeof what, "cuModuleLoadDataEx(%s, %zu bytes)", m->format, n);
    const char *msg = drv_fail(what, r);
    luaL_error(L, "module:kernel: cannot load the module: %s%s%s", msg, log[0] ? "\n" : "", log);
  }
  lua_pop(L, 1);
  m->mod = mod;
  m->dev = dev;
  int v = 0;
  if (drv.driver_version(&v) == CUDA_SUCCESS) {
    lua_getiuservalue(L, idx, 3);
    lua_pushinteger(L, v);
    lua_setfield(L, -2, "driver_version");
    lua_pop(L, 1);
  }
}

/* Unloading waits for the stream, so that no queued launch of the module is
 * left; while a graph is being captured nothing may wait, and the module
 * stays loaded (it is unreachable: nothing can launch it again). */
static int mod_gc(lua_State *L) {
  kb_module *m = (kb_module *)luaL_checkudata(L, 1, KB_MODULE_MT);
  if (!m->mod) return 0;
  int status = CU_STREAM_CAPTURE_STATUS_NONE;
  CUstream s = (CUstream)m->dev->stream;
  if (drv.stream_is_capturing(s, &status) == CUDA_SUCCESS && status == CU_STREAM_CAPTURE_STATUS_NONE) {
    (void)drv.stream_synchronize(s);
    (void)drv.module_unload(m->mod);
  }
  m->mod = NULL;
  return 0;
}

/*** The PTX text (compiled modules and PTX files; nil for a cubin or fatbin file).
 *
 * @signature mod:ptx() -> string | nil
 * @section usercode
 * @example
 *   print(kb.cuda.load(".version 8.0\n.target sm_90\n"):ptx())
 */
static int mod_ptx(lua_State *L) {
  check_module(L, 1);
  lua_getiuservalue(L, 1, 2);
  return 1;
}

/*** The cubin (compiled for an sm_ arch, or loaded from one).
 *
 * @signature mod:cubin() -> bytes | nil, why
 * @section usercode
 * @example
 *   local m = kb.cuda.compile([[extern "C" __global__ void scale(float *y, const float *x, float a, int n) {
 *     int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = a * x[i]; }]], {cache = false})
 *   local bytes = m:cubin()
 */
static int mod_cubin(lua_State *L) {
  kb_module *m = check_module(L, 1);
  if (strcmp(m->format, "cubin") != 0) {
    luaL_pushfail(L);
    lua_pushfstring(L, "module is %s, not a cubin", m->format);
    return 2;
  }
  lua_getiuservalue(L, 1, 1);
  return 1;
}

/*** What records need: format, sha256, bytes, and path or source_sha256, options, arch,
 * nvrtc_version, names, log, cache; driver_version once loaded.
 *
 * @signature mod:info() -> table
 * @section usercode
 * @example
 *   print(kb.cuda.load(".version 8.0\n.target sm_90\n"):info().sha256)
 */
static int mod_info(lua_State *L) {
  check_module(L, 1);
  lua_getiuservalue(L, 1, 3);
  kb_push_table_copy(L, -1);
  return 1;
}

static int mod_tostring(lua_State *L) {
  kb_module *m = check_module(L, 1);
  lua_getiuservalue(L, 1, 3);
  lua_getfield(L, -1, "sha256");
  lua_pushfstring(L, "kluabench.Module(%s, %s%s)", m->format, lua_tostring(L, -1),
                  m->mod ? ", loaded" : "");
  return 1;
}

/* ---- kernels ---------------------------------------------------------------- */

/* uservalues: 1 the module (kept alive), 2 info (table) */
typedef struct {
  CUfunction fn;
  const kb_backend *dev;
  int nparams;
  int dyn_shared; /* the dynamic shared memory the function is allowed so far */
  const kb_param_type *types[KB_MAX_PARAMS];
  void *params[KB_MAX_PARAMS]; /* point into buf, set once */
  _Alignas(8) unsigned char buf[KB_MAX_PARAMS * 8]; /* Lua aligns userdata to 8 */
} kb_kernel;

static kb_kernel *check_kernel(lua_State *L, int arg) {
  return (kb_kernel *)luaL_checkudata(L, arg, KB_KERNEL_MT);
}

/*** A kernel of the module, its signature parsed once (loads the module on first use).
 *
 * name: the kernel's name (extern "C") or a name expression given to compile. Needs the cuda
 * backend. A missing kernel raises CUDA_ERROR_NOT_FOUND with the name; a corrupt image the
 * loader's error and log.
 *
 * @signature mod:kernel(name, signature) -> Kernel
 * @section usercode
 * @example
 *   local m = kb.cuda.compile([[extern "C" __global__ void scale(float *y, const float *x, float a, int n) {
 *     int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = a * x[i]; }]], {cache = false})
 *   local k = m:kernel("scale", "ptr, ptr, f32, i32")
 */
/* module:kernel(name, signature) -> Kernel. name: a kernel's name as
 * compiled (extern "C" names) or a name expression given to compile. */
static int mod_kernel(lua_State *L) {
  kb_module *m = check_module(L, 1);
  /* a method's arguments are numbered from after self, as luaL_argerror does */
  if (lua_type(L, 2) != LUA_TSTRING)
    return luaL_error(L, "bad argument #1 to 'kernel' (kernel name expected: a string, got %s)", luaL_typename(L, 2));
  if (lua_type(L, 3) != LUA_TSTRING)
    return luaL_error(L, "bad argument #2 to 'kernel' (signature expected: a string such as \"ptr, i32\", got %s)",
                      luaL_typename(L, 3));
  kb_refuse_nul(L, 2, "kernel", 1, "kernel name");
  kb_refuse_nul(L, 3, "kernel", 2, "signature");
  const char *name = lua_tostring(L, 2);
  const char *sig = lua_tostring(L, 3);
  kb_kernel *k = (kb_kernel *)lua_newuserdatauv(L, sizeof *k, 2);
  memset(k, 0, sizeof *k);
  luaL_setmetatable(L, KB_KERNEL_MT);
  int ki = lua_gettop(L);
  k->nparams = kb_parse_signature(L, "kernel", 2, sig, k->types, KB_MAX_PARAMS, NULL);
  size_t off = 0;
  for (int i = 0; i < k->nparams; i++) {
    size_t sz = k->types[i]->size;
    off = (off + sz - 1) / sz * sz;
    k->params[i] = k->buf + off;
    off += sz;
  }
  /* the lowered (mangled) name of a name expression */
  lua_getiuservalue(L, 1, 3);
  int info = lua_gettop(L);
  const char *symbol = name;
  if (lua_getfield(L, info, "names") == LUA_TTABLE && lua_getfield(L, -1, name) == LUA_TSTRING)
    symbol = lua_tostring(L, -1);
  module_load(L, m, 1);
  CUresult r = drv.module_function(&k->fn, m->mod, symbol);
  if (r != CUDA_SUCCESS) {
    const char *msg = drv_fail("cuModuleGetFunction", r);
    return luaL_error(L, "bad argument #1 to 'kernel' (no kernel '%s' in the module: %s; a C++ kernel "
                         "needs extern \"C\" or its name in compile's opts.names)", name, msg);
  }
  k->dev = m->dev;
  lua_pushvalue(L, 1);
  lua_setiuservalue(L, ki, 1);
  lua_createtable(L, 0, 6);
  lua_pushstring(L, name);
  lua_setfield(L, -2, "name");
  lua_pushstring(L, symbol);
  lua_setfield(L, -2, "symbol");
  kb_push_signature(L, k->types, k->nparams);
  lua_setfield(L, -2, "signature");
  lua_getfield(L, info, "sha256");
  lua_setfield(L, -2, "module_sha256");
  lua_setiuservalue(L, ki, 2);
  lua_settop(L, ki);
  return 1;
}

/* ---- launching ---------------------------------------------------------------- */

/* The launching functions (launch, launch_repeat, pack) are closures whose
 * upvalues hold the option names and the metatables they test against, so
 * that a launch reads its options and checks its arguments without making a
 * string from C or looking a metatable up by name (half of what a launch
 * spent besides cuLaunchKernel). They read opts as a plain table (rawget). */
enum { UP_GRID = 1, UP_BLOCK, UP_SHARED, UP_ARGS, UP_TENSOR_MT, UP_SELF_MT, UP_COUNT = UP_SELF_MT };

/* Pushes opts[key] (key: the upvalue holding its name), raw; returns its type. */
static int opt_field(lua_State *L, int opts, int key) {
  lua_pushvalue(L, lua_upvalueindex(key));
  return lua_rawget(L, opts);
}

/* The userdata at idx when its metatable is the one in upvalue `up`, else NULL. */
static void *udata_of(lua_State *L, int idx, int up) {
  if (lua_type(L, idx) != LUA_TUSERDATA || !lua_getmetatable(L, idx)) return NULL;
  int same = lua_rawequal(L, -1, lua_upvalueindex(up));
  lua_pop(L, 1);
  return same ? lua_touserdata(L, idx) : NULL;
}

/* self (argument 1) of a launching closure: the kernel (or argument pack), or
 * the error luaL_checkudata gives for anything else. */
static kb_kernel *launch_self(lua_State *L, const char *mt) {
  kb_kernel *k = (kb_kernel *)udata_of(L, 1, UP_SELF_MT);
  return k ? k : (kb_kernel *)luaL_checkudata(L, 1, mt);
}

/* A launch dimension at opts[key]: an integer or {x [, y [, z]]}, each >= 1.
 * The value stays on the stack (pack_launch pops everything at once). */
static void launch_dims(lua_State *L, int opts, int up, const char *key, unsigned d[3], int required) {
  d[0] = d[1] = d[2] = 1;
  int t = opt_field(L, opts, up);
  if (t == LUA_TNIL && !required) return;
  int n = 1;
  lua_Integer v[3] = {1, 1, 1};
  int ok = 1;
  if (t == LUA_TNUMBER) {
    v[0] = lua_tointegerx(L, -1, &ok);
  } else if (t == LUA_TTABLE) {
    n = (int)luaL_len(L, -1);
    if (n < 1 || n > 3) luaL_error(L, "bad argument #1 to 'launch' (%s must have 1 to 3 dimensions, has %d)", key, n);
    for (int i = 0; i < n && ok; i++) {
      lua_geti(L, -1, i + 1);
      v[i] = lua_tointegerx(L, -1, &ok);
      lua_pop(L, 1);
    }
  } else {
    ok = 0;
  }
  for (int i = 0; i < 3 && ok; i++) ok = v[i] >= 1 && v[i] <= 0x7fffffff;
  if (!ok) luaL_error(L, "bad argument #1 to 'launch' (%s must be a positive integer or a list of 1 to 3 of them)", key);
  for (int i = 0; i < 3; i++) d[i] = (unsigned)v[i];
}

static int arg_error(lua_State *L, int i, const kb_param_type *t, const char *fmt, const char *what) {
  char msg[200];
  snprintf(msg, sizeof msg, fmt, what);
  return luaL_error(L, "bad argument #1 to 'launch' (args[%d] (%s): %s)", i + 1, t->name, msg);
}

/* Packs the value on top of the stack as parameter i. */
static void pack_arg(lua_State *L, kb_kernel *k, int i) {
  const kb_param_type *t = k->types[i];
  int ok = 0;
  switch (t->cls) {
  case KB_P_PTR: {
    uint64_t p = 0;
    kb_tensor *x = (kb_tensor *)udata_of(L, -1, UP_TENSOR_MT);
    if (x) {
      if (x->freed) arg_error(L, i, t, "tensor has been freed%s", "");
      if (x->dev != k->dev)
        arg_error(L, i, t, "%s", lua_pushfstring(L, "tensor is on %s, the kernel runs on %s", x->dev->device,
                                                  k->dev->device));
      kb_capture_note(L, -1);
      p = (uint64_t)(uintptr_t)x->data;
    } else {
      lua_Integer a = lua_tointegerx(L, -1, &ok);
      if (!ok || lua_type(L, -1) != LUA_TNUMBER)
        arg_error(L, i, t, "expected a tensor or an integer address, got %s", luaL_typename(L, -1));
      p = (uint64_t)a;
    }
    memcpy(k->params[i], &p, 8);
    break;
  }
  case KB_P_INT:
  case KB_P_UINT: {
    lua_Integer v = lua_tointegerx(L, -1, &ok);
    if (!ok) arg_error(L, i, t, "expected an integer, got %s", lua_type(L, -1) == LUA_TNUMBER ? "a fraction" : luaL_typename(L, -1));
    int bits = 8 * t->size;
    int in_range = t->cls == KB_P_INT ? (bits == 64 || (v >= -((lua_Integer)1 << (bits - 1)) && v < ((lua_Integer)1 << (bits - 1))))
                                      : (v >= 0 && (bits == 64 || v < ((lua_Integer)1 << bits)));
    if (!in_range) arg_error(L, i, t, "%s is out of range", lua_tostring(L, -1));
    memcpy(k->params[i], &v, t->size); /* little-endian: the low bytes */
    break;
  }
  case KB_P_FLOAT: {
    lua_Number v = lua_tonumberx(L, -1, &ok);
    if (!ok) arg_error(L, i, t, "expected a number, got %s", luaL_typename(L, -1));
    if (t->size == 8) {
      double d = v;
      memcpy(k->params[i], &d, 8);
    } else if (t->size == 4) {
      float f = (float)v;
      memcpy(k->params[i], &f, 4);
    } else {
      uint16_t h = strcmp(t->name, "bf16") == 0 ? kb_f32_to_bf16((float)v) : kb_f32_to_f16((float)v);
      memcpy(k->params[i], &h, 2);
    }
    break;
  }
  case KB_P_TENSOR:
    break; /* plugins only */
  }
}

/* What one launch needs besides the parameters packed into k->buf. */
typedef struct {
  unsigned grid[3], block[3];
  lua_Integer shared;
} launch_cfg;

/* Reads the options table at `opts` (grid, block, shared, args) and packs
 * args into k's parameter buffer, with every check kernel:launch makes; the
 * signature for messages is read only when the count is wrong. self: the
 * kernel's (or argument pack's) stack index. Plain table reads (raw length,
 * raw indexing of args): an args list with metamethods is read as a plain
 * table. */
static void pack_launch(lua_State *L, kb_kernel *k, int self, int opts, launch_cfg *c) {
  luaL_checktype(L, opts, LUA_TTABLE);
  int base = lua_gettop(L);
  luaL_checkstack(L, k->nparams + 8, "kernel arguments");
  launch_dims(L, opts, UP_GRID, "grid", c->grid, 1);
  launch_dims(L, opts, UP_BLOCK, "block", c->block, 1);
  c->shared = 0;
  if (opt_field(L, opts, UP_SHARED) != LUA_TNIL) {
    int ok;
    c->shared = lua_tointegerx(L, -1, &ok);
    if (!ok || c->shared < 0 || c->shared > 0x7fffffff)
      luaL_error(L, "bad argument #1 to 'launch' (shared must be a number of bytes >= 0)");
  }
  int t = opt_field(L, opts, UP_ARGS);
  int args = lua_gettop(L);
  if (t != LUA_TTABLE && !(t == LUA_TNIL && k->nparams == 0))
    luaL_error(L, "bad argument #1 to 'launch' (args must be a table of %d values)", k->nparams);
  int n = t == LUA_TNIL ? 0 : (int)lua_rawlen(L, -1);
  if (n != k->nparams) {
    lua_getiuservalue(L, self, 2);
    lua_getfield(L, -1, "signature");
    luaL_error(L, "bad argument #1 to 'launch' (args has %d values, the kernel takes %d: %s)", n,
               k->nparams, lua_tostring(L, -1));
  }
  for (int i = 0; i < n; i++) { /* each value stays on the stack until the end: one pop for all */
    lua_rawgeti(L, args, i + 1);
    pack_arg(L, k, i);
  }
  lua_settop(L, base);
}

/* Raises the dynamic shared memory limit of the function when a launch asks
 * for more than 48 KiB and more than it was allowed so far. */
static void allow_shared(lua_State *L, kb_kernel *k, lua_Integer shared) {
  if (shared > 48 * 1024 && shared > k->dyn_shared) {
    DRV(L, drv.func_set_attribute(k->fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, (int)shared),
        "cuFuncSetAttribute(max dynamic shared memory)");
    k->dyn_shared = (int)shared;
  }
}

static CUresult launch_packed(kb_kernel *k, const launch_cfg *c) {
  return drv.launch(k->fn, c->grid[0], c->grid[1], c->grid[2], c->block[0], c->block[1], c->block[2],
                    (unsigned)c->shared, (CUstream)k->dev->stream, k->params, NULL);
}

/* A launch as the backend's run_kernel takes it (kb_kernel_fn): kernel:launch
 * goes through the engine's one launch, as the built-in kernels and plugin
 * entries do; the driver's status is kept for the caller's message. */
typedef struct {
  kb_kernel *k;
  const launch_cfg *c;
  CUresult r;
} launch_call;

static const char *run_launch(void *p) {
  launch_call *l = (launch_call *)p;
  l->r = launch_packed(l->k, l->c);
  return NULL;
}

/*** Queues the kernel on the engine's stream (cuLaunchKernel); no allocation per launch.
 *
 * grid and block: an integer or {x [, y [, z]]}. shared: dynamic shared memory in bytes (over 48
 * KiB the kernel is allowed it first). args are checked against the signature: a wrong count or
 * type names the parameter. Tensors used while `kb.graph` captures are pinned, and the graph keeps
 * the module loaded. A failed launch raises with the CUDA error name.
 *
 * @signature kern:launch{grid = g, block = b [, shared = bytes], args = {...}} -> kern
 * @section usercode
 * @example
 *   local m = kb.cuda.compile([[extern "C" __global__ void scale(float *y, const float *x, float a, int n) {
 *     int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = a * x[i]; }]], {cache = false})
 *   local k = m:kernel("scale", "ptr, ptr, f32, i32")
 *   local n = 1 << 20
 *   local x, y = kb.randn({n}, "f32", 1), kb.empty({n}, "f32")
 *   k:launch{grid = (n + 255) // 256, block = 256, args = {y, x, 2.0, n}}
 */
/* kernel:launch{grid = g, block = b [, shared = bytes], args = {...}} -> kernel */
static int k_launch(lua_State *L) {
  kb_kernel *k = launch_self(L, KB_KERNEL_MT);
  launch_cfg c;
  pack_launch(L, k, 1, 2, &c);
  allow_shared(L, k, c.shared);
  launch_call l = {k, &c, CUDA_SUCCESS};
  const char *dead = k->dev->run_kernel(k->dev, "cuLaunchKernel", run_launch, &l); /* only on a dead context */
  if (dead) kb_raise(L, dead);
  if (l.r != CUDA_SUCCESS) kb_raise(L, drv_fail("cuLaunchKernel", l.r));
  lua_getiuservalue(L, 1, 1);
  kb_capture_keep(L, -1); /* a captured graph keeps the module loaded */
  lua_settop(L, 1);
  return 1;
}

static long long mono_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts); /* the clock kb.clock_ns() reads */
  return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/*** Launches the kernel n times from a C loop with the arguments of opts, packed once; the host ns it took.
 *
 * opts as kern:launch takes them, with the same checks. Nothing waits for the device. The floor
 * that kern:launch's host cost is measured against: scripts/launch_overhead_user.lua alternates the
 * two in one process. Refused while a CUDA graph is being captured.
 *
 * @signature kern:launch_repeat(opts, n) -> ns
 * @section usercode
 * @example
 *   local m = kb.cuda.compile([[extern "C" __global__ void scale(float *y, const float *x, float a, int n) {
 *     int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = a * x[i]; }]], {cache = false})
 *   local k = m:kernel("scale", "ptr, ptr, f32, i32")
 *   local x, y = kb.randn({32}, "f32", 1), kb.empty({32}, "f32")
 *   local ns = k:launch_repeat({grid = 1, block = 32, args = {y, x, 2.0, 32}}, 1000)
 *   print(ns / 1000 .. " ns a launch")
 */
/* kernel:launch_repeat(opts, n) -> ns: packs opts once (as launch does, with
 * its checks), then calls cuLaunchKernel n times from a C loop, and returns
 * the host nanoseconds the n calls took (nothing waits for the device). The
 * floor that kernel:launch's own host cost is measured against
 * (scripts/launch_overhead_user.lua alternates the two in one process). */
static int k_launch_repeat(lua_State *L) {
  kb_kernel *k = launch_self(L, KB_KERNEL_MT);
  lua_Integer n = luaL_checkinteger(L, 3);
  if (n < 1 || n > 100000000) luaL_argerror(L, 3, "the number of launches must be 1 to 100000000");
  launch_cfg c;
  pack_launch(L, k, 1, 2, &c);
  const char *dead = kb_cuda_refuse("cuLaunchKernel");
  if (dead) kb_raise(L, dead);
  allow_shared(L, k, c.shared);
  if (kb_capturing())
    return luaL_error(L, "launch_repeat: a CUDA graph is being captured (launch_repeat times launches, "
                         "which a capture only records)");
  long long t0 = mono_ns();
  for (lua_Integer i = 0; i < n; i++) {
    CUresult r = launch_packed(k, &c);
    if (r != CUDA_SUCCESS) kb_raise(L, drv_fail("cuLaunchKernel", r));
  }
  lua_pushinteger(L, (lua_Integer)(mono_ns() - t0));
  return 1;
}

/* ---- argument packs: the launch's packing without a GPU ------------------------ */

/*** The parameter buffer of a kernel of this signature, filled as kern:launch fills it, without a launch.
 *
 * pack:pack(opts) reads grid, block, shared and args and packs args with every check kern:launch
 * makes (tensors must be on the default device); pack:bytes() returns the buffer. It works on any
 * backend: the packing is tested, and its host cost timed, without a GPU.
 *
 * @signature kb.cuda.args(signature) -> ArgPack
 * @section usercode
 * @example
 *   local pk = kb.cuda.args("ptr, i32")
 *   print(#pk:pack({grid = 1, block = 32, args = {0, 7}}):bytes())
 */
/* kb.cuda.args(signature) -> ArgPack: the parameter buffer of a kernel of
 * that signature, filled by pack(opts) exactly as kernel:launch fills it
 * (every check included; tensors must be on the default device), without
 * launching anything: for tests of the packing on any backend, and for
 * timing its host cost where there is no GPU. */
static int l_args(lua_State *L) {
  if (lua_type(L, 1) != LUA_TSTRING)
    return luaL_error(L, "bad argument #1 to 'args' (signature expected: a string such as \"ptr, i32\", got %s)",
                      luaL_typename(L, 1));
  kb_refuse_nul(L, 1, "args", 1, "signature");
  kb_kernel *k = (kb_kernel *)lua_newuserdatauv(L, sizeof *k, 2);
  memset(k, 0, sizeof *k);
  luaL_setmetatable(L, KB_ARGPACK_MT);
  int ki = lua_gettop(L);
  k->nparams = kb_parse_signature(L, "args", 1, lua_tostring(L, 1), k->types, KB_MAX_PARAMS, NULL);
  size_t off = 0;
  for (int i = 0; i < k->nparams; i++) {
    size_t sz = k->types[i]->size;
    off = (off + sz - 1) / sz * sz;
    k->params[i] = k->buf + off;
    off += sz;
  }
  k->dev = kb_default_backend();
  lua_createtable(L, 0, 1);
  kb_push_signature(L, k->types, k->nparams);
  lua_setfield(L, -2, "signature");
  lua_setiuservalue(L, ki, 2);
  lua_settop(L, ki);
  return 1;
}

/*** Packs opts.args (and checks grid, block, shared) as kern:launch does.
 *
 * @signature pack:pack(opts) -> pack
 * @section usercode
 * @example
 *   kb.cuda.args("i32"):pack({grid = 1, block = 1, args = {3}})
 */
/* pack:pack(opts) -> pack */
static int a_pack(lua_State *L) {
  kb_kernel *k = launch_self(L, KB_ARGPACK_MT);
  launch_cfg c;
  pack_launch(L, k, 1, 2, &c);
  lua_settop(L, 1);
  return 1;
}

/*** The packed parameters, each at its offset, little-endian.
 *
 * @signature pack:bytes() -> string
 * @section usercode
 * @example
 *   print(string.unpack("<i4", kb.cuda.args("i32"):pack({grid = 1, block = 1, args = {3}}):bytes()))
 */
/* pack:bytes() -> the packed parameters, each at its offset (little-endian) */
static int a_bytes(lua_State *L) {
  kb_kernel *k = (kb_kernel *)luaL_checkudata(L, 1, KB_ARGPACK_MT);
  size_t end = 0;
  for (int i = 0; i < k->nparams; i++) {
    size_t e = (size_t)((unsigned char *)k->params[i] - k->buf) + k->types[i]->size;
    if (e > end) end = e;
  }
  lua_pushlstring(L, (const char *)k->buf, end);
  return 1;
}

static int a_tostring(lua_State *L) {
  luaL_checkudata(L, 1, KB_ARGPACK_MT);
  lua_getiuservalue(L, 1, 2);
  lua_getfield(L, -1, "signature");
  lua_pushfstring(L, "kluabench.ArgPack(%s)", lua_tostring(L, -1));
  return 1;
}

/*** registers, shared_bytes, const_bytes, local_bytes, max_threads_per_block, ptx_version,
 * binary_version, max_dynamic_shared_bytes.
 *
 * @signature kern:attributes() -> table
 * @section usercode
 * @example
 *   local m = kb.cuda.compile([[extern "C" __global__ void scale(float *y, const float *x, float a, int n) {
 *     int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = a * x[i]; }]], {cache = false})
 *   local k = m:kernel("scale", "ptr, ptr, f32, i32")
 *   print(k:attributes().registers)
 */
/* kernel:attributes() -> {registers, shared_bytes, local_bytes, ...} */
static int k_attributes(lua_State *L) {
  kb_kernel *k = check_kernel(L, 1);
  lua_createtable(L, 0, 8);
  for (size_t i = 0; i < sizeof FUNC_ATTRS / sizeof FUNC_ATTRS[0]; i++) {
    int v = 0;
    DRV(L, drv.func_attribute(&v, FUNC_ATTRS[i].attr, k->fn), "cuFuncGetAttribute");
    lua_pushinteger(L, v);
    lua_setfield(L, -2, FUNC_ATTRS[i].name);
  }
  return 1;
}

/*** blocks_per_sm, active_warps, max_warps and occupancy (0..1) for a block size.
 *
 * @signature kern:occupancy(block_size [, shared]) -> table
 * @section usercode
 * @example
 *   local m = kb.cuda.compile([[extern "C" __global__ void scale(float *y, const float *x, float a, int n) {
 *     int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = a * x[i]; }]], {cache = false})
 *   local k = m:kernel("scale", "ptr, ptr, f32, i32")
 *   print(k:occupancy(256).blocks_per_sm)
 */
/* kernel:occupancy(block_size [, shared]) -> {blocks_per_sm, active_warps,
 * max_warps, occupancy} */
static int k_occupancy(lua_State *L) {
  kb_kernel *k = check_kernel(L, 1);
  lua_Integer block = luaL_checkinteger(L, 2), shared = luaL_optinteger(L, 3, 0);
  if (block < 1 || block > 4096) luaL_argerror(L, 2, "block size must be 1 to 4096 threads");
  if (shared < 0) luaL_argerror(L, 3, "shared memory must be >= 0 bytes");
  int blocks = 0, threads = 0;
  CUdevice d;
  DRV(L, drv.occupancy(&blocks, k->fn, (int)block, (size_t)shared), "cuOccupancyMaxActiveBlocksPerMultiprocessor");
  DRV(L, drv.device_get(&d, k->dev->ordinal), "cuDeviceGet");
  DRV(L, drv.device_attribute(&threads, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR, d),
      "cuDeviceGetAttribute(max threads per multiprocessor)");
  int warps = blocks * (int)((block + 31) / 32), max_warps = threads / 32;
  lua_createtable(L, 0, 4);
  lua_pushinteger(L, blocks);
  lua_setfield(L, -2, "blocks_per_sm");
  lua_pushinteger(L, warps);
  lua_setfield(L, -2, "active_warps");
  lua_pushinteger(L, max_warps);
  lua_setfield(L, -2, "max_warps");
  lua_pushnumber(L, max_warps > 0 ? (double)warps / max_warps : 0.0);
  lua_setfield(L, -2, "occupancy");
  return 1;
}

/*** name, symbol, signature, module_sha256 and module (mod:info()): for
 * record.user_implementation.
 *
 * @signature kern:info() -> table
 * @section usercode
 * @example
 *   local m = kb.cuda.compile([[extern "C" __global__ void scale(float *y, const float *x, float a, int n) {
 *     int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = a * x[i]; }]], {cache = false})
 *   local k = m:kernel("scale", "ptr, ptr, f32, i32")
 *   local op = require("kluabench.record.operation").document{name = "scale", family = "scale",
 *     inputs = {{name = "x", shape = {"n"}, dtype = "float"}, {name = "a", scalar = "float"}},
 *     outputs = {{name = "y", shape = {"n"}, dtype = "float"}}}
 *   local impl = record.user_implementation{provider = "mine", kernel = "scale", info = k:info(), operation = op}
 *   print(impl.spec.operation.specDigest)
 */
/* kernel:info() -> {name, symbol, signature, module = module:info()} */
static int k_info(lua_State *L) {
  check_kernel(L, 1);
  lua_getiuservalue(L, 1, 2);
  kb_push_table_copy(L, -1);
  lua_getiuservalue(L, 1, 1);
  lua_getiuservalue(L, -1, 3);
  kb_push_table_copy(L, -1);
  lua_setfield(L, -4, "module");
  lua_pop(L, 2);
  return 1;
}

static int k_tostring(lua_State *L) {
  check_kernel(L, 1);
  lua_getiuservalue(L, 1, 2);
  lua_getfield(L, -1, "name");
  lua_getfield(L, -2, "signature");
  lua_pushfstring(L, "kluabench.Kernel(%s(%s))", lua_tostring(L, -2), lua_tostring(L, -1));
  return 1;
}

/* ---- kb.cuda.load -------------------------------------------------------------- */

/* "cubin", "fatbin", "ptx" by the image's first bytes, or NULL. */
static const char *image_format(const char *s, size_t n) {
  if (n >= 4 && memcmp(s, "\x7f" "ELF", 4) == 0) return "cubin";
  if (n >= 4 && memcmp(s, "\x50\xed\x55\xba", 4) == 0) return "fatbin";
  if (n >= 8 && memchr(s, '\0', n) == NULL && strstr(s, ".version") && strstr(s, ".target")) return "ptx";
  return NULL;
}

/*** A module from a cubin, PTX or fatbin file (nvcc -cubin/-ptx/-fatbin, Triton) or its bytes.
 *
 * The format is told by the content (ELF, fatbin magic, PTX text). The module is loaded into the
 * CUDA context when its first kernel is asked for. For Triton's kernels see `triton.load`, which
 * also reads the metadata.
 *
 * @signature kb.cuda.load(path_or_bytes) -> Module
 * @section usercode
 * @example
 *   local m = kb.cuda.load(".version 8.0\n.target sm_90\n.address_size 64\n")
 *   print(m:info().format)
 */
/* kb.cuda.load(path_or_bytes) -> Module: a cubin, PTX or fatbin, given as
 * its bytes or as the path of a file holding them. */
static int l_load(lua_State *L) {
  size_t n = 0;
  const char *s = luaL_checklstring(L, 1, &n);
  const char *fmt = image_format(s, n);
  lua_newtable(L);
  int info = lua_gettop(L);
  if (fmt) {
    lua_pushvalue(L, 1);
  } else {
    if (memchr(s, '\0', n) || n > 4096)
      return luaL_error(L, "bad argument #1 to 'load' (%d bytes that are neither a cubin (ELF), a fatbin nor PTX text)", (int)n);
    const char *why = kb_read_file(L, s, KB_READ_MAX);
    if (why) return luaL_error(L, "bad argument #1 to 'load' (cannot read '%s': %s)", s, why);
    size_t m = 0;
    const char *bytes = lua_tolstring(L, -1, &m);
    fmt = image_format(bytes, m);
    if (!fmt)
      return luaL_error(L, "bad argument #1 to 'load' ('%s' is neither a cubin (ELF), a fatbin nor PTX text)", s);
    lua_pushvalue(L, 1);
    lua_setfield(L, info, "path");
  }
  int img = lua_gettop(L);
  if (strcmp(fmt, "ptx") == 0) lua_pushvalue(L, img);
  else lua_pushnil(L);
  kb_push_module(L, img, -1, fmt, info);
  return 1;
}

static const luaL_Reg module_methods[] = {{"kernel", mod_kernel}, {"ptx", mod_ptx}, {"cubin", mod_cubin},
                                          {"info", mod_info},     {NULL, NULL}};
static const luaL_Reg kernel_methods[] = {{"launch", NULL},        {"launch_repeat", NULL},
                                          {"attributes", k_attributes},
                                          {"occupancy", k_occupancy}, {"info", k_info},
                                          {NULL, NULL}};
static const luaL_Reg argpack_methods[] = {{"pack", NULL}, {"bytes", a_bytes}, {NULL, NULL}};

/* Sets the launching closures (their upvalues: the option names, the tensor
 * metatable and the class's own) as methods `names` of class mt. */
static void set_launchers(lua_State *L, const char *mt, const luaL_Reg *fns) {
  luaL_getmetatable(L, mt);
  lua_getfield(L, -1, "__index");
  for (; fns->name; fns++) {
    lua_pushliteral(L, "grid");
    lua_pushliteral(L, "block");
    lua_pushliteral(L, "shared");
    lua_pushliteral(L, "args");
    luaL_getmetatable(L, KB_TENSOR_MT);
    luaL_getmetatable(L, mt);
    lua_pushcclosure(L, fns->func, UP_COUNT);
    lua_setfield(L, -2, fns->name);
  }
  lua_pop(L, 2);
}

/* Adds load to the kb.cuda table on top of the stack. */
void kb_open_module(lua_State *L) {
  kb_new_class(L, KB_MODULE_MT, module_methods, mod_gc, mod_tostring);
  kb_new_class(L, KB_KERNEL_MT, kernel_methods, NULL, k_tostring);
  kb_new_class(L, KB_ARGPACK_MT, argpack_methods, NULL, a_tostring);
  static const luaL_Reg kernel_launchers[] = {{"launch", k_launch}, {"launch_repeat", k_launch_repeat}, {NULL, NULL}};
  static const luaL_Reg pack_launchers[] = {{"pack", a_pack}, {NULL, NULL}};
  set_launchers(L, KB_KERNEL_MT, kernel_launchers);
  set_launchers(L, KB_ARGPACK_MT, pack_launchers);
  lua_pushcfunction(L, l_load);
  lua_setfield(L, -2, "load");
  lua_pushcfunction(L, l_args);
  lua_setfield(L, -2, "args");
}
