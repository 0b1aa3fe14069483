/* Internal interface between the binding files of the "kluabench" Lua module.
 * Each binding file (engine/<role>/X.c) adds its functions to the module
 * table with kb_open_X(); engine/host/kluabench.c assembles them. */
#ifndef KB_KB_H
#define KB_KB_H

#include <limits.h>
#include <stdint.h>
#include <string.h>
#include <sys/types.h>
#include <lua.h>
#include <lauxlib.h>
#include "../backend/backend.h"

#define KB_VERSION "0.1.0"
#define KB_TENSOR_MT "kluabench.Tensor"
#define KB_MAX_DIMS 8

/* A tensor: contiguous, row-major, on one device. data == NULL once freed;
 * every method checks that through kb_check_tensor. */
typedef struct {
  void *data;
  int freed;  /* 1 until storage exists and again after free() */
  int pins;   /* CUDA graphs that captured this tensor; free() waits for 0 */
  int guarded; /* kb.trust.arm wrote the pattern into its guard bytes (until then they hold nothing) */
  int views;  /* calls of kb.python that lent it and whose views Python may still hold; free() waits for 0 */
  /* Storage another library owns (a tensor a Python function returned, through DLPack): released by
   * owner_release(owner), never by the backend, and without guard bytes around it. NULL: our own. */
  void (*owner_release)(void *owner);
  void *owner;
  const kb_backend *dev;
  kb_dtype dtype;
  int ndim;
  int64_t shape[KB_MAX_DIMS];
  int64_t numel;
} kb_tensor;

static inline size_t kb_tensor_nbytes(const kb_tensor *t) {
  return (size_t)t->numel * kb_dtype_size(t->dtype);
}

/* The tensor at `arg`; raises "bad argument #arg to 'fn' (kluabench.Tensor
 * expected, got X)" or "(tensor has been freed)". */
kb_tensor *kb_check_tensor(lua_State *L, int arg);
/* tensor.c: the one shape check every tensor goes through (kb_push_tensor
 * runs it; kb.empty, reshape and the other functions that read a shape run
 * it first for a message about their argument): NULL when every dimension
 * is >= 0 and the byte size of the non-zero dimensions is at most 2^62,
 * else why not. */
const char *kb_shape_problem(const int64_t *shape, int ndim, kb_dtype dtype);
/* Pushes a new tensor userdata with uninitialised storage on `dev`. Raises a
 * Lua error naming the size when the allocation fails. */
kb_tensor *kb_push_tensor(lua_State *L, const kb_backend *dev, kb_dtype dtype, int ndim,
                          const int64_t *shape);
/* Pushes a tensor of that shape with no storage yet (it reads as freed), for storage another library
 * owns (kb.python's tensors from Python); kb_tensor_adopt gives it. Raises on a bad shape. */
kb_tensor *kb_push_foreign_tensor(lua_State *L, const kb_backend *dev, kb_dtype dtype, int ndim,
                                  const int64_t *shape);
/* Gives t, at the top of the stack, its storage: data (16-byte aligned; any pointer for an empty tensor),
 * released by release(owner) exactly once, when t is freed or collected (never by the backend: no guard
 * bytes lie around it). From the first line on, an error leaves t whole for the collector. */
void kb_tensor_adopt(lua_State *L, kb_tensor *t, void *data, void (*release)(void *), void *owner);
/* "bf16" | "f16" | "f32" | "f64" at `arg` (default `def` when absent and def >= 0). */
kb_dtype kb_check_dtype(lua_State *L, int arg, int def);
/* device.c: the device at `arg`: nil -> default backend, "cpu", "cuda", "cuda:N". */
const kb_backend *kb_check_device(lua_State *L, int arg);
/* Pushes a userdata holding a host copy of the tensor's bytes and returns
 * its address (Lua owns it: nothing leaks if a later check raises). */
void *kb_tensor_host_copy(lua_State *L, const kb_tensor *t);
/* What kb_compare_* (kernels/compare_cpu.h) read of tensors a and b during
 * this call, into *src: a cpu tensor in place, a cuda tensor a slice at a time
 * copied into the backend's staging buffers (host_stage). *pair holds the
 * source's state (the caller's, for the call). Raises when staging fails. */
struct kb_compare_source;
typedef struct {
  const kb_tensor *t[2];
  void *stage[2];
} kb_tensor_pair;
void kb_tensor_compare_source(lua_State *L, const kb_tensor *a, const kb_tensor *b, kb_tensor_pair *pair,
                              struct kb_compare_source *src);
/* "[1, 2048, 32, 16]" written into buf. */
const char *kb_shape_str(const kb_tensor *t, char *buf, size_t n);
/* graph.c: while a CUDA graph is being captured, pins the tensor at idx
 * (new tensors made inside the capture live as long as the graph). */
