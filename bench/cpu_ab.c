/* In-process A/B of two builds of libdsv4kv on the CPU insert or indexer
 * store: one call of
 * each build in turn (the order swapped every pair), so that both see the
 * same moment of a shared machine's memory bandwidth, which on this
 * workplace's VMs moves by half within seconds and hides a 10-20 % change
 * in a comparison of separate bench processes.  Each build keeps its own
 * thread pool (dlopen RTLD_LOCAL).  Rows of bf16 keys of roughly unit scale
 * into pages of 64 slots whose order is shuffled, as `dsv4kv bench` does
 * (the indexer store: 128-dim keys at positions 0 .. ROWS - 1, cr 1).
 *
 *   cc -O2 -Iinclude -Ibuild/include bench/cpu_ab.c -ldl -o build/cpu_ab
 *   DSV4KV_CPU_SPIN_US=0 build/cpu_ab OLD.so NEW.so RECORD ROWS PAIRS [THREADS (2)]
 *   RECORD: v4, mxfp8, nvfp4 (the insert), indexer_fp8, indexer_mxfp4, or combine
 *   (combine_topk_swa_indices: ROWS tokens of requests of 256, top-k 512,
 *   window 128, compress ratio 4, as the bench's combine rows)
 *   CPU_AB_EVICT=1: 128 MiB written and read before each call (untimed), so
 *   that its inputs and outputs come from memory, as after the bench's memcpy
 *
 * (DSV4KV_CPU_SPIN_US=0: a build's workers watching for its next call would
 * take the processors the other build's call runs on.  Two copies of one
 * build give ratios within 0.95-1.04 on the Zen 4 VM.)
 *
 * Prints each build's median and fastest call and the median (quartiles)
 * of the per-pair time ratios new / old: below 1, the new build is faster. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dsv4kv.h"

typedef dsv4kv_status (*insert_fn)(const DLTensor *, const DLTensor *, const dsv4kv_cache_desc *, const DLTensor *,
                                   const dsv4kv_options *);
typedef dsv4kv_status (*indexer_fn)(const DLTensor *, const DLTensor *, const DLTensor *, const DLTensor *, float,
                                    const DLTensor *, const dsv4kv_cache_desc *, const DLTensor *, int32_t,
                                    const dsv4kv_options *);

typedef dsv4kv_status (*combine_fn)(const DLTensor *, const DLTensor *, const DLTensor *, const DLTensor *, int32_t,
                                    int32_t, int32_t, int32_t, int32_t, const DLTensor *, const DLTensor *,
                                    const dsv4kv_options *);
typedef int32_t (*record_bytes_fn)(dsv4kv_record);

/* One build's entry points, and the call's tensors. */
typedef struct {
  insert_fn insert;
  indexer_fn indexer;
  combine_fn combine;
  record_bytes_fn record_bytes;
} build;
enum { COMBINE = -2, COMBINE_TOPK = 512, COMBINE_WINDOW = 128, COMBINE_PER = 256 }; /* record_of's code for combine */
typedef struct {
  DLTensor k, slots, cache, pos, cos_sin, weight;
  DLTensor topk, qsl, seq, gls, comb, lens; /* combine */
  int32_t M, N;
  dsv4kv_cache_desc desc;
  int indexer, combine;
} call_args;

