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
 * bits (fp8_codes32, src/cpu/avx512.h).  A block without NaN or Inf (the
 * usual one) takes fp8_block's shorter form: 32 values a vector pair (even
 * and odd elements), no clamp (the scale already bounds every value), the
 * subnormal steps only when a lane needs them.  NVFP4: nvfp4_16_blocks. */
#include "cpu/cpu.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#include "cpu/avx512.h"
#include "formats/ref.h"

static AVX512 __m128i fp8_codes(__m512 x, float inv, int fnuz) {
  return _mm512_cvtepi32_epi8(fp8_codes32(x, inv, fnuz));
}

/* n (32 or 64) bf16 values with one UE8M0 scale: codes[n], *scale_byte
 * (any values; fp8_block takes the blocks without NaN or Inf). */
static AVX512 void fp8_block_any(const uint16_t *x, int n, int fnuz, uint8_t *codes, uint8_t *scale_byte) {
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

/* One 32-value chunk's codes (natural order) of a finite block: even and
 * odd elements in the lanes of lo / hi, packed as byte pairs. */
static AVX512 void fp8_chunk_fast(__m512i z, __m512 inv, int fnuz, uint8_t *codes) {
  __m512i c[2];
  for (int h = 0; h < 2; h++) {
    const __m512i bits = h ? _mm512_and_si512(z, _mm512_set1_epi32((int)0xFFFF0000u)) : _mm512_slli_epi32(z, 16);
    const __m512 y = _mm512_mul_ps(_mm512_castsi512_ps(bits), inv);
    const __m512i yb = _mm512_castps_si512(y);
    const __m512i mag = fp8_mag_fast(_mm512_abs_ps(y), fnuz);
    c[h] = _mm512_or_si512(mag, _mm512_and_si512(_mm512_srli_epi32(yb, 24), _mm512_set1_epi32(0x80)));
    if (fnuz) /* e4m3fnuz has no negative zero: magnitude 0 is 0x00 */
      c[h] = _mm512_maskz_mov_epi32(_mm512_test_epi32_mask(mag, mag), c[h]);
  }
  /* two 16-byte stores: MXFP8's 528-byte records start 16 bytes apart from
   * a cache line, and a 32-byte store across a line ran the 64k-token insert
   * at 5.5 GB/s instead of 8 (split stores) */
  const __m256i b = _mm512_cvtepi32_epi16(_mm512_or_si512(c[0], _mm512_slli_epi32(c[1], 8)));
  _mm_storeu_si128((__m128i *)codes, _mm256_castsi256_si128(b));
  _mm_storeu_si128((__m128i *)(codes + 16), _mm256_extracti128_si256(b, 1));
}

/* n (32 or 64) bf16 values with one UE8M0 scale: codes[n], *scale_byte,
 * from z[n / 32] (the values, loaded by the caller; x: the same in memory);
 * a block holding a NaN or an Inf goes to fp8_block_any.  amax as unsigned
 * integer max of the magnitudes' bits (the same order; NaN above Inf). */
static AVX512 void fp8_block_z(const __m512i *z, const uint16_t *x, int n, int fnuz, uint8_t *codes,
                               uint8_t *scale_byte) {
  __m512i m = _mm512_setzero_si512();
  for (int i = 0; i < n / 32; i++) {
    m = _mm512_max_epu32(m, _mm512_max_epu32(_mm512_and_si512(_mm512_slli_epi32(z[i], 16), _mm512_set1_epi32(0x7FFFFFFF)),
                                             _mm512_and_si512(z[i], _mm512_set1_epi32(0x7FFF0000))));
  }
  const uint32_t amax_bits = _mm512_reduce_max_epu32(m);
  if (amax_bits >= 0x7F800000u) {
    fp8_block_any(x, n, fnuz, codes, scale_byte);
    return;
  }
  const float amax = max_ignore_nan(f32_from_bits(amax_bits), AMAX_FLOOR);
  const int e = ceil_log2_ratio_175(amax, fnuz ? 7 : 8), b = e + 127; /* 224 / 448 = 1.75 x 2^7 / 2^8 */
  *scale_byte = (uint8_t)(b < 0 ? 0 : b > 255 ? 255 : b);
  const __m512 inv = _mm512_set1_ps(pow2f(-e));
  for (int i = 0; i < n / 32; i++) fp8_chunk_fast(z[i], inv, fnuz, codes + 32 * i);
}

/* Lane b = the largest of block b's 16 magnitudes (fp32 bits, compared as
 * unsigned integers: the same order for non-negative values, a NaN above
 * Inf), from w[i] holding partial maxima of block 2i in lanes 0-7 and of
 * block 2i+1 in lanes 8-15: three transpose-and-max rounds instead of 16
 * horizontal reductions.  After them lane 4k + j holds block 4j + k; the
 * last permutation undoes that. */
static AVX512 __m512i max_of_16(const __m512i *w) {
  __m512i x[4], y[2];
  for (int i = 0; i < 4; i++)
    x[i] = _mm512_max_epu32(_mm512_shuffle_i32x4(w[2 * i], w[2 * i + 1], 0x88),
                            _mm512_shuffle_i32x4(w[2 * i], w[2 * i + 1], 0xDD));
#define SHUF(a, b, imm) _mm512_castps_si512(_mm512_shuffle_ps(_mm512_castsi512_ps(a), _mm512_castsi512_ps(b), imm))
  for (int i = 0; i < 2; i++) y[i] = _mm512_max_epu32(SHUF(x[2 * i], x[2 * i + 1], 0x44), SHUF(x[2 * i], x[2 * i + 1], 0xEE));
  const __m512i z = _mm512_max_epu32(SHUF(y[0], y[1], 0x88), SHUF(y[0], y[1], 0xDD));
#undef SHUF
  return _mm512_permutexvar_epi32(_mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15), z);
}

