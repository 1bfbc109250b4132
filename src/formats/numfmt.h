/* Number formats of SPEC §1 as exact scalar code, and the limits the
 * quantizers use (NUMERICS §1-§2).  Host and device (formats/hd.h): the CPU
 * kernels and the CUDA kernels compile the same functions. */
#ifndef DSV4KV_NUMFMT_H
#define DSV4KV_NUMFMT_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "formats/hd.h"

/* Limits (NUMERICS §1-§2, §10). */
#define FP8_OCP_MAX 448.0f        /* e4m3fn largest finite; the OCP quantizers' clamp        */
#define FP8_FNUZ_MAX 224.0f       /* the FNUZ quantizers' clamp: vLLM's get_fp8_min_max()
                                     value for e4m3fnuz, below the format's largest 240      */
#define E4M3FNUZ_LARGEST 240.0f   /* e4m3fnuz largest finite (code 0x7F); encoder saturation */
#define E2M1_MAX 6.0f             /* e2m1 largest finite                                      */
#define AMAX_FLOOR 1e-4f          /* fp8 block amax floor: the reference's fp32 0x38D1B717    */
#define NVFP4_SCALE_MIN 0x1p-9f   /* NVFP4 block scale floor before the e4m3 encode           */
#define MXFP4_AMAX_FLOOR (6.0f * 0x1p-126f) /* indexer MXFP4 amax floor                       */

static DSV4KV_HD uint32_t f32_bits(float x) {
  uint32_t u;
  memcpy(&u, &x, 4);
  return u;
}
static DSV4KV_HD float f32_from_bits(uint32_t u) {
  float x;
  memcpy(&x, &u, 4);
  return x;
}

static DSV4KV_HD float bf16_to_f32(uint16_t b) { return f32_from_bits((uint32_t)b << 16); }

/* RNE; every NaN becomes the canonical 0x7FFF (cvt.rn.bf16.f32). */
static DSV4KV_HD uint16_t f32_to_bf16(float x) {
  uint32_t u = f32_bits(x);
  if ((u & 0x7FFFFFFFu) > 0x7F800000u) return 0x7FFF;
  u += 0x7FFFu + ((u >> 16) & 1u);
  return (uint16_t)(u >> 16);
}

/* max.f32 of the GPU: a NaN operand loses to a number.  Not fmaxf: glibc's
 * returns NaN when either side is a signaling NaN (bf16 sNaN inputs exist).
 * `acc` is never NaN here (callers start from a number). */
static DSV4KV_HD float max_ignore_nan(float acc, float x) { return x > acc ? x : acc; }

/* clamp(y, -max, max) of the reference's quantizers: NaN becomes +max
 * (NUMERICS §1). */
static DSV4KV_HD float clamp_nan_to_max(float y, float max) {
  if (isnan(y)) return max;
  return y > max ? max : y < -max ? -max : y;
}

/* Round x >= 0 (x < 2^22) to the nearest integer, ties to even: adding 2^23
 * leaves no fraction bits, and fp32 addition rounds to nearest even. */
static DSV4KV_HD float rne_int(float x) { return (x + 8388608.0f) - 8388608.0f; }

/* e4m3 with `bias` (7: OCP e4m3fn, 8: e4m3fnuz) of a finite or infinite
 * |x| = a: the 7-bit magnitude code, RNE, saturated to the largest finite
 * (max_code / max_val).  Normals round on the fp32 bits (3 mantissa bits
 * kept, a carry moves into the exponent as it should); below the smallest
 * normal 2^(1-bias) the step is 2^(-2-bias). */
static DSV4KV_HD uint8_t e4m3_mag_code(float a, int bias, uint8_t max_code, float max_val) {
  if (!(a <= max_val)) return max_code;
  float min_normal = bias == 7 ? 0x1p-6f : 0x1p-7f;
  if (a < min_normal) /* 0..8 steps; 8 is the smallest normal's code */
    return (uint8_t)rne_int(a * (bias == 7 ? 0x1p9f : 0x1p10f));
  uint32_t u = f32_bits(a);
  u += 0x7FFFFu + ((u >> 20) & 1u);
  int exp = (int)(u >> 23) - 127 + bias;
  uint8_t code = (uint8_t)((exp << 3) | ((u >> 20) & 7u));
  return code > max_code ? max_code : code;
}

/* OCP e4m3fn, cvt.rn.satfinite: saturate to +-448, sign kept on zero, NaN -> 0x7F. */
static DSV4KV_HD uint8_t e4m3_encode(float x) {
  if (isnan(x)) return 0x7F;
  uint8_t s = (f32_bits(x) >> 24) & 0x80;
  return s | e4m3_mag_code(fabsf(x), 7, 0x7E, FP8_OCP_MAX);
}

/* e4m3fnuz: saturate to +-240, any zero -> 0x00 (0x80 is NaN), NaN -> 0x80.
 * (The FNUZ quantizers clamp to +-224 before they call it.) */
static DSV4KV_HD uint8_t e4m3fnuz_encode(float x) {
  if (isnan(x)) return 0x80;
  uint8_t m = e4m3_mag_code(fabsf(x), 8, 0x7F, E4M3FNUZ_LARGEST);
  if (m == 0) return 0x00;
  return (uint8_t)(((f32_bits(x) >> 24) & 0x80) | m);
}

static DSV4KV_HD float e4m3_decode(uint8_t b) {
  uint32_t exp = (b >> 3) & 15u, man = b & 7u, sign = (uint32_t)(b & 0x80u) << 24;
  if (exp == 15 && man == 7) return f32_from_bits(0x7FC00000u);
  if (exp == 0) return f32_from_bits(f32_bits((float)man * 0x1p-9f) | sign);
  return f32_from_bits(sign | ((exp + 120u) << 23) | (man << 20));
}

