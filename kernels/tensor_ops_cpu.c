/* CPU twins of the element-wise tensor primitives (tensor_ops.h). */
#include <math.h>
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

const char *kb_randn_cpu(void *p, kb_dtype t, size_t n, uint64_t seed) {
  for (size_t j = 0; 2 * j < n; j++) {
    double z0, z1;
    kb_philox_normal2(seed, j, &z0, &z1);
    kb_store_f64(p, t, 2 * j, (float)z0);
    if (2 * j + 1 < n) kb_store_f64(p, t, 2 * j + 1, (float)z1);
  }
  return NULL;
}

const char *kb_convert_cpu(void *dst, kb_dtype dt, const void *src, kb_dtype st, size_t n) {
  if (dt == st) {
    memmove(dst, src, n * kb_dtype_size(dt));
    return NULL;
  }
  for (size_t i = 0; i < n; i++) kb_store_f64(dst, dt, i, kb_load_f64(src, st, i));
  return NULL;
}
