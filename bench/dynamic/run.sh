#!/bin/sh
# Dynamic against static sizes on the CPU: one artifact with a dynamic
# batch (bound 64) against artifacts compiled for batch 1, 16 and 64, run
# in interleaved rounds by locus-run (medians of 300 steps after 2 warm-up
# steps; 30 for the CNN), for a 784-256-10 MLP and for a residual CNN of
# the runtime's convolutions (two 3x3 convolutions of 64 channels on 28x28,
# the second with a residual add, ReLUs, a pooling, a global average and a
# linear layer; recorded through the Python module).
# Usage: bench/dynamic/run.sh [BUILD] [ROUNDS]
set -eu
py=${PYTHON:-/usr/bin/python3} # with numpy
build=${1:-build}
rounds=${2:-3}
tools=$(cd "$build/tools" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
graph() { # graph NAME BATCH DYNAMIC
  dims=""
  attrs=""
  if [ "$3" = 1 ]; then
    attrs=' attributes {locus.symbols = [["batch", 64]]}'
    dims=' {locus.dims = affine_map<()[s0] -> (s0, 784)>}'
  fi
  n=$2
  cat > "$work/$1.mlir" <<MLIR
locus.graph @mlp$attrs {
  %x = locus.input "x"$dims : tensor<${n}x784xf32>
  %w1 = locus.state "w1" parameter : tensor<256x784xf32> init <uniform(-0.05, 0.05), seed = 1>
  %b1 = locus.state "b1" parameter : tensor<256xf32> init <uniform(-0.05, 0.05), seed = 2>
  %w2 = locus.state "w2" parameter : tensor<10x256xf32> init <uniform(-0.05, 0.05), seed = 3>
  %b2 = locus.state "b2" parameter : tensor<10xf32> init <uniform(-0.05, 0.05), seed = 4>
  %h = locus.linear %x, %w1, %b1 : tensor<${n}x784xf32>, tensor<256x784xf32>, tensor<256xf32> -> tensor<${n}x256xf32>
  %r = locus.relu %h : tensor<${n}x256xf32>
  %y = locus.linear %r, %w2, %b2 : tensor<${n}x256xf32>, tensor<10x256xf32>, tensor<10xf32> -> tensor<${n}x10xf32>
  %p = locus.softmax %y axis 1 : tensor<${n}x10xf32>
  locus.output "p" = %p : tensor<${n}x10xf32>
}
MLIR
  "$tools/locus-compile" "$work/$1.mlir" --policy=cpu --no-cache \
    -o "$work/$1.locus" > /dev/null
}
cnn() { # cnn NAME BATCH DYNAMIC
  PYTHONPATH="$tools/../python" "$py" - "$work/$1.mlir" "$2" "$3" <<'PY'
import sys, locus
path, n, dynamic = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "1"
g = locus.Graph("cnn")
g.manual_seed(0)
x = g.input("x", [locus.dyn("batch", 64) if dynamic else n, 64, 28, 28])
c1 = locus.nn.Conv2d(g, 64, 64, 3, padding=1)
c2 = locus.nn.Conv2d(g, 64, 64, 3, padding=1)
fc = locus.nn.Linear(g, 64, 10)
h = locus.relu(c1(x))
h = locus.max_pool2d(locus.relu(c2(h) + h), [2, 2])
g.output("p", locus.softmax(fc(locus.mean(h, [2, 3])), 1))
open(path, "w").write(g.str())
PY
  "$tools/locus-compile" "$work/$1.mlir" --policy=cpu --no-cache \
    -o "$work/$1.locus" > /dev/null
}
graph mlp_dynamic 64 1
cnn cnn_dynamic 64 1
for n in 1 16 64; do
  graph "mlp_static$n" "$n" 0
  cnn "cnn_static$n" "$n" 0
  "$py" -c "import numpy as np; np.save('$work/mlp_x$n.npy', np.random.default_rng($n).standard_normal(($n, 784)).astype(np.float32)); np.save('$work/cnn_x$n.npy', np.random.default_rng($n).standard_normal(($n, 64, 28, 28)).astype(np.float32))"
done
median() { # median ARTIFACT INPUT RUNS
  "$tools/locus-run" "$1" --input "x=$2" --runs "$3" --quiet |
    sed -n 's/.*median \([0-9.]*\) us.*/\1/p'
}
echo "load: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "round model batch static_us dynamic_us dynamic/static"
r=1
while [ "$r" -le "$rounds" ]; do
  for m in mlp cnn; do
    runs=302
    [ "$m" = cnn ] && runs=32
    for n in 1 16 64; do
      s=$(median "$work/${m}_static$n.locus" "$work/${m}_x$n.npy" "$runs")
      d=$(median "$work/${m}_dynamic.locus" "$work/${m}_x$n.npy" "$runs")
      echo "$r $m $n $s $d $("$py" -c "print(f'{$d / $s:.2f}')")"
    done
  done
  r=$((r + 1))
done
