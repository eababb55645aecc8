//===- Nn.h - layers and losses that record into a graph --------*- C++ -*-===//
//
// As torch.nn: a layer owns its parameters (recorded as locus.state when the
// layer is built) and records its computation when called. Initialisation
// follows PyTorch's defaults: for Linear and Conv2d, weight and bias are drawn
// from U(-1/sqrt(fan_in), 1/sqrt(fan_in)) -- kaiming_uniform(a = sqrt(5)) on
// the weight reduces to exactly that bound -- seeded by the parameter's name
// and the graph's seed (Graph::seedFor), so a program gives the same weights
// whatever the order its layers are built in.
//
//===----------------------------------------------------------------------===//

#ifndef LOCUS_FRONTEND_NN_H
#define LOCUS_FRONTEND_NN_H

#include "locus/Frontend/Graph.h"

#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace locus::nn {

/// A layer: records its computation on an input when called.
///
/// Ops recorded while a layer runs carry both lines: where the layer was
/// built and where it was called (an MLIR callsite location), and an error
/// inside a layer names the layer's line.
class Module {
public:
  /// `builtAt` is where the layer is constructed; leave it to its default.
  explicit Module(Here builtAt = Here::current())
      : builtAt_(builtAt), builtPlace_(detail::placeOf(builtAt)) {}
  /// A layer named by its path in the model ("layer1.0", as PyTorch's
  /// named_modules()): the ops its calls record carry it, so locus-dump
  /// groups them under it. Layers with parameters name themselves after
  /// their parameters' prefix; a user's module names itself with this.
  explicit Module(std::string name, Here builtAt = Here::current())
      : builtAt_(builtAt), builtPlace_(detail::placeOf(builtAt)),
        name_(std::move(name)) {}
  virtual ~Module() = default;
  Tensor operator()(const Tensor &x, Here loc = Here::current()) const;
  virtual Tensor forward(const Tensor &x, Here loc) const = 0;
  /// The trainable parameters, in PyTorch's order (weight before bias).
  virtual std::vector<Tensor> parameters() const { return {}; }
  /// Persistent state that is not trained (BatchNorm's running statistics).
  virtual std::vector<Tensor> buffers() const { return {}; }
  /// Every parameter and buffer with its state name, as state_dict(): the
  /// names a CompiledModel's state() and setState() take.
  std::vector<std::pair<std::string, Tensor>> state_dict() const;

  /// Training mode (on, the default) or evaluation mode, as
  /// torch.nn.Module.train() / eval(): Dropout and BatchNorm read it when
  /// called, so it changes what later calls record, not what was recorded.
  /// Containers pass it to their layers.
  virtual void train(bool on = true) { training_ = on; }
  void eval() { train(false); }
  bool is_training() const { return training_; }
  [[deprecated("PyTorch's name is primary: is_training()")]] bool
  isTraining() const {
    return training_;
  }
  [[deprecated("PyTorch's name is primary: state_dict()")]] std::vector<
      std::pair<std::string, Tensor>>
  stateDict() const {
    return state_dict();
  }
  /// The layer's path ("" when it has none): the ops it records are
  /// grouped under the innermost named layer calling them.
  const std::string &name() const { return name_; }

protected:
  /// Where the layer was built: layers with several inputs open their own
  /// detail::LayerScope with it (and name()).
  const Here &builtAt() const { return builtAt_; }
  /// The same in the user's terms: the Python line that built the layer
  /// when a binding built it.
  const detail::SourcePlace &builtPlace() const { return builtPlace_; }
  void setName(std::string name) { name_ = std::move(name); }

private:
  Here builtAt_;
  detail::SourcePlace builtPlace_;
  std::string name_;
  bool training_ = true;
};

struct LinearOptions {
  bool bias = true;
  /// Prefix of the parameter names ("<name>.weight"); "linearN" if empty.
  std::string name = {};
  /// Create the parameters on this device (a pin).
  std::optional<Device> device = std::nullopt;
};

/// y = x W^T + b with W [out, in], b [out].
class Linear : public Module {
public:
  Linear(Graph &graph, int64_t inFeatures, int64_t outFeatures,
         const LinearOptions &options = {}, Here loc = Here::current());
  Tensor forward(const Tensor &x, Here loc) const override;
  std::vector<Tensor> parameters() const override;
  const Tensor &weight() const { return weight_; }
  /// Empty when built without a bias.
  const Tensor &bias() const { return bias_; }

private:
  Tensor weight_, bias_;
};

struct Conv1dOptions {
  int64_t stride = 1;
  int64_t padding = 0;
  int64_t dilation = 1;
  int64_t groups = 1;
  bool bias = true;
  std::string name = {};
  std::optional<Device> device = std::nullopt;
};

