/* Progress display on stderr: a bar on a terminal, plain periodic lines
 * otherwise.  The report itself goes to stdout, so `dsv4kv run > report.txt`
 * gets the report only. */
#ifndef DSV4KV_SIM_PROGRESS_H
#define DSV4KV_SIM_PROGRESS_H

#include <stdint.h>
#include <stdio.h>

typedef enum {
  SIM_PROGRESS_OFF = 0,
  SIM_PROGRESS_BAR = 1,
  SIM_PROGRESS_LINES = 2
} sim_progress_mode;

typedef struct {
  FILE *f;
  sim_progress_mode mode;
  int64_t total;
  double t_start, t_last;
  int last_decile;
  int drawn;
  int cols; /* terminal width (bar mode): TIOCGWINSZ, else 80 */
} sim_progress;

/* The mode `--progress auto` picks for stream f: a bar when f is a terminal,
 * periodic lines otherwise. */
sim_progress_mode sim_progress_auto(FILE *f);

/* Columns of the terminal behind f (TIOCGWINSZ), or 80 when unknown. */
int sim_progress_columns(FILE *f);

void sim_progress_start(sim_progress *p, FILE *f, sim_progress_mode mode, int64_t total);
void sim_progress_update(sim_progress *p, int64_t done, int64_t steps, int64_t tokens,
                         int32_t running, int64_t queued);
/* Clears the bar (a line of spaces as wide as the terminal). */
void sim_progress_end(sim_progress *p);

#endif
