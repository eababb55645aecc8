// seed_model_moved.cpp - seed 000, example 2:
//
//   model = torch.nn.Linear(10, 2).to(device)   # the model moved
//   input_data = torch.randn(100, 10)           # the data left on the CPU
//
// PyTorch fails at the first step with "expected all tensors to be on the
// same device". Under policy=strict (the default here) Locus rejects it at
// compile time, naming the line that made the data and the layer's line;
// under --policy=prefer-gpu or --policy=auto it inserts the copies (one per
// input per step) and reports them, and the model trains on the GPU.

#include "seed_common.h"

int main(int argc, char **argv) {
  locus::Graph g("train_step");
  auto x = g.input("input_data", {100, 10});
  auto y = g.input("target_data", {100, 2});
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
