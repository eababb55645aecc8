//===- LowerToLinalg.h - locus to linalg patterns ---------------*- C++ -*-===//
//
// The patterns of --locus-lower-to-linalg, for drivers other than the pass
// (a dialect conversion of one's own, a pipeline that adds its patterns).
//
//===----------------------------------------------------------------------===//

#ifndef LOCUS_PASSES_LOWERTOLINALG_H
#define LOCUS_PASSES_LOWERTOLINALG_H

namespace mlir {
class ConversionTarget;
class RewritePatternSet;
} // namespace mlir

namespace locus {

/// One pattern per computing locus op (and `locus.constant`): each replaces
/// its op with linalg, tensor, arith and math ops on tensors.
void populateLocusToLinalgPatterns(mlir::RewritePatternSet &patterns);

/// What --locus-lower-to-linalg leaves: linalg, tensor, arith, math,
/// bufferization and func ops; of the locus dialect only graphs, kernels,
/// their terminators and, directly in a graph, its sources, outputs, state
/// writes and moves. Every other locus op is illegal.
void configureLocusToLinalgTarget(mlir::ConversionTarget &target);

} // namespace locus

#endif // LOCUS_PASSES_LOWERTOLINALG_H
