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
  # One library thread per call: ctest runs two cases at once on 2 cores.
  "$bin" run --threads 1 "$@" >"$out" 2>"$err"
  got=$?
  echo "dsv4kv run $* -> exit $got"
  [ "$got" -lt 128 ] || fail "killed by a signal (exit $got)"
  [ "$got" -eq "$want" ] || fail "exit status $got, expected $want"
}

has_out() { grep -q -- "$1" "$out" || fail "stdout lacks: $1"; }
has_err() { grep -q -- "$1" "$err" || fail "stderr lacks: $1"; }
no_out() { ! grep -q -- "$1" "$out" || fail "stdout has: $1"; }
no_err() { ! grep -q -- "$1" "$err" || fail "stderr has: $1"; }
# has_json FILE PATTERN: an extended regular expression found in a JSON report.
has_json() { grep -Eq -- "$2" "$1" || fail "$1 lacks: $2"; }

# The prefix-hit split, as keys of a JSON report (tokens and pages).
has_prefix_split() {
  for k in prefix_hit_shared prefix_hit_readmitted; do
    [ "$(grep -c "\"$k\":" "$1")" -eq 2 ] || fail "$1: \"$k\" not in both tokens and pages"
  done
}

# py_check CHECK FILE ARG: the JSON report parsed by tests/sim/check_json.py
# (python3's json module); skipped (77) without python3, never passed.
py_check() {
  command -v python3 >/dev/null 2>&1 || {
    echo "SKIPPED: python3 is not installed (scripts/deps.sh installs it): cannot parse $2"
    exit 77
  }
  python3 "$(dirname "$0")/check_json.py" "$@" || fail "check_json.py $1 $2"
}

# before_run: the run was refused before it started: no report on stdout, no
# progress on stderr, and the message says nothing was run.
before_run() {
  [ ! -s "$out" ] || fail "a report on stdout: the run started"
  no_err "progress:"
  has_err "nothing was run"
}

# Lines of a stream split at carriage returns, none wider than $2 columns.
max_width() {
  tr '\r' '\n' <"$1" | awk -v w="$2" 'length($0) > w { bad = 1 } END { exit bad }' ||
    fail "$1: a progress line is wider than $2 columns"
}

# A file with CRLF line endings from LF text on stdin.
crlf() { sed 's/$/\r/'; }

case $case_name in
default)
  run 0 --progress lines --json "$work/default.json"
  has_out "verdict: PASSED"
  has_out "criteria: sampled keys within a per-element bound"
  # progress goes to stderr only: `dsv4kv run > report.txt` gets the report alone
  has_err "^progress:"
  no_out "progress"
  has_out "peak used"
  has_out "prefix     shared across requests [0-9]* tokens ([0-9]* pages); re-admitted after preemption"
  no_out "NOTE"
  has_out "quantization error"
  has_out "max |err| is absolute"
  has_out "insert swa"
  has_out "B/entry"
  has_out "c4  *compressed  *v4  *4  *584  *146.0" # B/entry and B/token at ratio 4
  has_out "virtual time"
  grep -Eq "make keys \(sim\) +[0-9]+ +[0-9]+ +[0-9.]+ +[0-9]+ +-$" "$out" ||
    fail "make keys row: GB/s is not '-'"
  grep -Eq "verify \(sim\) +[0-9]+ +[0-9]+ +[0-9.]+ +[0-9]+ +-$" "$out" ||
    fail "verify row: GB/s is not '-'"
  has_out "combine top-k+swa  *topk_len top-k entries read"
  j="$work/default.json"
  has_json "$j" '"passed":[[:space:]]*true'
  has_json "$j" '"version":[[:space:]]*"[0-9]+\.[0-9]+\.[0-9]+"'
  has_json "$j" '"indexer_format":[[:space:]]*"fp8"'
  has_json "$j" '"bytes_per_entry":[[:space:]]*584'
  has_json "$j" '"library_seconds":'
  has_json "$j" '"tokens_per_s":'
  has_json "$j" '"pool_bottleneck":[[:space:]]*false'
  has_json "$j" '"gb_per_s":[[:space:]]*null'
  has_prefix_split "$j"
  ;;
