/* Tensor arithmetic as Tensor methods and operators (kernels/tensor_math.h):
 *
 *   a:add(b) a:sub(b) a:mul(b) a:div(b)     b a tensor or a number; a + b,
 *                                           a - b, a * b, a / b, 2 * a, -a
 *   a:add_(b) ... a:div_(b)                 in place (b broadcasts to a)
 *   t:neg() t:exp() t:sqrt() t:rsqrt()      and neg_, exp_, sqrt_, rsqrt_
 *   t:sum([dim [, keepdim]]) t:mean(...) t:max(...)
 *   a:matmul(b)                             2-D, or batched over leading dims
 *   t:cast(dtype) t:reshape(shape) t:item()
 *
 * Shapes broadcast as NumPy's do: aligned from the last dimension, each
 * pair of sizes equal or one of them 1 (a missing dimension counts as 1).
 * Both operands have one dtype and one device; a number is rounded to the
 * compute type (f32 for bf16/f16/f32, f64 for f64). dim counts as t.shape
 * does: 1 is the first dimension, -1 the last.
 *
 * Every check is made here, with luaL_argerror's messages (which number
 * the arguments as the call was written: `a:add(b)` makes b #1); the
 * kernels trust what passes. */
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include "kb.h"
#include "../../kernels/tensor_math.h"

/* ---- checks ---------------------------------------------------------------- */

/* The tensor at arg, on `dev` and of `dtype` like `like` (its name for the
 * message), or an argument error. */
static kb_tensor *check_like(lua_State *L, int arg, const kb_tensor *like) {
  kb_tensor *t = kb_check_tensor(L, arg);
  if (t->dev != like->dev)
    luaL_argerror(L, arg, lua_pushfstring(L, "tensor is on %s, the other operand on %s", t->dev->device,
                                          like->dev->device));
  if (t->dtype != like->dtype)
    luaL_argerror(L, arg, lua_pushfstring(L, "tensor is %s, the other operand %s (convert one with :cast)",
                                          kb_dtype_name(t->dtype), kb_dtype_name(like->dtype)));
  return t;
}

static int is_tensor(lua_State *L, int arg) { return luaL_testudata(L, arg, KB_TENSOR_MT) != NULL; }

/* The number at arg (a Lua number, not a numeric string). */
static double check_scalar(lua_State *L, int arg) {
  if (lua_type(L, arg) != LUA_TNUMBER) luaL_typeerror(L, arg, "kluabench.Tensor or number");
  return lua_tonumber(L, arg);
}

/* dim at arg (1-based, negative from the end) as a 0-based index. */
static int check_dim(lua_State *L, int arg, const kb_tensor *t) {
  int ok;
  lua_Integer d = lua_tointegerx(L, arg, &ok);
  if (!ok || lua_type(L, arg) != LUA_TNUMBER) luaL_typeerror(L, arg, "integer dim");
  if (t->ndim == 0)
    luaL_argerror(L, arg, "a tensor of shape [] has no dimension (leave dim out to reduce everything)");
  if (d < 0) d += t->ndim + 1;
  if (d < 1 || d > t->ndim)
    luaL_argerror(L, arg, lua_pushfstring(L, "dim %s is out of range for a %d-D tensor (1 to %d, or -%d to -1, "
                                             "counted as t.shape is)",
                                          lua_tostring(L, arg), t->ndim, t->ndim, t->ndim));
  return (int)d - 1;
}

/* ---- running a kernel ---------------------------------------------------- */

typedef struct {
  const kb_tensor_math_ops *ops;
  const void *args;
} math_call;

static const char *run_binary(void *p) {
  const math_call *c = p;
  return c->ops->binary(c->args);
}
static const char *run_unary(void *p) {
  const math_call *c = p;
  return c->ops->unary(c->args);
}
static const char *run_reduce(void *p) {
  const math_call *c = p;
  return c->ops->reduce(c->args);
}
static const char *run_matmul(void *p) {
  const math_call *c = p;
  return c->ops->matmul(c->args);
}

