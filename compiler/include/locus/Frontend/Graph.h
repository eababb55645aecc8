//===- Graph.h - recording a locus graph from C++ ----------------*- C++
//-*-===//
//
// User code records a dataflow graph: every call below adds ops and computes
// nothing. Each op carries the caller's source location (std::source_location,
// defaulted at the call site), so every later diagnostic names the user's line.
//
// A mistake (mismatched shapes, a bad convolution, a wrong dtype, an unknown
// device, a duplicate name) throws locus::Error naming the user's file:line
// and the shapes involved, and leaves the graph as it was.
//
// No MLIR header is included here: user programs compile quickly.
//
//===----------------------------------------------------------------------===//

#ifndef LOCUS_FRONTEND_GRAPH_H
#define LOCUS_FRONTEND_GRAPH_H

#include "locus/Support/Errors.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <source_location>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace locus {

/// The call site that records an op; always left to its default.
using Here = std::source_location;

using Shape = std::vector<int64_t>;

/// Element types. i64 holds class labels; i1 comes out of comparisons.
/// bf16 and f16 are stored in 16 bits; ops compute on them in f32 and round
/// each result, products and convolutions accumulate in f32
/// (docs/precision.md).
enum class DType { f32, i64, i32, i1, bf16, f16 };
const char *dtypeName(DType dtype);

/// One thing the compiler tells the user about their program, at their
/// source line (or, for an imported model, the model file, line 0).
struct Diagnostic {
  enum class Severity { error, warning, note };
  Severity severity = Severity::error;
  std::string file; ///< empty when no line of the user's is concerned
  unsigned line = 0, column = 0;
  /// What it says; an error's notes follow on their own lines.
  std::string message;
  /// "file:line:col: warning: message", as compilers print it.
  std::string str() const;
};

/// A user error: what went wrong, at the user's source line.
class Error : public std::runtime_error {
public:
  Error(std::string file, unsigned line, unsigned column, std::string message);
  /// An error for every diagnostic of `all` (at least one error; the first
  /// error is this one's location and message), as the command line
  /// prints them.
  explicit Error(std::vector<Diagnostic> all);
  const std::string &file() const { return file_; }
  unsigned line() const { return line_; }
  unsigned column() const { return column_; }
  /// The message without the location (the first error's).
  const std::string &message() const { return message_; }
  /// Every error of the compilation that failed, in order (one, this, for a
  /// mistake found while recording); what() prints them all.
  const std::vector<Diagnostic> &diagnostics() const { return diagnostics_; }

private:
  std::string file_;
  unsigned line_, column_;
  std::string message_;
  std::vector<Diagnostic> diagnostics_;
};

/// `cpu` or `cuda:N`.
class Device {
public:
  enum class Kind { cpu, cuda };

  /// Parses "cpu", "cuda" (cuda:0) or "cuda:N"; anything else is an Error.
  static Device parse(std::string_view text, Here loc = Here::current());

  Kind kind() const { return kind_; }
  int index() const { return index_; }
  bool isCuda() const { return kind_ == Kind::cuda; }
  std::string str() const;
  bool operator==(const Device &) const = default;

private:
  Device(Kind kind, int index) : kind_(kind), index_(index) {}
  friend Device cpu();
  friend Device cuda(int, Here);
  Kind kind_;
  int index_;
};

Device cpu();
/// cuda:index; a negative index is an Error.
Device cuda(int index = 0, Here loc = Here::current());

/// How persistent state gets its first value (see #locus.init).
struct Init {
  enum class Kind { full, uniform, normal };
  Kind kind = Kind::full;
  double a = 0, b = 0;
  uint64_t seed = 0;

  static Init full(double value) { return {Kind::full, value, 0, 0}; }
  static Init zeros() { return full(0.0); }
  static Init uniform(double low, double high, uint64_t seed) {
    return {Kind::uniform, low, high, seed};
  }
  /// N(mean, std^2), as torch.nn.init.normal_.
  static Init normal(double mean, double std, uint64_t seed) {
    return {Kind::normal, mean, std, seed};
  }
};

namespace detail {
struct GraphImpl;
class LayerScope;
class Recording;
} // namespace detail

/// Tensor and Graph (and the operators on tensors) live in a namespace of
/// their own, and the functions that record ops in `locus`: a call such as
/// `gelu(x)` in user code finds the user's own `gelu` and never, through
/// argument-dependent lookup, a locus function of the same name added in a
/// later release. Spell locus's as `locus::gelu(x)` or `x.gelu()`-style
/// methods; both names below are also `locus::Tensor` and `locus::Graph`.
namespace types {
class Graph;

/// A value of the graph: a cheap handle that keeps its graph alive.
class Tensor {
public:
  /// An empty handle; using it to record an op is an Error.
  Tensor() = default;

  explicit operator bool() const { return value_ != nullptr; }
  Shape shape() const;
  int64_t rank() const;
  /// Dimension `axis`; negative counts from the end.
  int64_t dim(int64_t axis) const;
  int64_t numel() const;
  DType dtype() const;

  /// Records an explicit move to `device`: a pin, as PyTorch's .to().
  Tensor to(const Device &device, Here loc = Here::current()) const;
  /// The graph this tensor belongs to (an Error for an empty handle).
  Graph graph(Here loc = Here::current()) const;

  /// Dimension `dim` (negative counts from the end), as Tensor.size(dim).
  int64_t size(int64_t dim) const { return this->dim(dim); }
  /// The shape, as Tensor.sizes().
  Shape sizes() const { return shape(); }

