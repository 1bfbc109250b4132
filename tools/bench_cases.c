/* bench_cases.c - the configurations of `dsv4kv bench` and their inputs (see
 * bench_cases.h).  Sizes follow the anchor file: decode (64 / 256 tokens;
 * gather 64 requests x 256), prefill (4096 / 16384) and large (65536 and
 * 524288 tokens; gather 8 x 8192 and 64 x 16384). */
#include "bench_cases.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { PLAIN, DISTINCT, WIDE };
typedef struct {
  const char *op, *record, *size;
  int64_t a, b; /* tokens; gather: requests x tokens; index ops: T, topk */
  int variant; /* DISTINCT (inserts, indexer): the call promises distinct slots (GPU only);
                  WIDE (global top-k, flashinfer): the block table BENCH_WIDE_COLUMNS wide */
} bench_spec;

static const bench_spec specs[] = {
#define INSERTS(rec)                                                                                         \
  {"insert", rec, "decode", 64, 0, 0}, {"insert", rec, "decode", 256, 0, 0}, {"insert", rec, "prefill", 4096, 0, 0}, \
      {"insert", rec, "large", 65536, 0, 0}, {"insert", rec, "large", 524288, 0, 0},
#define GATHERS(rec)                                                                                     \
  {"gather", rec, "decode", 64, 256, 0}, {"gather", rec, "large", 8, 8192, 0}, {"gather", rec, "large", 64, 16384, 0},
    INSERTS("v4") INSERTS("mxfp8") INSERTS("nvfp4") GATHERS("v4") GATHERS("mxfp8") GATHERS("nvfp4")
#undef INSERTS
#undef GATHERS
    {"global_topk", "", "decode", 64, 512, 0},   {"global_topk", "", "decode", 256, 512, 0},
    {"global_topk", "", "prefill", 4096, 512, 0}, {"global_topk", "", "prefill", 4096, 1024, 0},
    {"combine", "", "decode", 64, 512, 0},       {"combine", "", "decode", 256, 512, 0},
    {"combine", "", "prefill", 4096, 512, 0},    {"combine", "", "prefill", 4096, 1024, 0},
    {"flashinfer", "", "decode", 64, 512, 0},    {"flashinfer", "", "decode", 256, 512, 0},
    {"flashinfer", "", "prefill", 4096, 512, 0},
    {"flashinfer", "", "prefill", 4096, 1024, 0},
    {"indexer", "fp8", "decode", 64, 0, 0},      {"indexer", "fp8", "decode", 256, 0, 0},
    {"indexer", "fp8", "prefill", 16384, 0, 0},  {"indexer", "mxfp4", "decode", 256, 0, 0},
    {"indexer", "mxfp4", "prefill", 16384, 0, 0},
    /* last, so that the configurations above keep their inputs (seeded by index) */
#define DISTINCT_OF(rec) {"insert", rec, "large", 65536, 0, DISTINCT}, {"insert", rec, "large", 524288, 0, DISTINCT},
    DISTINCT_OF("v4") DISTINCT_OF("mxfp8") DISTINCT_OF("nvfp4")
#undef DISTINCT_OF
    {"indexer", "fp8", "prefill", 16384, 0, DISTINCT},  {"indexer", "mxfp4", "prefill", 16384, 0, DISTINCT},
    /* an engine's block table, as wide as its longest sequence, whose rows' entries use the first
     * columns only (the table rows' lookups in registers reach the first 64 / 128 columns) */
    {"global_topk", "", "prefill", 4096, 1024, WIDE}, {"flashinfer", "", "prefill", 4096, 1024, WIDE},
};
enum { NUM_SPECS = sizeof specs / sizeof specs[0], WINDOW = 128, BS = 64 };

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;
static uint64_t rnd(void) {
  rng_state ^= rng_state << 13, rng_state ^= rng_state >> 7, rng_state ^= rng_state << 17;
  return rng_state;
}
static uint16_t bf16_normal(void) { /* a bf16 of roughly unit scale, sign and exponent varied */
  uint32_t e = 120 + (uint32_t)(rnd() % 10), m = (uint32_t)(rnd() & 0x7F), s = (uint32_t)(rnd() & 1);
  return (uint16_t)(s << 15 | e << 7 | m);
}