/// torch.nn.Conv1d: [N, C, L] with weight [out, in / groups, k] and bias
/// [out] (PyTorch's state_dict shapes and initialisation), recorded as a
/// 2-D convolution of height 1.
class Conv1d : public Module {
public:
  Conv1d(Graph &graph, int64_t inChannels, int64_t outChannels,
         int64_t kernelSize, const Conv1dOptions &options = {},
         Here loc = Here::current());
  Tensor forward(const Tensor &x, Here loc) const override;
  std::vector<Tensor> parameters() const override;
  const Tensor &weight() const { return weight_; }
  const Tensor &bias() const { return bias_; }

private:
  Tensor weight_, bias_;
  Conv1dParams params_;
};

struct Conv2dOptions {
  std::vector<int64_t> stride = {1, 1};
  std::vector<int64_t> padding = {0, 0};
  std::vector<int64_t> dilation = {1, 1};
  int64_t groups = 1;
  bool bias = true;
  std::string name = {};
  std::optional<Device> device = std::nullopt;
};

/// NCHW convolution with weight [out, in / groups, kh, kw] and bias [out].
class Conv2d : public Module {
public:
  /// `kernelSize` has one entry (square) or two (kh, kw).
  Conv2d(Graph &graph, int64_t inChannels, int64_t outChannels,
         std::vector<int64_t> kernelSize, const Conv2dOptions &options = {},
         Here loc = Here::current());
  Tensor forward(const Tensor &x, Here loc) const override;
  std::vector<Tensor> parameters() const override;
  const Tensor &weight() const { return weight_; }
  const Tensor &bias() const { return bias_; }

private:
  Tensor weight_, bias_;
  Conv2dParams params_;
};

struct ConvTranspose2dOptions {
  std::vector<int64_t> stride = {1, 1};
  std::vector<int64_t> padding = {0, 0};
  std::vector<int64_t> outputPadding = {0, 0};
  std::vector<int64_t> dilation = {1, 1};
  int64_t groups = 1;
  bool bias = true;
  std::string name = {};
  std::optional<Device> device = std::nullopt;
};

/// torch.nn.ConvTranspose2d: weight [in, out / groups, kh, kw] and bias
/// [out], initialized as PyTorch's (its fan-in is out / groups * kh * kw).
class ConvTranspose2d : public Module {
public:
  /// `kernelSize` has one entry (square) or two (kh, kw).
  ConvTranspose2d(Graph &graph, int64_t inChannels, int64_t outChannels,
                  std::vector<int64_t> kernelSize,
                  const ConvTranspose2dOptions &options = {},
                  Here loc = Here::current());
  Tensor forward(const Tensor &x, Here loc) const override;
  std::vector<Tensor> parameters() const override;
  const Tensor &weight() const { return weight_; }
  const Tensor &bias() const { return bias_; }

private:
  Tensor weight_, bias_;
  ConvTranspose2dParams params_;
};

/// What MaxPool2d and AvgPool2d share: their sizes (one number: square;
/// `stride` empty: the kernel size, as in PyTorch) and ceil mode.
class Pool2d : public Module {
public:
  const Pool2dParams &params() const { return params_; }

protected:
  Pool2d(Pool2dParams params, Here loc);

private:
  Pool2dParams params_;
};

/// torch.nn.MaxPool2d (no dilation or indices).
class MaxPool2d : public Pool2d {
public:
  explicit MaxPool2d(std::vector<int64_t> kernelSize,
                     std::vector<int64_t> stride = {},
                     std::vector<int64_t> padding = {0, 0},
                     bool ceilMode = false, Here loc = Here::current())
      : Pool2d({std::move(kernelSize), std::move(stride), std::move(padding),
                ceilMode},
               loc) {}
  Tensor forward(const Tensor &x, Here loc) const override;
};

/// torch.nn.AvgPool2d (no divisor_override).
class AvgPool2d : public Pool2d {
public:
  explicit AvgPool2d(std::vector<int64_t> kernelSize,
                     std::vector<int64_t> stride = {},
                     std::vector<int64_t> padding = {0, 0},
                     bool ceilMode = false, bool countIncludePad = true,
                     Here loc = Here::current())
      : Pool2d({std::move(kernelSize), std::move(stride), std::move(padding),
                ceilMode, countIncludePad},
               loc) {}
  Tensor forward(const Tensor &x, Here loc) const override;
};

/// torch.nn.Identity: its input, recording nothing.
class Identity : public Module {
public:
  explicit Identity(Here loc = Here::current()) : Module(loc) {}
  Tensor forward(const Tensor &x, Here) const override { return x; }
};

/// torch.nn.Softmax and LogSoftmax over dimension `dim`.
class Softmax : public Module {
public:
  explicit Softmax(int64_t dim, Here loc = Here::current())
      : Module(loc), dim_(dim) {}
  Tensor forward(const Tensor &x, Here loc) const override;

private:
  int64_t dim_;
};
class LogSoftmax : public Module {
public:
  explicit LogSoftmax(int64_t dim, Here loc = Here::current())
      : Module(loc), dim_(dim) {}
  Tensor forward(const Tensor &x, Here loc) const override;

private:
  int64_t dim_;
};

