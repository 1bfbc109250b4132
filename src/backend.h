/* The backend contract: what src/ops/ hands a backend once every argument is
 * checked (raw pointers, 64-bit extents and strides; index VALUES read from
 * tensors are still untrusted: backends bounds-check each one, SPEC §7), the
 * table of operations each backend provides, and the one dispatch tail.
 *
 * Adding a backend: implement the six operations over these structs (the
 * CUDA backend in src/cuda/, as `extern "C"` launchers), fill a backend_ops
 * table, return it from cuda_backend_if_built() (defined in src/cuda/ when
 * the build has DSV4KV_WITH_CUDA, a stub in src/ops/dispatch.c otherwise),
 * and let src/ops/dispatch.c map the device type to it.  Kernels take every
 * in-record offset from formats/records.h and the arithmetic from
 * formats/ref.h (or a faster path tested byte for byte against it by the case
 * registry, tests/ops/).
 *
 * Reports on a GPU: count with atomicAdd into report->skipped / nonfinite,
 * keep the lowest key with atomicMin on report->first_key, and write reason
 * and values only for the entry whose key is the final minimum (e.g. a tiny
 * second kernel on the same stream re-derives them from first_key), so the
 * report names the same entry as the CPU's. */
#ifndef DSV4KV_BACKEND_H
#define DSV4KV_BACKEND_H

#include "internal.h"
#include "report.h"

typedef struct {
  tview k;            /* bf16 [T_k, 512] or [T_k, 128] (indexer), last dim contiguous */
  tview slots;        /* int64 [T] */
  int64_t T;
  cache_view cache;
} insert_args;

typedef struct {
  tview out;          /* bf16 [R_out, max_tokens, 512] */
  tview seq_lens;     /* int32 [R] */
  tview gather_lens;  /* int32 [R]; data NULL when absent */
  int has_gather_lens;
  tview block_table;  /* int32 [R_bt, max_pages] */
  int64_t R;
  int64_t offset;
  cache_view cache;
} gather_args;

typedef struct {
  tview topk, req, block_table, valid, global_out, lens_out;
  int64_t T, K, R, P;
  int32_t block_size;
} global_topk_args;

typedef struct {
  tview topk, qsl, seq_lens, gather_lens, combined, lens;
  int64_t T, R, C;
  int32_t window_size, compress_ratio, topk_n, M, N;
} combine_args;

typedef struct {
  tview dswa, dcomp, dcomp_lens, dvalid, ptopk, qsl, seq_lens, replay, req, swa_bt, comp_bt, out, lens;
  int has_dcomp, has_dcomp_lens, has_dvalid, local;
  int64_t D, P, S, Dk, K4, Wp, R, n_req_ids;
  int32_t swa_bs, swa_span, c_bs, c_span, window_size, compress_ratio, topk;
} flashinfer_args;

typedef struct {
  tview k_pre, positions, cos_sin, weight, slots;
  dt_kind cos_sin_dt, weight_dt;
  int64_t T;
  float eps;
  int32_t compress_ratio;
  cache_view cache;
} indexer_args;

/* How a call runs, once its arguments are checked. */
typedef struct {
  int num_threads;     /* CPU: requested threads, 0 = the runtime's default  */
  void *stream;        /* CUDA: the caller's cudaStream_t (NULL = legacy)    */
  int check_nonfinite; /* count NaN / Inf (inserts, indexer store)           */
  int distinct_slots;  /* CUDA: the caller's promise of no duplicate slots    */
} exec_opts;

/* The contract: one table of operations per backend.  Each operation gets
 * checked arguments (raw pointers, 64-bit extents and strides; index VALUES
 * still untrusted: the backend bounds-checks every one, SPEC §7) and fills
 * `report` (formats nothing: src/ops/report.c makes the message).
 *
 * A synchronous backend (async = 0) gets a host report, already initialised,
 * and has filled it when it returns.  An asynchronous one (async = 1) gets
 * the caller's device report (or NULL when the caller gave none); its kernels
 * reset and fill it in stream order, and the call returns once the work is
 * enqueued: no host synchronization, no allocation.
 *
 * Returns DSV4KV_OK, or DSV4KV_ERR_ALLOC / DSV4KV_ERR_BACKEND (with the
 * message set) when the backend itself failed. */
typedef struct backend_ops {
  const char *name;
  int async;
  dsv4kv_status (*insert)(const insert_args *a, const exec_opts *o, dsv4kv_report *r);
  dsv4kv_status (*gather)(const gather_args *a, const exec_opts *o, dsv4kv_report *r);
  dsv4kv_status (*global_topk)(const global_topk_args *a, const exec_opts *o, dsv4kv_report *r);
  dsv4kv_status (*combine)(const combine_args *a, const exec_opts *o, dsv4kv_report *r);
  dsv4kv_status (*flashinfer)(const flashinfer_args *a, const exec_opts *o, dsv4kv_report *r);
  dsv4kv_status (*indexer_store)(const indexer_args *a, const exec_opts *o, dsv4kv_report *r);
} backend_ops;

/* The backends of this build (src/cpu/backend_cpu.c, src/cuda/); NULL when
 * not built. */
extern const backend_ops cpu_backend;
const backend_ops *cuda_backend_if_built(void);
/* Why cuda_backend_if_built() is NULL: "this build has no CUDA backend", or
 * what CUDA reported ("" when the backend can run). */
const char *cuda_unavailable_reason(void);
/* dsv4kv_warmup on a CUDA device (src/cuda/backend_cuda.cu): loads the
 * kernels of every op (the indexer's only when `indexer`); *kernels gets how
 * many.  A stub answering DSV4KV_ERR_BACKEND_NOT_BUILT without the backend. */
dsv4kv_status cuda_warmup(int device_id, int indexer, int32_t *kernels);

/* The one tail of every entry point (src/ops/dispatch.c): checks that the
 * views (NULL entries: absent optional tensors) are on one device, picks
 * that device's backend, runs `op` on `args` (the op's *_args struct) and
 * turns the report into the status, the counters and the message. */
/* The device check alone (for the allocating entry point): one device for
 * every view, *type set to it. */
dsv4kv_status op_device(const tview *const *views, const char *const *names, int n, DLDeviceType *type);

dsv4kv_status op_dispatch(op_id op, const void *args, const tview *const *views,
                          const char *const *names, int n, const dsv4kv_options *opt);

#endif
