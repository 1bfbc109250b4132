/*
 * SPEC §4 dequantize_and_gather_k_cache and gather_num_workers.
 * Hand-computed special scale bytes, lengths, offsets, byte offsets and
 * 64-bit addressing, against the reference decode of the documented layout
 * (tests/support/ref.c).  Random-byte and every-code caches, skips and
 * thread counts: the op registry (tests/ops/cases_kv.c).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "support/support.h"

#define OUT_POISON 0xA5A5


/* A strided bf16 out [R_out, T_max, 512]: element (r, i, d) at
 * r*s0 + i*s1 + d.  Fenced. */
typedef struct {
  fbuf fb;
  uint16_t *data;
  size_t n;
  int64_t R, T, s0, s1;
  tview v;
} tout;

static void out_make(tout *o, int64_t R, int64_t T, int64_t s0, int64_t s1) {
  o->R = R;
  o->T = T;
  o->s0 = s0;
  o->s1 = s1;
  o->n = (size_t)((R - 1) * s0 + (T - 1) * s1 + 512);
  if (R == 0 || T == 0) o->n = 1;
  o->data = (uint16_t *)fb_alloc(&o->fb, o->n * 2, 16);
  fill_u16(o->data, o->n, OUT_POISON);
  tv_3d(&o->v, o->data, dt_bf16(), R, T, 512, s0, s1, 1);
}

typedef struct {
  fbuf fb;
  int32_t *d;
  tview v;
} ti32;

static void i32_make1(ti32 *t, const int32_t *vals, int64_t n) {
  t->d = (int32_t *)fb_alloc(&t->fb, (size_t)n * 4, 4);
  if (n) memcpy(t->d, vals, (size_t)n * 4);
  tv_1d(&t->v, t->d, dt_i32(), n);
}

/* block table [R, P] with strides (rs, cs); vals row-major R x P */
static void bt_make(ti32 *t, const int32_t *vals, int64_t R, int64_t P, int64_t rs, int64_t cs) {
  size_t n = (size_t)((R - 1) * rs + (P - 1) * cs + 1);
  t->d = (int32_t *)fb_alloc(&t->fb, n * 4, 4);
  fill_i32(t->d, n, 0x7BADBAD7); /* never a valid page */
  for (int64_t r = 0; r < R; r++)
    for (int64_t p = 0; p < P; p++) t->d[r * rs + p * cs] = vals[r * P + p];
  tv_2d(&t->v, t->d, dt_i32(), R, P, rs);
  t->v.strides[1] = cs;
}

/* Expected out: poison, then every gathered token decoded by the reference. */
static uint16_t *expected_out(const tout *o, const tcache *c, const int32_t *seq, const int32_t *gl,
                              const int32_t *bt, int64_t R, int64_t P, int64_t offset) {
  uint16_t *e = (uint16_t *)malloc(o->n * 2);
  fill_u16(e, o->n, OUT_POISON);
  for (int64_t r = 0; r < R; r++) {
    int32_t L = gl ? gl[r] : seq[r];
    int32_t start = seq[r] - L;
    for (int32_t i = 0; i < L; i++) {
      int32_t pos = start + i;
      int32_t page = bt[r * P + pos / c->bs];
      ref_decode_token(c->desc.record, c->desc.fp8 == DSV4KV_FP8_FNUZ,
                       c->data + (int64_t)page * c->page_stride, c->bs, pos % c->bs,
                       e + r * o->s0 + (offset + i) * o->s1);
    }
  }
  return e;
}

static void assert_out_equal(const tout *o, const uint16_t *want, const char *what) {
  for (size_t i = 0; i < o->n; i++) {
    if (o->data[i] != want[i]) {
      int64_t r = (int64_t)i / o->s0, rem = (int64_t)i % o->s0;
      fail_msg("%s: out element %zu (r=%lld, row %lld, dim %lld) got 0x%04x want 0x%04x", what, i,
               (long long)r, (long long)(rem / o->s1), (long long)(rem % o->s1), o->data[i], want[i]);
    }
  }
  assert_true(fb_guards_ok(&o->fb));
}

