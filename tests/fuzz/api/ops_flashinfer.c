/*
 * The harness's driver of build_flashinfer_mixed_sparse_indices (SPEC §5.3),
 * checked against a small reference of the SPEC and for outputs written in full.
 */
#include "fuzz.h"

/* ------------------------------------------------------------------------ */
/* Op 5: build_flashinfer_mixed_sparse_indices                                */
/* ------------------------------------------------------------------------ */
struct fi_ctx {
  Ten *dswa, *dcomp, *dlens, *dvalid, *ptopk, *qsl, *sl, *replay, *req, *swa_bt, *comp_bt, *out, *lens;
  dsv4kv_flashinfer_args a;
  int args_null;
};
static dsv4kv_status call_fi(void *p, const dsv4kv_options *o) {
  struct fi_ctx *c = p;
  c->a.decode_swa_indices = D(c->dswa);
  c->a.decode_compressed_indices = c->dcomp ? D(c->dcomp) : NULL;
  c->a.decode_compressed_topk_lens = c->dlens ? D(c->dlens) : NULL;
  c->a.decode_is_valid_token = c->dvalid ? D(c->dvalid) : NULL;
  c->a.prefill_topk_indices = D(c->ptopk);
  c->a.query_start_loc = D(c->qsl);
  c->a.seq_lens = D(c->sl);
  c->a.replay_start = D(c->replay);
  c->a.token_to_req_indices = D(c->req);
  c->a.swa_block_table = D(c->swa_bt);
  c->a.compressed_block_table = c->comp_bt ? D(c->comp_bt) : NULL;
  opcall_flashinfer a = {c->args_null ? NULL : &c->a, D(c->out), D(c->lens)};
  return opcall_flashinfer_run(&a, o);
}
static int64_t fi_remap(int64_t v, int64_t bs, int64_t span) { return v < 0 ? -1 : wrap32((v / bs) * span + v % bs); }
static int64_t fi_slot(Ten *bt, int64_t req, int64_t pos, int64_t bs, int64_t *skip) {
  int64_t lp = pos / bs;
  if (req < 0 || req >= bt->shape[0] || pos < 0 || lp >= bt->shape[1]) { (*skip)++; return -1; }
  return wrap32(geti(bt, req, lp) * bs + pos % bs);
}
/* fz_op_flashinfer's scalars (window, ratio, topk, block sizes and spans,
 * local decode indices): sometimes bad (refused), huge, or args NULL. */
static void fi_scalars(Src *g, struct fi_ctx *c, int64_t S) {
  dsv4kv_flashinfer_args *a = &c->a;
  a->window_size = (int32_t)rr(g, 1, S);
  a->compress_ratio = pct(g, 20) ? 0 : (int32_t)rr(g, 1, 4);
  a->topk = (int32_t)rr(g, 0, 8);
  static const int32_t bss[] = {1, 2, 4, 8, 64};
  a->swa_block_size = bss[ru(g, 5)];
  a->compressed_block_size = bss[ru(g, 5)];
  a->swa_block_span = pct(g, 50) ? 0 : a->swa_block_size + (int32_t)rr(g, 0, 3);
  a->compressed_block_span = pct(g, 50) ? 0 : a->compressed_block_size + (int32_t)rr(g, 0, 3);
  a->decode_compressed_indices_are_local = (int)ru(g, 3); /* 2: nonzero, not 1 */
  if (pct(g, 5)) {
    int which = (int)ru(g, 9);
    static const int32_t bad[] = {0, -1, INT32_MIN};
    int32_t v = bad[ru(g, 3)];
    switch (which) {
      case 0: a->swa_block_size = v; fz_expect_err("swa_block_size"); break;
      case 1: a->compressed_block_size = v; fz_expect_err("compressed_block_size"); break;
      case 2: if (v) { a->swa_block_span = v; fz_expect_err("swa_block_span"); } break;
      case 3: if (v) { a->compressed_block_span = v; fz_expect_err("compressed_block_span"); } break;
      case 4: a->window_size = v; fz_expect_err("window_size"); break;
      case 5: a->window_size = (int32_t)S + 1; expect_soft("window_size > S"); break;
      case 6: if (v) { a->compress_ratio = v; fz_expect_err("compress_ratio"); } break;
      case 7: if (v) { a->topk = v; fz_expect_err("topk"); } break;
      default: c->args_null = 1; fz_expect_err("args NULL"); break;
    }
  }
  if (pct(g, 3) && !fz_g_expect_err) {
    static const int32_t big[] = {INT32_MAX, 1 << 30, 65536};
    int which = (int)ru(g, 4);
    if (which == 0) a->swa_block_span = big[ru(g, 3)];
    if (which == 1) a->compressed_block_span = big[ru(g, 3)];
    if (which == 2) a->compress_ratio = big[ru(g, 3)];
    if (which == 3) {
      a->swa_block_size = big[ru(g, 3)];
      if (a->swa_block_span && a->swa_block_span < a->swa_block_size) fz_expect_err("swa_block_span");
    }
  }
  if (pct(g, 3) && !fz_g_expect_err && a->compressed_block_size > 1) { /* slots would alias (SPEC §7) */
    a->compressed_block_span = a->compressed_block_size - (int32_t)rr(g, 1, a->compressed_block_size - 1);
    fz_expect_err("compressed_block_span");
  }
}

