/* Cases of the sparse-attention index builders (SPEC §5): global top-k,
 * combine (given outputs and _alloc), flashinfer mixed indices. */
#include <stdio.h>
#include <stdlib.h>

#include "ops.h"

static int32_t r32(rng_t *r, int64_t lo, int64_t hi) { return (int32_t)ops_rr(r, lo, hi); }

/* ------------------------------------------------------------------ §5.1 */
/* G_ROWS4: the top-k width a multiple of 4 (the CUDA 4-entry kernel takes
 * such rows when they are unpadded). */
/* G_WIDE: block tables of 7 to 150 columns (the CPU's AVX-512 rows hold the
 * first 32, 64 or 128 columns in registers and gather past that; the others
 * have 1 to 6).  G_SPREAD: a row's pages spread over 65535, 65536 or 2^20 from a
 * least page, negative in half the rows (the AVX2 rows hold pages within 65536 of
 * the least as 16-bit offsets, others as 32-bit entries). */
/* G_ENGINE: an engine's block table, 300 to 2000 columns (it spans the
 * longest sequence served), whose rows' entries use the first 1 to 140
 * columns but for one in 16 anywhere in the row (the AVX-512 rows' registers
 * hold 128 columns, the others gathered). */
enum { G_SKIP = 1, G_BIG = 2, G_PAD = 4, G_U8 = 8, G_WRAP = 16, G_LEAD = 32, G_ROWS4 = 64, G_WIDE = 128, G_SPREAD = 256,
       G_ENGINE = 512 };

static void gen_global_topk(ops_inst *in, rng_t *r, const ops_case *cs) {
  int v = cs->p[0];
  static const int32_t bss[] = {1, 3, 16, 64, 128};
  int32_t bs = bss[rng_below(r, 5)];
  int64_t T = (v & G_BIG) ? 600 : ops_rr(r, 1, 40), K = (v & G_BIG) ? 64 : ops_rr(r, 1, 70);
  if (v & G_ROWS4) K = 4 * ops_rr(r, 1, (v & G_BIG) ? 300 : 40);
  int64_t R = ops_rr(r, 1, 4), P = (v & G_WIDE) ? ops_rr(r, 7, 150) : ops_rr(r, 1, 6), pad = (v & G_PAD) ? 3 : 0;
  if (v & G_ENGINE) P = ops_rr(r, 300, 2000);
  const int64_t used = (v & G_ENGINE) ? ops_rr(r, 1, 140) : P; /* the columns most entries use */
  if (v & G_SPREAD) { /* every span in each instance, block sizes the SIMD rows take (powers of 2) */
    static const int32_t pow2[] = {1, 16, 64, 128};
    R = ops_rr(r, 3, 6), P = cs->p[1] ? cs->p[1] : P, bs = pow2[rng_below(r, 4)], T = ops_rr(r, 16, 40);
    K = ops_rr(r, 40, 200); /* whole vectors and a tail */
  }
  in->lead = (v & G_LEAD) ? OPS_GUARD : 0;
  ops_tensor *topk = ops_new2(in, "topk_indices", dt_i32(), T, K, pad, 0);
  int64_t ts[1] = {T}, tst[1] = {2};
  ops_tensor *t2r = ops_new(in, "token_to_req_indices", dt_i32(), 1, ts, pad ? tst : NULL, 0);
  ops_tensor *bt = ops_new2(in, "block_table", dt_i32(), R, P, pad, 0);
  ops_tensor *valid = ops_new(in, "is_valid_token", (v & G_U8) ? dt_u8() : dt_bool(), 1, ts, NULL, 0);
  ops_tensor *gout = ops_new2(in, "global_out", dt_i32(), T, K, pad, 1);
  ops_tensor *lout = ops_new(in, "lens_out", dt_i32(), 1, ts, NULL, 1);
  for (int64_t i = 0; i < R; i++) {
    static const int32_t spans[] = {65535, 65536, 1 << 20};
    const int32_t least = rng_below(r, 2) ? r32(r, -70000, -1) : r32(r, 0, 100000), span = spans[i % 3];
    for (int64_t j = 0; j < P; j++)
      OPS_I32(bt, i, j) = (v & G_WRAP) ? r32(r, INT32_MAX / bs - 8, INT32_MAX) : r32(r, 0, 4999);
    if (v & G_SPREAD) { /* the least and the greatest page both present */
      for (int64_t j = 0; j < P; j++) OPS_I32(bt, i, j) = least + r32(r, 0, span);
      OPS_I32(bt, i, r32(r, 0, P - 1)) = least, OPS_I32(bt, i, r32(r, 0, P - 1)) = least + span;
    }
  }
  for (int64_t t = 0; t < T; t++) {
    OPS_I32(t2r, t, 0) = r32(r, 0, R - 1);
    if ((v & G_SKIP) && rng_below(r, 8) == 0) {
      static const int32_t bad[] = {-1, INT32_MIN, INT32_MAX, 0}; /* 0: R */
      int32_t b = bad[rng_below(r, 4)];
      OPS_I32(t2r, t, 0) = b ? b : (int32_t)R;
    }
    *(uint8_t *)ops_at(valid, valid->host, t, 0, 0) = rng_below(r, 4) ? (uint8_t)((v & G_U8) ? r32(r, 1, 255) : 1) : 0;
    for (int64_t j = 0; j < K; j++) {
      uint32_t u = rng_below(r, 10);
      const int64_t reach = used < P && rng_below(r, 16) ? used : P;
      int32_t x = u == 0 ? -1 : u == 1 ? -r32(r, 2, 100000) : u == 2 ? INT32_MIN : r32(r, 0, (int32_t)(reach * bs - 1));
      if ((v & G_SKIP) && u == 3) x = r32(r, P * bs, P * bs + 3 * bs); /* page past the row */
      OPS_I32(topk, t, j) = x;
    }
  }
  in->call.op = OPCALL_GLOBAL_TOPK;
  in->call.u.global_topk = (opcall_global_topk){&topk->t, &t2r->t, &bt->t, bs, &valid->t, &gout->t, &lout->t};
}

