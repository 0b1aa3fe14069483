/* kb.memory_stats and kb.reset_peak_memory: the bytes of device memory our
 * allocator holds now and at its peak, per device, as PyTorch's
 * torch.cuda.memory_allocated() and max_memory_allocated() count them: the
 * storage of every live tensor (the scratch the built-in kernels keep as
 * tensors included), whatever the driver or the cold mode's flush buffer
 * hold besides. Every tensor allocation and release goes through kb_alloc
 * and kb_release, on both backends, so that the harness's memory metric
 * (Liger's: peak bytes allocated around one call) reads the same on cpu and
 * cuda. */
#include <string.h>
#include "kb.h"

/* One slot per backend instance (cpu, and one cuda backend per ordinal). */
#define KB_MEM_SLOTS 16
static struct {
  const kb_backend *dev;
  size_t current, peak;
  long long live, total; /* allocations alive now, made since start */
} g_mem[KB_MEM_SLOTS];

static int slot_of(const kb_backend *dev) {
  for (int i = 0; i < KB_MEM_SLOTS; i++) {
    if (g_mem[i].dev == dev) return i;
    if (!g_mem[i].dev) {
      g_mem[i].dev = dev;
      return i;
    }
  }
  return KB_MEM_SLOTS - 1; /* more devices than slots: the last one counts the rest */
}

const char *kb_alloc(const kb_backend *dev, void **out, size_t bytes) {
  const char *err = dev->alloc(dev, out, bytes);
  if (err) return err;
  int s = slot_of(dev);
  g_mem[s].current += bytes;
  if (g_mem[s].current > g_mem[s].peak) g_mem[s].peak = g_mem[s].current;
  g_mem[s].live++;
  g_mem[s].total++;
  return NULL;
}

/* Tensors' storage lies outside the Lua heap, so the collector does not see it
 * grow: a loop of temporaries (a check's f64 copies at 256 Mi elements) kept
 * gigabytes of dead tensors until the Lua heap itself had grown enough (24 GB
 * and the OOM killer for examples/vector_add_benchmark.lua --sweep size on the
 * cpu). Once the bytes of tensors made since the last full collection exceed
 * both KB_GC_STEP_BYTES and the bytes alive on every device, a full collection
 * frees the dead ones first: dead storage stays within about what is alive.
 * An allocation that fails is retried once after a full collection. */
#define KB_GC_STEP_BYTES ((size_t)256 << 20)
static size_t g_since_collect;

/* Counts bytes made since the last full collection, and collects when they are due. */
static void collect_when_due(lua_State *L, size_t bytes) {
  size_t alive = 0;
  for (int i = 0; i < KB_MEM_SLOTS; i++) alive += g_mem[i].current;
  g_since_collect += bytes;
  if (g_since_collect > KB_GC_STEP_BYTES && g_since_collect > alive) {
    g_since_collect = bytes;
    lua_gc(L, LUA_GCCOLLECT);
  }
}

void kb_foreign_bytes(lua_State *L, size_t bytes) { collect_when_due(L, bytes); }

const char *kb_alloc_collecting(lua_State *L, const kb_backend *dev, void **out, size_t bytes) {
  collect_when_due(L, bytes);
  const char *err = kb_alloc(dev, out, bytes);
  if (err) {
    g_since_collect = bytes;
    lua_gc(L, LUA_GCCOLLECT);
    err = kb_alloc(dev, out, bytes);
  }
  return err;
}

void kb_release(const kb_backend *dev, void *p, size_t bytes) {
  dev->release(dev, p);
  int s = slot_of(dev);
  g_mem[s].current = g_mem[s].current >= bytes ? g_mem[s].current - bytes : 0;
  if (g_mem[s].live > 0) g_mem[s].live--;
}

/* Scratch that bindings keep between calls lives in registry[KB_SCRATCH][key]
 * (a table by device), so that kb.drop_scratch can let it all go. */
#define KB_SCRATCH "kluabench.scratch"

