/* C interface of the rotary position embedding kernels. Each entry point has
 * a CUDA twin (rope.cu) and a CPU twin (rope_cpu.c) with the same contract;
 * the CPU one is the numerical reference for the CUDA one.
 *
 * Layout: x is [B, S, H, D] contiguous. The table of (cos, sin) depends on
 * the style, each as its model hands it:
 *   llama4 (interleaved): freqs is f32 [S_f, D/2, 2] holding (cos, sin) of
 *     position s and frequency i, S_f >= S (Llama 4's complex64 freqs_cis).
 *     Pair (x[2i], x[2i+1]) is a complex number times (cos + i sin);
 *     backward multiplies by the conjugate (sin -> -sin).
 *   neox (rotate half): cos and sin are each [rows, D] in the dtype of x,
 *     as Hugging Face's LlamaRotaryEmbedding returns them (halves
 *     duplicated: row = cat(c, c)). Pair (x[i], x[i + D/2]) rotated by
 *     (cos[r, i], sin[r, i]), same rotation; the fused, full and floor paths
 *     read only the first half of each row (the second is its copy), the
 *     reference reads whole rows as PyTorch's broadcast does. Token t
 *     (= b * S + s) takes row t % cos_period: cos_period = S for a table
 *     the batch shares ([1, >= S, D]), B * S for a row per token ([B, S, D]).
 * Arithmetic is f32 for bf16/f16/f32 inputs (f64 for f64 inputs; a neox
 * table is widened exactly) and each output is rounded once to the input
 * dtype.
 * Both twins evaluate re' = re*cos - im*sin, im' = re*sin + im*cos as two
 * products and one sum, each rounded (no fused multiply-add), so the CUDA and
 * CPU results, and the fused and reference paths, agree bit for bit.
 * The binding (engine/rope.c) checks shapes, dtypes and devices before any
 * of these run: the kernels trust their arguments (head_dim even and > 0,
 * q/k/freqs on the kernel's device, outputs either equal to the inputs or
 * not overlapping them). */
#ifndef KB_ROPE_H
#define KB_ROPE_H

#include <stddef.h>
#include <stdint.h>
#include "dtype.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum { KB_ROPE_LLAMA4 = 0, KB_ROPE_NEOX = 1 } kb_rope_style;

typedef struct {
  kb_rope_style style;
  int backward;     /* 1: rotate by the conjugate */
  kb_dtype dtype;   /* of q, k, q_out, k_out */
  int64_t batch, seq, q_heads, k_heads, head_dim;
  const void *q, *k; /* inputs */
  void *q_out, *k_out; /* may equal q, k (in place) */
  const float *freqs; /* llama4: [>= seq, head_dim/2, 2] */
  const void *cos, *sin; /* neox: [rows, head_dim] in dtype, halves equal */
  int64_t cos_period;    /* neox: token t takes row t % cos_period */
  void *stream;       /* cudaStream_t for the CUDA twin, unused on CPU */
  /* The second pass of `full` and of `floor`: the backward of (dq, dk) into
   * (dq_out, dk_out), shaped as q and k. dq NULL: one pass (floor only). */
  const void *dq, *dk;
  void *dq_out, *dk_out; /* may equal dq, dk */
} kb_rope_args;

/* The operations of this kernel family, one table per backend: the CUDA
 * twin (rope.cu) queues its kernels on a->stream, the CPU twin
 * (rope_cpu.c) computes on the calling thread (and its worker threads).
 * Every entry returns NULL on success or a message naming the failed call.
 * engine/rope.c picks the table by the tensors' device and runs the entry
 * through the backend's run_kernel, which adds what that device does around
 * every kernel (tracing on cpu, the dead-context check on cuda). */
