/*
 * test_bad_input: SPEC §7 for dsv4kv_indexer_k_norm_rope_store (§6): argument
 * errors and out-of-range slot / position values.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "bad_input.h"

/* =================================================================== §6 indexer */
typedef struct {
  tmat16 k;
  tt pos, cs, w, slot;
  tcache c;
  const DLTensor *p[6];
  const dsv4kv_cache_desc *pd;
  float eps;
  int32_t cr;
  uint8_t *init;
  int64_t sk;
  dsv4kv_options opt;
} ix_fix;

static void ix_init(ix_fix *f, const int64_t *pos, const int64_t *slot, dsv4kv_record rec, int32_t bs) {
  memset(f, 0, sizeof(*f));
  rng_t r;
  rng_seed(&r, 73);
  tmat16_make(&f->k, 6, 128, 128);
  for (int t = 0; t < 6; t++)
    for (int i = 0; i < 128; i++) tmat16_row(&f->k, t)[i] = bf16_of(rng_normal(&r));
  int64_t s3[1] = {3}, scs[2] = {8, 64}, s128[1] = {128};
  bi_tt_make(&f->pos, dt_i64(), 8, 1, s3, pos, 0);
  float *cs = (float *)bi_tt_make(&f->cs, dt_f32(), 4, 2, scs, NULL, 0);
  for (int i = 0; i < 8 * 64; i++) cs[i] = (float)(rng_unit(&r) * 2 - 1);
  float *w = (float *)bi_tt_make(&f->w, dt_f32(), 4, 1, s128, NULL, 0);
  for (int i = 0; i < 128; i++) w[i] = (float)(0.5 + rng_unit(&r));
  bi_tt_make(&f->slot, dt_i64(), 8, 1, s3, slot, 0);
  tcache_make(&f->c, rec, 0, bs, 2, 0, POISON, 0);
  f->p[0] = &f->k.v.t; f->p[1] = &f->pos.v.t; f->p[2] = &f->cs.v.t;
  f->p[3] = &f->w.v.t; f->p[4] = &f->c.v.t; f->p[5] = &f->slot.v.t;
  f->pd = &f->c.desc;
  f->eps = 1e-6f;
  f->cr = 1;
  f->init = (uint8_t *)malloc(f->c.nbytes);
  memcpy(f->init, f->c.data, f->c.nbytes);
  f->sk = -99;
  f->opt.skipped = &f->sk;
}
static dsv4kv_status ix_call(ix_fix *f) {
  return dsv4kv_indexer_k_norm_rope_store(f->p[0], f->p[1], f->p[2], f->p[3], f->eps, f->p[4], f->pd, f->p[5],
                                          f->cr, &f->opt);
}
static void ix_free(ix_fix *f) {
  tmat16_free(&f->k); bi_tt_free(&f->pos); bi_tt_free(&f->cs); bi_tt_free(&f->w); bi_tt_free(&f->slot);
  tcache_free(&f->c); free(f->init);
}

static const int64_t kIxPos[3] = {0, 5, 7};
static const int64_t kIxSlot[3] = {0, 5, -1};

