/* CUDA dequantize_and_gather_k_cache (NUMERICS §3; CPU: src/cpu/gather_cpu.c).
 *
 * Blocks (request r, chunk y); each warp of a chunk takes tokens i of the
 * request's gatherable range [lo, hi) in turn, one warp per token: lane l
 * writes output values 16l..16l+15 (two 16-byte stores) from its 16 codes
 * (NVFP4: 8 bytes) and its block's scale byte.  The range comes from the
 * lengths as on the CPU; the tokens outside it are counted in bulk by the
 * request's first thread, so the work never follows a length value past
 * what `out` can hold.  Past 1024 rows a request a warp of one V4 token a
 * turn also sends its next turn's record to L2 (prefetch_record). */
#include <stdlib.h>
#include <string.h>

#include "cuda/cuda_common.cuh"

typedef struct {
  uint8_t *out;
  int64_t out_s0, out_s1; /* bytes */
  dix seq_lens, gather_lens, block_table;
  int32_t has_gather_lens;
  int64_t R, offset, max_tokens, max_pages;
  const uint8_t *base;
  int64_t page_stride, num_pages;
  int32_t bs, record, fnuz, vec_out, vec_c;
  dpagediv bsd; /* division by bs: a shift for a power of two */
  record_layout layout;
  dnote note;
} gather_params;

/* What lane `lane` reads of a token's record: its codes (fp8: 16 bytes in
 * w[0..3]; NVFP4: 8 bytes in w[0..1]; V4's RoPE lanes: 16 raw bf16 in
 * w[0..7]) and its block's scale byte.  Loads only, so that a warp's tokens
 * all issue theirs before the first is decoded. */
typedef struct {
  uint32_t w[8];
  uint32_t sb;
} glane;

static __device__ __forceinline__ void load_lane(const gather_params *p, int lane, const uint8_t *values,
                                                 const uint8_t *scales, glane *g) {
  if (p->record == DSV4KV_RECORD_NVFP4) {
    g->sb = scales[lane];
    const uint8_t *b = values + 8 * lane;
    if (p->vec_c) {
      const uint2 v = __ldg((const uint2 *)b);
      g->w[0] = v.x, g->w[1] = v.y;
    } else {
      for (int k = 0; k < 2; k++)
        g->w[k] = b[4 * k] | b[4 * k + 1] << 8 | b[4 * k + 2] << 16 | (uint32_t)b[4 * k + 3] << 24;
    }
    return;
  }
  if (p->record == DSV4KV_RECORD_V4 && lane >= NOPE_DIM / 16) { /* RoPE dims: raw bf16 */
    const uint8_t *src = values + NOPE_DIM + 2 * (16 * lane - NOPE_DIM);
    const uint4 a = load16(src, p->vec_c), b = load16(src + 16, p->vec_c);
    g->w[0] = a.x, g->w[1] = a.y, g->w[2] = a.z, g->w[3] = a.w, g->w[4] = b.x, g->w[5] = b.y, g->w[6] = b.z,
    g->w[7] = b.w;
    return;
  }
  const int group = p->record == DSV4KV_RECORD_V4 ? V4_BLOCK / 16 : MXFP8_BLOCK / 16;
  g->sb = scales[lane / group];
  const uint4 c = load16(values + 16 * lane, p->vec_c);
  g->w[0] = c.x, g->w[1] = c.y, g->w[2] = c.z, g->w[3] = c.w;
}

/* Lane `lane`'s 16 output values of a main-cache record from what load_lane
 * read, as 8 bf16 pairs (low half first).  OCP e4m3 and e2m1 through the
 * hardware's exact conversions (cuda_common.cuh), FNUZ through formats/ref.h's
 * decoder; the products are the reference's fp32 products either way. */
