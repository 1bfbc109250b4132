/* quantize_and_insert_k_cache: argument checks and backend dispatch (SPEC §3). */
#include "backend.h"
#include "formats/records.h"

dsv4kv_status dsv4kv_quantize_and_insert_k_cache(const DLTensor *k, const DLTensor *k_cache,
                                                 const dsv4kv_cache_desc *cache,
                                                 const DLTensor *slot_mapping,
                                                 const dsv4kv_options *opt) {
  insert_args a;
  tview cache_tv;
  dsv4kv_status st;
  if ((st = tview_make_rows(&a.k, k, "k", DT_BF16, 2, HEAD_DIM))) return st;
  if ((st = tview_make_slots(&a.slots, slot_mapping, "slot_mapping", &a.k, "k"))) return st;
  a.T = a.slots.shape[0];
  if ((st = cache_view_make(&a.cache, &cache_tv, k_cache, cache, MAIN_CACHE_RECORDS))) return st;

  const tview *v[] = {&a.k, &a.slots, &cache_tv};
  const char *n[] = {"k", "slot_mapping", "k_cache"};
  if ((st = tview_outputs_apart(v, n, 2, 3))) return st; /* the cache against k and the slots */
  return op_dispatch(OP_INSERT, &a, v, n, 3, opt);
}
