/* A call's report as the kernels fill it: plain data (dsv4kv_report), so a
 * GPU kernel can fill it with atomics and the host turns it into the message
 * afterwards.  Nothing here formats text or depends on a backend. */
#ifndef DSV4KV_REPORT_H
#define DSV4KV_REPORT_H

#include <stdint.h>

#include "dsv4kv.h"
#include "formats/hd.h"

/* dsv4kv_report.op: which entry point wrote the report. */
typedef enum {
  OP_NONE = 0,
  OP_INSERT = 1,
  OP_GATHER = 2,
  OP_GLOBAL_TOPK = 3,
  OP_COMBINE = 4,
  OP_FLASHINFER = 5,
  OP_INDEXER_STORE = 6
} op_id;

/* dsv4kv_report.reason, with the meaning of values[] for each. */
typedef enum {
  SKIP_NONE = 0,
  SKIP_SLOT = 1,              /* row, slot, number of slots                     */
  SKIP_LEN_NEGATIVE = 2,      /* request, length, 1 = gather_lens / 0 = seq_lens */
  SKIP_LEN_PAST_SEQ = 3,      /* request, gather length, seq_len                */
  SKIP_OUT_ROWS = 4,          /* request, tokens, offset, first index, out rows */
  SKIP_GATHER_COLUMN = 5,     /* request, position, page number, table columns  */
  SKIP_GATHER_PAGE = 6,       /* request, page number, page id, cache pages     */
  SKIP_TOPK_REQUEST = 7,      /* token, request id, block-table rows            */
  SKIP_TOPK_COLUMN = 8,       /* token, column, local index, request, page number, columns */
  SKIP_COMBINE_ROWS = 9,      /* request, first token, end token, rows          */
  SKIP_TABLE_LOOKUP = 10,     /* 0 = swa / 1 = compressed table, request, page number,
                                 position, table rows, table columns            */
  SKIP_FLASHINFER_REQUEST = 11, /* token, request id, requests                  */
  SKIP_POSITION_NEGATIVE = 12,  /* row, position                                */
  SKIP_COS_SIN_ROW = 13,        /* row, position, RoPE row, cos_sin_cache rows  */
  SKIP_LENGTH_CLAMPED = 14      /* row, length_part, computed, written, request, limit */
} skip_reason;

/* values[1] of SKIP_LENGTH_CLAMPED: which length was clamped. */
typedef enum {
  LEN_TOPK_BEFORE_START = 0, /* the top-k part ((pos + 1) / compress_ratio) of a position before 0 */
  LEN_SWA_NEGATIVE = 1,      /* combine: the sliding-window part, gather_lens too short  */
  LEN_DECODE_COMPRESSED = 2,/* flashinfer decode: decode_compressed_topk_lens[row]      */
  LEN_PREFILL_TOPK_WIDTH = 3      /* flashinfer prefill: the top-k part, past prefill_topk_indices' width */
} length_part;

/* Ordering key of a skipped entry: (major, minor) with minor saturated at
 * 2^bits - 1; unsigned arithmetic, so no overflow whatever the values.  The
 * report keeps the entry with the lowest key, so the message names the same
 * entry whatever the thread count or the GPU's schedule. */
static DSV4KV_HD int64_t skip_key(int64_t major, int64_t minor, int bits) {
  uint64_t lim = ((uint64_t)1 << bits) - 1, lim_major = ((uint64_t)1 << (63 - bits)) - 1;
  uint64_t m = minor < 0 ? 0 : (uint64_t)minor > lim ? lim : (uint64_t)minor;
  uint64_t M = major < 0 ? 0 : (uint64_t)major > lim_major ? lim_major : (uint64_t)major;
  return (int64_t)((M << bits) | m); /* every bit kept: no two entries tie */
}

/* An empty report of op `op`. */
void report_init(dsv4kv_report *r, op_id op);

#endif
