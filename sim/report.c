/* The report of a run: text on stdout, the same figures as JSON (--json). */
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

/* Record names as the options spell them (the indexer's without "indexer-"). */
static const char *short_name(dsv4kv_record r) {
  if (r == DSV4KV_RECORD_INDEXER_FP8)
    return "fp8";
  if (r == DSV4KV_RECORD_INDEXER_MXFP4)
    return "mxfp4";
  return sim_record_name(r);
}

static const char *source_name(sim_source s) {
  return s == SIM_SOURCE_MOONCAKE ? "mooncake-jsonl"
         : s == SIM_SOURCE_AZURE  ? "azure-csv"
                                  : "synthetic";
}

/* Bytes per token of one layer of a kind, in the caches and in bf16. */
static void kind_bytes(const sim_ctx *c, const sim_kind_state *ks, double *q, double *bf) {
  *q = dsv4kv_record_bytes(DSV4KV_RECORD_V4);
  *bf = 1024;
  if (ks->ratio) {
    *q += (double)dsv4kv_record_bytes(c->cfg.format) / ks->ratio;
    *bf += 1024.0 / ks->ratio;
  }
  if (ks->k->has_indexer) {
    *q += (double)dsv4kv_record_bytes(c->cfg.indexer_format) / ks->ratio;
    *bf += 256.0 / ks->ratio;
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

static double rate(double x, double s) {
  return s > 0 ? x / s : 0.0;
}

static void print_text(const sim_ctx *c, int ok, const char *stop) {
  const sim_sched *s = &c->sched;
  const sim_model *m = c->model;
  sim_workload_totals wt = sim_workload_sum(&c->work);
  FILE *f = stdout;
  if (c->work.source == SIM_SOURCE_SYNTHETIC)
    fprintf(f, "dsv4kv run: %s workload\n", c->work.name);
  else
    fprintf(f, "dsv4kv run: %s (%s trace)\n", c->work.name, source_name(c->work.source));
  fprintf(f, "  model      %s: %s; head dim %d, indexer head dim %d\n", m->name, m->describe,
          m->head_dim, m->indexer_head_dim);
  fprintf(f,
          "  caches     swa %s (%d B/token); compressed %s (%d B/entry); indexer %s (%d B/entry)\n",
          short_name(DSV4KV_RECORD_V4), dsv4kv_record_bytes(DSV4KV_RECORD_V4),
          short_name(c->cfg.format), dsv4kv_record_bytes(c->cfg.format),
          short_name(c->cfg.indexer_format), dsv4kv_record_bytes(c->cfg.indexer_format));
  fprintf(f, "  pool       %d pages x %d tokens (", c->num_pages, c->bs);
  for (int i = 0; i < c->nkinds; i++)
    if (c->kinds[i].ratio)
      fprintf(f, "%s%s: %d entries", i > 1 ? ", " : "", c->kinds[i].k->label, c->kinds[i].cbs);
  fprintf(f, " per page), %.1f KiB/page, %.1f MiB in all\n", page_bytes(c) / 1024.0,
          page_bytes(c) * c->num_pages / 1048576.0);
  fprintf(f, "  schedule   --max-batched-tokens %d, up to %d running\n\n",
          c->cfg.max_batched_tokens, c->cfg.max_num_seqs);

  fprintf(f, "workload\n");
  fprintf(f, "  requests   %lld done of %lld", (long long)s->done, (long long)c->work.n);
  if (c->work.skipped_lines)
    fprintf(f, " (%lld malformed line%s skipped)", (long long)c->work.skipped_lines,
            c->work.skipped_lines == 1 ? "" : "s");
  fprintf(f, "; %lld prompt + %lld output tokens, arrivals over %.1f s\n",
          (long long)wt.input_tokens, (long long)wt.output_tokens, wt.span_ms / 1000.0);
  fprintf(f, "  steps      %lld (virtual time %.1f s)\n", (long long)s->steps,
          s->clock_ms / 1000.0);
  fprintf(f,
          "  tokens     prefill %lld computed (%lld of them recomputed after preemption), "
          "decode %lld; prefix hits %lld tokens\n",
          (long long)s->prefill_tokens, (long long)s->recomputed_tokens,
          (long long)s->decode_tokens, (long long)s->hit_tokens);
  fprintf(f, "  batching   peak %d running, peak %d queued, %lld preemption%s\n", s->peak_running,
          s->peak_queued, (long long)s->preemptions, s->preemptions == 1 ? "" : "s");
  fprintf(f,
          "  pages      peak used %d of %d (%.1f %%), prefix-hit pages %lld (%lld on "
          "re-admission), cached pages evicted %lld\n\n",
          c->pool.peak_used, c->num_pages, 100.0 * c->pool.peak_used / c->num_pages,
          (long long)s->hit_pages, (long long)s->rehit_pages, (long long)c->pool.evictions);

  fprintf(f, "bytes per token (one layer of each kind)\n");
  fprintf(f, "  %-11s %-7s %9s %9s %8s\n", "cache", "format", "bytes", "bf16", "ratio");
  dsv4kv_record recs[3] = {DSV4KV_RECORD_V4, c->cfg.format, c->cfg.indexer_format};
  const char *caches[3] = {"swa", "compressed", "indexer"};
  for (int i = 0; i < 3; i++) {
    int bf = i == 2 ? 256 : 1024;
    fprintf(f, "  %-11s %-7s %9d %9d %8.3f\n", caches[i], short_name(recs[i]),
            dsv4kv_record_bytes(recs[i]), bf, (double)dsv4kv_record_bytes(recs[i]) / bf);
  }
  for (int i = 0; i < c->nkinds; i++) {
    double q, bf;
    kind_bytes(c, &c->kinds[i], &q, &bf);
    char name[48];
    snprintf(name, sizeof name, "%s layer", c->kinds[i].k->label);
    fprintf(f, "  %-11s %-7s %9.1f %9.1f %8.3f\n", name, "", q, bf, q / bf);
  }
  fprintf(f, "\nquantization error (verified samples)\n");
  fprintf(f, "  %-11s %-7s %9s %10s %9s %11s\n", "cache", "format", "rows", "rel RMS", "SNR dB",
          "max |err|");
  err_row er[3];
  err_rows(c, er);
  for (int i = 0; i < 3; i++) {
    if (er[i].st.rows == 0)
      continue;
    fprintf(f, "  %-11s %-7s %9lld %10.5f %9.2f %11.4g\n", er[i].cache, short_name(er[i].rec),
            (long long)er[i].st.rows, sim_errstat_rel_rms(&er[i].st), sim_errstat_snr_db(&er[i].st),
            er[i].st.max_abs_err);
  }

  char thr[64];
  if (c->cfg.threads > 0)
    snprintf(thr, sizeof thr, "%d thread%s per call", c->cfg.threads,
             c->cfg.threads == 1 ? "" : "s");
  else
    snprintf(thr, sizeof thr, "OpenMP threads for large calls");
  fprintf(f,
          "\ntime per op (CPU, %s; tokens = compressed entries for the compressed-cache "
          "ops)\n",
          thr);
  fprintf(f, "  %-5s %-19s %8s %11s %9s %12s %8s\n", "layer", "op", "calls", "tokens", "seconds",
          "tokens/s", "GB/s");
  double lib_seconds = 0;
  for (int i = 0; i < c->nkinds; i++)
    for (int op = 0; op < SIM_NUM_OPS; op++) {
      const sim_opstat *o = &c->kinds[i].ops[op];
      if (o->calls == 0)
        continue;
      if (op != SIM_OP_MAKE_K && op != SIM_OP_VERIFY)
        lib_seconds += o->seconds;
      fprintf(f, "  %-5s %-19s %8lld %11lld %9.3f %12.0f %8.2f\n", c->kinds[i].k->label,
              sim_op_name((sim_op)op), (long long)o->calls, (long long)o->rows, o->seconds,
              rate((double)o->rows, o->seconds), rate((double)o->bytes, o->seconds) / 1e9);
    }
  fprintf(f, "  library %.3f s of %.3f s wall; %.0f tokens/s end to end\n\n", lib_seconds,
          c->wall_seconds, rate((double)(s->prefill_tokens + s->decode_tokens), c->wall_seconds));

  const sim_verdict *v = &c->verdict;
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
  fprintf(f, "  verdict: %s\n", ok ? "PASSED" : "FAILED");
}

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
  return o;
}

static cJSON *build_json(const sim_ctx *c, int ok, const char *stop) {
  const sim_sched *s = &c->sched;
  sim_workload_totals wt = sim_workload_sum(&c->work);
  cJSON *root = cJSON_CreateObject();
  cJSON_AddStringToObject(root, "workload", c->work.name);
  cJSON_AddStringToObject(root, "source", source_name(c->work.source));

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
  cJSON_AddNumberToObject(tok, "prefix_hit", (double)s->hit_tokens);
  cJSON_AddNumberToObject(tok, "recomputed", (double)s->recomputed_tokens);
  cJSON *pg = cJSON_AddObjectToObject(root, "pages");
  cJSON_AddNumberToObject(pg, "pool", c->num_pages);
  cJSON_AddNumberToObject(pg, "peak_used", c->pool.peak_used);
  cJSON_AddNumberToObject(pg, "prefix_hit", (double)s->hit_pages);
  cJSON_AddNumberToObject(pg, "prefix_hit_readmission", (double)s->rehit_pages);
  cJSON_AddNumberToObject(pg, "evicted_cached", (double)c->pool.evictions);
  cJSON *bt = cJSON_AddObjectToObject(root, "batching");
  cJSON_AddNumberToObject(bt, "peak_running", s->peak_running);
  cJSON_AddNumberToObject(bt, "peak_queued", s->peak_queued);
  cJSON_AddNumberToObject(bt, "preemptions", (double)s->preemptions);

  cJSON *bpt = cJSON_AddArrayToObject(root, "bytes_per_token");
  dsv4kv_record recs[3] = {DSV4KV_RECORD_V4, c->cfg.format, c->cfg.indexer_format};
  const char *caches[3] = {"swa", "compressed", "indexer"};
  for (int i = 0; i < 3; i++) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "cache", caches[i]);
    cJSON_AddStringToObject(o, "format", sim_record_name(recs[i]));
    cJSON_AddNumberToObject(o, "bytes", dsv4kv_record_bytes(recs[i]));
    cJSON_AddNumberToObject(o, "bf16_bytes", i == 2 ? 256 : 1024);
    cJSON_AddItemToArray(bpt, o);
  }
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
    for (int op = 0; op < SIM_NUM_OPS; op++) {
      const sim_opstat *st = &ks->ops[op];
      if (st->calls == 0)
        continue;
      cJSON *x = cJSON_AddObjectToObject(ops, op_key((sim_op)op));
      cJSON_AddNumberToObject(x, "calls", (double)st->calls);
      cJSON_AddNumberToObject(x, "tokens", (double)st->rows);
      cJSON_AddNumberToObject(x, "bytes", (double)st->bytes);
      cJSON_AddNumberToObject(x, "seconds", st->seconds);
      cJSON_AddNumberToObject(x, "tokens_per_s", rate((double)st->rows, st->seconds));
      cJSON_AddNumberToObject(x, "gb_per_s", rate((double)st->bytes, st->seconds) / 1e9);
    }
    cJSON *e = cJSON_AddObjectToObject(o, "error");
    if (ks->err_swa.rows)
      cJSON_AddItemToObject(e, "swa", errstat_json(&ks->err_swa));
    if (ks->err_comp.rows)
      cJSON_AddItemToObject(e, "compressed", errstat_json(&ks->err_comp));
    if (ks->err_idx.rows)
      cJSON_AddItemToObject(e, "indexer", errstat_json(&ks->err_idx));
    cJSON_AddItemToArray(kinds, o);
  }
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
  cJSON_AddNumberToObject(root, "wall_seconds", c->wall_seconds);

  const sim_verdict *v = &c->verdict;
  cJSON *vj = cJSON_AddObjectToObject(root, "verification");
  cJSON_AddBoolToObject(vj, "passed", ok);
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
  return root;
}

