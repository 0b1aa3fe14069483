/* Tuning harness for the fused RoPE and floor kernels (kernels/rope.cu), bf16, Liger's
 * benchmark shapes (32 q heads, 8 kv heads, head_dim = hidden / 32): times every plan the
 * kernels can take (units per thread U, the CTA spread; the floor's words per thread V)
 * beside the plan that rope.cu chooses, and checks that each plan writes the same bits.
 *
 * It includes kernels/rope.cu, so it reaches the kernels' templates directly and the
 * production dispatch is exactly the one linked into kluabench. Build (no Lua needed):
 *   nvcc -O3 -std=c++17 -gencode arch=compute_90,code=sm_90 -o build/bench/rope_tune bench/rope_tune.cu
 * Run on the GPU: build/bench/rope_tune [--samples N] [--points small|all] [--point H8192_T1024] [--no-flat]
 *   [--no-token] [--rows prod [--layout in|out]] > tune.csv
 * --rows prod: only rope's production rows and the floor's, out of place or in place (prod_rows).
 * Protocol: per sample a 2 x L2 cudaMemsetAsync (the cold mode's flush), then a CUDA event
 * pair around one launch, in place; median, p20, p80 of the samples in us. An event pair
 * with nothing between them is timed the same way ("empty") and reported, not subtracted.
 * Output: CSV on stdout (point, style, mode, variant, median_us, p20_us, p80_us, ok). */
#include "../kernels/rope.cu"

#include <algorithm>
#include <functional>
#include <stdlib.h>
#include <string.h>
#include <vector>

#define CK(call)                                                                               \
  do {                                                                                         \
    cudaError_t e_ = (call);                                                                   \
    if (e_ != cudaSuccess) {                                                                   \
      fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_));    \
      exit(1);                                                                                 \
    }                                                                                          \
  } while (0)
#define CKS(msg)                                                                               \
  do {                                                                                         \
    const char *m_ = (msg);                                                                    \
    if (m_) {                                                                                  \
      fprintf(stderr, "%s:%d %s\n", __FILE__, __LINE__, m_);                                   \
      exit(1);                                                                                 \
    }                                                                                          \
  } while (0)

namespace {

int g_samples = 60;
bool g_flat = true; /* --no-flat: leave the flat kernel's rows out */
bool g_token = true; /* --no-token: leave the token kernel's rows out */
bool g_prod_only = false; /* --rows prod: the production neox rows and the floor's only (prod_rows) */
bool g_inplace = false;   /* --layout in: those rows with each output written over its input */
void *g_flush;
size_t g_flush_bytes;
cudaStream_t g_st;

__global__ void fill_bits(unsigned short *p, size_t n, unsigned seed) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
    unsigned x = (unsigned)i * 2654435761u ^ seed;
    x ^= x >> 13; x *= 0x5bd1e995u; x ^= x >> 15;
    /* a bf16 in [-2, 2): sign, exponent 126..127, random mantissa */
    p[i] = (unsigned short)(((x & 1u) << 15) | ((126u + ((x >> 1) & 1u)) << 7) | ((x >> 2) & 0x7fu));
  }
}

__global__ void fill_freqs(float *p, size_t pairs) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < pairs; i += (size_t)gridDim.x * blockDim.x) {
    float s, c;
    sincosf((float)(i % 9973) * 0.001f, &s, &c);
    p[2 * i] = c;
    p[2 * i + 1] = s;
  }
}

__global__ void empty_kernel() {}

struct Stats { double med, p20, p80; };

template <typename F> Stats time_it(F launch) {
  cudaEvent_t a, b;
  CK(cudaEventCreate(&a));
  CK(cudaEventCreate(&b));
  for (int i = 0; i < 3; i++) launch();
  std::vector<float> t;
  for (int i = 0; i < g_samples; i++) {
    CK(cudaMemsetAsync(g_flush, i & 0xff, g_flush_bytes, g_st));
    CK(cudaEventRecord(a, g_st));
    launch();
    CK(cudaEventRecord(b, g_st));
    CK(cudaEventSynchronize(b));
    float ms;
    CK(cudaEventElapsedTime(&ms, a, b));
    t.push_back(ms * 1000.0f);
  }
  CK(cudaEventDestroy(a));
  CK(cudaEventDestroy(b));
  std::sort(t.begin(), t.end());
  const size_t n = t.size();
  return Stats{t[n / 2], t[n / 5], t[(4 * n) / 5]};
}

struct Point {
  int hidden, seq;
};

struct Bufs {
  size_t nq, nk; /* elements */
  unsigned short *q, *k, *dq, *dk, *ref_q, *ref_k, *ref_dq, *ref_dk, *out_q, *out_k, *out_dq, *out_dk;
  float *freqs;
  unsigned *sink;
};

unsigned short *alloc_bf16(size_t n) {
  void *p;
  CK(cudaMalloc(&p, n * 2 + 16));
  return (unsigned short *)p;
}

