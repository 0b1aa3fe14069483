/* kb.python: Python functions as providers (docs/KERNELS.md, "Python providers").
 *
 *   local m = kb.python.load("providers/scale.py")   -- or a module name: kb.python.load("numpy")
 *   local scale = m:fn("scale")
 *   local y = scale(x, 2.0)                           -- x lent to Python without a copy
 *
 * A callable takes nil, booleans, numbers, strings, tensors and Python objects, and returns what the
 * function returned: nil, booleans, numbers, strings and tensors (anything with __dlpack__: NumPy
 * arrays, torch tensors), several for a tuple, each tensor taken without a copy. A callable made with
 * {returns = "object"} returns the Python object itself as a kluabench.PyObject, which later calls
 * take back (state a provider keeps, such as an autograd graph); a tensor that came from Python goes
 * back as the object it came from. On the cuda backend the call runs with the engine's stream as
 * torch's current stream, so every protocol and the CUPTI trace see what it queues.
 *
 * Each entry starts Python if needed (python_runtime.c) and takes the GIL; the Python part runs under
 * lua_pcall, so that the GIL is given back, and every lend closed, whatever raises. Python exceptions
 * become Lua errors with the last lines of their traceback. Ctrl-C during a call is kluabench's: the
 * interpreter installs no handler (signals.c's hard stop fires when the call returns). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "python.h"

#define PYMOD_MT "kluabench.PyModule"
#define PYFN_MT "kluabench.PyFunction"
#define PYOBJ_MT "kluabench.PyObject"
#define MAX_LENDS 64

/* A module, a function or an object: one reference (NULL once released). PyModule and PyFunction
 * carry their info table as user value 1; a PyFunction its module as user value 2. */
typedef struct {
  PyObject *obj;
  int as_object;  /* PyFunction: returns the result as a PyObject */
  char name[160]; /* PyFunction: "module.function", for messages */
} kb_pyref;

/* ---- entering Python ----------------------------------------------------------------------------- */

/* Starts Python (raising why it cannot), takes the GIL and sweeps old lends: the GIL state to give
 * back with kb_py.PyGILState_Release. */
static int enter(lua_State *L) {
  const char *why = kb_py_start();
  if (why) luaL_error(L, "%s", why);
  int st = kb_py.PyGILState_Ensure();
  static int ready;
  if (!ready) { /* the glue calls these: set once, before anything is lent */
    for (PyMethodDef *m = kb_py_dlpack_methods; m->ml_name; m++) {
      PyObject *f = kb_py.PyCFunction_NewEx(m, NULL, NULL);
      if (!f || kb_py_glue_set(m->ml_name, f) != 0) {
        char msg[512];
        kb_py_take_error(msg, sizeof msg);
        kb_py.PyGILState_Release(st);
        luaL_error(L, "kb.python: cannot set up the glue: %s", msg);
      }
      kb_py.Py_DecRef(f);
    }
    ready = 1;
  }
  kb_py_lend_sweep(L);
  return st;
}

/* Runs inner(ctx, <the values on the stack>) under lua_pcall, with the GIL held (st); then finish(ctx)
 * with the GIL still held, whatever happened; then gives the GIL back and re-raises, with where the Lua
 * caller is. Returns the results of inner, which are all the stack holds then. */
typedef void (*finish_fn)(lua_State *L, void *ctx, int failed);
static int protected_call(lua_State *L, int st, lua_CFunction inner, void *ctx, finish_fn finish) {
  int nargs = lua_gettop(L);
  lua_pushcfunction(L, inner);
  lua_insert(L, 1);
  lua_pushlightuserdata(L, ctx);
  lua_insert(L, 2);
  int status = lua_pcall(L, nargs + 1, LUA_MULTRET, 0);
  if (finish) finish(L, ctx, status != LUA_OK);
  kb_py.PyGILState_Release(st);
  if (status != LUA_OK) {
    if (lua_type(L, -1) == LUA_TSTRING) {
      luaL_where(L, 1);
      lua_insert(L, -2);
      lua_concat(L, 2);
    }
    return lua_error(L);
  }
  return lua_gettop(L);
}

/* A Python str as a Lua string, or nil (None, or text that cannot be encoded). */
static void push_str(lua_State *L, PyObject *s) {
  Py_ssize_t n = 0;
  const char *p = s && s != kb_py.none ? kb_py.PyUnicode_AsUTF8AndSize(s, &n) : NULL;
  if (p) lua_pushlstring(L, p, (size_t)n);
  else lua_pushnil(L);
  if (!p) kb_py.PyErr_Clear();
}