static void ref_global_topk_case(ops_inst *in) {
  ops_tensor *topk = &in->x[0], *t2r = &in->x[1], *bt = &in->x[2], *valid = &in->x[3];
  ops_tensor *gout = &in->x[4], *lout = &in->x[5];
  int32_t *a = ops_pack_i32(topk), *b = ops_pack_i32(t2r), *c = ops_pack_i32(bt);
  int32_t *g = ops_pack_i32(gout), *l = ops_pack_i32(lout);
  uint8_t *vv = ops_pack_u8(valid);
  in->want_skipped = 0;
  ref_global_topk(a, topk->shape[0], topk->shape[1], b, c, bt->shape[0], bt->shape[1],
                  in->call.u.global_topk.block_size, vv, g, l, &in->want_skipped);
  ops_unpack_i32(gout, g);
  ops_unpack_i32(lout, l);
  free(a), free(b), free(c), free(g), free(l), free(vv);
}

/* ------------------------------------------------------------------ §5.2 */
enum { C_SKIP = 1, C_BIG = 2, C_PAD = 4, C_ALLOC = 8, C_LEAD = 16, C_WIDE = 32, C_WRAP = 64 };

/* query_start_loc from a random base: consistent, or (C_SKIP) with tokens
 * outside [0, T) once rebased (a decreasing entry, a cut-off tail). */
static int64_t gen_qsl(rng_t *r, int v, int64_t R, int32_t *qsl, int32_t *seq, int32_t *gl) {
  qsl[0] = r32(r, 0, 50);
  for (int64_t i = 0; i < R; i++) {
    int32_t ql = (v & C_BIG) ? r32(r, 60, 200) : r32(r, 0, 6);
    qsl[i + 1] = qsl[i] + ql;
    seq[i] = ql + r32(r, 0, 300);
    gl[i] = seq[i] - r32(r, 0, seq[i] - ql); /* gather_start <= the first query position */
  }
  int64_t T = qsl[R] - qsl[0] + r32(r, 0, 2); /* trailing tokens outside every request */
  if (v & C_SKIP) {
    if (R > 1) qsl[1] = qsl[0] - r32(r, 1, 3);
    T = qsl[R] - qsl[0] - r32(r, 1, 3);
  }
  return T < 1 ? 1 : T;
}

