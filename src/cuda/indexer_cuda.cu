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
 * rounded 1/sqrt in double (formats/ref.h).  Then FP8 (group amax, codes
 * linear or tiled) or MXFP4 (blocks of 32 dims). */
#include "cuda/cuda_common.cuh"
#include "formats/e2m1_div.h"

/* Tokens a warp: IDX_TPW_WIDE where the duplicate check is a mark (more
 * than DEDUP_SHARED_ROWS rows), 1 below: there each row scans the later
 * rows' slots with the whole warp, and a decode step's few rows want many
 * warps, not few full ones. */
#ifndef DSV4KV_INDEXER_TPW
#define DSV4KV_INDEXER_TPW 4
#endif
enum { IDX_TPW_WIDE = DSV4KV_INDEXER_TPW };
#define IDX_LPT(tpw) (32 / (tpw))                            /* lanes a token */
#define IDX_DPL(tpw) (INDEXER_DIM / IDX_LPT(tpw))            /* dims a lane */
#define IDX_VPL(tpw) (IDX_DPL(tpw) / 4)                      /* the reference's 4-dim lanes in one lane */
#define IDX_MX_LANES(tpw) (INDEXER_MXFP4_BLOCK / IDX_DPL(tpw)) /* lanes of an MXFP4 block */
#define IDX_CHUNK(tpw) (IDX_DPL(tpw) / 2 < 4 ? IDX_DPL(tpw) / 2 : 4) /* pairs whose tables load together */
enum { IDX_DPL_MAX = IDX_DPL(IDX_TPW_WIDE) };
DSV4KV_STATIC_ASSERT(IDX_TPW_WIDE >= 2 && IDX_TPW_WIDE <= 4 && 32 % IDX_TPW_WIDE == 0, "tokens a warp");
DSV4KV_STATIC_ASSERT((INDEXER_ROPE_FROM / 2) % (IDX_DPL_MAX / 2) == 0, "a lane is rotated whole or not at all");
/* the decode kernels (one token a warp) load a lane's tables once: one chunk */
DSV4KV_STATIC_ASSERT(IDX_DPL(1) / 2 == IDX_CHUNK(1), "one token a warp: a lane's pairs are one chunk");

typedef struct {
  const uint8_t *k_pre;
  int64_t k_stride; /* bytes */
  dix positions, slots;
  const uint8_t *cos_sin, *weight;
  int64_t cs_stride, w_stride; /* elements */
  int64_t cs_rows;
  int32_t cs_f32, w_f32;
  int64_t T, num_slots, ratio;
  float eps;
  uint8_t *base;
  int64_t page_stride;
  int32_t bs, record, fnuz, tiled, mx_scale, check_nonfinite;
  int32_t vec_k, vec4_c; /* 8-byte loads of k_pre rows; 4-byte stores on the cache */
  int32_t vec_w, vec_cs; /* 4 table entries in one load (weight contiguous; cos_sin rows aligned) */
  dpagediv bsd, rd;      /* division by the block size and by the compress ratio */
  record_layout layout;
  ddedup dd;
  dnote note;
} indexer_params;

static __device__ __forceinline__ float table_f(const uint8_t *t, int f32, int64_t off) {
  return f32 ? *(const float *)(t + off * 4) : bf16_to_f32(*(const uint16_t *)(t + off * 2));
}
/* Entries off .. off+3 of a table of unit stride: one 16-byte (fp32) or
 * 8-byte (bf16) load when vec (the host checked the alignment of every
 * such off: a multiple of 4), else four. */
static __device__ __forceinline__ void table_f4(const uint8_t *t, int f32, int64_t off, int vec, float *v) {
  if (vec && f32) {
    const float4 a = __ldg((const float4 *)(t + off * 4));
    v[0] = a.x, v[1] = a.y, v[2] = a.z, v[3] = a.w;
  } else if (vec) {
    const uint2 a = __ldg((const uint2 *)(t + off * 2));
    v[0] = f32_from_bits(a.x << 16), v[1] = f32_from_bits(a.x & 0xFFFF0000u);
    v[2] = f32_from_bits(a.y << 16), v[3] = f32_from_bits(a.y & 0xFFFF0000u);
  } else {
    for (int i = 0; i < 4; i++) v[i] = table_f(t, f32, off + i);
  }
}

