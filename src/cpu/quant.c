/* Scalar quantizers (NUMERICS §2.1-§2.3). */
#include "cpu/quant.h"

#include "formats/numfmt.h"
#include "formats/records.h"

/* 1e-4 as the reference's fp32 constant 0x38D1B717: the amax floor. */
#define AMAX_FLOOR 1e-4f

void quant_fp8_block(const uint16_t *x, int n, dsv4kv_fp8_flavor fp8, uint8_t *codes,
                     uint8_t *scale_byte) {
  const int fnuz = fp8 == DSV4KV_FP8_FNUZ;
  const float fp8_max = fnuz ? 240.0f : 448.0f;
  /* NaN-ignoring max of |x| (the GPU's max.f32);
   * starting at 0 gives the same floor result for an all-NaN block. */
  float amax = 0.0f;
  for (int i = 0; i < n; i++) amax = max_ignore_nan(amax, fabsf(bf16_to_f32(x[i])));
  amax = max_ignore_nan(amax, AMAX_FLOOR);
  float inv; /* 2^-e; x * 2^-e is exact where the result matters */
  if (isinf(amax)) {
    *scale_byte = 255; /* e = +Inf: x / Inf = +-0, Inf / Inf = NaN -> +max */
    inv = 0.0f;
  } else {
    int e = ceil_log2_ratio(amax, fp8_max);
    int b = e + 127;
    *scale_byte = (uint8_t)(b < 0 ? 0 : b > 255 ? 255 : b);
    inv = ldexpf(1.0f, -e);
  }
  for (int i = 0; i < n; i++) {
    float v = bf16_to_f32(x[i]);
    float y = v * inv; /* with inv = 0 (Inf scale): Inf * 0 = NaN */
    /* clamp(y, -max, max) of the GPU maps NaN to +max (NUMERICS §1). */
    if (isnan(y)) y = fp8_max;
    codes[i] = fnuz ? e4m3fnuz_encode(y) : e4m3_encode(y);
  }
}

void quant_v4_record(const uint16_t *x, dsv4kv_fp8_flavor fp8, uint8_t *data, uint8_t *scales) {
  for (int s = 0; s < V4_NUM_SCALES; s++)
    quant_fp8_block(x + s * V4_BLOCK, V4_BLOCK, fp8, data + s * V4_BLOCK, scales + s);
  scales[V4_NUM_SCALES] = 0;
  memcpy(data + NOPE_DIM, x + NOPE_DIM, ROPE_DIM * sizeof(uint16_t)); /* raw bf16, little-endian */
}

void quant_mxfp8_record(const uint16_t *x, dsv4kv_fp8_flavor fp8, uint8_t *rec) {
  for (int s = 0; s < MXFP8_NUM_SCALES; s++)
    quant_fp8_block(x + s * MXFP8_BLOCK, MXFP8_BLOCK, fp8, rec + s * MXFP8_BLOCK, rec + HEAD_DIM + s);
}

void quant_nvfp4_record(const uint16_t *x, uint8_t *rec) {
  for (int s = 0; s < NVFP4_NUM_SCALES; s++) {
    const uint16_t *b = x + s * NVFP4_BLOCK;
    float amax = 0.0f; /* NaN-ignoring, no floor */
    for (int i = 0; i < NVFP4_BLOCK; i++) amax = max_ignore_nan(amax, fabsf(bf16_to_f32(b[i])));
    float t = amax * (1.0f / 6.0f); /* fp32 0x3E2AAAAB, one RN multiply */
    t = fminf(max_ignore_nan(0x1p-9f, t), 448.0f);
    uint8_t sc = e4m3_encode(t);
    float sv = e4m3_decode(sc);
    rec[HEAD_DIM / 2 + s] = sc;
    for (int i = 0; i < NVFP4_BLOCK; i += 2) {
      uint8_t lo = e2m1_encode(bf16_to_f32(b[i]) / sv);
      uint8_t hi = e2m1_encode(bf16_to_f32(b[i + 1]) / sv);
      rec[(s * NVFP4_BLOCK + i) / 2] = (uint8_t)(hi << 4 | lo);
    }
  }
}

int64_t count_nonfinite_bf16(const uint16_t *x, int n) {
  int64_t c = 0;
  for (int i = 0; i < n; i++) c += (x[i] & 0x7F80u) == 0x7F80u;
  return c;
}
