#!/usr/bin/env bash
# clang-tidy-19 with the root .clang-tidy over the sources that include no
# MLIR; with --all, over every source (about 2 more minutes).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
files=(runtime/src/*.cpp compiler/lib/Frontend/Nn.cpp examples/*.cpp
       examples/seeds/*.cpp tests/unit/TrainTest.cpp
       passes/lib/MinCut.cpp compiler/lib/Plan/MemoryPlan.cpp
       tools/locus-run/locus-run.cpp tests/unit/RuntimeTest.cpp
       tests/unit/MinCutTest.cpp tests/unit/ExecutorTest.cpp
       tests/unit/MemoryPlanTest.cpp)
if [ "${1:-}" = "--all" ]; then
  files+=(compiler/lib/Dialect/*.cpp compiler/lib/Frontend/Graph.cpp
          compiler/lib/Frontend/Ops.cpp compiler/lib/Frontend/Train.cpp
          compiler/lib/Dump/*.cpp
          compiler/lib/Compile/*.cpp compiler/lib/Plan/Plan.cpp
          passes/lib/CostModel.cpp passes/lib/PlaceDevices.cpp
          passes/lib/InsertTransfers.cpp passes/lib/FuseKernels.cpp
          passes/lib/OutlineKernels.cpp passes/lib/FuseElementwise.cpp
          passes/lib/Parallelize.cpp passes/lib/Autodiff.cpp
          passes/lib/LinalgToBlas.cpp passes/lib/LowerToLinalg.cpp
          tools/locus-opt/*.cpp
          tools/locus-dump/*.cpp tools/locus-compile/*.cpp bench/*.cpp)
fi
clang-tidy-19 -p build --quiet "${files[@]}"
echo "clang-tidy ok (${#files[@]} files)"