static PyObject *bytes_of(const char *s, size_t n) { return kb_py.PyBytes_FromStringAndSize(s, (Py_ssize_t)n); }

/* Calls the glue's function name with args (stolen); raises "<what>: <the exception>" when it fails. */
static PyObject *glue_call(lua_State *L, const char *name, PyObject *args, const char *what) {
  PyObject *fn = kb_py_glue(name);
  PyObject *r = fn && args ? kb_py.PyObject_CallObject(fn, args) : NULL;
  if (args) kb_py.Py_DecRef(args);
  if (!r) {
    char msg[3000];
    kb_py_take_error(msg, sizeof msg);
    luaL_error(L, "%s: %s", what, msg);
  }
  return r;
}

/* ---- the Lua types ------------------------------------------------------------------------------- */

static kb_pyref *push_ref(lua_State *L, const char *mt, PyObject *obj, int user_values) {
  kb_pyref *r = (kb_pyref *)lua_newuserdatauv(L, sizeof *r, user_values);
  r->obj = NULL;
  r->as_object = 0;
  r->name[0] = 0;
  luaL_setmetatable(L, mt);
  kb_py.Py_IncRef(obj);
  r->obj = obj;
  return r;
}

static kb_pyref *check_ref(lua_State *L, int arg, const char *mt) {
  kb_pyref *r = (kb_pyref *)luaL_checkudata(L, arg, mt);
  if (!r->obj) luaL_argerror(L, arg, "Python object has been freed");
  return r;
}

/* __gc, __close and free(): gives the reference back; safe twice. */
static int ref_release(lua_State *L) {
  kb_pyref *r = (kb_pyref *)lua_touserdata(L, 1);
  if (r && r->obj) {
    int st = kb_py.PyGILState_Ensure();
    kb_py.Py_DecRef(r->obj);
    r->obj = NULL;
    kb_py.PyGILState_Release(st);
  }
  return 0;
}

static int ref_tostring(lua_State *L) {
  kb_pyref *r = (kb_pyref *)lua_touserdata(L, 1);
  const char *kind = luaL_getmetafield(L, 1, "__name") ? lua_tostring(L, -1) : "kluabench.PyObject";
  if (!r || !r->obj) {
    lua_pushfstring(L, "%s (freed)", kind);
    return 1;
  }
  if (lua_getiuservalue(L, 1, 1) == LUA_TTABLE && lua_getfield(L, -1, "name") == LUA_TSTRING) {
    lua_pushfstring(L, "%s: %s", kind, lua_tostring(L, -1));
    return 1;
  }
  int st = kb_py.PyGILState_Ensure();
  PyObject *args = kb_py.PyTuple_New(1);
  PyObject *s = NULL;
  if (args) {
    kb_py.Py_IncRef(r->obj);
    kb_py.PyTuple_SetItem(args, 0, r->obj);
    PyObject *fn = kb_py_glue("describe_object");
    s = fn ? kb_py.PyObject_CallObject(fn, args) : NULL;
    kb_py.Py_DecRef(args);
  }
  Py_ssize_t n = 0;
  const char *p = s ? kb_py.PyUnicode_AsUTF8AndSize(s, &n) : NULL;
  char text[600];
  if (p) kb_printable(text, sizeof text, p, (size_t)n);
  else snprintf(text, sizeof text, "?");
  kb_py.PyErr_Clear();
  if (s) kb_py.Py_DecRef(s);
  kb_py.PyGILState_Release(st);
  lua_pushfstring(L, "%s: %s", kind, text);
  return 1;
}

/* ---- kb.python.available, kb.python.info --------------------------------------------------------- */

/*** Whether Python can run here: true, or false and why not (which interpreter, what is missing).
 *
 * Starts the interpreter on first use (KLUABENCH_PYTHON, else `python3` on PATH), as every function of
 * kb.python does; it never raises. A script that offers a Python provider asks this first and skips
 * the provider, saying why, where there is no usable Python.
 *
 * @signature kb.python.available() -> true | false, why
 * @section usercode
 * @example
 *   local ok, why = kb.python.available()
 *   if not ok then print("no Python providers here: " .. why) end
 */
static int l_available(lua_State *L) {
  const char *why = kb_py_start();
  lua_pushboolean(L, why == NULL);
  if (!why) return 1;
  lua_pushstring(L, why);
  return 2;
}

/*** Which Python kb.python runs: {asked, executable, version, library, home, prefix}.
 *
 * asked is KLUABENCH_PYTHON or "python3"; executable and prefix are that interpreter's (a venv's own),
 * version its "3.X.Y", library the libpython opened, home the PYTHONHOME it was started with (its base
 * prefix). Raises, saying why, where there is no usable Python.
 *
 * @signature kb.python.info() -> table
 * @section usercode
 * @example
 *   if kb.python.available() then print(kb.python.info().executable) end
 */
