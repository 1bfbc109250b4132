/* Sparse-attention index preparation: checks and dispatch (SPEC §5). */
#include <stdlib.h>
#include <string.h>

#include "backend.h"

/* ---- §5.1 ---------------------------------------------------------------- */
dsv4kv_status dsv4kv_compute_global_topk_indices_and_lens(
    const DLTensor *topk_indices, const DLTensor *token_to_req_indices,
    const DLTensor *block_table, int32_t block_size, const DLTensor *is_valid_token,
    const DLTensor *global_out, const DLTensor *lens_out, const dsv4kv_options *opt) {
  global_topk_args a = {0};
  dsv4kv_status st;
  if ((st = tview_make(&a.topk, topk_indices, "topk_indices", DT_I32, 2))) return st;
  a.T = a.topk.shape[0];
  a.K = a.topk.shape[1];
  if ((st = tview_make(&a.req, token_to_req_indices, "token_to_req_indices", DT_I32, 1))) return st;
  if ((st = tview_dim_ge(&a.req, "token_to_req_indices", 0, a.T))) return st;
  if ((st = tview_make(&a.block_table, block_table, "block_table", DT_I32, 2))) return st;
  a.R = a.block_table.shape[0];
  a.P = a.block_table.shape[1];
  if (block_size <= 0)
    return dsv4kv_fail(DSV4KV_ERR_VALUE, "block_size = %d; must be > 0", block_size);
  a.block_size = block_size;
  if ((st = tview_make(&a.valid, is_valid_token, "is_valid_token", DT_BOOL, 1))) return st;
  if ((st = tview_dim_ge(&a.valid, "is_valid_token", 0, a.T))) return st;
  if ((st = tview_make(&a.global_out, global_out, "global_out", DT_I32, 2))) return st;
  if ((st = tview_dim_eq(&a.global_out, "global_out", 0, a.T))) return st;
  if ((st = tview_dim_eq(&a.global_out, "global_out", 1, a.K))) return st;
  if ((st = tview_make(&a.lens_out, lens_out, "lens_out", DT_I32, 1))) return st;
  if ((st = tview_dim_eq(&a.lens_out, "lens_out", 0, a.T))) return st;
  if ((st = tview_output(&a.global_out, "global_out")) || (st = tview_output(&a.lens_out, "lens_out")) ||
      (st = tview_disjoint(&a.global_out, "global_out", &a.lens_out, "lens_out")))
    return st;

  const tview *v[] = {&a.topk, &a.req, &a.block_table, &a.valid, &a.global_out, &a.lens_out};
  const char *n[] = {"topk_indices", "token_to_req_indices", "block_table", "is_valid_token",
                     "global_out", "lens_out"};
  /* global_out may be topk_indices itself (each entry is read before it is
   * written, on every backend); any other overlap with an input is refused */
  if (!tview_same(&a.global_out, &a.topk) &&
      (st = tview_apart_from_input(&a.global_out, "global_out", &a.topk, "topk_indices")))
    return st;
  if ((st = tview_apart_from_input(&a.lens_out, "lens_out", &a.topk, "topk_indices")) ||
      (st = tview_outputs_apart(v + 1, n + 1, 3, 5)))
    return st;
  return op_dispatch(OP_GLOBAL_TOPK, &a, v, n, 6, opt);
}

