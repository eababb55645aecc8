//===- Plan.h - the plan of an outlined graph -------------------*- C++ -*-===//
//
// After --locus-outline-kernels a graph is sources, copies, calls of kernels
// and outputs. Its plan is what the runtime executes: numbered buffers (with
// arena offsets from the memory planner), load-time commands and per-step
// commands (launch, copy, record event, wait event). The byte layout is in
// docs/artifact.md and runtime/include/locus/abi.h.
//
//===----------------------------------------------------------------------===//

#ifndef LOCUS_PLAN_PLAN_H
#define LOCUS_PLAN_PLAN_H

#include "locus/Dialect/LocusDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <string>
#include <vector>

namespace locus {

struct PlanSummary {
  /// The kernels' functions, in launch order; each one's entry point is
  /// kernelEntryName(function).
  std::vector<std::string> kernelFunctions;
  /// Each kernel's buffers' byte sizes, reads then results (parallel to
  /// kernelFunctions): the signature the host code carries and the runtime
  /// checks every launch against.
  std::vector<std::vector<uint64_t>> kernelArgBytes;
  /// Each kernel's ops and their source lines, "locus.linear at
  /// model.cpp:14; locus.relu at model.cpp:15" (parallel to
  /// kernelFunctions): kernelSourceName(function) in the host code.
  std::vector<std::string> kernelSources;
  unsigned stepCopies = 0, loadCopies = 0;
  /// Launches at load: kernels that read only constants and state no step
  /// writes, run once (and again when that state is written).
  unsigned loadLaunches = 0;
  /// Data-parallel gradient buckets: all-reduces per step and their bytes.
  unsigned allReduces = 0;
  uint64_t allReduceBytes = 0;
  uint64_t stepCopyBytes = 0, loadCopyBytes = 0;
  /// State updates (locus.assign): written in place by the kernel that
  /// computes them, or copied into the state at the end of the step.
  unsigned inPlaceUpdates = 0, stateCopies = 0;
  /// Arena bytes per device, and what the buffers would take unshared.
  std::vector<std::pair<std::string, uint64_t>> arenas;
  uint64_t unsharedBytes = 0;
};

/// The plan's bytes; `imports` are the runtime functions the host code
/// calls. Fails (with a diagnostic on the op) on IR the plan cannot express.
mlir::FailureOr<std::string> buildPlan(GraphOp graph,
                                       const std::vector<std::string> &imports,
                                       PlanSummary &summary);

/// The name of a kernel function's entry point: void(void *const *buffers).
std::string kernelEntryName(llvm::StringRef function);
/// The signature of a kernel function: "__locus_signature_<function>".
std::string kernelSignatureName(llvm::StringRef function);
/// The source of a kernel function: "__locus_source_<function>".
std::string kernelSourceName(llvm::StringRef function);
/// The ops of kernel function `kernel` with their source lines and layers,
/// duplicates counted, as the records of LOCUS_ABI_SOURCE_PREFIX
/// (locus/abi.h): at most LOCUS_ABI_MAX_SOURCE_BYTES - 1 bytes.
std::string describeKernelSource(mlir::func::FuncOp kernel);
/// The entry point of a CUDA kernel's launcher: "__locus_cuda_<function>".
std::string cudaEntryName(llvm::StringRef function);

/// The PTX section of an artifact: each kernel's name and PTX module (with
/// its trailing NUL), by kernel number (locus/abi.h has the layout).
std::string serializeCudaKernels(
    const std::vector<std::pair<std::string, std::string>> &kernels);

} // namespace locus

#endif // LOCUS_PLAN_PLAN_H
