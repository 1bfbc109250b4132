#!/bin/bash
# the gathers' block budget and L2 prefetch on this card: build (gpu-check
# quick: build and golden only), the registry (every case 1 round; the new
# slot-run insert cases in each duplicate way), the gathers under each
# setting, then alternated rounds of the large gathers under five settings
set -u
export DSV4KV_COMMIT=$1
O=$OUT
g=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo "GPU: $g" | tee "$O/gpu.txt"
nvidia-smi --query-gpu=driver_version,clocks.max.sm --format=csv >> "$O/gpu.txt"
mkdir -p /tmp/chk
GPU_CHECK_SKIP="registry registry_variants registry_dedup_shared registry_dedup_mark registry_dedup_global registry_dedup_fused registry_index_narrow registry_distinct cuda_tests conversions run run_distinct run_trace bench bench_report bound launch_floor python_install python_tests" \
  STEP_TIMEOUT=200 OUT=/tmp/chk scripts/gpu-check.sh quick > "$O/check.log" 2>&1
tail -8 "$O/check.log"
export LD_LIBRARY_PATH=/tmp/dsv4kv-deps-$(id -u)/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
R=build-gpu/tests/ops_registry
S=("" "DSV4KV_CUDA_GATHER_PREFETCH=0" "DSV4KV_CUDA_GATHER_BLOCKS=2048" "DSV4KV_CUDA_GATHER_PREFETCH=0 DSV4KV_CUDA_GATHER_BLOCKS=2048" "DSV4KV_CUDA_GATHER_BLOCKS=4096")
{
echo "== registry insert, 1 round"; timeout 60 $R --backend cuda --filter insert --rounds 1 2>&1 | tail -1
for v in "" "DSV4KV_CUDA_DEDUP=warp" "DSV4KV_CUDA_DEDUP=shared" "DSV4KV_CUDA_DEDUP=mark" "DSV4KV_CUDA_DEDUP=global"; do
  echo "== registry slot_runs [$v]"; env $v timeout 60 $R --backend cuda --filter slot_runs --rounds 2 2>&1 | tail -1
done
for v in "${S[@]}"; do echo "== registry gather [$v]"; env $v timeout 60 $R --backend cuda --filter gather --rounds 1 2>&1 | tail -1; done
} 2>&1 | tee "$O/registry.txt"
for i in 1 2; do
  for k in 0 1 2 3 4; do
    env ${S[$k]} timeout 60 build-gpu/dsv4kv bench --device cuda --op gather --sizes large --min-runs 10 2>&1 | sed "s/^/S$k.$i /" >> "$O/ab.txt"
  done
done
grep -E "^S[0-4]\.[0-9] gather" "$O/ab.txt" | cut -c1-170 | head -80
