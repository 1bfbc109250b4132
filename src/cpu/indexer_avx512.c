/* The AVX-512 CPU path of indexer_k_norm_rope_store (NUMERICS §2.4, §10),
 * byte-identical to formats/ref.h's indexer_*_ref: the case registry checks
 * it on every input it generates (ctest ops_cpu_paths), and
 * tests/paths/indexer_paths.c on rows that reach every bf16 value at every
 * scale.  The operations are the reference's, each an IEEE fp32 operation
 * on a lane, in its order: the sum of squares keeps the 32 partial sums and
 * the xor butterfly (a + b = b + a exactly, so each level is one add);
 * RMSNorm and RoPE hold a row as even / odd dimensions (a rotated pair in
 * one lane) and leave it as 4 vectors of 32 bf16 in dim order; the
 * quantizers work on those bits, 32 values a vector (every scale is a power
 * of two: a value times it is its bits with the exponent moved).  A row
 * whose results hold a NaN or an Inf, or whose cos / sin or rstd is not
 * finite, is left to the reference: the quantizers return 0 and the caller
 * (src/cpu/indexer_cpu.c) takes it, as it does for a call whose weight
 * holds a NaN.  On a Zen 4 core a cache-resident row took ~85 ns before
 * this layout (fp32 lanes), ~31 ns (FP8) / ~35 ns (MXFP4) after it. */
#include "cpu/cpu.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include "cpu/avx512.h"
#include "cpu/indexer_scales.h"

#define AVX512F __attribute__((target("avx512f,avx512bw,avx512vl,f16c,fma")))
#define INLINE __attribute__((always_inline))

/* The sum of squares in the reference's order: Triton lane t holds dims
 * 4t .. 4t + 3, the pairs (32-bit lanes) 2j and 2j + 1 of vector p = t / 8
 * (32 dims, j = t % 8); the odd lane's pair moves down by a 64-bit shift
 * for the second and third fmas, so the partials sit in the even lanes.
 * The butterfly: m = 16 and 8 add vectors 2 and 1 apart, m = 4, 2, 1 swap
 * 256-, 128- and 64-bit halves (the odd lanes never reach the even ones).
 * Word permutes (vpermt2w) to gather each lane's 4 dims cost ~11 ns a row
 * here against ~7. */
AVX512F float indexer_sum_squares_avx512(const uint16_t *k) {
  __m512 c[4];
#pragma GCC unroll 4
  for (int p = 0; p < 4; p++) {
    const __m512i z = _mm512_loadu_si512((const void *)(k + 32 * p));
    const __m512 e = _mm512_castsi512_ps(_mm512_slli_epi32(z, 16));
    const __m512 o = _mm512_castsi512_ps(_mm512_and_si512(z, _mm512_set1_epi32((int)0xFFFF0000u)));
    const __m512 e1 = _mm512_castsi512_ps(_mm512_srli_epi64(_mm512_castps_si512(e), 32));
    const __m512 o1 = _mm512_castsi512_ps(_mm512_srli_epi64(_mm512_castps_si512(o), 32));
    c[p] = _mm512_fmadd_ps(o1, o1, _mm512_fmadd_ps(e1, e1, _mm512_fmadd_ps(e, e, _mm512_mul_ps(o, o))));
  }
  __m512 w = _mm512_add_ps(_mm512_add_ps(c[0], c[2]), _mm512_add_ps(c[1], c[3])); /* m = 16, 8 */
  w = _mm512_add_ps(w, _mm512_shuffle_f32x4(w, w, 0x4E));    /* m = 4 */
  w = _mm512_add_ps(w, _mm512_shuffle_f32x4(w, w, 0xB1));    /* m = 2 */
  w = _mm512_add_ps(w, _mm512_shuffle_ps(w, w, 0x4E));       /* m = 1 */
  return _mm512_cvtss_f32(w);
}

/* indexer_rstd_of_sum of sum[0 .. 16): the same IEEE operations (fp32
 * division and add; double square root and division; one rounding to
 * fp32), eight lanes at a time, so the same rstd and flag. */
