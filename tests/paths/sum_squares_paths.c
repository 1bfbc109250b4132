/* The SIMD paths' sum of squares of an indexer row (src/cpu/indexer_avx2.c,
 * indexer_avx512.c) against formats/ref.h's indexer_sum_squares_ref, bit for
 * bit, on random rows: the sums' order is the reference's 32 partials and
 * xor butterfly, and any other order differs in the last bits of most rows
 * (the case registry sees that only through rstd, where one ulp rarely
 * changes a stored byte).  Rows of bf16 values with exponents spread over
 * 2^-20 .. 2^20, some with zeros and subnormals; 77 where no SIMD path runs.
 * Also the SIMD paths' rstd (rsqrt_rounded_fast) against the reference's
 * double square root and division: every fp32 in [1, 4) (both exponent
 * parities of every significand, where rsqrtss's table repeats), 4096
 * random significands at every exponent, and the specials. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "cpu/cpu.h"
#include "cpu/indexer_scales.h"
#include "formats/ref.h"

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static uint32_t next(void) {
  rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
  return (uint32_t)(rng >> 32);
}

/* A finite bf16 value: sign, an exponent near 127 +- spread, 7 random mantissa bits (or 0 / a subnormal). */
static uint16_t value(int spread) {
  const uint32_t r = next();
  if (r % 64 == 0) return (uint16_t)(r & 0x807F); /* zero or a subnormal */
  const int e = 127 + (int)(r >> 8) % (2 * spread + 1) - spread;
  return (uint16_t)((r >> 31) << 15 | (uint32_t)e << 7 | (r & 0x7F));
}

static long rstd_differs(float x) {
  return f32_bits(rsqrt_rounded_fast(x)) != f32_bits((float)(1.0 / sqrt((double)x)));
}

/* The count of x where rsqrt_rounded_fast differs from the reference. */
static long check_rstd(long *tried) {
  long bad = 0, n = 0;
  for (uint32_t b = f32_bits(1.0f); b < f32_bits(4.0f); b++, n++) bad += rstd_differs(f32_from_bits(b));
  for (uint32_t e = 0; e < 256; e++)
    for (int i = 0; i < 4096; i++, n++) bad += rstd_differs(f32_from_bits(e << 23 | (next() & 0x7FFFFFu)));
  static const uint32_t specials[] = {0, 0x80000000u, 1, 0x7FFFFFu, 0x800000u, 0x7F7FFFFFu, 0x7F800000u, 0x7FC00000u,
                                      0xFFC00000u, 0xBF800000u};
  for (size_t i = 0; i < sizeof specials / sizeof specials[0]; i++, n++) bad += rstd_differs(f32_from_bits(specials[i]));
  *tried = n;
  return bad;
}

int main(void) {
  long tried, rbad = check_rstd(&tried);
  printf("rstd, %ld fp32 values: %s (%ld differ)\n", tried, rbad ? "DIFFERS" : "identical to the reference", rbad);
  if (rbad) return 1;
  __builtin_cpu_init();
  const int avx512 = cpu_avx512_supported(), avx2 = cpu_avx2_supported();
  if (!avx512 && !avx2) {
    printf("sum_squares_paths: no SIMD path on this processor: skipped\n");
    return 77;
  }
  long bad512 = 0, bad2 = 0, rows = 200000;
  uint16_t k[INDEXER_DIM];
  float x[INDEXER_DIM];
  for (long n = 0; n < rows; n++) {
    const int spread = (int)(n % 21);
    for (int d = 0; d < INDEXER_DIM; d++) k[d] = value(spread), x[d] = bf16_to_f32(k[d]);
    const uint32_t want = f32_bits(indexer_sum_squares_ref(x));
    if (avx512) bad512 += f32_bits(indexer_sum_squares_avx512(k)) != want;
    if (avx2) bad2 += f32_bits(indexer_sum_squares_avx2(k)) != want;
  }
  printf("sum of squares, %ld rows: avx512 %s (%ld differ), avx2 %s (%ld differ)\n", rows,
         avx512 ? (bad512 ? "DIFFERS" : "identical") : "not run", bad512, avx2 ? (bad2 ? "DIFFERS" : "identical") : "not run",
         bad2);
  return bad512 || bad2;
}