/* Runs fn on dev through run_kernel; name[on cuda] is what a cpu trace
 * records. */
static void launch(lua_State *L, const kb_backend *dev, const char *const name[2], kb_kernel_fn fn,
                   const void *args) {
  math_call c = {KB_KERNEL_OPS(kb_tensor_math_ops, dev), args};
  KB_TRY(L, dev->run_kernel(dev, name[kb_on_cuda(dev)], fn, &c));
}

/* ---- element-wise: a op b ------------------------------------------------- */

static const char *const BINARY_NAMES[2] = {"kb_math_binary_cpu", "kb_math_binary_cuda"};

/* shape[] := the broadcast of a and b's shapes; an error names both. */
static int broadcast_shape(lua_State *L, int arg, const kb_tensor *a, const kb_tensor *b, int64_t *shape) {
  const int nd = a->ndim > b->ndim ? a->ndim : b->ndim;
  for (int i = 0; i < nd; i++) {
    const int64_t da = i < a->ndim ? a->shape[a->ndim - 1 - i] : 1;
    const int64_t db = i < b->ndim ? b->shape[b->ndim - 1 - i] : 1;
    if (da != db && da != 1 && db != 1) {
      char sa[160], sb[160];
      luaL_argerror(L, arg, lua_pushfstring(L, "shapes %s and %s do not broadcast (dimension %d from the end: "
                                               "%I vs %I; sizes must be equal or 1)",
                                            kb_shape_str(a, sa, sizeof sa), kb_shape_str(b, sb, sizeof sb),
                                            i + 1, (lua_Integer)da, (lua_Integer)db));
    }
    shape[nd - 1 - i] = da == 1 ? db : da;
  }
  return nd;
}

/* Strides of t read over the output shape (0 along broadcast dimensions);
 * returns 1 when t has the output's shape (dense). */
static int operand_strides(const kb_tensor *t, int nd, const int64_t *shape, int64_t *stride) {
  int64_t s = 1;
  int dense = t->ndim == nd;
  for (int i = 0; i < nd; i++) {
    const int d = nd - 1 - i, td = t->ndim - 1 - i;
    if (td >= 0 && t->shape[td] == shape[d]) {
      stride[d] = shape[d] == 1 ? 0 : s;
      s *= t->shape[td];
    } else {
      stride[d] = 0; /* t's size is 1 here, or t has no such dimension */
      dense = 0;
    }
  }
  return dense;
}

/* a op b with a at index 1 and b at 2 (either may be a number when
 * `operators`, for the metamethods); in place writes into a. */
static int binary(lua_State *L, kb_math_binary_op op, int inplace, int operators) {
  kb_math_binary_args a;
  memset(&a, 0, sizeof a);
  a.op = op;
  int ta = 1, tb = 2;
  if (operators && !is_tensor(L, 1)) { /* 2 * t: the tensor is the second operand */
    a.scalar_first = 1;
    ta = 2, tb = 1;
  }
  kb_tensor *x = kb_check_tensor(L, ta), *y = NULL;
  if (is_tensor(L, tb)) y = check_like(L, tb, x);
  else a.scalar = check_scalar(L, tb);
  if (!y) {
    a.ndim = x->ndim;
    memcpy(a.shape, x->shape, sizeof a.shape);
    a.a_dense = 1;
  } else {
    a.ndim = broadcast_shape(L, tb, x, y, a.shape);
    a.a_dense = operand_strides(x, a.ndim, a.shape, a.a_stride);
    a.b_dense = operand_strides(y, a.ndim, a.shape, a.b_stride);
    if (inplace && !a.a_dense) {
      char sa[160], sb[160];
      luaL_argerror(L, tb, lua_pushfstring(L, "shape %s does not broadcast to %s (in place keeps the shape)",
                                           kb_shape_str(y, sb, sizeof sb), kb_shape_str(x, sa, sizeof sa)));
    }
  }
  a.dtype = x->dtype;
  a.a = x->data;
  a.b = y ? y->data : NULL;
  a.stream = x->dev->stream;
  if (inplace) { /* the broadcast shape is x's */
    a.out = x->data;
    a.numel = x->numel;
    lua_pushvalue(L, ta);
  } else { /* kb_push_tensor checks the broadcast shape before its count is taken */
    kb_tensor *out = kb_push_tensor(L, x->dev, x->dtype, a.ndim, a.shape);
    a.out = out->data;
    a.numel = out->numel;
  }
  if (a.numel == 0) return 1; /* nothing to compute */
  launch(L, x->dev, BINARY_NAMES, run_binary, &a);
  return 1;
}

