/* kb.rope: the rotary position embedding kernels (kernels/rope.h) as Lua
 * functions, and the tables they multiply by.
 *
 *   kb.rope.freqs(seq_len, head_dim [, opts]) -> f32 [seq_len, head_dim/2, 2]
 *   kb.rope.cos_sin(seq_len, head_dim, dtype [, opts]) -> cos, sin [1, seq_len, head_dim]
 *   kb.rope.llama4_fwd / llama4_bwd(q, k, freqs [, opts]) -> q_out, k_out
 *   kb.rope.neox_fwd / neox_bwd(q, k, cos, sin [, opts]) -> q_out, k_out
 *   kb.rope.llama4_fwd_bwd(q, k, dq, dk, freqs [, opts]), neox_fwd_bwd(q, k, dq, dk, cos, sin
 *     [, opts]) -> q_out, k_out, dq_out, dk_out (forward of q, k and backward of dq, dk)
 *   kb.rope.floor(q, k, freqs [, opts]), neox_floor(q, k, cos, sin [, opts]) -> q_out, k_out
 *   kb.rope.floor_fwd_bwd(q, k, dq, dk, freqs [, opts]), neox_floor_fwd_bwd(q, k, dq, dk, cos,
 *     sin [, opts]) -> 4 copies
 *
 * This file is where a bad call stops: every shape, dtype, device and option
 * is checked here, and each failure is a Lua error naming the function, the
 * argument and what was wrong ("bad argument #3 to 'llama4_fwd' (freqs has
 * 1024 positions, q has seq 2048)"). The kernels trust what passes. The
 * function name in those messages comes from the binding itself, not from
 * the call site, so it reads the same however the function was reached. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include "kb.h"
#include "../../kernels/rope.h"

#define ROPE_SCRATCH_KEY "kluabench.rope.scratch"
#define ROPE_SINK_KEY "kluabench.rope.floor_sink"

/* ---- errors --------------------------------------------------------------- */

/* luaL_argerror's message with a fixed function name (never returns). */
static int rope_argerror(lua_State *L, const char *fn, int arg, const char *fmt, ...) {
  char msg[320];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return luaL_error(L, "bad argument #%d to '%s' (%s)", arg, fn, msg);
}

/* The tensor at `arg`, or an error in rope_argerror's form. */
static kb_tensor *check_tensor(lua_State *L, const char *fn, int arg, const char *what) {
  kb_tensor *t = (kb_tensor *)luaL_testudata(L, arg, KB_TENSOR_MT);
  if (!t)
    rope_argerror(L, fn, arg, "%s must be a kluabench.Tensor, got %s", what, luaL_typename(L, arg));
  if (t->freed) rope_argerror(L, fn, arg, "%s has been freed", what);
  return kb_check_tensor(L, arg); /* pins it while a CUDA graph is captured */
}

/* opts at `arg` is nil or a table whose keys are all in `known`. */
static void check_opts(lua_State *L, const char *fn, int arg, const char *const *known) {
  if (lua_isnoneornil(L, arg)) return;
  if (!lua_istable(L, arg))
    rope_argerror(L, fn, arg, "opts must be a table, got %s", luaL_typename(L, arg));
  lua_pushnil(L);
  while (lua_next(L, arg)) {
    int ok = 0;
    if (lua_type(L, -2) == LUA_TSTRING)
      for (int i = 0; known[i] && !ok; i++) ok = strcmp(lua_tostring(L, -2), known[i]) == 0;
    if (!ok) {
      const char *key = lua_type(L, -2) == LUA_TSTRING ? lua_tostring(L, -2) : luaL_typename(L, -2);
      rope_argerror(L, fn, arg, "unknown option '%s'", key);
    }
    lua_pop(L, 1);
  }
}

/* Pushes opts[key] (nil when opts is absent). */
static int get_opt(lua_State *L, int arg, const char *key) {
  if (!lua_istable(L, arg)) {
    lua_pushnil(L);
    return LUA_TNIL;
  }
  return lua_getfield(L, arg, key);
}

/* ---- kb.rope.freqs -------------------------------------------------------- */

/* Runs kb_check_device on the value at stack index 1 of a protected call. */
static int device_probe(lua_State *L) {
  lua_pushlightuserdata(L, (void *)kb_check_device(L, 1));
  return 1;
}

/* opts.device: nil -> the default backend; a name through kb_check_device,
 * its complaint re-raised against the opts argument. */
static const kb_backend *opt_device(lua_State *L, const char *fn, int arg) {
  get_opt(L, arg, "device");
  if (lua_isnil(L, -1)) {
    lua_pop(L, 1);
    return kb_default_backend();
  }
  if (lua_type(L, -1) != LUA_TSTRING)
    rope_argerror(L, fn, arg, "opts.device must be a string, got %s", luaL_typename(L, -1));
  lua_pushcfunction(L, device_probe);
  lua_insert(L, -2);
  if (lua_pcall(L, 1, 1, 0) != LUA_OK) {
    const char *m = lua_tostring(L, -1), *open = m ? strchr(m, '(') : NULL;
    size_t len = open ? strlen(open) : 0;
    if (open && len >= 2 && open[len - 1] == ')')
      rope_argerror(L, fn, arg, "opts.device: %.*s", (int)(len - 2), open + 1);
    rope_argerror(L, fn, arg, "opts.device: %s", m ? m : "not usable");
  }
  const kb_backend *dev = (const kb_backend *)lua_touserdata(L, -1);
  lua_pop(L, 1);
  return dev;
}

