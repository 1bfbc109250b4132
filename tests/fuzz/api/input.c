/*
 * The harness's input decoding: the values it draws from the random source
 * (fuzz.h: a libFuzzer byte stream or splitmix64) for index tensors, bf16 /
 * f32 data, bytes and bools.
 */
#include "fuzz.h"

/* Index values: mostly in [lo, hi], sometimes extremes. */
int64_t fz_gidx(Src *g, int64_t lo, int64_t hi) {
  static const int64_t ext[] = {-1, -2, 0, 1, INT32_MIN, INT32_MAX, INT32_MIN + 1, INT32_MAX - 1,
                                INT64_MIN, INT64_MAX, (int64_t)1 << 31, (int64_t)1 << 32, -((int64_t)1 << 31) - 1,
                                (int64_t)1 << 62, 0x7FFFFFFF00000000ll, 0x00000000FFFFFFFFll, 1 << 16, 1 << 24};
  int c = (int)ru(g, 100);
  if (c < 8) return ext[ru(g, sizeof ext / sizeof ext[0])];
  if (c < 12) return (int64_t)ru(g, UINT64_MAX);
  if (hi < lo) return lo;
  return rr(g, lo, hi);
}
int64_t fz_gen_range(Src *g, void *ctx, int64_t lin) {
  struct range *r = ctx;
  if (r->small_set && pct(g, 50)) return r->set[ru(g, 4)];
  return fz_gidx(g, r->lo, r->hi);
}
int64_t fz_gen_bf16(Src *g, void *ctx, int64_t lin) {
  int c = (int)ru(g, 100);
  static const uint16_t sp[] = {0x7F80, 0xFF80, 0x7FC0, 0xFFC1, 0x7F81, 0x0000, 0x8000, 0x0001, 0x8001,
                                0x7F7F, 0xFF7F, 0x0080, 0x3F80, 0x43E0, 0x4370, 0x3800};
  if (c < 6) return sp[ru(g, 16)];
  if (c < 40) return (int64_t)ru(g, 65536);
  /* a normal-ish number in [-8, 8] */
  float f = (float)((double)ru(g, 2000000) / 125000.0 - 8.0);
  uint32_t u;
  memcpy(&u, &f, 4);
  return u >> 16;
}
int64_t fz_gen_f32(Src *g, void *ctx, int64_t lin) {
  int c = (int)ru(g, 100);
  static const uint32_t sp[] = {0x7F800000, 0xFF800000, 0x7FC00000, 0x7F800001, 0, 0x80000000, 1, 0x7F7FFFFF};
  if (c < 5) return sp[ru(g, 8)];
  if (c < 15) return (int64_t)ru(g, 1ull << 32);
  float f = (float)((double)ru(g, 2000000) / 1000000.0 - 1.0);
  uint32_t u;
  memcpy(&u, &f, 4);
  return u;
}
int64_t fz_gen_bytes(Src *g, void *ctx, int64_t lin) { return (int64_t)ru(g, 256); }
int64_t fz_gen_bool(Src *g, void *ctx, int64_t lin) {
  int c = (int)ru(g, 10);
  return c < 4 ? 0 : c < 8 ? 1 : (int64_t)ru(g, 256);
}
