/* kb.cuda.compile: CUDA C++ source compiled at run time by NVRTC into a
 * kluabench.Module (module.c), with a compile cache.
 *
 * NVRTC is opened with dlopen on first use (as NVML and CUPTI are) and never
 * linked; it needs no GPU, so compiling and its errors work on the cpu
 * backend wherever NVRTC is installed. Where it is not, kb.cuda.nvrtc_version()
 * and every compile say where it was looked for.
 *
 * The cache: $KLUABENCH_CACHE/nvrtc, else $XDG_CACHE_HOME/kluabench/nvrtc,
 * else ~/.cache/kluabench/nvrtc (the directory stdlib/kluabench/measure/ceilings.lua
 * keeps its cache in), one entry per SHA-256 of (NVRTC version, arch, options, name
 * expressions, headers, the files under the include directories, source):
 * <key>.ptx, <key>.cubin, <key>.names,
 * <key>.log, and <key>.sha256, the SHA-256 of each of them in sha256sum's
 * format. The digests are written last, so an entry without them is
 * incomplete and ignored; an entry whose files do not match them (truncated,
 * emptied, overwritten) is compiled again and written anew, and
 * m:info().cache says "rebuilt", with cache_problem saying why.
 *
 * A header NVRTC reads from disk (#include through opts.include, -I or
 * --include-path= in opts.options, or a --pre-include file) is part of what
 * it compiles, so its content is part of the key: every regular file under
 * each include directory is hashed on every compile (NVRTC cannot say which
 * files it opened). Editing a header is then a miss, never a hit that runs
 * the old code. Include directories holding more than INCLUDE_MAX_FILES
 * files or INCLUDE_MAX_BYTES bytes are not hashed: that compile is not
 * cached (cache "off", cache_problem says why). */
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "usercode.h"

/* ---- NVRTC, declared by hand (nvrtc.h) ------------------------------------ */

typedef int nvrtcResult;
typedef struct _nvrtcProgram *nvrtcProgram;
enum { NVRTC_SUCCESS = 0, NVRTC_ERROR_COMPILATION = 6 };

static struct {
  int state; /* 0 not tried, 1 usable, -1 failed */
  char why[1024];
  char path[512];    /* the library opened */
  char include[512]; /* the CUDA include directory beside it, "" if none */
  int major, minor;
  void *lib;
  const char *(*error_string)(nvrtcResult);
  nvrtcResult (*version)(int *, int *);
  nvrtcResult (*create)(nvrtcProgram *, const char *, const char *, int, const char *const *,
                        const char *const *);
  nvrtcResult (*destroy)(nvrtcProgram *);
  nvrtcResult (*compile)(nvrtcProgram, int, const char *const *);
  nvrtcResult (*log_size)(nvrtcProgram, size_t *);
  nvrtcResult (*log)(nvrtcProgram, char *);
  nvrtcResult (*ptx_size)(nvrtcProgram, size_t *);
  nvrtcResult (*ptx)(nvrtcProgram, char *);
  nvrtcResult (*cubin_size)(nvrtcProgram, size_t *); /* NULL before NVRTC 11.1 */
  nvrtcResult (*cubin)(nvrtcProgram, char *);
  nvrtcResult (*add_name)(nvrtcProgram, const char *);
  nvrtcResult (*lowered_name)(nvrtcProgram, const char *, const char **);
} nv;

/* Where NVRTC is looked for, in order, after $KLUABENCH_NVRTC. */
static const char *const NVRTC_NAMES[] = {"libnvrtc.so", "libnvrtc.so.13", "libnvrtc.so.12",
                                          "libnvrtc.so.11.2", NULL};
static const char *const CUDA_DIRS[] = {"CUDA_HOME", "CUDA_PATH", NULL};

static void *try_open(const char *path) {
  void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (h) snprintf(nv.path, sizeof nv.path, "%s", path);
  return h;
}

static void *open_nvrtc(void) {
  const char *env = getenv("KLUABENCH_NVRTC");
  if (env && *env) return try_open(env);
  void *h = NULL;
  for (int i = 0; NVRTC_NAMES[i] && !h; i++) h = try_open(NVRTC_NAMES[i]);
  char p[512];
  for (int i = 0; CUDA_DIRS[i] && !h; i++) {
    const char *d = getenv(CUDA_DIRS[i]);
    if (d && *d) snprintf(p, sizeof p, "%s/lib64/libnvrtc.so", d), h = try_open(p);
  }
  if (!h) h = try_open("/usr/local/cuda/lib64/libnvrtc.so");
  return h;
}

/* The include directory of the toolkit NVRTC came from: <lib>/../include. */
static void find_include(void) {
  Dl_info di;
  nv.include[0] = '\0';
  if (!dladdr((void *)nv.version, &di) || !di.dli_fname) return;
  char dir[400];
  snprintf(dir, sizeof dir, "%s", di.dli_fname);
  for (int up = 0; up < 2; up++) {
    char *slash = strrchr(dir, '/');
    if (!slash) return;
    *slash = '\0';
  }
  char inc[600];
  snprintf(inc, sizeof inc, "%s/include/cuda_runtime.h", dir);
  if (access(inc, R_OK) == 0) snprintf(nv.include, sizeof nv.include, "%s/include", dir);
}

