/* The library calls of one step (see step.h).
 *
 * Every library op of a step is one entry of the op table below: how to
 * prepare its inputs (outside the timed region), the call itself (DLTensor
 * views of the plan and the caches), and the bytes it moves (ctx.h).
 * sim_ops_run runs the entries of one scope with the same options, timing
 * and status handling:
 *
 *   step   quantize_and_insert_k_cache into the kind's SWA cache (V4
 *          records); at compress-group boundaries into the compressed cache
 *          (--format); indexer_k_norm_rope_store for the kind with an indexer;
 *   group  per group of prefill requests sharing one workspace [R, M, 512]:
 *          dequantize_and_gather_k_cache of each request's whole compressed
 *          cache into rows [0, N) of its slice and of the last
 *          (chunk + window - 1) tokens of its SWA cache at rows [N, M);
 *          combine_topk_swa_indices (stride M, offset N) indexes those rows,
 *          and compute_global_topk_indices_and_lens maps the same synthetic
 *          top-k to compressed-cache slots;
 *   batch  build_flashinfer_mixed_sparse_indices for the decode-first mixed
 *          batch. */
#include <stdio.h>
#include <string.h>

#include "device.h"
#include "step.h"

/* Options of one call doing about `work` element operations.  With --threads
 * 0 (the default) small calls run on one thread: forking an OpenMP team for a
 * decode step's few tokens costs more than the work (see the report). */
#define SIM_SMALL_CALL_WORK (1 << 18)

static dsv4kv_options opts(const sim_ctx *c, int64_t *skipped, int64_t work) {
  *skipped = 0;
  dsv4kv_options o = {
      .skipped = skipped,
      .distinct_slots = c->cfg.distinct_slots, /* (only the inserts and indexer stores read it) */
      .num_threads = c->cfg.threads > 0           ? c->cfg.threads
                     : work < SIM_SMALL_CALL_WORK ? 1
                                                  : 0,
  }; /* every other field (report, stream, ...) zero */
  return o;
}

/* Records a library call's outcome; returns 1 when it succeeded cleanly.  An
 * error (dsv4kv_is_error) stops the run (c->fatal).  A call that completed
 * with a warning fails the verification and the run goes on: the run requires
 * zero skipped entries (and the warnings are not expected at all). */
/* The message of a call's outcome: on the device, a warning's comes from its
 * report (device.c), an error's from the library. */
static const char *call_message(dsv4kv_status st) {
  if (sim_dev_on() && sim_dev_message()[0] && (st == DSV4KV_ERR_BACKEND || !dsv4kv_is_error(st)))
    return sim_dev_message();
  return dsv4kv_last_error();
}

static int lib_ok(sim_kstep *k, dsv4kv_status st, int64_t skipped, const char *what) {
  sim_ctx *c = k->c;
  c->lib_skipped += skipped;
  if (dsv4kv_is_error(st)) {
    snprintf(c->fatal_msg, sizeof c->fatal_msg, "%s (%s layer, step %lld) returned %s: %s", what,
             k->ks->k->label, (long long)c->step, dsv4kv_status_string(st), call_message(st));
    sim_fail(&c->verdict, SIM_FAIL_STATUS, "%s", c->fatal_msg);
    c->fatal = 1;
    return 0;
  }
  if (st == DSV4KV_OK && skipped == 0)
    return 1;
  if (skipped > 0 || st == DSV4KV_WARN_SKIPPED)
    sim_fail(&c->verdict, SIM_FAIL_SKIPPED,
             "%s (%s layer, step %lld): %lld entries skipped as out of range: %s", what,
             k->ks->k->label, (long long)c->step, (long long)skipped, call_message(st));
  else /* another warning (DSV4KV_WARN_NONFINITE), which no call here asks for */
    sim_fail(&c->verdict, SIM_FAIL_STATUS, "%s (%s layer, step %lld) returned %s: %s", what,
             k->ks->k->label, (long long)c->step, dsv4kv_status_string(st), call_message(st));
  return 0;
}

/* ---------------------------------------------------------------------- */
/* Views of the caches                                                      */
/* ---------------------------------------------------------------------- */

/* comp: the kind's compressed cache, else its SWA cache. */
static const dsv4kv_cache_desc *cache_desc(const sim_kstep *k, int comp) {
  return comp ? &k->ks->comp_desc : &k->ks->swa_desc;
}

