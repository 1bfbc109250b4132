/* The header's promise on threads (include/dsv4kv.h, "Threads"): ops called
 * from several application threads at once, each thread on outputs of its
 * own, give the bytes, statuses, skip counts and messages of the same calls
 * made one at a time.  Four threads take turns at the CPU backend's worker
 * pool (2 threads a call, every call parallel: DSV4KV_CPU_PARALLEL_MIN_NS=0),
 * so some calls find it busy and run alone.  Each caller's slot mapping puts
 * its out-of-range slot in a row of its own, so that each thread's
 * dsv4kv_last_error names another row and must stay its own.  Then the four
 * share one cache, each writing and reading its own pages of it. */
#define _GNU_SOURCE /* setenv */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "support/support.h"

enum { CALLERS = 4, ROUNDS = 16, T = 4096, BS = 64, PAGES = T / BS, R = 2, BAD_ROW = 7 };
#define V4_REC 584

/* One caller's tensors: the keys, lengths and table are shared (read only),
 * the slot mapping, the cache and the gather's output are its own. */
typedef struct {
  uint8_t *cache;
  uint16_t *out;
  int64_t slots[T];
  int64_t shape_c[2], shape_o[3];
  DLTensor c, o, s;
} outputs;

static uint16_t keys[T * 512];
static int32_t seq_lens[R], table[R * (PAGES / R)];
static int64_t shape_k[2] = {T, 512}, shape_s[1] = {T}, shape_r[1] = {R}, shape_bt[2] = {R, PAGES / R};
static DLTensor tk = {keys, {kDLCPU, 0}, 2, {kDLBfloat, 16, 1}, shape_k, NULL, 0};
static DLTensor tsl = {seq_lens, {kDLCPU, 0}, 1, {kDLInt, 32, 1}, shape_r, NULL, 0};
static DLTensor tbt = {table, {kDLCPU, 0}, 2, {kDLInt, 32, 1}, shape_bt, NULL, 0};
static const dsv4kv_cache_desc desc = {DSV4KV_RECORD_V4, DSV4KV_FP8_OCP, BS, 0, 0};

static const size_t cache_bytes = (size_t)PAGES * BS * V4_REC, out_elems = (size_t)R * (T / R) * 512;

/* Caller i's tensors; row BAD_ROW + i names a slot past the cache. */
static int outputs_make(outputs *x, int i) {
  x->cache = malloc(cache_bytes);
  x->out = malloc(out_elems * 2);
  if (!x->cache || !x->out) return 0;
  for (int64_t t = 0; t < T; t++) x->slots[t] = t % 97 == 5 ? -1 : (t * 37) % T; /* 37 is prime to T: distinct */
  x->slots[BAD_ROW + i] = (int64_t)PAGES * BS + 3;
  x->s = (DLTensor){x->slots, {kDLCPU, 0}, 1, {kDLInt, 64, 1}, shape_s, NULL, 0};
  x->shape_c[0] = PAGES, x->shape_c[1] = (int64_t)BS * V4_REC;
  x->shape_o[0] = R, x->shape_o[1] = T / R, x->shape_o[2] = 512;
  x->c = (DLTensor){x->cache, {kDLCPU, 0}, 2, {kDLUInt, 8, 1}, x->shape_c, NULL, 0};
  x->o = (DLTensor){x->out, {kDLCPU, 0}, 3, {kDLBfloat, 16, 1}, x->shape_o, NULL, 0};
  return 1;
}

/* What one round leaves: the bytes, the statuses, the count and the insert's message. */
typedef struct {
  dsv4kv_status st_insert, st_gather;
  int64_t skipped;
  char message[512];
} round_result;

static void one_round(outputs *x, round_result *res) {
  memset(x->cache, 0xCD, cache_bytes); /* poison: every byte the calls leave is theirs */
  for (size_t i = 0; i < out_elems; i++) x->out[i] = 0xA5A5;
  int64_t skipped = -1;
  const dsv4kv_options o = {.num_threads = 2, .skipped = &skipped};
  res->st_insert = dsv4kv_quantize_and_insert_k_cache(&tk, &x->c, &desc, &x->s, &o);
  res->skipped = skipped;
  snprintf(res->message, sizeof res->message, "%s", dsv4kv_last_error());
  res->st_gather = dsv4kv_dequantize_and_gather_k_cache(&x->o, &x->c, &desc, &tsl, NULL, &tbt, 0, &o);
}

