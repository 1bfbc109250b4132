/* The AVX2 CPU path of the index builders (SPEC §5, NUMERICS §4), for
 * processors without AVX-512: global top-k rows and flashinfer rows, 8
 * entries at a time, the same steps as src/cpu/index_avx512.c (lane masks as
 * vectors instead of mask registers) and byte-identical to the scalar rows
 * of src/cpu/index_ops_cpu.c, which the case registry checks on every input
 * (ctest ops_cpu_paths runs each path the machine has).  Global top-k rows
 * and flashinfer prefill rows hold their block table row's first 64 columns
 * in registers (table_row below) and gather the entries past them after
 * (table_pass); other lookups are masked gathers (a lane whose lookup is not
 * taken reads nothing); a row that would report a skip is left to the
 * scalar row (0 returned).
 * The preconditions of a call are index_avx512_ok_topk / _flashinfer's: they
 * are plain checks of the views, the same for both widths. */
#include "cpu/cpu.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <pthread.h>

#include "cpu/avx2.h" /* AVX2, INLINE */

/* Lanes (all ones) of an 8-wide step at j of n entries. */
static inline AVX2 __m256i tail8(int64_t j, int64_t n) {
  const int64_t left = n - j;
  const int32_t k = left >= 8 ? 8 : left <= 0 ? 0 : (int32_t)left;
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(k), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}
static inline AVX2 int lanes(__m256i m) { return __builtin_popcount((unsigned)_mm256_movemask_ps(_mm256_castsi256_ps(m))); }
static inline AVX2 int any(__m256i m) { return !_mm256_testz_si256(m, m); }
/* Zen 2 / 3 run masked loads and stores of 8 lanes as microcode (a store
 * some twenty micro-ops): whole vectors (`full`: m all ones) take plain
 * ones (global top-k T 4096 on one Zen 3 core: 4.5 -> 1.6 ms). */
static inline AVX2 __m256i load8(const int32_t *p, __m256i m, int full) {
  return full ? _mm256_loadu_si256((const __m256i *)p) : _mm256_maskload_epi32(p, m);
}
static inline AVX2 void store8(int32_t *p, __m256i m, __m256i v, int full) {
  if (full)
    _mm256_storeu_si256((__m256i *)p, v);
  else
    _mm256_maskstore_epi32(p, m, v);
}
/* lanes of m with v >= 0 */
static inline AVX2 __m256i nonneg(__m256i v, __m256i m) {
  return _mm256_and_si256(m, _mm256_cmpgt_epi32(v, _mm256_set1_epi32(-1)));
}
/* src[j ..] where m, -1 elsewhere (masked lanes read nothing; a whole vector,
 * `full`, by a plain load) */
static inline AVX2 __m256i load_or_neg1(const int32_t *src, __m256i m, int full) {
  if (full) return _mm256_loadu_si256((const __m256i *)src);
  return _mm256_blendv_epi8(_mm256_set1_epi32(-1), _mm256_maskload_epi32(src, m), m);
}

/* remap: v < 0 -> -1, else (v >> shift) * span + (v & mask) in int32. */
static AVX2 __m256i remap8(__m256i v, int shift, int32_t span) {
  if (span == (int32_t)1 << shift) /* pages their size apart: the slot itself, no multiply */
    return _mm256_blendv_epi8(v, _mm256_set1_epi32(-1), _mm256_srai_epi32(v, 31));
  const __m256i r = _mm256_add_epi32(_mm256_mullo_epi32(_mm256_srai_epi32(v, shift), _mm256_set1_epi32(span)),
                                     _mm256_and_si256(v, _mm256_set1_epi32((1 << shift) - 1)));
  return _mm256_blendv_epi8(_mm256_set1_epi32(-1), r, _mm256_cmpgt_epi32(v, _mm256_set1_epi32(-1)));
}

/* slot_of for the lanes m of positions pos (>= 0 there), as lookup16 of
 * index_avx512.c; *fail = the lanes of m whose column is past the table. */
static AVX2 __m256i lookup8(__m256i pos, __m256i m, const int32_t *row, int64_t s1, int64_t ncols, int shift,
                            __m256i *fail) {
  const __m256i lp = _mm256_srai_epi32(pos, shift);
  const __m256i in = _mm256_and_si256(m, _mm256_cmpgt_epi32(_mm256_set1_epi32((int32_t)ncols), lp));
  *fail = _mm256_andnot_si256(in, m);
  /* unit column strides (the usual table) skip the multiply on the gather's index */
  const __m256i col = s1 == 1 ? lp : _mm256_mullo_epi32(lp, _mm256_set1_epi32((int32_t)s1));
  const __m256i page = _mm256_mask_i32gather_epi32(_mm256_setzero_si256(), row, col, in, 4);
  const __m256i g = _mm256_add_epi32(_mm256_slli_epi32(page, shift),
                                     _mm256_and_si256(pos, _mm256_set1_epi32((1 << shift) - 1)));
  return _mm256_blendv_epi8(_mm256_set1_epi32(-1), g, in);
}

