/* CUDA quantize_and_insert_k_cache (SPEC §3; CPU: src/cpu/insert_cpu.c).
 *
 * One warp per token: lane l holds the row's values 16l..16l+15 (two 16-byte
 * loads), so a V4 fp8 block of 64 values is 4 lanes, an MXFP8 block 2 and an
 * NVFP4 block 1; block amax by warp shuffles, then each lane writes its 16
 * codes (NVFP4: 8 bytes) in one store and the first lane of a block its scale
 * byte.  V4's RoPE values (lanes 28..31) are copied raw.  The arithmetic of
 * every value is formats/ref.h's. */
#include "cuda/cuda_common.cuh"
#include "formats/e2m1_div.h"

typedef struct {
  const uint8_t *k;  /* row t at k + t * k_stride */
  int64_t k_stride;  /* bytes */
  dix slots;
  int64_t T;
  uint8_t *base;
  int64_t page_stride, num_slots;
  int32_t bs;
  dpagediv bsd; /* division by bs: a shift for a power of two */
  int32_t record, fnuz, check_nonfinite;
  int32_t vec_k, vec_c, vec4_c; /* 16-byte accesses on k / on the cache; 4-byte scale words */
  int32_t evict_k;              /* key rows loaded evict-first (16-byte aligned; see INSERT_EVICT_MAX_ROWS) */
  record_layout layout;
  ddedup dd;
  dnote note;
} insert_params;

/* Key rows loaded with an evict-first policy (insert_params.evict_k): they
 * stream through L2 once, and the marks each row reads after the mark
 * kernels wrote them (DEDUP_MARK) then stay there.  Measured on the H200
 * (bench/NOTES-gpu.md run 38): at 65536 rows MXFP8 -13 %, NVFP4 -7 % (one
 * mark a 528- / 288-byte record, 2 MiB of marks), V4 +3 % (its marks share
 * sectors); at 524288 rows every record +2-4 % (16 MiB of marks); so token-
 * major records up to 65536 rows.  The code values' stores with the same
 * policy were slower at both sizes. */
