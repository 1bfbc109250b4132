/* The AVX2 CPU path of indexer_k_norm_rope_store (NUMERICS §2.4, §10), for
 * processors without AVX-512: the steps of src/cpu/indexer_avx512.c on 8
 * lanes, byte-identical to formats/ref.h's indexer_*_ref, which the case
 * registry checks on every input (ctest ops_cpu_paths runs each path the
 * machine has).  The sum of squares keeps the reference's 32 partial sums
 * (4 dims each, fmas in its order) and its xor butterfly: the strides 16, 8
 * and 4 are adds of whole vectors, 2 and 1 adds of a vector and its
 * permutation (each level adds the reference's pairs, and a + b = b + a
 * exactly).  After RMSNorm and RoPE a row is 8 vectors of 16
 * bf16 in dim order, and the quantizers work on those bits, 16 lanes a
 * vector: every scale is a power of two, so a value times it is its bits
 * with the exponent moved (fp8: rounded at bit 4, rebiased; e2m1: compared
 * with the midpoints' bits).  A row whose results hold a NaN or an Inf, or
 * whose cos / sin or rstd is not finite, is left to the reference (the
 * quantizers return 0), and so is a call whose weight holds a NaN
 * (src/cpu/indexer_cpu.c). */
#include "cpu/cpu.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include "cpu/avx2.h"
#include "cpu/indexer_scales.h"

/* The sum of squares in the reference's order (indexer_avx512.c's, on 8
 * lanes): Triton lane t holds dims 4t .. 4t + 3 = the pairs (lanes) 2j and
 * 2j + 1 of vector v = t / 4 (16 dims), the odd lane's pair moved down by
 * a 64-bit shift; the partials sit in the even lanes. */
