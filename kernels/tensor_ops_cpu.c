/* CPU twins of the element-wise tensor primitives (tensor_ops.h). */
#include <math.h>
#include "parallel_cpu.h"
#include "philox.h"
#include "tensor_ops.h"

const char *kb_fill_cpu(void *p, kb_dtype t, size_t n, double x) {
  /* Convert once, then replicate the bytes: every element is identical. */
  unsigned char one[8];
  kb_store_f64(one, t, 0, x);
  size_t es = kb_dtype_size(t);
  for (size_t i = 0; i < n; i++) memcpy((unsigned char *)p + i * es, one, es);
  return NULL;
}

/* Loops of at least this many elements are split over the cores
 * (parallel_cpu.h): a 134 M-element bf16 randn took 3 s on one. */
#define KB_TENSOR_GRAIN ((size_t)1 << 18)

typedef struct {
  void *p;
  kb_dtype t;
  size_t n;
  uint64_t seed;
} randn_job;

/* Pairs [begin, end) of the Box-Muller stream: elements 2j and 2j + 1. */
static void randn_range(void *ctx, size_t begin, size_t end) {
  const randn_job *r = ctx;
  for (size_t j = begin; j < end; j++) {
    double z0, z1;
    kb_philox_normal2(r->seed, j, &z0, &z1);
    kb_store_f64(r->p, r->t, 2 * j, (float)z0);
    if (2 * j + 1 < r->n) kb_store_f64(r->p, r->t, 2 * j + 1, (float)z1);
  }
}

const char *kb_randn_cpu(void *p, kb_dtype t, size_t n, uint64_t seed) {
  randn_job r = {p, t, n, seed};
  kb_cpu_parallel_for((n + 1) / 2, KB_TENSOR_GRAIN / 2, randn_range, &r);
  return NULL;
}

typedef struct {
  void *dst;
  kb_dtype dt;
  const void *src;
  kb_dtype st;
} convert_job;

static void convert_range(void *ctx, size_t begin, size_t end) {
  const convert_job *c = ctx;
  for (size_t i = begin; i < end; i++) kb_store_f64(c->dst, c->dt, i, kb_load_f64(c->src, c->st, i));
}

const char *kb_convert_cpu(void *dst, kb_dtype dt, const void *src, kb_dtype st, size_t n) {
  if (dt == st) {
    /* one memmove: the ranges of a split copy could overlap when dst and src do */
    memmove(dst, src, n * kb_dtype_size(dt));
    return NULL;
  }
  convert_job c = {dst, dt, src, st};
  kb_cpu_parallel_for(n, KB_TENSOR_GRAIN, convert_range, &c);
  return NULL;
}