progress)
  # --progress bar without a terminal: the bar goes to stderr, within the
  # fallback width of 80 columns, and is cleared at the end
  run 0 --max-requests 12 --progress bar
  has_out "verdict: PASSED"
  ! grep -q "$(printf '\r')" "$out" || fail "a carriage return (the bar) on stdout"
  grep -q "$(printf '\r')" "$err" || fail "no bar on stderr"
  has_err "requests"
  max_width "$err" 79
  tr '\r' '\n' <"$err" | tail -n 1 | grep -Eq '^ {79}$' || fail "the bar is not cleared by a line of 79 spaces"
  # auto: stderr is no terminal here, so plain lines
  run 0 --max-requests 12
  has_err "^progress: 100%"
  has_err "elapsed [0-9]*s, ETA "
  # on a terminal the bar takes its width, not 80 columns (script(1) gives a pty)
  if command -v script >/dev/null 2>&1 && script -qc true /dev/null >/dev/null 2>&1; then
    script -qc "stty cols 150 rows 40; \"$bin\" run --threads 1 --max-requests 12 --progress bar >/dev/null" \
      "$work/tty.txt" >/dev/null 2>&1 || fail "the run on a pty failed"
    grep -av '^Script \(started\|done\)' "$work/tty.txt" >"$work/tty-bar.txt" # script's own lines
    tr '\r' '\n' <"$work/tty-bar.txt" | awk 'length($0) > 80 && /requests, elapsed/ { w = 1 } END { exit !w }' ||
      fail "on a 150-column terminal no progress line is wider than 80 columns"
    max_width "$work/tty-bar.txt" 149
  fi
  no_out "progress"
  run 0 --max-requests 12 --quiet
  [ ! -s "$err" ] || fail "--quiet wrote to stderr"
  ;;
json_stdout)
  # --json -: stdout is the JSON alone, the text report goes to stderr
  run 0 --max-requests 12 --json - --progress off
  [ "$(head -c 1 "$out")" = "{" ] || fail "stdout does not start with the JSON object"
  [ "$(tail -n 1 "$out")" = "}" ] || fail "stdout does not end with the JSON object"
  has_out '"passed":[[:space:]]*true'
  no_out "verdict"
  has_err "verdict: PASSED"
  has_prefix_split "$out"
  run 0 --max-requests 12 --json - --quiet --format mxfp8
  [ "$(head -c 1 "$out")" = "{" ] || fail "stdout (--quiet) does not start with the JSON object"
  has_out '"format":[[:space:]]*"mxfp8"'
  has_err "verification PASSED"
  # --distinct-slots: recorded in the report (the CPU ignores the promise;
  # the slots are distinct: requests own their pages)
  run 0 --max-requests 12 --json - --quiet --distinct-slots
  has_out '"distinct_slots":[[:space:]]*true'
  has_err "verification PASSED"
  ;;
