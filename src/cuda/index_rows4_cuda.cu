/* CUDA global top-k on rows of 4-entry groups (SPEC §5.1; the general
 * kernel and the launcher: index_ops_cuda.cu; CPU: src/cpu/index_ops_cpu.c).
 *
 * When topk_indices and global_out are contiguous along the row, with
 * 16-byte aligned rows and K a multiple of 4 (the usual case: top-k 512 /
 * 1024), a thread takes 4 consecutive entries: one 16-byte load, the 4
 * table lookups in flight together, one 16-byte store.  A block a row with
 * a thread a group (whole warps, at most 256), so a thread pays the chain
 * entry -> table entry -> store about once where the general kernel pays it
 * once an iteration with a barrier between.
 *
 * Addresses are base + 32-bit index x 32-bit byte stride (32 x 32 -> 64-bit
 * products; the host takes these kernels only where T, K and every stride in
 * bytes fit 32 bits, else the general kernel runs).  The entries are branch-free:
 * an entry is looked up when 0 <= x < P * bs, one unsigned compare against a
 * per-row limit that is 0 when the request is out of range, the lookup a
 * predicated load; a power-of-two block size has a kernel of its own
 * without the division.  A group whose largest entry passes the limit may
 * hold skipped entries: it notes them after its store on a slow path, with
 * the general kernel's keys and values, so bytes, counts and reports are its
 * (the case registry runs both: rows of any K reach the general kernel).
 * Held to 32 registers (__launch_bounds__(256, 8): 64 warps a multiprocessor
 * instead of 48 at 40 registers; no spills in the power-of-two kernel).
 * Where rows are many (index_block would give a row fewer threads than it
 * has groups: T 4096) a thread takes 2 groups, both loads and all 8 lookups
 * in flight together, in index_block's threads (64 at T 4096; top-k 1024 in
 * two rounds): the row header (valid, request, limits, the lengths'
 * reduction), which every thread pays, is paid once for 8 or 16 entries,
 * and 32 of the 64-thread blocks fit a multiprocessor (one wave of 4096
 * rows on 132).  H200, T 4096: 4.86 -> 4.75 us (top-k 512), 8.09 -> 6.98
 * (1024; 7.49 with 128 threads in one round, 7.29 with those at 40
 * registers, which cost 512 0.3 us).
 * From 1024 rows (index_warp_rows) a warp takes a row instead, 4 groups a
 * lane in flight (a top-k 512 row in one round, no block barrier, 8 rows a
 * 256-thread block): on an H100 top-k 1024 7.8 -> 7.6 us, 512 unchanged
 * (bench/NOTES-gpu.md run 39); DSV4KV_CUDA_INDEX_ROWS forces either shape.
 * The same layout for combine and the flashinfer indices, a block of one
 * group a thread, ran slower than the general kernels (bench/NOTES-gpu.md)
 * and was not kept. */
#include "cuda/index_ops_cuda.cuh"

enum { ROWS4_MAX_THREADS = CUDA_BLOCK };

typedef struct {
  const uint8_t *topk, *req, *bt, *valid;
  uint8_t *out, *lens;
  uint32_t topk_s, req_s, bt_s0, bt_s1, valid_s, out_s, lens_s; /* strides in bytes */
  uint32_t T, G, R32;  /* R32 = min(R, 2^31): req is in range when (uint32)req < R32 */
  uint32_t lim;        /* min(P * bs, 2^31): x is looked up when (uint32)x < lim */
  int32_t limm1;       /* lim - 1: a group whose largest x passes it may hold a skipped entry */
  uint32_t bs;
  int32_t shift;
  int64_t R, P;        /* for the notes */
  dnote note;
} rows4_params;

/* Whole warps, a thread a group where the row has at most 256 groups. */
static unsigned rows4_threads(int64_t groups) {
  int64_t w = (groups + 31) / 32;
  if (w < 1) w = 1;
  if (w > ROWS4_MAX_THREADS / 32) w = ROWS4_MAX_THREADS / 32;
  return (unsigned)(32 * w);
}

/* ---- §5.1 ---------------------------------------------------------------- */
/* The notes of a group that may hold skipped entries (rare: after the store). */
static __device__ __forceinline__ void note_topk_group(const rows4_params *q, int64_t t, int64_t j0,
                                                       const int32_t *x, int64_t req, const int POW2) {
  for (int i = 0; i < 4; i++) {
    const uint32_t u = (uint32_t)x[i], lp = POW2 ? u >> q->shift : u / q->bs;
    if (x[i] >= 0 && (int64_t)lp >= q->P)
      dnote1(q->note, skip_key(t, 1 + j0 + i, 16), SKIP_TOPK_COLUMN, t, j0 + i, (int64_t)x[i], req, (int64_t)lp,
             q->P);
  }
}

