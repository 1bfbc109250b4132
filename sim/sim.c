/* One run of one format: load the workload, size and allocate the caches,
 * run the steps.  The data flows one way: options.c (the config) and the
 * workload (workload.c, trace.c) -> sched.c (batching) -> step.c (one step:
 * step_ops.c calls the library, step_check.c and check.c verify) ->
 * timeline.c (series, latency) -> report*.c (output).  Only this file and
 * run_all.c (the runs of a --format list, the reports, the plot) call across
 * the stages. */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctx.h"
#include "progress.h"
#include "report.h"
#include "rng.h"
#include "run.h"
#include "trace.h"
#include "device.h"

/* Pool size when --num-blocks is not given: twice the largest request, and at
 * least this many tokens, but no more than the whole workload. */
#define SIM_AUTO_POOL_MIN_TOKENS 65536
/* Rows of each key table (power of two). */
#define SIM_KEY_TABLE_ROWS 1024
#define SIM_RMS_EPS 1e-6f

static int load_workload(sim_ctx *c) {
  char err[1024];
  if (c->cfg.trace_path) {
    FILE *notes = c->cfg.quiet || c->run_index > 0 ? NULL : stderr; /* once, not per format */
    int rc = sim_trace_load(c->cfg.trace_path, c->cfg.max_requests, c->cfg.skip_bad, notes,
                            &c->work, err, sizeof err);
    if (rc) {
      fprintf(stderr, "dsv4kv run: %s\n", err);
      if (rc == -2)
        fprintf(stderr, "dsv4kv run: use --skip-bad to skip malformed lines and go on\n");
      return -1;
    }
    return 0;
  }
  int64_t n = c->cfg.max_requests > 0 ? c->cfg.max_requests : SIM_DEFAULT_REQUESTS;
  if (sim_workload_synthetic(&c->work, n, c->cfg.seed)) {
    fprintf(stderr, "dsv4kv run: out of memory synthesising %lld requests\n", (long long)n);
    return -1;
  }
  return 0;
}

/* The pool's size from --kv-cache-memory: the pages whose whole-model bytes
 * fit.  0, or -1 (message) when not one page fits. */
static int budget_pages(sim_ctx *c, int64_t *pages) {
  int64_t page = c->msize.page_total, n = c->cfg.kv_cache_bytes / page;
  if (n < 1) {
    fprintf(stderr,
            "dsv4kv run: --kv-cache-memory %s holds no page: one page of %d tokens takes %.2f "
            "MiB in the caches of all %d layers of %s (%s records); give at least %.2f MiB%s\n",
            c->cfg.kv_cache_arg, c->bs, (double)page / 1048576.0, sim_model_layers(c->model),
            c->model->name, sim_format_name(c->cfg.format), (double)page / 1048576.0,
            strchr("0123456789.", c->cfg.kv_cache_arg[strlen(c->cfg.kv_cache_arg) - 1])
                ? " (a number without a unit is bytes)" : "");
    return -1;
  }
  if (n > SIM_MAX_POOL_PAGES) /* as --num-blocks' limit; said, not silent */
    fprintf(stderr, "dsv4kv run: --kv-cache-memory %s holds %lld pages of %d tokens; the pool takes at most %d\n",
            c->cfg.kv_cache_arg, (long long)n, c->bs, SIM_MAX_POOL_PAGES);
  *pages = n > SIM_MAX_POOL_PAGES ? SIM_MAX_POOL_PAGES : n;
  return 0;
}

/* "127.2 MiB" or "1.50 GiB". */
static void size_text(double bytes, char *out, size_t n) {
  if (bytes < 1073741824.0)
    snprintf(out, n, "%.1f MiB", bytes / 1048576.0);
  else
    snprintf(out, n, "%.2f GiB", bytes / 1073741824.0);
}

