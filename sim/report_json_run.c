/* One run's object of the JSON report (see report.h, report_json.c): the
 * text report's figures, the whole model's cache bytes, the latency
 * percentiles and the per-step time series. */
#include <math.h>
#include <stdio.h>

#include <cjson/cJSON.h>

#include "device.h"
#include "report.h"

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
  cJSON_AddStringToObject(cfg, "format", sim_format_name(c->cfg.format));
  cJSON_AddStringToObject(cfg, "indexer_format", sim_format_name(c->cfg.indexer_format));
  cJSON_AddNumberToObject(cfg, "block_size", c->bs);
  cJSON_AddNumberToObject(cfg, "num_blocks", c->num_pages);
  cJSON_AddNumberToObject(cfg, "max_batched_tokens", c->cfg.max_batched_tokens);
  cJSON_AddNumberToObject(cfg, "max_num_seqs", c->cfg.max_num_seqs);
  cJSON_AddNumberToObject(cfg, "seed", (double)c->cfg.seed);
  cJSON_AddNumberToObject(cfg, "threads", c->cfg.threads);
  cJSON_AddStringToObject(cfg, "device", c->cfg.device_cuda ? "cuda" : "cpu");
  cJSON_AddBoolToObject(cfg, "distinct_slots", c->cfg.distinct_slots);
  if (c->cfg.device_cuda) {
    char dev[256];
    sim_dev_describe(dev, sizeof dev);
    cJSON_AddStringToObject(cfg, "device_name", dev);
  }
  cJSON_AddStringToObject(cfg, "pool_sized_by", c->pool_from ? c->pool_from : "auto");
  if (c->cfg.kv_cache_bytes > 0)
    cJSON_AddNumberToObject(cfg, "kv_cache_memory_bytes", (double)c->cfg.kv_cache_bytes);
  else
    cJSON_AddNullToObject(cfg, "kv_cache_memory_bytes");
  cJSON_AddNumberToObject(cfg, "pages_with_memory", c->alloc_pages);
  cJSON_AddNumberToObject(cfg, "window", c->model->window);
  cJSON_AddNumberToObject(cfg, "page_bytes", sim_page_bytes(c));
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
  sim_pool_pressure p = sim_pressure(c);
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
    sim_cache_size cs[3];
    int n = sim_kind_caches(c, &c->kinds[i], cs);
    for (int j = 0; j < n; j++) {
      cJSON *o = cJSON_CreateObject();
      cJSON_AddStringToObject(o, "layer", cs[j].layer);
      cJSON_AddStringToObject(o, "cache", cs[j].cache);
      cJSON_AddStringToObject(o, "format", sim_format_name(cs[j].rec));
      cJSON_AddNumberToObject(o, "tokens_per_entry", cs[j].tokens_per_entry);
      cJSON_AddNumberToObject(o, "bytes_per_entry", cs[j].bytes_per_entry);
      cJSON_AddNumberToObject(o, "bytes_per_token", sim_cs_bytes_per_token(&cs[j]));
      cJSON_AddNumberToObject(o, "bf16_bytes_per_token", sim_cs_bf16_per_token(&cs[j]));
      cJSON_AddNumberToObject(o, "ratio",
                              (double)cs[j].bytes_per_entry / cs[j].bf16_bytes_per_entry);
      cJSON_AddItemToArray(arr, o);
    }
  }
}

