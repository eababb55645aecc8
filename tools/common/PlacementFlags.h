//===- PlacementFlags.h - the placement flags of the tools ------*- C++ -*-===//
//
// --policy, --devices, --allow-soft-placement and --profile, which
// locus-compile and locus-dump take alike: defined once, here.
//
//===----------------------------------------------------------------------===//

#ifndef LOCUS_TOOLS_PLACEMENTFLAGS_H
#define LOCUS_TOOLS_PLACEMENTFLAGS_H

#include "locus/Passes/Placement.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/CommandLine.h"

#include <algorithm>
#include <optional>
#include <string>

namespace locus::tools {

/// The placement flags, registered in `category`; `devicesHelp` says what
/// the tool does with its targets.
struct PlacementFlags {
  PlacementFlags(llvm::cl::OptionCategory &category,
                 llvm::StringRef devicesHelp)
      : policy("policy", llvm::cl::desc("strict, prefer-gpu, auto or cpu"),
               llvm::cl::init("auto"), llvm::cl::cat(category)),
        devices("devices", llvm::cl::desc(devicesHelp),
                llvm::cl::init(llvm::join(defaultTargets(), ",")),
                llvm::cl::cat(category)),
        allowSoftPlacement(
            "allow-soft-placement",
            llvm::cl::desc("With no CUDA target, run ops pinned to CUDA on "
                           "the CPU (a warning) instead of failing at the pin"),
            llvm::cl::cat(category)),
        profile("profile", llvm::cl::desc("A JSON cost profile"),
                llvm::cl::cat(category)),
        dataParallel(
            "data-parallel",
            llvm::cl::desc("Data-parallel training: average the parameters' "
                           "gradients over the ranks of the job, in buckets "
                           "(docs/distributed.md)"),
            llvm::cl::cat(category)),
        bucketMb("bucket-mb",
                 llvm::cl::desc("With --data-parallel: MiB of gradients per "
                                "all-reduce (default 25, as DDP)"),
                 llvm::cl::init(25), llvm::cl::cat(category)),
        eval("eval",
             llvm::cl::desc("Compile the recording for evaluation, as "
                            "model.eval() under no_grad: dropout off, "
                            "BatchNorm on its running statistics, no state "
                            "writes (docs/training.md)"),
             llvm::cl::cat(category)) {}

  llvm::cl::opt<std::string> policy;
  llvm::cl::opt<std::string> devices;
  llvm::cl::opt<bool> allowSoftPlacement;
  llvm::cl::opt<std::string> profile;
  llvm::cl::opt<bool> dataParallel;
  llvm::cl::opt<double> bucketMb;
  llvm::cl::opt<bool> eval;

  /// What is wrong with --bucket-mb, or "".
  std::string checkBucketMb() const {
    if (bucketMb > 0 && bucketMb <= 1024 * 1024)
      return "";
    return "--bucket-mb must be above 0 and at most 1048576, got " +
           std::to_string(bucketMb.getValue());
  }
  /// --bucket-mb in bytes (at least 1), once checkBucketMb passed.
  uint64_t bucketBytes() const {
    return std::max<uint64_t>(1, static_cast<uint64_t>(bucketMb * (1 << 20)));
  }

  /// The placement options the flags say, or what is wrong with them in
  /// `error` (checked before a graph is read).
  std::optional<PlacementOptions> read(std::string &error) const {
    std::optional<PlacementOptions> options =
        PlacementOptions::read(policy, splitTargets(devices), error);
    if (!options)
      return options;
    error = checkBucketMb();
    if (!error.empty())
      return std::nullopt;
    options->profile = profile;
    options->allowSoftPlacement = allowSoftPlacement;
    options->dataParallel = dataParallel;
    options->bucketBytes = bucketBytes();
    options->eval = eval;
    return options;
  }
};

} // namespace locus::tools

#endif // LOCUS_TOOLS_PLACEMENTFLAGS_H
