/* The AVX-512 CPU path of the gather's dequantization (NUMERICS §3): one
 * main-cache record into 512 bf16 values, 16 at a time, byte-identical to
 * record_dequant_ref (formats/ref.h), which the case registry checks on
 * every input it generates (tests/ops, ctest ops_cpu_paths).
 *
 * Exact identities used: an e4m3 code's magnitude bits shifted left by 7
 * (sign at bit 15) read as fp16 are the e4m3 value times 2^-8 (e4m3fnuz:
 * 2^-7), subnormals included, so vcvtph2ps decodes 16 codes exactly; the
 * product with the block scale 2^(s-127) is then the reference's one fp32
 * multiply; bf16 rounding is the reference's integer round-half-even with
 * every NaN made 0x7FFF (fp8x32: 32 codes in 16-bit lanes, one multiply by
 * scale x 2^8 where that is finite).  For scale bytes 11..246 every product
 * is an exact normal of <= 4 significant bits, so its bf16 is made in
 * integers, no fp32 step (fp8x32_direct).  NVFP4: e2m1 x e4m3 products are
 * exact too; each pair of blocks is a 16-entry fp32 product table per block
 * whose high halves vpermw picks by nibble (nvfp4_pair_lut). */
#include "cpu/cpu.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#include "cpu/avx512.h"
#include "formats/ref.h"

/* Output stores (store64: avx512.h): non-temporal (nt) for outputs far
 * larger than the caches, whose rows are 64-byte aligned (the caller
 * checks); the cache keeps the records. */
static AVX512 void store32(uint16_t *out, __m256i v, int nt) {
  if (nt)
    _mm256_stream_si256((__m256i *)out, v);
  else
    _mm256_storeu_si256((__m256i *)out, v);
}

/* 16 fp32 -> bf16 as f32_to_bf16 (RNE, NaN -> 0x7FFF), stored at out. */
static AVX512 void store_bf16x16(__m512 f, uint16_t *out, int nt) {
  const __m512i u = _mm512_castps_si512(f);
  const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1));
  __m512i r = _mm512_srli_epi32(_mm512_add_epi32(u, _mm512_add_epi32(lsb, _mm512_set1_epi32(0x7FFF))), 16);
  const __mmask16 nan = _mm512_cmp_ps_mask(f, f, _CMP_UNORD_Q);
  r = _mm512_mask_mov_epi32(r, nan, _mm512_set1_epi32(0x7FFF));
  store32(out, _mm512_cvtepi32_epi16(r), nt);
}

/* 16 e4m3 (or e4m3fnuz) codes to their exact fp32 values. */
static AVX512 __m512 e4m3x16(const uint8_t *codes, int fnuz) {
  const __m512i c = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)codes));
  const __m512i mag = _mm512_and_si512(c, _mm512_set1_epi32(0x7F));
  const __m512i sign = _mm512_slli_epi32(_mm512_and_si512(c, _mm512_set1_epi32(0x80)), 8);
  const __m512i h = _mm512_or_si512(_mm512_slli_epi32(mag, 7), sign);
  __m512 v = _mm512_mul_ps(_mm512_cvtph_ps(_mm512_cvtepi32_epi16(h)), _mm512_set1_ps(fnuz ? 0x1p7f : 0x1p8f));
  /* NaN codes: OCP 0x7F / 0xFF, FNUZ 0x80 */
  const __mmask16 nan = fnuz ? _mm512_cmpeq_epi32_mask(c, _mm512_set1_epi32(0x80))
                             : _mm512_cmpeq_epi32_mask(mag, _mm512_set1_epi32(0x7F));
  return _mm512_mask_mov_ps(v, nan, _mm512_castsi512_ps(_mm512_set1_epi32(0x7FC00000)));
}

/* e4m3 codes in 16-bit lanes as fp16 bits, the value x 2^-8 (FNUZ: 2^-7):
 * magnitude << 7, and the sign (bit 14 of c << 7) doubled into bit 15. */
static inline AVX512 __m512i e4m3_fp16_bits(__m512i c) {
  const __m512i h = _mm512_slli_epi16(c, 7);
  return _mm512_add_epi16(h, _mm512_and_si512(h, _mm512_set1_epi16(0x4000)));
}

/* 32 codes of one block, 16-bit lanes all the way but for the multiply:
 * the fp16 bits (magnitude << 7, sign to bit 15: bit 14 of c << 7 doubled
 * into bit 15) through vcvtph2ps, one multiply by s * 2^8 (2^7 FNUZ),
 * which is exact and representable for scale bytes up to 246, so the
 * product is the reference's code value x s rounded once; bf16 rounding in
 * integers; NaN codes -> 0x7FFF. */
