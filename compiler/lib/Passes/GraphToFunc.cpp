//===- GraphToFunc.cpp - --locus-graph-to-func ----------------------------===//
//
// A graph that runs on the CPU becomes one function over its inputs and state;
// see Passes.td.
//
//===----------------------------------------------------------------------===//

#include "locus/Passes/Passes.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"

namespace locus {
#define GEN_PASS_DEF_LOCUSGRAPHTOFUNC
#include "locus/Passes/Passes.h.inc"
} // namespace locus

using namespace mlir;
using namespace locus;

namespace {

class GraphToFuncPass
    : public locus::impl::LocusGraphToFuncBase<GraphToFuncPass> {
public:
  using Base::Base;

  void runOnOperation() override {
    SmallVector<GraphOp> graphs(getOperation().getOps<GraphOp>());
    for (GraphOp graph : graphs)
      if (failed(convert(graph)))
        return signalPassFailure();
  }

private:
  LogicalResult convert(GraphOp graph) {
    for (Operation &op : graph.getBodyBlock())
      if (DeviceAttr device = placedDevice(&op); device && !device.isCpu())
        return op.emitOpError()
               << "runs on " << device.str()
               << "; only a graph placed on the CPU becomes one function";

    SmallVector<Operation *> sources;
    SmallVector<OutputOp> outputs;
    SmallVector<Type> argTypes, resultTypes;
    SmallVector<Attribute> inputNames, stateNames, outputNames;
    // Inputs first, then state: the order callers bind them in.
    for (bool state : {false, true})
      for (Operation &op : graph.getBodyBlock()) {
        if (auto input = dyn_cast<InputOp>(op); input && !state) {
          inputNames.push_back(input.getNameAttr());
        } else if (auto st = dyn_cast<StateOp>(op); st && state) {
          stateNames.push_back(st.getNameAttr());
        } else {
          continue;
        }
        sources.push_back(&op);
        argTypes.push_back(op.getResult(0).getType());
      }
    for (Operation &op : graph.getBodyBlock())
      if (auto output = dyn_cast<OutputOp>(op)) {
        outputs.push_back(output);
        resultTypes.push_back(output.getValue().getType());
        outputNames.push_back(output.getNameAttr());
      }

    OpBuilder builder(graph);
    auto func = builder.create<func::FuncOp>(
        graph.getLoc(), graph.getSymName(),
        builder.getFunctionType(argTypes, resultTypes));
    func->setAttr("locus.inputs", builder.getArrayAttr(inputNames));
    func->setAttr("locus.states", builder.getArrayAttr(stateNames));
    func->setAttr("locus.outputs", builder.getArrayAttr(outputNames));
    Block *entry = func.addEntryBlock();
    for (auto [source, arg] : llvm::zip(sources, entry->getArguments()))
      source->getResult(0).replaceAllUsesWith(arg);

    SmallVector<Value> returned;
    for (OutputOp output : outputs)
      returned.push_back(output.getValue());
    for (Operation &op : llvm::make_early_inc_range(graph.getBodyBlock())) {
      if (isa<InputOp, StateOp, OutputOp>(op))
        continue;
      if (isa<ToOp, CopyOp>(op)) {
        // From the CPU to the CPU: nothing to do.
        op.getResult(0).replaceAllUsesWith(op.getOperand(0));
        for (Value &v : returned)
          if (v == op.getResult(0))
            v = op.getOperand(0);
        continue;
      }
      op.moveBefore(entry, entry->end());
    }
    builder.setInsertionPointToEnd(entry);
    builder.create<func::ReturnOp>(graph.getLoc(), returned);
    graph.erase();
    return success();
  }
};

} // namespace