AVX2 float indexer_sum_squares_avx2(const uint16_t *k) {
  __m256 c[8];
  for (int v = 0; v < 8; v++) {
    const __m256i z = _mm256_loadu_si256((const __m256i *)(k + 16 * v));
    const __m256 e = _mm256_castsi256_ps(_mm256_slli_epi32(z, 16));
    const __m256 o = _mm256_castsi256_ps(_mm256_and_si256(z, _mm256_set1_epi32((int)0xFFFF0000u)));
    const __m256 e1 = _mm256_castsi256_ps(_mm256_srli_epi64(_mm256_castps_si256(e), 32));
    const __m256 o1 = _mm256_castsi256_ps(_mm256_srli_epi64(_mm256_castps_si256(o), 32));
    c[v] = _mm256_fmadd_ps(o1, o1, _mm256_fmadd_ps(e1, e1, _mm256_fmadd_ps(e, e, _mm256_mul_ps(o, o))));
  }
  /* lane 2j of c[v]: Triton lane 4v + j; m = 16, 8, 4 pair vectors 4, 2, 1 apart */
  __m256 w = _mm256_add_ps(_mm256_add_ps(_mm256_add_ps(c[0], c[4]), _mm256_add_ps(c[2], c[6])),
                           _mm256_add_ps(_mm256_add_ps(c[1], c[5]), _mm256_add_ps(c[3], c[7])));
  w = _mm256_add_ps(w, _mm256_permute2f128_ps(w, w, 1)); /* m = 2 */
  w = _mm256_add_ps(w, _mm256_permute_ps(w, 0x4E));      /* m = 1 */
  return _mm256_cvtss_f32(w);
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

/* RMSNorm then RoPE of one row as bf16 bits: h[p] = dims 16p .. 16p + 15 in
 * order.  Returns 0 when a cos / sin entry is NaN (the row is then the
 * reference's).  Why no NaN test in the rounding: with finite tables and
 * rstd every NaN here is a bf16 input's or the default one, whose low half
 * is zero, and the rounding's add keeps such a NaN a NaN (an arbitrary
 * payload could carry into the sign); the quantizers send any non-finite
 * result to the reference.  Pairs 0..31 rotate with cos 1, sin 0, which is
 * e - o * 0 and o + e * 0 exactly (only the sign of a zero can change), and
 * those are bf16 values already. */
static AVX2 int norm_rope(const uint16_t *k, const float *we, const float *wo, const float *cos_sin, float rstd,
                          __m256i *h) {
  const __m256 r = _mm256_set1_ps(rstd), zero = _mm256_setzero_ps();
  __m256 nan = zero;
  for (int p = 0; p < 8; p++) {
    const __m256i z = _mm256_loadu_si256((const __m256i *)(k + 16 * p));
    const __m256 k0 = _mm256_castsi256_ps(_mm256_slli_epi32(z, 16));
    const __m256 k1 = _mm256_castsi256_ps(_mm256_and_si256(z, _mm256_set1_epi32((int)0xFFFF0000u)));
    const __m256 e = _mm256_castsi256_ps(round_bf16x8(_mm256_mul_ps(_mm256_mul_ps(k0, r), _mm256_loadu_ps(we + 8 * p)), 0));
    const __m256 o = _mm256_castsi256_ps(round_bf16x8(_mm256_mul_ps(_mm256_mul_ps(k1, r), _mm256_loadu_ps(wo + 8 * p)), 0));
    __m256i re, ro;
    if (p < 4) {
      re = _mm256_castps_si256(_mm256_sub_ps(e, _mm256_mul_ps(o, zero)));
      ro = _mm256_castps_si256(_mm256_add_ps(o, _mm256_mul_ps(e, zero)));
    } else {
      const __m256 c = _mm256_loadu_ps(cos_sin + 8 * (p - 4)), s = _mm256_loadu_ps(cos_sin + 32 + 8 * (p - 4));
      nan = _mm256_or_ps(nan, _mm256_cmp_ps(c, s, _CMP_UNORD_Q));
      re = round_bf16x8(_mm256_fmsub_ps(e, c, _mm256_mul_ps(o, s)), 1); /* fma(e, c, -(o * s)) */
      ro = round_bf16x8(_mm256_fmadd_ps(o, c, _mm256_mul_ps(e, s)), 1);
    }
    h[p] = _mm256_blend_epi16(_mm256_srli_epi32(re, 16), ro, 0xAA);
  }
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

AVX2 int indexer_fp8_avx2(const uint16_t *k, const float *we, const float *wo, const float *cos_sin, float rstd,
                          int fnuz, uint8_t *codes, float *scale, uint8_t *ue) {
  __m256i h[8];
  if (!isfinite(rstd) || !norm_rope(k, we, wo, cos_sin, rstd, h)) return 0;
  __m256i m = mag16(h[0]);
  for (int p = 1; p < 8; p++) m = _mm256_max_epu16(m, mag16(h[p]));
  const uint32_t bits = max_u16(m);
  if (bits >= 0x7F80u) return 0; /* a NaN or an Inf: the reference's row */
  /* finite: |x| * inv <= the max (the scale bounds amax), no clamp (codes8) */
  const float inv = fp8_scale_fast(f32_from_bits(bits << 16), fnuz, scale, ue);
  const int e = (int)(f32_bits(*scale) >> 23) - 127, b = fnuz ? 8 : 7;
  const __m256i rebias = _mm256_set1_epi16(fp8_codes16_k(e, b));
  const __m256i low = _mm256_set1_epi16((int16_t)(((128 - b + e) << 7) - 1)); /* below: subnormal codes */
  __m256i c[2];
  for (int p = 0; p < 8; p++) {
    if (_mm256_movemask_epi8(_mm256_cmpgt_epi16(low, mag16(h[p])))) { /* rare: the fp32 encoder */
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
  return 1;
}

/* e2m1 codes of 16 values x * 2^-l from their bf16 bits h, for l in the
 * fast range: the magnitudes' bits moved down by l (those that leave the
 * range are below 0.25 either way) against the midpoints' bits thr[]
 * (e2m1_thresholds), -1 where the comparison is >= (the tie goes up), the
 * sign kept. */
static inline AVX2 INLINE __m256i e2m1_codes16(__m256i h, __m256i shift, const __m256i *thr) {
  const __m256i m = _mm256_sub_epi16(mag16(h), shift);
#define GT(i) _mm256_cmpgt_epi16(m, thr[i])
  /* the count of bounds passed: minus the sum of the masks, as a tree */
  const __m256i s = _mm256_add_epi16(_mm256_add_epi16(GT(0), GT(1)), _mm256_add_epi16(GT(2), GT(3)));
  const __m256i c = _mm256_sub_epi16(_mm256_setzero_si256(),
                                     _mm256_add_epi16(s, _mm256_add_epi16(_mm256_add_epi16(GT(4), GT(5)), GT(6))));
#undef GT
  return _mm256_or_si256(c, _mm256_and_si256(_mm256_srli_epi16(h, 12), _mm256_set1_epi16(8)));
}

/* The midpoints' bf16 bits (odd ones less 1: > where the tie goes up), in
 * registers for a whole row: built once, where the compiler otherwise
 * rebuilt each from an immediate every vector (a third of the encoder). */
static inline AVX2 INLINE void e2m1_thresholds(__m256i *thr) {
  static const int16_t t[7] = {0x3E80, 0x3F3F, 0x3FA0, 0x3FDF, 0x4020, 0x405F, 0x40A0};
  for (int i = 0; i < 7; i++) {
    thr[i] = _mm256_set1_epi16(t[i]);
    __asm__("" : "+x"(thr[i])); /* opaque: kept in its register, not rematerialized */
  }
}

AVX2 int indexer_mxfp4_avx2(const uint16_t *k, const float *we, const float *wo, const float *cos_sin, float rstd,
                            uint8_t *packed, uint8_t *scales) {
  __m256i h[8];
  if (!isfinite(rstd) || !norm_rope(k, we, wo, cos_sin, rstd, h)) return 0;
  uint32_t bm[INDEXER_MXFP4_NUM_SCALES]; /* block b = dims 32b .. 32b + 31 = h[2b], h[2b + 1] */
  for (int b = 0; b < INDEXER_MXFP4_NUM_SCALES; b++) {
    bm[b] = max_u16(_mm256_max_epu16(mag16(h[2 * b]), mag16(h[2 * b + 1])));
    if (bm[b] >= 0x7F80u) return 0; /* a NaN or an Inf: the reference's row */
  }
  /* e2m1_encode's grid midpoints: > where the tie goes down, >= where up */
  const e2m1_bounds mid = {{0.25f, 0.75f, 1.25f, 1.75f, 2.5f, 3.5f, 5.0f}};
  __m256i thr[7];
  e2m1_thresholds(thr);
  uint8_t sb[INDEXER_MXFP4_NUM_SCALES];
  __m256i pb[8]; /* value pair j of dims 16p .. 16p + 15 in 32-bit lane j: the low code + 16 x the high one */
  for (int b = 0; b < INDEXER_MXFP4_NUM_SCALES; b++) {
    float inv;
    sb[b] = mxfp4_scale_fast(f32_from_bits(bm[b] << 16), &inv);
    const int l = sb[b] - 127;
    for (int p = 2 * b; p < 2 * b + 2; p++) {
      __m256i c; /* 16-bit lanes: dims 16p .. 16p + 15 */
      if (l >= E2M1_PAIRS_POW2_MIN && l <= E2M1_PAIRS_POW2_MAX) {
        c = e2m1_codes16(h[p], _mm256_set1_epi16((int16_t)(l * 128)), thr);
      } else {
        __m256i re, ro;
        split16(h[p], &re, &ro);
        const __m256 s = _mm256_set1_ps(inv);
        c = _mm256_or_si256(e2m1_codes8(_mm256_castps_si256(_mm256_mul_ps(_mm256_castsi256_ps(re), s)), &mid),
                            _mm256_slli_epi32(e2m1_codes8(_mm256_castps_si256(_mm256_mul_ps(_mm256_castsi256_ps(ro), s)), &mid), 16));
      }
      pb[p] = _mm256_madd_epi16(c, _mm256_set1_epi32(0x00100001));
    }
  }
  /* byte i = code 2i | code 2i+1 << 4, 4 vectors a store (the NVFP4
   * insert's packing: per 128-bit lane the bytes of pb[q .. q + 3], pairs
   * 0-3 | 4-7; the dword permutation puts each vector's 8 together):
   * cache-resident rows 54 -> 53 ns against a shuffle and an 8-byte store a vector) */
  for (int q = 0; q < 8; q += 4) {
    const __m256i w = _mm256_packus_epi16(_mm256_packs_epi32(pb[q], pb[q + 1]), _mm256_packs_epi32(pb[q + 2], pb[q + 3]));
    _mm256_storeu_si256((__m256i *)(packed + 8 * q), _mm256_permutevar8x32_epi32(w, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7)));
  }
  memcpy(scales, sb, sizeof sb);
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