/* tbl[key], a finite positive number, or an error naming name.key */
static double opt_positive(lua_State *L, const char *fn, int arg, int tbl, const char *name,
                           const char *key) {
  const int t = lua_getfield(L, tbl, key);
  const double v = lua_tonumber(L, -1);
  if (t != LUA_TNUMBER || !(v > 0) || isinf(v))
    rope_argerror(L, fn, arg, "%s.%s must be a positive number, got %s", name, key,
                  t == LUA_TNUMBER ? lua_tostring(L, -1) : luaL_typename(L, -1));
  lua_pop(L, 1);
  return v;
}

/* opts.scaling: llama3 parameters, all four required. */
static int opt_scaling(lua_State *L, const char *fn, int arg, kb_rope_llama3_scaling *sc) {
  if (get_opt(L, arg, "scaling") == LUA_TNIL) {
    lua_pop(L, 1);
    return 0;
  }
  if (!lua_istable(L, -1))
    rope_argerror(L, fn, arg, "opts.scaling must be a table, got %s", luaL_typename(L, -1));
  const int t = lua_gettop(L);
  lua_pushnil(L);
  while (lua_next(L, t)) {
    const char *k = lua_type(L, -2) == LUA_TSTRING ? lua_tostring(L, -2) : "";
    if (strcmp(k, "factor") && strcmp(k, "low_freq_factor") && strcmp(k, "high_freq_factor") &&
        strcmp(k, "original_max_position_embeddings") && strcmp(k, "rope_type"))
      rope_argerror(L, fn, arg, "unknown option 'scaling.%s'",
                    *k ? k : luaL_typename(L, -2));
    lua_pop(L, 1);
  }
  if (lua_getfield(L, t, "rope_type") != LUA_TNIL &&
      !(lua_type(L, -1) == LUA_TSTRING && lua_rawlen(L, -1) == 6 && strcmp(lua_tostring(L, -1), "llama3") == 0))
    rope_argerror(L, fn, arg, "opts.scaling.rope_type must be 'llama3'");
  lua_pop(L, 1);
  sc->factor = opt_positive(L, fn, arg, t, "opts.scaling", "factor");
  sc->low_freq_factor = opt_positive(L, fn, arg, t, "opts.scaling", "low_freq_factor");
  sc->high_freq_factor = opt_positive(L, fn, arg, t, "opts.scaling", "high_freq_factor");
  sc->original_max_position_embeddings =
      opt_positive(L, fn, arg, t, "opts.scaling", "original_max_position_embeddings");
  if (!(sc->high_freq_factor > sc->low_freq_factor))
    rope_argerror(L, fn, arg, "opts.scaling.high_freq_factor (%g) must exceed low_freq_factor (%g)",
                  sc->high_freq_factor, sc->low_freq_factor);
  lua_pop(L, 1);
  return 1;
}

/* opts.positions: a Lua list or a tensor of any dtype and shape holding
 * seq_len numbers; with `batch` non-NULL also a 2-D tensor [B, seq_len] (a
 * row of positions per batch, *batch = B; else 1). Returns a Lua-owned array
 * (on the stack) or NULL. */
static const double *opt_positions(lua_State *L, const char *fn, int arg, int64_t seq,
                                   int64_t *batch) {
  int t = get_opt(L, arg, "positions");
  if (batch) *batch = 1;
  if (t == LUA_TNIL) {
    lua_pop(L, 1);
    return NULL;
  }
  const int idx = lua_gettop(L);
  kb_tensor *pt = t == LUA_TTABLE ? NULL : (kb_tensor *)luaL_testudata(L, idx, KB_TENSOR_MT);
  if (batch && pt && !pt->freed && pt->ndim == 2 && pt->shape[1] == seq && pt->shape[0] > 0)
    *batch = pt->shape[0];
  const int64_t rows = seq * (batch ? *batch : 1);
  double *pos = (double *)lua_newuserdatauv(L, (size_t)(rows ? rows : 1) * sizeof(double), 0);
  if (t == LUA_TTABLE) {
    const lua_Integer n = luaL_len(L, idx);
    if (n != seq)
      rope_argerror(L, fn, arg, "opts.positions has %lld entries, seq_len is %lld", (long long)n,
                    (long long)seq);
    for (lua_Integer i = 1; i <= n; i++) {
      int isnum;
      lua_geti(L, idx, i);
      pos[i - 1] = lua_tonumberx(L, -1, &isnum);
      if (lua_type(L, -1) != LUA_TNUMBER || !isnum)
        rope_argerror(L, fn, arg, "opts.positions[%lld] must be a number, got %s", (long long)i,
                      luaL_typename(L, -1));
      lua_pop(L, 1);
    }
  } else {
    if (!pt)
      rope_argerror(L, fn, arg, "opts.positions must be a list or a tensor, got %s",
                    luaL_typename(L, idx));
    if (pt->freed) rope_argerror(L, fn, arg, "opts.positions has been freed");
    if (pt->numel != rows)
      rope_argerror(L, fn, arg, "opts.positions has %lld elements, seq_len is %lld%s",
                    (long long)pt->numel, (long long)seq, batch ? " (or [batch, seq_len])" : "");
    const void *h = kb_tensor_host_copy(L, pt);
    for (int64_t i = 0; i < rows; i++) pos[i] = kb_load_f64(h, pt->dtype, (size_t)i);
    lua_pop(L, 1); /* the host copy */
  }
  for (int64_t i = 0; i < rows; i++)
    if (!isfinite(pos[i]))
      rope_argerror(L, fn, arg, "opts.positions[%lld] is not finite", (long long)(i + 1));
  return pos; /* the userdata stays on the stack above the positions value */
}

/* What a table is built from: seq_len (argument 1), head_dim (2) and the
 * options at oarg (theta, positions, scaling, device). */