Bufs make_bufs(const Point &pt) {
  const int d = pt.hidden / 32;
  Bufs b;
  b.nq = (size_t)pt.seq * 32 * d;
  b.nk = (size_t)pt.seq * 8 * d;
  /* q and out_q hold q+k's elements: the source and target of one copy of q+k's bytes */
  unsigned short **qs[] = {&b.dq, &b.ref_q, &b.ref_dq, &b.out_dq};
  unsigned short **ks[] = {&b.k, &b.dk, &b.ref_k, &b.ref_dk, &b.out_k, &b.out_dk};
  for (auto p : qs) *p = alloc_bf16(b.nq);
  b.q = alloc_bf16(b.nq + b.nk);
  b.out_q = alloc_bf16(b.nq + b.nk);
  for (auto p : ks) *p = alloc_bf16(b.nk);
  fill_bits<<<1024, 256, 0, g_st>>>(b.q, b.nq, 1);
  fill_bits<<<1024, 256, 0, g_st>>>(b.k, b.nk, 2);
  fill_bits<<<1024, 256, 0, g_st>>>(b.dq, b.nq, 3);
  fill_bits<<<1024, 256, 0, g_st>>>(b.dk, b.nk, 4);
  CK(cudaMalloc(&b.freqs, (size_t)pt.seq * d * sizeof(float)));
  fill_freqs<<<1024, 256, 0, g_st>>>(b.freqs, (size_t)pt.seq * d / 2);
  CK(cudaMalloc(&b.sink, 16));
  CK(cudaStreamSynchronize(g_st));
  return b;
}

void free_bufs(Bufs &b) {
  void *all[] = {b.q, b.k, b.dq, b.dk, b.ref_q, b.ref_k, b.ref_dq, b.ref_dk, b.out_q, b.out_k, b.out_dq, b.out_dk, b.freqs, b.sink};
  for (void *p : all) CK(cudaFree(p));
}

kb_rope_args args_of(const Point &pt, const Bufs &b, int style, int bwd, bool full, bool to_ref) {
  kb_rope_args a;
  memset(&a, 0, sizeof a);
  a.style = (kb_rope_style)style;
  a.backward = bwd;
  a.dtype = KB_BF16;
  a.batch = 1;
  a.seq = pt.seq;
  a.q_heads = 32;
  a.k_heads = 8;
  a.head_dim = pt.hidden / 32;
  a.q = b.q; a.k = b.k;
  a.q_out = to_ref ? b.ref_q : b.out_q;
  a.k_out = to_ref ? b.ref_k : b.out_k;
  if (full) {
    a.dq = b.dq; a.dk = b.dk;
    a.dq_out = to_ref ? b.ref_dq : b.out_dq;
    a.dk_out = to_ref ? b.ref_dk : b.out_dk;
  }
  a.freqs = b.freqs;
  a.stream = g_st;
  return a;
}

__global__ void count_diff(const unsigned short *x, const unsigned short *y, size_t n, unsigned *bad) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
    if (x[i] != y[i]) atomicAdd(bad, 1u);
}

unsigned *g_bad;

bool same(const void *x, const void *y, size_t bytes) {
  CK(cudaMemsetAsync(g_bad, 0, 4, g_st));
  count_diff<<<1024, 256, 0, g_st>>>((const unsigned short *)x, (const unsigned short *)y, bytes / 2, g_bad);
  unsigned bad;
  CK(cudaMemcpyAsync(&bad, g_bad, 4, cudaMemcpyDeviceToHost, g_st));
  CK(cudaStreamSynchronize(g_st));
  return bad == 0;
}

/* poisons the outputs, runs once, compares with the reference outputs */
template <typename F> bool check(const Bufs &b, bool full, F launch, bool vs_inputs) {
  CK(cudaMemsetAsync(b.out_q, 0xff, b.nq * 2, g_st));
  CK(cudaMemsetAsync(b.out_k, 0xff, b.nk * 2, g_st));
  CK(cudaMemsetAsync(b.out_dq, 0xff, b.nq * 2, g_st));
  CK(cudaMemsetAsync(b.out_dk, 0xff, b.nk * 2, g_st));
  launch();
  CK(cudaStreamSynchronize(g_st));
  CK(cudaGetLastError());
  bool ok = same(b.out_q, vs_inputs ? b.q : b.ref_q, b.nq * 2) && same(b.out_k, vs_inputs ? b.k : b.ref_k, b.nk * 2);
  if (full) ok = ok && same(b.out_dq, vs_inputs ? b.dq : b.ref_dq, b.nq * 2) && same(b.out_dk, vs_inputs ? b.dk : b.ref_dk, b.nk * 2);
  return ok;
}

void emit(const Point &pt, const char *style, const char *mode, const char *variant, Stats s, bool ok) {
  printf("H%d_T%d,%s,%s,%s,%.3f,%.3f,%.3f,%s\n", pt.hidden, pt.seq, style, mode, variant, s.med, s.p20, s.p80,
         ok ? "ok" : "WRONG");
  fflush(stdout);
}

