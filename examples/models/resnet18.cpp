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

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

using namespace locus;
using models::labels;
using models::option;
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

nn::Conv2d conv(Graph &g, const std::string &name, int64_t in, int64_t out,
                int64_t k, int64_t stride) {
  int64_t pad = k / 2;
  return nn::Conv2d(g, in, out, {k},
                    {.stride = {stride, stride},
                     .padding = {pad, pad},
                     .bias = false,
                     .name = name});
}

/// torchvision's BasicBlock: conv-bn-relu-conv-bn, plus the input (through
/// a 1x1 conv and bn when the shape changes), then relu. Named by its path
/// ("layer1.0"), so that its own ops (the relus and the add) group under it
/// in locus-dump, as its layers' ops group under theirs.
class BasicBlock : public nn::Module {
public:
  BasicBlock(Graph &g, const std::string &name, int64_t in, int64_t out,
             int64_t stride)
      : Module(name), conv1_(conv(g, name + ".conv1", in, out, 3, stride)),
        bn1_(g, out, {.name = name + ".bn1"}),
        conv2_(conv(g, name + ".conv2", out, out, 3, 1)),
        bn2_(g, out, {.name = name + ".bn2"}) {
    if (stride != 1 || in != out) {
      down_ = std::make_unique<nn::Conv2d>(
          conv(g, name + ".downsample.0", in, out, 1, stride));
      downBn_ = std::make_unique<nn::BatchNorm2d>(
          g, out, nn::BatchNormOptions{.name = name + ".downsample.1"});
    }
  }

  Tensor forward(const Tensor &x, Here loc) const override {
    Tensor y = relu(bn1_(conv1_(x, loc), loc), loc);
    y = bn2_(conv2_(y, loc), loc);
    Tensor skip = down_ ? (*downBn_)((*down_)(x, loc), loc) : x;
    return relu(add(y, skip, loc), loc);
  }

  std::vector<Tensor> parameters() const override {
    std::vector<Tensor> all;
    for (const nn::Module *m : layers())
      for (const Tensor &p : m->parameters())
        all.push_back(p);
    return all;
  }

  std::vector<Tensor> buffers() const override {
    std::vector<Tensor> all;
    for (const nn::Module *m : layers())
      for (const Tensor &b : m->buffers())
        all.push_back(b);
    return all;
  }

  void train(bool on = true) override {
    Module::train(on);
    for (nn::Module *m :
         {static_cast<nn::Module *>(&bn1_), static_cast<nn::Module *>(&bn2_),
          static_cast<nn::Module *>(downBn_.get())})
      if (m)
        m->train(on);
  }

private:
  std::vector<const nn::Module *> layers() const {
    std::vector<const nn::Module *> all = {&conv1_, &bn1_, &conv2_, &bn2_};
    if (down_) {
      all.push_back(down_.get());
      all.push_back(downBn_.get());
    }
    return all;
  }

  nn::Conv2d conv1_;
  nn::BatchNorm2d bn1_;
  nn::Conv2d conv2_;
  nn::BatchNorm2d bn2_;
  std::unique_ptr<nn::Conv2d> down_;
  std::unique_ptr<nn::BatchNorm2d> downBn_;
};

class ResNet18 : public nn::Module {
public:
  explicit ResNet18(Graph &g, int64_t classes = 10)
      : conv1_(conv(g, "conv1", 3, 64, 3, 1)), bn1_(g, 64, {.name = "bn1"}),
        fc_(g, 512, classes, {.name = "fc"}) {
    int64_t in = 64;
    for (int stage = 0; stage < 4; ++stage) {
      int64_t out = 64 << stage;
      for (int i = 0; i < 2; ++i) {
        std::string name =
            "layer" + std::to_string(stage + 1) + "." + std::to_string(i);
        blocks_.push_back(std::make_unique<BasicBlock>(
            g, name, in, out, i == 0 && stage > 0 ? 2 : 1));
        in = out;
      }
    }
  }

  Tensor forward(const Tensor &x, Here loc) const override {
    Tensor y = relu(bn1_(conv1_(x, loc), loc), loc);
    for (const auto &block : blocks_)
      y = (*block)(y, loc);
    y = flatten(adaptiveAvgPool2d(y, {1}, loc), 1, -1, loc);
    return fc_(y, loc);
  }

  std::vector<Tensor> parameters() const override {
    std::vector<Tensor> all = conv1_.parameters();
    for (const Tensor &p : bn1_.parameters())
      all.push_back(p);
    for (const auto &block : blocks_)
      for (const Tensor &p : block->parameters())
        all.push_back(p);
    for (const Tensor &p : fc_.parameters())
      all.push_back(p);
    return all;
  }

  std::vector<Tensor> buffers() const override {
    std::vector<Tensor> all = bn1_.buffers();
    for (const auto &block : blocks_)
      for (const Tensor &b : block->buffers())
        all.push_back(b);
    return all;
  }

  void train(bool on = true) override {
    Module::train(on);
    bn1_.train(on);
    for (const auto &block : blocks_)
      block->train(on);
  }

private:
  nn::Conv2d conv1_;
  nn::BatchNorm2d bn1_;
  std::vector<std::unique_ptr<BasicBlock>> blocks_;
  nn::Linear fc_;
};

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
  Tensor loss = nn::CrossEntropyLoss()(model(x), y);
  train.output("loss", loss);
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

  // The same layers in eval mode, in a graph of their own, with the
  // trained state copied across by name.
  Graph infer("resnet18_eval");
  Tensor xe = infer.input("x", {batch, 3, 32, 32});
  ResNet18 evalModel(infer);
  evalModel.eval();
  infer.output("logits", evalModel(xe));
  CompiledModel predictor = compile(infer, options);
  // The training graph also holds optimizer moments: load the names both
  // have, and every one the eval graph needs.
  if (!predictor.loadStateDict(trainer.stateDict(), /*strict=*/false)
           .missing.empty()) {
    std::fprintf(stderr, "the eval graph has state the trainer lacks\n");
    return 1;
  }
  auto logits =
      predictor
          .run({{"x", HostTensor::fromF32(
                          {batch, 3, 32, 32},
                          images(batch, labels(batch, 10, 9001), 9000))}})
          .at("logits");
  models::printValues("eval", logits.f32);
  return 0;
} catch (const std::exception &e) {
  std::fprintf(stderr, "%s\n", e.what());
  return 1;
}
