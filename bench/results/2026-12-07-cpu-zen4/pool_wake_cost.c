/* What a second thread costs and gains on combine T 256's rows (256 rows of
 * 512 int32 read + 640 written), outside the library: one thread; a worker
 * that watches for S us after each job and then sleeps on a condition
 * variable (S = 0: sleeps at once), the caller signalling it when asleep;
 * calls back to back or G us apart.  Prints medians of 2000 calls, the
 * calls the worker joined, and the mean time of the caller's signal.
 *   gcc -O2 -pthread pool_wake_cost.c && ./a.out S G   (S < 0: one thread) */
#include <immintrin.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { T = 256, K = 512, W = 128, C = 640, CHUNK = 16, RUNS = 2000 };
static int32_t *in, *out;
static _Atomic long gen, next_chunk, taken, done_count;
static _Atomic int asleep;
static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static double spin_ns;
static long joined;

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e9 + ts.tv_nsec;
}
__attribute__((target("avx2"))) static void row(int32_t *o, const int32_t *topk, int32_t mr, int32_t first) {
  const __m256i add = _mm256_set1_epi32(mr);
  for (int j = 0; j < K; j += 8)
    _mm256_storeu_si256((__m256i *)(o + j), _mm256_add_epi32(_mm256_loadu_si256((const __m256i *)(topk + j)), add));
  __m256i v = _mm256_add_epi32(_mm256_set1_epi32(first), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  for (int j = 0; j < W; j += 8, v = _mm256_add_epi32(v, _mm256_set1_epi32(8))) _mm256_storeu_si256((__m256i *)(o + K + j), v);
}
static void work(void) {
  for (long c; (c = atomic_fetch_add(&next_chunk, 1)) * CHUNK < T;)
    for (int t = (int)c * CHUNK; t < (c + 1) * CHUNK; t++) row(out + (size_t)t * C, in + (size_t)t * K, t * 7, t * 3);
}
static void *worker(void *arg) {
  for (long seen = 0;;) {
    long g = atomic_load(&gen);
    for (double t0 = now(); g == seen && now() - t0 < spin_ns; g = atomic_load(&gen)) _mm_pause();
    if (g == seen) {
      pthread_mutex_lock(&m);
      atomic_store(&asleep, 1);
      while ((g = atomic_load(&gen)) == seen) pthread_cond_wait(&cv, &m);
      atomic_store(&asleep, 0);
      pthread_mutex_unlock(&m);
    }
    seen = g;
    long expect = g - 1; /* joins unless the caller has closed the job */
    if (atomic_compare_exchange_strong(&taken, &expect, g)) joined++, work(), atomic_fetch_add(&done_count, 1);
  }
  return arg;
}
static int cmp(const void *a, const void *b) { return *(const double *)a < *(const double *)b ? -1 : 1; }

int main(int argc, char **argv) {
  const double s_us = argc > 1 ? atof(argv[1]) : 50, gap_us = argc > 2 ? atof(argv[2]) : 0;
  static double ts[RUNS];
  double signal_ns = 0;
  spin_ns = s_us * 1e3;
  in = aligned_alloc(64, (size_t)T * K * 4), out = aligned_alloc(64, (size_t)T * C * 4);
  for (int i = 0; i < T * K; i++) in[i] = rand();
  memset(out, 0, (size_t)T * C * 4);
  pthread_t th;
  if (s_us >= 0) pthread_create(&th, NULL, worker, NULL);
  for (long it = 0; it < RUNS; it++) {
    for (double g0 = now(); now() - g0 < gap_us * 1e3;) {
    }
    const double t0 = now();
    atomic_store(&next_chunk, 0);
    if (s_us < 0) {
      work();
    } else {
      const long d0 = atomic_load(&done_count), g = it + 1;
      atomic_store(&gen, g);
      const double s0 = now();
      if (atomic_load(&asleep)) pthread_mutex_lock(&m), pthread_cond_signal(&cv), pthread_mutex_unlock(&m);
      signal_ns += now() - s0;
      work();
      long expect = g - 1; /* close the job: a worker that has not joined is let off */
      if (!atomic_compare_exchange_strong(&taken, &expect, g))
        while (atomic_load(&done_count) == d0) _mm_pause();
    }
    ts[it] = now() - t0;
  }
  qsort(ts, RUNS, sizeof ts[0], cmp);
  printf("watch %g us, gap %g us: median %.2f us (p10 %.2f, p90 %.2f); worker joined %ld of %d; signal %.2f us a call\n",
         s_us, gap_us, ts[RUNS / 2] / 1e3, ts[RUNS / 10] / 1e3, ts[RUNS * 9 / 10] / 1e3, joined, RUNS, signal_ns / RUNS / 1e3);
  return 0;
}
