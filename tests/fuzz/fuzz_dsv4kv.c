/*
 * fuzz_dsv4kv.c - robustness harness for every dsv4kv entry point.
 *
 * Two front ends share one driver:
 *   - a seeded random loop (default main): `fuzz_dsv4kv [iters] [seconds] [seed]`
 *     env FUZZ_SLOW=1 also draws huge lengths (slow by design),
 *     env FUZZ_MISALIGN=1 also draws misaligned byte_offsets,
 *     env FUZZ_ALIAS=1 also draws outputs whose strides alias elements,
 *     env FUZZ_AVOID_OFFSET=1 keeps gather offsets away from INT64_MAX,
 *     env FUZZ_AVOID_BIGALLOC=1 skips _alloc calls with a huge window_size,
 *     env FUZZ_REPRO=<iter> runs only that iteration and dumps its arguments.
 *   Findings are printed as "ISSUE [kind] ..." (first 3 per kind, the first
 *   with an argument dump) and summed up as "FINDING kind x count".
 *   - a libFuzzer target (compile with -DFUZZ_LIBFUZZER).
 *
 * Every tensor is memory-honest: its buffer (one malloc, so ASan sees the
 * edges) has exactly the extent that shape / strides / byte_offset describe.
 * After every call the harness checks: input buffers unchanged, output bytes
 * outside the output's elements unchanged, output bytes outside what the SPEC
 * lets the op write unchanged, nothing written on an argument error, the
 * status / message / skipped / nonfinite / report contract, identical results with 1,
 * 2 and 3 threads, and (for the integer ops) the values against a small
 * reference written from SPEC §5.
 *
 * This file holds the entry points (main, LLVMFuzzerTestOneInput), the run's
 * flags and the misc op; the rest of the harness is in tests/fuzz/api/
 * (api/fuzz.h says which file holds what) and is compiled with this one in
 * every build mode (CMake, tests/fuzz/build.sh).
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include "api/fuzz.h"

/* The run's flags (env_flags) and state, declared in api/fuzz.h. */
int fz_g_slow, fz_g_misalign, fz_g_alias, fz_g_verbose, fz_g_libfuzzer, fz_g_avoid_offset, fz_g_avoid_bigalloc;
long fz_g_iter;
int fz_g_big; /* this iteration uses sizes that make the library go multi-threaded */
const char *fz_g_op = "";

/* ------------------------------------------------------------------------ */
/* Small entry points                                                          */
/* ------------------------------------------------------------------------ */
/* The status table against the header: every code up to DSV4KV_STATUS_LAST
 * named, none past it, and dsv4kv_is_error false exactly for OK and the two
 * warnings (the harness relies on it everywhere else). */
static void check_status_table(void) {
  for (int s = -1; s <= (int)g_max_status + 2; s++) {
    dsv4kv_status st = (dsv4kv_status)s;
    int known = strcmp(dsv4kv_status_string(st), "unknown dsv4kv status") != 0;
    if (known != (s >= 0 && s <= (int)g_max_status))
      fz_issue("status-table", "status %d is %s by dsv4kv_status_string, DSV4KV_STATUS_LAST = %u", s,
               known ? "named" : "not named", g_max_status);
    int warn_or_ok = st == DSV4KV_OK || st == DSV4KV_WARN_SKIPPED || st == DSV4KV_WARN_NONFINITE;
    if (s >= 0 && s <= (int)g_max_status && dsv4kv_is_error(st) == warn_or_ok)
      fz_issue("status-table", "dsv4kv_is_error(%d) = %d", s, dsv4kv_is_error(st));
  }
}

static void op_misc(Src *g) {
  fz_g_op = "misc";
  static int table_checked;
  if (!table_checked++) check_status_table();
  dsv4kv_record rec;
  int64_t w = fz_gidx(g, 0, 600);
  if (pct(g, 30)) w = (int64_t[]){584, 528, 288, 132, 68}[ru(g, 5)];
  dsv4kv_status st = dsv4kv_record_from_width(w, pct(g, 3) ? NULL : &rec);
  if ((unsigned)st > g_max_status) fz_issue("bad-status", "record_from_width");
  if (st != DSV4KV_OK && !dsv4kv_last_error()[0]) fz_issue("empty-message", "record_from_width");
  (void)dsv4kv_record_bytes((dsv4kv_record)fz_gidx(g, -1, 6));
  int32_t nw = dsv4kv_gather_num_workers(fz_gidx(g, -1, 1 << 20));
  if (nw < 128 || nw > 8192) fz_issue("wrong-value", "gather_num_workers = %d", nw);
  (void)dsv4kv_status_string((dsv4kv_status)fz_gidx(g, -1, 20));
  uint32_t u = (uint32_t)ru(g, 1ull << 32);
  float f;
  memcpy(&f, &u, 4);
  (void)dsv4kv_e4m3_encode(f);
  (void)dsv4kv_e4m3fnuz_encode(f);
  (void)dsv4kv_e2m1_encode(f);
  (void)dsv4kv_f32_to_bf16(f);
  (void)dsv4kv_e4m3_decode((uint8_t)u);
  (void)dsv4kv_e4m3fnuz_decode((uint8_t)u);
  (void)dsv4kv_e2m1_decode((uint8_t)u);
  (void)dsv4kv_ue8m0_decode((uint8_t)u);
  (void)dsv4kv_bf16_to_f32((uint16_t)u);
  fz_g_calls++;
}

