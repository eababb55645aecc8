//===- Autodiff.cpp - reverse-mode differentiation of a graph ------------===//
//
// Walks the graph backwards from the loss and records, for each op on a path
// from a differentiated value to the loss, the ops of the dialect that give
// the gradients of its operands (vector-Jacobian products, as PyTorch's
// derivatives.yaml writes them). Contributions to one value are summed.
// Only operands that depend on a differentiated value get gradients: the
// first convolution of a network never computes its input's gradient.
//
//===----------------------------------------------------------------------===//

#include "locus/Dialect/Autodiff.h"
#include "locus/Dialect/DynamicDims.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace locus;

namespace {

/// Marks `grad` (defined by an op recorded after `lastForward`, the graph's
/// last op before the backward pass) as a parameter's gradient.
void markGradient(Value grad, Operation *lastForward) {
  Operation *def = grad.getDefiningOp();
  if (!def || !def->getBlock() || lastForward->getBlock() != def->getBlock() ||
      !lastForward->isBeforeInBlock(def))
    return;
  if (def->getNumResults() == 1) {
    def->setAttr(kGradientAttrName, UnitAttr::get(def->getContext()));
    return;
  }
  SmallVector<int64_t> results;
  if (auto marked = def->getAttrOfType<DenseI64ArrayAttr>(kGradientAttrName))
    results.assign(marked.asArrayRef().begin(), marked.asArrayRef().end());
  int64_t number = cast<OpResult>(grad).getResultNumber();
  if (!llvm::is_contained(results, number))
    results.push_back(number);
  llvm::sort(results);
  def->setAttr(kGradientAttrName,
               DenseI64ArrayAttr::get(def->getContext(), results));
}

class Differentiator {
public:
  Differentiator(GraphOp graph)
      : graph(graph), b(graph.getContext()),
        dynamic(graph->hasAttr(kSymbolsAttrName)) {
    b.setInsertionPointToEnd(&graph.getBodyBlock());
    if (dynamic) {
      // The forward values' dims, before any backward op: a slice's
      // gradient takes the sliced value's. (A graph the analysis refuses
      // is reported where it is verified.)
      ScopedDiagnosticHandler quiet(graph.getContext(),
                                    [](Diagnostic &) { return success(); });
      FailureOr<DynamicDims> found = DynamicDims::analyze(graph);
      if (succeeded(found))
        // NOLINTNEXTLINE(bugprone-unchecked-optional-access): checked.
        forwardDims.emplace(std::move(*found));
    }
  }

  FailureOr<SmallVector<Value>> run(Value loss, ArrayRef<Value> wrt);

private:
  RankedTensorType typeOf(Value v) {
    return cast<RankedTensorType>(v.getType());
  }

  /// A scalar constant broadcast to `shape` (a 0-d constant for []), f32
  /// unless `element` says otherwise (a 16-bit gradient's own type).
  Value splat(double value, ArrayRef<int64_t> shape, Type element = {}) {
    auto scalarType =
        RankedTensorType::get({}, element ? element : b.getF32Type());
    Attribute scalar = b.getFloatAttr(scalarType.getElementType(), value);
    Value c = b.create<ConstantOp>(
        loc, DenseElementsAttr::get(scalarType, ArrayRef<Attribute>{scalar}),
        DeviceAttr());
    return broadcast(c, shape);
  }
  Value splatLike(double value, Value like) {
    Value c = splat(value, {}, typeOf(like).getElementType());
    return broadcastLike(c, like);
  }
  Value broadcast(Value v, ArrayRef<int64_t> shape) {
    if (typeOf(v).getShape() == shape)
      return v;
    return b.create<BroadcastOp>(loc, v, shape);
  }
  /// `v` broadcast to the shape of `like`, and to its dims where `like` is
  /// a forward value of dynamic shape. (A broadcast to a backward value's
  /// shape takes the dims of the op that reads it: bindBroadcastDims.)
  Value broadcastLike(Value v, Value like) {
    Value result = broadcast(v, typeOf(like).getShape());
    if (result != v && forwardDims && forwardDims->isDynamic(like))
      setDims(result.getDefiningOp(), forwardDims->dimsOf(like));
    return result;
  }
  /// Gives `op` (a broadcast, reshape or slice gradient, whose result shape
  /// an attribute says) the dims of its dynamic result.
  void setDims(Operation *op, ArrayRef<DimExpr> dims) {
    if (!forwardDims)
      return;
    op->setAttr(kDimsAttrName,
                AffineMapAttr::get(dimsToMap(
                    dims, forwardDims->symbols().size(), graph.getContext())));
  }
  Value reshape(Value v, ArrayRef<int64_t> shape) {
    if (typeOf(v).getShape() == shape)
      return v;
    return b.create<ReshapeOp>(loc, v, shape);
  }
  /// `v` reshaped to the shape of forward value `like`, with its dims (a
  /// reshape's own rule may find several places for a dynamic size: [8n,
  /// 7] into [8, 8, 7]).
  Value reshapeLike(Value v, Value like) {
    Value result = reshape(v, typeOf(like).getShape());
    if (result != v && forwardDims && forwardDims->isDynamic(like))
      setDims(result.getDefiningOp(), forwardDims->dimsOf(like));
    return result;
  }
  /// v divided by the run's element count of `x` along `axes`, in f32 (a
  /// count past 65504 is no f16); the caller rounds once at the end.
  Value perCount(Value v, Value x, ArrayRef<int64_t> axes) {
    Value count = b.create<CountOp>(loc, x, axes);
    Value spread = typeOf(v).getShape() == typeOf(x).getShape()
                       ? broadcastLike(count, x)
                       : broadcast(count, typeOf(v).getShape());
    return div(inF32(v), spread);
  }
  /// v times a constant, in f32 (1/N of a large N is subnormal in f16, or
  /// zero); the caller rounds once at the end.
  Value scaledBy(Value v, double factor) {
    Value wide = inF32(v);
    return mul(wide, splatLike(factor, wide));
  }
  /// v in f32 (cast up exactly when it is 16-bit).
  Value inF32(Value v) {
    if (typeOf(v).getElementType().isF32())
      return v;
    return b.create<CastOp>(loc, v, TypeAttr::get(b.getF32Type()));
  }
  /// v in like's element type: a loss's f32 gradient or an f32 one-hot
  /// meeting a 16-bit value.
  Value inTypeOf(Value v, Value like) {
    Type element = typeOf(like).getElementType();
    if (typeOf(v).getElementType() == element)
      return v;
    return b.create<CastOp>(loc, v, TypeAttr::get(element));
  }
  Value add(Value x, Value y) { return b.create<AddOp>(loc, x, y); }
  Value sub(Value x, Value y) { return b.create<SubOp>(loc, x, y); }
  Value mul(Value x, Value y) { return b.create<MulOp>(loc, x, y); }
  Value div(Value x, Value y) { return b.create<DivOp>(loc, x, y); }
  Value neg(Value x) { return b.create<NegOp>(loc, x); }
  /// An elementwise unary op of x.
  template <typename OpTy> Value unary(Value x) {
    return b.create<OpTy>(loc, x);
  }
  Value cmp(CmpPredicate p, Value x, Value y) {
    return b.create<CmpOp>(loc, p, x, y);
  }
  Value select(Value c, Value x, Value y) {
    return b.create<SelectOp>(loc, x.getType(), c, x, y);
  }
  Value sum(Value x, ArrayRef<int64_t> axes, bool keepdim) {
    return b.create<SumOp>(loc, x, axes, keepdim);
  }
  /// Swaps the last two dimensions.
  Value transposeLast(Value x) {
    int64_t rank = typeOf(x).getRank();
    SmallVector<int64_t> perm;
    for (int64_t i = 0; i < rank; ++i)
      perm.push_back(i);
    std::swap(perm[rank - 1], perm[rank - 2]);
    return b.create<TransposeOp>(loc, x, perm);
  }
  /// `g` (of a broadcast's result) summed back to `shape`, numpy's rules.
  Value unbroadcast(Value g, Value input) {
    ArrayRef<int64_t> shape = typeOf(input).getShape();
    ArrayRef<int64_t> target = typeOf(g).getShape();
    if (target == shape)
      return g;
    size_t lead = target.size() - shape.size();
    SmallVector<int64_t> axes;
    for (size_t d = 0; d < target.size(); ++d)
      if (d < lead || (shape[d - lead] == 1 && target[d] != 1))
        axes.push_back(static_cast<int64_t>(d));
    Value reduced = axes.empty() ? g : sum(g, axes, false);
    return reshapeLike(reduced, input);
  }
  /// `g` of a reduction of `input` over `axes` spread back over its shape.
  Value unreduce(Value g, Value input, ArrayRef<int64_t> axes) {
    SmallVector<int64_t> keep(typeOf(input).getShape());
    for (int64_t axis : axes)
      keep[axis] = 1;
    return broadcastLike(reshape(g, keep), input);
  }

