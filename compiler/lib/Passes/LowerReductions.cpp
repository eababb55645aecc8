//===- LowerReductions.cpp - --locus-lower-reductions ---------------------===//
//
// A host reduction whose innermost loop reduces becomes loops that keep its
// accumulator in a register: its parallel dimensions outside (one
// scf.parallel, which --locus-parallelize can split over the cores), its
// reduction dimensions inside (scf.for carrying the accumulator), the
// combiner marked reassociable so that LLVM vectorizes the innermost loop.
// See Passes.td.
//
//===----------------------------------------------------------------------===//

#include "locus/Passes/Passes.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Utils/Utils.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"

namespace locus {
#define GEN_PASS_DEF_LOCUSLOWERREDUCTIONS
#include "locus/Passes/Passes.h.inc"
} // namespace locus

using namespace mlir;
using namespace locus;

namespace {

/// The op that folds the rest of the body into the output's block argument:
/// that argument's only user, and what the body yields. Null when the body
/// does anything else with the accumulator (an arg-max, say).
Operation *combiner(linalg::GenericOp op) {
  Block &body = op.getRegion().front();
  BlockArgument acc = body.getArgument(op.getNumDpsInputs());
  auto yield = cast<linalg::YieldOp>(body.getTerminator());
  if (!acc.hasOneUse() || yield.getNumOperands() != 1)
    return nullptr;
  Operation *user = *acc.getUsers().begin();
  if (yield.getOperand(0).getDefiningOp() != user)
    return nullptr;
  if (!isa<arith::AddFOp, arith::MulFOp, arith::MaximumFOp, arith::MinimumFOp,
           arith::MaxNumFOp, arith::MinNumFOp, arith::AddIOp, arith::MulIOp,
           arith::MaxSIOp, arith::MinSIOp, arith::MaxUIOp, arith::MinUIOp,
           arith::AndIOp, arith::OrIOp, arith::XOrIOp>(user))
    return nullptr;
  return user;
}

/// A single-output reduction on buffers whose last loop reduces and whose
/// output is indexed by parallel loops alone. Dynamic sizes (a kernel with
/// a dynamic batch) are read from the buffers.
bool lowerable(linalg::GenericOp op) {
  if (!op.hasPureBufferSemantics() || op.getNumDpsInits() != 1)
    return false;
  auto iterators = op.getIteratorTypesArray();
  if (iterators.empty() || !linalg::isReductionIterator(iterators.back()))
    return false;
  AffineMap out = op.getMatchingIndexingMap(op.getDpsInitOperand(0));
  if (!out.isProjectedPermutation())
    return false;
  for (AffineExpr e : out.getResults())
    if (linalg::isReductionIterator(
            iterators[cast<AffineDimExpr>(e).getPosition()]))
      return false;
  return combiner(op) != nullptr;
}

/// Emits one reduction: the loops, the loads and the body, in order.
class Emitter {
public:
  explicit Emitter(linalg::GenericOp op)
      : op_(op), ivs_(op.getNumLoops()), combiner_(combiner(op)) {
    for (auto [d, it] : llvm::enumerate(op.getIteratorTypesArray()))
      (linalg::isReductionIterator(it) ? reductions_ : parallels_).push_back(d);
  }

  void emit(OpBuilder &b) {
    Location loc = op_.getLoc();
    // Each loop's extent: a constant, or a buffer's dimension read here.
    for (Range range :
         cast<linalg::LinalgOp>(op_.getOperation()).createLoopRanges(b, loc))
      extents_.push_back(getValueOrCreateConstantIndexOp(b, loc, range.size));
    if (parallels_.empty())
      return emitOutput(b, loc);
    SmallVector<Value> lower, upper, steps;
    for (unsigned d : parallels_) {
      lower.push_back(index(b, loc, 0));
      upper.push_back(extents_[d]);
      steps.push_back(index(b, loc, 1));
    }
    b.create<scf::ParallelOp>(loc, lower, upper, steps,
                              [&](OpBuilder &nb, Location nl, ValueRange ivs) {
                                for (auto [d, iv] : llvm::zip(parallels_, ivs))
                                  ivs_[d] = iv;
                                emitOutput(nb, nl);
                              });
  }

private:
  static Value index(OpBuilder &b, Location loc, int64_t v) {
    return b.create<arith::ConstantIndexOp>(loc, v);
  }

