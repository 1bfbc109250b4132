/*
 * test_bad_input: SPEC §7 for the index ops, dsv4kv_compute_global_topk_indices_and_lens
 * (§5.1), dsv4kv_combine_topk_swa_indices and its _alloc variant (§5.2) and
 * dsv4kv_build_flashinfer_mixed_sparse_indices (§5.3), plus strided index inputs.
 */
#include <stdio.h>
#include <stdlib.h>

#include "bad_input.h"

/* =================================================================== 5.1 */
void bi_gt_init(gt_fix *f, const int32_t *topk, const int32_t *t2r) {
  memset(f, 0, sizeof(*f));
  const int32_t bt[4] = {3, 1, 0, 2};
  const uint8_t valid[3] = {1, 0, 1};
  int64_t s2[2] = {3, 4}, s1[1] = {3}, sb[2] = {2, 2};
  bi_tt_make(&f->topk, dt_i32(), 4, 2, s2, topk, 0);
  bi_tt_make(&f->t2r, dt_i32(), 4, 1, s1, t2r, 0);
  bi_tt_make(&f->bt, dt_i32(), 4, 2, sb, bt, 0);
  bi_tt_make(&f->valid, dt_bool(), 1, 1, s1, valid, 0);
  bi_tt_make(&f->g, dt_i32(), 4, 2, s2, NULL, 0x5A);
  bi_tt_make(&f->l, dt_i32(), 4, 1, s1, NULL, 0x5A);
  f->p[0] = &f->topk.v.t; f->p[1] = &f->t2r.v.t; f->p[2] = &f->bt.v.t;
  f->p[3] = &f->valid.v.t; f->p[4] = &f->g.v.t; f->p[5] = &f->l.v.t;
  f->bs = 4;
  f->sk = -99;
  f->opt.skipped = &f->sk;
}
dsv4kv_status bi_gt_call(gt_fix *f) {
  return dsv4kv_compute_global_topk_indices_and_lens(f->p[0], f->p[1], f->p[2], f->bs, f->p[3], f->p[4], f->p[5], &f->opt);
}
void bi_gt_free(gt_fix *f) {
  bi_tt_free(&f->topk); bi_tt_free(&f->t2r); bi_tt_free(&f->bt); bi_tt_free(&f->valid); bi_tt_free(&f->g); bi_tt_free(&f->l);
}
static int all_bytes(const void *p, size_t n, uint8_t v) {
  const uint8_t *b = (const uint8_t *)p;
  for (size_t i = 0; i < n; i++)
    if (b[i] != v) return 0;
  return 1;
}

