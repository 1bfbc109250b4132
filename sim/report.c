/* The figures of a run's report, shared by its text (report_text.c) and its
 * JSON (report_json.c): names of the timed ops, cache sizes, error rows, pool
 * pressure, the verification criteria (see report.h). */
#include "report.h"

#include <stdio.h>
#include <string.h>

const char *sim_op_name(sim_op op) {
  switch (op) {
    case SIM_OP_MAKE_K: return "make keys (sim)";
    case SIM_OP_INSERT_SWA: return "insert swa";
    case SIM_OP_INSERT_COMP: return "insert compressed";
    case SIM_OP_INDEXER_STORE: return "indexer store";
    case SIM_OP_GATHER_COMP: return "gather compressed";
    case SIM_OP_GATHER_SWA: return "gather swa";
    case SIM_OP_COMBINE: return "combine top-k+swa";
    case SIM_OP_GLOBAL_TOPK: return "global top-k";
    case SIM_OP_FLASHINFER: return "flashinfer indices";
    case SIM_OP_VERIFY: return "verify (sim)";
    default: return "?";
  }
}

const char *sim_op_bytes_doc(sim_op op) {
  switch (op) {
    case SIM_OP_INSERT_SWA:
    case SIM_OP_INSERT_COMP: return "bf16 key (1024 B) + slot (8 B) read, record written";
    case SIM_OP_INDEXER_STORE:
      return "bf16 key (256 B), position + slot (16 B), fp32 cos/sin row (256 B) read, record "
             "written";
    case SIM_OP_GATHER_COMP:
    case SIM_OP_GATHER_SWA: return "record read, bf16 row (1024 B) written";
    case SIM_OP_COMBINE:
      return "topk_len top-k entries read; the first topk_len + swa_len columns and the length "
             "written";
    case SIM_OP_GLOBAL_TOPK:
      return "W top-k entries, request id, valid flag read; the full W-entry row and the length "
             "written";
    case SIM_OP_FLASHINFER:
      return "full row (window + K4) and length written; request id and inputs read (decode: "
             "window + top-k, prefill: topk_len)";
    default: return NULL;
  }
}

const char *sim_source_name(sim_source s) {
  return s == SIM_SOURCE_MOONCAKE ? "mooncake-jsonl"
         : s == SIM_SOURCE_AZURE  ? "azure-csv"
                                  : "synthetic";
}

double sim_rate(double x, double s) {
  return s > 0 ? x / s : 0.0;
}

/* The caches of layer kind ks (SWA, then compressed and indexer when it has
 * them); returns how many. */
int sim_kind_caches(const sim_ctx *c, const sim_kind_state *ks, sim_cache_size *out) {
  int n = 0;
  out[n++] = (sim_cache_size){
      ks->k->label, "swa", DSV4KV_RECORD_V4, 1, dsv4kv_record_bytes(DSV4KV_RECORD_V4), 1024};
  if (ks->ratio)
    out[n++] = (sim_cache_size){
        ks->k->label, "compressed", c->cfg.format, ks->ratio, dsv4kv_record_bytes(c->cfg.format),
        1024};
  if (ks->k->has_indexer)
    out[n++] = (sim_cache_size){ks->k->label,
                                "indexer",
                                c->cfg.indexer_format,
                                ks->ratio,
                                dsv4kv_record_bytes(c->cfg.indexer_format),
                                256};
  return n;
}

/* Bytes per token of one layer of a kind, in the caches and in bf16. */
void sim_kind_bytes(const sim_ctx *c, const sim_kind_state *ks, double *q, double *bf) {
  sim_cache_size cs[3];
  int n = sim_kind_caches(c, ks, cs);
  *q = *bf = 0;
  for (int i = 0; i < n; i++) {
    *q += sim_cs_bytes_per_token(&cs[i]);
    *bf += sim_cs_bf16_per_token(&cs[i]);
  }
}

