/* What one step's library calls returned, against the definitions (see
 * step.h): gathered keys against their bf16 originals on a seeded sample
 * within each format's bound (check.h), the stored indexer records against
 * an independent reference, every produced index and length against the one
 * its inputs define, and whether each index stays inside the request's own
 * pages.  Failures go to c->verdict; nothing here calls the library. */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>

#include "rng.h"
#include "device.h"
#include "step.h"

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

static const char *where(const sim_ctx *c, int32_t i, char *buf, size_t n) {
  const sim_req *r = c->plan.req[i];
  if (r->spec->line > 0)
    snprintf(buf, n, "request %d (trace line %lld)", r->id, (long long)r->spec->line);
  else
    snprintf(buf, n, "request %d", r->id);
  return buf;
}

#define COMBINE "combine_topk_swa_indices"
#define GLOBAL "compute_global_topk_indices_and_lens"
#define FLASHINFER "build_flashinfer_mixed_sparse_indices"

/* Records a wrong index or length of the list `op` built for the token at
 * `pos` of item i: "OP (LAYER layer, step N, [PHASE ]REQUEST, position P):
 * DETAIL". */
static void index_fail(const sim_kstep *k, sim_fail_kind kind, const char *op, const char *phase,
                       int32_t i, int32_t pos, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 7, 8)))
#endif
    ;

static void index_fail(const sim_kstep *k, sim_fail_kind kind, const char *op, const char *phase,
                       int32_t i, int32_t pos, const char *fmt, ...) {
  const sim_ctx *c = k->c;
  char detail[256], wbuf[96];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(detail, sizeof detail, fmt, ap);
  va_end(ap);
  sim_fail(&k->c->verdict, kind, "%s (%s layer, step %lld, %s%s%s, position %d): %s", op,
           k->ks->k->label, (long long)c->step, phase ? phase : "", phase ? " " : "",
           where(c, i, wbuf, sizeof wbuf), pos, detail);
}

/* ---------------------------------------------------------------------- */
/* Fast passes: whether a run of a row differs from its definition           */
/* ---------------------------------------------------------------------- */

/* The loops take fixed chunks of 8 in 32-bit lanes so that the compiler's
 * -O2 vectorizer takes them whole (the rows are int32; a definition outside
 * the int32 range always differs). */
#define CHUNKED(n, term)                                                  \
  do {                                                                    \
    uint32_t acc[8] = {0};                                                \
    int32_t x0 = 0;                                                       \
    for (; x0 + 8 <= (n); x0 += 8)                                        \
      for (int32_t q = 0, x = x0; q < 8; q++, x = x0 + q) acc[q] |= term; \
    for (int32_t x = x0; x < (n); x++) acc[0] |= term;                    \
    for (int q = 0; q < 8; q++) bad |= acc[q];                            \
  } while (0)

/* row[x] != first + x for some x < n. */
static int seq_differs(const int32_t *restrict row, int64_t first, int32_t n) {
  if (n <= 0) return 0;
  if (first < INT32_MIN || first + n - 1 > INT32_MAX) return 1;
  const uint32_t f = (uint32_t)first;
  uint32_t bad = 0;
  CHUNKED(n, (uint32_t)row[x] ^ (f + (uint32_t)x));
  return bad != 0;
}

/* row[x] != lo + tk[x] for some x < n (tk[x] in [-1, span)). */
static int offset_differs(const int32_t *restrict row, const int32_t *restrict tk, int64_t lo, int64_t span,
                          int32_t n) {
  if (n <= 0) return 0;
  if (lo - 1 < INT32_MIN || lo + span > INT32_MAX) { /* outside the int32 fast lanes: one at a time */
    int bad = 0;
    for (int32_t x = 0; x < n; x++) bad |= row[x] != lo + tk[x];
    return bad;
  }
  const uint32_t l = (uint32_t)lo;
  uint32_t bad = 0;
  CHUNKED(n, (uint32_t)row[x] ^ (l + (uint32_t)tk[x]));
  return bad != 0;
}

/* row[x] != -1 for some x < n. */
static int fill_differs(const int32_t *restrict row, int32_t n) {
  uint32_t bad = 0;
  CHUNKED(n, ~(uint32_t)row[x]);
  return bad != 0;
}

