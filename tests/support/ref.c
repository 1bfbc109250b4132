/*
 * Independent scalar reference of SPEC.md / NUMERICS.md, written for the tests.
 * Number formats are decoded from their bit fields; encoders are brute force
 * over every finite code with exact comparisons in double.  Record quantizers
 * follow the "exact rule" formulations of NUMERICS §2 (e = smallest integer
 * with amax <= fp8_max * 2^e, found by exact comparison, not by log2).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "support.h"

/* ------------------------------------------------------------ decoders */
double ref_e4m3_value(uint8_t code) {
  int s = code >> 7, E = (code >> 3) & 15, M = code & 7;
  if (E == 15 && M == 7) return NAN;
  double v = (E == 0) ? ldexp((double)M, -9) : ldexp((double)(8 + M), E - 10);
  return s ? -v : v;
}

double ref_e4m3fnuz_value(uint8_t code) {
  if (code == 0x80) return NAN;
  int s = code >> 7, E = (code >> 3) & 15, M = code & 7;
  double v = (E == 0) ? ldexp((double)M, -10) : ldexp((double)(8 + M), E - 11);
  return s ? -v : v;
}

double ref_e2m1_value(uint8_t code) {
  int s = (code >> 3) & 1, E = (code >> 1) & 3, M = code & 1;
  double v = (E == 0) ? 0.5 * M : ldexp(1.0 + 0.5 * M, E - 1);
  return s ? -v : v;
}

double ref_ue8m0_value(uint8_t e) {
  if (e == 255) return INFINITY;
  return ldexp(1.0, (int)e - 127);
}

/* ------------------------------------------------------------ encoders */
/* Nearest among magnitude codes [0, ncodes) given by val(); ties -> even code. */
static int nearest_code(double ax, double (*val)(uint8_t), int ncodes) {
  /* at or above the largest finite magnitude: saturate (also keeps huge |x|
   * away from inexact differences in double) */
  if (ax >= val((uint8_t)(ncodes - 1))) return ncodes - 1;
  int best = 0;
  double bestd = fabs(ax - val(0));
  for (int c = 1; c < ncodes; c++) {
    double d = fabs(ax - val((uint8_t)c));
    if (d < bestd || (d == bestd && (c & 1) == 0)) {
      best = c;
      bestd = d;
    }
  }
  return best;
}

uint8_t ref_e4m3_encode(double x) {
  if (isnan(x)) return 0x7F;
  int neg = signbit(x) != 0;
  int c = isinf(x) ? 0x7E : nearest_code(fabs(x), ref_e4m3_value, 0x7F);
  return (uint8_t)(c | (neg ? 0x80 : 0));
}

uint8_t ref_e4m3fnuz_encode(double x) {
  if (isnan(x)) return 0x80;
  int neg = signbit(x) != 0;
  int c = isinf(x) ? 0x7F : nearest_code(fabs(x), ref_e4m3fnuz_value, 0x80);
  if (c == 0) return 0x00;
  return (uint8_t)(c | (neg ? 0x80 : 0));
}

uint8_t ref_e2m1_encode(double x) {
  if (isnan(x)) return 0x7;
  int neg = signbit(x) != 0;
  int c = isinf(x) ? 7 : nearest_code(fabs(x), ref_e2m1_value, 8);
  return (uint8_t)(c | (neg ? 8 : 0));
}

/* ------------------------------------------------------------ quantizers */
static float amax_floor_1e4(void) { return f32_from_bits(0x38D1B717u); }

/* NaN-ignoring max |x|; returns -1 when every element is NaN. */
static float nan_ignoring_amax(const float *x, int n) {
  float m = -1.0f;
  for (int i = 0; i < n; i++) {
    if (isnan(x[i])) continue;
    float a = fabsf(x[i]);
    if (a > m) m = a;
  }
  return m;
}

/* smallest integer e with a <= lim * 2^e (a finite, > 0) */
static int smallest_exp(double a, double lim) {
  int e = -300;
  while (a > lim * ldexp(1.0, e)) e++;
  return e;
}

