/* kb_cpu_parallel_for (parallel_cpu.h): one pthread per range. */
#include <pthread.h>
#include <unistd.h>
#include "parallel_cpu.h"

typedef struct {
  kb_cpu_range_fn fn;
  void *ctx;
  size_t begin, end;
} range_job;

static void *run_range(void *p) {
  range_job *j = p;
  j->fn(j->ctx, j->begin, j->end);
  return NULL;
}

int kb_cpu_threads(size_t n, size_t grain) {
  static long cores;
  if (!cores) {
    long c = sysconf(_SC_NPROCESSORS_ONLN);
    cores = c < 1 ? 1 : c > KB_CPU_MAX_THREADS ? KB_CPU_MAX_THREADS : c;
  }
  size_t by_size = grain ? n / grain : n;
  if (by_size < 1) by_size = 1;
  return (int)((size_t)cores < by_size ? (size_t)cores : by_size);
}

void kb_cpu_parallel_for(size_t n, size_t grain, kb_cpu_range_fn fn, void *ctx) {
  if (n == 0) return;
  int nt = kb_cpu_threads(n, grain);
  if (nt == 1) {
    fn(ctx, 0, n);
    return;
  }
  range_job jobs[KB_CPU_MAX_THREADS];
  pthread_t tids[KB_CPU_MAX_THREADS];
  int started[KB_CPU_MAX_THREADS] = {0};
  for (int i = 0; i < nt; i++) jobs[i] = (range_job){fn, ctx, n * (size_t)i / (size_t)nt, n * (size_t)(i + 1) / (size_t)nt};
  for (int i = 1; i < nt; i++) started[i] = pthread_create(&tids[i], NULL, run_range, &jobs[i]) == 0;
  run_range(&jobs[0]);
  for (int i = 1; i < nt; i++) {
    if (started[i])
      pthread_join(tids[i], NULL);
    else
      run_range(&jobs[i]);
  }
}
