//===- locus-compile.cpp - a graph to an artifact -------------------------===//
//
//   locus-compile graph.mlir|model.onnx -o model.locus [--policy=auto]
//                 [--devices=cpu,cuda:0] [--profile=p.json] [--cpu=x86-64-v3]
//                 [--no-fuse] [--allow-tf32] [--precision=fp32|tf32|bf16|f16]
//                 [--print-ir-after=placement,kernels,cuda,host]
//                 [--print-ir-after-all] [--sign-key=builder.key]
//   locus-compile --generate-key builder
//
// Places the graph (unless it is placed already), inserts transfers, fuses
// and outlines kernels, plans, compiles the kernels ahead of time and writes
// one artifact that the runtime alone runs (locus-run, or the C API).
// An .onnx model is imported first (--shape NAME=DxDx... gives symbolic
// input dimensions) and keeps its initializers' values in the artifact.
//
//===----------------------------------------------------------------------===//

#include "OnnxShapes.h"
#include "PlacementFlags.h"

#include "locus/Compile.h"
#include "locus/Compile/Cache.h"
#include "locus/Compile/Driver.h"
#include "locus/Import/Onnx.h"
#include "locus/Support/Errors.h"
#include "locus/Support/InputLimits.h"
#include "locus/Support/ToolHelp.h"
#include "locus/Support/ToolMain.h"
#include "locus/locus_runtime.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/SourceMgr.h"

#include <chrono>

using namespace mlir;
namespace cl = llvm::cl;

static cl::OptionCategory toolOptions("locus-compile options");

static cl::opt<std::string> inputFile(cl::Positional,
                                      cl::desc("<graph.mlir or model.onnx>"),
                                      cl::cat(toolOptions));
static cl::list<std::string>
    shapeSpecs("shape",
               cl::desc("An ONNX input's shape, NAME=DxDx... (for symbolic "
                        "dimensions)"),
               cl::value_desc("NAME=DxDx..."), cl::cat(toolOptions));
static cl::list<std::string> dynamicSpecs(
    "dynamic",
    cl::desc("Keep an ONNX model's symbolic dimension dynamic up to a bound, "
             "NAME=BOUND (one artifact for every size; CPU only)"),
    cl::value_desc("NAME=BOUND"), cl::cat(toolOptions));
static cl::opt<std::string> outputFile("o", cl::desc("The artifact to write"),
                                       cl::cat(toolOptions));
static cl::opt<std::string>
    signKey("sign-key",
            cl::desc("Sign the artifact with this secret key (runtimes given "
                     "its public key load it; see --generate-key)"),
            cl::value_desc("file.key"), cl::cat(toolOptions));
static cl::opt<std::string> generateKey(
    "generate-key",
    cl::desc("Make a new signing key pair, NAME.key (secret, mode 0600) and "
             "NAME.pub (for locus-run --trusted-key), and stop"),
    cl::value_desc("NAME"), cl::cat(toolOptions));
static locus::tools::PlacementFlags
    placement(toolOptions, "Target devices (default: cpu,cuda:0: the "
                           "artifact carries GPU code and runs anywhere)");
static cl::opt<std::string> &policy = placement.policy;
static cl::opt<std::string> &devices = placement.devices;
static cl::opt<bool> &allowSoftPlacement = placement.allowSoftPlacement;
static cl::opt<std::string> &profilePath = placement.profile;
static cl::opt<std::string>
    cpu("cpu",
        cl::desc("The CPU the host code is for: x86-64, x86-64-v2, "
                 "x86-64-v3, x86-64-v4 or native"),
        cl::init("x86-64-v3"), cl::cat(toolOptions));
static cl::opt<std::string>
    emitPtx("emit-ptx",
            cl::desc("Also write each CUDA kernel's PTX module to "
                     "<dir>/<kernel>.<n>.ptx (what ptxas checks)"),
            cl::value_desc("dir"), cl::cat(toolOptions));
static cl::opt<bool>
    allowTf32("allow-tf32",
              cl::desc("Let convolutions and matrix products on a GPU round "
                       "their operands to TF32 (tensor cores; about 1e-3 "
                       "relative error); fp32 otherwise"),
              cl::cat(toolOptions));
