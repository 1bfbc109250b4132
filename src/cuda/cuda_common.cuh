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

/* ---- duplicate slots: the last writing row wins ------------------------------
 *
 * Rows naming the same slot must leave the bytes of the last of them (the
 * CPU: threads own pages).  No workspace is allowed, so one of five ways,
 * chosen on the host (dedup_mode_of; DEDUP_FUSED by cuda_indexer_store in
 * place of DEDUP_MARK):
 *
 *   DEDUP_WARP    T <= DEDUP_WARP_ROWS (decode): the warp of row t loads the
 *                 slots of rows t+1 .. T-1 into registers itself (lane l rows
 *                 t+1+l+32i), with the row and in the same latency, and one
 *                 vote after the compares: no shared copy, no barrier, no
 *                 scan loop (they cost a decode call 0.6-1.4 us,
 *                 bench/NOTES-gpu.md run 27);
 *   DEDUP_SHARED  T <= DEDUP_SHARED_ROWS (small prefill): each
 *                 block copies the slots of the rows from its first one to T
 *                 into shared memory, and each warp scans the rows after its
 *                 own there, 32 at a time;
 *   DEDUP_MARK    larger T: two small kernels before the op (mark_reset,
 *                 mark_max) leave in the first 4-byte scale word of every named
 *                 record the mark of its last writing row, mark(t) = tag |
 *                 (t + 1) << shift, chosen so that no record's scale word can
 *                 ever equal a mark (record_mark_of); in the op a row writes
 *                 when the word still holds its own mark.  The winner stores
 *                 that word in one 4-byte store, so a loser reading it sees
 *                 either the winner's mark or the winner's data, never its own
 *                 mark.  Every mark is overwritten by its winner: nothing of it
 *                 survives the call;
 *   DEDUP_FUSED   the marks of DEDUP_MARK made inside the op's own kernel
 *                 (the indexer store): a cooperative launch whose grid waits
 *                 at two grid barriers, after the marks' reset and after their
 *                 maxima, while each warp's first rows load and quantize; no
 *                 mark kernels, and the row's latency overlaps the marks';
 *   DEDUP_GLOBAL  the rest (records not 4-byte aligned, T >= 2^24): each warp
 *                 scans the later rows' slots in global memory, O(T^2 / 32).
 */
enum { DEDUP_SHARED = 0, DEDUP_MARK = 1, DEDUP_GLOBAL = 2, DEDUP_WARP = 3, DEDUP_FUSED = 5 };
enum { DEDUP_SHARED_ROWS = 1024, DEDUP_WARP_ROWS = 256 };
/* DEDUP_NONE: no resolution at all, where the caller promises distinct
 * slots (options.distinct_slots): every row with a slot writes. */
enum { DEDUP_NONE = 4 };

typedef struct {
  int32_t mode;
  uint32_t tag, shift; /* mark(t) = tag | (t + 1) << shift (DEDUP_MARK) */
} ddedup;

/* Whether row j writes: every row of an insert; an indexer row only at a
 * group boundary with a RoPE row (positions.data non-NULL), as src/cpu/indexer_cpu.c checks it. */
static __device__ __forceinline__ int row_writes(dix positions, int64_t j, int64_t ratio, int64_t cs_rows) {
  if (!positions.data) return 1;
  const int64_t pos = dix_i64(positions, j);
  return pos >= 0 && pos % ratio == ratio - 1 && (pos / ratio) * ratio < cs_rows;
}

/* The slot row j writes, or -2 when it writes none. */
static __device__ __forceinline__ int64_t written_slot(dix slots, int64_t j, int64_t num_slots, dix positions,
                                                       int64_t ratio, int64_t cs_rows) {
  const int64_t s = dix_i64(slots, j);
  return s >= 0 && s < num_slots && row_writes(positions, j, ratio, cs_rows) ? s : -2;
}

/* DEDUP_SHARED: the written slots of rows b0 .. T-1 into sh[] (b0 = the
 * block's first row; T - b0 <= DEDUP_SHARED_ROWS).  Every thread of the
 * block calls it. */
