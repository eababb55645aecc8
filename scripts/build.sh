#!/usr/bin/env bash
# Configures and builds Locus in build/ (or $LOCUS_BUILD_DIR).
# Extra arguments go to CMake, e.g. -DLOCUS_BUILD_COMPILER=OFF.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${LOCUS_BUILD_DIR:-$root/build}

# clang++-19 compiles the MLIR-heavy files in less memory than g++ 12.
compilers=()
if command -v clang++-19 >/dev/null; then
  compilers=(-DCMAKE_C_COMPILER=clang-19 -DCMAKE_CXX_COMPILER=clang++-19)
fi
if [ ! -f "$build/CMakeCache.txt" ]; then
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    "${compilers[@]}" "$@"
else
  cmake "$build" "$@" >/dev/null
fi
# Two jobs: MLIR translation units take up to 2 GB each.
cmake --build "$build" -j "${LOCUS_JOBS:-2}"
