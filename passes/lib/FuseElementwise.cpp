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

class FuseElementwisePass
    : public locus::impl::LocusFuseElementwiseBase<FuseElementwisePass> {
public:
  using Base::Base;

  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    // A producer fuses into its only reader: nothing is computed twice.
    linalg::populateElementwiseOpsFusionPatterns(
        patterns, [](OpOperand *operand) {
          Operation *producer = operand->get().getDefiningOp();
          return producer && producer->hasOneUse();
        });
    if (failed(
            applyPatternsAndFoldGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
