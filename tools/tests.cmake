# Tests of the dsv4kv CLI (the verify command and its safetensors reader).
# Included from tools/CMakeLists.txt; sources live in tests/cli/ so that the
# tests/test_*.c glob of the library's cmocka suite does not pick them up.
set(DSV4KV_CLI_TEST_DIR ${PROJECT_SOURCE_DIR}/tests/cli)

# verify_golden: the whole golden set must pass.  The golden directory is,
# in this order: $DSV4KV_GOLDEN at test time; the repository's tests/golden;
# ../shared/golden beside the checkout.  A $DSV4KV_GOLDEN naming no golden
# files fails; with none of them the wrapper exits 77 and ctest reports the
# test as skipped.
add_test(NAME verify_golden
  COMMAND sh ${DSV4KV_CLI_TEST_DIR}/verify_golden.sh $<TARGET_FILE:dsv4kv_cli>
          ${PROJECT_SOURCE_DIR}/tests/golden ${PROJECT_SOURCE_DIR}/../shared/golden)
set_tests_properties(verify_golden PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 600)

if(DSV4KV_BUILD_TESTS)
  find_package(cmocka REQUIRED)

  # The reader on its own: malformed files rejected cleanly, one round trip.
  add_executable(cli_test_safetensors
    ${DSV4KV_CLI_TEST_DIR}/test_safetensors.c
    ${DSV4KV_CLI_TEST_DIR}/st_write.c
    ${CMAKE_CURRENT_SOURCE_DIR}/safetensors.c)
  target_include_directories(cli_test_safetensors PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}
    ${DSV4KV_CLI_TEST_DIR})
  target_link_libraries(cli_test_safetensors PRIVATE dsv4kv cjson cmocka)
  add_test(NAME cli_safetensors COMMAND cli_test_safetensors)

  # The command as a user runs it: exit codes, PASS/FAIL lines, summary.
  add_executable(cli_test_verify
    ${DSV4KV_CLI_TEST_DIR}/test_verify_cli.c
    ${DSV4KV_CLI_TEST_DIR}/st_write.c)
  target_include_directories(cli_test_verify PRIVATE ${DSV4KV_CLI_TEST_DIR})
  target_link_libraries(cli_test_verify PRIVATE dsv4kv cmocka)
  add_test(NAME cli_verify COMMAND cli_test_verify $<TARGET_FILE:dsv4kv_cli>)
endif()

# Hostile inputs (tests/cli/test_verify_hostile.c, trace_input.sh): files and
# traces sized or typed to exhaust memory, time or patience must fail fast.
if(DSV4KV_BUILD_TESTS)
  add_executable(cli_test_verify_hostile
    ${DSV4KV_CLI_TEST_DIR}/test_verify_hostile.c
    ${DSV4KV_CLI_TEST_DIR}/st_write.c)
  target_include_directories(cli_test_verify_hostile PRIVATE ${DSV4KV_CLI_TEST_DIR})
  target_link_libraries(cli_test_verify_hostile PRIVATE cmocka)
  add_test(NAME cli_verify_hostile COMMAND cli_test_verify_hostile $<TARGET_FILE:dsv4kv_cli>)
  set_tests_properties(cli_verify_hostile PROPERTIES TIMEOUT 600)
  add_test(NAME cli_trace_input
    COMMAND sh ${DSV4KV_CLI_TEST_DIR}/trace_input.sh $<TARGET_FILE:dsv4kv_cli>)
  set_tests_properties(cli_trace_input PROPERTIES TIMEOUT 300)
endif()

# dsv4kv bench: the decode-size table, its JSON, the usage errors.
add_test(NAME cli_bench COMMAND sh ${DSV4KV_CLI_TEST_DIR}/bench_cli.sh $<TARGET_FILE:dsv4kv_cli>)
set_tests_properties(cli_bench PROPERTIES TIMEOUT 120 ENVIRONMENT "OMP_WAIT_POLICY=passive")
