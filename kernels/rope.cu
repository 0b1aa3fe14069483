/* CUDA twin of the RoPE kernels (rope.h).
 *
 * Fused kernel (one launch for q and k). A token's q heads and k heads form
 * one row of H = Hq + Hk heads of D elements, all rotated by the token's
 * (cos, sin) row. A unit of work is one vector of NV elements at a fixed
 * position in a head (for neox: the vector at e and its partner at e + D/2).
 * A CTA is a grid of XS columns (unit positions within a head) by rows;
 * rows are grouped into TPC tokens of R = ceil(H / U) rows each, and row r of
 * a token takes heads r, r + R, r + 2R, ... (U of them). So a thread's unit
 * position, hence its slice of the (cos, sin) row, is the same for every head
 * it touches, and it issues all U 16-byte loads of its heads before the first
 * use (predicated, no branches between them). The table slice: llama4's f32
 * pairs (NV floats) are loaded once per token and kept in registers; neox's
 * cos and sin (the first half of the row, in the tensors' dtype, a vector
 * each, at the same offset as the unit's first vector) are loaded after each
 * group's data loads, so that nothing waits on them before the data is in
 * flight, and widened once for the group. Consecutive threads take
 * consecutive vectors of one head, then consecutive heads, so a warp reads and writes whole
 * contiguous lines (NV is the widest vector that divides the head and the
 * pointers' alignment; D = 2 or 6 fall back to narrower vectors).
 * The grid has one CTA per group of TPC tokens (no persistent loop: measured
 * faster on the H200, docs/perf-notes.md at 7f5c7f0), TPC chosen to fill up to 256
 * threads while keeping at least two CTAs per SM for small problems. U is 8
 * (neox: 4 pairs) where the call is bound by bandwidth; where it is bound
 * by latency, the fewest units per thread that keep to about 640 threads per
 * SM, in token groups that fit one wave (launch_fused_dir). The CTA is a 3-D
 * block (columns, rows, tokens). blockIdx.y is the pass: `full` runs the
 * forward of (q, k) and the backward of (dq, dk) in one launch; the
 * direction is a sign XORed into sin, so both passes share one kernel.
 *
 * Flat kernel: 2-byte dtypes in 16-byte vectors short of the bandwidth-bound
 * sizes: units numbered flat over q and k, one a thread (kFlatThreads,
 * kFlatVpt; docs/perf-notes.md at 7f5c7f0, "The flat kernel"); neox loads
 * its unit's cos and sin vectors (16 bytes each) right after its data.
 *
 * Floor kernel (rope.h): the fused call's bytes moved by one flat copy in
 * one launch, the yardstick the fused kernels are measured against: q and
 * k copied, and the table bytes the fused kernels read (neox: half rows,
 * a strided segment) read.
 *
 * Arithmetic: f32 (f64 for f64 tensors) with explicitly rounded products and
 * sums (__fmul_rn / __fadd_rn cannot be contracted into FMAs), so the result
 * is bit-identical to the CPU twin; one rounding to the output dtype.
 *
 * Reference kernels: PyTorch eager's op sequence (rope.h), one simple
 * elementwise kernel per op with temporaries in the caller's scratch. */
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <stdio.h>
#include "rope.h"