  // PyTorch's Tensor methods: each records the free function of the same
  // name (x.relu() is locus::relu(x)), at the caller's line.
  Tensor relu(Here loc = Here::current()) const;
  Tensor sigmoid(Here loc = Here::current()) const;
  Tensor tanh(Here loc = Here::current()) const;
  Tensor exp(Here loc = Here::current()) const;
  Tensor log(Here loc = Here::current()) const;
  Tensor sqrt(Here loc = Here::current()) const;
  Tensor rsqrt(Here loc = Here::current()) const;
  Tensor abs(Here loc = Here::current()) const;
  Tensor neg(Here loc = Here::current()) const;
  Tensor sin(Here loc = Here::current()) const;
  Tensor cos(Here loc = Here::current()) const;
  Tensor erf(Here loc = Here::current()) const;
  Tensor reciprocal(Here loc = Here::current()) const;
  Tensor pow(double exponent, Here loc = Here::current()) const;
  Tensor clamp(std::optional<double> min, std::optional<double> max,
               Here loc = Here::current()) const;
  Tensor masked_fill(const Tensor &mask, double value,
                     Here loc = Here::current()) const;
  Tensor softmax(int64_t dim, Here loc = Here::current()) const;
  Tensor log_softmax(int64_t dim, Here loc = Here::current()) const;
  Tensor matmul(const Tensor &other, Here loc = Here::current()) const;
  /// One dimension may be -1, as in PyTorch.
  Tensor reshape(const Shape &shape, Here loc = Here::current()) const;
  /// reshape(): graph values have no storage to share.
  Tensor view(const Shape &shape, Here loc = Here::current()) const;
  /// Tensor.flatten: from dimension 0 by default (nn.Flatten and
  /// locus::flatten start at 1).
  Tensor flatten(int64_t startDim = 0, int64_t endDim = -1,
                 Here loc = Here::current()) const;
  Tensor permute(const std::vector<int64_t> &dims,
                 Here loc = Here::current()) const;
  Tensor transpose(int64_t dim0, int64_t dim1,
                   Here loc = Here::current()) const;
  /// A matrix's transpose; a 0-d or 1-d tensor is itself. An Error for
  /// more than 2 dimensions, as Tensor.t().
  Tensor t(Here loc = Here::current()) const;
  Tensor squeeze(int64_t dim, Here loc = Here::current()) const;
  Tensor unsqueeze(int64_t dim, Here loc = Here::current()) const;
  Tensor expand(const Shape &shape, Here loc = Here::current()) const;
  /// The sum (mean) of every element, a 0-d tensor, as x.sum().
  Tensor sum(Here loc = Here::current()) const;
  Tensor sum(const std::vector<int64_t> &dims, bool keepdim = false,
             Here loc = Here::current()) const;
  Tensor mean(Here loc = Here::current()) const;
  Tensor mean(const std::vector<int64_t> &dims, bool keepdim = false,
              Here loc = Here::current()) const;
  Tensor argmax(int64_t dim, bool keepdim = false,
                Here loc = Here::current()) const;
  /// Elementwise conversion, as locus::cast.
  Tensor to(DType dtype, Here loc = Here::current()) const;

  /// The handle of the underlying MLIR value (mlir::Value's opaque pointer).
  void *opaqueValue() const { return value_; }

private:
  friend struct detail::GraphImpl;
  friend class detail::LayerScope;
  friend class detail::Recording;
  Tensor(std::shared_ptr<detail::GraphImpl> graph, void *value)
      : graph_(std::move(graph)), value_(value) {}
  std::shared_ptr<detail::GraphImpl> graph_;
  void *value_ = nullptr;
};
} // namespace types

using types::Graph;
using types::Tensor;

/// One dimension of an input: a size, or a dynamic size that each run
/// gives, up to its bound (`locus::dyn("batch", 256)`). Tensors keep their
/// bounds as their shape(); graphs with dynamic sizes record and check
/// today, and compile() says what it cannot compile yet
/// (docs/frontend.md, "Dynamic sizes").
struct InputDim {
  InputDim(int64_t size) : size(size) {} // NOLINT: a size is a dimension
  InputDim(std::string symbol, int64_t bound)
      : size(bound), symbol(std::move(symbol)), dynamic(true) {}
  /// The size, or a dynamic size's bound.
  int64_t size;
  /// The dynamic size's name.
  std::string symbol;
  bool dynamic = false;
};

/// A dynamic dimension named `symbol` that takes sizes 1 to `bound`; every
/// dimension with that name has the same size in one run.
inline InputDim dyn(std::string symbol, int64_t bound) {
  return InputDim(std::move(symbol), bound);
}

/// x's dimensions as the graph knows them: a size, or a dynamic size
/// (`dyn("seq", 16)`). A dimension that is a product of sizes comes back
/// dynamic with the product as its name ("batch*seq", "10*batch") and its
/// size at the bounds; only single sizes may be given to input() or
/// narrow_to().
std::vector<InputDim> dynamic_shape(const Tensor &x,
                                    Here loc = Here::current());

/// The leading window of x whose extent each run gives: dimension d of the
/// result is `dims[d]`, either x's own size there or a dynamic size already
/// declared (by an input) whose bound is x's size there, and each run takes
/// its elements [0, size) of it. For values a graph builds at the bounds
/// but a run needs at its own sizes: a causal mask `triu(g.full({16, 16},
/// -inf), 1)` at sequence length `seq` is `narrow_to(mask, {dyn("seq", 16),
/// dyn("seq", 16)})`, the positions `arange` of 16 at `seq` one dimension
/// of it. x's dimensions where the window is dynamic must be static.
Tensor narrow_to(const Tensor &x, const std::vector<InputDim> &dims,
                 Here loc = Here::current());

struct InputOptions {
  DType dtype = DType::f32;
  /// Creates the input on this device: a pin under every policy.
  std::optional<Device> device = std::nullopt;
};

struct StateOptions {
  /// Creates the state on this device: a pin under every policy.
  std::optional<Device> device = std::nullopt;
};

struct PrintOptions {
  /// Print each op's source location (the user's file:line:col).
  bool locations = false;
};

namespace types {
/// A recorded graph. Copies share the same graph.
class Graph {
public:
  explicit Graph(std::string name, Here loc = Here::current());

  const std::string &name() const;

