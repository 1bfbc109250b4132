/* The AVX2 CPU path of indexer_k_norm_rope_store (NUMERICS §2.4, §10), for
 * processors without AVX-512: the steps of src/cpu/indexer_avx512.c on 8
 * lanes, byte-identical to formats/ref.h's indexer_*_ref, which the case
 * registry checks on every input (ctest ops_cpu_paths runs each path the
 * machine has) and tests/paths/indexer_paths.c on rows that reach every
 * bf16 value at every scale.  The sum of squares keeps the reference's 32
 * partial sums (4 dims each, fmas in its order) and its xor butterfly (a + b
 * = b + a exactly).  After RMSNorm and RoPE (inlined into each quantizer: the
 * row stays in registers) a row is 8 vectors of 16 bf16 in dim order, and
 * the quantizers work on those bits, 16 lanes a vector: every scale is a
 * power of two, so a value times it is its bits with the exponent moved
 * (fp8: rounded at bit 4, rebiased; e2m1: rounded at bit 6 from 1.0 up,
 * compared with the midpoints' bits below).  A row whose results hold a NaN
 * or an Inf, or whose cos / sin or rstd is not finite, is left to the
 * reference (the quantizers return 0), and so is a call whose weight holds
 * a NaN (src/cpu/indexer_cpu.c).  Cache-resident rows on a Zen 4 forced to
 * this path (2026-12-07): sum of squares 7.8 -> 5.4 ns, FP8 43.4 -> 31.8,
 * MXFP4 53.7 -> 41.9 (norm_rope ~20 of each). */
#include "cpu/cpu.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include "cpu/avx2.h"
#include "cpu/indexer_scales.h"

/* The sum of squares in the reference's order, every lane a partial sum:
 * Triton lane t holds dims 4t .. 4t + 3, two 32-bit words of the row; the
 * even words (dims 4t, 4t + 1) of dims 32g .. 32g + 31 gathered by one
 * shuffle, the odd ones (4t + 2, 4t + 3) by another, give 8 lanes' four
 * fma operands, lanes t = 8g + (0 1 4 5 2 3 6 7) (the shuffle's order; the
 * same in both).  The xor butterfly then adds g and g ^ 2 (m = 16), g and
 * g ^ 1 (8), the 64-bit halves of each 128-bit lane (4), the 128-bit lanes
 * (2) and neighbouring lanes (1): a + b = b + a exactly.  Half the
 * multiplies of pairs in 32-bit lanes (odd lanes idle): 7.8 -> 5.4 ns a
 * cache-resident row on a Zen 4. */
AVX2 float indexer_sum_squares_avx2(const uint16_t *k) {
  const __m256i hi = _mm256_set1_epi32((int)0xFFFF0000u);
  __m256 v[4];
  for (int g = 0; g < 4; g++) {
    const __m256 z0 = _mm256_loadu_ps((const float *)(k + 32 * g));
    const __m256 z1 = _mm256_loadu_ps((const float *)(k + 32 * g + 16));
    const __m256i ab = _mm256_castps_si256(_mm256_shuffle_ps(z0, z1, 0x88)); /* dims 4t, 4t + 1 */
    const __m256i cd = _mm256_castps_si256(_mm256_shuffle_ps(z0, z1, 0xDD)); /* dims 4t + 2, 4t + 3 */
    const __m256 x0 = _mm256_castsi256_ps(_mm256_slli_epi32(ab, 16));
    const __m256 x1 = _mm256_castsi256_ps(_mm256_and_si256(ab, hi));
    const __m256 x2 = _mm256_castsi256_ps(_mm256_slli_epi32(cd, 16));
    const __m256 x3 = _mm256_castsi256_ps(_mm256_and_si256(cd, hi));
    v[g] = _mm256_fmadd_ps(x3, x3, _mm256_fmadd_ps(x2, x2, _mm256_fmadd_ps(x0, x0, _mm256_mul_ps(x1, x1))));
  }
  __m256 w = _mm256_add_ps(_mm256_add_ps(v[0], v[2]), _mm256_add_ps(v[1], v[3])); /* m = 16, 8 */
  w = _mm256_add_ps(w, _mm256_permute_ps(w, 0x4E));                                  /* m = 4 */
  const __m128 x = _mm_add_ps(_mm256_castps256_ps128(w), _mm256_extractf128_ps(w, 1)); /* m = 2 */
  return _mm_cvtss_f32(_mm_add_ps(x, _mm_permute_ps(x, 0xB1)));                      /* m = 1 */
}

