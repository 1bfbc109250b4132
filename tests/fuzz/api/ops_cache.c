/*
 * The harness's drivers of the cache ops: quantize_and_insert_k_cache,
 * dequantize_and_gather_k_cache and indexer_k_norm_rope_store (random,
 * sometimes mutated arguments; the bytes SPEC lets each write; skip counts).
 */
#include <math.h>

#include "fuzz.h"

/* ------------------------------------------------------------------------ */
/* Op 1: quantize_and_insert_k_cache                                          */
/* ------------------------------------------------------------------------ */
struct ins_ctx { Ten *k, *slots; CacheCfg c; const dsv4kv_cache_desc *desc; };
static dsv4kv_status call_insert(void *p, const dsv4kv_options *o) {
  struct ins_ctx *c = p;
  opcall_insert a = {D(c->k), D(c->c.t), c->desc, D(c->slots)};
  return opcall_insert_run(&a, o);
}
void fz_op_insert(Src *g) {
  fz_g_op = "quantize_and_insert_k_cache";
  struct ins_ctx c;
  fz_mk_cache(g, &c.c, 0, 1);
  c.desc = fz_cache_desc(g, &c.c);
  int64_t Tk = BIG(rr(g, 0, 6), 128, 400), T = pct(g, 80) ? rr(g, fz_g_big ? 128 : 0, Tk) : BIG(rr(g, 0, 8), 0, 400);
  int64_t ks[2] = {Tk, 512};
  c.k = fz_mkt(g, "k", DT_BF16, 2, ks, F_LASTC);
  fz_fill(c.k, g, fz_gen_bf16, NULL);
  int64_t ss[1] = {T};
  c.slots = fz_mkt(g, "slot_mapping", DT_I64, 1, ss, 0);
  if (c.slots->shape[0] > c.k->shape[0] && c.k->shape[0] >= 0 && c.k->t.ndim >= 1)
    expect_soft("T %lld > T_k %lld", (long long)c.slots->shape[0], (long long)c.k->shape[0]);
  int64_t nslots = c.c.pages * (c.c.d.block_size > 0 ? c.c.d.block_size : 1);
  struct range rg = {-2, nslots + 1, 1, {-1, 0, nslots - 1, nslots}};
  fz_fill(c.slots, g, fz_gen_range, &rg);
  /* what the spec lets it write */
  Ten *K = c.c.t;
  allow_none(K);
  int64_t exp_skip = 0;
  if (!fz_g_mutated) {
    int64_t bs = c.c.d.block_size;
    for (int64_t t = 0; t < T; t++) {
      int64_t s = geti(c.slots, t, 0);
      if (s == -1) continue;
      if (s < 0 || s >= nslots) { exp_skip++; continue; }
      int64_t base = (s / bs) * c.c.page_stride, p = s % bs;
      switch (c.c.d.record) {
        case DSV4KV_RECORD_V4: fz_allow(K, base + p * 576, 576); fz_allow(K, base + bs * 576 + p * 8, 8); break;
        case DSV4KV_RECORD_MXFP8: fz_allow(K, base + p * 528, 528); break;
        default: fz_allow(K, base + p * 288, 288); break;
      }
    }
  } else {
    memcpy(K->allowed, K->mask, K->nbytes);
  }
  static const char *const names[] = {"k", "slot_mapping", "k_cache", "cache", "block_size", NULL};
  Ten *outs[1] = {K};
  Res r;
  fz_exec3(call_insert, &c, outs, 1, names, (int)ru(g, 2), &r);
  if (!fz_g_mutated && !dsv4kv_is_error(r.st) && r.skipped != exp_skip)
    fz_issue("skipped-value", "insert skipped %lld, spec says %lld", (long long)r.skipped, (long long)exp_skip);
  if (!fz_g_mutated && dsv4kv_is_error(r.st))
    fz_issue("valid-call-rejected", "insert: %s: %s", dsv4kv_status_string(r.st), r.msg);
  fz_res_free(&r);
}

