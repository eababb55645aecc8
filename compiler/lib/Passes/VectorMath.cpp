//===- VectorMath.cpp - --locus-vector-math -------------------------------===//
//
// exp, tanh and erf of f32 in host code become MLIR's polynomial
// approximations (arithmetic and selects), which LLVM vectorizes, where
// libm's expf, tanhf and erff are scalar calls. The approximations' fused
// multiply-adds become contractable multiplies and adds, fused where the
// target CPU has FMA. See Passes.td.
//
//===----------------------------------------------------------------------===//

#include "locus/Passes/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Math/Transforms/Approximation.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace locus {
#define GEN_PASS_DEF_LOCUSVECTORMATH
#include "locus/Passes/Passes.h.inc"
} // namespace locus

using namespace mlir;
using namespace locus;

namespace {

/// a * b + c as a multiply and an add that LLVM may fuse (contract).
struct ContractableFma : OpRewritePattern<math::FmaOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(math::FmaOp op,
                                PatternRewriter &rewriter) const override {
    auto contract = arith::FastMathFlagsAttr::get(
        getContext(), arith::FastMathFlags::contract);
    Value product = rewriter.create<arith::MulFOp>(op.getLoc(), op.getA(),
                                                   op.getB(), contract);
    rewriter.replaceOpWithNewOp<arith::AddFOp>(op, product, op.getC(),
                                               contract);
    return success();
  }
};

bool isF32(Operation *op) {
  return getElementTypeOrSelf(op->getResult(0).getType()).isF32();
}

class VectorMathPass : public locus::impl::LocusVectorMathBase<VectorMathPass> {
public:
  using Base::Base;

  void runOnOperation() override {
    // Only these ops, and what their approximations make; log, sin, cos
    // and the rest keep libm's lowering.
    SmallVector<Operation *> ops;
    getOperation()->walk([&](Operation *op) {
      if (isa<math::ExpOp, math::TanhOp, math::ErfOp>(op) && isF32(op))
        ops.push_back(op);
    });
    if (ops.empty())
      return;
    RewritePatternSet patterns(&getContext());
    populateMathPolynomialApproximationPatterns(patterns);
    patterns.add<ContractableFma>(&getContext());
    GreedyRewriteConfig config;
    config.strictMode = GreedyRewriteStrictness::ExistingAndNewOps;
    if (failed(applyOpPatternsAndFold(ops, std::move(patterns), config)))
      return signalPassFailure();
    numRewritten += ops.size();
  }
};

} // namespace
