//===- Ops.cpp - the recording functions and operators --------------------===//
//
// Each function is one transaction: it records every op it needs (broadcasts,
// scalar constants) or, on an Error, none.
//
//===----------------------------------------------------------------------===//

#include "GraphImpl.h"
#include "UserText.h"

#include "locus/Dialect/Modes.h"

using namespace locus;
using namespace locus::detail;

namespace {

/// The name the user called: "exp" for locus.exp.
template <typename OpT> llvm::StringRef userName() {
  llvm::StringRef name = OpT::getOperationName();
  name.consume_front("locus.");
  return name;
}

/// An Error unless `v` holds float elements (f32, bf16 or f16).
template <typename OpT>
void requireFloat(mlir::Value v, const std::string &what, const Here &loc) {
  DType got = GraphImpl::dtypeOfValue(v);
  if (got != DType::bf16 && got != DType::f16)
    GraphImpl::requireDType(v, DType::f32, userName<OpT>(), what, loc);
}

/// `a` and `b` in one float type: PyTorch's promotion, where two different
/// float types meet in f32.
std::pair<mlir::Value, mlir::Value> promoted(GraphImpl &g, mlir::Value a,
                                             mlir::Value b, const Here &loc) {
  mlir::Type
      ta = mlir::cast<mlir::RankedTensorType>(a.getType()).getElementType(),
      tb = mlir::cast<mlir::RankedTensorType>(b.getType()).getElementType();
  if (ta == tb)
    return {a, b};
  auto f32 = mlir::TypeAttr::get(g.builder.getF32Type());
  auto up = [&](mlir::Value v, mlir::Type t) {
    return t.isF32() ? v : g.record<CastOp>(loc, v, f32);
  };
  return {up(a, ta), up(b, tb)};
}

template <typename OpT> Tensor unary(const Tensor &x, const Here &loc) {
  GraphImpl &g = GraphImpl::of(x, loc);
  Transaction tx(g);
  mlir::Value v = g.value(x, loc);
  requireFloat<OpT>(v, "its input", loc);
  mlir::Value result = g.record<OpT>(loc, v);
  tx.commit();
  return g.wrap(result);
}

/// Broadcasts both operands to their common shape, then records OpT.
template <typename OpT>
Tensor binary(const Tensor &a, const Tensor &b, const Here &loc) {
  GraphImpl &g = GraphImpl::of(a, loc);
  Transaction tx(g);
  mlir::Value va = g.value(a, loc), vb = g.value(b, loc);
  requireFloat<OpT>(va, "the first operand", loc);
  requireFloat<OpT>(vb, "the second operand", loc);
  std::tie(va, vb) = promoted(g, va, vb, loc);
  Shape shape =
      GraphImpl::broadcastShape(GraphImpl::shapeOf(va), GraphImpl::shapeOf(vb),
                                OpT::getOperationName(), loc);
  DimExprs dims = g.broadcastDimsOf({va, vb});
  mlir::Value result = g.record<OpT>(loc, g.broadcastTo(va, shape, loc, &dims),
                                     g.broadcastTo(vb, shape, loc, &dims));
  tx.commit();
  return g.wrap(result);
}

/// `a op scalar` (or `scalar op a` when `scalarFirst`).
template <typename OpT>
Tensor withScalar(const Tensor &a, float scalar, bool scalarFirst,
                  const Here &loc) {
  GraphImpl &g = GraphImpl::of(a, loc);
  Transaction tx(g);
  mlir::Value va = g.value(a, loc);
  requireFloat<OpT>(va, "the tensor operand", loc);
  // The scalar takes the tensor's type, as PyTorch's Python scalars do.
  mlir::Type element =
      mlir::cast<mlir::RankedTensorType>(va.getType()).getElementType();
  auto type = mlir::RankedTensorType::get({}, element);
  mlir::Value c = g.record<ConstantOp>(
      loc,
      mlir::cast<mlir::ElementsAttr>(mlir::DenseElementsAttr::get(
          type, llvm::ArrayRef<mlir::Attribute>{g.builder.getFloatAttr(
                    element, scalar)})),
      DeviceAttr());
  DimExprs dims = g.dimsOf(va);
  mlir::Value vc = g.broadcastTo(c, GraphImpl::shapeOf(va), loc, &dims);
  mlir::Value result =
      scalarFirst ? g.record<OpT>(loc, vc, va) : g.record<OpT>(loc, va, vc);
  tx.commit();
  return g.wrap(result);
}

Tensor compare(CmpPredicate predicate, const Tensor &a, const Tensor &b,
               const Here &loc) {
  GraphImpl &g = GraphImpl::of(a, loc);
  Transaction tx(g);
  mlir::Value va = g.value(a, loc), vb = g.value(b, loc);
  DType da = GraphImpl::dtypeOfValue(va), db = GraphImpl::dtypeOfValue(vb);
  if (da != db)
    throw userError(loc, std::string("compares ") + dtypeName(da) + " " +
                             formatShape(GraphImpl::shapeOf(va)) + " with " +
                             dtypeName(db) + " " +
                             formatShape(GraphImpl::shapeOf(vb)) +
                             "; convert one with locus::cast first");
  Shape shape = GraphImpl::broadcastShape(
      GraphImpl::shapeOf(va), GraphImpl::shapeOf(vb), "locus.cmp", loc);
  DimExprs dims = g.broadcastDimsOf({va, vb});
  mlir::Value result =
      g.record<CmpOp>(loc, predicate, g.broadcastTo(va, shape, loc, &dims),
                      g.broadcastTo(vb, shape, loc, &dims));
  tx.commit();
  return g.wrap(result);
}

std::vector<int64_t> normalizeAxes(GraphImpl &g,
                                   const std::vector<int64_t> &axes,
                                   mlir::Value value, llvm::StringRef op,
                                   const Here &loc) {
  std::vector<int64_t> normalized;
  normalized.reserve(axes.size());
  for (int64_t axis : axes)
    normalized.push_back(g.normalizeAxis(axis, value, op, loc));
  return normalized;
}

template <typename OpT>
Tensor reduce(const Tensor &x, const std::vector<int64_t> &axes, bool keepdim,
              const Here &loc) {
  GraphImpl &g = GraphImpl::of(x, loc);
  Transaction tx(g);
  mlir::Value v = g.value(x, loc);
  requireFloat<OpT>(v, "its input", loc);
  std::vector<int64_t> normalized =
      normalizeAxes(g, axes, v, userOpName(OpT::getOperationName()), loc);
  mlir::Value result =
      g.record<OpT>(loc, v, llvm::ArrayRef<int64_t>(normalized), keepdim);
  tx.commit();
  return g.wrap(result);
}

template <typename OpT>
Tensor softmaxLike(const Tensor &x, int64_t axis, const Here &loc) {
  GraphImpl &g = GraphImpl::of(x, loc);
  Transaction tx(g);
  mlir::Value v = g.value(x, loc);
  requireFloat<OpT>(v, "its input", loc);
  mlir::Value result =
      g.record<OpT>(loc, v,
                    g.builder.getI64IntegerAttr(g.normalizeAxis(
                        axis, v, userOpName(OpT::getOperationName()), loc)));
  tx.commit();
  return g.wrap(result);
}

template <typename OpT>
Tensor pool(const Tensor &x, const Pool2dParams &params, const Here &loc) {
  GraphImpl &g = GraphImpl::of(x, loc);
  Transaction tx(g);
  requireFloat<OpT>(g.value(x, loc), "its input", loc);
  const std::vector<int64_t> &stride =
      params.stride.empty() ? params.kernelSize : params.stride;
  mlir::Value result =
      g.record<OpT>(loc, g.value(x, loc), llvm::ArrayRef(params.kernelSize),
                    llvm::ArrayRef(stride), llvm::ArrayRef(params.padding));
  tx.commit();
  return g.wrap(result);
}

ReductionKind reductionKind(Reduction reduction) {
  return reduction == Reduction::sum ? ReductionKind::sum : ReductionKind::mean;
}

} // namespace

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

