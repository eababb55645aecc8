//===- Precision.cpp - --locus-autocast and --locus-widen-16bit -----------===//
//
// Mixed precision by PyTorch's autocast contract (docs/precision.md). Two
// passes on a recorded graph, run by the compiler after select-mode and
// before placement:
//
// - --locus-autocast rewrites the products and convolutions of a recorded
//   f32 graph, forward and backward, to take bf16 or f16 operands; every
//   other op, the weights (f32 master weights), the gradients that reach
//   them and the optimizer stay f32.
// - --locus-widen-16bit then gives every op that computes in f32 only f32
//   operands: 16-bit operands are cast up (exactly) and 16-bit results cast
//   back down, one rounding per op, as PyTorch's 16-bit kernels round each
//   result. Products and convolutions of 16-bit operands accumulate in f32
//   and round the result once.
//
// Both insert `locus.cast` ops, once per value and per device; the kernel
// fuser then merges them into their neighbours' kernels.
//
// After placement, --locus-gpu-16bit-convs gives the convolutions on a CUDA
// device whose operands were cast up from 16 bits those 16-bit values, so
// that cuDNN computes them on 16-bit tensor cores.
//
//===----------------------------------------------------------------------===//

#include "locus/Dialect/Autodiff.h"
#include "locus/Dialect/LocusDialect.h"
#include "locus/Passes/Passes.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/Support/Debug.h"

#include <optional>

#define DEBUG_TYPE "locus-precision"

namespace locus {
#define GEN_PASS_DEF_LOCUSAUTOCAST
#define GEN_PASS_DEF_LOCUSWIDEN16BIT
#define GEN_PASS_DEF_LOCUSGPU16BITCONVS
#include "locus/Passes/Passes.h.inc"
} // namespace locus

using namespace mlir;
using namespace locus;

namespace {

Type elementOf(Value v) {
  auto type = dyn_cast<RankedTensorType>(v.getType());
  return type ? type.getElementType() : Type();
}

bool isHalf(Type t) { return t && (t.isBF16() || t.isF16()); }

/// Casts made so far, one per (value, device, type): a value many ops read
/// is converted once, right after it is made.
class Casts {
public:
  /// `v` as `to` on the device of `user` (the op that reads it).
  Value to(Value v, Type to, Operation *user) {
    if (elementOf(v) == to)
      return v;
    // A value cast from `to` losslessly (bf16 or f16 up to f32) is its
    // source: the round trip is exact.
    if (auto up = v.getDefiningOp<CastOp>())
      if (elementOf(up.getInput()) == to &&
          to.getIntOrFloatBitWidth() < elementOf(v).getIntOrFloatBitWidth())
        return up.getInput();
    Attribute device = user->getAttr(kDeviceAttrName);
    if (Value made = made_.lookup({v, device, to}))
      return made;
    Value made = viewOfCast(v, to, device);
    if (!made) {
      OpBuilder b(user->getContext());
      if (Operation *def = v.getDefiningOp())
        b.setInsertionPointAfter(def);
      else
        b.setInsertionPointToStart(v.getParentBlock());
      made = build(b, v.getLoc(), v, to, device);
    }
    made_[{v, device, to}] = made;
    return made;
  }

  /// A new cast of `v` to `to` at `b`'s insertion point, on `device`.
  static Value build(OpBuilder &b, Location loc, Value v, Type to,
                     Attribute device) {
    auto cast = b.create<CastOp>(loc, v, TypeAttr::get(to));
    if (device)
      cast->setAttr(kDeviceAttrName, device);
    return cast;
  }

  /// Notes that `v` loses a reader: a view no op reads any more (its
  /// readers now read a view of a cast) goes at eraseDeadViews().
  void mayDie(Value v) {
    if (isView(v.getDefiningOp()))
      losing_.insert(v.getDefiningOp());
  }

