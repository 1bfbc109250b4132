/*
 * SPEC §7 errors and bad input, for every entry point:
 *   - argument errors return the specific status, name the argument in
 *     dsv4kv_last_error(), and read / write nothing (outputs keep their
 *     poison, guard bytes intact);
 *   - out-of-range index VALUES are skipped and counted (WARN_SKIPPED,
 *     opt.skipped), everything valid is still done, nothing outside the
 *     tensors is touched (all buffers are fenced: an access past the end
 *     faults, guard bytes below the start are checked).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include <pthread.h>

#include "support/support.h"

#define POISON 0xA5
#define IPOISON 0x5A5A5A5A

/* Soft failures: every case of a table runs; the test fails at its end if
 * any case failed (END_CASES). */
static int g_fail;
#define soft_fail(...)                 \
  do {                                 \
    printf("FAIL: " __VA_ARGS__);      \
    printf("\n");                      \
    g_fail++;                          \
  } while (0)
#define soft_true(c, ...)              \
  do {                                 \
    if (!(c)) soft_fail(__VA_ARGS__);  \
  } while (0)
#define BEGIN_CASES() (g_fail = 0)
#define END_CASES()                                                      \
  do {                                                                   \
    if (g_fail) fail_msg("%d case(s) failed (see FAIL: lines)", g_fail); \
  } while (0)

/* Checks status, message and (for errors) that the message names `name`
 * ("a|b": either).  Returns 1 when the status matched. */
static int check_call(dsv4kv_status got, dsv4kv_status want, const char *name, const char *what) {
  if (got != want) {
    soft_fail("%s: status %d (%s), want %d (%s); last_error: \"%s\"", what, (int)got,
              dsv4kv_status_string(got), (int)want, dsv4kv_status_string(want), dsv4kv_last_error());
    return 0;
  }
  const char *m = dsv4kv_last_error();
  if (!m) {
    soft_fail("%s: dsv4kv_last_error() is NULL", what);
    return 1;
  }
  if (want != DSV4KV_OK && strlen(m) == 0) soft_fail("%s: dsv4kv_last_error() is empty", what);
  if (want == DSV4KV_OK && strlen(m) != 0) soft_fail("%s: last_error \"%s\" after DSV4KV_OK", what, m);
  if (name) {
    char buf[128];
    const char *p = name;
    int found = 0;
    while (*p) {
      const char *bar = strchr(p, '|');
      size_t n = bar ? (size_t)(bar - p) : strlen(p);
      memcpy(buf, p, n);
      buf[n] = 0;
      if (strstr(m, buf)) found = 1;
      p += n + (bar ? 1 : 0);
    }
    if (!found) soft_fail("%s: last_error \"%s\" does not name \"%s\"", what, m, name);
  }
  return 1;
}

typedef struct {
  fbuf fb;
  void *d;
  tview v;
} tt;

static void *tt_make(tt *t, DLDataType dt, size_t esz, int ndim, const int64_t *shape, const void *vals,
                     int fillbyte) {
  size_t n = 1;
  for (int i = 0; i < ndim; i++) n *= (size_t)shape[i];
  t->d = fb_alloc(&t->fb, n * esz, esz < 8 ? (esz ? esz : 1) : 8);
  if (vals)
    memcpy(t->d, vals, n * esz);
  else
    memset(t->d, fillbyte, n * esz);
  tv_init(&t->v, t->d, dt, ndim, shape, NULL);
  return t->d;
}
static void tt_free(tt *t) {
  if (t->fb.map) fb_free(&t->fb);
}

static void set_cuda(DLTensor *t) { t->device.device_type = kDLCUDA; }
/* Host buffers labelled CUDA, with host counters in the options: a build
 * without the backend answers BACKEND_NOT_BUILT; with it, the counters are
 * refused (ERR_VALUE) before anything is launched on those pointers. */
static dsv4kv_status want_cuda_host(void) {
  return dsv4kv_backend_available(kDLCUDA) ? DSV4KV_ERR_VALUE : DSV4KV_ERR_BACKEND_NOT_BUILT;
}

/* =================================================================== insert */
typedef struct {
  tmat16 k;
  tcache c;
  tt slots;
  const DLTensor *pk, *pc, *ps;
  const dsv4kv_cache_desc *pd;
  uint8_t *init;
  int64_t sk;
  dsv4kv_options opt;
} ins_fix;

static void ins_init(ins_fix *f, const int64_t *slots, int64_t T, int64_t krows) {
  memset(f, 0, sizeof(*f));
  rng_t r;
  rng_seed(&r, 71);
  tmat16_make(&f->k, krows, 512, 512);
  for (int64_t t = 0; t < krows; t++) gen_row(&r, tmat16_row(&f->k, t), 512, 0);
  tcache_make(&f->c, DSV4KV_RECORD_V4, 0, 4, 2, 0, POISON, 0);
  int64_t sh[1] = {T};
  tt_make(&f->slots, dt_i64(), 8, 1, sh, slots, 0);
  f->pk = &f->k.v.t;
  f->pc = &f->c.v.t;
  f->ps = &f->slots.v.t;
  f->pd = &f->c.desc;
  f->init = (uint8_t *)malloc(f->c.nbytes);
  memcpy(f->init, f->c.data, f->c.nbytes);
  f->sk = -99;
  f->opt.skipped = &f->sk;
}

static dsv4kv_status ins_call(ins_fix *f) {
  return dsv4kv_quantize_and_insert_k_cache(f->pk, f->pc, f->pd, f->ps, &f->opt);
}

static void ins_free(ins_fix *f) {
  tmat16_free(&f->k);
  tcache_free(&f->c);
  tt_free(&f->slots);
  free(f->init);
}

static void ins_assert_untouched(ins_fix *f, const char *what) {
  size_t first;
  if (count_diff(f->c.data, f->init, f->c.nbytes, &first))
    soft_fail("%s: cache byte %zu written on an argument error", what, first);
  soft_true(fb_guards_ok(&f->c.fb), "guard bytes overwritten");
}

static void sec7_insert_argument_errors(void **state) {
  (void)state;
  BEGIN_CASES();
  const int64_t sv[3] = {0, 5, -1};
  {
    ins_fix f;
    ins_init(&f, sv, 3, 8);
    check_call(ins_call(&f), DSV4KV_OK, NULL, "insert baseline");
    assert_string_equal(dsv4kv_last_error(), "");
    ins_free(&f);
  }
  for (int ci = 0;; ci++) {
    ins_fix f;
    ins_init(&f, sv, 3, 8);
    dsv4kv_status want;
    const char *name = NULL, *what;
    dsv4kv_cache_desc d = f.c.desc;
    int alt_ok = -1; /* an acceptable alternative status, documented as ambiguous */
    switch (ci) {
      case 0: what = "k NULL"; f.pk = NULL; want = DSV4KV_ERR_NULL; name = "k"; break;
      case 1: what = "k_cache NULL"; f.pc = NULL; want = DSV4KV_ERR_NULL; name = "k_cache"; break;
      case 2: what = "cache desc NULL"; f.pd = NULL; want = DSV4KV_ERR_NULL; name = "cache"; break;
      case 3: what = "slot_mapping NULL"; f.ps = NULL; want = DSV4KV_ERR_NULL; name = "slot_mapping"; break;
      case 4: what = "k dtype f32"; f.k.v.t.dtype = dt_f32(); want = DSV4KV_ERR_DTYPE; name = "k"; break;
      case 5: what = "k dtype f16"; f.k.v.t.dtype = dt_f16(); want = DSV4KV_ERR_DTYPE; name = "k"; break;
      case 6: what = "k lanes 2"; f.k.v.t.dtype.lanes = 2; want = DSV4KV_ERR_DTYPE; name = "k"; break;
      case 7: what = "k_cache dtype i8"; f.c.v.t.dtype = dt_i8(); want = DSV4KV_ERR_DTYPE; name = "k_cache"; break;
      case 8: what = "slot_mapping dtype i32"; f.slots.v.t.dtype = dt_i32(); want = DSV4KV_ERR_DTYPE; name = "slot_mapping"; break;
      case 9: what = "k rank 1"; f.k.v.t.ndim = 1; f.k.v.shape[0] = 4096; f.k.v.strides[0] = 1; want = DSV4KV_ERR_RANK; name = "k"; break;
      case 10: what = "k rank 3"; f.k.v.t.ndim = 3; f.k.v.shape[0] = 1; f.k.v.shape[1] = 8; f.k.v.shape[2] = 512;
        f.k.v.strides[0] = 4096; f.k.v.strides[1] = 512; f.k.v.strides[2] = 1; want = DSV4KV_ERR_RANK; name = "k"; break;
      case 11: what = "slot_mapping rank 2"; f.slots.v.t.ndim = 2; f.slots.v.shape[1] = 1; want = DSV4KV_ERR_RANK; name = "slot_mapping"; break;
      case 12: what = "k_cache rank 1"; f.c.v.t.ndim = 1; f.c.v.shape[0] = (int64_t)f.c.nbytes; f.c.v.strides[0] = 1; want = DSV4KV_ERR_RANK; name = "k_cache"; break;
      case 13: what = "k_cache rank 4"; f.c.v.t.ndim = 4; f.c.v.shape[2] = 1; f.c.v.shape[3] = 1; f.c.v.strides[2] = 1; f.c.v.strides[3] = 1;
        want = DSV4KV_ERR_RANK; name = "k_cache"; break;
      case 14: what = "k width 511"; f.k.v.shape[1] = 511; want = DSV4KV_ERR_SHAPE; name = "k"; break;
      case 15: what = "k width 513"; f.k.v.shape[1] = 513; f.k.v.strides[0] = 513; f.k.v.shape[0] = 3; want = DSV4KV_ERR_SHAPE; name = "k"; break;
      case 16: what = "slot_mapping longer than k"; f.k.v.shape[0] = 2; want = DSV4KV_ERR_SHAPE; name = "slot_mapping"; break;
      case 17: what = "k last-dim stride 2"; f.k.v.strides[1] = 2; f.k.v.strides[0] = 1024; /* 3 rows fit: 2*1024+1022 < 8*512 */
        want = DSV4KV_ERR_STRIDE; name = "k"; break;
      case 18: what = "k_cache last-dim stride 2"; f.c.v.shape[1] = f.c.page_stride / 2; f.c.v.strides[1] = 2;
        want = DSV4KV_ERR_STRIDE; name = "k_cache"; break;
      case 19: what = "block_size 0"; d.block_size = 0; f.pd = &d; want = DSV4KV_ERR_VALUE; name = "block_size"; break;
      case 20: what = "block_size -4"; d.block_size = -4; f.pd = &d; want = DSV4KV_ERR_VALUE; name = "block_size"; break;
      case 21: what = "page stride < block_size * 584"; f.c.v.shape[1] = 4 * 584 - 8; f.c.v.strides[0] = 4 * 584 - 8;
        want = DSV4KV_ERR_FORMAT; break;
      case 22: what = "desc.page_stride != tensor stride"; d.page_stride = f.c.page_stride + 64; f.pd = &d; want = DSV4KV_ERR_FORMAT; break;
      case 23: what = "NVFP4 with FNUZ"; d.record = DSV4KV_RECORD_NVFP4; d.fp8 = DSV4KV_FP8_FNUZ; f.pd = &d; want = DSV4KV_ERR_FORMAT; break;
      case 24: what = "indexer record into the K cache"; d.record = DSV4KV_RECORD_INDEXER_FP8; f.pd = &d; want = DSV4KV_ERR_FORMAT; break;
      case 25: what = "unknown record"; d.record = (dsv4kv_record)42; f.pd = &d; want = DSV4KV_ERR_FORMAT; break;
      case 26: what = "3-D cache record dim != 584"; tv_3d(&f.c.v, f.c.data, dt_u8(), 2, 4, 528, f.c.page_stride, 528, 1);
        want = DSV4KV_ERR_FORMAT; alt_ok = DSV4KV_ERR_SHAPE; break;
      case 27: what = "3-D cache block dim != block_size"; tv_3d(&f.c.v, f.c.data, dt_u8(), 2, 2, 584, f.c.page_stride, 584, 1);
        want = DSV4KV_ERR_FORMAT; alt_ok = DSV4KV_ERR_SHAPE; break;
      case 28: what = "all tensors CUDA"; set_cuda(&f.k.v.t); set_cuda(&f.c.v.t); set_cuda(&f.slots.v.t);
        want = want_cuda_host(); break;
      case 29: what = "k_cache on CUDA, k on CPU"; set_cuda(&f.c.v.t); want = DSV4KV_ERR_DEVICE; break;
      case 30: what = "slot_mapping on CUDA"; set_cuda(&f.slots.v.t); want = DSV4KV_ERR_DEVICE; break;
      case 31: what = "k data NULL"; f.k.v.t.data = NULL; want = DSV4KV_ERR_NULL; name = "k"; break;
      case 32: what = "fp8 flavour out of range"; d.fp8 = (dsv4kv_fp8_flavor)9; f.pd = &d; want = DSV4KV_ERR_FORMAT; alt_ok = DSV4KV_ERR_VALUE; break;
      default: ins_free(&f); END_CASES(); return;
    }
    dsv4kv_status st = ins_call(&f);
    if (alt_ok >= 0 && st == (dsv4kv_status)alt_ok) want = st;
    check_call(st, want, name, what);
    ins_assert_untouched(&f, what);
    ins_free(&f);
  }
  END_CASES();
}

