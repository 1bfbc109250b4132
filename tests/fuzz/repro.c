/*
 * repro.c - minimal reproducers of the fuzz findings (tests/fuzz/).
 * Usage: repro <case>; cases print what they observe and never loop forever
 * (the slow cases take a time budget argument).
 */
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "dsv4kv.h"

static DLTensor tens(void *data, DLDataType dt, int ndim, int64_t *shape, int64_t *strides) {
  DLTensor t;
  memset(&t, 0, sizeof t);
  t.data = data;
  t.device = (DLDevice){kDLCPU, 0};
  t.ndim = ndim;
  t.dtype = dt;
  t.shape = shape;
  t.strides = strides;
  return t;
}
static const DLDataType BF16 = {kDLBfloat, 16, 1}, I32 = {kDLInt, 32, 1}, I64 = {kDLInt, 64, 1},
                        U8 = {kDLUInt, 8, 1}, F32 = {kDLFloat, 32, 1};
static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* F1: gather offset near INT64_MAX: offset + i wraps, the row check passes, out
 * is written before / past its rows. */
static int f1_gather_offset(void) {
  dsv4kv_cache_desc cache = {DSV4KV_RECORD_MXFP8, DSV4KV_FP8_OCP, 16, 0, 0};
  static uint8_t kc[16 * 528];                 /* one page */
  int64_t kc_shape[2] = {1, 16 * 528};
  DLTensor k_cache = tens(kc, U8, 2, kc_shape, NULL);
  int64_t max_tokens = 2;
  uint16_t *out = malloc(1 * max_tokens * 512 * 2); /* out [1, 2, 512] bf16 */
  memset(out, 0, 1 * max_tokens * 512 * 2);
  int64_t out_shape[3] = {1, max_tokens, 512};
  DLTensor o = tens(out, BF16, 3, out_shape, NULL);
  int32_t seq_lens[1] = {6}, bt[1] = {0};
  int64_t r_shape[1] = {1}, bt_shape[2] = {1, 1};
  DLTensor sl = tens(seq_lens, I32, 1, r_shape, NULL);
  DLTensor btt = tens(bt, I32, 2, bt_shape, NULL);
  int64_t skipped = 0;
  dsv4kv_options opt = {.skipped = &skipped, .num_threads = 1};
  /* i = 0: row INT64_MAX (skipped); i = 1..5: rows wrap to INT64_MIN + 0..3,
   * whose byte offsets (row * 512 * 2, wrapping) are rows 0..3 of out: rows 2
   * and 3 are past the 2-row tensor. */
  dsv4kv_status st = dsv4kv_dequantize_and_gather_k_cache(&o, &k_cache, &cache, &sl, NULL, &btt, INT64_MAX, &opt);
  printf("F1 gather offset=INT64_MAX: status %d skipped %lld msg \"%s\"\n", (int)st, (long long)skipped,
         dsv4kv_last_error());
  free(out);
  return 0;
}

/* F2: options.num_threads is passed straight to OpenMP. */
static int f2_threads(int n) {
  int32_t topk[1] = {0}, req[1] = {0}, bt[1] = {0}, g[1], l[1];
  uint8_t valid[1] = {1};
  int64_t s2[2] = {1, 1}, s1[1] = {1};
  DLTensor tk = tens(topk, I32, 2, s2, NULL), rq = tens(req, I32, 1, s1, NULL), b = tens(bt, I32, 2, s2, NULL),
           v = tens(valid, U8, 1, s1, NULL), go = tens(g, I32, 2, s2, NULL), lo = tens(l, I32, 1, s1, NULL);
  dsv4kv_options opt = {.num_threads = n};
  printf("F2 num_threads=%d: global_topk...\n", n);
  fflush(stdout);
  double t0 = now();
  dsv4kv_status st = dsv4kv_compute_global_topk_indices_and_lens(&tk, &rq, &b, 1, &v, &go, &lo, &opt);
  printf("F2 returned %d \"%s\" %.2f s\n", (int)st, dsv4kv_last_error(), now() - t0);
  /* combine: a plain `omp parallel` region (no loop count to cap the team) */
  int32_t qsl[2] = {0, 1}, sl[1] = {1}, gl[1] = {1}, comb[1], lens[1];
  int64_t q_shape[1] = {2};
  DLTensor q = tens(qsl, I32, 1, q_shape, NULL), s = tens(sl, I32, 1, s1, NULL), gg = tens(gl, I32, 1, s1, NULL),
           c = tens(comb, I32, 2, s2, NULL), ln = tens(lens, I32, 1, s1, NULL);
  printf("F2 num_threads=%d: combine...\n", n);
  fflush(stdout);
  t0 = now();
  st = dsv4kv_combine_topk_swa_indices(&tk, &q, &s, &gg, 1, 0, 0, 0, 0, &c, &ln, &opt);
  printf("F2 returned %d \"%s\" %.2f s\n", (int)st, dsv4kv_last_error(), now() - t0);
  return 0;
}

