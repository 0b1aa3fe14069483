/* Tensors across the Python boundary without a copy, through DLPack (python.h).
 *
 * To Python: a tensor passed to a call is lent for that call. Python gets the glue's Tensor, whose
 * __dlpack__ exports a DLManagedTensor over the tensor's memory (numpy.from_dlpack, torch.from_dlpack)
 * and, on cpu, whose __array_interface__ gives NumPy a writable view. A lend counts what may still
 * touch the memory: the Tensor object itself and every export not yet deleted. When the call returns
 * the lend closes (no new view); if that count is not 0, the function kept a view: the call is an
 * error, and the tensor stays referenced, with free() refused (kb_tensor.views), until Python drops
 * the view and a later call of kb.python sweeps the lend away. Deleters may run on any thread, with
 * or without the GIL (torch frees tensors on its autograd threads): they only decrement an atomic
 * count in memory the lend owns, which the main thread frees once the count is 0.
 *
 * From Python: a result with __dlpack__ is read from its "dltensor" capsule: the tensor adopts the
 * DLManagedTensor (and keeps the Python object), and releases both, with the GIL, when it is freed.
 * Only what a kluabench tensor can be is taken: cpu or the engine's CUDA devices, bf16, f16, f32 or
 * f64, row-major and contiguous, 16-byte aligned.
 *
 * The DLPack structures are declared here by hand: DLPack's legacy ABI (dlpack.h v0.5 to v1.0,
 * DLManagedTensor and the "dltensor" capsule), which every producer still gives a consumer that asks
 * for no version, and every consumer still takes. */
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "python.h"

/* ---- DLPack (dlpack.h, legacy ABI) ------------------------------------------------------------- */
enum { KB_DL_CPU = 1, KB_DL_CUDA = 2 };
enum { KB_DL_INT = 0, KB_DL_UINT = 1, KB_DL_FLOAT = 2, KB_DL_HANDLE = 3, KB_DL_BFLOAT = 4, KB_DL_COMPLEX = 5,
       KB_DL_BOOL = 6 };
typedef struct {
  int32_t device_type;
  int32_t device_id;
} DLDevice;
typedef struct {
  uint8_t code;
  uint8_t bits;
  uint16_t lanes;
} DLDataType;
typedef struct {
  void *data;
  DLDevice device;
  int32_t ndim;
  DLDataType dtype;
  int64_t *shape;
  int64_t *strides; /* NULL: compact row-major */
  uint64_t byte_offset;
} DLTensor;
typedef struct DLManagedTensor {
  DLTensor dl_tensor;
  void *manager_ctx;
  void (*deleter)(struct DLManagedTensor *self);
} DLManagedTensor;

#define LEND_CAPSULE "kluabench.lend"

/* ---- lends --------------------------------------------------------------------------------------- */

struct kb_py_lend {
  atomic_int live; /* the Tensor object (while it exists) + exports not deleted yet */
  int wrapper;     /* 1 while the glue's Tensor exists (changed with the GIL held) */
  int open;        /* 1 during the call: views are given */
  int ref;         /* registry reference to the tensor */
  kb_tensor *t;
  const kb_backend *dev;
  void *data;
  size_t bytes;
  kb_dtype dtype;
  int ndim;
  int64_t shape[KB_MAX_DIMS], strides[KB_MAX_DIMS];
  DLDevice device;
  kb_py_lend *next; /* on the list of kept lends */
};

/* Lends closed while Python still held a view, waiting for it to drop them (main thread only). */
static kb_py_lend *g_kept;

typedef struct {
  DLManagedTensor mt;
  kb_py_lend *lend;
} lend_export;

static void export_deleter(DLManagedTensor *mt) {
  kb_py_lend *lend = ((lend_export *)mt)->lend;
  free(mt);
  atomic_fetch_sub(&lend->live, 1); /* the lend may be freed from here on: not touched again */
}

/* A capsule's destructor: a "dltensor" capsule nobody consumed still owns its tensor (DLPack's rule);
 * a consumed one was renamed "used_dltensor". */
