/* The AVX2 CPU path of the gather's dequantization (NUMERICS §3), for
 * processors without AVX-512 (AVX2 + F16C + FMA): one main-cache record into
 * 512 bf16 values, byte-identical to record_dequant_ref (formats/ref.h); the
 * case registry, the golden files and tests/paths/exhaustive_paths.c run it
 * as every path.  The arithmetic is gather_avx512.c's on 8-lane vectors:
 * e4m3 codes as fp16 bits (magnitude << 7, sign to bit 15) through
 * vcvtph2ps, exact; one multiply by scale x 2^8 (x 2^7 FNUZ) where that is
 * finite (scale bytes up to 246), else two, as the reference's one rounded
 * product either way; e2m1 through an 8-entry table and the sign bit, its
 * products exact (bf16: their high halves), two blocks at a time as a
 * 16-entry bf16 table a block looked up by vpshufb.  An fp8 product is a bf16 value
 * too for scale bytes 4 .. 254 (fp8_block), so it is its high half; other
 * bytes take the bf16 rounding in integers; NaN codes give 0x7FFF. */
#include "cpu/cpu.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <cpuid.h>
#include <immintrin.h>

#include "cpu/avx2.h"
#include "formats/ref.h"

/* The block helpers are inlined into each of dequant_avx2's two forms (nt 0
 * and 1): left as a call a block, the MXFP8 gather ran ~25 % slower. */
#define AVX2_INLINE static inline AVX2 INLINE

/* 8 fp32 -> bf16 as f32_to_bf16 (RNE, NaN -> 0x7FFF), in the low 16 bits of
 * 32-bit lanes. */
static AVX2 __m256i bf16x8(__m256 f) {
  const __m256i u = _mm256_castps_si256(f);
  const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1));
  const __m256i r = _mm256_srli_epi32(_mm256_add_epi32(u, _mm256_add_epi32(lsb, _mm256_set1_epi32(0x7FFF))), 16);
  const __m256i nan = _mm256_castps_si256(_mm256_cmp_ps(f, f, _CMP_UNORD_Q));
  return _mm256_blendv_epi8(r, _mm256_set1_epi32(0x7FFF), nan);
}

/* 16 fp32 (two vectors) -> 16 bf16 at out. */
static AVX2 void store_bf16x16(__m256 a, __m256 b, uint16_t *out, int nt) {
  /* packus works per 128-bit lane: a0-3 b0-3 a4-7 b4-7; the qword permutation restores the order */
  const __m256i p = _mm256_permute4x64_epi64(_mm256_packus_epi32(bf16x8(a), bf16x8(b)), 0xD8);
  store32(out, p, nt);
}

/* 16 codes of one fp8 block: mul1 (and mul2 unless 0) the multipliers;
 * exact: every product is a bf16 value (or +-Inf), so its bf16 is its high
 * half. */
AVX2_INLINE void fp8x16(const uint8_t *codes, __m256 mul1, __m256 mul2, int two, int exact, int fnuz, uint16_t *out,
                        int nt) {
  const __m256i c = _mm256_cvtepu8_epi16(_mm_loadu_si128((const __m128i *)codes));
  __m256i h = _mm256_slli_epi16(c, 7);
  h = _mm256_add_epi16(h, _mm256_and_si256(h, _mm256_set1_epi16(0x4000))); /* bit 14 (the sign) into bit 15 */
  const __m256i nan = fnuz ? _mm256_cmpeq_epi16(c, _mm256_set1_epi16(0x80))
                           : _mm256_cmpeq_epi16(_mm256_and_si256(c, _mm256_set1_epi16(0x7F)), _mm256_set1_epi16(0x7F));
  __m256 f0 = _mm256_mul_ps(_mm256_cvtph_ps(_mm256_castsi256_si128(h)), mul1);
  __m256 f1 = _mm256_mul_ps(_mm256_cvtph_ps(_mm256_extracti128_si256(h, 1)), mul1);
  if (two) f0 = _mm256_mul_ps(f0, mul2), f1 = _mm256_mul_ps(f1, mul2);
  const __m256i w = exact ? _mm256_packus_epi32(_mm256_srli_epi32(_mm256_castps_si256(f0), 16),
                                                _mm256_srli_epi32(_mm256_castps_si256(f1), 16))
                          : _mm256_packus_epi32(bf16x8(f0), bf16x8(f1));
  const __m256i p = _mm256_permute4x64_epi64(w, 0xD8);
  store32(out, _mm256_blendv_epi8(p, _mm256_set1_epi16(0x7FFF), nan), nt);
}

