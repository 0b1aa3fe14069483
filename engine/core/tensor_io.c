/* Tensors in files: NumPy's .npy and safetensors, so that a reference made
 * elsewhere (PyTorch, NumPy) can be checked against, and a kluabench
 * output looked at there.
 *
 *   kb.load_npy(path [, device]) -> Tensor | nil, message
 *   kb.save_npy(path, t) -> true | nil, message
 *   kb.load_safetensors(path [, device]) -> {name = Tensor}, metadata | nil, message
 *   kb.save_safetensors(path, tensors [, metadata]) -> true | nil, message
 *
 * .npy (format 1.0, 2.0 and 3.0 read; 1.0 written): little- or big-endian
 * f2, f4 and f8, C order, at most 8 dimensions. NumPy has no bfloat16, and
 * the one that ml_dtypes adds is stored as raw 2-byte void ('<V2') that
 * cannot be told from other 2-byte data, so bf16 is refused both ways with
 * a message that says what to do instead (cast, or safetensors' BF16).
 * safetensors: an 8-byte little-endian header length, a JSON header of at
 * most 100 MB, then the data; dtypes BF16, F16, F32 and F64; the tensors'
 * data must tile the data area exactly (as the safetensors library checks).
 *
 * Reading is bounded by the file's size, known before anything is read:
 * only regular files are opened (a FIFO or a device would block or never
 * end; O_NONBLOCK keeps even the open from waiting), every length in a
 * header is checked against it, and a file whose sizes disagree with its
 * header is refused with a message naming the file. Writing goes through a
 * temporary file beside the target, created exclusively under a random name
 * (atomic_file.c), fsynced and renamed over it, so a reader never sees half
 * a file and a link planted at a temporary's name is never followed. Failures of the file or its content
 * return nil and "path: what is wrong"; wrong argument types raise. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "kb.h"

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "tensor_io.c assumes a little-endian host (tensor bytes are written as they are in memory)"
#endif

#define FD_MT "kluabench.tensor_io.fd"
#define NPY_MAX_HEADER (1u << 20)
#define ST_MAX_HEADER 100000000u /* the safetensors library's limit */

/* ---- files ------------------------------------------------------------------ */

/* An open descriptor owned by Lua (closed by __gc / __close if an error
 * unwinds past it), so that no path leaks one. */
typedef struct {
  int fd;
} fd_box;

static int fd_close(lua_State *L) {
  fd_box *b = luaL_checkudata(L, 1, FD_MT);
  if (b->fd >= 0) close(b->fd);
  b->fd = -1;
  return 0;
}

static fd_box *push_fd(lua_State *L) {
  fd_box *b = lua_newuserdatauv(L, sizeof *b, 0);
  b->fd = -1;
  luaL_setmetatable(L, FD_MT);
  return b;
}

/* nil, "path: <formatted message>" (returns 2 for the C function). */
static int failf(lua_State *L, const char *path, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  char msg[512];
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  luaL_pushfail(L);
  lua_pushfstring(L, "%s: %s", path, msg);
  return 2;
}

static const char *kind_name(mode_t m) {
  if (S_ISDIR(m)) return "a directory";
  if (S_ISFIFO(m)) return "a FIFO";
  if (S_ISCHR(m)) return "a character device";
  if (S_ISBLK(m)) return "a block device";
  if (S_ISSOCK(m)) return "a socket";
  return "not a regular file";
}

/* Opens path for reading into a new fd box (pushed); *size gets its size.
 * Returns NULL, or the reason it cannot be read (nothing pushed then). */
static const char *open_for_reading(lua_State *L, const char *path, uint64_t *size, char *why, size_t n) {
  int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) return strerror(errno);
  struct stat st;
  if (fstat(fd, &st) != 0) {
    snprintf(why, n, "%s", strerror(errno));
    close(fd);
    return why;
  }
  if (!S_ISREG(st.st_mode)) {
    snprintf(why, n, "%s, not a regular file", kind_name(st.st_mode));
    close(fd);
    return why;
  }
  push_fd(L)->fd = fd;
  *size = (uint64_t)st.st_size;
  return NULL;
}

/* Reads n bytes at offset; NULL or why not. */
static const char *read_at(int fd, void *buf, size_t n, uint64_t offset, char *why, size_t wn) {
  size_t done = 0;
  while (done < n) {
    ssize_t r = pread(fd, (char *)buf + done, n - done, (off_t)(offset + done));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return strerror(errno);
    if (r == 0) {
      snprintf(why, wn, "the file ends at byte %llu, before the %llu bytes its header promises (it changed while "
                        "being read?)",
               (unsigned long long)(offset + done), (unsigned long long)(offset + n));
      return why;
    }
    done += (size_t)r;
  }
  return NULL;
}

/* Reads the tensor's bytes at offset into it (through a host buffer on a
 * device); byte-swaps 2/4/8-byte elements when `swap`. */
