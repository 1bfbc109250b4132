#!/bin/sh
# Builds the robustness harness (fuzz_dsv4kv.c and api/*.c) out of tree.
# Usage: tests/fuzz/build.sh [outdir]
#   <out>/asan/libdsv4kv.so   library with ASan + UBSan (UB fatal)
#   <out>/fuzz_asan           seeded random loop:  fuzz_asan [iters] [seconds] [seed]
#   <out>/fuzz_plain          same, uninstrumented (for valgrind)
#   <out>/repro_asan|plain    minimal reproducers: repro f1 .. f12
#   <out>/libfuzz             libFuzzer target (clang)
set -e
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OUT=${1:-/tmp/dsv4kv-fuzz}
S=$ROOT/tests/fuzz
SAN="-fsanitize=address,undefined,float-cast-overflow -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
CF="-std=c11 -g -O1 -Wall -Wextra -Wno-unused-parameter -I$ROOT/include -I$ROOT/tools"
mkdir -p "$OUT"
cmake -S "$ROOT" -B "$OUT/asan" -DCMAKE_BUILD_TYPE=Debug -DCMAKE_C_FLAGS="$SAN" \
  -DDSV4KV_BUILD_TESTS=OFF -DDSV4KV_BUILD_TOOLS=OFF >/dev/null
cmake --build "$OUT/asan" -j2 --target dsv4kv >/dev/null
cmake -S "$ROOT" -B "$OUT/plain" -DCMAKE_BUILD_TYPE=Debug -DDSV4KV_BUILD_TESTS=OFF -DDSV4KV_BUILD_TOOLS=OFF >/dev/null
cmake --build "$OUT/plain" -j2 --target dsv4kv >/dev/null
gcc $CF $SAN "$S/fuzz_dsv4kv.c" "$S"/api/*.c "$ROOT/tools/opcall.c" -L"$OUT/asan" -ldsv4kv -Wl,-rpath,"$OUT/asan" -lm -o "$OUT/fuzz_asan"
gcc $CF "$S/fuzz_dsv4kv.c" "$S"/api/*.c "$ROOT/tools/opcall.c" -L"$OUT/plain" -ldsv4kv -Wl,-rpath,"$OUT/plain" -lm -o "$OUT/fuzz_plain"
gcc $CF $SAN "$S/repro.c" -L"$OUT/asan" -ldsv4kv -Wl,-rpath,"$OUT/asan" -lm -o "$OUT/repro_asan"
gcc $CF "$S/repro.c" -L"$OUT/plain" -ldsv4kv -Wl,-rpath,"$OUT/plain" -lm -o "$OUT/repro_plain"
if command -v clang >/dev/null; then
  # the library's sources compiled in: the definitions its CMake target adds
  VERSION=$(sed -n 's/^project(dsv4kv VERSION \([0-9.]*\).*/\1/p' "$ROOT/CMakeLists.txt")
  clang -std=c11 -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer \
    -fopenmp -ffp-contract=off -DFUZZ_LIBFUZZER -DDSV4KV_BUILDING -DDSV4KV_VERSION_STRING="\"$VERSION\"" \
    -I"$ROOT/include" -I"$ROOT/src" "$ROOT"/src/*.c "$ROOT"/src/*/*.c \
    -I"$ROOT/tools" "$S/fuzz_dsv4kv.c" "$S"/api/*.c "$ROOT/tools/opcall.c" -lm -o "$OUT/libfuzz" 2>/dev/null || echo "libFuzzer target not built"
fi
echo "built in $OUT"
echo "run: OMP_WAIT_POLICY=passive FUZZ_AVOID_BIGALLOC=1 ASAN_OPTIONS=allocator_may_return_null=1 $OUT/fuzz_asan 400000 1500 1"
