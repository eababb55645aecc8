//===- Lowering.h - the builder of --locus-lower-to-linalg ------*- C++ -*-===//
//
// What the files of --locus-lower-to-linalg share: `Lowering`, which builds
// linalg, tensor, arith and math ops on tensors at one location, and the
// lowerings of the op families that live in a file of their own (Nn.cpp:
// matrix products, convolutions, pooling, losses and their gradients;
// Training.cpp: optimizers and random numbers). LowerToLinalg.cpp holds the
// elementwise, layout and reduction lowerings, the patterns and the pass.
// Private to the pass.
//
//===----------------------------------------------------------------------===//

#ifndef LOCUS_LIB_PASSES_LOWERTOLINALG_LOWERING_H
#define LOCUS_LIB_PASSES_LOWERTOLINALG_LOWERING_H

#include "locus/Dialect/DynamicDims.h"
#include "locus/Dialect/LocusDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/ReshapeOpsUtils.h"
#include "mlir/IR/AffineMap.h"
#include "mlir/IR/Builders.h"

#include <limits>

namespace locus::lowering {

// The lowerings read as MLIR code: its names, unqualified, inside this
// namespace only (the header is private to the pass).
using namespace mlir;
using utils::IteratorType;
using BodyFn = function_ref<Value(OpBuilder &, Location, ValueRange)>;

class Lowering {
public:
  Lowering(OpBuilder &b, Location loc) : b(b), loc(loc) {}

  RankedTensorType typeOf(Value v) {
    return cast<RankedTensorType>(v.getType());
  }

  Value constantF32(double value) {
    return b.create<arith::ConstantOp>(loc, b.getF32FloatAttr(value));
  }

  Value filled(RankedTensorType type, double value) {
    Value empty =
        b.create<tensor::EmptyOp>(loc, type.getShape(), type.getElementType());
    return b
        .create<linalg::FillOp>(loc, ValueRange{constantF32(value)},
                                ValueRange{empty})
        .getResult(0);
  }

  Value empty(RankedTensorType type) {
    return b.create<tensor::EmptyOp>(loc, type.getShape(),
                                     type.getElementType());
  }

  /// A linalg.generic writing `init` (of `type`); `body` gets the input
  /// elements then the current output element and returns the new one.
  Value generic(RankedTensorType type, ValueRange inputs,
                ArrayRef<AffineMap> inputMaps, Value init, AffineMap outMap,
                ArrayRef<IteratorType> iterators, BodyFn body) {
    SmallVector<AffineMap> maps(inputMaps);
    maps.push_back(outMap);
    auto op = b.create<linalg::GenericOp>(
        loc, TypeRange{type}, inputs, ValueRange{init}, maps, iterators,
        [&](OpBuilder &nb, Location nl, ValueRange args) {
          nb.create<linalg::YieldOp>(nl, body(nb, nl, args));
        });
    return op.getResult(0);
  }

  /// Elementwise over tensors of one shape (all parallel, identity maps).
  Value elementwise(RankedTensorType type, ValueRange inputs, BodyFn body) {
    unsigned rank = type.getRank();
    AffineMap id = b.getMultiDimIdentityMap(rank);
    SmallVector<AffineMap> maps(inputs.size(), id);
    SmallVector<IteratorType> iters(rank, IteratorType::parallel);
    return generic(type, inputs, maps, empty(type), id, iters, body);
  }

  /// `value` (any element type) read as the target shape, numpy-style.
  Value broadcast(Value value, RankedTensorType target) {
    RankedTensorType source = typeOf(value);
    if (source == target)
      return value;
    unsigned rank = target.getRank(), lead = rank - source.getRank();
    SmallVector<AffineExpr> exprs;
    for (unsigned i = 0; i < source.getRank(); ++i)
      exprs.push_back(source.getDimSize(i) == 1 &&
                              target.getDimSize(lead + i) != 1
                          ? b.getAffineConstantExpr(0)
                          : b.getAffineDimExpr(lead + i));
    AffineMap in = AffineMap::get(rank, 0, exprs, b.getContext());
    SmallVector<IteratorType> iters(rank, IteratorType::parallel);
    return generic(
        target, ValueRange{value}, {in}, empty(target),
        b.getMultiDimIdentityMap(rank), iters,
        [](OpBuilder &, Location, ValueRange args) { return args[0]; });
  }

