/* The AVX2 CPU path of the fp8 inserts (V4 and MXFP8 records, NUMERICS
 * §2.1), for processors without AVX-512: byte-identical to record_quant_ref
 * (formats/ref.h); the case registry and tests/paths/exhaustive_paths.c
 * (every bf16 value through the encoder) run it as every path.  The form is
 * insert_avx512.c's fp8_block for finite blocks on 8 lanes: amax as an
 * unsigned integer max of the magnitudes' bits, 8 blocks' exponents by
 * ceil_log2_ratio_175 on 8 lanes, no clamp (the scale bounds every value);
 * 32 values with normal codes (nearly all) encoded from their bf16 bits on
 * 16 lanes (fp8_codes16: the scale is a power of two), others on the fp32
 * bits with subnormal steps by the add-2^23 rounding; a block holding a NaN
 * or an Inf takes the reference's block code.  NVFP4: 8 blocks at a time, the scales on 8 lanes and the codes by
 * compares of bf16 bits on 16 lanes (nvfp4_row; a record holding a NaN
 * takes the reference). */
#include "cpu/cpu.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#include "cpu/avx2.h"

/* 16 values (8 lanes of bf16 pairs) -> 16 codes as 8 16-bit pairs (even, odd). */
static inline AVX2 INLINE __m256i pairs8(__m256i z, __m256 inv, int fnuz) {
  const __m256i lo = codes8(_mm256_slli_epi32(z, 16), inv, fnuz);
  const __m256i hi = codes8(_mm256_and_si256(z, _mm256_set1_epi32((int)0xFFFF0000u)), inv, fnuz);
  return _mm256_or_si256(lo, _mm256_slli_epi32(hi, 8));
}

/* n (32 or 64) bf16 values with one UE8M0 scale: codes[n], *scale_byte
 * (fp8_blocks8's way for a group holding a NaN or an Inf). */
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

/* The largest magnitude of n (32 or 64) bf16 values at x, as fp32 bits, one
 * candidate a lane (the max over lanes is the block's): the magnitudes' bf16
 * bits maxed on 16 lanes, then each 32-bit lane's two halves as fp32 bits. */
static inline AVX2 INLINE __m256i block_max_lanes(const uint16_t *x, int n) {
  __m256i m = mag16(_mm256_loadu_si256((const __m256i *)x));
  for (int i = 1; i < n / 16; i++) m = _mm256_max_epu16(m, mag16(_mm256_loadu_si256((const __m256i *)(x + 16 * i))));
  return _mm256_max_epu32(_mm256_slli_epi32(m, 16), _mm256_and_si256(m, _mm256_set1_epi32((int)0xFFFF0000u)));
}

/* m[b]'s largest lane in lane b (8 blocks' candidates, unsigned): a
 * transposing reduction. */
static inline AVX2 INLINE __m256i max_of_lanes8(const __m256i *m) {
  __m256i x[4], y[2];
  for (int i = 0; i < 4; i++)
    x[i] = _mm256_max_epu32(_mm256_unpacklo_epi32(m[2 * i], m[2 * i + 1]), _mm256_unpackhi_epi32(m[2 * i], m[2 * i + 1]));
  for (int i = 0; i < 2; i++)
    y[i] = _mm256_max_epu32(_mm256_unpacklo_epi64(x[2 * i], x[2 * i + 1]), _mm256_unpackhi_epi64(x[2 * i], x[2 * i + 1]));
  return _mm256_max_epu32(_mm256_permute2x128_si256(y[0], y[1], 0x20), _mm256_permute2x128_si256(y[0], y[1], 0x31));
}

/* nb (<= 8) fp8 blocks of n values at x: codes[nb * n] and scale_bytes[nb].
 * The blocks' maxima and UE8M0 scales on 8 lanes (fp8_block's arithmetic:
 * the exponent by ceil_log2_ratio_175, 2^-e from its bits; the floor keeps
 * e in [-22, 120]), then each block's codes with its lane's 1 / scale; a
 * group holding a NaN or an Inf takes fp8_block a block. */
