/* Hostile index values (SPEC §7 refinements): lengths never leave their row,
 * padding rows are not faults, spans may not alias, the indexer's eps and
 * non-finite norms.  Each case failed before its fix. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "support/support.h"

/* The call first, then its status and the skip count it wrote. */
#define status_and_skips(call, want, skipped, want_skipped)                                          \
  do {                                                                                               \
    dsv4kv_status st_ = (call);                                                                      \
    assert_status(st_, want);                                                                        \
    if ((skipped) != (want_skipped))                                                                 \
      fail_msg("skipped %lld, want %lld", (long long)(skipped), (long long)(want_skipped));          \
  } while (0)

/* ---- §5.1 --------------------------------------------------------------- */
typedef struct {
  int32_t topk[8], req[2], bt[2], out[8], lens[2];
  uint8_t valid[2];
  tview tk, rq, b, v, o, l;
} gt_case;

/* 2 tokens x 4 entries, 1 request with 2 pages of 4 tokens (local x < 8). */
static dsv4kv_status gt_run(gt_case *c, int64_t *skipped) {
  c->bt[0] = 5, c->bt[1] = 9;
  tv_2d(&c->tk, c->topk, dt_i32(), 2, 4, 4);
  tv_1d(&c->rq, c->req, dt_i32(), 2);
  tv_2d(&c->b, c->bt, dt_i32(), 1, 2, 2);
  tv_1d(&c->v, c->valid, dt_bool(), 2);
  tv_2d(&c->o, c->out, dt_i32(), 2, 4, 4);
  tv_1d(&c->l, c->lens, dt_i32(), 2);
  fill_i32(c->out, 8, 0x5A5A5A5A);
  fill_i32(c->lens, 2, 0x5A5A5A5A);
  dsv4kv_options opt = {.skipped = skipped};
  return dsv4kv_compute_global_topk_indices_and_lens(&c->tk.t, &c->rq.t, &c->b.t, 4, &c->v.t, &c->o.t, &c->l.t, &opt);
}

/* Issue 8.1: lens counts only the entries written as slots. */
static void global_topk_lens_count_written_slots(void **state) {
  (void)state;
  gt_case c = {.topk = {0, 8, 7, -1, 1, 2, 3, 4}, .req = {0, 0}, .valid = {1, 1}};
  int64_t sk = -1;
  status_and_skips(gt_run(&c, &sk), DSV4KV_WARN_SKIPPED, sk, 1);
  assert_int_equal(c.out[1], -1);   /* 8 is past the row's 2 pages */
  assert_int_equal(c.lens[0], 2);   /* 0 and 7 written; 8 not (was 3) */
  assert_int_equal(c.lens[1], 4);
  assert_int_equal(c.out[2], 9 * 4 + 3);
  /* a valid token whose request id is out of range: row -1, lens 0 */
  c.req[1] = 7;
  status_and_skips(gt_run(&c, &sk), DSV4KV_WARN_SKIPPED, sk, 2);
  assert_int_equal(c.lens[1], 0);   /* was 4 */
  for (int j = 4; j < 8; j++) assert_int_equal(c.out[j], -1);
  /* the message names the first entry in row order: row 0's 8 */
  assert_non_null(strstr(dsv4kv_last_error(), "2 entries skipped; the first: topk_indices[0][1] = 8"));
}

/* Issue 8.4: a padding row (is_valid_token false) with a sentinel request id
 * and garbage top-k is not a fault; in range, it keeps the reference's bytes. */
static void global_topk_padding_is_not_a_skip(void **state) {
  (void)state;
  gt_case c = {.topk = {0, 1, 2, 3, 99, -7, 123456, 5}, .req = {0, -1}, .valid = {1, 0}};
  int64_t sk = -1;
  status_and_skips(gt_run(&c, &sk), DSV4KV_OK, sk, 0);
  for (int j = 4; j < 8; j++) assert_int_equal(c.out[j], -1);
  assert_int_equal(c.lens[1], 0);
  /* in range but invalid: mapped as the reference maps it, length 0 */
  c.req[1] = 0;
  c.topk[4] = 6, c.topk[6] = 100;
  status_and_skips(gt_run(&c, &sk), DSV4KV_OK, sk, 0);
  assert_int_equal(c.out[4], 9 * 4 + 2);
  assert_int_equal(c.out[6], -1);
  assert_int_equal(c.out[7], 5 + 9 * 4 - 4);
  assert_int_equal(c.lens[1], 0);
  /* the same garbage on a valid row is still counted */
  c.valid[1] = 1;
  status_and_skips(gt_run(&c, &sk), DSV4KV_WARN_SKIPPED, sk, 1);
}

