/* The CPU backend's threads: a small pool of its own instead of OpenMP
 * parallel regions, and the rule for how many threads a call gets.
 *
 * Why not OpenMP (measured on this workplace's 2-core Xeon, issue 12): with
 * libgomp's default or active wait policy an idle team spins, and beside a
 * busy process the spinning threads take the processor from the ones with
 * work (2-thread gathers 1.3-2.4x slower than 1 thread, a 256-token insert
 * 8 ms instead of 0.08); with OMP_WAIT_POLICY=passive nothing spins, but
 * every region pays a team wake-up (~60-100 us: a 64-token combine 102 us
 * on 2 threads, 4.7 on 1).  The policy is the application's (read once by
 * libgomp at start-up), so the library cannot choose it.  This pool never
 * spins: idle workers sleep on a condition variable, the caller works as
 * thread 0 and then sleeps until the others are done.  Work is handed out
 * in chunks from an atomic counter (cpu_chunk_next), so a thread that
 * another process delays does less of the call instead of holding it up;
 * and a worker that has not taken the job by the time the caller has run
 * out of chunks is let off it, so that its wake-up (tens of microseconds on
 * these VMs, a scheduler tick beside a busy process) holds nothing up.
 * Every task must therefore take its work only from cpu_chunk_next.
 * Calls too small to gain from a second thread run on the calling thread
 * (cpu_team), so decode-size calls pay no wake-up at all.
 *
 * One caller uses the pool at a time; a call that finds it busy (another
 * application thread inside the library) runs on its own thread. */
#define _POSIX_C_SOURCE 200809L

#include <omp.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

#include "cpu/cpu.h"

enum { POOL_MAX_WORKERS = 63 };

typedef struct {
  pthread_cond_t wake;
  uint64_t seen; /* generation of the last job this worker took */
} worker;

static pthread_mutex_t pool_user = PTHREAD_MUTEX_INITIALIZER; /* held by the call using the pool */
static pthread_mutex_t pool_m = PTHREAD_MUTEX_INITIALIZER;    /* guards everything below */
static pthread_cond_t pool_done = PTHREAD_COND_INITIALIZER;
static worker workers[POOL_MAX_WORKERS];
static int num_workers, pending, job_nt, atfork_set;
static uint64_t generation;
static cpu_task_fn job_fn;
static void *job_ctx;

static void *worker_main(void *arg) {
  const int id = (int)(intptr_t)arg; /* thread number 1.. in a job */
  worker *w = &workers[id - 1];
  pthread_mutex_lock(&pool_m);
  for (;;) {
    while (w->seen == generation || id >= job_nt) {
      w->seen = generation; /* a job this worker is not part of */
      pthread_cond_wait(&w->wake, &pool_m);
    }
    w->seen = generation;
    cpu_task_fn fn = job_fn;
    void *ctx = job_ctx;
    const int nt = job_nt;
    pthread_mutex_unlock(&pool_m);
    fn(ctx, id, nt);
    pthread_mutex_lock(&pool_m);
    if (--pending == 0) pthread_cond_signal(&pool_done);
  }
  return NULL;
}

/* A forked child has none of the parent's workers: start afresh. */
static void pool_after_fork(void) {
  pthread_mutex_init(&pool_user, NULL);
  pthread_mutex_init(&pool_m, NULL);
  pthread_cond_init(&pool_done, NULL);
  num_workers = pending = job_nt = 0;
}

/* Starts workers until there are `want` (or creation fails); pool_m held. */
static void grow(int want) {
  if (!atfork_set) atfork_set = pthread_atfork(NULL, NULL, pool_after_fork) == 0;
  while (num_workers < want && num_workers < POOL_MAX_WORKERS) {
    worker *w = &workers[num_workers];
    pthread_cond_init(&w->wake, NULL);
    w->seen = generation;
    pthread_attr_t at;
    pthread_attr_init(&at);
    pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
    pthread_t th;
    int ok = pthread_create(&th, &at, worker_main, (void *)(intptr_t)(num_workers + 1)) == 0;
    pthread_attr_destroy(&at);
    if (!ok) break;
    num_workers++;
  }
}

