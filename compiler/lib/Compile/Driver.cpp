//===- Driver.cpp - place, fuse, plan and lower a graph -------------------===//
//
// The MLIR-heavy translation unit of the compiler driver: the stages of a
// compilation (each a pipeline of locus/Pipelines/Pipelines.h, or the plan),
// and the translation of the kernels to LLVM IR with their entry points.
//
//===----------------------------------------------------------------------===//

#include "locus/Compile/Driver.h"
#include "locus/Dialect/DynamicDims.h"

#include "locus/Dump/Dump.h"
#include "locus/Passes/CostModel.h"
#include "locus/Passes/Passes.h"
#include "locus/Pipelines/Pipelines.h"
#include "locus/Plan/Plan.h"
#include "locus/Support/Errors.h"
#include "locus/abi.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Target/LLVMIR/Export.h"
#include "llvm/Bitcode/BitcodeWriter.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/TargetSelect.h"

#include <mutex>

using namespace mlir;
using namespace locus;

namespace {

/// Prints the IR after every pass of `pm`, and the passes' times, when the
/// options ask for it.
void configurePrinting(PassManager &pm, const PipelineOptions &options) {
  if (options.passTiming)
    pm.enableTiming();
  if (options.printIrAfterAll)
    pm.enableIRPrinting(
        /*shouldPrintBeforePass=*/[](Pass *, Operation *) { return false; },
        /*shouldPrintAfterPass=*/[](Pass *, Operation *) { return true; },
        /*printModuleScope=*/true, /*printAfterOnlyOnChange=*/false);
}

/// Runs `build`'s passes on `module`, then reports the stage as done.
template <typename Build>
LogicalResult runStage(llvm::StringRef stage, ModuleOp module,
                       const PipelineOptions &options, Build build) {
  PassManager pm(module.getContext(), ModuleOp::getOperationName(),
                 OpPassManager::Nesting::Implicit);
  configurePrinting(pm, options);
  build(pm);
  if (failed(pm.run(module)))
    return failure();
  if (options.afterStage)
    options.afterStage(stage, module);
  return success();
}

/// Stage "placement": places the graph unless it is placed already, and
/// inserts its transfers unless they are inserted already.
LogicalResult placeStage(ModuleOp module, const PipelineOptions &options) {
  return runStage("placement", module, options, [&](OpPassManager &pm) {
    buildPlacementPipelineFor(module, pm, options.placement);
  });
}

/// The placed graph and locus-dump's summary of it, into `result`.
LogicalResult summarize(ModuleOp module, GraphOp graph,
                        const PipelineOptions &options,
                        PipelineResult &result) {
  {
    llvm::raw_string_ostream os(result.placedGraph);
    module.print(os, OpPrintingFlags().enableDebugInfo(true, false));
  }
  CostProfile profile;
  std::string error;
  if (!options.placement.profile.empty() &&
      !CostProfile::load(options.placement.profile, profile, error))
    return module.emitError() << error;
  FailureOr<dump::Report> report = dump::analyze(graph, profile);
  if (failed(report))
    return failure();
  llvm::raw_string_ostream os(result.placementSummary);
  // failed() was checked; the checker does not see through FailureOr.
  // NOLINTNEXTLINE(bugprone-unchecked-optional-access)
  dump::printSummary(*report, os);
  // NOLINTNEXTLINE(bugprone-unchecked-optional-access)
  result.warnings = report->warnings;
  // NOLINTNEXTLINE(bugprone-unchecked-optional-access)
  result.estimatedStepNs = report->stepNs();
  return success();
}

/// Stage "cuda": compiles the kernels of `module` placed on CUDA devices
/// into `cuda`, a module in the LLVM dialect with their launchers
/// (<f>__cuda), and their PTX into result.cudaKernels.
LogicalResult cudaStage(ModuleOp module, const PipelineOptions &options,
                        OwningOpRef<ModuleOp> &cuda, PipelineResult &result) {
  for (auto func : module.getOps<func::FuncOp>())
    if (isCudaKernelFunction(func))
      result.cudaFunctions.push_back(func.getSymName().str());
  if (result.cudaFunctions.empty())
    return success();
  std::string libdevice = findLibdevice();
  if (libdevice.empty()) {
    // No CUDA code: the kernels run as their host versions (sim).
    result.cudaNote = "no CUDA code: libdevice.10.bc of a CUDA toolkit was "
                      "not found (set CUDA_HOME or LOCUS_LIBDEVICE)";
    result.cudaFunctions.clear();
    return success();
  }
  cuda = cast<ModuleOp>(module->clone());
  if (failed(runStage("cuda", *cuda, options, [&](OpPassManager &pm) {
        buildCudaLoweringPipeline(pm, libdevice, options.allowTf32);
      })))
    return failure();
  std::vector<std::pair<std::string, std::string>> kernels;
  if (auto list = (*cuda)->getAttrOfType<ArrayAttr>(kCudaKernelsAttrName))
    for (auto entry : list.getAsRange<DictionaryAttr>())
      kernels.emplace_back(entry.getAs<StringAttr>("name").str(),
                           entry.getAs<StringAttr>("ptx").str());
  (*cuda)->removeAttr(kCudaKernelsAttrName);
  result.cudaKernels = serializeCudaKernels(kernels);
  return success();
}

/// Whether `op` is a definition only its own module sees: private, or
/// with LLVM's private or internal linkage.
bool isLocal(Operation &op) {
  auto linkage = [](LLVM::Linkage l) {
    return l == LLVM::Linkage::Private || l == LLVM::Linkage::Internal;
  };
  if (auto global = dyn_cast<LLVM::GlobalOp>(op))
    return linkage(global.getLinkage());
  if (auto func = dyn_cast<LLVM::LLVMFuncOp>(op))
    return linkage(func.getLinkage());
  auto symbol = dyn_cast<SymbolOpInterface>(op);
  return symbol && symbol.isPrivate();
}

/// The kernels of `module` (host code, and the CUDA launchers of `cuda`) as
/// LLVM bitcode in result.bitcode.
LogicalResult writeBitcode(ModuleOp module, OwningOpRef<ModuleOp> &cuda,
                           PipelineResult &result) {
  if (cuda)
    mergeModules(*cuda, module);
  llvm::LLVMContext llvmContext;
  std::unique_ptr<llvm::Module> llvmModule = translateKernels(
      module, llvmContext, result.summary, result.cudaFunctions);
  LOCUS_INTERNAL_ASSERT(llvmModule, "the kernels do not translate to LLVM IR");
  llvm::raw_string_ostream os(result.bitcode);
  llvm::WriteBitcodeToFile(*llvmModule, os);
  return success();
}

} // namespace

