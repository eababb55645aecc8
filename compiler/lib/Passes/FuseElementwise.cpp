//===- FuseElementwise.cpp - --locus-fuse-elementwise ---------------------===//
//
// Inside a kernel, elementwise linalg.generic ops fuse into one loop nest;
// nothing else moves. See Passes.td.
//
//===----------------------------------------------------------------------===//

#include "locus/Passes/Passes.h"

#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace locus {
#define GEN_PASS_DEF_LOCUSFUSEELEMENTWISE
#include "locus/Passes/Passes.h.inc"
} // namespace locus

using namespace mlir;

namespace {

/// The most ops one fused loop body holds.
constexpr size_t kMaxFusedBody = 128;

/// The ops in `op`'s body (its first region's block); 0 for none.
size_t bodySize(Operation *op) {
  if (op->getNumRegions() == 0 || op->getRegion(0).empty())
    return 0;
  return op->getRegion(0).front().getOperations().size();
}

class FuseElementwisePass
    : public locus::impl::LocusFuseElementwiseBase<FuseElementwisePass> {
public:
  using Base::Base;

  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    // A producer fuses into its only reader: nothing is computed twice.
    // Each fusion makes a new op holding both bodies, so a chain of n
    // elementwise ops fused one by one copies O(n^2) ops: a fused body
    // stops growing at kMaxFusedBody ops (a 20,000-op chain took minutes).
    linalg::populateElementwiseOpsFusionPatterns(
        patterns, [](OpOperand *operand) {
          Operation *producer = operand->get().getDefiningOp();
          return producer && producer->hasOneUse() &&
                 bodySize(producer) + bodySize(operand->getOwner()) <=
                     kMaxFusedBody;
        });
    if (failed(
            applyPatternsAndFoldGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
