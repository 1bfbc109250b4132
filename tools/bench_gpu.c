/* bench_gpu.c - `dsv4kv bench --device cuda`: every configuration of
 * tools/bench_cases.c on CUDA device 0, with its inputs copied to the device
 * once, timed two ways beside a device-to-device copy of 2 GiB measured in
 * the same run:
 *
 *   eager   one call between two CUDA events with the stream idle and L2
 *           flushed before it (a 256 MiB memset), so the figure holds the
 *           call's host side (argument checks, launches) as an engine calling
 *           the C API pays it, and the kernels reading from HBM; `host` is
 *           the wall time of the call itself on the CPU;
 *   graph   the same call captured n times in one CUDA graph, the graph
 *           replayed and timed with events, divided by n (L2 not flushed, as
 *           the reference's graph figures).
 *
 * Both are medians of many runs after warm-up.  The reference's figures on
 * the same GPU kind (../shared/anchors/triton-h200.md) are listed beside
 * ours where it has the configuration, with the ratio reference / ours. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "bench_cases.h"
#include "devmem.h"

/* The reference's event / graph microseconds per configuration (the faster
 * of its variants where it has several: V4's one-pass gather, NVFP4's best
 * tile). */
typedef struct {
  const char *config;
  double event_us, graph_us;
  const char *variant;
} anchor;

static const anchor anchors[] = {
    {"insert_v4 N=256", 9.9, 4.3, "decode table (reconstruction)"},
    {"insert_mxfp8 N=256", 5.4, 1.6, "decode table"},
    {"insert_nvfp4 N=256", 6.2, 1.8, "decode table (reconstruction)"},
    {"insert_v4 N=4096", 20.3, 13.8, ""},
    {"insert_v4 N=65536", 220.6, 215.6, ""},
    {"insert_v4 N=524288", 1691.5, 1688.7, ""},
    {"insert_mxfp8 N=4096", 8.6, 3.8, ""},
    {"insert_mxfp8 N=65536", 54.3, 49.8, ""},
    {"insert_mxfp8 N=524288", 388.3, 383.5, ""},
    {"insert_nvfp4 N=4096", 9.2, 5.7, ""},
    {"insert_nvfp4 N=65536", 73.6, 69.8, ""},
    {"insert_nvfp4 N=524288", 546.0, 542.1, ""},
    {"gather_v4 64x256", 16.4, 7.4, "one-pass (decode table)"},
    {"gather_mxfp8 64x256", 13.5, 6.6, "decode table"},
    {"gather_nvfp4 64x256", 12.4, 8.2, "decode table"},
    {"gather_v4 8x8192", 47.7, 43.6, "one-pass, max_gather_len=8192"},
    {"gather_v4 64x16384", 647.2, 643.4, "one-pass, max_gather_len=16384"},
    {"gather_mxfp8 8x8192", 51.2, 47.6, ""},
    {"gather_mxfp8 64x16384", 526.4, 523.0, ""},
    {"gather_nvfp4 8x8192", 29.8, 26.7, "TILE=4"},
    {"gather_nvfp4 64x16384", 385.7, 382.7, "TILE=16"},
    {"compute_global_topk T=64 topk=512", 12.9, 2.0, "decode table (reconstruction)"},
    {"compute_global_topk T=256 topk=512", 15.9, 2.2, "decode table (reconstruction)"},
    {"compute_global_topk T=4096 topk=512", 10.0, 4.4, ""},
    {"compute_global_topk T=4096 topk=1024", 14.6, 7.3, ""},
    {"combine_topk_swa T=64 topk=512 window=128 cr=4", 15.7, 1.7, "decode table (reconstruction)"},
    {"combine_topk_swa T=256 topk=512 window=128 cr=4", 16.8, 1.9, "decode table (reconstruction)"},
    {"combine_topk_swa T=4096 topk=512 window=128 cr=4", 10.8, 4.6, ""},
    {"combine_topk_swa T=4096 topk=1024 window=128 cr=4", 17.5, 6.6, ""},
    {"build_flashinfer_mixed T=64 (64 decode) topk=512 window=128", 44.6, 2.1, "decode table (reconstruction)"},
    {"build_flashinfer_mixed T=256 (64 decode) topk=512 window=128", 44.3, 2.3, "decode table (reconstruction)"},
    {"build_flashinfer_mixed T=4096 (64 decode) topk=512 window=128", 51.4, 8.0, "includes two allocations"},
    {"build_flashinfer_mixed T=4096 (64 decode) topk=1024 window=128", 68.2, 12.9, "includes two allocations"},
    {"indexer_k_norm_rope_store fp4=False T=256 cr=1", 7.1, 1.9, "decode table (reconstruction)"},
    {"indexer_k_norm_rope_store fp4=True T=256 cr=1", 9.7, 1.9, "decode table (reconstruction)"},
    {"indexer_k_norm_rope_store fp4=False T=16384 cr=1", 20.8, 11.6, ""},
    {"indexer_k_norm_rope_store fp4=True T=16384 cr=1", 21.4, 11.6, ""},
};

