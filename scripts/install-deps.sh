#!/usr/bin/env bash
# Installs the Debian 12 packages Locus needs, if any is missing.
# Runs as root, or through sudo otherwise. Safe to run again.
set -euo pipefail

packages=(
  # build
  cmake ninja-build ccache clang-19 lld-19 python3 pkg-config
  # the compiler: LLVM/MLIR 19 (mlir-19-tools: MLIR's CMake config checks
  # for mlir-tblgen), FileCheck/not/lit (llvm-19-tools), Boost.Graph
  llvm-19-dev llvm-19-tools libmlir-19-dev mlir-19-tools libboost-graph-dev
  # ONNX import: ONNX's protobuf classes and checker; its backend test data
  libonnx-dev libprotobuf-dev libonnx-testdata
  # the BLAS behind matrix products, oneDNN behind convolutions (its header
  # for the function types; libdnnl2 comes with it), and Ed25519 for signed
  # artifacts (all three loaded with dlopen)
  libopenblas0-openmp libdnnl-dev libsodium23
  # data-parallel training: Open MPI's mpirun and libmpi (loaded with
  # dlopen; the tests launch ranks with mpirun)
  openmpi-bin
  # the Python module and its tests
  python3-dev pybind11-dev python3-numpy python3-pytest
  # tests and style; chromium renders locus-dump's HTML page in a test,
  # graphviz its DOT; compiler-rt for the fuzzer and the sanitizer build
  googletest libgtest-dev libbenchmark-dev clang-format-19 clang-tidy-19
  chromium graphviz libclang-rt-19-dev
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
    missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi

sudo=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "install-deps: need root or sudo to install: ${missing[*]}" >&2; exit 1; }
  sudo="sudo"
fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
