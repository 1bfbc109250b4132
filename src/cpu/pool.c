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
 * libgomp at start-up), so the library cannot choose it.
 *
 * Here a worker that finishes a job watches for the next one for a short
 * while (DSV4KV_CPU_SPIN_US, default 50 us; never on the processor the
 * caller last ran on) and then sleeps on a condition variable.  Waking a
 * sleeping worker costs the caller itself ~10 us on these VMs (the wake-up's
 * interrupt to an idle virtual processor: 2026-12-07-cpu-zen4/pool-spin.txt),
 * so only calls estimated at CPU_PARALLEL_MIN_NS or more wake workers; a
 * shorter call (from CPU_SHORT_TEAM_MIN_NS) shares its chunks with the
 * workers that are awake, and wakes one only when short calls have been
 * arriving within the spin time of each other (a stream, such as a decode
 * step's layers), so that it stays awake for the ones after.  The caller
 * works as thread 0, then waits for the workers that took part, watching
 * for a while before it sleeps.  Work is handed out in chunks from an atomic
 * counter (cpu_chunk_next), so a thread that another process delays does
 * less of the call instead of holding it up; a worker that has not joined
 * by the time the caller has run out of chunks is let off the job (it finds
 * the job closed).  Every task must therefore take its work only from
 * cpu_chunk_next.
 *
 * One caller uses the pool at a time; a call that finds it busy (another
 * application thread inside the library) runs on its own thread.  A caller
 * cannot be cancelled inside cpu_run (its workers would write through a job
 * on its unwound stack); the library is linked -z nodelete, since the
 * detached workers outlive a dlclose; teams are capped by the cgroup CPU
 * quota (cpu_procs, src/cpu/procs.c). */
#define _GNU_SOURCE /* sched_getcpu */

#include <omp.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

#include "cpu/cpu.h"

enum { POOL_MAX_WORKERS = 63 };

/* The job word: generation << 16 | team size << 8 | CLOSED | workers in it.
 * Workers join by incrementing it while the generation is theirs and the
 * job is not closed; the caller closes it when it finds no chunk left. */
#define JOB_GEN_SHIFT 16
#define JOB_NT(w) ((int)(((w) >> 8) & 0xFF))
#define JOB_CLOSED ((uint64_t)0x80)
#define JOB_COUNT(w) ((int)((w) & 0x7F))

typedef struct {
  _Alignas(64) pthread_cond_t wake; /* a line of its own: the caller reads `asleep` of each */
  _Atomic int asleep;               /* on its condition variable (set and cleared under pool_m) */
} worker;

static pthread_mutex_t pool_user = PTHREAD_MUTEX_INITIALIZER; /* held by the call using the pool */
static pthread_mutex_t pool_m = PTHREAD_MUTEX_INITIALIZER;    /* guards sleeping and waking */
static pthread_cond_t pool_done = PTHREAD_COND_INITIALIZER;
static worker workers[POOL_MAX_WORKERS];
static _Atomic int num_workers; /* written under pool_m */
static int atfork_set;
static uint64_t generation;                 /* the last job's (the pool user's) */
static _Atomic uint64_t job_word;
static _Atomic int caller_asleep, caller_cpu = -1;
static cpu_task_fn job_fn;
static void *job_ctx;
static _Thread_local int team_awake_only; /* cpu_team's word to the cpu_run after it */

/* After a worker found itself on the caller's processor, short calls wake
 * none for this long: each such wake-up costs the caller ~10 us for nothing. */
#define POOL_WAKE_BACKOFF_NS 20000000
static _Atomic int64_t no_short_wake_until;

static double spin_ns = -1; /* read once (spin_once) */
static pthread_once_t spin_once = PTHREAD_ONCE_INIT;
static void read_spin(void);

static int64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

/* Waits until the job word's generation is not `seen`: watches it for
 * spin_ns (not on the caller's processor, where watching would take the
 * caller's time), then sleeps. */
static uint64_t await_job(worker *w, uint64_t seen) {
  uint64_t word = atomic_load(&job_word);
  if (word >> JOB_GEN_SHIFT != seen) return word;
  if (spin_ns > 0) {
    const int64_t t0 = now_ns();
    for (unsigned i = 1;; i++) {
      cpu_relax();
      word = atomic_load_explicit(&job_word, memory_order_acquire);
      if (word >> JOB_GEN_SHIFT != seen) return word;
      if (i % 64) continue; /* the clock and the processor every 64 looks */
      const int64_t now = now_ns();
      if (now - t0 > spin_ns) break;
      const int cpu = atomic_load(&caller_cpu);
      if (cpu >= 0 && sched_getcpu() == cpu) {
        /* placed beside the caller (the other processors busy): short
         * calls stop waking workers for a while */
        atomic_store(&no_short_wake_until, now + POOL_WAKE_BACKOFF_NS);
        break;
      }
    }
  }
  pthread_mutex_lock(&pool_m);
  atomic_store(&w->asleep, 1);
  while ((word = atomic_load(&job_word)) >> JOB_GEN_SHIFT == seen) pthread_cond_wait(&w->wake, &pool_m);
  atomic_store(&w->asleep, 0);
  pthread_mutex_unlock(&pool_m);
  return word;
}

static void *worker_main(void *arg) {
  const int id = (int)(intptr_t)arg; /* thread number 1.. in a job */
  worker *w = &workers[id - 1];
  uint64_t seen = 0;
  for (;;) {
    uint64_t cur = await_job(w, seen);
    seen = cur >> JOB_GEN_SHIFT;
    if (id >= JOB_NT(cur)) continue; /* a job this worker is not part of */
    int joined = 0;
    while (!(cur & JOB_CLOSED) && cur >> JOB_GEN_SHIFT == seen && !joined)
      joined = atomic_compare_exchange_weak(&job_word, &cur, cur + 1);
    if (!joined) continue; /* let off: the caller took every chunk */
    job_fn(job_ctx, id, JOB_NT(cur));
    const uint64_t left = atomic_fetch_sub(&job_word, 1) - 1;
    if (JOB_COUNT(left) == 0 && (left & JOB_CLOSED) && atomic_load(&caller_asleep)) {
      pthread_mutex_lock(&pool_m);
      pthread_cond_signal(&pool_done);
      pthread_mutex_unlock(&pool_m);
    }
  }
  return NULL;
}

/* A forked child has none of the parent's workers: start afresh. */
static void pool_after_fork(void) {
  pthread_mutex_init(&pool_user, NULL);
  pthread_mutex_init(&pool_m, NULL);
  pthread_cond_init(&pool_done, NULL);
  atomic_store(&num_workers, 0);
  generation = 0;
  atomic_store(&job_word, 0);
  atomic_store(&caller_asleep, 0);
}

/* Starts workers until there are `want` (or creation fails); pool_m held. */
static void grow(int want) {
  if (!atfork_set) atfork_set = pthread_atfork(NULL, NULL, pool_after_fork) == 0;
  while (num_workers < want && num_workers < POOL_MAX_WORKERS) {
    worker *w = &workers[num_workers];
    pthread_cond_init(&w->wake, NULL);
    atomic_store(&w->asleep, 0);
    pthread_attr_t at;
    pthread_attr_init(&at);
    pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
    pthread_t th;
    int ok = pthread_create(&th, &at, worker_main, (void *)(intptr_t)(num_workers + 1)) == 0;
    pthread_attr_destroy(&at);
    if (!ok) break;
    atomic_fetch_add(&num_workers, 1); /* after the worker's fields: awake_workers reads them */
  }
}

/* The caller's wait for the workers in the closed job: watched for up to
 * POOL_CALLER_SPIN_NS (a worker that joined is running a chunk; not at all
 * where workers do not watch either, DSV4KV_CPU_SPIN_US=0), then asleep
 * until the last one leaves. */
#define POOL_CALLER_SPIN_NS 200000
static void await_workers(void) {
  const int64_t t0 = now_ns(), watch = spin_ns > 0 ? POOL_CALLER_SPIN_NS : 0;
  for (unsigned i = 1; JOB_COUNT(atomic_load_explicit(&job_word, memory_order_acquire)) > 0; i++) {
    cpu_relax();
    if (watch == 0 || (i % 64 == 0 && now_ns() - t0 >= watch)) {
      pthread_mutex_lock(&pool_m);
      atomic_store(&caller_asleep, 1);
      while (JOB_COUNT(atomic_load(&job_word)) > 0) pthread_cond_wait(&pool_done, &pool_m);
      atomic_store(&caller_asleep, 0);
      pthread_mutex_unlock(&pool_m);
      return;
    }
  }
}

int cpu_run(int nt, cpu_task_fn fn, void *ctx) {
  const int awake_only = team_awake_only;
  team_awake_only = 0;
  if (nt <= 1 || pthread_mutex_trylock(&pool_user) != 0) {
    fn(ctx, 0, 1);
    return 1;
  }
  /* A caller cancelled in its wait would leave workers writing through a
   * job on its unwound stack, and the pool held: no cancellation in here. */
  int cancel_state;
  pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &cancel_state);
  pthread_once(&spin_once, read_spin); /* (cpu_team has read it, where it came first) */
  atomic_store_explicit(&caller_cpu, sched_getcpu(), memory_order_relaxed);
  pthread_mutex_lock(&pool_m);
  if (!awake_only) grow(nt - 1);
  if (nt > num_workers + 1) nt = num_workers + 1;
  pthread_mutex_unlock(&pool_m);
  if (nt <= 1) {
    pthread_mutex_unlock(&pool_user);
    pthread_setcancelstate(cancel_state, NULL);
    fn(ctx, 0, 1);
    return 1;
  }
  job_fn = fn, job_ctx = ctx;
  generation++;
  atomic_store(&job_word, generation << JOB_GEN_SHIFT | (uint64_t)nt << 8);
  /* A worker sets `asleep` before it looks at the job word a last time, and
   * this looks at `asleep` after storing the word: one of the two sees the
   * other's store, so no worker sleeps through a job it was woken for. */
  for (int i = 0; i < nt - 1 && !awake_only; i++)
    if (atomic_load(&workers[i].asleep)) {
      pthread_mutex_lock(&pool_m);
      pthread_cond_signal(&workers[i].wake);
      pthread_mutex_unlock(&pool_m);
    }
  fn(ctx, 0, nt);
  /* No chunk is left: workers that have not joined are let off. */
  if (JOB_COUNT(atomic_fetch_or(&job_word, JOB_CLOSED)) > 0) await_workers();
  pthread_mutex_unlock(&pool_user);
  pthread_setcancelstate(cancel_state, NULL);
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
static void read_spin(void) { spin_ns = 1e3 * env_threshold("DSV4KV_CPU_SPIN_US", CPU_SPIN_US, 1e6); }

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

/* Short calls: how many of the first `want` workers are awake, and whether
 * short calls have been arriving as a stream (POOL_STREAM_CALLS in a row,
 * each within the spin time of the one before). */
enum { POOL_STREAM_CALLS = 3 };
static _Atomic int64_t last_short_ns;
static _Atomic int short_run;
static int awake_workers(int want) {
  const int have = atomic_load(&num_workers);
  int n = 0;
  for (int i = 0; i < have && i < want; i++) n += !atomic_load(&workers[i].asleep);
  return n;
}
static int short_stream(void) {
  const int64_t t = now_ns(), last = atomic_exchange(&last_short_ns, t);
  if (t < atomic_load(&no_short_wake_until)) return 0;
  if (t - last > spin_ns) {
    atomic_store(&short_run, 1);
    return 0;
  }
  return atomic_fetch_add(&short_run, 1) + 1 >= POOL_STREAM_CALLS;
}

int cpu_team(const exec_opts *o, double est_ns) {
  /* More threads than processors never helps; OMP_NUM_THREADS (through
   * omp_get_max_threads) still sets the default, as it did. */
  int procs = cpu_procs();
  int want = o->num_threads > 0 ? o->num_threads : omp_get_max_threads();
  if (want > procs) want = procs;
  if (want > POOL_MAX_WORKERS + 1) want = POOL_MAX_WORKERS + 1;
  pthread_once(&min_ns_once, read_min_ns);
  pthread_once(&spin_once, read_spin);
  team_awake_only = 0;
  if (min_ns <= 0) return want;
  if (est_ns >= min_ns) {
    const double per = est_ns / (min_ns / 2); /* every thread gets >= half the threshold */
    return per < want ? (int)per : want;
  }
  if (want < 2 || est_ns < CPU_SHORT_TEAM_MIN_NS || spin_ns <= 0) return 1;
  const int stream = short_stream(), awake = awake_workers(want - 1);
  if (awake > 0) { /* the team of every worker; the ones asleep are not woken */
    team_awake_only = 1;
    return want;
  }
  return stream ? 2 : 1; /* wakes one worker: the stream's next calls find it awake */
}

int cpu_chunk_next(cpu_chunks *c, int64_t *lo, int64_t *hi) {
  const int64_t i = atomic_fetch_add_explicit(&c->next, 1, memory_order_relaxed);
  if (i >= (c->n + c->chunk - 1) / c->chunk) return 0;
  *lo = i * c->chunk;
  *hi = *lo + c->chunk < c->n ? *lo + c->chunk : c->n;
  return 1;
}
