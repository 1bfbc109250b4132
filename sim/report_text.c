/* The text report of a run and its --quiet one-line summary (see report.h). */
#include <stdio.h>

#include "device.h"
#include "report.h"
#include "run.h"

static void text_header(FILE *f, const sim_ctx *c) {
  const sim_model *m = c->model;
  if (c->work.source == SIM_SOURCE_SYNTHETIC)
    fprintf(f, "dsv4kv run %s: %s workload\n", sim_version_string(), c->work.name);
  else
    fprintf(f, "dsv4kv run %s: %s (%s trace)\n", sim_version_string(), c->work.name,
            sim_source_name(c->work.source));
  fprintf(f, "  model      %s: %s; head dim %d, indexer head dim %d\n", m->name, m->describe,
          m->head_dim, m->indexer_head_dim);
  fprintf(f,
          "  caches     swa %s (%d B/token); compressed %s (%d B/entry); indexer %s (%d B/entry)\n",
          sim_format_name(DSV4KV_RECORD_V4), dsv4kv_record_bytes(DSV4KV_RECORD_V4),
          sim_format_name(c->cfg.format), dsv4kv_record_bytes(c->cfg.format),
          sim_format_name(c->cfg.indexer_format), dsv4kv_record_bytes(c->cfg.indexer_format));
  fprintf(f, "  pool       %d pages x %d tokens (%s; ", c->num_pages, c->bs,
          c->pool_from ? c->pool_from : "auto");
  int first = 1;
  for (int i = 0; i < c->nkinds; i++)
    if (c->kinds[i].ratio) {
      fprintf(f, "%s%s: %d entries", first ? "" : ", ", c->kinds[i].k->label, c->kinds[i].cbs);
      first = 0;
    }
  fprintf(f, " per page); simulated layers %.1f KiB/page, %.1f MiB for %d pages", sim_page_bytes(c) / 1024.0,
          sim_page_bytes(c) * c->alloc_pages / 1048576.0, c->alloc_pages);
  if (c->alloc_pages < c->num_pages)
    fprintf(f, " (the workload never holds more)");
  fprintf(f, "\n");
  fprintf(f, "  schedule   --max-batched-tokens %d, up to %d running\n\n",
          c->cfg.max_batched_tokens, c->cfg.max_num_seqs);
}

