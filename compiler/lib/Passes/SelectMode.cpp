//===- SelectMode.cpp - --locus-select-mode -------------------------------===//
//
// One recording, compiled for training or for evaluation. The frontend
// records in training mode and leaves marks (locus/Dialect/Modes.h): a
// dropout's product is its input in evaluation, and BatchNorm's evaluation
// form is recorded beside its training op. Training erases the evaluation
// ops; evaluation takes the evaluation values, drops every state write and
// then every op nothing reads (the backward pass and the optimizer).
//
//===----------------------------------------------------------------------===//

#include "locus/Dialect/LocusDialect.h"
#include "locus/Dialect/Modes.h"
#include "locus/Passes/Passes.h"

#include "llvm/ADT/DenseMap.h"

namespace locus {
#define GEN_PASS_DEF_LOCUSSELECTMODE
#include "locus/Passes/Passes.h.inc"
} // namespace locus

using namespace mlir;
using namespace locus;

namespace {

/// Erases, last first, the ops `erasable` accepts whose results nothing
/// reads (so an op whose readers all go goes too).
void eraseUnread(Block &body, llvm::function_ref<bool(Operation *)> erasable) {
  bool erased = true;
  while (erased) {
    erased = false;
    for (Operation &op : llvm::make_early_inc_range(llvm::reverse(body)))
      if (op.use_empty() && erasable(&op)) {
        op.erase();
        erased = true;
      }
  }
}

/// Inputs, state, outputs and state writes: what erasing never touches
/// (a constant nothing reads goes, structural or not).
bool structural(Operation *op) {
  return !isa<ConstantOp>(op) && (op->hasTrait<locus::OpTrait::Structural>() ||
                                  op->getNumResults() == 0);
}

class SelectModePass : public locus::impl::LocusSelectModeBase<SelectModePass> {
public:
  using LocusSelectModeBase::LocusSelectModeBase;

  void runOnOperation() override {
    GraphOp graph = getOperation();
    Block &body = graph.getBody().front();
    if (mode != "train" && mode != "eval") {
      graph.emitError() << "--locus-select-mode: mode must be train or "
                           "eval, not '"
                        << mode << "'";
      return signalPassFailure();
    }
    if (mode == "eval" && failed(toEvaluation(body)))
      return signalPassFailure();
    if (mode == "train")
      eraseUnread(body, [](Operation *op) {
        return op->hasAttr(kEvalOnlyAttrName) && !structural(op);
      });
    for (Operation &op : body)
      for (StringRef name : {kEvalOperandAttrName, kEvalOnlyAttrName,
                             kEvalValueAttrName, kEvalOfAttrName})
        op.removeAttr(name);
  }

private:
  /// Each marked value replaced by its evaluation value; the state writes,
  /// then what nothing reads, erased.
  LogicalResult toEvaluation(Block &body) {
    llvm::DenseMap<int64_t, Value> evalOf;
    for (Operation &op : body)
      if (auto n = op.getAttrOfType<IntegerAttr>(kEvalOfAttrName))
        evalOf[n.getInt()] = op.getResult(0);
    for (Operation &op : body) {
      if (auto k = op.getAttrOfType<IntegerAttr>(kEvalOperandAttrName)) {
        if (k.getInt() < 0 || k.getInt() >= op.getNumOperands())
          return op.emitError() << kEvalOperandAttrName << " " << k.getInt()
                                << " is not an operand of this op";
        op.getResult(0).replaceAllUsesWith(op.getOperand(k.getInt()));
      }
      if (auto n = op.getAttrOfType<IntegerAttr>(kEvalValueAttrName)) {
        Value eval = evalOf.lookup(n.getInt());
        if (!eval)
          return op.emitError()
                 << "no op is marked " << kEvalOfAttrName << " = " << n.getInt()
                 << ", the evaluation value of this one";
        op.getResult(0).replaceAllUsesWith(eval);
      }
    }
    for (Operation &op : llvm::make_early_inc_range(body))
      if (isa<AssignOp>(op))
        op.erase();
    eraseUnread(body, [](Operation *op) { return !structural(op); });
    return success();
  }
};

} // namespace
