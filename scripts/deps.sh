#!/usr/bin/env bash
# Installs the Debian packages dsv4kv builds and tests with, only those missing.
set -euo pipefail
# gnuplot-nox: dsv4kv run --plot; python3: the sim tests parse the JSON report;
# python3-venv: the Python package's tests run in a virtual environment
pkgs=(build-essential cmake libcjson-dev libdlpack-dev libcmocka-dev gnuplot-nox python3 python3-venv clang)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "dsv4kv: installing ${missing[*]}"
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}"
fi
