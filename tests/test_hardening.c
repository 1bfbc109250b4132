/* SPEC §7 beyond argument checks: what fuzzing the API found, pinned.
 * Index VALUES must never drive work or memory past the tensors passed in
 * (huge lengths, huge offsets, huge query_start_loc), outputs must not alias,
 * data must be aligned, and counts must not depend on the thread count. */
#define _GNU_SOURCE /* fork, alarm */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "support/support.h"

static double seconds(void) {
  struct timespec t;
  timespec_get(&t, TIME_UTC);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* A gather whose offset is near INT64_MAX: offset + i must not wrap into a
 * row that passes the bounds check.  Every token is skipped and counted. */
static void sec7_gather_offset_near_int64_max(void **state) {
  (void)state;
  tcache c;
  tcache_make(&c, DSV4KV_RECORD_MXFP8, 0, 16, 1, 0, 0x11, 0);
  fbuf ob;
  uint16_t *out = fb_alloc(&ob, 2 * 512 * 2, 64);
  fill_u16(out, 2 * 512, 0xA5A5);
  tview o, sl, bt;
  tv_3d(&o, out, dt_bf16(), 1, 2, 512, 1024, 512, 1);
  int32_t seq_lens[1] = {6}, table[1] = {0};
  tv_1d(&sl, seq_lens, dt_i32(), 1);
  tv_2d(&bt, table, dt_i32(), 1, 1, 1);
  int64_t skipped = -1;
  dsv4kv_options opt = {.skipped = &skipped};
  assert_status(dsv4kv_dequantize_and_gather_k_cache(&o.t, &c.v.t, &c.desc, &sl.t, NULL, &bt.t,
                                                     INT64_MAX, &opt),
                DSV4KV_WARN_SKIPPED);
  assert_int_equal(skipped, 6);
  for (int i = 0; i < 2 * 512; i++) assert_int_equal(out[i], 0xA5A5);
  assert_true(fb_guards_ok(&ob));
  fb_free(&ob);
  tcache_free(&c);
}

/* Lengths and query_start_loc values of 10^8 against one-row outputs: the
 * call returns at once with the surplus counted, not after 10^8 iterations. */
static void sec7_work_bounded_by_tensors_not_values(void **state) {
  (void)state;
  tcache c;
  tcache_make(&c, DSV4KV_RECORD_MXFP8, 0, 16, 1, 0, 0x22, 0);
  uint16_t out[512];
  tview o, sl, bt;
  tv_3d(&o, out, dt_bf16(), 1, 1, 512, 512, 512, 1);
  int32_t seq_lens[1] = {100000000}, table[1] = {0};
  tv_1d(&sl, seq_lens, dt_i32(), 1);
  tv_2d(&bt, table, dt_i32(), 1, 1, 1);
  int64_t skipped = -1;
  dsv4kv_options opt = {.skipped = &skipped};
  double t0 = seconds();
  assert_status(dsv4kv_dequantize_and_gather_k_cache(&o.t, &c.v.t, &c.desc, &sl.t, NULL, &bt.t, 0, &opt),
                DSV4KV_WARN_SKIPPED);
  /* Only token 0 fits out's one row, and its position 0 lives in page 0. */
  assert_int_equal(skipped, 100000000 - 1);

  int32_t topk[1] = {0}, qsl[2] = {0, 100000000}, gl[1] = {1}, comb[128 + 1], lens[1];
  tview tk, q, s, g, cb, ln;
  tv_2d(&tk, topk, dt_i32(), 1, 1, 1);
  tv_1d(&q, qsl, dt_i32(), 2);
  int32_t one[1] = {1};
  tv_1d(&s, one, dt_i32(), 1);
  tv_1d(&g, gl, dt_i32(), 1);
  tv_2d(&cb, comb, dt_i32(), 1, 129, 129);
  tv_1d(&ln, lens, dt_i32(), 1);
  assert_status(dsv4kv_combine_topk_swa_indices(&tk.t, &q.t, &s.t, &g.t, 128, 0, 0, 0, 0, &cb.t,
                                                &ln.t, &opt),
                DSV4KV_WARN_SKIPPED);
  /* 10^8 - 1 tokens outside, and token 0's window length (its position is
   * 1 - 10^8) clamped to 0: one more (SPEC §7). */
  assert_int_equal(skipped, 100000000);
  assert_int_equal(lens[0], 0);
  /* Both calls together: milliseconds, far from the seconds 10^8 steps take. */
  assert_true(seconds() - t0 < 1.0);
  tcache_free(&c);
}

/* An output that partly overlaps an input: rejected (with more than one
 * thread its bytes and counts depended on the schedule); global_out as
 * topk_indices itself (in place) stays allowed and matches the copy's result. */
static void sec7_output_overlapping_input_rejected(void **state) {
  (void)state;
  enum { T = 3, K = 4 };
  int32_t buf[(T + 1) * K], ref[T * K], table[2] = {5, 9}, req[T] = {0, 0, 0}, lens[T], lens_ref[T];
  uint8_t valid[T] = {1, 1, 1};
  tview tk, rq, bt, va, go, lo;
  for (int i = 0; i < (T + 1) * K; i++) buf[i] = i % 7;
  tv_1d(&rq, req, dt_i32(), T);
  tv_2d(&bt, table, dt_i32(), 1, 2, 2);
  tv_1d(&va, valid, dt_bool(), T);
  tv_1d(&lo, lens, dt_i32(), T);
  tv_2d(&tk, buf + K, dt_i32(), T, K, K); /* rows 1..3 of buf */
  tv_2d(&go, buf, dt_i32(), T, K, K);     /* rows 0..2: one row behind */
  assert_status(dsv4kv_compute_global_topk_indices_and_lens(&tk.t, &rq.t, &bt.t, 4, &va.t, &go.t, &lo.t, NULL),
                DSV4KV_ERR_STRIDE);
  assert_non_null(strstr(dsv4kv_last_error(), "global_out"));
  assert_non_null(strstr(dsv4kv_last_error(), "topk_indices"));
  tv_1d(&lo, buf + 2, dt_i32(), T); /* lens_out inside an input */
  tv_2d(&go, ref, dt_i32(), T, K, K);
  assert_status(dsv4kv_compute_global_topk_indices_and_lens(&tk.t, &rq.t, &bt.t, 4, &va.t, &go.t, &lo.t, NULL),
                DSV4KV_ERR_STRIDE);
  assert_non_null(strstr(dsv4kv_last_error(), "lens_out"));

  /* in place: the same view as input and output */
  tv_1d(&lo, lens_ref, dt_i32(), T);
  assert_status(dsv4kv_compute_global_topk_indices_and_lens(&tk.t, &rq.t, &bt.t, 4, &va.t, &go.t, &lo.t, NULL),
                DSV4KV_OK);
  tv_1d(&lo, lens, dt_i32(), T);
  assert_status(dsv4kv_compute_global_topk_indices_and_lens(&tk.t, &rq.t, &bt.t, 4, &va.t, &tk.t, &lo.t, NULL),
                DSV4KV_OK);
  assert_memory_equal(buf + K, ref, sizeof ref);
  assert_memory_equal(lens, lens_ref, sizeof lens);
  /* top-k 0: an empty global_out whose pointer lies inside lens_out
   * overlaps nothing (no element to write) */
  tview tk0, go0;
  tv_2d(&tk0, ref, dt_i32(), T, 0, 1);
  tv_2d(&go0, lens + 1, dt_i32(), T, 0, 1);
  assert_false(dsv4kv_is_error(
      dsv4kv_compute_global_topk_indices_and_lens(&tk0.t, &rq.t, &bt.t, 4, &va.t, &go0.t, &lo.t, NULL)));

  /* a gather whose block table lies inside its output */
  tcache c;
  tcache_make(&c, DSV4KV_RECORD_MXFP8, 0, 16, 1, 0, 0x33, 0);
  uint16_t out[2 * 512];
  tview o, sl, gbt;
  tv_3d(&o, out, dt_bf16(), 1, 2, 512, 1024, 512, 1);
  int32_t seq_lens[1] = {2};
  tv_1d(&sl, seq_lens, dt_i32(), 1);
  memset(out, 0, sizeof out);
  tv_2d(&gbt, (int32_t *)(void *)(out + 512), dt_i32(), 1, 1, 1);
  assert_status(dsv4kv_dequantize_and_gather_k_cache(&o.t, &c.v.t, &c.desc, &sl.t, NULL, &gbt.t, 0, NULL),
                DSV4KV_ERR_STRIDE);
  assert_non_null(strstr(dsv4kv_last_error(), "block_table"));
  tcache_free(&c);
}

/* An output with a zero or interleaved stride, or two outputs in one buffer:
 * rejected, since the bytes would depend on the thread schedule. */
static void sec7_overlapping_outputs_rejected(void **state) {
  (void)state;
  int32_t topk[4] = {0, 1, 2, 3}, req[2] = {0, 0}, table[1] = {7}, buf[16];
  uint8_t valid[2] = {1, 1};
  tview tk, rq, bt, va, go, lo;
  tv_2d(&tk, topk, dt_i32(), 2, 2, 2);
  tv_1d(&rq, req, dt_i32(), 2);
  tv_2d(&bt, table, dt_i32(), 1, 1, 1);
  tv_1d(&va, valid, dt_bool(), 2);
  int64_t g_shape[2] = {2, 2}, g_zero[2] = {2, 0}, g_inter[2] = {1, 1}, l_shape[1] = {2}, l_zero[1] = {0};

  tv_init(&go, buf, dt_i32(), 2, g_shape, g_zero);
  tv_1d(&lo, buf + 8, dt_i32(), 2);
  assert_status(dsv4kv_compute_global_topk_indices_and_lens(&tk.t, &rq.t, &bt.t, 4, &va.t, &go.t, &lo.t, NULL),
                DSV4KV_ERR_STRIDE);
  assert_non_null(strstr(dsv4kv_last_error(), "global_out"));

  tv_init(&go, buf, dt_i32(), 2, g_shape, g_inter);
  assert_status(dsv4kv_compute_global_topk_indices_and_lens(&tk.t, &rq.t, &bt.t, 4, &va.t, &go.t, &lo.t, NULL),
                DSV4KV_ERR_STRIDE);

  tv_init(&go, buf, dt_i32(), 2, g_shape, NULL);
  tv_init(&lo, buf, dt_i32(), 1, l_shape, l_zero);
  assert_status(dsv4kv_compute_global_topk_indices_and_lens(&tk.t, &rq.t, &bt.t, 4, &va.t, &go.t, &lo.t, NULL),
                DSV4KV_ERR_STRIDE);
  assert_non_null(strstr(dsv4kv_last_error(), "lens_out"));

  tv_1d(&lo, buf + 2, dt_i32(), 2); /* inside global_out's 4 entries */
  assert_status(dsv4kv_compute_global_topk_indices_and_lens(&tk.t, &rq.t, &bt.t, 4, &va.t, &go.t, &lo.t, NULL),
                DSV4KV_ERR_STRIDE);
  assert_non_null(strstr(dsv4kv_last_error(), "overlap"));

  /* An empty output with a zero stride has no elements to overlap. */
  int64_t e_shape[2] = {0, 2};
  tview te, le;
  tv_init(&te, buf, dt_i32(), 2, e_shape, g_zero);
  tv_1d(&le, buf, dt_i32(), 0);
  tview tk0, rq0;
  tv_2d(&tk0, topk, dt_i32(), 0, 2, 2);
  tv_1d(&rq0, req, dt_i32(), 0);
  assert_status(dsv4kv_compute_global_topk_indices_and_lens(&tk0.t, &rq0.t, &bt.t, 4, &va.t, &te.t, &le.t, NULL),
                DSV4KV_OK);

  tv_1d(&lo, buf + 4, dt_i32(), 2); /* right after it: fine */
  assert_status(dsv4kv_compute_global_topk_indices_and_lens(&tk.t, &rq.t, &bt.t, 4, &va.t, &go.t, &lo.t, NULL),
                DSV4KV_OK);
  assert_int_equal(buf[0], 28);
  assert_int_equal(buf[3], 31);
  assert_int_equal(buf[4], 2);
}

/* data + byte_offset not a multiple of the element size. */
static void sec7_misaligned_data(void **state) {
  (void)state;
  _Alignas(16) uint8_t raw[64] = {0};
  int32_t req[1] = {0}, table[1] = {0}, g[1], l[1];
  uint8_t valid[1] = {1};
  tview tk, rq, bt, va, go, lo;
  tv_2d(&tk, raw, dt_i32(), 1, 1, 1);
  tk.t.byte_offset = 1;
  tv_1d(&rq, req, dt_i32(), 1);
  tv_2d(&bt, table, dt_i32(), 1, 1, 1);
  tv_1d(&va, valid, dt_bool(), 1);
  tv_2d(&go, g, dt_i32(), 1, 1, 1);
  tv_1d(&lo, l, dt_i32(), 1);
  assert_status(dsv4kv_compute_global_topk_indices_and_lens(&tk.t, &rq.t, &bt.t, 1, &va.t, &go.t, &lo.t, NULL),
                DSV4KV_ERR_ALIGNMENT);
  assert_non_null(strstr(dsv4kv_last_error(), "topk_indices"));
  tk.t.byte_offset = 4;
  assert_status(dsv4kv_compute_global_topk_indices_and_lens(&tk.t, &rq.t, &bt.t, 1, &va.t, &go.t, &lo.t, NULL),
                DSV4KV_OK);
}

/* Shapes past 2^48 (reachable with zero strides over a few bytes) are refused
 * before any extent arithmetic can overflow. */
static void sec7_huge_broadcast_shapes(void **state) {
  (void)state;
  int32_t z[4] = {0};
  int32_t g[1], l[1];
  uint8_t valid[1] = {1};
  int64_t big[2] = {INT64_C(1) << 62, 1}, zero[2] = {0, 0};
  tview tk, rq, bt, va, go, lo;
  tv_init(&tk, z, dt_i32(), 2, big, zero);
  tv_1d(&rq, z, dt_i32(), 1);
  tv_2d(&bt, z, dt_i32(), 1, 1, 1);
  tv_1d(&va, valid, dt_bool(), 1);
  tv_2d(&go, g, dt_i32(), 1, 1, 1);
  tv_1d(&lo, l, dt_i32(), 1);
  assert_status(dsv4kv_compute_global_topk_indices_and_lens(&tk.t, &rq.t, &bt.t, 1, &va.t, &go.t, &lo.t, NULL),
                DSV4KV_ERR_SHAPE);
  assert_non_null(strstr(dsv4kv_last_error(), "2^48"));
}

/* An empty out without strides whose other dimensions multiply past int64
 * ({0, 2^48, 2^48}): its compact strides saturate (no signed overflow for
 * the sanitizer build's UBSan to report) and the call is refused. */
static void sec7_empty_tensor_compact_strides_saturate(void **state) {
  (void)state;
  tcache c;
  tcache_make(&c, DSV4KV_RECORD_MXFP8, 0, 16, 1, 0, 0x11, 0);
  uint16_t out[8] = {0};
  int64_t shape[3] = {0, INT64_C(1) << 48, INT64_C(1) << 48};
  tview o, sl, bt;
  tv_init(&o, out, dt_bf16(), 3, shape, NULL);
  int32_t seq_lens[1] = {6}, table[1] = {0};
  tv_1d(&sl, seq_lens, dt_i32(), 1);
  tv_2d(&bt, table, dt_i32(), 1, 1, 1);
  assert_status(dsv4kv_dequantize_and_gather_k_cache(&o.t, &c.v.t, &c.desc, &sl.t, NULL, &bt.t, 0, NULL),
                DSV4KV_ERR_STRIDE);
  assert_non_null(strstr(dsv4kv_last_error(), "out"));
  tcache_free(&c);
}

/* The allocating combine refuses a window_size that would make it allocate
 * terabytes, rather than trying. */
static void sec7_alloc_capped(void **state) {
  (void)state;
  int32_t topk[4] = {0}, qsl[2] = {0, 4}, sl[1] = {4}, gl[1] = {4};
  tview tk, q, s, g;
  tv_2d(&tk, topk, dt_i32(), 4, 1, 1);
  tv_1d(&q, qsl, dt_i32(), 2);
  tv_1d(&s, sl, dt_i32(), 1);
  tv_1d(&g, gl, dt_i32(), 1);
  DLManagedTensor *comb = (DLManagedTensor *)1, *lens = (DLManagedTensor *)1;
  assert_status(dsv4kv_combine_topk_swa_indices_alloc(&tk.t, &q.t, &s.t, &g.t, INT32_MAX, 0, 0, 0, 0,
                                                      &comb, &lens, NULL),
                DSV4KV_ERR_ALLOC);
  assert_null(comb);
  assert_null(lens);
}

/* A thread count far past the machine's is capped, not handed to OpenMP. */
static void sec7_num_threads_capped(void **state) {
  (void)state;
  tcache c;
  tcache_make(&c, DSV4KV_RECORD_V4, 0, 16, 64, 0, 0x33, 0);
  enum { T = 1024 };
  uint16_t *k = malloc((size_t)T * 512 * 2);
  int64_t *slots = malloc(T * sizeof *slots);
  rng_t r;
  rng_seed(&r, 7);
  for (int t = 0; t < T; t++) {
    gen_row(&r, k + (size_t)t * 512, 512, 0);
    slots[t] = t;
  }
  tview kv, sv;
  tv_2d(&kv, k, dt_bf16(), T, 512, 512);
  tv_1d(&sv, slots, dt_i64(), T);
  dsv4kv_options opt = {.num_threads = 1000000};
  double t0 = seconds();
  assert_status(dsv4kv_quantize_and_insert_k_cache(&kv.t, &c.v.t, &c.desc, &sv.t, &opt), DSV4KV_OK);
  assert_true(seconds() - t0 < 5.0);
  free(k);
  free(slots);
  tcache_free(&c);
}

/* check_nonfinite counts every row with a valid slot, also one that a later
 * row overwrites, so the count is the same for 1 and 2 threads. */
static void sec7_nonfinite_count_independent_of_threads(void **state) {
  (void)state;
  enum { T = 256 };
  tcache c;
  tcache_make(&c, DSV4KV_RECORD_MXFP8, 0, 16, 1, 0, 0, 0);
  static uint16_t k[T * 512];
  static int64_t slots[T];
  for (int i = 0; i < T * 512; i++) k[i] = 0x3F80; /* 1.0 */
  k[0] = 0x7FC0;                                    /* one NaN, in row 0 */
  for (int t = 0; t < T; t++) slots[t] = 5;         /* every row names slot 5 */
  tview kv, sv;
  tv_2d(&kv, k, dt_bf16(), T, 512, 512);
  tv_1d(&sv, slots, dt_i64(), T);
  for (int nt = 1; nt <= 2; nt++) {
    int64_t nonfinite = -1;
    dsv4kv_options opt = {.nonfinite = &nonfinite, .check_nonfinite = 1, .num_threads = nt};
    assert_status(dsv4kv_quantize_and_insert_k_cache(&kv.t, &c.v.t, &c.desc, &sv.t, &opt),
                  DSV4KV_WARN_NONFINITE);
    assert_int_equal(nonfinite, 1);
    assert_non_null(strstr(dsv4kv_last_error(), "k holds 1 NaN/Inf"));
  }
  tcache_free(&c);
}

/* slot_mapping lying inside the cache it drives, where an earlier row's
 * record would rewrite a later row's slot with one past the cache: refused
 * (ERR_STRIDE, naming both) before anything is written, on every thread
 * count; so is k inside the cache, and an indexer store's inputs. */
static void sec7_inputs_inside_cache_refused(void **state) {
  (void)state;
  enum { PAGES = 8192, REC = 528, T = 1024, GUARD = 4096 };
  for (int threads = 1; threads <= 2; threads++) {
    uint8_t *cache = calloc((size_t)PAGES * REC + GUARD, 1); /* the guard is not given to the call */
    uint16_t *k = calloc((size_t)T * 512, 2);
    assert_non_null(cache);
    assert_non_null(k);
    int64_t *slots = (int64_t *)(cache + 2000 * REC); /* the record of slot 2000 */
    for (int t = 0; t < T; t++) slots[t] = -1;
    slots[0] = 2000; /* row 0 would write the record holding slots[0 .. 65] */
    for (int t = 1; t <= 63; t++) slots[t] = 32 * (100 + t) + 17;
    k[0] = dsv4kv_f32_to_bf16(448.0f); /* block scale 1 */
    k[9] = dsv4kv_f32_to_bf16(0.125f); /* e4m3 0x20 at byte 9: slots[1] would become 0x2000 = PAGES */
    uint8_t *before = malloc((size_t)PAGES * REC + GUARD);
    assert_non_null(before);
    memcpy(before, cache, (size_t)PAGES * REC + GUARD);
    int64_t ks[2] = {T, 512}, ss[1] = {T}, cs[2] = {PAGES, REC};
    DLTensor kt = {k, {kDLCPU, 0}, 2, {kDLBfloat, 16, 1}, ks, NULL, 0};
    DLTensor st = {slots, {kDLCPU, 0}, 1, {kDLInt, 64, 1}, ss, NULL, 0};
    DLTensor ct = {cache, {kDLCPU, 0}, 2, {kDLUInt, 8, 1}, cs, NULL, 0};
    dsv4kv_cache_desc d = {DSV4KV_RECORD_MXFP8, DSV4KV_FP8_OCP, 1, 0, 0};
    dsv4kv_options o = {.num_threads = threads};
    assert_status(dsv4kv_quantize_and_insert_k_cache(&kt, &ct, &d, &st, &o), DSV4KV_ERR_STRIDE);
    assert_non_null(strstr(dsv4kv_last_error(), "k_cache overlaps slot_mapping"));
    assert_memory_equal(cache, before, (size_t)PAGES * REC + GUARD);
    /* k inside the cache (its last page), the slots outside: refused too */
    int64_t outside_slots[T];
    for (int t = 0; t < T; t++) outside_slots[t] = t;
    st.data = outside_slots;
    kt.data = cache + (size_t)(PAGES - 2) * REC;
    ks[0] = 1;
    ss[0] = 1;
    assert_status(dsv4kv_quantize_and_insert_k_cache(&kt, &ct, &d, &st, &o), DSV4KV_ERR_STRIDE);
    assert_non_null(strstr(dsv4kv_last_error(), "k_cache overlaps k"));
    /* k just past the cache's last page: apart, accepted */
    kt.data = cache + (size_t)PAGES * REC;
    assert_false(dsv4kv_is_error(dsv4kv_quantize_and_insert_k_cache(&kt, &ct, &d, &st, &o)));
    free(before);
    free(cache);
    free(k);
  }
  /* one layer's pages of a [pages, 2 layers, page] buffer (page stride two
   * pages): k in the other layer's bytes between them is apart, accepted;
   * k reaching into a page of this layer is refused; a 0-row k anywhere is
   * accepted (no bytes to read) */
  enum { LP = 4, PAGE = 64 * 584 };
  uint8_t *buf = calloc((size_t)LP * 2 * PAGE, 1);
  assert_non_null(buf);
  int64_t cs[2] = {LP, PAGE}, cst[2] = {2 * PAGE, 1}, ks[2] = {2, 512}, ss[1] = {2};
  int64_t slots[2] = {0, 1};
  DLTensor ct = {buf, {kDLCPU, 0}, 2, {kDLUInt, 8, 1}, cs, cst, 0};
  DLTensor kt = {buf + PAGE, {kDLCPU, 0}, 2, {kDLBfloat, 16, 1}, ks, NULL, 0}; /* layer 1's page 0 */
  DLTensor st = {slots, {kDLCPU, 0}, 1, {kDLInt, 64, 1}, ss, NULL, 0};
  dsv4kv_cache_desc d = {DSV4KV_RECORD_V4, DSV4KV_FP8_OCP, 64, 0, 0};
  assert_false(dsv4kv_is_error(dsv4kv_quantize_and_insert_k_cache(&kt, &ct, &d, &st, NULL)));
  kt.data = buf + 2 * PAGE - 1024; /* its second row is the first of layer 0's page 1 */
  assert_status(dsv4kv_quantize_and_insert_k_cache(&kt, &ct, &d, &st, NULL), DSV4KV_ERR_STRIDE);
  kt.data = buf + 4 * PAGE - 2048; /* the end of layer 1's page 1, up to layer 0's page 2 */
  assert_false(dsv4kv_is_error(dsv4kv_quantize_and_insert_k_cache(&kt, &ct, &d, &st, NULL)));
  kt.data = buf + 2 * PAGE + 100; /* inside layer 0's page 1 */
  assert_status(dsv4kv_quantize_and_insert_k_cache(&kt, &ct, &d, &st, NULL), DSV4KV_ERR_STRIDE);
  ks[0] = 0, ss[0] = 0; /* no rows */
  assert_false(dsv4kv_is_error(dsv4kv_quantize_and_insert_k_cache(&kt, &ct, &d, &st, NULL)));
  free(buf);
}

/* A forked child calls the library while another thread of the parent was
 * noting skips at the fork (every entry of its calls is past the table): the
 * child must not wait forever on a lock that thread held (a hang seen with
 * one global report lock; the child's alarm turns a hang into a failure). */
enum { FK_T = 512, FK_K = 64 };
static int32_t fk_topk[FK_T * FK_K], fk_req[FK_T], fk_bt[1], fk_out[FK_T * FK_K], fk_lens[FK_T];
static uint8_t fk_valid[FK_T];
static _Atomic int fk_stop;
static dsv4kv_status fk_call(void) {
  tview tk, rq, bt, va, go, ln;
  tv_2d(&tk, fk_topk, dt_i32(), FK_T, FK_K, FK_K);
  tv_1d(&rq, fk_req, dt_i32(), FK_T);
  tv_2d(&bt, fk_bt, dt_i32(), 1, 1, 1);
  tv_1d(&va, fk_valid, dt_bool(), FK_T);
  tv_2d(&go, fk_out, dt_i32(), FK_T, FK_K, FK_K);
  tv_1d(&ln, fk_lens, dt_i32(), FK_T);
  dsv4kv_options opt = {.num_threads = 1};
  return dsv4kv_compute_global_topk_indices_and_lens(&tk.t, &rq.t, &bt.t, 16, &va.t, &go.t, &ln.t, &opt);
}
static void *fk_noter(void *arg) {
  (void)arg;
  while (!fk_stop) fk_call();
  return NULL;
}
static void sec7_fork_while_noting_skips(void **state) {
  (void)state;
  for (int i = 0; i < FK_T * FK_K; i++) fk_topk[i] = 1000 + i % 7;
  for (int t = 0; t < FK_T; t++) fk_valid[t] = 1;
  assert_false(dsv4kv_is_error(fk_call()));
  pthread_t th;
  assert_int_equal(pthread_create(&th, NULL, fk_noter, NULL), 0);
  int bad = 0;
  for (int f = 0; f < 100 && !bad; f++) {
    const pid_t p = fork();
    if (p == 0) {
      alarm(10);
      _exit(dsv4kv_is_error(fk_call()) ? 1 : 0);
    }
    int st = 0;
    bad = p < 0 || waitpid(p, &st, 0) != p || !WIFEXITED(st) || WEXITSTATUS(st) != 0;
  }
  fk_stop = 1;
  pthread_join(th, NULL);
  assert_false(bad);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(sec7_gather_offset_near_int64_max),
      cmocka_unit_test(sec7_work_bounded_by_tensors_not_values),
      cmocka_unit_test(sec7_overlapping_outputs_rejected),
      cmocka_unit_test(sec7_output_overlapping_input_rejected),
      cmocka_unit_test(sec7_misaligned_data),
      cmocka_unit_test(sec7_huge_broadcast_shapes),
      cmocka_unit_test(sec7_alloc_capped),
      cmocka_unit_test(sec7_empty_tensor_compact_strides_saturate),
      cmocka_unit_test(sec7_num_threads_capped),
      cmocka_unit_test(sec7_nonfinite_count_independent_of_threads),
      cmocka_unit_test(sec7_inputs_inside_cache_refused),
      cmocka_unit_test(sec7_fork_while_noting_skips),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
