#!/bin/sh
# Tests of `dsv4kv run` (issue 3), one case per ctest entry (sim/tests.cmake).
#
#   run_case.sh CASE DSV4KV_BINARY WORK_DIR TRACES_DIR [ARGS...]
#
# Exit status: 0 pass, 1 fail, 77 skipped (ctest SKIP_RETURN_CODE): the trace
# cases skip when the trace directory ($DSV4KV_TRACES, else TRACES_DIR) or the
# file is missing.
set -u
case_name=$1
bin=$2
work=$3
traces=${DSV4KV_TRACES:-$4}
shift 4

mkdir -p "$work" || exit 1
out="$work/$case_name.out"
err="$work/$case_name.err"

fail() {
  echo "FAIL ($case_name): $*"
  echo "--- stdout (tail) ---"; tail -n 40 "$out" 2>/dev/null
  echo "--- stderr (tail) ---"; tail -n 20 "$err" 2>/dev/null
  exit 1
}

# run EXPECTED_STATUS ARGS...: runs `dsv4kv run ARGS`, checks the exit status.
run() {
  want=$1
  shift
  "$bin" run "$@" >"$out" 2>"$err"
  got=$?
  echo "dsv4kv run $* -> exit $got"
  [ "$got" -lt 128 ] || fail "killed by a signal (exit $got)"
  [ "$got" -eq "$want" ] || fail "exit status $got, expected $want"
}

has_out() { grep -q -- "$1" "$out" || fail "stdout lacks: $1"; }
has_err() { grep -q -- "$1" "$err" || fail "stderr lacks: $1"; }

# A file with CRLF line endings from LF text on stdin.
crlf() { sed 's/$/\r/'; }

case $case_name in
default)
  run 0 --progress lines --json "$work/default.json"
  has_out "verdict: PASSED"
  has_out "^progress:"
  has_out "peak used"
  has_out "prefix-hit pages"
  has_out "quantization error"
  has_out "insert swa"
  grep -q '"passed":[[:space:]]*true' "$work/default.json" || fail "JSON report lacks passed: true"
  grep -q '"bytes_per_token"' "$work/default.json" || fail "JSON report lacks bytes_per_token"
  ;;
formats)
  # Each compressed record and indexer format, on a small synthetic run.
  for fmt in mxfp8 nvfp4; do
    run 0 --max-requests 24 --format "$fmt" --quiet
    has_out "verification PASSED"
  done
  run 0 --max-requests 24 --format v4 --indexer-format mxfp4 --model deepseek-v4-topk1024 --quiet
  has_out "verification PASSED"
  ;;
trace)
  file=$1
  n=$2
  shift 2
  if [ ! -d "$traces" ] || [ ! -f "$traces/$file" ]; then
    echo "SKIPPED: trace $file not found (set DSV4KV_TRACES or put the traces in $traces)"
    exit 77
  fi
  run 0 --trace "$traces/$file" --max-requests "$n" --progress off --json "$work/$file.json" "$@"
  has_out "requests   $n done of $n"
  has_out "verdict: PASSED"
  grep -q '"passed":[[:space:]]*true' "$work/$file.json" || fail "JSON report lacks passed: true"
  ;;
