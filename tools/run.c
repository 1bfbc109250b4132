/* dsv4kv run: replay a serving workload through the K caches (issue 3).
 * Option parsing only; the simulator is sim/ (sim.h). */
#define _GNU_SOURCE

#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "sim.h"

/* Column of the option descriptions in the help text. */
#define HELP_INDENT 26

static void usage_options(FILE *f) {
  fprintf(f,
          "  --format FMT[,FMT...]   record of the compressed caches: v4 (584 B), mxfp8 (528 B)\n"
          "                          or nvfp4 (288 B); default v4.  A list (v4,mxfp8,nvfp4, or\n"
          "                          all) runs the workload once per format and compares them.\n"
          "                          SWA caches always use v4\n"
          "  --indexer-format FMT    indexer cache record: fp8 (132 B) or mxfp4 (68 B); default\n"
          "                          fp8, mxfp4 with --format nvfp4\n"
          "  --block-size N          tokens per page (default %d): a multiple of the least\n"
          "                          common multiple of the model's compress ratios (128 for\n"
          "                          the DeepSeek-V4 presets), so that a page holds whole\n"
          "                          compressed entries of every layer kind (N/4 and N/128)\n"
          "  --kv-cache-memory SIZE  size the page pool from a memory budget for the whole\n"
          "                          model's caches (all layers, main + indexer), e.g. 40GiB,\n"
          "                          512MiB, 16GB (K/M/G/T and KiB/MiB/GiB/TiB powers of 1024,\n"
          "                          KB/MB/GB/TB of 1000, no unit: bytes): the pool holds as\n"
          "                          many pages as fit, per format\n"
          "  --num-blocks N          pages in the pool (default: twice the largest request, at\n"
          "                          least 64K tokens, at most the whole workload).  A request\n"
          "                          that cannot fit even in an empty pool is an error\n"
          "  --max-batched-tokens N  token budget of one step: decode tokens first, then\n"
          "                          prefill chunks (default %d)\n"
          "  --max-num-seqs N        running requests at most (default %d)\n"
          "  --device DEV            cpu (default) or cuda: the caches in GPU memory, each\n"
          "                          call's other tensors copied there and back around it, op\n"
          "                          times from CUDA events (needs the CUDA backend and a GPU)\n"
          "  --seed N                seed of the synthetic workload, keys and top-k (default %d)\n"
          "  --threads N             CPU threads per library call, 0..1024; 0 (default): the library's\n"
          "                          choice (its own pool for large calls and for short ones\n"
          "                          while a worker is awake, else the calling thread), whatever\n"
          "                          OMP_WAIT_POLICY says\n"
          "  --json FILE             also write the report as JSON to FILE; with FILE '-' the\n"
          "                          JSON goes to stdout and the text report to stderr\n"
          "                          (schema_version %d: fields in sim/report_json.c)\n"
          "  --plot FILE             draw pages in use, running and queued over virtual time\n"
          "                          and bytes per token per format with gnuplot (gnuplot-nox)\n"
          "                          into FILE (.png or .svg); also 'dsv4kv plot JSON -o FILE'\n"
          "  --progress MODE         progress on stderr (the report stays on stdout): auto\n"
          "                          (default: a bar when stderr is a terminal, periodic\n"
          "                          lines otherwise), bar, lines or off\n"
          "  --quiet                 no progress; a one-line summary (formats, requests,\n"
          "                          tokens, pages, verdict) instead of the report, and the\n"
          "                          comparison table of a --format list\n"
          "  --skip-bad              skip malformed trace lines (counted in the report)\n"
          "                          instead of stopping at the first one\n"
          "  --distinct-slots        promise the library that each insert's and indexer\n"
          "                          store's slot mapping names a slot once (true here:\n"
          "                          requests own their pages), as an engine may: CUDA then\n"
          "                          skips resolving duplicate slots; the CPU is unchanged\n"
          "  -h, --help              this text\n",
          SIM_DEFAULT_BLOCK_SIZE, SIM_DEFAULT_MAX_BATCHED_TOKENS, SIM_DEFAULT_MAX_NUM_SEQS,
          SIM_DEFAULT_SEED, 2);
}

