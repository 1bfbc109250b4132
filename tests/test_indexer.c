/*
 * SPEC §6 indexer_k_norm_rope_store: hand-computed records, ratio gating,
 * signed zeros, non-finite input and 64-bit addressing, against the
 * reference of NUMERICS §2.4 / §10 (Triton lane-order sum of squares,
 * rstd = (float)(1.0 / sqrt((double)v)), fmaf RoPE) in tests/support/ref.c.
 * Randomized rows for every record, flag and table dtype: the op registry
 * (tests/ops/cases_indexer.c).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "support/support.h"

typedef struct {
  int fp4, mx, tiled;
  int cs_bf16, w_bf16;
  int32_t bs, cr;
} ix_cfg;

typedef struct {
  tmat16 k;
  fbuf pos_fb, cs_fb, w_fb, slot_fb;
  int64_t *pos, *slot;
  void *cs, *w;
  float *cs_f, *w_f; /* widened copies for the reference */
  int64_t T, max_pos;
  tview pos_v, cs_v, w_v, slot_v;
  tcache c;
} ix_fix;

static void ix_make(ix_fix *f, const ix_cfg *cfg, int64_t Tk, int64_t T, int64_t max_pos, int64_t pages) {
  memset(f, 0, sizeof(*f));
  f->T = T;
  f->max_pos = max_pos;
  tmat16_make(&f->k, Tk, 128, 128);
  f->pos = (int64_t *)fb_alloc(&f->pos_fb, (size_t)Tk * 8, 8);
  tv_1d(&f->pos_v, f->pos, dt_i64(), Tk);
  f->slot = (int64_t *)fb_alloc(&f->slot_fb, (size_t)T * 8, 8);
  tv_1d(&f->slot_v, f->slot, dt_i64(), T);
  size_t esz = cfg->cs_bf16 ? 2 : 4;
  f->cs = fb_alloc(&f->cs_fb, (size_t)max_pos * 64 * esz, 16);
  tv_2d(&f->cs_v, f->cs, cfg->cs_bf16 ? dt_bf16() : dt_f32(), max_pos, 64, 64);
  f->cs_f = (float *)calloc((size_t)max_pos * 64 + 1, 4);
  size_t wsz = cfg->w_bf16 ? 2 : 4;
  f->w = fb_alloc(&f->w_fb, 128 * wsz, 16);
  tv_1d(&f->w_v, f->w, cfg->w_bf16 ? dt_bf16() : dt_f32(), 128);
  f->w_f = (float *)calloc(128, 4);
  tcache_make(&f->c, cfg->fp4 ? DSV4KV_RECORD_INDEXER_MXFP4 : DSV4KV_RECORD_INDEXER_FP8, 0, cfg->bs,
              pages, 0, 0xA5, 0);
  f->c.desc.flags = (cfg->mx ? DSV4KV_CACHE_MX_SCALE : 0u) | (cfg->tiled ? DSV4KV_CACHE_TILED : 0u);
}

static void ix_set_cs(ix_fix *f, const ix_cfg *cfg, int64_t row, int j, float v) {
  if (cfg->cs_bf16) {
    uint16_t b = ref_f32_to_bf16(v);
    ((uint16_t *)f->cs)[row * 64 + j] = b;
    f->cs_f[row * 64 + j] = bf16_val(b);
  } else {
    ((float *)f->cs)[row * 64 + j] = v;
    f->cs_f[row * 64 + j] = v;
  }
}

static void ix_set_w(ix_fix *f, const ix_cfg *cfg, int i, float v) {
  if (cfg->w_bf16) {
    uint16_t b = ref_f32_to_bf16(v);
    ((uint16_t *)f->w)[i] = b;
    f->w_f[i] = bf16_val(b);
  } else {
    ((float *)f->w)[i] = v;
    f->w_f[i] = v;
  }
}

static void ix_free(ix_fix *f) {
  tmat16_free(&f->k);
  fb_free(&f->pos_fb);
  fb_free(&f->slot_fb);
  fb_free(&f->cs_fb);
  fb_free(&f->w_fb);
  free(f->cs_f);
  free(f->w_f);
  tcache_free(&f->c);
}

