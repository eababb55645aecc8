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

namespace locus::gpu_mapping {

namespace {

/// The iterations of `loop`: from 0 by 1 to a constant end, or none.
std::optional<int64_t> iterations(scf::ForOp loop) {
  std::optional<int64_t> from = getConstantIntValue(loop.getLowerBound());
  std::optional<int64_t> step = getConstantIntValue(loop.getStep());
  std::optional<int64_t> to = getConstantIntValue(loop.getUpperBound());
  if (from != 0 || step != 1 || !to || loop.getNumRegionIterArgs() != 0)
    return std::nullopt;
  return to;
}

/// Each `store(addf(load(m[i]), x), m[i])` in `region` becomes an atomic
/// add of x to m[i]; returns how many.
int64_t atomicAdds(Region &region) {
  SmallVector<memref::StoreOp> stores;
  region.walk([&](memref::StoreOp store) { stores.push_back(store); });
  int64_t made = 0;
  for (memref::StoreOp store : stores) {
    auto add = store.getValue().getDefiningOp<arith::AddFOp>();
    if (!add)
      continue;
    for (unsigned k = 0; k < 2; ++k) {
      auto load = add->getOperand(k).getDefiningOp<memref::LoadOp>();
      if (!load || load.getMemRef() != store.getMemRef() ||
          load.getIndices() != store.getIndices())
        continue;
      OpBuilder b(store);
      b.create<memref::AtomicRMWOp>(store.getLoc(), arith::AtomicRMWKind::addf,
                                    add->getOperand(1 - k), store.getMemRef(),
                                    store.getIndices());
      store.erase();
      if (add->use_empty())
        add.erase();
      if (load->use_empty())
        load.erase();
      ++made;
      break;
    }
  }
  return made;
}

/// Constants `launch` reads from outside are made again inside it: the
/// kernel's divisions by the gradient's sizes then stay multiplications,
/// not divisions by a parameter.
void sinkConstants(gpu::LaunchOp launch) {
  Block &body = launch.getBody().front();
  OpBuilder b(&body, body.begin());
  IRMapping made;
  launch.getBody().walk([&](Operation *op) {
    for (OpOperand &operand : op->getOpOperands()) {
      Operation *def = operand.get().getDefiningOp();
      if (!def || !def->hasTrait<mlir::OpTrait::ConstantLike>() ||
          launch->isAncestor(def))
        continue;
      if (!made.contains(operand.get()))
        made.map(operand.get(), b.clone(*def)->getResult(0));
      operand.set(made.lookup(operand.get()));
    }
  });
}

/// `loop` as one launch of a thread per iteration.
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
  if (atomicAdds(guard.getThenRegion()) == 0)
    return loop.emitOpError("adds nothing into its result; it is no "
                            "scatter-add");
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
  for (scf::ForOp loop : loops) {
    std::optional<int64_t> count = iterations(loop);
    if (!count)
      return loop.emitOpError("is a scatter-add of no static extent; it has "
                              "no CUDA lowering");
    if (*count == 0) {
      loop.erase();
      continue;
    }
    if (failed(mapScatterAdd(loop, *count, explain)))
      return failure();
  }
  return static_cast<int64_t>(loops.size());
}

} // namespace locus::gpu_mapping
