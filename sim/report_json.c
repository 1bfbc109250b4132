/* The JSON report (--json; see report.h).  Schema 2 (SIM_JSON_SCHEMA):
 *
 *   schema_version   2 (1: the unversioned report of one run, its fields at
 *                    the top level)
 *   tool, version    "dsv4kv run", the header's version
 *   library_version  dsv4kv_version() of the library actually loaded
 *   git_commit       the commit the build was configured at, or null
 *   host             the machine's name
 *   command_line     the command, shell-quoted; argv: its words
 *   threads          requested (--threads), large_calls, small_calls,
 *                    processors, omp_wait_policy (or null)
 *   model            name, layers, source, kinds [{kind, compress_ratio, topk,
 *                    indexer, layers}]
 *   passed           every run passed
 *   runs             one object per --format (report_json_run.c): format,
 *                    indexer_format, ran, exit_status, passed, model_bytes,
 *                    latency {queueing_delay_s, ttft_s: {n, p50, p90, p99,
 *                    mean, max}}, time_series {points, every_steps,
 *                    max_points, step[], virtual_time_s[], pages_in_use[],
 *                    running[], queued[], batch_tokens[], tokens[]}, and the
 *                    figures of the text report (config, requests, tokens,
 *                    pages, batching, cache_bytes, layers, quantization_error,
 *                    totals, verification)
 *   comparison       one row per run: format, indexer_format, bytes_per_token,
 *                    gib_per_million_tokens, pages, preemptions, ttft_p99_s,
 *                    compressed_rel_rms, indexer_rel_rms (null when not
 *                    measured), passed */
#include <stdio.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "report.h"
#include "run.h"

static void json_meta(cJSON *root, const sim_config *cfg) {
  cJSON_AddNumberToObject(root, "schema_version", SIM_JSON_SCHEMA);
  cJSON_AddStringToObject(root, "tool", "dsv4kv run");
  cJSON_AddStringToObject(root, "version", sim_version_string());
  cJSON_AddStringToObject(root, "library_version", dsv4kv_version());
  if (cfg->git_commit)
    cJSON_AddStringToObject(root, "git_commit", cfg->git_commit);
  else
    cJSON_AddNullToObject(root, "git_commit");
  cJSON_AddStringToObject(root, "host", sim_host_name());
  char cmd[4096];
  sim_command_line(cfg, cmd, sizeof cmd);
  cJSON_AddStringToObject(root, "command_line", cmd);
  cJSON *argv = cJSON_AddArrayToObject(root, "argv");
  cJSON_AddItemToArray(argv, cJSON_CreateString("dsv4kv"));
  for (int i = 0; i < cfg->argc; i++)
    cJSON_AddItemToArray(argv, cJSON_CreateString(cfg->argv[i]));
  sim_threads t = sim_threads_of(cfg);
  cJSON *th = cJSON_AddObjectToObject(root, "threads");
  cJSON_AddNumberToObject(th, "requested", t.requested);
  cJSON_AddNumberToObject(th, "large_calls", t.large_calls);
  cJSON_AddNumberToObject(th, "small_calls", t.small_calls);
  cJSON_AddNumberToObject(th, "processors", t.processors);
  if (t.wait_policy)
    cJSON_AddStringToObject(th, "omp_wait_policy", t.wait_policy);
  else
    cJSON_AddNullToObject(th, "omp_wait_policy");
}

static void json_model(cJSON *root, const sim_model *m) {
  cJSON *o = cJSON_AddObjectToObject(root, "model");
  cJSON_AddStringToObject(o, "name", m->name);
  cJSON_AddNumberToObject(o, "layers", sim_model_layers(m));
  cJSON_AddNumberToObject(o, "mtp_layers_not_counted", m->mtp_layers);
  cJSON_AddStringToObject(o, "source", m->source);
  cJSON *kinds = cJSON_AddArrayToObject(o, "kinds");
  for (int i = 0; i < m->num_kinds; i++) {
    const sim_layer_kind *k = &m->kinds[i];
    cJSON *x = cJSON_CreateObject();
    cJSON_AddStringToObject(x, "kind", k->label);
    cJSON_AddNumberToObject(x, "compress_ratio", k->compress_ratio);
    cJSON_AddNumberToObject(x, "topk", k->topk);
    cJSON_AddBoolToObject(x, "indexer", k->has_indexer);
    cJSON_AddNumberToObject(x, "layers", k->num_layers);
    cJSON_AddItemToArray(kinds, x);
  }
}

static void add_rms(cJSON *o, const char *key, const sim_ctx *c, const char *cache) {
  sim_err_row er[3];
  sim_err_rows(c, er);
  for (int i = 0; i < 3; i++)
    if (!strcmp(er[i].cache, cache) && er[i].st.rows) {
      cJSON_AddNumberToObject(o, key, sim_errstat_rel_rms(&er[i].st));
      return;
    }
  cJSON_AddNullToObject(o, key);
}

static cJSON *compare_json(const sim_ctx *c) {
  cJSON *o = cJSON_CreateObject();
  cJSON_AddStringToObject(o, "format", sim_format_name(c->cfg.format));
  cJSON_AddStringToObject(o, "indexer_format", sim_format_name(c->cfg.indexer_format));
  cJSON_AddNumberToObject(o, "bytes_per_token", c->msize.total);
  cJSON_AddNumberToObject(o, "gib_per_million_tokens", sim_gib_per_mtok(c->msize.total));
  cJSON_AddNumberToObject(o, "pages", c->num_pages);
  cJSON_AddNumberToObject(o, "preemptions", (double)c->sched.preemptions);
  if (c->ran)
    cJSON_AddNumberToObject(o, "ttft_p99_s", c->lat.ttft_s.p99);
  else
    cJSON_AddNullToObject(o, "ttft_p99_s");
  add_rms(o, "compressed_rel_rms", c, "compressed");
  add_rms(o, "indexer_rel_rms", c, "indexer");
  cJSON_AddBoolToObject(o, "passed", c->ran && c->ok);
  return o;
}

static cJSON *build(const sim_ctx *const *runs, int n) {
  cJSON *root = cJSON_CreateObject();
  json_meta(root, &runs[0]->cfg);
  json_model(root, runs[0]->model);
  int all = 1;
  for (int i = 0; i < n; i++)
    all &= runs[i]->ran && runs[i]->ok;
  cJSON_AddBoolToObject(root, "passed", all);
  cJSON *arr = cJSON_AddArrayToObject(root, "runs");
  cJSON *cmp = cJSON_AddArrayToObject(root, "comparison");
  for (int i = 0; i < n; i++) {
    cJSON_AddItemToArray(arr, sim_report_json_run(runs[i]));
    cJSON_AddItemToArray(cmp, compare_json(runs[i]));
  }
  return root;
}

int sim_report_json(FILE *f, const char *name, const sim_ctx *const *runs, int n) {
  cJSON *root = build(runs, n);
  char *text = root ? cJSON_Print(root) : NULL;
  int rc = -1;
  if (text)
    rc = (fputs(text, f) < 0 || fputc('\n', f) == EOF || fflush(f)) ? -1 : 0;
  if (rc)
    fprintf(stderr, "dsv4kv run: cannot write the JSON report to %s\n", name);
  cJSON_free(text);
  cJSON_Delete(root);
  return rc;
}