/* Across the lanes of one token's group (xor strides below IDX_LPT). */
static __device__ __forceinline__ float group_max(float v, int lanes) {
  for (int m = 1; m < lanes; m <<= 1) v = max_ignore_nan(v, __shfl_xor_sync(FULL_MASK, v, m));
  return v;
}
static __device__ __forceinline__ int group_sum_i(int v, int tpw) {
  for (int m = 1; m < IDX_LPT(tpw); m <<= 1) v += __shfl_xor_sync(FULL_MASK, v, m);
  return v;
}

/* The reference's sum of squares of a 128-dim row (see the file comment):
 * kw[] this lane's IDX_DPL bf16 values, two a word (low half first). */
static __device__ __forceinline__ float row_sum_squares(const uint32_t *kw, int tpw) {
  const int vpl = IDX_VPL(tpw);
  float a[IDX_DPL_MAX / 4];
  for (int q = 0; q < vpl; q++) {
    const uint32_t lo = kw[2 * q], hi = kw[2 * q + 1];
    const float e0 = f32_from_bits(lo << 16), e1 = f32_from_bits(lo & 0xFFFF0000u);
    const float e2 = f32_from_bits(hi << 16), e3 = f32_from_bits(hi & 0xFFFF0000u);
    float acc = fmaf(e0, e0, e1 * e1);
    acc = fmaf(e2, e2, acc);
    a[q] = fmaf(e3, e3, acc);
  }
  for (int m = 16; m >= 1; m >>= 1) {
    if (m >= vpl) {
      for (int q = 0; q < vpl; q++) a[q] = a[q] + __shfl_xor_sync(FULL_MASK, a[q], m / vpl);
    } else {
      float b[IDX_DPL_MAX / 4];
      for (int q = 0; q < vpl; q++) b[q] = a[q] + a[q ^ m];
      for (int q = 0; q < vpl; q++) a[q] = b[q];
    }
  }
  return a[0];
}

/* Value i of a lane's packed bf16 words, as fp32. */
static __device__ __forceinline__ float bf16_at(const uint32_t *w, int i) {
  return f32_from_bits(i % 2 ? w[i / 2] & 0xFFFF0000u : w[i / 2] << 16);
}

/* n bytes at p (n a multiple of 4), 4 at a time where the cache allows. */
static __device__ __forceinline__ void store_n(uint8_t *p, const uint8_t *b, int n, int vec4) {
  for (int i = 0; i < n; i += 4) store_small(p + i, b + i, 4, vec4);
}

/* FP8: lane j's IDX_DPL codes and, from the group's first lane, the scale's
 * 4 bytes in one store (DEDUP_MARK reads that word).  Every lane calls it;
 * only lanes with `mine` store. */
