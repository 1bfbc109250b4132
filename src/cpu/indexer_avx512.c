/* The AVX-512 CPU path of indexer_k_norm_rope_store (NUMERICS §2.4, §10):
 * the sum of squares, RMSNorm + RoPE and the FP8 / MXFP4 quantizers of one
 * 128-dim row on 16 lanes, byte-identical to formats/ref.h's indexer_*_ref,
 * which the case registry checks on every input it generates (ctest
 * ops_cpu_paths).  The operations are the reference's, each an IEEE fp32
 * operation on a lane (fma where it has fmaf), in its order: the sum of
 * squares keeps the 32 partial sums and the xor butterfly (a + b = b + a
 * exactly, so each level is one add of a vector and its permutation); the
 * rows are held as even / odd dimensions (a rotated pair in one lane); the
 * block scales stay the reference's scalar code (one or four a row). */
#include "cpu/cpu.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include "cpu/avx512.h"
#include "cpu/indexer_scales.h"

#define AVX512F __attribute__((target("avx512f,avx512bw,avx512vl,f16c,fma")))

/* Lane l of E[i] (l = 0..15 of 64 values at k) = value 4l + i. */
static AVX512F void quads(const uint16_t *k, __m512 *e) {
  const __m512i a = _mm512_loadu_si512((const void *)k), b = _mm512_loadu_si512((const void *)(k + 32));
  for (int i = 0; i < 4; i++) {
    const __m512i idx = _mm512_add_epi16(_mm512_set1_epi16((short)i),
                                         _mm512_set_epi16(60, 60, 56, 56, 52, 52, 48, 48, 44, 44, 40, 40, 36, 36, 32, 32,
                                                          28, 28, 24, 24, 20, 20, 16, 16, 12, 12, 8, 8, 4, 4, 0, 0));
    e[i] = _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_permutex2var_epi16(a, idx, b), 16));
  }
}

AVX512F float indexer_sum_squares_avx512(const uint16_t *k) {
  __m512 lo[4], hi[4];
  quads(k, lo), quads(k + 64, hi);
  __m512 v0 = _mm512_fmadd_ps(lo[0], lo[0], _mm512_mul_ps(lo[1], lo[1]));
  __m512 v1 = _mm512_fmadd_ps(hi[0], hi[0], _mm512_mul_ps(hi[1], hi[1]));
  v0 = _mm512_fmadd_ps(lo[3], lo[3], _mm512_fmadd_ps(lo[2], lo[2], v0));
  v1 = _mm512_fmadd_ps(hi[3], hi[3], _mm512_fmadd_ps(hi[2], hi[2], v1));
  __m512 w = _mm512_add_ps(v0, v1);                          /* m = 16 */
  w = _mm512_add_ps(w, _mm512_shuffle_f32x4(w, w, 0x4E));    /* m = 8 */
  w = _mm512_add_ps(w, _mm512_shuffle_f32x4(w, w, 0xB1));    /* m = 4 */
  w = _mm512_add_ps(w, _mm512_shuffle_ps(w, w, 0x4E));       /* m = 2 */
  w = _mm512_add_ps(w, _mm512_shuffle_ps(w, w, 0xB1));       /* m = 1 */
  return _mm512_cvtss_f32(w);
}

/* RMSNorm then RoPE (indexer_norm_rope_ref) of one row: re[p] / ro[p] =
 * the results of dims 32p + 2i / 32p + 2i + 1 (i = lane) as fp32 values of
 * bf16.  we / wo: the weight's even / odd dims; pairs 0..31 rotate with
 * cos 1, sin 0 (the masked load's identity, done as arithmetic too). */
static AVX512F void norm_rope(const uint16_t *k, const float *we, const float *wo, const float *cos_sin, float rstd,
                              __m512 *re, __m512 *ro) {
  const __m512 r = _mm512_set1_ps(rstd);
  for (int p = 0; p < 4; p++) {
    const __m512i z = _mm512_loadu_si512((const void *)(k + 32 * p));
    const __m512 k0 = _mm512_castsi512_ps(_mm512_slli_epi32(z, 16));
    const __m512 k1 = _mm512_castsi512_ps(_mm512_and_si512(z, _mm512_set1_epi32((int)0xFFFF0000u)));
    const __m512 e = round_bf16x16(_mm512_mul_ps(_mm512_mul_ps(k0, r), _mm512_loadu_ps(we + 16 * p)));
    const __m512 o = round_bf16x16(_mm512_mul_ps(_mm512_mul_ps(k1, r), _mm512_loadu_ps(wo + 16 * p)));
    const __m512 c = p < 2 ? _mm512_set1_ps(1.0f) : _mm512_loadu_ps(cos_sin + 16 * (p - 2));
    const __m512 s = p < 2 ? _mm512_setzero_ps() : _mm512_loadu_ps(cos_sin + 32 + 16 * (p - 2));
    const __m512 neg_os = _mm512_castsi512_ps(
        _mm512_xor_si512(_mm512_castps_si512(_mm512_mul_ps(o, s)), _mm512_set1_epi32((int)0x80000000u)));
    re[p] = round_bf16x16(_mm512_fmadd_ps(e, c, neg_os));
    ro[p] = round_bf16x16(_mm512_fmadd_ps(o, c, _mm512_mul_ps(e, s)));
  }
}