enum { INSERT_EVICT_MAX_ROWS = 65536 };
static __device__ __forceinline__ void load_row16_evict_first(const uint8_t *k, uint16_t *x) {
  uint64_t pol;
  asm("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(pol));
  uint32_t w[8];
  asm volatile("ld.global.nc.L1::no_allocate.L2::cache_hint.v4.u32 {%0, %1, %2, %3}, [%4], %5;"
               : "=r"(w[0]), "=r"(w[1]), "=r"(w[2]), "=r"(w[3])
               : "l"(k), "l"(pol));
  asm volatile("ld.global.nc.L1::no_allocate.L2::cache_hint.v4.u32 {%0, %1, %2, %3}, [%4], %5;"
               : "=r"(w[4]), "=r"(w[5]), "=r"(w[6]), "=r"(w[7])
               : "l"(k + 16), "l"(pol));
  for (int i = 0; i < 8; i++) x[2 * i] = (uint16_t)w[i], x[2 * i + 1] = (uint16_t)(w[i] >> 16);
}

/* The UE8M0 byte and 2^-e of a block's floored amax: ue8m0_block_scale, with
 * the OCP exponent from amax's bits (ceil_log2_ratio_175). */
static __device__ __forceinline__ uint8_t block_scale(float amax, int fnuz, float *inv) {
  int e;
  if (fnuz || isinf(amax)) return ue8m0_block_scale(amax, fp8_quant_max(fnuz), &e, inv);
  e = ceil_log2_ratio_175(amax, 8);
  *inv = pow2f(-e);
  const int b = e + 127;
  return (uint8_t)(b < 0 ? 0 : b > 255 ? 255 : b);
}

/* The scale bytes of a record, held one per g lanes (lane g*i holds byte i),
 * stored as 4-byte words: one store per word, so a reader of the first word
 * sees it whole (DEDUP_MARK).  Every lane calls it. */
static __device__ __forceinline__ void store_scale_words(uint8_t *scales, uint32_t sb, int g, int nbytes, int lane,
                                                         int vec4) {
  const uint32_t b1 = __shfl_sync(FULL_MASK, sb, (lane + g) & 31), b2 = __shfl_sync(FULL_MASK, sb, (lane + 2 * g) & 31),
                 b3 = __shfl_sync(FULL_MASK, sb, (lane + 3 * g) & 31);
  if (lane % (4 * g) || lane / g >= nbytes) return;
  const uint32_t w = (sb & 0xFF) | (b1 & 0xFF) << 8 | (b2 & 0xFF) << 16 | (b3 & 0xFF) << 24;
  uint8_t *dst = scales + lane / g;
  if (vec4) {
    *(uint32_t *)dst = w;
  } else {
    for (int i = 0; i < 4; i++) dst[i] = (uint8_t)(w >> (8 * i));
  }
}

/* Lane `lane`'s NVFP4 block (nvfp4_block_quant_ref): values x[16], its 8
 * packed bytes at values + 8 * lane and its e4m3 scale byte.  The block's
 * values two a word: amax as the largest magnitude's bits (16-bit max), the
 * scale by the hardware's e4m3 encode (t is finite, in [2^-9, 448]), the
 * codes by e2m1x2_encode_bf16x2 (3 paired compares per two values, from 7
 * compares and 14 selects per value).  A block holding a NaN takes the
 * per-value encoder (NaN encodes as 0x7 whatever its sign; its amax
 * ignores NaN). */
static __device__ __forceinline__ void nvfp4_lane(const insert_params *p, int lane, const uint16_t *x,
                                                  uint8_t *values, uint8_t *scales) {
  uint32_t w[8];
  for (int i = 0; i < 8; i++) w[i] = (uint32_t)x[2 * i] | (uint32_t)x[2 * i + 1] << 16;
  const uint32_t am = bf16x2_max_magnitude(w, 8);
  uint8_t sc;
  uint32_t lo, hi;
  if (am <= 0x7F80u) {
    float t = fmaxf(NVFP4_SCALE_MIN, bf16_to_f32((uint16_t)am) * (1.0f / 6.0f));
    t = t < FP8_OCP_MAX ? t : FP8_OCP_MAX;
    sc = (uint8_t)(e4m3x2_quant(t, 0.0f) & 0xFF);
    const e2m1_bounds_bf16x2 b = e2m1_bounds_bf16x2_of(e4m3x2_decode(sc).x);
    uint32_t y[8];
    for (int i = 0; i < 8; i++) y[i] = e2m1x2_encode_bf16x2(w[i], &b);
    lo = __byte_perm(__byte_perm(y[0], y[1], 0x0040), __byte_perm(y[2], y[3], 0x0040), 0x5410);
    hi = __byte_perm(__byte_perm(y[4], y[5], 0x0040), __byte_perm(y[6], y[7], 0x0040), 0x5410);
  } else {
    float amax = 0.0f;
    for (int i = 0; i < 16; i++) amax = max_ignore_nan(amax, fabsf(bf16_to_f32(x[i])));
    float t = max_ignore_nan(NVFP4_SCALE_MIN, amax * (1.0f / 6.0f));
    t = t < FP8_OCP_MAX ? t : FP8_OCP_MAX;
    sc = e4m3_encode(t);
    const e2m1_bounds b = e2m1_bounds_of(e4m3_decode(sc));
    uint32_t c[8];
    for (int i = 0; i < 8; i++)
      c[i] = (uint32_t)e2m1_encode_div(bf16_to_f32(x[2 * i + 1]), &b) << 4 | e2m1_encode_div(bf16_to_f32(x[2 * i]), &b);
    lo = c[0] | c[1] << 8 | c[2] << 16 | c[3] << 24;
    hi = c[4] | c[5] << 8 | c[6] << 16 | c[7] << 24;
  }
  uint8_t *dst = values + 8 * lane;
  if (p->vec_c) {
    *(uint2 *)dst = make_uint2(lo, hi);
  } else {
    for (int i = 0; i < 4; i++) dst[i] = (uint8_t)(lo >> (8 * i)), dst[4 + i] = (uint8_t)(hi >> (8 * i));
  }
  store_scale_words(scales, sc, 1, NVFP4_NUM_SCALES, lane, p->vec4_c);
}

/* Lane `lane`'s part of a main-cache record: values x[16] = row[16l..16l+16). */
static __device__ __forceinline__ void quant_lane(const insert_params *p, const int rec, int lane, const uint16_t *x,
                                                  uint8_t *values, uint8_t *scales) {
  if (rec == DSV4KV_RECORD_NVFP4) {
    nvfp4_lane(p, lane, x, values, scales);
    return;
  }
  /* fp8 blocks: 64 values (V4, 4 lanes) or 32 (MXFP8, 2 lanes) */
  const int v4 = rec == DSV4KV_RECORD_V4, group = v4 ? V4_BLOCK / 16 : MXFP8_BLOCK / 16;
  float f[16], amax = 0.0f;
  for (int i = 0; i < 16; i++) f[i] = bf16_to_f32(x[i]), amax = max_ignore_nan(amax, fabsf(f[i]));
  amax = max_ignore_nan(warp_max_group(amax, group), AMAX_FLOOR);
  const int rope = v4 && lane >= NOPE_DIM / 16;
  float inv;
  const uint8_t sb = block_scale(amax, p->fnuz, &inv);
  /* V4's pad byte (after 7 scales) comes from the first RoPE lane: 0 */
  store_scale_words(scales, rope ? 0u : sb, group, v4 ? V4_SCALE_BYTES : MXFP8_NUM_SCALES, lane, p->vec4_c);
  if (rope) { /* RoPE dims: raw bf16 */
    store_bf16x16(values + NOPE_DIM + 2 * (16 * lane - NOPE_DIM), p->vec_c, x);
    return;
  }
  uint32_t w[4];
  if (!p->fnuz) {
    for (int i = 0; i < 4; i++)
      w[i] = e4m3x2_quant(f[4 * i] * inv, f[4 * i + 1] * inv) | e4m3x2_quant(f[4 * i + 2] * inv, f[4 * i + 3] * inv) << 16;
  } else {
    uint8_t codes[16];
    for (int i = 0; i < 16; i++) codes[i] = fp8_quant_code(f[i] * inv, 1);
    const uint4 v = pack16(codes);
    w[0] = v.x, w[1] = v.y, w[2] = v.z, w[3] = v.w;
  }
  store16(values + 16 * lane, make_uint4(w[0], w[1], w[2], w[3]), p->vec_c);
}

/* The kernel body; `warp` (a constant) compiles the decode kernels, whose
 * way is DEDUP_WARP, apart from the rest. */
static __device__ __forceinline__ void insert_rows(const insert_params &p, const int rec, const int warp) {
  __shared__ int64_t later[DEDUP_SHARED_ROWS];
  if (dnote_idle(p.note)) return;
  const int lane = lane_id();
  const dix no_positions = {NULL, 0, 0};
  if (!warp && p.dd.mode == DEDUP_SHARED) dedup_shared_load(later, p.slots, p.T, p.num_slots, no_positions, 1, 0);
  for (int64_t t = warp_id_global(); t < p.T; t += warp_count_global()) {
    uint16_t x[16]; /* loaded first: the row's latency overlaps the slots' */
    if (!warp && p.evict_k) /* (the decode kernels: a few rows, nothing to keep in L2) */
      load_row16_evict_first(p.k + t * p.k_stride + 32 * lane, x);
    else
      load_bf16x16(p.k + t * p.k_stride + 32 * lane, p.vec_k, x);
    dlater lw;
    if (warp) dedup_warp_load(&lw, p.slots, p.T, t);
    const int64_t slot = dix_i64(p.slots, t);
    if (slot == -1) continue;
    if (slot < 0 || slot >= p.num_slots) {
      if (lane == 0) dnote1(p.note, t, SKIP_SLOT, t, slot, p.num_slots, 0, 0, 0);
      continue;
    }
    /* Counted for every row with a valid slot, also one a later row
     * overwrites (as the CPU counts). */
    if (p.check_nonfinite) {
      const int64_t nf = warp_sum_i64(count_nonfinite_bf16(x, 16));
      if (lane == 0) dnote_nonfinite(p.note, nf);
    }
    uint8_t *page = p.base + dpd_page(p.bsd, slot) * p.page_stride; /* slot >= 0 */
    const int64_t pos = dpd_off(p.bsd, slot);
    uint8_t *scales = page + record_scales_off(&p.layout, p.bs, pos);
    if (warp ? later_row_writes_slot_warp(&lw, p.slots, t, slot, no_positions, 1, 0)
        : p.dd.mode == DEDUP_MARK
            ? !mark_is_mine(p.dd, scales, t)
            : later_row_writes_slot(p.dd.mode, later, p.slots, p.T, t, slot, no_positions, 1, 0))
      continue;
    quant_lane(&p, rec, lane, x, page + record_values_off(&p.layout, p.bs, pos), scales);
  }
}

/* One kernel a record, each held to 40 registers (6 blocks, 48 warps a
 * multiprocessor): occupancy is what fills the memory pipes here.  On the
 * H200, a 2-row software pipeline at 64 registers and 32 warps ran 10-15 %
 * slower than one row a warp, and the per-record kernels at 48 registers
 * (40 warps) 5-15 % slower than at 40 (bench/NOTES-gpu.md). */
#ifndef DSV4KV_INSERT_MIN_BLOCKS /* -D for A/B runs of other register budgets (scripts/gpu-ab.sh) */
#define DSV4KV_INSERT_MIN_BLOCKS 6
#endif
/* resident blocks of 256 threads: 6 = at most 40 registers a thread (8 = 32:
 * V4 and NVFP4 the same, MXFP8 3-6 % slower, bench/NOTES-gpu.md run 24) */
enum { INSERT_MIN_BLOCKS = DSV4KV_INSERT_MIN_BLOCKS };
/* Threads a block past DEDUP_SHARED_ROWS rows (the duplicate scan's blocks
 * keep CUDA_BLOCK, the row arithmetic of cuda_common.cuh's scan): 2-3 %
 * faster than 256 at >= 64k rows, as fast as 64 (bench/NOTES-gpu.md run 14). */
enum { INSERT_BLOCK = 128 };
/* Threads a block of the decode kernels (a -D for A/B runs) */
#ifndef DSV4KV_INSERT_DECODE_BLOCK
#define DSV4KV_INSERT_DECODE_BLOCK 128
#endif
enum { INSERT_DECODE_BLOCK = DSV4KV_INSERT_DECODE_BLOCK };
__global__ void __launch_bounds__(CUDA_BLOCK, INSERT_MIN_BLOCKS) insert_v4_kernel(insert_params p) {
  insert_rows(p, DSV4KV_RECORD_V4, 0);
}
__global__ void __launch_bounds__(CUDA_BLOCK, INSERT_MIN_BLOCKS) insert_mxfp8_kernel(insert_params p) {
  insert_rows(p, DSV4KV_RECORD_MXFP8, 0);
}
__global__ void __launch_bounds__(CUDA_BLOCK, INSERT_MIN_BLOCKS) insert_nvfp4_kernel(insert_params p) {
  insert_rows(p, DSV4KV_RECORD_NVFP4, 0);
}
/* Decode sizes (DEDUP_WARP): a few blocks, so registers are not what limits
 * them; the later rows' slots take 8 more (no spills). */
__global__ void __launch_bounds__(INSERT_DECODE_BLOCK) insert_v4_decode_kernel(insert_params p) {
  insert_rows(p, DSV4KV_RECORD_V4, 1);
}
__global__ void __launch_bounds__(INSERT_DECODE_BLOCK) insert_mxfp8_decode_kernel(insert_params p) {
  insert_rows(p, DSV4KV_RECORD_MXFP8, 1);
}
__global__ void __launch_bounds__(INSERT_DECODE_BLOCK) insert_nvfp4_decode_kernel(insert_params p) {
  insert_rows(p, DSV4KV_RECORD_NVFP4, 1);
}

const void *const cuda_insert_kernels[] = {(const void *)insert_v4_kernel,           (const void *)insert_mxfp8_kernel,
                                           (const void *)insert_nvfp4_kernel,        (const void *)insert_v4_decode_kernel,
                                           (const void *)insert_mxfp8_decode_kernel, (const void *)insert_nvfp4_decode_kernel,
                                           NULL};

extern "C" dsv4kv_status cuda_insert(const insert_args *a, const exec_opts *o, dsv4kv_report *r) {
  const cache_view *c = &a->cache;
  cuda_call call;
  dsv4kv_status st = cuda_enter(&call, a->k.device_id, o);
  if (st) return st;
  insert_params p;
  p.k = a->k.data;
  p.k_stride = a->k.stride[0] * 2;
  p.slots = dix_of(&a->slots);
  p.T = a->T;
  p.base = c->base;
  p.page_stride = c->page_stride;
  p.num_slots = c->num_pages * c->block_size;
  p.bs = c->block_size;
  p.bsd = dpagediv_of(p.bs);
  p.record = (int32_t)c->record;
  p.fnuz = c->fp8 == DSV4KV_FP8_FNUZ;
  p.check_nonfinite = o->check_nonfinite;
  p.vec_k = cuda_aligned16(p.k, p.k_stride);
  p.vec_c = cuda_aligned16(p.base, p.page_stride);
  p.vec4_c = (uintptr_t)p.base % 4 == 0 && p.page_stride % 4 == 0;
  p.layout = c->layout;
  p.dd = dedup_mode_of(a->T, &c->layout, 0, c->base, c->page_stride, o->distinct_slots);
  p.evict_k = p.vec_k && p.dd.mode == DEDUP_MARK && c->layout.org == PAGE_TOKEN_MAJOR && a->T <= INSERT_EVICT_MAX_ROWS;
  p.note.rep = r;
  p.note.detail = 0;
  cuda_report_reset(&call, r, OP_INSERT);
  if (a->T > 0) {
    const mark_params m = {p.slots, {NULL, 0, 0}, p.T, p.num_slots, 1, 0, p.base, p.page_stride, p.bs, p.layout, p.dd,
                           p.bsd};
    cuda_mark_rows(call.stream, &m);
    /* Smaller blocks (a warp a row) but for the shared scan's: a block's
     * slots free as soon as its few rows are done */
    const int block = p.dd.mode == DEDUP_SHARED ? (int)CUDA_BLOCK
                      : p.dd.mode == DEDUP_WARP ? (int)INSERT_DECODE_BLOCK
                                                : (int)INSERT_BLOCK;
    const int64_t blocks = (a->T + block / 32 - 1) / (block / 32);
    const unsigned grid = blocks > (1 << 24) ? (1u << 24) : (unsigned)blocks;
    const int warp = p.dd.mode == DEDUP_WARP;
    if (c->record == DSV4KV_RECORD_V4)
      CUDA_LAUNCH_REPORTED_SIZED(warp ? insert_v4_decode_kernel : insert_v4_kernel, grid, block, 0, call, p);
    else if (c->record == DSV4KV_RECORD_MXFP8)
      CUDA_LAUNCH_REPORTED_SIZED(warp ? insert_mxfp8_decode_kernel : insert_mxfp8_kernel, grid, block, 0, call, p);
    else
      CUDA_LAUNCH_REPORTED_SIZED(warp ? insert_nvfp4_decode_kernel : insert_nvfp4_kernel, grid, block, 0, call, p);
  }
  return cuda_leave(&call, "quantize_and_insert_k_cache");
}
