/* access_bound.cu - the bandwidth the inserts' and gathers' memory accesses
 * allow on this GPU, with no arithmetic: kernels that move exactly the bytes
 * of `dsv4kv bench`'s insert and gather configurations, at the same
 * addresses and with the same warp-a-row mapping as src/cuda/insert_cuda.cu
 * and src/cuda/gather_cuda.cu, but store bytes taken straight from what they
 * loaded.  A figure here is a bound for the op of the same configuration:
 * what its loads and stores cost when nothing else does.  Beside them, a
 * device-to-device copy of 2 GiB (the bench's ceiling) and a copy kernel of
 * 16-byte lanes.  Not part of the library; the `bound` step of
 * scripts/gpu-check.sh builds and runs it on a GPU machine.
 *
 *   usage: access_bound [runs]      (median of `runs` back-to-back launches,
 *                                    default 30; L2 not flushed, as the bench's
 *                                    graph figures)
 *
 * Layouts (docs/SPEC.md §2), block size 64, pages in a shuffled order:
 *   V4     page = 64 x 576 B values, then 64 x 8 B scales
 *   MXFP8  64 records of 528 B (512 codes, 16 scales)
 *   NVFP4  64 records of 288 B (256 packed codes, 32 scales) */
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(x)                                                                             \
  do {                                                                                       \
    cudaError_t e_ = (x);                                                                    \
    if (e_ != cudaSuccess) {                                                                 \
      fprintf(stderr, "access_bound: %s: %s (line %d)\n", #x, cudaGetErrorString(e_), __LINE__); \
      exit(1);                                                                               \
    }                                                                                        \
  } while (0)

enum { BS = 64, ROW = 1024, THREADS = 128 };
enum { V4 = 0, MXFP8 = 1, NVFP4 = 2 };
static const int record_bytes[3] = {584, 528, 288};
static const char *record_name[3] = {"v4", "mxfp8", "nvfp4"};

static __device__ __forceinline__ uint4 mix(uint4 a, uint4 b) {
  return make_uint4(a.x ^ b.x, a.y ^ b.y, a.z ^ b.z, a.w ^ b.w);
}

/* Insert: row t's 1024 bf16 bytes (two 16-byte loads a lane) and its slot
 * (8 bytes), then the record's bytes at the slot. */
template <int rec>
__global__ void __launch_bounds__(THREADS) insert_access(const uint8_t *k, const int64_t *slots, int64_t T,
                                                         uint8_t *cache) {
  const int lane = threadIdx.x & 31;
  const int64_t t = ((int64_t)blockIdx.x * THREADS + threadIdx.x) >> 5;
  if (t >= T) return;
  const uint4 *src = (const uint4 *)(k + t * ROW + 32 * lane);
  const uint4 a = src[0], b = src[1];
  const int64_t slot = slots[t];
  uint8_t *page = cache + (slot >> 6) * (int64_t)(BS * record_bytes[rec]);
  const int64_t pos = slot & (BS - 1);
  const uint4 m = mix(a, b);
  if (rec == V4) {
    uint8_t *v = page + pos * 576;
    if (lane < 28) {
      *(uint4 *)(v + 16 * lane) = m;
    } else {
      *(uint4 *)(v + 448 + 32 * (lane - 28)) = a;
      *(uint4 *)(v + 448 + 32 * (lane - 28) + 16) = b;
    }
    if (lane < 2) *(uint32_t *)(page + BS * 576 + pos * 8 + 4 * lane) = m.x;
  } else if (rec == MXFP8) {
    uint8_t *r = page + pos * 528;
    *(uint4 *)(r + 16 * lane) = m;
    if (lane < 4) *(uint32_t *)(r + 512 + 4 * lane) = m.y;
  } else {
    uint8_t *r = page + pos * 288;
    *(uint2 *)(r + 8 * lane) = make_uint2(m.x, m.y);
    if (lane < 8) *(uint32_t *)(r + 256 + 4 * lane) = m.z;
  }
}

/* Gather: token i of request r (L tokens each) from page bt[r][i / 64]:
 * the record's bytes (each lane its part, the scales by every lane that
 * decodes with them), then 1024 bytes of output a token. */
template <int rec>
__global__ void __launch_bounds__(THREADS) gather_access(const uint8_t *cache, const int32_t *bt, int64_t R, int64_t L,
                                                         uint8_t *out) {
  const int lane = threadIdx.x & 31;
  const int64_t w = ((int64_t)blockIdx.x * THREADS + threadIdx.x) >> 5;
  if (w >= R * L) return;
  const int64_t r = w / L, i = w % L, per = (L + BS - 1) / BS;
  const uint8_t *page = cache + (int64_t)bt[r * per + (i >> 6)] * (BS * record_bytes[rec]);
  const int64_t pos = i & (BS - 1);
  uint4 a, b;
  if (rec == V4) {
    const uint8_t *v = page + pos * 576;
    const uint32_t s = *(const uint32_t *)(page + BS * 576 + pos * 8 + 4 * (lane >= 16));
    if (lane < 28) {
      a = *(const uint4 *)(v + 16 * lane);
      b = make_uint4(a.y, a.x, a.w, a.z ^ s);
    } else {
      a = *(const uint4 *)(v + 448 + 32 * (lane - 28));
      b = *(const uint4 *)(v + 448 + 32 * (lane - 28) + 16);
    }
  } else if (rec == MXFP8) {
    const uint8_t *q = page + pos * 528;
    const uint32_t s = *(const uint32_t *)(q + 512 + 4 * (lane >> 3));
    a = *(const uint4 *)(q + 16 * lane);
    b = make_uint4(a.y, a.x, a.w, a.z ^ s);
  } else {
    const uint8_t *q = page + pos * 288;
    const uint32_t s = *(const uint32_t *)(q + 256 + 4 * (lane >> 2));
    const uint2 c = *(const uint2 *)(q + 8 * lane);
    a = make_uint4(c.x, c.y, c.x ^ s, c.y);
    b = make_uint4(c.y, c.x, c.y ^ s, c.x);
  }
  uint4 *dst = (uint4 *)(out + w * ROW + 32 * lane);
  dst[0] = a, dst[1] = b;
}

/* A copy of n bytes, 16 bytes a thread, grid-stride. */
__global__ void copy16(const uint4 *src, uint4 *dst, int64_t n16) {
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n16; i += (int64_t)gridDim.x * blockDim.x)
    dst[i] = src[i];
}

