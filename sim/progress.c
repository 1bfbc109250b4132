/* Progress display (see progress.h). */
#include "progress.h"

#include <string.h>

#include "tensor.h"

#define BAR_WIDTH 30
#define BAR_REDRAW_S 0.1
#define LINES_EVERY_S 10.0

void sim_progress_start(sim_progress *p, FILE *f, sim_progress_mode mode, int64_t total) {
  memset(p, 0, sizeof *p);
  p->f = f;
  p->mode = mode;
  p->total = total > 0 ? total : 1;
  p->t_start = p->t_last = sim_now();
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
    char bar[BAR_WIDTH + 1];
    int fill = (int)((int64_t)BAR_WIDTH * done / p->total);
    for (int i = 0; i < BAR_WIDTH; i++)
      bar[i] = i < fill ? '#' : '.';
    bar[BAR_WIDTH] = 0;
    fprintf(p->f,
            "\r[%s] %3d%%  %lld/%lld requests  step %lld  %d running %lld queued  %.0f tok/s ", bar,
            pct, (long long)done, (long long)p->total, (long long)steps, running, (long long)queued,
            tps);
    fflush(p->f);
    p->drawn = 1;
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
    fprintf(p->f, "\r%*s\r", BAR_WIDTH + 90, "");
    fflush(p->f);
  }
}
