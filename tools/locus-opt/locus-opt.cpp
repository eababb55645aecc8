//===- locus-opt.cpp - mlir-opt for the locus dialect ---------------------===//
//
// Registrations and one call to MlirOptMain.
//
//===----------------------------------------------------------------------===//

#include "locus/Dialect/LocusDialect.h"
#include "locus/Passes/Passes.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"

int main(int argc, char **argv) {
  mlir::registerTransformsPasses(); // canonicalize, cse, symbol-dce, ...
  locus::registerLocusPasses();
  mlir::DialectRegistry registry;
  // Ours, and those a lowered graph is written in.
  registry.insert<locus::LocusDialect, mlir::func::FuncDialect,
                  mlir::arith::ArithDialect, mlir::math::MathDialect,
                  mlir::tensor::TensorDialect, mlir::linalg::LinalgDialect,
                  mlir::memref::MemRefDialect, mlir::scf::SCFDialect,
                  mlir::gpu::GPUDialect, mlir::NVVM::NVVMDialect,
                  mlir::affine::AffineDialect>();
  return mlir::asMainReturnCode(mlir::MlirOptMain(
      argc, argv, "Locus optimizer driver: the locus dialect and its passes\n",
      registry));
}