static __device__ __forceinline__ void dequant_lane(const gather_params *p, int lane, const glane *g, uint32_t *y) {
  if (p->record == DSV4KV_RECORD_NVFP4) {
    /* e2m1 x 2^-14 times the scale x 2^14: both exact, and so is the product */
    const float sv = e4m3_decode((uint8_t)g->sb) * 16384.0f;
    if (sv == sv) { /* every product exact with <= 6 bits: bf16 is its high half */
      for (int i = 0; i < 8; i++) {
        const float2 v = e2m1x2_decode_2m14((g->w[i / 4] >> (8 * (i % 4))) & 0xFF);
        y[i] = bf16x2_high(v.x * sv, v.y * sv);
      }
      return;
    }
    for (int i = 0; i < 8; i++) { /* a NaN scale byte (from a cache never written) */
      const float2 v = e2m1x2_decode_2m14((g->w[i / 4] >> (8 * (i % 4))) & 0xFF);
      y[i] = bf16x2_of(v.x * sv, v.y * sv);
    }
    return;
  }
  if (p->record == DSV4KV_RECORD_V4 && lane >= NOPE_DIM / 16) {
    for (int i = 0; i < 8; i++) y[i] = g->w[i];
    return;
  }
  const uint32_t sb = g->sb;
  const float s = ue8m0_decode_ftz((uint8_t)sb);
  const uint32_t *cw = g->w;
  /* A code is NaN when its low 7 bits are all set (the +1 carries into bit 7). */
  const uint32_t nan_codes = ((cw[0] & 0x7F7F7F7Fu) + 0x01010101u) | ((cw[1] & 0x7F7F7F7Fu) + 0x01010101u) |
                             ((cw[2] & 0x7F7F7F7Fu) + 0x01010101u) | ((cw[3] & 0x7F7F7F7Fu) + 0x01010101u);
  if (!p->fnuz && !(nan_codes & 0x80808080u) && sb >= 10 && sb <= 246) {
    /* 2^-117 <= the scale <= 2^119: every product of a code is a normal fp32
     * (or zero) of <= 4 significant bits, exact, so bf16 is its high half */
    for (int i = 0; i < 8; i++) {
      const float2 v = e4m3x2_decode((cw[i / 2] >> (16 * (i % 2))) & 0xFFFF);
      y[i] = bf16x2_high(v.x * s, v.y * s);
    }
    return;
  }
  if (!p->fnuz) {
    for (int i = 0; i < 8; i++) {
      const float2 v = e4m3x2_decode((cw[i / 2] >> (16 * (i % 2))) & 0xFFFF);
      y[i] = bf16x2_of(v.x * s, v.y * s);
    }
    return;
  }
  for (int i = 0; i < 8; i++) {
    const uint32_t two = (cw[i / 2] >> (16 * (i % 2))) & 0xFFFF;
    y[i] = (uint32_t)f32_to_bf16(e4m3fnuz_decode((uint8_t)two) * s) |
           (uint32_t)f32_to_bf16(e4m3fnuz_decode((uint8_t)(two >> 8)) * s) << 16;
  }
}

/* Tokens a warp has in flight, both kernels: their page lookups, then their
 * record loads, then their stores.  One (32 registers, 64 warps a
 * multiprocessor) is the faster at decode sizes and for V4 and NVFP4 at any
 * size; two (48 registers) for MXFP8 past decode sizes, whose 528-byte
 * records straddle sectors: 64 x 16384 -4 %, 8 x 8192 -4 % (bench/NOTES-gpu.md
 * run 30). */
enum { GATHER_PAIR_MIN_ROWS = 1024 }; /* out rows from which MXFP8 takes two a warp */

/* Token i of request r (lo <= i < hi): the record it reads into *pg / *in_page,
 * or 0 after noting why none (lane 0 notes). */
static __device__ __forceinline__ int token_record(const gather_params *p, int64_t r, int64_t i, int64_t pos,
                                                   int lane, const uint8_t **pg, int64_t *in_page) {
  const int64_t lp = dpd_page(p->bsd, pos);
  if (lp >= p->max_pages) {
    if (lane == 0) dnote1(p->note, skip_key(r, i, 32), SKIP_GATHER_COLUMN, r, pos, lp, p->max_pages, 0, 0);
    return 0;
  }
  const int64_t page = dix_i32_2(p->block_table, r, lp);
  if (page < 0 || page >= p->num_pages) {
    if (lane == 0) dnote1(p->note, skip_key(r, i, 32), SKIP_GATHER_PAGE, r, lp, page, p->num_pages, 0, 0);
    return 0;
  }
  *pg = p->base + page * p->page_stride;
  *in_page = dpd_off(p->bsd, pos);
  return 1;
}

/* Sends token i's record (lo <= i, i < hi not yet checked) to L2 ahead of
 * its loads: lanes 0 .. 7 each name one 128-byte line of its values (from
 * their first byte, then their last) and of its scales.  Nothing is read
 * back, so the warp waits only for the block-table entry; a token whose
 * page is out of range (noted when its turn comes) is not fetched. */
