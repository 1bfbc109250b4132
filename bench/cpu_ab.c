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
 *   RECORD: v4, mxfp8, nvfp4 (the insert) or indexer_fp8, indexer_mxfp4
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

/* One build's entry points, and the call's tensors. */
typedef struct {
  insert_fn insert;
  indexer_fn indexer;
} build;
typedef struct {
  DLTensor k, slots, cache, pos, cos_sin, weight;
  dsv4kv_cache_desc desc;
  int indexer;
} call_args;

static dsv4kv_status call(const build *b, const call_args *c, const dsv4kv_options *o) {
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

int main(int argc, char **argv) {
  if (argc < 6) {
    fprintf(stderr, "usage: %s OLD.so NEW.so v4|mxfp8|nvfp4 ROWS PAIRS [THREADS]\n", argv[0]);
    return 2;
  }
  build f[2];
  for (int i = 0; i < 2; i++) {
    void *h = dlopen(argv[1 + i], RTLD_NOW | RTLD_LOCAL);
    f[i].insert = h ? (insert_fn)dlsym(h, "dsv4kv_quantize_and_insert_k_cache") : NULL;
    f[i].indexer = h ? (indexer_fn)dlsym(h, "dsv4kv_indexer_k_norm_rope_store") : NULL;
    if (!f[i].insert || !f[i].indexer) return fprintf(stderr, "%s: %s\n", argv[1 + i], dlerror()), 2;
  }
  const char *rn = argv[3];
  const dsv4kv_record rec = !strcmp(rn, "mxfp8")           ? DSV4KV_RECORD_MXFP8
                            : !strcmp(rn, "nvfp4")         ? DSV4KV_RECORD_NVFP4
                            : !strcmp(rn, "indexer_fp8")   ? DSV4KV_RECORD_INDEXER_FP8
                            : !strcmp(rn, "indexer_mxfp4") ? DSV4KV_RECORD_INDEXER_MXFP4
                                                           : DSV4KV_RECORD_V4;
  const int idx = rec == DSV4KV_RECORD_INDEXER_FP8 || rec == DSV4KV_RECORD_INDEXER_MXFP4;
  const int64_t D = idx ? 128 : 512; /* key dims */
  const int64_t N = atoll(argv[4]) / 64 * 64, P = N / 64;
  const int64_t rb = rec == DSV4KV_RECORD_MXFP8 ? 528 : rec == DSV4KV_RECORD_NVFP4 ? 288 : rec == DSV4KV_RECORD_V4 ? 584
                     : rec == DSV4KV_RECORD_INDEXER_FP8 ? 132 : 68; /* SPEC §2, §6 */
  const int pairs = atoi(argv[5]);
  if (N < 64 || pairs < 1) return fprintf(stderr, "ROWS >= 64 and PAIRS >= 1\n"), 2;
  uint16_t *k = aligned_alloc(64, (size_t)(N * D * 2));
  uint8_t *c = aligned_alloc(64, (size_t)(P * 64 * rb));
  int64_t *slots = malloc((size_t)N * 8), *perm = malloc((size_t)P * 8), *pos = malloc((size_t)N * 8);
  float *cs = malloc((size_t)N * 64 * 4), w[128];
  double *t[2] = {malloc(pairs * sizeof(double)), malloc(pairs * sizeof(double))}, *r = malloc(pairs * sizeof(double));
  if (!k || !c || !slots || !perm || !pos || !cs || !t[0] || !t[1] || !r) return fprintf(stderr, "out of memory\n"), 1;
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
  int64_t ks[2] = {N, D}, ss[1] = {N}, cshape[2] = {P, 64 * rb}, css[2] = {N, 64}, ws[1] = {128};
  const call_args a = {{k, {kDLCPU, 0}, 2, {kDLBfloat, 16, 1}, ks, NULL, 0},
                       {slots, {kDLCPU, 0}, 1, {kDLInt, 64, 1}, ss, NULL, 0},
                       {c, {kDLCPU, 0}, 2, {kDLUInt, 8, 1}, cshape, NULL, 0},
                       {pos, {kDLCPU, 0}, 1, {kDLInt, 64, 1}, ss, NULL, 0},
                       {cs, {kDLCPU, 0}, 2, {kDLFloat, 32, 1}, css, NULL, 0},
                       {w, {kDLCPU, 0}, 1, {kDLFloat, 32, 1}, ws, NULL, 0},
                       {rec, DSV4KV_FP8_OCP, 64, 0, 0},
                       idx};
  const dsv4kv_options o = {.num_threads = argc > 6 ? atoi(argv[6]) : 2};
  for (int i = 0; i < 4; i++) /* warm-up: pools started, pages touched */
    if (call(&f[i % 2], &a, &o) != DSV4KV_OK) return fprintf(stderr, "call failed\n"), 1;
  for (int n = 0; n < pairs; n++) {
    for (int m = 0; m < 2; m++) {
      const int i = n % 2 ? 1 - m : m;
      const double t0 = now();
      if (call(&f[i], &a, &o) != DSV4KV_OK) return fprintf(stderr, "call failed\n"), 1;
      t[i][n] = now() - t0;
    }
    r[n] = t[1][n] / t[0][n];
  }
  qsort(t[0], pairs, sizeof(double), by_value), qsort(t[1], pairs, sizeof(double), by_value);
  qsort(r, pairs, sizeof(double), by_value);
  printf("%s%s N=%lld, %d threads, %d pairs: old median %.2f ms (fastest %.2f), new %.2f ms (%.2f); "
         "new / old median %.3f [quartiles %.3f %.3f]\n",
         idx ? "" : "insert_", rn, (long long)N, o.num_threads, pairs, 1e3 * t[0][pairs / 2], 1e3 * t[0][0], 1e3 * t[1][pairs / 2],
         1e3 * t[1][0], r[pairs / 2], r[pairs / 4], r[3 * pairs / 4]);
  return 0;
}