/* MX-style fp8 block (V4 64 dims, MXFP8 32 dims): codes + UE8M0 byte. */
static void quant_fp8_block(const float *x, int n, int fnuz, uint8_t *codes, uint8_t *scale) {
  double fmax = fnuz ? 224.0 : 448.0; /* FNUZ quantizes against 224 (NUMERICS §10) */
  float amax = nan_ignoring_amax(x, n);
  float fl = amax_floor_1e4();
  if (!(amax >= fl)) amax = fl; /* floor; all-NaN -> floor */
  if (isinf(amax)) {
    *scale = 255;
    for (int i = 0; i < n; i++) {
      double y = x[i] * 0.0; /* x * 2^-Inf: +-0, Inf * 0 = NaN */
      if (isnan(y)) y = fmax;
      codes[i] = fnuz ? ref_e4m3fnuz_encode(y) : ref_e4m3_encode(y);
    }
    return;
  }
  int e = smallest_exp((double)amax, fmax);
  int b = e + 127;
  *scale = (uint8_t)(b < 0 ? 0 : b > 255 ? 255 : b);
  for (int i = 0; i < n; i++) {
    double y;
    if (isnan(x[i]))
      y = fmax;
    else {
      y = ldexp((double)x[i], -e);
      if (y > fmax) y = fmax;
      if (y < -fmax) y = -fmax;
    }
    codes[i] = fnuz ? ref_e4m3fnuz_encode(y) : ref_e4m3_encode(y);
  }
}

static void quant_nvfp4_block(const float *x, uint8_t *nib, uint8_t *scale) {
  float amax = nan_ignoring_amax(x, 16);
  double t;
  if (amax < 0)
    t = ldexp(1.0, -9); /* all NaN: NaN clamps to the lower bound */
  else {
    t = (double)amax / 6.0;
    if (t < ldexp(1.0, -9)) t = ldexp(1.0, -9);
    if (t > 448.0) t = 448.0;
  }
  uint8_t sb = ref_e4m3_encode(t);
  float s = (float)ref_e4m3_value(sb);
  *scale = sb;
  for (int i = 0; i < 16; i++) {
    float y = x[i] / s;
    nib[i] = ref_e2m1_encode((double)y);
  }
}

static void put_u16le(uint8_t *p, uint16_t v) {
  p[0] = (uint8_t)(v & 0xFF);
  p[1] = (uint8_t)(v >> 8);
}

void ref_insert_token(dsv4kv_record rec, int fnuz, const uint16_t *k, uint8_t *page,
                      int32_t block_size, int32_t p) {
  float x[512];
  for (int d = 0; d < 512; d++) x[d] = bf16_val(k[d]);
  if (rec == DSV4KV_RECORD_V4) {
    uint8_t *data = page + (int64_t)p * 576;
    uint8_t *sc = page + (int64_t)block_size * 576 + (int64_t)p * 8;
    for (int s = 0; s < 7; s++) quant_fp8_block(x + 64 * s, 64, fnuz, data + 64 * s, sc + s);
    sc[7] = 0;
    for (int d = 448; d < 512; d++) put_u16le(data + 448 + 2 * (d - 448), k[d]);
  } else if (rec == DSV4KV_RECORD_MXFP8) {
    uint8_t *r = page + (int64_t)p * 528;
    for (int s = 0; s < 16; s++) quant_fp8_block(x + 32 * s, 32, fnuz, r + 32 * s, r + 512 + s);
  } else if (rec == DSV4KV_RECORD_NVFP4) {
    uint8_t *r = page + (int64_t)p * 288;
    uint8_t nib[512];
    for (int s = 0; s < 32; s++) quant_nvfp4_block(x + 16 * s, nib + 16 * s, r + 256 + s);
    for (int b = 0; b < 256; b++) r[b] = (uint8_t)((nib[2 * b] & 15) | ((nib[2 * b + 1] & 15) << 4));
  } else {
    fail_msg("ref_insert_token: bad record %d", (int)rec);
  }
}

/* ------------------------------------------------------------ decode */
static uint16_t to_bf16_prod(double v, double f) {
  double prod = v * f; /* exact in double for these operands */
  return ref_f32_to_bf16((float)prod);
}

static double gather_scale(uint8_t b) {
  if (b == 0) return 0.0; /* exp2(-127) flushed (NUMERICS §3) */
  return ref_ue8m0_value(b);
}

