/* The scalar reference, one row at a time (NUMERICS §2-§3, §9-§10): the
 * quantizers and dequantizers of every record and the indexer's RMSNorm +
 * RoPE.  Written to be obviously right; every faster path (SIMD, CUDA) is
 * tested byte for byte against these.  Host and device (formats/hd.h). */
#ifndef DSV4KV_REF_H
#define DSV4KV_REF_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "dsv4kv.h"
#include "formats/numfmt.h"
#include "formats/records.h"

/* The quantizers' clamp of an fp8 flavour (NUMERICS §10 for FNUZ). */
static DSV4KV_HD float fp8_quant_max(int fnuz) { return fnuz ? FP8_FNUZ_MAX : FP8_OCP_MAX; }

/* One fp8 code of y (already divided by the block scale): clamp with NaN ->
 * +max, then the flavour's encoder. */
static DSV4KV_HD uint8_t fp8_quant_code(float y, int fnuz) {
  y = clamp_nan_to_max(y, fp8_quant_max(fnuz));
  return fnuz ? e4m3fnuz_encode(y) : e4m3_encode(y);
}

/* The UE8M0 block exponent e of a NaN-ignoring amax (floored, never NaN):
 * e = ceil(log2(amax / max)), and 2^-e in *inv; amax = Inf gives byte 255
 * and inv = 0 (x / Inf = +-0, Inf / Inf = NaN -> +max, as the reference). */
static DSV4KV_HD uint8_t ue8m0_block_scale(float amax, float max, int *e_out, float *inv) {
  if (isinf(amax)) {
    *e_out = 128;
    *inv = 0.0f;
    return 255;
  }
  int e = ceil_log2_ratio(amax, (double)max);
  int b = e + 127;
  *e_out = e;
  *inv = pow2f(-e);
  return (uint8_t)(b < 0 ? 0 : b > 255 ? 255 : b);
}

/* n bf16 values (n = 32 or 64) with one UE8M0 scale (NUMERICS §2.1). */
static DSV4KV_HD void fp8_block_quant_ref(const uint16_t *x, int n, int fnuz, uint8_t *codes,
                                          uint8_t *scale_byte) {
  float amax = 0.0f; /* NaN-ignoring; from 0, an all-NaN block gets the floor */
  for (int i = 0; i < n; i++) amax = max_ignore_nan(amax, fabsf(bf16_to_f32(x[i])));
  amax = max_ignore_nan(amax, AMAX_FLOOR);
  int e;
  float inv;
  *scale_byte = ue8m0_block_scale(amax, fp8_quant_max(fnuz), &e, &inv);
  for (int i = 0; i < n; i++) codes[i] = fp8_quant_code(bf16_to_f32(x[i]) * inv, fnuz);
}

/* One NVFP4 block of 16 values (NUMERICS §2.3): e4m3 scale of amax / 6
 * clamped to [2^-9, 448], values e2m1(x / scale) with an IEEE division. */
static DSV4KV_HD void nvfp4_block_quant_ref(const uint16_t *x, uint8_t *packed, uint8_t *scale_byte) {
  float amax = 0.0f; /* NaN-ignoring, no floor */
  for (int i = 0; i < NVFP4_BLOCK; i++) amax = max_ignore_nan(amax, fabsf(bf16_to_f32(x[i])));
  float t = amax * (1.0f / 6.0f); /* fp32 0x3E2AAAAB, one RN multiply */
  t = max_ignore_nan(NVFP4_SCALE_MIN, t);
  t = t < FP8_OCP_MAX ? t : FP8_OCP_MAX;
  uint8_t sc = e4m3_encode(t);
  float sv = e4m3_decode(sc);
  *scale_byte = sc;
  for (int i = 0; i < NVFP4_BLOCK; i += 2) {
    uint8_t lo = e2m1_encode(bf16_to_f32(x[i]) / sv);
    uint8_t hi = e2m1_encode(bf16_to_f32(x[i + 1]) / sv);
    packed[i / 2] = (uint8_t)(hi << 4 | lo);
  }
}

/* A main-cache record of one 512-dim bf16 row: its value bytes at `values`
 * and scale bytes at `scales` (where the table puts them).  Returns 0 for a
 * record that is not a main-cache record (nothing written). */
