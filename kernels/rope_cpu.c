/* CPU twin of the RoPE kernels (rope.h): the numerical reference for the CUDA
 * kernels, and a usable backend on its own.
 *
 * Fused path: tokens are split between worker threads; for each token the
 * table row is unpacked once into two planar arrays of D/2 (cos, sin; sin
 * negated for backward): llama4's f32 pairs as f32, neox's cos and sin (the
 * first half of each row, in the input dtype) widened to f32, or kept f64
 * for f64 inputs. Every head of q, then of k, is rotated with them. bf16/f16
 * rows are widened into an f32 row buffer, rotated there and narrowed once.
 *
 * Bit-exactness with the CUDA twin rests on evaluating each output as two
 * rounded products and one rounded sum: this file must be compiled without
 * floating-point contraction (ISO C mode, -std=c11, has -ffp-contract=off in
 * GCC; x86-64 without -mfma has no fused multiply-add anyway). */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "parallel_cpu.h"
#include "rope.h"

/* Runs BODY for every i in [0, n): blocks of BLK with a constant inner trip
 * count (GCC vectorises those at -O2, where its cost model refuses loops of
 * unknown count), then the scalar tail. */
#define KB_BLOCKED(n, BLK, i, BODY)                                                            \
  do {                                                                                         \
    int64_t blk_ = 0;                                                                          \
    for (; blk_ + (BLK) <= (n); blk_ += (BLK))                                                 \
      for (int j_ = 0; j_ < (BLK); j_++) {                                                     \
        const int64_t i = blk_ + j_;                                                           \
        BODY;                                                                                  \
      }                                                                                        \
    for (; blk_ < (n); blk_++) {                                                               \
      const int64_t i = blk_;                                                                  \
      BODY;                                                                                    \
    }                                                                                          \
  } while (0)

/* ---- conversions of whole rows ----------------------------------------- */

static void widen_row(float *restrict dst, const void *restrict src, kb_dtype t, int64_t n) {
  const uint16_t *h = src;
  if (t == KB_BF16) KB_BLOCKED(n, 8, i, dst[i] = kb_bf16_to_f32(h[i]));
  else KB_BLOCKED(n, 8, i, dst[i] = kb_f16_to_f32(h[i]));
}

static void narrow_row(void *restrict dst, const float *restrict src, kb_dtype t, int64_t n) {
  uint16_t *h = dst;
  if (t == KB_BF16) KB_BLOCKED(n, 8, i, h[i] = kb_f32_to_bf16(src[i]));
  else KB_BLOCKED(n, 8, i, h[i] = kb_f32_to_f16(src[i]));
}

/* ---- rotations of one head row ------------------------------------------ */
/* x and y do not overlap (y is a row buffer); c and s hold half = D/2 values.
 * re' = re*c - im*s, im' = re*s + im*c: two rounded products, one rounded
 * sum, in the same order as the CUDA kernels. */

#define KB_ROT_LLAMA4(T, y, x, c, s, i)                                                        \
  do {                                                                                         \
    const T re = x[2 * i], im = x[2 * i + 1], ci = c[i], si = s[i];                            \
    y[2 * i] = re * ci - im * si;                                                              \
    y[2 * i + 1] = re * si + im * ci;                                                          \
  } while (0)

/* neox through separate pointers to the two halves (x1 = x, x2 = x + D/2),
 * passed as parameters: GCC vectorises neither x[i + half] nor local
 * restrict pointers here. */
#define KB_ROT_NEOX(T, y1, y2, x1, x2, c, s, i)                                                \
  do {                                                                                         \
    const T re = x1[i], im = x2[i], ci = c[i], si = s[i];                                      \
    y1[i] = re * ci - im * si;                                                                 \
    y2[i] = re * si + im * ci;                                                                 \
  } while (0)

static void rot_llama4_f32(float *restrict y, const float *restrict x, const float *restrict c,
                           const float *restrict s, int64_t half) {
  KB_BLOCKED(half, 4, i, KB_ROT_LLAMA4(float, y, x, c, s, i));
}