void sec7_global_topk_argument_errors(void **state) {
  (void)state;
  BEGIN_CASES();
  const int32_t topk[12] = {0, 5, -1, 7, 1, 2, 3, 4, -1, -1, 6, 0};
  const int32_t t2r[3] = {0, 1, 1};
  {
    gt_fix f;
    bi_gt_init(&f, topk, t2r);
    bi_check_call(bi_gt_call(&f), DSV4KV_OK, NULL, "global_topk baseline");
    bi_gt_free(&f);
  }
  static const char *names[6] = {"topk_indices", "token_to_req_indices", "block_table",
                                 "is_valid_token", "global", "lens"};
  for (int ci = 0;; ci++) {
    gt_fix f;
    bi_gt_init(&f, topk, t2r);
    dsv4kv_status want;
    const char *name = NULL, *what;
    char buf[96];
    if (ci < 6) {
      snprintf(buf, sizeof(buf), "%s NULL", names[ci]);
      what = buf;
      f.p[ci] = NULL;
      want = DSV4KV_ERR_NULL;
      name = ci < 4 ? names[ci] : NULL;
    } else {
      switch (ci) {
        case 6: what = "topk_indices i64"; f.topk.v.t.dtype = dt_i64(); want = DSV4KV_ERR_DTYPE; name = "topk_indices"; break;
        case 7: what = "token_to_req_indices i64"; f.t2r.v.t.dtype = dt_i64(); want = DSV4KV_ERR_DTYPE; name = "token_to_req_indices"; break;
        case 8: what = "block_table f32"; f.bt.v.t.dtype = dt_f32(); want = DSV4KV_ERR_DTYPE; name = "block_table"; break;
        case 9: what = "is_valid_token i32"; f.valid.v.t.dtype = dt_i32(); want = DSV4KV_ERR_DTYPE; name = "is_valid_token"; break;
        case 10: what = "global out i64"; f.g.v.t.dtype = dt_i64(); want = DSV4KV_ERR_DTYPE; break;
        case 11: what = "lens out u8"; f.l.v.t.dtype = dt_u8(); want = DSV4KV_ERR_DTYPE; break;
        case 12: what = "topk_indices rank 1"; f.topk.v.t.ndim = 1; f.topk.v.shape[0] = 12; want = DSV4KV_ERR_RANK; name = "topk_indices"; break;
        case 13: what = "block_table rank 1"; f.bt.v.t.ndim = 1; f.bt.v.shape[0] = 4; want = DSV4KV_ERR_RANK; name = "block_table"; break;
        case 14: what = "token_to_req rank 2"; f.t2r.v.t.ndim = 2; f.t2r.v.shape[1] = 1; want = DSV4KV_ERR_RANK; name = "token_to_req_indices"; break;
        case 15: what = "global out rank 1"; f.g.v.t.ndim = 1; f.g.v.shape[0] = 12; want = DSV4KV_ERR_RANK; break;
        case 16: what = "global out [3, 3]"; f.g.v.shape[1] = 3; want = DSV4KV_ERR_SHAPE; break;
        case 17: what = "global out [2, 4]"; f.g.v.shape[0] = 2; want = DSV4KV_ERR_SHAPE; break;
        case 18: what = "lens length 2"; f.l.v.shape[0] = 2; want = DSV4KV_ERR_SHAPE; name = "lens"; break;
        case 19: what = "token_to_req length 2"; f.t2r.v.shape[0] = 2; want = DSV4KV_ERR_SHAPE; name = "token_to_req_indices"; break;
        case 20: what = "is_valid_token length 2"; f.valid.v.shape[0] = 2; want = DSV4KV_ERR_SHAPE; name = "is_valid_token"; break;
        case 21: what = "block_size 0"; f.bs = 0; want = DSV4KV_ERR_VALUE; name = "block_size"; break;
        case 22: what = "block_size -1"; f.bs = -1; want = DSV4KV_ERR_VALUE; name = "block_size"; break;
        case 23: what = "all CUDA"; bi_set_cuda(&f.topk.v.t); bi_set_cuda(&f.t2r.v.t); bi_set_cuda(&f.bt.v.t);
          bi_set_cuda(&f.valid.v.t); bi_set_cuda(&f.g.v.t); bi_set_cuda(&f.l.v.t); want = bi_want_cuda_host(); break;
        case 24: what = "global out on CUDA"; bi_set_cuda(&f.g.v.t); want = DSV4KV_ERR_DEVICE; break;
        default: bi_gt_free(&f); END_CASES(); return;
      }
    }
    bi_check_call(bi_gt_call(&f), want, name, what);
    if (!all_bytes(f.g.d, 48, 0x5A) || !all_bytes(f.l.d, 12, 0x5A)) soft_fail("%s: outputs written on an argument error", what);
    soft_true(fb_guards_ok(&f.g.fb) && fb_guards_ok(&f.l.fb), "guard bytes overwritten");
    bi_gt_free(&f);
  }
  END_CASES();
}

void sec7_global_topk_bad_index_values(void **state) {
  (void)state;
  BEGIN_CASES();
  /* bs 4, block table rows have 2 pages -> local x in [0, 8) */
  {
    const int32_t topk[12] = {0, 8, -1, 7, 1, 2, 3, 100, -1, -1, 6, 0};
    const int32_t t2r[3] = {0, 1, 1};
    gt_fix f;
    bi_gt_init(&f, topk, t2r);
    bi_check_call(bi_gt_call(&f), DSV4KV_WARN_SKIPPED, NULL, "top-k entry past its block-table row");
    /* row 1 is padding (is_valid_token false): its 100 is written -1, not counted */
    soft_true(f.sk == (1), "skipped %lld, want %lld", (long long)f.sk, (long long)(1));
    /* lens count the slots written: row 0 lost its 8 (SPEC §7) */
    const int32_t want_lens[3] = {2, 0, 2};
    for (int i = 0; i < 3; i++)
      if (((int32_t *)f.l.d)[i] != want_lens[i]) soft_fail("lens[%d] got %d want %d", i, ((int32_t *)f.l.d)[i], want_lens[i]);
    const int32_t want[12] = {12, -1, -1, 7, 1, 2, 3, -1, -1, -1, 10, 0};
    /* row 0 req 0 (bt 3,1): 0->12, 8 skipped, 7->1*4+3=7
     * row 1 req 1 (bt 0,2): 1->1, 2->2, 3->3, 100 skipped
     * row 2 req 1: 6 -> 2*4+2 = 10, 0 -> 0 */
    for (int i = 0; i < 12; i++)
      if (((int32_t *)f.g.d)[i] != want[i]) soft_fail("global[%d] got %d want %d", i, ((int32_t *)f.g.d)[i], want[i]);
    soft_true(fb_guards_ok(&f.g.fb) && fb_guards_ok(&f.l.fb), "guard bytes overwritten");
    bi_gt_free(&f);
  }
  {
    const int32_t topk[12] = {0, 5, -1, 7, 1, 2, 3, 4, -1, -1, 6, 0};
    const int32_t t2r[3] = {0, 2, -1}; /* R = 2 */
    gt_fix f;
    bi_gt_init(&f, topk, t2r);
    bi_check_call(bi_gt_call(&f), DSV4KV_WARN_SKIPPED, "token_to_req_indices", "request id out of range");
    /* one per VALID token whose request id is out of range: row 1 is padding */
    soft_true(f.sk == (1), "skipped %lld, want %lld", (long long)f.sk, (long long)(1));
    const int32_t want[12] = {12, 5, -1, 7, -1, -1, -1, -1, -1, -1, -1, -1};
    for (int i = 0; i < 12; i++)
      if (((int32_t *)f.g.d)[i] != want[i]) soft_fail("global[%d] got %d want %d", i, ((int32_t *)f.g.d)[i], want[i]);
    assert_int_equal(((int32_t *)f.l.d)[0], 3);
    bi_gt_free(&f);
  }
  END_CASES();
}

