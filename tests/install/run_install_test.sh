#!/usr/bin/env bash
# Installs Locus from a build into temporary prefixes and uses it from
# outside the tree:
#  - the runtime alone: a CMake project (find_package(Locus CONFIG
#    COMPONENTS runtime)) with a C and a C++ program, a C program built with
#    pkg-config, and the installed locus-run, each running an artifact the
#    build's locus-compile makes; asking that prefix for the compiler fails
#    with a clear message;
#  - runtime and compiler: a C++ program that records, compiles, runs and
#    saves a model through Locus::compiler, whose artifact the installed
#    locus-run and the installed Python module run; the installed tools
#    answer --help.
#   run_install_test.sh BUILD_DIR WORK_DIR [PYTHON]
set -euo pipefail
build=$1 work=$2 python=${3:-}
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$work"
mkdir -p "$work"
prefix="$work/prefix"
# The compilers the build used (a clean machine may have no cc).
cached() { sed -n "s/^$1:[A-Z]*=//p" "$build/CMakeCache.txt"; }
cc=$(cached CMAKE_C_COMPILER) cxx=$(cached CMAKE_CXX_COMPILER)
cmake --install "$build" --prefix "$prefix" --component runtime > "$work/install.log"
"$build/examples/seed_models" linear-mse > "$work/model.mlir"
"$build/tools/locus-compile" "$work/model.mlir" -o "$work/model.locus" \
  --policy=cpu --devices=cpu > /dev/null

# CMake: find_package(Locus CONFIG REQUIRED COMPONENTS runtime).
cmake -S "$here/consumer" -B "$work/consumer" -DCMAKE_PREFIX_PATH="$prefix" \
  -DCMAKE_BUILD_TYPE=Release -DCMAKE_C_COMPILER="$cc" \
  -DCMAKE_CXX_COMPILER="$cxx" > "$work/consumer.log"
cmake --build "$work/consumer" > "$work/consumer-build.log"
"$work/consumer/consumer" "$work/model.locus"
"$work/consumer/consumer_cpp" "$work/model.locus"

# pkg-config.
export PKG_CONFIG_PATH="$prefix/lib/pkgconfig"
# shellcheck disable=SC2046
"$cc" -o "$work/consumer_pc" "$here/consumer/consumer.c" \
  $(pkg-config --cflags --libs locus-runtime)
"$work/consumer_pc" "$work/model.locus"

# The installed locus-run finds its library through its RPATH.
"$prefix/bin/locus-run" "$work/model.locus" --random-inputs --quiet | tail -1

# A component this Locus does not install is a clear error.
mkdir -p "$work/nocompiler"
cat > "$work/nocompiler/CMakeLists.txt" <<'CMAKE'
cmake_minimum_required(VERSION 3.25)
project(nocompiler NONE)
find_package(Locus CONFIG REQUIRED COMPONENTS compiler)
CMAKE
if cmake -S "$work/nocompiler" -B "$work/nocompiler/b" \
     -DCMAKE_PREFIX_PATH="$prefix" > "$work/nocompiler.log" 2>&1; then
  echo "find_package(Locus COMPONENTS compiler) should fail" >&2
  exit 1
fi
grep -q "Locus component 'compiler' is not installed" "$work/nocompiler.log"

# Runtime and compiler: record, compile and save outside the tree.
full="$work/full"
cmake --install "$build" --prefix "$full" > "$work/install-full.log"
cmake -S "$here/compiler_consumer" -B "$work/compiler_consumer" \
  -DCMAKE_PREFIX_PATH="$full" -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_CXX_COMPILER="$cxx" > "$work/compiler_consumer.log"
cmake --build "$work/compiler_consumer" > "$work/compiler_consumer-build.log"
"$work/compiler_consumer/record" "$work/recorded.locus"
"$full/bin/locus-run" "$work/recorded.locus" --random-inputs --quiet | tail -1
# The installed Python module (when the build has one) runs that artifact.
libdir=$(cached CMAKE_INSTALL_LIBDIR)
if [ -n "$python" ]; then
  site="$full/${libdir:-lib}/python3/dist-packages"
  ls "$site"/locus*.so > /dev/null  # the build has a module: it is installed
  PYTHONPATH="$site" "$python" -c '
import sys, numpy as np, locus, locus.runtime
m = locus.runtime.load(sys.argv[1])
y = m.run(x=np.ones((2, 4), np.float32))["y"]
assert y.shape == (2, 3), y.shape
print("installed Python module: y", y.shape)' "$work/recorded.locus"
fi
for tool in locus-compile locus-dump locus-opt locus-import locus-calibrate; do
  "$full/bin/$tool" --help > "$work/$tool-help.txt"
done
echo "install test passed"
