/* The Lua state's allocator: small blocks from free lists by size class.
 *
 * Why: a call like kern:launch{grid = g, block = b, args = {...}} makes two
 * tables (four blocks of 48 to 128 bytes) that die at once; with the C
 * library's malloc and free they were a third of what such a launch spent
 * besides cuLaunchKernel (scripts/launch_overhead_user.lua). Lua passes the
 * old size of every block it frees or resizes, so a block needs no header:
 * blocks up to KB_POOL_MAX bytes come from 64 KiB slabs, in classes of 16
 * bytes, and go back to their class's free list; larger ones are the C
 * library's. Slabs are returned when the state closes. One pool per state,
 * used only by the thread that runs that state (as Lua's own rules have it).
 *
 * Under AddressSanitizer (make asan) the pool is off and every block is the C
 * library's, so that a use after free inside Lua is still seen. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "lua_alloc.h"

#define KB_POOL_STEP 16
#define KB_POOL_MAX 512
#define KB_POOL_CLASSES (KB_POOL_MAX / KB_POOL_STEP)
#define KB_SLAB_BYTES (64 * 1024)

#if defined(__SANITIZE_ADDRESS__)
#define KB_POOL_ON 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define KB_POOL_ON 0
#endif
#endif
#ifndef KB_POOL_ON
#define KB_POOL_ON 1
#endif

typedef struct slab {
  struct slab *next;
} slab;

typedef struct kb_pool {
  void *free[KB_POOL_CLASSES]; /* free blocks of each class, linked through their first word */
  slab *slabs;                 /* every slab, to return them at close */
  char *cursor, *end;          /* the unused rest of the newest slab */
} kb_pool;

static int class_of(size_t n) { return (int)((n + KB_POOL_STEP - 1) / KB_POOL_STEP) - 1; }

static void pool_give(kb_pool *p, void *b, int c) {
  *(void **)b = p->free[c];
  p->free[c] = b;
}

static void *pool_take(kb_pool *p, int c) {
  void *b = p->free[c];
  if (b) {
    p->free[c] = *(void **)b;
    return b;
  }
  size_t size = (size_t)(c + 1) * KB_POOL_STEP;
  if (p->cursor == NULL || (size_t)(p->end - p->cursor) < size) {
    /* the rest of the old slab (a multiple of the step, smaller than this class) goes to its class's list */
    if (p->cursor && p->end > p->cursor) pool_give(p, p->cursor, class_of((size_t)(p->end - p->cursor)));
    p->cursor = p->end = NULL;
    slab *s = (slab *)malloc(KB_SLAB_BYTES);
    if (!s) return NULL;
    s->next = p->slabs;
    p->slabs = s;
    p->cursor = (char *)s + KB_POOL_STEP; /* the first step holds the link */
    p->end = (char *)s + KB_SLAB_BYTES;
  }
  b = p->cursor;
  p->cursor += size;
  return b;
}

/* lua_Alloc: ptr == NULL means osize is the kind of object, not a size. */
static void *pool_alloc(void *ud, void *ptr, size_t osize, size_t nsize) {
  kb_pool *p = (kb_pool *)ud;
  if (ptr == NULL) osize = 0;
  int oc = osize > 0 && osize <= KB_POOL_MAX ? class_of(osize) : -1;
  if (nsize == 0) {
    if (oc >= 0)
      pool_give(p, ptr, oc);
    else
      free(ptr);
    return NULL;
  }
  int nc = nsize <= KB_POOL_MAX ? class_of(nsize) : -1;
  if (ptr != NULL && oc == nc && oc >= 0) return ptr; /* same class: the block fits */
  if (nc < 0 && oc < 0) return realloc(ptr, nsize);
  void *b = nc >= 0 ? pool_take(p, nc) : malloc(nsize);
  if (!b) {
    /* Lua assumes a block never fails to shrink: keep it. It is then freed (or resized) as a
     * block of its new class, which it is at least as large as; only a C library block kept so
     * (out of memory) stays unreturned until the process ends. Growing fails: Lua raises its
     * memory error and the old block stays valid. */
    return nsize <= osize ? ptr : NULL;
  }
  if (ptr) {
    memcpy(b, ptr, osize < nsize ? osize : nsize);
    if (oc >= 0)
      pool_give(p, ptr, oc);
    else
      free(ptr);
  }
  return b;
}

static void *libc_alloc(void *ud, void *ptr, size_t osize, size_t nsize) {
  (void)ud;
  (void)osize;
  if (nsize == 0) {
    free(ptr);
    return NULL;
  }
  return realloc(ptr, nsize);
}

/* As lauxlib's: the error object on stderr, then abort (only a bug gets here:
 * every call into Lua from C is protected). */
static int panic(lua_State *L) {
  const char *msg = lua_tostring(L, -1);
  fprintf(stderr, "kluabench: PANIC: unprotected error in call to Lua API (%s)\n", msg ? msg : "error object is not a string");
  fflush(stderr);
  return 0;
}

/* Warnings (warn() in Lua, and errors in finalizers), as the stand-alone lua
 * has them: off at start, "@on" and "@off" switch them, a message is
 * "Lua warning: " and its pieces on stderr. Each state's function is its
 * state, so switching is per state. */
static void warn_on(void *ud, const char *msg, int tocont);
static void warn_off(void *ud, const char *msg, int tocont);

static int warn_control(lua_State *L, const char *msg, int tocont) {
  if (tocont || msg[0] != '@') return 0;
  if (strcmp(msg + 1, "off") == 0) lua_setwarnf(L, warn_off, L);
  if (strcmp(msg + 1, "on") == 0) lua_setwarnf(L, warn_on, L);
  return 1; /* an unknown control message is ignored */
}

static void warn_off(void *ud, const char *msg, int tocont) { warn_control((lua_State *)ud, msg, tocont); }

static void warn_more(void *ud, const char *msg, int tocont) {
  lua_State *L = (lua_State *)ud;
  fputs(msg, stderr);
  if (tocont) {
    lua_setwarnf(L, warn_more, L);
  } else {
    fputs("\n", stderr);
    lua_setwarnf(L, warn_on, L);
  }
  fflush(stderr);
}

static void warn_on(void *ud, const char *msg, int tocont) {
  if (warn_control((lua_State *)ud, msg, tocont)) return;
  fputs("Lua warning: ", stderr);
  warn_more(ud, msg, tocont);
}

lua_State *kb_lua_newstate(void) {
  lua_State *L;
  if (KB_POOL_ON) {
    kb_pool *p = (kb_pool *)calloc(1, sizeof *p);
    if (!p) return NULL;
    L = lua_newstate(pool_alloc, p);
    if (!L) {
      free(p);
      return NULL;
    }
  } else {
    L = lua_newstate(libc_alloc, NULL);
    if (!L) return NULL;
  }
  lua_atpanic(L, panic);
  lua_setwarnf(L, warn_off, L);
  return L;
}

void kb_lua_close(lua_State *L) {
  void *ud = NULL;
  lua_Alloc f = lua_getallocf(L, &ud);
  lua_close(L);
  if (f != pool_alloc) return;
  kb_pool *p = (kb_pool *)ud;
  while (p->slabs) {
    slab *next = p->slabs->next;
    free(p->slabs);
    p->slabs = next;
  }
  free(p);
}
