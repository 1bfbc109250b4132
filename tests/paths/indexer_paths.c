/*
 * indexer_paths.c - the SIMD paths' indexer-store pieces (src/cpu/indexer_avx512.c,
 * indexer_avx2.c; internal, their sources compiled in) against formats/ref.h,
 * bit for bit:
 *  - the sum of squares on random rows (exponents spread over 2^-20 .. 2^20, some
 *    zeros and subnormals): its order is the reference's 32 partials and xor
 *    butterfly, and any other order differs in the last bits of most rows (the case
 *    registry sees that only through rstd, where one ulp rarely changes a byte);
 *  - the 16-lane rstd against indexer_rstd_of_sum on sums of every exponent and
 *    the specials, with several eps;
 *  - the quantizer rows (RMSNorm + RoPE + FP8 OCP / FNUZ or MXFP4): every finite
 *    bf16 value at every scale its row can have (rstd 1, weight 1, cos 1, sin 0
 *    make the row's results its inputs: a row holds its amax A and the values up
 *    to A, for every A of a few significands at every exponent), and random rows
 *    with random weights, tables and rstd.  A row the SIMD code leaves to the
 *    reference (it returns 0) is allowed, but the sweep's and the random rows'
 *    fast rows are counted and must be nearly all of them, so the fast code is
 *    what gets checked.
 * Exit 0 when all match, 1 on a difference, 77 where no SIMD path runs.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "cpu/cpu.h"
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

typedef struct {
  const char *name;
  float (*sum_squares)(const uint16_t *k);
  void (*rstd16)(const float *sum, float eps, float *rstd, int *nonfinite);
  int (*fp8)(const uint16_t *k, const float *we, const float *wo, const float *cos_sin, float rstd, int fnuz,
             uint8_t *codes, float *scale, uint8_t *ue);
  int (*mxfp4)(const uint16_t *k, const float *we, const float *wo, const float *cos_sin, float rstd,
               uint8_t *packed, uint8_t *scales);
} path;

static long sum_squares_differ(const path *p, long rows) {
  long bad = 0;
  uint16_t k[INDEXER_DIM];
  float x[INDEXER_DIM];
  for (long n = 0; n < rows; n++) {
    const int spread = (int)(n % 21);
    for (int d = 0; d < INDEXER_DIM; d++) k[d] = value(spread), x[d] = bf16_to_f32(k[d]);
    bad += f32_bits(p->sum_squares(k)) != f32_bits(indexer_sum_squares_ref(x));
  }
  return bad;
}

static long rstd_differ(const path *p, long *tried) {
  static const float eps[] = {1e-6f, 1e-5f, 0.5f, 0x1p-149f, 3e38f};
  static const uint32_t specials[] = {0, 0x80000000u, 1, 0x7FFFFFu, 0x800000u, 0x7F7FFFFFu, 0x7F800000u,
                                      0x7FC00000u, 0xFFC00000u, 0xBF800000u, 0x7FFFFFFFu, 0x43000000u};
  long bad = 0, n = 0;
  float sum[16], r[16];
  int f[16];
  for (size_t e = 0; e < sizeof eps / sizeof eps[0]; e++)
    for (uint32_t x = 0; x < 256 * 64 + 1; x++) {
      for (int i = 0; i < 16; i++) /* every exponent, random significands, the specials in the last group */
        sum[i] = f32_from_bits(x < 256 * 64 ? (x >> 6) << 23 | (next() & 0x7FFFFFu) : specials[i % 12]);
      p->rstd16(sum, eps[e], r, f);
      for (int i = 0; i < 16; i++, n++) {
        int want_f;
        const float want = indexer_rstd_of_sum(sum[i], eps[e], &want_f);
        bad += f32_bits(r[i]) != f32_bits(want) || !f[i] != !want_f;
      }
    }
  *tried = n;
  return bad;
}

typedef struct {
  long rows, fast, differ;
} tally;

/* One row through the path and the reference; returns 1 when it differs. */
static int row_differs(const path *p, int rec, const uint16_t *k, const float *w, const float *cos_sin, float rstd,
                       tally *t) {
  float we[INDEXER_DIM / 2], wo[INDEXER_DIM / 2], r[INDEXER_DIM], scale = 0, scale2 = 0;
  for (int i = 0; i < INDEXER_DIM / 2; i++) we[i] = w[2 * i], wo[i] = w[2 * i + 1];
  uint8_t got[INDEXER_DIM + 4], want[INDEXER_DIM + 4], ue = 0, ue2 = 0;
  memset(got, 0xA5, sizeof got), memset(want, 0x5A, sizeof want);
  indexer_norm_rope_ref(k, w, cos_sin, rstd, r);
  int fast;
  if (rec == 2) {
    indexer_mxfp4_quant_ref(r, want, want + 64);
    fast = p->mxfp4(k, we, wo, cos_sin, rstd, got, got + 64);
    memset(got + 68, 0x5A, sizeof got - 68);
  } else {
    indexer_fp8_quant_ref(r, rec, want, &scale, &ue);
    fast = p->fp8(k, we, wo, cos_sin, rstd, rec, got, &scale2, &ue2);
    memset(got + INDEXER_DIM, 0x5A, 4);
  }
  t->rows++;
  if (!fast) return 0; /* the reference's row (the caller's fallback) */
  t->fast++;
  const int d = memcmp(got, want, sizeof got) != 0 || (rec != 2 && (f32_bits(scale) != f32_bits(scale2) || ue != ue2));
  if (d && t->differ < 3) {
    fprintf(stderr, "  %s %s row differs (rstd %a):", p->name, rec == 2 ? "mxfp4" : rec ? "fp8 fnuz" : "fp8", rstd);
    for (int i = 0; i < INDEXER_DIM; i++)
      if (got[i] != want[i]) fprintf(stderr, " [%d] k %04x got %02x want %02x", i, k[i], got[i], want[i]);
    fprintf(stderr, " scale %a/%a ue %d/%d\n", scale2, scale, ue2, ue);
  }
  t->differ += d;
  return d;
}

