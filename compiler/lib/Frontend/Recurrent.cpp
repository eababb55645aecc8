//===- Recurrent.cpp - LSTM and GRU cells and sequences
//--------------------===//
//
// torch.nn's LSTMCell and GRUCell, and LSTM and GRU over a sequence of fixed
// length: several layers, one or two directions, unrolled into the graph
// (every step a few products and elementwise ops), with PyTorch's
// parameter names and initialisation. Only the public API.
//
//===----------------------------------------------------------------------===//

#include "locus/Frontend/Nn.h"

#include "LayerParams.h"
#include "UserText.h"

using namespace locus;
using namespace locus::nn;
using locus::detail::defaultParameter;
using locus::detail::errorAt;
using locus::detail::layerName;
using locus::detail::shapeText;

namespace {

using CellWeights = RecurrentWeights;

/// A cell's weights named "<name>.weight_ih<suffix>" and so on, all from
/// U(-1/sqrt(H), 1/sqrt(H)) as PyTorch's RNNCellBase and RNNBase.
CellWeights makeCell(Graph &graph, const std::string &name,
                     const std::string &suffix, int64_t gates, int64_t input,
                     int64_t hidden, bool bias,
                     const std::optional<Device> &device, const Here &loc) {
  auto param = [&](const char *what, const Shape &shape) {
    return defaultParameter(graph, name + "." + what + suffix, shape, hidden,
                            device, loc);
  };
  CellWeights w;
  w.wi = param("weight_ih", {gates * hidden, input});
  w.wh = param("weight_hh", {gates * hidden, hidden});
  if (bias) {
    w.bi = param("bias_ih", {gates * hidden});
    w.bh = param("bias_hh", {gates * hidden});
  }
  return w;
}

void checkCellSizes(const char *kind, int64_t input, int64_t hidden,
                    const Here &loc) {
  if (input < 1 || hidden < 1)
    throw errorAt(loc, std::string(kind) + "(" + std::to_string(input) + ", " +
                           std::to_string(hidden) +
                           "): sizes must be positive");
}

void checkCellInputs(const char *kind, const Tensor &x,
                     std::initializer_list<const Tensor *> states,
                     int64_t input, int64_t hidden, const Here &loc) {
  if (x.rank() != 2 || x.dim(1) != input)
    throw errorAt(loc, std::string(kind) + " takes x [N, " +
                           std::to_string(input) + "], got " +
                           shapeText(x.shape()));
  for (const Tensor *s : states)
    if (s->shape() != Shape{x.dim(0), hidden})
      throw errorAt(loc, std::string(kind) + " takes a state [" +
                             std::to_string(x.dim(0)) + ", " +
                             std::to_string(hidden) + "], got " +
                             shapeText(s->shape()));
}

std::vector<Tensor> cellParameters(const CellWeights &w) {
  return w.bi ? std::vector<Tensor>{w.wi, w.wh, w.bi, w.bh}
              : std::vector<Tensor>{w.wi, w.wh};
}

/// PyTorch's LSTM step: gates i, f, g, o.
std::pair<Tensor, Tensor> lstmStep(const CellWeights &w, const Tensor &x,
                                   const Tensor &h, const Tensor &c,
                                   const Here &loc) {
  Tensor gates =
      add(linear(x, w.wi, w.bi, loc), linear(h, w.wh, w.bh, loc), loc);
  std::vector<Tensor> g = chunk(gates, 4, 1, loc);
  Tensor i = sigmoid(g[0], loc), f = sigmoid(g[1], loc), cand = tanh(g[2], loc),
         o = sigmoid(g[3], loc);
  Tensor c2 = add(mul(f, c, loc), mul(i, cand, loc), loc);
  return {mul(o, tanh(c2, loc), loc), c2};
}

/// PyTorch's GRU step: gates r, z, n.
Tensor gruStep(const CellWeights &w, const Tensor &x, const Tensor &h,
               const Here &loc) {
  std::vector<Tensor> gi = chunk(linear(x, w.wi, w.bi, loc), 3, 1, loc);
  std::vector<Tensor> gh = chunk(linear(h, w.wh, w.bh, loc), 3, 1, loc);
  Tensor r = sigmoid(add(gi[0], gh[0], loc), loc);
  Tensor z = sigmoid(add(gi[1], gh[1], loc), loc);
  Tensor n = tanh(add(gi[2], mul(r, gh[2], loc), loc), loc);
  // (1 - z) * n + z * h = n + z * (h - n)
  return add(n, mul(z, sub(h, n, loc), loc), loc);
}

} // namespace

//===----------------------------------------------------------------------===//
// Cells
//===----------------------------------------------------------------------===//