/* The decode tokens' tensors; returns Dk (0 without decode_compressed_indices). */
static int64_t fi_decode_tensors(Src *g, struct fi_ctx *c, int64_t D_, int64_t S, int64_t Dk) {
  int64_t s1[2] = {D_, S};
  c->dswa = fz_mkt(g, "decode_swa_indices", DT_I32, 2, s1, 0);
  struct range rv = {-2, 200, 0, {0}};
  fz_fill(c->dswa, g, fz_gen_range, &rv);
  if (Dk > 0 || pct(g, 20)) {
    int64_t s2[2] = {D_, Dk};
    if (pct(g, 2)) { s2[0] = D_ + 1; expect_soft("dcomp rows"); }
    c->dcomp = fz_mkt(g, "decode_compressed_indices", DT_I32, 2, s2, F_OPTIONAL);
    struct range rl = {-2, 40, 0, {0}};
    fz_fill(c->dcomp, g, fz_gen_range, &rl);
  } else Dk = 0;
  if (pct(g, 50)) {
    int64_t s3[1] = {D_ + (pct(g, 20) ? 1 : 0)};
    if (pct(g, 3) && D_ > 0) { s3[0] = D_ - 1; expect_soft("dlens short"); }
    c->dlens = fz_mkt(g, "decode_compressed_topk_lens", DT_I32, 1, s3, F_OPTIONAL);
    struct range rl = {0, 8, 0, {0}};
    fz_fill(c->dlens, g, fz_gen_range, &rl);
  }
  if (pct(g, 50)) {
    int64_t s4[1] = {D_ + (pct(g, 20) ? 1 : 0)};
    if (pct(g, 3) && D_ > 0) { s4[0] = D_ - 1; expect_soft("dvalid short"); }
    c->dvalid = fz_mkt(g, "decode_is_valid_token", pct(g, 50) ? DT_BOOL : DT_U8, 1, s4, F_OPTIONAL | F_BOOLISH);
    fz_fill(c->dvalid, g, fz_gen_bool, NULL);
  }
  return Dk;
}

/* The prefill tokens' tensors and the block tables. */
static void fi_prefill_tensors(Src *g, struct fi_ctx *c, int64_t D_, int64_t P, int64_t R, int64_t Wp) {
  int64_t s5[2] = {P, Wp};
  c->ptopk = fz_mkt(g, "prefill_topk_indices", DT_I32, 2, s5, 0);
  struct range rp = {-2, 40, 0, {0}};
  fz_fill(c->ptopk, g, fz_gen_range, &rp);
  int64_t s6[1] = {R + 1};
  if (pct(g, 2)) { s6[0] = 0; expect_soft("qsl empty"); }
  c->qsl = fz_mkt(g, "query_start_loc", DT_I32, 1, s6, 0);
  {
    int64_t cur = rr(g, 0, D_ + 1);
    if (c->qsl->t.ndim == 1 && c->qsl->shape[0] > 0 && c->qsl->elem == 4) {
      for (int64_t i = 0; i < c->qsl->shape[0]; i++) {
        if (i) cur += fz_g_big ? rr(g, 0, 150) : rr(g, 0, 4);
        seti(c->qsl, i, 0, pct(g, 4) ? fz_gidx(g, -5, 20) : cur);
      }
      resnap(c->qsl);
    }
  }
  int64_t s7[1] = {R + (pct(g, 20) ? 1 : 0)};
  if (pct(g, 2) && R > 0) { s7[0] = R - 1; expect_soft("seq_lens short"); }
  c->sl = fz_mkt(g, "seq_lens", DT_I32, 1, s7, 0);
  struct range rs = {0, fz_g_big ? 400 : 60, 0, {0}};
  fz_fill(c->sl, g, fz_gen_range, &rs);
  int64_t s8[1] = {R + (pct(g, 20) ? 1 : 0)};
  if (pct(g, 2) && R > 0) { s8[0] = R - 1; expect_soft("replay short"); }
  c->replay = fz_mkt(g, "replay_start", DT_I32, 1, s8, 0);
  struct range rr_ = {0, 40, 0, {0}};
  fz_fill(c->replay, g, fz_gen_range, &rr_);
  int64_t s9[1] = {D_ + P + (pct(g, 20) ? 1 : 0)};
  if (pct(g, 2) && D_ + P > 0) { s9[0] = D_ + P - 1; expect_soft("req short"); }
  c->req = fz_mkt(g, "token_to_req_indices", DT_I32, 1, s9, 0);
  struct range rq = {-1, R, 0, {0}};
  fz_fill(c->req, g, fz_gen_range, &rq);
  int64_t s10[2] = {rr(g, 0, 4), rr(g, 0, 5)};
  c->swa_bt = fz_mkt(g, "swa_block_table", DT_I32, 2, s10, 0);
  struct range rb = {-1, 30, 0, {0}};
  fz_fill(c->swa_bt, g, fz_gen_range, &rb);
  if (pct(g, 60)) {
    int64_t s11[2] = {rr(g, 0, 4), rr(g, 0, 5)};
    c->comp_bt = fz_mkt(g, "compressed_block_table", DT_I32, 2, s11, F_OPTIONAL);
    fz_fill(c->comp_bt, g, fz_gen_range, &rb);
  }
}

