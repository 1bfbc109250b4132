#!/usr/bin/env bash
# The README's main command: installs what is missing, builds, and runs the
# main job on its embedded default workload.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
scripts/build.sh
exec build/dsv4kv run "$@"
