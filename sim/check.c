/* Verification bounds and bookkeeping (see check.h).
 *
 * The decoders here are written from SPEC.md independently of the library, so
 * a check never trusts the code it checks. */
#include "check.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* ---------------------------------------------------------------------- */
/* Small independent number-format helpers                                  */
/* ---------------------------------------------------------------------- */

static float bf16_to_f32(uint16_t b) {
  uint32_t u = (uint32_t)b << 16;
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

static float bf16_round(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  if ((u & 0x7fffffffu) > 0x7f800000u)
    return f; /* NaN stays NaN */
  u += 0x7fffu + ((u >> 16) & 1u);
  u &= 0xffff0000u;
  memcpy(&f, &u, sizeof f);
  return f;
}

/* OCP e4m3 (e4m3fn) decode; NaN for 0x7F / 0xFF. */
static float e4m3_value(uint8_t b) {
  int s = b >> 7, e = (b >> 3) & 15, m = b & 7;
  float v;
  if (e == 15 && m == 7)
    v = NAN;
  else if (e == 0)
    v = ldexpf((float)m, -9);
  else
    v = ldexpf((float)(8 + m), e - 10);
  return s ? -v : v;
}

static float e2m1_value(uint8_t code) {
  static const float mag[8] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};
  float v = mag[code & 7];
  return (code & 8) ? -v : v;
}

/* e4m3 round-to-nearest-even of t in [2^-9, 448] (the NVFP4 block scale). */
static double e4m3_round(double t) {
  double step;
  if (t < ldexp(1.0, -6)) {
    step = ldexp(1.0, -9);
  } else {
    int ex;
    frexp(t, &ex); /* t = m 2^ex, m in [0.5, 1): binade 2^(ex-1) */
    step = ldexp(1.0, ex - 1 - 3);
  }
  double q = t / step, r = floor(q), f = q - r;
  if (f > 0.5 || (f == 0.5 && fmod(r, 2.0) != 0.0))
    r += 1.0;
  double s = r * step;
  return s > 448.0 ? 448.0 : s;
}

/* Smallest power of two p with amax <= maxv * p (amax > 0). */
static double pow2_scale(double amax, double maxv) {
  int ex;
  double m = frexp(amax / maxv, &ex);
  return ldexp(1.0, m == 0.5 ? ex - 1 : ex);
}

/* ---------------------------------------------------------------------- */
/* Statistics and failures                                                  */
/* ---------------------------------------------------------------------- */

void sim_errstat_add(sim_errstat *d, const sim_errstat *s) {
  d->sum_err2 += s->sum_err2;
  d->sum_ref2 += s->sum_ref2;
  if (s->max_abs_err > d->max_abs_err)
    d->max_abs_err = s->max_abs_err;
  if (s->max_rel_amax > d->max_rel_amax)
    d->max_rel_amax = s->max_rel_amax;
  d->values += s->values;
  d->rows += s->rows;
}

double sim_errstat_rel_rms(const sim_errstat *s) {
  return s->sum_ref2 > 0 ? sqrt(s->sum_err2 / s->sum_ref2) : 0.0;
}

double sim_errstat_snr_db(const sim_errstat *s) {
  if (s->sum_err2 <= 0)
    return INFINITY;
  return 10.0 * log10(s->sum_ref2 / s->sum_err2);
}

const char *sim_fail_name(sim_fail_kind k) {
  switch (k) {
    case SIM_FAIL_STATUS: return "library error status";
    case SIM_FAIL_SKIPPED: return "entries skipped by the library's bounds checks";
    case SIM_FAIL_KEY: return "gathered keys outside the format's error bound";
    case SIM_FAIL_INDEX_PAGE: return "indices outside the request's pages";
    case SIM_FAIL_INDEX_VALUE: return "indices different from their definition";
    case SIM_FAIL_LENS: return "wrong index-list lengths";
    case SIM_FAIL_INDEXER: return "indexer records outside the error bound";
    default: return "?";
  }
}

void sim_fail(sim_verdict *v, sim_fail_kind k, const char *fmt, ...) {
  v->fails[k]++;
  if (v->num_messages >= SIM_MAX_FAIL_MESSAGES)
    return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(v->messages[v->num_messages++], sizeof v->messages[0], fmt, ap);
  va_end(ap);
}