/* F3: check_nonfinite count / status depend on the thread count when two rows
 * name one slot (the losing row is not counted with > 1 thread). */
static int f3_nonfinite(void) {
  enum { T = 256 }; /* enough rows for the library to use 2 threads */
  dsv4kv_cache_desc cache = {DSV4KV_RECORD_MXFP8, DSV4KV_FP8_OCP, 16, 0, 0};
  static uint8_t kc[16 * 528];
  int64_t kc_shape[2] = {1, 16 * 528};
  DLTensor k_cache = tens(kc, U8, 2, kc_shape, NULL);
  static uint16_t k[T * 512];
  k[0] = 0x7FC0;                               /* row 0 holds one NaN, no other row does */
  int64_t k_shape[2] = {T, 512}, s_shape[1] = {T};
  DLTensor kt = tens(k, BF16, 2, k_shape, NULL);
  static int64_t slots[T];
  for (int t = 0; t < T; t++) slots[t] = 5;    /* every row names slot 5: the last row wins */
  DLTensor st_ = tens(slots, I64, 1, s_shape, NULL);
  for (int nt = 1; nt <= 2; nt++) {
    int64_t skipped = -1, nonf = -1;
    dsv4kv_options opt = {.skipped = &skipped, .nonfinite = &nonf, .check_nonfinite = 1, .num_threads = nt};
    dsv4kv_status st = dsv4kv_quantize_and_insert_k_cache(&kt, &k_cache, &cache, &st_, &opt);
    printf("F3 insert num_threads=%d: status %d nonfinite %lld msg \"%s\"\n", nt, (int)st, (long long)nonf,
           dsv4kv_last_error());
  }
  /* the same through the indexer store */
  dsv4kv_cache_desc ic = {DSV4KV_RECORD_INDEXER_FP8, DSV4KV_FP8_OCP, 16, 0, 0};
  static uint8_t ikc[16 * 132];
  int64_t ikc_shape[2] = {1, 16 * 132};
  DLTensor ik = tens(ikc, U8, 2, ikc_shape, NULL);
  static uint16_t kp[T * 128];
  for (int i = 0; i < T * 128; i++) kp[i] = 0x3F80;
  kp[0] = 0x7F80;                              /* +Inf in row 0 */
  int64_t kp_shape[2] = {T, 128};
  DLTensor kpt = tens(kp, BF16, 2, kp_shape, NULL);
  static int64_t pos[T];
  DLTensor post = tens(pos, I64, 1, s_shape, NULL);
  static float cs[4 * 64];
  for (int i = 0; i < 4 * 64; i++) cs[i] = 1.0f;
  int64_t cs_shape[2] = {4, 64}, w_shape[1] = {128};
  DLTensor cst = tens(cs, F32, 2, cs_shape, NULL);
  static float w[128];
  for (int i = 0; i < 128; i++) w[i] = 1.0f;
  DLTensor wt = tens(w, F32, 1, w_shape, NULL);
  for (int nt = 1; nt <= 2; nt++) {
    int64_t skipped = -1, nonf = -1;
    dsv4kv_options opt = {.skipped = &skipped, .nonfinite = &nonf, .check_nonfinite = 1, .num_threads = nt};
    dsv4kv_status st = dsv4kv_indexer_k_norm_rope_store(&kpt, &post, &cst, &wt, 1e-6f, &ik, &ic, &st_, 1, &opt);
    printf("F3 indexer num_threads=%d: status %d nonfinite %lld msg \"%s\"\n", nt, (int)st, (long long)nonf,
           dsv4kv_last_error());
  }
  return 0;
}

