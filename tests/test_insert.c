/*
 * SPEC §2 (record layouts) and §3 (quantize_and_insert_k_cache).
 * Hand-computed records, 64-bit addressing, slot edge cases, duplicates and
 * non-finite input.  Random rows of every kind against the reference are
 * the op registry's (tests/ops/cases_kv.c); round trips: test_round_trip.c.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "support/support.h"

#define POISON 0xA5


/* Expected cache: `init` plus the reference record of every row with slot >= 0,
 * in row order (later rows win). */
static uint8_t *expected_cache(const tcache *c, const uint8_t *init, tmat16 *k, const int64_t *slots,
                               int64_t T) {
  uint8_t *e = (uint8_t *)malloc(c->nbytes);
  memcpy(e, init, c->nbytes);
  for (int64_t t = 0; t < T; t++) {
    int64_t s = slots[t];
    if (s < 0 || s >= c->pages * c->bs) continue;
    ref_insert_token(c->desc.record, c->desc.fp8 == DSV4KV_FP8_FNUZ, tmat16_row(k, t),
                     e + (s / c->bs) * c->page_stride, c->bs, (int32_t)(s % c->bs));
  }
  return e;
}

static void assert_cache_equal(const tcache *c, const uint8_t *want, const char *what) {
  size_t first;
  size_t nd = count_diff(c->data, want, c->nbytes, &first);
  if (nd) {
    int64_t page = (int64_t)(first / (size_t)c->page_stride);
    int64_t off = (int64_t)(first % (size_t)c->page_stride);
    fail_msg("%s: %zu bytes differ; first at page %lld offset %lld: got 0x%02x want 0x%02x", what,
             nd, (long long)page, (long long)off, c->data[first], want[first]);
  }
  assert_true(fb_guards_ok(&c->fb));
}

static int all_zero_check(const uint8_t *p, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (p[i]) return 0;
  return 1;
}

/* ===================================================== §2 hand-checked records */

/* Fills a 512-dim row whose V4 / MXFP8 record is computed on paper below. */
static void v4_hand_row(uint16_t *k) {
  for (int d = 0; d < 64; d++) k[d] = 0x3F80;             /* 1.0  -> e=-8  byte 119, code 0x78 */
  for (int d = 64; d < 128; d++) k[d] = 0xC000;           /* -2.0 -> e=-7  byte 120, code 0xF8 */
  for (int d = 128; d < 192; d++) k[d] = 0x0000;          /* 0    -> floor e=-22 byte 105, 0x00 */
  for (int d = 192; d < 256; d++) k[d] = 0x8000;          /* -0   -> byte 105, 0x80 */
  for (int d = 256; d < 320; d++) k[d] = 0x43E0;          /* 448  -> e=0 byte 127, 0x7E */
  static const uint16_t pat[8] = {
      0x4040, /*  3.0      -> y=384   0x7C */
      0x3F00, /*  0.5      -> y=64    0x68 */
      0xC040, /* -3.0      -> y=-384  0xFC */
      0x37C0, /*  3*2^-17  -> y=1.5*2^-9 tie -> 2*2^-9  0x02 */
      0x3700, /*  2^-17    -> y=2^-10 tie -> 0      0x00 */
      0xB700, /* -2^-17    -> -0                     0x80 */
      0x3E08, /*  17/128   -> y=17 tie 16/18 -> 16   0x58 */
      0xBE18, /* -19/128   -> y=-19 tie 18/20 -> -20 0xDA */
  };
  for (int d = 320; d < 384; d++) k[d] = pat[d % 8];      /* amax 3 -> e=-7 byte 120 */
  for (int d = 384; d < 448; d++) k[d] = 0x3580;          /* 2^-20 -> floor e=-22 byte 105, y=4 0x48 */
  static const uint16_t rope_sp[5] = {0x7FC1, 0x7F81, 0x8000, 0xFF80, 0x0001};
  for (int j = 0; j < 64; j++) k[448 + j] = j < 5 ? rope_sp[j] : (uint16_t)(0x4000 + j * 0x101);
}

