#!/usr/bin/env bash
# The whole test suite, as CI runs it on a clean Debian 12 machine:
#   1. install what is missing;
#   2. check formatting (clang-format-19) of every tracked C/C++ file;
#   3. build everything in build/ and run ctest (gtest + lit), with the
#      compile cache in build/test-compile-cache, emptied first;
#   4. build the runtime alone (LOCUS_BUILD_COMPILER=OFF, no LLVM/MLIR/Boost)
#      in build-runtime/ with AddressSanitizer and UndefinedBehaviorSanitizer,
#      and run its tests there, with a bounded libFuzzer run over the
#      loader and executor (tests/fuzz/, seeded with artifacts that step 3's
#      tools compile);
#   5. clang-tidy-19 over the translation units of build/compile_commands.json
#      that changed since the last whole clean run (.ci/tidy-baseline; see
#      scripts/tidy.sh: everything when that commit is unknown).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
"$root/scripts/install-deps.sh"

echo "== clang-format =="
git ls-files '*.cpp' '*.h' '*.hpp' | xargs clang-format-19 --dry-run -Werror
echo "formatting ok"

echo "== full build and tests =="
"$root/scripts/build.sh"
# The compile cache in the build folder, empty at the start: the suite
# compiles cold, then hits wherever a graph comes back, and leaves the
# user's own cache alone.
export LOCUS_CACHE_DIR="$root/build/test-compile-cache"
rm -rf "$LOCUS_CACHE_DIR"
ctest --test-dir "$root/build" --output-on-failure -j 2

echo "== runtime alone, with sanitizers and the fuzzer =="
LOCUS_BUILD_DIR="$root/build-runtime" "$root/scripts/build.sh" \
  -DLOCUS_BUILD_COMPILER=OFF -DLOCUS_SANITIZE=ON \
  -DLOCUS_FUZZ_TOOLS_DIR="$root/build"
ctest --test-dir "$root/build-runtime" --output-on-failure -j 2

echo "== clang-tidy =="
"$root/scripts/tidy.sh" --since "$(tr -d '[:space:]' < "$root/.ci/tidy-baseline")"
echo "all tests passed"
