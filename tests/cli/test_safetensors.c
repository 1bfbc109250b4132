/* test_safetensors.c - the safetensors reader behind `dsv4kv verify`: one
 * well-formed file read back exactly, and every kind of malformed file
 * rejected with a message that names the file and the problem (never a
 * crash).  Files are written to a fresh temporary directory at test time. */
#define _GNU_SOURCE /* mkdtemp */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "dsv4kv.h"
#include "safetensors.h"
#include "st_write.h"

static char tmpdir[256];

static int make_tmpdir(void **state) {
  (void)state;
  snprintf(tmpdir, sizeof tmpdir, "/tmp/dsv4kv_st_XXXXXX");
  return mkdtemp(tmpdir) ? 0 : -1;
}

static int remove_tmpdir(void **state) {
  (void)state;
  char cmd[300];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
  return system(cmd) == 0 ? 0 : -1;
}

static const char *tmp_path(const char *name) {
  static char path[512];
  snprintf(path, sizeof path, "%s/%s", tmpdir, name);
  return path;
}

/* st_open must fail cleanly: -1, no handle, a message with the path and `needle`. */
static void expect_reject(const char *path, const char *needle) {
  st_file *f = (st_file *)0x1;
  char err[1024];
  int rc = st_open(path, &f, err, sizeof err);
  if (rc == 0) st_close(f);
  assert_int_equal(rc, -1);
  assert_null(f);
  if (!strstr(err, path) || !strstr(err, needle))
    fail_msg("message \"%s\" lacks the path or \"%s\"", err, needle);
}

/* A header string with the length field equal to its size, no data area. */
static void reject_json(const char *name, const char *json, size_t data_len, const char *needle) {
  static const uint8_t zeros[64];
  assert_true(data_len <= sizeof zeros);
  const char *path = tmp_path(name);
  assert_int_equal(stw_write_json(path, json, zeros, data_len), 0);
  expect_reject(path, needle);
}

/* ------------------------------------------------------------------------ */
/* well-formed                                                                 */
/* ------------------------------------------------------------------------ */
static void test_round_trip(void **state) {
  (void)state;
  const uint8_t u8[6] = {1, 2, 3, 4, 5, 250};
  const int32_t i32[4] = {-1, 0, 7, INT32_MAX};
  const uint16_t bf16[2] = {0x3f80, 0xc000};
  const uint8_t flags[3] = {1, 0, 1};
  const int64_t i64[1] = {INT64_MIN};
  const float f32 = 0.5f;
  const stw_tensor t[] = {
      {"cache", "U8", 2, {2, 3}, u8, sizeof u8},
      {"idx", "I32", 1, {4}, i32, sizeof i32},
      {"k", "BF16", 1, {2}, bf16, sizeof bf16},
      {"valid", "BOOL", 1, {3}, flags, sizeof flags},
      {"slot", "I64", 1, {1}, i64, sizeof i64},
      {"eps", "F32", 0, {0}, &f32, sizeof f32},        /* a scalar */
      {"empty", "I32", 2, {0, 5}, NULL, 0},            /* zero elements */
  };
  const char *meta[] = {"op", "combine_topk_swa_indices", "topk", "512", NULL};
  const char *path = tmp_path("good.safetensors");
  assert_int_equal(stw_write(path, meta, t, sizeof t / sizeof t[0]), 0);

  st_file *f = NULL;
  char err[512] = "";
  assert_int_equal(st_open(path, &f, err, sizeof err), 0);
  assert_non_null(f);
  assert_string_equal(st_path(f), path);
  assert_int_equal(st_num_tensors(f), 7);
  assert_string_equal(st_meta(f, "op"), "combine_topk_swa_indices");
  assert_string_equal(st_meta(f, "topk"), "512");
  assert_null(st_meta(f, "missing"));
  assert_int_equal(st_num_meta(f), 2);
  assert_string_equal(st_meta_key_at(f, 1), "topk");
  assert_null(st_find(f, "nope"));

  const st_tensor *c = st_find(f, "cache");
  assert_non_null(c);
  assert_int_equal(c->dtype, ST_U8);
  assert_int_equal(c->ndim, 2);
  assert_int_equal(c->shape[0], 2);
  assert_int_equal(c->shape[1], 3);
  assert_int_equal(c->numel, 6);
  assert_int_equal(c->nbytes, 6);
  assert_memory_equal(c->data, u8, sizeof u8);
  assert_memory_equal(st_find(f, "idx")->data, i32, sizeof i32);
  assert_memory_equal(st_find(f, "k")->data, bf16, sizeof bf16);
  assert_memory_equal(st_find(f, "slot")->data, i64, sizeof i64);
  const st_tensor *eps = st_find(f, "eps");
  assert_int_equal(eps->ndim, 0);
  assert_int_equal(eps->numel, 1);
  assert_memory_equal(eps->data, &f32, 4);
  assert_int_equal(st_find(f, "empty")->numel, 0);
  assert_int_equal(st_find(f, "empty")->nbytes, 0);

  /* DLPack views: dtype codes as dsv4kv takes them, compact, on the CPU. */
  const st_tensor *v = st_find(f, "valid");
  DLTensor view;
  st_dltensor(v, (void *)v->data, &view);
  assert_int_equal(view.dtype.code, DSV4KV_DL_BOOL);
  assert_int_equal(view.dtype.bits, 8);
  assert_int_equal(view.dtype.lanes, 1);
  assert_int_equal(view.ndim, 1);
  assert_int_equal(view.shape[0], 3);
  assert_null(view.strides);
  assert_int_equal(view.byte_offset, 0);
  assert_int_equal(view.device.device_type, kDLCPU);
  assert_ptr_equal(view.data, v->data);
  st_dltensor(st_find(f, "k"), NULL, &view);
  assert_int_equal(view.dtype.code, kDLBfloat);
  assert_int_equal(view.dtype.bits, 16);
  st_dltensor(st_find(f, "slot"), NULL, &view);
  assert_int_equal(view.dtype.code, kDLInt);
  assert_int_equal(view.dtype.bits, 64);
  st_dltensor(st_find(f, "eps"), NULL, &view);
  assert_int_equal(view.dtype.code, kDLFloat);
  assert_int_equal(view.ndim, 0);
  assert_int_equal(st_dtype_size(ST_BF16), 2);
  assert_string_equal(st_dtype_name(ST_I64), "I64");
  st_close(f);
  st_close(NULL); /* harmless */
}

