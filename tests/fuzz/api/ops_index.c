/*
 * The harness's drivers of compute_global_topk_indices_and_lens (SPEC §5.1)
 * and combine_topk_swa_indices with its _alloc variant (§5.2), each checked
 * against a small reference of the SPEC.
 */
#include "fuzz.h"

/* ------------------------------------------------------------------------ */
/* Op 3: compute_global_topk_indices_and_lens                                 */
/* ------------------------------------------------------------------------ */
struct gt_ctx { Ten *topk, *req, *bt, *valid, *gout, *lout; int32_t bs; };
static dsv4kv_status call_gt(void *p, const dsv4kv_options *o) {
  struct gt_ctx *c = p;
  opcall_global_topk a = {D(c->topk), D(c->req), D(c->bt), c->bs, D(c->valid), D(c->gout), D(c->lout)};
  return opcall_global_topk_run(&a, o);
}
void fz_op_global_topk(Src *g) {
  fz_g_op = "compute_global_topk_indices_and_lens";
  struct gt_ctx c;
  int64_t T = BIG(rr(g, 0, 6), 128, 600), K = rr(g, 0, 9), R = rr(g, 0, 3), P = rr(g, 0, 4);
  static const int32_t bss[] = {1, 2, 3, 4, 16, 64, 128};
  c.bs = bss[ru(g, 7)];
  if (pct(g, 3)) {
    static const int32_t bad[] = {0, -1, INT32_MIN};
    c.bs = bad[ru(g, 3)];
    fz_expect_err("block_size %d", c.bs);
  }
  else if (pct(g, 2)) c.bs = INT32_MAX;
  int64_t ts[2] = {T, K};
  c.topk = fz_mkt(g, "topk_indices", DT_I32, 2, ts, 0);
  struct range rt = {-2, (int64_t)(c.bs > 0 ? c.bs : 1) * P + 1, 0, {0}};
  fz_fill(c.topk, g, fz_gen_range, &rt);
  int64_t rs[1] = {T + (pct(g, 20) ? rr(g, 1, 2) : 0)};
  if (pct(g, 3) && T > 0) { rs[0] = T - 1; expect_soft("req short"); }
  c.req = fz_mkt(g, "token_to_req_indices", DT_I32, 1, rs, 0);
  struct range rq = {-1, R, 0, {0}};
  fz_fill(c.req, g, fz_gen_range, &rq);
  int64_t bts[2] = {R, P};
  c.bt = fz_mkt(g, "block_table", DT_I32, 2, bts, 0);
  struct range rb = {-1, 100, 0, {0}};
  fz_fill(c.bt, g, fz_gen_range, &rb);
  int64_t vs[1] = {T + (pct(g, 20) ? rr(g, 1, 2) : 0)};
  if (pct(g, 3) && T > 0) { vs[0] = T - 1; expect_soft("valid short"); }
  c.valid = fz_mkt(g, "is_valid_token", pct(g, 50) ? DT_BOOL : DT_U8, 1, vs, F_BOOLISH);
  fz_fill(c.valid, g, fz_gen_bool, NULL);
  int64_t gs[2] = {T, K};
  if (pct(g, 3)) { gs[ru(g, 2)] += 1; expect_soft("global_out shape"); }
  c.gout = fz_mkt(g, "global_out", DT_I32, 2, gs, F_OUT);
  int64_t ls[1] = {T};
  if (pct(g, 3)) { ls[0] += 1; expect_soft("lens_out shape"); }
  c.lout = fz_mkt(g, "lens_out", DT_I32, 1, ls, F_OUT);
  snprintf(fz_g_scalars + strlen(fz_g_scalars), sizeof fz_g_scalars - strlen(fz_g_scalars), "block_size=%d", c.bs);
  static const char *const names[] = {"topk_indices", "token_to_req_indices", "block_table", "block_size",
                                      "is_valid_token", "global_out", "lens_out", NULL};
  Ten *outs[2] = {c.gout, c.lout};
  Res r;
  fz_exec3(call_gt, &c, outs, 2, names, 0, &r);
  if (!fz_g_mutated && !dsv4kv_is_error(r.st)) {
    /* reference of SPEC §5.1 */
    int64_t skip = 0, bad = 0;
    for (int64_t t = 0; t < T; t++) {
      int64_t req = geti(c.req, t, 0);
      int ok = req >= 0 && req < R, valid = geti(c.valid, t, 0) != 0;
      if (!ok && valid) skip++; /* SPEC §7: padding (invalid) rows are not skips */
      int32_t cnt = 0;         /* lens count the slots written */
      for (int64_t j = 0; j < K; j++) {
        int64_t x = geti(c.topk, t, j);
        int32_t e = -1;
        if (x >= 0) {
          if (ok && x / c.bs < P) e = wrap32(geti(c.bt, req, x / c.bs) * c.bs + x % c.bs), cnt++;
          else if (ok && valid) skip++;
        }
        if ((int32_t)geti(c.gout, t, j) != e && !c.gout->aliased) bad++;
      }
      int32_t el = geti(c.valid, t, 0) ? cnt : 0;
      if ((int32_t)geti(c.lout, t, 0) != el && !c.lout->aliased) bad++;
    }
    if (bad) fz_issue("wrong-value", "global_topk: %lld output values differ from SPEC §5.1", (long long)bad);
    if (r.skipped != skip) fz_issue("skipped-value", "global_topk skipped %lld, spec-derived %lld", (long long)r.skipped, (long long)skip);
  }
  if (!fz_g_mutated && dsv4kv_is_error(r.st))
    fz_issue("valid-call-rejected", "global_topk: %s: %s", dsv4kv_status_string(r.st), r.msg);
  fz_res_free(&r);
}