static void sec2_v4_record_hand_checked(void **state) {
  (void)state;
  static const uint8_t code_pat[8] = {0x7C, 0x68, 0xFC, 0x02, 0x00, 0x80, 0x58, 0xDA};
  for (int three_d = 0; three_d < 2; three_d++) {
    tcache c;
    tcache_make(&c, DSV4KV_RECORD_V4, 0, 4, 3, 0, POISON, three_d);
    tmat16 k;
    tmat16_make(&k, 1, 512, 512);
    v4_hand_row(tmat16_row(&k, 0));
    int64_t sv[1] = {1 * 4 + 3}; /* page 1, position 3 */
    tslots s;
    slots_make(&s, sv, 1);
    int64_t sk;
    assert_status(run_insert(&k, &c, &s, 0, &sk), DSV4KV_OK);
    assert_int_equal(sk, 0);

    uint8_t *want = (uint8_t *)malloc(c.nbytes);
    memset(want, POISON, c.nbytes);
    uint8_t *page = want + 1 * c.page_stride;
    uint8_t *data = page + 3 * 576;
    for (int d = 0; d < 448; d++) {
      int b = d / 64;
      uint8_t v = b == 0 ? 0x78 : b == 1 ? 0xF8 : b == 2 ? 0x00 : b == 3 ? 0x80 : b == 4 ? 0x7E
                  : b == 5 ? code_pat[d % 8] : 0x48;
      data[d] = v;
    }
    const uint16_t *kr = tmat16_row(&k, 0);
    for (int j = 0; j < 64; j++) {
      data[448 + 2 * j] = (uint8_t)(kr[448 + j] & 0xFF);
      data[448 + 2 * j + 1] = (uint8_t)(kr[448 + j] >> 8);
    }
    uint8_t *sc = page + 4 * 576 + 3 * 8;
    const uint8_t scales[8] = {119, 120, 105, 105, 127, 120, 105, 0};
    memcpy(sc, scales, 8);
    assert_cache_equal(&c, want, three_d ? "V4 hand record (3-D cache)" : "V4 hand record");
    free(want);
    tcache_free(&c);
    tmat16_free(&k);
    fb_free(&s.fb);
  }
}

static void sec2_mxfp8_record_hand_checked(void **state) {
  (void)state;
  tcache c;
  tcache_make(&c, DSV4KV_RECORD_MXFP8, 0, 4, 2, 0, POISON, 0);
  tmat16 k;
  tmat16_make(&k, 1, 512, 512);
  uint16_t *r = tmat16_row(&k, 0);
  /* 32-dim blocks */
  uint8_t code[512], sc[16];
  static const uint16_t pat[8] = {0x4040, 0x3F00, 0xC040, 0x37C0, 0x3700, 0xB700, 0x3E08, 0xBE18};
  static const uint8_t patc[8] = {0x7C, 0x68, 0xFC, 0x02, 0x00, 0x80, 0x58, 0xDA};
  for (int b = 0; b < 16; b++) {
    for (int i = 0; i < 32; i++) {
      int d = 32 * b + i;
      uint16_t v;
      uint8_t cd, s;
      switch (b) {
        case 0: v = 0x3F80; cd = 0x78; s = 119; break;        /* 1.0 */
        case 1: v = 0xC000; cd = 0xF8; s = 120; break;        /* -2.0 */
        case 2: v = 0x0000; cd = 0x00; s = 105; break;
        case 3: v = 0x8000; cd = 0x80; s = 105; break;
        case 4: v = 0x43E0; cd = 0x7E; s = 127; break;        /* 448 */
        case 5: v = pat[i % 8]; cd = patc[i % 8]; s = 120; break;
        case 6: v = 0x3580; cd = 0x48; s = 105; break;        /* 2^-20 */
        case 7: v = 0x43E1; cd = 0x76; s = 128; break;        /* 450 -> e=1, y=225 -> 224 */
        case 8: v = 0x7F7F; cd = 0x78; s = 247; break;        /* bf16 max -> e=120, y=255 -> 256 */
        case 9: v = 0x0008; cd = 0x00; s = 105; break;        /* 2^-130 (bf16 subnormal) */
        case 10: v = 0x3F40; cd = 0x7C; s = 118; break;       /* 0.75 -> e=-9, y=384 */
        default: v = 0xBF80; cd = 0xF8; s = 119; break;       /* -1.0 */
      }
      r[d] = v;
      code[d] = cd;
      sc[b] = s;
    }
  }
  int64_t sv[1] = {7}; /* last slot of the last page */
  tslots s;
  slots_make(&s, sv, 1);
  int64_t sk;
  assert_status(run_insert(&k, &c, &s, 0, &sk), DSV4KV_OK);
  uint8_t *want = (uint8_t *)malloc(c.nbytes);
  memset(want, POISON, c.nbytes);
  uint8_t *rec = want + 1 * c.page_stride + 3 * 528;
  memcpy(rec, code, 512);
  memcpy(rec + 512, sc, 16);
  assert_cache_equal(&c, want, "MXFP8 hand record");
  free(want);
  tcache_free(&c);
  tmat16_free(&k);
  fb_free(&s.fb);
}

