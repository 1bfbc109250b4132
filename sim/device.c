/* The simulator's device mode (see device.h). */
#include "device.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "devmem.h"

#define SIM_DEV_MAX_CACHES 32
#define SIM_DEV_MAX_STAGED 32

typedef struct {
  uint8_t *host, *dev;
  size_t n;
} region;

typedef struct {
  void *host, *dev;
  size_t n, cap;
} staged;

static struct {
  int on, failed;
  region caches[SIM_DEV_MAX_CACHES];
  int ncaches;
  staged st[SIM_DEV_MAX_STAGED];
  int nst;
  dsv4kv_report *report;
  char msg[768];
} D;

int sim_dev_on(void) { return D.on; }

int sim_dev_open(void) {
  if (!dsv4kv_backend_available(kDLCUDA)) {
    fprintf(stderr, "dsv4kv run: --device cuda: CUDA cannot run here (libdsv4kv %s: %s); run with --device cpu.\n",
            dsv4kv_version(), dsv4kv_backend_unavailable_reason(kDLCUDA));
    return -1;
  }
  if (!devmem_available()) {
    fprintf(stderr, "dsv4kv run: --device cuda: %s; run with --device cpu.\n", devmem_error());
    return -1;
  }
  D.report = devmem_alloc(sizeof(dsv4kv_report));
  if (!D.report) {
    fprintf(stderr, "dsv4kv run: --device cuda: %s\n", devmem_error());
    return -1;
  }
  D.on = 1;
  return 0;
}

void sim_dev_close(void) {
  for (int i = 0; i < D.ncaches; i++) devmem_free(D.caches[i].dev);
  for (int i = 0; i < SIM_DEV_MAX_STAGED; i++) devmem_free(D.st[i].dev);
  devmem_free(D.report);
  memset(&D, 0, sizeof D);
}

void sim_dev_describe(char *buf, size_t len) { devmem_describe(buf, len); }

int sim_dev_cache(void *host, size_t n) {
  if (!D.on || !host) return 0;
  if (D.ncaches == SIM_DEV_MAX_CACHES) return -1;
  region *r = &D.caches[D.ncaches];
  r->dev = devmem_alloc(n);
  if (!r->dev || devmem_upload(r->dev, host, n) || devmem_sync()) {
    devmem_free(r->dev);
    fprintf(stderr, "dsv4kv run: --device cuda: cache of %zu bytes: %s\n", n, devmem_error());
    return -1;
  }
  r->host = host;
  r->n = n;
  D.ncaches++;
  return 0;
}

void sim_dev_drop_caches(void) {
  for (int i = 0; i < D.ncaches; i++) devmem_free(D.caches[i].dev);
  D.ncaches = 0;
}

static const region *cache_of(const void *p, size_t n) {
  const uint8_t *b = p;
  for (int i = 0; i < D.ncaches; i++)
    if (b >= D.caches[i].host && b + n <= D.caches[i].host + D.caches[i].n) return &D.caches[i];
  return NULL;
}

int sim_dev_fetch(const void *host, size_t n) {
  if (!D.on) return 0;
  const region *r = cache_of(host, n);
  if (!r) return -1;
  return devmem_download((void *)host, r->dev + ((const uint8_t *)host - r->host), n) || devmem_sync();
}

void sim_dev_call_begin(dsv4kv_options *o) {
  D.nst = 0;
  D.failed = 0;
  D.msg[0] = '\0';
  o->skipped = NULL; /* host counters are refused on a stream-ordered device */
  o->nonfinite = NULL;
  o->report = D.report;
  o->stream = devmem_stream();
  devmem_mark(0);
}

void *sim_dev_map(void *host, size_t n) {
  if (n == 0) return NULL;
  const region *r = cache_of(host, n);
  if (r) return r->dev + ((uint8_t *)host - r->host);
  if (D.nst == SIM_DEV_MAX_STAGED) {
    D.failed = 1;
    snprintf(D.msg, sizeof D.msg, "more than %d tensors in one call", SIM_DEV_MAX_STAGED);
    return NULL;
  }
  staged *s = &D.st[D.nst];
  if (s->cap < n) { /* slots are kept between calls: allocation leaves the timed region */
    devmem_free(s->dev);
    s->cap = n < ((size_t)1 << 20) ? (size_t)1 << 20 : n + n / 4;
    s->dev = devmem_alloc(s->cap);
    if (!s->dev) {
      s->cap = 0;
      D.failed = 1;
      snprintf(D.msg, sizeof D.msg, "staging %zu bytes: %s", n, devmem_error());
      return NULL;
    }
  }
  if (devmem_upload(s->dev, host, n)) {
    D.failed = 1;
    snprintf(D.msg, sizeof D.msg, "staging %zu bytes: %s", n, devmem_error());
    return NULL;
  }
  s->host = host;
  s->n = n;
  D.nst++;
  devmem_mark(0); /* the GPU time starts after the last upload */
  return s->dev;
}

dsv4kv_status sim_dev_call_end(dsv4kv_status st, int64_t *skipped, double *seconds) {
  *skipped = 0;
  *seconds = 0;
  int bad = devmem_mark(1);
  dsv4kv_report rep;
  memset(&rep, 0, sizeof rep);
  bad |= devmem_sync();
  if (!bad && !dsv4kv_is_error(st)) {
    double ms = devmem_elapsed_ms();
    *seconds = ms > 0 ? ms / 1e3 : 0;
  }
  bad |= devmem_download(&rep, D.report, sizeof rep);
  for (int i = 0; i < D.nst; i++) bad |= devmem_download(D.st[i].host, D.st[i].dev, D.st[i].n);
  bad |= devmem_sync();
  D.nst = 0;
  if (D.failed || bad) {
    if (!D.msg[0]) snprintf(D.msg, sizeof D.msg, "%s", devmem_error());
    return DSV4KV_ERR_BACKEND;
  }
  if (dsv4kv_is_error(st)) return st;
  *skipped = rep.skipped;
  st = dsv4kv_report_status(&rep);
  if (st != DSV4KV_OK) dsv4kv_report_message(&rep, D.msg, sizeof D.msg);
  return st;
}

const char *sim_dev_message(void) { return D.msg; }
