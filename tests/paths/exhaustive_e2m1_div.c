/*
 * exhaustive_e2m1_div.c - formats/e2m1_div.h against the reference's
 * division: e2m1_encode_div(x, bounds(sv)) == e2m1_encode(x / sv) for all
 * 65536 bf16 x and every NVFP4 block scale sv the quantizer can choose (the
 * e4m3 codes 0x01 .. 0x7E, i.e. [2^-9, 448]).  Then the two-values-a-word
 * form (e2m1x2_encode_bf16x2, the CUDA NVFP4 insert's) against it: every
 * non-NaN bf16 in the low half, and in the high half beside a different one,
 * for each scale, with the bounds' bf16 halves checked exact; and again
 * for the power-of-two scales of the indexer's MXFP4 blocks against
 * e2m1_encode(x * 2^-l).  Exit 0 when all agree.
 */
#include <stdio.h>

#include "formats/e2m1_div.h"

int main(void) {
  long bad = 0, n = 0;
  for (int code = 0x01; code <= 0x7E; code++) {
    const float sv = e4m3_decode((uint8_t)code);
    const e2m1_bounds b = e2m1_bounds_of(sv);
    for (uint32_t u = 0; u < 65536; u++, n++) {
      const float x = bf16_to_f32((uint16_t)u);
      const uint8_t want = e2m1_encode(x / sv), got = e2m1_encode_div(x, &b);
      if (got != want && bad++ < 10)
        printf("bf16 0x%04x / e4m3 0x%02x: got 0x%x, want 0x%x\n", (unsigned)u, code, got, want);
    }
  }
  printf("e2m1_encode_div: %ld of %ld pairs differ from e2m1_encode(x / sv)\n", bad, n);
  long bad2 = 0, n2 = 0;
  for (int code = 0x01; code <= 0x7E; code++) {
    const float sv = e4m3_decode((uint8_t)code);
    const e2m1_bounds b = e2m1_bounds_of(sv);
    const e2m1_bounds_bf16x2 b2 = e2m1_bounds_bf16x2_of(sv);
    for (int i = 0; i < 7; i++)
      if ((f32_bits(b.m[i]) & 0xFFFF) && bad2++ < 10) printf("e4m3 0x%02x: bound %d not a bf16\n", code, i);
    for (uint32_t u = 0; u < 65536; u++) {
      const uint32_t v = (u * 40503u + 0x1234u) & 0xFFFFu; /* a bijection: every value meets a neighbour */
      if ((u & 0x7FFF) > 0x7F80 || (v & 0x7FFF) > 0x7F80) continue;
      n2++;
      const uint32_t want = e2m1_encode_div(bf16_to_f32((uint16_t)u), &b) |
                            (uint32_t)e2m1_encode_div(bf16_to_f32((uint16_t)v), &b) << 4;
      const uint32_t got = e2m1x2_encode_bf16x2(u | v << 16, &b2);
      if (got != want && bad2++ < 10)
        printf("bf16 pair 0x%04x 0x%04x / e4m3 0x%02x: got 0x%02x, want 0x%02x\n", (unsigned)u, (unsigned)v, code,
               (unsigned)got, (unsigned)want);
    }
  }
  printf("e2m1x2_encode_bf16x2: %ld of %ld pairs differ from e2m1_encode_div\n", bad2, n2);
  long bad3 = 0, n3 = 0; /* the indexer's MXFP4 scales 2^l: the reference multiplies by 2^-l */
  for (int l = E2M1_PAIRS_POW2_MIN; l <= E2M1_PAIRS_POW2_MAX; l++) {
    const float inv = pow2f(-l);
    const e2m1_bounds_bf16x2 b2 = e2m1_bounds_bf16x2_of(pow2f(l));
    for (uint32_t u = 0; u < 65536; u++) {
      const uint32_t v = (u * 40503u + 0x1234u) & 0xFFFFu;
      if ((u & 0x7FFF) > 0x7F80 || (v & 0x7FFF) > 0x7F80) continue;
      n3++;
      const uint32_t want = e2m1_encode(bf16_to_f32((uint16_t)u) * inv) |
                            (uint32_t)e2m1_encode(bf16_to_f32((uint16_t)v) * inv) << 4;
      const uint32_t got = e2m1x2_encode_bf16x2(u | v << 16, &b2);
      if (got != want && bad3++ < 10)
        printf("bf16 pair 0x%04x 0x%04x x 2^%d: got 0x%02x, want 0x%02x\n", (unsigned)u, (unsigned)v, -l,
               (unsigned)got, (unsigned)want);
    }
  }
  printf("e2m1x2_encode_bf16x2, scales 2^%d .. 2^%d: %ld of %ld pairs differ from e2m1_encode(x * 2^-l)\n",
         E2M1_PAIRS_POW2_MIN, E2M1_PAIRS_POW2_MAX, bad3, n3);
  return bad != 0 || bad2 != 0 || bad3 != 0;
}
