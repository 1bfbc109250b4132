/* What a run looked like over its virtual time: the per-step series (pages
 * in use, running, queued, tokens) kept to a bounded number of points, and
 * the latency percentiles of its requests (queueing delay, time to first
 * token).  Virtual time is the scheduler's modelled clock (sched.h), not wall
 * time. */
#ifndef DSV4KV_SIM_TIMELINE_H
#define DSV4KV_SIM_TIMELINE_H

#include <stdint.h>

#include "sched.h"

/* Points kept at most (the JSON's time series and the plot). */
#define SIM_SERIES_MAX 2000

typedef struct {
  int64_t step;         /* step number (0-based)                         */
  double t_s;           /* virtual time at the end of the step, seconds  */
  int32_t pages;        /* pages in use (referenced by a request)        */
  int32_t running;      /* running requests after the step               */
  int64_t queued;       /* queued (arrived, not running) after the step  */
  int32_t batch_tokens; /* tokens the step batched                       */
  int64_t tokens;       /* tokens processed so far (prefill + decode)    */
} sim_point;

/* Every step is offered; one in `stride` is kept.  When the buffer fills, it
 * keeps every other point and the stride doubles, so a run of any length
 * ends with at most SIM_SERIES_MAX points, evenly spaced in steps, the last
 * step always among them. */
typedef struct {
  sim_point pts[SIM_SERIES_MAX];
  int n;
  int64_t stride;
  int64_t offered;
  sim_point last;
} sim_series;

void sim_series_init(sim_series *s);
void sim_series_add(sim_series *s, const sim_point *p);
/* Appends the last step when it was not kept. */
void sim_series_finish(sim_series *s);

/* A distribution's summary.  Percentiles interpolate linearly between the
 * closest ranks (p in [0, 100]); all 0 when n == 0. */
typedef struct {
  int64_t n;
  double p50, p90, p99, mean, max;
} sim_dist;

/* The p-th percentile of sorted[0..n-1] (n >= 1). */
double sim_percentile(const double *sorted, int64_t n, double p);
/* Sorts v[0..n-1] in place and summarises it. */
void sim_dist_of(double *v, int64_t n, sim_dist *out);

typedef struct {
  sim_dist queue_s; /* first admission - arrival, seconds of virtual time */
  sim_dist ttft_s;  /* first token - arrival (end of the step sampling it) */
} sim_latency;

/* From the scheduler's requests (those that were admitted / produced a
 * token).  0, or -1 out of memory. */
int sim_latency_of(const sim_sched *s, sim_latency *out);

#endif