/* ---- block-table rows in registers ----------------------------------------
 * A row of a few columns is held in registers and looked up by dword
 * permutes and a blend tree instead of the 8-lane vpgatherdd (Zen 3, 64 rows
 * of 512 lookups measured alone: 16.0 us gathered; 6.9 us from 2 registers
 * of 16-bit pages, 11.9 from 4; 9.5 from 4 registers of 32-bit pages):
 * - TABLE_P16: at most 64 columns whose pages lie within 65536 of the least
 *   (a pool of up to 65536 pages always does), as 16-bit offsets from it,
 *   two to a dword, in 2 registers (<= 32 columns) or 4;
 * - TABLE_P32: at most 64 columns of any pages, as (page - column) << shift
 *   in 4 registers (<= 32 columns) or 8, so that a position's slot is the
 *   position plus its column's entry.
 * A lookup past the row's columns reads a wrong entry: callers check the
 * columns apart. */
/* The least / greatest of 8 lanes. */
static inline AVX2 int32_t hmin8(__m256i v) {
  __m128i m = _mm_min_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  m = _mm_min_epi32(m, _mm_shuffle_epi32(m, 0x4E));
  return _mm_cvtsi128_si32(_mm_min_epi32(m, _mm_shuffle_epi32(m, 0xB1)));
}
static inline AVX2 int32_t hmax8(__m256i v) {
  __m128i m = _mm_max_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  m = _mm_max_epi32(m, _mm_shuffle_epi32(m, 0x4E));
  return _mm_cvtsi128_si32(_mm_max_epi32(m, _mm_shuffle_epi32(m, 0xB1)));
}

enum { TABLE_NONE, TABLE_P16, TABLE_P32 };
typedef struct {
  __m256i q[8];
  __m256i base;     /* P16: the least page << shift (int32, wrapping as wrap32) */
  __m128i idx, b3, b4, b5; /* shift counts: the permute index (v >> idx); column bit 3 / 4 / 5 to the sign (v << b) */
  __m128i b0, sh;   /* P16: column bit 0 to the sign; pages << sh */
  int kind, wide;   /* wide: P16 in 4 registers */
} table_row;

/* row[c * s1] for c < ncols into t; t->kind = TABLE_NONE when no kind fits
 * (ncols outside [1, 64], shift > 26, or pages too spread for its columns). */
static AVX2 void table_row_load(table_row *t, const int32_t *row, int64_t s1, int64_t ncols, int shift) {
  t->kind = TABLE_NONE;
  if (ncols < 1 || ncols > 64 || shift > 26) return;
  int32_t buf[64];
  if (s1 != 1) {
    for (int64_t c = 0; c < ncols; c++) buf[c] = row[c * s1];
    row = buf;
  }
  __m256i v[8], lo = _mm256_set1_epi32(INT32_MAX), hi = _mm256_set1_epi32(INT32_MIN);
  const int nv = ncols > 32 ? 8 : 4;
  for (int i = 0; i < nv; i++) {
    const int64_t j = 8 * i;
    if (j + 8 <= ncols) {
      v[i] = _mm256_loadu_si256((const __m256i *)(row + j));
      lo = _mm256_min_epi32(lo, v[i]), hi = _mm256_max_epi32(hi, v[i]);
    } else if (j < ncols) {
      const __m256i m = tail8(j, ncols);
      v[i] = _mm256_maskload_epi32(row + j, m);
      lo = _mm256_min_epi32(lo, _mm256_blendv_epi8(_mm256_set1_epi32(INT32_MAX), v[i], m));
      hi = _mm256_max_epi32(hi, _mm256_blendv_epi8(_mm256_set1_epi32(INT32_MIN), v[i], m));
    } else {
      v[i] = _mm256_setzero_si256();
    }
  }
  const int32_t least = hmin8(lo), most = hmax8(hi);
  t->idx = _mm_cvtsi32_si128(shift + 1), t->b3 = _mm_cvtsi32_si128(28 - shift);
  t->b4 = _mm_cvtsi32_si128(27 - shift), t->b5 = _mm_cvtsi32_si128(26 - shift);
  if ((int64_t)most - least <= 65535) {
    /* offsets in [0, 65535] (columns past the row: clamped to 0); packus
     * interleaves the 128-bit halves, the permute restores the order */
    const __m256i b = _mm256_set1_epi32(least);
    for (int i = 0; i < nv / 2; i++) {
      const __m256i p = _mm256_packus_epi32(_mm256_sub_epi32(v[2 * i], b), _mm256_sub_epi32(v[2 * i + 1], b));
      t->q[i] = _mm256_permute4x64_epi64(p, 0xD8);
    }
    t->kind = TABLE_P16, t->wide = nv == 8;
    t->base = _mm256_set1_epi32((int32_t)((uint32_t)least << shift));
    t->b0 = _mm_cvtsi32_si128(31 - shift), t->sh = _mm_cvtsi32_si128(shift);
  } else {
    const __m256i iota = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    const __m128i sh = _mm_cvtsi32_si128(shift);
    for (int i = 0; i < nv; i++) /* (page - column) << shift, int32 wrapping */
      t->q[i] = _mm256_sll_epi32(_mm256_sub_epi32(v[i], _mm256_add_epi32(iota, _mm256_set1_epi32(8 * i))), sh);
    t->kind = TABLE_P32, t->wide = nv == 8, t->idx = sh;
  }
}

