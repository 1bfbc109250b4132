/*
 * exhaustive_paths.c - every bf16 value through every CPU path's encoders and
 * decoders, against the scalar path: for each main-cache record and fp8
 * flavour, an insert of 65536 x 4 keys that hold every bf16 bit pattern (in
 * order, then shuffled so each value meets many block scales), then a gather
 * of every cache byte pattern back (every code at every in-record position,
 * every scale byte); caches and rows must be byte-identical to the scalar
 * path's.  NVFP4 also on every (value, block scale) pair (check_nvfp4_scales),
 * V4 and MXFP8 on every pair with a normal code (check_fp8_scales).
 * Exit 0 when every path matched, 1 on a difference, 77 when the
 * processor runs no path but the scalar one.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dsv4kv.h"
#include "formats/numfmt.h"

enum { ROWS = 512, BS = 64 }; /* 512 rows x 512 = 4 x 65536 values */

static uint64_t rng = 0x853C49E6748FEA9Bull;
static uint64_t next(void) {
  rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
  return rng;
}

static int run(const char *path, dsv4kv_record rec, int fnuz, const uint16_t *k, uint8_t *cache, int64_t pages,
               uint16_t *out, const uint8_t *gather_src) {
  if (dsv4kv_cpu_path_select(path) != DSV4KV_OK) return fprintf(stderr, "%s\n", dsv4kv_last_error()), -1;
  const int32_t w = dsv4kv_record_bytes(rec);
  int64_t ks[2] = {ROWS, 512}, ss[1] = {ROWS}, cs[2] = {pages, (int64_t)BS * w};
  int64_t *slots = malloc(ROWS * sizeof *slots);
  for (int i = 0; i < ROWS; i++) slots[i] = i;
  DLTensor tk = {(void *)k, {kDLCPU, 0}, 2, {kDLBfloat, 16, 1}, ks, NULL, 0};
  DLTensor ts = {slots, {kDLCPU, 0}, 1, {kDLInt, 64, 1}, ss, NULL, 0};
  DLTensor tc = {cache, {kDLCPU, 0}, 2, {kDLUInt, 8, 1}, cs, NULL, 0};
  dsv4kv_cache_desc d = {rec, fnuz ? DSV4KV_FP8_FNUZ : DSV4KV_FP8_OCP, BS, 0, 0};
  memset(cache, 0xCD, (size_t)(pages * BS * w));
  int rc = dsv4kv_is_error(dsv4kv_quantize_and_insert_k_cache(&tk, &tc, &d, &ts, NULL)) ? -1 : 0;
  /* the gather reads a cache holding every byte pattern */
  uint8_t *src = malloc((size_t)(pages * BS * w));
  memcpy(src, gather_src, (size_t)(pages * BS * w));
  int32_t seq = ROWS, *bt = malloc((size_t)pages * sizeof *bt);
  for (int64_t p = 0; p < pages; p++) bt[p] = (int32_t)p;
  int64_t os[3] = {1, ROWS, 512}, rs[1] = {1}, bs[2] = {1, pages};
  DLTensor to = {out, {kDLCPU, 0}, 3, {kDLBfloat, 16, 1}, os, NULL, 0};
  DLTensor tsl = {&seq, {kDLCPU, 0}, 1, {kDLInt, 32, 1}, rs, NULL, 0};
  DLTensor tb = {bt, {kDLCPU, 0}, 2, {kDLInt, 32, 1}, bs, NULL, 0};
  DLTensor tsrc = {src, {kDLCPU, 0}, 2, {kDLUInt, 8, 1}, cs, NULL, 0};
  memset(out, 0xCD, (size_t)ROWS * 512 * 2);
  if (dsv4kv_is_error(dsv4kv_dequantize_and_gather_k_cache(&to, &tsrc, &d, &tsl, NULL, &tb, 0, NULL))) rc = -1;
  free(slots), free(src), free(bt);
  return rc;
}

/* The SIMD paths' exponent rule against the reference's division, on every
 * bf16 amax the quantizers can see (positive, finite, at least the floor)
 * and on the floors themselves: runs on every machine. */
