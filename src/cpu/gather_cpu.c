/* CPU dequantize_and_gather_k_cache (NUMERICS §3): the flattened (request,
 * token) space in chunks on the pool's threads (src/cpu/pool.c). */
#include <stdlib.h>

#include "cpu/cpu.h"
#include "formats/ref.h"

/* Tokens a thread takes at a time: ~15-80 us of work, so a thread another
 * process delays holds up the call by one chunk at most. */
enum { GATHER_CHUNK = 128 };

/* Records a token's values are prefetched ahead, in its page: a page's
 * records are read in order, but the hardware prefetchers of the Intel
 * machines of this workplace did not keep the cores' misses in flight
 * (64 x 16384 tokens on 2 threads: +10-16 % on every record; on a Zen 4 a
 * distance of 2-8 had made no difference). */
enum { GATHER_PREFETCH = 2 };

typedef struct {
  const gather_args *a;
  dsv4kv_report *log;
  const int64_t *first, *lo, *start;
  int fnuz, nt; /* nt: non-temporal row stores (cpu_gather says when) */
  cpu_path_kind path; /* the path's dequantization, bytes as the reference's */
  cpu_chunks chunks;
} gather_job;

/* Token g of the flattened (request, token) space, request r. */
static void gather_token(const gather_job *j, int64_t r, int64_t g) {
  const gather_args *a = j->a;
  const cache_view *c = &a->cache;
  const int64_t bs = c->block_size;
  const int64_t i = j->lo[r] + (g - j->first[r]);
  const int64_t pos = j->start[r] + i; /* >= 0: i >= lo[r] = max(0, L - seq_len) */
  const int64_t row = a->offset + i;   /* < max_tokens */
  const int64_t key = skip_key(r, i, 32);
  const int64_t lp = pos / bs, max_pages = a->block_table.shape[1];
  if (lp >= max_pages) {
    cpu_note(j->log, key, SKIP_GATHER_COLUMN, r, pos, lp, max_pages, 0, 0);
    return;
  }
  const int64_t page = tv_i32_2(&a->block_table, r, lp);
  if (page < 0 || page >= c->num_pages) {
    cpu_note(j->log, key, SKIP_GATHER_PAGE, r, lp, page, c->num_pages, 0, 0);
    return;
  }
  uint16_t *dst = (uint16_t *)(a->out.data + (r * a->out.stride[0] + row * a->out.stride[1]) * 2);
  const uint8_t *pg = c->base + page * c->page_stride;
  const uint8_t *values = pg + record_values_off(&c->layout, bs, pos % bs);
  const uint8_t *scales = pg + record_scales_off(&c->layout, bs, pos % bs);
  if (pos % bs + GATHER_PREFETCH < bs) { /* a record of this page: no index to check */
    const uint8_t *ahead = pg + record_values_off(&c->layout, bs, pos % bs + GATHER_PREFETCH);
    for (int b = 0; b < c->layout.value_bytes; b += 64) __builtin_prefetch(ahead + b);
  }
  switch (j->path) {
    case CPU_PATH_AVX512: record_dequant_avx512(c->record, j->fnuz, values, scales, dst, j->nt); break;
    case CPU_PATH_AVX2: record_dequant_avx2(c->record, j->fnuz, values, scales, dst, j->nt); break;
    case CPU_PATH_SCALAR: record_dequant_ref(c->record, j->fnuz, values, scales, dst); break;
  }
}

static void gather_task(void *vctx, int t, int nt) {
  gather_job *j = vctx;
  int64_t r = 0, lo, hi;
  while (cpu_chunk_next(&j->chunks, &lo, &hi))
    for (int64_t g = lo; g < hi; g++) {
      while (j->first[r + 1] <= g) r++; /* monotone: a thread's chunks come in increasing order */
      gather_token(j, r, g);
    }
  if (j->nt) cpu_store_fence(); /* the rows visible before the call returns */
  (void)t, (void)nt;
}

