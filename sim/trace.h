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

#endif