static __device__ __forceinline__ void dedup_shared_load(int64_t *sh, dix slots, int64_t T, int64_t num_slots,
                                                         dix positions, int64_t ratio, int64_t cs_rows) {
  const int64_t b0 = (int64_t)blockIdx.x * CUDA_WARPS;
  for (int64_t j = b0 + threadIdx.x; j < T; j += blockDim.x)
    sh[j - b0] = written_slot(slots, j, num_slots, positions, ratio, cs_rows);
  __syncthreads();
}

/* Whether a writing row after t (t < j < T) names `slot` (DEDUP_SHARED or
 * DEDUP_GLOBAL).  Every lane of the warp calls it with the same t and slot. */
static __device__ __forceinline__ int later_row_writes_slot(int mode, const int64_t *sh, dix slots, int64_t T,
                                                            int64_t t, int64_t slot, dix positions, int64_t ratio,
                                                            int64_t cs_rows) {
  if (mode == DEDUP_NONE) return 0;
  const int64_t b0 = (int64_t)blockIdx.x * CUDA_WARPS;
  for (int64_t j0 = t + 1; j0 < T; j0 += 32) {
    const int64_t j = j0 + lane_id();
    int hit = 0;
    if (j < T)
      hit = mode == DEDUP_SHARED ? sh[j - b0] == slot
                                 : dix_i64(slots, j) == slot && row_writes(positions, j, ratio, cs_rows);
    if (__any_sync(FULL_MASK, hit)) return 1;
  }
  return 0;
}

/* DEDUP_WARP: the low words of the slots of rows t+1+l+32i (l = this lane,
 * i < DEDUP_WARP_ROWS / 32).  Every lane calls it; loads only, so that they
 * issue with the row's (slots[] contiguous, the common view: constant
 * offsets).  No range check: they are compared with a slot in range, and a
 * match is checked again on the whole slot.  T <= DEDUP_WARP_ROWS
 * (dedup_mode_of), so the row counts are ints. */
typedef struct {
  uint32_t lo[DEDUP_WARP_ROWS / 32]; /* set for i < dlater_n(later) */
  int later; /* the warp's rows after t: T - (t + 1) */
  int left;  /* rows at and after this lane's first (T - (t + 1 + l)): lo[i] holds a row where 32 i < left */
} dlater;
/* The words of lo[] a warp with `later` rows after its own reads: 2 (up to
 * 64 rows: a decode step of 64, the last rows of 256) or 8, each a straight
 * run of loads. */
static __device__ __forceinline__ int dlater_n(int later) { return later <= 64 ? 2 : DEDUP_WARP_ROWS / 32; }
static __device__ __forceinline__ void dedup_warp_load_n(dlater *l, uint64_t q, uint64_t step, int n) {
  for (int i = 0; i < n; i++) l->lo[i] = 32 * i < l->left ? *(const uint32_t *)(uintptr_t)(q + step * i) : ~0u;
}
static __device__ __forceinline__ void dedup_warp_load(dlater *l, dix slots, int64_t T, int64_t t) {
  l->later = (int)(T - (t + 1));
  l->left = l->later - lane_id();
  /* unsigned: past T the address may wrap (a huge stride of a short view); it is never read there.
   * A row past T keeps ~0u, the low word of no slot below 2^32 - 1. */
  const uint64_t q = (uint64_t)(uintptr_t)slots.data + (uint64_t)(t + 1 + lane_id()) * (uint64_t)slots.s0 * 8;
  const uint64_t step = slots.s0 == 1 ? 256 : (uint64_t)slots.s0 * 8 * 32;
  const int n = dlater_n(l->later); /* the same in the whole warp */
  if (slots.s0 == 1) { /* constant offsets */
    if (n == 2)
      dedup_warp_load_n(l, q, 256, 2);
    else
      dedup_warp_load_n(l, q, 256, DEDUP_WARP_ROWS / 32);
  } else if (n == 2) {
    dedup_warp_load_n(l, q, step, 2);
  } else {
    dedup_warp_load_n(l, q, step, DEDUP_WARP_ROWS / 32);
  }
}
static __device__ __forceinline__ int dlater_near_n(const dlater *l, uint32_t lo, int n) {
  int near = 0;
  for (int i = 0; i < n; i++) near |= l->lo[i] == lo;
  return near;
}