void sec7_indexer_argument_errors(void **state) {
  (void)state;
  BEGIN_CASES();
  static const char *names[6] = {"k_pre", "positions", "cos_sin_cache", "rms_norm_weight", "k_cache", "kv_slot_mapping"};
  {
    ix_fix f;
    ix_init(&f, kIxPos, kIxSlot, DSV4KV_RECORD_INDEXER_FP8, 16);
    bi_check_call(ix_call(&f), DSV4KV_OK, NULL, "indexer baseline");
    ix_free(&f);
  }
  for (int ci = 0;; ci++) {
    ix_fix f;
    int fp4 = (ci == 30 || ci == 31 || ci == 32);
    ix_init(&f, kIxPos, kIxSlot, fp4 ? DSV4KV_RECORD_INDEXER_MXFP4 : DSV4KV_RECORD_INDEXER_FP8, ci == 33 ? 4 : 16);
    dsv4kv_cache_desc d = f.c.desc;
    dsv4kv_status want;
    const char *name = NULL, *what;
    char buf[96];
    int alt_ok = -1; /* an acceptable alternative status (ambiguous in the header) */
    if (ci < 6) {
      snprintf(buf, sizeof(buf), "%s NULL", names[ci]);
      what = buf;
      f.p[ci] = NULL;
      want = DSV4KV_ERR_NULL;
      name = names[ci];
    } else {
      switch (ci) {
        case 6: what = "cache desc NULL"; f.pd = NULL; want = DSV4KV_ERR_NULL; name = "cache"; break;
        case 7: what = "k_pre f32"; f.k.v.t.dtype = dt_f32(); want = DSV4KV_ERR_DTYPE; name = "k_pre"; break;
        case 8: what = "positions i32"; f.pos.v.t.dtype = dt_i32(); want = DSV4KV_ERR_DTYPE; name = "positions"; break;
        case 9: what = "cos_sin_cache f16"; f.cs.v.t.dtype = dt_f16(); want = DSV4KV_ERR_DTYPE; name = "cos_sin_cache"; break;
        case 10: what = "cos_sin_cache i32"; f.cs.v.t.dtype = dt_i32(); want = DSV4KV_ERR_DTYPE; name = "cos_sin_cache"; break;
        case 11: what = "rms_norm_weight i32"; f.w.v.t.dtype = dt_i32(); want = DSV4KV_ERR_DTYPE; name = "rms_norm_weight"; break;
        case 12: what = "kv_slot_mapping i32"; f.slot.v.t.dtype = dt_i32(); want = DSV4KV_ERR_DTYPE; name = "kv_slot_mapping"; break;
        case 13: what = "k_cache i8"; f.c.v.t.dtype = dt_i8(); want = DSV4KV_ERR_DTYPE; name = "k_cache"; break;
        case 14: what = "k_pre rank 1"; f.k.v.t.ndim = 1; f.k.v.shape[0] = 768; f.k.v.strides[0] = 1; want = DSV4KV_ERR_RANK; name = "k_pre"; break;
        case 15: what = "cos_sin_cache rank 1"; f.cs.v.t.ndim = 1; want = DSV4KV_ERR_RANK; name = "cos_sin_cache"; break;
        case 16: what = "rms_norm_weight rank 2"; f.w.v.t.ndim = 2; f.w.v.shape[0] = 1; f.w.v.shape[1] = 128; want = DSV4KV_ERR_RANK; name = "rms_norm_weight"; break;
        case 17: what = "kv_slot_mapping rank 2"; f.slot.v.t.ndim = 2; f.slot.v.shape[1] = 1; want = DSV4KV_ERR_RANK; name = "kv_slot_mapping"; break;
        case 18: what = "positions rank 2"; f.pos.v.t.ndim = 2; f.pos.v.shape[1] = 1; want = DSV4KV_ERR_RANK; name = "positions"; break;
        case 19: what = "k_pre width 127"; f.k.v.shape[1] = 127; want = DSV4KV_ERR_SHAPE; name = "k_pre"; break;
        case 20: what = "cos_sin_cache width 63"; f.cs.v.shape[1] = 63; want = DSV4KV_ERR_SHAPE; name = "cos_sin_cache"; break;
        case 21: what = "rms_norm_weight length 64"; f.w.v.shape[0] = 64; want = DSV4KV_ERR_SHAPE; name = "rms_norm_weight"; break;
        case 22: what = "kv_slot_mapping longer than k_pre"; f.k.v.shape[0] = 2; want = DSV4KV_ERR_SHAPE; name = "kv_slot_mapping"; break;
        case 23: what = "positions shorter than T"; f.pos.v.shape[0] = 2; want = DSV4KV_ERR_SHAPE; name = "positions"; break;
        case 24: what = "k_pre last-dim stride 2"; f.k.v.strides[1] = 2; f.k.v.strides[0] = 256; f.k.v.shape[0] = 3;
          want = DSV4KV_ERR_STRIDE; name = "k_pre"; break;
        case 25: what = "eps -1"; f.eps = -1.0f; want = DSV4KV_ERR_VALUE; name = "eps"; break;
        case 26: what = "eps NaN"; f.eps = NAN; want = DSV4KV_ERR_VALUE; name = "eps"; break;
        case 27: what = "eps Inf"; f.eps = INFINITY; want = DSV4KV_ERR_VALUE; name = "eps"; break;
        case 28: what = "compress_ratio 0"; f.cr = 0; want = DSV4KV_ERR_VALUE; name = "compress_ratio"; break;
        case 29: what = "block_size 0"; d.block_size = 0; f.pd = &d; want = DSV4KV_ERR_VALUE; name = "block_size"; break;
        case 30: what = "TILED on MXFP4"; d.flags = DSV4KV_CACHE_TILED; f.pd = &d; want = DSV4KV_ERR_FORMAT; break;
        case 31: what = "MX_SCALE on MXFP4"; d.flags = DSV4KV_CACHE_MX_SCALE; f.pd = &d; want = DSV4KV_ERR_FORMAT; break;
        case 32: what = "FNUZ on MXFP4"; d.fp8 = DSV4KV_FP8_FNUZ; f.pd = &d; want = DSV4KV_ERR_FORMAT; break;
        case 33: what = "TILED with block_size % 16 != 0"; d.flags = DSV4KV_CACHE_TILED; f.pd = &d; want = DSV4KV_ERR_FORMAT;
          alt_ok = DSV4KV_ERR_VALUE; break;
        case 34: what = "main-cache record"; d.record = DSV4KV_RECORD_MXFP8; f.pd = &d; want = DSV4KV_ERR_FORMAT; break;
        case 35: what = "page stride mismatch"; d.page_stride = f.c.page_stride * 2; f.pd = &d; want = DSV4KV_ERR_FORMAT; break;
        case 36: what = "page stride < block_size * 132"; f.c.v.shape[1] = 16 * 132 - 4; f.c.v.strides[0] = 16 * 132 - 4; want = DSV4KV_ERR_FORMAT; break;
        case 37: what = "all CUDA"; bi_set_cuda(&f.k.v.t); bi_set_cuda(&f.pos.v.t); bi_set_cuda(&f.cs.v.t); bi_set_cuda(&f.w.v.t);
          bi_set_cuda(&f.c.v.t); bi_set_cuda(&f.slot.v.t); want = bi_want_cuda_host(); break;
        case 38: what = "cos_sin_cache on CUDA"; bi_set_cuda(&f.cs.v.t); want = DSV4KV_ERR_DEVICE; break;
        case 39: what = "unknown flag bit"; d.flags = 0x80u; f.pd = &d; want = DSV4KV_ERR_FORMAT; break;
        default: ix_free(&f); END_CASES(); return;
      }
    }
    dsv4kv_status st = ix_call(&f);
    if (alt_ok >= 0 && st == (dsv4kv_status)alt_ok) want = st;
    bi_check_call(st, want, name, what);
    size_t first;
    if (count_diff(f.c.data, f.init, f.c.nbytes, &first)) soft_fail("%s: cache byte %zu written on an argument error", what, first);
    soft_true(fb_guards_ok(&f.c.fb), "guard bytes overwritten");
    ix_free(&f);
  }
  END_CASES();
}