namespace {

constexpr int kThreads = 256; /* fused and floor CTA size, at most */
constexpr int kRefThreads = 256;

/* ---- errors --------------------------------------------------------------- */

thread_local char g_msg[320];

const char *fail(const char *what, const char *detail, cudaError_t e) {
  snprintf(g_msg, sizeof g_msg, "%s%s: %s (%s)", what, detail, cudaGetErrorName(e),
           cudaGetErrorString(e));
  return g_msg;
}

#define KB_CUDA_TRY(what, detail, call)                                                        \
  do {                                                                                         \
    cudaError_t e_ = (call);                                                                   \
    if (e_ != cudaSuccess) return fail((what), (detail), e_);                                  \
  } while (0)

/* ---- element types --------------------------------------------------------- */

template <kb_dtype DT> struct Elem;
template <> struct Elem<KB_BF16> {
  typedef unsigned short raw;
  typedef float acc;
  static __device__ __forceinline__ float widen(raw r) { return __uint_as_float((unsigned)r << 16); }
  static __device__ __forceinline__ raw narrow(float f) {
    return __bfloat16_as_ushort(__float2bfloat16_rn(f));
  }
};
template <> struct Elem<KB_F16> {
  typedef unsigned short raw;
  typedef float acc;
  static __device__ __forceinline__ float widen(raw r) { return __half2float(__ushort_as_half(r)); }
  static __device__ __forceinline__ raw narrow(float f) { return __half_as_ushort(__float2half_rn(f)); }
};
template <> struct Elem<KB_F32> {
  typedef float raw;
  typedef float acc;
  static __device__ __forceinline__ float widen(raw r) { return r; }
  static __device__ __forceinline__ raw narrow(float f) { return f; }
};
template <> struct Elem<KB_F64> {
  typedef double raw;
  typedef double acc;
  static __device__ __forceinline__ double widen(raw r) { return r; }
  static __device__ __forceinline__ raw narrow(double f) { return f; }
};

__device__ __forceinline__ float mul_rn(float a, float b) { return __fmul_rn(a, b); }
__device__ __forceinline__ double mul_rn(double a, double b) { return __dmul_rn(a, b); }
__device__ __forceinline__ float add_rn(float a, float b) { return __fadd_rn(a, b); }
__device__ __forceinline__ double add_rn(double a, double b) { return __dadd_rn(a, b); }
__device__ __forceinline__ float sub_rn(float a, float b) { return __fsub_rn(a, b); }
__device__ __forceinline__ double sub_rn(double a, double b) { return __dsub_rn(a, b); }

/* (re, im) * (c + i s) with each product and sum rounded, in the order of
 * the CPU twin: re' = re*c - im*s, im' = re*s + im*c. */
template <typename A>
__device__ __forceinline__ void rotate(A &re, A &im, A c, A s) {
  const A r = sub_rn(mul_rn(re, c), mul_rn(im, s));
  const A i = add_rn(mul_rn(re, s), mul_rn(im, c));
  re = r;
  im = i;
}

/* NV elements of R moved as one access of NV * sizeof(R) bytes (2 to 16),
 * kept as raw 32-bit words until they are used so that a load's result is
 * not touched (unpacked) before all the loads of a pass are issued. */
template <int BYTES> struct alignas(BYTES) Words { unsigned w[BYTES / 4]; };
template <> struct alignas(2) Words<2> { unsigned short h; };

template <typename R, int NV> struct Vec {
  typedef Words<(int)sizeof(R) * NV> type;
  static __device__ __forceinline__ R get(const type &v, int j) {
    if constexpr (sizeof(R) * NV == 2) {
      return v.h;
    } else if constexpr (sizeof(R) == 2) {
      return (R)(v.w[j >> 1] >> (16 * (j & 1)));
    } else if constexpr (sizeof(R) == 4) {
      return __uint_as_float(v.w[j]);
    } else {
      return __hiloint2double((int)v.w[2 * j + 1], (int)v.w[2 * j]);
    }
  }
  static __device__ __forceinline__ void set(type &v, int j, R x) {
    if constexpr (sizeof(R) * NV == 2) {
      v.h = x;
    } else if constexpr (sizeof(R) == 2) {
      const unsigned sh = 16 * (j & 1);
      v.w[j >> 1] = (v.w[j >> 1] & ~(0xffffu << sh)) | ((unsigned)x << sh);
    } else if constexpr (sizeof(R) == 4) {
      v.w[j] = __float_as_uint(x);
    } else {
      v.w[2 * j] = (unsigned)__double2loint(x);
      v.w[2 * j + 1] = (unsigned)__double2hiint(x);
    }
  }
};

/* Loads and stores of one vector of q/k data. */
template <typename W> __device__ __forceinline__ W load_words(const char *p) {
  return *reinterpret_cast<const W *>(p);
}

template <typename W> __device__ __forceinline__ void store_words(char *p, const W &w) {
  *reinterpret_cast<W *>(p) = w;
}

/* NF floats of the (cos, sin) row through the read-only path, 16 or 8 bytes
 * at a time (NF is 2 or a multiple of 4; the address is NF*4-aligned). */
template <int NF> __device__ __forceinline__ void load_freqs(const float *p, float (&f)[NF]) {
  if constexpr (NF % 4 == 0) {
#pragma unroll
    for (int j = 0; j < NF / 4; j++) {
      const float4 v = __ldg(reinterpret_cast<const float4 *>(p) + j);
      f[4 * j] = v.x; f[4 * j + 1] = v.y; f[4 * j + 2] = v.z; f[4 * j + 3] = v.w;
    }
  } else {
    static_assert(NF == 2, "freqs slice of 2 or a multiple of 4 floats");
    const float2 v = __ldg(reinterpret_cast<const float2 *>(p));
    f[0] = v.x; f[1] = v.y;
  }
}

/* ---- fused kernel ------------------------------------------------------------ */

/* One pass of the fused kernel: its tensors. */
struct Pass {
  const void *q, *k;
  void *qo, *ko;
};

/* 128 bytes at most: a larger parameter block is read through a pointer
 * inside the loops (measured in the PTX of CUDA 13's nvcc), which changed
 * the llama4 kernels' code; so cos shares freqs' place. */
struct FusedGeom {
  Pass pass[2]; /* blockIdx.y picks one: two for `full` (forward, backward) */
  union {
    const float *freqs; /* llama4 */
    const void *cos;    /* neox: rows of D elements of the tensors' dtype, as sin */
  };
  long long ntok, seq;  /* seq: the table's period, token t takes row t % seq */
  int hq, hk, htot, d;
  int units;  /* units per head: D/NV (llama4), D/2/NV (neox) */
  int xs;     /* columns of the CTA: min(units, 256) */
  int rows;   /* rows per token, R */
  int tpc;    /* tokens per CTA step */
  const void *sin; /* neox */
};
static_assert(sizeof(FusedGeom) <= 128, "FusedGeom: see its comment");

/* DIR: kForward, kBackward (one pass), or kFull (blockIdx.y: pass 0 the
 * forward, pass 1 the backward). A one-pass kernel reads its pointers from
 * the constant bank and folds the backward's negated sin into its
 * multiplies, as before full existed. MINB: CTAs per SM promised to the
 * register allocator (launch_fused_u says which). */
enum { kForward = 0, kBackward = 1, kFull = 2 };

template <kb_dtype DT, int NV, int STYLE, int U, int DIR, int MINB>
__global__ void __launch_bounds__(kThreads, MINB) rope_fused_kernel(const FusedGeom g) {
  typedef Elem<DT> E;
  typedef typename E::raw R;
  typedef typename E::acc A;
  typedef Vec<R, NV> V;
  typedef typename V::type W;
  constexpr bool NEOX = STYLE == KB_ROPE_NEOX;
  constexpr int NF = NEOX ? 1 : NV; /* llama4: floats of freqs per unit */

  const bool second = DIR == kFull && blockIdx.y == 1, bwd = DIR == kBackward || second;
  /* chosen field by field: indexing the parameter array would copy it to
   * local memory */
  const Pass ps = {second ? g.pass[1].q : g.pass[0].q, second ? g.pass[1].k : g.pass[0].k,
                   second ? g.pass[1].qo : g.pass[0].qo, second ? g.pass[1].ko : g.pass[0].ko};
  /* blockDim = (xs, rows, tpc): no division before the first load */
  const int x0 = threadIdx.x, r = threadIdx.y, tl = threadIdx.z;
  const unsigned hbytes = (unsigned)g.d * sizeof(R), half_bytes = hbytes / 2;

  for (long long tok = (long long)blockIdx.x * g.tpc + tl; tok < g.ntok;
       tok += (long long)gridDim.x * g.tpc) {
    const long long s = tok < g.seq ? tok
                        : g.ntok <= 0xffffffffLL ? (long long)((unsigned)tok % (unsigned)g.seq)
                                                 : tok % g.seq;
    const float *frow = g.freqs + s * g.d;
    /* neox: the offset of the token's cos and sin rows, whose first halves line up with q's */
    const long long trow = s * hbytes;
    /* the token's q heads and k heads; offsets within them fit 32 bits */
    const char *qb = (const char *)ps.q + tok * g.hq * hbytes;
    const char *kb = (const char *)ps.k + tok * g.hk * hbytes;
    char *qob = (char *)ps.qo + tok * g.hq * hbytes;
    char *kob = (char *)ps.ko + tok * g.hk * hbytes;
    for (int x = x0; x < g.units; x += g.xs) {
      float f[NF];
      if constexpr (!NEOX) {
        load_freqs<NF>(frow + x * NF, f);
#pragma unroll
        for (int j = 1; j < NF; j += 2) f[j] = bwd ? -f[j] : f[j];
      }
      const unsigned e0 = (unsigned)x * NV * sizeof(R);
      for (int h0 = r; h0 < g.htot; h0 += U * g.rows) {
        W lo[U], hi[U], cw, sw;
        unsigned off[U];
        bool isq[U];
#pragma unroll
        for (int u = 0; u < U; u++) {
          const int h = h0 + u * g.rows;
          isq[u] = h < g.hq;
          off[u] = (unsigned)(isq[u] ? h : h - g.hq) * hbytes + e0;
          if (h < g.htot) {
            const char *src = (isq[u] ? qb : kb) + off[u];
            lo[u] = load_words<W>(src);
            if constexpr (NEOX) hi[u] = load_words<W>(src + half_bytes);
          }
        }
        if constexpr (NEOX) {
          /* after the data loads, raw until used: no wait before them, and
           * (plain loads under the loop's stores) not hoisted above them */
          cw = load_words<W>((const char *)g.cos + (trow + e0));
          sw = load_words<W>((const char *)g.sin + (trow + e0));
        }
        A t[NEOX ? 2 * NV : 1]; /* neox: (cos, sin) pairs, widened once for the U heads */
        if constexpr (NEOX) {
#pragma unroll
          for (int j = 0; j < NV; j++) {
            const A sn = E::widen(V::get(sw, j));
            t[2 * j] = E::widen(V::get(cw, j));
            t[2 * j + 1] = bwd ? -sn : sn;
          }
        }
#pragma unroll
        for (int u = 0; u < U; u++) {
          if (h0 + u * g.rows < g.htot) {
            if constexpr (NEOX) {
#pragma unroll
              for (int j = 0; j < NV; j++) {
                A re = E::widen(V::get(lo[u], j)), im = E::widen(V::get(hi[u], j));
                rotate<A>(re, im, t[2 * j], t[2 * j + 1]);
                V::set(lo[u], j, E::narrow(re));
                V::set(hi[u], j, E::narrow(im));
              }
            } else {
#pragma unroll
              for (int j = 0; j < NV / 2; j++) {
                A re = E::widen(V::get(lo[u], 2 * j)), im = E::widen(V::get(lo[u], 2 * j + 1));
                rotate<A>(re, im, (A)f[2 * j], (A)f[2 * j + 1]);
                V::set(lo[u], 2 * j, E::narrow(re));
                V::set(lo[u], 2 * j + 1, E::narrow(im));
              }
            }
            char *dst = (isq[u] ? qob : kob) + off[u];
            store_words<W>(dst, lo[u]);
            if constexpr (NEOX) store_words<W>(dst + half_bytes, hi[u]);
          }
        }
      }
    }
  }
}

/* ---- flat kernel --------------------------------------------------------------- */
/* Calls short of the bandwidth-bound sizes (docs/perf-notes.md at 7f5c7f0, "The flat kernel"; launch_fused_dir
 * says which). Units (llama4: one 16-byte vector; neox: a vector and its partner D/2 on) are
 * numbered flat, q's then k's; a CTA of T threads takes T * VPT consecutive units, thread t units
 * t, t + T, ..., so a warp's accesses are contiguous runs. Every load of a thread is issued into
 * registers before the first use. Production runs VPT 1 (kFlatVpt); bench/rope_tune.cu at 7f5c7f0 times the
 * others, all measured slower, and a variant staged in shared memory with cp.async, slower still
 * (docs/perf-notes.md at 7f5c7f0). Each thread rotates what it loaded itself (no barrier). The math is the
 * fused kernel's, so the bits are the CPU twin's. 16-byte vectors only; offsets in 32 bits (the
 * host launches it only when one tensor's bytes fit). */
struct FlatGeom {
  Pass pass[2];
  const float *freqs;     /* llama4 */
  unsigned nq_u, total_u; /* q's units; q's and k's */
  unsigned uph;           /* units per head */
  unsigned hq, hk, d, seq; /* seq: the table's period */
  bool batched;           /* more tokens than the period: the table row is token % seq */
  const void *cos, *sin;  /* neox (last: the llama4 kernels' offsets as before) */
};

/* Unit u (< total_u): of q or of k, its head (counted over the tensor's tokens) and its place x
 * in the head. */
struct FlatUnit {
  bool isq;
  unsigned head, x;
};
__device__ __forceinline__ FlatUnit flat_unit(const FlatGeom &g, unsigned u) {
  FlatUnit n;
  n.isq = u < g.nq_u;
  const unsigned uu = n.isq ? u : u - g.nq_u;
  n.head = uu / g.uph;
  n.x = uu - n.head * g.uph;
  return n;
}

template <kb_dtype DT, int NV, int STYLE, int DIR, int VPT>
__global__ void __launch_bounds__(kThreads) rope_flat_kernel(const FlatGeom g) {
  typedef Elem<DT> E;
  typedef typename E::raw R;
  typedef typename E::acc A;
  typedef Vec<R, NV> V;
  typedef typename V::type W;
  static_assert(sizeof(W) == 16, "the flat kernel moves 16-byte vectors");
  constexpr bool NEOX = STYLE == KB_ROPE_NEOX;
  constexpr int NW = NEOX ? 2 : 1;        /* vectors per unit */
  constexpr int NF = NV;                  /* llama4: floats of freqs per unit */
  const bool second = DIR == kFull && blockIdx.y == 1, bwd = DIR == kBackward || second;
  const Pass ps = {second ? g.pass[1].q : g.pass[0].q, second ? g.pass[1].k : g.pass[0].k,
                   second ? g.pass[1].qo : g.pass[0].qo, second ? g.pass[1].ko : g.pass[0].ko};
  const unsigned T = blockDim.x, t = threadIdx.x;
  const unsigned u0 = blockIdx.x * T * VPT + t;
  const unsigned hbytes = g.d * (unsigned)sizeof(R), half_bytes = hbytes / 2;
  W reg[VPT][NW], tab[VPT][NEOX ? 2 : 1]; /* neox: the unit's cos and sin, raw */
  unsigned off[VPT]; /* byte offset of the unit's first vector in its tensor */
#pragma unroll
  for (int v = 0; v < VPT; v++) {
    const unsigned u = u0 + v * T;
    if (u < g.total_u) {
      const FlatUnit n = flat_unit(g, u);
      off[v] = n.head * hbytes + n.x * 16;
      const char *src = (const char *)(n.isq ? ps.q : ps.k) + off[v];
#pragma unroll
      for (int w = 0; w < NW; w++) reg[v][w] = load_words<W>(src + w * half_bytes);
      if constexpr (NEOX) {
        /* the first half of the table row lines up with the unit's first vector */
        const unsigned tok = n.head / (n.isq ? g.hq : g.hk), s = g.batched ? tok % g.seq : tok;
        const unsigned toff = s * hbytes + n.x * 16;
        tab[v][0] = load_words<W>((const char *)g.cos + toff);
        tab[v][1] = load_words<W>((const char *)g.sin + toff);
      }
    }
  }
#pragma unroll
  for (int v = 0; v < VPT; v++) {
    const unsigned u = u0 + v * T;
    if (u < g.total_u) {
      const FlatUnit n = flat_unit(g, u);
      W lo = reg[v][0], hi;
      if constexpr (NEOX) {
        hi = reg[v][1];
#pragma unroll
        for (int j = 0; j < NV; j++) {
          A re = E::widen(V::get(lo, j)), im = E::widen(V::get(hi, j));
          const A c = E::widen(V::get(tab[v][0], j)), sn = E::widen(V::get(tab[v][1], j));
          rotate<A>(re, im, c, bwd ? -sn : sn);
          V::set(lo, j, E::narrow(re));
          V::set(hi, j, E::narrow(im));
        }
      } else {
        const unsigned tok = n.head / (n.isq ? g.hq : g.hk), s = g.batched ? tok % g.seq : tok;
        float f[NF];
        load_freqs<NF>(g.freqs + (size_t)s * g.d + n.x * NF, f);
#pragma unroll
        for (int j = 1; j < NF; j += 2) f[j] = bwd ? -f[j] : f[j];
#pragma unroll
        for (int j = 0; j < NV / 2; j++) {
          A re = E::widen(V::get(lo, 2 * j)), im = E::widen(V::get(lo, 2 * j + 1));
          rotate<A>(re, im, (A)f[2 * j], (A)f[2 * j + 1]);
          V::set(lo, 2 * j, E::narrow(re));
          V::set(lo, 2 * j + 1, E::narrow(im));
        }
      }
      char *dst = (char *)(n.isq ? ps.qo : ps.ko) + off[v];
      store_words<W>(dst, lo);
      if constexpr (NEOX) store_words<W>(dst + half_bytes, hi);
    }
  }
}

/* ---- floor kernel ------------------------------------------------------------ */
/* The floor (rope.h): one launch over a list of byte segments, each copied
 * (dst set) or only read (dst NULL: the table), in words of WB bytes. A read
 * segment may be strided (run > 0: runs of `run` words, `stride` words
 * apart: the first halves of neox's cos and sin rows). Thread
 * i of T takes words i, i + T, ..., i + (V-1) T of the concatenated segments,
 * all V loads issued before the first store, so a warp's every access is
 * one contiguous run and a grid that covers the words makes one pass. The
 * words read and not copied are XOR-folded; a fold equal to an arbitrary
 * constant is stored to the scratch word, which keeps the loads in the
 * program at the cost of one compare (such a store is rare and harmless: the
 * scratch is no output). */
constexpr int kFloorSegs = 8; /* per pass q, k and the table (freqs, or cos and sin), two passes */
constexpr unsigned kFloorMagic = 0x9e3779b9u;

struct FloorGeom {
  const char *src[kFloorSegs];
  char *dst[kFloorSegs];
  unsigned long long end[kFloorSegs]; /* cumulative word counts */
  unsigned long long run, stride;     /* of the read segments, in words; run 0: contiguous */
  int nseg;
  unsigned *sink;
};

template <int WB> struct FloorWord;
template <> struct FloorWord<16> { typedef uint4 type; static __device__ unsigned fold(uint4 v) { return v.x ^ v.y ^ v.z ^ v.w; } };
template <> struct FloorWord<8> { typedef uint2 type; static __device__ unsigned fold(uint2 v) { return v.x ^ v.y; } };
template <> struct FloorWord<4> { typedef unsigned type; static __device__ unsigned fold(unsigned v) { return v; } };
template <> struct FloorWord<2> { typedef unsigned short type; static __device__ unsigned fold(unsigned short v) { return v; } };

template <int WB, int V, typename I>
__global__ void __launch_bounds__(kThreads) rope_floor_kernel(const FloorGeom g) {
  typedef typename FloorWord<WB>::type T;
  const I total = (I)g.end[g.nseg - 1];
  const I nthreads = (I)gridDim.x * blockDim.x;
  const I i0 = (I)blockIdx.x * blockDim.x + threadIdx.x;
  T w[V];
  int seg[V];
  I idx[V];
#pragma unroll
  for (int v = 0; v < V; v++) {
    const I i = i0 + v * nthreads;
    int sg = 0;
#pragma unroll
    for (int j = 0; j < kFloorSegs - 1; j++) sg += j < g.nseg - 1 && i >= (I)g.end[j];
    seg[v] = sg;
    idx[v] = i - (sg ? (I)g.end[sg - 1] : 0);
    I at = idx[v];
    if (g.run && !g.dst[sg]) at = at / (I)g.run * (I)g.stride + at % (I)g.run;
    if (i < total) w[v] = reinterpret_cast<const T *>(g.src[sg])[at];
  }
  unsigned acc = 0;
#pragma unroll
  for (int v = 0; v < V; v++) {
    if (i0 + v * nthreads < total) {
      char *d = g.dst[seg[v]];
      if (d) reinterpret_cast<T *>(d)[idx[v]] = w[v];
      else acc ^= FloorWord<WB>::fold(w[v]);
    }
  }
  if (acc == kFloorMagic) *g.sink = acc;
}

/* ---- per-device facts ---------------------------------------------------- */

constexpr int kMaxDevices = 64;

const char *sm_count(int *out) {
  static int cache[kMaxDevices];
  int dev;
  KB_CUDA_TRY("rope: cudaGetDevice", "", cudaGetDevice(&dev));
  if (dev >= 0 && dev < kMaxDevices && cache[dev] > 0) {
    *out = cache[dev];
    return NULL;
  }
  int n;
  KB_CUDA_TRY("rope: cudaDeviceGetAttribute", "(MultiProcessorCount)",
              cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, dev));
  if (dev >= 0 && dev < kMaxDevices) cache[dev] = n;
  *out = n;
  return NULL;
}