static const char *read_tensor(lua_State *L, int fd, kb_tensor *t, uint64_t offset, int swap, char *why,
                               size_t wn) {
  const size_t nb = kb_tensor_nbytes(t);
  const int host = !kb_on_cuda(t->dev);
  void *buf = host ? t->data : lua_newuserdatauv(L, nb ? nb : 1, 0);
  const char *err = read_at(fd, buf, nb, offset, why, wn);
  if (err) return err;
  if (swap) {
    const size_t es = kb_dtype_size(t->dtype);
    unsigned char *p = buf;
    for (size_t i = 0; i < nb; i += es)
      for (size_t j = 0; j < es / 2; j++) {
        unsigned char c = p[i + j];
        p[i + j] = p[i + es - 1 - j];
        p[i + es - 1 - j] = c;
      }
  }
  if (!host) {
    err = t->dev->from_host(t->dev, t->data, buf, nb);
    lua_pop(L, 1);
  }
  return err;
}

/* ---- writing: through a temporary file (atomic_file.c) ------------------------ */

/* Writes each tensor's bytes (a host copy when on a device). */
static const char *write_tensor(lua_State *L, kb_atomic_file *w, const kb_tensor *t) {
  const size_t nb = kb_tensor_nbytes(t);
  if (!kb_on_cuda(t->dev)) return kb_atomic_write(w, t->data, nb);
  void *h = kb_tensor_host_copy(L, t);
  const char *err = kb_atomic_write(w, h, nb);
  lua_pop(L, 1);
  return err;
}

/* ---- .npy ------------------------------------------------------------------------ */

typedef struct {
  const char *s;
  size_t n, pos;
  char err[200];
} npy_parser;

static void npy_ws(npy_parser *p) {
  while (p->pos < p->n && (p->s[p->pos] == ' ' || p->s[p->pos] == '\t' || p->s[p->pos] == '\n' ||
                           p->s[p->pos] == '\r'))
    p->pos++;
}

static int npy_expect(npy_parser *p, char c) {
  npy_ws(p);
  if (p->pos < p->n && p->s[p->pos] == c) return p->pos++, 1;
  snprintf(p->err, sizeof p->err, "expected '%c' at byte %zu of the header", c, p->pos + 1);
  return 0;
}

/* A Python string literal without escapes ('...' or "...") into out. */
static int npy_string(npy_parser *p, char *out, size_t n) {
  npy_ws(p);
  char q = p->pos < p->n ? p->s[p->pos] : 0;
  if (q != '\'' && q != '"') {
    snprintf(p->err, sizeof p->err, "expected a quoted string at byte %zu of the header", p->pos + 1);
    return 0;
  }
  size_t start = ++p->pos;
  while (p->pos < p->n && p->s[p->pos] != q && p->s[p->pos] != '\\') p->pos++;
  if (p->pos >= p->n || p->s[p->pos] != q || p->pos - start >= n) {
    snprintf(p->err, sizeof p->err, "bad string at byte %zu of the header", start);
    return 0;
  }
  memcpy(out, p->s + start, p->pos - start);
  out[p->pos - start] = '\0';
  p->pos++;
  return 1;
}

/* A tuple of non-negative integers: (), (3,), (2, 3). */
static int npy_shape(npy_parser *p, int64_t *shape, int *ndim) {
  *ndim = 0;
  if (!npy_expect(p, '(')) return 0;
  for (;;) {
    npy_ws(p);
    if (p->pos < p->n && p->s[p->pos] == ')') return p->pos++, 1;
    if (*ndim == KB_MAX_DIMS) {
      snprintf(p->err, sizeof p->err, "more than %d dimensions", KB_MAX_DIMS);
      return 0;
    }
    int64_t v = 0;
    size_t start = p->pos;
    while (p->pos < p->n && p->s[p->pos] >= '0' && p->s[p->pos] <= '9') {
      if (v > (INT64_MAX - 9) / 10) {
        snprintf(p->err, sizeof p->err, "a dimension is too large");
        return 0;
      }
      v = v * 10 + (p->s[p->pos++] - '0');
    }
    if (p->pos == start) {
      snprintf(p->err, sizeof p->err, "expected a dimension at byte %zu of the header", p->pos + 1);
      return 0;
    }
    shape[(*ndim)++] = v;
    npy_ws(p);
    if (p->pos < p->n && p->s[p->pos] == ',') p->pos++;
    else if (!(p->pos < p->n && p->s[p->pos] == ')')) {
      snprintf(p->err, sizeof p->err, "expected ',' or ')' at byte %zu of the header", p->pos + 1);
      return 0;
    }
  }
}