static const char *nvrtc_load(void) {
  if (nv.state) return nv.state > 0 ? NULL : nv.why;
  nv.state = -1;
  nv.lib = open_nvrtc();
  if (!nv.lib) {
    const char *env = getenv("KLUABENCH_NVRTC");
    snprintf(nv.why, sizeof nv.why,
             "NVRTC is not installed or not found (%s%s%s; tried libnvrtc.so[.13|.12|.11.2] on the library "
             "path, $CUDA_HOME/lib64, $CUDA_PATH/lib64 and /usr/local/cuda/lib64): install the CUDA "
             "toolkit's NVRTC or set KLUABENCH_NVRTC to libnvrtc.so",
             env && *env ? "KLUABENCH_NVRTC=" : "", env && *env ? env : "", env && *env ? " failed" : "no KLUABENCH_NVRTC");
    return nv.why;
  }
  static const struct { void **fn; const char *name; int optional; } syms[] = {
      {(void **)&nv.error_string, "nvrtcGetErrorString", 0},
      {(void **)&nv.version, "nvrtcVersion", 0},
      {(void **)&nv.create, "nvrtcCreateProgram", 0},
      {(void **)&nv.destroy, "nvrtcDestroyProgram", 0},
      {(void **)&nv.compile, "nvrtcCompileProgram", 0},
      {(void **)&nv.log_size, "nvrtcGetProgramLogSize", 0},
      {(void **)&nv.log, "nvrtcGetProgramLog", 0},
      {(void **)&nv.ptx_size, "nvrtcGetPTXSize", 0},
      {(void **)&nv.ptx, "nvrtcGetPTX", 0},
      {(void **)&nv.add_name, "nvrtcAddNameExpression", 0},
      {(void **)&nv.lowered_name, "nvrtcGetLoweredName", 0},
      {(void **)&nv.cubin_size, "nvrtcGetCUBINSize", 1},
      {(void **)&nv.cubin, "nvrtcGetCUBIN", 1},
  };
  for (size_t i = 0; i < sizeof syms / sizeof syms[0]; i++) {
    *syms[i].fn = dlsym(nv.lib, syms[i].name);
    if (!*syms[i].fn && !syms[i].optional) {
      snprintf(nv.why, sizeof nv.why, "%s has no symbol %s (NVRTC too old?)", nv.path, syms[i].name);
      dlclose(nv.lib);
      nv.lib = NULL;
      return nv.why;
    }
  }
  if (nv.version(&nv.major, &nv.minor) != NVRTC_SUCCESS) {
    snprintf(nv.why, sizeof nv.why, "%s: nvrtcVersion failed", nv.path);
    return nv.why;
  }
  find_include();
  nv.state = 1;
  return NULL;
}

/*** The NVRTC version and library, or why NVRTC cannot be used.
 *
 * NVRTC is looked for as $KLUABENCH_NVRTC, libnvrtc.so[.13|.12|.11.2] on the library path,
 * $CUDA_HOME/lib64, $CUDA_PATH/lib64 and /usr/local/cuda/lib64.
 *
 * @signature kb.cuda.nvrtc_version() -> "13.0", path | nil, why
 * @section usercode
 * @example
 *   print(kb.cuda.nvrtc_version())
 */
/* kb.cuda.nvrtc_version() -> "13.0", path | nil, why */
static int l_nvrtc_version(lua_State *L) {
  const char *why = nvrtc_load();
  if (why) {
    luaL_pushfail(L);
    lua_pushstring(L, why);
    return 2;
  }
  lua_pushfstring(L, "%d.%d", nv.major, nv.minor);
  lua_pushstring(L, nv.path);
  return 2;
}

/* ---- options ----------------------------------------------------------------- */

static const char *const OPT_KEYS[] = {"name", "names", "defines", "include", "arch", "lineinfo",
                                       "options", "headers", "cache", "cache_dir", NULL};

static void check_opt_keys(lua_State *L, int opts) {
  lua_pushnil(L);
  while (lua_next(L, opts)) {
    int ok = 0;
    if (lua_type(L, -2) == LUA_TSTRING)
      for (int i = 0; OPT_KEYS[i] && !ok; i++) ok = strcmp(lua_tostring(L, -2), OPT_KEYS[i]) == 0;
    if (!ok)
      luaL_error(L, "bad argument #2 to 'compile' (unknown option '%s'; expected name, names, defines, "
                    "include, arch, lineinfo, options, headers, cache or cache_dir)",
                 lua_type(L, -2) == LUA_TSTRING ? lua_tostring(L, -2) : luaL_typename(L, -2));
    lua_pop(L, 1);
  }
}

/* Appends each string of the list opts[key] to the array at out, as
 * prefix .. value. */
static void add_list(lua_State *L, int opts, const char *key, const char *prefix, int out) {
  int t = lua_getfield(L, opts, key);
  if (t == LUA_TSTRING) { /* one value */
    int v = lua_gettop(L);
    kb_refuse_nul(L, v, "compile", 2, "opts.%s", key);
    lua_pushfstring(L, "%s%s", prefix, lua_tostring(L, -1));
    lua_seti(L, out, luaL_len(L, out) + 1);
  } else if (t == LUA_TTABLE) {
    lua_Integer n = luaL_len(L, -1);
    for (lua_Integer i = 1; i <= n; i++) {
      if (lua_geti(L, -1, i) != LUA_TSTRING)
        luaL_error(L, "bad argument #2 to 'compile' (opts.%s[%d] must be a string, got %s)", key, (int)i,
                   luaL_typename(L, -1));
      int v = lua_gettop(L);
      kb_refuse_nul(L, v, "compile", 2, "opts.%s[%d]", key, (int)i);
      lua_pushfstring(L, "%s%s", prefix, lua_tostring(L, -1));
      lua_seti(L, out, luaL_len(L, out) + 1);
      lua_pop(L, 1);
    }
  } else if (t != LUA_TNIL) {
    luaL_error(L, "bad argument #2 to 'compile' (opts.%s must be a string or a list of strings, got %s)",
               key, luaL_typename(L, -1));
  }
  lua_pop(L, 1);
}