static cl::opt<std::string> precision(
    "precision",
    cl::desc("fp32 (the default), tf32 (as --allow-tf32), bf16 or f16: "
             "matrix products and convolutions, forward and backward, with "
             "16-bit operands and f32 accumulation; everything else f32, as "
             "torch.autocast (docs/precision.md)"),
    cl::init("fp32"), cl::cat(toolOptions));
static cl::opt<bool> noFuse("no-fuse",
                            cl::desc("One kernel per op (for comparing)"),
                            cl::cat(toolOptions));
static cl::list<std::string> printIrAfter(
    "print-ir-after",
    cl::desc("Print the IR to stderr after these stages: placement, kernels, "
             "cuda (the CUDA kernels' module), host"),
    cl::CommaSeparated, cl::cat(toolOptions));
static cl::opt<bool>
    printIrAfterAll("print-ir-after-all",
                    cl::desc("Print the IR to stderr after every pass and "
                             "every stage"),
                    cl::cat(toolOptions));
static cl::opt<bool>
    passTiming("pass-timing",
               cl::desc("Print each stage's time per pass to stderr (where a "
                        "compile spends its time)"),
               cl::cat(toolOptions));

static cl::opt<bool>
    noCache("no-cache",
            cl::desc("Neither read nor write the compile cache "
                     "(LOCUS_CACHE=0 does the same; locus-cache lists it)"),
            cl::cat(toolOptions));

static cl::opt<std::string>
    progress("progress",
             cl::desc("Progress on stderr after each stage: auto (once the "
                      "compile has taken a second), always or never"),
             cl::init("auto"), cl::cat(toolOptions));

/// When the compile started, for --progress.
static const auto compileStart = std::chrono::steady_clock::now();

/// One line of progress on stderr ("locus-compile: <what> (<s> s)"), once
/// the compile has taken a second (--progress=auto) or always.
static void reportProgress(const llvm::Twine &what) {
  double seconds = std::chrono::duration<double>(
                       std::chrono::steady_clock::now() - compileStart)
                       .count();
  if (progress == "never" || (progress == "auto" && seconds < 1.0))
    return;
  llvm::errs() << "locus-compile: " << what << " ("
               << llvm::format("%.1f", seconds) << " s)\n";
}

/// Prints the module after a stage, when asked to, and the progress.
static void printStage(llvm::StringRef stage, ModuleOp module) {
  size_t ops = 0;
  module.walk([&](Operation *) { ++ops; });
  reportProgress("stage " + stage + " done, " + llvm::Twine(ops) + " ops");
  if (!printIrAfterAll && !llvm::is_contained(printIrAfter, stage))
    return;
  llvm::errs() << "// -----// IR after stage '" << stage << "' //----- //\n";
  module.print(llvm::errs());
  llvm::errs() << "\n";
}

/// The stage names --print-ir-after takes; false (with a message) for
/// another.
static bool checkStages() {
  for (const std::string &stage : printIrAfter)
    if (!llvm::is_contained({"placement", "kernels", "cuda", "host"}, stage)) {
      llvm::errs() << "locus-compile: unknown stage '" << stage
                   << "' for --print-ir-after; expected placement, kernels, "
                      "cuda or host\n";
      return false;
    }
  return true;
}

/// The compile cache as the flags and the environment set it: off with
/// --no-cache and when the IR is printed or passes timed (the pipeline must
/// run for those).
static locus::cache::Settings cacheSettings() {
  if (noCache || !printIrAfter.empty() || printIrAfterAll || passTiming)
    return {};
  locus::cache::Settings settings = locus::cache::Settings::resolve();
  if (!settings.problem.empty())
    llvm::errs() << "locus-compile: warning: compile cache off: "
                 << settings.problem << "\n";
  return settings;
}