static int l_info(lua_State *L) {
  const char *why = kb_py_start();
  if (why) return luaL_error(L, "%s", why);
  const kb_py_runtime *rt = kb_py_runtime_info();
  lua_createtable(L, 0, 6);
  const struct {
    const char *k, *v;
  } f[] = {{"asked", rt->asked}, {"executable", rt->executable}, {"version", rt->version},
           {"library", rt->library}, {"home", rt->home}, {"prefix", rt->prefix}};
  for (size_t i = 0; i < sizeof f / sizeof f[0]; i++) {
    lua_pushstring(L, f[i].v);
    lua_setfield(L, -2, f[i].k);
  }
  return 1;
}

/* ---- kb.python.load ------------------------------------------------------------------------------ */

/* The versions the glue reads for mod (names: a tuple of package names, or NULL for those its globals
 * use): pushes a table name -> version, then the text "python 3.X.Y\nname version\n..." they make. */
static void push_versions(lua_State *L, PyObject *mod, PyObject *names) {
  PyObject *args = kb_py.PyTuple_New(2);
  if (args) {
    kb_py.Py_IncRef(mod);
    kb_py.PyTuple_SetItem(args, 0, mod);
    PyObject *n = names ? names : kb_py.none;
    kb_py.Py_IncRef(n);
    kb_py.PyTuple_SetItem(args, 1, n);
  }
  PyObject *v = glue_call(L, "versions", args, "kb.python: cannot read the versions of its packages");
  Py_ssize_t count = kb_py.PyTuple_Size(v);
  luaL_checkstack(L, (int)count + 4, "kb.python: too many packages");
  lua_newtable(L);
  lua_pushfstring(L, "python %s\n", kb_py_runtime_info()->version);
  for (Py_ssize_t i = 0; i < count; i++) {
    PyObject *pair = kb_py.PyTuple_GetItem(v, i);
    Py_ssize_t nn = 0, nv = 0;
    const char *name = kb_py.PyUnicode_AsUTF8AndSize(kb_py.PyTuple_GetItem(pair, 0), &nn);
    const char *version = name ? kb_py.PyUnicode_AsUTF8AndSize(kb_py.PyTuple_GetItem(pair, 1), &nv) : NULL;
    if (!version) {
      kb_py.PyErr_Clear();
      lua_pushliteral(L, "");
      continue;
    }
    lua_pushlstring(L, version, (size_t)nv);
    lua_setfield(L, -3 - (int)i, name); /* the table, below the text's pieces */
    lua_pushfstring(L, "%s %s\n", name, version);
  }
  kb_py.Py_DecRef(v);
  lua_concat(L, (int)count + 1);
}

static int load_inner(lua_State *L) {
  PyObject **r = (PyObject **)lua_touserdata(L, 1);
  size_t len;
  const char *spec = lua_tolstring(L, 2, &len);
  int is_path = strchr(spec, '/') != NULL || (len > 3 && strcmp(spec + len - 3, ".py") == 0); /* read by l_load */
  PyObject *args = kb_py.PyTuple_New(2);
  if (args) {
    kb_py.PyTuple_SetItem(args, 0, bytes_of(spec, len));
    kb_py.PyTuple_SetItem(args, 1, kb_py.PyBool_FromLong(is_path));
  }
  lua_pushfstring(L, "kb.python.load: cannot load '%s'", spec);
  *r = glue_call(L, "load", args, lua_tostring(L, -1)); /* released by load_finish */
  lua_pop(L, 1);
  PyObject *mod = kb_py.PyTuple_GetItem(*r, 0);
  push_ref(L, PYMOD_MT, mod, 1);
  int ud = lua_gettop(L);
  lua_createtable(L, 0, 9);
  int info = ud + 1;
  push_str(L, kb_py.PyTuple_GetItem(*r, 1));
  lua_setfield(L, info, "name");
  push_str(L, kb_py.PyTuple_GetItem(*r, 2));
  lua_setfield(L, info, "path");
  lua_getfield(L, info, "path");
  lua_Integer bytes = kb_push_file_sha256(L, lua_tostring(L, -1)); /* nil when unreadable */
  lua_setfield(L, info, "sha256");
  if (bytes >= 0) lua_pushinteger(L, bytes), lua_setfield(L, info, "bytes");
  lua_pop(L, 1);
  lua_pushstring(L, kb_py_runtime_info()->version);
  lua_setfield(L, info, "python");
  lua_pushstring(L, kb_py_runtime_info()->executable);
  lua_setfield(L, info, "executable");
  /* the code the module is: its source, and (as its image) the interpreter and its packages' versions */
  push_versions(L, mod, NULL);
  size_t tlen;
  const char *text = lua_tolstring(L, -1, &tlen);
  char hex[65];
  KB_TRY(L, kb_sha256_hex(text, tlen, hex));
  lua_pop(L, 1);
  lua_setfield(L, info, "packages");
  lua_pushfstring(L, "sha256:%s", hex);
  lua_setfield(L, info, "environment_sha256");
  lua_getfield(L, info, "sha256");
  lua_getfield(L, info, "environment_sha256");
  lua_getfield(L, info, "name");
  lua_getfield(L, info, "path");
  kb_note_code(L, "python", lua_tostring(L, -4), lua_tostring(L, -3), lua_tostring(L, -2), lua_tostring(L, -1));
  lua_pop(L, 4);
  lua_setiuservalue(L, ud, 1);
  return 1;
}

