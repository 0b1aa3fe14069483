/* kluabench.Tensor: a contiguous row-major array on one device.
 *
 * Lifetime follows liolib's streams: the userdata is created empty (data ==
 * NULL, metatable set) before storage is allocated, so a failed allocation
 * leaves a consistent, collectable object; free(), __close and __gc share
 * one idempotent release; every method checks for a freed tensor through
 * kb_check_tensor. A tensor captured into a CUDA graph is pinned (pins > 0)
 * and refuses free() and __close until the graph is gone (the collector
 * frees it with the graph). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "kb.h"
#include "../../kernels/compare_cpu.h"
#include "../../kernels/parallel_cpu.h"
#include "../../kernels/tensor_ops.h"
#include "trust.h"

static kb_tensor *to_tensor(lua_State *L, int arg) {
  return (kb_tensor *)luaL_checkudata(L, arg, KB_TENSOR_MT);
}

kb_tensor *kb_check_tensor(lua_State *L, int arg) {
  kb_tensor *t = to_tensor(L, arg);
  if (t->freed) luaL_argerror(L, arg, "tensor has been freed");
  kb_capture_note(L, arg);
  return t;
}

/* The dtype named s, or -1: the API's names (f32) and the records' (fp32)
 * alike, so that a dtype copied from a workload id works. */
static int dtype_of(const char *s) {
  static const char *const records[KB_NDTYPES] = {"bf16", "fp16", "fp32", "fp64"};
  for (int i = 0; i < KB_NDTYPES; i++)
    if (strcmp(s, kb_dtype_name((kb_dtype)i)) == 0 || strcmp(s, records[i]) == 0) return i;
  return -1;
}

kb_dtype kb_check_dtype(lua_State *L, int arg, int def) {
  if (def >= 0 && lua_isnoneornil(L, arg)) return (kb_dtype)def;
  const char *s = kb_check_cstring(L, arg, NULL, "dtype");
  int i = dtype_of(s);
  if (i >= 0) return (kb_dtype)i;
  luaL_argerror(L, arg, lua_pushfstring(L, "unknown dtype '%s' (expected bf16, f16, f32 or f64; fp16, fp32 "
                                           "and fp64 name the same)", s));
  return KB_F32;
}

/* "[1, 2048, 32, 16]" into buf. */
const char *kb_shape_str(const kb_tensor *t, char *buf, size_t n) {
  size_t off = 0;
  off += (size_t)snprintf(buf + off, n - off, "[");
  for (int i = 0; i < t->ndim && off < n; i++)
    off += (size_t)snprintf(buf + off, n - off, i ? ", %lld" : "%lld", (long long)t->shape[i]);
  if (off < n) snprintf(buf + off, n - off, "]");
  return buf;
}

/* Declared in kb.h: the one shape check. Bounding the byte size of the
 * non-zero dimensions, whatever the order and whatever zeros the shape
 * holds, keeps every partial product of the dimensions (numel, the outer
 * and inner counts of a reduction, a batch count) inside an int64_t: a zero
 * dimension must not hide {2^62, 4, 0}, whose 2^64 rows a kernel would
 * still walk. */
const char *kb_shape_problem(const int64_t *shape, int ndim, kb_dtype dtype) {
  if (ndim < 0 || ndim > KB_MAX_DIMS) return "shape has more dimensions than the 8 supported";
  int64_t bytes = (int64_t)kb_dtype_size(dtype);
  for (int i = 0; i < ndim; i++) {
    if (shape[i] < 0) return "shape has a negative dimension";
    if (shape[i] > 0 && (__builtin_mul_overflow(bytes, shape[i], &bytes) || bytes > ((int64_t)1 << 62)))
      return "shape is too large (its size exceeds 2^62 bytes)";
  }
  return NULL;
}

/* Reads a shape table at `arg` into shape[], returns ndim: non-negative
 * integers that kb_shape_problem accepts. */
static int check_shape(lua_State *L, int arg, int64_t *shape, kb_dtype dtype) {
  luaL_checktype(L, arg, LUA_TTABLE);
  lua_Integer n = luaL_len(L, arg);
  if (n > KB_MAX_DIMS)
    luaL_argerror(L, arg, lua_pushfstring(L, "shape has %d dimensions, at most %d are supported", (int)n, KB_MAX_DIMS));
  for (lua_Integer i = 1; i <= n; i++) {
    lua_geti(L, arg, i);
    int ok;
    lua_Integer d = lua_tointegerx(L, -1, &ok);
    if (!ok || d < 0)
      luaL_argerror(L, arg, lua_pushfstring(L, "shape[%d] must be a non-negative integer, got %s",
                                            (int)i, ok ? lua_tostring(L, -1) : luaL_typename(L, -1)));
    lua_pop(L, 1);
    shape[i - 1] = d;
  }
  const char *problem = kb_shape_problem(shape, (int)n, dtype);
  if (problem) luaL_argerror(L, arg, problem);
  return (int)n;
}

