/* kb.sha256, kb.sha256_file, kb.digest: SHA-256 through OpenSSL's EVP
 * interface. Every OpenSSL call is checked; its failure is a Lua error
 * carrying the call and OpenSSL's message. A file that cannot be read is a
 * soft failure (nil, message), as io.open reports it. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/evp.h>

#include "kb.h"

#define KB_FILE_CHUNK (64 * 1024)

/* The message of a failed OpenSSL call: "call: <OpenSSL's reason>". Lives
 * in a per-thread buffer until the next failure. */
static const char *ssl_error(const char *call) {
  static _Thread_local char msg[320];
  char reason[256] = "no OpenSSL error queued";
  unsigned long code = ERR_get_error();
  if (code != 0) ERR_error_string_n(code, reason, sizeof reason);
  ERR_clear_error();
  snprintf(msg, sizeof msg, "%s failed: %s", call, reason);
  return msg;
}

/* A context ready for SHA-256 in *out, or an error message. */
static const char *sha256_begin(EVP_MD_CTX **out) {
  const EVP_MD *md = EVP_sha256();
  EVP_MD_CTX *ctx;
  *out = NULL;
  if (!md) return ssl_error("EVP_sha256");
  if (!(ctx = EVP_MD_CTX_new())) return ssl_error("EVP_MD_CTX_new");
  if (EVP_DigestInit_ex(ctx, md, NULL) != 1) {
    EVP_MD_CTX_free(ctx);
    return ssl_error("EVP_DigestInit_ex");
  }
  *out = ctx;
  return NULL;
}

static const char *sha256_update(EVP_MD_CTX *ctx, const void *p, size_t n) {
  return EVP_DigestUpdate(ctx, p, n) == 1 ? NULL : ssl_error("EVP_DigestUpdate");
}

/* Finishes the digest into 64 lowercase hex digits and a NUL. ctx stays
 * the caller's to free. */
static const char *sha256_end(EVP_MD_CTX *ctx, char out[65]) {
  static const char hex[] = "0123456789abcdef";
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  if (EVP_DigestFinal_ex(ctx, md, &len) != 1) return ssl_error("EVP_DigestFinal_ex");
  if (len != 32) return "EVP_DigestFinal_ex: SHA-256 digest is not 32 bytes";
  for (unsigned i = 0; i < 32; i++) {
    out[2 * i] = hex[md[i] >> 4];
    out[2 * i + 1] = hex[md[i] & 15];
  }
  out[64] = '\0';
  return NULL;
}

/* Declared in kb.h: hex SHA-256 of p[0..n). NULL on success. */
const char *kb_sha256_hex(const void *p, size_t n, char out[65]) {
  EVP_MD_CTX *ctx;
  const char *err = sha256_begin(&ctx);
  if (err) return err;
  if (!(err = sha256_update(ctx, p, n))) err = sha256_end(ctx, out);
  EVP_MD_CTX_free(ctx);
  return err;
}

/* Declared in kb.h: hex SHA-256 of the bytes that next(ctx, ...) hands out piece by piece. */
const char *kb_sha256_hex_pieces(kb_sha256_next_fn next, void *ctx, char out[65]) {
  EVP_MD_CTX *md;
  const char *err = sha256_begin(&md);
  if (err) return err;
  for (;;) {
    const void *p = NULL;
    size_t n = 0;
    if ((err = next(ctx, &p, &n)) || n == 0) break;
    if ((err = sha256_update(md, p, n))) break;
  }
  if (!err) err = sha256_end(md, out);
  EVP_MD_CTX_free(md);
  return err;
}

/* Hashes an open file in KB_FILE_CHUNK pieces. Returns NULL on success;
 * else *io_errno is set for a read error (soft), or an OpenSSL message is
 * returned (hard). buf has KB_FILE_CHUNK bytes. */
static const char *sha256_stream(FILE *f, unsigned char *buf, char out[65], int *io_errno) {
  EVP_MD_CTX *ctx;
  const char *err = sha256_begin(&ctx);
  size_t got;
  *io_errno = 0;
  if (err) return err;
  do {
    got = fread(buf, 1, KB_FILE_CHUNK, f);
    if (got > 0 && (err = sha256_update(ctx, buf, got))) break;
  } while (got == KB_FILE_CHUNK);
  if (!err && ferror(f)) *io_errno = errno ? errno : EIO;
  if (!err && !*io_errno) err = sha256_end(ctx, out);
  EVP_MD_CTX_free(ctx);
  return err;
}

