#!/usr/bin/env bash
# Runs the ONNX importer fuzzer for a bounded time (LOCUS_FUZZ_SECONDS_ONNX,
# default 30) from a fixed seed, over a seed corpus of the small models the
# tool tests read (with external data), plus ONNX's own node tests when
# Debian's libonnx-testdata is installed. Fails on any crash, hang, leak or
# sanitizer report.
#   run_onnx_import_fuzzer.sh FUZZER WORK_DIR
set -euo pipefail
fuzzer=$1 work=$2
seconds=${LOCUS_FUZZ_SECONDS_ONNX:-30}
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$work"
mkdir -p "$work/seeds" "$work/corpus" "$work/crashes"
cp "$here"/../lit/Tools/Inputs/*.onnx "$work/seeds/"
data=/usr/share/libonnx-testdata/data/node
if [ -d "$data" ]; then
  for op in conv gemm relu add matmul reshape concat slice gather clip \
            batchnorm_example maxpool_1d_default averagepool_2d_default \
            softmax_axis_0 transpose_default split_equal_parts_1d; do
    for m in "$data"/test_"$op"*/model.onnx; do
      [ -f "$m" ] && cp "$m" "$work/seeds/$(basename "$(dirname "$m")").onnx"
    done
  done
fi
export ASAN_OPTIONS=detect_leaks=0:allocator_may_return_null=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
cd "$work/crashes"
# First the inputs that once crashed (tests/fuzz/regressions), each once.
"$fuzzer" "$here"/regressions/*.onnx > "$work/regressions.log" 2>&1 || {
  tail -40 "$work/regressions.log"
  echo "ONNX import fuzzer: a regression input fails again" >&2
  exit 1
}
"$fuzzer" "$work/corpus" "$work/seeds" -max_total_time="$seconds" -seed=1 \
  -max_len=65536 -rss_limit_mb=4096 -timeout=20 -print_final_stats=1 \
  > "$work/fuzz.log" 2>&1 || {
  tail -60 "$work/fuzz.log"
  echo "ONNX import fuzzer: a finding (crash input in $work/crashes)" >&2
  exit 1
}
grep -E "^#[0-9]+.*(INITED|DONE)|stat::number_of_executed_units|stat::peak_rss_mb" \
  "$work/fuzz.log" | tail -3