static void sec2_nvfp4_record_hand_checked(void **state) {
  (void)state;
  tcache c;
  tcache_make(&c, DSV4KV_RECORD_NVFP4, 0, 2, 2, 0, POISON, 0);
  tmat16 k;
  tmat16_make(&k, 1, 512, 512);
  uint16_t *r = tmat16_row(&k, 0);
  uint8_t bytes[256], sc[32];
  static const uint16_t b2v[16] = {0x40C0, 0x4040, 0x3FC0, 0x3F00, 0xBF80, 0x0000, 0x8000, 0x3E80,
                                   0x3F40, 0x3FA0, 0x3FE0, 0x4020, 0x4060, 0x40A0, 0xC0A0, 0xBE80};
  /*  6, 3, 1.5, .5, -1, 0, -0, .25, .75, 1.25, 1.75, 2.5, 3.5, 5, -5, -.25 */
  static const uint8_t b2b[8] = {0x57, 0x13, 0x0A, 0x08, 0x22, 0x44, 0x66, 0x8E};
  for (int b = 0; b < 32; b++) {
    for (int i = 0; i < 16; i++) {
      uint16_t v;
      switch (b) {
        case 0: v = 0x3F80; break;                        /* 1.0: s=e4m3(1/6)=0x23 (0.171875), y=5.82 -> 6 */
        case 1: v = 0x40C0; break;                        /* 6.0: s=1 (0x38), y=6 */
        case 2: v = b2v[i]; break;                        /* amax 6: s=1, ties */
        case 3: v = 0x0000; break;                        /* zero block: s=2^-9 (0x01) */
        case 4: v = (i & 1) ? 0xC5C0 : 0x45C0; break;     /* +-6144: s=448 (0x7E), -> +-6 */
        case 5: v = 0xB980; break;                        /* -2^-12: s=2^-9, y=-0.125 -> -0 */
        case 6: v = 0x3C00; break;                        /* 2^-7: s=2^-9, y=4 */
        case 7: v = 0x3D00; break;                        /* 2^-5: s=3*2^-9 (0x03), y=5.33 -> 6 */
        case 8: v = 0x40CC; break;                        /* 6.375: t=1.0625 tie 1/1.125 -> 1 (0x38), y -> 6 */
        case 9: v = 0x3CF0; break;                        /* 15*2^-9: t=2.5*2^-9 tie -> 2*2^-9 (0x02), y=7.5 -> 6 */
        default: v = 0x3F80; break;
      }
      r[16 * b + i] = v;
    }
    for (int j = 0; j < 8; j++) {
      uint8_t by;
      switch (b) {
        case 0: by = 0x77; sc[b] = 0x23; break;
        case 1: by = 0x77; sc[b] = 0x38; break;
        case 2: by = b2b[j]; sc[b] = 0x38; break;
        case 3: by = 0x00; sc[b] = 0x01; break;
        case 4: by = 0xF7; sc[b] = 0x7E; break;
        case 5: by = 0x88; sc[b] = 0x01; break;
        case 6: by = 0x66; sc[b] = 0x01; break;
        case 7: by = 0x77; sc[b] = 0x03; break;
        case 8: by = 0x77; sc[b] = 0x38; break;
        case 9: by = 0x77; sc[b] = 0x02; break;
        default: by = 0x77; sc[b] = 0x23; break;
      }
      bytes[8 * b + j] = by;
    }
  }
  int64_t sv[1] = {2}; /* page 1, position 0 */
  tslots s;
  slots_make(&s, sv, 1);
  int64_t sk;
  assert_status(run_insert(&k, &c, &s, 0, &sk), DSV4KV_OK);
  uint8_t *want = (uint8_t *)malloc(c.nbytes);
  memset(want, POISON, c.nbytes);
  uint8_t *rec = want + 1 * c.page_stride + 0 * 288;
  memcpy(rec, bytes, 256);
  memcpy(rec + 256, sc, 32);
  assert_cache_equal(&c, want, "NVFP4 hand record");
  free(want);
  tcache_free(&c);
  tmat16_free(&k);
  fb_free(&s.fb);
}

