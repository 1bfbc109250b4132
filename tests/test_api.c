/* The public API around the ops (include/dsv4kv.h): status helpers, version,
 * backends, record names, struct sizes, reports, CPU paths, device checks. */
#include <stdio.h>
#include <stdlib.h>

#include "support/support.h"

static void status_is_error(void **state) {
  (void)state;
  assert_int_equal(dsv4kv_is_error(DSV4KV_OK), 0);
  assert_int_equal(dsv4kv_is_error(DSV4KV_WARN_SKIPPED), 0);
  assert_int_equal(dsv4kv_is_error(DSV4KV_WARN_NONFINITE), 0);
  for (int s = 1; s <= DSV4KV_STATUS_LAST; s++) {
    if (s == DSV4KV_WARN_SKIPPED || s == DSV4KV_WARN_NONFINITE) continue;
    assert_int_equal(dsv4kv_is_error((dsv4kv_status)s), 1);
    /* every status up to the last has its own name */
    assert_non_null(strstr(dsv4kv_status_string((dsv4kv_status)s), "DSV4KV_"));
  }
  assert_string_equal(dsv4kv_status_string((dsv4kv_status)(DSV4KV_STATUS_LAST + 1)), "unknown dsv4kv status");
}

static void version_and_backends(void **state) {
  (void)state;
  char want[32];
  snprintf(want, sizeof want, "%d.%d.%d", DSV4KV_VERSION_MAJOR, DSV4KV_VERSION_MINOR, DSV4KV_VERSION_PATCH);
  assert_string_equal(dsv4kv_version(), want);
  assert_int_equal(dsv4kv_backend_available(kDLCPU), 1);
  assert_int_equal(dsv4kv_backend_available((DLDeviceType)1000), 0);
}

static void records(void **state) {
  (void)state;
  static const struct {
    dsv4kv_record r;
    const char *name;
    int32_t bytes;
  } want[] = {{DSV4KV_RECORD_V4, "V4", DSV4KV_V4_BYTES_PER_TOKEN},
              {DSV4KV_RECORD_MXFP8, "MXFP8", DSV4KV_MXFP8_BYTES_PER_TOKEN},
              {DSV4KV_RECORD_NVFP4, "NVFP4", DSV4KV_NVFP4_BYTES_PER_TOKEN},
              {DSV4KV_RECORD_INDEXER_FP8, "INDEXER_FP8", DSV4KV_INDEXER_FP8_BYTES_PER_TOKEN},
              {DSV4KV_RECORD_INDEXER_MXFP4, "INDEXER_MXFP4", DSV4KV_INDEXER_MXFP4_BYTES_PER_TOKEN}};
  for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
    assert_string_equal(dsv4kv_record_name(want[i].r), want[i].name);
    assert_int_equal(dsv4kv_record_bytes(want[i].r), want[i].bytes);
  }
  assert_int_equal(DSV4KV_V4_BYTES_PER_TOKEN, 584);
  assert_int_equal(DSV4KV_NVFP4_BYTES_PER_TOKEN, 288);
  assert_string_equal(dsv4kv_record_name((dsv4kv_record)9), "unknown");
  assert_int_equal(dsv4kv_record_bytes((dsv4kv_record)9), 0);
  /* a failed lookup leaves a message; a good one clears it */
  dsv4kv_record r;
  assert_status(dsv4kv_record_from_width(100, &r), DSV4KV_ERR_FORMAT);
  assert_non_null(strstr(dsv4kv_last_error(), "bytes_per_token"));
  assert_status(dsv4kv_record_from_width(528, &r), DSV4KV_OK);
  assert_int_equal(r, DSV4KV_RECORD_MXFP8);
  assert_string_equal(dsv4kv_last_error(), "");
}

static void struct_sizes(void **state) {
  (void)state;
  assert_int_equal(dsv4kv_struct_size("dsv4kv_options"), sizeof(dsv4kv_options));
  assert_int_equal(dsv4kv_struct_size("dsv4kv_cache_desc"), sizeof(dsv4kv_cache_desc));
  assert_int_equal(dsv4kv_struct_size("dsv4kv_report"), sizeof(dsv4kv_report));
  assert_int_equal(dsv4kv_struct_size("dsv4kv_flashinfer_args"), sizeof(dsv4kv_flashinfer_args));
  assert_int_equal(dsv4kv_struct_size("dsv4kv_model_desc"), sizeof(dsv4kv_model_desc));
  assert_int_equal(dsv4kv_struct_size("dsv4kv_nothing"), 0);
  assert_int_equal(dsv4kv_struct_size(NULL), 0);
}

/* An insert of 3 rows into a 2-page V4 cache: row 0 NaN-bearing, row 1 to a
 * slot past the cache, row 2 valid; the report must say what the status and
 * the counters say. */
