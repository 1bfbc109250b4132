#!/bin/sh
# Builds one libFuzzer target with clang (ASan + UBSan, UB fatal) and runs it
# on a fresh copy of its committed seed corpus (tests/fuzz/corpus/TARGET/).
#   usage: run_libfuzzer.sh TARGET BUILD_DIR [libFuzzer options...]
#     TARGET     safetensors (fuzz_safetensors.c: reader + golden validation)
#                or trace (fuzz_trace.c: the --trace reader, both formats)
#     BUILD_DIR  the CMake build (libdsv4kv.so, include/dsv4kv_version.h);
#                the fuzzer lands in BUILD_DIR/fuzz/TARGET
#   e.g. run_libfuzzer.sh trace build -max_total_time=10
#        run_libfuzzer.sh safetensors build -runs=1000000
# Exit 77 (ctest: skipped, never passed) when clang or its libFuzzer runtime
# is missing (Debian: apt-get install clang); otherwise the fuzzer's status.
set -u
target=$1
build=$(cd "$2" && pwd)
shift 2
root=$(cd "$(dirname "$0")/../.." && pwd)
out=$build/fuzz/$target
mkdir -p "$out"

if ! command -v clang >/dev/null 2>&1; then
  echo "run_libfuzzer: SKIPPED: clang not found (Debian: apt-get install clang)"
  exit 77
fi
printf 'int LLVMFuzzerTestOneInput(const unsigned char *d, unsigned long n) { return 0; }\n' \
  >"$out/probe.c"
if ! clang -fsanitize=fuzzer,address,undefined "$out/probe.c" -o "$out/probe" 2>"$out/probe.log"; then
  echo "run_libfuzzer: SKIPPED: clang cannot link libFuzzer + ASan/UBSan here:"
  sed 's/^/  /' "$out/probe.log" | head -5
  exit 77
fi

flags="-std=c11 -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined
  -fno-omit-frame-pointer -Wall -Wextra -Wno-unused-parameter"
case $target in
safetensors)
  # The library is only linked (golden_check_file runs no op): the CMake build's.
  src="$root/tests/fuzz/fuzz_safetensors.c $root/tools/safetensors.c $root/tools/golden_case.c
    $root/tools/golden_compare.c $root/tools/golden_ops.c $root/tools/golden_device.c $root/tools/devmem.c
    $root/tools/opcall.c"
  extra="-I$root/tools -I$root/include -I$build/include -L$build -ldsv4kv -Wl,-rpath,$build" ;;
trace)
  src="$root/tests/fuzz/fuzz_trace.c $root/sim/trace.c $root/sim/files.c $root/sim/workload.c"
  extra="-I$root/sim -DSIM_TRACE_MAX_LINE=300" ;;
*)
  echo "run_libfuzzer: unknown target '$target' (safetensors or trace)"
  exit 2 ;;
esac
# shellcheck disable=SC2086
clang $flags $src $extra -lcjson -lm -o "$out/fuzz_$target" || exit 1

work=$out/corpus
rm -rf "$work"
mkdir -p "$work"
cp "$root/tests/fuzz/corpus/$target"/* "$work"/
echo "run_libfuzzer: $out/fuzz_$target $* (corpus: $(ls "$work" | wc -l) seeds)"
cd "$out" || exit 1 # crash-* / leak-* artifacts land here
UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  "./fuzz_$target" -dict="$root/tests/fuzz/$target.dict" -timeout=10 -rss_limit_mb=2048 \
  -print_final_stats=1 "$@" "$work"