/* ------------------------------------------------------------------------ */
/* Op 2: dequantize_and_gather_k_cache                                        */
/* ------------------------------------------------------------------------ */
struct ga_ctx { Ten *out, *sl, *gl, *bt; CacheCfg c; const dsv4kv_cache_desc *desc; int64_t offset; };
static dsv4kv_status call_gather(void *p, const dsv4kv_options *o) {
  struct ga_ctx *c = p;
  opcall_gather a = {D(c->out), D(c->c.t), c->desc, D(c->sl), c->gl ? D(c->gl) : NULL, D(c->bt), c->offset};
  return opcall_gather_run(&a, o);
}
void fz_op_gather(Src *g) {
  fz_g_op = "dequantize_and_gather_k_cache";
  struct ga_ctx c;
  fz_mk_cache(g, &c.c, 0, 0);
  c.desc = fz_cache_desc(g, &c.c);
  int64_t R = rr(g, 0, 4), Rout = R + (pct(g, 30) ? rr(g, 1, 2) : 0), maxt = BIG(rr(g, 0, 6), 64, 300), maxp = BIG(rr(g, 0, 4), 1, 40);
  int64_t Rbt = R + (pct(g, 30) ? rr(g, 1, 2) : 0);
  if (pct(g, 3) && R > 0) { Rout = R - 1; expect_soft("out rows < R"); }
  if (pct(g, 3) && R > 0) { Rbt = R - 1; expect_soft("block_table rows < R"); }
  int64_t os[3] = {Rout, maxt, 512};
  c.out = fz_mkt(g, "out", DT_BF16, 3, os, F_OUT | F_LASTC);
  int64_t ss[1] = {R};
  c.sl = fz_mkt(g, "seq_lens", DT_I32, 1, ss, 0);
  int bs = c.c.d.block_size > 0 ? c.c.d.block_size : 1;
  int64_t lim = fz_g_slow ? INT32_MAX : 4096;
  struct range rs = {0, (int64_t)bs * maxp + 2, 0, {0}};
  fz_fill(c.sl, g, fz_gen_range, &rs);
  c.gl = NULL;
  if (pct(g, 70)) {
    int64_t gs[1] = {R};
    if (pct(g, 2)) { gs[0] = R + 1; expect_soft("gather_lens shape"); }
    c.gl = fz_mkt(g, "gather_lens", DT_I32, 1, gs, F_OPTIONAL);
    struct range rg = {-1, fz_g_big ? 300 : 8, 0, {0}};
    fz_fill(c.gl, g, fz_gen_range, &rg);
  }
  /* keep the total work bounded unless FUZZ_SLOW */
  for (int w = 0; w < 2; w++) {
    Ten *L = w ? c.gl : c.sl;
    if (!L || L->t.ndim != 1 || L->elem != 4) continue;
    for (int64_t r = 0; r < L->shape[0]; r++)
      if (geti(L, r, 0) > lim) { seti(L, r, 0, lim); resnap(L); }
  }
  int64_t bts[2] = {Rbt, maxp};
  c.bt = fz_mkt(g, "block_table", DT_I32, 2, bts, 0);
  struct range rb = {-1, c.c.pages, 1, {0, c.c.pages - 1, c.c.pages, -1}};
  fz_fill(c.bt, g, fz_gen_range, &rb);
  int o = (int)ru(g, 100);
  static const int64_t offs[] = {-1, INT64_MIN, INT64_MAX, INT64_MAX - 1, INT64_MAX - 2, (int64_t)1 << 62,
                                 INT32_MAX, (int64_t)INT32_MAX + 1, ((int64_t)1 << 63) / 512};
  c.offset = o < 85 ? rr(g, 0, 5) : offs[ru(g, 9)];
  /* FUZZ_AVOID_KNOWN: no offset + i past INT64_MAX (finding F1) */
  if (fz_g_avoid_offset && c.offset > INT64_MAX - ((int64_t)1 << 32)) c.offset = (int64_t)1 << 62;
  if (c.offset < 0) fz_expect_err("offset %lld", (long long)c.offset);
  snprintf(fz_g_scalars + strlen(fz_g_scalars), sizeof fz_g_scalars - strlen(fz_g_scalars), "offset=%lld", (long long)c.offset);
  /* spec: only out[r][offset .. offset+L) rows, r < R, row < max_tokens */
  int64_t exp_skip = 0;
  if (!fz_g_mutated) {
    allow_none(c.out);
    for (int64_t r = 0; r < R; r++) {
      int64_t seq = geti(c.sl, r, 0);
      int64_t L = c.gl ? geti(c.gl, r, 0) : seq;
      if (L < 0) { exp_skip++; continue; }
      /* i with row >= max_tokens or pos < 0 are only counted (L may be 2^31) */
      int64_t ilo = L > seq ? L - seq : 0;
      __int128 rl = (__int128)maxt - c.offset;
      int64_t ihi = rl <= 0 ? 0 : rl < L ? (int64_t)rl : L;
      if (ilo > ihi) ilo = ihi;
      exp_skip += ilo + (L - ihi);
      for (int64_t i = ilo; i < ihi; i++) {
        __int128 row = (__int128)c.offset + i;
        int64_t pos = seq - L + i;
        if (pos / bs >= maxp) { exp_skip++; continue; }
        int64_t page = geti(c.bt, r, pos / bs);
        if (page < 0 || page >= c.c.pages) { exp_skip++; continue; }
        for (int d = 0; d < 512; d++) fz_allow(c.out, (at(c.out, r, (int64_t)row, d) - c.out->data), 2);
      }
    }
  }
  static const char *const names[] = {"out", "k_cache", "cache", "seq_lens", "gather_lens", "block_table", "offset",
                                      "block_size", NULL};
  Ten *outs[1] = {c.out};
  Res r;
  fz_exec3(call_gather, &c, outs, 1, names, (int)ru(g, 2), &r);
  if (!fz_g_mutated && !dsv4kv_is_error(r.st) && r.skipped != exp_skip)
    fz_issue("skipped-value", "gather skipped %lld, spec says %lld", (long long)r.skipped, (long long)exp_skip);
  if (!fz_g_mutated && dsv4kv_is_error(r.st))
    fz_issue("valid-call-rejected", "gather: %s: %s", dsv4kv_status_string(r.st), r.msg);
  fz_res_free(&r);
}

