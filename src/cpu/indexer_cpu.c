/* CPU indexer_k_norm_rope_store (SPEC §6): one token per row, the pool
 * over pages (src/cpu/paged_rows.c); RMSNorm + RoPE and the quantizers are the scalar reference
 * (formats/ref.h), placed into the page by the record table. */
#include <stdlib.h>

#include "cpu/cpu.h"
#include "cpu/indexer_scales.h"
#include "formats/ref.h"

/* fp32 value of element i of a 1-D / row view of fp32 or bf16 (exact). */
static inline float load_f(const tview *v, dt_kind dt, int64_t off_elems) {
  return dt == DT_F32 ? *(const float *)(v->data + off_elems * 4)
                      : bf16_to_f32(*(const uint16_t *)(v->data + off_elems * 2));
}

/* Places a row's FP8 codes and scale into its page: the codes when tiled
 * (linear ones are quantized in place), the scale as 4 UE8M0 copies with
 * MX_SCALE, else the fp32 2^e. */
static void place_fp8(const cache_view *c, uint8_t *page, int64_t p, const uint8_t *codes, float scale, uint8_t ue) {
  if (c->flags & DSV4KV_CACHE_TILED) /* 16 dims of a position lie together */
    for (int d = 0; d < INDEXER_DIM; d += 16) memcpy(page + idx_tiled_off(p, d), codes + d, 16);
  uint8_t *sc = page + record_scales_off(&c->layout, c->block_size, p);
  if (c->flags & DSV4KV_CACHE_MX_SCALE) {
    memset(sc, ue, INDEXER_FP8_SCALE_BYTES);
  } else {
    uint32_t bits = f32_bits(scale);
    for (int b = 0; b < 4; b++) sc[b] = (uint8_t)(bits >> (8 * b)); /* little-endian */
  }
}

typedef struct {
  const indexer_args *a;
  const exec_opts *o;
  dsv4kv_report *rep;
  cpu_path_kind path; /* avx512 (src/cpu/indexer_avx512.c), avx2 (indexer_avx2.c) or scalar */
  pagediv bsd, crd; /* by the block size / compress ratio: shifts, no division a row */
  float weight[INDEXER_DIM];
  float we[INDEXER_DIM / 2], wo[INDEXER_DIM / 2]; /* the weight's even / odd dims, for that path */
  int simd_ok; /* the SIMD rows need a weight free of NaN (indexer_avx2.c's / indexer_avx512.c's norm_rope) */
} indexer_job;

static void indexer_bad_slot(void *vctx, int64_t t, int64_t slot) {
  const indexer_job *j = vctx;
  cpu_note(j->rep, t, SKIP_SLOT, t, slot, j->a->cache.num_pages * j->a->cache.block_size, 0, 0, 0);
}

/* Row t's k_pre. */
static const uint16_t *k_row(const indexer_job *j, int64_t t) {
  return (const uint16_t *)(j->a->k_pre.data + t * j->a->k_pre.stride[0] * 2);
}

/* Whether row t is one that writes (a group boundary at a position >= 0). */
static int writes(const indexer_job *j, int64_t t) {
  const int64_t pos = tv_i64_1(&j->a->positions, t);
  return pos >= 0 && pd_off(j->crd, pos) == j->a->compress_ratio - 1;
}

/* Row t's rstd and SPEC §7's flag (*norm_bad).  On the SIMD paths the
 * rstd of t and of up to CPU_ROWS_AHEAD - 1 rows after it that write are
 * made at once and kept in the carry: their square roots and divisions,
 * independent of each other, then overlap one another instead of each
 * starting its row's chain (indexer_rstd16_*: the reference's own IEEE
 * operations, indexer_rstd_of_sum's, on vector lanes). */
static float row_rstd(const indexer_job *j, int64_t t, const int64_t *ahead, int n_ahead, cpu_row_carry *c,
                      int *norm_bad) {
  const float eps = j->a->eps;
  if (j->path == CPU_PATH_SCALAR) return indexer_rstd_ref(k_row(j, t), eps, norm_bad);
  while (c->at < c->n && c->row[c->at] != t) c->at++; /* rows skipped since (no rstd taken) */
  if (c->at == c->n) {
    float sum[CPU_ROWS_AHEAD] = {0};
    int n = 0;
    c->row[n++] = t;
    for (int i = 0; i < n_ahead && n < CPU_ROWS_AHEAD; i++)
      if (writes(j, ahead[i])) c->row[n++] = ahead[i];
    for (int i = 0; i < n; i++)
      sum[i] = j->path == CPU_PATH_AVX512 ? indexer_sum_squares_avx512(k_row(j, c->row[i]))
                                         : indexer_sum_squares_avx2(k_row(j, c->row[i]));
    if (j->path == CPU_PATH_AVX512)
      indexer_rstd16_avx512(sum, eps, c->value, c->flag);
    else
      indexer_rstd16_avx2(sum, eps, c->value, c->flag);
    c->at = 0, c->n = n;
  }
  *norm_bad = c->flag[c->at];
  return c->value[c->at++];
}

