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

/// Whether every index of `indices` is a constant in [0, extent): a
/// locus.constant, or a reshape, broadcast, transpose or slice of one
/// (they move or repeat values, making none). Such indices (a positional
/// embedding's arange) need no check at run time.
bool constantInRange(Value indices, int64_t extent) {
  Operation *def = indices.getDefiningOp();
  while (isa_and_nonnull<ReshapeOp, BroadcastOp, TransposeOp, SliceOp>(def))
    def = def->getOperand(0).getDefiningOp();
  auto constant = dyn_cast_or_null<ConstantOp>(def);
  auto values = constant ? dyn_cast<DenseIntElementsAttr>(constant.getValue())
                         : DenseIntElementsAttr();
  if (!values)
    return false;
  return llvm::all_of(values.getValues<APInt>(), [&](const APInt &v) {
    int64_t i = v.getSExtValue();
    return i >= 0 && i < extent;
  });
}

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
    // BatchNorm in training over a dynamic batch: PyTorch refuses one
    // value per channel, whose unbiased variance divides by zero. (Before
    // the index checks, whose broadcasts take their dims below.)
    FailureOr<DynamicDims> dims = DynamicDims::analyze(graph);
    if (failed(dims))
      return signalPassFailure();
    unsigned count = 0;
    graph.walk([&](BatchNormTrainOp op) {
      // NOLINTNEXTLINE(bugprone-unchecked-optional-access): checked above.
      if (fewestPerChannel(*dims, op.getInput()) < 2)
        addCountCheck(op, count++);
    });
    // A window of fixed size in a dynamic dimension needs the run to have
    // the elements it takes.
    graph.walk([&](SliceOp op) {
      // NOLINTNEXTLINE(bugprone-unchecked-optional-access): checked above.
      DimExprs in = dims->dimsOf(op.getInput());
      for (auto [d, dim] : llvm::enumerate(in)) {
        int64_t need = elementsNeeded(op, d);
        if (!dim.isStatic() && need > 1)
          addWindowCheck(op, d, need, count++);
      }
    });
    // One check per tensor of indices and extent: a cross-entropy and the
    // one-hot of its gradient read the same labels.
    llvm::DenseSet<std::pair<Value, int64_t>> seen;
    for (const Site &site : sites) {
      auto type = cast<RankedTensorType>(site.indices.getType());
      if (type.getNumElements() == 0 ||
          constantInRange(site.indices, site.extent) ||
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
  /// Places `op` like `user`.
  static Value placedLike(Operation *user, Operation *op) {
    for (StringRef name : {kDeviceAttrName, kPlacementAttrName})
      if (Attribute a = user->getAttr(name))
        op->setAttr(name, a);
    return op->getResult(0);
  }

  /// The output the runtime reads for check `number` at `user`: "<op> at
  /// <line>: <what> (<total> found)" when `total` is not zero.
  static void addCheckOutput(OpBuilder &b, Operation *user, unsigned number,
                             const Twine &what, Value total) {
    std::string name = (LOCUS_ABI_CHECK_PREFIX + Twine(number) + ":" +
                        user->getName().getStringRef() + " at " +
                        userLine(user->getLoc()) + "|" + what)
                           .str();
    placedLike(user, b.create<OutputOp>(user->getLoc(), name, total));
  }

  /// The fewest values per channel BatchNorm's input [N, C, ...] has in a
  /// run, with every dynamic size at 1.
  static int64_t fewestPerChannel(const DynamicDims &dims, Value input) {
    SmallVector<int64_t> ones(dims.symbols().size(), 1);
    int64_t n = 1;
    for (auto [d, dim] : llvm::enumerate(dims.dimsOf(input)))
      if (d != 1)
        n *= dim.evaluate(ones).value_or(1);
    return n;
  }

  /// Before a BatchNorm in training over a dynamic batch: the values per
  /// channel when the run has fewer than 2, else 0.
  static void addCountCheck(BatchNormTrainOp op, unsigned number) {
    OpBuilder b(op);
    Location loc = op.getLoc();
    SmallVector<int64_t> axes = {0};
    for (int64_t d = 2; d < op.getInput().getType().getRank(); ++d)
      axes.push_back(d);
    auto scalar = RankedTensorType::get({}, b.getF32Type());
    auto constant = [&](float value) {
      return placedLike(
          op, b.create<ConstantOp>(loc, DenseElementsAttr::get(scalar, value),
                                   DeviceAttr()));
    };
    Value n = placedLike(op, b.create<CountOp>(loc, op.getInput(), axes));
    Value few = placedLike(
        op, b.create<CmpOp>(loc, CmpPredicate::lt, n, constant(2.0f)));
    Value total =
        placedLike(op, b.create<SelectOp>(loc, few, n, constant(0.0f)));
    addCheckOutput(b, op, number,
                   "batch_norm in training needs more than one value per "
                   "channel (as in PyTorch); values per channel in this run",
                   total);
  }

  /// How many elements dimension `d` of a slice's input needs for its
  /// window, or 0 when the window is the whole dimension.
  static int64_t elementsNeeded(SliceOp op, size_t d) {
    int64_t offset = op.getOffsets()[d], size = op.getSizes()[d],
            stride = op.getStrides()[d];
    if (offset == 0 && stride == 1 &&
        size == op.getInput().getType().getDimSize(d))
      return 0;
    if (size == 0)
      return 0;
    return offset < 0 ? -offset : offset + (size - 1) * stride + 1;
  }

  /// Before a slice whose window along dynamic dimension `d` needs `need`
  /// elements: the run's size there when it has fewer, else 0.
  static void addWindowCheck(SliceOp op, size_t d, int64_t need,
                             unsigned number) {
    OpBuilder b(op);
    Location loc = op.getLoc();
    auto scalar = RankedTensorType::get({}, b.getF32Type());
    auto constant = [&](float value) {
      return placedLike(
          op, b.create<ConstantOp>(loc, DenseElementsAttr::get(scalar, value),
                                   DeviceAttr()));
    };
    SmallVector<int64_t> axes = {static_cast<int64_t>(d)};
    Value n = placedLike(op, b.create<CountOp>(loc, op.getInput(), axes));
    Value few =
        placedLike(op, b.create<CmpOp>(loc, CmpPredicate::lt, n,
                                       constant(static_cast<float>(need))));
    Value total =
        placedLike(op, b.create<SelectOp>(loc, few, n, constant(0.0f)));
    addCheckOutput(b, op, number,
                   "the window takes elements of dimension " + Twine(d) +
                       ", which is dynamic, that a run of fewer than " +
                       Twine(need) + " does not have; its size in this run",
                   total);
  }

  /// Before `site.user`: the number of indices outside [0, extent), as an
  /// output the runtime reads (LOCUS_ABI_CHECK_PREFIX).
  void addCheck(const Site &site, unsigned number) {
    OpBuilder b(site.user);
    Location loc = site.user->getLoc();
    auto type = cast<RankedTensorType>(site.indices.getType());
    // Placed like the op that reads the indices, where they already are.
    auto place = [&](Operation *op) { return placedLike(site.user, op); };
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
    addCheckOutput(
        b, site.user, number,
        Twine(site.what) + " outside [0, " + Twine(site.extent) + ")", total);
  }
};

} // namespace