/* slot values out of range: skipped + counted, the rest written */
static void sec7_insert_bad_slot_values(void **state) {
  (void)state;
  BEGIN_CASES();
  static const struct {
    int64_t slots[4];
    int64_t skipped;
    const char *what;
  } cases[] = {
      {{0, 8, 3, -1}, 1, "slot == num_pages * block_size"},
      {{0, -7, 3, -1}, 1, "slot -7"},
      {{INT64_MAX, 1, INT64_MIN, 2}, 2, "slots INT64_MAX / INT64_MIN"},
      {{(int64_t)1 << 61, 7, -2, 6}, 2, "slot 2^61 and -2"},
      {{-1, -1, -1, 4}, 0, "-1 is not counted"},
  };
  for (size_t ci = 0; ci < sizeof(cases) / sizeof(cases[0]); ci++) {
    ins_fix f;
    ins_init(&f, cases[ci].slots, 4, 4);
    dsv4kv_status st = ins_call(&f);
    check_call(st, cases[ci].skipped ? DSV4KV_WARN_SKIPPED : DSV4KV_OK,
               cases[ci].skipped ? "slot_mapping" : NULL, cases[ci].what);
    soft_true(f.sk == (cases[ci].skipped), "skipped %lld, want %lld", (long long)f.sk, (long long)(cases[ci].skipped));
    uint8_t *want = (uint8_t *)malloc(f.c.nbytes);
    memcpy(want, f.init, f.c.nbytes);
    for (int t = 0; t < 4; t++) {
      int64_t s = cases[ci].slots[t];
      if (s < 0 || s >= 8) continue;
      ref_insert_token(DSV4KV_RECORD_V4, 0, tmat16_row(&f.k, t), want + (s / 4) * f.c.page_stride, 4,
                       (int32_t)(s % 4));
    }
    size_t first;
    if (count_diff(f.c.data, want, f.c.nbytes, &first))
      soft_fail("%s: cache byte %zu got 0x%02x want 0x%02x", cases[ci].what, first, f.c.data[first], want[first]);
    soft_true(fb_guards_ok(&f.c.fb), "guard bytes overwritten");
    free(want);
    ins_free(&f);
  }
  END_CASES();
}

/* =================================================================== gather */
typedef struct {
  tcache c;
  tt out, seq, gl, bt;
  const DLTensor *po, *pc, *ps, *pg, *pb;
  const dsv4kv_cache_desc *pd;
  int64_t offset, T;
  uint16_t *init;
  size_t out_n;
  int64_t sk;
  dsv4kv_options opt;
} ga_fix;

static void ga_init(ga_fix *f, const int32_t *seq, const int32_t *gl, const int32_t *bt, int64_t T,
                    int64_t offset) {
  memset(f, 0, sizeof(*f));
  rng_t r;
  rng_seed(&r, 72);
  tcache_make(&f->c, DSV4KV_RECORD_V4, 0, 4, 3, 0, 0, 0);
  rng_bytes(&r, f->c.data, f->c.nbytes);
  int64_t so[3] = {2, T, 512};
  f->out_n = (size_t)(2 * T * 512);
  tt_make(&f->out, dt_bf16(), 2, 3, so, NULL, POISON);
  f->init = (uint16_t *)malloc(f->out_n * 2);
  memcpy(f->init, f->out.d, f->out_n * 2);
  int64_t s1[1] = {2}, s2[2] = {2, 2};
  tt_make(&f->seq, dt_i32(), 4, 1, s1, seq, 0);
  if (gl) tt_make(&f->gl, dt_i32(), 4, 1, s1, gl, 0);
  tt_make(&f->bt, dt_i32(), 4, 2, s2, bt, 0);
  f->po = &f->out.v.t;
  f->pc = &f->c.v.t;
  f->ps = &f->seq.v.t;
  f->pg = gl ? &f->gl.v.t : NULL;
  f->pb = &f->bt.v.t;
  f->pd = &f->c.desc;
  f->offset = offset;
  f->T = T;
  f->sk = -99;
  f->opt.skipped = &f->sk;
}

static dsv4kv_status ga_call(ga_fix *f) {
  return dsv4kv_dequantize_and_gather_k_cache(f->po, f->pc, f->pd, f->ps, f->pg, f->pb, f->offset, &f->opt);
}

static void ga_free(ga_fix *f) {
  tcache_free(&f->c);
  tt_free(&f->out);
  tt_free(&f->seq);
  tt_free(&f->gl);
  tt_free(&f->bt);
  free(f->init);
}