  /// Erases the views mayDie() noted that nothing reads, and the views
  /// they alone read. After the last cast: the casts made are keyed by
  /// the values they convert.
  void eraseDeadViews() {
    SmallVector<Operation *> work(losing_.begin(), losing_.end());
    losing_.clear();
    llvm::DenseSet<Operation *> erased;
    while (!work.empty()) {
      Operation *view = work.pop_back_val();
      if (erased.contains(view) || !view->use_empty())
        continue;
      Operation *source = view->getOperand(0).getDefiningOp();
      erased.insert(view);
      view->erase();
      if (isView(source) && !erased.contains(source))
        work.push_back(source);
    }
    made_.clear();
  }

private:
  static bool isView(Operation *op) {
    return isa_and_nonnull<ReshapeOp, TransposeOp, SliceOp, BroadcastOp>(op);
  }

  /// When `v` is a view (a reshape, transpose, slice or broadcast) on
  /// `device` of a float value wider than `to`: the same view of that
  /// value cast to `to`.
  /// A cast commutes with ops that only move elements, so the view moves
  /// `to`'s elements and its source's cast may fold away: attention's
  /// heads, split from a 16-bit projection cast up, reach their 16-bit
  /// products as views of the projection itself, where a cast down after
  /// each split was a launch of its own. Null for any other value.
  Value viewOfCast(Value v, Type to, Attribute device) {
    Operation *view = v.getDefiningOp();
    if (!isView(view) || view->getAttr(kDeviceAttrName) != device)
      return {};
    auto from = dyn_cast<FloatType>(elementOf(view->getOperand(0)));
    if (!from || from.getWidth() <= to.getIntOrFloatBitWidth())
      return {};
    Value source = this->to(view->getOperand(0), to, view);
    OpBuilder b(view);
    b.setInsertionPointAfter(view);
    Operation *made = b.clone(*view);
    made->setOperand(0, source);
    made->getResult(0).setType(cast<RankedTensorType>(v.getType()).clone(to));
    return made->getResult(0);
  }

