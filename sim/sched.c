/* Continuous batching with chunked prefill, decode-first batches, on-demand
 * page allocation, prefix sharing and preemption (see sched.h). */
#include "sched.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rng.h"

static int32_t output_target(const sim_request_spec *spec) {
  return spec->output_len > 0 ? spec->output_len : 1;
}

int64_t sim_sched_pages_needed(const sim_request_spec *spec, int32_t block_size) {
  int64_t tokens = (int64_t)spec->input_len + output_target(spec) - 1;
  return (tokens + block_size - 1) / block_size;
}

uint64_t sim_sched_page_key(const sim_req *r, int32_t k, int32_t block_size) {
  int64_t first = (int64_t)k * block_size, last = first + block_size - 1;
  uint64_t h = sim_hash2(0x7061676500000000ull, (uint64_t)k);
  for (int64_t b = first / SIM_HASH_BLOCK_TOKENS; b <= last / SIM_HASH_BLOCK_TOKENS; b++)
    h = sim_hash2(h, (uint64_t)r->spec->hash_ids[b]);
  return h;
}

int sim_sched_init(sim_sched *s, const sim_workload *w, sim_pool *pool, int32_t block_size,
                   int32_t max_batched_tokens, int32_t max_num_seqs) {
  memset(s, 0, sizeof *s);
  s->n = w->n;
  s->pool = pool;
  s->block_size = block_size;
  s->max_batched_tokens = max_batched_tokens;
  s->max_num_seqs = max_num_seqs;
  s->watermark = (pool->num_pages + pool->unbacked) / 100; /* of the configured pool */
  s->reqs = calloc((size_t)w->n, sizeof *s->reqs);
  s->queue = malloc((size_t)w->n * sizeof *s->queue);
  s->running = malloc((size_t)w->n * sizeof *s->running);
  if (!s->reqs || !s->queue || !s->running) {
    sim_sched_free(s);
    return -1;
  }
  for (int64_t i = 0; i < w->n; i++) {
    sim_req *r = &s->reqs[i];
    r->spec = &w->reqs[i];
    r->id = (int32_t)i;
    r->state = SIM_REQ_PENDING;
    r->output_target = output_target(r->spec);
    r->shareable = sim_shareable_tokens(r->spec);
    r->item = -1;
    r->first_sched_ms = r->first_token_ms = -1.0;
    int64_t cap = sim_sched_pages_needed(r->spec, block_size);
    r->cap_pages = (int32_t)(cap > 0 ? cap : 1);
    r->pages = malloc((size_t)r->cap_pages * sizeof *r->pages);
    if (!r->pages) {
      sim_sched_free(s);
      return -1;
    }
  }
  return 0;
}

void sim_sched_free(sim_sched *s) {
  if (s->reqs)
    for (int64_t i = 0; i < s->n; i++)
      free(s->reqs[i].pages);
  free(s->reqs);
  free(s->queue);
  free(s->running);
  memset(s, 0, sizeof *s);
}

void sim_batch_free(sim_batch *b) {
  free(b->items);
  memset(b, 0, sizeof *b);
}

/* ---------------------------------------------------------------------- */

static void queue_push_back(sim_sched *s, int64_t i) {
  s->queue[(s->qhead + s->qlen) % s->n] = i;
  s->qlen++;
  if (s->qlen > s->peak_queued)
    s->peak_queued = (int32_t)s->qlen;
}

static void queue_push_front(sim_sched *s, int64_t i) {
  s->qhead = (s->qhead + s->n - 1) % s->n;
  s->queue[s->qhead] = i;
  s->qlen++;
}

static int64_t queue_pop_front(sim_sched *s) {
  int64_t i = s->queue[s->qhead];
  s->qhead = (s->qhead + 1) % s->n;
  s->qlen--;
  return i;
}

static void admit_arrivals(sim_sched *s) {
  while (s->next_arrival < s->n && s->reqs[s->next_arrival].spec->arrival_ms <= s->clock_ms) {
    s->reqs[s->next_arrival].state = SIM_REQ_QUEUED;
    queue_push_back(s, s->next_arrival);
    s->next_arrival++;
  }
}

static void release_pages(sim_sched *s, sim_req *r) {
  for (int32_t k = 0; k < r->num_pages; k++)
    sim_pool_release(s->pool, r->pages[k]);
  r->num_pages = 0;
  r->registered = 0;
  r->computed = 0;
}

static void remove_running(sim_sched *s, int32_t idx) {
  for (int32_t i = 0; i < s->num_running; i++)
    if (s->running[i] == idx) {
      memmove(s->running + i, s->running + i + 1,
              (size_t)(s->num_running - i - 1) * sizeof *s->running);
      s->num_running--;
      return;
    }
}

