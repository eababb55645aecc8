//===- Bounds.cpp - the bounds of a kernel's dynamic sizes ----------------===//
//
// In a CUDA kernel of a graph with dynamic sizes, every dynamic extent is
// computed on the host from the run's sizes, which the kernel reads from its
// sizes argument. A launch's strategy and the static types of the flat views
// a kernel indexes take the extent's upper bound: the largest value the
// computation can give when each size is at most its bound. Sizes and
// extents are never negative, so sums, products and quotients by positive
// constants of upper bounds are upper bounds.
//
//===----------------------------------------------------------------------===//

#include "Emitter.h"

#include "locus/Dialect/DynamicDims.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace locus::gpu_mapping {

namespace {

/// `expr`'s upper bound when each dim and symbol is at most `bounds` (dims
/// first); none for an expression that subtracts or divides by a variable.
std::optional<int64_t> exprBound(AffineExpr expr, ArrayRef<int64_t> bounds,
                                 unsigned dims) {
  if (auto c = dyn_cast<AffineConstantExpr>(expr))
    return c.getValue() >= 0 ? std::optional<int64_t>(c.getValue())
                             : std::nullopt;
  if (auto d = dyn_cast<AffineDimExpr>(expr))
    return bounds[d.getPosition()];
  if (auto s = dyn_cast<AffineSymbolExpr>(expr))
    return bounds[dims + s.getPosition()];
  auto bin = cast<AffineBinaryOpExpr>(expr);
  std::optional<int64_t> l = exprBound(bin.getLHS(), bounds, dims);
  if (!l)
    return std::nullopt;
  auto rhs = dyn_cast<AffineConstantExpr>(bin.getRHS());
  switch (expr.getKind()) {
  case AffineExprKind::Add:
  case AffineExprKind::Mul: {
    std::optional<int64_t> r = exprBound(bin.getRHS(), bounds, dims);
    if (!r)
      return std::nullopt;
    return expr.getKind() == AffineExprKind::Add ? *l + *r : *l * *r;
  }
  case AffineExprKind::FloorDiv:
  case AffineExprKind::CeilDiv:
    if (!rhs || rhs.getValue() <= 0)
      return std::nullopt;
    return (*l + (expr.getKind() == AffineExprKind::CeilDiv ? rhs.getValue() - 1
                                                            : 0)) /
           rhs.getValue();
  case AffineExprKind::Mod:
    if (!rhs || rhs.getValue() <= 0)
      return std::nullopt;
    return std::min(*l, rhs.getValue() - 1);
  default:
    return std::nullopt;
  }
}

} // namespace

SizeBounds::SizeBounds(func::FuncOp func) {
  auto index = func->getAttrOfType<IntegerAttr>(kSizesArgIndexAttrName);
  auto bounds = func->getAttrOfType<DenseI64ArrayAttr>(kSizeBoundsAttrName);
  if (!index || !bounds || index.getInt() < 0 ||
      index.getInt() >= static_cast<int64_t>(func.getNumArguments()))
    return;
  sizes = func.getArgument(static_cast<unsigned>(index.getInt()));
  bound.assign(bounds.asArrayRef().begin(), bounds.asArrayRef().end());
}

bool SizeBounds::readsSizes(Operation *op) const {
  auto load = dyn_cast<memref::LoadOp>(op);
  return sizes && load && load.getMemref() == sizes;
}

std::optional<int64_t> SizeBounds::of(OpFoldResult value) const {
  if (std::optional<int64_t> c = getConstantIntValue(value))
    return *c >= 0 ? c : std::nullopt;
  return of(cast<Value>(value));
}