  /// A graph input, fed at each run.
  Tensor input(const std::string &name, const Shape &shape,
               const InputOptions &options = {}, Here loc = Here::current());
  /// An input with dynamic dimensions: `g.input("x", {dyn("batch", 256),
  /// 784})`. (A braced list of sizes comes here too, and means the same as
  /// a Shape.)
  Tensor input(const std::string &name, std::initializer_list<InputDim> dims,
               const InputOptions &options = {}, Here loc = Here::current()) {
    return input(name, std::vector<InputDim>(dims), options, loc);
  }
  Tensor input(const std::string &name, const std::vector<InputDim> &dims,
               const InputOptions &options = {}, Here loc = Here::current());
  /// A trainable parameter, persistent across runs.
  Tensor parameter(const std::string &name, const Shape &shape,
                   const Init &init, const StateOptions &options = {},
                   Here loc = Here::current());
  /// Persistent non-trainable state (optimizer moments, running stats).
  Tensor buffer(const std::string &name, const Shape &shape, const Init &init,
                const StateOptions &options = {}, Here loc = Here::current());
  /// A trainable parameter that starts from `values` (row-major: a
  /// pretrained or imported weight). The values travel with the graph:
  /// compile() starts the model from them and save() writes them into the
  /// artifact.
  Tensor parameter(const std::string &name, const Shape &shape,
                   std::vector<float> values, const StateOptions &options = {},
                   Here loc = Here::current());
  /// Persistent non-trainable state that starts from `values` (imported
  /// running statistics).
  Tensor buffer(const std::string &name, const Shape &shape,
                std::vector<float> values, const StateOptions &options = {},
                Here loc = Here::current());
  /// A scalar f32 constant.
  Tensor constant(float value, Here loc = Here::current());
  /// An f32 constant of the given shape, row-major values.
  Tensor constant(const Shape &shape, const std::vector<float> &values,
                  Here loc = Here::current());
  /// An i64 constant of the given shape, row-major values.
  Tensor constantI64(const Shape &shape, const std::vector<int64_t> &values,
                     Here loc = Here::current());
  /// A constant filled with `value`, as torch.full.
  Tensor full(const Shape &shape, double value, DType dtype = DType::f32,
              Here loc = Here::current());
  Tensor zeros(const Shape &shape, DType dtype = DType::f32,
               Here loc = Here::current());
  Tensor ones(const Shape &shape, DType dtype = DType::f32,
              Here loc = Here::current());
  /// start, start + step, ... up to but excluding end, as torch.arange
  /// (i64 by default, like torch.arange of integers).
  Tensor arange(int64_t start, int64_t end, int64_t step = 1,
                DType dtype = DType::i64, Here loc = Here::current());
  /// 0, 1, ..., end - 1.
  Tensor arange(int64_t end, DType dtype = DType::i64,
                Here loc = Here::current());
  /// Names `value` as an output of the graph.
  void output(const std::string &name, const Tensor &value,
              Here loc = Here::current());

  /// Seeds parameter initialisation, as torch.manual_seed: layers built
  /// after this call draw their seeds from it (see seedFor).
  void manual_seed(uint64_t seed);
  [[deprecated("PyTorch's name is primary: Graph::manual_seed")]] void
  manualSeed(uint64_t seed) {
    manual_seed(seed);
  }
  /// The seed of the state named `name`: a hash of the graph's seed and the
  /// name, so it does not depend on the order in which layers are built (C++
  /// leaves the order of function arguments unspecified).
  uint64_t seedFor(const std::string &name) const;

  /// "<stem>N" with N counting from 0 per stem in this graph: names of
  /// unnamed layers ("linear0", "linear1", ...).
  std::string freshName(const std::string &stem);

  /// The value a state tensor starts with: the values it was given, or what
  /// its #locus.init makes.
  std::vector<float> initialValue(const Tensor &state,
                                  Here loc = Here::current()) const;

  /// Every trainable parameter, in the order recorded (what an optimizer
  /// takes to fine-tune a whole graph, an imported one included).
  std::vector<Tensor> parameters() const;
  /// The value named `name` by output(); an Error naming the outputs there
  /// are otherwise.
  Tensor outputValue(const std::string &name, Here loc = Here::current()) const;

  /// Number of ops recorded (the graph op itself not counted).
  size_t numOps() const;
  /// The graph as MLIR text (a module holding one locus.graph).
  std::string str(const PrintOptions &options = {}) const;

  /// Internals, for the compiler.
  detail::GraphImpl &impl() const { return *impl_; }

private:
  friend class Tensor;
  explicit Graph(std::shared_ptr<detail::GraphImpl> impl)
      : impl_(std::move(impl)) {}
  std::shared_ptr<detail::GraphImpl> impl_;
};
} // namespace types

namespace detail {
/// Where something was written: a C++ line, or a Python caller's.
struct SourcePlace {
  std::string file;
  unsigned line = 0;
  unsigned column = 0;
};

/// `loc`, or the Python caller's line while an OriginScope at a file and
/// line is active on this thread (a binding records for Python): where a
/// layer built now was built, in the user's terms.
SourcePlace placeOf(const Here &loc);

/// One call of a layer (nn::Module): while alive, ops recorded into
/// `input`'s graph are located at callsite(<builtAt> at <the recording call>)
/// (nested scopes name the innermost layer), <builtAt> wrapped in a NameLoc
/// of the innermost named layer's `name` ("layer1.0.conv1") when there is
/// one: the layer path locus-dump groups by. Unless commit() is called,
/// everything recorded during the scope is erased when it ends: a layer call
/// that throws leaves the graph unchanged.
class LayerScope {
public:
  LayerScope(const Tensor &input, const Here &builtAt,
             const std::string &name = "");
  LayerScope(const Tensor &input, const SourcePlace &builtAt,
             const std::string &name = "");
  ~LayerScope();
  void commit() { committed_ = true; }
  LayerScope(const LayerScope &) = delete;
  LayerScope &operator=(const LayerScope &) = delete;

private:
  std::shared_ptr<GraphImpl> graph_;
  void *last_ = nullptr;  // the last op before the call (mlir::Operation *)
  std::size_t moved_ = 0; // assigns moved by assign() before the call
  bool committed_ = false;
};

/// While alive, ops recorded into `graph` are located at `what` in `file`
/// (e.g. "node 'conv1' (Conv)" of "resnet.onnx") instead of at the C++ line
/// that records them: what an importer records points at the model's node.
class OriginScope {
public:
  OriginScope(const Graph &graph, const std::string &file,
              const std::string &what);
  /// Ops located at `file`:`line` (a Python caller's line, say).
  OriginScope(const Graph &graph, const std::string &file, unsigned line,
              unsigned column);
  ~OriginScope();
  OriginScope(const OriginScope &) = delete;
  OriginScope &operator=(const OriginScope &) = delete;

private:
  std::shared_ptr<GraphImpl> graph_;
  /// A Python line: where layers built in the scope were built.
  std::optional<SourcePlace> place_;
  const SourcePlace *outerPlace_ = nullptr;
};

/// One call of a function made of other recording calls: unless commit()
/// is called, everything recorded into `anchor`'s graph while it lives is
/// erased when it ends, so a call that throws leaves the graph unchanged.
class Recording {
public:
  Recording(const Tensor &anchor, const Here &loc);
  ~Recording();
  void commit() { committed_ = true; }
  Recording(const Recording &) = delete;
  Recording &operator=(const Recording &) = delete;

private:
  std::shared_ptr<GraphImpl> graph_;
  void *last_ = nullptr;
  std::size_t moved_ = 0;
  bool committed_ = false;
};
} // namespace detail

//===----------------------------------------------------------------------===//
// Ops. Binary elementwise ops broadcast by numpy's rules (recorded as an
// explicit locus.broadcast). Axes may be negative (counted from the end).
//===----------------------------------------------------------------------===//