Tensor locus::add(const Tensor &a, const Tensor &b, Here loc) {
  return binary<AddOp>(a, b, loc);
}
Tensor locus::sub(const Tensor &a, const Tensor &b, Here loc) {
  return binary<SubOp>(a, b, loc);
}
Tensor locus::mul(const Tensor &a, const Tensor &b, Here loc) {
  return binary<MulOp>(a, b, loc);
}
Tensor locus::div(const Tensor &a, const Tensor &b, Here loc) {
  return binary<DivOp>(a, b, loc);
}
Tensor locus::maximum(const Tensor &a, const Tensor &b, Here loc) {
  return binary<MaximumOp>(a, b, loc);
}

Tensor locus::types::operator+(const Operand &a, const Tensor &b) {
  return binary<AddOp>(a.tensor, b, a.loc);
}
Tensor locus::types::operator-(const Operand &a, const Tensor &b) {
  return binary<SubOp>(a.tensor, b, a.loc);
}
Tensor locus::types::operator*(const Operand &a, const Tensor &b) {
  return binary<MulOp>(a.tensor, b, a.loc);
}
Tensor locus::types::operator/(const Operand &a, const Tensor &b) {
  return binary<DivOp>(a.tensor, b, a.loc);
}
Tensor locus::types::operator+(const Operand &a, float b) {
  return withScalar<AddOp>(a.tensor, b, false, a.loc);
}
Tensor locus::types::operator-(const Operand &a, float b) {
  return withScalar<SubOp>(a.tensor, b, false, a.loc);
}
Tensor locus::types::operator*(const Operand &a, float b) {
  return withScalar<MulOp>(a.tensor, b, false, a.loc);
}
Tensor locus::types::operator/(const Operand &a, float b) {
  return withScalar<DivOp>(a.tensor, b, false, a.loc);
}
Tensor locus::types::operator-(const Operand &a) {
  return unary<NegOp>(a.tensor, a.loc);
}
Tensor locus::types::operator+(float a, const Operand &b) {
  return withScalar<AddOp>(b.tensor, a, true, b.loc);
}
Tensor locus::types::operator-(float a, const Operand &b) {
  return withScalar<SubOp>(b.tensor, a, true, b.loc);
}
Tensor locus::types::operator*(float a, const Operand &b) {
  return withScalar<MulOp>(b.tensor, a, true, b.loc);
}
Tensor locus::types::operator/(float a, const Operand &b) {
  return withScalar<DivOp>(b.tensor, a, true, b.loc);
}

Tensor locus::neg(const Tensor &x, Here loc) { return unary<NegOp>(x, loc); }
Tensor locus::exp(const Tensor &x, Here loc) { return unary<ExpOp>(x, loc); }
Tensor locus::log(const Tensor &x, Here loc) { return unary<LogOp>(x, loc); }
Tensor locus::sqrt(const Tensor &x, Here loc) { return unary<SqrtOp>(x, loc); }
Tensor locus::relu(const Tensor &x, Here loc) { return unary<ReluOp>(x, loc); }
Tensor locus::sigmoid(const Tensor &x, Here loc) {
  return unary<SigmoidOp>(x, loc);
}
Tensor locus::tanh(const Tensor &x, Here loc) { return unary<TanhOp>(x, loc); }
Tensor locus::erf(const Tensor &x, Here loc) { return unary<ErfOp>(x, loc); }
Tensor locus::sin(const Tensor &x, Here loc) { return unary<SinOp>(x, loc); }
Tensor locus::cos(const Tensor &x, Here loc) { return unary<CosOp>(x, loc); }
Tensor locus::abs(const Tensor &x, Here loc) { return unary<AbsOp>(x, loc); }
Tensor locus::floor(const Tensor &x, Here loc) {
  return unary<FloorOp>(x, loc);
}
Tensor locus::ceil(const Tensor &x, Here loc) { return unary<CeilOp>(x, loc); }
Tensor locus::round(const Tensor &x, Here loc) {
  return unary<RoundOp>(x, loc);
}
Tensor locus::rsqrt(const Tensor &x, Here loc) {
  return unary<RsqrtOp>(x, loc);
}
Tensor locus::reciprocal(const Tensor &x, Here loc) {
  return unary<ReciprocalOp>(x, loc);
}
Tensor locus::silu(const Tensor &x, Here loc) { return unary<SiluOp>(x, loc); }

Tensor locus::gelu(const Tensor &x, std::string_view approximate, Here loc) {
  if (approximate != "none" && approximate != "tanh")
    throw userError(loc, "gelu: approximate is 'none' or 'tanh', not '" +
                             std::string(approximate) + "'");
  GraphImpl &g = GraphImpl::of(x, loc);
  Transaction tx(g);
  mlir::Value result = g.record<GeluOp>(
      loc, g.value(x, loc),
      approximate == "tanh" ? g.builder.getUnitAttr() : mlir::UnitAttr());
  tx.commit();
  return g.wrap(result);
}

Tensor locus::pow(const Tensor &x, double exponent, Here loc) {
  GraphImpl &g = GraphImpl::of(x, loc);
  Transaction tx(g);
  mlir::Value result = g.record<PowOp>(loc, g.value(x, loc),
                                       g.builder.getF64FloatAttr(exponent));
  tx.commit();
  return g.wrap(result);
}