/* Pushes the string keys of the table at tbl, sorted (so that options and
 * the cache key do not depend on hash order); a key of another type is an
 * error naming opts.<what>. */
static void push_sorted_keys(lua_State *L, int tbl, const char *what) {
  tbl = lua_absindex(L, tbl);
  lua_newtable(L);
  int keys = lua_gettop(L);
  lua_pushnil(L);
  while (lua_next(L, tbl)) {
    lua_pop(L, 1);
    if (lua_type(L, -1) != LUA_TSTRING)
      luaL_error(L, "bad argument #2 to 'compile' (opts.%s keys must be strings, got %s)", what, luaL_typename(L, -1));
    lua_pushvalue(L, -1);
    lua_seti(L, keys, luaL_len(L, keys) + 1);
  }
  lua_getglobal(L, "table");
  lua_getfield(L, -1, "sort");
  lua_pushvalue(L, keys);
  lua_call(L, 1, 0);
  lua_pop(L, 1);
}

/* opts.defines: a list {"N=4", "FAST"} or a map {N = 4, FAST = true}, the
 * map's keys sorted so that the options (and the cache key) are stable. */
static void add_defines(lua_State *L, int opts, int out) {
  if (lua_getfield(L, opts, "defines") != LUA_TTABLE) {
    if (!lua_isnil(L, -1))
      luaL_error(L, "bad argument #2 to 'compile' (opts.defines must be a table, got %s)", luaL_typename(L, -1));
    lua_pop(L, 1);
    return;
  }
  int defs = lua_gettop(L);
  if (luaL_len(L, defs) > 0) {
    lua_pop(L, 1);
    add_list(L, opts, "defines", "-D", out);
    return;
  }
  push_sorted_keys(L, defs, "defines");
  int keys = lua_gettop(L);
  lua_Integer n = luaL_len(L, keys);
  for (lua_Integer i = 1; i <= n; i++) {
    lua_geti(L, keys, i);
    kb_refuse_nul(L, -1, "compile", 2, "a key of opts.defines");
    lua_pushvalue(L, -1);
    lua_gettable(L, defs);
    if (lua_type(L, -1) == LUA_TSTRING) {
      int v = lua_gettop(L);
      kb_refuse_nul(L, v, "compile", 2, "opts.defines.%s", lua_tostring(L, -2));
    }
    if (lua_toboolean(L, -1) && lua_type(L, -1) == LUA_TBOOLEAN)
      lua_pushfstring(L, "-D%s", lua_tostring(L, -2));
    else if (lua_type(L, -1) == LUA_TNUMBER || lua_type(L, -1) == LUA_TSTRING)
      lua_pushfstring(L, "-D%s=%s", lua_tostring(L, -2), lua_tostring(L, -1));
    else
      luaL_error(L, "bad argument #2 to 'compile' (opts.defines.%s must be a number, a string or true)",
                 lua_tostring(L, -2));
    lua_seti(L, out, luaL_len(L, out) + 1);
    lua_pop(L, 2);
  }
  lua_pop(L, 2);
}

/* The arch: opts.arch ("sm_90", "compute_90", "90"), else the device's,
 * else sm_90. */
static void push_arch(lua_State *L, int opts) {
  if (lua_getfield(L, opts, "arch") == LUA_TSTRING || lua_type(L, -1) == LUA_TNUMBER) {
    kb_refuse_nul(L, -1, "compile", 2, "opts.arch");
    const char *a = lua_tostring(L, -1);
    if (strncmp(a, "sm_", 3) != 0 && strncmp(a, "compute_", 8) != 0) lua_pushfstring(L, "sm_%s", a);
    else lua_pushstring(L, a);
    lua_remove(L, -2);
    return;
  }
  if (!lua_isnil(L, -1))
    luaL_error(L, "bad argument #2 to 'compile' (opts.arch must be a string like \"sm_90\", got %s)", luaL_typename(L, -1));
  lua_pop(L, 1);
  const kb_backend *dev = kb_default_backend();
  kb_device_info info;
  if (strcmp(dev->kind, "cuda") == 0 && !dev->info(dev, &info) && strncmp(info.arch, "sm_", 3) == 0)
    lua_pushstring(L, info.arch);
  else
    lua_pushliteral(L, "sm_90");
}

/* ---- the cache ------------------------------------------------------------------- */

static int mkdir_p(char *path) {
  for (char *p = path + 1; *p; p++) {
    if (*p != '/') continue;
    *p = '\0';
    int r = mkdir(path, 0777);
    *p = '/';
    if (r != 0 && errno != EEXIST) return -1;
  }
  return mkdir(path, 0777) == 0 || errno == EEXIST ? 0 : -1;
}

/* Pushes the cache directory ("" when caching is off). */
static void push_cache_dir(lua_State *L, int opts) {
  if (lua_getfield(L, opts, "cache") != LUA_TNIL && !lua_toboolean(L, -1)) {
    lua_pop(L, 1);
    lua_pushliteral(L, "");
    return;
  }
  lua_pop(L, 1);
  if (lua_getfield(L, opts, "cache_dir") == LUA_TSTRING) {
    kb_refuse_nul(L, -1, "compile", 2, "opts.cache_dir");
    lua_pushfstring(L, "%s/nvrtc", lua_tostring(L, -1));
    lua_remove(L, -2);
    return;
  }
  lua_pop(L, 1);
  const char *d = getenv("KLUABENCH_CACHE"), *x = getenv("XDG_CACHE_HOME"), *h = getenv("HOME");
  if (d && *d) lua_pushfstring(L, "%s/nvrtc", d);
  else if (x && *x) lua_pushfstring(L, "%s/kluabench/nvrtc", x);
  else lua_pushfstring(L, "%s/.cache/kluabench/nvrtc", h && *h ? h : ".");
}