static __device__ __forceinline__ void prefetch_record(const gather_params *p, int64_t r, int64_t i, int64_t hi,
                                                       int64_t pos, int lane) {
  const int nvl = (p->layout.value_bytes + 127) / 128; /* <= 5: lanes 0 .. nvl + 2 */
  if (i >= hi || lane > nvl + 2) return;
  const int64_t lp = dpd_page(p->bsd, pos);
  if (lp >= p->max_pages) return;
  const int64_t page = dix_i32_2(p->block_table, r, lp);
  if (page < 0 || page >= p->num_pages) return;
  const uint8_t *pg = p->base + page * p->page_stride;
  const int64_t in_page = dpd_off(p->bsd, pos);
  const uint8_t *v = pg + record_values_off(&p->layout, p->bs, in_page);
  const uint8_t *sc = pg + record_scales_off(&p->layout, p->bs, in_page);
  const uint8_t *a = lane < nvl ? v + 128 * lane
                   : lane == nvl ? v + p->layout.value_bytes - 1
                   : lane == nvl + 1 ? sc
                                     : sc + p->layout.scale_bytes - 1;
  asm volatile("prefetch.global.L2 [%0];" ::"l"(a));
}

/* The kernels' body: tpw tokens a warp in flight (a constant); PF: each
 * token's record sent to L2 a turn ahead (prefetch_record). */
static __device__ __forceinline__ void gather_rows(const gather_params &p, const int tpw, const int PF) {
  if (dnote_idle(p.note)) return;
  const int64_t r = blockIdx.x;
  const int lane = lane_id();
  const int64_t seq_len = dix_i32(p.seq_lens, r);
  const int64_t L = p.has_gather_lens ? dix_i32(p.gather_lens, r) : seq_len;
  const int64_t rows_left = p.offset < p.max_tokens ? p.max_tokens - p.offset : 0;
  int64_t lo = 0, hi = 0;
  if (L >= 0) {
    lo = L > seq_len ? L - seq_len : 0;
    hi = L < rows_left ? L : rows_left;
    if (lo > hi) lo = hi;
  }
  if (blockIdx.y == 0 && threadIdx.x == 0) { /* the request's bulk notes, as the CPU plans them */
    if (L < 0) {
      dnote1(p.note, skip_key(r, 0, 32), SKIP_LEN_NEGATIVE, r, L, p.has_gather_lens, 0, 0, 0);
    } else {
      if (lo > 0) dnote_n(p.note, lo, skip_key(r, 0, 32), SKIP_LEN_PAST_SEQ, r, L, seq_len, 0, 0, 0);
      if (hi < L) dnote_n(p.note, L - hi, skip_key(r, hi, 32), SKIP_OUT_ROWS, r, L - hi, p.offset, hi, p.max_tokens, 0);
    }
  }
  const int64_t warps = (int64_t)gridDim.y * CUDA_WARPS;
  for (int64_t i0 = lo + (int64_t)blockIdx.y * CUDA_WARPS + (threadIdx.x >> 5); i0 < hi; i0 += tpw * warps) {
    glane g[2];
    int ok[2];
#pragma unroll
    for (int k = 0; k < tpw; k++) { /* token i0 + k warps: pos = seq_len - L + i >= 0 */
      const int64_t i = i0 + k * warps;
      const uint8_t *pg = NULL;
      int64_t in_page = 0;
      ok[k] = i < hi && token_record(&p, r, i, seq_len - L + i, lane, &pg, &in_page);
      if (ok[k])
        load_lane(&p, lane, pg + record_values_off(&p.layout, p.bs, in_page),
                  pg + record_scales_off(&p.layout, p.bs, in_page), &g[k]);
    }
    if (PF) /* the warp's next turn, while this one's records are on their way */
#pragma unroll
      for (int k = 0; k < tpw; k++) {
        const int64_t i = i0 + (tpw + k) * warps;
        prefetch_record(&p, r, i, hi, seq_len - L + i, lane);
      }
#pragma unroll
    for (int k = 0; k < tpw; k++) {
      if (!ok[k]) continue;
      uint32_t y[8];
      dequant_lane(&p, lane, &g[k], y);
      uint8_t *dst = p.out + r * p.out_s0 + (p.offset + i0 + k * warps) * p.out_s1 + 32 * lane; /* row < max_tokens */
      store16(dst, make_uint4(y[0], y[1], y[2], y[3]), p.vec_out);
      store16(dst + 16, make_uint4(y[4], y[5], y[6], y[7]), p.vec_out);
    }
  }
}