static const anchor *anchor_of(const char *config) {
  /* a configuration with distinct slots promised is the anchor's configuration */
  const size_t n = strlen(config), k = strlen(BENCH_DISTINCT_SUFFIX);
  const size_t len = n > k && !strcmp(config + n - k, BENCH_DISTINCT_SUFFIX) ? n - k : n;
  for (size_t i = 0; i < sizeof anchors / sizeof anchors[0]; i++)
    if (strlen(anchors[i].config) == len && !strncmp(anchors[i].config, config, len)) return &anchors[i];
  return NULL;
}

enum { FLUSH_BYTES = 256 << 20, WARMUP_CALLS = 3, GRAPH_REPLAYS = 15 };


/* Device copies of the case's tensors (the DLTensors then point at them). */
typedef struct {
  void *dev[BENCH_MAX_BUFS];
  int n;
} staging;

static int stage(bench_case *c, staging *s) {
  memset(s, 0, sizeof *s);
  for (int i = 0; i < c->nt; i++) {
    DLTensor *t = &c->t[i];
    size_t n = (size_t)(t->dtype.bits / 8);
    for (int d = 0; d < t->ndim; d++) n *= (size_t)t->shape[d];
    if (!(s->dev[s->n] = devmem_alloc(n))) return -1;
    if (devmem_upload(s->dev[s->n++], t->data, n)) return -1; /* unstage frees it */
    t->data = s->dev[s->n - 1];
    t->device = (DLDevice){kDLCUDA, 0};
  }
  return devmem_sync();
}

static void unstage(staging *s) {
  for (int i = 0; i < s->n; i++) devmem_free(s->dev[i]);
  s->n = 0;
}

typedef struct {
  bench_case *c;
  dsv4kv_options opt;
  const char *failed; /* the library's message of a failed call */
  char msg[512];
} gpu_call;

static int call_once(gpu_call *g) {
  dsv4kv_status st = opcall_run(&g->c->call, &g->opt);
  if (st != DSV4KV_OK) {
    snprintf(g->msg, sizeof g->msg, "%s (status %d)", dsv4kv_last_error(), (int)st);
    g->failed = g->msg;
    return -1;
  }
  return 0;
}

/* The smallest piece of work the runtime enqueues (a 4-byte memset), as a
 * call (the launch floor of the eager and graph figures). */
static void *floor_buf;
static int floor_call(gpu_call *g) {
  (void)g;
  return devmem_fill(floor_buf, 0, 4);
}

/* Median eager microseconds (see the file's comment), or -1; *host_us gets
 * the median wall time of the call. */