typedef struct {
  int64_t seq, d, batch; /* batch: rows of positions (cos_sin's opts.positions [B, seq]) */
  double theta;
  kb_rope_llama3_scaling sc;
  int scaled;
  const kb_backend *dev;
  const double *pos; /* NULL: 0 .. seq-1; else batch * seq positions, on the stack */
} table_spec;

/* An integer argument of a table function: >= 0 (seq_len) or positive and
 * even (head_dim). */
static int64_t check_count(lua_State *L, const char *fn, int arg, int even) {
  int isint;
  const lua_Integer v = lua_tointegerx(L, arg, &isint);
  if (!isint || v < 0 || (even && (v == 0 || v % 2)))
    rope_argerror(L, fn, arg, even ? "head_dim must be a positive even integer, got %s"
                                   : "seq_len must be a non-negative integer, got %s",
                  lua_type(L, arg) == LUA_TNUMBER ? lua_tostring(L, arg) : luaL_typename(L, arg));
  return v;
}

/* The options at oarg, the last argument (seq_len and head_dim already in
 * t); batched: opts.positions may be [B, seq_len]. Leaves the positions (if
 * any) on the stack above oarg. */
static void check_table_opts(lua_State *L, const char *fn, int oarg, int batched, table_spec *t) {
  static const char *const known[] = {"theta", "positions", "scaling", "device", NULL};
  if (t->seq > ((int64_t)1 << 40) / t->d)
    rope_argerror(L, fn, 1, "seq_len %lld is too large", (long long)t->seq);
  if (lua_gettop(L) > oarg) rope_argerror(L, fn, oarg + 1, "expected at most %d arguments", oarg);
  lua_settop(L, oarg);
  check_opts(L, fn, oarg, known);
  t->theta = 10000.0;
  if (get_opt(L, oarg, "theta") != LUA_TNIL) {
    int isnum;
    t->theta = lua_tonumberx(L, -1, &isnum);
    if (lua_type(L, -1) != LUA_TNUMBER || !(t->theta > 0) || isinf(t->theta))
      rope_argerror(L, fn, oarg, "opts.theta must be a positive number, got %s",
                    lua_type(L, -1) == LUA_TNUMBER ? lua_tostring(L, -1) : luaL_typename(L, -1));
  }
  lua_pop(L, 1);
  t->scaled = opt_scaling(L, fn, oarg, &t->sc);
  t->dev = opt_device(L, fn, oarg);
  t->pos = opt_positions(L, fn, oarg, t->seq, batched ? &t->batch : NULL);
  if (!batched) t->batch = 1;
  if (t->batch > (((int64_t)1 << 40) / t->d) / (t->seq ? t->seq : 1))
    rope_argerror(L, fn, oarg, "opts.positions: %lld x %lld rows are too many", (long long)t->batch,
                  (long long)t->seq);
}

/* inv_freq of the spec, on the stack. */
static const float *push_inv_freq(lua_State *L, const table_spec *t) {
  float *inv = (float *)lua_newuserdatauv(L, (size_t)t->d / 2 * sizeof(float), 0);
  kb_rope_inv_freq_host(inv, t->d, t->theta, t->scaled ? &t->sc : NULL);
  return inv;
}

/*** The f32 [seq_len, head_dim/2, 2] table of (cos, sin) that Llama 4's RoPE (llama4_*) multiplies by.
 *
 * Equal to `view_as_real` of the `freqs_cis` of Hugging Face's `Llama4TextRotaryEmbedding`
 * (default rope type). opts: `theta` (default 10000.0); `positions` (a list or tensor of seq_len
 * positions instead of 0..seq_len-1); `scaling` (llama3 style: factor, low_freq_factor,
 * high_freq_factor, original_max_position_embeddings); `device` (default: the selected backend). A
 * table longer than seq serves any shorter q and k. The rotate-half kernels (neox_*) take
 * `kb.rope.cos_sin` instead.
 *
 * @signature kb.rope.freqs(seq_len, head_dim [, opts]) -> Tensor
 * @section rope
 * @example
 *   local f = kb.rope.freqs(2048, 128, {theta = 500000})
 */
static int l_freqs(lua_State *L) {
  const char *fn = "freqs";
  table_spec t;
  t.seq = check_count(L, fn, 1, 0);
  t.d = check_count(L, fn, 2, 1);
  check_table_opts(L, fn, 3, 0, &t);
  const float *inv = push_inv_freq(L, &t);
  const size_t bytes = (size_t)t.seq * (size_t)t.d * sizeof(float);
  float *table = (float *)lua_newuserdatauv(L, bytes ? bytes : 1, 0);
  kb_rope_freqs_host(table, t.seq, t.d, inv, t.pos);
  const int64_t shape[3] = {t.seq, t.d / 2, 2};
  kb_tensor *out = kb_push_tensor(L, t.dev, KB_F32, 3, shape);
  KB_TRY(L, t.dev->from_host(t.dev, out->data, table, bytes));
  return 1;
}

/* A dtype argument by name, or an error naming it. */
static kb_dtype check_dtype_arg(lua_State *L, const char *fn, int arg) {
  const char *s = lua_type(L, arg) == LUA_TSTRING ? lua_tostring(L, arg) : NULL;
  if (s) kb_refuse_nul(L, arg, fn, arg, "dtype");
  for (int i = 0; s && i < KB_NDTYPES; i++)
    if (strcmp(s, kb_dtype_name((kb_dtype)i)) == 0) return (kb_dtype)i;
  return (kb_dtype)rope_argerror(L, fn, arg, "dtype must be 'bf16', 'f16', 'f32' or 'f64', got %s%s%s",
                                 s ? "'" : "", s ? s : luaL_typename(L, arg), s ? "'" : "");
}

