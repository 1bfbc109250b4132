/* The AVX-512 CPU path of the inserts (V4, MXFP8 and NVFP4 records,
 * NUMERICS §2.1, §2.3), byte-identical to record_quant_ref (formats/ref.h),
 * which the case registry checks on every input it generates (ctest
 * ops_cpu_paths) and tests/paths/exhaustive_paths.c on every bf16 value.
 * The usual row (no NaN or Inf, no value needing e4m3 subnormal steps)
 * stays in 16-bit lanes, 32 bf16 values a vector, with no fp32 arithmetic
 * on the values: every block's amax of the row by transpose-and-max rounds,
 * the 16 block scales in one vector (ceil_log2_ratio_175, equal to the
 * reference's division on every bf16 amax, checked exhaustively), the codes
 * from the bf16 bits (e4m3_codes16; NVFP4: nvfp4_row).  On this
 * workplace's Zen 4 that took a cache-resident row from 145 / 190 / 182 ns
 * (V4 / MXFP8 / NVFP4, the fp32 form on 16 lanes) to 50 / 56 / 84.
 * The fp8 rows it does not take go to that fp32 form (fp8_block_z per
 * block: clamp, NaN -> +max, subnormal steps by the add-2^23 rounding,
 * normals by rounding the fp32 bits: fp8_codes32, src/cpu/avx512.h); NVFP4
 * rows holding a NaN to the reference. */
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

/* ---- 16-bit lanes: 32 bf16 values a vector, no fp32 arithmetic ---- */

/* Transpose-and-max rounds on bf16 magnitudes (unsigned 16-bit max: the
 * order of the values, NaN above Inf): two registers' lanes paired at 128-,
 * 64- and 32-bit granularity, halving the lanes each block holds. */
static inline AVX512 __m512i max128(__m512i a, __m512i b) {
  return _mm512_max_epu16(_mm512_shuffle_i32x4(a, b, 0x88), _mm512_shuffle_i32x4(a, b, 0xDD));
}
static inline AVX512 __m512i max64(__m512i a, __m512i b) {
  return _mm512_max_epu16(_mm512_unpacklo_epi64(a, b), _mm512_unpackhi_epi64(a, b));
}
#define SHUF(a, b, imm) _mm512_castps_si512(_mm512_shuffle_ps(_mm512_castsi512_ps(a), _mm512_castsi512_ps(b), imm))

/* Lane b = fp32 bits of block b's amax, from q[j] whose 128-bit lane l
 * holds magnitudes of block 4j + l only (the rounds leave lane 4l + j
 * holding block 4j + l; the permutation undoes that). */
static AVX512 __m512i amax_of_lanes(const __m512i *q) {
  const __m512i a = max64(q[0], q[1]), b = max64(q[2], q[3]);
  const __m512i x = _mm512_max_epu16(SHUF(a, b, 0x88), SHUF(a, b, 0xDD));
  const __m512i y = _mm512_slli_epi32(_mm512_max_epu16(x, _mm512_srli_epi32(x, 16)), 16);
  return _mm512_permutexvar_epi32(_mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15), y);
}
#undef SHUF

/* The UE8M0 bytes (e + 127) of 16 finite amax: ceil_log2_ratio_175 with
 * the mantissa compare as the carry of adding 0x1FFFFF; with the floor
 * (2^-13.3) and the largest bf16 below 2^128 every byte lies in 105..248,
 * so the reference's clamp never acts. */
static AVX512 __m512i ue8m0_bytes(__m512i amax, int fnuz) {
  const __m512i a = _mm512_castps_si512(_mm512_max_ps(_mm512_castsi512_ps(amax), _mm512_set1_ps(AMAX_FLOOR)));
  return _mm512_sub_epi32(_mm512_srli_epi32(_mm512_add_epi32(a, _mm512_set1_epi32(0x1FFFFF)), 23),
                          _mm512_set1_epi32(fnuz ? 7 : 8)); /* 224 / 448 = 1.75 x 2^7 / 2^8 */
}

/* Per block, from its scale byte b, the encoder's two 16-bit constants (in
 * both halves of a 32-bit word, for a broadcast): k = the bf16 bits of the
 * code-0 exponent less the rounding's 7, and lo = the bits of the smallest
 * normal y (2^-6 / 2^-7 times the scale) less 1. */
