/*
 * SPEC §3 -> §4 round trips through the library: rows inserted, then
 * gathered back, within each format's error bound (and, for FNUZ, equal to
 * the reference decode of the reference record).  Moved out of
 * test_insert.c; the byte-exact checks of each op live there, in
 * test_gather.c and in the op registry (tests/ops/).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "support/support.h"

#define POISON 0xA5



static dsv4kv_status gather_all(tcache *c, uint16_t *out, int64_t n_tok) {
  /* one request, block table = pages in order, seq_len = n_tok */
  int32_t bt[64];
  int64_t P = (n_tok + c->bs - 1) / c->bs;
  for (int64_t i = 0; i < P; i++) bt[i] = (int32_t)i;
  int32_t seq = (int32_t)n_tok;
  tview vo, vs, vb;
  int64_t os[3] = {1, n_tok, 512};
  tv_init(&vo, out, dt_bf16(), 3, os, NULL);
  tv_1d(&vs, &seq, dt_i32(), 1);
  tv_2d(&vb, bt, dt_i32(), 1, P, P);
  return dsv4kv_dequantize_and_gather_k_cache(&vo.t, &c->v.t, &c->desc, &vs.t, NULL, &vb.t, 0, NULL);
}

static void round_trip(const fmt_case *f, uint64_t seed) {
  rng_t r;
  rng_seed(&r, seed);
  int32_t bs = 8;
  int64_t T = 32;
  tcache c;
  tcache_make(&c, f->rec, f->fnuz, bs, T / bs, 0, POISON, 0);
  tmat16 k;
  tmat16_make(&k, T, 512, 512);
  int64_t sv[32];
  for (int64_t t = 0; t < T; t++) {
    gen_row(&r, tmat16_row(&k, t), 512, t % 3 == 2 ? 3 : (int)(t % 2));
    sv[t] = t;
  }
  tslots s;
  slots_make(&s, sv, T);
  assert_status(run_insert(&k, &c, &s, 0, NULL), DSV4KV_OK);
  if (f->fnuz) {
    /* 0x80 (NaN in e4m3fnuz) is never produced for finite input */
    for (int64_t t = 0; t < T; t++) {
      const uint8_t *page = c.data + (t / bs) * c.page_stride;
      int p = (int)(t % bs);
      const uint8_t *data = f->rec == DSV4KV_RECORD_V4 ? page + p * 576 : page + p * 528;
      int n = f->rec == DSV4KV_RECORD_V4 ? 448 : 512;
      for (int d = 0; d < n; d++)
        if (data[d] == 0x80) fail_msg("%s: token %lld dim %d stored 0x80", fmt_name(f), (long long)t, d);
    }
  }
  uint16_t *out = (uint16_t *)malloc((size_t)T * 512 * 2);
  fill_u16(out, (size_t)T * 512, 0xA5A5);
  assert_status(gather_all(&c, out, T), DSV4KV_OK);
  int bw = f->rec == DSV4KV_RECORD_V4 ? 64 : f->rec == DSV4KV_RECORD_MXFP8 ? 32 : 16;
  for (int64_t t = 0; t < T; t++) {
    const uint16_t *x = tmat16_row(&k, t);
    for (int d = 0; d < 512; d++) {
      double xv = bf16_val(x[d]);
      double ov = bf16_val(out[t * 512 + d]);
      if (f->rec == DSV4KV_RECORD_V4 && d >= 448) {
        if (out[t * 512 + d] != x[d]) fail_msg("V4 RoPE dim %d not copied raw", d);
        continue;
      }
      double amax = 0;
      int b0 = d / bw * bw;
      for (int i = b0; i < b0 + bw; i++) amax = fmax(amax, fabs((double)bf16_val(x[i])));
      double bound;
      if (f->rec == DSV4KV_RECORD_NVFP4)
        /* scales clamp at 448: blocks with amax > 6 * 448 saturate */
        bound = 0.2 * fmin(amax, 2688.0) + fmax(0.0, fabs(xv) - 2688.0) + ldexp(1.0, -9);
      else
        bound = fabs(xv) / 16.0 + fmax(amax, 1e-4) / (f->fnuz ? 224.0 * 1024 : 448.0 * 512) * 2.0;
      bound += fabs(xv) * ldexp(1.0, -8);
      if (!(fabs(ov - xv) <= bound))
        fail_msg("%s round trip token %lld dim %d: x=%a out=%a bound=%a", fmt_name(f), (long long)t, d, xv,
                 ov, bound);
    }
  }
  free(out);
  tcache_free(&c);
  tmat16_free(&k);
  fb_free(&s.fb);
}

static void sec3_round_trip_error_bounds(void **state) {
  (void)state;
  for (size_t fi = 0; fi < NFORMATS; fi++) round_trip(&kFormats[fi], 100 + fi);
}

/* FNUZ flavour: insert then gather through the FNUZ desc; no 0x80 ever; the
 * gathered values equal the reference decode of the reference record. */
static void sec3_fnuz_round_trip_exact(void **state) {
  (void)state;
  rng_t r;
  rng_seed(&r, 200);
  const dsv4kv_record recs[2] = {DSV4KV_RECORD_V4, DSV4KV_RECORD_MXFP8};
  for (int ri = 0; ri < 2; ri++) {
    tcache c;
    tcache_make(&c, recs[ri], 1, 4, 2, 0, POISON, 0);
    tmat16 k;
    tmat16_make(&k, 8, 512, 512);
    int64_t sv[8];
    for (int t = 0; t < 8; t++) {
      gen_row(&r, tmat16_row(&k, t), 512, t % 4);
      sv[t] = t;
    }
    /* values that round to zero of either sign, and saturation candidates */
    tmat16_row(&k, 0)[1] = 0x8000;
    tmat16_row(&k, 0)[2] = bf16_of(-1e-30);
    tslots s;
    slots_make(&s, sv, 8);
    assert_status(run_insert(&k, &c, &s, 0, NULL), DSV4KV_OK);
    uint16_t out[8 * 512];
    assert_status(gather_all(&c, out, 8), DSV4KV_OK);
    for (int t = 0; t < 8; t++) {
      uint8_t page[4 * 584];
      memset(page, 0, sizeof(page));
      ref_insert_token(recs[ri], 1, tmat16_row(&k, t), page, 4, t % 4);
      uint16_t want[512];
      ref_decode_token(recs[ri], 1, page, 4, t % 4, want);
      for (int d = 0; d < 512; d++)
        if (want[d] != out[t * 512 + d])
          fail_msg("fnuz %s token %d dim %d: got 0x%04x want 0x%04x", ri ? "MXFP8" : "V4", t, d,
                   out[t * 512 + d], want[d]);
    }
    assert_int_equal(c.data[0 * 576 + 1], 0x00); /* -0 -> 0x00 in fnuz */
    tcache_free(&c);
    tmat16_free(&k);
    fb_free(&s.fb);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(sec3_round_trip_error_bounds),
      cmocka_unit_test(sec3_fnuz_round_trip_exact),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