namespace types {
/// The left operand of an operator, with the caller's location (operators
/// cannot take a defaulted std::source_location parameter).
struct Operand {
  Operand(const Tensor &tensor, Here loc = Here::current())
      : tensor(tensor), loc(loc) {}
  Tensor tensor;
  Here loc;
};

Tensor operator+(const Operand &a, const Tensor &b);
Tensor operator-(const Operand &a, const Tensor &b);
Tensor operator*(const Operand &a, const Tensor &b);
Tensor operator/(const Operand &a, const Tensor &b);
Tensor operator+(const Operand &a, float b);
Tensor operator-(const Operand &a, float b);
Tensor operator*(const Operand &a, float b);
Tensor operator/(const Operand &a, float b);
Tensor operator-(const Operand &a);
/// A number on the left: 1.0f - t, 2.0f * t (located where `b` is).
Tensor operator+(float a, const Operand &b);
Tensor operator-(float a, const Operand &b);
Tensor operator*(float a, const Operand &b);
Tensor operator/(float a, const Operand &b);
} // namespace types
using types::Operand;

/// torch::NoGradGuard / `with torch.no_grad():`: while one lives, the ops
/// this thread records carry no gradient. Autodiff treats their results as
/// constants (as PyTorch's tensors made under no_grad, which do not require
/// grad): no gradient flows through them to what they read. Guards nest.
class NoGradGuard {
public:
  NoGradGuard();
  ~NoGradGuard();
  NoGradGuard(const NoGradGuard &) = delete;
  NoGradGuard &operator=(const NoGradGuard &) = delete;
};
/// torch.is_grad_enabled(): false while a NoGradGuard lives on this thread.
bool is_grad_enabled();

/// Reverse-mode gradients of `loss` (a scalar f32 tensor) with respect to
/// each of `wrt` (f32 tensors of the same graph), recorded into the graph
/// (the backward ops carry the lines of the forward ops they differentiate);
/// a tensor the loss does not depend on gets zeros. As
/// torch.autograd.grad(loss, wrt). Throws, recording nothing, on an op with
/// no gradient on the path.
std::vector<Tensor> grad(const Tensor &loss, const std::vector<Tensor> &wrt,
                         Here loc = Here::current());

/// The name of a parameter or buffer ("fc.weight"); an Error for any
/// other value.
std::string stateName(const Tensor &state, Here loc = Here::current());

/// Records that each run ends by writing `value` into `state` (a parameter
/// or buffer of the same graph, same shape), in place where the plan allows:
/// the next run reads the new value. Assigned again in the same graph, a
/// state ends the run with the value written last, as a sequence of
/// PyTorch's in-place updates would (a batch norm called twice in one
/// step); ops reading `state` still read its value from the run's start.
void assign(const Tensor &state, const Tensor &value,
            Here loc = Here::current());

/// The value `state` holds when this run ends: what assign() last wrote to
/// it in this graph, or `state` itself when nothing did. An update that
/// builds on earlier ones reads this (batch_norm's running statistics do).
Tensor assignedValue(const Tensor &state, Here loc = Here::current());

Tensor add(const Tensor &a, const Tensor &b, Here loc = Here::current());
Tensor sub(const Tensor &a, const Tensor &b, Here loc = Here::current());
Tensor mul(const Tensor &a, const Tensor &b, Here loc = Here::current());
Tensor div(const Tensor &a, const Tensor &b, Here loc = Here::current());
Tensor maximum(const Tensor &a, const Tensor &b, Here loc = Here::current());
Tensor minimum(const Tensor &a, const Tensor &b, Here loc = Here::current());
/// Elementwise conversion to `dtype`, as Tensor.to(dtype): f32 to an
/// integer truncates toward zero, anything to i1 is `x != 0`, i1 gives 0 or
/// 1, i32 to i64 keeps the sign and i64 to i32 wraps. Only f32 values carry
/// gradients. The identity when x has `dtype`.
Tensor cast(const Tensor &x, DType dtype, Here loc = Here::current());

Tensor neg(const Tensor &x, Here loc = Here::current());
Tensor exp(const Tensor &x, Here loc = Here::current());
Tensor log(const Tensor &x, Here loc = Here::current());
Tensor sqrt(const Tensor &x, Here loc = Here::current());
Tensor relu(const Tensor &x, Here loc = Here::current());
Tensor sigmoid(const Tensor &x, Here loc = Here::current());
Tensor tanh(const Tensor &x, Here loc = Here::current());
Tensor erf(const Tensor &x, Here loc = Here::current());
Tensor sin(const Tensor &x, Here loc = Here::current());
Tensor cos(const Tensor &x, Here loc = Here::current());
Tensor abs(const Tensor &x, Here loc = Here::current());
/// torch.floor, torch.ceil and torch.round (halves to the even integer);
/// their gradients are zero, as PyTorch's.
Tensor floor(const Tensor &x, Here loc = Here::current());
Tensor ceil(const Tensor &x, Here loc = Here::current());
Tensor round(const Tensor &x, Here loc = Here::current());
/// torch.sign: 1, -1, or x itself at zero and NaN.
Tensor sign(const Tensor &x, Here loc = Here::current());
/// torch.fmod: a - b trunc(a / b), with a's sign (C's fmod), exactly.
Tensor fmod(const Tensor &a, const Tensor &b, Here loc = Here::current());
/// torch.remainder: a - b floor(a / b), with b's sign (Python's %).
Tensor remainder(const Tensor &a, const Tensor &b, Here loc = Here::current());
/// 1 / sqrt(x).
Tensor rsqrt(const Tensor &x, Here loc = Here::current());
/// 1 / x.
Tensor reciprocal(const Tensor &x, Here loc = Here::current());
/// x * sigmoid(x), as torch.nn.functional.silu.
Tensor silu(const Tensor &x, Here loc = Here::current());
/// x * Phi(x), as torch.nn.functional.gelu: `approximate` is "none" (erf)
/// or "tanh".
Tensor gelu(const Tensor &x, std::string_view approximate = "none",
            Here loc = Here::current());
Tensor pow(const Tensor &x, double exponent, Here loc = Here::current());
/// max(x, 0) + negativeSlope * min(x, 0), as torch.nn.functional.leaky_relu.
Tensor leaky_relu(const Tensor &x, double negativeSlope = 0.01,
                  Here loc = Here::current());
/// x limited to [min, max] (either bound may be left out), as torch.clamp;
/// the gradient passes where x is inside the bounds.
Tensor clamp(const Tensor &x, std::optional<double> min,
             std::optional<double> max, Here loc = Here::current());
/// x limited to [minVal, maxVal], as torch.nn.functional.hardtanh: like
/// clamp, but the gradient passes strictly inside the bounds only (PyTorch's
/// hardtanh_backward).
Tensor hardtanh(const Tensor &x, double minVal = -1.0, double maxVal = 1.0,
                Here loc = Here::current());
