/* Token records of the caches (SPEC §2, §6): ONE table of every record's
 * geometry, and the offset helpers every kernel takes its in-record offsets
 * from.  Host and device (formats/hd.h). */
#ifndef DSV4KV_RECORDS_H
#define DSV4KV_RECORDS_H

#include <stdint.h>

#include "dsv4kv.h"
#include "formats/hd.h"

enum {
  HEAD_DIM = DSV4KV_HEAD_DIM, /* main K row: 448 NoPE + 64 RoPE dims */
  NOPE_DIM = DSV4KV_NOPE_DIM,
  ROPE_DIM = DSV4KV_ROPE_DIM,
  INDEXER_DIM = DSV4KV_INDEXER_HEAD_DIM,
  INDEXER_ROPE_FROM = 64, /* indexer dims 64..127 are rotated (0..63 with cos 1, sin 0) */
  IDX_TILE = 16           /* tiled FP8 indexer layout: 16 positions x 16 bytes */
};

/* How a record's scales are stored. */
typedef enum {
  SCALE_UE8M0 = 0,     /* one byte 2^(e-127) per block                         */
  SCALE_E4M3 = 1,      /* one e4m3 byte per block (NVFP4)                      */
  SCALE_FP32_POW2 = 2  /* one little-endian fp32 2^e (4 UE8M0 copies with the
                          cache flag MX_SCALE)                                  */
} scale_kind;

/* Where a token's parts live in its page. */
typedef enum {
  PAGE_SPLIT = 0,      /* [block_size x values][block_size x scales]           */
  PAGE_TOKEN_MAJOR = 1 /* [block_size x (values, scales)]                      */
} page_org;

/* The table.  X(enum suffix, record bytes, value bytes, scale bytes,
 * elements per scale, number of scales, scale kind, page organisation).
 * V4's 576 value bytes are 448 e4m3 codes then 64 raw bf16; its 8 scale
 * bytes are 7 UE8M0 (one per 64 NoPE dims) and a zero pad.  NVFP4's and
 * MXFP4's values are e2m1 pairs, low nibble first. */
#define DSV4KV_RECORD_TABLE(X)                                        \
  X(V4, 584, 576, 8, 64, 7, SCALE_UE8M0, PAGE_SPLIT)                  \
  X(MXFP8, 528, 512, 16, 32, 16, SCALE_UE8M0, PAGE_TOKEN_MAJOR)       \
  X(NVFP4, 288, 256, 32, 16, 32, SCALE_E4M3, PAGE_TOKEN_MAJOR)        \
  X(INDEXER_FP8, 132, 128, 4, 128, 1, SCALE_FP32_POW2, PAGE_SPLIT)    \
  X(INDEXER_MXFP4, 68, 64, 4, 32, 4, SCALE_UE8M0, PAGE_SPLIT)

typedef struct {
  int32_t record_bytes, value_bytes, scale_bytes, elems_per_scale, num_scales;
  scale_kind scales;
  page_org org;
} record_layout;

/* Named constants of the table, e.g. V4_RECORD_BYTES, NVFP4_NUM_SCALES. */
#define DSV4KV_RECORD_ENUM(N, rec, val, sc, eps, ns, kind, org) \
  N##_RECORD_BYTES = rec, N##_VALUE_BYTES = val, N##_SCALE_BYTES = sc, N##_BLOCK = eps, N##_NUM_SCALES = ns,
enum { DSV4KV_RECORD_TABLE(DSV4KV_RECORD_ENUM) RECORD_TABLE_END_ };
#undef DSV4KV_RECORD_ENUM

/* Every row of the table adds up, and matches the public widths. */
#define DSV4KV_RECORD_CHECK(N, rec, val, sc, eps, ns, kind, org)                              \
  DSV4KV_STATIC_ASSERT(rec == val + sc, #N ": record = values + scales");                     \
  DSV4KV_STATIC_ASSERT(rec == DSV4KV_##N##_BYTES_PER_TOKEN, #N ": width as in dsv4kv.h");
DSV4KV_RECORD_TABLE(DSV4KV_RECORD_CHECK)
#undef DSV4KV_RECORD_CHECK
DSV4KV_STATIC_ASSERT((int)V4_NUM_SCALES * V4_BLOCK == (int)NOPE_DIM, "V4 scales cover the NoPE dims");
DSV4KV_STATIC_ASSERT((int)V4_VALUE_BYTES == (int)NOPE_DIM + 2 * (int)ROPE_DIM, "V4 values: e4m3 NoPE + bf16 RoPE");
DSV4KV_STATIC_ASSERT((int)MXFP8_NUM_SCALES * MXFP8_BLOCK == (int)HEAD_DIM, "MXFP8 scales cover the row");
DSV4KV_STATIC_ASSERT((int)NVFP4_NUM_SCALES * NVFP4_BLOCK == (int)HEAD_DIM, "NVFP4 scales cover the row");
DSV4KV_STATIC_ASSERT((int)INDEXER_MXFP4_NUM_SCALES * INDEXER_MXFP4_BLOCK == (int)INDEXER_DIM, "MXFP4 scales cover the row");
DSV4KV_STATIC_ASSERT((int)INDEXER_FP8_VALUE_BYTES == (int)INDEXER_DIM, "indexer FP8: one byte per dim");

/* The layout of `r`; 0 (and *layout untouched) for a value outside the enum. */
static DSV4KV_HD int record_layout_of(dsv4kv_record r, record_layout *layout) {
  switch (r) {
#define DSV4KV_RECORD_CASE(N, rec, val, sc, eps, ns, kind, org) \
  case DSV4KV_RECORD_##N: {                                     \
    record_layout l = {rec, val, sc, eps, ns, kind, org};       \
    *layout = l;                                                \
    return 1;                                                   \
  }
    DSV4KV_RECORD_TABLE(DSV4KV_RECORD_CASE)
#undef DSV4KV_RECORD_CASE
  }
  return 0;
}

/* Byte offsets, inside its page, of the values and of the scales of the
 * token at position p of a page of `bs` tokens. */
static DSV4KV_HD int64_t record_values_off(const record_layout *l, int64_t bs, int64_t p) {
  (void)bs;
  return l->org == PAGE_SPLIT ? p * l->value_bytes : p * l->record_bytes;
}
static DSV4KV_HD int64_t record_scales_off(const record_layout *l, int64_t bs, int64_t p) {
  return l->org == PAGE_SPLIT ? bs * l->value_bytes + p * l->scale_bytes
                              : p * l->record_bytes + l->value_bytes;
}

/* Tiled FP8 indexer layout (SPEC §6): byte of dim d of position p in its page. */
static DSV4KV_HD int64_t idx_tiled_off(int64_t p, int64_t d) {
  return (p / IDX_TILE) * IDX_TILE * INDEXER_FP8_VALUE_BYTES + (d / IDX_TILE) * (IDX_TILE * IDX_TILE) +
         (p % IDX_TILE) * IDX_TILE + d % IDX_TILE;
}

#endif
