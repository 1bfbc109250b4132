/* What src/ops/ hands a backend once every argument is checked: raw
 * pointers, 64-bit extents and strides.  Index VALUES read from tensors are
 * still untrusted: backends bounds-check each one (SPEC §7). */
#ifndef DSV4KV_BACKEND_H
#define DSV4KV_BACKEND_H

#include "internal.h"

typedef struct {
  tview k;            /* bf16 [T_k, 512] or [T_k, 128] (indexer), last dim contiguous */
  tview slots;        /* int64 [T] */
  int64_t T;
  cache_view cache;
} insert_args;

typedef struct {
  tview out;          /* bf16 [R_out, max_tokens, 512] */
  tview seq_lens;     /* int32 [R] */
  tview gather_lens;  /* int32 [R]; data NULL when absent */
  int has_gather_lens;
  tview block_table;  /* int32 [R_bt, max_pages] */
  int64_t R;
  int64_t offset;
  cache_view cache;
} gather_args;

typedef struct {
  tview topk, req, block_table, valid, global_out, lens_out;
  int64_t T, K, R, P;
  int32_t block_size;
} global_topk_args;

typedef struct {
  tview topk, qsl, seq_lens, gather_lens, combined, lens;
  int64_t T, R, C;
  int32_t window_size, compress_ratio, topk_n, M, N;
} combine_args;

typedef struct {
  tview dswa, dcomp, dcomp_lens, dvalid, ptopk, qsl, seq_lens, replay, req, swa_bt, comp_bt, out, lens;
  int has_dcomp, has_dcomp_lens, has_dvalid, local;
  int64_t D, P, S, Dk, K4, Wp, R, n_req_ids;
  int32_t swa_bs, swa_span, c_bs, c_span, window_size, compress_ratio, topk;
} flashinfer_args;

typedef struct {
  tview k_pre, positions, cos_sin, weight, slots;
  dt_kind cos_sin_dt, weight_dt;
  int64_t T;
  float eps;
  int32_t compress_ratio;
  cache_view cache;
} indexer_args;

/* CPU backend (src/cpu/). */
dsv4kv_status cpu_quantize_insert(const insert_args *a, const run_opts *o, skiplog *log,
                                  int64_t *nonfinite);
dsv4kv_status cpu_gather(const gather_args *a, const run_opts *o, skiplog *log);
dsv4kv_status cpu_global_topk(const global_topk_args *a, const run_opts *o, skiplog *log);
dsv4kv_status cpu_combine(const combine_args *a, const run_opts *o, skiplog *log);
dsv4kv_status cpu_flashinfer(const flashinfer_args *a, const run_opts *o, skiplog *log);
dsv4kv_status cpu_indexer_store(const indexer_args *a, const run_opts *o, skiplog *log,
                                int64_t *nonfinite);

/* Rows that must not write because a later WRITING row names the same slot
 * (so the result is the sequential one whatever the thread count).  With
 * `positions` non-NULL (the indexer), only rows at a group boundary
 * ((pos + 1) % ratio == 0, pos >= 0, RoPE row pos/ratio*ratio < cs_rows)
 * write.  Returns a malloc'd mask of T bytes (1 = skip), or NULL with
 * *oom = 1 on failure; NULL with *oom = 0 when there is no duplicate. */
uint8_t *duplicate_slot_losers(const tview *slots, int64_t T, const tview *positions, int64_t ratio,
                               int64_t cs_rows, int *oom);

#endif
