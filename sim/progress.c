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

void sim_progress_start(sim_progress *p, FILE *f, sim_progress_mode mode, int64_t total) {
  memset(p, 0, sizeof *p);
  p->f = f;
  p->mode = mode;
  p->total = total > 0 ? total : 1;
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

static void draw_bar(sim_progress *p, int pct, int64_t done, int64_t steps, int32_t running,
                     int64_t queued, double tps) {
  char head[64], details[160], line[MAX_COLUMNS + 1];
  snprintf(head, sizeof head, "%3d%% %lld/%lld requests", pct, (long long)done,
           (long long)p->total);
  snprintf(details, sizeof details, "step %lld, %d running, %lld queued, %.0f tok/s",
           (long long)steps, running, (long long)queued, tps);
  int width = p->cols - 1;
  format_bar(line, width, head, details, done, p->total);
  /* padded to the width: a shorter line overwrites all of the previous one */
  fprintf(p->f, "\r%-*s", width, line);
  fflush(p->f);
  p->drawn = 1;
}

void sim_progress_update(sim_progress *p, int64_t done, int64_t steps, int64_t tokens,
                         int32_t running, int64_t queued) {
  if (p->mode == SIM_PROGRESS_OFF)
    return;
  double now = sim_now(), el = now - p->t_start;
  int pct = (int)(100 * done / p->total);
  double tps = el > 0 ? tokens / el : 0.0;
  if (p->mode == SIM_PROGRESS_BAR) {
    if (now - p->t_last < BAR_REDRAW_S && done < p->total)
      return;
    p->t_last = now;
    draw_bar(p, pct, done, steps, running, queued, tps);
    return;
  }
  int decile = (int)(10 * done / p->total);
  if (decile == p->last_decile && now - p->t_last < LINES_EVERY_S)
    return;
  p->last_decile = decile;
  p->t_last = now;
  fprintf(p->f, "progress: %3d%%  %lld/%lld requests, step %lld, %lld tokens, %.1f s\n", pct,
          (long long)done, (long long)p->total, (long long)steps, (long long)tokens, el);
  fflush(p->f);
}

void sim_progress_end(sim_progress *p) {
  if (p->mode == SIM_PROGRESS_BAR && p->drawn) {
    fprintf(p->f, "\r%*s\r", p->cols - 1, "");
    fflush(p->f);
  }
}
