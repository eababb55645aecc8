//===- Passes.h - the passes of Locus ---------------------------*- C++ -*-===//

#ifndef LOCUS_PASSES_PASSES_H
#define LOCUS_PASSES_PASSES_H

#include "locus/Dialect/LocusDialect.h"
#include "locus/Passes/Placement.h"
#include "locus/Support/Errors.h"
#include "locus/abi.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Pass/Pass.h"

namespace locus {

#define GEN_PASS_DECL
#include "locus/Passes/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "locus/Passes/Passes.h.inc"

/// Ops that compute one element of the result from the elements at the same
/// (or broadcast) index: the ops --locus-fuse-kernels chains.
bool isElementwise(mlir::Operation *op);

/// Ops of the locus dialect that compute (not sources, outputs, moves or
/// kernels): what runs inside a kernel.
bool isComputing(mlir::Operation *op);

/// The private declaration of the runtime's function `name` in `module`:
/// the one there, or a new one of `type` at the module's start.
mlir::func::FuncOp declareRuntimeFunction(mlir::ModuleOp module,
                                          llvm::StringRef name,
                                          mlir::FunctionType type);

} // namespace locus

#endif // LOCUS_PASSES_PASSES_H
