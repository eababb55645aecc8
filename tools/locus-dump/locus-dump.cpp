//===- locus-dump.cpp - what runs where, and why --------------------------===//
//
//   locus-dump graph.mlir|model.locus [--policy=auto] [--devices=cpu,cuda:0]
//              [--profile=p.json] [--format=text|table|summary|dot|json|html]
//              [--explain=<layer, op, name or file:line>] [-o out]
//
// A graph that is not placed yet is placed (--locus-place-devices) and its
// transfers inserted first, with the options given. An artifact (from
// locus-compile or CompiledModel::save) shows the placed graph it carries.
//
//===----------------------------------------------------------------------===//

#include "PlacementFlags.h"

#include "locus/Dump/Dump.h"
#include "locus/Passes/Passes.h"
#include "locus/Passes/Placement.h"
#include "locus/Pipelines/Pipelines.h"
#include "locus/Support/InputLimits.h"
#include "locus/Support/ToolHelp.h"
#include "locus/Support/ToolMain.h"
#include "locus/locus_runtime.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"

#include <tuple>

using namespace mlir;
namespace cl = llvm::cl;

static cl::OptionCategory toolOptions("locus-dump options");

static cl::opt<std::string> inputFile(cl::Positional, cl::desc("<graph.mlir>"),
                                      cl::init("-"), cl::cat(toolOptions));
static cl::opt<std::string> outputFile("o", cl::desc("Output file"),
                                       cl::init("-"), cl::cat(toolOptions));
static locus::tools::PlacementFlags
    placement(toolOptions, "Target devices (default: cpu,cuda:0)");
static cl::opt<std::string> &policy = placement.policy;
static cl::opt<std::string> &devices = placement.devices;
static cl::opt<bool> &allowSoftPlacement = placement.allowSoftPlacement;
static cl::opt<std::string> &profilePath = placement.profile;
static cl::opt<std::string>
    format("format",
           cl::desc("text (table and summary), table, layers (the table by "
                    "layer), summary, dot, json or html"),
           cl::init("text"), cl::cat(toolOptions));
static cl::opt<std::string>
    explainQuery("explain",
                 cl::desc("Explain a layer (layer1.0: where its ops run, its "
                          "copies, its cost moved whole to each device), or "
                          "the ops matching a row number (#7), an op name, a "
                          "name, or a source line (file.cpp:23)"),
                 cl::cat(toolOptions));

static cl::opt<std::string> tracePath(
    "trace",
    cl::desc("A trace of a run of this graph (locus-run --trace, "
             "LOCUS_TRACE): show measured kernel and copy times beside the "
             "estimates, per layer"),
    cl::value_desc("trace.json"), cl::cat(toolOptions));

static cl::opt<int> maxNodes(
    "max-nodes",
    cl::desc("With --format=dot: above this many ops, draw each layer as one "
             "node and copies as edges (0: always every op); with "
             "--format=layers: at most this many rows"),
    cl::init(300), cl::cat(toolOptions));
static cl::opt<std::string> diffWith(
    "diff", cl::ValueOptional,
    cl::desc("Compare with another placement: --diff=<b.mlir or b.locus>, "
             "or --diff alone for the input again, placed with the "
             "--diff-* options"),
    cl::value_desc("file"), cl::cat(toolOptions));
static cl::opt<std::string>
    diffPolicy("diff-policy",
               cl::desc("The policy of --diff's side (default: --policy)"),
               cl::cat(toolOptions));
static cl::opt<std::string>
    diffDevices("diff-devices",
                cl::desc("The devices of --diff's side (default: --devices)"),
                cl::cat(toolOptions));
static cl::opt<std::string> diffProfile(
    "diff-profile",
    cl::desc("The cost profile of --diff's side (default: --profile)"),
    cl::cat(toolOptions));

/// One side of what is shown: a file, and how to place what it holds when
/// it is not placed yet.
struct Side {
  std::string file, policy, devices, profile;
  /// "cnn.mlir" or "cnn.mlir with profile p.json" (what the diff calls it;
  /// it shows each side's policy and targets from its graph).
  std::string name() const {
    return profile.empty() ? file : file + " with profile " + profile;
  }
};