Tensor locus::eq(const Tensor &a, const Tensor &b, Here loc) {
  return compare(CmpPredicate::eq, a, b, loc);
}
Tensor locus::ne(const Tensor &a, const Tensor &b, Here loc) {
  return compare(CmpPredicate::ne, a, b, loc);
}
Tensor locus::lt(const Tensor &a, const Tensor &b, Here loc) {
  return compare(CmpPredicate::lt, a, b, loc);
}
Tensor locus::le(const Tensor &a, const Tensor &b, Here loc) {
  return compare(CmpPredicate::le, a, b, loc);
}
Tensor locus::gt(const Tensor &a, const Tensor &b, Here loc) {
  return compare(CmpPredicate::gt, a, b, loc);
}
Tensor locus::ge(const Tensor &a, const Tensor &b, Here loc) {
  return compare(CmpPredicate::ge, a, b, loc);
}

Tensor locus::where(const Tensor &cond, const Tensor &a, const Tensor &b,
                    Here loc) {
  GraphImpl &g = GraphImpl::of(cond, loc);
  Transaction tx(g);
  mlir::Value vc = g.value(cond, loc), va = g.value(a, loc),
              vb = g.value(b, loc);
  GraphImpl::requireDType(vc, DType::i1, "where", "its condition", loc);
  if (GraphImpl::dtypeOfValue(va) != GraphImpl::dtypeOfValue(vb))
    throw userError(loc, std::string("where chooses between ") +
                             dtypeName(GraphImpl::dtypeOfValue(va)) + " and " +
                             dtypeName(GraphImpl::dtypeOfValue(vb)) +
                             " values; convert one with locus::cast first");
  Shape shape = GraphImpl::broadcastShape(
      GraphImpl::broadcastShape(GraphImpl::shapeOf(vc), GraphImpl::shapeOf(va),
                                "locus.select", loc),
      GraphImpl::shapeOf(vb), "locus.select", loc);
  DimExprs dims = g.broadcastDimsOf({vc, va, vb});
  mlir::Value result =
      g.record<SelectOp>(loc, g.broadcastTo(vc, shape, loc, &dims),
                         g.broadcastTo(va, shape, loc, &dims),
                         g.broadcastTo(vb, shape, loc, &dims));
  tx.commit();
  return g.wrap(result);
}

Tensor locus::full_like(const Tensor &x, double value, Here loc) {
  GraphImpl &g = GraphImpl::of(x, loc);
  Transaction tx(g);
  mlir::Value vx = g.value(x, loc);
  mlir::Value c = g.value(x.graph(loc).full({}, value, x.dtype(), loc), loc);
  DimExprs dims = g.dimsOf(vx);
  mlir::Value result = g.broadcastTo(c, GraphImpl::shapeOf(vx), loc, &dims);
  tx.commit();
  return g.wrap(result);
}

Tensor locus::zeros_like(const Tensor &x, Here loc) {
  return full_like(x, 0.0, loc);
}

Tensor locus::ones_like(const Tensor &x, Here loc) {
  return full_like(x, 1.0, loc);
}

Tensor locus::broadcast_to(const Tensor &x, const Shape &shape, Here loc) {
  GraphImpl &g = GraphImpl::of(x, loc);
  Transaction tx(g);
  mlir::Value result =
      g.record<BroadcastOp>(loc, g.value(x, loc), llvm::ArrayRef(shape));
  tx.commit();
  return g.wrap(result);
}

//===----------------------------------------------------------------------===//
// Linear algebra and layout
//===----------------------------------------------------------------------===//

namespace {

mlir::Value reshaped(GraphImpl &g, mlir::Value v, const Shape &shape,
                     const Here &loc) {
  if (GraphImpl::shapeOf(v) == shape)
    return v;
  return g.record<ReshapeOp>(loc, v, llvm::ArrayRef(shape));
}

int64_t product(const Shape &shape, size_t from = 0, size_t to = SIZE_MAX) {
  int64_t p = 1;
  for (size_t i = from; i < std::min(to, shape.size()); ++i)
    p *= shape[i];
  return p;
}

} // namespace

Tensor locus::matmul(const Tensor &a, const Tensor &b, Here loc) {
  GraphImpl &g = GraphImpl::of(a, loc);
  Transaction tx(g);
  mlir::Value va = g.value(a, loc), vb = g.value(b, loc);
  requireFloat<MatmulOp>(va, "the first operand", loc);
  requireFloat<MatmulOp>(vb, "the second operand", loc);
  Shape sa = GraphImpl::shapeOf(va), sb = GraphImpl::shapeOf(vb);
  std::string shapes = formatShape(sa) + " x " + formatShape(sb);
  if (sa.empty() || sb.empty())
    throw userError(loc, "matmul of " + shapes +
                             ": both operands need at least one dimension");
  // torch.matmul: a vector becomes a matrix, and its dimension is dropped
  // from the result.
  bool vectorA = sa.size() == 1, vectorB = sb.size() == 1;
  if (vectorA)
    sa.insert(sa.begin(), 1);
  if (vectorB)
    sb.push_back(1);
  int64_t m = sa[sa.size() - 2], k = sa.back(), n = sb.back();
  if (sb[sb.size() - 2] != k)
    throw userError(
        loc, "cannot multiply " + formatShape(GraphImpl::shapeOf(va)) + " by " +
                 formatShape(GraphImpl::shapeOf(vb)) + ": the first has " +
                 std::to_string(k) + " columns, the second " +
                 std::to_string(sb[sb.size() - 2]) + " rows");
  Shape batchA(sa.begin(), sa.end() - 2), batchB(sb.begin(), sb.end() - 2);
  va = reshaped(g, va, sa, loc);
  vb = reshaped(g, vb, sb, loc);
  Shape batch;
  mlir::Value product2;
  if (batchB.empty()) {
    // [..., M, K] x [K, N]: one product over all the rows, no copies.
    batch = batchA;
    mlir::Value rows = reshaped(g, va, {product(batchA) * m, k}, loc);
    product2 = g.record<MatmulOp>(loc, rows, vb);
  } else {
    batch = GraphImpl::broadcastShape(batchA, batchB, "matmul", loc);
    Shape fullA = batch, fullB = batch;
    fullA.insert(fullA.end(), {m, k});
    fullB.insert(fullB.end(), {k, n});
    // With dynamic sizes, a batch dimension either side expands takes the
    // other side's dims.
    DimExprs dimsA = g.dimsOf(va), dimsB = g.dimsOf(vb);
    DimExprs batchDims = broadcastDims(llvm::ArrayRef(dimsA).drop_back(2),
                                       llvm::ArrayRef(dimsB).drop_back(2))
                             .value_or(staticDims(batch));
    DimExprs fullDimsA = batchDims, fullDimsB = batchDims;
    fullDimsA.append(dimsA.end() - 2, dimsA.end());
    fullDimsB.append(dimsB.end() - 2, dimsB.end());
    product2 =
        g.record<MatmulOp>(loc, g.broadcastTo(va, fullA, loc, &fullDimsA),
                           g.broadcastTo(vb, fullB, loc, &fullDimsB));
  }
  Shape out = batch;
  if (!vectorA)
    out.push_back(m);
  if (!vectorB)
    out.push_back(n);
  mlir::Value result = reshaped(g, product2, out, loc);
  tx.commit();
  return g.wrap(result);
}