/* The request that needs the most pages does not fit the configured pool. */
static void too_small(const sim_ctx *c, int64_t worst, int64_t max_pages) {
  const sim_request_spec *r = &c->work.reqs[worst];
  char at[640] = "", fix[320], need[32], page[32];
  if (r->line > 0)
    snprintf(at, sizeof at, " (%s line %lld)", c->work.name, (long long)r->line);
  if (c->cfg.kv_cache_bytes > 0) {
    size_text((double)max_pages * (double)c->msize.page_total, need, sizeof need);
    size_text((double)c->msize.page_total, page, sizeof page);
    snprintf(fix, sizeof fix,
             "--kv-cache-memory %s holds only %d (%s each, all %d layers).\nRaise "
             "--kv-cache-memory to at least %s (%s, %s records)",
             c->cfg.kv_cache_arg, c->num_pages, page, sim_model_layers(c->model), need,
             c->model->name, sim_format_name(c->cfg.format));
  } else {
    snprintf(fix, sizeof fix, "--num-blocks is %d.\nRaise --num-blocks to at least %lld (pages of "
             "--block-size %d tokens; a larger block size needs fewer)", c->num_pages, (long long)max_pages,
             c->bs);
  }
  fprintf(stderr,
          "dsv4kv run: the page pool is too small for one request: request %lld%s needs %lld "
          "pages of %d tokens (%d prompt + %d output tokens) but %s, or leave the request out.\n",
          (long long)worst, at, (long long)max_pages, c->bs, r->input_len, r->output_len, fix);
}

/* Picks the pool's size (--num-blocks, --kv-cache-memory, or twice the
 * largest request), checks it against the largest request, and how many of
 * its pages need memory: never more than every request's pages together (a
 * pool that large never runs out, so more pages could never be handed out). */
static int size_pool(sim_ctx *c) {
  int32_t bs = c->bs;
  int64_t max_pages = 0, total_pages = 0, worst = 0, n;
  for (int64_t i = 0; i < c->work.n; i++) {
    int64_t p = sim_sched_pages_needed(&c->work.reqs[i], bs);
    total_pages += p;
    if (p > max_pages) {
      max_pages = p;
      worst = i;
    }
  }
  if (c->cfg.kv_cache_bytes > 0) {
    c->pool_from = "--kv-cache-memory";
    if (budget_pages(c, &n))
      return -1;
  } else if (c->cfg.num_blocks > 0) {
    c->pool_from = "--num-blocks";
    n = c->cfg.num_blocks;
  } else {
    c->pool_from = "auto";
    int64_t floor_pages = (SIM_AUTO_POOL_MIN_TOKENS + bs - 1) / bs;
    n = 2 * max_pages > floor_pages ? 2 * max_pages : floor_pages;
    if (n > total_pages)
      n = total_pages;
    if (n < max_pages)
      n = max_pages;
    if (n > INT32_MAX / 2)
      n = INT32_MAX / 2;
  }
  c->num_pages = (int32_t)n;
  if (max_pages > n) {
    too_small(c, worst, max_pages);
    return -1;
  }
  c->alloc_pages = (int32_t)(total_pages < n ? (total_pages > 0 ? total_pages : 1) : n);
  return 0;
}

static void *alloc_cache(int64_t pages, int64_t page_bytes, int64_t *total) {
  *total += pages * page_bytes;
  if (page_bytes == 0)
    return NULL;
  return calloc((size_t)pages, (size_t)page_bytes);
}

static int log2_exact(int32_t n) {
  if (n <= 0 || (n & (n - 1)))
    return -1;
  int s = 0;
  while ((1 << s) < n)
    s++;
  return s;
}

