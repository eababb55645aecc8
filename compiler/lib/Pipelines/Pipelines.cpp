//===- Pipelines.cpp - the compiler's pass pipelines ----------------------===//
//
// One definition of each pipeline; see Pipelines.h. The passes and their
// order are the facts the rest of the compiler relies on, so each stage
// says why it is where it is.
//
//===----------------------------------------------------------------------===//

#include "locus/Pipelines/Pipelines.h"

#include "locus/Passes/Passes.h"
#include "locus/abi.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/Arith/Transforms/Passes.h"
#include "mlir/Dialect/Bufferization/IR/BufferizableOpInterface.h"
#include "mlir/Dialect/Bufferization/Pipelines/Passes.h"
#include "mlir/Dialect/Bufferization/Transforms/OneShotAnalysis.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/Support/FileSystem.h"

#include <cstdlib>
#include <vector>

using namespace mlir;
using namespace locus;

namespace {

/// The chip and PTX version of CUDA kernels: sm_90 PTX, which the driver
/// JIT-compiles for newer chips (LLVM 19 knows no sm_100).
constexpr const char *kCudaChip = "sm_90";
constexpr const char *kCudaFeatures = "+ptx80";

/// What the host and CUDA lowerings share: locus ops to linalg, elementwise
/// chains fused into one loop nest, tensors to buffers with identity
/// layouts at function boundaries, results to out-parameters (computed in
/// them where no update in place may alias them), temporaries freed.
/// Tensors to buffers. For a GPU, a buffer whose layout cannot be
/// inferred (an scf.if's result, whose branches --locus-conv-to-cudnn
/// makes) gets the identity layout rather than a fully dynamic one, which
/// CUDA kernels cannot take.
/// `forGpu`: the CUDA lowering, where scalar producers fuse into their
/// readers (each thread recomputes them) and unknown layouts are static.
/// The largest buffer of static size a host kernel keeps on its stack.
constexpr unsigned kStackBufferBytes = 256;

void buildBufferization(OpPassManager &pm, bool forGpu = false) {
  pm.addPass(createLocusLowerToLinalg());
  LocusDynamicKernelsOptions dynamic;
  dynamic.keepBounds = forGpu;
  pm.addNestedPass<func::FuncOp>(createLocusDynamicKernels(dynamic));
  LocusFuseElementwiseOptions fusion;
  fusion.scalarsIntoReaders = forGpu;
  fusion.resultsIntoReaders = forGpu;
  pm.addPass(createLocusFuseElementwise(fusion));
  pm.addPass(createCanonicalizerPass());
  pm.addNestedPass<func::FuncOp>(createLocusCopyForwardedResults());
  bufferization::OneShotBufferizationOptions bufferize;
  bufferize.bufferizeFunctionBoundaries = true;
  bufferize.setFunctionBoundaryTypeConversion(
      bufferization::LayoutMapOption::IdentityLayoutMap);
  if (forGpu)
    bufferize.unknownTypeConverterFn =
        [](Value value, Attribute memorySpace,
           const bufferization::BufferizationOptions &) {
          return bufferization::getMemRefTypeWithStaticIdentityLayout(
              cast<TensorType>(value.getType()), memorySpace);
        };
  pm.addPass(bufferization::createOneShotBufferizePass(bufferize));
  bufferization::BufferResultsToOutParamsOpts outParams;
  outParams.hoistStaticAllocs = true;
  pm.addPass(bufferization::createBufferResultsToOutParamsPass(outParams));
  // Small buffers outside loops on the stack, not from the allocator: the
  // shapes a kernel with dynamic sizes builds for its views were most of
  // its allocator calls (42 a step of a GPT-style model against 9 for a
  // static compile). CUDA launchers' buffers are device memory.
  if (!forGpu)
    pm.addNestedPass<func::FuncOp>(
        bufferization::createPromoteBuffersToStackPass(kStackBufferBytes,
                                                       /*maxRank=*/1));
  bufferization::buildBufferDeallocationPipeline(
      pm, bufferization::BufferDeallocationPipelineOptions());
  pm.addNestedPass<func::FuncOp>(createLocusWriteResultsInPlace());
}

/// Loops, memrefs, math, arithmetic, functions and branches to the LLVM
/// dialect; `barePointers` passes buffers as plain pointers, and
/// `genericAllocation` allocates through malloc/free-like functions that
/// --locus-use-runtime-allocator binds to the runtime's allocators (host,
/// or the CUDA launchers' device memory).
void buildToLlvm(OpPassManager &pm, bool barePointers, bool math,
                 bool genericAllocation) {
  pm.addPass(createConvertSCFToCFPass());
  pm.addPass(memref::createExpandStridedMetadataPass());
  pm.addPass(createLowerAffinePass());
  FinalizeMemRefToLLVMConversionPassOptions memrefs;
  memrefs.useGenericFunctions = genericAllocation;
  pm.addPass(createFinalizeMemRefToLLVMConversionPass(memrefs));
  if (math) {
    pm.addPass(createConvertMathToLLVMPass());
    pm.addPass(createConvertMathToLibmPass());
  }
  // bf16 conversions as integer arithmetic (round to nearest even): LLVM
  // would call __truncsfbf2, which Debian 12's libgcc lacks, on CPUs
  // without AVX512-BF16.
  arith::ArithExpandOpsPassOptions expand;
  expand.includeBf16 = true;
  pm.addPass(arith::createArithExpandOpsPass(expand));
  pm.addPass(createArithToLLVMConversionPass());
  ConvertFuncToLLVMPassOptions funcs;
  funcs.useBarePtrCallConv = barePointers;
  pm.addPass(createConvertFuncToLLVMPass(funcs));
  pm.addPass(createConvertControlFlowToLLVMPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
}

/// The placement pass and the transfers, with the pass's own options on
/// `devices` (none: defaultTargets()).
/// --locus-data-parallel on every graph.
void addDataParallel(OpPassManager &pm, int64_t bucketBytes) {
  LocusDataParallelOptions options;
  options.bucketBytes = bucketBytes;
  pm.addNestedPass<GraphOp>(createLocusDataParallel(options));
}

/// --locus-select-mode: the recording for training or for evaluation;
/// then the precision: --locus-autocast and --locus-widen-16bit.
void addSelectMode(OpPassManager &pm, bool eval,
                   const std::string &precision = "fp32") {
  LocusSelectModeOptions mode;
  mode.mode = eval ? "eval" : "train";
  pm.addNestedPass<GraphOp>(createLocusSelectMode(mode));
  if (precision == "bf16" || precision == "f16") {
    LocusAutocastOptions autocast;
    autocast.precision = precision;
    pm.addNestedPass<GraphOp>(createLocusAutocast(autocast));
  }
  pm.addNestedPass<GraphOp>(createLocusWiden16Bit());
}

void addPlacement(OpPassManager &pm, LocusPlaceDevicesOptions placement,
                  std::vector<std::string> devices) {
  if (devices.empty())
    devices = defaultTargets();
  placement.devices = devices; // a view: the pass copies it
  pm.addNestedPass<GraphOp>(createLocusPlaceDevices(placement));
  pm.addNestedPass<GraphOp>(createLocusInsertTransfers());
}

/// --locus-placement-pipeline: its options as locus-opt reads them, an
/// unknown policy left for the pass to report at the graph.
void buildTextualPlacementPipeline(OpPassManager &pm,
                                   const PlacementPipelineOptions &options) {
  LocusPlaceDevicesOptions placement;
  placement.policy = options.policy;
  placement.profile = options.profile;
  placement.fuse = options.fuse;
  placement.allowSoftPlacement = options.allowSoftPlacement;
  addSelectMode(pm, /*eval=*/false); // as recorded, as compile() does
  addPlacement(pm, placement, {options.devices.begin(), options.devices.end()});
  if (options.dataParallel)
    addDataParallel(pm, options.bucketBytes);
}

} // namespace

void locus::buildPlacementPipeline(OpPassManager &pm,
                                   const PlacementOptions &options) {
  LocusPlaceDevicesOptions placement;
  placement.policy = placementPolicyName(options.policy).str();
  placement.profile = options.profile;
  placement.fuse = options.fuse;
  placement.allowSoftPlacement = options.allowSoftPlacement;
  addSelectMode(pm, options.eval, options.precision);
  addPlacement(pm, placement, options.devices);
  if (options.dataParallel)
    addDataParallel(pm, static_cast<int64_t>(options.bucketBytes));
}

void locus::buildPlacementPipelineFor(ModuleOp module, OpPassManager &pm,
                                      const PlacementOptions &options) {
  bool unplaced = false, untransferred = false, reduced = false;
  module->walk([&](Operation *op) {
    if (auto graph = dyn_cast<GraphOp>(op)) {
      unplaced |= !graph->hasAttr(kPolicyAttrName);
      untransferred |= !graph->hasAttr(kTransfersAttrName);
    }
    reduced |= isa<AllReduceOp>(op);
  });
  if (unplaced) {
    buildPlacementPipeline(pm, options);
    return;
  }
  addSelectMode(pm, options.eval, options.precision);
  if (untransferred)
    pm.addNestedPass<GraphOp>(createLocusInsertTransfers());
  if (options.dataParallel && !reduced)
    addDataParallel(pm, static_cast<int64_t>(options.bucketBytes));
}

void locus::buildKernelPipeline(OpPassManager &pm, bool fuse) {
  LocusFuseKernelsOptions fusion;
  fusion.fuse = fuse;
  // Convolutions on a GPU read 16-bit operands as they are (cuDNN in 16
  // bits).
  pm.addNestedPass<GraphOp>(createLocusGpu16BitConvs());
  // Out-of-range indices become a run's error (placed like their reader).
  pm.addNestedPass<GraphOp>(createLocusCheckIndices());
  pm.addNestedPass<GraphOp>(createLocusFuseKernels(fusion));
  // Values that convolution calls alone write and read stay NHWC.
  pm.addNestedPass<GraphOp>(createLocusConvLayouts());
  pm.addPass(createLocusOutlineKernels());
}

void locus::buildHostLoweringPipeline(OpPassManager &pm,
                                      const HostPipelineOptions &options) {
  pm.addPass(createLocusExtractKernels());
  // Repeated layers' kernels are compiled once (each keeps its entry).
  pm.addPass(createLocusMergeKernels());
  // Convolutions (with their residual add and ReLU) are the runtime's:
  // oneDNN's kernels where it loads.
  pm.addPass(createLocusConvToRuntime());
  buildBufferization(pm);
  // Matrix products through the runtime's sgemm: after deallocation, so no
  // buffer dies between taking its address and the call.
  pm.addPass(createLocusLinalgToBlas());
  // Long innermost loops for LLVM to vectorize (small images, 3x3 weights).
  pm.addPass(createLocusFlattenLoops());
  pm.addPass(createLocusLowerReductions());
  pm.addPass(createConvertLinalgToParallelLoopsPass());
  if (options.parallelize)
    pm.addPass(createLocusParallelize());
  // exp, tanh and erf as polynomials LLVM vectorizes, not libm calls.
  pm.addPass(createLocusVectorMath());
  // Temporaries through the runtime's allocator, which hands a step's
  // blocks to the next step.
  buildToLlvm(pm, options.barePointers, /*math=*/true,
              /*genericAllocation=*/true);
  pm.addPass(createLocusUseRuntimeAllocator());
}

void locus::buildCudaLoweringPipeline(OpPassManager &pm,
                                      const std::string &libdevice,
                                      bool allowTf32) {
  LocusExtractKernelsOptions extract;
  extract.target = "cuda";
  pm.addPass(createLocusExtractKernels(extract));
  // Convolutions and their gradients through cuDNN where the runtime has
  // it, their generated kernels where not.
  LocusConvToCudnnOptions cudnn;
  cudnn.allowTf32 = allowTf32;
  pm.addPass(createLocusConvToCudnn(cudnn));
  buildBufferization(pm, /*forGpu=*/true);
  // Products to cuBLAS; every other op to one gpu.launch; kernels outlined
  // and lowered through NVVM to PTX; launches to runtime calls.
  LocusLinalgToBlasOptions blas;
  blas.callee = allowTf32 ? LOCUS_ABI_CUDA_SGEMM_TF32 : LOCUS_ABI_CUDA_SGEMM;
  pm.addPass(createLocusLinalgToBlas(blas));
  pm.addPass(createLocusMapToGpu());
  pm.addPass(createGpuKernelOutliningPass());
  pm.addPass(createLowerAffinePass());
  // MLIR links libdevice (expf, tanhf, ...) only when the toolkit is in the
  // environment, and leaves calls to __nv_expf unresolved otherwise: so it
  // is passed explicitly.
  std::vector<std::string> libs{libdevice};
  GpuNVVMAttachTargetOptions target;
  target.chip = kCudaChip;
  target.features = kCudaFeatures;
  target.optLevel = 3;
  target.linkLibs = libs;
  pm.addPass(createGpuNVVMAttachTarget(target));
  OpPassManager &gpu = pm.nest<gpu::GPUModuleOp>();
  gpu.addPass(createConvertSCFToCFPass());
  arith::ArithExpandOpsPassOptions expand;
  expand.includeBf16 = true;
  gpu.addPass(arith::createArithExpandOpsPass(expand));
  ConvertGpuOpsToNVVMOpsOptions nvvm;
  nvvm.useBarePtrCallConv = true;
  gpu.addPass(createConvertGpuOpsToNVVMOps(nvvm));
  pm.addPass(createReconcileUnrealizedCastsPass());
  pm.addPass(createLocusGpuModulesToPtx());
  pm.addPass(createLocusGpuToRuntime());
  // The launchers' temporaries are device memory, from the runtime's
  // device allocator.
  buildToLlvm(pm, /*barePointers=*/true, /*math=*/false,
              /*genericAllocation=*/true);
  LocusUseRuntimeAllocatorOptions device;
  device.alloc = LOCUS_ABI_CUDA_ALLOC;
  device.free = LOCUS_ABI_CUDA_FREE;
  pm.addPass(createLocusUseRuntimeAllocator(device));
}

void locus::buildHostPipeline(OpPassManager &pm,
                              const HostPipelineOptions &options) {
  buildKernelPipeline(pm, options.fuse);
  buildHostLoweringPipeline(pm, options);
}

void locus::buildCudaPipeline(OpPassManager &pm,
                              const CudaPipelineOptions &options) {
  buildKernelPipeline(pm, options.fuse);
  std::string libdevice = options.libdevice;
  buildCudaLoweringPipeline(pm, libdevice.empty() ? findLibdevice() : libdevice,
                            options.allowTf32);
}

std::string locus::findLibdevice() {
  std::vector<std::string> candidates;
  if (const char *env = std::getenv("LOCUS_LIBDEVICE"))
    candidates.emplace_back(env);
#ifdef LOCUS_LIBDEVICE_PATH
  candidates.emplace_back(LOCUS_LIBDEVICE_PATH);
#endif
  for (const char *var : {"CUDA_ROOT", "CUDA_HOME", "CUDA_PATH"})
    if (const char *root = std::getenv(var))
      candidates.push_back(std::string(root) +
                           "/nvvm/libdevice/libdevice.10.bc");
  candidates.emplace_back("/usr/local/cuda/nvvm/libdevice/libdevice.10.bc");
  for (const std::string &path : candidates)
    if (llvm::sys::fs::is_regular_file(path))
      return path;
  return "";
}

void locus::registerLocusPipelines() {
  PassPipelineRegistration<PlacementPipelineOptions>(
      "locus-placement-pipeline",
      "Places every op of a graph and inserts the transfers (what "
      "compile() runs first)",
      buildTextualPlacementPipeline);
  PassPipelineRegistration<HostPipelineOptions>(
      "locus-host-pipeline",
      "A placed graph's kernels as host code in the LLVM dialect (what "
      "compile() runs for the host, the plan made between its halves)",
      buildHostPipeline);
  PassPipelineRegistration<CudaPipelineOptions>(
      "locus-cuda-pipeline",
      "A placed graph's CUDA kernels as launchers in the LLVM dialect and "
      "sm_90 PTX (what compile() runs for CUDA devices)",
      buildCudaPipeline);
}

void locus::registerPipelineDialects(DialectRegistry &registry) {
  registerAllDialects(registry);
  registerAllExtensions(registry);
  registerAllToLLVMIRTranslations(registry);
}
