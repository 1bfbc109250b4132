/* The text report's whole-model sections: the caches of every layer (the
 * sizing a user runs this for), the latency percentiles in virtual time, and
 * the comparison of the formats of a --format list (see report.h). */
#include <stdio.h>
#include <string.h>

#include "report.h"

/* "43 layers = 2 swa + 21 c4 + 20 c128" */
static void layer_mix(const sim_model *m, char *out, size_t n) {
  size_t k = (size_t)snprintf(out, n, "%d layers =", sim_model_layers(m));
  for (int i = 0; i < m->num_kinds && k < n; i++)
    k += (size_t)snprintf(out + k, n - k, "%s %d %s", i ? " +" : "", m->kinds[i].num_layers,
                          m->kinds[i].label);
}

static void model_row(FILE *f, const char *cache, const char *format, double bpt, double total) {
  fprintf(f, "  %-11s %-7s %10.1f %14.3f %8.1f %%\n", cache, format, bpt, sim_gib_per_mtok(bpt),
          total > 0 ? 100.0 * bpt / total : 0.0);
}

void sim_report_model(FILE *f, const sim_ctx *c) {
  const sim_model *m = c->model;
  const sim_model_size *z = &c->msize;
  char mix[128];
  layer_mix(m, mix, sizeof mix);
  fprintf(f, "whole model (%s: %s; main caches + indexer cache, MTP layer not counted)\n", m->name,
          mix);
  fprintf(f, "  %-11s %-7s %10s %14s %10s\n", "cache", "format", "B/token", "GiB/1M tokens",
          "share");
  model_row(f, "swa", sim_format_name(DSV4KV_RECORD_V4), z->swa, z->total);
  if (z->page_comp)
    model_row(f, "compressed", sim_format_name(c->cfg.format), z->comp, z->total);
  if (z->page_idx)
    model_row(f, "indexer", sim_format_name(c->cfg.indexer_format), z->idx, z->total);
  model_row(f, "total", "", z->total, z->total);
  fprintf(f, "  bf16 keys would take %.1f B/token (ratio %.3f)\n", z->bf16_total,
          z->total / z->bf16_total);
  fprintf(f, "  one page (%d tokens) = %.2f MiB in all layers; the pool's %d pages = %.2f GiB",
          c->bs, (double)z->page_total / 1048576.0, c->num_pages,
          (double)z->page_total * c->num_pages / 1073741824.0);
  if (c->cfg.kv_cache_bytes > 0)
    fprintf(f, " (--kv-cache-memory %s)", c->cfg.kv_cache_arg);
  fprintf(f, "\n");
  if (z->page_swa)
    fprintf(f,
            "  SWA is counted for every token, as this pool pages it; a server that frees SWA "
            "pages\n  outside the %d-token window keeps about %.2f MiB of SWA per request "
            "instead\n",
            m->window, (double)sim_model_layers(m) * m->window *
                           dsv4kv_record_bytes(DSV4KV_RECORD_V4) / 1048576.0);
  fprintf(f, "  layer counts: %s\n\n", m->source);
}

static void latency_row(FILE *f, const char *what, const sim_dist *d) {
  fprintf(f, "  %-22s %7lld %9.3f %9.3f %9.3f %9.3f %9.3f\n", what, (long long)d->n, d->p50,
          d->p90, d->p99, d->mean, d->max);
}

void sim_report_latency(FILE *f, const sim_ctx *c) {
  fprintf(f, "latency (seconds of virtual time, the modelled clock; percentiles interpolated)\n");
  fprintf(f, "  %-22s %7s %9s %9s %9s %9s %9s\n", "", "requests", "p50", "p90", "p99", "mean",
          "max");
  latency_row(f, "queueing delay", &c->lat.queue_s);
  latency_row(f, "time to first token", &c->lat.ttft_s);
  fprintf(f,
          "  queueing delay: arrival to first admission; time to first token: arrival to the end "
          "of the step\n  that samples the request's first output token\n\n");
}

/* The error rows' relative RMS of one cache ("compressed", "indexer"). */
static double rel_rms_of(const sim_ctx *c, const char *cache) {
  sim_err_row er[3];
  sim_err_rows(c, er);
  for (int i = 0; i < 3; i++)
    if (!strcmp(er[i].cache, cache) && er[i].st.rows)
      return sim_errstat_rel_rms(&er[i].st);
  return -1;
}

static void compare_row(FILE *f, const sim_ctx *c) {
  char comp[16] = "-", idx[16] = "-", ttft[16] = "-";
  double rc = rel_rms_of(c, "compressed"), ri = rel_rms_of(c, "indexer");
  if (rc >= 0)
    snprintf(comp, sizeof comp, "%.5f", rc);
  if (ri >= 0)
    snprintf(idx, sizeof idx, "%.5f", ri);
  if (c->ran)
    snprintf(ttft, sizeof ttft, "%.3f", c->lat.ttft_s.p99);
  fprintf(f, "  %-6s %-7s %9.1f %11.3f %8d %8lld %10s %10s %10s  %s\n",
          sim_format_name(c->cfg.format), sim_format_name(c->cfg.indexer_format), c->msize.total,
          sim_gib_per_mtok(c->msize.total), c->num_pages, (long long)c->sched.preemptions, ttft,
          comp, idx, !c->ran ? "DID NOT RUN" : c->ok ? "PASSED" : "FAILED");
}

void sim_report_compare(FILE *f, const sim_ctx *const *runs, int n) {
  const sim_ctx *c0 = runs[0];
  fprintf(f, "\nformat comparison (whole model %s, %d layers; pool %s", c0->model->name,
          sim_model_layers(c0->model), c0->pool_from ? c0->pool_from : "not sized");
  if (c0->cfg.kv_cache_bytes > 0)
    fprintf(f, " %s", c0->cfg.kv_cache_arg);
  fprintf(f, ")\n");
  fprintf(f, "  %-6s %-7s %9s %11s %8s %8s %10s %10s %10s  %s\n", "format", "indexer", "B/token",
          "GiB/1M tok", "pages", "preempt", "TTFT p99", "comp RMS", "idx RMS", "verdict");
  for (int i = 0; i < n; i++)
    compare_row(f, runs[i]);
  fprintf(f,
          "  B/token, GiB/1M tok: all layers' caches; pages: the pool; TTFT p99 in seconds of "
          "virtual time;\n  comp RMS, idx RMS: relative RMS error of the compressed and indexer "
          "caches' verified samples\n");
}
