/* CUDA indexer_k_norm_rope_store (SPEC §6, NUMERICS §2.4, §10; CPU:
 * src/cpu/indexer_cpu.c).
 *
 * tpw tokens a warp (IDX_TPW_WIDE = 4 past DEDUP_SHARED_ROWS rows, else 1),
 * a group of 32 / tpw lanes each: lane j of a group holds dims dpl*j ..
 * dpl*j + dpl-1 (dpl = 4 tpw).  The per-token work that is not per value
 * (index loads and checks, divisions, rstd, the duplicate check, the scale)
 * then costs a warp instruction for tpw tokens: at one token a warp it was
 * most of the ~650 instructions a token (Nsight Compute), at 4 the kernel
 * issues ~330.
 * The sum of squares is still exactly the reference's reduction: it holds 4
 * dims a "lane" (fmas) and an xor butterfly over 32 such lanes; here each
 * lane holds tpw of them, the butterfly's large strides run across
 * lanes and the last ones inside a lane, in the same order (every step adds
 * the same two values, and all lanes end equal).  rstd is the correctly
 * rounded 1/sqrt in double (formats/ref.h).  The norm's and RoPE's bf16
 * roundings are the hardware's, two values an instruction; then FP8 (group
 * amax, codes linear or tiled) or MXFP4 (blocks of 32 dims): the arithmetic
 * is in src/cuda/indexer_quant.cuh.  Past DEDUP_SHARED_ROWS rows a call that
 * fits the GPU at once marks its duplicate slots inside its own cooperative
 * kernel (DEDUP_FUSED), else in two mark kernels before it. */
#include <cooperative_groups.h>

#include "cuda/indexer_quant.cuh"

/* One group's row from its loads to its stores. */
typedef struct {
  uint32_t k[IDX_DPL_MAX / 2]; /* this lane's bf16 pairs, low half first */
  int64_t t, slot, pos, cp;    /* cp: the cos_sin row */
  int write;                   /* a group-boundary row with a valid slot and cos_sin row */
} idx_row;

/* The lane's part of row t0 + g (none past T: row 0's, not written).  One
 * token a warp, t = t0 < T (the rows' loop). */
static __device__ __forceinline__ void row_load(const indexer_params &p, int64_t t0, int g, int j, int tpw, idx_row *r) {
  const int dpl = IDX_DPL(tpw);
  r->t = t0 + g;
  const int live = tpw == 1 || r->t < p.T;
  const uint8_t *row = p.k_pre + (live ? r->t : 0) * p.k_stride + 2 * dpl * j;
  if (p.vec_k) {
    for (int i = 0; i < dpl / 2; i += 2) {
      const uint2 v = __ldg((const uint2 *)(row + 4 * i));
      r->k[i] = v.x, r->k[i + 1] = v.y;
    }
  } else {
    for (int i = 0; i < dpl / 2; i++) {
      uint32_t w = 0; /* row[4 i] | row[4 i + 1] << 8 | ...: a loop, not loads predicated beside the 8-byte ones */
#pragma unroll 1
      for (int b = 3; b >= 0; b--) w = w << 8 | row[4 * i + b];
      r->k[i] = w;
    }
  }
}
static __device__ __forceinline__ void row_load_index(const indexer_params &p, int tpw, idx_row *r) {
  const int live = tpw == 1 || r->t < p.T;
  r->slot = live ? dix_i64(p.slots, r->t) : -1;
  r->pos = live ? dix_i64(p.positions, r->t) : 0;
}

/* dpd_off by the compress ratio, an int32 >= 1, so in [0, 2^31) (a power of
 * two's mask keeps the low word alone). */
static __device__ __forceinline__ uint32_t idx_off_ratio(dpagediv d, int64_t x) {
  return d.shift >= 0 ? (uint32_t)x & (uint32_t)(d.bs - 1) : (uint32_t)(x % d.bs);
}