/* ---- §5.2 --------------------------------------------------------------- */
/* Issue 8.3: gather_lens shorter than the query gave a negative length. */
static void combine_lengths_never_negative(void **state) {
  (void)state;
  enum { T = 4, C = 16 };
  int32_t topk[T * 4], qsl[2] = {0, T}, seq[1] = {10}, gl[1] = {2}, comb[T * C], lens[T];
  for (int i = 0; i < T * 4; i++) topk[i] = i;
  tview tk, q, s, g, cb, ln;
  tv_2d(&tk, topk, dt_i32(), T, 4, 4);
  tv_1d(&q, qsl, dt_i32(), 2);
  tv_1d(&s, seq, dt_i32(), 1);
  tv_1d(&g, gl, dt_i32(), 1);
  tv_2d(&cb, comb, dt_i32(), T, C, C);
  tv_1d(&ln, lens, dt_i32(), T);
  fill_i32(comb, T * C, 0x5A5A5A5A);
  int64_t sk = -1;
  dsv4kv_options opt = {.skipped = &sk};
  /* positions 6..9, gather starts at 8: tokens 6 and 7 have no window keys */
  dsv4kv_status st = dsv4kv_combine_topk_swa_indices(&tk.t, &q.t, &s.t, &g.t, 8, 0, 0, 0, 0, &cb.t, &ln.t, &opt);
  status_and_skips(st, DSV4KV_WARN_SKIPPED, sk, 1); /* position 6: 6 - 8 + 1 = -1 */
  assert_int_equal(lens[0], 0);                      /* was -1 */
  assert_int_equal(lens[1], 0);
  assert_int_equal(lens[2], 1);
  assert_int_equal(lens[3], 2);
  assert_int_equal(comb[0], 0x5A5A5A5A);             /* nothing written for token 0 */
  assert_non_null(strstr(dsv4kv_last_error(), "gather_lens is shorter than the query"));
  for (int t = 0; t < T; t++) assert_true(lens[t] >= 0 && lens[t] <= C);
}

/* ---- §5.3 --------------------------------------------------------------- */
typedef struct {
  int32_t dswa[2 * 4], dcomp[2 * 4], dlens[2], ptopk[2 * 8], qsl[3], seq[2], replay[2], req[4], bt[4];
  uint8_t dvalid[2];
  int32_t out[4 * 8], lens[4];
  tview a[10], o, l;
  dsv4kv_flashinfer_args args;
} fi_case;

/* D = 2 decode tokens (S = 4, Dk = 4), P = 2 prefill tokens (Wp given), one
 * request per kind, block size 4, topk 4: rows are S + K4 = 8 wide. */
static dsv4kv_status fi_run(fi_case *c, int64_t Wp, int64_t *skipped) {
  tv_2d(&c->a[0], c->dswa, dt_i32(), 2, 4, 4);
  tv_2d(&c->a[1], c->dcomp, dt_i32(), 2, 4, 4);
  tv_1d(&c->a[2], c->dlens, dt_i32(), 2);
  tv_1d(&c->a[3], c->dvalid, dt_bool(), 2);
  tv_2d(&c->a[4], c->ptopk, dt_i32(), 2, Wp, Wp);
  tv_1d(&c->a[5], c->qsl, dt_i32(), 2);
  tv_1d(&c->a[6], c->seq, dt_i32(), 1);
  tv_1d(&c->a[7], c->replay, dt_i32(), 1);
  tv_1d(&c->a[8], c->req, dt_i32(), 4);
  tv_2d(&c->a[9], c->bt, dt_i32(), 1, 4, 4);
  tv_2d(&c->o, c->out, dt_i32(), 4, 8, 8);
  tv_1d(&c->l, c->lens, dt_i32(), 4);
  fill_i32(c->out, 32, 0x5A5A5A5A);
  fill_i32(c->lens, 4, 0x5A5A5A5A);
  c->args.decode_swa_indices = &c->a[0].t;
  c->args.decode_compressed_indices = &c->a[1].t;
  c->args.decode_compressed_topk_lens = &c->a[2].t;
  c->args.decode_is_valid_token = &c->a[3].t;
  c->args.prefill_topk_indices = &c->a[4].t;
  c->args.query_start_loc = &c->a[5].t;
  c->args.seq_lens = &c->a[6].t;
  c->args.replay_start = &c->a[7].t;
  c->args.token_to_req_indices = &c->a[8].t;
  c->args.swa_block_table = &c->a[9].t;
  if (!c->args.swa_block_size) c->args.swa_block_size = c->args.compressed_block_size = 4;
  c->args.window_size = 4;
  c->args.compress_ratio = 1;
  c->args.topk = 4;
  dsv4kv_options opt = {.skipped = skipped};
  return dsv4kv_build_flashinfer_mixed_sparse_indices(&c->args, &c->o.t, &c->l.t, &opt);
}