static void rot_halves_f32(float *restrict y1, float *restrict y2, const float *restrict x1,
                           const float *restrict x2, const float *restrict c,
                           const float *restrict s, int64_t half) {
  KB_BLOCKED(half, 8, i, KB_ROT_NEOX(float, y1, y2, x1, x2, c, s, i));
}

static void rot_neox_f32(float *y, const float *x, const float *c, const float *s, int64_t half) {
  rot_halves_f32(y, y + half, x, x + half, c, s, half);
}

static void rot_llama4_f64(double *restrict y, const double *restrict x, const float *restrict c,
                           const float *restrict s, int64_t half) {
  KB_BLOCKED(half, 2, i, KB_ROT_LLAMA4(double, y, x, c, s, i));
}

/* neox in f64 reads an f64 table (cos and sin in the input dtype) */
static void rot_halves_f64(double *restrict y1, double *restrict y2, const double *restrict x1,
                           const double *restrict x2, const double *restrict c,
                           const double *restrict s, int64_t half) {
  KB_BLOCKED(half, 4, i, KB_ROT_NEOX(double, y1, y2, x1, x2, c, s, i));
}

static void rot_neox_f64(double *y, const double *x, const double *c, const double *s,
                         int64_t half) {
  rot_halves_f64(y, y + half, x, x + half, c, s, half);
}

/* ---- the fused pass over a range of tokens ------------------------------ */

/* Per worker: c and s (D/2 values each, f32 or f64: D doubles' room), then
 * two row buffers of D doubles. */
#define KB_ROPE_JOB_DOUBLES(d) (3 * (size_t)(d))

typedef struct {
  const kb_rope_args *a;
  int64_t tok0, tok1;
  double *buf; /* KB_ROPE_JOB_DOUBLES(D) */
} fused_job;

/* Rotates one head row from x into out, going through the row buffers. c and
 * s are f64 for neox in f64 (its table is f64), f32 otherwise. */
static void fused_row(const kb_rope_args *a, const void *c, const void *s, float *rowbuf,
                      const void *x, void *out) {
  const int64_t d = a->head_dim, half = d / 2;
  const int neox = a->style == KB_ROPE_NEOX;
  if (a->dtype == KB_F64) {
    double *y = (double *)rowbuf;
    if (neox) rot_neox_f64(y, x, c, s, half);
    else rot_llama4_f64(y, x, c, s, half);
    memcpy(out, y, (size_t)d * sizeof(double));
  } else if (a->dtype == KB_F32) {
    if (neox) rot_neox_f32(rowbuf, x, c, s, half);
    else rot_llama4_f32(rowbuf, x, c, s, half);
    memcpy(out, rowbuf, (size_t)d * sizeof(float));
  } else {
    float *xf = rowbuf, *yf = rowbuf + d;
    widen_row(xf, x, a->dtype, d);
    if (neox) rot_neox_f32(yf, xf, c, s, half);
    else rot_llama4_f32(yf, xf, c, s, half);
    narrow_row(out, yf, a->dtype, d);
  }
}

/* The table of token tok as two planar arrays of D/2: c[i] and s[i] (sin
 * negated for backward), f64 for neox in f64, f32 otherwise. */
