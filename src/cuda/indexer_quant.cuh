/* The indexer store's per-lane arithmetic (src/cuda/indexer_cuda.cu's rows
 * and kernels use it): how a warp's lanes share a token, the call's
 * parameters, the table loads, the reference's sum of squares, the norm and
 * RoPE of a pair, the FP8 / MXFP4 quantizers and a record's stores.  Every
 * step equals formats/ref.h's (NUMERICS §2.4, §10). */
#ifndef DSV4KV_INDEXER_QUANT_CUH
#define DSV4KV_INDEXER_QUANT_CUH

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
  int32_t vec_k, vec4_c, vec16_c; /* 8-byte loads of k_pre rows; 4- and 16-byte stores on the cache */
  int32_t vec_w, vec_cs; /* 4 table entries in one load (weight contiguous; cos_sin rows aligned) */
  int32_t common;        /* the common call (indexer_common_of): the decode kernels' constants */
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

/* cos_sin entries off, off+1 into c[] and off+32, off+33 into sn[] (off
 * even): one 8-byte (fp32) or 4-byte (bf16) load each when vec_cs
 * (table_f4's alignment of off - off % 4 covers the pair), else four. */
static __device__ __forceinline__ void cos_sin_f2(const indexer_params *p, int64_t off, float *c, float *sn) {
  if (p->vec_cs && p->cs_f32) {
    const float *e = (const float *)p->cos_sin + off;
    const float2 a = __ldg((const float2 *)e), b = __ldg((const float2 *)(e + 32));
    c[0] = a.x, c[1] = a.y, sn[0] = b.x, sn[1] = b.y;
  } else if (p->vec_cs) {
    const uint16_t *e = (const uint16_t *)p->cos_sin + off;
    const unsigned int a = __ldg((const unsigned int *)e), b = __ldg((const unsigned int *)(e + 32));
    c[0] = f32_from_bits(a << 16), c[1] = f32_from_bits(a & 0xFFFF0000u);
    sn[0] = f32_from_bits(b << 16), sn[1] = f32_from_bits(b & 0xFFFF0000u);
  } else {
    for (int i = 0; i < 2; i++)
      c[i] = table_f(p->cos_sin, p->cs_f32, off + i), sn[i] = table_f(p->cos_sin, p->cs_f32, off + 32 + i);
  }
}

/* Across the lanes of one token's group (xor strides below IDX_LPT). */
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

/* The group's largest of non-negative, non-NaN floats (their bits order as
 * unsigned integers). */
static __device__ __forceinline__ float group_max_nonneg(float v, int lanes) {
  uint32_t b = f32_bits(v);
  if (lanes == 32) return f32_from_bits(__reduce_max_sync(FULL_MASK, b)); /* the whole warp: one reduction */
  for (int m = 1; m < lanes; m <<= 1) b = max(b, __shfl_xor_sync(FULL_MASK, b, m));
  return f32_from_bits(b);
}

/* A lane's NaN-ignoring amax of its IDX_DPL results r (bf16 pairs); *finite
 * = 1 when none is a NaN or an Inf, *nonan = 1 when none is a NaN.  16-bit
 * maxima of the magnitudes' bits; a lane holding a NaN takes the per-value
 * maximum. */
static __device__ __forceinline__ float lane_amax(const uint32_t *r, int dpl, int *finite, int *nonan) {
  const uint32_t mb = bf16x2_max_magnitude(r, dpl / 2); /* above 0x7F80: a NaN */
  *finite = mb < 0x7F80u;
  *nonan = mb <= 0x7F80u;
  if (mb <= 0x7F80u) return bf16_to_f32((uint16_t)mb);
  float amax = 0.0f;
  for (int i = 0; i < dpl; i++) amax = max_ignore_nan(amax, fabsf(bf16_at(r, i)));
  return amax;
}

/* indexer_fp8_scale_ref of a group's amax, which is not negative and not
 * NaN (lane_amax, group_max_nonneg): floored, it lies in [1e-4, Inf].  A
 * finite one is normal, so ceil_log2_ratio is ceil_log2_ratio_bits, and e
 * lies in [-22, 121] (exponent fields 113 .. 254 against 134 or 135): 2^e
 * and 2^-e are pow2f's normal case and e + 127 needs no clamp. */
