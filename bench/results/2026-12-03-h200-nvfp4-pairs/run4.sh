#!/usr/bin/env bash
# A/B of the paired-compare e2m1 encoders (NVFP4 insert, MXFP4 indexer store):
# A = build-ab/ins/base (`git archive HEAD`, no golden files), B = this tree.
# B: build, exhaustive conversions, registry (insert, indexer: 8 rounds; each
# duplicate-slot way forced), golden files, memcheck of the registry's nvfp4 /
# mxfp4 cases; then alternated benches (A, B, B, A, ...) of the NVFP4 insert
# and the MXFP4 and FP8 indexer stores (run 22: every insert record, the decode kernels; run 23: inserts and gathers, streaming stores).   usage: bash build-ab/ins/run.sh ROUNDS
set -uo pipefail
root=$(pwd); ab=$root/build-ab/ins; rounds=${1:-3}; BENCH_END=${BENCH_END:-330}
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
cfg=(-DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 -DDSV4KV_WITH_CUDA=ON -DCMAKE_PREFIX_PATH="$deps/usr" -DDLPACK_INCLUDE_DIR="$deps/usr/include")
( cmake -S "$ab/base" -B "$ab/base/bg" "${cfg[@]}" -DDSV4KV_BUILD_TESTS=OFF >"$log/cfg-A.log" 2>&1 &&
  cmake --build "$ab/base/bg" -j8 --target dsv4kv_cli >"$log/build-A.log" 2>&1; echo $? >"$log/build-A.rc" ) &
( cmake -S "$root" -B "$root/build-gpu" "${cfg[@]}" >"$log/cfg-B.log" 2>&1 &&
  cmake --build "$root/build-gpu" -j8 --target dsv4kv_cli ops_registry exhaustive_cuda test_cuda >"$log/build-B.log" 2>&1; echo $? >"$log/build-B.rc" ) &
wait
echo "build done at $((SECONDS - t0)) s: A rc $(cat $log/build-A.rc), B rc $(cat $log/build-B.rc)"
[ "$(cat $log/build-B.rc)" = 0 ] || { grep -m10 -i error "$log/build-B.log"; tail -5 "$log/build-B.log"; exit 1; }
B=$root/build-gpu; A=$ab/base/bg
st=ok
chk() { # chk NAME CMD...: log to NAME.log, print its last line
  local n=$1; shift
  timeout 150 "$@" >"$log/$n.log" 2>&1; local rc=$?
  [ $rc = 0 ] || st="$st FAIL($n rc $rc)"
  echo "$n: rc $rc: $(tail -n1 "$log/$n.log" | cut -c1-150)"
}
chk conversions "$B/tests/exhaustive_cuda"
grep -E "identical|MISMATCH" "$log/conversions.log"
chk reg_insert "$B/tests/ops_registry" --backend cuda --filter insert --rounds 8
chk reg_gather "$B/tests/ops_registry" --backend cuda --filter gather --rounds 8
chk reg_mark env DSV4KV_CUDA_DEDUP=mark "$B/tests/ops_registry" --backend cuda --filter in --rounds 3
chk reg_global env DSV4KV_CUDA_DEDUP=global "$B/tests/ops_registry" --backend cuda --filter dup --rounds 3
chk reg_shared env DSV4KV_CUDA_DEDUP=shared "$B/tests/ops_registry" --backend cuda --filter in --rounds 3
chk golden "$B/dsv4kv" verify --device cuda tests/golden
chk memcheck_insert compute-sanitizer --tool memcheck --error-exitcode 99 "$B/tests/ops_registry" --backend cuda --filter insert
chk memcheck_gather compute-sanitizer --tool memcheck --error-exitcode 99 "$B/tests/ops_registry" --backend cuda --filter gather
chk memcheck_mark env DSV4KV_CUDA_DEDUP=mark compute-sanitizer --tool memcheck --error-exitcode 99 "$B/tests/ops_registry" --backend cuda --filter dup
chk racecheck_insert compute-sanitizer --tool racecheck --error-exitcode 99 "$B/tests/ops_registry" --backend cuda --filter insert
chk cuda_tests "$B/tests/test_cuda"
echo "checks: $st at $((SECONDS - t0)) s"
[ "$(cat $log/build-A.rc)" = 0 ] || { echo "A did not build"; tail -5 "$log/build-A.log"; exit 1; }
order=(A B); done_rounds=0
for i in $(seq 1 $rounds); do
  [ $((SECONDS - t0)) -lt $BENCH_END ] || { echo "bench: round $i not started (time)"; break; }
  for s in "${order[@]}"; do
    bin=$B/dsv4kv; [ $s = A ] && bin=$A/dsv4kv
    timeout 60 "$bin" bench --device cuda --op insert --json "$log/bench-ins-$s-$i.json" >"$log/bench-ins-$s-$i.txt" 2>&1 || echo "bench ins $s $i failed"
    timeout 60 "$bin" bench --device cuda --op gather --json "$log/bench-idx-$s-$i.json" >"$log/bench-idx-$s-$i.txt" 2>&1 || echo "bench idx $s $i failed"
  done
  order=("${order[1]}" "${order[0]}"); done_rounds=$i
done
echo "bench done at $((SECONDS - t0)) s ($done_rounds rounds)"
python3 - "$log" $done_rounds <<'PY'
import json, sys, statistics, glob
log, rounds = sys.argv[1], int(sys.argv[2])
def rows(o):
    if isinstance(o, dict):
        if 'config' in o and 'graph_us' in o: yield o
        for v in o.values(): yield from rows(v)
    elif isinstance(o, list):
        for v in o: yield from rows(v)
tab = {}
for s in 'AB':
    for f in sorted(glob.glob('%s/bench-*-%s-*.json' % (log, s))):
        try: d = json.load(open(f))
        except Exception: continue
        for r in rows(d): tab.setdefault(r['config'], {}).setdefault(s, []).append((r.get('graph_us'), r.get('eager_us'), r.get('pct_copy_graph')))
print('config | A graph us (rounds) | B graph us (rounds) | med A -> med B | B % copy (graph)')
for c, v in tab.items():
    a = [x[0] for x in v.get('A', []) if x[0]]; b = [x[0] for x in v.get('B', []) if x[0]]
    pb = [x[2] for x in v.get('B', []) if x[2]]
    if not a or not b: continue
    print('%s | %s | %s | %.2f -> %.2f (%+.1f %%) | %s' % (c, ' '.join('%.2f' % x for x in a), ' '.join('%.2f' % x for x in b),
          statistics.median(a), statistics.median(b), 100 * (statistics.median(b) / statistics.median(a) - 1),
          '%.1f' % statistics.median(pb) if pb else '-'))
PY
echo "total $((SECONDS - t0)) s"