static void text_bottleneck(FILE *f, const sim_ctx *c) {
  sim_pool_pressure p = sim_pressure(c);
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
  fprintf(
      f,
      "  compressed and indexer caches hold one entry per compress_ratio tokens, so\n"
      "  B/token = B/entry / tokens/entry; ratio = record bytes / bf16 bytes of the same keys\n");
  fprintf(f, "  %-5s %-11s %-6s %13s %8s %9s %13s %7s\n", "layer", "cache", "format",
          "tokens/entry", "B/entry", "B/token", "bf16 B/token", "ratio");
  for (int i = 0; i < c->nkinds; i++) {
    sim_cache_size cs[3];
    int n = sim_kind_caches(c, &c->kinds[i], cs);
    for (int j = 0; j < n; j++) {
      char tpe[16], bpe[16];
      snprintf(tpe, sizeof tpe, "%d", cs[j].tokens_per_entry);
      snprintf(bpe, sizeof bpe, "%d", cs[j].bytes_per_entry);
      text_size_row(f, cs[j].layer, cs[j].cache, sim_format_name(cs[j].rec), tpe, bpe,
                    sim_cs_bytes_per_token(&cs[j]), sim_cs_bf16_per_token(&cs[j]));
    }
    if (n > 1) {
      double q, bf;
      sim_kind_bytes(c, &c->kinds[i], &q, &bf);
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
  sim_err_row er[3];
  sim_err_rows(c, er);
  for (int i = 0; i < 3; i++) {
    if (er[i].st.rows == 0)
      continue;
    fprintf(f, "  %-11s %-7s %9lld %10.5f %9.2f %11.4g %10.4f\n", er[i].cache,
            sim_format_name(er[i].rec), (long long)er[i].st.rows, sim_errstat_rel_rms(&er[i].st),
            sim_errstat_snr_db(&er[i].st), er[i].st.max_abs_err, er[i].st.max_rel_amax);
  }
  fputc('\n', f);
}

static void text_op_row(FILE *f, const char *layer, sim_op op, const sim_opstat *o) {
  char gbs[32];
  if (sim_is_sim_op(op))
    snprintf(gbs, sizeof gbs, "-");
  else
    snprintf(gbs, sizeof gbs, "%.2f", sim_rate((double)o->bytes, o->seconds) / 1e9);
  fprintf(f, "  %-5s %-19s %8lld %11lld %9.3f %12.0f %8s\n", layer, sim_op_name(op),
          (long long)o->calls, (long long)o->rows, o->seconds,
          sim_rate((double)o->rows, o->seconds), gbs);
}

/* The footnote: what GB/s counts for each op that ran. */
static void text_bytes_notes(FILE *f, const sim_ctx *c) {
  fprintf(f,
          "  bytes counted for GB/s, per token or entry (index entries are int32; block tables "
          "not counted):\n");
  for (int op = 0; op < SIM_NUM_OPS; op++) {
    const char *doc = sim_op_bytes_doc((sim_op)op);
    int ran = 0;
    for (int i = 0; i < c->nkinds; i++)
      ran |= c->kinds[i].ops[op].calls > 0;
    if (doc && ran && op != SIM_OP_INSERT_COMP && op != SIM_OP_GATHER_SWA)
      fprintf(f, "    %-19s %s\n",
              op == SIM_OP_INSERT_SWA    ? "inserts"
              : op == SIM_OP_GATHER_COMP ? "gathers"
                                         : sim_op_name((sim_op)op),
              doc);
  }
  fprintf(f, "    %-19s the simulator's own work (key synthesis, verification): not counted\n",
          "-");
}

static void text_ops(FILE *f, const sim_ctx *c) {
  char thr[128];
  sim_threads t = sim_threads_of(&c->cfg);
  if (t.large_calls == t.small_calls)
    snprintf(thr, sizeof thr, "%d thread%s per call of %d processors", t.large_calls,
             t.large_calls == 1 ? "" : "s", t.processors);
  else
    snprintf(thr, sizeof thr, "--threads 0: %d threads for large calls, 1 for small ones",
             t.large_calls);
  if (c->cfg.device_cuda) {
    char dev[256];
    sim_dev_describe(dev, sizeof dev);
    fprintf(f, "time per op (one layer of each kind; CUDA: %s; GPU time of each call by CUDA events, "
               "copies to and from the host not included%s)\n",
            dev, c->cfg.distinct_slots ? "; distinct slots promised" : "");
  } else {
    fprintf(f, "time per op (one layer of each kind; CPU, %s)\n", thr);
  }
  fprintf(f,
          "  tokens: compressed entries for the compressed-cache ops; GB/s: bytes read + "
          "written per second\n");
  fprintf(f, "  %-5s %-19s %8s %11s %9s %12s %8s\n", "layer", "op", "calls", "tokens", "seconds",
          "tokens/s", "GB/s");
  for (int i = 0; i < c->nkinds; i++)
    for (int op = 0; op < SIM_NUM_OPS; op++)
      if (c->kinds[i].ops[op].calls)
        text_op_row(f, c->kinds[i].k->label, (sim_op)op, &c->kinds[i].ops[op]);
  fprintf(f, "  library %.3f s of %.3f s wall; %.0f tokens/s end to end\n", sim_library_seconds(c),
          c->wall_seconds, sim_rate((double)sim_tokens_processed(c), c->wall_seconds));
  text_bytes_notes(f, c);
  fputc('\n', f);
}

/* The verdict's word: a run the simulator's own memory cut short checked
 * too little to say FAILED (its exit status is 2, as a run that cannot start). */
static const char *verdict_word(const sim_ctx *c, int ok) {
  return ok ? "PASSED" : c->out_of_memory ? "INCOMPLETE (the simulator ran out of memory)" : "FAILED";
}

static void text_verification(FILE *f, const sim_ctx *c, int ok, const char *stop) {
  const sim_verdict *v = &c->verdict;
  const sim_sched *s = &c->sched;
  char crit[640];
  sim_criteria(c, crit, sizeof crit);
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
  fprintf(f, "  verdict: %s\n", verdict_word(c, ok));
}

void sim_report_text(FILE *f, const sim_ctx *c, int ok, const char *stop) {
  text_header(f, c);
  text_workload(f, c);
  sim_report_latency(f, c);
  text_sizes(f, c);
  sim_report_model(f, c);
  text_errors(f, c);
  text_ops(f, c);
  text_verification(f, c, ok, stop);
}

void sim_report_quiet(FILE *f, const sim_ctx *c, int ok) {
  const sim_sched *s = &c->sched;
  char skipped[64] = "", done[64] = ""; /* --skip-bad's count, as the full report gives it */
  if (s->done != c->work.n) /* a run stopped early: how many of the trace's requests completed */
    snprintf(done, sizeof done, " of %lld", (long long)c->work.n);
  if (c->work.skipped_lines > 0)
    snprintf(skipped, sizeof skipped, " (%lld malformed line%s skipped)", (long long)c->work.skipped_lines,
             c->work.skipped_lines == 1 ? "" : "s");
  fprintf(f,
          "dsv4kv run: %s%s: formats swa %s, compressed %s, indexer %s; whole model %.1f B/token "
          "(%.2f GiB/1M tokens); %lld%s request%s, %lld steps, %lld prefill + %lld decode tokens, "
          "peak %d of %d pages, %lld preemption%s, TTFT p99 %.3f s (virtual), %.1f s: "
          "verification %s\n",
          c->work.name, skipped, sim_format_name(DSV4KV_RECORD_V4), sim_format_name(c->cfg.format),
          sim_format_name(c->cfg.indexer_format), c->msize.total, sim_gib_per_mtok(c->msize.total),
          (long long)s->done, done, s->done == 1 && !done[0] ? "" : "s", (long long)s->steps, (long long)s->prefill_tokens,
          (long long)s->decode_tokens, c->pool.peak_used, c->num_pages, (long long)s->preemptions,
          s->preemptions == 1 ? "" : "s", c->lat.ttft_s.p99, c->wall_seconds, verdict_word(c, ok));
  if (!ok)
    for (int i = 0; i < c->verdict.num_messages; i++)
      fprintf(stderr, "dsv4kv run: %s\n", c->verdict.messages[i]);
}
