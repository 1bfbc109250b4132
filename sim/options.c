/* The run's options: defaults, their checks, the command-line spelling of
 * the record formats and of memory sizes (see sim.h).  The bottom of the
 * simulator's data flow: it calls nothing else in sim/ but the model presets'
 * figures (model.c). */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "sim.h"

/* --threads' default: 0, the library's own choice.  Measured first with
 * OpenMP teams (default workload, 200 requests, 2 cores, idle / with
 * `yes > /dev/null` beside it): libgomp's default wait 5.4 / 13.3 s,
 * OMP_WAIT_POLICY=passive 6.0 / 6.9 s, --threads 1 8.1 / 7.2 s: spinning
 * team threads collapsed beside a busy process, so the default was one
 * thread unless the process started passive.  The CPU backend now runs its
 * own pool (src/cpu/pool.c: workers watch 50 us for the next call, then
 * sleep; small calls stay on the calling thread): 3.75 / 4.57 s against
 * --threads 1's 4.41 / 4.27 s with its first version (issue 12, this
 * workplace's 2-core Xeon), whatever OMP_WAIT_POLICY says. */
int sim_default_threads(void) { return 0; }

void sim_config_defaults(sim_config *cfg) {
  memset(cfg, 0, sizeof *cfg);
  cfg->model = sim_model_default();
  cfg->format = DSV4KV_RECORD_V4;
  cfg->indexer_format = DSV4KV_RECORD_INDEXER_FP8;
  cfg->block_size = SIM_DEFAULT_BLOCK_SIZE;
  cfg->max_batched_tokens = SIM_DEFAULT_MAX_BATCHED_TOKENS;
  cfg->max_num_seqs = SIM_DEFAULT_MAX_NUM_SEQS;
  cfg->seed = SIM_DEFAULT_SEED;
  cfg->threads = sim_default_threads();
  cfg->progress = -1;
}

/* --block-size: a page holds block_size tokens of every cache of every
 * layer, so block_size / ratio whole compressed entries of each compressed
 * cache (an entry covers `ratio` consecutive tokens and cannot straddle two
 * pages: one block table maps positions to pages for all caches).  Hence a
 * multiple of every ratio, i.e. of their least common multiple (128 for the
 * DeepSeek-V4 presets); powers of two are not required. */
static int check_block_size(const sim_config *cfg) {
  const sim_model *m = cfg->model;
  int32_t q = sim_model_block_quantum(m);
  if (cfg->block_size > 0 && cfg->block_size % q == 0)
    return 0;
  char ratios[128] = "";
  size_t n = 0;
  for (int i = 0; i < m->num_kinds && n < sizeof ratios; i++)
    if (m->kinds[i].compress_ratio > 0)
      n += (size_t)snprintf(ratios + n, sizeof ratios - n, "%s%d (%s)", n ? ", " : "",
                            m->kinds[i].compress_ratio, m->kinds[i].label);
  fprintf(stderr,
          "dsv4kv run: --block-size %d: for --model %s it must be a positive multiple of %d "
          "(e.g. %d or %d), the least common multiple of its compress ratios %s: a page holds "
          "block_size tokens of every layer's caches, hence block_size / ratio whole compressed "
          "entries of each compressed cache\n",
          cfg->block_size, m->name, q, q, 2 * q, ratios);
  return -1;
}

int sim_config_check(const sim_config *cfg) {
  if (check_block_size(cfg))
    return -1;
  if (cfg->max_batched_tokens <= 0 || cfg->max_num_seqs <= 0) {
    fprintf(stderr, "dsv4kv run: --max-batched-tokens and the sequence limit must be positive\n");
    return -1;
  }
  if (cfg->kv_cache_bytes > 0 && cfg->num_blocks > 0) {
    fprintf(stderr,
            "dsv4kv run: --kv-cache-memory and --num-blocks both set the page pool's size; give "
            "one of them\n");
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

int sim_format_list_parse(const char *list, dsv4kv_record *out, char *err, size_t errlen) {
  if (!strcmp(list, "all")) {
    out[0] = DSV4KV_RECORD_V4, out[1] = DSV4KV_RECORD_MXFP8, out[2] = DSV4KV_RECORD_NVFP4;
    return 3;
  }
  int n = 0;
  const char *p = list;
  for (;;) {
    const char *end = strchr(p, ',');
    size_t len = end ? (size_t)(end - p) : strlen(p);
    char name[16];
    dsv4kv_record r;
    if (len == 0 || len >= sizeof name) {
      snprintf(err, errlen, "--format: an empty or overlong name in '%s'", list);
      return -1;
    }
    memcpy(name, p, len);
    name[len] = 0;
    if (sim_format_parse(name, 0, &r)) {
      snprintf(err, errlen, "--format: '%s' is not a format: v4, mxfp8 or nvfp4 (or a list of "
               "them, e.g. v4,mxfp8,nvfp4, or all)", name);
      return -1;
    }
    for (int i = 0; i < n; i++)
      if (out[i] == r) {
        snprintf(err, errlen, "--format: '%s' is listed twice in '%s'", name, list);
        return -1;
      }
    out[n++] = r; /* at most 3 distinct names exist, so n stays <= SIM_MAX_FORMATS */
    if (!end)
      return n;
    p = end + 1;
  }
}

dsv4kv_record sim_default_indexer(dsv4kv_record format) {
  return format == DSV4KV_RECORD_NVFP4 ? DSV4KV_RECORD_INDEXER_MXFP4 : DSV4KV_RECORD_INDEXER_FP8;
}

/* The unit's factor (case-insensitive), or 0 for no unit of this list. */
static double size_unit(const char *u) {
  static const struct {
    const char *name;
    double factor;
  } units[] = {{"", 1},         {"b", 1},         {"k", 0x1p10},    {"kib", 0x1p10},
               {"kb", 1e3},     {"m", 0x1p20},    {"mib", 0x1p20},  {"mb", 1e6},
               {"g", 0x1p30},   {"gib", 0x1p30},  {"gb", 1e9},      {"t", 0x1p40},
               {"tib", 0x1p40}, {"tb", 1e12}};
  char low[8] = "";
  size_t n = strlen(u);
  if (n >= sizeof low)
    return 0;
  for (size_t i = 0; i < n && i < sizeof low - 1; i++)
    low[i] = (char)tolower((unsigned char)u[i]);
  for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
    if (!strcmp(units[i].name, low))
      return units[i].factor;
  return 0;
}

int sim_parse_size(const char *s, int64_t *bytes) {
  if (!s || !(isdigit((unsigned char)s[0]) || s[0] == '.') || strpbrk(s, "xX"))
    return -1; /* no sign, no leading space, no "inf" / "nan", no hex float */
  char *end = NULL;
  errno = 0;
  double v = strtod(s, &end);
  if (errno || end == s || !isfinite(v))
    return -1;
  if (*end == ' ')
    end++;
  double f = size_unit(end), b = v * f;
  if (f == 0 || !(b >= 1) || b > 0x1p60)
    return -1;
  *bytes = (int64_t)b;
  return 0;
}