/* n codes (a multiple of 16) of one fp8 block with its UE8M0 scale byte.
 * Why scale bytes 4 .. 254 need no rounding: every e4m3 value is a multiple
 * of 2^-9 (e4m3fnuz: 2^-10) with at most 4 significant bits, so its product
 * with 2^(byte-127) is a multiple of 2^(byte-137) >= 2^-133 (bf16's
 * smallest step) with at most 4 significant bits: a bf16 value, or past the
 * range an Inf, whose bf16 is Inf too; byte 255 scales by Inf (0 x Inf is
 * NaN). */
AVX2_INLINE void fp8_block(const uint8_t *codes, int n, uint8_t scale, int fnuz, uint16_t *out, int nt) {
  const float s = ue8m0_decode_ftz(scale), up = fnuz ? 0x1p7f : 0x1p8f;
  const int two = scale > 246; /* s x 2^8 overflows: the exact 2^8 first, then s */
  const int exact = scale >= 4 && scale <= 254;
  const __m256 mul1 = _mm256_set1_ps(two ? up : s * up), mul2 = _mm256_set1_ps(s);
  if (exact)
    for (int i = 0; i < n; i += 16) fp8x16(codes + i, mul1, mul2, two, 1, fnuz, out + i, nt);
  else
    for (int i = 0; i < n; i += 16) fp8x16(codes + i, mul1, mul2, two, 0, fnuz, out + i, nt);
}

/* e2m1 codes in 32-bit lanes -> their values times sv. */
static AVX2 __m256 e2m1x8(__m256i nib, __m256 sv) {
  const __m256 mag = _mm256_setr_ps(0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f);
  const __m256 v = _mm256_permutevar8x32_ps(mag, _mm256_and_si256(nib, _mm256_set1_epi32(7)));
  const __m256i sign = _mm256_slli_epi32(_mm256_and_si256(nib, _mm256_set1_epi32(8)), 28);
  return _mm256_mul_ps(_mm256_castsi256_ps(_mm256_xor_si256(_mm256_castps_si256(v), sign)), sv);
}

/* One NVFP4 block: 8 bytes of e2m1 pairs (low nibble first), e4m3 scale.
 * A scale that is not NaN decodes through fp16 (its magnitude << 7 is the
 * value x 2^-8, exactly), and every product of a code and it is a normal
 * fp32 (or zero) of at most 6 significant bits (2^-10 .. 2688), so its bf16
 * is its high half: no rounding to do. */
static AVX2 void nvfp4_block(const uint8_t *packed, uint8_t scale, uint16_t *out, int nt) {
  const __m128i b = _mm_loadl_epi64((const __m128i *)packed);
  const __m128i dup = _mm_unpacklo_epi8(b, b); /* b0 b0 b1 b1 ... b7 b7 */
  const __m256i shift = _mm256_setr_epi32(0, 4, 0, 4, 0, 4, 0, 4);
  const __m256i n0 = _mm256_srlv_epi32(_mm256_cvtepu8_epi32(dup), shift);
  const __m256i n1 = _mm256_srlv_epi32(_mm256_cvtepu8_epi32(_mm_srli_si128(dup, 8)), shift);
  if ((scale & 0x7F) == 0x7F) { /* a NaN scale byte (a slot never written): the products round as NaN */
    const __m256 sv = _mm256_set1_ps(e4m3_decode(scale));
    store_bf16x16(e2m1x8(n0, sv), e2m1x8(n1, sv), out, nt);
    return;
  }
  const __m256 sv = _mm256_set1_ps(_cvtsh_ss((unsigned short)((scale & 0x7F) << 7 | (scale & 0x80) << 8)) * 256.0f);
  const __m256i h0 = _mm256_srli_epi32(_mm256_castps_si256(e2m1x8(n0, sv)), 16);
  const __m256i h1 = _mm256_srli_epi32(_mm256_castps_si256(e2m1x8(n1, sv)), 16);
  store32(out, _mm256_permute4x64_epi64(_mm256_packus_epi32(h0, h1), 0xD8), nt);
}

