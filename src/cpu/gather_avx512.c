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
 * scale x 2^8 where that is finite; for scale bytes 11..246 the products are
 * exact normal fp32 of <= 4 significant bits, whose bf16 is the high half,
 * no rounding step).  e2m1 values come from a 16-entry table. */
#include "cpu/cpu.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#include "formats/ref.h"

#define AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,f16c")))

/* Output stores: non-temporal (nt) for outputs far larger than the caches,
 * whose rows are 64-byte aligned (the caller checks): no read for ownership
 * of lines the gather overwrites whole, and the cache keeps the records. */
static AVX512 void store64(uint16_t *out, __m512i v, int nt) {
  if (nt)
    _mm512_stream_si512((void *)out, v);
  else
    _mm512_storeu_si512((void *)out, v);
}
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

/* 32 codes of one block, 16-bit lanes all the way but for the multiply:
 * the fp16 bits (magnitude << 7, sign to bit 15: bit 14 of c << 7 doubled
 * into bit 15) through vcvtph2ps, one multiply by s * 2^8 (2^7 FNUZ),
 * which is exact and representable for scale bytes up to 246, so the
 * product is the reference's code value x s rounded once; bf16 rounding in
 * integers; NaN codes -> 0x7FFF. */
static AVX512 void fp8x32(const uint8_t *codes, __m512 s8, int fnuz, int exact, uint16_t *out, int nt) {
  const __m512i c = _mm512_cvtepu8_epi16(_mm256_loadu_si256((const __m256i *)codes));
  __m512i h = _mm512_slli_epi16(c, 7);
  h = _mm512_add_epi16(h, _mm512_and_si512(h, _mm512_set1_epi16(0x4000)));
  const __mmask32 nan = fnuz ? _mm512_cmpeq_epi16_mask(c, _mm512_set1_epi16(0x80))
                             : _mm512_cmpeq_epi16_mask(_mm512_and_si512(c, _mm512_set1_epi16(0x7F)), _mm512_set1_epi16(0x7F));
  __m512i u[2];
  /* the halves named by constants: the extract takes an immediate, which a
   * loop index is not in an unoptimized build */
  const __m256i half[2] = {_mm512_extracti64x4_epi64(h, 0), _mm512_extracti64x4_epi64(h, 1)};
  for (int i = 0; i < 2; i++) {
    const __m512 f = _mm512_mul_ps(_mm512_cvtph_ps(half[i]), s8);
    const __m512i b = _mm512_castps_si512(f);
    if (exact) { /* an exact product of <= 4 significant bits: its low 16 bits are 0, RNE is the high half */
      u[i] = _mm512_srli_epi32(b, 16);
      continue;
    }
    const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(b, 16), _mm512_set1_epi32(1));
    u[i] = _mm512_srli_epi32(_mm512_add_epi32(b, _mm512_add_epi32(lsb, _mm512_set1_epi32(0x7FFF))), 16);
  }
  /* packus works per 128-bit lane: 4 of u[0], 4 of u[1], ...; the qword permutation restores the order */
  __m512i r = _mm512_permutexvar_epi64(_mm512_setr_epi64(0, 2, 4, 6, 1, 3, 5, 7), _mm512_packus_epi32(u[0], u[1]));
  r = _mm512_mask_mov_epi16(r, nan, _mm512_set1_epi16(0x7FFF));
  store64(out, r, nt);
}

