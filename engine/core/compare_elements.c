/* kb.compare_elements: the element-by-element comparison behind
 * kluabench.kernels.check (stdlib/kluabench/kernels/check.lua), in C because a check
 * compares millions of elements and a Lua loop over t:totable() takes
 * seconds; the loop is kernels/compare_cpu.c's, over the cores. The policy
 * (tolerances by dtype, what counts as a failure, the messages) stays in
 * kernels/check.lua. */
#include <math.h>
#include "kb.h"
#include "../../kernels/compare_cpu.h"
#include "../../kernels/tensor_ops.h"

static void set_int(lua_State *L, const char *k, int64_t v) {
  lua_pushinteger(L, (lua_Integer)v);
  lua_setfield(L, -2, k);
}

static void set_num(lua_State *L, const char *k, double v) {
  lua_pushnumber(L, v);
  lua_setfield(L, -2, k);
}

/* A tolerance at arg: a finite number >= 0 (NaN would make every
 * comparison pass, a negative one every comparison fail). */
static double check_tolerance(lua_State *L, int arg, const char *name) {
  double v = luaL_checknumber(L, arg);
  if (isnan(v)) luaL_argerror(L, arg, lua_pushfstring(L, "%s must be a finite number >= 0, got NaN", name));
  if (!isfinite(v) || v < 0)
    luaL_argerror(L, arg, lua_pushfstring(L, "%s must be a finite number >= 0, got %f", name, v));
  return v;
}

/*** Element-by-element comparison counts (the C loop behind check.compare).
 *
 * Returns n, mismatches, unwritten (NaN in got where want is a number), nan_mismatch,
 * inf_mismatch, max_abs and worst = {index, got, want}.
 *
 * @signature kb.compare_elements(got, want, atol, rtol) -> table
 * @section usercode
 * @example
 *   local t = kb.randn({2, 3}, "f32", 1)
 *   print(kb.compare_elements(t, t:clone(), 0, 0).mismatches) --> 0
 */
/* kb.compare_elements(got, want, atol, rtol) -> {n, mismatches, unwritten,
 * nan_mismatch, inf_mismatch, want_nan, max_abs, worst = {index, got, want}}.
 * A pair matches when |got - want| <= atol + rtol * |want|; NaN in got
 * where want is a number counts as unwritten (check.poison fills outputs
 * with NaN first); NaN in want must be NaN in got (want_nan counts them: a
 * poisoned output matches them unwritten); infinities must be equal. */
static int l_compare_elements(lua_State *L) {
  kb_tensor *a = kb_check_tensor(L, 1), *b = kb_check_tensor(L, 2);
  double atol = check_tolerance(L, 3, "atol"), rtol = check_tolerance(L, 4, "rtol");
  if (a->numel != b->numel)
    return luaL_argerror(L, 2, lua_pushfstring(L, "has %I elements, got has %I", (lua_Integer)b->numel,
                                               (lua_Integer)a->numel));
  kb_tensor_pair pair;
  kb_compare_source src;
  kb_tensor_compare_source(L, a, b, &pair, &src);
  kb_compare_counts r;
  const char *err = kb_compare_counts_of(&src, a->dtype, b->dtype, (size_t)a->numel, atol, rtol, &r);
  if (err) return luaL_error(L, "compare_elements of %I elements: %s", (lua_Integer)a->numel, err);
  lua_createtable(L, 0, 8);
  set_int(L, "n", a->numel);
  set_int(L, "mismatches", r.mismatches);
  set_int(L, "unwritten", r.unwritten);
  set_int(L, "nan_mismatch", r.nan_mismatch);
  set_int(L, "inf_mismatch", r.inf_mismatch);
  set_int(L, "want_nan", r.want_nan);
  set_num(L, "max_abs", r.max_abs);
  if (r.worst >= 0) {
    lua_createtable(L, 0, 3);
    set_int(L, "index", r.worst);
    set_num(L, "got", r.worst_got);
    set_num(L, "want", r.worst_want);
    lua_setfield(L, -2, "worst");
  }
  return 1;
}

static const luaL_Reg functions[] = {{"compare_elements", l_compare_elements}, {NULL, NULL}};

void kb_open_compare_elements(lua_State *L) { luaL_setfuncs(L, functions, 0); }