static double eager_us(gpu_call *g, int (*call)(gpu_call *), void *flush, const bench_opts *o, int *runs,
                       double *host_us) {
  double t[BENCH_MAX_RUNS], h[BENCH_MAX_RUNS], spent = 0;
  int n = 0;
  for (int i = 0; i < WARMUP_CALLS; i++)
    if (call(g)) return -1;
  if (devmem_sync()) return -1;
  const double t0 = bench_now(); /* --min-seconds counts the timed runs only */
  while (n < BENCH_MAX_RUNS && (n < o->min_runs || spent < o->min_seconds)) {
    if (devmem_fill(flush, n & 0xFF, FLUSH_BYTES) || devmem_sync() || devmem_mark(0)) return -1;
    const double h0 = bench_now();
    if (call(g)) return -1;
    h[n] = 1e6 * (bench_now() - h0);
    if (devmem_mark(1) || devmem_sync()) return -1;
    t[n++] = 1e3 * devmem_elapsed_ms();
    spent = bench_now() - t0;
  }
  *runs = n;
  *host_us = bench_median(h, n);
  return bench_median(t, n);
}

/* Median graph microseconds per call, or -1; *per_graph gets n. */
static double graph_us(gpu_call *g, int (*call)(gpu_call *), double eager, int *per_graph) {
  int n = eager > 0 ? (int)(2000.0 / eager) : 1;
  n = n < 1 ? 1 : n > 200 ? 200 : n;
  *per_graph = n;
  void *exec = NULL;
  if (devmem_capture_begin()) return -1;
  int bad = 0;
  for (int i = 0; i < n && !bad; i++) bad = call(g);
  if (devmem_capture_end(&exec) || bad) {
    devmem_graph_free(exec);
    return -1;
  }
  double t[GRAPH_REPLAYS];
  bad = devmem_graph_launch(exec) || devmem_sync(); /* warm-up */
  for (int r = 0; r < GRAPH_REPLAYS && !bad; r++) {
    bad = devmem_mark(0) || devmem_graph_launch(exec) || devmem_mark(1) || devmem_sync();
    t[r] = 1e3 * devmem_elapsed_ms() / n;
  }
  devmem_graph_free(exec);
  return bad ? -1 : bench_median(t, GRAPH_REPLAYS);
}

/* GB/s of a device-to-device copy of 2 GiB (read + write), median of 10. */
static double copy_gbps(void) {
  const size_t n = (size_t)2 << 30;
  void *a = devmem_alloc(n), *b = devmem_alloc(n);
  double t[10], r = -1;
  if (a && b && !devmem_fill(a, 1, n) && !devmem_copy(b, a, n) && !devmem_sync()) {
    int bad = 0;
    for (int i = 0; i < 10 && !bad; i++) {
      bad = devmem_mark(0) || devmem_copy(b, a, n) || devmem_mark(1) || devmem_sync();
      t[i] = 1e-3 * devmem_elapsed_ms();
    }
    if (!bad) r = 2.0 * (double)n / bench_median(t, 10) / 1e9;
  }
  devmem_free(a), devmem_free(b);
  return r;
}

