//===- FuseKernels.cpp - --locus-fuse-kernels -----------------------------===//
//
// Groups the computing ops of a placed graph into locus.kernel ops, one per
// launch: chains (and trees) of elementwise ops, and an elementwise
// epilogue after one anchor (a matrix product, convolution, reduction,
// pooling, softmax or loss); an elementwise kernel that only reductions
// read merged into theirs (mergePrologues); on a GPU, row-by-row kernels
// merged into the first such kernel that reads their result (mergeRows).
// See Passes.td.
//
//===----------------------------------------------------------------------===//

#include "Permutations.h"

#include "locus/Dialect/DynamicDims.h"
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

/// Whether `op` casts between f32 and bf16 or f16: up to f32 (`up`) or
/// down from it.
bool castsHalf(Operation *op, bool up) {
  auto cast = dyn_cast_or_null<CastOp>(op);
  if (!cast)
    return false;
  Type from = cast.getInput().getType().getElementType(),
       to = cast.getResult().getType().getElementType();
  Type half = up ? from : to, wide = up ? to : from;
  return (half.isBF16() || half.isF16()) && wide.isF32();
}

/// Whether `op` casts an f32 value to bf16 or f16.
bool narrows(Operation *op) { return castsHalf(op, /*up=*/false); }

/// Whether `op` casts a bf16 or f16 value to f32.
bool widens(Operation *op) { return castsHalf(op, /*up=*/true); }

/// A locus.transpose that swaps the last two axes and keeps the others
/// (a matrix's [1, 0], a batch of matrices' [0, 1, 3, 2]): a matrix product
/// reads its input transposed instead.
bool transposesLastTwo(Operation *op) {
  auto t = dyn_cast_or_null<TransposeOp>(op);
  return t && swapsLastTwo(t.getPermutation());
}

/// A slice whose rows stay contiguous (innermost stride 1): a product
/// (sgemm) reads it where it lies, its rows' stride as leading dimension,
/// and a linear layer's bias broadcast reads it as a strided vector.
bool contiguousRowsSlice(Operation *op) {
  auto slice = dyn_cast_or_null<SliceOp>(op);
  return slice && slice.getStrides().back() == 1;
}

/// Whether `reader` takes in `view`, a reshape, a broadcast, a transpose or
/// a slice, as a view of what the view reads when the two share a kernel:
/// any reader of a reshape; an elementwise reader of a broadcast (its index
/// map); a matrix product of a transpose that swaps the last two axes; a
/// product or linear layer of a slice with contiguous rows (a row block of
/// a packed weight, attention's q, k and v of in_proj_weight).
bool readsAsView(Operation *view, Operation *reader) {
  if (isa<ReshapeOp>(view))
    return isComputing(reader);
  if (isa<BroadcastOp>(view))
    return isElementwise(reader);
  if (contiguousRowsSlice(view))
    return isa<MatmulOp, LinearOp>(reader);
  return transposesLastTwo(view) && isa<MatmulOp>(reader);
}

DeviceAttr placedOrCpu(Operation *op) {
  if (DeviceAttr device = placedDevice(op))
    return device;
  return DeviceAttr::get(op->getContext(), DeviceKind::cpu, 0);
}

/// A transpose of a transpose on the same device reads the first one's
/// input with the two permutations composed, or is that input when they
/// cancel (a backward pass transposes back an operand the forward pass
/// transposed: `q k^T`'s gradient reads `(k^T)^T`).
void foldTransposePairs(Block &body) {
  for (Operation &op : llvm::make_early_inc_range(body)) {
    auto outer = dyn_cast<TransposeOp>(op);
    auto inner =
        outer ? outer.getInput().getDefiningOp<TransposeOp>() : TransposeOp();
    if (!inner || placedOrCpu(inner) != placedOrCpu(outer))
      continue;
    SmallVector<int64_t> composed;
    bool identity = true;
    for (int64_t axis : outer.getPermutation()) {
      composed.push_back(inner.getPermutation()[axis]);
      identity &= composed.back() == static_cast<int64_t>(composed.size()) - 1;
    }
    if (identity) {
      outer.replaceAllUsesWith(inner.getInput());
    } else {
      outer.getInputMutable().set(inner.getInput());
      outer.setPermutation(composed);
    }
    if (outer->use_empty())
      outer->erase();
    if (inner->use_empty())
      inner->erase();
  }
}

/// A view (a reshape, a broadcast, or a transpose a product reads
/// transposed) that several ops read becomes one view per reader that takes
/// it in, so that each reader's kernel reads through its own view instead
/// of a kernel copying the view's result once (a layer norm's broadcast
/// statistics, read by its forward and backward ops, were a launch each).
/// Readers that cannot take it in (an output, a copy, an op on another
/// device) share the original.
void cloneViewsPerReader(Block &body) {
  SmallVector<Operation *> views;
  for (Operation &op : body)
    if (isa<ReshapeOp, TransposeOp, SliceOp, BroadcastOp>(op))
      views.push_back(&op);
  // Last first, so that a chain of reshapes is cloned whole.
  for (Operation *view : llvm::reverse(views)) {
    SetVector<Operation *> readers, takers;
    for (Operation *reader : view->getUsers()) {
      readers.insert(reader);
      if (readsAsView(view, reader) && placedOrCpu(reader) == placedOrCpu(view))
        takers.insert(reader);
    }
    if (readers.size() < 2 || takers.empty())
      continue;
    // With no other reader, the first taker keeps the original.
    bool othersRead = readers.size() != takers.size();
    for (Operation *taker :
         llvm::drop_begin(takers.getArrayRef(), othersRead ? 0 : 1)) {
      OpBuilder b(taker);
      Operation *clone = b.clone(*view);
      taker->replaceUsesOfWith(view->getResult(0), clone->getResult(0));
    }
  }
}

