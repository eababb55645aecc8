#!/usr/bin/env bash
# Compiled forward passes (bench/forward_bench) beside PyTorch CPU eager
# (bench/torch_forward.py), or with `train` compiled training steps
# (bench/train_bench) beside PyTorch's (bench/torch_train.py), in
# alternating rounds so that both see the same machine; per model the
# median over rounds of each side's median, and the ratio (above 1: Locus is
# faster).
#   bench/compare.sh [rounds, default 3] [forward|train, default forward]
# Needs: python3-torch and libopenblas0-openmp (Debian); a build in build/.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${LOCUS_BUILD_DIR:-$root/build}
rounds=${1:-3}
case "${2:-forward}" in
forward) locus_bench=forward_bench torch_bench=torch_forward.py ;;
train) locus_bench=train_bench torch_bench=torch_train.py ;;
*) echo "usage: bench/compare.sh [rounds] [forward|train]" >&2; exit 2 ;;
esac
results=$(mktemp)
trap 'rm -f "$results"' EXIT
for ((r = 0; r < rounds; r++)); do
  "$build/bench/$locus_bench" --benchmark_repetitions=5 \
    --benchmark_report_aggregates_only=true --benchmark_format=csv 2>/dev/null |
    grep '_median"' | sed 's/"//g' |
    awk -F, '{split($1, a, "/"); sub("BM_", "", a[1]); sub("_median", "", a[2]); print "locus", a[1], a[2], $3}' >> "$results"
  LD_LIBRARY_PATH=/usr/lib/x86_64-linux-gnu/openblas-openmp \
    /usr/bin/python3 "$root/bench/$torch_bench" | sed 's/^/torch /' >> "$results"
done
/usr/bin/python3 - "$results" "$rounds" <<'PY'
import collections, statistics, sys
times = collections.defaultdict(list)
order = []
for line in open(sys.argv[1]):
    side, name, batch, us = line.split()
    if (name, batch) not in order:
        order.append((name, batch))
    times[(side, name, batch)].append(float(us))
print("%d alternating rounds; medians over rounds" % int(sys.argv[2]))
print("%-10s %6s %14s %14s %12s" % ("model", "batch", "locus_us", "torch_us", "torch/locus"))
for name, batch in order:
    l = statistics.median(times[("locus", name, batch)])
    t = statistics.median(times[("torch", name, batch)])
    print("%-10s %6s %14.1f %14.1f %12.2f" % (name, batch, l, t, t / l))
PY
