/* Workloads: storage, ordering, and the embedded synthetic default.
 *
 * The default workload (`dsv4kv run` without --trace) is synthesised from a
 * seed.  Its statistics are taken from ../shared/traces/README.md, which
 * describes the real trace slices shipped with the project:
 *
 *  - Arrivals: a Poisson process at 4.92 requests/s, the rate of the Azure
 *    "conv" slice (4,424 requests in 899.9 s).  An exponential inter-arrival
 *    time with that mean has median 0.141 s; the slice's measured p50 is 0.137 s.
 *  - New prompt tokens per request: log-normal with median 1,047 and p90 2,425
 *    (sigma = ln(2425 / 1047) / 1.2816 = 0.655), clamped to the slice's range
 *    [2, 7,930] (Azure conv ContextTokens).
 *  - Generated tokens: log-normal with median 205 and p90 430 (sigma = 0.578),
 *    clamped to [10, 1,000] (Azure conv GeneratedTokens).
 *  - Prefix structure, after the Mooncake conversation slice (the only trace
 *    with prefix hashes): every prompt opens with one shared 512-token block
 *    (Mooncake's hash id 0 is block 0 of every request, a common system prompt),
 *    and 30.5 % of requests continue an earlier conversation ("833 requests
 *    (30.5 %) reuse more than just block 0"): they repeat the full 512-token
 *    blocks of one of the 16 previous prompts before their new tokens.  Hash
 *    ids follow Mooncake's chained semantics: one id per 512-token block, equal
 *    ids mean an identical prefix up to that block, a partial last block always
 *    gets a fresh id.  Prompts are capped at 16,384 tokens (fewer reused blocks).
 */
#include "workload.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "rng.h"

void sim_workload_free(sim_workload *w) {
  if (!w)
    return;
  for (int64_t i = 0; i < w->n; i++)
    free(w->reqs[i].hash_ids);
  free(w->reqs);
  w->reqs = NULL;
  w->n = w->cap = 0;
}

int sim_workload_push(sim_workload *w, const sim_request_spec *spec) {
  if (w->n == w->cap) {
    int64_t cap = w->cap ? 2 * w->cap : 256;
    sim_request_spec *p = realloc(w->reqs, (size_t)cap * sizeof *p);
    if (!p)
      return -1;
    w->reqs = p;
    w->cap = cap;
  }
  sim_request_spec r = *spec;
  r.hash_ids = NULL;
  if (spec->num_hash > 0) {
    r.hash_ids = malloc((size_t)spec->num_hash * sizeof *r.hash_ids);
    if (!r.hash_ids)
      return -1;
    memcpy(r.hash_ids, spec->hash_ids, (size_t)spec->num_hash * sizeof *r.hash_ids);
  }
  w->reqs[w->n++] = r;
  return 0;
}

/* Stable insertion/merge sort by arrival time (traces are nearly sorted). */
/* Stable merge sort by arrival (equal times keep the file's order), with
 * tmp[n] as scratch: O(n log n) whatever the order, where an insertion sort
 * moved the whole prefix for every line out of order (a trace in reverse
 * order took minutes at a few hundred thousand lines). */
static void merge_by_arrival(sim_request_spec *a, sim_request_spec *tmp, int64_t n) {
  for (int64_t width = 1; width < n; width *= 2) {
    for (int64_t lo = 0; lo < n; lo += 2 * width) {
      const int64_t mid = lo + width < n ? lo + width : n, hi = lo + 2 * width < n ? lo + 2 * width : n;
      int64_t i = lo, j = mid, k = lo;
      while (i < mid && j < hi) tmp[k++] = a[j].arrival_ms < a[i].arrival_ms ? a[j++] : a[i++];
      while (i < mid) tmp[k++] = a[i++];
      while (j < hi) tmp[k++] = a[j++];
    }
    memcpy(a, tmp, (size_t)n * sizeof *a);
  }
}

/* Returns 0, or -1 when out of memory for the scratch (already sorted
 * traces, the usual case, need none). */
static int sort_by_arrival(sim_request_spec *a, int64_t n) {
  int64_t i = 1;
  while (i < n && a[i].arrival_ms >= a[i - 1].arrival_ms) i++;
  if (i >= n) return 0;
  sim_request_spec *tmp = malloc((size_t)n * sizeof *tmp);
  if (!tmp) return -1;
  merge_by_arrival(a, tmp, n);
  free(tmp);
  return 0;
}

int sim_workload_finish(sim_workload *w) {
  if (w->n == 0)
    return 0;
  if (sort_by_arrival(w->reqs, w->n))
    return -1;
  double t0 = w->reqs[0].arrival_ms;
  for (int64_t i = 0; i < w->n; i++)
    w->reqs[i].arrival_ms -= t0;
  return 0;
}