malformed)
  j="$work/bad.jsonl"
  {
    echo '{"timestamp": 0, "input_length": 600, "output_length": 20, "hash_ids": [0, 1]}'
    echo '{"timestamp": 5, "input_length": 700, "output_length": 20, "hash_ids": [0, 2]}'
    echo '{"timestamp": 9, "input_length": "many", "output_length": 20, "hash_ids": [0, 3]}'
    echo '{"timestamp": 12, "input_length": 1100, "output_length": 30, "hash_ids": [0, 1, 4]}'
    echo 'this is not json'
    echo '{"timestamp": 15, "input_length": 900, "output_length": 10, "hash_ids": [0]}'
    echo '{"timestamp": 20, "input_length": 300, "output_length": 10, "hash_ids": [5]}'
  } >"$j"
  run 2 --trace "$j"
  has_err "bad.jsonl:3: malformed Mooncake JSONL line"
  has_err "input_length"
  has_err "skip-bad"
  run 0 --trace "$j" --skip-bad --progress off
  has_err "bad.jsonl:5:"
  has_err "bad.jsonl:6:"
  has_out "3 malformed lines skipped"
  has_out "requests   4 done of 4"
  has_out "verdict: PASSED"

  c="$work/bad.csv"
  {
    echo 'TIMESTAMP,ContextTokens,GeneratedTokens'
    echo '2023-11-16 18:15:46.6805900,374,44'
    echo '2023-11-16 18:15:47.1,abc,10'
    echo '2023-11-16 18:15:48.0000000,1200,12'
    echo '2023-13-16 18:15:49.0000000,100,12'
    echo '2023-11-16 18:15:50.0000000,100'
  } | crlf >"$c"
  run 2 --trace "$c"
  has_err "bad.csv:3: malformed Azure CSV line: ContextTokens"
  run 0 --trace "$c" --skip-bad --progress off
  has_out "3 malformed lines skipped"
  has_out "verdict: PASSED"

  # Files that are not traces at all: a clear error, never a crash.
  : >"$work/empty.txt"
  run 2 --trace "$work/empty.txt"
  has_err "empty"
  head -c 4096 /dev/urandom >"$work/random.bin" 2>/dev/null ||
    awk 'BEGIN { srand(7); for (i = 0; i < 4096; i++) printf "%c", int(rand() * 256) }' >"$work/random.bin"
  run 2 --trace "$work/random.bin"
  run 2 --trace "$work/random.bin" --skip-bad
  printf '{"timestamp": 0, "input_length": 1000, "output_length": 5, "hash_ids": [0]}\n' >"$work/hash.jsonl"
  run 2 --trace "$work/hash.jsonl"
  has_err "hash.jsonl:1: malformed Mooncake JSONL line: \"hash_ids\" has 1 entries, expected"
  printf '{"timestamp": 0, "input_length": 1e300, "output_length": 5}\n{"timestamp": 1, "input_length": -4, "output_length": 5}\n{"timestamp": 1, "input_length": 10, "output_length": 5}\n[1,2]\n{"timestamp": 1, "input_length": 10, "output_length": 5}}\n{}\n\0\n' >"$work/odd.jsonl"
  run 0 --trace "$work/odd.jsonl" --skip-bad --progress off
  has_out "6 malformed lines skipped"
  run 2 --trace "$work/no-such-file.jsonl"
  has_err "cannot open"
  ;;
pool_too_small)
  run 2 --max-requests 20 --num-blocks 2
  has_err "page pool is too small for one request"
  has_err "--num-blocks"
  t="$work/big.csv"
  {
    echo 'TIMESTAMP,ContextTokens,GeneratedTokens'
    echo '2023-11-16 18:15:46.0000000,500,10'
    echo '2023-11-16 18:15:47.0000000,5000,100'
  } | crlf >"$t"
  run 2 --trace "$t" --num-blocks 10
  has_err "big.csv line 3"
  ;;
pool_tight)
  # Six requests of 9 pages each (2,000 + 100 tokens, 256-token pages) in a
  # 12-page pool: they cannot all run at once, so requests queue and running
  # ones are preempted, yet every request completes and verifies.
  t="$work/tight.csv"
  {
    echo 'TIMESTAMP,ContextTokens,GeneratedTokens'
    for s in 0 1 2 3 4 5; do echo "2023-11-16 18:15:4$s.0000000,2000,100"; done
  } | crlf >"$t"
  run 0 --trace "$t" --num-blocks 12 --max-batched-tokens 512 --progress off
  has_out "requests   6 done of 6"
  has_out "verdict: PASSED"
  grep -q "peak used 1[0-2] of 12" "$out" || fail "the pool was not used up to its limit"
  grep -Eq "peak [1-9][0-9]* queued" "$out" || fail "no request ever queued"
  grep -Eq ", [1-9][0-9]* preemptions?" "$out" || fail "no request was preempted"
  ;;
cli)
  run 0 --help
  has_out "--max-batched-tokens"
  has_out "--skip-bad"
  run 2 --format fp16
  has_err "--format must be"
  run 2 --block-size 100
  has_err "multiple of compress ratio"
  run 2 --model nope
  run 2 --max-requests 0
  run 2 stray-argument
  run 2 --device cuda
  has_err "CUDA"
  ;;
*)
  echo "unknown case $case_name"
  exit 1
  ;;
esac
echo "PASS ($case_name)"
exit 0