/// Moves the ops of `from` (in the LLVM dialect) into `into`, but for
/// declarations `into` has already. A private definition whose name `into`
/// has too (both stages number their convolutions' parameters from 0) is
/// renamed first, with its uses in `from`: moved as it was, its uses would
/// resolve to `into`'s definition (a CUDA launcher read the host version's
/// parameters, and cuDNN never saw LOCUS_CONV_TF32).
void locus::mergeModules(ModuleOp from, ModuleOp into) {
  SymbolTable fromTable(from), intoTable(into);
  auto declaration = [](Operation &op) {
    auto fn = dyn_cast<LLVM::LLVMFuncOp>(op);
    return (fn && fn.isExternal()) ||
           cast<SymbolOpInterface>(op).isDeclaration();
  };
  for (Operation &op : from.getBody()->getOperations()) {
    auto symbol = dyn_cast<SymbolOpInterface>(op);
    if (!symbol || declaration(op) || !isLocal(op) ||
        !intoTable.lookup(symbol.getNameAttr()))
      continue;
    FailureOr<StringAttr> renamed = fromTable.renameToUnique(&op, {&intoTable});
    LOCUS_INTERNAL_ASSERT(succeeded(renamed),
                          "a CUDA launcher's symbol cannot be renamed");
  }
  for (Operation &op :
       llvm::make_early_inc_range(from.getBody()->getOperations())) {
    auto symbol = dyn_cast<SymbolOpInterface>(op);
    if (symbol && declaration(op) && intoTable.lookup(symbol.getNameAttr()))
      continue;
    op.moveBefore(into.getBody(), into.getBody()->end());
  }
}

