/* The writers' row order (insert, indexer store): every row whose slot is
 * valid, rows of one page on one thread in row order.  Rows naming one slot
 * then meet on one thread in row order and the later one wins, as in a
 * sequential loop, whatever the team and however the chunks fall.
 *
 * With more than one thread, or BUCKETED_MIN_ROWS rows or more, the pages
 * are spread over B buckets (page % B, B >= 16 per thread, at least 32, a
 * power of two): one counting pass over the slots on the calling
 * thread, a stable scatter of the row numbers, then the threads take whole
 * buckets from a shared counter.  Sixteen buckets a thread let one that
 * another process delays hand most of its share to the others (static page
 * ownership made the whole call wait for it); the pass costs ~2 ns a row
 * against ~150-700 ns of quantization. */
#include <stdlib.h>

#include "cpu/cpu.h"

/* Rows from which even one thread takes the bucketed order: measured on
 * this workplace's Xeon (bench, page-shuffled slots, 1 thread, 64k-512k
 * rows), row order ran V4 inserts at 3.3 GB/s and MXFP8 at 1.6, the
 * bucketed order at 4.6 and 4.2 (NVFP4 5.6-6.1 / 5.8-6.4); not understood
 * (no hardware counters in this VM); at 4096 rows 4.2 / 4.4. */
enum { BUCKETS_PER_THREAD = 16, MAX_BUCKETS = 1024, BUCKETED_MIN_ROWS = 1024 };

typedef struct {
  const cpu_paged_rows *p;
  const int64_t *start; /* [B + 1]: bucket b's rows are order[start[b] .. start[b+1]) */
  const int64_t *order;
  cpu_chunks buckets;
  _Atomic int64_t sum;
} bucket_job;

static void bucket_task(void *vctx, int t, int nt) {
  bucket_job *j = vctx;
  const cpu_paged_rows *p = j->p;
  int64_t lo, hi, sum = 0;
  cpu_row_carry carry;
  carry.n = carry.at = 0;
  while (cpu_chunk_next(&j->buckets, &lo, &hi))
    for (int64_t b = lo; b < hi; b++)
      for (int64_t i = j->start[b]; i < j->start[b + 1]; i++) {
        const int64_t row = j->order[i], left = j->start[b + 1] - i - 1;
        /* Read again, so checked again: slot_mapping may lie in memory the
         * rows write (the cache, against the contract: the bytes are then
         * undefined, but nothing may land outside the outputs). */
        const int64_t slot = tv_i64_1(p->slots, row);
        if (slot < 0 || slot >= p->num_slots) continue;
        sum += p->row(p->ctx, row, slot, j->order + i + 1,
                      (int)(left < CPU_ROWS_AHEAD ? left : CPU_ROWS_AHEAD), &carry);
      }
  if (p->finish) p->finish(p->ctx);
  atomic_fetch_add_explicit(&j->sum, sum, memory_order_relaxed);
  (void)t, (void)nt;
}

static int is_bad(const cpu_paged_rows *p, int64_t slot) { return slot != -1 && (slot < 0 || slot >= p->num_slots); }

/* Both passes below keep the current bucket's count in a register while
 * rows stay in it (a page's rows usually follow each other): a counter in
 * memory bumped row after row waited on its own store every row. */

/* Each row's bucket (UINT16_MAX: it writes nothing; bad slots noted), and
 * start[b + 1] += the rows of bucket b. */
static void count_buckets(const cpu_paged_rows *p, int64_t B, uint16_t *bucket, int64_t *start) {
  const int pow2 = (p->bs & (p->bs - 1)) == 0;
  int shift = 0;
  while (pow2 && ((int64_t)1 << shift) < p->bs) shift++;
  int64_t cur = -1, run = 0; /* rows of bucket cur since it was last stored */
  for (int64_t t = 0; t < p->T; t++) {
    const int64_t slot = tv_i64_1(p->slots, t);
    uint16_t b = UINT16_MAX; /* not written */
    if (is_bad(p, slot)) {
      p->bad_slot(p->ctx, t, slot);
    } else if (slot != -1) {
      b = (uint16_t)((pow2 ? slot >> shift : slot / p->bs) & (B - 1));
      if (b != cur) {
        if (cur >= 0) start[cur + 1] += run;
        cur = b, run = 0;
      }
      run++;
    }
    bucket[t] = b;
  }
  if (cur >= 0) start[cur + 1] += run;
}

/* The rows of bucket b, in row order, into order[start[b] .. start[b + 1]). */
static void scatter_rows(int64_t T, int64_t B, const uint16_t *bucket, const int64_t *start, int64_t *order) {
  int64_t fill[MAX_BUCKETS];
  for (int64_t b = 0; b < B; b++) fill[b] = start[b];
  int64_t cur = -1, at = 0; /* where bucket cur's next row goes */
  for (int64_t t = 0; t < T; t++) {
    const int64_t b = bucket[t];
    if (b == UINT16_MAX) continue;
    if (b != cur) {
      if (cur >= 0) fill[cur] = at;
      cur = b, at = fill[b];
    }
    order[at++] = t;
  }
}

dsv4kv_status cpu_rows_by_page(const cpu_paged_rows *p, int nt, int64_t *sum) {
  *sum = 0;
  if (nt <= 1 && p->T < BUCKETED_MIN_ROWS) {
    cpu_row_carry carry;
    carry.n = carry.at = 0;
    /* the rows after t, whatever their slots (a hint): seq[i] = base + 1 + i,
     * refilled every CPU_ROWS_AHEAD rows rather than a row */
    int64_t seq[2 * CPU_ROWS_AHEAD], base = -2 * CPU_ROWS_AHEAD;
    for (int64_t t = 0; t < p->T; t++) {
      const int64_t slot = tv_i64_1(p->slots, t);
      if (slot == -1) continue;
      if (is_bad(p, slot)) {
        p->bad_slot(p->ctx, t, slot);
        continue;
      }
      if (t - base >= CPU_ROWS_AHEAD) {
        base = t;
        for (int i = 0; i < 2 * CPU_ROWS_AHEAD; i++) seq[i] = base + 1 + i;
      }
      const int64_t left = p->T - t - 1;
      const int n = (int)(left < CPU_ROWS_AHEAD ? left : CPU_ROWS_AHEAD);
      *sum += p->row(p->ctx, t, slot, seq + (t - base), n, &carry);
    }
    if (p->finish) p->finish(p->ctx);
    return DSV4KV_OK;
  }
  int64_t B = 2 * BUCKETS_PER_THREAD; /* a power of two: the bucket is a mask, not a division */
  while (B < (int64_t)nt * BUCKETS_PER_THREAD && B < MAX_BUCKETS) B *= 2;
  int64_t start[MAX_BUCKETS + 1] = {0};
  uint16_t *bucket = malloc((size_t)p->T * sizeof *bucket + 1);
  int64_t *order = malloc((size_t)p->T * sizeof *order + 1);
  if (!bucket || !order) {
    free(bucket);
    free(order);
    return dsv4kv_fail(DSV4KV_ERR_ALLOC, "out of memory ordering %lld rows by page", (long long)p->T);
  }
  count_buckets(p, B, bucket, start);
  for (int64_t b = 0; b < B; b++) start[b + 1] += start[b];
  scatter_rows(p->T, B, bucket, start, order);
  free(bucket);
  bucket_job j = {p, start, order, {0}, 0};
  cpu_chunks_init(&j.buckets, B, 1);
  atomic_init(&j.sum, 0);
  cpu_run(nt, bucket_task, &j);
  free(order);
  *sum = atomic_load(&j.sum);
  return DSV4KV_OK;
}
