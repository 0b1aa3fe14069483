/* File-system primitives the stdlib needs for durable, careful output:
 * fsync of a file and of its directory (so that "write temp, fsync, rename"
 * survives a crash), what a path is (a symbolic link, a device, a FIFO must
 * not be replaced by a regular file), its mode (kept when a file is
 * replaced), and mkdir without a shell. And the one bounded reader of whole
 * files that the engine (kb.cuda.load, the NVRTC cache, plugins) and the
 * stdlib (output.read_file) share. Soft failures return nil, message (luv
 * style). */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>
#include "../core/kb.h"

static int fail(lua_State *L, const char *path, int e) {
  luaL_pushfail(L);
  lua_pushfstring(L, "%s: %s", path, strerror(e));
  return 2;
}

/*** Flushes a file's (or a directory's) data to the device, for "write, fsync, rename" output that
 * survives a crash.
 *
 * @signature kb.fsync(path) -> true | nil, message
 * @section digest
 * @example
 *   local ok, err = kb.fsync(".")
 */
/* fsync(path): flush a file's (or directory's) data to the device. */
static int l_fsync(lua_State *L) {
  const char *path = kb_check_cstring(L, 1, "fsync", "path");
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

/*** What path is: type "file", "directory", "link", "fifo", "char", "block", "socket" or "other";
 * mode (permission bits), size, and the device and inode numbers (equal for two names of one
 * file).
 *
 * Links are not followed unless follow is true (lstat/stat). errno is 2 when path does not exist.
 *
 * @signature kb.stat(path [, follow]) -> {type, mode, size, dev, ino} | nil, message, errno
 * @section digest
 * @example
 *   local st = kb.stat("/dev/null", true) print(st.type) --> char
 */
/* stat(path [, follow]) -> {type = "file"|"directory"|"link"|"fifo"|"char"|
 * "block"|"socket"|"other", mode = permission bits, size = bytes, dev, ino}, or nil,
 * "path: reason", errno. Links are not followed unless follow is true. */
static int l_stat(lua_State *L) {
  const char *path = kb_check_cstring(L, 1, "stat", "path");
  int follow = lua_toboolean(L, 2);
  struct stat st;
  if ((follow ? stat(path, &st) : lstat(path, &st)) != 0) {
    int e = errno;
    fail(L, path, e);
    lua_pushinteger(L, e);
    return 3;
  }
  lua_createtable(L, 0, 5);
  lua_pushstring(L, type_name(st.st_mode));
  lua_setfield(L, -2, "type");
  lua_pushinteger(L, (lua_Integer)(st.st_mode & 07777));
  lua_setfield(L, -2, "mode");
  lua_pushinteger(L, (lua_Integer)st.st_size);
  lua_setfield(L, -2, "size");
  /* dev and ino tell whether two paths are one file (hard links included) */
  lua_pushinteger(L, (lua_Integer)st.st_dev);
  lua_setfield(L, -2, "dev");
  lua_pushinteger(L, (lua_Integer)st.st_ino);
  lua_setfield(L, -2, "ino");
  return 1;
}

/*** The absolute path with every symbolic link resolved (nil for a dangling link).
 *
 * @signature kb.realpath(path) -> absolute path | nil, message
 * @section digest
 * @example
 *   print(kb.realpath("."))
 */
/* realpath(path) -> the absolute path with every link resolved, or nil,
 * "path: reason" (a dangling link among them). */
static int l_realpath(lua_State *L) {
  const char *path = kb_check_cstring(L, 1, "realpath", "path");
  char buf[PATH_MAX];
  if (!realpath(path, buf)) return fail(L, path, errno);
  lua_pushstring(L, buf);
  return 1;
}

/*** The text of a symbolic link (where it points, as written, not resolved): what a dangling link
 * names, which kb.realpath cannot say. nil, message when path is no link.
 *
 * @signature kb.readlink(path) -> target | nil, message
 * @section digest
 * @example
 *   print(kb.readlink("/proc/self/exe"))
 */
static int l_readlink(lua_State *L) {
  const char *path = kb_check_cstring(L, 1, "readlink", "path");
  char buf[PATH_MAX];
  ssize_t n = readlink(path, buf, sizeof buf);
  if (n < 0) return fail(L, path, errno);
  if ((size_t)n >= sizeof buf) return fail(L, path, ENAMETOOLONG);
  lua_pushlstring(L, buf, (size_t)n);
  return 1;
}

/*** Sets the permission bits of a file (0 to 07777); output.write_atomic keeps a replaced file's
 * mode with it.
 *
 * @signature kb.chmod(path, mode) -> true | nil, message
 * @section digest
 * @example
 *   kb.chmod("result.json", 420) -- 0644
 */
/* chmod(path, mode) -> true, or nil, "path: reason". */
static int l_chmod(lua_State *L) {
  const char *path = kb_check_cstring(L, 1, "chmod", "path");
  lua_Integer mode = luaL_checkinteger(L, 2);
  luaL_argcheck(L, mode >= 0 && mode <= 07777, 2, "permission bits 0 to 07777 expected");
  if (chmod(path, (mode_t)mode) != 0) return fail(L, path, errno);
  lua_pushboolean(L, 1);
  return 1;
}

/*** Creates one directory (mode 0777 less the umask), without a shell; errno 17 when it exists.
 *
 * @signature kb.mkdir(path) -> true | nil, message, errno
 * @section digest
 * @example
 *   local dir = os.tmpname(); os.remove(dir) -- a name nothing has
 *   local ok, err, errno = kb.mkdir(dir)
 *   print(select(3, kb.mkdir(dir))) --> 17
 *   os.remove(dir)
 */
/* mkdir(path) -> true, or nil, "path: reason", errno (EEXIST included:
 * the caller decides whether an existing directory is fine). Mode 0777
 * less the umask, as mkdir(1). */
static int l_mkdir(lua_State *L) {
  const char *path = kb_check_cstring(L, 1, "mkdir", "path");
  if (mkdir(path, 0777) != 0) {
    int e = errno;
    fail(L, path, e);
    lua_pushinteger(L, e);
    return 3;
  }
  lua_pushboolean(L, 1);
  return 1;
}

/* ---- temporaries and appends ---------------------------------------------- */

/* write(2) of all n bytes, again after a short write or EINTR: 0, or the
 * errno of the write that failed (the bytes before it are in the file). */
static int write_all(int fd, const char *p, size_t n) {
  size_t done = 0;
  while (done < n) {
    ssize_t r = write(fd, p + done, n - done);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return errno;
    if (r == 0) return EIO;
    done += (size_t)r;
  }
  return 0;
}

/* list[#list + 1] = the C string at 2 (a light userdata); run under lua_pcall. */
static int append_path(lua_State *L) {
  lua_pushstring(L, (const char *)lua_touserdata(L, 2));
  lua_rawseti(L, 1, (lua_Integer)lua_rawlen(L, 1) + 1);
  return 0;
}

/*** Writes bytes into a new temporary file beside target, "TARGET.tmp-<12 random hex digits>",
 * created exclusively (O_CREAT | O_EXCL | O_NOFOLLOW: a file or a link planted at the name is never
 * opened, another name is drawn), then flushed to the device (fsync) and closed; its permission bits
 * are mode when given, else 0666 less the umask. Returns the temporary's path for the caller to
 * rename over the target (or remove): output.write_atomic, write_atomic_all and check_writable's
 * probe make every temporary of the stdlib through it. On a failure the temporary is removed and
 * the message names target: nil, "TARGET: why". created, a list, gets the path the moment the file
 * exists, before any byte is written: a caller whose call an interrupt ends before the path comes
 * back (Ctrl-C strikes as the function returns) still knows what to remove.
 *
 * @signature kb.write_temp(target, bytes [, mode [, created]]) -> temporary path | nil, message
 * @section digest
 * @example
 *   local target = os.tmpname()
 *   local tmp = assert(kb.write_temp(target, "new contents\n"))
 *   assert(os.rename(tmp, target))
 *   os.remove(target)
 */
static int l_write_temp(lua_State *L) {
  const char *target = kb_check_cstring(L, 1, "write_temp", "target");
  size_t n;
  const char *bytes = luaL_checklstring(L, 2, &n);
  lua_Integer mode = luaL_optinteger(L, 3, -1);
  luaL_argcheck(L, mode >= -1 && mode <= 07777, 3, "permission bits 0 to 07777 expected");
  if (!lua_isnoneornil(L, 4)) luaL_checktype(L, 4, LUA_TTABLE);
  char tmp[PATH_MAX + 32];
  int fd = kb_create_temp(tmp, sizeof tmp, target, 0666);
  if (fd < 0) return fail(L, target, errno);
  if (lua_istable(L, 4)) {
    /* protected: a memory error there must not leave the file and its descriptor behind */
    lua_pushcfunction(L, append_path);
    lua_pushvalue(L, 4);
    lua_pushlightuserdata(L, tmp);
    if (lua_pcall(L, 2, 0, 0) != LUA_OK) {
      close(fd);
      unlink(tmp);
      return lua_error(L);
    }
  }
  int e = write_all(fd, bytes, n);
  if (!e && mode >= 0 && fchmod(fd, (mode_t)mode) != 0) e = errno;
  if (!e && fsync(fd) != 0) e = errno;
  if (close(fd) != 0 && !e) e = errno;
  if (e) {
    unlink(tmp);
    return fail(L, target, e);
  }
  lua_pushstring(L, tmp);
  return 1;
}

/*** Appends bytes to path (created when missing, 0666 less the umask) whole or not at all: a write
 * that fails part-way (a full disk, the file-size limit, a quota) is cut back to the size the file
 * had before it, so a JSON Lines file never ends in half a line. Appenders in kluabench processes
 * take an exclusive flock on the file around the append, so the cut never removes another one's
 * line. A device or a FIFO is written as it is (nothing to cut). nil, "path: why" on failure.
 *
 * @signature kb.append_file(path, bytes) -> true | nil, message
 * @section digest
 * @example
 *   local path = os.tmpname()
 *   assert(kb.append_file(path, '{"n":1}\n'))
 *   os.remove(path)
 */
static int l_append_file(lua_State *L) {
  const char *path = kb_check_cstring(L, 1, "append_file", "path");
  size_t n;
  const char *bytes = luaL_checklstring(L, 2, &n);
  int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0666);
  if (fd < 0) return fail(L, path, errno);
  struct stat st;
  off_t start = -1;
  if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
    /* under the lock, the end of the file is where this append begins */
    while (flock(fd, LOCK_EX) != 0 && errno == EINTR) {}
    start = lseek(fd, 0, SEEK_END);
  }
  int e = write_all(fd, bytes, n);
  int te = 0;
  if (e && start >= 0 && ftruncate(fd, start) != 0) te = errno;
  close(fd); /* and the lock with it */
  if (!e) {
    lua_pushboolean(L, 1);
    return 1;
  }
  luaL_pushfail(L);
  if (te) lua_pushfstring(L, "%s: %s (and the part written could not be cut off: %s)", path, strerror(e), strerror(te));
  else lua_pushfstring(L, "%s: %s", path, strerror(e));
  return 2;
}

