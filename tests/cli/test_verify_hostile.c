/* test_verify_hostile.c - `dsv4kv verify` on files made to hurt it: metadata
 * that would size buffers far beyond the file, zero-element tensors with
 * huge extents, sparse caches too large or too scattered, a million block
 * ids, a FIFO.  Each must fail fast with a message naming the field at fault.
 * Every run has an address-space limit and a timeout, so a regression fails
 * the test instead of the machine.
 *
 * usage: cli_test_verify_hostile PATH_TO_DSV4KV */
#define _GNU_SOURCE /* mkdtemp */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "st_write.h"

static const char *dsv4kv_bin;
static char tmpdir[256];

/* 4 GiB of address space: ample for these files, far below what the
 * metadata asks for; `timeout` turns a hang into exit status 124.  An ASan
 * build cannot start under ulimit -v (its shadow memory), so there the cap
 * is ASan's own largest allocation instead (setup picks). */
#define ULIMIT "ulimit -v 4194304; "
#define ASAN_CAP "ASAN_OPTIONS=max_allocation_size_mb=4096:allocator_may_return_null=1 "
static const char *limits = ULIMIT;

typedef struct {
  int status;
  double seconds;
  char out[16384];
} run_result;

static void run_verify(run_result *r, const char *path) {
  char cmd[1024];
  snprintf(cmd, sizeof cmd, "%s" ASAN_CAP "timeout 60 '%s' verify '%s' 2>&1", limits, dsv4kv_bin,
           path);
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  FILE *p = popen(cmd, "r");
  assert_non_null(p);
  size_t n = fread(r->out, 1, sizeof r->out - 1, p);
  r->out[n] = '\0';
  int st = pclose(p);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  r->seconds = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
  r->status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* One FAIL line holding every needle, exit status 1 (not 124: no timeout). */
static void expect_fail(const run_result *r, const char *const *needles) {
  if (r->status != 1) fail_msg("exit status %d (124 = timed out):\n%s", r->status, r->out);
  if (!strstr(r->out, "0 passed, 1 failed\n")) fail_msg("no failure count:\n%s", r->out);
  for (; *needles; needles++)
    if (!strstr(r->out, *needles)) fail_msg("output lacks \"%s\":\n%s", *needles, r->out);
}

static const char *tmp_path(const char *name) {
  static char path[4][512];
  static int next;
  char *p = path[next++ % 4];
  snprintf(p, sizeof path[0], "%s/%s", tmpdir, name);
  return p;
}

static int setup(void **state) {
  (void)state;
  snprintf(tmpdir, sizeof tmpdir, "/tmp/dsv4kv_hostile_XXXXXX");
  char cmd[600];
  snprintf(cmd, sizeof cmd, ULIMIT "'%s' --version >/dev/null 2>&1", dsv4kv_bin);
  if (system(cmd) != 0) limits = ""; /* an ASan build */
  return mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown(void **state) {
  (void)state;
  char cmd[300];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
  return system(cmd) == 0 ? 0 : -1;
}

/* ------------------------------------------------------------------------ */
/* outputs sized from metadata                                                 */
/* ------------------------------------------------------------------------ */
static int32_t zeros32[256];

/* build_flashinfer_mixed_sparse_indices with `rows` decode tokens of one SWA
 * column and topk 2^31 - 1: the output would be [rows, 2^31 + 1] int32, 8 GiB
 * a row, while expected.sparse_indices is [1, 4].  824 bytes for one row,
 * 1.6 KB for 100 (800 GiB). */
static int write_flashinfer(const char *path, int64_t rows) {
  const char *meta[] = {"op", "build_flashinfer_mixed_sparse_indices", "swa_block_size", "64",
                        "swa_block_span", "none", "compressed_block_size", "64",
                        "compressed_block_span", "none", "window_size", "1", "compress_ratio", "4",
                        "topk", "2147483647", NULL};
  stw_tensor t[] = {
      {"decode_swa_indices", "I32", 2, {rows, 1}, zeros32, 4 * (size_t)rows},
      {"prefill_topk_indices", "I32", 2, {0, 4}, zeros32, 0},
      {"query_start_loc", "I32", 1, {2}, zeros32, 8},
      {"seq_lens", "I32", 1, {1}, zeros32, 4},
      {"replay_start", "I32", 1, {1}, zeros32, 4},
      {"token_to_req_indices", "I32", 1, {rows}, zeros32, 4 * (size_t)rows},
      {"swa_block_table", "I32", 2, {1, 1}, zeros32, 4},
      {"expected.sparse_indices", "I32", 2, {1, 4}, zeros32, 16},
  };
  return stw_write(path, meta, t, 8);
}

static void test_output_sized_by_topk(void **state) {
  (void)state;
  run_result r;
  const char *path = tmp_path("flashinfer_topk.safetensors");
  assert_int_equal(write_flashinfer(path, 1), 0);
  struct stat sb;
  assert_int_equal(stat(path, &sb), 0);
  assert_true(sb.st_size < 1024);
  run_verify(&r, path);
  const char *want[] = {"metadata topk = 2147483647", "expected.sparse_indices", NULL};
  expect_fail(&r, want);
  assert_null(strstr(r.out, "out of memory"));
  path = tmp_path("flashinfer_topk100.safetensors");
  assert_int_equal(write_flashinfer(path, 100), 0);
  run_verify(&r, path);
  expect_fail(&r, want);
  assert_null(strstr(r.out, "out of memory"));
}

/* compute_global_topk_indices_and_lens over topk_indices [2^40, 0]: zero
 * bytes in the file, but topk_lens would be 2^40 int32. */
static void test_zero_size_extent(void **state) {
  (void)state;
  const char *meta[] = {"op", "compute_global_topk_indices_and_lens", "block_size", "4", NULL};
  stw_tensor t[] = {
      {"topk_indices", "I32", 2, {(int64_t)1 << 40, 0}, zeros32, 0},
      {"token_to_req_indices", "I32", 1, {1}, zeros32, 4},
      {"block_table", "I32", 2, {1, 1}, zeros32, 4},
      {"is_valid_token", "BOOL", 1, {1}, zeros32, 1},
      {"expected.global_topk_indices", "I32", 2, {(int64_t)1 << 40, 0}, zeros32, 0},
      {"expected.topk_lens", "I32", 1, {1}, zeros32, 4},
  };
  const char *path = tmp_path("zero_extent.safetensors");
  assert_int_equal(stw_write(path, meta, t, 6), 0);
  run_result r;
  run_verify(&r, path);
  const char *want[] = {"'topk_indices'", "1099511627776", "larger than the file", NULL};
  expect_fail(&r, want);
  assert_null(strstr(r.out, "out of memory"));
}

/* ------------------------------------------------------------------------ */
/* sparse caches                                                               */
/* ------------------------------------------------------------------------ */
static uint16_t k_row[512];
static const int64_t slot0 = 0;

/* quantize_and_insert_k_cache into a sparse MXFP8 cache of `num_blocks` x
 * `stride` bytes listing `n` blocks `ids`. */
static int write_sparse(const char *path, const char *num_blocks, const char *stride,
                        const int64_t *ids, int64_t n, int64_t stride_bytes) {
  uint8_t *blocks = calloc((size_t)(n * stride_bytes), 1);
  if (!blocks) return -1;
  const char *meta[] = {"op", "quantize_and_insert_k_cache", "record", "mxfp8", "block_size", "1",
                        "k_cache_layout", "sparse", "num_blocks", num_blocks, "block_stride",
                        stride, NULL};
  size_t nb = (size_t)(n * stride_bytes);
  stw_tensor t[] = {
      {"k", "BF16", 2, {1, 512}, k_row, sizeof k_row},
      {"slot_mapping", "I64", 1, {1}, &slot0, 8},
      {"k_cache.block_ids", "I64", 1, {n}, ids, 8 * (size_t)n},
      {"k_cache.blocks", "U8", 2, {n, stride_bytes}, blocks, nb},
      {"expected.k_cache.blocks", "U8", 2, {n, stride_bytes}, blocks, nb},
  };
  int rc = stw_write(path, meta, t, 5);
  free(blocks);
  return rc;
}

/* 20 GiB of address space for one listed block: over the sparse cap. */
static void test_sparse_too_large(void **state) {
  (void)state;
  const int64_t id = 0;
  const char *path = tmp_path("sparse_huge.safetensors");
  assert_int_equal(write_sparse(path, "40722000", "528", &id, 1, 528), 0);
  run_result r;
  run_verify(&r, path);
  const char *want[] = {"num_blocks", "block_stride", "16 GiB", NULL};
  expect_fail(&r, want);
}

/* 20000 one-byte blocks a page apart: 200 KB of file, 80 MB of touched pages. */
static void test_sparse_scattered(void **state) {
  (void)state;
  enum { N = 20000 };
  static int64_t ids[N];
  for (int64_t i = 0; i < N; i++) ids[i] = 4096 * i;
  const char *path = tmp_path("sparse_scattered.safetensors");
  assert_int_equal(write_sparse(path, "81920000", "1", ids, N, 1), 0);
  run_result r;
  run_verify(&r, path);
  const char *want[] = {"sparse cache 'k_cache'", "pages", "over the cap", NULL};
  expect_fail(&r, want);
}

/* 10^6 block ids, the last one repeating the first: found in well under a
 * second (the pairwise check took minutes). */
static void test_sparse_million_ids(void **state) {
  (void)state;
  enum { N = 1000000 };
  int64_t *ids = malloc(N * sizeof *ids);
  assert_non_null(ids);
  for (int64_t i = 0; i < N; i++) ids[i] = (i * 7919) % (N - 1); /* 7919 is prime: a permutation */
  ids[N - 1] = ids[0];
  const char *path = tmp_path("sparse_million.safetensors");
  int rc = write_sparse(path, "1000000", "1", ids, N, 1);
  free(ids);
  assert_int_equal(rc, 0);
  run_result r;
  run_verify(&r, path);
  const char *want[] = {"'k_cache.block_ids' lists block 0 twice", NULL};
  expect_fail(&r, want);
  if (r.seconds > 10) fail_msg("took %.1f s", r.seconds);
}

/* A whole combine case of 196608 x 8192 rows whose 18 GiB of tensors are
 * holes: 4 x the file's length would allow its 6 GiB buffers, the fixed
 * 4 GiB ceiling does not (a file with holes costs its writer nothing
 * whatever its length).  Run under 24 GiB of address space (the file is
 * mapped whole), so that without the ceiling the allocation fails instead
 * of filling the machine. */
static void test_sparse_file_holes(void **state) {
  (void)state;
  enum { T = 196608, W = 8192 };
  const struct {
    const char *name;
    int rank;
    long long d0, d1;
  } ts[] = {{"topk_indices", 2, T, W},  {"query_start_loc", 1, 2, 0},  {"seq_lens", 1, 1, 0},
            {"gather_lens", 1, 1, 0},   {"combined_indices", 2, T, W}, {"combined_lens", 1, T, 0},
            {"expected.combined_indices", 2, T, W}, {"expected.combined_lens", 1, T, 0}};
  char hdr[2048];
  int n = snprintf(hdr, sizeof hdr, "{\"__metadata__\": {\"op\": \"combine_topk_swa_indices\", \"window_size\": "
                   "\"128\", \"compress_ratio\": \"4\", \"topk\": \"512\", \"M\": \"0\", \"N\": \"0\"}");
  long long off = 0;
  for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++) {
    const long long bytes = 4 * ts[i].d0 * (ts[i].rank == 2 ? ts[i].d1 : 1);
    char shape[64];
    if (ts[i].rank == 2) snprintf(shape, sizeof shape, "%lld, %lld", ts[i].d0, ts[i].d1);
    else snprintf(shape, sizeof shape, "%lld", ts[i].d0);
    n += snprintf(hdr + n, sizeof hdr - (size_t)n, ", \"%s\": {\"dtype\": \"I32\", \"shape\": [%s], "
                  "\"data_offsets\": [%lld, %lld]}", ts[i].name, shape, off, off + bytes);
    off += bytes;
  }
  n += snprintf(hdr + n, sizeof hdr - (size_t)n, "}");
  while (n % 8) hdr[n++] = ' ';
  const char *path = tmp_path("sparse_holes.safetensors");
  FILE *f = fopen(path, "wb");
  assert_non_null(f);
  const uint64_t len = (uint64_t)n;
  assert_int_equal(fwrite(&len, 8, 1, f), 1);
  assert_int_equal(fwrite(hdr, 1, (size_t)n, f), (size_t)n);
  assert_int_equal(fclose(f), 0);
  assert_int_equal(truncate(path, 8 + n + off), 0);
  struct stat sb;
  assert_int_equal(stat(path, &sb), 0);
  if ((long long)sb.st_blocks * 512 >= sb.st_size) skip(); /* a file system without holes */
  run_result r;
  const char *saved = limits;
  limits = limits[0] ? "ulimit -v 25165824; " : limits; /* (ASan builds: its allocation cap, no ulimit) */
  run_verify(&r, path);
  limits = saved;
  const char *want[] = {"over the cap", "at most 4 GiB", NULL};
  expect_fail(&r, want);
  if (r.seconds > 10) fail_msg("took %.1f s", r.seconds);
}

/* Dense cache metadata that disagrees with the cache tensor. */
static void test_dense_geometry(void **state) {
  (void)state;
  static uint8_t page[528];
  const char *meta[] = {"op", "quantize_and_insert_k_cache", "record", "mxfp8", "block_size", "1",
                        "num_blocks", "7", "block_stride", "528", NULL};
  stw_tensor t[] = {
      {"k", "BF16", 2, {1, 512}, k_row, sizeof k_row},
      {"slot_mapping", "I64", 1, {1}, &slot0, 8},
      {"k_cache", "U8", 2, {1, 528}, page, sizeof page},
      {"expected.k_cache", "U8", 2, {1, 528}, page, sizeof page},
  };
  const char *path = tmp_path("dense_geometry.safetensors");
  assert_int_equal(stw_write(path, meta, t, 4), 0);
  run_result r;
  run_verify(&r, path);
  const char *want[] = {"metadata num_blocks = 7", "'k_cache' is U8[1, 528]", NULL};
  expect_fail(&r, want);
}

/* ------------------------------------------------------------------------ */
/* not a regular file                                                          */
/* ------------------------------------------------------------------------ */
static void test_fifo(void **state) {
  (void)state;
  const char *path = tmp_path("pipe.safetensors");
  if (mkfifo(path, 0600)) skip();
  run_result r;
  run_verify(&r, path);
  const char *want[] = {"pipe.safetensors: not a regular file (a FIFO)", NULL};
  expect_fail(&r, want);
  /* in a directory it is listed too, and fails the same way (it was left
   * out, and the directory then said it held no files) */
  char dir[512];
  snprintf(dir, sizeof dir, "%s", tmp_path("fifo_dir"));
  assert_int_equal(mkdir(dir, 0700), 0);
  char fifo[600];
  snprintf(fifo, sizeof fifo, "%s/pipe.safetensors", dir);
  if (mkfifo(fifo, 0600)) skip();
  run_verify(&r, dir);
  expect_fail(&r, want);
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s PATH_TO_DSV4KV\n", argv[0]);
    return 2;
  }
  dsv4kv_bin = argv[1];
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_output_sized_by_topk), cmocka_unit_test(test_zero_size_extent),
      cmocka_unit_test(test_sparse_too_large),     cmocka_unit_test(test_sparse_scattered),
      cmocka_unit_test(test_sparse_million_ids),   cmocka_unit_test(test_sparse_file_holes),
      cmocka_unit_test(test_dense_geometry),
      cmocka_unit_test(test_fifo),
  };
  return cmocka_run_group_tests_name("dsv4kv verify (hostile files)", tests, setup, teardown);
}