kb_tensor *kb_push_tensor(lua_State *L, const kb_backend *dev, kb_dtype dtype, int ndim,
                          const int64_t *shape) {
  kb_check_not_finalizing(L, "a tensor");
  const char *problem = kb_shape_problem(shape, ndim, dtype);
  if (problem) { /* what an operation computed (a broadcast, a product): nothing is allocated */
    kb_tensor shown = {.ndim = ndim < 0 || ndim > KB_MAX_DIMS ? 0 : ndim};
    memcpy(shown.shape, shape, sizeof(int64_t) * (size_t)shown.ndim);
    char sb[160];
    luaL_error(L, "cannot make a %s tensor of shape %s: %s", kb_dtype_name(dtype), kb_shape_str(&shown, sb, sizeof sb),
               problem);
  }
  kb_tensor *t = (kb_tensor *)lua_newuserdatauv(L, sizeof *t, 0);
  memset(t, 0, sizeof *t);
  t->freed = 1; /* closed until storage exists */
  luaL_setmetatable(L, KB_TENSOR_MT);
  t->dev = dev;
  t->dtype = dtype;
  t->ndim = ndim;
  t->numel = 1;
  for (int i = 0; i < ndim; i++) {
    t->shape[i] = shape[i];
    t->numel *= shape[i];
  }
  void *p = NULL;
  const char *err = kb_alloc_collecting(L, dev, &p, kb_tensor_nbytes(t));
  if (err) {
    char sb[160];
    luaL_error(L, "cannot allocate tensor %s %s on %s (%I bytes): %s", kb_shape_str(t, sb, sizeof sb),
               kb_dtype_name(dtype), dev->device, (lua_Integer)kb_tensor_nbytes(t), err);
  }
  t->data = p;
  t->freed = 0;
  kb_capture_note(L, -1);
  return t;
}

kb_tensor *kb_push_foreign_tensor(lua_State *L, const kb_backend *dev, kb_dtype dtype, int ndim,
                                  const int64_t *shape) {
  const char *problem = kb_shape_problem(shape, ndim, dtype);
  if (problem) luaL_error(L, "cannot take a %s tensor from another library: %s", kb_dtype_name(dtype), problem);
  kb_tensor *t = (kb_tensor *)lua_newuserdatauv(L, sizeof *t, 0);
  memset(t, 0, sizeof *t);
  t->freed = 1; /* closed until kb_tensor_adopt */
  luaL_setmetatable(L, KB_TENSOR_MT);
  t->dev = dev;
  t->dtype = dtype;
  t->ndim = ndim;
  t->numel = 1;
  for (int i = 0; i < ndim; i++) {
    t->shape[i] = shape[i];
    t->numel *= shape[i];
  }
  return t;
}

void kb_tensor_adopt(lua_State *L, kb_tensor *t, void *data, void (*release)(void *), void *owner) {
  t->data = data;
  t->owner_release = release;
  t->owner = owner;
  t->freed = 0; /* from here the collector releases the owner, whatever raises below */
  kb_foreign_bytes(L, kb_tensor_nbytes(t));
  kb_capture_note(L, -1);
}

/* Bytes of each staging buffer (backend host_stage): a comparison's slice is as many whole chunks of
 * the wider dtype as fit (32 of bf16), a host copy's slice this many bytes. */
#define KB_STAGE_BYTES ((size_t)64 << 20)

typedef struct {
  char *dst;
  const char *src;
} copy_job;

static void copy_blocks(void *ctx, size_t b0, size_t b1) {
  copy_job *j = ctx;
  memcpy(j->dst + (b0 << 20), j->src + (b0 << 20), (b1 - b0) << 20);
}

/* n bytes from src to dst, over the cores in blocks of 1 MiB (the page faults of a fresh
 * destination too); the tail after the last whole block on the calling thread. */
static void host_memcpy(void *dst, const void *src, size_t n) {
  copy_job j = {dst, src};
  size_t blocks = n >> 20;
  kb_cpu_parallel_for(blocks, 8, copy_blocks, &j);
  memcpy((char *)dst + (blocks << 20), (const char *)src + (blocks << 20), n - (blocks << 20));
}

/* A tensor's bytes read piece by piece on the host: a cpu tensor whole, in place; a cuda tensor a
 * slice at a time through the backend's staging buffer 0 (pinned), each slice overwriting the last.
 * A whole tensor copied into fresh pageable memory by the driver read 1.9 GB/s on the H200's host
 * (2026-12-04). host_reader_next has kb_sha256_next_fn's shape, so a digest hashes the pieces. */