static dsv4kv_status run_gather(tout *o, tcache *c, ti32 *seq, ti32 *gl, ti32 *bt, int64_t offset,
                                int threads, int64_t *skipped) {
  dsv4kv_options opt;
  memset(&opt, 0, sizeof(opt));
  opt.num_threads = threads;
  opt.skipped = skipped;
  if (skipped) *skipped = -777;
  return dsv4kv_dequantize_and_gather_k_cache(&o->v.t, &c->v.t, &c->desc, &seq->v.t,
                                              gl ? &gl->v.t : NULL, &bt->v.t, offset, &opt);
}

/* gather_lens NULL gathers whole sequences; given, the LAST L tokens. */
static void sec4_gather_lens_null_vs_given(void **state) {
  (void)state;
  rng_t rg;
  rng_seed(&rg, 22);
  for (size_t fi = 0; fi < NFORMATS; fi++) {
    const fmt_case *f = &kFormats[fi];
    tcache c;
    tcache_make(&c, f->rec, f->fnuz, 4, 6, 0, 0, 0);
    rng_bytes(&rg, c.data, c.nbytes);
    int32_t seqv[2] = {9, 6};
    int32_t btv[6] = {5, 0, 3, 1, 4, 2};
    ti32 seq, bt;
    i32_make1(&seq, seqv, 2);
    bt_make(&bt, btv, 2, 3, 3, 1);
    /* NULL */
    tout o1;
    out_make(&o1, 2, 10, 10 * 512, 512);
    assert_status(run_gather(&o1, &c, &seq, NULL, &bt, 1, 0, NULL), DSV4KV_OK);
    uint16_t *w1 = expected_out(&o1, &c, seqv, NULL, btv, 2, 3, 1);
    assert_out_equal(&o1, w1, "gather_lens NULL");
    /* given == seq_lens: identical to NULL */
    ti32 gl;
    i32_make1(&gl, seqv, 2);
    tout o2;
    out_make(&o2, 2, 10, 10 * 512, 512);
    assert_status(run_gather(&o2, &c, &seq, &gl, &bt, 1, 0, NULL), DSV4KV_OK);
    assert_memory_equal(o1.data, o2.data, o1.n * 2);
    /* given, shorter: last L tokens */
    int32_t glv[2] = {3, 5};
    ti32 gl2;
    i32_make1(&gl2, glv, 2);
    tout o3;
    out_make(&o3, 2, 10, 10 * 512, 512);
    assert_status(run_gather(&o3, &c, &seq, &gl2, &bt, 1, 0, NULL), DSV4KV_OK);
    uint16_t *w3 = expected_out(&o3, &c, seqv, glv, btv, 2, 3, 1);
    assert_out_equal(&o3, w3, "gather_lens given");
    /* the first gathered row of request 0 is position 6 = page btv[1], p 2 */
    uint16_t tok[512];
    ref_decode_token(f->rec, f->fnuz, c.data + (int64_t)btv[1] * c.page_stride, 4, 2, tok);
    assert_memory_equal(o3.data + 1 * 512, tok, sizeof(tok));
    free(w1);
    free(w3);
    tcache_free(&c);
    fb_free(&o1.fb);
    fb_free(&o2.fb);
    fb_free(&o3.fb);
    fb_free(&seq.fb);
    fb_free(&bt.fb);
    fb_free(&gl.fb);
    fb_free(&gl2.fb);
  }
}

/* L = 0 (and seq_len 0) writes nothing; offset > 0 leaves rows outside
 * [offset, offset + L) alone. */