/* ------------------------------------------------------------------------ */
/* Op 6: indexer_k_norm_rope_store                                            */
/* ------------------------------------------------------------------------ */
struct ix_ctx { Ten *k, *pos, *cs, *w, *slots; CacheCfg c; const dsv4kv_cache_desc *desc; float eps; int32_t cr; };
static dsv4kv_status call_ix(void *p, const dsv4kv_options *o) {
  struct ix_ctx *c = p;
  opcall_indexer a = {D(c->k), D(c->pos), D(c->cs), D(c->w), c->eps, D(c->c.t), c->desc, D(c->slots), c->cr};
  return opcall_indexer_run(&a, o);
}
static int64_t tiled_off(int64_t p, int64_t d) {
  return (p / 16) * 16 * 128 + (d / 16) * 256 + (p % 16) * 16 + d % 16;
}
void fz_op_indexer(Src *g) {
  fz_g_op = "indexer_k_norm_rope_store";
  struct ix_ctx c;
  fz_mk_cache(g, &c.c, 1, 1);
  c.desc = fz_cache_desc(g, &c.c);
  int64_t Tk = BIG(rr(g, 0, 6), 256, 500), T = pct(g, 85) ? rr(g, fz_g_big ? 256 : 0, Tk) : BIG(rr(g, 0, 8), 0, 500);
  int64_t ks[2] = {Tk, 128};
  c.k = fz_mkt(g, "k_pre", DT_BF16, 2, ks, F_LASTC);
  if (T > c.k->shape[0] && c.k->shape[0] >= 0 && c.k->t.ndim >= 1) expect_soft("T > T_k");
  fz_fill(c.k, g, fz_gen_bf16, NULL);
  int64_t rows = rr(g, 0, 12);
  int64_t ps[1] = {T + (pct(g, 20) ? 1 : 0)};
  if (pct(g, 3) && T > 0) { ps[0] = T - 1; expect_soft("positions short"); }
  c.pos = fz_mkt(g, "positions", DT_I64, 1, ps, 0);
  struct range rp = {-2, rows + 2, 0, {0}};
  fz_fill(c.pos, g, fz_gen_range, &rp);
  int cs_f32 = pct(g, 50);
  int64_t css[2] = {rows, 64};
  c.cs = fz_mkt(g, "cos_sin_cache", cs_f32 ? DT_F32 : DT_BF16, 2, css, F_LASTC);
  fz_fill(c.cs, g, c.cs->elem == 4 ? fz_gen_f32 : fz_gen_bf16, NULL);
  int w_f32 = pct(g, 50);
  int64_t wsz[1] = {128};
  c.w = fz_mkt(g, "rms_norm_weight", w_f32 ? DT_F32 : DT_BF16, 1, wsz, 0);
  fz_fill(c.w, g, c.w->elem == 4 ? fz_gen_f32 : fz_gen_bf16, NULL);
  int64_t ss[1] = {T};
  c.slots = fz_mkt(g, "kv_slot_mapping", DT_I64, 1, ss, 0);
  int64_t nslots = c.c.pages * (c.c.d.block_size > 0 ? c.c.d.block_size : 1);
  struct range rs = {-2, nslots + 1, 1, {-1, 0, nslots - 1, nslots}};
  fz_fill(c.slots, g, fz_gen_range, &rs);
  static const float epss[] = {1e-6f, 0.0f, -0.0f, 1e-30f, 3.4e38f, 1.0f};
  c.eps = epss[ru(g, 6)];
  if (pct(g, 3)) {
    static const float bad[] = {-1e-6f, INFINITY, -INFINITY, NAN, -NAN};
    c.eps = bad[ru(g, 5)];
    fz_expect_err("eps %g", (double)c.eps);
  }
  c.cr = pct(g, 90) ? (int32_t)rr(g, 1, 4) : (pct(g, 50) ? INT32_MAX : (int32_t)rr(g, 5, 100));
  if (pct(g, 3)) {
    static const int32_t bad[] = {0, -1, INT32_MIN};
    c.cr = bad[ru(g, 3)];
    fz_expect_err("compress_ratio %d", c.cr);
  }
  snprintf(fz_g_scalars + strlen(fz_g_scalars), sizeof fz_g_scalars - strlen(fz_g_scalars), "eps=%g compress_ratio=%d",
           (double)c.eps, c.cr);
  Ten *K = c.c.t;
  int64_t exp_skip = 0;
  if (!fz_g_mutated) {
    allow_none(K);
    int64_t bs = c.c.d.block_size, cr = c.cr;
    for (int64_t t = 0; t < T; t++) {
      int64_t s = geti(c.slots, t, 0);
      if (s == -1) continue;
      if (s < 0 || s >= nslots) { exp_skip++; continue; }
      int64_t pos = geti(c.pos, t, 0);
      if (pos < 0) { exp_skip++; continue; }
      if (pos % cr != cr - 1) continue;
      if ((pos / cr) * cr >= rows) { exp_skip++; continue; }
      int64_t base = (s / bs) * c.c.page_stride, p = s % bs;
      if (c.c.d.record == DSV4KV_RECORD_INDEXER_FP8) {
        if (c.c.d.flags & DSV4KV_CACHE_TILED)
          for (int d = 0; d < 128; d++) fz_allow(K, base + tiled_off(p, d), 1);
        else fz_allow(K, base + p * 128, 128);
        fz_allow(K, base + bs * 128 + p * 4, 4);
      } else {
        fz_allow(K, base + p * 64, 64);
        fz_allow(K, base + bs * 64 + p * 4, 4);
      }
    }
  }
  static const char *const names[] = {"k_pre", "positions", "cos_sin_cache", "rms_norm_weight", "eps", "k_cache",
                                      "cache", "kv_slot_mapping", "compress_ratio", NULL};
  Ten *outs[1] = {K};
  Res r;
  fz_exec3(call_ix, &c, outs, 1, names, (int)ru(g, 2), &r);
  if (!fz_g_mutated && !dsv4kv_is_error(r.st) && r.skipped != exp_skip)
    fz_issue("skipped-value", "indexer skipped %lld, spec says %lld", (long long)r.skipped, (long long)exp_skip);
  if (!fz_g_mutated && dsv4kv_is_error(r.st))
    fz_issue("valid-call-rejected", "indexer: %s: %s", dsv4kv_status_string(r.st), r.msg);
  fz_res_free(&r);
}