/* geometry as kb_rope_fused_cuda builds it, for the launches of given plans */
FusedGeom geom_of(const kb_rope_args &a, bool full, int nv) {
  FusedGeom g = {};
  g.pass[0] = Pass{a.q, a.k, a.q_out, a.k_out};
  if (full) g.pass[1] = Pass{a.dq, a.dk, a.dq_out, a.dk_out};
  g.freqs = a.freqs;
  g.ntok = a.batch * a.seq; g.seq = a.seq;
  g.hq = 32; g.hk = 8; g.htot = 40; g.d = (int)a.head_dim;
  g.units = (a.style == KB_ROPE_NEOX ? g.d / 2 : g.d) / nv;
  return g;
}

template <int STYLE, int U, int DIR>
void plan_row(const Point &pt, const Bufs &b, const char *sname, const char *mode, int spread) {
  const bool full = DIR == kFull;
  kb_rope_args a = args_of(pt, b, STYLE, DIR == kBackward, full, false);
  FusedGeom g = geom_of(a, full, 8);
  const Plan p = {U, spread, 0};
  auto launch = [&] { CKS((launch_fused_u<KB_BF16, 8, STYLE, U, DIR>(g, p, g_st))); };
  const bool ok = check(b, full, launch, false);
  char v[64];
  snprintf(v, sizeof v, "fused U=%d spread=%d", U, spread);
  emit(pt, sname, mode, v, time_it(launch), ok);
}

/* ---- the flat kernel (issue 25 finding 6) -------------------------------------------------
 * kernels/rope.cu's rope_flat_kernel at T threads and VPT units a thread (registers; the
 * cp.async-staged variant of the first run was slower at every cell and is gone from rope.cu), and
 * the flat copy: the same loads and stores with no rotation, the table's words XOR-folded as the
 * floor folds them, a floor candidate, in registers or staged with cp.async. */
__device__ __forceinline__ void cp_async16(void *smem, const void *gmem) {
  const unsigned s = (unsigned)__cvta_generic_to_shared(smem);
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(s), "l"(gmem) : "memory");
}

template <int DIR, int VPT, int STAGE>
__global__ void __launch_bounds__(kThreads) tune_flat_copy_kernel(const FlatGeom g, unsigned *sink) {
  typedef Words<16> W;
  extern __shared__ W stage[]; /* [VPT][T] */
  const bool second = DIR == kFull && blockIdx.y == 1;
  const Pass ps = {second ? g.pass[1].q : g.pass[0].q, second ? g.pass[1].k : g.pass[0].k,
                   second ? g.pass[1].qo : g.pass[0].qo, second ? g.pass[1].ko : g.pass[0].ko};
  const unsigned T = blockDim.x, t = threadIdx.x, u0 = blockIdx.x * T * VPT + t, hbytes = g.d * 2;
  W reg[VPT];
  unsigned off[VPT], acc = 0;
#pragma unroll
  for (int v = 0; v < VPT; v++) {
    const unsigned u = u0 + v * T;
    if (u < g.total_u) {
      const FlatUnit n = flat_unit(g, u);
      off[v] = n.head * hbytes + n.x * 16;
      const char *src = (const char *)(n.isq ? ps.q : ps.k) + off[v];
      if constexpr (STAGE) cp_async16(&stage[v * T + t], src);
      else reg[v] = load_words<W>(src);
    }
  }
  if constexpr (STAGE) asm volatile("cp.async.wait_all;\n" ::: "memory");
#pragma unroll
  for (int v = 0; v < VPT; v++) {
    const unsigned u = u0 + v * T;
    if (u < g.total_u) {
      const FlatUnit n = flat_unit(g, u);
      float f[8];
      load_freqs<8>(g.freqs + (size_t)(n.head / (n.isq ? g.hq : g.hk)) * g.d + n.x * 8, f);
#pragma unroll
      for (int j = 0; j < 8; j++) acc ^= __float_as_uint(f[j]);
      store_words<W>((char *)(n.isq ? ps.qo : ps.ko) + off[v], STAGE ? stage[v * T + t] : reg[v]);
    }
  }
  if (acc == kFloorMagic) *sink = acc;
}

/* The flat and token kernels' geometry at a point (the harness's 32 q and 8 kv heads, batch 1),
 * less the flat kernel's unit counts. */
template <int STYLE, int DIR> FlatGeom flat_geom_of(const Point &pt, const Bufs &b) {
  const bool full = DIR == kFull;
  const kb_rope_args a = args_of(pt, b, STYLE, DIR == kBackward, full, false);
  FlatGeom g = {};
  g.pass[0] = Pass{a.q, a.k, a.q_out, a.k_out};
  if (full) g.pass[1] = Pass{a.dq, a.dk, a.dq_out, a.dk_out};
  g.freqs = a.freqs;
  g.d = (unsigned)a.head_dim;
  g.hq = 32;
  g.hk = 8;
  g.seq = (unsigned)a.seq;
  g.uph = g.d / 8 / (STYLE == KB_ROPE_NEOX ? 2 : 1);
  return g;
}

