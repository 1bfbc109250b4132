/* Pictures of a run with gnuplot (the Debian package gnuplot-nox): pages in
 * use, running and queued requests over virtual time, and the whole model's
 * cache bytes per token, for each format of the run.  `dsv4kv run --plot
 * FILE` draws from the finished runs; `dsv4kv plot REPORT.json -o FILE`
 * from a JSON report (schema 2) written earlier.  FILE ends in .png or .svg. */
#ifndef DSV4KV_SIM_PLOT_H
#define DSV4KV_SIM_PLOT_H

#include <stddef.h>
#include <stdint.h>

#include "ctx.h"

typedef struct {
  char format[16], indexer[16];
  int32_t pool_pages;
  double bpt_swa, bpt_comp, bpt_idx; /* whole model, bytes per token */
  int n;                             /* points (0: the run did not run) */
  const sim_point *pts;
} sim_plot_run;

typedef struct {
  char model[64];
  char workload[512];
  int layers;
  int n;
  sim_plot_run runs[SIM_MAX_FORMATS];
  sim_point *owned[SIM_MAX_FORMATS]; /* points read from a JSON report */
} sim_plot_data;

/* Before a run: FILE ends in .png or .svg, gnuplot is on $PATH, and FILE can
 * be created (it is, empty).  0, or -1 with the reason in why. */
int sim_plot_check(const char *path, char *why, size_t n);

/* The plot of finished runs (pointing into their series).  0, or -1 when no
 * run has a time series. */
int sim_plot_data_of(const sim_ctx *const *runs, int n, sim_plot_data *out);

/* Runs gnuplot to draw d into path.  0, or -1 (message on stderr). */
int sim_plot_write(const sim_plot_data *d, const char *path);

/* `dsv4kv plot REPORT.json -o FILE` (argv[0] is "plot").  Exit status 0, or
 * 2 (message on stderr). */
int sim_plot_command(int argc, char **argv);

#endif
