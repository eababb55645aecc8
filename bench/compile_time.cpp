// compile_time.cpp - how compile time grows with the number of ops, for a
// graph recorded with the C++ frontend: a chain of n elementwise ops
// (relu, neg, exp, tanh in turn) on a [16] input, recorded, then compiled
// for the CPU (compile(): placement, kernels, the host code by the JIT).
//
//   compile_time N [N ...]     prints "cpp N record_s compile_s" per N
//
// bench/compile_time.py runs it beside locus-compile on the same chains as
// MLIR text and as ONNX files (docs/benchmarks.md).

#include "locus/Compile.h"
#include "locus/locus.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>

namespace {

double secondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
      .count();
}

} // namespace

int main(int argc, char **argv) try {
  for (int a = 1; a < argc; ++a) {
    long n = std::strtol(argv[a], nullptr, 10);
    auto start = std::chrono::steady_clock::now();
    locus::Graph g("chain");
    locus::Tensor v = g.input("x", {16});
    for (long i = 0; i < n; ++i)
      v = i % 4 == 0   ? locus::relu(v)
          : i % 4 == 1 ? locus::neg(v)
          : i % 4 == 2 ? locus::exp(v)
                       : locus::tanh(v);
    g.output("y", v);
    double record = secondsSince(start);
    start = std::chrono::steady_clock::now();
    locus::CompiledModel model =
        locus::compile(g, {.policy = "cpu", .devices = {"cpu"}});
    std::printf("cpp %ld %.3f %.3f\n", n, record, secondsSince(start));
    std::fflush(stdout);
  }
  return 0;
} catch (const std::exception &e) {
  std::fprintf(stderr, "compile_time: %s\n", e.what());
  return 1;
}