  /// Adds `g` to the gradient of `v`.
  void accumulate(Value v, Value g) {
    auto [it, inserted] = grads.try_emplace(v, g);
    if (inserted)
      return;
    Value joined = joinSliceGrads(it->second, g);
    it->second = joined ? joined : add(it->second, g);
  }
  /// The sum of two slice gradients whose windows lie side by side along
  /// one axis (unit strides, the same window on every other axis) as one:
  /// the slice gradient of their concatenation, or the concatenation alone
  /// when it fills the tensor. A packed weight sliced into q, k and v gets
  /// its gradient as one concat, not three fills and two adds. Null when
  /// they do not.
  Value joinSliceGrads(Value x, Value y);
  /// `x` and `y` concatenated along `axis`; a concat among them along the
  /// same axis that only the slice gradient being joined reads gives its
  /// inputs instead (one concat, not nested).
  Value concatFlat(Value x, Value y, int64_t axis);
  bool needs(Value v) { return dependent.contains(v); }
  /// `d` times the broadcast scalar gradient `g` of a loss; `d` itself when
  /// `g` is the backward pass's seed (the loss is the value differentiated).
  Value timesScalar(Value d, Value g) {
    if (g == seed)
      return d;
    if (typeOf(g).getElementType() == typeOf(d).getElementType())
      return mul(d, broadcastLike(g, d));
    // A loss's f32 gradient (a GradScaler's 2^16, past f16's range) meets
    // 16-bit values: the product in f32, rounded once.
    return inTypeOf(mul(inF32(d), broadcastLike(inF32(g), d)), d);
  }

  /// Records the gradients of `op`'s operands from `g`, its result's.
  LogicalResult backward(Operation *op, Value g);
  /// Erases what the backward pass recorded after `lastForward`; fails.
  LogicalResult undo(Operation *lastForward);
  /// Fails when a gradient reaches a result of `op` past its first (a
  /// batch norm's statistics).
  LogicalResult checkStatisticsUnread(Operation *op);
  /// Accumulates `make()` into the gradient of `operand` when it needs one.
  void give(Value operand, function_ref<Value()> make) {
    if (needs(operand))
      accumulate(operand, make());
  }

  // The gradient rules by family of ops. Each records the gradients of
  // `op`'s operands from `g` and returns true, or returns false (recording
  // nothing) when `op` is not of its family.

  /// The gradient of gather's input: each slice of `g` added at its index
  /// (an index out of range adds nothing), by `locus.gather_grad`; with
  /// dynamic sizes, as one_hot(indices)^T times `g`.
  Value gatherGrad(GatherOp o, Value g);

  /// Elementwise ops of one operand: neg, exp, log, sqrt, activations, pow.
  bool backwardUnary(Operation *op, Value g);
  /// erf, sin, cos, abs, rsqrt, reciprocal, silu and gelu.
  bool backwardMath(Operation *op, Value g);
  /// d gelu(x) / dx, exact or of the tanh form.
  Value geluDerivative(GeluOp o);
  /// The gradient of pow's input: g * p * x^(p-1), folded for p in {0, 1, 2}.
  Value powGrad(PowOp o, Value g);
  /// Elementwise ops of two operands: arithmetic, maximum and select.
  bool backwardBinary(Operation *op, Value g);
  /// Matrix products: matmul and linear.
  bool backwardLinearAlgebra(Operation *op, Value g);
  /// Ops that move elements: broadcast, transpose, reshape, concat, slice.
  bool backwardShape(Operation *op, Value g);
  /// The gradient of each input of a concat: its slice of `g`.
  void concatGrad(ConcatOp o, Value g);
  /// Reductions and normalizations: sum, mean, max, softmax, log_softmax.
  bool backwardReduction(Operation *op, Value g);
  /// Convolution and pooling.
  bool backwardConvPool(Operation *op, Value g);
  /// Loss ops: mse_loss and cross_entropy.
  bool backwardLoss(Operation *op, Value g);
  /// The gradients of mse_loss's input and target: one value, negated for
  /// the target, when both need it.
  void mseLossGrad(MseLossOp o, Value g);
  /// Transfers: the gradient goes back to where the input was made.
  bool backwardPlacement(Operation *op, Value g);

