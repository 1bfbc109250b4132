/* indexer_k_norm_rope_store: checks and dispatch (SPEC §6). */
#include <math.h>

#include "backend.h"
#include "formats/records.h"

dsv4kv_status dsv4kv_indexer_k_norm_rope_store(const DLTensor *k_pre, const DLTensor *positions,
                                               const DLTensor *cos_sin_cache,
                                               const DLTensor *rms_norm_weight, float eps,
                                               const DLTensor *k_cache,
                                               const dsv4kv_cache_desc *cache,
                                               const DLTensor *kv_slot_mapping,
                                               int32_t compress_ratio,
                                               const dsv4kv_options *opt) {
  indexer_args a = {0};
  tview cache_tv;
  dsv4kv_status st;
  if ((st = tview_make_rows(&a.k_pre, k_pre, "k_pre", DT_BF16, 2, INDEXER_DIM))) return st;
  if ((st = tview_make_slots(&a.slots, kv_slot_mapping, "kv_slot_mapping", &a.k_pre, "k_pre"))) return st;
  a.T = a.slots.shape[0];
  if ((st = tview_make(&a.positions, positions, "positions", DT_I64, 1))) return st;
  if ((st = tview_dim_ge(&a.positions, "positions", 0, a.T))) return st;
  if ((st = tview_make_f32_or_bf16(&a.cos_sin, cos_sin_cache, "cos_sin_cache", 2, &a.cos_sin_dt))) return st;
  if ((st = tview_dim_eq(&a.cos_sin, "cos_sin_cache", 1, INDEXER_DIM - INDEXER_ROPE_FROM))) return st;
  if ((st = tview_last_contiguous(&a.cos_sin, "cos_sin_cache"))) return st;
  if ((st = tview_make_f32_or_bf16(&a.weight, rms_norm_weight, "rms_norm_weight", 1, &a.weight_dt))) return st;
  if ((st = tview_dim_eq(&a.weight, "rms_norm_weight", 0, INDEXER_DIM))) return st;
  if (!(eps >= 0.0f) || isinf(eps))
    return dsv4kv_fail(DSV4KV_ERR_VALUE, "eps = %g; must be finite and >= 0", (double)eps);
  a.eps = eps;
  if (compress_ratio < 1)
    return dsv4kv_fail(DSV4KV_ERR_VALUE, "compress_ratio = %d; must be >= 1", compress_ratio);
  a.compress_ratio = compress_ratio;
  if ((st = cache_view_make(&a.cache, &cache_tv, k_cache, cache, INDEXER_CACHE_RECORDS))) return st;

  const tview *v[] = {&a.k_pre, &a.positions, &a.cos_sin, &a.weight, &cache_tv, &a.slots};
  const char *n[] = {"k_pre", "positions", "cos_sin_cache", "rms_norm_weight", "k_cache",
                     "kv_slot_mapping"};
  const tview *w[] = {v[0], v[1], v[2], v[3], v[5], v[4]}; /* the cache against every input */
  const char *wn[] = {n[0], n[1], n[2], n[3], n[5], n[4]};
  if ((st = tview_outputs_apart(w, wn, 5, 6))) return st;
  return op_dispatch(OP_INDEXER_STORE, &a, v, n, 6, opt);
}