/* The cache as the library sees it: the pages that have memory (alloc_pages,
 * at most num_pages: the pool's pages past the workload's peak are never
 * handed out and never allocated), so the tensor never claims bytes that
 * are not there. */
static const DLTensor *cache_view(sim_tensor *s, const sim_kstep *k, int comp) {
  const sim_kind_state *ks = k->ks;
  return sim_t2(s, comp ? ks->comp : ks->swa, sim_dt_u8, k->c->alloc_pages,
                comp ? ks->comp_page_bytes : ks->swa_page_bytes);
}

static dsv4kv_status insert(const sim_kstep *k, int comp, uint16_t *keys, int64_t *slots, int64_t n,
                            const dsv4kv_options *o) {
  sim_tensor tk, tcache, tslots;
  return dsv4kv_quantize_and_insert_k_cache(sim_t2(&tk, keys, sim_dt_bf16, n, 512),
                                            cache_view(&tcache, k, comp), cache_desc(k, comp),
                                            sim_t1(&tslots, slots, sim_dt_i64, n), o);
}

/* Gathers R requests into out [R, M, 512] at row `offset`; gl NULL: whole
 * sequences. */
static dsv4kv_status gather(const sim_kstep *k, int comp, uint16_t *out, int32_t R, int32_t M,
                            int32_t *sl, int32_t *gl, const DLTensor *bt, int64_t offset,
                            const dsv4kv_options *o) {
  sim_tensor tout, tcache, tsl, tgl;
  return dsv4kv_dequantize_and_gather_k_cache(
      sim_t3(&tout, out, sim_dt_bf16, R, M, 512), cache_view(&tcache, k, comp), cache_desc(k, comp),
      sim_t1(&tsl, sl, sim_dt_i32, R), gl ? sim_t1(&tgl, gl, sim_dt_i32, R) : NULL, bt, offset, o);
}

/* ---------------------------------------------------------------------- */
/* Step scope: inserts and the indexer store                                */
/* ---------------------------------------------------------------------- */

/* The bf16 keys of the step's new tokens. */
static int token_keys(sim_kstep *k, int comp, int64_t *rows, int64_t *work) {
  sim_ctx *c = k->c;
  const sim_plan *p = &c->plan;
  int32_t T = p->T;
  double t0 = sim_now();
  k->keys = sim_scratch(c, S_K, (size_t)T * 512 * sizeof(uint16_t));
  if (!k->keys)
    return -1;
  for (int32_t t = 0; t < T; t++) {
    if (t + 2 < T) sim_keytable_prefetch(&k->ks->tok_keys, p->tok_content[t + 2]);
    sim_keytable_row(&k->ks->tok_keys, p->tok_content[t], k->keys + (size_t)t * 512);
  }
  sim_op_time(k->ks, SIM_OP_MAKE_K, t0, T, 0);
  *rows = T;
  *work = (int64_t)T * 512;
  return 0;
}

/* The compressed entries (and indexer keys) completed at the step's group
 * boundaries; 1 when there are none. */
static int entry_keys(sim_kstep *k, int comp, int64_t *rows, int64_t *work) {
  sim_ctx *c = k->c;
  sim_kind_state *ks = k->ks;
  const sim_plan *p = &c->plan;
  k->gidx = sim_scratch(c, S_GIDX, (size_t)p->T * sizeof(int32_t));
  if (!k->gidx)
    return -1;
  for (int32_t t = 0; t < p->T; t++)
    if ((p->tok_pos[t] + 1) % k->ratio == 0)
      k->gidx[k->G++] = t;
  int32_t G = k->G;
  if (G == 0)
    return 1;
  double t0 = sim_now();
  k->ck = sim_scratch(c, S_CK, (size_t)G * 512 * sizeof(uint16_t));
  k->cslot = sim_scratch(c, S_CSLOT, (size_t)G * sizeof(int64_t));
  k->kpre = ks->k->has_indexer ? sim_scratch(c, S_KPRE, (size_t)G * 128 * sizeof(uint16_t)) : NULL;
  k->pos64 = sim_scratch(c, S_POS64, (size_t)G * sizeof(int64_t));
  if (!k->ck || !k->cslot || !k->pos64 || (ks->k->has_indexer && !k->kpre))
    return -1;
  for (int32_t g = 0; g < G; g++) {
    int32_t t = k->gidx[g], i = p->tok_req[t], pos = p->tok_pos[t];
    const sim_req *r = p->req[i];
    int32_t entry = pos / k->ratio;
    uint64_t content = sim_entry_content(r->spec, r->id, entry, k->ratio);
    if (g + 1 < G) { /* the next entry's table rows, while this one's are made */
      const int32_t tn = k->gidx[g + 1], pn = p->tok_pos[tn];
      const sim_req *rn = p->req[p->tok_req[tn]];
      const uint64_t cn = sim_entry_content(rn->spec, rn->id, pn / k->ratio, k->ratio);
      sim_keytable_prefetch(&ks->comp_keys, cn);
      if (k->kpre) sim_keytable_prefetch(&ks->idx_keys, cn);
    }
    sim_keytable_row(&ks->comp_keys, content, k->ck + (size_t)g * 512);
    if (k->kpre)
      sim_keytable_row(&ks->idx_keys, content, k->kpre + (size_t)g * 128);
    k->cslot[g] = sim_comp_slot(k, i, entry);
    k->pos64[g] = pos;
  }
  sim_op_time(ks, SIM_OP_MAKE_K, t0, G, 0);
  *rows = G;
  *work = (int64_t)G * 512;
  return 0;
}