/* indexer_rstd_of_sum of sum[0 .. 16), as indexer_rstd16_avx512, four
 * lanes of double at a time. */
AVX2 void indexer_rstd16_avx2(const float *sum, float eps, float *rstd, int *nonfinite) {
  for (int i = 0; i < 16; i += 4) {
    const __m128 var = _mm_div_ps(_mm_loadu_ps(sum + i), _mm_set1_ps((float)INDEXER_DIM));
    const __m256d d = _mm256_cvtps_pd(_mm_add_ps(var, _mm_set1_ps(eps)));
    const __m128 r = _mm256_cvtpd_ps(_mm256_div_pd(_mm256_set1_pd(1.0), _mm256_sqrt_pd(d)));
    _mm_storeu_ps(rstd + i, r);
    const __m128i inf = _mm_set1_epi32(0x7F800000); /* not finite: all exponent bits set */
    const __m128i bad = _mm_or_si128(_mm_cmpeq_epi32(_mm_and_si128(_mm_castps_si128(var), inf), inf),
                                     _mm_cmpeq_epi32(_mm_and_si128(_mm_castps_si128(r), inf), inf));
    _mm_storeu_si128((__m128i *)(nonfinite + i), _mm_srli_epi32(bad, 31));
  }
}

/* bf16_to_f32(f32_to_bf16(x)) on 8 lanes (RNE) for x whose NaNs have zero
 * low halves (see norm_rope); the low half is left when `keep` (the caller
 * takes only the high half). */
static inline AVX2 __m256i round_bf16x8(__m256 f, int keep) {
  const __m256i u = _mm256_castps_si256(f);
  const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1));
  const __m256i r = _mm256_add_epi32(u, _mm256_add_epi32(lsb, _mm256_set1_epi32(0x7FFF)));
  return keep ? r : _mm256_and_si256(r, _mm256_set1_epi32((int)0xFFFF0000u));
}

/* The unrotated half's -0 (see norm_rope): even (odd) -0 lanes of h[0 .. 3]
 * become +0 where the partner's sign is set (clear). */
static AVX2 void unrotated_zeros(__m256i *h) {
  for (int p = 0; p < 4; p++) {
    const __m256i partner = _mm256_or_si256(_mm256_slli_epi32(h[p], 16), _mm256_srli_epi32(h[p], 16));
    const __m256i flip = _mm256_xor_si256(_mm256_srai_epi16(partner, 15), _mm256_set1_epi32((int)0xFFFF0000u));
    const __m256i z = _mm256_cmpeq_epi16(h[p], _mm256_set1_epi16((short)0x8000));
    h[p] = _mm256_andnot_si256(_mm256_and_si256(z, flip), h[p]);
  }
}

/* RMSNorm then RoPE of one row as bf16 bits: h[p] = dims 16p .. 16p + 15 in
 * order.  Returns 0 when a cos / sin entry is NaN (the row is then the
 * reference's).  Why no NaN test in the rounding: with finite tables and
 * rstd every NaN here is a bf16 input's or the default one, whose low half
 * is zero, and the rounding's add keeps such a NaN a NaN (an arbitrary
 * payload could carry into the sign); the quantizers send any non-finite
 * result to the reference.  Inlined and unrolled: h stays in registers for
 * the quantizer.  Pairs 0..31 rotate with cos 1, sin 0: fma(e, 1, -(o * 0))
 * is e and fma(o, 1, e * 0) is o for finite e, o (already bf16 values),
 * but where e (o) is -0 and o's sign is set (e's clear) the sum is +0 (a
 * non-finite partner makes a NaN: such rows go to the reference anyway);
 * that test, not the 4 products and sums a vector, is what those pairs
 * cost; made here when `zeros`, else by the caller (unrotated_zeros) when
 * it finds a zero. */