static int ensure_pages(sim_sched *s, sim_req *r, int64_t tokens) {
  while ((int64_t)r->num_pages * s->block_size < tokens) {
    int32_t page = sim_pool_alloc(s->pool, r->num_pages);
    if (page < 0)
      return -1;
    r->pages[r->num_pages++] = page;
  }
  return 0;
}

static int32_t known_tokens(const sim_req *r) {
  return r->spec->input_len + r->generated;
}

static int is_decode(const sim_req *r) {
  return r->generated > 0 && r->computed == known_tokens(r) - 1;
}

/* Room for max_num_seqs items, made before a step is scheduled: a step has
 * at most one item per running request (decodes and chunks skip requests
 * that have one; admissions stop at max_num_seqs).  -1 when out of memory. */
static int reserve_items(const sim_sched *s, sim_batch *b) {
  if (b->cap >= s->max_num_seqs)
    return 0;
  sim_item *p = realloc(b->items, (size_t)s->max_num_seqs * sizeof *p);
  if (!p)
    return -1;
  b->items = p;
  b->cap = s->max_num_seqs;
  return 0;
}

static void add_item(sim_batch *b, sim_req *r, int32_t start, int32_t len, int decode) {
  if (b->num_items >= b->cap) /* never (reserve_items); nothing written past the array */
    return;
  r->item = b->num_items;
  b->items[b->num_items++] = (sim_item){r->id, start, len, decode};
}

/* Preempts the most recently admitted running request; returns its index. */
static int32_t preempt_tail(sim_sched *s, sim_batch *b, int32_t *budget) {
  int32_t v = s->running[s->num_running - 1];
  sim_req *r = &s->reqs[v];
  if (r->item >= 0) { /* already in this batch: drop its item */
    *budget += b->items[r->item].len;
    b->items[r->item].len = 0;
    r->item = -1;
  }
  release_pages(s, r);
  s->num_running--;
  r->state = SIM_REQ_QUEUED;
  r->preemptions++;
  s->preemptions++;
  queue_push_front(s, v);
  return v;
}

/* Takes references on the request's registered prefix pages; returns how many. */
static int32_t prefix_lookup(sim_sched *s, sim_req *r) {
  int32_t bs = s->block_size, hits = 0;
  int64_t limit = known_tokens(r) - 1; /* at least one token is always computed */
  for (int32_t k = 0;; k++) {
    int64_t end = (int64_t)(k + 1) * bs;
    if (end > r->shareable || end > limit)
      break;
    int32_t page = sim_pool_lookup(s->pool, sim_sched_page_key(r, k, bs));
    if (page < 0)
      break;
    r->pages[r->num_pages++] = page;
    hits++;
  }
  return hits;
}

/* Adds an admitted request's prefix hits to the statistics (see sched.h):
 * tokens below the request's high-water mark are its own, re-admitted after
 * a preemption; the rest came from other requests. */
static void count_hits(sim_sched *s, const sim_req *r, int32_t hits) {
  int32_t bs = s->block_size;
  int64_t tokens = (int64_t)hits * bs;
  int64_t own = tokens < r->high ? tokens : r->high;
  int64_t own_pages = (own + bs - 1) / bs;
  s->hit_pages += hits;
  s->hit_tokens += tokens;
  s->readmit_pages += own_pages;
  s->readmit_tokens += own;
  s->shared_pages += hits - own_pages;
  s->shared_tokens += tokens - own;
}

/* Pages for r's first `tokens` tokens, preempting running requests from the
 * tail while the pool is short.  Returns 0, or 1 when r itself was the tail
 * and was preempted. */
static int make_room(sim_sched *s, sim_batch *b, sim_req *r, int64_t tokens, int32_t *budget,
                     int *preempted) {
  while (ensure_pages(s, r, tokens)) {
    *preempted = 1;
    if (preempt_tail(s, b, budget) == r->id)
      return 1;
  }
  return 0;
}

/* Compacts away the items of preempted requests (decodes stay first) and
 * counts the batch's tokens; returns the items left. */
static int32_t compact_items(sim_sched *s, sim_batch *b) {
  int32_t n = 0;
  for (int32_t i = 0; i < b->num_items; i++) {
    sim_item it = b->items[i];
    if (it.len == 0)
      continue;
    s->reqs[it.req].item = -1;
    b->items[n++] = it;
    b->num_tokens += it.len;
    if (it.is_decode)
      b->num_decode++;
  }
  b->num_items = n;
  return n;
}

