/*
 * test_cuda.c - what the op registry (tests/ops, --backend cuda) cannot show
 * case by case, on a real GPU, each against the CPU backend byte for byte:
 *
 *   big_offsets   inserts and gathers of slots whose byte offset in the cache
 *                 passes 2^31 and 2^32 (a 4.4 GB V4 cache);
 *   graph         one decode step (SWA insert, indexer store, global top-k,
 *                 gather), each call with its own device report, captured once
 *                 in a CUDA graph and replayed on fresh inputs;
 *   two_streams   two independent decode steps issued on two streams at once
 *                 (eagerly, interleaved), against the serial CPU results;
 *   empty         every op on empty batches (no rows, no requests): OK, the
 *                 device report reset (a poisoned one overwritten), no launch
 *                 error, outputs untouched;
 *   warmup        dsv4kv_warmup of the DeepSeek-V4-Flash layer pattern.
 *
 * Every output buffer is poisoned before each device run.  Exit 0: all
 * passed; 1: a failure (named on stderr); 77: no CUDA backend or device.
 */
#include <cuda_runtime.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dsv4kv.h"

static int failures;
#define CHECK(c, ...)                                  \
  do {                                                 \
    if (!(c)) {                                        \
      fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__); \
      fprintf(stderr, __VA_ARGS__);                    \
      fprintf(stderr, "\n");                           \
      failures++;                                      \
    }                                                  \
  } while (0)
#define CUDA(x)                                                                      \
  do {                                                                               \
    cudaError_t e_ = (x);                                                            \
    if (e_ != cudaSuccess) {                                                         \
      fprintf(stderr, "FAIL %s:%d: %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
      exit(1);                                                                       \
    }                                                                                \
  } while (0)

static uint64_t rng = 0x243F6A8885A308D3ull;
static uint64_t next(void) {
  rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
  return rng;
}
static double unif(void) { return (double)(next() >> 11) / 9007199254740992.0; }
static uint16_t bf16_rand(void) { return dsv4kv_f32_to_bf16((float)((unif() * 2 - 1) * 8.0)); }

/* A buffer on both sides. */
typedef struct {
  uint8_t *h, *d;
  size_t n;
} buf;
static buf mk(size_t n) {
  buf b = {malloc(n ? n : 1), NULL, n};
  CUDA(cudaMalloc((void **)&b.d, n ? n : 1));
  memset(b.h, 0, n);
  return b;
}
static void drop(buf *b) {
  free(b->h);
  cudaFree(b->d);
}
static void up(buf *b, cudaStream_t s) { CUDA(cudaMemcpyAsync(b->d, b->h, b->n, cudaMemcpyHostToDevice, s)); }
static void poison(buf *b, cudaStream_t s) { CUDA(cudaMemsetAsync(b->d, 0xCD, b->n, s)); }
static int same(buf *b, const char *what) { /* device bytes == host bytes (after a sync) */
  uint8_t *g = malloc(b->n ? b->n : 1);
  CUDA(cudaMemcpy(g, b->d, b->n, cudaMemcpyDeviceToHost));
  size_t i = 0;
  while (i < b->n && g[i] == b->h[i]) i++;
  if (i < b->n) fprintf(stderr, "  %s: first difference at byte %zu of %zu (gpu 0x%02x, cpu 0x%02x)\n", what, i, b->n, g[i], b->h[i]);
  free(g);
  return i == b->n;
}

static DLTensor dl(buf *b, int dev, DLDataType dt, int ndim, int64_t *shape) {
  DLTensor t = {dev ? (void *)b->d : (void *)b->h, {dev ? kDLCUDA : kDLCPU, 0}, ndim, dt, shape, NULL, 0};
  return t;
}
static const DLDataType BF16 = {kDLBfloat, 16, 1}, U8 = {kDLUInt, 8, 1}, I32 = {kDLInt, 32, 1},
                        I64 = {kDLInt, 64, 1}, F32 = {kDLFloat, 32, 1};

/* ---- one decode step ---------------------------------------------------- */
enum { T = 48, R = 48, PAGES = 96, BS = 64, K = 96, BT_COLS = 8, IDX_BS = 64, CS_ROWS = 4096 };
typedef struct {
  buf k, slots, cache;                                  /* SWA insert        */
  buf kpre, pos, cs, w, icache, islots;                 /* indexer store     */
  buf topk, req, bt, valid, glob, glens;                /* global top-k      */
  buf out, seq, gl;                                     /* gather            */
  buf rep[4];                                           /* device reports    */
} step_bufs;

static void step_alloc(step_bufs *s) {
  s->k = mk(T * 512 * 2), s->slots = mk(T * 8), s->cache = mk((size_t)PAGES * BS * 584);
  s->kpre = mk(T * 128 * 2), s->pos = mk(T * 8), s->cs = mk(CS_ROWS * 64 * 4), s->w = mk(128 * 4);
  s->icache = mk((size_t)PAGES * IDX_BS * 132), s->islots = mk(T * 8);
  s->topk = mk(T * K * 4), s->req = mk(T * 4), s->bt = mk(R * BT_COLS * 4), s->valid = mk(T);
  s->glob = mk(T * K * 4), s->glens = mk(T * 4);
  s->out = mk((size_t)R * 8 * 512 * 2), s->seq = mk(R * 4), s->gl = mk(R * 4);
  for (int i = 0; i < 4; i++) s->rep[i] = mk(sizeof(dsv4kv_report));
}
static void step_free(step_bufs *s) {
  buf *all[] = {&s->k, &s->slots, &s->cache, &s->kpre, &s->pos, &s->cs, &s->w, &s->icache, &s->islots, &s->topk,
                &s->req, &s->bt, &s->valid, &s->glob, &s->glens, &s->out, &s->seq, &s->gl,
                &s->rep[0], &s->rep[1], &s->rep[2], &s->rep[3]};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) drop(all[i]);
}

