// dp_bench.cpp - data-parallel scaling on this machine: each rank trains
// an MLP (784-1024-1024-10, SGD with momentum) at a fixed batch per rank,
// so N ranks train N times the samples per step.
//
//   mpirun -np N dp_bench [--batch=64] [--steps=30] [--trace=PREFIX]
//
// Rank 0 prints the median step time over the steps after the first
// three. With --trace, rank r writes PREFIX.r.json (the runtime's Chrome
// trace, with the all-reduce lane); bench/dp_scaling.py reads them for the
// share of each step spent waiting for the other ranks.
#include "locus/Compile.h"
#include "locus/locus.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

using namespace locus;

int main(int argc, char **argv) {
  int64_t batch = 64;
  int steps = 30;
  std::string trace;
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], "--batch=", 8) == 0)
      batch = std::atoll(argv[i] + 8);
    else if (std::strncmp(argv[i], "--steps=", 8) == 0)
      steps = std::atoi(argv[i] + 8);
    else if (std::strncmp(argv[i], "--trace=", 8) == 0)
      trace = argv[i] + 8;
  }
  try {
    Communicator comm = Communicator::fromEnvironment();
    Graph g("mlp");
    Tensor x = g.input("x", {batch, 784});
    Tensor labels = g.input("labels", {batch}, {.dtype = DType::i64});
    nn::Linear fc1(g, 784, 1024, {.name = "fc1"});
    nn::Linear fc2(g, 1024, 1024, {.name = "fc2"});
    nn::Linear fc3(g, 1024, 10, {.name = "fc3"});
    Tensor loss = cross_entropy(fc3(relu(fc2(relu(fc1(x))))), labels);
    g.output("loss", loss);
    std::vector<Tensor> params;
    for (const nn::Linear *l : {&fc1, &fc2, &fc3})
      for (const Tensor &p : l->parameters())
        params.push_back(p);
    optim::SGD opt(params, {.lr = 0.01, .momentum = 0.9});
    opt.step(loss);
    CompileOptions options;
    options.devices = {"cpu"};
    options.dataParallel = true;
    if (!trace.empty())
      options.trace = trace + "." + std::to_string(comm.rank()) + ".json";
    CompiledModel model = compile(g, options);
    model.joinDataParallel(comm);
    std::vector<float> xs(static_cast<size_t>(batch * 784));
    std::vector<int64_t> ys(static_cast<size_t>(batch));
    for (size_t i = 0; i < xs.size(); ++i)
      xs[i] = static_cast<float>((i * 2654435761u % 1000) / 1000.0 - 0.5);
    for (size_t i = 0; i < ys.size(); ++i)
      ys[i] = static_cast<int64_t>((i + comm.rank()) % 10);
    std::map<std::string, HostTensor> inputs{
        {"x", HostTensor::fromF32({batch, 784}, xs)},
        {"labels", HostTensor::fromI64({batch}, ys)}};
    std::vector<double> times;
    for (int s = 0; s < steps; ++s) {
      auto begin = std::chrono::steady_clock::now();
      model.run(inputs);
      times.push_back(std::chrono::duration<double, std::milli>(
                          std::chrono::steady_clock::now() - begin)
                          .count());
    }
    if (!trace.empty())
      model.writeTrace(trace + "." + std::to_string(comm.rank()) + ".json");
    std::vector<double> warm(times.begin() + std::min(3, steps), times.end());
    std::sort(warm.begin(), warm.end());
    if (comm.rank() == 0 && !warm.empty())
      std::printf("ranks %d, batch %lld per rank: median step %.2f ms, "
                  "%.0f samples/s\n",
                  comm.size(), static_cast<long long>(batch),
                  warm[warm.size() / 2],
                  1000.0 * batch * comm.size() / warm[warm.size() / 2]);
    return 0;
  } catch (const std::exception &e) {
    std::fprintf(stderr, "dp_bench: %s\n", e.what());
    return 1;
  }
}