static AVX512 void fp8x32(const uint8_t *codes, __m512 s8, int fnuz, uint16_t *out, int nt) {
  const __m512i c = _mm512_cvtepu8_epi16(_mm256_loadu_si256((const __m256i *)codes));
  const __m512i h = e4m3_fp16_bits(c);
  const __mmask32 nan = fnuz ? _mm512_cmpeq_epi16_mask(c, _mm512_set1_epi16(0x80))
                             : _mm512_cmpeq_epi16_mask(_mm512_and_si512(c, _mm512_set1_epi16(0x7F)), _mm512_set1_epi16(0x7F));
  __m512i u[2];
  /* the halves named by constants: the extract takes an immediate, which a
   * loop index is not in an unoptimized build */
  const __m256i half[2] = {_mm512_extracti64x4_epi64(h, 0), _mm512_extracti64x4_epi64(h, 1)};
  for (int i = 0; i < 2; i++) {
    const __m512 f = _mm512_mul_ps(_mm512_cvtph_ps(half[i]), s8);
    const __m512i b = _mm512_castps_si512(f);
    const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(b, 16), _mm512_set1_epi32(1));
    u[i] = _mm512_srli_epi32(_mm512_add_epi32(b, _mm512_add_epi32(lsb, _mm512_set1_epi32(0x7FFF))), 16);
  }
  /* packus works per 128-bit lane: 4 of u[0], 4 of u[1], ...; the qword permutation restores the order */
  __m512i r = _mm512_permutexvar_epi64(_mm512_setr_epi64(0, 2, 4, 6, 1, 3, 5, 7), _mm512_packus_epi32(u[0], u[1]));
  r = _mm512_mask_mov_epi16(r, nan, _mm512_set1_epi16(0x7FFF));
  store64(out, r, nt);
}

/* The constants of fp8x32_direct, built once a record (AVX512_KEEP). */
typedef struct {
  __m512i mag, eight, sign, nan_code, nan_bf16;
} fp8_direct_consts;

static inline AVX512 fp8_direct_consts fp8_direct_consts_of(int fnuz) {
  fp8_direct_consts k = {_mm512_set1_epi16(0x7F), _mm512_set1_epi16(8), _mm512_set1_epi16((short)0x8000),
                         _mm512_set1_epi16(fnuz ? 0x80 : 0x7F), _mm512_set1_epi16(0x7FFF)};
  AVX512_KEEP(k.mag);
  AVX512_KEEP(k.eight);
  AVX512_KEEP(k.sign);
  AVX512_KEEP(k.nan_code);
  AVX512_KEEP(k.nan_bf16);
  return k;
}

/* 32 codes of one block straight to bf16 in 16-bit lanes, for scale bytes
 * 11..246, where every product code x 2^(scale-127) is an exact normal
 * bf16: a normal code's magnitude << 4 is its exponent << 7 | mantissa << 4,
 * so its bf16 is that plus the exponent offset `base`; the 7 subnormal
 * codes (and 0) come from `sub`, the block's table; the sign is the code's
 * bit 7 moved to 15; NaN codes (OCP 0x7F / 0xFF: the magnitude; FNUZ 0x80:
 * the code) -> 0x7FFF. */
static inline AVX512 void fp8x32_direct(const uint8_t *codes, __m512i base, __m512i sub, int fnuz,
                                        const fp8_direct_consts *k, uint16_t *out, int nt) {
  const __m512i c = _mm512_cvtepu8_epi16(_mm256_loadu_si256((const __m256i *)codes));
  const __m512i mag = _mm512_and_si512(c, k->mag);
  __m512i r = _mm512_add_epi16(_mm512_slli_epi16(mag, 4), base);
  r = _mm512_mask_permutexvar_epi16(r, _mm512_cmplt_epu16_mask(mag, k->eight), mag, sub);
  r = _mm512_ternarylogic_epi32(r, _mm512_slli_epi16(c, 8), k->sign, 0xF8); /* r | (c8 & m) */
  const __mmask32 nan = _mm512_cmpeq_epi16_mask(fnuz ? c : mag, k->nan_code);
  store64(out, _mm512_mask_mov_epi16(r, nan, k->nan_bf16), nt);
}