Tensor locus::bmm(const Tensor &a, const Tensor &b, Here loc) {
  if (a.rank() != 3 || b.rank() != 3 || a.dim(0) != b.dim(0))
    throw userError(loc, "bmm of " + formatShape(a.shape()) + " x " +
                             formatShape(b.shape()) +
                             ": both operands must be [B, ., .] with the "
                             "same batch B (matmul broadcasts)");
  return matmul(a, b, loc);
}

Tensor locus::linear(const Tensor &x, const Tensor &weight, const Tensor &bias,
                     Here loc) {
  GraphImpl &g = GraphImpl::of(x, loc);
  Transaction tx(g);
  mlir::Value vb = bias ? g.value(bias, loc) : mlir::Value();
  requireFloat<LinearOp>(g.value(x, loc), "its input", loc);
  mlir::Value result =
      g.record<LinearOp>(loc, g.value(x, loc), g.value(weight, loc), vb);
  tx.commit();
  return g.wrap(result);
}

Tensor locus::permute(const Tensor &x, const std::vector<int64_t> &dims,
                      Here loc) {
  GraphImpl &g = GraphImpl::of(x, loc);
  Transaction tx(g);
  mlir::Value v = g.value(x, loc);
  std::vector<int64_t> perm = normalizeAxes(g, dims, v, "permute", loc);
  mlir::Value result = g.record<TransposeOp>(loc, v, llvm::ArrayRef(perm));
  tx.commit();
  return g.wrap(result);
}

Tensor locus::transpose(const Tensor &x, int64_t dim0, int64_t dim1, Here loc) {
  GraphImpl &g = GraphImpl::of(x, loc);
  mlir::Value v = g.value(x, loc);
  int64_t a = g.normalizeAxis(dim0, v, "transpose", loc),
          b = g.normalizeAxis(dim1, v, "transpose", loc);
  std::vector<int64_t> perm(GraphImpl::shapeOf(v).size());
  for (size_t i = 0; i < perm.size(); ++i)
    perm[i] = static_cast<int64_t>(i);
  std::swap(perm[a], perm[b]);
  return permute(x, perm, loc);
}

Tensor locus::reshape(const Tensor &x, const Shape &shape, Here loc) {
  GraphImpl &g = GraphImpl::of(x, loc);
  Transaction tx(g);
  mlir::Value v = g.value(x, loc);
  Shape resolved = shape;
  int64_t known = 1, inferred = -1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == -1 && inferred < 0)
      inferred = static_cast<int64_t>(i);
    else if (shape[i] < 0)
      throw userError(loc, "reshape to " + formatShape(shape) +
                               ": only one dimension may be -1 and none "
                               "other negative");
    else
      known *= shape[i];
  }
  int64_t count =
      mlir::cast<mlir::RankedTensorType>(v.getType()).getNumElements();
  if (inferred >= 0) {
    if (known == 0 || count % known != 0)
      throw userError(loc, "cannot reshape " +
                               formatShape(GraphImpl::shapeOf(v)) + " (" +
                               std::to_string(count) + " elements) to " +
                               formatShape(shape));
    resolved[inferred] = count / known;
  }
  mlir::Value result = g.record<ReshapeOp>(loc, v, llvm::ArrayRef(resolved));
  tx.commit();
  return g.wrap(result);
}

Tensor locus::flatten(const Tensor &x, int64_t startDim, int64_t endDim,
                      Here loc) {
  GraphImpl &g = GraphImpl::of(x, loc);
  mlir::Value v = g.value(x, loc);
  Shape in = GraphImpl::shapeOf(v);
  if (in.empty())
    return reshape(x, {1}, loc);
  int64_t start = g.normalizeAxis(startDim, v, "flatten", loc);
  int64_t end = g.normalizeAxis(endDim, v, "flatten", loc);
  if (start > end)
    throw userError(loc, "flatten: start_dim " + std::to_string(startDim) +
                             " comes after end_dim " + std::to_string(endDim));
  Shape out(in.begin(), in.begin() + start);
  int64_t merged = 1;
  for (int64_t d = start; d <= end; ++d)
    merged *= in[d];
  out.push_back(merged);
  out.insert(out.end(), in.begin() + end + 1, in.end());
  return reshape(x, out, loc);
}

Tensor locus::concat(const std::vector<Tensor> &xs, int64_t axis, Here loc) {
  if (xs.empty())
    throw userError(loc, "concat needs at least one tensor");
  GraphImpl &g = GraphImpl::of(xs.front(), loc);
  Transaction tx(g);
  llvm::SmallVector<mlir::Value> values;
  for (const Tensor &x : xs)
    values.push_back(g.value(x, loc));
  int64_t normalized = g.normalizeAxis(axis, values.front(), "concat", loc);
  mlir::Value result = g.record<ConcatOp>(
      loc, mlir::ValueRange(values), g.builder.getI64IntegerAttr(normalized));
  tx.commit();
  return g.wrap(result);
}

namespace {

/// A slice's window along one dimension: its first element (below zero:
/// counted back from the end) and how many it takes.
struct Window {
  int64_t offset, size;
};

/// Python's rules in a dimension of `dim` elements: negative bounds count
/// from the end, then clamp.
Window staticWindow(int64_t dim, int64_t start, int64_t end, int64_t step) {
  auto clamp = [dim](int64_t i) {
    i = i < 0 ? i + dim : i;
    return std::clamp<int64_t>(i, 0, dim);
  };
  int64_t lo = clamp(start), hi = clamp(end);
  int64_t count = hi > lo ? (hi - lo + step - 1) / step : 0;
  return {count ? lo : 0, count};
}

/// In dimension `a` of `v`, which is dynamic: the whole dimension, or a
/// window of fixed size counted from its start ([2:5], [0]) or from its
/// end ([-3:], [-1], [-4:-2]), the same elements at every size. An end
/// past the bound runs to the run's end. A window whose size would follow
/// the run's (`[2:]`, `[:-1]`) is an Error.
Window dynamicWindow(GraphImpl &g, mlir::Value v, int64_t a, int64_t start,
                     int64_t end, int64_t step, const Here &loc) {
  int64_t bound = GraphImpl::shapeOf(v)[a];
  auto count = [step](int64_t lo, int64_t hi) {
    return hi > lo ? (hi - lo + step - 1) / step : 0;
  };
  // An end past the bound (INT64_MAX, Python's None) runs to the run's end;
  // one at the bound is that index (x[:, 15] at bound 16 needs 16).
  bool toEnd = end > bound;
  if (start == 0 && end >= bound && step == 1)
    return Window{0, bound}; // the whole dimension
  if (start >= bound && end >= bound)
    return Window{0, 0};
  if (start >= 0 && end >= 0 && !toEnd)
    return count(start, end) ? Window{start, count(start, end)} : Window{0, 0};
  if (start < 0 && (toEnd || end < 0)) {
    int64_t from = std::max(start, -bound), to = toEnd ? 0 : end;
    return count(from, to) ? Window{from, count(from, to)} : Window{0, 0};
  }
  DimExprs dims = g.dimsOf(v);
  throw userError(
      loc, "slice: the window [" + std::to_string(start) + ":" +
               (toEnd ? std::string() : std::to_string(end)) +
               "] of dimension " + std::to_string(a) + " of " +
               formatDims(dims, g.dynamic->symbols()) +
               " would have as many elements as the run's '" +
               formatDim(dims[a], g.dynamic->symbols()) +
               "' less a constant; a window along a dynamic dimension has a "
               "fixed size, counted from its start ([2:5], [0]) or from its "
               "end ([-3:], [-1])");
}

} // namespace