static void unpack_table(const kb_rope_args *a, int64_t tok, void *c, void *s) {
  const int64_t d = a->head_dim, half = d / 2;
  if (a->style == KB_ROPE_LLAMA4) {
    const float *f = a->freqs + (tok % a->seq) * d;
    const float sign = a->backward ? -1.0f : 1.0f;
    float *cf = c, *sf = s;
    for (int64_t i = 0; i < half; i++) {
      cf[i] = f[2 * i];
      sf[i] = sign * f[2 * i + 1];
    }
    return;
  }
  const size_t row = (size_t)((tok % a->cos_period) * d);
  if (a->dtype == KB_F64) {
    const double *ct = (const double *)a->cos + row, *st = (const double *)a->sin + row;
    double *cd = c, *sd = s;
    for (int64_t i = 0; i < half; i++) {
      cd[i] = ct[i];
      sd[i] = a->backward ? -st[i] : st[i];
    }
    return;
  }
  float *cf = c, *sf = s;
  if (a->dtype == KB_F32) {
    memcpy(cf, (const float *)a->cos + row, (size_t)half * sizeof(float));
    memcpy(sf, (const float *)a->sin + row, (size_t)half * sizeof(float));
  } else {
    widen_row(cf, (const uint16_t *)a->cos + row, a->dtype, half);
    widen_row(sf, (const uint16_t *)a->sin + row, a->dtype, half);
  }
  if (a->backward)
    for (int64_t i = 0; i < half; i++) sf[i] = -sf[i];
}

static void *fused_worker(void *arg) {
  fused_job *j = arg;
  const kb_rope_args *a = j->a;
  const int64_t d = a->head_dim, half = d / 2;
  const size_t es = kb_dtype_size(a->dtype);
  const int wide = a->style == KB_ROPE_NEOX && a->dtype == KB_F64; /* an f64 table */
  void *c = j->buf, *s = wide ? (void *)(j->buf + half) : (void *)((float *)j->buf + half);
  float *rowbuf = (float *)(j->buf + d);
  for (int64_t tok = j->tok0; tok < j->tok1; tok++) {
    unpack_table(a, tok, c, s);
    for (int64_t h = 0; h < a->q_heads; h++) {
      const size_t off = (size_t)((tok * a->q_heads + h) * d) * es;
      fused_row(a, c, s, rowbuf, (const char *)a->q + off, (char *)a->q_out + off);
    }
    for (int64_t h = 0; h < a->k_heads; h++) {
      const size_t off = (size_t)((tok * a->k_heads + h) * d) * es;
      fused_row(a, c, s, rowbuf, (const char *)a->k + off, (char *)a->k_out + off);
    }
  }
  return NULL;
}

/* Worker threads: one per online core, at most 16, and no more than one per
 * 512 KiB of traffic, so small calls stay on the calling thread. */
#define KB_ROPE_MAX_THREADS 16
static int worker_count(size_t bytes) {
  static long cores;
  if (!cores) {
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    cores = n < 1 ? 1 : n > KB_ROPE_MAX_THREADS ? KB_ROPE_MAX_THREADS : n;
  }
  size_t by_size = bytes / (512u << 10);
  if (by_size < 1) by_size = 1;
  return (int)((size_t)cores < by_size ? (size_t)cores : by_size);
}

static const char *kb_rope_fused_cpu(const kb_rope_args *a) {
  const int64_t ntok = a->batch * a->seq, d = a->head_dim;
  if (ntok == 0 || d == 0 || a->q_heads + a->k_heads == 0) return NULL;
  const size_t bytes = (size_t)(ntok * (a->q_heads + a->k_heads) * d) * kb_dtype_size(a->dtype) * 2;
  int nt = worker_count(bytes);
  if (nt > ntok) nt = (int)ntok;
  const size_t per = KB_ROPE_JOB_DOUBLES(d);
  double *bufs = malloc(sizeof(double) * per * (size_t)nt);
  if (!bufs) return "rope_fused (cpu): out of memory for row buffers";
  fused_job jobs[KB_ROPE_MAX_THREADS];
  pthread_t tids[KB_ROPE_MAX_THREADS];
  int started = 0;
  for (int i = 0; i < nt; i++) {
    jobs[i] = (fused_job){a, ntok * i / nt, ntok * (i + 1) / nt, bufs + per * (size_t)i};
  }
  for (int i = 1; i < nt; i++) {
    if (pthread_create(&tids[i], NULL, fused_worker, &jobs[i]) != 0) break;
    started = i;
  }
  fused_worker(&jobs[0]);
  for (int i = started + 1; i < nt; i++) fused_worker(&jobs[i]); /* threads that did not start */
  for (int i = 1; i <= started; i++) pthread_join(tids[i], NULL);
  free(bufs);
  return NULL;
}

