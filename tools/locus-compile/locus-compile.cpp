//===- locus-compile.cpp - a graph to an artifact -------------------------===//
//
//   locus-compile graph.mlir -o model.locus [--policy=auto]
//                 [--devices=cpu,cuda:0] [--profile=p.json] [--cpu=x86-64-v3]
//                 [--no-fuse]
//
// Places the graph (unless it is placed already), inserts transfers, fuses
// and outlines kernels, plans, compiles the kernels ahead of time and writes
// one artifact that the runtime alone runs (locus-run, or the C API).
//
//===----------------------------------------------------------------------===//

#include "locus/Compile/Pipeline.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/SourceMgr.h"

using namespace mlir;
namespace cl = llvm::cl;

static cl::opt<std::string> inputFile(cl::Positional, cl::desc("<graph.mlir>"),
                                      cl::Required);
static cl::opt<std::string> outputFile("o", cl::desc("The artifact to write"),
                                       cl::Required);
static cl::opt<std::string> policy("policy",
                                   cl::desc("strict, prefer-gpu, auto or cpu"),
                                   cl::init("auto"));
static cl::opt<std::string> devices("devices",
                                    cl::desc("Target devices, e.g. cpu,cuda:0"),
                                    cl::init("cpu"));
static cl::opt<std::string> profilePath("profile",
                                        cl::desc("A JSON cost profile"));
static cl::opt<std::string>
    cpu("cpu",
        cl::desc("The CPU the host code is for: x86-64, x86-64-v2, "
                 "x86-64-v3, x86-64-v4 or native"),
        cl::init("x86-64-v3"));
static cl::opt<std::string>
    emitPtx("emit-ptx",
            cl::desc("Also write each CUDA kernel's PTX module to "
                     "<dir>/<kernel>.<n>.ptx (what ptxas checks)"),
            cl::value_desc("dir"));
static cl::opt<bool> noFuse("no-fuse",
                            cl::desc("One kernel per op (for comparing)"));

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  cl::ParseCommandLineOptions(argc, argv,
                              "locus-compile: a graph to an artifact\n");
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
  sourceMgr.AddNewSourceBuffer(std::move(input), llvm::SMLoc());
  OwningOpRef<ModuleOp> module = parseSourceFile<ModuleOp>(sourceMgr, &context);
  if (!module)
    return 1;

  locus::PipelineOptions options;
  options.policy = policy;
  options.devices.clear();
  llvm::SmallVector<llvm::StringRef> parts;
  llvm::StringRef(devices).split(parts, ',', -1, false);
  for (llvm::StringRef part : parts)
    options.devices.push_back(part.trim().str());
  options.profile = profilePath;
  options.fuse = !noFuse;
  locus::PipelineResult result;
  if (failed(locus::runPipeline(*module, options, result)))
    return 1;
  error = locus::writeArtifact(result, cpu, outputFile);
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
  if (s.inPlaceUpdates || s.stateCopies)
    llvm::outs() << "state updates: " << s.inPlaceUpdates << " in place, "
                 << s.stateCopies << " by a copy at the end of the step\n";
  if (!result.cudaFunctions.empty())
    llvm::outs() << "cuda: " << result.cudaFunctions.size()
                 << " kernels with launchers and host versions\n";
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