sim_workload_totals sim_workload_sum(const sim_workload *w) {
  sim_workload_totals t = {0, 0, 0, 0.0};
  for (int64_t i = 0; i < w->n; i++) {
    const sim_request_spec *r = &w->reqs[i];
    t.input_tokens += r->input_len;
    t.output_tokens += r->output_len;
    int64_t tot = (int64_t)r->input_len + r->output_len;
    if (tot > t.max_request_tokens)
      t.max_request_tokens = tot;
  }
  if (w->n)
    t.span_ms = w->reqs[w->n - 1].arrival_ms - w->reqs[0].arrival_ms;
  return t;
}

/* ---------------------------------------------------------------------- */
/* The synthetic default                                                    */
/* ---------------------------------------------------------------------- */

#define SYN_RATE_PER_S 4.92
#define SYN_PROMPT_MEDIAN 1047.0
#define SYN_PROMPT_SIGMA 0.655
#define SYN_PROMPT_MIN 2
#define SYN_PROMPT_MAX 7930
#define SYN_OUTPUT_MEDIAN 205.0
#define SYN_OUTPUT_SIGMA 0.578
#define SYN_OUTPUT_MIN 10
#define SYN_OUTPUT_MAX 1000
#define SYN_CONTINUE_P 0.305
#define SYN_PARENT_WINDOW 16
#define SYN_PROMPT_CAP 16384

static int32_t lognormal_int(sim_rng *r, double median, double sigma, int32_t lo, int32_t hi) {
  double v = median * exp(sigma * sim_rng_normal(r));
  if (v < lo)
    v = lo;
  if (v > hi)
    v = hi;
  return (int32_t)llround(v);
}

int sim_workload_synthetic(sim_workload *w, int64_t n, uint64_t seed) {
  memset(w, 0, sizeof *w);
  w->source = SIM_SOURCE_SYNTHETIC;
  snprintf(w->name, sizeof w->name, "synthetic (seed %llu)", (unsigned long long)seed);
  sim_rng rng = sim_rng_make(sim_hash2(seed, 0x776f726b6c6f6164ull));
  int64_t next_id = 1; /* id 0 is the shared system-prompt block */
  int64_t *ids = malloc((SYN_PROMPT_CAP / SIM_HASH_BLOCK_TOKENS + 2) * sizeof *ids);
  if (!ids)
    return -1;
  double t = 0.0;
  for (int64_t i = 0; i < n; i++) {
    if (i > 0)
      t += -log(sim_rng_uniform(&rng)) / SYN_RATE_PER_S * 1000.0;
    int32_t fresh =
        lognormal_int(&rng, SYN_PROMPT_MEDIAN, SYN_PROMPT_SIGMA, SYN_PROMPT_MIN, SYN_PROMPT_MAX);
    int32_t out =
        lognormal_int(&rng, SYN_OUTPUT_MEDIAN, SYN_OUTPUT_SIGMA, SYN_OUTPUT_MIN, SYN_OUTPUT_MAX);
    /* Shared prefix: the system block, or a previous prompt's full blocks. */
    int32_t nshared = 1;
    const sim_request_spec *parent = NULL;
    if (i > 0 && sim_rng_uniform(&rng) < SYN_CONTINUE_P) {
      int64_t back = 1 + (int64_t)sim_rng_below(
                             &rng, (uint64_t)(i < SYN_PARENT_WINDOW ? i : SYN_PARENT_WINDOW));
      parent = &w->reqs[i - back];
      int32_t pfull = parent->input_len / SIM_HASH_BLOCK_TOKENS;
      if (pfull > parent->num_hash)
        pfull = parent->num_hash;
      if (pfull > nshared)
        nshared = pfull;
    }
    int32_t max_shared = (SYN_PROMPT_CAP - fresh) / SIM_HASH_BLOCK_TOKENS;
    if (nshared > max_shared)
      nshared = max_shared < 1 ? 1 : max_shared;
    int32_t input = nshared * SIM_HASH_BLOCK_TOKENS + fresh;
    int32_t nblocks = (input + SIM_HASH_BLOCK_TOKENS - 1) / SIM_HASH_BLOCK_TOKENS;
    for (int32_t b = 0; b < nblocks; b++) {
      if (b == 0)
        ids[b] = 0;
      else if (parent && b < nshared)
        ids[b] = parent->hash_ids[b];
      else
        ids[b] = next_id++;
    }
    sim_request_spec r = {t, input, out, nblocks, ids, 0};
    if (sim_workload_push(w, &r)) {
      free(ids);
      sim_workload_free(w);
      return -1;
    }
  }
  free(ids);
  w->lines_read = n;
  return 0;
}
