//===- LowerToLinalg.cpp - --locus-lower-to-linalg ------------------------===//
//
// Rewrites every computing locus op into linalg, tensor, arith and math ops on
// tensors, the form both code generators start from (host: bufferize, loops,
// LLVM; CUDA: parallel loops, gpu, NVVM). Sources, outputs and moves between
// devices stay: they are the plan's business, not a kernel's.
//
//===----------------------------------------------------------------------===//

#include "locus/Passes/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/AffineMap.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/TypeSwitch.h"

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
  ArrayRef<int64_t> stride = op.getStride(), dilation = op.getDilation();
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
  Value cols =
      l.generic(colsType, ValueRange{x}, {gather}, l.empty(colsType),
                b.getMultiDimIdentityMap(6),
                SmallVector<IteratorType>(6, IteratorType::parallel),
                [](OpBuilder &, Location, ValueRange a) { return a[0]; });
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
  // Loops (n, o, oh, ow, c, kh, kw); the input channel of output channel o is
  // (o floordiv outPerGroup) * inPerGroup + c.
  AffineExpr n = b.getAffineDimExpr(0), o = b.getAffineDimExpr(1),
             oh = b.getAffineDimExpr(2), ow = b.getAffineDimExpr(3),
             c = b.getAffineDimExpr(4), kh = b.getAffineDimExpr(5),
             kw = b.getAffineDimExpr(6);
  MLIRContext *ctx = b.getContext();
  AffineMap inMap = AffineMap::get(7, 0,
                                   {n, o.floorDiv(outPerGroup) * inPerGroup + c,
                                    oh * stride[0] + kh * dilation[0],
                                    ow * stride[1] + kw * dilation[1]},
                                   ctx);
  AffineMap wMap = AffineMap::get(7, 0, {o, c, kh, kw}, ctx);
  AffineMap outMap = AffineMap::get(7, 0, {n, o, oh, ow}, ctx);
  Value init =
      op.getBias()
          ? l.broadcast(l.reshape(op.getBias(),
                                  RankedTensorType::get({w.getDimSize(0), 1, 1},
                                                        out.getElementType())),
                        out)
          : l.filled(out, 0.0);
  SmallVector<IteratorType> iters(4, IteratorType::parallel);
  iters.append(3, IteratorType::reduction);
  return l.generic(out, ValueRange{x, op.getWeight()}, {inMap, wMap}, init,
                   outMap, iters, [](OpBuilder &nb, Location nl, ValueRange a) {
                     Value m = nb.create<arith::MulFOp>(nl, a[0], a[1]);
                     return nb.create<arith::AddFOp>(nl, a[2], m);
                   });
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
  SmallVector<IteratorType> iters{
      IteratorType::parallel,  IteratorType::parallel, IteratorType::reduction,
      IteratorType::reduction, IteratorType::parallel, IteratorType::parallel};
  Value result = l.generic(
      out, ValueRange{x, window}, {in, windowMap}, l.filled(out, pad), outMap,
      iters, [isMax](OpBuilder &nb, Location nl, ValueRange a) -> Value {
        if (isMax)
          return nb.create<arith::MaximumFOp>(nl, a[0], a[2]);
        return nb.create<arith::AddFOp>(nl, a[0], a[2]);
      });
  if (isMax)
    return result;
  return l.scale(result, 1.0 / static_cast<double>(k[0] * k[1]));
}

