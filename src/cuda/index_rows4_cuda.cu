/* CUDA global top-k on rows of 4-entry groups (SPEC §5.1; the general
 * kernel and the launcher: index_ops_cuda.cu; CPU: src/cpu/index_ops_cpu.c).
 *
 * When topk_indices and global_out are contiguous along the row, with
 * 16-byte aligned rows and K a multiple of 4 (the usual case: top-k 512 /
 * 1024), a thread takes 4 consecutive entries: one 16-byte load, the 4
 * table lookups in flight together, one 16-byte store.  A block a row with
 * a thread a group (whole warps, at most 256), so a thread pays the chain
 * entry -> table entry -> store about once where the general kernel pays it
 * once an iteration with a barrier between.  Skipped entries are noted after the stores,
 * with the general kernel's keys and values, so bytes, counts and reports
 * are its (the case registry runs both: rows of any K reach the general
 * kernel).  The same layout for combine and the flashinfer indices, a block
 * of one group a thread, ran slower than the general kernels (bench/NOTES-gpu.md)
 * and was not kept. */
#include "cuda/index_ops_cuda.cuh"

enum { ROWS4_MAX_THREADS = CUDA_BLOCK };

/* Whole warps, a thread a group where the row has at most 256 groups. */
static unsigned rows4_threads(int64_t groups) {
  int64_t w = (groups + 31) / 32;
  if (w < 1) w = 1;
  if (w > ROWS4_MAX_THREADS / 32) w = ROWS4_MAX_THREADS / 32;
  return (unsigned)(32 * w);
}

/* Whether rows of `width` int32 entries of v can be read 4 at a time. */
static int rows4_view(const tview *v, int64_t width) {
  if (width % 4) return 0;
  if (v->ndim >= 2 && v->shape[1] > 1 && v->stride[1] != 1) return 0;
  if (v->shape[0] > 1 && v->stride[0] % 4) return 0;
  return (uintptr_t)v->data % 16 == 0;
}

/* The block's sum of v; every thread of the block calls it. */
static __device__ __forceinline__ int64_t rows4_block_sum(int v, int32_t *sh) {
  v = __reduce_add_sync(FULL_MASK, v);
  const int nw = (int)(blockDim.x >> 5);
  if (nw == 1) return v;
  if (lane_id() == 0) sh[threadIdx.x >> 5] = v;
  __syncthreads();
  int64_t s = 0;
  for (int w = 0; w < nw; w++) s += sh[w];
  __syncthreads(); /* sh is free for the next row */
  return s;
}

static __device__ __forceinline__ void load4(const int32_t *p, int32_t *x) {
  const int4 v = *(const int4 *)p;
  x[0] = v.x, x[1] = v.y, x[2] = v.z, x[3] = v.w;
}
static __device__ __forceinline__ void store4(int32_t *p, const int32_t *y) {
  *(int4 *)p = make_int4(y[0], y[1], y[2], y[3]);
}

/* ---- §5.1 ---------------------------------------------------------------- */
/* The note of a skipped entry (rare: after the group's loads). */
static __device__ __forceinline__ void note_topk_column(dnote n, int64_t t, int64_t j, int64_t x, int64_t req,
                                                        int64_t lp, int64_t P) {
  dnote1(n, skip_key(t, 1 + j, 16), SKIP_TOPK_COLUMN, t, j, x, req, lp, P);
}

__global__ void __launch_bounds__(ROWS4_MAX_THREADS, 4) global_topk_rows4_kernel(topk_params p) {
  if (dnote_idle(p.note)) return;
  __shared__ int32_t sh[ROWS4_MAX_THREADS / 32];
  const int64_t G = p.K >> 2;
  const int shift = p.pd.shift;
  const uint32_t bs = (uint32_t)p.pd.bs; /* <= INT32_MAX: the slot arithmetic wraps as wrap32's */
  for (int64_t t = blockIdx.x; t < p.T; t += gridDim.x) {
    const int valid = dix_bool(p.valid, t);
    const int64_t req = dix_i32(p.req, t);
    const int req_ok = req >= 0 && req < p.R;
    if (!req_ok && valid && threadIdx.x == 0)
      dnote1(p.note, skip_key(t, 0, 16), SKIP_TOPK_REQUEST, t, req, p.R, 0, 0, 0);
    const int32_t *in = (const int32_t *)(p.topk.data + t * p.topk.s0 * 4);
    int32_t *out = (int32_t *)(p.out.data + t * p.out.s0 * 4);
    const uint8_t *row = p.block_table.data + (req_ok ? req : 0) * p.block_table.s0 * 4;
    int hits = 0;
    for (int64_t g = threadIdx.x; g < G; g += blockDim.x) {
      int32_t x[4], e[4], y[4];
      uint32_t lp[4];
      unsigned look = 0, past = 0;
      load4(in + 4 * g, x);
#pragma unroll
      for (int i = 0; i < 4; i++) {
        const uint32_t u = (uint32_t)x[i];
        lp[i] = shift >= 0 ? u >> shift : u / bs;
        e[i] = 0;
        if (x[i] >= 0 && req_ok) {
          if ((int64_t)lp[i] < p.P) {
            e[i] = *(const int32_t *)(row + (int64_t)lp[i] * p.block_table.s1 * 4);
            look |= 1u << i;
          } else {
            past |= 1u << i;
          }
        }
      }
#pragma unroll
      for (int i = 0; i < 4; i++) {
        const uint32_t u = (uint32_t)x[i], off = shift >= 0 ? u & (bs - 1) : u - lp[i] * bs;
        y[i] = look >> i & 1 ? (int32_t)((uint32_t)e[i] * bs + off) : -1;
      }
      store4(out + 4 * g, y);
      hits += __popc(look);
      if (past && valid)
        for (int i = 0; i < 4; i++)
          if (past >> i & 1) note_topk_column(p.note, t, 4 * g + i, x[i], req, lp[i], p.P);
    }
    const int64_t n = rows4_block_sum(hits, sh);
    if (threadIdx.x == 0) *(int32_t *)(p.lens.data + t * p.lens.s0 * 4) = valid ? (int32_t)n : 0;
  }
}

int rows4_global_topk(topk_params *p, const global_topk_args *a, const cuda_call *call) {
  if (a->K < 4 || !rows4_view(&a->topk, a->K) || !rows4_view(&a->global_out, a->K)) return 0;
  INDEX_LAUNCH_BLOCK(global_topk_rows4_kernel, a->T, rows4_threads(a->K / 4), *call, *p);
  return 1;
}

const void *const cuda_index_rows4_kernels[] = {(const void *)global_topk_rows4_kernel, NULL};
