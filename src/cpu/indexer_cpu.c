/* CPU indexer_k_norm_rope_store (NUMERICS §2.4, §10): RMSNorm with the
 * reference's summation order, GPT-J RoPE with fused multiply-adds, then
 * FP8 (UE8M0-exponent, fp32 or MX scale, optional 16x16 tiles) or MXFP4. */
#include <inttypes.h>
#include <stdlib.h>

#include "backend.h"
#include "cpu/quant.h"
#include "formats/numfmt.h"
#include "formats/records.h"

static inline float load_f(const tview *v, dt_kind dt, int64_t off_elems) {
  return dt == DT_F32 ? *(const float *)(v->data + off_elems * 4)
                      : bf16_to_f32(*(const uint16_t *)(v->data + off_elems * 2));
}

/* Sum of squares in the reference's order: lane l (0..31) accumulates its 4
 * elements with fmas, then an xor butterfly over lanes (m = 16, 8, 4, 2, 1);
 * every lane ends with the same value, lane 0's is returned. */
static float sum_squares_lanes(const float *x) {
  float v[32];
  for (int l = 0; l < 32; l++) {
    const float *e = x + 4 * l;
    float acc = fmaf(e[0], e[0], e[1] * e[1]);
    acc = fmaf(e[2], e[2], acc);
    v[l] = fmaf(e[3], e[3], acc);
  }
  for (int m = 16; m >= 1; m >>= 1) {
    float w[32];
    for (int l = 0; l < 32; l++) w[l] = v[l] + v[l ^ m];
    memcpy(v, w, sizeof v);
  }
  return v[0];
}

/* RMSNorm + RoPE of one row into r[128] (fp32 values of bf16 results). */
static void norm_rope_row(const indexer_args *a, const uint16_t *k, int64_t cs_row, float *r) {
  float x[INDEXER_DIM];
  for (int d = 0; d < INDEXER_DIM; d++) x[d] = bf16_to_f32(k[d]);
  float var = sum_squares_lanes(x) / (float)INDEXER_DIM;
  float v = var + a->eps;
  /* Correctly rounded 1/sqrt on every backend (NUMERICS §10). */
  float rstd = (float)(1.0 / sqrt((double)v));
  for (int d = 0; d < INDEXER_DIM; d++) {
    float w = load_f(&a->weight, a->weight_dt, d * a->weight.stride[0]);
    x[d] = bf16_to_f32(f32_to_bf16((x[d] * rstd) * w));
  }
  const int64_t row = cs_row * a->cos_sin.stride[0];
  for (int i = 0; i < INDEXER_DIM / 2; i++) {
    float c = 1.0f, s = 0.0f; /* pairs of dims 0..63: the masked load's identity */
    if (i >= INDEXER_ROPE_FROM / 2) {
      int j = i - INDEXER_ROPE_FROM / 2;
      c = load_f(&a->cos_sin, a->cos_sin_dt, row + j);
      s = load_f(&a->cos_sin, a->cos_sin_dt, row + 32 + j);
    }
    float e = x[2 * i], o = x[2 * i + 1];
    float ne = fmaf(e, c, -(o * s));
    float no = fmaf(o, c, e * s);
    r[2 * i] = bf16_to_f32(f32_to_bf16(ne));
    r[2 * i + 1] = bf16_to_f32(f32_to_bf16(no));
  }
}

static void store_fp8(const cache_view *c, uint8_t *page, int64_t p, const float *r) {
  const int fnuz = c->fp8 == DSV4KV_FP8_FNUZ;
  const float fp8_max = fnuz ? 240.0f : 448.0f;
  float amax = 0.0f;
  for (int d = 0; d < INDEXER_DIM; d++) amax = max_ignore_nan(amax, fabsf(r[d]));
  amax = max_ignore_nan(amax, 1e-4f);
  float scale, inv;
  uint8_t ue;
  if (isinf(amax)) {
    scale = INFINITY;
    inv = 0.0f;
    ue = 255;
  } else {
    int e = ceil_log2_ratio(amax, fp8_max);
    scale = ldexpf(1.0f, e);
    inv = ldexpf(1.0f, -e);
    ue = (uint8_t)(e + 127 < 0 ? 0 : e + 127 > 255 ? 255 : e + 127);
  }
  const int tiled = (c->flags & DSV4KV_CACHE_TILED) != 0;
  for (int d = 0; d < INDEXER_DIM; d++) {
    float y = r[d] * inv;
    if (isnan(y)) y = fp8_max;
    uint8_t code = fnuz ? e4m3fnuz_encode(y) : e4m3_encode(y);
    page[tiled ? idx_tiled_off(p, d) : idx_values_off(p, IDX_FP8_VALUES) + d] = code;
  }
  uint8_t *sc = page + idx_scale_off(c->block_size, p, IDX_FP8_VALUES);
  if (c->flags & DSV4KV_CACHE_MX_SCALE) {
    memset(sc, ue, IDX_SCALE_BYTES);
  } else {
    uint32_t bits = f32_bits(scale);
    for (int b = 0; b < 4; b++) sc[b] = (uint8_t)(bits >> (8 * b)); /* little-endian */
  }
}