static int check_exponent_rule(void) {
  int bad = 0;
  for (uint32_t b = 0; b < 0x10000; b++) {
    float a = bf16_to_f32((uint16_t)b);
    if (!(a >= AMAX_FLOOR) || isinf(a)) continue;
    for (int fnuz = 0; fnuz < 2; fnuz++)
      bad += ceil_log2_ratio_175(a, fnuz ? 7 : 8) != ceil_log2_ratio(a, fnuz ? (double)FP8_FNUZ_MAX : (double)FP8_OCP_MAX);
  }
  for (int fnuz = 0; fnuz < 2; fnuz++)
    bad += ceil_log2_ratio_175(AMAX_FLOOR, fnuz ? 7 : 8) !=
           ceil_log2_ratio(AMAX_FLOOR, fnuz ? (double)FP8_FNUZ_MAX : (double)FP8_OCP_MAX);
  printf("exponent rule: %s on every bf16 amax\n", bad ? "DIFFERS" : "equal to the division");
  /* The GPU's rule (ceil_log2_ratio_bits) on every significand at a low, a
   * middle and the highest exponents (the rule and the division both shift
   * with the exponent; tests/cuda/exhaustive_cuda.cu runs every fp32). */
  int bad_bits = 0;
  const float max[3] = {FP8_OCP_MAX, FP8_FNUZ_MAX, E2M1_MAX};
  const uint32_t exps[4] = {1, 120, 135, 254};
  for (int x = 0; x < 4; x++)
    for (uint32_t m = 0; m < 0x800000u; m++) {
      const float a = f32_from_bits(exps[x] << 23 | m);
      for (int k = 0; k < 3; k++) bad_bits += ceil_log2_ratio_bits(a, max[k]) != ceil_log2_ratio(a, (double)max[k]);
    }
  printf("exponent from bits: %s on every significand at 4 exponents\n", bad_bits ? "DIFFERS" : "equal to the division");
  return bad != 0 || bad_bits != 0;
}

/* An insert of `rows` rows of k (slots 0..rows-1) on `path`. */
static int insert_on(const char *path, dsv4kv_record rec, int fnuz, const uint16_t *k, int64_t rows, uint8_t *cache) {
  if (dsv4kv_cpu_path_select(path) != DSV4KV_OK) return -1;
  const int64_t pages = (rows + BS - 1) / BS;
  int64_t ks[2] = {rows, 512}, ss[1] = {rows}, cs[2] = {pages, (int64_t)BS * dsv4kv_record_bytes(rec)};
  int64_t *slots = malloc((size_t)rows * sizeof *slots);
  for (int64_t i = 0; i < rows; i++) slots[i] = i;
  DLTensor tk = {(void *)k, {kDLCPU, 0}, 2, {kDLBfloat, 16, 1}, ks, NULL, 0};
  DLTensor ts = {slots, {kDLCPU, 0}, 1, {kDLInt, 64, 1}, ss, NULL, 0};
  DLTensor tc = {cache, {kDLCPU, 0}, 2, {kDLUInt, 8, 1}, cs, NULL, 0};
  dsv4kv_cache_desc d = {rec, fnuz ? DSV4KV_FP8_FNUZ : DSV4KV_FP8_OCP, BS, 0, 0};
  memset(cache, 0xCD, (size_t)(cs[0] * cs[1]));
  int rc = dsv4kv_is_error(dsv4kv_quantize_and_insert_k_cache(&tk, &tc, &d, &ts, NULL)) ? -1 : 0;
  free(slots);
  return rc;
}

/* NVFP4's codes on every (value, block scale) pair a block can hold: for
 * every e4m3 scale code an amax reaches (the largest and the smallest bf16
 * amax of each, and Inf), blocks of that amax and 15 values each, through
 * every bf16 value whose magnitude is at most the amax (and every NaN). */
