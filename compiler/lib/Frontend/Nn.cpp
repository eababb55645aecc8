//===- Nn.cpp - layers over the recording API -----------------------------===//
//
// Only the public API: layers are what a user could write themselves.
//
//===----------------------------------------------------------------------===//

#include "locus/Frontend/Nn.h"

#include "GraphImpl.h"
#include "LayerParams.h"
#include "UserText.h"

#include <algorithm>
#include <cmath>
#include <tuple>
#include <utility>

using namespace locus;
using namespace locus::nn;
using locus::detail::defaultParameter;
using locus::detail::errorAt;
using locus::detail::layerName;
using locus::detail::numberText;
using locus::detail::shapeText;

Tensor Module::operator()(const Tensor &x, Here loc) const {
  detail::LayerScope scope(x, builtPlace_, name_);
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
  setName(name);
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

namespace {

/// A convolution layer's groups must divide both channel counts.
void checkGroups(const char *layer, int64_t in, int64_t out, int64_t groups,
                 const Here &loc) {
  if (groups < 1 || in % groups != 0 || out % groups != 0)
    throw errorAt(loc, std::string(layer) + ": groups " +
                           std::to_string(groups) +
                           " must divide in_channels " + std::to_string(in) +
                           " and out_channels " + std::to_string(out));
}

/// A convolution's weight [out, in / groups, kernel...] and, with `bias`,
/// its bias [out], with PyTorch's default initialisation.
std::pair<Tensor, Tensor>
convParameters(Graph &graph, const std::string &name, int64_t in, int64_t out,
               int64_t groups, const Shape &kernel, bool bias,
               const std::optional<Device> &device, const Here &loc) {
  Shape shape{out, in / groups};
  int64_t fanIn = in / groups;
  for (int64_t k : kernel) {
    shape.push_back(k);
    fanIn *= k;
  }
  Tensor weight =
      defaultParameter(graph, name + ".weight", shape, fanIn, device, loc);
  Tensor b =
      bias ? defaultParameter(graph, name + ".bias", {out}, fanIn, device, loc)
           : Tensor();
  return {weight, b};
}

} // namespace

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
  checkGroups("Conv2d", inChannels, outChannels, options.groups, loc);
  params_ = {options.stride, options.padding, options.dilation, options.groups};
  std::string name = layerName(graph, options.name, "conv");
  setName(name);
  std::tie(weight_, bias_) =
      convParameters(graph, name, inChannels, outChannels, options.groups,
                     kernelSize, options.bias, options.device, loc);
}

Tensor Conv2d::forward(const Tensor &x, Here loc) const {
  return conv2d(x, weight_, bias_, params_, loc);
}

ConvTranspose2d::ConvTranspose2d(Graph &graph, int64_t inChannels,
                                 int64_t outChannels,
                                 std::vector<int64_t> kernelSize,
                                 const ConvTranspose2dOptions &options,
                                 Here loc)
    : Module(loc) {
  if (kernelSize.size() == 1)
    kernelSize.push_back(kernelSize[0]);
  if (kernelSize.size() != 2 || kernelSize[0] < 1 || kernelSize[1] < 1)
    throw Error(loc.file_name(), loc.line(), loc.column(),
                "ConvTranspose2d: kernel_size must be one or two positive "
                "numbers");
  checkGroups("ConvTranspose2d", inChannels, outChannels, options.groups, loc);
  params_ = {options.stride, options.padding, options.outputPadding,
             options.dilation, options.groups};
  std::string name = layerName(graph, options.name, "conv_transpose");
  setName(name);
  // PyTorch's layout [in, out / groups, kh, kw]: its fan-in counts out.
  Shape shape{inChannels, outChannels / options.groups, kernelSize[0],
              kernelSize[1]};
  int64_t fanIn = shape[1] * kernelSize[0] * kernelSize[1];
  weight_ = defaultParameter(graph, name + ".weight", shape, fanIn,
                             options.device, loc);
  if (options.bias)
    bias_ = defaultParameter(graph, name + ".bias", {outChannels}, fanIn,
                             options.device, loc);
}