/*** Element-wise t + b, b a tensor (broadcast) or a number; also `t + b`.
 *
 * The result has the broadcast shape of t and b. A number is rounded to the compute type (f32 for
 * bf16, f16 and f32; f64 for f64) and may stand on either side of the operator (`2 + t`).
 *
 * @signature t:add(b) -> Tensor
 * @section tensor_math
 * @example
 *   local a = kb.from_table({1, 2, 3, 4, 5, 6}, {2, 3})
 *   local b = kb.from_table({10, 20, 30})
 *   print(a:add(b)) --> shape [2, 3]
 *   print(a + 2, 2 + a)
 */
static int m_add(lua_State *L) { return binary(L, KB_MATH_ADD, 0, 0); }
/*** Element-wise t - b, b a tensor (broadcast) or a number; also `t - b`.
 *
 * The result has the broadcast shape of t and b. A number is rounded to the compute type (f32 for
 * bf16, f16 and f32; f64 for f64) and may stand on either side of the operator (`2 - t`).
 *
 * @signature t:sub(b) -> Tensor
 * @section tensor_math
 * @example
 *   local a = kb.from_table({1, 2, 3, 4, 5, 6}, {2, 3})
 *   local b = kb.from_table({10, 20, 30})
 *   print(a:sub(b)) --> shape [2, 3]
 *   print(a - 2, 2 - a)
 */
static int m_sub(lua_State *L) { return binary(L, KB_MATH_SUB, 0, 0); }
/*** Element-wise t * b, b a tensor (broadcast) or a number; also `t * b`.
 *
 * The result has the broadcast shape of t and b. A number is rounded to the compute type (f32 for
 * bf16, f16 and f32; f64 for f64) and may stand on either side of the operator (`2 * t`).
 *
 * @signature t:mul(b) -> Tensor
 * @section tensor_math
 * @example
 *   local a = kb.from_table({1, 2, 3, 4, 5, 6}, {2, 3})
 *   local b = kb.from_table({10, 20, 30})
 *   print(a:mul(b)) --> shape [2, 3]
 *   print(a * 2, 2 * a)
 */
static int m_mul(lua_State *L) { return binary(L, KB_MATH_MUL, 0, 0); }
/*** Element-wise t / b, b a tensor (broadcast) or a number; also `t / b`.
 *
 * The result has the broadcast shape of t and b. A number is rounded to the compute type (f32 for
 * bf16, f16 and f32; f64 for f64) and may stand on either side of the operator (`2 / t`).
 *
 * @signature t:div(b) -> Tensor
 * @section tensor_math
 * @example
 *   local a = kb.from_table({1, 2, 3, 4, 5, 6}, {2, 3})
 *   local b = kb.from_table({10, 20, 30})
 *   print(a:div(b)) --> shape [2, 3]
 *   print(a / 2, 2 / a)
 */
static int m_div(lua_State *L) { return binary(L, KB_MATH_DIV, 0, 0); }
/*** In place: t := t + b, b a tensor that broadcasts to t's shape, or a number.
 *
 * @signature t:add_(b) -> t
 * @section tensor_math
 * @example
 *   local y = kb.randn({4, 3})
 *   y:add_(kb.randn({3}, "f32", 1)):add_(2)
 */
static int m_add_(lua_State *L) { return binary(L, KB_MATH_ADD, 1, 0); }
/*** In place: t := t - b, b a tensor that broadcasts to t's shape, or a number.
 *
 * @signature t:sub_(b) -> t
 * @section tensor_math
 * @example
 *   local y = kb.randn({4, 3})
 *   y:sub_(kb.randn({3}, "f32", 1)):sub_(2)
 */
