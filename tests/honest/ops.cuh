/* The honest corpus's CUDA kernels (tests/honest/, docs/TRUST.md): what a
 * user brings, written the way real kernels are. The same text compiles
 * under nvcc (honest.cu includes it) and under NVRTC (tests/honest/bench.lua
 * compiles it at run time with kb.cuda.compile), so it uses nothing but the
 * toolkit's cuda_bf16.h and cuda_fp16.h, and its kernels are extern "C":
 * softmax_f32, softmax_bf16, softmax_f16, ... need no name expressions.
 *
 * Numerics, the convention of real kernels: load in the dtype, accumulate in
 * f32, store rounded to the dtype (to nearest even). Inputs are row-major
 * rows x cols. A block (HONEST_BLOCK threads) takes a row at a time, rows
 * grid-strided over the blocks; its reductions are trees (warp shuffles,
 * then one value per warp through shared memory), not sequential sums.
 *
 *   softmax_T(out, x, rows, cols)          out = exp(x - max) / sum, per row
 *   layernorm_T(out, x, w, b, rows, cols)  (x - mean) / sqrt(var + 1e-5) * w + b
 *   rmsnorm_T(out, x, w, rows, cols)       x / sqrt(mean(x^2) + 1e-6) * w
 *   sum_T(out, x, rows, cols)              out[row] = sum of the row (rows elements)
 *   scan_T(out, x, rows, cols)             inclusive prefix sums along each row
 *   matmul_T(out, a, b, m, k, n)           out (m x n) = a (m x k) times b (k x n);
 *                                          HONEST_TILE x HONEST_TILE blocks, grid
 *                                          (ceil(n / TILE), ceil(m / TILE)), tile rows
 *                                          grid-strided over gridDim.y
 *
 * The launch shapes are the #defines below; bench.lua reads them from this
 * text, so that the NVRTC launches and honest.cu's agree. */
#ifndef HONEST_OPS_CUH
#define HONEST_OPS_CUH

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#define HONEST_BLOCK 256
#define HONEST_TILE 16
#define HONEST_LAYERNORM_EPS 1e-5f
#define HONEST_RMSNORM_EPS 1e-6f

#define HB_FULL 0xffffffffu
#define HB_NEG_INF __int_as_float(0xff800000) /* NVRTC has no INFINITY */

/* ---- load in the dtype, compute in f32, store rounded ---------------------------- */

__device__ __forceinline__ float hb_load(float v) { return v; }
__device__ __forceinline__ float hb_load(__nv_bfloat16 v) { return __bfloat162float(v); }
__device__ __forceinline__ float hb_load(__half v) { return __half2float(v); }

__device__ __forceinline__ void hb_put(float *p, float v) { *p = v; }
__device__ __forceinline__ void hb_put(__nv_bfloat16 *p, float v) { *p = __float2bfloat16_rn(v); }
__device__ __forceinline__ void hb_put(__half *p, float v) { *p = __float2half_rn(v); }

/* ---- block reductions: a tree in each warp, then over the warps --------------------- */

/* The block's sum of v, in every thread. sh: HONEST_BLOCK / 32 floats of
 * shared memory, free when called (the first barrier keeps a previous
 * reduction's readers safe). */
__device__ __forceinline__ float hb_block_sum(float v, float *sh) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(HB_FULL, v, o);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = (blockDim.x + 31) >> 5;
  __syncthreads();
  if (lane == 0) sh[warp] = v;
  __syncthreads();
  v = lane < warps ? sh[lane] : 0.0f;
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(HB_FULL, v, o);
  return v;
}

/* The block's maximum of v, in every thread (as hb_block_sum). */
__device__ __forceinline__ float hb_block_max(float v, float *sh) {
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(HB_FULL, v, o));
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = (blockDim.x + 31) >> 5;
  __syncthreads();
  if (lane == 0) sh[warp] = v;
  __syncthreads();
  v = lane < warps ? sh[lane] : HB_NEG_INF;
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(HB_FULL, v, o));
  return v;
}

/* ---- the operations, one row per block ------------------------------------------- */

