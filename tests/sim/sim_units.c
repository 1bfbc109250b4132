/* Unit tests of the simulator's host-side modules (no kernels involved):
 * the page pool, the scheduler's invariants on a tight pool with prefix
 * sharing, the trace parser on mutated input (it must never crash), the
 * format names of the command line and the reports, the memory sizes of
 * --kv-cache-memory, the whole-model sizing of the presets, the percentiles
 * and the bounded time series, and --threads' default.
 * Exit status 0 when every check holds; the first failure is printed. */
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <stdlib.h>
#include <math.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "model.h"
#include "pool.h"
#include "rng.h"
#include "sched.h"
#include "sim.h"
#include "timeline.h"
#include "trace.h"
#include "workload.h"

static int failures;

#define CHECK(cond, ...)                                                       \
  do {                                                                         \
    if (!(cond)) {                                                             \
      fprintf(stderr, "%s:%d: check failed: %s: ", __FILE__, __LINE__, #cond); \
      fprintf(stderr, __VA_ARGS__);                                            \
      fputc('\n', stderr);                                                     \
      failures++;                                                              \
      return;                                                                  \
    }                                                                          \
  } while (0)

/* ---------------------------------------------------------------------- */

static void test_pool(void) {
  sim_pool p;
  CHECK(sim_pool_init(&p, 8) == 0, "init");
  int32_t pages[8];
  for (int i = 0; i < 8; i++) {
    pages[i] = sim_pool_alloc(&p, i);
    CHECK(pages[i] >= 0 && pages[i] < 8, "alloc %d gave %d", i, pages[i]);
    for (int j = 0; j < i; j++)
      CHECK(pages[j] != pages[i], "page %d handed out twice", pages[i]);
  }
  CHECK(sim_pool_alloc(&p, 8) == -1, "a ninth page from an 8-page pool");
  CHECK(p.used == 8 && p.peak_used == 8, "used %d peak %d", p.used, p.peak_used);
  /* pages 0..2 get keys; 3 does not */
  for (int i = 0; i < 3; i++)
    sim_pool_register(&p, pages[i], 100u + (uint64_t)i);
  sim_pool_register(&p, pages[3], 100u); /* duplicate key: ignored */
  CHECK(sim_pool_lookup(&p, 100u) == pages[0], "lookup of a registered key");
  CHECK(p.refcount[pages[0]] == 2, "refcount %d after a hit", p.refcount[pages[0]]);
  sim_pool_release(&p, pages[0]);
  sim_pool_release(&p, pages[0]);
  sim_pool_release(&p, pages[1]);
  sim_pool_release(&p, pages[3]);
  CHECK(sim_pool_available(&p) == 3, "available %d (1 clean + 2 cached)", sim_pool_available(&p));
  /* a cached page can be hit again */
  CHECK(sim_pool_lookup(&p, 101u) == pages[1], "hit of a cached page");
  CHECK(p.used == 6, "used %d", p.used);
  sim_pool_release(&p, pages[1]);
  /* allocation takes the clean page first, then evicts the least recently used */
  CHECK(sim_pool_alloc(&p, 0) == pages[3], "clean page first");
  int32_t e = sim_pool_alloc(&p, 0);
  CHECK(e == pages[0], "evicted %d, expected the LRU page %d", e, pages[0]);
  CHECK(sim_pool_lookup(&p, 100u) == -1, "an evicted page's key must be gone");
  CHECK(p.evictions == 1, "evictions %lld", (long long)p.evictions);
  CHECK(sim_pool_lookup(&p, 101u) == pages[1], "the other cached page survives");
  sim_pool_free(&p);
}

/* ---------------------------------------------------------------------- */

/* Runs the scheduler alone over a workload and checks its invariants. */
static void run_sched(const sim_workload *w, int32_t bs, int32_t pages, int32_t budget,
                      int32_t seqs, const char *what) {
  sim_pool p;
  sim_sched s;
  CHECK(sim_pool_init(&p, pages) == 0, "%s: pool", what);
  CHECK(sim_sched_init(&s, w, &p, bs, budget, seqs) == 0, "%s: sched", what);
  sim_batch b;
  memset(&b, 0, sizeof b);
  int32_t *holders = calloc((size_t)pages, sizeof *holders);
  char err[256];
  int64_t expect_tokens = 0;
  for (int64_t i = 0; i < w->n; i++) {
    int32_t out = w->reqs[i].output_len > 0 ? w->reqs[i].output_len : 1;
    expect_tokens += w->reqs[i].input_len + out - 1;
  }
  for (int64_t step = 0;; step++) {
    CHECK(step < 10000000, "%s: no end", what);
    int more = sim_sched_next(&s, &b, err, sizeof err);
    CHECK(more >= 0, "%s: %s", what, err);
    if (!more)
      break;
    CHECK(b.num_tokens > 0 && b.num_tokens <= budget, "%s: %d tokens in a step", what,
          b.num_tokens);
    for (int32_t i = 0; i < b.num_items; i++) {
      const sim_item *it = &b.items[i];
      const sim_req *r = &s.reqs[it->req];
      CHECK((i < b.num_decode) == (it->is_decode != 0), "%s: decode items must come first", what);
      CHECK(it->start == r->computed, "%s: item starts at %d, request computed %d", what, it->start,
            r->computed);
      CHECK((int64_t)r->num_pages * bs >= (int64_t)it->start + it->len, "%s: pages missing", what);
      CHECK(r->state == SIM_REQ_RUNNING, "%s: scheduled request not running", what);
    }
    /* every page's reference count equals the running requests holding it
     * (cached pages with count 0 excepted) */
    memset(holders, 0, (size_t)pages * sizeof *holders);
    for (int32_t i = 0; i < s.num_running; i++) {
      const sim_req *r = &s.reqs[s.running[i]];
      for (int32_t k = 0; k < r->num_pages; k++) {
        holders[r->pages[k]]++;
        CHECK(p.logical[r->pages[k]] == k, "%s: page %d at logical %d records %d", what,
              r->pages[k], k, p.logical[r->pages[k]]);
      }
    }
    int32_t used = 0;
    for (int32_t pg = 0; pg < pages; pg++) {
      CHECK(p.refcount[pg] == holders[pg], "%s: page %d refcount %d, held by %d", what, pg,
            p.refcount[pg], holders[pg]);
      used += holders[pg] > 0;
    }
    CHECK(used == p.used, "%s: used %d vs %d", what, used, p.used);
    sim_sched_commit(&s, &b);
  }
  CHECK(s.done == w->n, "%s: %lld of %lld done", what, (long long)s.done, (long long)w->n);
  CHECK(p.used == 0, "%s: %d pages still used", what, p.used);
  /* every token is computed once, or found in another request's pages;
   * recomputation and re-admission hits only redo (or re-find) earlier work */
  CHECK(s.prefill_tokens + s.decode_tokens + s.shared_tokens - s.recomputed_tokens ==
            expect_tokens,
        "%s: token accounting: %lld prefill + %lld decode + %lld shared - %lld recomputed "
        "!= %lld",
        what, (long long)s.prefill_tokens, (long long)s.decode_tokens, (long long)s.shared_tokens,
        (long long)s.recomputed_tokens, (long long)expect_tokens);
  CHECK(s.shared_tokens + s.readmit_tokens == s.hit_tokens &&
            s.shared_pages + s.readmit_pages == s.hit_pages,
        "%s: prefix hits: %lld + %lld tokens != %lld, %lld + %lld pages != %lld", what,
        (long long)s.shared_tokens, (long long)s.readmit_tokens, (long long)s.hit_tokens,
        (long long)s.shared_pages, (long long)s.readmit_pages, (long long)s.hit_pages);
  CHECK(s.preemptions > 0 || s.readmit_pages == 0, "%s: re-admission hits without preemption",
        what);
  printf("  %s: %lld steps, %lld preemptions, %lld hit pages (%lld shared, %lld re-admitted), "
         "peak %d of %d pages\n",
         what, (long long)s.steps, (long long)s.preemptions, (long long)s.hit_pages,
         (long long)s.shared_pages, (long long)s.readmit_pages, p.peak_used, pages);
  free(holders);
  sim_batch_free(&b);
  sim_sched_free(&s);
  sim_pool_free(&p);
}

static void test_sched(void) {
  sim_workload w;
  CHECK(sim_workload_synthetic(&w, 120, 7) == 0, "synthetic");
  int64_t maxp = 0;
  for (int64_t i = 0; i < w.n; i++) {
    int64_t n = sim_sched_pages_needed(&w.reqs[i], 256);
    if (n > maxp)
      maxp = n;
  }
  run_sched(&w, 256, (int32_t)maxp, 512, 64, "tightest pool");
  run_sched(&w, 256, (int32_t)maxp * 3, 2048, 8, "small pool, 8 sequences");
  run_sched(&w, 128, 4096, 8192, 256, "roomy pool");
  sim_workload_free(&w);
}

/* ---------------------------------------------------------------------- */

static const char *mooncake_lines[] = {
    "{\"timestamp\": 0, \"input_length\": 6758, \"output_length\": 500, \"hash_ids\": [0, 1, 2, 3, "
    "4, 5, 6, 7, 8, 9, 10, 11, 12, 13]}",
    "{\"timestamp\": 3000, \"input_length\": 1290, \"output_length\": 316, \"hash_ids\": [0, 42, "
    "43]}",
    "{\"timestamp\": 3001, \"input_length\": 512, \"output_length\": 1, \"hash_ids\": [0]}",
};
static const char *azure_lines[] = {
    "TIMESTAMP,ContextTokens,GeneratedTokens",
    "2023-11-16 18:15:46.6805900,374,44",
    "2023-11-16 18:15:50.9951690,396,109",
    "2023-11-16 18:15:51.0000000,1200,12",
};

/* Writes `n` lines, each mutated with probability 1/2, into path. */
static size_t write_mutated(const char *path, const char **lines, int n, sim_rng *rng,
                            int keep_first) {
  FILE *f = fopen(path, "wb");
  if (!f)
    return 0;
  static const char alphabet[] = "{}[]\",:0123456789.-e \r\n\tabcxyz\\";
  size_t written = 0;
  for (int rep = 0; rep < 6; rep++)
    for (int i = 0; i < n; i++) {
      if (keep_first && i == 0 && rep > 0)
        continue;
      char buf[512];
      size_t len = strlen(lines[i]);
      memcpy(buf, lines[i], len);
      if (!(keep_first && i == 0) && sim_rng_below(rng, 2)) {
        int edits = 1 + (int)sim_rng_below(rng, 4);
        for (int e = 0; e < edits && len > 0; e++) {
          size_t at = (size_t)sim_rng_below(rng, len);
          switch (sim_rng_below(rng, 4)) {
            case 0: buf[at] = (char)sim_rng_below(rng, 256); break; /* any byte */
            case 1: buf[at] = alphabet[sim_rng_below(rng, sizeof alphabet - 1)]; break;
            case 2: len = at; break; /* truncate */
            default: /* delete */ memmove(buf + at, buf + at + 1, len - at - 1); len--;
          }
        }
      }
      written += fwrite(buf, 1, len, f);
      fputc('\n', f);
    }
  fclose(f);
  return written;
}

static void fuzz_one(const char *path, const char **lines, int n, int keep_first, uint64_t seed) {
  sim_rng rng = sim_rng_make(seed);
  for (int iter = 0; iter < 300; iter++) {
    write_mutated(path, lines, n, &rng, keep_first);
    for (int skip = 0; skip < 2; skip++) {
      sim_workload w;
      char err[512];
      int rc = sim_trace_load(path, 0, skip, NULL, &w, err, sizeof err);
      CHECK(rc == 0 || rc == -1 || rc == -2, "rc %d", rc);
      if (rc) {
        CHECK(strncmp(err, path, strlen(path)) == 0, "error without the file name: %s", err);
        continue;
      }
      CHECK(w.n > 0, "success without requests");
      for (int64_t i = 0; i < w.n; i++) {
        const sim_request_spec *r = &w.reqs[i];
        CHECK(r->input_len >= 1 && r->input_len <= SIM_MAX_REQUEST_TOKENS, "input %d",
              r->input_len);
        CHECK(r->output_len >= 0 && r->output_len <= SIM_MAX_REQUEST_TOKENS, "output %d",
              r->output_len);
        CHECK(r->num_hash == 0 || r->num_hash == (r->input_len + 511) / 512, "hash count");
        CHECK(r->arrival_ms >= 0.0, "arrival %f", r->arrival_ms);
        CHECK(r->line >= 1, "line %lld", (long long)r->line);
      }
      CHECK(skip || w.skipped_lines == 0, "skipped without --skip-bad");
      sim_workload_free(&w);
    }
  }
}

static void test_trace_fuzz(void) {
  char path[] = "/tmp/dsv4kv_sim_fuzz_XXXXXX";
  int fd = mkstemp(path);
  CHECK(fd >= 0, "mkstemp");
  close(fd);
  fuzz_one(path, mooncake_lines, 3, 0, 11);
  fuzz_one(path, azure_lines, 4, 1, 12);
  fuzz_one(path, azure_lines, 4, 0, 13);
  unlink(path);
}

/* The format spellings of --format / --indexer-format (the reports print
 * them too) read back to their records, and only for their own option. */
static void test_format_names(void) {
  static const struct {
    dsv4kv_record rec;
    const char *name;
    int indexer;
  } want[] = {{DSV4KV_RECORD_V4, "v4", 0},
              {DSV4KV_RECORD_MXFP8, "mxfp8", 0},
              {DSV4KV_RECORD_NVFP4, "nvfp4", 0},
              {DSV4KV_RECORD_INDEXER_FP8, "fp8", 1},
              {DSV4KV_RECORD_INDEXER_MXFP4, "mxfp4", 1}};
  for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
    dsv4kv_record r = (dsv4kv_record)-1;
    CHECK(!strcmp(sim_format_name(want[i].rec), want[i].name), "name of record %d: %s",
          (int)want[i].rec, sim_format_name(want[i].rec));
    CHECK(sim_format_parse(want[i].name, want[i].indexer, &r) == 0 && r == want[i].rec,
          "parse %s", want[i].name);
    CHECK(sim_format_parse(want[i].name, !want[i].indexer, &r) == -1,
          "%s accepted by the other option", want[i].name);
  }
  dsv4kv_record r;
  CHECK(sim_format_parse("fp16", 0, &r) == -1 && sim_format_parse("V4", 0, &r) == -1,
        "unknown names accepted");
  CHECK(!strcmp(sim_format_name((dsv4kv_record)99), "?"), "name of an unknown record");
}

