// resnet18_model.h - ResNet-18 for 3x32x32 images, as torchvision's
// resnet18(num_classes) with a 3x3 stride-1 stem and no max pool (the usual
// CIFAR variant), BatchNorm2d after every convolution, torchvision's state
// names. The model example (resnet18.cpp) and the training benchmark
// (bench/train_bench.cpp) record it.

#ifndef LOCUS_EXAMPLES_RESNET18_MODEL_H
#define LOCUS_EXAMPLES_RESNET18_MODEL_H

#include "locus/Frontend/Nn.h"

#include <memory>
#include <string>
#include <vector>

namespace models {

using locus::Graph;
using locus::Here;
using locus::Tensor;
namespace nn = locus::nn;

inline nn::Conv2d conv(Graph &g, const std::string &name, int64_t in,
                       int64_t out, int64_t k, int64_t stride) {
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
    Tensor y = locus::relu(bn1_(conv1_(x, loc), loc), loc);
    y = bn2_(conv2_(y, loc), loc);
    Tensor skip = down_ ? (*downBn_)((*down_)(x, loc), loc) : x;
    return locus::relu(locus::add(y, skip, loc), loc);
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
    Tensor y = locus::relu(bn1_(conv1_(x, loc), loc), loc);
    for (const auto &block : blocks_)
      y = (*block)(y, loc);
    y = locus::flatten(locus::adaptive_avg_pool2d(y, {1}, loc), 1, -1, loc);
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

} // namespace models

#endif