static void sec7_gather_argument_errors(void **state) {
  (void)state;
  BEGIN_CASES();
  const int32_t seq[2] = {5, 3}, gl[2] = {4, 3}, bt[4] = {0, 1, 2, 0};
  {
    ga_fix f;
    ga_init(&f, seq, gl, bt, 6, 1);
    check_call(ga_call(&f), DSV4KV_OK, NULL, "gather baseline");
    ga_free(&f);
  }
  for (int ci = 0;; ci++) {
    ga_fix f;
    ga_init(&f, seq, gl, bt, 6, 1);
    dsv4kv_status want;
    const char *name = NULL, *what;
    dsv4kv_cache_desc d = f.c.desc;
    int alt_ok = -1;
    switch (ci) {
      case 0: what = "out NULL"; f.po = NULL; want = DSV4KV_ERR_NULL; name = "out"; break;
      case 1: what = "k_cache NULL"; f.pc = NULL; want = DSV4KV_ERR_NULL; name = "k_cache"; break;
      case 2: what = "cache desc NULL"; f.pd = NULL; want = DSV4KV_ERR_NULL; name = "cache"; break;
      case 3: what = "seq_lens NULL"; f.ps = NULL; want = DSV4KV_ERR_NULL; name = "seq_lens"; break;
      case 4: what = "block_table NULL"; f.pb = NULL; want = DSV4KV_ERR_NULL; name = "block_table"; break;
      case 5: what = "out dtype f32"; f.out.v.t.dtype = dt_f32(); want = DSV4KV_ERR_DTYPE; name = "out"; break;
      case 6: what = "seq_lens dtype i64"; f.seq.v.t.dtype = dt_i64(); want = DSV4KV_ERR_DTYPE; name = "seq_lens"; break;
      case 7: what = "gather_lens dtype i64"; f.gl.v.t.dtype = dt_i64(); want = DSV4KV_ERR_DTYPE; name = "gather_lens"; break;
      case 8: what = "block_table dtype i64"; f.bt.v.t.dtype = dt_i64(); want = DSV4KV_ERR_DTYPE; name = "block_table"; break;
      case 9: what = "k_cache dtype bf16"; f.c.v.t.dtype = dt_bf16(); want = DSV4KV_ERR_DTYPE; name = "k_cache"; break;
      case 10: what = "out rank 2"; f.out.v.t.ndim = 2; f.out.v.shape[0] = 12; f.out.v.shape[1] = 512; want = DSV4KV_ERR_RANK; name = "out"; break;
      case 11: what = "seq_lens rank 2"; f.seq.v.t.ndim = 2; f.seq.v.shape[1] = 1; want = DSV4KV_ERR_RANK; name = "seq_lens"; break;
      case 12: what = "block_table rank 1"; f.bt.v.t.ndim = 1; f.bt.v.shape[0] = 4; want = DSV4KV_ERR_RANK; name = "block_table"; break;
      case 13: what = "gather_lens rank 2"; f.gl.v.t.ndim = 2; f.gl.v.shape[1] = 1; want = DSV4KV_ERR_RANK; name = "gather_lens"; break;
      case 14: what = "out width 511"; f.out.v.shape[2] = 511; want = DSV4KV_ERR_SHAPE; name = "out"; break;
      case 15: what = "out rows < R"; f.out.v.shape[0] = 1; want = DSV4KV_ERR_SHAPE; name = "out"; break;
      case 16: what = "gather_lens length != R"; f.gl.v.shape[0] = 1; want = DSV4KV_ERR_SHAPE; name = "gather_lens"; break;
      case 17: what = "block_table rows < R"; f.bt.v.shape[0] = 1; want = DSV4KV_ERR_SHAPE; name = "block_table"; break;
      case 18: what = "out last-dim stride 2"; /* [2, 6, 512] with strides [3072, 1024, 2]: max index 3072 + 5*1024 + 1022 > 6144, so
         * use 2 rows per request: 3072 + 1024 + 1022 < 6144 */
        f.out.v.shape[1] = 2; f.out.v.strides[0] = 3072; f.out.v.strides[1] = 1024; f.out.v.strides[2] = 2;
        f.out.v.t.strides = f.out.v.strides;
        want = DSV4KV_ERR_STRIDE; name = "out"; break;
      case 19: what = "offset -1"; f.offset = -1; want = DSV4KV_ERR_VALUE; name = "offset"; break;
      case 20: what = "block_size 0"; d.block_size = 0; f.pd = &d; want = DSV4KV_ERR_VALUE; name = "block_size"; break;
      case 21: what = "indexer record"; d.record = DSV4KV_RECORD_INDEXER_MXFP4; f.pd = &d; want = DSV4KV_ERR_FORMAT; break;
      case 22: what = "desc.page_stride mismatch"; d.page_stride = f.c.page_stride - 1; f.pd = &d; want = DSV4KV_ERR_FORMAT; break;
      case 23: what = "NVFP4 with FNUZ"; d.record = DSV4KV_RECORD_NVFP4; d.fp8 = DSV4KV_FP8_FNUZ; f.pd = &d; want = DSV4KV_ERR_FORMAT; break;
      case 24: what = "page stride < block_size * 584"; f.c.v.shape[1] = 100; f.c.v.strides[0] = 100; f.c.v.shape[0] = 3;
        want = DSV4KV_ERR_FORMAT; break;
      case 25: what = "all CUDA"; set_cuda(&f.out.v.t); set_cuda(&f.c.v.t); set_cuda(&f.seq.v.t); set_cuda(&f.gl.v.t);
        set_cuda(&f.bt.v.t); want = want_cuda_host(); break;
      case 26: what = "block_table on CUDA"; set_cuda(&f.bt.v.t); want = DSV4KV_ERR_DEVICE; break;
      case 27: what = "gather_lens on CUDA"; set_cuda(&f.gl.v.t); want = DSV4KV_ERR_DEVICE; break;
      default: ga_free(&f); END_CASES(); return;
    }
    dsv4kv_status st = ga_call(&f);
    if (alt_ok >= 0 && st == (dsv4kv_status)alt_ok) want = st;
    check_call(st, want, name, what);
    if (memcmp(f.out.d, f.init, f.out_n * 2) != 0) soft_fail("%s: out written on an argument error", what);
    soft_true(fb_guards_ok(&f.out.fb), "guard bytes overwritten");
    ga_free(&f);
  }
  END_CASES();
}

static void sec7_gather_bad_index_values(void **state) {
  (void)state;
  BEGIN_CASES();
  static const struct {
    int32_t seq[2], gl[2];
    int has_gl;
    int32_t bt[4];
    int64_t T, offset, skipped;
    const char *what, *name;
  } cases[] = {
      /* positions 8 (r0) past the 2-page block-table row (2 * 4 = 8 positions) */
      {{9, 3}, {0, 0}, 0, {0, 1, 2, 0}, 12, 0, 1, "position past the block-table row", NULL},
      /* page id -3 for positions 4..7 of r0 (seq 6: positions 4, 5) */
      {{6, 3}, {0, 0}, 0, {0, -3, 2, 0}, 8, 0, 2, "negative page id", "block_table"},
      /* page id 3 (cache has 3 pages) for all 3 positions of r1 */
      {{5, 3}, {0, 0}, 0, {0, 1, 3, 0}, 6, 0, 3, "page id past the cache", NULL},
      /* offset 4 + L 4 > max_tokens 6: 2 rows past out */
      {{5, 3}, {4, 1}, 1, {0, 1, 2, 0}, 6, 4, 2, "gather row past out", NULL},
      /* L < 0 counts once */
      {{5, 3}, {-2, 3}, 1, {0, 1, 2, 0}, 6, 0, 1, "negative gather_len", "gather_lens"},
      /* gather_len > seq_len: positions -2, -1 */
      {{5, 3}, {4, 5}, 1, {0, 1, 2, 0}, 6, 0, 2, "gather_len > seq_len", NULL},
      /* seq_len negative with gather_lens NULL: L < 0 counts once */
      {{5, -1}, {0, 0}, 0, {0, 1, 2, 0}, 6, 0, 1, "negative seq_len", "seq_lens"},
      /* page id INT32_MIN and INT32_MAX */
      {{5, 3}, {0, 0}, 0, {INT32_MIN, 1, INT32_MAX, 0}, 6, 0, 4 + 3, "page ids INT32_MIN / INT32_MAX", "block_table"},
      /* offset near INT64_MAX: offset + i must not wrap into the tensor */
      {{5, 3}, {2, 1}, 1, {0, 1, 2, 0}, 6, INT64_MAX - 1, 3, "offset INT64_MAX - 1", NULL},
  };
  for (size_t ci = 0; ci < sizeof(cases) / sizeof(cases[0]); ci++) {
    ga_fix f;
    ga_init(&f, cases[ci].seq, cases[ci].has_gl ? cases[ci].gl : NULL, cases[ci].bt, cases[ci].T,
            cases[ci].offset);
    dsv4kv_status st = ga_call(&f);
    check_call(st, DSV4KV_WARN_SKIPPED, cases[ci].name, cases[ci].what);
    if (f.sk != cases[ci].skipped)
      soft_fail("%s: skipped %lld, want %lld", cases[ci].what, (long long)f.sk, (long long)cases[ci].skipped);
    /* expected: poison + every in-range token decoded */
    uint16_t *want = (uint16_t *)malloc(f.out_n * 2);
    memcpy(want, f.init, f.out_n * 2);
    for (int r = 0; r < 2; r++) {
      int32_t seq = cases[ci].seq[r];
      int32_t L = cases[ci].has_gl ? cases[ci].gl[r] : seq;
      if (L < 0) continue;
      for (int32_t i = 0; i < L; i++) {
        int32_t pos = seq - L + i;
        if (cases[ci].offset >= cases[ci].T || i >= cases[ci].T - cases[ci].offset) continue;
        int64_t row = cases[ci].offset + i;
        if (pos < 0 || pos / 4 >= 2) continue;
        int32_t page = cases[ci].bt[r * 2 + pos / 4];
        if (page < 0 || page >= 3) continue;
        ref_decode_token(DSV4KV_RECORD_V4, 0, f.c.data + (int64_t)page * f.c.page_stride, 4, pos % 4,
                         want + ((int64_t)r * cases[ci].T + row) * 512);
      }
    }
    for (size_t i = 0; i < f.out_n; i++)
      if (((uint16_t *)f.out.d)[i] != want[i])
        soft_fail("%s: out element %zu (r %zu, row %zu) got 0x%04x want 0x%04x", cases[ci].what, i,
                 i / (size_t)(cases[ci].T * 512), (i / 512) % (size_t)cases[ci].T, ((uint16_t *)f.out.d)[i], want[i]);
    soft_true(fb_guards_ok(&f.out.fb), "guard bytes overwritten");
    free(want);
    ga_free(&f);
  }
  END_CASES();
}

/* =================================================================== 5.1 */
typedef struct {
  tt topk, t2r, bt, valid, g, l;
  const DLTensor *p[6];
  int32_t bs;
  int64_t sk;
  dsv4kv_options opt;
} gt_fix;

static void gt_init(gt_fix *f, const int32_t *topk, const int32_t *t2r) {
  memset(f, 0, sizeof(*f));
  const int32_t bt[4] = {3, 1, 0, 2};
  const uint8_t valid[3] = {1, 0, 1};
  int64_t s2[2] = {3, 4}, s1[1] = {3}, sb[2] = {2, 2};
  tt_make(&f->topk, dt_i32(), 4, 2, s2, topk, 0);
  tt_make(&f->t2r, dt_i32(), 4, 1, s1, t2r, 0);
  tt_make(&f->bt, dt_i32(), 4, 2, sb, bt, 0);
  tt_make(&f->valid, dt_bool(), 1, 1, s1, valid, 0);
  tt_make(&f->g, dt_i32(), 4, 2, s2, NULL, 0x5A);
  tt_make(&f->l, dt_i32(), 4, 1, s1, NULL, 0x5A);
  f->p[0] = &f->topk.v.t; f->p[1] = &f->t2r.v.t; f->p[2] = &f->bt.v.t;
  f->p[3] = &f->valid.v.t; f->p[4] = &f->g.v.t; f->p[5] = &f->l.v.t;
  f->bs = 4;
  f->sk = -99;
  f->opt.skipped = &f->sk;
}
static dsv4kv_status gt_call(gt_fix *f) {
  return dsv4kv_compute_global_topk_indices_and_lens(f->p[0], f->p[1], f->p[2], f->bs, f->p[3], f->p[4], f->p[5], &f->opt);
}
static void gt_free(gt_fix *f) {
  tt_free(&f->topk); tt_free(&f->t2r); tt_free(&f->bt); tt_free(&f->valid); tt_free(&f->g); tt_free(&f->l);
}
static int all_bytes(const void *p, size_t n, uint8_t v) {
  const uint8_t *b = (const uint8_t *)p;
  for (size_t i = 0; i < n; i++)
    if (b[i] != v) return 0;
  return 1;
}

