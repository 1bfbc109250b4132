/* dsv4kv_sim: replays a serving workload through the DeepSeek-V4 K caches.
 *
 * The public face of the simulator behind `dsv4kv run`.  It only talks to the
 * kernels through include/dsv4kv.h. */
#ifndef DSV4KV_SIM_H
#define DSV4KV_SIM_H

#include <stdint.h>

#include "dsv4kv.h"
#include "model.h"

/* Exit statuses of sim_run (and of `dsv4kv run`). */
#define SIM_EXIT_OK 0            /* ran, verification passed                      */
#define SIM_EXIT_VERIFY_FAILED 1 /* ran (or stopped early), verification failed  */
#define SIM_EXIT_CANNOT_RUN                       \
  2 /* bad options, bad trace, pool too small, no \
       backend for the device, out of memory (also  \
       mid-run: the verdict is then INCOMPLETE)     */

#define SIM_DEFAULT_REQUESTS 200
#define SIM_DEFAULT_BLOCK_SIZE 256
#define SIM_DEFAULT_MAX_BATCHED_TOKENS 8192
#define SIM_DEFAULT_MAX_NUM_SEQS 256
#define SIM_DEFAULT_SEED 1

/* Pages a pool may hold at most (--num-blocks' limit; --kv-cache-memory's
 * pages are capped at it, with a note). */
#define SIM_MAX_POOL_PAGES (1 << 28)

/* --format takes up to this many records (each once): one run per record. */
#define SIM_MAX_FORMATS 3

typedef struct {
  const char *trace_path; /* NULL: the embedded synthetic workload          */
  int64_t max_requests;   /* first N requests (<= 0: all / default count)  */
  const sim_model *model;
  dsv4kv_record format;         /* compressed caches of this run: V4, MXFP8 or NVFP4 */
  dsv4kv_record indexer_format; /* INDEXER_FP8 or INDEXER_MXFP4                   */
  dsv4kv_record formats[SIM_MAX_FORMATS]; /* --format list, one run each; sim_run
                                             sets format from it             */
  int num_formats;                        /* 0: just `format`                  */
  int indexer_set;              /* --indexer-format given: every run uses it;
                                   else sim_default_indexer(format)           */
  int32_t block_size;           /* tokens per page                                */
  int32_t num_blocks;           /* pages in the pool (0: sized for the workload)  */
  int64_t kv_cache_bytes;       /* --kv-cache-memory: the pool holds as many pages
                                   as fit, whole model (0: not given)         */
  const char *kv_cache_arg;     /* its spelling on the command line               */
  int32_t max_batched_tokens;   /* token budget per step                          */
  int32_t max_num_seqs;         /* running requests at most                       */
  int device_cuda;              /* --device cuda                                  */
  uint64_t seed;
  const char *json_path; /* --json FILE ("-": stdout) or NULL              */
  const char *plot_path; /* --plot FILE (.png or .svg) or NULL              */
  int quiet;             /* no progress, one summary line                  */
  int skip_bad;          /* skip malformed trace lines                     */
  int distinct_slots;    /* --distinct-slots: the inserts and indexer stores
                            pass options.distinct_slots (every step's slot
                            mappings name a slot once: requests own their
                            pages)                                         */
  int threads;           /* library threads per call (0: OpenMP's default for
                            large calls, 1 for small ones; default
                            sim_default_threads())                         */
  int progress;          /* -1 auto (TTY: bar, else lines), 0 off, 1 bar, 2 lines */
  int argc;              /* the command line, for the JSON report          */
  char **argv;
  const char *git_commit; /* the build's commit, or NULL                   */
} sim_config;

/* options.c: the defaults, and their check (0, or -1 with a message on
 * stderr).  sim_default_threads: --threads' default, 0 (the library's
 * choice; options.c has the measurements). */
int sim_default_threads(void);
void sim_config_defaults(sim_config *cfg);
int sim_config_check(const sim_config *cfg);

/* Runs the workload once per format of cfg->formats (or once with
 * cfg->format), prints each run's report, then a comparison of the formats,
 * writes the JSON report and the plot when asked.  Returns a SIM_EXIT_*
 * status: the worst of the runs'. */
int sim_run(const sim_config *cfg);

/* --json -: the JSON report goes to stdout and the text report (or the
 * --quiet summary) to stderr. */
int sim_json_to_stdout(const sim_config *cfg);

/* The formats as --format (v4, mxfp8, nvfp4) and --indexer-format (fp8,
 * mxfp4) spell them, which the reports print too; "?" for another record.
 * sim_format_parse reads one of them back (indexer: the indexer records);
 * 0, or -1 for a name that is not one. */
const char *sim_format_name(dsv4kv_record r);
int sim_format_parse(const char *name, int indexer, dsv4kv_record *out);
/* A comma-separated --format list ("v4,mxfp8,nvfp4"; "all" for the three)
 * into out[SIM_MAX_FORMATS].  Returns how many, or -1 with a message in err
 * (an unknown name, a name twice, an empty item). */
int sim_format_list_parse(const char *list, dsv4kv_record *out, char *err, size_t errlen);
/* The indexer record a run of `format` uses when --indexer-format is not
 * given: mxfp4 with nvfp4 (the V4.1 FP4 configuration), else fp8. */
dsv4kv_record sim_default_indexer(dsv4kv_record format);

/* A memory size: a number (decimals allowed) and a unit, B, KB, MB, GB, TB
 * (powers of 1000) or KiB, MiB, GiB, TiB (powers of 1024; K, M, G, T alone
 * too), case-insensitive, a space allowed before the unit; no unit = bytes.
 * Returns 0 with *bytes >= 1, or -1 for anything else (negative, zero, not a
 * number, an unknown unit, more than 2^60 bytes). */
int sim_parse_size(const char *s, int64_t *bytes);

#endif
