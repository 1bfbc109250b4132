/* Cases of indexer_k_norm_rope_store (SPEC §6). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ops.h"

/* p[0]: record; p[1]: cache flags; p[2]: table dtypes; p[3]: variant bits */
enum { IX_FP8 = 0, IX_FP8_FNUZ = 1, IX_MXFP4 = 2 };
enum { T_CS_BF16 = 1, T_W_BF16 = 2 };
enum {
  I_SKIP = 1,      /* slots < -1 / past the cache, negative positions, RoPE rows past the table */
  I_BIG = 2,       /* enough tokens for several threads                                    */
  I_PAD = 4,       /* padded k rows, page stride, cos_sin rows                              */
  I_DUP = 8,       /* many rows per slot                                                    */
  I_CHECK = 16,    /* check_nonfinite                                                       */
  I_LEAD = 32,     /* byte_offset OPS_GUARD                                                 */
  I_DP = 64,       /* k_pre / positions longer than kv_slot_mapping                         */
  I_CR2 = 128,     /* compress_ratio 2                                                      */
  I_CR4 = 256,     /* compress_ratio 4                                                      */
  I_HUGE_W = 512,  /* norm weights near the fp32 max: Inf after the norm                    */
  I_ROWS = 1024,   /* rows of every kind (specials, subnormals, zeros, huge)                */
  I_3D = 2048,     /* cache as [pages, block_size, record_bytes]                            */
  I_MANY = 4096,   /* 3000 rows: past the CUDA backend's shared-memory duplicate scan       */
  I_NAN_CS = 8192, /* NaNs of every payload in a quarter of the cos_sin rows               */
  I_NAN_W = 16384, /* a NaN in the norm weight                                             */
  I_DECODE = 32768, /* 129-256 rows: the CUDA backend's register duplicate scan at its widest */
  I_GROUPED = 65536 /* rows that store no key name the writing rows' slots (a compressed      */
                    /* cache's mapping: a group's rows share its slot); writing rows distinct */
};

/* NaN bit patterns: quiet and signalling, either sign, the largest payloads
 * (whose rounding to bf16 can carry into the sign in a careless encoder). */
static const uint32_t nan_f32[] = {0x7FFFFFFFu, 0xFFFFFFFFu, 0x7F800001u, 0xFFBFFFFFu, 0x7FC00000u};
static const uint16_t nan_bf16[] = {0x7FFFu, 0xFFFFu, 0x7F81u, 0xFFBFu, 0x7FC0u};

/* Entry i of a 1-D / row fp32 or bf16 table set to a NaN picked by r. */
static void put_nan(ops_tensor *t, rng_t *r, int64_t row, int64_t i) {
  const int n = rng_below(r, 5);
  if (t->esz == 4) memcpy(ops_at(t, t->host, row, i, 0), &nan_f32[n], 4);
  else memcpy(ops_at(t, t->host, row, i, 0), &nan_bf16[n], 2);
}

static void fill_tables(rng_t *r, ops_tensor *cs, ops_tensor *w, int v) {
  for (int64_t p = 0; p < cs->shape[0]; p++)
    for (int j = 0; j < 32; j++) {
      double ang = (double)p * pow(10000.0, -(double)j / 32.0);
      float c = (float)cos(ang), s = (float)sin(ang);
      if (cs->esz == 4) {
        *(float *)ops_at(cs, cs->host, p, j, 0) = c;
        *(float *)ops_at(cs, cs->host, p, 32 + j, 0) = s;
      } else {
        *(uint16_t *)ops_at(cs, cs->host, p, j, 0) = ref_f32_to_bf16(c);
        *(uint16_t *)ops_at(cs, cs->host, p, 32 + j, 0) = ref_f32_to_bf16(s);
      }
    }
  for (int i = 0; i < 128; i++) {
    float x = (v & I_HUGE_W) ? (float)(3e38 * (0.5 + rng_unit(r) / 2)) : (float)(0.5 + rng_unit(r));
    if (w->esz == 4) *(float *)ops_at(w, w->host, i, 0, 0) = x;
    else *(uint16_t *)ops_at(w, w->host, i, 0, 0) = ref_f32_to_bf16(x);
  }
  if (v & I_NAN_W) put_nan(w, r, 0, rng_below(r, 128));
  if (v & I_NAN_CS)
    for (int64_t p = 0; p < cs->shape[0]; p++)
      if (rng_below(r, 4) == 0) put_nan(cs, r, p, rng_below(r, 64));
}

