/*
 * SPEC §5 sparse-attention index preparation: hand-computed small cases.
 * Randomized batches against the reference transcribed from the SPEC text
 * (tests/support/ref_index.c), every flag combination and the skip paths
 * are the op registry's (tests/ops/cases_index.c).  Outputs are poisoned
 * before each call.
 */
#include <stdio.h>
#include <stdlib.h>

#include "support/support.h"

#define IPOISON 0x5A5A5A5A

/* int32 / bool tensor in a fenced buffer */
typedef struct {
  fbuf fb;
  void *d;
  tview v;
} tt;

static int32_t *t_i32(tt *t, const int32_t *vals, int64_t rows, int64_t cols /* 0 = 1-D */) {
  int64_t n = cols ? rows * cols : rows;
  t->d = fb_alloc(&t->fb, (size_t)n * 4, 4);
  if (vals)
    memcpy(t->d, vals, (size_t)n * 4);
  else
    fill_i32((int32_t *)t->d, (size_t)n, IPOISON);
  if (cols)
    tv_2d(&t->v, t->d, dt_i32(), rows, cols, cols);
  else
    tv_1d(&t->v, t->d, dt_i32(), rows);
  return (int32_t *)t->d;
}

static uint8_t *t_bool(tt *t, const uint8_t *vals, int64_t n) {
  t->d = fb_alloc(&t->fb, (size_t)n, 1);
  if (n) memcpy(t->d, vals, (size_t)n);
  tv_1d(&t->v, t->d, dt_bool(), n);
  return (uint8_t *)t->d;
}

static void t_free(tt *t) { fb_free(&t->fb); }

static void assert_i32_equal(const int32_t *got, const int32_t *want, int64_t n, int64_t row_len,
                             const char *what) {
  for (int64_t i = 0; i < n; i++)
    if (got[i] != want[i])
      fail_msg("%s: element [%lld][%lld] got %d want %d", what, (long long)(i / row_len),
               (long long)(i % row_len), got[i], want[i]);
}

/* ===================================================== 5.1 */
static void sec51_hand_example(void **state) {
  (void)state;
  const int32_t topk[2 * 6] = {0, 5, -1, 11, -3, 3, /* req 0 */
                               -1, 4, 8, -1, 0, 1 /* req 1, invalid token */};
  const int32_t t2r[2] = {0, 1};
  const int32_t bt[2 * 3] = {7, 2, 9, 4, 1, 0};
  const uint8_t valid[2] = {1, 0};
  const int32_t want_g[12] = {28, 9, -1, 39, -1, 31, -1, 4, 0, -1, 16, 17};
  const int32_t want_l[2] = {4, 0};
  tt a, b, c, d, g, l;
  t_i32(&a, topk, 2, 6);
  t_i32(&b, t2r, 2, 0);
  t_i32(&c, bt, 2, 3);
  t_bool(&d, valid, 2);
  int32_t *go = t_i32(&g, NULL, 2, 6);
  int32_t *lo = t_i32(&l, NULL, 2, 0);
  int64_t sk = -1;
  dsv4kv_options opt = {.skipped = &sk};
  assert_status(dsv4kv_compute_global_topk_indices_and_lens(&a.v.t, &b.v.t, &c.v.t, 4, &d.v.t, &g.v.t,
                                                            &l.v.t, &opt),
                DSV4KV_OK);
  assert_int_equal(sk, 0);
  assert_i32_equal(go, want_g, 12, 6, "global");
  assert_i32_equal(lo, want_l, 2, 2, "lens");
  assert_true(fb_guards_ok(&g.fb) && fb_guards_ok(&l.fb));
  t_free(&a); t_free(&b); t_free(&c); t_free(&d); t_free(&g); t_free(&l);
}

/* In place (global_out = topk_indices) on every CPU path: the same bytes,
 * lengths and skips as a separate output on the scalar path, also when an
 * entry far into the row is past the block table (a SIMD row hands such a
 * row to the scalar one, which must still find it unwritten). */