/* A new compact tensor of the case over a fresh buffer (NULL out of memory). */
static DLTensor *tensor(bench_case *c, DLDataType dt, int ndim, int64_t d0, int64_t d1, int64_t d2) {
  if (c->nt == BENCH_MAX_BUFS) return NULL;
  int64_t *sh = c->shapes[c->nt];
  sh[0] = d0, sh[1] = d1, sh[2] = d2;
  size_t n = (size_t)(dt.bits / 8);
  for (int i = 0; i < ndim; i++) n *= (size_t)sh[i];
  /* Page-aligned: an engine's tensors are at least 64-byte aligned
   * (PyTorch's CPU allocator: 64 bytes; cudaMalloc: 256), and malloc's 16
   * would split every 64-byte row store across two cache lines. */
  void *p = aligned_alloc(4096, n ? (n + 4095) / 4096 * 4096 : 4096);
  if (!p) return NULL;
  memset(p, 0, n);
  c->bufs[c->nbufs++] = p;
  DLTensor *t = &c->t[c->nt++];
  *t = (DLTensor){p, {kDLCPU, 0}, ndim, dt, sh, NULL, 0};
  return t;
}
static const DLDataType U8 = {kDLUInt, 8, 1}, I32 = {kDLInt, 32, 1}, I64 = {kDLInt, 64, 1},
                        BF16 = {kDLBfloat, 16, 1}, F32 = {kDLFloat, 32, 1}, BOOL = {DSV4KV_DL_BOOL, 8, 1};
#define I32P(t) ((int32_t *)(t)->data)
#define I64P(t) ((int64_t *)(t)->data)

/* Slots of N tokens: whole pages in shuffled order, contiguous inside a page. */
static int shuffled_slots(int64_t *s, int64_t n, int64_t pages) {
  int64_t *perm = malloc((size_t)pages * sizeof *perm);
  if (!perm) return -2;
  for (int64_t i = 0; i < pages; i++) perm[i] = i;
  for (int64_t i = pages - 1; i > 0; i--) {
    int64_t j = (int64_t)(rnd() % (uint64_t)(i + 1)), x = perm[i];
    perm[i] = perm[j], perm[j] = x;
  }
  for (int64_t t = 0; t < n; t++) s[t] = perm[t / BS] * BS + t % BS;
  free(perm);
  return 0;
}

static dsv4kv_record record_of(const char *r) {
  return !strcmp(r, "mxfp8") ? DSV4KV_RECORD_MXFP8 : !strcmp(r, "nvfp4") ? DSV4KV_RECORD_NVFP4 : DSV4KV_RECORD_V4;
}

static int make_insert(bench_case *c, const bench_spec *s) {
  const int64_t N = s->a, pages = (N + BS - 1) / BS;
  c->desc = (dsv4kv_cache_desc){record_of(s->record), DSV4KV_FP8_OCP, BS, 0, 0};
  const int32_t rec = dsv4kv_record_bytes(c->desc.record);
  DLTensor *k = tensor(c, BF16, 2, N, 512, 0), *slots = tensor(c, I64, 1, N, 0, 0);
  DLTensor *cache = tensor(c, U8, 2, pages, (int64_t)BS * rec, 0);
  if (!k || !slots || !cache) return -2;
  for (int64_t i = 0; i < N * 512; i++) ((uint16_t *)k->data)[i] = bf16_normal();
  if (shuffled_slots(I64P(slots), N, pages)) return -2;
  c->call.op = OPCALL_INSERT;
  c->call.u.insert = (opcall_insert){k, cache, &c->desc, slots};
  snprintf(c->name, sizeof c->name, "insert_%s N=%lld", s->record, (long long)N);
  c->tokens = N;
  c->bytes = N * (1024 + 8 + rec);
  return 1;
}

/* Records as an engine's cache holds them: every slot written by the insert
 * (CPU) from bf16 keys of roughly unit scale, a chunk at a time.  Random
 * bytes would give scale bytes no insert writes (the amax floor keeps UE8M0
 * bytes >= 105) and time paths real caches never take. */
static int fill_cache(const DLTensor *cache, const dsv4kv_cache_desc *desc, int64_t n) {
  enum { CHUNK = 4096 };
  uint16_t *k = malloc((size_t)CHUNK * 512 * sizeof *k);
  int64_t *slots = malloc(CHUNK * sizeof *slots);
  int rc = k && slots ? 0 : -1;
  for (int64_t lo = 0; !rc && lo < n; lo += CHUNK) {
    const int64_t m = n - lo < CHUNK ? n - lo : CHUNK;
    for (int64_t i = 0; i < m * 512; i++) k[i] = bf16_normal();
    for (int64_t i = 0; i < m; i++) slots[i] = lo + i;
    int64_t ks[2] = {m, 512}, ss[1] = {m};
    const DLTensor kt = {k, {kDLCPU, 0}, 2, BF16, ks, NULL, 0}, st = {slots, {kDLCPU, 0}, 1, I64, ss, NULL, 0};
    const dsv4kv_options opt = {0};
    rc = dsv4kv_quantize_and_insert_k_cache(&kt, cache, desc, &st, &opt) == DSV4KV_OK ? 0 : -1;
  }
  free(k), free(slots);
  return rc;
}