template <int STYLE, int DIR, int VPT, int STAGE, int COPY = 0>
void flat_row(const Point &pt, const Bufs &b, const char *sname, const char *mode, unsigned T) {
  const bool full = DIR == kFull;
  constexpr bool NEOX = STYLE == KB_ROPE_NEOX;
  kb_rope_args a = args_of(pt, b, STYLE, DIR == kBackward, full, false);
  FlatGeom g = flat_geom_of<STYLE, DIR>(pt, b);
  g.nq_u = (unsigned)(a.seq * 32) * g.uph;
  g.total_u = (unsigned)(a.seq * 40) * g.uph;
  const unsigned per_cta = T * VPT, grid = (g.total_u + per_cta - 1) / per_cta;
  const size_t smem = STAGE ? (size_t)per_cta * 16 * (NEOX ? 2 : 1) : 0;
  int occ = 0, sms = 0;
  CKS(sm_count(&sms));
  std::function<void()> launch;
  if constexpr (COPY) {
    auto kernel = tune_flat_copy_kernel<DIR, VPT, STAGE>;
    if (smem > 48 * 1024) CK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
    CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ, kernel, (int)T, smem));
    launch = [=] {
      kernel<<<dim3(grid, full ? 2 : 1), T, smem, g_st>>>(g, b.sink);
      CK(cudaGetLastError());
    };
  } else {
    static_assert(!STAGE, "kernels/rope.cu's flat kernel loads into registers only");
    auto kernel = rope_flat_kernel<KB_BF16, 8, STYLE, DIR, VPT>;
    if (smem > 48 * 1024) CK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
    CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ, kernel, (int)T, smem));
    launch = [=] {
      kernel<<<dim3(grid, full ? 2 : 1), T, smem, g_st>>>(g);
      CK(cudaGetLastError());
    };
  }
  const bool ok = check(b, full, launch, COPY);
  char v[96];
  snprintf(v, sizeof v, "flat %s%s T=%u VPT=%d waves=%.2f", COPY ? "copy " : "", STAGE ? "cp.async" : "regs", T,
           VPT, (double)grid * (full ? 2 : 1) / ((double)sms * (occ > 0 ? occ : 1)));
  emit(pt, COPY ? "floor" : sname, mode, v, time_it(launch), ok);
}

template <int STYLE, int DIR> void flat_rows(const Point &pt, const Bufs &b, const char *sname, const char *mode) {
  for (unsigned T : {128u, 256u}) {
    flat_row<STYLE, DIR, 1, 0>(pt, b, sname, mode, T);
    flat_row<STYLE, DIR, 2, 0>(pt, b, sname, mode, T);
    flat_row<STYLE, DIR, 4, 0>(pt, b, sname, mode, T);
    flat_row<STYLE, DIR, 8, 0>(pt, b, sname, mode, T);
  }
}

/* The flat copy (llama4's units), a floor candidate: reported beside the floor's rows. */
template <int DIR> void flat_copy_rows(const Point &pt, const Bufs &b, const char *mode) {
  for (unsigned T : {128u, 256u}) {
    flat_row<KB_ROPE_LLAMA4, DIR, 1, 0, 1>(pt, b, "floor", mode, T);
    flat_row<KB_ROPE_LLAMA4, DIR, 4, 0, 1>(pt, b, "floor", mode, T);
    flat_row<KB_ROPE_LLAMA4, DIR, 8, 0, 1>(pt, b, "floor", mode, T);
    flat_row<KB_ROPE_LLAMA4, DIR, 4, 1, 1>(pt, b, "floor", mode, T);
    flat_row<KB_ROPE_LLAMA4, DIR, 10, 1, 1>(pt, b, "floor", mode, T);
    flat_row<KB_ROPE_LLAMA4, DIR, 16, 1, 1>(pt, b, "floor", mode, T);
  }
}

template <int WB, int V> void floor_row(const Point &pt, const Bufs &b, bool full) {
  kb_rope_args a = args_of(pt, b, KB_ROPE_LLAMA4, 0, full, false);
  FloorGeom g = {};
  const unsigned long long qb = b.nq * 2, kbytes = b.nk * 2, fb = (unsigned long long)pt.seq * (pt.hidden / 32) * 4;
  const void *src[6] = {a.q, a.k, a.freqs, a.dq, a.dk, a.freqs};
  void *dst[6] = {a.q_out, a.k_out, NULL, a.dq_out, a.dk_out, NULL};
  const unsigned long long sz[3] = {qb, kbytes, fb};
  g.nseg = full ? 6 : 3;
  unsigned long long words = 0;
  for (int i = 0; i < g.nseg; i++) {
    g.src[i] = (const char *)src[i];
    g.dst[i] = (char *)dst[i];
    g.end[i] = words += sz[i % 3] / WB;
  }
  g.sink = b.sink;
  auto launch = [&] { CKS((launch_floor_v<WB, V>(g, g_st))); };
  const bool ok = check(b, full, launch, true);
  char v[64];
  snprintf(v, sizeof v, "floor V=%d", V);
  emit(pt, "floor", full ? "full" : "forward", v, time_it(launch), ok);
}

