//===- InsertTransfers.cpp - --locus-insert-transfers ---------------------===//
//
// Makes every cross-device read explicit: one locus.copy per (value,
// destination device), shared by its readers there; copies of state and
// constants run at load. Under the strict policy a copy the user did not
// write is an error instead.
//
//===----------------------------------------------------------------------===//

#include "locus/Passes/CostModel.h"
#include "locus/Passes/Passes.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/Support/Debug.h"

#define DEBUG_TYPE "locus-insert-transfers"

namespace locus {
#define GEN_PASS_DEF_LOCUSINSERTTRANSFERS
#include "locus/Passes/Passes.h.inc"
} // namespace locus

using namespace mlir;
using namespace locus;

namespace {

class InsertTransfersPass
    : public locus::impl::LocusInsertTransfersBase<InsertTransfersPass> {
public:
  using Base::Base;
  void runOnOperation() override;

private:
  /// The copy of `value` on `to`, made on first use.
  Value copyOf(Value value, DeviceAttr to, Location loc);

  llvm::DenseMap<std::pair<Value, Attribute>, Value> copies;
  /// What locus.transfers reports (pass statistics are no-ops in LLVM
  /// builds without assertions, such as Debian's).
  int64_t copiesMade = 0, loadTimeCopies = 0, stepBytes = 0, loadBytes = 0;
};

} // namespace

Value InsertTransfersPass::copyOf(Value value, DeviceAttr to, Location loc) {
  auto key = std::make_pair(value, Attribute(to));
  if (Value existing = copies.lookup(key))
    return existing;
  Operation *producer = value.getDefiningOp();
  DeviceAttr from = placedDevice(producer);
  OpBuilder builder(producer->getContext());
  builder.setInsertionPointAfter(producer);
  bool loadTime = isLoadTimeValue(value);
  auto copy = builder.create<CopyOp>(loc, value, from, to, loadTime);
  copy->setAttr(kDeviceAttrName, to);
  copy->setAttr(kPlacementAttrName,
                PlacementAttr::get(&getContext(), PlacementKind::colocated,
                                   std::nullopt, std::nullopt, DeviceAttr()));
  int64_t bytes = bytesOf(value.getType());
  ++numCopies;
  ++copiesMade;
  if (loadTime) {
    ++numLoadTimeCopies;
    ++loadTimeCopies;
    bytesAtLoad += bytes;
    loadBytes += bytes;
  } else {
    bytesPerStep += bytes;
    stepBytes += bytes;
  }
  LLVM_DEBUG(llvm::dbgs() << "[locus-insert-transfers] copy of "
                          << describeValue(value) << " " << from.str() << " -> "
                          << to.str() << ", " << bytes << " bytes"
                          << (loadTime ? " at load" : " per step") << "\n");
  copies[key] = copy.getResult();
  return copy.getResult();
}

void InsertTransfersPass::runOnOperation() {
  GraphOp graph = getOperation();
  copies.clear();
  copiesMade = loadTimeCopies = stepBytes = loadBytes = 0;
  auto policy = graph->getAttrOfType<StringAttr>(kPolicyAttrName);
  if (!policy) {
    graph.emitOpError() << "is not placed; run --locus-place-devices first";
    return signalPassFailure();
  }
  bool strict = policy.getValue() == "strict";
  bool ok = true;
  for (Operation &op : graph.getBodyBlock())
    if (!placedDevice(&op)) {
      op.emitOpError() << "has no " << kDeviceAttrName
                       << "; run --locus-place-devices first";
      ok = false;
    }
  if (!ok)
    return signalPassFailure();

  // The user's moves: a locus.to becomes the copy it stands for, or nothing
  // when the value is already there.
  for (Operation &op : llvm::make_early_inc_range(graph.getBodyBlock())) {
    auto to = dyn_cast<ToOp>(op);
    if (!to)
      continue;
    Value input = to.getInput();
    DeviceAttr target = placedDevice(to);
    Value replacement = placedDevice(input.getDefiningOp()) == target
                            ? input
                            : copyOf(input, target, to.getLoc());
    to.getResult().replaceAllUsesWith(replacement);
    to.erase();
  }

  // Every other cross-device read.
  for (Operation &op : llvm::make_early_inc_range(graph.getBodyBlock())) {
    if (isa<CopyOp>(op))
      continue;
    DeviceAttr here = placedDevice(&op);
    for (OpOperand &operand : op.getOpOperands()) {
      Value value = operand.get();
      DeviceAttr there = placedDevice(value.getDefiningOp());
      if (there == here)
        continue;
      if (strict) {
        InFlightDiagnostic diag =
            op.emitOpError()
            << "reads " << describeValue(value) << " on " << there.str()
            << " but runs on " << here.str()
            << "; the strict policy inserts no copy the user did not write";
        diag.attachNote(value.getDefiningOp()->getLoc())
            << describeValue(value) << " is here";
        ok = false;
        continue;
      }
      operand.set(copyOf(value, here, op.getLoc()));
    }
  }
  if (!ok)
    return signalPassFailure();
  Builder b(&getContext());
  graph->setAttr(
      kTransfersAttrName,
      b.getDictionaryAttr({
          b.getNamedAttr("copies", b.getI64IntegerAttr(copiesMade)),
          b.getNamedAttr("load_time_copies",
                         b.getI64IntegerAttr(loadTimeCopies)),
          b.getNamedAttr("bytes_per_step", b.getI64IntegerAttr(stepBytes)),
          b.getNamedAttr("bytes_at_load", b.getI64IntegerAttr(loadBytes)),
      }));
}
