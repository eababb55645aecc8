// run_seed.cpp - the seed's first model, recorded, compiled and run:
//
//   model = torch.nn.Linear(10, 2); loss = MSELoss()(model(x), y)
//
// on a 100x10 batch. Prints where everything runs and why, then the loss of
// a few batches. (Training -- backward and SGD -- comes with the autodiff
// issue; this runs the forward graph.)

#include "locus/Compile.h"
#include "locus/locus.h"

#include <cstdio>
#include <iostream>
#include <random>

int main() {
  locus::Graph g("train_step");
  g.manual_seed(0);
  auto x = g.input("x", {100, 10});
  auto y = g.input("y", {100, 2});
  locus::nn::Linear model(g, 10, 2, {.name = "model"});
  auto loss = locus::nn::MSELoss()(model(x), y);
  g.output("loss", loss);

  try {
    locus::CompiledModel compiled = locus::compile(g, {.policy = "auto"});
    std::cout << compiled.placementSummary() << "\n";
    std::mt19937 rng(42);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    for (int batch = 0; batch < 3; ++batch) {
      std::vector<float> xs(1000), ys(200);
      for (float &v : xs)
        v = normal(rng);
      for (float &v : ys)
        v = normal(rng);
      auto out =
          compiled.run({{"x", locus::HostTensor::fromF32({100, 10}, xs)},
                        {"y", locus::HostTensor::fromF32({100, 2}, ys)}});
      std::printf("batch %d: loss %.6f\n", batch, out.at("loss").scalar());
    }
  } catch (const locus::Error &e) {
    std::cerr << e.what() << "\n";
    return 1;
  } catch (const locus::RunError &e) {
    std::cerr << "run error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