static void store_fp4(const cache_view *c, uint8_t *page, int64_t p, const float *r) {
  uint8_t *vals = page + idx_values_off(p, IDX_FP4_VALUES);
  uint8_t *sc = page + idx_scale_off(c->block_size, p, IDX_FP4_VALUES);
  for (int b = 0; b < INDEXER_DIM / IDX_FP4_BLOCK; b++) {
    const float *x = r + b * IDX_FP4_BLOCK;
    float amax = 0.0f;
    for (int i = 0; i < IDX_FP4_BLOCK; i++) amax = max_ignore_nan(amax, fabsf(x[i]));
    amax = max_ignore_nan(amax, 6.0f * 0x1p-126f);
    int l = isinf(amax) ? 127 : ceil_log2_ratio(amax, 6.0);
    if (l < -127) l = -127;
    if (l > 127) l = 127;
    /* exp2 flushes 2^-127 to zero (ex2.approx.ftz): l = 127 gives inv = 0. */
    float inv = l == 127 ? 0.0f : ldexpf(1.0f, -l);
    for (int i = 0; i < IDX_FP4_BLOCK; i += 2) {
      uint8_t lo = e2m1_encode(x[i] * inv), hi = e2m1_encode(x[i + 1] * inv);
      vals[(b * IDX_FP4_BLOCK + i) / 2] = (uint8_t)(hi << 4 | lo);
    }
    sc[b] = (uint8_t)(l + 127);
  }
}

dsv4kv_status cpu_indexer_store(const indexer_args *a, const run_opts *o, skiplog *log,
                                int64_t *nonfinite_out) {
  const cache_view *c = &a->cache;
  const int64_t bs = c->block_size;
  const int64_t num_slots = c->num_pages * bs;
  const int64_t cs_rows = a->cos_sin.shape[0];
  const int64_t cr = a->compress_ratio;
  int oom = 0;
  const int nt = threads_for(o, a->T, 128);
  uint8_t *losers = nt > 1 ? duplicate_slot_losers(&a->slots, a->T, &a->positions, cr, cs_rows, &oom) : NULL;
  if (oom) return dsv4kv_fail(DSV4KV_ERR_ALLOC, "out of memory checking kv_slot_mapping for duplicates");
  int64_t nonfinite = 0;

#pragma omp parallel for schedule(static) num_threads(nt) if (nt > 1) reduction(+ : nonfinite)
  for (int64_t t = 0; t < a->T; t++) {
    const int64_t slot = tv_i64_1(&a->slots, t);
    if (slot == -1) continue;
    if (slot < 0 || slot >= num_slots) {
      skiplog_note(log, t, "kv_slot_mapping[%" PRId64 "] = %" PRId64 " is outside k_cache's slots [0, %" PRId64 ")",
                   t, slot, num_slots);
      continue;
    }
    const int64_t pos = tv_i64_1(&a->positions, t);
    if (pos < 0) {
      skiplog_note(log, t, "positions[%" PRId64 "] = %" PRId64 " is negative", t, pos);
      continue;
    }
    if ((pos % cr) != cr - 1) continue; /* only group-boundary tokens write (pos + 1) % cr == 0 */
    const int64_t cp = (pos / cr) * cr;
    if (cp >= cs_rows) {
      skiplog_note(log, t, "positions[%" PRId64 "] = %" PRId64 " needs cos_sin_cache row %" PRId64 ", past its %" PRId64 " rows",
                   t, pos, cp, cs_rows);
      continue;
    }
    const uint16_t *k = (const uint16_t *)(a->k_pre.data + t * a->k_pre.stride[0] * 2);
    /* Counted before the duplicate check: independent of the thread count. */
    if (o->check_nonfinite) nonfinite += count_nonfinite_bf16(k, INDEXER_DIM);
    if (losers && losers[t]) continue;
    float r[INDEXER_DIM];
    norm_rope_row(a, k, cp, r);
    uint8_t *page = c->base + (slot / bs) * c->page_stride;
    if (c->record == DSV4KV_RECORD_INDEXER_FP8)
      store_fp8(c, page, slot % bs, r);
    else
      store_fp4(c, page, slot % bs, r);
  }
  free(losers);
  *nonfinite_out = nonfinite;
  return DSV4KV_OK;
}