/* F5a: gather work is proportional to the length VALUES, not the tensors. */
static int f5_gather_dos(int32_t len) {
  dsv4kv_cache_desc cache = {DSV4KV_RECORD_MXFP8, DSV4KV_FP8_OCP, 16, 0, 0};
  static uint8_t kc[16 * 528];
  int64_t kc_shape[2] = {1, 16 * 528};
  DLTensor k_cache = tens(kc, U8, 2, kc_shape, NULL);
  static uint16_t out[512];
  int64_t out_shape[3] = {1, 1, 512};
  DLTensor o = tens(out, BF16, 3, out_shape, NULL);
  int32_t seq_lens[1] = {len}, bt[1] = {0};
  int64_t r_shape[1] = {1}, bt_shape[2] = {1, 1};
  DLTensor sl = tens(seq_lens, I32, 1, r_shape, NULL), btt = tens(bt, I32, 2, bt_shape, NULL);
  int64_t skipped = 0;
  dsv4kv_options opt = {.skipped = &skipped, .num_threads = 1};
  double t0 = now();
  dsv4kv_status st = dsv4kv_dequantize_and_gather_k_cache(&o, &k_cache, &cache, &sl, NULL, &btt, 0, &opt);
  printf("F5 gather seq_lens={%d}, out [1,1,512]: status %d skipped %lld, %.2f s\n", len, (int)st, (long long)skipped,
         now() - t0);
  return 0;
}
/* F5b: combine work is proportional to query_start_loc VALUES. */
static int f5_combine_dos(int32_t q1) {
  int32_t topk[1] = {0}, qsl[2] = {0, q1}, sl[1] = {1}, gl[1] = {1}, comb[1], lens[1];
  int64_t tk_shape[2] = {1, 1}, q_shape[1] = {2}, r_shape[1] = {1}, c_shape[2] = {1, 1}, l_shape[1] = {1};
  DLTensor tk = tens(topk, I32, 2, tk_shape, NULL), q = tens(qsl, I32, 1, q_shape, NULL),
           s = tens(sl, I32, 1, r_shape, NULL), g = tens(gl, I32, 1, r_shape, NULL),
           c = tens(comb, I32, 2, c_shape, NULL), l = tens(lens, I32, 1, l_shape, NULL);
  int64_t skipped = 0;
  dsv4kv_options opt = {.skipped = &skipped, .num_threads = 1};
  double t0 = now();
  dsv4kv_status st = dsv4kv_combine_topk_swa_indices(&tk, &q, &s, &g, 1, 0, 0, 0, 0, &c, &l, &opt);
  printf("F5 combine query_start_loc={0,%d}, T=1: status %d skipped %lld, %.2f s\n", q1, (int)st, (long long)skipped,
         now() - t0);
  return 0;
}

/* F6: a misaligned int32 tensor is accepted (SPEC §7 lists alignment among the
 * checks); the loads through it are misaligned. */
static int f6_misaligned(void) {
  static uint8_t buf[64] __attribute__((aligned(16)));
  int32_t *topk = (int32_t *)(void *)(buf + 1); /* byte_offset-style misalignment */
  memset(buf, 0, sizeof buf);
  int32_t req[1] = {0}, bt[1] = {0}, g[1], l[1];
  uint8_t valid[1] = {1};
  int64_t s2[2] = {1, 1}, s1[1] = {1};
  DLTensor tk = tens(buf, I32, 2, s2, NULL);
  tk.byte_offset = 1;
  (void)topk;
  DLTensor rq = tens(req, I32, 1, s1, NULL), b = tens(bt, I32, 2, s2, NULL), v = tens(valid, U8, 1, s1, NULL),
           go = tens(g, I32, 2, s2, NULL), lo = tens(l, I32, 1, s1, NULL);
  dsv4kv_status st = dsv4kv_compute_global_topk_indices_and_lens(&tk, &rq, &b, 1, &v, &go, &lo, NULL);
  printf("F6 topk_indices with byte_offset 1: status %d \"%s\"\n", (int)st, dsv4kv_last_error());
  return 0;
}

