/* CPU index preparation (SPEC §5, NUMERICS §4).  Integer arithmetic follows
 * the reference's int32 (wrapping) results; every table lookup is
 * bounds-checked first, and a lookup that fails writes -1 and is counted. */
#include "cpu/cpu.h"

/* The reference computes slots in int32; wrap the same way without UB. */
static inline int32_t wrap32(int64_t v) { return (int32_t)(uint32_t)(uint64_t)v; }


/* Physical token index of a slot when pages are `span` tokens apart. */
static inline int32_t remap(int64_t v, pagediv d, int64_t span) {
  return v < 0 ? -1 : wrap32(pd_page(d, v) * span + pd_off(d, v));
}

/* ---- §5.1 ---------------------------------------------------------------- */
/* Rows a thread takes at a time (index ops): a few us to tens of us each. */
enum { ROWS_CHUNK = 16 };

typedef struct {
  const void *a;
  dsv4kv_report *log;
  pagediv pd, pd2;
  cpu_chunks rows;
  int simd; /* rows through a SIMD path: CPU_PATH_AVX512 (src/cpu/index_avx512.c), CPU_PATH_AVX2 (index_avx2.c), 0 */
} rows_job;

static void global_topk_row(const global_topk_args *a, int64_t t, pagediv pd, dsv4kv_report *log) {
  const int64_t bs = a->block_size;
  /* A token marked invalid is padding (e.g. CUDA-graph rows): out-of-range
   * entries of its row are written -1 without a skip; in-range ones keep
   * the reference's bytes (SPEC §7). */
  const int valid = tv_bool_1(&a->valid, t);
  const int64_t req = tv_i32_1(&a->req, t);
  const int req_ok = req >= 0 && req < a->R;
  if (!req_ok && valid) cpu_note(log, skip_key(t, 0, 16), SKIP_TOPK_REQUEST, t, req, a->R, 0, 0, 0);
  int32_t count = 0; /* entries written as slots */
  for (int64_t j = 0; j < a->K; j++) {
    int64_t x = tv_i32_2(&a->topk, t, j);
    int32_t g = -1;
    if (x >= 0 && req_ok) {
      int64_t lp = pd_page(pd, x);
      if (lp < a->P) {
        g = wrap32((int64_t)tv_i32_2(&a->block_table, req, lp) * bs + pd_off(pd, x));
        count++;
      } else if (valid) {
        cpu_note(log, skip_key(t, 1 + j, 16), SKIP_TOPK_COLUMN, t, j, x, req, lp, a->P);
      }
    }
    *tv_i32_2p(&a->global_out, t, j) = g;
  }
  *(int32_t *)(a->lens_out.data + t * a->lens_out.stride[0] * 4) = valid ? count : 0;
}

static void global_topk_task(void *vctx, int t, int nt) {
  rows_job *j = vctx;
  int64_t lo, hi;
  while (cpu_chunk_next(&j->rows, &lo, &hi))
    for (int64_t r = lo; r < hi; r++)
      if (!(j->simd == CPU_PATH_AVX512 ? global_topk_row_avx512(j->a, r, j->pd.shift)
            : j->simd == CPU_PATH_AVX2   ? global_topk_row_avx2(j->a, r, j->pd.shift)
                                         : 0))
        global_topk_row(j->a, r, j->pd, j->log);
  (void)t, (void)nt;
}

dsv4kv_status cpu_global_topk(const global_topk_args *a, const exec_opts *o, dsv4kv_report *log) {
  rows_job j = {a, log, pagediv_of(a->block_size), pagediv_of(1), {0}, 0};
  const cpu_path_kind path = cpu_path_now();
  j.simd = path != CPU_PATH_SCALAR && index_avx512_ok_topk(a, j.pd.shift) ? (int)path : 0;
  cpu_chunks_init(&j.rows, a->T, ROWS_CHUNK);
  /* ~2.2 ns an entry on one thread, ~0.5 on the avx512 path */
  cpu_run(cpu_team(o, (double)a->T * (double)(a->K + 1) * (j.simd ? 0.5 : 2.2)), global_topk_task, &j);
  return DSV4KV_OK;
}