/* Whether the row writes, its cos_sin row, and the notes of a skipped one
 * (from the group's first lane).  Returns the warp's vote: a row of it writes.
 * The checks in the order of the notes: the slot (-1: no note), the
 * position, the group boundary (no note), the cos_sin row; the notes only
 * on a report's rows that fail one. */
static __device__ __forceinline__ int row_check(const indexer_params &p, idx_row *r, int j) {
  const int named = r->slot != -1;
  const int ok = (uint64_t)r->slot < (uint64_t)p.num_slots && r->pos >= 0; /* 0 <= slot < num_slots (>= 0) */
  const int boundary = idx_off_ratio(p.rd, r->pos) == (uint32_t)(p.ratio - 1); /* (where pos >= 0) */
  /* at a boundary (pos % ratio = ratio - 1), (pos / ratio) * ratio = pos - pos % ratio; used where the row writes */
  r->cp = (int64_t)((uint64_t)r->pos - (uint64_t)(p.ratio - 1));
  const int cs_ok = r->cp < p.cs_rows;
  r->write = named && ok && boundary && cs_ok;
  if (!r->write && p.note.rep && j == 0 && named && !(ok && !boundary)) { /* skipped, and noted */
    if ((uint64_t)r->slot >= (uint64_t)p.num_slots)
      dnote1(p.note, r->t, SKIP_SLOT, r->t, r->slot, p.num_slots, 0, 0, 0);
    else if (r->pos < 0)
      dnote1(p.note, r->t, SKIP_POSITION_NEGATIVE, r->t, r->pos, 0, 0, 0, 0);
    else
      dnote1(p.note, r->t, SKIP_COS_SIN_ROW, r->t, r->pos, r->cp, p.cs_rows, 0, 0);
  }
  return __any_sync(FULL_MASK, r->write);
}

/* rstd of the row (the reference's sum of squares) and the non-finite count
 * of the writing rows: the norm once when it alone is non-finite (as the CPU
 * counts).  Warp-collective. */
static __device__ __forceinline__ float row_rstd(const indexer_params &p, const idx_row *r, int j, int tpw) {
  const int dpl = IDX_DPL(tpw);
  int norm_bad;
  const float rstd = indexer_rstd_of_sum(row_sum_squares(r->k, tpw), p.eps, &norm_bad);
  if (p.check_nonfinite) {
    int nf = 0;
    for (int i = 0; i < dpl / 2; i++) nf += (r->k[i] & 0x7F80u) == 0x7F80u, nf += (r->k[i] & 0x7F800000u) == 0x7F800000u;
    const int in = group_sum_i(nf, tpw);
    const unsigned c = r->write && j == 0 ? (unsigned)(in + (in == 0 && norm_bad)) : 0u;
    const unsigned total = __reduce_add_sync(FULL_MASK, c);
    if (lane_id() == 0) dnote_nonfinite(p.note, total);
  }
  return rstd;
}

/* RMSNorm and RoPE of the lane's pairs into res[] (bf16 pairs).  `tables`
 * (the decode kernels: one chunk a lane) holds the weights and cos / sin
 * loaded early; else they load here, where they are used (L1 / L2 hits: one
 * table for all rows, one cos_sin row per position). */
static __device__ __forceinline__ void row_norm_rope(const indexer_params &p, const idx_row *r, float rstd, int j,
                                                     int tpw, const float *tables, uint32_t *res) {
  const int dpl = IDX_DPL(tpw), chunk = IDX_CHUNK(tpw), i0 = dpl / 2 * j;
  const int rotated = r->write && i0 >= INDEXER_ROPE_FROM / 2; /* the whole lane, or none of it */
  for (int h0 = 0; h0 < dpl / 2; h0 += chunk) { /* `chunk` pairs: their weights, cos and sin */
    float c[4] = {1.0f, 1.0f, 1.0f, 1.0f}, sn[4] = {0.0f, 0.0f, 0.0f, 0.0f}, w[8];
    if (tables) {
      for (int i = 0; i < chunk; i++) c[i] = tables[i], sn[i] = tables[4 + i], w[2 * i] = tables[8 + 2 * i], w[2 * i + 1] = tables[9 + 2 * i];
    } else {
      load_tables(&p, r->cp, i0 + h0, chunk, rotated, c, sn, w);
    }
    for (int h = h0; h < h0 + chunk; h++)
      res[h] = norm_rope_pair(r->k[h], w[2 * (h - h0)], w[2 * (h - h0) + 1], c[h - h0], sn[h - h0], rstd);
  }
}