  /// Reduces `axes` of `input` with `combine`, starting from `initValue`.
  /// The result drops the axes (keepdim is a reshape afterwards).
  Value
  reduce(Value input, ArrayRef<int64_t> axes, double initValue,
         function_ref<Value(OpBuilder &, Location, Value, Value)> combine) {
    RankedTensorType type = typeOf(input);
    unsigned rank = type.getRank();
    SmallVector<int64_t> shape;
    SmallVector<AffineExpr> outExprs;
    SmallVector<IteratorType> iters;
    for (unsigned d = 0; d < rank; ++d) {
      bool reduced = llvm::is_contained(axes, d);
      iters.push_back(reduced ? IteratorType::reduction
                              : IteratorType::parallel);
      if (!reduced) {
        shape.push_back(type.getDimSize(d));
        outExprs.push_back(b.getAffineDimExpr(d));
      }
    }
    auto outType = RankedTensorType::get(shape, type.getElementType());
    AffineMap outMap = AffineMap::get(rank, 0, outExprs, b.getContext());
    return generic(outType, ValueRange{input}, {b.getMultiDimIdentityMap(rank)},
                   filled(outType, initValue), outMap, iters,
                   [&](OpBuilder &nb, Location nl, ValueRange args) {
                     return combine(nb, nl, args[0], args[1]);
                   });
  }

  /// Any static reshape, as views bufferization keeps without copies:
  /// collapse to one dimension, then expand to the target (either step is
  /// left out when it has nothing to do). Scalars go through tensor.reshape.
  Value reshape(Value value, RankedTensorType target) {
    RankedTensorType source = typeOf(value);
    if (source == target)
      return value;
    if (source.getRank() == 0 || target.getRank() == 0) {
      SmallVector<int64_t> dims(target.getShape());
      auto shapeType = RankedTensorType::get(
          {static_cast<int64_t>(dims.size())}, b.getIndexType());
      SmallVector<Attribute> attrs;
      for (int64_t d : dims)
        attrs.push_back(b.getIndexAttr(d));
      Value shape = b.create<arith::ConstantOp>(
          loc, DenseElementsAttr::get(shapeType, attrs));
      return b.create<tensor::ReshapeOp>(loc, target, value, shape);
    }
    // One collapse or expansion by groups where the shapes allow it: the
    // groups keep which dimensions become which, which kernels with
    // dynamic sizes follow ([batch, 2, seq, 16] into [2*batch, seq, 16]);
    // through one flat dimension the bounds alone might not tell.
    if (source.getRank() > target.getRank())
      if (auto groups = getReassociationIndicesForCollapse(source.getShape(),
                                                           target.getShape()))
        return b.create<tensor::CollapseShapeOp>(loc, target, value, *groups);
    if (source.getRank() < target.getRank())
      if (auto groups = getReassociationIndicesForCollapse(target.getShape(),
                                                           source.getShape()))
        return b.create<tensor::ExpandShapeOp>(loc, target, value, *groups);
    auto all = [](int64_t rank) {
      ReassociationIndices group;
      for (int64_t i = 0; i < rank; ++i)
        group.push_back(i);
      return SmallVector<ReassociationIndices>{group};
    };
    Value flat = value;
    if (source.getRank() != 1) {
      auto flatType = RankedTensorType::get({source.getNumElements()},
                                            source.getElementType());
      flat = b.create<tensor::CollapseShapeOp>(loc, flatType, value,
                                               all(source.getRank()));
    }
    if (target.getRank() == 1)
      return flat;
    return b.create<tensor::ExpandShapeOp>(loc, target, flat,
                                           all(target.getRank()));
  }

