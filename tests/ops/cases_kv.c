/* Cases of quantize_and_insert_k_cache (SPEC §3) and
 * dequantize_and_gather_k_cache (SPEC §4). */
#include <stdlib.h>

#include "ops.h"

/* variant bits (p[3]) */
enum {
  V_3D = 1,         /* cache as [pages, block_size, record_bytes]                  */
  V_PAD = 2,        /* padded page stride, row strides, strided block table         */
  V_BIG = 4,        /* large enough for the CPU backend to use several threads      */
  V_OLD = 8,        /* the cache starts with random bytes instead of poison         */
  V_SKIP = 16,      /* out-of-range slots / page ids / lengths: skips counted       */
  V_DUP = 32,       /* insert: many rows per slot                                   */
  V_CHECK = 64,     /* check_nonfinite                                              */
  V_LEAD = 128,     /* tensors at byte_offset OPS_GUARD                             */
  V_DP = 256,       /* insert: k has DP padding rows (NaN) past T                   */
  V_GL = 512,       /* gather: gather_lens given                                    */
  V_OFFSET = 1024,  /* gather: offset > 0 and spare out rows                        */
  V_HUGE = 2048,    /* gather: lengths near 2^31 / offsets near 2^63, counted only  */
  V_MANY = 4096,    /* insert: 3000 rows, past the CUDA backend's shared-memory
                       duplicate scan (its slot marks, cuda_common.cuh)            */
  V_DECODE = 8192,  /* insert: 129-256 rows, the CUDA backend's register scan of
                       the later rows' slots at its widest (DEDUP_WARP_ROWS)      */
  V_LONG = 16384,   /* gather: >= 1024 out rows and up to 1024 tokens a request,
                       the CUDA backend's two tokens a warp (MXFP8)                */
  V_RUNS = 32768    /* insert: runs of adjacent slots, as a prefill's, some over
                       earlier runs (the CPU's streamed groups of records)         */
};

static const struct {
  dsv4kv_record rec;
  int fnuz;
  const char *name;
} kRecs[] = {{DSV4KV_RECORD_V4, 0, "v4"},       {DSV4KV_RECORD_V4, 1, "v4_fnuz"},
             {DSV4KV_RECORD_MXFP8, 0, "mxfp8"}, {DSV4KV_RECORD_MXFP8, 1, "mxfp8_fnuz"},
             {DSV4KV_RECORD_NVFP4, 0, "nvfp4"}};
#define NRECS ((int)(sizeof kRecs / sizeof kRecs[0]))

/* Record widths of SPEC §2 (not asked of the library). */
static int64_t rec_bytes(dsv4kv_record rec) {
  return rec == DSV4KV_RECORD_V4 ? 584 : rec == DSV4KV_RECORD_MXFP8 ? 528 : 288;
}

/* The cache tensor (2-D or 3-D, page stride maybe padded) and its description. */
static ops_tensor *make_cache(ops_inst *in, rng_t *r, dsv4kv_record rec, int fnuz, int32_t bs, int64_t pages,
                              int v, int out) {
  int64_t rb = rec_bytes(rec), pad = (v & V_PAD) ? 8 * ops_rr(r, 1, 6) : 0;
  int64_t ps = bs * rb + pad;
  ops_tensor *c;
  if (v & V_3D) {
    int64_t shape[3] = {pages, bs, rb}, st[3] = {ps, rb, 1};
    c = ops_new(in, "k_cache", dt_u8(), 3, shape, pad ? st : NULL, out);
  } else {
    c = ops_new2(in, "k_cache", dt_u8(), pages, bs * rb, pad, out);
  }
  in->desc = (dsv4kv_cache_desc){rec, fnuz ? DSV4KV_FP8_FNUZ : DSV4KV_FP8_OCP, bs, rng_below(r, 2) ? ps : 0, 0};
  return c;
}