static int setup_caches(sim_ctx *c) {
  int64_t total = 0;
  c->bs_shift = log2_exact(c->bs);
  const sim_model *m = c->model;
  c->nkinds = m->num_kinds;
  for (int i = 0; i < m->num_kinds; i++) {
    sim_kind_state *ks = &c->kinds[i];
    ks->k = &m->kinds[i];
    ks->ratio = ks->k->compress_ratio;
    ks->cbs = ks->ratio ? c->bs / ks->ratio : 0;
    ks->cbs_shift = log2_exact(ks->cbs);
    ks->swa_desc = (dsv4kv_cache_desc){DSV4KV_RECORD_V4, DSV4KV_FP8_OCP, c->bs, 0, 0};
    ks->swa_page_bytes = (int64_t)c->bs * dsv4kv_record_bytes(DSV4KV_RECORD_V4);
    ks->swa = alloc_cache(c->alloc_pages, ks->swa_page_bytes, &total);
    if (!ks->swa)
      goto oom;
    if (ks->ratio) {
      ks->comp_desc = (dsv4kv_cache_desc){c->cfg.format, DSV4KV_FP8_OCP, ks->cbs, 0, 0};
      ks->comp_page_bytes = (int64_t)ks->cbs * dsv4kv_record_bytes(c->cfg.format);
      ks->comp = alloc_cache(c->alloc_pages, ks->comp_page_bytes, &total);
      if (!ks->comp)
        goto oom;
    }
    if (ks->k->has_indexer) {
      ks->idx_desc = (dsv4kv_cache_desc){c->cfg.indexer_format, DSV4KV_FP8_OCP, ks->cbs, 0, 0};
      ks->idx_page_bytes = (int64_t)ks->cbs * dsv4kv_record_bytes(c->cfg.indexer_format);
      ks->idx = alloc_cache(c->alloc_pages, ks->idx_page_bytes, &total);
      if (!ks->idx)
        goto oom;
    }
    uint64_t s = c->cfg.seed;
    if (sim_keytable_init(&ks->tok_keys, SIM_KEY_TABLE_ROWS, 512, s, 0x100u + (uint64_t)i) ||
        sim_keytable_init(&ks->comp_keys, SIM_KEY_TABLE_ROWS, 512, s, 0x200u + (uint64_t)i) ||
        sim_keytable_init(&ks->idx_keys, SIM_KEY_TABLE_ROWS, 128, s, 0x300u + (uint64_t)i))
      goto oom;
  }
  /* indexer RoPE table (theta^(-2j/64), 32 frequencies) and RMSNorm weight */
  int64_t rows = 1;
  for (int64_t i = 0; i < c->work.n; i++) {
    int64_t n = (int64_t)c->work.reqs[i].input_len + c->work.reqs[i].output_len + 1;
    if (n > rows)
      rows = n;
  }
  c->cos_sin_rows = rows;
  c->cos_sin = malloc((size_t)rows * 64 * sizeof(float));
  if (!c->cos_sin)
    goto oom;
  for (int j = 0; j < 32; j++) {
    double inv = pow((double)m->rope_theta, -2.0 * j / 64.0);
    for (int64_t p = 0; p < rows; p++) {
      c->cos_sin[p * 64 + j] = (float)cos((double)p * inv);
      c->cos_sin[p * 64 + 32 + j] = (float)sin((double)p * inv);
    }
  }
  /* --device cuda: the caches' device copies, and the RoPE table's (constant) */
  if (sim_dev_cache(c->cos_sin, (size_t)c->cos_sin_rows * 64 * sizeof(float)))
    return -1;
  for (int i = 0; i < c->nkinds; i++) {
    sim_kind_state *ks = &c->kinds[i];
    if (sim_dev_cache(ks->swa, (size_t)(c->alloc_pages * ks->swa_page_bytes)) ||
        sim_dev_cache(ks->comp, (size_t)(c->alloc_pages * ks->comp_page_bytes)) ||
        sim_dev_cache(ks->idx, (size_t)(c->alloc_pages * ks->idx_page_bytes)))
      return -1;
  }
  sim_rng rng = sim_rng_make(sim_hash2(c->cfg.seed, 0x726d73u));
  for (int d = 0; d < 128; d++)
    c->rms_weight[d] = (float)(1.0 + 0.1 * sim_rng_normal(&rng));
  c->rms_eps = SIM_RMS_EPS;
  c->fp8_max = 448.0f;
  return 0;
oom:
  fprintf(stderr,
          "dsv4kv run: cannot allocate the caches (%.1f MiB for %d pages of %d tokens); lower "
          "--num-blocks or --max-requests\n",
          (double)total / (1 << 20), c->alloc_pages, c->bs);
  return -1;
}

/* The caches and scratch: the run's memory, freed as soon as it ends (the
 * figures of the report stay). */
static void free_caches(sim_ctx *c) {
  for (int i = 0; i < SIM_MAX_KINDS; i++) {
    sim_kind_state *ks = &c->kinds[i];
    free(ks->swa);
    free(ks->comp);
    free(ks->idx);
    if (i == 0)
      sim_dev_drop_caches();
    ks->swa = ks->comp = ks->idx = NULL;
    sim_keytable_free(&ks->tok_keys);
    sim_keytable_free(&ks->comp_keys);
    sim_keytable_free(&ks->idx_keys);
  }
  free(c->cos_sin);
  c->cos_sin = NULL;
  for (size_t i = 0; i < sizeof c->b_plan / sizeof c->b_plan[0]; i++)
    sim_buf_free(&c->b_plan[i]);
  for (size_t i = 0; i < sizeof c->b_scratch / sizeof c->b_scratch[0]; i++)
    sim_buf_free(&c->b_scratch[i]);
}

void sim_ctx_free(sim_ctx *c) {
  if (!c)
    return;
  free_caches(c);
  sim_sched_free(&c->sched);
  sim_pool_free(&c->pool);
  sim_workload_free(&c->work);
  free(c);
}

/* Progress goes to stderr (the report owns stdout): --progress auto draws a
 * bar when stderr is a terminal and prints periodic lines otherwise. */
