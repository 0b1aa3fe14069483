/* kb.python (docs/KERNELS.md, "Python providers"): CPython embedded at run time, the pieces its three
 * files share. python_runtime.c finds the interpreter, opens its libpython with dlopen and starts it;
 * python_dlpack.c moves tensors across without a copy (DLPack, both ways); python.c binds kb.python
 * and holds the Lua types. The binary never links libpython, and needs no Python headers to build:
 * the few C-API functions used are declared here by hand and resolved by name, as pq.c does for libpq.
 *
 * The GIL: the interpreter is started once, on the main thread, and the GIL is released right after
 * (PyEval_SaveThread), so that threads a library starts (torch.compile's, tqdm's) run while Lua does.
 * Every entry from Lua takes it with PyGILState_Ensure and gives it back before returning or raising.
 * The interpreter is never finalized: extension modules (NumPy, torch) do not survive Py_Finalize
 * and a second start, a tensor from Python may be collected as the Lua state closes (its release
 * needs the interpreter), and the process's end frees everything. */
#ifndef KB_PYTHON_H
#define KB_PYTHON_H

#include <stddef.h>
#include <sys/types.h>
#include "usercode.h"

/* ---- the C-API, declared by hand (Python.h of 3.8 to 3.13: the stable ABI's functions) ---- */
typedef struct _object PyObject; /* opaque: every access goes through a function below */
typedef ssize_t Py_ssize_t;
typedef PyObject *(*PyCFunction)(PyObject *self, PyObject *args);
typedef struct {
  const char *ml_name;
  PyCFunction ml_meth;
  int ml_flags;
  const char *ml_doc;
} PyMethodDef;
#define KB_PY_METH_VARARGS 0x0001
typedef void (*PyCapsule_Destructor)(PyObject *);

#define KB_PY_FUNCTIONS(X)                                                                                   \
  X(void, Py_InitializeEx, (int))                                                                            \
  X(int, Py_IsInitialized, (void))                                                                           \
  X(const char *, Py_GetVersion, (void))                                                                     \
  X(void *, PyEval_SaveThread, (void))                                                                       \
  X(int, PyGILState_Ensure, (void))                                                                          \
  X(void, PyGILState_Release, (int))                                                                         \
  X(void, Py_IncRef, (PyObject *))                                                                           \
  X(void, Py_DecRef, (PyObject *))                                                                           \
  X(PyObject *, PyImport_ImportModule, (const char *))                                                       \
  X(PyObject *, PyObject_GetAttrString, (PyObject *, const char *))                                         \
  X(int, PyObject_SetAttrString, (PyObject *, const char *, PyObject *))                                    \
  X(PyObject *, PyObject_CallObject, (PyObject *, PyObject *))                                              \
  X(PyObject *, PyObject_Str, (PyObject *))                                                                  \
  X(PyObject *, PyUnicode_FromStringAndSize, (const char *, Py_ssize_t))                                    \
  X(const char *, PyUnicode_AsUTF8AndSize, (PyObject *, Py_ssize_t *))                                      \
  X(PyObject *, PyBytes_FromStringAndSize, (const char *, Py_ssize_t))                                      \
  X(PyObject *, PyLong_FromLongLong, (long long))                                                            \
  X(PyObject *, PyLong_FromVoidPtr, (void *))                                                                \
  X(long long, PyLong_AsLongLong, (PyObject *))                                                              \
  X(PyObject *, PyFloat_FromDouble, (double))                                                                \
  X(double, PyFloat_AsDouble, (PyObject *))                                                                  \
  X(PyObject *, PyBool_FromLong, (long))                                                                     \
  X(PyObject *, PyTuple_New, (Py_ssize_t))                                                                   \
  X(int, PyTuple_SetItem, (PyObject *, Py_ssize_t, PyObject *))                                             \
  X(PyObject *, PyTuple_GetItem, (PyObject *, Py_ssize_t))                                                  \
  X(Py_ssize_t, PyTuple_Size, (PyObject *))                                                                  \
  X(PyObject *, PyCapsule_New, (void *, const char *, PyCapsule_Destructor))                                \
  X(void *, PyCapsule_GetPointer, (PyObject *, const char *))                                               \
  X(int, PyCapsule_SetName, (PyObject *, const char *))                                                      \
  X(int, PyCapsule_IsValid, (PyObject *, const char *))                                                      \
  X(PyObject *, PyCFunction_NewEx, (PyMethodDef *, PyObject *, PyObject *))                                 \
  X(PyObject *, PyErr_Occurred, (void))                                                                      \
  X(void, PyErr_Fetch, (PyObject **, PyObject **, PyObject **))                                             \
  X(void, PyErr_Restore, (PyObject *, PyObject *, PyObject *))                                              \
  X(void, PyErr_NormalizeException, (PyObject **, PyObject **, PyObject **))                                \
  X(void, PyErr_Clear, (void))                                                                               \
  X(void, PyErr_SetString, (PyObject *, const char *))                                                      \
  X(void, PyErr_WriteUnraisable, (PyObject *))