static AVX512 void e4m3_consts(__m512i b, int fnuz, uint32_t *k, uint32_t *lo) {
  const __m512i kv = _mm512_sub_epi32(_mm512_slli_epi32(_mm512_sub_epi32(b, _mm512_set1_epi32(fnuz ? 8 : 7)), 7),
                                      _mm512_set1_epi32(7));
  const __m512i lv = _mm512_add_epi32(kv, _mm512_set1_epi32(134));
  _mm512_store_si512((__m512i *)k, _mm512_or_si512(kv, _mm512_slli_epi32(kv, 16)));
  _mm512_store_si512((__m512i *)lo, _mm512_or_si512(lv, _mm512_slli_epi32(lv, 16)));
}

/* The blocks' scale bytes b (lane i: block i's, from its amax bits) and
 * their e4m3_codes16 constants; 0 when a block's amax is NaN or Inf (the
 * row then takes the fp32 code). */
static AVX512 int block_scales(__m512i amax, int fnuz, __m512i *b, uint32_t *k, uint32_t *lo) {
  if (_mm512_cmpge_epu32_mask(amax, _mm512_set1_epi32(0x7F800000))) return 0;
  *b = ue8m0_bytes(amax, fnuz);
  e4m3_consts(*b, fnuz, k, lo);
  return 1;
}

/* A 16-byte store, non-temporal when nt (p then 16-byte aligned): MXFP8's
 * records streamed in address order (cpu_insert). */
static inline AVX512 void store16(void *p, __m128i v, int nt) {
  if (nt)
    _mm_stream_si128((__m128i *)p, v);
  else
    _mm_storeu_si128((__m128i *)p, v);
}

/* MXFP8's 16 blocks of 32 from z[16]: 0 when a block holds a NaN or an Inf
 * (nothing written) or a value needs subnormal steps (written, to be
 * overwritten); nt: streamed (store16). */
static AVX512 int mxfp8_fast(const __m512i *z, int fnuz, uint8_t *values, uint8_t *scales, int nt) {
  const lanes16_consts kc = lanes16_consts_of();
  __m512i q[4];
  for (int j = 0; j < 4; j++)
    q[j] = max128(max128(mag16(z[4 * j], &kc), mag16(z[4 * j + 1], &kc)), max128(mag16(z[4 * j + 2], &kc), mag16(z[4 * j + 3], &kc)));
  uint32_t k[16] __attribute__((aligned(64))), lo[16] __attribute__((aligned(64)));
  __m512i b;
  if (!block_scales(amax_of_lanes(q), fnuz, &b, k, lo)) return 0;
  __mmask32 low = 0;
  for (int s = 0; s < MXFP8_NUM_SCALES; s++) {
    const __m256i c = e4m3_codes16(z[s], bcast32(&k[s]), bcast32(&lo[s]), fnuz, &kc, &low);
    /* 16-byte stores: a 32-byte one would split a line every other block */
    store16(values + 32 * s, _mm256_castsi256_si128(c), nt);
    store16(values + 32 * s + 16, _mm256_extracti128_si256(c, 1), nt);
  }
  store16(scales, _mm512_cvtepi32_epi8(b), nt);
  return !low;
}


/* V4's 7 blocks of 64 from z[14] (as mxfp8_fast; the RoPE dims aside). */
static AVX512 int v4_fast(const __m512i *z, int fnuz, uint8_t *values, uint8_t *scales, int nt) {
  const lanes16_consts kc = lanes16_consts_of();
  __m512i w[8], q[4];
  for (int s = 0; s < V4_NUM_SCALES; s++) w[s] = _mm512_max_epu16(mag16(z[2 * s], &kc), mag16(z[2 * s + 1], &kc));
  w[7] = w[6]; /* lane 7 then repeats block 6 */
  q[0] = q[2] = max128(max128(w[0], w[1]), max128(w[2], w[3]));
  q[1] = q[3] = max128(max128(w[4], w[5]), max128(w[6], w[7]));
  uint32_t k[16] __attribute__((aligned(64))), lo[16] __attribute__((aligned(64)));
  __m512i b;
  if (!block_scales(amax_of_lanes(q), fnuz, &b, k, lo)) return 0;
  __mmask32 low = 0;
  for (int s = 0; s < V4_NUM_SCALES; s++) {
    const __m256i c0 = e4m3_codes16(z[2 * s], bcast32(&k[s]), bcast32(&lo[s]), fnuz, &kc, &low);
    const __m256i c1 = e4m3_codes16(z[2 * s + 1], bcast32(&k[s]), bcast32(&lo[s]), fnuz, &kc, &low);
    store64(values + 64 * s, _mm512_inserti64x4(_mm512_castsi256_si512(c0), c1, 1), nt);
  }
  const __m128i sb = _mm512_maskz_cvtepi32_epi8(0x7F, b); /* byte 7: the zero pad */
  _mm_storel_epi64((__m128i *)scales, sb); /* cached even when nt (cpu_insert says why) */
  return !low;
}

