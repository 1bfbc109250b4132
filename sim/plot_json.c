/* `dsv4kv plot REPORT.json -o FILE`: the plot of a JSON report written by
 * `dsv4kv run --json` (schema 2; see plot.h, report_json.c). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <errno.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "files.h"
#include "plot.h"

static void usage(FILE *f) {
  fprintf(f,
          "usage: dsv4kv plot REPORT.json -o FILE\n"
          "\n"
          "Draws a JSON report of 'dsv4kv run --json' (schema_version %d) with gnuplot\n"
          "(Debian package gnuplot-nox): pages in use, running and queued requests over\n"
          "virtual time, and the whole model's cache bytes per token, for each format of\n"
          "the run.  FILE ends in .png or .svg.  'dsv4kv run --plot FILE' draws the same\n"
          "straight from a run.\n"
          "\n"
          "options:\n"
          "  -o, --output FILE  the picture to write (.png or .svg)\n"
          "  -h, --help         this text\n"
          "\n"
          "exit status: 0 written; 2 bad arguments, unreadable report, no gnuplot.\n",
          2);
}

/* A report is at most this large: `dsv4kv run` writes well under 1 MiB
 * (at most 2000 points a run, three runs); 16 MiB bounds what a hostile
 * file can make the plot parse (~0.4 GB and a few seconds). */
#define REPORT_MAX_BYTES ((size_t)16 << 20)

/* The report's text, or NULL with the reason in err. */
static char *slurp(const char *path, char *err, size_t errlen) {
  FILE *f = sim_open_regular(path, "a run report", NULL, err, errlen);
  if (!f)
    return NULL;
  size_t cap = 1 << 16, n = 0;
  char *buf = malloc(cap);
  while (buf) {
    n += fread(buf + n, 1, cap - n - 1, f);
    if (n < cap - 1)
      break;
    if (cap >= REPORT_MAX_BYTES) { /* past the cap: refused */
      snprintf(err, errlen, "%s: larger than a run report can be (%zu MiB)", path, REPORT_MAX_BYTES >> 20);
      free(buf);
      buf = NULL;
      break;
    }
    char *p = realloc(buf, cap * 2);
    if (!p) {
      free(buf);
      buf = NULL;
      break;
    }
    buf = p;
    cap *= 2;
  }
  if (buf)
    buf[n] = 0;
  fclose(f);
  return buf;
}

/* Text from the report headed for the gnuplot script: letters, digits and a
 * few harmless marks go through, the rest becomes _ (a quote, a line break,
 * a backquote could end a string or a data block and reach the shell). */
static void plot_text(char *t) {
  for (; *t; t++)
    if (!((*t >= 'a' && *t <= 'z') || (*t >= 'A' && *t <= 'Z') || (*t >= '0' && *t <= '9') ||
          strchr(" _-.,=()+:/%", *t)))
      *t = '_';
}

/* A JSON number as an integer of [lo, hi] (anything else: lo). */
static double in_range(double v, double lo, double hi) { return v >= lo && v <= hi ? v : lo; }

static double num(const cJSON *o, const char *key) {
  const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, key);
  return cJSON_IsNumber(x) ? x->valuedouble : 0.0;
}

static const char *str(const cJSON *o, const char *key) {
  const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, key);
  return cJSON_IsString(x) ? x->valuestring : "?";
}

/* One run's series from the columns of its time_series.  0, or -1. */
static int read_series(const cJSON *run, sim_point **out, int *n) {
  const cJSON *ts = cJSON_GetObjectItemCaseSensitive(run, "time_series");
  const cJSON *t = cJSON_GetObjectItemCaseSensitive(ts, "virtual_time_s");
  const cJSON *pg = cJSON_GetObjectItemCaseSensitive(ts, "pages_in_use");
  const cJSON *ru = cJSON_GetObjectItemCaseSensitive(ts, "running");
  const cJSON *qu = cJSON_GetObjectItemCaseSensitive(ts, "queued");
  *out = NULL;
  *n = 0;
  if (!cJSON_IsArray(t))
    return cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(run, "ran")) ? 0 : -1;
  int len = cJSON_GetArraySize(t);
  if (!cJSON_IsArray(pg) || !cJSON_IsArray(ru) || !cJSON_IsArray(qu) ||
      cJSON_GetArraySize(pg) != len || cJSON_GetArraySize(ru) != len ||
      cJSON_GetArraySize(qu) != len)
    return -1;
  sim_point *p = calloc((size_t)(len > 0 ? len : 1), sizeof *p);
  if (!p)
    return -1;
  /* the four columns walked together (cJSON_GetArrayItem is O(i)) */
  const cJSON *a = t->child, *b = pg->child, *c = ru->child, *q = qu->child;
  for (int i = 0; i < len && a && b && c && q; i++, a = a->next, b = b->next, c = c->next, q = q->next) {
    p[i].t_s = in_range(a->valuedouble, 0, 1e12);
    p[i].pages = (int32_t)in_range(b->valuedouble, 0, INT32_MAX);
    p[i].running = (int32_t)in_range(c->valuedouble, 0, INT32_MAX);
    p[i].queued = (int64_t)in_range(q->valuedouble, 0, 1e15);
  }
  *out = p;
  *n = len;
  return 0;
}

