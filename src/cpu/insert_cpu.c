/* CPU quantize_and_insert_k_cache (SPEC §3): one token per iteration, OpenMP
 * over tokens, each record by the scalar reference (formats/ref.h). */
#include <stdlib.h>

#include "cpu/cpu.h"
#include "formats/ref.h"

dsv4kv_status cpu_insert(const insert_args *a, const exec_opts *o, dsv4kv_report *r) {
  const cache_view *c = &a->cache;
  const int64_t bs = c->block_size;
  const int64_t num_slots = c->num_pages * bs; /* <= 2^63 / stride, no overflow */
  const int fnuz = c->fp8 == DSV4KV_FP8_FNUZ;
  int oom = 0;
  const int nt = cpu_threads(o, a->T, 64);
  const int simd = cpu_path_now() == CPU_PATH_AVX512;
  uint8_t *losers = nt > 1 ? duplicate_slot_losers(&a->slots, a->T, NULL, 1, 0, &oom) : NULL;
  if (oom) return dsv4kv_fail(DSV4KV_ERR_ALLOC, "out of memory checking slot_mapping for duplicates");
  int64_t nonfinite = 0;

#pragma omp parallel for schedule(static) num_threads(nt) if (nt > 1) reduction(+ : nonfinite)
  for (int64_t t = 0; t < a->T; t++) {
    int64_t slot = tv_i64_1(&a->slots, t);
    if (slot == -1) continue;
    if (slot < 0 || slot >= num_slots) {
      cpu_note(r, t, SKIP_SLOT, t, slot, num_slots, 0, 0, 0);
      continue;
    }
    const uint16_t *x = (const uint16_t *)(a->k.data + t * a->k.stride[0] * 2);
    /* Counted for every row with a valid slot, also one a later row overwrites,
     * so the count never depends on the thread count. */
    if (o->check_nonfinite) nonfinite += count_nonfinite_bf16(x, HEAD_DIM);
    if (losers && losers[t]) continue;
    uint8_t *page = c->base + (slot / bs) * c->page_stride;
    int64_t p = slot % bs;
    uint8_t *values = page + record_values_off(&c->layout, bs, p), *scales = page + record_scales_off(&c->layout, bs, p);
    if (!(simd && record_quant_avx512(c->record, fnuz, x, values, scales)))
      record_quant_ref(c->record, fnuz, x, values, scales);
  }
  free(losers);
  r->nonfinite = nonfinite;
  return DSV4KV_OK;
}