/* DEDUP_WARP: whether a writing row after t names `slot` (a slot in range):
 * where no later row's slot has its low word, none; else the whole slots of
 * the rows decide.  Rows with a position (the indexer) are checked for
 * writing only where the slot matches: rarely, so the common path loads no
 * positions.  Every lane calls it with the same t and slot. */
static __device__ __forceinline__ int later_row_writes_slot_warp(const dlater *l, dix slots, int64_t t, int64_t slot,
                                                                 dix positions, int64_t ratio, int64_t cs_rows) {
  /* (a row past T, ~0u, may pass for one: the whole slots then decide) */
  const int n = dlater_n(l->later);
  const uint32_t lo = (uint32_t)slot;
  const int near = n == 2 ? dlater_near_n(l, lo, 2) : dlater_near_n(l, lo, DEDUP_WARP_ROWS / 32);
  if (!__any_sync(FULL_MASK, near)) return 0;
  int hit = 0;
  for (int i = 0; i < DEDUP_WARP_ROWS / 32; i++) {
    const int64_t j = t + 1 + lane_id() + 32 * i;
    if (32 * i < l->left && dix_i64(slots, j) == slot) hit |= row_writes(positions, j, ratio, cs_rows);
  }
  return __any_sync(FULL_MASK, hit);
}

/* DEDUP_MARK: whether row t is the last to write the record whose first
 * scale word is at w (read past L1: the marks were written by the kernels
 * before). */
static __device__ __forceinline__ int mark_is_mine(ddedup d, const uint8_t *w, int64_t t) {
  /* one lane reads, the warp agrees: no lane can see the winner's later store */
  unsigned int v = lane_id() == 0 ? __ldcg((const unsigned int *)w) : 0u;
  v = __shfl_sync(FULL_MASK, v, 0);
  return v == (d.tag | (uint32_t)(t + 1) << d.shift);
}

/* The parameters of mark_reset / mark_max (backend_cuda.cu). */
typedef struct {
  dix slots, positions; /* positions.data NULL: every row writes */
  int64_t T, num_slots, ratio, cs_rows;
  uint8_t *base;
  int64_t page_stride;
  int32_t bs;
  record_layout layout;
  ddedup d;
  dpagediv bsd; /* division by bs */
} mark_params;

/* The way for T rows of a record of `layout` in a cache at base with pages
 * page_stride apart; the tag and shift of its marks (a mark must differ from
 * any scale word the op can write there):
 *   UE8M0 and e4m3 scale bytes are never 0 (the amax floors give UE8M0 >= 1,
 *   NVFP4 scales >= 2^-9 = e4m3 0x01): mark = (t + 1) << 8, first byte 0;
 *   the indexer's fp32 scale 2^e is positive: mark = 2^31 | (t + 1). */
/* The way DSV4KV_CUDA_DEDUP (warp, shared, mark, global, fused) forces for the
 * tests, or -1 (read once; "warp" and "shared" apply only where the rows fit;
 * "fused" is the indexer store's: there dedup_mode_of gives DEDUP_MARK at any
 * T, which the inserts take as it is). */