/* NaN-ignoring max of |v| into acc (max_ps keeps its 2nd operand for a NaN). */
static AVX512F __m512 amax_acc(__m512 v, __m512 acc) { return _mm512_max_ps(_mm512_abs_ps(v), acc); }

AVX512F void indexer_fp8_avx512(const uint16_t *k, const float *we, const float *wo, const float *cos_sin, float rstd,
                        int fnuz, uint8_t *codes, float *scale, uint8_t *ue) {
  __m512 re[4], ro[4];
  norm_rope(k, we, wo, cos_sin, rstd, re, ro);
  /* amax as an unsigned max of the magnitudes' bits (the same order, NaN above Inf) */
  __m512i m = _mm512_setzero_si512();
  const __m512i mag = _mm512_set1_epi32(0x7FFFFFFF);
  for (int p = 0; p < 4; p++)
    m = _mm512_max_epu32(m, _mm512_max_epu32(_mm512_and_si512(_mm512_castps_si512(re[p]), mag),
                                             _mm512_and_si512(_mm512_castps_si512(ro[p]), mag)));
  const uint32_t amax_bits = _mm512_reduce_max_epu32(m);
  const int finite = amax_bits < 0x7F800000u;
  __m512 acc = _mm512_setzero_ps();
  if (!finite)
    for (int p = 0; p < 4; p++) acc = amax_acc(ro[p], amax_acc(re[p], acc));
  const float inv = fp8_scale_fast(finite ? f32_from_bits(amax_bits) : _mm512_reduce_max_ps(acc), fnuz, scale, ue);
  const __m512 vinv = _mm512_set1_ps(inv);
  for (int p = 0; p < 4; p++) {
    __m512i c[2];
    for (int h = 0; h < 2; h++) {
      const __m512 x = h ? ro[p] : re[p];
      if (!finite) { /* NaN -> +max, clamp: the full encoder */
        c[h] = fp8_codes32(x, inv, fnuz);
        continue;
      }
      /* finite row: |x| * inv <= the max (the scale bounds amax), no clamp */
      const __m512 y = _mm512_mul_ps(x, vinv);
      const __m512i mg = fp8_mag_fast(_mm512_abs_ps(y), fnuz);
      c[h] = _mm512_or_si512(mg, _mm512_and_si512(_mm512_srli_epi32(_mm512_castps_si512(y), 24), _mm512_set1_epi32(0x80)));
      if (fnuz) c[h] = _mm512_maskz_mov_epi32(_mm512_test_epi32_mask(mg, mg), c[h]); /* no negative zero */
    }
    const __m512i b = _mm512_or_si512(c[0], _mm512_slli_epi32(c[1], 8));
    _mm256_storeu_si256((__m256i *)(codes + 32 * p), _mm512_cvtepi32_epi16(b)); /* even byte, odd byte */
  }
}

/* e2m1_encode of 16 values: the number of grid midpoints |q| passes (> for
 * those that tie down, >= for those that tie up), the sign, NaN -> 0x7. */
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

AVX512F void indexer_mxfp4_avx512(const uint16_t *k, const float *we, const float *wo, const float *cos_sin, float rstd,
                          uint8_t *packed, uint8_t *scales) {
  __m512 re[4], ro[4];
  norm_rope(k, we, wo, cos_sin, rstd, re, ro);
  for (int b = 0; b < 4; b++) { /* block b = dims 32b .. 32b + 31 = re[b], ro[b] */
    float inv;
    scales[b] = mxfp4_scale_fast(_mm512_reduce_max_ps(amax_acc(ro[b], amax_acc(re[b], _mm512_setzero_ps()))), &inv);
    const __m512 s = _mm512_set1_ps(inv);
    const __m512i c = _mm512_or_si512(e2m1x16(_mm512_mul_ps(re[b], s)), _mm512_slli_epi32(e2m1x16(_mm512_mul_ps(ro[b], s)), 4));
    _mm_storeu_si128((__m128i *)(packed + 16 * b), _mm512_cvtepi32_epi8(c));
  }
}

#else

float indexer_sum_squares_avx512(const uint16_t *k) { return (void)k, 0.0f; }
void indexer_fp8_avx512(const uint16_t *k, const float *we, const float *wo, const float *cos_sin, float rstd,
                        int fnuz, uint8_t *codes, float *scale, uint8_t *ue) {
  (void)k, (void)we, (void)wo, (void)cos_sin, (void)rstd, (void)fnuz, (void)codes, (void)scale, (void)ue;
}
void indexer_mxfp4_avx512(const uint16_t *k, const float *we, const float *wo, const float *cos_sin, float rstd,
                          uint8_t *packed, uint8_t *scales) {
  (void)k, (void)we, (void)wo, (void)cos_sin, (void)rstd, (void)packed, (void)scales;
}

#endif