formats)
  # Each compressed record and indexer format, on a small synthetic run.
  for fmt in mxfp8 nvfp4; do
    run 0 --max-requests 24 --format "$fmt" --quiet
    has_out "verification PASSED"
    has_out "compressed $fmt"
  done
  has_out "indexer mxfp4" # nvfp4's default indexer format
  # the Pro preset: no SWA-only layer, 30 c4 layers with top-k 1024 + 31 c128
  run 0 --max-requests 24 --format v4 --indexer-format mxfp4 --model deepseek-v4-pro --quiet
  has_out "verification PASSED"
  has_out "formats swa v4, compressed v4, indexer mxfp4"
  has_out "whole model 40655.4 B/token" # 61 x 584 + 30 x 146 + 31 x 4.5625 + 30 x 17
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
  has_json "$work/$file.json" '"passed":[[:space:]]*true'
  has_prefix_split "$work/$file.json"
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

  # a key given twice (the parser would take the first), and CR-only line endings
  echo '{"timestamp": 0, "input_length": 600, "input_length": 9, "output_length": 20, "hash_ids": [0, 1]}' \
    >"$work/dupkey.jsonl"
  run 2 --trace "$work/dupkey.jsonl"
  has_err '"input_length" appears 2 times'
  printf 'TIMESTAMP,ContextTokens,GeneratedTokens,contexttokens\n2023-11-16 18:15:46,10,2,1048000\n' \
    >"$work/dupcol.csv"
  run 2 --trace "$work/dupcol.csv"
  has_err "header names ContextTokens twice (columns 2 and 4)"
  printf 'TIMESTAMP,ContextTokens,GeneratedTokens\r2023-11-16 18:15:46,5,4\r' >"$work/cr.csv"
  for i in $(seq 1 30); do printf '2023-11-16 18:15:4%d,5,4\r' $((i % 10)) >>"$work/cr.csv"; done
  run 2 --trace "$work/cr.csv"
  has_err "end in CR alone"

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
  # preemption is reported as the pool's limit, with a --num-blocks to try
  has_out "the page pool was the bottleneck: [1-9][0-9]* preemptions\{0,1\}, [1-9][0-9]* tokens recomputed"
  has_out "raise --num-blocks (now 12; try 24"

  # Six prompts sharing their first three hash blocks, in the same tight pool:
  # hits from other requests' pages and re-admitted requests' own pages are
  # counted apart.
  j="$work/share.jsonl"
  for s in 0 1 2 3 4 5; do
    echo "{\"timestamp\": $((s * 100)), \"input_length\": 2000, \"output_length\": 100, \"hash_ids\": [0, 1, 2, $((10 + s))]}"
  done >"$j"
  run 0 --trace "$j" --num-blocks 12 --max-batched-tokens 512 --progress off --json "$work/share.json"
  has_out "verdict: PASSED"
  has_out "shared across requests [1-9][0-9]* tokens ([1-9][0-9]* pages); re-admitted after preemption [1-9][0-9]* tokens ([1-9][0-9]* pages)"
  has_prefix_split "$work/share.json"
  has_json "$work/share.json" '"prefix_hit_shared":[[:space:]]*[1-9]'
  has_json "$work/share.json" '"prefix_hit_readmitted":[[:space:]]*[1-9]'
  has_json "$work/share.json" '"pool_bottleneck":[[:space:]]*true'
  ;;
cli)
  run 0 --help
  has_out "--max-batched-tokens"
  has_out "--skip-bad"
  has_out "--json FILE .*'-'"
  has_out "GB/s counts"
  has_out "--kv-cache-memory SIZE"
  has_out "--plot FILE"
  # the presets line up with the option descriptions (column 27)
  grep -Eq "^ {26}deepseek-v4-flash +43 layers: 2 swa \+ 21 c4" "$out" || fail "--help: presets not in the description column"
  grep -Eq "^ {26}deepseek-v4-pro +61 layers: 30 c4" "$out" || fail "--help: presets not aligned"
  [ "$(grep -E '^ +deepseek-v4-' "$out" | awk '{ print index($0, "layers:") }' | sort -u | wc -l)" -eq 1 ] ||
    fail "--help: preset descriptions not in one column"
  run 2 --format fp16
  has_err "'fp16' is not a format"
  # --block-size states the rule: a multiple of the ratios' lcm (128 here)
  run 2 --block-size 100
  has_err "--block-size 100: for --model deepseek-v4-flash it must be a positive multiple of 128"
  has_err "compress ratios 4 (c4), 128 (c128)"
  run 2 --block-size 64 --model deepseek-v4-pro
  has_err "multiple of 128"
  run 0 --block-size 384 --max-requests 2 --quiet # not a power of two: fine
  has_out "verification PASSED"
  # the old preset names still select the presets
  run 0 --model deepseek-v4 --max-requests 2 --quiet
  run 0 --model deepseek-v4-topk1024 --max-requests 2 --quiet
  # version and plot have their own help
  "$bin" version --help >"$out" 2>"$err" || fail "dsv4kv version --help: exit $?"
  has_out "usage: dsv4kv version"
  "$bin" plot --help >"$out" 2>"$err" || fail "dsv4kv plot --help: exit $?"
  has_out "usage: dsv4kv plot REPORT.json -o FILE"
  # --plot without gnuplot on $PATH: a clear error before the run, not a crash
  PATH=/nonexistent "$bin" run --threads 1 --max-requests 2 --plot "$work/x.png" >"$out" 2>"$err"
  [ $? -eq 2 ] || fail "--plot without gnuplot: exit status not 2"
  has_err "gnuplot is not installed"
  before_run
  [ ! -e "$work/x.png" ] || fail "--plot without gnuplot left a file"
  run 2 --model nope
  has_err "unknown --model 'nope'"
  [ "$(grep -E '^  deepseek-v4' "$err" | awk '{ print index($0, "layers:") }' | sort -u | wc -l)" -eq 1 ] ||
    fail "unknown --model: preset descriptions not in one column"
  run 2 --max-requests 0
  for bad in " 5" "5 " 5x "" 0x10; do # white space on either side refused alike
    run 2 --max-requests "$bad"
    has_err "--max-requests expects an integer in \[1, 2147483647\], got '$bad'"
  done
  run 2 stray-argument
  if ! "$bin" version | grep -q '^backends: .*cuda$'; then # no GPU here: one clear refusal
    run 2 --device cuda
    has_err "CUDA cannot run here"
    has_err "--device cpu"
    no_err "ebuild"
  fi
  ;;