/* A header with no __metadata__ is legal; so is padding after the JSON. */
static void test_minimal_file(void **state) {
  (void)state;
  const char *path = tmp_path("minimal.safetensors");
  const char *json = "{\"a\":{\"dtype\":\"I32\",\"shape\":[1],\"data_offsets\":[0,4]}}   ";
  const int32_t one = 1;
  assert_int_equal(stw_write_json(path, json, &one, 4), 0);
  st_file *f = NULL;
  char err[512];
  assert_int_equal(st_open(path, &f, err, sizeof err), 0);
  assert_int_equal(st_num_meta(f), 0);
  assert_null(st_meta(f, "op"));
  assert_int_equal(st_find(f, "a")->shape[0], 1);
  st_close(f);
}

/* ------------------------------------------------------------------------ */
/* the file itself                                                             */
/* ------------------------------------------------------------------------ */
static void test_missing_file(void **state) {
  (void)state;
  expect_reject(tmp_path("does_not_exist.safetensors"), "cannot open");
}

static void test_directory(void **state) {
  (void)state;
  const char *path = tmp_path("adir.safetensors");
  assert_int_equal(mkdir(path, 0700), 0);
  expect_reject(path, "not a regular file");
}

/* Neither may block or be read: a FIFO nobody writes to (the open used to
 * wait for a writer forever; alarm() turns that into a failure) and a
 * character device. */
static void test_not_regular(void **state) {
  (void)state;
  const char *path = tmp_path("pipe.safetensors");
  assert_int_equal(mkfifo(path, 0600), 0);
  alarm(20);
  expect_reject(path, "not a regular file (a FIFO)");
  alarm(0);
  expect_reject("/dev/null", "not a regular file (a character device)");
}

/* st_open_memory: the same reader over bytes in memory, named in messages. */
static void test_open_memory(void **state) {
  (void)state;
  const int32_t v[2] = {7, -7};
  const stw_tensor t = {"v", "I32", 1, {2}, v, sizeof v};
  const char *meta[] = {"op", "x", NULL};
  const char *path = tmp_path("memory.safetensors");
  assert_int_equal(stw_write(path, meta, &t, 1), 0);
  uint8_t bytes[512];
  FILE *fp = fopen(path, "rb");
  assert_non_null(fp);
  size_t n = fread(bytes, 1, sizeof bytes, fp);
  fclose(fp);
  st_file *f = NULL;
  char err[256];
  assert_int_equal(st_open_memory("mem", bytes, n, &f, err, sizeof err), 0);
  assert_int_equal(st_file_size(f), n);
  assert_string_equal(st_meta(f, "op"), "x");
  assert_memory_equal(st_find(f, "v")->data, v, sizeof v);
  st_close(f);
  assert_int_equal(st_open_memory("mem", bytes, 7, &f, err, sizeof err), -1);
  assert_null(f);
  assert_non_null(strstr(err, "mem: file is 7 bytes, too short"));
}

