//===- LowerToLinalg.cpp - --locus-lower-to-linalg ------------------------===//
//
// Rewrites every computing locus op into linalg, tensor, arith and math ops on
// tensors, the form both code generators start from (host: bufferize, loops,
// LLVM; CUDA: parallel loops, gpu, NVVM). Sources, outputs and moves between
// devices stay in a graph: they are the plan's business, not a kernel's.
//
// A dialect conversion: one pattern per op (a template per family), and a
// target in which every other locus op is illegal, so that an op without a
// lowering is an error at its location, not a leftover.
//
//===----------------------------------------------------------------------===//

#include "locus/Passes/LowerToLinalg.h"
#include "locus/Passes/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/AffineMap.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/DialectConversion.h"

#include <array>
#include <cmath>
#include <limits>

namespace locus {
#define GEN_PASS_DEF_LOCUSLOWERTOLINALG
#include "locus/Passes/Passes.h.inc"
} // namespace locus

using namespace mlir;
using namespace locus;

namespace {

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
    return scale(sum, 1.0 / static_cast<double>(type.getNumElements()));
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

/// im2col of a padded NCHW input for a convolution with `w`'s kernel giving
/// `out`: cols[c, kh, kw, n, oh, ow] = x[n, c, oh*s + kh*d, ow*s + kw*d].
Value im2col(Lowering &l, Value x, RankedTensorType w, RankedTensorType out,
             ArrayRef<int64_t> stride, ArrayRef<int64_t> dilation) {
  OpBuilder &b = l.b;
  Type f32 = out.getElementType();
  int64_t n = out.getDimSize(0), oh = out.getDimSize(2), ow = out.getDimSize(3),
          c = w.getDimSize(1), kh = w.getDimSize(2), kw = w.getDimSize(3);
  MLIRContext *ctx = b.getContext();
  AffineExpr dc = b.getAffineDimExpr(0), dkh = b.getAffineDimExpr(1),
             dkw = b.getAffineDimExpr(2), dn = b.getAffineDimExpr(3),
             doh = b.getAffineDimExpr(4), dow = b.getAffineDimExpr(5);
  AffineMap gather =
      AffineMap::get(6, 0,
                     {dn, dc, doh * stride[0] + dkh * dilation[0],
                      dow * stride[1] + dkw * dilation[1]},
                     ctx);
  auto colsType = RankedTensorType::get({c, kh, kw, n, oh, ow}, f32);
  return l.generic(colsType, ValueRange{x}, {gather}, l.empty(colsType),
                   b.getMultiDimIdentityMap(6),
                   SmallVector<IteratorType>(6, IteratorType::parallel),
                   [](OpBuilder &, Location, ValueRange a) { return a[0]; });
}

/// groups == 1: im2col, then one matrix product (which the host pipeline
/// sends to BLAS), in the layout that keeps the innermost loops contiguous:
/// cols[c, kh, kw, n, oh, ow] = x[n, c, oh*s + kh*d, ow*s + kw*d] (the gather
/// runs along ow), read as [C*KH*KW, N*OH*OW]; the weight as [O, C*KH*KW]
/// times it gives [O, N*OH*OW], and moving whole rows of OH*OW values (adding
/// the bias) gives NCHW.
Value lowerConvIm2col(Lowering &l, Conv2dOp op, Value x) {
  OpBuilder &b = l.b;
  RankedTensorType out = op.getType();
  RankedTensorType w = op.getWeight().getType();
  Type f32 = out.getElementType();
  int64_t n = out.getDimSize(0), o = out.getDimSize(1), oh = out.getDimSize(2),
          ow = out.getDimSize(3), c = w.getDimSize(1), kh = w.getDimSize(2),
          kw = w.getDimSize(3);
  MLIRContext *ctx = b.getContext();
  Value cols = im2col(l, x, w, out, op.getStride(), op.getDilation());
  auto colsMatrix = RankedTensorType::get({c * kh * kw, n * oh * ow}, f32);
  auto weightType = RankedTensorType::get({o, c * kh * kw}, f32);
  auto productType = RankedTensorType::get({o, n * oh * ow}, f32);
  // Zeros (the BLAS call then needs no initial value at all); the bias is
  // added on the way back to NCHW, where an elementwise epilogue fuses.
  Value product = b.create<linalg::MatmulOp>(
                       l.loc, TypeRange{productType},
                       ValueRange{l.reshape(op.getWeight(), weightType),
                                  l.reshape(cols, colsMatrix)},
                       ValueRange{l.filled(productType, 0.0)})
                      .getResult(0);
  Value onhw = l.reshape(product, RankedTensorType::get({o, n, oh, ow}, f32));
  AffineExpr e0 = b.getAffineDimExpr(0), e1 = b.getAffineDimExpr(1),
             e2 = b.getAffineDimExpr(2), e3 = b.getAffineDimExpr(3);
  SmallVector<Value> inputs{onhw};
  SmallVector<AffineMap> maps{AffineMap::get(4, 0, {e1, e0, e2, e3}, ctx)};
  if (Value bias = op.getBias()) {
    inputs.push_back(bias);
    maps.push_back(AffineMap::get(4, 0, {e1}, ctx));
  }
  return l.generic(out, inputs, maps, l.empty(out), b.getMultiDimIdentityMap(4),
                   SmallVector<IteratorType>(4, IteratorType::parallel),
                   [](OpBuilder &nb, Location nl, ValueRange a) -> Value {
                     if (a.size() == 3)
                       return nb.create<arith::AddFOp>(nl, a[0], a[1]);
                     return a[0];
                   });
}

/// The indexing of a grouped convolution's loop nest, given which loop is
/// which: the padded input at [n, (o floordiv outPerGroup) * inPerGroup + c,
/// oh*s + kh*d, ow*s + kw*d], the weight at [o, c, kh, kw], the result (or
/// its gradient) at [n, o, oh, ow]. The forward pass and the weight
/// gradient run the same nest in different loop orders.
struct GroupedConvMaps {
  AffineMap input, weight, result;
};
GroupedConvMaps groupedConvMaps(MLIRContext *ctx, ArrayRef<unsigned> loopOf,
                                int64_t outPerGroup, int64_t inPerGroup,
                                ArrayRef<int64_t> stride,
                                ArrayRef<int64_t> dilation) {
  // loopOf: the loop of n, o, oh, ow, c, kh, kw.
  auto d = [&](unsigned which) { return getAffineDimExpr(loopOf[which], ctx); };
  AffineExpr n = d(0), o = d(1), oh = d(2), ow = d(3), c = d(4), kh = d(5),
             kw = d(6);
  return {AffineMap::get(7, 0,
                         {n, o.floorDiv(outPerGroup) * inPerGroup + c,
                          oh * stride[0] + kh * dilation[0],
                          ow * stride[1] + kw * dilation[1]},
                         ctx),
          AffineMap::get(7, 0, {o, c, kh, kw}, ctx),
          AffineMap::get(7, 0, {n, o, oh, ow}, ctx)};
}

Value lowerConv(Lowering &l, Conv2dOp op) {
  OpBuilder &b = l.b;
  RankedTensorType out = op.getType();
  Value x = l.padSpatial(op.getInput(), op.getPadding(), 0.0);
  RankedTensorType w = op.getWeight().getType();
  int64_t groups = op.getGroups();
  if (groups == 1)
    return lowerConvIm2col(l, op, x);
  // Grouped: one loop nest over (n, o, oh, ow, c, kh, kw).
  int64_t outPerGroup = w.getDimSize(0) / groups, inPerGroup = w.getDimSize(1);
  ArrayRef<int64_t> stride = op.getStride(), dilation = op.getDilation();
  // Loops (n, o, oh, ow, c, kh, kw).
  GroupedConvMaps maps =
      groupedConvMaps(b.getContext(), {0, 1, 2, 3, 4, 5, 6}, outPerGroup,
                      inPerGroup, stride, dilation);
  Value init =
      op.getBias()
          ? l.broadcast(l.reshape(op.getBias(),
                                  RankedTensorType::get({w.getDimSize(0), 1, 1},
                                                        out.getElementType())),
                        out)
          : l.filled(out, 0.0);
  SmallVector<IteratorType> iters(4, IteratorType::parallel);
  iters.append(3, IteratorType::reduction);
  return l.generic(out, ValueRange{x, op.getWeight()},
                   {maps.input, maps.weight}, init, maps.result, iters,
                   [](OpBuilder &nb, Location nl, ValueRange a) {
                     Value m = nb.create<arith::MulFOp>(nl, a[0], a[1]);
                     return nb.create<arith::AddFOp>(nl, a[2], m);
                   });
}

/// The iterators of loops (n, c, kh, kw, oh, ow), the window loops outside:
/// how pooling and its gradient run.
SmallVector<IteratorType> windowOutsideIterators() {
  return {IteratorType::parallel,  IteratorType::parallel,
          IteratorType::reduction, IteratorType::reduction,
          IteratorType::parallel,  IteratorType::parallel};
}

/// Pooling as one generic whose loops run (n, c, kh, kw, oh, ow): the window
/// loops outside, so the innermost loop walks a row of the output (and a
/// strided row of the input) and vectorises; linalg's pooling ops put the
/// window innermost.
template <typename PoolOp> Value lowerPool(Lowering &l, PoolOp op, bool isMax) {
  OpBuilder &b = l.b;
  RankedTensorType out = op.getType();
  ArrayRef<int64_t> stride = op.getStride();
  double pad = isMax ? -std::numeric_limits<double>::infinity() : 0.0;
  Value x = l.padSpatial(op.getInput(), op.getPadding(), pad);
  MLIRContext *ctx = b.getContext();
  AffineExpr dn = b.getAffineDimExpr(0), dc = b.getAffineDimExpr(1),
             dkh = b.getAffineDimExpr(2), dkw = b.getAffineDimExpr(3),
             doh = b.getAffineDimExpr(4), dow = b.getAffineDimExpr(5);
  AffineMap in = AffineMap::get(
      6, 0, {dn, dc, doh * stride[0] + dkh, dow * stride[1] + dkw}, ctx);
  AffineMap outMap = AffineMap::get(6, 0, {dn, dc, doh, dow}, ctx);
  // The window's shape is only there to bound the kh and kw loops (as in
  // linalg's pooling ops); its values are never read.
  ArrayRef<int64_t> k = op.getKernelSize();
  Value window = b.create<tensor::EmptyOp>(l.loc, k, b.getF32Type());
  AffineMap windowMap = AffineMap::get(6, 0, {dkh, dkw}, ctx);
  Value result =
      l.generic(out, ValueRange{x, window}, {in, windowMap}, l.filled(out, pad),
                outMap, windowOutsideIterators(),
                [isMax](OpBuilder &nb, Location nl, ValueRange a) -> Value {
                  if (isMax)
                    return nb.create<arith::MaximumFOp>(nl, a[0], a[2]);
                  return nb.create<arith::AddFOp>(nl, a[0], a[2]);
                });
  if (isMax)
    return result;
  return l.scale(result, 1.0 / static_cast<double>(k[0] * k[1]));
}

/// The input of a 2-D transpose that nothing else reads, or null: a product
/// can read it transposed instead. The transpose is a locus.transpose (the
/// conversion has lowered it already, but replaces it only when done) or a
/// linalg.transpose.
Value transposedInput(Value v) {
  if (!v.hasOneUse())
    return {};
  if (auto t = v.getDefiningOp<TransposeOp>())
    return t.getPermutation() == ArrayRef<int64_t>{1, 0} ? t.getInput()
                                                         : Value();
  auto t = v.getDefiningOp<linalg::TransposeOp>();
  if (!t || t.getPermutation() != ArrayRef<int64_t>{1, 0})
    return {};
  return t.getInput();
}

Value lowerMatmul(Lowering &l, MatmulOp op) {
  OpBuilder &b = l.b;
  RankedTensorType out = op.getType();
  RankedTensorType lhs = op.getLhs().getType(), rhs = op.getRhs().getType();
  if (out.getRank() == 2) {
    // A transpose fused into the product's kernel (a backward pass's
    // g^T x and g W^T): BLAS reads the operand transposed, no copy.
    if (Value a = transposedInput(op.getLhs()))
      return b
          .create<linalg::MatmulTransposeAOp>(l.loc, TypeRange{out},
                                              ValueRange{a, op.getRhs()},
                                              ValueRange{l.filled(out, 0.0)})
          .getResult(0);
    if (Value bt = transposedInput(op.getRhs()))
      return b
          .create<linalg::MatmulTransposeBOp>(l.loc, TypeRange{out},
                                              ValueRange{op.getLhs(), bt},
                                              ValueRange{l.filled(out, 0.0)})
          .getResult(0);
    return b
        .create<linalg::MatmulOp>(l.loc, TypeRange{out},
                                  ValueRange{op.getLhs(), op.getRhs()},
                                  ValueRange{l.filled(out, 0.0)})
        .getResult(0);
  }
  // Batched: fold the leading dimensions into one batch.
  int64_t batch = 1;
  for (int64_t d : out.getShape().drop_back(2))
    batch *= d;
  auto three = [&](RankedTensorType t) {
    return RankedTensorType::get(
        {batch, t.getDimSize(t.getRank() - 2), t.getDimSize(t.getRank() - 1)},
        t.getElementType());
  };
  RankedTensorType out3 = three(out);
  Value result = b.create<linalg::BatchMatmulOp>(
                      l.loc, TypeRange{out3},
                      ValueRange{l.reshape(op.getLhs(), three(lhs)),
                                 l.reshape(op.getRhs(), three(rhs))},
                      ValueRange{l.filled(out3, 0.0)})
                     .getResult(0);
  return l.reshape(result, out);
}

Value lowerLinear(Lowering &l, LinearOp op) {
  OpBuilder &b = l.b;
  RankedTensorType out = op.getType();
  RankedTensorType w = op.getWeight().getType();
  int64_t in = w.getDimSize(1), outFeatures = w.getDimSize(0);
  int64_t rows = out.getNumElements() / outFeatures;
  auto x2 = RankedTensorType::get({rows, in}, out.getElementType());
  auto y2 = RankedTensorType::get({rows, outFeatures}, out.getElementType());
  Value init = op.getBias() ? l.broadcast(op.getBias(), y2) : l.filled(y2, 0.0);
  Value y = b.create<linalg::MatmulTransposeBOp>(
                 l.loc, TypeRange{y2},
                 ValueRange{l.reshape(op.getInput(), x2), op.getWeight()},
                 ValueRange{init})
                .getResult(0);
  return l.reshape(y, out);
}

/// Whether the i64 `index` lies in [0, extent): what an indexing kernel
/// checks before it reads, so that it never reads outside the tensor.
Value inRange(OpBuilder &b, Location loc, Value index, int64_t extent) {
  Value zero = b.create<arith::ConstantOp>(loc, b.getI64IntegerAttr(0));
  Value limit = b.create<arith::ConstantOp>(loc, b.getI64IntegerAttr(extent));
  return b.create<arith::AndIOp>(
      loc, b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::sge, index, zero),
      b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::slt, index, limit));
}

