/* The CUDA backend's table (backend.h), the host side of every launch
 * (device, stream, status), the report reset, and dsv4kv_warmup's loading of
 * the kernels a model will launch. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cuda_runtime_api.h>

#include "cuda/index_ops_cuda.cuh"

static const backend_ops cuda_backend = {
    "cuda", 1, cuda_insert, cuda_gather, cuda_global_topk, cuda_combine, cuda_flashinfer, cuda_indexer_store,
};

/* Why the backend cannot run here ("" when it can). */
static char unusable[256];

/* Compute capability major of device d (cached; the kernels are sm_90 code
 * and compute_90 PTX, which older GPUs cannot run). */
static int device_major(int d) {
  static volatile int major[64];
  if (d < 0) return 0;
  if (d < 64 && major[d]) return major[d];
  int m = 0;
  if (cudaDeviceGetAttribute(&m, cudaDevAttrComputeCapabilityMajor, d) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  if (d < 64) major[d] = m;
  return m;
}

/* Whether a device here can run the kernels; `unusable` says why not.
 * Under pthread_once: the reason is a string, which two threads' first calls
 * must not write at once. */
static int usable;
static void probe_usable(void) {
  int n = 0, ok = 0;
  cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) {
    cudaGetLastError(); /* leave no error for the caller's next check */
    snprintf(unusable, sizeof unusable, "the CUDA backend is built but the CUDA runtime (%d.%d, linked in) reports: %s%s",
             CUDART_VERSION / 1000, CUDART_VERSION % 1000 / 10, cudaGetErrorString(e),
             e == cudaErrorInsufficientDriver ? " (no NVIDIA driver is loaded, or it is older than that runtime)" : "");
  } else if (n < 1) {
    snprintf(unusable, sizeof unusable, "the CUDA backend is built but no CUDA device is visible");
  } else {
    for (int d = 0; d < n && !ok; d++) ok = device_major(d) >= 9;
    if (!ok)
      snprintf(unusable, sizeof unusable,
               "the CUDA backend is built for compute capability 9.0 and newer; no visible device has it");
  }
  usable = ok;
}

extern "C" const backend_ops *cuda_backend_if_built(void) {
  /* A build with the backend on a machine that cannot run it (no driver, a
   * driver older than the runtime, no GPU, only pre-Hopper GPUs) has no CUDA
   * backend to offer.  Asked once: a process's devices do not change. */
  static pthread_once_t once = PTHREAD_ONCE_INIT;
  pthread_once(&once, probe_usable);
  return usable ? &cuda_backend : NULL;
}

extern "C" const char *cuda_unavailable_reason(void) {
  cuda_backend_if_built();
  return unusable;
}

dsv4kv_status cuda_enter(cuda_call *c, int device_id, const exec_opts *o) {
  c->stream = (cudaStream_t)o->stream;
  c->dev = device_id;
  cudaError_t e = cudaGetDevice(&c->prev);
  if (e == cudaSuccess && c->prev != device_id) e = cudaSetDevice(device_id);
  if (e != cudaSuccess) {
    cudaGetLastError();
    return dsv4kv_fail(DSV4KV_ERR_BACKEND, "CUDA device %d cannot be used: %s", device_id, cudaGetErrorString(e));
  }
  if (device_major(device_id) < 9) {
    if (c->prev != device_id) cudaSetDevice(c->prev);
    return dsv4kv_fail(DSV4KV_ERR_BACKEND, "CUDA device %d has compute capability %d.x; dsv4kv's kernels need 9.0 or newer",
                       device_id, device_major(device_id));
  }
  return DSV4KV_OK;
}

dsv4kv_status cuda_leave(cuda_call *c, const char *what) {
  cudaError_t e = cudaGetLastError();
  if (c->prev != c->dev) cudaSetDevice(c->prev);
  /* The launch error of this thread: ours, or one that earlier work left
   * pending (a sticky error after a fault).  Either way the call's work is
   * not done; it is reported, not silently cleared. */
  if (e != cudaSuccess)
    return dsv4kv_fail(DSV4KV_ERR_BACKEND, "CUDA: %s on device %d: %s (launch status of this thread)", what, c->dev,
                       cudaGetErrorString(e));
  return DSV4KV_OK;
}

/* report_init on the device. */
__global__ void report_reset_kernel(dsv4kv_report *r, int32_t op) {
  r->skipped = 0;
  r->nonfinite = 0;
  r->first_key = INT64_MAX;
  r->reason = 0;
  r->op = op;
  for (int i = 0; i < 6; i++) r->values[i] = 0;
}

void cuda_report_reset(cuda_call *c, dsv4kv_report *rep, op_id op) {
  if (rep) report_reset_kernel<<<1, 1, 0, c->stream>>>(rep, (int32_t)op);
}