static void release_result(lua_State *L, void *ctx, int failed) {
  PyObject **r = ctx;
  if (*r) kb_py.Py_DecRef(*r);
}

/*** Imports a Python module: a file (a path, or a name ending in .py) or a module by name.
 *
 * A file is imported as the module its stem names, its folder put first on sys.path (as `python
 * file.py` does); a second load of the same file gives the same module. The module's info: name,
 * path, sha256 and bytes of its file, python (version), executable, packages (the versions of the
 * packages its globals use: NumPy's, torch's, ...) and environment_sha256 (of the interpreter's and
 * those versions). kb.loaded_code() lists it (kind "python"), so that the record of a script that
 * loads it covers its source and those versions. Which Python: kb.python.info(). An import that fails
 * raises with Python's exception and the last lines of its traceback.
 *
 * @signature kb.python.load(path_or_name) -> PyModule
 * @section usercode
 * @example
 *   if kb.python.available() then
 *     local math = kb.python.load("math")
 *     print(math:fn("sqrt")(2.0)) --> 1.4142135623731
 *   end
 */
static int l_load(lua_State *L) {
  size_t len;
  const char *spec = kb_check_cstring(L, 1, "load", "module path or name");
  lua_settop(L, 1);
  len = lua_rawlen(L, 1);
  if (strchr(spec, '/') != NULL || (len > 3 && strcmp(spec + len - 3, ".py") == 0)) {
    const char *why = kb_read_file(L, spec, KB_READ_MAX); /* a file that cannot be read: no Python needed to say so */
    if (why) return luaL_error(L, "kb.python.load: cannot read '%s': %s", spec, why);
    lua_pop(L, 1);
  }
  int st = enter(L);
  PyObject *r = NULL;
  return protected_call(L, st, load_inner, &r, release_result);
}

/* ---- modules ------------------------------------------------------------------------------------- */

static int fn_inner(lua_State *L) {
  PyObject **r = (PyObject **)lua_touserdata(L, 1);
  kb_pyref *m = (kb_pyref *)lua_touserdata(L, 2);
  size_t len;
  const char *name = lua_tolstring(L, 3, &len);
  PyObject *args = kb_py.PyTuple_New(2);
  if (args) {
    kb_py.Py_IncRef(m->obj);
    kb_py.PyTuple_SetItem(args, 0, m->obj);
    kb_py.PyTuple_SetItem(args, 1, kb_py.PyUnicode_FromStringAndSize(name, (Py_ssize_t)len));
  }
  *r = glue_call(L, "function", args, "bad argument #1 to 'fn'");
  kb_pyref *f = push_ref(L, PYFN_MT, *r, 2);
  f->as_object = lua_toboolean(L, 4);
  lua_createtable(L, 0, 2);
  lua_pushvalue(L, 3);
  lua_setfield(L, -2, "name");
  lua_getiuservalue(L, 2, 1);
  lua_getfield(L, -1, "name");
  lua_remove(L, -2);
  snprintf(f->name, sizeof f->name, "%s.%s", lua_tostring(L, -1) ? lua_tostring(L, -1) : "?", name);
  lua_setfield(L, -2, "module");
  lua_setiuservalue(L, -2, 1);
  lua_pushvalue(L, 2);
  lua_setiuservalue(L, -2, 2);
  return 1;
}

/*** One of the module's functions (any callable attribute), as a callable a benchmark's run and check
 * call like a kernel.
 *
 * opts.returns: "values" (default: None, booleans, numbers, strings and tensors, several for a tuple;
 * anything else is an error) or "object" (the result itself as a PyObject, for state the provider
 * keeps in Python between calls, such as an autograd graph; later calls take it back). A name the
 * module has not is an error listing the callables it has.
 *
 * @signature pymod:fn(name [, opts]) -> PyFunction
 * @section usercode
 * @example
 *   if kb.python.available() then
 *     local hypot = kb.python.load("math"):fn("hypot")
 *     print(hypot(3, 4)) --> 5.0
 *   end
 */
