//===- locus-opt.cpp - mlir-opt for the locus dialect ---------------------===//
//
// Registrations and MlirOptMain: the locus dialect, its passes, the
// compiler's three pipelines (--locus-placement-pipeline,
// --locus-host-pipeline, --locus-cuda-pipeline) and the dialects they
// lower to. The input's nesting is checked before MLIR parses it.
//
//===----------------------------------------------------------------------===//

#include "locus/Passes/Passes.h"
#include "locus/Pipelines/Pipelines.h"
#include "locus/Support/InputLimits.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/ToolOutputFile.h"

int main(int argc, char **argv) {
  mlir::registerTransformsPasses(); // canonicalize, cse, symbol-dce, ...
  locus::registerLocusPasses();
  locus::registerLocusPipelines();
  mlir::DialectRegistry registry;
  registry.insert<locus::LocusDialect>();
  locus::registerPipelineDialects(registry);
  try {
    auto [inputFile, outputFile] = mlir::registerAndParseCLIOptions(
        argc, argv,
        "Locus optimizer driver: the locus dialect and its passes\n", registry);
    mlir::MlirOptMainConfig config =
        mlir::MlirOptMainConfig::createFromCLOptions();
    std::string error;
    std::unique_ptr<llvm::MemoryBuffer> input =
        mlir::openInputFile(inputFile, &error);
    if (!input) {
      llvm::errs() << "locus-opt: " << error << "\n";
      return 1;
    }
    std::string tooDeep = locus::checkNesting(input->getBuffer());
    if (!tooDeep.empty()) {
      llvm::errs() << "locus-opt: " << inputFile << ": " << tooDeep << "\n";
      return 1;
    }
    std::unique_ptr<llvm::ToolOutputFile> output =
        mlir::openOutputFile(outputFile, &error);
    if (!output) {
      llvm::errs() << "locus-opt: " << error << "\n";
      return 1;
    }
    if (mlir::failed(mlir::MlirOptMain(output->os(), std::move(input), registry,
                                       config)))
      return 1;
    output->keep();
    return 0;
  } catch (const locus::InternalError &e) {
    llvm::errs() << "locus-opt: " << e.what() << "\n";
    return 70; // EX_SOFTWARE
  }
}