static inline AVX2 INLINE void fp8_blocks8(const uint16_t *x, int nb, int n, int fnuz, uint8_t *codes,
                                           uint8_t *scale_bytes, int nt) {
  __m256i m[8];
  for (int b = 0; b < 8; b++) m[b] = b < nb ? block_max_lanes(x + n * b, n) : _mm256_setzero_si256();
  __m256i amax = max_of_lanes8(m);
  if (_mm256_movemask_epi8(_mm256_cmpgt_epi32(amax, _mm256_set1_epi32(0x7F7FFFFF)))) {
    for (int b = 0; b < nb; b++) fp8_block(x + n * b, n, fnuz, codes + n * b, scale_bytes + b);
    return;
  }
  amax = _mm256_max_epu32(amax, _mm256_set1_epi32((int)f32_bits(AMAX_FLOOR)));
  const __m256i up = _mm256_cmpgt_epi32(_mm256_and_si256(amax, _mm256_set1_epi32(0x7FFFFF)), _mm256_set1_epi32(0x600000));
  const __m256i e = _mm256_sub_epi32(_mm256_sub_epi32(_mm256_srli_epi32(amax, 23), _mm256_set1_epi32(127 + (fnuz ? 7 : 8))), up);
  const __m256i b32 = _mm256_add_epi32(e, _mm256_set1_epi32(127)); /* 105 .. 247: no clamp */
  const __m128i b16 = _mm_packus_epi32(_mm256_castsi256_si128(b32), _mm256_extracti128_si256(b32, 1));
  uint8_t sb[8];
  _mm_storel_epi64((__m128i *)sb, _mm_packus_epi16(b16, b16));
  memcpy(scale_bytes, sb, (size_t)nb);
  const __m256 inv8 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_sub_epi32(_mm256_set1_epi32(127), e), 23));
  /* fp8_codes16's k (fp8_codes16_k) and the smallest magnitude with a normal code, in both 16-bit halves */
  const int B = fnuz ? 8 : 7;
  const __m256i bias32 = _mm256_sub_epi32(_mm256_set1_epi32(7), _mm256_slli_epi32(_mm256_add_epi32(e, _mm256_set1_epi32(127 - B)), 7));
  const __m256i low32 = _mm256_sub_epi32(_mm256_slli_epi32(_mm256_add_epi32(e, _mm256_set1_epi32(128 - B)), 7), _mm256_set1_epi32(1));
  /* each block's two constants broadcast from memory below, a load each
   * (against two lane permutes a block, on a Zen 3: a cache-resident row
   * MXFP8 100 -> 92.5 ns, V4 79 -> 73; 524288 rows, 1 thread, MXFP8 69.6
   * -> 67.2 ms, V4 52.0 -> 48.6) */
  uint32_t kb[2][8];
  _mm256_storeu_si256((__m256i *)kb[0],
                      _mm256_or_si256(_mm256_and_si256(bias32, _mm256_set1_epi32(0xFFFF)), _mm256_slli_epi32(bias32, 16)));
  _mm256_storeu_si256((__m256i *)kb[1], _mm256_or_si256(low32, _mm256_slli_epi32(low32, 16)));
  for (int b = 0; b < nb; b++) {
    const __m256i lane = _mm256_set1_epi32(b);
    const __m256i bias = _mm256_set1_epi32((int)kb[0][b]), low = _mm256_set1_epi32((int)kb[1][b]);
    for (int i = 0; i < n / 16; i += 2) {
      const __m256i z0 = _mm256_loadu_si256((const __m256i *)(x + n * b + 16 * i));
      const __m256i z1 = _mm256_loadu_si256((const __m256i *)(x + n * b + 16 * i + 16));
      __m256i p;
      if (_mm256_movemask_epi8(_mm256_or_si256(_mm256_cmpgt_epi16(low, mag16(z0)), _mm256_cmpgt_epi16(low, mag16(z1))))) {
        /* a zero or a subnormal code: the fp32 encoder (it holds them) */
        const __m256 inv = _mm256_permutevar8x32_ps(inv8, lane);
        p = _mm256_packus_epi32(pairs8(z0, inv, fnuz), pairs8(z1, inv, fnuz));
      } else {
        p = _mm256_packus_epi16(fp8_codes16(z0, bias), fp8_codes16(z1, bias));
      }
      store32(codes + n * b + 16 * i, _mm256_permute4x64_epi64(p, 0xD8), nt);
    }
  }
}

/* The e4m3 codes and values of 8 NVFP4 block scales t (positive, in
 * [2^-9, 448]): e4m3_encode's RNE on the fp32 bits, whose rounded bits are
 * the value itself; below 2^-6 steps of 2^-9 (insert_avx512.c's
 * e4m3_scales on 8 lanes). */