/* Pushes the bytes of <dir>/<key>.<ext> and returns NULL, or pushes nothing
 * and returns why not. */
static const char *read_entry(lua_State *L, const char *dir, const char *key, const char *ext) {
  char path[1024];
  snprintf(path, sizeof path, "%s/%s.%s", dir, key, ext);
  return kb_read_file(L, path, KB_READ_MAX);
}

/* Writes through a temporary file (created exclusively under a random name)
 * and rename, so a reader never sees half and a link planted in the cache
 * directory is never followed. NULL or why not. */
static const char *write_entry(const char *dir, const char *key, const char *ext, const char *p, size_t n,
                               char *why, size_t whylen) {
  char path[1024];
  snprintf(path, sizeof path, "%s/%s.%s", dir, key, ext);
  kb_atomic_file w;
  const char *err = kb_atomic_open(&w, path, 0, why, whylen);
  if (!err) err = kb_atomic_finish(&w, kb_atomic_write(&w, p, n), 0);
  return err;
}

/* ---- the files under the include directories ------------------------------------ */

/* Beyond these the include directories are not hashed and the compile is
 * not cached: hashing them would cost more than compiling. */
#define INCLUDE_MAX_FILES 4096
#define INCLUDE_MAX_BYTES ((size_t)64 << 20)
#define INCLUDE_MAX_DEPTH 16 /* directories below an include directory (links may loop) */

typedef struct {
  int list;             /* stack index of the table of "path\0sha256" lines */
  size_t files, bytes;  /* hashed so far */
  char why[400];        /* set when a bound was passed */
} include_walk;

/* Adds one line for path: its content's SHA-256, or why it cannot be read
 * (NVRTC could not read it either, and the line changes when that does). */
static void add_file_line(lua_State *L, include_walk *w, const char *path, size_t size) {
  if (w->why[0]) return;
  if (++w->files > INCLUDE_MAX_FILES || (w->bytes += size) > INCLUDE_MAX_BYTES) {
    snprintf(w->why, sizeof w->why, "the include directories hold more than %d files or %zu MiB (at %.200s): not cached",
             INCLUDE_MAX_FILES, INCLUDE_MAX_BYTES >> 20, path);
    return;
  }
  char hex[65];
  const char *err = kb_read_file(L, path, INCLUDE_MAX_BYTES);
  if (err) {
    lua_pushfstring(L, "%s%c%s", path, 0, err);
  } else {
    size_t n;
    const char *p = lua_tolstring(L, -1, &n);
    KB_TRY(L, kb_sha256_hex(p, n, hex));
    lua_pop(L, 1);
    lua_pushfstring(L, "%s%c%s", path, 0, hex);
  }
  lua_seti(L, w->list, luaL_len(L, w->list) + 1);
}

/* Every regular file under dir (links followed, directories whose name
 * starts with '.' skipped, such as .git), depth directories deep at most. */
static void hash_tree(lua_State *L, include_walk *w, const char *dir, int depth) {
  DIR *d = opendir(dir);
  if (!d) { /* a missing directory reads as missing: creating it changes the key */
    lua_pushfstring(L, "%s%c%s", dir, 0, strerror(errno));
    lua_seti(L, w->list, luaL_len(L, w->list) + 1);
    return;
  }
  struct dirent *e;
  char path[4096];
  while (!w->why[0] && (e = readdir(d)) != NULL) {
    if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
    if (snprintf(path, sizeof path, "%s/%s", dir, e->d_name) >= (int)sizeof path) continue;
    struct stat st;
    if (stat(path, &st) != 0) continue; /* a dangling link: nothing NVRTC could read */
    if (S_ISREG(st.st_mode)) {
      add_file_line(L, w, path, (size_t)st.st_size);
    } else if (S_ISDIR(st.st_mode) && e->d_name[0] != '.') {
      if (depth >= INCLUDE_MAX_DEPTH)
        snprintf(w->why, sizeof w->why, "the include directories nest deeper than %d levels (at %.200s): not cached",
                 INCLUDE_MAX_DEPTH, path);
      else
        hash_tree(L, w, path, depth + 1);
    }
  }
  closedir(d);
}

/* The value of the option at options[i] when it is `flag` (then options[i + 1]),
 * `flag`value or `flag=`value; NULL otherwise. *skip is set when the value
 * was the next element. */
static const char *option_value(lua_State *L, int options, lua_Integer i, const char *flag, int joined,
                                int *skip) {
  size_t fl = strlen(flag);
  lua_geti(L, options, i);
  const char *s = lua_tostring(L, -1);
  lua_pop(L, 1); /* the string stays alive in the table */
  if (!s || strncmp(s, flag, fl) != 0) return NULL;
  if (s[fl] == '\0') {
    const char *v = lua_geti(L, options, i + 1) == LUA_TSTRING ? lua_tostring(L, -1) : NULL;
    lua_pop(L, 1);
    *skip = v != NULL;
    return v;
  }
  if (s[fl] == '=') return s + fl + 1;
  return joined ? s + fl : NULL;
}

/* Pushes the SHA-256 (hex) of the files NVRTC may read from disk: every
 * file under the include directories named in the options at options
 * (opts.include became -I<dir> there), and every pre-included file; "" when
 * there are none. Pushes nil instead, and fills why, when they are too many
 * to hash. */