/* ---- §5.2 ---------------------------------------------------------------- */
/* Token t (in [0, T)) of request r. */
/* simd: the row's stores by combine_row_avx2 where its rows are contiguous */
static void combine_token(const combine_args *a, int64_t base, int64_t r, int64_t t, dsv4kv_report *log, int simd) {
  const int64_t qs = tv_i32_1(&a->qsl, r) - base, qe = tv_i32_1(&a->qsl, r + 1) - base;
  const int64_t seq_len = tv_i32_1(&a->seq_lens, r);
  const int64_t start_pos = seq_len - (qe - qs);
  const int64_t gather_start = seq_len - tv_i32_1(&a->gather_lens, r);
  const int64_t Mr = (int64_t)a->M * r, t_lo = qs > 0 ? qs : 0;
  const int64_t pos = start_pos + (t - qs);
  int64_t topk_len = 0;
  if (a->compress_ratio > 0) {
    topk_len = (pos + 1) / a->compress_ratio;
    if (topk_len > a->topk_n) topk_len = a->topk_n;
  }
  int64_t swa_start = pos - a->window_size + 1;
  if (swa_start < 0) swa_start = 0;
  if (swa_start < gather_start) swa_start = gather_start;
  int64_t swa_len = pos - swa_start + 1; /* <= window_size */
  /* Negative only when the lengths disagree (a position before 0, or
   * gather_lens shorter than the query): clamped, so the consumer's reads
   * stay inside the row (SPEC §7). */
  if (topk_len < 0) {
    cpu_note(log, skip_key(r, 1 + (t - t_lo), 32), SKIP_LENGTH_CLAMPED, t, LEN_TOPK_BEFORE_START, topk_len, 0, r,
             a->topk_n);
    topk_len = 0;
  }
  if (swa_len < 0) {
    cpu_note(log, skip_key(r, 1 + (t - t_lo), 32), SKIP_LENGTH_CLAMPED, t, LEN_SWA_NEGATIVE, swa_len, 0, r,
             a->window_size);
    swa_len = 0;
  }
  const int64_t first = Mr + a->N + (swa_start - gather_start);
  if (simd && a->topk.stride[1] == 1 && a->combined.stride[1] == 1) {
    combine_row_avx2((int32_t *)(a->combined.data + t * a->combined.stride[0] * 4),
                     (const int32_t *)(a->topk.data + t * a->topk.stride[0] * 4), topk_len, Mr, first, swa_len);
  } else {
    for (int64_t j = 0; j < topk_len; j++) *tv_i32_2p(&a->combined, t, j) = wrap32(tv_i32_2(&a->topk, t, j) + Mr);
    for (int64_t j = 0; j < swa_len; j++) *tv_i32_2p(&a->combined, t, topk_len + j) = wrap32(first + j);
  }
  *(int32_t *)(a->lens.data + t * a->lens.stride[0] * 4) = wrap32(topk_len + swa_len);
}

/* Tokens of request r outside [0, T) are counted in bulk (the loop never
 * follows a query_start_loc VALUE past the rows that exist); its rows in
 * [*t_lo, *t_hi). */
static void combine_rows(const combine_args *a, int64_t base, int64_t r, dsv4kv_report *log, int64_t *t_lo,
                         int64_t *t_hi) {
  const int64_t qs = tv_i32_1(&a->qsl, r) - base, qe = tv_i32_1(&a->qsl, r + 1) - base;
  *t_lo = qs > 0 ? qs : 0, *t_hi = qe < a->T ? qe : a->T;
  const int64_t outside = qe > qs ? (qe - qs) - (*t_hi > *t_lo ? *t_hi - *t_lo : 0) : 0;
  if (outside > 0) cpu_note_n(log, outside, skip_key(r, 0, 32), SKIP_COMBINE_ROWS, r, qs, qe, a->T, 0, 0);
}

/* Monotone query_start_loc: request r owns tokens [qsl[r], qsl[r+1]), so a
 * thread walks its chunks' tokens with a request cursor that only moves on. */
static void combine_task(void *vctx, int t, int nt) {
  rows_job *j = vctx;
  const combine_args *a = j->a;
  const int64_t base = tv_i32_1(&a->qsl, 0);
  int64_t r = 0, lo, hi;
  while (cpu_chunk_next(&j->rows, &lo, &hi))
    for (int64_t tok = lo; tok < hi; tok++) {
      while (r < a->R && tok >= tv_i32_1(&a->qsl, r + 1) - base) r++;
      if (r == a->R) return; /* past the last request: not written */
      combine_token(a, base, r, tok, j->log, j->simd);
    }
  (void)t, (void)nt;
}