static void sec51_in_place_every_path(void **state) {
  (void)state;
  enum { K = 40, T = 3 };
  int32_t topk[T * K];
  for (int i = 0; i < T * K; i++) topk[i] = (i * 7) % 23 - 2; /* -2 .. 20: pages 0..5 of 4 */
  topk[1 * K + 37] = 40;                                       /* row 1: page 10, past the table */
  const int32_t t2r[T] = {0, 1, 0}, bt[2 * 6] = {3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8};
  const uint8_t valid[T] = {1, 1, 1};
  int32_t want_g[T * K], want_l[T];
  int64_t want_sk = -1;
  static const char *const paths[] = {"scalar", "avx2", "avx512"};
  for (int pi = 0; pi < 3; pi++) {
    if (dsv4kv_cpu_path_select(paths[pi]) != DSV4KV_OK) continue; /* not on this processor */
    tt a, b, c, d, l;
    t_i32(&a, topk, T, K);
    t_i32(&b, t2r, T, 0);
    t_i32(&c, bt, 2, 6);
    t_bool(&d, valid, T);
    int32_t *lo = t_i32(&l, NULL, T, 0);
    int64_t sk = -1;
    dsv4kv_options opt = {.skipped = &sk};
    if (pi == 0) { /* the reference: a separate output on the scalar path */
      tt g;
      int32_t *go = t_i32(&g, NULL, T, K);
      assert_status(dsv4kv_compute_global_topk_indices_and_lens(&a.v.t, &b.v.t, &c.v.t, 4, &d.v.t, &g.v.t, &l.v.t,
                                                                &opt),
                    DSV4KV_WARN_SKIPPED);
      memcpy(want_g, go, sizeof want_g), memcpy(want_l, lo, sizeof want_l), want_sk = sk;
      assert_true(want_sk > 0);
      t_free(&g);
      t_free(&a), t_i32(&a, topk, T, K); /* unchanged input for the in-place run below */
    }
    sk = -1;
    assert_status(dsv4kv_compute_global_topk_indices_and_lens(&a.v.t, &b.v.t, &c.v.t, 4, &d.v.t, &a.v.t, &l.v.t, &opt),
                  DSV4KV_WARN_SKIPPED);
    assert_i32_equal((const int32_t *)a.d, want_g, T * K, K, paths[pi]);
    assert_i32_equal(lo, want_l, T, T, paths[pi]);
    assert_int_equal(sk, want_sk);
    t_free(&a); t_free(&b); t_free(&c); t_free(&d); t_free(&l);
  }
  dsv4kv_cpu_path_select(NULL);
}

/* ===================================================== 5.2 */
static dsv4kv_status run_combine(tt *topk, tt *qsl, tt *seq, tt *gl, int32_t window, int32_t cr,
                                 int32_t topk_n, int32_t M, int32_t N, tt *comb, tt *lens,
                                 int64_t *sk) {
  dsv4kv_options opt = {.skipped = sk};
  if (sk) *sk = -1;
  return dsv4kv_combine_topk_swa_indices(&topk->v.t, &qsl->v.t, &seq->v.t, &gl->v.t, window, cr,
                                         topk_n, M, N, &comb->v.t, &lens->v.t, &opt);
}

static void sec52_hand_example(void **state) {
  (void)state;
  /* query_start_loc [10, 13, 15] rebased to [0, 3, 5]; token 5 is outside
   * every request.  window 4, cr 4, topk 3, M 100, N 50, C 9. */
  const int32_t topk[6 * 6] = {
      5, -1, 7, 100, 100, 100,  /* t0 */
      1, 2, 3, 100, 100, 100,   /* t1 */
      -1, -1, -1, 100, 100, 100, /* t2 */
      -1, 2, 9, 100, 100, 100,  /* t3 (req 1: -1 -> 99) */
      4, 6, 8, 100, 100, 100,   /* t4 */
      1, 1, 1, 1, 1, 1,         /* t5 */
  };
  const int32_t qsl[3] = {10, 13, 15}, seq[2] = {20, 9}, gl[2] = {8, 9};
  const int32_t P = IPOISON;
  const int32_t want[6 * 9] = {
      5, -1, 7, 52, 53, 54, 55, P, P,        /* pos 17: topk_len 3, swa 14..17 -> 52.. */
      1, 2, 3, 53, 54, 55, 56, P, P,         /* pos 18 */
      -1, -1, -1, 54, 55, 56, 57, P, P,      /* pos 19 */
      99, 102, 154, 155, 156, 157, P, P, P,  /* pos 7: topk_len 2, swa 4..7 */
      104, 106, 155, 156, 157, 158, P, P, P, /* pos 8: topk_len 2, swa 5..8 */
      P, P, P, P, P, P, P, P, P,             /* outside every request */
  };
  const int32_t want_l[6] = {7, 7, 7, 6, 6, P};
  tt a, q, s, g, c, l;
  t_i32(&a, topk, 6, 6);
  t_i32(&q, qsl, 3, 0);
  t_i32(&s, seq, 2, 0);
  t_i32(&g, gl, 2, 0);
  int32_t *co = t_i32(&c, NULL, 6, 9);
  int32_t *lo = t_i32(&l, NULL, 6, 0);
  int64_t sk;
  assert_status(run_combine(&a, &q, &s, &g, 4, 4, 3, 100, 50, &c, &l, &sk), DSV4KV_OK);
  assert_int_equal(sk, 0);
  assert_i32_equal(co, want, 54, 9, "combined");
  assert_i32_equal(lo, want_l, 6, 6, "lens");
  assert_true(fb_guards_ok(&c.fb) && fb_guards_ok(&l.fb));
  t_free(&a); t_free(&q); t_free(&s); t_free(&g); t_free(&c); t_free(&l);
}