/* ---- host side of the fused kernel ---------------------------------------- */

const char *style_name(int style) { return style == KB_ROPE_NEOX ? "neox" : "llama4"; }

/* How a fused launch is shaped (launch_fused_dir): U, the units (llama4:
 * vectors, neox: vector pairs) of one thread per pass; spread, the fewest
 * CTAs per SM that grouping tokens into a CTA may leave; max_tpc, a cap on
 * the tokens of one CTA (0: none). */
struct Plan {
  int u, spread, max_tpc;
};

int choose_shape(FusedGeom *g, const Plan &p, int sms) {
  g->xs = g->units < kThreads ? g->units : kThreads;
  const int ytot = kThreads / g->xs;
  int rows = (g->htot + p.u - 1) / p.u;
  if (rows > ytot) rows = ytot;
  long long tpc = ytot / rows;
  if (tpc > 64) tpc = 64; /* blockDim.z limit */
  const long long want = (long long)p.spread * sms;
  const long long spread = (g->ntok + want - 1) / want;
  if (tpc > spread) tpc = spread;
  if (p.max_tpc > 0 && tpc > p.max_tpc) tpc = p.max_tpc;
  if (tpc < 1) tpc = 1;
  g->rows = rows;
  g->tpc = (int)tpc;
  return g->xs * rows * g->tpc;
}