static __device__ __forceinline__ float idx_fp8_scale(float amax, int fnuz, float *scale, uint8_t *ue) {
  amax = max_ignore_nan(amax, AMAX_FLOOR);
  if (isinf(amax)) {
    *scale = f32_from_bits(0x7F800000u);
    *ue = 255;
    return 0.0f;
  }
  const int e = ceil_log2_ratio_bits(amax, fp8_quant_max(fnuz));
  *scale = f32_from_bits((uint32_t)(e + 127) << 23);
  *ue = (uint8_t)(e + 127);
  return f32_from_bits((uint32_t)(127 - e) << 23);
}

/* FP8 (indexer_fp8_quant_ref): lane j's IDX_DPL codes into cw[] (4 a word,
 * dims in order) from the group's amax; returns the record's scale word (the
 * fp32 scale, or its UE8M0 byte 4 times).  Every lane calls it.  Where the
 * lane's values are finite, x * 2^-e is finite too, and the encode needs no
 * NaN fix-up. */
static __device__ __forceinline__ uint32_t quant_fp8(const indexer_params *p, const uint32_t *r, int tpw, uint32_t *cw) {
  const int dpl = IDX_DPL(tpw);
  int finite, nonan;
  const float amax = group_max_nonneg(lane_amax(r, dpl, &finite, &nonan), IDX_LPT(tpw));
  float scale;
  uint8_t ue;
  const float inv = idx_fp8_scale(amax, p->fnuz, &scale, &ue);
  if (p->fnuz) {
    for (int i = 0; i < dpl; i += 4) {
      uint32_t w = 0;
      for (int b = 0; b < 4; b++) w |= (uint32_t)fp8_quant_code(bf16_at(r, i + b) * inv, 1) << (8 * b);
      cw[i / 4] = w;
    }
  } else if (finite) {
    for (int i = 0; i < dpl; i += 4)
      cw[i / 4] = e4m3x2_quant_nonnan(bf16_at(r, i) * inv, bf16_at(r, i + 1) * inv) |
                  e4m3x2_quant_nonnan(bf16_at(r, i + 2) * inv, bf16_at(r, i + 3) * inv) << 16;
  } else {
    for (int i = 0; i < dpl; i += 4)
      cw[i / 4] = e4m3x2_quant(bf16_at(r, i) * inv, bf16_at(r, i + 1) * inv) |
                  e4m3x2_quant(bf16_at(r, i + 2) * inv, bf16_at(r, i + 3) * inv) << 16;
  }
  return p->mx_scale ? ue * 0x01010101u : f32_bits(scale);
}

/* MXFP4 (indexer_mxfp4_quant_ref): blocks of 32 dims (IDX_MX_LANES lanes);
 * lane j's IDX_DPL / 2 bytes into pw[] (4 a word); returns the record's 4
 * scale bytes as a word (every lane the same).  Every lane calls it. */
static __device__ __forceinline__ uint32_t quant_mxfp4(const uint32_t *r, int g, int tpw, uint32_t *pw) {
  const int dpl = IDX_DPL(tpw);
  int finite, nonan;
  const float amax = group_max_nonneg(lane_amax(r, dpl, &finite, &nonan), IDX_MX_LANES(tpw));
  float inv;
  const uint8_t sb = mxfp4_block_scale_ref(amax, &inv);
  uint32_t packed[IDX_DPL_MAX / 2 > 4 ? IDX_DPL_MAX / 2 : 4] = {0}; /* one token a warp: 2 bytes a lane */
  const int l = (int)sb - 127;
  if (nonan && l >= E2M1_PAIRS_POW2_MIN && l <= E2M1_PAIRS_POW2_MAX) {
    /* e2m1_encode(x * 2^-l) is e2m1_encode_div(x) for sv = 2^l (x * 2^-l is
     * exact, or far below the first midpoint): two values a compare */
    const e2m1_bounds_bf16x2 b = e2m1_bounds_bf16x2_of(pow2f(l));
    for (int i = 0; i < dpl / 2; i++) packed[i] = e2m1x2_encode_bf16x2(r[i], &b) & 0xFF;
  } else { /* a NaN, or a scale whose midpoints are not normal bf16 values */
    for (int i = 0; i < dpl; i += 2)
      packed[i / 2] = (uint32_t)(e2m1_encode(bf16_at(r, i + 1) * inv) << 4 | e2m1_encode(bf16_at(r, i) * inv));
  }
  for (int i = 0; i < dpl / 2; i += 4)
    pw[i / 4] = packed[i] | packed[i + 1] << 8 | packed[i + 2] << 16 | packed[i + 3] << 24;
  uint32_t sw = 0;
  for (int k = 0; k < INDEXER_MXFP4_NUM_SCALES; k++)
    sw |= (__shfl_sync(FULL_MASK, (uint32_t)sb, g * IDX_LPT(tpw) + k * IDX_MX_LANES(tpw)) & 0xFF) << (8 * k);
  return sw;
}