/* V4 record in the FNUZ flavour (quantized against 224, e4m3fnuz codes, NUMERICS §10),
 * computed on paper. */
static void sec2_v4_fnuz_record_hand_checked(void **state) {
  (void)state;
  tcache c;
  tcache_make(&c, DSV4KV_RECORD_V4, 1, 2, 1, 0, POISON, 0);
  tmat16 k;
  tmat16_make(&k, 1, 512, 512);
  uint16_t *r = tmat16_row(&k, 0);
  uint8_t code[448];
  for (int d = 0; d < 448; d++) {
    int b = d / 64;
    switch (b) {
      case 0: r[d] = 0x3F80; code[d] = 0x78; break;  /* 1.0: e=-7 (1 <= 224/128), y=128 = 2^7 -> E=15 */
      case 1: r[d] = 0xC000; code[d] = 0xF8; break;  /* -2.0: e=-6, y=-128 */
      case 2: r[d] = 0x0000; code[d] = 0x00; break;  /* floor: 1e-4 <= 224*2^-21 -> e=-21 */
      case 3: r[d] = 0x8000; code[d] = 0x00; break;  /* -0 -> 0x00 (no negative zero) */
      case 4:                                        /* 224 and 240: amax 240 > 224 -> e=1 */
        r[d] = (d % 2) ? 0x4370 : 0x4360;            /* 120 = 1.875 x 2^6 -> 0x77; 112 -> 0x76 */
        code[d] = (d % 2) ? 0x77 : 0x76;
        break;
      case 5:                                        /* NaN among 1.0: NaN -> +224 (0x7E), never 0x7F */
        r[d] = (d % 2) ? 0x7FC0 : 0x3F80;
        code[d] = (d % 2) ? 0x7E : 0x78;
        break;
      default: r[d] = 0x3580; code[d] = 0x48; break; /* 2^-20 -> floor e=-21, y=2 -> E=9 */
    }
  }
  for (int j = 0; j < 64; j++) r[448 + j] = (uint16_t)(0x8000 + j);
  int64_t sv[1] = {1};
  tslots s;
  slots_make(&s, sv, 1);
  assert_status(run_insert(&k, &c, &s, 0, NULL), DSV4KV_OK);
  uint8_t *want = (uint8_t *)malloc(c.nbytes);
  memset(want, POISON, c.nbytes);
  memcpy(want + 576, code, 448);
  for (int j = 0; j < 64; j++) {
    want[576 + 448 + 2 * j] = (uint8_t)j;
    want[576 + 449 + 2 * j] = 0x80;
  }
  const uint8_t sc[8] = {120, 121, 106, 106, 128, 120, 106, 0};
  memcpy(want + 2 * 576 + 8, sc, 8);
  assert_cache_equal(&c, want, "V4 fnuz hand record");
  free(want);
  tcache_free(&c);
  tmat16_free(&k);
  fb_free(&s.fb);
}

