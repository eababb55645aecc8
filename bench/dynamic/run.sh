#!/bin/sh
# Dynamic against static sizes on the CPU: one artifact of a 784-256-10
# MLP with a dynamic batch (bound 64) against artifacts compiled for batch
# 1, 16 and 64, run in interleaved rounds by locus-run (medians of 300
# steps after 2 warm-up steps). Usage: bench/dynamic/run.sh [BUILD] [ROUNDS]
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
graph dynamic 64 1
for n in 1 16 64; do
  graph "static$n" "$n" 0
  "$py" -c "import numpy as np; np.save('$work/x$n.npy', np.random.default_rng($n).standard_normal(($n, 784)).astype(np.float32))"
done
median() {
  "$tools/locus-run" "$1" --input "x=$2" --runs 302 --quiet |
    sed -n 's/.*median \([0-9.]*\) us.*/\1/p'
}
echo "load: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "round batch static_us dynamic_us dynamic/static"
r=1
while [ "$r" -le "$rounds" ]; do
  for n in 1 16 64; do
    s=$(median "$work/static$n.locus" "$work/x$n.npy")
    d=$(median "$work/dynamic.locus" "$work/x$n.npy")
    echo "$r $n $s $d $("$py" -c "print(f'{$d / $s:.2f}')")"
  done
  r=$((r + 1))
done
