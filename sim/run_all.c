/* sim_run: the runs of a --format list, one after the other, then what
 * compares them (see sim.h).
 *
 * One run per format rather than one pass with a cache per format: each
 * format's pool is sized on its own (--kv-cache-memory gives a smaller record
 * more pages), so the formats schedule differently -- different admissions,
 * preemptions and latencies -- and one shared schedule would hide exactly
 * what the comparison is for.  Runs one after the other also hold one
 * format's caches at a time.  The cost is one run's time per format.
 *
 * Everything that can be checked before the first step is: the JSON file is
 * opened, the plot's file created and gnuplot found, so that a bad path is
 * reported at once, not after minutes of simulation. */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "files.h"
#include "plot.h"
#include "report.h"
#include "device.h"
#include "run.h"

typedef struct {
  FILE *json;            /* --json's stream once written (stdout from the start), or NULL */
  FILE *text;            /* the text report's stream */
  const char *json_name;
  const char *json_path; /* --json's file, opened when the report is written; NULL for stdout */
} outputs;

/* Checks --json's and --plot's files before anything runs, creating and
 * truncating nothing (a run refused or failed leaves them as they were;
 * the JSON is opened when it is written): neither may be the trace or the
 * other, and both must be writable. */
static int open_outputs(const sim_config *cfg, outputs *o) {
  memset(o, 0, sizeof *o);
  const int to_stdout = sim_json_to_stdout(cfg);
  o->text = to_stdout ? stderr : stdout;
  o->json_name = to_stdout ? "stdout" : cfg->json_path;
  o->json_path = to_stdout ? NULL : cfg->json_path;
  const char *outs[2][2] = {{"--json", o->json_path}, {"--plot", cfg->plot_path}};
  for (int i = 0; i < 2; i++) {
    if (sim_same_file(outs[i][1], cfg->trace_path)) {
      fprintf(stderr, "dsv4kv run: %s %s is the trace; it would be overwritten (nothing was run)\n", outs[i][0],
              outs[i][1]);
      return -1;
    }
  }
  if (sim_same_file(o->json_path, cfg->plot_path)) {
    fprintf(stderr, "dsv4kv run: --json and --plot name one file, %s (nothing was run)\n", o->json_path);
    return -1;
  }
  char why[512];
  if (o->json_path && sim_output_writable(o->json_path, why, sizeof why)) {
    fprintf(stderr, "dsv4kv run: --json %s: %s (nothing was run)\n", o->json_path, why);
    return -1;
  }
  if (cfg->plot_path && sim_plot_check(cfg->plot_path, why, sizeof why)) {
    fprintf(stderr, "dsv4kv run: --plot %s: %s (nothing was run)\n", cfg->plot_path, why);
    return -1;
  }
  if (to_stdout)
    o->json = stdout;
  return 0;
}

static void close_outputs(outputs *o) {
  if (o->json && o->json != stdout)
    fclose(o->json);
  o->json = NULL;
}

/* The config of run i: its format, and its indexer format unless given. */
static sim_config run_config(const sim_config *cfg, int i) {
  sim_config r = *cfg;
  if (cfg->num_formats > 0)
    r.format = cfg->formats[i];
  if (!cfg->indexer_set)
    r.indexer_format = sim_default_indexer(r.format);
  return r;
}

static void report_run(FILE *f, const sim_ctx *c) {
  if (!c->ran)
    return;
  if (c->cfg.quiet) {
    sim_report_quiet(f, c, c->ok);
  } else {
    if (c->run_count > 1)
      fprintf(f, "%s==== run %d of %d: --format %s ====\n\n", c->run_index ? "\n" : "",
              c->run_index + 1, c->run_count, sim_format_name(c->cfg.format));
    sim_report_text(f, c, c->ok, c->stop_msg[0] ? c->stop_msg : NULL);
  }
  fflush(f);
}

/* Writes the JSON and the plot.  Returns 0, or -1 when one failed. */
static int finish_outputs(const sim_config *cfg, outputs *o, sim_ctx **runs, int n) {
  int rc = 0;
  if (o->json_path && !(o->json = fopen(o->json_path, "w"))) {
    fprintf(stderr, "dsv4kv run: --json %s: cannot open the file for writing: %s\n", o->json_path, strerror(errno));
    rc = -1;
  }
  if (o->json && sim_report_json(o->json, o->json_name, (const sim_ctx *const *)runs, n))
    rc = -1;
  if (cfg->plot_path) {
    sim_plot_data pd;
    if (sim_plot_data_of((const sim_ctx *const *)runs, n, &pd) == 0) {
      if (sim_plot_write(&pd, cfg->plot_path) == 0) {
        if (!cfg->quiet)
          fprintf(stderr, "dsv4kv run: plot written to %s\n", cfg->plot_path);
      } else {
        rc = -1;
      }
    } else {
      fprintf(stderr, "dsv4kv run: --plot: no run produced a time series to draw\n");
      rc = -1;
    }
  }
  return rc;
}

int sim_run(const sim_config *cfg) {
  if (sim_config_check(cfg))
    return SIM_EXIT_CANNOT_RUN;
  if (cfg->device_cuda && sim_dev_open())
    return SIM_EXIT_CANNOT_RUN;
  outputs o;
  if (open_outputs(cfg, &o)) {
    close_outputs(&o);
    sim_dev_close();
    return SIM_EXIT_CANNOT_RUN;
  }
  int n = cfg->num_formats > 0 ? cfg->num_formats : 1, rc = SIM_EXIT_OK, ran = 0;
  sim_ctx *runs[SIM_MAX_FORMATS] = {NULL};
  for (int i = 0; i < n; i++) {
    sim_config ri = run_config(cfg, i);
    runs[i] = sim_run_one(&ri, i, n);
    if (!runs[i]) {
      rc = SIM_EXIT_CANNOT_RUN;
      n = i;
      break;
    }
    report_run(o.text, runs[i]);
    ran += runs[i]->ran;
    if (runs[i]->rc > rc)
      rc = runs[i]->rc;
  }
  if (n > 1) {
    sim_report_compare(o.text, (const sim_ctx *const *)runs, n);
    fflush(o.text);
  }
  if (ran > 0 && finish_outputs(cfg, &o, runs, n) && rc == SIM_EXIT_OK)
    rc = SIM_EXIT_CANNOT_RUN;
  close_outputs(&o);
  for (int i = 0; i < n; i++)
    sim_ctx_free(runs[i]);
  sim_dev_close();
  return rc;
}