static cJSON *op_json(sim_op op, const sim_opstat *st) {
  cJSON *x = cJSON_CreateObject();
  cJSON_AddNumberToObject(x, "calls", (double)st->calls);
  cJSON_AddNumberToObject(x, "tokens", (double)st->rows);
  cJSON_AddNumberToObject(x, "seconds", st->seconds);
  cJSON_AddNumberToObject(x, "tokens_per_s", sim_rate((double)st->rows, st->seconds));
  if (sim_is_sim_op(op)) { /* the simulator's own work: no bytes counted */
    cJSON_AddNullToObject(x, "bytes");
    cJSON_AddNullToObject(x, "gb_per_s");
  } else {
    cJSON_AddNumberToObject(x, "bytes", (double)st->bytes);
    cJSON_AddNumberToObject(x, "gb_per_s", sim_rate((double)st->bytes, st->seconds) / 1e9);
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
    sim_kind_bytes(c, ks, &q, &bf);
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
  sim_err_row er[3];
  sim_err_rows(c, er);
  for (int i = 0; i < 3; i++) {
    if (er[i].st.rows == 0)
      continue;
    cJSON *o = errstat_json(&er[i].st);
    cJSON_AddStringToObject(o, "cache", er[i].cache);
    cJSON_AddStringToObject(o, "format", sim_format_name(er[i].rec));
    cJSON_AddItemToArray(qe, o);
  }
}

static void json_totals(cJSON *root, const sim_ctx *c) {
  cJSON_AddNumberToObject(root, "wall_seconds", c->wall_seconds);
  cJSON *t = cJSON_AddObjectToObject(root, "totals");
  cJSON_AddNumberToObject(t, "wall_seconds", c->wall_seconds);
  cJSON_AddNumberToObject(t, "library_seconds", sim_library_seconds(c));
  cJSON_AddNumberToObject(t, "tokens", (double)sim_tokens_processed(c));
  cJSON_AddNumberToObject(t, "tokens_per_s",
                          sim_rate((double)sim_tokens_processed(c), c->wall_seconds));
}

static void json_verification(cJSON *root, const sim_ctx *c, int ok, const char *stop) {
  const sim_verdict *v = &c->verdict;
  char crit[640];
  sim_criteria(c, crit, sizeof crit);
  cJSON *vj = cJSON_AddObjectToObject(root, "verification");
  cJSON_AddBoolToObject(vj, "passed", ok);
  cJSON_AddBoolToObject(vj, "out_of_memory", c->out_of_memory); /* stopped by the simulator's memory: exit 2 */
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

static cJSON *dist_json(const sim_dist *d) {
  cJSON *o = cJSON_CreateObject();
  cJSON_AddNumberToObject(o, "n", (double)d->n);
  cJSON_AddNumberToObject(o, "p50", d->p50);
  cJSON_AddNumberToObject(o, "p90", d->p90);
  cJSON_AddNumberToObject(o, "p99", d->p99);
  cJSON_AddNumberToObject(o, "mean", d->mean);
  cJSON_AddNumberToObject(o, "max", d->max);
  return o;
}

static void json_latency(cJSON *root, const sim_ctx *c) {
  cJSON *l = cJSON_AddObjectToObject(root, "latency");
  cJSON_AddStringToObject(l, "clock", "virtual");
  cJSON_AddItemToObject(l, "queueing_delay_s", dist_json(&c->lat.queue_s));
  cJSON_AddItemToObject(l, "ttft_s", dist_json(&c->lat.ttft_s));
}

static void json_model_bytes(cJSON *root, const sim_ctx *c) {
  const sim_model_size *z = &c->msize;
  cJSON *m = cJSON_AddObjectToObject(root, "model_bytes");
  cJSON_AddNumberToObject(m, "layers", sim_model_layers(c->model));
  cJSON_AddNumberToObject(m, "bytes_per_token", z->total);
  cJSON_AddNumberToObject(m, "gib_per_million_tokens", sim_gib_per_mtok(z->total));
  cJSON_AddNumberToObject(m, "swa_bytes_per_token", z->swa);
  cJSON_AddNumberToObject(m, "compressed_bytes_per_token", z->comp);
  cJSON_AddNumberToObject(m, "indexer_bytes_per_token", z->idx);
  cJSON_AddNumberToObject(m, "bf16_bytes_per_token", z->bf16_total);
  cJSON_AddNumberToObject(m, "page_bytes", (double)z->page_total);
  cJSON_AddNumberToObject(m, "pool_bytes", (double)z->page_total * c->num_pages);
}

/* Columns of equal length, one entry per kept step (timeline.h). */
static void json_series(cJSON *root, const sim_ctx *c) {
  const sim_series *s = &c->series;
  cJSON *o = cJSON_AddObjectToObject(root, "time_series");
  cJSON_AddNumberToObject(o, "points", s->n);
  cJSON_AddNumberToObject(o, "every_steps", (double)s->stride);
  cJSON_AddNumberToObject(o, "max_points", SIM_SERIES_MAX);
  static const char *cols[] = {"step",    "virtual_time_s", "pages_in_use", "running",
                               "queued",  "batch_tokens",   "tokens"};
  for (size_t k = 0; k < sizeof cols / sizeof cols[0]; k++) {
    cJSON *a = cJSON_AddArrayToObject(o, cols[k]);
    for (int i = 0; i < s->n; i++) {
      const sim_point *p = &s->pts[i];
      double v = k == 0 ? (double)p->step : k == 1 ? p->t_s : k == 2 ? p->pages
                 : k == 3 ? p->running : k == 4 ? (double)p->queued : k == 5 ? p->batch_tokens
                 : (double)p->tokens;
      cJSON_AddItemToArray(a, cJSON_CreateNumber(v));
    }
  }
}

cJSON *sim_report_json_run(const sim_ctx *c) {
  cJSON *root = cJSON_CreateObject();
  cJSON_AddStringToObject(root, "format", sim_format_name(c->cfg.format));
  cJSON_AddStringToObject(root, "indexer_format", sim_format_name(c->cfg.indexer_format));
  cJSON_AddBoolToObject(root, "ran", c->ran);
  cJSON_AddNumberToObject(root, "exit_status", c->rc);
  cJSON_AddBoolToObject(root, "passed", c->ran && c->ok);
  json_model_bytes(root, c);
  if (!c->ran)
    return root;
  cJSON_AddStringToObject(root, "workload", c->work.name);
  cJSON_AddStringToObject(root, "source", sim_source_name(c->work.source));
  json_config(root, c);
  json_workload(root, c);
  json_latency(root, c);
  json_sizes(root, c);
  json_layers(root, c);
  json_errors(root, c);
  json_totals(root, c);
  json_verification(root, c, c->ok, c->stop_msg[0] ? c->stop_msg : NULL);
  json_series(root, c);
  return root;
}
