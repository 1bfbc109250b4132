/* The AVX-512 CPU path of the fp8 inserts (V4 and MXFP8 records, NUMERICS
 * §2.1): 16 values at a time, byte-identical to record_quant_ref
 * (formats/ref.h), which the case registry checks on every input it
 * generates (ctest ops_cpu_paths).  The block's amax is a NaN-ignoring max
 * (max_ps keeps the accumulator when the value is NaN, as max_ignore_nan);
 * the block scale's exponent comes from amax's exponent and one mantissa
 * compare (ceil_log2_ratio_175, equal to the reference's division on every
 * bf16 amax, checked exhaustively); each code is the
 * reference's encoder done on 16 lanes: clamp (NaN -> +max), subnormal steps
 * by the add-2^23 rounding, normals by rounding the fp32 bits to 3 mantissa
 * bits.  NVFP4 records stay on the scalar code. */
#include "cpu/cpu.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#include "formats/ref.h"

#define AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,f16c")))

static AVX512 __m512 bf16x16(const uint16_t *x) {
  return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i *)x)), 16));
}

/* fp8 codes of 16 values y = x * inv, the reference's fp8_quant_code. */
static AVX512 __m128i fp8_codes(__m512 x, float inv, int fnuz) {
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
  return _mm512_cvtepi32_epi8(code);
}

/* n (32 or 64) bf16 values with one UE8M0 scale: codes[n], *scale_byte. */
static AVX512 void fp8_block(const uint16_t *x, int n, int fnuz, uint8_t *codes, uint8_t *scale_byte) {
  __m512 v[4], acc = _mm512_setzero_ps();
  for (int i = 0; i < n / 16; i++) {
    v[i] = bf16x16(x + 16 * i);
    acc = _mm512_max_ps(_mm512_abs_ps(v[i]), acc); /* a NaN lane keeps acc */
  }
  const float amax = max_ignore_nan(_mm512_reduce_max_ps(acc), AMAX_FLOOR); /* normal: >= the floor */
  float inv;
  if (isinf(amax)) { /* as ue8m0_block_scale */
    *scale_byte = 255;
    inv = 0.0f;
  } else {
    const int e = ceil_log2_ratio_175(amax, fnuz ? 7 : 8), b = e + 127; /* 224 / 448 = 1.75 x 2^7 / 2^8 */
    *scale_byte = (uint8_t)(b < 0 ? 0 : b > 255 ? 255 : b);
    inv = pow2f(-e);
  }
  for (int i = 0; i < n / 16; i++) _mm_storeu_si128((__m128i *)(codes + 16 * i), fp8_codes(v[i], inv, fnuz));
}

static AVX512 int quant_avx512(dsv4kv_record rec, int fnuz, const uint16_t *x, uint8_t *values, uint8_t *scales) {
  switch (rec) {
    case DSV4KV_RECORD_V4:
      for (int s = 0; s < V4_NUM_SCALES; s++)
        fp8_block(x + s * V4_BLOCK, V4_BLOCK, fnuz, values + s * V4_BLOCK, scales + s);
      scales[V4_NUM_SCALES] = 0;
      memcpy(values + NOPE_DIM, x + NOPE_DIM, ROPE_DIM * sizeof(uint16_t));
      return 1;
    case DSV4KV_RECORD_MXFP8:
      for (int s = 0; s < MXFP8_NUM_SCALES; s++)
        fp8_block(x + s * MXFP8_BLOCK, MXFP8_BLOCK, fnuz, values + s * MXFP8_BLOCK, scales + s);
      return 1;
    case DSV4KV_RECORD_NVFP4:
    case DSV4KV_RECORD_INDEXER_FP8:
    case DSV4KV_RECORD_INDEXER_MXFP4:
      return 0;
  }
  return 0;
}

int record_quant_avx512(dsv4kv_record rec, int fnuz, const uint16_t *x, uint8_t *values, uint8_t *scales) {
  return quant_avx512(rec, fnuz, x, values, scales);
}

#else

int record_quant_avx512(dsv4kv_record rec, int fnuz, const uint16_t *x, uint8_t *values, uint8_t *scales) {
  (void)rec, (void)fnuz, (void)x, (void)values, (void)scales;
  return 0;
}

#endif