Tensor ConvTranspose2d::forward(const Tensor &x, Here loc) const {
  return conv_transpose2d(x, weight_, bias_, params_, loc);
}

std::vector<Tensor> ConvTranspose2d::parameters() const {
  return bias_ ? std::vector<Tensor>{weight_, bias_}
               : std::vector<Tensor>{weight_};
}

std::vector<Tensor> Conv2d::parameters() const {
  return bias_ ? std::vector<Tensor>{weight_, bias_}
               : std::vector<Tensor>{weight_};
}

//===----------------------------------------------------------------------===//
// Conv1d
//===----------------------------------------------------------------------===//

Conv1d::Conv1d(Graph &graph, int64_t inChannels, int64_t outChannels,
               int64_t kernelSize, const Conv1dOptions &options, Here loc)
    : Module(loc) {
  if (kernelSize < 1 || inChannels < 1 || outChannels < 1)
    throw errorAt(loc, "Conv1d(" + std::to_string(inChannels) + ", " +
                           std::to_string(outChannels) + ", " +
                           std::to_string(kernelSize) +
                           "): channel counts and kernel_size must be "
                           "positive");
  checkGroups("Conv1d", inChannels, outChannels, options.groups, loc);
  params_ = {options.stride, options.padding, options.dilation, options.groups};
  std::string name = layerName(graph, options.name, "conv");
  setName(name);
  std::tie(weight_, bias_) =
      convParameters(graph, name, inChannels, outChannels, options.groups,
                     {kernelSize}, options.bias, options.device, loc);
}

Tensor Conv1d::forward(const Tensor &x, Here loc) const {
  return conv1d(x, weight_, bias_, params_, loc);
}

std::vector<Tensor> Conv1d::parameters() const {
  return bias_ ? std::vector<Tensor>{weight_, bias_}
               : std::vector<Tensor>{weight_};
}

//===----------------------------------------------------------------------===//
// Parameter-free layers
//===----------------------------------------------------------------------===//

Pool2d::Pool2d(Pool2dParams params, Here loc)
    : Module(loc), params_(std::move(params)) {
  for (std::vector<int64_t> *v :
       {&params_.kernelSize, &params_.stride, &params_.padding})
    if (v->size() == 1)
      v->push_back(v->front());
}

Tensor MaxPool2d::forward(const Tensor &x, Here loc) const {
  return max_pool2d(x, params(), loc);
}

Tensor AvgPool2d::forward(const Tensor &x, Here loc) const {
  return avg_pool2d(x, params(), loc);
}

Tensor Softmax::forward(const Tensor &x, Here loc) const {
  return softmax(x, dim_, loc);
}
Tensor LogSoftmax::forward(const Tensor &x, Here loc) const {
  return log_softmax(x, dim_, loc);
}

PReLU::PReLU(Graph &graph, int64_t numParameters, double init,
             const LayerOptions &options, Here loc)
    : Module(loc) {
  if (numParameters < 1)
    throw errorAt(loc, "PReLU: num_parameters " +
                           std::to_string(numParameters) + " must be positive");
  std::string name = layerName(graph, options.name, "prelu");
  setName(name);
  weight_ = graph.parameter(name + ".weight", {numParameters}, Init::full(init),
                            {options.device}, loc);
}

