#!/bin/sh
# Dynamic against static sequence lengths on the CPU: the GPT-style ONNX
# export of tests/onnx/dynamic (symbolic batch and seq) compiled once with
# --dynamic batch=8 --dynamic seq=16, against artifacts compiled with
# --shape for each case, run in interleaved rounds by locus-run (medians of
# 200 steps after 2 warm-up steps).
# Usage: bench/dynamic/gpt.sh [BUILD] [ROUNDS]
set -eu
py=${PYTHON:-/usr/bin/python3} # with numpy
build=${1:-build}
rounds=${2:-3}
tools=$(cd "$build/tools" && pwd)
here=$(cd "$(dirname "$0")/../../tests/onnx/dynamic" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$tools/locus-compile" "$here/gpt.onnx" --policy=cpu --devices=cpu \
  --dynamic batch=8 --dynamic seq=16 -o "$work/dynamic.locus" > /dev/null
cases="1x5 1x16 7x5 7x16"
for c in $cases; do
  "$tools/locus-compile" "$here/gpt.onnx" --policy=cpu --devices=cpu \
    --shape "ids=$c" -o "$work/static_$c.locus" > /dev/null
  "$py" -c "import numpy as np; b, s = map(int, '$c'.split('x')); np.save('$work/ids_$c.npy', np.random.default_rng(0).integers(0, 50, (b, s)))"
done
median() { # median ARTIFACT INPUT: microseconds per step
  "$tools/locus-run" "$1" --input "ids=$2" --runs 202 --quiet |
    sed -n 's/.*median \([0-9.]*\) us.*/\1/p'
}
echo "load: $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-6s %s\n' case "dynamic/static per round (median us)"
for c in $cases; do
  line=""
  for r in $(seq "$rounds"); do
    d=$(median "$work/dynamic.locus" "$work/ids_$c.npy")
    s=$(median "$work/static_$c.locus" "$work/ids_$c.npy")
    line="$line $(awk -v d="$d" -v s="$s" 'BEGIN { printf "%.2f(%s/%s)", d / s, d, s }')"
  done
  printf '%-6s%s\n' "$c" "$line"
done