dsv4kv_status cpu_combine(const combine_args *a, const exec_opts *o, dsv4kv_report *log) {
  const int64_t base = tv_i32_1(&a->qsl, 0);
  const int simd = cpu_path_now() != CPU_PATH_SCALAR;
  int monotone = 1;
  for (int64_t r = 0; r < a->R && monotone; r++) monotone = tv_i32_1(&a->qsl, r + 1) >= tv_i32_1(&a->qsl, r);
  /* ~0.1 ns an entry on one thread (a store stream) */
  const int nt = monotone ? cpu_team(o, (double)a->T * ((double)a->topk_n + a->window_size + 1) * 0.1) : 1;
  if (nt <= 1) { /* requests in order: overlapping query ranges (malformed input) give the sequential bytes */
    for (int64_t r = 0; r < a->R; r++) {
      int64_t t_lo, t_hi;
      combine_rows(a, base, r, log, &t_lo, &t_hi);
      for (int64_t t = t_lo; t < t_hi; t++) combine_token(a, base, r, t, log, simd);
    }
    return DSV4KV_OK;
  }
  for (int64_t r = 0; r < a->R; r++) {
    int64_t t_lo, t_hi;
    combine_rows(a, base, r, log, &t_lo, &t_hi);
  }
  rows_job j = {a, log, pagediv_of(1), pagediv_of(1), {0}, simd};
  cpu_chunks_init(&j.rows, a->T, ROWS_CHUNK * 4);
  cpu_run(nt, combine_task, &j);
  return DSV4KV_OK;
}

/* ---- §5.3 ---------------------------------------------------------------- */

/* Slot of position `pos` of request `req` through a block table, or -1 when
 * the lookup would leave the table (counted unless `log` is NULL: padding). */
static int64_t slot_of(const tview *bt, int which, int64_t req, int64_t pos, pagediv d,
                       dsv4kv_report *log, int64_t key) {
  int64_t lp = pos < 0 ? -1 : pd_page(d, pos);
  if (req < 0 || req >= bt->shape[0] || pos < 0 || lp >= bt->shape[1]) {
    if (log) cpu_note(log, key, SKIP_TABLE_LOOKUP, which, req, lp, pos, bt->shape[0], bt->shape[1]);
    return -1;
  }
  return (int64_t)wrap32((int64_t)tv_i32_2(bt, req, lp) * d.bs + pd_off(d, pos));
}

static void flashinfer_decode_row(const flashinfer_args *a, int64_t d, pagediv swa, pagediv cmp,
                                  dsv4kv_report *log) {
  const int64_t S = a->S;
  for (int64_t j = 0; j < S; j++)
    *tv_i32_2p(&a->out, d, j) = remap(tv_i32_2(&a->dswa, d, j), swa, a->swa_span);
  /* An invalid token is padding: its failed lookups are not skips (SPEC §7). */
  const int token_valid = a->has_dvalid ? tv_bool_1(&a->dvalid, d) : 1;
  dsv4kv_report *note = token_valid ? log : NULL;
  const int64_t req = tv_i32_1(&a->req, d);
  int64_t count = 0;
  for (int64_t j = 0; j < a->K4; j++) {
    int64_t v = j < a->Dk ? tv_i32_2(&a->dcomp, d, j) : -1;
    if (a->local && v >= 0) {
      v = slot_of(&a->comp_bt, 1, req, v, cmp, note, skip_key(d, 1 + j, 16));
      if (v >= 0 && token_valid) count++;
    }
    *tv_i32_2p(&a->out, d, S + j) = remap(v, cmp, a->c_span);
  }
  int64_t n = 0;
  if (a->Dk > 0) n = a->local ? count : a->has_dcomp_lens ? tv_i32_1(&a->dcomp_lens, d) : a->Dk;
  if (n < 0 || n > a->Dk) { /* a length input past its row: clamped (SPEC §7) */
    int64_t w = n < 0 ? 0 : a->Dk;
    if (note) cpu_note(note, skip_key(d, 0, 16), SKIP_LENGTH_CLAMPED, d, LEN_DECODE_COMPRESSED, n, w, req, a->Dk);
    n = w;
  }
  *(int32_t *)(a->lens.data + d * a->lens.stride[0] * 4) = wrap32(S + n);
}