/* The lane's quantized part of the row into q[] and the scale word. */
static __device__ __forceinline__ uint32_t row_quant(const indexer_params &p, const uint32_t *res, int rec, int g,
                                                     int tpw, uint32_t *q) {
  return rec == DSV4KV_RECORD_INDEXER_FP8 ? quant_fp8(&p, res, tpw, q) : quant_mxfp4(res, g, tpw, q);
}

/* The page and in-page position of a writing row's slot (in range, so >= 0):
 * the block size is an int32, so the position is below 2^31. */
static __device__ __forceinline__ uint8_t *row_page(const indexer_params &p, const idx_row *r, int64_t *in_page) {
  const int64_t s = r->write ? r->slot : 0;
  int64_t page;
  uint32_t in;
  if (p.bsd.shift >= 0) {
    page = s >> p.bsd.shift;
    in = (uint32_t)s & (uint32_t)(p.bsd.bs - 1);
  } else {
    page = s / p.bsd.bs;
    in = (uint32_t)(s - page * p.bsd.bs);
  }
  *in_page = in;
  return p.base + page * p.page_stride;
}

/* Whether this group's row is the last to write its slot.  Warp-collective:
 * DEDUP_MARK and DEDUP_FUSED read the mark from each group's first lane; the
 * scans (DEDUP_SHARED, DEDUP_GLOBAL) run for one group's row at a time;
 * `warp` (DEDUP_WARP, one token a warp) compares the slots in lw. */
static __device__ __forceinline__ int row_is_last(const indexer_params *p, const int64_t *later, const dlater *lw,
                                                  const idx_row *r, const uint8_t *mark_word, int g, int j, int tpw,
                                                  int warp) {
  /* DEDUP_WARP, the only way of the decode kernels (indexer_launch runs them
   * for it alone), one token a warp: every lane loaded the row's t, slot and
   * position from the same addresses, so they and write are the same in all
   * lanes (no shuffles), and the scan of lw decides. */
  if (warp && tpw == 1) {
    if (!r->write) return 0; /* uniform */
    return !later_row_writes_slot_warp(lw, p->slots, r->t, r->slot, p->positions, p->ratio, p->cs_rows);
  }
  if (p->dd.mode == DEDUP_NONE) return r->write;
  if (p->dd.mode == DEDUP_MARK || p->dd.mode == DEDUP_FUSED) {
    unsigned int v = j == 0 && r->write ? __ldcg((const unsigned int *)mark_word) : 0u;
    v = __shfl_sync(FULL_MASK, v, g * IDX_LPT(tpw));
    return r->write && v == (p->dd.tag | (uint32_t)(r->t + 1) << p->dd.shift);
  }
  int last = 0;
  for (int k = 0; k < tpw; k++) {
    const int src = k * IDX_LPT(tpw);
    if (!__shfl_sync(FULL_MASK, r->write, src)) continue; /* uniform: the same for every lane */
    const int64_t tk = __shfl_sync(FULL_MASK, r->t, src), sk = __shfl_sync(FULL_MASK, r->slot, src);
    const int hit = warp ? later_row_writes_slot_warp(lw, p->slots, tk, sk, p->positions, p->ratio, p->cs_rows)
                        : later_row_writes_slot(p->dd.mode, later, p->slots, p->T, tk, sk, p->positions, p->ratio,
                                                p->cs_rows);
    if (g == k) last = !hit;
  }
  return r->write && last;
}