/* The e4m3 codes and values of 16 NVFP4 block scales t (positive, in
 * [2^-9, 448]: no sign, NaN or saturation to handle): e4m3_encode's RNE on
 * the fp32 bits, whose rounded bits are the value itself; below 2^-6,
 * steps of 2^-9. */
static inline AVX512 __m512 e4m3_scales(__m512 t, __m512i *code) {
  const __m512i u = _mm512_castps_si512(t);
  const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(u, 20), _mm512_set1_epi32(1));
  const __m512i r = _mm512_add_epi32(u, _mm512_add_epi32(_mm512_set1_epi32(0x7FFFF), lsb));
  const __m512 big = _mm512_set1_ps(8388608.0f); /* x + 2^23 - 2^23: RNE to an integer */
  const __m512 steps = _mm512_sub_ps(_mm512_add_ps(_mm512_mul_ps(t, _mm512_set1_ps(0x1p9f)), big), big);
  const __mmask16 sub = _mm512_cmp_ps_mask(t, _mm512_set1_ps(0x1p-6f), _CMP_LT_OQ);
  *code = _mm512_mask_mov_epi32(_mm512_sub_epi32(_mm512_srli_epi32(r, 20), _mm512_set1_epi32(120 << 3)), sub,
                                _mm512_cvttps_epi32(steps));
  return _mm512_mask_mov_ps(_mm512_castsi512_ps(_mm512_and_si512(r, _mm512_set1_epi32((int)0xFFF00000u))), sub,
                            _mm512_mul_ps(steps, _mm512_set1_ps(0x1p-9f)));
}

/* NVFP4 thresholds of 16 blocks (NUMERICS §2.3; the reasoning at
 * nvfp4_row) from their amax bits: writes the 16 scale bytes and returns
 * the lookup tables tab[4]: entry b (and 16 + b) of block b's midpoints
 * times its scale as bf16 bits, the odd ones less 1: {t3, t3}, {t1, t5},
 * {t0, t4}, {t2, t6}. */
static AVX512 void nvfp4_tables(__m512i amax_bits, uint8_t *scales, __m512i *tab) {
  __m512 t = _mm512_mul_ps(_mm512_castsi512_ps(amax_bits), _mm512_set1_ps(1.0f / 6.0f));
  t = _mm512_min_ps(_mm512_max_ps(t, _mm512_set1_ps(NVFP4_SCALE_MIN)), _mm512_set1_ps(FP8_OCP_MAX));
  __m512i sc;
  const __m512 sv = e4m3_scales(t, &sc);
  _mm_storeu_si128((__m128i *)scales, _mm512_cvtepi32_epi8(sc));
  static const float mid[7] = {0.25f, 0.75f, 1.25f, 1.75f, 2.5f, 3.5f, 5.0f};
  __m512i th[7];
  for (int k = 0; k < 7; k++) { /* fp32 bits; bits - 0x10000 is the bf16 below */
    th[k] = _mm512_castps_si512(_mm512_mul_ps(sv, _mm512_set1_ps(mid[k])));
    if (k & 1) th[k] = _mm512_sub_epi32(th[k], _mm512_set1_epi32(0x10000));
  }
  const __m512i hi = _mm512_setr_epi32(0x30001, 0x70005, 0xB0009, 0xF000D, 0x130011, 0x170015, 0x1B0019, 0x1F001D,
                                       0x230021, 0x270025, 0x2B0029, 0x2F002D, 0x330031, 0x370035, 0x3B0039,
                                       0x3F003D); /* 2i + 1: the high halves of two vectors */
  tab[0] = _mm512_permutex2var_epi16(th[3], hi, th[3]), tab[1] = _mm512_permutex2var_epi16(th[1], hi, th[5]);
  tab[2] = _mm512_permutex2var_epi16(th[0], hi, th[4]), tab[3] = _mm512_permutex2var_epi16(th[2], hi, th[6]);
}