AVX512F void indexer_rstd16_avx512(const float *sum, float eps, float *rstd, int *nonfinite) {
  for (int i = 0; i < 16; i += 8) {
    const __m256 var = _mm256_div_ps(_mm256_loadu_ps(sum + i), _mm256_set1_ps((float)INDEXER_DIM));
    const __m512d d = _mm512_cvtps_pd(_mm256_add_ps(var, _mm256_set1_ps(eps)));
    const __m256 r = _mm512_cvtpd_ps(_mm512_div_pd(_mm512_set1_pd(1.0), _mm512_sqrt_pd(d)));
    _mm256_storeu_ps(rstd + i, r);
    const __m256i inf = _mm256_set1_epi32(0x7F800000); /* not finite: all exponent bits set */
    const __mmask8 bad = _mm256_cmpeq_epi32_mask(_mm256_and_si256(_mm256_castps_si256(var), inf), inf) |
                         _mm256_cmpeq_epi32_mask(_mm256_and_si256(_mm256_castps_si256(r), inf), inf);
    _mm256_storeu_si256((__m256i *)(nonfinite + i), _mm256_maskz_mov_epi32(bad, _mm256_set1_epi32(1)));
  }
}

/* f rounded to bf16 (RNE) in each lane's high half; the low half cleared,
 * or left when `keep` (the caller then takes only the high half).  No NaN
 * test: see norm_rope.  The +1 of an odd high half as a masked add: no
 * shift, which this loop has enough of. */
static inline AVX512F INLINE __m512i round_hi(__m512 f, int keep) {
  const __m512i u = _mm512_castps_si512(f);
  const __m512i r0 = _mm512_add_epi32(u, _mm512_set1_epi32(0x7FFF));
  const __m512i r = _mm512_mask_add_epi32(r0, _mm512_test_epi32_mask(u, _mm512_set1_epi32(0x10000)), r0, _mm512_set1_epi32(1));
  return keep ? r : _mm512_and_si512(r, _mm512_set1_epi32((int)0xFFFF0000u));
}

/* RMSNorm then RoPE of one row as bf16 bits: h[p] = dims 32p .. 32p + 31 in
 * order.  Returns 0 (the row is then the reference's) when a cos / sin
 * entry is NaN.
 * Why no NaN test in the roundings: with finite tables and rstd every NaN
 * here is a bf16 input's or the default one, whose low half is zero, and
 * the rounding's add keeps such a NaN a NaN (an arbitrary payload could
 * carry into the sign); the quantizers send any non-finite result to the
 * reference.  e * c - o * s is fmsub(e, c, o * s): the reference's
 * fma(e, c, -(o * s)) with the same single rounding.
 * Pairs 0..31 rotate with cos 1, sin 0: fma(e, 1, -(o * 0)) is e and
 * fma(o, 1, e * 0) is o for finite e, o (already bf16 values), but where
 * e (o) is -0 and o's sign is set (e's clear) the sum is +0 (with a
 * non-finite partner it is NaN: such rows go to the reference anyway). */
