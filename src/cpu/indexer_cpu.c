/* CPU indexer_k_norm_rope_store (SPEC §6): one token per iteration, OpenMP
 * over tokens; RMSNorm + RoPE and the quantizers are the scalar reference
 * (formats/ref.h), placed into the page by the record table. */
#include <omp.h>
#include <stdlib.h>

#include "cpu/cpu.h"
#include "formats/ref.h"

/* fp32 value of element i of a 1-D / row view of fp32 or bf16 (exact). */
static inline float load_f(const tview *v, dt_kind dt, int64_t off_elems) {
  return dt == DT_F32 ? *(const float *)(v->data + off_elems * 4)
                      : bf16_to_f32(*(const uint16_t *)(v->data + off_elems * 2));
}

static void store_fp8(const cache_view *c, uint8_t *page, int64_t p, const float *r) {
  uint8_t codes[INDEXER_DIM], ue;
  float scale;
  indexer_fp8_quant_ref(r, c->fp8 == DSV4KV_FP8_FNUZ, codes, &scale, &ue);
  if (c->flags & DSV4KV_CACHE_TILED)
    for (int d = 0; d < INDEXER_DIM; d++) page[idx_tiled_off(p, d)] = codes[d];
  else
    memcpy(page + record_values_off(&c->layout, c->block_size, p), codes, INDEXER_DIM);
  uint8_t *sc = page + record_scales_off(&c->layout, c->block_size, p);
  if (c->flags & DSV4KV_CACHE_MX_SCALE) {
    memset(sc, ue, INDEXER_FP8_SCALE_BYTES);
  } else {
    uint32_t bits = f32_bits(scale);
    for (int b = 0; b < 4; b++) sc[b] = (uint8_t)(bits >> (8 * b)); /* little-endian */
  }
}

dsv4kv_status cpu_indexer_store(const indexer_args *a, const exec_opts *o, dsv4kv_report *rep) {
  const cache_view *c = &a->cache;
  const int64_t bs = c->block_size;
  const int64_t num_slots = c->num_pages * bs;
  const int64_t cs_rows = a->cos_sin.shape[0];
  const int64_t cr = a->compress_ratio;
  float weight[INDEXER_DIM];
  for (int d = 0; d < INDEXER_DIM; d++) weight[d] = load_f(&a->weight, a->weight_dt, d * a->weight.stride[0]);
  const int nt = cpu_threads(o, a->T, 128);
  int64_t nonfinite = 0;

  /* Threads own pages (as the insert's, src/cpu/insert_cpu.c): the rows of
   * one slot meet on one thread in row order, so the last writing row wins
   * whatever the thread count. */
#pragma omp parallel num_threads(nt) if (nt > 1) reduction(+ : nonfinite)
  {
    const int64_t me = omp_get_thread_num(), team = omp_get_num_threads();
    for (int64_t t = 0; t < a->T; t++) {
      const int64_t slot = tv_i64_1(&a->slots, t);
      if (slot == -1) continue;
      if (slot < 0 || slot >= num_slots) {
        if (me == 0) cpu_note(rep, t, SKIP_SLOT, t, slot, num_slots, 0, 0, 0);
        continue;
      }
      if ((slot / bs) % team != me) continue; /* another thread's page: it checks and counts this row */
      const int64_t pos = tv_i64_1(&a->positions, t);
      if (pos < 0) {
        cpu_note(rep, t, SKIP_POSITION_NEGATIVE, t, pos, 0, 0, 0, 0);
        continue;
      }
      if ((pos % cr) != cr - 1) continue; /* only group-boundary tokens write (pos + 1) % cr == 0 */
      const int64_t cp = (pos / cr) * cr;
      if (cp >= cs_rows) {
        cpu_note(rep, t, SKIP_COS_SIN_ROW, t, pos, cp, cs_rows, 0, 0);
        continue;
      }
      const uint16_t *k = (const uint16_t *)(a->k_pre.data + t * a->k_pre.stride[0] * 2);
      int norm_bad;
      const float rstd = indexer_rstd_ref(k, a->eps, &norm_bad);
      /* Counted for every row that reaches the store, also one a later row
       * overwrites.  The norm counts once when it alone is non-finite (SPEC §7). */
      if (o->check_nonfinite) {
        int64_t in = count_nonfinite_bf16(k, INDEXER_DIM);
        nonfinite += in + (in == 0 && norm_bad);
      }
      float cos_sin[INDEXER_DIM - INDEXER_ROPE_FROM], r[INDEXER_DIM];
      const int64_t row = cp * a->cos_sin.stride[0];
      for (int j = 0; j < INDEXER_DIM - INDEXER_ROPE_FROM; j++) cos_sin[j] = load_f(&a->cos_sin, a->cos_sin_dt, row + j);
      indexer_norm_rope_ref(k, weight, cos_sin, rstd, r);
      uint8_t *page = c->base + (slot / bs) * c->page_stride;
      switch (c->record) {
        case DSV4KV_RECORD_INDEXER_FP8: store_fp8(c, page, slot % bs, r); break;
        case DSV4KV_RECORD_INDEXER_MXFP4:
          indexer_mxfp4_quant_ref(r, page + record_values_off(&c->layout, bs, slot % bs),
                                  page + record_scales_off(&c->layout, bs, slot % bs));
          break;
        case DSV4KV_RECORD_V4:
        case DSV4KV_RECORD_MXFP8:
        case DSV4KV_RECORD_NVFP4: break; /* refused by the checks (src/ops/indexer.c) */
      }
    }
  }
  rep->nonfinite = nonfinite;
  return DSV4KV_OK;
}