Tensor locus::slice(const Tensor &x, int64_t axis, int64_t start, int64_t end,
                    int64_t step, Here loc) {
  GraphImpl &g = GraphImpl::of(x, loc);
  Transaction tx(g);
  mlir::Value v = g.value(x, loc);
  Shape in = GraphImpl::shapeOf(v);
  int64_t a = g.normalizeAxis(axis, v, "slice", loc);
  if (step < 1)
    throw userError(loc,
                    "slice step must be positive, got " + std::to_string(step));
  std::vector<int64_t> offsets(in.size(), 0), sizes(in), strides(in.size(), 1);
  Window window = g.dimsOf(v)[a].isStatic()
                      ? staticWindow(in[a], start, end, step)
                      : dynamicWindow(g, v, a, start, end, step, loc);
  offsets[a] = window.offset;
  sizes[a] = window.size;
  strides[a] = step;
  mlir::Value result =
      g.record<SliceOp>(loc, v, llvm::ArrayRef(offsets), llvm::ArrayRef(sizes),
                        llvm::ArrayRef(strides));
  tx.commit();
  return g.wrap(result);
}

std::vector<InputDim> locus::dynamic_shape(const Tensor &x, Here loc) {
  GraphImpl &g = GraphImpl::of(x, loc);
  DimExprs dims = g.dimsOf(g.value(x, loc));
  Shape shape = x.shape();
  std::vector<InputDim> out;
  for (auto [d, dim] : llvm::enumerate(dims)) {
    if (dim.isStatic()) {
      out.emplace_back(shape[d]);
      continue;
    }
    // NOLINTNEXTLINE(bugprone-unchecked-optional-access): a dynamic dim.
    out.emplace_back(formatDim(dim, g.dynamic->symbols()), shape[d]);
  }
  return out;
}

Tensor locus::narrow_to(const Tensor &x, const std::vector<InputDim> &dims,
                        Here loc) {
  GraphImpl &g = GraphImpl::of(x, loc);
  mlir::Value v = g.value(x, loc);
  Shape shape = GraphImpl::shapeOf(v);
  DimExprs have = g.dimsOf(v);
  if (dims.size() != shape.size())
    throw userError(loc, "narrow_to: " + std::to_string(dims.size()) +
                             " dimensions for " + shapeText(shape));
  DimExprs want;
  for (auto [d, dim] : llvm::enumerate(dims)) {
    if (dim.size != shape[d])
      throw userError(loc,
                      "narrow_to: dimension " + std::to_string(d) + " of " +
                          shapeText(shape) + " is " + std::to_string(shape[d]) +
                          ", not " + std::to_string(dim.size) +
                          (dim.dynamic ? " (the bound of '" + dim.symbol + "')"
                                       : std::string()));
    if (!dim.dynamic) {
      want.push_back(have[d]);
      continue;
    }
    std::optional<unsigned> index;
    if (g.dynamic)
      for (auto [k, symbol] : llvm::enumerate(g.dynamic->symbols()))
        if (symbol.name == dim.symbol && symbol.bound == dim.size)
          index = static_cast<unsigned>(k);
    if (!index)
      throw userError(loc, "narrow_to: '" + dim.symbol + "' with bound " +
                               std::to_string(dim.size) +
                               " is not a dynamic size of the graph (declare "
                               "it on an input, as dyn(\"" +
                               dim.symbol + "\", " + std::to_string(dim.size) +
                               "))");
    DimExpr fresh = DimExpr::symbol(*index);
    if (!have[d].isStatic() && have[d] != fresh)
      throw userError(loc, "narrow_to: dimension " + std::to_string(d) +
                               " is dynamic already (" + g.dynamic->format(v) +
                               ")");
    want.push_back(fresh);
  }
  if (want == have)
    return x;
  Transaction tx(g);
  std::vector<int64_t> offsets(shape.size(), 0), strides(shape.size(), 1);
  mlir::Value result = g.recordOpWithDims<SliceOp>(
                            loc, g.dimsAttr(want), v, llvm::ArrayRef(offsets),
                            llvm::ArrayRef(shape), llvm::ArrayRef(strides))
                           ->getResult(0);
  tx.commit();
  return g.wrap(result);
}

//===----------------------------------------------------------------------===//
// Reductions, softmax
//===----------------------------------------------------------------------===//

Tensor locus::sum(const Tensor &x, const std::vector<int64_t> &axes,
                  bool keepdim, Here loc) {
  return reduce<SumOp>(x, axes, keepdim, loc);
}
Tensor locus::mean(const Tensor &x, const std::vector<int64_t> &axes,
                   bool keepdim, Here loc) {
  return reduce<MeanOp>(x, axes, keepdim, loc);
}
Tensor locus::max(const Tensor &x, const std::vector<int64_t> &axes,
                  bool keepdim, Here loc) {
  return reduce<MaxOp>(x, axes, keepdim, loc);
}
Tensor locus::softmax(const Tensor &x, int64_t axis, Here loc) {
  return softmaxLike<SoftmaxOp>(x, axis, loc);
}
Tensor locus::log_softmax(const Tensor &x, int64_t axis, Here loc) {
  return softmaxLike<LogSoftmaxOp>(x, axis, loc);
}

//===----------------------------------------------------------------------===//
// Convolution, pooling, losses
//===----------------------------------------------------------------------===//

Tensor locus::conv2d(const Tensor &x, const Tensor &weight, const Tensor &bias,
                     const Conv2dParams &params, Here loc) {
  GraphImpl &g = GraphImpl::of(x, loc);
  Transaction tx(g);
  mlir::Value vb = bias ? g.value(bias, loc) : mlir::Value();
  requireFloat<Conv2dOp>(g.value(x, loc), "its input", loc);
  mlir::Value result = g.record<Conv2dOp>(
      loc, g.value(x, loc), g.value(weight, loc), vb,
      llvm::ArrayRef(params.stride), llvm::ArrayRef(params.padding),
      llvm::ArrayRef(params.dilation), static_cast<uint64_t>(params.groups));
  tx.commit();
  return g.wrap(result);
}