/* fz_op_flashinfer's outputs against the SPEC §5.3 reference (a valid call). */
static void fi_check(struct fi_ctx *c, const Res *r, int64_t D_, int64_t P, int64_t R, int64_t S, int64_t Dk,
                     int64_t Wp, int64_t K4) {
  dsv4kv_flashinfer_args *a = &c->a;
  int64_t skip = 0, bad = 0, first_bad_t = -1, first_bad_j = -1;
  int64_t sbs = a->swa_block_size, sspan = a->swa_block_span ? a->swa_block_span : sbs;
  int64_t cbs = a->compressed_block_size, cspan = a->compressed_block_span ? a->compressed_block_span : cbs;
  Ten *cbt = c->comp_bt ? c->comp_bt : c->swa_bt;
  int local = a->decode_compressed_indices_are_local != 0;
#define FI_EXPECT(t, j, e)                                          \
  do {                                                              \
    if ((int32_t)geti(c->out, t, j) != (int32_t)(e)) {              \
      if (!bad++) first_bad_t = t, first_bad_j = j;                 \
    }                                                               \
  } while (0)
  for (int64_t d = 0; d < D_; d++) {
    for (int64_t j = 0; j < S; j++) FI_EXPECT(d, j, fi_remap(geti(c->dswa, d, j), sbs, sspan));
    int valid = c->dvalid ? geti(c->dvalid, d, 0) != 0 : 1;
    int64_t req = geti(c->req, d, 0), cnt = 0;
    for (int64_t j = 0; j < K4; j++) {
      int64_t v = j < Dk ? geti(c->dcomp, d, j) : -1;
      if (local && v >= 0) {
        int64_t pad = 0; /* SPEC §7: an invalid (padding) token's lookups are not skips */
        v = fi_slot(cbt, req, v, cbs, valid ? &skip : &pad);
        if (v >= 0 && valid) cnt++;
      }
      FI_EXPECT(d, S + j, fi_remap(v, cbs, cspan));
    }
    int64_t n = Dk == 0 ? 0 : local ? cnt : c->dlens ? geti(c->dlens, d, 0) : Dk;
    if (n < 0 || n > Dk) { /* SPEC §7: clamped to the row, counted */
      n = n < 0 ? 0 : Dk;
      if (valid) skip++;
    }
    if ((int32_t)geti(c->lens, d, 0) != wrap32(S + n)) bad++;
  }
  for (int64_t t = D_; t < D_ + P; t++) {
    int64_t i = t - D_, req = geti(c->req, t, 0);
    if (req < 0 || req >= R) {
      skip++;
      for (int64_t j = 0; j < S + K4; j++) FI_EXPECT(t, j, -1);
      if (geti(c->lens, t, 0) != 0) bad++;
      continue;
    }
    int64_t q0 = geti(c->qsl, req, 0), q1 = geti(c->qsl, req + 1, 0);
    int64_t pos = geti(c->sl, req, 0) - (q1 - q0) + (t - q0);
    int64_t ss = pos - a->window_size + 1;
    if (ss < 0) ss = 0;
    if (ss < geti(c->replay, req, 0)) ss = geti(c->replay, req, 0);
    int64_t sl = pos - ss + 1, tl = 0;
    if (a->compress_ratio > 0) { tl = (pos + 1) / a->compress_ratio; if (tl > a->topk) tl = a->topk; }
    if (tl < 0 || tl > Wp) tl = tl < 0 ? 0 : Wp, skip++; /* SPEC §7: clamped to the data, counted */
    for (int64_t j = 0; j < S; j++) {
      int64_t v = j < sl ? fi_slot(c->swa_bt, req, ss + j, sbs, &skip) : -1;
      FI_EXPECT(t, j, fi_remap(v, sbs, sspan));
    }
    for (int64_t j = 0; j < K4; j++) {
      int64_t x = j < tl ? geti(c->ptopk, i, j) : -1;
      int64_t v = x >= 0 ? fi_slot(cbt, req, x, cbs, &skip) : -1;
      FI_EXPECT(t, S + j, fi_remap(v, cbs, cspan));
    }
    if ((int32_t)geti(c->lens, t, 0) != wrap32(S + tl)) bad++;
  }
  if (bad) fz_issue("wrong-value", "flashinfer: %lld values differ from SPEC §5.3 (first at [%lld][%lld])", (long long)bad,
                    (long long)first_bad_t, (long long)first_bad_j);
  if (r->skipped != skip)
    fz_issue("skipped-value", "flashinfer skipped %lld, spec-derived %lld", (long long)r->skipped, (long long)skip);
}