/* ---- §5.2 ---------------------------------------------------------------- */
static dsv4kv_status combine_check(combine_args *a, const DLTensor *topk_indices,
                                   const DLTensor *query_start_loc, const DLTensor *seq_lens,
                                   const DLTensor *gather_lens, int32_t window_size,
                                   int32_t compress_ratio, int32_t topk, int32_t M, int32_t N) {
  dsv4kv_status st;
  if ((st = tview_make(&a->topk, topk_indices, "topk_indices", DT_I32, 2))) return st;
  a->T = a->topk.shape[0];
  if ((st = tview_make(&a->qsl, query_start_loc, "query_start_loc", DT_I32, 1))) return st;
  if (a->qsl.shape[0] < 1)
    return dsv4kv_fail(DSV4KV_ERR_SHAPE, "query_start_loc is empty; expected R + 1 >= 1 entries");
  a->R = a->qsl.shape[0] - 1;
  if ((st = tview_make(&a->seq_lens, seq_lens, "seq_lens", DT_I32, 1))) return st;
  if ((st = tview_dim_eq(&a->seq_lens, "seq_lens", 0, a->R))) return st;
  if ((st = tview_make(&a->gather_lens, gather_lens, "gather_lens", DT_I32, 1))) return st;
  if ((st = tview_dim_eq(&a->gather_lens, "gather_lens", 0, a->R))) return st;
  if (window_size <= 0)
    return dsv4kv_fail(DSV4KV_ERR_VALUE, "window_size = %d; must be > 0", window_size);
  if (compress_ratio < 0)
    return dsv4kv_fail(DSV4KV_ERR_VALUE, "compress_ratio = %d; must be >= 0 (0 = SWA-only)", compress_ratio);
  if (topk < 0) return dsv4kv_fail(DSV4KV_ERR_VALUE, "topk = %d; must be >= 0", topk);
  if (topk > a->topk.shape[1])
    return dsv4kv_fail(DSV4KV_ERR_VALUE, "topk = %d exceeds topk_indices' width %lld", topk,
                       (long long)a->topk.shape[1]);
  if (M < 0 || N < 0)
    return dsv4kv_fail(DSV4KV_ERR_VALUE, "M = %d, N = %d; both must be >= 0", M, N);
  a->window_size = window_size;
  a->compress_ratio = compress_ratio;
  a->topk_n = topk;
  a->M = M;
  a->N = N;
  return DSV4KV_OK;
}

static dsv4kv_status combine_outputs(combine_args *a, const DLTensor *combined, const DLTensor *lens) {
  dsv4kv_status st;
  if ((st = tview_make(&a->combined, combined, "combined", DT_I32, 2))) return st;
  if ((st = tview_dim_eq(&a->combined, "combined", 0, a->T))) return st;
  if ((st = tview_dim_ge(&a->combined, "combined", 1, (int64_t)a->topk_n + a->window_size))) return st;
  a->C = a->combined.shape[1];
  if ((st = tview_make(&a->lens, lens, "lens", DT_I32, 1))) return st;
  if ((st = tview_dim_eq(&a->lens, "lens", 0, a->T))) return st;
  if ((st = tview_output(&a->combined, "combined")) || (st = tview_output(&a->lens, "lens")) ||
      (st = tview_disjoint(&a->combined, "combined", &a->lens, "lens")))
    return st;
  return DSV4KV_OK;
}

static dsv4kv_status combine_run(combine_args *a, const dsv4kv_options *opt) {
  const tview *v[] = {&a->topk, &a->qsl, &a->seq_lens, &a->gather_lens, &a->combined, &a->lens};
  const char *n[] = {"topk_indices", "query_start_loc", "seq_lens", "gather_lens", "combined", "lens"};
  dsv4kv_status st = tview_outputs_apart(v, n, 4, 6);
  if (st) return st;
  return op_dispatch(OP_COMBINE, a, v, n, 6, opt);
}

dsv4kv_status dsv4kv_combine_topk_swa_indices(const DLTensor *topk_indices,
                                              const DLTensor *query_start_loc,
                                              const DLTensor *seq_lens,
                                              const DLTensor *gather_lens, int32_t window_size,
                                              int32_t compress_ratio, int32_t topk, int32_t M,
                                              int32_t N, const DLTensor *combined,
                                              const DLTensor *lens, const dsv4kv_options *opt) {
  combine_args a = {0};
  dsv4kv_status st;
  if ((st = combine_check(&a, topk_indices, query_start_loc, seq_lens, gather_lens, window_size,
                          compress_ratio, topk, M, N)))
    return st;
  if ((st = combine_outputs(&a, combined, lens))) return st;
  return combine_run(&a, opt);
}

/* A CPU int32 tensor owned through DLManagedTensor: one allocation holding
 * the struct, the shape and the data. */