/*** cos and sin, each [1, seq_len, head_dim] in dtype, that rotate-half RoPE (neox_*) multiplies by.
 *
 * What Hugging Face's `LlamaRotaryEmbedding.forward` returns for the default rope type, bit for
 * bit: inv_freq and the angles position x inv_freq in f32, emb = cat(angles, angles), cos and sin
 * of emb in f32 (each correctly rounded; PyTorch's own may differ by an f32 ulp), then cast to
 * dtype, the model's dtype (`cos.to(x.dtype)`). The two halves of a row are equal; the kernels
 * read the first. opts: those of `kb.rope.freqs` (`theta`, `positions`, `scaling`, `device`);
 * `positions` may also be a tensor [batch, seq_len], for tables [batch, seq_len, head_dim] (a row
 * per token, as HF makes them from position_ids).
 *
 * @signature kb.rope.cos_sin(seq_len, head_dim, dtype [, opts]) -> cos, sin
 * @section rope
 * @example
 *   local cos, sin = kb.rope.cos_sin(2048, 128, "bf16", {theta = 500000})
 */
static int l_cos_sin(lua_State *L) {
  const char *fn = "cos_sin";
  table_spec t;
  t.seq = check_count(L, fn, 1, 0);
  t.d = check_count(L, fn, 2, 1);
  const kb_dtype dt = check_dtype_arg(L, fn, 3);
  check_table_opts(L, fn, 4, 1, &t);
  const float *inv = push_inv_freq(L, &t);
  const size_t bytes = (size_t)(t.batch * t.seq * t.d) * kb_dtype_size(dt);
  char *host = (char *)lua_newuserdatauv(L, bytes ? 2 * bytes : 1, 0);
  kb_rope_cos_sin_host(host, host + bytes, dt, t.batch * t.seq, t.d, inv, t.pos);
  const int64_t shape[3] = {t.batch, t.seq, t.d};
  for (int i = 0; i < 2; i++) {
    kb_tensor *out = kb_push_tensor(L, t.dev, dt, 3, shape);
    KB_TRY(L, t.dev->from_host(t.dev, out->data, host + i * bytes, bytes));
  }
  return 2;
}

/* ---- kb.rope.{llama4,neox}_{fwd,bwd} --------------------------------------- */

static void check_same_device(lua_State *L, const char *fn, int arg, const char *what,
                              const kb_tensor *t, const kb_tensor *q) {
  if (t->dev != q->dev)
    rope_argerror(L, fn, arg, "%s is on %s, q is on %s", what, t->dev->device, q->dev->device);
}

/* llama4: freqs at farg, f32 [>= seq, D/2, 2] on q's device. */
static void check_freqs(lua_State *L, const char *fn, int farg, kb_rope_args *a, const kb_tensor *q) {
  char sf[160];
  kb_tensor *f = check_tensor(L, fn, farg, "freqs");
  const int64_t d = a->head_dim;
  if (f->dtype != KB_F32)
    rope_argerror(L, fn, farg, "freqs must be f32, got %s", kb_dtype_name(f->dtype));
  if (f->ndim != 3 || f->shape[1] != d / 2 || f->shape[2] != 2)
    rope_argerror(L, fn, farg, "freqs must be [seq, %lld, 2] for head_dim %lld, got shape %s",
                  (long long)(d / 2), (long long)d, kb_shape_str(f, sf, sizeof sf));
  if (f->shape[0] < a->seq)
    rope_argerror(L, fn, farg, "freqs has %lld positions, q has seq %lld", (long long)f->shape[0],
                  (long long)a->seq);
  check_same_device(L, fn, farg, "freqs", f, q);
  a->freqs = (const float *)f->data;
}

/* neox: cos at farg and sin at farg + 1, as Hugging Face hands them: [1, >=
 * seq, D] (a table the batch shares) or [batch, seq, D] (a row per token),
 * in q's dtype, on q's device. */
static void check_cos_sin(lua_State *L, const char *fn, int farg, kb_rope_args *a, const kb_tensor *q) {
  char s1[160], s2[160];
  kb_tensor *c = check_tensor(L, fn, farg, "cos"), *sn = check_tensor(L, fn, farg + 1, "sin");
  const int64_t b = a->batch, s = a->seq, d = a->head_dim;
  if (c->ndim != 3)
    rope_argerror(L, fn, farg, "cos must be [1 or batch, seq, head_dim], got shape %s",
                  kb_shape_str(c, s1, sizeof s1));
  if (c->dtype != q->dtype)
    rope_argerror(L, fn, farg, "cos is %s, q is %s: the table comes in q's dtype "
                  "(kb.rope.cos_sin(seq, head_dim, '%s'))", kb_dtype_name(c->dtype),
                  kb_dtype_name(q->dtype), kb_dtype_name(q->dtype));
  if (c->shape[2] != d)
    rope_argerror(L, fn, farg, "cos has head_dim %lld, q has head_dim %lld", (long long)c->shape[2],
                  (long long)d);
  if (c->shape[0] != 1 && c->shape[0] != b)
    rope_argerror(L, fn, farg, "cos has batch %lld, q has batch %lld: cos must have batch 1 or q's",
                  (long long)c->shape[0], (long long)b);
  if (c->shape[0] == 1 && c->shape[1] < s)
    rope_argerror(L, fn, farg, "cos has %lld positions, q has seq %lld", (long long)c->shape[1],
                  (long long)s);
  if (c->shape[0] != 1 && c->shape[1] != s)
    rope_argerror(L, fn, farg, "cos has batch %lld and %lld positions: a table per batch must "
                  "have q's seq (%lld)", (long long)c->shape[0], (long long)c->shape[1], (long long)s);
  check_same_device(L, fn, farg, "cos", c, q);
  int same = sn->ndim == 3 && sn->dtype == c->dtype;
  for (int i = 0; same && i < 3; i++) same = sn->shape[i] == c->shape[i];
  if (!same)
    rope_argerror(L, fn, farg + 1, "sin is %s %s, cos is %s %s: they must match",
                  kb_dtype_name(sn->dtype), kb_shape_str(sn, s1, sizeof s1),
                  kb_dtype_name(c->dtype), kb_shape_str(c, s2, sizeof s2));
  check_same_device(L, fn, farg + 1, "sin", sn, q);
  a->cos = c->data;
  a->sin = sn->data;
  a->cos_period = c->shape[0] == 1 ? s : b * s;
}