/// `module` compiled into `result` and host code for --cpu: taken from the
/// compile cache, or run through the pipeline and compiled, then kept
/// there. False when the compile failed (the diagnostics are out).
static bool compileThroughCache(ModuleOp module,
                                const locus::PipelineOptions &options,
                                locus::PipelineResult &result,
                                locus::HostCode &code) {
  namespace cache = locus::cache;
  cache::Settings settings = cacheSettings();
  std::string key = cache::keyFor(
      settings.enabled ? cache::graphKeyOf(module, options) : "", cpu);
  std::string note;
  std::optional<cache::Entry> hit = cache::lookup(settings, key, &note);
  if (!note.empty())
    llvm::errs() << "locus-compile: warning: " << note << "\n";
  if (hit) {
    result = std::move(hit->result);
    code = std::move(hit->code);
    reportProgress("taken from the compile cache");
    return true;
  }
  if (failed(locus::runPipeline(module, options, result)))
    return false;
  reportProgress("compiling and linking the host code of " +
                 llvm::Twine(result.summary.kernelFunctions.size()) +
                 " kernels");
  std::string error = locus::compileHostCode(result, cpu, code);
  if (!error.empty()) {
    llvm::errs() << "locus-compile: " << error << "\n";
    return false;
  }
  error = cache::store(settings, key, {result, code});
  if (!error.empty())
    llvm::errs() << "locus-compile: warning: compile cache: " << error << "\n";
  return true;
}

/// An ONNX model: imported, compiled in-process (so that the initializers'
/// values start the model) and saved with them.
static int compileOnnx() {
  try {
    locus::OnnxImportOptions importOptions;
    locus::tools::parseShapes(shapeSpecs, importOptions);
    locus::tools::parseDynamicSizes(dynamicSpecs, importOptions);
    locus::Graph graph = locus::importOnnx(inputFile, importOptions);
    locus::CompileOptions options;
    options.policy = policy;
    options.devices = locus::splitTargets(devices);
    options.profile = profilePath;
    options.fuse = !noFuse;
    options.allowSoftPlacement = allowSoftPlacement;
    options.dataParallel = placement.dataParallel;
    options.eval = placement.eval;
    options.bucketBytes = placement.bucketBytes();
    options.allowTf32 = allowTf32;
    options.precision = precision;
    options.cache = !noCache;
    // A remark on the whole graph is the model file's, not this tool's
    // line that called compile().
    options.diagnostics = [](const locus::Diagnostic &d) {
      locus::Diagnostic shown = d;
      if (shown.file == __FILE__) {
        shown.file = inputFile;
        shown.line = shown.column = 0;
      }
      llvm::errs() << shown.str() << "\n";
    };
    locus::CompiledModel model = locus::compile(graph, options);
    model.save(outputFile, cpu, signKey);
    llvm::outs() << model.placementSummary()
                 << "\nplan: " << model.kernelCount() << " kernels; "
                 << model.stateNames().size()
                 << " parameters and buffers from the model\n";
  } catch (const locus::Error &e) {
    llvm::errs() << e.what() << "\n";
    return 1;
  }
  return 0;
}

