// save_seed.cpp - the seed's first model, recorded, compiled ahead of time
// and saved as an artifact:
//
//   model = torch.nn.Linear(10, 2); loss = MSELoss()(model(x), y)
//
//   save_seed [seed.locus] [--policy auto|prefer-gpu|strict|cpu]
//             [--devices cpu,cuda:0]
//
// Prints where everything runs and why, saves the artifact, and prints the
// loss of one in-process run on the inputs examples/run_artifact feeds (the
// runtime's seeded generator: x from seed 1, y from seed 2), so the two
// programs can be compared.

#include "locus/Compile.h"
#include "locus/locus.h"
#include "locus/locus_runtime.h"

#include <cstdio>
#include <iostream>
#include <sstream>

int main(int argc, char **argv) {
  std::string path = "seed.locus";
  locus::CompileOptions options;
  options.devices = {"cpu", "cuda:0"};
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--policy" && i + 1 < argc) {
      options.policy = argv[++i];
    } else if (arg == "--devices" && i + 1 < argc) {
      options.devices.clear();
      std::stringstream list(argv[++i]);
      for (std::string d; std::getline(list, d, ',');)
        options.devices.push_back(d);
    } else if (arg.rfind("--", 0) != 0) {
      path = arg;
    } else {
      std::cerr << "usage: save_seed [out.locus] [--policy P] [--devices D]\n";
      return 2;
    }
  }

  locus::Graph g("train_step");
  g.manual_seed(0);
  auto x = g.input("x", {100, 10});
  auto y = g.input("y", {100, 2});
  locus::nn::Linear model(g, 10, 2, {.name = "model"});
  auto loss = locus::nn::MSELoss()(model(x), y);
  g.output("loss", loss);

  try {
    locus::CompiledModel compiled = locus::compile(g, options);
    std::cout << compiled.placementSummary() << "\n";
    compiled.save(path);
    std::cout << "saved " << path << " (" << compiled.kernelCount()
              << " kernels)\n";
    std::vector<float> xs(1000), ys(200);
    locus_init_fill(LOCUS_INIT_UNIFORM, -1.0, 1.0, 1, xs.size(), xs.data());
    locus_init_fill(LOCUS_INIT_UNIFORM, -1.0, 1.0, 2, ys.size(), ys.data());
    auto out = compiled.run({{"x", locus::HostTensor::fromF32({100, 10}, xs)},
                             {"y", locus::HostTensor::fromF32({100, 2}, ys)}});
    std::printf("in-process loss: %.6f\n", out.at("loss").scalar());
  } catch (const locus::Error &e) {
    std::cerr << e.what() << "\n";
    return 1;
  } catch (const locus::RunError &e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