static inline AVX512F INLINE int norm_rope(const uint16_t *k, const float *we, const float *wo, const float *cos_sin,
                                           float rstd, __m512i *h) {
  const __m512 r = _mm512_set1_ps(rstd);
  __mmask16 nan = 0;
#pragma GCC unroll 4
  for (int p = 0; p < 4; p++) {
    const __m512i z = _mm512_loadu_si512((const void *)(k + 32 * p));
    const __m512 k0 = _mm512_castsi512_ps(_mm512_slli_epi32(z, 16));
    const __m512 k1 = _mm512_castsi512_ps(_mm512_and_si512(z, _mm512_set1_epi32((int)0xFFFF0000u)));
    const __m512 e = _mm512_mul_ps(_mm512_mul_ps(k0, r), _mm512_loadu_ps(we + 16 * p));
    const __m512 o = _mm512_mul_ps(_mm512_mul_ps(k1, r), _mm512_loadu_ps(wo + 16 * p));
    __m512i re, ro;
    if (p < 2) {
      re = round_hi(e, 1), ro = round_hi(o, 1);
    } else {
      const __m512 c = _mm512_loadu_ps(cos_sin + 16 * (p - 2)), s = _mm512_loadu_ps(cos_sin + 32 + 16 * (p - 2));
      nan |= _mm512_cmp_ps_mask(c, s, _CMP_UNORD_Q);
      const __m512 ef = _mm512_castsi512_ps(round_hi(e, 0)), of = _mm512_castsi512_ps(round_hi(o, 0));
      re = round_hi(_mm512_fmsub_ps(ef, c, _mm512_mul_ps(of, s)), 1);
      ro = round_hi(_mm512_fmadd_ps(of, c, _mm512_mul_ps(ef, s)), 1);
    }
    /* dims in order: re's high halves moved into the low ones (a byte shuffle merged into ro) */
    h[p] = _mm512_mask_shuffle_epi8(ro, 0x3333333333333333ull, re, _mm512_set4_epi32(0x0F0E, 0x0B0A, 0x0706, 0x0302));
  }
  for (int p = 0; p < 2; p++) { /* the unrotated half's -0 (see above) */
    const __mmask32 negz = _mm512_cmpeq_epi16_mask(h[p], _mm512_set1_epi16((short)0x8000));
    if (negz) { /* rare: even (odd) lanes become +0 where the partner's sign is set (clear) */
      const __mmask32 partner_neg = _mm512_movepi16_mask(_mm512_rol_epi32(h[p], 16));
      h[p] = _mm512_mask_mov_epi16(h[p], negz & (partner_neg ^ 0xAAAAAAAAu), _mm512_setzero_si512());
    }
  }
  return !nan;
}

/* Lane order of 16 fp32 values (for the fp32 encoders) from 32 bf16 in
 * dim order: *re the even dims, *ro the odd ones. */
static inline AVX512F INLINE void split32(__m512i h, __m512 *re, __m512 *ro) {
  *re = _mm512_castsi512_ps(_mm512_slli_epi32(h, 16));
  *ro = _mm512_castsi512_ps(_mm512_and_si512(h, _mm512_set1_epi32((int)0xFFFF0000u)));
}

/* The largest of 32 unsigned 16-bit lanes. */
static inline AVX512F INLINE uint32_t max_u16x32(__m512i m) {
  const __m256i y = _mm256_max_epu16(_mm512_castsi512_si256(m), _mm512_extracti64x4_epi64(m, 1));
  const __m128i x = _mm_max_epu16(_mm256_castsi256_si128(y), _mm256_extracti128_si256(y, 1));
  return 0xFFFFu & ~(uint32_t)_mm_cvtsi128_si32(_mm_minpos_epu16(_mm_xor_si128(x, _mm_set1_epi32(-1))));
}

AVX512F int indexer_fp8_avx512(const uint16_t *k, const float *we, const float *wo, const float *cos_sin, float rstd,
                               int fnuz, uint8_t *codes, float *scale, uint8_t *ue) {
  __m512i h[4];
  if (!isfinite(rstd) || !norm_rope(k, we, wo, cos_sin, rstd, h)) return 0;
  const lanes16_consts kc = lanes16_consts_of();
  const __m512i m = _mm512_max_epu16(_mm512_max_epu16(mag16(h[0], &kc), mag16(h[1], &kc)),
                                     _mm512_max_epu16(mag16(h[2], &kc), mag16(h[3], &kc)));
  const uint32_t bits = max_u16x32(m);
  if (bits >= 0x7F80u) return 0; /* a NaN or an Inf: the reference's row */
  /* the scale in scalar code: its few instructions run beside the vector work */
  const float inv = fp8_scale_fast(f32_from_bits(bits << 16), fnuz, scale, ue);
  const int e = (int)(f32_bits(*scale) >> 23) - 127; /* amax >= the floor: 2^e is normal */
  /* e4m3_codes16's constants (avx512.h) */
  const __m512i kv = _mm512_set1_epi16((short)(((e + 127 - (fnuz ? 8 : 7)) << 7) - 7));
  const __m512i lo = _mm512_add_epi16(kv, _mm512_set1_epi16(134));
#pragma GCC unroll 4
  for (int p = 0; p < 4; p++) {
    __mmask32 low = 0;
    __m256i c = e4m3_codes16(h[p], kv, lo, fnuz, &kc, &low);
    if (low) { /* rare: a value needs subnormal steps; the fp32 encoder (it clamps: no harm here) */
      __m512 re, ro;
      split32(h[p], &re, &ro);
      c = _mm512_cvtepi32_epi16(_mm512_or_si512(fp8_codes32(re, inv, fnuz), _mm512_slli_epi32(fp8_codes32(ro, inv, fnuz), 8)));
    }
    _mm256_storeu_si256((__m256i *)(codes + 32 * p), c); /* dims in order */
  }
  return 1;
}