/* ---- the token kernel (issue 25, "The token kernel", docs/perf-notes.md) -----------------------
 * Liger's grid: one CTA per token (blockIdx.x), a 2-D block of (units per head) x R rows; thread
 * (x, r) takes unit x of heads r, r + R, ..., r + (K-1) R (q's heads, then k's), so its slice of
 * the token's (cos, sin) row is the same for all K. Every data load of a thread is issued before
 * the first use. TAB 1: the token's (cos, sin) row goes through shared memory (loaded by the CTA
 * after the data loads are issued, one barrier), which keeps the registers of a thread to its K
 * units; TAB 0: each thread loads its slice into registers once. (LB, the register bound: the
 * entry points below.) COPY 1: the same loads and
 * stores, no rotation and no table (the access pattern alone). The math is the fused kernel's,
 * so the bits must be production's (checked). 16-byte vectors of a 2-byte dtype. */
template <int STYLE, int DIR, int K, int TAB, int COPY>
__device__ __forceinline__ void token_body(const FlatGeom &g) {
  typedef Elem<KB_BF16> E;
  typedef Vec<unsigned short, 8> V;
  typedef V::type W;
  constexpr bool NEOX = STYLE == KB_ROPE_NEOX;
  constexpr int NW = NEOX ? 2 : 1;
  constexpr int NF = NEOX ? 16 : 8;
  extern __shared__ float4 tab4[];
  const bool second = DIR == kFull && blockIdx.y == 1, bwd = DIR == kBackward || second;
  const Pass ps = {second ? g.pass[1].q : g.pass[0].q, second ? g.pass[1].k : g.pass[0].k,
                   second ? g.pass[1].qo : g.pass[0].qo, second ? g.pass[1].ko : g.pass[0].ko};
  const unsigned x = threadIdx.x, r = threadIdx.y, R = blockDim.y, tok = blockIdx.x;
  const unsigned hbytes = g.d * 2u, half_bytes = hbytes / 2, htot = g.hq + g.hk;
  const size_t qt = (size_t)tok * g.hq * hbytes, kt = (size_t)tok * g.hk * hbytes;
  W reg[K][NW];
#pragma unroll
  for (int j = 0; j < K; j++) {
    const unsigned h = r + j * R;
    if (h < htot) {
      const char *src = h < g.hq ? (const char *)ps.q + qt + h * hbytes : (const char *)ps.k + kt + (h - g.hq) * hbytes;
#pragma unroll
      for (int w = 0; w < NW; w++) reg[j][w] = load_words<W>(src + x * 16 + w * half_bytes);
    }
  }
  const unsigned s = g.batched ? tok % g.seq : tok;
  float f[NF];
  if constexpr (!COPY) {
    const float *frow = g.freqs + (size_t)s * g.d;
    if constexpr (TAB) {
      for (unsigned i = r * blockDim.x + x; i < g.d / 4; i += blockDim.x * R)
        tab4[i] = __ldg(reinterpret_cast<const float4 *>(frow) + i);
      __syncthreads();
#pragma unroll
      for (int j = 0; j < NF / 4; j++) {
        const float4 v = tab4[x * (NF / 4) + j];
        f[4 * j] = v.x; f[4 * j + 1] = v.y; f[4 * j + 2] = v.z; f[4 * j + 3] = v.w;
      }
    } else {
      load_freqs<NF>(frow + x * NF, f);
    }
#pragma unroll
    for (int j = 1; j < NF; j += 2) f[j] = bwd ? -f[j] : f[j];
  }
#pragma unroll
  for (int j = 0; j < K; j++) {
    const unsigned h = r + j * R;
    if (h < htot) {
      W lo = reg[j][0], hi;
      if constexpr (NEOX) hi = reg[j][1];
      if constexpr (!COPY) {
        if constexpr (NEOX) {
#pragma unroll
          for (int e = 0; e < 8; e++) {
            float re = E::widen(V::get(lo, e)), im = E::widen(V::get(hi, e));
            rotate<float>(re, im, f[2 * e], f[2 * e + 1]);
            V::set(lo, e, E::narrow(re));
            V::set(hi, e, E::narrow(im));
          }
        } else {
#pragma unroll
          for (int e = 0; e < 4; e++) {
            float re = E::widen(V::get(lo, 2 * e)), im = E::widen(V::get(lo, 2 * e + 1));
            rotate<float>(re, im, f[2 * e], f[2 * e + 1]);
            V::set(lo, 2 * e, E::narrow(re));
            V::set(lo, 2 * e + 1, E::narrow(im));
          }
        }
      }
      char *dst = h < g.hq ? (char *)ps.qo + qt + h * hbytes : (char *)ps.ko + kt + (h - g.hq) * hbytes;
      store_words<W>(dst + x * 16, lo);
      if constexpr (NEOX) store_words<W>(dst + x * 16 + half_bytes, hi);
    }
  }
}

/* The token kernel's entry points: LB 0, the default bound (at most kThreads threads); LB N, CTAs of
 * 128 threads with N of them an SM promised to the register allocator (N = 7: at most 72 registers,
 * N = 8: at most 64). A bound with one CTA an SM is not the default: ptxas gave the K = 5 neox kernel
 * 72 registers without it and 84 with it (calls 4 and 5). */