class Flatten : public Module {
public:
  explicit Flatten(int64_t startDim = 1, int64_t endDim = -1,
                   Here loc = Here::current())
      : Module(loc), startDim_(startDim), endDim_(endDim) {}
  Tensor forward(const Tensor &x, Here loc) const override;

private:
  int64_t startDim_, endDim_;
};

class ReLU : public Module {
public:
  explicit ReLU(Here loc = Here::current()) : Module(loc) {}
  Tensor forward(const Tensor &x, Here loc) const override;
};

/// torch.nn.GELU: x * Phi(x); `approximate` is "none" or "tanh".
class GELU : public Module {
public:
  explicit GELU(std::string approximate = "none", Here loc = Here::current())
      : Module(loc), approximate_(std::move(approximate)) {}
  Tensor forward(const Tensor &x, Here loc) const override;

private:
  std::string approximate_;
};

/// torch.nn.SiLU: x * sigmoid(x).
class SiLU : public Module {
public:
  explicit SiLU(Here loc = Here::current()) : Module(loc) {}
  Tensor forward(const Tensor &x, Here loc) const override;
};

/// Where a layer's state is made and what it is called.
struct LayerOptions {
  /// Prefix of the state names ("<name>.weight"); "<stem>N" if empty.
  std::string name = {};
  /// Create the state on this device (a pin).
  std::optional<Device> device = std::nullopt;
};

struct BatchNormOptions {
  double eps = 1e-5;
  double momentum = 0.1;
  /// Learnable weight (ones) and bias (zeros).
  bool affine = true;
  /// Keep running_mean (zeros) and running_var (ones) as buffers; without
  /// them batch statistics are used in eval mode too, as in PyTorch.
  bool trackRunningStats = true;
  std::string name = {};
  std::optional<Device> device = std::nullopt;
};

/// torch.nn.BatchNorm1d / BatchNorm2d: normalises each channel (dimension
/// 1) with batch statistics in training, updating the running statistics
/// once per run, and with the running statistics in eval mode.
class BatchNorm : public Module {
public:
  /// `ranks` lists the input ranks accepted ({2, 3} for 1d, {4} for 2d).
  BatchNorm(Graph &graph, int64_t numFeatures, std::vector<int64_t> ranks,
            const char *kind, const BatchNormOptions &options, Here loc);
  Tensor forward(const Tensor &x, Here loc) const override;
  std::vector<Tensor> parameters() const override;
  std::vector<Tensor> buffers() const override;
  const Tensor &weight() const { return weight_; }
  const Tensor &bias() const { return bias_; }
  const Tensor &runningMean() const { return runningMean_; }
  const Tensor &runningVar() const { return runningVar_; }

private:
  Tensor weight_, bias_, runningMean_, runningVar_;
  std::vector<int64_t> ranks_;
  std::string kind_;
  double eps_, momentum_;
};

class BatchNorm1d : public BatchNorm {
public:
  BatchNorm1d(Graph &graph, int64_t numFeatures,
              const BatchNormOptions &options = {}, Here loc = Here::current())
      : BatchNorm(graph, numFeatures, {2, 3}, "BatchNorm1d", options, loc) {}
};

class BatchNorm2d : public BatchNorm {
public:
  BatchNorm2d(Graph &graph, int64_t numFeatures,
              const BatchNormOptions &options = {}, Here loc = Here::current())
      : BatchNorm(graph, numFeatures, {4}, "BatchNorm2d", options, loc) {}
};

struct LayerNormOptions {
  double eps = 1e-5;
  /// Learnable weight (ones) and bias (zeros) of normalized_shape.
  bool elementwiseAffine = true;
  bool bias = true;
  std::string name = {};
  std::optional<Device> device = std::nullopt;
};

/// torch.nn.LayerNorm over the last dimensions `normalizedShape`.
class LayerNorm : public Module {
public:
  LayerNorm(Graph &graph, Shape normalizedShape,
            const LayerNormOptions &options = {}, Here loc = Here::current());
  Tensor forward(const Tensor &x, Here loc) const override;
  std::vector<Tensor> parameters() const override;

private:
  Shape shape_;
  Tensor weight_, bias_;
  double eps_;
};

/// torch.nn.GroupNorm(num_groups, num_channels).
class GroupNorm : public Module {
public:
  GroupNorm(Graph &graph, int64_t numGroups, int64_t numChannels,
            const LayerNormOptions &options = {}, Here loc = Here::current());
  Tensor forward(const Tensor &x, Here loc) const override;
  std::vector<Tensor> parameters() const override;

private:
  int64_t groups_;
  Tensor weight_, bias_;
  double eps_;
};