static __device__ __forceinline__ void store_fp8(const indexer_params *p, uint8_t *page, int64_t pos,
                                                 const uint32_t *r, int j, int mine, int tpw) {
  const int dpl = IDX_DPL(tpw);
  float amax = 0.0f;
  for (int i = 0; i < dpl; i++) amax = max_ignore_nan(amax, fabsf(bf16_at(r, i)));
  amax = group_max(amax, IDX_LPT(tpw));
  float scale;
  uint8_t ue, codes[IDX_DPL_MAX];
  const float inv = indexer_fp8_scale_ref(amax, p->fnuz, &scale, &ue);
  if (p->fnuz) {
    for (int i = 0; i < dpl; i++) codes[i] = fp8_quant_code(bf16_at(r, i) * inv, 1);
  } else {
    for (int i = 0; i < dpl; i += 2) {
      const uint32_t w = e4m3x2_quant(bf16_at(r, i) * inv, bf16_at(r, i + 1) * inv);
      codes[i] = (uint8_t)w, codes[i + 1] = (uint8_t)(w >> 8);
    }
  }
  if (!mine) return;
  const int64_t off = p->tiled ? idx_tiled_off(pos, dpl * j) : record_values_off(&p->layout, p->bs, pos) + dpl * j;
  store_n(page + off, codes, dpl, p->vec4_c);
  if (j == 0) {
    const uint32_t w = p->mx_scale ? ue * 0x01010101u : f32_bits(scale);
    const uint8_t b[4] = {(uint8_t)w, (uint8_t)(w >> 8), (uint8_t)(w >> 16), (uint8_t)(w >> 24)};
    store_small(page + record_scales_off(&p->layout, p->bs, pos), b, 4, p->vec4_c);
  }
}

/* MXFP4: blocks of 32 dims (IDX_MX_LANES lanes), lane j's IDX_DPL / 2 bytes,
 * the 4 scale bytes from the group's first lane in one store (DEDUP_MARK). */
static __device__ __forceinline__ void store_mxfp4(const indexer_params *p, uint8_t *page, int64_t pos,
                                                   const uint32_t *r, int j, int g, int mine, int tpw) {
  const int dpl = IDX_DPL(tpw);
  const uint32_t mb = bf16x2_max_magnitude(r, dpl / 2); /* above 0x7F80: a NaN */
  float amax = 0.0f, inv;
  if (mb <= 0x7F80u)
    amax = bf16_to_f32((uint16_t)mb);
  else
    for (int i = 0; i < dpl; i++) amax = max_ignore_nan(amax, fabsf(bf16_at(r, i)));
  amax = group_max(amax, IDX_MX_LANES(tpw));
  const uint8_t sb = mxfp4_block_scale_ref(amax, &inv);
  uint8_t packed[IDX_DPL_MAX / 2];
  const int l = (int)sb - 127;
  if (mb <= 0x7F80u && l >= E2M1_PAIRS_POW2_MIN && l <= E2M1_PAIRS_POW2_MAX) {
    /* e2m1_encode(x * 2^-l) is e2m1_encode_div(x) for sv = 2^l (x * 2^-l is
     * exact, or far below the first midpoint): two values a compare */
    const e2m1_bounds_bf16x2 b = e2m1_bounds_bf16x2_of(pow2f(l));
    for (int i = 0; i < dpl / 2; i++) packed[i] = (uint8_t)e2m1x2_encode_bf16x2(r[i], &b);
  } else { /* a NaN, or a scale whose midpoints are not normal bf16 values */
    for (int i = 0; i < dpl; i += 2)
      packed[i / 2] = (uint8_t)(e2m1_encode(bf16_at(r, i + 1) * inv) << 4 | e2m1_encode(bf16_at(r, i) * inv));
  }
  uint32_t sc[INDEXER_MXFP4_NUM_SCALES];
  for (int k = 0; k < INDEXER_MXFP4_NUM_SCALES; k++)
    sc[k] = __shfl_sync(FULL_MASK, (uint32_t)sb, g * IDX_LPT(tpw) + k * IDX_MX_LANES(tpw));
  if (!mine) return;
  uint8_t *values = page + record_values_off(&p->layout, p->bs, pos);
  if (dpl / 2 >= 4)
    store_n(values + dpl / 2 * j, packed, dpl / 2, p->vec4_c);
  else
    for (int i = 0; i < dpl / 2; i++) values[dpl / 2 * j + i] = packed[i];
  if (j == 0) {
    const uint8_t b[4] = {(uint8_t)sc[0], (uint8_t)sc[1], (uint8_t)sc[2], (uint8_t)sc[3]};
    store_small(page + record_scales_off(&p->layout, p->bs, pos), b, 4, p->vec4_c);
  }
}