int64_t sim_verdict_failures(const sim_verdict *v) {
  int64_t n = 0;
  for (int k = 0; k < SIM_NUM_FAILS; k++)
    n += v->fails[k];
  return n;
}

/* ---------------------------------------------------------------------- */
/* Main-cache rows                                                          */
/* ---------------------------------------------------------------------- */

/* One verified value: reference x, error err, amax of its scale block. */
static void tally(sim_errstat *st, double ref, double err, double amax) {
  st->sum_ref2 += ref * ref;
  st->sum_err2 += err * err;
  if (fabs(err) > st->max_abs_err)
    st->max_abs_err = fabs(err);
  if (amax > 0 && fabs(err) / amax > st->max_rel_amax)
    st->max_rel_amax = fabs(err) / amax;
  st->values++;
}

static double block_amax_u16(const uint16_t *x, int n) {
  double amax = 0.0;
  for (int d = 0; d < n; d++) {
    double a = fabs((double)bf16_to_f32(x[d]));
    if (a > amax)
      amax = a;
  }
  return amax;
}

/* Counts an element outside its bound, keeping the first for the message. */
static void outlier(int *bad, sim_outlier *first, int d, double value, double expected, double bound) {
  if (*bad == 0 && first) {
    first->dim = d;
    first->value = value;
    first->expected = expected;
    first->bound = bound;
  }
  ++*bad;
}

int sim_check_key_row(dsv4kv_record rec, float fp8_max, const uint16_t *orig, const uint16_t *got,
                      sim_errstat *st, sim_outlier *first) {
  int bad = 0;
  if (first) first->dim = -1;
  int block = rec == DSV4KV_RECORD_V4 ? 64 : rec == DSV4KV_RECORD_MXFP8 ? 32 : 16;
  int quantized = rec == DSV4KV_RECORD_V4 ? 448 : 512;
  for (int b0 = 0; b0 < quantized; b0 += block) {
    double amax = block_amax_u16(orig + b0, block);
    double scale; /* V4 / MXFP8: power-of-two scale; NVFP4: e4m3 scale */
    if (rec == DSV4KV_RECORD_NVFP4) {
      double t = amax / 6.0;
      if (t < ldexp(1.0, -9))
        t = ldexp(1.0, -9);
      if (t > 448.0)
        t = 448.0;
      scale = e4m3_round(t);
    } else {
      scale = pow2_scale(amax < 1e-4 ? 1e-4 : amax, fp8_max);
    }
    const double lsb = ldexp(scale, -10); /* once a block: a libm call */
    for (int d = b0; d < b0 + block; d++) {
      double x = bf16_to_f32(orig[d]), y = bf16_to_f32(got[d]);
      double ax = fabs(x), bound;
      if (rec == DSV4KV_RECORD_NVFP4)
        bound = 0.25 * (ax > scale ? ax : scale) + (ax > 6.0 * scale ? ax - 6.0 * scale : 0.0);
      else
        bound = ax * 0.0625 + lsb;
      double err = y - x;
      if (!(fabs(err) <= bound * (1.0 + 1e-9)))
        outlier(&bad, first, d, y, x, bound);
      tally(st, x, isfinite(err) ? err : x, amax);
    }
  }
  double rope_amax = block_amax_u16(orig + quantized, 512 - quantized);
  for (int d = quantized; d < 512; d++) { /* V4 RoPE dims: copied bit for bit */
    double x = bf16_to_f32(orig[d]), y = bf16_to_f32(got[d]);
    if (got[d] != orig[d])
      outlier(&bad, first, d, y, x, 0.0);
    tally(st, x, isfinite(y - x) ? y - x : x, rope_amax);
  }
  st->rows++;
  return bad;
}

/* ---------------------------------------------------------------------- */
/* Indexer records                                                          */
/* ---------------------------------------------------------------------- */

/* One bf16 step at v: 2^(exponent - 7), at least the smallest subnormal. */
static double bf16_ulp(double v) {
  int e;
  if (v == 0.0 || !isfinite(v)) return ldexp(1.0, -133);
  frexp(v, &e); /* |v| in [2^(e-1), 2^e) */
  return e - 8 < -133 ? ldexp(1.0, -133) : ldexp(1.0, e - 8);
}

