//===- DataParallel.cpp - --locus-data-parallel ---------------------------===//
//
// Data-parallel training as DDP does it: each parameter's gradient is
// averaged over the ranks before anything reads it. The gradients autodiff
// marked (locus.gradient) are gathered per device into buckets of about
// bucket-bytes, in the order the backward pass computes them; a bucket's
// locus.all_reduce goes right after its last gradient, or before the first
// op that reads one of its gradients, whichever comes first. A gradient
// nothing reads is not averaged.
//
//===----------------------------------------------------------------------===//

#include "locus/Dialect/Autodiff.h"
#include "locus/Passes/Passes.h"
#include "locus/Passes/Placement.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/MapVector.h"

namespace locus {
#define GEN_PASS_DEF_LOCUSDATAPARALLEL
#include "locus/Passes/Passes.h.inc"
} // namespace locus

using namespace mlir;
using namespace locus;

namespace {

uint64_t bytesOf(Value v) {
  auto type = cast<RankedTensorType>(v.getType());
  return static_cast<uint64_t>(type.getNumElements()) *
         (type.getElementTypeBitWidth() / 8);
}

/// The gradients of one device not reduced yet.
struct Bucket {
  SmallVector<Value> grads;
  uint64_t bytes = 0;
};

class DataParallelPass
    : public locus::impl::LocusDataParallelBase<DataParallelPass> {
public:
  using Base::Base;

  void runOnOperation() override {
    GraphOp graph = getOperation();
    if (!graph->hasAttr(kTransfersAttrName)) {
      graph.emitOpError() << "is not placed: data-parallel buckets are made "
                             "per device, after --locus-placement-pipeline";
      return signalPassFailure();
    }
    if (bucketBytes < 1) {
      graph.emitOpError() << "bucket-bytes must be at least 1, got "
                          << static_cast<int64_t>(bucketBytes);
      return signalPassFailure();
    }
    SmallVector<Operation *> ops;
    for (Operation &op : graph.getBodyBlock())
      ops.push_back(&op);
    for (Operation *op : ops)
      visit(op);
    // What is left, nothing reads: no rank needs its average.
  }

private:
  /// Flushes the buckets `op` reads from before it; then, if `op` computes
  /// a gradient, adds it to its device's bucket, flushed after it when full.
  void visit(Operation *op) {
    for (Value operand : op->getOperands()) {
      auto it = pending.find(operand);
      if (it == pending.end())
        continue;
      OpBuilder b(op);
      flush(it->second, b);
    }
    SmallVector<Value> grads = parameterGradients(op);
    llvm::erase_if(grads, [](Value grad) {
      return !cast<RankedTensorType>(grad.getType()).getElementType().isF32();
    });
    if (grads.empty())
      return;
    Attribute device = placedDevice(op);
    Bucket &bucket = open[device];
    for (Value grad : grads) {
      bucket.grads.push_back(grad);
      bucket.bytes += bytesOf(grad);
      pending[grad] = device;
    }
    if (bucket.bytes >= static_cast<uint64_t>(bucketBytes)) {
      OpBuilder b(op->getContext());
      b.setInsertionPointAfter(op);
      flush(device, b);
    }
  }

  /// One locus.all_reduce of `device`'s open bucket at `b`'s point; every
  /// other use of a gradient reads its average.
  void flush(Attribute device, OpBuilder &b) {
    Bucket bucket = open.lookup(device);
    open.erase(device);
    Value last = bucket.grads.back();
    auto reduce = b.create<AllReduceOp>(last.getLoc(), bucket.grads,
                                        /*mean=*/true, buckets++);
    if (device)
      reduce->setAttr(kDeviceAttrName, device);
    for (auto [grad, averaged] : llvm::zip(bucket.grads, reduce.getResults())) {
      grad.replaceAllUsesExcept(averaged, reduce);
      pending.erase(grad);
    }
    ++numBuckets;
    numGradients += bucket.grads.size();
  }

  llvm::MapVector<Attribute, Bucket> open;
  DenseMap<Value, Attribute> pending;
  int64_t buckets = 0;
};

} // namespace