/* The norm weights of dims 2 h0 .. 2 (h0 + chunk) - 1 into w[0 .. 2 chunk) and, when
 * rotated, the cos / sin of pairs h0 .. h0 + chunk - 1 at cos_sin row cp into
 * c[], sn[] (else they keep the caller's 1 and 0). */
static __device__ __forceinline__ void load_tables(const indexer_params *p, int64_t cp, int h0, int chunk, int rotated,
                                                   float *c, float *sn, float *w) {
  if (rotated) {
    const int64_t off = cp * p->cs_stride + (h0 - INDEXER_ROPE_FROM / 2);
    if (chunk == 4) {
      table_f4(p->cos_sin, p->cs_f32, off, p->vec_cs, c);
      table_f4(p->cos_sin, p->cs_f32, off + 32, p->vec_cs, sn);
    } else {
      for (int i = 0; i < chunk; i++)
        c[i] = table_f(p->cos_sin, p->cs_f32, off + i), sn[i] = table_f(p->cos_sin, p->cs_f32, off + 32 + i);
    }
  }
  for (int q = 0; q < 2 * chunk; q += 4) { /* entries 2 h0 + q ..: multiples of 4 */
    if (p->vec_w)
      table_f4(p->weight, p->w_f32, 2 * h0 + q, 1, w + q);
    else
      for (int i = q; i < q + 4; i++) w[i] = table_f(p->weight, p->w_f32, (2 * h0 + i) * p->w_stride);
  }
}

/* Whether this group's row is the last to write its slot.  Warp-collective:
 * DEDUP_MARK reads the mark from each group's first lane; the scans
 * (DEDUP_SHARED, DEDUP_GLOBAL) run for one group's row at a time; `warp`
 * (DEDUP_WARP, one token a warp) compares the slots in lw. */
static __device__ __forceinline__ int row_is_last(const indexer_params *p, const int64_t *later, const dlater *lw,
                                                  int64_t t, int64_t slot, const uint8_t *mark_word, int write, int g,
                                                  int j, int tpw, int warp) {
  if (p->dd.mode == DEDUP_MARK) {
    unsigned int v = j == 0 && write ? __ldcg((const unsigned int *)mark_word) : 0u;
    v = __shfl_sync(FULL_MASK, v, g * IDX_LPT(tpw));
    return write && v == (p->dd.tag | (uint32_t)(t + 1) << p->dd.shift);
  }
  int last = 0;
  for (int k = 0; k < tpw; k++) {
    const int src = k * IDX_LPT(tpw);
    if (!__shfl_sync(FULL_MASK, write, src)) continue; /* uniform: the same for every lane */
    const int64_t tk = __shfl_sync(FULL_MASK, t, src), sk = __shfl_sync(FULL_MASK, slot, src);
    const int hit = warp ? later_row_writes_slot_warp(lw, tk, sk, p->positions, p->ratio, p->cs_rows)
                        : later_row_writes_slot(p->dd.mode, later, p->slots, p->T, tk, sk, p->positions, p->ratio,
                                                p->cs_rows);
    if (g == k) last = !hit;
  }
  return write && last;
}

/* The kernel body, compiled once a record (rec a constant: each kernel
 * holds only its own quantizer's registers and branches).  Every lane runs
 * every step (shuffles need the whole warp); `write` and `mine` gate the
 * stores. */
