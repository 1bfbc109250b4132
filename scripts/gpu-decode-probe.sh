#!/usr/bin/env bash
# Where the decode-size calls' time goes on the GPU (bench/NOTES-gpu.md):
# builds build-gpu/ (scripts/gpu-check.sh bench, no timing), then
#   ab-base.txt     with BASE (a .tar.gz of another tree, e.g. `git archive` of
#                   the commit before a change): BASE (A) against this tree (B)
#   durations.csv   every kernel's duration at decode sizes, one launch of each
#                   launch configuration (Nsight Compute, clocks as they are)
#   stalls-*.txt    warp states and source counters of the insert and indexer
#                   decode kernels
# into $OUT (or build-gpu/out/).
#   usage: scripts/gpu-decode-probe.sh [BASE.tar.gz]
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root" || exit 2
GPU_CHECK_SKIP="bench bench_report bound" scripts/gpu-check.sh bench >/dev/null 2>&1
[ -x build-gpu/dsv4kv ] || { echo "gpu-decode-probe: the build failed" >&2; tail -30 build-gpu/out/build.log; exit 1; }
dest=${OUT:-build-gpu/out}
mkdir -p "$dest"
export LD_LIBRARY_PATH=/tmp/dsv4kv-deps-$(id -u)/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
if [ $# -ge 1 ]; then
  base=/tmp/dsv4kv-ab-base
  rm -rf "$base" && mkdir -p "$base" && tar xzf "$1" -C "$base" &&
    scripts/gpu-ab.sh "$base" 3 --sizes decode >"$dest/ab-base.txt" 2>&1
fi
fast=(--sizes decode --min-runs 1 --min-seconds 0)
ncu=(ncu --clock-control none --filter-mode per-launch-config)
"${ncu[@]}" --metrics gpu__time_duration.sum,launch__grid_size,launch__block_size,launch__registers_per_thread,smsp__inst_executed.sum,smsp__warps_launched.sum \
  --csv --page raw build-gpu/dsv4kv bench --device cuda "${fast[@]}" >"$dest/durations.csv" 2>"$dest/ncu.err"
for k in insert_mxfp8 insert_v4 indexer_fp8; do
  case $k in insert_*) a=(--op insert --record "${k#insert_}") ;; *) a=(--op indexer --record fp8) ;; esac
  "${ncu[@]}" -c 2 -k "regex:${k}_(decode|row)?_?kernel\$" --section SpeedOfLight --section Occupancy --section LaunchStats \
    --section WarpStateStats --section SchedulerStats --section SourceCounters \
    build-gpu/dsv4kv bench --device cuda "${a[@]}" "${fast[@]}" >"$dest/stalls-$k.txt" 2>>"$dest/ncu.err"
done
ls -la "$dest"