static void sec7_global_topk_argument_errors(void **state) {
  (void)state;
  BEGIN_CASES();
  const int32_t topk[12] = {0, 5, -1, 7, 1, 2, 3, 4, -1, -1, 6, 0};
  const int32_t t2r[3] = {0, 1, 1};
  {
    gt_fix f;
    gt_init(&f, topk, t2r);
    check_call(gt_call(&f), DSV4KV_OK, NULL, "global_topk baseline");
    gt_free(&f);
  }
  static const char *names[6] = {"topk_indices", "token_to_req_indices", "block_table",
                                 "is_valid_token", "global", "lens"};
  for (int ci = 0;; ci++) {
    gt_fix f;
    gt_init(&f, topk, t2r);
    dsv4kv_status want;
    const char *name = NULL, *what;
    char buf[96];
    if (ci < 6) {
      snprintf(buf, sizeof(buf), "%s NULL", names[ci]);
      what = buf;
      f.p[ci] = NULL;
      want = DSV4KV_ERR_NULL;
      name = ci < 4 ? names[ci] : NULL;
    } else {
      switch (ci) {
        case 6: what = "topk_indices i64"; f.topk.v.t.dtype = dt_i64(); want = DSV4KV_ERR_DTYPE; name = "topk_indices"; break;
        case 7: what = "token_to_req_indices i64"; f.t2r.v.t.dtype = dt_i64(); want = DSV4KV_ERR_DTYPE; name = "token_to_req_indices"; break;
        case 8: what = "block_table f32"; f.bt.v.t.dtype = dt_f32(); want = DSV4KV_ERR_DTYPE; name = "block_table"; break;
        case 9: what = "is_valid_token i32"; f.valid.v.t.dtype = dt_i32(); want = DSV4KV_ERR_DTYPE; name = "is_valid_token"; break;
        case 10: what = "global out i64"; f.g.v.t.dtype = dt_i64(); want = DSV4KV_ERR_DTYPE; break;
        case 11: what = "lens out u8"; f.l.v.t.dtype = dt_u8(); want = DSV4KV_ERR_DTYPE; break;
        case 12: what = "topk_indices rank 1"; f.topk.v.t.ndim = 1; f.topk.v.shape[0] = 12; want = DSV4KV_ERR_RANK; name = "topk_indices"; break;
        case 13: what = "block_table rank 1"; f.bt.v.t.ndim = 1; f.bt.v.shape[0] = 4; want = DSV4KV_ERR_RANK; name = "block_table"; break;
        case 14: what = "token_to_req rank 2"; f.t2r.v.t.ndim = 2; f.t2r.v.shape[1] = 1; want = DSV4KV_ERR_RANK; name = "token_to_req_indices"; break;
        case 15: what = "global out rank 1"; f.g.v.t.ndim = 1; f.g.v.shape[0] = 12; want = DSV4KV_ERR_RANK; break;
        case 16: what = "global out [3, 3]"; f.g.v.shape[1] = 3; want = DSV4KV_ERR_SHAPE; break;
        case 17: what = "global out [2, 4]"; f.g.v.shape[0] = 2; want = DSV4KV_ERR_SHAPE; break;
        case 18: what = "lens length 2"; f.l.v.shape[0] = 2; want = DSV4KV_ERR_SHAPE; name = "lens"; break;
        case 19: what = "token_to_req length 2"; f.t2r.v.shape[0] = 2; want = DSV4KV_ERR_SHAPE; name = "token_to_req_indices"; break;
        case 20: what = "is_valid_token length 2"; f.valid.v.shape[0] = 2; want = DSV4KV_ERR_SHAPE; name = "is_valid_token"; break;
        case 21: what = "block_size 0"; f.bs = 0; want = DSV4KV_ERR_VALUE; name = "block_size"; break;
        case 22: what = "block_size -1"; f.bs = -1; want = DSV4KV_ERR_VALUE; name = "block_size"; break;
        case 23: what = "all CUDA"; set_cuda(&f.topk.v.t); set_cuda(&f.t2r.v.t); set_cuda(&f.bt.v.t);
          set_cuda(&f.valid.v.t); set_cuda(&f.g.v.t); set_cuda(&f.l.v.t); want = want_cuda_host(); break;
        case 24: what = "global out on CUDA"; set_cuda(&f.g.v.t); want = DSV4KV_ERR_DEVICE; break;
        default: gt_free(&f); END_CASES(); return;
      }
    }
    check_call(gt_call(&f), want, name, what);
    if (!all_bytes(f.g.d, 48, 0x5A) || !all_bytes(f.l.d, 12, 0x5A)) soft_fail("%s: outputs written on an argument error", what);
    soft_true(fb_guards_ok(&f.g.fb) && fb_guards_ok(&f.l.fb), "guard bytes overwritten");
    gt_free(&f);
  }
  END_CASES();
}

static void sec7_global_topk_bad_index_values(void **state) {
  (void)state;
  BEGIN_CASES();
  /* bs 4, block table rows have 2 pages -> local x in [0, 8) */
  {
    const int32_t topk[12] = {0, 8, -1, 7, 1, 2, 3, 100, -1, -1, 6, 0};
    const int32_t t2r[3] = {0, 1, 1};
    gt_fix f;
    gt_init(&f, topk, t2r);
    check_call(gt_call(&f), DSV4KV_WARN_SKIPPED, NULL, "top-k entry past its block-table row");
    /* row 1 is padding (is_valid_token false): its 100 is written -1, not counted */
    soft_true(f.sk == (1), "skipped %lld, want %lld", (long long)f.sk, (long long)(1));
    /* lens count the slots written: row 0 lost its 8 (SPEC §7) */
    const int32_t want_lens[3] = {2, 0, 2};
    for (int i = 0; i < 3; i++)
      if (((int32_t *)f.l.d)[i] != want_lens[i]) soft_fail("lens[%d] got %d want %d", i, ((int32_t *)f.l.d)[i], want_lens[i]);
    const int32_t want[12] = {12, -1, -1, 7, 1, 2, 3, -1, -1, -1, 10, 0};
    /* row 0 req 0 (bt 3,1): 0->12, 8 skipped, 7->1*4+3=7
     * row 1 req 1 (bt 0,2): 1->1, 2->2, 3->3, 100 skipped
     * row 2 req 1: 6 -> 2*4+2 = 10, 0 -> 0 */
    for (int i = 0; i < 12; i++)
      if (((int32_t *)f.g.d)[i] != want[i]) soft_fail("global[%d] got %d want %d", i, ((int32_t *)f.g.d)[i], want[i]);
    soft_true(fb_guards_ok(&f.g.fb) && fb_guards_ok(&f.l.fb), "guard bytes overwritten");
    gt_free(&f);
  }
  {
    const int32_t topk[12] = {0, 5, -1, 7, 1, 2, 3, 4, -1, -1, 6, 0};
    const int32_t t2r[3] = {0, 2, -1}; /* R = 2 */
    gt_fix f;
    gt_init(&f, topk, t2r);
    check_call(gt_call(&f), DSV4KV_WARN_SKIPPED, "token_to_req_indices", "request id out of range");
    /* one per VALID token whose request id is out of range: row 1 is padding */
    soft_true(f.sk == (1), "skipped %lld, want %lld", (long long)f.sk, (long long)(1));
    const int32_t want[12] = {12, 5, -1, 7, -1, -1, -1, -1, -1, -1, -1, -1};
    for (int i = 0; i < 12; i++)
      if (((int32_t *)f.g.d)[i] != want[i]) soft_fail("global[%d] got %d want %d", i, ((int32_t *)f.g.d)[i], want[i]);
    assert_int_equal(((int32_t *)f.l.d)[0], 3);
    gt_free(&f);
  }
  END_CASES();
}

/* =================================================================== 5.2 */
typedef struct {
  tt topk, qsl, seq, gl, comb, lens;
  const DLTensor *p[6];
  int32_t window, cr, topk_n, M, N;
  int64_t sk;
  dsv4kv_options opt;
} cb_fix;

static void cb_init(cb_fix *f, const int32_t *qsl) {
  memset(f, 0, sizeof(*f));
  const int32_t topk[12] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11};
  const int32_t seq[2] = {10, 5}, gl[2] = {10, 5};
  int64_t st[2] = {4, 3}, sq[1] = {3}, s2[1] = {2}, sc[2] = {4, 128}, sl[1] = {4};
  tt_make(&f->topk, dt_i32(), 4, 2, st, topk, 0);
  tt_make(&f->qsl, dt_i32(), 4, 1, sq, qsl, 0);
  tt_make(&f->seq, dt_i32(), 4, 1, s2, seq, 0);
  tt_make(&f->gl, dt_i32(), 4, 1, s2, gl, 0);
  tt_make(&f->comb, dt_i32(), 4, 2, sc, NULL, 0x5A);
  tt_make(&f->lens, dt_i32(), 4, 1, sl, NULL, 0x5A);
  f->p[0] = &f->topk.v.t; f->p[1] = &f->qsl.v.t; f->p[2] = &f->seq.v.t;
  f->p[3] = &f->gl.v.t; f->p[4] = &f->comb.v.t; f->p[5] = &f->lens.v.t;
  f->window = 2; f->cr = 1; f->topk_n = 2; f->M = 100; f->N = 0;
  f->sk = -99;
  f->opt.skipped = &f->sk;
}
static dsv4kv_status cb_call(cb_fix *f) {
  return dsv4kv_combine_topk_swa_indices(f->p[0], f->p[1], f->p[2], f->p[3], f->window, f->cr, f->topk_n,
                                         f->M, f->N, f->p[4], f->p[5], &f->opt);
}
static void cb_free(cb_fix *f) {
  tt_free(&f->topk); tt_free(&f->qsl); tt_free(&f->seq); tt_free(&f->gl); tt_free(&f->comb); tt_free(&f->lens);
}