  GraphOp graph;
  OpBuilder b;
  /// The graph has dynamic sizes: counts are read at run time.
  bool dynamic;
  /// With dynamic sizes, the dims of the values before differentiation.
  std::optional<DynamicDims> forwardDims;
  Location loc = UnknownLoc::get(graph.getContext());
  DenseMap<Value, Value> grads;
  llvm::DenseSet<Value> dependent;
  Value seed;
};

FailureOr<SmallVector<Value>> Differentiator::run(Value loss,
                                                  ArrayRef<Value> wrt) {
  Block &body = graph.getBodyBlock();
  auto owned = [&](Value v) {
    Operation *def = v.getDefiningOp();
    return def && def->getBlock() == &body;
  };
  auto lossType = dyn_cast<RankedTensorType>(loss.getType());
  if (!owned(loss) || !lossType || lossType.getRank() != 0 ||
      !isa<FloatType>(lossType.getElementType()))
    return emitError(owned(loss) ? loss.getLoc() : graph.getLoc())
           << "the loss must be a scalar float value of graph @"
           << graph.getSymName() << ", got " << loss.getType();
  for (Value v : wrt) {
    auto type = dyn_cast<RankedTensorType>(v.getType());
    if (!owned(v) || !type || !isa<FloatType>(type.getElementType()))
      return emitError(owned(v) ? v.getLoc() : graph.getLoc())
             << "can only differentiate with respect to float values of graph @"
             << graph.getSymName() << ", got " << v.getType();
  }

  // Values that depend on a differentiated one, in graph order.
  for (Value v : wrt)
    dependent.insert(v);
  // An op recorded under no_grad gives constants: nothing flows back
  // through it.
  for (Operation &op : body)
    if (!op.hasAttr(kNoGradAttrName) &&
        llvm::any_of(op.getOperands(), [&](Value v) { return needs(v); }))
      for (Value r : op.getResults())
        if (isa<FloatType>(
                cast<RankedTensorType>(r.getType()).getElementType()))
          dependent.insert(r);

  Operation *lastForward = &body.back();
  if (needs(loss)) {
    loc = backwardLoc(loss.getLoc());
    seed = splat(1.0, {}, lossType.getElementType());
    grads[loss] = seed;
    for (Operation *op = loss.getDefiningOp(); op; op = op->getPrevNode()) {
      if (op->getNumResults() != 1 && !isa<BatchNormTrainOp>(op))
        continue;
      if (failed(checkStatisticsUnread(op)))
        return undo(lastForward);
      auto it = grads.find(op->getResult(0));
      if (it == grads.end() || isa<InputOp, StateOp, ConstantOp>(op))
        continue;
      loc = backwardLoc(op->getLoc());
      if (failed(backward(op, it->second)))
        return undo(lastForward);
    }
  }
  // The seed is multiplied in nowhere when the loss is a loss op's result.
  if (seed && seed.use_empty())
    seed.getDefiningOp()->erase();
  SmallVector<Value> result;
  for (Value v : wrt) {
    loc = backwardLoc(v.getLoc());
    Value g = grads.lookup(v);
    if (g && v.getDefiningOp<StateOp>())
      markGradient(g, lastForward);
    result.push_back(g ? g : splatLike(0.0, v));
  }
  return result;
}

Value Differentiator::gatherGrad(GatherOp o, Value g) {
  RankedTensorType in = typeOf(o.getInput());
  int64_t axis = o.getAxis(), extent = in.getDimSize(axis);
  bool sizedAtRun =
      dynamic && (!forwardDims || forwardDims->isDynamic(o.getInput()) ||
                  forwardDims->isDynamic(o.getIndices()));
  if (!sizedAtRun) {
    // In f32, where a 16-bit sum of repeated indices would round each time.
    return inTypeOf(b.create<GatherGradOp>(loc, inF32(g), o.getIndices(),
                                           b.getI64IntegerAttr(axis),
                                           b.getI64IntegerAttr(extent)),
                    o.getInput());
  }
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d)
    outer *= in.getDimSize(d);
  for (int64_t d = axis + 1; d < in.getRank(); ++d)
    inner *= in.getDimSize(d);
  int64_t count = typeOf(o.getIndices()).getNumElements();
  Value flat = reshape(o.getIndices(), {count});
  // [count, extent] -> [extent, count]: which result slices land where.
  Value scatter =
      transposeLast(inTypeOf(b.create<OneHotOp>(loc, flat, extent), g));
  Value sum;
  if (outer == 1) {
    sum = b.create<MatmulOp>(loc, scatter, reshape(g, {count, inner}));
  } else {
    Value batched = broadcast(scatter, {outer, extent, count});
    Value rows = reshape(g, {outer, count, inner});
    if (forwardDims && (forwardDims->isDynamic(o.getInput()) ||
                        forwardDims->isDynamic(o.getIndices()))) {
      // The dims of [outer, extent, count] and [outer, count, inner]; the
      // shapes alone cannot tell where a dynamic size goes.
      DimExprs dims = forwardDims->dimsOf(o.getInput());
      ArrayRef<DimExpr> all(dims);
      DimExpr outerDim = elementCount(all.take_front(axis));
      DimExpr countDim = elementCount(forwardDims->dimsOf(o.getIndices()));
      DimExpr innerDim = elementCount(all.drop_front(axis + 1));
      setDims(batched.getDefiningOp(), {outerDim, dims[axis], countDim});
      if (rows != g)
        setDims(rows.getDefiningOp(), {outerDim, countDim, innerDim});
    }
    sum = b.create<MatmulOp>(loc, batched, rows);
  }
  Value result = reshape(sum, in.getShape());
  if (result != sum && forwardDims && forwardDims->isDynamic(o.getInput()))
    setDims(result.getDefiningOp(), forwardDims->dimsOf(o.getInput()));
  return result;
}

LogicalResult Differentiator::undo(Operation *lastForward) {
  // Nothing recorded survives a failure.
  Block &body = graph.getBodyBlock();
  while (&body.back() != lastForward)
    body.back().erase();
  return failure();
}

LogicalResult Differentiator::checkStatisticsUnread(Operation *op) {
  for (Value statistic : op->getResults().drop_front())
    if (grads.count(statistic))
      return op->emitOpError()
             << "has no gradient through its batch statistics: the loss "
                "reads the batch mean or variance (only the normalized "
                "result is differentiated)";
  return success();
}

LogicalResult Differentiator::backward(Operation *op, Value g) {
  if (backwardUnary(op, g) || backwardBinary(op, g) ||
      backwardLinearAlgebra(op, g) || backwardShape(op, g) ||
      backwardReduction(op, g) || backwardConvPool(op, g) ||
      backwardLoss(op, g) || backwardPlacement(op, g) ||
      isa<CmpOp, OneHotOp, CountOp>(op))
    return success();
  // Steps: zero almost everywhere, as PyTorch's gradients of them are.
  if (isa<FloorOp, CeilOp, RoundOp>(op))
    return success();
  // Random numbers depend on the run counter alone: no gradient.
  if (isa<RandomOp>(op))
    return success();
  return op->emitOpError()
         << "has no gradient: reverse-mode autodiff covers the forward "
            "ops of the dialect, not gradients, optimizer steps or "
            "kernels";
}

bool Differentiator::backwardUnary(Operation *op, Value g) {
  Value y = op->getResult(0);
  return llvm::TypeSwitch<Operation *, bool>(op)
      .Case<NegOp>([&](NegOp o) {
        give(o.getInput(), [&] { return neg(g); });
        return true;
      })
      .Case<ExpOp>([&](ExpOp o) {
        give(o.getInput(), [&] { return mul(g, y); });
        return true;
      })
      .Case<LogOp>([&](LogOp o) {
        give(o.getInput(), [&] { return div(g, o.getInput()); });
        return true;
      })
      .Case<SqrtOp>([&](SqrtOp o) {
        give(o.getInput(), [&] { return div(g, mul(y, splatLike(2.0, y))); });
        return true;
      })
      .Case<ReluOp>([&](ReluOp o) {
        give(o.getInput(), [&] {
          return select(cmp(CmpPredicate::gt, y, splatLike(0.0, y)), g,
                        splatLike(0.0, y));
        });
        return true;
      })
      .Case<SigmoidOp>([&](SigmoidOp o) {
        give(o.getInput(),
             [&] { return mul(g, mul(sub(splatLike(1.0, y), y), y)); });
        return true;
      })
      .Case<TanhOp>([&](TanhOp o) {
        give(o.getInput(),
             [&] { return mul(g, sub(splatLike(1.0, y), mul(y, y))); });
        return true;
      })
      .Case<PowOp>([&](PowOp o) {
        give(o.getInput(), [&] { return powGrad(o, g); });
        return true;
      })
      .Default([&](Operation *) { return backwardMath(op, g); });
}