/* Fresh inputs on the host, with a few entries out of range (counted). */
static void step_fill(step_bufs *s) {
  uint16_t *k = (uint16_t *)s->k.h, *kp = (uint16_t *)s->kpre.h;
  for (int i = 0; i < T * 512; i++) k[i] = bf16_rand();
  for (int i = 0; i < T * 128; i++) kp[i] = bf16_rand();
  int64_t *sl = (int64_t *)s->slots.h, *pos = (int64_t *)s->pos.h, *isl = (int64_t *)s->islots.h;
  int64_t base = (int64_t)(next() % (PAGES * BS - 2 * T));
  for (int t = 0; t < T; t++) {
    sl[t] = t % 11 == 5 ? -1 : t == 7 ? PAGES * BS + 3 : base + 2 * t; /* -1 silent, one past the cache */
    pos[t] = (int64_t)(next() % 2000);
    isl[t] = (int64_t)(next() % (PAGES * IDX_BS));
  }
  float *cs = (float *)s->cs.h, *w = (float *)s->w.h;
  for (int i = 0; i < CS_ROWS * 64; i++) cs[i] = (float)(unif() * 2 - 1);
  for (int i = 0; i < 128; i++) w[i] = (float)(0.5 + unif());
  int32_t *tk = (int32_t *)s->topk.h, *rq = (int32_t *)s->req.h, *bt = (int32_t *)s->bt.h;
  for (int i = 0; i < T * K; i++) tk[i] = (int32_t)(next() % (BS * BT_COLS + 40)) - 20; /* some < 0, some past */
  for (int t = 0; t < T; t++) rq[t] = (int32_t)(next() % R), s->valid.h[t] = (uint8_t)(t % 9 != 0);
  for (int i = 0; i < R * BT_COLS; i++) bt[i] = (int32_t)(next() % PAGES);
  int32_t *seq = (int32_t *)s->seq.h, *gl = (int32_t *)s->gl.h;
  for (int r = 0; r < R; r++) seq[r] = (int32_t)(next() % (BS * BT_COLS)), gl[r] = (int32_t)(next() % 9);
}

/* The step's four calls on the CPU (dev 0, host counters) or on the GPU
 * (dev 1, device reports, stream s).  Returns the first non-OK status. */