static void sec7_combine_argument_errors(void **state) {
  (void)state;
  BEGIN_CASES();
  const int32_t qsl[3] = {0, 2, 4};
  {
    cb_fix f;
    cb_init(&f, qsl);
    check_call(cb_call(&f), DSV4KV_OK, NULL, "combine baseline");
    cb_free(&f);
  }
  static const char *names[6] = {"topk_indices", "query_start_loc", "seq_lens", "gather_lens", "combined", "lens"};
  for (int ci = 0;; ci++) {
    cb_fix f;
    cb_init(&f, qsl);
    dsv4kv_status want;
    const char *name = NULL, *what;
    char buf[96];
    if (ci < 6) {
      snprintf(buf, sizeof(buf), "%s NULL", names[ci]);
      what = buf;
      f.p[ci] = NULL;
      want = DSV4KV_ERR_NULL;
      name = ci < 4 ? names[ci] : NULL;
    } else {
      switch (ci) {
        case 6: what = "topk_indices i64"; f.topk.v.t.dtype = dt_i64(); want = DSV4KV_ERR_DTYPE; name = "topk_indices"; break;
        case 7: what = "query_start_loc i64"; f.qsl.v.t.dtype = dt_i64(); want = DSV4KV_ERR_DTYPE; name = "query_start_loc"; break;
        case 8: what = "seq_lens i16"; f.seq.v.t.dtype.bits = 16; want = DSV4KV_ERR_DTYPE; name = "seq_lens"; break;
        case 9: what = "gather_lens f32"; f.gl.v.t.dtype = dt_f32(); want = DSV4KV_ERR_DTYPE; name = "gather_lens"; break;
        case 10: what = "combined i64"; f.comb.v.t.dtype = dt_i64(); want = DSV4KV_ERR_DTYPE; break;
        case 11: what = "topk_indices rank 1"; f.topk.v.t.ndim = 1; f.topk.v.shape[0] = 12; want = DSV4KV_ERR_RANK; name = "topk_indices"; break;
        case 12: what = "query_start_loc rank 2"; f.qsl.v.t.ndim = 2; f.qsl.v.shape[1] = 1; want = DSV4KV_ERR_RANK; name = "query_start_loc"; break;
        case 13: what = "combined rank 1"; f.comb.v.t.ndim = 1; f.comb.v.shape[0] = 512; want = DSV4KV_ERR_RANK; break;
        case 14: what = "query_start_loc length != R + 1"; f.qsl.v.shape[0] = 2; want = DSV4KV_ERR_SHAPE; name = "query_start_loc|seq_lens"; break;
        case 15: what = "gather_lens length != R"; f.gl.v.shape[0] = 1; want = DSV4KV_ERR_SHAPE; name = "gather_lens"; break;
        case 16: what = "combined width < topk + window"; f.comb.v.shape[1] = 3; want = DSV4KV_ERR_SHAPE; break;
        case 17: what = "combined rows != T"; f.comb.v.shape[0] = 3; want = DSV4KV_ERR_SHAPE; break;
        case 18: what = "lens length != T"; f.lens.v.shape[0] = 3; want = DSV4KV_ERR_SHAPE; name = "lens"; break;
        case 19: what = "window_size 0"; f.window = 0; want = DSV4KV_ERR_VALUE; name = "window_size"; break;
        case 20: what = "window_size -3"; f.window = -3; want = DSV4KV_ERR_VALUE; name = "window_size"; break;
        case 21: what = "compress_ratio -1"; f.cr = -1; want = DSV4KV_ERR_VALUE; name = "compress_ratio"; break;
        case 22: what = "topk > W"; f.topk_n = 4; want = DSV4KV_ERR_VALUE; name = "topk"; break;
        case 23: what = "topk -1"; f.topk_n = -1; want = DSV4KV_ERR_VALUE; name = "topk"; break;
        case 24: what = "all CUDA"; for (int i = 0; i < 6; i++) set_cuda((DLTensor *)f.p[i]);
          want = want_cuda_host(); break;
        case 25: what = "seq_lens on CUDA"; set_cuda(&f.seq.v.t); want = DSV4KV_ERR_DEVICE; break;
        default: cb_free(&f); END_CASES(); return;
      }
    }
    check_call(cb_call(&f), want, name, what);
    if (!all_bytes(f.comb.d, 4 * 128 * 4, 0x5A) || !all_bytes(f.lens.d, 16, 0x5A))
      soft_fail("%s: outputs written on an argument error", what);
    soft_true(fb_guards_ok(&f.comb.fb) && fb_guards_ok(&f.lens.fb), "guard bytes overwritten");
    cb_free(&f);
  }
  END_CASES();
}

static void sec7_combine_bad_index_values(void **state) {
  (void)state;
  BEGIN_CASES();
  /* query_start_loc [0, 2, 6] with T = 4: tokens 4 and 5 are outside [0, T) */
  const int32_t qsl[3] = {0, 2, 6};
  cb_fix f;
  cb_init(&f, qsl);
  check_call(cb_call(&f), DSV4KV_WARN_SKIPPED, "query_start_loc", "token index past T");
  soft_true(f.sk == (2), "skipped %lld, want %lld", (long long)f.sk, (long long)(2));
  int32_t *wc = (int32_t *)malloc(4 * 128 * 4), *wl = (int32_t *)malloc(16);
  fill_i32(wc, 4 * 128, IPOISON);
  fill_i32(wl, 4, IPOISON);
  const int32_t topk[12] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11};
  const int32_t seq[2] = {10, 5}, gl[2] = {10, 5};
  int64_t wsk = 0;
  ref_combine(topk, 4, 3, qsl, 2, seq, gl, 2, 1, 2, 100, 0, wc, 128, wl, &wsk);
  assert_int_equal(wsk, 2);
  assert_memory_equal(f.comb.d, wc, 4 * 128 * 4);
  assert_memory_equal(f.lens.d, wl, 16);
  soft_true(fb_guards_ok(&f.comb.fb) && fb_guards_ok(&f.lens.fb), "guard bytes overwritten");
  free(wc);
  free(wl);
  cb_free(&f);
  END_CASES();
}

static void sec7_combine_alloc_errors(void **state) {
  (void)state;
  BEGIN_CASES();
  const int32_t qsl[3] = {0, 2, 4};
  cb_fix f;
  cb_init(&f, qsl);
  DLManagedTensor *mc = (DLManagedTensor *)(uintptr_t)0x1, *ml = (DLManagedTensor *)(uintptr_t)0x1;
  dsv4kv_status st = dsv4kv_combine_topk_swa_indices_alloc(f.p[0], f.p[1], f.p[2], f.p[3], 0, 1, 2, 100, 0,
                                                           &mc, &ml, &f.opt);
  check_call(st, DSV4KV_ERR_VALUE, "window_size", "alloc: window_size 0");
  assert_null(mc);
  assert_null(ml);
  mc = ml = NULL;
  st = dsv4kv_combine_topk_swa_indices_alloc(NULL, f.p[1], f.p[2], f.p[3], 2, 1, 2, 100, 0, &mc, &ml, &f.opt);
  check_call(st, DSV4KV_ERR_NULL, "topk_indices", "alloc: topk_indices NULL");
  assert_null(mc);
  assert_null(ml);
  st = dsv4kv_combine_topk_swa_indices_alloc(f.p[0], f.p[1], f.p[2], f.p[3], 2, 1, 2, 100, 0, NULL, &ml, &f.opt);
  check_call(st, DSV4KV_ERR_NULL, NULL, "alloc: combined_out NULL");
  st = dsv4kv_combine_topk_swa_indices_alloc(f.p[0], f.p[1], f.p[2], f.p[3], 2, 1, 2, 100, 0, &mc, NULL, &f.opt);
  check_call(st, DSV4KV_ERR_NULL, NULL, "alloc: lens_out NULL");
  /* the happy path, then managed_free(NULL) is harmless */
  st = dsv4kv_combine_topk_swa_indices_alloc(f.p[0], f.p[1], f.p[2], f.p[3], 2, 1, 2, 100, 0, &mc, &ml, &f.opt);
  check_call(st, DSV4KV_OK, NULL, "alloc: valid");
  assert_non_null(mc);
  assert_non_null(ml);
  assert_string_equal(dsv4kv_last_error(), "");
  dsv4kv_managed_free(mc);
  dsv4kv_managed_free(ml);
  dsv4kv_managed_free(NULL);
  DLManagedTensor no_deleter;
  memset(&no_deleter, 0, sizeof(no_deleter));
  dsv4kv_managed_free(&no_deleter);
  cb_free(&f);
  END_CASES();
}

/* =================================================================== 5.3 */
typedef struct {
  tt dswa, dcomp, dvalid, ptopk, qsl, seq, replay, t2r, sbt, cbt, out, lens;
  dsv4kv_flashinfer_args a;
  const dsv4kv_flashinfer_args *pa;
  const DLTensor *po, *pl;
  int64_t sk;
  dsv4kv_options opt;
} fi_fix;

/* The hand example of test_index_ops (D 1, P 2, S 4, K4 4, local decode). */
static void fi_init(fi_fix *f, const int32_t *ptopk, const int32_t *t2r, const int32_t *seq, const int32_t *dcomp) {
  memset(f, 0, sizeof(*f));
  const int32_t dswa[4] = {9, -1, 4, 13};
  const uint8_t dvalid[1] = {1};
  const int32_t qsl[3] = {0, 1, 3}, replay[2] = {0, 2};
  const int32_t sbt[4] = {3, 1, 2, 0};
  const int32_t cbt[6] = {5, 6, 7, 8, 9, 4};
  int64_t s14[2] = {1, 4}, s12[2] = {1, 2}, s1[1] = {1}, s23[2] = {2, 3}, s3[1] = {3}, s2[1] = {2},
          s22[2] = {2, 2}, s38[2] = {3, 8};
  tt_make(&f->dswa, dt_i32(), 4, 2, s14, dswa, 0);
  tt_make(&f->dcomp, dt_i32(), 4, 2, s12, dcomp, 0);
  tt_make(&f->dvalid, dt_bool(), 1, 1, s1, dvalid, 0);
  tt_make(&f->ptopk, dt_i32(), 4, 2, s23, ptopk, 0);
  tt_make(&f->qsl, dt_i32(), 4, 1, s3, qsl, 0);
  tt_make(&f->seq, dt_i32(), 4, 1, s2, seq, 0);
  tt_make(&f->replay, dt_i32(), 4, 1, s2, replay, 0);
  tt_make(&f->t2r, dt_i32(), 4, 1, s3, t2r, 0);
  tt_make(&f->sbt, dt_i32(), 4, 2, s22, sbt, 0);
  tt_make(&f->cbt, dt_i32(), 4, 2, s23, cbt, 0);
  tt_make(&f->out, dt_i32(), 4, 2, s38, NULL, 0x5A);
  tt_make(&f->lens, dt_i32(), 4, 1, s3, NULL, 0x5A);
  dsv4kv_flashinfer_args *a = &f->a;
  a->decode_swa_indices = &f->dswa.v.t;
  a->decode_compressed_indices = &f->dcomp.v.t;
  a->decode_is_valid_token = &f->dvalid.v.t;
  a->decode_compressed_indices_are_local = 1;
  a->prefill_topk_indices = &f->ptopk.v.t;
  a->query_start_loc = &f->qsl.v.t;
  a->seq_lens = &f->seq.v.t;
  a->replay_start = &f->replay.v.t;
  a->token_to_req_indices = &f->t2r.v.t;
  a->swa_block_table = &f->sbt.v.t;
  a->compressed_block_table = &f->cbt.v.t;
  a->swa_block_size = 4; a->swa_block_span = 6;
  a->compressed_block_size = 2; a->compressed_block_span = 3;
  a->window_size = 3; a->compress_ratio = 2; a->topk = 3;
  f->pa = a;
  f->po = &f->out.v.t;
  f->pl = &f->lens.v.t;
  f->sk = -99;
  f->opt.skipped = &f->sk;
}
static dsv4kv_status fi_call(fi_fix *f) {
  return dsv4kv_build_flashinfer_mixed_sparse_indices(f->pa, f->po, f->pl, &f->opt);
}
static void fi_free(fi_fix *f) {
  tt *all[] = {&f->dswa, &f->dcomp, &f->dvalid, &f->ptopk, &f->qsl, &f->seq, &f->replay, &f->t2r, &f->sbt,
               &f->cbt, &f->out, &f->lens};
  for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++) tt_free(all[i]);
}

