//===- LowerToLinalg.cpp - --locus-lower-to-linalg ------------------------===//
//
// Rewrites every computing locus op into linalg, tensor, arith and math ops on
// tensors, the form both code generators start from (host: bufferize, loops,
// LLVM; CUDA: parallel loops, gpu, NVVM). Sources, outputs and moves between
// devices stay in a graph: they are the plan's business, not a kernel's.
//
// A dialect conversion: one pattern per op (a template per family), and a
// target in which every other locus op is illegal, so that an op without a
// lowering is an error at its location, not a leftover. This file holds the
// elementwise, layout and reduction lowerings, the patterns and the pass;
// Lowering.h the builder they share and the families in files of their own.
//
//===----------------------------------------------------------------------===//

#include "Lowering.h"

#include "locus/Dialect/DynamicDims.h"
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
using namespace locus::lowering;

namespace {

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

/// Halves to even, from math.floor, which every target lowers (NVVM has
/// neither math.roundeven nor math.round in MLIR 19): with f = floor(x)
/// and d = x - f (exact), f + 1 above a half, f below one, and at a half
/// whichever of f and f + 1 is even.
Value lowerRound(Lowering &l, RoundOp op) {
  Value half = l.constantF32(0.5), one = l.constantF32(1.0),
        zero = l.constantF32(0.0);
  return unary(l, op.getInput(), [&](OpBuilder &nb, Location nl, Value x) {
    auto cmp = [&](arith::CmpFPredicate p, Value a, Value b) {
      return nb.create<arith::CmpFOp>(nl, p, a, b);
    };
    Value f = nb.create<math::FloorOp>(nl, x);
    Value d = nb.create<arith::SubFOp>(nl, x, f);
    Value up = nb.create<arith::AddFOp>(nl, f, one);
    // f is even when floor(f / 2) * 2 == f.
    Value halfF =
        nb.create<math::FloorOp>(nl, nb.create<arith::MulFOp>(nl, f, half));
    Value even = cmp(arith::CmpFPredicate::OEQ,
                     nb.create<arith::AddFOp>(nl, halfF, halfF), f);
    Value atHalf = nb.create<arith::SelectOp>(nl, even, f, up);
    Value below = nb.create<arith::SelectOp>(
        nl, cmp(arith::CmpFPredicate::OLT, d, half), f, atHalf);
    Value r = nb.create<arith::SelectOp>(
        nl, cmp(arith::CmpFPredicate::OGT, d, half), up, below);
    // A zero takes x's sign (-0.3 gives -0, as nearbyint), and NaN and
    // the infinities, where d is NaN, give x itself.
    Value signedZero = nb.create<arith::MulFOp>(nl, x, zero);
    r = nb.create<arith::SelectOp>(
        nl, cmp(arith::CmpFPredicate::OEQ, r, signedZero), signedZero, r);
    return nb.create<arith::SelectOp>(nl, cmp(arith::CmpFPredicate::UNO, d, d),
                                      x, r);
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
  if (isa<FloatType>(element)) {
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

/// torch.gather: a parallel op over the indices; each reads the input at
/// its own position with the axis coordinate its index gives. An index
/// outside the axis reads element 0 there and gives zero.
Value lowerGatherElements(Lowering &l, GatherElementsOp op) {
  OpBuilder &b = l.b;
  RankedTensorType out = op.getType();
  int64_t axis = op.getAxis();
  int64_t extent = op.getInput().getType().getDimSize(axis);
  unsigned rank = out.getRank();
  Value input = op.getInput();
  Type element = out.getElementType();
  AffineMap id = b.getMultiDimIdentityMap(rank);
  return l.generic(
      out, ValueRange{op.getIndices()}, {id}, l.empty(out), id,
      SmallVector<IteratorType>(rank, IteratorType::parallel),
      [&](OpBuilder &nb, Location nl, ValueRange a) -> Value {
        Value zero64 =
            nb.create<arith::ConstantOp>(nl, nb.getI64IntegerAttr(0));
        Value inside = inRange(nb, nl, a[0], extent);
        Value safe = nb.create<arith::SelectOp>(nl, inside, a[0], zero64);
        SmallVector<Value> at;
        for (unsigned d = 0; d < rank; ++d)
          at.push_back(
              static_cast<int64_t>(d) == axis
                  ? nb.create<arith::IndexCastOp>(nl, nb.getIndexType(), safe)
                        .getResult()
                  : nb.create<linalg::IndexOp>(nl, d).getResult());
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

/// The most inputs one concat inserts in a chain. One-Shot Bufferize's
/// analysis of a chain of n tensor.insert_slice ops grows about as n^4
/// (measured with MLIR 19: 64 in a chain 0.38 s, 128 5.8 s); a concat of
/// more inputs (an unrolled sequence's steps stacked) is built as a tree of
/// concats of at most this many, which costs a copy per level and
/// bufferizes in linear time (1,024 inputs: 0.2 s).
constexpr size_t kMaxInsertChain = 16;

/// `inputs` inserted one after another along `axis` into an empty `type`.
Value insertChain(Lowering &l, ArrayRef<Value> inputs, int64_t axis,
                  RankedTensorType type) {
  OpBuilder &b = l.b;
  Value result = l.empty(type);
  int64_t offset = 0;
  for (Value input : inputs) {
    RankedTensorType t = l.typeOf(input);
    SmallVector<OpFoldResult> offsets(t.getRank(), b.getIndexAttr(0)), sizes,
        strides(t.getRank(), b.getIndexAttr(1));
    for (int64_t d : t.getShape())
      sizes.push_back(b.getIndexAttr(d));
    offsets[axis] = b.getIndexAttr(offset);
    offset += t.getDimSize(axis);
    result = b.create<tensor::InsertSliceOp>(l.loc, input, result, offsets,
                                             sizes, strides);
  }
  return result;
}

Value lowerConcat(Lowering &l, ConcatOp op) {
  int64_t axis = op.getAxis();
  SmallVector<Value> parts(op.getInputs());
  while (parts.size() > kMaxInsertChain) {
    SmallVector<Value> groups;
    for (size_t k = 0; k < parts.size(); k += kMaxInsertChain) {
      ArrayRef<Value> group =
          ArrayRef(parts).slice(k, std::min(kMaxInsertChain, parts.size() - k));
      SmallVector<int64_t> shape(l.typeOf(group[0]).getShape());
      shape[axis] = 0;
      for (Value v : group)
        shape[axis] += l.typeOf(v).getDimSize(axis);
      groups.push_back(
          group.size() == 1
              ? group[0]
              : insertChain(l, group, axis,
                            RankedTensorType::get(
                                shape, op.getType().getElementType())));
    }
    parts = std::move(groups);
  }
  return insertChain(l, parts, axis, op.getType());
}

Value lowerSlice(Lowering &l, SliceOp op) {
  OpBuilder &b = l.b;
  SmallVector<OpFoldResult> offsets, sizes, strides;
  for (auto [d, off, size, stride] :
       llvm::enumerate(op.getOffsets(), op.getSizes(), op.getStrides())) {
    offsets.push_back(l.offsetIn(op.getInput(), d, off));
    sizes.push_back(b.getIndexAttr(size));
    strides.push_back(b.getIndexAttr(stride));
  }
  auto slice = b.create<tensor::ExtractSliceOp>(
      op.getLoc(), op.getType(), op.getInput(), offsets, sizes, strides);
  if (op->hasAttr(kDimsAttrName)) // narrow_to's window
    slice->setAttr(kWindowAttrName, b.getUnitAttr());
  return slice;
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
  Value sum = l.reduce(op.getInput(), op.getAxes(), 0.0, Lowering::add);
  return l.reshape(l.divideByCount(sum, op.getInput(), op.getAxes()),
                   op.getType());
}

/// The element count along the axes, read from the input's dims (a
/// constant once folded, the run's count with dynamic sizes).
Value lowerCount(Lowering &l, CountOp op) {
  OpBuilder &b = l.b;
  Value n = b.create<arith::ConstantIndexOp>(l.loc, 1);
  for (int64_t axis : op.getAxes())
    n = b.create<arith::MulIOp>(
        l.loc, n, b.create<tensor::DimOp>(l.loc, op.getInput(), axis));
  Value f = b.create<arith::UIToFPOp>(
      l.loc, b.getF32Type(),
      b.create<arith::IndexCastUIOp>(l.loc, b.getI64Type(), n));
  return b.create<tensor::FromElementsOp>(l.loc, op.getType(), ValueRange{f});
}

/// softmax and log_softmax.
template <typename OpTy, bool Log> Value lowerSoftmax(Lowering &l, OpTy op) {
  return l.softmax(op.getInput(), op.getAxis(), Log);
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
    auto dims = op->template getAttrOfType<AffineMapAttr>(kResultDimsAttrName);
    SmallVector<Value> replacements(ValueRange(Lower(l, op)));
    // In a kernel with dynamic sizes, what replaces a dynamic result says
    // its dims, for --locus-dynamic-kernels.
    if (dims && replacements.size() == 1)
      if (Operation *def = replacements.front().getDefiningOp();
          def && def->getNumResults() == 1 && !def->hasAttr(kDimsAttrName))
        def->setAttr(kDimsAttrName, dims);
    rewriter.replaceOp(op, replacements);
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

/// In each kernel function with dynamic sizes (--locus-outline-kernels
/// marks its arguments), the dims of every dynamic result of a locus op,
/// kept on the op for LowerOp.
LogicalResult stashDynamicDims(Operation *root) {
  WalkResult walk = root->walk([](func::FuncOp func) {
    if (!func->hasAttr(kSymbolsAttrName))
      return WalkResult::advance();
    FailureOr<SmallVector<DimSymbol>> symbols = readSymbols(func);
    if (failed(symbols))
      return WalkResult::interrupt();
    DynamicDims dims(std::move(*symbols));
    for (BlockArgument arg : func.getArguments())
      if (auto map = func.getArgAttrOfType<AffineMapAttr>(arg.getArgNumber(),
                                                          kDimsAttrName))
        if (std::optional<DimExprs> given = dimsFromMap(map.getValue()))
          dims.set(arg, std::move(*given));
    unsigned count = dims.symbols().size();
    for (Operation &op : func.getBody().front()) {
      // Of the other dialects' ops (a convolution's runtime call and what
      // feeds it), only a result marked with its dims matters.
      if (!isa_and_nonnull<LocusDialect>(op.getDialect())) {
        if (auto map = op.getAttrOfType<AffineMapAttr>(kDimsAttrName))
          if (std::optional<DimExprs> given = dimsFromMap(map.getValue());
              given && op.getNumResults() == 1)
            dims.set(op.getResult(0), std::move(*given));
        continue;
      }
      if (failed(dims.infer(&op)))
        return WalkResult::interrupt();
      if (op.getNumResults() == 1 && dims.isDynamic(op.getResult(0)))
        op.setAttr(kResultDimsAttrName,
                   AffineMapAttr::get(dimsToMap(dims.dimsOf(op.getResult(0)),
                                                count, func.getContext())));
    }
    return WalkResult::advance();
  });
  return failure(walk.wasInterrupted());
}

class LowerToLinalgPass
    : public locus::impl::LocusLowerToLinalgBase<LowerToLinalgPass> {
public:
  using Base::Base;

  void runOnOperation() override {
    if (failed(stashDynamicDims(getOperation())))
      return signalPassFailure();
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

/// (Lowering.h) One element converted from `from` to `to` by PyTorch's rules.
Value locus::lowering::castElement(OpBuilder &nb, Location nl, Value x,
                                   Type from, Type to) {
  if (from == to)
    return x;
  bool fromFloat = isa<FloatType>(from), toFloat = isa<FloatType>(to);
  if (to.isInteger(1)) {
    Type zeroType = from;
    Value zero = nb.create<arith::ConstantOp>(nl, nb.getZeroAttr(zeroType));
    if (fromFloat)
      return nb.create<arith::CmpFOp>(nl, arith::CmpFPredicate::UNE, x, zero);
    return nb.create<arith::CmpIOp>(nl, arith::CmpIPredicate::ne, x, zero);
  }
  // Between floats: widening is exact; narrowing rounds to nearest even
  // (PyTorch's Tensor.to(torch.bfloat16) and .half()).
  if (fromFloat && toFloat)
    return from.getIntOrFloatBitWidth() < to.getIntOrFloatBitWidth()
               ? nb.create<arith::ExtFOp>(nl, to, x).getResult()
               : nb.create<arith::TruncFOp>(nl, to, x).getResult();
  if (fromFloat)
    return nb.create<arith::FPToSIOp>(nl, to, x);
  if (toFloat)
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

void locus::populateLocusToLinalgPatterns(RewritePatternSet &patterns) {
  MLIRContext *ctx = patterns.getContext();
  patterns
      .add<UnaryPattern<NegOp, arith::NegFOp>, UnaryPattern<ExpOp, math::ExpOp>,
           UnaryPattern<LogOp, math::LogOp>, UnaryPattern<SqrtOp, math::SqrtOp>,
           UnaryPattern<TanhOp, math::TanhOp>, LowerOp<ReluOp, lowerRelu>,
           LowerOp<SigmoidOp, lowerSigmoid>, LowerOp<PowOp, lowerPow>>(ctx);
  patterns.add<
      UnaryPattern<ErfOp, math::ErfOp>, UnaryPattern<SinOp, math::SinOp>,
      UnaryPattern<CosOp, math::CosOp>, UnaryPattern<AbsOp, math::AbsFOp>,
      UnaryPattern<RsqrtOp, math::RsqrtOp>,
      UnaryPattern<FloorOp, math::FloorOp>, UnaryPattern<CeilOp, math::CeilOp>,
      LowerOp<RoundOp, lowerRound>, LowerOp<ReciprocalOp, lowerReciprocal>,
      LowerOp<SiluOp, lowerSilu>, LowerOp<GeluOp, lowerGelu>>(ctx);
  patterns.add<
      BinaryPattern<AddOp, arith::AddFOp>, BinaryPattern<SubOp, arith::SubFOp>,
      BinaryPattern<MulOp, arith::MulFOp>, BinaryPattern<DivOp, arith::DivFOp>,
      BinaryPattern<MaximumOp, arith::MaximumFOp>,
      BinaryPattern<MinimumOp, arith::MinimumFOp>,
      BinaryPattern<FmodOp, arith::RemFOp>, LowerOp<CmpOp, lowerCmp>,
      LowerOp<CastOp, lowerCast>, LowerOp<SelectOp, lowerSelect>,
      LowerOp<BroadcastOp, lowerBroadcast>>(ctx);
  patterns.add<LowerOp<ConstantOp, lowerConstant>,
               LowerOp<TransposeOp, lowerTranspose>,
               LowerOp<ReshapeOp, lowerReshape>, LowerOp<ConcatOp, lowerConcat>,
               LowerOp<SliceOp, lowerSlice>, LowerOp<GatherOp, lowerGather>,
               LowerOp<GatherElementsOp, lowerGatherElements>>(ctx);
  patterns
      .add<LowerOp<MatmulOp, lowerMatmul>, LowerOp<LinearOp, lowerLinear>,
           LowerOp<Conv2dOp, lowerConv>, LowerOp<MaxPool2dOp, lowerMaxPool2d>,
           LowerOp<AvgPool2dOp, lowerAvgPool2d>>(ctx);
  patterns
      .add<LowerOp<SumOp, lowerSum>, LowerOp<MaxOp, lowerMax>,
           LowerOp<MinOp, lowerMin>, LowerOp<MeanOp, lowerMean>,
           LowerOp<CountOp, lowerCount>, SoftmaxPattern<SoftmaxOp, false>,
           SoftmaxPattern<LogSoftmaxOp, true>, LowerOp<MseLossOp, lowerMseLoss>,
           LowerOp<CrossEntropyOp, lowerCrossEntropy>>(ctx);
  patterns
      .add<LowerOp<OneHotOp, lowerOneHot>, LowerOp<SliceGradOp, lowerSliceGrad>,
           LowerOp<GatherGradOp, lowerGatherGrad>,
           LowerOp<GatherElementsGradOp, lowerGatherElementsGrad>,
           LowerOp<Conv2dInputGradOp, lowerConvInputGrad>,
           LowerOp<Conv2dWeightGradOp, lowerConvWeightGrad>,
           LowerOp<MaxPool2dGradOp, lowerMaxPoolGrad>, LowerOp<SgdOp, lowerSgd>,
           LowerOp<BatchNormTrainOp, lowerBatchNormTrain>,
           LowerOp<BatchNormTrainGradOp, lowerBatchNormTrainGrad>,
           LowerOp<AdamOp, lowerAdam>>(ctx);
  patterns.add<LowerOp<RandomOp, lowerRandom>>(ctx);
}

void locus::configureLocusToLinalgTarget(ConversionTarget &target) {
  target.addLegalDialect<linalg::LinalgDialect, tensor::TensorDialect,
                         arith::ArithDialect, math::MathDialect,
                         bufferization::BufferizationDialect, func::FuncDialect,
                         scf::SCFDialect>();
  target.addIllegalDialect<LocusDialect>();
  // The graph's structure, and the kernels fusion made in it.
  target.addLegalOp<GraphOp, OutputOp, AssignOp, KernelOp, YieldOp>();
  // Sources and moves are the plan's: they stay in a graph, and nowhere
  // else (a kernel function reads its arguments).
  target.addDynamicallyLegalOp<InputOp, StateOp, ToOp, CopyOp>(
      [](Operation *op) { return isa<GraphOp>(op->getParentOp()); });
}
