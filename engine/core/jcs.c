/* kb.jcs: RFC 8785 JSON Canonicalization Scheme, the writing half.
 *
 * One serializer (encode) that writes the canonical form of a Lua value:
 * no whitespace, object members sorted by the UTF-16 code units of their
 * keys, strings with the minimal escapes, numbers as ECMAScript's
 * Number.prototype.toString writes them. Reading JSON is lua-cjson's job
 * (the stdlib's json.decode wraps it): the canonical form of a JSON text is
 * kb.jcs.encode(json.decode(text)), so there is one decoder in the program
 * and no second one to disagree with it.
 *
 * Marker metatables (kb.jcs.array / kb.jcs.object) say how an empty table
 * encodes; json.decode marks the empty arrays it reads with kb.jcs.array,
 * so that [] encodes back as []. null is the NULL light userdata, the same
 * value as cjson.null.
 *
 * encode never calls back into Lua (raw table access only) and caps nesting
 * at JCS_MAX_DEPTH, so that the C recursion stays shallow. */
#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kb.h"

/* Containers nested deeper than this are an error (lua-cjson and Python
 * stop at the same depth); a record is a few levels deep. Lua sees it as
 * kb.jcs.MAX_DEPTH, and the stdlib's reader and writer (util/json.lua,
 * MAX_DEPTH) use the same value: tests/json_depth_spec.lua checks both. */
#define JCS_MAX_DEPTH KB_JSON_MAX_DEPTH
/* 2^53: every integer of at most this magnitude is exactly a double. */
#define JCS_MAX_EXACT ((lua_Integer)1 << 53)

#define JCS_ARRAY_MT "kluabench.jcs.array"
#define JCS_OBJECT_MT "kluabench.jcs.object"
#define JCS_BUFFER_MT "kluabench.jcs.buffer"

/* ---------------------------------------------------------------- UTF-8 */

/* Length of the well-formed UTF-8 sequence at s[0..n), or 0 when it is not
 * one (RFC 3629: no overlong forms, no surrogates, nothing above U+10FFFF).
 * *cp receives the code point. */
static size_t utf8_decode(const unsigned char *s, size_t n, uint32_t *cp) {
  unsigned c = s[0], lo = 0x80, hi = 0xBF;
  size_t len, i;
  if (c < 0x80) {
    *cp = c;
    return 1;
  }
  if (c < 0xC2) return 0;
  if (c < 0xE0) {
    len = 2;
    *cp = c & 0x1F;
  } else if (c < 0xF0) {
    len = 3;
    *cp = c & 0x0F;
    if (c == 0xE0) lo = 0xA0; /* overlong */
    if (c == 0xED) hi = 0x9F; /* U+D800..U+DFFF */
  } else if (c < 0xF5) {
    len = 4;
    *cp = c & 0x07;
    if (c == 0xF0) lo = 0x90; /* overlong */
    if (c == 0xF4) hi = 0x8F; /* above U+10FFFF */
  } else {
    return 0;
  }
  if (n < len || s[1] < lo || s[1] > hi) return 0;
  for (i = 1; i < len; i++) {
    if ((s[i] & 0xC0) != 0x80) return 0;
    *cp = (*cp << 6) | (s[i] & 0x3F);
  }
  return len;
}

/* Offset of the first byte that does not start a well-formed sequence, or
 * n when all of s is valid UTF-8. */
static size_t utf8_invalid_at(const char *s, size_t n) {
  size_t i = 0, len;
  uint32_t cp;
  while (i < n) {
    if ((unsigned char)s[i] < 0x80) {
      i++;
      continue;
    }
    len = utf8_decode((const unsigned char *)s + i, n - i, &cp);
    if (len == 0) return i;
    i += len;
  }
  return n;
}

/* A number whose order is the UTF-16 order of cp: code points below the
 * surrogates keep their value, supplementary ones sort as their surrogate
 * pair (0xD800..0xDFFF, by high then low unit, i.e. by code point), and
 * U+E000..U+FFFF sort above every surrogate. */
static uint32_t utf16_rank(uint32_t cp) {
  if (cp < 0xD800) return cp;
  if (cp >= 0x10000) return cp - 0x10000 + 0xD800;
  return cp + 0x100000;
}

