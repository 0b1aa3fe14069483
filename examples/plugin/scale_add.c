/* A kluabench plugin (include/kluabench_plugin.h): out = alpha * x + y on
 * f32 tensors, with a CPU twin here and a CUDA entry in scale_add.cu (built
 * in only when SCALE_ADD_CUDA is defined). `make` builds it into
 * build/plugins/libscale_add.so; examples/user_plugin.lua uses it. */
#include <stdio.h>
#include "kluabench_plugin.h"

/* The checks both entries share: three f32 tensors of one size. The engine
 * has checked the kinds (tensor, tensor, tensor, f64) already. */
int scale_add_check(const kb_plugin_arg *a, int n, char *err, size_t errlen) {
  (void)n;
  for (int i = 0; i < 3; i++) {
    if (a[i].u.tensor.dtype != KB_PLUGIN_F32) {
      snprintf(err, errlen, "scale_add: argument %d must be an f32 tensor", i + 1);
      return 1;
    }
    if (a[i].u.tensor.numel != a[0].u.tensor.numel) {
      snprintf(err, errlen, "scale_add: argument %d has %lld elements, out has %lld", i + 1,
               (long long)a[i].u.tensor.numel, (long long)a[0].u.tensor.numel);
      return 1;
    }
  }
  return 0;
}

static int scale_add_cpu(const kb_plugin_arg *a, int n, void *stream, char *err, size_t errlen) {
  (void)stream;
  if (scale_add_check(a, n, err, errlen)) return 1;
  float *out = (float *)a[0].u.tensor.data;
  const float *x = (const float *)a[1].u.tensor.data, *y = (const float *)a[2].u.tensor.data;
  const float alpha = (float)a[3].u.f;
  for (int64_t i = 0; i < a[0].u.tensor.numel; i++) out[i] = alpha * x[i] + y[i];
  return 0;
}

#ifdef SCALE_ADD_CUDA
int scale_add_cuda(const kb_plugin_arg *a, int n, void *stream, char *err, size_t errlen);
#define CUDA_ENTRY scale_add_cuda
#else
#define CUDA_ENTRY NULL
#endif

static const kb_plugin_kernel kernels[] = {
    {"scale_add", "tensor, tensor, tensor, f64", CUDA_ENTRY, scale_add_cpu,
     "out = alpha * x + y, f32 tensors of one size"},
};

static const kb_plugin plugin = {KB_PLUGIN_ABI_VERSION, "scale_add", "1.0.0", 1, kernels};

const kb_plugin *kluabench_plugin(void) { return &plugin; }