static void gen_combine(ops_inst *in, rng_t *r, const ops_case *cs) {
  int32_t cr = cs->p[0], topk_n = cs->p[1], window = cs->p[2];
  int v = cs->p[3];
  int64_t R = ops_rr(r, 1, 4), pad = (v & C_PAD) ? 5 : 0;
  int32_t qsl[5], seq[4], gl[4];
  int64_t T = gen_qsl(r, v, R, qsl, seq, gl);
  int64_t W = topk_n + ((v & C_WIDE) ? ops_rr(r, 1, 5) : 0), C = (topk_n + window + 127) / 128 * 128;
  if (W == 0) W = 1;
  if (v & C_WIDE) C = topk_n + window + ops_rr(r, 0, 3);
  int32_t M = (v & C_WRAP) ? r32(r, INT32_MAX - 100, INT32_MAX) : r32(r, 1000, 5999);
  int32_t N = (v & C_WRAP) ? r32(r, INT32_MAX / 2, INT32_MAX / 2 + 1000) : r32(r, 0, 899);
  in->lead = (v & C_LEAD) ? OPS_GUARD : 0;
  in->device_ok = !(v & C_ALLOC); /* the _alloc variant allocates CPU memory only */
  ops_tensor *topk = ops_new2(in, "topk_indices", dt_i32(), T, W, pad, 0);
  int64_t qs[1] = {R + 1}, rs[1] = {R}, ts[1] = {T};
  ops_tensor *q = ops_new(in, "query_start_loc", dt_i32(), 1, qs, NULL, 0);
  ops_tensor *s = ops_new(in, "seq_lens", dt_i32(), 1, rs, NULL, 0);
  ops_tensor *g = ops_new(in, "gather_lens", dt_i32(), 1, rs, NULL, 0);
  ops_tensor *comb = NULL, *lens = NULL;
  if (!(v & C_ALLOC)) {
    comb = ops_new2(in, "combined", dt_i32(), T, C, pad, 1);
    lens = ops_new(in, "lens", dt_i32(), 1, ts, NULL, 1);
  }
  for (int64_t i = 0; i < T; i++)
    for (int64_t j = 0; j < W; j++) OPS_I32(topk, i, j) = rng_below(r, 5) == 0 ? -1 : r32(r, 0, 499);
  for (int64_t i = 0; i <= R; i++) OPS_I32(q, i, 0) = qsl[i];
  for (int64_t i = 0; i < R; i++) OPS_I32(s, i, 0) = seq[i], OPS_I32(g, i, 0) = gl[i];
  if (v & C_ALLOC) { /* what the library allocates: [T, round_up(topk + window, 128)], [T] */
    in->alloc_shape[0][0] = in->alloc_shape[1][0] = T;
    in->alloc_shape[0][1] = (topk_n + window + 127) / 128 * 128, in->alloc_shape[1][1] = 1;
  }
  in->call.op = OPCALL_COMBINE;
  in->call.u.combine = (opcall_combine){&topk->t, &q->t, &s->t, &g->t, window, cr, topk_n, M, N,
                                        comb ? &comb->t : NULL, lens ? &lens->t : NULL, (v & C_ALLOC) != 0,
                                        NULL, NULL};
}

static void ref_combine_case(ops_inst *in) {
  const opcall_combine *a = &in->call.u.combine;
  ops_tensor *topk = &in->x[0];
  int32_t *tk = ops_pack_i32(topk), *qsl = ops_pack_i32(&in->x[1]), *seq = ops_pack_i32(&in->x[2]);
  int32_t *gl = ops_pack_i32(&in->x[3]), *comb, *lens;
  int64_t T = topk->shape[0], C;
  if (a->alloc) { /* the library's fill: -1 and 0 */
    C = in->alloc_shape[0][1];
    comb = malloc((size_t)(T * C) * 4), lens = malloc((size_t)T * 4);
    for (int64_t i = 0; i < T * C; i++) comb[i] = -1;
    for (int64_t i = 0; i < T; i++) lens[i] = 0;
  } else {
    C = in->x[4].shape[1];
    comb = ops_pack_i32(&in->x[4]), lens = ops_pack_i32(&in->x[5]);
  }
  in->want_skipped = 0;
  ref_combine(tk, T, topk->shape[1], qsl, in->x[2].shape[0], seq, gl, a->window_size, a->compress_ratio, a->topk,
              a->M, a->N, comb, C, lens, &in->want_skipped);
  if (a->alloc) {
    in->want_alloc[0] = comb, in->want_alloc[1] = lens;
  } else {
    ops_unpack_i32(&in->x[4], comb);
    ops_unpack_i32(&in->x[5], lens);
    free(comb), free(lens);
  }
  free(tk), free(qsl), free(seq), free(gl);
}

/* ------------------------------------------------------------------ §5.3 */
enum { F_COMP = 1, F_LENS = 2, F_VALID = 4, F_LOCAL = 8, F_CBT = 16, F_SPAN = 32, F_CR = 64 };
/* FV_W4: S, Dk and the prefill width multiples of 4 (16-byte aligned rows). */
/* FV_WIDE: rows of hundreds of entries (positions past 1000, top-k up to 300,
 * S up to 150), wider than a block's threads hold at once on the GPU. */
/* FV_TABLE: block sizes powers of 2, top-k of 8 to 60, and the tables' rows
 * spread over 65535, 65536 or 2^20 pages from a least, negative in half the rows
 * (the AVX2 rows' tables in registers, global top-k's G_SPREAD).  With
 * FV_LONG: top-k of 260 to 1100 over 60 to 125 columns, long sequences, so
 * that prefill rows reach columns 64 and up in several FAR_CHUNKs of
 * src/cpu/index_avx2.c. */
enum { FV_SKIP = 1, FV_BIG = 2, FV_DECODE = 4, FV_PREFILL = 8, FV_PAD = 16, FV_LEAD = 32, FV_W4 = 64, FV_WIDE = 128,
       FV_TABLE = 256, FV_LONG = 512, FV_EMPTY = 1024 };