double sim_page_bytes(const sim_ctx *c) {
  double b = 0;
  for (int i = 0; i < c->nkinds; i++)
    b += (double)c->kinds[i].swa_page_bytes + c->kinds[i].comp_page_bytes +
         c->kinds[i].idx_page_bytes;
  return b;
}

/* Error statistics per (cache, format), summed over kinds. */
int sim_err_rows(const sim_ctx *c, sim_err_row *rows) {
  memset(rows, 0, 3 * sizeof *rows);
  rows[0].cache = "swa";
  rows[0].rec = DSV4KV_RECORD_V4;
  rows[1].cache = "compressed";
  rows[1].rec = c->cfg.format;
  rows[2].cache = "indexer";
  rows[2].rec = c->cfg.indexer_format;
  for (int i = 0; i < c->nkinds; i++) {
    sim_errstat_add(&rows[0].st, &c->kinds[i].err_swa);
    sim_errstat_add(&rows[1].st, &c->kinds[i].err_comp);
    sim_errstat_add(&rows[2].st, &c->kinds[i].err_idx);
  }
  return 3;
}

int sim_is_sim_op(int op) {
  return op == SIM_OP_MAKE_K || op == SIM_OP_VERIFY;
}

/* Seconds spent inside library calls (the simulator's own work left out). */
double sim_library_seconds(const sim_ctx *c) {
  double s = 0;
  for (int i = 0; i < c->nkinds; i++)
    for (int op = 0; op < SIM_NUM_OPS; op++)
      if (!sim_is_sim_op(op))
        s += c->kinds[i].ops[op].seconds;
  return s;
}

int64_t sim_tokens_processed(const sim_ctx *c) {
  return c->sched.prefill_tokens + c->sched.decode_tokens;
}

sim_pool_pressure sim_pressure(const sim_ctx *c) {
  const sim_sched *s = &c->sched;
  sim_pool_pressure p;
  memset(&p, 0, sizeof p);
  p.preemptions = s->preemptions;
  p.recomputed = s->recomputed_tokens;
  p.limited = s->preemptions > 0 || s->recomputed_tokens > 0;
  p.recomputed_pct = s->prefill_tokens > 0 ? 100.0 * s->recomputed_tokens / s->prefill_tokens : 0;
  p.pool_pages = c->num_pages;
  for (int64_t i = 0; i < c->work.n; i++)
    p.all_at_once += sim_sched_pages_needed(&c->work.reqs[i], c->bs);
  p.suggest = 2 * (int64_t)c->num_pages;
  if (p.suggest > p.all_at_once)
    p.suggest = p.all_at_once;
  if (p.suggest <= c->num_pages)
    p.suggest = c->num_pages + 1;
  return p;
}

const char *sim_version_string(void) {
  static char v[32];
  snprintf(v, sizeof v, "%d.%d.%d", DSV4KV_VERSION_MAJOR, DSV4KV_VERSION_MINOR,
           DSV4KV_VERSION_PATCH);
  return v;
}

static int uses_record(const sim_ctx *c, dsv4kv_record r) {
  return r == DSV4KV_RECORD_V4 || c->cfg.format == r;
}

/* The verification criteria, one line, for the formats of this run. */
void sim_criteria(const sim_ctx *c, char *out, size_t n) {
  int mx = uses_record(c, DSV4KV_RECORD_MXFP8), nv = uses_record(c, DSV4KV_RECORD_NVFP4);
  snprintf(out, n,
           "sampled keys within a per-element bound (%s: |err| <= |x|/16 + scale/1024, RoPE dims "
           "exact%s), indexer values within the %s bound, indices and lengths exact, no library "
           "error or skip",
           mx ? "v4, mxfp8" : "v4",
           nv ? "; nvfp4: |err| <= max(|x|, s)/4 + max(0, |x| - 6 s), s the scale" : "",
           sim_format_name(c->cfg.indexer_format));
}
