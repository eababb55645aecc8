#!/usr/bin/env bash
# Quick start: installs what is missing, builds, and runs the main job --
# records the seed's first model (torch.nn.Linear(10, 2) with MSELoss on a
# 100x10 batch) with the C++ frontend, prints it as locus IR (each op with the
# user's source line), shows where each op runs and why (locus-dump) under
# policy=auto and policy=prefer-gpu, then compiles it for this machine and
# runs it (examples/run_seed.cpp).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/install-deps.sh"
"$root/scripts/build.sh"
build=${LOCUS_BUILD_DIR:-$root/build}

echo
echo "== The seed model recorded by examples/seed_models.cpp, as locus IR =="
"$build/examples/seed_models" linear-mse --locations
"$build/examples/seed_models" linear-mse | "$build/tools/locus-opt" >/dev/null
echo "locus-opt parsed and verified this IR."

for policy in auto prefer-gpu; do
  echo
  echo "== Placement under policy=$policy (locus-dump --policy=$policy) =="
  "$build/examples/seed_models" linear-mse --locations |
    "$build/tools/locus-dump" --policy=$policy
done

echo
echo "== Compiled for this machine and run (examples/run_seed.cpp) =="
"$build/examples/run_seed"
