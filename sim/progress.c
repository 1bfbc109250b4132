/* Progress display (see progress.h). */
#define _POSIX_C_SOURCE 200809L

#include "progress.h"

#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "tensor.h"

#define BAR_MIN_WIDTH 10
#define BAR_MAX_WIDTH 30
#define BAR_REDRAW_S 0.1
#define LINES_EVERY_S 10.0
#define DEFAULT_COLUMNS 80
#define MAX_COLUMNS 1024

sim_progress_mode sim_progress_auto(FILE *f) {
  return isatty(fileno(f)) ? SIM_PROGRESS_BAR : SIM_PROGRESS_LINES;
}

int sim_progress_columns(FILE *f) {
  struct winsize ws;
  memset(&ws, 0, sizeof ws);
  if (ioctl(fileno(f), TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0)
    return ws.ws_col < MAX_COLUMNS ? ws.ws_col : MAX_COLUMNS;
  return DEFAULT_COLUMNS;
}

void sim_progress_duration(double s, char *out, size_t n) {
  long t = s > 0 ? (long)(s + 0.5) : 0;
  if (t < 60)
    snprintf(out, n, "%lds", t);
  else if (t < 3600)
    snprintf(out, n, "%ldm%02lds", t / 60, t % 60);
  else
    snprintf(out, n, "%ldh%02ldm", t / 3600, (t / 60) % 60);
}

void sim_progress_start(sim_progress *p, FILE *f, sim_progress_mode mode, int64_t total,
                        int64_t total_work, const char *label) {
  memset(p, 0, sizeof *p);
  p->f = f;
  p->mode = mode;
  p->total = total > 0 ? total : 1;
  p->total_work = total_work > 0 ? total_work : 1;
  snprintf(p->label, sizeof p->label, "%s", label ? label : "");
  p->t_start = p->t_last = sim_now();
  p->cols = mode == SIM_PROGRESS_BAR ? sim_progress_columns(f) : DEFAULT_COLUMNS;
}

/* One bar line of at most `width` characters (the last terminal column stays
 * free so that no terminal wraps): "[####....] 42% 84/200 requests  details".
 * The bar shrinks (to BAR_MIN_WIDTH) before the details are cut; it is
 * dropped only when it and the head do not fit. */
static void format_bar(char *out, int width, const char *head, const char *details, int64_t done,
                       int64_t total) {
  int head_len = (int)strlen(head), details_len = (int)strlen(details) + 2;
  int bar = width - 3 - head_len - details_len; /* "[" "] " */
  if (bar > BAR_MAX_WIDTH)
    bar = BAR_MAX_WIDTH;
  if (bar < BAR_MIN_WIDTH)
    bar = width - 3 - head_len >= BAR_MIN_WIDTH ? BAR_MIN_WIDTH : 0;
  int n = 0;
  if (bar > 0) {
    int fill = (int)((int64_t)bar * done / total);
    out[n++] = '[';
    for (int i = 0; i < bar; i++)
      out[n++] = i < fill ? '#' : '.';
    out[n++] = ']';
    out[n++] = ' ';
  }
  snprintf(out + n, (size_t)(width - n + 1), "%s  %s", head, details);
}

/* "elapsed 12s, ETA 30s": the ETA extrapolates the elapsed time by the
 * share of the workload's tokens done ("ETA ?" before there is any). */
static void timing(const sim_progress *p, double el, int64_t work, int64_t done, char *out,
                   size_t n) {
  char e[32], r[32] = "?";
  sim_progress_duration(el, e, sizeof e);
  double f = (double)work / (double)p->total_work;
  if (done >= p->total)
    snprintf(r, sizeof r, "0s");
  else if (f > 0.001 && el > 0.5)
    sim_progress_duration(el * (1.0 - (f < 0.999 ? f : 0.999)) / (f < 0.999 ? f : 0.999), r,
                          sizeof r);
  snprintf(out, n, "elapsed %s, ETA %s", e, r);
}

static void draw_bar(sim_progress *p, int pct, int64_t done, int64_t steps, int32_t running,
                     int64_t queued, double tps, const char *times) {
  char head[128], details[224], line[MAX_COLUMNS + 1];
  snprintf(head, sizeof head, "%s%s%3d%% %lld/%lld requests, %s", p->label,
           p->label[0] ? ": " : "", pct, (long long)done, (long long)p->total, times);
  snprintf(details, sizeof details, "step %lld, %d running, %lld queued, %.0f tok/s",
           (long long)steps, running, (long long)queued, tps);
  if (isatty(fileno(p->f)))
    p->cols = sim_progress_columns(p->f); /* follows a resized terminal */
  int width = p->cols - 1;
  format_bar(line, width, head, details, done, p->total);
  /* padded to the width: a shorter line overwrites all of the previous one */
  fprintf(p->f, "\r%-*s", width, line);
  fflush(p->f);
  p->drawn = 1;
}

void sim_progress_update(sim_progress *p, int64_t done, int64_t steps, int64_t tokens,
                         int64_t work, int32_t running, int64_t queued) {
  if (p->mode == SIM_PROGRESS_OFF)
    return;
  double now = sim_now(), el = now - p->t_start;
  int pct = (int)(100 * done / p->total);
  double tps = el > 0 ? tokens / el : 0.0;
  char times[64];
  if (p->mode == SIM_PROGRESS_BAR) {
    if (now - p->t_last < BAR_REDRAW_S && done < p->total)
      return;
    p->t_last = now;
    timing(p, el, work, done, times, sizeof times);
    draw_bar(p, pct, done, steps, running, queued, tps, times);
    return;
  }
  int decile = (int)(10 * done / p->total);
  if (decile == p->last_decile && now - p->t_last < LINES_EVERY_S)
    return;
  p->last_decile = decile;
  p->t_last = now;
  timing(p, el, work, done, times, sizeof times);
  fprintf(p->f, "progress: %s%s%3d%%  %lld/%lld requests, step %lld, %lld tokens, %s\n", p->label,
          p->label[0] ? ": " : "", pct, (long long)done, (long long)p->total, (long long)steps,
          (long long)tokens, times);
  fflush(p->f);
}

void sim_progress_end(sim_progress *p) {
  if (p->mode == SIM_PROGRESS_BAR && p->drawn) {
    fprintf(p->f, "\r%*s\r", p->cols - 1, "");
    fflush(p->f);
  }
}