/* Rows ahead in this thread's order whose inputs are sent to the caches
 * now: the cos / sin row of the 8th, the key row of the 16th (the last the
 * driver names, CPU_ROWS_AHEAD).  The rstd batch (row_rstd) reads 16 key
 * rows in one burst, and the cos / sin rows, 256 bytes each, are read
 * where they are used.  bench/cpu_ab.c, caches evicted before each call as
 * after the bench's memcpy (Zen 4, 2026-12-08, bench/results/cpu.md): T 16384
 * FP8 1 / 2 threads 0.81x / 0.84x the time, MXFP4 0.85x / 0.86x, T 65536 2
 * threads 0.77x, T 4096 0.81x; with every input cache-resident (the same
 * call repeated) 1.03-1.05x at T 4096-8192, 0.89-1.04x at 16384.  Each
 * pointer is formed only for a row index, position and cos / sin row within
 * their tensors. */
enum { COS_SIN_AHEAD = 8, K_AHEAD = CPU_ROWS_AHEAD };

/* Always inlined: as a function of its own gcc 12 found it free of side
 * effects (a prefetch does not count) and dropped its call. */
static inline __attribute__((always_inline)) void prefetch_ahead(const indexer_job *j, const int64_t *ahead,
                                                                 int n_ahead) {
  const indexer_args *a = j->a;
  if (n_ahead >= COS_SIN_AHEAD) {
    const int64_t pos = tv_i64_1(&a->positions, ahead[COS_SIN_AHEAD - 1]);
    const int64_t cp = pos >= 0 ? pd_page(j->crd, pos) * a->compress_ratio : INT64_MAX;
    if (cp < a->cos_sin.shape[0]) {
      const int es = a->cos_sin_dt == DT_F32 ? 4 : 2; /* the row's 64 cos / sin entries: 256 or 128 bytes */
      const uint8_t *cs = a->cos_sin.data + cp * a->cos_sin.stride[0] * es;
      for (int b = 0; b < (INDEXER_DIM - INDEXER_ROPE_FROM) * es; b += 64) __builtin_prefetch(cs + b);
    }
  }
  if (n_ahead >= K_AHEAD) {
    const uint8_t *k = (const uint8_t *)k_row(j, ahead[K_AHEAD - 1]);
    for (int b = 0; b < INDEXER_DIM * 2; b += 64) __builtin_prefetch(k + b);
  }
}