/* The launch bound of the kernel for U: MINB 3 (at most 85 registers)
 * measured best for the large kernels, except where it spills (2-byte neox
 * with NV = 8 and four pairs in flight). */
template <kb_dtype DT, int NV, int STYLE, int U> constexpr int min_blocks() {
  return sizeof(typename Elem<DT>::raw) == 2 && NV == 8 && STYLE == KB_ROPE_NEOX && U >= 4 ? 1 : 3;
}

template <kb_dtype DT, int NV, int STYLE, int U, int DIR>
const char *launch_fused_u(FusedGeom g, const Plan &p, cudaStream_t stream) {
  constexpr int npass = DIR == kFull ? 2 : 1;
  auto kernel = rope_fused_kernel<DT, NV, STYLE, U, DIR, min_blocks<DT, NV, STYLE, U>()>;
  char what[96];
  snprintf(what, sizeof what, "rope_fused<%s,%s,%s,U=%d>", kb_dtype_name(DT), style_name(STYLE),
           DIR == kFull ? "fwd_bwd" : DIR == kBackward ? "bwd" : "fwd", U);
  int sms;
  const char *err = sm_count(&sms);
  if (err) return err;
  choose_shape(&g, p, sms);
  const long long chunks = (g.ntok + g.tpc - 1) / g.tpc;
  /* gridDim.x limit; CTAs stride beyond it */
  const unsigned grid = (unsigned)(chunks < 0x7fffffffLL ? chunks : 0x7fffffffLL);
  kernel<<<dim3(grid, (unsigned)npass), dim3(g.xs, g.rows, g.tpc), 0, stream>>>(g);
  KB_CUDA_TRY(what, " launch", cudaGetLastError());
  return NULL;
}