static dsv4kv_status step_run(step_bufs *s, int dev, cudaStream_t st, int64_t counts[4]) {
  int64_t ks[2] = {T, 512}, ns[1] = {T}, cs[2] = {PAGES, BS * 584}, kps[2] = {T, 128}, css[2] = {CS_ROWS, 64},
          ws[1] = {128}, ics[2] = {PAGES, IDX_BS * 132}, tks[2] = {T, K}, bts[2] = {R, BT_COLS}, rs[1] = {R},
          os[3] = {R, 8, 512};
  DLTensor k = dl(&s->k, dev, BF16, 2, ks), slots = dl(&s->slots, dev, I64, 1, ns), cache = dl(&s->cache, dev, U8, 2, cs);
  DLTensor kpre = dl(&s->kpre, dev, BF16, 2, kps), pos = dl(&s->pos, dev, I64, 1, ns), cst = dl(&s->cs, dev, F32, 2, css);
  DLTensor w = dl(&s->w, dev, F32, 1, ws), ic = dl(&s->icache, dev, U8, 2, ics), isl = dl(&s->islots, dev, I64, 1, ns);
  DLTensor topk = dl(&s->topk, dev, I32, 2, tks), req = dl(&s->req, dev, I32, 1, ns), bt = dl(&s->bt, dev, I32, 2, bts);
  DLTensor valid = dl(&s->valid, dev, (DLDataType){DSV4KV_DL_BOOL, 8, 1}, 1, ns);
  DLTensor glob = dl(&s->glob, dev, I32, 2, tks), glens = dl(&s->glens, dev, I32, 1, ns);
  DLTensor out = dl(&s->out, dev, BF16, 3, os), seq = dl(&s->seq, dev, I32, 1, rs), gl = dl(&s->gl, dev, I32, 1, rs);
  dsv4kv_cache_desc v4 = {DSV4KV_RECORD_V4, DSV4KV_FP8_OCP, BS, 0, 0};
  dsv4kv_cache_desc idx = {DSV4KV_RECORD_INDEXER_FP8, DSV4KV_FP8_OCP, IDX_BS, 0, 0};
  dsv4kv_options o[4];
  for (int i = 0; i < 4; i++) {
    memset(&o[i], 0, sizeof o[i]);
    if (dev) o[i].stream = st, o[i].report = (dsv4kv_report *)s->rep[i].d;
    else o[i].skipped = &counts[i];
  }
  dsv4kv_status r[4];
  r[0] = dsv4kv_quantize_and_insert_k_cache(&k, &cache, &v4, &slots, &o[0]);
  r[1] = dsv4kv_indexer_k_norm_rope_store(&kpre, &pos, &cst, &w, 1e-6f, &ic, &idx, &isl, 4, &o[1]);
  r[2] = dsv4kv_compute_global_topk_indices_and_lens(&topk, &req, &bt, BS, &valid, &glob, &glens, &o[2]);
  r[3] = dsv4kv_dequantize_and_gather_k_cache(&out, &cache, &v4, &seq, &gl, &bt, 0, &o[3]);
  for (int i = 0; i < 4; i++)
    if (dsv4kv_is_error(r[i])) return fprintf(stderr, "  call %d: %s\n", i, dsv4kv_last_error()), r[i];
  return DSV4KV_OK;
}

static void step_upload_inputs(step_bufs *s, cudaStream_t st) {
  buf *in[] = {&s->k, &s->slots, &s->kpre, &s->pos, &s->cs, &s->w, &s->islots, &s->topk, &s->req, &s->bt,
               &s->valid, &s->seq, &s->gl};
  for (size_t i = 0; i < sizeof in / sizeof in[0]; i++) up(in[i], st);
}
static void step_poison_outputs(step_bufs *s, cudaStream_t st) {
  buf *o[] = {&s->glob, &s->glens, &s->out, &s->rep[0], &s->rep[1], &s->rep[2], &s->rep[3]};
  for (size_t i = 0; i < sizeof o / sizeof o[0]; i++) poison(o[i], st);
}