/* resident blocks of 256 threads: 8 = 32 registers, 5 = 48 (no spills) */
__global__ void __launch_bounds__(CUDA_BLOCK, 8) gather_kernel(gather_params p) { gather_rows(p, 1, 0); }
__global__ void __launch_bounds__(CUDA_BLOCK, 5) gather_pair_kernel(gather_params p) { gather_rows(p, 2, 0); }
__global__ void __launch_bounds__(CUDA_BLOCK, 8) gather_prefetch_kernel(gather_params p) { gather_rows(p, 1, 1); }

const void *const cuda_gather_kernels[] = {(const void *)gather_kernel, (const void *)gather_pair_kernel,
                                           (const void *)gather_prefetch_kernel, NULL};

/* Blocks a call fills before a request's chunks stop at 64: about 8 waves of
 * resident blocks (8 a multiprocessor).  H100, 2-3 alternated rounds
 * (bench/NOTES-gpu.md runs 43-45): 1056 / 2048 / 4096 / 8192 blocks gave
 * 8 x 8192 V4 43.3 / 42.1 / 41.1 / 39.7 us, NVFP4 37.7 / 35.8 / 34.7 / 33.6,
 * and 64 x 16384 (128 chunks a request at 8192) 627 us until 8192: 618. */
enum { GATHER_BLOCKS = 8192 };
/* The integer in environment variable `name` where it lies in [lo, hi],
 * else dflt (the A/B knobs below, like env_flag's switches: each read
 * once, by its caller's static). */
static int64_t env_in_range(const char *name, long lo, long hi, int64_t dflt) {
  const char *e = getenv(name);
  const long v = e ? strtol(e, NULL, 10) : 0;
  return e && v >= lo && v <= hi ? (int64_t)v : dflt;
}

/* Environment variable `name` as a forced switch: 1 for "1", 0 for "0",
 * else -1 (not forced). */
static int env_flag(const char *name) {
  const char *e = getenv(name);
  return e && !strcmp(e, "1") ? 1 : e && !strcmp(e, "0") ? 0 : -1;
}

/* GATHER_BLOCKS, or DSV4KV_CUDA_GATHER_BLOCKS (128 .. 2^20) for A/B timings
 * of other budgets on one build (scripts/gpu-env-ab.sh). */
static int64_t cuda_gather_blocks(void) {
  static volatile int64_t blocks = 0;
  if (blocks == 0) blocks = env_in_range("DSV4KV_CUDA_GATHER_BLOCKS", 128, 1L << 20, GATHER_BLOCKS);
  return blocks;
}

/* The turns a warp takes in its request's longest range before the budget
 * caps the chunks (a chunk's warps x tokens a turn x turns = its tokens): 1, or
 * DSV4KV_CUDA_GATHER_TURNS (1 .. 64) for A/B timings of fewer, longer
 * chunks at decode sizes (64 x 256: 2048 blocks of one token a warp, two
 * waves of resident blocks). */
static int64_t cuda_gather_turns(void) {
  static volatile int64_t turns = 0;
  if (turns == 0) turns = env_in_range("DSV4KV_CUDA_GATHER_TURNS", 1, 64, 1);
  return turns;
}

/* Tokens a warp keeps in flight (tpw): two for MXFP8 from
 * GATHER_PAIR_MIN_ROWS out rows a request, else one; or as
 * DSV4KV_CUDA_GATHER_PAIR=1 / 0 forces for every record (A/B timings, and
 * the registry's variants; read once). */
static int cuda_gather_tpw(int64_t rows_left, dsv4kv_record record) {
  static volatile int forced = -2;
  if (forced == -2) forced = env_flag("DSV4KV_CUDA_GATHER_PAIR");
  if (forced >= 0) return forced ? 2 : 1;
  return record == DSV4KV_RECORD_MXFP8 && rows_left >= GATHER_PAIR_MIN_ROWS ? 2 : 1;
}