static dsv4kv_status insert_call(sim_kstep *k, int comp, const dsv4kv_options *o) {
  if (comp)
    return insert(k, 1, k->ck, k->cslot, k->G, o);
  return insert(k, 0, k->keys, k->c->plan.swa_slot, k->c->plan.T, o);
}

/* bf16 key and slot read, the record written */
static int64_t insert_bytes(const sim_kstep *k, int comp, int64_t rows) {
  return rows * (1024 + 8 + dsv4kv_record_bytes(cache_desc(k, comp)->record));
}

static int indexer_inputs(sim_kstep *k, int comp, int64_t *rows, int64_t *work) {
  if (!k->kpre)
    return 1;
  *rows = k->G;
  *work = (int64_t)k->G * 128;
  return 0;
}

static dsv4kv_status indexer_call(sim_kstep *k, int comp, const dsv4kv_options *o) {
  sim_ctx *c = k->c;
  sim_kind_state *ks = k->ks;
  int32_t G = k->G;
  sim_tensor tk, tpos, tcs, tw, tcache, tslots;
  return dsv4kv_indexer_k_norm_rope_store(
      sim_t2(&tk, k->kpre, sim_dt_bf16, G, 128), sim_t1(&tpos, k->pos64, sim_dt_i64, G),
      sim_t2(&tcs, c->cos_sin, sim_dt_f32, c->cos_sin_rows, 64),
      sim_t1(&tw, c->rms_weight, sim_dt_f32, 128), c->rms_eps,
      sim_t2(&tcache, ks->idx, sim_dt_u8, c->alloc_pages, ks->idx_page_bytes), &ks->idx_desc,
      sim_t1(&tslots, k->cslot, sim_dt_i64, G), k->ratio, o);
}

/* per key: bf16 input, position, slot, fp32 cos/sin row, record; per call the
 * fp32 RMSNorm weight */
static int64_t indexer_bytes(const sim_kstep *k, int comp, int64_t rows) {
  return rows * (256 + 8 + 8 + 64 * 4 + dsv4kv_record_bytes(k->ks->idx_desc.record)) + 128 * 4;
}

/* ---------------------------------------------------------------------- */
/* Group scope: sparse prefill                                              */
/* ---------------------------------------------------------------------- */

int sim_ops_group(sim_kstep *k, int32_t i0, int32_t i1) {
  sim_ctx *c = k->c;
  const sim_plan *p = &c->plan;
  sim_group *g = &k->g;
  int32_t window = c->model->window;
  memset(g, 0, sizeof *g);
  g->i0 = i0;
  g->i1 = i1;
  g->Rg = i1 - i0;
  g->p0 = p->qsl[i0];
  g->Pg = p->qsl[i1] - g->p0;
  g->sl = sim_scratch(c, S_SL, (size_t)g->Rg * sizeof(int32_t));
  g->slc = sim_scratch(c, S_SLC, (size_t)g->Rg * sizeof(int32_t));
  g->gl = sim_scratch(c, S_GL, (size_t)g->Rg * sizeof(int32_t));
  if (!g->sl || !g->slc || !g->gl)
    return -1;
  int32_t Gm = 0;
  for (int32_t j = 0; j < g->Rg; j++) {
    int32_t i = i0 + j, len = p->qsl[i + 1] - p->qsl[i];
    g->sl[j] = p->seq_after[i];
    g->slc[j] = k->ratio ? g->sl[j] / k->ratio : 0;
    g->gl[j] = len + window - 1 < g->sl[j] ? len + window - 1 : g->sl[j];
    if (g->slc[j] > g->N)
      g->N = g->slc[j];
    if (g->gl[j] > Gm)
      Gm = g->gl[j];
  }
  g->M = g->N + Gm;
  g->ws = sim_scratch(c, S_WS, (size_t)g->Rg * (size_t)g->M * 512 * sizeof(uint16_t));
  return g->ws ? 0 : -1;
}