/* b where sign's lane is negative, else a.  The empty asm keeps the mask
 * opaque: the compiler otherwise turns a shifted mask into a compare with
 * zero, one more operation a lookup. */
static inline AVX2 __m256i blend_sign(__m256i a, __m256i b, __m256i sign) {
  __asm__ volatile("" : "+x"(sign));
  return _mm256_castps_si256(_mm256_blendv_ps(_mm256_castsi256_ps(a), _mm256_castsi256_ps(b), _mm256_castsi256_ps(sign)));
}

/* Slots of positions v (>= 0, column < the row's) as the scalar row's
 * wrap32(page * 2^shift + offset); other lanes: anything.  kind and wide are
 * constants where it is inlined. */
static inline AVX2 INLINE __m256i table_slot(const table_row *t, int kind, int wide, __m256i v, __m256i offmask) {
  const __m256i i = _mm256_sra_epi32(v, t->idx);
  if (kind == TABLE_P32) {
    const __m256i b3 = _mm256_sll_epi32(v, t->b3);
    const __m256i lo = blend_sign(_mm256_permutevar8x32_epi32(t->q[0], i), _mm256_permutevar8x32_epi32(t->q[1], i), b3);
    const __m256i hi = blend_sign(_mm256_permutevar8x32_epi32(t->q[2], i), _mm256_permutevar8x32_epi32(t->q[3], i), b3);
    const __m256i b4 = _mm256_sll_epi32(v, t->b4);
    __m256i d = blend_sign(lo, hi, b4);
    if (wide) {
      const __m256i lo2 = blend_sign(_mm256_permutevar8x32_epi32(t->q[4], i), _mm256_permutevar8x32_epi32(t->q[5], i), b3);
      const __m256i hi2 = blend_sign(_mm256_permutevar8x32_epi32(t->q[6], i), _mm256_permutevar8x32_epi32(t->q[7], i), b3);
      d = blend_sign(d, blend_sign(lo2, hi2, b4), _mm256_sll_epi32(v, t->b5));
    }
    return _mm256_add_epi32(v, d);
  }
  const __m256i b4 = _mm256_sll_epi32(v, t->b4);
  __m256i w = blend_sign(_mm256_permutevar8x32_epi32(t->q[0], i), _mm256_permutevar8x32_epi32(t->q[1], i), b4);
  if (wide) {
    const __m256i w2 = blend_sign(_mm256_permutevar8x32_epi32(t->q[2], i), _mm256_permutevar8x32_epi32(t->q[3], i), b4);
    w = blend_sign(w, w2, _mm256_sll_epi32(v, t->b5));
  }
  const __m256i pg = blend_sign(_mm256_and_si256(w, _mm256_set1_epi32(0xFFFF)), _mm256_srli_epi32(w, 16),
                                _mm256_sll_epi32(v, t->b0));
  return _mm256_add_epi32(_mm256_add_epi32(_mm256_sll_epi32(pg, t->sh), t->base), _mm256_and_si256(v, offmask));
}

/* Left-packing of the lanes of an 8-bit mask: byte k of leftpack[m] is the
 * lane of m's k-th set bit (a permute index), set once. */
static uint64_t leftpack[256];
static pthread_once_t leftpack_once = PTHREAD_ONCE_INIT;
static void leftpack_fill(void) {
  for (unsigned m = 0; m < 256; m++) {
    uint64_t w = 0;
    for (unsigned l = 0, k = 0; l < 8; l++)
      if (m >> l & 1) w |= (uint64_t)l << (8 * k++);
    leftpack[m] = w;
  }
}

/* out[fi[k]] = the slot of entry fv[k] (>= 0), k < n, in row[c * s1] (c <
 * ncols), remapped where rm, by gathers 8 at a time; an entry whose column
 * is past ncols gets -1 (and the caller's check of the greatest entry gives
 * the row to the scalar path). */