void kb_capture_note(lua_State *L, int idx);
/* graph.c: while a CUDA graph is being captured, keeps the value at idx
 * alive as long as the graph (a module whose kernels the graph launches). */
void kb_capture_keep(lua_State *L, int idx);
/* graph.c: 1 while a CUDA graph is being captured. */
int kb_capturing(void);

/* A built-in kernel's operations table for a device (kernels/X.h declares
 * X_cpu and X_cuda): KB_KERNEL_OPS(kb_rope_ops, dev) is &kb_rope_ops_cuda
 * on a cuda device and &kb_rope_ops_cpu otherwise. A CPU-only build has no
 * CUDA tables (and no cuda device), so it never names one. */
static inline int kb_on_cuda(const kb_backend *dev) { return strcmp(dev->kind, "cuda") == 0; }
#ifdef KB_WITH_CUDA
#define KB_KERNEL_OPS(ops, dev) (kb_on_cuda(dev) ? &ops##_cuda : &ops##_cpu)
#else
#define KB_KERNEL_OPS(ops, dev) (&ops##_cpu)
#endif

/* Registers metatable `name` with `methods` as __index (and as field
 * `methods`, where the API reference finds them), `gc` (when not NULL) as
 * both __gc and __close, and `tostring`; leaves the stack as it was. Every
 * class of the engine is made here. */
static inline void kb_new_class(lua_State *L, const char *name, const luaL_Reg *methods,
                                lua_CFunction gc, lua_CFunction tostring) {
  luaL_newmetatable(L, name);
  lua_newtable(L);
  luaL_setfuncs(L, methods, 0);
  lua_pushvalue(L, -1);
  lua_setfield(L, -3, "methods");
  lua_setfield(L, -2, "__index");
  if (gc) {
    lua_pushcfunction(L, gc);
    lua_pushvalue(L, -1);
    lua_setfield(L, -3, "__gc");
    lua_setfield(L, -2, "__close");
  }
  lua_pushcfunction(L, tostring);
  lua_setfield(L, -2, "__tostring");
  lua_pop(L, 1);
}
/* errors.c: raises an error when called from a __gc metamethod: a native resource
 * made there may never be released (while the state closes, Lua registers
 * no finalizer for new objects), so tensors, events, graphs and flush
 * buffers are refused there. `what` names the thing ("a tensor"). */
void kb_check_not_finalizing(lua_State *L, const char *what);

/* errors.c: raise a Lua error carrying a backend message (never returns). */
int kb_raise(lua_State *L, const char *msg);
#define KB_TRY(L, expr)                                                                        \
  do {                                                                                         \
    const char *kb_err_ = (expr);                                                              \
    if (kb_err_) kb_raise((L), kb_err_);                                                       \
  } while (0)

/* digest.c: hex SHA-256 of a byte range; out gets 64 hex digits and a NUL.
 * Returns NULL on success or an OpenSSL message. */
const char *kb_sha256_hex(const void *p, size_t n, char out[65]);
/* The next piece of a message hashed piece by piece: *p and *n (0 at the end), or an error,
 * which ends the hash with that error. */
typedef const char *(*kb_sha256_next_fn)(void *ctx, const void **p, size_t *n);
/* Hex SHA-256 of the pieces next(ctx) hands out, in order (for a message that is never whole in
 * host memory, such as a device tensor staged a slice at a time). NULL on success. */
const char *kb_sha256_hex_pieces(kb_sha256_next_fn next, void *ctx, char out[65]);

/* fs.c: reads the whole regular file at path, at most max bytes, without
 * ever waiting: it is opened non-blocking and refused unless it is a regular
 * file (a FIFO may have no writer, a device may never end), and a file
 * larger than max is refused by its size before any of it is read. Pushes
 * the bytes and returns NULL, or pushes nothing and returns why not: "is a
 * directory", "is a FIFO, not a regular file (...)", "is larger than N
 * bytes (it has M), ...", or strerror's text. The reason stays valid until
 * the next call. */
#define KB_READ_MAX ((size_t)512 * 1024 * 1024)
const char *kb_read_file(lua_State *L, const char *path, size_t max);
/* fs.c: pushes "sha256:<hex>" of the file at path (read with kb_read_file, at most KB_READ_MAX bytes) and
 * returns its size, or pushes nil and returns -1 when it cannot be read (a plugin's or a .py file's digest). */
lua_Integer kb_push_file_sha256(lua_State *L, const char *path);

/* atomic_file.c: a file written whole or not at all, through a temporary
 * beside the target that is created exclusively under a random name, then
 * renamed over the target. With follow, a link at path is the user's: the
 * file it names is the target (replaced, the link kept); without, the
 * rename replaces whatever is at path, a link included.
 * kb_atomic_open returns NULL or why not (an existing target that is not a
 * regular file is refused); kb_atomic_finish (fsync first when sync) closes
 * and renames, or removes the temporary when err or a failure there, and
 * returns the first error. */
