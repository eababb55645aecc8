#!/usr/bin/env bash
# Locus beside ONNX Runtime and PyTorch on the CPU, in one run: the
# inference models of bench/models.py (exported to ONNX by PyTorch; Locus
# compiles the same files ahead of time and runs them with locus-run, ONNX
# Runtime runs them through its npm package), and the training steps of
# bench/train_bench (Google Benchmark) beside bench/torch_train.py.
#
#   bench/compare.sh [rounds, default 3]
#
# Each round runs Locus, then ONNX Runtime, then PyTorch; per case the
# median over rounds of each side's median, and Locus's time over the best
# peer's (below 1: Locus is faster). The inference models also run
# compiled with precision="bf16" beside Locus's f32, each round: the
# bf16/f32 column (below 1: bf16 is faster). The machine's load is noted before and
# after each round: /proc/loadavg, and the share of both cores that other
# processes kept busy during 2 idle seconds (the load averages lag: they
# still count the previous round's own work). A round whose idle-time
# share busy exceeds LOCUS_BENCH_MAX_BUSY (default 0.10), before or after,
# or whose steal time exceeds 2%, is flagged noisy.
#
# Needs: a build in build/ (LOCUS_BUILD_DIR), python3-torch, and node with
# npm: onnxruntime-node is installed into bench/.cache (with
# ONNXRUNTIME_NODE_INSTALL=skip: its CUDA binaries are not fetched).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${LOCUS_BUILD_DIR:-$root/build}
rounds=${1:-3}
max_busy=${LOCUS_BENCH_MAX_BUSY:-0.10}
cache=${LOCUS_BENCH_CACHE:-$root/bench/.cache}
ort_version=1.30.0
mkdir -p "$cache/models"
py=/usr/bin/python3
export LD_LIBRARY_PATH=/usr/lib/x86_64-linux-gnu/openblas-openmp${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}

if [ ! -d "$cache/node_modules/onnxruntime-node" ]; then
  echo "installing onnxruntime-node@$ort_version into $cache" >&2
  (cd "$cache" && ONNXRUNTIME_NODE_INSTALL=skip npm install --silent --no-audit \
     --no-fund "onnxruntime-node@$ort_version" >&2)
fi
models=$cache/models
"$py" "$root/bench/models.py" export "$models" 2>/dev/null
# The same models in bf16 (precision="bf16": products and convolutions on
# rounded operands, oneDNN's bf16 kernels where they win): the bf16/f32
# column.
mkdir -p "$models/bf16"
for f in "$models"/*.onnx; do
  "$build/tools/locus-compile" --policy=cpu --devices=cpu --cpu=native \
    --progress=never "$f" -o "${f%.onnx}.locus" >/dev/null
  "$build/tools/locus-compile" --policy=cpu --devices=cpu --cpu=native \
    --progress=never --precision=bf16 "$f" \
    -o "$models/bf16/$(basename "${f%.onnx}").locus" >/dev/null
done

# Locus: each artifact through locus-run, enough runs for about 0.4 s
# (DIR: the f32 artifacts, or bf16/).
locus_runs() {
  for a in "$1"/*.locus; do
    local base name batch us runs
    base=$(basename "$a" .locus)
    name=${base%_b*} batch=${base##*_b}
    us=$("$build/tools/locus-run" "$a" --random-inputs --runs 5 --quiet |
         sed -n 's/^step time: median \([0-9.]*\) us.*/\1/p')
    runs=$("$py" -c "print(max(7, min(2000, int(4e5 / max($us, 1)))))")
    us=$("$build/tools/locus-run" "$a" --random-inputs --runs "$runs" --quiet |
         sed -n 's/^step time: median \([0-9.]*\) us.*/\1/p')
    echo "$name $batch $us"
  done
}
locus_round() {
  locus_runs "$models"
  "$build/bench/train_bench" --benchmark_repetitions=5 \
    --benchmark_report_aggregates_only=true --benchmark_format=csv 2>/dev/null |
    grep '_median"' | sed 's/"//g' |
    awk -F, '{split($1, a, "/"); sub("BM_", "", a[1]); sub("_median", "", a[2]); print a[1], a[2], $3}'
}

