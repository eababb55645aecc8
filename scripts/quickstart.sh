#!/usr/bin/env bash
# Quick start: installs what is missing, builds, and runs the main job on the
# seed's first model (torch.nn.Linear(10, 2) with MSELoss on a 100x10 batch):
# records it with the C++ frontend and prints it as locus IR (each op with
# the user's source line); compiles it ahead of time for cpu + cuda:0 into an
# artifact (examples/save_seed.cpp); shows with locus-dump where each op
# runs and why; and runs the artifact with the runtime alone
# (examples/run_artifact.cpp) -- on this machine's GPU when it has one, on
# the sim device that stands in for it otherwise. Once under policy=auto,
# once under policy=prefer-gpu. Then trains the same model for 10 steps
# (examples/seeds/seed_both_moved.cpp). Last, compiles an ONNX model
# (tests/lit/Tools/Inputs/mlp.onnx) and runs it.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/install-deps.sh"
"$root/scripts/build.sh"
build=${LOCUS_BUILD_DIR:-$root/build}

echo
echo "== The seed model recorded by examples/seed_models.cpp, as locus IR =="
"$build/examples/seed_models" linear-mse --locations

for policy in auto prefer-gpu; do
  artifact="$build/seed-$policy.locus"
  echo
  echo "== policy=$policy: compiled ahead of time (examples/save_seed.cpp) =="
  "$build/examples/save_seed" "$artifact" --policy "$policy"
  echo
  echo "== policy=$policy: its placement (locus-dump $(basename "$artifact")) =="
  "$build/tools/locus-dump" "$artifact" --format=table
  echo
  echo "== policy=$policy: run by the runtime alone (examples/run_artifact.cpp) =="
  "$build/examples/run_artifact" "$artifact"
done

echo
echo "== The seed's training loop (examples/seeds/seed_both_moved.cpp): model and"
echo "   data on cuda:0, backward pass and SGD compiled into the step =="
"$build/examples/seed_both_moved"

# An ONNX model (a small MLP exported as ONNX: tests/lit/Tools/Inputs/mlp.onnx,
# made by make_onnx.py there) compiled straight from the .onnx file, its
# placement shown op by op at the model's nodes, and run by the runtime alone.
onnx="$root/tests/lit/Tools/Inputs/mlp.onnx"
echo
echo "== An ONNX model: locus-compile mlp.onnx --shape x=5x4 (its 'batch' dimension is symbolic) =="
"$build/tools/locus-compile" "$onnx" -o "$build/mlp-onnx.locus" --shape x=5x4 \
  --devices=cpu,cuda:0 --policy=prefer-gpu
"$build/tools/locus-dump" "$build/mlp-onnx.locus" --format=table
"$build/tools/locus-run" "$build/mlp-onnx.locus" --random-inputs