void sec7_indexer_bad_index_values(void **state) {
  (void)state;
  BEGIN_CASES();
  static const struct {
    int64_t pos[3], slot[3], skipped;
    const char *what, *name;
  } cases[] = {
      {{0, 5, 7}, {0, 32, 3}, 1, "slot past the cache", "kv_slot_mapping"},
      {{0, 5, 7}, {0, -7, 3}, 1, "slot -7", "kv_slot_mapping"},
      {{0, 5, 7}, {INT64_MIN, INT64_MAX, 3}, 2, "slots INT64_MIN / INT64_MAX", "kv_slot_mapping"},
      {{0, -3, 7}, {0, 5, 3}, 1, "negative position", "positions"},
      {{0, 8, 7}, {0, 5, 3}, 1, "cos_sin row out of range", NULL},
      {{INT64_MAX - 1, 2, 7}, {0, 5, 3}, 1, "huge position", NULL},
      {{0, 5, 7}, {-1, -1, 3}, 0, "-1 is not counted", NULL},
  };
  for (size_t ci = 0; ci < sizeof(cases) / sizeof(cases[0]); ci++) {
    ix_fix f;
    ix_init(&f, cases[ci].pos, cases[ci].slot, DSV4KV_RECORD_INDEXER_FP8, 16);
    bi_check_call(ix_call(&f), cases[ci].skipped ? DSV4KV_WARN_SKIPPED : DSV4KV_OK, cases[ci].name, cases[ci].what);
    soft_true(f.sk == (cases[ci].skipped), "skipped %lld, want %lld", (long long)f.sk, (long long)(cases[ci].skipped));
    uint8_t *want = (uint8_t *)malloc(f.c.nbytes);
    memcpy(want, f.init, f.c.nbytes);
    const float *cs = (const float *)f.cs.d, *w = (const float *)f.w.d;
    for (int t = 0; t < 3; t++) {
      int64_t s = cases[ci].slot[t], p = cases[ci].pos[t];
      if (s < 0 || s >= 32 || p < 0 || p >= 8) continue;
      ref_indexer_token(tmat16_row(&f.k, t), w, cs + p * 64, 1e-6f, 0, 0, 0, want + (s / 16) * f.c.page_stride, 16,
                        (int32_t)(s % 16));
    }
    size_t first;
    if (count_diff(f.c.data, want, f.c.nbytes, &first))
      soft_fail("%s: cache byte %zu got 0x%02x want 0x%02x", cases[ci].what, first, f.c.data[first], want[first]);
    soft_true(fb_guards_ok(&f.c.fb), "guard bytes overwritten");
    free(want);
    ix_free(&f);
  }
  END_CASES();
}
