//===- Importer.h - the ONNX importer (private) -----------------*- C++ -*-===//
//
// What the importer's files share: the importer's state (the model, the
// values of the ONNX graph by name, the graph being recorded), its
// accessors for node inputs, outputs and attributes, the host constants
// (Const) that shape computations fold on, and the table of op handlers.
//
//   Onnx.cpp            the entry points; loading and checking the model,
//                       its inputs, outputs and initializers, the dispatch
//                       over nodes and the handler table
//   Tensors.cpp         TensorProto data (inline or external) as Consts
//   Values.cpp          node inputs and outputs as values; attributes
//   OpsElementwise.cpp  unary, binary and comparison ops, activations,
//                       Clip, Pow, Not, Min/Max/Sum/Mean, Where, Cast,
//                       Floor/Ceil/Round/Sign, Mod, IsNaN, IsInf
//   OpsNn.cpp           Conv, Gemm, MatMul, pooling, normalizations,
//                       Dropout, Identity, reductions, Softmax, ArgMax
//   OpsShape.cpp        Reshape, Flatten, Transpose, Concat, Split, Slice,
//                       Gather, GatherND, ScatterND, Squeeze, Unsqueeze,
//                       Expand, Tile, Pad, Trilu, DepthToSpace,
//                       SpaceToDepth, OneHot, and what makes constants
//                       (Shape, Constant, ...)
//
//===----------------------------------------------------------------------===//

#ifndef LOCUS_IMPORT_IMPORTER_H
#define LOCUS_IMPORT_IMPORTER_H

#include "locus/Import/Onnx.h"

#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace locus::onnx_import {

using onnx::NodeProto;
using onnx::TensorProto;

/// A fault of the model, in the importer's words; becomes a locus::Error
/// naming the file (and the node).
struct ImportError {
  std::string message;
};

[[noreturn]] inline void fail(const std::string &message) {
  throw ImportError{message};
}

/// The product of dimensions [from, to) of `shape`.
inline int64_t product(const Shape &shape, size_t from = 0,
                       size_t to = std::string::npos) {
  int64_t n = 1;
  for (size_t i = from; i < std::min(to, shape.size()); ++i)
    n *= shape[i];
  return n;
}

