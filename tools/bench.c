/* dsv4kv bench: every op and record at decode, prefill and large sizes, timed
 * (warm-up, median of many runs) beside the copy bandwidth measured in the
 * same run; a table, JSON and a gnuplot plot.  Here: the command, the CPU
 * timing (the same thread count for the ops and the memcpy ceiling) and the
 * plot; the GPU timing (CUDA events and graphs) is tools/bench_gpu.c. */
#define _POSIX_C_SOURCE 200809L

#include <getopt.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "bench.h"
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
    double t0 = now();
    if (fn(arg)) return -1;
    t[n] = now() - t0;
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
          "usage: dsv4kv bench [--device cpu|cuda] [--op OP] [--record REC] [--sizes decode|prefill|large|all]\n"
          "                    [--threads N] [--min-runs N] [--min-seconds S] [--report] [--json FILE] [--plot FILE]\n"
          "\n"
          "Times every op and record at the reference's anchor configurations (e.g.\n"
          "'insert_v4 N=4096', 'gather_mxfp8 64x16384').  GB/s counts the compulsory bytes\n"
          "read + written, as the anchor does, beside a copy measured in the same run.\n"
          "  cpu:  one warm-up call, then the median of at least --min-runs runs (default 5)\n"
          "        and of at least --min-seconds (default 0.2); the ceiling is a memcpy of\n"
          "        256 MiB with the same threads.\n"
          "  cuda: device 0.  eager = one call between CUDA events, stream idle and L2\n"
          "        flushed before it (host side of the call included); graph = the call\n"
          "        captured n times in a CUDA graph, replayed, divided by n; medians after\n"
          "        warm-up (eager: at least --min-runs, default 20).  The ceiling is a\n"
          "        device-to-device copy of 2 GiB; the reference's H200 figures and our\n"
          "        ratio to them are listed where the anchor has the configuration.\n"
          "\n"
          "  --op OP        insert, gather, global_topk, combine, flashinfer, indexer (default all)\n"
          "  --record REC   v4, mxfp8, nvfp4 (inserts, gathers), fp8, mxfp4 (indexer)\n"
          "  --sizes S      decode (64-256 tokens), prefill (4096-16384), large (65536+), all (default)\n"
          "  --threads N    CPU threads per call and for the memcpy (default: the processors)\n"
          "  --report       cuda: give every call a device report (skip counts) as an engine may\n"
          "  --json FILE    the table as JSON;  --plot FILE  GB/s against size (.png or .svg, gnuplot)\n"
          "  --from-json F  no timing: --plot the results of an earlier --json F\n"
          "exit status: 0, 1 when a call failed, 2 for a usage error.\n");
}

static const char *json_str(cJSON *o, const char *k) {
  cJSON *v = cJSON_GetObjectItem(o, k);
  return cJSON_IsString(v) ? v->valuestring : "?";
}

/* An earlier run's JSON (--json), checked for what the plot reads; the file
 * is bounded (16 MiB) as any input. */
static cJSON *load_results(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) return fprintf(stderr, "dsv4kv bench: --from-json %s: cannot open it\n", path), NULL;
  enum { MAX_JSON = 16 << 20 };
  char *text = malloc(MAX_JSON + 1);
  size_t n = text ? fread(text, 1, MAX_JSON + 1, f) : 0;
  fclose(f);
  cJSON *root = NULL;
  if (text && n <= MAX_JSON) {
    text[n] = 0;
    root = cJSON_Parse(text);
  }
  free(text);
  cJSON *rows = root ? cJSON_GetObjectItem(root, "results") : NULL;
  int ok = cJSON_IsArray(rows) && cJSON_IsNumber(cJSON_GetObjectItem(root, "copy_gbps"));
  for (cJSON *r = ok ? rows->child : NULL; r; r = r->next) {
    ok = ok && cJSON_IsString(cJSON_GetObjectItem(r, "op")) && cJSON_IsString(cJSON_GetObjectItem(r, "record")) &&
         cJSON_IsNumber(cJSON_GetObjectItem(r, "tokens"));
    cJSON *b = cJSON_GetObjectItem(r, "bytes"), *g = cJSON_GetObjectItem(r, "ref_graph_us");
    if (ok && cJSON_IsNumber(b) && cJSON_IsNumber(g) && g->valuedouble > 0 && !cJSON_GetObjectItem(r, "ref_gbps_graph"))
      cJSON_AddNumberToObject(r, "ref_gbps_graph", b->valuedouble / (g->valuedouble * 1e-6) / 1e9); /* older files */
  }
  if (!ok) {
    fprintf(stderr, "dsv4kv bench: --from-json %s: not the JSON of dsv4kv bench --json%s\n", path,
            n > MAX_JSON ? " (over 16 MiB)" : "");
    cJSON_Delete(root);
    return NULL;
  }
  return root;
}

