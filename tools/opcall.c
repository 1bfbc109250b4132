/* opcall.c - the calls and byte counts of opcall.h. */
#include "opcall.h"

#include <stddef.h>
#include <string.h>

/* ------------------------------------------------------------------ calls */
dsv4kv_status opcall_insert_run(const opcall_insert *a, const dsv4kv_options *opt) {
  return dsv4kv_quantize_and_insert_k_cache(a->k, a->k_cache, a->cache, a->slot_mapping, opt);
}

dsv4kv_status opcall_gather_run(const opcall_gather *a, const dsv4kv_options *opt) {
  return dsv4kv_dequantize_and_gather_k_cache(a->out, a->k_cache, a->cache, a->seq_lens, a->gather_lens,
                                              a->block_table, a->offset, opt);
}

dsv4kv_status opcall_global_topk_run(const opcall_global_topk *a, const dsv4kv_options *opt) {
  return dsv4kv_compute_global_topk_indices_and_lens(a->topk_indices, a->token_to_req_indices, a->block_table,
                                                     a->block_size, a->is_valid_token, a->global_out,
                                                     a->lens_out, opt);
}

void opcall_combine_release(opcall_combine *a) {
  dsv4kv_managed_free(a->combined_alloc);
  dsv4kv_managed_free(a->lens_alloc);
  a->combined_alloc = a->lens_alloc = NULL;
}

dsv4kv_status opcall_combine_run(opcall_combine *a, const dsv4kv_options *opt) {
  opcall_combine_release(a);
  if (a->alloc)
    return dsv4kv_combine_topk_swa_indices_alloc(a->topk_indices, a->query_start_loc, a->seq_lens,
                                                 a->gather_lens, a->window_size, a->compress_ratio, a->topk,
                                                 a->M, a->N, &a->combined_alloc, &a->lens_alloc, opt);
  return dsv4kv_combine_topk_swa_indices(a->topk_indices, a->query_start_loc, a->seq_lens, a->gather_lens,
                                         a->window_size, a->compress_ratio, a->topk, a->M, a->N, a->combined,
                                         a->lens, opt);
}

dsv4kv_status opcall_flashinfer_run(const opcall_flashinfer *a, const dsv4kv_options *opt) {
  return dsv4kv_build_flashinfer_mixed_sparse_indices(a->args, a->sparse_indices, a->sparse_lens, opt);
}

dsv4kv_status opcall_indexer_run(const opcall_indexer *a, const dsv4kv_options *opt) {
  return dsv4kv_indexer_k_norm_rope_store(a->k_pre, a->positions, a->cos_sin_cache, a->rms_norm_weight, a->eps,
                                          a->k_cache, a->cache, a->kv_slot_mapping, a->compress_ratio, opt);
}

/* ------------------------------------------------------------------ bytes */
static int64_t elem_bytes(const DLTensor *t) { return ((int64_t)t->dtype.bits * t->dtype.lanes + 7) / 8; }

static int64_t dim(const DLTensor *t, int i) { return t && t->ndim > i && t->shape ? t->shape[i] : 0; }

int64_t opcall_tensor_bytes(const DLTensor *t) {
  if (!t || !t->shape || t->ndim < 0) return 0;
  int64_t n = elem_bytes(t);
  for (int i = 0; i < t->ndim; i++) n *= t->shape[i] > 0 ? t->shape[i] : 0;
  return n;
}

static int64_t record_bytes(const dsv4kv_cache_desc *c) { return c ? dsv4kv_record_bytes(c->record) : 0; }

int64_t opcall_insert_bytes(const opcall_insert *a) {
  int64_t T = dim(a->slot_mapping, 0);
  return T * (2 * DSV4KV_HEAD_DIM + record_bytes(a->cache) + 8);
}

/* Element i of a host int32 [n] tensor, or 0 with *ok = 0 when it cannot be read here. */
static int32_t host_i32(const DLTensor *t, int64_t i, int *ok) {
  int host = t->device.device_type == kDLCPU || t->device.device_type == kDLCUDAHost;
  if (!host || !t->data || t->ndim != 1 || t->dtype.code != kDLInt || t->dtype.bits != 32 || i >= t->shape[0]) {
    *ok = 0;
    return 0;
  }
  int64_t stride = t->strides ? t->strides[0] : 1;
  int32_t v;
  memcpy(&v, (const char *)t->data + t->byte_offset + i * stride * 4, 4);
  return v;
}

int64_t opcall_gather_bytes(const opcall_gather *a) {
  int64_t R = dim(a->seq_lens, 0), rows = dim(a->out, 1) - (a->offset > 0 ? a->offset : 0);
  if (rows < 0 || a->offset < 0) rows = 0;
  int64_t tokens = 0;
  int ok = a->seq_lens != NULL;
  for (int64_t r = 0; r < R && ok; r++) {
    int64_t L = a->gather_lens ? host_i32(a->gather_lens, r, &ok) : host_i32(a->seq_lens, r, &ok);
    tokens += L < 0 ? 0 : L > rows ? rows : L;
  }
  if (!ok) tokens = R * rows; /* lengths not readable here: the bound */
  return tokens * (record_bytes(a->cache) + 2 * DSV4KV_HEAD_DIM);
}

