/* The report of a run: text on stdout, the same figures as JSON (--json).
 * With --json - the JSON takes stdout and the text goes to stderr (sim.c
 * picks the streams, ctx.h text_file / json_file).
 *
 *   report.c        the figures both forms print (below);
 *   report_text.c   the text report and the --quiet summary;
 *   report_model.c  its whole-model, latency and format-comparison sections;
 *   report_json.c   the JSON report (report_json_run.c: one run's object).
 *
 * The end of the simulator's data flow: it reads the finished sim_ctx and
 * calls nothing but the figures, the statistics helpers and the formats'
 * names (sim_format_name). */
#ifndef DSV4KV_SIM_REPORT_H
#define DSV4KV_SIM_REPORT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "ctx.h"

/* ---- the two forms ---- */

void sim_report_text(FILE *f, const sim_ctx *c, int ok, const char *stop);
/* One line on f (and the failure messages on stderr when !ok). */
void sim_report_quiet(FILE *f, const sim_ctx *c, int ok);
/* Sections of the text report (report_model.c): the whole model's cache
 * bytes, the latency percentiles; and the table comparing the runs of a
 * --format list. */
void sim_report_model(FILE *f, const sim_ctx *c);
void sim_report_latency(FILE *f, const sim_ctx *c);
void sim_report_compare(FILE *f, const sim_ctx *const *runs, int n);

/* The JSON report of runs[0..n-1] (the formats of one command) to f, named
 * `name` in messages.  0, or -1 (message on stderr).  Its layout is
 * SIM_JSON_SCHEMA (report_json.c). */
#define SIM_JSON_SCHEMA 2
int sim_report_json(FILE *f, const char *name, const sim_ctx *const *runs, int n);
/* One run's object (report_json_run.c). */
struct cJSON;
struct cJSON *sim_report_json_run(const sim_ctx *c);

/* ---- figures (report.c) ---- */

const char *sim_op_name(sim_op op);
/* One line: what an op's byte count covers, or NULL for the simulator's own
 * work (no bytes counted; "-" in the GB/s column). */
const char *sim_op_bytes_doc(sim_op op);
/* The simulator's own work (key synthesis, verification), not the library's. */
int sim_is_sim_op(int op);

const char *sim_source_name(sim_source s);
const char *sim_version_string(void);
double sim_rate(double x, double seconds); /* x / seconds, 0 without time */

/* One cache of one layer kind: record size per entry and per token. */
typedef struct {
  const char *layer, *cache;
  dsv4kv_record rec;
  int32_t tokens_per_entry; /* 1, or the layer's compress ratio */
  int32_t bytes_per_entry, bf16_bytes_per_entry;
} sim_cache_size;

static inline double sim_cs_bytes_per_token(const sim_cache_size *s) {
  return (double)s->bytes_per_entry / s->tokens_per_entry;
}

static inline double sim_cs_bf16_per_token(const sim_cache_size *s) {
  return (double)s->bf16_bytes_per_entry / s->tokens_per_entry;
}

/* The caches of layer kind ks (SWA, then compressed and indexer when it has
 * them) into out[3]; returns how many. */
int sim_kind_caches(const sim_ctx *c, const sim_kind_state *ks, sim_cache_size *out);
/* Bytes per token of one layer of a kind, in the caches and in bf16. */
void sim_kind_bytes(const sim_ctx *c, const sim_kind_state *ks, double *q, double *bf);
/* Bytes of one page in all the caches of the run. */
double sim_page_bytes(const sim_ctx *c);

/* Error statistics of one (cache, format), summed over kinds. */
typedef struct {
  const char *cache;
  dsv4kv_record rec;
  sim_errstat st;
} sim_err_row;

/* The rows (swa, compressed, indexer) into rows[3]; returns 3. */
int sim_err_rows(const sim_ctx *c, sim_err_row *rows);

/* Seconds spent inside library calls (the simulator's own work left out). */
double sim_library_seconds(const sim_ctx *c);
int64_t sim_tokens_processed(const sim_ctx *c);

/* The page pool limited the run: requests were preempted (and recomputed). */
typedef struct {
  int limited;
  int64_t preemptions, recomputed;
  double recomputed_pct; /* of all prefill tokens computed */
  int32_t pool_pages;
  int64_t all_at_once; /* pages every request would hold at once       */
  int64_t suggest;     /* a --num-blocks to try: 2x, at most all_at_once */
} sim_pool_pressure;

sim_pool_pressure sim_pressure(const sim_ctx *c);

/* The verification criteria, one line, for the formats of this run. */
void sim_criteria(const sim_ctx *c, char *out, size_t n);

#endif
