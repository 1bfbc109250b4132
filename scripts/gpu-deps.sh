#!/usr/bin/env bash
# Downloads into .deps/ the Debian packages scripts/gpu-check.sh unpacks on a
# GPU machine that lacks them and has no registry to install from (cJSON,
# cmocka, dlpack: small, and ABI-stable across glibc >= 2.36).  Run it on a
# machine with apt; .deps/ is not committed.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p .deps
cd .deps
# (after apt-get update when the package lists are empty)
apt-get download libcjson-dev libcjson1 libdlpack-dev libcmocka-dev libcmocka0
ls -l