static int m_sub_(lua_State *L) { return binary(L, KB_MATH_SUB, 1, 0); }
/*** In place: t := t * b, b a tensor that broadcasts to t's shape, or a number.
 *
 * @signature t:mul_(b) -> t
 * @section tensor_math
 * @example
 *   local y = kb.randn({4, 3})
 *   y:mul_(kb.randn({3}, "f32", 1)):mul_(2)
 */
static int m_mul_(lua_State *L) { return binary(L, KB_MATH_MUL, 1, 0); }
/*** In place: t := t / b, b a tensor that broadcasts to t's shape, or a number.
 *
 * @signature t:div_(b) -> t
 * @section tensor_math
 * @example
 *   local y = kb.randn({4, 3})
 *   y:div_(kb.randn({3}, "f32", 1)):div_(2)
 */
static int m_div_(lua_State *L) { return binary(L, KB_MATH_DIV, 1, 0); }
static int mt_add(lua_State *L) { return binary(L, KB_MATH_ADD, 0, 1); }
static int mt_sub(lua_State *L) { return binary(L, KB_MATH_SUB, 0, 1); }
static int mt_mul(lua_State *L) { return binary(L, KB_MATH_MUL, 0, 1); }
static int mt_div(lua_State *L) { return binary(L, KB_MATH_DIV, 0, 1); }

/* ---- element-wise: op(t) --------------------------------------------------- */

static int unary(lua_State *L, kb_math_unary_op op, int inplace) {
  static const char *const names[2] = {"kb_math_unary_cpu", "kb_math_unary_cuda"};
  kb_tensor *t = kb_check_tensor(L, 1);
  kb_math_unary_args a = {op, t->dtype, t->numel, t->data, t->data, t->dev->stream};
  if (inplace) lua_pushvalue(L, 1);
  else a.out = kb_push_tensor(L, t->dev, t->dtype, t->ndim, t->shape)->data;
  launch(L, t->dev, names, run_unary, &a);
  return 1;
}

/*** Negation, -x; also `-t`.
 *
 * @signature t:neg() -> Tensor
 * @section tensor_math
 * @example
 *   local t = kb.from_table({1, 4, 9})
 *   print(t:neg())
 */
static int m_neg(lua_State *L) { return unary(L, KB_MATH_NEG, 0); }
/*** e^x.
 *
 * CUDA's expf and the C library's differ by up to 2 ulp of f32 (the only element-wise operation
 * whose twins are not bit for bit equal).
 *
 * @signature t:exp() -> Tensor
 * @section tensor_math
 * @example
 *   local t = kb.from_table({1, 4, 9})
 *   print(t:exp())
 */
static int m_exp(lua_State *L) { return unary(L, KB_MATH_EXP, 0); }
/*** The square root.
 *
 * @signature t:sqrt() -> Tensor
 * @section tensor_math
 * @example
 *   local t = kb.from_table({1, 4, 9})
 *   print(t:sqrt())
 */
static int m_sqrt(lua_State *L) { return unary(L, KB_MATH_SQRT, 0); }
/*** 1 / sqrt(x).
 *
 * Computed as 1 / sqrt(x), both correctly rounded (not the approximate rsqrtf).
 *
 * @signature t:rsqrt() -> Tensor
 * @section tensor_math
 * @example
 *   local t = kb.from_table({1, 4, 9})
 *   print(t:rsqrt())
 */
static int m_rsqrt(lua_State *L) { return unary(L, KB_MATH_RSQRT, 0); }
/*** In place: Negation.
 *
 * @signature t:neg_() -> t
 * @section tensor_math
 * @example
 *   local t = kb.from_table({1, 4, 9})
 *   print(t:neg_())
 */