/* ---- the reference op sequence ------------------------------------------ */
/* One loop per PyTorch op over a whole tensor, temporaries in `scratch`. The
 * element type of the temporaries is f32, or f64 for f64 inputs. */

typedef struct {
  const kb_rope_args *a;
  int64_t heads;
  int64_t n; /* elements of the tensor */
  float sign;
} ref_ctx;

/* llama4: (cos, sin) for element-pair index p of a [B, S, H, D/2] pair grid. */
static inline const float *ref_freq(const ref_ctx *r, int64_t p) {
  const int64_t half = r->a->head_dim / 2;
  const int64_t tok = p / (r->heads * half), i = p % half;
  return r->a->freqs + ((tok % r->a->seq) * half + i) * 2;
}

/* llama4, f32 temporaries: B = A * freqs (complex), pair by pair. */
static void ref_cmul_f32(const ref_ctx *r, float *out, const float *in) {
  for (int64_t p = 0; p < r->n / 2; p++) {
    const float *f = ref_freq(r, p);
    const float re = in[2 * p], im = in[2 * p + 1], c = f[0], s = r->sign * f[1];
    out[2 * p] = re * c - im * s;
    out[2 * p + 1] = re * s + im * c;
  }
}

static void ref_cmul_f64(const ref_ctx *r, double *out, const double *in) {
  for (int64_t p = 0; p < r->n / 2; p++) {
    const float *f = ref_freq(r, p);
    const double re = in[2 * p], im = in[2 * p + 1], c = f[0], s = r->sign * f[1];
    out[2 * p] = re * c - im * s;
    out[2 * p + 1] = re * s + im * c;
  }
}

/* neox: cos (which = 0) or sin (1) for element e of a [B, S, H, D] tensor,
 * broadcast over heads as PyTorch broadcasts cos[:, :, None, :]: the whole
 * row of the token's position, both halves read. */
static inline double ref_table(const ref_ctx *r, int64_t e, int which) {
  const int64_t d = r->a->head_dim, tok = e / d / r->heads;
  const size_t i = (size_t)((tok % r->a->cos_period) * d + e % d);
  return kb_load_f64(which ? r->a->sin : r->a->cos, r->a->dtype, i);
}

/* neox ops: A * cos, -A[..., D/2:], cat, rotate_half(A) * sin, the sum. */
#define REF_NEOX_OPS(T, SUF)                                                                   \
  static void ref_mul_freq_##SUF(const ref_ctx *r, T *out, const T *in, int which) {           \
    for (int64_t e = 0; e < r->n; e++) {                                                       \
      const T v = (T)(which ? r->sign * ref_table(r, e, 1) : ref_table(r, e, 0));              \
      out[e] = in[e] * v;                                                                      \
    }                                                                                          \
  }                                                                                            \
  /* C = -A[..., D/2:], a [rows, D/2] tensor */                                                \
  static void ref_neg_half_##SUF(const ref_ctx *r, T *out, const T *in) {                      \
    const int64_t d = r->a->head_dim, half = d / 2;                                            \
    for (int64_t e = 0; e < r->n / 2; e++) out[e] = -in[(e / half) * d + half + e % half];     \
  }                                                                                            \
  /* D = cat(C, A[..., :D/2]) along the last axis */                                           \
  static void ref_cat_##SUF(const ref_ctx *r, T *out, const T *neg, const T *in) {             \
    const int64_t d = r->a->head_dim, half = d / 2;                                            \
    for (int64_t e = 0; e < r->n; e++) {                                                       \
      const int64_t row = e / d, i = e % d;                                                    \
      out[e] = i < half ? neg[row * half + i] : in[row * d + i - half];                        \
    }                                                                                          \
  }                                                                                            \
  static void ref_add_##SUF(const ref_ctx *r, T *out, const T *x, const T *y) {                \
    for (int64_t e = 0; e < r->n; e++) out[e] = x[e] + y[e];                                   \
  }                                                                                            \
  static void ref_neox_##SUF(const ref_ctx *r, T *out, const T *A, T *tmp) {                   \
    T *B = tmp, *C = B + r->n, *D = C + r->n / 2, *E = D + r->n;                               \
    ref_mul_freq_##SUF(r, B, A, 0);                                                            \
    ref_neg_half_##SUF(r, C, A);                                                               \
    ref_cat_##SUF(r, D, C, A);                                                                 \
    ref_mul_freq_##SUF(r, E, D, 1);                                                            \
    ref_add_##SUF(r, out, B, E);                                                               \
  }
