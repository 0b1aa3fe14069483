/* Host comparisons split over the cores in fixed chunks (compare_cpu.h). */
#include <math.h>
#include <stdlib.h>
#include "compare_cpu.h"
#include "parallel_cpu.h"

typedef struct {
  const void *a, *b;
  kb_dtype ta, tb;
  size_t n;
  double atol, rtol;
  void *parts; /* one result per chunk */
} job;

static size_t chunks_of(size_t n) { return n == 0 ? 1 : (n + KB_COMPARE_CHUNK - 1) / KB_COMPARE_CHUNK; }

static size_t chunk_end(const job *j, size_t c) {
  size_t e = (c + 1) * KB_COMPARE_CHUNK;
  return e < j->n ? e : j->n;
}

/* Runs fn over every chunk on up to one thread per core, each thread a contiguous run of chunks,
 * into j->parts: `one` (room for one result) when there is one chunk, else an array of `size`-byte
 * results allocated here. Returns j->parts, or NULL when it cannot be allocated; done_chunks
 * frees it. */
static void *over_chunks(job *j, kb_cpu_range_fn fn, size_t size, void *one) {
  size_t nc = chunks_of(j->n);
  j->parts = nc == 1 ? one : malloc(nc * size);
  if (j->parts) kb_cpu_parallel_for(nc, 1, fn, j);
  return j->parts;
}

static void done_chunks(job *j, void *one) {
  if (j->parts != one) free(j->parts);
}

static void max_abs_chunks(void *ctx, size_t c0, size_t c1) {
  job *j = ctx;
  double *out = j->parts;
  for (size_t c = c0; c < c1; c++) {
    double m = 0;
    for (size_t i = c * KB_COMPARE_CHUNK, e = chunk_end(j, c); i < e; i++) {
      double d = fabs(kb_load_f64(j->a, j->ta, i) - kb_load_f64(j->b, j->tb, i));
      if (isnan(d)) {
        m = NAN;
        break;
      }
      if (d > m) m = d;
    }
    out[c] = m;
  }
}

int kb_host_max_abs_diff(const void *a, kb_dtype ta, const void *b, kb_dtype tb, size_t n, double *out) {
  job j = {a, b, ta, tb, n, 0, 0, NULL};
  double one, *parts = over_chunks(&j, max_abs_chunks, sizeof one, &one);
  if (!parts) return -1;
  double m = 0;
  for (size_t c = 0; c < chunks_of(n); c++) {
    if (isnan(parts[c])) {
      m = NAN;
      break;
    }
    if (parts[c] > m) m = parts[c];
  }
  done_chunks(&j, &one);
  *out = m;
  return 0;
}

typedef struct {
  double num, den;
} sums;

static void rel_l2_chunks(void *ctx, size_t c0, size_t c1) {
  job *j = ctx;
  sums *out = j->parts;
  for (size_t c = c0; c < c1; c++) {
    double num = 0, den = 0;
    for (size_t i = c * KB_COMPARE_CHUNK, e = chunk_end(j, c); i < e; i++) {
      double x = kb_load_f64(j->a, j->ta, i), y = kb_load_f64(j->b, j->tb, i);
      num += (x - y) * (x - y);
      den += y * y;
    }
    out[c] = (sums){num, den};
  }
}

int kb_host_rel_l2(const void *a, kb_dtype ta, const void *b, kb_dtype tb, size_t n, double *out) {
  job j = {a, b, ta, tb, n, 0, 0, NULL};
  sums one, *parts = over_chunks(&j, rel_l2_chunks, sizeof one, &one);
  if (!parts) return -1;
  double num = 0, den = 0;
  for (size_t c = 0; c < chunks_of(n); c++) num += parts[c].num, den += parts[c].den;
  done_chunks(&j, &one);
  *out = den > 0 ? sqrt(num / den) : (num > 0 ? HUGE_VAL : (isnan(num) ? NAN : 0.0));
  return 0;
}

static void compare_chunks(void *ctx, size_t c0, size_t c1) {
  job *j = ctx;
  kb_compare_counts *out = j->parts;
  for (size_t c = c0; c < c1; c++) {
    kb_compare_counts p = {0, 0, 0, 0, 0, -1, 0, -INFINITY, 0, 0};
    for (size_t i = c * KB_COMPARE_CHUNK, e = chunk_end(j, c); i < e; i++) {
      double g = kb_load_f64(j->a, j->ta, i), w = kb_load_f64(j->b, j->tb, i);
      if (isnan(w)) {
        p.want_nan++;
        p.nan_mismatch += !isnan(g);
      } else if (isnan(g)) {
        p.unwritten++;
      } else if (isinf(g) || isinf(w)) {
        p.inf_mismatch += g != w;
      } else {
        double d = fabs(g - w), excess = d - (j->atol + j->rtol * fabs(w));
        if (d > p.max_abs) p.max_abs = d;
        if (excess > 0) {
          p.mismatches++;
          if (excess > p.worst_excess) p.worst_excess = excess, p.worst = (int64_t)i, p.worst_got = g, p.worst_want = w;
        }
      }
    }
    out[c] = p;
  }
}

int kb_host_compare_elements(const void *got, kb_dtype tg, const void *want, kb_dtype tw, size_t n, double atol,
                             double rtol, kb_compare_counts *out) {
  job j = {got, want, tg, tw, n, atol, rtol, NULL};
  kb_compare_counts one, *parts = over_chunks(&j, compare_chunks, sizeof one, &one);
  if (!parts) return -1;
  kb_compare_counts r = {0, 0, 0, 0, 0, -1, 0, -INFINITY, 0, 0};
  for (size_t c = 0; c < chunks_of(n); c++) { /* in order: the first of equal worst excesses stays */
    const kb_compare_counts *p = &parts[c];
    r.mismatches += p->mismatches, r.unwritten += p->unwritten, r.nan_mismatch += p->nan_mismatch;
    r.inf_mismatch += p->inf_mismatch, r.want_nan += p->want_nan;
    if (p->max_abs > r.max_abs) r.max_abs = p->max_abs;
    if (p->worst >= 0 && p->worst_excess > r.worst_excess)
      r.worst_excess = p->worst_excess, r.worst = p->worst, r.worst_got = p->worst_got, r.worst_want = p->worst_want;
  }
  done_chunks(&j, &one);
  *out = r;
  return 0;
}
