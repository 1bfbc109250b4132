/* One engine step through the library, for each layer kind:
 *
 *  1. synthesise the bf16 keys of the step's new tokens;
 *  2. quantize_and_insert_k_cache into the kind's SWA cache (V4 records);
 *  3. at compress-group boundaries, insert the compressed entries into the
 *     compressed cache (--format) and, for the ratio-4 kind, store the indexer
 *     keys with indexer_k_norm_rope_store;
 *  4. sparse prefill, per group of prefill requests sharing one workspace
 *     [R, M, 512]: dequantize_and_gather_k_cache of each request's whole
 *     compressed cache into rows [0, N) of its slice and of the last
 *     (chunk + window - 1) tokens of its SWA cache at rows [N, M);
 *     combine_topk_swa_indices (stride M, offset N) indexes those rows, and
 *     compute_global_topk_indices_and_lens maps the same synthetic top-k to
 *     compressed-cache slots;
 *  5. build_flashinfer_mixed_sparse_indices for the decode-first mixed batch.
 * Every produced index is checked, gathered keys are compared with their bf16
 * originals on a seeded sample (see check.h for the bounds). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctx.h"
#include "rng.h"

/* Bytes of one workspace batch at most (several prefill requests share one). */
#define SIM_WORKSPACE_BYTES (128u << 20)

enum {
  S_K,
  S_CK,
  S_CSLOT,
  S_KPRE,
  S_POS64,
  S_TOPK,
  S_WS,
  S_SL,
  S_SLC,
  S_GL,
  S_COMB,
  S_CLENS,
  S_G2R,
  S_VALID,
  S_GLOBAL,
  S_GLENS,
  S_DSWA,
  S_FI,
  S_FILENS,
  S_REPLAY,
  S_GIDX,
  S_ORIG,
  S_VOUT,
  S_VSL,
  S_VGL,
  S_NUM
};

typedef struct {
  sim_ctx *c;
  sim_kind_state *ks;
  int kind;
  int32_t ratio, topk, W; /* topk parameter of this step; W = columns of the top-k matrix */
  int32_t *topk_m;        /* [T, W] local top-k (decode rows first)          */
  int32_t G;              /* boundary tokens this step                       */
  int32_t *gidx;          /* [G] their token indices                         */
  int64_t *cslot;         /* [G] compressed slots                            */
  uint16_t *kpre;         /* [G, 128] indexer inputs                         */
} kind_step;

static void *scratch(sim_ctx *c, int which, size_t bytes) {
  void *p = sim_buf_reserve(&c->b_scratch[which], bytes);
  if (!p && !c->fatal) {
    snprintf(c->fatal_msg, sizeof c->fatal_msg, "out of memory (%zu bytes of scratch)", bytes);
    sim_fail(&c->verdict, SIM_FAIL_STATUS, "%s", c->fatal_msg);
    c->fatal = 1;
  }
  return p;
}

/* Times a call that started at t0.  `bytes` follows the definitions of
 * ctx.h (sim_op); ops whose byte count needs a pass over the batch add it
 * with op_bytes afterwards, outside the timed region. */
static void op_add(sim_kind_state *ks, sim_op op, double t0, int64_t rows, int64_t bytes) {
  sim_opstat *s = &ks->ops[op];
  s->seconds += sim_now() - t0;
  s->calls++;
  s->rows += rows;
  s->bytes += bytes;
}

static void op_bytes(sim_kind_state *ks, sim_op op, int64_t bytes) {
  ks->ops[op].bytes += bytes;
}

/* Top-k entries a token at `pos` uses: min((pos + 1) / ratio, topk), 0 on an
 * SWA-only layer. */
static int32_t topk_len(const kind_step *k, int32_t pos) {
  if (k->ratio == 0)
    return 0;
  int32_t n = (pos + 1) / k->ratio;
  return n < k->topk ? n : k->topk;
}

/* Records a library call's outcome; returns 1 when it succeeded cleanly. */
static int lib_ok(kind_step *ks, dsv4kv_status st, int64_t skipped, const char *what) {
  sim_ctx *c = ks->c;
  c->lib_skipped += skipped;
  if (st == DSV4KV_OK && skipped == 0)
    return 1;
  if (st == DSV4KV_OK || st == DSV4KV_WARN_SKIPPED) {
    sim_fail(&c->verdict, SIM_FAIL_SKIPPED,
             "%s (%s layer, step %lld): %lld entries skipped as out of range: %s", what,
             ks->ks->k->label, (long long)c->step, (long long)skipped, dsv4kv_last_error());
    return 0;
  }
  snprintf(c->fatal_msg, sizeof c->fatal_msg, "%s (%s layer, step %lld) returned %s: %s", what,
           ks->ks->k->label, (long long)c->step, dsv4kv_status_string(st), dsv4kv_last_error());
  sim_fail(&c->verdict, SIM_FAIL_STATUS, "%s", c->fatal_msg);
  c->fatal = 1;
  return 0;
}

/* Options of one call doing about `work` element operations.  With --threads
 * 0 (the default) small calls run on one thread: forking an OpenMP team for a
 * decode step's few tokens costs more than the work (see the report). */
#define SIM_SMALL_CALL_WORK (1 << 18)

static dsv4kv_options opts(const sim_ctx *c, int64_t *skipped, int64_t work) {
  *skipped = 0;
  dsv4kv_options o;
  memset(&o, 0, sizeof o);
  o.skipped = skipped;
  o.num_threads = c->cfg.threads > 0 ? c->cfg.threads : work < SIM_SMALL_CALL_WORK ? 1 : 0;
  return o;
}

static int32_t round_up(int32_t x, int32_t m) {
  return (x + m - 1) / m * m;
}

/* ---------------------------------------------------------------------- */
/* The plan: per-token and per-request arrays of the step                   */
/* ---------------------------------------------------------------------- */