LSTMCell::LSTMCell(Graph &graph, int64_t inputSize, int64_t hiddenSize,
                   const RecurrentCellOptions &options, Here loc)
    : Module(loc), hidden_(hiddenSize) {
  checkCellSizes("LSTMCell", inputSize, hiddenSize, loc);
  setName(layerName(graph, options.name, "lstm"));
  weights_ = makeCell(graph, name(), "", 4, inputSize, hiddenSize, options.bias,
                      options.device, loc);
}

std::pair<Tensor, Tensor> LSTMCell::step(const Tensor &x, const Tensor &h,
                                         const Tensor &c,
                                         const Here &loc) const {
  checkCellInputs("LSTMCell", x, {&h, &c}, weights_.wi.dim(1), hidden_, loc);
  return lstmStep(weights_, x, h, c, loc);
}

std::pair<Tensor, Tensor> LSTMCell::operator()(const Tensor &x, const Tensor &h,
                                               const Tensor &c,
                                               Here loc) const {
  detail::LayerScope scope(x, builtPlace(), name());
  std::pair<Tensor, Tensor> y = step(x, h, c, loc);
  scope.commit();
  return y;
}

Tensor LSTMCell::forward(const Tensor &x, Here loc) const {
  Tensor zero = x.graph(loc).zeros({x.rank() == 2 ? x.dim(0) : 1, hidden_},
                                   DType::f32, loc);
  return step(x, zero, zero, loc).first;
}

std::vector<Tensor> LSTMCell::parameters() const {
  return cellParameters(weights_);
}

GRUCell::GRUCell(Graph &graph, int64_t inputSize, int64_t hiddenSize,
                 const RecurrentCellOptions &options, Here loc)
    : Module(loc), hidden_(hiddenSize) {
  checkCellSizes("GRUCell", inputSize, hiddenSize, loc);
  setName(layerName(graph, options.name, "gru"));
  weights_ = makeCell(graph, name(), "", 3, inputSize, hiddenSize, options.bias,
                      options.device, loc);
}

Tensor GRUCell::step(const Tensor &x, const Tensor &h, const Here &loc) const {
  checkCellInputs("GRUCell", x, {&h}, weights_.wi.dim(1), hidden_, loc);
  return gruStep(weights_, x, h, loc);
}

Tensor GRUCell::operator()(const Tensor &x, const Tensor &h, Here loc) const {
  detail::LayerScope scope(x, builtPlace(), name());
  Tensor y = step(x, h, loc);
  scope.commit();
  return y;
}

Tensor GRUCell::forward(const Tensor &x, Here loc) const {
  Tensor zero = x.graph(loc).zeros({x.rank() == 2 ? x.dim(0) : 1, hidden_},
                                   DType::f32, loc);
  return step(x, zero, loc);
}

std::vector<Tensor> GRUCell::parameters() const {
  return cellParameters(weights_);
}

//===----------------------------------------------------------------------===//
// LSTM and GRU over a sequence
//===----------------------------------------------------------------------===//

Recurrent::Recurrent(Graph &graph, const char *kind, int64_t inputSize,
                     int64_t hiddenSize, const RecurrentOptions &options,
                     Here loc)
    : Module(loc), kind_(kind), lstm_(std::string(kind) == "LSTM"),
      input_(inputSize), hidden_(hiddenSize), layers_(options.numLayers),
      directions_(options.bidirectional ? 2 : 1),
      batchFirst_(options.batchFirst), dropout_(options.dropout) {
  checkCellSizes(kind, inputSize, hiddenSize, loc);
  if (options.numLayers < 1)
    throw errorAt(loc, std::string(kind) +
                           ": num_layers must be positive, "
                           "got " +
                           std::to_string(options.numLayers));
  if (!(options.dropout >= 0 && options.dropout <= 1))
    throw errorAt(loc, std::string(kind) + ": dropout must be in [0, 1], got " +
                           detail::numberText(options.dropout));
  setName(layerName(graph, options.name, lstm_ ? "lstm" : "gru"));
  for (int64_t layer = 0; layer < layers_; ++layer)
    for (int64_t dir = 0; dir < directions_; ++dir)
      weights_.push_back(makeCell(
          graph, name(), "_l" + std::to_string(layer) + (dir ? "_reverse" : ""),
          lstm_ ? 4 : 3, layer == 0 ? inputSize : hiddenSize * directions_,
          hiddenSize, options.bias, options.device, loc));
}

std::vector<Tensor> Recurrent::parameters() const {
  std::vector<Tensor> all;
  for (const CellWeights &w : weights_)
    for (const Tensor &p : cellParameters(w))
      all.push_back(p);
  return all;
}

Tensor Recurrent::forward(const Tensor &x, Here loc) const {
  return run(x, Tensor(), Tensor(), loc).output;
}