static int cmp_double(const void *a, const void *b) {
  const double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static cudaEvent_t ev0, ev1;
static int sms = 132;
static int runs = 30;

/* Median microseconds of `runs` launches of f(arg) after 3 warm-up ones. */
static double time_us(void (*f)(void *), void *arg) {
  double t[200];
  for (int i = 0; i < 3; i++) f(arg);
  CHECK(cudaGetLastError());
  CHECK(cudaDeviceSynchronize());
  for (int i = 0; i < runs; i++) {
    float ms;
    CHECK(cudaEventRecord(ev0, 0));
    f(arg);
    CHECK(cudaEventRecord(ev1, 0));
    CHECK(cudaEventSynchronize(ev1));
    CHECK(cudaEventElapsedTime(&ms, ev0, ev1));
    t[i] = 1e3 * ms;
  }
  CHECK(cudaGetLastError());
  qsort(t, (size_t)runs, sizeof t[0], cmp_double);
  return t[runs / 2];
}

typedef struct {
  int rec;
  int64_t T, R, L;
  uint8_t *k, *cache, *out, *a, *b;
  int64_t *slots;
  int32_t *bt;
  size_t n;
} job;

static unsigned blocks_for(int64_t warps) { return (unsigned)((warps * 32 + THREADS - 1) / THREADS); }

static void run_insert(void *p) {
  const job *j = (const job *)p;
  const unsigned g = blocks_for(j->T);
  if (j->rec == V4) insert_access<V4><<<g, THREADS>>>(j->k, j->slots, j->T, j->cache);
  if (j->rec == MXFP8) insert_access<MXFP8><<<g, THREADS>>>(j->k, j->slots, j->T, j->cache);
  if (j->rec == NVFP4) insert_access<NVFP4><<<g, THREADS>>>(j->k, j->slots, j->T, j->cache);
}
static void run_gather(void *p) {
  const job *j = (const job *)p;
  const unsigned g = blocks_for(j->R * j->L);
  if (j->rec == V4) gather_access<V4><<<g, THREADS>>>(j->cache, j->bt, j->R, j->L, j->out);
  if (j->rec == MXFP8) gather_access<MXFP8><<<g, THREADS>>>(j->cache, j->bt, j->R, j->L, j->out);
  if (j->rec == NVFP4) gather_access<NVFP4><<<g, THREADS>>>(j->cache, j->bt, j->R, j->L, j->out);
}
static void run_memcpy(void *p) {
  const job *j = (const job *)p;
  CHECK(cudaMemcpyAsync(j->b, j->a, j->n, cudaMemcpyDeviceToDevice, 0));
}
static void run_copy16(void *p) {
  const job *j = (const job *)p;
  copy16<<<sms * 16, 256>>>((const uint4 *)j->a, (uint4 *)j->b, (int64_t)(j->n / 16));
}

/* Pages 0..pages-1 in a random order (a fixed seed), as the bench's. */
static void shuffled(int64_t *perm, int64_t pages, uint64_t *s) {
  for (int64_t i = 0; i < pages; i++) perm[i] = i;
  for (int64_t i = pages - 1; i > 0; i--) {
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    const int64_t j = (int64_t)((*s >> 33) % (uint64_t)(i + 1)), x = perm[i];
    perm[i] = perm[j], perm[j] = x;
  }
}

int main(int argc, char **argv) {
  if (argc > 1) runs = atoi(argv[1]);
  if (runs < 1 || runs > 200) return fprintf(stderr, "usage: access_bound [runs 1..200]\n"), 2;
  cudaDeviceProp prop;
  CHECK(cudaGetDeviceProperties(&prop, 0));
  sms = prop.multiProcessorCount;
  CHECK(cudaEventCreate(&ev0));
  CHECK(cudaEventCreate(&ev1));
  printf("# access_bound on %s (%d SMs), median of %d launches\n", prop.name, prop.multiProcessorCount, runs);
  printf("%-34s %10s %10s %9s %8s\n", "config", "MB", "us", "GB/s", "% copy");
  job j;
  memset(&j, 0, sizeof j);
  j.n = (size_t)2 << 30;
  CHECK(cudaMalloc((void **)&j.a, j.n));
  CHECK(cudaMalloc((void **)&j.b, j.n));
  CHECK(cudaMemset(j.a, 0x3c, j.n));
  const double copy_us = time_us(run_memcpy, &j), copy = 2.0 * (double)j.n / copy_us / 1e3;
  const double k16 = 2.0 * (double)j.n / time_us(run_copy16, &j) / 1e3;
  printf("%-34s %10.1f %10.1f %9.0f %7.1f%%\n", "memcpy d2d 2 GiB (the ceiling)", 2.0 * j.n / 1e6, copy_us, copy, 100.0);
  printf("%-34s %10.1f %10s %9.0f %7.1f%%\n", "copy kernel, 16 B a thread", 2.0 * j.n / 1e6, "-", k16, 100 * k16 / copy);
  CHECK(cudaFree(j.a));
  CHECK(cudaFree(j.b));
  j.a = j.b = NULL;
  uint64_t seed = 12345;
  /* inserts */
  const int64_t Ns[2] = {65536, 524288};
  for (int ni = 0; ni < 2; ni++) {
    const int64_t N = Ns[ni], pages = N / BS;
    int64_t *perm = (int64_t *)malloc((size_t)pages * 8), *slots = (int64_t *)malloc((size_t)N * 8);
    if (!perm || !slots) return fprintf(stderr, "access_bound: out of host memory\n"), 1;
    shuffled(perm, pages, &seed);
    for (int64_t t = 0; t < N; t++) slots[t] = perm[t / BS] * BS + t % BS;
    CHECK(cudaMalloc((void **)&j.k, (size_t)N * ROW));
    CHECK(cudaMalloc((void **)&j.slots, (size_t)N * 8));
    CHECK(cudaMalloc((void **)&j.cache, (size_t)N * 584));
    CHECK(cudaMemset(j.k, 0x5a, (size_t)N * ROW));
    CHECK(cudaMemcpy(j.slots, slots, (size_t)N * 8, cudaMemcpyHostToDevice));
    for (int rec = 0; rec < 3; rec++) {
      j.rec = rec, j.T = N;
      const double us = time_us(run_insert, &j), bytes = (double)N * (ROW + 8 + record_bytes[rec]);
      char name[64];
      snprintf(name, sizeof name, "insert_%s N=%lld", record_name[rec], (long long)N);
      printf("%-34s %10.2f %10.1f %9.0f %7.1f%%\n", name, bytes / 1e6, us, bytes / us / 1e3, 100 * bytes / us / 1e3 / copy);
    }
    CHECK(cudaFree(j.k));
    CHECK(cudaFree(j.slots));
    CHECK(cudaFree(j.cache));
    free(perm), free(slots);
  }
  /* gathers */
  const int64_t RL[3][2] = {{64, 256}, {8, 8192}, {64, 16384}};
  for (int gi = 0; gi < 3; gi++) {
    const int64_t R = RL[gi][0], L = RL[gi][1], per = (L + BS - 1) / BS, pages = R * per;
    int64_t *perm = (int64_t *)malloc((size_t)pages * 8);
    int32_t *bt = (int32_t *)malloc((size_t)pages * 4);
    if (!perm || !bt) return fprintf(stderr, "access_bound: out of host memory\n"), 1;
    shuffled(perm, pages, &seed);
    for (int64_t i = 0; i < pages; i++) bt[i] = (int32_t)perm[i];
    CHECK(cudaMalloc((void **)&j.cache, (size_t)pages * BS * 584));
    CHECK(cudaMalloc((void **)&j.bt, (size_t)pages * 4));
    CHECK(cudaMalloc((void **)&j.out, (size_t)R * L * ROW));
    CHECK(cudaMemset(j.cache, 0x21, (size_t)pages * BS * 584));
    CHECK(cudaMemcpy(j.bt, bt, (size_t)pages * 4, cudaMemcpyHostToDevice));
    for (int rec = 0; rec < 3; rec++) {
      j.rec = rec, j.R = R, j.L = L;
      const double us = time_us(run_gather, &j), bytes = (double)R * L * (record_bytes[rec] + ROW);
      char name[64];
      snprintf(name, sizeof name, "gather_%s %lldx%lld", record_name[rec], (long long)R, (long long)L);
      printf("%-34s %10.2f %10.1f %9.0f %7.1f%%\n", name, bytes / 1e6, us, bytes / us / 1e3, 100 * bytes / us / 1e3 / copy);
    }
    CHECK(cudaFree(j.cache));
    CHECK(cudaFree(j.bt));
    CHECK(cudaFree(j.out));
    free(perm), free(bt);
  }
  return 0;
}