static void dltensor_capsule_free(PyObject *cap) {
  if (kb_py.PyCapsule_IsValid(cap, "used_dltensor")) return;
  PyObject *type, *value, *tb;
  kb_py.PyErr_Fetch(&type, &value, &tb); /* an exception may be on its way: keep it */
  DLManagedTensor *mt = (DLManagedTensor *)kb_py.PyCapsule_GetPointer(cap, "dltensor");
  if (mt && mt->deleter) mt->deleter(mt);
  if (!mt) kb_py.PyErr_WriteUnraisable(cap);
  kb_py.PyErr_Restore(type, value, tb);
}

static kb_py_lend *lend_of(PyObject *args) {
  PyObject *token = kb_py.PyTuple_GetItem(args, 0);
  return token ? (kb_py_lend *)kb_py.PyCapsule_GetPointer(token, LEND_CAPSULE) : NULL;
}

static PyObject *closed(void) {
  kb_py.PyErr_SetString(kb_py.buffer_error, "this kluabench tensor was lent for a call that has returned: a view "
                                            "of it is valid only during the call (copy what you keep)");
  return NULL;
}

/* _dlpack(token) -> a "dltensor" capsule over the lent tensor */
static PyObject *py_dlpack(PyObject *self, PyObject *args) {
  kb_py_lend *lend = lend_of(args);
  if (!lend) return NULL;
  if (!lend->open) return closed();
  lend_export *e = calloc(1, sizeof *e);
  if (!e) {
    kb_py.PyErr_SetString(kb_py.runtime_error, "kluabench: out of memory for a DLPack export");
    return NULL;
  }
  DLTensor *d = &e->mt.dl_tensor;
  d->data = lend->data;
  d->device = lend->device;
  d->ndim = lend->ndim;
  static const DLDataType TYPES[KB_NDTYPES] = {{KB_DL_BFLOAT, 16, 1}, {KB_DL_FLOAT, 16, 1}, {KB_DL_FLOAT, 32, 1},
                                               {KB_DL_FLOAT, 64, 1}};
  d->dtype = TYPES[lend->dtype];
  d->shape = lend->shape; /* the lend outlives every export: its count holds it */
  d->strides = lend->strides;
  e->mt.deleter = export_deleter;
  e->lend = lend;
  atomic_fetch_add(&lend->live, 1);
  PyObject *cap = kb_py.PyCapsule_New(&e->mt, "dltensor", dltensor_capsule_free);
  if (!cap) export_deleter(&e->mt);
  return cap;
}

/* _array_data(token) -> the address of a lent cpu tensor (for __array_interface__) */
static PyObject *py_array_data(PyObject *self, PyObject *args) {
  kb_py_lend *lend = lend_of(args);
  if (!lend) return NULL;
  if (!lend->open) return closed();
  return kb_py.PyLong_FromVoidPtr(lend->data);
}

/* _release(token): the glue's Tensor is gone (its __del__) */
static PyObject *py_release(PyObject *self, PyObject *args) {
  kb_py_lend *lend = lend_of(args);
  if (!lend) return NULL;
  if (lend->wrapper) {
    lend->wrapper = 0;
    atomic_fetch_sub(&lend->live, 1);
  }
  kb_py.Py_IncRef(kb_py.none);
  return kb_py.none;
}

/* _sync(token): waits for the engine's stream (a consumer reads the tensor on another one) */
static PyObject *py_sync(PyObject *self, PyObject *args) {
  kb_py_lend *lend = lend_of(args);
  if (!lend) return NULL;
  const char *err = lend->dev->synchronize(lend->dev);
  if (err) {
    kb_py.PyErr_SetString(kb_py.runtime_error, err);
    return NULL;
  }
  kb_py.Py_IncRef(kb_py.none);
  return kb_py.none;
}

PyMethodDef kb_py_dlpack_methods[] = {
    {"_dlpack", py_dlpack, KB_PY_METH_VARARGS, "a DLPack capsule over a lent tensor"},
    {"_array_data", py_array_data, KB_PY_METH_VARARGS, "the address of a lent cpu tensor"},
    {"_release", py_release, KB_PY_METH_VARARGS, "the Tensor over a lend is gone"},
    {"_sync", py_sync, KB_PY_METH_VARARGS, "waits for the engine's stream"},
    {NULL, NULL, 0, NULL},
};