/* "every element of both outputs is written": a second, different fill must give the same bytes */
static void fi_check_written(struct fi_ctx *c, const Res *r, Ten **outs, const char *const *names) {
  for (int o = 0; o < 2; o++) {
    Ten *T = outs[o];
    for (size_t b = 0; b < T->nbytes; b++) T->snap[b] ^= T->mask[b] ? 0x5A : 0;
  }
  Res r2;
  fz_exec3(call_fi, c, outs, 2, names, 0, &r2);
  for (int o = 0; o < 2; o++)
    if (memcmp(r2.outs[o], r->outs[o], outs[o]->nbytes)) fz_issue("not-written-in-full", "flashinfer %s", outs[o]->name);
  fz_res_free(&r2);
}

void fz_op_flashinfer(Src *g) {
  fz_g_op = "build_flashinfer_mixed_sparse_indices";
  struct fi_ctx c;
  memset(&c, 0, sizeof c);
  int64_t D_ = BIG(rr(g, 0, 4), 0, 300), P = BIG(rr(g, 0, 5), 128, 300), R = rr(g, 0, 3), S = rr(g, 1, 6), Dk = pct(g, 30) ? 0 : rr(g, 0, 6);
  int64_t Wp = rr(g, 0, 6);
  dsv4kv_flashinfer_args *a = &c.a;
  fi_scalars(g, &c, S);
  int64_t K4 = ((a->topk > Dk ? a->topk : Dk) + 3) / 4 * 4;
  Dk = fi_decode_tensors(g, &c, D_, S, Dk);
  K4 = ((a->topk > Dk ? a->topk : Dk) + 3) / 4 * 4;
  fi_prefill_tensors(g, &c, D_, P, R, Wp);
  int64_t s12[2] = {D_ + P, S + K4};
  if (pct(g, 3)) { s12[ru(g, 2)] += pct(g, 50) ? 1 : -1; expect_soft("sparse_indices shape"); }
  c.out = fz_mkt(g, "sparse_indices", DT_I32, 2, s12, F_OUT);
  int64_t s13[1] = {D_ + P};
  if (pct(g, 3)) { s13[0] += 1; expect_soft("sparse_lens shape"); }
  c.lens = fz_mkt(g, "sparse_lens", DT_I32, 1, s13, F_OUT);
  snprintf(fz_g_scalars + strlen(fz_g_scalars), sizeof fz_g_scalars - strlen(fz_g_scalars),
           "local=%d swa_bs=%d swa_span=%d c_bs=%d c_span=%d window=%d ratio=%d topk=%d args_null=%d",
           a->decode_compressed_indices_are_local, a->swa_block_size, a->swa_block_span, a->compressed_block_size,
           a->compressed_block_span, a->window_size, a->compress_ratio, a->topk, c.args_null);
  static const char *const names[] = {"decode_swa_indices", "decode_compressed_indices", "decode_compressed_topk_lens",
                                      "decode_is_valid_token", "prefill_topk_indices", "query_start_loc", "seq_lens",
                                      "replay_start", "token_to_req_indices", "swa_block_table",
                                      "compressed_block_table", "swa_block_size", "swa_block_span",
                                      "compressed_block_size", "compressed_block_span", "window_size",
                                      "compress_ratio", "topk", "sparse_indices", "sparse_lens", "args", NULL};
  Ten *outs[2] = {c.out, c.lens};
  Res r;
  fz_exec3(call_fi, &c, outs, 2, names, 0, &r);
  if (!fz_g_mutated && !dsv4kv_is_error(r.st) && !c.out->aliased && !c.lens->aliased) {
    fi_check(&c, &r, D_, P, R, S, Dk, Wp, K4);
    fi_check_written(&c, &r, outs, names);
  }
  if (!fz_g_mutated && dsv4kv_is_error(r.st))
    fz_issue("valid-call-rejected", "flashinfer: %s: %s", dsv4kv_status_string(r.st), r.msg);
  fz_res_free(&r);
}
