/* What the AVX-512 kernels (src/cpu/<op>_avx512.c) share: the target
 * attribute (per function: the library is built for baseline x86-64), bf16
 * loads and roundings, and the fp8 encoder on 16 lanes.  Include only inside
 * `#if defined(__x86_64__) && defined(__GNUC__)`. */
#ifndef DSV4KV_CPU_AVX512_H
#define DSV4KV_CPU_AVX512_H

#include <immintrin.h>

#include "formats/ref.h"

#define AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,f16c")))

/* Keeps a vector constant in a register across the loop that follows: gcc
 * otherwise rebuilds each _mm512_set1 at its use, a move and a broadcast
 * from a general register, which on Intel cores takes the one port that
 * also runs every 512-bit shuffle, compare into a mask and zero-extension
 * (port 5), the port those loops are bound by. */
#define AVX512_KEEP(v) __asm__("" : "+v"(v))

/* A 64-byte store, non-temporal when nt (p then 64-byte aligned): outputs
 * far larger than the caches skip the read for ownership of whole lines. */
static inline AVX512 void store64(void *p, __m512i v, int nt) {
  if (nt)
    _mm512_stream_si512(p, v);
  else
    _mm512_storeu_si512(p, v);
}

static inline AVX512 __m512 bf16x16(const uint16_t *x) {
  return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i *)x)), 16));
}

/* fp8 codes (one a 32-bit lane) of 16 values y = x * inv, the reference's
 * fp8_quant_code. */
static inline AVX512 __m512i fp8_codes32(__m512 x, float inv, int fnuz) {
  const float max = fnuz ? FP8_FNUZ_MAX : FP8_OCP_MAX;
  __m512 y = _mm512_mul_ps(x, _mm512_set1_ps(inv));
  const __mmask16 nan = _mm512_cmp_ps_mask(y, y, _CMP_UNORD_Q);
  y = _mm512_mask_mov_ps(y, nan, _mm512_set1_ps(max));
  y = _mm512_min_ps(_mm512_max_ps(y, _mm512_set1_ps(-max)), _mm512_set1_ps(max)); /* no NaN left */
  const __m512i bits = _mm512_castps_si512(y);
  const __m512i sign = _mm512_and_si512(_mm512_srli_epi32(bits, 24), _mm512_set1_epi32(0x80));
  const __m512 a = _mm512_abs_ps(y);
  /* below the smallest normal: steps of 2^(-2-bias), rounded to nearest even */
  const __m512 steps = _mm512_mul_ps(a, _mm512_set1_ps(fnuz ? 0x1p10f : 0x1p9f));
  const __m512 rounded = _mm512_sub_ps(_mm512_add_ps(steps, _mm512_set1_ps(8388608.0f)), _mm512_set1_ps(8388608.0f));
  const __m512i sub_code = _mm512_cvttps_epi32(rounded);
  /* normals: 3 mantissa bits kept, RNE on the fp32 bits, the carry moving into the exponent */
  __m512i u = _mm512_castps_si512(a);
  u = _mm512_add_epi32(u, _mm512_add_epi32(_mm512_set1_epi32(0x7FFFF),
                                           _mm512_and_si512(_mm512_srli_epi32(u, 20), _mm512_set1_epi32(1))));
  const __m512i ex = _mm512_sub_epi32(_mm512_srli_epi32(u, 23), _mm512_set1_epi32(127 - (fnuz ? 8 : 7)));
  __m512i norm_code = _mm512_or_si512(_mm512_slli_epi32(ex, 3), _mm512_and_si512(_mm512_srli_epi32(u, 20),
                                                                                 _mm512_set1_epi32(7)));
  norm_code = _mm512_min_epi32(norm_code, _mm512_set1_epi32(fnuz ? 0x7F : 0x7E));
  const __mmask16 subn = _mm512_cmp_ps_mask(a, _mm512_set1_ps(fnuz ? 0x1p-7f : 0x1p-6f), _CMP_LT_OQ);
  const __m512i mag = _mm512_mask_mov_epi32(norm_code, subn, sub_code);
  __m512i code = _mm512_or_si512(mag, sign);
  if (fnuz) /* e4m3fnuz has no negative zero: magnitude 0 is 0x00 */
    code = _mm512_mask_mov_epi32(code, _mm512_cmpeq_epi32_mask(mag, _mm512_setzero_si512()), _mm512_setzero_si512());
  return code;
}

/* fp8 magnitude codes of |y| <= the quantizer's max (no NaN, no clamp
 * needed: the scale puts amax at or below it), the reference's e4m3
 * encoder: normals round the fp32 bits to 3 mantissa bits and (bits >> 20)
 * is then exponent << 3 | mantissa, less the bias difference; below the
 * smallest normal, steps of 2^(-2-bias) by the add-2^23 rounding (only
 * when a lane is there). */
