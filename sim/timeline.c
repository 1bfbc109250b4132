/* The per-step series and the latency percentiles (see timeline.h). */
#include "timeline.h"

#include <stdlib.h>
#include <string.h>

void sim_series_init(sim_series *s) {
  s->n = 0;
  s->stride = 1;
  s->offered = 0;
  memset(&s->last, 0, sizeof s->last);
}

void sim_series_add(sim_series *s, const sim_point *p) {
  int64_t k = s->offered++;
  s->last = *p;
  if (k % s->stride)
    return;
  /* one slot stays free for the final step (sim_series_finish) */
  while (s->n >= SIM_SERIES_MAX - 1) {
    int kept = 0;
    for (int i = 0; i < s->n; i += 2)
      s->pts[kept++] = s->pts[i];
    s->n = kept;
    s->stride *= 2;
    if (k % s->stride)
      return;
  }
  s->pts[s->n++] = *p;
}

void sim_series_finish(sim_series *s) {
  if (s->offered > 0 && (s->n == 0 || s->pts[s->n - 1].step != s->last.step))
    s->pts[s->n++] = s->last;
}

double sim_percentile(const double *sorted, int64_t n, double p) {
  double rank = p / 100.0 * (double)(n - 1);
  int64_t lo = (int64_t)rank;
  if (lo >= n - 1)
    return sorted[n - 1];
  double f = rank - (double)lo;
  return sorted[lo] + f * (sorted[lo + 1] - sorted[lo]);
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

void sim_dist_of(double *v, int64_t n, sim_dist *out) {
  memset(out, 0, sizeof *out);
  out->n = n;
  if (n <= 0)
    return;
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  double sum = 0;
  for (int64_t i = 0; i < n; i++)
    sum += v[i];
  out->mean = sum / (double)n;
  out->max = v[n - 1];
  out->p50 = sim_percentile(v, n, 50);
  out->p90 = sim_percentile(v, n, 90);
  out->p99 = sim_percentile(v, n, 99);
}

int sim_latency_of(const sim_sched *s, sim_latency *out) {
  memset(out, 0, sizeof *out);
  double *q = malloc((size_t)(s->n > 0 ? s->n : 1) * sizeof *q);
  double *t = malloc((size_t)(s->n > 0 ? s->n : 1) * sizeof *t);
  if (!q || !t) {
    free(q);
    free(t);
    return -1;
  }
  int64_t nq = 0, nt = 0;
  for (int64_t i = 0; i < s->n; i++) {
    const sim_req *r = &s->reqs[i];
    if (r->first_sched_ms >= 0)
      q[nq++] = (r->first_sched_ms - r->spec->arrival_ms) / 1000.0;
    if (r->first_token_ms >= 0)
      t[nt++] = (r->first_token_ms - r->spec->arrival_ms) / 1000.0;
  }
  sim_dist_of(q, nq, &out->queue_s);
  sim_dist_of(t, nt, &out->ttft_s);
  free(q);
  free(t);
  return 0;
}