static int make_gather(bench_case *c, const bench_spec *s) {
  const int64_t R = s->a, L = s->b, per = (L + BS - 1) / BS, pages = R * per;
  c->desc = (dsv4kv_cache_desc){record_of(s->record), DSV4KV_FP8_OCP, BS, 0, 0};
  const int32_t rec = dsv4kv_record_bytes(c->desc.record);
  DLTensor *out = tensor(c, BF16, 3, R, L, 512), *cache = tensor(c, U8, 2, pages, (int64_t)BS * rec, 0);
  DLTensor *seq = tensor(c, I32, 1, R, 0, 0), *bt = tensor(c, I32, 2, R, per, 0);
  if (!out || !cache || !seq || !bt) return -2;
  if (fill_cache(cache, &c->desc, pages * BS)) return -2;
  int64_t *slots = malloc((size_t)pages * BS * sizeof *slots);
  if (!slots) return -2;
  if (shuffled_slots(slots, pages * BS, pages)) return free(slots), -2; /* a random page order */
  for (int64_t r = 0; r < R; r++) {
    I32P(seq)[r] = (int32_t)L;
    for (int64_t p = 0; p < per; p++) I32P(bt)[r * per + p] = (int32_t)(slots[(r * per + p) * BS] / BS);
  }
  free(slots);
  c->call.op = OPCALL_GATHER;
  c->call.u.gather = (opcall_gather){out, cache, &c->desc, seq, NULL, bt, 0};
  snprintf(c->name, sizeof c->name, "gather_%s %lldx%lld", s->record, (long long)R, (long long)L);
  c->tokens = R * L;
  c->bytes = R * L * (rec + 1024);
  return 1;
}

static int make_global_topk(bench_case *c, const bench_spec *s) {
  const int64_t T = s->a, K = s->b, R = 16, used = (4 * K + BS - 1) / BS;
  const int64_t P = s->variant == WIDE ? BENCH_WIDE_COLUMNS : used;
  DLTensor *topk = tensor(c, I32, 2, T, K, 0), *req = tensor(c, I32, 1, T, 0, 0), *bt = tensor(c, I32, 2, R, P, 0);
  DLTensor *valid = tensor(c, BOOL, 1, T, 0, 0), *glob = tensor(c, I32, 2, T, K, 0), *lens = tensor(c, I32, 1, T, 0, 0);
  if (!topk || !req || !bt || !valid || !glob || !lens) return -2;
  for (int64_t i = 0; i < T * K; i++) I32P(topk)[i] = (int32_t)(rnd() % (uint64_t)(used * BS));
  for (int64_t t = 0; t < T; t++) I32P(req)[t] = (int32_t)(rnd() % R), ((uint8_t *)valid->data)[t] = 1;
  for (int64_t i = 0; i < R * P; i++) I32P(bt)[i] = (int32_t)(rnd() % 100000);
  c->call.op = OPCALL_GLOBAL_TOPK;
  c->call.u.global_topk = (opcall_global_topk){topk, req, bt, BS, valid, glob, lens};
  snprintf(c->name, sizeof c->name, "compute_global_topk T=%lld topk=%lld", (long long)T, (long long)K);
  c->tokens = T;
  c->bytes = T * K * 8 + T * (4 + 1 + 4);
  return 1;
}

/* Requests of `per` query tokens each (the last may be shorter), every token
 * at a position >= 4 x topk so that it uses the whole top-k. */
