/* Comparisons of two operands of n elements each (any dtypes, read as
 * doubles) on the host: the largest |a - b|, the relative L2 error and the
 * element-wise tolerance counts behind kb.max_abs_diff, kb.rel_l2 and
 * kb.compare_elements. The operands come a slice at a time from a source
 * (host buffers in place, or device tensors copied slice by slice).
 * A check compares tens of millions of elements per output, so the loops are
 * split over the cores; they are split in chunks of a fixed size, merged in
 * order, so a result does not depend on how many cores there are (the
 * relative L2 error's sums are added chunk by chunk, which for more than one
 * chunk's elements differs in the last bits from a single running sum). */
#ifndef KB_COMPARE_CPU_H
#define KB_COMPARE_CPU_H

#include <stddef.h>
#include <stdint.h>
#include "dtype.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Elements per chunk: a comparison of fewer runs on the calling thread as one chunk. */
#define KB_COMPARE_CHUNK ((size_t)1 << 20)

/* Where a comparison reads its two operands: fetch(ctx, i0, n, &a, &b) points a and b at their
 * elements [i0, i0 + n) (the operands themselves, or host copies of that slice) and returns NULL,
 * or an error message. The comparison asks for slices of `slice` elements in order (0: all n at
 * once; otherwise a multiple of KB_COMPARE_CHUNK), and reads a slice only until it asks for the
 * next. The chunks and their order do not depend on the slices, so neither do the results. */
typedef const char *(*kb_compare_fetch)(void *ctx, size_t i0, size_t n, const void **a, const void **b);
typedef struct kb_compare_source {
  kb_compare_fetch fetch;
  void *ctx;
  size_t slice;
} kb_compare_source;

/* Each returns NULL, or an error message: the source's, or that the per-chunk results (one small
 * struct per chunk of KB_COMPARE_CHUNK elements) cannot be allocated. */

/* *out = the largest |a[i] - b[i]|; NaN when any difference is NaN. */
const char *kb_compare_max_abs_diff(const kb_compare_source *src, kb_dtype ta, kb_dtype tb, size_t n, double *out);

/* *out = ||a - b|| / ||b||; 0 when both are all zero, inf when only b is, NaN on NaN. */
const char *kb_compare_rel_l2(const kb_compare_source *src, kb_dtype ta, kb_dtype tb, size_t n, double *out);

/* The counts of kb.compare_elements (engine/core/compare_elements.c says what each means). worst is the
 * first element with the largest excess over atol + rtol * |want|, -1 when none exceeds it. a is
 * got, b is want. */
typedef struct {
  int64_t mismatches, unwritten, nan_mismatch, inf_mismatch, want_nan, worst;
  double max_abs, worst_excess, worst_got, worst_want;
} kb_compare_counts;

const char *kb_compare_counts_of(const kb_compare_source *src, kb_dtype tg, kb_dtype tw, size_t n, double atol,
                                 double rtol, kb_compare_counts *out);

#ifdef __cplusplus
}
#endif

#endif
