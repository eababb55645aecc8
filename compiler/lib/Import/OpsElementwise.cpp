//===- OpsElementwise.cpp - ONNX elementwise ops --------------------------===//
//
// Unary math, arithmetic, Mod and comparisons (folded when the operands
// are known), Floor, Ceil, Round and Sign, activations (PRelu,
// ThresholdedRelu, Celu, Shrink) and Clip, Not, And, Or, Xor, Pow, the
// variadic Min/Max/Sum/Mean, Where, Cast and CastLike.
//
//===----------------------------------------------------------------------===//

#include "Importer.h"
#include "locus/half.hpp"

#include <cmath>
#include <limits>

namespace locus::onnx_import {

namespace {

/// ONNX's TensorProto data type as a Locus dtype.
DType dtypeOfOnnx(int64_t type) {
  switch (type) {
  case TensorProto::FLOAT:
  case TensorProto::DOUBLE:
    return DType::f32;
  case TensorProto::FLOAT16:
    return DType::f16;
  case TensorProto::BFLOAT16:
    return DType::bf16;
  case TensorProto::INT64:
    return DType::i64;
  case TensorProto::INT32:
    return DType::i32;
  case TensorProto::BOOL:
    return DType::i1;
  default:
    fail("casts to ONNX data type " + std::to_string(type) +
         ", which Locus does not have (float, double as float, float16, "
         "bfloat16, int64, int32, bool)");
  }
}

Const castConst(const Const &c, DType to) {
  Const r;
  r.dtype = to;
  r.shape = c.shape;
  for (size_t k = 0; k < static_cast<size_t>(c.numel()); ++k) {
    double v = c.at(k);
    if (to == DType::f32)
      r.f.push_back(static_cast<float>(v));
    else if (to == DType::bf16)
      r.f.push_back(half::fromBf16Bits(half::bf16Bits(static_cast<float>(v))));
    else if (to == DType::f16)
      r.f.push_back(half::fromF16Bits(half::f16Bits(static_cast<float>(v))));
    else if (to == DType::i1)
      r.i.push_back(v != 0);
    else
      r.i.push_back(static_cast<int64_t>(v));
  }
  r.syms = c.syms;
  r.window = c.window;
  r.atBounds = c.atBounds;
  return r;
}

/// What element k of `op`(a, b) is, when either is a dynamic size: the size
/// again for size - size's partner 0, size + 0, size * 1 and size / 1 (0
/// for size - size); atBounds otherwise.
void symbolicElement(Const &c, size_t k, const std::string &op,
                     const std::string &sa, const std::string &sb, int64_t x,
                     int64_t y) {
  if (sa.empty() && sb.empty())
    return;
  if (op == "Sub" && sa == sb)
    return; // 0 for every size
  bool identityB = (op == "Add" || op == "Sub") ? y == 0 : y == 1;
  bool identityA = op == "Add" ? x == 0 : op == "Mul" && x == 1;
  if (!sa.empty() && sb.empty() && identityB)
    c.setSym(k, sa);
  else if (sa.empty() && !sb.empty() && identityA)
    c.setSym(k, sb);
  else
    c.atBounds = true;
}

using UnaryFn = Tensor (*)(const Tensor &, Here);

/// `fold` of every value of `c`. A size stays itself under a step that
/// keeps integers (floor, ceil, round), not under `sign`.
Const stepConst(const Const &c, double (*fold)(double), bool sign) {
  Const r = c;
  if (r.isFloat())
    for (double &v : r.f)
      v = fold(v);
  else
    for (int64_t &v : r.i)
      v = static_cast<int64_t>(fold(static_cast<double>(v)));
  if (sign && !r.syms.empty()) {
    r.syms.clear();
    r.atBounds = true;
  }
  return r;
}

/// ONNX's Mod of two numbers: C's fmod (`cStyle`), or Python's %, whose
/// result takes the divisor's sign.
double modOf(double x, double y, bool cStyle) {
  double r = std::fmod(x, y);
  return !cStyle && r != 0 && (r < 0) != (y < 0) ? r + y : r;
}
int64_t modOf(int64_t x, int64_t y, bool cStyle) {
  if (y == 0)
    fail("divides by zero");
  if (y == -1) // x % -1 is 0, and INT64_MIN % -1 would trap
    return 0;
  int64_t r = x % y;
  return !cStyle && r != 0 && (r < 0) != (y < 0) ? r + y : r;
}

} // namespace

void Importer::binary(const NodeProto &n, const std::string &op) {
  const Const *a = constOf(n, 0), *b = constOf(n, 1);
  if (a && b && a->dtype == b->dtype) {
    Shape shape = broadcastShapes(a->shape, b->shape);
    Const c;
    c.dtype = a->dtype;
    c.shape = shape;
    for (size_t k = 0; k < static_cast<size_t>(product(shape)); ++k) {
      size_t ia = a->broadcastIndex(shape, k), ib = b->broadcastIndex(shape, k);
      if (a->isFloat()) {
        double x = a->f[ia], y = b->f[ib];
        c.f.push_back(static_cast<float>(op == "Add"   ? x + y
                                         : op == "Sub" ? x - y
                                         : op == "Mul" ? x * y
                                                       : x / y));
      } else {
        int64_t x = a->i[ia], y = b->i[ib];
        if (op == "Div" && y == 0)
          fail("divides by zero");
        c.i.push_back(op == "Add"   ? x + y
                      : op == "Sub" ? x - y
                      : op == "Mul" ? x * y
                                    : x / y);
        symbolicElement(c, k, op, a->symAt(ia), b->symAt(ib), x, y);
      }
      if (a->isFloat() && (!a->symAt(ia).empty() || !b->symAt(ib).empty()))
        c.atBounds = true;
    }
    broadcastWindows(c, {a, b});
    outConst(n, 0, std::move(c));
    return;
  }
  Tensor x = in(n, 0), y = in(n, 1);
  out(n, 0,
      op == "Add"   ? add(x, y)
      : op == "Sub" ? sub(x, y)
      : op == "Mul" ? mul(x, y)
                    : div(x, y));
}

void Importer::mod(const NodeProto &n) {
  bool cStyle = attrInt(n, "fmod", 0) != 0;
  const Const *a = constOf(n, 0), *b = constOf(n, 1);
  if (a && b && a->dtype == b->dtype) {
    Shape shape = broadcastShapes(a->shape, b->shape);
    Const c;
    c.dtype = a->dtype;
    c.shape = shape;
    for (size_t k = 0; k < static_cast<size_t>(product(shape)); ++k) {
      size_t ia = a->broadcastIndex(shape, k), ib = b->broadcastIndex(shape, k);
      if (a->isFloat())
        c.f.push_back(modOf(a->f[ia], b->f[ib], cStyle));
      else
        c.i.push_back(modOf(a->i[ia], b->i[ib], cStyle));
      c.atBounds |= !a->symAt(ia).empty() || !b->symAt(ib).empty();
    }
    broadcastWindows(c, {a, b});
    outConst(n, 0, std::move(c));
    return;
  }
  Tensor x = in(n, 0), y = in(n, 1);
  if (x.dtype() == DType::i64 || x.dtype() == DType::i32 ||
      x.dtype() == DType::i1)
    fail("takes integers computed while the model runs; Locus folds Mod of "
         "integers known while importing (sizes) and computes it on floats");
  out(n, 0, cStyle ? locus::fmod(x, y) : locus::remainder(x, y));
}

void Importer::compare(const NodeProto &n, const std::string &op) {
  const Const *a = constOf(n, 0), *b = constOf(n, 1);
  auto test = [&](double x, double y) {
    return op == "Equal"         ? x == y
           : op == "Less"        ? x < y
           : op == "Greater"     ? x > y
           : op == "LessOrEqual" ? x <= y
                                 : x >= y;
  };
  if (a && b) {
    Shape shape = broadcastShapes(a->shape, b->shape);
    Const c = Const::ofInts(DType::i1, shape, {});
    for (size_t k = 0; k < static_cast<size_t>(product(shape)); ++k) {
      size_t ia = a->broadcastIndex(shape, k), ib = b->broadcastIndex(shape, k);
      c.i.push_back(test(a->at(ia), b->at(ib)));
      c.atBounds |= !a->symAt(ia).empty() || !b->symAt(ib).empty();
    }
    broadcastWindows(c, {a, b});
    outConst(n, 0, std::move(c));
    return;
  }
  Tensor x = in(n, 0), y = in(n, 1);
  out(n, 0,
      op == "Equal"         ? eq(x, y)
      : op == "Less"        ? lt(x, y)
      : op == "Greater"     ? gt(x, y)
      : op == "LessOrEqual" ? le(x, y)
                            : ge(x, y));
}

void Importer::addActivations(Handlers &t) {
  t["LeakyRelu"] = [](Importer &im, Graph &, const NodeProto &n) {
    im.out(n, 0, leaky_relu(im.in(n, 0), attrFloat(n, "alpha", 0.01)));
  };
  t["Elu"] = [](Importer &im, Graph &, const NodeProto &n) {
    im.out(n, 0, elu(im.in(n, 0), attrFloat(n, "alpha", 1.0)));
  };
  t["HardSigmoid"] = [](Importer &im, Graph &, const NodeProto &n) {
    // max(0, min(1, alpha x + beta)).
    auto alpha = static_cast<float>(attrFloat(n, "alpha", 0.2));
    auto beta = static_cast<float>(attrFloat(n, "beta", 0.5));
    im.out(n, 0, hardtanh(im.in(n, 0) * alpha + beta, 0.0, 1.0));
  };
  t["HardSwish"] = [](Importer &im, Graph &, const NodeProto &n) {
    im.out(n, 0, hardswish(im.in(n, 0)));
  };
  t["Softplus"] = [](Importer &im, Graph &, const NodeProto &n) {
    im.out(n, 0, softplus(im.in(n, 0)));
  };
  t["PRelu"] = [](Importer &im, Graph &g, const NodeProto &n) {
    Tensor x = im.in(n, 0);
    Tensor below = mul(x, im.in(n, 1));
    im.out(n, 0, where(lt(x, g.full({}, 0.0)), below, x));
  };
  t["ThresholdedRelu"] = [](Importer &im, Graph &g, const NodeProto &n) {
    Tensor x = im.in(n, 0);
    im.out(n, 0,
           where(gt(x, g.full({}, attrFloat(n, "alpha", 1.0))), x,
                 g.full({}, 0.0)));
  };
  t["Celu"] = [](Importer &im, Graph &, const NodeProto &n) {
    // alpha * elu(x / alpha).
    auto alpha = static_cast<float>(attrFloat(n, "alpha", 1.0));
    im.out(n, 0, elu(im.in(n, 0) * (1.0f / alpha)) * alpha);
  };
  t["Shrink"] = [](Importer &im, Graph &g, const NodeProto &n) {
    Tensor x = im.in(n, 0);
    auto bias = static_cast<float>(attrFloat(n, "bias", 0.0));
    double lambd = attrFloat(n, "lambd", 0.5);
    im.out(n, 0,
           where(lt(x, g.full({}, -lambd)), x + bias,
                 where(gt(x, g.full({}, lambd)), x - bias, g.full({}, 0.0))));
  };
  t["Clip"] = [](Importer &im, Graph &, const NodeProto &n) {
    Tensor x = im.in(n, 0);
    if (im.opset_ < 11) {
      std::optional<double> lo, hi;
      if (attr(n, "min"))
        lo = attrFloat(n, "min", 0);
      if (attr(n, "max"))
        hi = attrFloat(n, "max", 0);
      im.out(n, 0, lo || hi ? clamp(x, lo, hi) : x);
      return;
    }
    // min(max(x, min), max), each bound a constant or a computed scalar.
    for (int k : {1, 2}) {
      if (!im.has(n, k))
        continue;
      if (const Const *c = im.constOf(n, k)) {
        if (c->numel() != 1)
          fail("Clip's bounds must be single numbers");
        x = k == 1 ? clamp(x, c->at(0), std::nullopt)
                   : clamp(x, std::nullopt, c->at(0));
        continue;
      }
      Tensor bound = im.in(n, k);
      if (bound.numel() != 1)
        fail("Clip's bounds must be single numbers");
      bound = locus::reshape(bound, {});
      x = k == 1 ? where(lt(x, bound), bound, x)
                 : where(gt(x, bound), bound, x);
    }
    im.out(n, 0, x);
  };
}

void Importer::addElementwiseHandlers(Handlers &t) {
  auto unary = [&](const char *name, UnaryFn fn) {
    t[name] = [fn](Importer &im, Graph &, const NodeProto &n) {
      im.out(n, 0, fn(im.in(n, 0), Here::current()));
    };
  };
  unary("Relu", &relu);
  unary("Sigmoid", &sigmoid);
  unary("Tanh", &locus::tanh);
  unary("Exp", &locus::exp);
  unary("Log", &locus::log);
  unary("Sqrt", &locus::sqrt);
  unary("Neg", &neg);
  unary("Abs", &locus::abs);
  unary("Erf", &locus::erf);
  unary("Sin", &locus::sin);
  unary("Cos", &locus::cos);
  unary("Reciprocal", &reciprocal);
  // Steps fold on known values: exporters compute sizes with them.
  auto step = [&](const char *name, double (*fold)(double), UnaryFn fn) {
    t[name] = [fold, fn](Importer &im, Graph &, const NodeProto &n) {
      if (const Const *c = im.constOf(n, 0)) {
        im.outConst(n, 0, stepConst(*c, fold, fn == &locus::sign));
        return;
      }
      im.out(n, 0, fn(im.in(n, 0), Here::current()));
    };
  };
  step("Floor", [](double v) { return std::floor(v); }, &locus::floor);
  step("Ceil", [](double v) { return std::ceil(v); }, &locus::ceil);
  // The default rounding mode: halves to even, as ONNX's Round.
  step("Round", [](double v) { return std::nearbyint(v); }, &locus::round);
  step(
      "Sign", [](double v) { return v > 0   ? 1.0
                                    : v < 0 ? -1.0
                                            : v; },
      &locus::sign);
  t["Mod"] = [](Importer &im, Graph &, const NodeProto &n) { im.mod(n); };
  t["IsNaN"] = [](Importer &im, Graph &, const NodeProto &n) {
    Tensor x = im.in(n, 0);
    im.out(n, 0, ne(x, x)); // only NaN differs from itself
  };
  t["IsInf"] = [](Importer &im, Graph &g, const NodeProto &n) {
    Tensor x = im.in(n, 0);
    double inf = std::numeric_limits<double>::infinity();
    Tensor up = eq(x, g.full({}, inf)), down = eq(x, g.full({}, -inf));
    bool positive = attrInt(n, "detect_positive", 1) != 0,
         negative = attrInt(n, "detect_negative", 1) != 0;
    Tensor no = g.full({}, 0.0, DType::i1);
    im.out(n, 0,
           positive && negative ? where(up, up, down)
           : positive           ? up
           : negative           ? down
                                : where(up, no, no));
  };
  for (const char *op : {"Add", "Sub", "Mul", "Div"})
    t[op] = [op = std::string(op)](Importer &im, Graph &, const NodeProto &n) {
      im.binary(n, op);
    };
  for (const char *op :
       {"Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual"})
    t[op] = [op = std::string(op)](Importer &im, Graph &, const NodeProto &n) {
      im.compare(n, op);
    };
  t["Not"] = [](Importer &im, Graph &g, const NodeProto &n) {
    if (const Const *c = im.constOf(n, 0)) {
      Const r = castConst(*c, DType::i1);
      for (int64_t &v : r.i)
        v = !v;
      im.outConst(n, 0, std::move(r));
      return;
    }
    Tensor x = im.in(n, 0);
    im.out(n, 0, eq(x, g.full(x.shape(), 0.0, DType::i1)));
  };
  // Boolean And, Or and Xor, as selections.
  for (int kind : {0, 1, 2})
    t[kind == 0   ? "And"
      : kind == 1 ? "Or"
                  : "Xor"] = [kind](Importer &im, Graph &g,
                                    const NodeProto &n) {
      Tensor a = im.in(n, 0), b = im.in(n, 1);
      if (a.dtype() != DType::i1 || b.dtype() != DType::i1)
        fail("logical ops take bool tensors");
      Tensor constant = g.full({}, kind == 0 ? 0.0 : 1.0, DType::i1);
      im.out(n, 0,
             kind == 0   ? where(a, b, constant)
             : kind == 1 ? where(a, constant, b)
                         : ne(a, b));
    };
  t["Pow"] = [](Importer &im, Graph &, const NodeProto &n) {
    const Const &e = im.needConst(n, 1, "the exponent");
    if (e.numel() != 1)
      fail("exponents other than one number are not supported");
    im.out(n, 0, locus::pow(im.in(n, 0), e.at(0)));
  };
  auto variadic = [&](const char *name, int kind) {
    t[name] = [kind](Importer &im, Graph &, const NodeProto &n) {
      Tensor acc = im.in(n, 0);
      for (int k = 1; k < n.input_size(); ++k)
        acc = kind == 0   ? minimum(acc, im.in(n, k))
              : kind == 1 ? maximum(acc, im.in(n, k))
                          : add(acc, im.in(n, k));
      if (kind == 3)
        acc = acc * (1.0f / static_cast<float>(n.input_size()));
      im.out(n, 0, acc);
    };
  };
  variadic("Min", 0);
  variadic("Max", 1);
  variadic("Sum", 2);
  variadic("Mean", 3);
  t["Where"] = [](Importer &im, Graph &, const NodeProto &n) {
    const Const *c = im.constOf(n, 0), *a = im.constOf(n, 1),
                *b = im.constOf(n, 2);
    if (c && a && b && a->dtype == b->dtype) {
      Shape shape =
          broadcastShapes(c->shape, broadcastShapes(a->shape, b->shape));
      Const r;
      r.dtype = a->dtype;
      r.shape = shape;
      for (size_t k = 0; k < static_cast<size_t>(product(shape)); ++k) {
        bool pick = c->at(c->broadcastIndex(shape, k)) != 0;
        const Const &src = pick ? *a : *b;
        size_t at = src.broadcastIndex(shape, k);
        r.append(src, at);
      }
      broadcastWindows(r, {c, a, b});
      r.atBounds |= c->dynamic() && c->window.empty();
      im.outConst(n, 0, std::move(r));
      return;
    }
    im.out(n, 0, where(im.in(n, 0), im.in(n, 1), im.in(n, 2)));
  };
  t["CastLike"] = [](Importer &im, Graph &, const NodeProto &n) {
    DType to = im.has(n, 1) && im.constOf(n, 1) ? im.constOf(n, 1)->dtype
                                                : im.in(n, 1).dtype();
    if (const Const *c = im.constOf(n, 0)) {
      im.outConst(n, 0, castConst(*c, to));
      return;
    }
    Tensor x = im.in(n, 0);
    im.out(n, 0, x.dtype() == to ? x : cast(x, to));
  };
  t["Cast"] = [](Importer &im, Graph &, const NodeProto &n) {
    DType to = dtypeOfOnnx(attrInt(n, "to", TensorProto::FLOAT));
    if (const Const *c = im.constOf(n, 0)) {
      im.outConst(n, 0, castConst(*c, to));
      return;
    }
    Tensor x = im.in(n, 0);
    im.out(n, 0, x.dtype() == to ? x : cast(x, to));
  };
}

} // namespace locus::onnx_import