/* ---------------------------------------------------------------------- */
/* Keys and indexer records                                                 */
/* ---------------------------------------------------------------------- */

/* Compares a gathered row with the original key of token `pos` (entry < 0)
 * or of compressed entry `entry` of request i. */
static void check_row(sim_kstep *k, int32_t i, int32_t pos, int32_t entry, const uint16_t *got,
                      const char *what) {
  sim_ctx *c = k->c;
  sim_kind_state *ks = k->ks;
  const sim_req *r = c->plan.req[i];
  uint16_t *orig = sim_scratch(c, S_ORIG, 512 * sizeof(uint16_t));
  if (!orig)
    return;
  int bad;
  sim_outlier o;
  if (entry < 0) {
    sim_keytable_row(&ks->tok_keys, sim_token_content(r->spec, r->id, pos), orig);
    bad = sim_check_key_row(ks->swa_desc.record, c->fp8_max, orig, got, &ks->err_swa, &o);
  } else {
    sim_keytable_row(&ks->comp_keys, sim_entry_content(r->spec, r->id, entry, k->ratio), orig);
    bad = sim_check_key_row(ks->comp_desc.record, c->fp8_max, orig, got, &ks->err_comp, &o);
  }
  c->verdict.rows_checked++;
  if (bad) {
    char wbuf[96];
    sim_fail(&c->verdict, SIM_FAIL_KEY,
             "%s layer, step %lld, %s, %s %d (%s): %d of 512 values outside the %s error bound; "
             "first dim %d: got %.9g, expected %.9g, bound %.3g",
             ks->k->label, (long long)c->step, where(c, i, wbuf, sizeof wbuf),
             entry < 0 ? "token" : "compressed entry", entry < 0 ? pos : entry, what, bad,
             sim_format_name(entry < 0 ? ks->swa_desc.record : ks->comp_desc.record), o.dim, o.value,
             o.expected, o.bound);
  }
}

/* One stored indexer record per step, against an independent reference. */
void sim_check_indexer(sim_kstep *k) {
  sim_ctx *c = k->c;
  sim_kind_state *ks = k->ks;
  const sim_plan *p = &c->plan;
  sim_rng rng = sim_rng_make(sim_hash3(c->cfg.seed, (uint64_t)c->step, 0x696478u));
  int32_t g = (int32_t)sim_rng_below(&rng, (uint64_t)k->G);
  int32_t t = k->gidx[g], pos = p->tok_pos[t];
  int64_t cp = (int64_t)(pos / k->ratio) * k->ratio;
  float ref[128];
  double tol[128];
  sim_outlier o;
  sim_indexer_reference(k->kpre + (size_t)g * 128, c->rms_weight, c->rms_eps, c->cos_sin + cp * 64,
                        ref, tol);
  int64_t page = k->cslot[g] / ks->cbs, slot_in = k->cslot[g] % ks->cbs;
  const uint8_t *base = ks->idx + page * ks->idx_page_bytes;
  if (sim_dev_on() && sim_dev_fetch(base, (size_t)ks->idx_page_bytes)) { /* the page's device bytes */
    sim_fail(&c->verdict, SIM_FAIL_STATUS, "--device cuda: reading back an indexer cache page: %s",
             sim_dev_message()[0] ? sim_dev_message() : "copy failed");
    return;
  }
  int32_t vbytes = ks->idx_desc.record == DSV4KV_RECORD_INDEXER_FP8 ? 128 : 64;
  int bad =
      sim_check_indexer_record(ks->idx_desc.record, base + slot_in * vbytes,
                               base + (int64_t)ks->cbs * vbytes + slot_in * 4, ref, tol, &ks->err_idx, &o);
  c->verdict.indexer_checked++;
  if (bad) {
    char wbuf[96];
    sim_fail(&c->verdict, SIM_FAIL_INDEXER,
             "%s layer, step %lld, %s, position %d: %d of 128 indexer values outside the bound; "
             "first dim %d: got %.9g, expected %.9g, bound %.3g",
             ks->k->label, (long long)c->step, where(c, p->tok_req[t], wbuf, sizeof wbuf), pos,
             bad, o.dim, o.value, o.expected, o.bound);
  }
}

/* ---------------------------------------------------------------------- */
/* Sparse prefill: gathers, combine, global top-k                           */
/* ---------------------------------------------------------------------- */