bool Differentiator::backwardMath(Operation *op, Value g) {
  Value y = op->getNumResults() ? op->getResult(0) : Value();
  return TypeSwitch<Operation *, bool>(op)
      .Case<ErfOp>([&](ErfOp o) {
        // d erf(x) = 2 / sqrt(pi) e^(-x^2)
        Value x = o.getInput();
        give(x, [&] {
          return mul(g, mul(splatLike(1.1283791670955126, x),
                            unary<ExpOp>(neg(mul(x, x)))));
        });
        return true;
      })
      .Case<SinOp>([&](SinOp o) {
        give(o.getInput(), [&] { return mul(g, unary<CosOp>(o.getInput())); });
        return true;
      })
      .Case<CosOp>([&](CosOp o) {
        give(o.getInput(),
             [&] { return neg(mul(g, unary<SinOp>(o.getInput()))); });
        return true;
      })
      .Case<AbsOp>([&](AbsOp o) {
        // sign(x), 0 at 0 (PyTorch's choice)
        Value x = o.getInput(), zero = splatLike(0.0, x);
        give(x, [&] {
          return select(cmp(CmpPredicate::gt, x, zero), g,
                        select(cmp(CmpPredicate::lt, x, zero), neg(g), zero));
        });
        return true;
      })
      .Case<RsqrtOp>([&](RsqrtOp o) {
        // d x^(-1/2) = -1/2 y^3
        give(o.getInput(), [&] {
          return mul(g, mul(splatLike(-0.5, y), mul(y, mul(y, y))));
        });
        return true;
      })
      .Case<ReciprocalOp>([&](ReciprocalOp o) {
        give(o.getInput(), [&] { return neg(mul(g, mul(y, y))); });
        return true;
      })
      .Case<SiluOp>([&](SiluOp o) {
        // d x s(x) = s (1 + x (1 - s))
        Value x = o.getInput();
        give(x, [&] {
          Value s = unary<SigmoidOp>(x);
          Value one = splatLike(1.0, x);
          return mul(g, mul(s, add(one, mul(x, sub(one, s)))));
        });
        return true;
      })
      .Case<GeluOp>([&](GeluOp o) {
        give(o.getInput(), [&] { return mul(g, geluDerivative(o)); });
        return true;
      })
      .Default([](Operation *) { return false; });
}

Value Differentiator::geluDerivative(GeluOp o) {
  Value x = o.getInput();
  Value half = splatLike(0.5, x), one = splatLike(1.0, x);
  if (!o.getTanh()) {
    // Phi(x) + x phi(x) = 0.5 (1 + erf(x / sqrt 2)) + x e^(-x^2/2) / sqrt(2 pi)
    Value cdf = mul(
        half, add(one, unary<ErfOp>(mul(x, splatLike(0.7071067811865476, x)))));
    Value pdf = mul(splatLike(0.3989422804014327, x),
                    unary<ExpOp>(mul(splatLike(-0.5, x), mul(x, x))));
    return add(cdf, mul(x, pdf));
  }
  // y = 0.5 x (1 + t), t = tanh(k (x + c x^3)):
  // y' = 0.5 (1 + t) + 0.5 x (1 - t^2) k (1 + 3 c x^2)
  constexpr double k = 0.7978845608028654, c = 0.044715;
  Value x2 = mul(x, x);
  Value inner = mul(splatLike(k, x), add(x, mul(splatLike(c, x), mul(x2, x))));
  Value t = unary<TanhOp>(inner);
  Value dInner = mul(splatLike(k, x), add(one, mul(splatLike(3 * c, x), x2)));
  return add(mul(half, add(one, t)),
             mul(mul(half, x), mul(sub(one, mul(t, t)), dInner)));
}

Value Differentiator::powGrad(PowOp o, Value g) {
  double p = o.getExponent().convertToDouble();
  Value x = o.getInput();
  if (p == 0.0)
    return splatLike(0.0, x);
  Value base =
      p == 2.0 ? x
      : p == 1.0
          ? splatLike(1.0, x)
          : b.create<PowOp>(loc, x, b.getF64FloatAttr(p - 1)).getResult();
  return mul(g, mul(splatLike(p, x), base));
}

bool Differentiator::backwardBinary(Operation *op, Value g) {
  return llvm::TypeSwitch<Operation *, bool>(op)
      .Case<AddOp>([&](AddOp o) {
        give(o.getLhs(), [&] { return g; });
        give(o.getRhs(), [&] { return g; });
        return true;
      })
      .Case<SubOp>([&](SubOp o) {
        give(o.getLhs(), [&] { return g; });
        give(o.getRhs(), [&] { return neg(g); });
        return true;
      })
      .Case<MulOp>([&](MulOp o) {
        give(o.getLhs(), [&] { return mul(g, o.getRhs()); });
        give(o.getRhs(), [&] { return mul(g, o.getLhs()); });
        return true;
      })
      .Case<DivOp>([&](DivOp o) {
        Value a = o.getLhs(), c = o.getRhs();
        give(a, [&] { return div(g, c); });
        give(c, [&] { return neg(div(mul(g, a), mul(c, c))); });
        return true;
      })
      .Case<FmodOp>([&](FmodOp o) {
        // a - b trunc(a / b): 1 for a, -trunc(a / b) for b, as PyTorch.
        Value a = o.getLhs(), c = o.getRhs();
        give(a, [&] { return g; });
        give(c, [&] {
          Value q = div(a, c);
          Value t = select(cmp(CmpPredicate::lt, q, splatLike(0.0, q)),
                           unary<CeilOp>(q), unary<FloorOp>(q));
          return neg(mul(g, t));
        });
        return true;
      })
      .Case<MaximumOp, MinimumOp>([&](Operation *o) {
        // PyTorch: ties share the gradient equally; the loser gets none.
        CmpPredicate loses =
            isa<MaximumOp>(o) ? CmpPredicate::lt : CmpPredicate::gt;
        auto part = [&](Value self, Value other) {
          Value zero = splatLike(0.0, g);
          Value half = mul(g, splatLike(0.5, g));
          return select(cmp(loses, self, other), zero,
                        select(cmp(CmpPredicate::eq, self, other), half, g));
        };
        Value lhs = o->getOperand(0), rhs = o->getOperand(1);
        give(lhs, [&] { return part(lhs, rhs); });
        give(rhs, [&] { return part(rhs, lhs); });
        return true;
      })
      .Case<CastOp>([&](CastOp o) {
        // Only float to float reaches here (integer results never carry
        // one): the gradient goes back in the operand's type, as PyTorch's
        // Tensor.to(dtype) gives it.
        Type from = typeOf(o.getInput()).getElementType();
        give(o.getInput(), [&]() -> Value {
          if (typeOf(g).getElementType() == from)
            return g;
          return b.create<CastOp>(loc, g, TypeAttr::get(from));
        });
        return true;
      })
      .Case<SelectOp>([&](SelectOp o) {
        Value zero = splatLike(0.0, g);
        give(o.getTrueValue(),
             [&] { return select(o.getCondition(), g, zero); });
        give(o.getFalseValue(),
             [&] { return select(o.getCondition(), zero, g); });
        return true;
      })
      .Default([](Operation *) { return false; });
}

bool Differentiator::backwardLinearAlgebra(Operation *op, Value g) {
  return llvm::TypeSwitch<Operation *, bool>(op)
      .Case<MatmulOp>([&](MatmulOp o) {
        give(o.getLhs(), [&]() -> Value {
          return b.create<MatmulOp>(loc, g, transposeLast(o.getRhs()));
        });
        give(o.getRhs(), [&]() -> Value {
          return b.create<MatmulOp>(loc, transposeLast(o.getLhs()), g);
        });
        return true;
      })
      .Case<LinearOp>([&](LinearOp o) {
        RankedTensorType x = typeOf(o.getInput()), w = typeOf(o.getWeight());
        int64_t in = w.getDimSize(1), out = w.getDimSize(0);
        int64_t rows = x.getNumElements() / in;
        Value g2 = reshape(g, {rows, out});
        give(o.getInput(), [&] {
          return reshapeLike(b.create<MatmulOp>(loc, g2, o.getWeight()),
                             o.getInput());
        });
        give(o.getWeight(), [&]() -> Value {
          Value x2 = reshape(o.getInput(), {rows, in});
          return b.create<MatmulOp>(loc, transposeLast(g2), x2);
        });
        if (Value bias = o.getBias())
          give(bias, [&] { return sum(g2, {0}, false); });
        return true;
      })
      .Default([](Operation *) { return false; });
}