/* Rows t0 .. t0 + tpw - 1 from their loads to their stores.  Every lane
 * runs every step (shuffles need the whole warp); `write` and `mine` gate
 * the stores. */
static __device__ __forceinline__ void indexer_row(const indexer_params &p, int64_t *later, int rec, int tpw, int warp,
                                                   int64_t t0, int g, int j) {
  const int dpl = IDX_DPL(tpw), chunk = IDX_CHUNK(tpw);
  idx_row r; /* the row, its slot and position loaded together (one latency, not three) */
  row_load(p, t0, g, j, tpw, &r);
  dlater lw; /* the later rows' slots (DEDUP_WARP), with the row */
  if (warp) dedup_warp_load(&lw, p.slots, p.T, r.t);
  row_load_index(p, tpw, &r);
  if (!row_check(p, &r, j)) return; /* no row of this warp writes */
  if (tpw == 1) r.write = 1; /* one token a warp: every lane's write is the row's (the same loads), so the vote's */
  /* The decode kernels (one chunk a lane) load the tables here, so that
   * their latency overlaps the norm and the duplicate check; the others
   * where they are used, to keep registers free. */
  float tables[16] = {1.0f, 1.0f, 1.0f, 1.0f, 0.0f, 0.0f, 0.0f, 0.0f};
  if (warp)
    load_tables(&p, r.cp, dpl / 2 * j, chunk, r.write && dpl / 2 * j >= INDEXER_ROPE_FROM / 2, tables, tables + 4,
                tables + 8);
  const float rstd = row_rstd(p, &r, j, tpw);
  int64_t in_page;
  uint8_t *page = row_page(p, &r, &in_page);
  int mine = row_is_last(&p, later, &lw, &r, page + record_scales_off(&p.layout, p.bs, in_page), g, j, tpw, warp);
  if (!__any_sync(FULL_MASK, mine)) return;
  if (tpw == 1) mine = 1; /* likewise: every way of row_is_last gives one token's lanes the same answer */
  uint32_t res[IDX_DPL_MAX / 2], q[IDX_DPL_MAX / 4 > 0 ? IDX_DPL_MAX / 4 : 1];
  row_norm_rope(p, &r, rstd, j, tpw, warp ? tables : NULL, res);
  const uint32_t sw = row_quant(p, res, rec, g, tpw, q);
  if (mine) store_record(&p, page, in_page, rec, q, sw, j, tpw);
}

/* The rows' loop, compiled once a record (rec a constant: each kernel holds
 * only its own quantizer's registers and branches), tpw tokens a warp.  The
 * decode kernels count in ints: T <= DEDUP_WARP_ROWS (dedup_mode_of) and
 * their grids at most 2^20 blocks (cuda_grid_rows). */
static __device__ __forceinline__ void indexer_rows(const indexer_params &p, int64_t *later, int rec, int tpw, int warp) {
  const int lpt = IDX_LPT(tpw);
  const int g = lane_id() / lpt, j = lane_id() % lpt;
  if (warp) {
    const unsigned stride = ((gridDim.x * blockDim.x) >> 5) * tpw;
    const unsigned first = ((blockIdx.x * blockDim.x + threadIdx.x) >> 5) * tpw;
    if (p.common) { /* the same body, its flags constants: their branches and other paths compile away */
      indexer_params c = p;
      c.vec_k = c.vec_w = c.vec_cs = c.vec4_c = 1;
      c.tiled = c.fnuz = c.check_nonfinite = 0;
      c.slots.s0 = c.positions.s0 = 1;
      c.bsd.shift &= 31, c.rd.shift &= 31; /* powers of two below 2^31: the same shifts, known >= 0 */
      for (unsigned t0 = first; t0 < (unsigned)c.T; t0 += stride) indexer_row(c, later, rec, tpw, warp, t0, g, j);
    } else {
      for (unsigned t0 = first; t0 < (unsigned)p.T; t0 += stride) indexer_row(p, later, rec, tpw, warp, t0, g, j);
    }
  } else {
    const int64_t stride = warp_count_global() * tpw;
    for (int64_t t0 = warp_id_global() * tpw; t0 < p.T; t0 += stride) indexer_row(p, later, rec, tpw, warp, t0, g, j);
  }
}