static void push_include_digest(lua_State *L, int options, char *why, size_t whylen) {
  include_walk w = {0, 0, 0, ""};
  lua_newtable(L);
  w.list = lua_gettop(L);
  for (lua_Integer i = 1, n = luaL_len(L, options); i <= n && !w.why[0]; i++) {
    int skip = 0;
    const char *dir = option_value(L, options, i, "-I", 1, &skip);
    if (!dir) dir = option_value(L, options, i, "--include-path", 0, &skip);
    const char *file = dir ? NULL : option_value(L, options, i, "-include", 0, &skip);
    if (!dir && !file) file = option_value(L, options, i, "--pre-include", 0, &skip);
    if (dir) hash_tree(L, &w, dir, 0);
    struct stat st;
    if (file && stat(file, &st) == 0 && S_ISREG(st.st_mode)) add_file_line(L, &w, file, (size_t)st.st_size);
    i += skip;
  }
  if (w.why[0]) {
    lua_pop(L, 1);
    snprintf(why, whylen, "%s", w.why);
    lua_pushnil(L);
    return;
  }
  if (luaL_len(L, w.list) == 0) {
    lua_pop(L, 1);
    lua_pushliteral(L, "");
    return;
  }
  /* readdir's order is the file system's: sorted, the key is stable */
  lua_getglobal(L, "table");
  lua_getfield(L, -1, "sort");
  lua_pushvalue(L, w.list);
  lua_call(L, 1, 0);
  lua_getfield(L, -1, "concat");
  lua_pushvalue(L, w.list);
  lua_pushliteral(L, "\n");
  lua_call(L, 2, 1);
  size_t n;
  const char *text = lua_tolstring(L, -1, &n);
  char hex[65];
  KB_TRY(L, kb_sha256_hex(text, n, hex));
  lua_pop(L, 3); /* the text, table, the list */
  lua_pushstring(L, hex);
}

/* ---- compiling --------------------------------------------------------------------- */

/* What one compile produced, on the Lua stack in this order. */
enum { R_PTX = 1, R_CUBIN, R_NAMES, R_LOG, R_N };

static void append_field(luaL_Buffer *b, const char *s, size_t n) {
  char len[32];
  snprintf(len, sizeof len, "%zu:", n);
  luaL_addstring(b, len);
  luaL_addlstring(b, s, n);
}

/* Pushes the hex cache key of everything that decides NVRTC's output. */
static void push_key(lua_State *L, int src, int name, int arch, int options, int names, int headers,
                     int includes) {
  luaL_Buffer b;
  luaL_buffinit(L, &b);
  char ver[32];
  snprintf(ver, sizeof ver, "kluabench-nvrtc-2 %d.%d", nv.major, nv.minor);
  append_field(&b, ver, strlen(ver));
  const int singles[] = {arch, name, includes};
  for (int s = 0; s < 3; s++) {
    size_t n;
    const char *p = lua_tolstring(L, singles[s], &n);
    append_field(&b, p, n);
  }
  const int lists[] = {options, names, headers};
  for (int l = 0; l < 3; l++) {
    lua_Integer n = luaL_len(L, lists[l]);
    for (lua_Integer i = 1; i <= n; i++) {
      size_t len;
      lua_geti(L, lists[l], i);
      const char *p = lua_tolstring(L, -1, &len);
      lua_pop(L, 1);
      append_field(&b, p, len);
    }
    luaL_addchar(&b, ';');
  }
  size_t n;
  const char *p = lua_tolstring(L, src, &n);
  append_field(&b, p, n);
  luaL_pushresult(&b);
  size_t kn;
  const char *k = lua_tolstring(L, -1, &kn);
  char hex[65];
  KB_TRY(L, kb_sha256_hex(k, kn, hex));
  lua_pop(L, 1);
  lua_pushstring(L, hex);
}

/* Runs NVRTC; pushes ptx, cubin (or nil), names (expr -> lowered), log. On a
 * compile error raises with NVRTC's log. The program is destroyed on every
 * path: nothing below raises while it exists. */