/* Whether a warp of one token a turn sends its next token's record to L2
 * (prefetch_record): V4 from GATHER_PREFETCH_MIN_ROWS out rows a request,
 * or as DSV4KV_CUDA_GATHER_PREFETCH=1 / 0 forces (tests, A/B timings; read
 * once).  H100, 3 alternated rounds (bench/NOTES-gpu.md run 40): 64 x 16384
 * V4 642 -> 628 us, NVFP4 533 -> 519, 8 x 8192 -0.5-1 %; decode sizes
 * (L2-resident, nothing to hide) +0-0.4 us.  On the H200 (run 52, 2
 * rounds) it helps V4 alike (468.0 -> 454.6 us) but costs NVFP4 18 %
 * (386.9 -> 454.8 us at 64 x 16384, 28.6 -> 30.3 at 8 x 8192): NVFP4
 * gathers go without it (on the H100 +3 %, run 51).  MXFP8's two tokens a
 * warp already keep two records in flight: with the prefetch as well (48
 * registers and a spill) 64 x 16384 was 2.6 % slower, 8 x 8192 6 %. */
enum { GATHER_PREFETCH_MIN_ROWS = 1024 };
static int cuda_gather_prefetch(int64_t rows_left, dsv4kv_record record) {
  static volatile int forced = -2;
  if (forced == -2) forced = env_flag("DSV4KV_CUDA_GATHER_PREFETCH");
  return forced >= 0 ? forced : record != DSV4KV_RECORD_NVFP4 && rows_left >= GATHER_PREFETCH_MIN_ROWS;
}

extern "C" dsv4kv_status cuda_gather(const gather_args *a, const exec_opts *o, dsv4kv_report *r) {
  const cache_view *c = &a->cache;
  if (a->R > INT32_MAX) /* one block column per request */
    return dsv4kv_fail(DSV4KV_ERR_SHAPE, "seq_lens has %lld requests; the CUDA gather takes at most %d",
                       (long long)a->R, INT32_MAX);
  cuda_call call;
  dsv4kv_status st = cuda_enter(&call, a->out.device_id, o);
  if (st) return st;
  gather_params p;
  p.out = a->out.data;
  p.out_s0 = a->out.stride[0] * 2;
  p.out_s1 = a->out.stride[1] * 2;
  p.seq_lens = dix_of(&a->seq_lens);
  p.gather_lens = dix_of(&a->gather_lens);
  p.block_table = dix_of(&a->block_table);
  p.has_gather_lens = a->has_gather_lens;
  p.R = a->R;
  p.offset = a->offset;
  p.max_tokens = a->out.shape[1];
  p.max_pages = a->block_table.shape[1];
  p.base = c->base;
  p.page_stride = c->page_stride;
  p.num_pages = c->num_pages;
  p.bs = c->block_size;
  p.bsd = dpagediv_of(p.bs);
  p.record = (int32_t)c->record;
  p.fnuz = c->fp8 == DSV4KV_FP8_FNUZ;
  p.vec_out = cuda_aligned16(p.out, p.out_s0 | p.out_s1);
  p.vec_c = cuda_aligned16(p.base, p.page_stride);
  p.layout = c->layout;
  p.note.rep = r;
  p.note.detail = 0;
  cuda_report_reset(&call, r, OP_GATHER);
  if (a->R > 0) {
    /* Chunks per request: enough warps (tpw tokens each) for the longest
     * range out can hold (the range itself is only known on the device), at
     * most 64 a request or, for fewer than 128 requests, as many as make
     * GATHER_BLOCKS blocks in all: short turns a warp balance the
     * multiprocessors' load and the ramp at the end of the call. */
    const int64_t rows_left = p.offset < p.max_tokens ? p.max_tokens - p.offset : 0;
    const int tpw = cuda_gather_tpw(rows_left, c->record);
    const int64_t budget = cuda_gather_blocks();
    const int64_t most = a->R * 64 >= budget ? 64 : (budget + a->R - 1) / a->R;
    const int64_t per_chunk = CUDA_WARPS * tpw * cuda_gather_turns();
    int64_t chunks = (rows_left + per_chunk - 1) / per_chunk;
    chunks = chunks < 1 ? 1 : chunks > most ? most : chunks;
    const dim3 grid((unsigned)a->R, (unsigned)chunks);
    if (tpw == 2)
      CUDA_LAUNCH_REPORTED(gather_pair_kernel, grid, call, p);
    else if (cuda_gather_prefetch(rows_left, c->record))
      CUDA_LAUNCH_REPORTED(gather_prefetch_kernel, grid, call, p);
    else
      CUDA_LAUNCH_REPORTED(gather_kernel, grid, call, p);
  }
  return cuda_leave(&call, "dequantize_and_gather_k_cache");
}
