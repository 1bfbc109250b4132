/* Facts about the process the reports record: library threads, host name,
 * command line (see run.h). */
#define _POSIX_C_SOURCE 200809L

#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "run.h"

/* The CPU backend caps a call's threads at the processors and keeps calls
 * too small to gain on one thread (cpu_team in src/cpu/pool.c); the simulator
 * also runs small calls on one thread when --threads is 0 (step_ops.c). */
sim_threads sim_threads_of(const sim_config *cfg) {
  sim_threads t;
  t.requested = cfg->threads;
  t.processors = omp_get_num_procs();
  int want = cfg->threads > 0 ? cfg->threads : omp_get_max_threads();
  if (want > t.processors)
    want = t.processors;
  t.large_calls = want > 0 ? want : 1;
  t.small_calls = cfg->threads > 0 ? t.large_calls : 1;
  t.wait_policy = getenv("OMP_WAIT_POLICY");
  return t;
}

const char *sim_host_name(void) {
  static char name[256];
  if (gethostname(name, sizeof name - 1) != 0 || !name[0])
    snprintf(name, sizeof name, "?");
  name[sizeof name - 1] = 0;
  return name;
}

static int needs_quotes(const char *w) {
  if (!*w)
    return 1;
  for (const char *p = w; *p; p++)
    if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=:,+@%", *p))
      return 1;
  return 0;
}

void sim_command_line(const sim_config *cfg, char *out, size_t n) {
  size_t k = (size_t)snprintf(out, n, "dsv4kv");
  for (int i = 0; i < cfg->argc && k < n; i++) {
    const char *w = cfg->argv[i];
    if (!needs_quotes(w)) {
      k += (size_t)snprintf(out + k, n - k, " %s", w);
      continue;
    }
    k += (size_t)snprintf(out + k, n - k, " '");
    for (const char *p = w; *p && k < n; p++)
      k += (size_t)(*p == '\'' ? snprintf(out + k, n - k, "'\\''")
                               : snprintf(out + k, n - k, "%c", *p));
    if (k < n)
      k += (size_t)snprintf(out + k, n - k, "'");
  }
}