static int plan_build(sim_ctx *c, const sim_batch *b) {
  sim_plan *p = &c->plan;
  int32_t T = b->num_tokens, R = b->num_items, bs = c->bs;
  int32_t width = 1;
  for (int32_t i = 0; i < R; i++) {
    const sim_req *r = &c->sched.reqs[b->items[i].req];
    if (r->num_pages > width)
      width = r->num_pages;
  }
  p->T = T;
  p->D = b->num_decode;
  p->R = R;
  p->bt_width = width;
  p->tok_req = sim_buf_reserve(&c->b_plan[0], (size_t)T * sizeof(int32_t));
  p->tok_pos = sim_buf_reserve(&c->b_plan[1], (size_t)T * sizeof(int32_t));
  p->tok_content = sim_buf_reserve(&c->b_plan[2], (size_t)T * sizeof(uint64_t));
  p->swa_slot = sim_buf_reserve(&c->b_plan[3], (size_t)T * sizeof(int64_t));
  p->qsl = sim_buf_reserve(&c->b_plan[4], (size_t)(R + 1) * sizeof(int32_t));
  p->seq_after = sim_buf_reserve(&c->b_plan[5], (size_t)R * sizeof(int32_t));
  p->bt = sim_buf_reserve(&c->b_plan[6], (size_t)R * (size_t)width * sizeof(int32_t));
  p->req = sim_buf_reserve(&c->b_plan[7], (size_t)R * sizeof(sim_req *));
  if (!p->tok_req || !p->tok_pos || !p->tok_content || !p->swa_slot || !p->qsl || !p->seq_after ||
      !p->bt || !p->req) {
    snprintf(c->fatal_msg, sizeof c->fatal_msg, "out of memory building step %lld",
             (long long)c->step);
    sim_fail(&c->verdict, SIM_FAIL_STATUS, "%s", c->fatal_msg);
    c->fatal = 1;
    return -1;
  }
  p->qsl[0] = 0;
  for (int32_t i = 0; i < R; i++) {
    const sim_item *it = &b->items[i];
    sim_req *r = &c->sched.reqs[it->req];
    p->req[i] = r;
    p->qsl[i + 1] = p->qsl[i] + it->len;
    p->seq_after[i] = it->start + it->len;
    int32_t *row = p->bt + (size_t)i * width;
    for (int32_t k = 0; k < width; k++)
      row[k] = k < r->num_pages ? r->pages[k] : -1;
    for (int32_t j = 0; j < it->len; j++) {
      int32_t t = p->qsl[i] + j, pos = it->start + j;
      p->tok_req[t] = i;
      p->tok_pos[t] = pos;
      p->tok_content[t] = sim_token_content(r->spec, r->id, pos);
      p->swa_slot[t] = (int64_t)r->pages[pos / bs] * bs + pos % bs;
    }
  }
  return 0;
}

/* Does `slot` of a cache with `unit` slots per page address one of request
 * i's pages, at a unit (token or entry) below `valid`? */
static int owned(const sim_ctx *c, int32_t i, int64_t slot, int32_t unit, int64_t valid) {
  if (slot < 0)
    return 0;
  int64_t page = slot / unit;
  if (page >= c->pool.num_pages || c->pool.refcount[page] <= 0)
    return 0;
  const sim_req *r = c->plan.req[i];
  int32_t lg = c->pool.logical[page];
  if (lg < 0 || lg >= r->num_pages || r->pages[lg] != page)
    return 0;
  return (int64_t)lg * unit + slot % unit < valid;
}

/* Slot of unit x (token or compressed entry, x >= 0) through a block-table
 * row with `unit` slots per page. */
static inline int64_t map_slot(const int32_t *row, int64_t x, int32_t unit, int shift) {
  if (shift >= 0)
    return ((int64_t)row[x >> shift] << shift) | (x & (unit - 1));
  return (int64_t)row[x / unit] * unit + x % unit;
}

static inline const int32_t *bt_row(const sim_ctx *c, int32_t i) {
  return c->plan.bt + (size_t)i * c->plan.bt_width;
}

static int64_t swa_slot_of(const sim_ctx *c, int32_t i, int64_t pos) {
  return map_slot(bt_row(c, i), pos, c->bs, c->bs_shift);
}

static int64_t comp_slot_of(const kind_step *k, int32_t i, int64_t entry) {
  return map_slot(bt_row(k->c, i), entry, k->ks->cbs, k->ks->cbs_shift);
}

static const char *where(const sim_ctx *c, int32_t i, char *buf, size_t n) {
  const sim_req *r = c->plan.req[i];
  if (r->spec->line > 0)
    snprintf(buf, n, "request %d (trace line %lld)", r->id, (long long)r->spec->line);
  else
    snprintf(buf, n, "request %d", r->id);
  return buf;
}

/* ---------------------------------------------------------------------- */
/* Synthetic top-k                                                          */
/* ---------------------------------------------------------------------- */

static uint64_t gcd64(uint64_t a, uint64_t b) {
  while (b) {
    uint64_t t = a % b;
    a = b;
    b = t;
  }
  return a;
}

/* Row of W entries: min(n, k) distinct local entries of [0, n), then -1.
 * With n > k the selection is a seeded affine walk (a + j s) mod n, gcd(s, n) = 1. */
static void topk_row(int32_t *row, int32_t W, int32_t n, int32_t k, uint64_t h) {
  int32_t m = n < k ? n : k;
  if (m < 0)
    m = 0;
  if (n <= k) {
    for (int32_t j = 0; j < m; j++)
      row[j] = j;
  } else {
    uint64_t a = h % (uint64_t)n, s = 1 + (h >> 24) % (uint64_t)(n - 1);
    while (gcd64(s, (uint64_t)n) != 1)
      s = s % (uint64_t)(n - 1) + 1;
    uint64_t x = a;
    for (int32_t j = 0; j < m; j++) {
      row[j] = (int32_t)x;
      x += s;
      if (x >= (uint64_t)n)
        x -= (uint64_t)n;
    }
  }
  for (int32_t j = m; j < W; j++)
    row[j] = -1;
}

static int make_topk(kind_step *k) {
  sim_ctx *c = k->c;
  const sim_plan *p = &c->plan;
  if (k->ratio == 0) {
    k->topk = 0;
    k->W = 1;
  } else if (k->ks->k->topk > 0) {
    k->topk = k->ks->k->topk;
    k->W = k->topk;
  } else { /* dense: every compressed entry of the step's longest sequence */
    int32_t mx = 1;
    for (int32_t t = 0; t < p->T; t++) {
      int32_t n = (p->tok_pos[t] + 1) / k->ratio;
      if (n > mx)
        mx = n;
    }
    k->topk = mx;
    k->W = mx;
  }
  k->topk_m = scratch(c, S_TOPK, (size_t)p->T * (size_t)k->W * sizeof(int32_t) + 4);
  if (!k->topk_m)
    return -1;
  for (int32_t t = 0; t < p->T; t++) {
    int32_t *row = k->topk_m + (size_t)t * k->W;
    if (k->ratio == 0) {
      row[0] = -1;
      continue;
    }
    const sim_req *r = p->req[p->tok_req[t]];
    uint64_t h = sim_hash3(c->cfg.seed ^ 0x746f706bu, sim_hash2((uint64_t)k->kind, (uint64_t)r->id),
                           (uint64_t)p->tok_pos[t]);
    topk_row(row, k->W, (p->tok_pos[t] + 1) / k->ratio, k->topk, h);
  }
  return 0;
}