static int run(int argc, char **argv) {
  locus::showOnlyInHelp(toolOptions);
  cl::ParseCommandLineOptions(argc, argv,
                              "locus-compile: a graph to an artifact\n");
  if (!checkStages())
    return 2;
  if (!generateKey.empty()) {
    std::string secret = generateKey + ".key", pub = generateKey + ".pub";
    if (locus_status_t s = locus_key_generate(secret.c_str(), pub.c_str())) {
      llvm::errs() << "locus-compile: " << locus_status_message(s) << "\n";
      locus_status_free(s);
      return 1;
    }
    llvm::outs() << "wrote " << secret << " (keep it secret) and " << pub
                 << " (give it to locus-run --trusted-key)\n";
    return 0;
  }
  if (inputFile.empty() || outputFile.empty()) {
    llvm::errs() << "locus-compile: give a graph and -o the artifact to "
                    "write (--help shows the options)\n";
    return 2;
  }
  // Flags are checked before anything is read or compiled.
  if (!llvm::is_contained({"auto", "always", "never"}, progress.getValue())) {
    llvm::errs() << "locus-compile: unknown --progress=" << progress
                 << "; expected auto, always or never\n";
    return 2;
  }
  std::string wrong;
  std::optional<locus::PlacementOptions> placementOptions =
      placement.read(wrong);
  if (wrong.empty())
    wrong = locus::checkCpuName(cpu);
  if (wrong.empty() && !llvm::is_contained({"fp32", "tf32", "bf16", "f16"},
                                           precision.getValue()))
    wrong = "unknown --precision=" + precision.getValue() +
            "; expected fp32, tf32, bf16 or f16";
  if (!wrong.empty() || !placementOptions) {
    llvm::errs() << "locus-compile: " << wrong << "\n";
    return 2;
  }
  if (!signKey.empty() && !llvm::sys::fs::exists(signKey.getValue())) {
    llvm::errs() << "locus-compile: no secret key at '" << signKey.getValue()
                 << "' (locus-compile --generate-key NAME makes one)\n";
    return 2;
  }
  if (llvm::StringRef(inputFile).ends_with(".onnx")) {
    if (!printIrAfter.empty() || printIrAfterAll || !emitPtx.empty()) {
      llvm::errs() << "locus-compile: --print-ir-after and --emit-ptx take a "
                      ".mlir graph; import the model with locus-import first\n";
      return 2;
    }
    return compileOnnx();
  }
  if (!shapeSpecs.empty() || !dynamicSpecs.empty()) {
    llvm::errs() << "locus-compile: --shape and --dynamic are for .onnx "
                    "models\n";
    return 2;
  }
  MLIRContext context(MLIRContext::Threading::DISABLED);
  locus::preparePipeline(context);
  context.printOpOnDiagnostic(false);
  llvm::SourceMgr sourceMgr;
  SourceMgrDiagnosticHandler handler(sourceMgr, &context);
  std::string error;
  auto input = openInputFile(inputFile, &error);
  if (!input) {
    llvm::errs() << "locus-compile: " << error << "\n";
    return 1;
  }
  std::string badText = locus::checkText(input->getBuffer());
  if (!badText.empty()) {
    llvm::errs() << "locus-compile: " << inputFile.getValue() << ": " << badText
                 << "\n";
    return 1;
  }
  sourceMgr.AddNewSourceBuffer(std::move(input), llvm::SMLoc());
  OwningOpRef<ModuleOp> module = parseSourceFile<ModuleOp>(sourceMgr, &context);
  if (!module)
    return 1;

  locus::PipelineOptions options;
  options.placement = *placementOptions;
  options.placement.fuse = !noFuse;
  options.placement.precision = precision;
  options.allowTf32 = allowTf32 || precision == "tf32";
  options.printIrAfterAll = printIrAfterAll;
  options.passTiming = passTiming;
  options.afterStage = printStage;
  locus::PipelineResult result;
  locus::HostCode code;
  if (!compileThroughCache(*module, options, result, code))
    return 1;
  error = locus::writeArtifact(result, code, outputFile, "", signKey);
  if (!error.empty()) {
    llvm::errs() << "locus-compile: " << error << "\n";
    return 1;
  }

  if (!emitPtx.empty() &&
      !locus::writePtxFiles(result.cudaKernels, emitPtx, error)) {
    llvm::errs() << "locus-compile: " << error << "\n";
    return 1;
  }

  const locus::PlanSummary &s = result.summary;
  llvm::outs() << result.placementSummary
               << "\nplan: " << s.kernelFunctions.size() << " kernels, "
               << s.stepCopies << " copies per step (" << s.stepCopyBytes
               << " B), " << s.loadCopies << " at load (" << s.loadCopyBytes
               << " B)\n";
  if (s.loadLaunches)
    llvm::outs() << "at load: " << s.loadLaunches
                 << " kernels of constants and state no step writes (run "
                    "again when that state is written)\n";
  if (s.inPlaceUpdates || s.stateCopies)
    llvm::outs() << "state updates: " << s.inPlaceUpdates << " in place, "
                 << s.stateCopies << " by a copy at the end of the step\n";
  if (!result.cudaFunctions.empty())
    llvm::outs() << "cuda: " << result.cudaFunctions.size()
                 << " kernels with launchers and host versions"
                 << (allowTf32 ? "; TF32 allowed in convolutions and matrix "
                                 "products"
                               : "")
                 << "\n";
  if (!result.cudaNote.empty())
    llvm::outs() << "cuda: " << result.cudaNote << "\n";
  uint64_t arenas = 0;
  for (const auto &[device, bytes] : s.arenas) {
    llvm::outs() << "arena " << device << ": " << bytes << " B\n";
    arenas += bytes;
  }
  llvm::outs() << "activations: " << s.unsharedBytes << " B unshared, "
               << arenas << " B in arenas\n"
               << "wrote " << outputFile << " (host code for " << cpu << ")\n";
  return 0;
}

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  return locus::runTool("locus-compile", llvm::errs(),
                        [&] { return run(argc, argv); });
}