/* ---- DEDUP_MARK (cuda_common.cuh) ---------------------------------------- */
__global__ void __launch_bounds__(CUDA_BLOCK) mark_reset_kernel(mark_params p) {
  mark_reset_rows(&p, (int64_t)blockIdx.x * blockDim.x + threadIdx.x, (int64_t)gridDim.x * blockDim.x);
}
__global__ void __launch_bounds__(CUDA_BLOCK) mark_max_kernel(mark_params p) {
  mark_max_rows(&p, (int64_t)blockIdx.x * blockDim.x + threadIdx.x, (int64_t)gridDim.x * blockDim.x);
}

int cuda_dedup_forced(void) {
  static volatile int forced = -2;
  if (forced == -2) {
    const char *e = getenv("DSV4KV_CUDA_DEDUP");
    forced = !e ? -1 : !strcmp(e, "warp") ? DEDUP_WARP : !strcmp(e, "shared") ? DEDUP_SHARED
                    : !strcmp(e, "mark") ? DEDUP_MARK : !strcmp(e, "global") ? DEDUP_GLOBAL
                    : !strcmp(e, "fused") ? DEDUP_FUSED : -1;
  }
  return forced;
}

int cuda_index_threads_forced(void) {
  static volatile int forced = -2;
  if (forced == -2) {
    const char *e = getenv("DSV4KV_CUDA_INDEX_THREADS");
    const int n = e ? atoi(e) : 0;
    forced = n == 32 || n == 64 || n == 128 || n == 256 ? n : 0;
  }
  return forced;
}

int cuda_index_rows_forced(void) {
  static volatile int forced = -1;
  if (forced == -1) {
    const char *e = getenv("DSV4KV_CUDA_INDEX_ROWS");
    forced = !e ? INDEX_ROWS_ANY
             : !strcmp(e, "warp") ? INDEX_ROWS_WARP
             : !strcmp(e, "block") ? INDEX_ROWS_BLOCK
                                   : INDEX_ROWS_ANY;
  }
  return forced;
}

void cuda_mark_rows(cudaStream_t stream, const mark_params *p) {
  if (p->d.mode != DEDUP_MARK) return;
  int64_t b = (p->T + CUDA_BLOCK - 1) / CUDA_BLOCK;
  const unsigned grid = b > 4096 ? 4096u : (unsigned)b;
  mark_reset_kernel<<<grid, CUDA_BLOCK, 0, stream>>>(*p);
  mark_max_kernel<<<grid, CUDA_BLOCK, 0, stream>>>(*p);
}

const void *const cuda_report_kernels[] = {(const void *)report_reset_kernel, (const void *)mark_reset_kernel,
                                           (const void *)mark_max_kernel, NULL};

/* ---- warm-up -------------------------------------------------------------- */

static int load_kernels(const void *const *k, int *loaded, char *err, size_t n) {
  for (; *k; k++) {
    cudaFuncAttributes fa;
    cudaError_t e = cudaFuncGetAttributes(&fa, *k); /* loads the function's module */
    if (e != cudaSuccess) {
      snprintf(err, n, "%s", cudaGetErrorString(e));
      cudaGetLastError();
      return -1;
    }
    (*loaded)++;
  }
  return 0;
}

extern "C" dsv4kv_status cuda_warmup(int device_id, int indexer, int32_t *kernels) {
  int prev = 0, loaded = 0;
  char err[160] = "";
  cudaError_t e = cudaGetDevice(&prev);
  if (e == cudaSuccess && prev != device_id) e = cudaSetDevice(device_id);
  if (e != cudaSuccess) {
    cudaGetLastError();
    return dsv4kv_fail(DSV4KV_ERR_BACKEND, "dsv4kv_warmup: CUDA device %d cannot be used: %s", device_id,
                       cudaGetErrorString(e));
  }
  int bad = load_kernels(cuda_report_kernels, &loaded, err, sizeof err) ||
            load_kernels(cuda_insert_kernels, &loaded, err, sizeof err) ||
            load_kernels(cuda_gather_kernels, &loaded, err, sizeof err) ||
            load_kernels(cuda_index_kernels, &loaded, err, sizeof err) ||
            load_kernels(cuda_index_rows4_kernels, &loaded, err, sizeof err) ||
            load_kernels(cuda_flashinfer_kernels, &loaded, err, sizeof err) ||
            (indexer && load_kernels(cuda_indexer_kernels, &loaded, err, sizeof err));
  if (!bad && indexer) cuda_indexer_fused_query(device_id);
  if (prev != device_id) cudaSetDevice(prev);
  if (kernels) *kernels = loaded;
  if (bad)
    return dsv4kv_fail(DSV4KV_ERR_BACKEND, "dsv4kv_warmup: loading a kernel on CUDA device %d failed: %s", device_id,
                       err);
  return DSV4KV_OK;
}
