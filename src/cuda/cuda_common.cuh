/* What the CUDA kernels share: the seam's C headers, the device side of a
 * call's report, 16-byte loads and stores that fall back to bytes when a
 * tensor is not aligned, warp helpers, and the host side of a launch (the
 * tensors' device, the caller's stream, the launch status).
 *
 * Every kernel runs on the caller's stream, allocates nothing and never
 * synchronizes the host, so a call can be captured in a CUDA graph.  Index
 * values read from tensors are bounds-checked here on the device with the CPU
 * backend's rules and keys (SPEC §7), so the two report the same entry. */
#ifndef DSV4KV_CUDA_COMMON_CUH
#define DSV4KV_CUDA_COMMON_CUH

#include <cuda_runtime.h>
#include <stdint.h>

extern "C" {
#include "backend.h"
}
#include "formats/numfmt.h"
#include "formats/records.h"
#include "formats/ref.h"

#define FULL_MASK 0xFFFFFFFFu
enum { CUDA_BLOCK = 256, CUDA_WARPS = CUDA_BLOCK / 32 };

/* ---- the report (backend.h: counts by atomics, the entry in a second pass) */

/* Where a kernel notes skipped entries.  Pass 0 counts them and keeps the
 * lowest key (atomicMin); pass 1, the same kernel launched again on the same
 * stream only when pass 0 skipped something, writes reason and values of the
 * entry whose key is that minimum.  Keys never tie (report.h), so exactly
 * one entry writes, and the report names the entry the CPU names. */
typedef struct {
  dsv4kv_report *rep; /* device memory, or NULL: nothing is reported */
  int detail;         /* 0: count; 1: describe the first entry          */
} dnote;

/* Pass 1 has nothing to do unless pass 0 skipped an entry. */
static __device__ __forceinline__ int dnote_idle(dnote n) {
  return n.detail && (!n.rep || *(volatile int64_t *)&n.rep->skipped == 0);
}

static __device__ __forceinline__ void dnote_n(dnote n, int64_t count, int64_t key, skip_reason reason,
                                               int64_t v0, int64_t v1, int64_t v2, int64_t v3, int64_t v4,
                                               int64_t v5) {
  if (!n.rep) return;
  if (!n.detail) {
    atomicAdd((unsigned long long *)&n.rep->skipped, (unsigned long long)count);
    atomicMin((long long *)&n.rep->first_key, (long long)key);
  } else if (n.rep->first_key == key) {
    n.rep->reason = (int32_t)reason;
    int64_t *v = n.rep->values;
    v[0] = v0, v[1] = v1, v[2] = v2, v[3] = v3, v[4] = v4, v[5] = v5;
  }
}
#define dnote1(n, key, reason, v0, v1, v2, v3, v4, v5) dnote_n(n, 1, key, reason, v0, v1, v2, v3, v4, v5)

/* Non-finite values of a warp's row (pass 0 only). */
static __device__ __forceinline__ void dnote_nonfinite(dnote n, int64_t count) {
  if (n.rep && !n.detail && count) atomicAdd((unsigned long long *)&n.rep->nonfinite, (unsigned long long)count);
}

/* ---- loads and stores ----------------------------------------------------- */
/* `vec` is decided on the host: 1 when the tensor's base and every stride
 * the access moves by are multiples of 16 bytes. */
