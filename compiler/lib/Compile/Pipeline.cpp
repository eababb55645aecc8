//===- Pipeline.cpp - place, fuse, plan and lower a graph -----------------===//
//
// The MLIR-heavy translation unit of the compiler: every registration the
// pipeline needs, the pass pipelines, and the translation of the kernels to
// LLVM IR with their entry points.
//
//===----------------------------------------------------------------------===//

#include "locus/Compile/Pipeline.h"

#include "locus/Dump/Dump.h"
#include "locus/Passes/CostModel.h"
#include "locus/Passes/Passes.h"
#include "locus/Plan/Plan.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"
#include "mlir/Target/LLVMIR/Export.h"
#include "llvm/Bitcode/BitcodeWriter.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/TargetSelect.h"

#include <cstdlib>
#include <mutex>

using namespace mlir;
using namespace locus;

namespace {

/// What the host and CUDA pipelines share, after outlining (TOOLCHAIN.md):
/// elementwise chains fused into one loop nest, tensors to buffers with
/// identity layouts, results to out-parameters, temporaries freed. No
/// builtin.module(...) around the pipelines: they are added to a module pass
/// manager, where that would nest them one level down, on no op at all.
constexpr const char *kBufferization =
    "locus-lower-to-linalg,locus-fuse-elementwise,canonicalize,"
    "func.func(locus-copy-forwarded-results),"
    "one-shot-bufferize{bufferize-function-boundaries "
    "function-boundary-type-conversion=identity-layout-map},"
    "buffer-results-to-out-params{hoist-static-allocs},"
    "buffer-deallocation-pipeline,";
/// The host pipeline, after kBufferization: matrix products through the
/// runtime's sgemm (after deallocation, so no buffer dies between taking its
/// address and the call), loops, LLVM with plain pointers for every buffer.
constexpr const char *kHostPipeline =
    "locus-linalg-to-blas,"
    "convert-linalg-to-parallel-loops,locus-parallelize,"
    "convert-scf-to-cf,expand-strided-metadata,"
    "lower-affine,finalize-memref-to-llvm,convert-math-to-llvm,"
    "convert-math-to-libm,convert-arith-to-llvm,"
    "convert-func-to-llvm{use-bare-ptr-memref-call-conv},convert-cf-to-llvm,"
    "reconcile-unrealized-casts";

/// The pipeline of the CUDA kernels (TOOLCHAIN.md, docs/design-notes.md):
/// the same bufferization; products to cuBLAS; the rest to one gpu.launch
/// per op; kernels outlined, lowered through NVVM and serialised to sm_90
/// PTX; launches to runtime calls. What is left is the host side of each
/// kernel, a launcher, lowered as the host kernels are, except that its
/// temporaries are allocated through the runtime (device memory). After
/// kBufferization.
constexpr const char *kCudaPipeline =
    "locus-linalg-to-blas{callee=locus_cuda_sgemm},"
    "locus-map-to-gpu,gpu-kernel-outlining,lower-affine,"
    "nvvm-attach-target{chip=sm_90 features=+ptx80 O=3 l=%LIBDEVICE%},"
    "gpu.module(convert-scf-to-cf,"
    "convert-gpu-to-nvvm{use-bare-ptr-memref-call-conv}),"
    "reconcile-unrealized-casts,gpu-module-to-binary{format=isa},"
    "locus-gpu-to-runtime,"
    "convert-scf-to-cf,expand-strided-metadata,lower-affine,"
    "finalize-memref-to-llvm{use-generic-functions},"
    "convert-arith-to-llvm,"
    "convert-func-to-llvm{use-bare-ptr-memref-call-conv},convert-cf-to-llvm,"
    "reconcile-unrealized-casts";

/// libdevice.10.bc of a CUDA toolkit: $LOCUS_LIBDEVICE, the one CMake
/// found, under $CUDA_ROOT, $CUDA_HOME, $CUDA_PATH or /usr/local/cuda; empty
/// when there is none. (MLIR links it only when the toolkit is in the
/// environment, and otherwise leaves calls to __nv_expf & co. unresolved:
/// so it is passed explicitly.)
std::string findLibdevice() {
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

/// The launcher suffix of a CUDA kernel's function.
constexpr llvm::StringLiteral kCudaSuffix = "__cuda";

/// Compiles the kernels of `module` placed on CUDA devices (their
/// functions renamed <name>__cuda) into `cuda`, a module in the LLVM
/// dialect, and their GPU code into result.cudaKernels.
LogicalResult compileCudaKernels(ModuleOp module, OwningOpRef<ModuleOp> &cuda,
                                 PipelineResult &result) {
  cuda = cast<ModuleOp>(module->clone());
  for (auto graph : llvm::make_early_inc_range(cuda->getOps<GraphOp>()))
    graph.erase();
  for (auto func : llvm::make_early_inc_range(cuda->getOps<func::FuncOp>())) {
    auto device = func->getAttrOfType<DeviceAttr>(kDeviceAttrName);
    if (func.isExternal() || !device || device.getKind() != DeviceKind::cuda) {
      func.erase();
      continue;
    }
    result.cudaFunctions.push_back(func.getSymName().str());
    func.setSymName((func.getSymName() + kCudaSuffix).str());
  }
  if (result.cudaFunctions.empty())
    return success();
  std::string libdevice = findLibdevice();
  if (libdevice.empty()) {
    // No CUDA code: the kernels run as their host versions (sim).
    result.cudaNote = "no CUDA code: libdevice.10.bc of a CUDA toolkit was "
                      "not found (set CUDA_HOME or LOCUS_LIBDEVICE)";
    result.cudaFunctions.clear();
    cuda = OwningOpRef<ModuleOp>();
    return success();
  }
  std::string pipeline = std::string(kBufferization) + kCudaPipeline;
  pipeline.replace(pipeline.find("%LIBDEVICE%"), 11, libdevice);
  PassManager pm(module.getContext(), ModuleOp::getOperationName(),
                 OpPassManager::Nesting::Implicit);
  if (failed(parsePassPipeline(pipeline, pm)))
    return module.emitError() << "internal error: the CUDA pipeline does not "
                                 "parse";
  if (failed(pm.run(*cuda)))
    return failure();
  std::vector<std::pair<std::string, std::string>> kernels;
  if (auto list = (*cuda)->getAttrOfType<ArrayAttr>(kCudaKernelsAttrName))
    for (auto entry : list.getAsRange<DictionaryAttr>())
      kernels.emplace_back(entry.getAs<StringAttr>("name").str(),
                           entry.getAs<StringAttr>("ptx").str());
  (*cuda)->removeAttr(kCudaKernelsAttrName);
  result.cudaKernels = serializeCudaKernels(kernels);
  // Temporaries of launchers are device memory, from the runtime.
  for (auto [generic, runtime] :
       {std::pair{"_mlir_memref_to_llvm_alloc", "locus_cuda_alloc"},
        std::pair{"_mlir_memref_to_llvm_free", "locus_cuda_free"}}) {
    auto func = cuda->lookupSymbol<LLVM::LLVMFuncOp>(generic);
    if (!func)
      continue;
    if (failed(SymbolTable::replaceAllSymbolUses(
            func, StringAttr::get(module.getContext(), runtime), *cuda)))
      return failure();
    func.setSymName(runtime);
  }
  return success();
}

/// Moves the ops of `from` (in the LLVM dialect) into `into`, but for
/// declarations `into` has already.
void mergeModules(ModuleOp from, ModuleOp into) {
  for (Operation &op :
       llvm::make_early_inc_range(from.getBody()->getOperations())) {
    if (auto symbol = dyn_cast<SymbolOpInterface>(op))
      if (into.lookupSymbol(symbol.getNameAttr())) {
        if (symbol.isDeclaration())
          continue;
      }
    op.moveBefore(into.getBody(), into.getBody()->end());
  }
}

} // namespace

std::vector<std::string> locus::runtimeImports(bool cuda) {
  std::vector<std::string> imports{"locus_sgemm", "memrefCopy",
                                   "locus_parallel_for"};
  if (cuda)
    imports.insert(imports.end(), {"locus_cuda_launch", "locus_cuda_sgemm",
                                   "locus_cuda_alloc", "locus_cuda_free"});
  return imports;
}

void locus::preparePipeline(MLIRContext &context) {
  static std::once_flag once;
  std::call_once(once, [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
    mlir::registerAllPasses();
    registerLocusPasses();
  });
  DialectRegistry registry;
  registerAllDialects(registry);
  registerAllExtensions(registry);
  registerAllToLLVMIRTranslations(registry);
  context.appendDialectRegistry(registry);
  context.getOrLoadDialect<LocusDialect>();
  context.loadAllAvailableDialects();
  // The CUDA code generator (--locus-map-to-gpu after the lowering) has a
  // kernel for every computing op of the dialect; placement asks the
  // registry.
  static std::once_flag registered;
  std::call_once(registered, [&] {
    for (RegisteredOperationName op : context.getRegisteredOperations()) {
      if (op.getDialectNamespace() != LocusDialect::getDialectNamespace())
        continue;
      if (op.hasTrait<OpTrait::IsTerminator>() ||
          llvm::is_contained({"locus.graph", "locus.input", "locus.output",
                              "locus.state", "locus.constant", "locus.to",
                              "locus.copy", "locus.kernel"},
                             op.getStringRef()))
        continue;
      CudaKernelRegistry::instance().add(op.getStringRef());
    }
  });
}

LogicalResult locus::runPipeline(ModuleOp module,
                                 const PipelineOptions &options,
                                 PipelineResult &result) {
  SmallVector<GraphOp> graphs(module.getOps<GraphOp>());
  if (graphs.size() != 1)
    return module.emitError()
           << "expected one locus.graph, found " << graphs.size();
  GraphOp graph = graphs.front();
  result.graphName = graph.getSymName().str();
  MLIRContext *context = module.getContext();

  // Placement, unless the graph is placed already.
  PassManager place(context, ModuleOp::getOperationName(),
                    OpPassManager::Nesting::Implicit);
  if (!graph->hasAttr(kPolicyAttrName)) {
    LocusPlaceDevicesOptions placement;
    placement.policy = options.policy;
    placement.devices = options.devices;
    placement.profile = options.profile;
    place.addNestedPass<GraphOp>(createLocusPlaceDevices(placement));
  }
  if (!graph->hasAttr(kTransfersAttrName))
    place.addNestedPass<GraphOp>(createLocusInsertTransfers());
  if (failed(place.run(module)))
    return failure();

  {
    llvm::raw_string_ostream os(result.placedGraph);
    module.print(os, OpPrintingFlags().enableDebugInfo(true, false));
  }
  CostProfile profile;
  std::string error;
  if (!options.profile.empty() &&
      !CostProfile::load(options.profile, profile, error))
    return module.emitError() << error;
  FailureOr<dump::Report> report = dump::analyze(graph, profile);
  if (failed(report))
    return failure();
  {
    llvm::raw_string_ostream os(result.placementSummary);
    // failed() was checked; the checker does not see through FailureOr.
    // NOLINTNEXTLINE(bugprone-unchecked-optional-access)
    dump::printSummary(*report, os);
  }

  PassManager fuse(context, ModuleOp::getOperationName(),
                   OpPassManager::Nesting::Implicit);
  LocusFuseKernelsOptions fusion;
  fusion.fuse = options.fuse;
  fuse.addNestedPass<GraphOp>(createLocusFuseKernels(fusion));
  fuse.addPass(createLocusOutlineKernels());
  if (failed(fuse.run(module)))
    return failure();

  OwningOpRef<ModuleOp> cuda;
  if (failed(compileCudaKernels(module, cuda, result)))
    return failure();
  // What the host code calls in the runtime: every artifact has a slot for
  // each, bound at load.
  FailureOr<std::string> plan = buildPlan(
      graph, runtimeImports(!result.cudaFunctions.empty()), result.summary);
  if (failed(plan))
    return failure();
  // NOLINTNEXTLINE(bugprone-unchecked-optional-access): checked above.
  result.plan = std::move(*plan);
  graph.erase();

  PassManager lower(context, ModuleOp::getOperationName(),
                    OpPassManager::Nesting::Implicit);
  if (failed(parsePassPipeline(std::string(kBufferization) + kHostPipeline,
                               lower)))
    return module.emitError() << "internal error: the host pipeline does not "
                                 "parse";
  if (failed(lower.run(module)))
    return failure();
  if (cuda)
    mergeModules(*cuda, module);

  llvm::LLVMContext llvmContext;
  std::unique_ptr<llvm::Module> llvmModule =
      translateKernels(module, llvmContext, result.summary.kernelFunctions,
                       result.cudaFunctions);
  if (!llvmModule)
    return module.emitError() << "internal error: the kernels do not "
                                 "translate to LLVM IR";
  llvm::raw_string_ostream os(result.bitcode);
  llvm::WriteBitcodeToFile(*llvmModule, os);
  return success();
}

std::unique_ptr<llvm::Module>
locus::translateKernels(Operation *module, llvm::LLVMContext &context,
                        const std::vector<std::string> &functions,
                        const std::vector<std::string> &cudaFunctions) {
  std::unique_ptr<llvm::Module> llvmModule =
      translateModuleToLLVMIR(module, context, "locus-kernels");
  if (!llvmModule)
    return nullptr;
  llvm::IRBuilder<> b(context);
  auto *ptr = llvm::PointerType::get(context, 0);
  auto *i64 = b.getInt64Ty();
  // Each body --locus-parallelize outlined: the dispatch packs the
  // arguments into 8-byte slots and calls locus_parallel_for with a
  // trampoline that unpacks them for each range.
  if (auto bodies = module->getAttrOfType<ArrayAttr>(kParallelBodiesAttrName))
    for (auto name : bodies.getAsRange<StringAttr>()) {
      llvm::Function *body = llvmModule->getFunction(name.getValue());
      llvm::Function *dispatch =
          llvmModule->getFunction((name.getValue() + "__dispatch").str());
      if (!body || !dispatch || body->arg_size() < 2 ||
          dispatch->arg_size() != body->arg_size() - 1)
        return nullptr;
      unsigned k = dispatch->arg_size() - 1;
      auto *trampoline = llvm::Function::Create(
          llvm::FunctionType::get(b.getVoidTy(), {ptr, i64, i64}, false),
          llvm::GlobalValue::InternalLinkage,
          (name.getValue() + "__range").str(), *llvmModule);
      b.SetInsertPoint(llvm::BasicBlock::Create(context, "entry", trampoline));
      SmallVector<llvm::Value *> args;
      for (unsigned i = 0; i < k; ++i)
        args.push_back(
            b.CreateLoad(body->getArg(i)->getType(),
                         b.CreateConstInBoundsGEP1_64(
                             b.getInt8Ty(), trampoline->getArg(0), 8 * i)));
      args.push_back(trampoline->getArg(1));
      args.push_back(trampoline->getArg(2));
      b.CreateCall(body, args);
      b.CreateRetVoid();
      b.SetInsertPoint(llvm::BasicBlock::Create(context, "entry", dispatch));
      llvm::Value *slots =
          b.CreateAlloca(i64, b.getInt64(std::max(k, 1u)), "slots");
      for (unsigned i = 0; i < k; ++i)
        b.CreateStore(dispatch->getArg(i), b.CreateConstInBoundsGEP1_64(
                                               b.getInt8Ty(), slots, 8 * i));
      llvm::FunctionCallee parallelFor = llvmModule->getOrInsertFunction(
          "locus_parallel_for",
          llvm::FunctionType::get(b.getVoidTy(), {ptr, ptr, i64}, false));
      b.CreateCall(parallelFor, {trampoline, slots, dispatch->getArg(k)});
      b.CreateRetVoid();
      dispatch->setLinkage(llvm::GlobalValue::InternalLinkage);
      body->setLinkage(llvm::GlobalValue::InternalLinkage);
    }
  auto *entryType = llvm::FunctionType::get(b.getVoidTy(), {ptr}, false);
  std::vector<std::pair<std::string, std::string>> entries;
  entries.reserve(functions.size() + cudaFunctions.size());
  for (const std::string &name : functions)
    entries.emplace_back(name, kernelEntryName(name));
  for (const std::string &name : cudaFunctions)
    entries.emplace_back(name + kCudaSuffix.str(), cudaEntryName(name));
  for (const auto &[name, entryName] : entries) {
    llvm::Function *kernel = llvmModule->getFunction(name);
    if (!kernel || !kernel->getReturnType()->isVoidTy())
      return nullptr;
    for (llvm::Argument &arg : kernel->args())
      if (!arg.getType()->isPointerTy())
        return nullptr;
    auto *entry = llvm::Function::Create(
        entryType, llvm::GlobalValue::ExternalLinkage, entryName, *llvmModule);
    b.SetInsertPoint(llvm::BasicBlock::Create(context, "entry", entry));
    SmallVector<llvm::Value *> args;
    for (unsigned i = 0; i < kernel->arg_size(); ++i)
      args.push_back(b.CreateLoad(
          ptr, b.CreateConstInBoundsGEP1_64(ptr, entry->getArg(0), i)));
    b.CreateCall(kernel, args);
    b.CreateRetVoid();
    kernel->setLinkage(llvm::GlobalValue::InternalLinkage);
  }
  return llvmModule;
}