bool Differentiator::backwardShape(Operation *op, Value g) {
  return llvm::TypeSwitch<Operation *, bool>(op)
      .Case<BroadcastOp>([&](BroadcastOp o) {
        give(o.getInput(), [&] { return unbroadcast(g, o.getInput()); });
        return true;
      })
      .Case<GatherOp>([&](GatherOp o) {
        give(o.getInput(), [&] { return gatherGrad(o, g); });
        return true;
      })
      .Case<GatherElementsOp>([&](GatherElementsOp o) {
        give(o.getInput(), [&] {
          RankedTensorType in = typeOf(o.getInput());
          int64_t axis = o.getAxis();
          return inTypeOf(b.create<GatherElementsGradOp>(
                              loc, inF32(g), o.getIndices(),
                              b.getI64IntegerAttr(axis),
                              b.getI64IntegerAttr(in.getDimSize(axis))),
                          o.getInput());
        });
        return true;
      })
      .Case<TransposeOp>([&](TransposeOp o) {
        give(o.getInput(), [&]() -> Value {
          ArrayRef<int64_t> perm = o.getPermutation();
          SmallVector<int64_t> inverse(perm.size());
          for (size_t i = 0; i < perm.size(); ++i)
            inverse[perm[i]] = static_cast<int64_t>(i);
          return b.create<TransposeOp>(loc, g, inverse);
        });
        return true;
      })
      .Case<ReshapeOp>([&](ReshapeOp o) {
        give(o.getInput(), [&] { return reshapeLike(g, o.getInput()); });
        return true;
      })
      .Case<ConcatOp>([&](ConcatOp o) {
        concatGrad(o, g);
        return true;
      })
      .Case<SliceOp>([&](SliceOp o) {
        give(o.getInput(), [&]() -> Value {
          auto grad =
              b.create<SliceGradOp>(loc, g, typeOf(o.getInput()).getShape(),
                                    o.getOffsets(), o.getStrides());
          // A window of a dynamic dimension: the gradient has the sliced
          // value's dims, which its own shape rule cannot know.
          if (forwardDims && forwardDims->isDynamic(o.getInput()))
            grad->setAttr(kDimsAttrName, AffineMapAttr::get(dimsToMap(
                                             forwardDims->dimsOf(o.getInput()),
                                             forwardDims->symbols().size(),
                                             graph.getContext())));
          return grad;
        });
        return true;
      })
      .Default([](Operation *) { return false; });
}

Value Differentiator::joinSliceGrads(Value x, Value y) {
  auto a = x.getDefiningOp<SliceGradOp>(), c = y.getDefiningOp<SliceGradOp>();
  // Both are gradients still being summed: nothing reads them yet.
  if (!a || !c || !x.use_empty() || !y.use_empty())
    return nullptr;
  // Windows of dynamic dimensions (given dims) stay apart: joined, they
  // would cover a whole that only the bound fills.
  auto unit = [](SliceGradOp s) {
    return !s->hasAttr(kDimsAttrName) &&
           llvm::all_of(s.getStrides(), [](int64_t k) { return k == 1; });
  };
  if (!unit(a) || !unit(c) || a.getShape() != c.getShape())
    return nullptr;
  ArrayRef<int64_t> aSize = typeOf(a.getGrad()).getShape(),
                    cSize = typeOf(c.getGrad()).getShape();
  // The one axis along which the windows meet; equal on every other.
  std::optional<int64_t> axis;
  for (int64_t d = 0; d < static_cast<int64_t>(aSize.size()); ++d) {
    int64_t aOff = a.getOffsets()[d], cOff = c.getOffsets()[d];
    if (aOff == cOff && aSize[d] == cSize[d])
      continue;
    if (axis || (aOff + aSize[d] != cOff && cOff + cSize[d] != aOff))
      return nullptr;
    axis = d;
  }
  if (!axis)
    return nullptr;
  bool aFirst = a.getOffsets()[*axis] < c.getOffsets()[*axis];
  SliceGradOp first = aFirst ? a : c, second = aFirst ? c : a;
  Value joined = concatFlat(first.getGrad(), second.getGrad(), *axis);
  Value result = typeOf(joined).getShape() == a.getShape()
                     ? joined
                     : b.create<SliceGradOp>(loc, joined, a.getShape(),
                                             first.getOffsets(), a.getStrides())
                           .getResult();
  // Nothing reads the two any more, nor an inner concat joined flat.
  for (SliceGradOp s : {a, c}) {
    Value grad = s.getGrad();
    s->erase();
    if (auto inner = grad.getDefiningOp<ConcatOp>();
        inner && inner->use_empty())
      inner->erase();
  }
  return result;
}

Value Differentiator::concatFlat(Value x, Value y, int64_t axis) {
  SmallVector<Value> inputs;
  for (Value v : {x, y}) {
    auto inner = v.getDefiningOp<ConcatOp>();
    if (inner && static_cast<int64_t>(inner.getAxis()) == axis && v.hasOneUse())
      inputs.append(inner.getInputs().begin(), inner.getInputs().end());
    else
      inputs.push_back(v);
  }
  return b.create<ConcatOp>(loc, ValueRange(inputs), b.getI64IntegerAttr(axis));
}

void Differentiator::concatGrad(ConcatOp o, Value g) {
  int64_t axis = o.getAxis(), offset = 0;
  for (Value input : o.getInputs()) {
    RankedTensorType t = typeOf(input);
    int64_t start = offset;
    offset += t.getDimSize(axis);
    give(input, [&]() -> Value {
      SmallVector<int64_t> offsets(t.getRank(), 0), strides(t.getRank(), 1);
      offsets[axis] = start;
      return b.create<SliceOp>(loc, g, offsets, t.getShape(), strides);
    });
  }
}