/* The largest token group (at most p's) with which the call runs in one wave,
 * no more CTAs than the SMs hold at once, or 0 when none does. The occupancy
 * of each CTA size is asked once. */
template <kb_dtype DT, int NV, int STYLE, int U, int DIR>
const char *one_wave_tpc(FusedGeom g, Plan p, int sms, int *tpc) {
  static int occupancy[kThreads + 1];
  choose_shape(&g, p, sms);
  *tpc = 0;
  for (int t = g.tpc; t >= 1; t--) {
    p.max_tpc = t;
    const int threads = choose_shape(&g, p, sms);
    if (occupancy[threads] == 0) {
      int n = 0;
      KB_CUDA_TRY("rope_fused", " cudaOccupancyMaxActiveBlocksPerMultiprocessor",
                  cudaOccupancyMaxActiveBlocksPerMultiprocessor(
                      &n, rope_fused_kernel<DT, NV, STYLE, U, DIR, min_blocks<DT, NV, STYLE, U>()>,
                      threads, 0));
      occupancy[threads] = n > 0 ? n : 1;
    }
    const long long ctas = (g.ntok + g.tpc - 1) / g.tpc * (DIR == kFull ? 2 : 1);
    if (ctas <= (long long)sms * occupancy[threads]) {
      *tpc = t;
      return NULL;
    }
  }
  return NULL;
}

template <kb_dtype DT, int NV, int STYLE, int U, int DIR>
const char *launch_small(const FusedGeom &g, int sms, cudaStream_t stream) {
  Plan p = {U, 2, 0};
  int tpc;
  const char *err = one_wave_tpc<DT, NV, STYLE, U, DIR>(g, p, sms, &tpc);
  if (err) return err;
  p.max_tpc = tpc; /* 0 (no one-wave shape): the widest CTAs */
  return launch_fused_u<DT, NV, STYLE, U, DIR>(g, p, stream);
}

/* The flat plan (docs/perf-notes.md at 7f5c7f0, "The flat kernel", its second and third rules): CTAs of
 * kFlatThreads threads, one unit a thread in registers, for 2-byte dtypes in 16-byte vectors (the
 * case measured). launch_fused_dir takes it for any such call of up to kFlatMaxPerSm units per SM
 * (both passes of `full` counted), where the fused plans ran 2-9 % slower than it on the H200. */
constexpr int kFlatThreads = 128, kFlatVpt = 1;

/* Launches the flat kernel when the call is its (2-byte dtype, 16-byte vectors, offsets in 32
 * bits); *taken says whether it did. */
template <kb_dtype DT, int NV, int STYLE, int DIR>
const char *try_flat(const FusedGeom &fg, cudaStream_t stream, bool *taken) {
  typedef typename Elem<DT>::raw R;
  *taken = false;
  if constexpr (sizeof(R) != 2 || NV != 8) {
    return NULL;
  } else {
    constexpr bool NEOX = STYLE == KB_ROPE_NEOX;
    constexpr int npass = DIR == kFull ? 2 : 1;
    const unsigned long long uph = (unsigned long long)(NEOX ? fg.d / 2 : fg.d) / NV;
    const unsigned long long nq_u = fg.ntok * fg.hq * uph, total_u = nq_u + fg.ntok * fg.hk * uph;
    const unsigned long long head_bytes = (unsigned long long)fg.d * sizeof(R);
    const unsigned long long per_cta = (unsigned long long)kFlatThreads * kFlatVpt;
    if (total_u == 0 || total_u > 0xffffffffULL - per_cta || fg.ntok * fg.hq * head_bytes > 0xffffffffULL ||
        fg.ntok * fg.hk * head_bytes > 0xffffffffULL)
      return NULL;
    const unsigned long long grid = (total_u + per_cta - 1) / per_cta;
    FlatGeom g = {};
    g.pass[0] = fg.pass[0];
    g.pass[1] = fg.pass[1];
    g.freqs = fg.freqs;
    g.cos = fg.cos; /* the same pointer: FusedGeom holds one of them */
    g.sin = fg.sin;
    g.nq_u = (unsigned)nq_u;
    g.total_u = (unsigned)total_u;
    g.uph = (unsigned)uph;
    g.hq = (unsigned)fg.hq;
    g.hk = (unsigned)fg.hk;
    g.d = (unsigned)fg.d;
    g.seq = (unsigned)fg.seq;
    g.batched = fg.ntok > fg.seq;
    char what[96];
    snprintf(what, sizeof what, "rope_flat<%s,%s,%s>", kb_dtype_name(DT), style_name(STYLE),
             DIR == kFull ? "fwd_bwd" : DIR == kBackward ? "bwd" : "fwd");
    rope_flat_kernel<DT, NV, STYLE, DIR, kFlatVpt>
        <<<dim3((unsigned)grid, (unsigned)npass), kFlatThreads, 0, stream>>>(g);
    KB_CUDA_TRY(what, " launch", cudaGetLastError());
    *taken = true;
    return NULL;
  }
}

/* Units per thread. A bandwidth-bound call needs 8 vectors (neox: 4 pairs)
 * in flight per thread, the large kernels. A call small enough to be bound
 * by latency runs fastest with about kThreadsPerSm threads per SM (measured
 * on the H200 at hidden 512, docs/perf-notes.md at 7f5c7f0): the fewest units per
 * thread that keep to that, in CTAs that fit one wave where they can. */
constexpr long long kThreadsPerSm = 640;
constexpr long long kFlatMaxPerSm = 32 * kThreadsPerSm;