/// Whether `op` is a library call in CUDA code: a product (cuBLAS) or a
/// convolution or its gradient (cuDNN), which reads whole buffers.
bool libraryCall(Operation *op) {
  return isa_and_nonnull<MatmulOp, LinearOp, Conv2dOp, Conv2dInputGradOp,
                         Conv2dWeightGradOp>(op);
}

/// Whether `op` casts the 16-bit result of a library call on a GPU up to
/// f32, and that call could write it as it is: a product without a bias
/// (a linear's bias is added in a launch after cuBLAS anyway) or a
/// convolution.
bool widensLibraryResult(Operation *op) {
  Operation *call = widens(op) ? op->getOperand(0).getDefiningOp() : nullptr;
  return libraryCall(call) && !isa<LinearOp>(call) &&
         placedOrCpu(op).getKind() == DeviceKind::cuda;
}

/// reshape(cast(x)) becomes cast(reshape(x)) for such a cast, so that the
/// cast reads at its readers' shape, where linalg fuses it into them (a
/// bias gradient sums the [4, 16, 32] view of a [64, 32] product). The
/// new casts join `casts`.
void sinkCastBelowReshapes(Operation *widening,
                           SmallVector<Operation *> &casts) {
  SmallVector<Operation *> reshapes;
  for (Operation *user : widening->getUsers())
    if (isa<ReshapeOp>(user) && placedOrCpu(user) == placedOrCpu(widening))
      reshapes.push_back(user);
  Type narrowElement = cast<RankedTensorType>(widening->getOperand(0).getType())
                           .getElementType();
  for (Operation *reshape : reshapes) {
    OpBuilder b(reshape);
    auto shape = cast<RankedTensorType>(reshape->getResult(0).getType());
    Operation *narrow = b.clone(*reshape);
    narrow->setOperand(0, widening->getOperand(0));
    narrow->getResult(0).setType(shape.clone(narrowElement));
    Operation *wide = b.clone(*widening);
    wide->setOperand(0, narrow->getResult(0));
    wide->getResult(0).setType(shape);
    reshape->replaceAllUsesWith(wide);
    reshape->erase();
    casts.push_back(wide);
  }
}

/// On a GPU, the cast up of such a result that several ops read, none of
/// them a library call, becomes one cast per reader (below the reshapes
/// it went through), which each reader's kernel takes in: the library
/// then writes the 16-bit result (--locus-linalg-to-blas,
/// --locus-gpu-16bit-convs), where a launch after it wrote the f32 copy
/// they read. (A layer norm's backward reads its gradient three times.)
void cloneWideningCastsPerReader(Block &body) {
  SmallVector<Operation *> casts;
  for (Operation &op : body)
    if (widensLibraryResult(&op))
      casts.push_back(&op);
  for (size_t i = 0; i < casts.size(); ++i)
    sinkCastBelowReshapes(casts[i], casts);
  // A cast only reshapes read is read by nothing now.
  llvm::erase_if(casts, [](Operation *cast) {
    if (!cast->use_empty())
      return false;
    cast->erase();
    return true;
  });
  for (Operation *cast : casts) {
    SetVector<Operation *> readers;
    for (Operation *reader : cast->getUsers())
      readers.insert(reader);
    if (readers.size() < 2 || llvm::any_of(readers, libraryCall) ||
        llvm::any_of(readers, [&](Operation *reader) {
          return placedOrCpu(reader) != placedOrCpu(cast);
        }))
      continue;
    for (Operation *reader : llvm::drop_begin(readers.getArrayRef())) {
      OpBuilder b(reader);
      Operation *clone = b.clone(*cast);
      reader->replaceUsesOfWith(cast->getResult(0), clone->getResult(0));
    }
  }
}

/// Whether `use` is one of the two tensor operands of a CPU convolution
/// (its input or weight) or of its gradients (dy and the weight, x and
/// dy): the runtime's call reads a 16-bit value there as it is
/// (--locus-conv-to-runtime).
bool hostConvOperand(OpOperand &use) {
  return isa<Conv2dOp, Conv2dInputGradOp, Conv2dWeightGradOp>(use.getOwner()) &&
         use.getOperandNumber() < 2 &&
         placedOrCpu(use.getOwner()).getKind() == DeviceKind::cpu;
}

/// Whether `op` casts a 16-bit value up on the CPU for convolutions and
/// their gradients alone, each reading it as a tensor operand: it joins the
/// reader's kernel, whose call then reads the 16-bit value
/// (mergePrologues).
bool widensForHostConvs(Operation *op) {
  return widens(op) && placedOrCpu(op).getKind() == DeviceKind::cpu &&
         !op->use_empty() && llvm::all_of(op->getUses(), hostConvOperand);
}

