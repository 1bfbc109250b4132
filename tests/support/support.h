/*
 * Shared helpers of the dsv4kv unit tests.
 *
 *  - tview:  a DLTensor plus the storage for its shape / strides, built over
 *            any buffer (CPU device, byte_offset 0 unless a test sets it).
 *  - fbuf:   a "fenced" buffer: mmap'd with an inaccessible page on each side,
 *            the data placed flush against the upper fence (so one byte read
 *            or written past the end faults), and the slack below the data
 *            filled with guard bytes that fb_guards_ok() checks.
 *  - poison fills, a deterministic RNG, bf16 helpers.
 *  - ref_*:  an independent scalar reference of SPEC.md / NUMERICS.md written
 *            for the tests (support/ref.c).  It never calls the library.
 */
#ifndef DSV4KV_TEST_SUPPORT_H
#define DSV4KV_TEST_SUPPORT_H

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include <dsv4kv.h>

/* ------------------------------------------------------------------------ */
/* dtypes and tensor views                                                   */
/* ------------------------------------------------------------------------ */
DLDataType dt_bf16(void);
DLDataType dt_f32(void);
DLDataType dt_f16(void);
DLDataType dt_i32(void);
DLDataType dt_i64(void);
DLDataType dt_u8(void);
DLDataType dt_i8(void);
DLDataType dt_bool(void); /* kDLBool (6) / 8 bits */

typedef struct {
  DLTensor t;
  int64_t shape[6];
  int64_t strides[6];
} tview;

/* strides == NULL: compact row-major, t.strides left NULL. */
void tv_init(tview *v, void *data, DLDataType dt, int ndim, const int64_t *shape,
             const int64_t *strides);
void tv_1d(tview *v, void *data, DLDataType dt, int64_t n);
void tv_2d(tview *v, void *data, DLDataType dt, int64_t rows, int64_t cols, int64_t row_stride);
void tv_3d(tview *v, void *data, DLDataType dt, int64_t d0, int64_t d1, int64_t d2, int64_t s0,
           int64_t s1, int64_t s2);

/* ------------------------------------------------------------------------ */
/* Fenced buffers                                                            */
/* ------------------------------------------------------------------------ */
typedef struct {
  uint8_t *map;     /* whole mapping                      */
  size_t map_len;
  uint8_t *lo;      /* first accessible byte              */
  uint8_t *hi;      /* one past the last accessible byte  */
  uint8_t *data;    /* the buffer                         */
  size_t nbytes;
} fbuf;

#define FB_GUARD 0xFD

/* Returns data.  `align` (power of two) is the alignment of data; the slack
 * between data + nbytes and the upper fence (< align) is guard-filled too. */
void *fb_alloc(fbuf *b, size_t nbytes, size_t align);
/* 1 when every guard byte is intact. */
int fb_guards_ok(const fbuf *b);
void fb_free(fbuf *b);

/* ------------------------------------------------------------------------ */
/* Fills, RNG                                                                */
/* ------------------------------------------------------------------------ */
void fill_u8(void *p, size_t n, uint8_t v);
void fill_u16(uint16_t *p, size_t n, uint16_t v);
void fill_i32(int32_t *p, size_t n, int32_t v);
void fill_i64(int64_t *p, size_t n, int64_t v);

typedef struct {
  uint64_t s;
} rng_t;
void rng_seed(rng_t *r, uint64_t seed);
uint64_t rng_u64(rng_t *r);
uint32_t rng_u32(rng_t *r);
/* uniform in [0, n) */
uint32_t rng_below(rng_t *r, uint32_t n);
/* uniform in [0, 1) */
double rng_unit(rng_t *r);
/* approximately normal(0, 1) */
double rng_normal(rng_t *r);
void rng_bytes(rng_t *r, void *p, size_t n);

/* ------------------------------------------------------------------------ */
/* bit helpers                                                               */
/* ------------------------------------------------------------------------ */
uint32_t f32_bits(float x);
float f32_from_bits(uint32_t u);
float bf16_val(uint16_t b);        /* bits << 16 */
/* Reference fp32 -> bf16: the two bf16 neighbours compared in double, ties to
 * even, NaN -> 0x7FFF, overflow to Inf as IEEE RNE. */
uint16_t ref_f32_to_bf16(float x);
/* bf16 of a double that is exactly a float (convenience for hand cases). */
uint16_t bf16_of(double x);
int same_float(float a, float b); /* bit-equal, or both NaN */

/* Append a readable description of the first bytes that differ. */
size_t count_diff(const uint8_t *a, const uint8_t *b, size_t n, size_t *first);

/* ------------------------------------------------------------------------ */
/* Reference number formats (brute force over all codes, SPEC §1)            */
/* ------------------------------------------------------------------------ */
double ref_e4m3_value(uint8_t code);     /* from the bit fields; NaN for 0x7F/0xFF */
double ref_e4m3fnuz_value(uint8_t code); /* NaN for 0x80                          */
double ref_e2m1_value(uint8_t code);     /* low 4 bits                             */
double ref_ue8m0_value(uint8_t e);       /* 2^(e-127); 255 -> +Inf                 */

