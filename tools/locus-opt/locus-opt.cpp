//===- locus-opt.cpp - mlir-opt for the locus dialect ---------------------===//
//
// Registrations and MlirOptMain: the locus dialect, its passes, the
// compiler's three pipelines (--locus-placement-pipeline,
// --locus-host-pipeline, --locus-cuda-pipeline) and the dialects they
// lower to. The input's nesting is checked before MLIR parses it. --help
// lists the passes and mlir-opt's own options; --help-hidden lists all of
// LLVM's too.
//
//===----------------------------------------------------------------------===//

#include "locus/Passes/Passes.h"
#include "locus/Pipelines/Pipelines.h"
#include "locus/Support/InputLimits.h"
#include "locus/Support/ToolHelp.h"
#include "locus/Support/ToolMain.h"

#include "mlir/Debug/Counter.h"
#include "mlir/IR/AsmState.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Support/Timing.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/ToolOutputFile.h"

namespace {

/// mlir::registerAndParseCLIOptions, with --help kept to what a user of
/// locus-opt reaches for.
std::pair<std::string, std::string>
parseOptions(int argc, char **argv, mlir::DialectRegistry &registry) {
  static llvm::cl::opt<std::string> inputFilename(
      llvm::cl::Positional, llvm::cl::desc("<input file>"),
      llvm::cl::init("-"));
  static llvm::cl::opt<std::string> outputFilename(
      "o", llvm::cl::desc("Output filename"), llvm::cl::value_desc("filename"),
      llvm::cl::init("-"));
  mlir::MlirOptMainConfig::registerCLOptions(registry);
  mlir::registerAsmPrinterCLOptions();
  mlir::registerMLIRContextCLOptions();
  mlir::registerPassManagerCLOptions();
  mlir::registerDefaultTimingManagerCLOptions();
  mlir::tracing::DebugCounter::registerCLOptions();
  locus::showOnlyInHelp(
      {"o", "locus-place-devices", "pass-pipeline", "split-input-file",
       "verify-diagnostics", "mlir-print-ir-after-all", "mlir-print-ir-after",
       "mlir-print-ir-before", "mlir-print-debuginfo", "mlir-print-op-generic",
       "mlir-timing", "mlir-pass-statistics", "mlir-disable-threading",
       "allow-unregistered-dialect", "show-dialects", "list-passes",
       "dump-pass-pipeline", "emit-bytecode"});
  std::string header =
      "Locus optimizer driver: the locus dialect, its passes and pipelines, "
      "and MLIR's generic passes (--help-hidden: every LLVM option)\n"
      "Available Dialects: ";
  llvm::interleave(
      registry.getDialectNames(),
      [&](llvm::StringRef name) { header += name.str(); },
      [&] { header += ", "; });
  llvm::cl::ParseCommandLineOptions(argc, argv, header);
  return {inputFilename.getValue(), outputFilename.getValue()};
}

} // namespace

int main(int argc, char **argv) {
  mlir::registerTransformsPasses(); // canonicalize, cse, symbol-dce, ...
  locus::registerLocusPasses();
  locus::registerLocusPipelines();
  mlir::DialectRegistry registry;
  registry.insert<locus::LocusDialect>();
  locus::registerPipelineDialects(registry);
  return locus::runTool("locus-opt", llvm::errs(), [&] {
    auto [inputFile, outputFile] = parseOptions(argc, argv, registry);
    mlir::MlirOptMainConfig config =
        mlir::MlirOptMainConfig::createFromCLOptions();
    std::string error;
    std::unique_ptr<llvm::MemoryBuffer> input =
        mlir::openInputFile(inputFile, &error);
    if (!input) {
      llvm::errs() << "locus-opt: " << error << "\n";
      return 1;
    }
    std::string wrong = locus::checkText(input->getBuffer());
    if (!wrong.empty()) {
      llvm::errs() << "locus-opt: " << inputFile << ": " << wrong << "\n";
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
  });
}
