#!/usr/bin/env bash
# Checks the install as a user sees it:
#   1. builds the library and the CLI in the build tree (configuring it first
#      when it is not configured yet);
#   2. installs them into a temporary prefix P (`cmake --install --prefix P`);
#   3. builds examples/ against P with pkg-config (cc ... $(pkg-config --cflags
#      --libs dsv4kv)) and with CMake (find_package(dsv4kv CONFIG)), runs them;
#   4. runs P/bin/dsv4kv --version / -V with no LD_LIBRARY_PATH and checks it
#      loads P's library;
#   5. moves P elsewhere and checks pkg-config and the CLI still point at it.
# Exits non-zero when anything fails, naming what.  Removes P when done.
#
# Usage: scripts/check_install.sh            (from any directory)
#   DSV4KV_BUILD_DIR=dir   build tree to use (default: <checkout>/build)
#   KEEP=1                 keep the temporary directory
set -uo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${DSV4KV_BUILD_DIR:-$ROOT/build}
CC=${CC:-cc}
JOBS=$(nproc 2>/dev/null || echo 2)
unset LD_LIBRARY_PATH
TMP=$(mktemp -d "${TMPDIR:-/tmp}/dsv4kv-check-install.XXXXXX") || exit 1
if [ "${KEEP:-0}" = 1 ]; then
  trap 'echo "check_install: kept $TMP"' EXIT
else
  trap 'rm -rf "$TMP"' EXIT
fi
P=$TMP/prefix
failures=0

say() { echo "check_install: $*"; }
fail() {
  echo "check_install: FAIL: $*" >&2
  failures=$((failures + 1))
}
# step NAME CMD...: runs CMD with its output in a log; on failure prints the
# log's tail and counts the failure.  Returns CMD's status.
step() {
  local name=$1 log
  shift
  log=$TMP/log.$(printf '%s' "$name" | tr -c 'A-Za-z0-9_' '_')
  local rc=0
  "$@" >"$log" 2>&1 || rc=$?
  [ "$rc" = 0 ] && return 0
  fail "$name (exit $rc): $*"
  tail -n 25 "$log" | sed 's/^/    /' >&2
  return $rc
}

# The one version, from project() in CMakeLists.txt.
VERSION=$(sed -n 's/^project(dsv4kv VERSION \([0-9.]*\).*/\1/p' "$ROOT/CMakeLists.txt")
[ -n "$VERSION" ] || fail "no version in project() of $ROOT/CMakeLists.txt"
say "dsv4kv $VERSION, build tree $BUILD, prefix $P"

# 1. Build (configure first if needed) just what is installed.
if [ ! -f "$BUILD/CMakeCache.txt" ]; then
  step "configure $BUILD" cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release || exit 1
fi
targets=(dsv4kv)
tools=1
grep -q '^DSV4KV_BUILD_TOOLS:BOOL=OFF' "$BUILD/CMakeCache.txt" && tools=0
[ $tools = 1 ] && targets+=(dsv4kv_cli)
step "build ${targets[*]}" cmake --build "$BUILD" -j"$JOBS" --target "${targets[@]}" || exit 1

# 2. Install.
step "install" cmake --install "$BUILD" --prefix "$P" || exit 1
PC=$(find "$P" -name dsv4kv.pc -path '*/pkgconfig/*' | head -n 1)
[ -n "$PC" ] || { fail "no dsv4kv.pc under $P"; exit 1; }
PCDIR=$(dirname "$PC")
LIBDIR=$(dirname "$PCDIR")
for f in "$P/include/dsv4kv.h" "$P/include/dsv4kv_version.h" "$LIBDIR/libdsv4kv.so" \
  "$LIBDIR/cmake/dsv4kv/dsv4kvConfig.cmake" "$LIBDIR/cmake/dsv4kv/dsv4kvConfigVersion.cmake" \
  "$LIBDIR/cmake/dsv4kv/dsv4kvTargets.cmake"; do
  [ -e "$f" ] || fail "not installed: ${f#"$P"/}"
done
grep -q "^#define DSV4KV_VERSION_MAJOR ${VERSION%%.*}\$" "$P/include/dsv4kv_version.h" ||
  fail "dsv4kv_version.h does not carry version $VERSION"

