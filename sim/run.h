/* The stages sim_run (run_all.c) strings together: one run per format
 * (sim.c), the host facts the reports print (host.c). */
#ifndef DSV4KV_SIM_RUN_H
#define DSV4KV_SIM_RUN_H

#include <stddef.h>

#include "ctx.h"

/* One run of cfg->format / cfg->indexer_format: run `index` of `count`.
 * The context holds the figures (its caches are freed); c->rc is the run's
 * SIM_EXIT_* status and c->ran says whether it started at all (else the
 * reason is on stderr).  NULL only when out of memory. */
sim_ctx *sim_run_one(const sim_config *cfg, int index, int count);
void sim_ctx_free(sim_ctx *c);

/* Library threads per call, as the CPU backend picks them for this config
 * (OpenMP's limits and the processors this process may run on). */
typedef struct {
  int requested;   /* --threads (0: OpenMP's default for large calls)   */
  int large_calls; /* threads of a large call                           */
  int small_calls; /* threads of a small call (decode steps)            */
  int processors;  /* processors available (omp_get_num_procs)         */
  const char *wait_policy; /* $OMP_WAIT_POLICY, or NULL                 */
} sim_threads;

sim_threads sim_threads_of(const sim_config *cfg);
/* This machine's name ("?" when unknown). */
const char *sim_host_name(void);
/* The command line, words quoted for a POSIX shell where needed. */
void sim_command_line(const sim_config *cfg, char *out, size_t n);

#endif
