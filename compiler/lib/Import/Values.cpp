//===- Values.cpp - ONNX node inputs, outputs and attributes --------------===//
//
// The importer's view of a node: its inputs as known constants or graph
// values (constants become graph values only where an op needs them), its
// outputs, and its attributes.
//
//===----------------------------------------------------------------------===//

#include "Importer.h"

namespace locus::onnx_import {

//===----------------------------------------------------------------------===//
// Values
//===----------------------------------------------------------------------===//

Value &Importer::value(const std::string &name) {
  auto it = values_.find(name);
  if (it == values_.end())
    fail("uses '" + name +
         "', which no input, initializer or earlier node "
         "makes");
  return it->second;
}

const Const &Importer::needConst(const NodeProto &n, int k, const char *what) {
  const Const *c = constOf(n, k);
  if (!c)
    fail(std::string(what) + " (input " + std::to_string(k) +
         ") must be known while importing (a constant, an initializer or "
         "computed from shapes); it is computed at run time here");
  return *c;
}

Tensor Importer::windowTo(const Tensor &x,
                          const std::vector<std::string> &window) {
  std::vector<InputDim> dims;
  Shape shape = x.shape();
  for (size_t d = 0; d < shape.size(); ++d) {
    std::string name = d < window.size() ? window[d] : "";
    if (name.empty()) {
      dims.emplace_back(shape[d]);
      continue;
    }
    auto bound = options_.dynamicSizes.find(name);
    if (bound == options_.dynamicSizes.end())
      fail("'" + name + "' is not a dynamic size (--dynamic)");
    dims.push_back(dyn(name, bound->second));
  }
  return narrow_to(x, dims);
}

std::vector<std::string> Importer::dimNames(const NodeProto &n, int k) {
  if (!has(n, k))
    fail("input " + std::to_string(k) + " is missing");
  Value &v = value(n.input(k));
  if (v.constant) {
    std::vector<std::string> names(v.constant->shape.size());
    for (size_t d = 0; d < names.size(); ++d)
      names[d] = v.constant->windowAt(d);
    return names;
  }
  std::vector<std::string> names;
  for (const InputDim &dim : dynamic_shape(v.tensor))
    names.push_back(dim.dynamic ? dim.symbol : "");
  return names;
}

Tensor Importer::materialize(const std::string &name, Value &v, bool buffer) {
  if (!v.constant || !graph_)
    fail("'" + name + "' has no value"); // not reached: callers check
  const Const &c = *v.constant;
  if (c.atBounds ||
      std::any_of(c.syms.begin(), c.syms.end(),
                  [](const std::string &s) { return !s.empty(); }))
    fail("'" + name +
         "' is computed from a dynamic size and used as a value; only "
         "shapes, windows (Range(0, size), ConstantOfShape, masks built "
         "from them) and slices to a size are kept dynamic");
  if (!c.window.empty()) {
    Const whole = c;
    whole.window.clear();
    Value plain{Tensor(), std::move(whole), v.initializer};
    return windowTo(materialize(name, plain, buffer), c.window);
  }
  Graph &g = *graph_;
  if (c.isFloat()) {
    // bf16 and f16 values are f32 state or constants cast to their type
    // (exact): an f16 model keeps f32 master weights.
    auto typed = [&](const Tensor &t) {
      return c.dtype == DType::f32 ? t : cast(t, c.dtype);
    };
    std::vector<float> values(c.f.begin(), c.f.end());
    if (v.initializer)
      return typed(buffer ? g.buffer(name, c.shape, std::move(values))
                          : g.parameter(name, c.shape, std::move(values)));
    bool uniform = std::all_of(values.begin(), values.end(),
                               [&](float x) { return x == values.front(); });
    if (uniform && !values.empty())
      return g.full(c.shape, values.front(), c.dtype);
    return typed(g.constant(c.shape, values));
  }
  bool uniform =
      !c.i.empty() && std::all_of(c.i.begin(), c.i.end(),
                                  [&](int64_t x) { return x == c.i.front(); });
  if (uniform)
    return g.full(c.shape, static_cast<double>(c.i.front()), c.dtype);
  Tensor t = g.constantI64(c.shape, c.i);
  return c.dtype == DType::i64 ? t : cast(t, c.dtype);
}

Tensor Importer::in(const NodeProto &n, int k, bool buffer) {
  if (!has(n, k))
    fail("input " + std::to_string(k) + " is missing");
  const std::string &name = n.input(k);
  Value &v = value(name);
  if (!v.tensor)
    v.tensor = materialize(name, v, buffer);
  return v.tensor;
}

Shape Importer::shapeOf(const NodeProto &n, int k) {
  if (!has(n, k))
    fail("input " + std::to_string(k) + " is missing");
  Value &v = value(n.input(k));
  return v.constant ? v.constant->shape : v.tensor.shape();
}

void Importer::out(const NodeProto &n, int k, Tensor t) {
  if (k >= n.output_size() || n.output(k).empty())
    return;
  Value v;
  v.tensor = std::move(t);
  values_[n.output(k)] = std::move(v);
}

void Importer::outConst(const NodeProto &n, int k, Const c) {
  if (k >= n.output_size() || n.output(k).empty())
    return;
  Value v;
  v.constant = std::move(c);
  values_[n.output(k)] = std::move(v);
}

//===----------------------------------------------------------------------===//
// Attributes
//===----------------------------------------------------------------------===//

const onnx::AttributeProto *Importer::attr(const NodeProto &n,
                                           const char *name) {
  for (const auto &a : n.attribute())
    if (a.name() == name)
      return &a;
  return nullptr;
}

int64_t Importer::attrInt(const NodeProto &n, const char *name, int64_t def) {
  const auto *a = attr(n, name);
  return a ? a->i() : def;
}

double Importer::attrFloat(const NodeProto &n, const char *name, double def) {
  const auto *a = attr(n, name);
  return a ? a->f() : def;
}

std::string Importer::attrString(const NodeProto &n, const char *name,
                                 const std::string &def) {
  const auto *a = attr(n, name);
  return a ? a->s() : def;
}

std::optional<std::vector<int64_t>> Importer::attrInts(const NodeProto &n,
                                                       const char *name) {
  const auto *a = attr(n, name);
  if (!a)
    return std::nullopt;
  return std::vector<int64_t>(a->ints().begin(), a->ints().end());
}

std::optional<std::vector<int64_t>>
Importer::intsFromInputOrAttr(const NodeProto &n, int k, const char *name) {
  if (has(n, k))
    return needConst(n, k, name).ints();
  return attrInts(n, name);
}

} // namespace locus::onnx_import