/* Rows t0, t0 + step, ... by the bd threads tid of a block (WARP 0) or a
 * warp (WARP 1); POW2: the block size is 1 << shift; NG: the groups a thread
 * has in flight (1, 2 or 4), g0, g0 + bd, ... */
static __device__ __forceinline__ void global_topk_rows4(const rows4_params *q, uint32_t t0, uint32_t step,
                                                         uint32_t tid, uint32_t bd, const int POW2, const int NG,
                                                         const int WARP) {
  if (dnote_idle(q->note)) return;
  __shared__ int32_t sh[ROWS4_MAX_THREADS / 32];
  const uint32_t nw = bd >> 5, bs = q->bs;
  const int shift = q->shift;
  for (uint32_t t = t0; t < q->T; t += step) {
    const int valid = *at(q->valid, t, q->valid_s) != 0;
    const int32_t req = *(const int32_t *)at(q->req, t, q->req_s);
    const int req_ok = (uint32_t)req < q->R32;
    if (!req_ok && valid && tid == 0)
      dnote1(q->note, skip_key(t, 0, 16), SKIP_TOPK_REQUEST, t, req, q->R, 0, 0, 0);
    const uint8_t *in = at(q->topk, t, q->topk_s), *out = at(q->out, t, q->out_s);
    const uint8_t *row = at(q->bt, req_ok ? (uint32_t)req : 0u, q->bt_s0);
    const uint32_t lim = req_ok ? q->lim : 0u;
    const int32_t limm1 = req_ok && valid ? q->limm1 : INT32_MAX;
    int hits = 0;
    for (uint32_t g0 = tid; g0 < q->G; g0 += NG * bd) {
      int32_t x[4][4], y[4][4];
#pragma unroll
      for (int k = 0; k < NG; k++) {
        /* a later group past the row reads nothing: x = -1 is never looked up or noted */
        const uint32_t g = g0 + k * bd;
        const int4 v = k == 0 || g < q->G ? *(const int4 *)at(in, g, 16) : make_int4(-1, -1, -1, -1);
        x[k][0] = v.x, x[k][1] = v.y, x[k][2] = v.z, x[k][3] = v.w;
      }
      /* the notes of a group that may hold skipped entries: after the store with
       * one group (the shorter hot path), before the lookups with more (fewer
       * values live across the slow path: 8 bytes spilled at 32 registers, not 60) */
      if (NG > 1) {
#pragma unroll
        for (int k = 0; k < NG; k++) {
          const int32_t mx = max(max(x[k][0], x[k][1]), max(x[k][2], x[k][3]));
          if (mx > limm1) note_topk_group(q, t, 4 * (int64_t)(g0 + k * bd), x[k], req, POW2);
        }
      }
#pragma unroll
      for (int k = 0; k < NG; k++)
#pragma unroll
        for (int i = 0; i < 4; i++) {
          const uint32_t u = (uint32_t)x[k][i], lp = POW2 ? u >> shift : u / bs;
          const int m = u < lim;
          const int32_t e = load_if_below((const int32_t *)at_wide(row, lp, q->bt_s1), u, lim);
          const uint32_t off = POW2 ? u & (bs - 1) : u - lp * bs;
          y[k][i] = m ? (int32_t)((uint32_t)e * bs + off) : -1;
          hits += m;
        }
#pragma unroll
      for (int k = 0; k < NG; k++) {
        const uint32_t g = g0 + k * bd;
        if (k == 0 || g < q->G) *(int4 *)at(out, g, 16) = make_int4(y[k][0], y[k][1], y[k][2], y[k][3]);
      }
      if (NG == 1) {
        const int32_t mx = max(max(x[0][0], x[0][1]), max(x[0][2], x[0][3]));
        if (mx > limm1) note_topk_group(q, t, 4 * (int64_t)g0, x[0], req, POW2);
      }
    }
    hits = __reduce_add_sync(FULL_MASK, hits);
    int32_t *lens = (int32_t *)at(q->lens, t, q->lens_s);
    if (WARP || nw == 1) {
      if (tid == 0) *lens = valid ? hits : 0;
    } else {
      if (lane_id() == 0) sh[tid >> 5] = hits;
      __syncthreads();
      if (tid < 32) {
        int s = tid < nw ? sh[tid] : 0;
        s = __reduce_add_sync(FULL_MASK, s);
        if (tid == 0) *lens = valid ? s : 0;
      }
      if (t + step < q->T) __syncthreads(); /* sh is free for the next row */
    }
  }
}

#define ROWS4_BLOCK_KERNEL(name, POW2, NG)                                            \
  __global__ void __launch_bounds__(ROWS4_MAX_THREADS, 8) name(rows4_params q) {      \
    global_topk_rows4(&q, blockIdx.x, gridDim.x, threadIdx.x, blockDim.x, POW2, NG, 0); \
  }
