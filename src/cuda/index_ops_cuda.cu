/* CUDA index preparation (SPEC §5, NUMERICS §4; CPU: src/cpu/index_ops_cpu.c):
 * the launchers, and the general kernels for any strides (global top-k rows
 * that are contiguous and 16-byte aligned take the 4-entry kernel of
 * index_rows4_cuda.cu instead).  One block per output row (rows in turn when
 * there are more than the grid holds), its threads over the row's entries
 * (coalesced 4-byte reads and writes), two entries a thread in flight
 * (combine: 16-byte accesses, two a thread in flight, four where a thread
 * has more than 8 entries of a row, where its rows are contiguous and
 * 16-byte aligned; from 1024 rows of those a warp a row instead, four
 * accesses a lane in flight: combine T 4096 top-k 1024 9.4 -> 8.0 us on an
 * H100, bench/NOTES-gpu.md run 39);
 * lengths counted with __syncthreads_count.  The block has 32 to 256
 * threads, more when there are few rows (index_block: a decode step's 64
 * rows still occupy the GPU).  Integer arithmetic wraps to int32 as the
 * reference's does; every table lookup is bounds-checked first and a failed
 * one writes -1 and is counted, with the CPU's keys. */
#include "cuda/index_ops_cuda.cuh"

/* ---- §5.1 ---------------------------------------------------------------- */

/* Entry j of row t: its global index (or -1) and whether it counts. */
static __device__ __forceinline__ int32_t topk_entry(const topk_params *p, int64_t t, int64_t j, int64_t x, int64_t req,
                                                     int req_ok, int valid, int *hit) {
  *hit = 0;
  if (x < 0 || !req_ok) return -1;
  const int64_t lp = dpd_page(p->pd, x);
  if (lp >= p->P) {
    if (valid) dnote1(p->note, skip_key(t, 1 + j, 16), SKIP_TOPK_COLUMN, t, j, x, req, lp, p->P);
    return -1;
  }
  *hit = 1;
  return wrap32((int64_t)dix_i32_2(p->block_table, req, lp) * p->pd.bs + dpd_off(p->pd, x));
}

__global__ void __launch_bounds__(CUDA_BLOCK) global_topk_kernel(topk_params p) {
  if (dnote_idle(p.note)) return;
  const int64_t bd = blockDim.x;
  for (int64_t t = blockIdx.x; t < p.T; t += gridDim.x) {
    /* An invalid token is padding: its out-of-range entries are -1 without
     * a skip (SPEC §7). */
    const int valid = dix_bool(p.valid, t);
    const int64_t req = dix_i32(p.req, t);
    const int req_ok = req >= 0 && req < p.R;
    if (!req_ok && valid && threadIdx.x == 0)
      dnote1(p.note, skip_key(t, 0, 16), SKIP_TOPK_REQUEST, t, req, p.R, 0, 0, 0);
    int32_t count = 0;
    for (int64_t j0 = 0; j0 < p.K; j0 += 2 * bd) {
      const int64_t ja = j0 + threadIdx.x, jb = ja + bd;
      const int64_t xa = ja < p.K ? dix_i32_2(p.topk, t, ja) : -1, xb = jb < p.K ? dix_i32_2(p.topk, t, jb) : -1;
      int ha, hb;
      const int32_t ga = topk_entry(&p, t, ja, xa, req, req_ok, valid, &ha);
      const int32_t gb = topk_entry(&p, t, jb, xb, req, req_ok, valid, &hb);
      if (ja < p.K) *dix_i32_2p(p.out, t, ja) = ga;
      if (jb < p.K) *dix_i32_2p(p.out, t, jb) = gb;
      count += __syncthreads_count(ha) + __syncthreads_count(hb);
    }
    if (threadIdx.x == 0) *(int32_t *)(p.lens.data + t * p.lens.s0 * 4) = valid ? count : 0;
  }
}


extern "C" dsv4kv_status cuda_global_topk(const global_topk_args *a, const exec_opts *o, dsv4kv_report *r) {
  cuda_call call;
  dsv4kv_status st = cuda_enter(&call, a->topk.device_id, o);
  if (st) return st;
  topk_params p = {dix_of(&a->topk), dix_of(&a->req), dix_of(&a->block_table), dix_of(&a->valid),
                   dix_of(&a->global_out), dix_of(&a->lens_out), a->T, a->K, a->R, a->P,
                   dpagediv_of(a->block_size), {r, 0}};
  cuda_report_reset(&call, r, OP_GLOBAL_TOPK);
  if (a->T > 0 && !rows4_global_topk(&p, a, &call)) INDEX_LAUNCH(global_topk_kernel, a->T, call, p);
  return cuda_leave(&call, "compute_global_topk_indices_and_lens");
}

