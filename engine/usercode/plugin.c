/* kb.plugin: kernels from shared libraries written against
 * include/kluabench_plugin.h (docs/KERNELS.md).
 *
 *   local p = kb.plugin.load("build/plugins/libscale_add.so")
 *   local scale_add = p:kernel("scale_add")
 *   scale_add(out, x, y, 2.0)   -- or scale_add:call(...)
 *
 * A plugin kernel runs on the device of its tensors: its CPU entry (the twin)
 * for cpu tensors, its CUDA entry, queued on the engine's stream, for cuda
 * ones. Arguments are checked here against the kernel's signature, so an
 * entry receives exactly the kinds it declared. A library stays loaded until
 * the process ends: a CUDA graph or a queued launch may still use its code. */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include "../backend/cuda_context.h"
#include "../backend/trust_cuda.h"
#include "usercode.h"
#include "../../include/kluabench_plugin.h"

#define KB_PLUGIN_MAX_ARGS 32
/* The err buffer an entry gets, and the room for its message escaped (each
 * byte may become the four of \xNN) with a note. */
#define PLUGIN_ERR_BYTES 512
#define PLUGIN_MSG_BYTES (4 * PLUGIN_ERR_BYTES + 96)

typedef struct {
  const kb_plugin *p;
} kb_plugin_ud; /* uservalue 1: info table */

typedef struct {
  const kb_plugin_kernel *k;
  const char *plugin;
  int nparams;
  const kb_param_type *types[KB_PLUGIN_MAX_ARGS];
  kb_plugin_arg args[KB_PLUGIN_MAX_ARGS];
  char what[2][160]; /* "plugin.kernel (CPU entry)", "... (CUDA entry)": made once, named in traces and errors */
} kb_plugin_kernel_ud; /* uservalue 1: the plugin */

static const char *const PLUGIN_TYPES[] = {"tensor", "i64", "f64", NULL};

/* ---- loading ---------------------------------------------------------------- */

static int parse_probe(lua_State *L) {
  const kb_param_type *types[KB_PLUGIN_MAX_ARGS];
  kb_parse_signature(L, "load", 1, lua_tostring(L, 1), types, KB_PLUGIN_MAX_ARGS, PLUGIN_TYPES);
  return 0;
}

/* Checks what the plugin declares before anything of it is used. */
static void check_plugin(lua_State *L, const char *path, const kb_plugin *p) {
  if (p->abi_version != KB_PLUGIN_ABI_VERSION)
    luaL_error(L, "load: plugin '%s' was built for plugin ABI version %d, this kluabench speaks version %d "
                  "(rebuild it against this kluabench's include/kluabench_plugin.h)",
               path, p->abi_version, KB_PLUGIN_ABI_VERSION);
  if (!p->name || p->nkernels < 0 || (p->nkernels > 0 && !p->kernels))
    luaL_error(L, "load: plugin '%s' has no name or an invalid kernel list", path);
  for (int i = 0; i < p->nkernels; i++) {
    const kb_plugin_kernel *k = &p->kernels[i];
    if (!k->name || !k->signature)
      luaL_error(L, "load: plugin '%s': kernel %d has no name or no signature", path, i + 1);
    if (!k->cuda && !k->cpu)
      luaL_error(L, "load: plugin '%s': kernel '%s' has neither a CUDA nor a CPU entry", path, k->name);
    lua_pushcfunction(L, parse_probe);
    lua_pushstring(L, k->signature);
    if (lua_pcall(L, 1, 0, 0) != LUA_OK) {
      const char *m = lua_tostring(L, -1), *sig = m ? strstr(m, "signature: ") : NULL;
      if (sig) lua_pushlstring(L, sig, strlen(sig) - 1); /* without the argerror's ')' */
      else lua_pushfstring(L, "signature (%s)", m ? m : "?");
      luaL_error(L, "load: plugin '%s': kernel '%s' has a bad %s", path, k->name, lua_tostring(L, -1));
    }
  }
}