/* The bf16 products of the 16 e2m1 codes with two blocks' scale values sa,
 * sb (not NaN; each a normal fp32 x 2^8 or zero): their low bytes in *lo and
 * high bytes in *hi, block a's table in the low 128-bit lane, b's in the
 * high one (vpshufb looks up within a lane).  Each product is exact with at
 * most 6 significant bits, so its bf16 is its high half (nvfp4_block). */
AVX2_INLINE void nvfp4_tables2(float sa, float sb, __m256i *lo, __m256i *hi) {
  const __m256 pos = _mm256_setr_ps(0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f);
  const __m256 neg = _mm256_xor_ps(pos, _mm256_set1_ps(-0.0f));
  const __m256 va = _mm256_set1_ps(sa), vb = _mm256_set1_ps(sb);
  /* packus per lane: [a0-3 a8-11 | a4-7 a12-15] for block a, likewise b */
  const __m256i ta = _mm256_packus_epi32(_mm256_srli_epi32(_mm256_castps_si256(_mm256_mul_ps(pos, va)), 16),
                                         _mm256_srli_epi32(_mm256_castps_si256(_mm256_mul_ps(neg, va)), 16));
  const __m256i tb = _mm256_packus_epi32(_mm256_srli_epi32(_mm256_castps_si256(_mm256_mul_ps(pos, vb)), 16),
                                         _mm256_srli_epi32(_mm256_castps_si256(_mm256_mul_ps(neg, vb)), 16));
  /* each lane's low bytes in its first 8 bytes, high bytes in the last 8 */
  const __m256i split = _mm256_setr_epi8(0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15,
                                         0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15);
  const __m256i sa2 = _mm256_shuffle_epi8(ta, split), sb2 = _mm256_shuffle_epi8(tb, split);
  /* [a lane 0 | b lane 0] and [a lane 1 | b lane 1], then dwords in code order */
  const __m256i x0 = _mm256_permute2x128_si256(sa2, sb2, 0x20), x1 = _mm256_permute2x128_si256(sa2, sb2, 0x31);
  *lo = _mm256_unpacklo_epi32(x0, x1);
  *hi = _mm256_unpackhi_epi32(x0, x1);
}

/* Two NVFP4 blocks whose scales are not NaN: 16 packed bytes, 32 bf16 out. */
AVX2_INLINE void nvfp4_blocks2(const uint8_t *packed, const uint8_t *scale, uint16_t *out, int nt) {
  const float sa = _cvtsh_ss((unsigned short)((scale[0] & 0x7F) << 7 | (scale[0] & 0x80) << 8)) * 256.0f;
  const float sb = _cvtsh_ss((unsigned short)((scale[1] & 0x7F) << 7 | (scale[1] & 0x80) << 8)) * 256.0f;
  __m256i lo, hi;
  nvfp4_tables2(sa, sb, &lo, &hi);
  /* a byte per 16-bit lane, then its low nibble (the even code) in the low byte, the high one above */
  const __m256i b = _mm256_cvtepu8_epi16(_mm_loadu_si128((const __m128i *)packed));
  const __m256i codes = _mm256_or_si256(_mm256_and_si256(b, _mm256_set1_epi16(0x0F)),
                                        _mm256_and_si256(_mm256_slli_epi16(b, 4), _mm256_set1_epi16(0x0F00)));
  const __m256i l = _mm256_shuffle_epi8(lo, codes), h = _mm256_shuffle_epi8(hi, codes);
  const __m256i v0 = _mm256_unpacklo_epi8(l, h), v1 = _mm256_unpackhi_epi8(l, h); /* [a 0-7 | b 0-7], [a 8-15 | b 8-15] */
  store32(out, _mm256_permute2x128_si256(v0, v1, 0x20), nt);
  store32(out + NVFP4_BLOCK, _mm256_permute2x128_si256(v0, v1, 0x31), nt);
}

