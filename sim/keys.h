/* Synthetic keys.
 *
 * Real attention keys are roughly normal per channel with a few outlier
 * channels of much larger magnitude.  Each key stream (token keys of a layer
 * kind, compressed entries, indexer keys) has a seeded table of such rows;
 * the key of a token is a table row picked, scaled by a power of two (2^-2 ..
 * 2^2) and sign-flipped by a hash of the token's *content key*.  Scaling by a
 * power of two and flipping the sign are exact in bf16, so a key is a pure
 * function of (seed, stream, content key): the verifier re-derives the bf16
 * original of any token it samples.
 *
 * Content keys: a token inside the shareable prefix of a trace prompt (full
 * 512-token hash blocks) is identified by its block's hash id and position, so
 * requests that share a prefix have identical keys there (and may share the
 * pages); every other token by the request and position. */
#ifndef DSV4KV_SIM_KEYS_H
#define DSV4KV_SIM_KEYS_H

#include <stdint.h>

#include "workload.h"

typedef struct {
  uint16_t *rows; /* bf16 [nrows, dim] */
  int32_t nrows, dim;
  uint64_t salt;
} sim_keytable;

/* nrows must be a power of two.  Returns 0, or -1 out of memory. */
int sim_keytable_init(sim_keytable *t, int32_t nrows, int32_t dim, uint64_t seed, uint64_t stream);
void sim_keytable_free(sim_keytable *t);

/* The bf16 key of `content` (dim values) into out. */
void sim_keytable_row(const sim_keytable *t, uint64_t content, uint16_t *out);
/* Starts loading the table row sim_keytable_row(t, content, ...) reads (a
 * hint: the rows are random, the loops that make keys know the next). */
void sim_keytable_prefetch(const sim_keytable *t, uint64_t content);

/* Content key of token `pos` of request `uid`. */
uint64_t sim_token_content(const sim_request_spec *r, int32_t uid, int32_t pos);

/* Content key of compressed entry `entry` (tokens [entry*ratio, entry*ratio + ratio)). */
uint64_t sim_entry_content(const sim_request_spec *r, int32_t uid, int32_t entry, int32_t ratio);

#endif