/* The e2m1 magnitude codes of the magnitudes a (no NaN) against the
 * thresholds t[k] (code >= k + 1 exactly when a > t[k]): a binary search in
 * three compares. */
static AVX512 __m512i e2m1_mag_codes(__m512 a, const __m512 *t) {
  const __mmask16 m1 = _mm512_cmp_ps_mask(a, t[3], _CMP_GT_OQ);
  __m512i c = _mm512_maskz_mov_epi32(m1, _mm512_set1_epi32(4));
  const __mmask16 m2 = _mm512_cmp_ps_mask(a, _mm512_mask_blend_ps(m1, t[1], t[5]), _CMP_GT_OQ);
  c = _mm512_mask_add_epi32(c, m2, c, _mm512_set1_epi32(2));
  const __m512 t3 = _mm512_mask_blend_ps(m2, _mm512_mask_blend_ps(m1, t[0], t[4]), _mm512_mask_blend_ps(m1, t[2], t[6]));
  return _mm512_mask_add_epi32(c, _mm512_cmp_ps_mask(a, t3, _CMP_GT_OQ), c, _mm512_set1_epi32(1));
}

/* NVFP4 (NUMERICS §2.3), 16 blocks of 16 values (256 values) at a time, 32
 * values a vector pair: lo = the even elements, hi = the odd ones (byte i
 * of a block is code(2i) | code(2i+1) << 4, so the pair packs lane by
 * lane).  Returns 0, having written nothing meaningful, when a value is NaN
 * (the caller then takes the reference; NaN inputs are rare).
 * The block scales are the reference's, 16 in one vector: amax / 6 in one
 * RN multiply, floored, clamped, e4m3-encoded by fp8_codes32 and decoded
 * exactly (the fp16 identity of gather_avx512.c).  Codes without the
 * division: for a midpoint t of the e2m1 grid and a block scale sv (an e4m3
 * value) t * sv is exact in fp32 (3 + 4 significant bits), and a bf16 |x|
 * (8 bits) is never within rounding distance of it unless equal, so
 * RN(|x| / sv) falls on the same side of t as |x| does of t * sv; odd
 * midpoints tie up, so there |x| >= t * sv, i.e. |x| > the float below it.
 * The code is the number of midpoints |x| passes, as e2m1_encode's
 * if-chain; tests/paths/exhaustive_paths.c checks it against the division
 * on every bf16 value and every scale. */
