#!/bin/sh
# cli_trace_input: `dsv4kv run --trace` on inputs that are not trace files:
# a FIFO nobody writes to, /dev/zero, a regular file with a 2 MiB line.  Each
# must end at once with exit status 2 and a message naming the file (and the
# line), under a timeout and an address-space limit so that a regression
# fails the test instead of hanging or exhausting the machine.
#   usage: trace_input.sh PATH_TO_DSV4KV
dsv4kv=$1
work=$(mktemp -d /tmp/dsv4kv_trace_XXXXXX) || exit 1
trap 'rm -rf "$work"' EXIT
fails=0
# An ASan build cannot start under ulimit -v (its shadow memory): there the
# cap is ASan's largest allocation instead.
limit="ulimit -v 4194304"
(eval "$limit"; "$dsv4kv" --version) >/dev/null 2>&1 || limit=:
export ASAN_OPTIONS=max_allocation_size_mb=4096:allocator_may_return_null=1

# run WANT_STATUS NEEDLE TRACE: one run, its stderr must hold NEEDLE.
run() {
  want=$1 needle=$2 trace=$3
  (eval "$limit"; timeout 30 "$dsv4kv" run --trace "$trace" --progress off) \
    >"$work/out" 2>"$work/err"
  got=$?
  if [ "$got" -ne "$want" ]; then
    echo "FAIL: --trace $trace: exit status $got, expected $want (124 = timed out)"
    sed 's/^/  /' "$work/err" | head -5
    fails=$((fails + 1))
  elif [ -n "$needle" ] && ! grep -qF -- "$needle" "$work/err"; then
    echo "FAIL: --trace $trace: stderr lacks '$needle':"
    sed 's/^/  /' "$work/err" | head -5
    fails=$((fails + 1))
  else
    echo "ok: --trace $trace: $needle"
  fi
}

if mkfifo "$work/pipe.jsonl" 2>/dev/null; then
  run 2 "$work/pipe.jsonl: not a regular file (a FIFO)" "$work/pipe.jsonl"
else
  echo "note: mkfifo unavailable, FIFO case not run"
fi
[ -c /dev/zero ] && run 2 "/dev/zero: not a regular file (a character device)" /dev/zero
run 2 "$work: not a regular file (a directory)" "$work"

# Two good lines, then one valid JSON object padded to 2 MiB: over the 1 MiB
# a line may have, whatever it holds.
good='{"timestamp": 0, "input_length": 100, "output_length": 4}'
{
  echo "$good"
  echo "$good"
  printf '%s' "$good"
  head -c 2097152 /dev/zero | tr '\0' ' '
  echo
} >"$work/long.jsonl"
run 2 "$work/long.jsonl:3: line is longer than 1048576 bytes" "$work/long.jsonl"
# The same without a final newline (a file that is one endless line).
head -c 3145728 /dev/zero | tr '\0' 'x' >"$work/endless.csv"
run 2 "$work/endless.csv:1: line is longer than 1048576 bytes" "$work/endless.csv"
# A line just under the limit still loads.
{
  printf '%s' "$good"
  head -c 1000000 /dev/zero | tr '\0' ' '
  echo
} >"$work/wide.jsonl"
run 0 "" "$work/wide.jsonl"

# --json / --plot naming the trace (directly or through a link): refused, the trace left whole
echo "$good" >"$work/self.jsonl"
ln -s self.jsonl "$work/self-link.png"
for out in "--json $work/self.jsonl" "--plot $work/self-link.png"; do
  # shellcheck disable=SC2086
  (eval "$limit"; timeout 30 "$dsv4kv" run --trace "$work/self.jsonl" --progress off $out) >"$work/out" 2>"$work/err"
  got=$?
  if [ "$got" -ne 2 ] || ! grep -q "is the trace; it would be overwritten" "$work/err" ||
    [ "$(cat "$work/self.jsonl")" != "$good" ]; then
    echo "FAIL: run --trace self.jsonl $out: exit $got, the trace now $(wc -c <"$work/self.jsonl") bytes"
    sed 's/^/  /' "$work/err" | head -3
    fails=$((fails + 1))
  else
    echo "ok: $out naming the trace refused"
  fi
done

# --json and --plot naming one new file (two spellings): refused, nothing left behind
(cd "$work" && eval "$limit" && timeout 30 "$dsv4kv" run --trace self.jsonl --progress off --plot new.png \
  --json ./new.png) >"$work/out" 2>"$work/err"
got=$?
if [ "$got" -ne 2 ] || ! grep -q "name one file" "$work/err" || [ -e "$work/new.png" ]; then
  echo "FAIL: --json and --plot naming one new file: exit $got"
  fails=$((fails + 1))
else
  echo "ok: --json and --plot naming one new file refused"
fi
# --json - is standard output, whatever file is called '-'
cp "$work/self.jsonl" "$work/-"
(cd "$work" && eval "$limit" && timeout 30 "$dsv4kv" run --trace ./- --progress off --json -) >"$work/out" 2>"$work/err"
got=$?
if [ "$got" -ne 0 ] || [ "$(cat "$work/-")" != "$good" ]; then
  echo "FAIL: --trace ./- --json -: exit $got"
  fails=$((fails + 1))
else
  echo "ok: --json - beside a trace named '-'"
fi

[ "$fails" -eq 0 ] || exit 1
echo "all trace input cases passed"