/// hardtanh(x, 0, 6), as torch.nn.functional.relu6.
Tensor relu6(const Tensor &x, Here loc = Here::current());
/// relu6(x + 3) / 6, as torch.nn.functional.hardsigmoid.
Tensor hardsigmoid(const Tensor &x, Here loc = Here::current());
/// x * hardsigmoid(x), as torch.nn.functional.hardswish.
Tensor hardswish(const Tensor &x, Here loc = Here::current());
/// log(1 + exp(beta x)) / beta, and x itself where beta x > threshold, as
/// torch.nn.functional.softplus.
Tensor softplus(const Tensor &x, double beta = 1.0, double threshold = 20.0,
                Here loc = Here::current());
/// x * tanh(softplus(x)), as torch.nn.functional.mish.
Tensor mish(const Tensor &x, Here loc = Here::current());
/// max(x, 0) + weight * min(x, 0), as torch.nn.functional.prelu: `weight`
/// holds one slope, or one per channel (dimension 1 of x).
Tensor prelu(const Tensor &x, const Tensor &weight, Here loc = Here::current());
/// x where x > 0, alpha * (exp(x) - 1) elsewhere, as torch.nn.functional.elu.
Tensor elu(const Tensor &x, double alpha = 1.0, Here loc = Here::current());

Tensor eq(const Tensor &a, const Tensor &b, Here loc = Here::current());
Tensor ne(const Tensor &a, const Tensor &b, Here loc = Here::current());
Tensor lt(const Tensor &a, const Tensor &b, Here loc = Here::current());
Tensor le(const Tensor &a, const Tensor &b, Here loc = Here::current());
Tensor gt(const Tensor &a, const Tensor &b, Here loc = Here::current());
Tensor ge(const Tensor &a, const Tensor &b, Here loc = Here::current());
/// cond ? a : b, elementwise, with broadcasting.
Tensor where(const Tensor &cond, const Tensor &a, const Tensor &b,
             Here loc = Here::current());
/// torch.full_like: `value` in x's shape and dtype (with dynamic sizes,
/// x's dims).
Tensor full_like(const Tensor &x, double value, Here loc = Here::current());
Tensor zeros_like(const Tensor &x, Here loc = Here::current());
Tensor ones_like(const Tensor &x, Here loc = Here::current());
Tensor broadcast_to(const Tensor &x, const Shape &shape,
                    Here loc = Here::current());
/// x where mask is false, `value` where it is true (mask broadcasts), as
/// Tensor.masked_fill.
Tensor masked_fill(const Tensor &x, const Tensor &mask, double value,
                   Here loc = Here::current());
/// The upper (lower) triangle of the last two dimensions: elements with
/// column - row >= diagonal (<= diagonal) kept, the rest zero (false), as
/// torch.triu / torch.tril.
Tensor triu(const Tensor &x, int64_t diagonal = 0, Here loc = Here::current());
Tensor tril(const Tensor &x, int64_t diagonal = 0, Here loc = Here::current());

/// torch.matmul: 1-D operands are vectors, batch dimensions broadcast by
/// numpy's rules ([2, 4, 8, 8] x [8, 8], [B, 1, M, K] x [H, K, N]).
Tensor matmul(const Tensor &a, const Tensor &b, Here loc = Here::current());
/// [B, M, K] x [B, K, N], as torch.bmm (no broadcasting).
Tensor bmm(const Tensor &a, const Tensor &b, Here loc = Here::current());
/// x * weight^T + bias; `bias` may be an empty Tensor.
Tensor linear(const Tensor &x, const Tensor &weight, const Tensor &bias = {},
              Here loc = Here::current());
Tensor permute(const Tensor &x, const std::vector<int64_t> &dims,
               Here loc = Here::current());
/// Swaps two dimensions.
Tensor transpose(const Tensor &x, int64_t dim0, int64_t dim1,
                 Here loc = Here::current());
/// One dimension may be -1 and is then inferred, as in PyTorch.
Tensor reshape(const Tensor &x, const Shape &shape, Here loc = Here::current());
Tensor flatten(const Tensor &x, int64_t startDim = 1, int64_t endDim = -1,
               Here loc = Here::current());
Tensor concat(const std::vector<Tensor> &xs, int64_t axis,
              Here loc = Here::current());
/// torch.cat: concat under PyTorch's other name.
Tensor cat(const std::vector<Tensor> &xs, int64_t axis = 0,
           Here loc = Here::current());
/// x[..., start:end:step, ...] along `axis`.
Tensor slice(const Tensor &x, int64_t axis, int64_t start, int64_t end,
             int64_t step = 1, Here loc = Here::current());

/// Removes dimension `axis`, which must have size 1 (torch.squeeze(x, dim)
/// leaves other sizes alone; here that is an Error, which catches shape
/// mistakes).
Tensor squeeze(const Tensor &x, int64_t axis, Here loc = Here::current());
/// Inserts a dimension of size 1 at `axis` (in [-rank-1, rank]).
Tensor unsqueeze(const Tensor &x, int64_t axis, Here loc = Here::current());
/// x broadcast to `shape`, where -1 keeps x's size, as Tensor.expand.
Tensor expand(const Tensor &x, const Shape &shape, Here loc = Here::current());
/// Pieces of `size` along `axis` (the last may be smaller), as torch.split.
std::vector<Tensor> split(const Tensor &x, int64_t size, int64_t axis = 0,
                          Here loc = Here::current());
/// `chunks` pieces of ceil(dim / chunks) along `axis`, as torch.chunk.
std::vector<Tensor> chunk(const Tensor &x, int64_t chunks, int64_t axis = 0,
                          Here loc = Here::current());
/// The slices along `axis`, each without that dimension, as torch.unbind.
std::vector<Tensor> unbind(const Tensor &x, int64_t axis = 0,
                           Here loc = Here::current());
/// Joins tensors of one shape along a new dimension `axis`, as torch.stack.
Tensor stack(const std::vector<Tensor> &xs, int64_t axis = 0,
             Here loc = Here::current());
/// Constant padding, as torch.nn.functional.pad: `pads` holds (before,
/// after) pairs starting from the LAST dimension; entries are >= 0.
Tensor pad(const Tensor &x, const std::vector<int64_t> &pads,
           double value = 0.0, Here loc = Here::current());
/// Rows of `weight` [num_embeddings, dim] picked by i64 or i32 `indices` of any
/// shape: [..., dim], as torch.nn.functional.embedding. An index outside
/// [0, num_embeddings) gives a row of zeros (PyTorch raises; a compiled
/// kernel cannot, and never reads outside the weight).
Tensor embedding(const Tensor &indices, const Tensor &weight,
                 Here loc = Here::current());
