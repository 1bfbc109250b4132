/* CUDA indexer_k_norm_rope_store (SPEC §6, NUMERICS §2.4, §10; CPU:
 * src/cpu/indexer_cpu.c).
 *
 * One warp per token, lane l holding dims 4l..4l+3: exactly the reference's
 * reduction (each lane's 4 squares with fmas, then the xor butterfly), so the
 * sum of squares is the reference's bit for bit; rstd is the correctly
 * rounded 1/sqrt in double (formats/ref.h).  Lane l rotates pairs 2l, 2l+1,
 * then the row is quantized: FP8 (warp amax, 4 codes a lane in one 4-byte
 * store, linear or tiled) or MXFP4 (8 lanes a block, 2 bytes a lane). */
#include "cuda/cuda_common.cuh"

typedef struct {
  const uint8_t *k_pre;
  int64_t k_stride; /* bytes */
  dix positions, slots;
  const uint8_t *cos_sin, *weight;
  int64_t cs_stride, w_stride; /* elements */
  int64_t cs_rows;
  int32_t cs_f32, w_f32;
  int64_t T, num_slots, ratio;
  float eps;
  uint8_t *base;
  int64_t page_stride;
  int32_t bs, record, fnuz, tiled, mx_scale, check_nonfinite;
  int32_t vec_k, vec4_c; /* 8-byte loads of k_pre rows; 4-byte stores on the cache */
  record_layout layout;
  ddedup dd;
  dnote note;
} indexer_params;

static __device__ __forceinline__ float table_f(const uint8_t *t, int f32, int64_t off) {
  return f32 ? *(const float *)(t + off * 4) : bf16_to_f32(*(const uint16_t *)(t + off * 2));
}

static __device__ void store_fp8(const indexer_params *p, uint8_t *page, int64_t pos, const float *r, int lane) {
  float amax = 0.0f;
  for (int i = 0; i < 4; i++) amax = max_ignore_nan(amax, fabsf(r[i]));
  amax = warp_max_group(amax, 32);
  float scale;
  uint8_t ue, codes[4];
  const float inv = indexer_fp8_scale_ref(amax, p->fnuz, &scale, &ue);
  if (p->fnuz) {
    for (int i = 0; i < 4; i++) codes[i] = fp8_quant_code(r[i] * inv, 1);
  } else {
    const uint32_t w = e4m3x2_quant(r[0] * inv, r[1] * inv) | e4m3x2_quant(r[2] * inv, r[3] * inv) << 16;
    for (int i = 0; i < 4; i++) codes[i] = (uint8_t)(w >> (8 * i));
  }
  const int64_t off = p->tiled ? idx_tiled_off(pos, 4 * lane) : record_values_off(&p->layout, p->bs, pos) + 4 * lane;
  store_small(page + off, codes, 4, p->vec4_c);
  if (lane == 0) { /* one 4-byte store (DEDUP_MARK reads this word) */
    uint8_t *sc = page + record_scales_off(&p->layout, p->bs, pos);
    const uint32_t w = p->mx_scale ? ue * 0x01010101u : f32_bits(scale);
    uint8_t b[4] = {(uint8_t)w, (uint8_t)(w >> 8), (uint8_t)(w >> 16), (uint8_t)(w >> 24)};
    store_small(sc, b, 4, p->vec4_c);
  }
}

static __device__ void store_mxfp4(const indexer_params *p, uint8_t *page, int64_t pos, const float *r, int lane) {
  float amax = 0.0f, inv;
  for (int i = 0; i < 4; i++) amax = max_ignore_nan(amax, fabsf(r[i]));
  amax = warp_max_group(amax, INDEXER_MXFP4_BLOCK / 4);
  const uint8_t sb = mxfp4_block_scale_ref(amax, &inv);
  uint8_t *values = page + record_values_off(&p->layout, p->bs, pos);
  values[2 * lane] = (uint8_t)(e2m1_encode(r[1] * inv) << 4 | e2m1_encode(r[0] * inv));
  values[2 * lane + 1] = (uint8_t)(e2m1_encode(r[3] * inv) << 4 | e2m1_encode(r[2] * inv));
  /* the 4 scale bytes (lanes 0, 8, 16, 24) in one 4-byte store (DEDUP_MARK) */
  const uint32_t b1 = __shfl_sync(FULL_MASK, (uint32_t)sb, 8), b2 = __shfl_sync(FULL_MASK, (uint32_t)sb, 16),
                 b3 = __shfl_sync(FULL_MASK, (uint32_t)sb, 24);
  if (lane == 0) {
    const uint8_t b[4] = {sb, (uint8_t)b1, (uint8_t)b2, (uint8_t)b3};
    store_small(page + record_scales_off(&p->layout, p->bs, pos), b, 4, p->vec4_c);
  }
}