static int m_neg_(lua_State *L) { return unary(L, KB_MATH_NEG, 1); }
/*** In place: e^x.
 *
 * CUDA's expf and the C library's differ by up to 2 ulp of f32 (the only element-wise operation
 * whose twins are not bit for bit equal).
 *
 * @signature t:exp_() -> t
 * @section tensor_math
 * @example
 *   local t = kb.from_table({1, 4, 9})
 *   print(t:exp_())
 */
static int m_exp_(lua_State *L) { return unary(L, KB_MATH_EXP, 1); }
/*** In place: The square root.
 *
 * @signature t:sqrt_() -> t
 * @section tensor_math
 * @example
 *   local t = kb.from_table({1, 4, 9})
 *   print(t:sqrt_())
 */
static int m_sqrt_(lua_State *L) { return unary(L, KB_MATH_SQRT, 1); }
/*** In place: 1 / sqrt(x).
 *
 * Computed as 1 / sqrt(x), both correctly rounded (not the approximate rsqrtf).
 *
 * @signature t:rsqrt_() -> t
 * @section tensor_math
 * @example
 *   local t = kb.from_table({1, 4, 9})
 *   print(t:rsqrt_())
 */
static int m_rsqrt_(lua_State *L) { return unary(L, KB_MATH_RSQRT, 1); }
/* __unm gets the operand twice; only the first one counts */
static int mt_unm(lua_State *L) {
  lua_settop(L, 1);
  return unary(L, KB_MATH_NEG, 0);
}

/* ---- reductions -------------------------------------------------------------- */

/* t:sum([dim [, keepdim]]): over dimension dim, or over every element when
 * dim is nil; keepdim keeps the reduced dimensions with size 1. */
static int reduce(lua_State *L, kb_math_reduce_op op) {
  static const char *const names[2] = {"kb_math_reduce_cpu", "kb_math_reduce_cuda"};
  kb_tensor *t = kb_check_tensor(L, 1);
  const int all = lua_isnoneornil(L, 2);
  const int d = all ? -1 : check_dim(L, 2, t);
  if (!lua_isnoneornil(L, 3) && !lua_isboolean(L, 3)) luaL_typeerror(L, 3, "boolean keepdim");
  const int keepdim = lua_toboolean(L, 3);
  kb_math_reduce_args a = {op, t->dtype, 1, t->numel, 1, t->data, NULL, t->dev->stream};
  int64_t shape[KB_MAX_DIMS];
  int nd = 0;
  if (all) {
    for (int i = 0; keepdim && i < t->ndim; i++) shape[nd++] = 1;
  } else {
    a.n = t->shape[d];
    for (int i = 0; i < t->ndim; i++) {
      if (i < d) a.outer *= t->shape[i];
      if (i > d) a.inner *= t->shape[i];
      if (i != d) shape[nd++] = t->shape[i];
      else if (keepdim) shape[nd++] = 1;
    }
  }
  if (op == KB_MATH_MAX && a.n == 0 && a.outer * a.inner > 0)
    luaL_argerror(L, all ? 1 : 2, all ? "max of an empty tensor" : lua_pushfstring(L, "max over dimension %d of size 0", d + 1));
  kb_tensor *out = kb_push_tensor(L, t->dev, t->dtype, nd, shape);
  a.out = out->data;
  /* no output element: nothing to walk, however many rows of nothing the input has
   * ({2^40, 4, 0}:sum(2) has 2^40 of them) */
  if (out->numel == 0) return 1;
  launch(L, t->dev, names, run_reduce, &a);
  return 1;
}

/*** The sum over dimension dim, or over every element when dim is nil.
 *
 * dim is 1-based like `t.shape` (-1 is the last dimension). The result drops that dimension, or
 * keeps it with size 1 when keepdim is true; over every element it has shape [] (`:item()` reads
 * it). Accumulates in f64 for every dtype and rounds once.
 *
 * @signature t:sum([dim [, keepdim]]) -> Tensor
 * @section tensor_math
 * @example
 *   local x = kb.from_table({1, 2, 3, 4, 5, 6}, {2, 3})
 *   print(x:sum(), x:sum(1), x:sum(-1, true))
 */
