/* Drawing with gnuplot (see plot.h).  The data travel inside the script as
 * gnuplot datablocks, written down a pipe to a gnuplot process: no temporary
 * files.  Layout: pages in use over virtual time (the pool's size dashed),
 * running and queued requests over virtual time, and two bar charts of the
 * whole model's cache bytes per token per format: all caches stacked, and the
 * compressed + indexer caches alone (where the formats differ). */
#define _POSIX_C_SOURCE 200809L

#include "plot.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "files.h"
#include "report.h"

static const char *const colors[SIM_MAX_FORMATS] = {"#1f77b4", "#d62728", "#2ca02c"};

static int ends_with(const char *s, const char *suffix) {
  size_t n = strlen(s), k = strlen(suffix);
  return n > k && !strcmp(s + n - k, suffix);
}

/* gnuplot's executable on $PATH, or 0. */
static int gnuplot_on_path(void) {
  const char *path = getenv("PATH");
  if (!path || !*path)
    return 0;
  char dir[4096];
  while (*path) {
    size_t len = strcspn(path, ":");
    if (len > 0 && len < sizeof dir - 16) {
      memcpy(dir, path, len);
      snprintf(dir + len, sizeof dir - len, "/gnuplot");
      if (access(dir, X_OK) == 0)
        return 1;
    }
    path += len;
    if (*path == ':')
      path++;
  }
  return 0;
}

int sim_plot_check(const char *path, char *why, size_t n) {
  if (!ends_with(path, ".png") && !ends_with(path, ".svg")) {
    snprintf(why, n, "the file must end in .png or .svg");
    return -1;
  }
  if (!gnuplot_on_path()) {
    snprintf(why, n,
             "gnuplot is not installed (not found on $PATH); install it, e.g. apt-get install "
             "gnuplot-nox (scripts/deps.sh does), or leave --plot out");
    return -1;
  }
  /* gnuplot's `set output` takes a leading | as a command to pipe into */
  if (path[0] == '|' || strpbrk(path, "\n\r`")) {
    snprintf(why, n, "a file name that starts with '|' or holds line breaks or backquotes is refused");
    return -1;
  }
  /* writable, without truncating a file that is there (a later failure
   * must not have destroyed it) nor creating one (a link's target included) */
  return sim_output_writable(path, why, n);
}

int sim_plot_data_of(const sim_ctx *const *runs, int n, sim_plot_data *out) {
  memset(out, 0, sizeof *out);
  int points = 0;
  snprintf(out->model, sizeof out->model, "%s", runs[0]->model->name);
  snprintf(out->workload, sizeof out->workload, "%s", runs[0]->work.name);
  out->layers = sim_model_layers(runs[0]->model);
  for (int i = 0; i < n && i < SIM_MAX_FORMATS; i++) {
    const sim_ctx *c = runs[i];
    sim_plot_run *r = &out->runs[out->n++];
    snprintf(r->format, sizeof r->format, "%s", sim_format_name(c->cfg.format));
    snprintf(r->indexer, sizeof r->indexer, "%s", sim_format_name(c->cfg.indexer_format));
    r->pool_pages = c->num_pages;
    r->bpt_swa = c->msize.swa;
    r->bpt_comp = c->msize.comp;
    r->bpt_idx = c->msize.idx;
    r->n = c->ran ? c->series.n : 0;
    r->pts = c->series.pts;
    points += r->n;
  }
  return points > 0 ? 0 : -1;
}

/* A string as a single-quoted gnuplot literal ('' stands for '). */
static void quoted(FILE *g, const char *s) {
  fputc('\'', g);
  for (; *s; s++) {
    if (*s == '\'')
      fputc('\'', g);
    if (*s != '\n')
      fputc(*s, g);
  }
  fputc('\'', g);
}

static void datablocks(FILE *g, const sim_plot_data *d) {
  for (int i = 0; i < d->n; i++) {
    const sim_plot_run *r = &d->runs[i];
    fprintf(g, "$run%d << EOD\n# virtual_time_s pages_in_use running queued\n", i);
    for (int k = 0; k < r->n; k++)
      fprintf(g, "%.6f %d %d %lld\n", r->pts[k].t_s, r->pts[k].pages, r->pts[k].running,
              (long long)r->pts[k].queued);
    fprintf(g, "EOD\n");
  }
  fprintf(g, "$bytes << EOD\n# label swa compressed indexer\n");
  for (int i = 0; i < d->n; i++) {
    const sim_plot_run *r = &d->runs[i];
    fprintf(g, "\"%s (%s)\" %.4f %.4f %.4f\n", r->format, r->indexer, r->bpt_swa, r->bpt_comp,
            r->bpt_idx);
  }
  fprintf(g, "EOD\n");
}