/* nearest finite code, ties to even mantissa LSB, saturating, sign of zero
 * kept (OCP) / dropped (fnuz).  NaN -> 0x7F (OCP), 0x80 (fnuz), 0x7 (e2m1). */
uint8_t ref_e4m3_encode(double x);
uint8_t ref_e4m3fnuz_encode(double x);
uint8_t ref_e2m1_encode(double x);

/* ------------------------------------------------------------------------ */
/* Reference records (SPEC §2, §3, NUMERICS §2, §10)                         */
/* ------------------------------------------------------------------------ */
/* Writes the token's record of `k` (512 bf16 bits) into a page at position p. */
void ref_insert_token(dsv4kv_record rec, int fnuz, const uint16_t *k, uint8_t *page,
                      int32_t block_size, int32_t p);
/* Reference gather decode of position p of a page -> 512 bf16 bits. */
void ref_decode_token(dsv4kv_record rec, int fnuz, const uint8_t *page, int32_t block_size,
                      int32_t p, uint16_t *out);
/* Bytes of the token's record area inside a page (for "what may change"). */
void ref_token_mask(dsv4kv_record rec, uint8_t *mask_page, int32_t block_size, int32_t p);

/* Indexer store (SPEC §6, NUMERICS §2.4 / §10) of one token into its page.
 * cos/sin: 64 floats of row cp (already widened); w: 128 floats. */
void ref_indexer_token(const uint16_t *k, const float *w, const float *cos_sin_row, float eps,
                       int fp4, int mx_scale, int tiled, uint8_t *page, int32_t block_size,
                       int32_t p);
/* The same for any indexer record (INDEXER_FP8 with either fp8 flavour and
 * flags DSV4KV_CACHE_MX_SCALE / _TILED, or INDEXER_MXFP4). */
void ref_indexer_store(const uint16_t *k, const float *w, const float *cos_sin_row, float eps,
                       dsv4kv_record rec, int fnuz, uint32_t flags, uint8_t *page, int32_t block_size,
                       int32_t p);
/* The normalized + roped row (bf16 bits), exposed for hand checks. */
void ref_indexer_row(const uint16_t *k, const float *w, const float *cos_sin_row, float eps,
                     uint16_t *out128);

/* ------------------------------------------------------------------------ */
/* Whole calls of the record ops (support/ref_ops.c): the per-token references
 * above driven over a call's index tensors, with the skip rules of dsv4kv.h.
 * Index tensors are compact arrays here; strides are in elements.           */
/* ------------------------------------------------------------------------ */
typedef struct {
  uint8_t *data;          /* page 0 */
  int64_t pages, page_stride;
  int32_t bs;
} ref_cache;
/* SPEC §3.  Rows in order (a later row wins a shared slot).  Counts: slots
 * < -1 or past the cache skip; nonfinite = NaN/Inf values of written rows. */
void ref_insert_call(dsv4kv_record rec, int fnuz, const uint16_t *k, int64_t k_stride,
                     const int64_t *slots, int64_t T, ref_cache c, int64_t *skipped,
                     int64_t *nonfinite);
/* SPEC §4.  out element (r, i, d) at out[r*s0 + i*s1 + d]; bt is [R, P]. */
void ref_gather_call(dsv4kv_record rec, int fnuz, ref_cache c, const int32_t *seq,
                     const int32_t *gl, int64_t R, const int32_t *bt, int64_t P, uint16_t *out,
                     int64_t s0, int64_t s1, int64_t max_tokens, int64_t offset, int64_t *skipped);
/* SPEC §6.  cs: [cs_rows, 64] widened to float; w: 128 floats. */
void ref_indexer_call(const uint16_t *k, int64_t k_stride, const int64_t *pos, const int64_t *slots,
                      int64_t T, const float *cs, int64_t cs_rows, const float *w, float eps,
                      dsv4kv_record rec, int fnuz, uint32_t flags, int32_t cr, ref_cache c,
                      int64_t *skipped, int64_t *nonfinite);

/* ------------------------------------------------------------------------ */
/* misc                                                                      */
/* ------------------------------------------------------------------------ */
int64_t round_up64(int64_t x, int64_t m);
int32_t imin32(int32_t a, int32_t b);
int32_t imax32(int32_t a, int32_t b);

/* assert a status with a readable message */
#define assert_status(got, want)                                                          \
  do {                                                                                    \
    dsv4kv_status got_ = (got);                                                           \
    dsv4kv_status want_ = (want);                                                         \
    if (got_ != want_)                                                                    \
      fail_msg("%s:%d: status %d (%s) want %d (%s); last_error: %s", __FILE__, __LINE__,  \
               (int)got_, dsv4kv_status_string(got_), (int)want_,                         \
               dsv4kv_status_string(want_), dsv4kv_last_error());                         \
  } while (0)

