//===- locus-dump.cpp - what runs where, and why --------------------------===//
//
//   locus-dump graph.mlir|model.locus [--policy=auto] [--devices=cpu,cuda:0]
//              [--profile=p.json] [--format=text|table|summary|dot|json|html]
//              [--explain=<op, name or file:line>] [-o out]
//
// A graph that is not placed yet is placed (--locus-place-devices) and its
// transfers inserted first, with the options given. An artifact (from
// locus-compile or CompiledModel::save) shows the placed graph it carries.
//
//===----------------------------------------------------------------------===//

#include "locus/Dump/Dump.h"
#include "locus/Passes/Passes.h"
#include "locus/Passes/Placement.h"
#include "locus/Pipelines/Pipelines.h"
#include "locus/Support/InputLimits.h"
#include "locus/Support/ToolHelp.h"
#include "locus/locus_runtime.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"

using namespace mlir;
namespace cl = llvm::cl;

static cl::OptionCategory toolOptions("locus-dump options");

static cl::opt<std::string> inputFile(cl::Positional, cl::desc("<graph.mlir>"),
                                      cl::init("-"), cl::cat(toolOptions));
static cl::opt<std::string> outputFile("o", cl::desc("Output file"),
                                       cl::init("-"), cl::cat(toolOptions));
static cl::opt<std::string> policy("policy",
                                   cl::desc("strict, prefer-gpu, auto or cpu"),
                                   cl::init("auto"), cl::cat(toolOptions));
static cl::opt<std::string>
    devices("devices", cl::desc("Target devices (default: cpu,cuda:0)"),
            cl::init(llvm::join(locus::defaultTargets(), ",")),
            cl::cat(toolOptions));
static cl::opt<bool> allowSoftPlacement(
    "allow-soft-placement",
    cl::desc("With no CUDA target, run ops pinned to CUDA on the CPU (a "
             "warning) instead of failing at the pin"),
    cl::cat(toolOptions));
static cl::opt<std::string> profilePath("profile",
                                        cl::desc("A JSON cost profile"),
                                        cl::cat(toolOptions));
static cl::opt<std::string>
    format("format",
           cl::desc("text (table and summary), table, summary, dot, json or "
                    "html"),
           cl::init("text"), cl::cat(toolOptions));
static cl::opt<std::string>
    explainQuery("explain",
                 cl::desc("Explain the ops matching a row number (#7), an op "
                          "name, a name, or a source line (file.cpp:23)"),
                 cl::cat(toolOptions));

/// Replaces the artifact in `input` by the placed graph it carries.
/// Returns false after a message when it is no artifact of this runtime.
static bool takeGraphSection(std::unique_ptr<llvm::MemoryBuffer> &input) {
  locus_artifact_t *artifact = nullptr;
  const void *data = nullptr;
  size_t size = 0;
  locus_status_t status = locus_artifact_load_memory(
      input->getBufferStart(), input->getBufferSize(), &artifact);
  if (!status)
    status =
        locus_artifact_section(artifact, LOCUS_SECTION_GRAPH, &data, &size);
  if (status) {
    llvm::errs() << "locus-dump: " << inputFile << ": "
                 << locus_status_message(status) << "\n";
    locus_status_free(status);
    locus_artifact_release(artifact);
    return false;
  }
  input = llvm::MemoryBuffer::getMemBufferCopy(
      llvm::StringRef(static_cast<const char *>(data), size), inputFile);
  locus_artifact_release(artifact);
  return true;
}

/// The module of the input file (an artifact: its placed graph), or null
/// after a message.
static OwningOpRef<ModuleOp> parseInput(MLIRContext &context,
                                        llvm::SourceMgr &sourceMgr) {
  std::string error;
  auto input = openInputFile(inputFile, &error);
  if (!input) {
    llvm::errs() << "locus-dump: " << error << "\n";
    return nullptr;
  }
  if (input->getBuffer().starts_with("LOCUSART") && !takeGraphSection(input))
    return nullptr;
  std::string tooDeep = locus::checkNesting(input->getBuffer());
  if (!tooDeep.empty()) {
    llvm::errs() << "locus-dump: " << inputFile.getValue() << ": " << tooDeep
                 << "\n";
    return nullptr;
  }
  sourceMgr.AddNewSourceBuffer(std::move(input), llvm::SMLoc());
  return parseSourceFile<ModuleOp>(sourceMgr, &context);
}