/* The CPU half: fills root; returns the exit status. */
static int bench_cpu(const bench_opts *o, cJSON *root) {
  double ceiling = copy_gbps(o);
  printf("dsv4kv bench: cpu, %d thread%s, libdsv4kv %s, cpu path %s; memcpy 256 MiB: %.1f GB/s (read + write)\n",
         o->threads, o->threads == 1 ? "" : "s", dsv4kv_version(), dsv4kv_cpu_path_current(), ceiling);
  printf("%-62s %10s %11s %9s %7s %5s\n", "config", "MB", "median us", "GB/s", "% copy", "runs");
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
    if (m == -2) {
      fprintf(stderr, "dsv4kv bench: out of memory building config %d\n", i);
      rc = 1;
      break;
    }
    matched++;
    op_arg a = {&c, {.num_threads = o->threads}};
    int runs = 0;
    double s = median_seconds(run_op, &a, o, &runs);
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
  return rc;
}

/* Text headed for the gnuplot script (titles, series names) may come from a
 * JSON file (--from-json): only letters, digits and a few harmless marks go
 * through, so nothing in it can end a string or reach gnuplot's command
 * substitution (` @ $ ' " ; \ are replaced). */
static void plot_safe(char *t) {
  for (; *t; t++)
    if (!((*t >= 'a' && *t <= 'z') || (*t >= 'A' && *t <= 'Z') || (*t >= '0' && *t <= '9') || *t == '\n' ||
          strchr(" _-.,=()+:/%x", *t)))
      *t = '_';
}

/* One data block per (op, record) series, in the rows' order. */
static int write_series(FILE *d, cJSON *rows, const char *field, char titles[][48], int max) {
  int n = 0;
  char prev[48] = "";
  cJSON *r;
  cJSON_ArrayForEach(r, rows) {
    cJSON *v = cJSON_GetObjectItem(r, field);
    if (!cJSON_IsNumber(v)) continue;
    char key[48];
    const char *rec = cJSON_GetObjectItem(r, "record")->valuestring;
    snprintf(key, sizeof key, "%s%s%s", cJSON_GetObjectItem(r, "op")->valuestring, *rec ? " " : "", rec);
    plot_safe(key);
    if (strcmp(key, prev)) {
      if (n == max) break;
      if (n) fprintf(d, "\n\n");
      snprintf(titles[n++], 48, "%s", key);
      snprintf(prev, sizeof prev, "%s", key);
    }
    fprintf(d, "%g %g\n", cJSON_GetObjectItem(r, "tokens")->valuedouble, v->valuedouble);
  }
  return n;
}

int bench_plot(const char *path, cJSON *rows, const char *field, const char *ref_field, double ceiling,
               const char *title) {
  enum { MAX_SERIES = 24 };
  if (strpbrk(path, "'\n`")) { /* it goes into the script in single quotes */
    fprintf(stderr, "dsv4kv bench: --plot %s: a file name with quotes, backquotes or line breaks is refused\n", path);
    return -2;
  }
  char ours[] = "/tmp/dsv4kv-bench-XXXXXX", refs[] = "/tmp/dsv4kv-bench-ref-XXXXXX";
  char t_ours[MAX_SERIES][48], t_refs[MAX_SERIES][48];
  int fd = mkstemp(ours), fr = ref_field ? mkstemp(refs) : -1;
  if (fd < 0 || (ref_field && fr < 0)) return -1;
  FILE *d = fdopen(fd, "w"), *dr = ref_field ? fdopen(fr, "w") : NULL;
  const int n = write_series(d, rows, field, t_ours, MAX_SERIES);
  const int nr = dr ? write_series(dr, rows, ref_field, t_refs, MAX_SERIES) : 0;
  fclose(d);
  if (dr) fclose(dr);
  const char *ext = strrchr(path, '.');
  FILE *g = popen("gnuplot", "w");
  if (!g) return remove(ours), ref_field ? remove(refs) : 0, -1;
  /* one colour a series (gnuplot's default cycle repeats after 8) */
  static const char *const colours[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b",
                                        "#e377c2", "#7f7f7f", "#bcbd22", "#17becf", "#000000", "#aec7e8"};
  const int ncol = (int)(sizeof colours / sizeof colours[0]);
  fprintf(g, "set terminal %s size 1400,800 noenhanced\nset output '%s'\n",
          ext && !strcmp(ext, ".svg") ? "svg" : "pngcairo", path);
  char safe[512];
  snprintf(safe, sizeof safe, "%s", title);
  plot_safe(safe);
  fputs("set title \"", g); /* double quotes, for its line break as \n */
  for (const char *q = safe; *q; q++) {
    if (*q == '\n') fputs("\\n", g);
    else fputc(*q, g);
  }
  fprintf(g, "\" font ',11'\nset xlabel 'tokens (gather: requests x tokens)'\n");
  fprintf(g, "set ylabel 'GB/s (compulsory bytes read + written)'\nset logscale x 2\nset grid\n");
  fprintf(g, "set xtics ('64' 64, '256' 256, '1k' 1024, '4k' 4096, '16k' 16384, '64k' 65536, '256k' 262144, "
             "'1M' 1048576)\n");
  fprintf(g, "set key outside right top\nset yrange [0:*]\n");
  fprintf(g, "plot %g with lines dt 2 lw 2 lc rgb 'black' title 'copy ceiling (same run)'", ceiling);
  for (int i = 0; i < n; i++)
    fprintf(g, ", '%s' index %d using 1:2 with linespoints lw 2 pt 7 lc rgb '%s' title '%s'", ours, i,
            colours[i % ncol], t_ours[i]);
  for (int i = 0; i < nr; i++) {
    int k = 0;
    while (k < n && strcmp(t_refs[i], t_ours[k])) k++;
    fprintf(g, ", '%s' index %d using 1:2 with points pt 6 ps 2 lc rgb '%s' title '%s (reference)'", refs, i,
            colours[(k < n ? k : i) % ncol], t_refs[i]);
  }
  fprintf(g, "\n");
  int rc = pclose(g);
  remove(ours);
  if (ref_field) remove(refs);
  return rc == 0 ? 0 : -1;
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
    if (!ok) return fprintf(stderr, "dsv4kv bench: %s %s is not one of the choices (see --help)\n", what[l], given[l]), -1;
  }
  return 0;
}

