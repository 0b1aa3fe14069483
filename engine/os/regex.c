/* kb.regex: regular expressions through PCRE2 (BSD licence, linked
 * statically), for the `pattern` keyword of the JSON Schemas that records
 * are checked against (stdlib/kluabench/record/schema.lua). JSON Schema's
 * patterns are ECMA-262 regular expressions; the subset those schemas use
 * (classes, \d, \s, groups, alternation, counted repetition, anchors) means
 * the same in PCRE2. Patterns and subjects are UTF-8 (a pattern holds "µs").
 *
 * Compiled patterns are kept in a small cache keyed by the pattern text: a
 * validator checks the same few patterns against thousands of values. */
#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <string.h>

#include "../core/kb.h"

#define REGEX_CACHE 64
#define REGEX_MAX_PATTERN 4096

typedef struct {
  char *text;
  pcre2_code *code;
} cached_pattern;

static cached_pattern cache[REGEX_CACHE];
static int cache_next;

/* The compiled form of pattern, from the cache or compiled now; raises a Lua
 * error naming the pattern and PCRE2's reason when it does not compile. */
static pcre2_code *compiled(lua_State *L, const char *pattern, size_t len) {
  for (int i = 0; i < REGEX_CACHE; i++) {
    if (cache[i].text && strlen(cache[i].text) == len && memcmp(cache[i].text, pattern, len) == 0)
      return cache[i].code;
  }
  int code = 0;
  PCRE2_SIZE offset = 0;
  pcre2_code *re = pcre2_compile((PCRE2_SPTR)pattern, len, PCRE2_UTF, &code, &offset, NULL);
  if (!re) {
    PCRE2_UCHAR why[256];
    if (pcre2_get_error_message(code, why, sizeof why) < 0) strcpy((char *)why, "unknown error");
    luaL_error(L, "bad argument #1 to 'regex.test' (pattern does not compile at offset %d: %s)",
               (int)offset, (const char *)why);
  }
  char *copy = malloc(len + 1);
  if (!copy) {
    pcre2_code_free(re);
    luaL_error(L, "regex.test: out of memory");
  }
  memcpy(copy, pattern, len);
  copy[len] = '\0';
  cached_pattern *slot = &cache[cache_next];
  cache_next = (cache_next + 1) % REGEX_CACHE;
  free(slot->text);
  pcre2_code_free(slot->code);
  slot->text = copy;
  slot->code = re;
  return re;
}

/*** Whether a regular expression (ECMA-262 syntax as JSON Schema uses it, through PCRE2) matches
 * somewhere in subject.
 *
 * Unanchored unless the pattern anchors itself, as JSON Schema's `pattern` keyword. Patterns and
 * subjects are UTF-8; a subject that is not valid UTF-8 does not match, and the second result says
 * why. A pattern that does not compile is an error naming the offset and PCRE2's reason.
 *
 * @signature kb.regex.test(pattern, subject) -> boolean [, why]
 * @section digest
 * @example
 *   print(kb.regex.test("^sha256:[0-9a-f]{64}$", "sha256:" .. string.rep("0", 64))) --> true
 */
/* kb.regex.test(pattern, subject) -> true | false [, why]: whether pattern
 * matches somewhere in subject (JSON Schema's semantics: unanchored unless
 * the pattern anchors itself). A subject that is not valid UTF-8 does not
 * match, and the second result says so. */
static int l_test(lua_State *L) {
  size_t plen, slen;
  const char *pattern = luaL_checklstring(L, 1, &plen);
  const char *subject = luaL_checklstring(L, 2, &slen);
  if (plen > REGEX_MAX_PATTERN)
    return luaL_argerror(L, 1, "pattern longer than 4096 bytes");
  if (memchr(pattern, '\0', plen)) return luaL_argerror(L, 1, "pattern holds a NUL byte");
  pcre2_code *re = compiled(L, pattern, plen);
  pcre2_match_data *md = pcre2_match_data_create_from_pattern(re, NULL);
  if (!md) return luaL_error(L, "regex.test: out of memory");
  int rc = pcre2_match(re, (PCRE2_SPTR)subject, slen, 0, 0, md, NULL);
  pcre2_match_data_free(md);
  if (rc >= 0) {
    lua_pushboolean(L, 1);
    return 1;
  }
  if (rc == PCRE2_ERROR_NOMATCH) {
    lua_pushboolean(L, 0);
    return 1;
  }
  PCRE2_UCHAR why[256];
  if (pcre2_get_error_message(rc, why, sizeof why) < 0) strcpy((char *)why, "unknown error");
  if (rc <= PCRE2_ERROR_UTF8_ERR1 && rc >= PCRE2_ERROR_UTF8_ERR21) {
    lua_pushboolean(L, 0);
    lua_pushfstring(L, "subject is not valid UTF-8 (%s)", (const char *)why);
    return 2;
  }
  return luaL_error(L, "regex.test: matching failed: %s", (const char *)why);
}

void kb_open_regex(lua_State *L) {
  static const luaL_Reg fns[] = {{"test", l_test}, {NULL, NULL}};
  luaL_newlib(L, fns);
  lua_setfield(L, -2, "regex");
}