/// `shape` as text: "[2, 3]".
inline std::string shapeText(const Shape &shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

/// A value known while importing: f32 values in `f`, integers (i64, i32,
/// i1) in `i`.
///
/// With dynamic sizes (--dynamic), shape computations are folded at the
/// bounds, and three facts say what that means for a run:
///   - `syms[k]` names the dynamic size that element k of a shape value is
///     ("" for a number): Shape of a [batch, seq] input is {batch, seq};
///   - `window[d]` names the dynamic size whose leading window of
///     dimension d a run takes ("" when static): Range(0, seq, 1) is
///     0..bound-1 with window {seq}, and a run sees its first seq values;
///   - `atBounds`: computed from dynamic sizes other than as those track
///     (seq - 1, seq * 2): right at the bounds only, so it may shape a
///     Reshape (which places the sizes by the bounds) but is never a value.
struct Const {
  DType dtype = DType::f32;
  Shape shape;
  std::vector<double> f;
  std::vector<int64_t> i;
  std::vector<std::string> syms;
  std::vector<std::string> window;
  bool atBounds = false;

  bool dynamic() const {
    return atBounds ||
           std::any_of(syms.begin(), syms.end(),
                       [](const std::string &s) { return !s.empty(); }) ||
           std::any_of(window.begin(), window.end(),
                       [](const std::string &s) { return !s.empty(); });
  }
  /// The size element k is, or "".
  std::string symAt(size_t k) const { return k < syms.size() ? syms[k] : ""; }
  /// The window of dimension d, or "".
  std::string windowAt(size_t d) const {
    return d < window.size() ? window[d] : "";
  }
  /// Marks element `k` (just appended) as size `sym`.
  void setSym(size_t k, const std::string &sym) {
    if (sym.empty() && syms.empty())
      return;
    syms.resize(std::max(syms.size(), k + 1));
    syms[k] = sym;
  }

  int64_t numel() const { return product(shape); }
  bool isFloat() const {
    return dtype == DType::f32 || dtype == DType::bf16 || dtype == DType::f16;
  }
  double at(size_t k) const {
    return isFloat() ? f[k] : static_cast<double>(i[k]);
  }
  /// The values as integers (an f32 constant's truncated).
  std::vector<int64_t> ints() const {
    if (!isFloat())
      return i;
    std::vector<int64_t> out(f.size());
    std::transform(f.begin(), f.end(), out.begin(),
                   [](double v) { return static_cast<int64_t>(v); });
    return out;
  }
  static Const ofInts(DType dtype, Shape shape, std::vector<int64_t> values) {
    Const c;
    c.dtype = dtype;
    c.shape = std::move(shape);
    c.i = std::move(values);
    return c;
  }
  static Const ofFloats(Shape shape, std::vector<double> values) {
    Const c;
    c.shape = std::move(shape);
    c.f = std::move(values);
    return c;
  }
  /// Appends element `at` of `src` (of this one's dtype), and what it is.
  void append(const Const &src, size_t at) {
    if (src.isFloat())
      f.push_back(src.f[at]);
    else
      i.push_back(src.i[at]);
    setSym((isFloat() ? f.size() : i.size()) - 1, src.symAt(at));
    atBounds |= src.atBounds;
  }
  /// Element k of a tensor of `shape`, broadcast from this one.
  size_t broadcastIndex(const Shape &to, size_t k) const {
    size_t index = 0, stride = 1;
    for (size_t d = 0; d < shape.size(); ++d) {
      size_t axis = shape.size() - 1 - d;
      size_t toAxis = to.size() - 1 - d;
      size_t toStride = static_cast<size_t>(product(to, toAxis + 1));
      size_t coord = (k / toStride) % static_cast<size_t>(to[toAxis]);
      if (shape[axis] != 1)
        index += coord * stride;
      stride *= static_cast<size_t>(shape[axis]);
    }
    return index;
  }
};

/// The shape `a` and `b` broadcast to, or a failure naming both.
inline Shape broadcastShapes(const Shape &a, const Shape &b) {
  Shape out(std::max(a.size(), b.size()));
  for (size_t d = 0; d < out.size(); ++d) {
    int64_t x = d < a.size() ? a[a.size() - 1 - d] : 1;
    int64_t y = d < b.size() ? b[b.size() - 1 - d] : 1;
    if (x != y && x != 1 && y != 1)
      fail("shapes " + shapeText(a) + " and " + shapeText(b) +
           " do not broadcast");
    out[out.size() - 1 - d] = x == 1 ? y : x;
  }
  return out;
}

/// The windows of a value of shape `out` broadcast from `inputs` (ONNX's
/// numpy rules): each dimension takes the window of the inputs that are not
/// broadcast there; two different windows make the result atBounds.
inline void broadcastWindows(Const &out,
                             const std::vector<const Const *> &inputs) {
  std::vector<std::string> window(out.shape.size());
  for (const Const *c : inputs) {
    out.atBounds |= c->atBounds;
    for (size_t k = 0; k < c->shape.size(); ++k) {
      std::string w = c->windowAt(c->shape.size() - 1 - k);
      std::string &to = window[window.size() - 1 - k];
      if (w.empty())
        continue;
      if (!to.empty() && to != w)
        out.atBounds = true;
      to = w;
    }
  }
  if (std::any_of(window.begin(), window.end(),
                  [](const std::string &w) { return !w.empty(); }))
    out.window = std::move(window);
}

/// A named value of the ONNX graph.
struct Value {
  Tensor tensor;
  std::optional<Const> constant;
  bool initializer = false; // an f32 initializer becomes state
};

/// `axis` (negative: from the end) as an index below `rank`, or a failure.
inline int64_t normalizeAxis(int64_t axis, int64_t rank) {
  // A scalar has no axis: callers index the shape with the result.
  if (axis < -rank || axis >= rank)
    fail("axis " + std::to_string(axis) + " is out of range for rank " +
         std::to_string(rank));
  return axis < 0 ? axis + rank : axis;
}

/// Reads an ONNX model and records it into a Graph. The handlers of op
/// families are defined in the Ops*.cpp files and registered into one table
/// by handlers().
class Importer {
public:
  Importer(std::string path, const OnnxImportOptions &options)
      : path_(std::move(path)), options_(options) {}

  Graph run();
  /// The op_types the importer reads, sorted.
  static std::vector<std::string> supported() {
    std::vector<std::string> ops;
    for (const auto &entry : handlers())
      ops.push_back(entry.first);
    return ops;
  }

private:
  // ---- reading the model (Onnx.cpp; TensorProto data: Tensors.cpp) --------
  void load();
  Const tensorConst(const TensorProto &t) const;
  /// The raw bytes of an initializer whose data lies in a file beside the
  /// model: `want` bytes, read from a regular file that resolves (symbolic
  /// links followed) inside the model's folder; everything else fails with
  /// the initializer's and the file's names.
  std::string externalBytes(const TensorProto &t, size_t want) const;
  /// An external_data offset or length: a decimal byte count, or a failure.
  int64_t byteCount(const TensorProto &t, const std::string &key,
                    const std::string &value) const;
  void checkSupported() const;
  void addInputs(Graph &g);
  void importNode(Graph &g, const NodeProto &node, size_t index);

  // ---- values (Values.cpp) ------------------------------------------------
  Value &value(const std::string &name);
  bool has(const NodeProto &n, int k) const {
    return k < n.input_size() && !n.input(k).empty();
  }
  const Const *constOf(const NodeProto &n, int k) {
    if (!has(n, k))
      return nullptr;
    std::optional<Const> &c = value(n.input(k)).constant;
    return c.has_value() ? &c.value() : nullptr;
  }
  const Const &needConst(const NodeProto &n, int k, const char *what);
  /// Input k as a graph value; `buffer`: an f32 initializer becomes a
  /// buffer rather than a parameter.
  Tensor in(const NodeProto &n, int k, bool buffer = false);
  Shape shapeOf(const NodeProto &n, int k);
  void out(const NodeProto &n, int k, Tensor t);
  void outConst(const NodeProto &n, int k, Const c);
  Tensor materialize(const std::string &name, Value &v, bool buffer);
  /// x narrowed to the dynamic sizes `window` names, by dimension ("" keeps
  /// one): narrow_to with the sizes' bounds.
  Tensor windowTo(const Tensor &x, const std::vector<std::string> &window);
  /// The dynamic size each dimension of input k is ("" for a static one,
  /// a product such as "batch*seq" as it is).
  std::vector<std::string> dimNames(const NodeProto &n, int k);

  // ---- attributes (Values.cpp) --------------------------------------------
  static const onnx::AttributeProto *attr(const NodeProto &n, const char *name);
  static int64_t attrInt(const NodeProto &n, const char *name, int64_t def);
  static double attrFloat(const NodeProto &n, const char *name, double def);
  static std::string attrString(const NodeProto &n, const char *name,
                                const std::string &def);
  static std::optional<std::vector<int64_t>> attrInts(const NodeProto &n,
                                                      const char *name);
  /// Integers from input k (when given) or else attribute `name`.
  std::optional<std::vector<int64_t>>
  intsFromInputOrAttr(const NodeProto &n, int k, const char *name);

  // ---- ops ----------------------------------------------------------------
  using Handler = std::function<void(Importer &, Graph &, const NodeProto &)>;
  using Handlers = std::map<std::string, Handler>;
  /// Every op_type the importer reads, with its handler (Onnx.cpp).
  static const Handlers &handlers();
  /// Unary math, Add/Sub/Mul/Div, comparisons, Not, Pow, the variadic
  /// Min/Max/Sum/Mean, Where and Cast (OpsElementwise.cpp).
  static void addElementwiseHandlers(Handlers &t);
  /// The activations beyond the unary ops, and Clip (OpsElementwise.cpp).
  static void addActivations(Handlers &t);
  /// MatMul, Gemm, Conv, pooling, BatchNormalization, LayerNormalization,
  /// Identity and Dropout (OpsNn.cpp).
  static void addNnHandlers(Handlers &t);
  /// ReduceSum/Mean/Max/Min, Softmax, LogSoftmax and ArgMax (OpsNn.cpp).
  static void addReductionHandlers(Handlers &t);
  /// Flatten, Reshape, Transpose, Concat, Split, Slice, Gather, Squeeze,
  /// Unsqueeze, Expand, Trilu and Pad (OpsShape.cpp); Resize, Upsample and
  /// CumSum (OpsResize.cpp).
  static void addShapeHandlers(Handlers &t);
  /// Shape, Constant, ConstantOfShape and Range: values known while
  /// importing (OpsShape.cpp).
  static void addConstantHandlers(Handlers &t);

  // OpsElementwise.cpp
  void binary(const NodeProto &n, const std::string &op);
  void compare(const NodeProto &n, const std::string &op);
  void mod(const NodeProto &n);
  // OpsNn.cpp
  void conv(const NodeProto &n);
  void convTranspose(const NodeProto &n);
  void pool(const NodeProto &n, bool max);
  void reduce(const NodeProto &n, const std::string &op);
  void softmax(const NodeProto &n, bool log);
  void gemm(const NodeProto &n);
  void batchNorm(const NodeProto &n);
  // OpsShape.cpp
  void reshape(const NodeProto &n);
  void slice(const NodeProto &n);
  void gather(Graph &g, const NodeProto &n);
  void scatterNd(Graph &g, const NodeProto &n);
  void gatherNd(Graph &g, const NodeProto &n);
  void depthToSpace(const NodeProto &n, bool toSpace);
  void tile(const NodeProto &n);
  void oneHot(Graph &g, const NodeProto &n);
  void split(const NodeProto &n);
  void squeezeOrUnsqueeze(const NodeProto &n, bool squeeze);
  void pad(const NodeProto &n);
  void concat(const NodeProto &n);
  void constantNode(const NodeProto &n);
  // OpsResize.cpp: Resize (opsets 10-17) or Upsample (7-9); CumSum.
  void resize(Graph &g, const NodeProto &n, bool upsample);
  void cumsum(Graph &g, const NodeProto &n);

  std::string path_;
  OnnxImportOptions options_;
  onnx::ModelProto model_;
  int opset_ = 0;
  std::map<std::string, Value> values_;
  Graph *graph_ = nullptr; // the graph run() records into
};

} // namespace locus::onnx_import

#endif // LOCUS_IMPORT_IMPORTER_H