typedef struct {
  const kb_tensor *t;
  void *stage; /* NULL: in place */
  size_t slice, off;
} host_reader;

/* Raises when the staging buffer cannot be had. */
static void host_reader_open(lua_State *L, const kb_tensor *t, host_reader *r) {
  size_t n = kb_tensor_nbytes(t);
  *r = (host_reader){t, NULL, n, 0};
  if (kb_on_cuda(t->dev) && n > 0) {
    r->slice = n < KB_STAGE_BYTES ? n : KB_STAGE_BYTES;
    KB_TRY(L, t->dev->host_stage(t->dev, 0, r->slice, &r->stage));
  }
}

/* The next piece in *p and *n (0 at the end), or an error. */
static const char *host_reader_next(void *ctx, const void **p, size_t *n) {
  host_reader *r = ctx;
  size_t total = kb_tensor_nbytes(r->t);
  *n = total - r->off < r->slice ? total - r->off : r->slice;
  if (*n == 0) return NULL;
  if (r->stage) {
    const char *err = r->t->dev->to_host(r->t->dev, r->stage, (const char *)r->t->data + r->off, *n);
    if (err) return err;
    *p = r->stage;
  } else {
    *p = (const char *)r->t->data + r->off;
  }
  r->off += *n;
  return NULL;
}

/* t's bytes into host memory dst: a cpu tensor's copied; a cuda tensor's a slice at a time through
 * the staging buffer, then over the cores into dst. */
static void tensor_to_host(lua_State *L, const kb_tensor *t, void *dst) {
  if (!kb_on_cuda(t->dev)) {
    KB_TRY(L, t->dev->to_host(t->dev, dst, t->data, kb_tensor_nbytes(t)));
    return;
  }
  host_reader r;
  host_reader_open(L, t, &r);
  for (char *d = dst;;) {
    const void *p = NULL;
    size_t n = 0;
    KB_TRY(L, host_reader_next(&r, &p, &n));
    if (n == 0) return;
    host_memcpy(d, p, n);
    d += n;
  }
}

void *kb_tensor_host_copy(lua_State *L, const kb_tensor *t) {
  size_t n = kb_tensor_nbytes(t);
  void *h = lua_newuserdatauv(L, n ? n : 1, 0);
  tensor_to_host(L, t, h);
  return h;
}

static const char *fetch_pair(void *ctx, size_t i0, size_t n, const void **a, const void **b) {
  kb_tensor_pair *p = ctx;
  const void **out[2] = {a, b};
  for (int k = 0; k < 2; k++) {
    const kb_tensor *t = p->t[k];
    size_t es = kb_dtype_size(t->dtype);
    const char *src = (const char *)t->data + i0 * es;
    if (p->stage[k]) {
      const char *err = t->dev->to_host(t->dev, p->stage[k], src, n * es);
      if (err) return err;
      *out[k] = p->stage[k];
    } else {
      *out[k] = src; /* copying two 80 MB cpu tensors took longer than comparing them */
    }
  }
  return NULL;
}

void kb_tensor_compare_source(lua_State *L, const kb_tensor *a, const kb_tensor *b, kb_tensor_pair *pair,
                              kb_compare_source *src) {
  size_t es = kb_dtype_size(a->dtype) > kb_dtype_size(b->dtype) ? kb_dtype_size(a->dtype) : kb_dtype_size(b->dtype);
  size_t slice = KB_STAGE_BYTES / es;
  pair->t[0] = a;
  pair->t[1] = b;
  src->fetch = fetch_pair;
  src->ctx = pair;
  src->slice = 0;
  for (int k = 0; k < 2; k++) {
    const kb_tensor *t = pair->t[k];
    pair->stage[k] = NULL;
    if (kb_on_cuda(t->dev)) {
      /* a fetch never asks for more than the tensor: a small comparison pins a small buffer */
      size_t need = slice < (size_t)t->numel ? slice : (size_t)t->numel;
      if (need == 0) need = 1; /* an empty tensor still gets a buffer: a NULL stage reads in place */
      KB_TRY(L, t->dev->host_stage(t->dev, k, need * kb_dtype_size(t->dtype), &pair->stage[k]));
      src->slice = slice;
    }
  }
}

/*** A tensor with uninitialised contents.
 *
 * shape is a list of non-negative integers (at most 8 dimensions); dtype is bf16, f16, f32 or f64
 * (every constructor and t:to also take the records' spelling: fp16, fp32, fp64) and defaults to
 * "f32", device to the selected backend.
 *
 * @signature kb.empty(shape [, dtype [, device]]) -> Tensor
 * @section tensors
 * @example
 *   local t = kb.empty({2, 3}, "bf16")
 */
