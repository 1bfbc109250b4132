/* The report of a run: text on stdout, the same figures as JSON (--json).
 * With --json - the JSON takes stdout and the text goes to stderr. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "ctx.h"

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

static const char *op_key(sim_op op) {
  static const char *keys[SIM_NUM_OPS] = {"make_keys",
                                          "insert_swa",
                                          "insert_compressed",
                                          "indexer_store",
                                          "gather_compressed",
                                          "gather_swa",
                                          "combine_topk_swa_indices",
                                          "compute_global_topk_indices_and_lens",
                                          "build_flashinfer_mixed_sparse_indices",
                                          "verify"};
  return keys[op];
}

static const char *source_name(sim_source s) {
  return s == SIM_SOURCE_MOONCAKE ? "mooncake-jsonl"
         : s == SIM_SOURCE_AZURE  ? "azure-csv"
                                  : "synthetic";
}

static double rate(double x, double s) {
  return s > 0 ? x / s : 0.0;
}

/* ---------------------------------------------------------------------- */
/* Figures shared by the text and the JSON                                  */
/* ---------------------------------------------------------------------- */

/* One cache of one layer kind: record size per entry and per token. */
typedef struct {
  const char *layer, *cache;
  dsv4kv_record rec;
  int32_t tokens_per_entry; /* 1, or the layer's compress ratio */
  int32_t bytes_per_entry, bf16_bytes_per_entry;
} cache_size;

static double cs_bytes_per_token(const cache_size *s) {
  return (double)s->bytes_per_entry / s->tokens_per_entry;
}

static double cs_bf16_per_token(const cache_size *s) {
  return (double)s->bf16_bytes_per_entry / s->tokens_per_entry;
}

/* The caches of layer kind ks (SWA, then compressed and indexer when it has
 * them); returns how many. */
static int kind_caches(const sim_ctx *c, const sim_kind_state *ks, cache_size *out) {
  int n = 0;
  out[n++] = (cache_size){ks->k->label, "swa", DSV4KV_RECORD_V4, 1,
                          dsv4kv_record_bytes(DSV4KV_RECORD_V4), 1024};
  if (ks->ratio)
    out[n++] = (cache_size){ks->k->label, "compressed", c->cfg.format, ks->ratio,
                            dsv4kv_record_bytes(c->cfg.format), 1024};
  if (ks->k->has_indexer)
    out[n++] = (cache_size){ks->k->label, "indexer", c->cfg.indexer_format, ks->ratio,
                            dsv4kv_record_bytes(c->cfg.indexer_format), 256};
  return n;
}

/* Bytes per token of one layer of a kind, in the caches and in bf16. */
static void kind_bytes(const sim_ctx *c, const sim_kind_state *ks, double *q, double *bf) {
  cache_size cs[3];
  int n = kind_caches(c, ks, cs);
  *q = *bf = 0;
  for (int i = 0; i < n; i++) {
    *q += cs_bytes_per_token(&cs[i]);
    *bf += cs_bf16_per_token(&cs[i]);
  }
}

static double page_bytes(const sim_ctx *c) {
  double b = 0;
  for (int i = 0; i < c->nkinds; i++)
    b += (double)c->kinds[i].swa_page_bytes + c->kinds[i].comp_page_bytes +
         c->kinds[i].idx_page_bytes;
  return b;
}

typedef struct {
  const char *cache;
  dsv4kv_record rec;
  sim_errstat st;
} err_row;