static int make_combine(bench_case *c, const bench_spec *s) {
  const int64_t T = s->a, K = s->b, per = T < 256 ? T : 256, R = (T + per - 1) / per;
  const int64_t seq_len = 4 * K + per, gl = per + WINDOW - 1, N = seq_len / 4;
  DLTensor *topk = tensor(c, I32, 2, T, K, 0), *qsl = tensor(c, I32, 1, R + 1, 0, 0);
  DLTensor *seq = tensor(c, I32, 1, R, 0, 0), *gls = tensor(c, I32, 1, R, 0, 0);
  const int64_t C = (K + WINDOW + 127) / 128 * 128;
  DLTensor *comb = tensor(c, I32, 2, T, C, 0), *lens = tensor(c, I32, 1, T, 0, 0);
  if (!topk || !qsl || !seq || !gls || !comb || !lens) return -2;
  for (int64_t i = 0; i < T * K; i++) I32P(topk)[i] = (int32_t)(rnd() % (uint64_t)N);
  for (int64_t r = 0; r <= R; r++) I32P(qsl)[r] = (int32_t)(r * per < T ? r * per : T);
  for (int64_t r = 0; r < R; r++) I32P(seq)[r] = (int32_t)seq_len, I32P(gls)[r] = (int32_t)gl;
  c->call.op = OPCALL_COMBINE;
  c->call.u.combine = (opcall_combine){topk, qsl, seq, gls, WINDOW, 4, (int32_t)K, (int32_t)(N + gl), (int32_t)N,
                                       comb, lens, 0, NULL, NULL};
  snprintf(c->name, sizeof c->name, "combine_topk_swa T=%lld topk=%lld window=%d cr=4", (long long)T, (long long)K,
           WINDOW);
  c->tokens = T;
  c->bytes = T * (K * 4 + (K + WINDOW) * 4 + 4);
  return 1;
}

/* 64 decode tokens (one a request, global top-k entries with lengths), then
 * prefill requests of 256 tokens at positions >= 4 x topk. */
static int make_flashinfer(bench_case *c, const bench_spec *s) {
  const int64_t T = s->a, K = s->b, D = T < 64 ? T : 64, P = T - D, per = 256, Rp = (P + per - 1) / per;
  const int64_t R = D + Rp, seq_len = 4 * K + per;
  const int64_t cols = s->variant == WIDE ? BENCH_WIDE_COLUMNS : (seq_len + BS - 1) / BS + 1;
  DLTensor *dswa = tensor(c, I32, 2, D, WINDOW, 0), *dcomp = tensor(c, I32, 2, D, K, 0);
  DLTensor *dlens = tensor(c, I32, 1, D, 0, 0), *ptopk = tensor(c, I32, 2, P, K, 0);
  DLTensor *qsl = tensor(c, I32, 1, R + 1, 0, 0), *seq = tensor(c, I32, 1, R, 0, 0);
  DLTensor *replay = tensor(c, I32, 1, R, 0, 0), *t2r = tensor(c, I32, 1, T, 0, 0);
  DLTensor *bt = tensor(c, I32, 2, R, cols, 0);
  const int64_t K4 = (K + 3) / 4 * 4;
  DLTensor *out = tensor(c, I32, 2, T, WINDOW + K4, 0), *lens = tensor(c, I32, 1, T, 0, 0);
  if (!dswa || !dcomp || !dlens || !ptopk || !qsl || !seq || !replay || !t2r || !bt || !out || !lens) return -2;
  for (int64_t i = 0; i < D * WINDOW; i++) I32P(dswa)[i] = (int32_t)(rnd() % 1000000);
  for (int64_t i = 0; i < D * K; i++) I32P(dcomp)[i] = (int32_t)(rnd() % 1000000);
  for (int64_t i = 0; i < D; i++) I32P(dlens)[i] = (int32_t)K;
  for (int64_t i = 0; i < P * K; i++) I32P(ptopk)[i] = (int32_t)(rnd() % (uint64_t)(seq_len / 4));
  for (int64_t r = 0; r <= R; r++) I32P(qsl)[r] = (int32_t)(r <= D ? r : D + (r - D) * per < T ? D + (r - D) * per : T);
  for (int64_t r = 0; r < R; r++) I32P(seq)[r] = (int32_t)seq_len;
  for (int64_t t = 0; t < T; t++) I32P(t2r)[t] = (int32_t)(t < D ? t : D + (t - D) / per);
  for (int64_t i = 0; i < R * cols; i++) I32P(bt)[i] = (int32_t)(rnd() % 100000);
  c->fi = (dsv4kv_flashinfer_args){dswa, dcomp, dlens, NULL, 0, ptopk, qsl, seq, replay, t2r, bt, NULL,
                                   BS, 0, BS / 4, 0, WINDOW, 4, (int32_t)K};
  c->call.op = OPCALL_FLASHINFER;
  c->call.u.flashinfer = (opcall_flashinfer){&c->fi, out, lens};
  snprintf(c->name, sizeof c->name, "build_flashinfer_mixed T=%lld (%lld decode) topk=%lld window=%d", (long long)T,
           (long long)D, (long long)K, WINDOW);
  c->tokens = T;
  c->bytes = T * (WINDOW + K4) * 4 + T * 8 + D * (WINDOW + K + 1) * 4 + P * K * 4;
  return 1;
}