/* ---- §5.2 ---------------------------------------------------------------- */
typedef struct {
  dix topk, qsl, seq_lens, gather_lens, combined, lens;
  int64_t T, R;
  int32_t window_size, compress_ratio, topk_n, M, N;
  int32_t vec; /* topk and combined contiguous along the row, rows 16-byte aligned */
  dpagediv crd; /* division by compress_ratio: a shift for a power of two */
  dnote note;
} combine_params;

/* Token t's row as request r writes it: entries [0, topk_len) are top-k
 * entries + Mr, [topk_len, topk_len + swa_len) first, first + 1, ... */
typedef struct {
  int64_t Mr, topk_len, swa_len, first;
} combine_lens;

/* qs, qe: request r's query range after rebasing; lengths that disagree are
 * clamped and noted by thread 0 (SPEC §7). */
static __device__ __forceinline__ combine_lens combine_lens_of(const combine_params *p, int64_t r, int64_t t,
                                                               int64_t qs, int64_t qe, int64_t seq_len,
                                                               int64_t gather_len, int leader) {
  const int64_t start_pos = seq_len - (qe - qs), gather_start = seq_len - gather_len;
  const int64_t t_lo = qs > 0 ? qs : 0, pos = start_pos + (t - qs);
  combine_lens z = {(int64_t)p->M * r, 0, 0, 0};
  if (p->compress_ratio > 0) { /* C's division (toward zero); a shift or 32 bits where that is the same */
    const int64_t x = pos + 1;
    z.topk_len = x < 0 ? x / p->compress_ratio
                 : p->crd.shift >= 0 ? x >> p->crd.shift
                 : x <= INT32_MAX ? (int64_t)((uint32_t)x / (uint32_t)p->compress_ratio)
                                  : x / p->compress_ratio;
    if (z.topk_len > p->topk_n) z.topk_len = p->topk_n;
  }
  int64_t swa_start = pos - p->window_size + 1;
  if (swa_start < 0) swa_start = 0;
  if (swa_start < gather_start) swa_start = gather_start;
  z.swa_len = pos - swa_start + 1;
  const int64_t key = skip_key(r, 1 + (t - t_lo), 32);
  if (z.topk_len < 0) {
    if (leader) dnote1(p->note, key, SKIP_LENGTH_CLAMPED, t, LEN_TOPK_BEFORE_START, z.topk_len, 0, r, p->topk_n);
    z.topk_len = 0;
  }
  if (z.swa_len < 0) {
    if (leader) dnote1(p->note, key, SKIP_LENGTH_CLAMPED, t, LEN_SWA_NEGATIVE, z.swa_len, 0, r, p->window_size);
    z.swa_len = 0;
  }
  z.first = z.Mr + p->N + (swa_start - gather_start);
  return z;
}

/* Threads r < R of the grid count request r's tokens outside [0, T) in bulk
 * (nothing to do without a report).  Called after the rows: before them, its
 * loads and the store it may make held the first block's own request loads
 * back by a round trip. */
static __device__ __forceinline__ void combine_note_outside(const combine_params *p, int64_t base) {
  if (!p->note.rep) return;
  for (int64_t r = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; r < p->R; r += (int64_t)gridDim.x * blockDim.x) {
    const int64_t qs = dix_i32(p->qsl, r) - base, qe = dix_i32(p->qsl, r + 1) - base;
    const int64_t t_lo = qs > 0 ? qs : 0, t_hi = qe < p->T ? qe : p->T;
    const int64_t outside = qe > qs ? (qe - qs) - (t_hi > t_lo ? t_hi - t_lo : 0) : 0;
    if (outside > 0) dnote_n(p->note, outside, skip_key(r, 0, 32), SKIP_COMBINE_ROWS, r, qs, qe, p->T, 0, 0);
  }
}

/* Request r's query range (rebased) and lengths, loaded together. */
typedef struct {
  int64_t qs, qe;
  int32_t seq_len, gather_len;
} combine_req;

/* A thread's first groups of a row, loaded before its requests are found
 * (on: v[0 .. NF) hold groups tid, tid + bd, ...; by value, so that they
 * stay in registers). */
typedef struct {
  int4 v[4];
  int on;
} combine_pre;

/* Token t's row as request r (its range and lengths in q) writes it, by the
 * bd threads tid = 0 .. bd - 1 of the block or of a warp.  Counters in 32 bits: 0 <= topk_len <= topk_n and 0 <=
 * swa_len <= window_size, both int32; the values wrap as wrap32's.  NF:
 * 16-byte accesses a thread in flight, 2 or 4.  (Loading the row before the
 * requests are found cost 12 registers and T 4096 +0.5-0.9 us for -0.1 us
 * at T 64: bench/NOTES-gpu.md run 32.) */