/* ------------------------------------------------------------------ insert */
static void gen_insert(ops_inst *in, rng_t *r, const ops_case *cs) {
  dsv4kv_record rec = kRecs[cs->p[0]].rec;
  int fnuz = kRecs[cs->p[0]].fnuz, kind = cs->p[2], v = cs->p[3];
  static const int32_t bss[] = {1, 5, 16, 64};
  int32_t bs = (v & V_BIG) ? 16 : bss[rng_below(r, 4)];
  int64_t T = (v & V_MANY) ? 3000 : (v & V_BIG) ? 300 : (v & V_DECODE) ? 256 : ops_rr(r, 8, 40);
  if ((v & V_DECODE) && rng_below(r, 2)) T = ops_rr(r, 129, 255); /* else the widest, exactly */
  int64_t pages = (T + 8) / bs + 2, Tk = T + ((v & V_DP) ? 3 : 0);
  in->lead = (v & V_LEAD) ? OPS_GUARD : 0;
  in->check_nonfinite = (v & V_CHECK) != 0;
  ops_tensor *k = ops_new2(in, "k", dt_bf16(), Tk, 512, (v & V_PAD) ? 8 : 0, 0);
  int64_t ss[1] = {T};
  ops_tensor *slots = ops_new(in, "slot_mapping", dt_i64(), 1, ss, NULL, 0);
  ops_tensor *c = make_cache(in, r, rec, fnuz, bs, pages, v, 1);
  for (int64_t t = 0; t < Tk; t++) {
    uint16_t *row = ops_at(k, k->host, t, 0, 0);
    if (t < T) gen_k_row(r, row, 512, rec, fnuz, kind >= 0 ? kind : (int)rng_below(r, ROW_KINDS));
    else for (int d = 0; d < 512; d++) row[d] = 0x7FC1; /* DP padding: never read, never counted */
  }
  gen_slots(r, (int64_t *)ops_at(slots, slots->host, 0, 0, 0), T, pages * bs,
            (v & V_RUNS) ? 3 : (v & V_DUP) ? 2 : (v & V_SKIP) ? 1 : 0);
  if (v & V_OLD) rng_bytes(r, c->host, c->n);
  in->call.op = OPCALL_INSERT;
  in->call.u.insert = (opcall_insert){&k->t, &c->t, &in->desc, &slots->t};
}

static void ref_insert(ops_inst *in) {
  ops_tensor *k = &in->x[0], *slots = &in->x[1], *c = &in->x[2];
  int64_t *s = ops_pack_i64(slots), nf;
  ref_insert_call(in->desc.record, in->desc.fp8 == DSV4KV_FP8_FNUZ, ops_at(k, k->init, 0, 0, 0), k->st[0], s,
                  slots->shape[0], ops_ref_cache(in, c, c->want), &in->want_skipped, &nf);
  in->want_nonfinite = in->check_nonfinite ? nf : 0;
  free(s);
}

/* ------------------------------------------------------------------ gather */
static void fill_gather_cache(ops_tensor *c, rng_t *r, const ops_inst *in, int fill) {
  ref_cache rc = ops_ref_cache(in, c, c->host);
  if (fill == 0) {
    rng_bytes(r, c->host, c->n);
  } else if (fill == 1) {
    gen_cache_codes(rc.data, rc.pages, rc.page_stride, rc.bs, in->desc.record);
  } else { /* records of real rows, as an insert leaves them */
    uint16_t row[512];
    for (int64_t g = 0; g < rc.pages * rc.bs; g++) {
      gen_k_row(r, row, 512, in->desc.record, in->desc.fp8, (int)rng_below(r, ROW_KINDS));
      ref_insert_token(in->desc.record, in->desc.fp8, row, rc.data + (g / rc.bs) * rc.page_stride, rc.bs,
                       (int32_t)(g % rc.bs));
    }
  }
}

/* seq_lens / gather_lens / block table of R requests.  V_SKIP (R >= 3):
 * bad page ids in the table, request 0 past its block-table row, request 1
 * with L < 0, request 2 (given gather_lens) with L > seq_len. */
static void gather_lens(rng_t *r, int v, int64_t R, int64_t P, int32_t bs, int64_t pages, int32_t *seq,
                        int32_t *gl, int32_t *bt) {
  for (int64_t i = 0; i < R; i++) {
    seq[i] = (int32_t)ops_rr(r, 0, P * bs);
    gl[i] = (v & V_GL) ? (int32_t)ops_rr(r, 0, seq[i]) : seq[i];
    for (int64_t j = 0; j < P; j++) bt[i * P + j] = (int32_t)ops_rr(r, 0, pages - 1);
  }
  if (!(v & V_SKIP)) return;
  static const int32_t badpage[] = {-1, INT32_MIN, INT32_MAX, 0}; /* 0: pages */
  for (int k = 0; k < 4; k++) bt[ops_rr(r, 0, R * P - 1)] = badpage[k] ? badpage[k] : (int32_t)pages;
  seq[0] = (int32_t)(P * bs + ops_rr(r, 1, 9));
  gl[0] = (v & V_GL) ? seq[0] - 1 : seq[0];
  gl[1] = (v & V_GL) ? -1 : -2;
  seq[1] = (v & V_GL) ? seq[1] : -2;
  if (v & V_GL) gl[2] = seq[2] + (int32_t)ops_rr(r, 1, 5); /* positions before 0 */
}

