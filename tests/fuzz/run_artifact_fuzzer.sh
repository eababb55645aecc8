#!/usr/bin/env bash
# Runs the artifact fuzzer for a bounded time (LOCUS_FUZZ_SECONDS, default
# 60) from a fixed seed (LOCUS_FUZZ_SEED, default 1: the same inputs in the
# same order on every run, so a suite that passed here passes in CI; other
# seeds explore further) over a seed corpus of real artifacts that a full build's tools make:
# the seed models and an index model, on cpu, on cuda:0 (run on sim), and a
# training step. Prints libFuzzer's final statistics (executions, coverage);
# fails on any crash, leak or sanitizer report.
#   run_artifact_fuzzer.sh FUZZER FULL_BUILD_DIR WORK_DIR
set -euo pipefail
fuzzer=$1 tools=$2 work=$3
here=$(cd "$(dirname "$0")" && pwd)
seconds=${LOCUS_FUZZ_SECONDS:-60}
seed=${LOCUS_FUZZ_SEED:-1}
rm -rf "$work"
mkdir -p "$work/seeds" "$work/corpus" "$work/artifacts"
compile() { "$tools/tools/locus-compile" "$@" > /dev/null; }
for m in linear-mse cnn model-moved; do
  "$tools/examples/seed_models" "$m" > "$work/$m.mlir"
  compile "$work/$m.mlir" -o "$work/seeds/$m-cpu.locus" --policy=cpu --devices=cpu
  compile "$work/$m.mlir" -o "$work/seeds/$m-gpu.locus" --policy=prefer-gpu
done
"$tools/tools/locus-opt" --locus-autodiff='optimizer=adam lr=0.01' \
  "$work/linear-mse.mlir" > "$work/train.mlir"
compile "$work/train.mlir" -o "$work/seeds/train-gpu.locus" --policy=prefer-gpu
compile "$here/seeds/indices.mlir" -o "$work/seeds/indices-cpu.locus" --policy=cpu --devices=cpu
compile "$here/seeds/indices.mlir" -o "$work/seeds/indices-gpu.locus" --policy=prefer-gpu
echo "seed corpus: $(ls "$work/seeds" | wc -l) artifacts, $(cat "$work/seeds"/* | wc -c) bytes"

# cuda:0 runs on sim where there is no GPU (the runtime's default).
export LOCUS_FUZZ_GENUINE="$work/seeds"
export ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
cd "$work/artifacts"
# First the inputs that once crashed (tests/fuzz/regressions), each once.
"$fuzzer" "$here"/regressions/*.locus > "$work/regressions.log" 2>&1 || {
  tail -40 "$work/regressions.log"
  echo "artifact fuzzer: a regression input fails again" >&2
  exit 1
}
"$fuzzer" "$work/corpus" "$work/seeds" -max_total_time="$seconds" -seed="$seed" \
  -max_len=400000 -rss_limit_mb=3072 -timeout=20 -print_final_stats=1 \
  > "$work/fuzz.log" 2>&1 || {
  tail -60 "$work/fuzz.log"
  echo "artifact fuzzer: a finding (crash input in $work/artifacts)" >&2
  exit 1
}
grep -E "^#[0-9]+.*(INITED|DONE)|stat::number_of_executed_units|stat::peak_rss_mb|cov:" \
  "$work/fuzz.log" | tail -4
