/* The page pool: fixed-size pages handed out on demand, returned at
 * completion, with reference-counted prefix sharing.
 *
 * A page id addresses the same page in every cache of the run (the SWA caches
 * of all layer kinds, the compressed caches and the indexer cache), as one
 * vLLM block table serves all layers: a page holds `block_size` tokens of the
 * SWA caches and block_size / compress_ratio entries of a compressed cache.
 *
 * Prefix sharing: a full page whose content is identified by a key (derived
 * from the trace's prefix hash ids) is registered under that key.  A request
 * whose page has a registered key takes a reference instead of recomputing it.
 * Pages whose reference count drops to zero keep their key and stay resident
 * in an LRU list until the pool needs them for something else. */
#ifndef DSV4KV_SIM_POOL_H
#define DSV4KV_SIM_POOL_H

#include <stdint.h>

typedef struct {
  int32_t num_pages;
  int32_t *refcount;
  int32_t *logical; /* logical page number the page holds in its requests */
  uint64_t *key;    /* prefix key of a registered page                    */
  uint8_t *has_key;
  int32_t *free_stack; /* clean free pages                                   */
  int32_t num_free;
  int32_t *lru_prev, *lru_next; /* refcount-0 pages that keep a key           */
  int32_t lru_head, lru_tail, num_lru;
  int32_t *bucket, *chain; /* key -> page hash table (chained through pages) */
  uint32_t bucket_mask;
  int32_t used, peak_used; /* pages with refcount > 0                         */
  int32_t unbacked; /* pages of the configured pool past num_pages: counted as
                       available, never handed out (the run can never need
                       them: see sim.c, alloc_pages)                        */
  int64_t allocs, hits, evictions;
} sim_pool;

int sim_pool_init(sim_pool *p, int32_t num_pages); /* 0, or -1 out of memory */
void sim_pool_free(sim_pool *p);

/* Pages a request can get now: clean free pages plus evictable cached ones
 * (plus the unbacked ones). */
int32_t sim_pool_available(const sim_pool *p);

/* A page with refcount 1 (evicting the least recently used cached page when no
 * clean page is left), or -1 when none. */
int32_t sim_pool_alloc(sim_pool *p, int32_t logical);

/* The page registered under `key`, with one more reference, or -1. */
int32_t sim_pool_lookup(sim_pool *p, uint64_t key);

/* Registers `page` under `key` unless the key is already registered. */
void sim_pool_register(sim_pool *p, int32_t page, uint64_t key);

/* Drops one reference. */
void sim_pool_release(sim_pool *p, int32_t page);

#endif