REF_NEOX_OPS(float, f32)
REF_NEOX_OPS(double, f64)
#undef REF_NEOX_OPS

/* Temporaries per tensor, in elements of n: llama4 A, B (casts only);
 * neox A (casts only), B, C (n/2), D, E, F (casts only). */
static size_t ref_temp_elems(const kb_rope_args *a, int64_t n) {
  const int casts = a->dtype == KB_BF16 || a->dtype == KB_F16;
  if (a->style == KB_ROPE_LLAMA4) return casts ? 2 * (size_t)n : 0;
  return (size_t)(3 * n + n / 2) + (casts ? 2 * (size_t)n : 0);
}

size_t kb_rope_reference_scratch_bytes(const kb_rope_args *a) {
  const int64_t per_tok = a->batch * a->seq * a->head_dim;
  const int64_t n = per_tok * (a->q_heads > a->k_heads ? a->q_heads : a->k_heads);
  const size_t ts = a->dtype == KB_F64 ? sizeof(double) : sizeof(float);
  return ref_temp_elems(a, n) * ts;
}

static void ref_one(const kb_rope_args *a, int64_t heads, const void *x, void *out, void *scratch) {
  ref_ctx r = {a, heads, a->batch * a->seq * heads * a->head_dim, a->backward ? -1.0f : 1.0f};
  const int llama4 = a->style == KB_ROPE_LLAMA4;
  if (r.n == 0) return;
  if (a->dtype == KB_F64) {
    if (llama4) ref_cmul_f64(&r, out, x);
    else ref_neox_f64(&r, out, x, scratch);
  } else if (a->dtype == KB_F32) {
    if (llama4) ref_cmul_f32(&r, out, x);
    else ref_neox_f32(&r, out, x, scratch);
  } else {
    float *A = scratch, *T = A + r.n; /* T: B for llama4, B..F for neox */
    widen_row(A, x, a->dtype, r.n);   /* x.float() */
    float *F = llama4 ? T : T + 3 * r.n + r.n / 2;
    if (llama4) ref_cmul_f32(&r, F, A);
    else ref_neox_f32(&r, F, A, T);
    narrow_row(out, F, a->dtype, r.n); /* .type_as(x) */
  }
}

static const char *kb_rope_reference_cpu(const kb_rope_args *a, void *scratch) {
  ref_one(a, a->q_heads, a->q, a->q_out, scratch);
  ref_one(a, a->k_heads, a->k, a->k_out, scratch);
  return NULL;
}

/* ---- full and floor ------------------------------------------------------ */

/* The forward of (q, k), then the backward of (dq, dk): on the CPU one pass
 * after the other, each exactly the fused path. */
static const char *kb_rope_full_cpu(const kb_rope_args *a) {
  kb_rope_args f = *a, b = *a;
  f.backward = 0;
  b.backward = 1;
  b.q = a->dq, b.k = a->dk, b.q_out = a->dq_out, b.k_out = a->dk_out;
  const char *err = kb_rope_fused_cpu(&f);
  return err ? err : kb_rope_fused_cpu(&b);
}