static inline AVX512 __m512i fp8_mag_fast(__m512 a, int fnuz) {
  __m512i u = _mm512_castps_si512(a);
  u = _mm512_add_epi32(u, _mm512_add_epi32(_mm512_set1_epi32(0x7FFFF),
                                           _mm512_and_si512(_mm512_srli_epi32(u, 20), _mm512_set1_epi32(1))));
  __m512i code = _mm512_sub_epi32(_mm512_srli_epi32(u, 20), _mm512_set1_epi32((127 - (fnuz ? 8 : 7)) << 3));
  const __mmask16 subn = _mm512_cmp_ps_mask(a, _mm512_set1_ps(fnuz ? 0x1p-7f : 0x1p-6f), _CMP_LT_OQ);
  if (subn) {
    const __m512 steps = _mm512_mul_ps(a, _mm512_set1_ps(fnuz ? 0x1p10f : 0x1p9f));
    const __m512 rounded = _mm512_sub_ps(_mm512_add_ps(steps, _mm512_set1_ps(8388608.0f)), _mm512_set1_ps(8388608.0f));
    code = _mm512_mask_mov_epi32(code, subn, _mm512_cvttps_epi32(rounded));
  }
  return code;
}

/* bf16_to_f32(f32_to_bf16(x)) on 16 lanes: RNE in integers, every NaN the
 * canonical 0x7FFF (as f32_to_bf16). */
static inline AVX512 __m512 round_bf16x16(__m512 f) {
  const __m512i u = _mm512_castps_si512(f);
  const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1));
  __m512i r = _mm512_and_si512(_mm512_add_epi32(u, _mm512_add_epi32(lsb, _mm512_set1_epi32(0x7FFF))),
                               _mm512_set1_epi32((int)0xFFFF0000u));
  r = _mm512_mask_mov_epi32(r, _mm512_cmp_ps_mask(f, f, _CMP_UNORD_Q), _mm512_set1_epi32(0x7FFF0000));
  return _mm512_castsi512_ps(r);
}

/* ---- 16-bit lanes: 32 bf16 values a vector (the inserts, the indexer store) ---- */

/* The constants of the 16-bit-lane encoders, built once a row
 * (AVX512_KEEP: see above). */
typedef struct {
  __m512i mag, one, sign8;
} lanes16_consts;

static inline AVX512 lanes16_consts lanes16_consts_of(void) {
  lanes16_consts c = {_mm512_set1_epi16(0x7FFF), _mm512_set1_epi16(1), _mm512_set1_epi16(0x80)};
  AVX512_KEEP(c.mag);
  AVX512_KEEP(c.one);
  AVX512_KEEP(c.sign8);
  return c;
}

static inline AVX512 __m512i mag16(__m512i z, const lanes16_consts *kc) { return _mm512_and_si512(z, kc->mag); }

/* A 32-bit word of memory in every lane: a load, no shuffle port. */
static inline AVX512 __m512i bcast32(const uint32_t *p) {
  return _mm512_castps_si512(_mm512_broadcastss_ps(_mm_load_ss((const float *)p)));
}

/* 32 e4m3 codes of bf16 values z with no NaN or Inf, y = x / 2^e: y's
 * exponent is x's less e, exact for every normal y, so RNE of the 7 mantissa
 * bits to 3 (add 7 + lsb, shift 4) less the exponent offset (k, saturating:
 * a zero gives code 0) is the code.  k = ((e + 127 - B) << 7) - 7 and lo =
 * k + 134 (B the flavour's bias 7 / 8; lo + 1 is the bits of the smallest
 * normal y times 2^e) in every 16-bit lane.  Lanes with 0 < |y| below the
 * smallest normal are set in *low (the caller then takes an fp32 encoder;
 * subnormal steps are rare). */
static inline AVX512 __m256i e4m3_codes16(__m512i z, __m512i k, __m512i lo, int fnuz, const lanes16_consts *kc,
                                          __mmask32 *low) {
  const __m512i m = _mm512_and_si512(z, kc->mag);
  const __m512i t = _mm512_add_epi16(m, _mm512_and_si512(_mm512_srli_epi16(m, 4), kc->one));
  const __m512i c = _mm512_srli_epi16(_mm512_subs_epu16(t, k), 4);
  *low |= _mm512_cmplt_epu16_mask(_mm512_sub_epi16(m, kc->one), lo);
  __m512i code = _mm512_ternarylogic_epi32(c, _mm512_srli_epi16(z, 8), kc->sign8, 0xF8); /* A | (B & C) */
  if (fnuz) /* e4m3fnuz has no negative zero */
    code = _mm512_maskz_mov_epi16(_mm512_test_epi16_mask(c, c), code);
  return _mm512_cvtepi16_epi8(code);
}

#endif