static inline AVX2 INLINE void far_fix(const int32_t *fv, const int32_t *fi, int n, const int32_t *row, int64_t s1,
                                       int64_t ncols, int shift, int rm, int32_t span, int32_t *out) {
  int32_t res[8];
  for (int k = 0; k < n; k += 8) {
    __m256i fail;
    const __m256i g = lookup8(_mm256_loadu_si256((const __m256i *)(fv + k)), tail8(k, n), row, s1, ncols, shift, &fail);
    _mm256_storeu_si256((__m256i *)res, rm ? remap8(g, shift, span) : g);
    for (int l = 0; l < 8 && k + l < n; l++) out[fi[k + l]] = res[l];
  }
}

enum { FAR_CHUNK = 256 }; /* entries a pass collects far lanes over before fixing them */

/* The lanes of v whose column is 64 or more. */
static inline AVX2 __m256i far_lanes(__m256i v, int shift) {
  return _mm256_cmpgt_epi32(v, _mm256_set1_epi32(shift <= 24 ? (int32_t)(64u << shift) - 1 : INT32_MAX));
}

/* Whether a row of whole vectors, nfar of its entries past column 63, goes
 * through table_pass rather than gathers: a far entry costs the pass's lookup
 * and then a gather, a pass of no far entry about 0.65 of the gathers (the
 * bench's global top-k, its table widened to 1000 columns, on 1 thread of a
 * Zen 4 forced to avx2: entries within the first 64 columns 2.5-2.9 ->
 * 1.7-1.9 ms, entries over all 1000 2.7-2.8 -> 5.3-5.5 ms before this
 * rule), so up to a quarter of them. */
static inline int far_pays(int64_t nfar, int64_t whole) { return nfar * 4 <= whole; }

/* The whole vectors x[0 .. whole) of a row's entries through the table row t
 * (a block table row's first 64 columns at most) into out: the slot of each
 * entry >= 0, -1 for the others, remapped where rm (flashinfer; global top-k
 * stores the slots).  far: entries of columns 64 and up (their lookups read
 * a wrong register entry) are collected, left-packed with their indices,
 * FAR_CHUNK entries at a time, and rewritten from the table row `row` (ncols
 * columns of stride s1) by gathers.  Collecting costs a few operations a
 * vector and no branch; a second register table over every vector cost more
 * than the first pass, and a branch on whether a vector reaches those columns
 * (about half of a top-k 1024 row's do) mispredicted often enough to cost
 * more still (the bench's flashinfer top-k 1024 rows on 1 thread of a Zen 4
 * forced to avx2: 3.4 ms gathered, 4.9 with the branch, 2.9 with the second
 * table, 2.7-2.8 collected).  Returns the greatest entry; *neg = the lanes
 * < 0.  (Past shift 24 no position below 2^31 lies in column 64 or more.) */
static inline AVX2 INLINE int32_t table_pass(const table_row *t, int kind, int wide, int far, int rm,
                                             const int32_t *x, int64_t whole, int shift, int32_t span,
                                             const int32_t *row, int64_t s1, int64_t ncols, int32_t *out,
                                             int64_t *neg) {
  const __m256i offmask = _mm256_set1_epi32((1 << shift) - 1), neg1 = _mm256_set1_epi32(-1);
  const table_row tl = *t; /* a copy the stores to out cannot alias: the table stays in registers */
  __m256i most = neg1;
  int64_t nneg = 0;
  int32_t fv[FAR_CHUNK + 8], fi[FAR_CHUNK + 8];
  const int64_t chunk = far ? FAR_CHUNK : whole; /* one loop over the row when nothing is collected */
  for (int64_t j0 = 0; j0 < whole; j0 += chunk) {
    const int64_t j1 = whole - j0 > chunk ? j0 + chunk : whole;
    int n = 0;
    for (int64_t j = j0; j < j1; j += 8) {
      const __m256i v = _mm256_loadu_si256((const __m256i *)(x + j));
      most = _mm256_max_epi32(most, v);
      nneg += __builtin_popcount((unsigned)_mm256_movemask_ps(_mm256_castsi256_ps(v)));
      const __m256i g = blend_sign(table_slot(&tl, kind, wide, v, offmask), neg1, v);
      _mm256_storeu_si256((__m256i *)(out + j), rm ? remap8(g, shift, span) : g);
      if (far) {
        const unsigned m = (unsigned)_mm256_movemask_ps(_mm256_castsi256_ps(far_lanes(v, shift)));
        const __m256i lane = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)&leftpack[m]));
        _mm256_storeu_si256((__m256i *)(fv + n), _mm256_permutevar8x32_epi32(v, lane));
        _mm256_storeu_si256((__m256i *)(fi + n), _mm256_add_epi32(lane, _mm256_set1_epi32((int32_t)j)));
        n += __builtin_popcount(m);
      }
    }
    if (far) far_fix(fv, fi, n, row, s1, ncols, shift, rm, span, out);
  }
  *neg = nneg;
  return hmax8(most); /* by shuffles: a store to a stack array kept `most` in memory through the loop */
}