static int m_fn(lua_State *L) {
  check_ref(L, 1, PYMOD_MT);
  kb_check_cstring(L, 2, "fn", "function name");
  int as_object = 0;
  if (!lua_isnoneornil(L, 3)) {
    if (!lua_istable(L, 3)) return luaL_error(L, "bad argument #2 to 'fn' (table of options expected, got %s)", luaL_typename(L, 3));
    lua_getfield(L, 3, "returns");
    const char *r = lua_tostring(L, -1);
    if (!lua_isnil(L, -1) && (!r || (strcmp(r, "values") != 0 && strcmp(r, "object") != 0)))
      return luaL_error(L, "bad argument #2 to 'fn' (opts.returns must be \"values\" or \"object\")");
    as_object = r && strcmp(r, "object") == 0;
    lua_pop(L, 1);
  }
  lua_settop(L, 2);
  lua_pushboolean(L, as_object);
  int st = enter(L);
  PyObject *r = NULL;
  return protected_call(L, st, fn_inner, &r, release_result);
}

/*** The module's info: name, path, sha256, bytes, python, executable, packages, environment_sha256
 * (kb.python.load says what each is). A fresh copy.
 *
 * @signature pymod:info() -> table
 * @section usercode
 * @example
 *   if kb.python.available() then print(kb.python.load("json"):info().path) end
 */
static int m_info(lua_State *L) {
  check_ref(L, 1, PYMOD_MT);
  lua_getiuservalue(L, 1, 1);
  kb_push_table_copy(L, -1);
  return 1;
}

/* ---- calls ---------------------------------------------------------------------------------------- */

typedef struct {
  PyObject *args, *res;
  int nlends;
  kb_py_lend *lends[MAX_LENDS];
  int lend_arg[MAX_LENDS]; /* the argument each lend is (1: the first after the function) */
  int nown;
  PyObject *own[MAX_LENDS]; /* tensors that came from Python, passed back as their objects (borrowed) */
  int own_arg[MAX_LENDS];
  int kept;                /* the first argument Python kept a view of, or 0 */
} call_ctx;

/* "module.function" of the PyFunction at idx, pushed. */
static void push_fn_name(lua_State *L, int idx) {
  lua_pushstring(L, ((kb_pyref *)lua_touserdata(L, idx))->name);
}

/* The Lua value at idx as a new Python reference; argument number n for messages. */
static PyObject *to_python(lua_State *L, call_ctx *c, int idx, int n) {
  switch (lua_type(L, idx)) {
    case LUA_TNIL:
      kb_py.Py_IncRef(kb_py.none);
      return kb_py.none;
    case LUA_TBOOLEAN:
      return kb_py.PyBool_FromLong(lua_toboolean(L, idx));
    case LUA_TNUMBER:
      if (lua_isinteger(L, idx)) return kb_py.PyLong_FromLongLong(lua_tointeger(L, idx));
      return kb_py.PyFloat_FromDouble(lua_tonumber(L, idx));
    case LUA_TSTRING: {
      size_t len;
      const char *s = lua_tolstring(L, idx, &len);
      PyObject *o = kb_py.PyUnicode_FromStringAndSize(s, (Py_ssize_t)len);
      if (!o) {
        kb_py.PyErr_Clear();
        luaL_error(L, "bad argument #%d to 'call' (a string that is not UTF-8 text: Python takes str)", n);
      }
      return o;
    }
    case LUA_TUSERDATA: {
      kb_tensor *t = (kb_tensor *)luaL_testudata(L, idx, KB_TENSOR_MT);
      if (t) {
        if (t->freed) luaL_error(L, "bad argument #%d to 'call' (tensor has been freed)", n);
        kb_capture_note(L, idx); /* a call captured in a CUDA graph keeps it */
        PyObject *own = kb_py_tensor_object(t);
        if (c->nlends + c->nown == MAX_LENDS)
          luaL_error(L, "bad argument #%d to 'call' (at most %d tensors in one call)", n, MAX_LENDS);
        if (own) { /* Python's own: it goes back as the object it came from */
          c->own_arg[c->nown] = n;
          c->own[c->nown++] = own;
          kb_py.Py_IncRef(own);
          return own;
        }
        PyObject *w = NULL;
        c->lend_arg[c->nlends] = n;
        c->lends[c->nlends++] = kb_py_lend_open(L, idx, &w);
        if (!w) {
          char msg[1000];
          kb_py_take_error(msg, sizeof msg);
          luaL_error(L, "bad argument #%d to 'call' (cannot lend the tensor to Python: %s)", n, msg);
        }
        return w;
      }
      kb_pyref *r = (kb_pyref *)luaL_testudata(L, idx, PYOBJ_MT);
      if (!r) r = (kb_pyref *)luaL_testudata(L, idx, PYMOD_MT);
      if (!r) r = (kb_pyref *)luaL_testudata(L, idx, PYFN_MT);
      if (r) {
        if (!r->obj) luaL_error(L, "bad argument #%d to 'call' (Python object has been freed)", n);
        kb_capture_keep(L, idx); /* what a captured call's device work belongs to lives as long as the graph */
        kb_py.Py_IncRef(r->obj);
        return r->obj;
      }
      break; /* another userdata */
    }
    default:
      break;
  }
  luaL_error(L, "bad argument #%d to 'call' (%s cannot be passed to Python: nil, booleans, numbers, strings, "
                "tensors and Python objects can)", n, luaL_typename(L, idx));
  return NULL;
}

