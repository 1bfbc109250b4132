/*
 * SPEC §5 sparse-attention index preparation: hand-computed small cases,
 * then randomized batches against the reference transcribed from the SPEC
 * text (tests/support/ref_index.c).  Outputs are poisoned before each call.
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

static void sec51_random_vs_reference(void **state) {
  (void)state;
  rng_t r;
  rng_seed(&r, 51);
  for (int it = 0; it < 6; it++) {
    int64_t T = 1 + rng_below(&r, 40), K = 1 + rng_below(&r, 70), R = 1 + rng_below(&r, 4);
    int32_t bs = (int32_t)(1 + rng_below(&r, 70));
    int64_t P = 1 + rng_below(&r, 6);
    int32_t *topk = (int32_t *)malloc((size_t)(T * K) * 4);
    int32_t *t2r = (int32_t *)malloc((size_t)T * 4);
    int32_t *bt = (int32_t *)malloc((size_t)(R * P) * 4);
    uint8_t *valid = (uint8_t *)malloc((size_t)T);
    for (int64_t i = 0; i < R * P; i++) bt[i] = (int32_t)rng_below(&r, 5000);
    for (int64_t t = 0; t < T; t++) {
      t2r[t] = (int32_t)rng_below(&r, (uint32_t)R);
      valid[t] = (uint8_t)(rng_below(&r, 4) != 0);
      for (int64_t j = 0; j < K; j++) {
        uint32_t u = rng_below(&r, 10);
        topk[t * K + j] = u == 0 ? -1 : u == 1 ? -(int32_t)rng_below(&r, 100000) - 2
                        : u == 2 ? INT32_MIN : (int32_t)rng_below(&r, (uint32_t)(P * bs));
      }
    }
    tt a, b, c, d, g, l;
    t_i32(&a, topk, T, K);
    t_i32(&b, t2r, T, 0);
    t_i32(&c, bt, R, P);
    t_bool(&d, valid, T);
    int32_t *go = t_i32(&g, NULL, T, K);
    int32_t *lo = t_i32(&l, NULL, T, 0);
    int32_t *wg = (int32_t *)malloc((size_t)(T * K) * 4);
    int32_t *wl = (int32_t *)malloc((size_t)T * 4);
    int64_t wsk = 0, sk = -1;
    ref_global_topk(topk, T, K, t2r, bt, R, P, bs, valid, wg, wl, &wsk);
    assert_int_equal(wsk, 0);
    dsv4kv_options opt = {.skipped = &sk};
    assert_status(dsv4kv_compute_global_topk_indices_and_lens(&a.v.t, &b.v.t, &c.v.t, bs, &d.v.t,
                                                              &g.v.t, &l.v.t, &opt),
                  DSV4KV_OK);
    assert_int_equal(sk, 0);
    assert_i32_equal(go, wg, T * K, K, "global");
    assert_i32_equal(lo, wl, T, T, "lens");
    assert_true(fb_guards_ok(&g.fb) && fb_guards_ok(&l.fb));
    t_free(&a); t_free(&b); t_free(&c); t_free(&d); t_free(&g); t_free(&l);
    free(topk); free(t2r); free(bt); free(valid); free(wg); free(wl);
  }
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

/* A random consistent batch; compare with the reference, all columns. */
static void combine_random(rng_t *r, int32_t cr, int32_t topk_n, int32_t window) {
  int64_t R = 1 + rng_below(r, 4);
  int32_t *qsl = (int32_t *)malloc((size_t)(R + 1) * 4);
  int32_t *seq = (int32_t *)malloc((size_t)R * 4), *gl = (int32_t *)malloc((size_t)R * 4);
  int32_t base = (int32_t)rng_below(r, 50);
  qsl[0] = base;
  for (int64_t i = 0; i < R; i++) {
    int32_t ql = (int32_t)rng_below(r, 6); /* q_len 0 allowed */
    qsl[i + 1] = qsl[i] + ql;
    seq[i] = ql + (int32_t)rng_below(r, 300);
    int32_t start_pos = seq[i] - ql;
    gl[i] = seq[i] - (int32_t)rng_below(r, (uint32_t)start_pos + 1); /* gather_start <= start_pos */
  }
  int64_t T = qsl[R] - base + (int64_t)rng_below(r, 3); /* trailing tokens outside requests */
  if (T == 0) T = 1;
  int64_t W = topk_n + (int64_t)rng_below(r, 5);
  if (W == 0) W = 1;
  int64_t C = round_up64(topk_n + window, 128);
  int32_t M = 1000 + (int32_t)rng_below(r, 5000), N = (int32_t)rng_below(r, 900);
  int32_t *topk = (int32_t *)malloc((size_t)(T * W) * 4);
  for (int64_t i = 0; i < T * W; i++) topk[i] = rng_below(r, 5) == 0 ? -1 : (int32_t)rng_below(r, 500);
  int32_t *wc = (int32_t *)malloc((size_t)(T * C) * 4), *wl = (int32_t *)malloc((size_t)T * 4);
  fill_i32(wc, (size_t)(T * C), IPOISON);
  fill_i32(wl, (size_t)T, IPOISON);
  int64_t wsk = 0;
  ref_combine(topk, T, W, qsl, R, seq, gl, window, cr, topk_n, M, N, wc, C, wl, &wsk);
  assert_int_equal(wsk, 0);
  tt a, q, s, g, c, l;
  t_i32(&a, topk, T, W);
  t_i32(&q, qsl, R + 1, 0);
  t_i32(&s, seq, R, 0);
  t_i32(&g, gl, R, 0);
  int32_t *co = t_i32(&c, NULL, T, C);
  int32_t *lo = t_i32(&l, NULL, T, 0);
  int64_t sk;
  assert_status(run_combine(&a, &q, &s, &g, window, cr, topk_n, M, N, &c, &l, &sk), DSV4KV_OK);
  assert_int_equal(sk, 0);
  char what[80];
  snprintf(what, sizeof(what), "combined (cr %d topk %d window %d)", cr, topk_n, window);
  assert_i32_equal(co, wc, T * C, C, what);
  assert_i32_equal(lo, wl, T, T, "lens");
  assert_true(fb_guards_ok(&c.fb) && fb_guards_ok(&l.fb));

  /* the _alloc variant: -1 fill, lens 0 fill, same written entries */
  DLManagedTensor *mc = NULL, *ml = NULL;
  dsv4kv_options opt = {.skipped = &sk};
  assert_status(dsv4kv_combine_topk_swa_indices_alloc(&a.v.t, &q.v.t, &s.v.t, &g.v.t, window, cr, topk_n,
                                                      M, N, &mc, &ml, &opt),
                DSV4KV_OK);
  assert_non_null(mc);
  assert_non_null(ml);
  DLTensor *tc = &mc->dl_tensor, *tl = &ml->dl_tensor;
  assert_int_equal(tc->ndim, 2);
  assert_int_equal(tc->shape[0], T);
  assert_int_equal(tc->shape[1], C);
  assert_int_equal(tc->dtype.code, kDLInt);
  assert_int_equal(tc->dtype.bits, 32);
  assert_int_equal(tc->device.device_type, kDLCPU);
  assert_int_equal(tl->ndim, 1);
  assert_int_equal(tl->shape[0], T);
  assert_int_equal(tl->dtype.bits, 32);
  const int32_t *ac = (const int32_t *)((const char *)tc->data + tc->byte_offset);
  const int32_t *al = (const int32_t *)((const char *)tl->data + tl->byte_offset);
  int64_t cs0 = tc->strides ? tc->strides[0] : C, cs1 = tc->strides ? tc->strides[1] : 1;
  for (int64_t t = 0; t < T; t++) {
    for (int64_t j = 0; j < C; j++) {
      int32_t w = wc[t * C + j] == IPOISON ? -1 : wc[t * C + j];
      int32_t got = ac[t * cs0 + j * cs1];
      if (got != w) fail_msg("alloc combined [%lld][%lld] got %d want %d", (long long)t, (long long)j, got, w);
    }
    int32_t wlen = wl[t] == IPOISON ? 0 : wl[t];
    int64_t ls = tl->strides ? tl->strides[0] : 1;
    if (al[t * ls] != wlen) fail_msg("alloc lens [%lld] got %d want %d", (long long)t, al[t * ls], wlen);
  }
  dsv4kv_managed_free(mc);
  dsv4kv_managed_free(ml);

  t_free(&a); t_free(&q); t_free(&s); t_free(&g); t_free(&c); t_free(&l);
  free(qsl); free(seq); free(gl); free(topk); free(wc); free(wl);
}

