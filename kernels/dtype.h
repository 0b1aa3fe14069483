/* Element types shared by every kernel and binding, and the scalar
 * conversions that the CPU twins use (round to nearest even, as CUDA's
 * __float2bfloat16_rn and __float2half_rn do, so both backends agree). */
#ifndef KB_DTYPE_H
#define KB_DTYPE_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

typedef enum { KB_BF16 = 0, KB_F16 = 1, KB_F32 = 2, KB_F64 = 3, KB_NDTYPES = 4 } kb_dtype;

static inline size_t kb_dtype_size(kb_dtype t) {
  static const size_t sizes[KB_NDTYPES] = {2, 2, 4, 8};
  return sizes[t];
}

static inline const char *kb_dtype_name(kb_dtype t) {
  static const char *const names[KB_NDTYPES] = {"bf16", "f16", "f32", "f64"};
  return names[t];
}

static inline float kb_bf16_to_f32(uint16_t h) {
  uint32_t u = (uint32_t)h << 16;
  float f;
  memcpy(&f, &u, 4);
  return f;
}

static inline uint16_t kb_f32_to_bf16(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40); /* quiet NaN */
  u += 0x7fffu + ((u >> 16) & 1u);
  return (uint16_t)(u >> 16);
}

static inline float kb_f16_to_f32(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16, exp = (h >> 10) & 0x1fu, man = h & 0x3ffu, u;
  if (exp == 0x1f) {
    u = sign | 0x7f800000u | (man << 13);
  } else if (exp == 0) {
    if (man == 0) {
      u = sign;
    } else { /* subnormal: renormalise */
      int e = -1;
      do { man <<= 1; e++; } while (!(man & 0x400u));
      u = sign | ((uint32_t)(127 - 15 - e) << 23) | ((man & 0x3ffu) << 13);
    }
  } else {
    u = sign | ((exp + 112u) << 23) | (man << 13);
  }
  float f;
  memcpy(&f, &u, 4);
  return f;
}

static inline uint16_t kb_f32_to_f16(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  uint32_t sign = (u >> 16) & 0x8000u, au = u & 0x7fffffffu;
  if (au > 0x7f800000u) return (uint16_t)(sign | 0x7e00u);
  if (au >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u); /* rounds to inf */
  if (au < 0x38800000u) {                                     /* f16 subnormal or zero */
    if (au < 0x33000000u) return (uint16_t)sign;              /* below half the smallest */
    uint32_t e = au >> 23, man = (au & 0x7fffffu) | 0x800000u, shift = 126 - e;
    uint32_t r = man >> shift, rem = man & ((1u << shift) - 1), half = 1u << (shift - 1);
    if (rem > half || (rem == half && (r & 1u))) r++;
    return (uint16_t)(sign | r);
  }
  uint32_t r = au - 0x38000000u; /* rebias exponent 127 -> 15 */
  r += 0xfffu + ((r >> 13) & 1u);
  return (uint16_t)(sign | (r >> 13));
}

/* Read element i of a host buffer of type t as double. */
static inline double kb_load_f64(const void *p, kb_dtype t, size_t i) {
  switch (t) {
  case KB_BF16: return kb_bf16_to_f32(((const uint16_t *)p)[i]);
  case KB_F16: return kb_f16_to_f32(((const uint16_t *)p)[i]);
  case KB_F32: return ((const float *)p)[i];
  default: return ((const double *)p)[i];
  }
}

/* Write x into element i of a host buffer of type t, rounding to nearest even.
 * bf16/f16 round through f32, as a device conversion from f32 would. */
static inline void kb_store_f64(void *p, kb_dtype t, size_t i, double x) {
  switch (t) {
  case KB_BF16: ((uint16_t *)p)[i] = kb_f32_to_bf16((float)x); break;
  case KB_F16: ((uint16_t *)p)[i] = kb_f32_to_f16((float)x); break;
  case KB_F32: ((float *)p)[i] = (float)x; break;
  default: ((double *)p)[i] = x; break;
  }
}

#endif