RecurrentOutput Recurrent::operator()(const Tensor &x, const Tensor &h0,
                                      const Tensor &c0, Here loc) const {
  detail::LayerScope scope(x, builtPlace(), name());
  RecurrentOutput y = run(x, h0, c0, loc);
  scope.commit();
  return y;
}

/// The initial states, one [N, H] per layer and direction: `given`'s
/// slices, or zeros in x's graph.
std::vector<Tensor> Recurrent::initial(const Tensor &x, const Tensor &given,
                                       const char *what, int64_t batch,
                                       const Here &loc) const {
  int64_t count = layers_ * directions_;
  if (!given)
    return std::vector<Tensor>(
        count, x.graph(loc).zeros({batch, hidden_}, DType::f32, loc));
  if (given.shape() != Shape{count, batch, hidden_})
    throw errorAt(loc, std::string(kind_) + " takes " + what + " [" +
                           std::to_string(count) + ", " +
                           std::to_string(batch) + ", " +
                           std::to_string(hidden_) + "], got " +
                           shapeText(given.shape()));
  return unbind(given, 0, loc);
}

/// One layer in both directions over `steps`: each direction's output at
/// every step; its final states appended to `hOut` (and `cOut`).
std::vector<std::vector<Tensor>>
Recurrent::runLayer(int64_t layer, const std::vector<Tensor> &steps,
                    const std::vector<Tensor> &h0,
                    const std::vector<Tensor> &c0, std::vector<Tensor> &hOut,
                    std::vector<Tensor> &cOut, const Here &loc) const {
  std::vector<std::vector<Tensor>> outs(directions_,
                                        std::vector<Tensor>(steps.size()));
  for (int64_t dir = 0; dir < directions_; ++dir) {
    auto k = static_cast<size_t>(layer * directions_ + dir);
    Tensor h = h0[k], c = lstm_ ? c0[k] : Tensor();
    for (size_t s = 0; s < steps.size(); ++s) {
      size_t t = dir ? steps.size() - 1 - s : s;
      if (lstm_)
        std::tie(h, c) = lstmStep(weights_[k], steps[t], h, c, loc);
      else
        h = gruStep(weights_[k], steps[t], h, loc);
      outs[dir][t] = h;
    }
    hOut.push_back(h);
    if (lstm_)
      cOut.push_back(c);
  }
  return outs;
}

RecurrentOutput Recurrent::run(const Tensor &x, const Tensor &h0,
                               const Tensor &c0, const Here &loc) const {
  if (x.rank() != 3 || x.dim(2) != input_)
    throw errorAt(loc, std::string(kind_) + " takes x [T, N, " +
                           std::to_string(input_) + "] ([N, T, " +
                           std::to_string(input_) +
                           "] with batch_first), got " + shapeText(x.shape()));
  if (!lstm_ && c0)
    throw errorAt(loc, "GRU has no cell state; pass h0 alone");
  Tensor seq = batchFirst_ ? transpose(x, 0, 1, loc) : x;
  int64_t batch = seq.dim(1);
  std::vector<Tensor> hs = initial(x, h0, "h0", batch, loc);
  std::vector<Tensor> cs;
  if (lstm_)
    cs = initial(x, c0, "c0", batch, loc);
  std::vector<Tensor> steps = unbind(seq, 0, loc), hOut, cOut;
  for (int64_t layer = 0; layer < layers_; ++layer) {
    std::vector<std::vector<Tensor>> outs =
        runLayer(layer, steps, hs, cs, hOut, cOut, loc);
    bool last = layer + 1 == layers_;
    for (size_t t = 0; t < steps.size(); ++t) {
      steps[t] = directions_ == 2 ? concat({outs[0][t], outs[1][t]}, 1, loc)
                                  : outs[0][t];
      // PyTorch's dropout on each layer's output but the last's.
      if (!last && dropout_ > 0 && is_training())
        steps[t] = dropout(steps[t], dropout_, true, loc);
    }
  }
  RecurrentOutput out;
  out.output = stack(steps, 0, loc);
  if (batchFirst_)
    out.output = transpose(out.output, 0, 1, loc);
  out.h = stack(hOut, 0, loc);
  if (lstm_)
    out.c = stack(cOut, 0, loc);
  return out;
}

LSTM::LSTM(Graph &graph, int64_t inputSize, int64_t hiddenSize,
           const RecurrentOptions &options, Here loc)
    : Recurrent(graph, "LSTM", inputSize, hiddenSize, options, loc) {}

GRU::GRU(Graph &graph, int64_t inputSize, int64_t hiddenSize,
         const RecurrentOptions &options, Here loc)
    : Recurrent(graph, "GRU", inputSize, hiddenSize, options, loc) {}