/* The header dict: {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), } */
static int npy_header(npy_parser *p, char *descr, size_t dn, int *fortran, int64_t *shape, int *ndim) {
  int seen = 0; /* bits: descr, fortran_order, shape */
  if (!npy_expect(p, '{')) return 0;
  for (;;) {
    npy_ws(p);
    if (p->pos < p->n && p->s[p->pos] == '}') {
      p->pos++;
      break;
    }
    char key[32];
    if (!npy_string(p, key, sizeof key) || !npy_expect(p, ':')) return 0;
    npy_ws(p);
    if (strcmp(key, "descr") == 0) {
      if (!npy_string(p, descr, dn)) return 0;
      seen |= 1;
    } else if (strcmp(key, "fortran_order") == 0) {
      if (p->n - p->pos >= 4 && memcmp(p->s + p->pos, "True", 4) == 0) *fortran = 1, p->pos += 4;
      else if (p->n - p->pos >= 5 && memcmp(p->s + p->pos, "False", 5) == 0) *fortran = 0, p->pos += 5;
      else return snprintf(p->err, sizeof p->err, "fortran_order must be True or False"), 0;
      seen |= 2;
    } else if (strcmp(key, "shape") == 0) {
      if (!npy_shape(p, shape, ndim)) return 0;
      seen |= 4;
    } else {
      snprintf(p->err, sizeof p->err, "unknown header key '%s'", key);
      return 0;
    }
    npy_ws(p);
    if (p->pos < p->n && p->s[p->pos] == ',') p->pos++;
    else if (!(p->pos < p->n && p->s[p->pos] == '}')) {
      snprintf(p->err, sizeof p->err, "expected ',' or '}' at byte %zu of the header", p->pos + 1);
      return 0;
    }
  }
  npy_ws(p);
  if (seen != 7) {
    snprintf(p->err, sizeof p->err, "the header lacks '%s'",
             !(seen & 1) ? "descr" : !(seen & 2) ? "fortran_order" : "shape");
    return 0;
  }
  if (p->pos != p->n) {
    snprintf(p->err, sizeof p->err, "unexpected text after the header dict at byte %zu", p->pos + 1);
    return 0;
  }
  return 1;
}

/* '<f4' -> f32 (*swap 0), '>f8' -> f64 (*swap 1); -1 when not supported. */
static int npy_dtype(const char *descr, int *swap) {
  if (strlen(descr) != 3 || (descr[0] != '<' && descr[0] != '>' && descr[0] != '=') || descr[1] != 'f')
    return -1;
  *swap = descr[0] == '>';
  return descr[2] == '2' ? KB_F16 : descr[2] == '4' ? KB_F32 : descr[2] == '8' ? KB_F64 : -1;
}

/* numel * element size of shape, or -1 past 2^62 bytes. */
static int64_t bytes_of(const int64_t *shape, int ndim, kb_dtype dt) {
  int64_t b = (int64_t)kb_dtype_size(dt);
  int zero = 0;
  for (int i = 0; i < ndim; i++) {
    if (shape[i] == 0) zero = 1;
    else if (__builtin_mul_overflow(b, shape[i], &b) || b > ((int64_t)1 << 62)) return -1;
  }
  return zero ? 0 : b;
}

static void shape_text(const int64_t *shape, int ndim, char *buf, size_t n) {
  kb_tensor t;
  t.ndim = ndim;
  memcpy(t.shape, shape, sizeof(int64_t) * (size_t)ndim);
  kb_shape_str(&t, buf, n);
}

/* Closes the descriptor of the fd box at idx now (the results above it
 * stay), rather than whenever the collector gets to it. */
static int close_box(lua_State *L, int idx, int nresults) {
  fd_box *b = lua_touserdata(L, idx);
  if (b && b->fd >= 0) close(b->fd);
  if (b) b->fd = -1;
  return nresults;
}

static int load_npy_from(lua_State *L, const char *path, const kb_backend *dev, int fd, uint64_t size);

/*** Reads a .npy file (formats 1.0 to 3.0; f2, f4, f8 of either byte order; C order) into a tensor
 * on device.
 *
 * Refused, with a message naming the file: another dtype (integers, "<V2"), Fortran order, more
 * than 8 dimensions, a header over 1 MiB, data shorter or longer than the header's shape, anything
 * that is not a regular file. `numpy.save(path, x)` writes what it reads.
 *
 * @signature kb.load_npy(path [, device]) -> Tensor | nil, message
 * @section tensor_files
 * @example
 *   local path = os.tmpname()
 *   assert(kb.save_npy(path, kb.zeros({4}, "f64")))
 *   local t = assert(kb.load_npy(path, "cpu"))
 *   print(t)
 *   os.remove(path)
 */
static int l_load_npy(lua_State *L) {
  const char *path = kb_check_cstring(L, 1, "load_npy", "path");
  const kb_backend *dev = kb_check_device(L, 2);
  lua_settop(L, 2);
  char why[400];
  uint64_t size;
  const char *err = open_for_reading(L, path, &size, why, sizeof why);
  if (err) return failf(L, path, "%s", err);
  return close_box(L, 3, load_npy_from(L, path, dev, ((fd_box *)lua_touserdata(L, 3))->fd, size));
}

/* The .npy file open on fd (size bytes): pushes the tensor, or nil and a
 * message. */