static void usage(FILE *f) {
  fprintf(f,
          "usage: dsv4kv run [options]\n"
          "\n"
          "Replays a serving workload through the DeepSeek-V4 attention K caches: continuous\n"
          "batching with chunked prefill over a paged pool, one representative layer of each\n"
          "kind (SWA-only, compress ratio 4 with indexer top-k, compress ratio 128).  Every\n"
          "step inserts the new tokens' keys, builds the sparse-attention indices, gathers\n"
          "what sparse prefill reads, and verifies it all; then prints a report, with the\n"
          "whole model's cache size (every layer of the preset) per format.  Without\n"
          "--trace it runs an embedded synthetic workload whose arrivals and lengths follow\n"
          "the real traces' statistics.\n"
          "\n"
          "options:\n"
          "  --trace FILE            replay a trace: Mooncake JSONL (timestamp, input_length,\n"
          "                          output_length, hash_ids) or Azure LLM-inference CSV\n"
          "                          (TIMESTAMP, ContextTokens, GeneratedTokens); auto-detected.\n"
          "                          A request holds at most 1048576 tokens (the model's context)\n"
          "  --max-requests N        only the first N requests (default: all of a trace; %d\n"
          "                          for the synthetic workload)\n"
          "  --model NAME            model preset (default deepseek-v4-flash):\n",
          SIM_DEFAULT_REQUESTS);
  sim_model_list(f, HELP_INDENT);
  usage_options(f);
  fprintf(f,
          "\n"
          "report: per-op figures are for one layer of each kind; \"whole model\" multiplies\n"
          "by the preset's layer counts.  Compressed and indexer caches hold one entry per\n"
          "compress_ratio tokens; sizes are given per entry and per token.  \"ratio\" is\n"
          "record bytes / bf16 bytes.  \"virtual time\" is the modelled serving clock\n"
          "(arrivals at trace times, a modelled duration per step), not wall time; the\n"
          "queueing delay (arrival to first admission) and time to first token (arrival to\n"
          "the end of the step sampling the first token) are in it.  GB/s counts, per token\n"
          "or entry, the bytes an op reads and writes: inserts the bf16 key and slot read\n"
          "and the record written; gathers the record read and the bf16 row written; index\n"
          "ops the int32 entries they read and write (combine: only the first topk_len +\n"
          "swa_len columns of each row; flashinfer: the full row); block-table lookups are\n"
          "not counted.  \"-\" marks the simulator's own work (key synthesis, verification).\n"
          "Prefix hits are split into pages shared across requests and pages a preempted\n"
          "request finds again on re-admission.\n"
          "\n"
          "exit status: 0 verification passed (every format); 1 verification failed; 2 the\n"
          "run could not start or finish (bad option or trace, pool too small, no backend for\n"
          "the device, unwritable --json or --plot file, no gnuplot for --plot, the simulator\n"
          "out of memory: verdict INCOMPLETE).\n");
}

static int parse_num(const char *opt, const char *s, long long lo, long long hi, long long *out) {
  char *end = NULL;
  errno = 0;
  long long v = strtoll(s, &end, 10);
  /* (strtoll skips leading white space; refused, as trailing space is) */
  if (errno || !end || end == s || *end || isspace((unsigned char)*s) || v < lo || v > hi) {
    fprintf(stderr, "dsv4kv run: %s expects an integer in [%lld, %lld], got '%s'\n", opt, lo, hi,
            s);
    return -1;
  }
  *out = v;
  return 0;
}

enum {
  OPT_TRACE = 256,
  OPT_MAX_REQUESTS,
  OPT_MODEL,
  OPT_FORMAT,
  OPT_INDEXER_FORMAT,
  OPT_BLOCK_SIZE,
  OPT_NUM_BLOCKS,
  OPT_KV_CACHE_MEMORY,
  OPT_MAX_BATCHED,
  OPT_MAX_SEQS,
  OPT_DEVICE,
  OPT_SEED,
  OPT_THREADS,
  OPT_JSON,
  OPT_PLOT,
  OPT_PROGRESS,
  OPT_QUIET,
  OPT_SKIP_BAD,
  OPT_DISTINCT_SLOTS
};

