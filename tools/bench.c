/* dsv4kv bench: every op and record at decode, prefill and large sizes, timed
 * (warm-up, median of many runs) beside the copy bandwidth measured in the
 * same run; a table, JSON and a gnuplot plot.  This build times the CPU
 * backend (the same thread count for the ops and the memcpy ceiling);
 * --device cuda is refused until the GPU timing (CUDA events and graphs)
 * lands. */
#define _POSIX_C_SOURCE 200809L

#include <getopt.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "bench_cases.h"
#include "commands.h"

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

#define BENCH_MAX_RUNS 200

typedef struct {
  int threads, min_runs;
  double min_seconds; /* keep running until this much time is spent (and min_runs done) */
} bench_opts;

/* Median seconds of a function over at least o->min_runs runs after one
 * warm-up run; *runs gets the count. */
static double median_seconds(int (*fn)(void *), void *arg, const bench_opts *o, int *runs) {
  double t[BENCH_MAX_RUNS], total = 0;
  int n = 0;
  if (fn(arg)) return -1;
  while (n < BENCH_MAX_RUNS && (n < o->min_runs || total < o->min_seconds)) {
    double t0 = now();
    if (fn(arg)) return -1;
    t[n] = now() - t0;
    total += t[n++];
  }
  qsort(t, (size_t)n, sizeof t[0], cmp_double);
  *runs = n;
  return n % 2 ? t[n / 2] : 0.5 * (t[n / 2 - 1] + t[n / 2]);
}

/* ---- the ceiling: memcpy of a buffer well past the caches, same threads ---- */
typedef struct {
  char *src, *dst;
  size_t n;
  int threads;
} copy_arg;

static int run_copy(void *p) {
  copy_arg *c = p;
  const size_t chunk = (c->n + (size_t)c->threads - 1) / (size_t)c->threads;
#pragma omp parallel for num_threads(c->threads) schedule(static)
  for (int i = 0; i < c->threads; i++) {
    size_t lo = (size_t)i * chunk, hi = lo + chunk < c->n ? lo + chunk : c->n;
    if (lo < hi) memcpy(c->dst + lo, c->src + lo, hi - lo);
  }
  return 0;
}

static double copy_gbps(const bench_opts *o) {
  copy_arg c = {NULL, NULL, (size_t)256 << 20, o->threads};
  c.src = malloc(c.n), c.dst = malloc(c.n);
  if (!c.src || !c.dst) {
    free(c.src), free(c.dst);
    return -1;
  }
  memset(c.src, 1, c.n), memset(c.dst, 2, c.n);
  int runs;
  bench_opts oo = *o;
  oo.min_runs = 5;
  double s = median_seconds(run_copy, &c, &oo, &runs);
  free(c.src), free(c.dst);
  return s > 0 ? 2.0 * (double)c.n / s / 1e9 : -1;
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
          "usage: dsv4kv bench [--device cpu] [--op OP] [--record REC] [--sizes decode|prefill|large|all]\n"
          "                    [--threads N] [--min-runs N] [--min-seconds S] [--json FILE] [--plot FILE]\n"
          "\n"
          "Times every op and record at the reference's anchor configurations (e.g.\n"
          "'insert_v4 N=4096', 'gather_mxfp8 64x16384') on the CPU backend: one warm-up\n"
          "call, then the median of at least --min-runs runs (default 5) and of at least\n"
          "--min-seconds (default 0.2) of them; GB/s counts the compulsory bytes read +\n"
          "written, as the anchor does, beside a memcpy of 256 MiB with the same threads\n"
          "measured in the same run.\n"
          "\n"
          "  --op OP        insert, gather, global_topk, combine, flashinfer, indexer (default all)\n"
          "  --record REC   v4, mxfp8, nvfp4 (inserts, gathers), fp8, mxfp4 (indexer)\n"
          "  --sizes S      decode (64-256 tokens), prefill (4096-16384), large (65536+), all (default)\n"
          "  --threads N    CPU threads per call and for the memcpy (default: the processors)\n"
          "  --json FILE    the table as JSON;  --plot FILE  GB/s per config (.png or .svg, gnuplot)\n"
          "  --device cpu   the only device this build benchmarks\n"
          "exit status: 0, 1 when a call failed, 2 for a usage error.\n");
}