static int load_npy_from(lua_State *L, const char *path, const kb_backend *dev, int fd, uint64_t size) {
  char why[400];
  const char *err;
  unsigned char pre[12];
  if (size < 10) return failf(L, path, "not an .npy file (%llu bytes, too short for the header)", (unsigned long long)size);
  if ((err = read_at(fd, pre, size < 12 ? 10 : 12, 0, why, sizeof why))) return failf(L, path, "%s", err);
  if (memcmp(pre, "\x93NUMPY", 6) != 0) return failf(L, path, "not an .npy file (no \\x93NUMPY magic)");
  const int major = pre[6];
  if (major < 1 || major > 3)
    return failf(L, path, ".npy format version %d.%d is not supported (1.0 to 3.0 are)", major, pre[7]);
  if (major > 1 && size < 12)
    return failf(L, path, "not an .npy file (%llu bytes, too short for a version %d header)",
                 (unsigned long long)size, major);
  const uint64_t hlen = major == 1 ? (uint64_t)pre[8] | (uint64_t)pre[9] << 8
                                   : (uint64_t)pre[8] | (uint64_t)pre[9] << 8 | (uint64_t)pre[10] << 16 |
                                         (uint64_t)pre[11] << 24;
  const uint64_t data_at = (major == 1 ? 10 : 12) + hlen;
  if (hlen > NPY_MAX_HEADER)
    return failf(L, path, "header of %llu bytes is larger than the %u this reader accepts", (unsigned long long)hlen,
                 NPY_MAX_HEADER);
  if (data_at > size)
    return failf(L, path, "header of %llu bytes runs past the end of the file (%llu bytes)", (unsigned long long)hlen,
                 (unsigned long long)size);
  char *text = lua_newuserdatauv(L, hlen + 1, 0);
  if ((err = read_at(fd, text, hlen, data_at - hlen, why, sizeof why))) return failf(L, path, "%s", err);
  text[hlen] = '\0';
  npy_parser p = {text, hlen, 0, ""};
  char descr[16];
  int fortran = 0, ndim = 0, swap = 0;
  int64_t shape[KB_MAX_DIMS];
  if (!npy_header(&p, descr, sizeof descr, &fortran, shape, &ndim)) return failf(L, path, "bad .npy header: %s", p.err);
  const int dt = npy_dtype(descr, &swap);
  if (dt < 0)
    return failf(L, path, "dtype '%s' is not supported (kluabench reads <f2, <f4 and <f8; .npy has no bfloat16: "
                          "ml_dtypes' is raw '<V2', so save bf16 as f32 or in a safetensors file)", descr);
  if (fortran)
    return failf(L, path, "Fortran-order arrays are not supported (save numpy.ascontiguousarray(x))");
  const int64_t nb = bytes_of(shape, ndim, (kb_dtype)dt);
  char st[160];
  shape_text(shape, ndim, st, sizeof st);
  if (nb < 0) return failf(L, path, "shape %s is too large", st);
  if ((uint64_t)nb != size - data_at)
    return failf(L, path, "has %llu bytes of data, shape %s %s needs %lld (truncated, or not what numpy.save wrote)",
                 (unsigned long long)(size - data_at), st, descr, (long long)nb);
  kb_tensor *t = kb_push_tensor(L, dev, (kb_dtype)dt, ndim, shape);
  if ((err = read_tensor(L, fd, t, data_at, swap, why, sizeof why))) return failf(L, path, "%s", err);
  return 1;
}

/*** Writes t as a NumPy .npy file (format 1.0, C order, little-endian <f2, <f4 or <f8).
 *
 * NumPy has no bfloat16 (ml_dtypes stores its bfloat16 as raw 2-byte void data, "<V2", which
 * cannot be told from other data), so a bf16 tensor is refused: save t:cast("f32"), or a
 * safetensors file (BF16). `numpy.load(path)` reads the file.
 *
 * @signature kb.save_npy(path, t) -> true | nil, message
 * @section tensor_files
 * @example
 *   local path = os.tmpname()
 *   assert(kb.save_npy(path, kb.randn({2, 3}, "f32", 1)))
 *   print(kb.load_npy(path).shape[2]) --> 3
 *   os.remove(path)
 */
static int l_save_npy(lua_State *L) {
  const char *path = kb_check_cstring(L, 1, "save_npy", "path");
  kb_tensor *t = kb_check_tensor(L, 2);
  if (t->dtype == KB_BF16)
    luaL_argerror(L, 2, ".npy has no bfloat16: save t:cast('f32'), or use kb.save_safetensors (BF16)");
  static const char *const descr[] = {"", "<f2", "<f4", "<f8"};
  char dims[KB_MAX_DIMS * 24 + 8], header[512];
  size_t off = 0;
  for (int i = 0; i < t->ndim; i++)
    off += (size_t)snprintf(dims + off, sizeof dims - off, i ? ", %lld" : "%lld", (long long)t->shape[i]);
  if (t->ndim == 1) off += (size_t)snprintf(dims + off, sizeof dims - off, ",");
  dims[off] = '\0';
  /* magic (6) + version (2) + length (2) + dict, padded with blanks and a
   * newline to a multiple of 64 bytes, as numpy.save does */
  int n = snprintf(header + 10, sizeof header - 10, "{'descr': '%s', 'fortran_order': False, 'shape': (%s), }",
                   descr[t->dtype], dims);
  size_t total = (10 + (size_t)n + 1 + 63) / 64 * 64;
  memset(header + 10 + n, ' ', total - 10 - (size_t)n - 1);
  header[total - 1] = '\n';
  memcpy(header, "\x93NUMPY\x01\x00", 8);
  header[8] = (char)((total - 10) & 0xff);
  header[9] = (char)((total - 10) >> 8);
  kb_atomic_file w;
  char why[400];
  const char *err = kb_atomic_open(&w, path, 1, why, sizeof why);
  if (err) return failf(L, path, "%s", err);
  err = kb_atomic_write(&w, header, total);
  if (!err) err = write_tensor(L, &w, t);
  if ((err = kb_atomic_finish(&w, err, 1))) return failf(L, path, "%s", err);
  lua_pushboolean(L, 1);
  return 1;
}

/* ---- safetensors --------------------------------------------------------------- */