/* n codes (a multiple of 32) of one fp8 block with its UE8M0 scale byte. */
static AVX512 void fp8_block(const uint8_t *codes, int n, uint8_t scale, int fnuz, const fp8_direct_consts *k,
                             uint16_t *out, int nt) {
  if (scale >= 11 && scale <= 246) { /* exact normal products: fp8x32_direct */
    const int off = (scale - 127) * 128 - (fnuz ? 128 : 0); /* exponent offset in bf16 bits, FNUZ's bias 8 */
    /* bf16 of m x 2^-9 (m = 0..7, the OCP subnormals) moved by the offset; 0 stays 0 */
    const __m512i sub0 = _mm512_setr_epi32(0x3B000000, 0x3BC03B80, 0x3C203C00, 0x3C603C40, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
                                           0, 0);
    const __m512i sub = _mm512_maskz_add_epi16(0xFE, sub0, _mm512_set1_epi16((short)off));
    const __m512i base = _mm512_set1_epi16((short)(off + 120 * 128));
    for (int i = 0; i < n; i += 32) fp8x32_direct(codes + i, base, sub, fnuz, k, out + i, nt);
    return;
  }
  const __m512 s = _mm512_set1_ps(ue8m0_decode_ftz(scale));
  if (scale <= 246) { /* s * 2^8 finite: one multiply (see fp8x32) */
    const __m512 s8 = _mm512_mul_ps(s, _mm512_set1_ps(fnuz ? 0x1p7f : 0x1p8f));
    for (int i = 0; i < n; i += 32) fp8x32(codes + i, s8, fnuz, out + i, nt);
    return;
  }
  for (int i = 0; i < n; i += 16) store_bf16x16(_mm512_mul_ps(e4m3x16(codes + i, fnuz), s), out + i, nt);
}

/* The e2m1 values of one NVFP4 block (8 bytes of pairs, low nibble first). */
static AVX512 __m512 e2m1x16(const uint8_t *packed) {
  const __m512 table = _mm512_setr_ps(0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f, -0.0f, -0.5f, -1.0f, -1.5f,
                                      -2.0f, -3.0f, -4.0f, -6.0f);
  const __m128i b = _mm_loadl_epi64((const __m128i *)packed);
  const __m512i bytes = _mm512_cvtepu8_epi32(_mm_unpacklo_epi8(b, b)); /* b0 b0 b1 b1 ... */
  const __m512i shift = _mm512_setr_epi32(0, 4, 0, 4, 0, 4, 0, 4, 0, 4, 0, 4, 0, 4, 0, 4);
  return _mm512_permutexvar_ps(_mm512_and_si512(_mm512_srlv_epi32(bytes, shift), _mm512_set1_epi32(0xF)), table);
}

/* One NVFP4 block: 8 bytes of e2m1 pairs (low nibble first), e4m3 scale. */
static AVX512 void nvfp4_block(const uint8_t *packed, uint8_t scale, uint16_t *out, int nt) {
  store_bf16x16(_mm512_mul_ps(e2m1x16(packed), _mm512_set1_ps(e4m3_decode(scale))), out, nt);
}

/* Two NVFP4 blocks (16 bytes of nibbles, 32 values) by table lookup: the
 * 16 products e2m1 x scale of each block in fp32 (pa, pb), exact and of
 * <= 6 significant bits, so each one's bf16 is its high half (odd 16-bit
 * word), which vpermw picks by the index 2 x nibble + 1; one 64-byte store. */
static AVX512 void nvfp4_pair_lut(const uint8_t *packed, __m512 pa, __m512 pb, uint16_t *out, int nt) {
  const __m512i d = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)packed)); /* byte j in dword j */
  /* word 2j = 2 x low nibble + 1, word 2j + 1 = 2 x high nibble + 1: bits
   * 1-4 from the shifts, bit 0 set (ternlog (a | b) | ~c); the bits above 4,
   * which vpermw ignores, are left as they fall */
  const __m512i idx = _mm512_ternarylogic_epi32(_mm512_slli_epi32(d, 1), _mm512_slli_epi32(d, 13),
                                                _mm512_set1_epi32(0x001E001E), 0xFD);
  __m512i r = _mm512_permutexvar_epi16(idx, _mm512_castps_si512(pa));
  r = _mm512_mask_permutexvar_epi16(r, 0xFFFF0000u, idx, _mm512_castps_si512(pb));
  store64(out, r, nt);
}

/* One NVFP4 record: the 32 scales decoded at once (the e4m3 -> fp16 bits
 * of fp8x32, exact, x 2^-8; the 2^8 is in the e2m1 table), then the pairs
 * of blocks by lookup.  A pair with a NaN scale code takes nvfp4_block,
 * whose products are NaN and become 0x7FFF. */
