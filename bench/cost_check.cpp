// cost_check.cpp - the cost model's estimated step time beside the measured
// one, for the seed and benchmark models (docs/cost-model.md).
//
//   cost_check [--profile p.json] [--gpu-map cuda:0=sim] [--rounds N]
//
// Each model is compiled with the profile (policy cpu; with --gpu-map also
// policy prefer-gpu over cpu,cuda:0 run where the map says), then every
// model runs once per round, the rounds interleaved; the table gives the
// median measured step, CompiledModel::estimatedStepNs() and their ratio.

#include "locus/Compile.h"
#include "locus/locus.h"

#include "bench_inputs.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <iostream>
#include <string>
#include <vector>

using namespace locus;

namespace {

struct Case {
  std::string name;
  std::function<void(Graph &)> record;
  std::map<std::string, HostTensor> inputs;
};

HostTensor randomF32(const Shape &shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return HostTensor::fromF32(shape, bench::randomValues(n));
}

nn::Sequential mlp(Graph &g) {
  return nn::Sequential{nn::Linear(g, 784, 1024), nn::ReLU(),
                        nn::Linear(g, 1024, 1024), nn::ReLU(),
                        nn::Linear(g, 1024, 10)};
}

nn::Sequential lenet(Graph &g) {
  return nn::Sequential{nn::Conv2d(g, 1, 6, {5}, {.padding = {2, 2}}),
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
}

nn::Sequential seedCnn(Graph &g) {
  return nn::Sequential{nn::Conv2d(g, 3, 16, {3}, {.padding = {1, 1}}),
                        nn::ReLU(), nn::MaxPool2d({2}), nn::Flatten(),
                        nn::Linear(g, 16 * 7 * 7, 10)};
}

Case forward(const std::string &name, Shape input,
             nn::Sequential (*net)(Graph &)) {
  return {name + " forward b" + std::to_string(input[0]),
          [=](Graph &g) {
            auto x = g.input("x", input);
            g.output("y", net(g)(x));
          },
          {{"x", randomF32(input)}}};
}

Case trainStep(const std::string &name, Shape input,
               nn::Sequential (*net)(Graph &), bool adam) {
  int64_t batch = input[0];
  return {
      name + (adam ? " + Adam" : " + SGD") + " step b" + std::to_string(batch),
      [=](Graph &g) {
        auto x = g.input("x", input);
        auto y = g.input("y", {batch}, {.dtype = DType::i64});
        nn::Sequential model = net(g);
        auto loss = nn::CrossEntropyLoss()(model(x), y);
        g.output("loss", loss);
        if (adam)
          optim::Adam(model.parameters(), {.lr = 1e-3}).step(loss);
        else
          optim::SGD(model.parameters(), {.lr = 0.01, .momentum = 0.9})
              .step(loss);
      },
      {{"x", randomF32(input)},
       {"y", HostTensor::fromI64({batch}, bench::randomLabels(batch, 10))}}};
}

Case linearMse() {
  return {"Linear(10,2) + SGD step b100",
          [](Graph &g) {
            auto x = g.input("x", {100, 10});
            auto y = g.input("y", {100, 2});
            nn::Linear fc(g, 10, 2);
            auto loss = nn::MSELoss()(fc(x), y);
            g.output("loss", loss);
            optim::SGD(g.parameters(), {.lr = 0.1}).step(loss);
          },
          {{"x", randomF32({100, 10})}, {"y", randomF32({100, 2})}}};
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

std::string ms(double seconds) {
  char text[32];
  std::snprintf(text, sizeof text, "%.4g", seconds * 1e3);
  return text;
}

} // namespace

int main(int argc, char **argv) {
  std::string profile, gpuMap;
  int rounds = 15;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--profile" && i + 1 < argc)
      profile = argv[++i];
    else if (arg == "--gpu-map" && i + 1 < argc)
      gpuMap = argv[++i];
    else if (arg == "--rounds" && i + 1 < argc)
      rounds = std::max(1, std::atoi(argv[++i]));
    else {
      std::cerr << "usage: cost_check [--profile p.json] [--gpu-map "
                   "cuda:0=sim] [--rounds N]\n";
      return 2;
    }
  }
  std::vector<Case> cases{
      linearMse(),
      trainStep("seed CNN", {16, 3, 14, 14}, seedCnn, true),
      trainStep("MLP", {256, 784}, mlp, false),
      forward("MLP", {1, 784}, mlp),
      forward("MLP", {64, 784}, mlp),
      forward("LeNet-5", {1, 1, 28, 28}, lenet),
      forward("LeNet-5", {64, 1, 28, 28}, lenet),
      forward("seed CNN", {16, 3, 14, 14}, seedCnn),
      forward("seed CNN", {64, 3, 14, 14}, seedCnn),
  };
  struct Run {
    std::string name, where;
    CompiledModel model;
    const std::map<std::string, HostTensor> *inputs;
    std::vector<double> seconds;
  };
  std::vector<Run> runs;
  try {
    for (const Case &c : cases) {
      Graph g("cost_check");
      c.record(g);
      CompileOptions cpuOnly{.policy = "cpu",
                             .devices = {"cpu"},
                             .diagnostics = [](const Diagnostic &) {},
                             .profile = profile};
      runs.push_back({c.name, "cpu", compile(g, cpuOnly), &c.inputs, {}});
      if (!gpuMap.empty()) {
        CompileOptions gpu = cpuOnly;
        gpu.policy = "prefer-gpu";
        gpu.devices = {"cpu", "cuda:0"};
        gpu.deviceMap = gpuMap;
        runs.push_back({c.name,
                        "cuda:0 (" + gpuMap + ")",
                        compile(g, gpu),
                        &c.inputs,
                        {}});
      }
    }
    for (Run &run : runs) // warm-up
      run.model.run(*run.inputs);
    for (int round = 0; round < rounds; ++round)
      for (Run &run : runs) {
        auto start = std::chrono::steady_clock::now();
        run.model.run(*run.inputs);
        run.seconds.push_back(std::chrono::duration<double>(
                                  std::chrono::steady_clock::now() - start)
                                  .count());
      }
  } catch (const std::exception &error) {
    std::cerr << "cost_check: " << error.what() << "\n";
    return 1;
  }
  std::cout << "profile: " << (profile.empty() ? "built-in defaults" : profile)
            << "; medians of " << rounds << " interleaved rounds\n\n";
  std::cout << "| model | placed | measured ms | predicted ms | "
               "predicted / measured |\n|---|---|---|---|---|\n";
  for (const Run &run : runs) {
    double measured = median(run.seconds);
    double predicted = static_cast<double>(run.model.estimatedStepNs()) * 1e-9;
    char ratio[32];
    std::snprintf(ratio, sizeof ratio, "%.2f", predicted / measured);
    std::cout << "| " << run.name << " | " << run.where << " | " << ms(measured)
              << " | " << ms(predicted) << " | " << ratio << " |\n";
  }
  return 0;
}