static int m_sum(lua_State *L) { return reduce(L, KB_MATH_SUM); }
/*** The mean over dimension dim, or over every element when dim is nil.
 *
 * dim is 1-based like `t.shape` (-1 is the last dimension). The result drops that dimension, or
 * keeps it with size 1 when keepdim is true; over every element it has shape [] (`:item()` reads
 * it). Accumulates in f64 for every dtype and rounds once. The mean of no element is NaN.
 *
 * @signature t:mean([dim [, keepdim]]) -> Tensor
 * @section tensor_math
 * @example
 *   local x = kb.from_table({1, 2, 3, 4, 5, 6}, {2, 3})
 *   print(x:mean(), x:mean(1), x:mean(-1, true))
 */
static int m_mean(lua_State *L) { return reduce(L, KB_MATH_MEAN); }
/*** The largest value over dimension dim, or over every element when dim is nil.
 *
 * dim is 1-based like `t.shape` (-1 is the last dimension). The result drops that dimension, or
 * keeps it with size 1 when keepdim is true; over every element it has shape [] (`:item()` reads
 * it). Returns the values only. NaN when any element is NaN; +0 beats -0; an empty dimension is an
 * error.
 *
 * @signature t:max([dim [, keepdim]]) -> Tensor
 * @section tensor_math
 * @example
 *   local x = kb.from_table({1, 2, 3, 4, 5, 6}, {2, 3})
 *   print(x:max(), x:max(1), x:max(-1, true))
 */
static int m_max(lua_State *L) { return reduce(L, KB_MATH_MAX); }

/* ---- matmul ------------------------------------------------------------------ */

/* Batch count of t's dimensions before the last two. */
static int64_t batch_of(const kb_tensor *t) {
  int64_t b = 1;
  for (int i = 0; i < t->ndim - 2; i++) b *= t->shape[i];
  return b;
}

/*** The matrix product [.., m, k] x [.., k, n] -> [.., m, n]: 2-D, or batched over the leading
 * dimensions.
 *
 * The leading dimensions of t and b are equal, or one operand is 2-D and is used for every matrix
 * of the other. On cuda it is cublasGemmStridedBatchedEx (libcublas opened at run time;
 * $KLUABENCH_CUBLAS names it when it is not found): f32 accumulation for bf16, f16 and f32 without
 * TF32, f64 for f64. On cpu the reference accumulates in f64 and rounds once. A vector is a [1, n]
 * or [n, 1] matrix (`t:reshape`).
 *
 * @signature t:matmul(b) -> Tensor
 * @section tensor_math
 * @example
 *   local a = kb.from_table({1, 2, 3, 4, 5, 6}, {2, 3})
 *   print(a:matmul(a:reshape({3, 2}))) --> [[22, 28], [49, 64]]
 *   print(kb.randn({8, 2, 3}):matmul(kb.randn({3, 4})).shape[1]) --> 8
 */
/* a:matmul(b): [.., m, k] @ [.., k, n] -> [.., m, n]. The leading
 * dimensions of a and b are equal, or one operand is 2-D and is shared by
 * every matrix of the other. */