static const char *const ST_DTYPES[KB_NDTYPES] = {"BF16", "F16", "F32", "F64"};

/* One tensor of a header, before its data is read. */
typedef struct {
  int name_ref; /* stack index of the name string */
  kb_dtype dtype;
  int ndim;
  int64_t shape[KB_MAX_DIMS];
  uint64_t begin, end;
} st_entry;

static int cmp_entries(const void *x, const void *y) {
  const st_entry *a = x, *b = y;
  return a->begin < b->begin ? -1 : a->begin > b->begin ? 1 : a->end < b->end ? -1 : a->end > b->end;
}

/* An integer field value at the top of the stack in [0, max]. */
static int st_uint(lua_State *L, uint64_t max, uint64_t *out) {
  int ok;
  lua_Integer v = lua_tointegerx(L, -1, &ok);
  if (!ok || lua_type(L, -1) != LUA_TNUMBER || v < 0 || (uint64_t)v > max) return 0;
  *out = (uint64_t)v;
  return 1;
}

/* Checks header entry `key` (the table at idx) into e; NULL or why not. */
static const char *st_entry_of(lua_State *L, int idx, const char *key, st_entry *e, uint64_t data_size, char *why,
                               size_t n) {
  lua_pushnil(L);
  while (lua_next(L, idx)) {
    const char *k = lua_type(L, -2) == LUA_TSTRING ? lua_tostring(L, -2) : "";
    if (strcmp(k, "dtype") && strcmp(k, "shape") && strcmp(k, "data_offsets")) {
      snprintf(why, n, "tensor '%s' has an unknown field '%s' (expected dtype, shape, data_offsets)", key, k);
      lua_pop(L, 2);
      return why;
    }
    lua_pop(L, 1);
  }
  if (lua_getfield(L, idx, "dtype") != LUA_TSTRING) {
    snprintf(why, n, "tensor '%s' has no dtype string", key);
    return why;
  }
  int dt = -1;
  for (int i = 0; i < KB_NDTYPES; i++)
    if (strcmp(lua_tostring(L, -1), ST_DTYPES[i]) == 0) dt = i;
  if (dt < 0) {
    snprintf(why, n, "tensor '%s' has dtype %.40s (kluabench reads BF16, F16, F32 and F64)", key, lua_tostring(L, -1));
    return why;
  }
  lua_pop(L, 1);
  e->dtype = (kb_dtype)dt;
  if (lua_getfield(L, idx, "shape") != LUA_TTABLE || luaL_len(L, -1) > KB_MAX_DIMS) {
    snprintf(why, n, "tensor '%s' has no shape list of at most %d dimensions", key, KB_MAX_DIMS);
    return why;
  }
  e->ndim = (int)luaL_len(L, -1);
  for (int i = 0; i < e->ndim; i++) {
    uint64_t d;
    lua_geti(L, -1, i + 1);
    if (!st_uint(L, (uint64_t)1 << 62, &d)) {
      snprintf(why, n, "tensor '%s': shape[%d] is not a non-negative integer", key, i + 1);
      return why;
    }
    e->shape[i] = (int64_t)d;
    lua_pop(L, 1);
  }
  lua_pop(L, 1);
  if (lua_getfield(L, idx, "data_offsets") != LUA_TTABLE || luaL_len(L, -1) != 2) {
    snprintf(why, n, "tensor '%s' has no data_offsets [begin, end]", key);
    return why;
  }
  lua_geti(L, -1, 1);
  lua_geti(L, -2, 2);
  int ok = 0;
  if (lua_type(L, -2) == LUA_TNUMBER && lua_type(L, -1) == LUA_TNUMBER) {
    lua_pushvalue(L, -2);
    ok = st_uint(L, data_size, &e->begin);
    lua_pop(L, 1);
    ok = ok && st_uint(L, data_size, &e->end) && e->begin <= e->end;
  }
  lua_pop(L, 3);
  if (!ok) {
    snprintf(why, n, "tensor '%s': data_offsets must be integers 0 <= begin <= end <= %llu (the data's size)", key,
             (unsigned long long)data_size);
    return why;
  }
  const int64_t nb = bytes_of(e->shape, e->ndim, e->dtype);
  if (nb < 0 || (uint64_t)nb != e->end - e->begin) {
    char st[160];
    shape_text(e->shape, e->ndim, st, sizeof st);
    snprintf(why, n, "tensor '%s': data_offsets [%llu, %llu] hold %llu bytes, shape %s %s needs %lld", key,
             (unsigned long long)e->begin, (unsigned long long)e->end, (unsigned long long)(e->end - e->begin), st,
             ST_DTYPES[e->dtype], (long long)nb);
    return why;
  }
  return NULL;
}

/* Whether the string at idx is "__metadata__" itself (compared with its
 * length: "__metadata__\0x" is a tensor's name, not the metadata). */
static int is_metadata_key(lua_State *L, int idx) {
  size_t n;
  const char *k = lua_tolstring(L, idx, &n);
  return n == 12 && memcmp(k, "__metadata__", 12) == 0;
}

/* Whether the decoded value at idx is a JSON object: a table with string
 * keys only (lua-cjson makes an array a table with keys 1..n). An empty
 * array reads as an empty table too; the header itself is checked to open
 * with '{' (header_is_object), and an empty array elsewhere has no field a
 * tensor needs, so only an empty __metadata__ written as [] passes. */