/* The indexer check's bound against the library on the hardest inputs: cos/sin
 * chosen per pair so that RoPE cancels exactly (e c = o s for the sim's
 * normalised values), where a one-step difference of the RMSNorm output
 * between the sim and the library is all that is left of the value.  Every
 * record must pass; one code step off in an uncancelled dim must not. */
static void test_indexer_bound(void) {
  sim_rng rng = sim_rng_make(77);
  enum { BS = 4 };
  for (int fp4 = 0; fp4 < 2; fp4++) {
    dsv4kv_record rec = fp4 ? DSV4KV_RECORD_INDEXER_MXFP4 : DSV4KV_RECORD_INDEXER_FP8;
    int vb = fp4 ? 64 : 128;
    for (int row = 0; row < 3000; row++) {
      uint16_t k[128];
      float w[128], ident[64], cs[64], n[128], ref[128];
      double tol[128];
      for (int d = 0; d < 128; d++) {
        float x = (float)(sim_rng_uniform(&rng) * 4.0 - 2.0);
        uint32_t u;
        memcpy(&u, &x, 4);
        k[d] = (uint16_t)(u >> 16);
        w[d] = (float)(0.5 + sim_rng_uniform(&rng));
      }
      for (int j = 0; j < 32; j++) ident[j] = 1.0f, ident[32 + j] = 0.0f;
      sim_indexer_reference(k, w, 1e-6f, ident, n, tol); /* n: the normalised row */
      for (int j = 0; j < 32; j++) {
        double e = n[64 + 2 * j], o = n[65 + 2 * j], h = sqrt(e * e + o * o);
        cs[j] = h > 0 ? (float)(o / h) : 1.0f;
        cs[32 + j] = h > 0 ? (float)(e / h) : 0.0f;
      }
      sim_indexer_reference(k, w, 1e-6f, cs, ref, tol);
      uint8_t cache[BS * 132];
      int64_t shape_k[2] = {1, 128}, shape_p[1] = {1}, shape_cs[2] = {1, 64}, shape_w[1] = {128},
              shape_c[2] = {1, BS * 132};
      int64_t pos = 0, slot = 1;
      DLTensor tk = {k, {kDLCPU, 0}, 2, {kDLBfloat, 16, 1}, shape_k, NULL, 0};
      DLTensor tp = {&pos, {kDLCPU, 0}, 1, {kDLInt, 64, 1}, shape_p, NULL, 0};
      DLTensor tcs = {cs, {kDLCPU, 0}, 2, {kDLFloat, 32, 1}, shape_cs, NULL, 0};
      DLTensor tw = {w, {kDLCPU, 0}, 1, {kDLFloat, 32, 1}, shape_w, NULL, 0};
      DLTensor tc = {cache, {kDLCPU, 0}, 2, {kDLUInt, 8, 1}, shape_c, NULL, 0};
      DLTensor ts = {&slot, {kDLCPU, 0}, 1, {kDLInt, 64, 1}, shape_p, NULL, 0};
      dsv4kv_cache_desc desc = {rec, DSV4KV_FP8_OCP, BS, 0, 0};
      dsv4kv_status st = dsv4kv_indexer_k_norm_rope_store(&tk, &tp, &tcs, &tw, 1e-6f, &tc, &desc, &ts, 1, NULL);
      CHECK(st == DSV4KV_OK, "indexer store: %s", dsv4kv_last_error());
      sim_errstat es = {0};
      sim_outlier o;
      uint8_t *values = cache + 1 * vb, *scale = cache + BS * vb + 1 * 4;
      int bad = sim_check_indexer_record(rec, values, scale, ref, tol, &es, &o);
      CHECK(bad == 0, "%s row %d: %d values outside; dim %d got %g expected %g bound %g",
            fp4 ? "mxfp4" : "fp8", row, bad, o.dim, o.value, o.expected, o.bound);
      if (row == 0 && !fp4) { /* a wrong code must be caught and named */
        int d = 3;
        values[d] = (uint8_t)(values[d] ^ 0x08); /* flips the e4m3 exponent's low bit */
        bad = sim_check_indexer_record(rec, values, scale, ref, tol, &es, &o);
        CHECK(bad >= 1 && o.dim == d && o.bound > 0, "corrupt code not caught (%d, dim %d)", bad, o.dim);
      }
    }
  }
}