Tensor PReLU::forward(const Tensor &x, Here loc) const {
  return prelu(x, weight_, loc);
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

std::vector<Tensor> Sequential::buffers() const {
  std::vector<Tensor> all;
  for (const AnyModule &layer : layers_)
    for (const Tensor &b : layer.get()->buffers())
      all.push_back(b);
  return all;
}

void Sequential::train(bool on) {
  Module::train(on);
  for (const AnyModule &layer : layers_)
    layer.get()->train(on);
}

std::vector<std::pair<std::string, Tensor>> Module::state_dict() const {
  std::vector<std::pair<std::string, Tensor>> all;
  for (const std::vector<Tensor> &group : {parameters(), buffers()})
    for (const Tensor &t : group)
      all.emplace_back(stateName(t), t);
  return all;
}

//===----------------------------------------------------------------------===//
// Normalisation
//===----------------------------------------------------------------------===//

namespace {

Tensor constantState(Graph &graph, const std::string &name, const Shape &shape,
                     double value, bool parameter,
                     const std::optional<Device> &device, const Here &loc) {
  return parameter
             ? graph.parameter(name, shape, Init::full(value), {device}, loc)
             : graph.buffer(name, shape, Init::full(value), {device}, loc);
}

} // namespace

BatchNorm::BatchNorm(Graph &graph, int64_t numFeatures,
                     std::vector<int64_t> ranks, const char *kind,
                     const BatchNormOptions &options, Here loc)
    : Module(loc), ranks_(std::move(ranks)), kind_(kind), eps_(options.eps),
      momentum_(options.momentum) {
  if (numFeatures < 1)
    throw errorAt(loc, kind_ + "(" + std::to_string(numFeatures) +
                           "): num_features must be positive");
  if (!(options.momentum >= 0 && options.momentum <= 1) || !(options.eps > 0))
    throw errorAt(loc, kind_ + ": momentum must be in [0, 1] and eps positive");
  std::string name = layerName(graph, options.name, "bn");
  setName(name);
  if (options.affine) {
    weight_ = constantState(graph, name + ".weight", {numFeatures}, 1.0, true,
                            options.device, loc);
    bias_ = constantState(graph, name + ".bias", {numFeatures}, 0.0, true,
                          options.device, loc);
  }
  if (options.trackRunningStats) {
    runningMean_ = constantState(graph, name + ".running_mean", {numFeatures},
                                 0.0, false, options.device, loc);
    runningVar_ = constantState(graph, name + ".running_var", {numFeatures},
                                1.0, false, options.device, loc);
  }
}

Tensor BatchNorm::forward(const Tensor &x, Here loc) const {
  if (std::find(ranks_.begin(), ranks_.end(), x.rank()) == ranks_.end())
    throw errorAt(loc, kind_ + " got input " + shapeText(x.shape()) +
                           " of rank " + std::to_string(x.rank()) +
                           (ranks_.size() == 1 ? "; it takes [N, C, H, W]"
                                               : "; it takes [N, C] or "
                                                 "[N, C, L]"));
  bool useBatch = is_training() || !runningMean_;
  return batch_norm(x, runningMean_, runningVar_, weight_, bias_, useBatch,
                    momentum_, eps_, loc);
}

std::vector<Tensor> BatchNorm::parameters() const {
  return weight_ ? std::vector<Tensor>{weight_, bias_} : std::vector<Tensor>{};
}

std::vector<Tensor> BatchNorm::buffers() const {
  return runningMean_ ? std::vector<Tensor>{runningMean_, runningVar_}
                      : std::vector<Tensor>{};
}

LayerNorm::LayerNorm(Graph &graph, Shape normalizedShape,
                     const LayerNormOptions &options, Here loc)
    : Module(loc), shape_(std::move(normalizedShape)), eps_(options.eps) {
  if (shape_.empty())
    throw errorAt(loc, "LayerNorm: normalized_shape must not be empty");
  for (int64_t d : shape_)
    if (d < 1)
      throw errorAt(loc, "LayerNorm: normalized_shape " + shapeText(shape_) +
                             " must be positive");
  if (!(options.eps > 0))
    throw errorAt(loc, "LayerNorm: eps must be positive");
  std::string name = layerName(graph, options.name, "ln");
  setName(name);
  if (options.elementwiseAffine) {
    weight_ = constantState(graph, name + ".weight", shape_, 1.0, true,
                            options.device, loc);
    if (options.bias)
      bias_ = constantState(graph, name + ".bias", shape_, 0.0, true,
                            options.device, loc);
  }
}

Tensor LayerNorm::forward(const Tensor &x, Here loc) const {
  return layer_norm(x, shape_, weight_, bias_, eps_, loc);
}

std::vector<Tensor> LayerNorm::parameters() const {
  std::vector<Tensor> all;
  for (const Tensor &t : {weight_, bias_})
    if (t)
      all.push_back(t);
  return all;
}

GroupNorm::GroupNorm(Graph &graph, int64_t numGroups, int64_t numChannels,
                     const LayerNormOptions &options, Here loc)
    : Module(loc), groups_(numGroups), eps_(options.eps) {
  if (numGroups < 1 || numChannels < 1 || numChannels % numGroups)
    throw errorAt(loc, "GroupNorm(" + std::to_string(numGroups) + ", " +
                           std::to_string(numChannels) +
                           "): num_groups must divide num_channels");
  std::string name = layerName(graph, options.name, "gn");
  setName(name);
  if (options.elementwiseAffine) {
    weight_ = constantState(graph, name + ".weight", {numChannels}, 1.0, true,
                            options.device, loc);
    bias_ = constantState(graph, name + ".bias", {numChannels}, 0.0, true,
                          options.device, loc);
  }
}

Tensor GroupNorm::forward(const Tensor &x, Here loc) const {
  return group_norm(x, groups_, weight_, bias_, eps_, loc);
}

std::vector<Tensor> GroupNorm::parameters() const {
  return weight_ ? std::vector<Tensor>{weight_, bias_} : std::vector<Tensor>{};
}

//===----------------------------------------------------------------------===//
// Embedding, pooling, activations
//===----------------------------------------------------------------------===//

Embedding::Embedding(Graph &graph, int64_t numEmbeddings, int64_t embeddingDim,
                     const LayerOptions &options, Here loc)
    : Module(loc) {
  if (numEmbeddings < 1 || embeddingDim < 1)
    throw errorAt(loc, "Embedding(" + std::to_string(numEmbeddings) + ", " +
                           std::to_string(embeddingDim) +
                           "): sizes must be positive");
  std::string name = layerName(graph, options.name, "embedding");
  setName(name);
  weight_ =
      graph.parameter(name + ".weight", {numEmbeddings, embeddingDim},
                      Init::normal(0.0, 1.0, graph.seedFor(name + ".weight")),
                      {options.device}, loc);
}

Tensor Embedding::forward(const Tensor &indices, Here loc) const {
  return embedding(indices, weight_, loc);
}

Tensor AdaptiveAvgPool2d::forward(const Tensor &x, Here loc) const {
  return adaptive_avg_pool2d(x, outputSize_, loc);
}

Tensor LeakyReLU::forward(const Tensor &x, Here loc) const {
  return leaky_relu(x, slope_, loc);
}
Tensor Tanh::forward(const Tensor &x, Here loc) const { return tanh(x, loc); }
Tensor Sigmoid::forward(const Tensor &x, Here loc) const {
  return sigmoid(x, loc);
}
Tensor Hardtanh::forward(const Tensor &x, Here loc) const {
  return hardtanh(x, min_, max_, loc);
}
Tensor ReLU6::forward(const Tensor &x, Here loc) const { return relu6(x, loc); }
Tensor Hardsigmoid::forward(const Tensor &x, Here loc) const {
  return hardsigmoid(x, loc);
}
Tensor Hardswish::forward(const Tensor &x, Here loc) const {
  return hardswish(x, loc);
}
Tensor Softplus::forward(const Tensor &x, Here loc) const {
  return softplus(x, beta_, threshold_, loc);
}
Tensor Mish::forward(const Tensor &x, Here loc) const { return mish(x, loc); }
Tensor ELU::forward(const Tensor &x, Here loc) const {
  return elu(x, alpha_, loc);
}

//===----------------------------------------------------------------------===//
// Attention
//===----------------------------------------------------------------------===//

MultiheadAttention::MultiheadAttention(Graph &graph, int64_t embedDim,
                                       int64_t numHeads,
                                       const MultiheadAttentionOptions &options,
                                       Here loc)
    : Module(loc), embedDim_(embedDim), numHeads_(numHeads),
      batchFirst_(options.batchFirst) {
  if (embedDim < 1 || numHeads < 1 || embedDim % numHeads)
    throw errorAt(loc, "MultiheadAttention(" + std::to_string(embedDim) + ", " +
                           std::to_string(numHeads) +
                           "): num_heads must divide embed_dim");
  std::string name = layerName(graph, options.name, "attn");
  setName(name);
  // xavier_uniform_ over [3E, E]: bound sqrt(6 / (fan_in + fan_out)).
  double xavier = std::sqrt(6.0 / static_cast<double>(4 * embedDim));
  inProjWeight_ = graph.parameter(
      name + ".in_proj_weight", {3 * embedDim, embedDim},
      Init::uniform(-xavier, xavier, graph.seedFor(name + ".in_proj_weight")),
      {options.device}, loc);
  if (options.bias)
    inProjBias_ = constantState(graph, name + ".in_proj_bias", {3 * embedDim},
                                0.0, true, options.device, loc);
  outProjWeight_ =
      defaultParameter(graph, name + ".out_proj.weight", {embedDim, embedDim},
                       embedDim, options.device, loc);
  if (options.bias)
    outProjBias_ = constantState(graph, name + ".out_proj.bias", {embedDim},
                                 0.0, true, options.device, loc);
}

namespace {

/// Whether `a` and `b` hold the same value of one graph.
bool sameValue(const Tensor &a, const Tensor &b, const Here &loc) {
  detail::GraphImpl &g = detail::GraphImpl::of(a, loc);
  return &g == &detail::GraphImpl::of(b, loc) &&
         g.value(a, loc) == g.value(b, loc);
}

/// Self-attention's q, k and v as PyTorch's packed in-projection makes
/// them: one product of `x` [B, T, E] with the whole `weight` [3E, E]
/// (and `bias`), then [B, T, 3, H, D] to [3, B, H, T, D] in one
/// transpose, whose three leading blocks are q, k and v [B, H, T, D]. One
/// product and one copy where three products and three head transposes
/// were (and their gradients: one weight product, one bias sum).
std::vector<Tensor> packedHeads(const Tensor &x, const Tensor &weight,
                                const Tensor &bias, int64_t heads,
                                const Here &loc) {
  int64_t e = x.dim(2), d = e / heads;
  Tensor projected = linear(x, weight, bias, loc);
  Tensor split =
      permute(reshape(projected, {x.dim(0), x.dim(1), 3, heads, d}, loc),
              {2, 0, 3, 1, 4}, loc);
  return unbind(split, 0, loc);
}

} // namespace

Tensor MultiheadAttention::attend(const Tensor &query, const Tensor &key,
                                  const Tensor &value,
                                  const AttentionMasks &masks,
                                  const Here &loc) const {
  for (const Tensor *t : {&query, &key, &value})
    if (t->rank() != 3 || t->dim(2) != embedDim_)
      throw errorAt(loc, "MultiheadAttention takes [" +
                             std::string(batchFirst_ ? "batch, seq"
                                                     : "seq, "
                                                       "batch") +
                             ", " + std::to_string(embedDim_) +
                             "] inputs, got " + shapeText(t->shape()));
  if (key.shape() != value.shape())
    throw errorAt(loc, "MultiheadAttention: key " + shapeText(key.shape()) +
                           " and value " + shapeText(value.shape()) +
                           " differ");
  // To [batch, seq, E].
  Tensor q = batchFirst_ ? query : transpose(query, 0, 1, loc);
  int64_t e = embedDim_, h = numHeads_, d = e / h;
  auto heads = [&](const Tensor &x, int i) {
    Tensor w = slice(inProjWeight_, 0, i * e, (i + 1) * e, 1, loc);
    Tensor b = inProjBias_ ? slice(inProjBias_, 0, i * e, (i + 1) * e, 1, loc)
                           : Tensor();
    Tensor projected = linear(x, w, b, loc);
    // [B, T, E] -> [B, H, T, D]
    return transpose(reshape(projected, {x.dim(0), x.dim(1), h, d}, loc), 1, 2,
                     loc);
  };
  AttentionOptions attention;
  attention.isCausal = masks.isCausal;
  if (masks.attnMask)
    // nn.MultiheadAttention's true means "masked out": the opposite of
    // scaled_dot_product_attention's.
    attention.attnMask =
        masks.attnMask.dtype() == DType::i1
            ? eq(masks.attnMask,
                 masks.attnMask.graph(loc).zeros({}, DType::i1, loc), loc)
            : masks.attnMask;
  Tensor out;
  if (sameValue(query, key, loc) && sameValue(key, value, loc)) {
    std::vector<Tensor> qkv =
        packedHeads(q, inProjWeight_, inProjBias_, h, loc);
    out = scaled_dot_product_attention(qkv[0], qkv[1], qkv[2], attention, loc);
  } else {
    Tensor k = batchFirst_ ? key : transpose(key, 0, 1, loc);
    Tensor v = batchFirst_ ? value : transpose(value, 0, 1, loc);
    out = scaled_dot_product_attention(heads(q, 0), heads(k, 1), heads(v, 2),
                                       attention, loc);
  }
  // [B, H, T, D] -> [B, T, E]
  out = reshape(transpose(out, 1, 2, loc), {q.dim(0), q.dim(1), e}, loc);
  out = linear(out, outProjWeight_, outProjBias_, loc);
  return batchFirst_ ? out : transpose(out, 0, 1, loc);
}

Tensor MultiheadAttention::operator()(const Tensor &query, const Tensor &key,
                                      const Tensor &value,
                                      const AttentionMasks &masks,
                                      Here loc) const {
  detail::LayerScope scope(query, builtPlace(), name());
  Tensor y = attend(query, key, value, masks, loc);
  scope.commit();
  return y;
}

Tensor MultiheadAttention::forward(const Tensor &x, Here loc) const {
  return attend(x, x, x, {}, loc);
}

std::vector<Tensor> MultiheadAttention::parameters() const {
  std::vector<Tensor> all;
  for (const Tensor &t :
       {inProjWeight_, inProjBias_, outProjWeight_, outProjBias_})
    if (t)
      all.push_back(t);
  return all;
}

//===----------------------------------------------------------------------===//
// Dropout
//===----------------------------------------------------------------------===//

Dropout::Dropout(double p, Here loc) : Module(loc), p_(p) {
  if (!(p >= 0 && p <= 1))
    throw errorAt(loc,
                  "dropout probability has to be between 0 and 1, but got " +
                      numberText(p));
}

Tensor Dropout::forward(const Tensor &x, Here loc) const {
  return dropout(x, p_, is_training(), loc);
}

//===----------------------------------------------------------------------===//
// Transformer
//===----------------------------------------------------------------------===//

namespace {

bool geluActivation(const std::string &activation, const Here &loc);

/// The layer's name, once every option is checked: the sublayers record
/// parameters as they are built, so nothing may fail after the first.
std::string transformerName(Graph &graph, int64_t dModel, int64_t nhead,
                            const TransformerEncoderLayerOptions &options,
                            const Here &loc) {
  std::string layer = "TransformerEncoderLayer(" + std::to_string(dModel) +
                      ", " + std::to_string(nhead) + ")";
  if (dModel <= 0 || nhead <= 0 || options.dimFeedforward <= 0)
    throw errorAt(loc, layer + ": d_model, nhead and dim_feedforward must be "
                               "positive");
  if (dModel % nhead != 0)
    throw errorAt(loc, layer + ": nhead must divide d_model");
  if (!(options.dropout >= 0 && options.dropout <= 1))
    throw errorAt(loc, "TransformerEncoderLayer: dropout must be in [0, 1]");
  if (!(options.layerNormEps > 0))
    throw errorAt(loc, "TransformerEncoderLayer: layer_norm_eps must be "
                       "positive");
  geluActivation(options.activation, loc);
  return layerName(graph, options.name, "encoder");
}

bool geluActivation(const std::string &activation, const Here &loc) {
  if (activation != "relu" && activation != "gelu")
    throw errorAt(loc, "TransformerEncoderLayer: activation is 'relu' or "
                       "'gelu', not '" +
                           activation + "'");
  return activation == "gelu";
}

} // namespace

TransformerEncoderLayer::TransformerEncoderLayer(
    Graph &graph, int64_t dModel, int64_t nhead,
    const TransformerEncoderLayerOptions &options, Here loc)
    : TransformerEncoderLayer(
          graph, dModel, nhead, options,
          transformerName(graph, dModel, nhead, options, loc), loc) {}

TransformerEncoderLayer::TransformerEncoderLayer(
    Graph &graph, int64_t dModel, int64_t nhead,
    const TransformerEncoderLayerOptions &options, const std::string &name,
    Here loc)
    : Module(loc), selfAttn_(graph, dModel, nhead,
                             {.batchFirst = options.batchFirst,
                              .name = name + ".self_attn",
                              .device = options.device},
                             loc),
      linear1_(graph, dModel, options.dimFeedforward,
               {.name = name + ".linear1", .device = options.device}, loc),
      linear2_(graph, options.dimFeedforward, dModel,
               {.name = name + ".linear2", .device = options.device}, loc),
      norm1_(graph, {dModel},
             {.eps = options.layerNormEps,
              .name = name + ".norm1",
              .device = options.device},
             loc),
      norm2_(graph, {dModel},
             {.eps = options.layerNormEps,
              .name = name + ".norm2",
              .device = options.device},
             loc),
      dropout_(options.dropout), gelu_(geluActivation(options.activation, loc)),
      normFirst_(options.normFirst) {
  setName(name);
}

Tensor TransformerEncoderLayer::encode(const Tensor &src,
                                       const AttentionMasks &masks,
                                       const Here &loc) const {
  bool training = is_training();
  auto attention = [&](const Tensor &x) {
    return dropout(selfAttn_(x, x, x, masks, loc), dropout_, training, loc);
  };
  auto feedForward = [&](const Tensor &x) {
    Tensor h = linear1_(x, loc);
    h = gelu_ ? gelu(h, "none", loc) : relu(h, loc);
    h = linear2_(dropout(h, dropout_, training, loc), loc);
    return dropout(h, dropout_, training, loc);
  };
  if (normFirst_) {
    Tensor x = add(src, attention(norm1_(src, loc)), loc);
    return add(x, feedForward(norm2_(x, loc)), loc);
  }
  Tensor x = norm1_(add(src, attention(src), loc), loc);
  return norm2_(add(x, feedForward(x), loc), loc);
}

Tensor TransformerEncoderLayer::operator()(const Tensor &src,
                                           const AttentionMasks &masks,
                                           Here loc) const {
  detail::LayerScope scope(src, builtPlace(), name());
  Tensor y = encode(src, masks, loc);
  scope.commit();
  return y;
}

Tensor TransformerEncoderLayer::forward(const Tensor &src, Here loc) const {
  return encode(src, {}, loc);
}

std::vector<Tensor> TransformerEncoderLayer::parameters() const {
  std::vector<Tensor> all;
  for (const Module *m : std::initializer_list<const Module *>{
           &selfAttn_, &linear1_, &linear2_, &norm1_, &norm2_})
    for (const Tensor &p : m->parameters())
      all.push_back(p);
  return all;
}

void TransformerEncoderLayer::train(bool on) {
  Module::train(on);
  for (Module *m : std::initializer_list<Module *>{&selfAttn_, &linear1_,
                                                   &linear2_, &norm1_, &norm2_})
    m->train(on);
}