static int is_json_object(lua_State *L, int idx) {
  if (!lua_istable(L, idx)) return 0;
  idx = lua_absindex(L, idx);
  lua_pushnil(L);
  while (lua_next(L, idx)) {
    lua_pop(L, 1);
    if (lua_type(L, -1) != LUA_TSTRING) {
      lua_pop(L, 1);
      return 0;
    }
  }
  return 1;
}

/* Whether the JSON text's first byte after whitespace opens an object. */
static int header_is_object(const char *text, size_t n) {
  size_t i = 0;
  while (i < n && (text[i] == ' ' || text[i] == '\t' || text[i] == '\n' || text[i] == '\r')) i++;
  return i < n && text[i] == '{';
}

/* The __metadata__ table at idx: string keys and values only. */
static const char *st_check_metadata(lua_State *L, int idx, char *why, size_t n) {
  if (!is_json_object(L, idx)) return "__metadata__ is not a JSON object";
  lua_pushnil(L);
  while (lua_next(L, idx)) {
    if (lua_type(L, -2) != LUA_TSTRING || lua_type(L, -1) != LUA_TSTRING) {
      snprintf(why, n, "__metadata__ must map strings to strings (key '%.60s')",
               lua_type(L, -2) == LUA_TSTRING ? lua_tostring(L, -2) : "?");
      lua_pop(L, 2);
      return why;
    }
    lua_pop(L, 1);
  }
  return NULL;
}

static int load_safetensors_from(lua_State *L, const char *path, const kb_backend *dev, int fd, uint64_t size);

/*** Reads every tensor of a safetensors file onto device, and its __metadata__ (a table of
 * strings).
 *
 * Dtypes BF16, F16, F32 and F64 (another dtype is refused, naming the tensor). The header is at
 * most 100 MB, as the safetensors library allows, and the tensors' data offsets must tile the data
 * exactly: no gap, no overlap, nothing after; a header that says otherwise is refused.
 *
 * @signature kb.load_safetensors(path [, device]) -> {name = Tensor}, metadata | nil, message
 * @section tensor_files
 * @example
 *   local path = os.tmpname()
 *   assert(kb.save_safetensors(path, {w = kb.randn({3, 3})}))
 *   local t = assert(kb.load_safetensors(path))
 *   print(t.w.shape[1])
 *   os.remove(path)
 */
/* upvalue 1: a lua-cjson decode function (kb_open_tensor_io) */
static int l_load_safetensors(lua_State *L) {
  const char *path = kb_check_cstring(L, 1, "load_safetensors", "path");
  const kb_backend *dev = kb_check_device(L, 2);
  lua_settop(L, 2);
  char why[600];
  uint64_t size;
  const char *err = open_for_reading(L, path, &size, why, sizeof why);
  if (err) return failf(L, path, "%s", err);
  return close_box(L, 3, load_safetensors_from(L, path, dev, ((fd_box *)lua_touserdata(L, 3))->fd, size));
}

/* The safetensors file open on fd (size bytes): pushes the tensors and the
 * metadata, or nil and a message. Runs in l_load_safetensors' frame (its
 * upvalue is lua-cjson's decode). */
