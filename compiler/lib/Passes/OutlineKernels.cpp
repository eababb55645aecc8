//===- OutlineKernels.cpp - --locus-outline-kernels -----------------------===//
//
// Each locus.kernel becomes a function the code generator compiles on its
// own, and a call in the graph that the plan turns into a launch. See
// Passes.td.
//
//===----------------------------------------------------------------------===//

#include "locus/Dialect/DynamicDims.h"
#include "locus/Passes/Passes.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Transforms/RegionUtils.h"

namespace locus {
#define GEN_PASS_DEF_LOCUSOUTLINEKERNELS
#include "locus/Passes/Passes.h.inc"
} // namespace locus

using namespace mlir;
using namespace locus;

namespace {

/// The constant `value` is, looking through load-time copies: a kernel
/// takes its own copy of it instead of an argument.
ConstantOp constantBehind(Value value) {
  Operation *def = value.getDefiningOp();
  if (auto copy = dyn_cast_or_null<CopyOp>(def); copy && copy.getLoadTime())
    def = copy.getInput().getDefiningOp();
  return dyn_cast_or_null<ConstantOp>(def);
}

bool isEmpty(Value value) {
  return cast<RankedTensorType>(value.getType()).getNumElements() == 0;
}

class OutlineKernelsPass
    : public locus::impl::LocusOutlineKernelsBase<OutlineKernelsPass> {
public:
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<GraphOp> graphs(module.getOps<GraphOp>());
    for (GraphOp graph : graphs) {
      SmallVector<KernelOp> kernels(graph.getBodyBlock().getOps<KernelOp>());
      if (kernels.empty()) {
        for (Operation &op : graph.getBodyBlock())
          if (isComputing(&op)) {
            op.emitOpError() << "is not in a kernel: run --locus-fuse-kernels "
                                "before --locus-outline-kernels";
            return signalPassFailure();
          }
      }
      // With dynamic sizes, each kernel that touches a dynamic value takes
      // the run's sizes and says which of its values are dynamic.
      FailureOr<DynamicDims> dims = DynamicDims::analyze(graph);
      if (failed(dims))
        return signalPassFailure();
      // NOLINTNEXTLINE(bugprone-unchecked-optional-access): checked above.
      sizes = dims->symbols().empty() ? Value() : sizesInput(graph, *dims);
      unsigned index = 0;
      for (KernelOp kernel : kernels)
        // NOLINTNEXTLINE(bugprone-unchecked-optional-access): checked above.
        outline(module, graph, kernel, index++, *dims);
    }
  }

private:
  /// The run's sizes, by symbol: an i64 input the runtime fills from the
  /// inputs' shapes (kSizesInputName), on the host.
  Value sizesInput(GraphOp graph, const DynamicDims &dims) {
    OpBuilder b = OpBuilder::atBlockBegin(&graph.getBodyBlock());
    auto type = RankedTensorType::get(
        {static_cast<int64_t>(dims.symbols().size())}, b.getI64Type());
    auto input = b.create<InputOp>(
        graph.getLoc(), type, b.getStringAttr(kSizesInputName), DeviceAttr());
    input->setAttr(kDeviceAttrName,
                   DeviceAttr::get(b.getContext(), DeviceKind::cpu, 0));
    input->setAttr(kPlacementAttrName,
                   PlacementAttr::get(b.getContext(), PlacementKind::host_io,
                                      std::nullopt, std::nullopt,
                                      DeviceAttr()));
    return input.getResult();
  }

  /// Marks a dynamic kernel's arguments and results with their dims, and
  /// its sizes argument.
  static void markDims(func::FuncOp func, ValueRange arguments,
                       ValueRange results, const DynamicDims &dims) {
    MLIRContext *context = func.getContext();
    unsigned count = dims.symbols().size();
    auto attrOf = [&](Value value) {
      return AffineMapAttr::get(dimsToMap(dims.dimsOf(value), count, context));
    };
    for (auto [i, value] : llvm::enumerate(arguments))
      if (dims.isDynamic(value))
        func.setArgAttr(i, kDimsAttrName, attrOf(value));
    for (auto [i, value] : llvm::enumerate(results))
      if (dims.isDynamic(value))
        func.setResultAttr(i, kDimsAttrName, attrOf(value));
    func.setArgAttr(arguments.size() - 1, kSizesArgAttrName,
                    UnitAttr::get(context));
    writeSymbols(func, dims.symbols());
  }

  Value sizes;