/* Every finite bf16 value v <= A in rows whose amax (per block for MXFP4)
 * is A, for A of significands 0x00, 0x40, 0x60, 0x61, 0x7F at every
 * exponent; the values' order shuffled so each meets every position. */
static void sweep(const path *p, int rec, tally *t) {
  float w[INDEXER_DIM], cs[64];
  for (int i = 0; i < INDEXER_DIM; i++) w[i] = 1.0f;
  for (int i = 0; i < 32; i++) cs[i] = 1.0f, cs[32 + i] = 0.0f;
  static uint16_t vals[65536];
  static const int mant[] = {0x00, 0x40, 0x60, 0x61, 0x7F};
  for (int e = 1; e < 255; e++)
    for (int m = 0; m < 5; m++) {
      const uint16_t A = (uint16_t)(e << 7 | mant[m]);
      int n = 0;
      for (uint32_t v = 0; v <= A; v++) vals[n++] = (uint16_t)v, vals[n++] = (uint16_t)(v | 0x8000);
      for (int i = n - 1; i > 0; i--) { /* shuffle */
        const int j = (int)(next() % (uint32_t)(i + 1));
        const uint16_t x = vals[i];
        vals[i] = vals[j], vals[j] = x;
      }
      for (int at = 0; at < n;) {
        uint16_t k[INDEXER_DIM];
        for (int d = 0; d < INDEXER_DIM; d++) {
          const int blk_first = rec == 2 ? d % 32 == 31 - (e + m) % 32 : d == (e * 5 + m) % INDEXER_DIM;
          k[d] = blk_first ? (uint16_t)(A | (next() & 0x8000)) : at < n ? vals[at++] : 0x0001;
        }
        row_differs(p, rec, k, w, cs, 1.0f, t);
      }
    }
}

/* Random rows: bf16 keys of spread exponents, weights in [0.5, 1.5),
 * cos / sin of random angles, rstd from the row. */
static void random_rows(const path *p, int rec, long rows, tally *t) {
  uint16_t k[INDEXER_DIM];
  float w[INDEXER_DIM], cs[64], x[INDEXER_DIM];
  for (long n = 0; n < rows; n++) {
    for (int d = 0; d < INDEXER_DIM; d++) {
      k[d] = value((int)(n % 9));
      if (next() % 512 == 0) k[d] = (uint16_t)(next() & 0x8000); /* a zero of either sign */
      x[d] = bf16_to_f32(k[d]);
      w[d] = 0.5f + (float)(next() % 4096) / 4096.0f;
    }
    for (int i = 0; i < 32; i++) {
      const double a = (double)next() / 65536.0;
      cs[i] = (float)cos(a), cs[32 + i] = (float)sin(a);
    }
    int bad;
    const float rstd = indexer_rstd_of_sum(indexer_sum_squares_ref(x), 1e-6f, &bad);
    row_differs(p, rec, k, w, cs, rstd, t);
  }
}

static int run_path(const path *p) {
  int fail = 0;
  long s = sum_squares_differ(p, 200000), tried, r = rstd_differ(p, &tried);
  printf("%s: sum of squares, 200000 rows: %s (%ld differ); rstd16, %ld sums: %s (%ld differ)\n", p->name,
         s ? "DIFFERS" : "identical", s, tried, r ? "DIFFERS" : "identical", r);
  fail |= s || r;
  static const char *rn[] = {"fp8", "fp8 fnuz", "mxfp4"};
  for (int rec = 0; rec < 3; rec++) {
    tally sw = {0, 0, 0}, rr = {0, 0, 0};
    sweep(p, rec, &sw);
    random_rows(p, rec, 100000, &rr);
    const int few_fast = sw.fast < sw.rows * 99 / 100 || rr.fast < rr.rows * 99 / 100;
    printf("%s %s: sweep %ld rows (%ld fast), random %ld rows (%ld fast): %s\n", p->name, rn[rec], sw.rows, sw.fast,
           rr.rows, rr.fast, sw.differ + rr.differ ? "DIFFERS" : few_fast ? "too few fast rows" : "identical");
    fail |= sw.differ || rr.differ || few_fast;
  }
  return fail;
}

int main(void) {
  __builtin_cpu_init();
  const path paths[] = {
      {"avx512", indexer_sum_squares_avx512, indexer_rstd16_avx512, indexer_fp8_avx512, indexer_mxfp4_avx512},
      {"avx2", indexer_sum_squares_avx2, indexer_rstd16_avx2, indexer_fp8_avx2, indexer_mxfp4_avx2}};
  const int ok[] = {cpu_avx512_supported(), cpu_avx2_supported()};
  int fail = 0, ran = 0;
  for (int i = 0; i < 2; i++)
    if (ok[i]) fail |= run_path(&paths[i]), ran++;
    else printf("%s: not run (this processor lacks it)\n", paths[i].name);
  if (!ran) {
    printf("indexer_paths: no SIMD path on this processor: skipped\n");
    return 77;
  }
  return fail;
}