static int load_safetensors_from(lua_State *L, const char *path, const kb_backend *dev, int fd, uint64_t size) {
  char why[600];
  const char *err;
  unsigned char len8[8];
  if (size < 8) return failf(L, path, "not a safetensors file (%llu bytes, too short)", (unsigned long long)size);
  if ((err = read_at(fd, len8, 8, 0, why, sizeof why))) return failf(L, path, "%s", err);
  uint64_t hlen = 0;
  for (int i = 7; i >= 0; i--) hlen = hlen << 8 | len8[i];
  if (hlen > ST_MAX_HEADER)
    return failf(L, path, "header length %llu is larger than the %u bytes safetensors allows (not a safetensors file?)",
                 (unsigned long long)hlen, ST_MAX_HEADER);
  if (8 + hlen > size)
    return failf(L, path, "header of %llu bytes runs past the end of the file (%llu bytes)", (unsigned long long)hlen,
                 (unsigned long long)size);
  const uint64_t data_at = 8 + hlen, data_size = size - data_at;
  char *text = lua_newuserdatauv(L, hlen ? hlen : 1, 0);
  if ((err = read_at(fd, text, hlen, 8, why, sizeof why))) return failf(L, path, "%s", err);
  lua_pushvalue(L, lua_upvalueindex(1));
  lua_pushlstring(L, text, hlen);
  if (lua_pcall(L, 1, 1, 0) != LUA_OK)
    return failf(L, path, "safetensors header is not valid JSON (%s)", lua_tostring(L, -1));
  const int header = lua_gettop(L);
  if (!header_is_object(text, hlen) || !is_json_object(L, header))
    return failf(L, path, "safetensors header is not a JSON object");
  /* entries: one per tensor, in a userdata array; names stay on the stack */
  size_t count = 0;
  lua_pushnil(L);
  while (lua_next(L, header)) count++, lua_pop(L, 1);
  st_entry *es = lua_newuserdatauv(L, (count ? count : 1) * sizeof *es, 0);
  luaL_checkstack(L, (int)count + 8, "too many tensors in a safetensors file");
  size_t k = 0;
  int meta = 0;
  lua_pushnil(L);
  while (lua_next(L, header)) {
    if (lua_type(L, -2) != LUA_TSTRING) return failf(L, path, "safetensors header has a non-string key");
    const char *key = lua_tostring(L, -2);
    if (is_metadata_key(L, -2)) {
      if ((err = st_check_metadata(L, lua_gettop(L), why, sizeof why))) return failf(L, path, "%s", err);
      meta = lua_gettop(L);
      lua_pushvalue(L, -2); /* the key again, for lua_next; the metadata stays */
      continue;
    }
    if (!is_json_object(L, -1)) return failf(L, path, "tensor '%s' is not a JSON object", key);
    if ((err = st_entry_of(L, lua_gettop(L), key, &es[k], data_size, why, sizeof why))) return failf(L, path, "%s", err);
    lua_pop(L, 1);
    lua_pushvalue(L, -1);
    es[k].name_ref = lua_gettop(L) - 1; /* the copy below the key stays */
    lua_insert(L, -2);
    k++;
  }
  /* the data must be tiled exactly: no gap, no overlap, nothing after */
  qsort(es, k, sizeof *es, cmp_entries);
  uint64_t at = 0;
  for (size_t i = 0; i < k; i++) {
    if (es[i].begin != at)
      return failf(L, path, "tensor '%s' starts at data byte %llu, expected %llu (a gap or an overlap)",
                   lua_tostring(L, es[i].name_ref), (unsigned long long)es[i].begin, (unsigned long long)at);
    at = es[i].end;
  }
  if (at != data_size)
    return failf(L, path, "the tensors cover %llu of the %llu data bytes after the header", (unsigned long long)at,
                 (unsigned long long)data_size);
  lua_createtable(L, 0, (int)k);
  const int result = lua_gettop(L);
  for (size_t i = 0; i < k; i++) {
    kb_tensor *t = kb_push_tensor(L, dev, es[i].dtype, es[i].ndim, es[i].shape);
    if ((err = read_tensor(L, fd, t, data_at + es[i].begin, 0, why, sizeof why))) return failf(L, path, "%s", err);
    lua_pushvalue(L, es[i].name_ref);
    lua_insert(L, -2);
    lua_rawset(L, result);
  }
  lua_newtable(L);
  if (meta) {
    lua_pushnil(L);
    while (lua_next(L, meta)) {
      lua_pushvalue(L, -2);
      lua_insert(L, -2);
      lua_rawset(L, -4);
    }
  }
  return 2;
}

/*** Writes named tensors ({name = Tensor}) as a safetensors file, with optional string metadata.
 *
 * Tensors are stored in name order, dtypes BF16, F16, F32 and F64; the JSON header is padded to 8
 * bytes. `safetensors.torch.load_file(path)` reads the file.
 *
 * @signature kb.save_safetensors(path, tensors [, metadata]) -> true | nil, message
 * @section tensor_files
 * @example
 *   local path = os.tmpname()
 *   assert(kb.save_safetensors(path, {q = kb.randn({2, 4}, "bf16", 1), k = kb.zeros({2})}, {who = "me"}))
 *   local t, meta = kb.load_safetensors(path)
 *   print(t.q, meta.who)
 *   os.remove(path)
 */
