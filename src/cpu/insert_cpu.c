/* CPU quantize_and_insert_k_cache (SPEC §3): rows in page order on the
 * pool's threads (src/cpu/paged_rows.c), each record by the scalar
 * reference (formats/ref.h) or the processor's SIMD path (byte-identical). */
#include "cpu/cpu.h"
#include "formats/ref.h"

/* Rows of k prefetched ahead: rows go in page order, which for a prefill's
 * slots is row order, and on the Intel machine of this workplace the
 * hardware prefetchers left a 1 KiB row's loads waiting (1 thread, >= 64k
 * rows: 30-35 % faster; a Zen 4 had shown no change at distance 4). */
enum { INSERT_PREFETCH = 2 };

typedef struct {
  const insert_args *a;
  const exec_opts *o;
  dsv4kv_report *r;
  int fnuz, nt; /* nt: non-temporal record stores (cpu_insert says when) */
  cpu_path_kind path;
} insert_job;

static void insert_bad_slot(void *vctx, int64_t t, int64_t slot) {
  const insert_job *j = vctx;
  cpu_note(j->r, t, SKIP_SLOT, t, slot, j->a->cache.num_pages * j->a->cache.block_size, 0, 0, 0);
}

/* One row into its slot; returns the row's non-finite inputs (counted for
 * every row with a valid slot, also one a later row overwrites, so the count
 * never depends on the threads). */
static int64_t insert_row(void *vctx, int64_t t, int64_t slot, const int64_t *ahead, int n_ahead,
                          cpu_row_carry *carry) {
  (void)ahead, (void)n_ahead, (void)carry;
  const insert_job *j = vctx;
  const cache_view *c = &j->a->cache;
  const int64_t bs = c->block_size, pg = slot / bs, p = slot % bs;
  const uint16_t *x = (const uint16_t *)(j->a->k.data + t * j->a->k.stride[0] * 2);
  if (t + INSERT_PREFETCH < j->a->T) {
    const uint8_t *later = j->a->k.data + (t + INSERT_PREFETCH) * j->a->k.stride[0] * 2;
    for (int b = 0; b < HEAD_DIM * 2; b += 64) __builtin_prefetch(later + b);
  }
  uint8_t *page = c->base + pg * c->page_stride;
  uint8_t *values = page + record_values_off(&c->layout, bs, p), *scales = page + record_scales_off(&c->layout, bs, p);
  const int done = j->path == CPU_PATH_AVX512 ? record_quant_avx512(c->record, j->fnuz, x, values, scales, j->nt)
                   : j->path == CPU_PATH_AVX2 ? record_quant_avx2(c->record, j->fnuz, x, values, scales, j->nt)
                                              : 0;
  if (!done) record_quant_ref(c->record, j->fnuz, x, values, scales);
  return j->o->check_nonfinite ? count_nonfinite_bf16(x, HEAD_DIM) : 0;
}

/* Single-thread nanoseconds a row costs, roughly (a cache-resident row on
 * this workplace's machines; avx512: 50 / 56 / 84 ns for V4 / MXFP8 / NVFP4
 * on a Zen 4; avx2: 160 / 190 / 180-220 on a Zen 3): what cpu_team weighs
 * against a worker's wake-up. */
static double row_ns(dsv4kv_record rec, cpu_path_kind path) {
  if (rec == DSV4KV_RECORD_NVFP4) return path == CPU_PATH_AVX512 ? 90 : path == CPU_PATH_AVX2 ? 200 : 7000;
  return path == CPU_PATH_AVX512 ? 60 : path == CPU_PATH_AVX2 ? 180 : 1000;
}

static void insert_finish(void *vctx) {
  const insert_job *j = vctx;
  if (j->nt) cpu_store_fence(); /* the records visible before the call returns */
}

dsv4kv_status cpu_insert(const insert_args *a, const exec_opts *o, dsv4kv_report *r) {
  const cache_view *c = &a->cache;
  insert_job j = {a, o, r, c->fp8 == DSV4KV_FP8_FNUZ, 0, cpu_path_now()};
  /* V4 records far larger than the caches go straight to memory: a normal
   * store first reads each line it fills, and the 576 value bytes are whole
   * lines when pages are 64-byte aligned: 64k tokens on 1 thread ran about a
   * third faster on a Zen 4.  The 8-byte scales take normal stores: streamed,
   * a line of them fills over 8 rows, and the Intel machine of this
   * workplace flushed it part-filled (the inserts at >= 64k tokens ran at
   * 34 % of the memcpy, 44-48 % with the scales cached).  The avx2 path
   * streams them too: on a Zen 3 (2 threads) 65536 rows 3.59 -> 3.23 ms,
   * 524288 30.3 -> 28.5 ms.  MXFP8's 528-byte records split lines, but a
   * page's rows come in slot order, so its streamed 16-byte pieces fill
   * each line from one thread in a row (avx512 path): on this workplace's
   * Zen 4, with the two builds alternated call by call in one process
   * (bench/cpu_ab.c; bench/results/cpu.md, eighteenth session), 65536 /
   * 524288 rows took 15 / 9 % less time on 2 threads, 7 % less on 1.
   * (Earlier A/Bs of separate processes, under this VM's memcpy swings of
   * 20-40 GB/s, had read it as slower.)  NVFP4's records streamed in
   * 32-byte pieces: 2 threads 524288 rows -5 %, 65536 +7 %, 1 thread +4 %:
   * not kept. */
  j.nt = (c->record == DSV4KV_RECORD_V4 ? j.path != CPU_PATH_SCALAR
                                         : c->record == DSV4KV_RECORD_MXFP8 && j.path == CPU_PATH_AVX512) &&
         (double)a->T * c->layout.record_bytes > cpu_nt_min_bytes() && (uintptr_t)c->base % 64 == 0 &&
         c->page_stride % 64 == 0;
  const int nt = cpu_team(o, (double)a->T * row_ns(c->record, j.path));
  const cpu_paged_rows p = {&a->slots, a->T, c->block_size, c->num_pages * c->block_size, /* no overflow */
                            insert_bad_slot, insert_row, &j, insert_finish};
  int64_t nonfinite = 0;
  dsv4kv_status st = cpu_rows_by_page(&p, nt, &nonfinite);
  r->nonfinite = nonfinite;
  return st;
}