static int m_matmul(lua_State *L) {
  static const char *const names[2] = {"kb_math_matmul_cpu", "kb_math_matmul_cuda"};
  kb_tensor *x = kb_check_tensor(L, 1), *y = check_like(L, 2, x);
  char sa[160], sb[160];
  if (x->ndim < 2 || y->ndim < 2)
    luaL_argerror(L, x->ndim < 2 ? 1 : 2,
                  lua_pushfstring(L, "matmul needs 2-D or batched operands, got %s and %s (a vector is "
                                     "t:reshape{1, n} or t:reshape{n, 1})",
                                  kb_shape_str(x, sa, sizeof sa), kb_shape_str(y, sb, sizeof sb)));
  const int64_t m = x->shape[x->ndim - 2], k = x->shape[x->ndim - 1], n = y->shape[y->ndim - 1];
  if (y->shape[y->ndim - 2] != k)
    luaL_argerror(L, 2, lua_pushfstring(L, "shapes %s and %s cannot be multiplied (%I columns, %I rows)",
                                        kb_shape_str(x, sa, sizeof sa), kb_shape_str(y, sb, sizeof sb),
                                        (lua_Integer)k, (lua_Integer)y->shape[y->ndim - 2]));
  const kb_tensor *lead = x->ndim >= y->ndim ? x : y;
  if (x->ndim > 2 && y->ndim > 2) {
    int same = x->ndim == y->ndim;
    for (int i = 0; same && i < x->ndim - 2; i++) same = x->shape[i] == y->shape[i];
    if (!same)
      luaL_argerror(L, 2, lua_pushfstring(L, "batch dimensions of %s and %s differ (they must be equal, or "
                                             "one operand 2-D)",
                                          kb_shape_str(x, sa, sizeof sa), kb_shape_str(y, sb, sizeof sb)));
  }
  kb_math_matmul_args a = {x->dtype, batch_of(lead), m, n, k, x->ndim > 2 ? m * k : 0,
                           y->ndim > 2 ? k * n : 0, x->data, y->data, NULL, x->dev->stream};
  if (kb_on_cuda(x->dev) && (m > INT_MAX || n > INT_MAX || k > INT_MAX || a.batch > INT_MAX))
    luaL_argerror(L, 2, "matmul on cuda takes dimensions and batch counts up to 2^31 - 1");
  int64_t shape[KB_MAX_DIMS];
  for (int i = 0; i < lead->ndim - 2; i++) shape[i] = lead->shape[i];
  shape[lead->ndim - 2] = m;
  shape[lead->ndim - 1] = n;
  kb_tensor *out = kb_push_tensor(L, x->dev, x->dtype, lead->ndim, shape);
  a.out = out->data;
  if (out->numel == 0) return 1; /* no output element: nothing to compute */
  if (k == 0) KB_TRY(L, out->dev->fill(out->dev, out->data, out->dtype, (size_t)out->numel, 0.0));
  else launch(L, x->dev, names, run_matmul, &a);
  return 1;
}

/* ---- cast, reshape, item --------------------------------------------------- */

/*** A new tensor of another dtype on the same device, rounded to nearest even: t:to(dtype) that
 * takes only a dtype.
 *
 * @signature t:cast(dtype) -> Tensor
 * @section tensor_math
 * @example
 *   local h = kb.randn({4}, "f32", 1):cast("bf16")
 *   print(h.dtype)
 */
/* t:cast(dtype): a new tensor of that dtype on t's device (t:to(dtype) that
 * takes only a dtype). */
static int m_cast(lua_State *L) {
  kb_tensor *t = kb_check_tensor(L, 1);
  kb_dtype dt = kb_check_dtype(L, 2, -1);
  kb_tensor *c = kb_push_tensor(L, t->dev, dt, t->ndim, t->shape);
  if (dt == t->dtype) KB_TRY(L, t->dev->copy(t->dev, c->data, t->data, kb_tensor_nbytes(t)));
  else KB_TRY(L, t->dev->convert(t->dev, c->data, dt, t->data, t->dtype, (size_t)t->numel));
  return 1;
}

/*** A copy with another shape of as many elements (one dimension may be -1, inferred).
 *
 * Tensors are contiguous and never share storage: this is a copy, not a view.
 *
 * @signature t:reshape(shape) -> Tensor
 * @section tensor_math
 * @example
 *   local v = kb.randn({6})
 *   print(v:reshape({2, -1}).shape[2]) --> 3
 */
/* t:reshape(shape): a copy with another shape of as many elements; one
 * dimension may be -1 (inferred). */
