/* dsv4kv bench: every op and record at decode, prefill and large sizes, timed
 * (warm-up, median of many runs) beside the copy bandwidth measured in the
 * same run; a table, JSON and a gnuplot plot.  Here: the command, the CPU
 * timing (the same thread count for the ops and the memcpy ceiling) and the
 * plot; the GPU timing (CUDA events and graphs) is tools/bench_gpu.c. */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <getopt.h>
#include <omp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "bench.h"
#include "bench_cases.h"
#include "commands.h"
#include "files.h" /* sim_output_writable, sim_same_file */
#include "plot.h"  /* sim_plot_check: the --plot file checked before the run, as dsv4kv run does */

double bench_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

double bench_median(double *t, int n) {
  if (n < 1) return -1;
  qsort(t, (size_t)n, sizeof t[0], cmp_double);
  return n % 2 ? t[n / 2] : 0.5 * (t[n / 2 - 1] + t[n / 2]);
}

/* Median seconds of a function over at least o->min_runs runs after one
 * warm-up run; *runs gets the count. */
static double median_seconds(int (*fn)(void *), void *arg, const bench_opts *o, int *runs) {
  double t[BENCH_MAX_RUNS], total = 0;
  int n = 0;
  if (fn(arg)) return -1;
  while (n < BENCH_MAX_RUNS && (n < o->min_runs || total < o->min_seconds)) {
    double t0 = bench_now();
    if (fn(arg)) return -1;
    t[n] = bench_now() - t0;
    total += t[n++];
  }
  *runs = n;
  return bench_median(t, n);
}

/* ---- the ceiling: memcpy of a buffer well past the caches, same threads ---- */
typedef struct {
  char *src, *dst;
  size_t n;
  int threads;
} copy_arg;

/* One thread's share of the copy. */
typedef struct {
  char *dst;
  const char *src;
  size_t n;
} copy_part;
static void *copy_part_run(void *p) {
  copy_part *c = p;
  memcpy(c->dst, c->src, c->n);
  return NULL;
}

/* The copy on plain threads started for it, not an OpenMP team: libgomp's
 * idle threads spin for a while after a parallel region, and on a 2-core
 * machine they took the processor the library's own workers would use for
 * the configuration timed next (2026-12-07-cpu-zen4/pool-spin.txt). */
static int run_copy(void *p) {
  copy_arg *c = p;
  enum { MAX_COPY_THREADS = 256 };
  const int nt = c->threads < 1 ? 1 : c->threads > MAX_COPY_THREADS ? MAX_COPY_THREADS : c->threads;
  const size_t chunk = (c->n + (size_t)nt - 1) / (size_t)nt;
  copy_part parts[MAX_COPY_THREADS];
  pthread_t th[MAX_COPY_THREADS];
  int started[MAX_COPY_THREADS] = {0};
  for (int i = 0; i < nt; i++) {
    const size_t lo = (size_t)i * chunk < c->n ? (size_t)i * chunk : c->n;
    const size_t hi = lo + chunk < c->n ? lo + chunk : c->n;
    parts[i] = (copy_part){c->dst + lo, c->src + lo, hi - lo};
    if (i > 0) started[i] = pthread_create(&th[i], NULL, copy_part_run, &parts[i]) == 0;
  }
  copy_part_run(&parts[0]);
  for (int i = 1; i < nt; i++) {
    if (started[i]) pthread_join(th[i], NULL);
    else copy_part_run(&parts[i]); /* a thread that could not start: its part here */
  }
  return 0;
}

/* The memcpy ceiling: 256 MiB copied with the bench's threads, median of
 * `runs` runs; its buffers live for the whole bench (copy_open / copy_close),
 * so it can be measured again beside every configuration. */
static int copy_open(copy_arg *c, int threads) {
  *c = (copy_arg){NULL, NULL, (size_t)256 << 20, threads};
  c->src = malloc(c->n), c->dst = malloc(c->n);
  if (!c->src || !c->dst) {
    free(c->src), free(c->dst);
    return -1;
  }
  memset(c->src, 1, c->n), memset(c->dst, 2, c->n);
  return 0;
}
static void copy_close(copy_arg *c) { free(c->src), free(c->dst); }
static double copy_gbps(copy_arg *c, const bench_opts *o, int runs) {
  if (!c->src) return -1;
  int n;
  bench_opts oo = *o;
  oo.min_runs = runs, oo.min_seconds = 0;
  double s = median_seconds(run_copy, c, &oo, &n);
  return s > 0 ? 2.0 * (double)c->n / s / 1e9 : -1;
}

