#!/usr/bin/env bash
# A/B of the flashinfer-indices variants (build-ab/fi/ship/ovl/<v> overlays on
# build-ab/fi/ship/base, a copy of HEAD): build, registry (8 rounds, and 2 at
# 32 threads a row), golden, alternated benches, memcheck of MEMCHECK trees.
# usage: bash build-ab/fi/ship/run.sh "v1 v2" ROUNDS
set -uo pipefail
root=$(pwd); ab=$root/build-ab/fi/ship; vars=${1:-"v1 v2"}; rounds=${2:-3}
log=$ab/logs; rm -rf "$log"; mkdir -p "$log"
export PATH=$PATH:/usr/local/cuda/bin
t0=$SECONDS
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader | tee "$log/machine.txt"
deps=/tmp/dsv4kv-deps-$(id -u); rm -rf "$deps"
for f in .deps/*.deb; do dpkg -x "$f" "$deps"; done
grep -rl '"/usr/' "$deps/usr/lib/x86_64-linux-gnu/cmake/cJSON" | xargs -r sed -i "s|\"/usr/|\"$deps/usr/|g"
rm -rf "$deps/usr/lib/x86_64-linux-gnu/cmake/dlpack"
lib="$deps/usr/lib/x86_64-linux-gnu"
export LD_LIBRARY_PATH="$lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" LIBRARY_PATH="$lib${LIBRARY_PATH:+:$LIBRARY_PATH}"
export CPATH="$deps/usr/include${CPATH:+:$CPATH}"
trees="base"
for v in $vars; do rm -rf "$ab/$v"; mkdir -p "$ab/$v"; cp -r "$ab/base/." "$ab/$v/"; cp -r "$ab/ovl/$v/." "$ab/$v/"; trees="$trees $v"; done
n=$(echo $trees | wc -w); j=$(( $(nproc) / n )); [ $j -lt 2 ] && j=2
for tr in $trees; do
  ( cmake -S "$ab/$tr" -B "$ab/$tr/bg" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 -DDSV4KV_WITH_CUDA=ON \
      -DCMAKE_PREFIX_PATH="$deps/usr" -DDLPACK_INCLUDE_DIR="$deps/usr/include" >"$log/cfg-$tr.log" 2>&1 &&
    cmake --build "$ab/$tr/bg" -j$j --target dsv4kv_cli ops_registry >"$log/build-$tr.log" 2>&1; echo $? >"$log/build-$tr.rc" ) &
done
wait
echo "build done at $((SECONDS - t0)) s"
ok=""
for tr in $trees; do
  B=$ab/$tr/bg; st=ok
  [ "$(cat $log/build-$tr.rc)" = 0 ] || { echo "$tr: BUILD FAILED"; grep -m5 -i "error" "$log/build-$tr.log"; tail -5 "$log/build-$tr.log"; continue; }
  timeout 240 "$B/tests/ops_registry" --backend cuda --filter flashinfer --rounds 8 >"$log/reg-$tr.log" 2>&1 || st="FAIL(reg)"
  DSV4KV_CUDA_INDEX_THREADS=32 timeout 240 "$B/tests/ops_registry" --backend cuda --filter flashinfer --rounds 2 >"$log/reg32-$tr.log" 2>&1 || st="$st FAIL(reg32)"
  timeout 240 "$B/dsv4kv" verify --device cuda tests/golden/flashinfer_*.safetensors >"$log/golden-$tr.log" 2>&1 || st="$st FAIL(golden)"
  echo "$tr: $st | reg: $(tail -n1 $log/reg-$tr.log | cut -c1-60) | reg32: $(tail -n1 $log/reg32-$tr.log | cut -c1-60) | golden: $(tail -n1 $log/golden-$tr.log | cut -c1-60)"
  [ "$st" = ok ] && ok="$ok $tr"
  [ "$st" = ok ] || { grep -m8 -i "fail\|mismatch" "$log/reg-$tr.log" "$log/reg32-$tr.log" "$log/golden-$tr.log"; }
done
echo "checks done at $((SECONDS - t0)) s; benching:$ok"
for i in $(seq 1 $rounds); do
  for tr in $ok; do
    "$ab/$tr/bg/dsv4kv" bench --device cuda --op flashinfer --json "$log/bench-$tr-$i.json" >"$log/bench-$tr-$i.txt" 2>&1 || echo "bench $tr $i failed"
  done
done
echo "bench done at $((SECONDS - t0)) s"
python3 - "$log" $rounds $ok <<'PY'
import json, sys
log, rounds, trees = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
def rows(o):
    if isinstance(o, dict):
        if 'config' in o and 'graph_us' in o: yield o
        for v in o.values(): yield from rows(v)
    elif isinstance(o, list):
        for v in o: yield from rows(v)
tab = {}
for tr in trees:
    for i in range(1, rounds + 1):
        try: d = json.load(open('%s/bench-%s-%d.json' % (log, tr, i)))
        except Exception as e: continue
        for r in rows(d): tab.setdefault(r['config'], {}).setdefault(tr, []).append((r['graph_us'], r['eager_us']))
print('graph us per round (eager us in brackets)')
for c in tab:
    if 'flashinfer' not in c: continue
    print(c)
    for tr in trees:
        v = tab[c].get(tr, [])
        print('   %-5s ' % tr + '  '.join('%6.2f (%5.1f)' % x for x in v))
PY
for tr in ${MEMCHECK:-}; do
  case " $ok " in *" $tr "*) ;; *) continue;; esac
  B=$ab/$tr/bg
  timeout ${MCT:-90} compute-sanitizer --tool memcheck --error-exitcode 99 "$B/tests/ops_registry" --backend cuda --filter flashinfer >"$log/memcheck-$tr.log" 2>&1
  echo "$tr: memcheck rc=$? ($(tail -n1 $log/memcheck-$tr.log | cut -c1-100)) at $((SECONDS - t0)) s"
done
cp "$log"/machine.txt "$OUT"/ 2>/dev/null
tar czf "$OUT/ab-logs.tar.gz" -C "$ab" logs
echo "total $((SECONDS - t0)) s"