static void report_matches_status(void **state) {
  (void)state;
  enum { T = 3, BS = 4, PAGES = 2 };
  uint16_t *k = calloc((size_t)T * 512, sizeof *k);
  uint8_t *cache = calloc((size_t)PAGES * BS * 584, 1);
  for (int i = 0; i < T * 512; i++) k[i] = 0x3F80;
  k[5] = 0x7FC0; /* NaN */
  int64_t slots[T] = {0, PAGES * BS + 3, 5};
  tview kv, sv, cv;
  tv_2d(&kv, k, dt_bf16(), T, 512, 512);
  tv_1d(&sv, slots, dt_i64(), T);
  tv_2d(&cv, cache, dt_u8(), PAGES, BS * 584, BS * 584);
  dsv4kv_cache_desc desc = {DSV4KV_RECORD_V4, DSV4KV_FP8_OCP, BS, 0, 0};
  for (int check = 0; check < 2; check++) {
    dsv4kv_report rep;
    memset(&rep, 0x5A, sizeof rep); /* poisoned: every field must be written */
    int64_t skipped = -1, nonfinite = -1;
    dsv4kv_options opt = {&skipped, &nonfinite, check, 1, NULL, &rep, 0};
    dsv4kv_status st = dsv4kv_quantize_and_insert_k_cache(&kv.t, &cv.t, &desc, &sv.t, &opt);
    assert_status(st, DSV4KV_WARN_SKIPPED);
    assert_int_equal(rep.skipped, 1);
    assert_int_equal(skipped, 1);
    assert_int_equal(rep.nonfinite, check ? 1 : 0);
    assert_int_equal(nonfinite, check ? 1 : 0);
    assert_int_equal(dsv4kv_report_status(&rep), st);
    char msg[512];
    size_t n = dsv4kv_report_message(&rep, msg, sizeof msg);
    assert_int_equal(n, strlen(msg));
    assert_string_equal(msg, dsv4kv_last_error());
    assert_non_null(strstr(msg, "slot_mapping[1] = 11"));
    /* a short buffer is truncated, NUL-terminated, and the full length told */
    char small[8];
    assert_int_equal(dsv4kv_report_message(&rep, small, sizeof small), n);
    assert_int_equal(strlen(small), 7);
  }
  { /* an error (k's width) leaves every out-parameter as it was (the header) */
    dsv4kv_report rep;
    memset(&rep, 0x5A, sizeof rep);
    const dsv4kv_report before = rep;
    int64_t skipped = 12, nonfinite = 7;
    dsv4kv_options opt = {&skipped, &nonfinite, 1, 1, NULL, &rep, 0};
    tview narrow;
    tv_2d(&narrow, k, dt_bf16(), T, 256, 512);
    assert_status(dsv4kv_quantize_and_insert_k_cache(&narrow.t, &cv.t, &desc, &sv.t, &opt), DSV4KV_ERR_SHAPE);
    assert_int_equal(skipped, 12);
    assert_int_equal(nonfinite, 7);
    assert_memory_equal(&rep, &before, sizeof rep);
  }
  /* only the NaN row: NONFINITE, and the report's message names k */
  slots[1] = -1;
  dsv4kv_report rep;
  dsv4kv_options opt = {NULL, NULL, 1, 1, NULL, &rep, 0};
  assert_status(dsv4kv_quantize_and_insert_k_cache(&kv.t, &cv.t, &desc, &sv.t, &opt), DSV4KV_WARN_NONFINITE);
  assert_int_equal(dsv4kv_report_status(&rep), DSV4KV_WARN_NONFINITE);
  char msg[512];
  dsv4kv_report_message(&rep, msg, sizeof msg);
  assert_string_equal(msg, dsv4kv_last_error());
  assert_true(strncmp(msg, "k holds 1 NaN/Inf", 17) == 0);
  /* clean call: OK, empty message */
  k[5] = 0x3F80;
  assert_status(dsv4kv_quantize_and_insert_k_cache(&kv.t, &cv.t, &desc, &sv.t, &opt), DSV4KV_OK);
  assert_int_equal(dsv4kv_report_status(&rep), DSV4KV_OK);
  assert_int_equal(dsv4kv_report_message(&rep, msg, sizeof msg), 0);
  assert_string_equal(msg, "");
  assert_int_equal(dsv4kv_report_status(NULL), DSV4KV_ERR_NULL);
  /* a NULL buffer only asks for the length, whatever len says */
  slots[1] = 999;
  dsv4kv_quantize_and_insert_k_cache(&kv.t, &cv.t, &desc, &sv.t, &opt);
  size_t need = dsv4kv_report_message(&rep, NULL, 0);
  assert_true(need > 0);
  assert_int_equal(dsv4kv_report_message(&rep, NULL, 100), need);
  assert_int_equal(dsv4kv_report_message(NULL, NULL, 100), strlen("report is NULL"));
  /* a report no call wrote (negative counts, unknown op or reason): refused,
   * never read as "nothing happened"; a zeroed one is OK */
  const dsv4kv_report good = rep;
  const struct { int64_t skipped, nonfinite; int32_t op, reason; } bad[] = {
      {-1, 0, 1, 0}, {0, -5, 1, 0}, {INT64_MIN, INT64_MIN, 1, 1}, {1, 0, 7, 1}, {1, 0, -1, 1}, {1, 0, 1, 15},
      {0, 0, 1, -2}};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    rep = good;
    rep.skipped = bad[i].skipped, rep.nonfinite = bad[i].nonfinite, rep.op = bad[i].op, rep.reason = bad[i].reason;
    assert_status(dsv4kv_report_status(&rep), DSV4KV_ERR_VALUE);
    assert_non_null(strstr(dsv4kv_last_error(), "not a report a call wrote"));
    assert_true(dsv4kv_report_message(&rep, msg, sizeof msg) > 0);
    assert_non_null(strstr(msg, "not a report a call wrote"));
  }
  memset(&rep, 0, sizeof rep);
  assert_int_equal(dsv4kv_report_status(&rep), DSV4KV_OK);
  free(k);
  free(cache);
}

