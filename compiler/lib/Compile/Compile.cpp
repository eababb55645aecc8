//===- Compile.cpp - the host path from a graph to running code -----------===//
//
// One MLIR-heavy translation unit: every registration the host pipeline
// needs, the pipeline itself, and the JIT.
//
//===----------------------------------------------------------------------===//

#include "locus/Compile.h"

#include "../Frontend/GraphImpl.h"
#include "locus/Dump/Dump.h"
#include "locus/Passes/Passes.h"
#include "locus/kernel_abi.h"
#include "locus/locus_runtime.h"

#include "mlir/ExecutionEngine/ExecutionEngine.h"
#include "mlir/ExecutionEngine/OptUtils.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"
#include "llvm/Support/TargetSelect.h"

#include <mutex>

using namespace locus;
using namespace locus::detail;

namespace {

/// The host pipeline after --locus-graph-to-func (TOOLCHAIN.md): tensors to
/// buffers with identity layouts, results to out-parameters, temporaries
/// freed, matrix products through the runtime's sgemm (after deallocation,
/// so no buffer dies between taking its address and the call), loops, LLVM
/// with plain pointers for every buffer. No
/// builtin.module(...) around it: it is added to a module pass manager, where
/// that would nest it one level down, on no op at all.
constexpr const char *kHostPipeline =
    "one-shot-bufferize{bufferize-function-boundaries "
    "function-boundary-type-conversion=identity-layout-map},"
    "buffer-results-to-out-params,buffer-deallocation-pipeline,"
    "locus-linalg-to-blas,"
    "convert-linalg-to-loops,convert-scf-to-cf,expand-strided-metadata,"
    "lower-affine,finalize-memref-to-llvm,convert-math-to-llvm,"
    "convert-math-to-libm,convert-arith-to-llvm,"
    "convert-func-to-llvm{use-bare-ptr-memref-call-conv},convert-cf-to-llvm,"
    "reconcile-unrealized-casts";

void registerOnce() {
  static std::once_flag once;
  std::call_once(once, [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
    mlir::registerAllPasses();
    registerLocusPasses();
  });
}

std::string join(const std::vector<std::string> &names) {
  std::string out;
  for (const std::string &n : names)
    out += (out.empty() ? "" : ", ") + n;
  return out.empty() ? "none" : out;
}

/// An Error at the location of the first diagnostic, or at the compile call.
Error errorFrom(const std::string &message, mlir::Location where,
                const Here &fallback) {
  mlir::Location loc = where;
  if (auto call = mlir::dyn_cast<mlir::CallSiteLoc>(loc))
    loc = call.getCaller();
  if (auto file = mlir::dyn_cast<mlir::FileLineColLoc>(loc))
    return Error(file.getFilename().str(), file.getLine(), file.getColumn(),
                 message);
  return userError(fallback, message);
}

struct Slot {
  std::string name;
  Shape shape;
  DType dtype;
};

Slot slotOf(const std::string &name, mlir::Type type) {
  auto tensor = mlir::cast<mlir::RankedTensorType>(type);
  return {name, Shape(tensor.getShape().begin(), tensor.getShape().end()),
          dtypeOf(tensor.getElementType())};
}

} // namespace

//===----------------------------------------------------------------------===//
// HostTensor
//===----------------------------------------------------------------------===//

HostTensor HostTensor::fromF32(Shape shape, std::vector<float> values) {
  HostTensor t;
  t.shape = std::move(shape);
  t.f32 = std::move(values);
  return t;
}

HostTensor HostTensor::fromI64(Shape shape, std::vector<int64_t> values) {
  HostTensor t;
  t.shape = std::move(shape);
  t.dtype = DType::i64;
  t.i64 = std::move(values);
  return t;
}