# 3a. pkg-config: the flags must point into P, dlpack's dir included.
# check_pc LABEL PREFIX LIBDIR: the -I / -L paths resolve to PREFIX/include, LIBDIR.
check_pc() {
  local label=$1 prefix=$2 libdir=$3 flags inc lib
  flags=$(PKG_CONFIG_PATH="$libdir/pkgconfig" pkg-config --cflags --libs dsv4kv) ||
    { fail "$label: pkg-config --cflags --libs dsv4kv"; return 1; }
  say "$label: pkg-config --cflags --libs dsv4kv -> $flags"
  inc=$(PKG_CONFIG_PATH="$libdir/pkgconfig" pkg-config --variable=includedir dsv4kv)
  lib=$(PKG_CONFIG_PATH="$libdir/pkgconfig" pkg-config --variable=libdir dsv4kv)
  [ "$(realpath -m "$inc")" = "$(realpath -m "$prefix/include")" ] ||
    fail "$label: pkg-config includedir $inc is not $prefix/include"
  [ "$(realpath -m "$lib")" = "$(realpath -m "$libdir")" ] ||
    fail "$label: pkg-config libdir $lib is not $libdir"
  case " $flags " in *" -I$inc "*) ;; *) fail "$label: Cflags lack -I$inc" ;; esac
  case " $flags " in *" -L$lib "*) ;; *) fail "$label: Libs lack -L$lib" ;; esac
  case " $flags " in *" -ldsv4kv "*) ;; *) fail "$label: Libs lack -ldsv4kv" ;; esac
  local v
  v=$(PKG_CONFIG_PATH="$libdir/pkgconfig" pkg-config --modversion dsv4kv)
  [ "$v" = "$VERSION" ] || fail "$label: pkg-config --modversion $v, expected $VERSION"
}
check_pc "pkg-config" "$P" "$LIBDIR"
static=$(PKG_CONFIG_PATH="$PCDIR" pkg-config --libs --static dsv4kv)
say "pkg-config --libs --static dsv4kv -> $static"
case " $static " in *" -lm "*) ;; *) fail "Libs.private lacks -lm: $static" ;; esac
case "$static" in *omp*) ;; *) fail "Libs.private lacks the OpenMP runtime: $static" ;; esac

# 3b. The examples, built with pkg-config flags (strict warnings: the public
# header must compile cleanly in a user's -Werror build).
mkdir -p "$TMP/pc"
read -r -a PCFLAGS <<<"$(PKG_CONFIG_PATH="$PCDIR" pkg-config --cflags --libs dsv4kv)"
for ex in insert_gather index_ops; do
  step "pkg-config build of examples/$ex.c" "$CC" -std=c11 -Wall -Wextra -Wpedantic -Werror \
    "$ROOT/examples/$ex.c" "${PCFLAGS[@]}" -lm -Wl,-rpath,"$LIBDIR" -o "$TMP/pc/$ex" &&
    step "run pkg-config-built $ex" "$TMP/pc/$ex" && say "pkg-config $ex: $(tail -n 1 "$TMP/log.run_pkg_config_built_$ex")"
done

# 3c. The examples as a standalone CMake project: find_package(dsv4kv CONFIG).
if step "cmake configure examples/ (CMAKE_PREFIX_PATH=$P)" cmake -S "$ROOT/examples" -B "$TMP/cm" \
  -DCMAKE_PREFIX_PATH="$P" -DCMAKE_BUILD_TYPE=Release -DCMAKE_C_FLAGS="-Wall -Wextra -Werror"; then
  dir=$(sed -n 's/^dsv4kv_DIR:PATH=//p' "$TMP/cm/CMakeCache.txt")
  [ "$(realpath -m "$dir")" = "$(realpath -m "$LIBDIR/cmake/dsv4kv")" ] ||
    fail "find_package(dsv4kv) found $dir, not $LIBDIR/cmake/dsv4kv"
  if step "cmake build examples/" cmake --build "$TMP/cm" -j"$JOBS"; then
    for ex in insert_gather index_ops; do
      step "run cmake-built $ex" "$TMP/cm/$ex" && say "cmake $ex: $(tail -n 1 "$TMP/log.run_cmake_built_$ex")"
    done
  fi
fi

# 4. The installed CLI, without LD_LIBRARY_PATH, loading the installed library.
# check_cli LABEL PREFIX LIBDIR
check_cli() {
  local label=$1 prefix=$2 libdir=$3 out
  [ -x "$prefix/bin/dsv4kv" ] || { fail "$label: $prefix/bin/dsv4kv not installed"; return 1; }
  for flag in --version -V; do
    if out=$("$prefix/bin/dsv4kv" "$flag" 2>&1); then
      say "$label: dsv4kv $flag -> $out"
      case "$out" in "dsv4kv $VERSION"*) ;; *) fail "$label: dsv4kv $flag printed '$out', expected dsv4kv $VERSION" ;; esac
    else
      fail "$label: $prefix/bin/dsv4kv $flag: $out"
    fi
  done
  local so sov=${VERSION%%.*}
  [ "$sov" = 0 ] && sov=$(echo "$VERSION" | cut -d. -f1,2) # before 1.0 the soname carries the minor version
  so=$(ldd "$prefix/bin/dsv4kv" | sed -n 's/^[[:space:]]*libdsv4kv\.so[^ ]* => \(.*\)$/\1/p' | sed 's/ (0x[0-9a-f]*)$//')
  [ "$(realpath -m "$so")" = "$(realpath -m "$libdir/libdsv4kv.so.$sov")" ] ||
    fail "$label: the CLI loads '$so', not $libdir's library"
}
if [ $tools = 1 ]; then
  check_cli "installed CLI" "$P" "$LIBDIR"
else
  say "SKIP: the CLI (DSV4KV_BUILD_TOOLS is OFF in $BUILD)"
fi

# 5. Relocation: move the whole prefix; pkg-config and the CLI follow it.
P2=$TMP/moved/prefix
mkdir -p "$TMP/moved" && mv "$P" "$P2"
LIBDIR2=$P2${LIBDIR#"$P"}
check_pc "moved prefix" "$P2" "$LIBDIR2"
[ $tools = 1 ] && check_cli "moved prefix" "$P2" "$LIBDIR2"

if [ $failures -ne 0 ]; then
  echo "check_install: $failures check(s) FAILED" >&2
  exit 1
fi
say "all install checks passed"