/* --kv-cache-memory's sizes: units, decimals, and everything else refused. */
static void test_parse_size(void) {
  static const struct {
    const char *s;
    int64_t bytes;
  } ok[] = {{"40GiB", 40LL << 30}, {"40gib", 40LL << 30}, {"40G", 40LL << 30},
            {"512MiB", 512LL << 20}, {"16GB", 16000000000LL}, {"1.5GiB", 3LL << 29},
            {"2 TiB", 2LL << 40}, {"1000", 1000}, {"1000B", 1000}, {"64KB", 64000},
            {"64KiB", 65536}, {"3t", 3LL << 40}, {".5MiB", 1 << 19}};
  for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
    int64_t b = -1;
    CHECK(sim_parse_size(ok[i].s, &b) == 0 && b == ok[i].bytes, "'%s' gave %lld", ok[i].s,
          (long long)b);
  }
  static const char *bad[] = {"",      "abc",  "0",      "0GiB", "-5GiB", "+5GiB", " 5GiB",
                              "12XB",  "GiB",  "5GiBs",  "1e400", "inf",  "nan",   "5 GiB ",
                              "0.1B",  "5GiB5", "2000000TiB"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    int64_t b = 0;
    CHECK(sim_parse_size(bad[i], &b) == -1, "'%s' accepted as %lld", bad[i], (long long)b);
  }
}