static sim_progress_mode progress_mode(const sim_config *cfg) {
  if (cfg->quiet)
    return SIM_PROGRESS_OFF;
  if (cfg->progress >= 0)
    return (sim_progress_mode)cfg->progress;
  return sim_progress_auto(stderr);
}

static sim_point point_of(const sim_ctx *c, const sim_batch *b) {
  const sim_sched *s = &c->sched;
  sim_point p = {s->steps - 1,      s->clock_ms / 1000.0, c->pool.used,
                 s->num_running,    s->qlen,              b->num_tokens,
                 sim_tokens_processed(c)};
  return p;
}

/* Work done, for the progress display's ETA: tokens computed plus prompt
 * tokens taken from other requests' pages (never computed by this one). */
static int64_t work_done(const sim_ctx *c) {
  return sim_tokens_processed(c) + c->sched.shared_tokens;
}

/* The steps.  Returns NULL, or why the run stopped early (in c->stop_msg). */
static const char *run_steps(sim_ctx *c) {
  sim_progress prog;
  char label[64] = "";
  if (c->run_count > 1)
    snprintf(label, sizeof label, "%s %d/%d", sim_format_name(c->cfg.format), c->run_index + 1,
             c->run_count);
  sim_workload_totals wt = sim_workload_sum(&c->work);
  sim_progress_start(&prog, stderr, progress_mode(&c->cfg), c->work.n,
                     wt.input_tokens + wt.output_tokens, label);
  sim_series_init(&c->series);
  double t0 = sim_now();
  sim_batch batch;
  memset(&batch, 0, sizeof batch);
  const char *stop = NULL;
  for (;;) {
    int more = sim_sched_next(&c->sched, &batch, c->stop_msg, sizeof c->stop_msg);
    if (more == 0)
      break;
    if (more < 0) {
      c->out_of_memory = more == -2;
      stop = c->stop_msg;
      break;
    }
    c->step = c->sched.steps;
    if (sim_step_run(c, &batch)) {
      snprintf(c->stop_msg, sizeof c->stop_msg, "%s",
               c->fatal_msg[0] ? c->fatal_msg : "a library call failed");
      stop = c->stop_msg;
      break;
    }
    sim_sched_commit(&c->sched, &batch);
    sim_point pt = point_of(c, &batch);
    sim_series_add(&c->series, &pt);
    sim_progress_update(&prog, c->sched.done, c->sched.steps, sim_tokens_processed(c),
                        work_done(c), c->sched.num_running, c->sched.qlen);
  }
  sim_series_finish(&c->series);
  sim_batch_free(&batch);
  c->wall_seconds = sim_now() - t0;
  sim_progress_end(&prog);
  return stop;
}

sim_ctx *sim_run_one(const sim_config *cfg, int index, int count) {
  sim_ctx *c = calloc(1, sizeof *c);
  if (!c) {
    fprintf(stderr, "dsv4kv run: out of memory\n");
    return NULL;
  }
  c->cfg = *cfg;
  c->model = cfg->model;
  c->bs = cfg->block_size;
  c->run_index = index;
  c->run_count = count;
  c->rc = SIM_EXIT_CANNOT_RUN;
  sim_model_size_of(c->model, cfg->format, cfg->indexer_format, c->bs, &c->msize);
  if (load_workload(c) || size_pool(c) || setup_caches(c))
    return c;
  int pool_rc = sim_pool_init(&c->pool, c->alloc_pages);
  c->pool.unbacked = c->num_pages - c->alloc_pages; /* before the scheduler's watermark */
  if (pool_rc || sim_sched_init(&c->sched, &c->work, &c->pool, c->bs, cfg->max_batched_tokens,
                                cfg->max_num_seqs)) {
    fprintf(stderr, "dsv4kv run: out of memory\n");
    return c;
  }
  c->ran = 1;
  const char *stop = run_steps(c);
  free_caches(c);
  if (sim_latency_of(&c->sched, &c->lat))
    fprintf(stderr, "dsv4kv run: out of memory computing the latency percentiles\n");
  c->ok = !stop && !c->fatal && c->lib_skipped == 0 && sim_verdict_failures(&c->verdict) == 0 &&
          c->sched.done == c->work.n;
  if (stop)
    fprintf(stderr, "dsv4kv run: stopped at step %lld: %s\n", (long long)c->step, stop);
  /* out of memory is the machine's limit, not a wrong byte: the same status
   * as a run that cannot start */
  c->rc = c->ok ? SIM_EXIT_OK : c->out_of_memory ? SIM_EXIT_CANNOT_RUN : SIM_EXIT_VERIFY_FAILED;
  return c;
}