#define KB_PY_FIELD(ret, name, args) ret(*name) args;
typedef struct {
  KB_PY_FUNCTIONS(KB_PY_FIELD)
  PyObject *none;         /* _Py_NoneStruct */
  PyObject *buffer_error; /* *PyExc_BufferError */
  PyObject *runtime_error;
} kb_py_api;
#undef KB_PY_FIELD

/* ---- the runtime (python_runtime.c) ---------------------------------------------------------- */

/* The functions above, resolved in the libpython kb_py_start opened (valid once it returned NULL). */
extern kb_py_api kb_py;

/* What the interpreter said about itself, and what was opened. */
typedef struct {
  char asked[512];      /* KLUABENCH_PYTHON, or "python3" (searched on PATH) */
  char executable[1024]; /* its sys.executable */
  char version[32];     /* "3.11.2" */
  char library[1024];   /* the libpython opened */
  char home[2048];      /* PYTHONHOME it was started with: sys.base_prefix[:sys.base_exec_prefix] */
  char prefix[1024];    /* sys.prefix (a venv's own) */
} kb_py_runtime;

/* Starts the interpreter once: runs the Python that KLUABENCH_PYTHON names (or python3 on PATH) to read
 * where its libpython, home and sys.path are, opens that libpython, starts it with no signal handlers
 * of its own (Ctrl-C stays kluabench's), runs the glue (python_glue.py) and releases the GIL. NULL when
 * Python runs, else why not: the same text on every later call, nothing retried. */
const char *kb_py_start(void);
const kb_py_runtime *kb_py_runtime_info(void);
/* The glue module (_kluabench) and one of its attributes (borrowed; valid for the process). */
PyObject *kb_py_glue(const char *name);
/* Sets an attribute of the glue module (with the GIL held): 0, or -1 with an exception set. */
int kb_py_glue_set(const char *name, PyObject *value);
/* With the GIL held and a Python exception set: takes it, and writes into buf what the glue makes of
 * it (the exception and the last lines of its traceback), or its str() before the glue runs. */
void kb_py_take_error(char *buf, size_t n);
/* in[0..len) made safe to print into out (n bytes, NUL-terminated), line by line: kb_printable's escapes
 * for each line, the newlines between them kept. */
void kb_py_printable(char *out, size_t n, const char *in, size_t len);

/* ---- DLPack (python_dlpack.c) ------------------------------------------------------------------ */

/* One tensor lent to Python for a call (a kb_py_lend is private to python_dlpack.c). */
typedef struct kb_py_lend kb_py_lend;

/* The C functions the glue calls (set on it by python.c once the interpreter runs). */
extern PyMethodDef kb_py_dlpack_methods[];

/* With the GIL held: lends the tensor at stack index idx (checked, never freed while lent) to Python for
 * one call: *out gets the glue's Tensor over it (a new reference). Raises on a Lua error; NULL and a
 * Python exception set when the glue fails. The lend is closed by kb_py_lend_close. */
kb_py_lend *kb_py_lend_open(lua_State *L, int idx, PyObject **out);
/* With the GIL held, after the call: closes the lend (no new view from now on). 1 when Python holds no
 * view of it any more (the lend is gone), 0 when it kept one: the tensor then stays alive, and free()
 * refuses it, until Python drops the view (kb_py_lend_sweep notices). */
int kb_py_lend_close(lua_State *L, kb_py_lend *lend);
/* The storage and size of a lend's tensor. */
void kb_py_lend_range(const kb_py_lend *lend, const void **data, size_t *bytes, const kb_tensor **t);
/* Which of lends[0..n) the tensor in the "dltensor" capsule cap lies in (a result that is an argument,
 * or a view of one), or -1; *exact: 1 when it is that tensor whole (same start, dtype and shape). */
int kb_py_lend_find(PyObject *cap, kb_py_lend *const *lends, int n, int *exact);
/* With the GIL held: forgets the lends of earlier calls whose views Python has dropped since. */
void kb_py_lend_sweep(lua_State *L);

/* With the GIL held: pushes a kluabench tensor over what the DLPack capsule cap ("dltensor", from
 * obj.__dlpack__()) holds, and takes the capsule (the tensor keeps obj and releases both when freed).
 * Returns NULL, or why the tensor cannot be taken (the capsule is left as it was, nothing is pushed).
 * what names it in messages ("result 2"). */
const char *kb_py_take_dlpack(lua_State *L, PyObject *cap, PyObject *obj, char *why, size_t n);
/* The Python object a tensor made by kb_py_take_dlpack came from (borrowed), or NULL for any other. */
PyObject *kb_py_tensor_object(const kb_tensor *t);

#endif
