/* Token records of the caches (SPEC §2, §6): byte sizes and where each part
 * of a token lives inside its page.  Shared by every backend. */
#ifndef DSV4KV_RECORDS_H
#define DSV4KV_RECORDS_H

#include <stdint.h>

#include "dsv4kv.h"

enum {
  HEAD_DIM = 512,      /* main K row: 448 NoPE + 64 RoPE dims */
  NOPE_DIM = 448,
  ROPE_DIM = 64,
  INDEXER_DIM = 128,   /* indexer K row */
  INDEXER_ROPE_FROM = 64,

  /* V4, 584 B: [bs x (448 e4m3 + 64 bf16)] [bs x 8 scale bytes] per page */
  V4_DATA_BYTES = 576,
  V4_SCALE_BYTES = 8,  /* 7 UE8M0 (one per 64 NoPE dims) + 1 zero pad */
  V4_BLOCK = 64,
  V4_NUM_SCALES = 7,
  V4_RECORD = V4_DATA_BYTES + V4_SCALE_BYTES,

  /* MXFP8, 528 B token-major: 512 e4m3 then 16 UE8M0 (one per 32 dims) */
  MXFP8_BLOCK = 32,
  MXFP8_NUM_SCALES = 16,
  MXFP8_RECORD = HEAD_DIM + MXFP8_NUM_SCALES,

  /* NVFP4, 288 B token-major: 256 bytes of e2m1 pairs then 32 e4m3 scales */
  NVFP4_BLOCK = 16,
  NVFP4_NUM_SCALES = 32,
  NVFP4_RECORD = HEAD_DIM / 2 + NVFP4_NUM_SCALES,

  /* Indexer caches: [bs x values][bs x 4 scale bytes] per page */
  IDX_FP8_VALUES = 128,
  IDX_FP4_VALUES = 64,
  IDX_SCALE_BYTES = 4,
  IDX_FP8_RECORD = IDX_FP8_VALUES + IDX_SCALE_BYTES,
  IDX_FP4_RECORD = IDX_FP4_VALUES + IDX_SCALE_BYTES,
  IDX_FP4_BLOCK = 32,
  IDX_TILE = 16        /* tiled FP8 layout: 16 positions x 16 bytes */
};

_Static_assert(V4_RECORD == 584, "V4 record is 584 bytes");
_Static_assert(MXFP8_RECORD == 528, "MXFP8 record is 528 bytes");
_Static_assert(NVFP4_RECORD == 288, "NVFP4 record is 288 bytes");
_Static_assert(IDX_FP8_RECORD == 132, "indexer FP8 record is 132 bytes");
_Static_assert(IDX_FP4_RECORD == 68, "indexer MXFP4 record is 68 bytes");
_Static_assert(V4_NUM_SCALES * V4_BLOCK == NOPE_DIM, "V4 scales cover the NoPE dims");

/* Byte offset, inside its page, of the values of token position p. */
static inline int64_t v4_data_off(int64_t p) { return p * V4_DATA_BYTES; }
static inline int64_t v4_scale_off(int64_t bs, int64_t p) { return bs * V4_DATA_BYTES + p * V4_SCALE_BYTES; }
static inline int64_t mxfp8_off(int64_t p) { return p * MXFP8_RECORD; }
static inline int64_t nvfp4_off(int64_t p) { return p * NVFP4_RECORD; }
static inline int64_t idx_values_off(int64_t p, int64_t values) { return p * values; }
static inline int64_t idx_scale_off(int64_t bs, int64_t p, int64_t values) {
  return bs * values + p * IDX_SCALE_BYTES;
}
/* Tiled FP8 indexer layout (SPEC §6): dim d of position p. */
static inline int64_t idx_tiled_off(int64_t p, int64_t d) {
  return (p / IDX_TILE) * IDX_TILE * IDX_FP8_VALUES + (d / IDX_TILE) * (IDX_TILE * IDX_TILE) +
         (p % IDX_TILE) * IDX_TILE + d % IDX_TILE;
}

#endif
