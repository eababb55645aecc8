//===- Modes.h - training and evaluation in one recording -*- C++ -*-===//
//
// The marks the frontend leaves on a graph recorded in training mode so
// that --locus-select-mode can compile it for evaluation too
// (model.eval()): what a dropout is in evaluation, and BatchNorm's
// evaluation form recorded beside its training op.
//
//===----------------------------------------------------------------------===//

#ifndef LOCUS_DIALECT_MODES_H
#define LOCUS_DIALECT_MODES_H

#include "llvm/ADT/StringRef.h"

namespace locus {

/// On an op whose result 0 is, in evaluation, its operand k (i64 k): a
/// dropout's product, whose operand 0 is the input.
inline constexpr llvm::StringLiteral kEvalOperandAttrName =
    "locus.eval_operand";
/// On an op recorded only for evaluation (unit): training erases it.
inline constexpr llvm::StringLiteral kEvalOnlyAttrName = "locus.eval_only";
/// A pair (i64 N): result 0 of the op marked kEvalValueAttrName = N is, in
/// evaluation, result 0 of the op marked kEvalOfAttrName = N.
inline constexpr llvm::StringLiteral kEvalValueAttrName = "locus.eval_value";
inline constexpr llvm::StringLiteral kEvalOfAttrName = "locus.eval_of";

} // namespace locus

#endif // LOCUS_DIALECT_MODES_H