ROWS4_BLOCK_KERNEL(global_topk_rows4_pow2_kernel, 1, 1)
ROWS4_BLOCK_KERNEL(global_topk_rows4_div_kernel, 0, 1)
ROWS4_BLOCK_KERNEL(global_topk_rows8_pow2_kernel, 1, 2)
ROWS4_BLOCK_KERNEL(global_topk_rows8_div_kernel, 0, 2)
/* A warp a row, 4 groups a lane in flight (a top-k 512 row in one round). */
#define ROWS4_WARP_KERNEL(name, POW2)                                                          \
  __global__ void __launch_bounds__(ROWS4_MAX_THREADS, 4) name(rows4_params q) {               \
    const uint32_t wpb = blockDim.x >> 5;                                                      \
    global_topk_rows4(&q, blockIdx.x * wpb + (threadIdx.x >> 5), gridDim.x * wpb, lane_id(), 32, POW2, 4, 1); \
  }
ROWS4_WARP_KERNEL(global_topk_warp_pow2_kernel, 1)
ROWS4_WARP_KERNEL(global_topk_warp_div_kernel, 0)

/* An A/B experiment, off unless DSV4KV_CUDA_TOPK_TABLE_REGS=1 (bench/NOTES-gpu.md
 * run 55: at T 4096 the warp kernel waits on each entry's table load after
 * the entry's own): a warp a row, power-of-two block sizes, block tables of
 * at most 64 columns, the row's table entries in registers (lane l holds
 * columns l and l + 32, loaded with the row's header), a lookup two
 * shuffles.  Loops over groups in warp-uniform steps, so every lane reaches
 * the shuffles.  The same bytes, counts and notes as global_topk_rows4. */
__global__ void __launch_bounds__(ROWS4_MAX_THREADS, 4) global_topk_warp_regs_kernel(rows4_params q) {
  if (dnote_idle(q.note)) return;
  const uint32_t wpb = blockDim.x >> 5, lane = lane_id(), bs = q.bs;
  const int shift = q.shift;
  for (uint32_t t = blockIdx.x * wpb + (threadIdx.x >> 5); t < q.T; t += gridDim.x * wpb) {
    const int valid = *at(q.valid, t, q.valid_s) != 0;
    const int32_t req = *(const int32_t *)at(q.req, t, q.req_s);
    const int req_ok = (uint32_t)req < q.R32;
    if (!req_ok && valid && lane == 0)
      dnote1(q.note, skip_key(t, 0, 16), SKIP_TOPK_REQUEST, t, req, q.R, 0, 0, 0);
    const uint8_t *in = at(q.topk, t, q.topk_s), *out = at(q.out, t, q.out_s);
    const uint8_t *row = at(q.bt, req_ok ? (uint32_t)req : 0u, q.bt_s0);
    const uint32_t lim = req_ok ? q.lim : 0u; /* u < lim: column u >> shift < P <= 64 */
    const int32_t limm1 = req_ok && valid ? q.limm1 : INT32_MAX;
    const int32_t c0 = req_ok && (int64_t)lane < q.P ? *(const int32_t *)at(row, lane, q.bt_s1) : 0;
    const int32_t c1 = req_ok && (int64_t)lane + 32 < q.P ? *(const int32_t *)at(row, lane + 32, q.bt_s1) : 0;
    int hits = 0;
    for (uint32_t base = 0; base < q.G; base += 4 * 32) {
      int32_t x[4][4], y[4][4];
#pragma unroll
      for (int k = 0; k < 4; k++) { /* a group past the row reads nothing: x = -1 is never looked up or noted */
        const uint32_t g = base + k * 32 + lane;
        const int4 v = g < q.G ? *(const int4 *)at(in, g, 16) : make_int4(-1, -1, -1, -1);
        x[k][0] = v.x, x[k][1] = v.y, x[k][2] = v.z, x[k][3] = v.w;
      }
#pragma unroll
      for (int k = 0; k < 4; k++) {
        const int32_t mx = max(max(x[k][0], x[k][1]), max(x[k][2], x[k][3]));
        if (mx > limm1) note_topk_group(&q, t, 4 * (int64_t)(base + k * 32 + lane), x[k], req, 1);
      }
#pragma unroll
      for (int k = 0; k < 4; k++)
#pragma unroll
        for (int i = 0; i < 4; i++) {
          const uint32_t u = (uint32_t)x[k][i], lp = u >> shift;
          const int m = u < lim;
          const int32_t a = __shfl_sync(FULL_MASK, c0, lp & 31), b = __shfl_sync(FULL_MASK, c1, lp & 31);
          y[k][i] = m ? (int32_t)((uint32_t)(lp < 32 ? a : b) * bs + (u & (bs - 1))) : -1;
          hits += m;
        }
#pragma unroll
      for (int k = 0; k < 4; k++) {
        const uint32_t g = base + k * 32 + lane;
        if (g < q.G) *(int4 *)at(out, g, 16) = make_int4(y[k][0], y[k][1], y[k][2], y[k][3]);
      }
    }
    hits = __reduce_add_sync(FULL_MASK, hits);
    if (lane == 0) *(int32_t *)at(q.lens, t, q.lens_s) = valid ? hits : 0;
  }
}