/* ---------------------------------------------------------------------- */
/* Inserts                                                                  */
/* ---------------------------------------------------------------------- */

static int do_inserts(kind_step *k) {
  sim_ctx *c = k->c;
  sim_kind_state *ks = k->ks;
  const sim_plan *p = &c->plan;
  int32_t T = p->T;
  sim_tensor tk, tcache, tslots;
  int64_t sk;
  dsv4kv_options o;

  /* 1. keys of the new tokens */
  double t0 = sim_now();
  uint16_t *keys = scratch(c, S_K, (size_t)T * 512 * sizeof(uint16_t));
  if (!keys)
    return -1;
  for (int32_t t = 0; t < T; t++)
    sim_keytable_row(&ks->tok_keys, p->tok_content[t], keys + (size_t)t * 512);
  op_add(ks, SIM_OP_MAKE_K, t0, T, 0);

  /* 2. SWA cache, V4 records */
  o = opts(c, &sk, (int64_t)T * 512);
  t0 = sim_now();
  dsv4kv_status st = dsv4kv_quantize_and_insert_k_cache(
      sim_t2(&tk, keys, sim_dt_bf16, T, 512),
      sim_t2(&tcache, ks->swa, sim_dt_u8, c->num_pages, ks->swa_page_bytes), &ks->swa_desc,
      sim_t1(&tslots, p->swa_slot, sim_dt_i64, T), &o);
  op_add(ks, SIM_OP_INSERT_SWA, t0, T,
         (int64_t)T * (1024 + 8 + dsv4kv_record_bytes(DSV4KV_RECORD_V4)));
  if (!lib_ok(k, st, sk, "quantize_and_insert_k_cache (SWA cache)") && c->fatal)
    return -1;

  /* 3. compressed entries and indexer keys at group boundaries */
  k->G = 0;
  if (k->ratio == 0)
    return 0;
  k->gidx = scratch(c, S_GIDX, (size_t)T * sizeof(int32_t));
  if (!k->gidx)
    return -1;
  for (int32_t t = 0; t < T; t++)
    if ((p->tok_pos[t] + 1) % k->ratio == 0)
      k->gidx[k->G++] = t;
  int32_t G = k->G;
  if (G == 0)
    return 0;
  t0 = sim_now();
  uint16_t *ck = scratch(c, S_CK, (size_t)G * 512 * sizeof(uint16_t));
  k->cslot = scratch(c, S_CSLOT, (size_t)G * sizeof(int64_t));
  k->kpre = ks->k->has_indexer ? scratch(c, S_KPRE, (size_t)G * 128 * sizeof(uint16_t)) : NULL;
  int64_t *pos64 = scratch(c, S_POS64, (size_t)G * sizeof(int64_t));
  if (!ck || !k->cslot || !pos64 || (ks->k->has_indexer && !k->kpre))
    return -1;
  for (int32_t g = 0; g < G; g++) {
    int32_t t = k->gidx[g], i = p->tok_req[t], pos = p->tok_pos[t];
    const sim_req *r = p->req[i];
    int32_t entry = pos / k->ratio;
    uint64_t content = sim_entry_content(r->spec, r->id, entry, k->ratio);
    sim_keytable_row(&ks->comp_keys, content, ck + (size_t)g * 512);
    if (k->kpre)
      sim_keytable_row(&ks->idx_keys, content, k->kpre + (size_t)g * 128);
    k->cslot[g] = comp_slot_of(k, i, entry);
    pos64[g] = pos;
  }
  op_add(ks, SIM_OP_MAKE_K, t0, G, 0);

  int32_t crec = dsv4kv_record_bytes(ks->comp_desc.record);
  o = opts(c, &sk, (int64_t)G * 512);
  t0 = sim_now();
  st = dsv4kv_quantize_and_insert_k_cache(
      sim_t2(&tk, ck, sim_dt_bf16, G, 512),
      sim_t2(&tcache, ks->comp, sim_dt_u8, c->num_pages, ks->comp_page_bytes), &ks->comp_desc,
      sim_t1(&tslots, k->cslot, sim_dt_i64, G), &o);
  op_add(ks, SIM_OP_INSERT_COMP, t0, G, (int64_t)G * (1024 + 8 + crec));
  if (!lib_ok(k, st, sk, "quantize_and_insert_k_cache (compressed cache)") && c->fatal)
    return -1;

  if (!k->kpre)
    return 0;
  sim_tensor tpos, tcs, tw;
  int32_t irec = dsv4kv_record_bytes(ks->idx_desc.record);
  o = opts(c, &sk, (int64_t)G * 128);
  t0 = sim_now();
  st = dsv4kv_indexer_k_norm_rope_store(
      sim_t2(&tk, k->kpre, sim_dt_bf16, G, 128), sim_t1(&tpos, pos64, sim_dt_i64, G),
      sim_t2(&tcs, c->cos_sin, sim_dt_f32, c->cos_sin_rows, 64),
      sim_t1(&tw, c->rms_weight, sim_dt_f32, 128), c->rms_eps,
      sim_t2(&tcache, ks->idx, sim_dt_u8, c->num_pages, ks->idx_page_bytes), &ks->idx_desc,
      sim_t1(&tslots, k->cslot, sim_dt_i64, G), k->ratio, &o);
  /* per key: bf16 input, position, slot, fp32 cos/sin row, record; per call
   * the fp32 RMSNorm weight */
  op_add(ks, SIM_OP_INDEXER_STORE, t0, G, (int64_t)G * (256 + 8 + 8 + 64 * 4 + irec) + 128 * 4);
  if (!lib_ok(k, st, sk, "indexer_k_norm_rope_store") && c->fatal)
    return -1;

  /* verify one stored indexer record per step against an independent reference */
  t0 = sim_now();
  sim_rng rng = sim_rng_make(sim_hash3(c->cfg.seed, (uint64_t)c->step, 0x696478u));
  int32_t g = (int32_t)sim_rng_below(&rng, (uint64_t)G);
  int32_t t = k->gidx[g], pos = p->tok_pos[t];
  int64_t cp = (int64_t)(pos / k->ratio) * k->ratio;
  float ref[128];
  sim_indexer_reference(k->kpre + (size_t)g * 128, c->rms_weight, c->rms_eps, c->cos_sin + cp * 64,
                        ref);
  int64_t page = k->cslot[g] / ks->cbs, slot_in = k->cslot[g] % ks->cbs;
  const uint8_t *base = ks->idx + page * ks->idx_page_bytes;
  int32_t vbytes = ks->idx_desc.record == DSV4KV_RECORD_INDEXER_FP8 ? 128 : 64;
  int bad =
      sim_check_indexer_record(ks->idx_desc.record, base + slot_in * vbytes,
                               base + (int64_t)ks->cbs * vbytes + slot_in * 4, ref, &ks->err_idx);
  c->verdict.indexer_checked++;
  if (bad) {
    char wbuf[96];
    sim_fail(&c->verdict, SIM_FAIL_INDEXER,
             "%s layer, step %lld, %s, position %d: %d of 128 indexer values outside the bound",
             ks->k->label, (long long)c->step, where(c, p->tok_req[t], wbuf, sizeof wbuf), pos,
             bad);
  }
  op_add(ks, SIM_OP_VERIFY, t0, 1, 0);
  return 0;
}