static __device__ __forceinline__ void indexer_rows(indexer_params p, int64_t *later, int rec, int tpw, int warp) {
  if (dnote_idle(p.note)) return;
  const int lpt = IDX_LPT(tpw), dpl = IDX_DPL(tpw), chunk = IDX_CHUNK(tpw);
  const int lane = lane_id(), g = lane / lpt, j = lane % lpt;
  if (!warp && p.dd.mode == DEDUP_SHARED) dedup_shared_load(later, p.slots, p.T, p.num_slots, p.positions, p.ratio, p.cs_rows);
  const int64_t stride = warp_count_global() * tpw;
  for (int64_t t0 = warp_id_global() * tpw; t0 < p.T; t0 += stride) {
    const int64_t t = t0 + g;
    const int live = t < p.T;
    /* the row, its slot and position loaded together (one latency, not three) */
    uint32_t k[IDX_DPL_MAX / 2]; /* bf16 pairs, low half first */
    const uint8_t *row = p.k_pre + (live ? t : 0) * p.k_stride + 2 * dpl * j;
    if (p.vec_k) {
      for (int i = 0; i < dpl / 2; i += 2) {
        const uint2 v = __ldg((const uint2 *)(row + 4 * i));
        k[i] = v.x, k[i + 1] = v.y;
      }
    } else {
      for (int i = 0; i < dpl / 2; i++)
        k[i] = row[4 * i] | row[4 * i + 1] << 8 | row[4 * i + 2] << 16 | (uint32_t)row[4 * i + 3] << 24;
    }
    dlater lw; /* the later rows' slots (DEDUP_WARP), with the row */
    if (warp) dedup_warp_load(&lw, p.slots, p.T, t);
    const int64_t slot = live ? dix_i64(p.slots, t) : -1;
    const int64_t pos = live ? dix_i64(p.positions, t) : 0;
    int write = slot != -1;
    if (write && (slot < 0 || slot >= p.num_slots)) {
      if (j == 0) dnote1(p.note, t, SKIP_SLOT, t, slot, p.num_slots, 0, 0, 0);
      write = 0;
    }
    if (write && pos < 0) {
      if (j == 0) dnote1(p.note, t, SKIP_POSITION_NEGATIVE, t, pos, 0, 0, 0, 0);
      write = 0;
    }
    write = write && dpd_off(p.rd, pos) == p.ratio - 1; /* only group-boundary tokens write */
    const int64_t cp = write ? dpd_page(p.rd, pos) * p.ratio : 0;
    if (write && cp >= p.cs_rows) {
      if (j == 0) dnote1(p.note, t, SKIP_COS_SIN_ROW, t, pos, cp, p.cs_rows, 0, 0);
      write = 0;
    }
    if (!__any_sync(FULL_MASK, write)) continue; /* no row of this warp writes */
    /* The decode kernels (one chunk a lane) load the tables here, so that
     * their latency overlaps the norm and the duplicate check; the others
     * where they are used, to keep registers free. */
    float c0[4] = {1.0f, 1.0f, 1.0f, 1.0f}, sn0[4] = {0.0f, 0.0f, 0.0f, 0.0f}, w0[8];
    if (warp) load_tables(&p, cp, dpl / 2 * j, chunk, write && dpl / 2 * j >= INDEXER_ROPE_FROM / 2, c0, sn0, w0);
    const float acc = row_sum_squares(k, tpw);
    int norm_bad;
    const float rstd = indexer_rstd_of_sum(acc, p.eps, &norm_bad);
    /* Counted before the duplicate check, the norm once when it alone is
     * non-finite (as the CPU counts). */
    if (p.check_nonfinite) {
      int nf = 0;
      for (int i = 0; i < dpl / 2; i++) nf += (k[i] & 0x7F80u) == 0x7F80u, nf += (k[i] & 0x7F800000u) == 0x7F800000u;
      const int in = group_sum_i(nf, tpw);
      const unsigned c = write && j == 0 ? (unsigned)(in + (in == 0 && norm_bad)) : 0u;
      const unsigned total = __reduce_add_sync(FULL_MASK, c);
      if (lane == 0) dnote_nonfinite(p.note, total);
    }
    uint8_t *page = p.base + (write ? dpd_page(p.bsd, slot) : 0) * p.page_stride;
    const int64_t in_page = write ? dpd_off(p.bsd, slot) : 0;
    const int mine =
        row_is_last(&p, later, &lw, t, slot, page + record_scales_off(&p.layout, p.bs, in_page), write, g, j, tpw, warp);
    if (!__any_sync(FULL_MASK, mine)) continue;
    /* pair i0 + h: dims 2(i0 + h), 2(i0 + h) + 1, its weights and cos / sin
     * (dims below INDEXER_ROPE_FROM are not rotated) loaded here, where
     * they are used (L1 / L2 hits: one table for all rows, one cos_sin row
     * per position) */
    const int i0 = dpl / 2 * j;
    uint32_t r[IDX_DPL_MAX / 2]; /* the results, bf16 pairs (exact: they are bf16 values) */
    const int rotated = write && i0 >= INDEXER_ROPE_FROM / 2; /* the whole lane, or none of it */
    for (int h0 = 0; h0 < dpl / 2; h0 += chunk) { /* `chunk` pairs: their weights, cos and sin */
      float c[4] = {1.0f, 1.0f, 1.0f, 1.0f}, sn[4] = {0.0f, 0.0f, 0.0f, 0.0f}, w[8];
      if (warp) { /* loaded above (the only chunk) */
        for (int i = 0; i < chunk; i++) c[i] = c0[i], sn[i] = sn0[i], w[2 * i] = w0[2 * i], w[2 * i + 1] = w0[2 * i + 1];
      } else {
        load_tables(&p, cp, i0 + h0, chunk, rotated, c, sn, w);
      }
      for (int h = h0; h < h0 + chunk; h++) {
        float rr[2];
        indexer_norm_rope_pair((uint16_t)k[h], (uint16_t)(k[h] >> 16), w[2 * (h - h0)], w[2 * (h - h0) + 1],
                               c[h - h0], sn[h - h0], rstd, rr);
        r[h] = f32_bits(rr[0]) >> 16 | (f32_bits(rr[1]) & 0xFFFF0000u);
      }
    }
    if (rec == DSV4KV_RECORD_INDEXER_FP8)
      store_fp8(&p, page, in_page, r, j, mine, tpw);
    else
      store_mxfp4(&p, page, in_page, r, j, g, mine, tpw);
  }
}