# The raw times stay in the cache (the summary below reads them).
results=$cache/last-run.txt
: > "$results"
steal() { awk '/^cpu /{print $9, $2+$3+$4+$5+$6+$7+$8+$9}' /proc/stat; }
# The share of all cores busy over 2 s while this script sleeps: others' load.
busy() {
  local a b
  a=$(awk '/^cpu /{print $5+$6, $2+$3+$4+$5+$6+$7+$8+$9}' /proc/stat)
  sleep 2
  b=$(awk '/^cpu /{print $5+$6, $2+$3+$4+$5+$6+$7+$8+$9}' /proc/stat)
  echo "$a $b" | awk '{t = $4 - $2; printf "%.3f", (t > 0 ? 1 - ($3 - $1) / t : 0)}'
}
for ((r = 1; r <= rounds; r++)); do
  busy_before=$(busy)
  load_before=$(cut -d' ' -f1-3 /proc/loadavg)
  read -r steal0 total0 < <(steal)
  locus_round | sed "s/^/$r locus /" >> "$results"
  locus_runs "$models/bf16" | sed "s/^/$r bf16 /" >> "$results"
  NODE_PATH=$cache/node_modules node "$root/bench/ort_bench.js" "$models" |
    sed "s/^/$r ort /" >> "$results"
  "$py" "$root/bench/models.py" time | sed "s/^/$r torch /" >> "$results"
  "$py" "$root/bench/torch_train.py" | sed "s/^/$r torch /" >> "$results"
  read -r steal1 total1 < <(steal)
  load_after=$(cut -d' ' -f1-3 /proc/loadavg)
  busy_after=$(busy)
  echo "round $r load $load_before -> $load_after busy $busy_before $busy_after steal $steal0 $total0 $steal1 $total1" >> "$results"
done

"$py" - "$results" "$max_busy" <<'PY'
import collections, statistics, sys
times = collections.defaultdict(list)
order = []
rounds = []
for line in open(sys.argv[1]):
    f = line.split()
    if f[0] == "round":
        b0, b1 = float(f[11]), float(f[12])
        s0, t0, s1, t1 = map(int, f[-4:])
        steal = (s1 - s0) / max(1, t1 - t0)
        noisy = max(b0, b1) > float(sys.argv[2]) or steal > 0.02
        rounds.append("round %s: load %s -> %s, others busy %.0f%% -> %.0f%%, steal %.1f%%%s" % (
            f[1], " ".join(f[3:6]), " ".join(f[7:10]), 100 * b0, 100 * b1,
            100 * steal, "  NOISY" if noisy else ""))
        continue
    _, side, name, batch, us = f
    if (name, batch) not in order:
        order.append((name, batch))
    times[(side, name, batch)].append(float(us))
print("\n".join(rounds))
print("%d rounds; per case the median over rounds (us)" % len(rounds))
print("%-14s %6s %11s %11s %11s %10s %9s" % ("model", "batch", "locus", "ort", "torch",
                                              "locus/best", "bf16/f32"))
for name, batch in order:
    med = {s: statistics.median(times[(s, name, batch)]) if times[(s, name, batch)] else None
           for s in ("locus", "ort", "torch", "bf16")}
    peers = [v for s, v in med.items() if s in ("ort", "torch") and v]
    cell = lambda v: "%11.1f" % v if v else "%11s" % "-"
    ratio = med["locus"] / min(peers) if med["locus"] and peers else float("nan")
    half = "%9.2f" % (med["bf16"] / med["locus"]) if med["bf16"] and med["locus"] else "%9s" % "-"
    print("%-14s %6s %s %s %s %10.2f %s" % (name, batch, cell(med["locus"]), cell(med["ort"]),
                                             cell(med["torch"]), ratio, half))
PY