/* nt: a constant at each call (record_dequant_avx2), so each form is
 * compiled without a test a store. */
AVX2_INLINE void dequant_avx2(dsv4kv_record rec, int fnuz, const uint8_t *values, const uint8_t *scales,
                              uint16_t *out, int nt) {
  switch (rec) {
    case DSV4KV_RECORD_V4:
      for (int s = 0; s < V4_NUM_SCALES; s++)
        fp8_block(values + s * V4_BLOCK, V4_BLOCK, scales[s], fnuz, out + s * V4_BLOCK, nt);
      for (int i = 0; i < ROPE_DIM; i += 16) /* the RoPE dims: raw bf16 */
        store32(out + NOPE_DIM + i, _mm256_loadu_si256((const __m256i *)(values + NOPE_DIM + 2 * i)), nt);
      return;
    case DSV4KV_RECORD_MXFP8:
      for (int s = 0; s < MXFP8_NUM_SCALES; s++)
        fp8_block(values + s * MXFP8_BLOCK, MXFP8_BLOCK, scales[s], fnuz, out + s * MXFP8_BLOCK, nt);
      return;
    case DSV4KV_RECORD_NVFP4:
      for (int s = 0; s < NVFP4_NUM_SCALES; s += 2) {
        if ((scales[s] & 0x7F) == 0x7F || (scales[s + 1] & 0x7F) == 0x7F) { /* a NaN scale: one at a time */
          nvfp4_block(values + s * NVFP4_BLOCK / 2, scales[s], out + s * NVFP4_BLOCK, nt);
          nvfp4_block(values + (s + 1) * NVFP4_BLOCK / 2, scales[s + 1], out + (s + 1) * NVFP4_BLOCK, nt);
        } else {
          nvfp4_blocks2(values + s * NVFP4_BLOCK / 2, scales + s, out + s * NVFP4_BLOCK, nt);
        }
      }
      return;
    case DSV4KV_RECORD_INDEXER_FP8:
    case DSV4KV_RECORD_INDEXER_MXFP4:
      return;
  }
}

/* F16C from CPUID leaf 1 (ECX bit 29): clang's __builtin_cpu_supports does
 * not take "f16c" (clang 14 stops the build), gcc's does.  The OS's saving
 * of the YMM registers, which F16C's 256-bit forms need, is what the AVX2 /
 * AVX-512 tests beside it check. */
int cpu_has_f16c(void) {
  unsigned int a, b, c, d;
  return __get_cpuid(1, &a, &b, &c, &d) && (c & bit_F16C) != 0;
}

int cpu_avx2_supported(void) {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2") && cpu_has_f16c() && __builtin_cpu_supports("fma");
}

AVX2 void record_dequant_avx2(dsv4kv_record rec, int fnuz, const uint8_t *values, const uint8_t *scales, uint16_t *out,
                              int nt) {
  if (nt)
    dequant_avx2(rec, fnuz, values, scales, out, 1);
  else
    dequant_avx2(rec, fnuz, values, scales, out, 0);
}

#else /* not x86-64 with GCC-style target attributes: no such path */

int cpu_has_f16c(void) { return 0; }
int cpu_avx2_supported(void) { return 0; }
void record_dequant_avx2(dsv4kv_record rec, int fnuz, const uint8_t *values, const uint8_t *scales, uint16_t *out,
                         int nt) {
  (void)rec, (void)fnuz, (void)values, (void)scales, (void)out, (void)nt;
}

#endif