static void run_nvrtc(lua_State *L, int src, int name, int options, int names, int headers) {
  int top = lua_gettop(L);
  int nopt = (int)luaL_len(L, options), nname = (int)luaL_len(L, names), nhead = (int)luaL_len(L, headers) / 2;
  const char **argv = (const char **)lua_newuserdatauv(L, sizeof(char *) * (size_t)(nopt + 2 * nhead + 1), 0);
  for (int i = 0; i < nopt; i++) lua_geti(L, options, i + 1), argv[i] = lua_tostring(L, -1), lua_pop(L, 1);
  const char **hsrc = argv + nopt, **hname = argv + nopt + nhead;
  for (int i = 0; i < nhead; i++) {
    lua_geti(L, headers, 2 * i + 1), hname[i] = lua_tostring(L, -1), lua_pop(L, 1);
    lua_geti(L, headers, 2 * i + 2), hsrc[i] = lua_tostring(L, -1), lua_pop(L, 1);
  }
  nvrtcProgram prog = NULL;
  nvrtcResult r = nv.create(&prog, lua_tostring(L, src), lua_tostring(L, name), nhead, hsrc, hname);
  if (r != NVRTC_SUCCESS) luaL_error(L, "compile: nvrtcCreateProgram: %s", nv.error_string(r));
  for (int i = 0; i < nname && r == NVRTC_SUCCESS; i++) {
    lua_geti(L, names, i + 1);
    r = nv.add_name(prog, lua_tostring(L, -1));
    lua_pop(L, 1);
  }
  if (r == NVRTC_SUCCESS) r = nv.compile(prog, nopt, argv);
  size_t logn = 0;
  char *log = NULL;
  if (nv.log_size(prog, &logn) == NVRTC_SUCCESS && logn > 1) {
    log = (char *)lua_newuserdatauv(L, logn, 0);
    if (nv.log(prog, log) != NVRTC_SUCCESS) log[0] = '\0';
  }
  const char *stage = r == NVRTC_SUCCESS ? NULL : "nvrtcCompileProgram";
  size_t n = 0;
  char *ptx = NULL, *cubin = NULL;
  if (!stage && nv.ptx_size(prog, &n) == NVRTC_SUCCESS && (ptx = (char *)lua_newuserdatauv(L, n + 1, 0)))
    stage = nv.ptx(prog, ptx) == NVRTC_SUCCESS ? NULL : "nvrtcGetPTX";
  size_t cn = 0;
  lua_getfield(L, options, "arch_is_sm");
  int want_cubin = lua_toboolean(L, -1) && nv.cubin_size;
  lua_pop(L, 1);
  if (!stage && want_cubin && nv.cubin_size(prog, &cn) == NVRTC_SUCCESS && cn > 0) {
    cubin = (char *)lua_newuserdatauv(L, cn, 0);
    stage = nv.cubin(prog, cubin) == NVRTC_SUCCESS ? NULL : "nvrtcGetCUBIN";
  }
  lua_newtable(L); /* expr -> lowered name */
  int lowered = lua_gettop(L);
  for (int i = 0; i < nname && !stage; i++) {
    const char *ln = NULL;
    lua_geti(L, names, i + 1);
    if (nv.lowered_name(prog, lua_tostring(L, -1), &ln) == NVRTC_SUCCESS && ln) {
      lua_pushstring(L, ln);
      lua_rawset(L, lowered);
    } else {
      lua_pop(L, 1);
      stage = "nvrtcGetLoweredName";
    }
  }
  nv.destroy(&prog);
  if (stage)
    luaL_error(L, "compile: %s failed to compile (%s: %s)%s%s", lua_tostring(L, name), stage,
               nv.error_string(r == NVRTC_SUCCESS ? NVRTC_ERROR_COMPILATION : r), log ? ":\n" : "",
               log ? log : "");
  lua_pushlstring(L, ptx, strlen(ptx));
  if (cubin) lua_pushlstring(L, cubin, cn);
  else lua_pushnil(L);
  lua_pushvalue(L, lowered);
  lua_pushstring(L, log ? log : "");
  lua_rotate(L, top + 1, 4); /* the four results first, the buffers above them */
  lua_settop(L, top + 4);
}

/* names as "expr\tlowered\n" lines for the cache. */
static void push_names_text(lua_State *L, int names) {
  luaL_Buffer b;
  luaL_buffinit(L, &b);
  lua_pushnil(L);
  while (lua_next(L, names)) {
    lua_pushvalue(L, -2);
    luaL_addvalue(&b);
    luaL_addchar(&b, '\t');
    luaL_addvalue(&b);
    luaL_addchar(&b, '\n');
  }
  luaL_pushresult(&b);
}

static void parse_names_text(lua_State *L, const char *s) {
  lua_newtable(L);
  while (*s) {
    const char *tab = strchr(s, '\t'), *nl = tab ? strchr(tab, '\n') : NULL;
    if (!nl) break;
    lua_pushlstring(L, s, (size_t)(tab - s));
    lua_pushlstring(L, tab + 1, (size_t)(nl - tab - 1));
    lua_rawset(L, -3);
    s = nl + 1;
  }
}

/* The parts of an entry, in the order cache_read pushes them. */
static const char *const PARTS[] = {"ptx", "cubin", "names", "log"};
enum { NPARTS = 4 };

/* Reads <key>.sha256 (sha256sum's lines "<hex>  <key>.<part>") into
 * sums[part] (64 hex digits, "" when the part is not listed). Returns 0
 * when there is no such file (an incomplete entry), 1 when it was read, -1
 * when it is not such a record. */
static int read_sums(lua_State *L, const char *dir, const char *key, char sums[NPARTS][65]) {
  for (int i = 0; i < NPARTS; i++) sums[i][0] = '\0';
  if (read_entry(L, dir, key, "sha256")) return 0;
  size_t n;
  const char *s = lua_tolstring(L, -1, &n), *end = s + n;
  size_t klen = strlen(key);
  int ok = n > 0;
  while (ok && s < end) {
    const char *nl = memchr(s, '\n', (size_t)(end - s));
    size_t len = nl ? (size_t)(nl - s) : (size_t)(end - s);
    int part = -1;
    ok = len > 64 + 2 + klen + 1 && strspn(s, "0123456789abcdef") >= 64 && memcmp(s + 64, "  ", 2) == 0 &&
         memcmp(s + 66, key, klen) == 0 && s[66 + klen] == '.';
    for (int i = 0; ok && i < NPARTS && part < 0; i++)
      if (len - 67 - klen == strlen(PARTS[i]) && memcmp(s + 67 + klen, PARTS[i], len - 67 - klen) == 0) part = i;
    ok = ok && part >= 0 && !sums[part][0];
    if (ok) memcpy(sums[part], s, 64), sums[part][64] = '\0';
    s += len + 1;
  }
  lua_pop(L, 1);
  return ok && sums[0][0] && sums[2][0] && sums[3][0] ? 1 : -1;
}

/* Pushes ptx, cubin|nil, names, log from the cache and returns 1; on a miss
 * returns 0, and on an entry that fails its digests -1 with the reason in
 * problem; nothing is pushed then. Every part is checked against the
 * SHA-256 recorded when it was written. */
