// train_bench.cpp - compiled training steps (forward, backward and the
// optimizer, one CompiledModel::run each) of the training models of
// docs/benchmarks.md, timed
// with Google Benchmark; bench/compare.sh train runs them beside PyTorch CPU
// eager (bench/torch_train.py) in one run and prints the ratios.
//
//   seed_cnn_adam/16:  the seed CNN (Conv2d(3, 16, 3, padding 1), ReLU,
//                      MaxPool(2), Linear(784, 10)), CrossEntropy, Adam
//   mlp_sgd/256:       MLP 784-1024-1024-10, CrossEntropy, SGD momentum 0.9
//   linear_sgd/100:    Linear(10, 2), CrossEntropy, SGD (seed 001's size)
//   resnet18_sgd/8,32: examples/models' ResNet-18 on 3x32x32 images,
//                      CrossEntropy, SGD with weight decay

#include "locus/Compile.h"
#include "locus/locus.h"

#include "../examples/models/resnet18_model.h"
#include "bench_inputs.h"

#include <benchmark/benchmark.h>

using namespace locus;

namespace {

/// Records a training step (`net`, cross entropy, `makeOptimizer`), compiles
/// it for the CPU, and times one step per iteration.
template <typename Net, typename Optim>
void trainStep(benchmark::State &state, Shape input, int64_t classes, Net net,
               Optim makeOptimizer) {
  Graph g("train_step");
  auto x = g.input("x", input);
  auto y = g.input("y", {input[0]}, {.dtype = DType::i64});
  nn::Sequential model = net(g);
  auto optimizer = makeOptimizer(model.parameters());
  auto loss = nn::CrossEntropyLoss()(model(x), y);
  g.output("loss", loss);
  optimizer.step(loss);
  CompiledModel compiled = compile(g, {.policy = "cpu"});
  int64_t n = 1;
  for (int64_t d : input)
    n *= d;
  std::map<std::string, HostTensor> inputs{
      {"x", HostTensor::fromF32(input, bench::randomValues(n))},
      {"y", HostTensor::fromI64({input[0]},
                                bench::randomLabels(input[0], classes))}};
  for (auto _ : state)
    benchmark::DoNotOptimize(compiled.run(inputs));
  state.counters["batch"] = static_cast<double>(input[0]);
}

void BM_seed_cnn_adam(benchmark::State &state) {
  trainStep(
      state, {state.range(0), 3, 14, 14}, 10,
      [](Graph &g) {
        return nn::Sequential{nn::Conv2d(g, 3, 16, {3}, {.padding = {1, 1}}),
                              nn::ReLU(), nn::MaxPool2d({2}, {2}),
                              nn::Flatten(), nn::Linear(g, 16 * 7 * 7, 10)};
      },
      [](std::vector<Tensor> params) {
        return optim::Adam(std::move(params), {.lr = 1e-3});
      });
}

void BM_mlp_sgd(benchmark::State &state) {
  trainStep(
      state, {state.range(0), 784}, 10,
      [](Graph &g) {
        return nn::Sequential{nn::Linear(g, 784, 1024), nn::ReLU(),
                              nn::Linear(g, 1024, 1024), nn::ReLU(),
                              nn::Linear(g, 1024, 10)};
      },
      [](std::vector<Tensor> params) {
        return optim::SGD(std::move(params), {.lr = 0.01, .momentum = 0.9});
      });
}

void BM_linear_sgd(benchmark::State &state) {
  trainStep(
      state, {state.range(0), 10}, 2,
      [](Graph &g) { return nn::Sequential{nn::Linear(g, 10, 2)}; },
      [](std::vector<Tensor> params) {
        return optim::SGD(std::move(params), {.lr = 0.01});
      });
}

void BM_resnet18_sgd(benchmark::State &state) {
  int64_t batch = state.range(0);
  Graph g("train_step");
  auto x = g.input("x", {batch, 3, 32, 32});
  auto y = g.input("y", {batch}, {.dtype = DType::i64});
  models::ResNet18 model(g);
  model.train();
  optim::SGD optimizer(model.parameters(), {.lr = 1e-4, .weightDecay = 5e-4});
  auto loss = nn::CrossEntropyLoss()(model(x), y);
  g.output("loss", loss);
  optimizer.step(loss);
  CompiledModel compiled = compile(g, {.policy = "cpu"});
  std::map<std::string, HostTensor> inputs{
      {"x", HostTensor::fromF32({batch, 3, 32, 32},
                                bench::randomValues(batch * 3 * 32 * 32))},
      {"y", HostTensor::fromI64({batch}, bench::randomLabels(batch, 10))}};
  // NOLINTNEXTLINE(clang-analyzer-deadcode.DeadStores): Google Benchmark's loop
  for (auto _ : state)
    benchmark::DoNotOptimize(compiled.run(inputs));
  state.counters["batch"] = static_cast<double>(batch);
}

} // namespace

BENCHMARK(BM_seed_cnn_adam)->Arg(16)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_mlp_sgd)->Arg(256)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_linear_sgd)->Arg(100)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_resnet18_sgd)
    ->Arg(8)
    ->Arg(32)
    ->Unit(benchmark::kMicrosecond)
    ->MinTime(2.0);
BENCHMARK_MAIN();
