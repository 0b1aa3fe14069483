/* A file written whole or not at all: the bytes go to a temporary file
 * beside the target, which is fsynced and renamed over it, so that a reader
 * never sees half a file. tensor_io.c (save_npy, save_safetensors) and the
 * NVRTC cache (usercode/nvrtc.c) write through it.
 *
 * The temporary is created exclusively (O_CREAT | O_EXCL | O_NOFOLLOW)
 * under a random name, never a predictable one such as PATH.tmp-<pid>: a
 * link planted at a name the writer will use would otherwise be followed,
 * and whatever it points to truncated and overwritten. With O_EXCL, open
 * fails on any existing name, a link (even a dangling one) included, and
 * another name is drawn. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kb.h"

/* Names drawn before giving up: 48 random bits each, so a clash at all
 * means something is creating names beside the target on purpose. */
#define TEMP_TRIES 64

/* 12 random hex digits into out (13 bytes); 0, or -1 without randomness. */
static int random_suffix(char out[13]) {
  unsigned char r[6];
  size_t got = 0;
  while (got < sizeof r) {
    ssize_t n = getrandom(r + got, sizeof r - got, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return -1;
    got += (size_t)n;
  }
  for (size_t i = 0; i < sizeof r; i++) snprintf(out + 2 * i, 3, "%02x", r[i]);
  return 0;
}

/* Declared in kb.h. */
int kb_create_temp(char *tmp, size_t n, const char *target, mode_t mode) {
  for (int attempt = 0; attempt < TEMP_TRIES; attempt++) {
    char suffix[13];
    if (random_suffix(suffix) != 0) return -1;
    if (snprintf(tmp, n, "%s.tmp-%s", target, suffix) >= (int)n) {
      errno = ENAMETOOLONG;
      return -1;
    }
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
    if (fd >= 0 || errno != EEXIST) return fd;
  }
  errno = EEXIST;
  return -1;
}

static const char *kind_name(mode_t m) {
  if (S_ISDIR(m)) return "a directory";
  if (S_ISFIFO(m)) return "a FIFO";
  if (S_ISCHR(m)) return "a character device";
  if (S_ISBLK(m)) return "a block device";
  if (S_ISSOCK(m)) return "a socket";
  return "not a regular file";
}

/* Declared in kb.h. */
const char *kb_atomic_open(kb_atomic_file *w, const char *path, int follow, char *why, size_t n) {
  struct stat st;
  w->fd = -1;
  w->tmp[0] = '\0';
  if (strlen(path) >= sizeof w->target) return "path too long";
  snprintf(w->target, sizeof w->target, "%s", path);
  /* follow: a link at path is the user's, the file it names is replaced and the link stays;
   * otherwise the rename replaces the link itself */
  if (follow && lstat(path, &st) == 0 && S_ISLNK(st.st_mode)) {
    char real[PATH_MAX];
    if (realpath(path, real)) snprintf(w->target, sizeof w->target, "%s", real);
  }
  if ((follow ? stat(w->target, &st) : lstat(w->target, &st)) == 0 && !S_ISREG(st.st_mode) && !S_ISLNK(st.st_mode)) {
    snprintf(why, n, "%s, not a regular file (refusing to replace it)", kind_name(st.st_mode));
    return why;
  }
  w->fd = kb_create_temp(w->tmp, sizeof w->tmp, w->target, 0644);
  if (w->fd < 0) {
    w->tmp[0] = '\0';
    return strerror(errno); /* as opening the target itself would say: no such directory, permission denied */
  }
  return NULL;
}

/* Declared in kb.h. */
const char *kb_atomic_write(kb_atomic_file *w, const void *p, size_t n) {
  size_t done = 0;
  while (done < n) {
    ssize_t r = write(w->fd, (const char *)p + done, n - done);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return strerror(errno);
    done += (size_t)r;
  }
  return NULL;
}

/* Declared in kb.h. */
const char *kb_atomic_finish(kb_atomic_file *w, const char *err, int sync) {
  if (!err && sync && fsync(w->fd) != 0) err = strerror(errno);
  if (close(w->fd) != 0 && !err) err = strerror(errno);
  w->fd = -1;
  if (!err && rename(w->tmp, w->target) != 0) err = strerror(errno);
  if (err) unlink(w->tmp);
  return err;
}