static inline AVX2 __m256 e4m3_scales8(__m256 t, __m256i *code) {
  const __m256i u = _mm256_castps_si256(t);
  const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(u, 20), _mm256_set1_epi32(1));
  const __m256i r = _mm256_add_epi32(u, _mm256_add_epi32(_mm256_set1_epi32(0x7FFFF), lsb));
  const __m256 big = _mm256_set1_ps(8388608.0f); /* x + 2^23 - 2^23: RNE to an integer */
  const __m256 steps = _mm256_sub_ps(_mm256_add_ps(_mm256_mul_ps(t, _mm256_set1_ps(0x1p9f)), big), big);
  const __m256 sub = _mm256_cmp_ps(t, _mm256_set1_ps(0x1p-6f), _CMP_LT_OQ);
  *code = _mm256_blendv_epi8(_mm256_sub_epi32(_mm256_srli_epi32(r, 20), _mm256_set1_epi32(120 << 3)),
                             _mm256_cvttps_epi32(steps), _mm256_castps_si256(sub));
  return _mm256_blendv_ps(_mm256_castsi256_ps(_mm256_and_si256(r, _mm256_set1_epi32((int)0xFFF00000u))),
                          _mm256_mul_ps(steps, _mm256_set1_ps(0x1p-9f)), sub);
}

/* The largest magnitude's bf16 bits of each of 8 blocks, f[b] = the two
 * halves of block b already folded (8 u16 lanes): a transposing reduction,
 * block b's maximum in lane b. */
static inline AVX2 __m128i block_max8(const __m128i *f) {
  __m128i x[4], y[2];
  for (int i = 0; i < 4; i++)
    x[i] = _mm_max_epu16(_mm_unpacklo_epi16(f[2 * i], f[2 * i + 1]), _mm_unpackhi_epi16(f[2 * i], f[2 * i + 1]));
  for (int i = 0; i < 2; i++)
    y[i] = _mm_max_epu16(_mm_unpacklo_epi32(x[2 * i], x[2 * i + 1]), _mm_unpackhi_epi32(x[2 * i], x[2 * i + 1]));
  return _mm_max_epu16(_mm_unpacklo_epi64(y[0], y[1]), _mm_unpackhi_epi64(y[0], y[1]));
}

/* NVFP4 (NUMERICS §2.3) of a row, 8 blocks of 16 values at a time: amax as
 * the largest magnitude's bits, the 8 scales on 8 lanes (the reference's
 * amax / 6 in one RN multiply, floored, clamped, e4m3-encoded and decoded),
 * then each block's 16 codes on 16-bit lanes: a midpoint times the block
 * scale is exact in bf16 (formats/e2m1_div.h), so the code is the number of
 * midpoints whose bf16 bits the magnitude's bits pass (odd midpoints tie
 * up: bits > theirs - 1), the nibbles of 4 blocks packed for one store
 * (vpmaddwd makes each pair's byte, two packs and a dword permutation put
 * them in order: on a Zen 3 thread 524288 rows 99.0 -> 90.4 ms against a
 * shuffle and an 8-byte store a block).  Returns 0, with nothing meaningful
 * written, when a value is NaN (the caller takes the reference). */
static AVX2 int nvfp4_row(const uint16_t *x, uint8_t *packed, uint8_t *scales) {
  static const float mid[7] = {0.25f, 0.75f, 1.25f, 1.75f, 2.5f, 3.5f, 5.0f};
  const __m256i magmask = _mm256_set1_epi16(0x7FFF);
  for (int g = 0; g < NVFP4_NUM_SCALES / 8; g++) {
    const uint16_t *xg = x + 128 * g;
    __m128i f[8];
    for (int b = 0; b < 8; b++) {
      const __m256i m = _mm256_and_si256(_mm256_loadu_si256((const __m256i *)(xg + 16 * b)), magmask);
      f[b] = _mm_max_epu16(_mm256_castsi256_si128(m), _mm256_extracti128_si256(m, 1));
    }
    const __m256i amax = _mm256_cvtepu16_epi32(block_max8(f));
    if (_mm256_movemask_epi8(_mm256_cmpgt_epi32(amax, _mm256_set1_epi32(0x7F80)))) return 0; /* a NaN */
    __m256 t = _mm256_mul_ps(_mm256_castsi256_ps(_mm256_slli_epi32(amax, 16)), _mm256_set1_ps(1.0f / 6.0f));
    t = _mm256_min_ps(_mm256_max_ps(t, _mm256_set1_ps(NVFP4_SCALE_MIN)), _mm256_set1_ps(FP8_OCP_MAX));
    __m256i sc;
    const __m256 sv = e4m3_scales8(t, &sc);
    const __m128i s16 = _mm_packus_epi32(_mm256_castsi256_si128(sc), _mm256_extracti128_si256(sc, 1));
    _mm_storel_epi64((__m128i *)(scales + 8 * g), _mm_packus_epi16(s16, s16));
    /* th[k][b]: block b's midpoint k as bf16 bits (odd ones less 1) in both
     * halves; broadcast from memory below (a load each, no shuffle: with a
     * permute a bound, 524288 rows took 125 ms on a Zen 3 thread, now 99) */
    uint32_t th[7][8];
    for (int k = 0; k < 7; k++) {
      __m256i h = _mm256_srli_epi32(_mm256_castps_si256(_mm256_mul_ps(sv, _mm256_set1_ps(mid[k]))), 16);
      if (k & 1) h = _mm256_sub_epi32(h, _mm256_set1_epi32(1));
      _mm256_storeu_si256((__m256i *)th[k], _mm256_or_si256(h, _mm256_slli_epi32(h, 16)));
    }
    for (int q = 0; q < 8; q += 4) {
      __m256i pb[4]; /* value pair j of block q + i in 32-bit lane j: the low code + 16 x the high one */
      for (int i = 0; i < 4; i++) {
        const int b = q + i;
        const __m256i z = _mm256_loadu_si256((const __m256i *)(xg + 16 * b)), m = _mm256_and_si256(z, magmask);
        __m256i c = _mm256_and_si256(_mm256_srli_epi16(z, 12), _mm256_set1_epi16(8)); /* the sign */
        for (int k = 0; k < 7; k++) c = _mm256_sub_epi16(c, _mm256_cmpgt_epi16(m, _mm256_set1_epi32((int)th[k][b])));
        pb[i] = _mm256_madd_epi16(c, _mm256_set1_epi32(0x00100001));
      }
      /* per 128-bit lane: bytes of blocks q .. q + 3, pairs 0-3 | 4-7; the dword permutation puts each block's 8 together */
      const __m256i w = _mm256_packus_epi16(_mm256_packs_epi32(pb[0], pb[1]), _mm256_packs_epi32(pb[2], pb[3]));
      _mm256_storeu_si256((__m256i *)(packed + 64 * g + 8 * q),
                          _mm256_permutevar8x32_epi32(w, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7)));
    }
  }
  return 1;
}