static int check_nvfp4_scales(void) {
  uint16_t amaxes[600];
  int na = 0, last = -1;
  for (uint32_t b = 1; b < 0x7F80; b++) { /* positive finite bf16, increasing */
    float t = bf16_to_f32((uint16_t)b) * (1.0f / 6.0f);
    t = t > NVFP4_SCALE_MIN ? t : NVFP4_SCALE_MIN;
    int sc = e4m3_encode(t < FP8_OCP_MAX ? t : FP8_OCP_MAX);
    if (sc != last) { /* the first of a new scale, and the previous one's last */
      if (b > 1) amaxes[na++] = (uint16_t)(b - 1);
      amaxes[na++] = (uint16_t)b, last = sc;
    }
  }
  amaxes[na++] = 0x7F7F, amaxes[na++] = 0x7F80; /* the largest finite, Inf */
  int64_t cap = 1 << 16, n = 0; /* values written */
  uint16_t *k = malloc((size_t)cap * 2);
  for (int a = 0; a < na; a++) {
    const float amax = bf16_to_f32(amaxes[a]);
    for (uint32_t b = 0; b < 0x10000; b++) {
      const float x = bf16_to_f32((uint16_t)b);
      if (!(fabsf(x) <= amax) && !isnan(x)) continue;
      if (n % 16 == 0) {
        if (n + 16 > cap) k = realloc(k, (size_t)(cap *= 2) * 2);
        k[n++] = amaxes[a];
      }
      k[n++] = (uint16_t)b;
    }
    while (n % 16) k[n++] = amaxes[a];
  }
  while (n % 512) k[n++] = 0;
  const int64_t rows = n / 512, pages = (rows + BS - 1) / BS;
  const size_t cbytes = (size_t)(pages * BS * DSV4KV_NVFP4_BYTES_PER_TOKEN);
  uint8_t *c0 = malloc(cbytes), *c1 = malloc(cbytes);
  int bad = insert_on("scalar", DSV4KV_RECORD_NVFP4, 0, k, rows, c0) != 0;
  for (int p = 1; p < dsv4kv_cpu_path_count() && !bad; p++) {
    bad |= insert_on(dsv4kv_cpu_path_name(p), DSV4KV_RECORD_NVFP4, 0, k, rows, c1) != 0;
    bad |= memcmp(c0, c1, cbytes) != 0;
    printf("nvfp4 codes, %d amaxes x every bf16 value below them (%lld blocks), %-8s: %s\n", na,
           (long long)(n / 16), dsv4kv_cpu_path_name(p), bad ? "DIFFERS" : "identical");
  }
  dsv4kv_cpu_path_select(NULL);
  free(k), free(c0), free(c1);
  return bad;
}

/* The fp8 records' codes on every (value, block scale) pair whose code is
 * normal or zero: for every UE8M0 exponent an amax reaches (the smallest and
 * the largest bf16 amax of each, the floor's included), blocks of that amax
 * and every bf16 value of at most its magnitude down to 2^(e-6) (and the
 * zeros).  Such rows hold no value needing subnormal steps, so the avx512
 * path encodes them from the bf16 bits instead of handing them to its fp32
 * code: this covers that encoder on every input it takes. */
static int check_fp8_scales(dsv4kv_record rec, int fnuz) {
  const int v4 = rec == DSV4KV_RECORD_V4, blk = v4 ? 64 : 32, coded = v4 ? 448 : 512;
  uint16_t amaxes[600];
  int na = 0, last = 1000;
  for (uint32_t b = 1; b < 0x7F80; b++) {
    const float a = bf16_to_f32((uint16_t)b);
    const int e = ceil_log2_ratio_175(a > AMAX_FLOOR ? a : AMAX_FLOOR, fnuz ? 7 : 8);
    if (e != last) {
      if (b > 1) amaxes[na++] = (uint16_t)(b - 1);
      amaxes[na++] = (uint16_t)b, last = e;
    }
  }
  amaxes[na++] = 0x7F7F;
  int64_t cap = 1 << 20, n = 0;
  uint16_t *k = malloc((size_t)cap * 2);
  for (int i = 0; i < na; i++) {
    const float amax = bf16_to_f32(amaxes[i]);
    const int e = ceil_log2_ratio_175(amax > AMAX_FLOOR ? amax : AMAX_FLOOR, fnuz ? 7 : 8);
    const float low = ldexpf(1.0f, e - 6); /* the smallest normal e4m3 value times the scale */
    for (uint32_t b = 0; b < 0x10000; b++) {
      const float x = bf16_to_f32((uint16_t)b);
      if (isnan(x) || fabsf(x) > amax || (x != 0 && fabsf(x) < low)) continue;
      if (n + 2 * 512 > cap) k = realloc(k, (size_t)(cap *= 2) * 2);
      if (n % 512 == coded) /* V4: the RoPE dims, raw */
        while (n % 512) k[n++] = 0;
      if (n % blk == 0) k[n++] = amaxes[i]; /* each block holds its amax */
      k[n++] = (uint16_t)b;
    }
    while (n % blk || n % 512 == coded) {
      const uint16_t fill = n % 512 >= coded ? 0 : amaxes[i];
      k[n++] = fill;
    }
  }
  while (n % 512) k[n++] = 0;
  const int64_t rows = n / 512, pages = (rows + BS - 1) / BS;
  const size_t cbytes = (size_t)(pages * BS * dsv4kv_record_bytes(rec));
  uint8_t *c0 = malloc(cbytes), *c1 = malloc(cbytes);
  int bad = insert_on("scalar", rec, fnuz, k, rows, c0) != 0;
  for (int p = 1; p < dsv4kv_cpu_path_count() && !bad; p++) {
    bad |= insert_on(dsv4kv_cpu_path_name(p), rec, fnuz, k, rows, c1) != 0;
    bad |= memcmp(c0, c1, cbytes) != 0;
    printf("%s%s codes, %d amaxes x every bf16 value with a normal code (%lld rows), %-8s: %s\n",
           v4 ? "v4" : "mxfp8", fnuz ? " fnuz" : "", na, (long long)rows, dsv4kv_cpu_path_name(p),
           bad ? "DIFFERS" : "identical");
  }
  dsv4kv_cpu_path_select(NULL);
  free(k), free(c0), free(c1);
  return bad;
}