static void sec4_zero_length_and_offset(void **state) {
  (void)state;
  rng_t rg;
  rng_seed(&rg, 23);
  for (size_t fi = 0; fi < NFORMATS; fi++) {
    const fmt_case *f = &kFormats[fi];
    tcache c;
    tcache_make(&c, f->rec, f->fnuz, 4, 4, 0, 0, 0);
    rng_bytes(&rg, c.data, c.nbytes);
    int32_t seqv[4] = {7, 0, 5, 8};
    int32_t glv[4] = {0, 0, 2, 3};
    int32_t btv[8] = {1, 2, 0, 0, 3, 1, 2, 3};
    ti32 seq, gl, bt;
    i32_make1(&seq, seqv, 4);
    i32_make1(&gl, glv, 4);
    bt_make(&bt, btv, 4, 2, 2, 1);
    tout o;
    out_make(&o, 4, 12, 12 * 512, 512);
    int64_t sk;
    assert_status(run_gather(&o, &c, &seq, &gl, &bt, 7, 0, &sk), DSV4KV_OK);
    assert_int_equal(sk, 0);
    uint16_t *w = expected_out(&o, &c, seqv, glv, btv, 4, 2, 7);
    assert_out_equal(&o, w, fmt_name(f));
    /* requests 0 and 1 untouched entirely; rows 0..6 of every request untouched */
    for (size_t i = 0; i < (size_t)(2 * 12 * 512); i++) assert_int_equal(o.data[i], OUT_POISON);
    for (int r = 0; r < 4; r++)
      for (int i = 0; i < 7 * 512; i++) assert_int_equal(o.data[r * 12 * 512 + i], OUT_POISON);
    free(w);
    tcache_free(&c);
    fb_free(&o.fb);
    fb_free(&seq.fb);
    fb_free(&gl.fb);
    fb_free(&bt.fb);
  }
}

/* out inside the cache it reads: refused (ERR_STRIDE), nothing written; the
 * bytes would otherwise depend on the path and the threads' schedule. */
static void sec4_out_inside_cache_refused(void **state) {
  (void)state;
  tcache c;
  tcache_make(&c, DSV4KV_RECORD_V4, 0, 4, 64, 0, 0, 0);
  memset(c.data, 0x11, c.nbytes);
  int32_t seqv[1] = {64}, btv[1] = {0};
  ti32 seq, bt;
  i32_make1(&seq, seqv, 1);
  bt_make(&bt, btv, 1, 1, 1, 1);
  tout o; /* a view of the cache's own bytes as out [1, 8, 512] */
  memset(&o, 0, sizeof o);
  tv_3d(&o.v, c.data + c.page_stride, dt_bf16(), 1, 8, 512, 8 * 512, 512, 1);
  int64_t sk;
  assert_status(run_gather(&o, &c, &seq, NULL, &bt, 0, 0, &sk), DSV4KV_ERR_STRIDE);
  for (size_t i = 0; i < c.nbytes; i++) assert_int_equal(c.data[i], 0x11);
  tcache_free(&c);
  fb_free(&seq.fb);
  fb_free(&bt.fb);
}

/* Hand-computed V4 decode: scale byte 0 -> zeros (signed), 255 -> Inf (0*Inf
 * = NaN), NaN codes -> 0x7FFF, subnormal / overflowing products, raw RoPE. */