std::optional<int64_t> SizeBounds::of(Value value) const {
  Operation *def = value.getDefiningOp();
  if (!def)
    return std::nullopt;
  if (std::optional<int64_t> c = getConstantIntValue(value))
    return *c >= 0 ? c : std::nullopt;
  if (auto load = dyn_cast<memref::LoadOp>(def)) {
    std::optional<int64_t> k =
        load.getIndices().size() == 1
            ? getConstantIntValue(load.getIndices().front())
            : std::nullopt;
    if (!readsSizes(def) || !k || *k < 0 ||
        *k >= static_cast<int64_t>(bound.size()))
      return std::nullopt;
    return bound[static_cast<size_t>(*k)];
  }
  if (isa<arith::IndexCastOp, arith::IndexCastUIOp>(def))
    return of(def->getOperand(0));
  if (auto dim = dyn_cast<memref::DimOp>(def)) {
    std::optional<int64_t> d = dim.getConstantIndex();
    return d ? dimOf(dim.getSource(), static_cast<unsigned>(*d)) : std::nullopt;
  }
  if (isa<arith::AddIOp, arith::MulIOp, arith::MaxUIOp, arith::SelectOp>(def)) {
    // A select's bound is its larger choice's.
    unsigned first = isa<arith::SelectOp>(def) ? 1 : 0;
    std::optional<int64_t> l = of(def->getOperand(first)),
                           r = of(def->getOperand(first + 1));
    if (!l || !r)
      return std::nullopt;
    if (isa<arith::AddIOp>(def))
      return *l + *r;
    return isa<arith::MulIOp>(def) ? *l * *r : std::max(*l, *r);
  }
  if (isa<arith::MinUIOp, arith::MinSIOp>(def)) {
    std::optional<int64_t> l = of(def->getOperand(0)),
                           r = of(def->getOperand(1));
    if (l && r)
      return std::min(*l, *r);
    return l ? l : r;
  }
  if (isa<arith::DivUIOp, arith::CeilDivUIOp>(def)) {
    std::optional<int64_t> l = of(def->getOperand(0));
    std::optional<int64_t> r = getConstantIntValue(def->getOperand(1));
    if (!l || !r || *r <= 0)
      return std::nullopt;
    return (*l + (isa<arith::CeilDivUIOp>(def) ? *r - 1 : 0)) / *r;
  }
  if (auto apply = dyn_cast<affine::AffineApplyOp>(def))
    return ofMap(apply.getAffineMap(), apply.getMapOperands());
  if (auto min = dyn_cast<affine::AffineMinOp>(def)) {
    std::optional<int64_t> least;
    for (AffineExpr e : min.getAffineMap().getResults())
      if (std::optional<int64_t> b =
              ofMap(AffineMap::get(min.getAffineMap().getNumDims(),
                                   min.getAffineMap().getNumSymbols(), e),
                    min.getMapOperands()))
        least = least ? std::min(*least, *b) : *b;
    return least;
  }
  return std::nullopt;
}

std::optional<int64_t> SizeBounds::ofMap(AffineMap map,
                                         ValueRange operands) const {
  SmallVector<int64_t> bounds;
  for (Value v : operands) {
    std::optional<int64_t> b = of(v);
    if (!b)
      return std::nullopt;
    bounds.push_back(*b);
  }
  return exprBound(map.getResult(0), bounds, map.getNumDims());
}

std::optional<int64_t> SizeBounds::dimOf(Value memref, unsigned d) const {
  auto type = dyn_cast<MemRefType>(memref.getType());
  if (!type || d >= type.getRank())
    return std::nullopt;
  if (!type.isDynamicDim(d))
    return type.getDimSize(d);
  Operation *def = memref.getDefiningOp();
  if (!def)
    return std::nullopt;
  if (isa<memref::AllocOp, memref::AllocaOp>(def)) {
    // The dynamic sizes, in order, are the operands before any symbol.
    unsigned k = 0;
    for (unsigned i = 0; i < d; ++i)
      k += type.isDynamicDim(i) ? 1 : 0;
    return of(def->getOperand(k));
  }
  if (auto sub = dyn_cast<memref::SubViewOp>(def)) {
    if (sub.getType().getRank() != sub.getSourceType().getRank())
      return std::nullopt;
    return of(sub.getMixedSizes()[d]);
  }
  if (auto expand = dyn_cast<memref::ExpandShapeOp>(def)) {
    Builder b(expand.getContext());
    return of(getMixedValues(expand.getStaticOutputShape(),
                             expand.getOutputShape(), b)[d]);
  }
  if (auto collapse = dyn_cast<memref::CollapseShapeOp>(def)) {
    int64_t product = 1;
    for (int64_t i : collapse.getReassociationIndices()[d]) {
      std::optional<int64_t> b =
          dimOf(collapse.getSrc(), static_cast<unsigned>(i));
      if (!b)
        return std::nullopt;
      product *= *b;
    }
    return product;
  }
  if (auto cast = dyn_cast<memref::ReinterpretCastOp>(def))
    return of(cast.getMixedSizes()[d]);
  if (auto cast = dyn_cast<memref::CastOp>(def))
    return dimOf(cast.getSource(), d);
  return std::nullopt;
}

std::optional<int64_t> SizeBounds::elementsBehind(Value memref) const {
  while (true) {
    if (auto view = memref.getDefiningOp<ViewLikeOpInterface>())
      memref = view.getViewSource();
    else if (auto meta =
                 memref.getDefiningOp<memref::ExtractStridedMetadataOp>())
      memref = meta.getSource();
    else
      break;
  }
  auto type = dyn_cast<MemRefType>(memref.getType());
  if (!type)
    return std::nullopt;
  int64_t count = 1;
  for (int64_t d = 0; d < type.getRank(); ++d) {
    std::optional<int64_t> b = dimOf(memref, static_cast<unsigned>(d));
    if (!b)
      return std::nullopt;
    count *= *b;
  }
  return count;
}

} // namespace locus::gpu_mapping