/* ---- removing a directory tree ------------------------------------------- */

/* nftw's callback gets no context: the first error, for l_remove_tree. */
static _Thread_local int tree_errno;
static _Thread_local char tree_failed[PATH_MAX];

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
  (void)st;
  (void)ftw;
  /* FTW_DP: a directory whose entries are gone; FTW_DNR: one that could not be read */
  int rc = (flag == FTW_DP || flag == FTW_DNR || flag == FTW_D) ? rmdir(path) : unlink(path);
  if (rc != 0 && !tree_errno) {
    tree_errno = errno;
    snprintf(tree_failed, sizeof tree_failed, "%s", path);
  }
  return 0; /* go on: remove what can be removed */
}

/*** Removes a file, or a directory with everything in it, without a shell (what `rm -r` does):
 * links are removed, never followed. A path that does not exist is fine (true). "/" is refused.
 * nil, "path: why" for the first entry that could not be removed.
 *
 * @signature kb.remove_tree(path) -> true | nil, message
 * @section digest
 * @example
 *   local dir = os.tmpname(); os.remove(dir); assert(kb.mkdir(dir))
 *   assert(kb.mkdir(dir .. "/sub"))
 *   assert(kb.remove_tree(dir))
 */
static int l_remove_tree(lua_State *L) {
  const char *path = kb_check_cstring(L, 1, "remove_tree", "path");
  luaL_argcheck(L, path[0] != '\0', 1, "a path expected, got an empty string");
  char real[PATH_MAX];
  if (realpath(path, real) && strcmp(real, "/") == 0) luaL_argerror(L, 1, "refusing to remove /");
  struct stat st;
  if (lstat(path, &st) != 0) {
    if (errno == ENOENT) {
      lua_pushboolean(L, 1);
      return 1;
    }
    return fail(L, path, errno);
  }
  tree_errno = 0;
  tree_failed[0] = '\0';
  if (!S_ISDIR(st.st_mode)) {
    if (unlink(path) != 0) return fail(L, path, errno);
  } else if (nftw(path, remove_entry, 16, FTW_DEPTH | FTW_PHYS) != 0) {
    return fail(L, path, errno);
  }
  if (tree_errno) return fail(L, tree_failed, tree_errno);
  lua_pushboolean(L, 1);
  return 1;
}

