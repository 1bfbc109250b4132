/* The least a kernel launch costs on this machine, measured the way
 * `dsv4kv bench --device cuda` measures its eager figures (bench/NOTES-gpu.md,
 * issue 11's decode targets): host wall time of one launch onto an idle
 * stream, and the GPU time between two events around it (host side
 * included), medians of RUNS.  Rows: a 4-byte cudaMemsetAsync (the bench's
 * "launch floor"), an empty kernel with no parameters, an empty kernel with a
 * 256-byte parameter struct (about the size of the library's), and the
 * latter 4 times back to back (launches behind launches).  No library code:
 * the floor any C API call that launches one kernel pays.
 *
 *   build: nvcc -O3 -arch=sm_90 -o launch_floor bench/launch_floor.cu */
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

enum { RUNS = 2000 };

#define CHECK(x)                                                                        \
  do {                                                                                  \
    cudaError_t e_ = (x);                                                               \
    if (e_ != cudaSuccess) {                                                            \
      fprintf(stderr, "launch_floor: %s: %s\n", #x, cudaGetErrorString(e_));            \
      exit(1);                                                                          \
    }                                                                                   \
  } while (0)

typedef struct {
  unsigned char b[256];
} params256;

__global__ void empty_kernel(void) {}
__global__ void empty_kernel_256(params256 p) {
  if (p.b[255] == 1 && threadIdx.x == 1000) p.b[0] = 0; /* keeps the parameter */
}

static double now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e6 + ts.tv_nsec * 1e-3;
}

static int cmp_d(const void *a, const void *b) {
  const double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}
static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp_d);
  return v[n / 2];
}

static void *dev4;
static params256 prm;

/* What one timed call launches (kind 0..3). */
static void launch(int kind, cudaStream_t s) {
  if (kind == 0) CHECK(cudaMemsetAsync(dev4, 0, 4, s));
  if (kind == 1) empty_kernel<<<1, 32, 0, s>>>();
  if (kind >= 2)
    for (int i = 0; i < (kind == 3 ? 4 : 1); i++) empty_kernel_256<<<1, 32, 0, s>>>(prm);
  CHECK(cudaGetLastError());
}

int main(void) {
  static const char *const names[] = {"cudaMemsetAsync of 4 bytes", "empty kernel, no parameters",
                                      "empty kernel, 256-byte parameters", "4 such kernels back to back"};
  cudaStream_t s;
  cudaEvent_t e0, e1;
  CHECK(cudaStreamCreate(&s));
  CHECK(cudaEventCreate(&e0));
  CHECK(cudaEventCreate(&e1));
  CHECK(cudaMalloc(&dev4, 4));
  prm.b[255] = 2;
  static double host[RUNS], gpu[RUNS];
  printf("%-36s %10s %10s   (medians of %d; the stream idle before each)\n", "launch", "host us", "event us", RUNS);
  for (int kind = 0; kind < 4; kind++) {
    for (int i = 0; i < 20; i++) launch(kind, s); /* warm-up: modules loaded */
    CHECK(cudaStreamSynchronize(s));
    for (int r = 0; r < RUNS; r++) {
      CHECK(cudaEventRecord(e0, s));
      const double t0 = now_us();
      launch(kind, s);
      host[r] = now_us() - t0;
      CHECK(cudaEventRecord(e1, s));
      CHECK(cudaEventSynchronize(e1));
      float ms;
      CHECK(cudaEventElapsedTime(&ms, e0, e1));
      gpu[r] = 1e3 * ms;
    }
    printf("%-36s %10.2f %10.2f\n", names[kind], median(host, RUNS), median(gpu, RUNS));
  }
  CHECK(cudaFree(dev4));
  return 0;
}
