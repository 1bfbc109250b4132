#!/usr/bin/env bash
# A/B timing of two settings of one build on a GPU machine (the variants a
# DSV4KV_CUDA_* variable forces, e.g. DSV4KV_CUDA_INDEX_ROWS=block against
# =warp), for the notes of predictions against results (bench/NOTES-gpu.md):
# `build-gpu/dsv4kv bench --device cuda ARGS...` runs ROUNDS times, A and B
# alternately, each table line prefixed with its side and round.  build-gpu/
# must exist (scripts/gpu-check.sh builds it); the dependencies it unpacked
# are found as scripts/gpu-ab.sh finds them (DEPS_PREFIX).
#
#   usage: scripts/gpu-env-ab.sh ROUNDS 'VAR=value ...' 'VAR=value ...' [bench arguments...]
#          (an empty setting, '', runs with the environment as it is)
set -uo pipefail
[ $# -ge 3 ] || { echo "usage: scripts/gpu-env-ab.sh ROUNDS 'VAR=value ...' 'VAR=value ...' [bench arguments...]" >&2; exit 2; }
rounds=$1 env_a=$2 env_b=$3
shift 3
case $rounds in '' | *[!0-9]* | 0) echo "gpu-env-ab: ROUNDS must be a whole number >= 1, not '$rounds'" >&2; exit 2 ;; esac
root=$(cd "$(dirname "$0")/.." && pwd)
bin=$root/build-gpu/dsv4kv
[ -x "$bin" ] || { echo "gpu-env-ab: no build-gpu/dsv4kv (run scripts/gpu-check.sh first)" >&2; exit 2; }
prefix=${DEPS_PREFIX:-/tmp/dsv4kv-deps-$(id -u)/usr}
[ -d "$prefix" ] && export LD_LIBRARY_PATH="$prefix/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fail=0
for i in $(seq 1 "$rounds"); do
  for side in A B; do
    settings=$env_a
    [ $side = B ] && settings=$env_b
    # shellcheck disable=SC2086 # the settings are words VAR=value by design
    env $settings "$bin" bench --device cuda "$@" | sed "s/^/$side$i /"
    [ "${PIPESTATUS[0]}" -eq 0 ] || fail=1
  done
done
exit $fail
