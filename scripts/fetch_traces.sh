#!/usr/bin/env bash
# Fetch the serving-trace slices that `dsv4kv run --trace` and the long replay
# tests (tests/sim/) read, and check every file against its sha256.
#
#   usage: scripts/fetch_traces.sh [DIR]
#
# DIR is, in this order: the argument; $DSV4KV_TRACES; ../shared/traces beside
# the checkout.  Each slice is the first N lines of a public file at a pinned
# commit (docs/TRACES.md gives source, licence, size and sha256 of each): the
# script downloads the original, keeps its first N lines, and checks the
# sha256 of the result.  The Apache-2.0 text that covers the Mooncake slice is
# taken from this repository's LICENSE (the same standard text), not from the
# network.  A file already present with the right sha256 is left alone; one
# present with another sha256 is fetched again (replaced only once the new copy
# checks out).
#
# Needs curl or wget (whichever is found; DSV4KV_FETCH_TOOL=curl|wget picks
# one) and sha256sum.  DSV4KV_TRACES_MIRROR replaces the base address
# https://raw.githubusercontent.com (a mirror laid out as OWNER/REPO/COMMIT/PATH;
# file:// works with curl).
#
# Exit status: 0 when every file is present and correct; 1 when any file could
# not be fetched or failed its checksum (each is named on stderr); 2 for a
# usage error or a missing tool.
#
# Never run by the tests (CI has no network): ctest only reads the traces, and
# reports the replays as skipped when they are absent.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
if [ $# -gt 1 ] || [ "${1:-}" = "-h" ] || [ "${1:-}" = "--help" ]; then
  sed -n '2,27p' "$0" | sed 's/^# \{0,1\}//'
  [ $# -gt 1 ] && exit 2
  exit 0
fi
dest=${1:-${DSV4KV_TRACES:-$root/../shared/traces}}
base=${DSV4KV_TRACES_MIRROR:-https://raw.githubusercontent.com}
base=${base%/}

die() {
  echo "fetch_traces: $*" >&2
  exit 2
}

command -v sha256sum >/dev/null 2>&1 || die "sha256sum not found (coreutils)"
tool=${DSV4KV_FETCH_TOOL:-}
if [ -z "$tool" ]; then
  if command -v curl >/dev/null 2>&1; then
    tool=curl
  elif command -v wget >/dev/null 2>&1; then
    tool=wget
  fi
fi
case "$tool" in
  curl | wget) command -v "$tool" >/dev/null 2>&1 || die "$tool not found" ;;
  "") ;; # only a failure if something must be downloaded
  *) die "DSV4KV_FETCH_TOOL=$tool: expected curl or wget" ;;
esac

# name | sha256 | lines kept | upstream repo | commit | path in the repo | bytes of the original
slices() {
  cat <<'EOF'
mooncake_conversation_trace_first15min.jsonl|de0c23cf3ec638e24717c4a6a52dffe04e4fb7b03fb48e892bcc0c4e27e3434b|2728|kvcache-ai/Mooncake|3b5a594133958449a1feaf1c9e0fc1b553e34a28|FAST25-release/traces/conversation_trace.jsonl|3029533
AzureLLMInferenceTrace_conv_first15min.csv|f983028cd6dc1d96b831d29ba2eacb87f7fd06612e32bbcc92ebdd78e2d9c06e|4425|Azure/AzurePublicDataset|b469a113cedca53ddc3bdea71a143dc4b7d8700c|data/AzureLLMInferenceTrace_conv.csv|719188
AzureLLMInferenceTrace_code_first15min.csv|fb8d65f902cc4fe586b884afd04ee56209f3be54926138241e3b722f1087abd9|2599|Azure/AzurePublicDataset|b469a113cedca53ddc3bdea71a143dc4b7d8700c|data/AzureLLMInferenceTrace_code.csv|320117
EOF
}
license_name=LICENSE-Apache-2.0.txt
license_sha=cfc7749b96f63bd31c3c42b5c471bf756814053e847c10f3eb003417bc523d30

sha_of() { sha256sum "$1" | cut -d' ' -f1; }
size_of() { wc -c <"$1" | tr -d ' '; }

if [ ! -d "$dest" ]; then
  mkdir -p "$dest" 2>/dev/null || die "cannot create the trace directory $dest"
fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/dsv4kv-traces.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

failed=()
fail() { # file, reason
  echo "FAIL $1: $2" >&2
  failed+=("$1")
}

# Move a checked file into place (atomically within $dest).
install_file() { # src, name[, how it was obtained: default "fetched"]
  local part="$dest/.$2.part.$$"
  if ! cp "$1" "$part" 2>/dev/null || ! mv -f "$part" "$dest/$2" 2>/dev/null; then
    rm -f "$part" 2>/dev/null || true
    fail "$2" "cannot write $dest/$2 (is $dest writable?)"
    return 1
  fi
  echo "OK   $2 (${3:-fetched})"
}

present_ok() { # name, sha
  [ -f "$dest/$1" ] || return 1
  if [ "$(sha_of "$dest/$1")" = "$2" ]; then
    echo "OK   $1 (already present)"
    return 0
  fi
  echo "     $1: present but its sha256 differs; fetching it again" >&2
  return 1
}

download() { # url, out
  case "$tool" in
    curl) curl -fsSL --retry 2 --connect-timeout 20 -o "$2" "$1" ;;
    wget) wget -q --tries=3 --timeout=20 -O "$2" "$1" ;;
    *) echo "neither curl nor wget is installed" >&2; return 1 ;;
  esac
}

while IFS='|' read -r name sha lines repo commit path full_bytes; do
  present_ok "$name" "$sha" && continue
  url="$base/$repo/$commit/$path"
  orig="$tmp/$name.orig"
  if ! download "$url" "$orig"; then
    fail "$name" "download of $url failed${tool:+ ($tool)}"
    continue
  fi
  head -n "$lines" "$orig" >"$tmp/$name"
  got=$(sha_of "$tmp/$name")
  if [ "$got" != "$sha" ]; then
    fail "$name" "sha256 $got, expected $sha (the first $lines lines of $url; the download has $(size_of "$orig") bytes, the original $full_bytes)"
    continue
  fi
  install_file "$tmp/$name" "$name" || true
done < <(slices)

# The licence text: the standard Apache-2.0 text of this repository's LICENSE,
# without its first two lines (the copyright line and a blank line).
if ! present_ok "$license_name" "$license_sha"; then
  if [ ! -f "$root/LICENSE" ]; then
    fail "$license_name" "$root/LICENSE not found"
  else
    tail -n +3 "$root/LICENSE" >"$tmp/$license_name"
    if [ "$(sha_of "$tmp/$license_name")" != "$license_sha" ]; then
      fail "$license_name" "the text taken from $root/LICENSE has sha256 $(sha_of "$tmp/$license_name"), expected $license_sha"
    else
      install_file "$tmp/$license_name" "$license_name" "copied from $root/LICENSE" || true
    fi
  fi
fi

if [ ${#failed[@]} -gt 0 ]; then
  echo "fetch_traces: ${#failed[@]} file(s) missing or wrong in $dest: ${failed[*]}" >&2
  exit 1
fi
echo "fetch_traces: all traces present and checked in $dest"