static const DLTensor *group_bt(sim_tensor *s, const sim_kstep *k) {
  const sim_plan *p = &k->c->plan;
  return sim_t2(s, p->bt + (size_t)k->g.i0 * p->bt_width, sim_dt_i32, k->g.Rg, p->bt_width);
}

static const DLTensor *group_topk(sim_tensor *s, const sim_kstep *k) {
  return sim_t2(s, k->topk_m + (size_t)k->g.p0 * k->W, sim_dt_i32, k->g.Pg, k->W);
}

/* Rows gathered: whole compressed caches, or the SWA tails. */
static int gather_rows(sim_kstep *k, int comp, int64_t *rows, int64_t *work) {
  const int32_t *n = comp ? k->g.slc : k->g.gl;
  for (int32_t j = 0; j < k->g.Rg; j++)
    *rows += n[j];
  *work = *rows * 512;
  return 0;
}

/* whole compressed caches into rows [0, N); the SWA tail (chunk + window - 1
 * tokens) into rows [N, N + gather_len) */
static dsv4kv_status gather_call(sim_kstep *k, int comp, const dsv4kv_options *o) {
  sim_group *g = &k->g;
  sim_tensor tbt;
  if (comp)
    return gather(k, 1, g->ws, g->Rg, g->M, g->slc, NULL, group_bt(&tbt, k), 0, o);
  return gather(k, 0, g->ws, g->Rg, g->M, g->sl, g->gl, group_bt(&tbt, k), g->N, o);
}

/* the record read, the bf16 row written */
static int64_t gather_bytes(const sim_kstep *k, int comp, int64_t rows) {
  return rows * (1024 + dsv4kv_record_bytes(cache_desc(k, comp)->record));
}

static int combine_outputs(sim_kstep *k, int comp, int64_t *rows, int64_t *work) {
  sim_group *g = &k->g;
  g->C = sim_round_up(k->topk + k->c->model->window, 128);
  g->comb = sim_scratch(k->c, S_COMB, (size_t)g->Pg * (size_t)g->C * sizeof(int32_t));
  g->clens = sim_scratch(k->c, S_CLENS, (size_t)g->Pg * sizeof(int32_t));
  if (!g->comb || !g->clens)
    return -1;
  memset(g->comb, 0xFF, (size_t)g->Pg * (size_t)g->C * sizeof(int32_t)); /* -1: the columns never written */
  *rows = g->Pg;
  *work = (int64_t)g->Pg * g->C;
  return 0;
}

static dsv4kv_status combine_call(sim_kstep *k, int comp, const dsv4kv_options *o) {
  const sim_plan *p = &k->c->plan;
  sim_group *g = &k->g;
  sim_tensor ttopk, tqsl, tsl, tgl, tcomb, tclens;
  return dsv4kv_combine_topk_swa_indices(
      group_topk(&ttopk, k), sim_t1(&tqsl, p->qsl + g->i0, sim_dt_i32, g->Rg + 1),
      sim_t1(&tsl, g->sl, sim_dt_i32, g->Rg), sim_t1(&tgl, g->gl, sim_dt_i32, g->Rg),
      k->c->model->window, k->ratio, k->topk, g->M, g->N,
      sim_t2(&tcomb, g->comb, sim_dt_i32, g->Pg, g->C),
      sim_t1(&tclens, g->clens, sim_dt_i32, g->Pg), o);
}

/* Per prefill token: its topk_len top-k entries read, the first topk_len +
 * swa_len columns of its row and its length written (int32 each); the rest
 * of the row is never touched. */