/// torch.nn.Embedding: weight [num_embeddings, embedding_dim] drawn from
/// N(0, 1); called on i64 indices of any shape.
class Embedding : public Module {
public:
  Embedding(Graph &graph, int64_t numEmbeddings, int64_t embeddingDim,
            const LayerOptions &options = {}, Here loc = Here::current());
  Tensor forward(const Tensor &indices, Here loc) const override;
  std::vector<Tensor> parameters() const override { return {weight_}; }
  const Tensor &weight() const { return weight_; }

private:
  Tensor weight_;
};

/// torch.nn.AdaptiveAvgPool2d.
class AdaptiveAvgPool2d : public Module {
public:
  explicit AdaptiveAvgPool2d(std::vector<int64_t> outputSize,
                             Here loc = Here::current())
      : Module(loc), outputSize_(std::move(outputSize)) {}
  Tensor forward(const Tensor &x, Here loc) const override;

private:
  std::vector<int64_t> outputSize_;
};

class LeakyReLU : public Module {
public:
  explicit LeakyReLU(double negativeSlope = 0.01, Here loc = Here::current())
      : Module(loc), slope_(negativeSlope) {}
  Tensor forward(const Tensor &x, Here loc) const override;

private:
  double slope_;
};

class Tanh : public Module {
public:
  explicit Tanh(Here loc = Here::current()) : Module(loc) {}
  Tensor forward(const Tensor &x, Here loc) const override;
};

class Sigmoid : public Module {
public:
  explicit Sigmoid(Here loc = Here::current()) : Module(loc) {}
  Tensor forward(const Tensor &x, Here loc) const override;
};

/// torch.nn.PReLU: max(x, 0) + a * min(x, 0) with learned slopes a
/// ("<name>.weight" [numParameters]: one, or one per channel), starting at
/// `init`.
class PReLU : public Module {
public:
  explicit PReLU(Graph &graph, int64_t numParameters = 1, double init = 0.25,
                 const LayerOptions &options = {}, Here loc = Here::current());
  Tensor forward(const Tensor &x, Here loc) const override;
  std::vector<Tensor> parameters() const override { return {weight_}; }
  const Tensor &weight() const { return weight_; }

private:
  Tensor weight_;
};

/// torch.nn.Hardtanh: x limited to [minVal, maxVal].
class Hardtanh : public Module {
public:
  explicit Hardtanh(double minVal = -1.0, double maxVal = 1.0,
                    Here loc = Here::current())
      : Module(loc), min_(minVal), max_(maxVal) {}
  Tensor forward(const Tensor &x, Here loc) const override;

private:
  double min_, max_;
};

/// torch.nn.ReLU6: min(max(x, 0), 6).
class ReLU6 : public Module {
public:
  explicit ReLU6(Here loc = Here::current()) : Module(loc) {}
  Tensor forward(const Tensor &x, Here loc) const override;
};

/// torch.nn.Hardsigmoid: relu6(x + 3) / 6.
class Hardsigmoid : public Module {
public:
  explicit Hardsigmoid(Here loc = Here::current()) : Module(loc) {}
  Tensor forward(const Tensor &x, Here loc) const override;
};

/// torch.nn.Hardswish: x * relu6(x + 3) / 6.
class Hardswish : public Module {
public:
  explicit Hardswish(Here loc = Here::current()) : Module(loc) {}
  Tensor forward(const Tensor &x, Here loc) const override;
};

/// torch.nn.Softplus: log(1 + exp(beta x)) / beta, x above the threshold.
class Softplus : public Module {
public:
  explicit Softplus(double beta = 1.0, double threshold = 20.0,
                    Here loc = Here::current())
      : Module(loc), beta_(beta), threshold_(threshold) {}
  Tensor forward(const Tensor &x, Here loc) const override;

private:
  double beta_, threshold_;
};

/// torch.nn.Mish: x * tanh(softplus(x)).
class Mish : public Module {
public:
  explicit Mish(Here loc = Here::current()) : Module(loc) {}
  Tensor forward(const Tensor &x, Here loc) const override;
};

/// torch.nn.ELU: x where x > 0, alpha * (exp(x) - 1) elsewhere.
class ELU : public Module {
public:
  explicit ELU(double alpha = 1.0, Here loc = Here::current())
      : Module(loc), alpha_(alpha) {}
  Tensor forward(const Tensor &x, Here loc) const override;

private:
  double alpha_;
};

struct MultiheadAttentionOptions {
  /// Biases of the input and output projections.
  bool bias = true;
  /// Inputs are [batch, seq, embed] (true) or [seq, batch, embed] (false,
  /// PyTorch's default).
  bool batchFirst = false;
  std::string name = {};
  std::optional<Device> device = std::nullopt;
};