int cmd_bench(int argc, char **argv) {
  const char *json = NULL, *plot_path = NULL, *from = NULL;
  bench_opts o = {omp_get_num_procs(), 0, 0.2, 0, NULL, NULL, NULL};
  int cuda = 0;
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
  while ((ch = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
    char *end = NULL;
    switch (ch) {
      case 'd':
        if (strcmp(optarg, "cpu") && strcmp(optarg, "cuda")) {
          fprintf(stderr, "dsv4kv bench: --device %s: not one of cpu, cuda\n", optarg);
          return 2;
        }
        cuda = !strcmp(optarg, "cuda");
        break;
      case 'o': o.op = strcmp(optarg, "all") ? optarg : NULL; break;
      case 'r': o.record = strcmp(optarg, "all") ? optarg : NULL; break;
      case 's': o.sizes = strcmp(optarg, "all") ? optarg : NULL; break;
      case 't': o.threads = (int)strtol(optarg, &end, 10); break;
      case 'n': o.min_runs = (int)strtol(optarg, &end, 10); break;
      case 'S': o.min_seconds = strtod(optarg, &end); break;
      case 'R': o.report = 1; break;
      case 'F': from = optarg; break;
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
  if (o.report && !cuda) return fprintf(stderr, "dsv4kv bench: --report is for --device cuda\n"), 2;
  if (!o.min_runs) o.min_runs = cuda ? 20 : 5;
  if (check_choices(&o)) return 2;
  cJSON *root = NULL;
  int rc = 0;
  if (from) { /* the plot of an earlier run (e.g. one on a GPU machine without gnuplot) */
    if (!(root = load_results(from))) return 1;
    cJSON *d = cJSON_GetObjectItem(root, "device");
    cuda = cJSON_IsString(d) && !strcmp(d->valuestring, "cuda");
  } else {
    root = cJSON_CreateObject();
    cJSON_AddArrayToObject(root, "results");
    cJSON_AddStringToObject(root, "library_version", dsv4kv_version());
    rc = cuda ? bench_gpu(&o, root) : bench_cpu(&o, root);
  }
  cJSON *rows = cJSON_GetObjectItem(root, "results");
  if (json && !from) {
    char *text = cJSON_Print(root);
    FILE *f = strcmp(json, "-") ? fopen(json, "w") : stdout;
    if (!f || !text || fputs(text, f) < 0) fprintf(stderr, "dsv4kv bench: cannot write %s\n", json), rc = rc ? rc : 1;
    if (f && f != stdout) fclose(f);
    free(text);
  }
  if (plot_path && cJSON_GetArraySize(rows) > 0) {
    const double ceiling = cJSON_GetObjectItem(root, "copy_gbps")->valuedouble;
    char title[256];
    snprintf(title, sizeof title, "dsv4kv bench, %s (%s)\n%s; dashed: the copy ceiling of the same run",
             cuda ? "CUDA" : "CPU", json_str(root, cuda ? "gpu" : "cpu_path"),
             cuda ? "GB/s of CUDA-graph replay; open circles: the reference on the same GPU kind (graph)"
                  : "GB/s of the median call");
    const int prc = bench_plot(plot_path, rows, cuda ? "gbps_graph" : "gbps", cuda ? "ref_gbps_graph" : NULL,
                               ceiling, title);
    if (prc == -1) fprintf(stderr, "dsv4kv bench: --plot %s: gnuplot failed (is gnuplot-nox installed?)\n", plot_path);
    if (prc) rc = rc ? rc : 1;
  }
  cJSON_Delete(root);
  return rc;
}