static void fi_defaults(fi_case *c) {
  memset(c, 0, sizeof *c);
  for (int i = 0; i < 8; i++) c->dswa[i] = i, c->dcomp[i] = i;
  for (int i = 0; i < 16; i++) c->ptopk[i] = i % 4;
  c->dlens[0] = c->dlens[1] = 4;
  c->dvalid[0] = c->dvalid[1] = 1;
  c->qsl[0] = 0, c->qsl[1] = 2; /* 2 prefill tokens at positions 6, 7 */
  c->seq[0] = 8;
  c->req[0] = c->req[1] = c->req[2] = c->req[3] = 0;
  c->bt[0] = 3, c->bt[1] = 2, c->bt[2] = 1, c->bt[3] = 0;
}

/* Issue 8.3: decode_compressed_topk_lens of 1000 on an 8-wide row gave 1004,
 * -5 gave -1; a prefill top-k length past the top-k tensor's width. */
static void flashinfer_lengths_stay_in_row(void **state) {
  (void)state;
  fi_case c;
  fi_defaults(&c);
  int64_t sk = -1;
  status_and_skips(fi_run(&c, 8, &sk), DSV4KV_OK, sk, 0);
  assert_int_equal(c.lens[0], 8);
  assert_int_equal(c.lens[2], 4 + 4); /* position 6: min(7, topk 4) */
  c.dlens[0] = 1000, c.dlens[1] = -5;
  status_and_skips(fi_run(&c, 8, &sk), DSV4KV_WARN_SKIPPED, sk, 2);
  assert_int_equal(c.lens[0], 8); /* was 1004 */
  assert_int_equal(c.lens[1], 4); /* was -1 */
  assert_non_null(strstr(dsv4kv_last_error(), "decode_compressed_topk_lens"));
  /* prefill_topk_indices only 2 wide while the top-k length is 4 */
  fi_defaults(&c);
  status_and_skips(fi_run(&c, 2, &sk), DSV4KV_WARN_SKIPPED, sk, 2);
  assert_int_equal(c.lens[2], 4 + 2);
  assert_int_equal(c.lens[3], 4 + 2);
  assert_int_equal(c.out[2 * 8 + 4 + 2], -1);
  for (int t = 0; t < 4; t++) assert_true(c.lens[t] >= 0 && c.lens[t] <= 8);
}

/* Issue 8.4: invalid decode tokens' out-of-range lookups are padding. */
static void flashinfer_padding_is_not_a_skip(void **state) {
  (void)state;
  fi_case c;
  fi_defaults(&c);
  c.args.decode_compressed_indices_are_local = 1;
  c.dcomp[4] = 1000; /* decode token 1: page 250 of a 4-page row */
  c.req[1] = 0;
  c.dvalid[1] = 0;
  int64_t sk = -1;
  status_and_skips(fi_run(&c, 8, &sk), DSV4KV_OK, sk, 0);
  assert_int_equal(c.out[1 * 8 + 4], -1);
  c.req[1] = -3; /* sentinel request id: every lookup fails, none counted */
  status_and_skips(fi_run(&c, 8, &sk), DSV4KV_OK, sk, 0);
  for (int j = 4; j < 8; j++) assert_int_equal(c.out[1 * 8 + j], -1);
  c.dvalid[1] = 1; /* the same on a valid token is a fault */
  status_and_skips(fi_run(&c, 8, &sk), DSV4KV_WARN_SKIPPED, sk, 4);
}