int cuda_dedup_forced(void);
static inline ddedup dedup_mode_of(int64_t T, const record_layout *layout, int fp32_scale, const void *base,
                                   int64_t page_stride, int distinct_slots) {
  ddedup d = {DEDUP_WARP, 0, 0};
  if (distinct_slots) {
    d.mode = DEDUP_NONE;
    return d;
  }
  const int forced = cuda_dedup_forced();
  if (T <= DEDUP_WARP_ROWS && (forced < 0 || forced == DEDUP_WARP)) return d;
  d.mode = DEDUP_SHARED;
  if (T <= DEDUP_SHARED_ROWS && (forced < 0 || forced == DEDUP_SHARED || forced == DEDUP_WARP)) return d;
  d.mode = DEDUP_GLOBAL;
  if (forced == DEDUP_GLOBAL) return d;
  if ((uintptr_t)base % 4 || page_stride % 4 || layout->scale_bytes < 4 || T >= (1 << 24) - 1) return d;
  d.mode = DEDUP_MARK;
  d.tag = fp32_scale ? 0x80000000u : 0u;
  d.shift = fp32_scale ? 0 : 8;
  return d;
}

/* The first scale word of the record of `slot` (in range). */
static __device__ __forceinline__ unsigned int *mark_word(const mark_params *p, int64_t slot) {
  uint8_t *page = p->base + dpd_page(p->bsd, slot) * p->page_stride; /* a shift, not a 64-bit division */
  return (unsigned int *)(page + record_scales_off(&p->layout, p->bs, dpd_off(p->bsd, slot)));
}
/* Rows first, first + step, ...: every named record's first scale word :=
 * the tag (below every mark)... */
static __device__ __forceinline__ void mark_reset_rows(const mark_params *p, int64_t first, int64_t step) {
  for (int64_t j = first; j < p->T; j += step) {
    const int64_t s = written_slot(p->slots, j, p->num_slots, p->positions, p->ratio, p->cs_rows);
    if (s >= 0) *mark_word(p, s) = p->d.tag;
  }
}
/* ... then the largest mark of the rows naming it: the last row's. */
static __device__ __forceinline__ void mark_max_rows(const mark_params *p, int64_t first, int64_t step) {
  for (int64_t j = first; j < p->T; j += step) {
    const int64_t s = written_slot(p->slots, j, p->num_slots, p->positions, p->ratio, p->cs_rows);
    if (s >= 0) atomicMax(mark_word(p, s), p->d.tag | (uint32_t)(j + 1) << p->d.shift);
  }
}

/* Launches the two mark kernels when p->d.mode is DEDUP_MARK. */
void cuda_mark_rows(cudaStream_t stream, const mark_params *p);
/* Asks device dev once how many blocks of the indexer's fused kernels it
 * holds at once (indexer_cuda.cu), so that a warm-up leaves nothing for a
 * graph capture to query. */
void cuda_indexer_fused_query(int dev);

/* ---- fast exact conversions (sm_89+ cvt); each equals formats/ref.h's ------ */

/* e4m3x2_quant of two values that are not NaN: the hardware's encode alone. */
static __device__ __forceinline__ uint32_t e4m3x2_quant_nonnan(float lo, float hi) {
  unsigned short r;
  asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;" : "=h"(r) : "f"(hi), "f"(lo));
  return r;
}
/* fp8_quant_code of two values (OCP e4m3 only): NaN -> +max, then the
 * hardware's round-to-nearest-even encode with saturation to +-448, which
 * is e4m3_encode of the reference's clamped value. */
static __device__ __forceinline__ uint32_t e4m3x2_quant(float lo, float hi) {
  /* satfinite clamps to +-448 as the reference's clamp does; only its NaN ->
   * +max is left to do */
  lo = lo == lo ? lo : FP8_OCP_MAX;
  hi = hi == hi ? hi : FP8_OCP_MAX;
  unsigned short r;
  asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;" : "=h"(r) : "f"(hi), "f"(lo));
  return r;
}

/* The largest magnitude among the 2n bf16 values of w[0 .. n) (two a word),
 * as bf16 bits: above 0x7F80 exactly when one of them is NaN, else the
 * NaN-ignoring amax's bits (magnitudes' bits order as their values).  One
 * 16-bit max a word. */