/* Gathered rows vs originals: the latest and one random row of each region
 * of each request's slice. */
static void check_gathered(sim_kstep *k, sim_rng *rng) {
  const sim_group *g = &k->g;
  for (int32_t j = 0; j < g->Rg; j++) {
    int32_t i = g->i0 + j;
    const uint16_t *slice = g->ws + (size_t)j * g->M * 512;
    if (g->slc[j] > 0) {
      check_row(k, i, 0, g->slc[j] - 1, slice + (size_t)(g->slc[j] - 1) * 512, "gathered");
      int32_t e = (int32_t)sim_rng_below(rng, (uint64_t)g->slc[j]);
      check_row(k, i, 0, e, slice + (size_t)e * 512, "gathered");
    }
    int32_t gs = g->sl[j] - g->gl[j];
    check_row(k, i, g->sl[j] - 1, -1, slice + (size_t)(g->N + g->gl[j] - 1) * 512, "gathered");
    int32_t q = (int32_t)sim_rng_below(rng, (uint64_t)g->gl[j]);
    check_row(k, i, gs + q, -1, slice + (size_t)(g->N + q) * 512, "gathered");
  }
}

/* Prefill token t of the group: item i (j-th of the group) at pos, its
 * synthetic top-k row tk. */
typedef struct {
  int32_t t, i, j, pos;
  const int32_t *tk;
} group_token;

static group_token token_of(const sim_kstep *k, int32_t t) {
  const sim_plan *p = &k->c->plan;
  int32_t x = k->g.p0 + t, i = p->tok_req[x];
  group_token gt = {t, i, i - k->g.i0, p->tok_pos[x], k->topk_m + (size_t)x * k->W};
  return gt;
}

/* The combined row of a prefill token: top-k entries at their compressed
 * rows, then the window at its SWA rows, then -1. */
static void check_combined(sim_kstep *k, const group_token *gt) {
  const sim_group *g = &k->g;
  int32_t t = gt->t, i = gt->i, j = gt->j, pos = gt->pos;
  const int32_t *tk = gt->tk;
  int32_t gs = g->sl[j] - g->gl[j], tl = sim_topk_len(k, pos), C = g->C;
  int32_t swa_start = sim_swa_start(pos, k->c->model->window);
  if (swa_start < gs)
    swa_start = gs;
  int32_t swa_len = pos - swa_start + 1;
  const int32_t *row = g->comb + (size_t)t * C;
  if (g->clens[t] != tl + swa_len)
    index_fail(k, SIM_FAIL_LENS, COMBINE, NULL, i, pos, "length %d, expected %d", g->clens[t],
               tl + swa_len);
  int64_t lo = (int64_t)g->M * j, base = lo + g->N + (swa_start - gs) - tl;
  /* fast pass: every entry equals its definition (which, built from the
   * request's own rows, implies it is inside them); details only on a miss */
  int bad = offset_differs(row, tk, lo, g->M, tl) | seq_differs(row + tl, base + tl, swa_len) |
            fill_differs(row + tl + swa_len, C - tl - swa_len);
  for (int32_t x = 0; bad && x < C; x++) {
    int64_t want = x < tl ? lo + tk[x] : x < tl + swa_len ? base + x : -1;
    int in_slice = x < tl ? (row[x] >= lo && row[x] < lo + g->slc[j])
                          : (row[x] >= lo + g->N && row[x] < lo + g->N + g->gl[j]);
    if (x < tl + swa_len && !in_slice)
      index_fail(k, SIM_FAIL_INDEX_PAGE, COMBINE, NULL, i, pos,
                 "entry %d = %d is outside the request's gathered rows", x, row[x]);
    if (row[x] != want)
      index_fail(k, SIM_FAIL_INDEX_VALUE, COMBINE, NULL, i, pos, "entry %d = %d, expected %lld", x,
                 row[x], (long long)want);
  }
  k->c->verdict.indices_checked += C;
}

/* The global top-k row of a prefill token: each local entry as its slot in
 * the compressed cache, and the count of valid ones. */