/* ---- constructors ------------------------------------------------------ */

static int l_empty(lua_State *L) {
  kb_dtype dt = kb_check_dtype(L, 2, KB_F32);
  int64_t shape[KB_MAX_DIMS];
  int nd = check_shape(L, 1, shape, dt);
  kb_push_tensor(L, kb_check_device(L, 3), dt, nd, shape);
  return 1;
}

/*** A tensor of zeros.
 *
 * @signature kb.zeros(shape [, dtype [, device]]) -> Tensor
 * @section tensors
 * @example
 *   local z = kb.zeros({4}, "f64", "cpu")
 *   print(z) --> kluabench.Tensor([4], f64, cpu) [0, 0, 0, 0]
 */
static int l_zeros(lua_State *L) {
  kb_dtype dt = kb_check_dtype(L, 2, KB_F32);
  int64_t shape[KB_MAX_DIMS];
  int nd = check_shape(L, 1, shape, dt);
  kb_tensor *t = kb_push_tensor(L, kb_check_device(L, 3), dt, nd, shape);
  KB_TRY(L, t->dev->fill(t->dev, t->data, dt, (size_t)t->numel, 0.0));
  return 1;
}

/*** Standard normal values, deterministic per seed (default 0).
 *
 * A counter-based generator (Philox4x32-10 and Box-Muller) gives the same values on every backend
 * and machine for the same seed, shape and dtype (within 1 ulp of f32), so a GPU result can always
 * be checked against the CPU path.
 *
 * @signature kb.randn(shape [, dtype [, seed [, device]]]) -> Tensor
 * @section tensors
 * @example
 *   local q = kb.randn({1, 2048, 32, 16}, "bf16", 42)
 */
static int l_randn(lua_State *L) {
  kb_dtype dt = kb_check_dtype(L, 2, KB_F32);
  int64_t shape[KB_MAX_DIMS];
  int nd = check_shape(L, 1, shape, dt);
  lua_Integer seed = luaL_optinteger(L, 3, 0);
  kb_tensor *t = kb_push_tensor(L, kb_check_device(L, 4), dt, nd, shape);
  /* under kb.trust.seed_key, a seed the script wrote is not the one used */
  KB_TRY(L, t->dev->randn(t->dev, t->data, dt, (size_t)t->numel, kb_seed_keyed((uint64_t)seed)));
  return 1;
}

/*** A tensor holding a flat list of numbers (row-major), shape {#values} by default.
 *
 * Values are rounded to the dtype to nearest, ties to even.
 *
 * @signature kb.from_table(values [, shape [, dtype [, device]]]) -> Tensor
 * @section tensors
 * @example
 *   local m = kb.from_table({1, 2, 3, 4, 5, 6}, {2, 3}, "f32")
 */
/* from_table(values, shape?, dtype?, device?): shape defaults to {#values}. */
static int l_from_table(lua_State *L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  kb_dtype dt = kb_check_dtype(L, 3, KB_F32);
  int64_t shape[KB_MAX_DIMS];
  lua_Integer n = luaL_len(L, 1);
  int nd = 1;
  shape[0] = n;
  if (!lua_isnoneornil(L, 2)) nd = check_shape(L, 2, shape, dt);
  int64_t numel = 1;
  for (int i = 0; i < nd; i++) numel *= shape[i];
  if (numel != n)
    luaL_argerror(L, 1, lua_pushfstring(L, "has %d values, shape needs %d", (int)n, (int)numel));
  const kb_backend *dev = kb_check_device(L, 4);
  size_t bytes = (size_t)numel * kb_dtype_size(dt);
  void *h = lua_newuserdatauv(L, bytes ? bytes : 1, 0); /* Lua owns it: no leak on error */
  for (lua_Integer i = 1; i <= n; i++) {
    int ok;
    lua_geti(L, 1, i);
    lua_Number x = lua_tonumberx(L, -1, &ok);
    if (!ok)
      luaL_argerror(L, 1, lua_pushfstring(L, "value %d is a %s, not a number", (int)i, luaL_typename(L, -1)));
    lua_pop(L, 1);
    kb_store_f64(h, dt, (size_t)(i - 1), x);
  }
  kb_tensor *out = kb_push_tensor(L, dev, dt, nd, shape);
  KB_TRY(L, dev->from_host(dev, out->data, h, bytes));
  return 1;
}

/*** The number of elements (also `#t`).
 *
 * @signature t:numel() -> integer
 * @section tensor_methods
 * @example
 *   local t = kb.empty({2, 3})
 *   print(t:numel(), #t) --> 6  6
 */