/* ---- reading a whole file -------------------------------------------------- */

#define FD_MT "kluabench.fs.fd"

/* A file descriptor owned by a userdata, so that an error raised while the
 * file is read (a memory error growing the buffer) cannot leak it. */
typedef struct {
  int fd;
} kb_fd;

static int fd_gc(lua_State *L) {
  kb_fd *b = (kb_fd *)luaL_checkudata(L, 1, FD_MT);
  if (b->fd >= 0) close(b->fd);
  b->fd = -1;
  return 0;
}

/* What a file that is not a regular one is, as a message names it; NULL
 * for a regular file. */
static const char *not_regular(mode_t m) {
  if (S_ISREG(m)) return NULL;
  if (S_ISDIR(m)) return "a directory";
  if (S_ISFIFO(m)) return "a FIFO";
  if (S_ISCHR(m)) return "a character device";
  if (S_ISBLK(m)) return "a block device";
  if (S_ISSOCK(m)) return "a socket";
  return "not a file";
}

/* Reads fd to its end or past max into a buffer on the stack; returns the
 * errno of a failed read, or -1 when there was more than max. */
static int read_all(lua_State *L, int fd, size_t max, size_t hint, size_t *got) {
  luaL_Buffer b;
  luaL_buffinit(L, &b);
  size_t total = 0;
  int status = 0;
  for (;;) {
    size_t want = total == 0 && hint > 0 ? hint + 1 : 64 * 1024;
    if (want > max - total + 1) want = max - total + 1;
    char *p = luaL_prepbuffsize(&b, want);
    ssize_t n = read(fd, p, want);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      status = errno;
      break;
    }
    if (n == 0) break;
    luaL_addsize(&b, (size_t)n);
    total += (size_t)n;
    if (total > max) {
      status = -1;
      break;
    }
  }
  luaL_pushresult(&b);
  *got = total;
  return status;
}