static dsv4kv_status call(const build *b, const call_args *c, const dsv4kv_options *o) {
  if (c->combine)
    return b->combine(&c->topk, &c->qsl, &c->seq, &c->gls, COMBINE_WINDOW, 4, COMBINE_TOPK, c->M, c->N, &c->comb,
                      &c->lens, o);
  return c->indexer ? b->indexer(&c->k, &c->pos, &c->cos_sin, &c->weight, 1e-6f, &c->cache, &c->desc, &c->slots, 1, o)
                    : b->insert(&c->k, &c->cache, &c->desc, &c->slots, o);
}

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}
static int by_value(const void *a, const void *b) {
  const double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* The build at path, into *b; 0 when a symbol is missing. */
static int load_build(const char *path, build *b) {
  void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  b->insert = h ? (insert_fn)dlsym(h, "dsv4kv_quantize_and_insert_k_cache") : NULL;
  b->indexer = h ? (indexer_fn)dlsym(h, "dsv4kv_indexer_k_norm_rope_store") : NULL;
  b->combine = h ? (combine_fn)dlsym(h, "dsv4kv_combine_topk_swa_indices") : NULL;
  b->record_bytes = h ? (record_bytes_fn)dlsym(h, "dsv4kv_record_bytes") : NULL;
  return b->insert && b->indexer && b->combine && b->record_bytes;
}

/* The record named rn (insert or indexer), or -1. */
static int record_of(const char *rn) {
  static const struct {
    const char *name;
    dsv4kv_record rec;
  } names[] = {{"v4", DSV4KV_RECORD_V4},
               {"mxfp8", DSV4KV_RECORD_MXFP8},
               {"nvfp4", DSV4KV_RECORD_NVFP4},
               {"indexer_fp8", DSV4KV_RECORD_INDEXER_FP8},
               {"indexer_mxfp4", DSV4KV_RECORD_INDEXER_MXFP4},
               {"combine", (dsv4kv_record)COMBINE}};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
    if (!strcmp(rn, names[i].name)) return (int)names[i].rec;
  return -1;
}

/* Combine's N rows (the bench's combine rows: requests of COMBINE_PER
 * tokens at positions past 4 x top-k); 0 when out of memory. */
static int make_combine(call_args *a, int64_t N) {
  const int64_t K = COMBINE_TOPK, R = (N + COMBINE_PER - 1) / COMBINE_PER, seq_len = 4 * K + COMBINE_PER;
  const int64_t gl = COMBINE_PER + COMBINE_WINDOW - 1, C = (K + COMBINE_WINDOW + 127) / 128 * 128;
  int32_t *topk = malloc((size_t)(N * K) * 4), *qsl = malloc((size_t)(R + 1) * 4), *seq = malloc((size_t)R * 4);
  int32_t *gls = malloc((size_t)R * 4), *comb = malloc((size_t)(N * C) * 4), *lens = malloc((size_t)N * 4);
  int64_t *shapes = malloc(8 * sizeof *shapes);
  if (!topk || !qsl || !seq || !gls || !comb || !lens || !shapes) return 0;
  a->combine = 1, a->N = (int32_t)(seq_len / 4), a->M = (int32_t)(seq_len / 4 + gl);
  srand(7);
  for (int64_t i = 0; i < N * K; i++) topk[i] = rand() % a->N;
  for (int64_t r = 0; r <= R; r++) qsl[r] = (int32_t)(r * COMBINE_PER < N ? r * COMBINE_PER : N);
  for (int64_t r = 0; r < R; r++) seq[r] = (int32_t)seq_len, gls[r] = (int32_t)gl;
  int64_t *ts = shapes, *rs1 = shapes + 2, *rs = shapes + 3, *cs = shapes + 4, *ns = shapes + 6;
  ts[0] = N, ts[1] = K, rs1[0] = R + 1, rs[0] = R, cs[0] = N, cs[1] = C, ns[0] = N;
  const DLDataType i32 = {kDLInt, 32, 1};
  a->topk = (DLTensor){topk, {kDLCPU, 0}, 2, i32, ts, NULL, 0};
  a->qsl = (DLTensor){qsl, {kDLCPU, 0}, 1, i32, rs1, NULL, 0};
  a->seq = (DLTensor){seq, {kDLCPU, 0}, 1, i32, rs, NULL, 0};
  a->gls = (DLTensor){gls, {kDLCPU, 0}, 1, i32, rs, NULL, 0};
  a->comb = (DLTensor){comb, {kDLCPU, 0}, 2, i32, cs, NULL, 0};
  a->lens = (DLTensor){lens, {kDLCPU, 0}, 1, i32, ns, NULL, 0};
  return 1;
}

/* N rows of record rec (N a multiple of 64, rb its bytes) into a's tensors,
 * as the header says; 0 when out of memory (the process then exits). */
static int make_call(call_args *a, dsv4kv_record rec, int64_t N, int64_t rb) {
  if ((int)rec == COMBINE) return make_combine(a, N);
  a->indexer = rec == DSV4KV_RECORD_INDEXER_FP8 || rec == DSV4KV_RECORD_INDEXER_MXFP4;
  const int64_t D = a->indexer ? 128 : 512, P = N / 64; /* key dims, pages */
  uint16_t *k = aligned_alloc(64, (size_t)(N * D * 2));
  uint8_t *c = aligned_alloc(64, (size_t)(P * 64 * rb));
  int64_t *slots = malloc((size_t)N * 8), *perm = malloc((size_t)P * 8), *pos = malloc((size_t)N * 8);
  float *cs = malloc((size_t)N * 64 * 4), *w = malloc(128 * 4);
  int64_t *shapes = malloc(8 * sizeof *shapes);
  if (!k || !c || !slots || !perm || !pos || !cs || !w || !shapes) return 0;
  srand(7);
  for (int64_t i = 0; i < N * D; i++) {
    const float v = (float)(rand() % 2001 - 1000) / 300.0f;
    uint32_t u;
    memcpy(&u, &v, 4);
    k[i] = (uint16_t)(u >> 16);
  }
  for (int64_t i = 0; i < N * 64; i++) cs[i] = (float)(rand() % 2001) / 1000.0f - 1.0f;
  for (int i = 0; i < 128; i++) w[i] = 1.0f + (float)(rand() % 100) / 1000.0f;
  memset(c, 0, (size_t)(P * 64 * rb));
  for (int64_t i = 0; i < P; i++) perm[i] = i;
  for (int64_t i = P - 1; i > 0; i--) {
    const int64_t j = rand() % (i + 1), x = perm[i];
    perm[i] = perm[j], perm[j] = x;
  }
  for (int64_t i = 0; i < N; i++) slots[i] = perm[i / 64] * 64 + i % 64, pos[i] = i;
  free(perm);
  int64_t *ks = shapes, *cshape = shapes + 2, *css = shapes + 4, *ns = shapes + 6, *ws = shapes + 7;
  ks[0] = N, ks[1] = D, cshape[0] = P, cshape[1] = 64 * rb, css[0] = N, css[1] = 64, ns[0] = N, ws[0] = 128;
  a->k = (DLTensor){k, {kDLCPU, 0}, 2, {kDLBfloat, 16, 1}, ks, NULL, 0};
  a->slots = (DLTensor){slots, {kDLCPU, 0}, 1, {kDLInt, 64, 1}, ns, NULL, 0};
  a->cache = (DLTensor){c, {kDLCPU, 0}, 2, {kDLUInt, 8, 1}, cshape, NULL, 0};
  a->pos = (DLTensor){pos, {kDLCPU, 0}, 1, {kDLInt, 64, 1}, ns, NULL, 0};
  a->cos_sin = (DLTensor){cs, {kDLCPU, 0}, 2, {kDLFloat, 32, 1}, css, NULL, 0};
  a->weight = (DLTensor){w, {kDLCPU, 0}, 1, {kDLFloat, 32, 1}, ws, NULL, 0};
  a->desc = (dsv4kv_cache_desc){rec, DSV4KV_FP8_OCP, 64, 0, 0};
  return 1;
}

int main(int argc, char **argv) {
  const int rec = argc >= 6 ? record_of(argv[3]) : -1;
  const int64_t N = argc >= 6 ? atoll(argv[4]) / 64 * 64 : 0;
  const int pairs = argc >= 6 ? atoi(argv[5]) : 0;
  if (rec == -1 || N < 64 || pairs < 1) {
    fprintf(stderr, "usage: %s OLD.so NEW.so v4|mxfp8|nvfp4|indexer_fp8|indexer_mxfp4|combine ROWS PAIRS [THREADS]\n"
                    "  (ROWS >= 64, PAIRS >= 1)\n", argv[0]);
    return 2;
  }
  build f[2];
  for (int i = 0; i < 2; i++)
    if (!load_build(argv[1 + i], &f[i])) return fprintf(stderr, "%s: %s\n", argv[1 + i], dlerror()), 2;
  call_args a;
  memset(&a, 0, sizeof a);
  double *t[2] = {malloc(pairs * sizeof(double)), malloc(pairs * sizeof(double))}, *r = malloc(pairs * sizeof(double));
  if (!t[0] || !t[1] || !r || !make_call(&a, (dsv4kv_record)rec, N, rec == COMBINE ? 0 : f[0].record_bytes((dsv4kv_record)rec)))
    return fprintf(stderr, "out of memory\n"), 1;
  const dsv4kv_options o = {.num_threads = argc > 6 ? atoi(argv[6]) : 2};
  for (int i = 0; i < 4; i++) /* warm-up: pools started, pages touched */
    if (call(&f[i % 2], &a, &o) != DSV4KV_OK) return fprintf(stderr, "call failed\n"), 1;
  const char *ev = getenv("CPU_AB_EVICT");
  const size_t evict_bytes = ev && atoi(ev) ? (size_t)128 << 20 : 0;
  unsigned char *evict = evict_bytes ? malloc(evict_bytes) : NULL;
  if (evict_bytes && !evict) return fprintf(stderr, "out of memory\n"), 1;
  volatile unsigned sink = 0;
  for (int n = 0; n < pairs; n++) {
    for (int m = 0; m < 2; m++) {
      const int i = n % 2 ? 1 - m : m;
      if (evict) { /* every line of the caches replaced by this buffer's */
        memset(evict, n + m, evict_bytes);
        for (size_t b = 0; b < evict_bytes; b += 64) sink += evict[b];
      }
      const double t0 = now();
      if (call(&f[i], &a, &o) != DSV4KV_OK) return fprintf(stderr, "call failed\n"), 1;
      t[i][n] = now() - t0;
    }
    r[n] = t[1][n] / t[0][n];
  }
  (void)sink;
  free(evict);
  qsort(t[0], pairs, sizeof(double), by_value), qsort(t[1], pairs, sizeof(double), by_value);
  qsort(r, pairs, sizeof(double), by_value);
  const int us = t[0][pairs / 2] < 1e-3; /* short calls in microseconds */
  const double u = us ? 1e6 : 1e3;
  printf("%s%s N=%lld, %d threads, %d pairs: old median %.2f %s (fastest %.2f), new %.2f %s (%.2f); "
         "new / old median %.3f [quartiles %.3f %.3f]\n",
         a.indexer || a.combine ? "" : "insert_", argv[3], (long long)N, o.num_threads, pairs, u * t[0][pairs / 2],
         us ? "us" : "ms", u * t[0][0], u * t[1][pairs / 2], us ? "us" : "ms", u * t[1][0], r[pairs / 2], r[pairs / 4],
         r[3 * pairs / 4]);
  return 0;
}