std::vector<std::string> locus::runtimeImports(bool cuda) {
  std::vector<std::string> imports{LOCUS_ABI_HOST_IMPORTS};
  if (cuda)
    imports.insert(imports.end(), {LOCUS_ABI_CUDA_IMPORTS});
  return imports;
}

void locus::preparePipeline(MLIRContext &context) {
  static std::once_flag once;
  std::call_once(once, [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
  });
  DialectRegistry registry;
  registerPipelineDialects(registry);
  context.appendDialectRegistry(registry);
  context.getOrLoadDialect<LocusDialect>();
  context.loadAllAvailableDialects();
  // Placement asks which ops have a CUDA kernel.
  registerCudaKernels(context);
}

namespace {

/// Turns the context's threads on for one compile and off again after it:
/// nested pipelines (one per kernel) and the PTX of the GPU modules run in
/// parallel, while a recording context keeps no thread pool. Results do
/// not depend on it: the same graph gives the same artifact either way.
/// MLIR prints the IR after each pass only without threads.
class ThreadsForOneCompile {
public:
  ThreadsForOneCompile(MLIRContext *context, const PipelineOptions &options)
      : context(context), was(context->isMultithreadingEnabled()) {
    context->enableMultithreading(!options.printIrAfterAll);
  }
  ~ThreadsForOneCompile() { context->enableMultithreading(was); }
  ThreadsForOneCompile(const ThreadsForOneCompile &) = delete;
  ThreadsForOneCompile &operator=(const ThreadsForOneCompile &) = delete;

private:
  MLIRContext *context;
  bool was;
};

/// Whether kernels with dynamic sizes compute `op` over dynamic values:
/// elementwise ops, layout, matrix products, reductions, softmax, the
/// losses built from them, and convolutions (their gradients, and the
/// poolings that join their calls or lower to linalg) over a dynamic batch.
bool compilesDynamic(Operation *op) {
  return op->hasTrait<locus::OpTrait::Elementwise>() ||
         op->hasTrait<locus::OpTrait::Structural>() ||
         isa<BroadcastOp, ReshapeOp, TransposeOp, MatmulOp, LinearOp, SumOp,
             MeanOp, MaxOp, MinOp, SoftmaxOp, LogSoftmaxOp, MseLossOp,
             CrossEntropyOp, GatherOp, OneHotOp, ConstantOp, CountOp, Conv2dOp,
             Conv2dInputGradOp, Conv2dWeightGradOp, MaxPool2dOp, AvgPool2dOp,
             MaxPool2dGradOp, BatchNormTrainOp, BatchNormTrainGradOp, RandomOp,
             SliceOp, SliceGradOp, ConcatOp>(op);
}

/// A graph with dynamic sizes compiles from the ops kernels with dynamic
/// sizes compute; anything else is refused at its op.
LogicalResult refuseWhatDynamicSizesCannotCompile(GraphOp graph) {
  FailureOr<DynamicDims> dims = DynamicDims::analyze(graph);
  // NOLINTNEXTLINE(bugprone-unchecked-optional-access): checked above.
  if (failed(dims) || dims->symbols().empty())
    return success(succeeded(dims));
  for (Operation &op : graph.getBodyBlock()) {
    auto dynamic = [&](Value v) { return dims->isDynamic(v); };
    if (!llvm::any_of(op.getOperands(), dynamic) &&
        !llvm::any_of(op.getResults(), dynamic))
      continue;
    if (!compilesDynamic(&op))
      return op.emitOpError()
             << "over a value of dynamic shape is not compiled yet; "
                "dynamic sizes compile elementwise ops, reshapes, "
                "transposes, matrix products, reductions, softmax, "
                "gathers, the MSE and cross-entropy losses, slices and "
                "concatenations along static dimensions, random draws, and "
                "convolutions, poolings and BatchNorm over a dynamic batch";
  }
  return success();
}

} // namespace

