/* Whole-call references of insert, gather and the indexer store: the per-token
 * references of ref.c over a call's index tensors, with the skip rules that
 * dsv4kv.h states for each op.  Sequential loops, so a later row wins a slot. */
#include <math.h>

#include "support.h"

static int64_t nonfinite_bf16(const uint16_t *x, int n) {
  int64_t c = 0;
  for (int i = 0; i < n; i++) c += !isfinite(bf16_val(x[i]));
  return c;
}

void ref_insert_call(dsv4kv_record rec, int fnuz, const uint16_t *k, int64_t k_stride,
                     const int64_t *slots, int64_t T, ref_cache c, int64_t *skipped,
                     int64_t *nonfinite) {
  int64_t nslots = c.pages * c.bs;
  *skipped = *nonfinite = 0;
  for (int64_t t = 0; t < T; t++) {
    int64_t s = slots[t];
    if (s == -1) continue; /* the sentinel: silent */
    if (s < 0 || s >= nslots) {
      (*skipped)++;
      continue;
    }
    const uint16_t *row = k + t * k_stride;
    *nonfinite += nonfinite_bf16(row, 512);
    ref_insert_token(rec, fnuz, row, c.data + (s / c.bs) * c.page_stride, c.bs, (int32_t)(s % c.bs));
  }
}

static int64_t clamp64(int64_t v, int64_t lo, int64_t hi) { return v < lo ? lo : v > hi ? hi : v; }

void ref_gather_call(dsv4kv_record rec, int fnuz, ref_cache c, const int32_t *seq,
                     const int32_t *gl, int64_t R, const int32_t *bt, int64_t P, uint16_t *out,
                     int64_t s0, int64_t s1, int64_t max_tokens, int64_t offset, int64_t *skipped) {
  *skipped = 0;
  for (int64_t r = 0; r < R; r++) {
    int64_t L = gl ? gl[r] : seq[r];
    if (L < 0) {
      (*skipped)++;
      continue;
    }
    /* token i reads position seq - L + i (>= 0 needed) into row offset + i
     * (< max_tokens needed); the others are counted without a loop, as L may
     * be 2^31 */
    int64_t i_lo = clamp64(L - seq[r], 0, L);
    int64_t i_hi = offset >= max_tokens ? 0 : clamp64(max_tokens - offset, 0, L);
    if (i_hi < i_lo) i_hi = i_lo;
    *skipped += L - (i_hi - i_lo);
    for (int64_t i = i_lo; i < i_hi; i++) {
      int64_t pos = seq[r] - L + i;
      int64_t lp = pos / c.bs;
      if (lp >= P) {
        (*skipped)++;
        continue;
      }
      int64_t page = bt[r * P + lp];
      if (page < 0 || page >= c.pages) {
        (*skipped)++;
        continue;
      }
      ref_decode_token(rec, fnuz, c.data + page * c.page_stride, c.bs, (int32_t)(pos % c.bs),
                       out + r * s0 + (offset + i) * s1);
    }
  }
}

/* The RMSNorm of a finite row is non-finite when its sum of squares
 * overflows fp32, or when it is 0 with eps 0 (SPEC §7 counts it); computed
 * in double, away from the library's fp32 lane order (rows near FLT_MAX
 * exactly are not generated). */
static int norm_nonfinite(const uint16_t *row, float eps) {
  double ss = 0.0;
  for (int d = 0; d < 128; d++) {
    double x = bf16_val(row[d]);
    ss += x * x;
  }
  return ss > 3.4028234663852886e38 || ss / 128.0 + eps == 0.0;
}

void ref_indexer_call(const uint16_t *k, int64_t k_stride, const int64_t *pos, const int64_t *slots,
                      int64_t T, const float *cs, int64_t cs_rows, const float *w, float eps,
                      dsv4kv_record rec, int fnuz, uint32_t flags, int32_t cr, ref_cache c,
                      int64_t *skipped, int64_t *nonfinite) {
  int64_t nslots = c.pages * c.bs;
  *skipped = *nonfinite = 0;
  for (int64_t t = 0; t < T; t++) {
    int64_t s = slots[t], p = pos[t];
    if (s == -1) continue;
    if (s < 0 || s >= nslots) {
      (*skipped)++;
      continue;
    }
    if (p < 0) {
      (*skipped)++;
      continue;
    }
    if (p % cr != cr - 1) continue; /* (p + 1) % cr != 0: no key here, not a skip */
    int64_t cp = p / cr * cr;
    if (cp >= cs_rows) {
      (*skipped)++;
      continue;
    }
    const uint16_t *row = k + t * k_stride;
    int64_t in = nonfinite_bf16(row, 128);
    *nonfinite += in + (in == 0 && norm_nonfinite(row, eps));
    ref_indexer_store(row, w, cs + cp * 64, eps, rec, fnuz, flags, c.data + (s / c.bs) * c.page_stride, c.bs,
                      (int32_t)(s % c.bs));
  }
}
