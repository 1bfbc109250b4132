#!/usr/bin/env bash
# A/B timing of two builds on a GPU machine, for the notes of predictions
# against results (bench/NOTES-gpu.md): the tree in BASE (e.g. an unpacked
# `git archive` of the commit before a change) is built into BASE/build-gpu
# with the same configuration as scripts/gpu-check.sh's build-gpu/ (which must
# exist: run gpu-check first, in the same shell session for its dependencies),
# then `dsv4kv bench --device cuda ARGS...` runs ROUNDS times alternately on
# each build (A = BASE, B = build-gpu), each table line prefixed with its build.
#
#   usage: scripts/gpu-ab.sh BASE ROUNDS [bench arguments...]
#   env:   AB_CUDA_FLAGS: extra nvcc flags for the BASE build (e.g. a -D that
#          picks a variant of the same tree); the LD_LIBRARY_PATH / CPATH / LIBRARY_PATH gpu-check exported when it
#          unpacked .deps/ (DEPS_PREFIX names that prefix: default
#          /tmp/dsv4kv-deps-$(id -u)/usr, used when it exists)
set -uo pipefail
[ $# -ge 2 ] || { echo "usage: scripts/gpu-ab.sh BASE ROUNDS [bench arguments...]" >&2; exit 2; }
base=$1 rounds=$2
shift 2
root=$(cd "$(dirname "$0")/.." && pwd)
case $rounds in '' | *[!0-9]* | 0) echo "gpu-ab: ROUNDS must be a whole number >= 1, not '$rounds'" >&2; exit 2 ;; esac
[ -d "$base" ] || { echo "gpu-ab: BASE '$base' is not a folder" >&2; exit 2; }
[ "$(cd "$base" && pwd)" != "$root" ] || { echo "gpu-ab: BASE is this checkout itself (A and B would be one build)" >&2; exit 2; }
[ -x "$root/build-gpu/dsv4kv" ] || { echo "gpu-ab: no build-gpu/dsv4kv (run scripts/gpu-check.sh first)" >&2; exit 2; }
export PATH=$PATH:/usr/local/cuda/bin
args=(-DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 -DDSV4KV_WITH_CUDA=ON -DDSV4KV_BUILD_TESTS=OFF)
[ -n "${AB_CUDA_FLAGS:-}" ] && args+=(-DCMAKE_CUDA_FLAGS="$AB_CUDA_FLAGS")
prefix=${DEPS_PREFIX:-/tmp/dsv4kv-deps-$(id -u)/usr}
if [ -d "$prefix" ]; then
  lib=$prefix/lib/x86_64-linux-gnu
  export LD_LIBRARY_PATH="$lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" LIBRARY_PATH="$lib${LIBRARY_PATH:+:$LIBRARY_PATH}"
  export CPATH="$prefix/include${CPATH:+:$CPATH}"
  args+=(-DCMAKE_PREFIX_PATH="$prefix" -DDLPACK_INCLUDE_DIR="$prefix/include")
fi
(cmake -S "$base" -B "$base/build-gpu" "${args[@]}" >/dev/null && cmake --build "$base/build-gpu" -j"$(nproc)" >/dev/null) ||
  { echo "gpu-ab: the base tree did not build" >&2; exit 1; }
fail=0
for i in $(seq 1 "$rounds"); do
  for side in A B; do
    bin=$root/build-gpu/dsv4kv
    [ $side = A ] && bin=$base/build-gpu/dsv4kv
    "$bin" bench --device cuda "$@" | sed "s/^/$side$i /"
    [ "${PIPESTATUS[0]}" -eq 0 ] || fail=1
  done
done
exit $fail