void sim_indexer_reference(const uint16_t *k_pre, const float *w, float eps, const float *cs,
                           float *out, double *tol) {
  float x[128];
  double ss = 0.0;
  for (int d = 0; d < 128; d++) {
    x[d] = bf16_to_f32(k_pre[d]);
    ss += (double)x[d] * x[d];
  }
  /* The sum of squares in double, not in the library's lane order: rstd may
   * differ from the library's in its last bits, so a normalised value that
   * lands near a rounding boundary may round to the neighbouring bf16 (one
   * step, bf16_ulp).  That is the only difference before RoPE. */
  float rstd = (float)(1.0 / sqrt(ss / 128.0 + (double)eps));
  for (int d = 0; d < 128; d++) {
    out[d] = bf16_round((x[d] * rstd) * w[d]);
    tol[d] = bf16_ulp(out[d]);
  }
  /* RoPE carries those steps through: r = e c - o s moves by up to
   * |c| ulp(e) + |s| ulp(o), which cancellation (e c ~ o s) makes large
   * against |r| itself; then each side rounds r to bf16 (up to one step of r
   * between them, and a 2^-7 share of the moved amount), plus the fp32
   * roundings of o s and the fma (2^-24 each, doubled for slack). */
  for (int i = 32; i < 64; i++) {
    int j = i - 32;
    float e = out[2 * i], o = out[2 * i + 1], c = cs[j], s = cs[32 + j];
    double de = tol[2 * i], dor = tol[2 * i + 1];
    double ac = fabs((double)c), as = fabs((double)s), fe = fabs((double)e), fo = fabs((double)o);
    out[2 * i] = bf16_round(fmaf(e, c, -(o * s)));
    out[2 * i + 1] = bf16_round(fmaf(o, c, e * s));
    double moved_e = ac * de + as * dor, moved_o = ac * dor + as * de;
    double fp32 = ldexp(fe * ac + fo * as, -22);
    tol[2 * i] = moved_e * (1.0 + ldexp(1.0, -7)) + bf16_ulp(out[2 * i]) + fp32;
    tol[2 * i + 1] = moved_o * (1.0 + ldexp(1.0, -7)) + bf16_ulp(out[2 * i + 1]) + fp32;
  }
}

int sim_check_indexer_record(dsv4kv_record rec, const uint8_t *values, const uint8_t *scale,
                             const float *ref, const double *tol, sim_errstat *st,
                             sim_outlier *first) {
  int bad = 0;
  if (first) first->dim = -1;
  int block = rec == DSV4KV_RECORD_INDEXER_FP8 ? 128 : 32;
  for (int b0 = 0; b0 < 128; b0 += block) {
    double amax = 0.0;
    for (int d = b0; d < b0 + block; d++)
      if (fabs(ref[d]) > amax)
        amax = fabs(ref[d]);
    double s_dec, s_ref;
    if (rec == DSV4KV_RECORD_INDEXER_FP8) {
      float f;
      memcpy(&f, scale, sizeof f); /* fp32 2^e, little-endian */
      s_dec = f;
      s_ref = pow2_scale(amax < 1e-4 ? 1e-4 : amax, 448.0);
    } else {
      s_dec = ldexp(1.0, (int)scale[b0 / 32] - 127);
      double a = amax < 6.0 * ldexp(1.0, -126) ? 6.0 * ldexp(1.0, -126) : amax;
      s_ref = pow2_scale(a, 6.0);
    }
    for (int d = b0; d < b0 + block; d++) {
      double v;
      if (rec == DSV4KV_RECORD_INDEXER_FP8)
        v = (double)e4m3_value(values[d]) * s_dec;
      else
        v = (double)e2m1_value((uint8_t)(values[d / 2] >> (4 * (d & 1)))) * s_dec;
      /* The library quantized its own value, within tol[d] of ours
       * (sim_indexer_reference); the format's rounding error applies to that
       * value, and the block scale may be one power of two away. */
      double x = ref[d], ax = fabs(x) + tol[d], bound;
      if (rec == DSV4KV_RECORD_INDEXER_FP8)
        bound = ax * 0.0625 + ldexp(2.0 * s_ref, -10) + tol[d];
      else
        bound = 0.25 * (ax > 2.0 * s_ref ? ax : 2.0 * s_ref) + tol[d];
      double err = v - x;
      if (!(fabs(err) <= bound * (1.0 + 1e-9)))
        outlier(&bad, first, d, v, x, bound);
      tally(st, x, isfinite(err) ? err : x, amax);
    }
  }
  st->rows++;
  return bad;
}