/* read_all under lua_pcall: a buffer that cannot be allocated (a large
 * file under a memory limit) is a message naming the file, not a bare
 * "not enough memory" raised through the caller. */
typedef struct {
  int fd, status;
  size_t max, hint, got;
} read_job;

static int read_all_protected(lua_State *L) {
  read_job *j = (read_job *)lua_touserdata(L, 1);
  j->status = read_all(L, j->fd, j->max, j->hint, &j->got);
  return 1; /* the bytes */
}

/* Declared in kb.h. */
const char *kb_read_file(lua_State *L, const char *path, size_t max) {
  static _Thread_local char why[200];
  kb_fd *box = (kb_fd *)lua_newuserdatauv(L, sizeof *box, 0);
  box->fd = -1;
  luaL_setmetatable(L, FD_MT);
  /* non-blocking: opening a FIFO for reading must not wait for a writer */
  box->fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  struct stat st;
  const char *kind = NULL;
  int e = 0;
  if (box->fd < 0 || fstat(box->fd, &st) != 0) e = errno;
  else kind = not_regular(st.st_mode);
  if (e) {
    snprintf(why, sizeof why, "%s", strerror(e));
  } else if (kind && S_ISDIR(st.st_mode)) {
    snprintf(why, sizeof why, "is a directory");
  } else if (kind) {
    snprintf(why, sizeof why, "is %s, not a regular file (a device or a FIFO may never end)", kind);
  } else if ((uintmax_t)st.st_size > (uintmax_t)max) {
    snprintf(why, sizeof why, "is larger than %zu bytes (it has %jd), the most kluabench reads here", max,
             (intmax_t)st.st_size);
  } else {
    read_job job = {.fd = box->fd, .max = max, .hint = (size_t)st.st_size};
    lua_pushcfunction(L, read_all_protected);
    lua_pushlightuserdata(L, &job);
    int rc = lua_pcall(L, 1, 1, 0);
    close(box->fd);
    box->fd = -1;
    lua_remove(L, -2); /* the box; the bytes (or the error) stay */
    if (rc == LUA_OK && job.status == 0) return NULL;
    if (rc == LUA_ERRMEM)
      snprintf(why, sizeof why, "not enough memory to read its %jd bytes", (intmax_t)st.st_size);
    else if (rc != LUA_OK) /* "buffer too large" from luaL_prepbuffsize */
      snprintf(why, sizeof why, "cannot be read into memory: %s", lua_isstring(L, -1) ? lua_tostring(L, -1) : "?");
    else if (job.status > 0) snprintf(why, sizeof why, "%s", strerror(job.status));
    else snprintf(why, sizeof why, "is larger than %zu bytes (it grew while it was read), the most kluabench reads here", max);
    lua_pop(L, 1); /* the bytes read so far, or the error */
    return why;
  }
  if (box->fd >= 0) close(box->fd);
  box->fd = -1;
  lua_pop(L, 1);
  return why;
}

