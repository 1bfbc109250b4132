/* insert_gather: the worked example of dsv4kv.h as a program.
 *
 * Two requests (100 and 40 tokens) share a paged V4 cache of 64-token pages:
 * their bf16 keys are quantized into the cache (dsv4kv_quantize_and_insert_k_cache),
 * gathered back and dequantized (dsv4kv_dequantize_and_gather_k_cache), and
 * every value is compared with its original within the V4 format's error
 * bound: NoPE dims 0..447 |err| <= |x|/16 + 2^e/1024 (2^e the power-of-two
 * scale of the value's 64-dim block), RoPE dims 448..511 exact.  Rows of the
 * output past a request's length must be left untouched.  Exits 0 when all
 * of that holds.
 *
 * Build against an installed dsv4kv:
 *   cc insert_gather.c $(pkg-config --cflags --libs dsv4kv) -lm -o insert_gather
 * or with CMake: see CMakeLists.txt beside this file. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <dsv4kv.h>

enum { R = 2, BLOCK = 64, NUM_PAGES = 4, MAX_PAGES = 2, MAX_TOKENS = 100, D = DSV4KV_HEAD_DIM };

static uint16_t f32_to_bf16(float f) { /* round to nearest even (finite inputs) */
  uint32_t u;
  memcpy(&u, &f, 4);
  return (uint16_t)((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
}

static float bf16_to_f32(uint16_t b) {
  uint32_t u = (uint32_t)b << 16;
  float f;
  memcpy(&f, &u, 4);
  return f;
}

static uint32_t rng = 12345u;
static float uniform(void) { /* [-1, 1) */
  rng = rng * 1664525u + 1013904223u;
  return (float)(rng >> 8) / 8388608.0f - 1.0f;
}

int main(void) {
  const int32_t seq_lens_v[R] = {100, 40};
  /* block_table[r][p]: physical page of request r's p-th page (request 0 is
   * deliberately not on consecutive pages; request 1 needs one page). */
  int32_t block_table_v[R][MAX_PAGES] = {{3, 0}, {1, 0}};
  const int T = seq_lens_v[0] + seq_lens_v[1];

  const int64_t page_bytes = (int64_t)BLOCK * DSV4KV_V4_BYTES_PER_TOKEN;
  uint16_t *k_bits = malloc(sizeof(uint16_t) * T * D);
  int64_t *slot_ids = malloc(sizeof(int64_t) * T);
  uint8_t *cache_bytes = calloc(NUM_PAGES, page_bytes);
  uint16_t *out_bits = malloc(sizeof(uint16_t) * R * MAX_TOKENS * D);
  if (!k_bits || !slot_ids || !cache_bytes || !out_bits) {
    fprintf(stderr, "insert_gather: out of memory\n");
    return 1;
  }

  /* Keys: each 64-dim block gets its own magnitude (1/64 .. 64), as real keys
   * vary from block to block; token t of request r goes to its slot. */
  int t = 0;
  for (int r = 0; r < R; r++)
    for (int i = 0; i < seq_lens_v[r]; i++, t++) {
      for (int d = 0; d < D; d++) {
        float mag = ldexpf(1.0f, ((d / 64 + t) % 13) - 6);
        k_bits[(size_t)t * D + d] = f32_to_bf16(mag * uniform());
      }
      slot_ids[t] = (int64_t)block_table_v[r][i / BLOCK] * BLOCK + i % BLOCK;
    }

  /* --- insert: exactly as in the header's worked example ----------------- */
  int64_t k_shape[2] = {T, D}, s_shape[1] = {T}, c_shape[2] = {NUM_PAGES, page_bytes};
  DLTensor k = {k_bits, {kDLCPU, 0}, 2, {kDLBfloat, 16, 1}, k_shape, NULL, 0};
  DLTensor slots = {slot_ids, {kDLCPU, 0}, 1, {kDLInt, 64, 1}, s_shape, NULL, 0};
  DLTensor k_cache = {cache_bytes, {kDLCPU, 0}, 2, {kDLUInt, 8, 1}, c_shape, NULL, 0};
  dsv4kv_cache_desc cache = {DSV4KV_RECORD_V4, DSV4KV_FP8_OCP, BLOCK, 0, 0};
  int64_t skipped = 0;
  dsv4kv_options opt = {.skipped = &skipped};
  dsv4kv_status st = dsv4kv_quantize_and_insert_k_cache(&k, &k_cache, &cache, &slots, &opt);
  if (st != DSV4KV_OK) {
    fprintf(stderr, "insert: %s: %s\n", dsv4kv_status_string(st), dsv4kv_last_error());
    return 1;
  }

  /* --- gather both requests back: out is [R, MAX_TOKENS, 512] bf16 ------- */
  const uint16_t sentinel = 0x7FC1; /* a NaN no gather writes */
  for (size_t i = 0; i < (size_t)R * MAX_TOKENS * D; i++) out_bits[i] = sentinel;
  int32_t seq_lens_buf[R] = {seq_lens_v[0], seq_lens_v[1]};
  int64_t o_shape[3] = {R, MAX_TOKENS, D}, r_shape[1] = {R}, b_shape[2] = {R, MAX_PAGES};
  DLTensor out = {out_bits, {kDLCPU, 0}, 3, {kDLBfloat, 16, 1}, o_shape, NULL, 0};
  DLTensor seq_lens = {seq_lens_buf, {kDLCPU, 0}, 1, {kDLInt, 32, 1}, r_shape, NULL, 0};
  DLTensor table = {block_table_v, {kDLCPU, 0}, 2, {kDLInt, 32, 1}, b_shape, NULL, 0};
  st = dsv4kv_dequantize_and_gather_k_cache(&out, &k_cache, &cache, &seq_lens, NULL, &table, 0, &opt);
  if (st != DSV4KV_OK) {
    fprintf(stderr, "gather: %s: %s\n", dsv4kv_status_string(st), dsv4kv_last_error());
    return 1;
  }

  /* --- check the round trip ----------------------------------------------- */
  int64_t checked = 0, bad = 0;
  double max_rel = 0.0; /* max |err| / (block amax) */
  t = 0;
  for (int r = 0; r < R; r++) {
    for (int i = 0; i < MAX_TOKENS; i++) {
      const uint16_t *got = out_bits + ((size_t)r * MAX_TOKENS + i) * D;
      if (i >= seq_lens_v[r]) { /* past the request: must be untouched */
        for (int d = 0; d < D; d++) bad += got[d] != sentinel;
        continue;
      }
      const uint16_t *orig = k_bits + (size_t)(t++) * D;
      for (int b0 = 0; b0 < DSV4KV_NOPE_DIM; b0 += 64) {
        double amax = 0.0;
        for (int d = b0; d < b0 + 64; d++) amax = fmax(amax, fabs(bf16_to_f32(orig[d])));
        int e;
        double m = frexp(fmax(amax, 1e-4) / 448.0, &e); /* scale: smallest 2^e >= amax/448 */
        double scale = ldexp(1.0, m == 0.5 ? e - 1 : e);
        for (int d = b0; d < b0 + 64; d++) {
          double x = bf16_to_f32(orig[d]), err = fabs(bf16_to_f32(got[d]) - x);
          if (!(err <= fabs(x) / 16.0 + scale / 1024.0)) bad++;
          if (amax > 0 && err / amax > max_rel) max_rel = err / amax;
          checked++;
        }
      }
      for (int d = DSV4KV_NOPE_DIM; d < D; d++, checked++) bad += got[d] != orig[d];
    }
  }

  printf("dsv4kv %s: %d tokens of %d requests, %s records (%d B/token), %d pages of %d tokens\n",
         dsv4kv_version(), T, R, dsv4kv_record_name(cache.record),
         (int)dsv4kv_record_bytes(cache.record), NUM_PAGES, BLOCK);
  printf("round trip: %lld values checked, max |err|/block amax = %.4f, %lld outside the bound\n",
         (long long)checked, max_rel, (long long)bad);
  printf("%s\n", bad == 0 ? "OK" : "FAILED");
  free(k_bits);
  free(slot_ids);
  free(cache_bytes);
  free(out_bits);
  return bad == 0 ? 0 : 1;
}