/* =================================================================== 5.2 */
typedef struct {
  tt topk, qsl, seq, gl, comb, lens;
  const DLTensor *p[6];
  int32_t window, cr, topk_n, M, N;
  int64_t sk;
  dsv4kv_options opt;
} cb_fix;

static void cb_init(cb_fix *f, const int32_t *qsl) {
  memset(f, 0, sizeof(*f));
  const int32_t topk[12] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11};
  const int32_t seq[2] = {10, 5}, gl[2] = {10, 5};
  int64_t st[2] = {4, 3}, sq[1] = {3}, s2[1] = {2}, sc[2] = {4, 128}, sl[1] = {4};
  bi_tt_make(&f->topk, dt_i32(), 4, 2, st, topk, 0);
  bi_tt_make(&f->qsl, dt_i32(), 4, 1, sq, qsl, 0);
  bi_tt_make(&f->seq, dt_i32(), 4, 1, s2, seq, 0);
  bi_tt_make(&f->gl, dt_i32(), 4, 1, s2, gl, 0);
  bi_tt_make(&f->comb, dt_i32(), 4, 2, sc, NULL, 0x5A);
  bi_tt_make(&f->lens, dt_i32(), 4, 1, sl, NULL, 0x5A);
  f->p[0] = &f->topk.v.t; f->p[1] = &f->qsl.v.t; f->p[2] = &f->seq.v.t;
  f->p[3] = &f->gl.v.t; f->p[4] = &f->comb.v.t; f->p[5] = &f->lens.v.t;
  f->window = 2; f->cr = 1; f->topk_n = 2; f->M = 100; f->N = 0;
  f->sk = -99;
  f->opt.skipped = &f->sk;
}
static dsv4kv_status cb_call(cb_fix *f) {
  return dsv4kv_combine_topk_swa_indices(f->p[0], f->p[1], f->p[2], f->p[3], f->window, f->cr, f->topk_n,
                                         f->M, f->N, f->p[4], f->p[5], &f->opt);
}
static void cb_free(cb_fix *f) {
  bi_tt_free(&f->topk); bi_tt_free(&f->qsl); bi_tt_free(&f->seq); bi_tt_free(&f->gl); bi_tt_free(&f->comb); bi_tt_free(&f->lens);
}