static int make_indexer(bench_case *c, const bench_spec *s) {
  const int64_t T = s->a, pages = (T + BS - 1) / BS;
  c->desc = (dsv4kv_cache_desc){!strcmp(s->record, "mxfp4") ? DSV4KV_RECORD_INDEXER_MXFP4 : DSV4KV_RECORD_INDEXER_FP8,
                                DSV4KV_FP8_OCP, BS, 0, 0};
  const int32_t rec = dsv4kv_record_bytes(c->desc.record);
  DLTensor *k = tensor(c, BF16, 2, T, 128, 0), *pos = tensor(c, I64, 1, T, 0, 0);
  DLTensor *cs = tensor(c, F32, 2, T, 64, 0), *w = tensor(c, F32, 1, 128, 0, 0);
  DLTensor *cache = tensor(c, U8, 2, pages, (int64_t)BS * rec, 0), *slots = tensor(c, I64, 1, T, 0, 0);
  if (!k || !pos || !cs || !w || !cache || !slots) return -2;
  for (int64_t i = 0; i < T * 128; i++) ((uint16_t *)k->data)[i] = bf16_normal();
  for (int64_t t = 0; t < T; t++) I64P(pos)[t] = t;
  for (int64_t i = 0; i < T * 64; i++) ((float *)cs->data)[i] = (float)((double)(rnd() % 2001) / 1000.0 - 1.0);
  for (int64_t i = 0; i < 128; i++) ((float *)w->data)[i] = 1.0f + (float)(rnd() % 100) / 1000.0f;
  if (shuffled_slots(I64P(slots), T, pages)) return -2;
  c->call.op = OPCALL_INDEXER;
  c->call.u.indexer = (opcall_indexer){k, pos, cs, w, 1e-6f, cache, &c->desc, slots, 1};
  snprintf(c->name, sizeof c->name, "indexer_k_norm_rope_store fp4=%s T=%lld cr=1",
           c->desc.record == DSV4KV_RECORD_INDEXER_MXFP4 ? "True" : "False", (long long)T);
  c->tokens = T;
  c->bytes = T * (256 + 16 + 256 + rec) + 512;
  return 1;
}

int bench_case_matches(int index, const char *op, const char *record, const char *size) {
  if (index < 0 || index >= NUM_SPECS) return 0;
  const bench_spec *s = &specs[index];
  if ((op && strcmp(op, s->op)) || (record && *s->record && strcmp(record, s->record)) ||
      (record && !*s->record) || (size && strcmp(size, s->size)))
    return -1;
  return 1;
}

int bench_case_make(int index, const char *op, const char *record, const char *size, bench_case *c) {
  const int m = bench_case_matches(index, op, record, size);
  if (m != 1) return m;
  const bench_spec *s = &specs[index];
  memset(c, 0, sizeof *c);
  c->op = s->op, c->record = s->record, c->size = s->size;
  rng_state = 0x9E3779B97F4A7C15ull ^ (uint64_t)index; /* the same inputs every run */
  int rc = !strcmp(s->op, "insert")        ? make_insert(c, s)
           : !strcmp(s->op, "gather")      ? make_gather(c, s)
           : !strcmp(s->op, "global_topk") ? make_global_topk(c, s)
           : !strcmp(s->op, "combine")     ? make_combine(c, s)
           : !strcmp(s->op, "flashinfer")  ? make_flashinfer(c, s)
                                           : make_indexer(c, s);
  if (rc == 1 && s->variant != PLAIN) { /* the variant named after the anchor's configuration */
    const size_t n = strlen(c->name);
    if (s->variant == WIDE) {
      c->table_columns = BENCH_WIDE_COLUMNS;
      snprintf(c->name + n, sizeof c->name - n, ", table of %d columns", BENCH_WIDE_COLUMNS);
    } else {
      c->distinct_slots = 1;
      snprintf(c->name + n, sizeof c->name - n, "%s", BENCH_DISTINCT_SUFFIX);
    }
  }
  if (rc != 1) bench_case_free(c);
  return rc;
}

void bench_case_free(bench_case *c) {
  for (int i = 0; i < c->nbufs; i++) free(c->bufs[i]);
  c->nbufs = c->nt = 0;
}