static int cache_read(lua_State *L, const char *dir, const char *key, int want_cubin, char *problem,
                      size_t plen) {
  int top = lua_gettop(L);
  char sums[NPARTS][65];
  int r = read_sums(L, dir, key, sums);
  if (r == 0) return 0;
  if (r < 0) {
    snprintf(problem, plen, "%s.sha256 is not a record of digests (it lists ptx, names and log with their SHA-256)",
             key);
    return -1;
  }
  for (int i = 0; i < NPARTS; i++) {
    if (i == 1 && !(want_cubin && sums[i][0])) { /* no cubin for a virtual arch, or none was made */
      lua_pushnil(L);
      continue;
    }
    const char *why = read_entry(L, dir, key, PARTS[i]);
    char hex[65];
    if (why) {
      snprintf(problem, plen, "%s.%s cannot be read: %s", key, PARTS[i], why);
    } else {
      size_t n;
      const char *p = lua_tolstring(L, -1, &n);
      KB_TRY(L, kb_sha256_hex(p, n, hex));
      if (strcmp(hex, sums[i]) == 0) continue;
      snprintf(problem, plen, "%s.%s does not match the SHA-256 recorded when it was cached (truncated or "
                              "changed since)", key, PARTS[i]);
    }
    lua_settop(L, top);
    return -1;
  }
  parse_names_text(L, lua_tostring(L, -2));
  lua_replace(L, -3);
  return 1;
}

/* Pushes the <key>.sha256 text for the parts at[] (the PTX, the cubin or
 * nil, the names text, the log): one "<hex>  <key>.<part>" line each. */
static void push_sums_text(lua_State *L, const char *key, const int at[NPARTS]) {
  luaL_Buffer b;
  luaL_buffinit(L, &b);
  for (int i = 0; i < NPARTS; i++) {
    if (lua_isnil(L, at[i])) continue;
    size_t n;
    const char *p = lua_tolstring(L, at[i], &n);
    char hex[65];
    KB_TRY(L, kb_sha256_hex(p, n, hex));
    luaL_addstring(&b, hex);
    luaL_addstring(&b, "  ");
    luaL_addstring(&b, key);
    luaL_addchar(&b, '.');
    luaL_addstring(&b, PARTS[i]);
    luaL_addchar(&b, '\n');
  }
  luaL_pushresult(&b);
}

/* Stores the results at base (ptx, cubin, names, log) and their digests;
 * NULL or why not. */
static const char *cache_write(lua_State *L, const char *dir, const char *key, int base) {
  static char why[600];
  char d[512];
  snprintf(d, sizeof d, "%s", dir);
  if (mkdir_p(d) != 0) {
    snprintf(why, sizeof why, "cannot create %s: %s", dir, strerror(errno));
    return why;
  }
  char sums[1100];
  snprintf(sums, sizeof sums, "%s/%s.sha256", dir, key);
  remove(sums); /* while the parts are replaced the entry is incomplete, not mismatched */
  int top = lua_gettop(L);
  push_names_text(L, base + 2);
  const int at[NPARTS] = {base, base + 1, top + 1, base + 3};
  push_sums_text(L, key, at);
  const char *bad = NULL;
  char reason[400];
  /* the PTX after the others, the digests last: they mark the entry complete */
  static const int order[NPARTS] = {1, 2, 3, 0};
  for (int k = 0; k < NPARTS && !bad; k++) {
    int i = order[k];
    size_t n;
    const char *p = lua_isnil(L, at[i]) ? NULL : lua_tolstring(L, at[i], &n);
    if (p) bad = write_entry(dir, key, PARTS[i], p, n, reason, sizeof reason);
  }
  if (!bad) {
    size_t n;
    const char *p = lua_tolstring(L, -1, &n);
    bad = write_entry(dir, key, "sha256", p, n, reason, sizeof reason);
  }
  lua_settop(L, top);
  if (!bad) return NULL;
  snprintf(why, sizeof why, "cannot write into %s: %s", dir, bad);
  return why;
}

/* Collects opts.headers ({name = source}) as a sorted flat list name, source, ... */
static void push_headers(lua_State *L, int opts) {
  lua_newtable(L);
  int out = lua_gettop(L);
  if (lua_getfield(L, opts, "headers") == LUA_TNIL) {
    lua_pop(L, 1);
    return;
  }
  if (!lua_istable(L, -1))
    luaL_error(L, "bad argument #2 to 'compile' (opts.headers must be a table {name = source})");
  int h = lua_gettop(L);
  push_sorted_keys(L, h, "headers");
  int keys = lua_gettop(L);
  for (lua_Integer i = 1, n = luaL_len(L, keys); i <= n; i++) {
    lua_geti(L, keys, i);
    kb_refuse_nul(L, -1, "compile", 2, "a name in opts.headers");
    lua_pushvalue(L, -1);
    lua_seti(L, out, 2 * i - 1);
    lua_pushvalue(L, -1);
    if (lua_gettable(L, h) != LUA_TSTRING)
      luaL_error(L, "bad argument #2 to 'compile' (opts.headers must map names to source strings)");
    int v = lua_gettop(L);
    kb_refuse_nul(L, v, "compile", 2, "opts.headers['%s']", lua_tostring(L, -2));
    lua_remove(L, -2);
    lua_seti(L, out, 2 * i);
  }
  lua_pop(L, 2);
}

/*** Compiles CUDA C++ source with NVRTC (opened at run time) into a module; needs no GPU.
 *
 * opts: name (file name in messages, default "kernel.cu"), names (name expressions to keep and
 * lower, e.g. "add<float>"), defines ({"N=4"} or {N = 4}), include (paths), headers ({name =
 * source}), arch ("sm_90", "compute_90" for PTX only; default the device's, else sm_90), lineinfo
 * (boolean), options (passed through), cache (false: off), cache_dir. A compile error raises with
 * NVRTC's log and line numbers. Results are cached under $KLUABENCH_CACHE/nvrtc (else
 * ~/.cache/kluabench/nvrtc) by SHA-256 of source, options, arch, NVRTC version and the content of
 * every file under the include directories (an edited header is compiled again);
 * module:info().cache says "hit", "miss" or "off".
 *
 * @signature kb.cuda.compile(source [, opts]) -> Module
 * @section usercode
 * @example
 *   local m = kb.cuda.compile([[extern "C" __global__ void scale(float *y, const float *x, float a, int n) {
 *     int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = a * x[i]; }]], {cache = false})
 *   print(m:info().format, #m:ptx())
 */
