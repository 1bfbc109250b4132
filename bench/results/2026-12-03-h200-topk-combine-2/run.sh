#!/usr/bin/env bash
# A/B of global top-k and combine variants (build-ab/tk/ship/ovl/<v> overlays on
# build-ab/tk/ship/base, `git archive HEAD` without tests/golden): build, registry
# (global_topk and combine: 8 rounds, 2 at 32 threads a row, 2 at 64), golden
# (tests/golden of the carried repo, also at 64 threads), alternated benches of
# --op global_topk and --op combine, memcheck of the registry (both filters,
# default and 32 threads) of every passing variant while time is left.
# usage: bash build-ab/tk/ship/run.sh "v1 v2" ROUNDS   (from the repo root)
set -uo pipefail
root=$(pwd); ab=$root/build-ab/tk/ship; vars=${1:-"v1 v2"}; rounds=${2:-3}
BENCH_END=${BENCH_END:-120}; MC_END=${MC_END:-150}   # seconds: no bench round / memcheck starts after these
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
golden="tests/golden/global_topk_*.safetensors tests/golden/combine_*.safetensors"
ok=""
for tr in $trees; do
  B=$ab/$tr/bg; st=ok; line="$tr:"
  [ "$(cat $log/build-$tr.rc)" = 0 ] || { echo "$tr: BUILD FAILED"; grep -m5 -i "error" "$log/build-$tr.log"; tail -5 "$log/build-$tr.log"; continue; }
  for f in global_topk combine; do
    timeout 120 "$B/tests/ops_registry" --backend cuda --filter $f --rounds 8 >"$log/reg-$f-$tr.log" 2>&1 || st="$st FAIL(reg $f)"
    DSV4KV_CUDA_INDEX_THREADS=32 timeout 120 "$B/tests/ops_registry" --backend cuda --filter $f --rounds 2 >"$log/reg32-$f-$tr.log" 2>&1 || st="$st FAIL(reg32 $f)"
    DSV4KV_CUDA_INDEX_THREADS=64 timeout 120 "$B/tests/ops_registry" --backend cuda --filter $f --rounds 2 >"$log/reg64-$f-$tr.log" 2>&1 || st="$st FAIL(reg64 $f)"
    line="$line | $f reg: $(tail -n1 $log/reg-$f-$tr.log | cut -c1-40) / 32: $(tail -n1 $log/reg32-$f-$tr.log | cut -c1-40) / 64: $(tail -n1 $log/reg64-$f-$tr.log | cut -c1-40)"
  done
  timeout 120 "$B/dsv4kv" verify --device cuda $golden >"$log/golden-$tr.log" 2>&1 || st="$st FAIL(golden)"
  DSV4KV_CUDA_INDEX_THREADS=64 timeout 120 "$B/dsv4kv" verify --device cuda $golden >"$log/golden64-$tr.log" 2>&1 || st="$st FAIL(golden64)"
  echo "$tr: $st $line | golden: $(tail -n1 $log/golden-$tr.log | cut -c1-40) / 64: $(tail -n1 $log/golden64-$tr.log | cut -c1-40)"
  [ "$st" = ok ] && ok="$ok $tr"
  [ "$st" = ok ] || { grep -m8 -i "fail\|mismatch" "$log"/reg*-$tr.log "$log"/golden*-$tr.log; }
done
echo "checks done at $((SECONDS - t0)) s; benching:$ok"
order=($ok); done_rounds=0
for i in $(seq 1 $rounds); do
  [ $((SECONDS - t0)) -lt $BENCH_END ] || { echo "bench: round $i not started (time)"; break; }
  for tr in "${order[@]}"; do
    for op in global_topk combine; do
      timeout 60 "$ab/$tr/bg/dsv4kv" bench --device cuda --op $op --json "$log/bench-$op-$tr-$i.json" >"$log/bench-$op-$tr-$i.txt" 2>&1 || echo "bench $op $tr $i failed"
    done
  done
  order=("${order[@]:1}" "${order[0]}"); done_rounds=$i   # rotate: each tree takes each place in turn
done
echo "bench done at $((SECONDS - t0)) s ($done_rounds rounds)"
python3 - "$log" $done_rounds $ok <<'PY'
import json, sys, statistics
log, rounds, trees = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
def rows(o):
    if isinstance(o, dict):
        if 'config' in o and 'graph_us' in o: yield o
        for v in o.values(): yield from rows(v)
    elif isinstance(o, list):
        for v in o: yield from rows(v)
tab = {}
for op in ('global_topk', 'combine'):
    for tr in trees:
        for i in range(1, rounds + 1):
            try: d = json.load(open('%s/bench-%s-%s-%d.json' % (log, op, tr, i)))
            except Exception: continue
            for r in rows(d): tab.setdefault(r['config'], {}).setdefault(tr, []).append((r['graph_us'], r['eager_us']))
print('graph us per round (eager us in brackets); med: median of the graph figures; d: med - base med')
for c in tab:
    if 'global_topk' not in c and 'combine' not in c: continue
    print(c)
    b = statistics.median([x[0] for x in tab[c].get('base', [])]) if tab[c].get('base') else None
    for tr in trees:
        v = tab[c].get(tr, [])
        if not v: continue
        m = statistics.median([x[0] for x in v])
        print('   %-5s ' % tr + '  '.join('%6.2f (%5.1f)' % x for x in v) + '   med %6.2f' % m + ('   d %+6.2f' % (m - b) if b is not None else ''))
# memcheck order: the variants by their mean ratio to base over the T=4096 rows
score = {}
for c in tab:
    if 'T=4096' not in c or not tab[c].get('base'): continue
    b = statistics.median([x[0] for x in tab[c]['base']])
    for tr in trees:
        if tr != 'base' and tab[c].get(tr): score.setdefault(tr, []).append(statistics.median([x[0] for x in tab[c][tr]]) / b)
rank = sorted(score, key=lambda t: sum(score[t]) / len(score[t]))
print('rank (mean ratio to base at T=4096): ' + ', '.join('%s %.3f' % (t, sum(score[t]) / len(score[t])) for t in rank))
open(log + '/rank.txt', 'w').write(' '.join(rank + [t for t in trees if t != 'base' and t not in rank]) + '\n')
PY
mc=$(cat "$log/rank.txt" 2>/dev/null || echo "$ok")
for tr in $mc; do
  [ "$tr" = base ] && continue
  B=$ab/$tr/bg
  for f in global_topk combine; do
    for th in 0 32; do
      [ $((SECONDS - t0)) -lt $MC_END ] || { echo "$tr $f $th: memcheck not started (time)"; continue; }
      if [ $th = 0 ]; then env -u DSV4KV_CUDA_INDEX_THREADS timeout 30 compute-sanitizer --tool memcheck --error-exitcode 99 "$B/tests/ops_registry" --backend cuda --filter $f >"$log/memcheck-$f-$th-$tr.log" 2>&1
      else DSV4KV_CUDA_INDEX_THREADS=$th timeout 30 compute-sanitizer --tool memcheck --error-exitcode 99 "$B/tests/ops_registry" --backend cuda --filter $f --rounds 1 >"$log/memcheck-$f-$th-$tr.log" 2>&1; fi
      echo "$tr: memcheck $f threads=$th rc=$? ($(tail -n1 $log/memcheck-$f-$th-$tr.log | cut -c1-80)) at $((SECONDS - t0)) s"
    done
  done
done
cp "$log"/machine.txt "$OUT"/ 2>/dev/null
tar czf "$OUT/ab-logs.tar.gz" -C "$ab" logs
echo "total $((SECONDS - t0)) s"