static dsv4kv_status ix_run(ix_fix *f, float eps, int32_t cr, int threads, int64_t *sk) {
  dsv4kv_options opt;
  memset(&opt, 0, sizeof(opt));
  opt.skipped = sk;
  opt.num_threads = threads;
  if (sk) *sk = -5;
  return dsv4kv_indexer_k_norm_rope_store(&f->k.v.t, &f->pos_v.t, &f->cs_v.t, &f->w_v.t, eps, &f->c.v.t,
                                          &f->c.desc, &f->slot_v.t, cr, &opt);
}

static uint8_t *ix_expected(ix_fix *f, const ix_cfg *cfg, const uint8_t *init, float eps, int32_t cr) {
  uint8_t *e = (uint8_t *)malloc(f->c.nbytes);
  memcpy(e, init, f->c.nbytes);
  for (int64_t t = 0; t < f->T; t++) {
    int64_t s = f->slot[t], p = f->pos[t];
    if (s < 0 || (p + 1) % cr != 0) continue;
    int64_t cp = p / cr * cr;
    ref_indexer_token(tmat16_row(&f->k, t), f->w_f, f->cs_f + cp * 64, eps, cfg->fp4, cfg->mx,
                      cfg->tiled, e + (s / cfg->bs) * f->c.page_stride, cfg->bs, (int32_t)(s % cfg->bs));
  }
  return e;
}

static void assert_bytes(const uint8_t *got, const uint8_t *want, size_t n, const char *what) {
  size_t first;
  size_t nd = count_diff(got, want, n, &first);
  if (nd) fail_msg("%s: %zu bytes differ, first at %zu: got 0x%02x want 0x%02x", what, nd, first, got[first], want[first]);
}

/* ---------------------------------------------------------------- hand cases */

/* Position 0 with cos = 1, sin = 0 (identity), w = 1, eps = 0, a row of +-2:
 * variance 4, rstd 0.5, normalized +-1 -> FP8: e = -8, codes 0x78 / 0xF8,
 * scale 2^-8; MXFP4: l = -2, codes +-4 (6 / 0xE), ue8m0 125.
 * Position 1 (cr 1) uses cos_sin row 1 = (cos 0, sin 1): pairs (e, o) = (1, -1)
 * in dims 64..127 become (-o, e) = (1, 1). */
static void sec6_hand_checked_records(void **state) {
  (void)state;
  for (int mode = 0; mode < 4; mode++) {
    ix_cfg cfg = {.fp4 = mode == 3, .mx = mode == 1, .tiled = mode == 2, .bs = 16, .cr = 1};
    ix_fix f;
    ix_make(&f, &cfg, 2, 2, 2, 1);
    for (int j = 0; j < 32; j++) {
      ix_set_cs(&f, &cfg, 0, j, 1.0f);
      ix_set_cs(&f, &cfg, 0, 32 + j, 0.0f);
      ix_set_cs(&f, &cfg, 1, j, 0.0f);
      ix_set_cs(&f, &cfg, 1, 32 + j, 1.0f);
    }
    for (int i = 0; i < 128; i++) ix_set_w(&f, &cfg, i, 1.0f);
    for (int t = 0; t < 2; t++)
      for (int i = 0; i < 128; i++) tmat16_row(&f.k, t)[i] = (i & 1) ? 0xC000 : 0x4000;
    f.pos[0] = 0;
    f.pos[1] = 1;
    f.slot[0] = 3;
    f.slot[1] = 4;
    int64_t sk;
    assert_status(ix_run(&f, 0.0f, 1, 0, &sk), DSV4KV_OK);
    assert_int_equal(sk, 0);
    uint8_t *want = (uint8_t *)malloc(f.c.nbytes);
    memset(want, 0xA5, f.c.nbytes);
    for (int t = 0; t < 2; t++) {
      int p = (int)f.slot[t];
      if (!cfg.fp4) {
        for (int d = 0; d < 128; d++) {
          uint8_t code = (d & 1) ? 0xF8 : 0x78;
          if (t == 1 && d >= 64) code = 0x78;
          int64_t off = cfg.tiled ? (p / 16) * 16 * 128 + (d / 16) * 256 + (p % 16) * 16 + d % 16 : p * 128 + d;
          want[off] = code;
        }
        uint8_t *sc = want + 16 * 128 + p * 4;
        if (cfg.mx) {
          sc[0] = sc[1] = sc[2] = sc[3] = 119;
        } else {
          sc[0] = 0x00; sc[1] = 0x00; sc[2] = 0x80; sc[3] = 0x3B; /* 2^-8 */
        }
      } else {
        for (int b = 0; b < 64; b++) want[p * 64 + b] = (t == 1 && b >= 32) ? 0x66 : 0xE6;
        memset(want + 16 * 64 + p * 4, 125, 4);
      }
    }
    static const char *names[4] = {"FP8", "FP8 MX scale", "FP8 tiled", "MXFP4"};
    assert_bytes(f.c.data, want, f.c.nbytes, names[mode]);
    assert_true(fb_guards_ok(&f.c.fb));
    free(want);
    ix_free(&f);
  }
}

