//===- CheckIndices.cpp - --locus-check-indices ---------------------------===//
//
// An index outside its tensor is the user's mistake, and the run must say
// so instead of computing a plausible wrong answer. The kernels that index
// (gather, cross-entropy, one-hot) never read out of bounds: they read a
// safe element and make the result zero or NaN. This pass adds, for each
// tensor of indices, a count of the ones outside [0, extent) as an output
// the runtime reads before the first state write after it (or at the end
// of the step): a count above zero stops the run with a status naming the
// op and the user's line.
//
//===----------------------------------------------------------------------===//

#include "locus/Dialect/DynamicDims.h"
#include "locus/Passes/Passes.h"
#include "locus/Passes/Placement.h"
#include "locus/abi.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/DenseSet.h"

namespace locus {
#define GEN_PASS_DEF_LOCUSCHECKINDICES
#include "locus/Passes/Passes.h.inc"
} // namespace locus

using namespace mlir;
using namespace locus;

namespace {

/// A tensor of indices into an extent, read by `user`.
struct Site {
  Value indices;
  int64_t extent;
  Operation *user;
  const char *what; // "labels", "indices"
};

class CheckIndicesPass
    : public locus::impl::LocusCheckIndicesBase<CheckIndicesPass> {
public:
  using Base::Base;

  void runOnOperation() override {
    GraphOp graph = getOperation();
    SmallVector<Site> sites;
    graph.walk([&](Operation *op) {
      if (auto gather = dyn_cast<GatherOp>(op))
        sites.push_back({gather.getIndices(),
                         gather.getInput().getType().getDimSize(
                             static_cast<unsigned>(gather.getAxis())),
                         op, "indices"});
      else if (auto loss = dyn_cast<CrossEntropyOp>(op))
        sites.push_back({loss.getLabels(),
                         loss.getLogits().getType().getDimSize(1), op,
                         "labels"});
      else if (auto hot = dyn_cast<OneHotOp>(op))
        sites.push_back({hot.getLabels(),
                         static_cast<int64_t>(hot.getClasses()), op, "labels"});
    });
    // One check per tensor of indices and extent: a cross-entropy and the
    // one-hot of its gradient read the same labels.
    llvm::DenseSet<std::pair<Value, int64_t>> seen;
    unsigned count = 0;
    for (const Site &site : sites) {
      auto type = cast<RankedTensorType>(site.indices.getType());
      if (type.getNumElements() == 0 ||
          !seen.insert({site.indices, site.extent}).second)
        continue;
      addCheck(site, count++);
    }
    numChecks += count;
    // With dynamic sizes, each check's bounds take the dims of its indices.
    if (count && failed(bindBroadcastDims(graph)))
      return signalPassFailure();
  }

private:
  /// Before `site.user`: the number of indices outside [0, extent), as an
  /// output the runtime reads (LOCUS_ABI_CHECK_PREFIX).
  void addCheck(const Site &site, unsigned number) {
    OpBuilder b(site.user);
    Location loc = site.user->getLoc();
    auto type = cast<RankedTensorType>(site.indices.getType());
    // Placed like the op that reads the indices, where they already are.
    auto placeOp = [&](Operation *op) {
      for (StringRef name : {kDeviceAttrName, kPlacementAttrName})
        if (Attribute a = site.user->getAttr(name))
          op->setAttr(name, a);
    };
    auto place = [&](Operation *op) {
      placeOp(op);
      return op->getResult(0);
    };
    auto bound = [&](int64_t value) {
      auto scalar = RankedTensorType::get({}, b.getI64Type());
      Value c = place(b.create<ConstantOp>(
          loc, DenseElementsAttr::get(scalar, value), DeviceAttr()));
      return place(b.create<BroadcastOp>(loc, c, type.getShape()));
    };
    auto outside = [&](CmpPredicate predicate, int64_t value) {
      Value bad =
          place(b.create<CmpOp>(loc, predicate, site.indices, bound(value)));
      return place(b.create<CastOp>(loc, bad, TypeAttr::get(b.getF32Type())));
    };
    Value bad = place(b.create<AddOp>(loc, outside(CmpPredicate::lt, 0),
                                      outside(CmpPredicate::ge, site.extent)));
    SmallVector<int64_t> axes;
    for (int64_t d = 0; d < type.getRank(); ++d)
      axes.push_back(d);
    Value total = bad;
    if (!axes.empty())
      total = place(b.create<SumOp>(loc, bad, axes, /*keepdim=*/false));
    // The runtime reads "<number>:<op> at <line>|<what> outside [0, n)".
    std::string name = (LOCUS_ABI_CHECK_PREFIX + Twine(number) + ":" +
                        site.user->getName().getStringRef() + " at " +
                        userLine(site.user->getLoc()) + "|" + site.what +
                        " outside [0, " + Twine(site.extent) + ")")
                           .str();
    placeOp(b.create<OutputOp>(loc, name, total));
  }
};

} // namespace