dsv4kv_status cpu_gather(const gather_args *a, const exec_opts *o, dsv4kv_report *log) {
  const cache_view *c = &a->cache;
  const int64_t max_tokens = a->out.shape[1];
  const int fnuz = c->fp8 == DSV4KV_FP8_FNUZ;
  /* Per request, the tokens i in [lo, hi) of its L that can be gathered:
   * position seq_len - L + i >= 0 and row offset + i < max_tokens.  The rest
   * are counted in bulk (the work never follows a length VALUE past what out
   * can hold); the flattened token space is the prefix sum of hi - lo. */
  /* The lengths are read once, here: `out` may alias them (or another
   * thread rewrite them) while rows are written, and the bounds below hold
   * only for the values they were derived from. */
  int64_t *first = malloc((size_t)(a->R + 1) * sizeof *first);
  int64_t *lo = malloc((size_t)(a->R + 1) * sizeof *lo);
  int64_t *start = malloc((size_t)(a->R + 1) * sizeof *start); /* seq_len - L: position of token 0 */
  if (!first || !lo || !start) {
    free(first);
    free(lo);
    free(start);
    return dsv4kv_fail(DSV4KV_ERR_ALLOC, "out of memory planning the gather");
  }
  const int64_t rows_left = a->offset < max_tokens ? max_tokens - a->offset : 0;
  first[0] = 0;
  for (int64_t r = 0; r < a->R; r++) {
    int64_t seq_len = tv_i32_1(&a->seq_lens, r);
    int64_t L = a->has_gather_lens ? tv_i32_1(&a->gather_lens, r) : seq_len;
    int64_t l = 0, h = 0;
    if (L < 0) {
      cpu_note(log, skip_key(r, 0, 32), SKIP_LEN_NEGATIVE, r, L, a->has_gather_lens, 0, 0, 0);
    } else {
      l = L > seq_len ? L - seq_len : 0;
      h = L < rows_left ? L : rows_left;
      if (l > h) l = h;
      if (l > 0)
        cpu_note_n(log, l, skip_key(r, 0, 32), SKIP_LEN_PAST_SEQ, r, L, seq_len, 0, 0, 0);
      if (h < L)
        cpu_note_n(log, L - h, skip_key(r, h, 32), SKIP_OUT_ROWS, r, L - h, a->offset, h, max_tokens, 0);
    }
    lo[r] = l;
    start[r] = seq_len - L;
    first[r + 1] = first[r] + (h - l);
  }
  const int64_t total = first[a->R];

  gather_job job = {a, log, first, lo, start, fnuz, 0, cpu_path_now(), {0}};
  /* Outputs far larger than the caches go straight to memory: a normal
   * store first reads each line it fills (1024 bytes read for the 1024
   * written, beside the record's 288-584).  Smaller outputs stay cached for
   * the attention that reads them next.  On a Zen 3 (avx2, 2 threads, 64 x
   * 16384) streaming took V4 from 58.8 to 53.5 ms, MXFP8 62.1 -> 58.5,
   * NVFP4 60.5 -> 57.4 (bench/results/cpu.md, seventh session). */
  job.nt = job.path != CPU_PATH_SCALAR && (double)total * 1024.0 > cpu_nt_min_bytes() &&
           (uintptr_t)a->out.data % 64 == 0 && a->out.stride[0] % 32 == 0 && a->out.stride[1] % 32 == 0 && /* 64 bytes */
           a->offset >= 0;
  cpu_chunks_init(&job.chunks, total, GATHER_CHUNK);
  /* ~150 ns a token on one thread on the avx512 path, ~1.3 us scalar */
  cpu_run(cpu_team(o, (double)total * (job.path == CPU_PATH_SCALAR ? 1300 : job.path == CPU_PATH_AVX2 ? 250 : 150)),
          gather_task, &job);
  free(first);
  free(lo);
  free(start);
  return DSV4KV_OK;
}