/* Caches larger than 2^31 bytes: page_id * page_stride needs 64-bit
 * arithmetic.  The buffer is mapped lazily; only touched pages are real. */
static void sec3_large_page_ids_64bit_addressing(void **state) {
  (void)state;
  rng_t r;
  rng_seed(&r, 4);
  static const struct {
    dsv4kv_record rec;
    int64_t pages;
  } cases[] = {{DSV4KV_RECORD_MXFP8, 64000}, {DSV4KV_RECORD_V4, 58000}, {DSV4KV_RECORD_NVFP4, 117000}};
  for (size_t ci = 0; ci < 3; ci++) {
    int32_t bs = 64, rb = cases[ci].rec == DSV4KV_RECORD_V4 ? 584 : cases[ci].rec == DSV4KV_RECORD_MXFP8 ? 528 : 288;
    int64_t ps = (int64_t)bs * rb, pages = cases[ci].pages;
    assert_true(ps * (pages - 1) > ((int64_t)1 << 31));
    fbuf fb;
    uint8_t *cache = (uint8_t *)fb_alloc(&fb, (size_t)(ps * pages), 64); /* zero-filled by mmap */
    tview cv;
    tv_2d(&cv, cache, dt_u8(), pages, ps, ps);
    dsv4kv_cache_desc desc = {cases[ci].rec, DSV4KV_FP8_OCP, bs, 0, 0};
    tmat16 k;
    tmat16_make(&k, 4, 512, 512);
    for (int t = 0; t < 4; t++) gen_row(&r, tmat16_row(&k, t), 512, 0);
    int64_t p2 = ((int64_t)1 << 31) / ps + 1; /* first page past 2 GiB */
    int64_t sv[4] = {(pages - 1) * bs + 63, (pages - 1) * bs, p2 * bs + 5, (pages - 2) * bs + 17};
    tslots s;
    slots_make(&s, sv, 4);
    dsv4kv_options opt;
    memset(&opt, 0, sizeof(opt));
    assert_status(dsv4kv_quantize_and_insert_k_cache(&k.v.t, &cv.t, &desc, &s.v.t, &opt), DSV4KV_OK);
    uint8_t *page = (uint8_t *)malloc((size_t)ps);
    const int64_t check_pages[4] = {pages - 1, pages - 2, p2, p2 - 1};
    for (int pi = 0; pi < 4; pi++) {
      int64_t pg = check_pages[pi];
      memset(page, 0, (size_t)ps);
      for (int t = 0; t < 4; t++)
        if (sv[t] / bs == pg) ref_insert_token(cases[ci].rec, 0, tmat16_row(&k, t), page, bs, (int32_t)(sv[t] % bs));
      size_t first;
      if (count_diff(cache + pg * ps, page, (size_t)ps, &first))
        fail_msg("record %d: page %lld byte %zu got 0x%02x want 0x%02x", (int)cases[ci].rec, (long long)pg, first,
                 cache[pg * ps + (int64_t)first], page[first]);
    }
    /* nothing landed at the 32-bit-wrapped addresses */
    for (int t = 0; t < 4; t++) {
      uint64_t wrapped = (uint64_t)((sv[t] / bs) * ps) & 0xFFFFFFFFu;
      if ((int64_t)wrapped + ps <= ps * pages && wrapped != (uint64_t)((sv[t] / bs) * ps))
        assert_true(all_zero_check(cache + wrapped, (size_t)ps));
    }
    assert_true(fb_guards_ok(&fb));
    free(page);
    fb_free(&fb);
    tmat16_free(&k);
    fb_free(&s.fb);
  }
}