LogicalResult locus::runPipeline(ModuleOp module,
                                 const PipelineOptions &options,
                                 PipelineResult &result) {
  ThreadsForOneCompile threads(module.getContext(), options);
  SmallVector<GraphOp> graphs(module.getOps<GraphOp>());
  if (graphs.size() != 1)
    return module.emitError()
           << "expected one locus.graph, found " << graphs.size();
  GraphOp graph = graphs.front();
  result.graphName = graph.getSymName().str();
  if (failed(placeStage(module, options)) ||
      failed(summarize(module, graph, options, result)) ||
      failed(refuseWhatDynamicSizesCannotCompile(graph)) ||
      failed(runStage("kernels", module, options, [&](OpPassManager &pm) {
        buildKernelPipeline(pm, options.placement.fuse);
      })))
    return failure();
  OwningOpRef<ModuleOp> cuda;
  if (failed(cudaStage(module, options, cuda, result)))
    return failure();
  // The plan, from the graph with its kernels; every artifact has an import
  // slot for each runtime function the host code calls, bound at load.
  FailureOr<std::string> plan = buildPlan(
      graph, runtimeImports(!result.cudaFunctions.empty()), result.summary);
  if (failed(plan))
    return failure();
  // NOLINTNEXTLINE(bugprone-unchecked-optional-access): checked above.
  result.plan = std::move(*plan);
  HostPipelineOptions host;
  host.fuse = options.placement.fuse;
  if (failed(runStage("host", module, options, [&](OpPassManager &pm) {
        buildHostLoweringPipeline(pm, host);
      })))
    return failure();
  return writeBitcode(module, cuda, result);
}

namespace {

/// For each body --locus-parallelize outlined: the dispatch packs the
/// arguments into 8-byte slots and calls locus_parallel_for with a
/// trampoline that unpacks them for each range. False if a body or its
/// dispatch does not have that shape.
bool addParallelTrampolines(Operation *module, llvm::Module &llvmModule) {
  auto bodies = module->getAttrOfType<ArrayAttr>(kParallelBodiesAttrName);
  if (!bodies)
    return true;
  llvm::LLVMContext &context = llvmModule.getContext();
  llvm::IRBuilder<> b(context);
  auto *ptr = llvm::PointerType::get(context, 0);
  auto *i64 = b.getInt64Ty();
  for (auto name : bodies.getAsRange<StringAttr>()) {
    llvm::Function *body = llvmModule.getFunction(name.getValue());
    llvm::Function *dispatch =
        llvmModule.getFunction((name.getValue() + "__dispatch").str());
    if (!body || !dispatch || body->arg_size() < 2 ||
        dispatch->arg_size() != body->arg_size() - 1)
      return false;
    unsigned k = dispatch->arg_size() - 1;
    auto *trampoline = llvm::Function::Create(
        llvm::FunctionType::get(b.getVoidTy(), {ptr, i64, i64}, false),
        llvm::GlobalValue::InternalLinkage, (name.getValue() + "__range").str(),
        llvmModule);
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
      b.CreateStore(dispatch->getArg(i),
                    b.CreateConstInBoundsGEP1_64(b.getInt8Ty(), slots, 8 * i));
    llvm::FunctionCallee parallelFor = llvmModule.getOrInsertFunction(
        LOCUS_ABI_PARALLEL_FOR,
        llvm::FunctionType::get(b.getVoidTy(), {ptr, ptr, i64}, false));
    b.CreateCall(parallelFor, {trampoline, slots, dispatch->getArg(k)});
    b.CreateRetVoid();
    dispatch->setLinkage(llvm::GlobalValue::InternalLinkage);
    body->setLinkage(llvm::GlobalValue::InternalLinkage);
  }
  return true;
}

/// An entry point `entryName`, void(void *const *buffers), that calls the
/// kernel function `name` with one loaded pointer per argument. False if
/// the kernel does not take pointers only and return nothing.
bool addEntryPoint(llvm::Module &llvmModule, const std::string &name,
                   const std::string &entryName) {
  llvm::LLVMContext &context = llvmModule.getContext();
  llvm::IRBuilder<> b(context);
  auto *ptr = llvm::PointerType::get(context, 0);
  llvm::Function *kernel = llvmModule.getFunction(name);
  if (!kernel || !kernel->getReturnType()->isVoidTy())
    return false;
  for (llvm::Argument &arg : kernel->args())
    if (!arg.getType()->isPointerTy())
      return false;
  auto *entry = llvm::Function::Create(
      llvm::FunctionType::get(b.getVoidTy(), {ptr}, false),
      llvm::GlobalValue::ExternalLinkage, entryName, llvmModule);
  b.SetInsertPoint(llvm::BasicBlock::Create(context, "entry", entry));
  SmallVector<llvm::Value *> args;
  for (unsigned i = 0; i < kernel->arg_size(); ++i)
    args.push_back(b.CreateLoad(
        ptr, b.CreateConstInBoundsGEP1_64(ptr, entry->getArg(0), i)));
  b.CreateCall(kernel, args);
  b.CreateRetVoid();
  kernel->setLinkage(llvm::GlobalValue::InternalLinkage);
  return true;
}

/// The signature of kernel `name` (locus/abi.h), whose code is `function`:
/// the number of buffers its entry point loads, then `argBytes`. False if
/// they do not agree.
bool addSignature(llvm::Module &llvmModule, const std::string &name,
                  const std::string &function,
                  const std::vector<uint64_t> &argBytes) {
  llvm::Function *kernel = llvmModule.getFunction(function);
  if (!kernel || kernel->arg_size() != argBytes.size())
    return false;
  std::vector<uint64_t> words{argBytes.size()};
  words.insert(words.end(), argBytes.begin(), argBytes.end());
  llvm::Constant *init =
      llvm::ConstantDataArray::get(llvmModule.getContext(), words);
  auto *global = new llvm::GlobalVariable(
      llvmModule, init->getType(), /*isConstant=*/true,
      llvm::GlobalValue::ExternalLinkage, init, kernelSignatureName(name));
  global->setAlignment(llvm::Align(8));
  return true;
}

/// Where kernel `name` comes from (locus/abi.h): its ops and source lines.
void addSource(llvm::Module &llvmModule, const std::string &name,
               const std::string &source) {
  llvm::Constant *init =
      llvm::ConstantDataArray::getString(llvmModule.getContext(), source);
  // The module owns it.
  auto *global = new llvm::GlobalVariable(
      llvmModule, init->getType(), /*isConstant=*/true,
      llvm::GlobalValue::ExternalLinkage, init, kernelSourceName(name));
  global->setAlignment(llvm::Align(1));
}

} // namespace