void ref_decode_token(dsv4kv_record rec, int fnuz, const uint8_t *page, int32_t block_size,
                      int32_t p, uint16_t *out) {
  double (*dec)(uint8_t) = fnuz ? ref_e4m3fnuz_value : ref_e4m3_value;
  if (rec == DSV4KV_RECORD_V4) {
    const uint8_t *data = page + (int64_t)p * 576;
    const uint8_t *sc = page + (int64_t)block_size * 576 + (int64_t)p * 8;
    for (int d = 0; d < 448; d++) out[d] = to_bf16_prod(dec(data[d]), gather_scale(sc[d / 64]));
    for (int d = 448; d < 512; d++) {
      const uint8_t *q = data + 448 + 2 * (d - 448);
      out[d] = (uint16_t)(q[0] | (q[1] << 8));
    }
  } else if (rec == DSV4KV_RECORD_MXFP8) {
    const uint8_t *r = page + (int64_t)p * 528;
    for (int d = 0; d < 512; d++) out[d] = to_bf16_prod(dec(r[d]), gather_scale(r[512 + d / 32]));
  } else if (rec == DSV4KV_RECORD_NVFP4) {
    const uint8_t *r = page + (int64_t)p * 288;
    for (int d = 0; d < 512; d++) {
      uint8_t byte = r[d / 2];
      uint8_t nib = (d & 1) ? (uint8_t)(byte >> 4) : (uint8_t)(byte & 15);
      out[d] = to_bf16_prod(ref_e2m1_value(nib), ref_e4m3_value(r[256 + d / 16]));
    }
  } else {
    fail_msg("ref_decode_token: bad record %d", (int)rec);
  }
}

void ref_token_mask(dsv4kv_record rec, uint8_t *m, int32_t block_size, int32_t p) {
  int64_t bs = block_size;
  switch (rec) {
    case DSV4KV_RECORD_V4:
      memset(m + p * 576, 1, 576);
      memset(m + bs * 576 + p * 8, 1, 8);
      break;
    case DSV4KV_RECORD_MXFP8:
      memset(m + p * 528, 1, 528);
      break;
    case DSV4KV_RECORD_NVFP4:
      memset(m + p * 288, 1, 288);
      break;
    case DSV4KV_RECORD_INDEXER_FP8:
      memset(m + p * 128, 1, 128); /* non-tiled; tiled callers mark themselves */
      memset(m + bs * 128 + p * 4, 1, 4);
      break;
    case DSV4KV_RECORD_INDEXER_MXFP4:
      memset(m + p * 64, 1, 64);
      memset(m + bs * 64 + p * 4, 1, 4);
      break;
  }
}

/* ------------------------------------------------------------ indexer */
void ref_indexer_row(const uint16_t *k, const float *w, const float *cs, float eps,
                     uint16_t *out) {
  float x[128];
  for (int i = 0; i < 128; i++) x[i] = bf16_val(k[i]);
  /* Triton lane order: lane t holds 4t..4t+3 */
  float lane[32];
  for (int t = 0; t < 32; t++) {
    float v = fmaf(x[4 * t], x[4 * t], x[4 * t + 1] * x[4 * t + 1]);
    v = fmaf(x[4 * t + 2], x[4 * t + 2], v);
    v = fmaf(x[4 * t + 3], x[4 * t + 3], v);
    lane[t] = v;
  }
  for (int m = 16; m >= 1; m >>= 1) {
    float nv[32];
    for (int t = 0; t < 32; t++) nv[t] = lane[t] + lane[t ^ m];
    memcpy(lane, nv, sizeof(nv));
  }
  float variance = lane[0] / 128.0f;
  float v = variance + eps;
  float rstd = (float)(1.0 / sqrt((double)v));
  float kn[128];
  for (int i = 0; i < 128; i++) {
    float a = x[i] * rstd;
    float b = a * w[i];
    kn[i] = bf16_val(ref_f32_to_bf16(b));
  }
  /* Every pair goes through the rotation; pairs 0..31 (dims 0..63) with
   * cos = 1, sin = 0 (the reference's masked loads), which is the identity
   * except for signed-zero / NaN arithmetic (NUMERICS §2.4 step 4). */
  for (int pi = 0; pi < 64; pi++) {
    int j = pi - 32;
    float c = pi < 32 ? 1.0f : cs[j], s = pi < 32 ? 0.0f : cs[32 + j];
    float e = kn[2 * pi], o = kn[2 * pi + 1];
    float ne = fmaf(e, c, -(o * s));
    float no = fmaf(o, c, e * s);
    out[2 * pi] = ref_f32_to_bf16(ne);
    out[2 * pi + 1] = ref_f32_to_bf16(no);
  }
}