static void sec52_random_vs_reference(void **state) {
  (void)state;
  rng_t r;
  rng_seed(&r, 52);
  const int32_t crs[4] = {1, 2, 4, 128};
  for (int it = 0; it < 24; it++) combine_random(&r, crs[it % 4], (int32_t)(1 + rng_below(&r, 40)),
                                                  (int32_t)(1 + rng_below(&r, 20)));
}

static void sec52_compress_ratio_zero_swa_only(void **state) {
  (void)state;
  rng_t r;
  rng_seed(&r, 53);
  for (int it = 0; it < 6; it++) combine_random(&r, 0, (int32_t)rng_below(&r, 20), (int32_t)(1 + rng_below(&r, 20)));
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

static void fi_check(const ref_fi_args *r, const char *what) {
  fi_fix f;
  fi_bind(&f, r);
  int32_t K4 = ref_fi_k4(r);
  int64_t rows = r->D + r->P, width = r->S + K4;
  int32_t *wo = (int32_t *)malloc((size_t)(rows * width + 1) * 4);
  int32_t *wl = (int32_t *)malloc((size_t)(rows + 1) * 4);
  int64_t wsk = 0, sk = -1;
  ref_flashinfer(r, wo, wl, &wsk);
  assert_int_equal(wsk, 0);
  dsv4kv_options opt = {.skipped = &sk};
  assert_status(dsv4kv_build_flashinfer_mixed_sparse_indices(&f.a, &f.out.v.t, &f.lens.v.t, &opt), DSV4KV_OK);
  assert_int_equal(sk, 0);
  assert_i32_equal((int32_t *)f.out.d, wo, rows * width, width, what);
  assert_i32_equal((int32_t *)f.lens.d, wl, rows, rows, what);
  assert_true(fb_guards_ok(&f.out.fb) && fb_guards_ok(&f.lens.fb));
  free(wo);
  free(wl);
  fi_free(&f);
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

/* Random consistent mixed batch.  mode: 0 global + lens, 1 global no lens,
 * 2 local (+ valid mask), 3 no decode compressed indices. */
static void fi_random(rng_t *g, int32_t D_req, int32_t P_req, int mode, int32_t cr, int spans,
                      const char *what) {
  ref_fi_args r;
  memset(&r, 0, sizeof(r));
  int32_t R = D_req + P_req;
  int32_t *qsl = (int32_t *)calloc((size_t)R + 1, 4), *seq = (int32_t *)calloc((size_t)R + 1, 4),
          *replay = (int32_t *)calloc((size_t)R + 1, 4);
  for (int32_t i = 0; i < R; i++) {
    int32_t ql = i < D_req ? 1 : 1 + (int32_t)rng_below(g, 6);
    qsl[i + 1] = qsl[i] + ql;
    seq[i] = ql + (int32_t)rng_below(g, 60);
    replay[i] = (int32_t)rng_below(g, (uint32_t)(seq[i] - ql + 1));
  }
  int32_t D = D_req, P = qsl[R] - D_req, T = D + P;
  int32_t *t2r = (int32_t *)malloc((size_t)(T + 1) * 4);
  for (int32_t i = 0; i < R; i++)
    for (int32_t t = qsl[i]; t < qsl[i + 1]; t++) t2r[t] = i;
  r.window = 1 + (int32_t)rng_below(g, 16);
  r.S = r.window + (int32_t)rng_below(g, 5);
  r.sbs = 1 + (int32_t)rng_below(g, 16);
  r.cbs = 1 + (int32_t)rng_below(g, 16);
  r.sspan = spans ? r.sbs + (int32_t)rng_below(g, 9) : 0;
  r.cspan = spans ? r.cbs + (int32_t)rng_below(g, 9) : 0;
  r.cr = cr;
  r.topk = cr ? 1 + (int32_t)rng_below(g, 30) : 0;
  r.Dk = mode == 3 ? 0 : 1 + (int32_t)rng_below(g, 33);
  r.local = mode == 2;
  r.Rs = R;
  r.Ps = 70 / r.sbs + 2;
  int32_t *sbt = (int32_t *)malloc((size_t)(r.Rs * r.Ps) * 4);
  for (int32_t i = 0; i < r.Rs * r.Ps; i++) sbt[i] = (int32_t)rng_below(g, 200);
  int32_t *cbt = NULL;
  if (rng_below(g, 2)) {
    r.Rc = R;
    r.Pc = 70 / r.cbs + 2;
    cbt = (int32_t *)malloc((size_t)(r.Rc * r.Pc) * 4);
    for (int32_t i = 0; i < r.Rc * r.Pc; i++) cbt[i] = (int32_t)rng_below(g, 200);
  }
  int32_t Pc = cbt ? r.Pc : r.Ps;
  int32_t *dswa = (int32_t *)malloc((size_t)(D * r.S + 1) * 4);
  for (int32_t i = 0; i < D * r.S; i++) dswa[i] = rng_below(g, 6) == 0 ? -1 : (int32_t)rng_below(g, 3000);
  int32_t *dcomp = NULL, *dlens = NULL;
  uint8_t *dvalid = NULL;
  if (r.Dk) {
    dcomp = (int32_t *)malloc((size_t)(D * r.Dk + 1) * 4);
    for (int32_t i = 0; i < D * r.Dk; i++)
      dcomp[i] = rng_below(g, 5) == 0 ? -1
               : r.local ? (int32_t)rng_below(g, (uint32_t)(Pc * r.cbs)) : (int32_t)rng_below(g, 3000);
    if (mode == 0) {
      dlens = (int32_t *)malloc((size_t)(D + 1) * 4);
      for (int32_t i = 0; i < D; i++) dlens[i] = (int32_t)rng_below(g, (uint32_t)r.Dk + 1);
    }
    if (mode == 2) {
      dvalid = (uint8_t *)malloc((size_t)D + 1);
      for (int32_t i = 0; i < D; i++) dvalid[i] = (uint8_t)(rng_below(g, 3) != 0);
    }
  }
  r.Wp = 1 + (int32_t)rng_below(g, 40);
  int32_t *ptopk = (int32_t *)malloc((size_t)(P * r.Wp + 1) * 4);
  for (int32_t i = 0; i < P * r.Wp; i++)
    ptopk[i] = rng_below(g, 6) == 0 ? -1 : (int32_t)rng_below(g, (uint32_t)(Pc * r.cbs));
  r.D = D; r.dswa = dswa; r.dcomp = dcomp; r.dlens = dlens; r.dvalid = dvalid;
  r.P = P; r.ptopk = ptopk; r.qsl = qsl; r.R = R; r.seq = seq; r.replay = replay; r.t2r = t2r;
  r.sbt = sbt; r.cbt = cbt;
  fi_check(&r, what);
  free(qsl); free(seq); free(replay); free(t2r); free(sbt); free(cbt); free(dswa); free(dcomp);
  free(dlens); free(dvalid); free(ptopk);
}

static void sec53_decode_only(void **state) {
  (void)state;
  rng_t g;
  rng_seed(&g, 531);
  for (int mode = 0; mode < 4; mode++) fi_random(&g, 5, 0, mode, 4, 0, "decode-only");
}

static void sec53_prefill_only(void **state) {
  (void)state;
  rng_t g;
  rng_seed(&g, 532);
  for (int it = 0; it < 4; it++) fi_random(&g, 0, 4, 3, it == 0 ? 0 : 2 * it, it & 1, "prefill-only");
}

static void sec53_mixed_local_vs_global(void **state) {
  (void)state;
  rng_t g;
  rng_seed(&g, 533);
  for (int it = 0; it < 16; it++) {
    static const int32_t crs[4] = {1, 4, 128, 0};
    fi_random(&g, 1 + (int32_t)rng_below(&g, 4), 1 + (int32_t)rng_below(&g, 4), it % 4, crs[(it / 4) % 4],
              0, "mixed");
  }
}

static void sec53_spans_differ_from_block_size(void **state) {
  (void)state;
  rng_t g;
  rng_seed(&g, 534);
  for (int it = 0; it < 8; it++) fi_random(&g, 2, 3, it % 4, 4, 1, "spans");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(sec51_hand_example),
      cmocka_unit_test(sec51_random_vs_reference),
      cmocka_unit_test(sec52_hand_example),
      cmocka_unit_test(sec52_random_vs_reference),
      cmocka_unit_test(sec52_compress_ratio_zero_swa_only),
      cmocka_unit_test(sec52_short_topk_rows_copy_minus_one),
      cmocka_unit_test(sec53_hand_example),
      cmocka_unit_test(sec53_decode_only),
      cmocka_unit_test(sec53_prefill_only),
      cmocka_unit_test(sec53_mixed_local_vs_global),
      cmocka_unit_test(sec53_spans_differ_from_block_size),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