/* The glue's Tensor(token, (device type, id), shape, dtype) over a lend; NULL with an exception set. */
static PyObject *make_wrapper(kb_py_lend *lend) {
  PyObject *cls = kb_py_glue("Tensor");
  PyObject *args = cls ? kb_py.PyTuple_New(4) : NULL;
  PyObject *device = args ? kb_py.PyTuple_New(2) : NULL;
  PyObject *shape = device ? kb_py.PyTuple_New(lend->ndim) : NULL;
  if (!shape) {
    if (device) kb_py.Py_DecRef(device);
    if (args) kb_py.Py_DecRef(args);
    return NULL;
  }
  kb_py.PyTuple_SetItem(device, 0, kb_py.PyLong_FromLongLong(lend->device.device_type));
  kb_py.PyTuple_SetItem(device, 1, kb_py.PyLong_FromLongLong(lend->device.device_id));
  for (int i = 0; i < lend->ndim; i++) kb_py.PyTuple_SetItem(shape, i, kb_py.PyLong_FromLongLong(lend->shape[i]));
  const char *dtype = kb_dtype_name(lend->dtype);
  kb_py.PyTuple_SetItem(args, 0, kb_py.PyCapsule_New(lend, LEND_CAPSULE, NULL));
  kb_py.PyTuple_SetItem(args, 1, device);
  kb_py.PyTuple_SetItem(args, 2, shape);
  kb_py.PyTuple_SetItem(args, 3, kb_py.PyUnicode_FromStringAndSize(dtype, (Py_ssize_t)strlen(dtype)));
  PyObject *w = kb_py.PyErr_Occurred() ? NULL : kb_py.PyObject_CallObject(cls, args);
  kb_py.Py_DecRef(args);
  return w;
}

kb_py_lend *kb_py_lend_open(lua_State *L, int idx, PyObject **out) {
  kb_tensor *t = (kb_tensor *)lua_touserdata(L, idx);
  kb_py_lend *lend = calloc(1, sizeof *lend);
  if (!lend) luaL_error(L, "kb.python: out of memory");
  lua_pushvalue(L, idx);
  lend->ref = luaL_ref(L, LUA_REGISTRYINDEX);
  lend->t = t;
  lend->dev = t->dev;
  lend->data = t->data;
  lend->bytes = kb_tensor_nbytes(t);
  lend->dtype = t->dtype;
  lend->ndim = t->ndim;
  int64_t stride = 1;
  for (int i = t->ndim - 1; i >= 0; i--) {
    lend->shape[i] = t->shape[i];
    lend->strides[i] = stride;
    stride *= t->shape[i] > 0 ? t->shape[i] : 1;
  }
  lend->device.device_type = kb_on_cuda(t->dev) ? KB_DL_CUDA : KB_DL_CPU;
  lend->device.device_id = kb_on_cuda(t->dev) ? t->dev->ordinal : 0;
  t->views++;
  atomic_init(&lend->live, 1);
  lend->wrapper = 1;
  lend->open = 1;
  *out = make_wrapper(lend);
  if (!*out && lend->wrapper) { /* no Tensor was made, or its __del__ has not run: it never will count */
    lend->wrapper = 0;
    atomic_fetch_sub(&lend->live, 1);
  }
  return lend;
}

static void forget(lua_State *L, kb_py_lend *lend) {
  luaL_unref(L, LUA_REGISTRYINDEX, lend->ref);
  if (lend->t->views > 0) lend->t->views--;
  free(lend);
}

int kb_py_lend_close(lua_State *L, kb_py_lend *lend) {
  lend->open = 0;
  if (atomic_load(&lend->live) == 0) {
    forget(L, lend);
    return 1;
  }
  lend->next = g_kept;
  g_kept = lend;
  return 0;
}

void kb_py_lend_range(const kb_py_lend *lend, const void **data, size_t *bytes, const kb_tensor **t) {
  *data = lend->data;
  *bytes = lend->bytes;
  *t = lend->t;
}