void kb_scratch_table(lua_State *L, const char *key) {
  if (lua_getfield(L, LUA_REGISTRYINDEX, KB_SCRATCH) != LUA_TTABLE) {
    lua_pop(L, 1);
    lua_newtable(L);
    lua_pushvalue(L, -1);
    lua_setfield(L, LUA_REGISTRYINDEX, KB_SCRATCH);
  }
  if (lua_getfield(L, -1, key) != LUA_TTABLE) {
    lua_pop(L, 1);
    lua_newtable(L);
    lua_pushvalue(L, -1);
    lua_setfield(L, -3, key);
  }
  lua_remove(L, -2);
}

/*** Lets go of the scratch the built-in kernels keep between calls (the collector then frees it).
 *
 * The next call allocates it again. The memory metric calls it before each measured call, so that
 * a kernel's temporaries count while it runs, as PyTorch's do, and scratch left by an earlier
 * provider does not. A buffer that a live CUDA graph captured stays alive with the graph.
 *
 * @signature kb.drop_scratch()
 * @section device
 * @example
 *   kb.drop_scratch()
 *   collectgarbage()
 */
/* drop_scratch(): forgets the scratch the built-in kernels keep between calls
 * (the reference RoPE path's temporaries, ...); the collector then frees it,
 * and the next call allocates it again. Like the memory PyTorch's caching
 * allocator keeps, it is allocated only while a call uses it when the memory
 * metric resets the peak after this. A buffer a live CUDA graph captured
 * stays alive with the graph. */
static int l_drop_scratch(lua_State *L) {
  lua_pushnil(L);
  lua_setfield(L, LUA_REGISTRYINDEX, KB_SCRATCH);
  return 0;
}

/*** The bytes kluabench's allocator holds on a device: now, at the peak, and how many allocations.
 *
 * `device`, `allocated_bytes` (the storage of every live tensor, the scratch the built-in kernels
 * keep included), `peak_bytes` (the most since the start or the last kb.reset_peak_memory),
 * `allocations` (alive now) and `total_allocations`. Every tensor is counted, on both backends, as
 * torch.cuda.memory_allocated() and max_memory_allocated() count PyTorch's: the cold mode's flush
 * buffer and what the driver holds are not. The harness's --metric memory reads it
 * (measure/memory.lua).
 *
 * @signature kb.memory_stats([device]) -> table
 * @section device
 * @example
 *   local s = kb.memory_stats()
 *   print(s.allocated_bytes, s.peak_bytes)
 */
/* memory_stats([device]) -> {device, allocated_bytes, peak_bytes,
 * allocations, total_allocations} */
static int l_memory_stats(lua_State *L) {
  const kb_backend *dev = kb_check_device(L, 1);
  int s = slot_of(dev);
  lua_createtable(L, 0, 5);
  lua_pushstring(L, dev->device);
  lua_setfield(L, -2, "device");
  lua_pushinteger(L, (lua_Integer)g_mem[s].current);
  lua_setfield(L, -2, "allocated_bytes");
  lua_pushinteger(L, (lua_Integer)g_mem[s].peak);
  lua_setfield(L, -2, "peak_bytes");
  lua_pushinteger(L, (lua_Integer)g_mem[s].live);
  lua_setfield(L, -2, "allocations");
  lua_pushinteger(L, (lua_Integer)g_mem[s].total);
  lua_setfield(L, -2, "total_allocations");
  return 1;
}

/*** Sets the peak of kb.memory_stats to what is allocated now, and returns it.
 *
 * @signature kb.reset_peak_memory([device]) -> bytes
 * @section device
 * @example
 *   local now = kb.reset_peak_memory()
 *   local x = kb.empty({1024}, "f32")
 *   print(kb.memory_stats().peak_bytes - now)
 */
/* reset_peak_memory([device]) -> bytes allocated now (the new peak) */
static int l_reset_peak_memory(lua_State *L) {
  const kb_backend *dev = kb_check_device(L, 1);
  int s = slot_of(dev);
  g_mem[s].peak = g_mem[s].current;
  lua_pushinteger(L, (lua_Integer)g_mem[s].current);
  return 1;
}

static const luaL_Reg functions[] = {{"memory_stats", l_memory_stats},
                                     {"reset_peak_memory", l_reset_peak_memory},
                                     {"drop_scratch", l_drop_scratch},
                                     {NULL, NULL}};

void kb_open_memstats(lua_State *L) { luaL_setfuncs(L, functions, 0); }