detail::BatchNormTrainResults
locus::detail::batchNormTrain(const Tensor &x, const Tensor &weight,
                              const Tensor &bias, double eps, const Here &loc) {
  GraphImpl &g = GraphImpl::of(x, loc);
  Transaction tx(g);
  requireFloat<BatchNormTrainOp>(g.value(x, loc), "its input", loc);
  mlir::Operation *op = g.recordOp<BatchNormTrainOp>(
      loc, g.value(x, loc), g.value(weight, loc), g.value(bias, loc),
      g.builder.getF64FloatAttr(eps));
  tx.commit();
  return {g.wrap(op->getResult(0)), g.wrap(op->getResult(1)),
          g.wrap(op->getResult(2))};
}

Tensor locus::detail::dynamicChannelCount(const Tensor &x, const Here &loc) {
  GraphImpl &g = GraphImpl::of(x, loc);
  mlir::Value v = g.value(x, loc);
  DimExprs dims = g.dimsOf(v);
  if (llvm::all_of(dims, [](const DimExpr &d) { return d.isStatic(); }))
    return Tensor();
  std::vector<int64_t> axes = {0};
  for (int64_t d = 2; d < static_cast<int64_t>(dims.size()); ++d)
    axes.push_back(d);
  Transaction tx(g);
  mlir::Value count =
      g.record<CountOp>(loc, v, g.builder.getDenseI64ArrayAttr(axes));
  tx.commit();
  return g.wrap(count);
}

Tensor locus::detail::gatherElements(const Tensor &x, int64_t axis,
                                     const Tensor &index, const Here &loc) {
  GraphImpl &g = GraphImpl::of(x, loc);
  mlir::Value v = g.value(x, loc), vi = g.value(index, loc);
  auto isStatic = [](const DimExpr &d) { return d.isStatic(); };
  if (!llvm::all_of(g.dimsOf(v), isStatic) ||
      !llvm::all_of(g.dimsOf(vi), isStatic))
    return Tensor();
  Transaction tx(g);
  mlir::Value result =
      g.record<GatherElementsOp>(loc, v, vi, g.builder.getI64IntegerAttr(axis));
  tx.commit();
  return g.wrap(result);
}

namespace {

/// conv_transpose2d's parameters checked against x and weight; the
/// padding as {top, left, bottom, right}.
std::vector<int64_t> checkConvTranspose(const Tensor &x, const Tensor &weight,
                                        const ConvTranspose2dParams &p,
                                        const Here &loc) {
  auto fail = [&](const std::string &message) {
    return userError(loc, "conv_transpose2d: " + message);
  };
  if (x.rank() != 4 || weight.rank() != 4)
    throw fail("input " + detail::shapeText(x.shape()) + " and weight " +
               detail::shapeText(weight.shape()) + " must have 4 dimensions");
  auto pairs = [](const std::vector<int64_t> &v) { return v.size() == 2; };
  if (!pairs(p.stride) || !pairs(p.dilation) || !pairs(p.outputPadding) ||
      (p.padding.size() != 2 && p.padding.size() != 4))
    throw fail("stride, dilation and output_padding take 2 sizes, padding 2 "
               "or 4");
  std::vector<int64_t> pad = p.padding;
  if (pad.size() == 2)
    pad = {pad[0], pad[1], pad[0], pad[1]};
  for (int d = 0; d < 2; ++d) {
    if (p.stride[d] < 1 || p.dilation[d] < 1 || pad[d] < 0 || pad[2 + d] < 0 ||
        p.outputPadding[d] < 0)
      throw fail("stride and dilation must be positive, padding and "
                 "output_padding 0 or more");
    if (p.outputPadding[d] >= std::max(p.stride[d], p.dilation[d]))
      throw fail("output_padding " + detail::shapeText(p.outputPadding) +
                 " must be smaller than the stride or the dilation");
  }
  int64_t groups = p.groups;
  if (groups < 1 || x.dim(1) != weight.dim(0) || x.dim(1) % groups)
    throw fail("weight " + detail::shapeText(weight.shape()) + " and groups " +
               std::to_string(groups) + " do not fit input " +
               detail::shapeText(x.shape()) +
               " (weight [C, out / groups, KH, KW], groups dividing C)");
  return pad;
}

} // namespace

Tensor locus::conv_transpose2d(const Tensor &x, const Tensor &weight,
                               const Tensor &bias,
                               const ConvTranspose2dParams &params, Here loc) {
  GraphImpl &g = GraphImpl::of(x, loc);
  (void)weight.graph(loc);
  std::vector<int64_t> pad = checkConvTranspose(x, weight, params, loc);
  requireFloat<Conv2dInputGradOp>(g.value(x, loc), "its input", loc);
  Transaction tx(g);
  const std::vector<int64_t> &s = params.stride, &d = params.dilation,
                             &extra = params.outputPadding;
  int64_t out = weight.dim(1) * params.groups;
  // The full result (no cropping), then the window the padding leaves.
  int64_t full[2], size[2];
  for (int i = 0; i < 2; ++i) {
    full[i] = (x.dim(2 + i) - 1) * s[i] + d[i] * (weight.dim(2 + i) - 1) + 1;
    size[i] = full[i] - pad[i] - pad[2 + i] + extra[i];
    if (size[i] < 1)
      throw userError(loc, "conv_transpose2d: the padding " +
                               detail::shapeText(params.padding) +
                               " leaves no output of input " +
                               detail::shapeText(x.shape()));
  }
  // The op's own padding serves when it is even and the extra rows are
  // the ones the convolution's shape rule leaves (below the stride).
  bool direct = pad[0] == pad[2] && pad[1] == pad[3] && extra[0] < s[0] &&
                extra[1] < s[1];
  std::vector<int64_t> opPad = direct ? std::vector<int64_t>{pad[0], pad[1]}
                                      : std::vector<int64_t>{0, 0};
  std::vector<int64_t> shape = {x.dim(0), out, direct ? size[0] : full[0],
                                direct ? size[1] : full[1]};
  Tensor y = g.wrap(g.record<Conv2dInputGradOp>(
      loc, g.value(x, loc), g.value(weight, loc), llvm::ArrayRef(shape),
      llvm::ArrayRef(s), llvm::ArrayRef(opPad), llvm::ArrayRef(d),
      static_cast<uint64_t>(params.groups)));
  if (!direct) {
    // Rows past the full result receive nothing: zeros, then the window.
    int64_t after[2] = {std::max<int64_t>(0, pad[0] + size[0] - full[0]),
                        std::max<int64_t>(0, pad[1] + size[1] - full[1])};
    if (after[0] || after[1])
      y = locus::pad(y, {0, after[1], 0, after[0]}, 0.0, loc);
    y = slice(slice(y, 2, pad[0], pad[0] + size[0], 1, loc), 3, pad[1],
              pad[1] + size[1], 1, loc);
  }
  if (bias)
    y = add(y, reshape(bias, {1, out, 1, 1}, loc), loc);
  tx.commit();
  return y;
}