/* strcmp for valid UTF-8 strings, in UTF-16 code unit order (RFC 8785 3.2.3). */
static int utf16_compare(const char *a, size_t na, const char *b, size_t nb) {
  size_t i = 0, j = 0;
  uint32_t ca, cb;
  while (i < na && j < nb) {
    i += utf8_decode((const unsigned char *)a + i, na - i, &ca);
    j += utf8_decode((const unsigned char *)b + j, nb - j, &cb);
    if (ca != cb) return utf16_rank(ca) < utf16_rank(cb) ? -1 : 1;
  }
  return (i < na) - (j < nb);
}

/* ------------------------------------------------------------- numbers */

/* Reads printf's "%.*e" text back as m x 10^scale, m holding every digit
 * (the decimal point is skipped, whatever character the locale makes it). */
static unsigned long long split_exponential(const char *buf, int *scale) {
  unsigned long long m = 0;
  int fraction = 0, seen_point = 0;
  for (; *buf != 'e'; buf++) {
    if (*buf >= '0' && *buf <= '9') {
      m = m * 10 + (unsigned long long)(*buf - '0');
      fraction += seen_point;
    } else {
      seen_point = 1;
    }
  }
  *scale = atoi(buf + 1) - fraction;
  return m;
}

/* Whether the decimal m x 10^scale reads back as x. */
static int reads_back(unsigned long long m, int scale, double x) {
  char buf[48];
  snprintf(buf, sizeof buf, "%llue%d", m, scale);
  return m != 0 && strtod(buf, NULL) == x;
}

/* The shortest digits d (no dot, no trailing zeros) that read back as x
 * (finite, > 0), closest to x when several do; returns their count and sets
 * *e10, the decimal exponent of the first digit. For each length p the
 * correctly rounded p digits are tried, then their neighbour on the far
 * side of x: next to a power of two the rounding interval is lopsided and
 * only the neighbour may read back. 17 digits always do.
 *
 * Lengths up to DBL_DIG (15) are settled by one try: a normal double that
 * some decimal of p <= 15 digits reads back as rounds to that decimal at 15
 * digits (the decimals are then farther apart than the doubles), so when x's
 * 15 digits read back their trailing zeros stripped are the shortest, and
 * when they do not no shorter length can. Subnormals hold fewer bits and
 * take the loop from 1. (Checked against the loop alone on 20 million
 * doubles and every power of two's neighbours: the same digits.) */
static int shortest_digits(double x, char d[24], int *e10) {
  char buf[48];
  unsigned long long m = 0;
  int scale = 0, k, p = 1;
  if (x >= DBL_MIN) {
    snprintf(buf, sizeof buf, "%.*e", DBL_DIG - 1, x);
    if (strtod(buf, NULL) == x) {
      m = split_exponential(buf, &scale);
      p = 0; /* found */
    } else {
      p = DBL_DIG + 1;
    }
  }
  for (; p != 0 && p <= 17; p++) {
    snprintf(buf, sizeof buf, "%.*e", p - 1, x);
    m = split_exponential(buf, &scale);
    double y = strtod(buf, NULL);
    if (y == x) break;
    m = y < x ? m + 1 : m - 1;
    if (reads_back(m, scale, x)) break;
  }
  k = snprintf(d, 24, "%llu", m);
  *e10 = scale + k - 1;
  while (k > 1 && d[k - 1] == '0') k--;
  return k;
}

/* Writes x as ECMAScript's Number.prototype.toString does (ECMA-262
 * Number::toString, radix 10) and returns the length. x must be finite;
 * -0 is "0". */
static int format_double(double x, char out[40]) {
  char d[24];
  int k, e10, n, len = 0;
  if (x == 0) { /* both zeros */
    memcpy(out, "0", 2);
    return 1;
  }
  if (x < 0) {
    out[len++] = '-';
    x = -x;
  }
  k = shortest_digits(x, d, &e10);
  n = e10 + 1; /* the decimal point sits after n digits */
  if (k <= n && n <= 21) {
    memcpy(out + len, d, (size_t)k), len += k;
    memset(out + len, '0', (size_t)(n - k)), len += n - k;
  } else if (0 < n && n <= 21) {
    memcpy(out + len, d, (size_t)n), len += n;
    out[len++] = '.';
    memcpy(out + len, d + n, (size_t)(k - n)), len += k - n;
  } else if (-6 < n && n <= 0) {
    out[len++] = '0', out[len++] = '.';
    memset(out + len, '0', (size_t)-n), len += -n;
    memcpy(out + len, d, (size_t)k), len += k;
  } else {
    out[len++] = d[0];
    if (k > 1) {
      out[len++] = '.';
      memcpy(out + len, d + 1, (size_t)(k - 1)), len += k - 1;
    }
    len += snprintf(out + len, 8, "e%c%d", n - 1 < 0 ? '-' : '+', abs(n - 1));
  }
  out[len] = '\0';
  return len;
}

