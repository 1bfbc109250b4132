/* dsv4kv run: replay a serving workload through the K caches (issue 3).
 * Option parsing only; the simulator is sim/ (sim.h). */
#define _GNU_SOURCE

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

static void usage(FILE *f) {
  fprintf(f,
          "usage: dsv4kv run [options]\n"
          "\n"
          "Replays a serving workload through the DeepSeek-V4 attention K caches: continuous\n"
          "batching with chunked prefill over a paged pool, one representative layer of each\n"
          "kind (SWA-only, compress ratio 4 with indexer top-k, compress ratio 128).  Every\n"
          "step inserts the new tokens' keys, builds the sparse-attention indices, gathers\n"
          "what sparse prefill reads, and verifies it all; then prints a report.  Without\n"
          "--trace it runs an embedded synthetic workload whose arrivals and lengths follow\n"
          "the real traces' statistics.\n"
          "\n"
          "options:\n"
          "  --trace FILE            replay a trace: Mooncake JSONL (timestamp, input_length,\n"
          "                          output_length, hash_ids) or Azure LLM-inference CSV\n"
          "                          (TIMESTAMP, ContextTokens, GeneratedTokens); auto-detected\n"
          "  --max-requests N        only the first N requests (default: all of a trace; %d\n"
          "                          for the synthetic workload)\n"
          "  --model NAME            model preset (default deepseek-v4):\n",
          SIM_DEFAULT_REQUESTS);
  sim_model_list(f, HELP_INDENT);
  fprintf(f,
          "  --format FMT            record of the compressed caches: v4 (584 B), mxfp8 (528 B)\n"
          "                          or nvfp4 (288 B); default v4.  SWA caches always use v4\n"
          "  --indexer-format FMT    indexer cache record: fp8 (132 B) or mxfp4 (68 B); default\n"
          "                          fp8, mxfp4 with --format nvfp4\n"
          "  --block-size N          tokens per page (default %d); a multiple of 128 so that a\n"
          "                          page holds whole compressed entries (N/4 and N/128 of them)\n"
          "  --num-blocks N          pages in the pool (default: twice the largest request, at\n"
          "                          least 64K tokens, at most the whole workload).  A request\n"
          "                          that cannot fit even in an empty pool is an error\n"
          "  --max-batched-tokens N  token budget of one step: decode tokens first, then\n"
          "                          prefill chunks (default %d)\n"
          "  --max-num-seqs N        running requests at most (default %d)\n"
          "  --device DEV            cpu (default); cuda is refused: this build has no CUDA\n"
          "                          backend\n"
          "  --seed N                seed of the synthetic workload, keys and top-k (default %d)\n"
          "  --threads N             CPU threads per library call (default 0: OpenMP's\n"
          "                          default for large calls, 1 for small ones; use 1 when\n"
          "                          other jobs share the cores)\n"
          "  --json FILE             also write the report as JSON to FILE; with FILE '-' the\n"
          "                          JSON goes to stdout and the text report to stderr\n"
          "  --progress MODE         progress on stderr (the report stays on stdout): auto\n"
          "                          (default: a bar when stderr is a terminal, periodic\n"
          "                          lines otherwise), bar, lines or off\n"
          "  --quiet                 no progress; a one-line summary (formats, requests,\n"
          "                          tokens, pages, verdict) instead of the report\n"
          "  --skip-bad              skip malformed trace lines (counted in the report)\n"
          "                          instead of stopping at the first one\n"
          "  -h, --help              this text\n"
          "\n"
          "report: figures are for one layer of each kind.  Compressed and indexer caches\n"
          "hold one entry per compress_ratio tokens; sizes are given per entry and per\n"
          "token.  \"ratio\" is record bytes / bf16 bytes.  \"virtual time\" is the modelled\n"
          "serving clock (arrivals at trace times, a modelled duration per step), not wall\n"
          "time.  GB/s counts, per token or entry, the bytes an op reads and writes: inserts\n"
          "the bf16 key and slot read and the record written; gathers the record read and\n"
          "the bf16 row written; index ops the int32 entries they read and write (combine:\n"
          "only the first topk_len + swa_len columns of each row; flashinfer: the full\n"
          "row); block-table lookups are not counted.  \"-\" marks the simulator's own work\n"
          "(key synthesis, verification).  Prefix hits are split into pages shared across\n"
          "requests and pages a preempted request finds again on re-admission.\n"
          "\n"
          "exit status: 0 verification passed; 1 verification failed; 2 the run could not\n"
          "start (bad option or trace, pool too small, no backend for the device).\n",
          SIM_DEFAULT_BLOCK_SIZE, SIM_DEFAULT_MAX_BATCHED_TOKENS, SIM_DEFAULT_MAX_NUM_SEQS,
          SIM_DEFAULT_SEED);
}