/* One row with a valid slot; returns its non-finite count (SPEC §7). */
static int64_t indexer_row(void *vctx, int64_t t, int64_t slot, const int64_t *ahead, int n_ahead,
                           cpu_row_carry *carry) {
  const indexer_job *j = vctx;
  const indexer_args *a = j->a;
  const cache_view *c = &a->cache;
  const int64_t bs = c->block_size, cr = a->compress_ratio;
  const int64_t pos = tv_i64_1(&a->positions, t);
  if (pos < 0) {
    cpu_note(j->rep, t, SKIP_POSITION_NEGATIVE, t, pos, 0, 0, 0, 0);
    return 0;
  }
  const int64_t grp = pd_page(j->crd, pos); /* pos >= 0 */
  if (pd_off(j->crd, pos) != cr - 1) return 0; /* only group-boundary tokens write (pos + 1) % cr == 0 */
  const int64_t cp = grp * cr;
  if (cp >= a->cos_sin.shape[0]) {
    cpu_note(j->rep, t, SKIP_COS_SIN_ROW, t, pos, cp, a->cos_sin.shape[0], 0, 0);
    return 0;
  }
  const uint16_t *k = k_row(j, t);
  prefetch_ahead(j, ahead, n_ahead);
  int norm_bad;
  const float rstd = row_rstd(j, t, ahead, n_ahead, carry, &norm_bad);
  /* Counted for every row that reaches the store, also one a later row
   * overwrites.  The norm counts once when it alone is non-finite (SPEC §7). */
  int64_t nonfinite = 0;
  if (j->o->check_nonfinite) {
    int64_t in = count_nonfinite_bf16(k, INDEXER_DIM);
    nonfinite = in + (in == 0 && norm_bad);
  }
  float cs_buf[INDEXER_DIM - INDEXER_ROPE_FROM], r[INDEXER_DIM];
  const int64_t row = cp * a->cos_sin.stride[0];
  const float *cos_sin = (const float *)(a->cos_sin.data + row * 4); /* last dim contiguous (src/ops/indexer.c) */
  if (a->cos_sin_dt != DT_F32) {
    for (int i = 0; i < INDEXER_DIM - INDEXER_ROPE_FROM; i++) cs_buf[i] = load_f(&a->cos_sin, a->cos_sin_dt, row + i);
    cos_sin = cs_buf;
  }
  uint8_t *page = c->base + pd_page(j->bsd, slot) * c->page_stride; /* slot >= 0 */
  const int64_t p = pd_off(j->bsd, slot);
  const int fnuz = c->fp8 == DSV4KV_FP8_FNUZ;
  const cpu_path_kind path = j->simd_ok ? j->path : CPU_PATH_SCALAR;
  if (c->record == DSV4KV_RECORD_INDEXER_FP8) {
    uint8_t tiled[INDEXER_DIM], ue;
    uint8_t *codes = (c->flags & DSV4KV_CACHE_TILED) ? tiled : page + record_values_off(&c->layout, bs, p);
    float scale;
    if (!(path == CPU_PATH_AVX512 ? indexer_fp8_avx512(k, j->we, j->wo, cos_sin, rstd, fnuz, codes, &scale, &ue)
          : path == CPU_PATH_AVX2 ? indexer_fp8_avx2(k, j->we, j->wo, cos_sin, rstd, fnuz, codes, &scale, &ue)
                                  : 0)) {
      indexer_norm_rope_ref(k, j->weight, cos_sin, rstd, r);
      indexer_fp8_quant_ref(r, fnuz, codes, &scale, &ue);
    }
    place_fp8(c, page, p, codes, scale, ue);
  } else if (c->record == DSV4KV_RECORD_INDEXER_MXFP4) { /* the others are refused by src/ops/indexer.c */
    uint8_t *values = page + record_values_off(&c->layout, bs, p), *scales = page + record_scales_off(&c->layout, bs, p);
    if (!(path == CPU_PATH_AVX512 ? indexer_mxfp4_avx512(k, j->we, j->wo, cos_sin, rstd, values, scales)
          : path == CPU_PATH_AVX2 ? indexer_mxfp4_avx2(k, j->we, j->wo, cos_sin, rstd, values, scales)
                                  : 0)) {
      indexer_norm_rope_ref(k, j->weight, cos_sin, rstd, r);
      indexer_mxfp4_quant_ref(r, values, scales);
    }
  }
  return nonfinite;
}

dsv4kv_status cpu_indexer_store(const indexer_args *a, const exec_opts *o, dsv4kv_report *rep) {
  const cache_view *c = &a->cache;
  indexer_job j = {a, o, rep, cpu_path_now(), pagediv_of(c->block_size), pagediv_of(a->compress_ratio), {0}, {0}, {0}, 1};
  for (int d = 0; d < INDEXER_DIM; d++) {
    j.weight[d] = load_f(&a->weight, a->weight_dt, d * a->weight.stride[0]);
    if (isnan(j.weight[d])) j.simd_ok = 0;
  }
  for (int i = 0; i < INDEXER_DIM / 2; i++) j.we[i] = j.weight[2 * i], j.wo[i] = j.weight[2 * i + 1];
  /* ~1 us a row on one thread (FP8; MXFP4 ~1.8); avx512 ~55 ns, avx2 ~70-90
   * (a Zen 4, 2026-12-07; a Zen 3's avx2 130-180 before that day's
   * changes): see cpu_team */
  const double row_ns = j.path == CPU_PATH_AVX512 ? 60 : j.path == CPU_PATH_AVX2 ? 100
                        : c->record == DSV4KV_RECORD_INDEXER_MXFP4 ? 1800 : 1000;
  const int nt = cpu_team(o, (double)a->T * row_ns / (a->compress_ratio > 0 ? a->compress_ratio : 1));
  /* Threads own pages (as the insert's): the rows of one slot meet on one
   * thread in row order, so the last writing row wins whatever the team. */
  const cpu_paged_rows p = {&a->slots, a->T, c->block_size, c->num_pages * c->block_size,
                            indexer_bad_slot, indexer_row, &j, NULL};
  int64_t nonfinite = 0;
  dsv4kv_status st = cpu_rows_by_page(&p, nt, &nonfinite);
  rep->nonfinite = nonfinite;
  return st;
}
