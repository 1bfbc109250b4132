/* bench_plot.c - the picture of a `dsv4kv bench` run and the reading of an
 * earlier run's JSON (--from-json), see bench.h.  The JSON may come from
 * another machine: it is bounded, checked field by field, and nothing of its
 * text reaches the gnuplot script but letters, digits and harmless marks. */
#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"
#include "files.h"

enum { MAX_JSON = 16 << 20, MAX_SERIES = 24, KEY_LEN = 112 };
#define DISTINCT_TAG " (distinct slots)"
#define WIDE_TAG " (wide table)"

const char *bench_json_str(cJSON *o, const char *k) {
  cJSON *v = cJSON_GetObjectItem(o, k);
  return cJSON_IsString(v) ? v->valuestring : "not recorded";
}

static int finite_number(cJSON *v) { return cJSON_IsNumber(v) && isfinite(v->valuedouble); }

/* Row r's fields the plot reads: op and record strings, tokens > 0, and the
 * GB/s fields finite and >= 0 where present.  Rows of older files get
 * ref_gbps_graph from bytes / ref_graph_us. */
static int row_ok(cJSON *r) {
  cJSON *op = cJSON_GetObjectItem(r, "op"), *rec = cJSON_GetObjectItem(r, "record");
  cJSON *tok = cJSON_GetObjectItem(r, "tokens");
  if (!cJSON_IsString(op) || !cJSON_IsString(rec) || !finite_number(tok) || tok->valuedouble < 1) return 0;
  static const char *const gb[] = {"gbps", "gbps_eager", "gbps_graph", "ref_gbps_event", "ref_gbps_graph"};
  for (size_t i = 0; i < sizeof gb / sizeof gb[0]; i++) {
    cJSON *v = cJSON_GetObjectItem(r, gb[i]);
    if (v && (!finite_number(v) || v->valuedouble < 0)) return 0;
  }
  cJSON *b = cJSON_GetObjectItem(r, "bytes"), *g = cJSON_GetObjectItem(r, "ref_graph_us");
  if (finite_number(b) && finite_number(g) && g->valuedouble > 0 && !cJSON_GetObjectItem(r, "ref_gbps_graph"))
    cJSON_AddNumberToObject(r, "ref_gbps_graph", b->valuedouble / (g->valuedouble * 1e-6) / 1e9);
  return 1;
}

cJSON *bench_load_results(const char *path) {
  char err[512];
  FILE *f = sim_open_regular(path, "a bench result", NULL, err, sizeof err); /* (a FIFO would block) */
  if (!f) return fprintf(stderr, "dsv4kv bench: --from-json %s\n", err), NULL;
  char *text = malloc(MAX_JSON + 1);
  size_t n = text ? fread(text, 1, MAX_JSON + 1, f) : 0;
  const int bad_read = ferror(f);
  fclose(f);
  if (!text || bad_read || n > MAX_JSON) {
    fprintf(stderr, "dsv4kv bench: --from-json %s: %s\n", path,
            !text ? "out of memory" : bad_read ? "cannot read it (a directory?)" : "over 16 MiB, not a bench result");
    free(text);
    return NULL;
  }
  text[n] = 0;
  const char *end = NULL;
  cJSON *root = cJSON_ParseWithOpts(text, &end, 1); /* nothing may follow the value */
  free(text);
  cJSON *rows = root ? cJSON_GetObjectItem(root, "results") : NULL, *c = root ? cJSON_GetObjectItem(root, "copy_gbps") : NULL;
  int ok = cJSON_IsArray(rows) && finite_number(c) && c->valuedouble > 0, row = 0;
  for (cJSON *r = ok ? rows->child : NULL; r && ok; r = r->next, row++) ok = row_ok(r);
  if (!ok) {
    if (root && cJSON_IsArray(rows) && finite_number(c) && c->valuedouble > 0)
      fprintf(stderr, "dsv4kv bench: --from-json %s: results[%d] lacks op / record / tokens >= 1, or has a "
                      "GB/s that is not a finite number >= 0\n", path, row - 1);
    else
      fprintf(stderr, "dsv4kv bench: --from-json %s: not the JSON of dsv4kv bench --json (results, copy_gbps > 0)\n",
              path);
    cJSON_Delete(root);
    return NULL;
  }
  return root;
}

/* Text headed for the gnuplot script (titles, series names): only letters,
 * digits and a few harmless marks go through, so nothing in it can end a
 * string or reach gnuplot's command substitution (` @ $ ' " ; \ and line
 * breaks become _; a title keeps its \n when `newline`). */