/* DEDUP_FUSED (cuda_common.cuh), IDX_TPW_WIDE tokens a warp, launched
 * cooperatively with a warp for every IDX_TPW_WIDE rows, all resident at
 * once (the host checks both): the marks' reset, a grid barrier, their
 * maxima, a grid barrier, the stores.  Each warp's rows load before the reset
 * and are quantized while the grid meets at the first barrier, so their
 * latency and the marks' overlap.  Every thread reaches both barriers.  (The
 * quantization between the second barrier's arrival and its wait instead
 * was 0.2 us slower at 16384 rows, bench/NOTES-gpu.md run 34.  A
 * loop over more rows a warp spilled registers: larger calls take the mark
 * kernels, whose cost they amortize.) */
static __device__ __forceinline__ void indexer_rows_fused(const indexer_params &p, int rec) {
  const int tpw = IDX_TPW_WIDE, lpt = IDX_LPT(tpw);
  const int g = lane_id() / lpt, j = lane_id() % lpt;
  const cooperative_groups::grid_group grid = cooperative_groups::this_grid();
  const mark_params m = {p.slots, p.positions, p.T, p.num_slots, p.ratio, p.cs_rows, p.base, p.page_stride, p.bs,
                         p.layout, p.dd, p.bsd};
  const int64_t tid = (int64_t)blockIdx.x * blockDim.x + threadIdx.x, threads = (int64_t)gridDim.x * blockDim.x;
  const int64_t t0 = warp_id_global() * tpw;
  idx_row r;
  row_load(p, t0, g, j, tpw, &r); /* in flight during the reset */
  row_load_index(p, tpw, &r);
  mark_reset_rows(&m, tid, threads);
  cooperative_groups::grid_group::arrival_token reset = grid.barrier_arrive();
  uint32_t q[IDX_DPL_MAX / 4], sw = 0;
  int any = 0;
  if (t0 < p.T && row_check(p, &r, j)) {
    any = 1;
    uint32_t res[IDX_DPL_MAX / 2];
    row_norm_rope(p, &r, row_rstd(p, &r, j, tpw), j, tpw, NULL, res);
    sw = row_quant(p, res, rec, g, tpw, q);
  }
  grid.barrier_wait(static_cast<cooperative_groups::grid_group::arrival_token &&>(reset));
  mark_max_rows(&m, tid, threads);
  grid.sync();
  if (any) {
    int64_t in_page;
    uint8_t *page = row_page(p, &r, &in_page);
    if (row_is_last(&p, NULL, NULL, &r, page + record_scales_off(&p.layout, p.bs, in_page), g, j, tpw, 0))
      store_record(&p, page, in_page, rec, q, sw, j, tpw);
  }
}

/* A kernel's body: pass 1 of a report has nothing to do unless pass 0
 * skipped an entry; DEDUP_SHARED's blocks copy the later rows' slots first. */
static __device__ __forceinline__ void indexer_kernel_body(const indexer_params &p, int64_t *later, int rec, int tpw,
                                                           int warp) {
  if (dnote_idle(p.note)) return;
  if (!warp && p.dd.mode == DEDUP_SHARED) dedup_shared_load(later, p.slots, p.T, p.num_slots, p.positions, p.ratio, p.cs_rows);
  indexer_rows(p, later, rec, tpw, warp);
}

/* Resident blocks of 256 threads a multiprocessor: the register bounds that
 * spill nothing (ptxas -v, nvcc 13.0): IDX_TPW_WIDE = 4 tokens a warp 64
 * registers (the fused kernels too; their MXFP4 one spills 12 bytes), 1
 * token 40-44. */