/* F7: signed overflow in the flashinfer shape arithmetic with zero-stride,
 * memory-honest tensors of huge extent. */
static int f7_flashinfer_overflow(int which) {
  int32_t one[4] = {0, 0, 0, 0};
  int64_t dswa_shape[2] = {1, 4}, dswa_str[2] = {0, 0};
  int64_t dcomp_shape[2] = {1, INT64_MAX - 1}, dcomp_str[2] = {0, 0};
  int64_t p_shape[2] = {0, 0}, q_shape[1] = {1}, r_shape[1] = {0}, req_shape[1] = {1}, bt_shape[2] = {1, 1};
  if (which == 1) { /* D + P overflows: 2^62 + 2^62 */
    dswa_shape[0] = (int64_t)1 << 62;
    dswa_shape[1] = 1;
    p_shape[0] = (int64_t)1 << 62;
    p_shape[1] = 1;
  }
  DLTensor dswa = tens(one, I32, 2, dswa_shape, dswa_str);
  DLTensor dcomp = tens(one, I32, 2, dcomp_shape, dcomp_str);
  int64_t pstr[2] = {0, 0};
  DLTensor pt = tens(one, I32, 2, p_shape, pstr);
  DLTensor q = tens(one, I32, 1, q_shape, NULL), s = tens(one, I32, 1, r_shape, NULL),
           rp = tens(one, I32, 1, r_shape, NULL), rq = tens(one, I32, 1, req_shape, NULL),
           bt = tens(one, I32, 2, bt_shape, NULL);
  int64_t o_shape[2] = {1, 8}, l_shape[1] = {1};
  int32_t o[8], l[1];
  DLTensor ot = tens(o, I32, 2, o_shape, NULL), lt = tens(l, I32, 1, l_shape, NULL);
  dsv4kv_flashinfer_args a = {0};
  a.decode_swa_indices = &dswa;
  a.decode_compressed_indices = which == 0 ? &dcomp : NULL;
  a.prefill_topk_indices = &pt;
  a.query_start_loc = &q;
  a.seq_lens = &s;
  a.replay_start = &rp;
  a.token_to_req_indices = &rq;
  a.swa_block_table = &bt;
  a.swa_block_size = a.compressed_block_size = 1;
  a.window_size = 1;
  dsv4kv_status st = dsv4kv_build_flashinfer_mixed_sparse_indices(&a, &ot, &lt, NULL);
  printf("F7.%d flashinfer: status %d \"%s\"\n", which, (int)st, dsv4kv_last_error());
  return 0;
}

/* F8: the _alloc variant allocates (and fills) T x round_up(topk + window, 128)
 * int32 for any window_size the checks accept. */
static int f8_alloc(int64_t T) {
  int32_t z[2] = {0, 0};
  int64_t tk_shape[2] = {T, 1}, tk_str[2] = {0, 0}, q_shape[1] = {1}, r_shape[1] = {0};
  DLTensor tk = tens(z, I32, 2, tk_shape, tk_str), q = tens(z, I32, 1, q_shape, NULL),
           s = tens(z, I32, 1, r_shape, NULL), g = tens(z, I32, 1, r_shape, NULL);
  DLManagedTensor *c = NULL, *l = NULL;
  double t0 = now();
  dsv4kv_status st = dsv4kv_combine_topk_swa_indices_alloc(&tk, &q, &s, &g, INT32_MAX, 0, 0, 0, 0, &c, &l, NULL);
  printf("F8 alloc T=%lld window_size=INT32_MAX: status %d \"%s\" %.2f s\n", (long long)T, (int)st,
         dsv4kv_last_error(), now() - t0);
  dsv4kv_managed_free(c);
  dsv4kv_managed_free(l);
  return 0;
}

/* F10: int32 overflow of topk + window_size in cpu_combine's thread heuristic
 * (index_ops_cpu.c), reachable with a memory-honest zero-stride `combined`. */