/* ---------------------------------------------------------------------- */
/* Key checks                                                               */
/* ---------------------------------------------------------------------- */

/* Compares a gathered row with the original key of token `pos` (entry < 0)
 * or of compressed entry `entry` of request i. */
static void check_row(kind_step *k, int32_t i, int32_t pos, int32_t entry, const uint16_t *got,
                      const char *what) {
  sim_ctx *c = k->c;
  sim_kind_state *ks = k->ks;
  const sim_req *r = c->plan.req[i];
  uint16_t *orig = scratch(c, S_ORIG, 512 * sizeof(uint16_t));
  if (!orig)
    return;
  int bad;
  if (entry < 0) {
    sim_keytable_row(&ks->tok_keys, sim_token_content(r->spec, r->id, pos), orig);
    bad = sim_check_key_row(ks->swa_desc.record, c->fp8_max, orig, got, &ks->err_swa);
  } else {
    sim_keytable_row(&ks->comp_keys, sim_entry_content(r->spec, r->id, entry, k->ratio), orig);
    bad = sim_check_key_row(ks->comp_desc.record, c->fp8_max, orig, got, &ks->err_comp);
  }
  c->verdict.rows_checked++;
  if (bad) {
    char wbuf[96];
    sim_fail(&c->verdict, SIM_FAIL_KEY,
             "%s layer, step %lld, %s, %s %d (%s): %d of 512 values outside the %s error bound",
             ks->k->label, (long long)c->step, where(c, i, wbuf, sizeof wbuf),
             entry < 0 ? "token" : "compressed entry", entry < 0 ? pos : entry, what, bad,
             sim_record_name(entry < 0 ? ks->swa_desc.record : ks->comp_desc.record));
  }
}

/* ---------------------------------------------------------------------- */
/* Sparse prefill: gathers, combine, global top-k                           */
/* ---------------------------------------------------------------------- */

/* Bytes combine_topk_swa_indices moves for the Pg prefill tokens from item i0
 * on: per token it reads its topk_len top-k entries and writes the first
 * topk_len + swa_len columns of its row and its length (int32 each); the
 * rest of the row is never touched. */
static int64_t combine_bytes(const kind_step *k, int32_t i0, int32_t Pg, const int32_t *sl,
                             const int32_t *gl) {
  const sim_plan *p = &k->c->plan;
  int32_t p0 = p->qsl[i0], window = k->c->model->window;
  int64_t entries = 0;
  for (int32_t t = 0; t < Pg; t++) {
    int32_t j = p->tok_req[p0 + t] - i0, pos = p->tok_pos[p0 + t];
    int32_t tl = topk_len(k, pos), swa_start = pos - window + 1;
    if (swa_start < sl[j] - gl[j])
      swa_start = sl[j] - gl[j];
    if (swa_start < 0)
      swa_start = 0;
    entries += 2 * (int64_t)tl + (pos - swa_start + 1) + 1;
  }
  return entries * 4;
}