static __device__ __forceinline__ uint4 load16(const uint8_t *p, int vec) {
  if (vec) return __ldg((const uint4 *)p);
  uint32_t w[4];
  for (int i = 0; i < 4; i++)
    w[i] = (uint32_t)p[4 * i] | (uint32_t)p[4 * i + 1] << 8 | (uint32_t)p[4 * i + 2] << 16 |
           (uint32_t)p[4 * i + 3] << 24;
  return make_uint4(w[0], w[1], w[2], w[3]);
}
static __device__ __forceinline__ void store_bytes(uint8_t *p, const uint8_t *b, int n) {
  for (int i = 0; i < n; i++) p[i] = b[i];
}
static __device__ __forceinline__ void store16(uint8_t *p, uint4 v, int vec) {
  if (vec) {
    *(uint4 *)p = v;
    return;
  }
  uint32_t w[4] = {v.x, v.y, v.z, v.w};
  for (int i = 0; i < 16; i++) p[i] = (uint8_t)(w[i / 4] >> (8 * (i % 4)));
}
/* n (4 or 8) bytes b[0..n) at p, one access when vec. */
static __device__ __forceinline__ void store_small(uint8_t *p, const uint8_t *b, int n, int vec) {
  if (vec && n == 8) {
    *(uint2 *)p = make_uint2((uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24,
                             (uint32_t)b[4] | (uint32_t)b[5] << 8 | (uint32_t)b[6] << 16 | (uint32_t)b[7] << 24);
  } else if (vec && n == 4) {
    *(uint32_t *)p = (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
  } else {
    store_bytes(p, b, n);
  }
}
static __device__ __forceinline__ uint4 pack16(const uint8_t *b) {
  uint32_t w[4];
  for (int i = 0; i < 4; i++)
    w[i] = (uint32_t)b[4 * i] | (uint32_t)b[4 * i + 1] << 8 | (uint32_t)b[4 * i + 2] << 16 |
           (uint32_t)b[4 * i + 3] << 24;
  return make_uint4(w[0], w[1], w[2], w[3]);
}
static __device__ __forceinline__ void unpack16(uint4 v, uint8_t *b) {
  uint32_t w[4] = {v.x, v.y, v.z, v.w};
  for (int i = 0; i < 16; i++) b[i] = (uint8_t)(w[i / 4] >> (8 * (i % 4)));
}
/* 16 bf16 values (32 bytes) at p. */
static __device__ __forceinline__ void load_bf16x16(const uint8_t *p, int vec, uint16_t *x) {
  uint4 a = load16(p, vec), b = load16(p + 16, vec);
  uint32_t w[8] = {a.x, a.y, a.z, a.w, b.x, b.y, b.z, b.w};
  for (int i = 0; i < 8; i++) x[2 * i] = (uint16_t)w[i], x[2 * i + 1] = (uint16_t)(w[i] >> 16);
}
static __device__ __forceinline__ void store_bf16x16(uint8_t *p, int vec, const uint16_t *x) {
  uint32_t w[8];
  for (int i = 0; i < 8; i++) w[i] = (uint32_t)x[2 * i] | (uint32_t)x[2 * i + 1] << 16;
  store16(p, make_uint4(w[0], w[1], w[2], w[3]), vec);
  store16(p + 16, make_uint4(w[4], w[5], w[6], w[7]), vec);
}

/* Index tensors: element i (j) of a strided view, strides in elements. */
typedef struct {
  const uint8_t *data;
  int64_t s0, s1;
} dix;
static inline dix dix_of(const tview *v) {
  dix d = {v->data, v->ndim > 0 ? v->stride[0] : 0, v->ndim > 1 ? v->stride[1] : 0};
  return d;
}
static __device__ __forceinline__ int32_t dix_i32(dix v, int64_t i) { return *(const int32_t *)(v.data + i * v.s0 * 4); }
static __device__ __forceinline__ int32_t dix_i32_2(dix v, int64_t i, int64_t j) {
  return *(const int32_t *)(v.data + (i * v.s0 + j * v.s1) * 4);
}
static __device__ __forceinline__ int32_t *dix_i32_2p(dix v, int64_t i, int64_t j) {
  return (int32_t *)(v.data + (i * v.s0 + j * v.s1) * 4);
}
static __device__ __forceinline__ int64_t dix_i64(dix v, int64_t i) { return *(const int64_t *)(v.data + i * v.s0 * 8); }
static __device__ __forceinline__ int dix_bool(dix v, int64_t i) { return v.data[i * v.s0] != 0; }

/* The reference computes slots in int32; wrap the same way. */
static __device__ __forceinline__ int32_t wrap32(int64_t v) { return (int32_t)(uint32_t)(uint64_t)v; }

/* Division by a block size: shift and mask when it is a power of two. */
typedef struct {
  int64_t bs;
  int shift; /* log2(bs), or -1 */
} dpagediv;
static inline dpagediv dpagediv_of(int64_t bs) {
  dpagediv d = {bs, -1};
  if (bs > 0 && (bs & (bs - 1)) == 0)
    for (d.shift = 0; ((int64_t)1 << d.shift) < bs; d.shift++) {
    }
  return d;
}
static __device__ __forceinline__ int64_t dpd_page(dpagediv d, int64_t x) { return d.shift >= 0 ? x >> d.shift : x / d.bs; }
static __device__ __forceinline__ int64_t dpd_off(dpagediv d, int64_t x) {
  return d.shift >= 0 ? x & (d.bs - 1) : x % d.bs;
}

/* ---- warps ------------------------------------------------------------- */
static __device__ __forceinline__ int64_t warp_id_global(void) {
  return ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
}
static __device__ __forceinline__ int64_t warp_count_global(void) { return ((int64_t)gridDim.x * blockDim.x) >> 5; }
static __device__ __forceinline__ int lane_id(void) { return (int)(threadIdx.x & 31); }
static __device__ __forceinline__ float warp_max_group(float v, int group) {
  for (int m = 1; m < group; m <<= 1) v = max_ignore_nan(v, __shfl_xor_sync(FULL_MASK, v, m));
  return v;
}
static __device__ __forceinline__ int64_t warp_sum_i64(int64_t v) {
  for (int m = 16; m >= 1; m >>= 1) v += __shfl_xor_sync(FULL_MASK, v, m);
  return v;
}

/* Whether row j writes: every row of an insert; an indexer row only at a
 * group boundary with a RoPE row (positions.data non-NULL), as src/cpu/indexer_cpu.c checks it. */
static __device__ __forceinline__ int row_writes(dix positions, int64_t j, int64_t ratio, int64_t cs_rows) {
  if (!positions.data) return 1;
  const int64_t pos = dix_i64(positions, j);
  return pos >= 0 && pos % ratio == ratio - 1 && (pos / ratio) * ratio < cs_rows;
}

/* Whether a writing row after t (t < j < T) of `slots` names `slot`: the rule
 * "the last writing row wins" (the CPU: threads own pages) without a workspace, each warp
 * scanning the rows after its own, 32 at a time.  Every lane of the warp
 * calls it with the same t and slot. */
static __device__ __forceinline__ int later_row_writes_slot(dix slots, int64_t T, int64_t t, int64_t slot,
                                                            dix positions, int64_t ratio, int64_t cs_rows) {
  for (int64_t j0 = t + 1; j0 < T; j0 += 32) {
    const int64_t j = j0 + lane_id();
    const int hit = j < T && dix_i64(slots, j) == slot && row_writes(positions, j, ratio, cs_rows);
    if (__any_sync(FULL_MASK, hit)) return 1;
  }
  return 0;
}

/* ---- host side of a launch ---------------------------------------------- */

/* Blocks of CUDA_BLOCK threads for `rows` warps' worth of work (kernels loop
 * when there are more rows than the grid holds). */
static inline unsigned cuda_grid_rows(int64_t rows) {
  int64_t b = (rows + CUDA_WARPS - 1) / CUDA_WARPS;
  return b < 1 ? 1u : b > (1 << 20) ? (1u << 20) : (unsigned)b;
}
static inline int cuda_aligned16(const void *p, int64_t stride_bytes) {
  return ((uintptr_t)p % 16 == 0) && (stride_bytes % 16 == 0);
}

/* The tensors' device made current for the call, the caller's restored by
 * cuda_leave. */
typedef struct {
  int prev, dev;
  cudaStream_t stream;
} cuda_call;
dsv4kv_status cuda_enter(cuda_call *c, int device_id, const exec_opts *o);
/* The launch status of the call (cudaGetLastError), the caller's device back. */
dsv4kv_status cuda_leave(cuda_call *c, const char *what);
/* Resets the caller's device report (when given) for op `op` on the stream. */
void cuda_report_reset(cuda_call *c, dsv4kv_report *rep, op_id op);

/* The two passes of a reporting kernel (dnote): counting, then, when there is
 * a report, describing the first skipped entry.  `p` is the kernel's
 * parameter struct with a dnote `note`. */
#define CUDA_LAUNCH_REPORTED(kernel, grid, call, p)                   \
  do {                                                                 \
    (kernel)<<<(grid), CUDA_BLOCK, 0, (call).stream>>>(p);             \
    if ((p).note.rep) {                                                \
      (p).note.detail = 1;                                             \
      (kernel)<<<(grid), CUDA_BLOCK, 0, (call).stream>>>(p);           \
    }                                                                  \
  } while (0)

/* The kernels of each op (for dsv4kv_warmup): NULL-terminated lists. */
extern const void *const cuda_insert_kernels[];
extern const void *const cuda_gather_kernels[];
extern const void *const cuda_index_kernels[];
extern const void *const cuda_indexer_kernels[];
extern const void *const cuda_report_kernels[];

extern "C" {
dsv4kv_status cuda_insert(const insert_args *a, const exec_opts *o, dsv4kv_report *r);
dsv4kv_status cuda_gather(const gather_args *a, const exec_opts *o, dsv4kv_report *r);
dsv4kv_status cuda_global_topk(const global_topk_args *a, const exec_opts *o, dsv4kv_report *r);
dsv4kv_status cuda_combine(const combine_args *a, const exec_opts *o, dsv4kv_report *r);
dsv4kv_status cuda_flashinfer(const flashinfer_args *a, const exec_opts *o, dsv4kv_report *r);
dsv4kv_status cuda_indexer_store(const indexer_args *a, const exec_opts *o, dsv4kv_report *r);
}

#endif