static const int32_t kPtopk[6] = {1, 4, 0, -1, 5, 2};
static const int32_t kT2r[3] = {0, 1, 1};
static const int32_t kSeq[2] = {5, 6};
static const int32_t kDcomp[2] = {3, -1};

static void sec7_flashinfer_argument_errors(void **state) {
  (void)state;
  BEGIN_CASES();
  {
    fi_fix f;
    fi_init(&f, kPtopk, kT2r, kSeq, kDcomp);
    check_call(fi_call(&f), DSV4KV_OK, NULL, "flashinfer baseline");
    fi_free(&f);
  }
  for (int ci = 0;; ci++) {
    fi_fix f;
    fi_init(&f, kPtopk, kT2r, kSeq, kDcomp);
    dsv4kv_status want;
    const char *name = NULL, *what;
    switch (ci) {
      case 0: what = "args NULL"; f.pa = NULL; want = DSV4KV_ERR_NULL; break;
      case 1: what = "sparse_indices NULL"; f.po = NULL; want = DSV4KV_ERR_NULL; name = "sparse_indices"; break;
      case 2: what = "sparse_lens NULL"; f.pl = NULL; want = DSV4KV_ERR_NULL; name = "sparse_lens"; break;
      case 3: what = "decode_swa_indices NULL"; f.a.decode_swa_indices = NULL; want = DSV4KV_ERR_NULL; name = "decode_swa_indices"; break;
      case 4: what = "prefill_topk_indices NULL"; f.a.prefill_topk_indices = NULL; want = DSV4KV_ERR_NULL; name = "prefill_topk_indices"; break;
      case 5: what = "query_start_loc NULL"; f.a.query_start_loc = NULL; want = DSV4KV_ERR_NULL; name = "query_start_loc"; break;
      case 6: what = "seq_lens NULL"; f.a.seq_lens = NULL; want = DSV4KV_ERR_NULL; name = "seq_lens"; break;
      case 7: what = "replay_start NULL"; f.a.replay_start = NULL; want = DSV4KV_ERR_NULL; name = "replay_start"; break;
      case 8: what = "token_to_req_indices NULL"; f.a.token_to_req_indices = NULL; want = DSV4KV_ERR_NULL; name = "token_to_req_indices"; break;
      case 9: what = "swa_block_table NULL"; f.a.swa_block_table = NULL; want = DSV4KV_ERR_NULL; name = "swa_block_table"; break;
      case 10: what = "decode_swa_indices i64"; f.dswa.v.t.dtype = dt_i64(); want = DSV4KV_ERR_DTYPE; name = "decode_swa_indices"; break;
      case 11: what = "sparse_indices i64"; f.out.v.t.dtype = dt_i64(); want = DSV4KV_ERR_DTYPE; name = "sparse_indices"; break;
      case 12: what = "decode_is_valid_token f32"; f.dvalid.v.t.dtype = dt_f32(); want = DSV4KV_ERR_DTYPE; name = "decode_is_valid_token"; break;
      case 13: what = "decode_swa_indices rank 1"; f.dswa.v.t.ndim = 1; want = DSV4KV_ERR_RANK; name = "decode_swa_indices"; break;
      case 14: what = "swa_block_table rank 1"; f.sbt.v.t.ndim = 1; want = DSV4KV_ERR_RANK; name = "swa_block_table"; break;
      case 15: what = "sparse_indices width != S + K4"; f.out.v.shape[1] = 7; want = DSV4KV_ERR_SHAPE; name = "sparse_indices"; break;
      case 16: what = "sparse_indices rows != D + P"; f.out.v.shape[0] = 2; want = DSV4KV_ERR_SHAPE; name = "sparse_indices"; break;
      case 17: what = "sparse_lens length != D + P"; f.lens.v.shape[0] = 2; want = DSV4KV_ERR_SHAPE; name = "sparse_lens"; break;
      case 18: what = "token_to_req shorter than D + P"; f.t2r.v.shape[0] = 2; want = DSV4KV_ERR_SHAPE; name = "token_to_req_indices"; break;
      case 19: what = "decode_compressed rows != D"; f.dcomp.v.shape[0] = 0; want = DSV4KV_ERR_SHAPE; name = "decode_compressed_indices"; break;
      case 20: what = "window_size > S"; f.a.window_size = 5; want = DSV4KV_ERR_VALUE; name = "window_size"; break;
      case 21: what = "window_size 0"; f.a.window_size = 0; want = DSV4KV_ERR_VALUE; name = "window_size"; break;
      case 22: what = "swa_block_size 0"; f.a.swa_block_size = 0; want = DSV4KV_ERR_VALUE; name = "swa_block_size"; break;
      case 23: what = "compressed_block_size -2"; f.a.compressed_block_size = -2; want = DSV4KV_ERR_VALUE; name = "compressed_block_size"; break;
      case 24: what = "compress_ratio -1"; f.a.compress_ratio = -1; want = DSV4KV_ERR_VALUE; name = "compress_ratio"; break;
      case 25: what = "topk -1"; f.a.topk = -1; want = DSV4KV_ERR_VALUE; name = "topk"; break;
      case 26: what = "all CUDA"; {
          tt *all[] = {&f.dswa, &f.dcomp, &f.dvalid, &f.ptopk, &f.qsl, &f.seq, &f.replay, &f.t2r, &f.sbt, &f.cbt, &f.out, &f.lens};
          for (size_t i = 0; i < 12; i++) set_cuda(&all[i]->v.t);
        }
        want = want_cuda_host(); break;
      case 27: what = "replay_start on CUDA"; set_cuda(&f.replay.v.t); want = DSV4KV_ERR_DEVICE; break;
      case 28: what = "swa_block_span < 0"; f.a.swa_block_span = -1; want = DSV4KV_ERR_VALUE; name = "swa_block_span"; break;
      default: fi_free(&f); END_CASES(); return;
    }
    check_call(fi_call(&f), want, name, what);
    if (!all_bytes(f.out.d, 24 * 4, 0x5A) || !all_bytes(f.lens.d, 12, 0x5A))
      soft_fail("%s: outputs written on an argument error", what);
    soft_true(fb_guards_ok(&f.out.fb) && fb_guards_ok(&f.lens.fb), "guard bytes overwritten");
    fi_free(&f);
  }
  END_CASES();
}

static void fi_expect(fi_fix *f, const int32_t *want, const int32_t *want_l, const char *what) {
  for (int i = 0; i < 24; i++)
    if (want[i] != IPOISON && ((int32_t *)f->out.d)[i] != want[i])
      soft_fail("%s: sparse_indices[%d][%d] got %d want %d", what, i / 8, i % 8, ((int32_t *)f->out.d)[i], want[i]);
  for (int i = 0; i < 3; i++)
    if (want_l[i] != IPOISON && ((int32_t *)f->lens.d)[i] != want_l[i])
      soft_fail("%s: sparse_lens[%d] got %d want %d", what, i, ((int32_t *)f->lens.d)[i], want_l[i]);
  soft_true(fb_guards_ok(&f->out.fb) && fb_guards_ok(&f->lens.fb), "guard bytes overwritten");
}

static void sec7_flashinfer_bad_index_values(void **state) {
  (void)state;
  BEGIN_CASES();
  const int32_t P = IPOISON; /* "don't check" marker below */
  {
    /* prefill top-k entry past its block table: x = 6 -> page 3 of a 3-page row;
     * x = 1000 likewise.  Row 1: [1, 6(bad), 0]: topk_len 2 -> col 5 = -1.
     * Row 2: [-1, 1000(bad), 2]: topk_len 3. */
    const int32_t pt[6] = {1, 6, 0, -1, 1000, 2};
    fi_fix f;
    fi_init(&f, pt, kT2r, kSeq, kDcomp);
    check_call(fi_call(&f), DSV4KV_WARN_SKIPPED, NULL, "prefill top-k entry past its block table");
    soft_true(f.sk == (2), "skipped %lld, want %lld", (long long)f.sk, (long long)(2));
    const int32_t want[24] = {13, -1, 6, 19, 19, -1, -1, -1,
                              14, 15, 0, -1, 25, -1, -1, -1,
                              15, 0, 1, -1, -1, -1, 27, -1};
    const int32_t wl[3] = {5, 6, 7};
    fi_expect(&f, want, wl, "prefill top-k past table");
    fi_free(&f);
  }
  {
    /* local decode index past its compressed block table row: v = 6 -> page 3 */
    const int32_t dc[2] = {6, 1};
    fi_fix f;
    fi_init(&f, kPtopk, kT2r, kSeq, dc);
    check_call(fi_call(&f), DSV4KV_WARN_SKIPPED, NULL, "local decode index past its block table");
    soft_true(f.sk == (1), "skipped %lld, want %lld", (long long)f.sk, (long long)(1));
    /* v = 1 -> cbt[0][0] = 5 -> 11 -> remap(11, 2, 3) = 5*3 + 1 = 16 */
    const int32_t want[24] = {13, -1, 6, 19, -1, 16, -1, -1,
                              14, 15, 0, -1, 25, 12, -1, -1,
                              15, 0, 1, -1, -1, 13, 27, -1};
    const int32_t wl[3] = {P, 6, 7};
    fi_expect(&f, want, wl, "decode local past table");
    fi_free(&f);
  }
  {
    /* SWA position past the swa block table row: req 1 seq 9 -> prefill
     * positions 7, 8 with 2 pages of 4 = 8 positions; window 3.
     * t1: pos 7, swa 5..7 -> all in page 1 (sbt[1][1] = 0): slots 1,2,3 -> remap 1,2,3
     * t2: pos 8, swa 6..8 -> 6, 7 ok (2, 3), 8 past the row (skipped) */
    const int32_t seq[2] = {5, 9};
    const int32_t pt[6] = {0, 0, 0, 0, 0, 0};
    fi_fix f;
    fi_init(&f, pt, kT2r, seq, kDcomp);
    check_call(fi_call(&f), DSV4KV_WARN_SKIPPED, NULL, "SWA position past the swa block table row");
    soft_true(f.sk == (1), "skipped %lld, want %lld", (long long)f.sk, (long long)(1));
    /* top-k: topk_len = min((pos+1)/2, 3) = 3 for pos 7, 8; x = 0 -> cbt[1][0] = 8 -> 16 -> remap 24 */
    const int32_t want[24] = {13, -1, 6, 19, 19, -1, -1, -1,
                              1, 2, 3, -1, 24, 24, 24, -1,
                              2, 3, -1, -1, 24, 24, 24, -1};
    const int32_t wl[3] = {5, 7, 7};
    fi_expect(&f, want, wl, "SWA past table");
    fi_free(&f);
  }
  {
    /* request id out of range for prefill token 2 */
    const int32_t t2r[3] = {0, 1, 7};
    fi_fix f;
    fi_init(&f, kPtopk, t2r, kSeq, kDcomp);
    check_call(fi_call(&f), DSV4KV_WARN_SKIPPED, "token_to_req_indices", "request id out of range");
    assert_true(f.sk >= 1);
    const int32_t want[24] = {13, -1, 6, 19, 19, -1, -1, -1,
                              14, 15, 0, -1, 25, 12, -1, -1,
                              -1, -1, -1, -1, -1, -1, -1, -1};
    const int32_t wl[3] = {5, 6, P};
    fi_expect(&f, want, wl, "request id out of range");
    /* every element written, lens of the bad row included */
    assert_true(((int32_t *)f.lens.d)[2] != IPOISON);
    fi_free(&f);
  }
  END_CASES();
}

