/*
 * opcall.h - one call of each dsv4kv operation as a plain struct, shared by
 * everything that calls the ops (the CLI's golden runner, the op registry,
 * the fuzzer, benchmarks).
 *
 * A struct holds the call's tensors (pointers, not copies), scalars and cache
 * description; opcall_<op>_run makes the public call; opcall_<op>_bytes says
 * how many bytes the call moves (read + written), the count a benchmark turns
 * into GB/s:
 *
 *   insert       T x (1024 B bf16 in + record bytes out + 8 B slot)
 *   gather       gathered tokens x (record bytes in + 1024 B out); a
 *                request's tokens are its length (gather_lens, else
 *                seq_lens) clamped to [0, max_tokens - offset]
 *   index ops    every int32 / bool tensor they take or write, in full
 *   indexer      T x (256 B bf16 in + record bytes out + 8 B slot + 8 B
 *                position + one cos_sin row) + the norm weight
 *
 * Lengths are read only from host tensors (kDLCPU, kDLCUDAHost); for device
 * tensors gather counts every row of `out` (R x (max_tokens - offset)).
 * NULL tensors count 0 bytes, so the byte functions take any call.
 *
 * opcall (the tagged union) lets a table of cases run any op generically.
 */
#ifndef DSV4KV_TOOLS_OPCALL_H
#define DSV4KV_TOOLS_OPCALL_H

#include <stdint.h>

#include "dsv4kv.h"

typedef enum {
  OPCALL_INSERT = 0,
  OPCALL_GATHER,
  OPCALL_GLOBAL_TOPK,
  OPCALL_COMBINE,
  OPCALL_FLASHINFER,
  OPCALL_INDEXER,
  OPCALL_NUM_OPS
} opcall_op;

/* quantize_and_insert_k_cache (SPEC §3) */
typedef struct {
  const DLTensor *k, *k_cache;
  const dsv4kv_cache_desc *cache;
  const DLTensor *slot_mapping;
} opcall_insert;

/* dequantize_and_gather_k_cache (SPEC §4) */
typedef struct {
  const DLTensor *out, *k_cache;
  const dsv4kv_cache_desc *cache;
  const DLTensor *seq_lens, *gather_lens, *block_table; /* gather_lens may be NULL */
  int64_t offset;
} opcall_gather;

/* compute_global_topk_indices_and_lens (SPEC §5.1) */
typedef struct {
  const DLTensor *topk_indices, *token_to_req_indices, *block_table;
  int32_t block_size;
  const DLTensor *is_valid_token, *global_out, *lens_out;
} opcall_global_topk;

/* combine_topk_swa_indices (SPEC §5.2).  alloc = 1: the _alloc variant;
 * combined / lens are then ignored and the library's tensors come back in
 * combined_alloc / lens_alloc (release with opcall_combine_release). */
typedef struct {
  const DLTensor *topk_indices, *query_start_loc, *seq_lens, *gather_lens;
  int32_t window_size, compress_ratio, topk, M, N;
  const DLTensor *combined, *lens;
  int alloc;
  DLManagedTensor *combined_alloc, *lens_alloc;
} opcall_combine;

/* build_flashinfer_mixed_sparse_indices (SPEC §5.3); args may be NULL. */
typedef struct {
  const dsv4kv_flashinfer_args *args;
  const DLTensor *sparse_indices, *sparse_lens;
} opcall_flashinfer;

/* indexer_k_norm_rope_store (SPEC §6) */
typedef struct {
  const DLTensor *k_pre, *positions, *cos_sin_cache, *rms_norm_weight;
  float eps;
  const DLTensor *k_cache;
  const dsv4kv_cache_desc *cache;
  const DLTensor *kv_slot_mapping;
  int32_t compress_ratio;
} opcall_indexer;

dsv4kv_status opcall_insert_run(const opcall_insert *a, const dsv4kv_options *opt);
dsv4kv_status opcall_gather_run(const opcall_gather *a, const dsv4kv_options *opt);
dsv4kv_status opcall_global_topk_run(const opcall_global_topk *a, const dsv4kv_options *opt);
/* Releases the _alloc outputs of an earlier run first (a call may be rerun). */
dsv4kv_status opcall_combine_run(opcall_combine *a, const dsv4kv_options *opt);
void opcall_combine_release(opcall_combine *a);
dsv4kv_status opcall_flashinfer_run(const opcall_flashinfer *a, const dsv4kv_options *opt);
dsv4kv_status opcall_indexer_run(const opcall_indexer *a, const dsv4kv_options *opt);

int64_t opcall_insert_bytes(const opcall_insert *a);
int64_t opcall_gather_bytes(const opcall_gather *a);
int64_t opcall_global_topk_bytes(const opcall_global_topk *a);
int64_t opcall_combine_bytes(const opcall_combine *a);
int64_t opcall_flashinfer_bytes(const opcall_flashinfer *a);
int64_t opcall_indexer_bytes(const opcall_indexer *a);

/* Any op's call. */
typedef struct {
  opcall_op op;
  union {
    opcall_insert insert;
    opcall_gather gather;
    opcall_global_topk global_topk;
    opcall_combine combine;
    opcall_flashinfer flashinfer;
    opcall_indexer indexer;
  } u;
} opcall;

/* The op's public name ("quantize_and_insert_k_cache", ...); NULL if unknown. */
const char *opcall_op_name(opcall_op op);
dsv4kv_status opcall_run(opcall *c, const dsv4kv_options *opt);
int64_t opcall_bytes(const opcall *c);
/* Frees what a run allocated (the combine _alloc outputs); a no-op otherwise. */
void opcall_release(opcall *c);

/* Bytes of a tensor's elements (product of its shape x element size, strides
 * ignored); 0 for NULL. */
int64_t opcall_tensor_bytes(const DLTensor *t);

#endif /* DSV4KV_TOOLS_OPCALL_H */