/* Configurations of at least this many bytes are timed in pairs with the
 * copy (paired_ratio): past the last-level cache each run comes from
 * memory, and on a machine shared with other work its share of the memory
 * moves within a second, so a ceiling measured only before the runs (as
 * for the smaller configurations, which run warm) can be from another
 * moment than they are.  64 MiB: the inserts and gathers of >= 64k tokens. */
enum { BENCH_PAIRED_MIN_BYTES = 64 << 20 };

/* The op `fn` (bytes a call) and the copy alternated run by run after one
 * warm-up call of each, at least o->min_runs pairs and o->min_seconds of the
 * op: the median op seconds, the median copy GB/s in *copy, and in *pct the
 * median of each pair's op GB/s as % of its copy's GB/s; *runs the pairs. */
static double paired_ratio(int (*fn)(void *), void *arg, double bytes, copy_arg *cp, const bench_opts *o,
                           int *runs, double *copy, double *pct) {
  double t[BENCH_MAX_RUNS], g[BENCH_MAX_RUNS], r[BENCH_MAX_RUNS], total = 0;
  int n = 0;
  if (fn(arg) || run_copy(cp)) return -1;
  while (n < BENCH_MAX_RUNS && (n < o->min_runs || total < o->min_seconds)) {
    double t0 = bench_now();
    run_copy(cp);
    const double tc = bench_now() - t0;
    t0 = bench_now();
    if (fn(arg)) return -1;
    t[n] = bench_now() - t0;
    g[n] = 2.0 * (double)cp->n / tc / 1e9;
    r[n] = 100.0 * (bytes / t[n] / 1e9) / g[n];
    total += t[n++];
  }
  *runs = n;
  *copy = bench_median(g, n);
  *pct = bench_median(r, n);
  return bench_median(t, n);
}

/* ---- the ops ------------------------------------------------------------- */
typedef struct {
  bench_case *c;
  dsv4kv_options opt;
} op_arg;

static int run_op(void *p) {
  op_arg *a = p;
  dsv4kv_status st = opcall_run(&a->c->call, &a->opt);
  if (dsv4kv_is_error(st)) {
    fprintf(stderr, "dsv4kv bench: %s: %s\n", a->c->name, dsv4kv_last_error());
    return -1;
  }
  return 0;
}

static void usage(FILE *f) {
  fprintf(f,
          "usage: dsv4kv bench [--device cpu|cuda] [--op OP] [--record REC] [--sizes decode|prefill|large|all]\n"
          "                    [--threads N] [--min-runs N] [--min-seconds S] [--report] [--json FILE] [--plot FILE]\n"
          "       dsv4kv bench --from-json FILE --plot FILE\n"
          "\n"
          "Times every op and record at the reference's anchor configurations (e.g.\n"
          "'insert_v4 N=4096', 'gather_mxfp8 64x16384').  GB/s counts the compulsory bytes\n"
          "read + written, as the anchor does, beside a copy measured in the same run.\n"
          "  cpu:  one warm-up call, then the median of at least --min-runs runs (default 5)\n"
          "        and of at least --min-seconds (default 0.2); the ceiling is a memcpy of\n"
          "        256 MiB with the same threads, measured again before each configuration\n"
          "        (sizes that stay in the caches can pass it); from 64 MiB a configuration's\n"
          "        runs alternate with memcpy runs and %% copy is the median of the pairs' ratios.\n"
          "  cuda: device 0.  eager = one call between CUDA events, stream idle and L2\n"
          "        flushed before it (host side of the call included); graph = the call\n"
          "        captured n times in a CUDA graph, replayed, divided by n; medians after\n"
          "        warm-up (eager: at least --min-runs, default 20).  The ceiling is a\n"
          "        device-to-device copy of 2 GiB; the reference's H200 figures and our\n"
          "        ratio to them are listed where the anchor has the configuration.\n"
          "        Inserts at >= 64k tokens and the indexer store at 16384 are timed again\n"
          "        with distinct slots promised (options.distinct_slots: rows ending in\n"
          "        ', distinct slots'); the CPU, which ignores the promise, leaves them out.\n"
          "  Global top-k and flashinfer at T 4096, top-k 1024 run again with an engine's\n"
          "  block table, 2048 columns wide (rows ending in ', table of 2048 columns'; the\n"
          "  entries still in the first 65-69 columns; no reference figure).\n"
          "\n"
          "  --op OP        insert, gather, global_topk, combine, flashinfer, indexer or all (the default)\n"
          "  --record REC   v4, mxfp8, nvfp4 (inserts, gathers), fp8, mxfp4 (indexer), or all (the default)\n"
          "  --sizes S      decode (64-256 tokens; gathers 64 requests x 256), prefill (4096-16384),\n"
          "                 large (65536+ tokens; gathers 8 x 8192, 64 x 16384), all (default)\n"
          "  --threads N    CPU threads per call and for the memcpy, 0..1024 (default, and 0: the processors)\n"
          "  --min-runs N   timed runs at least (1..200; default 5, cuda 20); --min-seconds S (0..60, 0.2)\n"
          "                 keeps timing until S seconds are spent, up to 200 runs\n"
          "  --device D     cpu (default) or cuda (device 0)\n"
          "  --report       cuda: give every call a device report (skip counts) as an engine may\n"
          "  --json FILE    the table as JSON;  --plot FILE  GB/s against size (.png or .svg, gnuplot)\n"
          "  --from-json F  no timing: --plot the results of an earlier --json F\n"
          "exit status: 0; 1 when a call, the JSON or the plot failed; 2 for a usage error, a\n"
          "device without a backend, an output that cannot be written, no gnuplot for --plot,\n"
          "a --from-json file that cannot be read or holds no results of bench --json.\n");
}