void sec7_combine_argument_errors(void **state) {
  (void)state;
  BEGIN_CASES();
  const int32_t qsl[3] = {0, 2, 4};
  {
    cb_fix f;
    cb_init(&f, qsl);
    bi_check_call(cb_call(&f), DSV4KV_OK, NULL, "combine baseline");
    cb_free(&f);
  }
  static const char *names[6] = {"topk_indices", "query_start_loc", "seq_lens", "gather_lens", "combined", "lens"};
  for (int ci = 0;; ci++) {
    cb_fix f;
    cb_init(&f, qsl);
    dsv4kv_status want;
    const char *name = NULL, *what;
    char buf[96];
    if (ci < 6) {
      snprintf(buf, sizeof(buf), "%s NULL", names[ci]);
      what = buf;
      f.p[ci] = NULL;
      want = DSV4KV_ERR_NULL;
      name = ci < 4 ? names[ci] : NULL;
    } else {
      switch (ci) {
        case 6: what = "topk_indices i64"; f.topk.v.t.dtype = dt_i64(); want = DSV4KV_ERR_DTYPE; name = "topk_indices"; break;
        case 7: what = "query_start_loc i64"; f.qsl.v.t.dtype = dt_i64(); want = DSV4KV_ERR_DTYPE; name = "query_start_loc"; break;
        case 8: what = "seq_lens i16"; f.seq.v.t.dtype.bits = 16; want = DSV4KV_ERR_DTYPE; name = "seq_lens"; break;
        case 9: what = "gather_lens f32"; f.gl.v.t.dtype = dt_f32(); want = DSV4KV_ERR_DTYPE; name = "gather_lens"; break;
        case 10: what = "combined i64"; f.comb.v.t.dtype = dt_i64(); want = DSV4KV_ERR_DTYPE; break;
        case 11: what = "topk_indices rank 1"; f.topk.v.t.ndim = 1; f.topk.v.shape[0] = 12; want = DSV4KV_ERR_RANK; name = "topk_indices"; break;
        case 12: what = "query_start_loc rank 2"; f.qsl.v.t.ndim = 2; f.qsl.v.shape[1] = 1; want = DSV4KV_ERR_RANK; name = "query_start_loc"; break;
        case 13: what = "combined rank 1"; f.comb.v.t.ndim = 1; f.comb.v.shape[0] = 512; want = DSV4KV_ERR_RANK; break;
        case 14: what = "query_start_loc length != R + 1"; f.qsl.v.shape[0] = 2; want = DSV4KV_ERR_SHAPE; name = "query_start_loc|seq_lens"; break;
        case 15: what = "gather_lens length != R"; f.gl.v.shape[0] = 1; want = DSV4KV_ERR_SHAPE; name = "gather_lens"; break;
        case 16: what = "combined width < topk + window"; f.comb.v.shape[1] = 3; want = DSV4KV_ERR_SHAPE; break;
        case 17: what = "combined rows != T"; f.comb.v.shape[0] = 3; want = DSV4KV_ERR_SHAPE; break;
        case 18: what = "lens length != T"; f.lens.v.shape[0] = 3; want = DSV4KV_ERR_SHAPE; name = "lens"; break;
        case 19: what = "window_size 0"; f.window = 0; want = DSV4KV_ERR_VALUE; name = "window_size"; break;
        case 20: what = "window_size -3"; f.window = -3; want = DSV4KV_ERR_VALUE; name = "window_size"; break;
        case 21: what = "compress_ratio -1"; f.cr = -1; want = DSV4KV_ERR_VALUE; name = "compress_ratio"; break;
        case 22: what = "topk > W"; f.topk_n = 4; want = DSV4KV_ERR_VALUE; name = "topk"; break;
        case 23: what = "topk -1"; f.topk_n = -1; want = DSV4KV_ERR_VALUE; name = "topk"; break;
        case 24: what = "all CUDA"; for (int i = 0; i < 6; i++) bi_set_cuda((DLTensor *)f.p[i]);
          want = bi_want_cuda_host(); break;
        case 25: what = "seq_lens on CUDA"; bi_set_cuda(&f.seq.v.t); want = DSV4KV_ERR_DEVICE; break;
        default: cb_free(&f); END_CASES(); return;
      }
    }
    bi_check_call(cb_call(&f), want, name, what);
    if (!all_bytes(f.comb.d, 4 * 128 * 4, 0x5A) || !all_bytes(f.lens.d, 16, 0x5A))
      soft_fail("%s: outputs written on an argument error", what);
    soft_true(fb_guards_ok(&f.comb.fb) && fb_guards_ok(&f.lens.fb), "guard bytes overwritten");
    cb_free(&f);
  }
  END_CASES();
}

void sec7_combine_bad_index_values(void **state) {
  (void)state;
  BEGIN_CASES();
  /* query_start_loc [0, 2, 6] with T = 4: tokens 4 and 5 are outside [0, T) */
  const int32_t qsl[3] = {0, 2, 6};
  cb_fix f;
  cb_init(&f, qsl);
  bi_check_call(cb_call(&f), DSV4KV_WARN_SKIPPED, "query_start_loc", "token index past T");
  soft_true(f.sk == (2), "skipped %lld, want %lld", (long long)f.sk, (long long)(2));
  int32_t *wc = (int32_t *)malloc(4 * 128 * 4), *wl = (int32_t *)malloc(16);
  fill_i32(wc, 4 * 128, IPOISON);
  fill_i32(wl, 4, IPOISON);
  const int32_t topk[12] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11};
  const int32_t seq[2] = {10, 5}, gl[2] = {10, 5};
  int64_t wsk = 0;
  ref_combine(topk, 4, 3, qsl, 2, seq, gl, 2, 1, 2, 100, 0, wc, 128, wl, &wsk);
  assert_int_equal(wsk, 2);
  assert_memory_equal(f.comb.d, wc, 4 * 128 * 4);
  assert_memory_equal(f.lens.d, wl, 16);
  soft_true(fb_guards_ok(&f.comb.fb) && fb_guards_ok(&f.lens.fb), "guard bytes overwritten");
  free(wc);
  free(wl);
  cb_free(&f);
  END_CASES();
}

