/* dequantize_and_gather_k_cache and gather_num_workers: checks and dispatch (SPEC §4). */
#include "backend.h"
#include "formats/records.h"

dsv4kv_status dsv4kv_dequantize_and_gather_k_cache(const DLTensor *out, const DLTensor *k_cache,
                                                   const dsv4kv_cache_desc *cache,
                                                   const DLTensor *seq_lens,
                                                   const DLTensor *gather_lens,
                                                   const DLTensor *block_table, int64_t offset,
                                                   const dsv4kv_options *opt) {
  gather_args a = {0};
  tview cache_tv;
  dsv4kv_status st;
  if ((st = tview_make_rows(&a.out, out, "out", DT_BF16, 3, HEAD_DIM))) return st;
  if ((st = tview_output(&a.out, "out"))) return st;
  if ((st = cache_view_make(&a.cache, &cache_tv, k_cache, cache, MAIN_CACHE_RECORDS))) return st;
  if ((st = tview_apart_from_input(&a.out, "out", &cache_tv, "k_cache"))) return st;
  if ((st = tview_make(&a.seq_lens, seq_lens, "seq_lens", DT_I32, 1))) return st;
  a.R = a.seq_lens.shape[0];
  if (gather_lens) {
    if ((st = tview_make(&a.gather_lens, gather_lens, "gather_lens", DT_I32, 1))) return st;
    if ((st = tview_dim_eq(&a.gather_lens, "gather_lens", 0, a.R))) return st;
    a.has_gather_lens = 1;
  }
  if ((st = tview_make(&a.block_table, block_table, "block_table", DT_I32, 2))) return st;
  if ((st = tview_dim_ge(&a.block_table, "block_table", 0, a.R))) return st;
  if ((st = tview_dim_ge(&a.out, "out", 0, a.R))) return st;
  if (offset < 0)
    return dsv4kv_fail(DSV4KV_ERR_VALUE, "offset = %lld; must be >= 0", (long long)offset);
  a.offset = offset;

  const tview *v[] = {&a.out, &cache_tv, &a.seq_lens, a.has_gather_lens ? &a.gather_lens : NULL,
                      &a.block_table};
  const char *n[] = {"out", "k_cache", "seq_lens", "gather_lens", "block_table"};
  const tview *w[] = {v[2], v[3], v[4], &a.out}; /* out against the index inputs (k_cache: above) */
  const char *wn[] = {n[2], n[3], n[4], n[0]};
  if ((st = tview_outputs_apart(w, wn, 3, 4))) return st;
  return op_dispatch(OP_GATHER, &a, v, n, 5, opt);
}

int32_t dsv4kv_gather_num_workers(int64_t max_gather_len) {
  if (max_gather_len < 0) return 128;
  int64_t w = max_gather_len / 8 + (max_gather_len % 8 != 0);
  return (int32_t)(w < 128 ? 128 : w > 8192 ? 8192 : w);
}