static void sec4_v4_special_scales_hand_checked(void **state) {
  (void)state;
  tcache c;
  tcache_make(&c, DSV4KV_RECORD_V4, 0, 2, 1, 0, 0, 0);
  static const uint8_t codes[8] = {0x38, 0xB8, 0x7F, 0xFF, 0x00, 0x80, 0x01, 0x7E};
  static const uint8_t sbytes[8] = {0, 255, 127, 1, 254, 130, 100, 0x99};
  static const uint16_t want_tab[7][8] = {
      /* scale 0   */ {0x0000, 0x8000, 0x7FFF, 0x7FFF, 0x0000, 0x8000, 0x0000, 0x0000},
      /* scale 255 */ {0x7F80, 0xFF80, 0x7FFF, 0x7FFF, 0x7FFF, 0x7FFF, 0x7F80, 0x7F80},
      /* 2^0       */ {0x3F80, 0xBF80, 0x7FFF, 0x7FFF, 0x0000, 0x8000, 0x3B00, 0x43E0},
      /* 2^-126    */ {0x0080, 0x8080, 0x7FFF, 0x7FFF, 0x0000, 0x8000, 0x0000, 0x04E0},
      /* 2^127     */ {0x7F00, 0xFF00, 0x7FFF, 0x7FFF, 0x0000, 0x8000, 0x7A80, 0x7F80},
      /* 2^3       */ {0x4100, 0xC100, 0x7FFF, 0x7FFF, 0x0000, 0x8000, 0x3C80, 0x4560},
      /* 2^-27     */ {0x3200, 0xB200, 0x7FFF, 0x7FFF, 0x0000, 0x8000, 0x2D80, 0x3660},
  };
  int p = 1;
  uint8_t *data = c.data + p * 576;
  for (int d = 0; d < 448; d++) data[d] = codes[d % 8];
  static const uint16_t rope[6] = {0x7FC1, 0xFF81, 0x7F81, 0x8000, 0x0001, 0xFF80};
  for (int j = 0; j < 64; j++) {
    uint16_t v = j < 6 ? rope[j] : (uint16_t)(0x1234 + 0x111 * j);
    data[448 + 2 * j] = (uint8_t)v;
    data[449 + 2 * j] = (uint8_t)(v >> 8);
  }
  memcpy(c.data + 2 * 576 + p * 8, sbytes, 8);
  int32_t seqv[1] = {2}, glv[1] = {1}, btv[1] = {0};
  ti32 seq, gl, bt;
  i32_make1(&seq, seqv, 1);
  i32_make1(&gl, glv, 1);
  bt_make(&bt, btv, 1, 1, 1, 1);
  tout o;
  out_make(&o, 1, 1, 512, 512);
  assert_status(run_gather(&o, &c, &seq, &gl, &bt, 0, 0, NULL), DSV4KV_OK);
  for (int d = 0; d < 448; d++) {
    uint16_t w = want_tab[d / 64][d % 8];
    if (o.data[d] != w) fail_msg("V4 dim %d (scale byte %d, code 0x%02x): got 0x%04x want 0x%04x", d,
                                 sbytes[d / 64], codes[d % 8], o.data[d], w);
  }
  for (int j = 0; j < 64; j++) {
    uint16_t v = j < 6 ? rope[j] : (uint16_t)(0x1234 + 0x111 * j);
    if (o.data[448 + j] != v) fail_msg("V4 RoPE dim %d: got 0x%04x want 0x%04x (raw copy)", 448 + j, o.data[448 + j], v);
  }
  assert_true(fb_guards_ok(&o.fb));
  tcache_free(&c);
  fb_free(&o.fb);
  fb_free(&seq.fb);
  fb_free(&gl.fb);
  fb_free(&bt.fb);
}

/* Same scale bytes through MXFP8 (32-dim blocks), and an FNUZ cache where
 * 0x80 is the NaN code and 0x7F is 240. */
static void sec4_mxfp8_special_scales_hand_checked(void **state) {
  (void)state;
  for (int fnuz = 0; fnuz < 2; fnuz++) {
    tcache c;
    tcache_make(&c, DSV4KV_RECORD_MXFP8, fnuz, 1, 1, 0, 0, 0);
    static const uint8_t codes[4] = {0x40, 0x80, 0x7F, 0x01};
    /* OCP: 0x40 = 2.0, 0x80 = -0, 0x7F = NaN, 0x01 = 2^-9
     * fnuz: 0x40 = 1.0, 0x80 = NaN, 0x7F = 240, 0x01 = 2^-10 */
    for (int d = 0; d < 512; d++) c.data[d] = codes[d % 4];
    for (int s = 0; s < 16; s++) c.data[512 + s] = s == 0 ? 0 : s == 1 ? 255 : (uint8_t)(120 + s);
    int32_t seqv[1] = {1}, btv[1] = {0};
    ti32 seq, bt;
    i32_make1(&seq, seqv, 1);
    bt_make(&bt, btv, 1, 1, 1, 1);
    tout o;
    out_make(&o, 1, 1, 512, 512);
    assert_status(run_gather(&o, &c, &seq, NULL, &bt, 0, 0, NULL), DSV4KV_OK);
    for (int d = 0; d < 512; d++) {
      int s = d / 32, ci = d % 4;
      double v;
      if (!fnuz) v = ci == 0 ? 2.0 : ci == 1 ? -0.0 : ci == 2 ? NAN : ldexp(1.0, -9);
      else v = ci == 0 ? 1.0 : ci == 1 ? NAN : ci == 2 ? 240.0 : ldexp(1.0, -10);
      double f = s == 0 ? 0.0 : s == 1 ? INFINITY : ldexp(1.0, 120 + s - 127);
      double prod = v * f;
      uint16_t w = isnan(prod) ? 0x7FFF : bf16_of(prod);
      if (o.data[d] != w)
        fail_msg("MXFP8 %s dim %d: got 0x%04x want 0x%04x", fnuz ? "fnuz" : "ocp", d, o.data[d], w);
    }
    tcache_free(&c);
    fb_free(&o.fb);
    fb_free(&seq.fb);
    fb_free(&bt.fb);
  }
}

