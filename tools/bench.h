/*
 * bench.h - what the two halves of `dsv4kv bench` share: the CPU timing
 * (tools/bench.c), the GPU timing (tools/bench_gpu.c) and the plot.
 */
#ifndef DSV4KV_TOOLS_BENCH_H
#define DSV4KV_TOOLS_BENCH_H

#include <cjson/cJSON.h>

enum { BENCH_MAX_RUNS = 200 };

typedef struct {
  int threads, min_runs;
  double min_seconds;  /* keep running until this much time is spent (and min_runs done) */
  int report;          /* GPU: give each call a device report (dsv4kv_report) */
  const char *op, *record, *sizes; /* filters, NULL = all */
} bench_opts;

/* An earlier run's JSON (--json FILE), bounded (16 MiB) and checked for what
 * the plot reads; NULL with a message on stderr. */
cJSON *bench_load_results(const char *path);
/* o's string member k, or "not recorded". */
const char *bench_json_str(cJSON *o, const char *k);

/* Seconds on the monotonic clock. */
double bench_now(void);

/* The median of n values (sorts t). */
double bench_median(double *t, int n);

/* Whether path can name bench_plot's output (its gnuplot script quotes
 * names with ', and a leading | would pipe to a command). */
int bench_plot_name_ok(const char *path);
#define BENCH_PLOT_NAME_RULE "a file name that starts with '|' or holds quotes, backquotes or line breaks is refused"

/* GB/s against tokens per op and record (log x), `field` of each row of
 * `rows`; the reference's figures as points where a row has `ref_field`
 * (NULL: none); the ceiling as a dashed line.  gnuplot; .png or .svg.
 * 0; -1 gnuplot failed; -2 a path it refuses (message printed). */
int bench_plot(const char *path, cJSON *rows, const char *field, const char *ref_field, double ceiling,
               const char *title);

/* `dsv4kv bench --device cuda`: fills root's "results" and fields; returns
 * the exit status (0, 1 a call failed, 2 no configuration matched). */
int bench_gpu(const bench_opts *o, cJSON *root);

#endif /* DSV4KV_TOOLS_BENCH_H */