static void test_empty_and_truncated_length(void **state) {
  (void)state;
  const char *path = tmp_path("empty.safetensors");
  FILE *f = fopen(path, "wb");
  assert_non_null(f);
  fclose(f);
  expect_reject(path, "too short");
  path = tmp_path("five_bytes.safetensors");
  f = fopen(path, "wb");
  fwrite("\x10\0\0\0\0", 1, 5, f);
  fclose(f);
  expect_reject(path, "too short");
}

static void test_header_length_past_eof(void **state) {
  (void)state;
  const char *json = "{}";
  const char *path = tmp_path("len_past_eof.safetensors");
  assert_int_equal(stw_write_raw(path, 1000, json, 2, NULL, 0), 0);
  expect_reject(path, "runs past the end");
  path = tmp_path("len_max.safetensors");
  assert_int_equal(stw_write_raw(path, UINT64_MAX, json, 2, NULL, 0), 0);
  expect_reject(path, "runs past the end");
  path = tmp_path("len_zero.safetensors");
  assert_int_equal(stw_write_raw(path, 0, json, 2, NULL, 0), 0);
  expect_reject(path, "header length is 0");
}

/* A length field above the format's 100 MB cap, in a file that really is that
 * long (sparse, so it costs no disk). */
static void test_header_length_absurd(void **state) {
  (void)state;
  const char *path = tmp_path("len_absurd.safetensors");
  const uint64_t len = 200ull * 1000 * 1000;
  assert_int_equal(stw_write_raw(path, len, "{}", 2, NULL, 0), 0);
  assert_int_equal(truncate(path, (off_t)(8 + len + 16)), 0);
  expect_reject(path, "100 MB");
}

/* ------------------------------------------------------------------------ */
/* the JSON header                                                             */
/* ------------------------------------------------------------------------ */
static void test_bad_json(void **state) {
  (void)state;
  reject_json("bad_json.safetensors", "{\"a\": {\"dtype\": ", 0, "not valid JSON");
  reject_json("not_object.safetensors", "[1, 2, 3]", 0, "not an object");
  reject_json("trailing.safetensors", "{} xyz", 0, "trailing bytes");
  reject_json("entry_not_object.safetensors", "{\"a\": 5}", 0, "not a JSON object");
  reject_json("empty_name.safetensors",
              "{\"\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]}}", 1, "empty name");
}

static void test_metadata(void **state) {
  (void)state;
  reject_json("meta_number.safetensors", "{\"__metadata__\":{\"op\":5}}", 0,
              "metadata 'op' is not a string");
  reject_json("meta_array.safetensors", "{\"__metadata__\":[\"op\"]}", 0,
              "\"__metadata__\" is not a JSON object");
  /* a key given twice, or twice once cut at a \u0000: which value holds? */
  reject_json("meta_twice.safetensors", "{\"__metadata__\":{\"op\":\"a\",\"op\":\"b\"}}", 0,
              "metadata 'op' appears twice");
  reject_json("meta_nul.safetensors", "{\"__metadata__\":{\"op\":\"a\",\"op\\u0000x\":\"b\"}}", 0,
              "metadata 'op' appears twice");
}

static void test_unknown_dtype(void **state) {
  (void)state;
  reject_json("dtype_f16.safetensors",
              "{\"a\":{\"dtype\":\"F16\",\"shape\":[1],\"data_offsets\":[0,2]}}", 2,
              "unsupported dtype \"F16\"");
  reject_json("dtype_missing.safetensors", "{\"a\":{\"shape\":[1],\"data_offsets\":[0,1]}}", 1,
              "\"dtype\" is missing");
  reject_json("dtype_number.safetensors",
              "{\"a\":{\"dtype\":3,\"shape\":[1],\"data_offsets\":[0,1]}}", 1, "\"dtype\"");
}

