/*
 * ops_main.c - runs every case of the registry on one backend.
 *
 *   ops_registry [--backend scalar|paths|cuda] [--filter TEXT] [--rounds N [--seed S]] [--distinct-slots] [--verbose]
 *   ops_registry --list          each case's op, bytes moved (for benchmarks) and seed
 *
 * scalar: the scalar CPU path at 1 thread against the reference (bytes of
 *         every output buffer, guards included; status; skipped and
 *         nonfinite counts), then at 2 threads against 1 thread.
 * paths:  every other CPU path (dsv4kv_cpu_path_count) at 1 and 2 threads
 *         against the scalar path at 1 thread; exit 77 when there is none.
 * cuda:   the case's buffers copied to the device (device.h), the op run
 *         there with options.report, compared with the scalar path; exit 77
 *         without a CUDA backend or device table.
 * A new CPU path needs nothing here: `paths` runs whatever the library
 * lists.  A new device kind: an ops_device table and a --backend name.
 *
 * --distinct-slots: inserts and indexer stores none of whose writing rows
 * name one slot (slots_distinct) pass options.distinct_slots (CUDA: no
 * duplicate resolution);
 * the count of such calls is printed, and none at all is a failure.
 *
 * --rounds N runs every case N times, round 0 with the case's own seed and
 * round k > 0 with a seed drawn from S (default: the time) and k, so the
 * generators draw fresh shapes and values each round (the line names the seed).
 *
 * One line per case per path ("name path: ok"), then "N passed, N failed,
 * N skipped".  Exit 0 when nothing failed.
 */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "device.h"
#include "ops.h"

typedef struct {
  dsv4kv_status st;
  int64_t skipped, nonfinite;
  dsv4kv_report rep;
  uint8_t *out[OPS_MAX_TENSORS];   /* every output buffer after the call     */
  int32_t *alloc[2];               /* combine _alloc: compact copies         */
  char err[384];                   /* what went wrong outside the compares   */
  char lib_msg[256];               /* dsv4kv_last_error() after the call     */
} ops_result;

static void result_free(ops_result *r) {
  for (int i = 0; i < OPS_MAX_TENSORS; i++) free(r->out[i]);
  free(r->alloc[0]);
  free(r->alloc[1]);
  memset(r, 0, sizeof *r);
}

/* The library's _alloc outputs as compact arrays, after checking their shape. */
static void take_alloc(ops_inst *in, ops_result *res) {
  opcall_combine *a = &in->call.u.combine;
  for (int k = 0; k < 2; k++) {
    DLManagedTensor *m = k ? a->lens_alloc : a->combined_alloc;
    const DLTensor *t = m ? &m->dl_tensor : NULL;
    int64_t R = in->alloc_shape[k][0], C = in->alloc_shape[k][1];
    if (!t || t->ndim != 2 - k || t->shape[0] != R || (k == 0 && t->shape[1] != C) || t->dtype.code != kDLInt ||
        t->dtype.bits != 32 || t->device.device_type != kDLCPU) {
      snprintf(res->err, sizeof res->err, "_alloc output %d is not int32 [%" PRId64 ", %" PRId64 "] on the CPU", k, R,
               C);
      return;
    }
    int64_t s0 = t->strides ? t->strides[0] : (k ? 1 : C), s1 = t->strides && !k ? t->strides[1] : 1;
    const int32_t *p = (const int32_t *)((const char *)t->data + t->byte_offset);
    res->alloc[k] = malloc((size_t)(R * C + 1) * 4);
    for (int64_t i = 0; i < R; i++)
      for (int64_t j = 0; j < C; j++) res->alloc[k][i * C + j] = p[i * s0 + j * s1];
  }
}