/* ------------------------------------------------------------------------ */
/* Op 4: combine_topk_swa_indices (+ _alloc)                                  */
/* ------------------------------------------------------------------------ */
struct cb_ctx { Ten *topk, *qsl, *sl, *gl, *comb, *lens; int32_t w, cr, k, M, N; };
static dsv4kv_status call_cb(void *p, const dsv4kv_options *o) {
  struct cb_ctx *c = p;
  opcall_combine a = {D(c->topk), D(c->qsl), D(c->sl), D(c->gl), c->w, c->cr, c->k, c->M, c->N,
                      D(c->comb), D(c->lens), 0, NULL, NULL};
  return opcall_combine_run(&a, o);
}
/* The SPEC §5.2 result applied to `comb`/`lens` buffers (by harness strides). */
static int64_t combine_ref(struct cb_ctx *c, Ten *comb, Ten *lens, int64_t T, int64_t R) {
  int64_t skip = 0;
  int64_t base = geti(c->qsl, 0, 0);
  for (int64_t r = 0; r < R; r++) {
    int64_t qs = geti(c->qsl, r, 0) - base, qe = geti(c->qsl, r + 1, 0) - base;
    int64_t seq = geti(c->sl, r, 0), sp = seq - (qe - qs), gs = seq - geti(c->gl, r, 0);
    int64_t Mr = (int64_t)c->M * r;
    /* tokens outside [0, T) are only counted (arithmetically: the span may be 2^32) */
    int64_t tlo = qs > 0 ? qs : 0, thi = qe < T ? qe : T;
    if (qe > qs) skip += (qe - qs) - (thi > tlo ? thi - tlo : 0);
    for (int64_t t = tlo; t < thi; t++) {
      int64_t pos = sp + (t - qs), tl = 0;
      if (c->cr > 0) { tl = (pos + 1) / c->cr; if (tl > c->k) tl = c->k; }
      int64_t ss = pos - c->w + 1;
      if (ss < 0) ss = 0;
      if (ss < gs) ss = gs;
      int64_t sl = pos - ss + 1;
      if (tl < 0) tl = 0, skip++; /* SPEC §7: lengths clamped at 0, counted */
      if (sl < 0) sl = 0, skip++;
      for (int64_t j = 0; j < tl; j++) seti(comb, t, j, wrap32(geti(c->topk, t, j) + Mr));
      for (int64_t j = 0; j < sl; j++) seti(comb, t, tl + j, wrap32(Mr + c->N + (ss - gs) + j));
      seti(lens, t, 0, wrap32(tl + sl));
    }
  }
  return skip;
}
/* fz_op_combine's scalars (window, ratio, topk, M, N): sometimes huge,
 * negative (refused) or topk > W. */