__global__ void __launch_bounds__(CUDA_BLOCK) indexer_kernel(indexer_params p) {
  __shared__ int64_t later[DEDUP_SHARED_ROWS];
  if (dnote_idle(p.note)) return;
  const int lane = lane_id();
  if (p.dd.mode == DEDUP_SHARED) dedup_shared_load(later, p.slots, p.T, p.num_slots, p.positions, p.ratio, p.cs_rows);
  float w[4];
  for (int i = 0; i < 4; i++) w[i] = table_f(p.weight, p.w_f32, (4 * lane + i) * p.w_stride);
  for (int64_t t = warp_id_global(); t < p.T; t += warp_count_global()) {
    /* the row, its slot and position loaded together (one latency, not three) */
    const uint8_t *row = p.k_pre + t * p.k_stride + 8 * lane;
    uint16_t k[4];
    if (p.vec_k) {
      const uint2 v = __ldg((const uint2 *)row);
      k[0] = (uint16_t)v.x, k[1] = (uint16_t)(v.x >> 16), k[2] = (uint16_t)v.y, k[3] = (uint16_t)(v.y >> 16);
    } else {
      for (int i = 0; i < 4; i++) k[i] = (uint16_t)(row[2 * i] | row[2 * i + 1] << 8);
    }
    const int64_t slot = dix_i64(p.slots, t);
    const int64_t pos = dix_i64(p.positions, t);
    if (slot == -1) continue;
    if (slot < 0 || slot >= p.num_slots) {
      if (lane == 0) dnote1(p.note, t, SKIP_SLOT, t, slot, p.num_slots, 0, 0, 0);
      continue;
    }
    if (pos < 0) {
      if (lane == 0) dnote1(p.note, t, SKIP_POSITION_NEGATIVE, t, pos, 0, 0, 0, 0);
      continue;
    }
    if (pos % p.ratio != p.ratio - 1) continue; /* only group-boundary tokens write */
    const int64_t cp = (pos / p.ratio) * p.ratio;
    if (cp >= p.cs_rows) {
      if (lane == 0) dnote1(p.note, t, SKIP_COS_SIN_ROW, t, pos, cp, p.cs_rows, 0, 0);
      continue;
    }
    /* this lane's cos / sin (pairs 2l, 2l+1; dims below INDEXER_ROPE_FROM
     * are not rotated), loaded before the norm's arithmetic */
    float cs[4] = {1.0f, 0.0f, 1.0f, 0.0f};
    for (int h = 0; h < 2; h++) {
      const int i = 2 * lane + h;
      if (i >= INDEXER_ROPE_FROM / 2) {
        const int64_t j = i - INDEXER_ROPE_FROM / 2, off = cp * p.cs_stride;
        cs[2 * h] = table_f(p.cos_sin, p.cs_f32, off + j);
        cs[2 * h + 1] = table_f(p.cos_sin, p.cs_f32, off + 32 + j);
      }
    }
    float e[4];
    for (int i = 0; i < 4; i++) e[i] = bf16_to_f32(k[i]);
    float acc = fmaf(e[0], e[0], e[1] * e[1]);
    acc = fmaf(e[2], e[2], acc);
    acc = fmaf(e[3], e[3], acc);
    for (int m = 16; m >= 1; m >>= 1) acc = acc + __shfl_xor_sync(FULL_MASK, acc, m);
    int norm_bad;
    const float rstd = indexer_rstd_of_sum(acc, p.eps, &norm_bad);
    /* Counted before the duplicate check, the norm once when it alone is
     * non-finite (as the CPU counts). */
    if (p.check_nonfinite) {
      const int64_t in = warp_sum_i64(count_nonfinite_bf16(k, 4));
      if (lane == 0) dnote_nonfinite(p.note, in + (in == 0 && norm_bad));
    }
    uint8_t *page = p.base + (slot / p.bs) * p.page_stride;
    if (p.dd.mode == DEDUP_MARK ? !mark_is_mine(p.dd, page + record_scales_off(&p.layout, p.bs, slot % p.bs), t)
                                : later_row_writes_slot(p.dd.mode, later, p.slots, p.T, t, slot, p.positions, p.ratio,
                                                        p.cs_rows))
      continue;
    float r[4];
    for (int h = 0; h < 2; h++) /* pair 2l + h: dims 4l + 2h, 4l + 2h + 1 */
      indexer_norm_rope_pair(k[2 * h], k[2 * h + 1], w[2 * h], w[2 * h + 1], cs[2 * h], cs[2 * h + 1], rstd, r + 2 * h);
    if (p.record == DSV4KV_RECORD_INDEXER_FP8)
      store_fp8(&p, page, slot % p.bs, r, lane);
    else
      store_mxfp4(&p, page, slot % p.bs, r, lane);
  }
}