template <typename T>
__device__ void hb_softmax(T *out, const T *x, long long rows, long long cols) {
  __shared__ float sh[32];
  for (long long r = blockIdx.x; r < rows; r += gridDim.x) {
    const T *xr = x + r * cols;
    T *yr = out + r * cols;
    float m = HB_NEG_INF;
    for (long long j = threadIdx.x; j < cols; j += blockDim.x) m = fmaxf(m, hb_load(xr[j]));
    m = hb_block_max(m, sh);
    float s = 0.0f;
    for (long long j = threadIdx.x; j < cols; j += blockDim.x) s += expf(hb_load(xr[j]) - m);
    s = hb_block_sum(s, sh);
    for (long long j = threadIdx.x; j < cols; j += blockDim.x) hb_put(&yr[j], expf(hb_load(xr[j]) - m) / s);
  }
}

template <typename T>
__device__ void hb_layernorm(T *out, const T *x, const T *w, const T *b, long long rows, long long cols) {
  __shared__ float sh[32];
  for (long long r = blockIdx.x; r < rows; r += gridDim.x) {
    const T *xr = x + r * cols;
    T *yr = out + r * cols;
    float s = 0.0f;
    for (long long j = threadIdx.x; j < cols; j += blockDim.x) s += hb_load(xr[j]);
    const float mean = hb_block_sum(s, sh) / (float)cols;
    float q = 0.0f;
    for (long long j = threadIdx.x; j < cols; j += blockDim.x) {
      const float d = hb_load(xr[j]) - mean;
      q += d * d;
    }
    const float rstd = 1.0f / sqrtf(hb_block_sum(q, sh) / (float)cols + HONEST_LAYERNORM_EPS);
    for (long long j = threadIdx.x; j < cols; j += blockDim.x)
      hb_put(&yr[j], (hb_load(xr[j]) - mean) * rstd * hb_load(w[j]) + hb_load(b[j]));
  }
}

template <typename T>
__device__ void hb_rmsnorm(T *out, const T *x, const T *w, long long rows, long long cols) {
  __shared__ float sh[32];
  for (long long r = blockIdx.x; r < rows; r += gridDim.x) {
    const T *xr = x + r * cols;
    T *yr = out + r * cols;
    float q = 0.0f;
    for (long long j = threadIdx.x; j < cols; j += blockDim.x) {
      const float v = hb_load(xr[j]);
      q += v * v;
    }
    const float rrms = 1.0f / sqrtf(hb_block_sum(q, sh) / (float)cols + HONEST_RMSNORM_EPS);
    for (long long j = threadIdx.x; j < cols; j += blockDim.x) hb_put(&yr[j], hb_load(xr[j]) * rrms * hb_load(w[j]));
  }
}

template <typename T>
__device__ void hb_sum(T *out, const T *x, long long rows, long long cols) {
  __shared__ float sh[32];
  for (long long r = blockIdx.x; r < rows; r += gridDim.x) {
    const T *xr = x + r * cols;
    float s = 0.0f;
    for (long long j = threadIdx.x; j < cols; j += blockDim.x) s += hb_load(xr[j]);
    s = hb_block_sum(s, sh);
    if (threadIdx.x == 0) hb_put(&out[r], s);
  }
}

/* Inclusive prefix sums: the row in tiles of blockDim elements, each tile
 * scanned as a tree (a shuffle scan in each warp, then over the warps'
 * totals), plus the running total of the tiles before it. */