static DSV4KV_HD int record_quant_ref(dsv4kv_record rec, int fnuz, const uint16_t *x, uint8_t *values,
                                      uint8_t *scales) {
  switch (rec) {
    case DSV4KV_RECORD_V4:
      for (int s = 0; s < V4_NUM_SCALES; s++)
        fp8_block_quant_ref(x + s * V4_BLOCK, V4_BLOCK, fnuz, values + s * V4_BLOCK, scales + s);
      scales[V4_NUM_SCALES] = 0;
      memcpy(values + NOPE_DIM, x + NOPE_DIM, ROPE_DIM * sizeof(uint16_t)); /* raw bf16, little-endian */
      return 1;
    case DSV4KV_RECORD_MXFP8:
      for (int s = 0; s < MXFP8_NUM_SCALES; s++)
        fp8_block_quant_ref(x + s * MXFP8_BLOCK, MXFP8_BLOCK, fnuz, values + s * MXFP8_BLOCK, scales + s);
      return 1;
    case DSV4KV_RECORD_NVFP4:
      for (int s = 0; s < NVFP4_NUM_SCALES; s++)
        nvfp4_block_quant_ref(x + s * NVFP4_BLOCK, values + s * NVFP4_BLOCK / 2, scales + s);
      return 1;
    case DSV4KV_RECORD_INDEXER_FP8:
    case DSV4KV_RECORD_INDEXER_MXFP4:
      return 0;
  }
  return 0;
}

/* out = bf16(e4m3 * 2^(s-127)), scale byte 0 flushed to 0 and 255 = +Inf. */
static DSV4KV_HD void fp8_block_dequant_ref(const uint8_t *codes, int n, uint8_t scale_byte, int fnuz,
                                            uint16_t *out) {
  float s = ue8m0_decode_ftz(scale_byte);
  for (int i = 0; i < n; i++)
    out[i] = f32_to_bf16((fnuz ? e4m3fnuz_decode(codes[i]) : e4m3_decode(codes[i])) * s);
}

/* The 512 bf16 values of a main-cache record (NUMERICS §3).  Returns 0 for a
 * record that is not a main-cache record (nothing written). */
static DSV4KV_HD int record_dequant_ref(dsv4kv_record rec, int fnuz, const uint8_t *values,
                                        const uint8_t *scales, uint16_t *out) {
  switch (rec) {
    case DSV4KV_RECORD_V4:
      for (int s = 0; s < V4_NUM_SCALES; s++)
        fp8_block_dequant_ref(values + s * V4_BLOCK, V4_BLOCK, scales[s], fnuz, out + s * V4_BLOCK);
      memcpy(out + NOPE_DIM, values + NOPE_DIM, ROPE_DIM * sizeof(uint16_t));
      return 1;
    case DSV4KV_RECORD_MXFP8:
      for (int s = 0; s < MXFP8_NUM_SCALES; s++)
        fp8_block_dequant_ref(values + s * MXFP8_BLOCK, MXFP8_BLOCK, scales[s], fnuz, out + s * MXFP8_BLOCK);
      return 1;
    case DSV4KV_RECORD_NVFP4:
      for (int s = 0; s < NVFP4_NUM_SCALES; s++) {
        float sv = e4m3_decode(scales[s]); /* products exact in fp32 */
        for (int i = 0; i < NVFP4_BLOCK; i += 2) {
          uint8_t b = values[(s * NVFP4_BLOCK + i) / 2];
          out[s * NVFP4_BLOCK + i] = f32_to_bf16(e2m1_decode(b & 0xF) * sv);
          out[s * NVFP4_BLOCK + i + 1] = f32_to_bf16(e2m1_decode(b >> 4) * sv);
        }
      }
      return 1;
    case DSV4KV_RECORD_INDEXER_FP8:
    case DSV4KV_RECORD_INDEXER_MXFP4:
      return 0;
  }
  return 0;
}

/* Number of NaN / Inf values among n bf16 values. */
static DSV4KV_HD int64_t count_nonfinite_bf16(const uint16_t *x, int n) {
  int64_t c = 0;
  for (int i = 0; i < n; i++) c += (x[i] & 0x7F80u) == 0x7F80u;
  return c;
}

/* ---- indexer (NUMERICS §2.4, §10) ------------------------------------- */

/* Sum of squares in the reference's order: lane l (0..31) accumulates its 4
 * elements with fmas, then an xor butterfly over lanes (m = 16, 8, 4, 2, 1);
 * every lane ends with the same value, lane 0's is returned. */
