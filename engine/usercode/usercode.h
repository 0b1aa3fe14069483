/* User kernels (docs/KERNELS.md): the pieces engine/usercode/nvrtc.c, module.c,
 * signature.c and plugin.c share. usercode.c builds kb.cuda and kb.plugin
 * from their openers; luaopen_kluabench adds them through kb_open_usercode. */
#ifndef KB_USERCODE_H
#define KB_USERCODE_H

#include <stddef.h>
#include "../core/kb.h"

#define KB_MODULE_MT "kluabench.Module"
#define KB_KERNEL_MT "kluabench.Kernel"
#define KB_PLUGIN_MT "kluabench.Plugin"
#define KB_PLUGIN_KERNEL_MT "kluabench.PluginKernel"
#define KB_ARGPACK_MT "kluabench.ArgPack"
#define KB_MAX_PARAMS 128

/* Pushes a shallow copy of the table at idx, so that a caller given an info
 * table (mod:info(), kern:info(), plugin:info(), kb.loaded_code()) cannot
 * edit the one the engine keeps. */
static inline void kb_push_table_copy(lua_State *L, int idx) {
  idx = lua_absindex(L, idx);
  lua_newtable(L);
  lua_pushnil(L);
  while (lua_next(L, idx)) {
    lua_pushvalue(L, -2);
    lua_insert(L, -2);
    lua_rawset(L, -4);
  }
}

/* ---- signatures (signature.c) ----------------------------------------------
 * A signature is a comma-separated list of parameter types, parsed once when
 * a kernel is made: "ptr, ptr, i32, f32". Each type has a size (its bytes in
 * the kernel's parameter buffer) and a class that says which Lua values it
 * accepts. */
typedef enum { KB_P_PTR, KB_P_INT, KB_P_UINT, KB_P_FLOAT, KB_P_TENSOR } kb_param_class;

typedef struct {
  const char *name; /* the canonical name: "ptr", "i32", "f16", "tensor" */
  kb_param_class cls;
  unsigned char size;
} kb_param_type;

/* Parses sig into out[] (at most max entries), returns the count, or raises
 * "bad argument #arg to 'fn' (signature: unknown type 'x' at parameter 3;
 * expected ...)". allow: a NULL-terminated list of canonical names accepted
 * here (NULL: every CUDA parameter type). */
int kb_parse_signature(lua_State *L, const char *fn, int arg, const char *sig,
                       const kb_param_type **out, int max, const char *const *allow);
/* "ptr, i32, f32" of a parsed signature. */
void kb_push_signature(lua_State *L, const kb_param_type *const *types, int n);

/* ---- modules (module.c) ---------------------------------------------------- */

/* Pushes a kluabench.Module for the image at stack index img (a string: a
 * cubin, PTX or fatbin, `format` saying which), with the PTX text at ptx (a
 * string or nil) and the info table at info (taken as the module's info;
 * format, sha256 and bytes are added). The image is loaded into the CUDA
 * context when the first kernel is asked for, so that compiling needs no GPU. */
void kb_push_module(lua_State *L, int img, int ptx, const char *format, int info);

/* ---- the code loaded in this process (loaded_code.c) -----------------------
 * Notes user code once per content for kb.loaded_code: kind ("nvrtc",
 * "cubin", "ptx", "fatbin", "plugin"), sha256 ("sha256:<hex>" of the source
 * for nvrtc, else of the binary; NULL: nothing is noted), image_sha256 (nvrtc:
 * the compiled image's, else NULL), name and path (NULL where unknown). */
void kb_note_code(lua_State *L, const char *kind, const char *sha256, const char *image_sha256,
                  const char *name, const char *path);

void kb_open_usercode(lua_State *L);   /* usercode.c */
void kb_open_signature(lua_State *L); /* signature.c: parse_signature into the kb.cuda table on top */
void kb_open_nvrtc(lua_State *L);
void kb_open_module(lua_State *L);
void kb_open_plugin(lua_State *L);
void kb_open_loaded_code(lua_State *L); /* loaded_code.c: kb.loaded_code into the kb table on top */
void kb_open_python(lua_State *L);      /* python.c: kb.python's functions into the table on top */

#endif