/* Resident blocks of 256 threads a multiprocessor: the register bounds that
 * spill nothing (ptxas -v): IDX_TPW_WIDE = 4 tokens a warp 64 registers, 1
 * token 48. */
#ifndef DSV4KV_INDEXER_MIN_BLOCKS
#define DSV4KV_INDEXER_MIN_BLOCKS (IDX_TPW_WIDE >= 4 ? 4 : 5)
#endif
enum { INDEXER_MIN_BLOCKS = DSV4KV_INDEXER_MIN_BLOCKS, INDEXER_ROW_MIN_BLOCKS = 5 };
__global__ void __launch_bounds__(CUDA_BLOCK, INDEXER_MIN_BLOCKS) indexer_fp8_kernel(indexer_params p) {
  __shared__ int64_t later[DEDUP_SHARED_ROWS];
  indexer_rows(p, later, DSV4KV_RECORD_INDEXER_FP8, IDX_TPW_WIDE, 0);
}
__global__ void __launch_bounds__(CUDA_BLOCK, INDEXER_MIN_BLOCKS) indexer_mxfp4_kernel(indexer_params p) {
  __shared__ int64_t later[DEDUP_SHARED_ROWS];
  indexer_rows(p, later, DSV4KV_RECORD_INDEXER_MXFP4, IDX_TPW_WIDE, 0);
}
/* One token a warp: rows that scan for duplicate slots (DEDUP_SHARED, DEDUP_GLOBAL). */
__global__ void __launch_bounds__(CUDA_BLOCK, INDEXER_ROW_MIN_BLOCKS) indexer_fp8_row_kernel(indexer_params p) {
  __shared__ int64_t later[DEDUP_SHARED_ROWS];
  indexer_rows(p, later, DSV4KV_RECORD_INDEXER_FP8, 1, 0);
}
__global__ void __launch_bounds__(CUDA_BLOCK, INDEXER_ROW_MIN_BLOCKS) indexer_mxfp4_row_kernel(indexer_params p) {
  __shared__ int64_t later[DEDUP_SHARED_ROWS];
  indexer_rows(p, later, DSV4KV_RECORD_INDEXER_MXFP4, 1, 0);
}
/* Decode sizes (DEDUP_WARP): one token a warp (which the register scan and
 * the tables loaded once assume), the later rows' slots in registers; a few
 * blocks, so registers do not limit them. */