#ifndef DSV4KV_INDEXER_MIN_BLOCKS
#define DSV4KV_INDEXER_MIN_BLOCKS (IDX_TPW_WIDE >= 4 ? 4 : 5)
#endif
enum { INDEXER_MIN_BLOCKS = DSV4KV_INDEXER_MIN_BLOCKS, INDEXER_ROW_MIN_BLOCKS = 5 };
__global__ void __launch_bounds__(CUDA_BLOCK, INDEXER_MIN_BLOCKS) indexer_fp8_kernel(indexer_params p) {
  __shared__ int64_t later[DEDUP_SHARED_ROWS];
  indexer_kernel_body(p, later, DSV4KV_RECORD_INDEXER_FP8, IDX_TPW_WIDE, 0);
}
__global__ void __launch_bounds__(CUDA_BLOCK, INDEXER_MIN_BLOCKS) indexer_mxfp4_kernel(indexer_params p) {
  __shared__ int64_t later[DEDUP_SHARED_ROWS];
  indexer_kernel_body(p, later, DSV4KV_RECORD_INDEXER_MXFP4, IDX_TPW_WIDE, 0);
}
/* One token a warp: rows that scan for duplicate slots (DEDUP_SHARED, DEDUP_GLOBAL). */
__global__ void __launch_bounds__(CUDA_BLOCK, INDEXER_ROW_MIN_BLOCKS) indexer_fp8_row_kernel(indexer_params p) {
  __shared__ int64_t later[DEDUP_SHARED_ROWS];
  indexer_kernel_body(p, later, DSV4KV_RECORD_INDEXER_FP8, 1, 0);
}
__global__ void __launch_bounds__(CUDA_BLOCK, INDEXER_ROW_MIN_BLOCKS) indexer_mxfp4_row_kernel(indexer_params p) {
  __shared__ int64_t later[DEDUP_SHARED_ROWS];
  indexer_kernel_body(p, later, DSV4KV_RECORD_INDEXER_MXFP4, 1, 0);
}
/* Decode sizes (DEDUP_WARP): one token a warp (which the register scan and
 * the tables loaded once assume), the later rows' slots in registers; a few
 * blocks, so registers do not limit them. */
__global__ void __launch_bounds__(CUDA_BLOCK) indexer_fp8_decode_kernel(indexer_params p) {
  indexer_kernel_body(p, NULL, DSV4KV_RECORD_INDEXER_FP8, 1, 1);
}
__global__ void __launch_bounds__(CUDA_BLOCK) indexer_mxfp4_decode_kernel(indexer_params p) {
  indexer_kernel_body(p, NULL, DSV4KV_RECORD_INDEXER_MXFP4, 1, 1);
}
/* DEDUP_FUSED: launched cooperatively (pass 0 only; a report's pass 1 runs
 * indexer_*_kernel, which then finds no mark and stores nothing). */
__global__ void __launch_bounds__(CUDA_BLOCK, INDEXER_MIN_BLOCKS) indexer_fp8_fused_kernel(indexer_params p) {
  indexer_rows_fused(p, DSV4KV_RECORD_INDEXER_FP8);
}
__global__ void __launch_bounds__(CUDA_BLOCK, INDEXER_MIN_BLOCKS) indexer_mxfp4_fused_kernel(indexer_params p) {
  indexer_rows_fused(p, DSV4KV_RECORD_INDEXER_MXFP4);
}

const void *const cuda_indexer_kernels[] = {(const void *)indexer_fp8_kernel,          (const void *)indexer_mxfp4_kernel,
                                            (const void *)indexer_fp8_row_kernel,      (const void *)indexer_mxfp4_row_kernel,
                                            (const void *)indexer_fp8_decode_kernel,   (const void *)indexer_mxfp4_decode_kernel,
                                            (const void *)indexer_fp8_fused_kernel,    (const void *)indexer_mxfp4_fused_kernel,
                                            NULL};