/* kb.cuda.compile(source [, opts]) -> Module */
static int l_compile(lua_State *L) {
  kb_check_cstring(L, 1, "compile", "source");
  if (lua_isnoneornil(L, 2)) {
    lua_settop(L, 1);
    lua_newtable(L);
  }
  luaL_checktype(L, 2, LUA_TTABLE);
  lua_settop(L, 2);
  check_opt_keys(L, 2);
  const char *why = nvrtc_load();
  if (why) return luaL_error(L, "compile: %s", why);
  /* 3 name, 4 arch, 5 options, 6 names, 7 headers, 8 cache dir, 9 include digest, 10 key */
  if (lua_getfield(L, 2, "name") == LUA_TNIL) lua_pop(L, 1), lua_pushliteral(L, "kernel.cu");
  if (lua_type(L, 3) != LUA_TSTRING)
    return luaL_error(L, "bad argument #2 to 'compile' (opts.name must be a string, got %s)", luaL_typename(L, 3));
  kb_refuse_nul(L, 3, "compile", 2, "opts.name");
  push_arch(L, 2);
  lua_newtable(L);
  lua_pushfstring(L, "-arch=%s", lua_tostring(L, 4));
  lua_seti(L, 5, 1);
  lua_getfield(L, 2, "lineinfo");
  if (lua_toboolean(L, -1)) {
    lua_pushliteral(L, "-lineinfo");
    lua_seti(L, 5, luaL_len(L, 5) + 1);
  }
  lua_pop(L, 1);
  add_defines(L, 2, 5);
  add_list(L, 2, "include", "-I", 5);
  add_list(L, 2, "options", "", 5);
  lua_newtable(L);
  add_list(L, 2, "names", "", 6);
  push_headers(L, 2);
  push_cache_dir(L, 2);
  char problem[600] = "";
  push_include_digest(L, 5, problem, sizeof problem);
  if (lua_isnil(L, 9)) { /* too much to hash: compiled, not cached */
    lua_pushliteral(L, ""), lua_replace(L, 8);
    lua_pushliteral(L, ""), lua_replace(L, 9);
  }
  push_key(L, 1, 3, 4, 5, 6, 7, 9);
  int want_cubin = strncmp(lua_tostring(L, 4), "sm_", 3) == 0;
  const char *dir = lua_tostring(L, 8);
  const char *cache = "off";
  const char *cache_error = NULL;
  int base = lua_gettop(L) + 1;
  int found = *dir ? cache_read(L, dir, lua_tostring(L, 10), want_cubin, problem, sizeof problem) : 0;
  if (found > 0) {
    cache = "hit";
  } else {
    /* the toolkit's headers (cuda_fp16.h, ...) unless the user gave -I
     * paths of their own first; not part of the options recorded */
    lua_newtable(L);
    int argv = lua_gettop(L);
    for (lua_Integer i = 1, n = luaL_len(L, 5); i <= n; i++) lua_geti(L, 5, i), lua_seti(L, argv, i);
    if (nv.include[0]) lua_pushfstring(L, "-I%s", nv.include), lua_seti(L, argv, luaL_len(L, argv) + 1);
    lua_pushboolean(L, want_cubin);
    lua_setfield(L, argv, "arch_is_sm");
    run_nvrtc(L, 1, 3, argv, 6, 7);
    lua_remove(L, argv);
    cache = found < 0 ? "rebuilt" : "miss";
    if (*dir) cache_error = cache_write(L, dir, lua_tostring(L, 10), base);
    if (!*dir) cache = "off";
  }
  /* info */
  lua_createtable(L, 0, 12);
  int info = lua_gettop(L);
  size_t sn;
  const char *src = lua_tolstring(L, 1, &sn);
  char hex[65];
  KB_TRY(L, kb_sha256_hex(src, sn, hex));
  lua_pushfstring(L, "sha256:%s", hex);
  lua_setfield(L, info, "source_sha256");
  lua_pushvalue(L, 3), lua_setfield(L, info, "name");
  lua_pushvalue(L, 4), lua_setfield(L, info, "arch");
  lua_pushvalue(L, 5), lua_setfield(L, info, "options");
  lua_pushfstring(L, "%d.%d", nv.major, nv.minor), lua_setfield(L, info, "nvrtc_version");
  lua_pushvalue(L, base + 2), lua_setfield(L, info, "names");
  lua_pushvalue(L, base + 3), lua_setfield(L, info, "log");
  lua_pushstring(L, cache), lua_setfield(L, info, "cache");
  lua_pushvalue(L, 10), lua_setfield(L, info, "cache_key");
  if (cache_error) lua_pushstring(L, cache_error), lua_setfield(L, info, "cache_error");
  if (problem[0]) lua_pushstring(L, problem), lua_setfield(L, info, "cache_problem");
  int img = lua_isnil(L, base + 1) ? base : base + 1;
  kb_push_module(L, img, base, img == base ? "ptx" : "cubin", info);
  return 1;
}

/* Adds compile and nvrtc_version to the kb.cuda table on top of the stack. */
void kb_open_nvrtc(lua_State *L) {
  lua_pushcfunction(L, l_compile);
  lua_setfield(L, -2, "compile");
  lua_pushcfunction(L, l_nvrtc_version);
  lua_setfield(L, -2, "nvrtc_version");
}