static void test_format_list(void) {
  dsv4kv_record f[SIM_MAX_FORMATS];
  char err[256];
  CHECK(sim_format_list_parse("v4,mxfp8,nvfp4", f, err, sizeof err) == 3 &&
            f[0] == DSV4KV_RECORD_V4 && f[1] == DSV4KV_RECORD_MXFP8 && f[2] == DSV4KV_RECORD_NVFP4,
        "three formats");
  CHECK(sim_format_list_parse("nvfp4", f, err, sizeof err) == 1 && f[0] == DSV4KV_RECORD_NVFP4,
        "one format");
  CHECK(sim_format_list_parse("all", f, err, sizeof err) == 3, "all");
  const char *bad[] = {"", "v4,", ",v4", "v4,,nvfp4", "v4,v4", "fp8", "v4,mxfp8,nvfp4,v4",
                       "V4"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
    CHECK(sim_format_list_parse(bad[i], f, err, sizeof err) == -1 && err[0], "'%s' accepted",
          bad[i]);
  CHECK(sim_default_indexer(DSV4KV_RECORD_NVFP4) == DSV4KV_RECORD_INDEXER_MXFP4 &&
            sim_default_indexer(DSV4KV_RECORD_MXFP8) == DSV4KV_RECORD_INDEXER_FP8,
        "default indexer formats");
}

/* Whole-model bytes of the presets, from their layer counts and the records. */
static void test_model_sizes(void) {
  const sim_model *fl = sim_model_find("deepseek-v4-flash"), *pro = sim_model_find("deepseek-v4-pro");
  CHECK(fl && pro && fl == sim_model_default(), "presets");
  CHECK(sim_model_find("deepseek-v4") == fl && sim_model_find("deepseek-v4-topk1024") == pro,
        "aliases");
  CHECK(sim_model_layers(fl) == 43 && sim_model_layers(pro) == 61, "layers");
  CHECK(sim_model_block_quantum(fl) == 128 && sim_model_block_quantum(pro) == 128, "quantum");
  sim_model_size z;
  sim_model_size_of(fl, DSV4KV_RECORD_V4, DSV4KV_RECORD_INDEXER_FP8, 256, &z);
  /* swa 43 x 584; compressed 21 x 584/4 + 20 x 584/128; indexer 21 x 132/4 */
  CHECK(z.swa == 25112.0 && z.comp == 3157.25 && z.idx == 693.0 && z.total == 28962.25,
        "flash v4: %g %g %g %g", z.swa, z.comp, z.idx, z.total);
  CHECK(z.page_total == 256 * 28962.25 * 1 && z.page_total == 7414336, "page %lld",
        (long long)z.page_total);
  sim_model_size_of(fl, DSV4KV_RECORD_NVFP4, DSV4KV_RECORD_INDEXER_MXFP4, 128, &z);
  CHECK(z.total == 27026.0 && z.page_total == 128 * 27026, "flash nvfp4: %g", z.total);
  sim_model_size_of(pro, DSV4KV_RECORD_V4, DSV4KV_RECORD_INDEXER_FP8, 256, &z);
  /* swa 61 x 584; compressed 30 x 146 + 31 x 4.5625; indexer 30 x 33 */
  CHECK(z.total == 61 * 584.0 + 30 * 146.0 + 31 * 4.5625 + 30 * 33.0, "pro v4: %g", z.total);
  CHECK(fabs(sim_gib_per_mtok(28962.25) - 26.973197) < 1e-6, "GiB per 1M tokens");
}

static void test_percentiles(void) {
  double one[1] = {4.0};
  sim_dist d;
  sim_dist_of(one, 1, &d);
  CHECK(d.n == 1 && d.p50 == 4 && d.p99 == 4 && d.max == 4 && d.mean == 4, "one value");
  double v[101];
  for (int i = 0; i <= 100; i++)
    v[i] = (double)(100 - i); /* 100 .. 0, unsorted */
  sim_dist_of(v, 101, &d);
  CHECK(d.p50 == 50 && d.p90 == 90 && d.p99 == 99 && d.max == 100 && d.mean == 50, "0..100");
  double w[4] = {1, 2, 3, 4};
  CHECK(fabs(sim_percentile(w, 4, 50) - 2.5) < 1e-12 && sim_percentile(w, 4, 100) == 4 &&
            sim_percentile(w, 4, 0) == 1 && fabs(sim_percentile(w, 4, 90) - 3.7) < 1e-12,
        "interpolation");
  sim_dist_of(w, 0, &d);
  CHECK(d.n == 0 && d.p99 == 0, "empty");
}

/* Any number of steps: at most SIM_SERIES_MAX points, evenly spaced, the
 * first and the last step kept. */
static void test_series(void) {
  static sim_series s;
  const int64_t lens[] = {1, 2, 1999, 2000, 2001, 4505, 100000, 262143};
  for (size_t t = 0; t < sizeof lens / sizeof lens[0]; t++) {
    sim_series_init(&s);
    for (int64_t k = 0; k < lens[t]; k++) {
      sim_point p = {k, (double)k / 10, (int32_t)(k % 7), 1, 0, 3, k * 3};
      sim_series_add(&s, &p);
    }
    sim_series_finish(&s);
    CHECK(s.n >= 1 && s.n <= SIM_SERIES_MAX, "%lld steps: %d points", (long long)lens[t], s.n);
    CHECK(s.pts[0].step == 0 && s.pts[s.n - 1].step == lens[t] - 1, "%lld steps: ends",
          (long long)lens[t]);
    CHECK(lens[t] < 1000 || s.n >= SIM_SERIES_MAX / 2 - 1, "%lld steps: only %d points",
          (long long)lens[t], s.n);
    for (int i = 1; i + 1 < s.n; i++)
      CHECK(s.pts[i].step == (int64_t)i * s.stride, "%lld steps: point %d at step %lld",
            (long long)lens[t], i, (long long)s.pts[i].step);
  }
}

/* Pages past the backed ones count as available and are never handed out. */
static void test_pool_unbacked(void) {
  sim_pool p;
  CHECK(sim_pool_init(&p, 4) == 0, "init");
  p.unbacked = 6;
  CHECK(sim_pool_available(&p) == 10, "available %d", sim_pool_available(&p));
  for (int i = 0; i < 4; i++)
    CHECK(sim_pool_alloc(&p, i) >= 0, "alloc %d", i);
  CHECK(sim_pool_alloc(&p, 4) == -1 && sim_pool_available(&p) == 6, "an unbacked page handed out");
  sim_pool_free(&p);
}

/* --threads' default is the library's choice whatever OMP_WAIT_POLICY says
 * (the CPU backend's pool is its own, not an OpenMP team). */
static void test_default_threads(void) {
  const char *was = getenv("OMP_WAIT_POLICY");
  char saved[64] = "";
  if (was)
    snprintf(saved, sizeof saved, "%s", was);
  setenv("OMP_WAIT_POLICY", "passive", 1);
  int passive = sim_default_threads();
  setenv("OMP_WAIT_POLICY", "ACTIVE", 1);
  int active = sim_default_threads();
  unsetenv("OMP_WAIT_POLICY");
  int unset = sim_default_threads();
  if (was)
    setenv("OMP_WAIT_POLICY", saved, 1);
  CHECK(passive == 0 && active == 0 && unset == 0, "passive %d active %d unset %d", passive,
        active, unset);
}

/* Requests sorted by arrival, stable: a trace out of order (reversed, with
 * runs of equal times) comes out ascending with equal times in file order. */
static void test_workload_order(void) {
  sim_workload w;
  memset(&w, 0, sizeof w);
  enum { N = 1000 };
  for (int i = 0; i < N; i++) {
    sim_request_spec r = {(double)((N - i) / 3), 1, 0, 0, NULL, i + 1}; /* 3 lines a time, descending */
    CHECK(sim_workload_push(&w, &r) == 0, "push %d", i);
  }
  CHECK(sim_workload_finish(&w) == 0, "finish");
  for (int64_t i = 1; i < w.n; i++) {
    const sim_request_spec *a = &w.reqs[i - 1], *b = &w.reqs[i];
    CHECK(a->arrival_ms < b->arrival_ms || (a->arrival_ms == b->arrival_ms && a->line < b->line),
          "row %lld: (%g, line %lld) then (%g, line %lld)", (long long)i, a->arrival_ms, (long long)a->line,
          b->arrival_ms, (long long)b->line);
  }
  CHECK(w.n == N && w.reqs[0].arrival_ms == 0.0, "n %lld, first at %g", (long long)w.n, w.reqs[0].arrival_ms);
  sim_workload_free(&w);
}

int main(void) {
  printf("pool\n");
  test_pool();
  printf("scheduler\n");
  test_sched();
  printf("trace parser (mutated input), arrival order\n");
  test_trace_fuzz();
  test_workload_order();
  printf("format names\n");
  test_format_names();
  printf("indexer bound under RoPE cancellation\n");
  test_indexer_bound();
  printf("memory sizes, format lists, model sizes\n");
  test_parse_size();
  test_format_list();
  test_model_sizes();
  printf("percentiles, time series, unbacked pages, thread default\n");
  test_percentiles();
  test_series();
  test_pool_unbacked();
  test_default_threads();
  if (failures) {
    printf("%d check(s) failed\n", failures);
    return 1;
  }
  printf("all checks passed\n");
  return 0;
}