static inline AVX2 INLINE int norm_rope(const uint16_t *k, const float *we, const float *wo, const float *cos_sin,
                                        float rstd, int zeros, __m256i *h) {
  const __m256 r = _mm256_set1_ps(rstd);
  const __m256i hi = _mm256_set1_epi32((int)0xFFFF0000u);
  __m256 nan = _mm256_setzero_ps();
  __m256i negz = _mm256_setzero_si256();
#pragma GCC unroll 8
  for (int p = 0; p < 8; p++) {
    const __m256i z = _mm256_loadu_si256((const __m256i *)(k + 16 * p));
    const __m256 k0 = _mm256_castsi256_ps(_mm256_slli_epi32(z, 16)), k1 = _mm256_castsi256_ps(_mm256_and_si256(z, hi));
    const __m256 e = _mm256_mul_ps(_mm256_mul_ps(k0, r), _mm256_loadu_ps(we + 8 * p));
    const __m256 o = _mm256_mul_ps(_mm256_mul_ps(k1, r), _mm256_loadu_ps(wo + 8 * p));
    __m256i re, ro;
    if (p < 4) {
      re = round_bf16x8(e, 1), ro = round_bf16x8(o, 1);
    } else {
      const __m256 c = _mm256_loadu_ps(cos_sin + 8 * (p - 4)), s = _mm256_loadu_ps(cos_sin + 32 + 8 * (p - 4));
      nan = _mm256_or_ps(nan, _mm256_cmp_ps(c, s, _CMP_UNORD_Q));
      const __m256 ef = _mm256_castsi256_ps(round_bf16x8(e, 0)), of = _mm256_castsi256_ps(round_bf16x8(o, 0));
      re = round_bf16x8(_mm256_fmsub_ps(ef, c, _mm256_mul_ps(of, s)), 1); /* fma(e, c, -(o * s)) */
      ro = round_bf16x8(_mm256_fmadd_ps(of, c, _mm256_mul_ps(ef, s)), 1);
    }
    h[p] = _mm256_blend_epi16(_mm256_srli_epi32(re, 16), ro, 0xAA);
    if (zeros && p < 4) negz = _mm256_or_si256(negz, _mm256_cmpeq_epi16(h[p], _mm256_set1_epi16((short)0x8000)));
  }
  if (zeros && _mm256_movemask_epi8(negz)) unrotated_zeros(h); /* rare */
  return !_mm256_movemask_ps(nan);
}

/* The largest of 16 unsigned 16-bit lanes. */
static inline AVX2 uint32_t max_u16(__m256i m) {
  const __m128i x = _mm_max_epu16(_mm256_castsi256_si128(m), _mm256_extracti128_si256(m, 1));
  return 0xFFFFu & ~(uint32_t)_mm_cvtsi128_si32(_mm_minpos_epu16(_mm_xor_si128(x, _mm_set1_epi32(-1))));
}

/* 16 dims' bf16 bits as fp32 even (*re) and odd (*ro) dims, for the 8-lane encoders. */
static inline AVX2 void split16(__m256i h, __m256i *re, __m256i *ro) {
  *re = _mm256_slli_epi32(h, 16);
  *ro = _mm256_and_si256(h, _mm256_set1_epi32((int)0xFFFF0000u));
}

/* The smallest of 16 unsigned 16-bit lanes. */
static inline AVX2 uint32_t min_u16(__m256i m) {
  const __m128i x = _mm_min_epu16(_mm256_castsi256_si128(m), _mm256_extracti128_si256(m, 1));
  return (uint32_t)_mm_cvtsi128_si32(_mm_minpos_epu16(x)) & 0xFFFFu;
}

/* fp8 codes of 16 values from their bits h as 16-bit lanes: fp8_codes16's
 * add on the bits with the sign (for these magnitudes the sum below it is
 * under 0x800: no carry reaches the sign, no borrow leaves it), so after
 * the shift the low byte is the code and the high one the sign << 3, and a
 * multiply-add of bytes (x 1, x 16) makes them code | sign << 7. */
static inline AVX2 INLINE __m256i fp8_codes16s(__m256i h, __m256i k, __m256i one) {
  const __m256i lsb = _mm256_and_si256(_mm256_srli_epi16(h, 4), one);
  const __m256i t = _mm256_srli_epi16(_mm256_add_epi16(_mm256_add_epi16(h, lsb), k), 4);
  return _mm256_maddubs_epi16(t, _mm256_set1_epi16(0x1001));
}

/* A row with a value below the normal codes (or a zero): the fp32 encoder
 * for the 16 dims that hold one, fp8_codes16 for the others. */
static AVX2 void fp8_row_low(const __m256i *h, float inv, __m256i rebias, __m256i low, int fnuz, uint8_t *codes) {
  __m256i c[2];
  for (int p = 0; p < 8; p++) {
    if (_mm256_movemask_epi8(_mm256_cmpgt_epi16(low, mag16(h[p])))) {
      __m256i re, ro;
      split16(h[p], &re, &ro);
      const __m256 v = _mm256_set1_ps(inv);
      c[p & 1] = _mm256_or_si256(codes8(re, v, fnuz), _mm256_slli_epi32(codes8(ro, v, fnuz), 16));
    } else {
      c[p & 1] = fp8_codes16(h[p], rebias);
    }
    if (p & 1) /* dims 16 (p - 1) .. 16 p + 15 */
      _mm256_storeu_si256((__m256i *)(codes + 16 * (p - 1)),
                          _mm256_permute4x64_epi64(_mm256_packus_epi16(c[0], c[1]), 0xD8));
  }
}