static int64_t combine_bytes(const sim_kstep *k, int comp, int64_t rows) {
  const sim_plan *p = &k->c->plan;
  const sim_group *g = &k->g;
  int32_t window = k->c->model->window;
  int64_t entries = 0;
  for (int32_t t = 0; t < g->Pg; t++) {
    int32_t j = p->tok_req[g->p0 + t] - g->i0, pos = p->tok_pos[g->p0 + t];
    int32_t tl = sim_topk_len(k, pos), swa_start = pos - window + 1;
    if (swa_start < g->sl[j] - g->gl[j])
      swa_start = g->sl[j] - g->gl[j];
    if (swa_start < 0)
      swa_start = 0;
    entries += 2 * (int64_t)tl + (pos - swa_start + 1) + 1;
  }
  return entries * 4;
}

static int global_inputs(sim_kstep *k, int comp, int64_t *rows, int64_t *work) {
  sim_ctx *c = k->c;
  sim_group *g = &k->g;
  g->g2r = sim_scratch(c, S_G2R, (size_t)g->Pg * sizeof(int32_t));
  g->valid = sim_scratch(c, S_VALID, (size_t)g->Pg);
  g->glob = sim_scratch(c, S_GLOBAL, (size_t)g->Pg * (size_t)k->W * sizeof(int32_t));
  g->glens = sim_scratch(c, S_GLENS, (size_t)g->Pg * sizeof(int32_t));
  if (!g->g2r || !g->valid || !g->glob || !g->glens)
    return -1;
  for (int32_t t = 0; t < g->Pg; t++) {
    g->g2r[t] = c->plan.tok_req[g->p0 + t] - g->i0;
    g->valid[t] = 1;
  }
  *rows = g->Pg;
  *work = (int64_t)g->Pg * k->W;
  return 0;
}

static dsv4kv_status global_call(sim_kstep *k, int comp, const dsv4kv_options *o) {
  sim_group *g = &k->g;
  sim_tensor ttopk, tg2r, tbt, tvalid, tglob, tglens;
  return dsv4kv_compute_global_topk_indices_and_lens(
      group_topk(&ttopk, k), sim_t1(&tg2r, g->g2r, sim_dt_i32, g->Pg), group_bt(&tbt, k),
      k->ks->cbs, sim_t1(&tvalid, g->valid, sim_dt_bool, g->Pg),
      sim_t2(&tglob, g->glob, sim_dt_i32, g->Pg, k->W),
      sim_t1(&tglens, g->glens, sim_dt_i32, g->Pg), o);
}

/* W top-k entries read, W global entries + length written, request id and
 * valid flag read */
static int64_t global_bytes(const sim_kstep *k, int comp, int64_t rows) {
  return rows * ((int64_t)k->W * 8 + 9);
}

/* ---------------------------------------------------------------------- */
/* Batch scope: the mixed decode + prefill batch                            */
/* ---------------------------------------------------------------------- */

static int mixed_inputs(sim_kstep *k, int comp, int64_t *rows, int64_t *work) {
  sim_ctx *c = k->c;
  const sim_plan *p = &c->plan;
  sim_mixed *m = &k->m;
  int32_t T = p->T, D = p->D, S = c->model->window;
  m->cbs = k->ratio ? k->ks->cbs : c->bs;
  m->Dk = k->ratio ? k->W : 0;
  m->K4 = sim_round_up(k->topk > m->Dk ? k->topk : m->Dk, 4);
  m->width = S + m->K4;
  m->dswa = sim_scratch(c, S_DSWA, (size_t)D * S * sizeof(int32_t) + 4);
  m->fi = sim_scratch(c, S_FI, (size_t)T * m->width * sizeof(int32_t) + 4);
  m->filens = sim_scratch(c, S_FILENS, (size_t)T * sizeof(int32_t) + 4);
  m->replay = sim_scratch(c, S_REPLAY, (size_t)p->R * sizeof(int32_t) + 4);
  m->valid = sim_scratch(c, S_VALID, (size_t)(D > 0 ? D : 1));
  if (!m->dswa || !m->fi || !m->filens || !m->replay || !m->valid)
    return -1;
  for (int32_t t = 0; t < D; t++) {
    int32_t pos = p->tok_pos[t], i = p->tok_req[t], start = sim_swa_start(pos, S);
    int32_t *row = m->dswa + (size_t)t * S;
    for (int32_t j = 0; j < S; j++)
      row[j] = start + j <= pos ? (int32_t)sim_swa_slot(c, i, start + j) : -1;
    m->valid[t] = 1;
  }
  memset(m->replay, 0, (size_t)p->R * sizeof(int32_t));
  *rows = T;
  *work = (int64_t)T * m->width;
  return 0;
}

