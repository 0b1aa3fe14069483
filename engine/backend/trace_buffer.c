/* The buffer that kernel tracing fills (trace.h): the backends append a
 * record per kernel or copy (the cpu backend from its own kernels, CUPTI's
 * thread through trace_cupti.c), kb.trace (core/trace.c) takes them out.
 * Below both, so that a backend never calls the binding that reads device
 * arguments. CUPTI delivers from its own thread, hence the mutex. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "trace.h"

#define KB_TRACE_MAX (1u << 20)

volatile int kb_trace_cpu_on;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static kb_trace_rec *recs;
static size_t nrecs, caprecs;
static uint64_t ndropped;

/* Kernel names repeat: keep one copy of each for the life of the process. */
static char **names;
static size_t nnames, capnames;

static const char *intern(const char *s) {
  for (size_t i = 0; i < nnames; i++)
    if (strcmp(names[i], s) == 0) return names[i];
  if (nnames == capnames) {
    size_t cap = capnames ? 2 * capnames : 64;
    char **n = realloc(names, cap * sizeof *n);
    if (!n) return NULL;
    names = n;
    capnames = cap;
  }
  char *c = strdup(s);
  if (c) names[nnames++] = c;
  return c;
}

uint64_t kb_trace_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void kb_trace_add(const kb_trace_rec *r) {
  pthread_mutex_lock(&mu);
  if (nrecs == caprecs && caprecs < KB_TRACE_MAX) {
    size_t cap = caprecs ? 2 * caprecs : 256;
    kb_trace_rec *n = realloc(recs, cap * sizeof *n);
    if (n) {
      recs = n;
      caprecs = cap;
    }
  }
  const char *name = r->name ? intern(r->name) : NULL;
  if (nrecs < caprecs && name) {
    recs[nrecs] = *r;
    recs[nrecs].name = name;
    nrecs++;
  } else {
    ndropped++;
  }
  pthread_mutex_unlock(&mu);
}

void kb_trace_dropped(uint64_t n) {
  pthread_mutex_lock(&mu);
  ndropped += n;
  pthread_mutex_unlock(&mu);
}

kb_trace_rec *kb_trace_take(size_t *n, uint64_t *lost) {
  pthread_mutex_lock(&mu);
  kb_trace_rec *mine = recs;
  *n = nrecs;
  *lost = ndropped;
  recs = NULL;
  nrecs = caprecs = 0;
  ndropped = 0;
  pthread_mutex_unlock(&mu);
  return mine;
}
