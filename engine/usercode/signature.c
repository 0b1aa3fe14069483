/* Kernel signatures: "ptr, ptr, i32, f32" parsed once, when a kernel is
 * made, into the types that kernel:launch and plugin calls pack arguments
 * by. Besides the canonical names, the spellings of C ("float*", "int",
 * "unsigned long long") and of Triton ("*fp32", "fp16", "i1") are accepted,
 * so a signature can be copied from the kernel's own declaration. */
#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include "usercode.h"

static const kb_param_type TYPES[] = {
    {"ptr", KB_P_PTR, 8},    {"i8", KB_P_INT, 1},     {"u8", KB_P_UINT, 1},
    {"i16", KB_P_INT, 2},    {"u16", KB_P_UINT, 2},   {"i32", KB_P_INT, 4},
    {"u32", KB_P_UINT, 4},   {"i64", KB_P_INT, 8},    {"u64", KB_P_UINT, 8},
    {"f16", KB_P_FLOAT, 2},  {"bf16", KB_P_FLOAT, 2}, {"f32", KB_P_FLOAT, 4},
    {"f64", KB_P_FLOAT, 8},  {"tensor", KB_P_TENSOR, 0},
};
#define NTYPES (sizeof TYPES / sizeof TYPES[0])

/* Other spellings of the canonical names. */
static const struct { const char *alias, *name; } ALIASES[] = {
    {"bool", "u8"},        {"i1", "u8"},          {"char", "i8"},
    {"int8_t", "i8"},      {"uint8_t", "u8"},     {"short", "i16"},
    {"int16_t", "i16"},    {"uint16_t", "u16"},   {"int", "i32"},
    {"int32_t", "i32"},    {"unsigned", "u32"},   {"unsigned int", "u32"},
    {"uint32_t", "u32"},   {"long", "i64"},       {"long long", "i64"},
    {"int64_t", "i64"},    {"size_t", "u64"},     {"unsigned long", "u64"},
    {"unsigned long long", "u64"}, {"uint64_t", "u64"}, {"half", "f16"},
    {"__half", "f16"},     {"fp16", "f16"},       {"__nv_bfloat16", "bf16"},
    {"float", "f32"},      {"fp32", "f32"},       {"double", "f64"},
    {"fp64", "f64"},       {"pointer", "ptr"},
};

static const kb_param_type *by_name(const char *name) {
  for (size_t i = 0; i < sizeof ALIASES / sizeof ALIASES[0]; i++)
    if (strcmp(name, ALIASES[i].alias) == 0) name = ALIASES[i].name;
  for (size_t i = 0; i < NTYPES; i++)
    if (strcmp(name, TYPES[i].name) == 0) return &TYPES[i];
  return NULL;
}

/* One parameter's text, trimmed, with "const " dropped and runs of spaces
 * made one; a '*' anywhere makes it a pointer. */
static const kb_param_type *parse_one(char *s) {
  char *end = s + strlen(s);
  while (*s && isspace((unsigned char)*s)) s++;
  while (end > s && isspace((unsigned char)end[-1])) *--end = '\0';
  if (strchr(s, '*')) return by_name("ptr"); /* "const float* __restrict__", "*fp32" */
  if (strncmp(s, "const ", 6) == 0) s += 6;
  char norm[64];
  size_t n = 0;
  for (; *s && n + 1 < sizeof norm; s++)
    if (!isspace((unsigned char)*s) || (n && norm[n - 1] != ' ')) norm[n++] = isspace((unsigned char)*s) ? ' ' : *s;
  norm[n] = '\0';
  return by_name(norm);
}

static int allowed(const kb_param_type *t, const char *const *allow) {
  if (!allow) return t->cls != KB_P_TENSOR;
  for (int i = 0; allow[i]; i++)
    if (strcmp(allow[i], t->name) == 0) return 1;
  return 0;
}

static void expected(char *buf, size_t n, const char *const *allow) {
  size_t off = 0;
  buf[0] = '\0';
  for (size_t i = 0; i < NTYPES && off < n; i++)
    if (allowed(&TYPES[i], allow))
      off += (size_t)snprintf(buf + off, n - off, "%s%s", off ? ", " : "", TYPES[i].name);
}

int kb_parse_signature(lua_State *L, const char *fn, int arg, const char *sig,
                       const kb_param_type **out, int max, const char *const *allow) {
  char buf[2048], exp[160];
  if (strlen(sig) >= sizeof buf)
    return luaL_error(L, "bad argument #%d to '%s' (signature is longer than %d characters)", arg, fn,
                      (int)sizeof buf - 1);
  memcpy(buf, sig, strlen(sig) + 1);
  int n = 0;
  char *p = buf;
  while (*p && isspace((unsigned char)*p)) p++;
  if (!*p) return 0; /* a kernel without parameters */
  for (char *tok = p;; n++) {
    char *comma = strchr(tok, ',');
    if (comma) *comma = '\0';
    const kb_param_type *t = parse_one(tok);
    if (!t || !allowed(t, allow)) {
      expected(exp, sizeof exp, allow);
      return luaL_error(L, "bad argument #%d to '%s' (signature: %s type '%s' at parameter %d; expected %s)",
                        arg, fn, t ? "unsupported" : "unknown", tok + strspn(tok, " \t"), n + 1, exp);
    }
    if (n >= max) {
      int count = 1;
      for (const char *c = sig; *c; c++) count += *c == ',';
      return luaL_error(L, "bad argument #%d to '%s' (signature: more than %d parameters (it has %d))", arg, fn,
                        max, count);
    }
    out[n] = t;
    if (!comma) break;
    tok = comma + 1;
  }
  return n + 1;
}

void kb_push_signature(lua_State *L, const kb_param_type *const *types, int n) {
  luaL_Buffer b;
  luaL_buffinit(L, &b);
  for (int i = 0; i < n; i++) {
    if (i) luaL_addstring(&b, ", ");
    luaL_addstring(&b, types[i]->name);
  }
  luaL_pushresult(&b);
}

/*** The parameter types a kernel signature names, in canonical names.
 *
 * Types: ptr, i8, u8, i16, u16, i32, u32, i64, u64, f16, bf16, f32, f64. C spellings ("const
 * float*", "int", "unsigned long long", "half") and Triton's ("*fp32", "fp16", "i1") are accepted.
 * A ptr takes a tensor (its device pointer, checked to be alive and on the kernel's device) or an
 * integer address (0 for NULL).
 *
 * @signature kb.cuda.parse_signature(signature) -> {types}
 * @section usercode
 * @example
 *   print(table.concat(kb.cuda.parse_signature("const float*, float*, int, float"), ", "))
 */
/* kb.cuda.parse_signature(sig) -> {"ptr", "i32", ...}: what a kernel made
 * with this signature takes, in canonical names. */
static int l_parse_signature(lua_State *L) {
  const kb_param_type *types[KB_MAX_PARAMS];
  const char *sig = kb_check_cstring(L, 1, "parse_signature", "signature");
  int n = kb_parse_signature(L, "parse_signature", 1, sig, types, KB_MAX_PARAMS, NULL);
  lua_createtable(L, n, 0);
  for (int i = 0; i < n; i++) {
    lua_pushstring(L, types[i]->name);
    lua_seti(L, -2, i + 1);
  }
  return 1;
}

/* kb.cuda.parse_signature, into the kb.cuda table on top of the stack
 * (usercode.c builds the table). */
void kb_open_signature(lua_State *L) {
  lua_pushcfunction(L, l_parse_signature);
  lua_setfield(L, -2, "parse_signature");
}