static void test_offsets(void **state) {
  (void)state;
  reject_json("off_past_end.safetensors",
              "{\"a\":{\"dtype\":\"U8\",\"shape\":[8],\"data_offsets\":[0,8]}}", 4,
              "past the data area");
  reject_json("off_begin_gt_end.safetensors",
              "{\"a\":{\"dtype\":\"U8\",\"shape\":[0],\"data_offsets\":[4,2]}}", 4,
              "begin 4 > end 2");
  reject_json("off_one.safetensors", "{\"a\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0]}}",
              1, "data_offsets");
  reject_json("off_negative.safetensors",
              "{\"a\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[-1,0]}}", 1, "data_offsets");
  reject_json("off_missing.safetensors", "{\"a\":{\"dtype\":\"U8\",\"shape\":[1]}}", 1,
              "data_offsets");
}

/* The data area is shorter than the header claims (a truncated download). */
static void test_short_data(void **state) {
  (void)state;
  reject_json("short_data.safetensors",
              "{\"a\":{\"dtype\":\"I32\",\"shape\":[4],\"data_offsets\":[0,16]}}", 10,
              "past the data area");
}

static void test_size_mismatch(void **state) {
  (void)state;
  reject_json("size_small.safetensors",
              "{\"a\":{\"dtype\":\"U8\",\"shape\":[2,3],\"data_offsets\":[0,5]}}", 8, "needs 6");
  reject_json("size_large.safetensors",
              "{\"a\":{\"dtype\":\"I32\",\"shape\":[2],\"data_offsets\":[0,12]}}", 12, "needs 8");
}

static void test_overlap_and_duplicates(void **state) {
  (void)state;
  reject_json("overlap.safetensors",
              "{\"a\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[0,4]},"
              "\"b\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[2,6]}}",
              8, "overlap");
  reject_json("same_bytes.safetensors",
              "{\"a\":{\"dtype\":\"I32\",\"shape\":[1],\"data_offsets\":[0,4]},"
              "\"b\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[0,4]}}",
              4, "overlap");
  reject_json("duplicate.safetensors",
              "{\"a\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]},"
              "\"a\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[1,2]}}",
              2, "appears twice");
}

static void test_shapes(void **state) {
  (void)state;
  reject_json("shape_negative.safetensors",
              "{\"a\":{\"dtype\":\"U8\",\"shape\":[-1],\"data_offsets\":[0,0]}}", 0, "shape[0]");
  reject_json("shape_fraction.safetensors",
              "{\"a\":{\"dtype\":\"U8\",\"shape\":[2, 1.5],\"data_offsets\":[0,3]}}", 3, "shape[1]");
  reject_json("shape_huge_entry.safetensors",
              "{\"a\":{\"dtype\":\"U8\",\"shape\":[1e300],\"data_offsets\":[0,0]}}", 0, "2^53");
  /* each entry fits, the product does not: 2^40 * 2^40 */
  reject_json("shape_product.safetensors",
              "{\"a\":{\"dtype\":\"U8\",\"shape\":[1099511627776,1099511627776],"
              "\"data_offsets\":[0,0]}}",
              0, "overflows 64 bits");
  /* the element count fits, the byte count does not: 2^62 int64 elements */
  reject_json("shape_bytes.safetensors",
              "{\"a\":{\"dtype\":\"I64\",\"shape\":[2147483648,2147483648],"
              "\"data_offsets\":[0,0]}}",
              0, "overflow");
  reject_json("shape_string.safetensors",
              "{\"a\":{\"dtype\":\"U8\",\"shape\":\"2\",\"data_offsets\":[0,2]}}", 2,
              "\"shape\" is missing or not an array");
  reject_json("shape_rank.safetensors",
              "{\"a\":{\"dtype\":\"U8\",\"shape\":[1,1,1,1,1,1,1,1,1],\"data_offsets\":[0,1]}}", 1,
              "rank 9");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_round_trip),
      cmocka_unit_test(test_minimal_file),
      cmocka_unit_test(test_missing_file),
      cmocka_unit_test(test_directory),
      cmocka_unit_test(test_not_regular),
      cmocka_unit_test(test_open_memory),
      cmocka_unit_test(test_empty_and_truncated_length),
      cmocka_unit_test(test_header_length_past_eof),
      cmocka_unit_test(test_header_length_absurd),
      cmocka_unit_test(test_bad_json),
      cmocka_unit_test(test_metadata),
      cmocka_unit_test(test_unknown_dtype),
      cmocka_unit_test(test_offsets),
      cmocka_unit_test(test_short_data),
      cmocka_unit_test(test_size_mismatch),
      cmocka_unit_test(test_overlap_and_duplicates),
      cmocka_unit_test(test_shapes),
  };
  return cmocka_run_group_tests_name("safetensors reader", tests, make_tmpdir, remove_tmpdir);
}