/// The slices of x along `axis` picked by a 1-D i64 (or i32) `index`, as
/// torch.index_select (out-of-range indices as in embedding).
Tensor index_select(const Tensor &x, int64_t axis, const Tensor &index,
                    Here loc = Here::current());

Tensor sum(const Tensor &x, const std::vector<int64_t> &axes,
           bool keepdim = false, Here loc = Here::current());
Tensor mean(const Tensor &x, const std::vector<int64_t> &axes,
            bool keepdim = false, Here loc = Here::current());
Tensor max(const Tensor &x, const std::vector<int64_t> &axes,
           bool keepdim = false, Here loc = Here::current());
Tensor min(const Tensor &x, const std::vector<int64_t> &axes,
           bool keepdim = false, Here loc = Here::current());
/// The index (i64) of the first maximum along `axis`, as torch.argmax.
Tensor argmax(const Tensor &x, int64_t axis, bool keepdim = false,
              Here loc = Here::current());
/// The k largest (or, !largest, smallest) values along `axis` and their
/// indices (i64), as torch.topk: sorted, the lower index first among equal
/// values. Recorded as k rounds of a masked maximum (about ten ops a
/// round), so k is at most 64; the gradient flows to the chosen values.
struct TopK {
  Tensor values, indices;
};
TopK topk(const Tensor &x, int64_t k, int64_t axis = -1, bool largest = true,
          Here loc = Here::current());
/// out[i][j][k] = x[i][index[i][j][k]][k] for axis 1 (and so on), as
/// torch.gather: `index` (i64 or i32) has x's rank and is no larger than x
/// in the other dimensions; an index outside [0, x.dim(axis)) gives 0. The
/// gradient flows to x, each element back where it was picked. Recorded
/// as locus.gather_elements (its gradient a scatter-add); with dynamic
/// sizes as a one-hot product, which computes and holds index.numel() *
/// x.dim(axis) values.
Tensor gather(const Tensor &x, int64_t axis, const Tensor &index,
              Here loc = Here::current());
/// Variance over `axes`, divided by n - 1 when `unbiased` (torch.var's
/// default) or by n.
Tensor var(const Tensor &x, const std::vector<int64_t> &axes,
           bool unbiased = true, bool keepdim = false,
           Here loc = Here::current());
/// sqrt(var(x)), as torch.std. With `using namespace locus` write
/// locus::std: an unqualified std is ambiguous with the namespace.
Tensor std(const Tensor &x, const std::vector<int64_t> &axes,
           bool unbiased = true, bool keepdim = false,
           Here loc = Here::current());
/// log(sum(exp(x))) over `axes`, computed stably.
Tensor logsumexp(const Tensor &x, const std::vector<int64_t> &axes,
                 bool keepdim = false, Here loc = Here::current());
Tensor softmax(const Tensor &x, int64_t axis, Here loc = Here::current());
Tensor log_softmax(const Tensor &x, int64_t axis, Here loc = Here::current());

struct Conv2dParams {
  std::vector<int64_t> stride = {1, 1};
  std::vector<int64_t> padding = {0, 0};
  std::vector<int64_t> dilation = {1, 1};
  int64_t groups = 1;
};
/// NCHW convolution; `bias` may be an empty Tensor.
Tensor conv2d(const Tensor &x, const Tensor &weight, const Tensor &bias = {},
              const Conv2dParams &params = {}, Here loc = Here::current());

struct Conv1dParams {
  int64_t stride = 1;
  int64_t padding = 0;
  int64_t dilation = 1;
  int64_t groups = 1;
};
/// x [N, C, L] convolved with weight [out, C / groups, k] (bias [out] or
/// empty), as torch.nn.functional.conv1d: recorded as conv2d over a height
/// of 1, so every device and gradient of conv2d serves it.
Tensor conv1d(const Tensor &x, const Tensor &weight, const Tensor &bias = {},
              const Conv1dParams &params = {}, Here loc = Here::current());

struct ConvTranspose2dParams {
  std::vector<int64_t> stride = {1, 1};
  /// Cropped from each side: {rows, columns}, or ONNX's {top, left,
  /// bottom, right}.
  std::vector<int64_t> padding = {0, 0};
  /// Added after the end (below the stride or the dilation, as PyTorch).
  std::vector<int64_t> outputPadding = {0, 0};
  std::vector<int64_t> dilation = {1, 1};
  int64_t groups = 1;
};
/// x [N, C, H, W] with weight [C, O / groups, KH, KW] (PyTorch's layout)
/// and bias [O] or empty, as torch.nn.functional.conv_transpose2d: the
/// gradient of conv2d with respect to its input (locus.conv2d_input_grad),
/// so each device's backward-data convolution computes it, and its own
/// gradients are a convolution and a weight gradient. Output height
/// (H - 1) stride - top - bottom + dilation (KH - 1) + output_padding + 1.
Tensor conv_transpose2d(const Tensor &x, const Tensor &weight,
                        const Tensor &bias = {},
                        const ConvTranspose2dParams &params = {},
                        Here loc = Here::current());

struct Pool2dParams {
  std::vector<int64_t> kernelSize = {};
  /// Empty: the kernel size, as in PyTorch.
  std::vector<int64_t> stride = {};
  /// {rows, columns} on both sides, or ONNX's {top, left, bottom, right}.
  std::vector<int64_t> padding = {0, 0};
  /// Output sizes rounded up, as PyTorch's ceil_mode=True: a last window
  /// that starts inside the input or its leading padding is kept and may
  /// overhang the end; what it overhangs never counts.
  bool ceilMode = false;
  /// Average pooling: padded zeros count in each window's divisor
  /// (PyTorch's default); false divides by the input elements it covers.
  bool countIncludePad = true;
};
Tensor max_pool2d(const Tensor &x, const Pool2dParams &params,
                  Here loc = Here::current());
Tensor avg_pool2d(const Tensor &x, const Pool2dParams &params,
                  Here loc = Here::current());

/// One-hot rows of i64 `labels` [...]: [..., numClasses], 1 at the label
/// and 0 elsewhere, as torch.nn.functional.one_hot (i64 by default; f32
/// records no cast). A label outside [0, numClasses) stops the run with an
/// error naming this line.
Tensor one_hot(const Tensor &labels, int64_t numClasses,
               DType dtype = DType::i64, Here loc = Here::current());