/*** Opens a C plugin (include/kluabench_plugin.h) and checks its ABI version and signatures.
 *
 * A plugin built for another ABI version is refused with both versions named. The library stays
 * loaded until the process ends.
 *
 * @signature kb.plugin.load(path) -> Plugin
 * @section usercode
 * @example
 *   local p = kb.plugin.load(kb.executable():match("^(.*)/") .. "/plugins/libscale_add.so")
 */
/* kb.plugin.load(path) -> Plugin */
static int l_load(lua_State *L) {
  const char *path = kb_check_cstring(L, 1, "load", "path");
  /* dlopen would wait on a FIFO and misreport a directory */
  struct stat st;
  if (stat(path, &st) == 0 && !S_ISREG(st.st_mode))
    return luaL_error(L, "load: cannot open plugin '%s': %s", path,
                      S_ISDIR(st.st_mode) ? "is a directory"
                      : S_ISFIFO(st.st_mode) ? "is a FIFO, not a regular file"
                                             : "is a device or a socket, not a regular file");
  /* a path without a slash would be searched on the library path */
  const char *open_path = strchr(path, '/') ? path : lua_pushfstring(L, "./%s", path);
  void *h = dlopen(open_path, RTLD_NOW | RTLD_LOCAL);
  if (!h) return luaL_error(L, "load: cannot open plugin '%s': %s", path, dlerror());
  kb_plugin_entry_fn entry;
  *(void **)&entry = dlsym(h, KB_PLUGIN_ENTRY);
  if (!entry) {
    dlclose(h);
    return luaL_error(L, "load: '%s' is not a kluabench plugin (it exports no function %s)", path, KB_PLUGIN_ENTRY);
  }
  const kb_plugin *p = entry();
  if (!p) {
    dlclose(h);
    return luaL_error(L, "load: plugin '%s': %s() returned NULL", path, KB_PLUGIN_ENTRY);
  }
  kb_plugin_ud *u = (kb_plugin_ud *)lua_newuserdatauv(L, sizeof *u, 1);
  u->p = NULL;
  luaL_setmetatable(L, KB_PLUGIN_MT);
  check_plugin(L, path, p); /* raises; the handle stays open (harmless, nothing ran) */
  u->p = p;
  lua_createtable(L, 0, 6);
  lua_pushstring(L, p->name), lua_setfield(L, -2, "name");
  lua_pushstring(L, p->version ? p->version : ""), lua_setfield(L, -2, "version");
  lua_pushinteger(L, p->abi_version), lua_setfield(L, -2, "abi_version");
  lua_pushstring(L, path), lua_setfield(L, -2, "path");
  kb_push_file_sha256(L, path), lua_setfield(L, -2, "sha256");
  /* a library whose file cannot be read back has no digest and is not noted (it was just opened:
   * only a file past KB_READ_MAX or one removed meanwhile) */
  lua_getfield(L, -1, "sha256");
  kb_note_code(L, "plugin", lua_tostring(L, -1), NULL, p->name, path);
  lua_pop(L, 1);
  lua_setiuservalue(L, -2, 1);
  return 1;
}

static kb_plugin_ud *check_plugin_ud(lua_State *L, int arg) {
  kb_plugin_ud *u = (kb_plugin_ud *)luaL_checkudata(L, arg, KB_PLUGIN_MT);
  if (!u->p) luaL_argerror(L, arg, "plugin failed to load");
  return u;
}

/*** One of the plugin's kernels.
 *
 * @signature plugin:kernel(name) -> PluginKernel
 * @section usercode
 * @example
 *   local p = kb.plugin.load(kb.executable():match("^(.*)/") .. "/plugins/libscale_add.so")
 *   local scale_add = p:kernel("scale_add")
 */
