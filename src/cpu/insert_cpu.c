/* CPU quantize_and_insert_k_cache (SPEC §3): OpenMP threads own pages, each
 * record by the scalar reference (formats/ref.h) or the processor's SIMD
 * path (byte-identical). */
#include <omp.h>
#include <stdlib.h>

#include "cpu/cpu.h"
#include "formats/ref.h"

dsv4kv_status cpu_insert(const insert_args *a, const exec_opts *o, dsv4kv_report *r) {
  const cache_view *c = &a->cache;
  const int64_t bs = c->block_size;
  const int64_t num_slots = c->num_pages * bs; /* <= 2^63 / stride, no overflow */
  const int fnuz = c->fp8 == DSV4KV_FP8_FNUZ;
  const int nt = cpu_threads(o, a->T, 64);
  const int simd = cpu_path_now() == CPU_PATH_AVX512;
  int64_t nonfinite = 0;

  /* Each thread owns the pages p with p % team == its number and writes the
   * rows of those pages in row order: rows naming one slot meet on one
   * thread, so the later row wins as in a sequential loop, with no sort of
   * the slots (a qsort per call cost about as much as the quantization at
   * 64k tokens).  Every thread reads the whole slot_mapping (8 B a row). */
#pragma omp parallel num_threads(nt) if (nt > 1) reduction(+ : nonfinite)
  {
    const int64_t me = omp_get_thread_num(), team = omp_get_num_threads();
    for (int64_t t = 0; t < a->T; t++) {
      const int64_t slot = tv_i64_1(&a->slots, t);
      if (slot == -1) continue;
      if (slot < 0 || slot >= num_slots) {
        if (me == 0) cpu_note(r, t, SKIP_SLOT, t, slot, num_slots, 0, 0, 0);
        continue;
      }
      const int64_t pg = slot / bs;
      if (pg % team != me) continue;
      const uint16_t *x = (const uint16_t *)(a->k.data + t * a->k.stride[0] * 2);
      /* Counted for every row with a valid slot, also one a later row
       * overwrites, so the count never depends on the thread count. */
      if (o->check_nonfinite) nonfinite += count_nonfinite_bf16(x, HEAD_DIM);
      uint8_t *page = c->base + pg * c->page_stride;
      const int64_t p = slot % bs;
      uint8_t *values = page + record_values_off(&c->layout, bs, p), *scales = page + record_scales_off(&c->layout, bs, p);
      if (!(simd && record_quant_avx512(c->record, fnuz, x, values, scales)))
        record_quant_ref(c->record, fnuz, x, values, scales);
    }
  }
  r->nonfinite = nonfinite;
  return DSV4KV_OK;
}