static int prefill_group(kind_step *k, int32_t i0, int32_t i1) {
  sim_ctx *c = k->c;
  sim_kind_state *ks = k->ks;
  const sim_plan *p = &c->plan;
  int32_t Rg = i1 - i0, p0 = p->qsl[i0], Pg = p->qsl[i1] - p0, window = c->model->window;
  int32_t *sl = scratch(c, S_SL, (size_t)Rg * sizeof(int32_t));
  int32_t *slc = scratch(c, S_SLC, (size_t)Rg * sizeof(int32_t));
  int32_t *gl = scratch(c, S_GL, (size_t)Rg * sizeof(int32_t));
  if (!sl || !slc || !gl)
    return -1;
  int32_t N = 0, Gm = 0;
  for (int32_t j = 0; j < Rg; j++) {
    int32_t i = i0 + j, len = p->qsl[i + 1] - p->qsl[i];
    sl[j] = p->seq_after[i];
    slc[j] = k->ratio ? sl[j] / k->ratio : 0;
    gl[j] = len + window - 1 < sl[j] ? len + window - 1 : sl[j];
    if (slc[j] > N)
      N = slc[j];
    if (gl[j] > Gm)
      Gm = gl[j];
  }
  int32_t M = N + Gm;
  uint16_t *ws = scratch(c, S_WS, (size_t)Rg * (size_t)M * 512 * sizeof(uint16_t));
  if (!ws)
    return -1;
  sim_tensor tout, tcache, tsl, tgl, tbt;
  const DLTensor *bt = sim_t2(&tbt, p->bt + (size_t)i0 * p->bt_width, sim_dt_i32, Rg, p->bt_width);
  int64_t sk;
  dsv4kv_options o;
  dsv4kv_status st;
  double t0;

  /* whole compressed caches into rows [0, N) */
  if (k->ratio) {
    int64_t rows = 0;
    for (int32_t j = 0; j < Rg; j++)
      rows += slc[j];
    o = opts(c, &sk, rows * 512);
    t0 = sim_now();
    st = dsv4kv_dequantize_and_gather_k_cache(
        sim_t3(&tout, ws, sim_dt_bf16, Rg, M, 512),
        sim_t2(&tcache, ks->comp, sim_dt_u8, c->num_pages, ks->comp_page_bytes), &ks->comp_desc,
        sim_t1(&tsl, slc, sim_dt_i32, Rg), NULL, bt, 0, &o);
    op_add(ks, SIM_OP_GATHER_COMP, t0, rows,
           rows * (1024 + dsv4kv_record_bytes(ks->comp_desc.record)));
    if (!lib_ok(k, st, sk, "dequantize_and_gather_k_cache (compressed cache)") && c->fatal)
      return -1;
  }
  /* the SWA tail (chunk + window - 1 tokens) into rows [N, N + gather_len) */
  {
    int64_t rows = 0;
    for (int32_t j = 0; j < Rg; j++)
      rows += gl[j];
    o = opts(c, &sk, rows * 512);
    t0 = sim_now();
    st = dsv4kv_dequantize_and_gather_k_cache(
        sim_t3(&tout, ws, sim_dt_bf16, Rg, M, 512),
        sim_t2(&tcache, ks->swa, sim_dt_u8, c->num_pages, ks->swa_page_bytes), &ks->swa_desc,
        sim_t1(&tsl, sl, sim_dt_i32, Rg), sim_t1(&tgl, gl, sim_dt_i32, Rg), bt, N, &o);
    op_add(ks, SIM_OP_GATHER_SWA, t0, rows,
           rows * (1024 + dsv4kv_record_bytes(ks->swa_desc.record)));
    if (!lib_ok(k, st, sk, "dequantize_and_gather_k_cache (SWA cache)") && c->fatal)
      return -1;
  }

  /* combine_topk_swa_indices over the workspace */
  int32_t C = round_up(k->topk + window, 128);
  int32_t *comb = scratch(c, S_COMB, (size_t)Pg * (size_t)C * sizeof(int32_t));
  int32_t *clens = scratch(c, S_CLENS, (size_t)Pg * sizeof(int32_t));
  if (!comb || !clens)
    return -1;
  for (size_t x = 0; x < (size_t)Pg * (size_t)C; x++)
    comb[x] = -1;
  sim_tensor ttopk, tqsl, tcomb, tclens;
  const DLTensor *topk = sim_t2(&ttopk, k->topk_m + (size_t)p0 * k->W, sim_dt_i32, Pg, k->W);
  o = opts(c, &sk, (int64_t)Pg * C);
  t0 = sim_now();
  st = dsv4kv_combine_topk_swa_indices(
      topk, sim_t1(&tqsl, p->qsl + i0, sim_dt_i32, Rg + 1), sim_t1(&tsl, sl, sim_dt_i32, Rg),
      sim_t1(&tgl, gl, sim_dt_i32, Rg), window, k->ratio, k->topk, M, N,
      sim_t2(&tcomb, comb, sim_dt_i32, Pg, C), sim_t1(&tclens, clens, sim_dt_i32, Pg), &o);
  op_add(ks, SIM_OP_COMBINE, t0, Pg, 0);
  op_bytes(ks, SIM_OP_COMBINE, combine_bytes(k, i0, Pg, sl, gl));
  if (!lib_ok(k, st, sk, "combine_topk_swa_indices") && c->fatal)
    return -1;

  /* compute_global_topk_indices_and_lens: the same top-k as cache slots */
  int32_t *glob = NULL, *glens = NULL;
  if (k->ratio) {
    int32_t *g2r = scratch(c, S_G2R, (size_t)Pg * sizeof(int32_t));
    uint8_t *valid = scratch(c, S_VALID, (size_t)Pg);
    glob = scratch(c, S_GLOBAL, (size_t)Pg * (size_t)k->W * sizeof(int32_t));
    glens = scratch(c, S_GLENS, (size_t)Pg * sizeof(int32_t));
    if (!g2r || !valid || !glob || !glens)
      return -1;
    for (int32_t t = 0; t < Pg; t++) {
      g2r[t] = p->tok_req[p0 + t] - i0;
      valid[t] = 1;
    }
    sim_tensor tg2r, tvalid, tglob, tglens;
    o = opts(c, &sk, (int64_t)Pg * k->W);
    t0 = sim_now();
    st = dsv4kv_compute_global_topk_indices_and_lens(
        topk, sim_t1(&tg2r, g2r, sim_dt_i32, Pg), bt, ks->cbs,
        sim_t1(&tvalid, valid, sim_dt_bool, Pg), sim_t2(&tglob, glob, sim_dt_i32, Pg, k->W),
        sim_t1(&tglens, glens, sim_dt_i32, Pg), &o);
    op_add(ks, SIM_OP_GLOBAL_TOPK, t0, Pg, (int64_t)Pg * ((int64_t)k->W * 8 + 9));
    if (!lib_ok(k, st, sk, "compute_global_topk_indices_and_lens") && c->fatal)
      return -1;
  }

  /* ---- verification ---- */
  t0 = sim_now();
  sim_verdict *v = &c->verdict;
  char wbuf[96];
  sim_rng rng = sim_rng_make(
      sim_hash3(c->cfg.seed, (uint64_t)c->step, sim_hash2((uint64_t)k->kind, (uint64_t)i0)));
  for (int32_t j = 0; j < Rg; j++) {
    int32_t i = i0 + j;
    const uint16_t *slice = ws + (size_t)j * M * 512;
    /* gathered rows vs originals: latest + one random row of each region */
    if (slc[j] > 0) {
      check_row(k, i, 0, slc[j] - 1, slice + (size_t)(slc[j] - 1) * 512, "gathered");
      int32_t e = (int32_t)sim_rng_below(&rng, (uint64_t)slc[j]);
      check_row(k, i, 0, e, slice + (size_t)e * 512, "gathered");
    }
    int32_t gs = sl[j] - gl[j];
    check_row(k, i, sl[j] - 1, -1, slice + (size_t)(N + gl[j] - 1) * 512, "gathered");
    int32_t q = (int32_t)sim_rng_below(&rng, (uint64_t)gl[j]);
    check_row(k, i, gs + q, -1, slice + (size_t)(N + q) * 512, "gathered");
  }
  for (int32_t t = 0; t < Pg; t++) {
    int32_t i = p->tok_req[p0 + t], j = i - i0, pos = p->tok_pos[p0 + t];
    int32_t gs = sl[j] - gl[j];
    int32_t tl = topk_len(k, pos);
    int32_t swa_start = pos - window + 1;
    if (swa_start < 0)
      swa_start = 0;
    if (swa_start < gs)
      swa_start = gs;
    int32_t swa_len = pos - swa_start + 1;
    const int32_t *row = comb + (size_t)t * C, *tk = k->topk_m + (size_t)(p0 + t) * k->W;
    if (clens[t] != tl + swa_len) {
      sim_fail(v, SIM_FAIL_LENS,
               "combine_topk_swa_indices (%s layer, step %lld, %s, position %d): "
               "length %d, expected %d",
               ks->k->label, (long long)c->step, where(c, i, wbuf, sizeof wbuf), pos, clens[t],
               tl + swa_len);
    }
    int64_t lo = (int64_t)M * j, base = lo + N + (swa_start - gs) - tl;
    /* fast pass: every entry equals its definition (which, built from the
     * request's own rows, implies it is inside them); details only on a miss */
    int bad = 0;
    for (int32_t x = 0; x < tl; x++)
      bad |= row[x] != lo + tk[x];
    for (int32_t x = tl; x < tl + swa_len; x++)
      bad |= row[x] != base + x;
    for (int32_t x = tl + swa_len; x < C; x++)
      bad |= row[x] != -1;
    for (int32_t x = 0; bad && x < C; x++) {
      int64_t want = x < tl ? lo + tk[x] : x < tl + swa_len ? base + x : -1;
      int in_slice = x < tl ? (row[x] >= lo && row[x] < lo + slc[j])
                            : (row[x] >= lo + N && row[x] < lo + N + gl[j]);
      if (x < tl + swa_len && !in_slice)
        sim_fail(v, SIM_FAIL_INDEX_PAGE,
                 "combine_topk_swa_indices (%s layer, step %lld, %s, "
                 "position %d): entry %d = %d is outside the request's gathered rows",
                 ks->k->label, (long long)c->step, where(c, i, wbuf, sizeof wbuf), pos, x, row[x]);
      if (row[x] != want)
        sim_fail(v, SIM_FAIL_INDEX_VALUE,
                 "combine_topk_swa_indices (%s layer, step %lld, %s, "
                 "position %d): entry %d = %d, expected %lld",
                 ks->k->label, (long long)c->step, where(c, i, wbuf, sizeof wbuf), pos, x, row[x],
                 (long long)want);
    }
    v->indices_checked += C;
    if (glob) {
      const int32_t *grow = glob + (size_t)t * k->W, *btr = bt_row(c, i);
      int32_t cnt = 0, cbs = ks->cbs, sh = ks->cbs_shift;
      bad = 0;
      for (int32_t x = 0; x < k->W; x++) {
        int64_t want = tk[x] >= 0 ? map_slot(btr, tk[x], cbs, sh) : -1;
        cnt += tk[x] >= 0;
        bad |= grow[x] != want;
      }
      for (int32_t x = 0; bad && x < k->W; x++) {
        int64_t want = tk[x] >= 0 ? map_slot(btr, tk[x], cbs, sh) : -1;
        if (grow[x] >= 0 && !owned(c, i, grow[x], cbs, slc[j]))
          sim_fail(v, SIM_FAIL_INDEX_PAGE,
                   "compute_global_topk_indices_and_lens (%s layer, step "
                   "%lld, %s, position %d): entry %d = slot %d is not in the request's pages",
                   ks->k->label, (long long)c->step, where(c, i, wbuf, sizeof wbuf), pos, x,
                   grow[x]);
        if (grow[x] != want)
          sim_fail(v, SIM_FAIL_INDEX_VALUE,
                   "compute_global_topk_indices_and_lens (%s layer, step "
                   "%lld, %s, position %d): entry %d = %d, expected %lld",
                   ks->k->label, (long long)c->step, where(c, i, wbuf, sizeof wbuf), pos, x,
                   grow[x], (long long)want);
      }
      v->indices_checked += k->W;
      if (glens[t] != cnt)
        sim_fail(v, SIM_FAIL_LENS,
                 "compute_global_topk_indices_and_lens (%s layer, step %lld, "
                 "%s, position %d): length %d, expected %d",
                 ks->k->label, (long long)c->step, where(c, i, wbuf, sizeof wbuf), pos, glens[t],
                 cnt);
    }
  }
  /* end to end: a sampled query token's combined entries point at its keys */
  for (int32_t j = 0; j < Rg; j++) {
    int32_t i = i0 + j, len = p->qsl[i + 1] - p->qsl[i];
    int32_t t = p->qsl[i] - p0 + (int32_t)sim_rng_below(&rng, (uint64_t)len);
    int32_t n = clens[t];
    if (n <= 0 || n > C)
      continue;
    for (int s = 0; s < 4; s++) {
      int32_t x = (int32_t)sim_rng_below(&rng, (uint64_t)n);
      int64_t w = comb[(size_t)t * C + x], rel = w - (int64_t)M * j;
      if (rel < 0 || rel >= M)
        continue; /* already reported */
      const uint16_t *got = ws + ((size_t)j * M + (size_t)rel) * 512;
      if (rel < N) {
        if (rel < slc[j])
          check_row(k, i, 0, (int32_t)rel, got, "via combined index");
      } else if (rel - N < gl[j]) {
        check_row(k, i, sl[j] - gl[j] + (int32_t)(rel - N), -1, got, "via combined index");
      }
    }
  }
  op_add(ks, SIM_OP_VERIFY, t0, Pg, 0);
  return 0;
}

