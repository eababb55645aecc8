//===- locus-opt.cpp - mlir-opt for the locus dialect ---------------------===//
//
// Registrations and one call to MlirOptMain: the locus dialect, its passes,
// the compiler's three pipelines (--locus-placement-pipeline,
// --locus-host-pipeline, --locus-cuda-pipeline) and the dialects they
// lower to.
//
//===----------------------------------------------------------------------===//

#include "locus/Passes/Passes.h"
#include "locus/Pipelines/Pipelines.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"

int main(int argc, char **argv) {
  mlir::registerTransformsPasses(); // canonicalize, cse, symbol-dce, ...
  locus::registerLocusPasses();
  locus::registerLocusPipelines();
  mlir::DialectRegistry registry;
  registry.insert<locus::LocusDialect>();
  locus::registerPipelineDialects(registry);
  try {
    return mlir::asMainReturnCode(mlir::MlirOptMain(
        argc, argv,
        "Locus optimizer driver: the locus dialect and its passes\n",
        registry));
  } catch (const locus::InternalError &e) {
    llvm::errs() << "locus-opt: " << e.what() << "\n";
    return 70; // EX_SOFTWARE
  }
}