/* ---- methods ----------------------------------------------------------- */

static int m_numel(lua_State *L) {
  lua_pushinteger(L, kb_check_tensor(L, 1)->numel);
  return 1;
}

/*** The size of the data in bytes.
 *
 * @signature t:nbytes() -> integer
 * @section tensor_methods
 * @example
 *   local q = kb.empty({1, 2048, 32, 16}, "bf16")
 *   local k = kb.empty({1, 2048, 8, 16}, "bf16")
 *   local gb = (q:nbytes() + k:nbytes()) * 2 / 1e9 -- read once and written once
 */
static int m_nbytes(lua_State *L) {
  lua_pushinteger(L, (lua_Integer)kb_tensor_nbytes(kb_check_tensor(L, 1)));
  return 1;
}

/*** The values as a flat row-major list of Lua numbers (copied to the host).
 *
 * @signature t:totable() -> {numbers}
 * @section tensor_methods
 * @example
 *   local v = kb.randn({3}):totable()
 *   print(v[1], v[2], v[3])
 */
static int m_totable(lua_State *L) {
  kb_tensor *t = kb_check_tensor(L, 1);
  void *h = kb_tensor_host_copy(L, t);
  lua_createtable(L, (int)t->numel, 0);
  for (int64_t i = 0; i < t->numel; i++) {
    lua_pushnumber(L, kb_load_f64(h, t->dtype, (size_t)i));
    lua_seti(L, -2, i + 1);
  }
  return 1;
}

/* dst <- src for tensors of equal shape: same device and dtype is a device
 * copy, same device is a device conversion, across devices goes through a
 * host buffer (converted on the host when the dtypes differ). */
static void copy_into(lua_State *L, kb_tensor *dst, const kb_tensor *src) {
  if (dst->dev == src->dev) {
    if (dst->dtype == src->dtype)
      KB_TRY(L, dst->dev->copy(dst->dev, dst->data, src->data, kb_tensor_nbytes(dst)));
    else
      KB_TRY(L, dst->dev->convert(dst->dev, dst->data, dst->dtype, src->data, src->dtype,
                                  (size_t)dst->numel));
    return;
  }
  if (dst->dtype == src->dtype && !kb_on_cuda(dst->dev)) { /* to the cpu: straight into dst */
    tensor_to_host(L, src, dst->data);
    return;
  }
  int top = lua_gettop(L);
  /* from the cpu: read in place */
  const void *h = kb_on_cuda(src->dev) ? kb_tensor_host_copy(L, src) : src->data;
  if (dst->dtype != src->dtype) {
    void *c = lua_newuserdatauv(L, kb_tensor_nbytes(dst) ? kb_tensor_nbytes(dst) : 1, 0);
    kb_convert_cpu(c, dst->dtype, h, src->dtype, (size_t)dst->numel);
    h = c;
  }
  KB_TRY(L, dst->dev->from_host(dst->dev, dst->data, h, kb_tensor_nbytes(dst)));
  lua_settop(L, top);
}

static int same_shape(const kb_tensor *a, const kb_tensor *b) {
  if (a->ndim != b->ndim) return 0;
  for (int i = 0; i < a->ndim; i++)
    if (a->shape[i] != b->shape[i]) return 0;
  return 1;
}

static void check_same_shape(lua_State *L, const kb_tensor *a, const kb_tensor *b, int arg) {
  if (same_shape(a, b)) return;
  char sa[160], sb[160];
  luaL_argerror(L, arg, lua_pushfstring(L, "shape %s does not match %s", kb_shape_str(b, sb, sizeof sb),
                                        kb_shape_str(a, sa, sizeof sa)));
}

/*** A copy on the same device.
 *
 * @signature t:clone() -> Tensor
 * @section tensor_methods
 * @example
 *   local q = kb.randn({2, 3}, "bf16", 1)
 *   local q0 = q:clone()
 *   q:fill_(0) -- q0 keeps the values
 */
static int m_clone(lua_State *L) {
  kb_tensor *t = kb_check_tensor(L, 1);
  kb_tensor *c = kb_push_tensor(L, t->dev, t->dtype, t->ndim, t->shape);
  copy_into(L, c, t);
  return 1;
}

/*** Copies src (same shape; any dtype or device) into t, converting as needed.
 *
 * @signature t:copy_(src) -> t
 * @section tensor_methods
 * @example
 *   local q = kb.randn({2, 3}, "bf16", 1)
 *   local wide = kb.empty(q.shape, "f32"):copy_(q)
 */