/// On the CPU, a cast up of a 16-bit value that convolutions or their
/// gradients read as a tensor operand becomes one cast per such read (the
/// cast stays for any other reader): each joins its reader's kernel, which
/// reads the 16-bit value (a block's input, which its first convolution, a
/// strided 1x1 convolution and their weight gradients all read).
void cloneWideningCastsForHostConvs(Block &body) {
  SmallVector<Operation *> casts;
  for (Operation &op : body)
    if (widens(&op) && placedOrCpu(&op).getKind() == DeviceKind::cpu)
      casts.push_back(&op);
  for (Operation *cast : casts) {
    SmallVector<OpOperand *> reads;
    for (OpOperand &use : cast->getUses())
      if (hostConvOperand(use))
        reads.push_back(&use);
    if (reads.empty() || (reads.size() == 1 && cast->hasOneUse()))
      continue;
    for (OpOperand *use : reads) {
      OpBuilder b(use->getOwner());
      use->set(b.clone(*cast)->getResult(0));
    }
    if (cast->use_empty())
      cast->erase();
  }
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

/// Whether `op` is a reshape that keeps rows whole: the last axis stays
/// (a [64, 32] value seen as [4, 16, 32]) or only axes of 1 come and go
/// (a row sum's [4, 16] seen as [4, 16, 1] to be broadcast back). In one
/// kernel it is a view, and the rows it reads are the rows it gives.
bool keepsRows(Operation *op) {
  auto reshape = dyn_cast<ReshapeOp>(op);
  if (!reshape)
    return false;
  auto in = dyn_cast<RankedTensorType>(reshape.getInput().getType());
  auto out = dyn_cast<RankedTensorType>(reshape.getType());
  if (!in || !out || !in.hasStaticShape() || !out.hasStaticShape() ||
      in.getRank() == 0 || out.getRank() == 0)
    return false;
  auto nonUnit = [](ArrayRef<int64_t> shape) {
    SmallVector<int64_t> kept;
    llvm::copy_if(shape, std::back_inserter(kept),
                  [](int64_t d) { return d != 1; });
    return kept;
  };
  return in.getShape().back() == out.getShape().back() ||
         nonUnit(in.getShape()) == nonUnit(out.getShape());
}

/// A group under construction: its ops in graph order, its device, the op
/// whose result is its only value read outside (the root), and whether it
/// holds an anchor already.
struct Group {
  SmallVector<Operation *> ops;
  DeviceAttr device;
  Operation *root = nullptr;
  /// Ops before the root whose results the kernel also gives (optimizer
  /// steps merged side by side), in graph order.
  SmallVector<Operation *> otherRoots;
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
    if (fuse) {
      foldTransposePairs(body);
      cloneViewsPerReader(body);
      cloneWideningCastsPerReader(body);
      cloneWideningCastsForHostConvs(body);
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
      SmallVector<Operation *> keptRoots;

      // (A cast up for host convolutions waits to join theirs.)
      if (fuse && !widensForHostConvs(&op))
        for (Value operand : op.getOperands()) {
          Operation *producer = operand.getDefiningOp();
          Group *g = producer ? groupOf.lookup(producer) : nullptr;
          // (The producer may be another root of its kernel: a batch
          // norm whose running-statistics updates joined it.)
          if (!g || llvm::is_contained(joins, g) || g->device != device ||
              (g->root != producer &&
               !llvm::is_contained(g->otherRoots, producer)))
            continue;
          // The producer's value must not be needed outside the new group:
          // every reader is this op. Or, for an elementwise op, the
          // kernel's roots are read after it only (joinsThroughRoot): they
          // stay roots of the kernel, for those readers.
          bool keepsRoot =
              g->root != producer ||
              !llvm::all_of(producer->getUsers(),
                            [&](Operation *user) { return user == &op; });
          if (keepsRoot &&
              !(elementwise && joinsThroughRoot(op, *g, producer, groupOf)))
            continue;
          // A kernel moves to its last op: past no reader of its other
          // roots' results.
          if (!otherRootsReadAfter(*g, op, groupOf))
            continue;
          // An elementwise op joins anything; an anchor starts a group, and
          // a group holds one anchor at most. Except: a 2-D matrix product
          // takes in a lone 2-D transpose of an operand, which it then
          // reads transposed (no copy).
          // (The transpose may read through reshapes, views too.)
          bool transposeIntoProduct =
              isa<MatmulOp>(op) && transposesLastTwo(producer) &&
              !anchorJoined && llvm::all_of(g->ops, [&](Operation *member) {
                return member == producer || isa<ReshapeOp>(member);
              });
          // And a pooling joins the convolution (and epilogue) it pools,
          // which then never writes its unpooled output to memory.
          bool poolIntoConv = isa<MaxPool2dOp, AvgPool2dOp>(op) &&
                              g->poolableConv && !anchorJoined;
          // And any op takes in a lone reshape (or chain of reshapes) of
          // an operand: in one kernel the reshape is a view of what it
          // reads, where a kernel of its own copies (a reshape never joins
          // its producer, whose kernel would then copy its result out
          // through the view).
          bool reshapeIntoReader = isa<ReshapeOp>(producer) &&
                                   llvm::all_of(g->ops, [](Operation *member) {
                                     return isa<ReshapeOp>(member);
                                   });
          // And a product takes in a lone slice with contiguous rows,
          // which sgemm reads where it lies.
          bool sliceIntoProduct = g->ops.size() == 1 &&
                                  contiguousRowsSlice(producer) &&
                                  isa<MatmulOp, LinearOp>(op);
          if (!transposeIntoProduct && !poolIntoConv && !reshapeIntoReader &&
              !sliceIntoProduct &&
              (!elementwise || (g->anchored && anchorJoined)))
            continue;
          if (size + static_cast<int64_t>(g->ops.size()) > maxOps)
            continue;
          size += static_cast<int64_t>(g->ops.size());
          anchorJoined |= g->anchored;
          joins.push_back(g);
          if (keepsRoot && g->root)
            keptRoots.push_back(g->root);
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
          llvm::append_range(target->otherRoots, other->otherRoots);
          other->otherRoots.clear();
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
      llvm::append_range(target->otherRoots, keptRoots);
      if (isa<Conv2dOp>(op) && !target->anchored)
        target->poolableConv = &op;
      else if (!elementwise)
        target->poolableConv = nullptr;
      target->anchored |= !elementwise && !isa<ReshapeOp>(op);
      target->root = &op;
      groupOf[&op] = target;
    }

    if (fuse) {
      mergePrologues(groups, groupOf);
      mergeRows(groups, groupOf);
      mergeOptimizerSteps(groups, groupOf);
      mergeSiblings(groups, groupOf);
    }
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
  /// reductions over the last axis, softmaxes along it and reshapes that
  /// keep rows whole.
  static bool rowGroup(const Group &g) {
    return g.device.getKind() == DeviceKind::cuda &&
           llvm::all_of(g.ops, [](Operation *op) {
             return isElementwise(op) || overLastAxis(op) || keepsRows(op);
           });
  }

  /// The one other group, on `a`'s device, that holds every reader of
  /// `a`'s result when each reader passes `accepts`; null otherwise, or
  /// when the two together would pass `max-ops`.
  template <typename Accepts>
  Group *soleReaderGroup(Group &a, DenseMap<Operation *, Group *> &groupOf,
                         Accepts accepts) {
    // (A kernel with other roots stays where it is: readers of their
    // results may stand before the kernel it would join.)
    if (!a.otherRoots.empty())
      return nullptr;
    Group *into = nullptr;
    for (Operation *user : a.root->getUsers()) {
      Group *g = groupOf.lookup(user);
      if (!g || g == &a || (into && g != into) || !accepts(user))
        return nullptr;
      into = g;
    }
    if (!into || into->ops.empty() || into->device != a.device ||
        static_cast<int64_t>(a.ops.size() + into->ops.size()) > maxOps)
      return nullptr;
    return into;
  }

  /// Moves `a`'s ops into `into`, leaving `a` empty.
  static void mergeInto(Group &a, Group &into,
                        DenseMap<Operation *, Group *> &groupOf) {
    for (Operation *member : a.ops) {
      into.ops.push_back(member);
      groupOf[member] = &into;
    }
    llvm::append_range(into.otherRoots, a.otherRoots);
    into.anchored |= a.anchored;
    a.ops.clear();
    a.otherRoots.clear();
    a.root = nullptr;
  }

  /// Where `user` will stand once kernels are made: its kernel's root when
  /// it is in one (a reshape that joined its reader's kernel reads there).
  static Operation *standsAt(Operation *user,
                             const DenseMap<Operation *, Group *> &groupOf) {
    Group *of = groupOf.lookup(user);
    return of && of->root ? of->root : user;
  }

  /// The row group on `a`'s device that `a`'s rows may join: the kernel
  /// that reads a result of `a` first, when it goes row by row and every
  /// other reader of `a`'s results stands after it (so `a`'s results the
  /// joined kernel still gives are there before they are read, and no
  /// path leads from `a` to it through another kernel: no cycle). Null
  /// otherwise, or when the two together would pass `max-ops`. Kernels
  /// whose results a locus.assign writes join none (see assigned()).
  Group *rowReaderGroup(Group &a, DenseMap<Operation *, Group *> &groupOf) {
    SmallVector<Operation *> roots(a.otherRoots);
    roots.push_back(a.root);
    SmallVector<Operation *> readers;
    Group *into = nullptr;
    if (assigned(a))
      return nullptr;
    for (Operation *r : roots)
      for (Operation *user : r->getUsers()) {
        Group *g = groupOf.lookup(user);
        if (g == &a)
          continue;
        readers.push_back(user);
        if (g && g->root && !g->ops.empty() &&
            (!into || g->root->isBeforeInBlock(into->root)))
          into = g;
      }
    if (!into || into->device != a.device || !rowGroup(*into) ||
        assigned(*into) ||
        static_cast<int64_t>(a.ops.size() + into->ops.size()) > maxOps)
      return nullptr;
    for (Operation *user : readers)
      if (groupOf.lookup(user) != into &&
          !into->root->isBeforeInBlock(standsAt(user, groupOf)))
        return nullptr;
    return into;
  }

  /// On a GPU, a row-by-row kernel joins the first row-by-row kernel that
  /// reads its result, when every other reader stands after that one (a
  /// layer norm's centred input, which its variance and its output both
  /// read, kept three kernels apart; its input gradient, where a row sum
  /// and the elementwise op after it both read each value, five):
  /// --locus-map-to-gpu then runs the rows in one launch. The joined
  /// kernel still gives the results read outside it.
  void mergeRows(std::vector<std::unique_ptr<Group>> &groups,
                 DenseMap<Operation *, Group *> &groupOf) {
    for (bool merged = true; merged;) {
      merged = false;
      for (auto &a : groups) {
        if (a->ops.empty() || !rowGroup(*a) || a->root->use_empty())
          continue;
        Group *into = rowReaderGroup(*a, groupOf);
        if (!into)
          continue;
        LLVM_DEBUG(llvm::dbgs()
                   << "[" DEBUG_TYPE "] the rows of " << a->root->getName()
                   << " at " << a->root->getLoc() << " join "
                   << into->root->getName() << "'s kernel\n");
        // Its roots stay roots of the kernel, before the kernel's own
        // (materialize() gives those that ops outside it read).
        Operation *root = a->root;
        mergeInto(*a, *into, groupOf);
        into->otherRoots.push_back(root);
        merged = true;
      }
    }
  }

  /// Whether `g` computes elementwise alone (views of what it reads
  /// included): no anchor, nothing but elementwise ops and reshapes.
  static bool elementwiseOnly(const Group &g) {
    return !g.anchored && llvm::all_of(g.ops, [](Operation *op) {
      return isElementwise(op) || isa<ReshapeOp>(op);
    });
  }

  /// A kernel of a convolution and, alone after it, the cast of its 16-bit
  /// result up to f32: the cast goes to the one other kernel that reads it
  /// (but a product's or convolution's), when there is one. After a cuDNN
  /// call the cast would be a launch writing f32 for that kernel to read.
  /// So does the cast after a 16-bit product on a GPU, whose kernel may
  /// hold views of its operands too (a gradient's `x^T dy`): cuBLAS then
  /// writes the rounded 16-bit result itself (--locus-linalg-to-blas).
  void moveCastAfterCall(Group &a, DenseMap<Operation *, Group *> &groupOf) {
    Operation *cast = a.root;
    if (!widensLibraryResult(cast))
      return;
    Operation *call = cast->getOperand(0).getDefiningOp();
    if (!llvm::is_contained(a.ops, call) ||
        !llvm::all_of(a.ops, [&](Operation *op) {
          return op == cast || op == call ||
                 (isa<ReshapeOp, TransposeOp>(op) &&
                  llvm::all_of(op->getUsers(), [&](Operation *user) {
                    return llvm::is_contained(a.ops, user);
                  }));
        }))
      return;
    Group *into = nullptr;
    for (Operation *user : cast->getUsers()) {
      Group *g = groupOf.lookup(user);
      if (!g || g == &a || (into && g != into) || libraryCall(user))
        return;
      into = g;
    }
    if (!into || into->ops.empty() || into->device != a.device ||
        static_cast<int64_t>(into->ops.size()) + 1 > maxOps)
      return;
    LLVM_DEBUG(llvm::dbgs()
               << "[" DEBUG_TYPE "] the cast up of " << call->getName()
               << " at " << cast->getLoc() << " joins the kernel of "
               << into->root->getName() << "\n");
    a.ops.erase(llvm::find(a.ops, cast));
    a.root = call;
    into->ops.push_back(cast);
    groupOf[cast] = into;
  }

  /// Whether `g` is one cast of a bf16 or f16 value to f32.
  static bool widensAlone(const Group &g) {
    return g.ops.size() == 1 && widens(g.root);
  }

  /// An elementwise kernel whose result only reductions (`sum`, `mean`,
  /// `max`, `min`) of one other kernel read joins that kernel as their
  /// prologue: the reduction computes each value as it reads it, instead
  /// of a kernel writing the values out for it to read back. (GradScaler's
  /// `sum(g * 0)` over each gradient, whose `g` the optimizer reads too,
  /// wrote and read back a tensor of the gradient's size.) A merge makes
  /// no cycle: the group's result is the only value read outside it, and
  /// its readers all stand in the kernel it joins.
  /// And a kernel that only casts a 16-bit value up to f32 joins the kernel
  /// of whatever reads it (but a library call: a product or convolution
  /// reads a buffer): a batch norm reads a GPU convolution's 16-bit output
  /// (--locus-gpu-16bit-convs) as it goes, where a launch wrote it out in
  /// f32 first. On the CPU, that includes a convolution reading it as its
  /// input or weight: the runtime's call reads the 16-bit value
  /// (widensForHostConvs).
  void mergePrologues(std::vector<std::unique_ptr<Group>> &groups,
                      DenseMap<Operation *, Group *> &groupOf) {
    for (auto &a : groups) {
      if (!a->ops.empty())
        moveCastAfterCall(*a, groupOf);
      if (a->ops.empty() || !elementwiseOnly(*a) || a->root->use_empty())
        continue;
      bool widens = widensAlone(*a),
           forHostConvs = widens && widensForHostConvs(a->root);
      Group *into = soleReaderGroup(*a, groupOf, [&](Operation *user) {
        return isa<SumOp, MeanOp, MaxOp, MinOp>(user) ||
               (widens && (!libraryCall(user) || forHostConvs));
      });
      if (!into)
        continue;
      LLVM_DEBUG(llvm::dbgs()
                 << "[" DEBUG_TYPE "] " << a->root->getName() << " at "
                 << a->root->getLoc() << " joins the reduction of "
                 << into->root->getName() << "'s kernel as its prologue\n");
      mergeInto(*a, *into, groupOf);
    }
  }

  /// The most buffers (operands and results) a kernel of merged optimizer
  /// steps takes: a CUDA kernel's parameters are 8-byte pointers, limited
  /// to 4 KiB in all before CUDA 12.1. An Adam step takes 7 of its own.
  static constexpr size_t kMaxStepBuffers = 256;

  /// How many buffers the ops of `g` read or write.
  static size_t buffersOf(const Group &g) {
    llvm::SmallDenseSet<Value> read;
    size_t written = 0;
    for (Operation *op : g.ops) {
      read.insert(op->operand_begin(), op->operand_end());
      written += op->getNumResults();
    }
    return read.size() + written;
  }

  /// Whether `g` is one optimizer step (an `sgd` or `adam` of one
  /// parameter) on a GPU.
  static bool optimizerStepOnGpu(const Group &g) {
    // Its gradient may be cast up from 16 bits in its kernel (a prologue).
    return g.device.getKind() == DeviceKind::cuda &&
           isa<SgdOp, AdamOp>(g.root) &&
           llvm::all_of(g.ops, [&](Operation *op) {
             return op == g.root || widens(op);
           });
  }

  /// On a GPU, the optimizer steps of a device (one per parameter, each a
  /// kernel of its own) join one kernel, which --locus-map-to-gpu runs as
  /// one launch (they read and write disjoint buffers). A step joins the
  /// kernel of the steps before it when every reader of their results that
  /// comes before it is a locus.assign (which materialize() moves after
  /// the kernel: a state takes its new value after the run, wherever the
  /// assign stands).
  void mergeOptimizerSteps(std::vector<std::unique_ptr<Group>> &groups,
                           DenseMap<Operation *, Group *> &groupOf) {
    DenseMap<DeviceAttr, Group *> into;
    for (auto &g : groups) {
      if (g->ops.empty() || !optimizerStepOnGpu(*g))
        continue;
      Group *&target = into[g->device];
      auto readBefore = [&](Operation *root) {
        return llvm::any_of(root->getUsers(), [&](Operation *user) {
          return !isa<AssignOp>(user) && user->isBeforeInBlock(g->root);
        });
      };
      if (!target ||
          static_cast<int64_t>(target->ops.size() + g->ops.size()) > maxOps ||
          buffersOf(*target) + buffersOf(*g) > kMaxStepBuffers ||
          readBefore(target->root) ||
          llvm::any_of(target->otherRoots, readBefore)) {
        target = g.get();
        continue;
      }
      target->otherRoots.push_back(target->root);
      Operation *root = g->root;
      mergeInto(*g, *target, groupOf);
      target->root = root;
    }
  }

  /// The states that locus.assign ops write results of `g`'s ops into.
  static SmallVector<Value> assignedStates(const Group &g) {
    SmallVector<Value> states;
    for (Operation *op : g.ops)
      for (Operation *user : op->getUsers())
        if (auto assign = dyn_cast<AssignOp>(user))
          states.push_back(assign.getState());
    return states;
  }

  /// Whether a result of an op of `g` is written into a state (a
  /// locus.assign). The plan may write a state's update into the state's
  /// own buffer when its kernel reads the state only elementwise, which
  /// holds for one loop nest but not for a kernel whose other ops read
  /// the state after that loop: such kernels join no row kernels, and
  /// only siblings that do not read the state (statesApart).
  static bool assigned(const Group &g) { return !assignedStates(g).empty(); }

  /// A reduction over more elements than this joins no siblings: its
  /// strategy may split it over launches, so it would share none and only
  /// move the kernel it joined later, keeping buffers alive longer.
  static constexpr int64_t kMaxSiblingReduction = int64_t{1} << 16;

  /// Whether neither group reads a state the other's results are written
  /// into: then the plan's in-place update of that state (its kernel reads
  /// it only elementwise, in one loop nest) holds in the joined kernel too
  /// (an Adam step counter's `+ 1` beside an independent kernel).
  static bool statesApart(const Group &a, const Group &b) {
    auto reads = [](const Group &g, ArrayRef<Value> states) {
      return llvm::any_of(g.ops, [&](Operation *op) {
        return llvm::any_of(op->getOperands(), [&](Value v) {
          return llvm::is_contained(states, v);
        });
      });
    };
    return !reads(a, assignedStates(b)) && !reads(b, assignedStates(a));
  }

  /// Whether `g` only moves data, computes elementwise or reduces with one
  /// combiner, on a GPU, at static extents: its ops are elementwise ops,
  /// reshapes, transposes, slices and broadcasts, which lower to linalg
  /// ops (and copies) with parallel loops alone, and small sums, means,
  /// maxima and minima (a bias gradient, an index check's count), whose
  /// one-launch strategies --locus-map-to-gpu runs beside others. A kernel
  /// that reduces rows (several, over the last axis) is left out: its
  /// rows run as a row group, a launch of its own.
  static bool sharesLaunchOnGpu(const Group &g) {
    return g.device.getKind() == DeviceKind::cuda &&
           llvm::all_of(g.ops, [](Operation *op) {
             return (isElementwise(op) ||
                     isa<ReshapeOp, TransposeOp, SliceOp>(op) ||
                     smallReduction(op)) &&
                    !op->hasAttr(kDimsAttrName) && !reducesRows(op);
           });
  }

  /// Whether `op` is a sum, mean, maximum or minimum of at most
  /// kMaxSiblingReduction elements.
  static bool smallReduction(Operation *op) {
    if (!isa<SumOp, MeanOp, MaxOp, MinOp>(op))
      return false;
    auto type = dyn_cast<RankedTensorType>(op->getOperand(0).getType());
    return type && type.hasStaticShape() &&
           type.getNumElements() <= kMaxSiblingReduction;
  }

  /// Whether `op` reduces over the last axis alone of an input with
  /// several rows (a [64, 32] value's row sums).
  static bool reducesRows(Operation *op) {
    if (!overLastAxis(op))
      return false;
    auto type = dyn_cast<RankedTensorType>(op->getOperand(0).getType());
    if (!type || !type.hasStaticShape())
      return false;
    int64_t rows = 1;
    for (int64_t d : type.getShape().drop_back())
      rows *= d;
    return rows >= 2;
  }

  /// The most ops outputMayMove looks at.
  static constexpr int kOutputMoveLookAhead = 64;

  /// Whether `user`, an output of a result of `target` that stands before
  /// `to`, may move to just after a kernel standing at `to` (materialize()
  /// moves it): no other output stands between them, but outputs of
  /// `target`'s results, which move too, in their order (the graph's
  /// outputs keep their order). An index check's count is an output right
  /// after its kernel, which kept the checks' kernels apart.
  static bool outputMayMove(Operation *user, const Group &target, Operation *to,
                            const DenseMap<Operation *, Group *> &groupOf) {
    if (!isa<OutputOp>(user) || !user->isBeforeInBlock(to))
      return false;
    int seen = 0;
    for (Operation *op = user->getNextNode(); op != to;
         op = op->getNextNode()) {
      if (!op || ++seen > kOutputMoveLookAhead)
        return false;
      auto output = dyn_cast<OutputOp>(op);
      Operation *def = output ? output.getValue().getDefiningOp() : nullptr;
      if (output && (!def || groupOf.lookup(def) != &target))
        return false;
    }
    return true;
  }

  /// The kernels that join open sibling kernels at most, looking back.
  static constexpr size_t kSiblingsLookBack = 8;

  /// On a GPU, kernels that only move data, compute elementwise or reduce
  /// (sharesLaunchOnGpu) and do not depend on each other join one kernel,
  /// which --locus-map-to-gpu runs side by side in one launch: attention's
  /// q, k and v split into heads were three launches of a few hundred
  /// elements each, and a layer's bias gradients a launch each. A kernel joins
  /// an earlier one when every reader of the earlier one's results stands after
  /// it, or stands in a kernel whose root does, or in that earlier kernel, or
  /// is an output that may move (so no path leads from one to the other, and
  /// the joined kernel, which stands where the later one stood, comes before
  /// every reader). A kernel whose results a locus.assign writes joins none
  /// that reads those states.
  void mergeSiblings(std::vector<std::unique_ptr<Group>> &groups,
                     DenseMap<Operation *, Group *> &groupOf) {
    // A kernel whose results a locus.assign writes joins only kernels
    // that do not read those states (statesApart).
    SmallVector<Group *> order;
    for (auto &g : groups)
      if (!g->ops.empty() && sharesLaunchOnGpu(*g))
        order.push_back(g.get());
    llvm::sort(order, [](Group *a, Group *b) {
      return a->root->isBeforeInBlock(b->root);
    });
    SmallVector<Group *> open;
    for (Group *g : order) {
      llvm::SmallPtrSet<Operation *, 8> inside(g->ops.begin(), g->ops.end());
      // A reader in a kernel stands where its kernel will (its root): a
      // reshape that joined its reader's kernel reads there.
      // (A reader in the target itself reads there: a row kernel's
      // other root that its own ops read. An output moves after the
      // joined kernel: see outputMayMove.)
      auto readAfter = [&](Group *target, Operation *root) {
        return llvm::all_of(root->getUsers(), [&](Operation *user) {
          return inside.contains(user) || groupOf.lookup(user) == target ||
                 isa<AssignOp>(user) ||
                 g->root->isBeforeInBlock(standsAt(user, groupOf)) ||
                 outputMayMove(user, *target, g->root, groupOf);
        });
      };
      auto joins = [&](Group *target) {
        return target->device == g->device &&
               static_cast<int64_t>(target->ops.size() + g->ops.size()) <=
                   maxOps &&
               buffersOf(*target) + buffersOf(*g) <= kMaxStepBuffers &&
               statesApart(*target, *g) && readAfter(target, target->root) &&
               llvm::all_of(target->otherRoots, [&](Operation *root) {
                 return readAfter(target, root);
               });
      };
      Group *into = nullptr;
      for (size_t k = 1; k <= std::min(open.size(), kSiblingsLookBack); ++k)
        if (joins(open[open.size() - k])) {
          into = open[open.size() - k];
          break;
        }
      if (!into) {
        open.push_back(g);
        continue;
      }
      LLVM_DEBUG(llvm::dbgs()
                 << "[" DEBUG_TYPE "] " << g->root->getName() << " at "
                 << g->root->getLoc() << " runs side by side with "
                 << into->root->getName() << " at " << into->root->getLoc()
                 << "\n");
      into->otherRoots.push_back(into->root);
      into->root = g->root;
      mergeInto(*g, *into, groupOf);
    }
  }

  static DeviceAttr deviceOf(Operation *op) { return placedOrCpu(op); }

  /// Whether every reader of `g`'s other roots' results outside `g` stands
  /// after `op` (or is `op`).
  static bool
  otherRootsReadAfter(const Group &g, Operation &op,
                      const DenseMap<Operation *, Group *> &groupOf) {
    return llvm::all_of(g.otherRoots, [&](Operation *r) {
      return llvm::all_of(r->getUsers(), [&](Operation *user) {
        return readAfter(op, g, user, groupOf);
      });
    });
  }

  /// Whether `user`, a reader of a result of `g`'s roots, stands where
  /// `g`'s kernel may move to `op`: it is `op`, in `g`, after `op`, or an
  /// assign (which materialize() moves after the kernel).
  static bool readAfter(Operation &op, const Group &g, Operation *user,
                        const DenseMap<Operation *, Group *> &groupOf) {
    return user == &op || groupOf.lookup(user) == &g || isa<AssignOp>(user) ||
           op.isBeforeInBlock(user);
  }

  /// Whether `op` may join `g`, one of whose roots (`producer`) other ops
  /// read too, the roots' results staying the kernel's, when no reader of
  /// them stands before `op`:
  /// - `producer` has several results (a batch norm's input gradient,
  ///   rounded, beside its weight and bias gradients; the updates of its
  ///   running statistics and the ReLU after it);
  /// - or `op` rounds the value to 16 bits (a softmax's probabilities,
  ///   which a product reads in bf16 and the backward in f32);
  /// - or `producer` is a root of `g` already, but not its last one.
  static bool joinsThroughRoot(Operation &op, const Group &g,
                               Operation *producer,
                               const DenseMap<Operation *, Group *> &groupOf) {
    // The kernel's root becomes another root too.
    auto readLater = [&](Operation *root) {
      return llvm::all_of(root->getUsers(), [&](Operation *user) {
        return readAfter(op, g, user, groupOf);
      });
    };
    if (!readLater(producer) || !readLater(g.root))
      return false;
    return narrows(&op) || producer->getNumResults() > 1 || producer != g.root;
  }

  /// Moves the group's ops, in graph order, into a locus.kernel at the
  /// root's position; the roots' results (several for an optimizer step)
  /// become the kernel's. Assigns of other roots' results that stand
  /// before the kernel move right after it.
  void materialize(Group &group) {
    llvm::sort(group.ops, [](Operation *a, Operation *b) {
      return a->isBeforeInBlock(b);
    });
    Operation *root = group.root;
    llvm::SmallPtrSet<Operation *, 16> members(group.ops.begin(),
                                               group.ops.end());
    // A result of another root that only ops of the kernel read (side by
    // side kernels where one read the other's result, a result an
    // epilogue rounds) is no result of the kernel.
    SmallVector<Operation *> roots(group.otherRoots);
    roots.push_back(root);
    SmallVector<Value> yielded;
    for (Operation *r : roots)
      for (Value result : r->getResults())
        if (r == root || llvm::any_of(result.getUsers(), [&](Operation *user) {
              return !members.contains(user);
            }))
          yielded.push_back(result);
    SmallVector<Type> types(ValueRange(yielded).getTypes());
    OpBuilder builder(root);
    SmallVector<Location> locs;
    for (Operation *op : group.ops)
      locs.push_back(op->getLoc());
    auto kernel = builder.create<KernelOp>(builder.getFusedLoc(locs), types,
                                           group.device);
    Block *block = new Block();
    kernel.getBody().push_back(block);
    Operation *after = kernel;
    for (Operation *r : roots)
      for (Operation *user : llvm::make_early_inc_range(r->getUsers()))
        if (isa<AssignOp>(user) && user->isBeforeInBlock(kernel)) {
          user->moveAfter(after);
          after = user;
        }
    // So do outputs of their results (an index check's count), in their
    // order: mergeSiblings let none move past another output.
    SmallVector<Operation *> outputs;
    for (Operation *r : roots)
      for (Operation *user : r->getUsers())
        if (isa<OutputOp>(user) && user->isBeforeInBlock(kernel) &&
            !llvm::is_contained(outputs, user))
          outputs.push_back(user);
    llvm::sort(outputs, [](Operation *a, Operation *b) {
      return a->isBeforeInBlock(b);
    });
    for (Operation *output : outputs) {
      output->moveAfter(after);
      after = output;
    }
    // Ops of the kernel read another root's result directly (side by side
    // kernels where one reads the other's result).
    for (auto [value, result] : llvm::zip(yielded, kernel.getResults()))
      value.replaceUsesWithIf(result, [&](OpOperand &use) {
        return !members.contains(use.getOwner());
      });
    for (Operation *op : group.ops)
      op->moveBefore(block, block->end());
    builder.setInsertionPointToEnd(block);
    builder.create<YieldOp>(root->getLoc(), yielded);
  }
};

} // namespace