void sec7_combine_alloc_errors(void **state) {
  (void)state;
  BEGIN_CASES();
  const int32_t qsl[3] = {0, 2, 4};
  cb_fix f;
  cb_init(&f, qsl);
  DLManagedTensor *mc = (DLManagedTensor *)(uintptr_t)0x1, *ml = (DLManagedTensor *)(uintptr_t)0x1;
  dsv4kv_status st = dsv4kv_combine_topk_swa_indices_alloc(f.p[0], f.p[1], f.p[2], f.p[3], 0, 1, 2, 100, 0,
                                                           &mc, &ml, &f.opt);
  bi_check_call(st, DSV4KV_ERR_VALUE, "window_size", "alloc: window_size 0");
  assert_null(mc);
  assert_null(ml);
  mc = ml = NULL;
  st = dsv4kv_combine_topk_swa_indices_alloc(NULL, f.p[1], f.p[2], f.p[3], 2, 1, 2, 100, 0, &mc, &ml, &f.opt);
  bi_check_call(st, DSV4KV_ERR_NULL, "topk_indices", "alloc: topk_indices NULL");
  assert_null(mc);
  assert_null(ml);
  st = dsv4kv_combine_topk_swa_indices_alloc(f.p[0], f.p[1], f.p[2], f.p[3], 2, 1, 2, 100, 0, NULL, &ml, &f.opt);
  bi_check_call(st, DSV4KV_ERR_NULL, NULL, "alloc: combined_out NULL");
  st = dsv4kv_combine_topk_swa_indices_alloc(f.p[0], f.p[1], f.p[2], f.p[3], 2, 1, 2, 100, 0, &mc, NULL, &f.opt);
  bi_check_call(st, DSV4KV_ERR_NULL, NULL, "alloc: lens_out NULL");
  /* the happy path, then managed_free(NULL) is harmless */
  st = dsv4kv_combine_topk_swa_indices_alloc(f.p[0], f.p[1], f.p[2], f.p[3], 2, 1, 2, 100, 0, &mc, &ml, &f.opt);
  bi_check_call(st, DSV4KV_OK, NULL, "alloc: valid");
  assert_non_null(mc);
  assert_non_null(ml);
  assert_string_equal(dsv4kv_last_error(), "");
  dsv4kv_managed_free(mc);
  dsv4kv_managed_free(ml);
  dsv4kv_managed_free(NULL);
  DLManagedTensor no_deleter;
  memset(&no_deleter, 0, sizeof(no_deleter));
  dsv4kv_managed_free(&no_deleter);
  cb_free(&f);
  END_CASES();
}

/* =================================================================== 5.3 */
typedef struct {
  tt dswa, dcomp, dvalid, ptopk, qsl, seq, replay, t2r, sbt, cbt, out, lens;
  dsv4kv_flashinfer_args a;
  const dsv4kv_flashinfer_args *pa;
  const DLTensor *po, *pl;
  int64_t sk;
  dsv4kv_options opt;
} fi_fix;

/* The hand example of test_index_ops (D 1, P 2, S 4, K4 4, local decode). */
static void fi_init(fi_fix *f, const int32_t *ptopk, const int32_t *t2r, const int32_t *seq, const int32_t *dcomp) {
  memset(f, 0, sizeof(*f));
  const int32_t dswa[4] = {9, -1, 4, 13};
  const uint8_t dvalid[1] = {1};
  const int32_t qsl[3] = {0, 1, 3}, replay[2] = {0, 2};
  const int32_t sbt[4] = {3, 1, 2, 0};
  const int32_t cbt[6] = {5, 6, 7, 8, 9, 4};
  int64_t s14[2] = {1, 4}, s12[2] = {1, 2}, s1[1] = {1}, s23[2] = {2, 3}, s3[1] = {3}, s2[1] = {2},
          s22[2] = {2, 2}, s38[2] = {3, 8};
  bi_tt_make(&f->dswa, dt_i32(), 4, 2, s14, dswa, 0);
  bi_tt_make(&f->dcomp, dt_i32(), 4, 2, s12, dcomp, 0);
  bi_tt_make(&f->dvalid, dt_bool(), 1, 1, s1, dvalid, 0);
  bi_tt_make(&f->ptopk, dt_i32(), 4, 2, s23, ptopk, 0);
  bi_tt_make(&f->qsl, dt_i32(), 4, 1, s3, qsl, 0);
  bi_tt_make(&f->seq, dt_i32(), 4, 1, s2, seq, 0);
  bi_tt_make(&f->replay, dt_i32(), 4, 1, s2, replay, 0);
  bi_tt_make(&f->t2r, dt_i32(), 4, 1, s3, t2r, 0);
  bi_tt_make(&f->sbt, dt_i32(), 4, 2, s22, sbt, 0);
  bi_tt_make(&f->cbt, dt_i32(), 4, 2, s23, cbt, 0);
  bi_tt_make(&f->out, dt_i32(), 4, 2, s38, NULL, 0x5A);
  bi_tt_make(&f->lens, dt_i32(), 4, 1, s3, NULL, 0x5A);
  dsv4kv_flashinfer_args *a = &f->a;
  a->decode_swa_indices = &f->dswa.v.t;
  a->decode_compressed_indices = &f->dcomp.v.t;
  a->decode_is_valid_token = &f->dvalid.v.t;
  a->decode_compressed_indices_are_local = 1;
  a->prefill_topk_indices = &f->ptopk.v.t;
  a->query_start_loc = &f->qsl.v.t;
  a->seq_lens = &f->seq.v.t;
  a->replay_start = &f->replay.v.t;
  a->token_to_req_indices = &f->t2r.v.t;
  a->swa_block_table = &f->sbt.v.t;
  a->compressed_block_table = &f->cbt.v.t;
  a->swa_block_size = 4; a->swa_block_span = 6;
  a->compressed_block_size = 2; a->compressed_block_span = 3;
  a->window_size = 3; a->compress_ratio = 2; a->topk = 3;
  f->pa = a;
  f->po = &f->out.v.t;
  f->pl = &f->lens.v.t;
  f->sk = -99;
  f->opt.skipped = &f->sk;
}
static dsv4kv_status fi_call(fi_fix *f) {
  return dsv4kv_build_flashinfer_mixed_sparse_indices(f->pa, f->po, f->pl, &f->opt);
}
static void fi_free(fi_fix *f) {
  tt *all[] = {&f->dswa, &f->dcomp, &f->dvalid, &f->ptopk, &f->qsl, &f->seq, &f->replay, &f->t2r, &f->sbt,
               &f->cbt, &f->out, &f->lens};
  for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++) bi_tt_free(all[i]);
}

