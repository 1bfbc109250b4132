#!/bin/sh
# dsv4kv bench as a user runs it: decode-size configurations with one run
# each (quick), the JSON's fields, the usage errors; --device cuda timed on a
# machine with a GPU, refused with status 2 and a message elsewhere.
#   bench_cli.sh DSV4KV_BINARY
set -u
bin=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

"$bin" bench --sizes decode --min-runs 1 --min-seconds 0 --json "$work/b.json" >"$work/out" 2>"$work/err" ||
  fail "bench --sizes decode exited $? ($(cat "$work/err"))"
grep -q "memcpy 256 MiB" "$work/out" || fail "no same-run memcpy ceiling in the table"
for cfg in "insert_v4 N=64" "insert_nvfp4 N=256" "gather_mxfp8 64x256" "compute_global_topk T=64 topk=512" \
  "combine_topk_swa T=256 topk=512 window=128 cr=4" "build_flashinfer_mixed T=64" "indexer_k_norm_rope_store fp4=True T=256"; do
  grep -q "^$cfg" "$work/out" || fail "config '$cfg' missing from the table"
done
python3 - "$work/b.json" <<'PY' || fail "the JSON"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["device"] == "cpu" and d["copy_gbps"] > 0, d
rows = d["results"]
assert len(rows) >= 17, len(rows)
for r in rows:
    assert r["bytes"] > 0 and r["median_us"] > 0 and r["gbps"] > 0 and r["runs"] >= 1, r
    assert abs(r["gbps"] - r["bytes"] / r["median_us"] / 1e3) < 1e-6 * r["gbps"], r
assert {r["op"] for r in rows} == {"insert", "gather", "global_topk", "combine", "flashinfer", "indexer"}
assert not any(r["paired"] for r in rows), "a decode-size row timed in pairs with the copy"
PY
# one file given as two outputs, or as the input and an output: refused before anything runs, the file kept
if command -v gnuplot >/dev/null 2>&1; then
  echo keep >"$work/same.png"
  "$bin" bench --op combine --sizes decode --min-runs 1 --min-seconds 0 --json "$work/same.png" \
    --plot "$work/./same.png" >/dev/null 2>"$work/err"
  [ $? -eq 2 ] && grep -q "name one file" "$work/err" || fail "--json and --plot naming one file: not refused"
  "$bin" bench --from-json "$work/same.png" --plot "$work/same.png" >/dev/null 2>"$work/err"
  [ $? -eq 2 ] && grep -q "is the --from-json file" "$work/err" || fail "--plot naming the --from-json file: not refused"
  "$bin" plot "$work/same.png" -o "$work/./same.png" >/dev/null 2>"$work/err"
  [ $? -eq 2 ] && grep -q "is the report" "$work/err" || fail "plot -o naming its report: not refused"
  [ "$(cat "$work/same.png")" = keep ] || fail "a refused call changed the file"
fi
# a standard output that cannot take the table: exit 2, said on stderr
if [ -w /dev/full ]; then
  "$bin" bench --op combine --sizes decode --min-runs 1 --min-seconds 0 >/dev/full 2>"$work/err"
  [ $? -eq 2 ] && grep -q "cannot write to standard output" "$work/err" || fail "bench >/dev/full: not exit 2 with a message"
  "$bin" version >/dev/full 2>/dev/null
  [ $? -eq 2 ] || fail "version >/dev/full: not exit 2"
fi
# configurations of 64 MiB or more: runs paired with memcpy runs, % copy the pairs' median ratio
"$bin" bench --op gather --record nvfp4 --sizes large --min-runs 2 --min-seconds 0 --json "$work/p.json" \
  >"$work/out" 2>&1 || fail "bench --sizes large exited $?"
grep -q "^gather_nvfp4 8x8192 .* p$" "$work/out" || fail "the large gather's row is not marked as paired"
python3 - "$work/p.json" <<'PY' || fail "the paired rows' JSON"
import json, sys
rows = json.load(open(sys.argv[1]))["results"]
assert len(rows) == 2 and all(r["paired"] and r["runs"] == 2 for r in rows), rows
for r in rows:
    assert r["copy_gbps"] > 0 and r["pct_copy"] > 0, r
    # the pairs' median ratio, in percent, near the ratio of the medians
    assert 0.2 < r["pct_copy"] / (100 * r["gbps"] / r["copy_gbps"]) < 5, r