static __device__ __forceinline__ void combine_row(const combine_params *p, int64_t r, int64_t t, combine_req q,
                                                   const int NF, const uint32_t tid, const uint32_t bd,
                                                   const combine_pre pre) {
  const combine_lens z = combine_lens_of(p, r, t, q.qs, q.qe, q.seq_len, q.gather_len, tid == 0);
  const uint32_t n = (uint32_t)z.topk_len, ns = (uint32_t)z.swa_len, mr = (uint32_t)z.Mr, first = (uint32_t)z.first;
  const uint8_t *tin = p->topk.data + t * p->topk.s0 * 4;
  uint8_t *cout = (uint8_t *)p->combined.data + t * p->combined.s0 * 4;
  const int64_t si = p->topk.s1 * 4, so = p->combined.s1 * 4;
  uint32_t j0 = 0, s0 = 0;
  if (p->vec) { /* rows contiguous and 16-byte aligned: 4 entries an access, NF accesses in flight */
    const uint32_t n4 = n >> 2;
    const int4 *vin = (const int4 *)tin;
    int4 *vout = (int4 *)cout;
    for (uint32_t g = tid; g < n4; g += NF * bd) {
      int4 v[4];
#pragma unroll
      for (int k = 0; k < NF; k++)
        v[k] = g + k * bd >= n4 ? make_int4(0, 0, 0, 0) : pre.on && g == tid ? pre.v[k] : vin[g + k * bd];
#pragma unroll
      for (int k = 0; k < NF; k++)
        if (g + k * bd < n4)
          vout[g + k * bd] = make_int4((int32_t)((uint32_t)v[k].x + mr), (int32_t)((uint32_t)v[k].y + mr),
                                       (int32_t)((uint32_t)v[k].z + mr), (int32_t)((uint32_t)v[k].w + mr));
    }
    j0 = 4 * n4;
    if (!(n & 3)) { /* the window's entries 16-byte aligned too */
      int4 *wout = (int4 *)(cout + 4 * (uint64_t)n);
      for (uint32_t g = tid; g < ns >> 2; g += bd) {
        const uint32_t f = first + 4 * g;
        wout[g] = make_int4((int32_t)f, (int32_t)(f + 1), (int32_t)(f + 2), (int32_t)(f + 3));
      }
      s0 = ns & ~3u;
    }
  }
  for (uint32_t j = j0 + tid; j < n; j += 2 * bd) { /* 2 loads in flight before the stores */
    int32_t v[2];
    v[0] = j + 0 * bd < n ? *(const int32_t *)(tin + (int64_t)(j + 0 * bd) * si) : 0;
    v[1] = j + 1 * bd < n ? *(const int32_t *)(tin + (int64_t)(j + 1 * bd) * si) : 0;
    if (j + 0 * bd < n) *(int32_t *)(cout + (int64_t)(j + 0 * bd) * so) = (int32_t)((uint32_t)v[0] + mr);
    if (j + 1 * bd < n) *(int32_t *)(cout + (int64_t)(j + 1 * bd) * so) = (int32_t)((uint32_t)v[1] + mr);
  }
  for (uint32_t j = s0 + tid; j < ns; j += bd) *(int32_t *)(cout + (int64_t)(n + j) * so) = (int32_t)(first + j);
  if (tid == 0) *(int32_t *)(p->lens.data + t * p->lens.s0 * 4) = (int32_t)(n + ns);
}

/* Token after token (t0, t0 + step, ...), each by the bd threads tid of a
 * block (WARP 0) or of a warp (WARP 1): the requests whose query range holds
 * t, in request order (overlapping ranges, malformed input, give the CPU's
 * sequential result: later requests overwrite earlier ones; every warp finds
 * the same requests).  Threads r < R of the grid then count request r's
 * tokens outside [0, T) in bulk.  NF: 16-byte loads a thread in flight. */
