//===- Placement.h - the vocabulary of placement ----------------*- C++ -*-===//
//
// What the passes, the pipelines and the tools say about devices, in one
// place: device names and the targets used when none are given, where an op
// was placed and why a value moves when it does, the user's line of an op,
// and which ops have a CUDA kernel.
//
//===----------------------------------------------------------------------===//

#ifndef LOCUS_PASSES_PLACEMENT_H
#define LOCUS_PASSES_PLACEMENT_H

#include "locus/Dialect/LocusDialect.h"

#include "mlir/IR/Value.h"

#include <optional>
#include <string>
#include <vector>

namespace locus {

/// Parses "cpu" or "cuda:N" (N from 0 to LOCUS_ABI_MAX_CUDA_ORDINAL, the
/// range every entry point accepts); null for anything else.
DeviceAttr parseDevice(mlir::MLIRContext *context, llvm::StringRef text);

/// The targets of locus-compile, locus-dump and the placement pass when
/// none are given: the CPU and cuda:0, so that an artifact carries GPU code
/// and runs anywhere (the runtime says where cuda:0 went). compile() in a
/// process targets the devices the machine has instead.
std::vector<std::string> defaultTargets();

/// Set on a placed locus.graph when placement did something the user should
/// hear of that is no mistake (policy=cpu ignoring a pin): an array of
/// {text, file, line} dictionaries, at the first op concerned.
inline constexpr llvm::StringLiteral kPlacementNotesAttrName =
    "locus.placement_notes";
/// Splits "cpu,cuda:0" into its names (whitespace trimmed, empty dropped).
std::vector<std::string> splitTargets(llvm::StringRef list);

/// What is wrong with a placement policy and its target devices (none: the
/// defaults), in the words of the tools' flags; "" when nothing is. The
/// placement pass and the tools (before they parse a graph) say the same.
std::string checkPlacementOptions(llvm::StringRef policy,
                                  const std::vector<std::string> &targets);

/// A placement policy (docs/placement.md).
enum class PlacementPolicy { strict, preferGpu, automatic, cpu };
/// "strict", "prefer-gpu", "auto" or "cpu"; none for anything else.
std::optional<PlacementPolicy> parsePlacementPolicy(llvm::StringRef text);
/// The policy as users spell it.
llvm::StringRef placementPolicyName(PlacementPolicy policy);

/// What placement is asked to do: the one struct from a tool's flags, the
/// user's CompileOptions or a textual pipeline to the placement pass.
struct PlacementOptions {
  PlacementPolicy policy = PlacementPolicy::automatic;
  /// The target devices ("cpu", "cuda:N"); empty: defaultTargets().
  std::vector<std::string> devices;
  std::string profile; ///< a JSON cost profile's path, or empty
  /// Ops are fused into kernels, and placement costs them as the fuser
  /// will group them (false: one launch per op).
  bool fuse = true;
  /// With no CUDA target, ops pinned to CUDA run on the CPU (a warning)
  /// instead of failing at the pin.
  bool allowSoftPlacement = false;
  /// Data-parallel training: after the transfers, --locus-data-parallel
  /// averages the parameters' gradients over the ranks of the job, in
  /// buckets of about `bucketBytes`.
  bool dataParallel = false;
  uint64_t bucketBytes = kDefaultBucketBytes;
  /// Compile the recording for evaluation (model.eval() and no_grad):
  /// --locus-select-mode{mode=eval} runs first (dropout off, BatchNorm on
  /// its running statistics, no state writes, no backward pass).
  bool eval = false;
  /// Mixed precision (--locus-autocast, docs/precision.md): fp32, tf32,
  /// bf16 or f16. bf16 and f16 rewrite the graph before placement.
  std::string precision = "fp32";
  /// DDP's default bucket: 25 MiB.
  static constexpr uint64_t kDefaultBucketBytes = 25ull << 20;

  /// The options with `policy` and `devices` as users spell them, or what
  /// is wrong with those (checkPlacementOptions) in `error`.
  static std::optional<PlacementOptions>
  read(llvm::StringRef policy, const std::vector<std::string> &devices,
       std::string &error);
};

/// The device an op was placed on (its locus.device), or null.
DeviceAttr placedDevice(mlir::Operation *op);

/// A kernel function (after --locus-outline-kernels) placed on a CUDA
/// device: what the CUDA code generator compiles.
bool isCudaKernelFunction(mlir::Operation *func);

/// A locus.state that a locus.assign writes: its copies to other devices
/// must be made at every run, not once at load.
bool isUpdatedState(mlir::Value value);

/// State and constants are moved once, when the model is loaded (unless a
/// run updates them, then at every run).
bool isLoadTimeValue(mlir::Value value);

/// "file:line" of the user's source line in `loc` (the caller's line for a
/// callsite location), or "unknown location".
std::string userLine(mlir::Location loc);

/// The path of the named C++ layer that recorded the op at `loc`
/// ("layer1.0.conv1": the NameLoc around a callsite's callee, see
/// detail::LayerScope), through fused and backward locations; "" if none.
std::string layerPathOf(mlir::Location loc);

/// How diagnostics name a value: `input "x"`, `parameter "fc.weight"`, `the
/// result of locus.linear`.
std::string describeValue(mlir::Value value);

/// Which ops have a CUDA kernel: filled by registerCudaKernels() from what
/// the CUDA code generator lowers (every computing op today). Where nothing
/// registered (locus-opt), every op counts as supported; the placement
/// option `no-cuda-kernel=` takes ops out for tests.
class CudaKernelRegistry {
public:
  static CudaKernelRegistry &instance();
  bool has(llvm::StringRef opName) const;
  void add(llvm::StringRef opName);

private:
  std::vector<std::string> names;
};

/// Registers every computing op of the locus dialect loaded in `context`
/// with the CudaKernelRegistry (once per process).
void registerCudaKernels(mlir::MLIRContext &context);

} // namespace locus

#endif // LOCUS_PASSES_PLACEMENT_H