static const int32_t kPtopk[6] = {1, 4, 0, -1, 5, 2};
static const int32_t kT2r[3] = {0, 1, 1};
static const int32_t kSeq[2] = {5, 6};
static const int32_t kDcomp[2] = {3, -1};

void sec7_flashinfer_argument_errors(void **state) {
  (void)state;
  BEGIN_CASES();
  {
    fi_fix f;
    fi_init(&f, kPtopk, kT2r, kSeq, kDcomp);
    bi_check_call(fi_call(&f), DSV4KV_OK, NULL, "flashinfer baseline");
    fi_free(&f);
  }
  for (int ci = 0;; ci++) {
    fi_fix f;
    fi_init(&f, kPtopk, kT2r, kSeq, kDcomp);
    dsv4kv_status want;
    const char *name = NULL, *what;
    switch (ci) {
      case 0: what = "args NULL"; f.pa = NULL; want = DSV4KV_ERR_NULL; break;
      case 1: what = "sparse_indices NULL"; f.po = NULL; want = DSV4KV_ERR_NULL; name = "sparse_indices"; break;
      case 2: what = "sparse_lens NULL"; f.pl = NULL; want = DSV4KV_ERR_NULL; name = "sparse_lens"; break;
      case 3: what = "decode_swa_indices NULL"; f.a.decode_swa_indices = NULL; want = DSV4KV_ERR_NULL; name = "decode_swa_indices"; break;
      case 4: what = "prefill_topk_indices NULL"; f.a.prefill_topk_indices = NULL; want = DSV4KV_ERR_NULL; name = "prefill_topk_indices"; break;
      case 5: what = "query_start_loc NULL"; f.a.query_start_loc = NULL; want = DSV4KV_ERR_NULL; name = "query_start_loc"; break;
      case 6: what = "seq_lens NULL"; f.a.seq_lens = NULL; want = DSV4KV_ERR_NULL; name = "seq_lens"; break;
      case 7: what = "replay_start NULL"; f.a.replay_start = NULL; want = DSV4KV_ERR_NULL; name = "replay_start"; break;
      case 8: what = "token_to_req_indices NULL"; f.a.token_to_req_indices = NULL; want = DSV4KV_ERR_NULL; name = "token_to_req_indices"; break;
      case 9: what = "swa_block_table NULL"; f.a.swa_block_table = NULL; want = DSV4KV_ERR_NULL; name = "swa_block_table"; break;
      case 10: what = "decode_swa_indices i64"; f.dswa.v.t.dtype = dt_i64(); want = DSV4KV_ERR_DTYPE; name = "decode_swa_indices"; break;
      case 11: what = "sparse_indices i64"; f.out.v.t.dtype = dt_i64(); want = DSV4KV_ERR_DTYPE; name = "sparse_indices"; break;
      case 12: what = "decode_is_valid_token f32"; f.dvalid.v.t.dtype = dt_f32(); want = DSV4KV_ERR_DTYPE; name = "decode_is_valid_token"; break;
      case 13: what = "decode_swa_indices rank 1"; f.dswa.v.t.ndim = 1; want = DSV4KV_ERR_RANK; name = "decode_swa_indices"; break;
      case 14: what = "swa_block_table rank 1"; f.sbt.v.t.ndim = 1; want = DSV4KV_ERR_RANK; name = "swa_block_table"; break;
      case 15: what = "sparse_indices width != S + K4"; f.out.v.shape[1] = 7; want = DSV4KV_ERR_SHAPE; name = "sparse_indices"; break;
      case 16: what = "sparse_indices rows != D + P"; f.out.v.shape[0] = 2; want = DSV4KV_ERR_SHAPE; name = "sparse_indices"; break;
      case 17: what = "sparse_lens length != D + P"; f.lens.v.shape[0] = 2; want = DSV4KV_ERR_SHAPE; name = "sparse_lens"; break;
      case 18: what = "token_to_req shorter than D + P"; f.t2r.v.shape[0] = 2; want = DSV4KV_ERR_SHAPE; name = "token_to_req_indices"; break;
      case 19: what = "decode_compressed rows != D"; f.dcomp.v.shape[0] = 0; want = DSV4KV_ERR_SHAPE; name = "decode_compressed_indices"; break;
      case 20: what = "window_size > S"; f.a.window_size = 5; want = DSV4KV_ERR_VALUE; name = "window_size"; break;
      case 21: what = "window_size 0"; f.a.window_size = 0; want = DSV4KV_ERR_VALUE; name = "window_size"; break;
      case 22: what = "swa_block_size 0"; f.a.swa_block_size = 0; want = DSV4KV_ERR_VALUE; name = "swa_block_size"; break;
      case 23: what = "compressed_block_size -2"; f.a.compressed_block_size = -2; want = DSV4KV_ERR_VALUE; name = "compressed_block_size"; break;
      case 24: what = "compress_ratio -1"; f.a.compress_ratio = -1; want = DSV4KV_ERR_VALUE; name = "compress_ratio"; break;
      case 25: what = "topk -1"; f.a.topk = -1; want = DSV4KV_ERR_VALUE; name = "topk"; break;
      case 26: what = "all CUDA"; {
          tt *all[] = {&f.dswa, &f.dcomp, &f.dvalid, &f.ptopk, &f.qsl, &f.seq, &f.replay, &f.t2r, &f.sbt, &f.cbt, &f.out, &f.lens};
          for (size_t i = 0; i < 12; i++) bi_set_cuda(&all[i]->v.t);
        }
        want = bi_want_cuda_host(); break;
      case 27: what = "replay_start on CUDA"; bi_set_cuda(&f.replay.v.t); want = DSV4KV_ERR_DEVICE; break;
      case 28: what = "swa_block_span < 0"; f.a.swa_block_span = -1; want = DSV4KV_ERR_VALUE; name = "swa_block_span"; break;
      default: fi_free(&f); END_CASES(); return;
    }
    bi_check_call(fi_call(&f), want, name, what);
    if (!all_bytes(f.out.d, 24 * 4, 0x5A) || !all_bytes(f.lens.d, 12, 0x5A))
      soft_fail("%s: outputs written on an argument error", what);
    soft_true(fb_guards_ok(&f.out.fb) && fb_guards_ok(&f.lens.fb), "guard bytes overwritten");
    fi_free(&f);
  }
  END_CASES();
}

