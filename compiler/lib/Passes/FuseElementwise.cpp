//===- FuseElementwise.cpp - --locus-fuse-elementwise ---------------------===//
//
// Inside a kernel, elementwise linalg.generic ops fuse into one loop nest;
// nothing else moves. See Passes.td.
//
//===----------------------------------------------------------------------===//

#include "locus/Passes/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
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

/// A linalg op whose loops are all parallel.
bool allParallel(Operation *op) {
  auto linalgOp = dyn_cast<linalg::LinalgOp>(op);
  return linalgOp && linalgOp.getNumLoops() == linalgOp.getNumParallelLoops();
}

/// Whether every reader of `producer` is `reader` or the function's return.
bool readByAndReturned(Operation *producer, Operation *reader) {
  return llvm::all_of(producer->getUsers(), [&](Operation *user) {
    return user == reader || isa<func::ReturnOp>(user);
  });
}

/// A linalg op with no loops.
bool scalar(Operation *op) {
  auto linalgOp = dyn_cast<linalg::LinalgOp>(op);
  return linalgOp && linalgOp.getNumLoops() == 0;
}

/// An elementwise op that only widens its one input (a 16-bit value cast up
/// to f32, `arith.extf` of the element): recomputed in each reader, it
/// costs one conversion per element read, where written out it costs a
/// pass over memory and twice the bytes for each reader to read back (a
/// batch norm reads a GPU convolution's bf16 output in each of its
/// passes, converting as it goes).
bool widensOnly(Operation *op) {
  auto generic = dyn_cast<linalg::GenericOp>(op);
  if (!generic || !allParallel(op) || generic.getNumDpsInputs() != 1 ||
      bodySize(op) != 2)
    return false;
  auto extf = dyn_cast<arith::ExtFOp>(generic.getBody()->front());
  return extf && isa<BlockArgument>(extf.getIn());
}

class FuseElementwisePass
    : public locus::impl::LocusFuseElementwiseBase<FuseElementwisePass> {
public:
  using Base::Base;

  void runOnOperation() override {
    // A producer fuses into its only reader: nothing is computed twice
    // (but a widening of 16-bit values, into each reader: widensOnly).
    // Each fusion makes a new op holding both bodies, so a chain of n
    // elementwise ops fused one by one copies O(n^2) ops: a fused body
    // stops growing at kMaxFusedBody ops (a 20,000-op chain took minutes).
    //
    // With scalars-into-readers (the CUDA lowering), a scalar producer (no
    // loops: an optimizer's bias corrections) also fuses into the one op
    // that reads its results: each thread recomputes a few scalar
    // operations instead of the kernel paying a launch of one thread for
    // them. On the host (and in the host versions of CUDA kernels) the
    // loop would recompute them per element, so there they stay apart.
    if (failed(fuse(/*returned=*/false)))
      return signalPassFailure();
    // With results-into-readers (the CUDA lowering), once the chains are
    // whole: a producer that the kernel also returns fuses into its one
    // reader when both have parallel loops alone. The reader recomputes
    // the producer's values from its inputs and the producer stays to
    // write the kernel's result; the two no longer depend on each other,
    // so --locus-map-to-gpu runs them side by side in one launch (kernels
    // that --locus-fuse-kernels joined, one reading the other's result).
    // After the chains, so that no op of a chain gains a second reader.
    if (resultsIntoReaders && failed(fuse(/*returned=*/true)))
      signalPassFailure();
  }

private:
  LogicalResult fuse(bool returned) {
    RewritePatternSet patterns(&getContext());
    bool scalars = scalarsIntoReaders;
    linalg::populateElementwiseOpsFusionPatterns(
        patterns, [scalars, returned](OpOperand *operand) {
          Operation *producer = operand->get().getDefiningOp();
          Operation *reader = operand->getOwner();
          if (!producer ||
              bodySize(producer) + bodySize(reader) > kMaxFusedBody)
            return false;
          if (returned)
            return allParallel(producer) && allParallel(reader) &&
                   !producer->hasOneUse() &&
                   readByAndReturned(producer, reader);
          return producer->hasOneUse() || widensOnly(producer) ||
                 (scalars && scalar(producer) &&
                  llvm::all_of(producer->getUsers(), [&](Operation *user) {
                    return user == reader;
                  }));
        });
    return applyPatternsAndFoldGreedily(getOperation(), std::move(patterns));
  }
};

} // namespace