/* =================================================================== §6 indexer */
typedef struct {
  tmat16 k;
  tt pos, cs, w, slot;
  tcache c;
  const DLTensor *p[6];
  const dsv4kv_cache_desc *pd;
  float eps;
  int32_t cr;
  uint8_t *init;
  int64_t sk;
  dsv4kv_options opt;
} ix_fix;

static void ix_init(ix_fix *f, const int64_t *pos, const int64_t *slot, dsv4kv_record rec, int32_t bs) {
  memset(f, 0, sizeof(*f));
  rng_t r;
  rng_seed(&r, 73);
  tmat16_make(&f->k, 6, 128, 128);
  for (int t = 0; t < 6; t++)
    for (int i = 0; i < 128; i++) tmat16_row(&f->k, t)[i] = bf16_of(rng_normal(&r));
  int64_t s3[1] = {3}, scs[2] = {8, 64}, s128[1] = {128};
  tt_make(&f->pos, dt_i64(), 8, 1, s3, pos, 0);
  float *cs = (float *)tt_make(&f->cs, dt_f32(), 4, 2, scs, NULL, 0);
  for (int i = 0; i < 8 * 64; i++) cs[i] = (float)(rng_unit(&r) * 2 - 1);
  float *w = (float *)tt_make(&f->w, dt_f32(), 4, 1, s128, NULL, 0);
  for (int i = 0; i < 128; i++) w[i] = (float)(0.5 + rng_unit(&r));
  tt_make(&f->slot, dt_i64(), 8, 1, s3, slot, 0);
  tcache_make(&f->c, rec, 0, bs, 2, 0, POISON, 0);
  f->p[0] = &f->k.v.t; f->p[1] = &f->pos.v.t; f->p[2] = &f->cs.v.t;
  f->p[3] = &f->w.v.t; f->p[4] = &f->c.v.t; f->p[5] = &f->slot.v.t;
  f->pd = &f->c.desc;
  f->eps = 1e-6f;
  f->cr = 1;
  f->init = (uint8_t *)malloc(f->c.nbytes);
  memcpy(f->init, f->c.data, f->c.nbytes);
  f->sk = -99;
  f->opt.skipped = &f->sk;
}
static dsv4kv_status ix_call(ix_fix *f) {
  return dsv4kv_indexer_k_norm_rope_store(f->p[0], f->p[1], f->p[2], f->p[3], f->eps, f->p[4], f->pd, f->p[5],
                                          f->cr, &f->opt);
}
static void ix_free(ix_fix *f) {
  tmat16_free(&f->k); tt_free(&f->pos); tt_free(&f->cs); tt_free(&f->w); tt_free(&f->slot);
  tcache_free(&f->c); free(f->init);
}

static const int64_t kIxPos[3] = {0, 5, 7};
static const int64_t kIxSlot[3] = {0, 5, -1};

static void sec7_indexer_argument_errors(void **state) {
  (void)state;
  BEGIN_CASES();
  static const char *names[6] = {"k_pre", "positions", "cos_sin_cache", "rms_norm_weight", "k_cache", "kv_slot_mapping"};
  {
    ix_fix f;
    ix_init(&f, kIxPos, kIxSlot, DSV4KV_RECORD_INDEXER_FP8, 16);
    check_call(ix_call(&f), DSV4KV_OK, NULL, "indexer baseline");
    ix_free(&f);
  }
  for (int ci = 0;; ci++) {
    ix_fix f;
    int fp4 = (ci == 30 || ci == 31 || ci == 32);
    ix_init(&f, kIxPos, kIxSlot, fp4 ? DSV4KV_RECORD_INDEXER_MXFP4 : DSV4KV_RECORD_INDEXER_FP8, ci == 33 ? 4 : 16);
    dsv4kv_cache_desc d = f.c.desc;
    dsv4kv_status want;
    const char *name = NULL, *what;
    char buf[96];
    int alt_ok = -1; /* an acceptable alternative status (ambiguous in the header) */
    if (ci < 6) {
      snprintf(buf, sizeof(buf), "%s NULL", names[ci]);
      what = buf;
      f.p[ci] = NULL;
      want = DSV4KV_ERR_NULL;
      name = names[ci];
    } else {
      switch (ci) {
        case 6: what = "cache desc NULL"; f.pd = NULL; want = DSV4KV_ERR_NULL; name = "cache"; break;
        case 7: what = "k_pre f32"; f.k.v.t.dtype = dt_f32(); want = DSV4KV_ERR_DTYPE; name = "k_pre"; break;
        case 8: what = "positions i32"; f.pos.v.t.dtype = dt_i32(); want = DSV4KV_ERR_DTYPE; name = "positions"; break;
        case 9: what = "cos_sin_cache f16"; f.cs.v.t.dtype = dt_f16(); want = DSV4KV_ERR_DTYPE; name = "cos_sin_cache"; break;
        case 10: what = "cos_sin_cache i32"; f.cs.v.t.dtype = dt_i32(); want = DSV4KV_ERR_DTYPE; name = "cos_sin_cache"; break;
        case 11: what = "rms_norm_weight i32"; f.w.v.t.dtype = dt_i32(); want = DSV4KV_ERR_DTYPE; name = "rms_norm_weight"; break;
        case 12: what = "kv_slot_mapping i32"; f.slot.v.t.dtype = dt_i32(); want = DSV4KV_ERR_DTYPE; name = "kv_slot_mapping"; break;
        case 13: what = "k_cache i8"; f.c.v.t.dtype = dt_i8(); want = DSV4KV_ERR_DTYPE; name = "k_cache"; break;
        case 14: what = "k_pre rank 1"; f.k.v.t.ndim = 1; f.k.v.shape[0] = 768; f.k.v.strides[0] = 1; want = DSV4KV_ERR_RANK; name = "k_pre"; break;
        case 15: what = "cos_sin_cache rank 1"; f.cs.v.t.ndim = 1; want = DSV4KV_ERR_RANK; name = "cos_sin_cache"; break;
        case 16: what = "rms_norm_weight rank 2"; f.w.v.t.ndim = 2; f.w.v.shape[0] = 1; f.w.v.shape[1] = 128; want = DSV4KV_ERR_RANK; name = "rms_norm_weight"; break;
        case 17: what = "kv_slot_mapping rank 2"; f.slot.v.t.ndim = 2; f.slot.v.shape[1] = 1; want = DSV4KV_ERR_RANK; name = "kv_slot_mapping"; break;
        case 18: what = "positions rank 2"; f.pos.v.t.ndim = 2; f.pos.v.shape[1] = 1; want = DSV4KV_ERR_RANK; name = "positions"; break;
        case 19: what = "k_pre width 127"; f.k.v.shape[1] = 127; want = DSV4KV_ERR_SHAPE; name = "k_pre"; break;
        case 20: what = "cos_sin_cache width 63"; f.cs.v.shape[1] = 63; want = DSV4KV_ERR_SHAPE; name = "cos_sin_cache"; break;
        case 21: what = "rms_norm_weight length 64"; f.w.v.shape[0] = 64; want = DSV4KV_ERR_SHAPE; name = "rms_norm_weight"; break;
        case 22: what = "kv_slot_mapping longer than k_pre"; f.k.v.shape[0] = 2; want = DSV4KV_ERR_SHAPE; name = "kv_slot_mapping"; break;
        case 23: what = "positions shorter than T"; f.pos.v.shape[0] = 2; want = DSV4KV_ERR_SHAPE; name = "positions"; break;
        case 24: what = "k_pre last-dim stride 2"; f.k.v.strides[1] = 2; f.k.v.strides[0] = 256; f.k.v.shape[0] = 3;
          want = DSV4KV_ERR_STRIDE; name = "k_pre"; break;
        case 25: what = "eps -1"; f.eps = -1.0f; want = DSV4KV_ERR_VALUE; name = "eps"; break;
        case 26: what = "eps NaN"; f.eps = NAN; want = DSV4KV_ERR_VALUE; name = "eps"; break;
        case 27: what = "eps Inf"; f.eps = INFINITY; want = DSV4KV_ERR_VALUE; name = "eps"; break;
        case 28: what = "compress_ratio 0"; f.cr = 0; want = DSV4KV_ERR_VALUE; name = "compress_ratio"; break;
        case 29: what = "block_size 0"; d.block_size = 0; f.pd = &d; want = DSV4KV_ERR_VALUE; name = "block_size"; break;
        case 30: what = "TILED on MXFP4"; d.flags = DSV4KV_CACHE_TILED; f.pd = &d; want = DSV4KV_ERR_FORMAT; break;
        case 31: what = "MX_SCALE on MXFP4"; d.flags = DSV4KV_CACHE_MX_SCALE; f.pd = &d; want = DSV4KV_ERR_FORMAT; break;
        case 32: what = "FNUZ on MXFP4"; d.fp8 = DSV4KV_FP8_FNUZ; f.pd = &d; want = DSV4KV_ERR_FORMAT; break;
        case 33: what = "TILED with block_size % 16 != 0"; d.flags = DSV4KV_CACHE_TILED; f.pd = &d; want = DSV4KV_ERR_FORMAT;
          alt_ok = DSV4KV_ERR_VALUE; break;
        case 34: what = "main-cache record"; d.record = DSV4KV_RECORD_MXFP8; f.pd = &d; want = DSV4KV_ERR_FORMAT; break;
        case 35: what = "page stride mismatch"; d.page_stride = f.c.page_stride * 2; f.pd = &d; want = DSV4KV_ERR_FORMAT; break;
        case 36: what = "page stride < block_size * 132"; f.c.v.shape[1] = 16 * 132 - 4; f.c.v.strides[0] = 16 * 132 - 4; want = DSV4KV_ERR_FORMAT; break;
        case 37: what = "all CUDA"; set_cuda(&f.k.v.t); set_cuda(&f.pos.v.t); set_cuda(&f.cs.v.t); set_cuda(&f.w.v.t);
          set_cuda(&f.c.v.t); set_cuda(&f.slot.v.t); want = want_cuda_host(); break;
        case 38: what = "cos_sin_cache on CUDA"; set_cuda(&f.cs.v.t); want = DSV4KV_ERR_DEVICE; break;
        case 39: what = "unknown flag bit"; d.flags = 0x80u; f.pd = &d; want = DSV4KV_ERR_FORMAT; break;
        default: ix_free(&f); END_CASES(); return;
      }
    }
    dsv4kv_status st = ix_call(&f);
    if (alt_ok >= 0 && st == (dsv4kv_status)alt_ok) want = st;
    check_call(st, want, name, what);
    size_t first;
    if (count_diff(f.c.data, f.init, f.c.nbytes, &first)) soft_fail("%s: cache byte %zu written on an argument error", what, first);
    soft_true(fb_guards_ok(&f.c.fb), "guard bytes overwritten");
    ix_free(&f);
  }
  END_CASES();
}