static int m_reshape(lua_State *L) {
  kb_tensor *t = kb_check_tensor(L, 1);
  luaL_checktype(L, 2, LUA_TTABLE);
  lua_Integer nd = luaL_len(L, 2);
  if (nd > KB_MAX_DIMS)
    luaL_argerror(L, 2, lua_pushfstring(L, "shape has %d dimensions, at most %d are supported", (int)nd, KB_MAX_DIMS));
  int64_t shape[KB_MAX_DIMS], known = 1;
  int infer = -1;
  for (lua_Integer i = 1; i <= nd; i++) {
    int ok;
    lua_geti(L, 2, i);
    lua_Integer d = lua_tointegerx(L, -1, &ok);
    if (!ok || lua_type(L, -1) != LUA_TNUMBER || d < -1 || (d == -1 && infer >= 0))
      luaL_argerror(L, 2, lua_pushfstring(L, "shape[%d] must be a non-negative integer (or one -1), got %s",
                                          (int)i, ok ? lua_tostring(L, -1) : luaL_typename(L, -1)));
    lua_pop(L, 1);
    shape[i - 1] = d;
    if (d == -1) infer = (int)i - 1;
    else if (__builtin_mul_overflow(known, (int64_t)d, &known)) known = -1;
  }
  if (infer >= 0 && known > 0 && t->numel % known == 0) shape[infer] = t->numel / known, known = t->numel;
  /* before the count: a zero dimension must not hide a product past 2^62 (kb.empty refuses it too) */
  const char *problem = kb_shape_problem(shape, (int)nd, t->dtype);
  if (problem) luaL_argerror(L, 2, problem);
  if (known != t->numel) {
    char st[160];
    luaL_argerror(L, 2, lua_pushfstring(L, "shape does not hold the %I elements of %s", (lua_Integer)t->numel,
                                        kb_shape_str(t, st, sizeof st)));
  }
  kb_tensor *c = kb_push_tensor(L, t->dev, t->dtype, (int)nd, shape);
  KB_TRY(L, t->dev->copy(t->dev, c->data, t->data, kb_tensor_nbytes(t)));
  return 1;
}

/*** The value of a tensor of one element (a reduction over everything, say).
 *
 * @signature t:item() -> number
 * @section tensor_math
 * @example
 *   print(kb.from_table({1, 2, 3}):sum():item()) --> 6.0
 */
/* t:item(): the value of a one-element tensor as a Lua number. */
static int m_item(lua_State *L) {
  kb_tensor *t = kb_check_tensor(L, 1);
  if (t->numel != 1) {
    char st[160];
    luaL_argerror(L, 1, lua_pushfstring(L, "item() needs one element, %s has %I", kb_shape_str(t, st, sizeof st),
                                        (lua_Integer)t->numel));
  }
  unsigned char h[8];
  KB_TRY(L, t->dev->to_host(t->dev, h, t->data, kb_dtype_size(t->dtype)));
  lua_pushnumber(L, kb_load_f64(h, t->dtype, 0));
  return 1;
}

static const luaL_Reg methods[] = {
    {"add", m_add},     {"sub", m_sub},       {"mul", m_mul},     {"div", m_div},
    {"add_", m_add_},   {"sub_", m_sub_},     {"mul_", m_mul_},   {"div_", m_div_},
    {"neg", m_neg},     {"exp", m_exp},       {"sqrt", m_sqrt},   {"rsqrt", m_rsqrt},
    {"neg_", m_neg_},   {"exp_", m_exp_},     {"sqrt_", m_sqrt_}, {"rsqrt_", m_rsqrt_},
    {"sum", m_sum},     {"mean", m_mean},     {"max", m_max},     {"matmul", m_matmul},
    {"cast", m_cast},   {"reshape", m_reshape}, {"item", m_item}, {NULL, NULL}};

static const luaL_Reg metamethods[] = {
    {"__add", mt_add}, {"__sub", mt_sub}, {"__mul", mt_mul}, {"__div", mt_div}, {"__unm", mt_unm}, {NULL, NULL}};

/* Adds the methods to the Tensor's method table (tensor.c made it) and the
 * operators to its metatable. */
void kb_open_tensor_math(lua_State *L) {
  luaL_getmetatable(L, KB_TENSOR_MT);
  luaL_setfuncs(L, metamethods, 0);
  lua_getfield(L, -1, "methods");
  luaL_setfuncs(L, methods, 0);
  lua_pop(L, 2);
}