/* A zero row with eps > 0 normalizes to zeros: FP8 codes 0, amax floor
 * (e = -22, scale 2^-22 / UE8M0 105); MXFP4 floor 6*2^-126 (l = -126, byte 1). */
static void sec6_zero_row(void **state) {
  (void)state;
  for (int mode = 0; mode < 3; mode++) {
    ix_cfg cfg = {.fp4 = mode == 2, .mx = mode == 1, .bs = 4, .cr = 1};
    ix_fix f;
    ix_make(&f, &cfg, 1, 1, 3, 1);
    for (int j = 0; j < 64; j++) {
      for (int r = 0; r < 3; r++) ix_set_cs(&f, &cfg, r, j, 0.5f);
    }
    for (int i = 0; i < 128; i++) ix_set_w(&f, &cfg, i, 1.5f);
    fill_u16(tmat16_row(&f.k, 0), 128, 0x0000);
    f.pos[0] = 2;
    f.slot[0] = 1;
    assert_status(ix_run(&f, 1e-6f, 1, 0, NULL), DSV4KV_OK);
    uint8_t *want = (uint8_t *)malloc(f.c.nbytes);
    memset(want, 0xA5, f.c.nbytes);
    if (!cfg.fp4) {
      memset(want + 128, 0x00, 128);
      uint8_t *sc = want + 4 * 128 + 4;
      if (cfg.mx) memset(sc, 105, 4);
      else { sc[0] = 0; sc[1] = 0; sc[2] = 0x80; sc[3] = 0x34; } /* 2^-22 = 0x34800000 */
    } else {
      memset(want + 64, 0x00, 64);
      memset(want + 4 * 64 + 4, 1, 4);
    }
    assert_bytes(f.c.data, want, f.c.nbytes, cfg.fp4 ? "MXFP4 zero row" : cfg.mx ? "FP8 MX zero row" : "FP8 zero row");
    free(want);
    ix_free(&f);
  }
}

/* compress_ratio 2: only positions with (pos + 1) % 2 == 0 write, and they
 * use cos_sin row pos - 1 (the group start).  Rows of cos_sin differ, so a
 * wrong row changes the bytes. */
static void sec6_compress_ratio_gating(void **state) {
  (void)state;
  ix_cfg cfg = {.cr = 2, .bs = 16};
  ix_fix f;
  ix_make(&f, &cfg, 10, 10, 12, 1);
  rng_t r;
  rng_seed(&r, 640);
  for (int64_t p = 0; p < 12; p++)
    for (int j = 0; j < 64; j++) ix_set_cs(&f, &cfg, p, j, (float)(rng_unit(&r) * 2 - 1));
  for (int i = 0; i < 128; i++) ix_set_w(&f, &cfg, i, 1.0f);
  for (int t = 0; t < 10; t++) {
    for (int i = 0; i < 128; i++) tmat16_row(&f.k, t)[i] = bf16_of(rng_normal(&r));
    f.pos[t] = t;
    f.slot[t] = t;
  }
  uint8_t *init = (uint8_t *)malloc(f.c.nbytes);
  memcpy(init, f.c.data, f.c.nbytes);
  assert_status(ix_run(&f, 1e-6f, 2, 0, NULL), DSV4KV_OK);
  uint8_t *want = ix_expected(&f, &cfg, init, 1e-6f, 2);
  assert_bytes(f.c.data, want, f.c.nbytes, "cr 2 gating");
  for (int t = 0; t < 10; t += 2) {
    for (int d = 0; d < 128; d++) assert_int_equal(f.c.data[t * 128 + d], 0xA5);
    for (int b = 0; b < 4; b++) assert_int_equal(f.c.data[16 * 128 + t * 4 + b], 0xA5);
  }
  /* the odd positions really used row pos - 1: recompute with row pos gives different bytes */
  uint8_t alt[16 * 132];
  memcpy(alt, init, sizeof(alt));
  ref_indexer_token(tmat16_row(&f.k, 1), f.w_f, f.cs_f + 1 * 64, 1e-6f, 0, 0, 0, alt, 16, 1);
  assert_true(memcmp(alt + 128, f.c.data + 128, 128) != 0);
  free(want);
  free(init);
  ix_free(&f);
}

