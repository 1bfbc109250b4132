/* CPU dequantize_and_gather_k_cache (NUMERICS §3): one (request, token) per
 * iteration, OpenMP over the flattened (request, token) space. */
#include <inttypes.h>
#include <stdlib.h>

#include "backend.h"
#include "formats/numfmt.h"
#include "formats/records.h"



/* out = bf16(e4m3 * 2^(s-127)), scale byte 0 flushed to 0 and 255 = +Inf. */
static void dequant_fp8_block(const uint8_t *codes, int n, uint8_t scale_byte, int fnuz,
                              uint16_t *out) {
  float s = ue8m0_decode_ftz(scale_byte);
  if (fnuz)
    for (int i = 0; i < n; i++) out[i] = f32_to_bf16(e4m3fnuz_decode(codes[i]) * s);
  else
    for (int i = 0; i < n; i++) out[i] = f32_to_bf16(e4m3_decode(codes[i]) * s);
}

static void dequant_record(const cache_view *c, const uint8_t *page, int64_t p, uint16_t *out) {
  const int fnuz = c->fp8 == DSV4KV_FP8_FNUZ;
  switch (c->record) {
    case DSV4KV_RECORD_V4: {
      const uint8_t *data = page + v4_data_off(p);
      const uint8_t *scales = page + v4_scale_off(c->block_size, p);
      for (int s = 0; s < V4_NUM_SCALES; s++)
        dequant_fp8_block(data + s * V4_BLOCK, V4_BLOCK, scales[s], fnuz, out + s * V4_BLOCK);
      memcpy(out + NOPE_DIM, data + NOPE_DIM, ROPE_DIM * sizeof(uint16_t));
      break;
    }
    case DSV4KV_RECORD_MXFP8: {
      const uint8_t *rec = page + mxfp8_off(p);
      for (int s = 0; s < MXFP8_NUM_SCALES; s++)
        dequant_fp8_block(rec + s * MXFP8_BLOCK, MXFP8_BLOCK, rec[HEAD_DIM + s], fnuz,
                          out + s * MXFP8_BLOCK);
      break;
    }
    default: {
      const uint8_t *rec = page + nvfp4_off(p);
      for (int s = 0; s < NVFP4_NUM_SCALES; s++) {
        float sv = e4m3_decode(rec[HEAD_DIM / 2 + s]); /* products exact in fp32 */
        for (int i = 0; i < NVFP4_BLOCK; i += 2) {
          uint8_t b = rec[(s * NVFP4_BLOCK + i) / 2];
          out[s * NVFP4_BLOCK + i] = f32_to_bf16(e2m1_decode(b & 0xF) * sv);
          out[s * NVFP4_BLOCK + i + 1] = f32_to_bf16(e2m1_decode(b >> 4) * sv);
        }
      }
      break;
    }
  }
}

dsv4kv_status cpu_gather(const gather_args *a, const run_opts *o, skiplog *log) {
  const cache_view *c = &a->cache;
  const int64_t bs = c->block_size;
  const int64_t max_tokens = a->out.shape[1];
  const int64_t max_pages = a->block_table.shape[1];
  /* Per request, the tokens i in [lo, hi) of its L that can be gathered:
   * position seq_len - L + i >= 0 and row offset + i < max_tokens.  The rest
   * are counted in bulk (the work never follows a length VALUE past what out
   * can hold); the flattened token space is the prefix sum of hi - lo. */
  int64_t *first = malloc((size_t)(a->R + 1) * sizeof *first);
  int64_t *lo = malloc((size_t)(a->R + 1) * sizeof *lo);
  if (!first || !lo) {
    free(first);
    free(lo);
    return dsv4kv_fail(DSV4KV_ERR_ALLOC, "out of memory planning the gather");
  }
  const int64_t rows_left = a->offset < max_tokens ? max_tokens - a->offset : 0;
  first[0] = 0;
  for (int64_t r = 0; r < a->R; r++) {
    int64_t seq_len = tv_i32_1(&a->seq_lens, r);
    int64_t L = a->has_gather_lens ? tv_i32_1(&a->gather_lens, r) : seq_len;
    int64_t l = 0, h = 0;
    if (L < 0) {
      skiplog_note(log, skip_key(r, 0, 32), "%s[%" PRId64 "] = %" PRId64 " is negative",
                   a->has_gather_lens ? "gather_lens" : "seq_lens", r, L);
    } else {
      l = L > seq_len ? L - seq_len : 0;
      h = L < rows_left ? L : rows_left;
      if (l > h) l = h;
      if (l > 0)
        skiplog_note_n(log, l, skip_key(r, 0, 32), "request %" PRId64 ": gather length %" PRId64 " exceeds seq_lens[%" PRId64
                       "] = %" PRId64, r, L, r, seq_len);
      if (h < L)
        skiplog_note_n(log, L - h, skip_key(r, h, 32), "request %" PRId64 ": %" PRId64
                       " tokens would land at out rows from offset %" PRId64 " + %" PRId64
                       ", past out's %" PRId64 " rows", r, L - h, a->offset, h, max_tokens);
    }
    lo[r] = l;
    first[r + 1] = first[r] + (h - l);
  }
  const int64_t total = first[a->R];

  const int nt = threads_for(o, total, 64);
#pragma omp parallel num_threads(nt) if (nt > 1)
  {
    int64_t r = 0;
#pragma omp for schedule(static)
    for (int64_t g = 0; g < total; g++) {
      while (first[r + 1] <= g) r++; /* monotone within a thread's static chunk */
      const int64_t seq_len = tv_i32_1(&a->seq_lens, r);
      const int64_t L = a->has_gather_lens ? tv_i32_1(&a->gather_lens, r) : seq_len;
      const int64_t i = lo[r] + (g - first[r]);
      const int64_t pos = seq_len - L + i; /* >= 0 */
      const int64_t row = a->offset + i;   /* < max_tokens */
      const int64_t key = skip_key(r, i, 32);
      int64_t lp = pos / bs;
      if (lp >= max_pages) {
        skiplog_note(log, key, "request %" PRId64 ": position %" PRId64 " needs block_table[%" PRId64 "][%" PRId64
                     "], past its %" PRId64 " columns", r, pos, r, lp, max_pages);
        continue;
      }
      int64_t page = tv_i32_2(&a->block_table, r, lp);
      if (page < 0 || page >= c->num_pages) {
        skiplog_note(log, key, "block_table[%" PRId64 "][%" PRId64 "] = %" PRId64 " is outside k_cache's pages [0, %" PRId64 ")",
                     r, lp, page, c->num_pages);
        continue;
      }
      uint16_t *dst = (uint16_t *)(a->out.data + (r * a->out.stride[0] + row * a->out.stride[1]) * 2);
      dequant_record(c, c->base + page * c->page_stride, pos % bs, dst);
    }
  }
  free(first);
  free(lo);
  return DSV4KV_OK;
}