static void check_global(sim_kstep *k, const group_token *gt) {
  const sim_group *g = &k->g;
  int32_t t = gt->t, i = gt->i, j = gt->j, pos = gt->pos;
  const int32_t *tk = gt->tk, *grow = g->glob + (size_t)t * k->W, *btr = sim_bt_row(k->c, i);
  int32_t cnt = 0, cbs = k->ks->cbs, sh = k->ks->cbs_shift;
  int bad = 0;
  for (int32_t x = 0; x < k->W; x++) {
    int64_t want = tk[x] >= 0 ? sim_map_slot(btr, tk[x], cbs, sh) : -1;
    cnt += tk[x] >= 0;
    bad |= grow[x] != want;
  }
  for (int32_t x = 0; bad && x < k->W; x++) {
    int64_t want = tk[x] >= 0 ? sim_map_slot(btr, tk[x], cbs, sh) : -1;
    if (grow[x] >= 0 && !owned(k->c, i, grow[x], cbs, g->slc[j]))
      index_fail(k, SIM_FAIL_INDEX_PAGE, GLOBAL, NULL, i, pos,
                 "entry %d = slot %d is not in the request's pages", x, grow[x]);
    if (grow[x] != want)
      index_fail(k, SIM_FAIL_INDEX_VALUE, GLOBAL, NULL, i, pos, "entry %d = %d, expected %lld", x,
                 grow[x], (long long)want);
  }
  k->c->verdict.indices_checked += k->W;
  if (g->glens[t] != cnt)
    index_fail(k, SIM_FAIL_LENS, GLOBAL, NULL, i, pos, "length %d, expected %d", g->glens[t], cnt);
}

/* End to end: a sampled query token's combined entries point at its keys. */
static void check_end_to_end(sim_kstep *k, sim_rng *rng) {
  const sim_plan *p = &k->c->plan;
  const sim_group *g = &k->g;
  for (int32_t j = 0; j < g->Rg; j++) {
    int32_t i = g->i0 + j, len = p->qsl[i + 1] - p->qsl[i];
    int32_t t = p->qsl[i] - g->p0 + (int32_t)sim_rng_below(rng, (uint64_t)len);
    int32_t n = g->clens[t];
    if (n <= 0 || n > g->C)
      continue;
    for (int s = 0; s < 4; s++) {
      int32_t x = (int32_t)sim_rng_below(rng, (uint64_t)n);
      int64_t w = g->comb[(size_t)t * g->C + x], rel = w - (int64_t)g->M * j;
      if (rel < 0 || rel >= g->M)
        continue; /* already reported */
      const uint16_t *got = g->ws + ((size_t)j * g->M + (size_t)rel) * 512;
      if (rel < g->N) {
        if (rel < g->slc[j])
          check_row(k, i, 0, (int32_t)rel, got, "via combined index");
      } else if (rel - g->N < g->gl[j]) {
        check_row(k, i, g->sl[j] - g->gl[j] + (int32_t)(rel - g->N), -1, got, "via combined index");
      }
    }
  }
}

void sim_check_group(sim_kstep *k) {
  sim_ctx *c = k->c;
  sim_rng rng = sim_rng_make(
      sim_hash3(c->cfg.seed, (uint64_t)c->step, sim_hash2((uint64_t)k->kind, (uint64_t)k->g.i0)));
  check_gathered(k, &rng);
  for (int32_t t = 0; t < k->g.Pg; t++) {
    group_token gt = token_of(k, t);
    check_combined(k, &gt);
    if (k->g.glob)
      check_global(k, &gt);
  }
  check_end_to_end(k, &rng);
}

/* ---------------------------------------------------------------------- */
/* Mixed decode + prefill batch                                             */
/* ---------------------------------------------------------------------- */

/* Reports the entries of one mixed-batch row that differ from their
 * definition, and whether each points into the request's pages. */
