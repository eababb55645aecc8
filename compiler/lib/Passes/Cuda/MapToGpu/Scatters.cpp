//===- Scatters.cpp - scatter-adds of --locus-map-to-gpu ------------------===//
//
// The loops --locus-lower-to-linalg makes of locus.gather_grad (marked
// locus.scatter_add): one iteration per element of a gradient, adding it
// into the result at its index. On a GPU each iteration is a thread, and
// its add an atomic one, since two elements may land on one place.
//
//===----------------------------------------------------------------------===//

#include "Emitter.h"

#include "locus/Dialect/DynamicDims.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

#include <functional>

namespace locus::gpu_mapping {

namespace {

/// The memref and the added value of `store` when it stores
/// `addf(load(m[i]), x)` into m[i] (either operand order), or none.
std::optional<Value> addedBy(memref::StoreOp store) {
  auto add = store.getValue().getDefiningOp<arith::AddFOp>();
  if (!add)
    return std::nullopt;
  for (unsigned k = 0; k < 2; ++k) {
    auto load = add->getOperand(k).getDefiningOp<memref::LoadOp>();
    if (load && load.getMemRef() == store.getMemRef() &&
        load.getIndices() == store.getIndices())
      return add->getOperand(1 - k);
  }
  return std::nullopt;
}

/// Whether `loop` is what --locus-lower-to-linalg makes of a gather's
/// gradient, bufferized: from 0 by 1 to a constant count, no results, and
/// a body of arithmetic, loads, scf.if and at least one store, every store
/// an add into what it loads. Says why not at the loop, changing nothing.
FailureOr<int64_t> scatterCount(scf::ForOp loop) {
  if (loop.getNumRegionIterArgs() != 0)
    return loop.emitOpError("is a scatter-add that still carries values; "
                            "it needs bufferized IR");
  std::optional<int64_t> from = getConstantIntValue(loop.getLowerBound());
  std::optional<int64_t> step = getConstantIntValue(loop.getStep());
  std::optional<int64_t> to = getConstantIntValue(loop.getUpperBound());
  if (from != 0 || step != 1 || !to)
    return loop.emitOpError("is a scatter-add of no static extent; it has "
                            "no CUDA lowering");
  int64_t adds = 0;
  WalkResult body = loop.getBody()->walk([&](Operation *op) {
    if (auto store = dyn_cast<memref::StoreOp>(op)) {
      if (!addedBy(store))
        return WalkResult::interrupt();
      ++adds;
      return WalkResult::advance();
    }
    bool known = isa<memref::LoadOp, scf::IfOp, scf::YieldOp>(op) ||
                 isa_and_nonnull<arith::ArithDialect>(op->getDialect());
    return known ? WalkResult::advance() : WalkResult::interrupt();
  });
  if (body.wasInterrupted() || adds == 0)
    return loop.emitOpError("is no scatter-add: its threads would race "
                            "(its body must add into what it loads, and "
                            "only that)");
  return *to;
}

/// Each store of `addf(load(m[i]), x)` into m[i] in `region` becomes an
/// atomic add of x to m[i] (scatterCount checked that every store is one).
void atomicAdds(Region &region) {
  SmallVector<memref::StoreOp> stores;
  region.walk([&](memref::StoreOp store) { stores.push_back(store); });
  for (memref::StoreOp store : stores) {
    Value added = addedBy(store).value_or(Value());
    auto add = store.getValue().getDefiningOp<arith::AddFOp>();
    OpBuilder b(store);
    b.create<memref::AtomicRMWOp>(store.getLoc(), arith::AtomicRMWKind::addf,
                                  added, store.getMemRef(), store.getIndices());
    store.erase();
    SmallVector<Operation *> loads;
    for (Value v : add->getOperands())
      if (Operation *def = v.getDefiningOp();
          isa_and_nonnull<memref::LoadOp>(def))
        loads.push_back(def);
    if (add->use_empty())
      add.erase();
    for (Operation *load : loads)
      if (load->use_empty())
        load->erase();
  }
}

/// Whether the launch can make `v` again itself: a constant, a constant
/// buffer (a global: the kernel module gets its own copy, where the host's
/// address would mean nothing on the GPU), or a view of one.
bool remakeable(Value v) {
  Operation *def = v.getDefiningOp();
  if (!def)
    return false;
  if (def->hasTrait<mlir::OpTrait::ConstantLike>() ||
      isa<memref::GetGlobalOp>(def))
    return true;
  return isa<ViewLikeOpInterface>(def) &&
         llvm::all_of(def->getOperands(), remakeable);
}

/// The constants, constant buffers and their views `launch` reads from
/// outside are made again inside it.
void sinkConstants(gpu::LaunchOp launch) {
  Block &body = launch.getBody().front();
  OpBuilder b(&body, body.begin());
  IRMapping made;
  std::function<Value(Value)> remake = [&](Value v) -> Value {
    if (Value m = made.lookupOrNull(v))
      return m;
    Operation *def = v.getDefiningOp();
    for (Value operand : def->getOperands())
      remake(operand);
    Operation *copy = b.clone(*def, made);
    for (auto [from, to] : llvm::zip(def->getResults(), copy->getResults()))
      made.map(from, to);
    return made.lookup(v);
  };
  launch.getBody().walk([&](Operation *op) {
    for (OpOperand &operand : op->getOpOperands()) {
      Operation *def = operand.get().getDefiningOp();
      if (def && !launch->isAncestor(def) && remakeable(operand.get()))
        operand.set(remake(operand.get()));
    }
  });
}

/// `loop` (checked by scatterCount) as one launch of a thread for each of
/// its `count` iterations.
LogicalResult mapScatterAdd(scf::ForOp loop, int64_t count, bool explain) {
  OpBuilder b(loop);
  Location loc = loop.getLoc();
  int64_t blocks = (count + kBlock - 1) / kBlock;
  if (blocks > kMaxGrid)
    return loop.emitOpError("adds ")
           << count << " elements, more than one launch's threads";
  auto index = [&](int64_t v) {
    return b.create<arith::ConstantIndexOp>(loc, v).getResult();
  };
  Value one = index(1);
  auto launch = b.create<gpu::LaunchOp>(loc, index(blocks), one, one,
                                        index(kBlock), one, one);
  b.setInsertionPointToStart(&launch.getBody().front());
  Value at = b.create<arith::AddIOp>(
      loc, b.create<arith::MulIOp>(loc, launch.getBlockIds().x, index(kBlock)),
      launch.getThreadIds().x);
  Value mine =
      b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::ult, at, index(count));
  auto guard = b.create<scf::IfOp>(loc, mine, /*withElseRegion=*/false);
  b.create<gpu::TerminatorOp>(loc);
  // The loop's body, its yield dropped, runs at the thread's iteration.
  Block *body = loop.getBody();
  body->getTerminator()->erase();
  loop.getInductionVar().replaceAllUsesWith(at);
  Block &then = guard.getThenRegion().front();
  then.getOperations().splice(then.begin(), body->getOperations());
  sinkConstants(launch);
  atomicAdds(guard.getThenRegion());
  if (explain)
    loop.emitRemark() << "a scatter-add: one thread for each of " << count
                      << " gradient elements, each added atomically at its "
                         "index";
  loop.erase();
  return success();
}

} // namespace

FailureOr<int64_t> mapScatterAdds(func::FuncOp func, bool explain) {
  SmallVector<scf::ForOp> loops;
  func.walk([&](scf::ForOp loop) {
    if (loop->hasAttr(kScatterAddAttrName))
      loops.push_back(loop);
  });
  int64_t launches = 0;
  for (scf::ForOp loop : loops) {
    FailureOr<int64_t> count = scatterCount(loop);
    if (failed(count))
      return failure();
    int64_t iterations = count.value_or(0);
    if (iterations == 0) {
      loop.erase();
      continue;
    }
    if (failed(mapScatterAdd(loop, iterations, explain)))
      return failure();
    ++launches;
  }
  return launches;
}

} // namespace locus::gpu_mapping
