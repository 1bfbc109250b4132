/* The AVX2 CPU path of indexer_k_norm_rope_store (NUMERICS §2.4, §10), for
 * processors without AVX-512: the steps of src/cpu/indexer_avx512.c on 8
 * lanes, byte-identical to formats/ref.h's indexer_*_ref, which the case
 * registry checks on every input (ctest ops_cpu_paths runs each path the
 * machine has).  The sum of squares keeps the reference's 32 partial sums
 * (4 dims each, fmas in its order) and its xor butterfly: after an in-lane
 * 4 x 4 transpose the partials of groups 0, 2, 4, 6 | 1, 3, 5, 7 sit in the
 * lanes, so the strides 16 and 8 are vector adds and 4, 2, 1 are adds of a
 * vector and its permutation (each level adds the reference's pairs, and
 * a + b = b + a exactly).  A row whose results hold a NaN or an Inf is left
 * to the reference (the quantizers return 0). */
#include "cpu/cpu.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include "cpu/avx2.h"
#include "cpu/indexer_scales.h"

/* 8 bf16 at k as fp32. */
static inline AVX2 __m256 bf16x8(const uint16_t *k) {
  return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)k)), 16));
}

AVX2 float indexer_sum_squares_avx2(const uint16_t *k) {
  __m256 p[4]; /* p[v]: groups 8v + (0, 2, 4, 6 | 1, 3, 5, 7) */
  for (int v = 0; v < 4; v++) {
    __m256 a = bf16x8(k + 32 * v), b = bf16x8(k + 32 * v + 8), c = bf16x8(k + 32 * v + 16), d = bf16x8(k + 32 * v + 24);
    /* in each 128-bit lane a 4 x 4 transpose: e[i] = dim i of the lane's four groups */
    const __m256 t0 = _mm256_unpacklo_ps(a, b), t1 = _mm256_unpackhi_ps(a, b);
    const __m256 t2 = _mm256_unpacklo_ps(c, d), t3 = _mm256_unpackhi_ps(c, d);
    const __m256 e0 = _mm256_shuffle_ps(t0, t2, 0x44), e1 = _mm256_shuffle_ps(t0, t2, 0xEE);
    const __m256 e2 = _mm256_shuffle_ps(t1, t3, 0x44), e3 = _mm256_shuffle_ps(t1, t3, 0xEE);
    __m256 acc = _mm256_fmadd_ps(e0, e0, _mm256_mul_ps(e1, e1));
    acc = _mm256_fmadd_ps(e2, e2, acc);
    p[v] = _mm256_fmadd_ps(e3, e3, acc);
  }
  __m256 w = _mm256_add_ps(_mm256_add_ps(p[0], p[2]), _mm256_add_ps(p[1], p[3])); /* m = 16, 8 */
  w = _mm256_add_ps(w, _mm256_permute_ps(w, 0x4E));                               /* m = 4 */
  w = _mm256_add_ps(w, _mm256_permute_ps(w, 0xB1));                               /* m = 2 */
  w = _mm256_add_ps(w, _mm256_permute2f128_ps(w, w, 1));                          /* m = 1 */
  return _mm256_cvtss_f32(w);
}

/* bf16_to_f32(f32_to_bf16(x)) on 8 lanes (RNE; NaN -> 0x7FFF). */
static inline AVX2 __m256 round_bf16x8(__m256 f) {
  const __m256i u = _mm256_castps_si256(f);
  const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1));
  const __m256i r = _mm256_and_si256(_mm256_add_epi32(u, _mm256_add_epi32(lsb, _mm256_set1_epi32(0x7FFF))),
                                     _mm256_set1_epi32((int)0xFFFF0000u));
  return _mm256_blendv_ps(_mm256_castsi256_ps(r), _mm256_castsi256_ps(_mm256_set1_epi32(0x7FFF0000)),
                          _mm256_cmp_ps(f, f, _CMP_UNORD_Q));
}

/* RMSNorm then RoPE of one row (indexer_avx512.c's norm_rope on 8 lanes):
 * re[p] / ro[p] = the results of dims 16p + 2i / 16p + 2i + 1 (i = lane);
 * pairs 0..31 rotate with cos 1, sin 0, as arithmetic. */
static AVX2 void norm_rope(const uint16_t *k, const float *we, const float *wo, const float *cos_sin, float rstd,
                           __m256 *re, __m256 *ro) {
  const __m256 r = _mm256_set1_ps(rstd);
  for (int p = 0; p < 8; p++) {
    const __m256i z = _mm256_loadu_si256((const __m256i *)(k + 16 * p));
    const __m256 k0 = _mm256_castsi256_ps(_mm256_slli_epi32(z, 16));
    const __m256 k1 = _mm256_castsi256_ps(_mm256_and_si256(z, _mm256_set1_epi32((int)0xFFFF0000u)));
    const __m256 e = round_bf16x8(_mm256_mul_ps(_mm256_mul_ps(k0, r), _mm256_loadu_ps(we + 8 * p)));
    const __m256 o = round_bf16x8(_mm256_mul_ps(_mm256_mul_ps(k1, r), _mm256_loadu_ps(wo + 8 * p)));
    const __m256 c = p < 4 ? _mm256_set1_ps(1.0f) : _mm256_loadu_ps(cos_sin + 8 * (p - 4));
    const __m256 s = p < 4 ? _mm256_setzero_ps() : _mm256_loadu_ps(cos_sin + 32 + 8 * (p - 4));
    const __m256 neg_os = _mm256_xor_ps(_mm256_mul_ps(o, s), _mm256_castsi256_ps(_mm256_set1_epi32((int)0x80000000u)));
    re[p] = round_bf16x8(_mm256_fmadd_ps(e, c, neg_os));
    ro[p] = round_bf16x8(_mm256_fmadd_ps(o, c, _mm256_mul_ps(e, s)));
  }
}

