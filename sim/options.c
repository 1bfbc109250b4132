/* The run's options: defaults, their checks, and the command-line spelling
 * of the record formats (see sim.h).  The bottom of the simulator's data
 * flow: it calls nothing else in sim/. */
#include <stdio.h>
#include <string.h>

#include "sim.h"

void sim_config_defaults(sim_config *cfg) {
  memset(cfg, 0, sizeof *cfg);
  cfg->model = sim_model_default();
  cfg->format = DSV4KV_RECORD_V4;
  cfg->indexer_format = DSV4KV_RECORD_INDEXER_FP8;
  cfg->block_size = SIM_DEFAULT_BLOCK_SIZE;
  cfg->max_batched_tokens = SIM_DEFAULT_MAX_BATCHED_TOKENS;
  cfg->max_num_seqs = SIM_DEFAULT_MAX_NUM_SEQS;
  cfg->seed = SIM_DEFAULT_SEED;
  cfg->threads = 0; /* all cores for large calls (measured faster on an idle machine) */
  cfg->progress = -1;
}

int sim_config_check(const sim_config *cfg) {
  const sim_model *m = cfg->model;
  if (cfg->block_size <= 0) {
    fprintf(stderr, "dsv4kv run: --block-size must be positive\n");
    return -1;
  }
  for (int i = 0; i < m->num_kinds; i++) {
    int32_t r = m->kinds[i].compress_ratio;
    if (r > 0 && cfg->block_size % r != 0) {
      fprintf(stderr,
              "dsv4kv run: --block-size %d is not a multiple of compress ratio %d (%s layers): "
              "a page must hold whole compressed entries (use a multiple of 128, e.g. 256)\n",
              cfg->block_size, r, m->kinds[i].label);
      return -1;
    }
  }
  if (cfg->max_batched_tokens <= 0 || cfg->max_num_seqs <= 0) {
    fprintf(stderr, "dsv4kv run: --max-batched-tokens and the sequence limit must be positive\n");
    return -1;
  }
  return 0;
}

int sim_json_to_stdout(const sim_config *cfg) {
  return cfg->json_path && !strcmp(cfg->json_path, "-");
}

/* The one table of format spellings: --format takes the main-cache records,
 * --indexer-format the indexer records (the library's names are
 * dsv4kv_record_name's "V4" ... "INDEXER_MXFP4"). */
static const struct {
  dsv4kv_record record;
  const char *name;
  int indexer;
} formats[] = {
    {DSV4KV_RECORD_V4, "v4", 0},
    {DSV4KV_RECORD_MXFP8, "mxfp8", 0},
    {DSV4KV_RECORD_NVFP4, "nvfp4", 0},
    {DSV4KV_RECORD_INDEXER_FP8, "fp8", 1},
    {DSV4KV_RECORD_INDEXER_MXFP4, "mxfp4", 1},
};

const char *sim_format_name(dsv4kv_record r) {
  for (size_t i = 0; i < sizeof formats / sizeof formats[0]; i++)
    if (formats[i].record == r)
      return formats[i].name;
  return "?";
}

int sim_format_parse(const char *name, int indexer, dsv4kv_record *out) {
  for (size_t i = 0; i < sizeof formats / sizeof formats[0]; i++)
    if (formats[i].indexer == !!indexer && !strcmp(formats[i].name, name)) {
      *out = formats[i].record;
      return 0;
    }
  return -1;
}