/* -------------------------------------------------------- output buffer */

/* A growable byte buffer owned by a userdata on the Lua stack, so that an
 * error anywhere in encode frees it through __gc. */
typedef struct {
  char *p;
  size_t n, cap;
} jbuf;

static int jbuf_gc(lua_State *L) {
  jbuf *b = luaL_checkudata(L, 1, JCS_BUFFER_MT);
  free(b->p);
  b->p = NULL;
  b->n = b->cap = 0;
  return 0;
}

static jbuf *jbuf_push(lua_State *L) {
  jbuf *b = lua_newuserdatauv(L, sizeof *b, 0);
  b->p = NULL;
  b->n = b->cap = 0;
  luaL_setmetatable(L, JCS_BUFFER_MT);
  return b;
}

static void jbuf_add(lua_State *L, jbuf *b, const char *s, size_t n) {
  if (n == 0) return;
  if (b->cap - b->n < n) {
    size_t cap = b->cap ? b->cap : 256;
    while (cap - b->n < n) cap *= 2;
    char *p = realloc(b->p, cap);
    if (!p) luaL_error(L, "kb.jcs: not enough memory for %I bytes of JSON", (lua_Integer)cap);
    b->p = p;
    b->cap = cap;
  }
  memcpy(b->p + b->n, s, n);
  b->n += n;
}

/* Appends s as a JSON string with RFC 8785's minimal escaping: the two
 * characters that must be escaped, the short forms \b \f \n \r \t, \u00xx
 * for the other controls, every other byte as is (s is valid UTF-8). */
static void jbuf_add_string(lua_State *L, jbuf *b, const char *s, size_t n) {
  static const char hex[] = "0123456789abcdef";
  size_t run = 0;
  jbuf_add(L, b, "\"", 1);
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    char esc[6] = {'\\', 0};
    size_t elen = 2;
    if (c >= 0x20 && c != '"' && c != '\\') continue;
    switch (c) {
    case '"': esc[1] = '"'; break;
    case '\\': esc[1] = '\\'; break;
    case '\b': esc[1] = 'b'; break;
    case '\f': esc[1] = 'f'; break;
    case '\n': esc[1] = 'n'; break;
    case '\r': esc[1] = 'r'; break;
    case '\t': esc[1] = 't'; break;
    default:
      memcpy(esc + 1, "u00", 3), esc[4] = hex[c >> 4], esc[5] = hex[c & 15];
      elen = 6;
    }
    jbuf_add(L, b, s + run, i - run);
    jbuf_add(L, b, esc, elen);
    run = i + 1;
  }
  jbuf_add(L, b, s + run, n - run);
  jbuf_add(L, b, "\"", 1);
}

/* Writes up to max bytes of s as a quoted, escaped snippet into a Lua
 * buffer (for error messages). */
static void add_snippet(luaL_Buffer *lb, const char *s, size_t n, size_t max) {
  luaL_addchar(lb, '"');
  for (size_t i = 0; i < n && i < max; i++) {
    unsigned char c = (unsigned char)s[i];
    if (c < 0x20 || c == 0x7F) {
      char tmp[8];
      snprintf(tmp, sizeof tmp, "\\u%04x", c);
      luaL_addstring(lb, tmp);
    } else {
      if (c == '"' || c == '\\') luaL_addchar(lb, '\\');
      luaL_addchar(lb, (char)c);
    }
  }
  if (n > max) luaL_addstring(lb, "...");
  luaL_addchar(lb, '"');
}

/* -------------------------------------------------------------- encoder */

/* Where a value sits inside the encoded one, for error messages: a chain
 * from the value up to the root ("$"). */
typedef struct jpath {
  const struct jpath *up;
  const char *key; /* object member name, or NULL for an array element */
  size_t keylen;
  lua_Integer index;     /* array element, 1-based as in the Lua table */
  const void *container; /* the table the value is a member of (NULL at the root) */
} jpath;

typedef struct {
  lua_State *L;
  jbuf *out;
  const char *fn;
} encoder;

/* Objects of at most this many members keep their values on the Lua stack
 * while their keys are sorted; larger ones look each value up again. */