template <int STYLE, int DIR, int K, int TAB, int COPY, int LB>
__global__ void __launch_bounds__(128, LB) tune_token_kernel(const FlatGeom g) {
  token_body<STYLE, DIR, K, TAB, COPY>(g);
}
template <int STYLE, int DIR, int K, int TAB, int COPY>
__global__ void __launch_bounds__(kThreads) tune_token_kernel_default(const FlatGeom g) {
  token_body<STYLE, DIR, K, TAB, COPY>(g);
}
template <int STYLE, int DIR, int K, int TAB, int COPY, int LB> constexpr auto token_entry() {
  if constexpr (LB == 0) return tune_token_kernel_default<STYLE, DIR, K, TAB, COPY>;
  else return tune_token_kernel<STYLE, DIR, K, TAB, COPY, LB>;
}

/* A token-kernel row: R rows of units per head (T = units per head x R threads), K heads a thread
 * (the smallest that covers the token's heads), TAB and COPY as the kernel's. Skipped (no row)
 * where T is over kThreads or K over 5. */
template <int STYLE, int DIR, int TAB, int COPY, int K, int LB>
bool token_row_k(const Point &pt, const Bufs &b, const char *sname, const char *mode, unsigned R) {
  const bool full = DIR == kFull;
  constexpr bool NEOX = STYLE == KB_ROPE_NEOX;
  const FlatGeom g = flat_geom_of<STYLE, DIR>(pt, b);
  const unsigned T = g.uph * R;
  if ((40 + R - 1) / R != (unsigned)K || T > (unsigned)(LB ? 128 : kThreads)) return false;
  const size_t smem = TAB ? g.d * sizeof(float) : 0;
  auto kernel = token_entry<STYLE, DIR, K, TAB, COPY, LB>();
  int occ = 0, sms = 0;
  CKS(sm_count(&sms));
  CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ, kernel, (int)T, smem));
  const unsigned grid = (unsigned)pt.seq;
  std::function<void()> launch = [=] {
    kernel<<<dim3(grid, full ? 2 : 1), dim3(g.uph, R), smem, g_st>>>(g);
    CK(cudaGetLastError());
  };
  const bool ok = check(b, full, launch, COPY);
  char v[96];
  char lb[16] = "";
  if (LB) snprintf(lb, sizeof lb, " LB=%d", LB);
  snprintf(v, sizeof v, "token %s%s T=%u K=%d waves=%.2f", COPY ? (NEOX ? "copy neox" : "copy llama4") : TAB ? "smem" : "regs",
           lb, T, K,
           (double)grid * (full ? 2 : 1) / ((double)sms * (occ > 0 ? occ : 1)));
  emit(pt, COPY ? "floor" : sname, mode, v, time_it(launch), ok);
  return true;
}

template <int STYLE, int DIR, int TAB, int COPY, int LB = 0>
void token_row(const Point &pt, const Bufs &b, const char *sname, const char *mode, unsigned R) {
  token_row_k<STYLE, DIR, TAB, COPY, 1, LB>(pt, b, sname, mode, R) ||
      token_row_k<STYLE, DIR, TAB, COPY, 2, LB>(pt, b, sname, mode, R) ||
      token_row_k<STYLE, DIR, TAB, COPY, 3, LB>(pt, b, sname, mode, R) ||
      token_row_k<STYLE, DIR, TAB, COPY, 4, LB>(pt, b, sname, mode, R) ||
      token_row_k<STYLE, DIR, TAB, COPY, 5, LB>(pt, b, sname, mode, R);
}

/* The token rows of a style and mode: R such that T = units per head x R is 128 or 256. */
template <int STYLE, int DIR> void token_rows(const Point &pt, const Bufs &b, const char *sname, const char *mode) {
  const unsigned uph = (unsigned)(pt.hidden / 32) / 8 / (STYLE == KB_ROPE_NEOX ? 2 : 1);
  for (unsigned T : {128u, 256u}) {
    if (uph == 0 || T % uph) continue;
    token_row<STYLE, DIR, 1, 0>(pt, b, sname, mode, T / uph);
    token_row<STYLE, DIR, 0, 0>(pt, b, sname, mode, T / uph);
    token_row<STYLE, DIR, 0, 1>(pt, b, sname, mode, T / uph);
    /* held to 72 and 64 registers (7 and 8 CTAs of 128 threads an SM; 8 is one wave at hidden
     * 8192 / seq 1024, as Liger's kernel with its 63 registers); ptxas spills 32-48 bytes at K = 5
     * under 64 */
    if (T == 128) {
      token_row<STYLE, DIR, 1, 0, 7>(pt, b, sname, mode, T / uph);
      token_row<STYLE, DIR, 1, 0, 8>(pt, b, sname, mode, T / uph);
    }
  }
}