static const struct option longopts[] = {
    {"trace", required_argument, NULL, OPT_TRACE},
    {"max-requests", required_argument, NULL, OPT_MAX_REQUESTS},
    {"model", required_argument, NULL, OPT_MODEL},
    {"format", required_argument, NULL, OPT_FORMAT},
    {"indexer-format", required_argument, NULL, OPT_INDEXER_FORMAT},
    {"block-size", required_argument, NULL, OPT_BLOCK_SIZE},
    {"num-blocks", required_argument, NULL, OPT_NUM_BLOCKS},
    {"kv-cache-memory", required_argument, NULL, OPT_KV_CACHE_MEMORY},
    {"max-batched-tokens", required_argument, NULL, OPT_MAX_BATCHED},
    {"max-num-seqs", required_argument, NULL, OPT_MAX_SEQS},
    {"device", required_argument, NULL, OPT_DEVICE},
    {"seed", required_argument, NULL, OPT_SEED},
    {"threads", required_argument, NULL, OPT_THREADS},
    {"json", required_argument, NULL, OPT_JSON},
    {"plot", required_argument, NULL, OPT_PLOT},
    {"progress", required_argument, NULL, OPT_PROGRESS},
    {"quiet", no_argument, NULL, OPT_QUIET},
    {"skip-bad", no_argument, NULL, OPT_SKIP_BAD},
    {"distinct-slots", no_argument, NULL, OPT_DISTINCT_SLOTS},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0}};

/* The options with an integer value.  0, or -1 (message on stderr). */
static int number_option(int c, const char *arg, sim_config *cfg) {
  long long v;
  switch (c) {
    case OPT_MAX_REQUESTS:
      if (parse_num("--max-requests", arg, 1, INT32_MAX, &v))
        return -1;
      cfg->max_requests = v;
      return 0;
    case OPT_BLOCK_SIZE:
      if (parse_num("--block-size", arg, 1, 1 << 20, &v))
        return -1;
      cfg->block_size = (int32_t)v;
      return 0;
    case OPT_NUM_BLOCKS:
      if (parse_num("--num-blocks", arg, 1, SIM_MAX_POOL_PAGES, &v))
        return -1;
      cfg->num_blocks = (int32_t)v;
      return 0;
    case OPT_MAX_BATCHED:
      if (parse_num("--max-batched-tokens", arg, 1, 1 << 20, &v))
        return -1;
      cfg->max_batched_tokens = (int32_t)v;
      return 0;
    case OPT_MAX_SEQS:
      if (parse_num("--max-num-seqs", arg, 1, 1 << 20, &v))
        return -1;
      cfg->max_num_seqs = (int32_t)v;
      return 0;
    case OPT_SEED:
      if (parse_num("--seed", arg, 0, LLONG_MAX, &v))
        return -1;
      cfg->seed = (uint64_t)v;
      return 0;
    default: /* OPT_THREADS */
      if (parse_num("--threads", arg, 0, 1024, &v))
        return -1;
      cfg->threads = (int)v;
      return 0;
  }
}

static int format_option(int c, const char *arg, sim_config *cfg) {
  char err[256];
  if (c == OPT_INDEXER_FORMAT) {
    if (sim_format_parse(arg, 1, &cfg->indexer_format)) {
      fprintf(stderr, "dsv4kv run: --indexer-format must be fp8 or mxfp4, got '%s'\n", arg);
      return -1;
    }
    cfg->indexer_set = 1;
    return 0;
  }
  int n = sim_format_list_parse(arg, cfg->formats, err, sizeof err);
  if (n < 0) {
    fprintf(stderr, "dsv4kv run: %s\n", err);
    return -1;
  }
  cfg->num_formats = n;
  cfg->format = cfg->formats[0];
  return 0;
}