#define JCS_STACK_MEMBERS 4096

static int is_identifier(const char *s, size_t n) {
  if (n == 0 || (s[0] >= '0' && s[0] <= '9')) return 0;
  for (size_t i = 0; i < n; i++) {
    char c = s[i];
    if (!(c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')))
      return 0;
  }
  return 1;
}

/* "$.spec.metrics[3]": members as .name or ["name"], elements as [i]. */
static void add_path(luaL_Buffer *lb, const jpath *at) {
  if (!at->up) {
    luaL_addchar(lb, '$');
    return;
  }
  add_path(lb, at->up);
  if (at->key && is_identifier(at->key, at->keylen)) {
    luaL_addchar(lb, '.');
    luaL_addlstring(lb, at->key, at->keylen);
  } else if (at->key) {
    luaL_addchar(lb, '[');
    add_snippet(lb, at->key, at->keylen, 60);
    luaL_addchar(lb, ']');
  } else {
    char tmp[32];
    snprintf(tmp, sizeof tmp, "[%lld]", (long long)at->index);
    luaL_addstring(lb, tmp);
  }
}

/* Raises "<fn>: value at <path> <message>". */
static int encode_fail(encoder *e, const jpath *at, const char *fmt, ...) {
  char msg[200];
  luaL_Buffer lb;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  luaL_buffinit(e->L, &lb);
  luaL_addstring(&lb, e->fn);
  luaL_addstring(&lb, ": value at ");
  add_path(&lb, at);
  luaL_addchar(&lb, ' ');
  luaL_addstring(&lb, msg);
  luaL_pushresult(&lb);
  return lua_error(e->L);
}

static void encode_value(encoder *e, int idx, const jpath *at, int depth);

/* The decimal digits of v (|v| <= 2^53) into out; returns the length. The
 * same text as printf's "%lld", without printf's machinery (a record holds
 * dozens of integers). */
static int format_integer(lua_Integer v, char out[40]) {
  char rev[24];
  int n = 0, len = 0;
  unsigned long long u = v < 0 ? 0ull - (unsigned long long)v : (unsigned long long)v;
  do {
    rev[n++] = (char)('0' + u % 10);
    u /= 10;
  } while (u);
  if (v < 0) out[len++] = '-';
  while (n) out[len++] = rev[--n];
  out[len] = '\0';
  return len;
}

static void encode_number(encoder *e, int idx, const jpath *at) {
  char tmp[40];
  int len;
  if (lua_isinteger(e->L, idx)) {
    lua_Integer v = lua_tointeger(e->L, idx);
    if (v > JCS_MAX_EXACT || v < -JCS_MAX_EXACT)
      encode_fail(e, at,
                  "is the integer %lld, beyond +-2^53 (not exactly representable as a JSON "
                  "number)",
                  (long long)v);
    len = format_integer(v, tmp);
  } else {
    double v = lua_tonumber(e->L, idx);
    if (isnan(v)) encode_fail(e, at, "is NaN (not representable in JSON)");
    if (isinf(v)) encode_fail(e, at, "is %sinf (not representable in JSON)", v < 0 ? "-" : "");
    len = format_double(v, tmp);
  }
  jbuf_add(e->L, e->out, tmp, (size_t)len);
}

static void encode_string(encoder *e, int idx, const jpath *at) {
  size_t n, bad;
  const char *s = lua_tolstring(e->L, idx, &n);
  if ((bad = utf8_invalid_at(s, n)) < n)
    encode_fail(e, at, "is a string that is not valid UTF-8 (byte %zu)", bad + 1);
  jbuf_add_string(e->L, e->out, s, n);
}

enum { KIND_OBJECT, KIND_ARRAY };

/* Says whether the table at idx is an array (keys exactly 1..n, n >= 1, or
 * the array marker) or an object (string keys only; the empty table unless
 * marked); anything else is an error. *count gets the number of keys. */
static int table_kind(encoder *e, int idx, const jpath *at, lua_Integer *count) {
  lua_State *L = e->L;
  lua_Integer nint = 0, nstr = 0, kmin = LUA_MAXINTEGER, kmax = 0;
  int marker = 0; /* 1 array, 2 object */
  if (lua_getmetatable(L, idx)) {
    luaL_getmetatable(L, JCS_ARRAY_MT);
    luaL_getmetatable(L, JCS_OBJECT_MT);
    marker = lua_rawequal(L, -3, -2) ? 1 : lua_rawequal(L, -3, -1) ? 2 : 0;
    lua_pop(L, 3);
  }
  lua_pushnil(L);
  while (lua_next(L, idx)) {
    lua_pop(L, 1);
    if (lua_type(L, -1) == LUA_TSTRING) {
      nstr++;
    } else if (lua_isinteger(L, -1)) {
      lua_Integer k = lua_tointeger(L, -1);
      nint++;
      kmin = k < kmin ? k : kmin;
      kmax = k > kmax ? k : kmax;
    } else if (lua_type(L, -1) == LUA_TNUMBER) {
      encode_fail(e, at, "is a table with the non-integer number key %s", lua_tostring(L, -1));
    } else {
      encode_fail(e, at, "is a table with a key of type %s (object keys must be strings)",
                  luaL_typename(L, -1));
    }
  }
  int sequence = nstr == 0 && (nint == 0 || (kmin == 1 && kmax == nint));
  *count = nint + nstr;
  if (marker == 1 && !sequence)
    encode_fail(e, at, "is marked as an array but its keys are not exactly 1..n");
  if (marker == 1) return KIND_ARRAY;
  if (nint == 0) return KIND_OBJECT;
  if (marker == 2)
    encode_fail(e, at, "is marked as an object but has integer keys (object keys must be strings)");
  if (nstr > 0) encode_fail(e, at, "is a table that mixes integer and string keys");
  if (!sequence)
    encode_fail(e, at, "is a sparse array (its integer keys are not exactly 1..n)");
  return KIND_ARRAY;
}

static void encode_array(encoder *e, int idx, lua_Integer n, const jpath *at, int depth) {
  const void *self = lua_topointer(e->L, idx);
  jbuf_add(e->L, e->out, "[", 1);
  for (lua_Integer i = 1; i <= n; i++) {
    jpath child = {at, NULL, 0, i, self};
    if (i > 1) jbuf_add(e->L, e->out, ",", 1);
    lua_rawgeti(e->L, idx, i);
    encode_value(e, lua_gettop(e->L), &child, depth + 1);
    lua_pop(e->L, 1);
  }
  jbuf_add(e->L, e->out, "]", 1);
}

typedef struct {
  const char *s;
  size_t n;
  int value; /* stack index of the member's value, or 0 */
} jkey;

static int compare_keys(const void *a, const void *b) {
  const jkey *x = a, *y = b;
  return utf16_compare(x->s, x->n, y->s, y->n);
}

/* Members in UTF-16 key order. The key pointers stay valid because the
 * table keeps its keys alive and nothing modifies it meanwhile. A small
 * object's keys and values stay on the stack as lua_next gives them (each
 * key copied on top for the next step), so that no value is looked up
 * again; a large one's values are looked up by key. */
static void encode_object(encoder *e, int idx, lua_Integer n, const jpath *at, int depth) {
  lua_State *L = e->L;
  const void *self = lua_topointer(L, idx);
  int keep = n <= JCS_STACK_MEMBERS, top;
  jkey *keys = lua_newuserdatauv(L, (size_t)n * sizeof *keys + 1, 0);
  lua_Integer i = 0;
  top = lua_gettop(L);
  if (keep) luaL_checkstack(L, (int)(2 * n + 8), "kb.jcs: too many object members");
  lua_pushnil(L);
  while (lua_next(L, idx)) {
    if (keep) {
      keys[i].value = lua_gettop(L);
      lua_pushvalue(L, -2); /* the key again, for lua_next; the pair stays below */
    } else {
      keys[i].value = 0;
      lua_pop(L, 1);
    }
    keys[i].s = lua_tolstring(L, -1, &keys[i].n);
    if (utf8_invalid_at(keys[i].s, keys[i].n) < keys[i].n) {
      jpath child = {at, keys[i].s, keys[i].n, 0, self};
      encode_fail(e, &child, "has a key that is not valid UTF-8");
    }
    i++;
  }
  qsort(keys, (size_t)n, sizeof *keys, compare_keys);
  jbuf_add(L, e->out, "{", 1);
  for (i = 0; i < n; i++) {
    jpath child = {at, keys[i].s, keys[i].n, 0, self};
    if (i > 0) jbuf_add(L, e->out, ",", 1);
    jbuf_add_string(L, e->out, keys[i].s, keys[i].n);
    jbuf_add(L, e->out, ":", 1);
    if (keys[i].value) {
      encode_value(e, keys[i].value, &child, depth + 1);
    } else {
      lua_pushlstring(L, keys[i].s, keys[i].n);
      lua_rawget(L, idx);
      encode_value(e, lua_gettop(L), &child, depth + 1);
      lua_pop(L, 1);
    }
  }
  jbuf_add(L, e->out, "}", 1);
  lua_settop(L, top - 1); /* the members and the keys */
}

/* A table: cycle and depth checks, then array or object. A cycle passes
 * through a table being encoded, which is one of the containers on the
 * path from the root to here. */
static void encode_table(encoder *e, int idx, const jpath *at, int depth) {
  lua_State *L = e->L;
  lua_Integer n;
  const void *self = lua_topointer(L, idx);
  if (depth >= JCS_MAX_DEPTH) encode_fail(e, at, "is nested deeper than %d levels", JCS_MAX_DEPTH);
  luaL_checkstack(L, 8, "kb.jcs: value nested too deeply");
  for (const jpath *p = at; p; p = p->up)
    if (p->container == self) encode_fail(e, at, "is a table that contains itself (a cycle)");
  if (table_kind(e, idx, at, &n) == KIND_ARRAY)
    encode_array(e, idx, n, at, depth);
  else
    encode_object(e, idx, n, at, depth);
}

/* Appends the canonical JSON of the value at idx (an absolute index).
 * depth counts the tables around it. */
static void encode_value(encoder *e, int idx, const jpath *at, int depth) {
  lua_State *L = e->L;
  switch (lua_type(L, idx)) {
  case LUA_TNIL: jbuf_add(L, e->out, "null", 4); return;
  case LUA_TBOOLEAN:
    if (lua_toboolean(L, idx))
      jbuf_add(L, e->out, "true", 4);
    else
      jbuf_add(L, e->out, "false", 5);
    return;
  case LUA_TLIGHTUSERDATA:
    /* kb.jcs.null and cjson.null are both the NULL light userdata */
    if (lua_touserdata(L, idx) != NULL) encode_fail(e, at, "is a light userdata (not null)");
    jbuf_add(L, e->out, "null", 4);
    return;
  case LUA_TNUMBER: encode_number(e, idx, at); return;
  case LUA_TSTRING: encode_string(e, idx, at); return;
  case LUA_TTABLE: encode_table(e, idx, at, depth); return;
  default: encode_fail(e, at, "is a %s", luaL_typename(L, idx));
  }
}

/* Pushes the canonical JSON text of the value at idx. */
static void encode_document(lua_State *L, int idx, const char *fn) {
  encoder e;
  jpath root = {NULL, NULL, 0, 0, NULL};
  idx = lua_absindex(L, idx);
  e.L = L;
  e.fn = fn;
  e.out = jbuf_push(L);
  encode_value(&e, idx, &root, 0);
  lua_pushlstring(L, e.out->p ? e.out->p : "", e.out->n);
  free(e.out->p); /* now rather than at the next collection */
  e.out->p = NULL;
  e.out->n = e.out->cap = 0;
  lua_replace(L, -2);
}

/* ---------------------------------------------------------- Lua binding */

/*** Canonical JSON (RFC 8785) of a Lua value.
 *
 * No whitespace, object members sorted by UTF-16 code units, minimal string escapes, numbers as
 * ECMAScript writes them (shortest round trip; `1e+21`, `1e-7`). A table whose keys are exactly
 * 1..n is an array, one with string keys an object; mark the empty table with kb.jcs.array{} or
 * kb.jcs.object{} (unmarked it is an object). Integers print exactly (beyond +-2^53 is an error);
 * NaN, infinities, cycles, mixed keys and invalid UTF-8 are errors naming the path ($.spec.x[2]).
 *
 * kb.jcs only writes JSON. The canonical form of a JSON text is
 * `kb.jcs.encode(json.decode(text))`, where json is `kluabench.util.json` (lua-cjson reads the
 * text, marks its empty arrays, and makes integral numbers integers).
 *
 * @signature kb.jcs.encode(value) -> text
 * @section digest
 * @example
 *   print(kb.jcs.encode({list = {3, 1}, none = kb.jcs.array{}})) --> {"list":[3,1],"none":[]}
 *   local json = require("kluabench.util.json")
 *   print(kb.jcs.encode(json.decode('{"b": 1.0, "a": [1e3]}'))) --> {"a":[1000],"b":1}
 */
/* kb.jcs.encode(value) -> canonical JSON text of a Lua value. */
static int l_encode(lua_State *L) {
  lua_settop(L, 1);
  encode_document(L, 1, "kb.jcs.encode");
  return 1;
}

/* Sets the marker mt on the table at 1 (a new one when absent) unless it
 * already has a metatable of its own. */
static int set_table_marker(lua_State *L, const char *mt, const char *fname) {
  if (lua_isnoneornil(L, 1)) {
    lua_settop(L, 0);
    lua_newtable(L);
  }
  luaL_checktype(L, 1, LUA_TTABLE);
  lua_settop(L, 1);
  if (lua_getmetatable(L, 1)) {
    luaL_getmetatable(L, JCS_ARRAY_MT);
    luaL_getmetatable(L, JCS_OBJECT_MT);
    if (!lua_rawequal(L, -3, -2) && !lua_rawequal(L, -3, -1))
      return luaL_error(L, "bad argument #1 to '%s' (table already has a metatable)", fname);
    lua_pop(L, 3);
  }
  luaL_setmetatable(L, mt);
  return 1;
}

/*** Marks t (a new table when absent) to encode as a JSON array, even when empty.
 *
 * @signature kb.jcs.array([t]) -> t
 * @section digest
 * @example
 *   local samples = kb.jcs.array{}
 */
/* kb.jcs.array(t) -> t, marked to encode as a JSON array (even when empty). */
static int l_array(lua_State *L) {
  return set_table_marker(L, JCS_ARRAY_MT, "array");
}

/*** Marks t (a new table when absent) to encode as a JSON object.
 *
 * @signature kb.jcs.object([t]) -> t
 * @section digest
 * @example
 *   local labels = kb.jcs.object{}
 */
/* kb.jcs.object(t) -> t, marked to encode as a JSON object. */
static int l_object(lua_State *L) {
  return set_table_marker(L, JCS_OBJECT_MT, "object");
}

/*** True when v is a table with the array mark.
 *
 * @signature kb.jcs.is_array(v) -> boolean
 * @section digest
 * @example
 *   assert(kb.jcs.is_array(kb.jcs.array{}))
 *   assert(kb.jcs.is_array(require("kluabench.util.json").decode("[]")))
 */
/* kb.jcs.is_array(v) -> true when v is a table with the array marker. */
static int l_is_array(lua_State *L) {
  int marked = 0;
  if (lua_type(L, 1) == LUA_TTABLE && lua_getmetatable(L, 1)) {
    luaL_getmetatable(L, JCS_ARRAY_MT);
    marked = lua_rawequal(L, -1, -2);
  }
  lua_pushboolean(L, marked);
  return 1;
}

/*** The value JSON null reads as (json.decode) and encodes from (the NULL light userdata, cjson.null).
 *
 * @signature kb.jcs.null
 * @section digest
 * @kind value
 * @example
 *   print(kb.jcs.encode({x = kb.jcs.null})) --> {"x":null}
 */
/*** The deepest nesting of arrays and objects that kb.jcs.encode writes; the stdlib's JSON
 * reader and writer (json.decode through lua-cjson, json.encode_line) use the same cap.
 *
 * @signature kb.jcs.MAX_DEPTH
 * @section digest
 * @kind value
 * @example
 *   print(kb.jcs.MAX_DEPTH) --> 1000
 */
/* Adds the table `jcs` to the module table on top of the stack. */
void kb_open_jcs(lua_State *L) {
  static const luaL_Reg fns[] = {
      {"encode", l_encode},
      {"array", l_array},
      {"object", l_object},
      {"is_array", l_is_array},
      {NULL, NULL},
  };
  if (luaL_newmetatable(L, JCS_BUFFER_MT)) {
    lua_pushcfunction(L, jbuf_gc);
    lua_setfield(L, -2, "__gc");
  }
  lua_pop(L, 1);
  luaL_newmetatable(L, JCS_ARRAY_MT); /* markers: empty but for __name */
  luaL_newmetatable(L, JCS_OBJECT_MT);
  lua_pop(L, 2);
  luaL_newlib(L, fns);
  lua_pushlightuserdata(L, NULL);
  lua_setfield(L, -2, "null");
  lua_pushinteger(L, JCS_MAX_DEPTH);
  lua_setfield(L, -2, "MAX_DEPTH");
  lua_setfield(L, -2, "jcs");
}
