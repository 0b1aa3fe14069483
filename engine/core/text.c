/* Text from outside the engine, made safe for messages: bytes a plugin
 * wrote (escaped, as the stdlib's cli.printable escapes input), and Lua
 * strings that C would cut at their first NUL byte (refused). Every binding
 * that hands a Lua string to the OS or a library as C text (a path, an
 * argument vector, an environment, SQL text, a name looked up with strcmp)
 * takes it through kb_check_cstring / kb_opt_cstring, or kb_refuse_nul for
 * a string inside a table: "x.jsonl\0zz" must never become x.jsonl. */
#include <stdarg.h>
#include <stdio.h>
#include "kb.h"

/* The length of the UTF-8 sequence at s[0..n) (1 to 4), or 0 when it is not
 * a well-formed one (overlong forms, surrogates and code points beyond
 * U+10FFFF are not, as in Lua's utf8 library). */
static size_t utf8_len(const unsigned char *s, size_t n) {
  unsigned char b = s[0];
  size_t len = b < 0x80 ? 1 : b < 0xC2 ? 0 : b <= 0xDF ? 2 : b <= 0xEF ? 3 : b <= 0xF4 ? 4 : 0;
  if (len == 0 || len > n) return 0;
  if (len == 1) return 1;
  for (size_t i = 1; i < len; i++)
    if ((s[i] & 0xC0) != 0x80) return 0;
  if (b == 0xE0 && s[1] < 0xA0) return 0; /* overlong */
  if (b == 0xED && s[1] >= 0xA0) return 0; /* UTF-16 surrogate */
  if (b == 0xF0 && s[1] < 0x90) return 0; /* overlong */
  if (b == 0xF4 && s[1] >= 0x90) return 0; /* beyond U+10FFFF */
  return len;
}

/* Declared in kb.h. */
size_t kb_printable(char *out, size_t outlen, const char *in, size_t inlen) {
  const unsigned char *s = (const unsigned char *)in;
  size_t o = 0;
  if (outlen == 0) return 0;
  for (size_t i = 0; i < inlen;) {
    size_t len = utf8_len(s + i, inlen - i);
    int escape = len == 0 || s[i] < 0x20 || s[i] == 0x7F;
    size_t need = escape ? 4 : len;
    if (o + need >= outlen) break;
    if (escape) {
      snprintf(out + o, 5, "\\x%02X", s[i]);
      i++;
    } else {
      memcpy(out + o, s + i, len);
      i += len;
    }
    o += need;
  }
  out[o] = '\0';
  return o;
}

/* Declared in kb.h. */
void kb_refuse_nul(lua_State *L, int idx, const char *fn, int arg, const char *what, ...) {
  size_t n;
  const char *s = lua_tolstring(L, idx, &n);
  const char *nul = s ? memchr(s, '\0', n) : NULL;
  if (!nul) return;
  va_list ap;
  va_start(ap, what);
  const char *named = lua_pushvfstring(L, what, ap);
  va_end(ap);
  const lua_Integer at = (lua_Integer)(nul - s) + 1;
  if (!fn) /* a check shared by many functions: Lua names the one called */
    luaL_argerror(L, arg, lua_pushfstring(L, "%s has a NUL byte at byte %I: C would read only the text before it",
                                          named, at));
  luaL_error(L, "bad argument #%d to '%s' (%s has a NUL byte at byte %I: C would read only the text before it)",
             arg, fn, named, at);
}

/* Declared in kb.h. */
const char *kb_check_cstring(lua_State *L, int arg, const char *fn, const char *what) {
  const char *s = luaL_checkstring(L, arg);
  kb_refuse_nul(L, arg, fn, arg, "%s", what);
  return s;
}

/* Declared in kb.h. */
const char *kb_opt_cstring(lua_State *L, int arg, const char *fn, const char *what, const char *def) {
  if (lua_isnoneornil(L, arg)) return def;
  return kb_check_cstring(L, arg, fn, what);
}