  llvm::DenseMap<std::tuple<Value, Attribute, Type>, Value> made_;
  llvm::SetVector<Operation *> losing_;
};

/// Sets `op`'s float operands to `to` (through `casts`), retypes its float
/// results to `to`, and casts each result back to its old type for the
/// op's readers.
void retype(Operation *op, Type to, Casts &casts) {
  for (OpOperand &operand : op->getOpOperands())
    if (isa_and_nonnull<FloatType>(elementOf(operand.get()))) {
      casts.mayDie(operand.get());
      operand.set(casts.to(operand.get(), to, op));
    }
  OpBuilder b(op->getContext());
  b.setInsertionPointAfter(op);
  for (Value result : op->getResults()) {
    Type old = elementOf(result);
    if (!isa_and_nonnull<FloatType>(old) || old == to)
      continue;
    result.setType(cast<RankedTensorType>(result.getType()).clone(to));
    Value back = Casts::build(b, op->getLoc(), result, old,
                              op->getAttr(kDeviceAttrName));
    result.replaceAllUsesExcept(back, back.getDefiningOp());
  }
}

/// Products and convolutions, forward and backward: torch.autocast's
/// lower-precision list (mm, bmm, matmul, linear, conv2d and, through
/// autograd, their gradients).
bool lowerPrecisionOp(Operation *op) {
  return isa<MatmulOp, LinearOp, Conv2dOp, Conv2dInputGradOp,
             Conv2dWeightGradOp>(op);
}

/// Products of fewer rows than this against a weight stay f32: casting
/// the weight each step (a read of 4 and a write of 2 bytes per element)
/// costs more than 16-bit arithmetic saves on 2 x rows multiply-adds per
/// element. On the 2-core AVX512-BF16 build machine the break-even was
/// near 6 rows (an MLP at batch 1 took 3.45x its f32 time in bf16, at
/// batch 64 0.66x).
constexpr int64_t kRowsThatRepayACast = 8;

/// A weight no step writes (inference) is cast once, at load (plan
/// version 6), so its products of few rows pay in 16 bits after all when
/// the weight is large: they read half its bytes. Below this many
/// elements a 16-bit call's fixed cost outweighs that. On the 2-core
/// AVX512-BF16 build machine (2026-11-29, one row, `locus-run` medians),
/// bf16 took 2.2x the f32 time against a 128 x 128 weight, 0.98x against
/// 256 x 256, 0.61x against 362 x 362 and 0.57-0.68x against 1024 x 1024;
/// the ONNX MLP at batch 1 took 0.61-0.68x.
constexpr int64_t kWeightElementsThatRepayAtLoad = int64_t{1} << 17;

/// A product's weight (state, or state transposed), how many times each
/// of its elements is used (the other operand's rows, or columns for a
/// weight on the left) and how many there are.
struct WeightUse {
  StateOp state;
  int64_t uses, elements;
};

/// `v`'s state when it is a weight: state, or state transposed.
StateOp weightState(Value v) {
  if (auto t = v.getDefiningOp<TransposeOp>())
    v = t.getInput();
  return v.getDefiningOp<StateOp>();
}

/// The weight a product reads; none for any other op.
std::optional<WeightUse> weightUse(Operation *op) {
  auto count = [](Value v) {
    return cast<RankedTensorType>(v.getType()).getNumElements();
  };
  auto dim = [](Value v, int64_t fromEnd) {
    ArrayRef<int64_t> shape = cast<RankedTensorType>(v.getType()).getShape();
    return shape[shape.size() - fromEnd];
  };
  if (auto linear = dyn_cast<LinearOp>(op)) {
    StateOp w = weightState(linear.getWeight());
    if (w && dim(linear.getInput(), 1) > 0)
      return WeightUse{w, count(linear.getInput()) / dim(linear.getInput(), 1),
                       count(linear.getWeight())};
  }
  if (auto matmul = dyn_cast<MatmulOp>(op)) {
    Value a = matmul.getLhs(), b = matmul.getRhs();
    int64_t k = dim(a, 1);
    if (StateOp w = weightState(b); w && k > 0)
      return WeightUse{w, count(a) / k, count(b)};
    if (StateOp w = weightState(a); w && k > 0)
      return WeightUse{w, count(b) / k, count(a)};
  }
  return std::nullopt;
}

/// Whether a product against `use` stays f32: too few rows to repay
/// casting a weight every step (one a step writes), or to repay a 16-bit
/// call's cost (a small weight no step writes, cast at load).
bool keepsF32(const WeightUse &use) {
  if (use.uses >= kRowsThatRepayACast)
    return false;
  bool written = llvm::any_of(use.state->getUsers(), [](Operation *user) {
    return isa<AssignOp>(user);
  });
  return written || use.elements < kWeightElementsThatRepayAtLoad;
}

/// A forward convolution reads its operands rounded to `low` (each cast
/// down and up again, once per value and device) and keeps its f32 type:
/// it accumulates in f32 and gives an f32 result, so the residual add and
/// ReLU after it stay fused into its call. That is one rounding fewer than
/// PyTorch's 16-bit result.
void roundOperands(Conv2dOp conv, Type low, Casts &casts) {
  Type f32 = Float32Type::get(conv.getContext());
  for (OpOperand &operand : conv->getOpOperands()) {
    casts.mayDie(operand.get());
    operand.set(casts.to(casts.to(operand.get(), low, conv), f32, conv));
  }
}

/// Ops whose lowering handles 16-bit operands as they are: casts, layout
/// and selection ops (they move elements without arithmetic), matrix
/// products and linear layers (f32 accumulators, one rounding), and the
/// graph's interface.
bool native16(Operation *op) {
  return isa<CastOp, ReshapeOp, TransposeOp, ConcatOp, SliceOp, GatherOp,
             GatherElementsOp, BroadcastOp, SelectOp, MatmulOp, LinearOp,
             InputOp, ConstantOp, OutputOp, ToOp, ToDeviceOfOp, CopyOp>(op);
}

class AutocastPass : public locus::impl::LocusAutocastBase<AutocastPass> {
public:
  using Base::Base;