std::unique_ptr<llvm::Module>
locus::translateKernels(Operation *module, llvm::LLVMContext &context,
                        const PlanSummary &kernels,
                        const std::vector<std::string> &cudaFunctions) {
  const std::vector<std::string> &functions = kernels.kernelFunctions;
  const std::vector<std::vector<uint64_t>> &argBytes = kernels.kernelArgBytes;
  std::unique_ptr<llvm::Module> llvmModule =
      translateModuleToLLVMIR(module, context, "locus-kernels");
  if (!llvmModule || !addParallelTrampolines(module, *llvmModule) ||
      argBytes.size() != functions.size())
    return nullptr;
  for (size_t i = 0; i < functions.size(); ++i)
    if (i < kernels.kernelSources.size())
      addSource(*llvmModule, functions[i], kernels.kernelSources[i]);
  // A kernel --locus-merge-kernels merged keeps its own entry point,
  // signature and source, and calls the code it shares.
  auto aliases = module->getAttrOfType<DictionaryAttr>(kKernelAliasesAttrName);
  auto codeOf = [&](const std::string &name) {
    auto shared = aliases ? aliases.getAs<StringAttr>(name) : StringAttr();
    return shared ? shared.str() : name;
  };
  // Its entry point is an alias of the first entry point of that code: an
  // exported name at the same address, which costs LLVM nothing to compile.
  llvm::StringMap<llvm::Function *> entryOfCode;
  for (size_t i = 0; i < functions.size(); ++i) {
    std::string code = codeOf(functions[i]);
    std::string entry = kernelEntryName(functions[i]);
    if (!addSignature(*llvmModule, functions[i], code, argBytes[i]))
      return nullptr;
    if (llvm::Function *shared = entryOfCode.lookup(code)) {
      llvm::GlobalAlias::create(llvm::GlobalValue::ExternalLinkage, entry,
                                shared);
      continue;
    }
    if (!addEntryPoint(*llvmModule, code, entry))
      return nullptr;
    entryOfCode[code] = llvmModule->getFunction(entry);
  }
  for (const std::string &name : cudaFunctions)
    if (!addEntryPoint(*llvmModule, name + LOCUS_ABI_CUDA_FUNCTION_SUFFIX,
                       cudaEntryName(name)))
      return nullptr;
  return llvmModule;
}