const void *const cuda_indexer_kernels[] = {(const void *)indexer_kernel, NULL};

extern "C" dsv4kv_status cuda_indexer_store(const indexer_args *a, const exec_opts *o, dsv4kv_report *r) {
  const cache_view *c = &a->cache;
  cuda_call call;
  dsv4kv_status st = cuda_enter(&call, a->k_pre.device_id, o);
  if (st) return st;
  indexer_params p;
  p.k_pre = a->k_pre.data;
  p.k_stride = a->k_pre.stride[0] * 2;
  p.positions = dix_of(&a->positions);
  p.slots = dix_of(&a->slots);
  p.cos_sin = a->cos_sin.data;
  p.weight = a->weight.data;
  p.cs_stride = a->cos_sin.stride[0];
  p.w_stride = a->weight.stride[0];
  p.cs_rows = a->cos_sin.shape[0];
  p.cs_f32 = a->cos_sin_dt == DT_F32;
  p.w_f32 = a->weight_dt == DT_F32;
  p.T = a->T;
  p.num_slots = c->num_pages * c->block_size;
  p.ratio = a->compress_ratio;
  p.eps = a->eps;
  p.base = c->base;
  p.page_stride = c->page_stride;
  p.bs = c->block_size;
  p.record = (int32_t)c->record;
  p.fnuz = c->fp8 == DSV4KV_FP8_FNUZ;
  p.tiled = (c->flags & DSV4KV_CACHE_TILED) != 0;
  p.mx_scale = (c->flags & DSV4KV_CACHE_MX_SCALE) != 0;
  p.check_nonfinite = o->check_nonfinite;
  p.vec_k = (uintptr_t)p.k_pre % 8 == 0 && p.k_stride % 8 == 0;
  p.vec4_c = (uintptr_t)p.base % 4 == 0 && p.page_stride % 4 == 0;
  p.layout = c->layout;
  p.dd = dedup_mode_of(a->T, &c->layout, p.record == DSV4KV_RECORD_INDEXER_FP8 && !p.mx_scale, c->base,
                       c->page_stride);
  p.note.rep = r;
  p.note.detail = 0;
  cuda_report_reset(&call, r, OP_INDEXER_STORE);
  if (a->T > 0) {
    const mark_params m = {p.slots, p.positions, p.T, p.num_slots, p.ratio, p.cs_rows, p.base, p.page_stride, p.bs,
                           p.layout, p.dd};
    cuda_mark_rows(call.stream, &m);
    const unsigned grid = cuda_grid_rows(a->T);
    CUDA_LAUNCH_REPORTED(indexer_kernel, grid, call, p);
  }
  return cuda_leave(&call, "indexer_k_norm_rope_store");
}
