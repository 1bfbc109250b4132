/* e2m1_encode(x / sv) without the division, for the NVFP4 quantizer's block
 * scales sv: the positive e4m3 values in [2^-9, 448] (NUMERICS §2.3).
 *
 * The reference divides every value by its block scale (IEEE fp32) and
 * encodes the quotient.  The encoder only compares the quotient q with the
 * seven midpoints m of the e2m1 grid, and q <= m exactly when |x| <= m * sv:
 * m * sv is exact in fp32 (m has 3 significant bits, sv 4), and when |x| /
 * sv differs from m it differs by far more than half an fp32 ulp (|x| is a
 * bf16 of 8 bits, so |x| - m * sv is a multiple of a unit no smaller than
 * 2^-9 of either), so the rounding of the quotient never crosses or lands on
 * m.  Underflow and overflow of the quotient keep the sign and the side of
 * every midpoint.  Shown equal to e2m1_encode(x / sv) for every bf16 x and
 * every such sv (tests/paths/exhaustive_e2m1_div.c); the CUDA NVFP4 insert
 * uses it (a division is some ten instructions, a compare one). */
#ifndef DSV4KV_E2M1_DIV_H
#define DSV4KV_E2M1_DIV_H

#include "formats/numfmt.h"

/* The grid's midpoints times sv, in the encoder's order. */
typedef struct {
  float m[7];
} e2m1_bounds;

static DSV4KV_HD e2m1_bounds e2m1_bounds_of(float sv) {
  e2m1_bounds b;
  b.m[0] = 0.25f * sv, b.m[1] = 0.75f * sv, b.m[2] = 1.25f * sv, b.m[3] = 1.75f * sv;
  b.m[4] = 2.5f * sv, b.m[5] = 3.5f * sv, b.m[6] = 5.0f * sv;
  return b;
}

/* e2m1_encode(x / sv) for the sv of `b` (ties: <= at even codes' upper
 * midpoints, < at odd codes', as e2m1_encode). */
static DSV4KV_HD uint8_t e2m1_encode_div(float x, const e2m1_bounds *b) {
  if (isnan(x)) return 0x7;
  const uint8_t s = (f32_bits(x) >> 28) & 0x8;
  const float a = fabsf(x);
  const int c = (a > b->m[0]) + (a >= b->m[1]) + (a > b->m[2]) + (a >= b->m[3]) + (a > b->m[4]) + (a >= b->m[5]) +
                (a > b->m[6]);
  return (uint8_t)(s | c);
}

#endif
