/* Reports into statuses and messages (host side of the skip record). */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"
#include "report.h"

void report_init(dsv4kv_report *r, op_id op) {
  memset(r, 0, sizeof *r);
  r->first_key = INT64_MAX;
  r->op = op;
}

/* Whether r could have been written by a call: counts >= 0, a known op and
 * reason (a zeroed report is one: nothing counted). */
static int report_plausible(const dsv4kv_report *r) {
  return r->skipped >= 0 && r->nonfinite >= 0 && r->op >= OP_NONE && r->op <= OP_INDEXER_STORE &&
         r->reason >= SKIP_NONE && r->reason <= SKIP_LENGTH_CLAMPED;
}

dsv4kv_status dsv4kv_report_status(const dsv4kv_report *r) {
  if (!r) return DSV4KV_ERR_NULL;
  if (!report_plausible(r))
    return dsv4kv_fail(DSV4KV_ERR_VALUE, "report: skipped %" PRId64 ", nonfinite %" PRId64 ", op %d, reason %d: "
                       "not a report a call wrote (negative count or unknown op / reason)",
                       r->skipped, r->nonfinite, (int)r->op, (int)r->reason);
  if (r->skipped > 0) return DSV4KV_WARN_SKIPPED;
  if (r->nonfinite > 0) return DSV4KV_WARN_NONFINITE;
  return DSV4KV_OK;
}

/* The sentence naming the first skipped entry. */
static int skip_sentence(const dsv4kv_report *r, char *buf, size_t len) {
  /* (a garbage report can carry any values; the sentence is sized for six
   * 20-digit numbers, see dsv4kv_report_message) */
  const int64_t *v = r->values;
  const char *slots = r->op == OP_INDEXER_STORE ? "kv_slot_mapping" : "slot_mapping";
  switch ((skip_reason)r->reason) {
    case SKIP_NONE: break;
    case SKIP_SLOT:
      return snprintf(buf, len, "%s[%" PRId64 "] = %" PRId64 " is outside k_cache's slots [0, %" PRId64 ")",
                      slots, v[0], v[1], v[2]);
    case SKIP_LEN_NEGATIVE:
      return snprintf(buf, len, "%s[%" PRId64 "] = %" PRId64 " is negative",
                      v[2] ? "gather_lens" : "seq_lens", v[0], v[1]);
    case SKIP_LEN_PAST_SEQ:
      return snprintf(buf, len, "request %" PRId64 ": gather length %" PRId64 " exceeds seq_lens[%" PRId64 "] = %" PRId64,
                      v[0], v[1], v[0], v[2]);
    case SKIP_OUT_ROWS:
      return snprintf(buf, len, "request %" PRId64 ": %" PRId64 " tokens would land at out rows from offset %" PRId64
                      " + %" PRId64 ", past out's %" PRId64 " rows", v[0], v[1], v[2], v[3], v[4]);
    case SKIP_GATHER_COLUMN:
      return snprintf(buf, len, "request %" PRId64 ": position %" PRId64 " needs block_table[%" PRId64 "][%" PRId64
                      "], past its %" PRId64 " columns", v[0], v[1], v[0], v[2], v[3]);
    case SKIP_GATHER_PAGE:
      return snprintf(buf, len, "block_table[%" PRId64 "][%" PRId64 "] = %" PRId64 " is outside k_cache's pages [0, %" PRId64 ")",
                      v[0], v[1], v[2], v[3]);
    case SKIP_TOPK_REQUEST:
      return snprintf(buf, len, "token_to_req_indices[%" PRId64 "] = %" PRId64 " is outside block_table's %" PRId64 " rows",
                      v[0], v[1], v[2]);
    case SKIP_TOPK_COLUMN:
      return snprintf(buf, len, "topk_indices[%" PRId64 "][%" PRId64 "] = %" PRId64 " needs block_table[%" PRId64 "][%" PRId64
                      "], past its %" PRId64 " columns", v[0], v[1], v[2], v[3], v[4], v[5]);
    case SKIP_COMBINE_ROWS:
      return snprintf(buf, len, "request %" PRId64 ": tokens [%" PRId64 ", %" PRId64
                      ") from query_start_loc reach outside topk_indices' %" PRId64 " rows", v[0], v[1], v[2], v[3]);
    case SKIP_TABLE_LOOKUP:
      return snprintf(buf, len, "%s[%" PRId64 "][%" PRId64 "] (position %" PRId64 ") is outside its [%" PRId64 ", %" PRId64 "] shape",
                      v[0] ? "compressed_block_table" : "swa_block_table", v[1], v[2], v[3], v[4], v[5]);
    case SKIP_FLASHINFER_REQUEST:
      return snprintf(buf, len, "token_to_req_indices[%" PRId64 "] = %" PRId64 " is outside the %" PRId64 " requests",
                      v[0], v[1], v[2]);
    case SKIP_POSITION_NEGATIVE:
      return snprintf(buf, len, "positions[%" PRId64 "] = %" PRId64 " is negative", v[0], v[1]);
    case SKIP_LENGTH_CLAMPED: {
      static const char *const part[] = {"top-k part", "sliding-window part", "compressed", "top-k part"};
      static const char *const why[] = {
          "its position is before 0: query_start_loc and seq_lens disagree",
          "gather_lens is shorter than the query",
          "decode_compressed_topk_lens is outside the width of decode_compressed_indices",
          "prefill_topk_indices is narrower than the top-k length"};
      int k = v[1] >= 0 && v[1] <= 3 ? (int)v[1] : 0;
      return snprintf(buf, len, "row %" PRId64 " (request %" PRId64 "): its %s length %" PRId64 " is outside [0, %" PRId64
                      "] (%s); %" PRId64 " written", v[0], v[4], part[k], v[2], v[5], why[k], v[3]);
    }
    case SKIP_COS_SIN_ROW:
      return snprintf(buf, len, "positions[%" PRId64 "] = %" PRId64 " needs cos_sin_cache row %" PRId64 ", past its %" PRId64 " rows",
                      v[0], v[1], v[2], v[3]);
  }
  return snprintf(buf, len, "an entry was out of range (reason %d)", (int)r->reason);
}

size_t dsv4kv_report_message(const dsv4kv_report *r, char *buf, size_t len) {
  char first[512];
  if (!buf) len = 0; /* a NULL buffer only asks for the length */
  int n = 0;
  if (!r) {
    n = snprintf(buf, len, "report is NULL");
  } else if (!report_plausible(r)) {
    n = snprintf(buf, len, "not a report a call wrote (skipped %" PRId64 ", nonfinite %" PRId64 ", op %d, reason %d)",
                 r->skipped, r->nonfinite, (int)r->op, (int)r->reason);
  } else if (r->skipped > 0) {
    skip_sentence(r, first, sizeof first);
    if (r->skipped == 1)
      n = snprintf(buf, len, "1 entry skipped: %s", first);
    else
      n = snprintf(buf, len, "%" PRId64 " entries skipped; the first: %s", r->skipped, first);
  } else if (r->nonfinite > 0) {
    if (r->op == OP_INDEXER_STORE)
      n = snprintf(buf, len, "k_pre: %" PRId64 " non-finite values (NaN/Inf inputs, and rows whose RMSNorm "
                   "overflowed or was 0 / 0); stored as the reference stores them", r->nonfinite);
    else
      n = snprintf(buf, len, "%s holds %" PRId64 " NaN/Inf values; stored as the reference stores them",
                   r->op == OP_INSERT ? "k" : "the input", r->nonfinite);
  } else if (len > 0) {
    buf[0] = '\0';
  }
  return n < 0 ? 0 : (size_t)n;
}