/* FV_EMPTY: a compressed block table of no columns, the prefill rows' top-k
 * entries all -1 in every other row (nothing to look up) and small elsewhere
 * (past the table: skipped); a path must not read the table. */

typedef struct {
  int32_t D, P, R, S, Dk, Wp, Rs, Ps, Rc, Pc;
} fi_shape;

/* Requests: the first D_req decode (one token each), then prefills. */
static void fi_requests(rng_t *r, int fv, fi_shape *z, int32_t *qsl, int32_t *seq, int32_t *replay) {
  int32_t Dq = (fv & FV_PREFILL) ? 0 : (fv & FV_BIG) ? 100 : r32(r, 1, 4);
  int32_t Pq = (fv & FV_DECODE) ? 0 : (fv & FV_BIG) ? 4 : r32(r, 1, 4);
  z->R = Dq + Pq;
  qsl[0] = 0;
  for (int32_t i = 0; i < z->R; i++) {
    int32_t ql = i < Dq ? 1 : (fv & FV_BIG) ? r32(r, 40, 60) : r32(r, 1, 6);
    qsl[i + 1] = qsl[i] + ql;
    seq[i] = ql + ((fv & FV_LONG)    ? r32(r, 4400, 4800)
                   : (fv & FV_TABLE) ? r32(r, 200, 600)
                                     : r32(r, 0, (fv & FV_WIDE) ? 1300 : 60)); /* TABLE: full top-k */
    replay[i] = r32(r, 0, seq[i] - ql);
  }
  z->D = Dq;
  z->P = qsl[z->R] - Dq;
}

static void fi_fill(ops_tensor *x, rng_t *r, int64_t lo, int64_t hi, int neg_one) {
  for (int64_t i = 0; i < x->shape[0]; i++)
    for (int64_t j = 0; j < (x->t.ndim > 1 ? x->shape[1] : 1); j++)
      OPS_I32(x, i, j) = neg_one && rng_below(r, 6) == 0 ? -1 : r32(r, lo, hi);
}

/* FV_TABLE's block tables: row i's pages over spans[i % 3] from its least,
 * both ends present. */
static void fi_spread(ops_tensor *bt, rng_t *r) {
  static const int32_t spans[] = {65535, 65536, 1 << 20};
  if (!bt || bt->shape[1] == 0) return;
  for (int64_t i = 0; i < bt->shape[0]; i++) {
    const int32_t least = rng_below(r, 2) ? r32(r, -70000, -1) : r32(r, 0, 100000), span = spans[i % 3], P = (int32_t)bt->shape[1];
    for (int64_t j = 0; j < P; j++) OPS_I32(bt, i, j) = least + r32(r, 0, span);
    OPS_I32(bt, i, r32(r, 0, P - 1)) = least, OPS_I32(bt, i, r32(r, 0, P - 1)) = least + span;
  }
}

