#!/usr/bin/env bash
# Runs the safetensors fuzzer for a bounded time (LOCUS_FUZZ_SECONDS_ST,
# default 20) from a fixed seed, over a seed corpus of valid files written
# here (F32, F16, BF16 and F64 tensors, metadata, an empty tensor). Fails
# on any crash, leak or sanitizer report.
#   run_safetensors_fuzzer.sh FUZZER WORK_DIR
set -euo pipefail
fuzzer=$1 work=$2
seconds=${LOCUS_FUZZ_SECONDS_ST:-20}
rm -rf "$work"
mkdir -p "$work/seeds" "$work/corpus" "$work/crashes"
python3 - "$work/seeds" <<'PY'
import json, os, struct, sys
out = sys.argv[1]
def write(name, tensors, meta=None):
    header, data = {}, b""
    if meta:
        header["__metadata__"] = meta
    for tname, dtype, shape, raw in tensors:
        header[tname] = {"dtype": dtype, "shape": shape,
                         "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    h = json.dumps(header).encode()
    with open(os.path.join(out, name), "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + data)
write("f32.safetensors", [("w", "F32", [2, 3], struct.pack("<6f", *range(6)))],
      {"format": "pt"})
write("mixed.safetensors", [("a", "F16", [4], struct.pack("<4H", 0x3c00, 0xc000, 0x3800, 0x7bff)),
                            ("b", "BF16", [2], struct.pack("<2H", 0x3f80, 0xc040)),
                            ("c", "F64", [2], struct.pack("<2d", 0.5, -1.5)),
                            ("e", "F32", [0], b"")])
write("i64.safetensors", [("n", "I64", [3], struct.pack("<3q", 1, 2, 3))])
PY
export ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
cd "$work/crashes"
"$fuzzer" "$work/corpus" "$work/seeds" -max_total_time="$seconds" -seed=1 \
  -max_len=65536 -rss_limit_mb=2048 -timeout=10 -print_final_stats=1 \
  > "$work/fuzz.log" 2>&1 || {
  tail -60 "$work/fuzz.log"
  echo "safetensors fuzzer: a finding (crash input in $work/crashes)" >&2
  exit 1
}
grep -E "^#[0-9]+.*(INITED|DONE)|stat::number_of_executed_units|stat::peak_rss_mb" \
  "$work/fuzz.log" | tail -3