int64_t opcall_global_topk_bytes(const opcall_global_topk *a) {
  return opcall_tensor_bytes(a->topk_indices) + opcall_tensor_bytes(a->token_to_req_indices) +
         opcall_tensor_bytes(a->block_table) + opcall_tensor_bytes(a->is_valid_token) +
         opcall_tensor_bytes(a->global_out) + opcall_tensor_bytes(a->lens_out);
}

int64_t opcall_combine_bytes(const opcall_combine *a) {
  int64_t in = opcall_tensor_bytes(a->topk_indices) + opcall_tensor_bytes(a->query_start_loc) +
               opcall_tensor_bytes(a->seq_lens) + opcall_tensor_bytes(a->gather_lens);
  if (!a->alloc) return in + opcall_tensor_bytes(a->combined) + opcall_tensor_bytes(a->lens);
  /* the library's outputs: [T, round_up(topk + window, 128)] and [T] */
  int64_t T = dim(a->topk_indices, 0), C = ((int64_t)a->topk + a->window_size + 127) / 128 * 128;
  return in + 4 * T * (C > 0 ? C : 0) + 4 * T;
}

int64_t opcall_flashinfer_bytes(const opcall_flashinfer *a) {
  const dsv4kv_flashinfer_args *f = a->args;
  int64_t n = opcall_tensor_bytes(a->sparse_indices) + opcall_tensor_bytes(a->sparse_lens);
  if (!f) return n;
  const DLTensor *in[] = {f->decode_swa_indices, f->decode_compressed_indices, f->decode_compressed_topk_lens,
                          f->decode_is_valid_token, f->prefill_topk_indices, f->query_start_loc,
                          f->seq_lens, f->replay_start, f->token_to_req_indices, f->swa_block_table,
                          f->compressed_block_table};
  for (size_t i = 0; i < sizeof in / sizeof in[0]; i++) n += opcall_tensor_bytes(in[i]);
  return n;
}

int64_t opcall_indexer_bytes(const opcall_indexer *a) {
  int64_t T = dim(a->kv_slot_mapping, 0);
  int64_t cs_row = a->cos_sin_cache ? 64 * elem_bytes(a->cos_sin_cache) : 0;
  int64_t per_token = 2 * DSV4KV_INDEXER_HEAD_DIM + record_bytes(a->cache) + 8 + 8 + cs_row;
  return T * per_token + opcall_tensor_bytes(a->rms_norm_weight);
}

/* ------------------------------------------------------------------ generic */
static const char *const op_names[OPCALL_NUM_OPS] = {
    "quantize_and_insert_k_cache",          "dequantize_and_gather_k_cache",
    "compute_global_topk_indices_and_lens", "combine_topk_swa_indices",
    "build_flashinfer_mixed_sparse_indices", "indexer_k_norm_rope_store",
};

const char *opcall_op_name(opcall_op op) {
  return (unsigned)op < OPCALL_NUM_OPS ? op_names[op] : NULL;
}

dsv4kv_status opcall_run(opcall *c, const dsv4kv_options *opt) {
  switch (c->op) {
    case OPCALL_INSERT: return opcall_insert_run(&c->u.insert, opt);
    case OPCALL_GATHER: return opcall_gather_run(&c->u.gather, opt);
    case OPCALL_GLOBAL_TOPK: return opcall_global_topk_run(&c->u.global_topk, opt);
    case OPCALL_COMBINE: return opcall_combine_run(&c->u.combine, opt);
    case OPCALL_FLASHINFER: return opcall_flashinfer_run(&c->u.flashinfer, opt);
    case OPCALL_INDEXER: return opcall_indexer_run(&c->u.indexer, opt);
    case OPCALL_NUM_OPS: break;
  }
  return DSV4KV_ERR_VALUE;
}

int64_t opcall_bytes(const opcall *c) {
  switch (c->op) {
    case OPCALL_INSERT: return opcall_insert_bytes(&c->u.insert);
    case OPCALL_GATHER: return opcall_gather_bytes(&c->u.gather);
    case OPCALL_GLOBAL_TOPK: return opcall_global_topk_bytes(&c->u.global_topk);
    case OPCALL_COMBINE: return opcall_combine_bytes(&c->u.combine);
    case OPCALL_FLASHINFER: return opcall_flashinfer_bytes(&c->u.flashinfer);
    case OPCALL_INDEXER: return opcall_indexer_bytes(&c->u.indexer);
    case OPCALL_NUM_OPS: break;
  }
  return 0;
}

void opcall_release(opcall *c) {
  if (c->op == OPCALL_COMBINE) opcall_combine_release(&c->u.combine);
}