Tensor locus::conv1d(const Tensor &x, const Tensor &weight, const Tensor &bias,
                     const Conv1dParams &params, Here loc) {
  GraphImpl &g = GraphImpl::of(x, loc);
  (void)weight.graph(loc); // an Error for an empty handle
  for (const Tensor *t : {&x, &weight})
    if (t->rank() != 3)
      throw userError(
          loc, std::string("conv1d: ") + (t == &x ? "input" : "weight") + " " +
                   shapeText(t->shape()) + " must have 3 dimensions (" +
                   (t == &x ? "N, C, L" : "out, in / groups, k") + ")");
  Transaction tx(g);
  Conv2dParams p{{1, params.stride},
                 {0, params.padding},
                 {1, params.dilation},
                 params.groups};
  Tensor y = squeeze(
      conv2d(unsqueeze(x, 2, loc), unsqueeze(weight, 2, loc), bias, p, loc), 2,
      loc);
  tx.commit();
  return y;
}

Tensor locus::detail::recordPool2d(const Tensor &x, const Pool2dParams &params,
                                   bool max, const Here &loc) {
  return max ? pool<MaxPool2dOp>(x, params, loc)
             : pool<AvgPool2dOp>(x, params, loc);
}

Tensor locus::mse_loss(const Tensor &input, const Tensor &target,
                       Reduction reduction, Here loc) {
  GraphImpl &g = GraphImpl::of(input, loc);
  Transaction tx(g);
  mlir::Value result = g.record<MseLossOp>(
      loc, g.value(input, loc), g.value(target, loc), reductionKind(reduction));
  tx.commit();
  return g.wrap(result);
}

Tensor locus::cross_entropy(const Tensor &logits, const Tensor &labels,
                            Reduction reduction, Here loc) {
  GraphImpl &g = GraphImpl::of(logits, loc);
  Transaction tx(g);
  requireFloat<CrossEntropyOp>(g.value(logits, loc), "the logits", loc);
  GraphImpl::requireDType(g.value(labels, loc), DType::i64, "cross_entropy",
                          "the labels", loc);
  mlir::Value result =
      g.record<CrossEntropyOp>(loc, g.value(logits, loc), g.value(labels, loc),
                               reductionKind(reduction));
  tx.commit();
  return g.wrap(result);
}

Tensor locus::one_hot(const Tensor &labels, int64_t numClasses, DType dtype,
                      Here loc) {
  GraphImpl &g = GraphImpl::of(labels, loc);
  Transaction tx(g);
  GraphImpl::requireDType(g.value(labels, loc), DType::i64, "one_hot",
                          "the labels", loc);
  if (numClasses < 1)
    throw userError(loc, "one_hot: num_classes " + std::to_string(numClasses) +
                             " must be positive");
  mlir::Value hot = g.record<OneHotOp>(loc, g.value(labels, loc),
                                       static_cast<uint64_t>(numClasses));
  tx.commit();
  return cast(g.wrap(hot), dtype, loc);
}

//===----------------------------------------------------------------------===//
// Types, minimum, indexing
//===----------------------------------------------------------------------===//

Tensor locus::cast(const Tensor &x, DType dtype, Here loc) {
  GraphImpl &g = GraphImpl::of(x, loc);
  mlir::Value v = g.value(x, loc);
  if (GraphImpl::dtypeOfValue(v) == dtype)
    return x;
  Transaction tx(g);
  mlir::Type element = g.tensorType({}, dtype, loc).getElementType();
  mlir::Value result = g.record<CastOp>(loc, v, mlir::TypeAttr::get(element));
  tx.commit();
  return g.wrap(result);
}

Tensor locus::minimum(const Tensor &a, const Tensor &b, Here loc) {
  return binary<MinimumOp>(a, b, loc);
}
Tensor locus::fmod(const Tensor &a, const Tensor &b, Here loc) {
  return binary<FmodOp>(a, b, loc);
}

Tensor locus::min(const Tensor &x, const std::vector<int64_t> &axes,
                  bool keepdim, Here loc) {
  return reduce<MinOp>(x, axes, keepdim, loc);
}

/// `index` as i64 indices: i32 ones are widened, as PyTorch takes both.
static mlir::Value indicesOf(GraphImpl &g, const Tensor &index,
                             llvm::StringRef op, const std::string &what,
                             const Here &loc) {
  mlir::Value vi = g.value(index, loc);
  if (GraphImpl::dtypeOfValue(vi) == DType::i32)
    return g.value(cast(index, DType::i64, loc), loc);
  GraphImpl::requireDType(vi, DType::i64, op, what, loc);
  return vi;
}

Tensor locus::index_select(const Tensor &x, int64_t axis, const Tensor &index,
                           Here loc) {
  GraphImpl &g = GraphImpl::of(x, loc);
  Transaction tx(g);
  mlir::Value v = g.value(x, loc);
  mlir::Value vi = indicesOf(g, index, "index_select", "the index", loc);
  if (GraphImpl::shapeOf(vi).size() > 1)
    throw userError(loc, "index_select takes a 1-D index, got " +
                             formatShape(GraphImpl::shapeOf(vi)) +
                             "; locus::embedding takes any shape");
  if (GraphImpl::shapeOf(v).empty())
    throw userError(loc, "index_select cannot pick from a 0-d tensor");
  int64_t a = g.normalizeAxis(axis, v, "index_select", loc);
  mlir::Value result =
      g.record<GatherOp>(loc, v, vi, g.builder.getI64IntegerAttr(a));
  tx.commit();
  return g.wrap(result);
}

Tensor locus::embedding(const Tensor &indices, const Tensor &weight, Here loc) {
  GraphImpl &g = GraphImpl::of(weight, loc);
  Transaction tx(g);
  mlir::Value vw = g.value(weight, loc);
  mlir::Value vi = indicesOf(g, indices, "embedding", "the indices", loc);
  if (GraphImpl::shapeOf(vw).size() != 2)
    throw userError(loc, "embedding takes a weight [num_embeddings, "
                         "embedding_dim], got " +
                             formatShape(GraphImpl::shapeOf(vw)));
  mlir::Value result =
      g.record<GatherOp>(loc, vw, vi, g.builder.getI64IntegerAttr(0));
  tx.commit();
  return g.wrap(result);
}

//===----------------------------------------------------------------------===//
// Random numbers
//===----------------------------------------------------------------------===//

