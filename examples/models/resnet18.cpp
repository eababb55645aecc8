// resnet18.cpp - ResNet-18 for 3x32x32 images, trained as in PyTorch:
//
//   model = resnet18(num_classes=10) with a 3x3 stride-1 stem and no max
//           pool (the usual CIFAR variant); BatchNorm2d after every conv
//   optimizer = SGD(model.parameters(), lr=1e-4, weight_decay=5e-4)
//   for step in range(20): loss = cross_entropy(model(x), y); step
//
// Each image is noise in [-0.5, 0.5) plus a block of ones whose channel and
// rows depend on its label. The small learning rate keeps the comparison
// meaningful: with BatchNorm over batches of 8, larger steps make the
// trajectory chaotic, so that PyTorch in float32 and in float64 part by 1e-2
// within 20 steps (measured with torch_models.py's model).
//   model.eval(); logits = model(x_test)
//
// The state names are torchvision's (conv1.weight, layer2.0.downsample.1.
// running_mean, fc.bias, ...), so examples/models/torch_models.py starts
// PyTorch from the same weights (Locus's default initialisers, reproduced in
// Python) and feeds it the same batches. Prints one line per training step
// ("step N loss L") and the eval-mode logits of a test batch after training
// ("eval V V ..."); check_models.py compares both with PyTorch's.
//
//   resnet18 [--policy=auto|cpu|prefer-gpu|strict] [--devices=cpu,cuda:0]
//            [--steps=N] [--batch=N] [--summary=1] [--fuse=0]
//            [--save-graph=FILE]

#include "model_common.h"
#include "resnet18_model.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

using namespace locus;
using models::labels;
using models::option;
using models::ResNet18;
using models::uniform;

namespace {

/// Noise in [-0.5, 0.5) plus, for label c, ones in channel c % 3, rows
/// [8 (c / 3), 8 (c / 3) + 8).
std::vector<float> images(int64_t batch, const std::vector<int64_t> &y,
                          uint64_t seed) {
  std::vector<float> x = uniform(batch * 3 * 32 * 32, -1.0, 1.0, seed);
  for (float &v : x)
    v *= 0.5f;
  for (int64_t i = 0; i < batch; ++i) {
    int64_t c = y[i] % 3, row0 = (y[i] / 3) * 8;
    for (int64_t r = row0; r < row0 + 8; ++r)
      for (int64_t col = 0; col < 32; ++col)
        x[((i * 3 + c) * 32 + r) * 32 + col] += 1.0f;
  }
  return x;
}

} // namespace

int main(int argc, char **argv) try {
  const int64_t batch = std::stoll(option(argc, argv, "batch", "8"));
  const int steps = std::stoi(option(argc, argv, "steps", "20"));
  CompileOptions options = models::compileOptions(argc, argv);

  // The training step.
  Graph train("resnet18_train_step");
  Tensor x = train.input("x", {batch, 3, 32, 32});
  Tensor y = train.input("y", {batch}, {.dtype = DType::i64});
  ResNet18 model(train);
  optim::SGD sgd(model.parameters(), {.lr = 1e-4, .weightDecay = 5e-4});
  Tensor logits = model(x);
  Tensor loss = nn::CrossEntropyLoss()(logits, y);
  train.output("loss", loss);
  train.output("logits", logits);
  sgd.step(loss);
  if (std::string path = option(argc, argv, "save-graph", ""); !path.empty())
    return models::saveGraph(path, train) ? 0 : 1;
  CompiledModel trainer = compile(train, options);
  models::printSummary(argc, argv, trainer);

  for (int step = 0; step < steps; ++step) {
    std::vector<int64_t> y = labels(batch, 10, 8000 + step);
    auto out =
        trainer.run({{"x", HostTensor::fromF32({batch, 3, 32, 32},
                                               images(batch, y, 7000 + step))},
                     {"y", HostTensor::fromI64({batch}, y)}});
    std::printf("step %d loss %.9g\n", step, out.at("loss").scalar());
  }

  // --dump-state=NAME prints a state tensor after training.
  if (std::string name = option(argc, argv, "dump-state", ""); !name.empty())
    models::printValues(("state " + name).c_str(), trainer.state(name).f32);

  // The same recording compiled for evaluation (model.eval() under
  // no_grad: BatchNorm on its running statistics, no update), with the
  // trained state copied across by name.
  options.eval = true;
  CompiledModel predictor = compile(train, options);
  if (!predictor.load_state_dict(trainer.state_dict(), /*strict=*/false)
           .missing.empty()) {
    std::fprintf(stderr, "the eval model has state the trainer lacks\n");
    return 1;
  }
  std::vector<int64_t> testLabels = labels(batch, 10, 9001);
  auto evaluated = predictor.run(
      {{"x", HostTensor::fromF32({batch, 3, 32, 32},
                                 images(batch, testLabels, 9000))},
       {"y", HostTensor::fromI64({batch}, testLabels)}});
  const HostTensor &evalLogits = evaluated.at("logits");
  models::printValues("eval", evalLogits.f32);
  return 0;
} catch (const std::exception &e) {
  std::fprintf(stderr, "%s\n", e.what());
  return 1;
}