/* table_pass with t's kind and width as constants (far and rm are at the
 * callers). */
static inline AVX2 INLINE int32_t table_pass_of(const table_row *t, int far, int rm, const int32_t *x, int64_t whole,
                                                int shift, int32_t span, const int32_t *row, int64_t s1,
                                                int64_t ncols, int32_t *out, int64_t *neg) {
  if (far) pthread_once(&leftpack_once, leftpack_fill);
  if (t->kind == TABLE_P32)
    return t->wide ? table_pass(t, TABLE_P32, 1, far, rm, x, whole, shift, span, row, s1, ncols, out, neg)
                   : table_pass(t, TABLE_P32, 0, far, rm, x, whole, shift, span, row, s1, ncols, out, neg);
  return t->wide ? table_pass(t, TABLE_P16, 1, far, rm, x, whole, shift, span, row, s1, ncols, out, neg)
                 : table_pass(t, TABLE_P16, 0, far, rm, x, whole, shift, span, row, s1, ncols, out, neg);
}

/* A valid row of a request in range, its table row's first 64 columns in
 * registers (entries past them gathered after, table_pass): 1 when done, 0
 * when a column is past the table (the scalar row rewrites the row; in
 * place, topk_row checked first), -1 when the row's pages fit no register
 * table or too many entries lie past them (far_pays; the caller gathers). */
static AVX2 int topk_row_table(const global_topk_args *a, const int32_t *x, int32_t *out, const int32_t *row,
                               int64_t r, int shift, int in_place) {
  const int64_t K = a->K, whole = K & ~(int64_t)7, s1 = a->block_table.stride[1];
  int far = 0; /* whether the pass collects entries past column 63 */
  if (a->P > 64) { /* an engine's wide table: how many entries lie past the registers, from the first 64
                      * (a sample: a whole count cost the rows that pass it 10 %) */
    const int64_t n = whole < 64 ? whole : 64;
    int64_t nfar = 0;
    for (int64_t j = 0; j < n; j += 8) nfar += lanes(far_lanes(_mm256_loadu_si256((const __m256i *)(x + j)), shift));
    if (!far_pays(nfar, n)) return -1;
    far = nfar > 0 || in_place;
  }
  table_row t;
  table_row_load(&t, row, s1, a->P < 64 ? a->P : 64, shift);
  if (t.kind == TABLE_NONE) return -1;
  int64_t neg;
  int32_t top = far ? table_pass_of(&t, 1, 0, x, whole, shift, 0, row, s1, a->P, out, &neg)
                    : table_pass_of(&t, 0, 0, x, whole, shift, 0, row, s1, a->P, out, &neg);
  /* an entry past column 63 that the sample did not see: the row again, collecting (x is intact: not in
   * place), rather than collecting in every row of a wide table (the bench's: 25 % slower) */
  if (!far && a->P > 64 && (top >> shift) >= 64 && (top >> shift) < a->P)
    top = table_pass_of(&t, 1, 0, x, whole, shift, 0, row, s1, a->P, out, &neg);
  if ((top >> shift) >= a->P) return 0;
  int64_t count = whole - neg;
  if (whole < K) {
    const __m256i m = tail8(whole, K), v = _mm256_maskload_epi32(x + whole, m), pos = nonneg(v, m);
    __m256i fail;
    const __m256i g = lookup8(v, pos, row, s1, a->P, shift, &fail);
    if (any(fail)) return 0;
    count += lanes(pos);
    _mm256_maskstore_epi32(out + whole, m, g);
  }
  *(int32_t *)(a->lens_out.data + r * a->lens_out.stride[0] * 4) = (int32_t)count;
  return 1;
}