  /// The indices `map` gives at the current loop indices.
  SmallVector<Value> at(OpBuilder &b, Location loc, AffineMap map) {
    SmallVector<Value> indices;
    for (AffineExpr e : map.getResults()) {
      if (auto dim = dyn_cast<AffineDimExpr>(e))
        indices.push_back(ivs_[dim.getPosition()]);
      else if (auto c = dyn_cast<AffineConstantExpr>(e))
        indices.push_back(index(b, loc, c.getValue()));
      else
        indices.push_back(b.create<affine::AffineApplyOp>(
            loc, AffineMap::get(map.getNumDims(), 0, e), ivs_));
    }
    return indices;
  }

  /// One output element: its value in, the reduction loops, its value out.
  void emitOutput(OpBuilder &b, Location loc) {
    OpOperand *out = op_.getDpsInitOperand(0);
    SmallVector<Value> indices = at(b, loc, op_.getMatchingIndexingMap(out));
    Value init = b.create<memref::LoadOp>(loc, out->get(), indices);
    Value result = emitLoops(b, loc, 0, init);
    b.create<memref::StoreOp>(loc, result, out->get(), indices);
  }

  /// The reduction loops from `level` inward, carrying `acc`.
  Value emitLoops(OpBuilder &b, Location loc, size_t level, Value acc) {
    if (level == reductions_.size())
      return emitBody(b, loc, acc);
    unsigned d = reductions_[level];
    auto loop = b.create<scf::ForOp>(
        loc, index(b, loc, 0), extents_[d], index(b, loc, 1), ValueRange{acc},
        [&](OpBuilder &nb, Location nl, Value iv, ValueRange args) {
          ivs_[d] = iv;
          nb.create<scf::YieldOp>(nl, emitLoops(nb, nl, level + 1, args[0]));
        });
    return loop.getResult(0);
  }

  /// The body at the current indices, folded into `acc`.
  Value emitBody(OpBuilder &b, Location loc, Value acc) {
    Block &body = op_.getRegion().front();
    IRMapping map;
    for (OpOperand *input : op_.getDpsInputOperands()) {
      Value value = input->get();
      if (isa<MemRefType>(value.getType()))
        value = b.create<memref::LoadOp>(
            loc, value, at(b, loc, op_.getMatchingIndexingMap(input)));
      map.map(body.getArgument(input->getOperandNumber()), value);
    }
    map.map(body.getArgument(op_.getNumDpsInputs()), acc);
    for (Operation &inner : body.without_terminator()) {
      if (auto idx = dyn_cast<linalg::IndexOp>(inner)) {
        map.map(idx.getResult(), ivs_[idx.getDim()]);
        continue;
      }
      Operation *copy = b.clone(inner, map);
      if (&inner == combiner_)
        if (auto fm = dyn_cast<arith::ArithFastMathInterface>(copy))
          copy->setAttr(
              fm.getFastMathAttrName(),
              arith::FastMathFlagsAttr::get(
                  b.getContext(), fm.getFastMathFlagsAttr().getValue() |
                                      arith::FastMathFlags::reassoc));
    }
    auto yield = cast<linalg::YieldOp>(body.getTerminator());
    return map.lookup(yield.getOperand(0));
  }

  linalg::GenericOp op_;
  SmallVector<Value> extents_, ivs_;
  SmallVector<unsigned> parallels_, reductions_;
  Operation *combiner_;
};

class LowerReductionsPass
    : public locus::impl::LocusLowerReductionsBase<LowerReductionsPass> {
public:
  using Base::Base;

  void runOnOperation() override {
    SmallVector<linalg::GenericOp> reductions;
    getOperation()->walk([&](linalg::GenericOp op) {
      if (lowerable(op))
        reductions.push_back(op);
    });
    for (linalg::GenericOp op : reductions) {
      OpBuilder b(op);
      Emitter(op).emit(b);
      op.erase();
    }
    numLowered += reductions.size();
  }
};

} // namespace
