#!/usr/bin/env bash
# The README's main command: installs what is missing, builds the CLI only,
# and runs the main job (`dsv4kv run`) on its embedded default workload, or
# with the options given.  Installation and build messages go to stderr, so
# stdout carries the report alone (`scripts/main.sh > report.txt`).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh >&2
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >&2
cmake --build build --target dsv4kv_cli -j"$(nproc)" >&2
# libgomp reads its wait policy when the process starts: passive waiting lets
# the run use the OpenMP team without slowing down beside busy processes
# (see `dsv4kv run --help`, --threads).  An OMP_WAIT_POLICY already set wins.
export OMP_WAIT_POLICY="${OMP_WAIT_POLICY:-passive}"
exec build/dsv4kv run "$@"