/* Issue 8.2: a span below the block size aliases slots. */
static void flashinfer_span_below_block_size(void **state) {
  (void)state;
  fi_case c;
  fi_defaults(&c);
  c.args.swa_block_size = c.args.compressed_block_size = 4;
  c.args.swa_block_span = 3;
  int64_t sk = 0;
  assert_status(fi_run(&c, 8, &sk), DSV4KV_ERR_VALUE);
  assert_non_null(strstr(dsv4kv_last_error(), "swa_block_span = 3"));
  assert_int_equal(c.lens[0], 0x5A5A5A5A); /* nothing written on an argument error */
  c.args.swa_block_span = 0;
  c.args.compressed_block_span = 2;
  assert_status(fi_run(&c, 8, &sk), DSV4KV_ERR_VALUE);
  assert_non_null(strstr(dsv4kv_last_error(), "compressed_block_span = 2"));
  c.args.compressed_block_span = 4; /* equal is fine, larger too */
  assert_status(fi_run(&c, 8, &sk), DSV4KV_OK);
  c.args.compressed_block_span = 9;
  assert_status(fi_run(&c, 8, &sk), DSV4KV_OK);
}

/* Issue 8.7: the real alignment rule: rows are S + K4 wide with K4 % 4 == 0,
 * so rows are 16-byte aligned exactly when S % 4 == 0; S = 5 is accepted
 * and laid out unpadded. */
static void flashinfer_row_width_rule(void **state) {
  (void)state;
  for (int S = 1; S <= 8; S++)
    for (int topk = 0; topk <= 9; topk++) {
      int k4 = (topk + 3) / 4 * 4;
      assert_int_equal(k4 % 4, 0);
      assert_int_equal((S + k4) % 4 == 0, S % 4 == 0);
    }
  enum { S = 5, W = 5 + 4 };
  int32_t dswa[S], ptopk[1] = {0}, qsl[2] = {0, 0}, seq[1] = {1}, rep[1] = {0}, req[1] = {0}, bt[1] = {0};
  int32_t out[W], lens[1];
  for (int j = 0; j < S; j++) dswa[j] = j;
  tview a[8], o, l;
  tv_2d(&a[0], dswa, dt_i32(), 1, S, S);
  tv_2d(&a[1], ptopk, dt_i32(), 0, 1, 1);
  tv_1d(&a[2], qsl, dt_i32(), 2);
  tv_1d(&a[3], seq, dt_i32(), 1);
  tv_1d(&a[4], rep, dt_i32(), 1);
  tv_1d(&a[5], req, dt_i32(), 1);
  tv_2d(&a[6], bt, dt_i32(), 1, 1, 1);
  tv_2d(&o, out, dt_i32(), 1, W, W);
  tv_1d(&l, lens, dt_i32(), 1);
  dsv4kv_flashinfer_args args = {0};
  args.decode_swa_indices = &a[0].t;
  args.prefill_topk_indices = &a[1].t;
  args.query_start_loc = &a[2].t;
  args.seq_lens = &a[3].t;
  args.replay_start = &a[4].t;
  args.token_to_req_indices = &a[5].t;
  args.swa_block_table = &a[6].t;
  args.swa_block_size = args.compressed_block_size = 64;
  args.window_size = S;
  args.compress_ratio = 4;
  args.topk = 4;
  assert_status(dsv4kv_build_flashinfer_mixed_sparse_indices(&args, &o.t, &l.t, NULL), DSV4KV_OK);
  for (int j = 0; j < S; j++) assert_int_equal(out[j], j);
  for (int j = S; j < W; j++) assert_int_equal(out[j], -1);
  /* a padded width is refused: the layout is the reference's */
  int32_t wide[W + 3];
  tv_2d(&o, wide, dt_i32(), 1, W + 3, W + 3);
  assert_status(dsv4kv_build_flashinfer_mixed_sparse_indices(&args, &o.t, &l.t, NULL), DSV4KV_ERR_SHAPE);
}

/* ---- §6 ----------------------------------------------------------------- */
static dsv4kv_status indexer_row(const uint16_t *k, float eps, int check, int64_t *nonfinite) {
  static uint8_t cache[4 * 132];
  float cs[64], w[128];
  for (int j = 0; j < 32; j++) cs[j] = 1.0f, cs[32 + j] = 0.0f;
  for (int d = 0; d < 128; d++) w[d] = 1.0f;
  int64_t pos[1] = {0}, slot[1] = {0};
  tview tk, tp, tc, tw, tkc, ts;
  tv_2d(&tk, (void *)k, dt_bf16(), 1, 128, 128);
  tv_1d(&tp, pos, dt_i64(), 1);
  tv_2d(&tc, cs, dt_f32(), 1, 64, 64);
  tv_1d(&tw, w, dt_f32(), 128);
  tv_2d(&tkc, cache, dt_u8(), 1, 4 * 132, 4 * 132);
  tv_1d(&ts, slot, dt_i64(), 1);
  dsv4kv_cache_desc desc = {DSV4KV_RECORD_INDEXER_FP8, DSV4KV_FP8_OCP, 4, 0, 0};
  dsv4kv_options opt = {.nonfinite = nonfinite, .check_nonfinite = check};
  return dsv4kv_indexer_k_norm_rope_store(&tk.t, &tp.t, &tc.t, &tw.t, eps, &tkc.t, &desc, &ts.t, 1, &opt);
}

