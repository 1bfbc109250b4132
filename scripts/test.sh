#!/usr/bin/env bash
# The README's test command: installs what is missing, builds, runs every test;
# then builds a second tree, build-asan, with AddressSanitizer + UndefinedBehavior-
# Sanitizer (every report fatal) and runs its suite without the long trace
# replays; then a third, build-clang, with clang and its UndefinedBehavior-
# Sanitizer (no CUDA), and its suite without them.  Every suite runs whatever the first one gives; the exit
# status is non-zero when any fails.  Tests that cannot run here (no golden set, no
# traces) exit 77 and ctest lists them as skipped in each.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
jobs=$(nproc)
start=$SECONDS
failed=()

# 1. The normal (Release) build, every test.
scripts/build.sh
logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT
(cd build && ctest --output-on-failure -j"$jobs" | tee "$logs/release.log") || failed+=("build (Release, all tests)")
normal_s=$((SECONDS - start))

# 2. The sanitizer build.  RelWithDebInfo: -O2 keeps the suite quick under the
# sanitizers, -g gives the reports file:line.  -fno-sanitize-recover=all makes
# every UBSan finding abort the test instead of printing and carrying on.
san="-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer"
# Without a GPU its CUDA tests cannot run: the sanitizer tree then leaves
# the CUDA backend out (the Release tree above still compiles it).
asan_cuda=OFF
if nvidia-smi -L >/dev/null 2>&1; then asan_cuda=ON; fi
asan_ok=1
cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DDSV4KV_WITH_CUDA=$asan_cuda -DCMAKE_C_FLAGS="$san" \
  -DCMAKE_EXE_LINKER_FLAGS="$san" -DCMAKE_SHARED_LINKER_FLAGS="$san" >/dev/null || asan_ok=0
if [ "$asan_ok" = 1 ]; then
  cmake --build build-asan -j"$jobs" || asan_ok=0
fi
if [ "$asan_ok" = 1 ]; then
  # Leak checking stays on: libgomp's thread pool is still reachable at exit
  # and is not reported (checked with the fuzz_api run, which uses 1-3
  # threads).  ASan and UBSan print stack traces; a report exits non-zero.
  (cd build-asan &&
    ASAN_OPTIONS="detect_leaks=1:strict_string_checks=1:detect_stack_use_after_return=1${ASAN_OPTIONS:+:$ASAN_OPTIONS}" \
    UBSAN_OPTIONS="print_stacktrace=1${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}" \
    ctest --output-on-failure -j"$jobs" -LE long | tee "$logs/asan.log") || asan_ok=0
fi
[ "$asan_ok" = 1 ] || failed+=("build-asan (ASan + UBSan, ctest -LE long)")

# 3. clang: the library and its tests build and pass with it too (its
# __builtin_cpu_supports takes fewer feature names than gcc's: "f16c" once
# stopped a clang 14 build of the library), under clang's UndefinedBehavior-
# Sanitizer, whose pointer-overflow check gcc's lacks (arithmetic on a null
# pointer, even + 0, once passed unseen).
clang_start=$SECONDS
ubsan="-fsanitize=undefined -fno-sanitize-recover=all -fno-omit-frame-pointer"
if cmake -S . -B build-clang -DCMAKE_C_COMPILER=clang -DCMAKE_BUILD_TYPE=RelWithDebInfo -DDSV4KV_WITH_CUDA=OFF \
  -DCMAKE_C_FLAGS="$ubsan" -DCMAKE_EXE_LINKER_FLAGS="$ubsan" -DCMAKE_SHARED_LINKER_FLAGS="$ubsan" \
  >"$logs/clang-build.log" 2>&1 && cmake --build build-clang -j"$jobs" >>"$logs/clang-build.log" 2>&1; then
  (cd build-clang && UBSAN_OPTIONS="print_stacktrace=1${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}" \
    ctest --output-on-failure -j"$jobs" -LE long | tee "$logs/clang.log") ||
    failed+=("build-clang (clang, ctest -LE long)")
else
  tail -n 30 "$logs/clang-build.log"
  failed+=("build-clang (clang: configure or build)")
fi

# 4. The install as a user meets it: a temporary prefix, the examples built
# against it with find_package and with pkg-config, the relocated tree.
install_start=$SECONDS
DSV4KV_BUILD_DIR=build scripts/check_install.sh || failed+=("install check (scripts/check_install.sh)")

# 5. The Python package as a user installs it: a fresh virtual environment
# with numpy, ml_dtypes, safetensors and pytest from PyPI, `pip install .`
# (scikit-build-core builds the library again, inside the package), and the
# pytest suite (tests/python) against that installed package.
py_start=$SECONDS
venv=build-py/venv
if python3 -m venv --clear "$venv" && "$venv/bin/pip" install -q numpy ml_dtypes safetensors pytest &&
  "$venv/bin/pip" install -q . ; then
  if ! (cd tests/python && DSV4KV_EXPECT_INSTALLED=1 "../../$venv/bin/python" -m pytest -q -rs -p no:cacheprovider .) \
    2>&1 | tee "$logs/pytest.log"; then
    failed+=("Python package (pytest tests/python)")
  fi
else
  failed+=("Python package (pip install .)")
fi

echo "dsv4kv tests: Release build and suite ${normal_s} s, sanitizer build and suite $((clang_start - start - normal_s)) s, clang build and suite $((install_start - clang_start)) s, install check $((py_start - install_start)) s, Python package $((SECONDS - py_start)) s"
if [ ${#failed[@]} -gt 0 ]; then
  printf 'dsv4kv tests FAILED in: %s\n' "${failed[@]}"
  scripts/skipped_summary.sh "$logs/release.log" "$logs/asan.log" "$logs/clang.log" "$logs/pytest.log"
  exit 1
fi
echo "dsv4kv tests: all passed (the three builds, the install and the Python package)"
scripts/skipped_summary.sh "$logs/release.log" "$logs/asan.log" "$logs/clang.log" "$logs/pytest.log"
