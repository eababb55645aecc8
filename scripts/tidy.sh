#!/usr/bin/env bash
# clang-tidy-19 with the root .clang-tidy over every translation unit the
# build compiles: the files of build/compile_commands.json (or
# $LOCUS_BUILD_DIR's), so no list is kept by hand. Any finding fails
# (WarningsAsErrors). Extra arguments are file regexes that narrow the run,
# e.g. scripts/tidy.sh 'runtime/'.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${LOCUS_BUILD_DIR:-$root/build}
[ -f "$build/compile_commands.json" ] || {
  echo "tidy: no $build/compile_commands.json; build first (scripts/build.sh)" >&2
  exit 1
}
patterns=("$@")
[ ${#patterns[@]} -gt 0 ] || patterns=("$root/")
count=$(python3 - "$build/compile_commands.json" "${patterns[@]}" <<'PY'
import json, re, sys
files = {e["file"] for e in json.load(open(sys.argv[1]))}
print(sum(any(re.search(p, f) for p in sys.argv[2:]) for f in files))
PY
)
run-clang-tidy-19 -p "$build" -j "${LOCUS_JOBS:-2}" -quiet \
  -clang-tidy-binary "$(command -v clang-tidy-19)" "${patterns[@]}" \
  > "$build/clang-tidy.log" 2>&1 || {
  grep -E "warning:|error:" "$build/clang-tidy.log" | sort -u | head -50
  echo "clang-tidy: findings above (full log: $build/clang-tidy.log)" >&2
  exit 1
}
echo "clang-tidy ok ($count translation units of compile_commands.json)"