/* Declared in kb.h. */
lua_Integer kb_push_file_sha256(lua_State *L, const char *path) {
  if (!path || kb_read_file(L, path, KB_READ_MAX)) {
    lua_pushnil(L);
    return -1;
  }
  size_t len;
  const char *s = lua_tolstring(L, -1, &len);
  char hex[65];
  KB_TRY(L, kb_sha256_hex(s, len, hex));
  lua_pop(L, 1);
  lua_pushfstring(L, "sha256:%s", hex);
  return (lua_Integer)len;
}

/*** A whole regular file's bytes, at most max_bytes (default 512 MiB); never waits on a FIFO.
 *
 * The one bounded reader behind output.read_file, kb.cuda.load, the NVRTC cache and plugin
 * digests. Opened non-blocking and refused unless it is a regular file ("path: is a directory",
 * "path: is a FIFO, not a regular file (...)", "path: is a character device, ..."); a file larger
 * than max_bytes is refused by its size before any byte is read ("path: is larger than N bytes (it
 * has M), ..."); one that does not fit in the memory left is "path: not enough memory to read its
 * N bytes". A path holding a NUL byte is an argument error.
 *
 * @signature kb.read_file(path [, max_bytes]) -> bytes | nil, message
 * @section digest
 * @example
 *   local text, err = kb.read_file("README.md")
 */
/* kb.read_file(path [, max_bytes]) -> bytes | nil, "path: why". At most
 * max_bytes (default KB_READ_MAX, 512 MiB); regular files only. */
static int l_read_file(lua_State *L) {
  const char *path = kb_check_cstring(L, 1, "read_file", "path");
  lua_Integer max = luaL_optinteger(L, 2, (lua_Integer)KB_READ_MAX);
  luaL_argcheck(L, max >= 0, 2, "max_bytes must be >= 0");
  const char *why = kb_read_file(L, path, (size_t)max);
  if (!why) return 1;
  luaL_pushfail(L);
  lua_pushfstring(L, "%s: %s", path, why);
  return 2;
}

/* ---- an advisory lock on a directory ------------------------------------- */

#define LOCK_MT "kluabench.Lock"

/* Two processes writing the same --out both check, just before they write,
 * that nobody wrote it since they started (writer.destination). The check
 * and the write must not interleave, so the writer holds an flock on the
 * output's directory across both: a lock on the directory itself needs no
 * lock file beside the output and survives the rename that replaces the
 * file. It is advisory and per open file description: it orders
 * kluabench processes (and two opens in one process), nothing else. */