static int f10_combine_overflow(void) {
  int32_t topk[1] = {0}, qsl[2] = {0, 1}, sl[1] = {1}, gl[1] = {1}, comb[1] = {0}, lens[1];
  int64_t tk_shape[2] = {1, 1}, q_shape[1] = {2}, r_shape[1] = {1};
  int64_t c_shape[2] = {1, (int64_t)1 + INT32_MAX}, c_str[2] = {0, 0}, l_shape[1] = {1};
  DLTensor tk = tens(topk, I32, 2, tk_shape, NULL), q = tens(qsl, I32, 1, q_shape, NULL),
           s = tens(sl, I32, 1, r_shape, NULL), g = tens(gl, I32, 1, r_shape, NULL),
           c = tens(comb, I32, 2, c_shape, c_str), l = tens(lens, I32, 1, l_shape, NULL);
  dsv4kv_status st = dsv4kv_combine_topk_swa_indices(&tk, &q, &s, &g, INT32_MAX, 1, 1, 0, 0, &c, &l, NULL);
  printf("F10 combine topk=1 window_size=INT32_MAX: status %d \"%s\" comb[0]=%d lens[0]=%d\n", (int)st,
         dsv4kv_last_error(), comb[0], lens[0]);
  return 0;
}

/* F11: rows T..T_k-1 of k / k_pre ("DP padding, never read") placed in a
 * PROT_NONE page: the call must not touch them. */