/// What one attention call takes besides query, key and value.
struct AttentionMasks {
  /// [L, S]: a boolean mask where TRUE means "may NOT attend" (as
  /// nn.MultiheadAttention's attn_mask; note scaled_dot_product_attention's
  /// is the opposite), or an f32 mask added to the scores.
  Tensor attnMask = {};
  /// Query i attends to keys 0..i only.
  bool isCausal = false;
};

/// torch.nn.MultiheadAttention (no dropout, need_weights=False): one
/// packed input projection in_proj_weight [3E, E] (Xavier-uniform) with
/// in_proj_bias (zeros), heads of E / num_heads, and out_proj (a Linear
/// whose bias starts at zero).
class MultiheadAttention : public Module {
public:
  MultiheadAttention(Graph &graph, int64_t embedDim, int64_t numHeads,
                     const MultiheadAttentionOptions &options = {},
                     Here loc = Here::current());
  /// Attention of `query` over `key` and `value`.
  Tensor operator()(const Tensor &query, const Tensor &key, const Tensor &value,
                    const AttentionMasks &masks = {},
                    Here loc = Here::current()) const;
  /// Self-attention: query = key = value = x, no mask.
  Tensor forward(const Tensor &x, Here loc) const override;
  std::vector<Tensor> parameters() const override;

private:
  Tensor attend(const Tensor &query, const Tensor &key, const Tensor &value,
                const AttentionMasks &masks, const Here &loc) const;
  int64_t embedDim_, numHeads_;
  bool batchFirst_;
  Tensor inProjWeight_, inProjBias_, outProjWeight_, outProjBias_;
};

struct RecurrentCellOptions {
  bool bias = true;
  std::string name = {};
  std::optional<Device> device = std::nullopt;
};

/// One layer and direction's weights: weight_ih [G*H, in], weight_hh
/// [G*H, H] and, with bias, bias_ih and bias_hh [G*H].
struct RecurrentWeights {
  Tensor wi, wh, bi, bh;
};

/// torch.nn.LSTMCell: gates i, f, g, o from weight_ih [4H, I] and
/// weight_hh [4H, H] (and two biases), every tensor drawn from
/// U(-1/sqrt(H), 1/sqrt(H)).
class LSTMCell : public Module {
public:
  LSTMCell(Graph &graph, int64_t inputSize, int64_t hiddenSize,
           const RecurrentCellOptions &options = {},
           Here loc = Here::current());
  /// (h', c') from x [N, I] and the state (h, c) [N, H] each.
  std::pair<Tensor, Tensor> operator()(const Tensor &x, const Tensor &h,
                                       const Tensor &c,
                                       Here loc = Here::current()) const;
  /// h' from x with a zero state.
  Tensor forward(const Tensor &x, Here loc) const override;
  std::vector<Tensor> parameters() const override;

private:
  std::pair<Tensor, Tensor> step(const Tensor &x, const Tensor &h,
                                 const Tensor &c, const Here &loc) const;
  int64_t hidden_;
  RecurrentWeights weights_;
};

/// torch.nn.GRUCell: gates r, z, n from weight_ih [3H, I] and weight_hh
/// [3H, H] (and two biases), initialised as LSTMCell's.
class GRUCell : public Module {
public:
  GRUCell(Graph &graph, int64_t inputSize, int64_t hiddenSize,
          const RecurrentCellOptions &options = {}, Here loc = Here::current());
  /// h' from x [N, I] and h [N, H].
  Tensor operator()(const Tensor &x, const Tensor &h,
                    Here loc = Here::current()) const;
  /// h' from x with a zero state.
  Tensor forward(const Tensor &x, Here loc) const override;
  std::vector<Tensor> parameters() const override;

private:
  Tensor step(const Tensor &x, const Tensor &h, const Here &loc) const;
  int64_t hidden_;
  RecurrentWeights weights_;
};

/// torch.nn.LSTM's and torch.nn.GRU's settings.
struct RecurrentOptions {
  int64_t numLayers = 1;
  bool bias = true;
  /// x and the output are [N, T, ...] instead of [T, N, ...].
  bool batchFirst = false;
  /// Dropout on the output of every layer but the last, in training mode.
  double dropout = 0.0;
  bool bidirectional = false;
  std::string name = {};
  std::optional<Device> device = std::nullopt;
};

/// What LSTM and GRU return, as PyTorch's (output, h_n) or (output, (h_n,
/// c_n)): the last layer's output at every step [T, N, D*H] ([N, T, D*H]
/// with batchFirst), D directions concatenated, and the final states
/// [D*L, N, H] (c for an LSTM only).
struct RecurrentOutput {
  Tensor output, h, c;
};