typedef struct {
  outputs x, want;
  round_result want_res;
  int mismatches;
  char first[256];
} caller;

static void *caller_main(void *p) {
  caller *c = p;
  for (int r = 0; r < ROUNDS; r++) {
    round_result got;
    one_round(&c->x, &got);
    const round_result *w = &c->want_res;
    const char *what = got.st_insert != w->st_insert              ? "insert status"
                       : got.st_gather != w->st_gather            ? "gather status"
                       : got.skipped != w->skipped                ? "skip count"
                       : strcmp(got.message, w->message)          ? "message"
                       : memcmp(c->x.cache, c->want.cache, cache_bytes) ? "cache bytes"
                       : memcmp(c->x.out, c->want.out, out_elems * 2)   ? "gather bytes"
                                                                          : NULL;
    if (what && c->mismatches++ == 0) snprintf(c->first, sizeof c->first, "round %d: %s", r, what);
  }
  return NULL;
}

static void threads_match_one_at_a_time(void **state) {
  (void)state;
  rng_t g;
  rng_seed(&g, 20261208);
  for (size_t i = 0; i < (size_t)T * 512; i++) keys[i] = bf16_of(rng_normal(&g));
  for (int r = 0; r < R; r++) {
    seq_lens[r] = T / R;
    for (int p = 0; p < PAGES / R; p++) table[r * (PAGES / R) + p] = r * (PAGES / R) + p;
  }
  static caller c[CALLERS];
  pthread_t th[CALLERS];
  for (int i = 0; i < CALLERS; i++) { /* alone, one after another: the expectations */
    assert_true(outputs_make(&c[i].x, i) && outputs_make(&c[i].want, i));
    one_round(&c[i].want, &c[i].want_res);
    assert_int_equal(c[i].want_res.st_insert, DSV4KV_WARN_SKIPPED);
    assert_int_equal(c[i].want_res.st_gather, DSV4KV_OK);
    assert_int_equal(c[i].want_res.skipped, 1);
    char row[32];
    snprintf(row, sizeof row, "slot_mapping[%d]", BAD_ROW + i);
    assert_non_null(strstr(c[i].want_res.message, row));
  }
  for (int i = 0; i < CALLERS; i++) assert_int_equal(pthread_create(&th[i], NULL, caller_main, &c[i]), 0);
  for (int i = 0; i < CALLERS; i++) pthread_join(th[i], NULL);
  for (int i = 0; i < CALLERS; i++) {
    if (c[i].mismatches) print_error("caller %d: %d of %d rounds differ, first %s\n", i, c[i].mismatches, ROUNDS, c[i].first);
    assert_int_equal(c[i].mismatches, 0);
    free(c[i].x.cache), free(c[i].x.out), free(c[i].want.cache), free(c[i].want.out);
  }
}

/* One cache shared by the callers, each inserting its own rows into its own
 * quarter of the pages and gathering them back while the others write
 * theirs (the header: calls may share a cache where their writes land in
 * different records).  The cache and every output must be those of the same
 * calls made one after another. */
enum { SHARE_PAGES = PAGES / CALLERS, SHARE_ROWS = SHARE_PAGES * BS };
static uint8_t *shared_cache;
static int64_t shared_shape[2] = {PAGES, (int64_t)BS * V4_REC};

typedef struct {
  int i;
  int64_t slots[SHARE_ROWS], shape_k[2], shape_s[1], shape_o[3], shape_bt[2], shape_r[1];
  int32_t seq_len, table[SHARE_PAGES];
  uint16_t *out, *want;
  int mismatches;
} sharer;

