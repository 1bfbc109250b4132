/* Value generators of the registry: K rows that stress each quantizer
 * (specials, subnormals, ties, power-of-two amax, zero blocks), caches holding
 * every code, and slot lists. */
#include <math.h>
#include <stdlib.h>

#include "ops.h"

const char *const ops_row_kind_names[ROW_KINDS] = {"normal", "special", "subnormal", "ties",
                                                    "pow2",   "zero",    "huge"};

int64_t ops_rr(rng_t *r, int64_t lo, int64_t hi) {
  return lo + (int64_t)(rng_u64(r) % (uint64_t)(hi - lo + 1));
}

static int quant_block(dsv4kv_record rec) {
  switch (rec) {
    case DSV4KV_RECORD_V4: return 64;
    case DSV4KV_RECORD_MXFP8: return 32;
    case DSV4KV_RECORD_NVFP4: return 16;
    case DSV4KV_RECORD_INDEXER_FP8: return 128;
    case DSV4KV_RECORD_INDEXER_MXFP4: return 32;
  }
  return 16;
}

static uint16_t neg(rng_t *r, uint16_t b) { return rng_below(r, 2) ? (uint16_t)(b | 0x8000) : b; }

/* fp8 ties: the block's amax is exactly fp8_max * 2^e (so the scale is 2^e),
 * the others lie halfway between two adjacent codes (or on one) times 2^e. */
static void block_fp8_ties(rng_t *r, uint16_t *x, int n, int fnuz) {
  double fmax = fnuz ? 224.0 : 448.0;
  double (*val)(uint8_t) = fnuz ? ref_e4m3fnuz_value : ref_e4m3_value;
  int e = (int)ops_rr(r, -20, 40); /* fmax * 2^e stays above the 1e-4 amax floor */
  for (int i = 0; i < n; i++) {
    int c = (int)rng_below(r, 0x7E); /* c + 1 <= 0x7E, the code of fmax in both flavours */
    double v = rng_below(r, 4) ? (val((uint8_t)c) + val((uint8_t)(c + 1))) / 2 : val((uint8_t)c);
    x[i] = neg(r, bf16_of(ldexp(v, e)));
  }
  x[rng_below(r, (uint32_t)n)] = neg(r, bf16_of(ldexp(fmax, e)));
}

/* NVFP4 ties: amax = 6 * s for an e4m3 scale s, values t * s with t on the
 * e2m1 grid or halfway between two of its points. */
static void block_nvfp4_ties(rng_t *r, uint16_t *x) {
  static const double t[] = {0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0, 0, 0.5, 1, 1.5, 2, 3, 4, 6};
  double s = ref_e4m3_value((uint8_t)ops_rr(r, 1, 0x7E));
  for (int i = 0; i < 16; i++) x[i] = neg(r, bf16_of(t[rng_below(r, 15)] * s));
  x[rng_below(r, 16)] = neg(r, bf16_of(6.0 * s));
}

/* amax at a scale boundary, or one bf16 step either side of it. */
static void block_pow2(rng_t *r, uint16_t *x, int n, dsv4kv_record rec, int fnuz) {
  double amax;
  if (rec == DSV4KV_RECORD_NVFP4) {
    int c = (int)ops_rr(r, 1, 0x7D); /* amax / 6 halfway between two e4m3 scales, or at the clamps */
    static const double edge[] = {0x1p-9, 448.0, 896.0, 0x1p-12};
    amax = rng_below(r, 4) ? 3.0 * (ref_e4m3_value((uint8_t)c) + ref_e4m3_value((uint8_t)(c + 1)))
                           : 6.0 * edge[rng_below(r, 4)];
  } else {
    amax = ldexp(fnuz ? 224.0 : 448.0, (int)ops_rr(r, -30, 40));
  }
  uint16_t b = bf16_of(amax);
  b = (uint16_t)(b + (int)rng_below(r, 3) - 1);
  for (int i = 0; i < n; i++) x[i] = bf16_of(rng_normal(r) * amax / 4.0);
  for (int i = 0; i < n; i++)
    if (fabs(bf16_val(x[i])) >= bf16_val(b)) x[i] = bf16_of(bf16_val(x[i]) / 8);
  x[rng_below(r, (uint32_t)n)] = neg(r, b);
}

static void row_special(rng_t *r, uint16_t *row, int n, int blk) {
  static const uint16_t sp[] = {0x7FC0, 0xFFC1, 0x7F81, 0xFF80, 0x7F80, 0x8000, 0x0000, 0x7F7F, 0xFF7F, 0x0001};
  gen_row(r, row, n, 0);
  for (int k = 0; k < n / 16; k++) row[rng_below(r, (uint32_t)n)] = sp[rng_below(r, 10)];
  int b = (int)rng_below(r, (uint32_t)(n / blk));
  uint16_t fillv = sp[rng_below(r, 5)]; /* a block of NaN or Inf */
  for (int i = 0; i < blk; i++) row[b * blk + i] = fillv;
}