/* The result item r (kind, value[, object]) of result number i, pushed. */
static void push_result(lua_State *L, call_ctx *c, PyObject *r, int i, int base) {
  long long kind = kb_py.PyLong_AsLongLong(kb_py.PyTuple_GetItem(r, 0));
  PyObject *v = kb_py.PyTuple_GetItem(r, 1);
  switch (kind) {
    case 0: lua_pushnil(L); return;
    case 1: lua_pushboolean(L, (int)kb_py.PyLong_AsLongLong(v)); return;
    case 2: lua_pushinteger(L, (lua_Integer)kb_py.PyLong_AsLongLong(v)); return;
    case 3: lua_pushnumber(L, kb_py.PyFloat_AsDouble(v)); return;
    case 4: push_str(L, v); return;
    default: break;
  }
  PyObject *obj = kb_py.PyTuple_GetItem(r, 2);
  for (int k = 0; k < c->nown; k++) {
    if (c->own[k] == obj) { /* a tensor from Python given back: that tensor */
      lua_pushvalue(L, base + c->own_arg[k]);
      return;
    }
  }
  int exact;
  int j = kb_py_lend_find(v, c->lends, c->nlends, &exact);
  if (j >= 0 && exact) { /* it returned an argument (worked in place): that tensor itself */
    lua_pushvalue(L, base + c->lend_arg[j]);
    return;
  }
  if (j >= 0) {
    push_fn_name(L, base);
    luaL_error(L, "kb.python: %s returned a view of argument #%d (a part of it, or another shape or dtype) as "
                  "result %d: return the argument itself, or a copy (x.clone(), x.copy())", lua_tostring(L, -1),
               c->lend_arg[j], i);
  }
  char why[600];
  if (kb_py_take_dlpack(L, v, obj, why, sizeof why)) {
    push_fn_name(L, base);
    luaL_error(L, "kb.python: %s returned result %d that kluabench cannot take as a tensor: %s", lua_tostring(L, -1),
               i, why);
  }
}