static void add_row(cJSON *rows, const bench_case *c, double e, double host, double gr, int runs, int per_graph,
                    double ceiling) {
  const anchor *a = anchor_of(c->name);
  const double ge = (double)c->bytes / (e * 1e-6) / 1e9, gg = (double)c->bytes / (gr * 1e-6) / 1e9;
  printf("%-64s %8.2f %9.1f %6.1f %8.1f %7.0f %5.1f%% %7.0f %5.1f%%", c->name, (double)c->bytes / 1e6, e, host, gr,
         ge, 100 * ge / ceiling, gg, 100 * gg / ceiling);
  if (a)
    printf(" %8.1f %7.1f %6.2fx %6.2fx\n", a->event_us, a->graph_us, a->event_us / e, a->graph_us / gr);
  else
    printf(" %8s %7s %7s %7s\n", "-", "-", "-", "-");
  fflush(stdout);
  cJSON *r = cJSON_CreateObject();
  cJSON_AddStringToObject(r, "config", c->name);
  cJSON_AddStringToObject(r, "op", c->op);
  cJSON_AddStringToObject(r, "record", c->record);
  cJSON_AddStringToObject(r, "size", c->size);
  cJSON_AddNumberToObject(r, "tokens", (double)c->tokens);
  cJSON_AddNumberToObject(r, "bytes", (double)c->bytes);
  if (c->distinct_slots) cJSON_AddBoolToObject(r, "distinct_slots", 1);
  if (c->table_columns) cJSON_AddNumberToObject(r, "table_columns", (double)c->table_columns);
  cJSON_AddNumberToObject(r, "eager_us", e);
  cJSON_AddNumberToObject(r, "host_us", host);
  cJSON_AddNumberToObject(r, "graph_us", gr);
  cJSON_AddNumberToObject(r, "gbps_eager", ge);
  cJSON_AddNumberToObject(r, "gbps_graph", gg);
  cJSON_AddNumberToObject(r, "pct_copy_eager", 100 * ge / ceiling);
  cJSON_AddNumberToObject(r, "pct_copy_graph", 100 * gg / ceiling);
  cJSON_AddNumberToObject(r, "eager_runs", runs);
  cJSON_AddNumberToObject(r, "calls_per_graph", per_graph);
  if (a) {
    cJSON_AddNumberToObject(r, "ref_event_us", a->event_us);
    cJSON_AddNumberToObject(r, "ref_graph_us", a->graph_us);
    cJSON_AddNumberToObject(r, "ref_gbps_event", (double)c->bytes / (a->event_us * 1e-6) / 1e9);
    cJSON_AddNumberToObject(r, "ref_gbps_graph", (double)c->bytes / (a->graph_us * 1e-6) / 1e9);
    cJSON_AddNumberToObject(r, "speedup_eager", a->event_us / e);
    cJSON_AddNumberToObject(r, "speedup_graph", a->graph_us / gr);
    cJSON_AddStringToObject(r, "ref_variant", a->variant);
  }
  cJSON_AddItemToArray(rows, r);
}

/* The rows every figure stands on: a 4-byte memset timed as a call (the
 * least a launch costs) and an insert of no rows (the library's host side). */
static void measure_floors(const bench_opts *o, void *flush, cJSON *floor, double ceiling) {
  { /* the launch floor: the same two timings of a 4-byte memset */
    floor_buf = devmem_alloc(4);
    gpu_call g = {NULL, {0}, NULL, ""};
    bench_case fc;
    memset(&fc, 0, sizeof fc);
    snprintf(fc.name, sizeof fc.name, "launch floor (cudaMemsetAsync of 4 bytes)");
    fc.op = "floor", fc.record = "", fc.size = "decode", fc.tokens = 0, fc.bytes = 4;
    int runs = 0, per_graph = 0;
    double host = 0, e = floor_buf ? eager_us(&g, floor_call, flush, o, &runs, &host) : -1;
    double gr = e > 0 ? graph_us(&g, floor_call, e, &per_graph) : -1;
    if (e > 0 && gr > 0) add_row(floor, &fc, e, host, gr, runs, per_graph, ceiling);
    devmem_free(floor_buf);
  }
  { /* the library's host side alone: an insert of no rows launches nothing */
    bench_case c;
    staging st;
    const int made = bench_case_make(0, "insert", NULL, "decode", &c) == 1;
    if (made && !stage(&c, &st)) {
      c.shapes[0][0] = 0, c.shapes[1][0] = 0; /* k and slot_mapping: 0 rows */
      snprintf(c.name, sizeof c.name, "insert of 0 rows (the call's host side, no kernel)");
      c.op = "floor", c.bytes = 4;
      gpu_call g = {&c, {.stream = devmem_stream()}, NULL, ""};
      int runs = 0, per_graph = 0;
      double host = 0, e = eager_us(&g, call_once, flush, o, &runs, &host);
      if (e > 0) add_row(floor, &c, e, host, e, runs, per_graph, ceiling);
    }
    if (made) unstage(&st), bench_case_free(&c);
  }
}