PY
"$bin" bench --op global_topk --sizes prefill --min-runs 1 --min-seconds 0 --json "$work/w.json" >"$work/out" 2>&1 ||
  fail "bench --op global_topk --sizes prefill"
grep -q "^compute_global_topk T=4096 topk=1024, table of 2048 columns" "$work/out" || fail "no wide-table row"
python3 - "$work/w.json" <<'PY' || fail "the wide-table row's JSON"
import json, sys
rows = json.load(open(sys.argv[1]))["results"]
wide = [r for r in rows if r.get("table_columns") == 2048]
assert len(wide) == 1 and wide[0]["config"].endswith(", table of 2048 columns"), rows
assert all("table_columns" not in r for r in rows if r is not wide[0]), rows
PY
"$bin" bench --op gather --record nvfp4 --sizes decode --min-runs 1 --min-seconds 0 >"$work/out" 2>&1 ||
  fail "a filtered run"
[ "$(grep -c '^gather_' "$work/out")" -eq 1 ] || fail "--op gather --record nvfp4 --sizes decode: not one config"
# --device cuda: timed where a GPU runs the backend, else a clear refusal (2)
"$bin" bench --device cuda --op combine --sizes decode --min-runs 2 --min-seconds 0 --json "$work/g.json" \
  >"$work/out" 2>"$work/err"
rc=$?
if [ $rc -eq 0 ]; then
  python3 - "$work/g.json" <<'PY' || fail "the --device cuda JSON"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["device"] == "cuda" and d["copy_gbps"] > 0 and d["floor"], d
for r in d["results"]:
    assert r["eager_us"] > 0 and r["graph_us"] > 0 and r["host_us"] > 0 and r["calls_per_graph"] >= 1, r
    assert abs(r["gbps_graph"] - r["bytes"] / r["graph_us"] / 1e3) < 1e-6 * r["gbps_graph"], r
    assert r["ref_graph_us"] > 0 and r["speedup_graph"] > 0, r
assert len(d["results"]) == 2, len(d["results"])
PY
else
  [ $rc -eq 2 ] || fail "bench --device cuda without a GPU: exit status $rc, not 2"
  grep -q "cuda" "$work/err" || fail "bench --device cuda without a GPU: no message naming CUDA"
fi
# options in any order; the JSON alone on stdout with --json -
"$bin" bench --threads 1 --op combine --sizes decode --min-seconds 0 --min-runs 1 >/dev/null 2>"$work/err" ||
  fail "--threads before --min-runs ($(cat "$work/err"))"
# --threads 0: the default (the processors), as run's --threads 0 is the library's choice
"$bin" bench --threads 0 --op combine --sizes decode --min-seconds 0 --min-runs 1 >"$work/out" 2>"$work/err" ||
  fail "--threads 0 ($(cat "$work/err"))"
grep -q "cpu, $(nproc) thread" "$work/out" || fail "--threads 0: not the processors' count ($(head -1 "$work/out"))"
"$bin" bench --op combine --sizes decode --min-runs 1 --min-seconds 0 --json - 2>/dev/null >"$work/stdout.json" ||
  fail "--json -"
python3 -c "import json,sys; json.load(open(sys.argv[1]))" "$work/stdout.json" || fail "--json -: stdout is not JSON alone"
# --from-json: a hostile file draws nothing it should not (no gnuplot command of its text runs)
if command -v gnuplot >/dev/null 2>&1; then
  python3 - "$work" <<'PY'
import json, sys
w = sys.argv[1]
json.dump({"copy_gbps": 10, "device": "cpu", "cpu_path": "`touch %s/pwned1`" % w,
           "results": [{"op": "a\n!touch %s/pwned2 #" % w, "record": "b';system('touch %s/pwned3')#" % w,
                        "tokens": 64, "gbps": 1}]}, open(w + "/evil.json", "w"))