/* Inputs unchanged, outputs copied out. */
static void collect(ops_inst *in, ops_result *res) {
  for (int i = 0; i < in->nx; i++) {
    ops_tensor *x = &in->x[i];
    if (x->out) {
      res->out[i] = malloc(x->n);
      memcpy(res->out[i], x->host, x->n);
    } else if (memcmp(x->host, x->init, x->n) && !res->err[0]) {
      snprintf(res->err, sizeof res->err, "input %s was written", x->name);
    }
  }
  if (in->call.op == OPCALL_COMBINE && in->call.u.combine.alloc && !dsv4kv_is_error(res->st)) take_alloc(in, res);
  opcall_release(&in->call);
}

/* --distinct-slots, and the calls that passed the promise. */
static int promise_distinct;
static long promised;

static int cmp_i64(const void *a, const void *b) {
  const int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

/* Element t of a 1-D int64 tensor in host memory. */
static int64_t i64_at(const DLTensor *s, int64_t t) {
  const int64_t *base = (const int64_t *)((const char *)s->data + s->byte_offset);
  return base[t * (s->strides ? s->strides[0] : 1)];
}

/* Whether row t of an indexer store writes a key: a position at a group's
 * last row whose RoPE row lies in the table (src/cuda/cuda_common.cuh's
 * row_writes; a row it counts that the library skips only withholds a
 * promise). */
static int indexer_row_writes(const opcall_indexer *a, int64_t t) {
  const int64_t pos = i64_at(a->positions, t), cr = a->compress_ratio;
  return cr > 0 && pos >= 0 && pos % cr == cr - 1 && (pos / cr) * cr < a->cos_sin_cache->shape[0];
}

/* Whether the call is an insert or indexer store none of whose writing rows
 * (a slot in the cache; for the indexer store, a row that stores a key) name
 * one slot: the calls --distinct-slots promises, as options.distinct_slots
 * defines the promise (-1 padding, slots past the cache and the indexer's
 * other rows may repeat). */
static int slots_distinct(const opcall *c) {
  const DLTensor *s = c->op == OPCALL_INSERT ? c->u.insert.slot_mapping
                      : c->op == OPCALL_INDEXER ? c->u.indexer.kv_slot_mapping
                                                : NULL;
  const DLTensor *cache = c->op == OPCALL_INSERT ? c->u.insert.k_cache : c->u.indexer.k_cache;
  const dsv4kv_cache_desc *d = c->op == OPCALL_INSERT ? c->u.insert.cache : c->u.indexer.cache;
  if (!s || !s->data || s->ndim != 1 || s->dtype.code != kDLInt || s->dtype.bits != 64 || s->shape[0] < 0 ||
      !cache || cache->ndim < 1 || !d || d->block_size <= 0)
    return 0;
  const DLTensor *pos = c->op == OPCALL_INDEXER ? c->u.indexer.positions : NULL;
  if (pos && (!pos->data || pos->ndim != 1 || pos->dtype.code != kDLInt || pos->dtype.bits != 64 ||
              pos->shape[0] < s->shape[0]))
    return 0;
  const int64_t n = s->shape[0], num_slots = cache->shape[0] * d->block_size;
  int64_t *v = malloc((size_t)(n ? n : 1) * sizeof *v), m = 0;
  if (!v) return 0;
  for (int64_t i = 0; i < n; i++) {
    const int64_t slot = i64_at(s, i);
    if (slot >= 0 && slot < num_slots && (!pos || indexer_row_writes(&c->u.indexer, i))) v[m++] = slot;
  }
  qsort(v, (size_t)m, sizeof *v, cmp_i64);
  int ok = 1;
  for (int64_t i = 1; i < m && ok; i++) ok = v[i] != v[i - 1];
  free(v);
  return ok;
}

static void run_cpu(ops_inst *in, int threads, ops_result *res) {
  memset(res, 0, sizeof *res);
  for (int i = 0; i < in->nx; i++) memcpy(in->x[i].host, in->x[i].init, in->x[i].n);
  res->skipped = res->nonfinite = -777;
  memset(&res->rep, 0xEE, sizeof res->rep);
  dsv4kv_options opt = {.skipped = &res->skipped, .nonfinite = &res->nonfinite,
                        .check_nonfinite = in->check_nonfinite, .num_threads = threads, .report = &res->rep,
                        .distinct_slots = promise_distinct && slots_distinct(&in->call)};
  promised += opt.distinct_slots;
  res->st = opcall_run(&in->call, &opt);
  snprintf(res->lib_msg, sizeof res->lib_msg, "%s", dsv4kv_last_error());
  collect(in, res);
  if (!dsv4kv_is_error(res->st) && (res->rep.skipped != res->skipped || res->rep.nonfinite != res->nonfinite))
    snprintf(res->err, sizeof res->err,
             "report says skipped %" PRId64 " nonfinite %" PRId64 ", the counters %" PRId64 " / %" PRId64,
             res->rep.skipped, res->rep.nonfinite, res->skipped, res->nonfinite);
}

/* The case on a device: buffers copied there and back, counts from the report. */
static void run_device(ops_inst *in, const ops_device *dev, ops_result *res) {
  memset(res, 0, sizeof *res);
  int bad = 0;
  const int distinct = promise_distinct && slots_distinct(&in->call); /* (the tensors still in host memory) */
  void *rep = dev->alloc(sizeof(dsv4kv_report));
  dsv4kv_report poison;
  memset(&poison, 0xEE, sizeof poison);
  bad |= !rep || dev->upload(rep, &poison, sizeof poison);
  for (int i = 0; i < in->nx && !bad; i++) {
    ops_tensor *x = &in->x[i];
    x->dev = dev->alloc(x->n);
    bad |= !x->dev || dev->upload(x->dev, x->init, x->n);
    x->t.data = x->empty && dev->device.device_type == kDLCPU ? NULL : x->dev; /* (ops_tensor.empty) */
    x->t.device = dev->device;
  }
  if (!bad) {
    dsv4kv_options opt = {.check_nonfinite = in->check_nonfinite, .stream = dev->stream, .report = rep,
                          .distinct_slots = distinct};
    promised += distinct;
    res->st = opcall_run(&in->call, &opt);
    snprintf(res->lib_msg, sizeof res->lib_msg, "%s", dsv4kv_last_error());
    bad |= !dsv4kv_is_error(res->st) && dev->sync(dev->stream);
    bad |= dev->download(&res->rep, rep, sizeof res->rep);
  }
  for (int i = 0; i < in->nx; i++) {
    ops_tensor *x = &in->x[i];
    if (x->dev) {
      bad |= dev->download(x->host, x->dev, x->n);
      dev->release(x->dev);
    }
    x->dev = NULL;
    x->t.data = x->empty ? NULL : x->host;
    x->t.device = (DLDevice){kDLCPU, 0};
  }
  if (rep) dev->release(rep);
  if (res->st == DSV4KV_OK) res->st = dsv4kv_report_status(&res->rep);
  res->skipped = res->rep.skipped;
  res->nonfinite = res->rep.nonfinite;
  collect(in, res);
  if (bad) snprintf(res->err, sizeof res->err, "device memory or stream call failed");
}

/* ---- comparisons ----------------------------------------------------------- */
/* Where byte `rel` of a tensor lies: its index, or a guard. */
static void where(const ops_tensor *x, int64_t rel, int64_t extent, char *buf, size_t n) {
  if (rel < 0 || rel >= extent) {
    snprintf(buf, n, "in the guard %s the tensor", rel < 0 ? "before" : "after");
    return;
  }
  int64_t e = rel / x->esz, idx[4] = {0, 0, 0, 0};
  for (int d = 0; d < x->t.ndim; d++) { /* strides decrease: peel from the outermost */
    idx[d] = x->st[d] ? e / x->st[d] : 0;
    e -= idx[d] * x->st[d];
  }
  int k = snprintf(buf, n, "at [%" PRId64, idx[0]);
  for (int d = 1; d < x->t.ndim && k > 0 && (size_t)k < n; d++)
    k += snprintf(buf + k, n - (size_t)k, ", %" PRId64, idx[d]);
  if (k > 0 && (size_t)k < n) snprintf(buf + k, n - (size_t)k, "]%s", e ? " (in row padding)" : "");
}

static int diff_msg(const ops_inst *in, const ops_tensor *x, const uint8_t *got, const uint8_t *want, char *msg,
                    size_t n) {
  size_t first, nd = count_diff(got, want, x->n, &first);
  if (!nd) return 0;
  char at[96];
  int64_t rel = (int64_t)first - in->lead;
  where(x, rel, (int64_t)x->n - in->lead - OPS_GUARD, at, sizeof at);
  snprintf(msg, n, "%s: %zu bytes differ, first %s (byte %" PRId64 "): got 0x%02x want 0x%02x", x->name, nd, at, rel,
           got[first], want[first]);
  return 1;
}

static dsv4kv_status want_status(const ops_inst *in) {
  return in->want_skipped > 0 ? DSV4KV_WARN_SKIPPED : in->want_nonfinite > 0 ? DSV4KV_WARN_NONFINITE : DSV4KV_OK;
}

static int vs_reference(const ops_inst *in, const ops_result *r, char *msg, size_t n) {
  if (r->err[0]) return snprintf(msg, n, "%s", r->err), 1;
  if (r->st != want_status(in))
    return snprintf(msg, n, "status %s, the reference says %s%s%s", dsv4kv_status_string(r->st),
                    dsv4kv_status_string(want_status(in)), r->lib_msg[0] ? "; library: " : "", r->lib_msg), 1;
  if (r->skipped != in->want_skipped || r->nonfinite != in->want_nonfinite)
    return snprintf(msg, n, "skipped %" PRId64 " nonfinite %" PRId64 ", the reference says %" PRId64 " / %" PRId64,
                    r->skipped, r->nonfinite, in->want_skipped, in->want_nonfinite), 1;
  for (int i = 0; i < in->nx; i++)
    if (in->x[i].out && diff_msg(in, &in->x[i], r->out[i], in->x[i].want, msg, n)) return 1;
  for (int k = 0; k < 2; k++) {
    int64_t cnt = in->alloc_shape[k][0] * in->alloc_shape[k][1];
    if (in->want_alloc[k] && memcmp(r->alloc[k], in->want_alloc[k], (size_t)cnt * 4)) {
      int64_t i = 0;
      while (r->alloc[k][i] == in->want_alloc[k][i]) i++;
      return snprintf(msg, n, "_alloc %s element %" PRId64 ": got %d want %d", k ? "lens" : "combined", i,
                      r->alloc[k][i], in->want_alloc[k][i]), 1;
    }
  }
  return 0;
}

/* b against the baseline a: the same bytes, status and report. */
static int vs_baseline(const ops_inst *in, const ops_result *a, const ops_result *b, char *msg, size_t n) {
  if (b->err[0]) return snprintf(msg, n, "%s", b->err), 1;
  if (a->st != b->st)
    return snprintf(msg, n, "status %s, the baseline %s", dsv4kv_status_string(b->st), dsv4kv_status_string(a->st)), 1;
  int counted = !dsv4kv_is_error(a->st); /* an argument error counts nothing */
  if (counted && (a->skipped != b->skipped || a->nonfinite != b->nonfinite))
    return snprintf(msg, n, "skipped %" PRId64 " nonfinite %" PRId64 ", the baseline %" PRId64 " / %" PRId64,
                    b->skipped, b->nonfinite, a->skipped, a->nonfinite), 1;
  /* the whole report: the message names the same entry on every path */
  if (counted && memcmp(&a->rep, &b->rep, sizeof a->rep))
    return snprintf(msg, n, "report differs (reason %d vs %d, first key %" PRId64 " vs %" PRId64 ")", b->rep.reason,
                    a->rep.reason, b->rep.first_key, a->rep.first_key), 1;
  for (int i = 0; i < in->nx; i++)
    if (in->x[i].out && diff_msg(in, &in->x[i], b->out[i], a->out[i], msg, n)) return 1;
  for (int k = 0; k < 2; k++)
    if (a->alloc[k] && (!b->alloc[k] || memcmp(a->alloc[k], b->alloc[k],
                                               (size_t)(in->alloc_shape[k][0] * in->alloc_shape[k][1]) * 4)))
      return snprintf(msg, n, "_alloc %s differs", k ? "lens" : "combined"), 1;
  return 0;
}

/* ---- driving ---------------------------------------------------------------- */
typedef struct {
  int passed, failed, skipped, verbose;
} tally;

static void report_line(tally *t, const ops_case *c, const char *path, int fail, const char *msg) {
  printf("%s %s: %s%s\n", c->name, path, fail ? "FAIL: " : "ok", fail ? msg : "");
  if (fail) t->failed++;
  else t->passed++;
}

#define OPS_MAX_ROUNDS 10000 /* a typo cannot start a run of days */

static uint64_t splitmix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

static ops_inst *build(const ops_case *c, int with_ref) {
  ops_inst *in = calloc(1, sizeof *in);
  if (!in) abort();
  in->device_ok = 1;
  rng_t r;
  rng_seed(&r, c->seed);
  c->gen(in, &r, c);
  ops_seal(in);
  if (with_ref) c->ref(in);
  return in;
}

static void select_path(const char *name) {
  if (dsv4kv_cpu_path_select(name) != DSV4KV_OK) {
    fprintf(stderr, "cannot select CPU path %s: %s\n", name, dsv4kv_last_error());
    exit(2);
  }
}

static void case_scalar(const ops_case *c, tally *t) {
  ops_inst *in = build(c, 1);
  ops_result r1, r2;
  char msg[512];
  run_cpu(in, 1, &r1);
  int fail = vs_reference(in, &r1, msg, sizeof msg);
  if (!fail) {
    char m2[448];
    run_cpu(in, 2, &r2);
    fail = vs_baseline(in, &r1, &r2, m2, sizeof m2);
    if (fail) snprintf(msg, sizeof msg, "at 2 threads: %s", m2);
    result_free(&r2);
  }
  if (t->verbose)
    printf("  %s: status %s, skipped %" PRId64 ", nonfinite %" PRId64 ", %" PRId64 " bytes\n", c->name,
           dsv4kv_status_string(r1.st), r1.skipped, r1.nonfinite, opcall_bytes(&in->call));
  report_line(t, c, "scalar", fail, msg);
  result_free(&r1);
  ops_inst_free(in);
}

static void case_paths(const ops_case *c, tally *t) {
  ops_inst *in = build(c, 0);
  ops_result base, r;
  char msg[512], label[96];
  select_path(dsv4kv_cpu_path_name(0));
  run_cpu(in, 1, &base);
  for (int p = 1; p < dsv4kv_cpu_path_count(); p++) {
    const char *name = dsv4kv_cpu_path_name(p);
    select_path(name);
    for (int threads = 1; threads <= 2; threads++) {
      run_cpu(in, threads, &r);
      int fail = vs_baseline(in, &base, &r, msg, sizeof msg);
      snprintf(label, sizeof label, threads == 1 ? "%s" : "%s/2-threads", name);
      report_line(t, c, label, fail, msg);
      result_free(&r);
    }
  }
  select_path(dsv4kv_cpu_path_name(0));
  result_free(&base);
  ops_inst_free(in);
}

static void case_device(const ops_case *c, const ops_device *dev, tally *t) {
  ops_inst *in = build(c, 0);
  if (!in->device_ok) {
    printf("%s %s: skipped (CPU-only entry point)\n", c->name, dev->name);
    t->skipped++;
    ops_inst_free(in);
    return;
  }
  ops_result base, r;
  char msg[512];
  run_cpu(in, 1, &base);
  run_device(in, dev, &r);
  report_line(t, c, dev->name, vs_baseline(in, &base, &r, msg, sizeof msg), msg);
  result_free(&base);
  result_free(&r);
  ops_inst_free(in);
}

static void list_cases(const ops_list *l, const char *filter) {
  printf("%-52s %-38s %14s %18s\n", "case", "op", "bytes", "seed");
  for (int i = 0; i < l->n; i++) {
    if (filter && !strstr(l->v[i].name, filter)) continue;
    ops_inst *in = build(&l->v[i], 0);
    printf("%-52s %-38s %14" PRId64 " 0x%016" PRIx64 "\n", l->v[i].name, opcall_op_name(l->v[i].op),
           opcall_bytes(&in->call), l->v[i].seed);
    ops_inst_free(in);
  }
}

/* The command line (see the usage at the top of this file). */
typedef struct {
  const char *backend, *filter;
  int list, rounds, seed_given;
  uint64_t seed;
} ops_args;

/* Parses argv into *a; returns -1 to go on, else the exit status (2 for a
 * bad argument, 0 after --help). */
static int parse_args(int argc, char **argv, ops_args *a, tally *t) {
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--backend") && i + 1 < argc) a->backend = argv[++i];
    else if (!strcmp(argv[i], "--filter") && i + 1 < argc) a->filter = argv[++i];
    else if (!strcmp(argv[i], "--list")) a->list = 1;
    else if (!strcmp(argv[i], "--rounds") && i + 1 < argc) {
      char *end;
      long v = strtol(argv[++i], &end, 10);
      if (*end || end == argv[i] || v < 1 || v > OPS_MAX_ROUNDS) {
        fprintf(stderr, "--rounds wants an integer in [1, %d], got '%s'\n", OPS_MAX_ROUNDS, argv[i]);
        return 2;
      }
      a->rounds = (int)v;
    } else if (!strcmp(argv[i], "--seed") && i + 1 < argc) {
      char *end;
      errno = 0;
      const char *v = argv[++i]; /* decimal, or hexadecimal after 0x (the seeds the runs print) */
      const int hex = v[0] == '0' && (v[1] == 'x' || v[1] == 'X');
      a->seed = strtoull(v, &end, hex ? 16 : 10);
      a->seed_given = 1;
      if (*end || end == v || errno || strchr(v, '-') || isspace((unsigned char)v[0])) {
        fprintf(stderr, "--seed wants an unsigned 64-bit integer, got '%s'\n", argv[i]);
        return 2;
      }
    }
    else if (!strcmp(argv[i], "--verbose") || !strcmp(argv[i], "-v")) t->verbose = 1;
    else if (!strcmp(argv[i], "--distinct-slots")) promise_distinct = 1;
    else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
      printf("usage: %s [--backend scalar|paths|cuda] [--filter TEXT] [--rounds N [--seed S]] [--distinct-slots] "
             "[--verbose] | --list\n"
             "Runs every case of the registry (or those whose name holds TEXT) on one backend, byte for byte:\n"
             "  scalar  the scalar CPU path against the reference, then 2 threads against 1\n"
             "  paths   every other CPU path against the scalar one (exit 77 when there is none)\n"
             "  cuda    on the GPU against the scalar path (exit 77 without a CUDA backend or device)\n"
             "  --rounds N        round 0 with each case's seed, rounds 1.. with fresh seeds from S\n"
             "  --seed S          decimal, or hexadecimal after 0x (default: the time)\n"
             "  --distinct-slots  inserts / indexer stores whose writing rows name distinct slots pass\n"
             "                    options.distinct_slots (the CPU ignores it; CUDA skips finding duplicates)\n"
             "  --list            each case's op, bytes and seed\n"
             "Exit 0 when every case passed; 1 when one failed or none matched.\n",
             argv[0]);
      return 0;
    } else {
      fprintf(stderr, "usage: %s [--backend scalar|paths|cuda] [--filter TEXT] [--rounds N [--seed S]] "
                      "[--distinct-slots] [--verbose] | --list\n",
              argv[0]);
      return 2;
    }
  }
  if (a->seed_given && a->rounds == 1)
    fprintf(stderr, "note: --seed picks the fresh draws of rounds 1..; with one round it changes nothing\n");
  return -1;
}