static AVX2 int topk_row(const global_topk_args *a, int64_t t, int shift) {
  const int valid = tv_bool_1(&a->valid, t);
  const int64_t req = tv_i32_1(&a->req, t);
  const int req_ok = req >= 0 && req < a->R;
  if (!req_ok && valid) return 0;
  const int32_t *x = (const int32_t *)(a->topk.data + t * a->topk.stride[0] * 4);
  int32_t *out = (int32_t *)(a->global_out.data + t * a->global_out.stride[0] * 4);
  const int32_t *row = (const int32_t *)(a->block_table.data + (req_ok ? req : 0) * a->block_table.stride[0] * 4);
  /* out the topk row itself (in place): every column checked before the
   * first store, as the scalar row must still read the row whole if it takes
   * over; otherwise a failing column is found on the way (one pass) */
  const int in_place = (const int32_t *)out < x + a->K && x < (const int32_t *)out + a->K;
  if (in_place && valid && req_ok)
    for (int64_t j = 0; j < a->K; j += 8) {
      const __m256i m = tail8(j, a->K), v = load8(x + j, m, j + 8 <= a->K);
      const __m256i past = _mm256_cmpgt_epi32(_mm256_srai_epi32(v, shift), _mm256_set1_epi32((int32_t)a->P - 1));
      if (any(_mm256_and_si256(nonneg(v, m), past))) return 0;
    }
  if (valid && req_ok) {
    const int done = topk_row_table(a, x, out, row, t, shift, in_place);
    if (done >= 0) return done;
  }
  int32_t count = 0;
  for (int64_t j = 0; j < a->K; j += 8) {
    const __m256i m = tail8(j, a->K);
    const __m256i v = load8(x + j, m, j + 8 <= a->K);
    const __m256i pos = req_ok ? nonneg(v, m) : _mm256_setzero_si256();
    __m256i fail;
    const __m256i g = lookup8(v, pos, row, a->block_table.stride[1], a->P, shift, &fail);
    if (valid && any(fail)) return 0; /* not in place: the scalar row rewrites the row from its input */
    count += lanes(_mm256_andnot_si256(fail, pos));
    store8(out + j, m, g, j + 8 <= a->K);
  }
  *(int32_t *)(a->lens_out.data + t * a->lens_out.stride[0] * 4) = valid ? count : 0;
  return 1;
}

int global_topk_row_avx2(const global_topk_args *a, int64_t t, int shift) { return topk_row(a, t, shift); }

/* out[0 .. n) = remap(src[j] for j < have, else -1). */
static AVX2 void remap_row(const int32_t *src, int64_t have, int64_t n, int shift, int32_t span, int32_t *out) {
  for (int64_t j = 0; j < n; j += 8) {
    const __m256i m = tail8(j, n), h = _mm256_and_si256(tail8(j, have), m);
    store8(out + j, m, remap8(load_or_neg1(src + j, h, j + 8 <= n && j + 8 <= have), shift, span), j + 8 <= n);
  }
}

/* lookup_store of index_avx512.c on 8 lanes: lookups of the lanes m of v
 * (>= 0 there) in row req of bt, remapped into out where `store`; 0 when
 * the scalar row must take over, else 1; *count += the lanes whose slot is
 * >= 0. */
static inline AVX2 INLINE int lookup_store(__m256i v, __m256i m, __m256i store, int full, const tview *bt, int64_t req, int shift,
                             int32_t span, int note, int64_t *count, int32_t *out) {
  __m256i g = _mm256_set1_epi32(-1);
  if (any(m)) {
    if (req < 0 || req >= bt->shape[0]) {
      if (note) return 0;
    } else {
      __m256i fail;
      g = lookup8(v, m, (const int32_t *)(bt->data + req * bt->stride[0] * 4), bt->stride[1], bt->shape[1], shift,
                  &fail);
      if (note && any(fail)) return 0;
      *count += lanes(nonneg(g, _mm256_andnot_si256(fail, m)));
    }
  }
  store8(out, store, remap8(g, shift, span), full);
  return 1;
}

static AVX2 int fi_decode_row(const flashinfer_args *a, int64_t d, int sshift, int cshift) {
  int32_t *out = (int32_t *)(a->out.data + d * a->out.stride[0] * 4);
  const int token_valid = a->has_dvalid ? tv_bool_1(&a->dvalid, d) : 1;
  const int64_t req = tv_i32_1(&a->req, d);
  int64_t n = 0;
  if (a->local) {
    const int32_t *src = (const int32_t *)(a->dcomp.data + d * a->dcomp.stride[0] * 4);
    int64_t count = 0;
    for (int64_t j = 0; j < a->K4; j += 8) {
      const __m256i m = tail8(j, a->K4), h = _mm256_and_si256(tail8(j, a->Dk), m);
      const __m256i v = load_or_neg1(src + j, h, j + 8 <= a->K4 && j + 8 <= a->Dk);
      if (!lookup_store(v, nonneg(v, h), m, j + 8 <= a->K4, &a->comp_bt, req, cshift, a->c_span, token_valid,
                        &count, out + a->S + j))
        return 0;
    }
    if (a->Dk > 0) n = token_valid ? count : 0;
  } else {
    remap_row((const int32_t *)(a->dcomp.data + d * a->dcomp.stride[0] * 4), a->Dk, a->K4, cshift, a->c_span,
              out + a->S);
    if (a->Dk > 0) n = a->has_dcomp_lens ? tv_i32_1(&a->dcomp_lens, d) : a->Dk;
  }
  if (n < 0 || n > a->Dk) return 0; /* clamped and noted by the scalar row */
  remap_row((const int32_t *)(a->dswa.data + d * a->dswa.stride[0] * 4), a->S, a->S, sshift, a->swa_span, out);
  *(int32_t *)(a->lens.data + d * a->lens.stride[0] * 4) = (int32_t)(uint32_t)(uint64_t)(a->S + n);
  return 1;
}

