#!/usr/bin/env bash
# Reads ctest logs (and pytest -rs output) and prints the count of the tests
# that did not run, then one line for each thing they need, naming them (the
# last lines of scripts/test.sh).
set -uo pipefail
names=$(cat "$@" 2>/dev/null | sed -n 's/^[[:space:]]*[0-9]* - \([^ ]*\) (Skipped)$/\1/p' | sort -u)
# pytest: "SKIPPED [1] test_x.py:12: reason" -> "pytest:test_x.py (reason)"
py=$(cat "$@" 2>/dev/null | sed -n 's/^SKIPPED \[[0-9]*\] \([^:]*\):[0-9]*: \(.*\)$/pytest:\1 (\2)/p' | sort -u)
cuda_on=$(sed -n 's/^DSV4KV_WITH_CUDA:BOOL=//p' build/CMakeCache.txt 2>/dev/null)
if [ -z "$names" ] && [ -z "$py" ]; then
  echo "dsv4kv tests: 0 skipped"
  exit 0
fi
hint() {
  case "$1" in
    sim_run_trace*) echo "the serving traces: scripts/fetch_traces.sh, or DSV4KV_TRACES=DIR" ;;
    verify_golden*) echo "golden files: tests/golden, or DSV4KV_GOLDEN=DIR" ;;
    ops_cuda | ops_cuda_*_distinct | cuda_graph_streams | cuda_conversions_exhaustive)
      if [ "$cuda_on" = ON ]; then
        echo "a GPU of compute capability 9.0+ with its driver (the Release build has the CUDA backend)"
      else
        echo "a CUDA build (nvcc) and a GPU of compute capability 9.0+ with its driver"
      fi ;;
    ops_cpu_paths* | cpu_paths_exhaustive | cpu_indexer_paths)
      echo "a SIMD CPU path this processor runs (avx2: AVX2, FMA and F16C; avx512: AVX-512 F/BW/VL)" ;;
    *plot*) echo "gnuplot (apt-get install gnuplot-nox)" ;;
    *fuzz*|*libfuzzer*) echo "clang with libFuzzer (apt-get install clang)" ;;
    *json*) echo "python3" ;;
    *) echo "see the test's output" ;;
  esac
}
# One line a reason, the tests that need it after it (a name skipped in
# several suites counts once).
n=0
declare -A by_reason=()
order=()
for t in $names; do
  r=$(hint "$t")
  [ -n "${by_reason[$r]+x}" ] || order+=("$r")
  by_reason[$r]="${by_reason[$r]:+${by_reason[$r]}, }$t"
  n=$((n + 1))
done
pyn=0
while IFS= read -r line; do
  [ -n "$line" ] && pyn=$((pyn + 1))
done <<<"$py"
echo "dsv4kv tests: $((n + pyn)) skipped (never counted as passed):"
for r in "${order[@]}"; do echo "  needs ${r}: ${by_reason[$r]}"; done
[ -n "$py" ] && sed 's/^/  /' <<<"$py"
exit 0