static __device__ __forceinline__ uint32_t bf16x2_max_magnitude(const uint32_t *w, int n) {
  uint32_t m = 0;
  for (int i = 0; i < n; i++) asm("max.u16x2 %0, %0, %1;" : "+r"(m) : "r"(w[i] & 0x7FFF7FFFu));
  return max(m & 0xFFFFu, m >> 16);
}

/* Two OCP e4m3 codes (low byte first) as fp32, exactly (via fp16, which
 * holds every e4m3 value; NaN stays NaN). */
static __device__ __forceinline__ float2 e4m3x2_decode(uint32_t two) {
  unsigned int h2;
  asm("cvt.rn.f16x2.e4m3x2 %0, %1;" : "=r"(h2) : "h"((unsigned short)two));
  float lo, hi;
  asm("cvt.f32.f16 %0, %1;" : "=f"(lo) : "h"((unsigned short)(h2 & 0xFFFF)));
  asm("cvt.f32.f16 %0, %1;" : "=f"(hi) : "h"((unsigned short)(h2 >> 16)));
  return make_float2(lo, hi);
}

/* Two e2m1 codes (the low and high nibble of a byte) as fp32 x 2^-14,
 * exactly: code c with sign s read as the fp16 (c & 7) << 9 | s << 15 is the
 * e2m1 value times 2^-14 (subnormal 0.5 included). */
static __device__ __forceinline__ float2 e2m1x2_decode_2m14(uint32_t byte) {
  const unsigned short lo = (unsigned short)((byte & 7u) << 9 | (byte & 8u) << 12);
  const unsigned short hi = (unsigned short)((byte & 0x70u) << 5 | (byte & 0x80u) << 8);
  float a, b;
  asm("cvt.f32.f16 %0, %1;" : "=f"(a) : "h"(lo));
  asm("cvt.f32.f16 %0, %1;" : "=f"(b) : "h"(hi));
  return make_float2(a, b);
}

/* f32_to_bf16 of two values that need no rounding (zero, or normal with at
 * most 8 significant bits): their high halves, low value first. */
static __device__ __forceinline__ uint32_t bf16x2_high(float lo, float hi) {
  return __byte_perm(__float_as_uint(lo), __float_as_uint(hi), 0x7632);
}

/* f32_to_bf16 of two values, low half first: the hardware's RNE, and the
 * reference's 0x7FFF for NaN. */
static __device__ __forceinline__ uint32_t bf16x2_of(float lo, float hi) {
  unsigned int r;
  asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
  if (lo != lo) r = (r & 0xFFFF0000u) | 0x7FFFu;
  if (hi != hi) r = (r & 0x0000FFFFu) | 0x7FFF0000u;
  return r;
}

/* The hardware's RNE of two values to bf16, low half first: f32_to_bf16 of
 * each (tests/cuda/exhaustive_cuda.cu, every fp32), without bf16x2_of's
 * fix-up of a NaN, which the hardware makes 0x7FFF (NUMERICS §9); its callers
 * do not rely on that: every NaN gives them the same stored bytes. */
static __device__ __forceinline__ uint32_t bf16x2_rn(float lo, float hi) {
  unsigned int r;
  asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
  return r;
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
#define CUDA_LAUNCH_REPORTED_SIZED(kernel, grid, block, smem, call, p) \
  do {                                                                 \
    (kernel)<<<(grid), (block), (smem), (call).stream>>>(p);           \
    if ((p).note.rep) {                                                \
      (p).note.detail = 1;                                             \
      (kernel)<<<(grid), (block), (smem), (call).stream>>>(p);         \
    }                                                                  \
  } while (0)
#define CUDA_LAUNCH_REPORTED(kernel, grid, call, p) CUDA_LAUNCH_REPORTED_SIZED(kernel, grid, CUDA_BLOCK, 0, call, p)

/* The kernels of each op (for dsv4kv_warmup): NULL-terminated lists. */
extern const void *const cuda_insert_kernels[];
extern const void *const cuda_gather_kernels[];
extern const void *const cuda_index_kernels[];
extern const void *const cuda_index_rows4_kernels[];
extern const void *const cuda_flashinfer_kernels[];
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