/*** SHA-256 of a string, as 64 lowercase hex digits.
 *
 * @signature kb.sha256(bytes) -> hex
 * @section digest
 * @example
 *   print(kb.sha256("abc")) --> ba7816bf...
 */
/* kb.sha256(bytes) -> 64 lowercase hex digits. */
static int l_sha256(lua_State *L) {
  size_t n;
  const char *s;
  char hex[65];
  luaL_checktype(L, 1, LUA_TSTRING);
  s = lua_tolstring(L, 1, &n);
  KB_TRY(L, kb_sha256_hex(s, n, hex));
  lua_pushstring(L, hex);
  return 1;
}

/* Pushes nil, "path: reason" and returns 2 (the io.open convention). */
static int file_fail(lua_State *L, const char *path, int err) {
  lua_pushnil(L);
  lua_pushfstring(L, "%s: %s", path, strerror(err));
  return 2;
}

/*** SHA-256 of a file's bytes; nil and "path: reason" when it cannot be read.
 *
 * Only regular files: a device or a FIFO (which may never end) gives nil, "path: not a regular
 * file ...".
 *
 * @signature kb.sha256_file(path) -> hex | nil, message
 * @section digest
 * @example
 *   local hex, err = kb.sha256_file("kernels/rope.cu")
 */
/* kb.sha256_file(path) -> hex, or nil, "path: reason" when it cannot be
 * read. The chunk buffer is a userdata so that nothing leaks on an error;
 * the file is closed before any error is raised. */
static int l_sha256_file(lua_State *L) {
  const char *path = kb_check_cstring(L, 1, "sha256_file", "path");
  unsigned char *buf = lua_newuserdatauv(L, KB_FILE_CHUNK, 0);
  char hex[65];
  int io_errno;
  const char *err;
  /* a device or a FIFO may never end (/dev/zero), and opening a FIFO
   * waits for a writer: opened without waiting, and only regular files */
  int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return file_fail(L, path, errno);
  struct stat st;
  if (fstat(fd, &st) != 0) {
    int e = errno;
    close(fd);
    return file_fail(L, path, e);
  }
  if (S_ISDIR(st.st_mode)) {
    close(fd);
    return file_fail(L, path, EISDIR);
  }
  if (!S_ISREG(st.st_mode)) {
    close(fd);
    lua_pushnil(L);
    lua_pushfstring(L, "%s: not a regular file (a device or FIFO may never end)", path);
    return 2;
  }
  FILE *f = fdopen(fd, "rb");
  if (!f) {
    int e = errno;
    close(fd);
    return file_fail(L, path, e);
  }
  err = sha256_stream(f, buf, hex, &io_errno);
  fclose(f);
  KB_TRY(L, err);
  if (io_errno) return file_fail(L, path, io_errno);
  lua_pushstring(L, hex);
  return 1;
}

/*** The digest of a Lua value: "sha256:" .. kb.sha256(kb.jcs.encode(value)).
 *
 * The digest recipe of records: equal values give equal digests on any machine.
 *
 * @signature kb.digest(value) -> "sha256:<hex>"
 * @section digest
 * @example
 *   print(kb.digest({b = 2, a = 1})) -- same as kb.digest({a = 1, b = 2})
 */
/* kb.digest(value) -> "sha256:" .. kb.sha256(kb.jcs.encode(value)). The
 * encoder is looked up in the module table (upvalue 1) at call time, so
 * the order in which the parts of the module are opened does not matter. */
static int l_digest(lua_State *L) {
  size_t n;
  const char *s;
  char hex[65];
  lua_settop(L, 1);
  if (lua_getfield(L, lua_upvalueindex(1), "jcs") != LUA_TTABLE ||
      lua_getfield(L, -1, "encode") != LUA_TFUNCTION)
    return luaL_error(L, "kb.digest: kb.jcs.encode is missing");
  lua_pushvalue(L, 1);
  lua_call(L, 1, 1);
  s = lua_tolstring(L, -1, &n);
  if (!s) return luaL_error(L, "kb.digest: kb.jcs.encode returned no string");
  KB_TRY(L, kb_sha256_hex(s, n, hex));
  lua_pushfstring(L, "sha256:%s", hex);
  return 1;
}

/* Adds sha256, sha256_file and digest to the module table on top of the
 * stack. */
void kb_open_digest(lua_State *L) {
  static const luaL_Reg fns[] = {
      {"sha256", l_sha256},
      {"sha256_file", l_sha256_file},
      {NULL, NULL},
  };
  luaL_setfuncs(L, fns, 0);
  lua_pushvalue(L, -1);
  lua_pushcclosure(L, l_digest, 1);
  lua_setfield(L, -2, "digest");
}