  /// A slice's offset in dimension `d` of `of`: `offset`, or for one
  /// below zero that many back from the end (tensor.dim, which
  /// --locus-dynamic-kernels makes the run's size in a dynamic dimension).
  OpFoldResult offsetIn(Value of, int64_t d, int64_t offset) {
    if (offset >= 0)
      return b.getIndexAttr(offset);
    int64_t size = typeOf(of).getDimSize(d);
    if (!inDynamicKernel())
      return b.getIndexAttr(size + offset);
    Value end = b.create<tensor::DimOp>(loc, of, d);
    return b
        .create<arith::AddIOp>(loc, end,
                               b.create<arith::ConstantIndexOp>(loc, offset))
        .getResult();
  }

  /// `value` divided by how many elements of `of` lie along `axes`: a
  /// constant factor, or in a kernel with dynamic sizes the count at run
  /// time (tensor.dim, which --locus-dynamic-kernels makes dynamic).
  Value divideByCount(Value value, Value of, ArrayRef<int64_t> axes) {
    RankedTensorType type = typeOf(of);
    int64_t count = 1;
    for (int64_t axis : axes)
      count *= type.getDimSize(axis);
    if (!inDynamicKernel())
      return scale(value, 1.0 / static_cast<double>(count));
    Value n = b.create<arith::ConstantIndexOp>(loc, 1);
    for (int64_t axis : axes)
      n = b.create<arith::MulIOp>(loc, n,
                                  b.create<tensor::DimOp>(loc, of, axis));
    Value f = b.create<arith::UIToFPOp>(
        loc, b.getF32Type(),
        b.create<arith::IndexCastUIOp>(loc, b.getI64Type(), n));
    return elementwise(typeOf(value), ValueRange{value},
                       [&](OpBuilder &nb, Location nl, ValueRange args) {
                         return nb.create<arith::DivFOp>(nl, args[0], f);
                       });
  }

  /// Whether the kernel being lowered has dynamic sizes (its function
  /// carries locus.symbols).
  bool inDynamicKernel() {
    Operation *parent = b.getInsertionBlock()->getParentOp();
    while (parent && !isa<func::FuncOp>(parent))
      parent = parent->getParentOp();
    return parent && parent->hasAttr(kSymbolsAttrName);
  }

  Value scale(Value value, double factor) {
    Value f = constantF32(factor);
    return elementwise(typeOf(value), ValueRange{value},
                       [&](OpBuilder &nb, Location nl, ValueRange args) {
                         return nb.create<arith::MulFOp>(nl, args[0], f);
                       });
  }

  static Value add(OpBuilder &nb, Location nl, Value a, Value c) {
    return nb.create<arith::AddFOp>(nl, a, c);
  }
  static Value max(OpBuilder &nb, Location nl, Value a, Value c) {
    return nb.create<arith::MaximumFOp>(nl, a, c);
  }
  static Value min(OpBuilder &nb, Location nl, Value a, Value c) {
    return nb.create<arith::MinimumFOp>(nl, a, c);
  }

  /// log_softmax (or softmax) along `axis`, stably.
  Value softmax(Value x, int64_t axis, bool log) {
    RankedTensorType type = typeOf(x);
    SmallVector<int64_t> keep(type.getShape());
    keep[axis] = 1;
    auto keepType = RankedTensorType::get(keep, type.getElementType());
    Value maxv = reshape(
        reduce(x, {axis}, -std::numeric_limits<double>::infinity(), max),
        keepType);
    Value shifted =
        elementwise(type, ValueRange{x, broadcast(maxv, type)},
                    [](OpBuilder &nb, Location nl, ValueRange a) {
                      return nb.create<arith::SubFOp>(nl, a[0], a[1]);
                    });
    Value exps = elementwise(type, ValueRange{shifted},
                             [](OpBuilder &nb, Location nl, ValueRange a) {
                               return nb.create<math::ExpOp>(nl, a[0]);
                             });
    Value sums =
        broadcast(reshape(reduce(exps, {axis}, 0.0, add), keepType), type);
    if (log)
      return elementwise(type, ValueRange{shifted, sums},
                         [](OpBuilder &nb, Location nl, ValueRange a) {
                           Value l = nb.create<math::LogOp>(nl, a[1]);
                           return nb.create<arith::SubFOp>(nl, a[0], l);
                         });
    return elementwise(type, ValueRange{exps, sums},
                       [](OpBuilder &nb, Location nl, ValueRange a) {
                         return nb.create<arith::DivFOp>(nl, a[0], a[1]);
                       });
  }