static int schedule_once(sim_sched *s, sim_batch *b) {
  b->num_items = b->num_decode = b->num_tokens = 0;
  int32_t budget = s->max_batched_tokens;
  int preempted = 0;

  /* 1. decodes of running requests */
  for (int32_t i = 0; i < s->num_running && budget > 0; i++) {
    sim_req *r = &s->reqs[s->running[i]];
    if (!is_decode(r))
      continue;
    if (make_room(s, b, r, (int64_t)r->computed + 1, &budget, &preempted))
      break; /* r was the tail: nothing after it remains */
    add_item(b, r, r->computed, 1, 1);
    budget--;
  }
  /* 2. chunks of running requests still in prefill */
  for (int32_t i = 0; i < s->num_running && budget > 0; i++) {
    sim_req *r = &s->reqs[s->running[i]];
    if (r->item >= 0 || is_decode(r))
      continue;
    int32_t chunk = known_tokens(r) - r->computed;
    if (chunk > budget)
      chunk = budget;
    if (make_room(s, b, r, (int64_t)r->computed + chunk, &budget, &preempted))
      break;
    add_item(b, r, r->computed, chunk, 0);
    budget -= chunk;
  }
  /* 3. admissions, in arrival order */
  while (!preempted && s->qlen > 0 && budget > 0 && s->num_running < s->max_num_seqs) {
    sim_req *r = &s->reqs[s->queue[s->qhead]];
    int32_t hits = prefix_lookup(s, r);
    r->computed = hits * s->block_size;
    int32_t chunk = known_tokens(r) - r->computed;
    if (chunk > budget)
      chunk = budget;
    int64_t need_pages = ((int64_t)r->computed + chunk + s->block_size - 1) / s->block_size;
    int64_t need = need_pages - r->num_pages;
    int32_t reserve = s->num_running > 0 ? s->watermark : 0;
    if (sim_pool_available(s->pool) < need + reserve) {
      release_pages(s, r);
      break;
    }
    if (ensure_pages(s, r, (int64_t)r->computed + chunk)) { /* cannot happen after the check */
      release_pages(s, r);
      break;
    }
    queue_pop_front(s);
    r->state = SIM_REQ_RUNNING;
    r->registered = hits;
    if (r->first_sched_ms < 0)
      r->first_sched_ms = s->clock_ms;
    s->running[s->num_running++] = r->id;
    if (s->num_running > s->peak_running)
      s->peak_running = s->num_running;
    count_hits(s, r, hits);
    add_item(b, r, r->computed, chunk, 0);
    budget -= chunk;
  }
  return compact_items(s, b);
}

int sim_sched_next(sim_sched *s, sim_batch *b, char *err, size_t errlen) {
  if (reserve_items(s, b)) {
    snprintf(err, errlen, "out of memory for a batch of %d requests", s->max_num_seqs);
    return -2;
  }
  admit_arrivals(s);
  if (s->num_running == 0 && s->qlen == 0) {
    if (s->next_arrival >= s->n)
      return 0;
    if (s->reqs[s->next_arrival].spec->arrival_ms > s->clock_ms)
      s->clock_ms = s->reqs[s->next_arrival].spec->arrival_ms;
    admit_arrivals(s);
  }
  /* A step whose requests were all preempted schedules again; a second empty
   * step means nothing can run. */
  for (int attempt = 0; attempt < 3; attempt++)
    if (schedule_once(s, b) > 0)
      return 1;
  const sim_req *r = s->qlen ? &s->reqs[s->queue[s->qhead]] : NULL;
  snprintf(err, errlen,
           "the scheduler cannot make progress: %d running, %lld queued, %d of %d pages free%s%s",
           s->num_running, (long long)s->qlen, sim_pool_available(s->pool), s->pool->num_pages,
           r ? "; next request needs up to " : "", r ? "more pages than are free" : "");
  return -1;
}

double sim_sched_step_ms(const sim_batch *b) {
  return SIM_STEP_BASE_MS + SIM_STEP_TOKEN_MS * b->num_tokens;
}

void sim_sched_commit(sim_sched *s, const sim_batch *b) {
  int32_t bs = s->block_size;
  double end_ms = s->clock_ms + sim_sched_step_ms(b);
  for (int32_t i = 0; i < b->num_items; i++) {
    const sim_item *it = &b->items[i];
    sim_req *r = &s->reqs[it->req];
    if (it->is_decode) {
      s->decode_tokens += it->len;
    } else {
      s->prefill_tokens += it->len;
      int32_t lost_end = r->high < it->start + it->len ? r->high : it->start + it->len;
      if (lost_end > it->start)
        s->recomputed_tokens += lost_end - it->start;
    }
    r->computed += it->len;
    if (r->computed > r->high)
      r->high = r->computed;
    /* full pages inside the shared prefix join the prefix cache */
    while (r->registered < r->computed / bs) {
      int32_t k = r->registered++;
      if ((int64_t)(k + 1) * bs <= r->shareable)
        sim_pool_register(s->pool, r->pages[k], sim_sched_page_key(r, k, bs));
    }
    if (r->computed == known_tokens(r)) {
      r->generated++;
      if (r->generated == 1)
        r->first_token_ms = end_ms;
      if (r->generated >= r->output_target) {
        release_pages(s, r);
        remove_running(s, r->id);
        r->state = SIM_REQ_DONE;
        s->done++;
      }
    }
  }
  s->steps++;
  s->clock_ms = end_ms;
}