Value lowerCrossEntropy(Lowering &l, CrossEntropyOp op) {
  OpBuilder &b = l.b;
  Value logp = l.softmax(op.getLogits(), 1, /*log=*/true);
  RankedTensorType labels = op.getLabels().getType();
  auto picked = RankedTensorType::get(labels.getShape(), b.getF32Type());
  AffineMap id = b.getMultiDimIdentityMap(1);
  Value nll = l.generic(
      picked, ValueRange{op.getLabels()}, {id}, l.empty(picked), id,
      {IteratorType::parallel}, [&](OpBuilder &nb, Location nl, ValueRange a) {
        // A label outside [0, classes) reads class 0 and gives NaN: the
        // kernel never reads outside the row, and the loss says it is wrong.
        Value label = a[0];
        Value zero = nb.create<arith::ConstantOp>(nl, nb.getI64IntegerAttr(0));
        Value inside =
            inRange(nb, nl, label, op.getLogits().getType().getDimSize(1));
        Value safe = nb.create<arith::SelectOp>(nl, inside, label, zero);
        Value row = nb.create<linalg::IndexOp>(nl, 0);
        Value cls = nb.create<arith::IndexCastOp>(nl, nb.getIndexType(), safe);
        Value v = nb.create<tensor::ExtractOp>(nl, logp, ValueRange{row, cls});
        Value nan = nb.create<arith::ConstantOp>(
            nl, nb.getF32FloatAttr(std::numeric_limits<float>::quiet_NaN()));
        return nb.create<arith::SelectOp>(nl, inside,
                                          nb.create<arith::NegFOp>(nl, v), nan);
      });
  return l.total(nll, op.getReduction());
}

