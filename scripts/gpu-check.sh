#!/usr/bin/env bash
# Every GPU check of dsv4kv in one go, for a machine with an NVIDIA GPU of
# compute capability 9.0 or newer (the project's is an H200): builds with the
# CUDA backend (sm_90 + PTX) into build-gpu/, then runs
#   registry       every case of tests/ops on the GPU against the CPU, byte
#                  for byte, round 0 with the cases' seeds and 7 more rounds
#                  of fresh random shapes and values; again with each way of
#                  resolving duplicate slots forced (DSV4KV_CUDA_DEDUP), and
#                  with 32 threads a row for the index ops
#                  (DSV4KV_CUDA_INDEX_THREADS), a warp a row for them
#                  (DSV4KV_CUDA_INDEX_ROWS=warp) and the gathers' L2
#                  prefetch (DSV4KV_CUDA_GATHER_PREFETCH=1) forced, two
#                  tokens a warp for every gather (DSV4KV_CUDA_GATHER_PAIR=1), global
#                  top-k's table row in registers (DSV4KV_CUDA_TOPK_TABLE_REGS=1), and
#                  with distinct slots promised where a case's are
#                  (--distinct-slots)
#   golden         dsv4kv verify --device cuda tests/golden
#   cuda_tests     tests/cuda/test_cuda (graph capture and replay, two
#                  streams, offsets past 2^32, empty batches, warm-up)
#   conversions    tests/cuda/exhaustive_cuda: the kernels' hardware e4m3 /
#                  e2m1 / bf16 conversions against formats/ref.h on every input
#   memcheck       compute-sanitizer memcheck over the registry and test_cuda
#   racecheck      compute-sanitizer racecheck over the registry's duplicate-
#                  slot cases, the shared-memory duplicate scan forced;
#                  memcheck and synccheck of the indexer cases with the
#                  marks in the op's cooperative kernel forced (fused)
#   run, run_trace dsv4kv run --device cuda on the default workload and on a
#                  trace (DSV4KV_TRACES, else ../shared/traces, else
#                  .gpu-traces/), with each op's GPU time and GB/s;
#                  run_distinct: the default workload with --distinct-slots
#   python_*       pip install of the package, then tests/python with torch
#                  (golden files as CUDA tensors, CUDA = CPU, a torch graph)
#   ctest          the whole suite (-LE long) on a machine with a GPU, so
#                  ops_cuda and cuda_graph_streams run instead of skipping
#   bench          dsv4kv bench --device cuda, every configuration, without
#                  and (bench_report) with a device report per call; tables,
#                  JSON (plot them here with dsv4kv bench --from-json)
#   bound          bench/access_bound.cu: the inserts' and gathers' loads and
#                  stores alone, the bandwidth their access pattern allows
#   launch_floor   bench/launch_floor.cu: host and event time of an empty
#                  kernel's launch, the floor of every eager figure
# and prints a summary table last.  Logs go to build-gpu/out/ (and, when $OUT
# names a folder, as one archive gpu-check-logs.tar.gz plus summary.txt there).
#
#   usage: scripts/gpu-check.sh [full|quick|python|bench]
#          (quick: no sanitizers, no ctest; python: the Python steps alone;
#          bench: build and benchmarks alone)
#   env:   STEP_TIMEOUT (seconds a step may take, default 300), DSV4KV_COMMIT
#          (the commit to print when the tree is a copy without its .git),
#          GPU_CHECK_SKIP (step names not to run, e.g. "run_trace ctest")
#
# Needs cmake, nvcc, a C compiler, and cJSON / cmocka / dlpack: taken from the
# system, else unpacked from the Debian packages in .deps/ (not committed:
# scripts/gpu-deps.sh downloads them on a machine with apt; copy .deps/ with
# the checkout to a GPU machine that has no package registry).  Exit status:
# 0 when every step passed, 1 when one failed, 2 when it cannot start.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root" || exit 2
case ${1:-full} in
  full | quick | python | bench) mode=${1:-full} ;;
  *) echo "usage: scripts/gpu-check.sh [full|quick|python|bench]" >&2; exit 2 ;;
