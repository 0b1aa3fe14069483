/* File-system primitives the stdlib needs for durable, careful output:
 * fsync of a file and of its directory (so that "write temp, fsync, rename"
 * survives a crash), what a path is (a symbolic link, a device, a FIFO must
 * not be replaced by a regular file), its mode (kept when a file is
 * replaced), and mkdir without a shell. Soft failures return nil, message
 * (luv style). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "kb.h"

static int fail(lua_State *L, const char *path, int e) {
  luaL_pushfail(L);
  lua_pushfstring(L, "%s: %s", path, strerror(e));
  return 2;
}

/* fsync(path): flush a file's (or directory's) data to the device. */
static int l_fsync(lua_State *L) {
  const char *path = luaL_checkstring(L, 1);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0 || fsync(fd) != 0) {
    int e = errno;
    if (fd >= 0) close(fd);
    return fail(L, path, e);
  }
  close(fd);
  lua_pushboolean(L, 1);
  return 1;
}

static const char *type_name(mode_t m) {
  if (S_ISREG(m)) return "file";
  if (S_ISDIR(m)) return "directory";
  if (S_ISLNK(m)) return "link";
  if (S_ISFIFO(m)) return "fifo";
  if (S_ISCHR(m)) return "char";
  if (S_ISBLK(m)) return "block";
  if (S_ISSOCK(m)) return "socket";
  return "other";
}

/* stat(path [, follow]) -> {type = "file"|"directory"|"link"|"fifo"|"char"|
 * "block"|"socket"|"other", mode = permission bits, size = bytes}, or nil,
 * "path: reason", errno. Links are not followed unless follow is true. */
static int l_stat(lua_State *L) {
  const char *path = luaL_checkstring(L, 1);
  int follow = lua_toboolean(L, 2);
  struct stat st;
  if ((follow ? stat(path, &st) : lstat(path, &st)) != 0) {
    int e = errno;
    fail(L, path, e);
    lua_pushinteger(L, e);
    return 3;
  }
  lua_createtable(L, 0, 3);
  lua_pushstring(L, type_name(st.st_mode));
  lua_setfield(L, -2, "type");
  lua_pushinteger(L, (lua_Integer)(st.st_mode & 07777));
  lua_setfield(L, -2, "mode");
  lua_pushinteger(L, (lua_Integer)st.st_size);
  lua_setfield(L, -2, "size");
  return 1;
}

/* realpath(path) -> the absolute path with every link resolved, or nil,
 * "path: reason" (a dangling link among them). */
static int l_realpath(lua_State *L) {
  const char *path = luaL_checkstring(L, 1);
  char buf[PATH_MAX];
  if (!realpath(path, buf)) return fail(L, path, errno);
  lua_pushstring(L, buf);
  return 1;
}

/* chmod(path, mode) -> true, or nil, "path: reason". */
static int l_chmod(lua_State *L) {
  const char *path = luaL_checkstring(L, 1);
  lua_Integer mode = luaL_checkinteger(L, 2);
  luaL_argcheck(L, mode >= 0 && mode <= 07777, 2, "permission bits 0 to 07777 expected");
  if (chmod(path, (mode_t)mode) != 0) return fail(L, path, errno);
  lua_pushboolean(L, 1);
  return 1;
}

/* mkdir(path) -> true, or nil, "path: reason", errno (EEXIST included:
 * the caller decides whether an existing directory is fine). Mode 0777
 * less the umask, as mkdir(1). */
static int l_mkdir(lua_State *L) {
  const char *path = luaL_checkstring(L, 1);
  if (mkdir(path, 0777) != 0) {
    int e = errno;
    fail(L, path, e);
    lua_pushinteger(L, e);
    return 3;
  }
  lua_pushboolean(L, 1);
  return 1;
}

static const luaL_Reg functions[] = {
    {"fsync", l_fsync}, {"stat", l_stat},   {"realpath", l_realpath},
    {"chmod", l_chmod}, {"mkdir", l_mkdir}, {NULL, NULL},
};

void kb_open_fs(lua_State *L) {
  luaL_setfuncs(L, functions, 0);
  lua_pushinteger(L, PATH_MAX);
  lua_setfield(L, -2, "PATH_MAX");
}
