#!/usr/bin/env bash
# Compiled forward passes (bench/forward_bench) beside PyTorch CPU eager
# (bench/torch_forward.py) in one run, medians, and the ratios.
# Needs: python3-torch and libopenblas0-openmp (Debian); a build in build/.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${LOCUS_BUILD_DIR:-$root/build}
locus=$("$build/bench/forward_bench" --benchmark_repetitions=5 \
  --benchmark_report_aggregates_only=true --benchmark_format=csv 2>/dev/null |
  grep '_median"' | sed 's/"//g' |
  awk -F, '{split($1, a, "/"); sub("BM_", "", a[1]); sub("_median", "", a[2]); print a[1], a[2], $3}')
torch=$(LD_LIBRARY_PATH=/usr/lib/x86_64-linux-gnu/openblas-openmp \
  /usr/bin/python3 "$root/bench/torch_forward.py")
printf '%-10s %6s %14s %14s %10s\n' model batch locus_us torch_us torch/locus
while read -r name batch us; do
  t=$(echo "$torch" | awk -v n="$name" -v b="$batch" '$1 == n && $2 == b {print $3}')
  awk -v n="$name" -v b="$batch" -v l="$us" -v t="$t" \
    'BEGIN {printf "%-10s %6s %14.1f %14.1f %10.2f\n", n, b, l, t, t / l}'
done <<< "$locus"