/* NVFP4: value = e2m1(nibble) * e4m3(scale), exact; NaN scales -> 0x7FFF,
 * signed zero scales, nibble 0x8 = -0. */
static void sec4_nvfp4_special_scales_hand_checked(void **state) {
  (void)state;
  static const double mag[8] = {0, 0.5, 1, 1.5, 2, 3, 4, 6};
  static const uint8_t sbytes[8] = {0x38, 0x7F, 0xFF, 0x00, 0x80, 0x01, 0x7E, 0xB8};
  static const double sval[8] = {1.0, NAN, NAN, 0.0, -0.0, 0x1p-9, 448.0, -1.0};
  tcache c;
  tcache_make(&c, DSV4KV_RECORD_NVFP4, 0, 1, 1, 0, 0, 0);
  for (int b = 0; b < 256; b++) {
    int n0 = (2 * b) % 16, n1 = (2 * b + 1) % 16;
    c.data[b] = (uint8_t)(n0 | (n1 << 4));
  }
  for (int s = 0; s < 32; s++) c.data[256 + s] = sbytes[s % 8];
  int32_t seqv[1] = {1}, btv[1] = {0};
  ti32 seq, bt;
  i32_make1(&seq, seqv, 1);
  bt_make(&bt, btv, 1, 1, 1, 1);
  tout o;
  out_make(&o, 1, 1, 512, 512);
  assert_status(run_gather(&o, &c, &seq, NULL, &bt, 0, 0, NULL), DSV4KV_OK);
  for (int d = 0; d < 512; d++) {
    int nib = d % 16;
    double v = (nib & 8) ? -mag[nib & 7] : mag[nib & 7];
    double prod = v * sval[(d / 16) % 8];
    uint16_t w = isnan(prod) ? 0x7FFF : bf16_of(prod);
    if (o.data[d] != w)
      fail_msg("NVFP4 dim %d (nibble 0x%x, scale 0x%02x): got 0x%04x want 0x%04x", d, nib,
               sbytes[(d / 16) % 8], o.data[d], w);
  }
  tcache_free(&c);
  fb_free(&o.fb);
  fb_free(&seq.fb);
  fb_free(&bt.fb);
}

/* byte_offset of out and of k_cache is honoured; block_table may have more
 * rows than requests and out more rows than R. */
