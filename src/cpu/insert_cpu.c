/* CPU quantize_and_insert_k_cache: one token per iteration, OpenMP over tokens. */
#include <inttypes.h>
#include <stdlib.h>

#include "backend.h"
#include "cpu/quant.h"
#include "formats/records.h"

dsv4kv_status cpu_quantize_insert(const insert_args *a, const run_opts *o, skiplog *log,
                                  int64_t *nonfinite_out) {
  const cache_view *c = &a->cache;
  const int64_t bs = c->block_size;
  const int64_t num_slots = c->num_pages * bs; /* <= 2^63 / stride, no overflow */
  int oom = 0;
  const int nt = threads_for(o, a->T, 64);
  uint8_t *losers = nt > 1 ? duplicate_slot_losers(&a->slots, a->T, NULL, 1, 0, &oom) : NULL;
  if (oom) return dsv4kv_fail(DSV4KV_ERR_ALLOC, "out of memory checking slot_mapping for duplicates");
  int64_t nonfinite = 0;

#pragma omp parallel for schedule(static) num_threads(nt) if (nt > 1) reduction(+ : nonfinite)
  for (int64_t t = 0; t < a->T; t++) {
    int64_t slot = tv_i64_1(&a->slots, t);
    if (slot == -1) continue;
    if (slot < 0 || slot >= num_slots) {
      skiplog_note(log, t, "slot_mapping[%" PRId64 "] = %" PRId64 " is outside k_cache's slots [0, %" PRId64 ")",
                   t, slot, num_slots);
      continue;
    }
    const uint16_t *x = (const uint16_t *)(a->k.data + t * a->k.stride[0] * 2);
    /* Counted for every row with a valid slot, also one a later row overwrites,
     * so the count never depends on the thread count. */
    if (o->check_nonfinite) nonfinite += count_nonfinite_bf16(x, HEAD_DIM);
    if (losers && losers[t]) continue;
    uint8_t *page = c->base + (slot / bs) * c->page_stride;
    int64_t p = slot % bs;
    switch (c->record) {
      case DSV4KV_RECORD_V4:
        quant_v4_record(x, c->fp8, page + v4_data_off(p), page + v4_scale_off(bs, p));
        break;
      case DSV4KV_RECORD_MXFP8:
        quant_mxfp8_record(x, c->fp8, page + mxfp8_off(p));
        break;
      default:
        quant_nvfp4_record(x, page + nvfp4_off(p));
        break;
    }
  }
  free(losers);
  *nonfinite_out = nonfinite;
  return DSV4KV_OK;
}
