// seed_both_moved.cpp - seed 000, example 3 (and seed 003's example 2):
//
//   model = torch.nn.Linear(10, 2).to(device)
//   input_data = torch.randn(100, 10).to(device)
//   target_data = torch.randn(100, 2).to(device)
//
// Model and data on cuda:0: every op of the training step runs there, the
// weights are made there at load and stay, and no copy runs per step (the
// loss is read back after it).

#include "seed_common.h"

int main(int argc, char **argv) {
  locus::Graph g("train_step");
  auto x = g.input("input_data", {100, 10}, {.device = locus::cuda(0)});
  auto y = g.input("target_data", {100, 2}, {.device = locus::cuda(0)});
  locus::nn::Linear model(g, 10, 2,
                          {.name = "model", .device = locus::cuda(0)});
  locus::optim::SGD optimizer(model.parameters(), {.lr = 0.01});
  auto loss = locus::nn::MSELoss()(model(x), y);
  g.output("loss", loss);
  optimizer.step(loss);

  locus::CompiledModel compiled = seed::compile(g, seed::policy(argc, argv));
  seed::trainLinear(compiled);
  return 0;
}