int bench_gpu(const bench_opts *o, cJSON *root) {
  if (!dsv4kv_backend_available(kDLCUDA)) {
    fprintf(stderr, "dsv4kv bench: --device cuda: %s; run with --device cpu\n",
            dsv4kv_backend_unavailable_reason(kDLCUDA));
    return 2;
  }
  if (!devmem_available())
    return fprintf(stderr, "dsv4kv bench: --device cuda: %s; run with --device cpu\n", devmem_error()), 2;
  char dev[256];
  devmem_describe(dev, sizeof dev);
  void *flush = devmem_alloc(FLUSH_BYTES), *report = o->report ? devmem_alloc(sizeof(dsv4kv_report)) : NULL;
  const double ceiling = copy_gbps();
  if (!flush || (o->report && !report) || ceiling <= 0) {
    fprintf(stderr, "dsv4kv bench: --device cuda: setting up: %s\n", devmem_error());
    devmem_free(flush), devmem_free(report);
    return 1;
  }
  printf("dsv4kv bench: cuda, %s; libdsv4kv %s; device report: %s\n", dev, dsv4kv_version(),
         o->report ? "yes (one per call)" : "no");
  printf("device-to-device copy of 2 GiB: %.0f GB/s (read + write), the ceiling below\n", ceiling);
  printf("%-64s %8s %9s %6s %8s %7s %6s %7s %6s %8s %7s %7s %7s\n", "config", "MB", "eager us", "host", "graph us",
         "GB/s", "% copy", "GB/s g", "% g", "ref ev", "ref gr", "x ev", "x gr");
  cJSON_AddStringToObject(root, "device", "cuda");
  cJSON_AddStringToObject(root, "gpu", dev);
  cJSON_AddNumberToObject(root, "copy_gbps", ceiling);
  cJSON_AddBoolToObject(root, "device_report", o->report != 0);
  cJSON_AddArrayToObject(root, "floor");
  measure_floors(o, flush, cJSON_GetObjectItem(root, "floor"), ceiling);
  cJSON *rows = cJSON_GetObjectItem(root, "results");
  int rc = 0, matched = 0;
  for (int i = 0;; i++) {
    bench_case c;
    staging s;
    int m = bench_case_make(i, o->op, o->record, o->sizes, &c);
    if (m == 0) break;
    if (m == -1) continue;
    matched++;
    if (m == -2 || stage(&c, &s)) {
      fprintf(stderr, "dsv4kv bench: %s: no memory for the inputs (%s)\n", m == -2 ? "a config" : c.name,
              devmem_error());
      if (m != -2) unstage(&s), bench_case_free(&c);
      rc = 1;
      break;
    }
    gpu_call g = {&c, {.stream = devmem_stream(), .report = report, .distinct_slots = c.distinct_slots}, NULL, ""};
    int runs = 0, per_graph = 0;
    double host = 0, e = eager_us(&g, call_once, flush, o, &runs, &host);
    double gr = e > 0 ? graph_us(&g, call_once, e, &per_graph) : -1;
    if (e > 0 && gr > 0) {
      add_row(rows, &c, e, host, gr, runs, per_graph, ceiling);
    } else {
      fprintf(stderr, "dsv4kv bench: %s: %s\n", c.name, g.failed ? g.failed : devmem_error());
      rc = 1;
    }
    unstage(&s);
    bench_case_free(&c);
  }
  devmem_free(flush), devmem_free(report);
  return !matched && !rc ? (fprintf(stderr, "dsv4kv bench: no configuration matches the filters\n"), 2) : rc;
}
