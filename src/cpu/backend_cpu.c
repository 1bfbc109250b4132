/* The CPU backend's table, its report lock, and the choice of
 * kernel path (the scalar reference, and the SIMD paths the processor runs). */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cpu/cpu.h"

const backend_ops cpu_backend = {
    "cpu", 0, cpu_insert, cpu_gather, cpu_global_topk, cpu_combine, cpu_flashinfer, cpu_indexer_store,
};

/* A call's threads note skips into its one report under a lock; reports
 * of different calls take different locks of a few (by address), so that
 * application threads skipping entries at once do not wait on each other.
 * A forked child starts with the locks free, as the pool does: one held by
 * another thread of the parent at the fork would never be released there. */
enum { REPORT_LOCKS = 16 };
static pthread_mutex_t report_locks[REPORT_LOCKS];
static pthread_once_t report_once = PTHREAD_ONCE_INIT;
static void report_locks_init(void) {
  for (int i = 0; i < REPORT_LOCKS; i++) pthread_mutex_init(&report_locks[i], NULL);
}
static void report_locks_setup(void) {
  report_locks_init();
  pthread_atfork(NULL, NULL, report_locks_init);
}

void cpu_note_n(dsv4kv_report *r, int64_t n, int64_t key, skip_reason reason, int64_t v0, int64_t v1,
                int64_t v2, int64_t v3, int64_t v4, int64_t v5) {
  pthread_once(&report_once, report_locks_setup);
  pthread_mutex_t *lock = &report_locks[((uintptr_t)r / sizeof *r) % REPORT_LOCKS];
  pthread_mutex_lock(lock);
  {
    r->skipped += n;
    if (key < r->first_key) {
      r->first_key = key;
      r->reason = (int32_t)reason;
      r->values[0] = v0, r->values[1] = v1, r->values[2] = v2;
      r->values[3] = v3, r->values[4] = v4, r->values[5] = v5;
    }
  }
  pthread_mutex_unlock(lock);
}

/* ---- kernel paths ------------------------------------------------------ */
/* Every path this build has, in order of preference (last = best); the
 * runnable ones are those the processor supports, found once. */
static const struct {
  const char *name;
  cpu_path_kind kind;
  int (*supported)(void);
} all_paths[] = {{"scalar", CPU_PATH_SCALAR, NULL},
                 {"avx2", CPU_PATH_AVX2, cpu_avx2_supported},
                 {"avx512", CPU_PATH_AVX512, cpu_avx512_supported}};
enum { MAX_CPU_PATHS = sizeof all_paths / sizeof all_paths[0] };
static int runnable[MAX_CPU_PATHS], num_runnable; /* indexes into all_paths, found once */
/* Index into runnable; -1: not chosen yet.  Atomic: application threads may
 * make their first calls at once (and dsv4kv_cpu_path_select may run beside
 * calls); every thread that chooses chooses the same. */
static _Atomic int cpu_path = -1;
static pthread_once_t paths_once = PTHREAD_ONCE_INIT;

static void find_paths_once(void) {
  int n = 0;
  for (int i = 0; i < MAX_CPU_PATHS; i++)
    if (!all_paths[i].supported || all_paths[i].supported()) runnable[n++] = i;
  num_runnable = n;
}
static void find_paths(void) { pthread_once(&paths_once, find_paths_once); }

static int path_index(const char *name) {
  find_paths();
  for (int i = 0; i < num_runnable; i++)
    if (!strcmp(name, all_paths[runnable[i]].name)) return i;
  return -1;
}

/* The automatic choice: DSV4KV_CPU_PATH when it names a path, else the best
 * path the processor runs (the last of the list). */
static int auto_path(void) {
  const char *env = getenv("DSV4KV_CPU_PATH");
  int i = env ? path_index(env) : -1;
  find_paths();
  return i >= 0 ? i : num_runnable - 1;
}

/* The path in use, chosen on first use. */
static int path_in_use(void) {
  int i = cpu_path;
  if (i < 0) cpu_path = i = auto_path();
  return i;
}

cpu_path_kind cpu_path_now(void) {
  return all_paths[runnable[path_in_use()]].kind;
}

int dsv4kv_cpu_path_count(void) {
  find_paths();
  return num_runnable;
}

const char *dsv4kv_cpu_path_name(int i) {
  find_paths();
  return i >= 0 && i < num_runnable ? all_paths[runnable[i]].name : NULL;
}

const char *dsv4kv_cpu_path_current(void) {
  return all_paths[runnable[path_in_use()]].name;
}

dsv4kv_status dsv4kv_cpu_path_select(const char *name) {
  if (!name) {
    cpu_path = auto_path();
    dsv4kv_clear_error();
    return DSV4KV_OK;
  }
  int i = path_index(name);
  if (i < 0)
    return dsv4kv_fail(DSV4KV_ERR_VALUE, "cpu path '%.64s' is not one this build and processor run (see dsv4kv_cpu_path_name)",
                       name);
  cpu_path = i;
  dsv4kv_clear_error();
  return DSV4KV_OK;
}