/* Every round of every case matching a->filter on the backend; returns the
 * cases matched. */
static int run_rounds(const ops_list *l, const ops_args *a, const ops_device *dev, tally *t) {
  int matched = 0;
  for (int k = 0; k < a->rounds; k++) {
    for (int i = 0; i < l->n; i++) {
      if (a->filter && !strstr(l->v[i].name, a->filter)) continue;
      ops_case c = l->v[i];
      matched += k == 0;
      if (k > 0) { /* fresh draws: the case's seed mixed with (seed, round) */
        c.seed ^= splitmix64(a->seed + (uint64_t)k * 0x9E3779B97F4A7C15ull);
        char name[sizeof c.name];
        snprintf(name, sizeof name, "%.56s@0x%016" PRIx64, l->v[i].name, c.seed);
        memcpy(c.name, name, sizeof name);
      }
      if (dev) case_device(&c, dev, t);
      else if (!strcmp(a->backend, "paths")) case_paths(&c, t);
      else case_scalar(&c, t);
      fflush(stdout);
    }
  }
  return matched;
}

int main(int argc, char **argv) {
  ops_args a = {"scalar", NULL, 0, 1, 0, (uint64_t)time(NULL)};
  tally t = {0, 0, 0, 0};
  const int st = parse_args(argc, argv, &a, &t);
  if (st >= 0) return st;
  ops_list l = {0};
  ops_register_kv(&l);
  ops_register_index(&l);
  ops_register_indexer(&l);
  if (a.list) return list_cases(&l, a.filter), free(l.v), 0;
  const ops_device *dev = NULL;
  if (!strcmp(a.backend, "paths") && dsv4kv_cpu_path_count() < 2) {
    printf("only the scalar CPU path in this build and processor: nothing to compare (skipped)\n");
    free(l.v);
    return 77;
  }
  if (!strcmp(a.backend, "cuda")) {
    dev = ops_cuda_device();
    if (!dsv4kv_backend_available(kDLCUDA) || !dev) {
      printf("no CUDA backend (%s) here: skipped\n",
             dev ? "not built or no device" : "no CUDA device visible, or no device table in this test build");
      free(l.v);
      return 77;
    }
  } else if (strcmp(a.backend, "scalar") && strcmp(a.backend, "paths")) {
    fprintf(stderr, "unknown backend '%s'\n", a.backend);
    free(l.v);
    return 2;
  }
  select_path(dsv4kv_cpu_path_name(0)); /* the baseline of every mode */
  clock_t t0 = clock();
  if (a.rounds > 1) printf("%d rounds, seed %" PRIu64 "\n", a.rounds, a.seed);
  const int matched = run_rounds(&l, &a, dev, &t);
  printf("%d cases x %d rounds in %.1f s of CPU time\n", matched, a.rounds, (double)(clock() - t0) / CLOCKS_PER_SEC);
  int bad = 0; /* what fails the run beside the cases */
  if (!matched) bad = 1, printf("no case matches --filter '%s' (failed)\n", a.filter ? a.filter : "");
  if (promise_distinct) {
    printf("%ld calls promised distinct slots\n", promised);
    if (!promised && matched) bad = 1, printf("--distinct-slots: no case's slots were distinct (failed)\n");
  }
  printf("%d passed, %d failed, %d skipped\n", t.passed, t.failed, t.skipped);
  free(l.v);
  return t.failed || bad ? 1 : 0;
}
