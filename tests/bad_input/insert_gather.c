/*
 * test_bad_input: SPEC §7 for dsv4kv_quantize_and_insert_k_cache and
 * dsv4kv_dequantize_and_gather_k_cache (argument errors, out-of-range slot,
 * page and length values).
 */
#include <stdlib.h>

#include "bad_input.h"

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
  bi_tt_make(&f->slots, dt_i64(), 8, 1, sh, slots, 0);
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
  bi_tt_free(&f->slots);
  free(f->init);
}

static void ins_assert_untouched(ins_fix *f, const char *what) {
  size_t first;
  if (count_diff(f->c.data, f->init, f->c.nbytes, &first))
    soft_fail("%s: cache byte %zu written on an argument error", what, first);
  soft_true(fb_guards_ok(&f->c.fb), "guard bytes overwritten");
}

void sec7_insert_argument_errors(void **state) {
  (void)state;
  BEGIN_CASES();
  const int64_t sv[3] = {0, 5, -1};
  {
    ins_fix f;
    ins_init(&f, sv, 3, 8);
    bi_check_call(ins_call(&f), DSV4KV_OK, NULL, "insert baseline");
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
      case 5: what = "k dtype f16"; f.k.v.t.dtype = dt_f16(); want = DSV4KV_ERR_DTYPE; name = "k has dtype float16"; break;
      case 6: what = "k lanes 2"; f.k.v.t.dtype.lanes = 2; want = DSV4KV_ERR_DTYPE; name = "k has dtype bfloat16x2"; break;
      case 7: what = "k_cache dtype i8"; f.c.v.t.dtype = dt_i8(); want = DSV4KV_ERR_DTYPE; name = "k_cache has dtype int8"; break;
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
      case 28: what = "all tensors CUDA"; bi_set_cuda(&f.k.v.t); bi_set_cuda(&f.c.v.t); bi_set_cuda(&f.slots.v.t);
        want = bi_want_cuda_host(); break;
      case 29: what = "k_cache on CUDA, k on CPU"; bi_set_cuda(&f.c.v.t); want = DSV4KV_ERR_DEVICE; break;
      case 30: what = "slot_mapping on CUDA"; bi_set_cuda(&f.slots.v.t); want = DSV4KV_ERR_DEVICE; break;
      case 31: what = "k data NULL"; f.k.v.t.data = NULL; want = DSV4KV_ERR_NULL; name = "k"; break;
      case 32: what = "fp8 flavour out of range"; d.fp8 = (dsv4kv_fp8_flavor)9; f.pd = &d; want = DSV4KV_ERR_FORMAT; alt_ok = DSV4KV_ERR_VALUE; break;
      default: ins_free(&f); END_CASES(); return;
    }
    dsv4kv_status st = ins_call(&f);
    if (alt_ok >= 0 && st == (dsv4kv_status)alt_ok) want = st;
    bi_check_call(st, want, name, what);
    ins_assert_untouched(&f, what);
    ins_free(&f);
  }
  END_CASES();
}

/* slot values out of range: skipped + counted, the rest written */
void sec7_insert_bad_slot_values(void **state) {
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
    bi_check_call(st, cases[ci].skipped ? DSV4KV_WARN_SKIPPED : DSV4KV_OK,
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
  bi_tt_make(&f->out, dt_bf16(), 2, 3, so, NULL, POISON);
  f->init = (uint16_t *)malloc(f->out_n * 2);
  memcpy(f->init, f->out.d, f->out_n * 2);
  int64_t s1[1] = {2}, s2[2] = {2, 2};
  bi_tt_make(&f->seq, dt_i32(), 4, 1, s1, seq, 0);
  if (gl) bi_tt_make(&f->gl, dt_i32(), 4, 1, s1, gl, 0);
  bi_tt_make(&f->bt, dt_i32(), 4, 2, s2, bt, 0);
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
  bi_tt_free(&f->out);
  bi_tt_free(&f->seq);
  bi_tt_free(&f->gl);
  bi_tt_free(&f->bt);
  free(f->init);
}

void sec7_gather_argument_errors(void **state) {
  (void)state;
  BEGIN_CASES();
  const int32_t seq[2] = {5, 3}, gl[2] = {4, 3}, bt[4] = {0, 1, 2, 0};
  {
    ga_fix f;
    ga_init(&f, seq, gl, bt, 6, 1);
    bi_check_call(ga_call(&f), DSV4KV_OK, NULL, "gather baseline");
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
      case 25: what = "all CUDA"; bi_set_cuda(&f.out.v.t); bi_set_cuda(&f.c.v.t); bi_set_cuda(&f.seq.v.t); bi_set_cuda(&f.gl.v.t);
        bi_set_cuda(&f.bt.v.t); want = bi_want_cuda_host(); break;
      case 26: what = "block_table on CUDA"; bi_set_cuda(&f.bt.v.t); want = DSV4KV_ERR_DEVICE; break;
      case 27: what = "gather_lens on CUDA"; bi_set_cuda(&f.gl.v.t); want = DSV4KV_ERR_DEVICE; break;
      default: ga_free(&f); END_CASES(); return;
    }
    dsv4kv_status st = ga_call(&f);
    if (alt_ok >= 0 && st == (dsv4kv_status)alt_ok) want = st;
    bi_check_call(st, want, name, what);
    if (memcmp(f.out.d, f.init, f.out_n * 2) != 0) soft_fail("%s: out written on an argument error", what);
    soft_true(fb_guards_ok(&f.out.fb), "guard bytes overwritten");
    ga_free(&f);
  }
  END_CASES();
}

void sec7_gather_bad_index_values(void **state) {
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
    bi_check_call(st, DSV4KV_WARN_SKIPPED, cases[ci].name, cases[ci].what);
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