template <kb_dtype DT, int NV, int STYLE, int DIR>
const char *launch_fused_dir(FusedGeom g, cudaStream_t stream) {
  constexpr int ULARGE = STYLE == KB_ROPE_NEOX ? 4 : 8;
  int sms;
  const char *err = sm_count(&sms);
  if (err) return err;
  g.units = (STYLE == KB_ROPE_NEOX ? g.d / 2 : g.d) / NV;
  const long long per_sm = g.ntok * g.htot * (long long)g.units * (DIR == kFull ? 2 : 1) / sms;
  if (per_sm <= kFlatMaxPerSm) {
    bool flat = false;
    err = try_flat<DT, NV, STYLE, DIR>(g, stream, &flat);
    if (err || flat) return err;
  }
  if (per_sm <= kThreadsPerSm) return launch_small<DT, NV, STYLE, 1, DIR>(g, sms, stream);
  if (per_sm <= 2 * kThreadsPerSm) return launch_small<DT, NV, STYLE, 2, DIR>(g, sms, stream);
  if (STYLE == KB_ROPE_LLAMA4 && per_sm <= 4 * kThreadsPerSm)
    return launch_small<DT, NV, STYLE, 4, DIR>(g, sms, stream);
  if (per_sm <= ULARGE * kThreadsPerSm) return launch_small<DT, NV, STYLE, ULARGE, DIR>(g, sms, stream);
  return launch_fused_u<DT, NV, STYLE, ULARGE, DIR>(g, Plan{ULARGE, 2, 0}, stream);
}

template <kb_dtype DT, int NV, int STYLE>
const char *launch_fused(const FusedGeom &g, int dir, cudaStream_t stream) {
  switch (dir) {
  case kForward: return launch_fused_dir<DT, NV, STYLE, kForward>(g, stream);
  case kBackward: return launch_fused_dir<DT, NV, STYLE, kBackward>(g, stream);
  default: return launch_fused_dir<DT, NV, STYLE, kFull>(g, stream);
  }
}

/* Widest vector (elements) that divides the unit and the alignment of every
 * pointer: llama4 needs whole pairs (NV even) and freqs aligned to its slice
 * (NV floats, 16 bytes at most), neox a divisor of D/2 with cos and sin
 * aligned as the data (their rows are D elements, a multiple of NV). */
int pick_nv(const kb_rope_args *a, int npass, size_t es) {
  const int neox = a->style == KB_ROPE_NEOX;
  const long long span = neox ? a->head_dim / 2 : a->head_dim;
  uintptr_t addr = (uintptr_t)a->q | (uintptr_t)a->k | (uintptr_t)a->q_out | (uintptr_t)a->k_out;
  if (npass == 2)
    addr |= (uintptr_t)a->dq | (uintptr_t)a->dk | (uintptr_t)a->dq_out | (uintptr_t)a->dk_out;
  if (neox) addr |= (uintptr_t)a->cos | (uintptr_t)a->sin;
  for (int nv = (int)(16 / es); nv >= 1; nv /= 2) {
    if (!neox && nv < 2) break;
    const size_t falign = nv * 4 < 16 ? nv * 4 : 16;
    if (span % nv == 0 && addr % (nv * es) == 0 && (neox || (uintptr_t)a->freqs % falign == 0)) return nv;
  }
  return 0;
}

template <kb_dtype DT, int STYLE>
const char *dispatch_nv(const FusedGeom &g, int nv, int dir, cudaStream_t s) {
  constexpr int ES = (int)sizeof(typename Elem<DT>::raw);
  constexpr bool NEOX = STYLE == KB_ROPE_NEOX;
  switch (nv) {
  case 8:
    if constexpr (ES == 2) return launch_fused<DT, 8, STYLE>(g, dir, s);
    break;
  case 4:
    if constexpr (ES <= 4) return launch_fused<DT, 4, STYLE>(g, dir, s);
    break;
  case 2: return launch_fused<DT, 2, STYLE>(g, dir, s);
  case 1:
    if constexpr (NEOX) return launch_fused<DT, 1, STYLE>(g, dir, s);
    break;
  }
  return "rope_fused: no vector width fits the head size and pointer alignment";
}

template <kb_dtype DT>
const char *dispatch_style(const kb_rope_args *a, const FusedGeom &g, int nv, int dir,
                           cudaStream_t s) {
  if (a->style == KB_ROPE_NEOX) return dispatch_nv<DT, KB_ROPE_NEOX>(g, nv, dir, s);
  return dispatch_nv<DT, KB_ROPE_LLAMA4>(g, nv, dir, s);
}

/* ---- host side of the floor kernel ----------------------------------------- */

/* Widest word that divides every segment's address and size, and `extra`. */
int floor_word(const FloorGeom &g, const unsigned long long *bytes, const unsigned long long (&extra)[2]) {
  uintptr_t bits = extra[0] | extra[1];
  for (int i = 0; i < g.nseg; i++) bits |= (uintptr_t)g.src[i] | (uintptr_t)g.dst[i] | bytes[i];
  for (int wb = 16; wb >= 2; wb /= 2)
    if (bits % wb == 0) return wb;
  return 0;
}

template <int WB, int V> const char *launch_floor_v(const FloorGeom &g, cudaStream_t st) {
  const unsigned long long total = g.end[g.nseg - 1];
  const unsigned long long threads = (total + V - 1) / V;
  const unsigned long long blocks = (threads + kThreads - 1) / kThreads;
  if (blocks > 0x7fffffffULL) return "rope_floor: the tensors are too large for one grid";
  /* 32-bit word indices when every index, plus a thread's last stride, fits */
  if (blocks * kThreads * V <= 0xffffffffULL)
    rope_floor_kernel<WB, V, unsigned><<<(unsigned)blocks, kThreads, 0, st>>>(g);
  else
    rope_floor_kernel<WB, V, unsigned long long><<<(unsigned)blocks, kThreads, 0, st>>>(g);
  KB_CUDA_TRY("rope_floor", " launch", cudaGetLastError());
  return NULL;
}

/* Words per thread, by words per SM: one while the call is latency-bound,
 * more in flight once it is bandwidth-bound (docs/perf-notes.md at 7f5c7f0). */
constexpr long long kFloorV1Work = 1LL << 40;
template <int WB> const char *launch_floor(const FloorGeom &g, cudaStream_t st) {
  int sms;
  const char *err = sm_count(&sms);
  if (err) return err;
  const long long per_sm = (long long)(g.end[g.nseg - 1] / (unsigned long long)sms);
  if (per_sm <= kFloorV1Work) return launch_floor_v<WB, 1>(g, st);
  return launch_floor_v<WB, 4>(g, st);
}

/* ---- reference kernels ------------------------------------------------------ */
/* One thread per element (or complex pair); T is the compute type (float, or
 * double for f64 tensors); I the index type, 32-bit when the tensor allows, as
 * PyTorch's elementwise kernels index. `heads` and the geometry locate the
 * (cos, sin) of an element, as a broadcast over heads (and batch) of
 * freqs[s, i] (llama4) or of cos[row, e] and sin[row, e] (neox). */