static void cb_scalars(Src *g, struct cb_ctx *c, int64_t W) {
  c->w = (int32_t)rr(g, 1, 6);
  c->cr = pct(g, 20) ? 0 : (int32_t)rr(g, 1, 4);
  c->k = (int32_t)rr(g, 0, W);
  c->M = (int32_t)rr(g, 0, 100);
  c->N = (int32_t)rr(g, 0, 10);
  if (pct(g, 5)) {
    static const int32_t big[] = {INT32_MAX, INT32_MAX - 1, 1 << 30, 65536};
    int which = (int)ru(g, 3);
    if (which == 0) c->M = big[ru(g, 4)];
    if (which == 1) c->N = big[ru(g, 4)];
    if (which == 2) c->cr = big[ru(g, 4)];
  }
  if (pct(g, 4)) {
    int which = (int)ru(g, 5);
    static const int32_t neg[] = {-1, INT32_MIN};
    int32_t v = neg[ru(g, 2)];
    if (which == 0) c->w = pct(g, 50) ? 0 : v;
    if (which == 1) c->cr = v;
    if (which == 2) c->k = v;
    if (which == 3) c->M = v;
    if (which == 4) c->N = v;
    fz_expect_err("scalar %d negative", which);
  }
  if (pct(g, 3)) { c->k = (int32_t)W + 1; expect_soft("topk > W"); }
  if (pct(g, 2)) { c->w = INT32_MAX; } /* then C >= topk + w is impossible for our buffers */
}

static void cb_fill_qsl(Src *g, struct cb_ctx *c) {
  if (c->qsl->t.ndim == 1 && c->qsl->shape[0] > 0 && c->qsl->elem == 4) {
    static const int64_t bases[] = {0, 0, 0, 5, -3, INT32_MIN, INT32_MAX - 10, INT32_MAX};
    int64_t b = bases[ru(g, 8)], cur = 0;
    for (int64_t i = 0; i < c->qsl->shape[0]; i++) {
      if (i) cur += fz_g_big ? rr(g, 0, 300) : pct(g, 85) ? rr(g, 0, 3) : rr(g, -4, 10);
      int64_t v = wrap32(b + cur);
      if (pct(g, 3)) {
        v = fz_gidx(g, -10, 10);
        if (!fz_g_slow) v = wrap32(b + cur + rr(g, -20, 20));
      }
      seti(c->qsl, i, 0, v);
    }
    /* bounded work unless FUZZ_SLOW */
    if (!fz_g_slow) {
      int64_t bb = geti(c->qsl, 0, 0), tot = 0;
      for (int64_t i = 0; i + 1 < c->qsl->shape[0]; i++) {
        int64_t d = geti(c->qsl, i + 1, 0) - geti(c->qsl, i, 0);
        if (d > 0) tot += d;
      }
      (void)bb;
      if (tot > 100000)
        for (int64_t i = 0; i < c->qsl->shape[0]; i++) seti(c->qsl, i, 0, i);
    }
    resnap(c->qsl);
  }
}

/* fz_op_combine's outputs against the SPEC §5.2 reference (a valid call). */
static void cb_check(struct cb_ctx *c, const Res *r, int64_t T, int64_t R) {
  int64_t exp_skip = 0;
  if (!fz_g_mutated && !dsv4kv_is_error(r->st) && !c->comb->aliased && !c->lens->aliased) {
    /* reference on the snapshots */
    uint8_t *save_c = malloc(c->comb->nbytes + 1), *save_l = malloc(c->lens->nbytes + 1);
    memcpy(save_c, c->comb->buf, c->comb->nbytes);
    memcpy(save_l, c->lens->buf, c->lens->nbytes);
    memcpy(c->comb->buf, c->comb->snap, c->comb->nbytes);
    memcpy(c->lens->buf, c->lens->snap, c->lens->nbytes);
    exp_skip = combine_ref(c, c->comb, c->lens, T, R);
    if (memcmp(save_c, c->comb->buf, c->comb->nbytes) || memcmp(save_l, c->lens->buf, c->lens->nbytes))
      fz_issue("wrong-value", "combine output differs from SPEC §5.2");
    if (r->skipped != exp_skip)
      fz_issue("skipped-value", "combine skipped %lld, spec-derived %lld", (long long)r->skipped, (long long)exp_skip);
    free(save_c);
    free(save_l);
  }
}

/* The _alloc variant's outputs against the reference over a -1 / 0 fill, and
 * its skips and status. */
