/* The host cost of cuLaunchKernel in a C loop (make builds it with CUDA=1).
 *
 * The floor that scripts/launch_overhead_user.lua compares kernel:launch with.
 *
 *   build/scripts/launch_overhead_c MODULE KERNEL [BATCHES [PER_BATCH]]
 *
 * Loads MODULE (cubin or PTX), launches KERNEL (signature: float *, int,
 * float) PER_BATCH times per batch on a non-blocking stream, timing each
 * batch's launches on the host clock and synchronising between batches (not
 * timed), and prints "ns_per_launch <median over batches>". */
#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define CK(x)                                                                                  \
  do {                                                                                         \
    CUresult r_ = (x);                                                                         \
    if (r_ != CUDA_SUCCESS) {                                                                  \
      const char *n_ = "?";                                                                    \
      cuGetErrorName(r_, &n_);                                                                 \
      fprintf(stderr, "%s: %s\n", #x, n_);                                                     \
      exit(1);                                                                                 \
    }                                                                                          \
  } while (0)

static double now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: %s MODULE KERNEL [BATCHES [PER_BATCH]]\n", argv[0]);
    return 2;
  }
  int batches = argc > 3 ? atoi(argv[3]) : 200, per = argc > 4 ? atoi(argv[4]) : 256;
  FILE *f = fopen(argv[1], "rb");
  if (!f) { perror(argv[1]); return 1; }
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *image = malloc((size_t)n + 1);
  if (fread(image, 1, (size_t)n, f) != (size_t)n) { perror("fread"); return 1; }
  image[n] = 0;
  fclose(f);
  CUdevice dev;
  CUcontext ctx;
  CUmodule mod;
  CUfunction fn;
  CUstream stream;
  CUdeviceptr p;
  CK(cuInit(0));
  CK(cuDeviceGet(&dev, 0));
  CK(cuDevicePrimaryCtxRetain(&ctx, dev));
  CK(cuCtxSetCurrent(ctx));
  CK(cuModuleLoadData(&mod, image));
  CK(cuModuleGetFunction(&fn, mod, argv[2]));
  CK(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
  CK(cuMemAlloc(&p, 1024));
  int count = 256;
  float a = 2.0f;
  void *params[] = {&p, &count, &a};
  double *t = malloc(sizeof(double) * (size_t)batches);
  for (int b = -10; b < batches; b++) { /* 10 warm-up batches */
    double t0 = now_ns();
    for (int i = 0; i < per; i++) CK(cuLaunchKernel(fn, 1, 1, 1, 32, 1, 1, 0, stream, params, NULL));
    double t1 = now_ns();
    CK(cuStreamSynchronize(stream));
    if (b >= 0) t[b] = (t1 - t0) / per;
  }
  qsort(t, (size_t)batches, sizeof *t, cmp);
  printf("ns_per_launch %.1f\n", t[batches / 2]);
  return 0;
}