void gen_k_row(rng_t *r, uint16_t *row, int n, dsv4kv_record rec, int fnuz, int kind) {
  int blk = quant_block(rec);
  switch (kind) {
    case ROW_NORMAL: gen_row(r, row, n, (int)rng_below(r, 4)); break;
    case ROW_SPECIAL: row_special(r, row, n, blk); break;
    case ROW_SUBNORMAL: /* bf16 subnormals, some zeros, now and then the smallest normal */
      for (int i = 0; i < n; i++) {
        uint32_t u = rng_below(r, 10);
        row[i] = neg(r, u == 0 ? 0 : u == 1 ? 0x0080 : (uint16_t)ops_rr(r, 1, 0x7F));
      }
      break;
    case ROW_TIES:
      for (int b = 0; b < n / blk; b++) {
        if (rec == DSV4KV_RECORD_NVFP4) block_nvfp4_ties(r, row + b * blk);
        else block_fp8_ties(r, row + b * blk, blk, fnuz);
      }
      break;
    case ROW_POW2:
      for (int b = 0; b < n / blk; b++) block_pow2(r, row + b * blk, blk, rec, fnuz);
      break;
    case ROW_ZERO: /* whole blocks of +-0, the rest normal; sometimes the whole row */
      gen_row(r, row, n, 0);
      for (int b = 0; b < n / blk; b++)
        if (rng_below(r, 2) || n == blk)
          for (int i = 0; i < blk; i++) row[b * blk + i] = rng_below(r, 2) ? 0x8000 : 0x0000;
      break;
    default: /* ROW_HUGE: near the largest bf16, mixed with tiny values in one block */
      for (int i = 0; i < n; i++)
        row[i] = neg(r, rng_below(r, 3) ? (uint16_t)ops_rr(r, 0x7F00, 0x7F7F) : (uint16_t)ops_rr(r, 0x0080, 0x0400));
      break;
  }
}

/* Token g's record: value bytes (i + 7g) & 0xFF (every code at every
 * position), scale s byte (g * nscales + s) & 0xFF (every scale byte). */
void gen_cache_codes(uint8_t *page0, int64_t pages, int64_t page_stride, int32_t bs, dsv4kv_record rec) {
  for (int64_t pg = 0; pg < pages; pg++) {
    uint8_t *page = page0 + pg * page_stride;
    for (int64_t q = 0; q < bs; q++) {
      int64_t g = pg * bs + q;
      uint8_t *val, *sc;
      int nval, nsc;
      switch (rec) {
        case DSV4KV_RECORD_V4:
          val = page + q * 576, nval = 576;
          sc = page + (int64_t)bs * 576 + q * 8, nsc = 8;
          break;
        case DSV4KV_RECORD_MXFP8: val = page + q * 528, nval = 512, sc = val + 512, nsc = 16; break;
        default: val = page + q * 288, nval = 256, sc = val + 256, nsc = 32; break;
      }
      for (int i = 0; i < nval; i++) val[i] = (uint8_t)(i + 7 * g);
      for (int s = 0; s < nsc; s++) sc[s] = (uint8_t)(g * nsc + s);
    }
  }
}

void gen_slots(rng_t *r, int64_t *s, int64_t T, int64_t nslots, int mode) {
  static const int64_t bad[] = {-2, -3, INT64_MIN, 0, 1, INT64_MAX, -1}; /* 0, 1: nslots + that */
  if (mode == 2) { /* many rows per slot: the later row must win; now and then a bad slot among them */
    int64_t n = T / 3 < nslots ? T / 3 : nslots;
    for (int64_t t = 0; t < T; t++) {
      const uint32_t k = (uint32_t)rng_below(r, 24);
      s[t] = k >= 2 ? ops_rr(r, 0, n > 0 ? n - 1 : 0) : k == 1 ? -1 : rng_below(r, 2) ? nslots : -2;
    }
    return;
  }
  if (mode == 3) { /* runs of adjacent slots (a prefill's), 1 in 6 over an earlier one; a few -1 */
    int64_t t = 0;
    while (t < T) {
      const int64_t len = ops_rr(r, 1, 40), start = ops_rr(r, 0, nslots > 1 ? nslots - 1 : 0);
      const int64_t from = t > 0 && rng_below(r, 6) == 0 ? s[ops_rr(r, 0, t - 1)] : start;
      for (int64_t i = 0; i < len && t < T; i++, t++)
        s[t] = rng_below(r, 40) == 0 || from < 0 || from + i >= nslots ? -1 : from + i;
    }
    return;
  }
  int64_t *perm = malloc((size_t)(nslots + 1) * sizeof *perm);
  for (int64_t i = 0; i < nslots; i++) perm[i] = i;
  for (int64_t i = nslots - 1; i > 0; i--) {
    int64_t j = ops_rr(r, 0, i), tmp = perm[i];
    perm[i] = perm[j];
    perm[j] = tmp;
  }
  for (int64_t t = 0; t < T; t++) {
    s[t] = t < nslots ? perm[t] : -1;
    if (rng_below(r, 10) == 0) s[t] = -1;
    if (mode == 1 && rng_below(r, 5) == 0) {
      int k = (int)rng_below(r, 7);
      s[t] = (k == 3 || k == 4) ? nslots + bad[k] : bad[k];
    }
  }
  free(perm);
}