namespace {

/// The device `value` is made on by PyTorch's rules (what the strict policy
/// follows): a move's device, a source's own, or that of the first operand
/// that is no constant. Null for the CPU's default and for constants.
DeviceAttr madeOn(mlir::Value value) {
  while (mlir::Operation *op = value.getDefiningOp()) {
    if (auto to = mlir::dyn_cast<ToOp>(op))
      return to.getDevice();
    if (mlir::isa<InputOp, StateOp, ConstantOp>(op))
      return op->getAttrOfType<DeviceAttr>("device");
    auto operands = op->getOperands();
    auto it = llvm::find_if(
        operands, [](mlir::Value v) { return !v.getDefiningOp<ConstantOp>(); });
    if (it == operands.end())
      return DeviceAttr();
    value = *it;
  }
  return DeviceAttr();
}

/// Records a locus.random of `shape` with the next call's seed, on the run
/// counter (moved to `device` first, a pin, when there is one). The caller
/// commits, then counts the call (GraphImpl::rngCalls). With dynamic sizes
/// the draws take `dims` (those of the value they are for): each run draws
/// at its own shape, as a static compile of that shape does.
mlir::Value recordRandom(GraphImpl &g, Distribution distribution,
                         const Shape &shape, DeviceAttr device, const Here &loc,
                         const DimExprs *dims = nullptr) {
  (void)g.tensorType(shape, DType::f32, loc); // negative dimensions
  mlir::Value step = g.runCounter(loc);
  if (device)
    step = g.record<ToOp>(loc, step, device);
  uint64_t seed = g.seedFor("rng" + std::to_string(g.rngCalls));
  return g
      .recordOpWithDims<RandomOp>(
          loc, dims ? g.dimsAttr(*dims) : mlir::Attribute(), step,
          DistributionAttr::get(&g.context, distribution),
          g.builder.getDenseI64ArrayAttr(shape),
          g.builder.getI64IntegerAttr(static_cast<int64_t>(seed)))
      ->getResult(0);
}

Tensor draw(Graph &graph, Distribution distribution, const Shape &shape,
            const std::optional<Device> &device, const Here &loc) {
  GraphImpl &g = graph.impl();
  Transaction tx(g);
  mlir::Value result =
      recordRandom(g, distribution, shape,
                   device ? g.deviceAttr(*device) : DeviceAttr(), loc);
  tx.commit();
  ++g.rngCalls;
  return g.wrap(result);
}

/// A 0-d f32 constant broadcast to `shape`, of `dims` with dynamic sizes
/// (those of the value dropout or bernoulli draws for).
mlir::Value splat(GraphImpl &g, float value, const Shape &shape,
                  const Here &loc, const DimExprs *dims = nullptr) {
  auto type = mlir::RankedTensorType::get({}, g.builder.getF32Type());
  mlir::Value c = g.record<ConstantOp>(
      loc,
      mlir::cast<mlir::ElementsAttr>(mlir::DenseElementsAttr::get(type, value)),
      DeviceAttr());
  return g.broadcastTo(c, shape, loc, dims);
}

/// `value` as an f32 tensor; an Error naming `what` otherwise.
mlir::Value f32Operand(GraphImpl &g, const Tensor &tensor, const char *what,
                       const Here &loc) {
  mlir::Value v = g.value(tensor, loc);
  if (!mlir::cast<mlir::RankedTensorType>(v.getType()).getElementType().isF32())
    throw userError(loc, std::string(what) + " needs an f32 tensor, got " +
                             dtypeName(tensor.dtype()));
  return v;
}

} // namespace

Tensor locus::rand(Graph &graph, const Shape &shape, Here loc) {
  return draw(graph, Distribution::uniform, shape, std::nullopt, loc);
}
Tensor locus::rand(Graph &graph, const Shape &shape, const Device &device,
                   Here loc) {
  return draw(graph, Distribution::uniform, shape, device, loc);
}
Tensor locus::randn(Graph &graph, const Shape &shape, Here loc) {
  return draw(graph, Distribution::normal, shape, std::nullopt, loc);
}
Tensor locus::randn(Graph &graph, const Shape &shape, const Device &device,
                    Here loc) {
  return draw(graph, Distribution::normal, shape, device, loc);
}

Tensor locus::bernoulli(const Tensor &p, Here loc) {
  GraphImpl &g = GraphImpl::of(p, loc);
  mlir::Value vp = f32Operand(g, p, "bernoulli", loc);
  Shape shape = GraphImpl::shapeOf(vp);
  DimExprs dims = g.dimsOf(vp);
  Transaction tx(g);
  mlir::Value u =
      recordRandom(g, Distribution::uniform, shape, madeOn(vp), loc, &dims);
  // torch.bernoulli: 1 where u < p.
  mlir::Value hit = g.record<CmpOp>(loc, CmpPredicate::lt, u, vp);
  mlir::Value result =
      g.record<SelectOp>(loc, hit, splat(g, 1.0f, shape, loc, &dims),
                         splat(g, 0.0f, shape, loc, &dims));
  tx.commit();
  ++g.rngCalls;
  return g.wrap(result);
}

Tensor locus::dropout(const Tensor &x, double p, bool training, Here loc) {
  if (!(p >= 0 && p <= 1))
    throw userError(loc, "dropout probability has to be between 0 and 1, "
                         "but got " +
                             numberText(p));
  GraphImpl &g = GraphImpl::of(x, loc);
  mlir::Value vx = f32Operand(g, x, "dropout", loc);
  if (p == 0 || !training)
    return x;
  Shape shape = GraphImpl::shapeOf(vx);
  DimExprs dims = g.dimsOf(vx);
  Transaction tx(g);
  // In evaluation the product is its operand 0, x (--locus-select-mode).
  auto identityInEval = [&](mlir::Value product) {
    product.getDefiningOp()->setAttr(kEvalOperandAttrName,
                                     g.builder.getI64IntegerAttr(0));
    return product;
  };
  if (p == 1) {
    // PyTorch's x * 0: no draw, and NaN stays NaN.
    mlir::Value result = identityInEval(
        g.record<MulOp>(loc, vx, splat(g, 0.0f, shape, loc, &dims)));
    tx.commit();
    return g.wrap(result);
  }
  // As ATen's _dropout_impl: noise = bernoulli(1 - p) / (1 - p) in f32,
  // then x * noise; an element is kept when u >= p.
  mlir::Value u =
      recordRandom(g, Distribution::uniform, shape, madeOn(vx), loc, &dims);
  mlir::Value keep =
      g.record<CmpOp>(loc, CmpPredicate::ge, u,
                      splat(g, static_cast<float>(p), shape, loc, &dims));
  float scale = 1.0f / static_cast<float>(1.0 - p);
  mlir::Value noise =
      g.record<SelectOp>(loc, keep, splat(g, scale, shape, loc, &dims),
                         splat(g, 0.0f, shape, loc, &dims));
  mlir::Value result = identityInEval(g.record<MulOp>(loc, vx, noise));
  tx.commit();
  ++g.rngCalls;
  return g.wrap(result);
}
