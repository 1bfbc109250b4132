/* Page pool with reference-counted prefix sharing (see pool.h). */
#include "pool.h"

#include <stdlib.h>
#include <string.h>

#include "rng.h"

int sim_pool_init(sim_pool *p, int32_t num_pages) {
  memset(p, 0, sizeof *p);
  p->num_pages = num_pages;
  uint32_t nb = 16;
  while (nb < 2u * (uint32_t)num_pages && nb < (1u << 30))
    nb <<= 1;
  p->bucket_mask = nb - 1;
  size_t n = (size_t)num_pages;
  p->refcount = calloc(n, sizeof *p->refcount);
  p->logical = calloc(n, sizeof *p->logical);
  p->key = calloc(n, sizeof *p->key);
  p->has_key = calloc(n, 1);
  p->free_stack = malloc(n * sizeof *p->free_stack);
  p->lru_prev = malloc(n * sizeof *p->lru_prev);
  p->lru_next = malloc(n * sizeof *p->lru_next);
  p->chain = malloc(n * sizeof *p->chain);
  p->bucket = malloc((size_t)nb * sizeof *p->bucket);
  if (!p->refcount || !p->logical || !p->key || !p->has_key || !p->free_stack || !p->lru_prev ||
      !p->lru_next || !p->chain || !p->bucket) {
    sim_pool_free(p);
    return -1;
  }
  /* Lowest page ids first. */
  for (int32_t i = 0; i < num_pages; i++)
    p->free_stack[i] = num_pages - 1 - i;
  p->num_free = num_pages;
  for (uint32_t i = 0; i < nb; i++)
    p->bucket[i] = -1;
  p->lru_head = p->lru_tail = -1;
  return 0;
}

void sim_pool_free(sim_pool *p) {
  free(p->refcount);
  free(p->logical);
  free(p->key);
  free(p->has_key);
  free(p->free_stack);
  free(p->lru_prev);
  free(p->lru_next);
  free(p->chain);
  free(p->bucket);
  memset(p, 0, sizeof *p);
}

int32_t sim_pool_available(const sim_pool *p) {
  return p->num_free + p->num_lru + p->unbacked;
}

static uint32_t slot_of(const sim_pool *p, uint64_t key) {
  return (uint32_t)sim_mix64(key) & p->bucket_mask;
}

static void ht_remove(sim_pool *p, int32_t page) {
  int32_t *link = &p->bucket[slot_of(p, p->key[page])];
  while (*link >= 0 && *link != page)
    link = &p->chain[*link];
  if (*link == page)
    *link = p->chain[page];
  p->has_key[page] = 0;
}

static void lru_unlink(sim_pool *p, int32_t page) {
  int32_t a = p->lru_prev[page], b = p->lru_next[page];
  if (a >= 0)
    p->lru_next[a] = b;
  else
    p->lru_head = b;
  if (b >= 0)
    p->lru_prev[b] = a;
  else
    p->lru_tail = a;
  p->num_lru--;
}

static void lru_push_tail(sim_pool *p, int32_t page) {
  p->lru_prev[page] = p->lru_tail;
  p->lru_next[page] = -1;
  if (p->lru_tail >= 0)
    p->lru_next[p->lru_tail] = page;
  else
    p->lru_head = page;
  p->lru_tail = page;
  p->num_lru++;
}

static void take(sim_pool *p, int32_t page) {
  p->refcount[page] = 1;
  p->used++;
  if (p->used > p->peak_used)
    p->peak_used = p->used;
}

int32_t sim_pool_alloc(sim_pool *p, int32_t logical) {
  int32_t page;
  if (p->num_free > 0) {
    page = p->free_stack[--p->num_free];
  } else if (p->num_lru > 0) {
    page = p->lru_head;
    lru_unlink(p, page);
    ht_remove(p, page);
    p->evictions++;
  } else {
    return -1;
  }
  take(p, page);
  p->logical[page] = logical;
  p->allocs++;
  return page;
}

int32_t sim_pool_lookup(sim_pool *p, uint64_t key) {
  for (int32_t page = p->bucket[slot_of(p, key)]; page >= 0; page = p->chain[page]) {
    if (p->key[page] != key)
      continue;
    if (p->refcount[page] == 0) {
      lru_unlink(p, page);
      take(p, page);
    } else {
      p->refcount[page]++;
    }
    p->hits++;
    return page;
  }
  return -1;
}

void sim_pool_register(sim_pool *p, int32_t page, uint64_t key) {
  if (p->has_key[page])
    return;
  uint32_t s = slot_of(p, key);
  for (int32_t q = p->bucket[s]; q >= 0; q = p->chain[q])
    if (p->key[q] == key)
      return;
  p->key[page] = key;
  p->has_key[page] = 1;
  p->chain[page] = p->bucket[s];
  p->bucket[s] = page;
}

void sim_pool_release(sim_pool *p, int32_t page) {
  if (--p->refcount[page] > 0)
    return;
  p->used--;
  if (p->has_key[page])
    lru_push_tail(p, page);
  else
    p->free_stack[p->num_free++] = page;
}