/* One pass over the row's magnitudes takes both the amax and the least
 * magnitude: when the least is a normal code's (most rows), no vector
 * needs the test or the fp32 encoder. */
AVX2 int indexer_fp8_avx2(const uint16_t *k, const float *we, const float *wo, const float *cos_sin, float rstd,
                          int fnuz, uint8_t *codes, float *scale, uint8_t *ue) {
  __m256i h[8];
  if (!isfinite(rstd) || !norm_rope(k, we, wo, cos_sin, rstd, 0, h)) return 0;
  const __m256i mag = _mm256_set1_epi16(0x7FFF);
  __m256i most = _mm256_and_si256(h[0], mag), least = most;
  for (int p = 1; p < 8; p++) {
    const __m256i m = _mm256_and_si256(h[p], mag);
    most = _mm256_max_epu16(most, m), least = _mm256_min_epu16(least, m);
  }
  const uint32_t bits = max_u16(most);
  if (bits >= 0x7F80u) return 0; /* a NaN or an Inf: the reference's row */
  /* finite: |x| * inv <= the max (the scale bounds amax), no clamp (codes8) */
  const float inv = fp8_scale_fast(f32_from_bits(bits << 16), fnuz, scale, ue);
  const int e = (int)(f32_bits(*scale) >> 23) - 127, b = fnuz ? 8 : 7;
  const int low = ((128 - b + e) << 7) - 1; /* below: subnormal codes (or zero) */
  const __m256i rebias = _mm256_set1_epi16(fp8_codes16_k(e, b));
  const int lo = (int)min_u16(least);
  if (lo < low) {
    if (lo == 0) unrotated_zeros(h); /* a zero: a -0 there may be +0 (not its magnitude) */
    fp8_row_low(h, inv, rebias, _mm256_set1_epi16((int16_t)low), fnuz, codes);
    return 1;
  }
  const __m256i one = _mm256_set1_epi16(1);
#pragma GCC unroll 4
  for (int q = 0; q < 4; q++) /* dims 32q .. 32q + 31 */
    _mm256_storeu_si256((__m256i *)(codes + 32 * q),
                        _mm256_permute4x64_epi64(_mm256_packus_epi16(fp8_codes16s(h[2 * q], rebias, one),
                                                                     fp8_codes16s(h[2 * q + 1], rebias, one)), 0xD8));
  return 1;
}

/* e2m1 codes of 16 values v = x * 2^-l from their bf16 bits h, for l in
 * the fast range: m = |x|'s bits moved down by l (shift = l * 128; those
 * that leave the range are far below 0.25 either way) is v's.  From 1.0 up
 * the grid is a float with one mantissa bit, and e2m1_encode's ties (0.25,
 * 1.25, 2.5, 5 down; 0.75, 1.75, 3.5 up) are to the even code: RNE of m at
 * bit 6 with the exponent rebased in the same add (the code of 1.0, 2, is
 * 0x3F80 >> 6 less 0xFC), an arithmetic shift (below 1.0 it gives at most
 * the right code, or less).  Below 1.0 the codes 0, 1, 2 are the midpoints
 * 0.25 (>) and 0.75 (>=) passed; the larger of the two counts is the code.
 * 12 operations a vector against 16 for the 7 midpoints' compares.  The
 * sign is left to e2m1_bytes. */
static inline AVX2 INLINE __m256i e2m1_codes16(__m256i h, __m256i shift, __m256i mag, __m256i one) {
  const __m256i m = _mm256_sub_epi16(_mm256_and_si256(h, mag), shift);
  const __m256i lsb = _mm256_and_si256(_mm256_srli_epi16(h, 6), one); /* shift is a multiple of 128 */
  const __m256i up = _mm256_srai_epi16(_mm256_add_epi16(_mm256_add_epi16(m, lsb), _mm256_set1_epi16(0x1F - 0x3F00)),
                                       6);
  const __m256i sub = _mm256_abs_epi16(_mm256_add_epi16(_mm256_cmpgt_epi16(m, _mm256_set1_epi16(0x3E80)),
                                                        _mm256_cmpgt_epi16(m, _mm256_set1_epi16(0x3F3F))));
  return _mm256_max_epi16(up, sub);
}