template <int STYLE> void style_rows(const Point &pt, Bufs &b) {
  const char *sname = STYLE == KB_ROPE_NEOX ? "neox" : "llama4";
  /* references: the production path, forward and full */
  kb_rope_args ref1 = args_of(pt, b, STYLE, 0, false, true), reff = args_of(pt, b, STYLE, 0, true, true);
  CKS(kb_rope_ops_cuda.full(&reff));
  CK(cudaStreamSynchronize(g_st));
  kb_rope_args prod1 = args_of(pt, b, STYLE, 0, false, false), prodf = args_of(pt, b, STYLE, 0, true, false);
  auto p1 = [&] { CKS(kb_rope_ops_cuda.fused(&prod1)); };
  auto pf = [&] { CKS(kb_rope_ops_cuda.full(&prodf)); };
  emit(pt, sname, "forward", "fused prod", time_it(p1), check(b, false, p1, false));
  emit(pt, sname, "full", "fused prod", time_it(pf), check(b, true, pf, false));
  /* full as two launches, forward then backward (the old full) */
  kb_rope_args fw = args_of(pt, b, STYLE, 0, false, false), bw = args_of(pt, b, STYLE, 1, false, false);
  bw.q = b.dq; bw.k = b.dk; bw.q_out = b.out_dq; bw.k_out = b.out_dk;
  auto two = [&] { CKS(kb_rope_ops_cuda.fused(&fw)); CKS(kb_rope_ops_cuda.fused(&bw)); };
  emit(pt, sname, "full", "fused two launches", time_it(two), check(b, true, two, false));
  (void)ref1;
  constexpr int UL = STYLE == KB_ROPE_NEOX ? 4 : 8;
  for (int spread : {1, 2, 4}) {
    plan_row<STYLE, 1, kForward>(pt, b, sname, "forward", spread);
    plan_row<STYLE, 2, kForward>(pt, b, sname, "forward", spread);
  }
  plan_row<STYLE, 4, kForward>(pt, b, sname, "forward", 2);
  plan_row<STYLE, UL, kForward>(pt, b, sname, "forward", 2);
  if (UL == 8) plan_row<STYLE, 8, kForward>(pt, b, sname, "forward", 1);
  plan_row<STYLE, 1, kFull>(pt, b, sname, "full", 2);
  plan_row<STYLE, 2, kFull>(pt, b, sname, "full", 2);
  plan_row<STYLE, 4, kFull>(pt, b, sname, "full", 2);
  plan_row<STYLE, UL, kFull>(pt, b, sname, "full", 2);
  if (g_flat) {
    flat_rows<STYLE, kForward>(pt, b, sname, "forward");
    flat_rows<STYLE, kFull>(pt, b, sname, "full");
  }
  if (g_token) {
    token_rows<STYLE, kForward>(pt, b, sname, "forward");
    token_rows<STYLE, kFull>(pt, b, sname, "full");
  }
}

/* --rows prod: rope (neox) forward and backward through the production dispatch, and the floor's
 * forward, in the layout of --layout: out (each output its own tensor, as kluabench's providers
 * write) or in (each output over its input, as Liger's _triton_rope writes; the kernels read all
 * of a unit before writing it, so the bits are the same). In place, the launch works on the out
 * buffers, which the check first fills with the inputs; the timed launches then rotate what the
 * one before wrote, which changes no byte count. The reference is the production path out of
 * place. */
/* One row of prod_rows: args in the layout of --layout (in place: over the out buffers), timed,
 * and checked against the reference outputs, or the inputs for a copy (in place, the check first
 * fills the out buffers with the inputs). */
template <typename L>
void layout_row(const Point &pt, const Bufs &b, kb_rope_args &a, L launch, const char *style, const char *mode,
                const char *what, bool against_inputs) {
  if (g_inplace) {
    a.q = b.out_q;
    a.k = b.out_k;
  }
  auto run = [&] { launch(a); };
  auto checked = [&] {
    if (g_inplace) { /* check() poisons the outputs first, so this comes after the poison */
      CK(cudaMemcpyAsync(b.out_q, b.q, b.nq * 2, cudaMemcpyDeviceToDevice, g_st));
      CK(cudaMemcpyAsync(b.out_k, b.k, b.nk * 2, cudaMemcpyDeviceToDevice, g_st));
    }
    run();
  };
  const bool ok = check(b, false, checked, against_inputs);
  char v[64];
  snprintf(v, sizeof v, "%s %s", what, g_inplace ? "in place" : "out of place");
  emit(pt, style, mode, v, time_it(run), ok);
}

void prod_rows(const Point &pt) {
  Bufs b = make_bufs(pt);
  for (int bwd = 0; bwd <= 1; bwd++) {
    kb_rope_args ref = args_of(pt, b, KB_ROPE_NEOX, bwd, false, true);
    CKS(kb_rope_ops_cuda.fused(&ref));
    kb_rope_args a = args_of(pt, b, KB_ROPE_NEOX, bwd, false, false);
    layout_row(pt, b, a, [](kb_rope_args &x) { CKS(kb_rope_ops_cuda.fused(&x)); }, "neox",
               bwd ? "backward" : "forward", "fused prod", false);
  }
  kb_rope_args f = args_of(pt, b, KB_ROPE_LLAMA4, 0, false, false);
  layout_row(pt, b, f, [&](kb_rope_args &x) { CKS(kb_rope_ops_cuda.floor(&x, b.sink)); }, "floor", "forward",
             "floor prod", true);
  free_bufs(b);
}