  void runOnOperation() override {
    GraphOp graph = getOperation();
    Builder b(graph.getContext());
    Type low;
    if (precision == "bf16")
      low = b.getBF16Type();
    else if (precision == "f16")
      low = b.getF16Type();
    else if (precision != "fp32" && precision != "tf32") {
      graph.emitError() << "--locus-autocast: precision must be fp32, tf32, "
                           "bf16 or f16, not '"
                        << precision << "'";
      return signalPassFailure();
    }
    if (!low)
      return; // fp32 and tf32 keep every operand f32
    Casts casts;
    for (Operation &op :
         llvm::make_early_inc_range(graph.getBodyBlock().getOperations())) {
      if (!lowerPrecisionOp(&op) || llvm::any_of(op.getOperands(), [](Value v) {
            return !elementOf(v).isF32();
          }))
        continue;
      std::optional<WeightUse> use = weightUse(&op);
      if (use && keepsF32(*use)) {
        // Kept f32; the dump says why (locus.autocast = f32).
        LLVM_DEBUG(llvm::dbgs()
                   << "autocast keeps f32 (" << use->uses
                   << " rows against a weight of " << use->elements
                   << "): " << op.getName() << " at " << op.getLoc() << "\n");
        op.setAttr(kAutocastAttrName, TypeAttr::get(b.getF32Type()));
        continue;
      }
      LLVM_DEBUG(llvm::dbgs() << "autocast to " << precision << ": "
                              << op.getName() << " at " << op.getLoc() << "\n");
      if (auto conv = dyn_cast<Conv2dOp>(op))
        roundOperands(conv, low, casts);
      else
        retype(&op, low, casts);
      op.setAttr(kAutocastAttrName, TypeAttr::get(low));
    }
    casts.eraseDeadViews();
  }
};

class Widen16BitPass : public locus::impl::LocusWiden16BitBase<Widen16BitPass> {
public:
  using Base::Base;

