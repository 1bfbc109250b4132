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

#include "plot.h"
#include "report.h"
#include "device.h"
#include "run.h"

typedef struct {
  FILE *json;          /* --json's stream, or NULL */
  FILE *text;          /* the text report's stream */
  const char *json_name;
  int plot_created;    /* the --plot file was created by the checks */
} outputs;

/* Whether paths a and b name one existing file (links and other spellings
 * included). */
static int same_file(const char *a, const char *b) {
  struct stat sa, sb;
  return a && b && stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

/* Opens --json's file and checks --plot's before anything runs; neither may
 * be the trace (opening it for writing would empty it) or the other. */
static int open_outputs(const sim_config *cfg, outputs *o) {
  memset(o, 0, sizeof *o);
  int to_stdout = sim_json_to_stdout(cfg);
  const char *outs[2][2] = {{"--json", to_stdout ? NULL : cfg->json_path}, {"--plot", cfg->plot_path}};
  for (int i = 0; i < 2; i++) {
    if (same_file(outs[i][1], cfg->trace_path)) {
      fprintf(stderr, "dsv4kv run: %s %s is the trace; it would be overwritten (nothing was run)\n", outs[i][0],
              outs[i][1]);
      return -1;
    }
  }
  o->text = to_stdout ? stderr : stdout;
  o->json_name = to_stdout ? "stdout" : cfg->json_path;
  /* --json and --plot naming one file: seen by stat where the file exists,
   * else once --json's new file is created (and then removed again) */
  const int json_new = !to_stdout && cfg->json_path && access(cfg->json_path, F_OK) != 0;
  if (!to_stdout && same_file(cfg->json_path, cfg->plot_path)) {
    fprintf(stderr, "dsv4kv run: --json and --plot name one file, %s (nothing was run)\n", cfg->json_path);
    return -1;
  }
  if (to_stdout)
    o->json = stdout;
  else if (cfg->json_path && !(o->json = fopen(cfg->json_path, "w"))) {
    fprintf(stderr, "dsv4kv run: --json %s: cannot open the file for writing: %s (nothing was run)\n",
            cfg->json_path, strerror(errno));
    return -1;
  }
  if (json_new && o->json && same_file(cfg->json_path, cfg->plot_path)) {
    fclose(o->json);
    o->json = NULL;
    remove(cfg->json_path);
    fprintf(stderr, "dsv4kv run: --json and --plot name one file, %s (nothing was run)\n", cfg->json_path);
    return -1;
  }
  if (cfg->plot_path) {
    char why[512];
    if (sim_plot_check(cfg->plot_path, why, sizeof why)) {
      fprintf(stderr, "dsv4kv run: --plot %s: %s (nothing was run)\n", cfg->plot_path, why);
      return -1;
    }
    o->plot_created = 1;
  }
  return 0;
}

static void close_outputs(outputs *o, int plotted, const char *plot_path) {
  if (o->json && o->json != stdout)
    fclose(o->json);
  if (o->plot_created && !plotted)
    remove(plot_path); /* the empty file the check created */
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
static int finish_outputs(const sim_config *cfg, outputs *o, sim_ctx **runs, int n, int *plotted) {
  int rc = 0;
  if (o->json && sim_report_json(o->json, o->json_name, (const sim_ctx *const *)runs, n))
    rc = -1;
  if (cfg->plot_path) {
    sim_plot_data pd;
    if (sim_plot_data_of((const sim_ctx *const *)runs, n, &pd) == 0) {
      if (sim_plot_write(&pd, cfg->plot_path) == 0) {
        *plotted = 1;
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
    close_outputs(&o, 0, cfg->plot_path);
    sim_dev_close();
    return SIM_EXIT_CANNOT_RUN;
  }
  int n = cfg->num_formats > 0 ? cfg->num_formats : 1, rc = SIM_EXIT_OK, ran = 0, plotted = 0;
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
  if (ran > 0 && finish_outputs(cfg, &o, runs, n, &plotted) && rc == SIM_EXIT_OK)
    rc = SIM_EXIT_CANNOT_RUN;
  close_outputs(&o, plotted, cfg->plot_path);
  for (int i = 0; i < n; i++)
    sim_ctx_free(runs[i]);
  sim_dev_close();
  return rc;
}