/* plugin:kernel(name) -> PluginKernel */
static int p_kernel(lua_State *L) {
  kb_plugin_ud *u = check_plugin_ud(L, 1);
  const char *name = luaL_checkstring(L, 2);
  kb_refuse_nul(L, 2, "kernel", 1, "kernel name");
  const kb_plugin_kernel *k = NULL;
  for (int i = 0; i < u->p->nkernels && !k; i++)
    if (strcmp(u->p->kernels[i].name, name) == 0) k = &u->p->kernels[i];
  if (!k) return luaL_error(L, "bad argument #1 to 'kernel' (plugin '%s' has no kernel '%s')", u->p->name, name);
  kb_plugin_kernel_ud *pk = (kb_plugin_kernel_ud *)lua_newuserdatauv(L, sizeof *pk, 1);
  memset(pk, 0, sizeof *pk);
  luaL_setmetatable(L, KB_PLUGIN_KERNEL_MT);
  pk->k = k;
  pk->plugin = u->p->name;
  pk->nparams = kb_parse_signature(L, "kernel", 1, k->signature, pk->types, KB_PLUGIN_MAX_ARGS, PLUGIN_TYPES);
  for (int cuda = 0; cuda < 2; cuda++)
    snprintf(pk->what[cuda], sizeof pk->what[cuda], "%s.%s (%s entry)", pk->plugin, k->name, cuda ? "CUDA" : "CPU");
  lua_pushvalue(L, 1);
  lua_setiuservalue(L, -2, 1);
  return 1;
}

/*** The names of the plugin's kernels.
 *
 * @signature plugin:kernels() -> {names}
 * @section usercode
 * @example
 *   local p = kb.plugin.load(kb.executable():match("^(.*)/") .. "/plugins/libscale_add.so")
 *   print(table.concat(p:kernels(), ", ")) --> scale_add
 */
/* plugin:kernels() -> {names} in the plugin's order */
static int p_kernels(lua_State *L) {
  kb_plugin_ud *u = check_plugin_ud(L, 1);
  lua_createtable(L, u->p->nkernels, 0);
  for (int i = 0; i < u->p->nkernels; i++) {
    lua_pushstring(L, u->p->kernels[i].name);
    lua_seti(L, -2, i + 1);
  }
  return 1;
}

static void push_info_copy(lua_State *L, int idx) {
  lua_getiuservalue(L, idx, 1);
  kb_push_table_copy(L, -1);
  lua_remove(L, -2);
}

/*** name, version, abi_version, path and sha256 of the library.
 *
 * @signature plugin:info() -> table
 * @section usercode
 * @example
 *   local p = kb.plugin.load(kb.executable():match("^(.*)/") .. "/plugins/libscale_add.so")
 *   print(p:info().sha256)
 */
static int p_info(lua_State *L) {
  check_plugin_ud(L, 1);
  push_info_copy(L, 1);
  return 1;
}

static int p_tostring(lua_State *L) {
  kb_plugin_ud *u = (kb_plugin_ud *)luaL_checkudata(L, 1, KB_PLUGIN_MT);
  lua_pushfstring(L, "kluabench.Plugin(%s)", u->p ? u->p->name : "not loaded");
  return 1;
}

/* ---- calling ------------------------------------------------------------------ */

/* Converts the call's arguments (from stack index 2) into pk->args and
 * returns the device they are on. */
static const kb_backend *pack_args(lua_State *L, kb_plugin_kernel_ud *pk) {
  const kb_backend *dev = NULL;
  int first_tensor = 0;
  for (int i = 0; i < pk->nparams; i++) {
    int arg = i + 2;
    kb_plugin_arg *a = &pk->args[i];
    const char *tn = pk->types[i]->name;
    if (pk->types[i]->cls == KB_P_TENSOR) {
      kb_tensor *t = (kb_tensor *)luaL_testudata(L, arg, KB_TENSOR_MT);
      if (!t) luaL_error(L, "bad argument #%d to '%s' (parameter %d is a tensor, got %s)", arg - 1, pk->k->name,
                         i + 1, luaL_typename(L, arg));
      if (t->freed) luaL_error(L, "bad argument #%d to '%s' (tensor has been freed)", arg - 1, pk->k->name);
      if (dev && t->dev != dev)
        luaL_error(L, "bad argument #%d to '%s' (tensor is on %s, argument #%d on %s)", arg - 1, pk->k->name,
                   t->dev->device, first_tensor - 1, dev->device);
      if (!dev) dev = t->dev, first_tensor = arg;
      kb_capture_note(L, arg);
      a->kind = KB_PLUGIN_TENSOR;
      a->u.tensor.data = t->data;
      a->u.tensor.dtype = (kb_plugin_dtype)t->dtype;
      a->u.tensor.ndim = t->ndim;
      a->u.tensor.numel = t->numel;
      memcpy(a->u.tensor.shape, t->shape, sizeof(int64_t) * (size_t)t->ndim);
    } else if (strcmp(tn, "i64") == 0) {
      int ok;
      a->kind = KB_PLUGIN_I64;
      a->u.i = (int64_t)lua_tointegerx(L, arg, &ok);
      if (!ok) luaL_error(L, "bad argument #%d to '%s' (parameter %d is an integer (i64), got %s)", arg - 1,
                          pk->k->name, i + 1, luaL_typename(L, arg));
    } else {
      int ok;
      a->kind = KB_PLUGIN_F64_SCALAR;
      a->u.f = (double)lua_tonumberx(L, arg, &ok);
      if (!ok) luaL_error(L, "bad argument #%d to '%s' (parameter %d is a number (f64), got %s)", arg - 1,
                          pk->k->name, i + 1, luaL_typename(L, arg));
    }
  }
  return dev ? dev : kb_default_backend();
}