static DSV4KV_HD float e4m3fnuz_decode(uint8_t b) {
  if (b == 0x80) return f32_from_bits(0x7FC00000u);
  uint32_t exp = (b >> 3) & 15u, man = b & 7u, sign = (uint32_t)(b & 0x80u) << 24;
  if (exp == 0) return f32_from_bits(f32_bits((float)man * 0x1p-10f) | sign);
  return f32_from_bits(sign | ((exp + 119u) << 23) | (man << 20));
}

/* e2m1 with the semantics of cvt.rn.satfinite.e2m1x2.f32 (NUMERICS §1.1):
 * grid {0, .5, 1, 1.5, 2, 3, 4, 6}, ties to the even code, saturate to 6,
 * NaN -> 0x7, sign bit kept (also on zero). */
static DSV4KV_HD uint8_t e2m1_encode(float x) {
  if (isnan(x)) return 0x7;
  uint8_t s = (f32_bits(x) >> 28) & 0x8;
  float a = fabsf(x);
  uint8_t c;
  if (a <= 0.25f) c = 0;
  else if (a < 0.75f) c = 1;
  else if (a <= 1.25f) c = 2;
  else if (a < 1.75f) c = 3;
  else if (a <= 2.5f) c = 4;
  else if (a < 3.5f) c = 5;
  else if (a <= 5.0f) c = 6;
  else c = 7;
  return s | c;
}

/* Magnitudes 0, .5 for codes 0-1; (1 + m/2) x 2^(e-1) for code 2e + m >= 2
 * (no table: device code must not read host memory). */
static DSV4KV_HD float e2m1_decode(uint8_t c) {
  uint32_t m = c & 7u;
  float v = m < 2 ? 0.5f * (float)m : (1.0f + 0.5f * (float)(m & 1u)) * (float)(1u << ((m >> 1) - 1));
  return (c & 8) ? -v : v;
}

static DSV4KV_HD float ue8m0_decode(uint8_t e) {
  /* 2^(e-127) is the fp32 with exponent field e (255 -> +Inf); e = 0 is the
   * subnormal 2^-127 = 2^22 x 2^-149. */
  return f32_from_bits(e == 0 ? 0x00400000u : (uint32_t)e << 23);
}

/* The gathers' scale: exp2 of (byte - 127) through ex2.approx.ftz, so byte 0
 * (2^-127, a subnormal) is flushed to zero (NUMERICS §3). */
static DSV4KV_HD float ue8m0_decode_ftz(uint8_t e) { return e == 0 ? 0.0f : ue8m0_decode(e); }

/* Smallest integer e with amax <= fp8_max * 2^e, i.e. ceil(log2(amax / fp8_max))
 * in exact arithmetic (NUMERICS §2.1 step 4; §9).  amax finite, > 0.  The
 * quotient in double is never rounded onto a power of two for bf16-derived
 * fp32 amax (it is a power of two only when amax = fp8_max * 2^k exactly). */
static DSV4KV_HD int ceil_log2_ratio_bits(float amax, float max);
static DSV4KV_HD int ceil_log2_ratio(float amax, double fp8_max) {
#ifdef __CUDA_ARCH__
  /* on the GPU a double division is ~40 instructions a lane: the same
   * integer from the bits for every normal amax (ceil_log2_ratio_bits) */
  if (amax >= 0x1p-126f && amax <= 0x1.fffffep127f) return ceil_log2_ratio_bits(amax, (float)fp8_max);
#endif
  int e;
  double f = frexp((double)amax / fp8_max, &e); /* q = f * 2^e, f in [0.5, 1) */
  return f == 0.5 ? e - 1 : e;
}

/* ceil_log2_ratio for a normal positive finite amax and a normal max, from
 * the bits: amax = a x 2^ea, max = m x 2^em (a, m in [1, 2)), and a / m lies
 * in (1/2, 2), so the answer is ea - em, plus 1 when a > m.  The double
 * quotient agrees: two 24-bit significands' quotient is either exactly 1 or
 * at least 2^-24 away from it, far more than a double's rounding moves it.
 * Checked against the double path on every normal fp32 amax for the three
 * maxima used (448, 240, 6) by tests/cuda/exhaustive_cuda.cu, and on every
 * significand at sampled exponents by tests/paths/exhaustive_paths.c. */
static DSV4KV_HD int ceil_log2_ratio_bits(float amax, float max) {
  const uint32_t a = f32_bits(amax), m = f32_bits(max);
  return (int)(a >> 23) - (int)(m >> 23) + ((a & 0x7FFFFFu) > (m & 0x7FFFFFu));
}

/* ceil_log2_ratio(amax, max) without a division or libm call, for a normal
 * positive amax and max = 1.75 x 2^max_exp (448 = 1.75 x 2^8, 224 =
 * 1.75 x 2^7): amax / max <= 2^k exactly when amax's exponent is below
 * max_exp + k, or equal to it with a mantissa no larger than 1.75's.  Equal
 * to ceil_log2_ratio on every bf16-derived amax (checked on all 65536 by
 * tests/paths/exhaustive_paths.c); the SIMD paths use it. */
static DSV4KV_HD int ceil_log2_ratio_175(float amax, int max_exp) {
  const uint32_t u = f32_bits(amax);
  return (int)(u >> 23) - 127 - max_exp + ((u & 0x7FFFFFu) > 0x600000u);
}

/* 2^e as fp32 for e in [-149, 127] (ldexpf without a libm call). */
static DSV4KV_HD float pow2f(int e) {
  if (e >= -126) return f32_from_bits((uint32_t)(e + 127) << 23);
  return f32_from_bits(1u << (e + 149));
}

#endif