static void gen_flashinfer(ops_inst *in, rng_t *r, const ops_case *cs) {
  int f = cs->p[0], fv = cs->p[1];
  dsv4kv_flashinfer_args *a = &in->fi;
  fi_shape z;
  int32_t qsl[260], seq[260], replay[260];
  fi_requests(r, fv, &z, qsl, seq, replay);
  a->window_size = (fv & FV_WIDE) ? r32(r, 100, 140) : r32(r, 1, 16);
  z.S = a->window_size + r32(r, 0, (fv & FV_WIDE) ? 12 : 4);
  a->swa_block_size = r32(r, 1, 16), a->compressed_block_size = r32(r, 1, 16);
  if (fv & FV_TABLE) a->swa_block_size = 1 << r32(r, 0, 4), a->compressed_block_size = 1 << r32(r, 1, 4);
  a->swa_block_span = (f & F_SPAN) ? a->swa_block_size + r32(r, 0, 8) : 0;
  a->compressed_block_span = (f & F_SPAN) ? a->compressed_block_size + r32(r, 0, 8) : 0;
  a->compress_ratio = (f & F_CR) ? (int32_t)(rng_below(r, 2) || (fv & FV_EMPTY) ? 4 : 128) : 0;
  a->topk = (f & F_CR) ? r32(r, 1, (fv & FV_WIDE) ? 300 : 30) : r32(r, 0, 3);
  if (fv & FV_TABLE) a->topk = (fv & FV_LONG) ? r32(r, 260, 1100) : r32(r, 8, 60);
  a->decode_compressed_indices_are_local = (f & F_LOCAL) != 0;
  z.Dk = (f & F_COMP) ? r32(r, 1, (fv & FV_WIDE) ? 300 : 33) : 0;
  z.Wp = (fv & FV_WIDE) ? r32(r, 200, 320) : r32(r, 1, 40);
  if (fv & FV_TABLE) z.Wp = a->topk + r32(r, 0, 8), z.Dk = (f & F_COMP) ? r32(r, 8, 60) : 0; /* rows the tables take */
  if (fv & FV_W4) z.S = (z.S + 3) / 4 * 4, z.Dk = (z.Dk + 3) / 4 * 4, z.Wp = (z.Wp + 3) / 4 * 4;
  /* the positions the tables cover (TABLE: 3 to 127 columns of 2 to 16 positions) */
  const int32_t reach = (fv & FV_WIDE)   ? 1400
                        : (fv & FV_LONG)  ? a->compressed_block_size * r32(r, 60, 125)
                        : (fv & FV_TABLE) ? r32(r, 40, 250)
                                          : 70;
  /* LONG, EMPTY: the windows (near 4800, 600) inside the SWA table, so that rows reach their top-k part */
  z.Rs = z.R, z.Ps = ((fv & FV_LONG) ? 4810 : (fv & FV_EMPTY) ? 610 : reach) / a->swa_block_size + 2;
  z.Rc = z.R, z.Pc = reach / a->compressed_block_size + 2;
  if (fv & FV_SKIP) z.Ps = r32(r, 1, 3), z.Pc = r32(r, 1, 3), z.Rc = z.R > 1 ? z.R - 1 : 1;
  /* TABLE with skips: the last (a prefill) request's last window ends one column past the SWA table */
  if ((fv & FV_TABLE) && (fv & FV_SKIP)) z.Ps = (seq[z.R - 1] - 1) / a->swa_block_size;
  if (fv & FV_EMPTY) z.Pc = 0;
  int32_t Pc = (f & F_CBT) ? z.Pc : z.Ps, cbs = a->compressed_block_size, T = z.D + z.P;
  int64_t pad = (fv & FV_PAD) ? 3 : 0, dS[2] = {z.D, z.S}, one[1] = {z.D}, rq[1] = {z.R}, tq[1] = {T};
  in->lead = (fv & FV_LEAD) ? OPS_GUARD : 0;
  ops_tensor *dswa = ops_new(in, "decode_swa_indices", dt_i32(), 2, dS, NULL, 0);
  ops_tensor *dcomp = (f & F_COMP) ? ops_new2(in, "decode_compressed_indices", dt_i32(), z.D, z.Dk, pad, 0) : NULL;
  ops_tensor *dlens = (f & F_LENS) ? ops_new(in, "decode_compressed_topk_lens", dt_i32(), 1, one, NULL, 0) : NULL;
  ops_tensor *dvalid = (f & F_VALID) ? ops_new(in, "decode_is_valid_token", dt_bool(), 1, one, NULL, 0) : NULL;
  ops_tensor *ptopk = ops_new2(in, "prefill_topk_indices", dt_i32(), z.P, z.Wp, pad, 0);
  int64_t qn[1] = {z.R + 1};
  ops_tensor *q = ops_new(in, "query_start_loc", dt_i32(), 1, qn, NULL, 0);
  ops_tensor *sl = ops_new(in, "seq_lens", dt_i32(), 1, rq, NULL, 0);
  ops_tensor *rp = ops_new(in, "replay_start", dt_i32(), 1, rq, NULL, 0);
  ops_tensor *t2r = ops_new(in, "token_to_req_indices", dt_i32(), 1, tq, NULL, 0);
  ops_tensor *sbt = ops_new2(in, "swa_block_table", dt_i32(), z.Rs, z.Ps, pad, 0);
  /* EMPTY: a row stride no row could have, as an empty tensor may (a path that reads row r > 0 faults) */
  int64_t cshape[2] = {z.Rc, 0}, cst[2] = {(int64_t)1 << 40, 1};
  ops_tensor *cbt = !(f & F_CBT)     ? NULL
                    : (fv & FV_EMPTY) ? ops_new(in, "compressed_block_table", dt_i32(), 2, cshape, cst, 0)
                                      : ops_new2(in, "compressed_block_table", dt_i32(), z.Rc, z.Pc, pad, 0);
  int64_t K4 = ((a->topk > z.Dk ? a->topk : z.Dk) + 3) / 4 * 4, os[2] = {T, z.S + K4};
  ops_tensor *out = ops_new(in, "sparse_indices", dt_i32(), 2, os, NULL, 1);
  ops_tensor *lens = ops_new(in, "sparse_lens", dt_i32(), 1, tq, NULL, 1);
  fi_fill(dswa, r, 0, 2999, 1);
  if (dcomp) fi_fill(dcomp, r, 0, (f & F_LOCAL) ? (int64_t)Pc * cbs - 1 + ((fv & FV_SKIP) ? 2 * cbs : 0) : 2999, 1);
  if (dlens) fi_fill(dlens, r, 0, z.Dk, 0);
  if (dvalid)
    for (int32_t d = 0; d < z.D; d++) *(uint8_t *)ops_at(dvalid, dvalid->host, d, 0, 0) = rng_below(r, 3) != 0;
  fi_fill(ptopk, r, 0, (fv & FV_EMPTY) ? 40 : (int64_t)Pc * cbs - 1 + ((fv & FV_SKIP) ? 2 * cbs : 0), 1);
  if (fv & FV_EMPTY)
    for (int64_t i = 0; i < z.P; i += 2)
      for (int64_t j = 0; j < z.Wp; j++) OPS_I32(ptopk, i, j) = -1;
  fi_fill(sbt, r, 0, 199, 0);
  if (cbt) fi_fill(cbt, r, 0, 199, 0);
  if (fv & FV_TABLE) fi_spread(sbt, r), fi_spread(cbt, r);
  for (int32_t i = 0; i <= z.R; i++) OPS_I32(q, i, 0) = qsl[i];
  for (int32_t i = 0; i < z.R; i++) OPS_I32(sl, i, 0) = seq[i], OPS_I32(rp, i, 0) = replay[i];
  for (int32_t i = 0; i < z.R; i++)
    for (int32_t t = qsl[i]; t < qsl[i + 1]; t++) OPS_I32(t2r, t, 0) = i;
  if (fv & FV_SKIP)
    for (int k = 0; k < 2 && T > 0; k++) OPS_I32(t2r, ops_rr(r, 0, T - 1), 0) = rng_below(r, 2) ? -1 : z.R;
  a->decode_swa_indices = &dswa->t;
  a->decode_compressed_indices = dcomp ? &dcomp->t : NULL;
  a->decode_compressed_topk_lens = dlens ? &dlens->t : NULL;
  a->decode_is_valid_token = dvalid ? &dvalid->t : NULL;
  a->prefill_topk_indices = &ptopk->t, a->query_start_loc = &q->t, a->seq_lens = &sl->t;
  a->replay_start = &rp->t, a->token_to_req_indices = &t2r->t, a->swa_block_table = &sbt->t;
  a->compressed_block_table = cbt ? &cbt->t : NULL;
  in->call.op = OPCALL_FLASHINFER;
  in->call.u.flashinfer = (opcall_flashinfer){a, &out->t, &lens->t};
}