/* The packed codes of blocks 2p and 2p + 1 (z, a vector; i1: their lanes'
 * table entries), one byte a 32-bit lane: see nvfp4_row. */
static inline AVX512 __m512i nvfp4_pair(__m512i z, const __m512i *t, __m512i i1, const lanes16_consts *kc) {
  const __m512i m = mag16(z, kc);
  const __mmask32 m1 = _mm512_cmpgt_epu16_mask(m, _mm512_permutexvar_epi16(i1, t[0]));
  const __m512i i2 = _mm512_mask_add_epi16(i1, m1, i1, _mm512_set1_epi16(16)); /* t1 or t5 */
  const __mmask32 m2 = _mm512_cmpgt_epu16_mask(m, _mm512_permutexvar_epi16(i2, t[1]));
  const __m512i i3 = _mm512_mask_add_epi16(i2, m2, i2, _mm512_set1_epi16(32)); /* t0, t4, t2 or t6 */
  const __mmask32 m3 = _mm512_cmpgt_epu16_mask(m, _mm512_permutex2var_epi16(t[2], i3, t[3]));
  /* even lanes: code | sign << 3; odd lanes: the same << 4 (no shifts: masked adds) */
  const __m512i one = _mm512_set1_epi32(0x100001);
  __m512i c = _mm512_maskz_mov_epi16(_mm512_movepi16_mask(z), _mm512_slli_epi16(one, 3));
  c = _mm512_mask_add_epi16(c, m1, c, _mm512_slli_epi16(one, 2));
  c = _mm512_mask_add_epi16(c, m2, c, _mm512_slli_epi16(one, 1));
  c = _mm512_mask_add_epi16(c, m3, c, one);
  return _mm512_madd_epi16(c, _mm512_set1_epi16(1)); /* value pairs share a lane: the sum of its halves */
}

/* The bytes of w[0..3] (one a 32-bit lane) in order: two rounds of packs
 * leave lane l's 32-bit word j holding w[j]'s word l; the permutation
 * undoes that. */
static inline AVX512 __m512i bytes_of_4(const __m512i *w) {
  const __m512i b = _mm512_packus_epi16(_mm512_packus_epi32(w[0], w[1]), _mm512_packus_epi32(w[2], w[3]));
  return _mm512_permutexvar_epi32(_mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15), b);
}

/* NVFP4 (NUMERICS §2.3), the row's 32 blocks of 16 values, a vector two
 * blocks.  Returns 0, having written nothing meaningful, when a value is
 * NaN (the caller then takes the reference; NaN inputs are rare).  Both
 * halves' scales are made before any code, so their long chains overlap.
 * The block scales are the reference's: amax / 6 in one RN multiply,
 * floored, clamped, e4m3-encoded and decoded (e4m3_scales).  Codes without
 * the division: for a midpoint t of the e2m1 grid and a block scale sv (an
 * e4m3 value) t * sv is exact in fp32 with at most 7 significant bits (3 +
 * 4), so a bf16, and a bf16 |x| is never within rounding distance of it
 * unless equal: RN(|x| / sv) falls on the same side of t as |x| does of
 * t * sv, which the bf16 bits compare as unsigned integers; odd midpoints
 * tie up, so there |x| >= t * sv, i.e. bits > its bits - 1.  The code is the
 * number of midpoints |x| passes (e2m1_encode's if-chain), by a binary
 * search of three compares whose thresholds the block's lanes look up in
 * nvfp4_tables'; tests/paths/exhaustive_paths.c checks it against the
 * division on every bf16 value and every scale. */