/* An entry's message, as the ABI has it: err[0..PLUGIN_ERR_BYTES), NUL
 * terminated. An entry may break that (fill the buffer without a NUL) or
 * write bytes a terminal would obey (escape sequences, carriage returns):
 * the message is read up to the buffer's end at most and escaped as \xNN.
 * Writes it into msg and returns its length (0: no message). */
static size_t entry_message(char msg[PLUGIN_MSG_BYTES], const char err[PLUGIN_ERR_BYTES]) {
  const char *nul = memchr(err, '\0', PLUGIN_ERR_BYTES);
  size_t n = nul ? (size_t)(nul - err) : PLUGIN_ERR_BYTES - 1;
  size_t len = kb_printable(msg, PLUGIN_MSG_BYTES, err, n);
  if (!nul)
    len += (size_t)snprintf(msg + len, PLUGIN_MSG_BYTES - len,
                            " (the plugin left its message unterminated: cut at %zu bytes)", n);
  return len;
}

/* An entry's call as the backend's run_kernel takes it (kb_kernel_fn): the
 * engine's one launch, whose cpu side puts the call in kb.trace as it does
 * for the built-in kernels. The entry's status is kept for the caller, which
 * words the plugin's failure. */
typedef struct {
  kb_plugin_fn fn;
  kb_plugin_arg *args;
  int n;
  void *stream;
  char *err;
  size_t errlen;
  int rc;
} entry_call;

static const char *run_entry(void *p) {
  entry_call *c = (entry_call *)p;
  c->rc = c->fn(c->args, c->n, c->stream, c->err, c->errlen);
  return NULL;
}

/*** Runs the kernel on the device of its tensors: the CPU twin for cpu tensors, the CUDA entry
 * (queued on the engine's stream) for cuda ones.
 *
 * Arguments are checked against the kernel's signature (tensor, i64, f64). An entry's failure is
 * raised with the plugin's message.
 *
 * @signature pk(args...) | pk:call(args...) -> pk
 * @name pk:call
 * @section usercode
 * @example
 *   local p = kb.plugin.load(kb.executable():match("^(.*)/") .. "/plugins/libscale_add.so")
 *   local scale_add = p:kernel("scale_add")
 *   local x, y, out = kb.randn({8}, "f32", 1), kb.randn({8}, "f32", 2), kb.empty({8}, "f32")
 *   scale_add(out, x, y, 2.0) -- out = 2 x + y
 */
