#!/usr/bin/env bash
# clang-tidy-19 with the root .clang-tidy over the sources that include no
# MLIR; with --all, over every source (about 2 more minutes).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
files=(runtime/src/*.cpp compiler/lib/Frontend/Nn.cpp examples/*.cpp
       passes/lib/MinCut.cpp tests/unit/RuntimeTest.cpp tests/unit/MinCutTest.cpp)
if [ "${1:-}" = "--all" ]; then
  files+=(compiler/lib/Dialect/*.cpp compiler/lib/Frontend/Graph.cpp
          compiler/lib/Frontend/Ops.cpp compiler/lib/Dump/*.cpp
          passes/lib/CostModel.cpp passes/lib/PlaceDevices.cpp
          passes/lib/InsertTransfers.cpp tools/*/*.cpp bench/*.cpp)
fi
clang-tidy-19 -p build --quiet "${files[@]}"
echo "clang-tidy ok (${#files[@]} files)"