/* e2m1 codes | sign << 3 of 32 values x * 2^-l (16-bit lanes) from their
 * bf16 bits h, for 2^-l in the fast range (see indexer_mxfp4_avx512);
 * base = the bits of 0.25 * 2^l.  t = the bits of |x| * 2^-l less those of
 * 0.25, saturating at 0 (at or below 0.25: code 0; a result below the
 * normals, whose bits would not be |x|'s moved, is far below that), at most
 * 0x240 (6.0).  Every midpoint of the e2m1 grid lies at a multiple of 32 of
 * t, so floor(t / 32) + ceil(t / 32) (2q at a multiple, 2q + 1 between)
 * indexes the codes: even entries say which way a midpoint ties
 * (e2m1_encode: 0.25, 1.25, 2.5, 5 down; 0.75, 1.75, 3.5 up). */
static inline AVX512F INLINE __m512i e2m1_codes16(__m512i h, __m512i base, const lanes16_consts *kc) {
  static const int16_t codes[64] __attribute__((aligned(64))) = {
      0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 4, 4, 4, 4, 4, 5, 5, 5, 6, 6, 6, 6, 6, 7, 7};
  const __m512i t = _mm512_min_epu16(_mm512_subs_epu16(mag16(h, kc), base), _mm512_set1_epi16(0x240));
  const __m512i idx = _mm512_add_epi16(_mm512_srli_epi16(t, 5), _mm512_srli_epi16(_mm512_add_epi16(t, _mm512_set1_epi16(31)), 5));
  const __m512i c = _mm512_permutex2var_epi16(_mm512_load_si512((const void *)codes), idx,
                                              _mm512_load_si512((const void *)(codes + 32)));
  return _mm512_ternarylogic_epi32(c, _mm512_srli_epi16(h, 12), _mm512_set1_epi16(8), 0xF8); /* A | (B & C) */
}

/* The fp32 form of the same, for a block outside the fast range: 16 values
 * a vector, the number of grid midpoints |q| passes (> for those that tie
 * down, >= for those that tie up), the sign, NaN -> 0x7. */
static AVX512F __m512i e2m1x16(__m512 q) {
  const __m512 a = _mm512_abs_ps(q);
  static const float tie_down[4] = {0.25f, 1.25f, 2.5f, 5.0f}, tie_up[3] = {0.75f, 1.75f, 3.5f};
  __m512i c = _mm512_setzero_si512();
  const __m512i one = _mm512_set1_epi32(1);
  for (int i = 0; i < 4; i++) c = _mm512_mask_add_epi32(c, _mm512_cmp_ps_mask(a, _mm512_set1_ps(tie_down[i]), _CMP_GT_OQ), c, one);
  for (int i = 0; i < 3; i++) c = _mm512_mask_add_epi32(c, _mm512_cmp_ps_mask(a, _mm512_set1_ps(tie_up[i]), _CMP_GE_OQ), c, one);
  c = _mm512_or_si512(c, _mm512_and_si512(_mm512_srli_epi32(_mm512_castps_si512(q), 28), _mm512_set1_epi32(8)));
  return _mm512_mask_mov_epi32(c, _mm512_cmp_ps_mask(q, q, _CMP_UNORD_Q), _mm512_set1_epi32(7));
}

