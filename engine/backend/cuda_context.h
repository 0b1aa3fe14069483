/* Whether the CUDA context can still be used: one rule for every file that
 * calls CUDA (the backend, the CUDA side of kb.trust, user kernels launched
 * through the driver API or by plugins). An error that poisons the context
 * stops every later call; cuda_context.c says why. Without CUDA nothing can
 * poison a context: kb_cuda_refuse is always NULL. */
#ifndef KB_CUDA_CONTEXT_H
#define KB_CUDA_CONTEXT_H

/* NULL while the context is usable, else "<what>: <sticky error>; the CUDA
 * context is unusable, kluabench cannot continue". */
const char *kb_cuda_refuse(const char *what);
/* The message for a failed call made outside the runtime: "<what>: <name>
 * (<text>)"; marks the context unusable when code (a CUresult or
 * cudaError_t: the codes that poison a context are equal in both) is one of
 * those errors. name and text may be NULL. */
const char *kb_cuda_external_fail(const char *what, int code, const char *name, const char *text);

#ifdef KB_WITH_CUDA
/* A failed runtime call (code a cudaError_t): "<what>: cudaErrorX (text)".
 * An error of this call alone is cleared, so that the next call starts
 * clean; one that poisons the context marks it unusable. */
const char *kb_cuda_fail(const char *what, int code);
/* A kernel wrapper's message (NULL: it launched): when the launch poisoned
 * the context, marks it and says so. */
const char *kb_cuda_kernel_fail(const char *msg);
#endif

#endif