static dsv4kv_status mixed_call(sim_kstep *k, int comp, const dsv4kv_options *o) {
  sim_ctx *c = k->c;
  const sim_plan *p = &c->plan;
  sim_mixed *m = &k->m;
  int32_t T = p->T, D = p->D, R = p->R;
  sim_tensor tdswa, tdc, tvalid, tptk, tqsl, tsl, trs, tt2r, tbt, tfi, tfil;
  dsv4kv_flashinfer_args a;
  memset(&a, 0, sizeof a);
  a.decode_swa_indices = sim_t2(&tdswa, m->dswa, sim_dt_i32, D, c->model->window);
  a.decode_compressed_indices = k->ratio ? sim_t2(&tdc, k->topk_m, sim_dt_i32, D, k->W) : NULL;
  a.decode_compressed_topk_lens = NULL;
  a.decode_is_valid_token = k->ratio ? sim_t1(&tvalid, m->valid, sim_dt_bool, D) : NULL;
  a.decode_compressed_indices_are_local = 1;
  a.prefill_topk_indices = sim_t2(&tptk, k->topk_m + (size_t)D * k->W, sim_dt_i32, T - D, k->W);
  a.query_start_loc = sim_t1(&tqsl, p->qsl, sim_dt_i32, R + 1);
  a.seq_lens = sim_t1(&tsl, p->seq_after, sim_dt_i32, R);
  a.replay_start = sim_t1(&trs, m->replay, sim_dt_i32, R);
  a.token_to_req_indices = sim_t1(&tt2r, p->tok_req, sim_dt_i32, T);
  a.swa_block_table = sim_t2(&tbt, p->bt, sim_dt_i32, R, p->bt_width);
  a.compressed_block_table = NULL; /* one block table serves every cache */
  a.swa_block_size = c->bs;
  a.swa_block_span = 0;
  a.compressed_block_size = m->cbs;
  a.compressed_block_span = 0;
  a.window_size = c->model->window;
  a.compress_ratio = k->ratio;
  a.topk = k->topk;
  return dsv4kv_build_flashinfer_mixed_sparse_indices(
      &a, sim_t2(&tfi, m->fi, sim_dt_i32, T, m->width), sim_t1(&tfil, m->filens, sim_dt_i32, T), o);
}

/* Every token writes its full row (width int32) and its length and reads its
 * request id; a decode token reads its S window slots, its Dk top-k entries
 * and its valid flag; a prefill token reads its topk_len top-k entries. */
static int64_t mixed_bytes(const sim_kstep *k, int comp, int64_t rows) {
  const sim_plan *p = &k->c->plan;
  int32_t S = k->c->model->window;
  int64_t bytes = (int64_t)p->T * (k->m.width + 1 + 1) * 4;
  bytes += (int64_t)p->D * ((S + k->m.Dk) * 4 + (k->ratio ? 1 : 0));
  for (int32_t t = p->D; t < p->T; t++) {
    int32_t tl = sim_topk_len(k, p->tok_pos[t]);
    bytes += (int64_t)(tl < k->W ? tl : k->W) * 4;
  }
  return bytes;
}

/* ---------------------------------------------------------------------- */
/* The op table                                                             */
/* ---------------------------------------------------------------------- */

typedef struct {
  sim_scope scope;
  sim_op op;        /* the statistics it is timed under                     */
  int comp;         /* the layer's compressed side: skipped on SWA-only
                       layers; inserts and gathers use the compressed cache
                       (else the SWA cache)                                  */
  const char *what; /* its name in failure messages                         */
  /* The inputs, outside the timed region: 0 to call it over *rows rows doing
   * about *work element operations, 1 to skip it, -1 out of memory. */
  int (*prepare)(sim_kstep *k, int comp, int64_t *rows, int64_t *work);
  dsv4kv_status (*call)(sim_kstep *k, int comp, const dsv4kv_options *o);
  /* Bytes it read and wrote (ctx.h), counted after the timed region. */
  int64_t (*bytes)(const sim_kstep *k, int comp, int64_t rows);
} lib_op;