struct RefGeom {
  long long n;    /* elements of the tensor */
  long long seq;  /* llama4: the period of freqs' rows; neox: of cos's and sin's */
  int heads, d;
  float sign;     /* -1 for backward */
  const float *freqs;
  const void *cos, *sin;
};

template <typename I> __device__ __forceinline__ const float *ref_freq(const RefGeom &g, I pair) {
  const I half = (I)(g.d / 2);
  const I tok = pair / ((I)g.heads * half);
  return g.freqs + ((size_t)(tok % (I)g.seq) * half + pair % half) * 2;
}

#define KB_GRID_STRIDE(I, i, n)                                                                \
  for (I i = (I)blockIdx.x * blockDim.x + threadIdx.x; i < (I)(n); i += (I)gridDim.x * blockDim.x)

template <kb_dtype DT, typename I>
__global__ void ref_upcast(float *out, const typename Elem<DT>::raw *in, long long n) {
  KB_GRID_STRIDE(I, i, n) out[i] = Elem<DT>::widen(in[i]);
}

template <kb_dtype DT, typename I>
__global__ void ref_downcast(typename Elem<DT>::raw *out, const float *in, long long n) {
  KB_GRID_STRIDE(I, i, n) out[i] = Elem<DT>::narrow(in[i]);
}

/* llama4: out = in * freqs as complex numbers, one pair per thread */
template <typename T, typename I> __global__ void ref_cmul(T *out, const T *in, RefGeom g) {
  KB_GRID_STRIDE(I, p, g.n / 2) {
    const float *f = ref_freq<I>(g, p);
    T re = in[2 * p], im = in[2 * p + 1];
    rotate<T>(re, im, (T)f[0], (T)(g.sign * f[1]));
    out[2 * p] = re;
    out[2 * p + 1] = im;
  }
}

/* neox: out = in * cos (which = 0) or in * sin (which = 1), the table's
 * whole row broadcast over heads as PyTorch broadcasts cos[:, :, None, :] */
template <kb_dtype DT, typename T, typename I>
__global__ void ref_mul_freq(T *out, const T *in, RefGeom g, int which) {
  typedef typename Elem<DT>::raw R;
  KB_GRID_STRIDE(I, e, g.n) {
    const I row = e / (I)g.d, tok = row / (I)g.heads;
    const R *tab = (const R *)(which ? g.sin : g.cos);
    const T t = (T)Elem<DT>::widen(tab[(size_t)(tok % (I)g.seq) * g.d + (e - row * (I)g.d)]);
    out[e] = mul_rn(in[e], which ? (T)g.sign * t : t);
  }
}

/* neox: out = -in[..., D/2:] ([rows, D/2]) */
template <typename T, typename I> __global__ void ref_neg_half(T *out, const T *in, RefGeom g) {
  KB_GRID_STRIDE(I, e, g.n / 2) {
    const I half = (I)(g.d / 2), row = e / half;
    out[e] = -in[row * (I)g.d + half + (e - row * half)];
  }
}

/* neox: out = cat(neg, in[..., :D/2]) along the last axis */
template <typename T, typename I>
__global__ void ref_cat(T *out, const T *neg, const T *in, RefGeom g) {
  KB_GRID_STRIDE(I, e, g.n) {
    const I half = (I)(g.d / 2), row = e / (I)g.d, i = e - row * (I)g.d;
    out[e] = i < half ? neg[row * half + i] : in[row * (I)g.d + i - half];
  }
}

template <typename T, typename I> __global__ void ref_add(T *out, const T *x, const T *y, long long n) {
  KB_GRID_STRIDE(I, e, n) out[e] = add_rn(x[e], y[e]);
}

unsigned ref_grid(long long n) {
  const long long b = (n + kRefThreads - 1) / kRefThreads;
  return (unsigned)(b < 0x7fffffffLL ? (b > 0 ? b : 1) : 0x7fffffffLL);
}

#define KB_REF_LAUNCH(op, kernel, n, ...)                                                      \
  do {                                                                                         \
    kernel<<<ref_grid(n), kRefThreads, 0, st>>>(__VA_ARGS__);                                  \
    KB_CUDA_TRY(what, " " op " launch", cudaGetLastError());                                   \
  } while (0)

/* neox on compute-type tensors: out = A*cos + cat(-A2, A1)*sin, temps in tmp */
template <kb_dtype DT, typename T, typename I>
const char *ref_neox(const char *what, T *out, const T *A, T *tmp, const RefGeom &g,
                     cudaStream_t st) {
  T *B = tmp, *C = B + g.n, *D = C + g.n / 2, *E = D + g.n;
  KB_REF_LAUNCH("mul_freq", (ref_mul_freq<DT, T, I>), g.n, B, A, g, 0);
  KB_REF_LAUNCH("neg_half", (ref_neg_half<T, I>), g.n / 2, C, A, g);
  KB_REF_LAUNCH("cat", (ref_cat<T, I>), g.n, D, C, A, g);
  KB_REF_LAUNCH("mul_freq", (ref_mul_freq<DT, T, I>), g.n, E, D, g, 1);
  KB_REF_LAUNCH("add", (ref_add<T, I>), g.n, out, B, E, g.n);
  return NULL;
}

template <kb_dtype DT, typename T, typename I>
const char *ref_rotate(const char *what, int llama4, T *out, const T *in, T *tmp,
                       const RefGeom &g, cudaStream_t st) {
  if (llama4) {
    KB_REF_LAUNCH("cmul", (ref_cmul<T, I>), g.n / 2, out, in, g);
    return NULL;
  }
  return ref_neox<DT, T, I>(what, out, in, tmp, g, st);
}

/* One tensor (q or k) through the eager op sequence. */
template <kb_dtype DT, typename I>
const char *ref_one(const kb_rope_args *a, int heads, const void *x, void *out, void *scratch) {
  typedef typename Elem<DT>::raw R;
  const int llama4 = a->style == KB_ROPE_LLAMA4;
  const RefGeom g = {a->batch * a->seq * heads * a->head_dim, llama4 ? a->seq : a->cos_period,
                     heads, (int)a->head_dim, a->backward ? -1.0f : 1.0f, a->freqs, a->cos, a->sin};
  if (g.n == 0) return NULL;
  cudaStream_t st = (cudaStream_t)a->stream;
  char what[96];
  snprintf(what, sizeof what, "rope_reference<%s,%s,%s>", kb_dtype_name(DT),
           style_name(a->style), a->backward ? "bwd" : "fwd");
  if constexpr (DT == KB_F32 || DT == KB_F64) {
    return ref_rotate<DT, R, I>(what, llama4, (R *)out, (const R *)x, (R *)scratch, g, st);
  } else {
    float *A = (float *)scratch, *T = A + g.n;
    float *F = llama4 ? T : T + 3 * g.n + g.n / 2;
    KB_REF_LAUNCH("upcast", (ref_upcast<DT, I>), g.n, A, (const R *)x, g.n);
    const char *err = ref_rotate<DT, float, I>(what, llama4, F, A, T, g, st);
    if (err) return err;
    KB_REF_LAUNCH("downcast", (ref_downcast<DT, I>), g.n, (R *)out, F, g.n);
    return NULL;
  }
}