static int sparse_prefill(kind_step *k) {
  sim_ctx *c = k->c;
  const sim_plan *p = &c->plan;
  int32_t window = c->model->window;
  int32_t i0 = p->D; /* decode items have one token each */
  while (i0 < p->R) {
    int32_t i1 = i0, N = 0, Gm = 0;
    while (i1 < p->R) {
      int32_t len = p->qsl[i1 + 1] - p->qsl[i1], sa = p->seq_after[i1];
      int32_t n = k->ratio ? sa / k->ratio : 0, g = len + window - 1 < sa ? len + window - 1 : sa;
      int32_t N2 = n > N ? n : N, G2 = g > Gm ? g : Gm;
      size_t bytes = (size_t)(i1 - i0 + 1) * (size_t)(N2 + G2) * 1024u;
      if (i1 > i0 && bytes > SIM_WORKSPACE_BYTES)
        break;
      N = N2;
      Gm = G2;
      i1++;
    }
    if (prefill_group(k, i0, i1))
      return -1;
    i0 = i1;
  }
  return 0;
}

/* ---------------------------------------------------------------------- */
/* Mixed decode + prefill batch                                             */
/* ---------------------------------------------------------------------- */

/* Reports the entries of one mixed-batch row that differ from their
 * definition, and whether each points into the request's pages. */