template <typename T>
__device__ void hb_scan(T *out, const T *x, long long rows, long long cols) {
  __shared__ float sh[32];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = (blockDim.x + 31) >> 5;
  for (long long r = blockIdx.x; r < rows; r += gridDim.x) {
    const T *xr = x + r * cols;
    T *yr = out + r * cols;
    float carry = 0.0f;
    for (long long base = 0; base < cols; base += blockDim.x) {
      const long long j = base + threadIdx.x;
      float v = j < cols ? hb_load(xr[j]) : 0.0f;
      for (int o = 1; o < 32; o <<= 1) {
        const float up = __shfl_up_sync(HB_FULL, v, o);
        if (lane >= o) v += up;
      }
      __syncthreads(); /* the previous tile's readers of sh are done */
      if (lane == 31) sh[warp] = v;
      __syncthreads();
      if (warp == 0) {
        float t = lane < warps ? sh[lane] : 0.0f;
        for (int o = 1; o < 32; o <<= 1) {
          const float up = __shfl_up_sync(HB_FULL, t, o);
          if (lane >= o) t += up;
        }
        if (lane < warps) sh[lane] = t;
      }
      __syncthreads();
      if (warp > 0) v += sh[warp - 1];
      if (j < cols) hb_put(&yr[j], carry + v);
      carry += sh[warps - 1];
    }
  }
}

/* out = a b, tiled through shared memory; f32 accumulators, k in order. */
template <typename T>
__device__ void hb_matmul(T *out, const T *a, const T *b, long long m, long long k, long long n) {
  __shared__ float ta[HONEST_TILE][HONEST_TILE];
  __shared__ float tb[HONEST_TILE][HONEST_TILE];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const long long col = (long long)blockIdx.x * HONEST_TILE + tx;
  const long long tiles_m = (m + HONEST_TILE - 1) / HONEST_TILE;
  for (long long tm = blockIdx.y; tm < tiles_m; tm += gridDim.y) {
    const long long row = tm * HONEST_TILE + ty;
    float acc = 0.0f;
    for (long long k0 = 0; k0 < k; k0 += HONEST_TILE) {
      ta[ty][tx] = row < m && k0 + tx < k ? hb_load(a[row * k + k0 + tx]) : 0.0f;
      tb[ty][tx] = k0 + ty < k && col < n ? hb_load(b[(k0 + ty) * n + col]) : 0.0f;
      __syncthreads();
      for (int i = 0; i < HONEST_TILE; i++) acc += ta[ty][i] * tb[i][tx];
      __syncthreads();
    }
    if (row < m && col < n) hb_put(&out[row * n + col], acc);
  }
}

/* ---- the entry points, per dtype --------------------------------------------------- */

#define HONEST_KERNELS(sfx, T)                                                                                   \
  extern "C" __global__ void __launch_bounds__(HONEST_BLOCK)                                                     \
      softmax_##sfx(T *out, const T *x, long long rows, long long cols) {                                        \
    hb_softmax<T>(out, x, rows, cols);                                                                           \
  }                                                                                                              \
  extern "C" __global__ void __launch_bounds__(HONEST_BLOCK)                                                     \
      layernorm_##sfx(T *out, const T *x, const T *w, const T *b, long long rows, long long cols) {              \
    hb_layernorm<T>(out, x, w, b, rows, cols);                                                                   \
  }                                                                                                              \
  extern "C" __global__ void __launch_bounds__(HONEST_BLOCK)                                                     \
      rmsnorm_##sfx(T *out, const T *x, const T *w, long long rows, long long cols) {                            \
    hb_rmsnorm<T>(out, x, w, rows, cols);                                                                        \
  }                                                                                                              \
  extern "C" __global__ void __launch_bounds__(HONEST_BLOCK) sum_##sfx(T *out, const T *x, long long rows,       \
                                                                       long long cols) {                         \
    hb_sum<T>(out, x, rows, cols);                                                                               \
  }                                                                                                              \
  extern "C" __global__ void __launch_bounds__(HONEST_BLOCK) scan_##sfx(T *out, const T *x, long long rows,      \
                                                                        long long cols) {                        \
    hb_scan<T>(out, x, rows, cols);                                                                              \
  }                                                                                                              \
  extern "C" __global__ void __launch_bounds__(HONEST_TILE *HONEST_TILE)                                         \
      matmul_##sfx(T *out, const T *a, const T *b, long long m, long long k, long long n) {                      \
    hb_matmul<T>(out, a, b, m, k, n);                                                                            \
  }

HONEST_KERNELS(f32, float)
HONEST_KERNELS(bf16, __nv_bfloat16)
HONEST_KERNELS(f16, __half)

#endif
