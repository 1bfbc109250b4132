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
# The library runs its own thread pool, not OpenMP teams; libgomp is still
# linked (the thread count's defaults), and passive waiting keeps any idle
# threads of its off the cores.  An OMP_WAIT_POLICY already set wins.
export OMP_WAIT_POLICY="${OMP_WAIT_POLICY:-passive}"
exec build/dsv4kv run "$@"