/// dW[o, c, kh, kw] = sum over n, oh, ow of g[n, o, oh, ow] *
/// xpad[n, c', oh*s + kh*d, ow*s + kw*d]. One group: im2col and one product
/// g[O, N*OH*OW] * cols[C*KH*KW, N*OH*OW]^T (BLAS); grouped: one loop nest.
Value lowerConvWeightGrad(Lowering &l, Conv2dWeightGradOp op) {
  OpBuilder &b = l.b;
  RankedTensorType w = op.getType(), g = op.getGrad().getType();
  Type f32 = w.getElementType();
  Value x = l.padSpatial(op.getInput(), op.getPadding(), 0.0);
  ArrayRef<int64_t> stride = op.getStride(), dilation = op.getDilation();
  int64_t n = g.getDimSize(0), o = g.getDimSize(1), oh = g.getDimSize(2),
          ow = g.getDimSize(3), c = w.getDimSize(1), kh = w.getDimSize(2),
          kw = w.getDimSize(3), groups = op.getGroups();
  MLIRContext *ctx = b.getContext();
  if (groups == 1) {
    Value cols = im2col(l, x, w, g, stride, dilation);
    auto gT = RankedTensorType::get({o, n, oh, ow}, f32);
    Value onhw = b.create<linalg::TransposeOp>(l.loc, op.getGrad(), l.empty(gT),
                                               ArrayRef<int64_t>{1, 0, 2, 3})
                     .getResult()[0];
    auto product = RankedTensorType::get({o, c * kh * kw}, f32);
    Value dw =
        b.create<linalg::MatmulTransposeBOp>(
             l.loc, TypeRange{product},
             ValueRange{
                 l.reshape(onhw, RankedTensorType::get({o, n * oh * ow}, f32)),
                 l.reshape(cols, RankedTensorType::get(
                                     {c * kh * kw, n * oh * ow}, f32))},
             ValueRange{l.filled(product, 0.0)})
            .getResult(0);
    return l.reshape(dw, w);
  }
  // Loops (o, c, kh, kw, n, oh, ow): the weight's dimensions outside.
  GroupedConvMaps maps = groupedConvMaps(ctx, {4, 0, 5, 6, 1, 2, 3}, o / groups,
                                         c, stride, dilation);
  SmallVector<IteratorType> iters(4, IteratorType::parallel);
  iters.append(3, IteratorType::reduction);
  return l.generic(w, ValueRange{x, op.getGrad()}, {maps.input, maps.result},
                   l.filled(w, 0.0), maps.weight, iters,
                   [](OpBuilder &nb, Location nl, ValueRange a) {
                     Value m = nb.create<arith::MulFOp>(nl, a[0], a[1]);
                     return nb.create<arith::AddFOp>(nl, a[2], m);
                   });
}

/// `value` [N, C, H, W] spread out: zeros of [N, C, rows, cols] with
/// value[n, c, i, j] at (offset[0] + i*stride[0], offset[1] + j*stride[1]).
Value spread(Lowering &l, Value value, int64_t rows, int64_t cols,
             ArrayRef<int64_t> offset, ArrayRef<int64_t> stride, double fill) {
  OpBuilder &b = l.b;
  RankedTensorType t = l.typeOf(value);
  auto type = RankedTensorType::get(
      {t.getDimSize(0), t.getDimSize(1), rows, cols}, t.getElementType());
  SmallVector<OpFoldResult> offsets{b.getIndexAttr(0), b.getIndexAttr(0),
                                    b.getIndexAttr(offset[0]),
                                    b.getIndexAttr(offset[1])};
  SmallVector<OpFoldResult> sizes,
      strides{b.getIndexAttr(1), b.getIndexAttr(1), b.getIndexAttr(stride[0]),
              b.getIndexAttr(stride[1])};
  for (int64_t d : t.getShape())
    sizes.push_back(b.getIndexAttr(d));
  return b.create<tensor::InsertSliceOp>(l.loc, value, l.filled(type, fill),
                                         offsets, sizes, strides);
}

/// The [N, C, H, W] window of a padded [N, C, H + 2p, W + 2p] tensor.
Value unpad(Lowering &l, Value padded, RankedTensorType type,
            ArrayRef<int64_t> padding) {
  if (padding[0] == 0 && padding[1] == 0 &&
      l.typeOf(padded).getShape() == type.getShape())
    return padded;
  OpBuilder &b = l.b;
  SmallVector<OpFoldResult> offsets{b.getIndexAttr(0), b.getIndexAttr(0),
                                    b.getIndexAttr(padding[0]),
                                    b.getIndexAttr(padding[1])};
  SmallVector<OpFoldResult> sizes, strides(4, b.getIndexAttr(1));
  for (int64_t d : type.getShape())
    sizes.push_back(b.getIndexAttr(d));
  return b.create<tensor::ExtractSliceOp>(l.loc, type, padded, offsets, sizes,
                                          strides);
}

/// dx of a convolution as a gather: g spread out by the stride with a margin
/// of (K - 1) * dilation, then dxpad[n, c, y, x] = sum over o, kh, kw of
/// gs[n, o', y + (KH-1-kh)*dh, x + (KW-1-kw)*dw] * w[o', c', kh, kw], where
/// o' runs over the outputs of c's group; the padding is cut off last.
Value lowerConvInputGrad(Lowering &l, Conv2dInputGradOp op) {
  OpBuilder &b = l.b;
  RankedTensorType dx = op.getType(), w = op.getWeight().getType();
  Type f32 = dx.getElementType();
  ArrayRef<int64_t> stride = op.getStride(), dilation = op.getDilation(),
                    padding = op.getPadding();
  int64_t c = dx.getDimSize(1), kh = w.getDimSize(2), kw = w.getDimSize(3),
          groups = op.getGroups(), outPerGroup = w.getDimSize(0) / groups,
          inPerGroup = w.getDimSize(1);
  int64_t hp = dx.getDimSize(2) + 2 * padding[0],
          wp = dx.getDimSize(3) + 2 * padding[1];
  int64_t mh = (kh - 1) * dilation[0], mw = (kw - 1) * dilation[1];
  Value gs = spread(l, op.getGrad(), hp + mh, wp + mw, {mh, mw}, stride, 0.0);
  MLIRContext *ctx = b.getContext();
  // Loops (n, c, y, x, o, kh, kw).
  AffineExpr en = b.getAffineDimExpr(0), ec = b.getAffineDimExpr(1),
             ey = b.getAffineDimExpr(2), ex = b.getAffineDimExpr(3),
             eo = b.getAffineDimExpr(4), ekh = b.getAffineDimExpr(5),
             ekw = b.getAffineDimExpr(6);
  AffineExpr og = ec.floorDiv(inPerGroup) * outPerGroup + eo;
  AffineMap gMap = AffineMap::get(7, 0,
                                  {en, og, ey + (kh - 1 - ekh) * dilation[0],
                                   ex + (kw - 1 - ekw) * dilation[1]},
                                  ctx);
  AffineMap wMap = AffineMap::get(7, 0, {og, ec % inPerGroup, ekh, ekw}, ctx);
  AffineMap outMap = AffineMap::get(7, 0, {en, ec, ey, ex}, ctx);
  auto paddedType = RankedTensorType::get({dx.getDimSize(0), c, hp, wp}, f32);
  SmallVector<IteratorType> iters(4, IteratorType::parallel);
  iters.append(3, IteratorType::reduction);
  // The o loop only bounds the group's outputs: a shape-only operand.
  Value outputs =
      b.create<tensor::EmptyOp>(l.loc, ArrayRef<int64_t>{outPerGroup}, f32);
  AffineMap outputsMap = AffineMap::get(7, 0, {eo}, ctx);
  Value padded =
      l.generic(paddedType, ValueRange{gs, op.getWeight(), outputs},
                {gMap, wMap, outputsMap}, l.filled(paddedType, 0.0), outMap,
                iters, [](OpBuilder &nb, Location nl, ValueRange a) {
                  Value m = nb.create<arith::MulFOp>(nl, a[0], a[1]);
                  return nb.create<arith::AddFOp>(nl, a[3], m);
                });
  return unpad(l, padded, dx, padding);
}

/// kh * KW + kw as f32, kh and kw being the loops `khDim` and `kwDim` of the
/// enclosing generic.
Value windowIndex(OpBuilder &nb, Location nl, int64_t kwSize, unsigned khDim,
                  unsigned kwDim) {
  Value r = nb.create<linalg::IndexOp>(nl, khDim);
  Value c = nb.create<linalg::IndexOp>(nl, kwDim);
  Value width = nb.create<arith::ConstantIndexOp>(nl, kwSize);
  Value flat =
      nb.create<arith::AddIOp>(nl, nb.create<arith::MulIOp>(nl, r, width), c);
  Value i = nb.create<arith::IndexCastOp>(nl, nb.getI64Type(), flat);
  return nb.create<arith::SIToFPOp>(nl, nb.getF32Type(), i);
}

