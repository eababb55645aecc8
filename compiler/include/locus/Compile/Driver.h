//===- Driver.h - the compiler driver, for tools ----------------*- C++ -*-===//
//
// What locus::compile() and locus-compile share: the stages of a
// compilation (placement, kernels, cuda, plan, host; the pipelines of
// locus/Pipelines/Pipelines.h), then either JIT (in-process) or compile
// ahead of time into an artifact. MLIR types in this header; the
// user-facing API is locus/Compile.h.
//
//===----------------------------------------------------------------------===//

#ifndef LOCUS_COMPILE_PIPELINE_H
#define LOCUS_COMPILE_PIPELINE_H

#include "locus/Dump/Dump.h"
#include "locus/Passes/Placement.h"
#include "locus/Plan/Plan.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace llvm {
class LLVMContext;
class Module;
} // namespace llvm

namespace locus {

struct PipelineOptions {
  /// Placement's options; `fuse` says whether kernels are fused too.
  PlacementOptions placement;
  /// Let CUDA convolutions (cuDNN) and matrix products (cuBLAS) round
  /// their operands to TF32 (tensor cores); fp32 otherwise.
  bool allowTf32 = false;
  /// Print the IR after every pass to stderr (MLIR's IR printer).
  bool printIrAfterAll = false;
  /// Print each stage's time per pass to stderr (MLIR's pass timing).
  bool passTiming = false;
  /// Called after each stage with its name ("placement", "kernels", "cuda",
  /// "host") and the module it ran on (the CUDA kernels' own module for
  /// "cuda").
  std::function<void(llvm::StringRef stage, mlir::ModuleOp module)> afterStage;
};

/// What the pipeline made of one graph.
struct PipelineResult {
  std::string graphName;
  std::string placedGraph;      ///< The placed graph (MLIR with locations).
  std::string placementSummary; ///< locus-dump's summary of it.
  /// The summary's warnings and notes, for a diagnostics handler.
  std::vector<dump::Warning> warnings;
  /// The cost model's estimate of one step (dump::Report::stepNs).
  int64_t estimatedStepNs = 0;
  std::string plan; ///< The plan's bytes.
  PlanSummary summary;
  /// The kernels as LLVM bitcode, each with its entry point; a kernel on a
  /// CUDA device also has its launcher, cudaEntryName(function).
  std::string bitcode;
  /// The kernels placed on CUDA devices (a subset of
  /// summary.kernelFunctions).
  std::vector<std::string> cudaFunctions;
  /// Their GPU code: the PTX section of the artifact (LPTX, see
  /// locus/abi.h), empty when no kernel is on a CUDA device.
  std::string cudaKernels;
  /// Why kernels placed on CUDA devices have no CUDA code (empty when they
  /// have it, or when there are none).
  std::string cudaNote;
};

/// Registers every dialect, extension and translation the pipeline needs
/// with the context, and initialises LLVM's native target once.
void preparePipeline(mlir::MLIRContext &context);

/// Runs the pipeline on `module` (which it rewrites into the kernels in the
/// LLVM dialect), for its only locus.graph, and fills `result`.
/// Diagnostics go to the context's handlers.
mlir::LogicalResult runPipeline(mlir::ModuleOp module,
                                const PipelineOptions &options,
                                PipelineResult &result);

/// The kernels of a module in the LLVM dialect as LLVM IR, each function
/// in `functions` with an entry point void(void *const *buffers) named
/// kernelEntryName(function), and each in `cudaFunctions` with one named
/// cudaEntryName(function) for its launcher (`<function>__cuda`), and each
/// a signature kernelSignatureName(function) from its `argBytes` entry
/// (parallel to `functions`) and a source kernelSourceName(function) from
/// its `sources` entry; null if a kernel does not have that shape.
std::unique_ptr<llvm::Module>
translateKernels(mlir::Operation *module, llvm::LLVMContext &context,
                 const PlanSummary &kernels,
                 const std::vector<std::string> &cudaFunctions = {});

/// Moves the ops of `from` (the cuda stage's launchers, in the LLVM
/// dialect) into `into` (the host stage's module), but for declarations
/// `into` has already; a local definition of a name `into` has too is
/// renamed first, with its uses in `from`.
void mergeModules(mlir::ModuleOp from, mlir::ModuleOp into);

/// The runtime functions generated code calls: host kernels always, CUDA
/// launchers when `cuda`.
std::vector<std::string> runtimeImports(bool cuda);

/// What is wrong with `cpu` as compileHostCode's CPU (an LLVM CPU name of
/// this machine's target, or "native"); "" when nothing is. Says it before
/// anything is compiled, and without LLVM's own warnings.
std::string checkCpuName(const std::string &cpu);

/// The kernels compiled ahead of time for one CPU: a linked shared object.
struct HostCode {
  std::string cpu;      ///< an LLVM CPU name, or "native"
  std::string features; ///< what the runtime checks before loading it
  std::string object;   ///< the shared object's bytes
};

/// Compiles the kernels (result.bitcode) into `code` for `cpu`. Returns an
/// error message, empty on success. No MLIR.
std::string compileHostCode(const PipelineResult &result,
                            const std::string &cpu, HostCode &code);

/// Writes the artifact of `result` and its compiled `code`, with `state`
/// (safetensors bytes: the state values that differ from their
/// initialisers) when not empty, signed with the secret key file `signKey`
/// when not empty. Returns an error message, empty on success.
std::string writeArtifact(const PipelineResult &result, const HostCode &code,
                          const std::string &path,
                          const std::string &state = "",
                          const std::string &signKey = "");

/// The artifact of `result` and `code` (unsigned, no state) in memory, for
/// locus_model_load_memory. Returns an error message, empty on success.
std::string artifactBytes(const PipelineResult &result, const HostCode &code,
                          std::string &bytes);

/// Writes each PTX module of a PTX section to <dir>/<kernel>.<n>.ptx
/// (n: its number), without
/// the trailing NUL (ptxas reads a file, not a C string). False with
/// `error` set on failure.
bool writePtxFiles(const std::string &section, const std::string &dir,
                   std::string &error);

} // namespace locus

#endif // LOCUS_COMPILE_PIPELINE_H