__global__ void __launch_bounds__(CUDA_BLOCK) indexer_fp8_decode_kernel(indexer_params p) {
  indexer_rows(p, NULL, DSV4KV_RECORD_INDEXER_FP8, 1, 1);
}
__global__ void __launch_bounds__(CUDA_BLOCK) indexer_mxfp4_decode_kernel(indexer_params p) {
  indexer_rows(p, NULL, DSV4KV_RECORD_INDEXER_MXFP4, 1, 1);
}

const void *const cuda_indexer_kernels[] = {(const void *)indexer_fp8_kernel,          (const void *)indexer_mxfp4_kernel,
                                            (const void *)indexer_fp8_row_kernel,      (const void *)indexer_mxfp4_row_kernel,
                                            (const void *)indexer_fp8_decode_kernel,   (const void *)indexer_mxfp4_decode_kernel,
                                            NULL};

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
  /* table_f4 reads entries 4m .. 4m+3 (weight) and row * cs_stride + 4m ..
   * (cos_sin): aligned when the base and the row stride are */
  const int64_t cs_bytes = p.cs_f32 ? 4 : 2, w_bytes = p.w_f32 ? 4 : 2;
  p.vec_w = a->weight.stride[0] == 1 && (uintptr_t)p.weight % (4 * w_bytes) == 0;
  p.vec_cs = (uintptr_t)p.cos_sin % (4 * cs_bytes) == 0 && (p.cs_stride * cs_bytes) % (4 * cs_bytes) == 0;
  p.bsd = dpagediv_of(p.bs);
  p.rd = dpagediv_of(p.ratio);
  p.layout = c->layout;
  p.dd = dedup_mode_of(a->T, &c->layout, p.record == DSV4KV_RECORD_INDEXER_FP8 && !p.mx_scale, c->base,
                       c->page_stride);
  p.note.rep = r;
  p.note.detail = 0;
  cuda_report_reset(&call, r, OP_INDEXER_STORE);
  if (a->T > 0) {
    const mark_params m = {p.slots, p.positions, p.T, p.num_slots, p.ratio, p.cs_rows, p.base, p.page_stride, p.bs,
                           p.layout, p.dd, p.bsd};
    cuda_mark_rows(call.stream, &m);
    const int fp8 = p.record == DSV4KV_RECORD_INDEXER_FP8;
    if (p.dd.mode == DEDUP_MARK) { /* IDX_TPW_WIDE rows a warp */
      const unsigned grid = cuda_grid_rows((a->T + IDX_TPW_WIDE - 1) / IDX_TPW_WIDE);
      if (fp8)
        CUDA_LAUNCH_REPORTED(indexer_fp8_kernel, grid, call, p);
      else
        CUDA_LAUNCH_REPORTED(indexer_mxfp4_kernel, grid, call, p);
    } else {
      const unsigned grid = cuda_grid_rows(a->T);
      const int warp = p.dd.mode == DEDUP_WARP;
      if (fp8)
        CUDA_LAUNCH_REPORTED(warp ? indexer_fp8_decode_kernel : indexer_fp8_row_kernel, grid, call, p);
      else
        CUDA_LAUNCH_REPORTED(warp ? indexer_mxfp4_decode_kernel : indexer_mxfp4_row_kernel, grid, call, p);
    }
  }
  return cuda_leave(&call, "indexer_k_norm_rope_store");
}