  void outline(ModuleOp module, GraphOp graph, KernelOp kernel, unsigned index,
               DynamicDims &dims) {
    llvm::SetVector<Value> captured;
    getUsedValuesDefinedAbove(kernel.getBody(), captured);
    // A value with no elements carries no data: a kernel makes its own
    // (MLIR's bare-pointer calls cannot pass an empty buffer).
    SmallVector<Value> arguments;
    for (Value value : captured)
      if (!constantBehind(value) && !isEmpty(value))
        arguments.push_back(value);
    OpBuilder graphBuilder(kernel);
    SmallVector<Value> results;
    auto yield = cast<YieldOp>(kernel.getBodyBlock().getTerminator());
    for (auto [result, yielded] :
         llvm::zip(kernel.getResults(), yield.getValues())) {
      if (!isEmpty(result)) {
        results.push_back(result);
        continue;
      }
      auto type = cast<RankedTensorType>(result.getType());
      auto empty = graphBuilder.create<ConstantOp>(
          kernel.getLoc(), DenseElementsAttr::get(type, ArrayRef<Attribute>{}),
          DeviceAttr());
      empty->setAttr(kDeviceAttrName, kernel.getDevice());
      dims.set(empty.getResult(), staticDims(type.getShape()));
      result.replaceAllUsesWith(empty.getResult());
    }
    if (results.empty()) {
      erase(kernel, dims);
      return;
    }
    auto dynamic = [&](Value v) { return dims.isDynamic(v); };
    bool takesSizes = sizes && (llvm::any_of(arguments, dynamic) ||
                                llvm::any_of(results, dynamic));
    if (takesSizes)
      arguments.push_back(sizes);

    OpBuilder builder(module.getContext());
    builder.setInsertionPointToEnd(module.getBody());
    // @<graph>_k<N>_<first op>: what a profile or a stack trace shows. A
    // cast that converts an operand as it is read is not what the kernel
    // computes: the first op past such casts names it.
    StringRef first = "kernel";
    for (Operation &op : kernel.getBodyBlock())
      if (isComputing(&op) && (first == "kernel" || first == "cast")) {
        first = op.getName().stripDialect();
        if (!isa<CastOp>(op))
          break;
      }
    std::string name =
        (graph.getSymName() + "_k" + Twine(index) + "_" + first).str();
    auto func = builder.create<func::FuncOp>(
        kernel.getLoc(), name,
        builder.getFunctionType(ValueRange(arguments).getTypes(),
                                ValueRange(results).getTypes()));
    func->setAttr(kDeviceAttrName, kernel.getDevice());
    // Which argument's buffer the plan may write each result into (-1:
    // none): a state the kernel reads and the graph assigns the result to
    // (an update in place).
    SmallVector<int64_t> mayAlias;
    for (Value result : results) {
      int64_t argument = -1;
      for (Operation *user : result.getUsers())
        if (auto assign = dyn_cast<AssignOp>(user))
          if (const auto *at = llvm::find(arguments, assign.getState());
              at != arguments.end())
            argument = at - arguments.begin();
      mayAlias.push_back(argument);
    }
    func->setAttr(kResultsMayAliasAttrName,
                  builder.getDenseI64ArrayAttr(mayAlias));
    // Kernels read their arguments and never write them: the buffers are
    // the plan's, and other kernels read them too.
    for (unsigned i = 0; i < arguments.size(); ++i)
      func.setArgAttr(i, bufferization::BufferizationDialect::kWritableAttrName,
                      builder.getBoolAttr(false));
    if (takesSizes)
      markDims(func, arguments, results, dims);
    Block *entry = func.addEntryBlock();
    IRMapping mapping;
    for (auto [value, arg] : llvm::zip(arguments, entry->getArguments()))
      mapping.map(value, arg);
    builder.setInsertionPointToStart(entry);
    for (Value value : captured)
      if (isEmpty(value)) {
        auto type = cast<RankedTensorType>(value.getType());
        mapping.map(value, builder.create<tensor::EmptyOp>(
                               kernel.getLoc(), type.getShape(),
                               type.getElementType()));
      } else if (ConstantOp constant = constantBehind(value)) {
        Operation *clone = builder.clone(*constant);
        clone->removeAttr(kDeviceAttrName);
        clone->removeAttr(kPlacementAttrName);
        mapping.map(value, clone->getResult(0));
      }
    for (Operation &op : kernel.getBodyBlock()) {
      if (auto yield = dyn_cast<YieldOp>(op)) {
        SmallVector<Value> returned;
        for (auto [result, v] :
             llvm::zip(kernel.getResults(), yield.getValues()))
          if (!isEmpty(result))
            returned.push_back(mapping.lookup(v));
        builder.create<func::ReturnOp>(yield.getLoc(), returned);
        continue;
      }
      builder.clone(op, mapping);
    }

    builder.setInsertionPoint(kernel);
    auto call = builder.create<func::CallOp>(kernel.getLoc(), func, arguments);
    call->setAttr(kDeviceAttrName, kernel.getDevice());
    // Every replacement takes its dims, static ones too: the analysis is
    // keyed by value, and a new value may sit where an erased one did.
    for (auto [result, replacement] : llvm::zip(results, call.getResults())) {
      dims.set(replacement, dims.dimsOf(result));
      result.replaceAllUsesWith(replacement);
    }
    erase(kernel, dims);
  }

  /// Erases `kernel` and what the analysis knew of it and of its body.
  static void erase(KernelOp kernel, DynamicDims &dims) {
    kernel->walk([&](Operation *op) { dims.forget(op); });
    kernel.erase();
  }
};

} // namespace

//===----------------------------------------------------------------------===//
// --locus-copy-forwarded-results
//===----------------------------------------------------------------------===//

namespace locus {
#define GEN_PASS_DEF_LOCUSCOPYFORWARDEDRESULTS
#include "locus/Passes/Passes.h.inc"
} // namespace locus

namespace {

class CopyForwardedResultsPass
    : public locus::impl::LocusCopyForwardedResultsBase<
          CopyForwardedResultsPass> {
public:
  using Base::Base;
  void runOnOperation() override {
    func::FuncOp func = getOperation();
    func.walk([](func::ReturnOp ret) {
      OpBuilder b(ret);
      llvm::SmallDenseSet<Value> returned;
      for (OpOperand &operand : ret->getOpOperands()) {
        Value value = operand.get();
        auto type = dyn_cast<RankedTensorType>(value.getType());
        // An argument, or a value returned already (two results of a
        // kernel that folded to one value: `x * 0.5` and `x * 0.5 * 1.0`).
        bool again = !returned.insert(value).second;
        if (!type || (!isa<BlockArgument>(value) && !again))
          continue;
        Value empty = b.create<tensor::EmptyOp>(ret.getLoc(), type.getShape(),
                                                type.getElementType());
        operand.set(
            b.create<linalg::CopyOp>(ret.getLoc(), value, empty).getResult(0));
      }
    });
  }
};

} // namespace