/// For each window of the padded `x` (one element of `g`, the gradient's
/// type), the index kh * KW + kw of the first position holding its maximum:
/// one pass over each window, row-major, in which a later position replaces
/// the maximum only when strictly greater. `kernel` bounds the window loops.
Value firstMaxima(Lowering &l, Value x, RankedTensorType g, Value kernel,
                  ArrayRef<int64_t> k, ArrayRef<int64_t> stride) {
  OpBuilder &b = l.b;
  double inf = std::numeric_limits<double>::infinity();
  MLIRContext *ctx = b.getContext();
  AffineExpr dn = b.getAffineDimExpr(0), dc = b.getAffineDimExpr(1),
             dkh = b.getAffineDimExpr(2), dkw = b.getAffineDimExpr(3),
             doh = b.getAffineDimExpr(4), dow = b.getAffineDimExpr(5);
  AffineMap window = AffineMap::get(
      6, 0, {dn, dc, doh * stride[0] + dkh, dow * stride[1] + dkw}, ctx);
  AffineMap outMap = AffineMap::get(6, 0, {dn, dc, doh, dow}, ctx);
  AffineMap kernelMap = AffineMap::get(6, 0, {dkh, dkw}, ctx);
  int64_t kwSize = k[1];
  auto argmax = b.create<linalg::GenericOp>(
      l.loc, TypeRange{g, g}, ValueRange{x, kernel},
      ValueRange{l.filled(g, -inf), l.filled(g, -1.0)},
      ArrayRef<AffineMap>{window, kernelMap, outMap, outMap},
      windowOutsideIterators(), [&](OpBuilder &nb, Location nl, ValueRange a) {
        Value here = windowIndex(nb, nl, kwSize, 2, 3);
        Value better =
            nb.create<arith::CmpFOp>(nl, arith::CmpFPredicate::OGT, a[0], a[2]);
        nb.create<linalg::YieldOp>(
            nl, ValueRange{nb.create<arith::SelectOp>(nl, better, a[0], a[2]),
                           nb.create<arith::SelectOp>(nl, better, here, a[3])});
      });
  return argmax.getResult(1);
}

/// dxpad when the windows tile the (padded) input exactly (2x2 stride 2 on
/// even sizes): each position is in one window, (y / KH, x / KW), at
/// (y % KH, x % KW), and takes the window's gradient where that is `first`.
Value tiledMaxPoolGrad(Lowering &l, Value grad, Value first,
                       RankedTensorType paddedType, ArrayRef<int64_t> k) {
  OpBuilder &b = l.b;
  AffineExpr y = b.getAffineDimExpr(2), x = b.getAffineDimExpr(3);
  AffineMap window =
      AffineMap::get(4, 0,
                     {b.getAffineDimExpr(0), b.getAffineDimExpr(1),
                      y.floorDiv(k[0]), x.floorDiv(k[1])},
                     b.getContext());
  return l.generic(
      paddedType, ValueRange{grad, first}, {window, window},
      l.empty(paddedType), b.getMultiDimIdentityMap(4),
      SmallVector<IteratorType>(4, IteratorType::parallel),
      [&](OpBuilder &nb, Location nl, ValueRange a) -> Value {
        Value r = nb.create<arith::RemUIOp>(
            nl, nb.create<linalg::IndexOp>(nl, 2),
            nb.create<arith::ConstantIndexOp>(nl, k[0]));
        Value c = nb.create<arith::RemUIOp>(
            nl, nb.create<linalg::IndexOp>(nl, 3),
            nb.create<arith::ConstantIndexOp>(nl, k[1]));
        Value flat = nb.create<arith::AddIOp>(
            nl,
            nb.create<arith::MulIOp>(
                nl, r, nb.create<arith::ConstantIndexOp>(nl, k[1])),
            c);
        Value here = nb.create<arith::SIToFPOp>(
            nl, nb.getF32Type(),
            nb.create<arith::IndexCastOp>(nl, nb.getI64Type(), flat));
        Value hit =
            nb.create<arith::CmpFOp>(nl, arith::CmpFPredicate::OEQ, a[1], here);
        Value zero = nb.create<arith::ConstantOp>(nl, nb.getF32FloatAttr(0));
        return nb.create<arith::SelectOp>(nl, hit, a[0], zero);
      });
}

/// dxpad for any windows: gradient and index spread out by the stride with
/// a margin of K - 1, then dxpad[y, x] = sum over kh, kw of
/// gs[y + KH-1-kh, x + KW-1-kw] where the spread index there is kh * KW + kw.
Value spreadMaxPoolGrad(Lowering &l, Value grad, Value first, Value kernel,
                        RankedTensorType paddedType, ArrayRef<int64_t> k,
                        ArrayRef<int64_t> stride) {
  OpBuilder &b = l.b;
  int64_t hp = paddedType.getDimSize(2), wp = paddedType.getDimSize(3);
  int64_t mh = k[0] - 1, mw = k[1] - 1, kwSize = k[1];
  Value gs = spread(l, grad, hp + mh, wp + mw, {mh, mw}, stride, 0.0);
  Value is = spread(l, first, hp + mh, wp + mw, {mh, mw}, stride, -1.0);
  MLIRContext *ctx = b.getContext();
  AffineExpr dn = b.getAffineDimExpr(0), dc = b.getAffineDimExpr(1),
             dkh = b.getAffineDimExpr(2), dkw = b.getAffineDimExpr(3),
             doh = b.getAffineDimExpr(4), dow = b.getAffineDimExpr(5);
  AffineMap gather =
      AffineMap::get(6, 0, {dn, dc, doh + (mh - dkh), dow + (mw - dkw)}, ctx);
  AffineMap kernelMap = AffineMap::get(6, 0, {dkh, dkw}, ctx);
  AffineMap outMap = AffineMap::get(6, 0, {dn, dc, doh, dow}, ctx);
  return l.generic(
      paddedType, ValueRange{gs, is, kernel}, {gather, gather, kernelMap},
      l.filled(paddedType, 0.0), outMap, windowOutsideIterators(),
      [&](OpBuilder &nb, Location nl, ValueRange a) -> Value {
        Value here = windowIndex(nb, nl, kwSize, 2, 3);
        Value hit =
            nb.create<arith::CmpFOp>(nl, arith::CmpFPredicate::OEQ, a[1], here);
        Value sum = nb.create<arith::AddFOp>(nl, a[3], a[0]);
        return nb.create<arith::SelectOp>(nl, hit, sum, a[3]);
      });
}

/// PyTorch routes each window's gradient to the first position holding its
/// maximum. First, in one pass, the window's maximum and the index
/// (kh * KW + kw) of its first occurrence; then gradient and index spread
/// out by the stride (or read directly when the windows tile the input), and
/// dxpad[y, x] = sum over kh, kw of gs[y + KH-1-kh, x + KW-1-kw] where the
/// spread index there equals kh * KW + kw.
Value lowerMaxPoolGrad(Lowering &l, MaxPool2dGradOp op) {
  RankedTensorType in = op.getType(), g = op.getGrad().getType();
  Type f32 = in.getElementType();
  ArrayRef<int64_t> k = op.getKernelSize(), stride = op.getStride(),
                    padding = op.getPadding();
  double inf = std::numeric_limits<double>::infinity();
  Value x = l.padSpatial(op.getInput(), padding, -inf);
  Value kernel = l.b.create<tensor::EmptyOp>(l.loc, k, f32);
  Value first = firstMaxima(l, x, g, kernel, k, stride);
  int64_t hp = in.getDimSize(2) + 2 * padding[0],
          wp = in.getDimSize(3) + 2 * padding[1];
  auto paddedType =
      RankedTensorType::get({in.getDimSize(0), in.getDimSize(1), hp, wp}, f32);
  bool tiled = stride == k && hp == g.getDimSize(2) * k[0] &&
               wp == g.getDimSize(3) * k[1];
  Value padded = tiled ? tiledMaxPoolGrad(l, op.getGrad(), first, paddedType, k)
                       : spreadMaxPoolGrad(l, op.getGrad(), first, kernel,
                                           paddedType, k, stride);
  return unpad(l, padded, in, padding);
}

Value lowerOneHot(Lowering &l, OneHotOp op) {
  OpBuilder &b = l.b;
  RankedTensorType out = op.getType();
  unsigned rank = out.getRank();
  SmallVector<AffineExpr> labelDims;
  for (unsigned d = 0; d + 1 < rank; ++d)
    labelDims.push_back(b.getAffineDimExpr(d));
  AffineMap labelMap = AffineMap::get(rank, 0, labelDims, b.getContext());
  return l.generic(
      out, ValueRange{op.getLabels()}, {labelMap}, l.empty(out),
      b.getMultiDimIdentityMap(rank),
      SmallVector<IteratorType>(rank, IteratorType::parallel),
      [&](OpBuilder &nb, Location nl, ValueRange a) -> Value {
        Value cls = nb.create<arith::IndexCastOp>(
            nl, nb.getI64Type(), nb.create<linalg::IndexOp>(nl, rank - 1));
        Value hit =
            nb.create<arith::CmpIOp>(nl, arith::CmpIPredicate::eq, a[0], cls);
        return nb.create<arith::UIToFPOp>(nl, nb.getF32Type(), hit);
      });
}