static void flashinfer_details(kind_step *k, int32_t t, const int32_t *row, int32_t got_len,
                               int32_t want_len, int32_t tl, int32_t width, int32_t K4) {
  sim_ctx *c = k->c;
  sim_kind_state *ks = k->ks;
  const sim_plan *p = &c->plan;
  sim_verdict *v = &c->verdict;
  char wbuf[96];
  int32_t S = c->model->window, i = p->tok_req[t], pos = p->tok_pos[t], sa = p->seq_after[i];
  int32_t cbs = k->ratio ? ks->cbs : c->bs;
  int64_t nvalid = k->ratio ? sa / k->ratio : 0;
  const int32_t *tk = k->topk_m + (size_t)t * k->W;
  const char *phase = t < p->D ? "decode" : "prefill";
  int32_t swa_start = pos - S + 1 < 0 ? 0 : pos - S + 1, swa_len = pos - swa_start + 1;
  (void)width;
  if (got_len != want_len)
    sim_fail(v, SIM_FAIL_LENS,
             "build_flashinfer_mixed_sparse_indices (%s layer, step %lld, %s %s, "
             "position %d): length %d, expected %d",
             ks->k->label, (long long)c->step, phase, where(c, i, wbuf, sizeof wbuf), pos, got_len,
             want_len);
  for (int32_t j = 0; j < S + K4; j++) {
    int is_swa = j < S;
    int64_t want;
    if (is_swa) {
      want = j < swa_len ? swa_slot_of(c, i, swa_start + j) : -1;
    } else {
      int32_t x = j - S < tl ? tk[j - S] : -1;
      want = x >= 0 ? (k->ratio ? comp_slot_of(k, i, x) : swa_slot_of(c, i, x)) : -1;
    }
    if (row[j] != -1 &&
        !(is_swa ? owned(c, i, row[j], c->bs, sa) : owned(c, i, row[j], cbs, nvalid)))
      sim_fail(v, SIM_FAIL_INDEX_PAGE,
               "build_flashinfer_mixed_sparse_indices (%s layer, step "
               "%lld, %s %s, position %d): %s entry %d = slot %d is not in the request's pages",
               ks->k->label, (long long)c->step, phase, where(c, i, wbuf, sizeof wbuf), pos,
               is_swa ? "SWA" : "compressed", is_swa ? j : j - S, row[j]);
    if (row[j] != want)
      sim_fail(v, SIM_FAIL_INDEX_VALUE,
               "build_flashinfer_mixed_sparse_indices (%s layer, step "
               "%lld, %s %s, position %d): %s entry %d = %d, expected %lld",
               ks->k->label, (long long)c->step, phase, where(c, i, wbuf, sizeof wbuf), pos,
               is_swa ? "SWA" : "compressed", is_swa ? j : j - S, row[j], (long long)want);
  }
}

/* Bytes build_flashinfer_mixed_sparse_indices moves: every token writes its
 * full row (width int32) and its length and reads its request id; a decode
 * token reads its S window slots, its Dk top-k entries and its valid flag; a
 * prefill token reads its topk_len top-k entries. */
static int64_t flashinfer_bytes(const kind_step *k, int32_t width, int32_t Dk) {
  const sim_plan *p = &k->c->plan;
  int32_t S = k->c->model->window;
  int64_t bytes = (int64_t)p->T * (width + 1 + 1) * 4;
  bytes += (int64_t)p->D * ((S + Dk) * 4 + (k->ratio ? 1 : 0));
  for (int32_t t = p->D; t < p->T; t++) {
    int32_t tl = topk_len(k, p->tok_pos[t]);
    bytes += (int64_t)(tl < k->W ? tl : k->W) * 4;
  }
  return bytes;
}

static int mixed_batch(kind_step *k) {
  sim_ctx *c = k->c;
  sim_kind_state *ks = k->ks;
  const sim_plan *p = &c->plan;
  int32_t T = p->T, D = p->D, P = T - D, R = p->R, S = c->model->window, bs = c->bs;
  int32_t cbs = k->ratio ? ks->cbs : bs;
  int32_t Dk = k->ratio ? k->W : 0;
  int32_t K4 = round_up(k->topk > Dk ? k->topk : Dk, 4), width = S + K4;
  int32_t *dswa = scratch(c, S_DSWA, (size_t)D * S * sizeof(int32_t) + 4);
  int32_t *fi = scratch(c, S_FI, (size_t)T * width * sizeof(int32_t) + 4);
  int32_t *filens = scratch(c, S_FILENS, (size_t)T * sizeof(int32_t) + 4);
  int32_t *replay = scratch(c, S_REPLAY, (size_t)R * sizeof(int32_t) + 4);
  uint8_t *valid = scratch(c, S_VALID, (size_t)(D > 0 ? D : 1));
  if (!dswa || !fi || !filens || !replay || !valid)
    return -1;
  for (int32_t t = 0; t < D; t++) {
    int32_t pos = p->tok_pos[t], i = p->tok_req[t], start = pos - S + 1 < 0 ? 0 : pos - S + 1;
    int32_t *row = dswa + (size_t)t * S;
    for (int32_t j = 0; j < S; j++)
      row[j] = start + j <= pos ? (int32_t)swa_slot_of(c, i, start + j) : -1;
    valid[t] = 1;
  }
  memset(replay, 0, (size_t)R * sizeof(int32_t));

  sim_tensor tdswa, tdc, tvalid, tptk, tqsl, tsl, trs, tt2r, tbt, tfi, tfil;
  dsv4kv_flashinfer_args a;
  memset(&a, 0, sizeof a);
  a.decode_swa_indices = sim_t2(&tdswa, dswa, sim_dt_i32, D, S);
  a.decode_compressed_indices = k->ratio ? sim_t2(&tdc, k->topk_m, sim_dt_i32, D, k->W) : NULL;
  a.decode_compressed_topk_lens = NULL;
  a.decode_is_valid_token = k->ratio ? sim_t1(&tvalid, valid, sim_dt_bool, D) : NULL;
  a.decode_compressed_indices_are_local = 1;
  a.prefill_topk_indices = sim_t2(&tptk, k->topk_m + (size_t)D * k->W, sim_dt_i32, P, k->W);
  a.query_start_loc = sim_t1(&tqsl, p->qsl, sim_dt_i32, R + 1);
  a.seq_lens = sim_t1(&tsl, p->seq_after, sim_dt_i32, R);
  a.replay_start = sim_t1(&trs, replay, sim_dt_i32, R);
  a.token_to_req_indices = sim_t1(&tt2r, p->tok_req, sim_dt_i32, T);
  a.swa_block_table = sim_t2(&tbt, p->bt, sim_dt_i32, R, p->bt_width);
  a.compressed_block_table = NULL; /* one block table serves every cache */
  a.swa_block_size = bs;
  a.swa_block_span = 0;
  a.compressed_block_size = cbs;
  a.compressed_block_span = 0;
  a.window_size = S;
  a.compress_ratio = k->ratio;
  a.topk = k->topk;
  int64_t sk;
  dsv4kv_options o = opts(c, &sk, (int64_t)T * width);
  double t0 = sim_now();
  dsv4kv_status st = dsv4kv_build_flashinfer_mixed_sparse_indices(
      &a, sim_t2(&tfi, fi, sim_dt_i32, T, width), sim_t1(&tfil, filens, sim_dt_i32, T), &o);
  op_add(ks, SIM_OP_FLASHINFER, t0, T, 0);
  op_bytes(ks, SIM_OP_FLASHINFER, flashinfer_bytes(k, width, Dk));
  if (!lib_ok(k, st, sk, "build_flashinfer_mixed_sparse_indices") && c->fatal)
    return -1;

  /* every entry against its definition (built from the request's own block
   * table row, so equality implies the slot is in the request's pages); a
   * detailed pass with the page-ownership test runs only on a mismatch */
  t0 = sim_now();
  sim_verdict *v = &c->verdict;
  int32_t csh = k->ratio ? ks->cbs_shift : c->bs_shift;
  for (int32_t t = 0; t < T; t++) {
    int32_t i = p->tok_req[t], pos = p->tok_pos[t];
    const int32_t *row = fi + (size_t)t * width, *tk = k->topk_m + (size_t)t * k->W,
                  *btr = bt_row(c, i);
    int decode = t < D;
    int32_t swa_start = pos - S + 1 < 0 ? 0 : pos - S + 1, swa_len = pos - swa_start + 1;
    int32_t tl, want_len, cnt = 0;
    if (decode) {
      for (int32_t j = 0; j < Dk; j++)
        cnt += tk[j] >= 0;
      tl = Dk;
      want_len = S + (Dk == 0 ? 0 : cnt);
    } else {
      tl = topk_len(k, pos);
      if (tl > k->W)
        tl = k->W;
      want_len = S + tl;
    }
    int bad = filens[t] != want_len;
    for (int32_t j = 0; j < swa_len; j++)
      bad |= row[j] != map_slot(btr, swa_start + j, bs, c->bs_shift);
    for (int32_t j = swa_len; j < S; j++)
      bad |= row[j] != -1;
    for (int32_t j = 0; j < K4; j++) {
      int32_t x = j < tl ? tk[j] : -1;
      bad |= row[S + j] != (x >= 0 ? map_slot(btr, x, cbs, csh) : -1);
    }
    v->indices_checked += width;
    if (bad)
      flashinfer_details(k, t, row, filens[t], want_len, tl, width, K4);
  }
  op_add(ks, SIM_OP_VERIFY, t0, T, 0);
  return 0;
}