/* ===================================================== the record formats */

/* ===================================================== §3 slot edge cases */
static void sec3_first_and_last_slot_of_cache(void **state) {
  (void)state;
  rng_t r;
  rng_seed(&r, 5);
  for (size_t fi = 0; fi < NFORMATS; fi++) {
    const fmt_case *f = &kFormats[fi];
    tcache c;
    tcache_make(&c, f->rec, f->fnuz, 8, 3, 0, POISON, 0);
    uint8_t *init = (uint8_t *)malloc(c.nbytes);
    memcpy(init, c.data, c.nbytes);
    tmat16 k;
    tmat16_make(&k, 2, 512, 512);
    gen_row(&r, tmat16_row(&k, 0), 512, 0);
    gen_row(&r, tmat16_row(&k, 1), 512, 0);
    int64_t sv[2] = {3 * 8 - 1, 0};
    tslots s;
    slots_make(&s, sv, 2);
    int64_t sk;
    assert_status(run_insert(&k, &c, &s, 0, &sk), DSV4KV_OK);
    assert_int_equal(sk, 0);
    uint8_t *want = expected_cache(&c, init, &k, sv, 2);
    assert_cache_equal(&c, want, fmt_name(f));
    /* the last record really is at the end of the last page */
    uint8_t *last = c.data + 2 * c.page_stride;
    if (f->rec == DSV4KV_RECORD_V4) {
      assert_int_equal(last[8 * 576 + 7 * 8 + 7], 0); /* pad scale of position 7 */
      assert_int_equal(c.data[8 * 576 + 7], 0);       /* pad scale of position 0 */
    }
    free(want);
    free(init);
    tcache_free(&c);
    tmat16_free(&k);
    fb_free(&s.fb);
  }
}

static void sec3_minus_one_slots_write_nothing(void **state) {
  (void)state;
  rng_t r;
  rng_seed(&r, 6);
  for (size_t fi = 0; fi < NFORMATS; fi++) {
    const fmt_case *f = &kFormats[fi];
    tcache c;
    tcache_make(&c, f->rec, f->fnuz, 4, 2, 16, 0x3C, 0);
    tmat16 k;
    tmat16_make(&k, 6, 512, 512);
    for (int t = 0; t < 6; t++) gen_row(&r, tmat16_row(&k, t), 512, 0);
    int64_t sv[6] = {-1, -1, -1, -1, -1, -1};
    tslots s;
    slots_make(&s, sv, 6);
    int64_t sk;
    assert_status(run_insert(&k, &c, &s, 2, &sk), DSV4KV_OK);
    assert_int_equal(sk, 0);
    for (size_t i = 0; i < c.nbytes; i++)
      if (c.data[i] != 0x3C) fail_msg("%s: byte %zu changed to 0x%02x", fmt_name(f), i, c.data[i]);
    assert_true(fb_guards_ok(&c.fb));
    tcache_free(&c);
    tmat16_free(&k);
    fb_free(&s.fb);
  }
}

/* k has more rows than slot_mapping: rows T..T_k-1 are NaN and never read;
 * slot_mapping sits flush against a fence, so reading slot_mapping[T] faults. */
