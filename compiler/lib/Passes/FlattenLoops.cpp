//===- FlattenLoops.cpp - --locus-flatten-loops ---------------------------===//
//
// A host linalg.generic on buffers loses its unit dimensions and merges each
// run of adjacent loops that every operand indexes contiguously, so that
// linalg's lowering gives LLVM long innermost loops to vectorize. Both steps
// are linalg's own transformations; this pass decides where they apply.
// See Passes.td.
//
//===----------------------------------------------------------------------===//

#include "locus/Passes/Passes.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/PatternMatch.h"

namespace locus {
#define GEN_PASS_DEF_LOCUSFLATTENLOOPS
#include "locus/Passes/Passes.h.inc"
} // namespace locus

using namespace mlir;
using namespace locus;

namespace {

/// The loops the body reads the index of: each stays a loop of its own.
llvm::SmallDenseSet<unsigned> indexedLoops(linalg::GenericOp op) {
  llvm::SmallDenseSet<unsigned> loops;
  op.getRegion().walk(
      [&](linalg::IndexOp index) { loops.insert(index.getDim()); });
  return loops;
}

/// The groups of `loops` each result of `map` falls in, as the operand's
/// own reassociation: consecutive results of one group are one dimension.
SmallVector<ReassociationIndices>
operandGroups(AffineMap map, ArrayRef<ReassociationIndices> loops) {
  // Loops no group holds yet are each a group of their own.
  SmallVector<int64_t> groupOf(map.getNumDims());
  for (unsigned d = 0; d < map.getNumDims(); ++d)
    groupOf[d] = -1 - static_cast<int64_t>(d);
  for (auto [g, group] : llvm::enumerate(loops))
    for (int64_t d : group)
      groupOf[d] = static_cast<int64_t>(g);
  SmallVector<ReassociationIndices> groups;
  int64_t last = -1;
  for (auto [i, e] : llvm::enumerate(map.getResults())) {
    int64_t g = groupOf[cast<AffineDimExpr>(e).getPosition()];
    if (groups.empty() || g != last)
      groups.emplace_back();
    groups.back().push_back(static_cast<int64_t>(i));
    last = g;
  }
  return groups;
}

/// Whether merging the loops as `loops` says keeps every operand a view:
/// its dimensions in each group contiguous in memory.
bool viewsAllowed(linalg::GenericOp op, ArrayRef<ReassociationIndices> loops) {
  for (OpOperand &operand : op->getOpOperands()) {
    auto type = dyn_cast<MemRefType>(operand.get().getType());
    if (!type)
      continue; // a scalar
    if (!memref::CollapseShapeOp::isGuaranteedCollapsible(
            type, operandGroups(op.getMatchingIndexingMap(&operand), loops)))
      return false;
  }
  return true;
}

/// Whether every buffer with a layout other than the identity (a strided
/// window) is indexed by every loop in order: linalg's collapse (MLIR 19)
/// checks such an operand against the loops' groups, not its own.
bool stridedOperandsWalkEveryLoop(linalg::GenericOp op) {
  for (OpOperand &operand : op->getOpOperands()) {
    auto type = dyn_cast<MemRefType>(operand.get().getType());
    if (type && !type.getLayout().isIdentity() &&
        !op.getMatchingIndexingMap(&operand).isIdentity())
      return false;
  }
  return true;
}

/// Whether no buffer of `op` has both a unit dimension and a layout other
/// than the identity: linalg's dropUnitDims (MLIR 19) leaves such a buffer
/// as it is, indexed by constants, which blocks every merge after it.
bool unitDimsDroppable(linalg::GenericOp op) {
  for (Value operand : op->getOperands()) {
    auto type = dyn_cast<MemRefType>(operand.getType());
    if (type && !type.getLayout().isIdentity() &&
        llvm::is_contained(type.getShape(), 1))
      return false;
  }
  return true;
}

/// Each run of adjacent loops that may merge: one iterator type, static
/// extents, no index read, and every operand indexing the run in order.
SmallVector<ReassociationIndices> loopGroups(linalg::GenericOp op) {
  SmallVector<AffineMap> maps = op.getIndexingMapsArray();
  if (!llvm::all_of(maps,
                    [](AffineMap m) { return m.isProjectedPermutation(); }) ||
      !stridedOperandsWalkEveryLoop(op))
    return {};
  auto iterators = op.getIteratorTypesArray();
  SmallVector<int64_t> extents = op.getStaticLoopRanges();
  llvm::SmallDenseSet<unsigned> indexed = indexedLoops(op);
  auto alone = [&](unsigned d) {
    return ShapedType::isDynamic(extents[d]) || indexed.contains(d);
  };
  SmallVector<ReassociationIndices> groups;
  for (unsigned d = 0; d < op.getNumLoops(); ++d) {
    if (!groups.empty()) {
      ReassociationIndices grown = groups.back();
      grown.push_back(d);
      unsigned first = static_cast<unsigned>(grown.front());
      if (!alone(d) && !alone(first) && iterators[d] == iterators[first] &&
          linalg::areDimSequencesPreserved(maps, {grown})) {
        SmallVector<ReassociationIndices> tried = groups;
        tried.back() = grown;
        if (viewsAllowed(op, tried)) {
          groups.back() = grown;
          continue;
        }
      }
    }
    groups.push_back({static_cast<int64_t>(d)});
  }
  return groups;
}

class FlattenLoopsPass
    : public locus::impl::LocusFlattenLoopsBase<FlattenLoopsPass> {
public:
  using Base::Base;

  void runOnOperation() override {
    IRRewriter rewriter(&getContext());
    // Unit dimensions first: they break runs (a broadcast's (0, d1, 0, 0)).
    linalg::ControlDropUnitDims unitDims;
    for (linalg::GenericOp op : generics()) {
      if (!unitDimsDroppable(op))
        continue;
      rewriter.setInsertionPoint(op);
      (void)linalg::dropUnitDims(rewriter, op, unitDims);
    }
    for (linalg::GenericOp op : generics()) {
      SmallVector<ReassociationIndices> merged;
      for (ReassociationIndices &group : loopGroups(op))
        if (group.size() > 1)
          merged.push_back(std::move(group));
      if (merged.empty())
        continue;
      rewriter.setInsertionPoint(op);
      FailureOr<linalg::CollapseResult> collapsed =
          linalg::collapseOpIterationDims(op, merged, rewriter);
      if (failed(collapsed))
        continue;
      // NOLINTNEXTLINE(bugprone-unchecked-optional-access): checked above.
      rewriter.replaceOp(op, collapsed->results);
      ++numFlattened;
    }
  }

private:
  SmallVector<linalg::GenericOp> generics() {
    SmallVector<linalg::GenericOp> ops;
    getOperation()->walk([&](linalg::GenericOp op) {
      if (op.hasPureBufferSemantics() && op.getNumLoops() > 1)
        ops.push_back(op);
    });
    return ops;
  }
};

} // namespace
