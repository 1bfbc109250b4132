/* The state of one run, shared by the simulator's modules. */
#ifndef DSV4KV_SIM_CTX_H
#define DSV4KV_SIM_CTX_H

#include <stdint.h>
#include <stdio.h>

#include "check.h"
#include "keys.h"
#include "model.h"
#include "pool.h"
#include "sched.h"
#include "sim.h"
#include "tensor.h"
#include "timeline.h"
#include "workload.h"

/* Timed operations.  The library's ops, plus the simulator's own key
 * synthesis and verification for comparison (their bytes are not counted).
 *
 * Bytes counted for an op's GB/s: what the call reads and writes, per row
 * (token, or compressed entry for the compressed-cache ops); block-table
 * lookups and per-request arrays are not counted (see sim_op_bytes_doc in
 * report.h):
 *   inserts         bf16 key 1024 B + slot 8 B read, the record written;
 *   indexer store   bf16 key 256 B, position and slot 16 B, fp32 cos/sin row
 *                   256 B read, the record written (+ 512 B weight per call);
 *   gathers         the record read, the bf16 row (1024 B) written;
 *   combine         topk_len top-k entries read, the first topk_len + swa_len
 *                   columns and the length written (4 B each);
 *   global top-k    W top-k entries read, W global entries + length written,
 *                   request id and valid flag read (W * 8 + 9 B);
 *   flashinfer      the full row (window + K4) and length written, request id
 *                   read; decode: window + Dk entries and valid flag read;
 *                   prefill: topk_len top-k entries read (4 B each). */
typedef enum {
  SIM_OP_MAKE_K,        /* synthesise bf16 keys (simulator)                    */
  SIM_OP_INSERT_SWA,    /* quantize_and_insert_k_cache, SWA cache (V4)         */
  SIM_OP_INSERT_COMP,   /* quantize_and_insert_k_cache, compressed cache       */
  SIM_OP_INDEXER_STORE, /* indexer_k_norm_rope_store                           */
  SIM_OP_GATHER_COMP,   /* dequantize_and_gather_k_cache, whole compressed     */
  SIM_OP_GATHER_SWA,    /* dequantize_and_gather_k_cache, SWA tail             */
  SIM_OP_COMBINE,       /* combine_topk_swa_indices                            */
  SIM_OP_GLOBAL_TOPK,   /* compute_global_topk_indices_and_lens                */
  SIM_OP_FLASHINFER,    /* build_flashinfer_mixed_sparse_indices               */
  SIM_OP_VERIFY,        /* verification (simulator)                            */
  SIM_NUM_OPS
} sim_op;

typedef struct {
  double seconds;
  int64_t calls, rows, bytes; /* rows: tokens / entries processed */
} sim_opstat;

/* Caches and statistics of one layer kind. */
typedef struct {
  const sim_layer_kind *k;
  int32_t ratio;             /* 0 for SWA-only                            */
  int32_t cbs;               /* compressed entries per page (bs / ratio)  */
  int cbs_shift;             /* log2(cbs) when a power of two, else -1    */
  uint8_t *swa, *comp, *idx; /* cache memory [num_pages, page_bytes]      */
  int64_t swa_page_bytes, comp_page_bytes, idx_page_bytes;
  dsv4kv_cache_desc swa_desc, comp_desc, idx_desc;
  sim_keytable tok_keys, comp_keys, idx_keys;
  sim_opstat ops[SIM_NUM_OPS];
  sim_errstat err_swa, err_comp, err_idx;
} sim_kind_state;

/* Per-step arrays (rebuilt each step). */
typedef struct {
  int32_t T, D, R;       /* tokens, decode tokens (first D), requests (items)   */
  int32_t bt_width;      /* columns of bt                                       */
  int32_t *tok_req;      /* [T] item of each token                              */
  int32_t *tok_pos;      /* [T] position                                        */
  uint64_t *tok_content; /* [T] content key                                   */
  int64_t *swa_slot;     /* [T]                                                 */
  int32_t *qsl;          /* [R + 1]                                             */
  int32_t *seq_after;    /* [R] tokens in the cache after the step              */
  int32_t *bt;           /* [R, bt_width], -1 padded                            */
  sim_req **req;         /* [R]                                                 */
} sim_plan;

typedef struct {
  sim_config cfg;
  const sim_model *model;
  sim_workload work;
  sim_pool pool;
  sim_sched sched;
  int32_t bs, num_pages;
  int bs_shift; /* log2(bs) when a power of two, else -1 */
  int nkinds;
  sim_kind_state kinds[SIM_MAX_KINDS];
  float *cos_sin; /* fp32 [cos_sin_rows, 64] for the indexer RoPE */
  int64_t cos_sin_rows;
  float rms_weight[128];
  float rms_eps;
  float fp8_max;
  sim_plan plan;
  sim_buf b_plan[8];     /* storage of the plan arrays       */
  sim_buf b_scratch[32]; /* per-step scratch                 */
  int32_t alloc_pages;   /* pages backed by memory (pool.num_pages): at most what
                            the workload can ever hold; num_pages - alloc_pages
                            are counted as free but never allocated (pool.h)  */
  const char *pool_from; /* what sized the pool: "--num-blocks",
                            "--kv-cache-memory" or "auto"                       */
  sim_model_size msize;  /* whole-model bytes of this run's formats         */
  sim_series series;     /* per-step series (timeline.h)                    */
  sim_latency lat;       /* queueing delay, time to first token             */
  int run_index, run_count; /* this run among the --format list (0-based)  */
  int ran;               /* the workload ran (0: it could not start)        */
  int rc;                /* the run's SIM_EXIT_* status                     */
  int ok;                /* verification passed                             */
  char stop_msg[512];    /* why it stopped early, or ""                     */
  sim_verdict verdict;
  int64_t lib_skipped; /* sum of dsv4kv_options.skipped     */
  int fatal;           /* a library call failed: stop      */
  int out_of_memory;   /* the simulator ran out: exit 2    */
  char fatal_msg[400]; /* what failed                       */
  double wall_seconds;
  int64_t step;          /* current step number                              */
  FILE *json_file;       /* --json FILE, opened before the run, or NULL      */
  const char *json_name; /* where it goes, for messages ("stdout" or FILE)  */
  FILE *text_file;       /* the text report: stdout, stderr with --json -    */
} sim_ctx;

/* Executes one scheduled batch through the library for every layer kind and
 * verifies it (step.c).  Returns 0, or -1 when a library call failed
 * (c->fatal). */
int sim_step_run(sim_ctx *c, const sim_batch *b);

#endif
