#!/bin/sh
# verify_golden: every golden file through `dsv4kv verify`.
#   usage: verify_golden.sh PATH_TO_DSV4KV REPO_GOLDEN_DIR [SHARED_GOLDEN_DIR]
# The golden set is, in this order:
#   1. $DSV4KV_GOLDEN when set (and only it: a value naming no golden files
#      fails the test, so that a typo neither falls back nor skips);
#   2. REPO_GOLDEN_DIR, the repository's tests/golden;
#   3. SHARED_GOLDEN_DIR, ../shared/golden beside the checkout.
# A candidate counts when it is a directory holding *.safetensors files.
# None found: exit 77, which ctest reports as skipped (SKIP_RETURN_CODE),
# never as passed.  Otherwise every file runs on every CPU path the processor
# runs; the exit status is non-zero when any file fails on any path.
dsv4kv=$1
repo_golden=$2
shared_golden=${3:-}

has_golden() {
  [ -d "$1" ] || return 1
  for f in "$1"/*.safetensors; do
    [ -f "$f" ] && return 0
  done
  return 1
}

if [ -n "${DSV4KV_GOLDEN:-}" ]; then
  golden=$DSV4KV_GOLDEN
  if ! has_golden "$golden"; then
    echo "verify_golden: FAILED: DSV4KV_GOLDEN=$golden is not a directory holding *.safetensors files (unset it to use $repo_golden)"
    exit 1
  fi
elif has_golden "$repo_golden"; then
  golden=$repo_golden
elif [ -n "$shared_golden" ] && has_golden "$shared_golden"; then
  golden=$shared_golden
else
  echo "verify_golden: SKIPPED: no golden set (set DSV4KV_GOLDEN, or place the files in $repo_golden${shared_golden:+ or $shared_golden})"
  exit 77
fi
echo "verify_golden: golden set $golden"
# Every CPU kernel path this processor runs (dsv4kv version lists them), each
# chosen with DSV4KV_CPU_PATH and confirmed in use before its run.
paths=$("$dsv4kv" version | sed -n 's/^cpu paths: \(.*\) (in use: .*$/\1/p')
[ -n "$paths" ] || { echo "verify_golden: dsv4kv version lists no cpu paths"; exit 1; }
# a name no path has is ignored, and version says so
if ! DSV4KV_CPU_PATH=no-such-path "$dsv4kv" version | grep -q "DSV4KV_CPU_PATH=no-such-path ignored"; then
  echo "verify_golden: dsv4kv version did not say DSV4KV_CPU_PATH=no-such-path was ignored"
  exit 1
fi
rc=0
for p in $paths; do
  if ! DSV4KV_CPU_PATH=$p "$dsv4kv" version | grep "(in use: $p)" | grep -vq "ignored"; then
    echo "verify_golden: DSV4KV_CPU_PATH=$p did not select path $p"
    exit 1
  fi
  echo "verify_golden: cpu path $p"
  DSV4KV_CPU_PATH=$p "$dsv4kv" verify "$golden" || rc=1
done
exit $rc