void kb_py_lend_sweep(lua_State *L) {
  for (kb_py_lend **p = &g_kept; *p;) {
    kb_py_lend *lend = *p;
    if (atomic_load(&lend->live) == 0) {
      *p = lend->next;
      forget(L, lend);
    } else {
      p = &lend->next;
    }
  }
}

int kb_py_lend_find(PyObject *cap, kb_py_lend *const *lends, int n, int *exact) {
  *exact = 0;
  DLManagedTensor *mt = (DLManagedTensor *)kb_py.PyCapsule_GetPointer(cap, "dltensor");
  if (!mt) {
    kb_py.PyErr_Clear();
    return -1;
  }
  const DLTensor *d = &mt->dl_tensor;
  const char *p = (const char *)d->data + d->byte_offset;
  int dtype = -2;
  if (d->dtype.lanes == 1 && d->dtype.code == KB_DL_BFLOAT && d->dtype.bits == 16) dtype = KB_BF16;
  else if (d->dtype.lanes == 1 && d->dtype.code == KB_DL_FLOAT)
    dtype = d->dtype.bits == 16 ? KB_F16 : d->dtype.bits == 32 ? KB_F32 : d->dtype.bits == 64 ? KB_F64 : -2;
  for (int i = 0; i < n; i++) {
    const kb_py_lend *l = lends[i];
    if (!d->data || l->bytes == 0 || p < (const char *)l->data || p >= (const char *)l->data + l->bytes) continue;
    int same = p == (const char *)l->data && dtype == (int)l->dtype && d->ndim == l->ndim;
    for (int k = 0; same && k < l->ndim; k++) {
      same = d->shape[k] == l->shape[k] && (!d->strides || l->shape[k] == 1 || d->strides[k] == l->strides[k]);
    }
    *exact = same;
    return i;
  }
  return -1;
}

/* ---- tensors from Python ---------------------------------------------------------------------------- */

typedef struct {
  DLManagedTensor *mt;
  PyObject *obj;
} foreign_owner;

/* A tensor from Python is freed: its DLPack deleter and its object go, with the GIL. */
static void foreign_release(void *p) {
  foreign_owner *o = p;
  int st = kb_py.PyGILState_Ensure();
  if (o->mt->deleter) o->mt->deleter(o->mt);
  kb_py.Py_DecRef(o->obj);
  kb_py.PyGILState_Release(st);
  free(o);
}

PyObject *kb_py_tensor_object(const kb_tensor *t) {
  return t->owner_release == foreign_release ? ((foreign_owner *)t->owner)->obj : NULL;
}

/* "int64", "uint8", "complex64", "bool": a DLPack type kluabench has not */
static void dtype_text(DLDataType d, char *out, size_t n) {
  static const char *const codes[] = {"int", "uint", "float", "handle", "bfloat", "complex", "bool"};
  const char *c = d.code < sizeof codes / sizeof codes[0] ? codes[d.code] : "type code ";
  if (d.code == KB_DL_BOOL) snprintf(out, n, "bool");
  else if (d.lanes != 1) snprintf(out, n, "%s%d x %d lanes", c, d.bits, d.lanes);
  else if (d.code < sizeof codes / sizeof codes[0]) snprintf(out, n, "%s%d", c, d.bits);
  else snprintf(out, n, "type code %d, %d bits", d.code, d.bits);
}

/* The kluabench dtype of a DLPack type, or -1. */
static int dtype_of(DLDataType d) {
  if (d.lanes != 1) return -1;
  if (d.code == KB_DL_BFLOAT && d.bits == 16) return KB_BF16;
  if (d.code != KB_DL_FLOAT) return -1;
  return d.bits == 16 ? KB_F16 : d.bits == 32 ? KB_F32 : d.bits == 64 ? KB_F64 : -1;
}