static __device__ __forceinline__ void combine_tokens(const combine_params &p, int64_t t0, int64_t step, uint32_t tid,
                                                      uint32_t bd, const int NF, const int WARP, const int PRE) {
  if (dnote_idle(p.note)) return;
  const int lane = lane_id();
  const int64_t base = dix_i32(p.qsl, 0);
  for (int64_t t = t0; t < p.T; t += step) {
    /* PRE: the thread's first NF 16-byte groups of the row loaded with the
     * requests, so that their round trips overlap (combine_row reads them
     * for every request that writes the row: the row is the same) */
    combine_pre pre;
    pre.on = PRE && p.vec;
    if (pre.on) {
      const int4 *vin = (const int4 *)(p.topk.data + t * p.topk.s0 * 4);
#pragma unroll
      for (int k = 0; k < NF; k++)
        pre.v[k] = tid + k * bd < (uint32_t)p.topk_n >> 2 ? vin[tid + k * bd] : make_int4(0, 0, 0, 0);
    }
    for (int64_t r0 = 0; r0 < p.R; r0 += 32) {
      const int64_t rr = r0 + lane;
      int holds = 0;
      combine_req q = {0, 0, 0, 0};
      if (rr < p.R) { /* the range and both lengths at once: one latency */
        q.qs = dix_i32(p.qsl, rr) - base, q.qe = dix_i32(p.qsl, rr + 1) - base;
        q.seq_len = dix_i32(p.seq_lens, rr), q.gather_len = dix_i32(p.gather_lens, rr);
        holds = q.qs <= t && t < q.qe;
      }
      for (unsigned m = __ballot_sync(FULL_MASK, holds); m; m &= m - 1) {
        const int src = __ffs(m) - 1;
        const combine_req qr = {__shfl_sync(FULL_MASK, q.qs, src), __shfl_sync(FULL_MASK, q.qe, src),
                                __shfl_sync(FULL_MASK, q.seq_len, src), __shfl_sync(FULL_MASK, q.gather_len, src)};
        combine_row(&p, r0 + src, t, qr, NF, tid, bd, pre);
        if (WARP) /* the next request's writes land after this one's */
          __syncwarp();
        else
          __syncthreads();
      }
    }
  }
  combine_note_outside(&p, base);
}

/* A block a token (threads over the row): 4 16-byte loads a thread in flight
 * for rows of more than 8 entries a thread (the host chooses; 64 registers
 * instead of 48: T 4096 top-k 1024 7.86 -> 7.61 us on the H200), else 2 (4
 * at top-k 512 ran slower, bench/NOTES-gpu.md run 17), loaded with the
 * requests (fewer than index_warp_rows' rows: the warp kernel takes more;
 * run 49). */
__global__ void __launch_bounds__(CUDA_BLOCK) combine_kernel(combine_params p) {
  combine_tokens(p, blockIdx.x, gridDim.x, threadIdx.x, blockDim.x, 2, 0, 1);
}
__global__ void __launch_bounds__(CUDA_BLOCK) combine_wide_kernel(combine_params p) {
  combine_tokens(p, blockIdx.x, gridDim.x, threadIdx.x, blockDim.x, 4, 0, 0);
}
/* A warp a token, 4 16-byte loads a lane in flight (a top-k 512 row in one
 * round): no block barrier, and a block holds several tokens. */
__global__ void __launch_bounds__(CUDA_BLOCK, 4) combine_warp_kernel(combine_params p) {
  const uint32_t wpb = blockDim.x >> 5;
  combine_tokens(p, (int64_t)blockIdx.x * wpb + (threadIdx.x >> 5), (int64_t)gridDim.x * wpb, lane_id(), 32, 4, 1, 0);
}

/* Whether the rows of topk and combined can be read and written 16 bytes at a time. */
static int32_t combine_vec(const combine_args *a) {
  return rows4_view(&a->topk, 0) && rows4_view(&a->combined, 0); /* width 0: rows of any length (a scalar tail) */
}

extern "C" dsv4kv_status cuda_combine(const combine_args *a, const exec_opts *o, dsv4kv_report *r) {
  cuda_call call;
  dsv4kv_status st = cuda_enter(&call, a->topk.device_id, o);
  if (st) return st;
  combine_params p = {dix_of(&a->topk), dix_of(&a->qsl), dix_of(&a->seq_lens), dix_of(&a->gather_lens),
                      dix_of(&a->combined), dix_of(&a->lens), a->T, a->R, a->window_size, a->compress_ratio,
                      a->topk_n, a->M, a->N, combine_vec(a), dpagediv_of(a->compress_ratio), {r, 0}};
  cuda_report_reset(&call, r, OP_COMBINE);
  if (a->R > 0) {
    const unsigned f = (unsigned)cuda_index_threads_forced(), b = f ? f : index_block(a->T);
    if (index_warp_rows(a->T, p.vec)) {
      const unsigned wpb = index_warps_a_block(a->T);
      const int64_t blocks = (a->T + wpb - 1) / wpb;
      const unsigned grid = blocks > (1 << 20) ? 1u << 20 : (unsigned)blocks;
      CUDA_LAUNCH_REPORTED_SIZED(combine_warp_kernel, grid, 32 * wpb, 0, call, p);
    } else if (p.vec && a->topk_n / 4 > 2 * (int64_t)b) { /* 4 16-byte loads in flight: more than 8 entries a thread */
      INDEX_LAUNCH_BLOCK(combine_wide_kernel, a->T, b, call, p);
    } else {
      INDEX_LAUNCH_BLOCK(combine_kernel, a->T, b, call, p);
    }
  }
  return cuda_leave(&call, "combine_topk_swa_indices");
}

const void *const cuda_index_kernels[] = {(const void *)global_topk_kernel, (const void *)combine_kernel,
                                          (const void *)combine_wide_kernel, (const void *)combine_warp_kernel,
                                          NULL};