Value lowerMatmul(Lowering &l, MatmulOp op) {
  OpBuilder &b = l.b;
  RankedTensorType out = op.getType();
  RankedTensorType lhs = op.getLhs().getType(), rhs = op.getRhs().getType();
  if (out.getRank() == 2)
    return b
        .create<linalg::MatmulOp>(l.loc, TypeRange{out},
                                  ValueRange{op.getLhs(), op.getRhs()},
                                  ValueRange{l.filled(out, 0.0)})
        .getResult(0);
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

Value lowerCrossEntropy(Lowering &l, CrossEntropyOp op) {
  OpBuilder &b = l.b;
  Value logp = l.softmax(op.getLogits(), 1, /*log=*/true);
  RankedTensorType labels = op.getLabels().getType();
  auto picked = RankedTensorType::get(labels.getShape(), b.getF32Type());
  AffineMap id = b.getMultiDimIdentityMap(1);
  Value nll = l.generic(
      picked, ValueRange{op.getLabels()}, {id}, l.empty(picked), id,
      {IteratorType::parallel}, [&](OpBuilder &nb, Location nl, ValueRange a) {
        Value row = nb.create<linalg::IndexOp>(nl, 0);
        Value cls = nb.create<arith::IndexCastOp>(nl, nb.getIndexType(), a[0]);
        Value v = nb.create<tensor::ExtractOp>(nl, logp, ValueRange{row, cls});
        return nb.create<arith::NegFOp>(nl, v);
      });
  return l.total(nll, op.getReduction());
}

/// The replacement of `op`, or null for ops that stay (sources, outputs,
/// moves, and ops of other dialects).
Value lower(Operation *op) {
  OpBuilder b(op);
  Lowering l(b, op->getLoc());
  auto unary = [&](Value x, auto build) {
    return l.elementwise(l.typeOf(x), ValueRange{x},
                         [&](OpBuilder &nb, Location nl, ValueRange a) {
                           return build(nb, nl, a[0]);
                         });
  };
  auto binary = [&](Operation *o, auto build) {
    return l.elementwise(l.typeOf(o->getResult(0)), o->getOperands(),
                         [&](OpBuilder &nb, Location nl, ValueRange a) {
                           return build(nb, nl, a[0], a[1]);
                         });
  };
  return llvm::TypeSwitch<Operation *, Value>(op)
      .Case<ConstantOp>([&](ConstantOp c) -> Value {
        return b.create<arith::ConstantOp>(c.getLoc(),
                                           cast<TypedAttr>(c.getValue()));
      })
      .Case<NegOp>([&](NegOp o) {
        return unary(o.getInput(), [](OpBuilder &nb, Location nl, Value x) {
          return nb.create<arith::NegFOp>(nl, x);
        });
      })
      .Case<ExpOp>([&](ExpOp o) {
        return unary(o.getInput(), [](OpBuilder &nb, Location nl, Value x) {
          return nb.create<math::ExpOp>(nl, x);
        });
      })
      .Case<LogOp>([&](LogOp o) {
        return unary(o.getInput(), [](OpBuilder &nb, Location nl, Value x) {
          return nb.create<math::LogOp>(nl, x);
        });
      })
      .Case<SqrtOp>([&](SqrtOp o) {
        return unary(o.getInput(), [](OpBuilder &nb, Location nl, Value x) {
          return nb.create<math::SqrtOp>(nl, x);
        });
      })
      .Case<TanhOp>([&](TanhOp o) {
        return unary(o.getInput(), [](OpBuilder &nb, Location nl, Value x) {
          return nb.create<math::TanhOp>(nl, x);
        });
      })
      .Case<ReluOp>([&](ReluOp o) {
        Value zero = l.constantF32(0.0);
        return unary(o.getInput(), [&](OpBuilder &nb, Location nl, Value x) {
          return nb.create<arith::MaximumFOp>(nl, x, zero);
        });
      })
      .Case<SigmoidOp>([&](SigmoidOp o) {
        Value one = l.constantF32(1.0);
        return unary(o.getInput(), [&](OpBuilder &nb, Location nl, Value x) {
          Value e = nb.create<math::ExpOp>(nl, nb.create<arith::NegFOp>(nl, x));
          return nb.create<arith::DivFOp>(nl, one,
                                          nb.create<arith::AddFOp>(nl, one, e));
        });
      })
      .Case<PowOp>([&](PowOp o) {
        double e = o.getExponent().convertToDouble();
        Value exponent = l.constantF32(e);
        return unary(o.getInput(), [&](OpBuilder &nb, Location nl, Value x) {
          if (e == 2.0)
            return nb.create<arith::MulFOp>(nl, x, x).getResult();
          return nb.create<math::PowFOp>(nl, x, exponent).getResult();
        });
      })
      .Case<AddOp>([&](AddOp o) {
        return binary(o, [](OpBuilder &nb, Location nl, Value a, Value c) {
          return nb.create<arith::AddFOp>(nl, a, c);
        });
      })
      .Case<SubOp>([&](SubOp o) {
        return binary(o, [](OpBuilder &nb, Location nl, Value a, Value c) {
          return nb.create<arith::SubFOp>(nl, a, c);
        });
      })
      .Case<MulOp>([&](MulOp o) {
        return binary(o, [](OpBuilder &nb, Location nl, Value a, Value c) {
          return nb.create<arith::MulFOp>(nl, a, c);
        });
      })
      .Case<DivOp>([&](DivOp o) {
        return binary(o, [](OpBuilder &nb, Location nl, Value a, Value c) {
          return nb.create<arith::DivFOp>(nl, a, c);
        });
      })
      .Case<MaximumOp>([&](MaximumOp o) {
        return binary(o, [](OpBuilder &nb, Location nl, Value a, Value c) {
          return nb.create<arith::MaximumFOp>(nl, a, c);
        });
      })
      .Case<CmpOp>([&](CmpOp o) {
        arith::CmpFPredicate predicate;
        switch (o.getPredicate()) {
        case CmpPredicate::eq:
          predicate = arith::CmpFPredicate::OEQ;
          break;
        case CmpPredicate::ne:
          predicate = arith::CmpFPredicate::UNE;
          break;
        case CmpPredicate::lt:
          predicate = arith::CmpFPredicate::OLT;
          break;
        case CmpPredicate::le:
          predicate = arith::CmpFPredicate::OLE;
          break;
        case CmpPredicate::gt:
          predicate = arith::CmpFPredicate::OGT;
          break;
        case CmpPredicate::ge:
          predicate = arith::CmpFPredicate::OGE;
          break;
        }
        return binary(o, [&](OpBuilder &nb, Location nl, Value a, Value c) {
          return nb.create<arith::CmpFOp>(nl, predicate, a, c);
        });
      })
      .Case<SelectOp>([&](SelectOp o) {
        return l.elementwise(o.getType(), o->getOperands(),
                             [](OpBuilder &nb, Location nl, ValueRange a) {
                               return nb.create<arith::SelectOp>(nl, a[0], a[1],
                                                                 a[2]);
                             });
      })
      .Case<BroadcastOp>(
          [&](BroadcastOp o) { return l.broadcast(o.getInput(), o.getType()); })
      .Case<MatmulOp>([&](MatmulOp o) { return lowerMatmul(l, o); })
      .Case<LinearOp>([&](LinearOp o) { return lowerLinear(l, o); })
      .Case<TransposeOp>([&](TransposeOp o) -> Value {
        return b
            .create<linalg::TransposeOp>(o.getLoc(), o.getInput(),
                                         l.empty(o.getType()),
                                         o.getPermutation())
            .getResult()[0];
      })
      .Case<ReshapeOp>(
          [&](ReshapeOp o) { return l.reshape(o.getInput(), o.getType()); })
      .Case<ConcatOp>([&](ConcatOp o) {
        Value result = l.empty(o.getType());
        int64_t axis = o.getAxis(), offset = 0;
        for (Value input : o.getInputs()) {
          RankedTensorType t = l.typeOf(input);
          SmallVector<OpFoldResult> offsets(t.getRank(), b.getIndexAttr(0)),
              sizes, strides(t.getRank(), b.getIndexAttr(1));
          for (int64_t d : t.getShape())
            sizes.push_back(b.getIndexAttr(d));
          offsets[axis] = b.getIndexAttr(offset);
          offset += t.getDimSize(axis);
          result = b.create<tensor::InsertSliceOp>(o.getLoc(), input, result,
                                                   offsets, sizes, strides);
        }
        return result;
      })
      .Case<SliceOp>([&](SliceOp o) -> Value {
        SmallVector<OpFoldResult> offsets, sizes, strides;
        for (auto [off, size, stride] :
             llvm::zip(o.getOffsets(), o.getSizes(), o.getStrides())) {
          offsets.push_back(b.getIndexAttr(off));
          sizes.push_back(b.getIndexAttr(size));
          strides.push_back(b.getIndexAttr(stride));
        }
        return b.create<tensor::ExtractSliceOp>(
            o.getLoc(), o.getType(), o.getInput(), offsets, sizes, strides);
      })
      .Case<SumOp>([&](SumOp o) {
        return l.reshape(
            l.reduce(o.getInput(), o.getAxes(), 0.0, Lowering::add),
            o.getType());
      })
      .Case<MaxOp>([&](MaxOp o) {
        return l.reshape(l.reduce(o.getInput(), o.getAxes(),
                                  -std::numeric_limits<double>::infinity(),
                                  Lowering::max),
                         o.getType());
      })
      .Case<MeanOp>([&](MeanOp o) {
        int64_t count = 1;
        for (int64_t axis : o.getAxes())
          count *= o.getInput().getType().getDimSize(axis);
        Value sum = l.reduce(o.getInput(), o.getAxes(), 0.0, Lowering::add);
        return l.reshape(l.scale(sum, 1.0 / static_cast<double>(count)),
                         o.getType());
      })
      .Case<SoftmaxOp>([&](SoftmaxOp o) {
        return l.softmax(o.getInput(), o.getAxis(), /*log=*/false);
      })
      .Case<LogSoftmaxOp>([&](LogSoftmaxOp o) {
        return l.softmax(o.getInput(), o.getAxis(), /*log=*/true);
      })
      .Case<Conv2dOp>([&](Conv2dOp o) { return lowerConv(l, o); })
      .Case<MaxPool2dOp>([&](MaxPool2dOp o) { return lowerPool(l, o, true); })
      .Case<AvgPool2dOp>([&](AvgPool2dOp o) { return lowerPool(l, o, false); })
      .Case<MseLossOp>([&](MseLossOp o) {
        Value sq = l.elementwise(o.getInput().getType(), o->getOperands(),
                                 [](OpBuilder &nb, Location nl, ValueRange a) {
                                   Value d =
                                       nb.create<arith::SubFOp>(nl, a[0], a[1]);
                                   return nb.create<arith::MulFOp>(nl, d, d);
                                 });
        return l.total(sq, o.getReduction());
      })
      .Case<CrossEntropyOp>(
          [&](CrossEntropyOp o) { return lowerCrossEntropy(l, o); })
      .Default([](Operation *) { return Value(); });
}

class LowerToLinalgPass
    : public locus::impl::LocusLowerToLinalgBase<LowerToLinalgPass> {
public:
  using Base::Base;
  void runOnOperation() override {
    SmallVector<Operation *> ops;
    getOperation()->walk([&](Operation *op) {
      if (op->getDialect() && op->getDialect()->getNamespace() ==
                                  LocusDialect::getDialectNamespace())
        ops.push_back(op);
    });
    for (Operation *op : ops) {
      Value replacement = lower(op);
      if (!replacement)
        continue;
      op->getResult(0).replaceAllUsesWith(replacement);
      op->erase();
    }
  }
};

} // namespace