/* The last virtual time of any run (the x axis ends there). */
static double t_end(const sim_plot_data *d) {
  double t = 0;
  for (int i = 0; i < d->n; i++)
    if (d->runs[i].n && d->runs[i].pts[d->runs[i].n - 1].t_s > t)
      t = d->runs[i].pts[d->runs[i].n - 1].t_s;
  return t > 0 ? t : 1;
}

/* Whether every run that ran has the same series (pages and running at
 * each point): their lines then coincide, which the titles say. */
static int runs_coincide(const sim_plot_data *d) {
  const sim_plot_run *a = NULL;
  int runs = 0;
  for (int i = 0; i < d->n; i++) {
    const sim_plot_run *r = &d->runs[i];
    if (!r->n)
      continue;
    runs++;
    if (!a) {
      a = r;
      continue;
    }
    if (r->n != a->n)
      return 0;
    for (int k = 0; k < r->n; k++)
      if (r->pts[k].pages != a->pts[k].pages || r->pts[k].running != a->pts[k].running ||
          r->pts[k].queued != a->pts[k].queued)
        return 0;
  }
  return runs > 1;
}

/* Most pages any run had in use. */
static int32_t peak_pages(const sim_plot_data *d) {
  int32_t peak = 0;
  for (int i = 0; i < d->n; i++)
    for (int k = 0; k < d->runs[i].n; k++)
      peak = d->runs[i].pts[k].pages > peak ? d->runs[i].pts[k].pages : peak;
  return peak;
}

/* Pages in use, the pool's size dashed; where the pools dwarf what was used
 * (a pool sized by --kv-cache-memory), the axis follows the use and the
 * pools' sizes are only named.  Runs that schedule alike overdraw, so each
 * later run is drawn thinner over the earlier ones. */
static void panel_pages(FILE *g, const sim_plot_data *d) {
  fprintf(g, "set origin 0,0.64\nset size 1,0.33\n");
  /* fixed margins: the two time panels share their x axis' position */
  fprintf(g, "set xrange [0:%.6f]\nset key outside right top vertical\n"
             "set lmargin at screen 0.07\nset rmargin at screen 0.78\n", t_end(d));
  int32_t pool = 0;
  for (int i = 0; i < d->n; i++)
    pool = d->runs[i].n && d->runs[i].pool_pages > pool ? d->runs[i].pool_pages : pool;
  const int32_t peak = peak_pages(d);
  const int off_scale = peak > 0 && pool > 4 * peak;
  fprintf(g, "set title '%s%s'\n",
          off_scale ? "Page pool: pages in use (the pools, far larger, off the scale)"
                    : "Page pool: pages in use (dashed: the pool size)",
          runs_coincide(d) ? "; the runs of every format coincide" : "");
  fprintf(g, "set xlabel 'virtual time (s)'\nset ylabel 'pages'\nset yrange [0:*]\n"
             "set offsets 0, 0, graph 0.08, 0\n"); /* headroom over the peak */
  fprintf(g, "plot ");
  for (int i = 0, first = 1; i < d->n; i++) {
    const sim_plot_run *r = &d->runs[i];
    if (!r->n)
      continue;
    fprintf(g, "%s$run%d using 1:2 with steps lw %d lc rgb '%s' title '%s: pages in use'", first ? "" : ", ", i,
            4 - i, colors[i], r->format);
    if (off_scale)
      fprintf(g, ", NaN with lines lc rgb '%s' title '%s: pool, %d pages'", colors[i], r->format, r->pool_pages);
    else
      fprintf(g, ", %d with lines dt 2 lw 1.5 lc rgb '%s' title '%s: pool, %d pages'", r->pool_pages, colors[i],
              r->format, r->pool_pages);
    first = 0;
  }
  fprintf(g, "\n");
}

static void panel_requests(FILE *g, const sim_plot_data *d) {
  fprintf(g, "set origin 0,0.32\nset size 1,0.32\n");
  fprintf(g, "set title 'Requests running (solid) and queued (dotted)%s'\n",
          runs_coincide(d) ? "; the runs of every format coincide" : "");
  fprintf(g, "set xlabel 'virtual time (s)'\nset ylabel 'requests'\nset yrange [0:*]\n"
             "set offsets 0, 0, graph 0.08, 0\n");
  fprintf(g, "plot ");
  for (int i = 0, first = 1; i < d->n; i++) {
    const sim_plot_run *r = &d->runs[i];
    if (!r->n)
      continue;
    /* each later run thinner, drawn over the earlier: runs that schedule alike all show */
    fprintf(g, "%s$run%d using 1:3 with steps lw %d lc rgb '%s' title '%s: running', "
               "$run%d using 1:4 with steps lw %d dt 3 lc rgb '%s' title '%s: queued'",
            first ? "" : ", ", i, 4 - i, colors[i], r->format, i, 4 - i, colors[i], r->format);
    first = 0;
  }
  fprintf(g, "\n");
}

