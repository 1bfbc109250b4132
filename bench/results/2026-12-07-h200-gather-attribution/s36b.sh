#!/bin/bash
# session 36: (1) the gathers' five-setting A/B on this card (gather.sh),
# (2) DSV4KV_CUDA_GATHER_TURNS 1 / 2 / 4 on the decode and large gathers,
# 3 alternated rounds at decode sizes, (3) stop 35's final checks (final.sh) and memcheck
# of the gathers with 4 turns
set -u
C=$1
mkdir -p $OUT/gather $OUT/final
OUT=$OUT/gather bash .gpu-session/gather.sh $C
export LD_LIBRARY_PATH=/tmp/dsv4kv-deps-$(id -u)/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
for i in 1 2 3; do
  for k in 1 2 4; do
    DSV4KV_CUDA_GATHER_TURNS=$k timeout 60 build-gpu/dsv4kv bench --device cuda --op gather --sizes decode --min-runs 20 2>&1 | sed "s/^/T$k.$i /" >> $OUT/turns.txt
  done
done
grep -E "^T[0-9]\.[0-9] gather" $OUT/turns.txt | cut -c1-150
{ for k in 2 4; do echo "== registry gather, $k turns"; DSV4KV_CUDA_GATHER_TURNS=$k timeout 60 build-gpu/tests/ops_registry --backend cuda --filter gather --rounds 2 2>&1 | tail -1; done
  echo "== memcheck gather, 4 turns"; DSV4KV_CUDA_GATHER_TURNS=4 timeout 60 compute-sanitizer --tool memcheck --error-exitcode 1 build-gpu/tests/ops_registry --backend cuda --filter gather --rounds 1 2>&1 | tail -2
} 2>&1 | tee $OUT/turns-registry.txt
OUT=$OUT/final bash .gpu-session/final.sh $C
