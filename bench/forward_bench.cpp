// forward_bench.cpp - compiled forward passes (locus::compile, host JIT) of
// the models of docs/benchmarks.md, timed with Google Benchmark.
// bench/compare.sh runs them beside PyTorch CPU in one run and prints the
// ratios.
//
//   forward_bench --benchmark_repetitions=5 --benchmark_report_aggregates_only

#include "locus/Compile.h"
#include "locus/locus.h"

#include "bench_inputs.h"

#include <benchmark/benchmark.h>

using namespace locus;

namespace {

/// Records `build`'s model for a batch, compiles it, and times run().
template <typename Build>
void runModel(benchmark::State &state, const char *name, Shape input,
              Build build) {
  Graph g(name);
  auto x = g.input("x", input);
  g.output("y", build(g, x));
  CompiledModel model = compile(g, {.policy = "cpu"});
  int64_t n = 1;
  for (int64_t d : input)
    n *= d;
  std::map<std::string, HostTensor> inputs{
      {"x", HostTensor::fromF32(input, bench::randomValues(n))}};
  for (auto _ : state)
    benchmark::DoNotOptimize(model.run(inputs));
  state.counters["batch"] = static_cast<double>(input[0]);
}

Tensor mlp(Graph &g, const Tensor &x) {
  nn::Sequential net{nn::Linear(g, 784, 1024), nn::ReLU(),
                     nn::Linear(g, 1024, 1024), nn::ReLU(),
                     nn::Linear(g, 1024, 10)};
  return net(x);
}

Tensor lenet(Graph &g, const Tensor &x) {
  nn::Sequential net{nn::Conv2d(g, 1, 6, {5}, {.padding = {2, 2}}),
                     nn::ReLU(),
                     nn::MaxPool2d({2}),
                     nn::Conv2d(g, 6, 16, {5}),
                     nn::ReLU(),
                     nn::MaxPool2d({2}),
                     nn::Flatten(),
                     nn::Linear(g, 16 * 5 * 5, 120),
                     nn::ReLU(),
                     nn::Linear(g, 120, 84),
                     nn::ReLU(),
                     nn::Linear(g, 84, 10)};
  return net(x);
}

Tensor seedCnn(Graph &g, const Tensor &x) {
  nn::Sequential net{nn::Conv2d(g, 3, 16, {3}, {.padding = {1, 1}}), nn::ReLU(),
                     nn::MaxPool2d({2}), nn::Flatten(),
                     nn::Linear(g, 16 * 7 * 7, 10)};
  return net(x);
}

void BM_mlp(benchmark::State &s) { runModel(s, "mlp", {s.range(0), 784}, mlp); }
void BM_lenet(benchmark::State &s) {
  runModel(s, "lenet", {s.range(0), 1, 28, 28}, lenet);
}
void BM_seed_cnn(benchmark::State &s) {
  runModel(s, "seed_cnn", {s.range(0), 3, 14, 14}, seedCnn);
}

} // namespace

BENCHMARK(BM_mlp)->Arg(1)->Arg(64)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_lenet)->Arg(1)->Arg(64)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_seed_cnn)->Arg(16)->Unit(benchmark::kMicrosecond);
BENCHMARK_MAIN();
