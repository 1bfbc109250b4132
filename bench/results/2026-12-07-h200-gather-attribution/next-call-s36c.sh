#!/bin/bash
# The next H200 call (written at stop 36, when the device's loans were
# paused): gpu-check full at the commit given (without run_trace, python,
# ctest: ~5 min), its bench for a new h200.md table, then the large gathers
# under DSV4KV_CUDA_GATHER_TURNS 1 / 4 and DSV4KV_CUDA_GATHER_PAIR=1, 2
# alternated rounds (predicted: NVFP4 8 x 8192 ~5 % faster with 4 turns, as
# run 52's 2048 blocks; pair unknown: NVFP4 now has no prefetch to keep a
# second record in flight).  Copy to .gpu-session/ and run with
# carry [".deps", ".gpu-traces", ".gpu-session"].
set -u
export DSV4KV_COMMIT=$1
mkdir -p $OUT/check
GPU_CHECK_SKIP="run_trace python_install python_tests ctest" OUT=$OUT/check scripts/gpu-check.sh full > $OUT/check.log 2>&1
tail -40 $OUT/check.log
export LD_LIBRARY_PATH=/tmp/dsv4kv-deps-$(id -u)/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
S=("DSV4KV_CUDA_GATHER_TURNS=1" "DSV4KV_CUDA_GATHER_TURNS=4" "DSV4KV_CUDA_GATHER_PAIR=1")
for i in 1 2; do
  for k in 0 1 2; do
    env ${S[$k]} timeout 60 build-gpu/dsv4kv bench --device cuda --op gather --sizes large --min-runs 10 2>&1 | sed "s/^/G$k.$i /" >> $OUT/gather-large.txt
  done
done
grep -E "^G[0-9]\.[0-9] gather" $OUT/gather-large.txt | awk '{printf "%s %s %s graph=%s eager=%s pctg=%s\n",$1,$2,$3,$7,$5,$11}' | sort -k2,3 -k1,1
