/* CUDA quantize_and_insert_k_cache (SPEC §3; CPU: src/cpu/insert_cpu.c).
 *
 * One warp per token: lane l holds the row's values 16l..16l+15 (two 16-byte
 * loads), so a V4 fp8 block of 64 values is 4 lanes, an MXFP8 block 2 and an
 * NVFP4 block 1; block amax by warp shuffles, then each lane writes its 16
 * codes (NVFP4: 8 bytes) in one store and the first lane of a block its scale
 * byte.  V4's RoPE values (lanes 28..31) are copied raw.  The arithmetic of
 * every value is formats/ref.h's. */
#include "cuda/cuda_common.cuh"

typedef struct {
  const uint8_t *k;  /* row t at k + t * k_stride */
  int64_t k_stride;  /* bytes */
  dix slots;
  int64_t T;
  uint8_t *base;
  int64_t page_stride, num_slots;
  int32_t bs;
  int32_t record, fnuz, check_nonfinite;
  int32_t vec_k, vec_c; /* 16-byte accesses on k / on the cache */
  record_layout layout;
  dnote note;
} insert_params;

/* Lane `lane`'s part of a main-cache record: values x[16] = row[16l..16l+16). */
static __device__ void quant_lane(const insert_params *p, int lane, const uint16_t *x, uint8_t *values,
                                  uint8_t *scales) {
  if (p->record == DSV4KV_RECORD_NVFP4) {
    uint8_t packed[8], sc;
    nvfp4_block_quant_ref(x, packed, &sc);
    store_small(values + 8 * lane, packed, 8, p->vec_c);
    scales[lane] = sc;
    return;
  }
  /* fp8 blocks: 64 values (V4, 4 lanes) or 32 (MXFP8, 2 lanes) */
  const int group = p->record == DSV4KV_RECORD_V4 ? V4_BLOCK / 16 : MXFP8_BLOCK / 16;
  float amax = 0.0f;
  for (int i = 0; i < 16; i++) amax = max_ignore_nan(amax, fabsf(bf16_to_f32(x[i])));
  amax = max_ignore_nan(warp_max_group(amax, group), AMAX_FLOOR);
  if (p->record == DSV4KV_RECORD_V4 && lane >= NOPE_DIM / 16) { /* RoPE dims: raw bf16 */
    uint8_t *dst = values + NOPE_DIM + 2 * (16 * lane - NOPE_DIM);
    store_bf16x16(dst, p->vec_c, x);
    if (lane == NOPE_DIM / 16) scales[V4_NUM_SCALES] = 0; /* the pad byte */
    return;
  }
  int e;
  float inv;
  const uint8_t sb = ue8m0_block_scale(amax, fp8_quant_max(p->fnuz), &e, &inv);
  uint8_t codes[16];
  for (int i = 0; i < 16; i++) codes[i] = fp8_quant_code(bf16_to_f32(x[i]) * inv, p->fnuz);
  store16(values + 16 * lane, pack16(codes), p->vec_c);
  if (lane % group == 0) scales[lane / group] = sb;
}

__global__ void __launch_bounds__(CUDA_BLOCK) insert_kernel(insert_params p) {
  if (dnote_idle(p.note)) return;
  const int lane = lane_id();
  const dix no_positions = {NULL, 0, 0};
  for (int64_t t = warp_id_global(); t < p.T; t += warp_count_global()) {
    const int64_t slot = dix_i64(p.slots, t);
    if (slot == -1) continue;
    if (slot < 0 || slot >= p.num_slots) {
      if (lane == 0) dnote1(p.note, t, SKIP_SLOT, t, slot, p.num_slots, 0, 0, 0);
      continue;
    }
    uint16_t x[16];
    load_bf16x16(p.k + t * p.k_stride + 32 * lane, p.vec_k, x);
    /* Counted for every row with a valid slot, also one a later row
     * overwrites (as the CPU counts). */
    if (p.check_nonfinite) {
      const int64_t nf = warp_sum_i64(count_nonfinite_bf16(x, 16));
      if (lane == 0) dnote_nonfinite(p.note, nf);
    }
    if (later_row_writes_slot(p.slots, p.T, t, slot, no_positions, 1, 0)) continue;
    uint8_t *page = p.base + (slot / p.bs) * p.page_stride;
    const int64_t pos = slot % p.bs;
    quant_lane(&p, lane, x, page + record_values_off(&p.layout, p.bs, pos),
               page + record_scales_off(&p.layout, p.bs, pos));
  }
}

const void *const cuda_insert_kernels[] = {(const void *)insert_kernel, NULL};

extern "C" dsv4kv_status cuda_insert(const insert_args *a, const exec_opts *o, dsv4kv_report *r) {
  const cache_view *c = &a->cache;
  cuda_call call;
  dsv4kv_status st = cuda_enter(&call, a->k.device_id, o);
  if (st) return st;
  insert_params p;
  p.k = a->k.data;
  p.k_stride = a->k.stride[0] * 2;
  p.slots = dix_of(&a->slots);
  p.T = a->T;
  p.base = c->base;
  p.page_stride = c->page_stride;
  p.num_slots = c->num_pages * c->block_size;
  p.bs = c->block_size;
  p.record = (int32_t)c->record;
  p.fnuz = c->fp8 == DSV4KV_FP8_FNUZ;
  p.check_nonfinite = o->check_nonfinite;
  p.vec_k = cuda_aligned16(p.k, p.k_stride);
  p.vec_c = cuda_aligned16(p.base, p.page_stride);
  p.layout = c->layout;
  p.note.rep = r;
  p.note.detail = 0;
  cuda_report_reset(&call, r, OP_INSERT);
  if (a->T > 0) {
    const unsigned grid = cuda_grid_rows(a->T);
    CUDA_LAUNCH_REPORTED(insert_kernel, grid, call, p);
  }
  return cuda_leave(&call, "quantize_and_insert_k_cache");
}