static void fi_expect(fi_fix *f, const int32_t *want, const int32_t *want_l, const char *what) {
  for (int i = 0; i < 24; i++)
    if (want[i] != IPOISON && ((int32_t *)f->out.d)[i] != want[i])
      soft_fail("%s: sparse_indices[%d][%d] got %d want %d", what, i / 8, i % 8, ((int32_t *)f->out.d)[i], want[i]);
  for (int i = 0; i < 3; i++)
    if (want_l[i] != IPOISON && ((int32_t *)f->lens.d)[i] != want_l[i])
      soft_fail("%s: sparse_lens[%d] got %d want %d", what, i, ((int32_t *)f->lens.d)[i], want_l[i]);
  soft_true(fb_guards_ok(&f->out.fb) && fb_guards_ok(&f->lens.fb), "guard bytes overwritten");
}

void sec7_flashinfer_bad_index_values(void **state) {
  (void)state;
  BEGIN_CASES();
  const int32_t P = IPOISON; /* "don't check" marker below */
  {
    /* prefill top-k entry past its block table: x = 6 -> page 3 of a 3-page row;
     * x = 1000 likewise.  Row 1: [1, 6(bad), 0]: topk_len 2 -> col 5 = -1.
     * Row 2: [-1, 1000(bad), 2]: topk_len 3. */
    const int32_t pt[6] = {1, 6, 0, -1, 1000, 2};
    fi_fix f;
    fi_init(&f, pt, kT2r, kSeq, kDcomp);
    bi_check_call(fi_call(&f), DSV4KV_WARN_SKIPPED, NULL, "prefill top-k entry past its block table");
    soft_true(f.sk == (2), "skipped %lld, want %lld", (long long)f.sk, (long long)(2));
    const int32_t want[24] = {13, -1, 6, 19, 19, -1, -1, -1,
                              14, 15, 0, -1, 25, -1, -1, -1,
                              15, 0, 1, -1, -1, -1, 27, -1};
    const int32_t wl[3] = {5, 6, 7};
    fi_expect(&f, want, wl, "prefill top-k past table");
    fi_free(&f);
  }
  {
    /* local decode index past its compressed block table row: v = 6 -> page 3 */
    const int32_t dc[2] = {6, 1};
    fi_fix f;
    fi_init(&f, kPtopk, kT2r, kSeq, dc);
    bi_check_call(fi_call(&f), DSV4KV_WARN_SKIPPED, NULL, "local decode index past its block table");
    soft_true(f.sk == (1), "skipped %lld, want %lld", (long long)f.sk, (long long)(1));
    /* v = 1 -> cbt[0][0] = 5 -> 11 -> remap(11, 2, 3) = 5*3 + 1 = 16 */
    const int32_t want[24] = {13, -1, 6, 19, -1, 16, -1, -1,
                              14, 15, 0, -1, 25, 12, -1, -1,
                              15, 0, 1, -1, -1, 13, 27, -1};
    const int32_t wl[3] = {P, 6, 7};
    fi_expect(&f, want, wl, "decode local past table");
    fi_free(&f);
  }
  {
    /* SWA position past the swa block table row: req 1 seq 9 -> prefill
     * positions 7, 8 with 2 pages of 4 = 8 positions; window 3.
     * t1: pos 7, swa 5..7 -> all in page 1 (sbt[1][1] = 0): slots 1,2,3 -> remap 1,2,3
     * t2: pos 8, swa 6..8 -> 6, 7 ok (2, 3), 8 past the row (skipped) */
    const int32_t seq[2] = {5, 9};
    const int32_t pt[6] = {0, 0, 0, 0, 0, 0};
    fi_fix f;
    fi_init(&f, pt, kT2r, seq, kDcomp);
    bi_check_call(fi_call(&f), DSV4KV_WARN_SKIPPED, NULL, "SWA position past the swa block table row");
    soft_true(f.sk == (1), "skipped %lld, want %lld", (long long)f.sk, (long long)(1));
    /* top-k: topk_len = min((pos+1)/2, 3) = 3 for pos 7, 8; x = 0 -> cbt[1][0] = 8 -> 16 -> remap 24 */
    const int32_t want[24] = {13, -1, 6, 19, 19, -1, -1, -1,
                              1, 2, 3, -1, 24, 24, 24, -1,
                              2, 3, -1, -1, 24, 24, 24, -1};
    const int32_t wl[3] = {5, 7, 7};
    fi_expect(&f, want, wl, "SWA past table");
    fi_free(&f);
  }
  {
    /* request id out of range for prefill token 2 */
    const int32_t t2r[3] = {0, 1, 7};
    fi_fix f;
    fi_init(&f, kPtopk, t2r, kSeq, kDcomp);
    bi_check_call(fi_call(&f), DSV4KV_WARN_SKIPPED, "token_to_req_indices", "request id out of range");
    assert_true(f.sk >= 1);
    const int32_t want[24] = {13, -1, 6, 19, 19, -1, -1, -1,
                              14, 15, 0, -1, 25, 12, -1, -1,
                              -1, -1, -1, -1, -1, -1, -1, -1};
    const int32_t wl[3] = {5, 6, P};
    fi_expect(&f, want, wl, "request id out of range");
    /* every element written, lens of the bad row included */
    assert_true(((int32_t *)f.lens.d)[2] != IPOISON);
    fi_free(&f);
  }
  END_CASES();
}


