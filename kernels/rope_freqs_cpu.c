/* The RoPE tables, built on the host the way Hugging Face builds them (default
 * rope type, optionally llama3 scaling): Llama4TextRotaryEmbedding's f32
 * (cos, sin) pairs for llama4, LlamaRotaryEmbedding's cos and sin in the
 * model's dtype for neox. Every intermediate that PyTorch keeps in an f32 tensor is an
 * f32 here, rounded after each operation; the transcendental functions
 * (pow, cos, sin) are evaluated in double from their f32 arguments and
 * rounded once, so the table is the correctly rounded one (PyTorch's own
 * vectorised pow/cos/sin may differ from it by an ulp). The file is named
 * *_cpu.c so that the Makefile compiles it. */
#include <math.h>
#include "rope.h"

/* HF: inv_freq = 1.0 / (theta ** (arange(0, D, 2).float() / D)) */
static void default_inv_freq(float *inv_freq, int64_t head_dim, double theta) {
  const float base = (float)theta, d = (float)head_dim;
  for (int64_t i = 0; i < head_dim / 2; i++) {
    float e = (float)(2 * i) / d;
    float p = (float)pow((double)base, (double)e);
    inv_freq[i] = 1.0f / p;
  }
}

/* HF's _compute_llama3_parameters, op by op in f32: wavelengths shorter than
 * original/high_freq_factor keep their frequency, longer than
 * original/low_freq_factor are divided by factor, and the band between is
 * interpolated by the smooth factor. Python scalars combined among
 * themselves stay double (the two wavelength bounds, high - low) and are
 * rounded to f32 where they meet a tensor. */
static void llama3_scale(float *inv_freq, int64_t n, const kb_rope_llama3_scaling *sc) {
  const float factor = (float)sc->factor, low = (float)sc->low_freq_factor;
  const float old_len = (float)sc->original_max_position_embeddings;
  const float low_wavelen = (float)(sc->original_max_position_embeddings / sc->low_freq_factor);
  const float high_wavelen = (float)(sc->original_max_position_embeddings / sc->high_freq_factor);
  const float band = (float)(sc->high_freq_factor - sc->low_freq_factor);
  const float two_pi = (float)(2.0 * 3.14159265358979323846);
  for (int64_t i = 0; i < n; i++) {
    const float f = inv_freq[i], wavelen = two_pi / f;
    float scaled = wavelen > low_wavelen ? f / factor : f;
    if (!(wavelen < high_wavelen) && !(wavelen > low_wavelen)) {
      const float smooth = (old_len / wavelen - low) / band;
      scaled = (1.0f - smooth) * scaled / factor + smooth * scaled;
    }
    inv_freq[i] = scaled;
  }
}

void kb_rope_inv_freq_host(float *inv_freq, int64_t head_dim, double theta,
                           const kb_rope_llama3_scaling *scaling) {
  default_inv_freq(inv_freq, head_dim, theta);
  if (scaling) llama3_scale(inv_freq, head_dim / 2, scaling);
}

/* HF: freqs = inv_freq[:, None].float() @ position_ids[None, :].float() (a
 * product of K = 1, so one f32 multiply), then torch.polar(1, freqs). */
void kb_rope_freqs_host(float *out, int64_t seq, int64_t head_dim, const float *inv_freq,
                        const double *positions) {
  const int64_t half = head_dim / 2;
  for (int64_t s = 0; s < seq; s++) {
    const float pos = positions ? (float)positions[s] : (float)s;
    float *row = out + s * head_dim;
    for (int64_t i = 0; i < half; i++) {
      const float angle = pos * inv_freq[i];
      row[2 * i] = (float)cos((double)angle);
      row[2 * i + 1] = (float)sin((double)angle);
    }
  }
}

/* HF's LlamaRotaryEmbedding.forward: freqs as above (one f32 product),
 * emb = cat(freqs, freqs), cos = emb.cos(), sin = emb.sin() in f32 (times
 * attention_scaling, 1.0 for the default and llama3 types: exact), then
 * .to(x.dtype): bf16 and f16 round the f32 value to nearest even, f64 widens
 * it exactly. */
void kb_rope_cos_sin_host(void *cos_out, void *sin_out, kb_dtype dtype, int64_t rows,
                          int64_t head_dim, const float *inv_freq, const double *positions) {
  const int64_t half = head_dim / 2;
  for (int64_t r = 0; r < rows; r++) {
    const float pos = positions ? (float)positions[r] : (float)r;
    for (int64_t i = 0; i < half; i++) {
      const float angle = pos * inv_freq[i];
      const double c = (float)cos((double)angle), s = (float)sin((double)angle);
      const size_t lo = (size_t)(r * head_dim + i), hi = lo + (size_t)half;
      kb_store_f64(cos_out, dtype, lo, c);
      kb_store_f64(cos_out, dtype, hi, c);
      kb_store_f64(sin_out, dtype, lo, s);
      kb_store_f64(sin_out, dtype, hi, s);
    }
  }
}