static ops_tensor *by_name(ops_inst *in, const char *name) {
  for (int i = 0; i < in->nx; i++)
    if (!strcmp(in->x[i].name, name)) return &in->x[i];
  return NULL;
}

static const int32_t *pk(ops_inst *in, const char *name, void **keep, int *nkeep) {
  ops_tensor *x = by_name(in, name);
  if (!x) return NULL;
  void *p = !strcmp(name, "decode_is_valid_token") ? (void *)ops_pack_u8(x) : (void *)ops_pack_i32(x);
  keep[(*nkeep)++] = p;
  return p;
}

static void ref_flashinfer_case(ops_inst *in) {
  const dsv4kv_flashinfer_args *a = &in->fi;
  void *keep[16];
  int nk = 0;
  ref_fi_args z;
  memset(&z, 0, sizeof z);
  ops_tensor *dswa = by_name(in, "decode_swa_indices"), *dcomp = by_name(in, "decode_compressed_indices");
  ops_tensor *ptopk = by_name(in, "prefill_topk_indices"), *sbt = by_name(in, "swa_block_table");
  ops_tensor *cbt = by_name(in, "compressed_block_table"), *out = by_name(in, "sparse_indices");
  z.D = (int32_t)dswa->shape[0], z.S = (int32_t)dswa->shape[1], z.Dk = dcomp ? (int32_t)dcomp->shape[1] : 0;
  z.dswa = pk(in, "decode_swa_indices", keep, &nk), z.dcomp = pk(in, "decode_compressed_indices", keep, &nk);
  z.dlens = pk(in, "decode_compressed_topk_lens", keep, &nk);
  z.dvalid = (const uint8_t *)pk(in, "decode_is_valid_token", keep, &nk);
  z.local = a->decode_compressed_indices_are_local;
  z.P = (int32_t)ptopk->shape[0], z.Wp = (int32_t)ptopk->shape[1], z.ptopk = pk(in, "prefill_topk_indices", keep, &nk);
  z.qsl = pk(in, "query_start_loc", keep, &nk), z.R = (int32_t)by_name(in, "query_start_loc")->shape[0] - 1;
  z.seq = pk(in, "seq_lens", keep, &nk), z.replay = pk(in, "replay_start", keep, &nk);
  z.t2r = pk(in, "token_to_req_indices", keep, &nk);
  z.sbt = pk(in, "swa_block_table", keep, &nk), z.Rs = (int32_t)sbt->shape[0], z.Ps = (int32_t)sbt->shape[1];
  z.cbt = pk(in, "compressed_block_table", keep, &nk);
  z.Rc = cbt ? (int32_t)cbt->shape[0] : 0, z.Pc = cbt ? (int32_t)cbt->shape[1] : 0;
  z.sbs = a->swa_block_size, z.sspan = a->swa_block_span, z.cbs = a->compressed_block_size;
  z.cspan = a->compressed_block_span, z.window = a->window_size, z.cr = a->compress_ratio, z.topk = a->topk;
  int32_t *o = ops_pack_i32(out), *l = ops_pack_i32(by_name(in, "sparse_lens"));
  in->want_skipped = 0;
  ref_flashinfer(&z, o, l, &in->want_skipped);
  ops_unpack_i32(out, o);
  ops_unpack_i32(by_name(in, "sparse_lens"), l);
  free(o), free(l);
  for (int i = 0; i < nk; i++) free(keep[i]);
}