static AVX512 int nvfp4_row(const uint16_t *x, uint8_t *packed, uint8_t *scales) {
  __m512i z[16], q[4], amax[2], tab[2][4];
  const lanes16_consts kc = lanes16_consts_of();
  for (int p = 0; p < 16; p++) z[p] = _mm512_loadu_si512((const void *)(x + 32 * p));
  for (int g = 0; g < 2; g++) {
    for (int j = 0; j < 4; j++) q[j] = max128(mag16(z[8 * g + 2 * j], &kc), mag16(z[8 * g + 2 * j + 1], &kc));
    amax[g] = amax_of_lanes(q);
  }
  if (_mm512_cmpgt_epu32_mask(_mm512_max_epu32(amax[0], amax[1]), _mm512_set1_epi32(0x7F800000))) return 0; /* a NaN */
  for (int g = 0; g < 2; g++) nvfp4_tables(amax[g], scales + 16 * g, tab[g]);
  for (int g = 0; g < 2; g++) {
    __m512i i1 = _mm512_inserti64x4(_mm512_setzero_si512(), _mm256_set1_epi16(1), 1), w[4]; /* blocks 2p, 2p + 1 */
#pragma GCC unroll 8
    for (int p = 0; p < 8; p++, i1 = _mm512_add_epi16(i1, _mm512_set1_epi16(2))) {
      w[p % 4] = nvfp4_pair(z[8 * g + p], tab[g], i1, &kc);
      if (p % 4 == 3) _mm512_storeu_si512((void *)(packed + 128 * g + 16 * (p - 3)), bytes_of_4(w));
    }
  }
  return 1;
}

static AVX512 int quant_avx512(dsv4kv_record rec, int fnuz, const uint16_t *x, uint8_t *values, uint8_t *scales,
                               int nt) {
  switch (rec) {
    case DSV4KV_RECORD_V4: {
      /* the whole row loaded before the first store (see MXFP8) */
      __m512i z[HEAD_DIM / 32];
      for (int i = 0; i < HEAD_DIM / 32; i++) z[i] = _mm512_loadu_si512((const void *)(x + 32 * i));
      for (int i = NOPE_DIM / 32; i < HEAD_DIM / 32; i++) /* the RoPE dims' bf16 bytes as they are */
        store64(values + NOPE_DIM + 64 * (i - NOPE_DIM / 32), z[i], nt);
      if (v4_fast(z, fnuz, values, scales, nt)) return 1;
      for (int s = 0; s < V4_NUM_SCALES; s++)
        fp8_block_z(z + 2 * s, x + s * V4_BLOCK, V4_BLOCK, fnuz, values + s * V4_BLOCK, scales + s);
      scales[V4_NUM_SCALES] = 0;
      return 1;
    }
    case DSV4KV_RECORD_MXFP8: {
      /* the whole row loaded before the first store: its loads then never
       * wait behind this record's stores (a store whose address matches a
       * later load in bits 0-11 holds the load up; the 528-byte records
       * against 1024-byte rows met that often) */
      __m512i z[MXFP8_NUM_SCALES];
      for (int s = 0; s < MXFP8_NUM_SCALES; s++) z[s] = _mm512_loadu_si512((const void *)(x + s * MXFP8_BLOCK));
      if (mxfp8_fast(z, fnuz, values, scales, nt)) return 1;
      if (nt) _mm_sfence(); /* the streamed bytes land before the blocks rewrite them */
      for (int s = 0; s < MXFP8_NUM_SCALES; s++)
        fp8_block_z(z + s, x + s * MXFP8_BLOCK, MXFP8_BLOCK, fnuz, values + s * MXFP8_BLOCK, scales + s);
      return 1;
    }
    case DSV4KV_RECORD_NVFP4:
      return nvfp4_row(x, values, scales); /* 0 for a NaN: the reference writes the whole record */
    case DSV4KV_RECORD_INDEXER_FP8:
    case DSV4KV_RECORD_INDEXER_MXFP4:
      return 0;
  }
  return 0;
}

int record_quant_avx512(dsv4kv_record rec, int fnuz, const uint16_t *x, uint8_t *values, uint8_t *scales, int nt) {
  return quant_avx512(rec, fnuz, x, values, scales, nt);
}

#else

int record_quant_avx512(dsv4kv_record rec, int fnuz, const uint16_t *x, uint8_t *values, uint8_t *scales, int nt) {
  (void)rec, (void)fnuz, (void)x, (void)values, (void)scales, (void)nt;
  return 0;
}

#endif