static void sec7_indexer_bad_index_values(void **state) {
  (void)state;
  BEGIN_CASES();
  static const struct {
    int64_t pos[3], slot[3], skipped;
    const char *what, *name;
  } cases[] = {
      {{0, 5, 7}, {0, 32, 3}, 1, "slot past the cache", "kv_slot_mapping"},
      {{0, 5, 7}, {0, -7, 3}, 1, "slot -7", "kv_slot_mapping"},
      {{0, 5, 7}, {INT64_MIN, INT64_MAX, 3}, 2, "slots INT64_MIN / INT64_MAX", "kv_slot_mapping"},
      {{0, -3, 7}, {0, 5, 3}, 1, "negative position", "positions"},
      {{0, 8, 7}, {0, 5, 3}, 1, "cos_sin row out of range", NULL},
      {{INT64_MAX - 1, 2, 7}, {0, 5, 3}, 1, "huge position", NULL},
      {{0, 5, 7}, {-1, -1, 3}, 0, "-1 is not counted", NULL},
  };
  for (size_t ci = 0; ci < sizeof(cases) / sizeof(cases[0]); ci++) {
    ix_fix f;
    ix_init(&f, cases[ci].pos, cases[ci].slot, DSV4KV_RECORD_INDEXER_FP8, 16);
    check_call(ix_call(&f), cases[ci].skipped ? DSV4KV_WARN_SKIPPED : DSV4KV_OK, cases[ci].name, cases[ci].what);
    soft_true(f.sk == (cases[ci].skipped), "skipped %lld, want %lld", (long long)f.sk, (long long)(cases[ci].skipped));
    uint8_t *want = (uint8_t *)malloc(f.c.nbytes);
    memcpy(want, f.init, f.c.nbytes);
    const float *cs = (const float *)f.cs.d, *w = (const float *)f.w.d;
    for (int t = 0; t < 3; t++) {
      int64_t s = cases[ci].slot[t], p = cases[ci].pos[t];
      if (s < 0 || s >= 32 || p < 0 || p >= 8) continue;
      ref_indexer_token(tmat16_row(&f.k, t), w, cs + p * 64, 1e-6f, 0, 0, 0, want + (s / 16) * f.c.page_stride, 16,
                        (int32_t)(s % 16));
    }
    size_t first;
    if (count_diff(f.c.data, want, f.c.nbytes, &first))
      soft_fail("%s: cache byte %zu got 0x%02x want 0x%02x", cases[ci].what, first, f.c.data[first], want[first]);
    soft_true(fb_guards_ok(&f.c.fb), "guard bytes overwritten");
    free(want);
    ix_free(&f);
  }
  END_CASES();
}

/* =================================================================== strides */
/* Index-op inputs with a non-unit last-dim stride: the header documents no
 * stride rule for them, so either ERR_STRIDE (nothing written) or OK with
 * the stride honoured is accepted. */
static void sec7_index_ops_strided_input_rejected_or_honoured(void **state) {
  (void)state;
  BEGIN_CASES();
  const int32_t topk[12] = {0, 5, -1, 7, 1, 2, 3, 4, -1, -1, 6, 0};
  const int32_t t2r[3] = {0, 1, 1};
  gt_fix f;
  gt_init(&f, topk, t2r);
  /* view [3, 2] of every other column */
  f.topk.v.shape[1] = 2;
  f.topk.v.strides[0] = 4;
  f.topk.v.strides[1] = 2;
  f.topk.v.t.strides = f.topk.v.strides;
  f.g.v.shape[1] = 2;
  dsv4kv_status st = gt_call(&f);
  if (st == DSV4KV_ERR_STRIDE) {
    soft_true(all_bytes(f.g.d, 48, 0x5A), "strided topk: outputs written on ERR_STRIDE");
  } else if (st == DSV4KV_OK) {
    int32_t sub[6], wg[6], wl[3];
    for (int t = 0; t < 3; t++)
      for (int j = 0; j < 2; j++) sub[t * 2 + j] = topk[t * 4 + 2 * j];
    const int32_t bt[4] = {3, 1, 0, 2};
    const uint8_t valid[3] = {1, 0, 1};
    int64_t wsk = 0;
    ref_global_topk(sub, 3, 2, t2r, bt, 2, 2, 4, valid, wg, wl, &wsk);
    soft_true(memcmp(f.g.d, wg, sizeof(wg)) == 0, "strided topk: stride accepted but not honoured");
    soft_true(memcmp(f.l.d, wl, sizeof(wl)) == 0, "strided topk: lens wrong");
  } else {
    soft_fail("strided topk: status %d (%s)", (int)st, dsv4kv_status_string(st));
  }
  gt_free(&f);
  END_CASES();
}

/* =================================================================== misc */
/* A successful call clears the message; bools as kDLUInt/8 are accepted. */
static void sec7_last_error_cleared_and_bool_as_uint8(void **state) {
  (void)state;
  BEGIN_CASES();
  const int32_t topk[12] = {0, 5, -1, 7, 1, 2, 3, 4, -1, -1, 6, 0};
  const int32_t t2r[3] = {0, 1, 1};
  gt_fix f;
  gt_init(&f, topk, t2r);
  f.bs = 0;
  assert_status(gt_call(&f), DSV4KV_ERR_VALUE);
  assert_true(strlen(dsv4kv_last_error()) > 0);
  f.bs = 4;
  f.valid.v.t.dtype = dt_u8();
  assert_status(gt_call(&f), DSV4KV_OK);
  assert_string_equal(dsv4kv_last_error(), "");
  gt_free(&f);
  END_CASES();
}

/* dsv4kv_last_error() is per thread: an error in another thread does not
 * change this thread's message. */
static void *other_thread(void *arg) {
  gt_fix *f = (gt_fix *)arg;
  int32_t bs = f->bs;
  f->bs = 0;
  dsv4kv_status st = gt_call(f);
  f->bs = bs;
  char *copy = (char *)malloc(256);
  snprintf(copy, 256, "%d|%s", (int)st, dsv4kv_last_error());
  return copy;
}

static void sec7_last_error_is_thread_local(void **state) {
  (void)state;
  const int32_t topk[12] = {0, 5, -1, 7, 1, 2, 3, 4, -1, -1, 6, 0};
  const int32_t t2r[3] = {0, 1, 1};
  gt_fix f;
  gt_init(&f, topk, t2r);
  assert_status(dsv4kv_record_from_width(1, &(dsv4kv_record){0}), DSV4KV_ERR_FORMAT);
  char mine[256];
  snprintf(mine, sizeof(mine), "%s", dsv4kv_last_error());
  assert_true(strlen(mine) > 0);
  pthread_t th;
  assert_int_equal(pthread_create(&th, NULL, other_thread, &f), 0);
  void *ret = NULL;
  pthread_join(th, &ret);
  char *theirs = (char *)ret;
  assert_non_null(theirs);
  assert_true(strncmp(theirs, "6|", 2) == 0);
  assert_true(strstr(theirs, "block_size") != NULL);
  assert_string_equal(dsv4kv_last_error(), mine);
  free(theirs);
  gt_free(&f);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(sec7_insert_argument_errors),
      cmocka_unit_test(sec7_insert_bad_slot_values),
      cmocka_unit_test(sec7_gather_argument_errors),
      cmocka_unit_test(sec7_gather_bad_index_values),
      cmocka_unit_test(sec7_global_topk_argument_errors),
      cmocka_unit_test(sec7_global_topk_bad_index_values),
      cmocka_unit_test(sec7_combine_argument_errors),
      cmocka_unit_test(sec7_combine_bad_index_values),
      cmocka_unit_test(sec7_combine_alloc_errors),
      cmocka_unit_test(sec7_flashinfer_argument_errors),
      cmocka_unit_test(sec7_flashinfer_bad_index_values),
      cmocka_unit_test(sec7_indexer_argument_errors),
      cmocka_unit_test(sec7_indexer_bad_index_values),
      cmocka_unit_test(sec7_index_ops_strided_input_rejected_or_honoured),
      cmocka_unit_test(sec7_last_error_cleared_and_bool_as_uint8),
      cmocka_unit_test(sec7_last_error_is_thread_local),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