/* dsv4kv_warmup: nothing to load on the CPU; a negative CUDA device id is
 * named as such, before the backend is asked. */
static void warmup_cpu_and_bad_device(void **state) {
  (void)state;
  int32_t ratios[4] = {0, 4, 128, 4}, loaded = -1;
  dsv4kv_model_desc m = {4, ratios, 512, 128, {DSV4KV_RECORD_V4, DSV4KV_FP8_OCP, 64, 0, 0},
                         {DSV4KV_RECORD_INDEXER_FP8, DSV4KV_FP8_OCP, 64, 0, 0}};
  assert_status(dsv4kv_warmup(&m, (DLDevice){kDLCPU, 0}, &loaded), DSV4KV_OK);
  assert_int_equal(loaded, 0);
  assert_status(dsv4kv_warmup(&m, (DLDevice){kDLCUDA, -1}, &loaded), DSV4KV_ERR_DEVICE);
  assert_non_null(strstr(dsv4kv_last_error(), "device.device_id = -1 is negative"));
}

/* The tensor on another device than the rest is the one the message names. */
static void device_mismatch_names_odd_tensor(void **state) {
  (void)state;
  uint16_t k[512] = {0};
  uint8_t cache[584 * 4];
  int64_t slots[1] = {0};
  tview kv, sv, cv;
  tv_2d(&kv, k, dt_bf16(), 1, 512, 512);
  tv_1d(&sv, slots, dt_i64(), 1);
  tv_2d(&cv, cache, dt_u8(), 1, 4 * 584, 4 * 584);
  dsv4kv_cache_desc desc = {DSV4KV_RECORD_V4, DSV4KV_FP8_OCP, 4, 0, 0};
  kv.t.device.device_type = kDLCUDA; /* never dereferenced: refused first */
  assert_status(dsv4kv_quantize_and_insert_k_cache(&kv.t, &cv.t, &desc, &sv.t, NULL), DSV4KV_ERR_DEVICE);
  assert_true(strncmp(dsv4kv_last_error(), "k is on cuda:0", 14) == 0);
  kv.t.device.device_type = kDLCPU;
  cv.t.device.device_type = kDLCUDA;
  assert_status(dsv4kv_quantize_and_insert_k_cache(&kv.t, &cv.t, &desc, &sv.t, NULL), DSV4KV_ERR_DEVICE);
  assert_true(strncmp(dsv4kv_last_error(), "k_cache is on cuda:0", 20) == 0);
  /* all on CUDA: this build has no CUDA backend */
  kv.t.device.device_type = kDLCUDA;
  sv.t.device.device_type = kDLCUDA;
  assert_status(dsv4kv_quantize_and_insert_k_cache(&kv.t, &cv.t, &desc, &sv.t, NULL),
                dsv4kv_backend_available(kDLCUDA) ? DSV4KV_OK : DSV4KV_ERR_BACKEND_NOT_BUILT);
}

static void cpu_paths(void **state) {
  (void)state;
  int n = dsv4kv_cpu_path_count();
  assert_true(n >= 1);
  assert_string_equal(dsv4kv_cpu_path_name(0), "scalar");
  assert_null(dsv4kv_cpu_path_name(n));
  assert_null(dsv4kv_cpu_path_name(-1));
  for (int i = 0; i < n; i++) {
    assert_status(dsv4kv_cpu_path_select(dsv4kv_cpu_path_name(i)), DSV4KV_OK);
    assert_string_equal(dsv4kv_cpu_path_current(), dsv4kv_cpu_path_name(i));
  }
  assert_status(dsv4kv_cpu_path_select("avx9000"), DSV4KV_ERR_VALUE);
  assert_non_null(strstr(dsv4kv_last_error(), "avx9000"));
  assert_status(dsv4kv_cpu_path_select(NULL), DSV4KV_OK);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(status_is_error),        cmocka_unit_test(version_and_backends),
      cmocka_unit_test(records),                cmocka_unit_test(struct_sizes),
      cmocka_unit_test(report_matches_status),  cmocka_unit_test(device_mismatch_names_odd_tensor),
      cmocka_unit_test(warmup_cpu_and_bad_device),
      cmocka_unit_test(cpu_paths),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