/* The largest magnitude's bits of n vectors (unsigned order; NaN above Inf). */
static AVX2 uint32_t amax_bits(const __m256 *re, const __m256 *ro, int n) {
  __m256i m = _mm256_setzero_si256();
  const __m256i mag = _mm256_set1_epi32(0x7FFFFFFF);
  for (int p = 0; p < n; p++)
    m = _mm256_max_epu32(m, _mm256_max_epu32(_mm256_and_si256(_mm256_castps_si256(re[p]), mag),
                                             _mm256_and_si256(_mm256_castps_si256(ro[p]), mag)));
  uint32_t lanes[8], best = 0;
  _mm256_storeu_si256((__m256i *)lanes, m);
  for (int i = 0; i < 8; i++) best = lanes[i] > best ? lanes[i] : best;
  return best;
}

AVX2 int indexer_fp8_avx2(const uint16_t *k, const float *we, const float *wo, const float *cos_sin, float rstd,
                          int fnuz, uint8_t *codes, float *scale, uint8_t *ue) {
  __m256 re[8], ro[8];
  norm_rope(k, we, wo, cos_sin, rstd, re, ro);
  const uint32_t bits = amax_bits(re, ro, 8);
  if (bits >= 0x7F800000u) return 0; /* a NaN or an Inf: the reference's row */
  /* finite: |x| * inv <= the max (the scale bounds amax), no clamp (codes8) */
  const __m256 inv = _mm256_set1_ps(fp8_scale_fast(f32_from_bits(bits), fnuz, scale, ue));
  for (int p = 0; p < 8; p++) {
    const __m256i c = _mm256_or_si256(codes8(_mm256_castps_si256(re[p]), inv, fnuz),
                                      _mm256_slli_epi32(codes8(_mm256_castps_si256(ro[p]), inv, fnuz), 8));
    /* 8 (even, odd) byte pairs */
    const __m128i w = _mm_packus_epi32(_mm256_castsi256_si128(c), _mm256_extracti128_si256(c, 1));
    _mm_storeu_si128((__m128i *)(codes + 16 * p), w);
  }
  return 1;
}

AVX2 int indexer_mxfp4_avx2(const uint16_t *k, const float *we, const float *wo, const float *cos_sin, float rstd,
                            uint8_t *packed, uint8_t *scales) {
  __m256 re[8], ro[8];
  norm_rope(k, we, wo, cos_sin, rstd, re, ro);
  if (amax_bits(re, ro, 8) >= 0x7F800000u) return 0; /* a NaN or an Inf: the reference's row */
  /* e2m1_encode's grid midpoints: > where the tie goes down, >= where up */
  const e2m1_bounds mid = {{0.25f, 0.75f, 1.25f, 1.75f, 2.5f, 3.5f, 5.0f}};
  uint8_t sb[INDEXER_MXFP4_NUM_SCALES];
  for (int b = 0; b < INDEXER_MXFP4_NUM_SCALES; b++) { /* block b = pairs 16b .. 16b + 15 = re / ro [2b, 2b + 1] */
    float inv;
    sb[b] = mxfp4_scale_fast(f32_from_bits(amax_bits(re + 2 * b, ro + 2 * b, 2)), &inv);
    const __m256 s = _mm256_set1_ps(inv);
    for (int p = 2 * b; p < 2 * b + 2; p++) {
      const __m256i lo = e2m1_codes8(_mm256_castps_si256(_mm256_mul_ps(re[p], s)), &mid);
      const __m256i hi = e2m1_codes8(_mm256_castps_si256(_mm256_mul_ps(ro[p], s)), &mid);
      _mm_storel_epi64((__m128i *)(packed + 8 * p), low_bytes8(_mm256_or_si256(lo, _mm256_slli_epi32(hi, 4))));
    }
  }
  memcpy(scales, sb, sizeof sb);
  return 1;
}

#else

float indexer_sum_squares_avx2(const uint16_t *k) { return (void)k, 0.0f; }
int indexer_fp8_avx2(const uint16_t *k, const float *we, const float *wo, const float *cos_sin, float rstd, int fnuz,
                     uint8_t *codes, float *scale, uint8_t *ue) {
  return (void)k, (void)we, (void)wo, (void)cos_sin, (void)rstd, (void)fnuz, (void)codes, (void)scale, (void)ue, 0;
}
int indexer_mxfp4_avx2(const uint16_t *k, const float *we, const float *wo, const float *cos_sin, float rstd,
                       uint8_t *packed, uint8_t *scales) {
  return (void)k, (void)we, (void)wo, (void)cos_sin, (void)rstd, (void)packed, (void)scales, 0;
}

#endif
