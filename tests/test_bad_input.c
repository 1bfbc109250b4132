/*
 * SPEC §7 errors and bad input, for every entry point:
 *   - argument errors return the specific status, name the argument in
 *     dsv4kv_last_error(), and read / write nothing (outputs keep their
 *     poison, guard bytes intact);
 *   - out-of-range index VALUES are skipped and counted (WARN_SKIPPED,
 *     opt.skipped), everything valid is still done, nothing outside the
 *     tensors is touched (all buffers are fenced: an access past the end
 *     faults, guard bytes below the start are checked).
 *
 * This file is the runner: the tests live in tests/bad_input/, one file an
 * op family, the shared helpers in bad_input.h and bad_input_support.c.
 */
#include "bad_input/bad_input.h"

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(sec7_insert_argument_errors),
      cmocka_unit_test(sec7_insert_bad_slot_values),
      cmocka_unit_test(sec7_gather_argument_errors),
      cmocka_unit_test(sec7_gather_bad_index_values),
      cmocka_unit_test(sec7_global_topk_argument_errors),
      cmocka_unit_test(sec7_global_topk_bad_index_values),
      cmocka_unit_test(sec7_combine_argument_errors),
      cmocka_unit_test(sec7_combine_bad_index_values),
      cmocka_unit_test(sec7_combine_alloc_errors),
      cmocka_unit_test(sec7_flashinfer_argument_errors),
      cmocka_unit_test(sec7_flashinfer_bad_index_values),
      cmocka_unit_test(sec7_indexer_argument_errors),
      cmocka_unit_test(sec7_indexer_bad_index_values),
      cmocka_unit_test(sec7_index_ops_strided_input_rejected_or_honoured),
      cmocka_unit_test(sec7_last_error_cleared_and_bool_as_uint8),
      cmocka_unit_test(sec7_last_error_is_thread_local),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