static int m_copy_(lua_State *L) {
  kb_tensor *dst = kb_check_tensor(L, 1), *src = kb_check_tensor(L, 2);
  check_same_shape(L, dst, src, 2);
  copy_into(L, dst, src);
  lua_settop(L, 1);
  return 1;
}

/*** Sets every element to x.
 *
 * @signature t:fill_(x) -> t
 * @section tensor_methods
 * @example
 *   local ones = kb.empty({8}):fill_(1)
 */
static int m_fill_(lua_State *L) {
  kb_tensor *t = kb_check_tensor(L, 1);
  double x = luaL_checknumber(L, 2);
  KB_TRY(L, t->dev->fill(t->dev, t->data, t->dtype, (size_t)t->numel, x));
  lua_settop(L, 1);
  return 1;
}

/*** A new tensor on another device ("cpu", "cuda", "cuda:N") or of another dtype.
 *
 * @signature t:to(device_or_dtype) -> Tensor
 * @section tensor_methods
 * @example
 *   local t = kb.randn({2, 3}, "f32", 1)
 *   local host = t:to("cpu")
 *   local wide = t:to("f64")
 */
/* t:to(x): a new tensor on device x ("cpu", "cuda", "cuda:N") or of dtype x. */
static int m_to(lua_State *L) {
  kb_tensor *t = kb_check_tensor(L, 1);
  const char *what = kb_check_cstring(L, 2, NULL, "device or dtype");
  const kb_backend *dev = t->dev;
  int i = dtype_of(what);
  kb_dtype dt = i >= 0 ? (kb_dtype)i : t->dtype;
  if (i < 0) dev = kb_check_device(L, 2);
  kb_tensor *c = kb_push_tensor(L, dev, dt, t->ndim, t->shape);
  copy_into(L, c, t);
  return 1;
}

/*** SHA-256 of the tensor's little-endian bytes.
 *
 * Equal on every backend for equal values: `kb.randn` tensors made with the same seed on cpu and
 * cuda have the same digest.
 *
 * @signature t:digest() -> "sha256:<64 hex>"
 * @section tensor_methods
 * @example
 *   print(kb.randn({16}, "f32", 1):digest())
 */
static int m_digest(lua_State *L) {
  kb_tensor *t = kb_check_tensor(L, 1);
  host_reader r; /* no copy of the whole tensor is made */
  host_reader_open(L, t, &r);
  char hex[65];
  KB_TRY(L, kb_sha256_hex_pieces(host_reader_next, &r, hex));
  lua_pushfstring(L, "sha256:%s", hex);
  return 1;
}

/* Releases the storage; idempotent. `verb` is the caller's name for the
 * refusal, NULL for the collector: an explicit free() and a <close>
 * variable going out of scope refuse a tensor pinned by a live CUDA graph
 * (the graph would write freed memory); the collector never sees one, since
 * any graph pinning the tensor references it and is unreachable too, so it
 * can never replay. */
static int release(lua_State *L, const char *verb) {
  kb_tensor *t = to_tensor(L, 1);
  if (t->freed) return 0;
  if (t->pins > 0 && verb)
    return luaL_error(L, "%s: tensor is used by a CUDA graph; free the graph first", verb);
  if (t->views > 0 && verb)
    return luaL_error(L, "%s: tensor is viewed by Python: a function kb.python called kept a view of it after "
                         "its call (freed once Python drops the view)", verb);
  if (t->views > 0) {
    /* the collector, only as the state closes (a lent tensor is referenced until Python drops its
     * views): the storage is left to the process's end, since Python may still read it */
  } else if (t->owner_release) {
    t->owner_release(t->owner);
  } else {
    kb_release(t->dev, t->data, kb_tensor_nbytes(t));
  }
  t->owner_release = NULL;
  t->owner = NULL;
  t->data = NULL;
  t->freed = 1;
  return 0;
}

/*** Frees the memory now; safe to call twice. Also `__gc` and `__close`.
 *
 * A tensor captured in a live CUDA graph refuses free(): free the graph first.
 *
 * @signature t:free()
 * @section tensor_methods
 * @example
 *   do
 *     local tmp <close> = kb.empty({1 << 20})
 *   end -- freed here
 */
static int m_free(lua_State *L) { return release(L, "free"); }
static int t_close(lua_State *L) { return release(L, "close"); }
static int t_gc(lua_State *L) { return release(L, NULL); }

/*** The shape, as a new list of integers.
 *
 * @signature t.shape -> {d1, d2, ...}
 * @section tensor_methods
 * @kind property
 * @example
 *   local q = kb.empty({1, 2048, 32, 16}, "bf16")
 *   local B, S, H, D = table.unpack(q.shape)
 *   print(S, H) --> 2048  32
 */
/* ---- properties, printing ------------------------------------------------ */