/* The 4 bytes of w (low byte first) at p: one store where vec (4-byte aligned). */
static __device__ __forceinline__ void store_word(uint8_t *p, uint32_t w, int vec) {
  if (vec) {
    *(uint32_t *)p = w;
  } else {
    for (int i = 0; i < 4; i++) p[i] = (uint8_t)(w >> (8 * i));
  }
}

/* The stores of lane j's part of a record: n bytes of words w[] at its
 * values (one 16- or 8-byte access where vec16), the scale word from the
 * group's first lane in one 4-byte store (DEDUP_MARK reads that word). */
static __device__ __forceinline__ void store_record(const indexer_params *p, uint8_t *page, int64_t pos, int rec,
                                                    const uint32_t *w, uint32_t scale_word, int j, int tpw) {
  const int dpl = IDX_DPL(tpw), n = rec == DSV4KV_RECORD_INDEXER_FP8 ? dpl : dpl / 2;
  /* p->layout is rec's (cache_view_make, and indexer_launch runs a record's
   * kernels for it alone): the constants of the table */
  record_layout lay;
  record_layout_of((dsv4kv_record)rec, &lay);
  const int64_t off = rec == DSV4KV_RECORD_INDEXER_FP8 && p->tiled ? idx_tiled_off(pos, dpl * j)
                                                                    : record_values_off(&lay, p->bs, pos) + n * j;
  uint8_t *v = page + off;
  if (p->vec16_c && n == 16) {
    *(uint4 *)v = make_uint4(w[0], w[1], w[2], w[3]);
  } else if (p->vec16_c && n == 8) {
    *(uint2 *)v = make_uint2(w[0], w[1]);
  } else {
    for (int i = 0; i < n; i += 4) {
      if (n - i >= 4) {
        store_word(v + i, w[i / 4], p->vec4_c);
      } else { /* the last n - i bytes (MXFP4 one token a warp: 2) */
        for (int b = 0; b < n - i; b++) v[i + b] = (uint8_t)(w[i / 4] >> (8 * b));
      }
    }
  }
  if (j == 0) store_word(page + record_scales_off(&lay, p->bs, pos), scale_word, p->vec4_c);
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
    } else if (chunk == 2) {
      cos_sin_f2(p, off, c, sn);
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

/* indexer_norm_rope_pair on a bf16 pair (low half first), the result a bf16
 * pair: the same products and fma, each rounding by the hardware's RNE, two
 * values an instruction.  A NaN may leave with another payload than
 * f32_to_bf16's; it stays a NaN, which every quantizer encodes alike and amax
 * ignores, so the stored bytes do not change. */
static __device__ __forceinline__ uint32_t norm_rope_pair(uint32_t kw, float w0, float w1, float c, float s, float rstd) {
  const uint32_t eo =
      bf16x2_rn((f32_from_bits(kw << 16) * rstd) * w0, (f32_from_bits(kw & 0xFFFF0000u) * rstd) * w1);
  const float e = f32_from_bits(eo << 16), o = f32_from_bits(eo & 0xFFFF0000u);
  return bf16x2_rn(fmaf(e, c, -(o * s)), fmaf(o, c, e * s));
}


#endif