/* Dims 0..63 go through the rotation with cos = 1, sin = 0 (NUMERICS §2.4
 * step 4), not a bit copy: a pair (e, o) = (-0, -1) gives e' = -0 + -(-1*0)
 * = +0, and (1, -0) gives o' = -0 + 1*0 = +0.  SPEC §6 says "pass through";
 * the golden files indexer_*_scale_boundaries pin the arithmetic (+0). */
static void sec6_signed_zero_in_dims_0_63(void **state) {
  (void)state;
  for (int fp4 = 0; fp4 < 2; fp4++) {
    ix_cfg cfg = {.fp4 = fp4, .bs = 16, .cr = 1};
    ix_fix f;
    ix_make(&f, &cfg, 1, 1, 1, 1);
    for (int j = 0; j < 32; j++) {
      ix_set_cs(&f, &cfg, 0, j, 1.0f);
      ix_set_cs(&f, &cfg, 0, 32 + j, 0.0f);
    }
    for (int i = 0; i < 128; i++) ix_set_w(&f, &cfg, i, 1.0f);
    uint16_t *row = tmat16_row(&f.k, 0);
    for (int i = 0; i < 128; i++) row[i] = 0x3F80;
    row[0] = 0x8000; /* e = -0 */
    row[1] = 0xBF80; /* o = -1 */
    row[2] = 0x3F80; /* e = 1 */
    row[3] = 0x8000; /* o = -0 */
    f.pos[0] = 0;
    f.slot[0] = 0;
    uint8_t *init = (uint8_t *)malloc(f.c.nbytes);
    memcpy(init, f.c.data, f.c.nbytes);
    assert_status(ix_run(&f, 0.0f, 1, 0, NULL), DSV4KV_OK);
    if (!fp4) {
      assert_int_equal(f.c.data[0], 0x00); /* +0, not 0x80 */
      assert_int_equal(f.c.data[3], 0x00);
    } else {
      assert_int_equal(f.c.data[0] & 0x0F, 0x0); /* dim 0: +0, not 0x8 */
      assert_int_equal(f.c.data[1] >> 4, 0x0);   /* dim 3 */
    }
    uint8_t *want = ix_expected(&f, &cfg, init, 0.0f, 1);
    assert_bytes(f.c.data, want, f.c.nbytes, fp4 ? "MXFP4 signed zero" : "FP8 signed zero");
    free(want);
    free(init);
    ix_free(&f);
  }
}

/* NaN / Inf in k_pre are stored as the reference stores them; with
 * check_nonfinite the call returns WARN_NONFINITE and counts them. */
static void sec6_nonfinite_input(void **state) {
  (void)state;
  for (int fp4 = 0; fp4 < 2; fp4++) {
    for (int check = 0; check < 2; check++) {
      ix_cfg cfg = {.fp4 = fp4, .bs = 16, .cr = 1};
      ix_fix f;
      ix_make(&f, &cfg, 3, 3, 4, 1);
      rng_t r;
      rng_seed(&r, 660);
      for (int p = 0; p < 4; p++)
        for (int j = 0; j < 64; j++) ix_set_cs(&f, &cfg, p, j, (float)(rng_unit(&r) * 2 - 1));
      for (int i = 0; i < 128; i++) ix_set_w(&f, &cfg, i, 1.0f);
      for (int t = 0; t < 3; t++) {
        for (int i = 0; i < 128; i++) tmat16_row(&f.k, t)[i] = bf16_of(rng_normal(&r));
        f.pos[t] = t;
        f.slot[t] = t;
      }
      tmat16_row(&f.k, 0)[5] = 0x7FC0;   /* NaN */
      tmat16_row(&f.k, 1)[100] = 0xFF80; /* -Inf in a RoPE dim */
      tmat16_row(&f.k, 1)[7] = 0x7F80;   /* +Inf */
      uint8_t *init = (uint8_t *)malloc(f.c.nbytes);
      memcpy(init, f.c.data, f.c.nbytes);
      dsv4kv_options opt;
      memset(&opt, 0, sizeof(opt));
      int64_t nf = -1;
      opt.nonfinite = &nf;
      opt.check_nonfinite = check;
      dsv4kv_status st = dsv4kv_indexer_k_norm_rope_store(&f.k.v.t, &f.pos_v.t, &f.cs_v.t, &f.w_v.t, 1e-6f,
                                                          &f.c.v.t, &f.c.desc, &f.slot_v.t, 1, &opt);
      assert_status(st, check ? DSV4KV_WARN_NONFINITE : DSV4KV_OK);
      if (check) assert_int_equal(nf, 3);
      uint8_t *want = ix_expected(&f, &cfg, init, 1e-6f, 1);
      assert_bytes(f.c.data, want, f.c.nbytes, fp4 ? "MXFP4 non-finite" : "FP8 non-finite");
      if (!fp4) /* NaN row: every value NaN -> 0x7E, amax floor scale 2^-22 */
        for (int d = 0; d < 128; d++) assert_int_equal(f.c.data[d], 0x7E);
      free(want);
      free(init);
      ix_free(&f);
    }
  }
}