static const lib_op lib_ops[] = {
    {SIM_SCOPE_STEP, SIM_OP_INSERT_SWA, 0, "quantize_and_insert_k_cache (SWA cache)", token_keys,
     insert_call, insert_bytes},
    {SIM_SCOPE_STEP, SIM_OP_INSERT_COMP, 1, "quantize_and_insert_k_cache (compressed cache)",
     entry_keys, insert_call, insert_bytes},
    {SIM_SCOPE_STEP, SIM_OP_INDEXER_STORE, 1, "indexer_k_norm_rope_store", indexer_inputs,
     indexer_call, indexer_bytes},
    {SIM_SCOPE_GROUP, SIM_OP_GATHER_COMP, 1, "dequantize_and_gather_k_cache (compressed cache)",
     gather_rows, gather_call, gather_bytes},
    {SIM_SCOPE_GROUP, SIM_OP_GATHER_SWA, 0, "dequantize_and_gather_k_cache (SWA cache)",
     gather_rows, gather_call, gather_bytes},
    {SIM_SCOPE_GROUP, SIM_OP_COMBINE, 0, "combine_topk_swa_indices", combine_outputs, combine_call,
     combine_bytes},
    {SIM_SCOPE_GROUP, SIM_OP_GLOBAL_TOPK, 1, "compute_global_topk_indices_and_lens", global_inputs,
     global_call, global_bytes},
    {SIM_SCOPE_BATCH, SIM_OP_FLASHINFER, 0, "build_flashinfer_mixed_sparse_indices", mixed_inputs,
     mixed_call, mixed_bytes},
};

int sim_ops_run(sim_kstep *k, sim_scope scope) {
  sim_ctx *c = k->c;
  for (size_t i = 0; i < sizeof lib_ops / sizeof lib_ops[0]; i++) {
    const lib_op *op = &lib_ops[i];
    if (op->scope != scope || (op->comp && k->ratio == 0))
      continue;
    int64_t rows = 0, work = 0, skipped;
    int rc = op->prepare(k, op->comp, &rows, &work);
    if (rc < 0)
      return -1;
    if (rc > 0)
      continue;
    dsv4kv_options o = opts(c, &skipped, work);
    double t0 = sim_now();
    dsv4kv_status st;
    if (sim_dev_on()) { /* GPU time by CUDA events, staging outside it */
      double gpu_seconds;
      sim_dev_call_begin(&o);
      st = sim_dev_call_end(op->call(k, op->comp, &o), &skipped, &gpu_seconds);
      sim_op_seconds(k->ks, op->op, gpu_seconds, rows, 0);
    } else {
      st = op->call(k, op->comp, &o);
      sim_op_time(k->ks, op->op, t0, rows, 0);
    }
    k->ks->ops[op->op].bytes += op->bytes(k, op->comp, rows);
    if (!lib_ok(k, st, skipped, op->what) && c->fatal)
      return -1;
  }
  return 0;
}

/* ---------------------------------------------------------------------- */
/* The decode check's gathers (timed as verification)                       */
/* ---------------------------------------------------------------------- */

int sim_ops_decode_gather(sim_kstep *k, int comp) {
  sim_ctx *c = k->c;
  const sim_plan *p = &c->plan;
  sim_decode *d = &k->d;
  if (comp) {
    int32_t n = k->ratio ? d->sa / k->ratio : 0;
    d->sl[0] = n;
    d->gl[0] = n < 2 ? n : 2;
    if (n <= 0)
      return 0;
  } else {
    d->sl[0] = d->sa;
    d->gl[0] = d->sa < 4 ? d->sa : 4;
  }
  sim_tensor tbt;
  const DLTensor *bt = sim_t2(&tbt, p->bt + (size_t)d->i * p->bt_width, sim_dt_i32, 1, p->bt_width);
  int64_t skipped;
  dsv4kv_options o = opts(c, &skipped, 0);
  dsv4kv_status st;
  if (sim_dev_on()) {
    double gpu_seconds;
    sim_dev_call_begin(&o);
    bt = sim_t2(&tbt, p->bt + (size_t)d->i * p->bt_width, sim_dt_i32, 1, p->bt_width); /* staged now */
    st = sim_dev_call_end(gather(k, comp, d->out, 1, 4, d->sl, d->gl, bt, 0, &o), &skipped, &gpu_seconds);
  } else {
    st = gather(k, comp, d->out, 1, 4, d->sl, d->gl, bt, 0, &o);
  }
  if (!lib_ok(k, st, skipped,
              comp ? "dequantize_and_gather_k_cache (decode check, compressed cache)"
                   : "dequantize_and_gather_k_cache (decode check, SWA cache)") &&
      c->fatal)
    return -1;
  return 0;
}