/* =================================================================== strides */
/* Index-op inputs with a non-unit last-dim stride: the header documents no
 * stride rule for them, so either ERR_STRIDE (nothing written) or OK with
 * the stride honoured is accepted. */
void sec7_index_ops_strided_input_rejected_or_honoured(void **state) {
  (void)state;
  BEGIN_CASES();
  const int32_t topk[12] = {0, 5, -1, 7, 1, 2, 3, 4, -1, -1, 6, 0};
  const int32_t t2r[3] = {0, 1, 1};
  gt_fix f;
  bi_gt_init(&f, topk, t2r);
  /* view [3, 2] of every other column */
  f.topk.v.shape[1] = 2;
  f.topk.v.strides[0] = 4;
  f.topk.v.strides[1] = 2;
  f.topk.v.t.strides = f.topk.v.strides;
  f.g.v.shape[1] = 2;
  dsv4kv_status st = bi_gt_call(&f);
  if (st == DSV4KV_ERR_STRIDE) {
    soft_true(all_bytes(f.g.d, 48, 0x5A), "strided topk: outputs written on ERR_STRIDE");
  } else if (st == DSV4KV_OK) {
    int32_t sub[6], wg[6], wl[3];
    for (int t = 0; t < 3; t++)
      for (int j = 0; j < 2; j++) sub[t * 2 + j] = topk[t * 4 + 2 * j];
    const int32_t bt[4] = {3, 1, 0, 2};
    const uint8_t valid[3] = {1, 0, 1};
    int64_t wsk = 0;
    ref_global_topk(sub, 3, 2, t2r, bt, 2, 2, 4, valid, wg, wl, &wsk);
    soft_true(memcmp(f.g.d, wg, sizeof(wg)) == 0, "strided topk: stride accepted but not honoured");
    soft_true(memcmp(f.l.d, wl, sizeof(wl)) == 0, "strided topk: lens wrong");
  } else {
    soft_fail("strided topk: status %d (%s)", (int)st, dsv4kv_status_string(st));
  }
  bi_gt_free(&f);
  END_CASES();
}