/* A prefill row's window (positions swa_start + j, j < swa_len, of S) when
 * its pages span at most 8 columns of the table, all inside it: the row's
 * entries (page - column) << shift of those columns in one register, one
 * permute a vector instead of the gather (lookup_store's bytes; a prefill
 * row's length does not count its slots); 0 when not taken. */
static AVX2 int window_store(const tview *bt, int64_t req, int64_t swa_start, int64_t swa_len, int64_t S, int shift,
                             int32_t span, int32_t *out) {
  if (swa_len <= 0 || req < 0 || req >= bt->shape[0]) return 0;
  const int64_t c0 = swa_start >> shift, c1 = (swa_start + swa_len - 1) >> shift;
  if (c1 - c0 >= 8 || c1 >= bt->shape[1]) return 0;
  const int32_t *row = (const int32_t *)(bt->data + req * bt->stride[0] * 4);
  int32_t d[8] = {0};
  for (int64_t c = c0; c <= c1; c++) d[c - c0] = (int32_t)((uint32_t)(row[c * bt->stride[1]] - (int64_t)c) << shift);
  const __m256i dv = _mm256_loadu_si256((const __m256i *)d), iota = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  const __m128i sh = _mm_cvtsi32_si128(shift);
  for (int64_t j = 0; j < S; j += 8) {
    const __m256i m = tail8(j, S), h = _mm256_and_si256(tail8(j, swa_len), m);
    const __m256i p = _mm256_add_epi32(_mm256_set1_epi32((int32_t)(swa_start + j)), iota);
    const __m256i col = _mm256_sub_epi32(_mm256_sra_epi32(p, sh), _mm256_set1_epi32((int32_t)c0));
    const __m256i g = _mm256_blendv_epi8(_mm256_set1_epi32(-1),
                                         _mm256_add_epi32(p, _mm256_permutevar8x32_epi32(dv, col)), h);
    store8(out + j, m, remap8(g, shift, span), j + 8 <= S);
  }
  return 1;
}

/* The whole vectors of a prefill row's top-k entries (x, whole of them)
 * through the compressed table's row `row`, its first 64 columns in
 * registers and entries past them gathered after (table_pass; a top-k 1024
 * row of 16-token pages uses 65-69 columns, some 7 % of its entries past 64;
 * an engine's table row spans the sequence).  Returns whole, or 0 when not
 * taken (a column past the table: the lookups find it, and leave to the
 * scalar row what it notes; pages no register table holds; more than a
 * quarter of the entries past column 63, far_pays).  The columns
 * are checked a vector at a time before anything is stored, so such a row
 * pays little. */
static AVX2 int64_t fi_topk_table(const tview *cbt, const int32_t *row, const int32_t *x, int64_t whole, int shift,
                                  int32_t span, int32_t *out) {
  const int64_t cols = cbt->shape[1];
  if (cols < 1) return 0; /* no column: table_row_load would still read row[0] */
  const __m256i last = _mm256_set1_epi32(cols - 1 < INT32_MAX ? (int32_t)(cols - 1) : INT32_MAX);
  __m256i most = _mm256_set1_epi32(-1);
  int64_t nfar = 0;
  for (int64_t j = 0; j < whole; j += 8) {
    const __m256i v = _mm256_loadu_si256((const __m256i *)(x + j));
    if (any(_mm256_cmpgt_epi32(_mm256_srai_epi32(v, shift), last))) return 0;
    most = _mm256_max_epi32(most, v);
    nfar += lanes(far_lanes(v, shift));
  }
  if (!far_pays(nfar, whole)) return 0;
  const int32_t top = hmax8(most);
  const int64_t used = top < 0 ? 1 : (top >> shift) + 1, s1 = cbt->stride[1];
  table_row t;
  table_row_load(&t, row, s1, used < 64 ? used : 64, shift);
  if (t.kind == TABLE_NONE) return 0;
  int64_t neg;
  if (used > 64)
    table_pass_of(&t, 1, 1, x, whole, shift, span, row, s1, cols, out, &neg);
  else
    table_pass_of(&t, 0, 1, x, whole, shift, span, row, s1, cols, out, &neg);
  return whole;
}