/// Average pooling to `outputSize` (one entry: square), as
/// torch.nn.functional.adaptive_avg_pool2d: output cell i covers input
/// rows [floor(i * H / out), ceil((i + 1) * H / out)). {1, 1} is global
/// average pooling.
Tensor adaptive_avg_pool2d(const Tensor &x, std::vector<int64_t> outputSize,
                           Here loc = Here::current());

//===----------------------------------------------------------------------===//
// Normalisation and attention (composites of the ops above: their gradients
// come from those ops').
//===----------------------------------------------------------------------===//

/// Normalises over the last dimensions `normalizedShape` (biased variance),
/// then `* weight + bias` when given, as torch.nn.functional.layer_norm.
Tensor layer_norm(const Tensor &x, const Shape &normalizedShape,
                  const Tensor &weight = {}, const Tensor &bias = {},
                  double eps = 1e-5, Here loc = Here::current());
/// x [N, C, ...] normalised over each of `groups` groups of channels, then
/// per-channel weight and bias, as torch.nn.functional.group_norm.
Tensor group_norm(const Tensor &x, int64_t groups, const Tensor &weight = {},
                  const Tensor &bias = {}, double eps = 1e-5,
                  Here loc = Here::current());
/// Batch normalisation of x [N, C, ...] per channel, as
/// torch.nn.functional.batch_norm. In training: batch statistics (biased
/// variance), and each run also updates the running statistics (buffers
/// [C]) to (1 - momentum) * running + momentum * batch (the unbiased
/// variance for running_var), through assign(): so a graph updates them
/// once. Otherwise the running statistics normalise. `weight`/`bias` may be
/// empty.
Tensor batch_norm(const Tensor &x, const Tensor &runningMean,
                  const Tensor &runningVar, const Tensor &weight,
                  const Tensor &bias, bool training, double momentum = 0.1,
                  double eps = 1e-5, Here loc = Here::current());

struct AttentionOptions {
  /// A boolean mask (true: may attend, as in PyTorch 2's
  /// scaled_dot_product_attention) or an f32 mask added to the scores;
  /// broadcasts to [..., L, S]. May be empty.
  Tensor attnMask = {};
  /// Query i attends to keys 0..i only.
  bool isCausal = false;
  /// The scores' scale; 1 / sqrt(E) when unset.
  std::optional<double> scale = std::nullopt;
};
/// softmax(q k^T * scale + mask) v for q [..., L, E], k [..., S, E],
/// v [..., S, Ev], as torch.nn.functional.scaled_dot_product_attention.
Tensor scaled_dot_product_attention(const Tensor &q, const Tensor &k,
                                    const Tensor &v,
                                    const AttentionOptions &options = {},
                                    Here loc = Here::current());

enum class Reduction { mean, sum };
Tensor mse_loss(const Tensor &input, const Tensor &target,
                Reduction reduction = Reduction::mean,
                Here loc = Here::current());
/// `labels` are i64 class indices.
Tensor cross_entropy(const Tensor &logits, const Tensor &labels,
                     Reduction reduction = Reduction::mean,
                     Here loc = Here::current());
/// -input[n, target[n]], reduced, for log-probabilities `input` [N, C] or
/// [N, C, d...] and i64 `target` [N] or [N, d...], as
/// torch.nn.functional.nll_loss. A target outside [0, C) stops the run with
/// an error naming this line (PyTorch's ignore_index is not offered).
Tensor nll_loss(const Tensor &input, const Tensor &target,
                Reduction reduction = Reduction::mean,
                Here loc = Here::current());
/// |input - target|, reduced, as torch.nn.functional.l1_loss.
Tensor l1_loss(const Tensor &input, const Tensor &target,
               Reduction reduction = Reduction::mean,
               Here loc = Here::current());
/// Huber-like: 0.5 d^2 / beta where d = |input - target| < beta, else
/// d - 0.5 beta (beta 0: l1), as torch.nn.functional.smooth_l1_loss.
Tensor smooth_l1_loss(const Tensor &input, const Tensor &target,
                      Reduction reduction = Reduction::mean, double beta = 1.0,
                      Here loc = Here::current());
/// -(t log(p) + (1 - t) log(1 - p)) for probabilities `input`, each log
/// clamped at -100 as PyTorch's, as torch.nn.functional.binary_cross_entropy.
Tensor binary_cross_entropy(const Tensor &input, const Tensor &target,
                            Reduction reduction = Reduction::mean,
                            Here loc = Here::current());
/// binary_cross_entropy of sigmoid(input), computed stably from the
/// logits: max(x, 0) - x t + log(1 + exp(-|x|)), as
/// torch.nn.functional.binary_cross_entropy_with_logits.
Tensor binary_cross_entropy_with_logits(const Tensor &input,
                                        const Tensor &target,
                                        Reduction reduction = Reduction::mean,
                                        Here loc = Here::current());

//===----------------------------------------------------------------------===//
// Random numbers (locus.random: Philox4x32-10, counter-based).
//
// Deterministic: a value depends on the graph's seed (Graph::manual_seed),
// the order of the random calls in the graph (call N draws with the key
// seedFor("rng<N>"), so two dropouts in one step differ) and the run: the
// first random call adds the buffer kRunCounterName, 0-d f32 starting at 0,
// and an assign that writes step + 1 at the end of every run, so every run
// draws a new mask; setState(kRunCounterName, ...) replays a run. The bits
// are the same on cpu, sim and cuda (uniform exactly; normal up to the
// devices' log and cos). The f32 counter is exact for 2^24 runs
// (16,777,216); after that it wraps to 0 and the masks repeat.
//===----------------------------------------------------------------------===//

/// The buffer counting runs for the random ops.
inline constexpr char kRunCounterName[] = "rng.step";

/// U[0, 1) (float32: multiples of 2^-24), as torch.rand.
Tensor rand(Graph &graph, const Shape &shape, Here loc = Here::current());
/// Made on `device` (a pin), as torch.rand(..., device=).
Tensor rand(Graph &graph, const Shape &shape, const Device &device,
            Here loc = Here::current());
/// N(0, 1) by Box-Muller, as torch.randn.
Tensor randn(Graph &graph, const Shape &shape, Here loc = Here::current());
Tensor randn(Graph &graph, const Shape &shape, const Device &device,
             Here loc = Here::current());
/// 1.0 with probability p, else 0.0, elementwise (p in [0, 1], not
/// checked at run time), as torch.bernoulli. Drawn where `p` is made.
Tensor bernoulli(const Tensor &p, Here loc = Here::current());
/// torch.nn.functional.dropout: in training, each element is kept with
/// probability 1 - p and scaled by 1 / (1 - p), else zeroed (x * 0 for
/// p = 1); with p = 0 or !training, x itself and nothing is recorded. A p
/// outside [0, 1] is an Error. The mask is drawn where `x` is made.
Tensor dropout(const Tensor &x, double p = 0.5, bool training = true,
               Here loc = Here::current());