static void cb_alloc_values(Src *g, struct cb_ctx *c, DLTensor *a, DLTensor *b, int64_t T, int64_t R, int64_t Cr,
                            int64_t sk, dsv4kv_status st) {
  /* must equal the reference over a -1 / 0 filled output */
  int64_t cs2[2] = {T, Cr}, ls2[1] = {T};
  Ten *rc = fz_mkt(g, "ref_combined", DT_I32, 2, cs2, F_NOMUT | F_NONULL | F_COMPACT);
  Ten *rl = fz_mkt(g, "ref_lens", DT_I32, 1, ls2, F_NOMUT | F_NONULL | F_COMPACT);
  for (int64_t t = 0; t < T; t++) {
    for (int64_t j = 0; j < Cr; j++) seti(rc, t, j, -1);
    seti(rl, t, 0, 0);
  }
  int64_t s2 = combine_ref(c, rc, rl, T, R);
  int64_t bad = 0;
  const int32_t *ad = (const int32_t *)((uint8_t *)a->data + a->byte_offset);
  const int32_t *bd = (const int32_t *)((uint8_t *)b->data + b->byte_offset);
  for (int64_t t = 0; t < T; t++) {
    for (int64_t j = 0; j < Cr; j++) bad += ad[t * Cr + j] != (int32_t)geti(rc, t, j);
    bad += bd[t] != (int32_t)geti(rl, t, 0);
  }
  if (bad) fz_issue("wrong-value", "alloc: %lld values differ from SPEC §5.2 over a -1/0 fill", (long long)bad);
  if (sk != s2) fz_issue("skipped-value", "alloc skipped %lld, spec-derived %lld", (long long)sk, (long long)s2);
  if ((st == DSV4KV_WARN_SKIPPED) != (s2 > 0)) fz_issue("alloc-status", "alloc status %d with %lld skips", (int)st, (long long)s2);
}

/* the _alloc variant: same call, library-allocated outputs */
static void cb_alloc(Src *g, struct cb_ctx *c, int64_t R) {
  fz_g_op = "combine_topk_swa_indices_alloc";
  DLManagedTensor *mc = (DLManagedTensor *)0x1, *ml = (DLManagedTensor *)0x1;
  int64_t sk = -777, nf = -777;
  dsv4kv_report rep;
  fz_report_poison(&rep);
  dsv4kv_options opt = {&sk, &nf, 0, (int)rr(g, 1, 2), NULL, &rep, 0};
  int nullout = pct(g, 2) ? (int)rr(g, 1, 2) : 0;
  /* FUZZ_AVOID_KNOWN: no multi-GiB allocations from a huge window_size (finding F8) */
  if (fz_g_avoid_bigalloc && (int64_t)c->k + c->w > (1 << 20)) return;
  dsv4kv_status st = dsv4kv_combine_topk_swa_indices_alloc(D(c->topk), D(c->qsl), D(c->sl), D(c->gl), c->w, c->cr, c->k, c->M,
                                                           c->N, nullout == 1 ? NULL : &mc, nullout == 2 ? NULL : &ml,
                                                           &opt);
  fz_g_calls++;
  if (!nullout) {
    char msg[512];
    snprintf(msg, sizeof msg, "%s", dsv4kv_last_error());
    fz_check_report("alloc", st, &rep, &sk, &nf, msg);
  }
  if (nullout && st != DSV4KV_ERR_NULL) fz_issue("bad-argument-accepted", "alloc: NULL out pointer gave %d", (int)st);
  if (!nullout) {
    if (dsv4kv_is_error(st)) {
      if (mc || ml) fz_issue("alloc-outputs-on-error", "alloc: %s but outputs not NULL", dsv4kv_status_string(st));
      if (!dsv4kv_last_error()[0]) fz_issue("empty-message", "alloc: %s with empty message", dsv4kv_status_string(st));
    } else {
      if (!mc || !ml) fz_issue("alloc-null-outputs", "alloc: %s but NULL outputs", dsv4kv_status_string(st));
      else {
        DLTensor *a = &mc->dl_tensor, *b = &ml->dl_tensor;
        int64_t Cr = ((int64_t)c->k + c->w + 127) / 128 * 128;
        int64_t T = c->topk->shape[0];
        if (a->ndim != 2 || a->shape[0] != T || a->shape[1] != Cr || !same_dt(a->dtype, DT_I32) ||
            a->device.device_type != kDLCPU || b->ndim != 1 || b->shape[0] != T || !same_dt(b->dtype, DT_I32))
          fz_issue("alloc-shape", "alloc: combined/lens descriptors wrong");
        else if (!fz_g_mutated) {
          cb_alloc_values(g, c, a, b, T, R, Cr, sk, st);
        }
      }
      dsv4kv_managed_free(mc);
      dsv4kv_managed_free(ml);
    }
    if (!fz_g_mutated && dsv4kv_is_error(st))
      fz_issue("valid-call-rejected", "alloc: %s: %s", dsv4kv_status_string(st), dsv4kv_last_error());
  }
  dsv4kv_managed_free(NULL);
}