/* MXFP4: block b = dims 32b .. 32b + 31 = h[b].  The scale byte of a
 * finite amax a (bf16 bits, at least the floor 6 * 2^-126 = 0x01C0):
 * l = ceil(log2(a / 6)), 6 = 1.5 * 2^2, is a's exponent less 2, plus 1
 * when its mantissa passes 1.5 (the carry of adding 0x3F), within -126..126
 * (no clamp acts).  The fast range is l >= -124: there 0.25 * 2^l's bits
 * (base) are a 16-bit value, and a bf16 subnormal's bits moved by -l stay
 * below 0.25's, as its value times 2^-l does (at l = -125 it could reach
 * 0.5). */
AVX512F int indexer_mxfp4_avx512(const uint16_t *k, const float *we, const float *wo, const float *cos_sin, float rstd,
                                 uint8_t *packed, uint8_t *scales) {
  __m512i h[4];
  if (!isfinite(rstd) || !norm_rope(k, we, wo, cos_sin, rstd, h)) return 0;
  const lanes16_consts kc = lanes16_consts_of();
  uint8_t sb[INDEXER_MXFP4_NUM_SCALES];
  /* not unrolled: four copies of the fp32 fallback made it slower (35.8 -> 42.6 ns a row on a Zen 4) */
  for (int b = 0; b < INDEXER_MXFP4_NUM_SCALES; b++) {
    const uint32_t a = max_u16x32(mag16(h[b], &kc));
    if (a >= 0x7F80u) return 0; /* a NaN or an Inf: the reference's row */
    const int byte = (int)(((a < 0x01C0u ? 0x01C0u : a) + 0x3F) >> 7) - 2; /* l + 127 */
    __m512i c;
    sb[b] = (uint8_t)byte;
    if (byte >= 3) {
      c = e2m1_codes16(h[b], _mm512_set1_epi16((short)((byte << 7) - 256)), &kc); /* 0x3E80 + l * 128 */
    } else { /* l < -124: the fp32 form */
      float inv;
      mxfp4_scale_fast(f32_from_bits(a << 16), &inv);
      __m512 re, ro;
      split32(h[b], &re, &ro);
      const __m512 s = _mm512_set1_ps(inv);
      c = _mm512_or_si512(e2m1x16(_mm512_mul_ps(re, s)), _mm512_slli_epi32(e2m1x16(_mm512_mul_ps(ro, s)), 16));
    }
    /* byte i = code 2i | code 2i+1 << 4 */
    _mm_storeu_si128((__m128i *)(packed + 16 * b), _mm512_cvtepi32_epi8(_mm512_or_si512(c, _mm512_srli_epi32(c, 12))));
  }
  memcpy(scales, sb, sizeof sb);
  return 1;
}

#else

float indexer_sum_squares_avx512(const uint16_t *k) { return (void)k, 0.0f; }
void indexer_rstd16_avx512(const float *sum, float eps, float *rstd, int *nonfinite) {
  (void)sum, (void)eps, (void)rstd, (void)nonfinite;
}
int indexer_fp8_avx512(const uint16_t *k, const float *we, const float *wo, const float *cos_sin, float rstd,
                       int fnuz, uint8_t *codes, float *scale, uint8_t *ue) {
  return (void)k, (void)we, (void)wo, (void)cos_sin, (void)rstd, (void)fnuz, (void)codes, (void)scale, (void)ue, 0;
}
int indexer_mxfp4_avx512(const uint16_t *k, const float *we, const float *wo, const float *cos_sin, float rstd,
                         uint8_t *packed, uint8_t *scales) {
  return (void)k, (void)we, (void)wo, (void)cos_sin, (void)rstd, (void)packed, (void)scales, 0;
}

#endif