/* The plot data of a parsed report.  0, or -1 with the reason in why. */
static int data_of(const cJSON *root, sim_plot_data *d, const char **why) {
  memset(d, 0, sizeof *d);
  if (num(root, "schema_version") != 2) {
    *why = "not a 'dsv4kv run --json' report of schema_version 2";
    return -1;
  }
  const cJSON *model = cJSON_GetObjectItemCaseSensitive(root, "model");
  const cJSON *runs = cJSON_GetObjectItemCaseSensitive(root, "runs");
  snprintf(d->model, sizeof d->model, "%s", str(model, "name"));
  plot_text(d->model);
  d->layers = (int)in_range(num(model, "layers"), 0, 1 << 20);
  int points = 0;
  for (int i = 0; cJSON_IsArray(runs) && i < cJSON_GetArraySize(runs) && i < SIM_MAX_FORMATS;
       i++) {
    const cJSON *r = cJSON_GetArrayItem(runs, i);
    const cJSON *mb = cJSON_GetObjectItemCaseSensitive(r, "model_bytes");
    const cJSON *cfg = cJSON_GetObjectItemCaseSensitive(r, "config");
    sim_plot_run *pr = &d->runs[d->n++];
    snprintf(pr->format, sizeof pr->format, "%s", str(r, "format"));
    snprintf(pr->indexer, sizeof pr->indexer, "%s", str(r, "indexer_format"));
    plot_text(pr->format), plot_text(pr->indexer);
    if (i == 0)
      snprintf(d->workload, sizeof d->workload, "%s", str(r, "workload")), plot_text(d->workload);
    pr->pool_pages = (int32_t)in_range(num(cfg, "num_blocks"), 0, INT32_MAX);
    pr->bpt_swa = num(mb, "swa_bytes_per_token");
    pr->bpt_comp = num(mb, "compressed_bytes_per_token");
    pr->bpt_idx = num(mb, "indexer_bytes_per_token");
    if (read_series(r, &d->owned[i], &pr->n)) {
      *why = "a run's time_series is missing or malformed";
      return -1;
    }
    pr->pts = d->owned[i];
    points += pr->n;
  }
  if (points == 0) {
    *why = "no run in the report has a time series";
    return -1;
  }
  return 0;
}

static int plot_file(const char *in, const char *out) {
  char err[512] = "";
  char *text = slurp(in, err, sizeof err);
  if (!text) {
    fprintf(stderr, "dsv4kv plot: %s\n", err[0] ? err : "out of memory reading the report");
    return 2;
  }
  cJSON *root = cJSON_Parse(text);
  free(text);
  sim_plot_data d;
  const char *why = "not valid JSON";
  int rc = 2;
  if (root && data_of(root, &d, &why) == 0) {
    if (sim_plot_check(out, err, sizeof err))
      fprintf(stderr, "dsv4kv plot: -o %s: %s\n", out, err);
    else if (sim_plot_write(&d, out) == 0)
      rc = 0;
    else
      remove(out);
  } else {
    fprintf(stderr, "dsv4kv plot: %s: %s\n", in, why);
  }
  for (int i = 0; root && i < SIM_MAX_FORMATS; i++)
    free(d.owned[i]);
  cJSON_Delete(root);
  return rc;
}

int sim_plot_command(int argc, char **argv) {
  const char *in = NULL, *out = NULL;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
      usage(stdout);
      return 0;
    }
    if (!strcmp(a, "-o") || !strcmp(a, "--output")) {
      if (i + 1 >= argc) {
        fprintf(stderr, "dsv4kv plot: option '%s' needs a value\n", a);
        return 2;
      }
      out = argv[++i];
    } else if (a[0] == '-' && a[1]) {
      fprintf(stderr, "dsv4kv plot: unknown option '%s' (see 'dsv4kv plot --help')\n", a);
      return 2;
    } else if (!in) {
      in = a;
    } else {
      fprintf(stderr, "dsv4kv plot: unexpected argument '%s'\n", a);
      return 2;
    }
  }
  if (!in || !out) {
    fprintf(stderr, "dsv4kv plot: give a JSON report and -o FILE (see 'dsv4kv plot --help')\n");
    return 2;
  }
  if (sim_same_file(in, out)) {
    fprintf(stderr, "dsv4kv plot: -o %s is the report; it would be overwritten\n", out);
    return 2;
  }
  const int rc = plot_file(in, out);
  if (!rc) fprintf(stderr, "dsv4kv plot: plot written to %s\n", out); /* as run --plot and bench --plot say */
  return rc;
}
