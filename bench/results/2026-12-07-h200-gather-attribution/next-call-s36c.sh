#!/bin/bash
# session 36, second call: gpu-check full at the NVFP4-no-prefetch commit
# (without run_trace, python, ctest), then DSV4KV_CUDA_GATHER_TURNS 1 / 4
# on the large gathers, 2 alternated rounds
set -u
export DSV4KV_COMMIT=$1
mkdir -p $OUT/check
GPU_CHECK_SKIP="run_trace python_install python_tests ctest" OUT=$OUT/check scripts/gpu-check.sh full > $OUT/check.log 2>&1
tail -40 $OUT/check.log
export LD_LIBRARY_PATH=/tmp/dsv4kv-deps-$(id -u)/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
cp build-gpu/out/bench.json build-gpu/out/bench-report.json build-gpu/out/bench.log $OUT/ 2>/dev/null
for i in 1 2; do
  for k in 1 4; do
    DSV4KV_CUDA_GATHER_TURNS=$k timeout 60 build-gpu/dsv4kv bench --device cuda --op gather --sizes large --min-runs 10 2>&1 | sed "s/^/T$k.$i /" >> $OUT/turns-large.txt
  done
done
grep -E "^T[0-9]\.[0-9] gather" $OUT/turns-large.txt | awk '{printf "%s %s %s graph=%s eager=%s pctg=%s\n",$1,$2,$3,$7,$5,$11}' | sort -k2,3 -k1,1