static void sec3_dp_padding_rows_not_read(void **state) {
  (void)state;
  rng_t r;
  rng_seed(&r, 8);
  for (size_t fi = 0; fi < NFORMATS; fi++) {
    const fmt_case *f = &kFormats[fi];
    tcache c;
    tcache_make(&c, f->rec, f->fnuz, 4, 3, 0, POISON, 0);
    uint8_t *init = (uint8_t *)malloc(c.nbytes);
    memcpy(init, c.data, c.nbytes);
    tmat16 k;
    tmat16_make(&k, 8, 512, 512);
    for (int t = 0; t < 5; t++) gen_row(&r, tmat16_row(&k, t), 512, 0);
    for (int t = 5; t < 8; t++) fill_u16(tmat16_row(&k, t), 512, 0x7FC0);
    int64_t sv[5] = {0, 1, 2, 3, 4};
    tslots s;
    slots_make(&s, sv, 5);
    int64_t sk;
    assert_status(run_insert(&k, &c, &s, 0, &sk), DSV4KV_OK);
    uint8_t *want = expected_cache(&c, init, &k, sv, 5);
    assert_cache_equal(&c, want, fmt_name(f));
    /* slots 5..11 (the ones rows 5..7 would hit if misread) still poison */
    free(want);
    free(init);
    tcache_free(&c);
    tmat16_free(&k);
    fb_free(&s.fb);
  }
}

static void sec3_empty_batch(void **state) {
  (void)state;
  for (size_t fi = 0; fi < NFORMATS; fi++) {
    const fmt_case *f = &kFormats[fi];
    for (int krows = 0; krows <= 4; krows += 4) {
      tcache c;
      tcache_make(&c, f->rec, f->fnuz, 4, 1, 0, POISON, 0);
      tmat16 k;
      tmat16_make(&k, krows, 512, 512);
      tslots s;
      slots_make(&s, NULL, 0);
      int64_t sk;
      assert_status(run_insert(&k, &c, &s, 0, &sk), DSV4KV_OK);
      assert_int_equal(sk, 0);
      for (size_t i = 0; i < c.nbytes; i++) assert_int_equal(c.data[i], POISON);
      assert_true(fb_guards_ok(&c.fb));
      tcache_free(&c);
      tmat16_free(&k);
      fb_free(&s.fb);
    }
  }
}

/* Many rows name the same slots: the later row wins, whatever the thread count. */
static void sec3_duplicate_slots_later_row_wins(void **state) {
  (void)state;
  rng_t r;
  rng_seed(&r, 10);
  for (size_t fi = 0; fi < NFORMATS; fi++) {
    const fmt_case *f = &kFormats[fi];
    int64_t T = 256;
    tmat16 k;
    tmat16_make(&k, T, 512, 512);
    int64_t *sv = (int64_t *)malloc((size_t)T * 8);
    for (int64_t t = 0; t < T; t++) {
      gen_row(&r, tmat16_row(&k, t), 512, (int)(t % 4));
      sv[t] = t % 5; /* slots 0..4; the last writer of slot j is row T-5+... */
    }
    tslots s;
    slots_make(&s, sv, T);
    uint8_t *first = NULL;
    const int threads[3] = {1, 2, 0};
    for (int ti = 0; ti < 3; ti++) {
      tcache c;
      tcache_make(&c, f->rec, f->fnuz, 4, 2, 0, POISON, 0);
      uint8_t *init = (uint8_t *)malloc(c.nbytes);
      memcpy(init, c.data, c.nbytes);
      int64_t sk;
      assert_status(run_insert(&k, &c, &s, threads[ti], &sk), DSV4KV_OK);
      /* expected: only the last row of each slot */
      uint8_t *want = (uint8_t *)malloc(c.nbytes);
      memcpy(want, init, c.nbytes);
      for (int64_t t = T - 5; t < T; t++)
        ref_insert_token(f->rec, f->fnuz, tmat16_row(&k, t), want + (sv[t] / 4) * c.page_stride, 4,
                         (int32_t)(sv[t] % 4));
      char what[80];
      snprintf(what, sizeof(what), "%s duplicates, num_threads %d", fmt_name(f), threads[ti]);
      assert_cache_equal(&c, want, what);
      if (!first) {
        first = (uint8_t *)malloc(c.nbytes);
        memcpy(first, c.data, c.nbytes);
      } else {
        assert_memory_equal(first, c.data, c.nbytes);
      }
      free(want);
      free(init);
      tcache_free(&c);
    }
    free(first);
    free(sv);
    tmat16_free(&k);
    fb_free(&s.fb);
  }
}