static int call_inner(lua_State *L) {
  call_ctx *c = (call_ctx *)lua_touserdata(L, 1);
  const int base = 2; /* the PyFunction; its arguments follow */
  kb_pyref *f = (kb_pyref *)lua_touserdata(L, base);
  int nargs = lua_gettop(L) - base;
  c->args = kb_py.PyTuple_New(nargs);
  if (!c->args) luaL_error(L, "kb.python: out of memory");
  for (int i = 1; i <= nargs; i++) kb_py.PyTuple_SetItem(c->args, i - 1, to_python(L, c, base + i, i));
  PyObject *call = kb_py.PyTuple_New(3);
  if (!call) luaL_error(L, "kb.python: out of memory");
  kb_py.Py_IncRef(f->obj);
  kb_py.PyTuple_SetItem(call, 0, f->obj);
  kb_py.Py_IncRef(c->args);
  kb_py.PyTuple_SetItem(call, 1, c->args);
  kb_py.PyTuple_SetItem(call, 2, kb_py.PyBool_FromLong(f->as_object));
  fflush(stdout); /* what Lua printed comes before what Python prints (unbuffered) */
  static PyObject *glue_fn;
  if (!glue_fn) glue_fn = kb_py_glue("call");
  c->res = glue_fn ? kb_py.PyObject_CallObject(glue_fn, call) : NULL;
  kb_py.Py_DecRef(call);
  if (!c->res) {
    char msg[3000];
    kb_py_take_error(msg, sizeof msg);
    luaL_error(L, "%s: %s", f->name, msg);
  }
  PyObject *value = kb_py.PyTuple_GetItem(c->res, 1);
  if (kb_py.PyLong_AsLongLong(kb_py.PyTuple_GetItem(c->res, 0)) == 0) {
    push_fn_name(L, base);
    Py_ssize_t n = 0;
    const char *s = kb_py.PyUnicode_AsUTF8AndSize(value, &n);
    char msg[3000];
    kb_py_printable(msg, sizeof msg, s ? s : "?", s ? (size_t)n : 1);
    if (strncmp(msg, "result ", 7) == 0) /* a result the glue could not read: what a provider returns */
      luaL_error(L, "kb.python: %s returned what kluabench cannot take: %s (a Python provider returns None, "
                    "booleans, numbers, strings or tensors: objects with __dlpack__, such as NumPy arrays and "
                    "torch tensors; or a tuple of them)", lua_tostring(L, -1), msg);
    luaL_error(L, "kb.python: %s raised %s", lua_tostring(L, -1), msg);
  }
  int top = lua_gettop(L);
  if (f->as_object) {
    if (value == kb_py.none) lua_pushnil(L);
    else push_ref(L, PYOBJ_MT, value, 0);
    return 1;
  }
  Py_ssize_t n = kb_py.PyTuple_Size(value);
  luaL_checkstack(L, (int)n + 8, "kb.python: too many results");
  for (Py_ssize_t i = 0; i < n; i++) push_result(L, c, kb_py.PyTuple_GetItem(value, i), (int)i + 1, base);
  return lua_gettop(L) - top;
}

/* After the call (the GIL still held): drops the arguments and the results' capsules (a Tensor goes,
 * an export nobody took is deleted), then closes every lend. */
static void call_finish(lua_State *L, void *ctx, int failed) {
  call_ctx *c = ctx;
  if (c->args) kb_py.Py_DecRef(c->args);
  if (c->res) kb_py.Py_DecRef(c->res);
  c->args = c->res = NULL;
  for (int i = 0; i < c->nlends; i++) {
    if (!kb_py_lend_close(L, c->lends[i]) && !c->kept) c->kept = c->lend_arg[i];
  }
}

/*** Calls the Python function with these arguments; returns what it returned.
 *
 * Arguments: nil (None), booleans, numbers (int or float), strings (str), Python objects, and tensors:
 * a kluabench tensor is lent for the call (the glue's Tensor: numpy.from_dlpack and torch.from_dlpack
 * view it without a copy; numpy.asarray too, writable, for a cpu f16/f32/f64 tensor); a tensor that
 * came from Python goes back as that object. A view of a lent tensor is valid during the call only:
 * a function that keeps one (a global, a returned view) gets an error, and the tensor stays alive,
 * with free() refused, until Python drops it. Results: see pymod:fn. A tensor result is taken without
 * a copy (DLPack): cpu or the engine's CUDA device, bf16/f16/f32/f64, contiguous, 16-byte aligned;
 * one that is an argument comes back as that tensor. On the cuda backend the call runs with the
 * engine's stream as torch's current stream (set when torch is imported).
 *
 * `pyfn(...)` is the same call.
 *
 * @signature pyfn:call(...) -> results
 * @section usercode
 * @example
 *   if kb.python.available() then
 *     local floor = kb.python.load("math"):fn("floor")
 *     print(floor(2.5), floor:call(-0.5)) --> 2  -1
 *   end
 */
static int f_call(lua_State *L) {
  char name[sizeof((kb_pyref *)0)->name];
  memcpy(name, check_ref(L, 1, PYFN_MT)->name, sizeof name);
  kb_capture_keep(L, 1);
  int st = enter(L);
  call_ctx c;
  memset(&c, 0, sizeof c);
  int n = protected_call(L, st, call_inner, &c, call_finish);
  if (c.kept) {
    luaL_where(L, 1);
    lua_pushfstring(L, "kb.python: %s kept a view of argument #%d (a kluabench tensor) after its call returned: a "
                       "view of a lent tensor is valid only during the call (copy what you keep: x.clone(), "
                       "numpy.array(x)); the tensor stays alive, and free() refuses it, until Python drops the view",
                    name, c.kept);
    lua_concat(L, 2);
    return lua_error(L);
  }
  return n;
}

