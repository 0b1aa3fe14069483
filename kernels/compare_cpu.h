/* Comparisons of two host buffers of n elements each (any dtypes, read as
 * doubles): the largest |a - b|, the relative L2 error and the element-wise
 * tolerance counts behind kb.max_abs_diff, kb.rel_l2 and kb.compare_elements.
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

/* Each returns 0, or -1 when the per-chunk results cannot be allocated (one small struct per
 * chunk of KB_COMPARE_CHUNK elements). */

/* *out = the largest |a[i] - b[i]|; NaN when any difference is NaN. */
int kb_host_max_abs_diff(const void *a, kb_dtype ta, const void *b, kb_dtype tb, size_t n, double *out);

/* *out = ||a - b|| / ||b||; 0 when both are all zero, inf when only b is, NaN on NaN. */
int kb_host_rel_l2(const void *a, kb_dtype ta, const void *b, kb_dtype tb, size_t n, double *out);

/* The counts of kb.compare_elements (engine/compare_elements.c says what each means). worst is the
 * first element with the largest excess over atol + rtol * |want|, -1 when none exceeds it. */
typedef struct {
  int64_t mismatches, unwritten, nan_mismatch, inf_mismatch, want_nan, worst;
  double max_abs, worst_excess, worst_got, worst_want;
} kb_compare_counts;

int kb_host_compare_elements(const void *got, kb_dtype tg, const void *want, kb_dtype tw, size_t n, double atol,
                             double rtol, kb_compare_counts *out);

#ifdef __cplusplus
}
#endif

#endif
