#!/bin/bash
# usage: run.sh "v1 v2 .." ROUNDS bench-args...
vars=$1; rounds=$2; shift 2
rm -rf /tmp/ab/out; mkdir -p /tmp/ab/out
for i in $(seq 1 $rounds); do for v in $vars; do
  LD_LIBRARY_PATH=/tmp/ab/$v /work/main/build/dsv4kv bench --device cpu "$@" --json /tmp/ab/out/$v-$i.json >/dev/null 2>&1 || echo fail $v $i
done; done
python3 - $vars <<'PY'
import json,glob,sys,statistics
vs=sys.argv[1:]; tab={}
for v in vs:
  for f in glob.glob('/tmp/ab/out/%s-*.json'%v):
    for r in json.load(open(f))['results']:
      tab.setdefault(r['config'],{}).setdefault(v,[]).append(r['median_us'] if 'median_us' in r else r.get('us'))
for c,d in tab.items():
  print('%-62s'%c[:62], ' '.join('%s %9.1f'%(v,statistics.median(d[v])) for v in vs if v in d))
PY