Value lowerSliceGrad(Lowering &l, SliceGradOp op) {
  OpBuilder &b = l.b;
  SmallVector<OpFoldResult> offsets, sizes, strides;
  for (auto [off, size, stride] :
       llvm::zip(op.getOffsets(), op.getGrad().getType().getShape(),
                 op.getStrides())) {
    offsets.push_back(b.getIndexAttr(off));
    sizes.push_back(b.getIndexAttr(size));
    strides.push_back(b.getIndexAttr(stride));
  }
  return b.create<tensor::InsertSliceOp>(l.loc, op.getGrad(),
                                         l.filled(op.getType(), 0.0), offsets,
                                         sizes, strides);
}

/// f32 arithmetic inside a generic's body, for the optimizers' formulas.
struct BodyMath {
  OpBuilder &b;
  Location loc;
  Value cst(double v) const {
    return b.create<arith::ConstantOp>(loc, b.getF32FloatAttr(v));
  }
  Value mul(Value x, Value y) const {
    return b.create<arith::MulFOp>(loc, x, y);
  }
  Value add(Value x, Value y) const {
    return b.create<arith::AddFOp>(loc, x, y);
  }
  Value sub(Value x, Value y) const {
    return b.create<arith::SubFOp>(loc, x, y);
  }
  Value div(Value x, Value y) const {
    return b.create<arith::DivFOp>(loc, x, y);
  }
  Value sqrt(Value x) const { return b.create<math::SqrtOp>(loc, x); }
};

/// One elementwise generic with several results (the optimizers): `body`
/// gets the inputs' elements and returns the results' in order.
SmallVector<Value> elementwiseMulti(
    Lowering &l, RankedTensorType type, ValueRange inputs,
    ArrayRef<bool> scalar, unsigned numResults,
    function_ref<SmallVector<Value>(OpBuilder &, Location, ValueRange)> body) {
  OpBuilder &b = l.b;
  unsigned rank = type.getRank();
  AffineMap id = b.getMultiDimIdentityMap(rank);
  SmallVector<AffineMap> maps;
  for (bool s : scalar)
    maps.push_back(s ? AffineMap::get(rank, 0, {}, b.getContext()) : id);
  SmallVector<Value> inits;
  for (unsigned i = 0; i < numResults; ++i) {
    inits.push_back(l.empty(type));
    maps.push_back(id);
  }
  auto op = b.create<linalg::GenericOp>(
      l.loc, SmallVector<Type>(numResults, type), inputs, inits, maps,
      SmallVector<IteratorType>(rank, IteratorType::parallel),
      [&](OpBuilder &nb, Location nl, ValueRange args) {
        nb.create<linalg::YieldOp>(
            nl, body(nb, nl, args.take_front(inputs.size())));
      });
  return SmallVector<Value>(op.getResults());
}

SmallVector<Value> lowerSgd(Lowering &l, SgdOp op) {
  bool hasBuffer = static_cast<bool>(op.getBuffer());
  SmallVector<Value> inputs{op.getParam(), op.getGrad(), op.getLr()};
  if (hasBuffer)
    inputs.push_back(op.getBuffer());
  double momentum = op.getMomentum().convertToDouble(),
         decay = op.getWeightDecay().convertToDouble();
  bool nesterov = op.getNesterov();
  SmallVector<bool> scalar{false, false, true};
  scalar.resize(inputs.size(), false);
  return elementwiseMulti(
      l, op.getParam().getType(), inputs, scalar, hasBuffer ? 2 : 1,
      [&](OpBuilder &nb, Location nl, ValueRange a) {
        BodyMath f{nb, nl};
        Value d = a[1], lr = a[2];
        if (decay != 0)
          d = f.add(d, f.mul(a[0], f.cst(decay)));
        SmallVector<Value> results;
        Value buf;
        if (hasBuffer) {
          buf = f.add(f.mul(a[3], f.cst(momentum)), d);
          d = nesterov ? f.add(d, f.mul(buf, f.cst(momentum))) : buf;
        }
        results.push_back(f.sub(a[0], f.mul(d, lr)));
        if (hasBuffer)
          results.push_back(buf);
        return results;
      });
}

/// torch.optim.Adam's (or, `decoupled`, AdamW's) single-tensor update
/// (PyTorch 1.13), in its order of operations. The bias corrections lr / (1 -
/// beta1^t) and sqrt(1 - beta2^t), and AdamW's factor 1 - lr * weight_decay,
/// are scalars: one scalar generic computes them from the step count and the
/// learning rate, once, not per element (PyTorch computes them in double and
/// passes them as f32 scalars; in f32 here they differ by ~1e-7 relative).
SmallVector<Value> lowerAdam(Lowering &l, AdamOp op) {
  OpBuilder &b = l.b;
  double b1 = op.getBetas()[0], b2 = op.getBetas()[1],
         eps = op.getEps().convertToDouble(),
         decay = op.getWeightDecay().convertToDouble();
  bool decoupled = op.getDecoupled();
  auto scalar = RankedTensorType::get({}, b.getF32Type());
  AffineMap none = AffineMap::get(0, 0, {}, b.getContext());
  auto corrections = b.create<linalg::GenericOp>(
      l.loc, TypeRange{scalar, scalar, scalar},
      ValueRange{op.getStep(), op.getLr()},
      ValueRange{l.empty(scalar), l.empty(scalar), l.empty(scalar)},
      ArrayRef<AffineMap>{none, none, none, none, none},
      ArrayRef<IteratorType>{}, [&](OpBuilder &nb, Location nl, ValueRange a) {
        BodyMath f{nb, nl};
        Value t = a[0], lr = a[1];
        Value bc1 = f.sub(f.cst(1), nb.create<math::PowFOp>(nl, f.cst(b1), t));
        Value bc2 = f.sub(f.cst(1), nb.create<math::PowFOp>(nl, f.cst(b2), t));
        // 1 - lr * decay (f32: GPU kernels take no f64 constants).
        Value shrink = f.sub(f.cst(1), f.mul(lr, f.cst(decay)));
        nb.create<linalg::YieldOp>(
            nl, ValueRange{f.div(lr, bc1), f.sqrt(bc2), shrink});
      });
  return elementwiseMulti(
      l, op.getParam().getType(),
      ValueRange{op.getParam(), op.getGrad(), op.getM(), op.getV(),
                 corrections.getResult(0), corrections.getResult(1),
                 corrections.getResult(2)},
      {false, false, false, false, true, true, true}, 3,
      [&](OpBuilder &nb, Location nl, ValueRange a) {
        BodyMath f{nb, nl};
        Value p = a[0], g = a[1], stepSize = a[4], bc2Sqrt = a[5];
        if (decay != 0 && decoupled) // AdamW: param.mul_(1 - lr * decay)
          p = f.mul(p, a[6]);
        else if (decay != 0)
          g = f.add(g, f.mul(p, f.cst(decay)));
        // exp_avg.mul_(beta1).add_(grad, alpha=1 - beta1), and so on.
        Value m = f.add(f.mul(a[2], f.cst(b1)), f.mul(g, f.cst(1 - b1)));
        Value v =
            f.add(f.mul(a[3], f.cst(b2)), f.mul(f.mul(g, g), f.cst(1 - b2)));
        Value denom = f.add(f.div(f.sqrt(v), bc2Sqrt), f.cst(eps));
        // param.addcdiv_(exp_avg, denom, value=-step_size)
        Value newP = f.sub(p, f.mul(stepSize, f.div(m, denom)));
        return SmallVector<Value>{newP, m, v};
      });
}

//===----------------------------------------------------------------------===//
// The ops without a helper of their own above
//===----------------------------------------------------------------------===//

Value lowerConstant(Lowering &l, ConstantOp op) {
  return l.b.create<arith::ConstantOp>(op.getLoc(),
                                       cast<TypedAttr>(op.getValue()));
}

/// An elementwise generic over `x`'s shape whose body is `build(x)`.
Value unary(Lowering &l, Value x,
            function_ref<Value(OpBuilder &, Location, Value)> build) {
  return l.elementwise(l.typeOf(x), ValueRange{x},
                       [&](OpBuilder &nb, Location nl, ValueRange a) {
                         return build(nb, nl, a[0]);
                       });
}

