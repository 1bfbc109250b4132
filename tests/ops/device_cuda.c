/* The registry's CUDA device (device.h): plain cudaMalloc'd buffers, and one
 * non-blocking stream for the copies and the calls (so nothing leans on the
 * legacy stream's implicit ordering); every copy is complete when it returns. */
#include <cuda_runtime.h>
#include <stdio.h>

#include "device.h"

static void *cuda_alloc(size_t n) {
  void *p = NULL;
  if (cudaMalloc(&p, n ? n : 1) != cudaSuccess) {
    fprintf(stderr, "cudaMalloc(%zu): %s\n", n, cudaGetErrorString(cudaGetLastError()));
    return NULL;
  }
  return p;
}
static void cuda_release(void *p) { cudaFree(p); }
static int check(cudaError_t e, const char *what) {
  if (e == cudaSuccess) return 0;
  fprintf(stderr, "%s: %s\n", what, cudaGetErrorString(e));
  return 1;
}
static cudaStream_t ops_stream;
static int cuda_upload(void *dst, const void *src, size_t n) {
  return check(cudaMemcpyAsync(dst, src, n, cudaMemcpyHostToDevice, ops_stream), "cudaMemcpyAsync to the device") ||
         check(cudaStreamSynchronize(ops_stream), "cudaStreamSynchronize after an upload");
}
static int cuda_download(void *dst, const void *src, size_t n) {
  return check(cudaMemcpyAsync(dst, src, n, cudaMemcpyDeviceToHost, ops_stream), "cudaMemcpyAsync from the device") ||
         check(cudaStreamSynchronize(ops_stream), "cudaStreamSynchronize after a download");
}
static int cuda_sync(void *stream) {
  return check(cudaStreamSynchronize((cudaStream_t)stream), "cudaStreamSynchronize");
}

const ops_device *ops_cuda_device(void) {
  static ops_device d = {"cuda", {kDLCUDA, 0}, NULL, cuda_alloc, cuda_release, cuda_upload, cuda_download, cuda_sync};
  static int ready = 0;
  if (!ready) {
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess || n < 1) return NULL;
    if (cudaStreamCreateWithFlags(&ops_stream, cudaStreamNonBlocking) != cudaSuccess) return NULL;
    d.stream = ops_stream;
    ready = 1;
  }
  return &d;
}
