/* The AVX-512 CPU path of the index builders (SPEC §5, NUMERICS §4): global
 * top-k rows and flashinfer rows, 16 entries at a time, byte-identical to
 * src/cpu/index_ops_cpu.c's scalar rows, which the case registry checks on
 * every input it generates (ctest ops_cpu_paths).  The int32 wrapping of
 * the reference is the vector lanes' own (mullo / add wrap mod 2^32); a
 * block table row's first 128 columns are held in registers (row_table),
 * the columns past them read with masked gathers, so a lane whose lookup is
 * not taken reads nothing.  A row that would report a skip is left to the
 * scalar row (these functions return 0 and the scalar row rewrites every
 * entry and notes the skips): skips are rare and the scalar row is their one
 * place.
 * Callers check the preconditions once a call (index_avx512_ok). */
#include "cpu/cpu.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#define AVX512 __attribute__((target("avx512f,avx512bw,avx512vl")))
#define INLINE __attribute__((always_inline))

/* Lanes of a 16-wide step at j of n entries. */
static inline __mmask16 tail(int64_t j, int64_t n) {
  return n - j >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (n - j)) - 1);
}

/* remap of index_ops_cpu.c: v < 0 -> -1, else (v >> shift) * span + (v & mask) in int32. */
static AVX512 __m512i remap16(__m512i v, int shift, int32_t span) {
  const __m512i r = _mm512_add_epi32(_mm512_mullo_epi32(_mm512_srai_epi32(v, (unsigned)shift), _mm512_set1_epi32(span)),
                                     _mm512_and_si512(v, _mm512_set1_epi32((1 << shift) - 1)));
  return _mm512_mask_mov_epi32(_mm512_set1_epi32(-1), _mm512_cmpge_epi32_mask(v, _mm512_setzero_si512()), r);
}

/* Lanes j .. j + 15 below n (none when j >= n). */
static inline __mmask16 below(int64_t j, int64_t n) { return j < n ? tail(j, n) : 0; }

/* Row `row` of a block table (int32, column stride s1, ncols columns) as
 * lookup16 reads it: its first columns in registers when they are
 * contiguous (up to 128: a step's 16 lookups are then one to four vpermt2d
 * and the blends between them, where a gather is 16 loads), the columns
 * past those by masked gathers.  An engine's table spans the longest
 * sequence it serves, far wider than the columns a row's entries use, so
 * the registers hold the leading columns whatever the width. */
enum { TABLE_REGS_MAX = 8 };
typedef struct {
  const int32_t *row;
  int64_t s1, ncols;
  int regs;      /* 0: gathers; 2, 4 or 8: columns [0, held) in t[0 .. regs) */
  int32_t held;  /* min(ncols, 16 regs) */
  __m512i t[TABLE_REGS_MAX];
} row_table;

static AVX512 void row_table_init(row_table *rt, const int32_t *row, int64_t s1, int64_t ncols) {
  const int64_t held = s1 == 1 ? (ncols < 16 * TABLE_REGS_MAX ? ncols : 16 * TABLE_REGS_MAX) : 0;
  rt->row = row, rt->s1 = s1, rt->ncols = ncols, rt->held = (int32_t)held;
  rt->regs = held <= 0 ? 0 : held <= 32 ? 2 : held <= 64 ? 4 : 8;
  for (int i = 0; i < rt->regs; i++) rt->t[i] = _mm512_maskz_loadu_epi32(below(16 * i, held), row + 16 * i);
}

/* slot_of for the lanes m of positions pos (>= 0 there) in the table row
 * rt, page size 1 << shift; *fail = the lanes of m whose column is past the
 * table (scalar: a skip).  Lanes outside the table read nothing.  regs is
 * rt->regs as a constant: the loops below are compiled once for each count
 * (BY_REGS), so that the table stays in registers and no branch on its size
 * runs in them (a lookup16 that read the count cost topk 512 rows 10-20 %). */