/* Checks q (1), k (2) and the table at farg (llama4: freqs; neox: cos, sin)
 * and fills the kernel arguments but for the output pointers. */
static void check_rope_args(lua_State *L, const char *fn, kb_rope_args *a, kb_tensor **qp,
                            kb_tensor **kp, int farg) {
  char sq[160], sk[160];
  kb_tensor *q = check_tensor(L, fn, 1, "q"), *k = check_tensor(L, fn, 2, "k");
  if (q->ndim != 4)
    rope_argerror(L, fn, 1, "q must be 4-D [batch, seq, heads, head_dim], got shape %s",
                  kb_shape_str(q, sq, sizeof sq));
  if (k->ndim != 4)
    rope_argerror(L, fn, 2, "k must be 4-D [batch, seq, heads, head_dim], got shape %s",
                  kb_shape_str(k, sk, sizeof sk));
  const int64_t b = q->shape[0], s = q->shape[1], d = q->shape[3];
  if (k->shape[0] != b || k->shape[1] != s)
    rope_argerror(L, fn, 2, "k has shape %s, q has shape %s: batch and seq must match",
                  kb_shape_str(k, sk, sizeof sk), kb_shape_str(q, sq, sizeof sq));
  if (d <= 0 || d % 2)
    rope_argerror(L, fn, 1, "q has head_dim %lld, RoPE needs a positive even head_dim",
                  (long long)d);
  if (k->shape[3] != d)
    rope_argerror(L, fn, 2, "k has head_dim %lld, q has head_dim %lld", (long long)k->shape[3],
                  (long long)d);
  if (k->dtype != q->dtype)
    rope_argerror(L, fn, 2, "k is %s, q is %s", kb_dtype_name(k->dtype), kb_dtype_name(q->dtype));
  check_same_device(L, fn, 2, "k", k, q);
  a->dtype = q->dtype;
  a->batch = b;
  a->seq = s;
  a->q_heads = q->shape[2];
  a->k_heads = k->shape[2];
  a->head_dim = d;
  a->q = q->data;
  a->k = k->data;
  a->stream = q->dev->stream;
  if (a->style == KB_ROPE_NEOX) check_cos_sin(L, fn, farg, a, q);
  else check_freqs(L, fn, farg, a, q);
  *qp = q;
  *kp = k;
}

/* Checks that the tensor at `arg` (named `what`) has the shape, dtype and
 * device of `like` (named `like_name`): the gradients of full and floor_fwd_bwd. */
static kb_tensor *check_like(lua_State *L, const char *fn, int arg, const char *what,
                             const kb_tensor *like, const char *like_name) {
  char s1[160], s2[160];
  kb_tensor *t = check_tensor(L, fn, arg, what);
  int same = t->ndim == like->ndim;
  for (int i = 0; same && i < t->ndim; i++) same = t->shape[i] == like->shape[i];
  if (!same)
    rope_argerror(L, fn, arg, "%s has shape %s, %s has shape %s: they must match", what,
                  kb_shape_str(t, s1, sizeof s1), like_name, kb_shape_str(like, s2, sizeof s2));
  if (t->dtype != like->dtype)
    rope_argerror(L, fn, arg, "%s is %s, %s is %s", what, kb_dtype_name(t->dtype), like_name,
                  kb_dtype_name(like->dtype));
  check_same_device(L, fn, arg, what, t, like);
  return t;
}

/* Scratch on a device, under a registry key: the reference path's
 * temporaries and the floor's sink word. One buffer per device and key, kept
 * in the registry as a tensor and grown on demand, as PyTorch's caching
 * allocator keeps eager's temporaries off cudaMalloc. A buffer that a CUDA
 * graph captured stays alive with that graph (kb_capture_note pins it). */
static void *device_scratch(lua_State *L, const char *key, const kb_backend *dev, size_t bytes) {
  if (bytes == 0) return NULL;
  kb_scratch_table(L, key);
  lua_getfield(L, -1, dev->device);
  kb_tensor *t = (kb_tensor *)luaL_testudata(L, -1, KB_TENSOR_MT);
  if (!t || t->freed || t->dev != dev || kb_tensor_nbytes(t) < bytes) {
    lua_pop(L, 1);
    const int64_t n = (int64_t)((bytes + sizeof(float) - 1) / sizeof(float));
    t = kb_push_tensor(L, dev, KB_F32, 1, &n);
    lua_pushvalue(L, -1);
    lua_setfield(L, -3, dev->device);
  } else {
    kb_capture_note(L, -1);
  }
  lua_pop(L, 2);
  return t->data; /* alive: the registry table holds it */
}

enum { IMPL_FUSED, IMPL_REFERENCE, IMPL_FULL, IMPL_FLOOR };

/* An entry of the device's kb_rope_ops bound to its arguments, as the
 * backend's run_kernel takes it. */
typedef struct {
  const kb_rope_ops *ops;
  const kb_rope_args *a;
  void *scratch;
} rope_call;

static const char *run_fused(void *p) {
  const rope_call *c = (const rope_call *)p;
  return c->ops->fused(c->a);
}

static const char *run_reference(void *p) {
  const rope_call *c = (const rope_call *)p;
  return c->ops->reference(c->a, c->scratch);
}