/* Issue 8.5: eps must be finite and >= 0; a non-finite RMSNorm is reported. */
static void indexer_eps_and_nonfinite_norm(void **state) {
  (void)state;
  uint16_t k[128] = {0};
  int64_t nf = -1;
  const float bad_eps[] = {-1e-6f, NAN, INFINITY, -INFINITY};
  for (int i = 0; i < 4; i++) {
    assert_status(indexer_row(k, bad_eps[i], 1, &nf), DSV4KV_ERR_VALUE);
    assert_non_null(strstr(dsv4kv_last_error(), "eps"));
  }
  /* eps = 0 (the reference's scale-boundary files use it): an all-zero row
   * is 0 / 0; stored as the reference stores it, and now reported */
  assert_status(indexer_row(k, 0.0f, 1, &nf), DSV4KV_WARN_NONFINITE);
  assert_int_equal(nf, 1);
  assert_non_null(strstr(dsv4kv_last_error(), "k_pre"));
  assert_status(indexer_row(k, 0.0f, 0, &nf), DSV4KV_OK); /* unchecked: the reference's silence */
  assert_status(indexer_row(k, 1e-6f, 1, &nf), DSV4KV_OK);
  assert_int_equal(nf, 0);
  /* finite inputs whose sum of squares overflows fp32 */
  for (int d = 0; d < 128; d++) k[d] = 0x5F80; /* 2^64: squares 2^128 */
  assert_status(indexer_row(k, 1e-6f, 1, &nf), DSV4KV_WARN_NONFINITE);
  assert_int_equal(nf, 1);
  /* a NaN input counts once, not again for the norm it spoils */
  for (int d = 0; d < 128; d++) k[d] = 0x3F80;
  k[7] = 0x7FC0;
  assert_status(indexer_row(k, 1e-6f, 1, &nf), DSV4KV_WARN_NONFINITE);
  assert_int_equal(nf, 1);
}

/* The message names the first skipped entry in a fixed order at any thread
 * count: neighbouring entries once shared an ordering key (its lowest bit was
 * dropped), so tokens 64 and 65 tied and the schedule picked one. */
static void first_skip_is_schedule_independent(void **state) {
  (void)state;
  enum { L = 130 };
  uint8_t cache[584];
  memset(cache, 0x11, sizeof cache);
  uint16_t *out = calloc((size_t)L * 512, sizeof *out);
  int32_t seq[1] = {L}, bt[L];
  for (int i = 0; i < L; i++) bt[i] = 0;
  bt[64] = bt[65] = -5;
  tview o, c, s, b;
  tv_3d(&o, out, dt_bf16(), 1, L, 512, (int64_t)L * 512, 512, 1);
  tv_2d(&c, cache, dt_u8(), 1, 584, 584);
  tv_1d(&s, seq, dt_i32(), 1);
  tv_2d(&b, bt, dt_i32(), 1, L, L);
  dsv4kv_cache_desc desc = {DSV4KV_RECORD_V4, DSV4KV_FP8_OCP, 1, 0, 0};
  for (int run = 0; run < 40; run++) {
    int64_t sk = -1;
    dsv4kv_options opt = {.skipped = &sk, .num_threads = 1 + run % 2};
    assert_status(dsv4kv_dequantize_and_gather_k_cache(&o.t, &c.t, &desc, &s.t, NULL, &b.t, 0, &opt),
                  DSV4KV_WARN_SKIPPED);
    assert_int_equal(sk, 2);
    assert_non_null(strstr(dsv4kv_last_error(), "the first: block_table[0][64] = -5"));
  }
  free(out);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(global_topk_lens_count_written_slots), cmocka_unit_test(global_topk_padding_is_not_a_skip),
      cmocka_unit_test(combine_lengths_never_negative),       cmocka_unit_test(flashinfer_lengths_stay_in_row),
      cmocka_unit_test(flashinfer_padding_is_not_a_skip),     cmocka_unit_test(flashinfer_span_below_block_size),
      cmocka_unit_test(flashinfer_row_width_rule),            cmocka_unit_test(indexer_eps_and_nonfinite_norm),
      cmocka_unit_test(first_skip_is_schedule_independent),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