static int plot(const char *path, cJSON *rows, double ceiling) {
  char data[] = "/tmp/dsv4kv-bench-XXXXXX";
  int fd = mkstemp(data);
  if (fd < 0) return -1;
  FILE *d = fdopen(fd, "w");
  int i = 0;
  cJSON *r;
  cJSON_ArrayForEach(r, rows) {
    fprintf(d, "%d \"%s\" %g\n", i++, cJSON_GetObjectItem(r, "config")->valuestring,
            cJSON_GetObjectItem(r, "gbps")->valuedouble);
  }
  fclose(d);
  const char *ext = strrchr(path, '.');
  int svg = ext && !strcmp(ext, ".svg");
  FILE *g = popen("gnuplot", "w");
  if (!g) return remove(data), -1;
  fprintf(g, "set terminal %s size 1400,700 noenhanced\nset output '%s'\n", svg ? "svg" : "pngcairo", path);
  fprintf(g, "set title 'dsv4kv bench (CPU): GB/s per configuration; dashed: same-run memcpy %.1f GB/s'\n", ceiling);
  fprintf(g, "set ylabel 'GB/s (read + write)'\nset key top left\nset style fill solid 0.6\nset boxwidth 0.7\nset grid ytics\n");
  fprintf(g, "set xtics rotate by 60 right font ',8'\nset bmargin 16\nset yrange [0:*]\n");
  fprintf(g, "plot '%s' using 1:3:xtic(2) with boxes title 'op', %g with lines dt 2 lw 2 title 'memcpy'\n", data,
          ceiling);
  int rc = pclose(g);
  remove(data);
  return rc == 0 ? 0 : -1;
}