PY
  "$bin" bench --from-json "$work/evil.json" --plot "$work/evil.png" >/dev/null 2>&1
  ls "$work"/pwned* >/dev/null 2>&1 && fail "--from-json: a command in the JSON ran"
  [ -s "$work/evil.png" ] || fail "--from-json: the hostile file's plot was not drawn"
fi
# plot paths gnuplot would pipe into a command; a run report whose strings hold a
# data block's end and a shell escape; an existing plot left whole by a refused JSON
if command -v gnuplot >/dev/null 2>&1; then
  (cd "$work" && "$bin" bench --from-json evil.json --plot '|touch pwned4 #.png' >/dev/null 2>&1)
  [ $? -eq 2 ] || fail "--plot '|...': exit status not 2"
  "$bin" run --max-requests 3 --json "$work/run.json" >/dev/null 2>&1 || fail "run --json"
  python3 - "$work" <<'PY'
import json, sys
w = sys.argv[1]
d = json.load(open(w + "/run.json"))
d["runs"][0]["format"] = "\nEOD\n!touch %s/pwned5\n" % w
d["model"]["name"] = "x'\n!touch %s/pwned6" % w
json.dump(d, open(w + "/evil-run.json", "w"))
PY
  "$bin" plot "$work/evil-run.json" -o "$work/evil-run.png" >/dev/null 2>&1 || fail "plot of the hostile report"
  (cd "$work" && "$bin" plot run.json -o '|touch pwned7 #.png' >/dev/null 2>&1)
  [ $? -eq 2 ] || fail "plot -o '|...': exit status not 2"
  ls "$work"/pwned* >/dev/null 2>&1 && fail "a plot ran a command"
  echo keep >"$work/keep.png"
  echo '{"results": []}' >"$work/empty.json"
  "$bin" bench --from-json "$work/empty.json" --plot "$work/keep.png" >/dev/null 2>&1
  [ $? -eq 2 ] || fail "--from-json of no results: exit status not 2"
  echo '{' >"$work/broken.json"
  for f in "$work/broken.json" "$work/missing.json"; do # unreadable input: a usage error, as plot's
    "$bin" bench --from-json "$f" --plot "$work/keep.png" >/dev/null 2>&1
    [ $? -eq 2 ] || fail "--from-json $f: exit status not 2"
  done
  [ "$(cat "$work/keep.png")" = keep ] || fail "--from-json refused, yet the existing plot file was overwritten"
fi
for bad in "--device tpu" "--report" "--threads -1" "--threads 4294967297" "--min-runs 1x" "--min-seconds 1e999" \
  "--op nope" "--sizes huge" "stray" "--op insert --record fp8" "--from-json $work/b.json" \
  "--from-json $work/b.json --op gather --plot $work/x.png" "--plot $work/x.pdf"; do
  # shellcheck disable=SC2086
  "$bin" bench --sizes decode --min-runs 1 --min-seconds 0 $bad >/dev/null 2>"$work/err"
  [ $? -eq 2 ] || fail "bench $bad: exit status not 2"
  [ -s "$work/err" ] || fail "bench $bad: no message"
done
# a usage error is one line that names the option (and, for a choice, the choices)
for bad in "--bogus" "--json" "--op nope" "-x"; do
  # shellcheck disable=SC2086
  "$bin" bench $bad >/dev/null 2>"$work/err"
  [ $? -eq 2 ] || fail "bench $bad: exit status not 2"
  [ "$(wc -l <"$work/err")" -eq 1 ] || fail "bench $bad: not one line: $(cat "$work/err")"
  grep -q -- "${bad%% *}" "$work/err" || fail "bench $bad: the message does not name the option"
done
for cmd in bench run verify; do # a short option in a cluster: named by its letter (tools/main.c cli_option_error)
  "$bin" $cmd -qh >/dev/null 2>"$work/err"
  grep -q -- "'-q'" "$work/err" || fail "$cmd -qh: the message does not name -q: $(cat "$work/err")"
done
"$bin" bench --op nope >/dev/null 2>"$work/err"
grep -q "insert, gather, global_topk, combine, flashinfer, indexer, all" "$work/err" || fail "--op nope: the choices not listed"
echo "bench_cli: ok"