static inline AVX512 INLINE __m512i lookup16(__m512i pos, __mmask16 m, const row_table *rt, int shift,
                                              __mmask16 *fail, const int regs) {
  const __m512i lp = _mm512_srai_epi32(pos, (unsigned)shift);
  const __mmask16 in = _mm512_mask_cmplt_epi32_mask(m, lp, _mm512_set1_epi32((int32_t)rt->ncols));
  *fail = m & (__mmask16)~in;
  __m512i page = _mm512_setzero_si512();
  __mmask16 far = in; /* the lanes the registers do not hold */
  if (regs) { /* a permute reads an index's low 5 bits; bits 5 and 6 pick the pair */
    page = _mm512_permutex2var_epi32(rt->t[0], lp, rt->t[1]);
    if (regs >= 4) {
      const __mmask16 b5 = _mm512_test_epi32_mask(lp, _mm512_set1_epi32(32));
      page = _mm512_mask_mov_epi32(page, b5, _mm512_permutex2var_epi32(rt->t[2], lp, rt->t[3]));
      if (regs == 8) {
        const __m512i hi = _mm512_mask_mov_epi32(_mm512_permutex2var_epi32(rt->t[4], lp, rt->t[5]), b5,
                                                 _mm512_permutex2var_epi32(rt->t[6], lp, rt->t[7]));
        page = _mm512_mask_mov_epi32(page, _mm512_test_epi32_mask(lp, _mm512_set1_epi32(64)), hi);
      }
    }
    far = rt->ncols > rt->held ? _mm512_mask_cmpge_epi32_mask(in, lp, _mm512_set1_epi32(rt->held)) : 0;
  }
  if (far)
    page = _mm512_mask_i32gather_epi32(page, far, _mm512_mullo_epi32(lp, _mm512_set1_epi32((int32_t)rt->s1)), rt->row, 4);
  const __m512i g = _mm512_add_epi32(_mm512_slli_epi32(page, (unsigned)shift),
                                     _mm512_and_si512(pos, _mm512_set1_epi32((1 << shift) - 1)));
  return _mm512_mask_mov_epi32(_mm512_set1_epi32(-1), in, g);
}

/* The loops' own copy of a table (rt then points at it): stores to their
 * int32 rows might alias *rt, and a copy whose address stays in the loop
 * does not, so the compiler keeps its registers in registers. */
#define TABLE_LOCAL(rt)  \
  row_table rt##_copy; \
  if (rt) rt##_copy = *(rt), (rt) = &rt##_copy

/* f(..., regs) with regs the constant that n (a table's regs) equals. */
#define BY_REGS(n, f, ...) \
  ((n) == 8 ? f(__VA_ARGS__, 8) : (n) == 4 ? f(__VA_ARGS__, 4) : (n) == 2 ? f(__VA_ARGS__, 2) : f(__VA_ARGS__, 0))

/* A global top-k row's entries through rt: 0 when a lookup fails in a valid
 * row (the scalar row rewrites the row from its input), else its count. */
static inline AVX512 INLINE int64_t topk_lookups(const int32_t *x, int64_t K, int req_ok, int valid, const row_table *rt,
                                                 int shift, int32_t *out, const int regs) {
  TABLE_LOCAL(rt);
  int64_t count = 0;
  for (int64_t j = 0; j < K; j += 16) {
    const __mmask16 m = tail(j, K);
    const __m512i v = _mm512_maskz_loadu_epi32(m, x + j);
    const __mmask16 pos = req_ok ? _mm512_mask_cmpge_epi32_mask(m, v, _mm512_setzero_si512()) : 0;
    __mmask16 fail;
    const __m512i g = lookup16(v, pos, rt, shift, &fail, regs);
    if (fail && valid) return -1;
    count += __builtin_popcount((unsigned)(pos & (__mmask16)~fail));
    _mm512_mask_storeu_epi32(out + j, m, g);
  }
  return count;
}

static AVX512 int topk_row(const global_topk_args *a, int64_t t, int shift) {
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
    for (int64_t j = 0; j < a->K; j += 16) {
      const __mmask16 m = tail(j, a->K);
      const __m512i v = _mm512_maskz_loadu_epi32(m, x + j);
      if (_mm512_mask_cmpge_epi32_mask(_mm512_mask_cmpge_epi32_mask(m, v, _mm512_setzero_si512()),
                                       _mm512_srai_epi32(v, (unsigned)shift), _mm512_set1_epi32((int32_t)a->P)))
        return 0;
    }
  row_table rt;
  row_table_init(&rt, row, a->block_table.stride[1], req_ok ? a->P : 0);
  const int64_t count = BY_REGS(rt.regs, topk_lookups, x, a->K, req_ok, valid, &rt, shift, out);
  if (count < 0) return 0; /* not in place: the scalar row rewrites the row from its input */
  *(int32_t *)(a->lens_out.data + t * a->lens_out.stride[0] * 4) = valid ? (int32_t)count : 0;
  return 1;
}

