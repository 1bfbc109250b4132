/* Progress display on stderr: a bar on a terminal, plain periodic lines
 * otherwise.  The report itself goes to stdout, so `dsv4kv run > report.txt`
 * gets the report only. */
#ifndef DSV4KV_SIM_PROGRESS_H
#define DSV4KV_SIM_PROGRESS_H

#include <stddef.h>
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
  int64_t total;        /* requests                                        */
  int64_t total_work;   /* tokens of the workload (prompt + output), for the ETA */
  char label[64];       /* e.g. "nvfp4 2/3" in a --format list, or ""      */
  double t_start, t_last;
  int last_decile;
  int drawn;
  int cols; /* terminal width (bar mode): TIOCGWINSZ at each redraw, else 80 */
} sim_progress;

/* The mode `--progress auto` picks for stream f: a bar when f is a terminal,
 * periodic lines otherwise. */
sim_progress_mode sim_progress_auto(FILE *f);

/* Columns of the terminal behind f (TIOCGWINSZ), or 80 when unknown. */
int sim_progress_columns(FILE *f);

/* Seconds as "42s", "3m05s" or "1h02m" into out. */
void sim_progress_duration(double s, char *out, size_t n);

void sim_progress_start(sim_progress *p, FILE *f, sim_progress_mode mode, int64_t total,
                        int64_t total_work, const char *label);
/* tokens: processed so far; work: tokens of the workload done so far (the
 * ETA extrapolates the elapsed time by work / total_work). */
void sim_progress_update(sim_progress *p, int64_t done, int64_t steps, int64_t tokens,
                         int64_t work, int32_t running, int64_t queued);
/* Clears the bar (a line of spaces as wide as the terminal). */
void sim_progress_end(sim_progress *p);

#endif