static void sec4_byte_offsets_and_extra_rows(void **state) {
  (void)state;
  rng_t rg;
  rng_seed(&rg, 27);
  tcache c;
  tcache_make(&c, DSV4KV_RECORD_MXFP8, 0, 4, 4, 0, 0, 0);
  rng_bytes(&rg, c.data, c.nbytes);
  tview cv; /* view of pages 1..3 */
  tv_2d(&cv, c.data, dt_u8(), 3, c.page_stride, c.page_stride);
  cv.t.byte_offset = (uint64_t)c.page_stride;
  int32_t seqv[1] = {6}, btv[3 * 2] = {2, 0, 1, 1, 1, 1}; /* 3 rows, only row 0 used */
  ti32 seq, bt;
  i32_make1(&seq, seqv, 1);
  bt_make(&bt, btv, 3, 2, 2, 1);
  tout o;
  out_make(&o, 3, 6, 6 * 512, 512);
  tview ov; /* view of out rows starting at request slot 1 */
  tv_3d(&ov, o.data, dt_bf16(), 2, 6, 512, 6 * 512, 512, 1);
  ov.t.byte_offset = 6 * 512 * 2;
  assert_status(dsv4kv_dequantize_and_gather_k_cache(&ov.t, &cv.t, &c.desc, &seq.v.t, NULL, &bt.v.t, 0, NULL), DSV4KV_OK);
  for (size_t i = 0; i < o.n; i++) {
    uint16_t want = OUT_POISON;
    if (i >= 6 * 512 && i < 12 * 512) {
      int tok = (int)(i / 512) - 6, d = (int)(i % 512);
      uint16_t dec[512];
      int real_page = btv[tok / 4] + 1;
      ref_decode_token(DSV4KV_RECORD_MXFP8, 0, c.data + real_page * c.page_stride, 4, tok % 4, dec);
      want = dec[d];
    }
    if (o.data[i] != want) fail_msg("out element %zu got 0x%04x want 0x%04x", i, o.data[i], want);
  }
  assert_true(fb_guards_ok(&o.fb));
  tcache_free(&c);
  fb_free(&o.fb);
  fb_free(&seq.fb);
  fb_free(&bt.fb);
}

/* The record written by an insert decodes as the reference decodes it: the
 * two ops agree on the layout (insert -> gather through the library only). */
static void sec4_insert_then_gather_layout_agrees(void **state) {
  (void)state;
  rng_t rg;
  rng_seed(&rg, 25);
  for (size_t fi = 0; fi < NFORMATS; fi++) {
    const fmt_case *f = &kFormats[fi];
    tcache c;
    tcache_make(&c, f->rec, f->fnuz, 4, 3, 8, 0, 0);
    tmat16 k;
    tmat16_make(&k, 12, 512, 512);
    int64_t sv[12];
    for (int t = 0; t < 12; t++) {
      gen_row(&rg, tmat16_row(&k, t), 512, t % 4);
      sv[t] = 11 - t;
    }
    fbuf sfb;
    int64_t *sp = (int64_t *)fb_alloc(&sfb, sizeof(sv), 8);
    memcpy(sp, sv, sizeof(sv));
    tview svv;
    tv_1d(&svv, sp, dt_i64(), 12);
    assert_status(dsv4kv_quantize_and_insert_k_cache(&k.v.t, &c.v.t, &c.desc, &svv.t, NULL), DSV4KV_OK);
    int32_t seqv[1] = {12}, btv[3] = {0, 1, 2};
    ti32 seq, bt;
    i32_make1(&seq, seqv, 1);
    bt_make(&bt, btv, 1, 3, 3, 1);
    tout o;
    out_make(&o, 1, 12, 12 * 512, 512);
    assert_status(run_gather(&o, &c, &seq, NULL, &bt, 0, 0, NULL), DSV4KV_OK);
    for (int t = 0; t < 12; t++) {
      uint8_t page[4 * 584];
      ref_insert_token(f->rec, f->fnuz, tmat16_row(&k, t), page, 4, 0);
      uint16_t want[512];
      ref_decode_token(f->rec, f->fnuz, page, 4, 0, want);
      const uint16_t *got = o.data + (size_t)(11 - t) * 512;
      for (int d = 0; d < 512; d++)
        if (got[d] != want[d])
          fail_msg("%s token %d dim %d: got 0x%04x want 0x%04x", fmt_name(f), t, d, got[d], want[d]);
    }
    tcache_free(&c);
    tmat16_free(&k);
    fb_free(&sfb);
    fb_free(&o.fb);
    fb_free(&seq.fb);
    fb_free(&bt.fb);
  }
}