/* The CPU half: fills root; returns the exit status. */
static int bench_cpu(const bench_opts *o, cJSON *root) {
  copy_arg cp;
  if (copy_open(&cp, o->threads)) cp.src = NULL; /* no ceiling: the % columns read 0 */
  double ceiling = copy_gbps(&cp, o, 5);
  const char *ignored = cli_cpu_path_ignored();
  if (ignored) fprintf(stderr, "dsv4kv bench: %s\n", ignored);
  printf("dsv4kv bench: cpu, %d thread%s, libdsv4kv %s, cpu path %s; memcpy 256 MiB: %.1f GB/s (read + write)\n",
         o->threads, o->threads == 1 ? "" : "s", dsv4kv_version(), dsv4kv_cpu_path_current(), ceiling);
  printf("(%% copy: against the memcpy measured again just before each configuration, its GB/s in \"copy\":\n"
         " a machine shared with other work moves both together; rows marked p, of %d MiB or more: each run\n"
         " paired with a memcpy run, %% copy the median of the pairs' ratios, copy the pairs' median)\n",
         BENCH_PAIRED_MIN_BYTES >> 20);
  printf("%-62s %10s %11s %9s %7s %7s %5s\n", "config", "MB", "median us", "GB/s", "copy", "% copy", "runs");
  double ceilings[256];
  int nceil = 0;
  cJSON *rows = cJSON_GetObjectItem(root, "results");
  cJSON_AddStringToObject(root, "device", "cpu");
  cJSON_AddNumberToObject(root, "threads", o->threads);
  cJSON_AddStringToObject(root, "cpu_path", dsv4kv_cpu_path_current());
  cJSON_AddNumberToObject(root, "copy_gbps", ceiling);
  int rc = 0, matched = 0;
  for (int i = 0;; i++) {
    bench_case c;
    int m = bench_case_make(i, o->op, o->record, o->sizes, &c);
    if (m == 0) break;
    if (m == -1) continue;
    if (m == 1 && c.distinct_slots) { /* the CPU resolves duplicates whatever the call promises */
      bench_case_free(&c);
      continue;
    }
    if (m == -2) {
      fprintf(stderr, "dsv4kv bench: out of memory building config %d\n", i);
      rc = 1;
      break;
    }
    matched++;
    op_arg a = {&c, {.num_threads = o->threads}};
    int runs = 0;
    const int paired = cp.src && c.bytes >= BENCH_PAIRED_MIN_BYTES;
    double here = -1, pct = 0, s;
    if (paired) {
      s = paired_ratio(run_op, &a, (double)c.bytes, &cp, o, &runs, &here, &pct);
    } else {
      here = copy_gbps(&cp, o, 3);
      s = median_seconds(run_op, &a, o, &runs);
    }
    if (here > 0 && nceil < 256) ceilings[nceil++] = here;
    if (s < 0) {
      rc = 1;
    } else {
      double gbps = (double)c.bytes / s / 1e9;
      if (!paired) pct = here > 0 ? 100 * gbps / here : 0;
      printf("%-62s %10.2f %11.1f %9.2f %7.1f %6.1f%% %5d%s\n", c.name, (double)c.bytes / 1e6, s * 1e6, gbps, here,
             pct, runs, paired ? " p" : "");
      fflush(stdout);
      cJSON *r = cJSON_CreateObject();
      cJSON_AddStringToObject(r, "config", c.name);
      cJSON_AddStringToObject(r, "op", c.op);
      cJSON_AddStringToObject(r, "record", c.record);
      cJSON_AddStringToObject(r, "size", c.size);
      cJSON_AddNumberToObject(r, "tokens", (double)c.tokens);
      cJSON_AddNumberToObject(r, "bytes", (double)c.bytes);
      cJSON_AddNumberToObject(r, "median_us", s * 1e6);
      cJSON_AddNumberToObject(r, "gbps", gbps);
      cJSON_AddNumberToObject(r, "copy_gbps", here);
      cJSON_AddNumberToObject(r, "pct_copy", pct);
      cJSON_AddNumberToObject(r, "runs", runs);
      cJSON_AddBoolToObject(r, "paired", paired);
      if (c.table_columns) cJSON_AddNumberToObject(r, "table_columns", (double)c.table_columns);
      cJSON_AddItemToArray(rows, r);
    }
    bench_case_free(&c);
  }
  copy_close(&cp);
  /* the plot's ceiling line: the median of the per-configuration copies */
  if (nceil > 0) {
    qsort(ceilings, (size_t)nceil, sizeof *ceilings, cmp_double);
    cJSON_ReplaceItemInObject(root, "copy_gbps", cJSON_CreateNumber(ceilings[nceil / 2]));
  }
  if (!matched && !rc) {
    fprintf(stderr, "dsv4kv bench: no configuration matches the filters (gathers have decode and large sizes, "
                    "the indexer decode and prefill)\n");
    rc = 2;
  }
  return rc;
}