bool Differentiator::backwardReduction(Operation *op, Value g) {
  Value y = op->getResult(0);
  return llvm::TypeSwitch<Operation *, bool>(op)
      .Case<SumOp>([&](SumOp o) {
        give(o.getInput(),
             [&] { return unreduce(g, o.getInput(), o.getAxes()); });
        return true;
      })
      .Case<MeanOp>([&](MeanOp o) {
        give(o.getInput(), [&] {
          RankedTensorType in = typeOf(o.getInput());
          int64_t count = 1;
          for (int64_t axis : o.getAxes())
            count *= in.getDimSize(axis);
          Value spread = unreduce(g, o.getInput(), o.getAxes());
          return inTypeOf(
              dynamic ? perCount(spread, o.getInput(), o.getAxes())
                      : scaledBy(spread, 1.0 / static_cast<double>(count)),
              spread);
        });
        return true;
      })
      .Case<MaxOp, MinOp>([&](Operation *o) {
        // As PyTorch's amax and amin: ties share the gradient equally.
        auto axes = o->getAttrOfType<DenseI64ArrayAttr>("axes").asArrayRef();
        Value x = o->getOperand(0);
        give(x, [&] {
          Value hit = cmp(CmpPredicate::eq, x, unreduce(y, x, axes));
          Value mask = select(hit, splatLike(1.0, x), splatLike(0.0, x));
          Value count = broadcastLike(sum(mask, axes, true), x);
          return div(mul(unreduce(g, x, axes), mask), count);
        });
        return true;
      })
      // Both in f32 for 16-bit values, rounded once, as PyTorch's kernels
      // do: g - dot cancels, and its operands' roundings would not.
      .Case<SoftmaxOp>([&](SoftmaxOp o) {
        give(o.getInput(), [&] {
          int64_t axis = o.getAxis();
          Value gw = inF32(g), yw = inF32(y);
          Value dot = broadcastLike(sum(mul(gw, yw), {axis}, true), y);
          return inTypeOf(mul(sub(gw, dot), yw), o.getInput());
        });
        return true;
      })
      .Case<LogSoftmaxOp>([&](LogSoftmaxOp o) {
        give(o.getInput(), [&] {
          int64_t axis = o.getAxis();
          Value gw = inF32(g), yw = inF32(y);
          Value total = broadcastLike(sum(gw, {axis}, true), y);
          return inTypeOf(sub(gw, mul(b.create<ExpOp>(loc, yw), total)),
                          o.getInput());
        });
        return true;
      })
      .Default([](Operation *) { return false; });
}

bool Differentiator::backwardConvPool(Operation *op, Value g) {
  return llvm::TypeSwitch<Operation *, bool>(op)
      .Case<Conv2dOp>([&](Conv2dOp o) {
        give(o.getInput(), [&]() -> Value {
          return b.create<Conv2dInputGradOp>(
              loc, g, o.getWeight(), typeOf(o.getInput()).getShape(),
              o.getStride(), o.getPadding(), o.getDilation(), o.getGroups());
        });
        give(o.getWeight(), [&]() -> Value {
          return b.create<Conv2dWeightGradOp>(
              loc, o.getInput(), g, typeOf(o.getWeight()).getShape(),
              o.getStride(), o.getPadding(), o.getDilation(), o.getGroups());
        });
        if (Value bias = o.getBias())
          give(bias, [&] { return sum(g, {0, 2, 3}, false); });
        return true;
      })
      .Case<Conv2dInputGradOp>([&](Conv2dInputGradOp o) {
        // As conv_transpose2d's forward op: y = convT(x, w) gives
        // dx = conv2d(dy, w) and dw as the weight gradient of a
        // convolution of dy whose result's gradient is x.
        give(o.getGrad(), [&]() -> Value {
          return b.create<Conv2dOp>(loc, g, o.getWeight(), Value(),
                                    o.getStride(), o.getPadding(),
                                    o.getDilation(), o.getGroups());
        });
        give(o.getWeight(), [&]() -> Value {
          return b.create<Conv2dWeightGradOp>(
              loc, g, o.getGrad(), typeOf(o.getWeight()).getShape(),
              o.getStride(), o.getPadding(), o.getDilation(), o.getGroups());
        });
        return true;
      })
      .Case<BatchNormTrainOp>([&](BatchNormTrainOp o) {
        BatchNormTrainGradOp grad;
        auto make = [&] {
          if (!grad)
            grad = b.create<BatchNormTrainGradOp>(
                loc, g, o.getInput(), o.getMean(), o.getVar(), o.getWeight(),
                o.getEpsAttr());
          return grad;
        };
        give(o.getInput(), [&] { return make().getInputGrad(); });
        give(o.getWeight(), [&] { return make().getWeightGrad(); });
        give(o.getBias(), [&] { return make().getBiasGrad(); });
        return true;
      })
      .Case<MaxPool2dOp>([&](MaxPool2dOp o) {
        give(o.getInput(), [&]() -> Value {
          return b.create<MaxPool2dGradOp>(loc, o.getInput(), g,
                                           o.getKernelSize(), o.getStride(),
                                           o.getPadding());
        });
        return true;
      })
      .Case<AvgPool2dOp>([&](AvgPool2dOp o) {
        // A depthwise convolution with weight 1 / (KH * KW).
        give(o.getInput(), [&]() -> Value {
          RankedTensorType in = typeOf(o.getInput());
          ArrayRef<int64_t> k = o.getKernelSize();
          int64_t channels = in.getDimSize(1);
          Value weight =
              splat(1.0 / static_cast<double>(k[0] * k[1]),
                    {channels, 1, k[0], k[1]}, typeOf(g).getElementType());
          return b.create<Conv2dInputGradOp>(loc, g, weight, in.getShape(),
                                             o.getStride(), o.getPadding(),
                                             ArrayRef<int64_t>{1, 1}, channels);
        });
        return true;
      })
      .Default([](Operation *) { return false; });
}

bool Differentiator::backwardLoss(Operation *op, Value g) {
  return llvm::TypeSwitch<Operation *, bool>(op)
      .Case<MseLossOp>([&](MseLossOp o) {
        mseLossGrad(o, g);
        return true;
      })
      .Case<CrossEntropyOp>([&](CrossEntropyOp o) {
        give(o.getLogits(), [&] {
          RankedTensorType logits = typeOf(o.getLogits());
          // In f32 for 16-bit logits (softmax - one_hot cancels near 1),
          // rounded once to the logits' type, as PyTorch's fused kernel.
          Value p = b.create<SoftmaxOp>(loc, inF32(o.getLogits()), 1);
          Value hot =
              b.create<OneHotOp>(loc, o.getLabels(), logits.getDimSize(1));
          double scale = o.getReduction() == ReductionKind::mean
                             ? 1.0 / static_cast<double>(logits.getDimSize(0))
                             : 1.0;
          Value d = sub(p, hot);
          Value r = dynamic && o.getReduction() == ReductionKind::mean
                        ? perCount(d, o.getLogits(), {0})
                        : scaledBy(d, scale);
          return inTypeOf(timesScalar(r, g), o.getLogits());
        });
        return true;
      })
      .Default([](Operation *) { return false; });
}

void Differentiator::mseLossGrad(MseLossOp o, Value g) {
  RankedTensorType in = typeOf(o.getInput());
  double norm = o.getReduction() == ReductionKind::mean
                    ? 2.0 / static_cast<double>(in.getNumElements())
                    : 2.0;
  auto dInput = [&] {
    // In f32 for 16-bit operands, rounded once at the end.
    Value diff = sub(inF32(o.getInput()), inF32(o.getTarget()));
    if (dynamic && o.getReduction() == ReductionKind::mean) {
      SmallVector<int64_t> all;
      for (int64_t d = 0; d < in.getRank(); ++d)
        all.push_back(d);
      Value twice = mul(diff, splatLike(2.0, diff));
      return inTypeOf(timesScalar(perCount(twice, o.getInput(), all), g),
                      o.getInput());
    }
    return inTypeOf(timesScalar(scaledBy(diff, norm), g), o.getInput());
  };
  if (needs(o.getInput()) && needs(o.getTarget())) {
    Value d = dInput();
    accumulate(o.getInput(), d);
    accumulate(o.getTarget(), neg(d));
  } else {
    give(o.getInput(), dInput);
    give(o.getTarget(), [&] { return neg(dInput()); });
  }
}