/* Runs the CPU step on the host buffers, then checks the device's outputs,
 * caches and report counts against it. */
static void step_compare(step_bufs *s, const char *label) {
  int64_t counts[4] = {0};
  memset(s->glob.h, 0xCD, s->glob.n), memset(s->glens.h, 0xCD, s->glens.n), memset(s->out.h, 0xCD, s->out.n);
  CHECK(!dsv4kv_is_error(step_run(s, 0, 0, counts)), "%s: CPU step failed", label);
  CHECK(same(&s->cache, "k_cache"), "%s: k_cache differs", label);
  CHECK(same(&s->icache, "indexer cache"), "%s: indexer cache differs", label);
  CHECK(same(&s->glob, "global_topk_indices"), "%s: global top-k differs", label);
  CHECK(same(&s->glens, "topk_lens"), "%s: top-k lens differ", label);
  CHECK(same(&s->out, "gathered out"), "%s: gather output differs", label);
  for (int i = 0; i < 4; i++) {
    dsv4kv_report rep;
    CUDA(cudaMemcpy(&rep, s->rep[i].d, sizeof rep, cudaMemcpyDeviceToHost));
    CHECK(rep.skipped == counts[i], "%s: call %d skipped %" PRId64 " on the GPU, %" PRId64 " on the CPU", label, i,
          rep.skipped, counts[i]);
  }
}