static DSV4KV_HD float indexer_sum_squares_ref(const float *x) {
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

/* rstd from the row's sum of squares (the step both indexer_rstd_ref and the
 * GPU's warp reduction end with). */
static DSV4KV_HD float indexer_rstd_of_sum(float sum, float eps, int *nonfinite) {
  float var = sum / (float)INDEXER_DIM;
  float rstd = (float)(1.0 / sqrt((double)(var + eps)));
  *nonfinite = !isfinite(var) || !isfinite(rstd);
  return rstd;
}

/* RMSNorm's factor of one 128-dim bf16 row: rstd = 1 / sqrt(mean(x^2) + eps),
 * correctly rounded (NUMERICS §10).  *nonfinite = 1 when the mean of squares
 * or rstd is not finite (an overflowing sum, or 0 / 0 with eps 0): the stored
 * row is then meaningless even if every input is finite. */
static DSV4KV_HD float indexer_rstd_ref(const uint16_t *k, float eps, int *nonfinite) {
  float x[INDEXER_DIM];
  for (int d = 0; d < INDEXER_DIM; d++) x[d] = bf16_to_f32(k[d]);
  return indexer_rstd_of_sum(indexer_sum_squares_ref(x), eps, nonfinite);
}

/* One rotated pair (dims 2i, 2i+1) of indexer_norm_rope_ref. */
static DSV4KV_HD void indexer_norm_rope_pair(uint16_t k0, uint16_t k1, float w0, float w1, float c, float s,
                                             float rstd, float *r) {
  float e = bf16_to_f32(f32_to_bf16((bf16_to_f32(k0) * rstd) * w0));
  float o = bf16_to_f32(f32_to_bf16((bf16_to_f32(k1) * rstd) * w1));
  r[0] = bf16_to_f32(f32_to_bf16(fmaf(e, c, -(o * s))));
  r[1] = bf16_to_f32(f32_to_bf16(fmaf(o, c, e * s)));
}

/* RMSNorm (with rstd from indexer_rstd_ref) then GPT-J RoPE of one 128-dim
 * row into r[128] (fp32 values of the bf16 results).  weight[128] and
 * cos_sin[64] (cos 0..31, sin 32..63) are the fp32 values of the tables.  The
 * rotation also runs on dims 0..63 with cos = 1, sin = 0 (the masked load's
 * identity: -0 can become +0). */
static DSV4KV_HD void indexer_norm_rope_ref(const uint16_t *k, const float *weight, const float *cos_sin,
                                            float rstd, float *r) {
  for (int i = 0; i < INDEXER_DIM / 2; i++) {
    float c = 1.0f, s = 0.0f;
    if (i >= INDEXER_ROPE_FROM / 2) {
      int j = i - INDEXER_ROPE_FROM / 2;
      c = cos_sin[j];
      s = cos_sin[32 + j];
    }
    indexer_norm_rope_pair(k[2 * i], k[2 * i + 1], weight[2 * i], weight[2 * i + 1], c, s, rstd, r + 2 * i);
  }
}

/* Indexer FP8 scale of a row's NaN-ignoring amax (before the floor): the
 * fp32 scale 2^e in *scale, its UE8M0 byte in *ue; returns 2^-e. */
static DSV4KV_HD float indexer_fp8_scale_ref(float amax, int fnuz, float *scale, uint8_t *ue) {
  amax = max_ignore_nan(amax, AMAX_FLOOR);
  int e;
  float inv;
  *ue = ue8m0_block_scale(amax, fp8_quant_max(fnuz), &e, &inv);
  *scale = isinf(amax) ? f32_from_bits(0x7F800000u) : pow2f(e);
  return inv;
}

/* Indexer MXFP4 scale byte of one 32-value block's NaN-ignoring amax (before
 * the floor); 2^-l in *inv. */
static DSV4KV_HD uint8_t mxfp4_block_scale_ref(float amax, float *inv) {
  amax = max_ignore_nan(amax, MXFP4_AMAX_FLOOR);
  int l = isinf(amax) ? 127 : ceil_log2_ratio(amax, (double)E2M1_MAX);
  if (l < -127) l = -127;
  if (l > 127) l = 127;
  /* exp2 flushes 2^-127 to zero (ex2.approx.ftz): l = 127 gives inv = 0. */
  *inv = l == 127 ? 0.0f : pow2f(-l);
  return (uint8_t)(l + 127);
}

/* Indexer FP8 of r[128]: codes[128], the fp32 scale 2^e and its UE8M0 byte. */
static DSV4KV_HD void indexer_fp8_quant_ref(const float *r, int fnuz, uint8_t *codes, float *scale,
                                            uint8_t *ue) {
  float amax = 0.0f;
  for (int d = 0; d < INDEXER_DIM; d++) amax = max_ignore_nan(amax, fabsf(r[d]));
  const float inv = indexer_fp8_scale_ref(amax, fnuz, scale, ue);
  for (int d = 0; d < INDEXER_DIM; d++) codes[d] = fp8_quant_code(r[d] * inv, fnuz);
}

/* Indexer MXFP4 of r[128]: 64 bytes of e2m1 pairs and 4 UE8M0 scales. */
static DSV4KV_HD void indexer_mxfp4_quant_ref(const float *r, uint8_t *packed, uint8_t *scales) {
  for (int b = 0; b < INDEXER_MXFP4_NUM_SCALES; b++) {
    const float *x = r + b * INDEXER_MXFP4_BLOCK;
    float amax = 0.0f, inv;
    for (int i = 0; i < INDEXER_MXFP4_BLOCK; i++) amax = max_ignore_nan(amax, fabsf(x[i]));
    scales[b] = mxfp4_block_scale_ref(amax, &inv);
    for (int i = 0; i < INDEXER_MXFP4_BLOCK; i += 2) {
      uint8_t lo = e2m1_encode(x[i] * inv), hi = e2m1_encode(x[i + 1] * inv);
      packed[(b * INDEXER_MXFP4_BLOCK + i) / 2] = (uint8_t)(hi << 4 | lo);
    }
  }
}

#endif
