/* The CPU backend's thread pool (src/cpu/pool.c) on its own: every chunk of
 * every job runs exactly once, on a thread number inside the team, whichever
 * way the team came about (a long call that wakes workers, a short call that
 * shares with the workers awake, a stream of short calls, workers that never
 * watch), including jobs back to back and jobs from two application threads
 * at once (one of them then runs alone).  Correctness only: which calls a
 * worker joins depends on the scheduler, so it is printed, not asserted. */
#define _XOPEN_SOURCE 700 /* mkdtemp */

#include <omp.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cpu/cpu.h"

enum { MAX_ITEMS = 4096 };

typedef struct {
  cpu_chunks chunks;
  _Atomic int hits[MAX_ITEMS];
  _Atomic int bad_thread, by_workers;
  int64_t n;
} count_job;

static void count_task(void *vctx, int t, int nt) {
  count_job *j = vctx;
  int64_t lo, hi;
  if (t < 0 || t >= nt || nt < 1) atomic_fetch_add(&j->bad_thread, 1);
  while (cpu_chunk_next(&j->chunks, &lo, &hi))
    for (int64_t i = lo; i < hi; i++) {
      atomic_fetch_add(&j->hits[i], 1);
      if (t > 0) atomic_fetch_add(&j->by_workers, 1);
    }
}

/* One job of n items in chunks of `chunk` on the team cpu_team gives for
 * est_ns (threads: the requested count); checks every item ran once. */
static int run_one(int64_t n, int64_t chunk, double est_ns, int threads) {
  static count_job j; /* one application thread at a time uses it */
  memset(&j, 0, sizeof j);
  j.n = n;
  cpu_chunks_init(&j.chunks, n, chunk);
  const exec_opts o = {.num_threads = threads};
  cpu_run(cpu_team(&o, est_ns), count_task, &j);
  for (int64_t i = 0; i < n; i++)
    if (atomic_load(&j.hits[i]) != 1) fail_msg("item %lld of %lld ran %d times", (long long)i, (long long)n, atomic_load(&j.hits[i]));
  assert_int_equal(atomic_load(&j.bad_thread), 0);
  return atomic_load(&j.by_workers) > 0;
}

/* Long calls (they wake workers), short ones (they share with the awake
 * ones or stay alone) and tiny ones, mixed, back to back and with gaps. */
static void mixed_jobs(void **state) {
  (void)state;
  unsigned s = 12345;
  int shared_short = 0, shared_long = 0;
  for (int it = 0; it < 20000; it++) {
    s = s * 1103515245u + 12345u;
    const int kind = (int)(s >> 16) % 4;
    const int64_t n = 1 + (int64_t)((s >> 8) % MAX_ITEMS);
    const double est = kind == 0 ? 1e6 : kind == 1 ? 2e4 : kind == 2 ? 1e4 : 1e3;
    const int got = run_one(n, 1 + (int64_t)(s % 64), est, 1 + (int)(s >> 28) % 4);
    if (kind == 0) shared_long += got;
    if (kind == 1 || kind == 2) shared_short += got;
    if (it % 5000 == 4999) {
      struct timespec ts = {0, 300000}; /* past the watch: the workers sleep */
      nanosleep(&ts, NULL);
    }
  }
  print_message("workers took part in %d long and %d short jobs of 20000 (%d processors)\n", shared_long,
                shared_short, omp_get_num_procs());
}

/* Two application threads calling at once: one holds the pool, the other
 * runs its jobs alone; both give every item once. */