static void mixed_details(sim_kstep *k, int32_t t, const int32_t *row, int32_t got_len,
                          int32_t want_len, int32_t tl) {
  sim_ctx *c = k->c;
  const sim_plan *p = &c->plan;
  int32_t S = c->model->window, i = p->tok_req[t], pos = p->tok_pos[t], sa = p->seq_after[i];
  int32_t cbs = k->m.cbs, K4 = k->m.K4;
  int64_t nvalid = k->ratio ? sa / k->ratio : 0;
  const int32_t *tk = k->topk_m + (size_t)t * k->W;
  const char *phase = t < p->D ? "decode" : "prefill";
  int32_t swa_start = sim_swa_start(pos, S), swa_len = pos - swa_start + 1;
  if (got_len != want_len)
    index_fail(k, SIM_FAIL_LENS, FLASHINFER, phase, i, pos, "length %d, expected %d", got_len,
               want_len);
  for (int32_t j = 0; j < S + K4; j++) {
    int is_swa = j < S;
    const char *kind = is_swa ? "SWA" : "compressed";
    int64_t want;
    if (is_swa) {
      want = j < swa_len ? sim_swa_slot(c, i, swa_start + j) : -1;
    } else {
      int32_t x = j - S < tl ? tk[j - S] : -1;
      want = x >= 0 ? (k->ratio ? sim_comp_slot(k, i, x) : sim_swa_slot(c, i, x)) : -1;
    }
    if (row[j] != -1 &&
        !(is_swa ? owned(c, i, row[j], c->bs, sa) : owned(c, i, row[j], cbs, nvalid)))
      index_fail(k, SIM_FAIL_INDEX_PAGE, FLASHINFER, phase, i, pos,
                 "%s entry %d = slot %d is not in the request's pages", kind, is_swa ? j : j - S,
                 row[j]);
    if (row[j] != want)
      index_fail(k, SIM_FAIL_INDEX_VALUE, FLASHINFER, phase, i, pos,
                 "%s entry %d = %d, expected %lld", kind, is_swa ? j : j - S, row[j],
                 (long long)want);
  }
}

/* Every entry against its definition (built from the request's own block
 * table row, so equality implies the slot is in the request's pages); a
 * detailed pass with the page-ownership test runs only on a mismatch. */
void sim_check_mixed(sim_kstep *k) {
  sim_ctx *c = k->c;
  const sim_plan *p = &c->plan;
  const sim_mixed *m = &k->m;
  int32_t S = c->model->window, bs = c->bs, Dk = m->Dk, cbs = m->cbs;
  int32_t csh = k->ratio ? k->ks->cbs_shift : c->bs_shift;
  for (int32_t t = 0; t < p->T; t++) {
    int32_t i = p->tok_req[t], pos = p->tok_pos[t];
    const int32_t *row = m->fi + (size_t)t * m->width, *tk = k->topk_m + (size_t)t * k->W,
                  *btr = sim_bt_row(c, i);
    int32_t swa_start = sim_swa_start(pos, S), swa_len = pos - swa_start + 1;
    int32_t tl, want_len, cnt = 0;
    if (t < p->D) {
      for (int32_t j = 0; j < Dk; j++)
        cnt += tk[j] >= 0;
      tl = Dk;
      want_len = S + (Dk == 0 ? 0 : cnt);
    } else {
      tl = sim_topk_len(k, pos);
      if (tl > k->W)
        tl = k->W;
      want_len = S + tl;
    }
    int bad = m->filens[t] != want_len;
    for (int32_t j = 0; j < swa_len;) { /* the window page by page: consecutive slots in each */
      const int64_t x = swa_start + j, left = bs - x % bs;
      const int32_t n = (int32_t)(left < swa_len - j ? left : swa_len - j);
      bad |= seq_differs(row + j, sim_map_slot(btr, x, bs, c->bs_shift), n);
      j += n;
    }
    bad |= fill_differs(row + swa_len, S - swa_len);
    for (int32_t j = 0; j < m->K4; j++) {
      int32_t x = j < tl ? tk[j] : -1;
      bad |= row[S + j] != (x >= 0 ? sim_map_slot(btr, x, cbs, csh) : -1);
    }
    c->verdict.indices_checked += m->width;
    if (bad)
      mixed_details(k, t, row, m->filens[t], want_len, tl);
  }
}

/* ---------------------------------------------------------------------- */
/* Decode keys                                                              */
/* ---------------------------------------------------------------------- */

/* The rows sim_ops_decode_gather left in k->d: the newest tokens of the SWA
 * cache, or the newest entries of the compressed cache. */
void sim_check_decode(sim_kstep *k, int compressed) {
  const sim_decode *d = &k->d;
  int32_t n = d->sl[0], got = d->gl[0];
  for (int32_t q = 0; q < got; q++) {
    if (compressed)
      check_row(k, d->i, 0, n - got + q, d->out + (size_t)q * 512, "decode");
    else
      check_row(k, d->i, n - got + q, -1, d->out + (size_t)q * 512, "decode");
  }
}