/* Block b's 16 bytes (code 2i | code 2i + 1 << 4) from its codes c0, c1
 * (16-bit lanes, dims in order, the sign bit 8 set or not) and bits h0, h1,
 * in 16-bit lanes: dims 32b + 0..7, 16..23 | 8..15, 24..31 (the packs'
 * order).  The signs come from a saturating pack of the bits (a negative
 * bf16 is at most -128 as int16: byte 0x80), bit 7 moved to bit 3; one
 * multiply-add of bytes joins each pair. */
static inline AVX2 INLINE __m256i e2m1_bytes(__m256i c0, __m256i c1, __m256i h0, __m256i h1) {
  const __m256i sign = _mm256_and_si256(_mm256_srli_epi16(_mm256_packs_epi16(h0, h1), 4), _mm256_set1_epi8(8));
  return _mm256_maddubs_epi16(_mm256_or_si256(_mm256_packus_epi16(c0, c1), sign), _mm256_set1_epi16(0x1001));
}

/* Two blocks' bytes (e2m1_bytes) stored in dim order: per 128-bit lane the
 * pack holds 8 dims' 4 bytes of each quarter, the dword permutation puts
 * them in order. */
static inline AVX2 INLINE void e2m1_store2(__m256i q0, __m256i q1, uint8_t *packed) {
  _mm256_storeu_si256((__m256i *)packed,
                      _mm256_permutevar8x32_epi32(_mm256_packus_epi16(q0, q1),
                                                  _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7)));
}

/* The 4 blocks' amax (block b = dims 32b .. 32b + 31 = h[2b], h[2b + 1]) in
 * 16-bit lanes 0..3: one reduction for all (interleaving the blocks' lanes
 * halves the vectors at each step) instead of a horizontal one a block. */
static inline AVX2 INLINE __m128i block_amax4(const __m256i *h, __m256i mag) {
  __m128i x[4];
  for (int b = 0; b < 4; b++) {
    const __m256i m = _mm256_max_epu16(_mm256_and_si256(h[2 * b], mag), _mm256_and_si256(h[2 * b + 1], mag));
    x[b] = _mm_max_epu16(_mm256_castsi256_si128(m), _mm256_extracti128_si256(m, 1));
  }
  const __m128i u01 = _mm_max_epu16(_mm_unpacklo_epi16(x[0], x[1]), _mm_unpackhi_epi16(x[0], x[1]));
  const __m128i u23 = _mm_max_epu16(_mm_unpacklo_epi16(x[2], x[3]), _mm_unpackhi_epi16(x[2], x[3]));
  const __m128i v = _mm_max_epu16(_mm_unpacklo_epi32(u01, u23), _mm_unpackhi_epi32(u01, u23));
  return _mm_max_epu16(v, _mm_unpackhi_epi64(v, v));
}

/* The bytes of a row with a block outside the fast range, a block at a
 * time: such a block by the fp32 encoder, 2^-l its factor (l = shift / 128
 * <= 126: normal). */
static AVX2 void mxfp4_blocks_wide(const __m256i *h, __m128i shift, uint8_t *packed) {
  /* e2m1_encode's grid midpoints: > where the tie goes down, >= where up */
  const e2m1_bounds mid = {{0.25f, 0.75f, 1.25f, 1.75f, 2.5f, 3.5f, 5.0f}};
  int16_t sh[8];
  _mm_storeu_si128((__m128i *)sh, shift);
  __m256i q[4];
  for (int b = 0; b < 4; b++) {
    const int l = sh[b] / 128;
    __m256i c[2]; /* 16-bit lanes: dims 16p .. 16p + 15, p = 2b, 2b + 1 */
    for (int i = 0; i < 2; i++) {
      if (l >= E2M1_PAIRS_POW2_MIN && l <= E2M1_PAIRS_POW2_MAX) {
        c[i] = e2m1_codes16(h[2 * b + i], _mm256_set1_epi16(sh[b]), _mm256_set1_epi16(0x7FFF), _mm256_set1_epi16(1));
      } else {
        __m256i re, ro;
        split16(h[2 * b + i], &re, &ro);
        const __m256 s = _mm256_set1_ps(pow2f(-l));
        const __m256i ce = e2m1_codes8(_mm256_castps_si256(_mm256_mul_ps(_mm256_castsi256_ps(re), s)), &mid);
        const __m256i co = e2m1_codes8(_mm256_castps_si256(_mm256_mul_ps(_mm256_castsi256_ps(ro), s)), &mid);
        c[i] = _mm256_or_si256(ce, _mm256_slli_epi32(co, 16));
      }
    }
    q[b] = e2m1_bytes(c[0], c[1], h[2 * b], h[2 * b + 1]);
  }
  e2m1_store2(q[0], q[1], packed), e2m1_store2(q[2], q[3], packed + 32);
}

