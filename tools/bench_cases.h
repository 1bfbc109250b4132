/*
 * bench_cases.h - the configurations `dsv4kv bench` times: one op, one
 * record, one size, with inputs built on the host (random keys, shuffled
 * pages, random top-k entries in range) and the compulsory bytes counted as
 * the reference's anchor counts them (../shared/anchors/triton-h200.md):
 *
 *   insert       N x (1024 B bf16 key + 8 B slot + record written)
 *   gather       tokens x (record read + 1024 B bf16 row written)
 *   global top-k T x topk x (4 B read + 4 B written) + request id, flag, length
 *   combine      T x (topk x 4 B read + (topk + window) x 4 B written + 4 B)
 *   flashinfer   T x (window + K4) x 4 B written + lengths + the entries read
 *   indexer      T x (256 B key + 16 B position and slot + 256 B cos/sin row
 *                + record written)
 */
#ifndef DSV4KV_TOOLS_BENCH_CASES_H
#define DSV4KV_TOOLS_BENCH_CASES_H

#include <stddef.h>
#include <stdint.h>

#include "opcall.h"

enum { BENCH_MAX_BUFS = 16 };
#define BENCH_DISTINCT_SUFFIX ", distinct slots"
#define BENCH_WIDE_COLUMNS 2048 /* an engine's block table: it spans the longest sequence served */

typedef struct {
  char name[96];     /* the anchor's config name, e.g. "insert_v4 N=4096" */
  const char *op;    /* insert, gather, global_topk, combine, flashinfer, indexer */
  const char *record;/* v4, mxfp8, nvfp4, fp8, mxfp4, or "" */
  const char *size;  /* decode, prefill, large */
  int64_t tokens;    /* rows processed */
  int64_t bytes;     /* compulsory bytes (see above) */
  int distinct_slots;/* the call passes options.distinct_slots (the name ends
                        in BENCH_DISTINCT_SUFFIX): GPU inserts and indexer
                        store without their duplicate resolution; the CPU
                        bench leaves these configurations out */
  int64_t table_columns; /* global top-k, flashinfer: the block table's columns
                            when widened to BENCH_WIDE_COLUMNS (the name ends in
                            ", table of N columns"; entries still in the first
                            few), else 0 */
  opcall call;
  /* storage */
  void *bufs[BENCH_MAX_BUFS];
  int nbufs;
  DLTensor t[BENCH_MAX_BUFS];
  int64_t shapes[BENCH_MAX_BUFS][3];
  int nt;
  dsv4kv_cache_desc desc;
  dsv4kv_flashinfer_args fi;
} bench_case;

/* Builds configuration `index` of the list (0, 1, ... until it returns 0)
 * when it matches the filters (NULL = any; size: decode, prefill, large).
 * Returns 1 and fills *c (inputs allocated) when it matches, -1 when it does
 * not, 0 past the end, -2 out of memory. */
/* Whether configuration `index` passes the filters, without building it:
 * 1 yes, -1 no, 0 past the end. */
int bench_case_matches(int index, const char *op, const char *record, const char *size);
int bench_case_make(int index, const char *op, const char *record, const char *size, bench_case *c);
void bench_case_free(bench_case *c);

#endif /* DSV4KV_TOOLS_BENCH_CASES_H */