int main(void) {
  if (check_exponent_rule()) return 1;
  if (dsv4kv_cpu_path_count() < 2) {
    printf("only the scalar CPU path here: skipped\n");
    return 77;
  }
  uint16_t *k = malloc((size_t)ROWS * 512 * 2);
  for (int i = 0; i < ROWS * 512; i++) k[i] = (uint16_t)i; /* every bf16 value, 4 times */
  for (int i = 65536 * 2; i < ROWS * 512; i++) {     /* the last two copies shuffled */
    int j = 65536 * 2 + (int)(next() % (uint64_t)(i - 65536 * 2 + 1));
    uint16_t x = k[i];
    k[i] = k[j], k[j] = x;
  }
  const struct {
    dsv4kv_record rec;
    int fnuz;
    const char *name;
  } recs[] = {{DSV4KV_RECORD_V4, 0, "v4"}, {DSV4KV_RECORD_V4, 1, "v4 fnuz"}, {DSV4KV_RECORD_MXFP8, 0, "mxfp8"},
              {DSV4KV_RECORD_MXFP8, 1, "mxfp8 fnuz"}, {DSV4KV_RECORD_NVFP4, 0, "nvfp4"}};
  const int64_t pages = ROWS / BS;
  int failed = 0;
  for (size_t r = 0; r < sizeof recs / sizeof recs[0]; r++) {
    const size_t cbytes = (size_t)(pages * BS * dsv4kv_record_bytes(recs[r].rec));
    uint8_t *src = malloc(cbytes), *c0 = malloc(cbytes), *c1 = malloc(cbytes);
    for (size_t i = 0; i < cbytes; i++) src[i] = (uint8_t)(i * 131 + i / 4096); /* every byte at every offset */
    uint16_t *o0 = malloc((size_t)ROWS * 512 * 2), *o1 = malloc((size_t)ROWS * 512 * 2);
    if (run("scalar", recs[r].rec, recs[r].fnuz, k, c0, pages, o0, src)) return 1;
    for (int p = 1; p < dsv4kv_cpu_path_count(); p++) {
      const char *path = dsv4kv_cpu_path_name(p);
      if (run(path, recs[r].rec, recs[r].fnuz, k, c1, pages, o1, src)) return 1;
      int ci = memcmp(c0, c1, cbytes), oi = memcmp(o0, o1, (size_t)ROWS * 512 * 2);
      printf("%-10s %-8s insert %s, gather %s\n", recs[r].name, path, ci ? "DIFFERS" : "identical",
             oi ? "DIFFERS" : "identical");
      failed |= ci || oi;
    }
    free(src), free(c0), free(c1), free(o0), free(o1);
  }
  dsv4kv_cpu_path_select(NULL);
  free(k);
  failed |= check_nvfp4_scales();
  for (int f = 0; f < 2; f++) failed |= check_fp8_scales(DSV4KV_RECORD_V4, f) | check_fp8_scales(DSV4KV_RECORD_MXFP8, f);
  printf("%s\n", failed ? "FAILED" : "every path identical to the scalar one");
  return failed;
}