/* Decode tokens are never gathered by sparse prefill: gather the newest keys
 * of one sampled decode request to verify what decode steps inserted. */
static int verify_decode_keys(kind_step *k) {
  sim_ctx *c = k->c;
  sim_kind_state *ks = k->ks;
  const sim_plan *p = &c->plan;
  if (p->D == 0)
    return 0;
  double t0 = sim_now();
  sim_rng rng =
      sim_rng_make(sim_hash3(c->cfg.seed, (uint64_t)c->step, 0x646563u + (uint64_t)k->kind));
  int32_t i = (int32_t)sim_rng_below(&rng, (uint64_t)p->D); /* decode items come first */
  int32_t sa = p->seq_after[i];
  uint16_t *out = scratch(c, S_VOUT, 4 * 512 * sizeof(uint16_t));
  int32_t *vsl = scratch(c, S_VSL, sizeof(int32_t));
  int32_t *vgl = scratch(c, S_VGL, sizeof(int32_t));
  if (!out || !vsl || !vgl)
    return -1;
  sim_tensor tout, tcache, tsl, tgl, tbt;
  const DLTensor *bt = sim_t2(&tbt, p->bt + (size_t)i * p->bt_width, sim_dt_i32, 1, p->bt_width);
  int64_t sk;
  dsv4kv_options o = opts(c, &sk, 0);
  *vsl = sa;
  *vgl = sa < 4 ? sa : 4;
  dsv4kv_status st = dsv4kv_dequantize_and_gather_k_cache(
      sim_t3(&tout, out, sim_dt_bf16, 1, 4, 512),
      sim_t2(&tcache, ks->swa, sim_dt_u8, c->num_pages, ks->swa_page_bytes), &ks->swa_desc,
      sim_t1(&tsl, vsl, sim_dt_i32, 1), sim_t1(&tgl, vgl, sim_dt_i32, 1), bt, 0, &o);
  if (!lib_ok(k, st, sk, "dequantize_and_gather_k_cache (decode check, SWA cache)") && c->fatal)
    return -1;
  for (int32_t q = 0; q < *vgl; q++)
    check_row(k, i, sa - *vgl + q, -1, out + (size_t)q * 512, "decode");
  int32_t n = k->ratio ? sa / k->ratio : 0;
  if (n > 0) {
    *vsl = n;
    *vgl = n < 2 ? n : 2;
    o = opts(c, &sk, 0);
    st = dsv4kv_dequantize_and_gather_k_cache(
        sim_t3(&tout, out, sim_dt_bf16, 1, 4, 512),
        sim_t2(&tcache, ks->comp, sim_dt_u8, c->num_pages, ks->comp_page_bytes), &ks->comp_desc,
        sim_t1(&tsl, vsl, sim_dt_i32, 1), sim_t1(&tgl, vgl, sim_dt_i32, 1), bt, 0, &o);
    if (!lib_ok(k, st, sk, "dequantize_and_gather_k_cache (decode check, compressed cache)") &&
        c->fatal)
      return -1;
    for (int32_t q = 0; q < *vgl; q++)
      check_row(k, i, 0, n - *vgl + q, out + (size_t)q * 512, "decode");
  }
  op_add(ks, SIM_OP_VERIFY, t0, 1, 0);
  return 0;
}

int sim_step_run(sim_ctx *c, const sim_batch *b) {
  if (plan_build(c, b))
    return -1;
  for (int kind = 0; kind < c->nkinds && !c->fatal; kind++) {
    kind_step k;
    memset(&k, 0, sizeof k);
    k.c = c;
    k.ks = &c->kinds[kind];
    k.kind = kind;
    k.ratio = k.ks->ratio;
    if (do_inserts(&k) || c->fatal)
      break;
    if (make_topk(&k) || c->fatal)
      break;
    if (sparse_prefill(&k) || c->fatal)
      break;
    if (mixed_batch(&k) || c->fatal)
      break;
    if (verify_decode_keys(&k) || c->fatal)
      break;
  }
  return c->fatal ? -1 : 0;
}