static void test_graph(void) {
  const int before = failures;
  step_bufs s;
  step_alloc(&s);
  cudaStream_t st;
  CUDA(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  /* caches start from the same bytes on both sides */
  memset(s.cache.h, 0x11, s.cache.n), memset(s.icache.h, 0x22, s.icache.n);
  up(&s.cache, st), up(&s.icache, st);
  step_fill(&s);
  step_upload_inputs(&s, st);
  CUDA(cudaStreamSynchronize(st));
  cudaGraph_t g;
  cudaGraphExec_t ge;
  CUDA(cudaStreamBeginCapture(st, cudaStreamCaptureModeGlobal));
  dsv4kv_status rc = step_run(&s, 1, st, NULL);
  CUDA(cudaStreamEndCapture(st, &g));
  CHECK(rc == DSV4KV_OK, "graph: a call failed during capture");
  CUDA(cudaGraphInstantiate(&ge, g, 0));
  for (int rep = 0; rep < 5; rep++) { /* fresh inputs each replay; the caches accumulate */
    if (rep) step_fill(&s);
    step_upload_inputs(&s, st);
    step_poison_outputs(&s, st);
    CUDA(cudaGraphLaunch(ge, st));
    CUDA(cudaStreamSynchronize(st));
    char label[32];
    snprintf(label, sizeof label, "graph replay %d", rep);
    step_compare(&s, label);
  }
  CUDA(cudaGraphExecDestroy(ge));
  CUDA(cudaGraphDestroy(g));
  CUDA(cudaStreamDestroy(st));
  step_free(&s);
  printf("graph: 5 replays of a captured decode step %s\n", failures > before ? "FAILED" : "match the CPU");
}

static void test_two_streams(void) {
  step_bufs a, b;
  step_alloc(&a), step_alloc(&b);
  cudaStream_t sa, sb;
  CUDA(cudaStreamCreateWithFlags(&sa, cudaStreamNonBlocking));
  CUDA(cudaStreamCreateWithFlags(&sb, cudaStreamNonBlocking));
  int before = failures;
  for (int it = 0; it < 4; it++) {
    step_fill(&a), step_fill(&b);
    step_upload_inputs(&a, sa), step_upload_inputs(&b, sb);
    if (it == 0) up(&a.cache, sa), up(&a.icache, sa), up(&b.cache, sb), up(&b.icache, sb);
    step_poison_outputs(&a, sa), step_poison_outputs(&b, sb);
    CHECK(step_run(&a, 1, sa, NULL) == DSV4KV_OK, "two streams: stream A call failed");
    CHECK(step_run(&b, 1, sb, NULL) == DSV4KV_OK, "two streams: stream B call failed");
    CUDA(cudaStreamSynchronize(sa));
    CUDA(cudaStreamSynchronize(sb));
    step_compare(&a, "stream A");
    step_compare(&b, "stream B");
  }
  CUDA(cudaStreamDestroy(sa));
  CUDA(cudaStreamDestroy(sb));
  step_free(&a), step_free(&b);
  printf("two_streams: 4 rounds of two concurrent decode steps %s\n", failures > before ? "FAILED" : "match the CPU");
}

/* Slots past 2^31 and 2^32 bytes into a V4 cache; the CPU runs the same rows
 * into a small cache whose page p_small stands for the big cache's page. */
static void test_big_offsets(void) {
  const int64_t page = BS * 584;
  const int64_t big_pages = ((int64_t)1 << 32) / page + 8; /* 4.3 GB + */
  size_t free_b = 0, total_b = 0;
  CUDA(cudaMemGetInfo(&free_b, &total_b));
  if ((size_t)(big_pages * page) + ((size_t)1 << 30) > free_b) {
    printf("big_offsets: skipped (%zu bytes free on the GPU)\n", free_b);
    return;
  }
  uint8_t *big;
  CUDA(cudaMalloc((void **)&big, (size_t)(big_pages * page)));
  CUDA(cudaMemset(big, 0x5A, (size_t)(big_pages * page)));
  const int64_t pages_at[4] = {((int64_t)1 << 31) / page, ((int64_t)1 << 31) / page + 1, ((int64_t)1 << 32) / page,
                               big_pages - 1}; /* pages straddling 2^31, past 2^32, the last */
  enum { N = 4 * BS };
  buf k = mk(N * 512 * 2), sl = mk(N * 8), small = mk(4 * page), bt = mk(4 * 4), seq = mk(4), out = mk(N * 512 * 2);
  uint16_t *kk = (uint16_t *)k.h;
  for (int i = 0; i < N * 512; i++) kk[i] = bf16_rand();
  int64_t *s = (int64_t *)sl.h;
  memset(small.h, 0x5A, small.n);
  int64_t ks[2] = {N, 512}, ns[1] = {N}, cbig[2] = {big_pages, page}, csm[2] = {4, page};
  dsv4kv_cache_desc v4 = {DSV4KV_RECORD_V4, DSV4KV_FP8_OCP, BS, 0, 0};
  /* device: slots in the big pages */
  for (int i = 0; i < N; i++) s[i] = pages_at[i / BS] * BS + (i % BS);
  up(&k, 0), up(&sl, 0);
  DLTensor tk = dl(&k, 1, BF16, 2, ks), ts = dl(&sl, 1, I64, 1, ns);
  DLTensor tc = {big, {kDLCUDA, 0}, 2, U8, cbig, NULL, 0};
  dsv4kv_report *rep;
  CUDA(cudaMalloc((void **)&rep, sizeof *rep));
  dsv4kv_options o = {.report = rep};
  CHECK(dsv4kv_quantize_and_insert_k_cache(&tk, &tc, &v4, &ts, &o) == DSV4KV_OK, "big_offsets: GPU insert: %s",
        dsv4kv_last_error());
  /* gather them back: one request of N tokens over the 4 pages */
  int32_t *b = (int32_t *)bt.h;
  for (int i = 0; i < 4; i++) b[i] = (int32_t)pages_at[i];
  *(int32_t *)seq.h = N;
  up(&bt, 0), up(&seq, 0), poison(&out, 0);
  int64_t os[3] = {1, N, 512}, bs2[2] = {1, 4}, one[1] = {1};
  DLTensor to = dl(&out, 1, BF16, 3, os), tb = dl(&bt, 1, I32, 2, bs2), tq = dl(&seq, 1, I32, 1, one);
  CHECK(dsv4kv_dequantize_and_gather_k_cache(&to, &tc, &v4, &tq, NULL, &tb, 0, &o) == DSV4KV_OK,
        "big_offsets: GPU gather: %s", dsv4kv_last_error());
  CUDA(cudaDeviceSynchronize());
  /* CPU: the same rows into small pages 0..3 */
  for (int i = 0; i < N; i++) s[i] = (i / BS) * BS + (i % BS);
  for (int i = 0; i < 4; i++) b[i] = i;
  DLTensor hk = dl(&k, 0, BF16, 2, ks), hs = dl(&sl, 0, I64, 1, ns), hc = dl(&small, 0, U8, 2, csm);
  DLTensor ho = dl(&out, 0, BF16, 3, os), hb = dl(&bt, 0, I32, 2, bs2), hq = dl(&seq, 0, I32, 1, one);
  CHECK(dsv4kv_quantize_and_insert_k_cache(&hk, &hc, &v4, &hs, NULL) == DSV4KV_OK, "big_offsets: CPU insert");
  CHECK(dsv4kv_dequantize_and_gather_k_cache(&ho, &hc, &v4, &hq, NULL, &hb, 0, NULL) == DSV4KV_OK,
        "big_offsets: CPU gather");
  int before = failures;
  uint8_t *pg = malloc((size_t)page);
  for (int i = 0; i < 4; i++) {
    CUDA(cudaMemcpy(pg, big + pages_at[i] * page, (size_t)page, cudaMemcpyDeviceToHost));
    CHECK(!memcmp(pg, small.h + i * page, (size_t)page), "big_offsets: page at byte %" PRId64 " differs",
          pages_at[i] * page);
  }
  CHECK(same(&out, "gathered out"), "big_offsets: gather differs");
  printf("big_offsets: pages at bytes %" PRId64 ", %" PRId64 ", %" PRId64 ", %" PRId64 " %s\n", pages_at[0] * page,
         pages_at[1] * page, pages_at[2] * page, pages_at[3] * page, failures > before ? "FAILED" : "match the CPU");
  free(pg);
  cudaFree(rep);
  cudaFree(big);
  drop(&k), drop(&sl), drop(&small), drop(&bt), drop(&seq), drop(&out);
}

/* Every op with nothing to do: OK, its report reset, nothing written. */
static void test_empty(void) {
  /* Every tensor at one address (empty ones overlap nothing), but the
   * indexer cache: the cos / sin table and the weights are not empty, and
   * inputs inside a cache's pages are refused (SPEC §7) whatever T is. */
  buf any = mk(1 << 16), icb = mk(4 * 64 * 132), rep = mk(sizeof(dsv4kv_report));
  const int before = failures;
  CUDA(cudaMemset(any.d, 0xCD, any.n));
  CUDA(cudaMemset(icb.d, 0xCD, icb.n));
  DLTensor z1i32, z1i64, z2i32, z2bf, zc, zu8, q1, z2i32c, zcs, zw, z1b;
  int64_t s0[1] = {0}, s1[1] = {1}, k0[2] = {0, 512}, kp0[2] = {0, 128}, c2[2] = {4, 64 * 584}, tk0[2] = {0, 8},
          bt2[2] = {1, 4}, cc0[2] = {0, 256}, cs2[2] = {16, 64}, w1[1] = {128}, ic2[2] = {4, 64 * 132}, o3[3] = {0, 4, 512};
  z1i32 = dl(&any, 1, I32, 1, s0), z1i64 = dl(&any, 1, I64, 1, s0), z2bf = dl(&any, 1, BF16, 2, k0);
  zc = dl(&any, 1, U8, 2, c2), z2i32 = dl(&any, 1, I32, 2, tk0), zu8 = dl(&any, 1, (DLDataType){DSV4KV_DL_BOOL, 8, 1}, 1, s0);
  q1 = dl(&any, 1, I32, 1, s1), z2i32c = dl(&any, 1, I32, 2, cc0), zcs = dl(&any, 1, F32, 2, cs2), zw = dl(&any, 1, F32, 1, w1);
  z1b = dl(&any, 1, BF16, 2, kp0);
  DLTensor bt = dl(&any, 1, I32, 2, bt2), ic = dl(&icb, 1, U8, 2, ic2), out = dl(&any, 1, BF16, 3, o3);
  dsv4kv_cache_desc v4 = {DSV4KV_RECORD_V4, DSV4KV_FP8_OCP, 64, 0, 0}, idx = {DSV4KV_RECORD_INDEXER_FP8, DSV4KV_FP8_OCP, 64, 0, 0};
  dsv4kv_options o = {.report = (dsv4kv_report *)rep.d};
  const char *names[] = {"insert", "gather", "global top-k", "combine", "indexer store"};
  const int op_ids[] = {1, 2, 3, 4, 6}; /* dsv4kv_report.op of each (src/report.h) */
  for (int op = 0; op < 5; op++) {
    poison(&rep, 0);
    dsv4kv_status st = DSV4KV_ERR_BACKEND;
    switch (op) {
      case 0: st = dsv4kv_quantize_and_insert_k_cache(&z2bf, &zc, &v4, &z1i64, &o); break;
      case 1: st = dsv4kv_dequantize_and_gather_k_cache(&out, &zc, &v4, &z1i32, NULL, &bt, 0, &o); break;
      case 2: st = dsv4kv_compute_global_topk_indices_and_lens(&z2i32, &z1i32, &bt, 64, &zu8, &z2i32, &z1i32, &o); break;
      case 3: st = dsv4kv_combine_topk_swa_indices(&z2i32, &q1, &z1i32, &z1i32, 128, 4, 8, 256, 128, &z2i32c, &z1i32, &o); break;
      case 4: st = dsv4kv_indexer_k_norm_rope_store(&z1b, &z1i64, &zcs, &zw, 1e-6f, &ic, &idx, &z1i64, 4, &o); break;
    }
    CUDA(cudaDeviceSynchronize());
    dsv4kv_report r;
    CUDA(cudaMemcpy(&r, rep.d, sizeof r, cudaMemcpyDeviceToHost));
    CHECK(st == DSV4KV_OK, "empty %s: %s", names[op], dsv4kv_last_error());
    CHECK(r.skipped == 0 && r.nonfinite == 0 && r.first_key == INT64_MAX && r.op == op_ids[op],
          "empty %s: report not reset (skipped %" PRId64 ", op %d)", names[op], r.skipped, r.op);
  }
  const buf *bufs[2] = {&any, &icb};
  for (int b = 0; b < 2; b++) {
    uint8_t *h = malloc(bufs[b]->n);
    CUDA(cudaMemcpy(h, bufs[b]->d, bufs[b]->n, cudaMemcpyDeviceToHost));
    size_t i = 0;
    while (i < bufs[b]->n && h[i] == 0xCD) i++;
    CHECK(i == bufs[b]->n, "empty calls wrote byte %zu of the %s memory", i, b ? "indexer cache's" : "tensors'");
    free(h);
  }
  drop(&any), drop(&icb), drop(&rep);
  printf("empty: five ops on empty batches, reports reset, nothing written %s\n",
         failures > before ? "FAILED" : "(passed)");
}

static void test_warmup(void) {
  int32_t ratios[43], loaded = -1;
  for (int i = 0; i < 43; i++) ratios[i] = i < 2 ? 0 : i % 2 ? 128 : 4; /* the V4-Flash pattern */
  dsv4kv_model_desc m = {43, ratios, 512, 128, {DSV4KV_RECORD_V4, DSV4KV_FP8_OCP, 64, 0, 0},
                         {DSV4KV_RECORD_INDEXER_FP8, DSV4KV_FP8_OCP, 64, 0, 0}};
  dsv4kv_status st = dsv4kv_warmup(&m, (DLDevice){kDLCUDA, 0}, &loaded);
  CHECK(st == DSV4KV_OK && loaded > 0, "warmup: %s (%d kernels)", dsv4kv_last_error(), loaded);
  printf("warmup: %d kernels loaded\n", loaded);
}

int main(void) {
  int n = 0;
  if (!dsv4kv_backend_available(kDLCUDA) || cudaGetDeviceCount(&n) != cudaSuccess || n < 1) {
    printf("no CUDA backend or device: skipped\n");
    return 77;
  }
  test_warmup();
  test_empty();
  test_graph();
  test_two_streams();
  test_big_offsets();
  printf("%s\n", failures ? "FAILED" : "all passed");
  return failures ? 1 : 0;
}