/* --op / --record / --sizes among their choices; 0, or -1 with a message. */
static int check_choices(const bench_opts *o) {
  static const char *const ops[] = {"insert", "gather", "global_topk", "combine", "flashinfer", "indexer", NULL};
  static const char *const recs[] = {"v4", "mxfp8", "nvfp4", "fp8", "mxfp4", NULL};
  static const char *const szs[] = {"decode", "prefill", "large", NULL};
  const char *const *lists[] = {ops, recs, szs};
  const char *given[] = {o->op, o->record, o->sizes}, *what[] = {"--op", "--record", "--sizes"};
  for (int l = 0; l < 3; l++) {
    int ok = !given[l];
    for (const char *const *v = lists[l]; !ok && *v; v++) ok = !strcmp(*v, given[l]);
    if (ok) continue;
    fprintf(stderr, "dsv4kv bench: %s %s is not one of", what[l], given[l]);
    for (const char *const *v = lists[l]; *v; v++) fprintf(stderr, " %s,", *v);
    fprintf(stderr, " all\n");
    return -1;
  }
  return 0;
}

/* A whole number in [lo, hi] (no sign games, no wrap), or -1. */
static long parse_long(const char *s, long lo, long hi) {
  char *end = NULL;
  if (!*s || *s == ' ' || *s == '+') return -1;
  errno = 0;
  long v = strtol(s, &end, 10);
  return errno || *end || v < lo || v > hi ? -1 : v;
}

typedef struct {
  const char *json, *plot, *from;
  int cuda, timing_options; /* options that only a timed run reads */
} bench_cli;

/* Parses argv into o and c; 0, 1 for --help (printed), 2 for a usage error
 * (message printed). */