int global_topk_row_avx512(const global_topk_args *a, int64_t t, int shift) { return topk_row(a, t, shift); }

/* out[0 .. n) = remap(src[j] for j < have, else -1). */
static AVX512 void remap_row(const int32_t *src, int64_t have, int64_t n, int shift, int32_t span, int32_t *out) {
  for (int64_t j = 0; j < n; j += 16) {
    const __mmask16 m = tail(j, n), h = j < have ? tail(j, have) & m : 0;
    const __m512i v = _mm512_mask_loadu_epi32(_mm512_set1_epi32(-1), h, src + j);
    _mm512_mask_storeu_epi32(out + j, m, remap16(v, shift, span));
  }
}

/* Lookups of the lanes m of v (>= 0 there) in the table row rt (NULL: the
 * request is out of range), into out[0 .. n) after remap (lanes outside m:
 * -1); returns 0 when the scalar row must take over (a failed lookup it
 * would note), else 1; *count += the lanes whose slot is >= 0. */
static inline AVX512 INLINE int lookup_store(__m512i v, __mmask16 m, __mmask16 store, const row_table *rt, int shift,
                                             int shift_out, int32_t span, int note, int64_t *count, int32_t *out,
                                             const int regs) {
  __m512i g = _mm512_set1_epi32(-1);
  if (m) {
    if (!rt) {
      if (note) return 0;
    } else {
      __mmask16 fail;
      g = lookup16(v, m, rt, shift, &fail, regs);
      if (fail && note) return 0;
      *count += __builtin_popcount((unsigned)_mm512_mask_cmpge_epi32_mask(m & (__mmask16)~fail, g, _mm512_setzero_si512()));
    }
  }
  _mm512_mask_storeu_epi32(out, store, remap16(g, shift_out, span));
  return 1;
}

/* Entries src[0 .. have) (then -1) looked up in rt into out[0 .. n)
 * (lookup_store); 0 when the scalar row must take over. */
static inline AVX512 INLINE int entries_lookups(const int32_t *src, int64_t have, int64_t n, const row_table *rt,
                                                int shift, int32_t span, int note, int64_t *count, int32_t *out,
                                                const int regs) {
  TABLE_LOCAL(rt);
  for (int64_t j = 0; j < n; j += 16) {
    const __mmask16 m = tail(j, n), h = j < have ? tail(j, have) & m : 0;
    const __m512i v = _mm512_mask_loadu_epi32(_mm512_set1_epi32(-1), h, src + j);
    const __mmask16 pos = _mm512_mask_cmpge_epi32_mask(h, v, _mm512_setzero_si512());
    if (!lookup_store(v, pos, m, rt, shift, shift, span, note, count, out + j, regs)) return 0;
  }
  return 1;
}

/* The window's positions first .. first + len - 1 (then -1) looked up in rt
 * into out[0 .. n); 0 when the scalar row must take over. */
static inline AVX512 INLINE int window_lookups(int64_t first, int64_t len, int64_t n, const row_table *rt, int shift,
                                               int32_t span, int64_t *count, int32_t *out, const int regs) {
  TABLE_LOCAL(rt);
  const __m512i iota = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  for (int64_t j = 0; j < n; j += 16) {
    const __mmask16 m = tail(j, n), h = j < len ? tail(j, len) & m : 0;
    const __m512i p = _mm512_add_epi32(_mm512_set1_epi32((int32_t)(first + j)), iota);
    if (!lookup_store(p, h, m, rt, shift, shift, span, 1, count, out + j, regs)) return 0;
  }
  return 1;
}

/* The row table of request req in bt, or NULL when req is out of its rows. */
static AVX512 const row_table *table_row(row_table *rt, const tview *bt, int64_t req) {
  if (req < 0 || req >= bt->shape[0]) return NULL;
  row_table_init(rt, (const int32_t *)(bt->data + req * bt->stride[0] * 4), bt->stride[1], bt->shape[1]);
  return rt;
}