/* 32-bit indices when every index (plus a grid stride) fits */
template <kb_dtype DT> const char *ref_both(const kb_rope_args *a, void *scratch) {
  const long long h = a->q_heads > a->k_heads ? a->q_heads : a->k_heads;
  const bool small = a->batch * a->seq * h * a->head_dim < (1LL << 31);
  const char *err = small ? ref_one<DT, unsigned>(a, (int)a->q_heads, a->q, a->q_out, scratch)
                          : ref_one<DT, unsigned long long>(a, (int)a->q_heads, a->q, a->q_out, scratch);
  if (err) return err;
  return small ? ref_one<DT, unsigned>(a, (int)a->k_heads, a->k, a->k_out, scratch)
               : ref_one<DT, unsigned long long>(a, (int)a->k_heads, a->k, a->k_out, scratch);
}

} // namespace

/* One launch of the fused kernel over npass passes: the forward or backward
 * of (q, k), or (full) the forward of (q, k) and the backward of (dq, dk). */
static const char *fused_passes(const kb_rope_args *a, int npass) {
  const long long ntok = a->batch * a->seq;
  if (ntok == 0 || a->head_dim == 0 || a->q_heads + a->k_heads == 0) return NULL;
  FusedGeom g = {};
  g.pass[0] = Pass{a->q, a->k, a->q_out, a->k_out};
  if (npass == 2) g.pass[1] = Pass{a->dq, a->dk, a->dq_out, a->dk_out};
  const int dir = npass == 2 ? kFull : a->backward ? kBackward : kForward;
  const int neox = a->style == KB_ROPE_NEOX;
  if (neox) g.cos = a->cos;
  else g.freqs = a->freqs;
  g.sin = a->sin;
  g.ntok = ntok; g.seq = neox ? a->cos_period : a->seq;
  g.hq = (int)a->q_heads; g.hk = (int)a->k_heads; g.htot = g.hq + g.hk; g.d = (int)a->head_dim;
  if ((a->q_heads + a->k_heads) * a->head_dim * (long long)kb_dtype_size(a->dtype) > 0xffffffffLL)
    return "rope_fused: a token's q and k rows exceed 4 GiB";
  const int nv = pick_nv(a, npass, kb_dtype_size(a->dtype));
  if (nv == 0)
    return neox ? "rope_fused: q, k, outputs, cos and sin must be aligned to an element"
                : "rope_fused: q, k and outputs must be aligned to an element pair and freqs to 8 bytes";
  cudaStream_t s = (cudaStream_t)a->stream;
  switch (a->dtype) {
  case KB_BF16: return dispatch_style<KB_BF16>(a, g, nv, dir, s);
  case KB_F16: return dispatch_style<KB_F16>(a, g, nv, dir, s);
  case KB_F32: return dispatch_style<KB_F32>(a, g, nv, dir, s);
  case KB_F64: return dispatch_style<KB_F64>(a, g, nv, dir, s);
  default: return "rope_fused: unknown dtype";
  }
}

static const char *kb_rope_fused_cuda(const kb_rope_args *a) { return fused_passes(a, 1); }

static const char *kb_rope_full_cuda(const kb_rope_args *a) { return fused_passes(a, 2); }

/* The floor's segments: per pass q, k (copied) and the table bytes the fused
 * kernels read (read): llama4 rows [0, seq) of freqs; neox the first half of
 * rows [0, cos_period) of cos and of sin, runs of half a row a row apart. */
static const char *kb_rope_floor_cuda(const kb_rope_args *a, void *scratch) {
  const long long ntok = a->batch * a->seq;
  if (ntok == 0 || a->head_dim == 0) return NULL;
  const int neox = a->style == KB_ROPE_NEOX, per = neox ? 4 : 3;
  const unsigned long long es = kb_dtype_size(a->dtype), row = (unsigned long long)a->head_dim * es;
  const unsigned long long tab = neox ? (unsigned long long)a->cos_period * (row / 2)
                                      : (unsigned long long)a->seq * a->head_dim * sizeof(float);
  const void *src[4] = {NULL, NULL, neox ? a->cos : (const void *)a->freqs, a->sin};
  const unsigned long long size[4] = {ntok * a->q_heads * row, ntok * a->k_heads * row, tab, tab};
  FloorGeom g = {};
  unsigned long long bytes[kFloorSegs];
  const int nseg = a->dq ? 2 * per : per;
  for (int i = 0; i < nseg; i++) {
    const int j = i % per, second = i >= per;
    g.src[i] = (const char *)(j == 0 ? (second ? a->dq : a->q) : j == 1 ? (second ? a->dk : a->k) : src[j]);
    g.dst[i] = (char *)(j == 0 ? (second ? a->dq_out : a->q_out) : j == 1 ? (second ? a->dk_out : a->k_out) : NULL);
    bytes[i] = size[j];
  }
  g.nseg = nseg;
  g.sink = (unsigned *)scratch;
  /* the word must divide the runs and the stride too */
  const unsigned long long runs[2] = {neox ? row / 2 : 0, neox ? row : 0};
  const int wb = floor_word(g, bytes, runs);
  if (neox && wb) {
    g.run = row / 2 / wb;
    g.stride = row / wb;
  }
  unsigned long long words = 0;
  for (int i = 0; i < nseg; i++) g.end[i] = words += bytes[i] / (wb ? wb : 1);
  if (words == 0) return NULL;
  cudaStream_t st = (cudaStream_t)a->stream;
  switch (wb) {
  case 16: return launch_floor<16>(g, st);
  case 8: return launch_floor<8>(g, st);
  case 4: return launch_floor<4>(g, st);
  case 2: return launch_floor<2>(g, st);
  default: return "rope_floor: tensors must be aligned to 2 bytes";
  }
}

static const char *kb_rope_reference_cuda(const kb_rope_args *a, void *scratch) {
  switch (a->dtype) {
  case KB_BF16: return ref_both<KB_BF16>(a, scratch);
  case KB_F16: return ref_both<KB_F16>(a, scratch);
  case KB_F32: return ref_both<KB_F32>(a, scratch);
  case KB_F64: return ref_both<KB_F64>(a, scratch);
  default: return "rope_reference: unknown dtype";
  }
}

/* extern (rope.h declares it extern "C"): a namespace-scope const would
 * otherwise have internal linkage in C++. */
extern "C" const kb_rope_ops kb_rope_ops_cuda = {kb_rope_fused_cuda, kb_rope_reference_cuda,
                                                  kb_rope_full_cuda, kb_rope_floor_cuda};
