#!/usr/bin/env bash
# Nsight Compute profiles of the large-size kernels, for bench/NOTES-gpu.md:
# where the inserts' and the indexer store's time goes.  Run after
# scripts/gpu-check.sh (any mode) has built build-gpu/ in the same command, so
# that its dependencies are unpacked.  Writes to $OUT (or build-gpu/out/):
#   durations.csv  every mark / insert / indexer kernel's duration, grid and
#                  block, one launch of each launch configuration (the mark
#                  kernels timed apart from the op);
#   stalls-OP.txt  the op kernel's speed of light, occupancy, warp states
#                  (stall reasons) and memory tables at each launch size;
#   sass-OP.csv    the same kernel's stall samples by SASS instruction;
#   summary-OP.txt the durations and, for the largest launch, the stall
#                  samples by reason and the SASS lines that hold the most
#                  (scripts/ncu_summary.py).
# ncu runs with --clock-control none (the clocks left as they are) and its
# default cache control (L2 flushed before each profiled kernel: cold figures,
# a little slower than the bench's).  The decode_* forms profile the first
# launch of the decode-size kernel (64 rows) with the caches left as they are
# (--cache-control none: a graph replay finds its few inputs in L2); the
# prefill_* forms the first launch at T 4096, top-k 512, likewise (the
# anchor's graph figures at that size are L2-warm).
#   sass-all.txt.gz every kernel's SASS (cuobjdump), for instruction counts.
#   usage: scripts/gpu-profile.sh [insert_v4 insert_mxfp8 insert_nvfp4 indexer_fp8 ...
#                                  decode_insert_REC decode_indexer_REC decode_combine
#                                  prefill_combine prefill_global_topk]
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root" || exit 2
B=build-gpu
[ -x "$B/dsv4kv" ] || { echo "gpu-profile: no $B/dsv4kv (run scripts/gpu-check.sh first)" >&2; exit 2; }
dest=${OUT:-$B/out}
mkdir -p "$dest"
prefix=/tmp/dsv4kv-deps-$(id -u)/usr
[ -d "$prefix" ] && export LD_LIBRARY_PATH="$prefix/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
ncu=(ncu --clock-control none --filter-mode per-launch-config)
"${ncu[0]}" --version | tail -n 1 | tee "$dest/ncu-version.txt"
fast=(--min-runs 1 --min-seconds 0)
ops=${*:-insert_v4 insert_mxfp8 insert_nvfp4 indexer_fp8 indexer_mxfp4}
fail=0
for op in $ops; do
  cache=()
  case $op in decode_* | prefill_*) cache=(--cache-control none) ;; esac
  case $op in
    insert_*) args=(--op insert --record "${op#insert_}" --sizes large) kernel=${op}_kernel ;;
    indexer_*) args=(--op indexer --record "${op#indexer_}" --sizes prefill) kernel="${op}(_fused)?_kernel" ;;
    decode_insert_* | decode_indexer_*)
      o=${op#decode_} && args=(--op "${o%%_*}" --record "${o#*_}" --sizes decode) kernel=${o}_decode_kernel ;;
    decode_combine) args=(--op combine --sizes decode) kernel=combine_kernel ;;
    prefill_combine) args=(--op combine --sizes prefill) kernel=combine_warp_kernel ;;
    prefill_global_topk) args=(--op global_topk --sizes prefill) kernel=global_topk_warp_pow2_kernel ;;
    *) echo "gpu-profile: unknown op '$op'" >&2; exit 2 ;;
  esac
  echo "== $op: durations"
  "${ncu[@]}" "${cache[@]}" -c 1 -k "regex:mark_|$kernel\$" --metrics gpu__time_duration.sum,launch__grid_size,launch__block_size,launch__registers_per_thread \
    --csv --page raw "$B/dsv4kv" bench --device cuda "${args[@]}" "${fast[@]}" >"$dest/durations-$op.csv" 2>"$dest/ncu-$op.err" || fail=1
  python3 scripts/ncu_summary.py durations "$dest/durations-$op.csv" | tee "$dest/summary-$op.txt"
  echo "== $op: warp states"
  "${ncu[@]}" "${cache[@]}" -c 1 -k "regex:$kernel\$" --section SpeedOfLight --section Occupancy --section LaunchStats \
    --section WarpStateStats --section SchedulerStats --section MemoryWorkloadAnalysis_Tables \
    "$B/dsv4kv" bench --device cuda "${args[@]}" "${fast[@]}" >"$dest/stalls-$op.txt" 2>>"$dest/ncu-$op.err" || fail=1
  grep -E 'Duration|Grid Size|Registers|Achieved Occupancy|Memory Throughput|DRAM Throughput|Compute \(SM\)|Warp Cycles Per Issued|Issued Warp|No Eligible|Stall|stall' \
    "$dest/stalls-$op.txt" | head -n 60
  "${ncu[@]}" "${cache[@]}" -c 1 -k "regex:$kernel\$" --section SourceCounters --section WarpStateStats --page source --print-source sass --csv \
    "$B/dsv4kv" bench --device cuda "${args[@]}" "${fast[@]}" >"$dest/sass-$op.csv" 2>>"$dest/ncu-$op.err" || fail=1
  python3 scripts/ncu_summary.py stalls "$dest/sass-$op.csv" | tee -a "$dest/summary-$op.txt"
done
cuobjdump -sass "$B/libdsv4kv.so" 2>"$dest/cuobjdump.err" | gzip >"$dest/sass-all.txt.gz" || fail=1
exit $fail