/// An elementwise generic over `op`'s result shape whose body is
/// `build(a, b)` of its two operands.
Value binary(Lowering &l, Operation *op,
             function_ref<Value(OpBuilder &, Location, Value, Value)> build) {
  return l.elementwise(l.typeOf(op->getResult(0)), op->getOperands(),
                       [&](OpBuilder &nb, Location nl, ValueRange a) {
                         return build(nb, nl, a[0], a[1]);
                       });
}

/// neg, exp, log, sqrt, tanh, erf, sin, cos, abs, rsqrt: one arith or math
/// op per element.
template <typename OpTy, typename ScalarOp>
Value lowerUnary(Lowering &l, OpTy op) {
  return unary(l, op.getInput(), [](OpBuilder &nb, Location nl, Value x) {
    return nb.create<ScalarOp>(nl, x);
  });
}

/// add, sub, mul, div, maximum: one arith op per pair of elements.
template <typename OpTy, typename ScalarOp>
Value lowerBinary(Lowering &l, OpTy op) {
  return binary(l, op, [](OpBuilder &nb, Location nl, Value a, Value c) {
    return nb.create<ScalarOp>(nl, a, c);
  });
}

Value lowerRelu(Lowering &l, ReluOp op) {
  Value zero = l.constantF32(0.0);
  return unary(l, op.getInput(), [&](OpBuilder &nb, Location nl, Value x) {
    return nb.create<arith::MaximumFOp>(nl, x, zero);
  });
}

Value lowerSigmoid(Lowering &l, SigmoidOp op) {
  Value one = l.constantF32(1.0);
  return unary(l, op.getInput(), [&](OpBuilder &nb, Location nl, Value x) {
    Value e = nb.create<math::ExpOp>(nl, nb.create<arith::NegFOp>(nl, x));
    return nb.create<arith::DivFOp>(nl, one,
                                    nb.create<arith::AddFOp>(nl, one, e));
  });
}

Value lowerReciprocal(Lowering &l, ReciprocalOp op) {
  Value one = l.constantF32(1.0);
  return unary(l, op.getInput(), [&](OpBuilder &nb, Location nl, Value x) {
    return nb.create<arith::DivFOp>(nl, one, x);
  });
}

/// x / (1 + e^-x): x * sigmoid(x), as PyTorch's silu.
Value lowerSilu(Lowering &l, SiluOp op) {
  Value one = l.constantF32(1.0);
  return unary(l, op.getInput(), [&](OpBuilder &nb, Location nl, Value x) {
    Value e = nb.create<math::ExpOp>(nl, nb.create<arith::NegFOp>(nl, x));
    return nb.create<arith::DivFOp>(nl, x,
                                    nb.create<arith::AddFOp>(nl, one, e));
  });
}

/// 0.5 x (1 + erf(x / sqrt 2)), or with `tanh` PyTorch's tanh form
/// 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))).
Value lowerGelu(Lowering &l, GeluOp op) {
  bool tanhForm = op.getTanh();
  Value half = l.constantF32(0.5), one = l.constantF32(1.0);
  Value scale = l.constantF32(tanhForm ? 0.7978845608028654 : M_SQRT1_2);
  Value cubic = tanhForm ? l.constantF32(0.044715) : Value();
  return unary(l, op.getInput(), [&](OpBuilder &nb, Location nl, Value x) {
    Value inner = x;
    if (tanhForm) {
      Value x3 =
          nb.create<arith::MulFOp>(nl, x, nb.create<arith::MulFOp>(nl, x, x));
      inner = nb.create<arith::AddFOp>(nl, x,
                                       nb.create<arith::MulFOp>(nl, cubic, x3));
    }
    inner = nb.create<arith::MulFOp>(nl, scale, inner);
    Value f = tanhForm ? nb.create<math::TanhOp>(nl, inner).getResult()
                       : nb.create<math::ErfOp>(nl, inner).getResult();
    Value hx = nb.create<arith::MulFOp>(nl, half, x);
    return nb.create<arith::MulFOp>(nl, hx,
                                    nb.create<arith::AddFOp>(nl, one, f));
  });
}

/// x * x for the exponent 2, math.powf otherwise (whose exponent constant
/// is made either way).
Value lowerPow(Lowering &l, PowOp op) {
  double e = op.getExponent().convertToDouble();
  Value exponent = l.constantF32(e);
  return unary(l, op.getInput(), [&](OpBuilder &nb, Location nl, Value x) {
    if (e == 2.0)
      return nb.create<arith::MulFOp>(nl, x, x).getResult();
    return nb.create<math::PowFOp>(nl, x, exponent).getResult();
  });
}

/// The ordered comparisons, and une for ne (true when either is NaN).
arith::CmpFPredicate floatPredicate(CmpPredicate predicate) {
  switch (predicate) {
  case CmpPredicate::eq:
    return arith::CmpFPredicate::OEQ;
  case CmpPredicate::ne:
    return arith::CmpFPredicate::UNE;
  case CmpPredicate::lt:
    return arith::CmpFPredicate::OLT;
  case CmpPredicate::le:
    return arith::CmpFPredicate::OLE;
  case CmpPredicate::gt:
    return arith::CmpFPredicate::OGT;
  case CmpPredicate::ge:
    return arith::CmpFPredicate::OGE;
  }
  llvm_unreachable("unknown locus.cmp predicate");
}

/// Signed comparisons of i64, unsigned of i1 (false < true).
arith::CmpIPredicate integerPredicate(CmpPredicate predicate, bool isBool) {
  switch (predicate) {
  case CmpPredicate::eq:
    return arith::CmpIPredicate::eq;
  case CmpPredicate::ne:
    return arith::CmpIPredicate::ne;
  case CmpPredicate::lt:
    return isBool ? arith::CmpIPredicate::ult : arith::CmpIPredicate::slt;
  case CmpPredicate::le:
    return isBool ? arith::CmpIPredicate::ule : arith::CmpIPredicate::sle;
  case CmpPredicate::gt:
    return isBool ? arith::CmpIPredicate::ugt : arith::CmpIPredicate::sgt;
  case CmpPredicate::ge:
    return isBool ? arith::CmpIPredicate::uge : arith::CmpIPredicate::sge;
  }
  llvm_unreachable("unknown locus.cmp predicate");
}

Value lowerCmp(Lowering &l, CmpOp op) {
  Type element = op.getLhs().getType().getElementType();
  if (element.isF32()) {
    arith::CmpFPredicate predicate = floatPredicate(op.getPredicate());
    return binary(l, op, [&](OpBuilder &nb, Location nl, Value a, Value c) {
      return nb.create<arith::CmpFOp>(nl, predicate, a, c);
    });
  }
  arith::CmpIPredicate predicate =
      integerPredicate(op.getPredicate(), element.isInteger(1));
  return binary(l, op, [&](OpBuilder &nb, Location nl, Value a, Value c) {
    return nb.create<arith::CmpIOp>(nl, predicate, a, c);
  });
}

/// One element converted from `from` to `to` by PyTorch's rules.
Value castElement(OpBuilder &nb, Location nl, Value x, Type from, Type to) {
  if (from == to)
    return x;
  if (to.isInteger(1)) {
    Type zeroType = from;
    Value zero = nb.create<arith::ConstantOp>(nl, nb.getZeroAttr(zeroType));
    if (from.isF32())
      return nb.create<arith::CmpFOp>(nl, arith::CmpFPredicate::UNE, x, zero);
    return nb.create<arith::CmpIOp>(nl, arith::CmpIPredicate::ne, x, zero);
  }
  if (from.isF32())
    return nb.create<arith::FPToSIOp>(nl, to, x);
  if (to.isF32())
    return from.isInteger(1)
               ? nb.create<arith::UIToFPOp>(nl, to, x).getResult()
               : nb.create<arith::SIToFPOp>(nl, to, x).getResult();
  // Between integers: i1 counts 0 or 1; wider ones keep their sign, and
  // narrowing wraps (as PyTorch's i64 -> i32).
  unsigned fromBits = from.getIntOrFloatBitWidth();
  unsigned toBits = to.getIntOrFloatBitWidth();
  if (fromBits > toBits)
    return nb.create<arith::TruncIOp>(nl, to, x);
  if (fromBits == 1)
    return nb.create<arith::ExtUIOp>(nl, to, x);
  return nb.create<arith::ExtSIOp>(nl, to, x);
}

Value lowerCast(Lowering &l, CastOp op) {
  Type from = op.getInput().getType().getElementType();
  Type to = op.getType().getElementType();
  if (from == to)
    return op.getInput();
  return l.elementwise(op.getType(), op.getInput(),
                       [&](OpBuilder &nb, Location nl, ValueRange a) {
                         return castElement(nb, nl, a[0], from, to);
                       });
}

