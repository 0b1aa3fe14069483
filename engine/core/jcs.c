/* kb.jcs: RFC 8785 JSON Canonicalization Scheme.
 *
 * One strict RFC 8259 parser (decode) and one serializer (encode) that
 * writes the canonical form; canonicalize(s) is encode(decode(s)), so the
 * two can never disagree. Canonical form: no whitespace, object members
 * sorted by the UTF-16 code units of their keys, strings with the minimal
 * escapes, numbers as ECMAScript's Number.prototype.toString writes them.
 *
 * Decoded arrays and objects carry marker metatables (kb.jcs.array /
 * kb.jcs.object), so that an empty one encodes back as what it was; null
 * is the NULL light userdata, the same value as cjson.null.
 *
 * Neither direction calls back into Lua (raw table access only), and both
 * cap nesting at JCS_MAX_DEPTH so that the C recursion stays shallow. */
#include <float.h>
#include <locale.h>
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
#define JCS_MAX_DEPTH 1000
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

/* Writes cp (a scalar value, not a surrogate) as UTF-8; returns the length. */
static int utf8_encode(uint32_t cp, char out[4]) {
  if (cp < 0x80) {
    out[0] = (char)cp;
    return 1;
  }
  if (cp < 0x800) {
    out[0] = (char)(0xC0 | (cp >> 6));
    out[1] = (char)(0x80 | (cp & 0x3F));
    return 2;
  }
  if (cp < 0x10000) {
    out[0] = (char)(0xE0 | (cp >> 12));
    out[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
    out[2] = (char)(0x80 | (cp & 0x3F));
    return 3;
  }
  out[0] = (char)(0xF0 | (cp >> 18));
  out[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
  out[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
  out[3] = (char)(0x80 | (cp & 0x3F));
  return 4;
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

/* --------------------------------------------------------------- parser */

typedef struct {
  lua_State *L;
  const char *s; /* the text, NUL-terminated (a Lua string) */
  size_t n, pos; /* length, current byte (0-based) */
  const char *fn; /* "kb.jcs.decode" or "kb.jcs.canonicalize" */
  int int64;      /* integers up to a Lua integer's range, not just 2^53 */
  int mark_empty; /* mark only the empty arrays and objects */
} parser;

/* Raises "<fn>: invalid JSON at byte N: <message>", N 1-based as in Lua's
 * string functions (n + 1 means the end of the text). */
static int parse_fail(parser *p, size_t at, const char *fmt, ...) {
  char msg[200];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  lua_pushfstring(p->L, "%s: invalid JSON at byte %I: %s", p->fn, (lua_Integer)at + 1, msg);
  return lua_error(p->L);
}

static int peek(const parser *p) {
  return p->pos < p->n ? (unsigned char)p->s[p->pos] : -1;
}

static void skip_ws(parser *p) {
  while (p->pos < p->n) {
    char c = p->s[p->pos];
    if (c != ' ' && c != '\t' && c != '\n' && c != '\r') break;
    p->pos++;
  }
}

/* "unexpected end of input" or "unexpected character 'x'" / "byte 0xNN",
 * followed by what was expected. */
static int parse_unexpected(parser *p, const char *expected) {
  int c = peek(p);
  if (c < 0) return parse_fail(p, p->pos, "unexpected end of input, expected %s", expected);
  if (c >= 0x21 && c < 0x7F)
    return parse_fail(p, p->pos, "unexpected character '%c', expected %s", c, expected);
  return parse_fail(p, p->pos, "unexpected byte 0x%02x, expected %s", c, expected);
}

/* The 4 hex digits of a \u escape at p->pos; raises unless there are 4. */
static uint32_t parse_hex4(parser *p, size_t esc_at) {
  uint32_t v = 0;
  for (int i = 0; i < 4; i++) {
    int c = peek(p);
    int d = c >= '0' && c <= '9'   ? c - '0'
            : c >= 'a' && c <= 'f' ? c - 'a' + 10
            : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                   : -1;
    if (d < 0) parse_fail(p, esc_at, "invalid \\u escape (expected 4 hex digits)");
    v = v * 16 + (uint32_t)d;
    p->pos++;
  }
  return v;
}

/* A \u escape (p->pos just after the 'u'), joining a surrogate pair;
 * returns the code point. Lone surrogates are errors: they are not
 * characters and have no UTF-8 form. */
static uint32_t parse_unicode_escape(parser *p, size_t esc_at) {
  uint32_t hi = parse_hex4(p, esc_at), lo;
  if (hi >= 0xDC00 && hi <= 0xDFFF)
    parse_fail(p, esc_at, "lone surrogate \\u%04x (low surrogate without a high one)", hi);
  if (hi < 0xD800 || hi > 0xDBFF) return hi;
  if (p->pos + 1 >= p->n || p->s[p->pos] != '\\' || p->s[p->pos + 1] != 'u')
    parse_fail(p, esc_at, "lone surrogate \\u%04x (not followed by a low surrogate)", hi);
  p->pos += 2;
  lo = parse_hex4(p, p->pos - 2);
  if (lo < 0xDC00 || lo > 0xDFFF)
    parse_fail(p, esc_at, "lone surrogate \\u%04x (not followed by a low surrogate)", hi);
  return 0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00);
}

/* One escape sequence (p->pos at the backslash) added to lb. */
static void parse_escape(parser *p, luaL_Buffer *lb) {
  size_t at = p->pos++;
  int c = peek(p);
  char u8[4];
  p->pos++;
  switch (c) {
  case '"': case '\\': case '/': luaL_addchar(lb, (char)c); return;
  case 'b': luaL_addchar(lb, '\b'); return;
  case 'f': luaL_addchar(lb, '\f'); return;
  case 'n': luaL_addchar(lb, '\n'); return;
  case 'r': luaL_addchar(lb, '\r'); return;
  case 't': luaL_addchar(lb, '\t'); return;
  case 'u': luaL_addlstring(lb, u8, (size_t)utf8_encode(parse_unicode_escape(p, at), u8)); return;
  case -1: parse_fail(p, at, "unterminated string"); return;
  default:
    if (c >= 0x21 && c < 0x7F) parse_fail(p, at, "invalid escape '\\%c'", c);
    parse_fail(p, at, "invalid escape (backslash followed by byte 0x%02x)", c);
  }
}

/* A string (p->pos at the opening quote): pushes its value. Raw control
 * characters and invalid UTF-8 are errors. */
static void parse_string(parser *p) {
  luaL_Buffer lb;
  size_t start = p->pos++, run = p->pos;
  luaL_buffinit(p->L, &lb);
  for (;;) {
    int c = peek(p);
    if (c < 0) parse_fail(p, start, "unterminated string");
    if (c == '"' || c == '\\') {
      luaL_addlstring(&lb, p->s + run, p->pos - run);
      if (c == '"') break;
      parse_escape(p, &lb);
      run = p->pos;
    } else if (c < 0x20) {
      parse_fail(p, p->pos, "control character U+%04X in string (must be escaped)", c);
    } else if (c < 0x80) {
      p->pos++;
    } else {
      uint32_t cp;
      size_t len = utf8_decode((const unsigned char *)p->s + p->pos, p->n - p->pos, &cp);
      if (len == 0) parse_fail(p, p->pos, "invalid UTF-8 (byte 0x%02x) in string", c);
      p->pos += len;
    }
  }
  p->pos++;
  luaL_pushresult(&lb);
}

static size_t skip_digits(parser *p) {
  size_t start = p->pos;
  while (p->pos < p->n && p->s[p->pos] >= '0' && p->s[p->pos] <= '9') p->pos++;
  return p->pos - start;
}

/* Converts the validated literal s[0..len) with strtod, whatever the C
 * locale's decimal point; overflow to infinity is an error. */
static void push_double(parser *p, const char *s, size_t len, size_t at) {
  char small[64], *copy = small, *dot;
  double v;
  if (len >= sizeof small) copy = lua_newuserdatauv(p->L, len + 1, 0);
  memcpy(copy, s, len);
  copy[len] = '\0';
  if ((dot = strchr(copy, '.')) != NULL) *dot = lua_getlocaledecpoint();
  v = strtod(copy, NULL);
  if (copy != small) lua_pop(p->L, 1);
  if (isinf(v)) parse_fail(p, at, "number out of range (overflows to infinity)");
  lua_pushnumber(p->L, v);
}

/* The integer literal of ndigits digits ending at p->pos (after an
 * optional '-' at start) as a Lua integer when it fits one, as Lua's
 * tonumber reads it (-2^63 .. 2^63 - 1); 0 when it does not. */
static int push_int64(parser *p, size_t start, size_t ndigits) {
  int neg = p->s[start] == '-';
  unsigned long long v = 0, limit = (unsigned long long)LUA_MAXINTEGER + (unsigned long long)neg;
  if (ndigits > 19) return 0;
  for (size_t i = p->pos - ndigits; i < p->pos; i++) {
    unsigned d = (unsigned)(p->s[i] - '0');
    if (v > (limit - d) / 10) return 0;
    v = v * 10 + d;
  }
  lua_pushinteger(p->L, neg ? (lua_Integer)(0ull - v) : (lua_Integer)v);
  return 1;
}

/* A number (p->pos at '-' or a digit): pushes a Lua integer when the
 * literal is an integer of magnitude <= 2^53 (with int64, any that fits a
 * Lua integer) without fraction or exponent, else the nearest double. */
static void parse_number(parser *p) {
  size_t start = p->pos, ndigits;
  int integral = 1;
  if (peek(p) == '-') p->pos++;
  if (peek(p) == 'I') parse_fail(p, start, "Infinity is not valid JSON");
  if (peek(p) == '0') {
    p->pos++;
    if (skip_digits(p) > 0) parse_fail(p, start, "leading zeros are not allowed");
  } else if (skip_digits(p) == 0) {
    parse_fail(p, p->pos, "expected a digit after '-'");
  }
  ndigits = p->pos - start - (p->s[start] == '-');
  if (peek(p) == '.') {
    p->pos++, integral = 0;
    if (skip_digits(p) == 0) parse_fail(p, p->pos, "expected a digit after '.'");
  }
  if (peek(p) == 'e' || peek(p) == 'E') {
    p->pos++, integral = 0;
    if (peek(p) == '+' || peek(p) == '-') p->pos++;
    if (skip_digits(p) == 0) parse_fail(p, p->pos, "expected a digit in the exponent");
  }
  if (integral && ndigits <= 16) {
    lua_Integer v = 0;
    for (size_t i = p->pos - ndigits; i < p->pos; i++) v = v * 10 + (p->s[i] - '0');
    if (v <= JCS_MAX_EXACT) {
      lua_pushinteger(p->L, p->s[start] == '-' ? -v : v);
      return;
    }
  }
  if (integral && p->int64 && push_int64(p, start, ndigits)) return;
  push_double(p, p->s + start, p->pos - start, start);
}

/* true, false or null; NaN and Infinity get their own message. */
static void parse_word(parser *p) {
  static const struct {
    const char *word;
    int kind;
  } words[] = {{"true", 1}, {"false", 0}, {"null", -1}};
  for (size_t i = 0; i < sizeof words / sizeof words[0]; i++) {
    size_t len = strlen(words[i].word);
    if (p->s[p->pos] != words[i].word[0]) continue;
    if (p->n - p->pos < len || memcmp(p->s + p->pos, words[i].word, len) != 0)
      parse_fail(p, p->pos, "invalid literal (expected '%s')", words[i].word);
    p->pos += len;
    if (words[i].kind < 0)
      lua_pushlightuserdata(p->L, NULL); /* kb.jcs.null */
    else
      lua_pushboolean(p->L, words[i].kind);
    return;
  }
  if (p->s[p->pos] == 'N') parse_fail(p, p->pos, "NaN is not valid JSON");
  if (p->s[p->pos] == 'I') parse_fail(p, p->pos, "Infinity is not valid JSON");
  parse_unexpected(p, "a JSON value");
}

static void parse_value(parser *p, int depth);

/* An array (p->pos at '['): pushes a table with the array marker. */
static void parse_array(parser *p, int depth) {
  lua_Integer i = 0;
  p->pos++;
  lua_newtable(p->L);
  skip_ws(p);
  if (!p->mark_empty || peek(p) == ']') luaL_setmetatable(p->L, JCS_ARRAY_MT);
  if (peek(p) == ']') {
    p->pos++;
    return;
  }
  for (;;) {
    parse_value(p, depth + 1);
    lua_rawseti(p->L, -2, ++i);
    skip_ws(p);
    if (peek(p) == ']') break;
    if (peek(p) != ',') parse_unexpected(p, "',' or ']' after an array element");
    p->pos++;
  }
  p->pos++;
}

/* An object (p->pos at '{'): pushes a table with the object marker.
 * Duplicate keys (after unescaping) are errors, as I-JSON requires. */
static void parse_object(parser *p, int depth) {
  lua_State *L = p->L;
  p->pos++;
  lua_newtable(L);
  skip_ws(p);
  if (!p->mark_empty || peek(p) == '}') luaL_setmetatable(L, JCS_OBJECT_MT);
  if (peek(p) == '}') {
    p->pos++;
    return;
  }
  for (;;) {
    size_t key_at = p->pos;
    if (peek(p) != '"') parse_unexpected(p, "'\"' to begin an object key");
    parse_string(p);
    lua_pushvalue(L, -1);
    if (lua_rawget(L, -3) != LUA_TNIL) {
      size_t klen;
      const char *k = lua_tolstring(L, -2, &klen);
      luaL_Buffer lb;
      luaL_buffinit(L, &lb);
      add_snippet(&lb, k, klen, 60);
      luaL_pushresult(&lb);
      parse_fail(p, key_at, "duplicate object key %s", lua_tostring(L, -1));
    }
    lua_pop(L, 1);
    skip_ws(p);
    if (peek(p) != ':') parse_unexpected(p, "':' after an object key");
    p->pos++;
    parse_value(p, depth + 1);
    lua_rawset(L, -3);
    skip_ws(p);
    if (peek(p) == '}') break;
    if (peek(p) != ',') parse_unexpected(p, "',' or '}' after an object member");
    p->pos++;
    skip_ws(p);
  }
  p->pos++;
}

/* Any value, leading whitespace skipped: pushes it. depth counts the
 * containers around it. */
static void parse_value(parser *p, int depth) {
  int c;
  skip_ws(p);
  c = peek(p);
  if ((c == '[' || c == '{') && depth >= JCS_MAX_DEPTH)
    parse_fail(p, p->pos, "nesting deeper than %d levels", JCS_MAX_DEPTH);
  luaL_checkstack(p->L, 4, "kb.jcs: JSON nested too deeply");
  if (c == '[')
    parse_array(p, depth);
  else if (c == '{')
    parse_object(p, depth);
  else if (c == '"')
    parse_string(p);
  else if (c == '-' || (c >= '0' && c <= '9'))
    parse_number(p);
  else if (c < 0)
    parse_unexpected(p, "a JSON value");
  else
    parse_word(p);
}

/* Parses the whole text at stack index idx and pushes its value. */
static void parse_document(lua_State *L, int idx, const char *fn, int int64, int mark_empty) {
  parser p = {L, NULL, 0, 0, fn, int64, mark_empty};
  luaL_checktype(L, idx, LUA_TSTRING);
  p.s = lua_tolstring(L, idx, &p.n);
  parse_value(&p, 0);
  skip_ws(&p);
  if (p.pos < p.n) parse_fail(&p, p.pos, "unexpected data after the JSON value");
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

/*** The RFC 8785 canonical form of JSON text.
 *
 * No whitespace, object members sorted by UTF-16 code units, minimal string escapes, numbers as
 * ECMAScript writes them (shortest round trip; `1e+21`, `1e-7`). Invalid JSON is an error.
 *
 * @signature kb.jcs.canonicalize(json_text) -> text
 * @section digest
 * @example
 *   print(kb.jcs.canonicalize('{"b": 1.0, "a": [1e3]}')) --> {"a":[1000],"b":1}
 */
/* kb.jcs.canonicalize(json_text) -> the RFC 8785 form of the text. */
static int l_canonicalize(lua_State *L) {
  parse_document(L, 1, "kb.jcs.canonicalize", 0, 0);
  encode_document(L, -1, "kb.jcs.canonicalize");
  return 1;
}

/*** Canonical JSON of a Lua value.
 *
 * A table whose keys are exactly 1..n is an array, one with string keys an object; mark the empty
 * table with kb.jcs.array{} or kb.jcs.object{} (unmarked it is an object). Integers print exactly
 * (beyond +-2^53 is an error); NaN, infinities, cycles, mixed keys and invalid UTF-8 are errors
 * naming the path ($.spec.x[2]).
 *
 * @signature kb.jcs.encode(value) -> text
 * @section digest
 * @example
 *   print(kb.jcs.encode({list = {3, 1}, none = kb.jcs.array{}})) --> {"list":[3,1],"none":[]}
 */
/* kb.jcs.encode(value) -> canonical JSON text of a Lua value. */
static int l_encode(lua_State *L) {
  lua_settop(L, 1);
  encode_document(L, 1, "kb.jcs.encode");
  return 1;
}

/* The boolean field name of the options table at idx (absent: false). */
static int opt_flag(lua_State *L, int idx, const char *name) {
  int v;
  if (lua_isnoneornil(L, idx)) return 0;
  lua_getfield(L, idx, name);
  v = lua_toboolean(L, -1);
  lua_pop(L, 1);
  return v;
}

/*** Parses strict JSON (RFC 8259) into Lua values.
 *
 * Arrays and objects come back marked (kb.jcs.is_array tells them apart); null is kb.jcs.null.
 * Integers up to +-2^53 are Lua integers, other numbers doubles. opts.int64: every integer that
 * fits a Lua integer stays one (as Lua's tonumber reads it); opts.mark_empty: only empty arrays
 * and objects are marked. With both, a text reads as the stdlib's JSON reader (report.decode)
 * reads it, which uses this parser so.
 *
 * @signature kb.jcs.decode(json_text [, opts]) -> value
 * @section digest
 * @example
 *   local v = kb.jcs.decode('{"a": [1, 2]}')
 *   print(v.a[2], kb.jcs.is_array(v.a))
 */
static int l_decode(lua_State *L) {
  int int64, mark_empty;
  if (!lua_isnoneornil(L, 2)) luaL_checktype(L, 2, LUA_TTABLE);
  int64 = opt_flag(L, 2, "int64");
  mark_empty = opt_flag(L, 2, "mark_empty");
  lua_settop(L, 1);
  parse_document(L, 1, "kb.jcs.decode", int64, mark_empty);
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
 *   assert(kb.jcs.is_array(kb.jcs.decode("[]")))
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

/*** The value JSON null decodes to and encodes from (the NULL light userdata, like cjson.null).
 *
 * @signature kb.jcs.null
 * @section digest
 * @kind value
 * @example
 *   print(kb.jcs.encode({x = kb.jcs.null})) --> {"x":null}
 */
/*** The deepest nesting of arrays and objects that kb.jcs reads and writes; the stdlib's JSON
 * reader and writer (output.decode, output.encode_line) use the same cap.
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
      {"canonicalize", l_canonicalize},
      {"encode", l_encode},
      {"decode", l_decode},
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
