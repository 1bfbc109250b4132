/* A workload: the requests a run replays, from a trace file or synthesised. */
#ifndef DSV4KV_SIM_WORKLOAD_H
#define DSV4KV_SIM_WORKLOAD_H

#include <stdint.h>
#include <stdio.h>

/* Tokens covered by one prefix hash id (Mooncake: one id per 512-token block). */
#define SIM_HASH_BLOCK_TOKENS 512

/* Most tokens one request of a trace may hold, prompt and output together:
 * DeepSeek-V4's context (max_position_embeddings = 1048576).  It bounds
 * what one line can make a run allocate (caches, RoPE table) and loop over. */
#define SIM_MAX_REQUEST_TOKENS (1 << 20)

typedef struct {
  double arrival_ms;  /* arrival time relative to the first request, ms        */
  int32_t input_len;  /* prompt tokens, >= 1                                    */
  int32_t output_len; /* generated tokens, >= 0 (0 is replayed as 1)            */
  int32_t num_hash;   /* entries of hash_ids (0: no prefix information)         */
  int64_t *hash_ids;  /* one id per 512-token prompt block; owned               */
  int64_t line;       /* line of the trace file (1-based); 0 when synthesised   */
} sim_request_spec;

typedef enum {
  SIM_SOURCE_SYNTHETIC = 0,
  SIM_SOURCE_MOONCAKE = 1, /* JSONL: timestamp, input_length, output_length, hash_ids */
  SIM_SOURCE_AZURE = 2     /* CSV: TIMESTAMP, ContextTokens, GeneratedTokens           */
} sim_source;

typedef struct {
  sim_request_spec *reqs;
  int64_t n, cap;
  sim_source source;
  char name[512];        /* file path, or "synthetic (seed N)"                  */
  int64_t lines_read;    /* trace lines examined                               */
  int64_t skipped_lines; /* malformed lines skipped under --skip-bad           */
} sim_workload;

void sim_workload_free(sim_workload *w);

/* Appends a request (copies hash_ids).  Returns 0, or -1 when out of memory. */
int sim_workload_push(sim_workload *w, const sim_request_spec *spec);

/* Sorts requests by arrival (stable) and rebases times on the earliest.
 * Returns 0, or -1 when out of memory for the sort's scratch. */
int sim_workload_finish(sim_workload *w);

/* The embedded default workload: `n` requests, seeded (see workload.c for the
 * statistics it follows).  Returns 0, or -1 when out of memory. */
int sim_workload_synthetic(sim_workload *w, int64_t n, uint64_t seed);

/* Totals used by the report. */
typedef struct {
  int64_t input_tokens, output_tokens, max_request_tokens;
  double span_ms;
} sim_workload_totals;
sim_workload_totals sim_workload_sum(const sim_workload *w);

/* Prompt tokens of `r` that lie in full hash blocks (the shareable prefix). */
static inline int32_t sim_shareable_tokens(const sim_request_spec *r) {
  int32_t full = r->input_len / SIM_HASH_BLOCK_TOKENS;
  if (full > r->num_hash)
    full = r->num_hash;
  return full * SIM_HASH_BLOCK_TOKENS;
}

#endif