/* ------------------------------------------------------------------------ */
/* Reference index ops (SPEC §5), on plain row-major arrays                  */
/* ------------------------------------------------------------------------ */
/* 5.1.  Rows of tokens with an out-of-range request id are all -1 (their
 * lens still count the row's entries >= 0, as dsv4kv.h says); entries whose
 * page is past the block-table row are -1.  *skipped counts entries (page
 * past row) and tokens (bad req).  5.3: a prefill token with a bad request
 * id gets a row of -1 and length 0. */
void ref_global_topk(const int32_t *topk, int64_t T, int64_t K, const int32_t *t2r,
                     const int32_t *bt, int64_t R, int64_t P, int32_t bs, const uint8_t *valid,
                     int32_t *global, int32_t *lens, int64_t *skipped);

/* 5.2.  combined has row length C; only written entries are stored. */
void ref_combine(const int32_t *topk, int64_t T, int64_t W, const int32_t *qsl, int64_t R,
                 const int32_t *seq, const int32_t *gl, int32_t window, int32_t cr,
                 int32_t topk_n, int32_t M, int32_t N, int32_t *combined, int64_t C,
                 int32_t *lens, int64_t *skipped);

/* 5.3 */
typedef struct {
  int32_t D, S, Dk;
  const int32_t *dswa;   /* [D, S]  */
  const int32_t *dcomp;  /* [D, Dk] or NULL */
  const int32_t *dlens;  /* [D] or NULL */
  const uint8_t *dvalid; /* [D] or NULL */
  int local;
  int32_t P, Wp;
  const int32_t *ptopk;  /* [P, Wp] */
  const int32_t *qsl;    /* [R + 1] */
  int32_t R;
  const int32_t *seq, *replay, *t2r;
  const int32_t *sbt;    /* [Rs, Ps] */
  int32_t Rs, Ps;
  const int32_t *cbt;    /* [Rc, Pc] (NULL = sbt) */
  int32_t Rc, Pc;
  int32_t sbs, sspan, cbs, cspan, window, cr, topk;
} ref_fi_args;
int32_t ref_fi_k4(const ref_fi_args *a);
void ref_flashinfer(const ref_fi_args *a, int32_t *out, int32_t *lens, int64_t *skipped);


/* ------------------------------------------------------------------------ */
/* Fixtures: caches, K matrices, random rows (support/fixtures.c)            */
/* ------------------------------------------------------------------------ */
typedef struct {
  fbuf fb;
  uint8_t *data;       /* page 0 */
  int64_t pages, page_stride;
  int32_t bs, rec_bytes;
  size_t nbytes;
  tview v;
  dsv4kv_cache_desc desc;
} tcache;

/* A fenced uint8 cache of `pages` pages of `bs` records plus `pad` bytes,
 * filled with `fill`; 2-D [pages, page_stride] or 3-D [pages, bs, rec]
 * (stride(0) = page_stride).  desc.page_stride = 0 (taken from the tensor). */
void tcache_make(tcache *c, dsv4kv_record rec, int fnuz, int32_t bs, int64_t pages, int64_t pad,
                 uint8_t fill, int three_d);
void tcache_free(tcache *c);
uint8_t *tcache_page(tcache *c, int64_t page);

typedef struct {
  fbuf fb;
  uint16_t *data;
  int64_t rows, cols, row_stride;
  tview v;
} tmat16;
/* fenced bf16 [rows, cols] with a row stride (pad filled with 0x7FC1 NaN) */
void tmat16_make(tmat16 *m, int64_t rows, int64_t cols, int64_t row_stride);
uint16_t *tmat16_row(tmat16 *m, int64_t r);
void tmat16_free(tmat16 *m);

/* The main-cache record formats with their fp8 flavours (NVFP4 is OCP only),
 * for tests that run over all of them; fmt_name gives "V4/fnuz" etc. */
typedef struct {
  dsv4kv_record rec;
  int fnuz;
} fmt_case;
#define NFORMATS 5
extern const fmt_case kFormats[NFORMATS];
const char *fmt_name(const fmt_case *f);

/* A slot mapping in a fenced buffer, and one insert call through it
 * (*skipped is poisoned first so a call that forgets to write it shows). */
typedef struct {
  fbuf fb;
  int64_t *s;
  tview v;
} tslots;
void slots_make(tslots *t, const int64_t *vals, int64_t n);
dsv4kv_status run_insert(tmat16 *k, tcache *c, tslots *s, int threads, int64_t *skipped);

/* A random bf16 row of n values.  kind: 0 realistic (normal, a few outliers),
 * 1 tiny (x1e-6), 2 huge (x1e20), 3 mixed magnitudes per 16-dim block,
 * 4 with a few specials (+-0, subnormals, exact ties, NaN, +-Inf). */
void gen_row(rng_t *r, uint16_t *row, int n, int kind);

#endif