typedef struct {
  DLManagedTensor m;
  int64_t shape[2];
} owned_i32;

static void owned_free(DLManagedTensor *self) { free(self); }

static DLManagedTensor *owned_i32_new(int ndim, int64_t d0, int64_t d1, int32_t fill) {
  int64_t numel = ndim == 2 ? d0 * d1 : d0;
  owned_i32 *o = malloc(sizeof *o + (size_t)numel * sizeof(int32_t));
  if (!o) return NULL;
  memset(&o->m, 0, sizeof o->m);
  o->shape[0] = d0;
  o->shape[1] = d1;
  int32_t *data = (int32_t *)(o + 1);
  for (int64_t i = 0; i < numel; i++) data[i] = fill;
  o->m.dl_tensor.data = data;
  o->m.dl_tensor.device = (DLDevice){kDLCPU, 0};
  o->m.dl_tensor.ndim = ndim;
  o->m.dl_tensor.dtype = (DLDataType){kDLInt, 32, 1};
  o->m.dl_tensor.shape = o->shape;
  o->m.deleter = owned_free;
  return &o->m;
}

void dsv4kv_managed_free(DLManagedTensor *t) {
  if (t && t->deleter) t->deleter(t);
}

dsv4kv_status dsv4kv_combine_topk_swa_indices_alloc(
    const DLTensor *topk_indices, const DLTensor *query_start_loc, const DLTensor *seq_lens,
    const DLTensor *gather_lens, int32_t window_size, int32_t compress_ratio, int32_t topk,
    int32_t M, int32_t N, DLManagedTensor **combined_out, DLManagedTensor **lens_out,
    const dsv4kv_options *opt) {
  if (!combined_out) return dsv4kv_fail(DSV4KV_ERR_NULL, "combined_out is NULL");
  if (!lens_out) return dsv4kv_fail(DSV4KV_ERR_NULL, "lens_out is NULL");
  *combined_out = NULL;
  *lens_out = NULL;
  combine_args a = {0};
  dsv4kv_status st;
  if ((st = combine_check(&a, topk_indices, query_start_loc, seq_lens, gather_lens, window_size,
                          compress_ratio, topk, M, N)))
    return st;
  const tview *v[] = {&a.topk, &a.qsl, &a.seq_lens, &a.gather_lens};
  const char *n[] = {"topk_indices", "query_start_loc", "seq_lens", "gather_lens"};
  DLDeviceType dev;
  if ((st = op_device(v, n, 4, &dev))) return st;
  if (dev == kDLCUDA || dev == kDLCUDAManaged)
    return dsv4kv_fail(DSV4KV_ERR_BACKEND_NOT_BUILT,
                       "the inputs are on CUDA; this call allocates CPU outputs only (pass your own outputs)");
  if (dev != kDLCPU)
    return dsv4kv_fail(DSV4KV_ERR_DEVICE, "the inputs are on device type %d, which no backend of this build runs",
                       (int)dev);
  int64_t C = ((int64_t)topk + window_size + 127) / 128 * 128;
  /* A cap on what the library allocates for the caller: 2^28 entries (1 GiB),
   * some 14x the largest real batch (16K tokens x 1152 columns). */
  if (sat_mul(a.T, C) > ((int64_t)1 << 28))
    return dsv4kv_fail(DSV4KV_ERR_ALLOC,
                       "combined would have %lld x %lld entries, over the 2^28 this call allocates; pass your own outputs",
                       (long long)a.T, (long long)C);
  DLManagedTensor *comb = owned_i32_new(2, a.T, C, -1);
  DLManagedTensor *ln = owned_i32_new(1, a.T, 0, 0);
  if (!comb || !ln) {
    dsv4kv_managed_free(comb);
    dsv4kv_managed_free(ln);
    return dsv4kv_fail(DSV4KV_ERR_ALLOC, "out of memory allocating combined [%lld, %lld]",
                       (long long)a.T, (long long)C);
  }
  if ((st = combine_outputs(&a, &comb->dl_tensor, &ln->dl_tensor)) ||
      ((st = combine_run(&a, opt)) != DSV4KV_OK && st != DSV4KV_WARN_SKIPPED)) {
    dsv4kv_managed_free(comb);
    dsv4kv_managed_free(ln);
    return st;
  }
  *combined_out = comb;
  *lens_out = ln;
  return st;
}