static int f11_padding_rows(void) {
  long pg = sysconf(_SC_PAGESIZE);
  uint8_t *m = mmap(NULL, 3 * (size_t)pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  memset(m, 0, 3 * (size_t)pg);
  mprotect(m + 2 * pg, (size_t)pg, PROT_NONE);
  uint16_t *k = (uint16_t *)(void *)(m + 2 * pg - 1024); /* row 0 ends at the fence, row 1 behind it */
  int64_t k_shape[2] = {8, 512}, s_shape[1] = {1}, k_str[2] = {512, 1};
  DLTensor kt = tens(k, BF16, 2, k_shape, k_str);
  dsv4kv_cache_desc cache = {DSV4KV_RECORD_V4, DSV4KV_FP8_OCP, 16, 0, 0};
  static uint8_t kc[16 * 584];
  int64_t kc_shape[2] = {1, 16 * 584};
  DLTensor k_cache = tens(kc, U8, 2, kc_shape, NULL);
  int64_t slots[1] = {3};
  DLTensor st_ = tens(slots, I64, 1, s_shape, NULL);
  for (int nt = 1; nt <= 2; nt++) {
    dsv4kv_options opt = {.num_threads = nt, .check_nonfinite = 1};
    dsv4kv_status st = dsv4kv_quantize_and_insert_k_cache(&kt, &k_cache, &cache, &st_, &opt);
    printf("F11 insert T=1, T_k=8, rows 1.. unmapped, threads %d: status %d\n", nt, (int)st);
  }
  munmap(m, 3 * (size_t)pg);
  return 0;
}

/* F12: tview_output rejects outputs whose elements do not overlap: an empty
 * output with a zero stride, and a non-overlapping interleaved layout. */
static int f12_output_false_reject(void) {
  int32_t topk[6] = {0}, req[3] = {0}, bt[1] = {0}, lens[3];
  uint8_t valid[3] = {1, 1, 1};
  int32_t gbuf[8];
  int64_t s_empty[2] = {0, 6}, st_empty[2] = {6, 0}, s0[1] = {0}, bts[2] = {1, 1};
  DLTensor tk = tens(topk, I32, 2, s_empty, NULL), rq = tens(req, I32, 1, s0, NULL), b = tens(bt, I32, 2, bts, NULL),
           v = tens(valid, U8, 1, s0, NULL), go = tens(gbuf, I32, 2, s_empty, st_empty), lo = tens(lens, I32, 1, s0, NULL);
  dsv4kv_status st = dsv4kv_compute_global_topk_indices_and_lens(&tk, &rq, &b, 1, &v, &go, &lo, NULL);
  printf("F12a global_out shape [0,6] strides [6,0] (no elements): status %d \"%s\"\n", (int)st, dsv4kv_last_error());
  /* [3, 2] with strides [2, 3]: element offsets {0,3,2,5,4,7}, all distinct */
  int64_t s32[2] = {3, 2}, st23[2] = {2, 3}, s3[1] = {3};
  DLTensor tk2 = tens(topk, I32, 2, s32, NULL), rq2 = tens(req, I32, 1, s3, NULL), v2 = tens(valid, U8, 1, s3, NULL),
           go2 = tens(gbuf, I32, 2, s32, st23), lo2 = tens(lens, I32, 1, s3, NULL);
  st = dsv4kv_compute_global_topk_indices_and_lens(&tk2, &rq2, &b, 1, &v2, &go2, &lo2, NULL);
  printf("F12b global_out shape [3,2] strides [2,3] (distinct offsets 0,3,2,5,4,7): status %d \"%s\"\n", (int)st,
         dsv4kv_last_error());
  return 0;
}

/* F9: outputs whose strides alias elements are accepted; with > 1 thread the
 * result depends on the schedule (here lens_out with stride 0). */
static int f9_alias(void) {
  enum { T = 1024 }; /* enough tokens for the library to use 2 threads */
  static int32_t topk[T], req[T], g[T];
  static uint8_t valid[T];
  int32_t bt[1] = {0}, lens[1];
  for (int t = 0; t < T; t++) topk[t] = t < T / 2 ? 0 : -1, valid[t] = 1;
  int64_t s2[2] = {T, 1}, s1[1] = {T}, bts[2] = {1, 1}, zero[1] = {0};
  DLTensor tk = tens(topk, I32, 2, s2, NULL), rq = tens(req, I32, 1, s1, NULL), b = tens(bt, I32, 2, bts, NULL),
           v = tens(valid, U8, 1, s1, NULL), go = tens(g, I32, 2, s2, NULL), lo = tens(lens, I32, 1, s1, zero);
  int diff = 0;
  for (int rep = 0; rep < 2000; rep++) {
    dsv4kv_options o1 = {.num_threads = 1}, o2 = {.num_threads = 2};
    dsv4kv_compute_global_topk_indices_and_lens(&tk, &rq, &b, 1, &v, &go, &lo, &o1);
    int32_t a = lens[0];
    dsv4kv_compute_global_topk_indices_and_lens(&tk, &rq, &b, 1, &v, &go, &lo, &o2);
    if (lens[0] != a) {
      diff++;
      if (diff == 1) printf("F9 lens_out stride 0: 1 thread -> %d, 2 threads -> %d\n", a, lens[0]);
    }
  }
  printf("F9 aliased output: %d of 2000 two-thread runs differ from the one-thread result\n", diff);
  return 0;
}

int main(int argc, char **argv) {
  const char *c = argc > 1 ? argv[1] : "";
  if (!strcmp(c, "f1")) return f1_gather_offset();
  if (!strcmp(c, "f2")) return f2_threads(argc > 2 ? atoi(argv[2]) : 1000000);
  if (!strcmp(c, "f3")) return f3_nonfinite();
  if (!strcmp(c, "f5g")) return f5_gather_dos(argc > 2 ? atoi(argv[2]) : 100000000);
  if (!strcmp(c, "f5c")) return f5_combine_dos(argc > 2 ? atoi(argv[2]) : 100000000);
  if (!strcmp(c, "f6")) return f6_misaligned();
  if (!strcmp(c, "f7")) return f7_flashinfer_overflow(argc > 2 ? atoi(argv[2]) : 0);
  if (!strcmp(c, "f8")) return f8_alloc(argc > 2 ? atoll(argv[2]) : 4);
  if (!strcmp(c, "f9")) return f9_alias();
  if (!strcmp(c, "f10")) return f10_combine_overflow();
  if (!strcmp(c, "f11")) return f11_padding_rows();
  if (!strcmp(c, "f12")) return f12_output_false_reject();
  fprintf(stderr, "usage: repro f1|f2 [n]|f3|f5g [len]|f5c [q1]|f6|f7 [0|1]|f8 [T]|f9\n");
  return 2;
}
