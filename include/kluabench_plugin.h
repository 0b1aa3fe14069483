/* kluabench_plugin.h: the C ABI of a kluabench plugin (docs/KERNELS.md).
 *
 * A plugin is a shared library that exports one function,
 *
 *   const kb_plugin *kluabench_plugin(void);
 *
 * returning a static description of its kernels. kb.plugin.load(path) opens
 * the library, calls it once and refuses the plugin when abi_version is not
 * the KB_PLUGIN_ABI_VERSION this kluabench was built with. Each kernel has a
 * CUDA entry, a CPU entry (its twin, which lets it run where there is no
 * GPU), or both; kluabench calls the one matching the device of the tensors
 * it is given. The engine checks the arguments against the kernel's
 * signature before calling, so an entry may trust the kinds it receives.
 *
 * Lifetime: the kb_plugin and everything it points to must stay valid until
 * the library is closed (static data is the natural choice). Entries must not
 * keep the argument pointers after they return.
 *
 * CUDA entries queue their work on `stream` (a cudaStream_t / CUstream, the
 * engine's one stream) and must not synchronise it, so that every protocol,
 * CUDA graph capture and trace covers them; CPU entries run to completion.
 *
 * Versioning: any change to the layout of these structs or to the meaning of
 * a field increments KB_PLUGIN_ABI_VERSION. New argument kinds or dtypes are
 * additions (older plugins simply do not use them) and keep the version. */
#ifndef KLUABENCH_PLUGIN_H
#define KLUABENCH_PLUGIN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define KB_PLUGIN_ABI_VERSION 1
#define KB_PLUGIN_ENTRY "kluabench_plugin"
#define KB_PLUGIN_MAX_DIMS 8

/* Element types; the values are kluabench's own (kernels/dtype.h). */
typedef enum {
  KB_PLUGIN_BF16 = 0,
  KB_PLUGIN_F16 = 1,
  KB_PLUGIN_F32 = 2,
  KB_PLUGIN_F64 = 3
} kb_plugin_dtype;

/* What a signature names: "tensor", "i64" (a Lua integer) or "f64" (a Lua
 * number). */
typedef enum { KB_PLUGIN_TENSOR = 1, KB_PLUGIN_I64 = 2, KB_PLUGIN_F64_SCALAR = 3 } kb_plugin_kind;

/* A contiguous row-major tensor: data is a device pointer for CUDA entries
 * and a host pointer for CPU entries. */
typedef struct {
  void *data;
  kb_plugin_dtype dtype;
  int ndim;
  int64_t shape[KB_PLUGIN_MAX_DIMS];
  int64_t numel;
} kb_plugin_tensor;

typedef struct {
  kb_plugin_kind kind;
  union {
    kb_plugin_tensor tensor;
    int64_t i;
    double f;
  } u;
} kb_plugin_arg;

/* An entry: returns 0 on success; otherwise writes a message into err
 * (errlen bytes, NUL-terminated) and returns non-zero. A CUDA entry returns
 * the cudaError_t of the failure, so that kluabench recognises errors that
 * leave the CUDA context unusable. stream is NULL for CPU entries. */
typedef int (*kb_plugin_fn)(const kb_plugin_arg *args, int nargs, void *stream, char *err,
                            size_t errlen);

typedef struct {
  const char *name;      /* a Lua identifier: "scale_add" */
  const char *signature; /* "tensor, tensor, tensor, f64": kinds in order */
  kb_plugin_fn cuda;     /* NULL when there is no CUDA entry */
  kb_plugin_fn cpu;      /* NULL when there is no CPU twin */
  const char *doc;       /* one line for people, may be NULL */
} kb_plugin_kernel;

typedef struct {
  int abi_version;       /* KB_PLUGIN_ABI_VERSION of the header it was built with */
  const char *name;      /* "scale_add" */
  const char *version;   /* the plugin's own version, recorded with its results */
  int nkernels;
  const kb_plugin_kernel *kernels;
} kb_plugin;

typedef const kb_plugin *(*kb_plugin_entry_fn)(void);

#ifdef __cplusplus
}
#endif

#endif