typedef struct {
  int fd;
} kb_lock;

static int lock_release(lua_State *L) {
  kb_lock *k = (kb_lock *)luaL_checkudata(L, 1, LOCK_MT);
  if (k->fd >= 0) close(k->fd); /* and the lock with it */
  k->fd = -1;
  return 0;
}

/*** Takes an exclusive advisory lock (flock) on a directory without waiting: a lock, or false and
 * "busy" when another holder (another process, or another lock in this one) has it. The lock goes
 * with lock:unlock(), at the end of a `<close>` variable or when it is collected.
 *
 * The writers of whole-file outputs take it on the output's directory around "has anyone written
 * it since I started? then write", so two processes finishing at once cannot both write the same
 * file. A path that cannot be opened is nil, message, errno.
 *
 * @signature kb.try_lock(dir) -> lock | false, "busy" | nil, message, errno
 * @section digest
 * @example
 *   local lock <close> = assert(kb.try_lock("."))
 *   print(kb.try_lock(".")) --> false	busy
 */
static int l_try_lock(lua_State *L) {
  const char *path = kb_check_cstring(L, 1, "try_lock", "dir");
  kb_lock *k = (kb_lock *)lua_newuserdatauv(L, sizeof *k, 0);
  k->fd = -1;
  luaL_setmetatable(L, LOCK_MT);
  /* O_NONBLOCK: a FIFO under that name must not hold the open */
  k->fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (k->fd < 0) {
    int e = errno;
    luaL_pushfail(L);
    lua_pushfstring(L, "%s: %s", path, strerror(e));
    lua_pushinteger(L, e);
    return 3;
  }
  for (;;) {
    if (flock(k->fd, LOCK_EX | LOCK_NB) == 0) return 1;
    if (errno == EINTR) continue;
    int e = errno;
    close(k->fd);
    k->fd = -1;
    if (e == EWOULDBLOCK) {
      lua_pushboolean(L, 0);
      lua_pushliteral(L, "busy");
      return 2;
    }
    luaL_pushfail(L);
    lua_pushfstring(L, "%s: cannot lock it: %s", path, strerror(e));
    lua_pushinteger(L, e);
    return 3;
  }
}

/*** Releases the lock (kb.try_lock); safe twice (also `__close` and `__gc`).
 *
 * @signature lock:unlock()
 * @section digest
 * @example
 *   local lock = assert(kb.try_lock("."))
 *   lock:unlock()
 */

static const luaL_Reg functions[] = {
    {"fsync", l_fsync}, {"stat", l_stat},   {"realpath", l_realpath}, {"readlink", l_readlink},
    {"chmod", l_chmod}, {"mkdir", l_mkdir}, {"read_file", l_read_file},
    {"try_lock", l_try_lock}, {"write_temp", l_write_temp}, {"append_file", l_append_file},
    {"remove_tree", l_remove_tree},
    {NULL, NULL},
};

/*** The longest path the system takes, in bytes with the final NUL (4096 on Linux); output.mkdir_p
 * and write_atomic refuse longer paths before creating anything.
 *
 * @signature kb.PATH_MAX -> integer
 * @section digest
 * @example
 *   print(kb.PATH_MAX)
 */
void kb_open_fs(lua_State *L) {
  luaL_newmetatable(L, FD_MT);
  lua_pushcfunction(L, fd_gc);
  lua_setfield(L, -2, "__gc");
  lua_pop(L, 1);
  luaL_newmetatable(L, LOCK_MT);
  lua_pushcfunction(L, lock_release);
  lua_setfield(L, -2, "__gc");
  lua_pushcfunction(L, lock_release);
  lua_setfield(L, -2, "__close");
  lua_newtable(L);
  lua_pushcfunction(L, lock_release);
  lua_setfield(L, -2, "unlock");
  lua_setfield(L, -2, "__index");
  lua_pop(L, 1);
  luaL_setfuncs(L, functions, 0);
  lua_pushinteger(L, PATH_MAX);
  lua_setfield(L, -2, "PATH_MAX");
}
