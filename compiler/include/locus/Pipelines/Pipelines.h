//===- Pipelines.h - the compiler's pass pipelines --------------*- C++ -*-===//
//
// Each pipeline of the compiler is defined once, here, as a builder
// function; compile(), locus-compile, locus-dump and the tests all build
// their pass managers with these, and locus-opt registers them:
//
//   --locus-placement-pipeline  select the mode (training: as recorded),
//                               place every op, insert the transfers
//   --locus-host-pipeline       kernels, then host code in the LLVM dialect
//   --locus-cuda-pipeline       kernels, then PTX and launchers for CUDA
//
// compile() runs the kernel and lowering halves of the last two separately,
// with the plan made from the graph in between (docs/architecture.md).
//
//===----------------------------------------------------------------------===//

#ifndef LOCUS_PIPELINES_PIPELINES_H
#define LOCUS_PIPELINES_PIPELINES_H

#include "locus/Passes/Placement.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassOptions.h"

#include <string>

namespace locus {

/// Options of --locus-placement-pipeline.
struct PlacementPipelineOptions
    : public mlir::PassPipelineOptions<PlacementPipelineOptions> {
  Option<std::string> policy{*this, "policy",
                             llvm::cl::desc("strict, prefer-gpu, auto or cpu"),
                             llvm::cl::init("auto")};
  ListOption<std::string> devices{
      *this, "devices", llvm::cl::desc("Target devices (default: cpu,cuda:0)")};
  Option<std::string> profile{*this, "profile",
                              llvm::cl::desc("A JSON cost profile")};
  Option<bool> fuse{*this, "fuse",
                    llvm::cl::desc("Cost ops as kernel fusion will group "
                                   "them (false: one launch per op)"),
                    llvm::cl::init(true)};
  Option<bool> allowSoftPlacement{
      *this, "allow-soft-placement",
      llvm::cl::desc("With no CUDA target, run ops pinned to CUDA on the CPU "
                     "with a warning instead of failing"),
      llvm::cl::init(false)};
  Option<bool> dataParallel{
      *this, "data-parallel",
      llvm::cl::desc("Average the parameters' gradients over the ranks of a "
                     "data-parallel job (--locus-data-parallel)"),
      llvm::cl::init(false)};
  Option<int64_t> bucketBytes{
      *this, "bucket-bytes",
      llvm::cl::desc("Bytes of gradients per all-reduce"),
      llvm::cl::init(
          static_cast<int64_t>(PlacementOptions::kDefaultBucketBytes))};
};

/// Options of --locus-host-pipeline.
struct HostPipelineOptions
    : public mlir::PassPipelineOptions<HostPipelineOptions> {
  Option<bool> fuse{*this, "fuse",
                    llvm::cl::desc("Fuse ops into kernels (false: one kernel "
                                   "per op)"),
                    llvm::cl::init(true)};
  Option<bool> parallelize{
      *this, "parallelize",
      llvm::cl::desc("Run outermost parallel loops on the runtime's worker "
                     "threads (locus_parallel_for)"),
      llvm::cl::init(true)};
  Option<bool> barePointers{
      *this, "bare-pointers",
      llvm::cl::desc("Pass buffers as plain pointers (the kernel ABI); false "
                     "keeps MLIR's memref descriptors"),
      llvm::cl::init(true)};
};

/// Options of --locus-cuda-pipeline.
struct CudaPipelineOptions
    : public mlir::PassPipelineOptions<CudaPipelineOptions> {
  Option<bool> fuse{*this, "fuse",
                    llvm::cl::desc("Fuse ops into kernels (false: one kernel "
                                   "per op)"),
                    llvm::cl::init(true)};
  Option<std::string> libdevice{
      *this, "libdevice",
      llvm::cl::desc("libdevice.10.bc of a CUDA toolkit (default: "
                     "findLibdevice())")};
  Option<bool> allowTf32{
      *this, "allow-tf32",
      llvm::cl::desc("Let convolutions (cuDNN) and matrix products (cuBLAS) "
                     "round their operands to TF32"),
      llvm::cl::init(false)};
};

/// Places every op of each graph not placed yet (--locus-place-devices) and
/// inserts the transfers (--locus-insert-transfers); for data-parallel
/// training, then averages the gradients (--locus-data-parallel).
void buildPlacementPipeline(mlir::OpPassManager &pm,
                            const PlacementOptions &options);

/// What of the placement pipeline `module` still needs: all of it when a
/// graph is not placed yet, the transfers alone when the graphs are placed
/// without them, nothing otherwise (locus-dump and compile() take graphs
/// placed by locus-opt as they are).
void buildPlacementPipelineFor(mlir::ModuleOp module, mlir::OpPassManager &pm,
                               const PlacementOptions &options);

/// Adds the index checks (--locus-check-indices), groups a placed graph's
/// ops into kernels and outlines each into a function (--locus-fuse-kernels,
/// --locus-outline-kernels): what the plan is made from.
void buildKernelPipeline(mlir::OpPassManager &pm, bool fuse);

/// After the plan: drops the graph and lowers every kernel function to the
/// LLVM dialect for the host (bufferization, sgemm calls, loops on the
/// worker threads).
void buildHostLoweringPipeline(mlir::OpPassManager &pm,
                               const HostPipelineOptions &options);

/// After the plan: keeps the kernels placed on CUDA devices, renamed
/// <f>__cuda, and lowers them to launchers in the LLVM dialect and sm_90
/// PTX in the module's locus.cuda_kernels attribute. `libdevice` must name
/// libdevice.10.bc. `allowTf32`: convolutions and matrix products may round
/// their operands to TF32 (off: fp32, the default contract).
void buildCudaLoweringPipeline(mlir::OpPassManager &pm,
                               const std::string &libdevice,
                               bool allowTf32 = false);

/// buildKernelPipeline, then buildHostLoweringPipeline.
void buildHostPipeline(mlir::OpPassManager &pm,
                       const HostPipelineOptions &options);

/// buildKernelPipeline, then buildCudaLoweringPipeline.
void buildCudaPipeline(mlir::OpPassManager &pm,
                       const CudaPipelineOptions &options);

/// libdevice.10.bc of a CUDA toolkit: $LOCUS_LIBDEVICE, the one CMake found,
/// under $CUDA_ROOT, $CUDA_HOME, $CUDA_PATH or /usr/local/cuda; empty when
/// there is none.
std::string findLibdevice();

/// Registers the three pipelines with the pass registry (for locus-opt).
void registerLocusPipelines();

/// Every dialect, interface model and translation the pipelines need.
void registerPipelineDialects(mlir::DialectRegistry &registry);

} // namespace locus

#endif // LOCUS_PIPELINES_PIPELINES_H