/* top-k rows with fewer valid entries than topk_len: the -1 entries are
 * copied as M*r - 1 (SPEC 5.2), not skipped. */
static void sec52_short_topk_rows_copy_minus_one(void **state) {
  (void)state;
  const int32_t topk[2 * 5] = {3, 8, -1, -1, -1, 2, -1, -1, -1, -1};
  const int32_t qsl[3] = {0, 1, 2}, seq[2] = {40, 40}, gl[2] = {40, 2};
  /* cr 1, topk 5: pos 39 -> topk_len 5; window 2.
   * r0: swa_start max(38, 0, 0) = 38, gather_start 0 -> 1000*0 + 7 + 38 + j
   * r1: gather_start 38 -> 1000 + 7 + 0 + j */
  const int32_t want[2 * 8] = {3, 8, -1, -1, -1, 45, 46, IPOISON,
                               1002, 999, 999, 999, 999, 1007, 1008, IPOISON};
  const int32_t want_l[2] = {7, 7};
  tt a, q, s, g, c, l;
  t_i32(&a, topk, 2, 5);
  t_i32(&q, qsl, 3, 0);
  t_i32(&s, seq, 2, 0);
  t_i32(&g, gl, 2, 0);
  int32_t *co = t_i32(&c, NULL, 2, 8);
  int32_t *lo = t_i32(&l, NULL, 2, 0);
  int64_t sk;
  assert_status(run_combine(&a, &q, &s, &g, 2, 1, 5, 1000, 7, &c, &l, &sk), DSV4KV_OK);
  assert_i32_equal(co, want, 16, 8, "combined");
  assert_i32_equal(lo, want_l, 2, 2, "lens");
  t_free(&a); t_free(&q); t_free(&s); t_free(&g); t_free(&c); t_free(&l);
}

/* ===================================================== 5.3 */
typedef struct {
  tt dswa, dcomp, dlens, dvalid, ptopk, qsl, seq, replay, t2r, sbt, cbt, out, lens;
  dsv4kv_flashinfer_args a;
} fi_fix;