/* upvalue 1: kb.jcs.encode */
static int l_save_safetensors(lua_State *L) {
  const char *path = kb_check_cstring(L, 1, "save_safetensors", "path");
  luaL_checktype(L, 2, LUA_TTABLE);
  if (!lua_isnoneornil(L, 3)) luaL_checktype(L, 3, LUA_TTABLE);
  lua_settop(L, 3);
  /* the names, checked and sorted */
  lua_newtable(L);
  const int names = lua_gettop(L);
  lua_Integer count = 0;
  lua_pushnil(L);
  while (lua_next(L, 2)) {
    if (lua_type(L, -2) != LUA_TSTRING)
      luaL_argerror(L, 2, lua_pushfstring(L, "tensor names must be strings, got a %s key", luaL_typename(L, -2)));
    if (is_metadata_key(L, -2))
      luaL_argerror(L, 2, "'__metadata__' is not a tensor name (pass metadata as argument #3)");
    if (!luaL_testudata(L, -1, KB_TENSOR_MT))
      luaL_argerror(L, 2, lua_pushfstring(L, "tensors['%s'] is a %s, not a kluabench.Tensor", lua_tostring(L, -2),
                                          luaL_typename(L, -1)));
    if (((kb_tensor *)lua_touserdata(L, -1))->freed)
      luaL_argerror(L, 2, lua_pushfstring(L, "tensors['%s'] has been freed", lua_tostring(L, -2)));
    lua_pop(L, 1);
    lua_pushvalue(L, -1);
    lua_rawseti(L, names, ++count);
  }
  lua_getglobal(L, "table");
  lua_getfield(L, -1, "sort");
  lua_pushvalue(L, names);
  lua_call(L, 1, 0);
  lua_pop(L, 1);
  if (!lua_isnil(L, 3)) {
    lua_pushnil(L);
    while (lua_next(L, 3)) {
      if (lua_type(L, -2) != LUA_TSTRING || lua_type(L, -1) != LUA_TSTRING)
        luaL_argerror(L, 3, "metadata must map strings to strings");
      lua_pop(L, 1);
    }
  }
  /* the header: built from the start of the stack's free part with only
   * balanced pushes between buffer operations (luaL_Buffer's rule) */
  int has_meta = 0;
  if (!lua_isnil(L, 3)) {
    lua_pushnil(L);
    has_meta = lua_next(L, 3);
    if (has_meta) lua_pop(L, 2);
  }
  luaL_Buffer b;
  luaL_buffinit(L, &b);
  luaL_addchar(&b, '{');
  if (has_meta) { /* (an empty table would encode as a JSON array) */
    luaL_addstring(&b, "\"__metadata__\":");
    lua_pushvalue(L, lua_upvalueindex(1));
    lua_pushvalue(L, 3);
    lua_call(L, 1, 1); /* jcs.encode: keys sorted, strings escaped */
    luaL_addvalue(&b);
  }
  uint64_t offset = 0;
  for (lua_Integer i = 1; i <= count; i++) {
    lua_rawgeti(L, names, i);
    lua_gettable(L, 2);
    const kb_tensor *t = lua_touserdata(L, -1);
    lua_pop(L, 1);
    if (has_meta || i > 1) luaL_addchar(&b, ',');
    lua_pushvalue(L, lua_upvalueindex(1));
    lua_rawgeti(L, names, i);
    lua_call(L, 1, 1); /* the name as a JSON string (UTF-8 checked) */
    luaL_addvalue(&b);
    char part[KB_MAX_DIMS * 24 + 128];
    size_t off = (size_t)snprintf(part, sizeof part, ":{\"dtype\":\"%s\",\"shape\":[", ST_DTYPES[t->dtype]);
    for (int d = 0; d < t->ndim; d++)
      off += (size_t)snprintf(part + off, sizeof part - off, d ? ",%lld" : "%lld", (long long)t->shape[d]);
    const uint64_t end = offset + kb_tensor_nbytes(t);
    snprintf(part + off, sizeof part - off, "],\"data_offsets\":[%llu,%llu]}", (unsigned long long)offset,
             (unsigned long long)end);
    luaL_addstring(&b, part);
    offset = end;
  }
  luaL_addchar(&b, '}');
  luaL_pushresult(&b);
  size_t hlen;
  lua_tolstring(L, -1, &hlen);
  const size_t padded = (hlen + 7) / 8 * 8; /* the data starts 8-byte aligned */
  for (size_t i = hlen; i < padded; i++) lua_pushliteral(L, " ");
  lua_concat(L, (int)(padded - hlen) + 1);
  const char *text = lua_tolstring(L, -1, &hlen);
  unsigned char len8[8];
  for (int i = 0; i < 8; i++) len8[i] = (unsigned char)((uint64_t)hlen >> (8 * i));
  kb_atomic_file w;
  char why[400];
  const char *err = kb_atomic_open(&w, path, 1, why, sizeof why);
  if (err) return failf(L, path, "%s", err);
  err = kb_atomic_write(&w, len8, 8);
  if (!err) err = kb_atomic_write(&w, text, hlen);
  for (lua_Integer i = 1; i <= count && !err; i++) {
    lua_rawgeti(L, names, i);
    lua_gettable(L, 2);
    err = write_tensor(L, &w, lua_touserdata(L, -1));
    lua_pop(L, 1);
  }
  if ((err = kb_atomic_finish(&w, err, 1))) return failf(L, path, "%s", err);
  lua_pushboolean(L, 1);
  return 1;
}

/* Pushes the decode function of a lua-cjson instance of its own (linked
 * statically; engine/host/main.c preloads the module as "cjson"), set as
 * the stdlib's json.decode sets its own: no NaN, Infinity or hex numbers,
 * nesting capped at kb.jcs.MAX_DEPTH. */
static void push_json_decoder(lua_State *L) {
  lua_pushcfunction(L, luaopen_cjson);
  lua_call(L, 0, 1);
  lua_getfield(L, -1, "decode_invalid_numbers");
  lua_pushboolean(L, 0);
  lua_call(L, 1, 0);
  lua_getfield(L, -1, "decode_max_depth");
  lua_pushinteger(L, KB_JSON_MAX_DEPTH);
  lua_call(L, 1, 0);
  lua_getfield(L, -1, "decode");
  lua_remove(L, -2);
}

void kb_open_tensor_io(lua_State *L) {
  luaL_newmetatable(L, FD_MT);
  lua_pushcfunction(L, fd_close);
  lua_setfield(L, -2, "__gc");
  lua_pushcfunction(L, fd_close);
  lua_setfield(L, -2, "__close");
  lua_pop(L, 1);
  lua_pushcfunction(L, l_load_npy);
  lua_setfield(L, -2, "load_npy");
  lua_pushcfunction(L, l_save_npy);
  lua_setfield(L, -2, "save_npy");
  push_json_decoder(L);
  lua_pushcclosure(L, l_load_safetensors, 1);
  lua_setfield(L, -2, "load_safetensors");
  lua_getfield(L, -1, "jcs"); /* kb_open_jcs ran before */
  lua_getfield(L, -1, "encode");
  lua_pushcclosure(L, l_save_safetensors, 1);
  lua_setfield(L, -3, "save_safetensors");
  lua_pop(L, 1);
}