int sim_report(const sim_ctx *c, int ok, const char *stop) {
  const sim_sched *s = &c->sched;
  if (c->cfg.quiet) {
    printf(
        "dsv4kv run: %s: %lld requests, %lld steps, %lld prefill + %lld decode tokens, "
        "peak %d pages, %.1f s: verification %s\n",
        c->work.name, (long long)s->done, (long long)s->steps, (long long)s->prefill_tokens,
        (long long)s->decode_tokens, c->pool.peak_used, c->wall_seconds, ok ? "PASSED" : "FAILED");
    if (!ok)
      for (int i = 0; i < c->verdict.num_messages; i++)
        fprintf(stderr, "dsv4kv run: %s\n", c->verdict.messages[i]);
  } else {
    print_text(c, ok, stop);
  }
  fflush(stdout);
  if (!c->json_file)
    return 0;
  cJSON *root = build_json(c, ok, stop);
  char *text = root ? cJSON_Print(root) : NULL;
  int rc = -1;
  if (text) {
    FILE *f = c->json_file;
    rc = (fputs(text, f) < 0 || fputc('\n', f) == EOF || fflush(f)) ? -1 : 0;
  }
  if (rc)
    fprintf(stderr, "dsv4kv run: cannot write the JSON report to %s\n", c->cfg.json_path);
  cJSON_free(text);
  cJSON_Delete(root);
  return rc;
}
