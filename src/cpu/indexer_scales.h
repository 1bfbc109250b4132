/* The indexer store's scales from the amax's bits (src/cpu/indexer_avx512.c,
 * indexer_avx2.c): indexer_fp8_scale_ref and mxfp4_block_scale_ref without
 * their double division and frexp (a libm call a row or block); and the
 * RMSNorm factor without a double square root and division. */
#ifndef DSV4KV_CPU_INDEXER_SCALES_H
#define DSV4KV_CPU_INDEXER_SCALES_H

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "formats/ref.h"

/* (float)(1.0 / sqrt((double)x)), indexer_rstd_of_sum's rounding, for any x.
 * Why it is the same: for a normal finite x, rsqrtss (relative error <=
 * 1.5 x 2^-12 on every x86) and two Newton steps in double leave y within
 * about 2^-43 of 1 / sqrt(x); the reference's quotient is within 2^-51.  When
 * y lies more than 2^13 double ulps (2^-39) from a midpoint between floats,
 * both round to the same float; otherwise (about one x in 2^15), and for x
 * that is 0, subnormal, Inf or NaN, the reference's arithmetic.  A square
 * root and a division in double cost ~30 cycles of one unit a row on a
 * Zen 3.  Checked on every fp32 in [1, 4) and on sampled x of every exponent
 * (tests/paths/sum_squares_paths.c). */
static inline float rsqrt_rounded_fast(float x) {
#if defined(__x86_64__)
  if (x >= 0x1p-126f && x <= 0x1.fffffep127f) {
    const double xd = x, h = 0.5 * xd;
    double y = _mm_cvtss_f32(_mm_rsqrt_ss(_mm_set_ss(x)));
    y = y * (1.5 - h * y * y);
    y = y * (1.5 - h * y * y);
    uint64_t b;
    memcpy(&b, &y, sizeof b);
    const int64_t off = (int64_t)(b & ((1u << 29) - 1)) - (1 << 28); /* from the midpoint, in double ulps */
    if (off > (1 << 13) || off < -(1 << 13)) return (float)y;
  }
#endif
  return (float)(1.0 / sqrt((double)x));
}

/* indexer_rstd_of_sum with rsqrt_rounded_fast: the same rstd and flag. */
static inline float indexer_rstd_fast(float sum, float eps, int *nonfinite) {
  const float var = sum / (float)INDEXER_DIM, rstd = rsqrt_rounded_fast(var + eps);
  *nonfinite = !isfinite(var) || !isfinite(rstd);
  return rstd;
}

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