int64_t HostTensor::numel() const {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

float HostTensor::scalar() const {
  if (dtype != DType::f32 || f32.size() != 1)
    throw RunError("scalar() of a tensor of shape " + formatShape(shape) +
                   " and dtype " + dtypeName(dtype));
  return f32[0];
}

//===----------------------------------------------------------------------===//
// CompiledModel
//===----------------------------------------------------------------------===//

struct CompiledModel::Impl {
  std::unique_ptr<mlir::ExecutionEngine> engine;
  std::string function;
  std::vector<Slot> inputs, states, outputs;
  std::vector<std::string> inputNames, stateNames, outputNames;
  std::map<std::string, HostTensor> stateValues;
  std::string placementSummary;
};

const std::string &CompiledModel::placementSummary() const {
  return impl_->placementSummary;
}

const std::vector<std::string> &CompiledModel::inputNames() const {
  return impl_->inputNames;
}
const std::vector<std::string> &CompiledModel::outputNames() const {
  return impl_->outputNames;
}
const std::vector<std::string> &CompiledModel::stateNames() const {
  return impl_->stateNames;
}

const HostTensor &CompiledModel::state(const std::string &name) const {
  auto it = impl_->stateValues.find(name);
  if (it == impl_->stateValues.end())
    throw RunError("no state named '" + name +
                   "' (state: " + join(impl_->stateNames) + ")");
  return it->second;
}

std::map<std::string, HostTensor>
CompiledModel::run(const std::map<std::string, HostTensor> &inputs) const {
  const Impl &m = *impl_;
  for (const auto &[name, tensor] : inputs)
    if (std::find(m.inputNames.begin(), m.inputNames.end(), name) ==
        m.inputNames.end())
      throw RunError("unknown input '" + name +
                     "' (inputs: " + join(m.inputNames) + ")");
  // Plain pointers, in the function's order: inputs, state, outputs.
  std::vector<void *> pointers;
  for (const Slot &slot : m.inputs) {
    auto it = inputs.find(slot.name);
    if (it == inputs.end())
      throw RunError("missing input '" + slot.name + "' of shape " +
                     formatShape(slot.shape));
    const HostTensor &t = it->second;
    if (t.shape != slot.shape || t.dtype != slot.dtype)
      throw RunError("input '" + slot.name + "' is " + formatShape(t.shape) +
                     " " + dtypeName(t.dtype) + " but the graph takes " +
                     formatShape(slot.shape) + " " + dtypeName(slot.dtype));
    size_t have = t.dtype == DType::f32 ? t.f32.size() : t.i64.size();
    if (static_cast<int64_t>(have) != t.numel())
      throw RunError("input '" + slot.name + "' has " + std::to_string(have) +
                     " values for shape " + formatShape(t.shape));
    pointers.push_back(
        t.dtype == DType::f32
            ? static_cast<void *>(const_cast<float *>(t.f32.data()))
            : static_cast<void *>(const_cast<int64_t *>(t.i64.data())));
  }
  for (const Slot &slot : m.states) {
    const HostTensor &t = m.stateValues.at(slot.name);
    pointers.push_back(const_cast<float *>(t.f32.data()));
  }
  std::map<std::string, HostTensor> results;
  for (const Slot &slot : m.outputs) {
    HostTensor out;
    out.shape = slot.shape;
    out.dtype = slot.dtype;
    if (slot.dtype == DType::f32)
      out.f32.resize(out.numel());
    else
      out.i64.resize(out.numel());
    results[slot.name] = std::move(out);
  }
  for (const Slot &slot : m.outputs) {
    HostTensor &out = results[slot.name];
    pointers.push_back(out.dtype == DType::f32
                           ? static_cast<void *>(out.f32.data())
                           : static_cast<void *>(out.i64.data()));
  }
  // invokePacked takes the address of each argument.
  std::vector<void *> args;
  args.reserve(pointers.size());
  for (void *&p : pointers)
    args.push_back(static_cast<void *>(&p));
  if (llvm::Error error = m.engine->invokePacked(m.function, args))
    throw RunError("running '" + m.function +
                   "' failed: " + llvm::toString(std::move(error)));
  return results;
}

//===----------------------------------------------------------------------===//
// compile()
//===----------------------------------------------------------------------===//

CompiledModel locus::compile(const Graph &graph, const CompileOptions &options,
                             Here loc) {
  registerOnce();
  GraphImpl &g = graph.impl();
  mlir::MLIRContext &context = g.context;
  mlir::DialectRegistry registry;
  mlir::registerAllDialects(registry);
  mlir::registerAllExtensions(registry);
  mlir::registerAllToLLVMIRTranslations(registry);
  context.appendDialectRegistry(registry);
  context.loadAllAvailableDialects();

  // MLIR 19's bare-pointer calling convention cannot pass a buffer with a
  // zero-size dimension (the function is left unconverted): refuse those at
  // the graph's interface, at the user's line. Inside the graph they run.
  for (mlir::Operation &op : g.body()) {
    mlir::Value value = mlir::isa<InputOp, StateOp>(op) ? op.getResult(0)
                        : mlir::isa<OutputOp>(op)       ? op.getOperand(0)
                                                        : mlir::Value();
    auto type = value ? mlir::dyn_cast<mlir::RankedTensorType>(value.getType())
                      : nullptr;
    if (type && type.getNumElements() == 0)
      throw errorFrom(
          "'" + op.getName().getStringRef().str() +
              "' has the zero-size shape " + formatShape(type.getShape()) +
              "; the host JIT does not yet take or return empty tensors",
          op.getLoc(), loc);
  }

  // Work on a copy: the user's graph never changes.
  mlir::OwningOpRef<mlir::ModuleOp> module(g.module->clone());
  std::string firstError;
  mlir::Location errorLoc = mlir::UnknownLoc::get(&context);
  mlir::ScopedDiagnosticHandler handler(&context, [&](mlir::Diagnostic &d) {
    if (d.getSeverity() == mlir::DiagnosticSeverity::Error &&
        firstError.empty()) {
      firstError = d.str();
      for (mlir::Diagnostic &note : d.getNotes())
        firstError += "\n  note: " + note.str();
      errorLoc = d.getLocation();
    }
    return mlir::success();
  });

  // Placement first, summarised as locus-dump would, then code generation.
  mlir::PassManager place(&context, mlir::ModuleOp::getOperationName(),
                          mlir::OpPassManager::Nesting::Implicit);
  LocusPlaceDevicesOptions placement;
  placement.policy = options.policy;
  std::vector<std::string> hostOnly{"cpu"};
  placement.devices = hostOnly;
  place.addNestedPass<GraphOp>(createLocusPlaceDevices(placement));
  place.addNestedPass<GraphOp>(createLocusInsertTransfers());
  if (mlir::failed(place.run(*module)))
    throw errorFrom(firstError.empty() ? "placement failed" : firstError,
                    errorLoc, loc);
  std::string summary;
  llvm::raw_string_ostream summaryStream(summary);
  for (GraphOp placed : module->getOps<GraphOp>())
    if (mlir::FailureOr<dump::Report> report =
            dump::analyze(placed, CostProfile());
        mlir::succeeded(report))
      // succeeded() checked it; the checker does not see through FailureOr.
      // NOLINTNEXTLINE(bugprone-unchecked-optional-access)
      dump::printSummary(*report, summaryStream);
  summaryStream.flush();

  mlir::PassManager pm(&context, mlir::ModuleOp::getOperationName(),
                       mlir::OpPassManager::Nesting::Implicit);
  pm.addPass(createLocusLowerToLinalg());
  pm.addPass(createLocusGraphToFunc());
  if (mlir::failed(mlir::parsePassPipeline(kHostPipeline, pm)))
    throw userError(loc, "internal error: the host pipeline does not parse");
  if (mlir::failed(pm.run(*module)))
    throw errorFrom(firstError.empty() ? "compilation failed" : firstError,
                    errorLoc, loc);

  auto impl = std::make_shared<CompiledModel::Impl>();
  impl->function = g.name;
  impl->placementSummary = summary;
  // The graph's interface, from the original graph (the JIT module no longer
  // has tensor types).
  for (mlir::Operation &op : g.body()) {
    if (auto input = mlir::dyn_cast<InputOp>(op)) {
      impl->inputs.push_back(slotOf(input.getName().str(), input.getType()));
      impl->inputNames.push_back(input.getName().str());
    } else if (auto state = mlir::dyn_cast<StateOp>(op)) {
      impl->states.push_back(slotOf(state.getName().str(), state.getType()));
      impl->stateNames.push_back(state.getName().str());
      InitAttr init = state.getInit();
      HostTensor value;
      value.shape = impl->states.back().shape;
      value.f32.resize(value.numel());
      locus_status_t status = locus_init_fill(
          init.getKind() == InitKind::uniform ? LOCUS_INIT_UNIFORM
                                              : LOCUS_INIT_FULL,
          init.low(), init.high(), init.getSeed(), value.f32.size(),
          value.f32.data());
      if (status) {
        std::string message = locus_status_message(status);
        locus_status_free(status);
        throw userError(loc, message);
      }
      impl->stateValues[state.getName().str()] = std::move(value);
    } else if (auto output = mlir::dyn_cast<OutputOp>(op)) {
      impl->outputs.push_back(
          slotOf(output.getName().str(), output.getValue().getType()));
      impl->outputNames.push_back(output.getName().str());
    }
  }
  if (impl->outputs.empty())
    throw userError(loc, "graph '" + g.name +
                             "' has no output: call g.output(name, value)");

  mlir::ExecutionEngineOptions engineOptions;
  engineOptions.transformer = mlir::makeOptimizingTransformer(
      /*optLevel=*/3, /*sizeLevel=*/0, /*targetMachine=*/nullptr);
  auto engine = mlir::ExecutionEngine::create(*module, engineOptions);
  if (!engine)
    throw userError(loc, "internal error: JIT compilation failed: " +
                             llvm::toString(engine.takeError()) +
                             (firstError.empty() ? "" : ": " + firstError));
  impl->engine = std::move(*engine);
  // What generated code calls, bound to the runtime's implementations.
  impl->engine->registerSymbols([](llvm::orc::MangleAndInterner interner) {
    llvm::orc::SymbolMap symbols;
    symbols[interner("memrefCopy")] = {
        llvm::orc::ExecutorAddr::fromPtr(&locus_memref_copy),
        llvm::JITSymbolFlags::Exported};
    symbols[interner("locus_sgemm")] = {
        llvm::orc::ExecutorAddr::fromPtr(&locus_sgemm),
        llvm::JITSymbolFlags::Exported};
    return symbols;
  });
  CompiledModel model;
  model.impl_ = std::move(impl);
  return model;
}
