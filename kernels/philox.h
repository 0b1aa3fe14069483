/* Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3",
 * SC'11) and the normal sampler built on it. Counter-based: element i of
 * kb.randn(shape, dtype, seed) depends only on (seed, i), so the CPU twin and
 * the CUDA kernel produce the same stream without sharing state.
 *
 * Element pair j = i / 2 uses counter (j_lo, j_hi, 0, 0) and key (seed_lo,
 * seed_hi); the four 32-bit outputs make two 64-bit uniforms in (0, 1), and
 * Box-Muller in double turns them into elements 2j (cos branch) and 2j+1 (sin
 * branch). The double result is rounded to f32 first, then to the tensor's
 * dtype, on both backends; libm and CUDA's double sin/cos/log/sqrt differ by
 * at most an ulp of double, which the f32 rounding absorbs almost always. */
#ifndef KB_PHILOX_H
#define KB_PHILOX_H

#include <math.h>
#include <stdint.h>

#ifdef __CUDACC__
#define KB_HD __host__ __device__ __forceinline__
#else
#define KB_HD static inline
#endif

KB_HD void kb_philox_mulhilo(uint32_t a, uint32_t b, uint32_t *hi, uint32_t *lo) {
  uint64_t p = (uint64_t)a * b;
  *hi = (uint32_t)(p >> 32);
  *lo = (uint32_t)p;
}

KB_HD void kb_philox4x32_10(const uint32_t ctr_in[4], uint32_t k0, uint32_t k1, uint32_t out[4]) {
  uint32_t c0 = ctr_in[0], c1 = ctr_in[1], c2 = ctr_in[2], c3 = ctr_in[3];
  for (int r = 0; r < 10; r++) {
    uint32_t hi0, lo0, hi1, lo1;
    kb_philox_mulhilo(0xD2511F53u, c0, &hi0, &lo0);
    kb_philox_mulhilo(0xCD9E8D57u, c2, &hi1, &lo1);
    uint32_t n0 = hi1 ^ c1 ^ k0, n2 = hi0 ^ c3 ^ k1;
    c0 = n0; c1 = lo1; c2 = n2; c3 = lo0;
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  out[0] = c0; out[1] = c1; out[2] = c2; out[3] = c3;
}

/* 64 random bits -> uniform double in (0, 1): never 0, so log() is finite. */
KB_HD double kb_philox_u01(uint32_t hi, uint32_t lo) {
  uint64_t bits = ((uint64_t)hi << 32 | lo) >> 11; /* 53 bits */
  return ((double)bits + 0.5) * (1.0 / 9007199254740992.0);
}

/* The standard normal pair for pair index j of stream `seed`. */
KB_HD void kb_philox_normal2(uint64_t seed, uint64_t j, double *z0, double *z1) {
  uint32_t ctr[4] = {(uint32_t)j, (uint32_t)(j >> 32), 0u, 0u}, r[4];
  kb_philox4x32_10(ctr, (uint32_t)seed, (uint32_t)(seed >> 32), r);
  double u1 = kb_philox_u01(r[0], r[1]), u2 = kb_philox_u01(r[2], r[3]);
  double rad = sqrt(-2.0 * log(u1)), th = 6.283185307179586 * u2;
  *z0 = rad * cos(th);
  *z1 = rad * sin(th);
}

#endif