static AVX512 void nvfp4_record(const uint8_t *values, const uint8_t *scales, uint16_t *out, int nt) {
  const __m256i sb = _mm256_loadu_si256((const __m256i *)scales);
  const __mmask32 nan = _mm256_cmpeq_epi8_mask(_mm256_and_si256(sb, _mm256_set1_epi8(0x7F)), _mm256_set1_epi8(0x7F));
  const __m512i h = e4m3_fp16_bits(_mm512_cvtepu8_epi16(sb));
  float sc[NVFP4_NUM_SCALES]; /* each block's scale x 2^-8, broadcast from here by the multiplies */
  _mm512_storeu_ps(sc, _mm512_cvtph_ps(_mm512_extracti64x4_epi64(h, 0)));
  _mm512_storeu_ps(sc + 16, _mm512_cvtph_ps(_mm512_extracti64x4_epi64(h, 1)));
  const __m512 e2m1 = _mm512_setr_ps(0.0f, 0x1p7f, 0x1p8f, 0x1.8p8f, 0x1p9f, 0x1.8p9f, 0x1p10f, 0x1.8p10f, -0.0f, -0x1p7f,
                                     -0x1p8f, -0x1.8p8f, -0x1p9f, -0x1.8p9f, -0x1p10f, -0x1.8p10f); /* x 2^8 */
  for (int s = 0; s < NVFP4_NUM_SCALES; s += 2) {
    const uint8_t *packed = values + s * NVFP4_BLOCK / 2;
    uint16_t *o = out + s * NVFP4_BLOCK;
    if (!((nan >> s) & 3u)) {
      nvfp4_pair_lut(packed, _mm512_mul_ps(e2m1, _mm512_set1_ps(sc[s])), _mm512_mul_ps(e2m1, _mm512_set1_ps(sc[s + 1])),
                     o, nt);
    } else {
      nvfp4_block(packed, scales[s], o, nt);
      nvfp4_block(packed + NVFP4_BLOCK / 2, scales[s + 1], o + NVFP4_BLOCK, nt);
    }
  }
}

static AVX512 void dequant_avx512(dsv4kv_record rec, int fnuz, const uint8_t *values, const uint8_t *scales,
                                  uint16_t *out, int nt) {
  const fp8_direct_consts k = fp8_direct_consts_of(fnuz);
  switch (rec) {
    case DSV4KV_RECORD_V4:
      for (int s = 0; s < V4_NUM_SCALES; s++)
        fp8_block(values + s * V4_BLOCK, V4_BLOCK, scales[s], fnuz, &k, out + s * V4_BLOCK, nt);
      for (int i = 0; i < ROPE_DIM; i += 32) /* the RoPE dims' bf16 bytes as they are */
        store64(out + NOPE_DIM + i, _mm512_loadu_si512((const void *)(values + NOPE_DIM + 2 * i)), nt);
      return;
    case DSV4KV_RECORD_MXFP8:
      for (int s = 0; s < MXFP8_NUM_SCALES; s++)
        fp8_block(values + s * MXFP8_BLOCK, MXFP8_BLOCK, scales[s], fnuz, &k, out + s * MXFP8_BLOCK, nt);
      return;
    case DSV4KV_RECORD_NVFP4:
      nvfp4_record(values, scales, out, nt);
      return;
    case DSV4KV_RECORD_INDEXER_FP8:
    case DSV4KV_RECORD_INDEXER_MXFP4:
      return;
  }
}

int cpu_avx512_supported(void) {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512vl") && cpu_has_f16c() &&
         __builtin_cpu_supports("fma"); /* the indexer's fma (every AVX-512 processor has it) */
}

void record_dequant_avx512(dsv4kv_record rec, int fnuz, const uint8_t *values, const uint8_t *scales,
                           uint16_t *out, int nt) {
  dequant_avx512(rec, fnuz, values, scales, out, nt);
}

void cpu_store_fence(void) { _mm_sfence(); }

#else /* not x86-64 with GCC-style target attributes: no such path */

int cpu_avx512_supported(void) { return 0; }
void record_dequant_avx512(dsv4kv_record rec, int fnuz, const uint8_t *values, const uint8_t *scales,
                           uint16_t *out, int nt) {
  (void)rec, (void)fnuz, (void)values, (void)scales, (void)out, (void)nt;
}
void cpu_store_fence(void) {}

#endif
