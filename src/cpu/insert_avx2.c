/* The AVX2 CPU path of the fp8 inserts (V4 and MXFP8 records, NUMERICS
 * §2.1), for processors without AVX-512: byte-identical to record_quant_ref
 * (formats/ref.h); the case registry and tests/paths/exhaustive_paths.c
 * (every bf16 value through the encoder) run it as every path.  The form is
 * insert_avx512.c's fp8_block for finite blocks on 8 lanes: amax as an
 * unsigned integer max of the magnitudes' bits, the exponent by
 * ceil_log2_ratio_175, no clamp (the scale bounds every value), normals
 * rounded on the fp32 bits, subnormal steps by the add-2^23 rounding; a
 * block holding a NaN or an Inf takes the reference's block code.  NVFP4:
 * the reference's block scale in scalar code, the codes by
 * formats/e2m1_div.h's exact compares on 8 lanes (a record holding a NaN
 * takes the reference). */
#include "cpu/cpu.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#include "cpu/avx2.h"

/* 16 values (8 lanes of bf16 pairs) -> 16 codes as 8 16-bit pairs (even, odd). */
static AVX2 __m256i pairs8(__m256i z, __m256 inv, int fnuz) {
  const __m256i lo = codes8(_mm256_slli_epi32(z, 16), inv, fnuz);
  const __m256i hi = codes8(_mm256_and_si256(z, _mm256_set1_epi32((int)0xFFFF0000u)), inv, fnuz);
  return _mm256_or_si256(lo, _mm256_slli_epi32(hi, 8));
}

/* n (32 or 64) bf16 values with one UE8M0 scale: codes[n], *scale_byte. */
static AVX2 void fp8_block(const uint16_t *x, int n, int fnuz, uint8_t *codes, uint8_t *scale_byte) {
  __m256i z[4], m = _mm256_setzero_si256();
  for (int i = 0; i < n / 16; i++) {
    z[i] = _mm256_loadu_si256((const __m256i *)(x + 16 * i));
    m = _mm256_max_epu32(m, _mm256_max_epu32(_mm256_and_si256(_mm256_slli_epi32(z[i], 16), _mm256_set1_epi32(0x7FFFFFFF)),
                                             _mm256_and_si256(z[i], _mm256_set1_epi32(0x7FFF0000))));
  }
  uint32_t lanes[8], amax_bits = 0;
  _mm256_storeu_si256((__m256i *)lanes, m);
  for (int i = 0; i < 8; i++) amax_bits = lanes[i] > amax_bits ? lanes[i] : amax_bits;
  if (amax_bits >= 0x7F800000u) { /* a NaN or an Inf: the reference's block */
    fp8_block_quant_ref(x, n, fnuz, codes, scale_byte);
    return;
  }
  const float amax = max_ignore_nan(f32_from_bits(amax_bits), AMAX_FLOOR);
  const int e = ceil_log2_ratio_175(amax, fnuz ? 7 : 8), b = e + 127; /* 224 / 448 = 1.75 x 2^7 / 2^8 */
  *scale_byte = (uint8_t)(b < 0 ? 0 : b > 255 ? 255 : b);
  const __m256 inv = _mm256_set1_ps(pow2f(-e));
  for (int i = 0; i < n / 16; i += 2) {
    /* packus per 128-bit lane: a0-3 b0-3 a4-7 b4-7; the qword permutation restores the order */
    const __m256i p = _mm256_permute4x64_epi64(_mm256_packus_epi32(pairs8(z[i], inv, fnuz), pairs8(z[i + 1], inv, fnuz)), 0xD8);
    _mm_storeu_si128((__m128i *)(codes + 16 * i), _mm256_castsi256_si128(p));
    _mm_storeu_si128((__m128i *)(codes + 16 * i + 16), _mm256_extracti128_si256(p, 1));
  }
}

/* One NVFP4 block (16 bf16 values: lane i holds values 2i, 2i+1, the pair
 * byte i packs): nvfp4_block_quant_ref's bytes, or 0 (nothing meaningful
 * written) when a value is NaN. */
static AVX2 int nvfp4_block(const uint16_t *x, uint8_t *packed, uint8_t *scale_byte) {
  const __m256i z = _mm256_loadu_si256((const __m256i *)x);
  const __m256i lo = _mm256_slli_epi32(z, 16), hi = _mm256_and_si256(z, _mm256_set1_epi32((int)0xFFFF0000u));
  const __m256i m = _mm256_max_epu32(_mm256_and_si256(lo, _mm256_set1_epi32(0x7FFFFFFF)),
                                     _mm256_and_si256(hi, _mm256_set1_epi32(0x7FFFFFFF)));
  uint32_t lanes[8], amax_bits = 0;
  _mm256_storeu_si256((__m256i *)lanes, m);
  for (int i = 0; i < 8; i++) amax_bits = lanes[i] > amax_bits ? lanes[i] : amax_bits;
  if (amax_bits > 0x7F800000u) return 0; /* a NaN */
  float t = max_ignore_nan(NVFP4_SCALE_MIN, f32_from_bits(amax_bits) * (1.0f / 6.0f));
  t = t < FP8_OCP_MAX ? t : FP8_OCP_MAX;
  const uint8_t sc = e4m3_encode(t);
  const e2m1_bounds b = e2m1_bounds_of(e4m3_decode(sc));
  *scale_byte = sc;
  const __m256i v = _mm256_or_si256(e2m1_codes8(lo, &b), _mm256_slli_epi32(e2m1_codes8(hi, &b), 4));
  _mm256_storeu_si256((__m256i *)lanes, v);
  for (int i = 0; i < 8; i++) packed[i] = (uint8_t)lanes[i];
  return 1;
}

static AVX2 int quant_avx2(dsv4kv_record rec, int fnuz, const uint16_t *x, uint8_t *values, uint8_t *scales) {
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
      for (int s = 0; s < NVFP4_NUM_SCALES; s++)
        if (!nvfp4_block(x + s * NVFP4_BLOCK, values + s * NVFP4_BLOCK / 2, scales + s))
          return 0; /* a NaN: the reference writes the whole record */
      return 1;
    case DSV4KV_RECORD_INDEXER_FP8:
    case DSV4KV_RECORD_INDEXER_MXFP4:
      return 0;
  }
  return 0;
}

int record_quant_avx2(dsv4kv_record rec, int fnuz, const uint16_t *x, uint8_t *values, uint8_t *scales) {
  return quant_avx2(rec, fnuz, x, values, scales);
}

#else

int record_quant_avx2(dsv4kv_record rec, int fnuz, const uint16_t *x, uint8_t *values, uint8_t *scales) {
  (void)rec, (void)fnuz, (void)x, (void)values, (void)scales;
  return 0;
}

#endif