/// numpy.take: the output's dimensions [axis, axis + rank(indices)) walk
/// the indices; the others walk the input. An index outside the axis reads
/// element 0 and gives zero, so the kernel never reads outside the input.
Value lowerGather(Lowering &l, GatherOp op) {
  OpBuilder &b = l.b;
  RankedTensorType out = op.getType(), in = op.getInput().getType();
  int64_t axis = op.getAxis(), idxRank = op.getIndices().getType().getRank();
  unsigned rank = out.getRank();
  SmallVector<AffineExpr> idxDims;
  for (int64_t d = 0; d < idxRank; ++d)
    idxDims.push_back(b.getAffineDimExpr(axis + d));
  AffineMap idxMap = AffineMap::get(rank, 0, idxDims, b.getContext());
  Value input = op.getInput();
  int64_t extent = in.getDimSize(axis);
  Type element = out.getElementType();
  return l.generic(
      out, ValueRange{op.getIndices()}, {idxMap}, l.empty(out),
      b.getMultiDimIdentityMap(rank),
      SmallVector<IteratorType>(rank, IteratorType::parallel),
      [&](OpBuilder &nb, Location nl, ValueRange a) -> Value {
        Value index = a[0];
        Value zero64 =
            nb.create<arith::ConstantOp>(nl, nb.getI64IntegerAttr(0));
        Value inside = inRange(nb, nl, index, extent);
        Value safe = nb.create<arith::SelectOp>(nl, inside, index, zero64);
        SmallVector<Value> at;
        for (int64_t d = 0; d < axis; ++d)
          at.push_back(nb.create<linalg::IndexOp>(nl, d));
        at.push_back(
            nb.create<arith::IndexCastOp>(nl, nb.getIndexType(), safe));
        for (int64_t d = axis + 1; d < in.getRank(); ++d)
          at.push_back(nb.create<linalg::IndexOp>(nl, d - 1 + idxRank));
        Value picked = nb.create<tensor::ExtractOp>(nl, input, at);
        Value zero = nb.create<arith::ConstantOp>(nl, nb.getZeroAttr(element));
        return nb.create<arith::SelectOp>(nl, inside, picked, zero);
      });
}

Value lowerSelect(Lowering &l, SelectOp op) {
  return l.elementwise(op.getType(), op->getOperands(),
                       [](OpBuilder &nb, Location nl, ValueRange a) {
                         return nb.create<arith::SelectOp>(nl, a[0], a[1],
                                                           a[2]);
                       });
}

Value lowerBroadcast(Lowering &l, BroadcastOp op) {
  return l.broadcast(op.getInput(), op.getType());
}

Value lowerTranspose(Lowering &l, TransposeOp op) {
  return l.b
      .create<linalg::TransposeOp>(op.getLoc(), op.getInput(),
                                   l.empty(op.getType()), op.getPermutation())
      .getResult()[0];
}

Value lowerReshape(Lowering &l, ReshapeOp op) {
  return l.reshape(op.getInput(), op.getType());
}

Value lowerConcat(Lowering &l, ConcatOp op) {
  OpBuilder &b = l.b;
  Value result = l.empty(op.getType());
  int64_t axis = op.getAxis(), offset = 0;
  for (Value input : op.getInputs()) {
    RankedTensorType t = l.typeOf(input);
    SmallVector<OpFoldResult> offsets(t.getRank(), b.getIndexAttr(0)), sizes,
        strides(t.getRank(), b.getIndexAttr(1));
    for (int64_t d : t.getShape())
      sizes.push_back(b.getIndexAttr(d));
    offsets[axis] = b.getIndexAttr(offset);
    offset += t.getDimSize(axis);
    result = b.create<tensor::InsertSliceOp>(op.getLoc(), input, result,
                                             offsets, sizes, strides);
  }
  return result;
}

Value lowerSlice(Lowering &l, SliceOp op) {
  OpBuilder &b = l.b;
  SmallVector<OpFoldResult> offsets, sizes, strides;
  for (auto [off, size, stride] :
       llvm::zip(op.getOffsets(), op.getSizes(), op.getStrides())) {
    offsets.push_back(b.getIndexAttr(off));
    sizes.push_back(b.getIndexAttr(size));
    strides.push_back(b.getIndexAttr(stride));
  }
  return b.create<tensor::ExtractSliceOp>(
      op.getLoc(), op.getType(), op.getInput(), offsets, sizes, strides);
}

Value lowerSum(Lowering &l, SumOp op) {
  return l.reshape(l.reduce(op.getInput(), op.getAxes(), 0.0, Lowering::add),
                   op.getType());
}

Value lowerMax(Lowering &l, MaxOp op) {
  return l.reshape(l.reduce(op.getInput(), op.getAxes(),
                            -std::numeric_limits<double>::infinity(),
                            Lowering::max),
                   op.getType());
}

Value lowerMin(Lowering &l, MinOp op) {
  return l.reshape(l.reduce(op.getInput(), op.getAxes(),
                            std::numeric_limits<double>::infinity(),
                            Lowering::min),
                   op.getType());
}

Value lowerMean(Lowering &l, MeanOp op) {
  int64_t count = 1;
  for (int64_t axis : op.getAxes())
    count *= op.getInput().getType().getDimSize(axis);
  Value sum = l.reduce(op.getInput(), op.getAxes(), 0.0, Lowering::add);
  return l.reshape(l.scale(sum, 1.0 / static_cast<double>(count)),
                   op.getType());
}

/// softmax and log_softmax.
template <typename OpTy, bool Log> Value lowerSoftmax(Lowering &l, OpTy op) {
  return l.softmax(op.getInput(), op.getAxis(), Log);
}

template <typename OpTy, bool IsMax> Value lowerPool2d(Lowering &l, OpTy op) {
  return lowerPool(l, op, IsMax);
}

Value lowerMseLoss(Lowering &l, MseLossOp op) {
  Value sq = l.elementwise(op.getInput().getType(), op->getOperands(),
                           [](OpBuilder &nb, Location nl, ValueRange a) {
                             Value d = nb.create<arith::SubFOp>(nl, a[0], a[1]);
                             return nb.create<arith::MulFOp>(nl, d, d);
                           });
  return l.total(sq, op.getReduction());
}

//===----------------------------------------------------------------------===//
// Random numbers: Philox4x32-10
//===----------------------------------------------------------------------===//

/// Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2,
/// 3", SC'11; the generator of cuRAND and of PyTorch on CUDA) in integer
/// arith ops inside a generic's body: 32-bit products are 64-bit multiplies
/// and shifts, so the host and NVVM compute the same bits. The key schedule
/// is folded: the seed is an attribute, so each round's key is a constant.
class Philox {
public:
  Philox(OpBuilder &b, Location loc) : b(b), loc(loc) {}

  Value i32(uint32_t v) {
    return b.create<arith::ConstantOp>(
        loc, b.getI32IntegerAttr(static_cast<int32_t>(v)));
  }
  Value i64(uint64_t v) {
    return b.create<arith::ConstantOp>(
        loc, b.getI64IntegerAttr(static_cast<int64_t>(v)));
  }
  /// The low and high 32 bits of a 64-bit value.
  std::pair<Value, Value> split(Value v) {
    Type t = b.getI32Type();
    Value lo = b.create<arith::TruncIOp>(loc, t, v);
    Value hi = b.create<arith::TruncIOp>(
        loc, t, b.create<arith::ShRUIOp>(loc, v, i64(32)));
    return {lo, hi};
  }
  Value bitXor(Value x, Value y) { return b.create<arith::XOrIOp>(loc, x, y); }

  /// The four outputs for a counter and a key.
  std::array<Value, 4> run(std::array<Value, 4> c, uint64_t key) {
    auto k0 = static_cast<uint32_t>(key), k1 = static_cast<uint32_t>(key >> 32);
    for (int round = 0; round < 10; ++round) {
      auto [lo0, hi0] = mulhilo(0xD2511F53u, c[0]);
      auto [lo1, hi1] = mulhilo(0xCD9E8D57u, c[2]);
      c = {bitXor(bitXor(hi1, c[1]), i32(k0)), lo1,
           bitXor(bitXor(hi0, c[3]), i32(k1)), lo0};
      k0 += 0x9E3779B9u;
      k1 += 0xBB67AE85u;
    }
    return c;
  }

  /// (x >> 8) * 2^-24: the top 24 bits as an f32 in [0, 1), exactly.
  Value unit(Value x) {
    Value top = b.create<arith::ShRUIOp>(loc, x, i32(8));
    Value f = b.create<arith::UIToFPOp>(loc, b.getF32Type(), top);
    return b.create<arith::MulFOp>(
        loc, f, b.create<arith::ConstantOp>(loc, b.getF32FloatAttr(0x1p-24)));
  }

private:
  /// The low and high halves of m * x (x a 32-bit value).
  std::pair<Value, Value> mulhilo(uint32_t m, Value x) {
    Value wide = b.create<arith::ExtUIOp>(loc, b.getI64Type(), x);
    return split(b.create<arith::MulIOp>(loc, wide, i64(m)));
  }