static void plot_safe(char *t, int newline) {
  for (; *t; t++)
    if (!((*t >= 'a' && *t <= 'z') || (*t >= 'A' && *t <= 'Z') || (*t >= '0' && *t <= '9') ||
          (newline && *t == '\n') || (*t && strchr(" _-.,=()+:/%", *t))))
      *t = '_';
}

/* Row r's series: op and record, DISTINCT_TAG for a row timed with
 * distinct slots promised when `mark` (not for the reference's points,
 * which are the same configuration's), WIDE_TAG for one with a widened
 * block table (no reference point has one). */
static void series_key(cJSON *r, char *key, int mark) {
  const char *rec = cJSON_GetObjectItem(r, "record")->valuestring;
  snprintf(key, KEY_LEN, "%.40s%s%.40s%s%s", cJSON_GetObjectItem(r, "op")->valuestring, *rec ? " " : "", rec,
           mark && cJSON_IsTrue(cJSON_GetObjectItem(r, "distinct_slots")) ? DISTINCT_TAG : "",
           finite_number(cJSON_GetObjectItem(r, "table_columns")) ? WIDE_TAG : "");
  plot_safe(key, 0);
}

/* The distinct (op, record) series of the rows that have `field`, in order
 * of first appearance (at most MAX_SERIES; *dropped counts the rest). */
static int list_series(cJSON *rows, const char *field, int mark, char keys[][KEY_LEN], int *dropped) {
  int n = 0;
  *dropped = 0;
  for (cJSON *r = rows->child; r; r = r->next) {
    if (!finite_number(cJSON_GetObjectItem(r, field))) continue;
    char key[KEY_LEN];
    series_key(r, key, mark);
    int k = 0;
    while (k < n && strcmp(keys[k], key)) k++;
    if (k < n) continue;
    if (n == MAX_SERIES) {
      (*dropped)++;
      continue;
    }
    snprintf(keys[n++], KEY_LEN, "%s", key);
  }
  return n;
}

/* One data block per series of keys[], its rows in file order. */
static void write_series(FILE *d, cJSON *rows, const char *field, int mark, char keys[][KEY_LEN], int n) {
  for (int k = 0; k < n; k++) {
    if (k) fprintf(d, "\n\n");
    for (cJSON *r = rows->child; r; r = r->next) {
      cJSON *v = cJSON_GetObjectItem(r, field);
      char key[KEY_LEN];
      series_key(r, key, mark);
      if (finite_number(v) && !strcmp(key, keys[k]))
        fprintf(d, "%.17g %.17g\n", cJSON_GetObjectItem(r, "tokens")->valuedouble, v->valuedouble);
    }
  }
}

static int make_temp(char *name, FILE **f) {
  int fd = mkstemp(name);
  *f = fd >= 0 ? fdopen(fd, "w") : NULL;
  if (fd >= 0 && !*f) close(fd), remove(name);
  return *f ? 0 : -1;
}

/* The smallest and largest token count of the rows (*lo > *hi when none). */
static void token_range(cJSON *rows, double *lo, double *hi) {
  *lo = 1e300, *hi = 0;
  for (cJSON *r = rows ? rows->child : NULL; r; r = r->next) {
    cJSON *t = cJSON_GetObjectItem(r, "tokens");
    if (!finite_number(t) || t->valuedouble <= 0) continue;
    if (t->valuedouble < *lo) *lo = t->valuedouble;
    if (t->valuedouble > *hi) *hi = t->valuedouble;
  }
}