static void fill_positions(ops_tensor *pos, rng_t *r, int64_t rows, int v) {
  for (int64_t t = 0; t < pos->shape[0]; t++) {
    int64_t p = ops_rr(r, 0, rows - 1);
    if ((v & I_SKIP) && rng_below(r, 6) == 0) {
      static const int64_t bad[] = {-1, -4, INT64_MIN, INT64_MAX, 0}; /* 0: past the table */
      int64_t b = bad[rng_below(r, 5)];
      p = b ? b : rows + ops_rr(r, 0, 8);
    }
    OPS_I64(pos, t) = p;
  }
}

static void gen_indexer(ops_inst *in, rng_t *r, const ops_case *c) {
  int rk = c->p[0], v = c->p[3];
  dsv4kv_record rec = rk == IX_MXFP4 ? DSV4KV_RECORD_INDEXER_MXFP4 : DSV4KV_RECORD_INDEXER_FP8;
  uint32_t flags = (uint32_t)c->p[1];
  static const int32_t bss[] = {1, 5, 16, 64}, tiled_bss[] = {16, 32, 64};
  int32_t bs = (flags & DSV4KV_CACHE_TILED) ? tiled_bss[rng_below(r, 3)] : (v & I_BIG) ? 16 : bss[rng_below(r, 4)];
  int64_t T = (v & I_MANY) ? 3000 : (v & I_BIG) ? 300 : (v & I_DECODE) ? 256 : ops_rr(r, 10, 40);
  if ((v & I_DECODE) && rng_below(r, 2)) T = ops_rr(r, 129, 255); /* else the widest, exactly */
  int64_t Tk = T + ((v & I_DP) ? 3 : 0);
  int64_t pages = (T + 8) / bs + 2, rows = 97, pad = (v & I_PAD) ? 8 : 0;
  int64_t rb = rec == DSV4KV_RECORD_INDEXER_FP8 ? 132 : 68; /* SPEC §6 widths */
  in->lead = (v & I_LEAD) ? OPS_GUARD : 0;
  in->check_nonfinite = (v & I_CHECK) != 0;
  in->desc = (dsv4kv_cache_desc){rec, rk == IX_FP8_FNUZ ? DSV4KV_FP8_FNUZ : DSV4KV_FP8_OCP, bs, 0, flags};
  ops_tensor *k = ops_new2(in, "k_pre", dt_bf16(), Tk, 128, pad, 0);
  int64_t ts[1] = {Tk}, ss[1] = {T}, ws[1] = {128};
  ops_tensor *pos = ops_new(in, "positions", dt_i64(), 1, ts, NULL, 0);
  DLDataType cdt = (c->p[2] & T_CS_BF16) ? dt_bf16() : dt_f32(), wdt = (c->p[2] & T_W_BF16) ? dt_bf16() : dt_f32();
  ops_tensor *cs = ops_new2(in, "cos_sin_cache", cdt, rows, 64, pad, 0);
  ops_tensor *w = ops_new(in, "rms_norm_weight", wdt, 1, ws, NULL, 0);
  ops_tensor *cache;
  if (v & I_3D) {
    int64_t shape[3] = {pages, bs, rb}, st[3] = {bs * rb + pad, rb, 1};
    cache = ops_new(in, "k_cache", dt_u8(), 3, shape, pad ? st : NULL, 1);
  } else {
    cache = ops_new2(in, "k_cache", dt_u8(), pages, bs * rb, pad, 1);
  }
  ops_tensor *slots = ops_new(in, "kv_slot_mapping", dt_i64(), 1, ss, NULL, 0);
  for (int64_t t = 0; t < Tk; t++) {
    static const int kinds[] = {ROW_NORMAL, ROW_SPECIAL, ROW_SUBNORMAL, ROW_ZERO, ROW_HUGE};
    int kind = (v & I_ROWS) ? kinds[rng_below(r, 5)] : ROW_NORMAL;
    gen_k_row(r, ops_at(k, k->host, t, 0, 0), 128, rec, 0, kind);
  }
  fill_positions(pos, r, rows, v);
  fill_tables(r, cs, w, v);
  int64_t *sl = (int64_t *)ops_at(slots, slots->host, 0, 0, 0);
  gen_slots(r, sl, T, pages * bs, (v & I_DUP) ? 2 : (v & I_SKIP) ? 1 : 0);
  int32_t cr = (v & I_CR4) ? 4 : (v & I_CR2) ? 2 : 1;
  if (v & I_GROUPED)
    for (int64_t t = 0; t < T; t++) {
      const int64_t p = OPS_I64(pos, t);
      if (!(p >= 0 && p % cr == cr - 1 && (p / cr) * cr < rows) && rng_below(r, 4)) sl[t] = sl[ops_rr(r, 0, T - 1)];
    }
  if (rng_below(r, 2)) rng_bytes(r, cache->host, cache->n); /* old contents (else poison) */
  static const float eps[] = {1e-6f, 1e-5f, 0.5f};
  in->call.op = OPCALL_INDEXER;
  in->call.u.indexer =
      (opcall_indexer){&k->t, &pos->t, &cs->t, &w->t, eps[rng_below(r, 3)], &cache->t, &in->desc, &slots->t, cr};
}

