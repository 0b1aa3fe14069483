/* Host comparisons split over the cores in fixed chunks, read a slice at a time (compare_cpu.h). */
#include <math.h>
#include <stdlib.h>
#include "compare_cpu.h"
#include "parallel_cpu.h"

typedef struct {
  const void *a, *b; /* the current slice: element base of each operand */
  size_t base, c0;   /* its first element and first chunk */
  kb_dtype ta, tb;
  size_t n;
  double atol, rtol;
  void *parts; /* one result per chunk of all n */
} job;

static size_t chunks_of(size_t n) { return n == 0 ? 1 : (n + KB_COMPARE_CHUNK - 1) / KB_COMPARE_CHUNK; }

static size_t chunk_end(const job *j, size_t c) {
  size_t e = (c + 1) * KB_COMPARE_CHUNK;
  return e < j->n ? e : j->n;
}

static double load_a(const job *j, size_t i) { return kb_load_f64(j->a, j->ta, i - j->base); }
static double load_b(const job *j, size_t i) { return kb_load_f64(j->b, j->tb, i - j->base); }

/* Runs fn over every chunk into j->parts, a slice of src at a time, each slice's chunks on up to
 * one thread per core (each thread a contiguous run of them): `one` (room for one result) when
 * there is one chunk, else an array of `size`-byte results allocated here, which done_chunks
 * frees. Returns NULL or the error. An in-place source (slice 0) is one slice of all n; a source's
 * slice is rounded down to whole chunks (one at least). */
static const char *over_chunks(job *j, const kb_compare_source *src, kb_cpu_range_fn fn, size_t size, void *one) {
  size_t nc = chunks_of(j->n);
  j->parts = nc == 1 ? one : malloc(nc * size);
  if (!j->parts) return "out of memory for the per-chunk results";
  size_t slice = src->slice == 0 ? j->n : src->slice / KB_COMPARE_CHUNK * KB_COMPARE_CHUNK;
  if (slice == 0) slice = KB_COMPARE_CHUNK;
  for (size_t i0 = 0;; i0 += slice) {
    size_t len = j->n - i0 < slice ? j->n - i0 : slice;
    const char *err = src->fetch(src->ctx, i0, len, &j->a, &j->b);
    if (err) return err;
    j->base = i0;
    j->c0 = i0 / KB_COMPARE_CHUNK;
    kb_cpu_parallel_for(len == 0 ? 1 : (len + KB_COMPARE_CHUNK - 1) / KB_COMPARE_CHUNK, 1, fn, j);
    if (i0 + len >= j->n) return NULL;
  }
}

/* Frees what over_chunks allocated (nothing when it could not allocate: free(NULL)). */
static void done_chunks(job *j, void *one) {
  if (j->parts != one) free(j->parts);
}

static void max_abs_chunks(void *ctx, size_t k0, size_t k1) {
  job *j = ctx;
  double *out = j->parts;
  for (size_t c = j->c0 + k0; c < j->c0 + k1; c++) {
    double m = 0;
    for (size_t i = c * KB_COMPARE_CHUNK, e = chunk_end(j, c); i < e; i++) {
      double d = fabs(load_a(j, i) - load_b(j, i));
      if (isnan(d)) {
        m = NAN;
        break;
      }
      if (d > m) m = d;
    }
    out[c] = m;
  }
}

const char *kb_compare_max_abs_diff(const kb_compare_source *src, kb_dtype ta, kb_dtype tb, size_t n, double *out) {
  job j = {NULL, NULL, 0, 0, ta, tb, n, 0, 0, NULL};
  double one;
  const char *err = over_chunks(&j, src, max_abs_chunks, sizeof one, &one);
  double m = 0, *parts = j.parts;
  for (size_t c = 0; !err && c < chunks_of(n); c++) {
    if (isnan(parts[c])) {
      m = NAN;
      break;
    }
    if (parts[c] > m) m = parts[c];
  }
  done_chunks(&j, &one);
  *out = m;
  return err;
}

typedef struct {
  double num, den;
} sums;

static void rel_l2_chunks(void *ctx, size_t k0, size_t k1) {
  job *j = ctx;
  sums *out = j->parts;
  for (size_t c = j->c0 + k0; c < j->c0 + k1; c++) {
    double num = 0, den = 0;
    for (size_t i = c * KB_COMPARE_CHUNK, e = chunk_end(j, c); i < e; i++) {
      double x = load_a(j, i), y = load_b(j, i);
      num += (x - y) * (x - y);
      den += y * y;
    }
    out[c] = (sums){num, den};
  }
}

const char *kb_compare_rel_l2(const kb_compare_source *src, kb_dtype ta, kb_dtype tb, size_t n, double *out) {
  job j = {NULL, NULL, 0, 0, ta, tb, n, 0, 0, NULL};
  sums one;
  const char *err = over_chunks(&j, src, rel_l2_chunks, sizeof one, &one);
  double num = 0, den = 0;
  const sums *parts = j.parts;
  for (size_t c = 0; !err && c < chunks_of(n); c++) num += parts[c].num, den += parts[c].den;
  done_chunks(&j, &one);
  *out = den > 0 ? sqrt(num / den) : (num > 0 ? HUGE_VAL : (isnan(num) ? NAN : 0.0));
  return err;
}

static void compare_chunks(void *ctx, size_t k0, size_t k1) {
  job *j = ctx;
  kb_compare_counts *out = j->parts;
  for (size_t c = j->c0 + k0; c < j->c0 + k1; c++) {
    kb_compare_counts p = {0, 0, 0, 0, 0, -1, 0, -INFINITY, 0, 0};
    for (size_t i = c * KB_COMPARE_CHUNK, e = chunk_end(j, c); i < e; i++) {
      double g = load_a(j, i), w = load_b(j, i);
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

const char *kb_compare_counts_of(const kb_compare_source *src, kb_dtype tg, kb_dtype tw, size_t n, double atol,
                                 double rtol, kb_compare_counts *out) {
  job j = {NULL, NULL, 0, 0, tg, tw, n, atol, rtol, NULL};
  kb_compare_counts one;
  const char *err = over_chunks(&j, src, compare_chunks, sizeof one, &one);
  kb_compare_counts r = {0, 0, 0, 0, 0, -1, 0, -INFINITY, 0, 0};
  const kb_compare_counts *parts = j.parts;
  for (size_t c = 0; !err && c < chunks_of(n); c++) { /* in order: the first of equal worst excesses stays */
    const kb_compare_counts *p = &parts[c];
    r.mismatches += p->mismatches, r.unwritten += p->unwritten, r.nan_mismatch += p->nan_mismatch;
    r.inf_mismatch += p->inf_mismatch, r.want_nan += p->want_nan;
    if (p->max_abs > r.max_abs) r.max_abs = p->max_abs;
    if (p->worst >= 0 && p->worst_excess > r.worst_excess)
      r.worst_excess = p->worst_excess, r.worst = p->worst, r.worst_got = p->worst_got, r.worst_want = p->worst_want;
  }
  done_chunks(&j, &one);
  *out = r;
  return err;
}
