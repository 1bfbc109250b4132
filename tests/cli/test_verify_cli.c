/* test_verify_cli.c - `dsv4kv verify` as a user runs it: exit status, the
 * PASS / FAIL lines and the closing count, on small files written here (a
 * tiny SPEC §5.1 case worked out by hand, a copy with one wrong expected
 * element, an insert whose call returns a warning or an error, malformed
 * and foreign files, missing paths, directories).
 *
 * usage: cli_test_verify PATH_TO_DSV4KV */
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

#include <cmocka.h>

#include "dsv4kv.h"

#include "st_write.h"

static const char *dsv4kv_bin;
static char tmpdir[256];

typedef struct {
  int status; /* exit status, or -1 when the process did not exit normally */
  char out[16384];
} run_result;

/* Runs `dsv4kv verify ARGS` through the shell, stdout and stderr together. */
static void run_verify(run_result *r, const char *fmt, ...) {
  char args[2048], cmd[4096];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(args, sizeof args, fmt, ap);
  va_end(ap);
  snprintf(cmd, sizeof cmd, "'%s' verify %s 2>&1", dsv4kv_bin, args);
  FILE *p = popen(cmd, "r");
  assert_non_null(p);
  size_t n = fread(r->out, 1, sizeof r->out - 1, p);
  r->out[n] = '\0';
  int st = pclose(p);
  r->status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void expect_output(const run_result *r, const char *needle) {
  if (!strstr(r->out, needle)) fail_msg("output lacks \"%s\":\n%s", needle, r->out);
}

static const char *tmp_path(const char *name) {
  static char path[4][512];
  static int next;
  char *p = path[next++ % 4];
  snprintf(p, sizeof path[0], "%s/%s", tmpdir, name);
  return p;
}

/* ------------------------------------------------------------------------ */
/* a compute_global_topk_indices_and_lens case small enough to check by hand  */
/* ------------------------------------------------------------------------ */
/* block_size 4, two requests with pages {10, 11, 12} and {20, 21, 22}.
 * Token 0 (request 0, valid):   x = 0, 5, -1, 9 -> 40, 45, -1, 49; len 3
 * Token 1 (request 1, invalid): x = 3, -1, -1, 8 -> 83, -1, -1, 88; len 0 */
static const int32_t topk_indices[8] = {0, 5, -1, 9, 3, -1, -1, 8};
static const int32_t token_to_req[2] = {0, 1};
static const int32_t block_table[6] = {10, 11, 12, 20, 21, 22};
static const uint8_t is_valid[2] = {1, 0};
static const int32_t want_global[8] = {40, 45, -1, 49, 83, -1, -1, 88};
static const int32_t want_lens[2] = {3, 0};

static int write_topk_case(const char *path, const int32_t *global, const char *extra_name) {
  const char *meta[] = {"op", "compute_global_topk_indices_and_lens", "block_size", "4", NULL};
  stw_tensor t[] = {
      {"topk_indices", "I32", 2, {2, 4}, topk_indices, sizeof topk_indices},
      {"token_to_req_indices", "I32", 1, {2}, token_to_req, sizeof token_to_req},
      {"block_table", "I32", 2, {2, 3}, block_table, sizeof block_table},
      {"is_valid_token", "BOOL", 1, {2}, is_valid, sizeof is_valid},
      {"expected.global_topk_indices", "I32", 2, {2, 4}, global, sizeof want_global},
      {"expected.topk_lens", "I32", 1, {2}, want_lens, sizeof want_lens},
      {extra_name, "I32", 1, {2}, want_lens, sizeof want_lens},
  };
  return stw_write(path, meta, t, extra_name ? 7 : 6);
}

/* quantize_and_insert_k_cache of one MXFP8 row (block_size 1: one 528-byte
 * page) whose slot is -2: the library skips it (the reference skips every
 * negative slot too), writes nothing and returns DSV4KV_WARN_SKIPPED, so the
 * cache must come back unchanged.  `want` is the file's expected.k_cache;
 * `block_size` "0" makes the call an argument error instead. */
#define WARN_PAGE_BYTES 528
static uint16_t warn_k[512];
static uint8_t warn_cache[WARN_PAGE_BYTES];
static const int64_t warn_slot = -2;

static int write_warn_case(const char *path, const uint8_t *want, const char *block_size) {
  const char *meta[] = {"op", "quantize_and_insert_k_cache", "record", "mxfp8", "block_size", block_size, NULL};
  stw_tensor t[] = {
      {"k", "BF16", 2, {1, 512}, warn_k, sizeof warn_k},
      {"slot_mapping", "I64", 1, {1}, &warn_slot, sizeof warn_slot},
      {"k_cache", "U8", 2, {1, WARN_PAGE_BYTES}, warn_cache, sizeof warn_cache},
      {"expected.k_cache", "U8", 2, {1, WARN_PAGE_BYTES}, want, sizeof warn_cache},
  };
  return stw_write(path, meta, t, 4);
}

static int setup(void **state) {
  (void)state;
  snprintf(tmpdir, sizeof tmpdir, "/tmp/dsv4kv_cli_XXXXXX");
  if (!mkdtemp(tmpdir)) return -1;
  int32_t wrong[8];
  memcpy(wrong, want_global, sizeof wrong);
  wrong[5] = 7; /* element 5 = (1, 1): the library writes -1 there */
  char dir[600];
  snprintf(dir, sizeof dir, "%s/set", tmpdir);
  if (mkdir(dir, 0700) || mkdir(tmp_path("empty"), 0700)) return -1;
  const char *meta_noop[] = {"case", "x", NULL};
  const char *meta_unknown[] = {"op", "frobnicate_k_cache", NULL};
  const int32_t one = 1;
  stw_tensor a = {"a", "I32", 1, {1}, &one, 4};
  for (int i = 0; i < 512; i++) warn_k[i] = (uint16_t)(0x3f80 + 3 * i); /* 1.0 and up */
  for (int i = 0; i < WARN_PAGE_BYTES; i++) warn_cache[i] = 0xA5; /* the reference's fill */
  uint8_t warn_wrong[WARN_PAGE_BYTES];
  memcpy(warn_wrong, warn_cache, sizeof warn_wrong);
  warn_wrong[7] = 0x00; /* what no skipped row can have written */
  return write_warn_case(tmp_path("warn.safetensors"), warn_cache, "1") ||
         write_warn_case(tmp_path("warn_wrong.safetensors"), warn_wrong, "1") ||
         write_warn_case(tmp_path("warn_error.safetensors"), warn_cache, "0") ||
         write_topk_case(tmp_path("good.safetensors"), want_global, NULL) ||
         write_topk_case(tmp_path("wrong.safetensors"), wrong, NULL) ||
         write_topk_case(tmp_path("extra.safetensors"), want_global, "expected.bogus") ||
         /* a directory: sorted by name, so b_good runs after a_wrong */
         write_topk_case(tmp_path("set/b_good.safetensors"), want_global, NULL) ||
         write_topk_case(tmp_path("set/a_wrong.safetensors"), wrong, NULL) ||
         stw_write_json(tmp_path("set/notes.txt"), "{}", NULL, 0) ||
         stw_write_json(tmp_path("malformed.safetensors"), "{\"a\": {\"dtype\": ", NULL, 0) ||
         stw_write(tmp_path("noop.safetensors"), meta_noop, &a, 1) ||
         stw_write(tmp_path("unknown_op.safetensors"), meta_unknown, &a, 1);
}

static int teardown(void **state) {
  (void)state;
  char cmd[300];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
  return system(cmd) == 0 ? 0 : -1;
}

/* ------------------------------------------------------------------------ */
/* usage                                                                       */
/* ------------------------------------------------------------------------ */
static void test_help(void **state) {
  (void)state;
  run_result r;
  run_verify(&r, "--help");
  assert_int_equal(r.status, 0);
  expect_output(&r, "usage: dsv4kv verify");
  expect_output(&r, "--device");
  expect_output(&r, "indexer_k_norm_rope_store");
}

static void test_usage_errors(void **state) {
  (void)state;
  run_result r;
  run_verify(&r, "");
  assert_int_equal(r.status, 2);
  expect_output(&r, "no PATH given");
  run_verify(&r, "--device tpu '%s'", tmp_path("good.safetensors"));
  assert_int_equal(r.status, 2);
  expect_output(&r, "unknown device 'tpu'");
  run_verify(&r, "--bogus '%s'", tmp_path("good.safetensors"));
  assert_int_equal(r.status, 2);
  expect_output(&r, "unknown option");
}

/* ------------------------------------------------------------------------ */
/* results                                                                     */
/* ------------------------------------------------------------------------ */
static void test_pass(void **state) {
  (void)state;
  run_result r;
  const char *path = tmp_path("good.safetensors");
  run_verify(&r, "'%s'", path);
  char line[700];
  snprintf(line, sizeof line, "PASS %s\n", path);
  expect_output(&r, line);
  expect_output(&r, "\n1 passed, 0 failed\n");
  assert_int_equal(r.status, 0);
}

static void test_mismatch_report(void **state) {
  (void)state;
  run_result r;
  const char *path = tmp_path("wrong.safetensors");
  run_verify(&r, "--device=cpu '%s'", path);
  assert_int_not_equal(r.status, 0);
  char line[900];
  snprintf(line, sizeof line,
           "FAIL %s: global_topk_indices first differs at element 5 (1, 1): "
           "got 0xffffffff (-1) expected 0x00000007 (7); 1 of 8 elements differ\n",
           path);
  expect_output(&r, line);
  expect_output(&r, "0 passed, 1 failed\n");
}

/* A library warning on a file whose expected bytes all match is a PASS that
 * names the warning; with a mismatch it is still a FAIL; an error fails. */
static void test_warning_pass(void **state) {
  (void)state;
  run_result r;
  const char *path = tmp_path("warn.safetensors");
  run_verify(&r, "'%s'", path);
  char line[900];
  snprintf(line, sizeof line, "PASS %s (warning: DSV4KV_WARN_SKIPPED: 1 entry skipped: ", path);
  expect_output(&r, line);
  expect_output(&r, "slot_mapping[0] = -2");
  expect_output(&r, ")\n1 passed, 0 failed\n");
  assert_null(strstr(r.out, "FAIL "));
  assert_int_equal(r.status, 0);
  /* next to a plain pass: both count, the plain line carries no note */
  run_verify(&r, "'%s' '%s'", tmp_path("good.safetensors"), path);
  snprintf(line, sizeof line, "PASS %s\n", tmp_path("good.safetensors"));
  expect_output(&r, line);
  expect_output(&r, "2 passed, 0 failed\n");
  assert_int_equal(r.status, 0);
}

static void test_warning_mismatch(void **state) {
  (void)state;
  run_result r;
  const char *path = tmp_path("warn_wrong.safetensors");
  run_verify(&r, "'%s'", path);
  assert_int_not_equal(r.status, 0);
  char line[900];
  snprintf(line, sizeof line,
           "FAIL %s: k_cache first differs at element 7 (0, 7): got 0xa5 expected 0x00; "
           "1 of 528 elements differ (warning: DSV4KV_WARN_SKIPPED: 1 entry skipped: ",
           path);
  expect_output(&r, line);
  assert_null(strstr(r.out, "PASS "));
  expect_output(&r, "0 passed, 1 failed\n");
}

static void test_error_status(void **state) {
  (void)state;
  run_result r;
  const char *path = tmp_path("warn_error.safetensors"); /* block_size 0 */
  run_verify(&r, "'%s'", path);
  assert_int_not_equal(r.status, 0);
  char line[900];
  snprintf(line, sizeof line,
           "FAIL %s: dsv4kv_quantize_and_insert_k_cache returned DSV4KV_ERR_VALUE: ", path);
  expect_output(&r, line);
  expect_output(&r, "0 passed, 1 failed\n");
}

static void test_unchecked_expected(void **state) {
  (void)state;
  run_result r;
  run_verify(&r, "'%s'", tmp_path("extra.safetensors"));
  assert_int_not_equal(r.status, 0);
  expect_output(&r, "'expected.bogus' is not checked by the harness");
}

static void test_malformed_file(void **state) {
  (void)state;
  run_result r;
  const char *path = tmp_path("malformed.safetensors");
  run_verify(&r, "'%s'", path);
  assert_int_not_equal(r.status, 0);
  char line[700];
  snprintf(line, sizeof line, "FAIL %s: header is not valid JSON", path);
  expect_output(&r, line);
  expect_output(&r, "0 passed, 1 failed\n");
}

static void test_not_golden(void **state) {
  (void)state;
  run_result r;
  run_verify(&r, "'%s' '%s'", tmp_path("noop.safetensors"), tmp_path("unknown_op.safetensors"));
  assert_int_not_equal(r.status, 0);
  expect_output(&r, "noop.safetensors: metadata has no 'op'");
  expect_output(&r, "unknown_op.safetensors: unknown op 'frobnicate_k_cache'");
  expect_output(&r, "0 passed, 2 failed\n");
}

static void test_missing_path(void **state) {
  (void)state;
  run_result r;
  const char *path = tmp_path("nowhere.safetensors");
  run_verify(&r, "'%s'", path);
  assert_int_not_equal(r.status, 0);
  char line[700];
  snprintf(line, sizeof line, "FAIL %s: cannot open", path);
  expect_output(&r, line);
  /* one good file does not hide a missing one */
  run_verify(&r, "'%s' '%s'", tmp_path("good.safetensors"), path);
  assert_int_not_equal(r.status, 0);
  expect_output(&r, "1 passed, 1 failed\n");
}

static void test_directory(void **state) {
  (void)state;
  run_result r;
  run_verify(&r, "'%s'", tmp_path("set"));
  assert_int_not_equal(r.status, 0);
  const char *a = strstr(r.out, "FAIL ");
  const char *b = strstr(r.out, "PASS ");
  assert_non_null(a);
  assert_non_null(b);
  assert_true(a < b); /* name order: a_wrong before b_good */
  assert_non_null(strstr(a, "a_wrong.safetensors: global_topk_indices first differs"));
  assert_null(strstr(r.out, "notes.txt")); /* only *.safetensors */
  expect_output(&r, "1 passed, 1 failed\n");
}

static void test_empty_directory(void **state) {
  (void)state;
  run_result r;
  run_verify(&r, "'%s'", tmp_path("empty"));
  assert_int_not_equal(r.status, 0);
  expect_output(&r, "no *.safetensors files");
}

/* Without a CUDA backend: one answer before any file is run (exit 2), not a
 * FAIL line per file; with one, the file passes. */
static void test_cuda_device(void **state) {
  (void)state;
  run_result r;
  run_verify(&r, "--device cuda '%s' '%s'", tmp_path("good.safetensors"), tmp_path("good.safetensors"));
  if (dsv4kv_backend_available(kDLCUDA)) {
    assert_int_equal(r.status, 0);
    expect_output(&r, "2 passed, 0 failed\n");
    return;
  }
  assert_int_equal(r.status, 2);
  expect_output(&r, "CUDA cannot run here");
  if (strstr(r.out, "FAIL") || strstr(r.out, "passed,"))
    fail_msg("per-file lines after the device was refused:\n%s", r.out);
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s PATH_TO_DSV4KV\n", argv[0]);
    return 2;
  }
  dsv4kv_bin = argv[1];
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_help),
      cmocka_unit_test(test_usage_errors),
      cmocka_unit_test(test_pass),
      cmocka_unit_test(test_mismatch_report),
      cmocka_unit_test(test_warning_pass),
      cmocka_unit_test(test_warning_mismatch),
      cmocka_unit_test(test_error_status),
      cmocka_unit_test(test_unchecked_expected),
      cmocka_unit_test(test_malformed_file),
      cmocka_unit_test(test_not_golden),
      cmocka_unit_test(test_missing_path),
      cmocka_unit_test(test_directory),
      cmocka_unit_test(test_empty_directory),
      cmocka_unit_test(test_cuda_device),
  };
  return cmocka_run_group_tests_name("dsv4kv verify", tests, setup, teardown);
}