bool Differentiator::backwardPlacement(Operation *op, Value g) {
  auto o = dyn_cast<ToOp>(op);
  if (!o)
    return false;
  // As PyTorch's grad.to(input.device): back to where the input was made.
  // That is known before placement for a pin or a source; for a computed
  // input, placement resolves the move (locus.to_device_of).
  give(o.getInput(), [&]() -> Value {
    Operation *def = o.getInput().getDefiningOp();
    DeviceAttr device;
    if (auto to = dyn_cast<ToOp>(def))
      device = to.getDevice();
    else if (isa<InputOp, StateOp, ConstantOp>(def))
      device = def->getAttrOfType<DeviceAttr>("device");
    if (!device && isa<InputOp, StateOp>(def))
      device = DeviceAttr::get(b.getContext(), DeviceKind::cpu, 0);
    if (!device && !isa<ConstantOp>(def))
      return b.create<ToDeviceOfOp>(loc, g, o.getInput());
    if (!device || device == o.getDevice())
      return g;
    return b.create<ToOp>(loc, g, device);
  });
  return true;
}

} // namespace

namespace {
constexpr llvm::StringLiteral kBackwardTag = "locus.backward";
} // namespace

Location locus::backwardLoc(Location forward) {
  if (isBackwardLoc(forward))
    return forward;
  MLIRContext *context = forward.getContext();
  return FusedLoc::get(context, {forward},
                       StringAttr::get(context, kBackwardTag));
}

bool locus::isBackwardLoc(Location loc) {
  auto fused = dyn_cast<FusedLoc>(loc);
  auto tag =
      fused ? dyn_cast_or_null<StringAttr>(fused.getMetadata()) : StringAttr();
  return tag && tag.getValue() == kBackwardTag;
}

bool locus::isParameterGradient(Operation *op) {
  return op->hasAttr(kGradientAttrName);
}

SmallVector<Value> locus::parameterGradients(Operation *op) {
  Attribute marked = op->getAttr(kGradientAttrName);
  if (isa_and_nonnull<UnitAttr>(marked) && op->getNumResults() == 1)
    return {op->getResult(0)};
  SmallVector<Value> grads;
  if (auto results = dyn_cast_or_null<DenseI64ArrayAttr>(marked))
    for (int64_t number : results.asArrayRef())
      if (number >= 0 && number < op->getNumResults())
        grads.push_back(op->getResult(number));
  return grads;
}

FailureOr<SmallVector<Value>> locus::differentiate(GraphOp graph, Value loss,
                                                   ArrayRef<Value> wrt) {
  Block &body = graph.getBodyBlock();
  Operation *lastForward = body.empty() ? nullptr : &body.back();
  Differentiator d(graph);
  FailureOr<SmallVector<Value>> grads = d.run(loss, wrt);
  if (failed(grads) || !graph->hasAttr(kSymbolsAttrName))
    return grads;
  // With dynamic sizes, the broadcasts made like backward values take the
  // dims of what they meet, and each gradient must come out with its
  // value's dims (not the bounds').
  auto undo = [&] {
    while (!body.empty() && &body.back() != lastForward)
      body.back().erase();
    return failure();
  };
  if (failed(bindBroadcastDims(graph)))
    return undo();
  FailureOr<DynamicDims> found = DynamicDims::analyze(graph);
  if (failed(found))
    return undo();
  // NOLINTNEXTLINE(bugprone-unchecked-optional-access): checked above.
  const DynamicDims &dims = *found;
  // NOLINTNEXTLINE(bugprone-unchecked-optional-access): checked above.
  for (auto [v, g] : llvm::zip(wrt, *grads))
    if (dims.dimsOf(v) != dims.dimsOf(g)) {
      emitError(v.getLoc())
          << "the gradient of this " << dims.format(v) << " value has dims "
          << dims.format(g)
          << ": a dynamic size lost in autodiff (a bug of Locus; please "
             "report it with this graph)";
      return undo();
    }
  return grads;
}

namespace {

/// The optimizer's settings are numbers PyTorch accepts.
LogicalResult checkOptimizerConfig(const OptimizerConfig &config,
                                   Location loc) {
  bool sgd = config.kind == OptimizerConfig::Kind::sgd;
  if (!(config.lr >= 0) || !(config.weightDecay >= 0) ||
      !(config.momentum >= 0) || !(config.eps >= 0))
    return emitError(loc) << "the optimizer's lr, weight_decay, momentum and "
                             "eps must be non-negative numbers";
  if (config.nesterov && config.momentum == 0)
    return emitError(loc) << "nesterov needs momentum";
  if (!sgd && (config.beta1 < 0 || config.beta1 >= 1 || config.beta2 < 0 ||
               config.beta2 >= 1))
    return emitError(loc) << "Adam's betas must be in [0, 1), got ("
                          << config.beta1 << ", " << config.beta2 << ")";
  return success();
}

/// The state ops of `params` into `states`: each must be state of `graph`
/// that nothing updates yet.
LogicalResult parameterStates(GraphOp graph, ArrayRef<Value> params,
                              Location loc, SmallVectorImpl<StateOp> &states) {
  for (Value p : params) {
    auto state = p.getDefiningOp<StateOp>();
    if (!state || state->getBlock() != &graph.getBodyBlock())
      return emitError(loc)
             << "an optimizer updates state of graph @" << graph.getSymName()
             << "; one of its parameters is "
             << (state ? "state of another graph" : "a computed value");
    for (Operation *user : p.getUsers())
      if (isa<AssignOp>(user))
        return emitError(loc)
               << "parameter \"" << state.getName() << "\" is updated already";
    states.push_back(state);
  }
  return success();
}

/// One of the optimizer's scalars on one device: made like `like` (the
/// first parameter there), named `name`.
struct ScalarState {
  Attribute device;
  StateOp like;
  std::string name;
};

/// The optimizer's scalars (a group's learning rate, Adam's step count) are
/// kept once per device its parameters are made on, so that no update reads
/// a scalar across devices: `base` on the device of the first of `states`,
/// "<base>@<device>" on each other one. The devices in order.
SmallVector<ScalarState> scalarStates(ArrayRef<StateOp> states,
                                      const std::string &base) {
  SmallVector<ScalarState> out;
  for (StateOp state : states) {
    Attribute device = state.getDeviceAttr();
    if (llvm::any_of(out,
                     [&](const ScalarState &s) { return s.device == device; }))
      continue;
    std::string name = base;
    if (!out.empty())
      name += "@" + (device ? cast<DeviceAttr>(device).str()
                            : std::string("unpinned"));
    out.push_back({device, state, name});
  }
  return out;
}

/// The names of the optimizer's own state are free in `graph`: each
/// group's learning rate, momentum buffers, Adam's averages and its step
/// count.
LogicalResult claimStateNames(GraphOp graph, ArrayRef<StateOp> states,
                              ArrayRef<OptimizerGroup> groups, StringRef prefix,
                              Location loc) {
  llvm::StringSet<> names;
  for (Operation &op : graph.getBodyBlock())
    if (auto state = dyn_cast<StateOp>(op))
      names.insert(state.getName());
    else if (auto input = dyn_cast<InputOp>(op))
      names.insert(input.getName());
  auto claim = [&](const std::string &name) -> LogicalResult {
    if (!names.insert(name).second)
      return emitError(loc) << "the optimizer's state \"" << name
                            << "\" clashes with a name in use";
    return success();
  };
  bool sgd = groups.front().config.kind == OptimizerConfig::Kind::sgd;
  size_t first = 0;
  for (auto [i, group] : llvm::enumerate(groups)) {
    for (const ScalarState &lr : scalarStates(states.slice(first, group.count),
                                              learningRateStateName(prefix, i)))
      if (failed(claim(lr.name)))
        return failure();
    for (StateOp state : states.slice(first, group.count)) {
      std::string base = state.getName().str();
      if (sgd && group.config.momentum != 0 &&
          failed(claim(base + ".momentum_buffer")))
        return failure();
      if (!sgd && (failed(claim(base + ".exp_avg")) ||
                   failed(claim(base + ".exp_avg_sq"))))
        return failure();
    }
    first += group.count;
  }
  if (!sgd)
    for (const ScalarState &step :
         scalarStates(states, (prefix + "step").str()))
      if (failed(claim(step.name)))
        return failure();
  return success();
}

/// Records the optimizer's ops at the end of a graph: its state buffers
/// (zeros, on each parameter's device), the update and the assignments.
class OptimizerRecorder {
public:
  OptimizerRecorder(GraphOp graph, Location loc)
      : b(graph.getContext()), loc(backwardLoc(loc)),
        zeros(full(graph.getContext(), 0.0)) {
    b.setInsertionPointToEnd(&graph.getBodyBlock());
  }