typedef struct {
  int64_t seed, failures;
} caller_arg;
static void *caller_main(void *p) {
  caller_arg *a = p;
  unsigned s = (unsigned)a->seed;
  for (int it = 0; it < 3000; it++) {
    s = s * 1103515245u + 12345u;
    count_job *j = calloc(1, sizeof *j);
    if (!j) {
      a->failures++;
      continue;
    }
    const int64_t n = 1 + (int64_t)((s >> 8) % MAX_ITEMS);
    cpu_chunks_init(&j->chunks, n, 1 + (int64_t)(s % 32));
    const exec_opts o = {.num_threads = 4};
    cpu_run(cpu_team(&o, (s >> 20) % 2 ? 1e6 : 2e4), count_task, j);
    for (int64_t i = 0; i < n; i++) a->failures += atomic_load(&j->hits[i]) != 1;
    a->failures += atomic_load(&j->bad_thread) != 0;
    free(j);
  }
  return NULL;
}
static void two_callers(void **state) {
  (void)state;
  pthread_t th[2];
  caller_arg a[2] = {{1, 0}, {2, 0}};
  for (int i = 0; i < 2; i++) assert_int_equal(pthread_create(&th[i], NULL, caller_main, &a[i]), 0);
  for (int i = 0; i < 2; i++) pthread_join(th[i], NULL);
  assert_int_equal(a[0].failures, 0);
  assert_int_equal(a[1].failures, 0);
}

/* cpu_cgroup_quota on fake trees: v2 and v1 files, ancestors' quotas,
 * "max", and files that set nothing or hold garbage. */
static char tree[64];
static void put(const char *rel, const char *text) {
  char path[512], dir[1024];
  snprintf(path, sizeof path, "%s/%s", tree, rel);
  snprintf(dir, sizeof dir, "mkdir -p \"$(dirname '%s')\"", path);
  assert_int_equal(system(dir), 0);
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  fputs(text, f);
  fclose(f);
}
static double quota(void) {
  char proc[128], sys[128];
  snprintf(proc, sizeof proc, "%s/cgroup", tree);
  snprintf(sys, sizeof sys, "%s/sys", tree);
  return cpu_cgroup_quota(proc, sys);
}
static void cgroup_quota(void **state) {
  (void)state;
  strcpy(tree, "/tmp/dsv4kv-cgroup-XXXXXX");
  assert_non_null(mkdtemp(tree));
  put("cgroup", "0::/\n");
  assert_true(quota() == 0); /* no files: no quota */
  put("sys/cpu.max", "max 100000\n");
  assert_true(quota() == 0);
  put("cgroup", "0::/a/b\n");
  put("sys/a/b/cpu.max", "max 100000\n");
  put("sys/a/cpu.max", "150000 100000\n");
  assert_true(quota() == 1.5); /* the parent's */
  put("sys/a/b/cpu.max", "50000 100000\n");
  assert_true(quota() == 0.5); /* the smaller, the cgroup's own */
  put("cgroup", "12:pids:/x\n4:cpu,cpuacct:/docker/c\n0::/\n");
  put("sys/cpu,cpuacct/docker/c/cpu.cfs_quota_us", "200000\n");
  put("sys/cpu,cpuacct/docker/c/cpu.cfs_period_us", "100000\n");
  assert_true(quota() == 2.0); /* v1 */
  put("sys/cpu,cpuacct/docker/c/cpu.cfs_quota_us", "-1\n");
  assert_true(quota() == 0); /* v1's "none" */
  put("cgroup", "4:cpuacct:/docker/c\n4:cpuset:/\ngarbage\n::\n0:/\n");
  assert_true(quota() == 0); /* no cpu controller, malformed lines */
  char longpath[1600] = "0::/";
  memset(longpath + 4, 'a', sizeof longpath - 6);
  longpath[sizeof longpath - 2] = '\n';
  longpath[sizeof longpath - 1] = '\0';
  put("cgroup", longpath);
  assert_true(quota() == 0); /* a path past the buffers: ignored */
  put("sys/cpu.max", "garbage\n");
  put("cgroup", "0::/\n");
  assert_true(quota() == 0);
  char rm[128];
  snprintf(rm, sizeof rm, "rm -rf '%s'", tree);
  assert_int_equal(system(rm), 0);
  assert_true(cpu_procs() >= 1);
}

int main(int argc, char **argv) {
  /* argv[1] = "nospin": workers never watch (DSV4KV_CPU_SPIN_US=0) */
  if (argc > 1 && strcmp(argv[1], "nospin") == 0) setenv("DSV4KV_CPU_SPIN_US", "0", 1);
  const struct CMUnitTest tests[] = {cmocka_unit_test(mixed_jobs), cmocka_unit_test(two_callers),
                                     cmocka_unit_test(cgroup_quota)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
