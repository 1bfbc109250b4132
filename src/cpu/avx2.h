/* What the AVX2 kernels (src/cpu/<op>_avx2.c) share: the target attribute
 * (per function: the library is built for baseline x86-64) and the encoders
 * on 8 lanes.  Include only inside `#if defined(__x86_64__) && defined(__GNUC__)`. */
#ifndef DSV4KV_CPU_AVX2_H
#define DSV4KV_CPU_AVX2_H

#include <immintrin.h>

#include "formats/e2m1_div.h"
#include "formats/ref.h"

#define AVX2 __attribute__((target("avx2,f16c,fma")))
/* Inlined into its caller: where a flavour is a constant argument, the
 * branches on it go, and vector constants are built once, not a call. */
#define INLINE __attribute__((always_inline))

/* A 32-byte store, non-temporal when nt (p then 32-byte aligned): outputs
 * far larger than the caches skip the read for ownership of whole lines
 * (the callers say when, cpu_nt_min_bytes). */
static inline AVX2 INLINE void store32(void *p, __m256i v, int nt) {
  if (nt)
    _mm256_stream_si256((__m256i *)p, v);
  else
    _mm256_storeu_si256((__m256i *)p, v);
}

/* Magnitudes of 16 bf16 lanes. */
static inline AVX2 __m256i mag16(__m256i h) { return _mm256_and_si256(h, _mm256_set1_epi16(0x7FFF)); }

/* fp8 codes of 16 values x * 2^-e from their bf16 bits h (16-bit lanes),
 * for |x| >= 2^(1 - B + e), B the flavour's exponent bias (normal codes):
 * codes8's rounding on the high half (x * 2^-e is exact), with the exponent
 * moved in the same add: k = fp8_codes16_k(e, B) = 7 - ((127 + e - B) << 7)
 * (the magnitude stays above -k, so the sum is the code << 4 plus the
 * dropped bits). */
static inline AVX2 __m256i fp8_codes16(__m256i h, __m256i k) {
  const __m256i lsb = _mm256_and_si256(_mm256_srli_epi16(h, 4), _mm256_set1_epi16(1));
  const __m256i r = _mm256_srli_epi16(_mm256_add_epi16(_mm256_add_epi16(mag16(h), lsb), k), 4);
  return _mm256_or_si256(r, _mm256_and_si256(_mm256_srli_epi16(h, 8), _mm256_set1_epi16(0x80)));
}
static inline int16_t fp8_codes16_k(int e, int bias) { return (int16_t)(7 - (127 + e - bias) * 128); }

/* fp8 codes of 8 values y = bits-as-fp32 * inv (|y| <= the max, no NaN). */
static inline AVX2 __m256i codes8(__m256i bits, __m256 inv, int fnuz) {
  const __m256 y = _mm256_mul_ps(_mm256_castsi256_ps(bits), inv);
  const __m256i yb = _mm256_castps_si256(y);
  const __m256 a = _mm256_castsi256_ps(_mm256_and_si256(yb, _mm256_set1_epi32(0x7FFFFFFF)));
  __m256i u = _mm256_castps_si256(a);
  u = _mm256_add_epi32(u, _mm256_add_epi32(_mm256_set1_epi32(0x7FFFF),
                                           _mm256_and_si256(_mm256_srli_epi32(u, 20), _mm256_set1_epi32(1))));
  __m256i mag = _mm256_sub_epi32(_mm256_srli_epi32(u, 20), _mm256_set1_epi32((127 - (fnuz ? 8 : 7)) << 3));
  const __m256 subn = _mm256_cmp_ps(a, _mm256_set1_ps(fnuz ? 0x1p-7f : 0x1p-6f), _CMP_LT_OQ);
  if (_mm256_movemask_ps(subn)) {
    const __m256 steps = _mm256_mul_ps(a, _mm256_set1_ps(fnuz ? 0x1p10f : 0x1p9f));
    const __m256 r = _mm256_sub_ps(_mm256_add_ps(steps, _mm256_set1_ps(8388608.0f)), _mm256_set1_ps(8388608.0f));
    mag = _mm256_blendv_epi8(mag, _mm256_cvttps_epi32(r), _mm256_castps_si256(subn));
  }
  __m256i code = _mm256_or_si256(mag, _mm256_and_si256(_mm256_srli_epi32(yb, 24), _mm256_set1_epi32(0x80)));
  if (fnuz) /* e4m3fnuz has no negative zero: magnitude 0 is 0x00 */
    code = _mm256_andnot_si256(_mm256_cmpeq_epi32(mag, _mm256_setzero_si256()), code);
  return code;
}

/* e2m1_encode_div of 8 fp32 values (their bits; no NaN) against b: the
 * number of midpoints passed (> at even codes' upper ends, >= at odd ones'),
 * the sign bit kept. */
static inline AVX2 __m256i e2m1_codes8(__m256i bits, const e2m1_bounds *b) {
  const __m256 a = _mm256_castsi256_ps(_mm256_and_si256(bits, _mm256_set1_epi32(0x7FFFFFFF)));
  __m256i c = _mm256_setzero_si256();
#define PASS(k, op) c = _mm256_sub_epi32(c, _mm256_castps_si256(_mm256_cmp_ps(a, _mm256_set1_ps(b->m[k]), op)))
  PASS(0, _CMP_GT_OQ), PASS(1, _CMP_GE_OQ), PASS(2, _CMP_GT_OQ), PASS(3, _CMP_GE_OQ);
  PASS(4, _CMP_GT_OQ), PASS(5, _CMP_GE_OQ), PASS(6, _CMP_GT_OQ);
#undef PASS
  return _mm256_or_si256(c, _mm256_and_si256(_mm256_srli_epi32(bits, 28), _mm256_set1_epi32(8)));
}

#endif