  /// A group's learning rate: scalar state that starts at `lr`.
  Value learningRate(StateOp like, const std::string &name, double lr) {
    auto scalar = RankedTensorType::get({}, b.getF32Type());
    return b.create<StateOp>(loc, scalar, b.getStringAttr(name),
                             StateRole::buffer, full(b.getContext(), lr),
                             like.getDeviceAttr());
  }

  /// Adam's step count, one more at every run.
  Value stepCount(StateOp like, const std::string &name) {
    auto scalar = RankedTensorType::get({}, b.getF32Type());
    Value count = buffer(like, name, scalar);
    Value one = b.create<ConstantOp>(loc, DenseElementsAttr::get(scalar, 1.0f),
                                     DeviceAttr());
    Value step = b.create<AddOp>(loc, count, one);
    b.create<AssignOp>(loc, count, step);
    return step;
  }

  void sgd(const OptimizerConfig &config, StateOp state, Value grad, Value lr) {
    Value p = state.getResult();
    Value buf;
    if (config.momentum != 0)
      buf = buffer(state, state.getName().str() + ".momentum_buffer",
                   p.getType());
    auto op = b.create<SgdOp>(loc, p, grad, buf, lr,
                              b.getF64FloatAttr(config.momentum),
                              b.getF64FloatAttr(config.weightDecay),
                              config.nesterov ? b.getUnitAttr() : nullptr);
    b.create<AssignOp>(loc, p, op.getResult(0));
    if (buf)
      b.create<AssignOp>(loc, buf, op.getResult(1));
  }

  void adam(const OptimizerConfig &config, StateOp state, Value grad,
            Value step, Value lr) {
    Value p = state.getResult();
    std::string base = state.getName().str();
    Value m = buffer(state, base + ".exp_avg", p.getType());
    Value v = buffer(state, base + ".exp_avg_sq", p.getType());
    auto op = b.create<AdamOp>(
        loc, p, grad, m, v, step, lr,
        b.getDenseF64ArrayAttr({config.beta1, config.beta2}),
        b.getF64FloatAttr(config.eps), b.getF64FloatAttr(config.weightDecay),
        config.decoupled ? b.getUnitAttr() : nullptr);
    b.create<AssignOp>(loc, p, op.getNewParam());
    b.create<AssignOp>(loc, m, op.getNewM());
    b.create<AssignOp>(loc, v, op.getNewV());
  }

private:
  static InitAttr full(MLIRContext *context, double value) {
    return InitAttr::get(context, InitKind::full, llvm::APFloat(value),
                         llvm::APFloat(0.0), 0);
  }

  Value buffer(StateOp like, const std::string &name, Type type) {
    return b.create<StateOp>(loc, type, b.getStringAttr(name),
                             StateRole::buffer, zeros, like.getDeviceAttr());
  }

  OpBuilder b;
  Location loc;
  InitAttr zeros;
};

} // namespace

namespace {

/// The groups are alike, well set, and split the parameters.
LogicalResult checkGroups(ArrayRef<OptimizerGroup> groups, size_t params,
                          size_t grads, Location loc) {
  size_t counted = 0;
  for (const OptimizerGroup &group : groups) {
    if (failed(checkOptimizerConfig(group.config, loc)))
      return failure();
    if (group.count == 0)
      return emitError(loc) << "a parameter group has no parameters";
    if (group.config.kind != groups.front().config.kind ||
        group.config.decoupled != groups.front().config.decoupled)
      return emitError(loc) << "the parameter groups of one optimizer differ "
                               "in kind";
    counted += group.count;
  }
  if (params != grads || counted != params)
    return emitError(loc) << params << " parameters, " << grads
                          << " gradients and " << counted
                          << " in parameter groups";
  return success();
}

} // namespace

std::string locus::learningRateStateName(StringRef prefix, size_t group) {
  return (prefix + "param_groups." + std::to_string(group) + ".lr").str();
}

LogicalResult locus::recordOptimizerStep(
    GraphOp graph, ArrayRef<Value> params, ArrayRef<Value> grads,
    ArrayRef<OptimizerGroup> groups, StringRef prefix, Location loc,
    std::vector<std::vector<std::string>> *lrStates) {
  if (failed(checkGroups(groups, params.size(), grads.size(), loc)))
    return failure();
  SmallVector<StateOp> states;
  if (params.empty())
    return success();
  bool sgd = groups.front().config.kind == OptimizerConfig::Kind::sgd;
  if (failed(parameterStates(graph, params, loc, states)) ||
      failed(claimStateNames(graph, states, groups, prefix, loc)))
    return failure();
  OptimizerRecorder record(graph, loc);
  // Adam's step count, and each group's learning rate, per device.
  llvm::SmallDenseMap<Attribute, Value> steps;
  if (!sgd)
    for (const ScalarState &step :
         scalarStates(states, (prefix + "step").str()))
      steps[step.device] = record.stepCount(step.like, step.name);
  if (lrStates)
    lrStates->assign(groups.size(), {});
  size_t first = 0;
  for (auto [i, group] : llvm::enumerate(groups)) {
    llvm::SmallDenseMap<Attribute, Value> lrs;
    for (const ScalarState &lr :
         scalarStates(ArrayRef<StateOp>(states).slice(first, group.count),
                      learningRateStateName(prefix, i))) {
      lrs[lr.device] = record.learningRate(lr.like, lr.name, group.config.lr);
      if (lrStates)
        (*lrStates)[i].push_back(lr.name);
    }
    for (size_t k = first; k < first + group.count; ++k) {
      StateOp state = states[k];
      Attribute device = state.getDeviceAttr();
      Value grad = grads[k];
      if (sgd)
        record.sgd(group.config, state, grad, lrs[device]);
      else
        record.adam(group.config, state, grad, steps[device], lrs[device]);
    }
    first += group.count;
  }
  return success();
}

LogicalResult locus::recordOptimizerStep(GraphOp graph, ArrayRef<Value> params,
                                         ArrayRef<Value> grads,
                                         const OptimizerConfig &config,
                                         StringRef prefix, Location loc) {
  OptimizerGroup group{config, params.size()};
  return recordOptimizerStep(graph, params, grads,
                             params.empty() ? ArrayRef<OptimizerGroup>{}
                                            : ArrayRef<OptimizerGroup>(group),
                             prefix, loc);
}
