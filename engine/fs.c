/* File-system primitives the stdlib needs for durable output: fsync of a
 * file and of its directory, so that "write temp, fsync, rename" survives a
 * crash. Soft failures return nil, message (luv style). */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>
#include "kb.h"

/* fsync(path): flush a file's (or directory's) data to the device. */
static int l_fsync(lua_State *L) {
  const char *path = luaL_checkstring(L, 1);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0 || fsync(fd) != 0) {
    int e = errno;
    if (fd >= 0) close(fd);
    luaL_pushfail(L);
    lua_pushfstring(L, "%s: %s", path, strerror(e));
    return 2;
  }
  close(fd);
  lua_pushboolean(L, 1);
  return 1;
}

static const luaL_Reg functions[] = {{"fsync", l_fsync}, {NULL, NULL}};

void kb_open_fs(lua_State *L) { luaL_setfuncs(L, functions, 0); }
