//===- ShapeRules.h - the shape rules op families share ---------*- C++ -*-===//
//
// The result-type rules that several ops share. Their families define
// inferReturnTypes in ODS (LocusOps.td's extraClassDefinition), so the
// generated code calls these; ShapeRules.cpp holds them with every other rule.
// Private to the dialect library.
//
//===----------------------------------------------------------------------===//

#ifndef LOCUS_LIB_DIALECT_SHAPERULES_H
#define LOCUS_LIB_DIALECT_SHAPERULES_H

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Location.h"
#include "mlir/IR/Types.h"
#include "mlir/IR/Value.h"
#include "llvm/ADT/SmallVector.h"

#include <optional>

namespace locus::rules {

/// A reduction over `axes` (unique, in range), the reduced axes kept as 1
/// with `keepdim`. Errors name `opName` at `loc`.
mlir::LogicalResult reduce(llvm::StringRef opName,
                           std::optional<mlir::Location> loc, mlir::Value input,
                           mlir::DenseI64ArrayAttr axes, bool keepdim,
                           llvm::SmallVectorImpl<mlir::Type> &results);

/// 2-D pooling of an NCHW input: windows of `kernel` (2 entries), `stride`
/// apart, over the input padded by at most half the kernel.
mlir::LogicalResult pool2d(llvm::StringRef opName,
                           std::optional<mlir::Location> loc, mlir::Value input,
                           mlir::DenseI64ArrayAttr kernel,
                           mlir::DenseI64ArrayAttr stride,
                           mlir::DenseI64ArrayAttr padding,
                           llvm::SmallVectorImpl<mlir::Type> &results);

} // namespace locus::rules

#endif // LOCUS_LIB_DIALECT_SHAPERULES_H