/// torch.nn.LSTM and torch.nn.GRU over a sequence of fixed length:
/// numLayers layers of one or two directions, unrolled into the graph (a
/// step is a few products and elementwise ops), with PyTorch's parameter
/// names ("<name>.weight_ih_l0", "..._l1_reverse") and initialisation, so
/// a PyTorch state_dict loads as it is.
class Recurrent : public Module {
public:
  using Module::operator();
  /// x [T, N, I] ([N, T, I] with batchFirst) from the states h0 (and c0
  /// for an LSTM) [D*L, N, H]; an empty state is zeros.
  RecurrentOutput operator()(const Tensor &x, const Tensor &h0,
                             const Tensor &c0 = {},
                             Here loc = Here::current()) const;
  /// The output from zero states.
  Tensor forward(const Tensor &x, Here loc) const override;
  std::vector<Tensor> parameters() const override;

protected:
  Recurrent(Graph &graph, const char *kind, int64_t inputSize,
            int64_t hiddenSize, const RecurrentOptions &options, Here loc);

private:
  RecurrentOutput run(const Tensor &x, const Tensor &h0, const Tensor &c0,
                      const Here &loc) const;
  std::vector<std::vector<Tensor>>
  runLayer(int64_t layer, const std::vector<Tensor> &steps,
           const std::vector<Tensor> &h0, const std::vector<Tensor> &c0,
           std::vector<Tensor> &hOut, std::vector<Tensor> &cOut,
           const Here &loc) const;
  std::vector<Tensor> initial(const Tensor &x, const Tensor &given,
                              const char *what, int64_t batch,
                              const Here &loc) const;
  const char *kind_;
  bool lstm_;
  int64_t input_, hidden_, layers_, directions_;
  bool batchFirst_;
  double dropout_;
  std::vector<RecurrentWeights> weights_; // layer * directions + direction
};

class LSTM : public Recurrent {
public:
  LSTM(Graph &graph, int64_t inputSize, int64_t hiddenSize,
       const RecurrentOptions &options = {}, Here loc = Here::current());
};

class GRU : public Recurrent {
public:
  GRU(Graph &graph, int64_t inputSize, int64_t hiddenSize,
      const RecurrentOptions &options = {}, Here loc = Here::current());
};

/// torch.nn.Dropout: in training mode zeroes each element with probability
/// p and scales the others by 1 / (1 - p), a new mask at every run (see
/// locus::dropout); in evaluation mode (eval()) the identity. A p outside
/// [0, 1] is an Error where the layer is built.
class Dropout : public Module {
public:
  explicit Dropout(double p = 0.5, Here loc = Here::current());
  Tensor forward(const Tensor &x, Here loc) const override;
  double p() const { return p_; }

private:
  double p_;
};

struct TransformerEncoderLayerOptions {
  int64_t dimFeedforward = 2048;
  /// After attention, inside the feed-forward block and after it, as
  /// PyTorch's (training mode only).
  double dropout = 0.1;
  /// "relu" or "gelu".
  std::string activation = "relu";
  double layerNormEps = 1e-5;
  bool batchFirst = false;
  /// Pre-LayerNorm (x + block(norm(x))) instead of post (norm(x + block(x))).
  bool normFirst = false;
  std::string name = {};
  std::optional<Device> device = std::nullopt;
};

/// torch.nn.TransformerEncoderLayer: self_attn (MultiheadAttention),
/// linear1 [ff, d] and linear2 [d, ff], norm1 and norm2, dropout.
class TransformerEncoderLayer : public Module {
public:
  TransformerEncoderLayer(Graph &graph, int64_t dModel, int64_t nhead,
                          const TransformerEncoderLayerOptions &options = {},
                          Here loc = Here::current());
  /// With a source mask (nn.MultiheadAttention's convention) or causal.
  Tensor operator()(const Tensor &src, const AttentionMasks &masks,
                    Here loc = Here::current()) const;
  Tensor forward(const Tensor &src, Here loc) const override;
  std::vector<Tensor> parameters() const override;
  void train(bool on = true) override;

private:
  TransformerEncoderLayer(Graph &graph, int64_t dModel, int64_t nhead,
                          const TransformerEncoderLayerOptions &options,
                          const std::string &name, Here loc);
  Tensor encode(const Tensor &src, const AttentionMasks &masks,
                const Here &loc) const;
  MultiheadAttention selfAttn_;
  Linear linear1_, linear2_;
  LayerNorm norm1_, norm2_;
  double dropout_;
  bool gelu_, normFirst_;
};

/// Any layer, held by a Sequential. Copies share the layer's parameters.
class AnyModule {
public:
  template <typename M, typename = std::enable_if_t<
                            std::is_base_of_v<Module, std::decay_t<M>>>>
  AnyModule(M &&module)
      : module_(std::make_shared<std::decay_t<M>>(std::forward<M>(module))) {}
  /// A module held by reference (the Python module's layers).
  explicit AnyModule(std::shared_ptr<Module> module)
      : module_(std::move(module)) {}
  const std::shared_ptr<Module> &get() const { return module_; }

private:
  std::shared_ptr<Module> module_;
};