typedef struct {
  /* Fused: q and k rotated together in one pass (one launch on CUDA). */
  const char *(*fused)(const kb_rope_args *a);
  /* Reference: the op sequence PyTorch eager runs for the same math, one
   * operation per pass with temporaries, q then k. It is the in-engine
   * baseline and is deliberately not tuned.
   *   llama4: x.float() (upcast into f32 temp A), A * freqs as complex
   *     numbers (temp B), B.type_as(x) (downcast into the output).
   *   neox: x.float() (A), A * cos (B), -A[..., D/2:] (C), cat(C, A[..., :D/2])
   *     (D = rotate_half), D * sin (E), B + E (F), F.type_as(x).
   * For f32 inputs the casts are no-ops, as .float() is in PyTorch: A is the
   * input and the last op writes the output. f64 inputs are computed in f64
   * (the casts skipped as for f32), keeping the f64 contract above.
   * `scratch` holds at least kb_rope_reference_scratch_bytes(a) bytes on
   * the same device as the tensors (may be NULL when that is 0). */
  const char *(*reference)(const kb_rope_args *a, void *scratch);
  /* Full: the forward of (q, k) and the backward of (dq, dk), the benchmark's
   * forward-then-backward, in one pass (one launch on CUDA); a->backward is
   * ignored. Bit for bit what fused forward then fused backward write. */
  const char *(*full)(const kb_rope_args *a);
  /* Floor: the fewest bytes a fused call moves, in one pass (one launch on
   * CUDA) and without arithmetic: q_out = q and k_out = k (and dq_out = dq,
   * dk_out = dk when dq is not NULL), with the table bytes the fused call
   * reads read once per pass: llama4 rows [0, seq) of freqs, neox the first
   * half of rows [0, cos_period) of cos and of sin. It is the yardstick of the fused kernels: their bytes in one
   * flat pass, launch latency included. `scratch` holds at least
   * KB_ROPE_FLOOR_SCRATCH bytes on a GPU, kb_rope_floor_scratch_bytes_cpu on
   * the CPU; the kernel may write there (so that the table reads cannot be
   * optimised away), never reads. */
  const char *(*floor)(const kb_rope_args *a, void *scratch);
} kb_rope_ops;

#define KB_ROPE_FLOOR_SCRATCH 16

/* Bytes of scratch the CPU floor needs: the sink and a shadow as large as
 * the largest tensor, which an in-place pass copies into (rope_cpu.c). */
size_t kb_rope_floor_scratch_bytes_cpu(const kb_rope_args *a);

extern const kb_rope_ops kb_rope_ops_cpu;  /* rope_cpu.c */
extern const kb_rope_ops kb_rope_ops_cuda; /* rope.cu; only in CUDA builds */

/* Bytes of scratch the reference path needs (the same on every backend). */
size_t kb_rope_reference_scratch_bytes(const kb_rope_args *a);

/* The frequency table on the host, as Hugging Face's Llama4TextRotaryEmbedding
 * builds it for the default rope type (rope_freqs_cpu.c).
 *
 * kb_rope_inv_freq_host: inv_freq[i] = 1 / theta^(f32(2i) / D) for i < D/2,
 * every step in f32 (the power evaluated in double from f32 operands and
 * rounded once); with `scaling` non-NULL, then adjusted as HF's
 * _compute_llama3_parameters does (in f32). */
typedef struct {
  double factor, low_freq_factor, high_freq_factor, original_max_position_embeddings;
} kb_rope_llama3_scaling;

void kb_rope_inv_freq_host(float *inv_freq, int64_t head_dim, double theta,
                           const kb_rope_llama3_scaling *scaling);

/* out[s, i] = (cos, sin) of angle = f32(pos_s) * inv_freq[i] (an f32
 * product), cos and sin evaluated in double and rounded to f32. positions
 * may be NULL (pos_s = s). out holds seq * head_dim floats. */
void kb_rope_freqs_host(float *out, int64_t seq, int64_t head_dim, const float *inv_freq,
                        const double *positions);

/* The neox table as Hugging Face's LlamaRotaryEmbedding.forward returns it:
 * for each of `rows` positions (positions[r], or r when NULL) the f32 angles
 * of kb_rope_freqs_host, emb = cat(angles, angles), cos and sin of emb in
 * f32, then cast to dtype (round to nearest even). cos and sin each hold
 * rows * head_dim elements of dtype. */
void kb_rope_cos_sin_host(void *cos, void *sin, kb_dtype dtype, int64_t rows, int64_t head_dim,
                          const float *inv_freq, const double *positions);

#ifdef __cplusplus
}
#endif

#endif