budget)
  # --kv-cache-memory sizes the pool from the whole model's bytes per page
  run 0 --max-requests 24 --kv-cache-memory 2GiB --quiet --json "$work/budget.json"
  has_out "verification PASSED"
  has_out "peak [0-9]* of 289 pages" # 2 GiB / 7.07 MiB (256 tokens x 28962.25 B)
  py_check budget "$work/budget.json" 2147483648
  run 0 --max-requests 24 --kv-cache-memory 1536MiB --format nvfp4 --json "$work/budget2.json" --progress off
  has_out "the pool's 232 pages = 1.49 GiB (--kv-cache-memory 1536MiB)"
  py_check budget "$work/budget2.json" 1610612736
  run 0 --max-requests 4 --kv-cache-memory "2.5 GB" --quiet
  run 0 --max-requests 4 --kv-cache-memory 3g --quiet
  # nonsense is refused by name, before anything runs
  for bad in abc 0 0GiB -5GiB 12XB 1e400 GiB 5GiBs '' inf nan 0x1p4GiB 0x10; do
    run 2 --max-requests 4 --kv-cache-memory "$bad"
    has_err "--kv-cache-memory expects a positive size of at most 2^60 bytes, such as 40GiB"
  done
  run 2 --max-requests 4 --kv-cache-memory 1MiB
  has_err "--kv-cache-memory 1MiB holds no page: one page of 256 tokens takes 7.07 MiB"
  no_err "a number without a unit is bytes"
  for bare in 40 5.; do
    run 2 --max-requests 4 --kv-cache-memory "$bare"
    has_err "(a number without a unit is bytes)"
  done
  # past the pool's page limit: capped, and said
  run 0 --max-requests 2 --kv-cache-memory 1e18 --quiet
  has_err "--kv-cache-memory 1e18 holds 134873844400 pages of 256 tokens; the pool takes at most 268435456"
  run 2 --max-requests 24 --kv-cache-memory 20MiB
  has_err "page pool is too small for one request"
  has_err "Raise --kv-cache-memory to at least"
  run 2 --max-requests 4 --kv-cache-memory 1GiB --num-blocks 100
  has_err "--kv-cache-memory and --num-blocks both set"
  ;;
multi_format)
  # one run per format, then the comparison; smaller records get more pages
  run 0 --max-requests 24 --format v4,mxfp8,nvfp4 --kv-cache-memory 1GiB --progress off \
    --json "$work/multi.json"
  [ "$(grep -c "verdict: PASSED" "$out")" -eq 3 ] || fail "not three passing reports"
  has_out "==== run 3 of 3: --format nvfp4 ===="
  has_out "format comparison (whole model deepseek-v4-flash, 43 layers; pool --kv-cache-memory 1GiB)"
  grep -Eq "^  v4 +fp8 +28962.2 +26.973 +144 " "$out" || fail "comparison row of v4"
  grep -Eq "^  mxfp8 +fp8 +28659.5 +26.691 +146 " "$out" || fail "comparison row of mxfp8"
  grep -Eq "^  nvfp4 +mxfp4 +27026.0 +25.170 +155 .*PASSED$" "$out" || fail "comparison row of nvfp4"
  py_check formats "$work/multi.json" v4,mxfp8,nvfp4
  # --quiet: one line per format and the table; an explicit indexer format for all
  run 0 --max-requests 12 --format all --indexer-format mxfp4 --quiet
  [ "$(grep -c "verification PASSED" "$out")" -eq 3 ] || fail "--quiet: not three summaries"
  has_out "compressed mxfp8, indexer mxfp4"
  has_out "format comparison"
  run 2 --format v4,v4
  has_err "'v4' is listed twice"
  run 2 --format v4,,nvfp4
  has_err "an empty or overlong name"
  run 2 --format v4,fp16
  has_err "'fp16' is not a format"
  ;;
