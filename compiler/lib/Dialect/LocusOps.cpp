//===- LocusOps.cpp - op verifiers and the generated op classes -----------===//
//
// Shape rules (inferReturnTypes) live in ShapeRules.cpp; this file holds the
// verifiers of the ops whose result type is declared rather than inferred.
//
//===----------------------------------------------------------------------===//

#include "ShapeRules.h"

#include "locus/Dialect/DynamicDims.h"
#include "locus/Dialect/LocusDialect.h"
#include "locus/Support/InputLimits.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"
#include "llvm/ADT/StringMap.h"

using namespace mlir;
using namespace locus;

#define GET_OP_CLASSES
#include "locus/Dialect/LocusOps.cpp.inc"

//===----------------------------------------------------------------------===//
// GraphOp
//===----------------------------------------------------------------------===//

void GraphOp::build(OpBuilder &builder, OperationState &state, StringRef name) {
  state.addAttribute(getSymNameAttrName(state.name),
                     builder.getStringAttr(name));
  Region *body = state.addRegion();
  body->push_back(new Block());
}

LogicalResult GraphOp::verifyRegions() {
  // Inputs and state are bound by name at run time: one namespace for both.
  llvm::StringMap<Operation *> sources, outputs;
  for (Operation &op : getBodyBlock()) {
    for (Type type : op.getResultTypes()) {
      auto tensor = dyn_cast<RankedTensorType>(type);
      if (!tensor || !tensor.hasStaticShape())
        continue;
      int64_t bits = tensor.getElementType().isIntOrFloat()
                         ? tensor.getElementType().getIntOrFloatBitWidth()
                         : 8;
      std::string tooBig =
          checkTensorSize(tensor.getShape(), std::max<int64_t>(1, bits / 8));
      if (!tooBig.empty())
        return op.emitOpError() << "result " << tooBig;
    }
    StringRef name;
    llvm::StringMap<Operation *> *seen = &sources;
    if (auto input = dyn_cast<InputOp>(op)) {
      name = input.getName();
    } else if (auto state = dyn_cast<StateOp>(op)) {
      name = state.getName();
    } else if (auto output = dyn_cast<OutputOp>(op)) {
      name = output.getName();
      seen = &outputs;
    } else {
      continue;
    }
    auto [it, inserted] = seen->try_emplace(name, &op);
    if (!inserted) {
      InFlightDiagnostic diag = op.emitOpError()
                                << "name '" << name << "' is already used";
      diag.attachNote(it->second->getLoc()) << "first used here";
      return diag;
    }
  }
  // Dynamic sizes: every value's dims must hold for every size up to the
  // bounds (DynamicDims.h).
  bool dynamic = (*this)->hasAttr(kSymbolsAttrName) ||
                 llvm::any_of(getBodyBlock(), [](Operation &op) {
                   return op.hasAttr(kDimsAttrName);
                 });
  return success(!dynamic || succeeded(DynamicDims::analyze(*this)));
}

//===----------------------------------------------------------------------===//
// Sources and outputs
//===----------------------------------------------------------------------===//

static LogicalResult verifyName(Operation *op, StringRef name) {
  if (name.empty())
    return op->emitOpError() << "needs a non-empty name";
  return success();
}

LogicalResult InputOp::verify() { return verifyName(*this, getName()); }

void InputOp::getAsmResultNames(OpAsmSetValueNameFn setNameFn) {
  setNameFn(getResult(), getName());
}

LogicalResult StateOp::verify() { return verifyName(*this, getName()); }

void StateOp::getAsmResultNames(OpAsmSetValueNameFn setNameFn) {
  setNameFn(getResult(), getName());
}

LogicalResult OutputOp::verify() { return verifyName(*this, getName()); }

LogicalResult AssignOp::verify() {
  auto state = getState().getDefiningOp<StateOp>();
  if (!state)
    return emitOpError() << "writes a value that is not a locus.state";
  if (getState().getType() != getValue().getType())
    return emitOpError() << "writes " << getValue().getType()
                         << " into state \"" << state.getName() << "\" of type "
                         << getState().getType();
  for (Operation *user : getState().getUsers())
    if (user != getOperation() && isa<AssignOp>(user) &&
        user->isBeforeInBlock(getOperation())) {
      InFlightDiagnostic diag = emitOpError()
                                << "assigns state \"" << state.getName()
                                << "\" a second time";
      diag.attachNote(user->getLoc()) << "first assigned here";
      return diag;
    }
  return success();
}

//===----------------------------------------------------------------------===//
// Moves between devices
//===----------------------------------------------------------------------===//

LogicalResult CopyOp::verify() {
  if (getFrom() == getTo())
    return emitOpError() << "copies from " << getFrom().str()
                         << " to the same device";
  return success();
}

LogicalResult AllReduceOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location>,
                                            ValueRange operands, DictionaryAttr,
                                            OpaqueProperties, RegionRange,
                                            SmallVectorImpl<Type> &inferred) {
  for (Value operand : operands)
    inferred.push_back(operand.getType());
  return success();
}

LogicalResult AllReduceOp::verify() {
  if (getInputs().empty())
    return emitOpError() << "reduces no tensors";
  if (getInputs().getTypes() != getResults().getTypes())
    return emitOpError() << "results must have the types of its operands";
  return success();
}

//===----------------------------------------------------------------------===//
// Kernels
//===----------------------------------------------------------------------===//

LogicalResult KernelOp::verifyRegions() {
  Block &body = getBodyBlock();
  if (body.getNumArguments() != 0)
    return emitOpError() << "body takes no arguments";
  auto yield = body.empty() ? YieldOp() : dyn_cast<YieldOp>(body.back());
  if (!yield)
    return emitOpError() << "body must end in locus.yield";
  if (yield.getValues().getTypes() != getResultTypes())
    return emitOpError() << "yields " << yield.getValues().size()
                         << " values whose types differ from the kernel's "
                         << getNumResults() << " results";
  return success();
}