  void runOnOperation() override {
    GraphOp graph = getOperation();
    Type f32 = Builder(graph.getContext()).getF32Type();
    Casts casts;
    for (Operation &op :
         llvm::make_early_inc_range(graph.getBodyBlock().getOperations())) {
      if (native16(&op) ||
          (llvm::none_of(op.getOperands(),
                         [](Value v) { return isHalf(elementOf(v)); }) &&
           llvm::none_of(op.getResults(),
                         [](Value v) { return isHalf(elementOf(v)); })))
        continue;
      LLVM_DEBUG(llvm::dbgs() << "computes in f32: " << op.getName() << " at "
                              << op.getLoc() << "\n");
      retype(&op, f32, casts);
    }
    casts.eraseDeadViews();
  }
};

/// The 16-bit value `v` (f32) was cast up from, or null.
Value castUpFrom16(Value v) {
  auto up = v.getDefiningOp<CastOp>();
  if (!up || !elementOf(v).isF32() || !isHalf(elementOf(up.getInput())))
    return {};
  return up.getInput();
}

/// A convolution's two tensor operands, in order (a forward's bias aside).
SmallVector<OpOperand *, 2> convOperands(Operation *op) {
  if (auto c = dyn_cast<Conv2dOp>(op))
    return {&c.getInputMutable(), &c.getWeightMutable()};
  if (auto g = dyn_cast<Conv2dInputGradOp>(op))
    return {&g.getGradMutable(), &g.getWeightMutable()};
  auto g = cast<Conv2dWeightGradOp>(op);
  return {&g.getInputMutable(), &g.getGradMutable()};
}

/// The 16-bit type both tensor operands of the convolution `op` were cast
/// up from; null when they were not, or not from one type.
Type sixteenBitSource(Operation *op) {
  Type low;
  for (OpOperand *operand : convOperands(op)) {
    Value source = castUpFrom16(operand->get());
    if (!source || (low && elementOf(source) != low))
      return {};
    low = elementOf(source);
  }
  return low;
}

/// Whether the result of the convolution `op` is to be rounded to `low`
/// anyway: --locus-autocast made it a `low` product (a forward one keeps
/// an f32 result, which PyTorch's autocast rounds), or every reader casts
/// it down to `low` (--locus-widen-16bit's gradients, 16-bit ONNX models).
/// Not a weight gradient that an all-reduce reads first (data-parallel
/// training): it is summed in f32 and rounded once, after.
bool roundsTo(Operation *op, Type low) {
  auto castsDown = [&](Operation *user) {
    auto down = dyn_cast<CastOp>(user);
    return down && elementOf(down.getResult()) == low;
  };
  Value result = op->getResult(0);
  if (!result.use_empty() && llvm::all_of(result.getUsers(), castsDown))
    return true;
  auto mark = op->getAttrOfType<TypeAttr>(kAutocastAttrName);
  return isa<Conv2dOp>(op) && mark && mark.getValue() == low;
}

/// Gives `made` the discardable attributes of `op` (its device and
/// placement) but its autocast and gradient marks.
void copyMarks(Operation *op, Operation *made) {
  for (NamedAttribute a : op->getDiscardableAttrs())
    if (a.getName() != kAutocastAttrName && a.getName() != kGradientAttrName)
      made->setAttr(a.getName(), a.getValue());
}

/// Rewrites the convolution `op` to read the 16-bit values of type `low`
/// its operands were cast up from and to give a `low` result.
void readSixteenBits(Operation *op, Type low) {
  auto resultType = cast<RankedTensorType>(op->getResult(0).getType());
  OpBuilder b(op);
  Operation *made = b.clone(*op);
  llvm::SmallSetVector<Operation *, 2> castsUp;
  for (OpOperand *operand : convOperands(made)) {
    castsUp.insert(operand->get().getDefiningOp());
    operand->set(castUpFrom16(operand->get()));
  }
  Value y = made->getResult(0);
  y.setType(resultType.clone(low));
  // A cast down reads the 16-bit result itself; any other reader a cast up
  // of its own (each reader's kernel then reads the 16-bit result,
  // --locus-fuse-kernels: a batch norm's forward and backward both read a
  // convolution's output).
  for (OpOperand &use :
       llvm::make_early_inc_range(op->getResult(0).getUses())) {
    auto down = dyn_cast<CastOp>(use.getOwner());
    if (down && elementOf(down.getResult()) == low) {
      down.getResult().replaceAllUsesWith(y);
      down->erase();
      continue;
    }
    OpBuilder at(use.getOwner());
    auto up = at.create<CastOp>(op->getLoc(), y,
                                TypeAttr::get(resultType.getElementType()));
    copyMarks(op, up);
    use.set(up);
  }
  op->erase();
  // Casts up that only the convolution read (a weight gradient's operands
  // are also the forward's, cast once).
  for (Operation *castUp : castsUp)
    if (castUp->use_empty())
      castUp->erase();
}

class Gpu16BitConvsPass
    : public locus::impl::LocusGpu16BitConvsBase<Gpu16BitConvsPass> {
public:
  using Base::Base;

  void runOnOperation() override {
    GraphOp graph = getOperation();
    // Collected first: a rewrite erases casts next to its convolution.
    SmallVector<Operation *> convs;
    for (Operation &op : graph.getBodyBlock().getOperations()) {
      auto device = op.getAttrOfType<DeviceAttr>(kDeviceAttrName);
      // A bias stays f32: cuDNN's 16-bit result, rounded, and the bias
      // added after would round twice.
      auto conv = dyn_cast<Conv2dOp>(op);
      if (isa<Conv2dOp, Conv2dInputGradOp, Conv2dWeightGradOp>(op) && device &&
          device.isCuda() && elementOf(op.getResult(0)).isF32() &&
          !(conv && conv.getBias()))
        convs.push_back(&op);
    }
    for (Operation *op : convs) {
      Type low = sixteenBitSource(op);
      if (!low || !roundsTo(op, low))
        continue;
      LLVM_DEBUG(llvm::dbgs() << "in " << low << ": " << op->getName() << " at "
                              << op->getLoc() << "\n");
      readSixteenBits(op, low);
    }
  }
};

} // namespace