static void gen_gather(ops_inst *in, rng_t *r, const ops_case *cs) {
  dsv4kv_record rec = kRecs[cs->p[0]].rec;
  int fnuz = kRecs[cs->p[0]].fnuz, fill = cs->p[2], v = cs->p[3];
  static const int32_t bss[] = {1, 4, 16, 6}; /* 6: the division, not a shift */
  int32_t bs = (v & V_LONG) ? 32 : (v & V_BIG) ? 16 : bss[rng_below(r, 4)];
  int64_t pages = (v & V_LONG) ? 40 : (v & V_BIG) ? 24 : ops_rr(r, 6, 12);
  int64_t R = (v & (V_BIG | V_SKIP | V_LONG)) ? 4 : ops_rr(r, 1, 4);
  int64_t P = (v & V_LONG) ? 32 : (v & V_BIG) ? 8 : ops_rr(r, 1, 4), pad = (v & V_PAD) ? 8 : 0;
  int32_t seq[8], gl[8], bt[128]; /* R <= 4 requests, P <= 32 pages */
  if (fill == 1) bs = 16, P = pages; /* every code: each request reads every token */
  gather_lens(r, v, R, P, bs, pages, seq, gl, bt);
  for (int64_t i = 0; fill == 1 && i < R; i++) {
    seq[i] = gl[i] = (int32_t)(P * bs) - (int32_t)i; /* every value code and, over the tokens, every scale byte */
    for (int64_t j = 0; j < P; j++) bt[i * P + j] = (int32_t)((j + i) % pages);
  }
  int64_t offset = (v & V_OFFSET) ? ops_rr(r, 1, 5) : 0, max_tokens = 0;
  for (int64_t i = 0; i < R; i++) max_tokens = gl[i] > max_tokens ? gl[i] : max_tokens;
  max_tokens += offset + ((v & V_SKIP) ? -ops_rr(r, 0, 2) : ops_rr(r, 0, 2));
  if (max_tokens < 1) max_tokens = 1;
  if ((v & V_LONG) && max_tokens < 1024) max_tokens = 1024 + ops_rr(r, 0, 40);
  if (v & V_HUGE) { /* counted in bulk, never looped over */
    gl[0] = seq[0] = INT32_MAX;
    if (v & V_OFFSET) offset = INT64_MAX - ops_rr(r, 0, 3);
  }
  in->lead = (v & V_LEAD) ? OPS_GUARD : 0;
  int64_t Rout = R + ((v & V_OFFSET) ? 1 : 0), s1 = 512 + pad, s0 = max_tokens * s1 + 2 * pad;
  int64_t os[3] = {Rout, max_tokens, 512}, ost[3] = {s0, s1, 1};
  ops_tensor *out = ops_new(in, "out", dt_bf16(), 3, os, pad ? ost : NULL, 1);
  ops_tensor *c = make_cache(in, r, rec, fnuz, bs, pages, v, 0);
  int64_t rs[1] = {R};
  ops_tensor *sl = ops_new(in, "seq_lens", dt_i32(), 1, rs, NULL, 0);
  ops_tensor *glt = (v & V_GL) ? ops_new(in, "gather_lens", dt_i32(), 1, rs, NULL, 0) : NULL;
  int64_t Rbt = R + (pad ? 1 : 0), cs2 = pad ? 2 : 1, bts[2] = {Rbt, P}, btst[2] = {P * cs2 + pad, cs2};
  ops_tensor *btt = ops_new(in, "block_table", dt_i32(), 2, bts, pad ? btst : NULL, 0);
  for (int64_t i = 0; i < Rbt; i++)
    for (int64_t j = 0; j < P; j++) OPS_I32(btt, i, j) = i < R ? bt[i * P + j] : (int32_t)pages;
  for (int64_t i = 0; i < R; i++) {
    OPS_I32(sl, i, 0) = seq[i];
    if (glt) OPS_I32(glt, i, 0) = gl[i];
  }
  fill_gather_cache(c, r, in, fill);
  in->call.op = OPCALL_GATHER;
  in->call.u.gather = (opcall_gather){&out->t, &c->t, &in->desc, &sl->t, glt ? &glt->t : NULL, &btt->t, offset};
}

static void ref_gather(ops_inst *in) {
  const opcall_gather *g = &in->call.u.gather;
  ops_tensor *out = &in->x[0], *c = &in->x[1], *sl = &in->x[2], *glt = g->gather_lens ? &in->x[3] : NULL;
  ops_tensor *btt = &in->x[glt ? 4 : 3];
  int32_t *seq = ops_pack_i32(sl), *gl = glt ? ops_pack_i32(glt) : NULL, *bt = ops_pack_i32(btt);
  ref_gather_call(in->desc.record, in->desc.fp8 == DSV4KV_FP8_FNUZ, ops_ref_cache(in, c, c->init), seq, gl,
                  sl->shape[0], bt, btt->shape[1], ops_at(out, out->want, 0, 0, 0), out->st[0], out->st[1],
                  out->shape[1], g->offset, &in->want_skipped);
  in->want_nonfinite = 0;
  free(seq);
  free(gl);
  free(bt);
}