/// Replaces the artifact in `input` by the placed graph it carries.
/// Returns false after a message when it is no artifact of this runtime.
static bool takeGraphSection(std::unique_ptr<llvm::MemoryBuffer> &input,
                             llvm::StringRef inputFile) {
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

/// The module of `inputFile` (an artifact: its placed graph), or null
/// after a message.
static OwningOpRef<ModuleOp> parseInput(MLIRContext &context,
                                        llvm::SourceMgr &sourceMgr,
                                        llvm::StringRef inputFile) {
  std::string error;
  auto input = openInputFile(inputFile, &error);
  if (!input) {
    llvm::errs() << "locus-dump: " << error << "\n";
    return nullptr;
  }
  if (input->getBuffer().starts_with("LOCUSART") &&
      !takeGraphSection(input, inputFile))
    return nullptr;
  std::string wrong = locus::checkText(input->getBuffer());
  if (!wrong.empty()) {
    llvm::errs() << "locus-dump: " << inputFile << ": " << wrong << "\n";
    return nullptr;
  }
  sourceMgr.AddNewSourceBuffer(std::move(input), llvm::SMLoc());
  return parseSourceFile<ModuleOp>(sourceMgr, &context);
}

/// Places what is not placed yet, and inserts the transfers placement
/// implies.
static LogicalResult place(MLIRContext &context, ModuleOp module,
                           const locus::PlacementOptions &placement) {
  PassManager pm(&context, ModuleOp::getOperationName(),
                 OpPassManager::Nesting::Implicit);
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
  if (format == "layers")
    locus::dump::printLayers(report, os, maxNodes);
  if (format == "dot")
    locus::dump::printDot(report, os, maxNodes);
  if (format == "json")
    locus::dump::printJson(report, os);
  if (format == "html")
    locus::dump::printHtml(report, os);
}

/// The text of --trace's file, read before the graphs are placed.
static std::string traceText;

/// Prints (or, with --explain, explains; with --trace, measures) each graph
/// of `module`; `graphs` counts those analyzed. Returns false when one
/// failed.
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
    if (!traceText.empty()) {
      std::string error;
      if (failed(locus::dump::printMeasured(*report, traceText, tracePath, os,
                                            error))) {
        llvm::errs() << "locus-dump: " << error << "\n";
        ok = false;
      }
      return;
    }
    if (!explainQuery.empty()) {
      ok &= succeeded(locus::dump::explain(*report, explainQuery, profile, os));
      return;
    }
    printReport(*report, os);
  });
  return ok;
}

/// The profile `path` names (built-in defaults for ""); false after a
/// message.
static bool loadProfile(const std::string &path, locus::CostProfile &profile) {
  std::string error;
  if (!path.empty() && !locus::CostProfile::load(path, profile, error)) {
    llvm::errs() << "locus-dump: " << error << "\n";
    return false;
  }
  return true;
}

/// The one graph of `module`, or null after a message (--diff compares one
/// graph with one graph).
static locus::GraphOp onlyGraph(ModuleOp module, const std::string &file) {
  SmallVector<locus::GraphOp> graphs;
  module->walk([&](locus::GraphOp graph) { graphs.push_back(graph); });
  if (graphs.size() != 1) {
    llvm::errs() << "locus-dump: --diff compares one graph with one; " << file
                 << " has " << graphs.size() << "\n";
    return nullptr;
  }
  return graphs.front();
}

/// The placed module of `side`, or null after a message.
static OwningOpRef<ModuleOp> placedModule(MLIRContext &context,
                                          llvm::SourceMgr &sourceMgr,
                                          const Side &side) {
  std::string wrong;
  std::optional<locus::PlacementOptions> placement =
      locus::PlacementOptions::read(side.policy,
                                    locus::splitTargets(side.devices), wrong);
  if (placement)
    wrong = ::placement.checkBucketMb();
  if (!placement || !wrong.empty()) {
    llvm::errs() << "locus-dump: " << wrong << "\n";
    return nullptr;
  }
  placement->profile = side.profile;
  placement->allowSoftPlacement = allowSoftPlacement.getValue();
  placement->dataParallel = ::placement.dataParallel.getValue();
  placement->bucketBytes = ::placement.bucketBytes();
  OwningOpRef<ModuleOp> module = parseInput(context, sourceMgr, side.file);
  if (module && failed(place(context, *module, *placement)))
    return nullptr;
  return module;
}