/* The scale byte of a finite amax a (bf16 bits, at least the floor
 * 6 * 2^-126 = 0x01C0): l = ceil(log2(a / 6)), 6 = 1.5 * 2^2, is a's
 * exponent less 2, plus 1 when its mantissa passes 1.5 (the carry of adding
 * 0x3F), within -126..126: no clamp acts (indexer_mxfp4_avx512's), here on
 * the 4 blocks' lanes at once.  A row whose blocks all have l in the fast
 * range (e2m1_codes16) takes the straight code; others a block at a time. */
AVX2 int indexer_mxfp4_avx2(const uint16_t *k, const float *we, const float *wo, const float *cos_sin, float rstd,
                            uint8_t *packed, uint8_t *scales) {
  __m256i h[8];
  if (!isfinite(rstd) || !norm_rope(k, we, wo, cos_sin, rstd, 1, h)) return 0;
  const __m256i mag = _mm256_set1_epi16(0x7FFF), one = _mm256_set1_epi16(1);
  const __m128i a = block_amax4(h, mag);
  if (_mm_movemask_epi8(_mm_cmpgt_epi16(a, _mm_set1_epi16(0x7F7F))) & 0xFF) return 0; /* a NaN or an Inf */
  const __m128i byte = _mm_sub_epi16(_mm_srli_epi16(_mm_add_epi16(_mm_max_epu16(a, _mm_set1_epi16(0x01C0)),
                                                                  _mm_set1_epi16(0x3F)), 7), _mm_set1_epi16(2));
  const uint32_t sb = (uint32_t)_mm_cvtsi128_si32(_mm_packus_epi16(byte, byte)); /* block b's in byte b */
  memcpy(scales, &sb, sizeof sb);
  const __m128i fast = _mm_and_si128(_mm_cmpgt_epi16(byte, _mm_set1_epi16(127 + E2M1_PAIRS_POW2_MIN - 1)),
                                     _mm_cmplt_epi16(byte, _mm_set1_epi16(127 + E2M1_PAIRS_POW2_MAX + 1)));
  const __m128i shift = _mm_slli_epi16(_mm_sub_epi16(byte, _mm_set1_epi16(127)), 7); /* l * 128 */
  if ((_mm_movemask_epi8(fast) & 0xFF) != 0xFF) {
    mxfp4_blocks_wide(h, shift, packed);
    return 1;
  }
  int16_t sh[8]; /* block b's l * 128 in sh[b]: a broadcast from memory each */
  _mm_storeu_si128((__m128i *)sh, shift);
  __m256i q[4];
#pragma GCC unroll 4
  for (int b = 0; b < INDEXER_MXFP4_NUM_SCALES; b++) {
    const __m256i s = _mm256_set1_epi16(sh[b]);
    q[b] = e2m1_bytes(e2m1_codes16(h[2 * b], s, mag, one), e2m1_codes16(h[2 * b + 1], s, mag, one), h[2 * b],
                      h[2 * b + 1]);
  }
  e2m1_store2(q[0], q[1], packed), e2m1_store2(q[2], q[3], packed + 32);
  return 1;
}

#else

float indexer_sum_squares_avx2(const uint16_t *k) { return (void)k, 0.0f; }
void indexer_rstd16_avx2(const float *sum, float eps, float *rstd, int *nonfinite) {
  (void)sum, (void)eps, (void)rstd, (void)nonfinite;
}
int indexer_fp8_avx2(const uint16_t *k, const float *we, const float *wo, const float *cos_sin, float rstd, int fnuz,
                     uint8_t *codes, float *scale, uint8_t *ue) {
  return (void)k, (void)we, (void)wo, (void)cos_sin, (void)rstd, (void)fnuz, (void)codes, (void)scale, (void)ue, 0;
}
int indexer_mxfp4_avx2(const uint16_t *k, const float *we, const float *wo, const float *cos_sin, float rstd,
                       uint8_t *packed, uint8_t *scales) {
  return (void)k, (void)we, (void)wo, (void)cos_sin, (void)rstd, (void)packed, (void)scales, 0;
}

#endif
