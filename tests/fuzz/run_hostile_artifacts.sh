#!/usr/bin/env bash
# The audit's failures, reproduced at the tool level against a runtime built
# with ASan and UBSan: artifacts that a full build's tools compile, then
# run by this build's locus-run with bad labels and ids, and with trusted
# keys given for unsigned and changed artifacts. Each must end in a clean
# error with the expected message (exit 1), never a crash or a sanitizer
# report.
#   run_hostile_artifacts.sh LOCUS_RUN FULL_BUILD_DIR WORK_DIR
set -euo pipefail
run=$1 tools=$2 work=$3
src=$(cd "$(dirname "$0")/../.." && pwd)
rm -rf "$work"
mkdir -p "$work"
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
compile() { "$tools/tools/locus-compile" "$@" > /dev/null; }
"$tools/tools/locus-compile" --generate-key "$work/builder" > /dev/null
compile "$src/tests/fuzz/seeds/indices.mlir" -o "$work/cpu.locus" --policy=cpu --devices=cpu
compile "$src/tests/fuzz/seeds/indices.mlir" -o "$work/sim.locus" --policy=prefer-gpu --sign-key "$work/builder.key"
python3 "$src/tests/lit/Tools/Inputs/tamper_artifact.py" "$work/sim.locus" "$work/changed.locus"
ids() { python3 -c "import struct,sys; open(sys.argv[1],'wb').write(struct.pack('<8q',*[int(sys.argv[2])]*8))" "$@"; }
ids "$work/ok.raw" 3
failures=0
# expect MESSAGE ARGS...: locus-run ARGS exits 1 and says MESSAGE.
expect() {
  local message=$1
  shift
  local out rc=0
  out=$("$run" "$@" 2>&1) || rc=$?
  if [ "$rc" -ne 1 ] || ! grep -qF -- "$message" <<<"$out"; then
    echo "FAIL (exit $rc): locus-run $*"
    echo "  expected: $message"
    echo "$out" | tail -20 | sed 's/^/  | /'
    failures=$((failures + 1))
  else
    echo "ok: $message"
  fi
}
# Labels index 10 classes, ids a table of 50 rows.
for bad in 10 50 -5 1000000000000000 -9223372036854775808; do
  ids "$work/bad.raw" "$bad"
  for artifact in cpu sim; do
    expect "labels outside [0, 10) (8 found)" "$work/$artifact.locus" \
      --input ids="$work/ok.raw" --input labels="$work/bad.raw" --quiet
    [ "$bad" = 10 ] ||
      expect "indices outside [0, 50) (8 found)" "$work/$artifact.locus" \
        --input ids="$work/bad.raw" --input labels="$work/ok.raw" --quiet
  done
done
expect "the artifact is not signed" "$work/cpu.locus" --random-inputs \
  --trusted-key "$work/builder.pub"
expect "it was changed after it was signed" "$work/changed.locus" \
  --random-inputs --trusted-key "$work/builder.pub"
"$run" "$work/sim.locus" --input ids="$work/ok.raw" --input labels="$work/ok.raw" \
  --quiet --trusted-key "$work/builder.pub" > /dev/null
echo "signed artifact runs with its key"
[ "$failures" -eq 0 ]