static int parse_args(int argc, char **argv, bench_opts *o, bench_cli *c) {
  static const struct option longopts[] = {
      {"device", required_argument, NULL, 'd'},  {"op", required_argument, NULL, 'o'},
      {"record", required_argument, NULL, 'r'},  {"sizes", required_argument, NULL, 's'},
      {"threads", required_argument, NULL, 't'}, {"min-runs", required_argument, NULL, 'n'},
      {"min-seconds", required_argument, NULL, 'S'}, {"json", required_argument, NULL, 'j'},
      {"plot", required_argument, NULL, 'p'},    {"report", no_argument, NULL, 'R'},
      {"from-json", required_argument, NULL, 'F'}, {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0}};
  int ch;
  optind = 1;
  opterr = 0; /* one-line messages of our own, as run's */
  while ((ch = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
    long v = 0;
    char *end = NULL;
    c->timing_options += ch != 'p' && ch != 'F' && ch != 'h';
    switch (ch) {
      case 'd':
        if (strcmp(optarg, "cpu") && strcmp(optarg, "cuda"))
          return fprintf(stderr, "dsv4kv bench: --device %s: not one of cpu, cuda\n", optarg), 2;
        c->cuda = !strcmp(optarg, "cuda");
        break;
      case 'o': o->op = strcmp(optarg, "all") ? optarg : NULL; break;
      case 'r': o->record = strcmp(optarg, "all") ? optarg : NULL; break;
      case 's': o->sizes = strcmp(optarg, "all") ? optarg : NULL; break;
      case 't':
      case 'n':
        v = parse_long(optarg, ch == 't' ? 0 : 1, ch == 't' ? 1024 : BENCH_MAX_RUNS);
        if (v < 0)
          return fprintf(stderr, "dsv4kv bench: --%s %s: not a whole number in %d..%d\n", ch == 't' ? "threads" : "min-runs",
                         optarg, ch == 't' ? 0 : 1, ch == 't' ? 1024 : BENCH_MAX_RUNS), 2;
        if (ch == 't') o->threads = v ? (int)v : omp_get_num_procs(); /* 0: the default, as run's --threads 0 */
        else o->min_runs = (int)v;
        break;
      case 'S':
        errno = 0;
        o->min_seconds = strtod(optarg, &end);
        if (!*optarg || *optarg == ' ' || *end || errno || !(o->min_seconds >= 0 && o->min_seconds <= 60))
          return fprintf(stderr, "dsv4kv bench: --min-seconds %s: not a number of seconds in 0..60\n", optarg), 2;
        break;
      case 'R': o->report = 1; break;
      case 'F': c->from = optarg; break;
      case 'j': c->json = optarg; break;
      case 'p': c->plot = optarg; break;
      case 'h': usage(stdout); return 1;
      default: cli_option_error("bench", ch, argv); return 2;
    }
  }
  if (optind < argc) return fprintf(stderr, "dsv4kv bench: unexpected argument '%s'\n", argv[optind]), 2;
  if (c->from && (c->timing_options || !c->plot))
    return fprintf(stderr, "dsv4kv bench: --from-json FILE needs --plot FILE and takes no other option (it "
                           "draws an earlier run; nothing is timed)\n"), 2;
  if (o->report && !c->cuda) return fprintf(stderr, "dsv4kv bench: --report is for --device cuda\n"), 2;
  if (!o->min_runs) o->min_runs = c->cuda ? 20 : 5;
  if (check_choices(o)) return 2;
  int any = 0;
  for (int i = 0, m; !c->from && (m = bench_case_matches(i, o->op, o->record, o->sizes)) != 0; i++) any |= m == 1;
  if (!c->from && !any)
    return fprintf(stderr, "dsv4kv bench: no configuration matches the filters (--record: v4, mxfp8, nvfp4 for insert "
                           "and gather, fp8, mxfp4 for indexer; global_topk, combine and flashinfer take none)\n"), 2;
  return 0;
}

/* Where the results go, checked before anything is timed. */
static int check_outputs(const bench_cli *c) {
  char why[256];
  if (c->plot && sim_plot_check(c->plot, why, sizeof why))
    return fprintf(stderr, "dsv4kv bench: --plot %s: %s\n", c->plot, why), 2;
  if (c->plot && !bench_plot_name_ok(c->plot)) /* (the rule bench_plot applies, checked before anything is timed) */
    return fprintf(stderr, "dsv4kv bench: --plot %s: %s\n", c->plot, BENCH_PLOT_NAME_RULE), 2;
  if (c->json && strcmp(c->json, "-")) { /* writable; nothing created or truncated until it is written */
    if (sim_output_writable(c->json, why, sizeof why))
      return fprintf(stderr, "dsv4kv bench: --json %s: %s\n", c->json, why), 2;
    if (sim_same_file(c->json, c->plot))
      return fprintf(stderr, "dsv4kv bench: --json and --plot name one file, %s\n", c->json), 2;
  }
  if (c->from && sim_same_file(c->from, c->plot))
    return fprintf(stderr, "dsv4kv bench: --plot %s is the --from-json file; it would be overwritten\n", c->plot), 2;
  return 0;
}

static int write_json(cJSON *root, const char *path) {
  char *text = cJSON_Print(root);
  FILE *f = strcmp(path, "-") ? fopen(path, "w") : stdout;
  int bad = !f || !text || fputs(text, f) < 0 || fputc('\n', f) < 0;
  if (f && f != stdout) bad |= fclose(f) != 0;
  free(text);
  if (bad) fprintf(stderr, "dsv4kv bench: cannot write %s\n", path);
  return bad;
}

static int draw(cJSON *root, const char *path, int cuda) {
  const double ceiling = cJSON_GetObjectItem(root, "copy_gbps")->valuedouble;
  char title[256];
  snprintf(title, sizeof title, "dsv4kv bench, %s (%s)\n%s, dashed: the copy ceiling of the same run",
           cuda ? "CUDA" : "CPU", bench_json_str(root, cuda ? "gpu" : "cpu_path"),
           cuda ? "GB/s of CUDA-graph replay, open circles: the reference on an H200 (graph figures of the anchor file)"
                : "GB/s of the median call");
  const int rc = bench_plot(path, cJSON_GetObjectItem(root, "results"), cuda ? "gbps_graph" : "gbps",
                            cuda ? "ref_gbps_graph" : NULL, ceiling, title);
  FILE *f = rc ? NULL : fopen(path, "rb");
  const int empty = f && fgetc(f) == EOF;
  if (f) fclose(f);
  if (rc == -1 || empty || (!rc && !f)) fprintf(stderr, "dsv4kv bench: --plot %s: gnuplot did not draw it\n", path);
  else if (!rc) fprintf(stderr, "dsv4kv bench: plot written to %s\n", path); /* as dsv4kv run says it */
  return rc || empty || !f;
}

int cmd_bench(int argc, char **argv) {
  bench_opts o = {omp_get_num_procs(), 0, 0.2, 0, NULL, NULL, NULL};
  bench_cli c = {NULL, NULL, NULL, 0, 0};
  int rc = parse_args(argc, argv, &o, &c);
  if (rc) return rc == 1 ? 0 : rc;
  if ((rc = check_outputs(&c))) return rc;
  cJSON *root = NULL;
  if (c.from) { /* the plot of an earlier run (e.g. one on a GPU machine without gnuplot) */
    if (!(root = bench_load_results(c.from))) return 2; /* an unreadable input, as plot's */
    c.cuda = !strcmp(bench_json_str(root, "device"), "cuda");
    if (cJSON_GetArraySize(cJSON_GetObjectItem(root, "results")) == 0) {
      fprintf(stderr, "dsv4kv bench: --from-json %s: no results to plot\n", c.from);
      cJSON_Delete(root);
      return 2;
    }
  } else {
    root = cJSON_CreateObject();
    cJSON_AddArrayToObject(root, "results");
    cJSON_AddStringToObject(root, "library_version", dsv4kv_version());
    if (cli_git_commit()) cJSON_AddStringToObject(root, "commit", cli_git_commit());
    char when[32];
    time_t t = time(NULL);
    strftime(when, sizeof when, "%Y-%m-%d %H:%M UTC", gmtime(&t));
    cJSON_AddStringToObject(root, "date", when);
    /* with --json -, the JSON alone goes to stdout and the table to stderr */
    const int table_to_stderr = c.json && !strcmp(c.json, "-");
    int saved = -1;
    if (table_to_stderr) fflush(stdout), saved = dup(1), dup2(2, 1);
    rc = c.cuda ? bench_gpu(&o, root) : bench_cpu(&o, root);
    if (saved >= 0) fflush(stdout), dup2(saved, 1), close(saved);
  }
  if (rc == 2) { /* nothing was timed (no such device): no outputs either */
    cJSON_Delete(root);
    return rc;
  }
  if (c.json && !c.from && write_json(root, c.json)) rc = rc ? rc : 1;
  if (c.plot && cJSON_GetArraySize(cJSON_GetObjectItem(root, "results")) > 0 && draw(root, c.plot, c.cuda))
    rc = rc ? rc : 1;
  cJSON_Delete(root);
  return rc;
}
