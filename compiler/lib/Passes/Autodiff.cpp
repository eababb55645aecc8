//===- Autodiff.cpp - --locus-autodiff
//--------------------------------------===//

#include "locus/Dialect/Autodiff.h"
#include "locus/Passes/Passes.h"

#include "llvm/ADT/StringSet.h"

namespace locus {
#define GEN_PASS_DEF_LOCUSAUTODIFF
#include "locus/Passes/Passes.h.inc"
} // namespace locus

using namespace mlir;
using namespace locus;

namespace {

std::string sourceName(Value v) {
  if (auto state = v.getDefiningOp<StateOp>())
    return state.getName().str();
  return v.getDefiningOp<InputOp>().getName().str();
}

class AutodiffPass : public locus::impl::LocusAutodiffBase<AutodiffPass> {
public:
  using Base::Base;

  void runOnOperation() override {
    GraphOp graph = getOperation();
    OptimizerConfig config;
    if (optimizer == "sgd") {
      config.kind = OptimizerConfig::Kind::sgd;
    } else if (optimizer == "adam") {
      config.kind = OptimizerConfig::Kind::adam;
    } else if (optimizer != "none") {
      graph.emitError() << "unknown optimizer '" << optimizer
                        << "'; expected none, sgd or adam";
      return signalPassFailure();
    }
    config.lr = lr;
    config.momentum = momentum;
    config.nesterov = nesterov;
    config.weightDecay = weightDecay;
    config.beta1 = beta1;
    config.beta2 = beta2;
    config.eps = eps;

    Value loss;
    SmallVector<Value> params;
    llvm::StringMap<Value> sources;
    llvm::StringSet<> outputs;
    for (Operation &op : graph.getBodyBlock()) {
      if (auto output = dyn_cast<OutputOp>(op)) {
        outputs.insert(output.getName());
        if (output.getName() == lossName)
          loss = output.getValue();
      } else if (auto state = dyn_cast<StateOp>(op)) {
        sources[state.getName()] = state.getResult();
        if (state.getRole() == StateRole::parameter && wrt.empty())
          params.push_back(state.getResult());
      } else if (auto input = dyn_cast<InputOp>(op)) {
        sources[input.getName()] = input.getResult();
      } else if (isa<AssignOp>(op) && optimizer != "none") {
        op.emitOpError() << "updates state already: the graph is a training "
                            "step, which --locus-autodiff does not extend";
        return signalPassFailure();
      }
    }
    if (!wrt.empty() && optimizer != "none") {
      graph.emitError() << "wrt= is for gradients (optimizer=none); an "
                           "optimizer updates every parameter";
      return signalPassFailure();
    }
    for (const std::string &name : wrt) {
      Value v = sources.lookup(name);
      if (!v || !isa<FloatType>(
                    cast<RankedTensorType>(v.getType()).getElementType())) {
        graph.emitError() << "wrt= names '" << name
                          << "', which is no float input or state of the graph";
        return signalPassFailure();
      }
      params.push_back(v);
    }
    if (!loss) {
      graph.emitError() << "has no output named '" << lossName
                        << "' to differentiate";
      return signalPassFailure();
    }
    if (params.empty()) {
      graph.emitError() << "has no parameter state to differentiate with "
                           "respect to";
      return signalPassFailure();
    }
    if (optimizer == "none")
      for (Value p : params) {
        std::string name = sourceName(p) + ".grad";
        if (outputs.contains(name)) {
          graph.emitError() << "already has an output named '" << name << "'";
          return signalPassFailure();
        }
      }
    FailureOr<SmallVector<Value>> grads = differentiate(graph, loss, params);
    if (failed(grads))
      return signalPassFailure();
    // NOLINTNEXTLINE(bugprone-unchecked-optional-access): checked above.
    SmallVector<Value> gradients = std::move(*grads);
    OpBuilder b(graph.getContext());
    b.setInsertionPointToEnd(&graph.getBodyBlock());
    if (optimizer == "none") {
      for (auto [p, g] : llvm::zip(params, gradients))
        b.create<OutputOp>(g.getLoc(), sourceName(p) + ".grad", g);
      return;
    }
    if (failed(recordOptimizerStep(graph, params, gradients, config,
                                   "optimizer.", loss.getLoc())))
      signalPassFailure();
  }
};

} // namespace