json_schema)
  # > 2000 steps, so that the time series is downsampled
  run 0 --max-requests 100 --progress off --json "$work/schema.json"
  "$bin" --version >"$work/version.txt" || fail "dsv4kv --version"
  py_check schema "$work/schema.json" "$(cat "$work/version.txt")"
  has_out "latency (seconds of virtual time"
  grep -Eq "^  queueing delay +100 +[0-9.]+ +[0-9.]+ +[0-9.]+" "$out" || fail "queueing delay row"
  grep -Eq "^  time to first token +100 +[0-9.]+ +[0-9.]+ +[0-9.]+" "$out" || fail "TTFT row"
  has_out "whole model (deepseek-v4-flash: 43 layers = 2 swa + 21 c4 + 20 c128"
  grep -Eq "^  total +28962.2 +26.973" "$out" || fail "whole-model total"
  ;;
json_unwritable)
  # an unwritable --json path stops the command before the run
  run 2 --json "$work/no-such-dir/report.json"
  has_err "--json $work/no-such-dir/report.json: cannot create the file"
  before_run
  run 2 --format v4,nvfp4 --json "$work" # a directory
  has_err "is a directory"
  before_run
  # a run refused (a bad --plot) or failed (pool too small) leaves the files that were there as they were,
  # and creates none
  echo KEEP >"$work/old.json"
  echo PLOT >"$work/old.png"
  run 2 --max-requests 3 --json "$work/old.json" --plot "$work/out.txt"
  run 2 --max-requests 3 --json "$work/new.json" --plot "$work/out.txt"
  run 2 --max-requests 3 --num-blocks 1 --json "$work/old.json" --plot "$work/old.png"
  [ "$(cat "$work/old.json")" = KEEP ] && [ "$(cat "$work/old.png")" = PLOT ] || fail "a refused run changed a file"
  [ ! -e "$work/new.json" ] || fail "a refused run left a new --json file"
  # a dangling link as --json to the --plot file: one file, refused, the link kept, nothing created
  ln -s target.png "$work/link.json"
  run 2 --max-requests 3 --json "$work/link.json" --plot "$work/target.png"
  has_err "name one file"
  [ -L "$work/link.json" ] && [ ! -e "$work/target.png" ] || fail "the link was removed or its target created"
  ;;
plot)
  if ! command -v gnuplot >/dev/null 2>&1; then
    echo "SKIPPED: gnuplot is not installed (scripts/deps.sh installs gnuplot-nox)"
    exit 77
  fi
  run 0 --max-requests 16 --format v4,nvfp4 --progress off --plot "$work/run.png" --json "$work/plot.json"
  has_err "plot written to $work/run.png"
  [ "$(head -c 4 "$work/run.png" | od -An -c | tr -d ' ')" = '211PNG' ] || fail "run.png is not a PNG"
  [ "$(wc -c <"$work/run.png")" -gt 20000 ] || fail "run.png is too small to hold the plot"
  "$bin" plot "$work/plot.json" -o "$work/replot.svg" >"$out" 2>"$err" || fail "dsv4kv plot: exit $?"
  has_err "plot written to $work/replot.svg"
  grep -q "<svg" "$work/replot.svg" || fail "replot.svg is not an SVG"
  grep -q "pages in use" "$work/replot.svg" || fail "replot.svg lacks the pages panel"
  grep -q "nvfp4" "$work/replot.svg" || fail "replot.svg lacks the nvfp4 series"
  run 2 --max-requests 4 --plot "$work/run.pdf"
  has_err "must end in .png or .svg"
  before_run
  run 2 --max-requests 4 --plot "$work/no-such-dir/run.png"
  has_err "cannot create the file"
  before_run
  "$bin" plot "$work/out.json" -o "$work/x.png" >"$out" 2>"$err"
  [ $? -eq 2 ] || fail "dsv4kv plot of a missing report: exit status not 2"
  echo '{"schema_version": 1}' >"$work/old.json"
  "$bin" plot "$work/old.json" -o "$work/x.png" >"$out" 2>"$err"
  [ $? -eq 2 ] || fail "dsv4kv plot of an old report: exit status not 2"
  has_err "schema_version 2"
  ;;
*)
  echo "unknown case $case_name"
  exit 1
  ;;
esac
echo "PASS ($case_name)"
exit 0