/* A cache larger than 2^31 bytes (FP8 132-B records and MXFP4 68-B records). */
static void sec6_large_page_ids_64bit_addressing(void **state) {
  (void)state;
  for (int fp4 = 0; fp4 < 2; fp4++) {
    int32_t bs = 64, rb = fp4 ? 68 : 132;
    int64_t ps = (int64_t)bs * rb, pages = fp4 ? 495000 : 255000;
    int64_t p2 = ((int64_t)1 << 31) / ps + 1;
    fbuf fb;
    uint8_t *cache = (uint8_t *)fb_alloc(&fb, (size_t)(ps * pages), 64);
    tview cv;
    tv_2d(&cv, cache, dt_u8(), pages, ps, ps);
    dsv4kv_cache_desc desc = {fp4 ? DSV4KV_RECORD_INDEXER_MXFP4 : DSV4KV_RECORD_INDEXER_FP8, DSV4KV_FP8_OCP, bs, 0, 0};
    ix_cfg cfg = {.fp4 = fp4, .bs = bs, .cr = 1};
    ix_fix f;
    ix_make(&f, &cfg, 3, 3, 4, 1); /* its small cache is unused */
    rng_t r;
    rng_seed(&r, 650 + fp4);
    for (int p = 0; p < 4; p++)
      for (int j = 0; j < 64; j++) ix_set_cs(&f, &cfg, p, j, (float)(rng_unit(&r) * 2 - 1));
    for (int i = 0; i < 128; i++) ix_set_w(&f, &cfg, i, 1.0f);
    for (int t = 0; t < 3; t++) {
      for (int i = 0; i < 128; i++) tmat16_row(&f.k, t)[i] = bf16_of(rng_normal(&r));
      f.pos[t] = t + 1;
    }
    f.slot[0] = (pages - 1) * bs + 63;
    f.slot[1] = p2 * bs + 2;
    f.slot[2] = (pages - 1) * bs;
    dsv4kv_options opt;
    memset(&opt, 0, sizeof(opt));
    assert_status(dsv4kv_indexer_k_norm_rope_store(&f.k.v.t, &f.pos_v.t, &f.cs_v.t, &f.w_v.t, 1e-6f, &cv.t, &desc,
                                                   &f.slot_v.t, 1, &opt),
                  DSV4KV_OK);
    uint8_t *page = (uint8_t *)malloc((size_t)ps);
    const int64_t chk[2] = {pages - 1, p2};
    for (int c = 0; c < 2; c++) {
      memset(page, 0, (size_t)ps);
      for (int t = 0; t < 3; t++)
        if (f.slot[t] / bs == chk[c])
          ref_indexer_token(tmat16_row(&f.k, t), f.w_f, f.cs_f + f.pos[t] * 64, 1e-6f, fp4, 0, 0, page, bs,
                            (int32_t)(f.slot[t] % bs));
      assert_bytes(cache + chk[c] * ps, page, (size_t)ps, fp4 ? "MXFP4 large page" : "FP8 large page");
    }
    free(page);
    ix_free(&f);
    fb_free(&fb);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(sec6_hand_checked_records),
      cmocka_unit_test(sec6_zero_row),
      cmocka_unit_test(sec6_compress_ratio_gating),
      cmocka_unit_test(sec6_signed_zero_in_dims_0_63),
      cmocka_unit_test(sec6_nonfinite_input),
      cmocka_unit_test(sec6_large_page_ids_64bit_addressing),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