/* The device of a DLPack tensor, or NULL and why. */
static const kb_backend *device_of(DLDevice d, char *why, size_t n) {
  if (d.device_type == KB_DL_CPU) return kb_backend_cpu();
  if (d.device_type == KB_DL_CUDA) {
    const char *err = NULL;
    const kb_backend *b = kb_backend_cuda(d.device_id, &err);
    if (!b) snprintf(why, n, "it is on cuda:%d, which this kluabench cannot use (%s)", d.device_id, err ? err : "?");
    return b;
  }
  static const char *const names[] = {NULL, "cpu", "cuda", "cuda pinned host memory (kDLCUDAHost)", "OpenCL", NULL,
                                      NULL, "Vulkan", "Metal", "VPI", "ROCm", "ROCm host memory", NULL,
                                      "cuda managed memory (kDLCUDAManaged)", "oneAPI"};
  const char *name = d.device_type > 0 && d.device_type < (int)(sizeof names / sizeof names[0]) ? names[d.device_type] : NULL;
  if (name) snprintf(why, n, "it is in %s: a kluabench tensor lives on the cpu or a CUDA device", name);
  else snprintf(why, n, "it is on DLPack device type %d: a kluabench tensor lives on the cpu or a CUDA device",
                d.device_type);
  return NULL;
}

const char *kb_py_take_dlpack(lua_State *L, PyObject *cap, PyObject *obj, char *why, size_t n) {
  DLManagedTensor *mt = (DLManagedTensor *)kb_py.PyCapsule_GetPointer(cap, "dltensor");
  if (!mt) {
    kb_py.PyErr_Clear();
    snprintf(why, n, "its __dlpack__() gave no \"dltensor\" capsule");
    return why;
  }
  const DLTensor *d = &mt->dl_tensor;
  const kb_backend *dev = device_of(d->device, why, n);
  if (!dev) return why;
  int dtype = dtype_of(d->dtype);
  if (dtype < 0) {
    char text[48];
    dtype_text(d->dtype, text, sizeof text);
    snprintf(why, n, "its dtype is %s, not one of a kluabench tensor's (bf16, f16, f32, f64)", text);
    return why;
  }
  if (d->ndim < 0 || d->ndim > KB_MAX_DIMS || (d->ndim > 0 && !d->shape)) {
    snprintf(why, n, "it has %d dimensions, at most %d are supported", (int)d->ndim, KB_MAX_DIMS);
    return why;
  }
  int64_t numel = 1;
  for (int i = 0; i < d->ndim; i++) numel *= d->shape[i] > 0 ? d->shape[i] : 0;
  if (d->strides && numel > 0) {
    int64_t want = 1;
    for (int i = d->ndim - 1; i >= 0; i--) {
      if (d->shape[i] != 1 && d->strides[i] != want) {
        snprintf(why, n, "it is not contiguous (dimension %d has stride %lld elements, row-major needs %lld): "
                         "return a contiguous copy (x.contiguous(), numpy.ascontiguousarray(x))",
                 i + 1, (long long)d->strides[i], (long long)want);
        return why;
      }
      want *= d->shape[i];
    }
  }
  static _Alignas(64) char empty[64]; /* the storage of an empty tensor: never read */
  char *data = numel > 0 ? (char *)d->data + d->byte_offset : empty;
  if (numel > 0 && (!d->data || ((uintptr_t)data & 15) != 0)) {
    snprintf(why, n, "its data at %p is not 16-byte aligned (kluabench's kernels read whole vectors): return a copy "
                     "(x.clone(), x.copy())", (void *)data);
    return why;
  }
  int64_t shape[KB_MAX_DIMS];
  for (int i = 0; i < d->ndim; i++) shape[i] = d->shape[i];
  const char *problem = kb_shape_problem(shape, d->ndim, (kb_dtype)dtype);
  if (problem) {
    snprintf(why, n, "%s", problem);
    return why;
  }
  /* a closed tensor first: if that raises (memory), the capsule still owns what it holds */
  kb_tensor *t = kb_push_foreign_tensor(L, dev, (kb_dtype)dtype, d->ndim, shape);
  foreign_owner *o = malloc(sizeof *o);
  if (!o) {
    lua_pop(L, 1);
    snprintf(why, n, "out of memory");
    return why;
  }
  o->mt = mt;
  o->obj = obj;
  kb_py.Py_IncRef(obj);
  kb_py.PyCapsule_SetName(cap, "used_dltensor"); /* consumed: the capsule no longer deletes it */
  kb_tensor_adopt(L, t, data, foreign_release, o);
  return NULL;
}