/* DSV4KV_CUDA_TOPK_TABLE_REGS=1: global_topk_warp_regs_kernel where it
 * applies (read once). */
static int topk_table_regs(void) {
  static volatile int on = -1;
  if (on < 0) {
    const char *e = getenv("DSV4KV_CUDA_TOPK_TABLE_REGS");
    on = e && !strcmp(e, "1");
  }
  return on;
}

int rows4_global_topk(topk_params *p, const global_topk_args *a, const cuda_call *call) {
  if (a->K < 4 || a->K > INT32_MAX || a->T > INT32_MAX || !rows4_view(&a->topk, a->K) ||
      !rows4_view(&a->global_out, a->K))
    return 0;
  rows4_params q;
  if (!stride32(&a->topk, 0, 4, &q.topk_s) || !stride32(&a->req, 0, 4, &q.req_s) ||
      !stride32(&a->block_table, 0, 4, &q.bt_s0) || !stride32(&a->block_table, 1, 4, &q.bt_s1) ||
      !stride32(&a->valid, 0, 1, &q.valid_s) || !stride32(&a->global_out, 0, 4, &q.out_s) ||
      !stride32(&a->lens_out, 0, 4, &q.lens_s))
    return 0; /* the general kernel's 64-bit offsets */
  const int64_t bs = a->block_size, big = (int64_t)1 << 31;
  const int64_t pb = a->P > big / bs ? big : a->P * bs; /* exact up to 2^31 */
  q.topk = a->topk.data, q.req = a->req.data, q.bt = a->block_table.data, q.valid = a->valid.data;
  q.out = a->global_out.data, q.lens = a->lens_out.data;
  q.T = (uint32_t)a->T, q.G = (uint32_t)(a->K / 4), q.R32 = (uint32_t)(a->R < big ? a->R : big);
  q.lim = (uint32_t)(pb < big ? pb : big), q.limm1 = (int32_t)((pb < big ? pb : big) - 1);
  q.bs = (uint32_t)bs, q.shift = p->pd.shift, q.R = a->R, q.P = a->P, q.note = p->note;
  if (index_warp_rows(a->T, 1)) {
    const unsigned wpb = index_warps_a_block(a->T);
    const uint32_t blocks = (q.T + wpb - 1) / wpb; /* T < 2^31 */
    void (*kernel)(rows4_params) = q.shift >= 0 ? global_topk_warp_pow2_kernel : global_topk_warp_div_kernel;
    if (q.shift >= 0 && a->P <= 64 && topk_table_regs()) kernel = global_topk_warp_regs_kernel;
    CUDA_LAUNCH_REPORTED_SIZED(kernel, blocks > (1u << 20) ? 1u << 20 : blocks, 32 * wpb, 0, *call, q);
    return 1;
  }
  /* 2 groups a thread where index_block gives a row fewer threads than it
   * has groups (many rows), and then index_block's threads (64 at T 4096:
   * top-k 1024 in 2 rounds of 2 groups); a forced thread count takes 2
   * groups always, so the registry's few rows reach the second group's checks */
  const unsigned f = (unsigned)cuda_index_threads_forced(), G = q.G;
  const int two = f || index_block(a->T) < rows4_threads(G);
  const unsigned grid = index_grid(a->T), threads =
      f ? f : two ? min(rows4_threads((G + 1) / 2), index_block(a->T)) : rows4_threads(G);
  void (*kernel)(rows4_params) = two ? (q.shift >= 0 ? global_topk_rows8_pow2_kernel : global_topk_rows8_div_kernel)
                                     : (q.shift >= 0 ? global_topk_rows4_pow2_kernel : global_topk_rows4_div_kernel);
  for (;;) { /* pass 1 (describe) only with a report */
    kernel<<<grid, threads, 0, call->stream>>>(q);
    if (!q.note.rep || q.note.detail) break;
    q.note.detail = 1;
  }
  return 1;
}

const void *const cuda_index_rows4_kernels[] = {
    (const void *)global_topk_rows4_pow2_kernel, (const void *)global_topk_rows4_div_kernel,
    (const void *)global_topk_rows8_pow2_kernel, (const void *)global_topk_rows8_div_kernel,
    (const void *)global_topk_warp_pow2_kernel, (const void *)global_topk_warp_div_kernel,
    (const void *)global_topk_warp_regs_kernel,  NULL};