/* ---- §5.3 ---------------------------------------------------------------- */
static int64_t round_up4(int64_t x) { return (x + 3) / 4 * 4; }

dsv4kv_status dsv4kv_build_flashinfer_mixed_sparse_indices(const dsv4kv_flashinfer_args *in,
                                                           const DLTensor *sparse_indices,
                                                           const DLTensor *sparse_lens,
                                                           const dsv4kv_options *opt) {
  if (!in) return dsv4kv_fail(DSV4KV_ERR_NULL, "args is NULL");
  flashinfer_args a = {0};
  dsv4kv_status st;
  if ((st = tview_make(&a.dswa, in->decode_swa_indices, "decode_swa_indices", DT_I32, 2))) return st;
  a.D = a.dswa.shape[0];
  a.S = a.dswa.shape[1];
  tview_absent(&a.dcomp); /* (the kernels form its row addresses either way) */
  if (in->decode_compressed_indices) {
    if ((st = tview_make(&a.dcomp, in->decode_compressed_indices, "decode_compressed_indices", DT_I32, 2)))
      return st;
    if ((st = tview_dim_eq(&a.dcomp, "decode_compressed_indices", 0, a.D))) return st;
    a.has_dcomp = 1;
    a.Dk = a.dcomp.shape[1];
  }
  a.local = in->decode_compressed_indices_are_local != 0;
  if (in->decode_compressed_topk_lens) {
    if ((st = tview_make(&a.dcomp_lens, in->decode_compressed_topk_lens, "decode_compressed_topk_lens",
                         DT_I32, 1)))
      return st;
    if ((st = tview_dim_ge(&a.dcomp_lens, "decode_compressed_topk_lens", 0, a.D))) return st;
    a.has_dcomp_lens = 1;
  }
  if (in->decode_is_valid_token) {
    if ((st = tview_make(&a.dvalid, in->decode_is_valid_token, "decode_is_valid_token", DT_BOOL, 1)))
      return st;
    if ((st = tview_dim_ge(&a.dvalid, "decode_is_valid_token", 0, a.D))) return st;
    a.has_dvalid = 1;
  }
  if ((st = tview_make(&a.ptopk, in->prefill_topk_indices, "prefill_topk_indices", DT_I32, 2))) return st;
  a.P = a.ptopk.shape[0];
  a.Wp = a.ptopk.shape[1];
  if ((st = tview_make(&a.qsl, in->query_start_loc, "query_start_loc", DT_I32, 1))) return st;
  if (a.qsl.shape[0] < 1)
    return dsv4kv_fail(DSV4KV_ERR_SHAPE, "query_start_loc is empty; expected R + 1 >= 1 entries");
  a.R = a.qsl.shape[0] - 1;
  if ((st = tview_make(&a.seq_lens, in->seq_lens, "seq_lens", DT_I32, 1))) return st;
  if ((st = tview_dim_ge(&a.seq_lens, "seq_lens", 0, a.R))) return st;
  if ((st = tview_make(&a.replay, in->replay_start, "replay_start", DT_I32, 1))) return st;
  if ((st = tview_dim_ge(&a.replay, "replay_start", 0, a.R))) return st;
  if ((st = tview_make(&a.req, in->token_to_req_indices, "token_to_req_indices", DT_I32, 1))) return st;
  if ((st = tview_dim_ge(&a.req, "token_to_req_indices", 0, a.D + a.P))) return st;
  if ((st = tview_make(&a.swa_bt, in->swa_block_table, "swa_block_table", DT_I32, 2))) return st;
  if (in->compressed_block_table) {
    if ((st = tview_make(&a.comp_bt, in->compressed_block_table, "compressed_block_table", DT_I32, 2)))
      return st;
  } else {
    a.comp_bt = a.swa_bt;
  }
  if (in->swa_block_size <= 0)
    return dsv4kv_fail(DSV4KV_ERR_VALUE, "swa_block_size = %d; must be > 0", in->swa_block_size);
  if (in->compressed_block_size <= 0)
    return dsv4kv_fail(DSV4KV_ERR_VALUE, "compressed_block_size = %d; must be > 0", in->compressed_block_size);
  if (in->swa_block_span < 0 || in->compressed_block_span < 0)
    return dsv4kv_fail(DSV4KV_ERR_VALUE, "swa_block_span = %d, compressed_block_span = %d; must be >= 0 (0 = block size)",
                       in->swa_block_span, in->compressed_block_span);
  /* A span below the block size would map two slots to one physical token. */
  if (in->swa_block_span && in->swa_block_span < in->swa_block_size)
    return dsv4kv_fail(DSV4KV_ERR_VALUE, "swa_block_span = %d is less than swa_block_size = %d: slots would alias",
                       in->swa_block_span, in->swa_block_size);
  if (in->compressed_block_span && in->compressed_block_span < in->compressed_block_size)
    return dsv4kv_fail(DSV4KV_ERR_VALUE,
                       "compressed_block_span = %d is less than compressed_block_size = %d: slots would alias",
                       in->compressed_block_span, in->compressed_block_size);
  if (in->window_size <= 0 || in->window_size > a.S)
    return dsv4kv_fail(DSV4KV_ERR_VALUE, "window_size = %d; must be in [1, %lld] (the width of decode_swa_indices)",
                       in->window_size, (long long)a.S);
  if (in->compress_ratio < 0)
    return dsv4kv_fail(DSV4KV_ERR_VALUE, "compress_ratio = %d; must be >= 0", in->compress_ratio);
  if (in->topk < 0) return dsv4kv_fail(DSV4KV_ERR_VALUE, "topk = %d; must be >= 0", in->topk);
  a.swa_bs = in->swa_block_size;
  a.swa_span = in->swa_block_span ? in->swa_block_span : in->swa_block_size;
  a.c_bs = in->compressed_block_size;
  a.c_span = in->compressed_block_span ? in->compressed_block_span : in->compressed_block_size;
  a.window_size = in->window_size;
  a.compress_ratio = in->compress_ratio;
  a.topk = in->topk;
  a.K4 = round_up4(a.topk > a.Dk ? a.topk : a.Dk);

  if ((st = tview_make(&a.out, sparse_indices, "sparse_indices", DT_I32, 2))) return st;
  if ((st = tview_dim_eq(&a.out, "sparse_indices", 0, a.D + a.P))) return st;
  if ((st = tview_dim_eq(&a.out, "sparse_indices", 1, a.S + a.K4))) return st;
  if ((st = tview_make(&a.lens, sparse_lens, "sparse_lens", DT_I32, 1))) return st;
  if ((st = tview_dim_eq(&a.lens, "sparse_lens", 0, a.D + a.P))) return st;
  if ((st = tview_output(&a.out, "sparse_indices")) || (st = tview_output(&a.lens, "sparse_lens")) ||
      (st = tview_disjoint(&a.out, "sparse_indices", &a.lens, "sparse_lens")))
    return st;

  const tview *v[] = {&a.dswa, a.has_dcomp ? &a.dcomp : NULL, a.has_dcomp_lens ? &a.dcomp_lens : NULL,
                      a.has_dvalid ? &a.dvalid : NULL, &a.ptopk, &a.qsl, &a.seq_lens, &a.replay,
                      &a.req, &a.swa_bt, &a.comp_bt, &a.out, &a.lens};
  const char *n[] = {"decode_swa_indices", "decode_compressed_indices", "decode_compressed_topk_lens",
                     "decode_is_valid_token", "prefill_topk_indices", "query_start_loc", "seq_lens",
                     "replay_start", "token_to_req_indices", "swa_block_table", "compressed_block_table",
                     "sparse_indices", "sparse_lens"};
  if ((st = tview_outputs_apart(v, n, 11, 13))) return st;
  return op_dispatch(OP_FLASHINFER, &a, v, n, 13, opt);
}
