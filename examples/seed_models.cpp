// seed_models.cpp - records the forward graphs of the seed programs
// (docs/training.md, "The seed programs") and prints them as locus IR.
//
//   seed_models linear-mse   torch.nn.Linear(10, 2) + MSELoss on a 100x10 batch
//   seed_models model-moved  the same with the model on cuda:0, data on the CPU
//   seed_models dataloader   Linear(10, 1) + MSELoss on DataLoader batches of
//   32 seed_models cnn          Conv2d(3, 16, 3, padding 1), ReLU, MaxPool(2),
//                            flatten, Linear(16*7*7, 10), CrossEntropy
//
// --locations prints each op's source location: the lines below.

#include "locus/locus.h"

#include <cstring>
#include <iostream>

namespace {

locus::Graph linearMse() {
  locus::Graph g("linear_mse");
  auto x = g.input("x", {100, 10});
  auto y = g.input("y", {100, 2});
  locus::nn::Linear model(g, 10, 2, {.name = "model"});
  auto loss = locus::nn::MSELoss()(model(x), y);
  g.output("loss", loss);
  return g;
}

// Seed 000, example 2: the model moved to the GPU, the data left on the CPU.
// Under policy=strict this is PyTorch's "expected all tensors to be on the
// same device", reported at compile time with both lines.
locus::Graph modelMoved() {
  locus::Graph g("model_moved");
  auto x = g.input("input_data", {100, 10});
  auto y = g.input("target_data", {100, 2});
  locus::nn::Linear model(g, 10, 2,
                          {.name = "model", .device = locus::cuda(0)});
  auto loss = locus::nn::MSELoss()(model(x), y);
  g.output("loss", loss);
  return g;
}

locus::Graph dataloader() {
  locus::Graph g("dataloader_step");
  auto batchX = g.input("batch_x", {32, 10});
  auto batchY = g.input("batch_y", {32, 1});
  locus::nn::Linear model(g, 10, 1, {.name = "model"});
  auto outputs = model(batchX);
  auto loss = locus::nn::MSELoss()(outputs, batchY);
  g.output("outputs", outputs);
  g.output("loss", loss);
  return g;
}

locus::Graph cnn() {
  locus::Graph g("simple_cnn");
  auto x = g.input("x", {32, 3, 14, 14});
  auto labels = g.input("y", {32}, {.dtype = locus::DType::i64});
  locus::nn::Sequential model{
      locus::nn::Conv2d(g, 3, 16, {3}, {.padding = {1, 1}, .name = "conv1"}),
      locus::nn::ReLU(), locus::nn::MaxPool2d({2}, {2}), locus::nn::Flatten(),
      locus::nn::Linear(g, 16 * 7 * 7, 10, {.name = "fc"})};
  auto logits = model(x);
  auto loss = locus::nn::CrossEntropyLoss()(logits, labels);
  g.output("logits", logits);
  g.output("loss", loss);
  return g;
}

} // namespace

int main(int argc, char **argv) {
  const char *which = argc > 1 ? argv[1] : "linear-mse";
  bool locations = argc > 2 && std::strcmp(argv[2], "--locations") == 0;
  try {
    locus::Graph g = std::strcmp(which, "linear-mse") == 0    ? linearMse()
                     : std::strcmp(which, "model-moved") == 0 ? modelMoved()
                     : std::strcmp(which, "dataloader") == 0  ? dataloader()
                     : std::strcmp(which, "cnn") == 0         ? cnn()
                                                      : locus::Graph("");
    if (g.name().empty()) {
      std::cerr << "usage: seed_models [linear-mse|model-moved|dataloader|cnn] "
                   "[--locations]\n";
      return 2;
    }
    std::cout << g.str({.locations = locations});
  } catch (const locus::Error &e) {
    std::cerr << e.what() << "\n";
    return 1;
  }
  return 0;
}