/* Blocks of the fused kernel of the record (fp8: FP8, else MXFP4) that
 * device dev holds at once for a cooperative launch, or 0 where it cannot
 * launch one.  The answer is kept once it is known; a failed query is not
 * kept, so a later call asks again. */
static volatile int fused_cap[64][2];
static int fused_capacity(int dev, int fp8) {
  if (dev < 0 || dev >= 64) return 0;
  if (fused_cap[dev][fp8]) return fused_cap[dev][fp8] > 0 ? fused_cap[dev][fp8] : 0;
  int coop = 0, sms = 0, per_sm = 0;
  const void *k = fp8 ? (const void *)indexer_fp8_fused_kernel : (const void *)indexer_mxfp4_fused_kernel;
  if (cudaDeviceGetAttribute(&coop, cudaDevAttrCooperativeLaunch, dev) != cudaSuccess ||
      cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess ||
      cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, k, CUDA_BLOCK, 0) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  const int n = coop ? sms * per_sm : 0;
  fused_cap[dev][fp8] = n > 0 ? n : -1;
  return n > 0 ? n : 0;
}

void cuda_indexer_fused_query(int dev) {
  fused_capacity(dev, 1);
  fused_capacity(dev, 0);
}

/* Whether a call is the common one that the decode kernels compile apart
 * (indexer_rows): aligned rows, tables and records, contiguous slots and
 * positions, linear OCP records, no non-finite check, block size and
 * compress ratio powers of two.  (A report does not matter: the tests run
 * with one, and their common calls take this path.) */
static int indexer_common_of(const indexer_params *p) {
  return p->vec_k && p->vec_w && p->vec_cs && p->vec4_c && !p->tiled && !p->fnuz && !p->check_nonfinite &&
         p->slots.s0 == 1 && p->positions.s0 == 1 && p->bsd.shift >= 0 && p->rd.shift >= 0;
}

/* The call's kernels once its parameters are set: the fused kernel where the
 * rows fit the GPU at once (else, or where the cooperative launch is refused,
 * e.g. on a stream of a green context with fewer multiprocessors, the mark
 * kernels and the 4-row kernel), the row kernels at the sizes that scan. */
static void indexer_launch(const cuda_call &call, indexer_params &p, const mark_params &m, int fp8) {
  const unsigned need = cuda_grid_rows((p.T + IDX_TPW_WIDE - 1) / IDX_TPW_WIDE);
  const int fits = p.dd.mode == DEDUP_MARK && cuda_dedup_forced() != DEDUP_MARK &&
                   (int64_t)need * CUDA_WARPS * IDX_TPW_WIDE >= p.T && need <= (unsigned)fused_capacity(call.dev, fp8);
  if (fits) {
    indexer_params f = p;
    f.dd.mode = DEDUP_FUSED;
    void *args[] = {&f};
    const cudaError_t e = cudaLaunchCooperativeKernel(
        fp8 ? (const void *)indexer_fp8_fused_kernel : (const void *)indexer_mxfp4_fused_kernel, need, CUDA_BLOCK, args,
        0, call.stream);
    if (e == cudaSuccess) {
      if (f.note.rep) { /* the describe pass: the marks are gone, nothing is stored */
        f.note.detail = 1;
        if (fp8)
          indexer_fp8_kernel<<<need, CUDA_BLOCK, 0, call.stream>>>(f);
        else
          indexer_mxfp4_kernel<<<need, CUDA_BLOCK, 0, call.stream>>>(f);
      }
      return;
    }
    cudaGetLastError(); /* refused before it ran (nothing written): the marks' kernels instead */
  }
  if (p.dd.mode == DEDUP_MARK || (p.dd.mode == DEDUP_NONE && p.T > DEDUP_SHARED_ROWS)) { /* IDX_TPW_WIDE rows a warp */
    cuda_mark_rows(call.stream, &m); /* (none for DEDUP_NONE) */
    if (fp8)
      CUDA_LAUNCH_REPORTED(indexer_fp8_kernel, need, call, p);
    else
      CUDA_LAUNCH_REPORTED(indexer_mxfp4_kernel, need, call, p);
    return;
  }
  const unsigned grid = cuda_grid_rows(p.T);
  const int warp = p.dd.mode == DEDUP_WARP;
  if (fp8)
    CUDA_LAUNCH_REPORTED(warp ? indexer_fp8_decode_kernel : indexer_fp8_row_kernel, grid, call, p);
  else
    CUDA_LAUNCH_REPORTED(warp ? indexer_mxfp4_decode_kernel : indexer_mxfp4_row_kernel, grid, call, p);
}