void fz_op_combine(Src *g) {
  fz_g_op = "combine_topk_swa_indices";
  struct cb_ctx c;
  int64_t R = rr(g, 0, 3), T = BIG(rr(g, 0, 8), 128, 600), W = rr(g, 0, 6);
  cb_scalars(g, &c, W);
  int64_t ts[2] = {T, W};
  c.topk = fz_mkt(g, "topk_indices", DT_I32, 2, ts, 0);
  struct range rt = {-2, 300, 0, {0}};
  fz_fill(c.topk, g, fz_gen_range, &rt);
  int64_t qs[1] = {R + 1};
  if (pct(g, 2)) { qs[0] = 0; expect_soft("qsl empty"); }
  c.qsl = fz_mkt(g, "query_start_loc", DT_I32, 1, qs, 0);
  /* query_start_loc: a base plus increasing offsets, sometimes malformed */
  cb_fill_qsl(g, &c);
  int64_t ss[1] = {R};
  if (pct(g, 2)) { ss[0] = R + 1; expect_soft("seq_lens shape"); }
  c.sl = fz_mkt(g, "seq_lens", DT_I32, 1, ss, 0);
  struct range rs = {0, fz_g_big ? 400 : 40, 0, {0}};
  fz_fill(c.sl, g, fz_gen_range, &rs);
  int64_t gls[1] = {R};
  if (pct(g, 2)) { gls[0] = R + 1; expect_soft("gather_lens shape"); }
  c.gl = fz_mkt(g, "gather_lens", DT_I32, 1, gls, 0);
  struct range rg = {0, fz_g_big ? 400 : 40, 0, {0}};
  fz_fill(c.gl, g, fz_gen_range, &rg);
  int64_t C = ((int64_t)c.k + c.w + 127) / 128 * 128;
  if (pct(g, 50) && c.k >= 0 && c.w > 0) C = (int64_t)c.k + c.w + rr(g, 0, 3);
  if (C > 256 || C < 0) C = 8; /* w = INT32_MAX etc.: too narrow on purpose */
  if (c.k >= 0 && c.w > 0 && C < (int64_t)c.k + c.w) expect_soft("combined too narrow");
  int64_t cs[2] = {T, C};
  if (pct(g, 2)) { cs[0] = T + 1; expect_soft("combined rows"); }
  c.comb = fz_mkt(g, "combined", DT_I32, 2, cs, F_OUT);
  int64_t ls[1] = {T};
  if (pct(g, 2)) { ls[0] = T + 1; expect_soft("lens rows"); }
  c.lens = fz_mkt(g, "lens", DT_I32, 1, ls, F_OUT);
  snprintf(fz_g_scalars + strlen(fz_g_scalars), sizeof fz_g_scalars - strlen(fz_g_scalars),
           "window_size=%d compress_ratio=%d topk=%d M=%d N=%d", c.w, c.cr, c.k, c.M, c.N);
  static const char *const names[] = {"topk_indices", "query_start_loc", "seq_lens", "gather_lens", "window_size",
                                      "compress_ratio", "topk", "M =", "N =", "combined", "lens", NULL};
  Ten *outs[2] = {c.comb, c.lens};
  Res r;
  fz_exec3(call_cb, &c, outs, 2, names, 0, &r);
  cb_check(&c, &r, T, R);
  if (!fz_g_mutated && dsv4kv_is_error(r.st))
    fz_issue("valid-call-rejected", "combine: %s: %s", dsv4kv_status_string(r.st), r.msg);

  cb_alloc(g, &c, R);
  fz_res_free(&r);
}
