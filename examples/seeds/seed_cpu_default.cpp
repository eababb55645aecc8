// seed_cpu_default.cpp - seed 000, example 1 (and seed 003's example 1):
//
//   model = torch.nn.Linear(10, 2)
//   optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
//   for epoch in range(10): forward, MSELoss, backward, step
//
// Nothing is moved to the GPU. Under PyTorch's rules (policy=strict, the
// default here) everything stays on the CPU although cuda:0 is a target,
// and the placement summary warns that the GPU is idle.

#include "seed_common.h"

int main(int argc, char **argv) {
  locus::Graph g("train_step");
  auto x = g.input("input_data", {100, 10});
  auto y = g.input("target_data", {100, 2});
  locus::nn::Linear model(g, 10, 2, {.name = "model"});
  locus::optim::SGD optimizer(model.parameters(), {.lr = 0.01});
  auto loss = locus::nn::MSELoss()(model(x), y);
  g.output("loss", loss);
  optimizer.step(loss); // backward + SGD, recorded once, run every step

  locus::CompiledModel compiled = seed::compile(g, seed::policy(argc, argv));
  seed::trainLinear(compiled);
  return 0;
}