/* A V4 or MXFP8 record's blocks, 8 at a time; inlined once a flavour (fnuz
 * a constant: no flavour branches in the encoder, its constants built once
 * a row).  On a Zen 3, 1 thread, 524288 rows: V4 129 -> 81 ms, MXFP8 166 ->
 * 99 ms against one block at a time with its scale in scalar code. */
static inline AVX2 INLINE void fp8_record(dsv4kv_record rec, int fnuz, const uint16_t *x, uint8_t *values,
                                          uint8_t *scales, int nt) {
  if (rec == DSV4KV_RECORD_V4) {
    fp8_blocks8(x, V4_NUM_SCALES, V4_BLOCK, fnuz, values, scales, nt);
    scales[V4_NUM_SCALES] = 0;
    for (int i = 0; i < ROPE_DIM; i += 16) /* the RoPE dims: raw bf16 */
      store32(values + NOPE_DIM + 2 * i, _mm256_loadu_si256((const __m256i *)(x + NOPE_DIM + i)), nt);
  } else {
    for (int g = 0; g < MXFP8_NUM_SCALES; g += 8)
      fp8_blocks8(x + g * MXFP8_BLOCK, 8, MXFP8_BLOCK, fnuz, values + g * MXFP8_BLOCK, scales + g, 0);
  }
}

static AVX2 int quant_avx2(dsv4kv_record rec, int fnuz, const uint16_t *x, uint8_t *values, uint8_t *scales,
                           int nt) {
  switch (rec) {
    case DSV4KV_RECORD_V4:
      if (nt && fnuz)
        fp8_record(rec, 1, x, values, scales, 1);
      else if (nt)
        fp8_record(rec, 0, x, values, scales, 1);
      else if (fnuz)
        fp8_record(rec, 1, x, values, scales, 0);
      else
        fp8_record(rec, 0, x, values, scales, 0);
      return 1;
    case DSV4KV_RECORD_MXFP8:
      if (fnuz)
        fp8_record(rec, 1, x, values, scales, 0);
      else
        fp8_record(rec, 0, x, values, scales, 0);
      return 1;
    case DSV4KV_RECORD_NVFP4:
      return nvfp4_row(x, values, scales); /* 0 for a NaN: the reference writes the whole record */
    case DSV4KV_RECORD_INDEXER_FP8:
    case DSV4KV_RECORD_INDEXER_MXFP4:
      return 0;
  }
  return 0;
}

int record_quant_avx2(dsv4kv_record rec, int fnuz, const uint16_t *x, uint8_t *values, uint8_t *scales, int nt) {
  return quant_avx2(rec, fnuz, x, values, scales, nt);
}

#else

int record_quant_avx2(dsv4kv_record rec, int fnuz, const uint16_t *x, uint8_t *values, uint8_t *scales, int nt) {
  (void)rec, (void)fnuz, (void)x, (void)values, (void)scales, (void)nt;
  return 0;
}

#endif
