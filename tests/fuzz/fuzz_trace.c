/* fuzz_trace.c - libFuzzer target: the trace reader behind `dsv4kv run
 * --trace` (sim/trace.c) on arbitrary bytes, both formats.  The first byte
 * picks the mode: bit 0 skip_bad, bit 1 an Azure CSV header in front (so CSV
 * rows get fuzzed, not only the header), bits 2-3 max_requests (all, 1, 3,
 * 50).  Built with a small SIM_TRACE_MAX_LINE so that the line cap is reached.
 * Checks what an accepted workload promises; abort() = a crash to libFuzzer. */
#define _GNU_SOURCE /* fmemopen */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trace.h"

#define CHECK(cond)                                                         \
  do {                                                                      \
    if (!(cond)) {                                                          \
      fprintf(stderr, "fuzz_trace: %s:%d: %s\n", __FILE__, __LINE__, #cond); \
      abort();                                                              \
    }                                                                       \
  } while (0)

static const char csv_header[] = "TIMESTAMP,ContextTokens,GeneratedTokens\r\n";

static void check_workload(const sim_workload *w, int64_t max_requests) {
  CHECK(w->n >= 1 && (max_requests <= 0 || w->n <= max_requests));
  CHECK(w->source == SIM_SOURCE_MOONCAKE || w->source == SIM_SOURCE_AZURE);
  CHECK(!strcmp(w->name, "fuzz") && w->lines_read >= w->n);
  for (int64_t i = 0; i < w->n; i++) {
    const sim_request_spec *r = &w->reqs[i];
    CHECK(r->input_len >= 1 && r->input_len <= SIM_MAX_REQUEST_TOKENS);
    CHECK(r->output_len >= 0 && r->output_len <= SIM_MAX_REQUEST_TOKENS);
    CHECK(isfinite(r->arrival_ms) && r->arrival_ms >= 0);
    CHECK(i == 0 || w->reqs[i - 1].arrival_ms <= r->arrival_ms); /* sorted, rebased */
    CHECK(r->line >= 1);
    int32_t blocks = (r->input_len + SIM_HASH_BLOCK_TOKENS - 1) / SIM_HASH_BLOCK_TOKENS;
    CHECK(r->num_hash == 0 || (r->num_hash == blocks && r->hash_ids));
    for (int32_t k = 0; k < r->num_hash; k++) CHECK(r->hash_ids[k] >= 0);
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1) return 0;
  static const int64_t max_requests[4] = {0, 1, 3, 50};
  const int skip_bad = data[0] & 1, csv = (data[0] >> 1) & 1;
  const int64_t max = max_requests[(data[0] >> 2) & 3];
  data++, size--;
  size_t hlen = csv ? sizeof csv_header - 1 : 0;
  char *buf = malloc(hlen + size + 1); /* +1: fmemopen wants a non-empty buffer */
  if (!buf) return 0;
  memcpy(buf, csv_header, hlen);
  if (size) memcpy(buf + hlen, data, size);
  if (hlen + size == 0) buf[0] = '\n';
  FILE *fp = fmemopen(buf, hlen + size ? hlen + size : 1, "rb");
  CHECK(fp);
  sim_workload w;
  char err[1024] = "";
  int rc = sim_trace_read(fp, "fuzz", max, skip_bad, NULL, &w, err, sizeof err);
  if (rc == 0) {
    check_workload(&w, max);
    sim_workload_free(&w);
  } else {
    CHECK((rc == -1 || (rc == -2 && !skip_bad)) && !strncmp(err, "fuzz", 4));
    CHECK(w.n == 0 && w.reqs == NULL);
  }
  fclose(fp);
  free(buf);
  return 0;
}