extern "C" dsv4kv_status cuda_indexer_store(const indexer_args *a, const exec_opts *o, dsv4kv_report *r) {
  const cache_view *c = &a->cache;
  cuda_call call;
  dsv4kv_status st = cuda_enter(&call, a->k_pre.device_id, o);
  if (st) return st;
  indexer_params p;
  p.k_pre = a->k_pre.data;
  p.k_stride = a->k_pre.stride[0] * 2;
  p.positions = dix_of(&a->positions);
  p.slots = dix_of(&a->slots);
  p.cos_sin = a->cos_sin.data;
  p.weight = a->weight.data;
  p.cs_stride = a->cos_sin.stride[0];
  p.w_stride = a->weight.stride[0];
  p.cs_rows = a->cos_sin.shape[0];
  p.cs_f32 = a->cos_sin_dt == DT_F32;
  p.w_f32 = a->weight_dt == DT_F32;
  p.T = a->T;
  p.num_slots = c->num_pages * c->block_size;
  p.ratio = a->compress_ratio;
  p.eps = a->eps;
  p.base = c->base;
  p.page_stride = c->page_stride;
  p.bs = c->block_size;
  p.record = (int32_t)c->record;
  p.fnuz = c->fp8 == DSV4KV_FP8_FNUZ;
  p.tiled = (c->flags & DSV4KV_CACHE_TILED) != 0;
  p.mx_scale = (c->flags & DSV4KV_CACHE_MX_SCALE) != 0;
  p.check_nonfinite = o->check_nonfinite;
  p.vec_k = (uintptr_t)p.k_pre % 8 == 0 && p.k_stride % 8 == 0;
  p.vec4_c = (uintptr_t)p.base % 4 == 0 && p.page_stride % 4 == 0;
  p.vec16_c = cuda_aligned16(p.base, p.page_stride);
  /* table_f4 reads entries 4m .. 4m+3 (weight) and row * cs_stride + 4m ..
   * (cos_sin): aligned when the base and the row stride are */
  const int64_t cs_bytes = p.cs_f32 ? 4 : 2, w_bytes = p.w_f32 ? 4 : 2;
  p.vec_w = a->weight.stride[0] == 1 && (uintptr_t)p.weight % (4 * w_bytes) == 0;
  p.vec_cs = (uintptr_t)p.cos_sin % (4 * cs_bytes) == 0 && (p.cs_stride * cs_bytes) % (4 * cs_bytes) == 0;
  p.bsd = dpagediv_of(p.bs);
  p.rd = dpagediv_of(p.ratio);
  p.layout = c->layout;
  p.dd = dedup_mode_of(a->T, &c->layout, p.record == DSV4KV_RECORD_INDEXER_FP8 && !p.mx_scale, c->base,
                       c->page_stride, o->distinct_slots);
  p.note.rep = r;
  p.note.detail = 0;
  p.common = indexer_common_of(&p);
  cuda_report_reset(&call, r, OP_INDEXER_STORE);
  if (a->T > 0) {
    const mark_params m = {p.slots, p.positions, p.T, p.num_slots, p.ratio, p.cs_rows, p.base, p.page_stride, p.bs,
                           p.layout, p.dd, p.bsd};
    indexer_launch(call, p, m, p.record == DSV4KV_RECORD_INDEXER_FP8);
  }
  return cuda_leave(&call, "indexer_k_norm_rope_store");
}