static const char *fi_flag_name(int f, char *buf, size_t n) {
  static const char *const w[] = {"comp", "lens", "valid", "local", "cbt", "span", "cr"};
  size_t k = 0;
  buf[0] = '\0';
  for (int b = 0; b < 7; b++)
    if (f & (1 << b)) k += (size_t)snprintf(buf + k, n - k, "%s%s", k ? "_" : "", w[b]);
  if (!k) snprintf(buf, n, "none");
  return buf;
}

/* ------------------------------------------------------------------ the list */
void ops_register_index(ops_list *l) {
  static const struct { int v; const char *n; } gt[] = {
      {0, "random"}, {G_SKIP, "skips"}, {G_PAD | G_LEAD, "padded"}, {G_U8 | G_SKIP, "valid_u8_skips"},
      {G_WRAP, "int32_wrap"}, {G_BIG, "big"}, {G_BIG | G_SKIP | G_PAD, "big_skips_padded"},
      {G_ROWS4, "rows4"}, {G_ROWS4 | G_SKIP | G_LEAD, "rows4_skips"}, {G_ROWS4 | G_WRAP | G_U8, "rows4_int32_wrap"},
      {G_ROWS4 | G_BIG | G_SKIP, "rows4_big_skips"}, {G_WIDE, "wide_table"}, {G_WIDE | G_SKIP | G_PAD, "wide_table_skips"},
      {G_WIDE | G_ROWS4 | G_SKIP, "wide_table_rows4_skips"}, {G_WIDE | G_SPREAD, "wide_table_spread"},
      {G_WIDE | G_SPREAD | G_SKIP | G_PAD, "wide_table_spread_skips_padded"}, {G_SPREAD | G_SKIP, "spread_skips"},
      {G_ENGINE, "engine_table"}, {G_ENGINE | G_SKIP | G_ROWS4, "engine_table_rows4_skips"}};
  for (size_t i = 0; i < sizeof gt / sizeof gt[0]; i++)
    ops_add(l, OPCALL_GLOBAL_TOPK, gen_global_topk, ref_global_topk_case, gt[i].v, 0, 0, 0, "global_topk_%s", gt[i].n);
  /* table widths at the AVX2 rows' register boundaries (8 columns a register) */
  static const int32_t widths[] = {8, 31, 32, 33, 57, 64, 65};
  for (int i = 0; i < 7; i++)
    ops_add(l, OPCALL_GLOBAL_TOPK, gen_global_topk, ref_global_topk_case, G_SPREAD, widths[i], 0, 0,
            "global_topk_spread_p%d", widths[i]);
  static const int32_t crs[] = {0, 1, 4, 128};
  for (int i = 0; i < 4; i++) {
    int32_t cr = crs[i], k = cr ? 2 + 9 * i : 5;
    ops_add(l, OPCALL_COMBINE, gen_combine, ref_combine_case, cr, k, 8, 0, "combine_cr%d", cr);
    ops_add(l, OPCALL_COMBINE, gen_combine, ref_combine_case, cr, k, 3, C_WIDE | C_PAD | C_LEAD,
            "combine_cr%d_wide_padded", cr);
    ops_add(l, OPCALL_COMBINE, gen_combine, ref_combine_case, cr, k, 16, C_SKIP, "combine_cr%d_skips", cr);
    ops_add(l, OPCALL_COMBINE, gen_combine, ref_combine_case, cr, k, 8, C_ALLOC, "combine_alloc_cr%d", cr);
    ops_add(l, OPCALL_COMBINE, gen_combine, ref_combine_case, cr, k, 5, C_ALLOC | C_SKIP, "combine_alloc_cr%d_skips",
            cr);
  }
  ops_add(l, OPCALL_COMBINE, gen_combine, ref_combine_case, 4, 512, 128, C_BIG, "combine_big_topk512");
  /* rows past what a warp a row holds in flight (CUDA: 512 entries) */
  ops_add(l, OPCALL_COMBINE, gen_combine, ref_combine_case, 4, 1040, 128, C_BIG, "combine_big_topk1040");
  ops_add(l, OPCALL_COMBINE, gen_combine, ref_combine_case, 1, 7, 9, C_WRAP, "combine_int32_wrap");
  /* top-k widths that are multiples of 4: 16-byte aligned rows */
  ops_add(l, OPCALL_COMBINE, gen_combine, ref_combine_case, 1, 8, 9, C_WRAP, "combine_w4_int32_wrap");
  ops_add(l, OPCALL_COMBINE, gen_combine, ref_combine_case, 4, 36, 13, C_SKIP | C_LEAD, "combine_w4_skips");
  ops_add(l, OPCALL_COMBINE, gen_combine, ref_combine_case, 128, 64, 128, C_BIG, "combine_w4_big_cr128");
  char fl[64];
  for (int f = 0; f < 128; f++) /* every flag combination */
    ops_add(l, OPCALL_FLASHINFER, gen_flashinfer, ref_flashinfer_case, f, 0, 0, 0, "flashinfer_%s",
            fi_flag_name(f, fl, sizeof fl));
  static const int tf[] = {F_COMP | F_LOCAL | F_CBT | F_CR, F_CBT | F_CR | F_SPAN, F_COMP | F_LOCAL | F_VALID | F_CR,
                           F_CR, F_COMP | F_LOCAL | F_LENS | F_CBT | F_SPAN};
  for (int i = 0; i < 5; i++) {
    ops_add(l, OPCALL_FLASHINFER, gen_flashinfer, ref_flashinfer_case, tf[i], FV_TABLE, 0, 0, "flashinfer_table_%s",
            fi_flag_name(tf[i], fl, sizeof fl));
    ops_add(l, OPCALL_FLASHINFER, gen_flashinfer, ref_flashinfer_case, tf[i], FV_TABLE | FV_SKIP, 0, 0,
            "flashinfer_table_skips_%s", fi_flag_name(tf[i], fl, sizeof fl));
    ops_add(l, OPCALL_FLASHINFER, gen_flashinfer, ref_flashinfer_case, tf[i], FV_TABLE | FV_BIG, 0, 0,
            "flashinfer_table_big_%s", fi_flag_name(tf[i], fl, sizeof fl));
    ops_add(l, OPCALL_FLASHINFER, gen_flashinfer, ref_flashinfer_case, tf[i], FV_TABLE | FV_LONG, 0, 0,
            "flashinfer_table_long_%s", fi_flag_name(tf[i], fl, sizeof fl));
  }
  static const struct { int f, v; const char *n; } fv[] = {
      {F_COMP | F_LENS, FV_DECODE, "decode_only"}, {F_COMP | F_LOCAL | F_VALID, FV_DECODE, "decode_only_local"},
      {F_CR | F_CBT, FV_PREFILL, "prefill_only"},   {F_COMP | F_LOCAL | F_CR | F_CBT, FV_SKIP, "skips_local"},
      {F_COMP | F_CR, FV_SKIP | FV_PAD | FV_LEAD, "skips_global_padded"},
      {F_COMP | F_LOCAL | F_VALID | F_CR | F_SPAN, FV_BIG, "big_local"},
      {F_COMP | F_LENS | F_CR | F_CBT, FV_BIG | FV_SKIP, "big_skips"},
      {F_COMP | F_LENS | F_VALID | F_CR, FV_W4, "w4"},
      {F_COMP | F_LOCAL | F_VALID | F_CR | F_CBT, FV_W4 | FV_SKIP | FV_LEAD, "w4_skips_local"},
      {F_COMP | F_LOCAL | F_VALID, FV_W4 | FV_DECODE | FV_SKIP, "w4_decode_only_local"},
      {F_CR | F_CBT | F_SPAN, FV_W4 | FV_PREFILL | FV_SKIP, "w4_prefill_only"},
      {F_COMP | F_LOCAL | F_VALID | F_CR | F_SPAN, FV_W4 | FV_BIG, "w4_big_local"},
      {F_COMP | F_LENS | F_CR | F_CBT, FV_W4 | FV_BIG | FV_SKIP, "w4_big_skips"},
      {F_COMP | F_LENS | F_VALID | F_CR | F_CBT, FV_WIDE, "wide"},
      {F_COMP | F_LOCAL | F_VALID | F_CR | F_SPAN, FV_WIDE | FV_SKIP, "wide_skips_local"},
      {F_COMP | F_LOCAL | F_CR | F_CBT, FV_WIDE | FV_W4 | FV_PAD, "wide_w4_local_padded"},
      {F_CR | F_CBT, FV_TABLE | FV_EMPTY | FV_PREFILL, "empty_comp_table"},
      {F_CR | F_CBT | F_SPAN, FV_TABLE | FV_EMPTY | FV_PREFILL | FV_PAD, "empty_comp_table_padded"}};
  for (size_t i = 0; i < sizeof fv / sizeof fv[0]; i++)
    ops_add(l, OPCALL_FLASHINFER, gen_flashinfer, ref_flashinfer_case, fv[i].f, fv[i].v, 0, 0, "flashinfer_%s",
            fv[i].n);
}
