/* Element-wise tensor primitives behind kb.zeros, kb.randn, t:fill_, t:to.
 * CUDA twins in tensor_ops.cu, CPU twins in tensor_ops_cpu.c. All return NULL
 * on success or a message naming the failed call. `stream` is a cudaStream_t
 * on CUDA and unused on CPU. */
#ifndef KB_TENSOR_OPS_H
#define KB_TENSOR_OPS_H

#include <stddef.h>
#include <stdint.h>
#include "dtype.h"

/* Every element set to x rounded to dtype (nearest even). */
const char *kb_fill_cpu(void *p, kb_dtype t, size_t n, double x);
const char *kb_fill_cuda(void *p, kb_dtype t, size_t n, double x, void *stream);

/* Element i = N(0,1) sample i of stream `seed` (philox.h), rounded to f32,
 * then to dtype. */
const char *kb_randn_cpu(void *p, kb_dtype t, size_t n, uint64_t seed);
const char *kb_randn_cuda(void *p, kb_dtype t, size_t n, uint64_t seed, void *stream);

/* dst[i] = src[i] converted from st to dt (through f32 for 2-byte types when
 * either side is f32 or narrower; f64 <-> f64 is a copy). */
const char *kb_convert_cpu(void *dst, kb_dtype dt, const void *src, kb_dtype st, size_t n);
const char *kb_convert_cuda(void *dst, kb_dtype dt, const void *src, kb_dtype st, size_t n,
                            void *stream);

/* Busy-wait on the device for about `ns` nanoseconds (one thread): holds the
 * stream so that what is queued behind it is enqueued before the GPU gets
 * there, keeping launch overhead out of event timings. */
const char *kb_spin_cuda(uint64_t ns, void *stream);

#endif
