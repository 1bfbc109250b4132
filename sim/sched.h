/* Continuous batching over the page pool.
 *
 * Requests arrive at their trace time on a virtual clock.  Time is compressed:
 * the simulator runs steps back to back as fast as they execute, and the clock
 * advances by a modelled step duration (SIM_STEP_BASE_MS + SIM_STEP_TOKEN_MS
 * per batched token) or jumps to the next arrival when the engine is idle.
 *
 * Each step (vLLM v1 style): every running request in decode gets one token
 * (decode tokens come first in the batch); running requests still in prefill
 * get chunks; then queued requests are admitted in arrival order, after a
 * prefix-cache lookup, while the token budget (--max-batched-tokens), the
 * sequence limit and the free pages allow.  Pages are allocated on demand;
 * when none is left the most recently admitted running request is preempted
 * (its pages are released, it returns to the head of the queue and is
 * recomputed later).  A request completes when it has generated its output;
 * its pages are then released.
 *
 * Token accounting: a request with prompt P and output O inserts the keys of
 * P + O - 1 tokens (the last sampled token is never fed back).  A chunk that
 * reaches the end of the known tokens samples one new token. */
#ifndef DSV4KV_SIM_SCHED_H
#define DSV4KV_SIM_SCHED_H

#include <stdint.h>

#include "pool.h"
#include "workload.h"

#define SIM_STEP_BASE_MS 10.0
#define SIM_STEP_TOKEN_MS 0.02

typedef enum { SIM_REQ_PENDING, SIM_REQ_QUEUED, SIM_REQ_RUNNING, SIM_REQ_DONE } sim_req_state;

typedef struct {
  const sim_request_spec *spec;
  int32_t id; /* index in the workload                             */
  sim_req_state state;
  int32_t output_target; /* max(output_len, 1)                                 */
  int32_t generated;     /* output tokens sampled so far                       */
  int32_t computed;      /* tokens whose keys are in the caches                */
  int32_t shareable;     /* prompt tokens in full hash blocks (shareable pages) */
  int32_t *pages;        /* block table: page id of each logical page          */
  int32_t num_pages, cap_pages;
  int32_t registered; /* pages already offered to the prefix cache          */
  int32_t item;       /* index of its item in the batch being built, or -1  */
  int32_t preemptions;
  int32_t high; /* most tokens ever in the caches (recompute marker)  */
  double first_sched_ms; /* virtual time of its first admission, or -1     */
  double first_token_ms; /* end of the step that sampled its first token, or -1 */
} sim_req;

typedef struct {
  int32_t req;   /* request index                                  */
  int32_t start; /* position of the first token                    */
  int32_t len;   /* tokens                                         */
  int is_decode; /* decode items come first in a batch             */
} sim_item;

typedef struct {
  sim_item *items;
  int32_t num_items, cap;
  int32_t num_decode; /* items [0, num_decode) are decodes */
  int32_t num_tokens;
} sim_batch;

typedef struct {
  sim_req *reqs;
  int64_t n;
  sim_pool *pool;
  int32_t block_size, max_batched_tokens, max_num_seqs, watermark;
  int64_t next_arrival; /* first request not yet arrived          */
  int64_t *queue;       /* ring buffer of queued request indices  */
  int64_t qhead, qlen;
  int32_t *running; /* admission order                        */
  int32_t num_running;
  double clock_ms;
  int64_t done;
  /* statistics */
  int64_t steps, prefill_tokens, decode_tokens, preemptions;
  int64_t recomputed_tokens; /* prefill of tokens lost to a preemption        */
  /* Prefix-cache hits, split by where the page came from:
   *   shared:     another request's pages (real cross-request sharing; the
   *               tokens are never computed by this request);
   *   readmitted: pages a preempted request held before its preemption and
   *               finds again when it is re-admitted (its own earlier work).
   * A re-admitted request's hit tokens below its high-water mark are
   * readmitted, the rest shared; a page is readmitted when any of its tokens
   * is.  hit_* = shared + readmitted. */
  int64_t hit_pages, hit_tokens;
  int64_t shared_pages, shared_tokens;
  int64_t readmit_pages, readmit_tokens;
  int32_t peak_running, peak_queued;
} sim_sched;

/* 0, or -1 out of memory. */
int sim_sched_init(sim_sched *s, const sim_workload *w, sim_pool *pool, int32_t block_size,
                   int32_t max_batched_tokens, int32_t max_num_seqs);
void sim_sched_free(sim_sched *s);

/* Pages request `spec` holds at its largest. */
int64_t sim_sched_pages_needed(const sim_request_spec *spec, int32_t block_size);

/* The next step's batch.  Returns 1 with a batch, 0 when every request is
 * done, -1 when no progress is possible, -2 when out of memory (message in
 * err for both). */
int sim_sched_next(sim_sched *s, sim_batch *b, char *err, size_t errlen);

/* Applies an executed batch: advances tokens, samples, registers full shared
 * pages, completes requests and advances the clock. */
void sim_sched_commit(sim_sched *s, const sim_batch *b);

void sim_batch_free(sim_batch *b);

/* The modelled duration of a step that batches b (ms of virtual time). */
double sim_sched_step_ms(const sim_batch *b);

/* Prefix key of logical page k of request r (valid when the page lies inside
 * r->shareable). */
uint64_t sim_sched_page_key(const sim_req *r, int32_t k, int32_t block_size);

#endif