//===----------------------------------------------------------------------===//
// The names before PyTorch's became the primary ones, kept for existing
// code: each calls the new name and warns where it is used.
//===----------------------------------------------------------------------===//

[[deprecated("PyTorch's name is primary: locus::is_grad_enabled")]] inline bool
isGradEnabled() {
  return is_grad_enabled();
}
[[deprecated("PyTorch's name is primary: locus::leaky_relu")]] inline Tensor
leakyRelu(const Tensor &x, double negativeSlope = 0.01,
          Here loc = Here::current()) {
  return leaky_relu(x, negativeSlope, loc);
}
[[deprecated("PyTorch's name is primary: locus::full_like")]] inline Tensor
fullLike(const Tensor &x, double value, Here loc = Here::current()) {
  return full_like(x, value, loc);
}
[[deprecated("PyTorch's name is primary: locus::zeros_like")]] inline Tensor
zerosLike(const Tensor &x, Here loc = Here::current()) {
  return zeros_like(x, loc);
}
[[deprecated("PyTorch's name is primary: locus::ones_like")]] inline Tensor
onesLike(const Tensor &x, Here loc = Here::current()) {
  return ones_like(x, loc);
}
[[deprecated("PyTorch's name is primary: locus::broadcast_to")]] inline Tensor
broadcastTo(const Tensor &x, const Shape &shape, Here loc = Here::current()) {
  return broadcast_to(x, shape, loc);
}
[[deprecated("PyTorch's name is primary: locus::masked_fill")]] inline Tensor
maskedFill(const Tensor &x, const Tensor &mask, double value,
           Here loc = Here::current()) {
  return masked_fill(x, mask, value, loc);
}
[[deprecated("PyTorch's name is primary: locus::index_select")]] inline Tensor
indexSelect(const Tensor &x, int64_t axis, const Tensor &index,
            Here loc = Here::current()) {
  return index_select(x, axis, index, loc);
}
[[deprecated("PyTorch's name is primary: locus::log_softmax")]] inline Tensor
logSoftmax(const Tensor &x, int64_t axis, Here loc = Here::current()) {
  return log_softmax(x, axis, loc);
}
[[deprecated("PyTorch's name is primary: locus::max_pool2d")]] inline Tensor
maxPool2d(const Tensor &x, const Pool2dParams &params,
          Here loc = Here::current()) {
  return max_pool2d(x, params, loc);
}
[[deprecated("PyTorch's name is primary: locus::avg_pool2d")]] inline Tensor
avgPool2d(const Tensor &x, const Pool2dParams &params,
          Here loc = Here::current()) {
  return avg_pool2d(x, params, loc);
}
[[deprecated(
    "PyTorch's name is primary: locus::adaptive_avg_pool2d")]] inline Tensor
adaptiveAvgPool2d(const Tensor &x, std::vector<int64_t> outputSize,
                  Here loc = Here::current()) {
  return adaptive_avg_pool2d(x, std::move(outputSize), loc);
}
[[deprecated("PyTorch's name is primary: locus::layer_norm")]] inline Tensor
layerNorm(const Tensor &x, const Shape &normalizedShape,
          const Tensor &weight = {}, const Tensor &bias = {}, double eps = 1e-5,
          Here loc = Here::current()) {
  return layer_norm(x, normalizedShape, weight, bias, eps, loc);
}
[[deprecated("PyTorch's name is primary: locus::group_norm")]] inline Tensor
groupNorm(const Tensor &x, int64_t groups, const Tensor &weight = {},
          const Tensor &bias = {}, double eps = 1e-5,
          Here loc = Here::current()) {
  return group_norm(x, groups, weight, bias, eps, loc);
}
[[deprecated("PyTorch's name is primary: locus::batch_norm")]] inline Tensor
batchNorm(const Tensor &x, const Tensor &runningMean, const Tensor &runningVar,
          const Tensor &weight, const Tensor &bias, bool training,
          double momentum = 0.1, double eps = 1e-5,
          Here loc = Here::current()) {
  return batch_norm(x, runningMean, runningVar, weight, bias, training,
                    momentum, eps, loc);
}
[[deprecated("PyTorch's name is primary: "
             "locus::scaled_dot_product_attention")]] inline Tensor
scaledDotProductAttention(const Tensor &q, const Tensor &k, const Tensor &v,
                          const AttentionOptions &options = {},
                          Here loc = Here::current()) {
  return scaled_dot_product_attention(q, k, v, options, loc);
}
[[deprecated("PyTorch's name is primary: locus::mse_loss")]] inline Tensor
mseLoss(const Tensor &input, const Tensor &target,
        Reduction reduction = Reduction::mean, Here loc = Here::current()) {
  return mse_loss(input, target, reduction, loc);
}
[[deprecated("PyTorch's name is primary: locus::cross_entropy")]] inline Tensor
crossEntropy(const Tensor &logits, const Tensor &labels,
             Reduction reduction = Reduction::mean,
             Here loc = Here::current()) {
  return cross_entropy(logits, labels, reduction, loc);
}
[[deprecated("PyTorch's name is primary: locus::l1_loss")]] inline Tensor
l1Loss(const Tensor &input, const Tensor &target,
       Reduction reduction = Reduction::mean, Here loc = Here::current()) {
  return l1_loss(input, target, reduction, loc);
}
[[deprecated("PyTorch's name is primary: locus::smooth_l1_loss")]] inline Tensor
smoothL1Loss(const Tensor &input, const Tensor &target,
             Reduction reduction = Reduction::mean, double beta = 1.0,
             Here loc = Here::current()) {
  return smooth_l1_loss(input, target, reduction, beta, loc);
}
[[deprecated(
    "PyTorch's name is primary: locus::binary_cross_entropy")]] inline Tensor
binaryCrossEntropy(const Tensor &input, const Tensor &target,
                   Reduction reduction = Reduction::mean,
                   Here loc = Here::current()) {
  return binary_cross_entropy(input, target, reduction, loc);
}
[[deprecated("PyTorch's name is primary: "
             "locus::binary_cross_entropy_with_logits")]] inline Tensor
binaryCrossEntropyWithLogits(const Tensor &input, const Tensor &target,
                             Reduction reduction = Reduction::mean,
                             Here loc = Here::current()) {
  return binary_cross_entropy_with_logits(input, target, reduction, loc);
}

} // namespace locus

#endif // LOCUS_FRONTEND_GRAPH_H