static const char *run_full(void *p) {
  const rope_call *c = (const rope_call *)p;
  return c->ops->full(c->a);
}

static const char *run_floor(void *p) {
  const rope_call *c = (const rope_call *)p;
  return c->ops->floor(c->a, c->scratch);
}

/* Runs the fused or reference path on the tensors' device. The name is the
 * twin's entry point, which a cpu kb.trace record carries (constant
 * strings: nothing is formatted on the launch path). */
static void rope_launch(lua_State *L, const kb_backend *dev, int impl, const kb_rope_args *a) {
  static const char *const names[2][4] = {
      {"kb_rope_fused_cpu", "kb_rope_reference_cpu", "kb_rope_full_cpu", "kb_rope_floor_cpu"},
      {"kb_rope_fused_cuda", "kb_rope_reference_cuda", "kb_rope_full_cuda", "kb_rope_floor_cuda"}};
  static const char *(*const runs[4])(void *) = {run_fused, run_reference, run_full, run_floor};
  rope_call c = {KB_KERNEL_OPS(kb_rope_ops, dev), a, NULL};
  if (impl == IMPL_REFERENCE)
    c.scratch = device_scratch(L, ROPE_SCRATCH_KEY, dev, kb_rope_reference_scratch_bytes(a));
  else if (impl == IMPL_FLOOR)
    c.scratch = device_scratch(L, ROPE_SINK_KEY, dev,
                               kb_on_cuda(dev) ? KB_ROPE_FLOOR_SCRATCH : kb_rope_floor_scratch_bytes_cpu(a));
  KB_TRY(L, dev->run_kernel(dev, names[kb_on_cuda(dev)][impl], runs[impl], &c));
}

/* What a kb.rope function runs: one pass (fwd or bwd), the fused forward
 * and backward (full), or the floor of one or two passes. */
enum { KIND_PASS, KIND_FULL, KIND_FLOOR, KIND_FLOOR_FULL };

/* opts.impl: IMPL_FUSED (absent or "fused") or IMPL_REFERENCE. */
static int opt_impl(lua_State *L, const char *fn, int arg) {
  int impl = IMPL_FUSED;
  if (get_opt(L, arg, "impl") != LUA_TNIL) {
    const char *s = lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : NULL;
    if (s) kb_refuse_nul(L, -1, fn, arg, "opts.impl");
    if (s && strcmp(s, "reference") == 0) impl = IMPL_REFERENCE;
    else if (!s || strcmp(s, "fused") != 0)
      rope_argerror(L, fn, arg, "opts.impl must be 'fused' or 'reference', got %s%s%s",
                    s ? "'" : "", s ? s : luaL_typename(L, -1), s ? "'" : "");
  }
  lua_pop(L, 1);
  return impl;
}

/* Points the output of each of the n tensors at args 1..n at the tensor
 * itself (in place: all n must be distinct) or at a new tensor like it, and
 * pushes the n outputs. */
static void push_outputs(lua_State *L, const char *fn, int inplace, kb_tensor **in,
                         void **out, int n) {
  static const char *const names[] = {"q", "k", "dq", "dk"};
  for (int i = 0; i < n; i++) {
    if (!inplace) {
      out[i] = kb_push_tensor(L, in[i]->dev, in[i]->dtype, 4, in[i]->shape)->data;
      continue;
    }
    for (int j = 0; j < i; j++)
      if (in[j] == in[i])
        rope_argerror(L, fn, i + 1, "%s is the same tensor as %s: in place needs %s tensors",
                      names[i], names[j], n == 2 ? "two" : "four");
    out[i] = in[i]->data;
    lua_pushvalue(L, i + 1);
  }
}

/*** Llama 4 RoPE: pairs (2i, 2i+1) of q and k multiplied by freqs[s, i] as complex numbers.
 *
 * opts.impl: "fused" (default; one kernel for q and k) or "reference" (the unfused op sequence
 * PyTorch eager runs: upcast, complex multiply, downcast, with temporaries). opts.inplace = true
 * writes into q and k (and returns them). q and k share batch, seq, head_dim, dtype and device;
 * freqs is f32 [>= seq, head_dim/2, 2] on the same device. A mismatch is an error naming the
 * argument: "bad argument #3 to 'llama4_fwd' (freqs has 1024 positions, q has seq 2048)".
 *
 * @signature kb.rope.llama4_fwd(q, k, freqs [, opts]) -> q_out, k_out
 * @section rope
 * @example
 *   local q = kb.randn({1, 2048, 32, 16}, "bf16", 1)
 *   local k = kb.randn({1, 2048, 8, 16}, "bf16", 2)
 *   local f = kb.rope.freqs(2048, 16)
 *   local qo, ko = kb.rope.llama4_fwd(q, k, f)
 */
/*** Backward of llama4_fwd: the gradients multiplied by the conjugate of freqs.
 *
 * Same options as llama4_fwd; bwd(fwd(x)) equals x up to rounding.
 *
 * @signature kb.rope.llama4_bwd(dq, dk, freqs [, opts]) -> dq_in, dk_in
 * @section rope
 * @example
 *   local gq = kb.randn({1, 128, 32, 16}, "bf16", 1)
 *   local gk = kb.randn({1, 128, 8, 16}, "bf16", 2)
 *   local f = kb.rope.freqs(128, 16)
 *   local dq, dk = kb.rope.llama4_bwd(gq, gk, f, {impl = "reference"})
 */