static void histogram_style(FILE *g) {
  fprintf(g, "set style data histograms\nset style histogram rowstacked\n"
             "set style fill solid 0.85 border -1\nset boxwidth 0.6\nset yrange [0:*]\n"
             "set xrange [*:*]\nunset xlabel\nset lmargin\nset rmargin\n"
             "set ylabel 'bytes per token'\nset key below horizontal\n"
             "set offsets 0,0,graph 0.18,0\n");
}

/* The whole model's bytes per token, stacked by cache; then the compressed
 * and indexer caches alone. */
static void panel_bytes(FILE *g, const sim_plot_data *d) {
  histogram_style(g);
  fprintf(g, "set origin 0,0\nset size 0.5,0.31\n");
  fprintf(g, "set title 'All caches, whole model (%d layers), by compressed format (indexer "
             "format)'\n", d->layers);
  fprintf(g, "plot $bytes using 2:xtic(1) lc rgb '#9e9e9e' title 'SWA (v4)', "
             "'' using 3 lc rgb '#ff7f0e' title 'compressed', "
             "'' using 4 lc rgb '#9467bd' title 'indexer', "
             "'' using 0:($2+$3+$4):(sprintf('%%.0f B/token\\n%%.2f GiB/1M tok', $2+$3+$4, "
             "($2+$3+$4)*1e6/2**30)) with labels font ',9' offset 0,1.4 notitle\n");
  fprintf(g, "set origin 0.5,0\nset size 0.5,0.31\n");
  fprintf(g, "set title 'Compressed + indexer caches only: where the formats differ'\n");
  fprintf(g, "plot $bytes using 3:xtic(1) lc rgb '#ff7f0e' title 'compressed', "
             "'' using 4 lc rgb '#9467bd' title 'indexer', "
             "'' using 0:($3+$4):(sprintf('%%.0f B/token', $3+$4)) with labels font ',9' "
             "offset 0,0.8 notitle\n");
}

static void script(FILE *g, const sim_plot_data *d, const char *path) {
  int png = ends_with(path, ".png");
  fprintf(g, "set terminal %s size 1200,1400 noenhanced font 'sans,11'%s\n",
          png ? "pngcairo" : "svg", png ? "" : " dynamic background rgb 'white'");
  fprintf(g, "set output ");
  quoted(g, path);
  fprintf(g, "\nset encoding utf8\n");
  datablocks(g, d);
  fprintf(g, "set multiplot title ");
  char title[800];
  snprintf(title, sizeof title, "dsv4kv run: %s, %s", d->model, d->workload);
  quoted(g, title);
  fprintf(g, " font ',14'\nset grid\nset key top left\nset tmargin 3\nset bmargin 4\n");
  panel_pages(g, d);
  panel_requests(g, d);
  panel_bytes(g, d);
  fprintf(g, "unset multiplot\nset output\n");
}

int sim_plot_write(const sim_plot_data *d, const char *path) {
  int fd[2];
  if (pipe(fd)) {
    fprintf(stderr, "dsv4kv: --plot: cannot start gnuplot: %s\n", strerror(errno));
    return -1;
  }
  pid_t pid = fork();
  if (pid < 0) {
    fprintf(stderr, "dsv4kv: --plot: cannot start gnuplot: %s\n", strerror(errno));
    close(fd[0]);
    close(fd[1]);
    return -1;
  }
  if (pid == 0) {
    dup2(fd[0], 0);
    close(fd[0]);
    close(fd[1]);
    execlp("gnuplot", "gnuplot", (char *)NULL);
    _exit(127);
  }
  close(fd[0]);
  void (*old)(int) = signal(SIGPIPE, SIG_IGN); /* gnuplot may exit early */
  FILE *g = fdopen(fd[1], "w");
  if (g) {
    script(g, d, path);
    fclose(g);
  } else {
    close(fd[1]);
  }
  signal(SIGPIPE, old);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    fprintf(stderr, "dsv4kv: --plot %s: gnuplot failed (%s %d); see its messages above\n", path,
            WIFEXITED(status) ? "exit status" : "signal",
            WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
    return -1;
  }
  return 0;
}
