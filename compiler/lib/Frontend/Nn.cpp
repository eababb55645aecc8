//===- Nn.cpp - layers over the recording API -----------------------------===//
//
// Only the public API: layers are what a user could write themselves.
//
//===----------------------------------------------------------------------===//

#include "locus/Frontend/Nn.h"

#include <cmath>

using namespace locus;
using namespace locus::nn;

namespace {

std::string layerName(Graph &graph, const std::string &given,
                      const char *stem) {
  return given.empty() ? graph.freshName(stem) : given;
}

/// A parameter with PyTorch's default for Linear and Conv2d:
/// U(-1/sqrt(fan_in), 1/sqrt(fan_in)), seeded by its name.
Tensor defaultParameter(Graph &graph, const std::string &name,
                        const Shape &shape, int64_t fanIn,
                        const std::optional<Device> &device, const Here &loc) {
  double bound = fanIn > 0 ? 1.0 / std::sqrt(static_cast<double>(fanIn)) : 0;
  return graph.parameter(name, shape,
                         Init::uniform(-bound, bound, graph.seedFor(name)),
                         {device}, loc);
}

} // namespace

Tensor Module::operator()(const Tensor &x, Here loc) const {
  detail::LayerScope scope(x, builtAt_);
  Tensor y = forward(x, loc);
  scope.commit();
  return y;
}

//===----------------------------------------------------------------------===//
// Linear
//===----------------------------------------------------------------------===//

Linear::Linear(Graph &graph, int64_t inFeatures, int64_t outFeatures,
               const LinearOptions &options, Here loc)
    : Module(loc) {
  if (inFeatures < 1 || outFeatures < 1)
    throw Error(loc.file_name(), loc.line(), loc.column(),
                "Linear(" + std::to_string(inFeatures) + ", " +
                    std::to_string(outFeatures) +
                    "): feature counts must be positive");
  std::string name = layerName(graph, options.name, "linear");
  weight_ = defaultParameter(graph, name + ".weight", {outFeatures, inFeatures},
                             inFeatures, options.device, loc);
  if (options.bias)
    bias_ = defaultParameter(graph, name + ".bias", {outFeatures}, inFeatures,
                             options.device, loc);
}

Tensor Linear::forward(const Tensor &x, Here loc) const {
  return linear(x, weight_, bias_, loc);
}

std::vector<Tensor> Linear::parameters() const {
  return bias_ ? std::vector<Tensor>{weight_, bias_}
               : std::vector<Tensor>{weight_};
}

//===----------------------------------------------------------------------===//
// Conv2d
//===----------------------------------------------------------------------===//

Conv2d::Conv2d(Graph &graph, int64_t inChannels, int64_t outChannels,
               std::vector<int64_t> kernelSize, const Conv2dOptions &options,
               Here loc)
    : Module(loc) {
  auto fail = [&](const std::string &message) {
    return Error(loc.file_name(), loc.line(), loc.column(), message);
  };
  if (kernelSize.size() == 1)
    kernelSize.push_back(kernelSize[0]);
  if (kernelSize.size() != 2 || kernelSize[0] < 1 || kernelSize[1] < 1)
    throw fail("Conv2d: kernel_size must be one or two positive numbers");
  if (inChannels < 1 || outChannels < 1)
    throw fail("Conv2d(" + std::to_string(inChannels) + ", " +
               std::to_string(outChannels) +
               "): channel counts must be positive");
  if (options.groups < 1 || inChannels % options.groups != 0 ||
      outChannels % options.groups != 0)
    throw fail("Conv2d: groups " + std::to_string(options.groups) +
               " must divide in_channels " + std::to_string(inChannels) +
               " and out_channels " + std::to_string(outChannels));
  params_ = {options.stride, options.padding, options.dilation, options.groups};
  std::string name = layerName(graph, options.name, "conv");
  int64_t fanIn = inChannels / options.groups * kernelSize[0] * kernelSize[1];
  weight_ = defaultParameter(
      graph, name + ".weight",
      {outChannels, inChannels / options.groups, kernelSize[0], kernelSize[1]},
      fanIn, options.device, loc);
  if (options.bias)
    bias_ = defaultParameter(graph, name + ".bias", {outChannels}, fanIn,
                             options.device, loc);
}

Tensor Conv2d::forward(const Tensor &x, Here loc) const {
  return conv2d(x, weight_, bias_, params_, loc);
}

std::vector<Tensor> Conv2d::parameters() const {
  return bias_ ? std::vector<Tensor>{weight_, bias_}
               : std::vector<Tensor>{weight_};
}

//===----------------------------------------------------------------------===//
// Parameter-free layers
//===----------------------------------------------------------------------===//

MaxPool2d::MaxPool2d(std::vector<int64_t> kernelSize,
                     std::vector<int64_t> stride, std::vector<int64_t> padding,
                     Here loc)
    : Module(loc) {
  if (kernelSize.size() == 1)
    kernelSize.push_back(kernelSize[0]);
  if (stride.size() == 1)
    stride.push_back(stride[0]);
  if (padding.size() == 1)
    padding.push_back(padding[0]);
  params_ = {std::move(kernelSize), std::move(stride), std::move(padding)};
}

Tensor MaxPool2d::forward(const Tensor &x, Here loc) const {
  return maxPool2d(x, params_, loc);
}

Tensor Flatten::forward(const Tensor &x, Here loc) const {
  return flatten(x, startDim_, endDim_, loc);
}

Tensor ReLU::forward(const Tensor &x, Here loc) const { return relu(x, loc); }
Tensor GELU::forward(const Tensor &x, Here loc) const {
  return gelu(x, approximate_, loc);
}
Tensor SiLU::forward(const Tensor &x, Here loc) const { return silu(x, loc); }

Tensor Sequential::forward(const Tensor &x, Here loc) const {
  Tensor y = x;
  for (const AnyModule &layer : layers_)
    y = (*layer.get())(y, loc);
  return y;
}

std::vector<Tensor> Sequential::parameters() const {
  std::vector<Tensor> all;
  for (const AnyModule &layer : layers_)
    for (const Tensor &p : layer.get()->parameters())
      all.push_back(p);
  return all;
}

//===----------------------------------------------------------------------===//
// Dropout
//===----------------------------------------------------------------------===//

Dropout::Dropout(double p, Here loc) : Module(loc), p_(p) {
  if (!(p >= 0 && p <= 1))
    throw Error(loc.file_name(), loc.line(), loc.column(),
                "dropout probability has to be between 0 and 1, but got " +
                    std::to_string(p));
}

Tensor Dropout::forward(const Tensor &x, Here loc) const {
  return dropout(x, p_, isTraining(), loc);
}