/* ------------------------------------------------------------------ the list */
void ops_register_kv(ops_list *l) {
  for (int i = 0; i < NRECS; i++) {
    const char *n = kRecs[i].name;
    for (int kind = 0; kind < ROW_KINDS; kind++)
      ops_add(l, OPCALL_INSERT, gen_insert, ref_insert, i, 0, kind, kind == ROW_SPECIAL ? V_CHECK : 0,
              "insert_%s_%s", n, ops_row_kind_names[kind]);
    ops_add(l, OPCALL_INSERT, gen_insert, ref_insert, i, 0, -1, V_3D | V_PAD | V_LEAD | V_OLD | V_DP,
            "insert_%s_3d_padded_dp", n);
    ops_add(l, OPCALL_INSERT, gen_insert, ref_insert, i, 0, -1, V_SKIP | V_CHECK | V_OLD, "insert_%s_skips", n);
    ops_add(l, OPCALL_INSERT, gen_insert, ref_insert, i, 0, -1, V_DUP | V_BIG | V_PAD, "insert_%s_dup_slots_big", n);
    ops_add(l, OPCALL_INSERT, gen_insert, ref_insert, i, 0, -1, V_DUP | V_DECODE | V_OLD, "insert_%s_dup_slots_decode",
            n);
    ops_add(l, OPCALL_INSERT, gen_insert, ref_insert, i, 0, -1, V_DUP | V_BIG | V_MANY | V_OLD,
            "insert_%s_dup_slots_many", n);
    /* past the shared scan: the marks, with bad slots and specials counted */
    ops_add(l, OPCALL_INSERT, gen_insert, ref_insert, i, 0, ROW_SPECIAL, V_DUP | V_BIG | V_MANY | V_CHECK | V_OLD,
            "insert_%s_dup_slots_many_checked", n);
    ops_add(l, OPCALL_INSERT, gen_insert, ref_insert, i, 0, -1, V_BIG | V_SKIP | V_CHECK | V_3D,
            "insert_%s_big_skips", n);
    ops_add(l, OPCALL_INSERT, gen_insert, ref_insert, i, 0, -1, V_RUNS | V_BIG | V_MANY | V_OLD | V_CHECK,
            "insert_%s_slot_runs", n);
    ops_add(l, OPCALL_INSERT, gen_insert, ref_insert, i, 0, -1, V_RUNS | V_OLD, "insert_%s_slot_runs_small", n);
    /* distinct slots past the shared scan (ops_registry --distinct-slots promises them) */
    ops_add(l, OPCALL_INSERT, gen_insert, ref_insert, i, 0, -1, V_BIG | V_MANY | V_OLD, "insert_%s_many_distinct", n);
    static const char *const fills[] = {"random_bytes", "every_code", "inserted"};
    for (int f = 0; f < 3; f++)
      ops_add(l, OPCALL_GATHER, gen_gather, ref_gather, i, 0, f, V_GL | (f == 1 ? V_PAD | V_3D : 0),
              "gather_%s_%s", n, fills[f]);
    ops_add(l, OPCALL_GATHER, gen_gather, ref_gather, i, 0, 1, V_OFFSET | V_PAD | V_LEAD, "gather_%s_offset_padded",
            n);
    ops_add(l, OPCALL_GATHER, gen_gather, ref_gather, i, 0, 0, V_SKIP | V_GL | V_OFFSET, "gather_%s_skips", n);
    ops_add(l, OPCALL_GATHER, gen_gather, ref_gather, i, 0, 0, V_SKIP, "gather_%s_skips_no_gather_lens", n);
    ops_add(l, OPCALL_GATHER, gen_gather, ref_gather, i, 0, 2, V_BIG | V_GL | V_3D, "gather_%s_big", n);
    ops_add(l, OPCALL_GATHER, gen_gather, ref_gather, i, 0, 0, V_LONG | V_PAD, "gather_%s_long", n);
    ops_add(l, OPCALL_GATHER, gen_gather, ref_gather, i, 0, 0, V_LONG | V_SKIP | V_GL | V_OFFSET, "gather_%s_long_skips",
            n);
    ops_add(l, OPCALL_GATHER, gen_gather, ref_gather, i, 0, 0, V_HUGE | V_GL, "gather_%s_huge_lengths", n);
    ops_add(l, OPCALL_GATHER, gen_gather, ref_gather, i, 0, 0, V_HUGE | V_OFFSET, "gather_%s_huge_offset", n);
  }
}