  OpBuilder &b;
  Location loc;
};

/// One generic over the result: each element's row-major index and the
/// step make the counter; see locus.random.
Value lowerRandom(Lowering &l, RandomOp op) {
  OpBuilder &b = l.b;
  RankedTensorType type = op.getType();
  unsigned rank = type.getRank();
  auto seed = static_cast<uint64_t>(op.getSeed());
  bool normal = op.getDistribution() == Distribution::normal;
  AffineMap scalar = AffineMap::get(rank, 0, {}, b.getContext());
  return l.generic(
      type, ValueRange{op.getStep()}, {scalar}, l.empty(type),
      b.getMultiDimIdentityMap(rank),
      SmallVector<IteratorType>(rank, IteratorType::parallel),
      [&](OpBuilder &nb, Location nl, ValueRange a) -> Value {
        Philox p(nb, nl);
        Value flat = p.i64(0);
        for (unsigned d = 0; d < rank; ++d) {
          Value i = nb.create<arith::IndexCastUIOp>(
              nl, nb.getI64Type(), nb.create<linalg::IndexOp>(nl, d));
          flat = nb.create<arith::AddIOp>(
              nl, nb.create<arith::MulIOp>(nl, flat, p.i64(type.getDimSize(d))),
              i);
        }
        Value step = nb.create<arith::FPToSIOp>(nl, nb.getI64Type(), a[0]);
        auto [i0, i1] = p.split(flat);
        auto [s0, s1] = p.split(step);
        std::array<Value, 4> x = p.run({i0, i1, s0, s1}, seed);
        if (!normal)
          return p.unit(x[0]);
        // Box-Muller: sqrt(-2 ln(1 - u0)) cos(2 pi u1).
        BodyMath f{nb, nl};
        Value radius = f.sqrt(
            f.mul(f.cst(-2.0),
                  nb.create<math::LogOp>(nl, f.sub(f.cst(1.0), p.unit(x[0])))));
        Value angle = f.mul(f.cst(2 * M_PI), p.unit(x[1]));
        return f.mul(radius, nb.create<math::CosOp>(nl, angle));
      });
}

//===----------------------------------------------------------------------===//
// Patterns
//===----------------------------------------------------------------------===//

/// Replaces an `OpTy` with what `Lower(Lowering &, OpTy)` builds in front of
/// it: a value, or the values of an op with several results (the
/// optimizers). Run in a dialect conversion, the op's operands are still
/// those of the original IR: an operand's producer, lowered already, is
/// replaced only when the conversion completes.
template <typename OpTy, auto Lower> struct LowerOp : OpRewritePattern<OpTy> {
  using OpRewritePattern<OpTy>::OpRewritePattern;

  LogicalResult matchAndRewrite(OpTy op,
                                PatternRewriter &rewriter) const override {
    rewriter.setInsertionPoint(op);
    Lowering l(rewriter, op.getLoc());
    rewriter.replaceOp(op, Lower(l, op));
    return success();
  }
};

/// The elementwise families: one template each.
template <typename OpTy, typename ScalarOp>
using UnaryPattern = LowerOp<OpTy, lowerUnary<OpTy, ScalarOp>>;
template <typename OpTy, typename ScalarOp>
using BinaryPattern = LowerOp<OpTy, lowerBinary<OpTy, ScalarOp>>;
template <typename OpTy, bool Log>
using SoftmaxPattern = LowerOp<OpTy, lowerSoftmax<OpTy, Log>>;
template <typename OpTy, bool IsMax>
using Pool2dPattern = LowerOp<OpTy, lowerPool2d<OpTy, IsMax>>;

class LowerToLinalgPass
    : public locus::impl::LocusLowerToLinalgBase<LowerToLinalgPass> {
public:
  using Base::Base;

  void runOnOperation() override {
    ConversionTarget target(getContext());
    configureLocusToLinalgTarget(target);
    RewritePatternSet patterns(&getContext());
    populateLocusToLinalgPatterns(patterns);
    if (failed(applyPartialConversion(getOperation(), target,
                                      std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace

void locus::populateLocusToLinalgPatterns(RewritePatternSet &patterns) {
  MLIRContext *ctx = patterns.getContext();
  patterns
      .add<UnaryPattern<NegOp, arith::NegFOp>, UnaryPattern<ExpOp, math::ExpOp>,
           UnaryPattern<LogOp, math::LogOp>, UnaryPattern<SqrtOp, math::SqrtOp>,
           UnaryPattern<TanhOp, math::TanhOp>, LowerOp<ReluOp, lowerRelu>,
           LowerOp<SigmoidOp, lowerSigmoid>, LowerOp<PowOp, lowerPow>>(ctx);
  patterns
      .add<UnaryPattern<ErfOp, math::ErfOp>, UnaryPattern<SinOp, math::SinOp>,
           UnaryPattern<CosOp, math::CosOp>, UnaryPattern<AbsOp, math::AbsFOp>,
           UnaryPattern<RsqrtOp, math::RsqrtOp>,
           LowerOp<ReciprocalOp, lowerReciprocal>, LowerOp<SiluOp, lowerSilu>,
           LowerOp<GeluOp, lowerGelu>>(ctx);
  patterns.add<
      BinaryPattern<AddOp, arith::AddFOp>, BinaryPattern<SubOp, arith::SubFOp>,
      BinaryPattern<MulOp, arith::MulFOp>, BinaryPattern<DivOp, arith::DivFOp>,
      BinaryPattern<MaximumOp, arith::MaximumFOp>,
      BinaryPattern<MinimumOp, arith::MinimumFOp>, LowerOp<CmpOp, lowerCmp>,
      LowerOp<CastOp, lowerCast>, LowerOp<SelectOp, lowerSelect>,
      LowerOp<BroadcastOp, lowerBroadcast>>(ctx);
  patterns.add<LowerOp<ConstantOp, lowerConstant>,
               LowerOp<TransposeOp, lowerTranspose>,
               LowerOp<ReshapeOp, lowerReshape>, LowerOp<ConcatOp, lowerConcat>,
               LowerOp<SliceOp, lowerSlice>, LowerOp<GatherOp, lowerGather>>(
      ctx);
  patterns.add<LowerOp<MatmulOp, lowerMatmul>, LowerOp<LinearOp, lowerLinear>,
               LowerOp<Conv2dOp, lowerConv>, Pool2dPattern<MaxPool2dOp, true>,
               Pool2dPattern<AvgPool2dOp, false>>(ctx);
  patterns
      .add<LowerOp<SumOp, lowerSum>, LowerOp<MaxOp, lowerMax>,
           LowerOp<MinOp, lowerMin>, LowerOp<MeanOp, lowerMean>,
           SoftmaxPattern<SoftmaxOp, false>, SoftmaxPattern<LogSoftmaxOp, true>,
           LowerOp<MseLossOp, lowerMseLoss>,
           LowerOp<CrossEntropyOp, lowerCrossEntropy>>(ctx);
  patterns
      .add<LowerOp<OneHotOp, lowerOneHot>, LowerOp<SliceGradOp, lowerSliceGrad>,
           LowerOp<Conv2dInputGradOp, lowerConvInputGrad>,
           LowerOp<Conv2dWeightGradOp, lowerConvWeightGrad>,
           LowerOp<MaxPool2dGradOp, lowerMaxPoolGrad>, LowerOp<SgdOp, lowerSgd>,
           LowerOp<AdamOp, lowerAdam>>(ctx);
  patterns.add<LowerOp<RandomOp, lowerRandom>>(ctx);
}

void locus::configureLocusToLinalgTarget(ConversionTarget &target) {
  target.addLegalDialect<linalg::LinalgDialect, tensor::TensorDialect,
                         arith::ArithDialect, math::MathDialect,
                         bufferization::BufferizationDialect,
                         func::FuncDialect>();
  target.addIllegalDialect<LocusDialect>();
  // The graph's structure, and the kernels fusion made in it.
  target.addLegalOp<GraphOp, OutputOp, AssignOp, KernelOp, YieldOp>();
  // Sources and moves are the plan's: they stay in a graph, and nowhere
  // else (a kernel function reads its arguments).
  target.addDynamicallyLegalOp<InputOp, StateOp, ToOp, CopyOp>(
      [](Operation *op) { return isa<GraphOp>(op->getParentOp()); });
}