static void plot_script(FILE *g, const char *path, const char *title, double ceiling, const char *ours,
                        char k_ours[][KEY_LEN], int n, const char *refs, char k_refs[][KEY_LEN], int nr, double lo,
                        double hi) {
  /* one colour a series (gnuplot's default cycle repeats after 8) */
  static const char *const colours[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b",
                                        "#e377c2", "#7f7f7f", "#bcbd22", "#17becf", "#000000", "#aec7e8"};
  const int ncol = (int)(sizeof colours / sizeof colours[0]);
  const size_t len = strlen(path);
  const int svg = len > 4 && !strcmp(path + len - 4, ".svg");
  char safe[512];
  snprintf(safe, sizeof safe, "%s", title);
  plot_safe(safe, 1);
  fprintf(g, "set terminal %s size 1400,800 noenhanced\nset output '%s'\nset title \"", svg ? "svg" : "pngcairo", path);
  for (const char *q = safe; *q; q++) *q == '\n' ? fputs("\\n", g) : fputc(*q, g); /* double quotes: \n breaks */
  fprintf(g, "\" font ',11'\nset xlabel 'tokens (gather: requests x tokens)'\n");
  fprintf(g, "set ylabel 'GB/s (compulsory bytes read + written), log scale'\nset logscale xy 2\nset grid\n");
  fprintf(g, "set xtics ('64' 64, '256' 256, '1k' 1024, '4k' 4096, '16k' 16384, '64k' 65536, '256k' 262144, "
             "'1M' 1048576)\nset key outside right top\n");
  /* half a factor of 2 each side: one size alone still gets a range (and
   * the ceiling a visible line) */
  if (lo <= hi) fprintf(g, "set xrange [%.17g:%.17g]\n", lo / 1.5, hi * 1.5);
  fprintf(g, "plot %.17g with lines dt 2 lw 2 lc rgb 'black' title 'copy ceiling (same run)'", ceiling);
  for (int i = 0; i < n; i++) {
    /* a distinct-slots or wide-table series: its configuration's colour, dashed, triangles */
    const size_t kl = strlen(k_ours[i]), dl = strlen(DISTINCT_TAG), wl = strlen(WIDE_TAG);
    const size_t tl = kl > dl && !strcmp(k_ours[i] + kl - dl, DISTINCT_TAG) ? dl
                      : kl > wl && !strcmp(k_ours[i] + kl - wl, WIDE_TAG) ? wl
                                                                          : 0;
    const int variant = tl > 0;
    int c = i;
    if (variant)
      for (int k = 0; k < n; k++)
        if (strlen(k_ours[k]) == kl - tl && !strncmp(k_ours[k], k_ours[i], kl - tl)) c = k;
    fprintf(g, ", '%s' index %d using 1:2 with linespoints lw 2 %s lc rgb '%s' title '%s'", ours, i,
            variant ? "dt 3 pt 9" : "pt 7", colours[c % ncol], k_ours[i]);
  }
  for (int i = 0; i < nr; i++) {
    int k = 0;
    while (k < n && strcmp(k_refs[i], k_ours[k])) k++;
    fprintf(g, ", '%s' index %d using 1:2 with points pt 6 ps 2 lc rgb '%s' title '%s (reference)'", refs, i,
            colours[(k < n ? k : i) % ncol], k_refs[i]);
  }
  fprintf(g, "\n");
}

int bench_plot_name_ok(const char *path) {
  return path[0] != '|' && !strpbrk(path, "'\n`"); /* single quotes in the script; | would pipe to a command */
}

int bench_plot(const char *path, cJSON *rows, const char *field, const char *ref_field, double ceiling,
               const char *title) {
  if (!bench_plot_name_ok(path)) {
    fprintf(stderr, "dsv4kv bench: --plot %s: %s\n", path, BENCH_PLOT_NAME_RULE);
    return -2;
  }
  char ours[] = "/tmp/dsv4kv-bench-XXXXXX", refs[] = "/tmp/dsv4kv-bench-ref-XXXXXX";
  static char k_ours[MAX_SERIES][KEY_LEN], k_refs[MAX_SERIES][KEY_LEN];
  int dropped = 0, dropped_ref = 0;
  const int n = list_series(rows, field, 1, k_ours, &dropped);
  const int nr = ref_field ? list_series(rows, ref_field, 0, k_refs, &dropped_ref) : 0;
  if (dropped || dropped_ref)
    fprintf(stderr, "dsv4kv bench: --plot: more than %d op / record series; the last %d left out\n", MAX_SERIES,
            dropped + dropped_ref);
  FILE *d = NULL, *dr = NULL;
  if (make_temp(ours, &d) || (nr && make_temp(refs, &dr))) {
    if (d) fclose(d), remove(ours);
    fprintf(stderr, "dsv4kv bench: --plot: no temporary file in /tmp\n");
    return -1;
  }
  write_series(d, rows, field, 1, k_ours, n);
  if (dr) write_series(dr, rows, ref_field, 0, k_refs, nr);
  fclose(d);
  if (dr) fclose(dr);
  FILE *g = popen("gnuplot >/dev/null", "w"); /* its picture goes to the file, never to our stdout */
  int rc = -1;
  if (g) {
    double lo, hi;
    token_range(rows, &lo, &hi);
    plot_script(g, path, title, ceiling, ours, k_ours, n, refs, k_refs, nr, lo, hi);
    rc = pclose(g) == 0 ? 0 : -1;
  }
  remove(ours);
  if (dr) remove(refs);
  return rc;
}