/* A cache larger than 2^31 bytes: page ids near its end and just past 2 GiB. */
static void sec4_large_page_ids_64bit_addressing(void **state) {
  (void)state;
  rng_t rg;
  rng_seed(&rg, 26);
  static const struct {
    dsv4kv_record rec;
    int64_t pages;
  } cases[] = {{DSV4KV_RECORD_V4, 58000}, {DSV4KV_RECORD_MXFP8, 64000}, {DSV4KV_RECORD_NVFP4, 117000}};
  for (size_t ci = 0; ci < 3; ci++) {
    int32_t bs = 64, rb = cases[ci].rec == DSV4KV_RECORD_V4 ? 584 : cases[ci].rec == DSV4KV_RECORD_MXFP8 ? 528 : 288;
    int64_t ps = (int64_t)bs * rb, pages = cases[ci].pages;
    int64_t p2 = ((int64_t)1 << 31) / ps + 1;
    fbuf fb;
    uint8_t *cache = (uint8_t *)fb_alloc(&fb, (size_t)(ps * pages), 64);
    rng_bytes(&rg, cache + (pages - 1) * ps, (size_t)ps);
    rng_bytes(&rg, cache + p2 * ps, (size_t)ps);
    tview cv;
    tv_2d(&cv, cache, dt_u8(), pages, ps, ps);
    dsv4kv_cache_desc desc = {cases[ci].rec, DSV4KV_FP8_OCP, bs, 0, 0};
    int32_t btv[2] = {(int32_t)(pages - 1), (int32_t)p2};
    int32_t seqv[1] = {100};
    ti32 seq, bt;
    i32_make1(&seq, seqv, 1);
    bt_make(&bt, btv, 1, 2, 2, 1);
    tout o;
    out_make(&o, 1, 100, 100 * 512, 512);
    dsv4kv_options opt;
    memset(&opt, 0, sizeof(opt));
    assert_status(dsv4kv_dequantize_and_gather_k_cache(&o.v.t, &cv.t, &desc, &seq.v.t, NULL, &bt.v.t, 0, &opt),
                  DSV4KV_OK);
    for (int i = 0; i < 100; i++) {
      uint16_t want[512];
      ref_decode_token(cases[ci].rec, 0, cache + (int64_t)btv[i / 64] * ps, bs, i % 64, want);
      if (memcmp(want, o.data + i * 512, sizeof(want)) != 0)
        fail_msg("record %d: token %d differs (page %d)", (int)cases[ci].rec, i, btv[i / 64]);
    }
    assert_true(fb_guards_ok(&o.fb));
    fb_free(&fb);
    fb_free(&o.fb);
    fb_free(&seq.fb);
    fb_free(&bt.fb);
  }
}

static void sec4_gather_num_workers(void **state) {
  (void)state;
  static const struct {
    int64_t len;
    int32_t want;
  } cases[] = {
      {-1, 128},       {INT64_MIN, 128}, {0, 128},      {1, 128},         {8, 128},
      {1024, 128},     {1025, 129},      {1032, 129},   {1033, 130},      {4096, 512},
      {65528, 8191},   {65529, 8192},    {65536, 8192}, {65537, 8192},    {1000000, 8192},
      {(int64_t)1 << 40, 8192},          {INT64_MAX, 8192},
  };
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    int32_t got = dsv4kv_gather_num_workers(cases[i].len);
    if (got != cases[i].want)
      fail_msg("gather_num_workers(%lld) = %d, want %d", (long long)cases[i].len, got, cases[i].want);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(sec4_gather_lens_null_vs_given),
      cmocka_unit_test(sec4_zero_length_and_offset),
      cmocka_unit_test(sec4_v4_special_scales_hand_checked),
      cmocka_unit_test(sec4_mxfp8_special_scales_hand_checked),
      cmocka_unit_test(sec4_nvfp4_special_scales_hand_checked),
      cmocka_unit_test(sec4_byte_offsets_and_extra_rows),
      cmocka_unit_test(sec4_insert_then_gather_layout_agrees),
      cmocka_unit_test(sec4_large_page_ids_64bit_addressing),
      cmocka_unit_test(sec4_gather_num_workers),
      cmocka_unit_test(sec4_out_inside_cache_refused),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