/// Runs its layers in order:
///
///   nn::Sequential model{nn::Linear(g, 784, 128), nn::ReLU(), ...};
///
/// Braces, not parentheses: C++ builds the elements of a braced list left to
/// right, so unnamed layers are numbered in the order written on every
/// compiler (function arguments have no such guarantee).
class Sequential : public Module {
public:
  Sequential(std::initializer_list<AnyModule> layers,
             Here loc = Here::current())
      : Module(loc), layers_(layers.begin(), layers.end()) {}
  explicit Sequential(std::vector<AnyModule> layers, Here loc = Here::current())
      : Module(loc), layers_(std::move(layers)) {}
  Tensor forward(const Tensor &x, Here loc) const override;
  std::vector<Tensor> parameters() const override;
  std::vector<Tensor> buffers() const override;
  void train(bool on = true) override;
  size_t size() const { return layers_.size(); }

private:
  std::vector<AnyModule> layers_;
};

/// A loss layer over a functional loss of (input, target, reduction):
/// torch.nn.MSELoss, L1Loss, BCELoss, BCEWithLogitsLoss and
/// CrossEntropyLoss (its target i64 class indices) below.
template <Tensor (*Loss)(const Tensor &, const Tensor &, Reduction, Here)>
class ReducedLoss {
public:
  explicit ReducedLoss(Reduction reduction = Reduction::mean)
      : reduction_(reduction) {}
  Tensor operator()(const Tensor &input, const Tensor &target,
                    Here loc = Here::current()) const {
    return Loss(input, target, reduction_, loc);
  }

private:
  Reduction reduction_;
};
using MSELoss = ReducedLoss<mse_loss>;
using L1Loss = ReducedLoss<l1_loss>;
using BCELoss = ReducedLoss<binary_cross_entropy>;
using BCEWithLogitsLoss = ReducedLoss<binary_cross_entropy_with_logits>;
using CrossEntropyLoss = ReducedLoss<cross_entropy>;
using NLLLoss = ReducedLoss<nll_loss>;

/// torch.nn.SmoothL1Loss.
class SmoothL1Loss {
public:
  explicit SmoothL1Loss(Reduction reduction = Reduction::mean,
                        double beta = 1.0)
      : reduction_(reduction), beta_(beta) {}
  Tensor operator()(const Tensor &input, const Tensor &target,
                    Here loc = Here::current()) const {
    return smooth_l1_loss(input, target, reduction_, beta_, loc);
  }

private:
  Reduction reduction_;
  double beta_;
};

namespace utils {

/// torch.nn.utils.clip_grad_norm_ on gradients (locus::grad's): the total
/// norm of all of them together (`normType` 2 by default; any p > 0, or
/// infinity for the largest magnitude), then each gradient scaled by
/// min(1, maxNorm / (norm + 1e-6)), in place. Returns the total norm, a
/// scalar the step may output. Recorded as graph ops: nothing leaves the
/// step. Pass the clipped gradients to Optimizer::step(grads).
Tensor clip_grad_norm_(std::vector<Tensor> &grads, double maxNorm,
                       double normType = 2.0, Here loc = Here::current());
/// torch.nn.utils.clip_grad_value_: each gradient clamped to
/// [-clipValue, clipValue], in place.
void clip_grad_value_(std::vector<Tensor> &grads, double clipValue,
                      Here loc = Here::current());

[[deprecated(
    "PyTorch's name is primary: nn::utils::clip_grad_norm_")]] inline Tensor
clipGradNorm_(std::vector<Tensor> &grads, double maxNorm, double normType = 2.0,
              Here loc = Here::current()) {
  return clip_grad_norm_(grads, maxNorm, normType, loc);
}
[[deprecated(
    "PyTorch's name is primary: nn::utils::clip_grad_value_")]] inline void
clipGradValue_(std::vector<Tensor> &grads, double clipValue,
               Here loc = Here::current()) {
  clip_grad_value_(grads, clipValue, loc);
}

} // namespace utils

} // namespace locus::nn