static int parse_num(const char *opt, const char *s, long long lo, long long hi, long long *out) {
  char *end = NULL;
  errno = 0;
  long long v = strtoll(s, &end, 10);
  if (errno || !end || end == s || *end || v < lo || v > hi) {
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
  OPT_MAX_BATCHED,
  OPT_MAX_SEQS,
  OPT_DEVICE,
  OPT_SEED,
  OPT_THREADS,
  OPT_JSON,
  OPT_PROGRESS,
  OPT_QUIET,
  OPT_SKIP_BAD
};

int cmd_run(int argc, char **argv) {
  static const struct option longopts[] = {
      {"trace", required_argument, NULL, OPT_TRACE},
      {"max-requests", required_argument, NULL, OPT_MAX_REQUESTS},
      {"model", required_argument, NULL, OPT_MODEL},
      {"format", required_argument, NULL, OPT_FORMAT},
      {"indexer-format", required_argument, NULL, OPT_INDEXER_FORMAT},
      {"block-size", required_argument, NULL, OPT_BLOCK_SIZE},
      {"num-blocks", required_argument, NULL, OPT_NUM_BLOCKS},
      {"max-batched-tokens", required_argument, NULL, OPT_MAX_BATCHED},
      {"max-num-seqs", required_argument, NULL, OPT_MAX_SEQS},
      {"device", required_argument, NULL, OPT_DEVICE},
      {"seed", required_argument, NULL, OPT_SEED},
      {"threads", required_argument, NULL, OPT_THREADS},
      {"json", required_argument, NULL, OPT_JSON},
      {"progress", required_argument, NULL, OPT_PROGRESS},
      {"quiet", no_argument, NULL, OPT_QUIET},
      {"skip-bad", no_argument, NULL, OPT_SKIP_BAD},
      {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0}};
  sim_config cfg;
  sim_config_defaults(&cfg);
  int indexer_set = 0;
  long long v;
  optind = 0; /* glibc: full reinitialisation */
  opterr = 0;
  for (;;) {
    int c = getopt_long(argc, argv, ":h", longopts, NULL);
    if (c == -1)
      break;
    switch (c) {
      case OPT_TRACE: cfg.trace_path = optarg; break;
      case OPT_MAX_REQUESTS:
        if (parse_num("--max-requests", optarg, 1, INT32_MAX, &v))
          return SIM_EXIT_CANNOT_RUN;
        cfg.max_requests = v;
        break;
      case OPT_MODEL:
        cfg.model = sim_model_find(optarg);
        if (!cfg.model) {
          fprintf(stderr, "dsv4kv run: unknown --model '%s'; presets:\n", optarg);
          sim_model_list(stderr, 2);
          return SIM_EXIT_CANNOT_RUN;
        }
        break;
      case OPT_FORMAT:
        if (!strcmp(optarg, "v4"))
          cfg.format = DSV4KV_RECORD_V4;
        else if (!strcmp(optarg, "mxfp8"))
          cfg.format = DSV4KV_RECORD_MXFP8;
        else if (!strcmp(optarg, "nvfp4"))
          cfg.format = DSV4KV_RECORD_NVFP4;
        else {
          fprintf(stderr, "dsv4kv run: --format must be v4, mxfp8 or nvfp4, got '%s'\n", optarg);
          return SIM_EXIT_CANNOT_RUN;
        }
        break;
      case OPT_INDEXER_FORMAT:
        if (!strcmp(optarg, "fp8"))
          cfg.indexer_format = DSV4KV_RECORD_INDEXER_FP8;
        else if (!strcmp(optarg, "mxfp4"))
          cfg.indexer_format = DSV4KV_RECORD_INDEXER_MXFP4;
        else {
          fprintf(stderr, "dsv4kv run: --indexer-format must be fp8 or mxfp4, got '%s'\n", optarg);
          return SIM_EXIT_CANNOT_RUN;
        }
        indexer_set = 1;
        break;
      case OPT_BLOCK_SIZE:
        if (parse_num("--block-size", optarg, 1, 1 << 20, &v))
          return SIM_EXIT_CANNOT_RUN;
        cfg.block_size = (int32_t)v;
        break;
      case OPT_NUM_BLOCKS:
        if (parse_num("--num-blocks", optarg, 1, 1 << 28, &v))
          return SIM_EXIT_CANNOT_RUN;
        cfg.num_blocks = (int32_t)v;
        break;
      case OPT_MAX_BATCHED:
        if (parse_num("--max-batched-tokens", optarg, 1, 1 << 20, &v))
          return SIM_EXIT_CANNOT_RUN;
        cfg.max_batched_tokens = (int32_t)v;
        break;
      case OPT_MAX_SEQS:
        if (parse_num("--max-num-seqs", optarg, 1, 1 << 20, &v))
          return SIM_EXIT_CANNOT_RUN;
        cfg.max_num_seqs = (int32_t)v;
        break;
      case OPT_DEVICE:
        if (!strcmp(optarg, "cpu"))
          cfg.device_cuda = 0;
        else if (!strcmp(optarg, "cuda"))
          cfg.device_cuda = 1;
        else {
          fprintf(stderr, "dsv4kv run: --device must be cpu or cuda, got '%s'\n", optarg);
          return SIM_EXIT_CANNOT_RUN;
        }
        break;
      case OPT_SEED:
        if (parse_num("--seed", optarg, 0, LLONG_MAX, &v))
          return SIM_EXIT_CANNOT_RUN;
        cfg.seed = (uint64_t)v;
        break;
      case OPT_THREADS:
        if (parse_num("--threads", optarg, 0, 4096, &v))
          return SIM_EXIT_CANNOT_RUN;
        cfg.threads = (int)v;
        break;
      case OPT_JSON: cfg.json_path = optarg; break;
      case OPT_PROGRESS:
        if (!strcmp(optarg, "auto"))
          cfg.progress = -1;
        else if (!strcmp(optarg, "bar"))
          cfg.progress = 1;
        else if (!strcmp(optarg, "lines"))
          cfg.progress = 2;
        else if (!strcmp(optarg, "off"))
          cfg.progress = 0;
        else {
          fprintf(stderr, "dsv4kv run: --progress must be auto, bar, lines or off, got '%s'\n",
                  optarg);
          return SIM_EXIT_CANNOT_RUN;
        }
        break;
      case OPT_QUIET: cfg.quiet = 1; break;
      case OPT_SKIP_BAD: cfg.skip_bad = 1; break;
      case 'h': usage(stdout); return 0;
      case ':':
        fprintf(stderr, "dsv4kv run: option '%s' needs a value\n", argv[optind - 1]);
        return SIM_EXIT_CANNOT_RUN;
      default:
        fprintf(stderr, "dsv4kv run: unknown option '%s' (see 'dsv4kv run --help')\n",
                argv[optind - 1]);
        return SIM_EXIT_CANNOT_RUN;
    }
  }
  if (optind < argc) {
    fprintf(stderr, "dsv4kv run: unexpected argument '%s' (see 'dsv4kv run --help')\n",
            argv[optind]);
    return SIM_EXIT_CANNOT_RUN;
  }
  if (!indexer_set && cfg.format == DSV4KV_RECORD_NVFP4)
    cfg.indexer_format = DSV4KV_RECORD_INDEXER_MXFP4;
  return sim_run(&cfg);
}