/*** What a record says of the function: {name, module, python = {module, path, sha256, bytes,
 * version, executable, packages}}; packages maps each package to its version ("unknown" where none
 * can be read): those packages lists (import names), else those the module's globals use.
 *
 * implementation.user takes it (a provider's implementation hook returns it): the record's
 * ImplementationRevision names the module and the function, its source digest is the file's, and
 * its requirements carry Python's and the packages' versions, so that either changing changes the
 * implementation digest.
 *
 * @signature pyfn:info([packages]) -> table
 * @section usercode
 * @example
 *   if kb.python.available() then
 *     local info = kb.python.load("json"):fn("dumps"):info()
 *     print(info.module, info.name, info.python.version)
 *   end
 */
static int info_inner(lua_State *L) {
  PyObject **names = (PyObject **)lua_touserdata(L, 1);
  lua_getiuservalue(L, 2, 2); /* the module */
  kb_pyref *m = (kb_pyref *)lua_touserdata(L, -1);
  int mod = lua_gettop(L);
  if (lua_istable(L, 3)) {
    lua_Integer n = luaL_len(L, 3);
    *names = kb_py.PyTuple_New((Py_ssize_t)n);
    if (!*names) luaL_error(L, "kb.python: out of memory");
    for (lua_Integer i = 1; i <= n; i++) {
      lua_geti(L, 3, i);
      size_t len;
      const char *s = lua_tolstring(L, -1, &len);
      if (lua_type(L, -1) != LUA_TSTRING) luaL_error(L, "bad argument #1 to 'info' (packages[%d] must be a string)", (int)i);
      kb_py.PyTuple_SetItem(*names, (Py_ssize_t)(i - 1), kb_py.PyUnicode_FromStringAndSize(s, (Py_ssize_t)len));
      lua_pop(L, 1);
    }
  }
  lua_getiuservalue(L, 2, 1);
  lua_getfield(L, -1, "name");
  lua_getfield(L, -2, "module");
  lua_createtable(L, 0, 3);
  int out = lua_gettop(L);
  lua_pushvalue(L, out - 2);
  lua_setfield(L, out, "name");
  lua_pushvalue(L, out - 1);
  lua_setfield(L, out, "module");
  lua_getiuservalue(L, mod, 1);
  kb_push_table_copy(L, -1);
  lua_remove(L, -2);
  lua_pushvalue(L, out - 1);
  lua_setfield(L, -2, "module");
  lua_pushnil(L);
  lua_setfield(L, -2, "name");
  lua_pushnil(L);
  lua_setfield(L, -2, "environment_sha256");
  push_versions(L, m->obj, *names);
  lua_pop(L, 1);
  lua_setfield(L, -2, "packages");
  lua_pushstring(L, kb_py_runtime_info()->version);
  lua_setfield(L, -2, "version");
  lua_pushnil(L);
  lua_setfield(L, -2, "python");
  lua_setfield(L, out, "python");
  lua_pushvalue(L, out);
  return 1;
}

static int f_info(lua_State *L) {
  check_ref(L, 1, PYFN_MT);
  if (!lua_isnoneornil(L, 2)) luaL_checktype(L, 2, LUA_TTABLE);
  lua_settop(L, 2);
  int st = enter(L);
  PyObject *names = NULL;
  return protected_call(L, st, info_inner, &names, release_result);
}

/*** Gives the Python object back now (it is freed when nothing else in Python holds it); safe twice.
 * Also `__gc` and `__close`.
 *
 * @signature pyobj:free()
 * @section usercode
 * @example
 *   if kb.python.available() then
 *     local make = kb.python.load("collections"):fn("OrderedDict", {returns = "object"})
 *     local d = make()
 *     print(d) --> kluabench.PyObject: collections.OrderedDict: OrderedDict()
 *     d:free()
 *   end
 */
static int o_free(lua_State *L) {
  luaL_checkudata(L, 1, PYOBJ_MT);
  return ref_release(L);
}

void kb_open_python(lua_State *L) {
  static const luaL_Reg module_methods[] = {{"fn", m_fn}, {"info", m_info}, {NULL, NULL}};
  static const luaL_Reg function_methods[] = {{"call", f_call}, {"info", f_info}, {NULL, NULL}};
  static const luaL_Reg object_methods[] = {{"free", o_free}, {NULL, NULL}};
  kb_new_class(L, PYMOD_MT, module_methods, ref_release, ref_tostring);
  kb_new_class(L, PYFN_MT, function_methods, ref_release, ref_tostring);
  luaL_getmetatable(L, PYFN_MT);
  lua_pushcfunction(L, f_call);
  lua_setfield(L, -2, "__call");
  lua_pop(L, 1);
  kb_new_class(L, PYOBJ_MT, object_methods, ref_release, ref_tostring);
  static const luaL_Reg functions[] = {{"available", l_available}, {"info", l_info}, {"load", l_load}, {NULL, NULL}};
  luaL_setfuncs(L, functions, 0);
}