/* pk(args...) / pk:call(args...) -> pk */
static int pk_call(lua_State *L) {
  kb_plugin_kernel_ud *pk = (kb_plugin_kernel_ud *)luaL_checkudata(L, 1, KB_PLUGIN_KERNEL_MT);
  int n = lua_gettop(L) - 1;
  if (n != pk->nparams)
    return luaL_error(L, "bad argument #%d to '%s' (%d arguments given, the kernel takes %d: %s)",
                      n < pk->nparams ? n + 1 : pk->nparams + 1, pk->k->name, n, pk->nparams, pk->k->signature);
  const kb_backend *dev = pack_args(L, pk);
  int cuda = strcmp(dev->kind, "cuda") == 0;
  kb_plugin_fn fn = cuda ? pk->k->cuda : pk->k->cpu;
  if (!fn)
    return luaL_error(L, "%s: plugin '%s' has no %s entry for this kernel (its tensors are on %s)", pk->k->name,
                      pk->plugin, cuda ? "CUDA" : "CPU", dev->device);
  char err[PLUGIN_ERR_BYTES] = "", msg[PLUGIN_MSG_BYTES];
  const char *what = pk->what[cuda];
  entry_call c = {fn, pk->args, pk->nparams, cuda ? dev->stream : NULL, err, sizeof err, 0};
  const char *dead = dev->run_kernel(dev, what, run_entry, &c); /* refused only on a dead context */
  if (dead) return kb_raise(L, dead);
#ifdef KB_WITH_CUDA
  if (cuda) kb_trust_plugin_cuda_ran = 1; /* its host code may have changed the persisting-L2 state */
#endif
  if (c.rc != 0) {
    if (cuda) return kb_raise(L, kb_cuda_external_fail(what, c.rc, NULL, entry_message(msg, err) ? msg : NULL));
    return luaL_error(L, "%s failed: %s", what, entry_message(msg, err) ? msg : "no message");
  }
  lua_settop(L, 1);
  return 1;
}

/*** name, signature, cuda and cpu (whether each entry exists), doc, plugin (plugin:info()).
 *
 * @signature pk:info() -> table
 * @section usercode
 * @example
 *   local p = kb.plugin.load(kb.executable():match("^(.*)/") .. "/plugins/libscale_add.so")
 *   print(p:kernel("scale_add"):info().signature) --> tensor, tensor, tensor, f64
 */
/* pk:info() -> {name, signature, cuda, cpu, doc, plugin = plugin:info()} */
static int pk_info(lua_State *L) {
  kb_plugin_kernel_ud *pk = (kb_plugin_kernel_ud *)luaL_checkudata(L, 1, KB_PLUGIN_KERNEL_MT);
  lua_createtable(L, 0, 6);
  lua_pushstring(L, pk->k->name), lua_setfield(L, -2, "name");
  kb_push_signature(L, pk->types, pk->nparams), lua_setfield(L, -2, "signature");
  lua_pushboolean(L, pk->k->cuda != NULL), lua_setfield(L, -2, "cuda");
  lua_pushboolean(L, pk->k->cpu != NULL), lua_setfield(L, -2, "cpu");
  if (pk->k->doc) lua_pushstring(L, pk->k->doc), lua_setfield(L, -2, "doc");
  lua_getiuservalue(L, 1, 1);
  push_info_copy(L, lua_gettop(L));
  lua_setfield(L, -3, "plugin");
  lua_pop(L, 1);
  return 1;
}

static int pk_tostring(lua_State *L) {
  kb_plugin_kernel_ud *pk = (kb_plugin_kernel_ud *)luaL_checkudata(L, 1, KB_PLUGIN_KERNEL_MT);
  lua_pushfstring(L, "kluabench.PluginKernel(%s.%s(%s))", pk->plugin, pk->k->name, pk->k->signature);
  return 1;
}

static const luaL_Reg plugin_methods[] = {
    {"kernel", p_kernel}, {"kernels", p_kernels}, {"info", p_info}, {NULL, NULL}};
static const luaL_Reg kernel_methods[] = {{"call", pk_call}, {"info", pk_info}, {NULL, NULL}};

/* Adds load to the kb.plugin table on top of the stack. */
void kb_open_plugin(lua_State *L) {
  kb_new_class(L, KB_PLUGIN_MT, plugin_methods, NULL, p_tostring);
  kb_new_class(L, KB_PLUGIN_KERNEL_MT, kernel_methods, NULL, pk_tostring);
  luaL_getmetatable(L, KB_PLUGIN_KERNEL_MT);
  lua_pushcfunction(L, pk_call);
  lua_setfield(L, -2, "__call");
  lua_pop(L, 1);
  lua_pushcfunction(L, l_load);
  lua_setfield(L, -2, "load");
}