void ref_indexer_token(const uint16_t *k, const float *w, const float *cs, float eps, int fp4,
                       int mx_scale, int tiled, uint8_t *page, int32_t block_size, int32_t p) {
  uint32_t flags = (mx_scale ? DSV4KV_CACHE_MX_SCALE : 0u) | (tiled ? DSV4KV_CACHE_TILED : 0u);
  ref_indexer_store(k, w, cs, eps, fp4 ? DSV4KV_RECORD_INDEXER_MXFP4 : DSV4KV_RECORD_INDEXER_FP8, 0, flags,
                    page, block_size, p);
}

/* One FP8 block of 128 (SPEC §6 step 3): codes and exponent e; an Inf amax
 * gives e = 128 (scale +Inf, byte 255) and codes of x * 0 (NaN -> +max), as
 * the main-cache quantizer (NUMERICS §5). */
static int indexer_fp8_codes(const float *r, int fnuz, uint8_t *codes) {
  double fmax = fnuz ? 224.0 : 448.0;
  float amax = nan_ignoring_amax(r, 128);
  float fl = amax_floor_1e4();
  if (!(amax >= fl)) amax = fl;
  int inf = isinf(amax) != 0;
  int e = inf ? 128 : smallest_exp((double)amax, fmax);
  for (int d = 0; d < 128; d++) {
    double y = inf ? r[d] * 0.0 : ldexp((double)r[d], -e);
    if (isnan(y)) y = fmax;
    if (y > fmax) y = fmax;
    if (y < -fmax) y = -fmax;
    codes[d] = fnuz ? ref_e4m3fnuz_encode(y) : ref_e4m3_encode(y);
  }
  return e;
}

void ref_indexer_store(const uint16_t *k, const float *w, const float *cs, float eps, dsv4kv_record rec,
                       int fnuz, uint32_t flags, uint8_t *page, int32_t block_size, int32_t p) {
  uint16_t r16[128];
  float r[128];
  ref_indexer_row(k, w, cs, eps, r16);
  for (int i = 0; i < 128; i++) r[i] = bf16_val(r16[i]);
  int64_t bs = block_size;
  int fp4 = rec == DSV4KV_RECORD_INDEXER_MXFP4, tiled = (flags & DSV4KV_CACHE_TILED) != 0;
  if (!fp4) {
    uint8_t codes[128];
    int e = indexer_fp8_codes(r, fnuz, codes);
    for (int d = 0; d < 128; d++) {
      int64_t off = tiled ? (int64_t)(p / 16) * 16 * 128 + (d / 16) * 256 + (p % 16) * 16 + d % 16
                          : (int64_t)p * 128 + d;
      page[off] = codes[d];
    }
    uint8_t *sc = page + bs * 128 + (int64_t)p * 4;
    if (flags & DSV4KV_CACHE_MX_SCALE) {
      int b = e + 127;
      uint8_t u = (uint8_t)(b < 0 ? 0 : b > 255 ? 255 : b);
      sc[0] = sc[1] = sc[2] = sc[3] = u;
    } else {
      float f = ldexpf(1.0f, e);
      uint32_t u = f32_bits(f);
      sc[0] = (uint8_t)u;
      sc[1] = (uint8_t)(u >> 8);
      sc[2] = (uint8_t)(u >> 16);
      sc[3] = (uint8_t)(u >> 24);
    }
  } else {
    uint8_t *vals = page + (int64_t)p * 64;
    uint8_t *sc = page + bs * 64 + (int64_t)p * 4;
    for (int j = 0; j < 4; j++) {
      const float *x = r + 32 * j;
      float amax = nan_ignoring_amax(x, 32);
      float fl = 6.0f * ldexpf(1.0f, -126);
      if (!(amax >= fl)) amax = fl;
      int l = isinf(amax) ? 127 : smallest_exp((double)amax, 6.0);
      if (l < -127) l = -127;
      if (l > 127) l = 127;
      float inv = (l >= 127) ? 0.0f : ldexpf(1.0f, -l); /* exp2 ftz */
      uint8_t codes[32];
      for (int i = 0; i < 32; i++) codes[i] = ref_e2m1_encode((double)(x[i] * inv));
      for (int b = 0; b < 16; b++)
        vals[16 * j + b] = (uint8_t)((codes[2 * b] & 15) | ((codes[2 * b + 1] & 15) << 4));
      sc[j] = (uint8_t)(l + 127);
    }
  }
}