esac
export PATH=$PATH:/usr/local/cuda/bin
if ! nvidia-smi -L >/dev/null 2>&1; then
  echo "gpu-check: no NVIDIA GPU here (nvidia-smi -L failed)" >&2
  exit 2
fi
out=$root/build-gpu/out
rm -rf "$out"
mkdir -p "$out"

# ---- dependencies --------------------------------------------------------
prefix_args=(-DDSV4KV_WITH_CUDA=ON)
if [ -n "${DSV4KV_GPU_DEPS_FORCE:-}" ] || [ ! -f /usr/include/cjson/cJSON.h ] || [ ! -f /usr/include/cmocka.h ] ||
  [ ! -f /usr/include/dlpack/dlpack.h ]; then
  deps=${TMPDIR:-/tmp}/dsv4kv-deps-$(id -u) # outside the trees: CMake refuses exported paths inside them
  rm -rf "$deps"
  if ! ls .deps/*.deb >/dev/null 2>&1; then
    echo "gpu-check: cJSON, cmocka or dlpack missing and no .deps/*.deb to unpack (scripts/gpu-deps.sh)" >&2
    exit 2
  fi
  for f in .deps/*.deb; do dpkg -x "$f" "$deps"; done
  # cJSON's CMake files name /usr: point them at the unpacked tree; dlpack's
  # would hand out /usr/include, so it is found by its header instead
  grep -rl '"/usr/' "$deps/usr/lib/x86_64-linux-gnu/cmake/cJSON" | xargs -r sed -i "s|\"/usr/|\"$deps/usr/|g"
  rm -rf "$deps/usr/lib/x86_64-linux-gnu/cmake/dlpack"
  lib="$deps/usr/lib/x86_64-linux-gnu"
  export LD_LIBRARY_PATH="$lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  export LIBRARY_PATH="$lib${LIBRARY_PATH:+:$LIBRARY_PATH}"
  export CPATH="$deps/usr/include${CPATH:+:$CPATH}"
  prefix_args+=(-DCMAKE_PREFIX_PATH="$deps/usr" -DDLPACK_INCLUDE_DIR="$deps/usr/include")
fi

traces=${DSV4KV_TRACES:-}
[ -z "$traces" ] && [ -d ../shared/traces ] && traces=../shared/traces
[ -z "$traces" ] && [ -d .gpu-traces ] && traces=.gpu-traces
trace_file=${traces:+$traces/AzureLLMInferenceTrace_code_first15min.csv}

# ---- steps -----------------------------------------------------------------
names=() results=() secs=()
step() { # step NAME COMMAND...: output to $out/NAME.log, its tail shown on failure
  local name=$1
  shift
  case " ${GPU_CHECK_SKIP:-} " in *" $name "*)
    names+=("$name") results+=("not run (GPU_CHECK_SKIP)") secs+=(0)
    return ;;
  esac
  local t0=$SECONDS
  echo "== $name: $*"
  timeout "${STEP_TIMEOUT:-300}" "$@" >"$out/$name.log" 2>&1
  local rc=$?
  names+=("$name") secs+=($((SECONDS - t0)))
  if [ $rc -eq 0 ]; then results+=(ok); else results+=("FAIL ($rc)"); fi
  tail -n "$([ $rc -eq 0 ] && echo 3 || echo 30)" "$out/$name.log"
}

{
  date -u +"date: %Y-%m-%d %H:%M UTC"
  echo "commit: ${DSV4KV_COMMIT:-$(git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)}"
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader 2>&1 | sed 's/^/gpu: /'
  nvcc --version | tail -n 2 | sed 's/^/nvcc: /'
  echo "host: $(nproc) cores, $(uname -r)"
} | tee "$out/machine.txt"

if [ "$mode" != python ]; then
  step configure cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 "${prefix_args[@]}"
  step build cmake --build build-gpu -j"$(nproc)"
  B=build-gpu
fi
if [ "$mode" != python ] && [ "$mode" != bench ]; then
  step registry "$B/tests/ops_registry" --backend cuda --rounds 8
  # the duplicate-slot ways forced where the sizes would pick another
  step registry_dedup_shared env DSV4KV_CUDA_DEDUP=shared "$B/tests/ops_registry" --backend cuda --filter dup --rounds 4
  step registry_dedup_mark env DSV4KV_CUDA_DEDUP=mark "$B/tests/ops_registry" --backend cuda --rounds 4
  step registry_dedup_global env DSV4KV_CUDA_DEDUP=global "$B/tests/ops_registry" --backend cuda --filter dup --rounds 4
  # the indexer's marks inside its kernel (cooperative) at every size, not only past 1024 rows
  step registry_dedup_fused env DSV4KV_CUDA_DEDUP=fused "$B/tests/ops_registry" --backend cuda --filter indexer --rounds 4
  # the index ops at 32 threads a row: rows wider than a block holds at once
  step registry_index_narrow env DSV4KV_CUDA_INDEX_THREADS=32 "$B/tests/ops_registry" --backend cuda --rounds 2
  # the kernels the sizes pick past the registry's sizes, forced at its sizes:
  # a warp a row for the index ops, the gathers' records sent to L2 ahead
  # inserts and indexer stores with distinct slots passing options.distinct_slots (no duplicate resolution)
  step registry_distinct "$B/tests/ops_registry" --backend cuda --distinct-slots --rounds 4
  step registry_variants env DSV4KV_CUDA_INDEX_ROWS=warp DSV4KV_CUDA_GATHER_PREFETCH=1 "$B/tests/ops_registry" \
    --backend cuda --rounds 4
  # every record's gathers two tokens a warp (MXFP8's from 1024 rows by default; an A/B knob)
  step registry_gather_pair env DSV4KV_CUDA_GATHER_PAIR=1 "$B/tests/ops_registry" --backend cuda --filter gather \
    --rounds 4
  # global top-k with its block-table row in registers (an A/B experiment), a warp a row forced
  step registry_topk_regs env DSV4KV_CUDA_TOPK_TABLE_REGS=1 DSV4KV_CUDA_INDEX_ROWS=warp "$B/tests/ops_registry" \
    --backend cuda --filter global_topk --rounds 8
  step golden "$B/dsv4kv" verify --device cuda tests/golden
  step cuda_tests "$B/tests/test_cuda"
  step conversions "$B/tests/exhaustive_cuda"
  if [ "$mode" = full ]; then
    step memcheck_registry compute-sanitizer --tool memcheck --error-exitcode 99 "$B/tests/ops_registry" --backend cuda
    step memcheck_registry_mark env DSV4KV_CUDA_DEDUP=mark compute-sanitizer --tool memcheck --error-exitcode 99 \
      "$B/tests/ops_registry" --backend cuda --filter dup
    step memcheck_registry_fused env DSV4KV_CUDA_DEDUP=fused compute-sanitizer --tool memcheck --error-exitcode 99 \
      "$B/tests/ops_registry" --backend cuda --filter indexer
    step synccheck_registry_fused env DSV4KV_CUDA_DEDUP=fused compute-sanitizer --tool synccheck --error-exitcode 99 \
      "$B/tests/ops_registry" --backend cuda --filter indexer
    step memcheck_registry_topk_regs env DSV4KV_CUDA_TOPK_TABLE_REGS=1 DSV4KV_CUDA_INDEX_ROWS=warp \
      compute-sanitizer --tool memcheck --error-exitcode 99 "$B/tests/ops_registry" --backend cuda --filter global_topk
    step memcheck_registry_distinct compute-sanitizer --tool memcheck --error-exitcode 99 "$B/tests/ops_registry" \
      --backend cuda --distinct-slots --filter insert
    step memcheck_registry_variants env DSV4KV_CUDA_INDEX_ROWS=warp DSV4KV_CUDA_GATHER_PREFETCH=1 compute-sanitizer \
      --tool memcheck --error-exitcode 99 "$B/tests/ops_registry" --backend cuda
    step memcheck_registry_gather_pair env DSV4KV_CUDA_GATHER_PAIR=1 compute-sanitizer --tool memcheck \
      --error-exitcode 99 "$B/tests/ops_registry" --backend cuda --filter gather
    step memcheck_cuda_tests compute-sanitizer --tool memcheck --error-exitcode 99 "$B/tests/test_cuda"
    step racecheck_registry env DSV4KV_CUDA_DEDUP=shared compute-sanitizer --tool racecheck --error-exitcode 99 \
      "$B/tests/ops_registry" --backend cuda --filter dup
fi
step run "$B/dsv4kv" run --device cuda --json "$out/run.json"
step run_distinct "$B/dsv4kv" run --device cuda --distinct-slots --json "$out/run_distinct.json"
if [ -n "$trace_file" ] && [ -f "$trace_file" ]; then
  step run_trace "$B/dsv4kv" run --device cuda --trace "$trace_file" --json "$out/run_trace.json"
else
  names+=(run_trace) results+=("not run (no trace: set DSV4KV_TRACES)") secs+=(0)
fi

fi
if [ "$mode" != python ]; then
  step bench "$B/dsv4kv" bench --device cuda --json "$out/bench.json"
  step bench_report "$B/dsv4kv" bench --device cuda --report --json "$out/bench-report.json"
  # the bound the inserts' and gathers' accesses allow (no arithmetic)
  step bound sh -c "nvcc -O3 -arch=sm_90 -o '$B/access_bound' bench/access_bound.cu && '$B/access_bound'"
  step launch_floor sh -c "nvcc -O3 -arch=sm_90 -o '$B/launch_floor' bench/launch_floor.cu && '$B/launch_floor'"
fi
[ "$mode" = bench ] && skip_python=1
# The Python package: built by pip (no build isolation: no registry there),
# then tests/python with torch on the GPU (golden files as CUDA tensors, CUDA
# against CPU, a torch CUDA graph of a decode step).
[ -z "${skip_python:-}" ] && step python_install env CMAKE_ARGS="${prefix_args[*]}" python3 -m pip install -q --no-build-isolation --no-deps \
  --target build-gpu/py .
[ -z "${skip_python:-}" ] && step python_tests env PYTHONPATH=build-gpu/py python3 -m pytest -q -p no:cacheprovider tests/python
if [ "$mode" = full ]; then
  step ctest env OMP_WAIT_POLICY=passive ctest --test-dir "$B" -j8 -LE long --output-on-failure
else
  names+=(ctest) results+=("not run ($mode)") secs+=(0)
fi

echo
echo "summary ($(sed -n 's/^gpu: //p' "$out/machine.txt"))" | tee "$out/summary.txt"
fail=0
for i in "${!names[@]}"; do
  printf "  %-22s %-40s %5ss\n" "${names[$i]}" "${results[$i]}" "${secs[$i]}" | tee -a "$out/summary.txt"
  case ${results[$i]} in FAIL*) fail=1 ;; esac
done
if [ -n "${OUT:-}" ] && [ -d "$OUT" ]; then
  tar czf "$OUT/gpu-check-logs.tar.gz" -C "$root/build-gpu" out && cp "$out/summary.txt" "$OUT/"
  for f in bench.log bench.json bench_report.log bench-report.json bound.log; do [ -f "$out/$f" ] && cp "$out/$f" "$OUT/"; done
fi
exit $fail
