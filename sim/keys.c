/* Synthetic keys (see keys.h). */
#include "keys.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "dsv4kv.h"
#include "rng.h"

/* Outlier channels: about 1 % of channels, 8x .. 24x the typical magnitude. */
#define SIM_OUTLIER_PERMILLE 10
#define SIM_OUTLIER_MIN 8.0
#define SIM_OUTLIER_MAX 24.0

int sim_keytable_init(sim_keytable *t, int32_t nrows, int32_t dim, uint64_t seed, uint64_t stream) {
  memset(t, 0, sizeof *t);
  t->rows = malloc((size_t)nrows * (size_t)dim * sizeof *t->rows);
  float *chan = malloc((size_t)dim * sizeof *chan);
  if (!t->rows || !chan) {
    free(t->rows);
    free(chan);
    t->rows = NULL;
    return -1;
  }
  t->nrows = nrows;
  t->dim = dim;
  t->salt = sim_hash2(seed, stream);
  sim_rng rng = sim_rng_make(t->salt);
  for (int32_t d = 0; d < dim; d++) {
    double sc = 0.5 + sim_rng_uniform(&rng); /* mild per-channel spread */
    if (sim_rng_below(&rng, 1000) < SIM_OUTLIER_PERMILLE)
      sc = SIM_OUTLIER_MIN + (SIM_OUTLIER_MAX - SIM_OUTLIER_MIN) * sim_rng_uniform(&rng);
    chan[d] = (float)sc;
  }
  for (size_t i = 0; i < (size_t)nrows * (size_t)dim; i++) {
    float v = (float)sim_rng_normal(&rng) * chan[i % (size_t)dim];
    t->rows[i] = dsv4kv_f32_to_bf16(v);
  }
  free(chan);
  return 0;
}

void sim_keytable_free(sim_keytable *t) {
  free(t->rows);
  memset(t, 0, sizeof *t);
}

/* out = src with each nonzero exponent moved by shift where it stays in
 * 1..254, the sign flipped by sign; branch-free and restrict, so the
 * compiler takes 8 values a step. */
static void shift_row(const uint16_t *restrict src, uint16_t *restrict out, int32_t n, int shift, uint16_t sign) {
  const uint16_t step = (uint16_t)(shift * 128), lo = (uint16_t)(1 - shift); /* 16-bit lanes throughout */
#define SHIFT_ONE(d)                                                                       \
  do {                                                                                     \
    const uint16_t b = src[d], e = (uint16_t)((b >> 7) & 0xFF);                            \
    const uint16_t move = (uint16_t)(e != 0) & (uint16_t)((uint16_t)(e - lo) <= 253u);     \
    out[d] = (uint16_t)((uint16_t)(b + (uint16_t)(move * step)) ^ sign);                   \
  } while (0)
  int32_t d0 = 0;
  for (; d0 + 8 <= n; d0 += 8) /* a fixed 8: the -O2 vectorizer takes it whole */
    for (int32_t d = d0; d < d0 + 8; d++) SHIFT_ONE(d);
  for (; d0 < n; d0++) SHIFT_ONE(d0);
#undef SHIFT_ONE
}

static const uint16_t *table_row(const sim_keytable *t, uint64_t h) {
  return t->rows + (size_t)(h & (uint64_t)(t->nrows - 1)) * (size_t)t->dim;
}

void sim_keytable_prefetch(const sim_keytable *t, uint64_t content) {
  const char *src = (const char *)table_row(t, sim_hash2(t->salt, content));
  for (size_t b = 0; b < (size_t)t->dim * sizeof *t->rows; b += 64) __builtin_prefetch(src + b);
}

void sim_keytable_row(const sim_keytable *t, uint64_t content, uint16_t *out) {
  uint64_t h = sim_hash2(t->salt, content);
  const uint16_t *src = table_row(t, h);
  int shift = (int)((h >> 32) % 5) - 2;
  uint16_t sign = ((h >> 40) & 1) ? 0x8000u : 0u;
  shift_row(src, out, t->dim, shift, sign);
}

uint64_t sim_token_content(const sim_request_spec *r, int32_t uid, int32_t pos) {
  if (pos < sim_shareable_tokens(r))
    return sim_hash3(1, (uint64_t)r->hash_ids[pos / SIM_HASH_BLOCK_TOKENS], (uint64_t)pos);
  return sim_hash3(2, (uint64_t)uid, (uint64_t)pos);
}

uint64_t sim_entry_content(const sim_request_spec *r, int32_t uid, int32_t entry, int32_t ratio) {
  int64_t first = (int64_t)entry * ratio, last = first + ratio - 1;
  if (last < sim_shareable_tokens(r) &&
      first / SIM_HASH_BLOCK_TOKENS == last / SIM_HASH_BLOCK_TOKENS)
    return sim_hash3(sim_hash2(3, (uint64_t)ratio),
                     (uint64_t)r->hash_ids[last / SIM_HASH_BLOCK_TOKENS], (uint64_t)entry);
  return sim_hash3(sim_hash2(4, (uint64_t)ratio), (uint64_t)uid, (uint64_t)entry);
}