namespace locus::optim {

/// torch.optim.SGD's settings (dampening is not offered).
struct SGDOptions {
  double lr = 0.01;
  double momentum = 0.0;
  double weightDecay = 0.0;
  bool nesterov = false;
};

/// torch.optim.Adam's settings.
struct AdamOptions {
  double lr = 1e-3;
  double beta1 = 0.9, beta2 = 0.999;
  double eps = 1e-8;
  double weightDecay = 0.0;
};

/// A parameter group, as in torch.optim: parameters with settings of their
/// own. Without `options`, the optimizer's settings apply. With them, they
/// replace the optimizer's settings whole, as libtorch's groups do (a
/// field not set in them has the options struct's default, not the
/// optimizer's); Python's group dicts override key by key, as torch.optim.
template <typename Options> struct ParamGroup {
  std::vector<Tensor> params;
  std::optional<Options> options;
};

/// An optimizer over parameters of one graph. step(loss) records, at the
/// caller's line, the backward pass of `loss` and one update of every
/// parameter (locus.sgd / locus.adam and locus.assign): the graph becomes a
/// training step, and each run of the compiled model is loss.backward() plus
/// optimizer.step() in PyTorch. The optimizer's state (momentum buffers,
/// Adam's and AdamW's moments and step count) is new buffer state, zeros at
/// first, made where each parameter is made, so it stays on the parameter's
/// device. Each parameter group's learning rate is state too, a scalar named
/// lrStateName(group) that starts at the group's lr: setLr() and the
/// schedulers of locus/Compile/LrScheduler.h change it in a compiled model
/// between runs, with no recompile, and checkpoints keep it.
class Optimizer {
public:
  virtual ~Optimizer() = default;
  /// Records the backward pass and the update; once per optimizer.
  void step(const Tensor &loss, Here loc = Here::current());
  /// Records the update from gradients the caller computed (locus::grad,
  /// perhaps clipped with nn::utils::clip_grad_norm_), one per parameter in
  /// parameters()' order; once per optimizer.
  void step(const std::vector<Tensor> &grads, Here loc = Here::current());
  /// Every parameter, group after group.
  const std::vector<Tensor> &parameters() const { return params_; }
  /// How many parameter groups there are (1 for an optimizer made from a
  /// list of parameters).
  size_t groupCount() const { return groupSizes_.size(); }
  /// The parameters of group `group`.
  std::vector<Tensor> groupParameters(size_t group,
                                      Here loc = Here::current()) const;
  /// The name of group `group`'s learning-rate state in the recorded graph
  /// and its compiled models: "optimizer.param_groups.<group>.lr" (a
  /// second optimizer to record its step() in the same graph, a GAN's,
  /// names its state "optimizer1.", and so on). An Error before step().
  std::string lrStateName(size_t group = 0, Here loc = Here::current()) const;
  /// Every state holding group `group`'s learning rate once step() has
  /// recorded: lrStateName(group) on the device of the group's first
  /// parameter, and "<it>@<device>" for each further device its parameters
  /// are pinned to ("@unpinned" for parameters placement puts), so no
  /// update reads a scalar across devices.
  std::vector<std::string> lrStateNames(size_t group = 0,
                                        Here loc = Here::current()) const;
  /// Group `group`'s learning rate as constructed (a scheduler's base lr).
  double initialLr(size_t group = 0, Here loc = Here::current()) const;

protected:
  /// One group per element of `groups`, none empty.
  Optimizer(std::vector<std::vector<Tensor>> groups, Here loc);
  struct Config;
  virtual void configure(Config &config, size_t group) const = 0;
  void checkGroup(size_t group, const char *what, const Here &loc) const;

private:
  void record(const std::vector<Tensor> &grads, const Tensor *loss,
              const Here &loc);

  std::vector<Tensor> params_;
  std::vector<size_t> groupSizes_;
  std::vector<std::vector<std::string>> lrStates_; // per group, once stepped
  std::string prefix_ = "optimizer.";
  bool stepped_ = false;
};

class SGD : public Optimizer {
public:
  SGD(std::vector<Tensor> params, const SGDOptions &options,
      Here loc = Here::current());
  /// torch.optim.SGD([{'params': ...}, {'params': ..., 'lr': ...}], ...).
  SGD(const std::vector<ParamGroup<SGDOptions>> &groups,
      const SGDOptions &defaults, Here loc = Here::current());

protected:
  void configure(Config &config, size_t group) const override;

private:
  std::vector<SGDOptions> options_;
};

class Adam : public Optimizer {
public:
  Adam(std::vector<Tensor> params, const AdamOptions &options = {},
       Here loc = Here::current());
  Adam(const std::vector<ParamGroup<AdamOptions>> &groups,
       const AdamOptions &defaults = {}, Here loc = Here::current());

protected:
  void configure(Config &config, size_t group) const override;

private:
  std::vector<AdamOptions> options_;
};

/// torch.optim.AdamW's settings (weight decay 0.01 by default).
struct AdamWOptions {
  double lr = 1e-3;
  double beta1 = 0.9, beta2 = 0.999;
  double eps = 1e-8;
  double weightDecay = 1e-2;
};

/// torch.optim.AdamW: Adam with decoupled weight decay (each step scales the
/// parameter by 1 - lr * weight_decay first, and the gradient gets no L2
/// term). Its state has Adam's names.
class AdamW : public Optimizer {
public:
  AdamW(std::vector<Tensor> params, const AdamWOptions &options = {},
        Here loc = Here::current());
  AdamW(const std::vector<ParamGroup<AdamWOptions>> &groups,
        const AdamWOptions &defaults = {}, Here loc = Here::current());

protected:
  void configure(Config &config, size_t group) const override;

private:
  std::vector<AdamWOptions> options_;
};

} // namespace locus::optim

#endif // LOCUS_FRONTEND_NN_H