static AVX2 int fi_prefill_row(const flashinfer_args *a, int64_t t, int sshift, int cshift) {
  const int64_t S = a->S, i = t - a->D;
  const int64_t req = tv_i32_1(&a->req, t);
  if (req < 0 || req >= a->R) return 0;
  int64_t swa_start, swa_len, topk_len;
  cpu_fi_prefill_span(a, t, req, &swa_start, &swa_len, &topk_len);
  if (topk_len < 0 || topk_len > a->Wp) return 0;
  if (swa_start + S > INT32_MAX) return 0; /* positions past int32: the scalar row's int64 */
  int32_t *out = (int32_t *)(a->out.data + t * a->out.stride[0] * 4);
  int64_t count = 0;
  const __m256i iota = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  if (!window_store(&a->swa_bt, req, swa_start, swa_len, S, sshift, a->swa_span, out))
  for (int64_t j = 0; j < S; j += 8) {
    const __m256i m = tail8(j, S), h = _mm256_and_si256(tail8(j, swa_len), m);
    const __m256i p = _mm256_add_epi32(_mm256_set1_epi32((int32_t)(swa_start + j)), iota);
    if (!lookup_store(p, h, m, j + 8 <= S, &a->swa_bt, req, sshift, a->swa_span, 1, &count, out + j)) return 0;
  }
  const int32_t *x = (const int32_t *)(a->ptopk.data + i * a->ptopk.stride[0] * 4);
  /* the whole vectors of entries from a table row in registers (as global
   * top-k's rows), where the request's row fits one */
  int64_t j0 = 0;
  const tview *cbt = &a->comp_bt;
  if (req < cbt->shape[0] && topk_len >= 8)
    j0 = fi_topk_table(cbt, (const int32_t *)(cbt->data + req * cbt->stride[0] * 4), x,
                       (topk_len < a->K4 ? topk_len : a->K4) & ~(int64_t)7, cshift, a->c_span, out + S);
  for (int64_t j = j0; j < a->K4; j += 8) {
    const __m256i m = tail8(j, a->K4), h = _mm256_and_si256(tail8(j, topk_len), m);
    const __m256i v = load_or_neg1(x + j, h, j + 8 <= a->K4 && j + 8 <= topk_len);
    if (!lookup_store(v, nonneg(v, h), m, j + 8 <= a->K4, &a->comp_bt, req, cshift, a->c_span, 1, &count,
                      out + S + j))
      return 0;
  }
  *(int32_t *)(a->lens.data + t * a->lens.stride[0] * 4) = (int32_t)(uint32_t)(uint64_t)(S + topk_len);
  return 1;
}

/* combine_row_avx2 (cpu.h): whole vectors by adds, the tails by scalars
 * (Zen 2 / 3 run masked stores as microcode). */
AVX2 void combine_row_avx2(int32_t *out, const int32_t *topk, int64_t topk_len, int64_t mr, int64_t first,
                           int64_t swa_len) {
  const uint32_t m32 = (uint32_t)(uint64_t)mr, f32 = (uint32_t)(uint64_t)first;
  const __m256i m = _mm256_set1_epi32((int32_t)m32);
  int64_t j = 0;
  for (; j + 8 <= topk_len; j += 8)
    _mm256_storeu_si256((__m256i *)(out + j), _mm256_add_epi32(_mm256_loadu_si256((const __m256i *)(topk + j)), m));
  for (; j < topk_len; j++) out[j] = (int32_t)((uint32_t)topk[j] + m32);
  int32_t *w = out + topk_len;
  __m256i v = _mm256_add_epi32(_mm256_set1_epi32((int32_t)f32), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  for (j = 0; j + 8 <= swa_len; j += 8, v = _mm256_add_epi32(v, _mm256_set1_epi32(8)))
    _mm256_storeu_si256((__m256i *)(w + j), v);
  for (; j < swa_len; j++) w[j] = (int32_t)(f32 + (uint32_t)j);
}

int flashinfer_row_avx2(const flashinfer_args *a, int64_t t, int swa_shift, int c_shift) {
  return t < a->D ? fi_decode_row(a, t, swa_shift, c_shift) : fi_prefill_row(a, t, swa_shift, c_shift);
}

#else

void combine_row_avx2(int32_t *out, const int32_t *topk, int64_t topk_len, int64_t mr, int64_t first, int64_t swa_len) {
  for (int64_t j = 0; j < topk_len; j++) out[j] = (int32_t)((uint32_t)topk[j] + (uint32_t)(uint64_t)mr);
  for (int64_t j = 0; j < swa_len; j++) out[topk_len + j] = (int32_t)(uint32_t)(uint64_t)(first + j);
}
int global_topk_row_avx2(const global_topk_args *a, int64_t t, int shift) { return (void)a, (void)t, (void)shift, 0; }
int flashinfer_row_avx2(const flashinfer_args *a, int64_t t, int swa_shift, int c_shift) {
  return (void)a, (void)t, (void)swa_shift, (void)c_shift, 0;
}

#endif