void cpu_fi_prefill_span(const flashinfer_args *a, int64_t t, int64_t req, int64_t *swa_start, int64_t *swa_len,
                         int64_t *topk_len) {
  const int64_t q0 = tv_i32_1(&a->qsl, req), q1 = tv_i32_1(&a->qsl, req + 1);
  const int64_t pos = tv_i32_1(&a->seq_lens, req) - (q1 - q0) + (t - q0);
  int64_t start = pos - a->window_size + 1;
  if (start < 0) start = 0;
  const int64_t replay = tv_i32_1(&a->replay, req);
  if (start < replay) start = replay;
  *swa_start = start;
  *swa_len = pos - start + 1;
  *topk_len = 0;
  if (a->compress_ratio > 0) {
    *topk_len = (pos + 1) / a->compress_ratio;
    if (*topk_len > a->topk) *topk_len = a->topk;
  }
}

static void flashinfer_prefill_row(const flashinfer_args *a, int64_t t, pagediv swa, pagediv cmp,
                                   dsv4kv_report *log) {
  const int64_t S = a->S, i = t - a->D;
  const int64_t req = tv_i32_1(&a->req, t);
  int32_t *lens = (int32_t *)(a->lens.data + t * a->lens.stride[0] * 4);
  if (req < 0 || req >= a->R) {
    cpu_note(log, skip_key(t, 0, 16), SKIP_FLASHINFER_REQUEST, t, req, a->R, 0, 0, 0);
    for (int64_t j = 0; j < S + a->K4; j++) *tv_i32_2p(&a->out, t, j) = -1;
    *lens = 0;
    return;
  }
  int64_t swa_start, swa_len, topk_len;
  cpu_fi_prefill_span(a, t, req, &swa_start, &swa_len, &topk_len);
  /* Below 0 (a position before 0) or past the top-k tensor's width: the
   * length would promise entries the row does not hold (SPEC §7). */
  if (topk_len < 0 || topk_len > a->Wp) {
    int64_t w = topk_len < 0 ? 0 : a->Wp;
    cpu_note(log, skip_key(t, 0, 16), SKIP_LENGTH_CLAMPED, t, topk_len < 0 ? LEN_TOPK_BEFORE_START : LEN_PREFILL_TOPK_WIDTH,
             topk_len, w, req, a->Wp < a->topk ? a->Wp : a->topk);
    topk_len = w;
  }
  for (int64_t j = 0; j < S; j++) {
    int64_t v = -1;
    if (j < swa_len) v = slot_of(&a->swa_bt, 0, req, swa_start + j, swa, log, skip_key(t, 1 + j, 16));
    *tv_i32_2p(&a->out, t, j) = remap(v, swa, a->swa_span);
  }
  for (int64_t j = 0; j < a->K4; j++) {
    int64_t x = j < topk_len ? tv_i32_2(&a->ptopk, i, j) : -1;
    int64_t v = x >= 0 ? slot_of(&a->comp_bt, 1, req, x, cmp, log, skip_key(t, 1 + S + j, 16)) : -1;
    *tv_i32_2p(&a->out, t, S + j) = remap(v, cmp, a->c_span);
  }
  *lens = wrap32(S + topk_len);
}

static void flashinfer_task(void *vctx, int t, int nt) {
  rows_job *j = vctx;
  const flashinfer_args *a = j->a;
  int64_t lo, hi;
  while (cpu_chunk_next(&j->rows, &lo, &hi))
    for (int64_t r = lo; r < hi; r++) {
      if (j->simd == CPU_PATH_AVX512 ? flashinfer_row_avx512(a, r, j->pd.shift, j->pd2.shift)
          : j->simd == CPU_PATH_AVX2 ? flashinfer_row_avx2(a, r, j->pd.shift, j->pd2.shift)
                                     : 0)
        continue;
      if (r < a->D)
        flashinfer_decode_row(a, r, j->pd, j->pd2, j->log);
      else
        flashinfer_prefill_row(a, r, j->pd, j->pd2, j->log);
    }
  (void)t, (void)nt;
}

dsv4kv_status cpu_flashinfer(const flashinfer_args *a, const exec_opts *o, dsv4kv_report *log) {
  rows_job j = {a, log, pagediv_of(a->swa_bs), pagediv_of(a->c_bs), {0}, 0};
  const cpu_path_kind path = cpu_path_now();
  j.simd = path != CPU_PATH_SCALAR && index_avx512_ok_flashinfer(a, j.pd.shift, j.pd2.shift) ? (int)path : 0;
  cpu_chunks_init(&j.rows, a->D + a->P, ROWS_CHUNK);
  /* ~1.5 ns an entry on one thread, ~0.6 on the avx512 path */
  cpu_run(cpu_team(o, (double)(a->D + a->P) * (double)(a->S + a->K4 + 1) * (j.simd ? 0.6 : 1.5)), flashinfer_task, &j);
  return DSV4KV_OK;
}
