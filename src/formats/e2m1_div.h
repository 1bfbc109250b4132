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
 * every such sv (tests/paths/exhaustive_e2m1_div.c).  The CUDA NVFP4 insert
 * compares two values at a time (e2m1x2_encode_bf16x2 below; a division is
 * some ten instructions, a compare one). */
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

/* The same midpoints as bf16 pairs, m * sv in both halves: exact, as m * sv
 * has at most 7 significant bits (3 of m times 4 of sv) and lies in
 * [2^-11, 2240], so its fp32 high half is its value. */
typedef struct {
  uint32_t m[7];
} e2m1_bounds_bf16x2;

static DSV4KV_HD e2m1_bounds_bf16x2 e2m1_bounds_bf16x2_of(float sv) {
  const e2m1_bounds b = e2m1_bounds_of(sv);
  e2m1_bounds_bf16x2 r;
  for (int i = 0; i < 7; i++) {
#ifdef __CUDA_ARCH__
    r.m[i] = __byte_perm(f32_bits(b.m[i]), 0, 0x3232);
#else
    const uint32_t h = f32_bits(b.m[i]) >> 16;
    r.m[i] = h | h << 16;
#endif
  }
  return r;
}

/* The power-of-two scales 2^l (the indexer's MXFP4 blocks) for which
 * e2m1x2_encode_bf16x2 with the bounds of sv = 2^l equals e2m1_encode(x *
 * 2^-l) (tests/paths/exhaustive_e2m1_div.c): every midpoint times 2^l a
 * normal bf16 (subnormal inputs then compare below every bound, flushed or
 * not), none overflowing. */
#define E2M1_PAIRS_POW2_MIN (-100)
#define E2M1_PAIRS_POW2_MAX 125

/* a > b (ge: a >= b) in each 16-bit half of two bf16 pairs, as 0xFFFF or 0;
 * a's halves are magnitudes (no NaN), b's positive.  The GPU compares both
 * halves in one instruction; on the host, the bits of non-negative bf16
 * values order as their values. */
static DSV4KV_HD uint32_t bf16x2_cmp_mask(uint32_t a, uint32_t b, int ge) {
#ifdef __CUDA_ARCH__
  uint32_t r;
  if (ge)
    asm("set.ge.u32.bf16x2 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(b));
  else
    asm("set.gt.u32.bf16x2 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(b));
  return r;
#else
  uint32_t r = 0;
  for (int k = 0; k < 32; k += 16) {
    const uint32_t x = (a >> k) & 0xFFFFu, y = (b >> k) & 0xFFFFu;
    if (ge ? x >= y : x > y) r |= 0xFFFFu << k;
  }
  return r;
#endif
}

/* e2m1_encode_div of both bf16 values of w (low half first) as one byte,
 * the low half's code in the low nibble; neither value may be NaN (the
 * caller's branch: NaN encodes as 0x7 whatever its sign).  The code c is
 * the number of midpoints a value passes; a binary search finds its bits
 * in three paired compares, each half choosing its next midpoint by the
 * masks so far: c >= 4 (m3), then c & 2 (m5 or m1), then c & 1 (m6, m4,
 * m2 or m0).  Odd midpoints tie up (>=), even ones down (>). */
static DSV4KV_HD uint32_t e2m1x2_encode_bf16x2(uint32_t w, const e2m1_bounds_bf16x2 *b) {
  const uint32_t a = w & 0x7FFF7FFFu;
  const uint32_t c2 = bf16x2_cmp_mask(a, b->m[3], 1);
  const uint32_t c1 = bf16x2_cmp_mask(a, (c2 & b->m[5]) | (~c2 & b->m[1]), 1);
  const uint32_t hi = (c2 & b->m[6]) | (~c2 & b->m[2]), lo = (c2 & b->m[4]) | (~c2 & b->m[0]);
  const uint32_t c0 = bf16x2_cmp_mask(a, (c1 & hi) | (~c1 & lo), 0);
  const uint32_t nib = (c0 & 0x00010001u) | (c1 & 0x00020002u) | (c2 & 0x00040004u) | (w >> 12 & 0x00080008u);
  return (nib | nib >> 12) & 0xFFu;
}

#endif