/*** Rotate-half RoPE (pairs (i, i + D/2)), as Hugging Face's Llama/Qwen apply_rotary_pos_emb.
 *
 * cos and sin are what HF's LlamaRotaryEmbedding hands the model (`kb.rope.cos_sin`): each
 * [1, >= seq, head_dim] (shared by the batch) or [batch, seq, head_dim] (a row per token), in
 * q's dtype, the two halves of a row equal (the fused kernels read the first half; reference
 * reads whole rows, as PyTorch does). The math is f32 (f64 for f64), rounded once to the dtype.
 * Options as llama4_fwd.
 *
 * @signature kb.rope.neox_fwd(q, k, cos, sin [, opts]) -> q_out, k_out
 * @section rope
 * @example
 *   local q = kb.randn({1, 128, 32, 16}, "bf16", 1)
 *   local k = kb.randn({1, 128, 8, 16}, "bf16", 2)
 *   local cos, sin = kb.rope.cos_sin(128, 16, "bf16")
 *   local qo, ko = kb.rope.neox_fwd(q, k, cos, sin, {inplace = true})
 */
/*** Backward of neox_fwd: rotation by the same table with sin negated.
 *
 * @signature kb.rope.neox_bwd(dq, dk, cos, sin [, opts]) -> dq_in, dk_in
 * @section rope
 * @example
 *   local gq = kb.randn({1, 128, 32, 16}, "bf16", 1)
 *   local gk = kb.randn({1, 128, 8, 16}, "bf16", 2)
 *   local cos, sin = kb.rope.cos_sin(128, 16, "bf16")
 *   local dq, dk = kb.rope.neox_bwd(gq, gk, cos, sin)
 */
/*** llama4_fwd of q and k and llama4_bwd of dq and dk in one pass (one kernel launch on CUDA).
 *
 * The full mode of the benchmarks (a forward, then the backward of upstream gradients) as one
 * launch, bit for bit what the two calls write. dq and dk have the shapes, dtype and device of q
 * and k. opts.impl: "fused" (default) or "reference" (the reference forward, then the reference
 * backward); opts.inplace = true writes into all four tensors, which must then be distinct.
 *
 * @signature kb.rope.llama4_fwd_bwd(q, k, dq, dk, freqs [, opts]) -> q_out, k_out, dq_in, dk_in
 * @section rope
 * @example
 *   local q = kb.randn({1, 2048, 32, 16}, "bf16", 1)
 *   local k = kb.randn({1, 2048, 8, 16}, "bf16", 2)
 *   local f = kb.rope.freqs(2048, 16)
 *   local qo, ko, dq, dk = kb.rope.llama4_fwd_bwd(q, k, q:clone(), k:clone(), f)
 */
/*** neox_fwd of q and k and neox_bwd of dq and dk in one pass (one kernel launch on CUDA).
 *
 * Arguments as llama4_fwd_bwd with cos and sin (as neox_fwd) in place of freqs; same options.
 *
 * @signature kb.rope.neox_fwd_bwd(q, k, dq, dk, cos, sin [, opts]) -> q_out, k_out, dq_in, dk_in
 * @section rope
 * @example
 *   local q = kb.randn({1, 128, 32, 16}, "bf16", 1)
 *   local k = kb.randn({1, 128, 8, 16}, "bf16", 2)
 *   local cos, sin = kb.rope.cos_sin(128, 16, "bf16")
 *   local qo, ko, dq, dk = kb.rope.neox_fwd_bwd(q, k, q:clone(), k:clone(), cos, sin, {impl = "reference"})
 */
/*** The floor of a fused Llama 4 RoPE call: its bytes moved in one launch, without arithmetic.
 *
 * Reads q, k and rows [0, seq) of freqs once, writes q_out = q and k_out = k: the yardstick of the
 * fused kernels, their bytes in one launch with no arithmetic (the benchmarks' floor provider).
 * Takes the arguments of llama4_fwd; opts.inplace = true rewrites q and k with their own bytes.
 * `kb.rope.neox_floor` is the floor of the rotate-half calls.
 *
 * @signature kb.rope.floor(q, k, freqs [, opts]) -> q_out, k_out
 * @section rope
 * @example
 *   local q = kb.randn({1, 128, 32, 16}, "bf16", 1)
 *   local k = kb.randn({1, 128, 8, 16}, "bf16", 2)
 *   local f = kb.rope.freqs(128, 16)
 *   local q2, k2 = kb.rope.floor(q, k, f)
 */
/*** The floor of llama4_fwd_bwd: both passes' bytes in one launch.
 *
 * Copies q, k, dq and dk and reads the table once per pass. Same arguments as llama4_fwd_bwd;
 * opts.inplace only.
 *
 * @signature kb.rope.floor_fwd_bwd(q, k, dq, dk, freqs [, opts]) -> q_out, k_out, dq_out, dk_out
 * @section rope
 * @example
 *   local q = kb.randn({1, 128, 32, 16}, "bf16", 1)
 *   local k = kb.randn({1, 128, 8, 16}, "bf16", 2)
 *   local f = kb.rope.freqs(128, 16)
 *   local a, b, c, d = kb.rope.floor_fwd_bwd(q, k, q:clone(), k:clone(), f, {inplace = true})
 */
/*** The floor of a fused rotate-half RoPE call (neox_fwd, neox_bwd): its bytes in one launch.
 *
 * Reads q, k and the table bytes the fused kernels read (the first half of each row of cos and of
 * sin that the call uses) once, writes q_out = q and k_out = k, without arithmetic. Arguments as
 * neox_fwd; opts.inplace only.
 *
 * @signature kb.rope.neox_floor(q, k, cos, sin [, opts]) -> q_out, k_out
 * @section rope
 * @example
 *   local q = kb.randn({1, 128, 32, 16}, "bf16", 1)
 *   local k = kb.randn({1, 128, 8, 16}, "bf16", 2)
 *   local cos, sin = kb.rope.cos_sin(128, 16, "bf16")
 *   local q2, k2 = kb.rope.neox_floor(q, k, cos, sin)
 */