static void ref_indexer(ops_inst *in) {
  const opcall_indexer *a = &in->call.u.indexer;
  ops_tensor *k = &in->x[0], *pos = &in->x[1], *cs = &in->x[2], *w = &in->x[3], *cache = &in->x[4];
  ops_tensor *slots = &in->x[5];
  int64_t *p = ops_pack_i64(pos), *s = ops_pack_i64(slots), nf;
  float *csf = ops_pack_f32(cs), *wf = ops_pack_f32(w);
  ref_indexer_call(ops_at(k, k->init, 0, 0, 0), k->st[0], p, s, slots->shape[0], csf, cs->shape[0], wf, a->eps,
                   in->desc.record, in->desc.fp8 == DSV4KV_FP8_FNUZ, in->desc.flags, a->compress_ratio,
                   ops_ref_cache(in, cache, cache->want), &in->want_skipped, &nf);
  in->want_nonfinite = in->check_nonfinite ? nf : 0;
  free(p), free(s), free(csf), free(wf);
}

void ops_register_indexer(ops_list *l) {
  static const char *const rn[] = {"fp8", "fp8_fnuz", "mxfp4"};
  static const char *const fn[] = {"", "_mx", "_tiled", "_mx_tiled"};
  static const char *const tn[] = {"cs_f32_w_f32", "cs_bf16_w_f32", "cs_f32_w_bf16", "cs_bf16_w_bf16"};
  for (int rk = 0; rk < 3; rk++)
    for (int f = 0; f < (rk == IX_MXFP4 ? 1 : 4); f++) /* MXFP4 takes no flags */
      for (int t = 0; t < 4; t++)
        ops_add(l, OPCALL_INDEXER, gen_indexer, ref_indexer, rk, f, t, t == 3 ? I_CR2 : 0, "indexer_%s%s_%s%s", rn[rk],
                fn[f], tn[t], t == 3 ? "_cr2" : "");
  static const struct { int f, v; const char *n; } vs[] = {
      {0, I_SKIP | I_CHECK, "skips"},
      {0, I_DUP | I_PAD | I_LEAD, "dup_slots_padded"},
      {0, I_ROWS | I_CHECK | I_DP, "special_rows"},
      {0, I_HUGE_W | I_CHECK, "huge_weights"},
      {0, I_CR4 | I_SKIP | I_3D, "cr4_skips_3d"},
      {3, I_BIG | I_SKIP | I_ROWS | I_CHECK, "mx_tiled_big_skips"},
      {0, I_BIG | I_DUP | I_CR2, "big_dup_cr2"},
      {0, I_DECODE | I_DUP | I_PAD, "decode_dup"},
      {0, I_DECODE | I_DUP | I_CR2 | I_SKIP, "decode_dup_cr2_skips"},
      {1, I_BIG | I_MANY | I_DUP | I_SKIP, "mx_many_dup_skips"},
      {0, I_BIG | I_MANY | I_DUP | I_CR4, "many_dup_cr4"},
      {0, I_BIG | I_MANY, "many_distinct"}, /* (ops_registry --distinct-slots promises these) */
      {0, I_BIG | I_MANY | I_CR4, "many_distinct_cr4"},
      {0, I_BIG | I_MANY | I_CR4 | I_GROUPED | I_SKIP, "many_grouped_cr4_skips"},
      {0, I_DECODE | I_CR4 | I_GROUPED, "decode_grouped_cr4"}};
  for (int rk = 0; rk < 3; rk++)
    for (size_t i = 0; i < sizeof vs / sizeof vs[0]; i++) /* MXFP4: the same without flags */
      ops_add(l, OPCALL_INDEXER, gen_indexer, ref_indexer, rk, rk == IX_MXFP4 ? 0 : vs[i].f, 1, vs[i].v,
              "indexer_%s_%s", rn[rk],
              rk == IX_MXFP4 && vs[i].f ? ((vs[i].v & I_MANY) ? "many_dup_skips" : "big_skips") : vs[i].n);
  for (int rk = 0; rk < 3; rk++) /* NaN tables as fp32 and as bf16 */
    for (int t = 0; t < 4; t += 3)
      for (int w = 0; w < 2; w++)
        ops_add(l, OPCALL_INDEXER, gen_indexer, ref_indexer, rk, 0, t, (w ? I_NAN_W : I_NAN_CS) | I_CHECK | (t ? I_BIG : 0),
                "indexer_%s_nan_%s_%s", rn[rk], w ? "weight" : "cos_sin", tn[t]);
}