  /// Sum of all elements, or their mean, as tensor<f32>.
  Value total(Value x, ReductionKind reduction) {
    RankedTensorType type = typeOf(x);
    SmallVector<int64_t> axes;
    for (int64_t d = 0; d < type.getRank(); ++d)
      axes.push_back(d);
    Value sum = reduce(x, axes, 0.0, add);
    if (reduction == ReductionKind::sum)
      return sum;
    return divideByCount(sum, x, axes);
  }

  /// Pads the two spatial dimensions of an NCHW tensor with `value`.
  Value padSpatial(Value x, ArrayRef<int64_t> padding, double value) {
    if (padding[0] == 0 && padding[1] == 0)
      return x;
    RankedTensorType type = typeOf(x);
    SmallVector<int64_t> shape(type.getShape());
    shape[2] += 2 * padding[0];
    shape[3] += 2 * padding[1];
    auto padded = RankedTensorType::get(shape, type.getElementType());
    SmallVector<OpFoldResult> low{b.getIndexAttr(0), b.getIndexAttr(0),
                                  b.getIndexAttr(padding[0]),
                                  b.getIndexAttr(padding[1])};
    return b.create<tensor::PadOp>(loc, padded, x, low, low,
                                   constantF32(value));
  }

  OpBuilder &b;
  Location loc;
};

/// Whether the i64 `index` lies in [0, extent): what an indexing kernel
/// checks before it reads, so that it never reads outside the tensor.
inline Value inRange(OpBuilder &b, Location loc, Value index, int64_t extent) {
  Value zero = b.create<arith::ConstantOp>(loc, b.getI64IntegerAttr(0));
  Value limit = b.create<arith::ConstantOp>(loc, b.getI64IntegerAttr(extent));
  return b.create<arith::AndIOp>(
      loc, b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::sge, index, zero),
      b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::slt, index, limit));
}

/// One element converted from `from` to `to` by PyTorch's rules
/// (LowerToLinalg.cpp).
Value castElement(OpBuilder &nb, Location nl, Value x, Type from, Type to);

// Nn.cpp
Value lowerMatmul(Lowering &l, MatmulOp op);
Value lowerLinear(Lowering &l, LinearOp op);
Value lowerConv(Lowering &l, Conv2dOp op);
Value lowerConvInputGrad(Lowering &l, Conv2dInputGradOp op);
Value lowerConvWeightGrad(Lowering &l, Conv2dWeightGradOp op);
Value lowerMaxPool2d(Lowering &l, MaxPool2dOp op);
Value lowerAvgPool2d(Lowering &l, AvgPool2dOp op);
Value lowerMaxPoolGrad(Lowering &l, MaxPool2dGradOp op);
Value lowerCrossEntropy(Lowering &l, CrossEntropyOp op);
Value lowerOneHot(Lowering &l, OneHotOp op);
Value lowerSliceGrad(Lowering &l, SliceGradOp op);
Value lowerGatherGrad(Lowering &l, GatherGradOp op);
Value lowerGatherElementsGrad(Lowering &l, GatherElementsGradOp op);

// Training.cpp
SmallVector<Value> lowerSgd(Lowering &l, SgdOp op);
SmallVector<Value> lowerAdam(Lowering &l, AdamOp op);
SmallVector<Value> lowerBatchNormTrain(Lowering &l, BatchNormTrainOp op);
SmallVector<Value> lowerBatchNormTrainGrad(Lowering &l,
                                           BatchNormTrainGradOp op);
Value lowerRandom(Lowering &l, RandomOp op);

} // namespace locus::lowering

#endif // LOCUS_LIB_PASSES_LOWERTOLINALG_LOWERING_H