int cpu_run(int nt, cpu_task_fn fn, void *ctx) {
  if (nt <= 1 || pthread_mutex_trylock(&pool_user) != 0) {
    fn(ctx, 0, 1);
    return 1;
  }
  pthread_mutex_lock(&pool_m);
  grow(nt - 1);
  if (nt > num_workers + 1) nt = num_workers + 1;
  job_fn = fn, job_ctx = ctx, job_nt = nt, pending = nt - 1;
  generation++;
  for (int i = 0; i < nt - 1; i++) pthread_cond_signal(&workers[i].wake);
  pthread_mutex_unlock(&pool_m);
  fn(ctx, 0, nt);
  pthread_mutex_lock(&pool_m);
  /* The caller found no chunk left: workers that have not taken the job
   * would find none either, so they are let off it (job_nt = 0 keeps them
   * asleep) and only the ones running it are waited for. */
  for (int i = 0; i < nt - 1; i++)
    if (workers[i].seen != generation) workers[i].seen = generation, pending--;
  job_nt = 0;
  while (pending > 0) pthread_cond_wait(&pool_done, &pool_m);
  pthread_mutex_unlock(&pool_m);
  pthread_mutex_unlock(&pool_user);
  return nt;
}

/* A threshold from the environment: the variable's value when it is a
 * number in [0, max] and nothing else ("32MiB" is not 32), else def. */
static double env_threshold(const char *name, double def, double max) {
  const char *e = getenv(name);
  char *end;
  double v = e ? strtod(e, &end) : -1;
  return e && end != e && *end == '\0' && v >= 0 && v <= max ? v : def;
}

/* The threshold: CPU_PARALLEL_MIN_NS, or DSV4KV_CPU_PARALLEL_MIN_NS when set
 * (0 makes every call use the requested threads: the case registry sets it
 * so that its small cases run the multi-thread code too). */
static double min_ns;
static pthread_once_t min_ns_once = PTHREAD_ONCE_INIT;
static void read_min_ns(void) { min_ns = env_threshold("DSV4KV_CPU_PARALLEL_MIN_NS", CPU_PARALLEL_MIN_NS, 1e15); }

/* The output size past which gathers store rows non-temporally:
 * CPU_NT_MIN_BYTES, or DSV4KV_CPU_NT_MIN_BYTES when set (0: always where the
 * rows are aligned; the tests set it so that small cases run those stores). */
static double nt_min_bytes;
static pthread_once_t nt_once = PTHREAD_ONCE_INIT;
static void read_nt_min(void) { nt_min_bytes = env_threshold("DSV4KV_CPU_NT_MIN_BYTES", CPU_NT_MIN_BYTES, 1e18); }
double cpu_nt_min_bytes(void) {
  pthread_once(&nt_once, read_nt_min);
  return nt_min_bytes;
}

int cpu_team(const exec_opts *o, double est_ns) {
  /* More threads than processors never helps; OMP_NUM_THREADS (through
   * omp_get_max_threads) still sets the default, as it did. */
  int procs = omp_get_num_procs();
  int want = o->num_threads > 0 ? o->num_threads : omp_get_max_threads();
  if (want > procs) want = procs;
  if (want > POOL_MAX_WORKERS + 1) want = POOL_MAX_WORKERS + 1;
  pthread_once(&min_ns_once, read_min_ns);
  if (min_ns <= 0) return want;
  if (est_ns < min_ns) return 1;
  const double per = est_ns / (min_ns / 2); /* every thread gets >= half the threshold */
  return per < want ? (int)per : want;
}

int cpu_chunk_next(cpu_chunks *c, int64_t *lo, int64_t *hi) {
  const int64_t i = atomic_fetch_add_explicit(&c->next, 1, memory_order_relaxed);
  if (i >= (c->n + c->chunk - 1) / c->chunk) return 0;
  *lo = i * c->chunk;
  *hi = *lo + c->chunk < c->n ? *lo + c->chunk : c->n;
  return 1;
}