/* NaN / Inf are stored as the reference stores them (NUMERICS §5); with
 * check_nonfinite the call reports WARN_NONFINITE and the count. */
static void sec3_nonfinite_input(void **state) {
  (void)state;
  rng_t r;
  rng_seed(&r, 12);
  for (size_t fi = 0; fi < NFORMATS; fi++) {
    const fmt_case *f = &kFormats[fi];
    tmat16 k;
    tmat16_make(&k, 4, 512, 512);
    for (int t = 0; t < 4; t++) gen_row(&r, tmat16_row(&k, t), 512, 0);
    tmat16_row(&k, 0)[3] = 0x7FC0;   /* NaN in a finite block */
    tmat16_row(&k, 1)[100] = 0xFF80; /* -Inf */
    for (int d = 32; d < 64; d++) tmat16_row(&k, 2)[d] = 0xFFC1; /* a whole NaN block */
    tmat16_row(&k, 3)[7] = 0x7F81;   /* sNaN */
    int64_t nonfinite_expected = 1 + 1 + 32 + 1;
    int64_t sv[4] = {0, 1, 2, 3};
    tslots s;
    slots_make(&s, sv, 4);
    for (int check = 0; check < 2; check++) {
      tcache c;
      tcache_make(&c, f->rec, f->fnuz, 4, 1, 0, POISON, 0);
      uint8_t *init = (uint8_t *)malloc(c.nbytes);
      memcpy(init, c.data, c.nbytes);
      dsv4kv_options opt;
      memset(&opt, 0, sizeof(opt));
      int64_t nf = -1, sk = -1;
      opt.skipped = &sk;
      opt.nonfinite = &nf;
      opt.check_nonfinite = check;
      dsv4kv_status st = dsv4kv_quantize_and_insert_k_cache(&k.v.t, &c.v.t, &c.desc, &s.v.t, &opt);
      assert_status(st, check ? DSV4KV_WARN_NONFINITE : DSV4KV_OK);
      if (check) assert_int_equal(nf, nonfinite_expected);
      uint8_t *want = expected_cache(&c, init, &k, sv, 4);
      assert_cache_equal(&c, want, fmt_name(f));
      /* the all-NaN block stores +fp8_max everywhere (448 = 0x7E; fnuz 224 = 0x7E) */
      if (f->rec == DSV4KV_RECORD_MXFP8) {
        uint8_t *rec = c.data + 2 * 528;
        for (int d = 32; d < 64; d++) assert_int_equal(rec[d], 0x7E);
        assert_int_equal(rec[512 + 1], f->fnuz ? 106 : 105); /* 1e-4 <= 224 * 2^-21 */
      }
      free(want);
      free(init);
      tcache_free(&c);
    }
    tmat16_free(&k);
    fb_free(&s.fb);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(sec2_v4_record_hand_checked),
      cmocka_unit_test(sec2_mxfp8_record_hand_checked),
      cmocka_unit_test(sec2_nvfp4_record_hand_checked),
      cmocka_unit_test(sec2_v4_fnuz_record_hand_checked),
      cmocka_unit_test(sec3_first_and_last_slot_of_cache),
      cmocka_unit_test(sec3_large_page_ids_64bit_addressing),
      cmocka_unit_test(sec3_minus_one_slots_write_nothing),
      cmocka_unit_test(sec3_dp_padding_rows_not_read),
      cmocka_unit_test(sec3_empty_batch),
      cmocka_unit_test(sec3_duplicate_slots_later_row_wins),
      cmocka_unit_test(sec3_nonfinite_input),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