static int p_shape(lua_State *L, kb_tensor *t) {
  lua_createtable(L, t->ndim, 0);
  for (int i = 0; i < t->ndim; i++) {
    lua_pushinteger(L, t->shape[i]);
    lua_seti(L, -2, i + 1);
  }
  return 1;
}

/*** The element type.
 *
 * @signature t.dtype -> "bf16" | "f16" | "f32" | "f64"
 * @section tensor_methods
 * @kind property
 * @example
 *   print(kb.empty({2, 3}, "bf16").dtype) --> bf16
 */
static int p_dtype(lua_State *L, kb_tensor *t) {
  lua_pushstring(L, kb_dtype_name(t->dtype));
  return 1;
}

/*** The device holding the data.
 *
 * @signature t.device -> "cpu" | "cuda:N"
 * @section tensor_methods
 * @kind property
 * @example
 *   print(kb.empty({2, 3}, "f32", "cpu").device) --> cpu
 */
static int p_device(lua_State *L, kb_tensor *t) {
  lua_pushstring(L, t->dev->device);
  return 1;
}

/*** The number of dimensions.
 *
 * @signature t.ndim -> integer
 * @section tensor_methods
 * @kind property
 * @example
 *   local q = kb.empty({1, 2048, 32, 16}, "bf16")
 *   assert(q.ndim == 4)
 */
static int p_ndim(lua_State *L, kb_tensor *t) {
  lua_pushinteger(L, t->ndim);
  return 1;
}

typedef int (*prop_fn)(lua_State *L, kb_tensor *t);

/* __index: methods first (the method table is upvalue 1), then properties
 * (upvalue 2 maps names to light C functions); unknown keys give nil. */
static int t_index(lua_State *L) {
  lua_pushvalue(L, 2);
  if (lua_rawget(L, lua_upvalueindex(1)) != LUA_TNIL) return 1;
  lua_pushvalue(L, 2);
  if (lua_rawget(L, lua_upvalueindex(2)) != LUA_TLIGHTUSERDATA) return 1;
  prop_fn f = (prop_fn)(uintptr_t)lua_touserdata(L, -1);
  kb_tensor *t = to_tensor(L, 1);
  if (t->freed)
    return luaL_error(L, "attempt to read field '%s' of a freed kluabench.Tensor", lua_tostring(L, 2));
  return f(L, t);
}

static void format_value(char *buf, size_t n, double x) {
  snprintf(buf, n, "%.4g", x);
}

/* kluabench.Tensor([2, 3], f32, cpu) [0.1, -1.2, 0.33, ..., 2.1, 0.5, -0.7] */
static int t_tostring(lua_State *L) {
  kb_tensor *t = to_tensor(L, 1);
  if (t->freed) {
    lua_pushliteral(L, "kluabench.Tensor(freed)");
    return 1;
  }
  char sb[160];
  luaL_Buffer b;
  luaL_buffinit(L, &b);
  lua_pushfstring(L, "kluabench.Tensor(%s, %s, %s) [", kb_shape_str(t, sb, sizeof sb),
                  kb_dtype_name(t->dtype), t->dev->device);
  luaL_addvalue(&b);
  /* copy only the elements shown: first and last three */
  size_t es = kb_dtype_size(t->dtype), n = (size_t)t->numel, k = n <= 6 ? n : 3;
  unsigned char head[48], tail[48];
  KB_TRY(L, t->dev->to_host(t->dev, head, t->data, k * es));
  if (n > 6) KB_TRY(L, t->dev->to_host(t->dev, tail, (char *)t->data + (n - 3) * es, 3 * es));
  char v[32];
  for (size_t i = 0; i < k; i++) {
    format_value(v, sizeof v, kb_load_f64(head, t->dtype, i));
    luaL_addstring(&b, i ? ", " : "");
    luaL_addstring(&b, v);
  }
  if (n > 6) {
    luaL_addstring(&b, ", ...");
    for (size_t i = 0; i < 3; i++) {
      format_value(v, sizeof v, kb_load_f64(tail, t->dtype, i));
      luaL_addstring(&b, ", ");
      luaL_addstring(&b, v);
    }
  }
  luaL_addstring(&b, "]");
  luaL_pushresult(&b);
  return 1;
}

static int t_len(lua_State *L) { return m_numel(L); }

/* ---- comparisons --------------------------------------------------------- */

/*** The largest |a[i] - b[i]| of two tensors of equal shape (any dtypes and devices).
 *
 * NaN when either holds a NaN, so `kb.max_abs_diff(a, b) < tol` fails on NaN.
 *
 * @signature kb.max_abs_diff(a, b) -> number
 * @section tensors
 * @example
 *   local ref = kb.randn({256}, "f32", 1)
 *   local out = ref:to("f16") -- rounded to f16: off by at most half an f16 ulp
 *   assert(kb.max_abs_diff(out, ref) < 1e-2)
 */