static long g_opcount[8];
static void one_iteration(Src *g) {
  fz_pool_reset();
  fz_g_scalars[0] = 0;
  fz_g_big = pct(g, 12);
  int op = (int)ru(g, 7);
  g_opcount[op]++;
  switch (op) {
    case 0: fz_op_insert(g); break;
    case 1: fz_op_gather(g); break;
    case 2: fz_op_global_topk(g); break;
    case 3: fz_op_combine(g); break;
    case 4: fz_op_flashinfer(g); break;
    case 5: fz_op_indexer(g); break;
    default: op_misc(g); break;
  }
  fz_pool_reset();
}

static void env_flags(void) {
  fz_g_slow = getenv("FUZZ_SLOW") && atoi(getenv("FUZZ_SLOW"));
  fz_g_misalign = getenv("FUZZ_MISALIGN") && atoi(getenv("FUZZ_MISALIGN"));
  fz_g_alias = getenv("FUZZ_ALIAS") && atoi(getenv("FUZZ_ALIAS"));
  fz_g_verbose = getenv("FUZZ_VERBOSE") && atoi(getenv("FUZZ_VERBOSE"));
  /* FUZZ_AVOID_KNOWN=1 sets both */
  int known = getenv("FUZZ_AVOID_KNOWN") && atoi(getenv("FUZZ_AVOID_KNOWN"));
  fz_g_avoid_offset = known || (getenv("FUZZ_AVOID_OFFSET") && atoi(getenv("FUZZ_AVOID_OFFSET")));
  fz_g_avoid_bigalloc = known || (getenv("FUZZ_AVOID_BIGALLOC") && atoi(getenv("FUZZ_AVOID_BIGALLOC")));
  if (getenv("FUZZ_IGNORE")) snprintf(fz_g_ignore, sizeof fz_g_ignore, "%s", getenv("FUZZ_IGNORE"));
}

static void on_alarm(int sig) {
  char b[160];
  int n = snprintf(b, sizeof b, "STUCK? iteration %ld op %s still running after 10 s\n", fz_g_iter, fz_g_op);
  write(2, b, (size_t)n);
}

#ifdef FUZZ_LIBFUZZER
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static int init;
  if (!init) { env_flags(); fz_g_libfuzzer = 1; init = 1; }
  Src g = {data, size, 0, 0};
  fz_g_iter++;
  one_iteration(&g);
  return 0;
}
#else
int main(int argc, char **argv) {
  long iters = argc > 1 ? atol(argv[1]) : 100000;
  double secs = argc > 2 ? atof(argv[2]) : 600;
  uint64_t seed = argc > 3 ? strtoull(argv[3], NULL, 0) : 1;
  env_flags();
  long only = getenv("FUZZ_REPRO") ? atol(getenv("FUZZ_REPRO")) : -1;
  if (only >= 0) fz_g_verbose = 1;
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  long it;
  for (it = only >= 0 ? only : 0; it < iters || only >= 0; it++) {
    fz_g_iter = it;
    Src g = {NULL, 0, 0, seed * 0x100000001B3ull ^ (uint64_t)it * 0x9E3779B97F4A7C15ull};
    if (only >= 0) {
      one_iteration(&g);
      /* dump what was built: rebuild with the same seed for the dump */
      break;
    }
    struct timespec a0, a1;
    signal(SIGALRM, on_alarm);
    alarm(10);
    clock_gettime(CLOCK_MONOTONIC, &a0);
    one_iteration(&g);
    clock_gettime(CLOCK_MONOTONIC, &a1);
    double dt = (double)(a1.tv_sec - a0.tv_sec) + 1e-9 * (double)(a1.tv_nsec - a0.tv_nsec);
    if (dt > 1.0) fprintf(stderr, "SLOW iteration %ld (op %s): %.2f s\n", it, fz_g_op, dt);
    if ((it & 255) == 0) {
      clock_gettime(CLOCK_MONOTONIC, &t1);
      double el = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
      if (el > secs) { it++; break; }
    }
  }
  clock_gettime(CLOCK_MONOTONIC, &t1);
  double el = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
  printf("iterations %ld, library calls %ld, %.1f s (seed %llu, slow %d, misalign %d, alias %d)\n", it - (only >= 0 ? only : 0),
         fz_g_calls, el, (unsigned long long)seed, fz_g_slow, fz_g_misalign, fz_g_alias);
  printf("ops: insert %ld gather %ld global_topk %ld combine %ld flashinfer %ld indexer %ld misc %ld\n", g_opcount[0],
         g_opcount[1], g_opcount[2], g_opcount[3], g_opcount[4], g_opcount[5], g_opcount[6]);
  printf("statuses (1-thread runs):");
  for (int s = 0; s <= DSV4KV_STATUS_LAST; s++)
    if (fz_g_stat[s]) printf(" %d:%ld", s, fz_g_stat[s]);
  printf("\n");
  int bad = 0;
  for (int k = 0; k < fz_g_nkinds; k++) {
    printf("FINDING %-45s x %ld\n", fz_g_kinds[k].kind, fz_g_kinds[k].count);
    bad = 1;
  }
  if (!bad) printf("no findings\n");
  return bad;
}
#endif