static AVX512 int fi_decode_row(const flashinfer_args *a, int64_t d, int sshift, int cshift) {
  int32_t *out = (int32_t *)(a->out.data + d * a->out.stride[0] * 4);
  const int token_valid = a->has_dvalid ? tv_bool_1(&a->dvalid, d) : 1;
  const int64_t req = tv_i32_1(&a->req, d);
  int64_t n = 0;
  if (a->local) {
    const int32_t *src = (const int32_t *)(a->dcomp.data + d * a->dcomp.stride[0] * 4);
    int64_t count = 0;
    row_table rt;
    const row_table *c = table_row(&rt, &a->comp_bt, req);
    if (!BY_REGS(c ? c->regs : 0, entries_lookups, src, a->Dk, a->K4, c, cshift, a->c_span, token_valid, &count, out + a->S))
      return 0;
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

static AVX512 int fi_prefill_row(const flashinfer_args *a, int64_t t, int sshift, int cshift) {
  const int64_t S = a->S, i = t - a->D;
  const int64_t req = tv_i32_1(&a->req, t);
  if (req < 0 || req >= a->R) return 0;
  int64_t swa_start, swa_len, topk_len;
  cpu_fi_prefill_span(a, t, req, &swa_start, &swa_len, &topk_len);
  if (topk_len < 0 || topk_len > a->Wp) return 0;
  if (swa_start + S > INT32_MAX) return 0; /* positions past int32: the scalar row's int64 */
  int32_t *out = (int32_t *)(a->out.data + t * a->out.stride[0] * 4);
  int64_t count = 0;
  row_table rs, rc;
  const row_table *sw = table_row(&rs, &a->swa_bt, req), *c = table_row(&rc, &a->comp_bt, req);
  if (!BY_REGS(sw ? sw->regs : 0, window_lookups, swa_start, swa_len, S, sw, sshift, a->swa_span, &count, out)) return 0;
  const int32_t *x = (const int32_t *)(a->ptopk.data + i * a->ptopk.stride[0] * 4);
  if (!BY_REGS(c ? c->regs : 0, entries_lookups, x, topk_len, a->K4, c, cshift, a->c_span, 1, &count, out + S)) return 0;
  *(int32_t *)(a->lens.data + t * a->lens.stride[0] * 4) = (int32_t)(uint32_t)(uint64_t)(S + topk_len);
  return 1;
}

int flashinfer_row_avx512(const flashinfer_args *a, int64_t t, int swa_shift, int c_shift) {
  return t < a->D ? fi_decode_row(a, t, swa_shift, c_shift) : fi_prefill_row(a, t, swa_shift, c_shift);
}

/* Whether a row of this view can be read with 16-lane loads and its table
 * with 32-bit gather offsets. */
static int rows_ok(const tview *v) { return v->ndim == 2 && (v->stride[1] == 1 || v->shape[1] <= 1); }
static int table_ok(const tview *bt) { return bt->shape[1] * (bt->stride[1] > 0 ? bt->stride[1] : 1) < INT32_MAX; }

int index_avx512_ok_topk(const global_topk_args *a, int shift) {
  return shift >= 0 && shift < 31 && rows_ok(&a->topk) && rows_ok(&a->global_out) && table_ok(&a->block_table);
}

int index_avx512_ok_flashinfer(const flashinfer_args *a, int swa_shift, int c_shift) {
  return swa_shift >= 0 && swa_shift < 31 && c_shift >= 0 && c_shift < 31 && rows_ok(&a->out) &&
         (a->D == 0 || (rows_ok(&a->dswa) && (!a->has_dcomp || rows_ok(&a->dcomp)))) &&
         (a->P == 0 || rows_ok(&a->ptopk)) && table_ok(&a->swa_bt) && table_ok(&a->comp_bt);
}

#else

int global_topk_row_avx512(const global_topk_args *a, int64_t t, int shift) { return (void)a, (void)t, (void)shift, 0; }
int flashinfer_row_avx512(const flashinfer_args *a, int64_t t, int swa_shift, int c_shift) {
  return (void)a, (void)t, (void)swa_shift, (void)c_shift, 0;
}
int index_avx512_ok_topk(const global_topk_args *a, int shift) { return (void)a, (void)shift, 0; }
int index_avx512_ok_flashinfer(const flashinfer_args *a, int swa_shift, int c_shift) {
  return (void)a, (void)swa_shift, (void)c_shift, 0;
}

#endif
