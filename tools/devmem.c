/* devmem.c - see devmem.h.  Built with DSV4KV_TOOLS_CUDA when the library
 * has its CUDA backend; a set of failing stubs otherwise. */
#include "devmem.h"

#include <stdio.h>
#include <string.h>

#ifdef DSV4KV_TOOLS_CUDA
#include <cuda_runtime.h>

static cudaStream_t stream;
static cudaEvent_t ev[2];
static int state = -1; /* -1 unknown, 0 unusable, 1 ready */
static char err[256];

static int ok(cudaError_t e, const char *what) {
  if (e == cudaSuccess) return 1;
  snprintf(err, sizeof err, "%s: %s", what, cudaGetErrorString(e));
  return 0;
}

int devmem_available(void) {
  if (state < 0) {
    int n = 0;
    state = ok(cudaGetDeviceCount(&n), "cudaGetDeviceCount") && n > 0 && ok(cudaSetDevice(0), "cudaSetDevice") &&
            ok(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate") &&
            ok(cudaEventCreate(&ev[0]), "cudaEventCreate") && ok(cudaEventCreate(&ev[1]), "cudaEventCreate");
    if (!state && !err[0]) snprintf(err, sizeof err, "no CUDA device is visible");
  }
  return state;
}

const char *devmem_error(void) { return err; }

void devmem_describe(char *buf, size_t len) {
  struct cudaDeviceProp p;
  int drv = 0, rt = 0;
  if (!devmem_available() || !ok(cudaGetDeviceProperties(&p, 0), "cudaGetDeviceProperties")) {
    snprintf(buf, len, "no CUDA device");
    return;
  }
  cudaDriverGetVersion(&drv);
  cudaRuntimeGetVersion(&rt);
  snprintf(buf, len, "%s (sm_%d%d, %d SMs, %.0f GiB), CUDA driver %d.%d, runtime %d.%d", p.name, p.major, p.minor,
           p.multiProcessorCount, (double)p.totalGlobalMem / (1 << 30), drv / 1000, drv % 1000 / 10, rt / 1000,
           rt % 1000 / 10);
}

void *devmem_stream(void) { return devmem_available() ? (void *)stream : NULL; }

void *devmem_alloc(size_t n) {
  void *p = NULL;
  if (!devmem_available() || !ok(cudaMalloc(&p, n ? n : 1), "cudaMalloc")) return NULL;
  return p;
}

void devmem_free(void *p) {
  if (p) cudaFree(p);
}

int devmem_upload(void *dev, const void *host, size_t n) {
  return n && !ok(cudaMemcpyAsync(dev, host, n, cudaMemcpyHostToDevice, stream), "cudaMemcpyAsync to the device");
}
int devmem_download(void *host, const void *dev, size_t n) {
  return n && !ok(cudaMemcpyAsync(host, dev, n, cudaMemcpyDeviceToHost, stream), "cudaMemcpyAsync from the device");
}
int devmem_fill(void *dev, int byte, size_t n) {
  return n && !ok(cudaMemsetAsync(dev, byte, n, stream), "cudaMemsetAsync");
}
int devmem_sync(void) { return !ok(cudaStreamSynchronize(stream), "cudaStreamSynchronize"); }
int devmem_copy(void *dst, const void *src, size_t n) {
  return n && !ok(cudaMemcpyAsync(dst, src, n, cudaMemcpyDeviceToDevice, stream), "cudaMemcpyAsync on the device");
}

int devmem_capture_begin(void) {
  return !ok(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal), "cudaStreamBeginCapture");
}
int devmem_capture_end(void **exec) {
  cudaGraph_t g = NULL;
  cudaGraphExec_t x = NULL;
  *exec = NULL;
  if (!ok(cudaStreamEndCapture(stream, &g), "cudaStreamEndCapture")) return -1;
  int bad = !ok(cudaGraphInstantiate(&x, g, 0), "cudaGraphInstantiate");
  cudaGraphDestroy(g);
  if (!bad) bad = !ok(cudaGraphUpload(x, stream), "cudaGraphUpload");
  if (bad && x) cudaGraphExecDestroy(x), x = NULL;
  *exec = x;
  return bad ? -1 : 0;
}
int devmem_graph_launch(void *exec) { return !ok(cudaGraphLaunch((cudaGraphExec_t)exec, stream), "cudaGraphLaunch"); }
void devmem_graph_free(void *exec) {
  if (exec) cudaGraphExecDestroy((cudaGraphExec_t)exec);
}

int devmem_mark(int which) { return !ok(cudaEventRecord(ev[which != 0], stream), "cudaEventRecord"); }

double devmem_elapsed_ms(void) {
  float ms = 0.0f;
  if (!ok(cudaEventElapsedTime(&ms, ev[0], ev[1]), "cudaEventElapsedTime")) return -1.0;
  return ms;
}

#else /* no CUDA in this build */

int devmem_available(void) { return 0; }
const char *devmem_error(void) { return "this build has no CUDA backend"; }
void devmem_describe(char *buf, size_t len) { snprintf(buf, len, "no CUDA device (CPU-only build)"); }
void *devmem_stream(void) { return NULL; }
void *devmem_alloc(size_t n) { (void)n; return NULL; }
void devmem_free(void *p) { (void)p; }
int devmem_upload(void *dev, const void *host, size_t n) { (void)dev, (void)host, (void)n; return -1; }
int devmem_download(void *host, const void *dev, size_t n) { (void)dev, (void)host, (void)n; return -1; }
int devmem_fill(void *dev, int byte, size_t n) { (void)dev, (void)byte, (void)n; return -1; }
int devmem_sync(void) { return -1; }
int devmem_copy(void *dst, const void *src, size_t n) { (void)dst, (void)src, (void)n; return -1; }
int devmem_capture_begin(void) { return -1; }
int devmem_capture_end(void **exec) { *exec = NULL; return -1; }
int devmem_graph_launch(void *exec) { (void)exec; return -1; }
void devmem_graph_free(void *exec) { (void)exec; }
int devmem_mark(int which) { (void)which; return -1; }
double devmem_elapsed_ms(void) { return -1.0; }

#endif