static AVX512 int nvfp4_16_blocks(const uint16_t *x, uint8_t *packed, uint8_t *scales) {
  const __m512i mag_lo = _mm512_set1_epi32(0x7FFFFFFF), mag_hi = _mm512_set1_epi32(0x7FFF0000);
#define LOAD(p) _mm512_loadu_si512((const void *)(x + 32 * (p)))
  __m512i w[8];
  for (int p = 0; p < 8; p++) {
    const __m512i z = LOAD(p);
    w[p] = _mm512_max_epu32(_mm512_and_si512(_mm512_slli_epi32(z, 16), mag_lo), _mm512_and_si512(z, mag_hi));
  }
  const __m512i amax_bits = max_of_16(w);
  if (_mm512_cmpgt_epu32_mask(amax_bits, _mm512_set1_epi32(0x7F800000))) return 0; /* a NaN */
  __m512 t = _mm512_mul_ps(_mm512_castsi512_ps(amax_bits), _mm512_set1_ps(1.0f / 6.0f));
  t = _mm512_min_ps(_mm512_max_ps(t, _mm512_set1_ps(NVFP4_SCALE_MIN)), _mm512_set1_ps(FP8_OCP_MAX));
  const __m512i sc = fp8_codes32(t, 1.0f, 0); /* positive, finite, in range: e4m3_encode(t) */
  _mm_storeu_si128((__m128i *)scales, _mm512_cvtepi32_epi8(sc));
  const __m512 sv = _mm512_mul_ps(_mm512_cvtph_ps(_mm512_cvtepi32_epi16(_mm512_slli_epi32(sc, 7))), _mm512_set1_ps(0x1p8f));
  static const float mid[7] = {0.25f, 0.75f, 1.25f, 1.75f, 2.5f, 3.5f, 5.0f};
  float thr[7][16] __attribute__((aligned(64)));
  for (int k = 0; k < 7; k++) {
    __m512i m = _mm512_castps_si512(_mm512_mul_ps(sv, _mm512_set1_ps(mid[k])));
    if (k & 1) m = _mm512_sub_epi32(m, _mm512_set1_epi32(1));
    _mm512_store_si512((__m512i *)thr[k], m);
  }
  for (int p = 0; p < 8; p++) {
    __m512 th[7]; /* lanes 0-7: block 2p's, 8-15: block 2p+1's */
    for (int k = 0; k < 7; k++)
      th[k] = _mm512_mask_mov_ps(_mm512_set1_ps(thr[k][2 * p]), 0xFF00, _mm512_set1_ps(thr[k][2 * p + 1]));
    const __m512i z = LOAD(p);
    const __m512i clo = e2m1_mag_codes(_mm512_castsi512_ps(_mm512_and_si512(_mm512_slli_epi32(z, 16), mag_lo)), th);
    const __m512i chi = e2m1_mag_codes(_mm512_castsi512_ps(_mm512_and_si512(z, mag_hi)), th);
    /* signs: bit 15 of z (lo) to bit 3, bit 31 (hi) to bit 7 */
    const __m512i sign = _mm512_ternarylogic_epi32(_mm512_and_si512(_mm512_srli_epi32(z, 12), _mm512_set1_epi32(8)),
                                                   _mm512_srli_epi32(z, 24), _mm512_set1_epi32(0x80), 0xF8); /* A | (B & C) */
    const __m512i bytes = _mm512_ternarylogic_epi32(clo, _mm512_slli_epi32(chi, 4), sign, 0xFE); /* A | B | C */
    _mm_storeu_si128((__m128i *)(packed + 16 * p), _mm512_cvtepi32_epi8(bytes));
  }
#undef LOAD
  return 1;
}

static AVX512 int quant_avx512(dsv4kv_record rec, int fnuz, const uint16_t *x, uint8_t *values, uint8_t *scales) {
  switch (rec) {
    case DSV4KV_RECORD_V4: {
      /* the whole row loaded before the first store (see MXFP8) */
      __m512i z[HEAD_DIM / 32];
      for (int i = 0; i < HEAD_DIM / 32; i++) z[i] = _mm512_loadu_si512((const void *)(x + 32 * i));
      for (int s = 0; s < V4_NUM_SCALES; s++)
        fp8_block_z(z + 2 * s, x + s * V4_BLOCK, V4_BLOCK, fnuz, values + s * V4_BLOCK, scales + s);
      scales[V4_NUM_SCALES] = 0;
      for (int i = NOPE_DIM / 32; i < HEAD_DIM / 32; i++) /* the RoPE dims' bf16 bytes as they are */
        _mm512_storeu_si512((void *)(values + NOPE_DIM + 64 * (i - NOPE_DIM / 32)), z[i]);
      return 1;
    }
    case DSV4KV_RECORD_MXFP8: {
      /* the whole row loaded before the first store: its loads then never
       * wait behind this record's stores (a store whose address matches a
       * later load in bits 0-11 holds the load up; the 528-byte records
       * against 1024-byte rows met that often) */
      __m512i z[MXFP8_NUM_SCALES];
      for (int s = 0; s < MXFP8_NUM_SCALES; s++) z[s] = _mm512_loadu_si512((const void *)(x + s * MXFP8_BLOCK));
      for (int s = 0; s < MXFP8_NUM_SCALES; s++)
        fp8_block_z(z + s, x + s * MXFP8_BLOCK, MXFP8_BLOCK, fnuz, values + s * MXFP8_BLOCK, scales + s);
      return 1;
    }
    case DSV4KV_RECORD_NVFP4:
      for (int g = 0; g < NVFP4_NUM_SCALES; g += 16)
        if (!nvfp4_16_blocks(x + g * NVFP4_BLOCK, values + g * NVFP4_BLOCK / 2, scales + g))
          return 0; /* a NaN: the reference writes the whole record */
      return 1;
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