/* n codes (a multiple of 32) of one fp8 block with its UE8M0 scale byte. */
static AVX512 void fp8_block(const uint8_t *codes, int n, uint8_t scale, int fnuz, uint16_t *out, int nt) {
  const __m512 s = _mm512_set1_ps(ue8m0_decode_ftz(scale));
  if (scale <= 246) { /* s * 2^8 finite: one multiply (see fp8x32) */
    const __m512 s8 = _mm512_mul_ps(s, _mm512_set1_ps(fnuz ? 0x1p7f : 0x1p8f));
    /* scale bytes 11..246: every product is a normal fp32 (>= 2^-10 x 2^-116),
     * exact, and needs no rounding to bf16 */
    const int exact = scale >= 11;
    if (exact)
      for (int i = 0; i < n; i += 32) fp8x32(codes + i, s8, fnuz, 1, out + i, nt);
    else
      for (int i = 0; i < n; i += 32) fp8x32(codes + i, s8, fnuz, 0, out + i, nt);
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

/* bf16 bits (RNE) of 16 products that are not NaN, in 32-bit lanes. */
static AVX512 __m512i bf16_bits_no_nan(__m512 f) {
  const __m512i u = _mm512_castps_si512(f);
  const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1));
  return _mm512_srli_epi32(_mm512_add_epi32(u, _mm512_add_epi32(lsb, _mm512_set1_epi32(0x7FFF))), 16);
}

/* Two NVFP4 blocks whose scales are not NaN codes: the products (e2m1 x a
 * finite e4m3, exact) are never NaN, so no NaN step; one 64-byte store. */
static AVX512 void nvfp4_2_blocks(const uint8_t *packed, const uint8_t *scales, uint16_t *out, int nt) {
  const __m512i a = bf16_bits_no_nan(_mm512_mul_ps(e2m1x16(packed), _mm512_set1_ps(e4m3_decode(scales[0]))));
  const __m512i b = bf16_bits_no_nan(_mm512_mul_ps(e2m1x16(packed + 8), _mm512_set1_ps(e4m3_decode(scales[1]))));
  /* packus works per 128-bit lane: 4 of a, 4 of b, ...; the qword permutation restores the order */
  store64(out, _mm512_permutexvar_epi64(_mm512_setr_epi64(0, 2, 4, 6, 1, 3, 5, 7), _mm512_packus_epi32(a, b)), nt);
}

static AVX512 void dequant_avx512(dsv4kv_record rec, int fnuz, const uint8_t *values, const uint8_t *scales,
                                  uint16_t *out, int nt) {
  switch (rec) {
    case DSV4KV_RECORD_V4:
      for (int s = 0; s < V4_NUM_SCALES; s++)
        fp8_block(values + s * V4_BLOCK, V4_BLOCK, scales[s], fnuz, out + s * V4_BLOCK, nt);
      for (int i = 0; i < ROPE_DIM; i += 32) /* the RoPE dims' bf16 bytes as they are */
        store64(out + NOPE_DIM + i, _mm512_loadu_si512((const void *)(values + NOPE_DIM + 2 * i)), nt);
      return;
    case DSV4KV_RECORD_MXFP8:
      for (int s = 0; s < MXFP8_NUM_SCALES; s++)
        fp8_block(values + s * MXFP8_BLOCK, MXFP8_BLOCK, scales[s], fnuz, out + s * MXFP8_BLOCK, nt);
      return;
    case DSV4KV_RECORD_NVFP4:
      for (int s = 0; s < NVFP4_NUM_SCALES; s += 2)
        if ((scales[s] & 0x7F) != 0x7F && (scales[s + 1] & 0x7F) != 0x7F) { /* neither scale a NaN code */
          nvfp4_2_blocks(values + s * NVFP4_BLOCK / 2, scales + s, out + s * NVFP4_BLOCK, nt);
        } else {
          nvfp4_block(values + s * NVFP4_BLOCK / 2, scales[s], out + s * NVFP4_BLOCK, nt);
          nvfp4_block(values + (s + 1) * NVFP4_BLOCK / 2, scales[s + 1], out + (s + 1) * NVFP4_BLOCK, nt);
        }
      return;
    case DSV4KV_RECORD_INDEXER_FP8:
    case DSV4KV_RECORD_INDEXER_MXFP4:
      return;
  }
}

int cpu_avx512_supported(void) {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("f16c") &&
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
