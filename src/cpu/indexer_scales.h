/* The indexer store's scales from the amax's bits (src/cpu/indexer_avx512.c,
 * indexer_avx2.c): indexer_fp8_scale_ref and mxfp4_block_scale_ref without
 * their double division and frexp (a libm call a row or block). */
#ifndef DSV4KV_CPU_INDEXER_SCALES_H
#define DSV4KV_CPU_INDEXER_SCALES_H

#include "formats/ref.h"

/* indexer_fp8_scale_ref with the exponent from the bits
 * (ceil_log2_ratio_bits: equal to the reference's double division for every
 * normal amax, tests/paths/exhaustive_paths.c; after the floor amax is normal
 * or Inf, and Inf takes the reference's code). */
static inline float fp8_scale_fast(float amax, int fnuz, float *scale, uint8_t *ue) {
  amax = max_ignore_nan(amax, AMAX_FLOOR);
  if (isinf(amax)) return indexer_fp8_scale_ref(amax, fnuz, scale, ue);
  const int e = ceil_log2_ratio_bits(amax, fp8_quant_max(fnuz)), b = e + 127;
  *ue = (uint8_t)(b < 0 ? 0 : b > 255 ? 255 : b);
  *scale = pow2f(e);
  return pow2f(-e);
}

/* mxfp4_block_scale_ref, the exponent from the bits likewise. */
static inline uint8_t mxfp4_scale_fast(float amax, float *inv) {
  amax = max_ignore_nan(amax, MXFP4_AMAX_FLOOR);
  if (isinf(amax)) return mxfp4_block_scale_ref(amax, inv);
  int l = ceil_log2_ratio_bits(amax, E2M1_MAX);
  if (l < -127) l = -127;
  if (l > 127) l = 127;
  *inv = l == 127 ? 0.0f : pow2f(-l);
  return (uint8_t)(l + 127);
}

#endif
