/* Trace files: the Mooncake JSONL and the Azure LLM-inference CSV, auto-detected. */
#ifndef DSV4KV_SIM_TRACE_H
#define DSV4KV_SIM_TRACE_H

#include <stddef.h>
#include <stdio.h>

#include "workload.h"

/* Loads the first `max_requests` requests (<= 0: all) of `path` into `w`.
 *
 * The format is detected from the first line: a JSON object means Mooncake
 * JSONL, anything else must be the Azure CSV header.  A malformed line is an
 * error "PATH:LINE: ..." written to `err`; with `skip_bad` it is skipped,
 * counted in w->skipped_lines and reported on `diag` (first few only; NULL =
 * silent) instead.  Returns 0 on success, -2 at a malformed line that
 * --skip-bad would skip, -1 on any other error (`err` filled).  Never crashes
 * on any file content. */
int sim_trace_load(const char *path, int64_t max_requests, int skip_bad, FILE *diag,
                   sim_workload *w, char *err, size_t errlen);

/* The longest line a trace may have (bytes, without the newline).  Real lines
 * are under 2 KB; a longer one is an error "PATH:LINE: line is longer ...",
 * with or without skip_bad.  Only regular files are read (a FIFO or a device
 * is refused at once: "PATH: not a regular file (a FIFO)"). */
#ifndef SIM_TRACE_MAX_LINE /* the fuzz target builds with a small one, to reach it */
#define SIM_TRACE_MAX_LINE (1 << 20)
#endif

/* sim_trace_load on an open stream (a fuzzer's fmemopen); `name` stands for
 * the path in messages and in w->name. */
int sim_trace_read(FILE *fp, const char *name, int64_t max_requests, int skip_bad, FILE *diag,
                   sim_workload *w, char *err, size_t errlen);

#endif