/// Places what is not placed yet, and inserts the transfers placement
/// implies, with the options given.
static LogicalResult place(MLIRContext &context, ModuleOp module) {
  PassManager pm(&context, ModuleOp::getOperationName(),
                 OpPassManager::Nesting::Implicit);
  locus::PlacementPipelineOptions placement;
  placement.policy = policy.getValue();
  placement.devices = locus::splitTargets(devices);
  placement.profile = profilePath.getValue();
  placement.allowSoftPlacement = allowSoftPlacement.getValue();
  locus::buildPlacementPipelineFor(module, pm, placement);
  return pm.run(module);
}

/// Prints `report` in the --format asked for.
static void printReport(const locus::dump::Report &report,
                        llvm::raw_ostream &os) {
  if (format == "text" || format == "table")
    locus::dump::printTable(report, os);
  if (format == "text")
    os << "\n";
  if (format == "text" || format == "summary")
    locus::dump::printSummary(report, os);
  if (format == "dot")
    locus::dump::printDot(report, os);
  if (format == "json")
    locus::dump::printJson(report, os);
  if (format == "html")
    locus::dump::printHtml(report, os);
}

/// Prints (or, with --explain, explains) each graph of `module`; `graphs`
/// counts those analyzed. Returns false when one failed.
static bool dumpGraphs(ModuleOp module, const locus::CostProfile &profile,
                       llvm::raw_ostream &os, int &graphs) {
  bool ok = true;
  module->walk([&](locus::GraphOp graph) {
    FailureOr<locus::dump::Report> report =
        locus::dump::analyze(graph, profile);
    if (failed(report)) {
      ok = false;
      return;
    }
    ++graphs;
    if (!explainQuery.empty()) {
      ok &= succeeded(locus::dump::explain(*report, explainQuery, profile, os));
      return;
    }
    printReport(*report, os);
  });
  return ok;
}

static int run(int argc, char **argv) {
  locus::showOnlyInHelp(toolOptions);
  cl::ParseCommandLineOptions(argc, argv,
                              "locus-dump: what runs where, and why\n");
  if (format != "text" && format != "table" && format != "summary" &&
      format != "dot" && format != "json" && format != "html") {
    llvm::errs() << "locus-dump: unknown --format=" << format
                 << "; expected text, table, summary, dot, json or html\n";
    return 2;
  }
  if (std::string wrong =
          locus::checkPlacementOptions(policy, locus::splitTargets(devices));
      !wrong.empty()) {
    llvm::errs() << "locus-dump: " << wrong << "\n";
    return 2;
  }
  MLIRContext context(MLIRContext::Threading::DISABLED);
  context.getOrLoadDialect<locus::LocusDialect>();
  // Diagnostics name the user's lines; the op in generic form is noise.
  context.printOpOnDiagnostic(false);
  llvm::SourceMgr sourceMgr;
  SourceMgrDiagnosticHandler handler(sourceMgr, &context);
  OwningOpRef<ModuleOp> module = parseInput(context, sourceMgr);
  if (!module)
    return 1;

  std::string error;
  locus::CostProfile profile;
  if (!profilePath.empty() &&
      !locus::CostProfile::load(profilePath, profile, error)) {
    llvm::errs() << "locus-dump: " << error << "\n";
    return 1;
  }
  if (failed(place(context, *module)))
    return 1;

  auto output = openOutputFile(outputFile, &error);
  if (!output) {
    llvm::errs() << "locus-dump: " << error << "\n";
    return 1;
  }
  int graphs = 0;
  bool ok = dumpGraphs(*module, profile, output->os(), graphs);
  if (graphs == 0) {
    llvm::errs() << "locus-dump: no locus.graph in " << inputFile << "\n";
    return 1;
  }
  output->keep();
  return ok ? 0 : 1;
}

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  try {
    return run(argc, argv);
  } catch (const locus::InternalError &e) {
    llvm::errs() << "locus-dump: " << e.what() << "\n";
    return 70; // EX_SOFTWARE
  }
}