/* XOR of n bytes as 64-bit words, the last partial word zero-padded. */
static uint64_t fold_words(const void *p, size_t n) {
  uint64_t acc = 0, w;
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    memcpy(&w, (const char *)p + i, 8);
    acc ^= w;
  }
  w = 0;
  memcpy(&w, (const char *)p + i, n - i);
  return acc ^ w;
}

/* The table bytes the fused call reads, folded: llama4 rows [0, seq) of
 * freqs; neox the first half of rows [0, cos_period) of cos and sin. */
static uint64_t fold_table(const kb_rope_args *a) {
  if (a->style == KB_ROPE_LLAMA4)
    return fold_words(a->freqs, (size_t)a->seq * (size_t)a->head_dim * sizeof(float));
  const size_t row = (size_t)a->head_dim * kb_dtype_size(a->dtype), half = row / 2;
  uint64_t acc = 0;
  for (int64_t r = 0; r < a->cos_period; r++) {
    acc ^= fold_words((const char *)a->cos + (size_t)r * row, half);
    acc ^= fold_words((const char *)a->sin + (size_t)r * row, half);
  }
  return acc;
}

typedef struct {
  char *dst;
  const char *src;
} floor_job;

static void floor_blocks(void *ctx, size_t b0, size_t b1) {
  const floor_job *j = ctx;
  memcpy(j->dst + (b0 << 20), j->src + (b0 << 20), (b1 - b0) << 20);
}

/* n bytes from src to dst as a tensor copy moves them: over the cores in
 * blocks of 1 MiB, the tail on the calling thread. */
static void floor_copy(void *dst, const void *src, size_t n) {
  floor_job j = {dst, src};
  const size_t blocks = n >> 20;
  kb_cpu_parallel_for(blocks, 8, floor_blocks, &j);
  memcpy((char *)dst + (blocks << 20), (const char *)src + (blocks << 20), n - (blocks << 20));
}

/* The sink word, then the shadow at a cache line. */
#define FLOOR_SHADOW 64

size_t kb_rope_floor_scratch_bytes_cpu(const kb_rope_args *a) {
  const size_t row = (size_t)a->head_dim * kb_dtype_size(a->dtype), tok = (size_t)(a->batch * a->seq);
  return FLOOR_SHADOW + tok * (size_t)(a->q_heads + a->k_heads) * row;
}

/* One pass of the floor: q and k copied, and one read of the table bytes the
 * pass uses (fold_table), folded into the sink word so that the reads are not optimised
 * away. In place, q and k are copied into the shadow, side by side: the pass
 * then reads and writes the bytes a copy of them does, over as many distinct
 * bytes, where skipping the copy would move none. */
static void floor_pass(const kb_rope_args *a, const void *q, const void *k, void *qo, void *ko,
                       void *scratch) {
  const size_t es = kb_dtype_size(a->dtype), tok = (size_t)(a->batch * a->seq);
  const size_t dbytes = (size_t)a->head_dim * es;
  char *shadow = (char *)scratch + FLOOR_SHADOW;
  floor_copy(qo != q ? qo : shadow, q, tok * (size_t)a->q_heads * dbytes);
  floor_copy(ko != k ? ko : shadow + tok * (size_t)a->q_heads * dbytes, k, tok * (size_t)a->k_heads * dbytes);
  const uint64_t acc = fold_table(a);
  memcpy(scratch, &acc, sizeof acc);
}

static const char *kb_rope_floor_cpu(const kb_rope_args *a, void *scratch) {
  if (a->batch * a->seq == 0 || a->head_dim == 0) return NULL;
  floor_pass(a, a->q, a->k, a->q_out, a->k_out, scratch);
  if (a->dq) floor_pass(a, a->dq, a->dk, a->dq_out, a->dk_out, scratch);
  return NULL;
}

const kb_rope_ops kb_rope_ops_cpu = {
    .fused = kb_rope_fused_cpu,
    .reference = kb_rope_reference_cpu,
    .full = kb_rope_full_cpu,
    .floor = kb_rope_floor_cpu,
};
