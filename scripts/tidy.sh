#!/usr/bin/env bash
# clang-tidy-19 with the root .clang-tidy over the sources that include no
# MLIR; with --all, over every source (about 2 more minutes).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
files=(runtime/src/*.cpp compiler/lib/Frontend/Nn.cpp examples/*.cpp
       tests/unit/RuntimeTest.cpp)
if [ "${1:-}" = "--all" ]; then
  files+=(compiler/lib/Dialect/*.cpp compiler/lib/Frontend/Graph.cpp
          compiler/lib/Frontend/Ops.cpp tools/*/*.cpp)
fi
clang-tidy-19 -p build --quiet "${files[@]}"
echo "clang-tidy ok (${#files[@]} files)"