void point_rows(const Point &pt) {
  if (g_prod_only) {
    prod_rows(pt);
    return;
  }
  Bufs b = make_bufs(pt);
  /* reference outputs for the llama4 and neox checks are rewritten per style */
  {
    kb_rope_args r = args_of(pt, b, KB_ROPE_LLAMA4, 0, true, true);
    CKS(kb_rope_ops_cuda.full(&r));
  }
  style_rows<KB_ROPE_LLAMA4>(pt, b);
  {
    kb_rope_args r = args_of(pt, b, KB_ROPE_NEOX, 0, true, true);
    CKS(kb_rope_ops_cuda.full(&r));
  }
  style_rows<KB_ROPE_NEOX>(pt, b);
  /* the floor: production, then each V; and cudaMemcpyAsync of q and k */
  kb_rope_args f1 = args_of(pt, b, KB_ROPE_LLAMA4, 0, false, false), ff = args_of(pt, b, KB_ROPE_LLAMA4, 0, true, false);
  auto pf1 = [&] { CKS(kb_rope_ops_cuda.floor(&f1, b.sink)); };
  auto pff = [&] { CKS(kb_rope_ops_cuda.floor(&ff, b.sink)); };
  emit(pt, "floor", "forward", "floor prod", time_it(pf1), check(b, false, pf1, true));
  emit(pt, "floor", "full", "floor prod", time_it(pff), check(b, true, pff, true));
  floor_row<16, 1>(pt, b, false);
  floor_row<16, 2>(pt, b, false);
  floor_row<16, 4>(pt, b, false);
  floor_row<16, 8>(pt, b, false);
  floor_row<16, 1>(pt, b, true);
  floor_row<16, 2>(pt, b, true);
  floor_row<16, 4>(pt, b, true);
  if (g_flat) {
    flat_copy_rows<kForward>(pt, b, "forward");
    flat_copy_rows<kFull>(pt, b, "full");
  }
  auto mc = [&] {
    CK(cudaMemcpyAsync(b.out_q, b.q, b.nq * 2, cudaMemcpyDeviceToDevice, g_st));
    CK(cudaMemcpyAsync(b.out_k, b.k, b.nk * 2, cudaMemcpyDeviceToDevice, g_st));
  };
  emit(pt, "copy", "forward", "cudaMemcpyAsync q and k", time_it(mc), check(b, false, mc, true));
  auto mc1 = [&] { CK(cudaMemcpyAsync(b.out_q, b.q, (b.nq + b.nk) * 2, cudaMemcpyDeviceToDevice, g_st)); };
  emit(pt, "copy", "forward", "cudaMemcpyAsync one of q+k bytes", time_it(mc1), true);
  free_bufs(b);
}

} // namespace

int main(int argc, char **argv) {
  bool small_only = false;
  const char *only = NULL; /* --point H_T: that small point only */
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--samples") && i + 1 < argc) g_samples = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--points") && i + 1 < argc) small_only = !strcmp(argv[++i], "small");
    else if (!strcmp(argv[i], "--no-flat")) g_flat = false;
    else if (!strcmp(argv[i], "--no-token")) g_token = false;
    else if (!strcmp(argv[i], "--point") && i + 1 < argc) only = argv[++i];
    else if (!strcmp(argv[i], "--rows") && i + 1 < argc && !strcmp(argv[i + 1], "prod")) g_prod_only = ++i > 0;
    else if (!strcmp(argv[i], "--layout") && i + 1 < argc && (!strcmp(argv[i + 1], "in") || !strcmp(argv[i + 1], "out")))
      g_inplace = !strcmp(argv[++i], "in");
    else {
      fprintf(stderr, "usage: rope_tune [--samples N] [--points small|all] [--point H2048_T2048] [--no-flat] [--no-token]"
                      " [--rows prod [--layout in|out]]\n");
      return 2;
    }
  }
  CK(cudaStreamCreate(&g_st));
  int dev, l2;
  CK(cudaGetDevice(&dev));
  CK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, dev));
  g_flush_bytes = 2 * (size_t)l2;
  CK(cudaMalloc(&g_flush, g_flush_bytes));
  CK(cudaMalloc(&g_bad, 4));
  printf("point,style,mode,variant,median_us,p20_us,p80_us,check\n");
  auto e = [] { empty_kernel<<<1, 32, 0, g_st>>>(); };
  emit(Point{0, 0}, "none", "none", "empty kernel", time_it(e), true);
  auto ev = [] {};
  emit(Point{0, 0}, "none", "none", "event pair", time_it(ev), true);
  const Point small[] = {{512, 2048}, {2048, 2048}, {8192, 1024}};
  if (only) {
    for (const Point &p : small) {
      char name[32];
      snprintf(name, sizeof name, "H%d_T%d", p.hidden, p.seq);
      if (!strcmp(name, only)) point_rows(p);
    }
    return 0;
  }
  const Point large[] = {{8192, 2048}, {8192, 4096}, {8192, 16384}};
  for (const Point &p : small) point_rows(p);
  if (!small_only)
    for (const Point &p : large) point_rows(p);
  return 0;
}