/* a and b read on the host (kb_tensor_compare_source) and compared element
 * by element over the cores (kernels/compare_cpu.h); NaN when either holds a
 * NaN, so `diff < tol` fails on NaN. */
static int l_max_abs_diff(lua_State *L) {
  kb_tensor *a = kb_check_tensor(L, 1), *b = kb_check_tensor(L, 2);
  check_same_shape(L, a, b, 2);
  kb_tensor_pair pair;
  kb_compare_source src;
  kb_tensor_compare_source(L, a, b, &pair, &src);
  double m;
  const char *err = kb_compare_max_abs_diff(&src, a->dtype, b->dtype, (size_t)a->numel, &m);
  if (err) return luaL_error(L, "max_abs_diff of %I elements: %s", (lua_Integer)a->numel, err);
  lua_pushnumber(L, m);
  return 1;
}

/*** The relative L2 error ||a - b|| / ||b||, b being the reference.
 *
 * 0 when both are all zero, inf when only b is. The sums run over the cores in chunks of 2^20
 * elements, added in order: the same result on any machine.
 *
 * @signature kb.rel_l2(a, b) -> number
 * @section tensors
 * @example
 *   local out = kb.randn({256}, "f32", 1)        -- on the selected backend
 *   local ref = kb.randn({256}, "f32", 1, "cpu") -- the same values on the CPU path
 *   print(kb.rel_l2(out:to("cpu"), ref))
 */
/* ||a - b|| / ||b||, b being the reference; 0 when both are all zero, inf
 * when only b is. Summed per chunk of 2^20 elements, then over the chunks in
 * order (kernels/compare_cpu.h): the same on any number of cores. */
static int l_rel_l2(lua_State *L) {
  kb_tensor *a = kb_check_tensor(L, 1), *b = kb_check_tensor(L, 2);
  check_same_shape(L, a, b, 2);
  kb_tensor_pair pair;
  kb_compare_source src;
  kb_tensor_compare_source(L, a, b, &pair, &src);
  double r;
  const char *err = kb_compare_rel_l2(&src, a->dtype, b->dtype, (size_t)a->numel, &r);
  if (err) return luaL_error(L, "rel_l2 of %I elements: %s", (lua_Integer)a->numel, err);
  lua_pushnumber(L, r);
  return 1;
}

static const luaL_Reg methods[] = {
    {"numel", m_numel}, {"nbytes", m_nbytes}, {"totable", m_totable}, {"clone", m_clone},
    {"copy_", m_copy_}, {"fill_", m_fill_},   {"to", m_to},           {"digest", m_digest},
    {"free", m_free},   {NULL, NULL}};

static const struct { const char *name; prop_fn fn; } props[] = {
    {"shape", p_shape}, {"dtype", p_dtype}, {"device", p_device}, {"ndim", p_ndim}, {NULL, NULL}};

static const luaL_Reg functions[] = {
    {"empty", l_empty},           {"zeros", l_zeros},     {"randn", l_randn},
    {"from_table", l_from_table}, {"max_abs_diff", l_max_abs_diff}, {"rel_l2", l_rel_l2},
    {NULL, NULL}};

void kb_open_tensor(lua_State *L) {
  luaL_newmetatable(L, KB_TENSOR_MT);
  luaL_newlib(L, methods); /* upvalue 1: methods */
  lua_pushvalue(L, -1);
  lua_setfield(L, -3, "methods"); /* metatable.methods, for REPL completion */
  lua_newtable(L);                /* upvalue 2: properties */
  lua_newtable(L);                /* metatable.fields: their names, for REPL completion */
  for (int i = 0; props[i].name; i++) {
    lua_pushlightuserdata(L, (void *)(uintptr_t)props[i].fn);
    lua_setfield(L, -3, props[i].name);
    lua_pushboolean(L, 1);
    lua_setfield(L, -2, props[i].name);
  }
  lua_setfield(L, -4, "fields");
  lua_pushcclosure(L, t_index, 2);
  lua_setfield(L, -2, "__index");
  lua_pushcfunction(L, t_gc);
  lua_setfield(L, -2, "__gc");
  lua_pushcfunction(L, t_close);
  lua_setfield(L, -2, "__close");
  lua_pushcfunction(L, t_tostring);
  lua_setfield(L, -2, "__tostring");
  lua_pushcfunction(L, t_len);
  lua_setfield(L, -2, "__len");
  lua_pop(L, 1);
  luaL_setfuncs(L, functions, 0);
}