/* The options with a word value.  0, or -1 (message on stderr). */
static int word_option(int c, const char *arg, sim_config *cfg) {
  static const char *const modes[] = {"off", "bar", "lines"};
  switch (c) {
    case OPT_MODEL:
      if (!(cfg->model = sim_model_find(arg))) {
        fprintf(stderr, "dsv4kv run: unknown --model '%s'; presets:\n", arg);
        sim_model_list(stderr, 2);
        return -1;
      }
      return 0;
    case OPT_KV_CACHE_MEMORY:
      if (sim_parse_size(arg, &cfg->kv_cache_bytes)) {
        fprintf(stderr,
                "dsv4kv run: --kv-cache-memory expects a positive size of at most 2^60 bytes, such as "
                "40GiB, 512MiB or 16GB (units B, K, M, G, T, KiB, MiB, GiB, TiB, KB, MB, GB, TB; a decimal number such as 40, 1.5 or 1e12), got '%s'\n",
                arg);
        return -1;
      }
      cfg->kv_cache_arg = arg;
      return 0;
    case OPT_DEVICE:
      if (strcmp(arg, "cpu") && strcmp(arg, "cuda")) {
        fprintf(stderr, "dsv4kv run: --device must be cpu or cuda, got '%s'\n", arg);
        return -1;
      }
      cfg->device_cuda = !strcmp(arg, "cuda");
      return 0;
    default: /* OPT_PROGRESS */
      if (!strcmp(arg, "auto")) {
        cfg->progress = -1;
        return 0;
      }
      for (int i = 0; i < 3; i++)
        if (!strcmp(arg, modes[i])) {
          cfg->progress = i;
          return 0;
        }
      fprintf(stderr, "dsv4kv run: --progress must be auto, bar, lines or off, got '%s'\n", arg);
      return -1;
  }
}

/* One option.  0 go on, 1 help printed, -1 error. */
static int apply_option(int c, char **argv, sim_config *cfg) {
  switch (c) {
    case OPT_TRACE: cfg->trace_path = optarg; return 0;
    case OPT_JSON: cfg->json_path = optarg; return 0;
    case OPT_PLOT: cfg->plot_path = optarg; return 0;
    case OPT_QUIET: cfg->quiet = 1; return 0;
    case OPT_SKIP_BAD: cfg->skip_bad = 1; return 0;
    case OPT_DISTINCT_SLOTS: cfg->distinct_slots = 1; return 0;
    case OPT_FORMAT:
    case OPT_INDEXER_FORMAT: return format_option(c, optarg, cfg);
    case OPT_MODEL:
    case OPT_KV_CACHE_MEMORY:
    case OPT_DEVICE:
    case OPT_PROGRESS: return word_option(c, optarg, cfg);
    case 'h': usage(stdout); return 1;
    case ':':
    case '?': cli_option_error("run", c, argv); return -1;
    default: return number_option(c, optarg, cfg);
  }
}

int cmd_run(int argc, char **argv) {
  sim_config cfg;
  sim_config_defaults(&cfg);
  cfg.argc = argc;
  cfg.argv = argv;
  cfg.git_commit = cli_git_commit();
  optind = 0; /* glibc: full reinitialisation */
  opterr = 0;
  for (;;) {
    int c = getopt_long(argc, argv, ":h", longopts, NULL);
    if (c == -1)
      break;
    int rc = apply_option(c, argv, &cfg);
    if (rc)
      return rc > 0 ? 0 : SIM_EXIT_CANNOT_RUN;
  }
  if (optind < argc) {
    fprintf(stderr, "dsv4kv run: unexpected argument '%s' (see 'dsv4kv run --help')\n",
            argv[optind]);
    return SIM_EXIT_CANNOT_RUN;
  }
  if (!cfg.indexer_set)
    cfg.indexer_format = sim_default_indexer(cfg.format);
  const char *ignored = cli_cpu_path_ignored();
  if (ignored) fprintf(stderr, "dsv4kv run: %s\n", ignored);
  return sim_run(&cfg);
}