typedef struct {
  char target[PATH_MAX], tmp[PATH_MAX + 32];
  int fd;
} kb_atomic_file;
const char *kb_atomic_open(kb_atomic_file *w, const char *path, int follow, char *why, size_t n);
const char *kb_atomic_write(kb_atomic_file *w, const void *p, size_t n);
const char *kb_atomic_finish(kb_atomic_file *w, const char *err, int sync);
/* atomic_file.c: creates "<target>.tmp-<12 random hex digits>" with
 * O_CREAT | O_EXCL | O_NOFOLLOW (mode as open takes it), drawing another
 * name while one exists; the fd, or -1 with errno. tmp gets the name. */
int kb_create_temp(char *tmp, size_t n, const char *target, mode_t mode);

/* text.c: in[0..inlen) made safe to print into out (outlen bytes, always
 * NUL-terminated): control bytes and bytes that are not UTF-8 as \xNN, as
 * the stdlib's cli.printable writes them; the text is cut where out is
 * full. Returns the length written. */
size_t kb_printable(char *out, size_t outlen, const char *in, size_t inlen);
/* text.c: raises "bad argument #arg to 'fn' (what has a NUL byte at byte
 * N: ...)" when the string at stack index idx holds a NUL (C would see only
 * the part before it). arg is the number the message gives (a method's
 * arguments count from its self); what is a lua_pushfstring format,
 * formatted only when the string is refused. With fn NULL (a check that
 * many functions share) the error is luaL_argerror's, which names the
 * function called and counts a method's arguments itself. */
void kb_refuse_nul(lua_State *L, int idx, const char *fn, int arg, const char *what, ...);
/* text.c: luaL_checkstring of arg, refused as kb_refuse_nul says: the one
 * way a binding takes a Lua string that becomes C text. */
const char *kb_check_cstring(lua_State *L, int arg, const char *fn, const char *what);
/* text.c: def when arg is none or nil, else kb_check_cstring. */
const char *kb_opt_cstring(lua_State *L, int arg, const char *fn, const char *what, const char *def);

/* lua-cjson's static library (linked into every binary): returns a new
 * cjson instance with a configuration of its own. The host preloads it as
 * "cjson"; tensor_io.c reads safetensors headers with one. */
int luaopen_cjson(lua_State *L);
/* The deepest nesting of JSON arrays and objects read or written (jcs.c's
 * encode, lua-cjson as configured here and by the stdlib's util/json.lua):
 * kb.jcs.MAX_DEPTH. */
#define KB_JSON_MAX_DEPTH 1000

void kb_open_tensor(lua_State *L);
void kb_open_tensor_math(lua_State *L); /* tensor_math.c: methods and operators */
void kb_open_timing(lua_State *L);
void kb_open_graph(lua_State *L);
void kb_open_digest(lua_State *L);
void kb_open_jcs(lua_State *L);
void kb_open_tensor_io(lua_State *L); /* tensor_io.c: .npy and safetensors */
void kb_open_device(lua_State *L);
void kb_open_fs(lua_State *L);
void kb_open_trace(lua_State *L);
void kb_open_process(lua_State *L);
/* sqlite.c, pq.c: the history database's two backends (kb.sqlite, kb.pq) */
void kb_open_sqlite(lua_State *L);
void kb_open_pq(lua_State *L);
/* memstats.c: every tensor's storage is allocated and released through these,
 * which count the bytes held now and at the peak per device (kb.memory_stats) */
const char *kb_alloc(const kb_backend *dev, void **out, size_t bytes);
void kb_release(const kb_backend *dev, void *p, size_t bytes);
/* kb_alloc for a tensor made from Lua: a full collection first once dead tensors may hold as much
 * as the live ones, and again before one retry when the allocation fails */
const char *kb_alloc_collecting(lua_State *L, const kb_backend *dev, void **out, size_t bytes);
/* Bytes of storage another library owns that a new tensor holds (kb_push_foreign_tensor): not counted
 * as ours, but outside the Lua heap too, so they bring the next full collection nearer as ours do */
void kb_foreign_bytes(lua_State *L, size_t bytes);
/* Pushes registry["kluabench.scratch"][key] (a table, made when missing): where a
 * binding keeps scratch tensors between calls, which kb.drop_scratch forgets. */
void kb_scratch_table(lua_State *L, const char *key);
void kb_open_memstats(lua_State *L);
void kb_open_compare_elements(lua_State *L); /* compare_elements.c: kb.compare_elements */
int luaopen_kluabench(lua_State *L);

#endif