/* Error statistics per (cache, format), summed over kinds. */
static int err_rows(const sim_ctx *c, err_row *rows) {
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

static int is_sim_op(int op) {
  return op == SIM_OP_MAKE_K || op == SIM_OP_VERIFY;
}

/* Seconds spent inside library calls (the simulator's own work left out). */
static double library_seconds(const sim_ctx *c) {
  double s = 0;
  for (int i = 0; i < c->nkinds; i++)
    for (int op = 0; op < SIM_NUM_OPS; op++)
      if (!is_sim_op(op))
        s += c->kinds[i].ops[op].seconds;
  return s;
}

static int64_t tokens_processed(const sim_ctx *c) {
  return c->sched.prefill_tokens + c->sched.decode_tokens;
}

/* The page pool limited the run: requests were preempted (and recomputed). */
typedef struct {
  int limited;
  int64_t preemptions, recomputed;
  double recomputed_pct; /* of all prefill tokens computed */
  int32_t pool_pages;
  int64_t all_at_once;   /* pages every request would hold at once       */
  int64_t suggest;       /* a --num-blocks to try: 2x, at most all_at_once */
} pool_pressure;

static pool_pressure pressure(const sim_ctx *c) {
  const sim_sched *s = &c->sched;
  pool_pressure p;
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

static const char *version_string(void) {
  static char v[32];
  snprintf(v, sizeof v, "%d.%d.%d", DSV4KV_VERSION_MAJOR, DSV4KV_VERSION_MINOR,
           DSV4KV_VERSION_PATCH);
  return v;
}

static int uses_record(const sim_ctx *c, dsv4kv_record r) {
  return r == DSV4KV_RECORD_V4 || c->cfg.format == r;
}

/* The verification criteria, one line, for the formats of this run. */
static void criteria(const sim_ctx *c, char *out, size_t n) {
  int mx = uses_record(c, DSV4KV_RECORD_MXFP8), nv = uses_record(c, DSV4KV_RECORD_NVFP4);
  snprintf(out, n,
           "sampled keys within a per-element bound (%s: |err| <= |x|/16 + scale/1024, RoPE dims "
           "exact%s), indexer values within the %s bound, indices and lengths exact, no library "
           "error or skip",
           mx ? "v4, mxfp8" : "v4", nv ? "; nvfp4: |err| <= max(|x|, s)/4 + max(0, |x| - 6 s), s the scale" : "",
           sim_record_name(c->cfg.indexer_format));
}

/* ---------------------------------------------------------------------- */
/* Text                                                                     */
/* ---------------------------------------------------------------------- */

static void text_header(FILE *f, const sim_ctx *c) {
  const sim_model *m = c->model;
  if (c->work.source == SIM_SOURCE_SYNTHETIC)
    fprintf(f, "dsv4kv run %s: %s workload\n", version_string(), c->work.name);
  else
    fprintf(f, "dsv4kv run %s: %s (%s trace)\n", version_string(), c->work.name,
            source_name(c->work.source));
  fprintf(f, "  model      %s: %s; head dim %d, indexer head dim %d\n", m->name, m->describe,
          m->head_dim, m->indexer_head_dim);
  fprintf(f,
          "  caches     swa %s (%d B/token); compressed %s (%d B/entry); indexer %s (%d B/entry)\n",
          sim_record_name(DSV4KV_RECORD_V4), dsv4kv_record_bytes(DSV4KV_RECORD_V4),
          sim_record_name(c->cfg.format), dsv4kv_record_bytes(c->cfg.format),
          sim_record_name(c->cfg.indexer_format), dsv4kv_record_bytes(c->cfg.indexer_format));
  fprintf(f, "  pool       %d pages x %d tokens (", c->num_pages, c->bs);
  int first = 1;
  for (int i = 0; i < c->nkinds; i++)
    if (c->kinds[i].ratio) {
      fprintf(f, "%s%s: %d entries", first ? "" : ", ", c->kinds[i].k->label, c->kinds[i].cbs);
      first = 0;
    }
  fprintf(f, " per page), %.1f KiB/page, %.1f MiB in all\n", page_bytes(c) / 1024.0,
          page_bytes(c) * c->num_pages / 1048576.0);
  fprintf(f, "  schedule   --max-batched-tokens %d, up to %d running\n\n",
          c->cfg.max_batched_tokens, c->cfg.max_num_seqs);
}

static void text_bottleneck(FILE *f, const sim_ctx *c) {
  pool_pressure p = pressure(c);
  if (!p.limited)
    return;
  fprintf(f,
          "  NOTE       the page pool was the bottleneck: %lld preemption%s, %lld tokens "
          "recomputed (%.1f %% of prefill), peak %d of %d pages used\n",
          (long long)p.preemptions, p.preemptions == 1 ? "" : "s", (long long)p.recomputed,
          p.recomputed_pct, c->pool.peak_used, c->num_pages);
  fprintf(f,
          "             raise --num-blocks (now %d; try %lld; %lld pages hold every request at "
          "once)\n",
          p.pool_pages, (long long)p.suggest, (long long)p.all_at_once);
}

static void text_workload(FILE *f, const sim_ctx *c) {
  const sim_sched *s = &c->sched;
  sim_workload_totals wt = sim_workload_sum(&c->work);
  fprintf(f, "workload\n");
  fprintf(f, "  requests   %lld done of %lld", (long long)s->done, (long long)c->work.n);
  if (c->work.skipped_lines)
    fprintf(f, " (%lld malformed line%s skipped)", (long long)c->work.skipped_lines,
            c->work.skipped_lines == 1 ? "" : "s");
  fprintf(f, "; %lld prompt + %lld output tokens, arrivals over %.1f s\n",
          (long long)wt.input_tokens, (long long)wt.output_tokens, wt.span_ms / 1000.0);
  fprintf(f,
          "  steps      %lld; virtual time %.1f s (modelled clock: %.0f ms + %.2f ms per batched "
          "token a step; not wall time)\n",
          (long long)s->steps, s->clock_ms / 1000.0, SIM_STEP_BASE_MS, SIM_STEP_TOKEN_MS);
  fprintf(f,
          "  tokens     prefill %lld computed (%lld of them recomputed after preemption), "
          "decode %lld\n",
          (long long)s->prefill_tokens, (long long)s->recomputed_tokens,
          (long long)s->decode_tokens);
  fprintf(f,
          "  prefix     shared across requests %lld tokens (%lld pages); re-admitted after "
          "preemption %lld tokens (%lld pages)\n",
          (long long)s->shared_tokens, (long long)s->shared_pages, (long long)s->readmit_tokens,
          (long long)s->readmit_pages);
  fprintf(f, "  batching   peak %d running, peak %d queued, %lld preemption%s\n", s->peak_running,
          s->peak_queued, (long long)s->preemptions, s->preemptions == 1 ? "" : "s");
  fprintf(f, "  pages      peak used %d of %d (%.1f %%), cached pages evicted %lld\n",
          c->pool.peak_used, c->num_pages, 100.0 * c->pool.peak_used / c->num_pages,
          (long long)c->pool.evictions);
  text_bottleneck(f, c);
  fputc('\n', f);
}

static void text_size_row(FILE *f, const char *layer, const char *cache, const char *format,
                          const char *per_entry, const char *bytes_entry, double bpt, double bf) {
  fprintf(f, "  %-5s %-11s %-6s %13s %8s %9.1f %13.1f %7.3f\n", layer, cache, format, per_entry,
          bytes_entry, bpt, bf, bpt / bf);
}

static void text_sizes(FILE *f, const sim_ctx *c) {
  fprintf(f, "cache sizes (one layer of each kind)\n");
  fprintf(f,
          "  compressed and indexer caches hold one entry per compress_ratio tokens, so\n"
          "  B/token = B/entry / tokens/entry; ratio = record bytes / bf16 bytes of the same keys\n");
  fprintf(f, "  %-5s %-11s %-6s %13s %8s %9s %13s %7s\n", "layer", "cache", "format",
          "tokens/entry", "B/entry", "B/token", "bf16 B/token", "ratio");
  for (int i = 0; i < c->nkinds; i++) {
    cache_size cs[3];
    int n = kind_caches(c, &c->kinds[i], cs);
    for (int j = 0; j < n; j++) {
      char tpe[16], bpe[16];
      snprintf(tpe, sizeof tpe, "%d", cs[j].tokens_per_entry);
      snprintf(bpe, sizeof bpe, "%d", cs[j].bytes_per_entry);
      text_size_row(f, cs[j].layer, cs[j].cache, sim_record_name(cs[j].rec), tpe, bpe,
                    cs_bytes_per_token(&cs[j]), cs_bf16_per_token(&cs[j]));
    }
    if (n > 1) {
      double q, bf;
      kind_bytes(c, &c->kinds[i], &q, &bf);
      text_size_row(f, c->kinds[i].k->label, "(layer)", "", "", "", q, bf);
    }
  }
  fputc('\n', f);
}

static void text_errors(FILE *f, const sim_ctx *c) {
  fprintf(f, "quantization error (verified samples, one layer of each kind)\n");
  fprintf(f,
          "  rel RMS = sqrt(sum err^2 / sum x^2); max |err| is absolute, in the keys' own units;\n"
          "  /amax = the largest |err| / (max |x| of the value's scale block)\n");
  fprintf(f, "  %-11s %-7s %9s %10s %9s %11s %10s\n", "cache", "format", "rows", "rel RMS",
          "SNR dB", "max |err|", "/amax");
  err_row er[3];
  err_rows(c, er);
  for (int i = 0; i < 3; i++) {
    if (er[i].st.rows == 0)
      continue;
    fprintf(f, "  %-11s %-7s %9lld %10.5f %9.2f %11.4g %10.4f\n", er[i].cache,
            sim_record_name(er[i].rec), (long long)er[i].st.rows, sim_errstat_rel_rms(&er[i].st),
            sim_errstat_snr_db(&er[i].st), er[i].st.max_abs_err, er[i].st.max_rel_amax);
  }
  fputc('\n', f);
}

static void text_op_row(FILE *f, const char *layer, sim_op op, const sim_opstat *o) {
  char gbs[32];
  if (is_sim_op(op))
    snprintf(gbs, sizeof gbs, "-");
  else
    snprintf(gbs, sizeof gbs, "%.2f", rate((double)o->bytes, o->seconds) / 1e9);
  fprintf(f, "  %-5s %-19s %8lld %11lld %9.3f %12.0f %8s\n", layer, sim_op_name(op),
          (long long)o->calls, (long long)o->rows, o->seconds, rate((double)o->rows, o->seconds),
          gbs);
}

/* The footnote: what GB/s counts for each op that ran. */
static void text_bytes_notes(FILE *f, const sim_ctx *c) {
  fprintf(f, "  bytes counted for GB/s, per token or entry (index entries are int32; block tables "
             "not counted):\n");
  for (int op = 0; op < SIM_NUM_OPS; op++) {
    const char *doc = sim_op_bytes_doc((sim_op)op);
    int ran = 0;
    for (int i = 0; i < c->nkinds; i++)
      ran |= c->kinds[i].ops[op].calls > 0;
    if (doc && ran && op != SIM_OP_INSERT_COMP && op != SIM_OP_GATHER_SWA)
      fprintf(f, "    %-19s %s\n",
              op == SIM_OP_INSERT_SWA   ? "inserts"
              : op == SIM_OP_GATHER_COMP ? "gathers"
                                         : sim_op_name((sim_op)op),
              doc);
  }
  fprintf(f, "    %-19s the simulator's own work (key synthesis, verification): not counted\n",
          "-");
}

static void text_ops(FILE *f, const sim_ctx *c) {
  char thr[64];
  if (c->cfg.threads > 0)
    snprintf(thr, sizeof thr, "%d thread%s per call", c->cfg.threads,
             c->cfg.threads == 1 ? "" : "s");
  else
    snprintf(thr, sizeof thr, "OpenMP threads for large calls");
  fprintf(f, "time per op (one layer of each kind; CPU, %s)\n", thr);
  fprintf(f, "  tokens: compressed entries for the compressed-cache ops; GB/s: bytes read + "
             "written per second\n");
  fprintf(f, "  %-5s %-19s %8s %11s %9s %12s %8s\n", "layer", "op", "calls", "tokens", "seconds",
          "tokens/s", "GB/s");
  for (int i = 0; i < c->nkinds; i++)
    for (int op = 0; op < SIM_NUM_OPS; op++)
      if (c->kinds[i].ops[op].calls)
        text_op_row(f, c->kinds[i].k->label, (sim_op)op, &c->kinds[i].ops[op]);
  fprintf(f, "  library %.3f s of %.3f s wall; %.0f tokens/s end to end\n", library_seconds(c),
          c->wall_seconds, rate((double)tokens_processed(c), c->wall_seconds));
  text_bytes_notes(f, c);
  fputc('\n', f);
}

static void text_verification(FILE *f, const sim_ctx *c, int ok, const char *stop) {
  const sim_verdict *v = &c->verdict;
  const sim_sched *s = &c->sched;
  char crit[640];
  criteria(c, crit, sizeof crit);
  fprintf(f, "verification\n");
  fprintf(f,
          "  %lld key rows compared with their bf16 originals, %lld indexer records, %lld "
          "index entries checked; library skip count %lld\n",
          (long long)v->rows_checked, (long long)v->indexer_checked, (long long)v->indices_checked,
          (long long)c->lib_skipped);
  for (int k = 0; k < SIM_NUM_FAILS; k++)
    if (v->fails[k])
      fprintf(f, "  FAIL  %lld %s\n", (long long)v->fails[k], sim_fail_name((sim_fail_kind)k));
  for (int i = 0; i < v->num_messages; i++)
    fprintf(f, "    %s\n", v->messages[i]);
  if (stop)
    fprintf(f, "  stopped early: %s\n", stop);
  if (s->done != c->work.n)
    fprintf(f, "  %lld of %lld requests did not complete\n", (long long)(c->work.n - s->done),
            (long long)c->work.n);
  fprintf(f, "  criteria: %s\n", crit);
  fprintf(f, "  verdict: %s\n", ok ? "PASSED" : "FAILED");
}

static void print_text(FILE *f, const sim_ctx *c, int ok, const char *stop) {
  text_header(f, c);
  text_workload(f, c);
  text_sizes(f, c);
  text_errors(f, c);
  text_ops(f, c);
  text_verification(f, c, ok, stop);
}

static void print_quiet(FILE *f, const sim_ctx *c, int ok) {
  const sim_sched *s = &c->sched;
  fprintf(f,
          "dsv4kv run: %s: formats swa %s, compressed %s, indexer %s; %lld requests, %lld steps, "
          "%lld prefill + %lld decode tokens, peak %d of %d pages, %lld preemption%s, %.1f s: "
          "verification %s\n",
          c->work.name, sim_record_name(DSV4KV_RECORD_V4), sim_record_name(c->cfg.format),
          sim_record_name(c->cfg.indexer_format), (long long)s->done, (long long)s->steps,
          (long long)s->prefill_tokens, (long long)s->decode_tokens, c->pool.peak_used,
          c->num_pages, (long long)s->preemptions, s->preemptions == 1 ? "" : "s",
          c->wall_seconds, ok ? "PASSED" : "FAILED");
  if (!ok)
    for (int i = 0; i < c->verdict.num_messages; i++)
      fprintf(stderr, "dsv4kv run: %s\n", c->verdict.messages[i]);
}

/* ---------------------------------------------------------------------- */
/* JSON                                                                     */
/* ---------------------------------------------------------------------- */

static cJSON *errstat_json(const sim_errstat *st) {
  cJSON *o = cJSON_CreateObject();
  cJSON_AddNumberToObject(o, "rows", (double)st->rows);
  cJSON_AddNumberToObject(o, "values", (double)st->values);
  cJSON_AddNumberToObject(o, "rel_rms", sim_errstat_rel_rms(st));
  double snr = sim_errstat_snr_db(st);
  if (isfinite(snr))
    cJSON_AddNumberToObject(o, "snr_db", snr);
  else
    cJSON_AddNullToObject(o, "snr_db");
  cJSON_AddNumberToObject(o, "max_abs_err", st->max_abs_err);
  cJSON_AddNumberToObject(o, "max_abs_err_over_block_amax", st->max_rel_amax);
  return o;
}

static void json_config(cJSON *root, const sim_ctx *c) {
  cJSON *cfg = cJSON_AddObjectToObject(root, "config");
  cJSON_AddStringToObject(cfg, "model", c->model->name);
  cJSON_AddStringToObject(cfg, "format", sim_record_name(c->cfg.format));
  cJSON_AddStringToObject(cfg, "indexer_format", sim_record_name(c->cfg.indexer_format));
  cJSON_AddNumberToObject(cfg, "block_size", c->bs);
  cJSON_AddNumberToObject(cfg, "num_blocks", c->num_pages);
  cJSON_AddNumberToObject(cfg, "max_batched_tokens", c->cfg.max_batched_tokens);
  cJSON_AddNumberToObject(cfg, "max_num_seqs", c->cfg.max_num_seqs);
  cJSON_AddNumberToObject(cfg, "seed", (double)c->cfg.seed);
  cJSON_AddStringToObject(cfg, "device", "cpu");
  cJSON_AddNumberToObject(cfg, "threads", c->cfg.threads);
  cJSON_AddNumberToObject(cfg, "window", c->model->window);
  cJSON_AddNumberToObject(cfg, "page_bytes", page_bytes(c));
}

static void json_workload(cJSON *root, const sim_ctx *c) {
  const sim_sched *s = &c->sched;
  sim_workload_totals wt = sim_workload_sum(&c->work);
  cJSON *w = cJSON_AddObjectToObject(root, "requests");
  cJSON_AddNumberToObject(w, "total", (double)c->work.n);
  cJSON_AddNumberToObject(w, "done", (double)s->done);
  cJSON_AddNumberToObject(w, "skipped_lines", (double)c->work.skipped_lines);
  cJSON_AddNumberToObject(w, "prompt_tokens", (double)wt.input_tokens);
  cJSON_AddNumberToObject(w, "output_tokens", (double)wt.output_tokens);
  cJSON_AddNumberToObject(w, "arrival_span_s", wt.span_ms / 1000.0);

  cJSON_AddNumberToObject(root, "steps", (double)s->steps);
  cJSON_AddNumberToObject(root, "virtual_time_s", s->clock_ms / 1000.0);
  cJSON *tok = cJSON_AddObjectToObject(root, "tokens");
  cJSON_AddNumberToObject(tok, "prefill", (double)s->prefill_tokens);
  cJSON_AddNumberToObject(tok, "decode", (double)s->decode_tokens);
  cJSON_AddNumberToObject(tok, "recomputed", (double)s->recomputed_tokens);
  cJSON_AddNumberToObject(tok, "prefix_hit", (double)s->hit_tokens);
  cJSON_AddNumberToObject(tok, "prefix_hit_shared", (double)s->shared_tokens);
  cJSON_AddNumberToObject(tok, "prefix_hit_readmitted", (double)s->readmit_tokens);
  cJSON *pg = cJSON_AddObjectToObject(root, "pages");
  cJSON_AddNumberToObject(pg, "pool", c->num_pages);
  cJSON_AddNumberToObject(pg, "peak_used", c->pool.peak_used);
  cJSON_AddNumberToObject(pg, "prefix_hit", (double)s->hit_pages);
  cJSON_AddNumberToObject(pg, "prefix_hit_shared", (double)s->shared_pages);
  cJSON_AddNumberToObject(pg, "prefix_hit_readmitted", (double)s->readmit_pages);
  cJSON_AddNumberToObject(pg, "evicted_cached", (double)c->pool.evictions);
  cJSON *bt = cJSON_AddObjectToObject(root, "batching");
  cJSON_AddNumberToObject(bt, "peak_running", s->peak_running);
  cJSON_AddNumberToObject(bt, "peak_queued", s->peak_queued);
  cJSON_AddNumberToObject(bt, "preemptions", (double)s->preemptions);
  pool_pressure p = pressure(c);
  cJSON_AddBoolToObject(bt, "pool_bottleneck", p.limited);
  if (p.limited)
    cJSON_AddNumberToObject(bt, "suggested_num_blocks", (double)p.suggest);
  else
    cJSON_AddNullToObject(bt, "suggested_num_blocks");
  cJSON_AddNumberToObject(bt, "pages_all_requests_at_once", (double)p.all_at_once);
}

static void json_sizes(cJSON *root, const sim_ctx *c) {
  cJSON *arr = cJSON_AddArrayToObject(root, "cache_bytes");
  for (int i = 0; i < c->nkinds; i++) {
    cache_size cs[3];
    int n = kind_caches(c, &c->kinds[i], cs);
    for (int j = 0; j < n; j++) {
      cJSON *o = cJSON_CreateObject();
      cJSON_AddStringToObject(o, "layer", cs[j].layer);
      cJSON_AddStringToObject(o, "cache", cs[j].cache);
      cJSON_AddStringToObject(o, "format", sim_record_name(cs[j].rec));
      cJSON_AddNumberToObject(o, "tokens_per_entry", cs[j].tokens_per_entry);
      cJSON_AddNumberToObject(o, "bytes_per_entry", cs[j].bytes_per_entry);
      cJSON_AddNumberToObject(o, "bytes_per_token", cs_bytes_per_token(&cs[j]));
      cJSON_AddNumberToObject(o, "bf16_bytes_per_token", cs_bf16_per_token(&cs[j]));
      cJSON_AddNumberToObject(o, "ratio", (double)cs[j].bytes_per_entry /
                                              cs[j].bf16_bytes_per_entry);
      cJSON_AddItemToArray(arr, o);
    }
  }
}

static cJSON *op_json(sim_op op, const sim_opstat *st) {
  cJSON *x = cJSON_CreateObject();
  cJSON_AddNumberToObject(x, "calls", (double)st->calls);
  cJSON_AddNumberToObject(x, "tokens", (double)st->rows);
  cJSON_AddNumberToObject(x, "seconds", st->seconds);
  cJSON_AddNumberToObject(x, "tokens_per_s", rate((double)st->rows, st->seconds));
  if (is_sim_op(op)) { /* the simulator's own work: no bytes counted */
    cJSON_AddNullToObject(x, "bytes");
    cJSON_AddNullToObject(x, "gb_per_s");
  } else {
    cJSON_AddNumberToObject(x, "bytes", (double)st->bytes);
    cJSON_AddNumberToObject(x, "gb_per_s", rate((double)st->bytes, st->seconds) / 1e9);
  }
  return x;
}

static void json_layers(cJSON *root, const sim_ctx *c) {
  cJSON *kinds = cJSON_AddArrayToObject(root, "layers");
  for (int i = 0; i < c->nkinds; i++) {
    const sim_kind_state *ks = &c->kinds[i];
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "kind", ks->k->label);
    cJSON_AddNumberToObject(o, "compress_ratio", ks->ratio);
    cJSON_AddNumberToObject(o, "topk", ks->k->topk);
    double q, bf;
    kind_bytes(c, ks, &q, &bf);
    cJSON_AddNumberToObject(o, "bytes_per_token", q);
    cJSON_AddNumberToObject(o, "bf16_bytes_per_token", bf);
    cJSON *ops = cJSON_AddObjectToObject(o, "ops");
    for (int op = 0; op < SIM_NUM_OPS; op++)
      if (ks->ops[op].calls)
        cJSON_AddItemToObject(ops, op_key((sim_op)op), op_json((sim_op)op, &ks->ops[op]));
    cJSON *e = cJSON_AddObjectToObject(o, "error");
    if (ks->err_swa.rows)
      cJSON_AddItemToObject(e, "swa", errstat_json(&ks->err_swa));
    if (ks->err_comp.rows)
      cJSON_AddItemToObject(e, "compressed", errstat_json(&ks->err_comp));
    if (ks->err_idx.rows)
      cJSON_AddItemToObject(e, "indexer", errstat_json(&ks->err_idx));
    cJSON_AddItemToArray(kinds, o);
  }
  cJSON *docs = cJSON_AddObjectToObject(root, "bytes_counted");
  for (int op = 0; op < SIM_NUM_OPS; op++)
    if (sim_op_bytes_doc((sim_op)op))
      cJSON_AddStringToObject(docs, op_key((sim_op)op), sim_op_bytes_doc((sim_op)op));
}

static void json_errors(cJSON *root, const sim_ctx *c) {
  cJSON *qe = cJSON_AddArrayToObject(root, "quantization_error");
  err_row er[3];
  err_rows(c, er);
  for (int i = 0; i < 3; i++) {
    if (er[i].st.rows == 0)
      continue;
    cJSON *o = errstat_json(&er[i].st);
    cJSON_AddStringToObject(o, "cache", er[i].cache);
    cJSON_AddStringToObject(o, "format", sim_record_name(er[i].rec));
    cJSON_AddItemToArray(qe, o);
  }
}

static void json_totals(cJSON *root, const sim_ctx *c) {
  cJSON_AddNumberToObject(root, "wall_seconds", c->wall_seconds);
  cJSON *t = cJSON_AddObjectToObject(root, "totals");
  cJSON_AddNumberToObject(t, "wall_seconds", c->wall_seconds);
  cJSON_AddNumberToObject(t, "library_seconds", library_seconds(c));
  cJSON_AddNumberToObject(t, "tokens", (double)tokens_processed(c));
  cJSON_AddNumberToObject(t, "tokens_per_s", rate((double)tokens_processed(c), c->wall_seconds));
}

static void json_verification(cJSON *root, const sim_ctx *c, int ok, const char *stop) {
  const sim_verdict *v = &c->verdict;
  char crit[640];
  criteria(c, crit, sizeof crit);
  cJSON *vj = cJSON_AddObjectToObject(root, "verification");
  cJSON_AddBoolToObject(vj, "passed", ok);
  cJSON_AddStringToObject(vj, "criteria", crit);
  cJSON_AddNumberToObject(vj, "key_rows_checked", (double)v->rows_checked);
  cJSON_AddNumberToObject(vj, "indexer_records_checked", (double)v->indexer_checked);
  cJSON_AddNumberToObject(vj, "index_entries_checked", (double)v->indices_checked);
  cJSON_AddNumberToObject(vj, "library_skipped", (double)c->lib_skipped);
  cJSON *fails = cJSON_AddObjectToObject(vj, "failures");
  static const char *fk[SIM_NUM_FAILS] = {"status",      "skipped", "key_bound",    "index_page",
                                          "index_value", "lens",    "indexer_bound"};
  for (int k = 0; k < SIM_NUM_FAILS; k++)
    cJSON_AddNumberToObject(fails, fk[k], (double)v->fails[k]);
  cJSON *msgs = cJSON_AddArrayToObject(vj, "messages");
  for (int i = 0; i < v->num_messages; i++)
    cJSON_AddItemToArray(msgs, cJSON_CreateString(v->messages[i]));
  if (stop)
    cJSON_AddStringToObject(vj, "stopped", stop);
  else
    cJSON_AddNullToObject(vj, "stopped");
}

static cJSON *build_json(const sim_ctx *c, int ok, const char *stop) {
  cJSON *root = cJSON_CreateObject();
  cJSON_AddStringToObject(root, "tool", "dsv4kv run");
  cJSON_AddStringToObject(root, "version", version_string());
  cJSON_AddStringToObject(root, "workload", c->work.name);
  cJSON_AddStringToObject(root, "source", source_name(c->work.source));
  json_config(root, c);
  json_workload(root, c);
  json_sizes(root, c);
  json_layers(root, c);
  json_errors(root, c);
  json_totals(root, c);
  json_verification(root, c, ok, stop);
  return root;
}

static int write_json(const sim_ctx *c, int ok, const char *stop) {
  cJSON *root = build_json(c, ok, stop);
  char *text = root ? cJSON_Print(root) : NULL;
  int rc = -1;
  if (text) {
    FILE *f = c->json_file;
    rc = (fputs(text, f) < 0 || fputc('\n', f) == EOF || fflush(f)) ? -1 : 0;
  }
  if (rc)
    fprintf(stderr, "dsv4kv run: cannot write the JSON report to %s\n",
            sim_json_to_stdout(&c->cfg) ? "stdout" : c->cfg.json_path);
  cJSON_free(text);
  cJSON_Delete(root);
  return rc;
}

int sim_report(const sim_ctx *c, int ok, const char *stop) {
  /* --json -: stdout carries the JSON alone, the text goes to stderr */
  FILE *f = sim_json_to_stdout(&c->cfg) ? stderr : stdout;
  if (c->cfg.quiet)
    print_quiet(f, c, ok);
  else
    print_text(f, c, ok, stop);
  fflush(f);
  if (!c->json_file)
    return 0;
  return write_json(c, ok, stop);
}
