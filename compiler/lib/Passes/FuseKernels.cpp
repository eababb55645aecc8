//===- FuseKernels.cpp - --locus-fuse-kernels -----------------------------===//
//
// Groups the computing ops of a placed graph into locus.kernel ops, one per
// launch: chains (and trees) of elementwise ops, and an elementwise
// epilogue after one anchor (a matrix product, convolution, reduction,
// pooling, softmax or loss); on a GPU, row-by-row kernels merged when one
// reads another's result alone (mergeRows). See Passes.td.
//
//===----------------------------------------------------------------------===//

#include "locus/Passes/Passes.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/EquivalenceClasses.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/Support/Debug.h"

#define DEBUG_TYPE "locus-fuse-kernels"

namespace locus {
#define GEN_PASS_DEF_LOCUSFUSEKERNELS
#include "locus/Passes/Passes.h.inc"
} // namespace locus

using namespace mlir;
using namespace locus;

bool locus::isElementwise(Operation *op) {
  return op->hasTrait<locus::OpTrait::Elementwise>();
}

bool locus::isComputing(Operation *op) {
  return op->getDialect() && isa<LocusDialect>(op->getDialect()) &&
         !op->hasTrait<locus::OpTrait::Structural>();
}

namespace {

/// A locus.transpose of a matrix ([1, 0]).
bool isTransposed2d(Operation *op) {
  auto t = dyn_cast_or_null<TransposeOp>(op);
  return t && t.getPermutation() == ArrayRef<int64_t>{1, 0};
}

/// The last axis of `op`'s input, if `op` reduces over it alone or takes a
/// softmax along it: an op that goes row by row.
bool overLastAxis(Operation *op) {
  auto last = [](Value input, int64_t axis) {
    auto rank = cast<RankedTensorType>(input.getType()).getRank();
    return axis == rank - 1 || axis == -1;
  };
  auto reduces = [&](auto r) {
    return r.getAxes().size() == 1 && last(r.getInput(), r.getAxes()[0]);
  };
  if (auto r = dyn_cast<SumOp>(op))
    return reduces(r);
  if (auto r = dyn_cast<MeanOp>(op))
    return reduces(r);
  if (auto r = dyn_cast<MaxOp>(op))
    return reduces(r);
  if (auto r = dyn_cast<MinOp>(op))
    return reduces(r);
  if (auto s = dyn_cast<SoftmaxOp>(op))
    return last(s.getInput(), s.getAxis());
  if (auto s = dyn_cast<LogSoftmaxOp>(op))
    return last(s.getInput(), s.getAxis());
  return false;
}

/// A group under construction: its ops in graph order, its device, the op
/// whose result is its only value read outside (the root), and whether it
/// holds an anchor already.
struct Group {
  SmallVector<Operation *> ops;
  DeviceAttr device;
  Operation *root = nullptr;
  bool anchored = false;
  /// The group's anchor when it is a convolution that no pooling has
  /// joined yet: a pooling of its (epilogue's) result may still join.
  Operation *poolableConv = nullptr;
};

class FuseKernelsPass
    : public locus::impl::LocusFuseKernelsBase<FuseKernelsPass> {
public:
  using Base::Base;

  void runOnOperation() override {
    GraphOp graph = getOperation();
    Block &body = graph.getBodyBlock();
    for (Operation &op : body) {
      if (isa<KernelOp>(op)) {
        op.emitOpError() << "the graph is fused already";
        return signalPassFailure();
      }
      if (auto to = dyn_cast<ToOp>(op)) {
        to.emitOpError()
            << "must be resolved by --locus-insert-transfers before fusion";
        return signalPassFailure();
      }
    }

    if (maxOps < 1) {
      graph.emitError() << "--locus-fuse-kernels: max-ops must be at least "
                           "1, got "
                        << static_cast<int64_t>(maxOps);
      return signalPassFailure();
    }
    // Group ids in graph order; groups[i] is null once merged away.
    std::vector<std::unique_ptr<Group>> groups;
    DenseMap<Operation *, Group *> groupOf;
    for (Operation &op : body) {
      if (!isComputing(&op))
        continue;
      DeviceAttr device = deviceOf(&op);
      bool elementwise = isElementwise(&op);
      SmallVector<Group *> joins;
      bool anchorJoined = false;
      int64_t size = 1; // this op and the groups it joins

      if (fuse)
        for (Value operand : op.getOperands()) {
          Operation *producer = operand.getDefiningOp();
          Group *g = producer ? groupOf.lookup(producer) : nullptr;
          if (!g || llvm::is_contained(joins, g) || g->root != producer ||
              g->device != device)
            continue;
          // The producer's value must not be needed outside the new group:
          // every reader is this op.
          if (!llvm::all_of(producer->getUsers(),
                            [&](Operation *user) { return user == &op; }))
            continue;
          // An elementwise op joins anything; an anchor starts a group, and
          // a group holds one anchor at most. Except: a 2-D matrix product
          // takes in a lone 2-D transpose of an operand, which it then
          // reads transposed (no copy).
          bool transposeIntoProduct = isa<MatmulOp>(op) && g->ops.size() == 1 &&
                                      isTransposed2d(producer) && !anchorJoined;
          // And a pooling joins the convolution (and epilogue) it pools,
          // which then never writes its unpooled output to memory.
          bool poolIntoConv = isa<MaxPool2dOp, AvgPool2dOp>(op) &&
                              g->poolableConv && !anchorJoined;
          // And any op takes in a lone reshape of an operand: in one
          // kernel the reshape is a view of what it reads, where a kernel
          // of its own copies (a reshape never joins its producer, whose
          // kernel would then copy its result out through the view).
          bool reshapeIntoReader =
              g->ops.size() == 1 && isa<ReshapeOp>(producer);
          if (!transposeIntoProduct && !poolIntoConv && !reshapeIntoReader &&
              (!elementwise || (g->anchored && anchorJoined)))
            continue;
          if (size + static_cast<int64_t>(g->ops.size()) > maxOps)
            continue;
          size += static_cast<int64_t>(g->ops.size());
          anchorJoined |= g->anchored;
          joins.push_back(g);
        }
      Group *target;
      if (joins.empty()) {
        groups.push_back(std::make_unique<Group>());
        target = groups.back().get();
        target->device = device;
      } else {
        target = joins.front();
        for (Group *other : llvm::drop_begin(joins)) {
          for (Operation *member : other->ops) {
            target->ops.push_back(member);
            groupOf[member] = target;
          }
          target->anchored |= other->anchored;
          if (!target->poolableConv)
            target->poolableConv = other->poolableConv;
          other->ops.clear();
          other->root = nullptr;
        }
      }
      LLVM_DEBUG(llvm::dbgs()
                 << "[" DEBUG_TYPE "] " << op.getName() << " at " << op.getLoc()
                 << (joins.empty() ? " starts a kernel" : " joins ")
                 << (joins.empty() ? "" : std::to_string(joins.size()))
                 << (joins.empty() ? "" : " group(s)") << " (" << size
                 << " ops)\n");
      target->ops.push_back(&op);
      if (isa<Conv2dOp>(op) && !target->anchored)
        target->poolableConv = &op;
      else if (!elementwise)
        target->poolableConv = nullptr;
      target->anchored |= !elementwise && !isa<ReshapeOp>(op);
      target->root = &op;
      groupOf[&op] = target;
    }

    if (fuse)
      mergeRows(groups, groupOf);
    int64_t kernels = 0;
    for (auto &group : groups)
      if (!group->ops.empty()) {
        materialize(*group);
        ++kernels;
      }
    graph->setAttr(
        kKernelsAttrName,
        IntegerAttr::get(IntegerType::get(&getContext(), 64), kernels));
  }

private:
  /// Whether `g` runs on a GPU and goes row by row: elementwise ops,
  /// reductions over the last axis and softmaxes along it.
  static bool rowGroup(const Group &g) {
    return g.device.getKind() == DeviceKind::cuda &&
           llvm::all_of(g.ops, [](Operation *op) {
             return isElementwise(op) || overLastAxis(op);
           });
  }

  /// On a GPU, a row-by-row kernel whose result only one other such kernel
  /// reads joins that kernel (a layer norm's centred input, which its
  /// variance and its output both read, kept three kernels apart):
  /// --locus-map-to-gpu then runs the rows in one launch. Merging never
  /// makes a cycle: a group's result is the only value read outside it.
  void mergeRows(std::vector<std::unique_ptr<Group>> &groups,
                 DenseMap<Operation *, Group *> &groupOf) {
    for (bool merged = true; merged;) {
      merged = false;
      for (auto &a : groups) {
        if (a->ops.empty() || !rowGroup(*a) || a->root->use_empty())
          continue;
        Group *into = nullptr;
        for (Operation *user : a->root->getUsers()) {
          Group *g = groupOf.lookup(user);
          if (!g || g == a.get() || (into && g != into)) {
            into = nullptr;
            break;
          }
          into = g;
        }
        if (!into || into->device != a->device || !rowGroup(*into) ||
            static_cast<int64_t>(a->ops.size() + into->ops.size()) > maxOps)
          continue;
        LLVM_DEBUG(llvm::dbgs()
                   << "[" DEBUG_TYPE "] the rows of " << a->root->getName()
                   << " at " << a->root->getLoc() << " join "
                   << into->root->getName() << "'s kernel\n");
        for (Operation *member : a->ops) {
          into->ops.push_back(member);
          groupOf[member] = into;
        }
        into->anchored |= a->anchored;
        a->ops.clear();
        a->root = nullptr;
        merged = true;
      }
    }
  }

  static DeviceAttr deviceOf(Operation *op) {
    if (DeviceAttr device = placedDevice(op))
      return device;
    return DeviceAttr::get(op->getContext(), DeviceKind::cpu, 0);
  }

  /// Moves the group's ops, in graph order, into a locus.kernel at the
  /// root's position; the root's results (several for an optimizer step)
  /// become the kernel's.
  void materialize(Group &group) {
    llvm::sort(group.ops, [](Operation *a, Operation *b) {
      return a->isBeforeInBlock(b);
    });
    Operation *root = group.root;
    OpBuilder builder(root);
    SmallVector<Location> locs;
    for (Operation *op : group.ops)
      locs.push_back(op->getLoc());
    auto kernel = builder.create<KernelOp>(
        builder.getFusedLoc(locs), root->getResultTypes(), group.device);
    Block *block = new Block();
    kernel.getBody().push_back(block);
    root->replaceAllUsesWith(kernel.getResults());
    for (Operation *op : group.ops)
      op->moveBefore(block, block->end());
    builder.setInsertionPointToEnd(block);
    builder.create<YieldOp>(root->getLoc(), root->getResults());
  }
};

} // namespace