static void share_round(sharer *c) {
  DLTensor k = {keys + (size_t)c->i * SHARE_ROWS * 512, {kDLCPU, 0}, 2, {kDLBfloat, 16, 1}, c->shape_k, NULL, 0};
  DLTensor s = {c->slots, {kDLCPU, 0}, 1, {kDLInt, 64, 1}, c->shape_s, NULL, 0};
  DLTensor cache = {shared_cache, {kDLCPU, 0}, 2, {kDLUInt, 8, 1}, shared_shape, NULL, 0};
  DLTensor o = {c->out, {kDLCPU, 0}, 3, {kDLBfloat, 16, 1}, c->shape_o, NULL, 0};
  DLTensor sl = {&c->seq_len, {kDLCPU, 0}, 1, {kDLInt, 32, 1}, c->shape_r, NULL, 0};
  DLTensor bt = {c->table, {kDLCPU, 0}, 2, {kDLInt, 32, 1}, c->shape_bt, NULL, 0};
  int64_t skipped = -1;
  const dsv4kv_options opt = {.num_threads = 2, .skipped = &skipped};
  c->mismatches += dsv4kv_quantize_and_insert_k_cache(&k, &cache, &desc, &s, &opt) != DSV4KV_OK || skipped != 0;
  c->mismatches += dsv4kv_dequantize_and_gather_k_cache(&o, &cache, &desc, &sl, NULL, &bt, 0, &opt) != DSV4KV_OK;
}

static void *sharer_main(void *p) {
  sharer *c = p;
  for (int r = 0; r < ROUNDS; r++) {
    share_round(c);
    c->mismatches += memcmp(c->out, c->want, (size_t)SHARE_ROWS * 512 * 2) != 0;
  }
  return NULL;
}

static void threads_share_one_cache(void **state) {
  (void)state;
  static sharer c[CALLERS];
  shared_cache = malloc(cache_bytes);
  assert_non_null(shared_cache);
  memset(shared_cache, 0xCD, cache_bytes);
  for (int i = 0; i < CALLERS; i++) {
    c[i].i = i, c[i].seq_len = SHARE_ROWS;
    c[i].shape_k[0] = SHARE_ROWS, c[i].shape_k[1] = 512, c[i].shape_s[0] = SHARE_ROWS, c[i].shape_r[0] = 1;
    c[i].shape_o[0] = 1, c[i].shape_o[1] = SHARE_ROWS, c[i].shape_o[2] = 512;
    c[i].shape_bt[0] = 1, c[i].shape_bt[1] = SHARE_PAGES;
    for (int p = 0; p < SHARE_PAGES; p++) c[i].table[p] = i * SHARE_PAGES + p;
    for (int64_t t = 0; t < SHARE_ROWS; t++) c[i].slots[t] = (int64_t)i * SHARE_ROWS + (t * 37) % SHARE_ROWS;
    c[i].out = malloc((size_t)SHARE_ROWS * 512 * 2), c[i].want = malloc((size_t)SHARE_ROWS * 512 * 2);
    assert_true(c[i].out && c[i].want);
    share_round(&c[i]); /* one after another: the expectations */
    memcpy(c[i].want, c[i].out, (size_t)SHARE_ROWS * 512 * 2);
    assert_int_equal(c[i].mismatches, 0);
  }
  uint8_t *want_cache = malloc(cache_bytes);
  assert_non_null(want_cache);
  memcpy(want_cache, shared_cache, cache_bytes);
  pthread_t th[CALLERS];
  for (int i = 0; i < CALLERS; i++) assert_int_equal(pthread_create(&th[i], NULL, sharer_main, &c[i]), 0);
  for (int i = 0; i < CALLERS; i++) pthread_join(th[i], NULL);
  for (int i = 0; i < CALLERS; i++) {
    assert_int_equal(c[i].mismatches, 0);
    free(c[i].out), free(c[i].want);
  }
  assert_memory_equal(shared_cache, want_cache, cache_bytes);
  free(want_cache), free(shared_cache);
}

int main(void) {
  setenv("DSV4KV_CPU_PARALLEL_MIN_NS", "0", 1); /* before the first call reads it */
  const struct CMUnitTest tests[] = {cmocka_unit_test(threads_match_one_at_a_time),
                                     cmocka_unit_test(threads_share_one_cache)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