/// --diff: the input's placement against the other side's, as text or
/// JSON. Returns the exit code.
static int diff(MLIRContext &context, llvm::SourceMgr &sourceMgr, const Side &a,
                llvm::raw_ostream &os, bool &written) {
  Side b{diffWith.empty() ? a.file : diffWith.getValue(),
         diffPolicy.empty() ? a.policy : diffPolicy.getValue(),
         diffDevices.empty() ? a.devices : diffDevices.getValue(),
         diffProfile.empty() ? a.profile : diffProfile.getValue()};
  locus::CostProfile profileA, profileB;
  if (!loadProfile(a.profile, profileA) || !loadProfile(b.profile, profileB))
    return 1;
  OwningOpRef<ModuleOp> moduleA = placedModule(context, sourceMgr, a);
  if (!moduleA)
    return 1;
  // A parse reads its source manager's first buffer: b has its own, and
  // its own handler (the newest one answers) while it is parsed and placed.
  llvm::SourceMgr sourceMgrB;
  OwningOpRef<ModuleOp> moduleB;
  {
    SourceMgrDiagnosticHandler handlerB(sourceMgrB, &context);
    moduleB = placedModule(context, sourceMgrB, b);
  }
  if (!moduleB)
    return 1;
  locus::GraphOp graphA = onlyGraph(*moduleA, a.file),
                 graphB = onlyGraph(*moduleB, b.file);
  if (!graphA || !graphB)
    return 1;
  locus::dump::Report ra, rb;
  for (auto [graph, profile, out] : {std::tuple(graphA, &profileA, &ra),
                                     std::tuple(graphB, &profileB, &rb)}) {
    FailureOr<locus::dump::Report> report =
        locus::dump::analyze(graph, *profile);
    if (failed(report))
      return 1;
    // NOLINTNEXTLINE(bugprone-unchecked-optional-access): failed() checked
    *out = std::move(*report);
  }
  if (format == "json")
    locus::dump::printDiffJson(ra, a.name(), rb, b.name(), os);
  else
    locus::dump::printDiff(ra, a.name(), rb, b.name(), os);
  written = true;
  return 0;
}

static int run(int argc, char **argv) {
  locus::showOnlyInHelp(toolOptions);
  cl::ParseCommandLineOptions(argc, argv,
                              "locus-dump: what runs where, and why\n");
  if (format != "text" && format != "table" && format != "layers" &&
      format != "summary" && format != "dot" && format != "json" &&
      format != "html") {
    llvm::errs() << "locus-dump: unknown --format=" << format
                 << "; expected text, table, layers, summary, dot, json or "
                    "html\n";
    return 2;
  }
  if (maxNodes < 0) {
    llvm::errs() << "locus-dump: --max-nodes=" << maxNodes
                 << " is negative; give a node count, or 0 for every op\n";
    return 2;
  }
  bool diffing = diffWith.getNumOccurrences() > 0;
  if (!diffing &&
      (!diffPolicy.empty() || !diffDevices.empty() || !diffProfile.empty())) {
    llvm::errs() << "locus-dump: --diff-policy, --diff-devices and "
                    "--diff-profile describe --diff's side; add --diff\n";
    return 2;
  }
  if (diffing &&
      ((format != "text" && format != "json") || !explainQuery.empty())) {
    llvm::errs() << "locus-dump: --diff prints text or --format=json (not "
                 << (explainQuery.empty() ? "--format=" + format
                                          : std::string("--explain"))
                 << ")\n";
    return 2;
  }
  if (!tracePath.empty() &&
      (diffing || format != "text" || !explainQuery.empty())) {
    llvm::errs() << "locus-dump: --trace prints its own table; it does not "
                    "combine with --diff, --explain or --format\n";
    return 2;
  }
  if (!tracePath.empty()) {
    auto buffer = llvm::MemoryBuffer::getFile(tracePath, /*IsText=*/true);
    if (!buffer) {
      llvm::errs() << "locus-dump: cannot read " << tracePath << ": "
                   << buffer.getError().message() << "\n";
      return 1;
    }
    traceText = (*buffer)->getBuffer().str();
    if (traceText.empty()) {
      llvm::errs() << "locus-dump: " << tracePath
                   << " is empty, not a Locus trace\n";
      return 1;
    }
  }
  Side side{inputFile, policy, devices, profilePath};
  MLIRContext context(MLIRContext::Threading::DISABLED);
  context.getOrLoadDialect<locus::LocusDialect>();
  // Diagnostics name the user's lines; the op in generic form is noise.
  context.printOpOnDiagnostic(false);
  llvm::SourceMgr sourceMgr;
  SourceMgrDiagnosticHandler handler(sourceMgr, &context);

  std::string error;
  auto output = openOutputFile(outputFile, &error);
  if (!output) {
    llvm::errs() << "locus-dump: " << error << "\n";
    return 1;
  }
  if (diffing) {
    bool written = false;
    int code = diff(context, sourceMgr, side, output->os(), written);
    if (written)
      output->keep();
    return code;
  }

  locus::CostProfile profile;
  if (!loadProfile(profilePath, profile))
    return 1;
  OwningOpRef<ModuleOp> module = placedModule(context, sourceMgr, side);
  if (!module)
    return 1;
  int graphs = 0;
  bool ok = dumpGraphs(*module, profile, output->os(), graphs);
  if (graphs == 0) {
    llvm::errs() << "locus-dump: no locus.graph in " << inputFile << "\n";
    return 1;
  }
  // A failure (an op --explain does not find, a bad trace) leaves no file.
  if (!ok)
    return 1;
  output->keep();
  return 0;
}

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  return locus::runTool("locus-dump", llvm::errs(),
                        [&] { return run(argc, argv); });
}