static void fi_bind(fi_fix *f, const ref_fi_args *r) {
  memset(f, 0, sizeof(*f));
  dsv4kv_flashinfer_args *a = &f->a;
  int32_t K4 = ref_fi_k4(r);
  t_i32(&f->dswa, r->dswa, r->D, r->S);
  a->decode_swa_indices = &f->dswa.v.t;
  if (r->dcomp) {
    t_i32(&f->dcomp, r->dcomp, r->D, r->Dk);
    a->decode_compressed_indices = &f->dcomp.v.t;
  }
  if (r->dlens) {
    t_i32(&f->dlens, r->dlens, r->D, 0);
    a->decode_compressed_topk_lens = &f->dlens.v.t;
  }
  if (r->dvalid) {
    t_bool(&f->dvalid, r->dvalid, r->D);
    a->decode_is_valid_token = &f->dvalid.v.t;
  }
  a->decode_compressed_indices_are_local = r->local;
  t_i32(&f->ptopk, r->ptopk, r->P, r->Wp);
  a->prefill_topk_indices = &f->ptopk.v.t;
  t_i32(&f->qsl, r->qsl, r->R + 1, 0);
  a->query_start_loc = &f->qsl.v.t;
  t_i32(&f->seq, r->seq, r->R, 0);
  a->seq_lens = &f->seq.v.t;
  t_i32(&f->replay, r->replay, r->R, 0);
  a->replay_start = &f->replay.v.t;
  t_i32(&f->t2r, r->t2r, r->D + r->P, 0);
  a->token_to_req_indices = &f->t2r.v.t;
  t_i32(&f->sbt, r->sbt, r->Rs, r->Ps);
  a->swa_block_table = &f->sbt.v.t;
  if (r->cbt) {
    t_i32(&f->cbt, r->cbt, r->Rc, r->Pc);
    a->compressed_block_table = &f->cbt.v.t;
  }
  a->swa_block_size = r->sbs;
  a->swa_block_span = r->sspan;
  a->compressed_block_size = r->cbs;
  a->compressed_block_span = r->cspan;
  a->window_size = r->window;
  a->compress_ratio = r->cr;
  a->topk = r->topk;
  t_i32(&f->out, NULL, r->D + r->P, r->S + K4);
  t_i32(&f->lens, NULL, r->D + r->P, 0);
}

static void fi_free(fi_fix *f) {
  tt *all[] = {&f->dswa, &f->dcomp, &f->dlens, &f->dvalid, &f->ptopk, &f->qsl, &f->seq,
               &f->replay, &f->t2r, &f->sbt, &f->cbt, &f->out, &f->lens};
  for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
    if (all[i]->fb.map) t_free(all[i]);
}

static void sec53_hand_example(void **state) {
  (void)state;
  const int32_t dswa[4] = {9, -1, 4, 13};
  const int32_t dcomp[2] = {3, -1};
  const uint8_t dvalid[1] = {1};
  const int32_t ptopk[2 * 3] = {1, 4, 0, -1, 5, 2};
  const int32_t qsl[3] = {0, 1, 3}, seq[2] = {5, 6}, replay[2] = {0, 2}, t2r[3] = {0, 1, 1};
  const int32_t sbt[4] = {3, 1, 2, 0};
  const int32_t cbt[6] = {5, 6, 7, 8, 9, 4};
  ref_fi_args r;
  memset(&r, 0, sizeof(r));
  r.D = 1; r.S = 4; r.Dk = 2; r.dswa = dswa; r.dcomp = dcomp; r.dvalid = dvalid; r.local = 1;
  r.P = 2; r.Wp = 3; r.ptopk = ptopk; r.qsl = qsl; r.R = 2; r.seq = seq; r.replay = replay; r.t2r = t2r;
  r.sbt = sbt; r.Rs = 2; r.Ps = 2; r.cbt = cbt; r.Rc = 2; r.Pc = 3;
  r.sbs = 4; r.sspan = 6; r.cbs = 2; r.cspan = 3; r.window = 3; r.cr = 2; r.topk = 3;
  const int32_t want[3 * 8] = {13, -1, 6, 19, 19, -1, -1, -1,
                               14, 15, 0, -1, 25, 12, -1, -1,
                               15, 0, 1, -1, -1, 13, 27, -1};
  const int32_t want_l[3] = {5, 6, 7};
  fi_fix f;
  fi_bind(&f, &r);
  int64_t sk = -1;
  dsv4kv_options opt = {.skipped = &sk};
  assert_status(dsv4kv_build_flashinfer_mixed_sparse_indices(&f.a, &f.out.v.t, &f.lens.v.t, &opt), DSV4KV_OK);
  assert_int_equal(sk, 0);
  assert_i32_equal((int32_t *)f.out.d, want, 24, 8, "sparse_indices");
  assert_i32_equal((int32_t *)f.lens.d, want_l, 3, 3, "sparse_lens");
  fi_free(&f);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(sec51_hand_example),
      cmocka_unit_test(sec51_in_place_every_path),
      cmocka_unit_test(sec52_hand_example),
      cmocka_unit_test(sec52_short_topk_rows_copy_minus_one),
      cmocka_unit_test(sec53_hand_example),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