int cmd_bench(int argc, char **argv) {
  const char *op = NULL, *record = NULL, *sizes = NULL, *json = NULL, *plot_path = NULL;
  bench_opts o = {omp_get_num_procs(), 5, 0.2};
  static const struct option longopts[] = {
      {"device", required_argument, NULL, 'd'},  {"op", required_argument, NULL, 'o'},
      {"record", required_argument, NULL, 'r'},  {"sizes", required_argument, NULL, 's'},
      {"threads", required_argument, NULL, 't'}, {"min-runs", required_argument, NULL, 'n'},
      {"min-seconds", required_argument, NULL, 'S'}, {"json", required_argument, NULL, 'j'},
      {"plot", required_argument, NULL, 'p'},    {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0}};
  int ch;
  optind = 1;
  while ((ch = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
    char *end = NULL;
    switch (ch) {
      case 'd':
        if (strcmp(optarg, "cpu")) {
          fprintf(stderr, "dsv4kv bench: --device %s: this build benchmarks the CPU backend only (the GPU's "
                          "event and graph timing is not here yet)\n", optarg);
          return 2;
        }
        break;
      case 'o': op = strcmp(optarg, "all") ? optarg : NULL; break;
      case 'r': record = strcmp(optarg, "all") ? optarg : NULL; break;
      case 's': sizes = strcmp(optarg, "all") ? optarg : NULL; break;
      case 't': o.threads = (int)strtol(optarg, &end, 10); break;
      case 'n': o.min_runs = (int)strtol(optarg, &end, 10); break;
      case 'S': o.min_seconds = strtod(optarg, &end); break;
      case 'j': json = optarg; break;
      case 'p': plot_path = optarg; break;
      case 'h': usage(stdout); return 0;
      default: usage(stderr); return 2;
    }
    if (end && (*end || o.threads < 1 || o.threads > 1024 || o.min_runs < 1 || o.min_runs > BENCH_MAX_RUNS ||
                !(o.min_seconds >= 0 && o.min_seconds <= 60))) {
      fprintf(stderr, "dsv4kv bench: bad value '%s' (threads 1..1024, min-runs 1..%d, min-seconds 0..60)\n", optarg,
              BENCH_MAX_RUNS);
      return 2;
    }
  }
  if (optind < argc) return fprintf(stderr, "dsv4kv bench: unexpected argument '%s'\n", argv[optind]), 2;
  static const char *const ops[] = {"insert", "gather", "global_topk", "combine", "flashinfer", "indexer", NULL};
  static const char *const recs[] = {"v4", "mxfp8", "nvfp4", "fp8", "mxfp4", NULL};
  static const char *const szs[] = {"decode", "prefill", "large", NULL};
  const char *const *lists[] = {ops, recs, szs};
  const char *given[] = {op, record, sizes}, *what[] = {"--op", "--record", "--sizes"};
  for (int l = 0; l < 3; l++) {
    int ok = !given[l];
    for (const char *const *v = lists[l]; !ok && *v; v++) ok = !strcmp(*v, given[l]);
    if (!ok) return fprintf(stderr, "dsv4kv bench: %s %s is not one of the choices (see --help)\n", what[l], given[l]), 2;
  }
  double ceiling = copy_gbps(&o);
  printf("dsv4kv bench: cpu, %d thread%s, libdsv4kv %s, cpu path %s; memcpy 256 MiB: %.1f GB/s (read + write)\n",
         o.threads, o.threads == 1 ? "" : "s", dsv4kv_version(), dsv4kv_cpu_path_current(), ceiling);
  printf("%-62s %10s %11s %9s %7s %5s\n", "config", "MB", "median us", "GB/s", "% copy", "runs");
  cJSON *root = cJSON_CreateObject(), *rows = cJSON_AddArrayToObject(root, "results");
  cJSON_AddStringToObject(root, "device", "cpu");
  cJSON_AddNumberToObject(root, "threads", o.threads);
  cJSON_AddNumberToObject(root, "copy_gbps", ceiling);
  cJSON_AddStringToObject(root, "library_version", dsv4kv_version());
  int rc = 0, matched = 0;
  for (int i = 0;; i++) {
    bench_case c;
    int m = bench_case_make(i, op, record, sizes, &c);
    if (m == 0) break;
    if (m == -1) continue;
    if (m == -2) {
      fprintf(stderr, "dsv4kv bench: out of memory building config %d\n", i);
      rc = 1;
      break;
    }
    matched++;
    op_arg a = {&c, {.num_threads = o.threads}};
    int runs = 0;
    double s = median_seconds(run_op, &a, &o, &runs);
    if (s < 0) {
      rc = 1;
    } else {
      double gbps = (double)c.bytes / s / 1e9;
      printf("%-62s %10.2f %11.1f %9.2f %6.1f%% %5d\n", c.name, (double)c.bytes / 1e6, s * 1e6, gbps,
             ceiling > 0 ? 100 * gbps / ceiling : 0, runs);
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
      cJSON_AddNumberToObject(r, "pct_copy", ceiling > 0 ? 100 * gbps / ceiling : 0);
      cJSON_AddNumberToObject(r, "runs", runs);
      cJSON_AddItemToArray(rows, r);
    }
    bench_case_free(&c);
  }
  if (!matched && !rc) {
    fprintf(stderr, "dsv4kv bench: no configuration matches the filters\n");
    rc = 2;
  }
  if (json) {
    char *text = cJSON_Print(root);
    FILE *f = strcmp(json, "-") ? fopen(json, "w") : stdout;
    if (!f || !text || fputs(text, f) < 0) fprintf(stderr, "dsv4kv bench: cannot write %s\n", json), rc = rc ? rc : 1;
    if (f && f != stdout) fclose(f);
    free(text);
  }
  if (plot_path && cJSON_GetArraySize(rows) > 0 && plot(plot_path, rows, ceiling)) {
    fprintf(stderr, "dsv4kv bench: --plot %s: gnuplot failed (is gnuplot-nox installed?)\n", plot_path);
    rc = rc ? rc : 1;
  }
  cJSON_Delete(root);
  return rc;
}