/*** The floor of neox_fwd_bwd: both passes' bytes in one launch.
 *
 * Copies q, k, dq and dk and reads the table (as neox_floor) once per pass. Arguments as
 * neox_fwd_bwd; opts.inplace only.
 *
 * @signature kb.rope.neox_floor_fwd_bwd(q, k, dq, dk, cos, sin [, opts]) -> q_out, k_out, dq_out, dk_out
 * @section rope
 * @example
 *   local q = kb.randn({1, 128, 32, 16}, "bf16", 1)
 *   local k = kb.randn({1, 128, 8, 16}, "bf16", 2)
 *   local cos, sin = kb.rope.cos_sin(128, 16, "bf16")
 *   local a, b, c, d = kb.rope.neox_floor_fwd_bwd(q, k, q:clone(), k:clone(), cos, sin)
 */
static int l_rope(lua_State *L) {
  static const char *const with_impl[] = {"impl", "inplace", NULL}, *const floor_opts[] = {"inplace", NULL};
  const char *fn = lua_tostring(L, lua_upvalueindex(1));
  const int kind = (int)lua_tointeger(L, lua_upvalueindex(4));
  const int pairs = kind == KIND_FULL || kind == KIND_FLOOR_FULL ? 2 : 1;
  kb_rope_args a;
  memset(&a, 0, sizeof a);
  a.style = (kb_rope_style)lua_tointeger(L, lua_upvalueindex(2));
  /* the table: freqs (llama4) or cos and sin (neox), then opts */
  const int farg = 2 * pairs + 1, oarg = farg + (a.style == KB_ROPE_NEOX ? 2 : 1);
  a.backward = (int)lua_tointeger(L, lua_upvalueindex(3));
  if (lua_gettop(L) > oarg) rope_argerror(L, fn, oarg + 1, "expected at most %d arguments", oarg);
  lua_settop(L, oarg);
  kb_tensor *t[4];
  check_rope_args(L, fn, &a, &t[0], &t[1], farg);
  if (pairs == 2) {
    t[2] = check_like(L, fn, 3, "dq", t[0], "q");
    t[3] = check_like(L, fn, 4, "dk", t[1], "k");
    a.dq = t[2]->data;
    a.dk = t[3]->data;
  }

  const int floor = kind == KIND_FLOOR || kind == KIND_FLOOR_FULL;
  check_opts(L, fn, oarg, floor ? floor_opts : with_impl);
  const int impl = floor ? IMPL_FLOOR : opt_impl(L, fn, oarg);
  int inplace = 0;
  if (get_opt(L, oarg, "inplace") != LUA_TNIL) {
    if (!lua_isboolean(L, -1))
      rope_argerror(L, fn, oarg, "opts.inplace must be a boolean, got %s", luaL_typename(L, -1));
    inplace = lua_toboolean(L, -1);
  }
  lua_settop(L, oarg);

  void *out[4] = {NULL, NULL, NULL, NULL};
  push_outputs(L, fn, inplace, t, out, 2 * pairs);
  a.q_out = out[0];
  a.k_out = out[1];
  a.dq_out = out[2];
  a.dk_out = out[3];
  if (kind != KIND_FULL) {
    rope_launch(L, t[0]->dev, impl, &a);
  } else if (impl == IMPL_FUSED) {
    rope_launch(L, t[0]->dev, IMPL_FULL, &a);
  } else { /* the reference forward, then the reference backward */
    kb_rope_args b = a;
    a.backward = 0;
    b.backward = 1;
    b.q = a.dq, b.k = a.dk, b.q_out = a.dq_out, b.k_out = a.dk_out;
    rope_launch(L, t[0]->dev, IMPL_REFERENCE, &a);
    rope_launch(L, t[0]->dev, IMPL_REFERENCE, &b);
  }
  return 2 * pairs;
}

void kb_open_rope(lua_State *L) {
  static const struct {
    const char *name;
    kb_rope_style style;
    int backward, kind;
  } fns[] = {
      {"llama4_fwd", KB_ROPE_LLAMA4, 0, KIND_PASS},
      {"llama4_bwd", KB_ROPE_LLAMA4, 1, KIND_PASS},
      {"llama4_fwd_bwd", KB_ROPE_LLAMA4, 0, KIND_FULL},
      {"neox_fwd", KB_ROPE_NEOX, 0, KIND_PASS},
      {"neox_bwd", KB_ROPE_NEOX, 1, KIND_PASS},
      {"neox_fwd_bwd", KB_ROPE_NEOX, 0, KIND_FULL},
      {"floor", KB_ROPE_LLAMA4, 0, KIND_FLOOR},
      {"floor_fwd_bwd", KB_ROPE_LLAMA4, 0, KIND_FLOOR_FULL},
      {"neox_floor", KB_ROPE_NEOX, 0, KIND_FLOOR},
      {"neox_floor_fwd_bwd", KB_ROPE_NEOX, 0, KIND_FLOOR_FULL},
  };
  lua_newtable(L);
  for (size_t i = 0; i < sizeof fns / sizeof fns[0]; i++) {
    lua_pushstring(L, fns[i].name);
    lua_pushinteger(L, fns[i].style);
    lua_pushinteger(L, fns[i].backward);
    lua_pushinteger(L, fns[i].kind);
    lua_pushcclosure(L, l_rope, 4);
    lua_setfield(L, -2, fns[i].name);
  }
  lua_pushcfunction(L, l_freqs);
  lua_setfield(L, -2, "freqs");
  lua_pushcfunction(L, l_cos_sin);
  lua_setfield(L, -2, "cos_sin");
  lua_setfield(L, -2, "rope");
}
