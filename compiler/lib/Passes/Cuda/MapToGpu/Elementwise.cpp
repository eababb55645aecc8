//===- Elementwise.cpp - parallel ops
//---------------------------------------===//
//
// The parallel ops of --locus-map-to-gpu: plain elementwise ops as flat
// buffers, four consecutive elements a thread; any other, a thread per
// point of the iteration space.
//
//===----------------------------------------------------------------------===//

#include "Emitter.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

namespace locus::gpu_mapping {

void Emitter::emitParallel(OpBuilder &b) {
  OpBuilder::InsertionGuard guard(b);
  SmallVector<Value> loops;
  threadPerRow(b, loops);
  SmallVector<Value> results = body(b, operandsAt(b, loops), loops);
  unsigned inputs = op.getNumDpsInputs();
  for (auto [k, v] : llvm::enumerate(results))
    store(b, v, inputs + k, loops);
}

bool Emitter::plainElementwise() {
  if (ranges.empty() || !op.getRegion().getOps<linalg::IndexOp>().empty())
    return false;
  for (OpOperand &operand : op->getOpOperands()) {
    const Access &a = accesses[operand.getOperandNumber()];
    if (a.scalar)
      continue;
    // With dynamic extents every buffer must be a contiguous view at the
    // run's sizes: a buffer of static shape is laid out by the bound's.
    bool dynamic = runRows || runCols;
    if ((a.flat && !a.contiguous) || (dynamic && !a.contiguous) || a.global ||
        !op.getMatchingIndexingMap(&operand).isIdentity())
      return false;
  }
  return true;
}

Value Emitter::flatView(OpBuilder &b, Value memref) {
  auto type = cast<MemRefType>(memref.getType());
  if (type.getRank() == 1)
    return memref;
  SmallVector<ReassociationIndices> all(1);
  for (int64_t d = 0; d < type.getRank(); ++d)
    all.front().push_back(d);
  return b.create<memref::CollapseShapeOp>(loc, memref, all);
}

SmallVector<Value> Emitter::flatViews(OpBuilder &b) {
  SmallVector<Value> flat;
  for (const Access &a : accesses)
    flat.push_back(a.scalar ? a.memref : flatView(b, a.memref));
  return flat;
}

void Emitter::emitFlatParallel(OpBuilder &b) {
  SmallVector<Value> flat = flatViews(b);
  OpBuilder::InsertionGuard guard(b);
  gpu::LaunchOp l = launch(b, gridFor(b, kPerThread * kBlock), kBlock);
  assumeAligned(b, flat);
  flatThread(b, flat, globalId(b, l, kBlock));
}

void Emitter::assumeAligned(OpBuilder &b, ArrayRef<Value> flat) {
  for (auto [a, v] : llvm::zip(accesses, flat))
    if (!a.scalar)
      b.create<memref::AssumeAlignmentOp>(loc, v, 16);
}

int64_t Emitter::blocksSideBySide() {
  auto over = [](int64_t count, int64_t per) {
    return (count + per - 1) / per;
  };
  const Choice &c = sharedChoice();
  switch (c.strategy) {
  case Strategy::flatElementwise:
    return over(over(rows, kPerThread), kBlock);
  case Strategy::columnLanes:
    return over(rows, kBlock / c.splits);
  case Strategy::rowWarp:
    return over(rows, kBlock / 32);
  default: // a thread per element or per output
    return over(rows, kBlock);
  }
}

SmallVector<Value> Emitter::sideBySideViews(OpBuilder &b) {
  return sharedChoice().strategy == Strategy::flatElementwise
             ? flatViews(b)
             : SmallVector<Value>();
}

void Emitter::emitSideBySide(OpBuilder &b, Value blockId, Value tid,
                             ArrayRef<Value> views) {
  OpBuilder::InsertionGuard guard(b);
  cloneGlobals(b);
  const Choice &c = sharedChoice();
  // choose() takes these two for a one-combiner reduction only.
  Combiner combiner = sharedCombiner.value_or(Combiner{});
  if (c.strategy == Strategy::columnLanes)
    return columnLanesShare(b, combiner, c.splits, blockId, tid);
  if (c.strategy == Strategy::rowWarp)
    return warpShare(b, combiner, blockId, tid);
  assumeAligned(b, views);
  Value id = b.create<arith::AddIOp>(
      loc, b.create<arith::MulIOp>(loc, blockId, index(b, kBlock)), tid);
  if (!views.empty())
    return flatThread(b, views, id);
  guardBelow(b, id, rows);
  SmallVector<Value> loops(ranges.size(), index(b, 0));
  delinearize(b, id, parallelDims, loops);
  if (!reductionDims.empty())
    return foldRow(b, loops);
  SmallVector<Value> results = body(b, operandsAt(b, loops), loops);
  unsigned inputs = op.getNumDpsInputs();
  for (auto [k, v] : llvm::enumerate(results))
    store(b, v, inputs + k, loops);
}

void Emitter::flatThread(OpBuilder &b, ArrayRef<Value> flat, Value id) {
  Value base = b.create<arith::MulIOp>(loc, id, index(b, kPerThread));
  Value whole = b.create<arith::CmpIOp>(
      loc, arith::CmpIPredicate::ule,
      b.create<arith::AddIOp>(loc, base, index(b, kPerThread)), rowsAt(b));
  auto branch = b.create<scf::IfOp>(loc, whole, /*withElseRegion=*/true);
  b.setInsertionPointToStart(&branch.getThenRegion().front());
  wholeElements(b, flat, base);
  b.setInsertionPointToStart(&branch.getElseRegion().front());
  flatElements(b, flat, base, /*checked=*/true);
}

void Emitter::wholeElements(OpBuilder &b, ArrayRef<Value> flat, Value base) {
  SmallVector<Value> at;
  for (int64_t k = 0; k < kPerThread; ++k)
    at.push_back(k ? b.create<arith::AddIOp>(loc, base, index(b, k)) : base);
  SmallVector<SmallVector<Value>> args(kPerThread);
  for (OpOperand &operand : op->getOpOperands()) {
    unsigned i = operand.getOperandNumber();
    bool used = !op.getMatchingBlockArgument(&operand).use_empty();
    for (int64_t k = 0; k < kPerThread; ++k)
      args[k].push_back(
          !used ? Value()
          : accesses[i].scalar
              ? flat[i]
              : b.create<memref::LoadOp>(loc, flat[i], at[k]).getResult());
  }
  SmallVector<SmallVector<Value>> results;
  for (int64_t k = 0; k < kPerThread; ++k)
    results.push_back(body(b, args[k], {}));
  unsigned inputs = op.getNumDpsInputs();
  for (unsigned r = 0; r < op.getNumDpsInits(); ++r)
    for (int64_t k = 0; k < kPerThread; ++k)
      b.create<memref::StoreOp>(loc, results[k][r], flat[inputs + r], at[k]);
}

void Emitter::flatElements(OpBuilder &b, ArrayRef<Value> flat, Value base,
                           bool checked) {
  OpBuilder::InsertionGuard guard(b);
  auto loop =
      b.create<scf::ForOp>(loc, index(b, 0), index(b, kPerThread), index(b, 1));
  b.setInsertionPointToStart(loop.getBody());
  Value at = b.create<arith::AddIOp>(loc, base, loop.getInductionVar());
  if (checked)
    guardBelow(b, at, rowsAt(b));
  SmallVector<Value> args;
  for (OpOperand &operand : op->getOpOperands()) {
    unsigned i = operand.getOperandNumber();
    if (op.getMatchingBlockArgument(&operand).use_empty())
      args.push_back(Value());
    else if (accesses[i].scalar)
      args.push_back(flat[i]);
    else
      args.push_back(b.create<memref::LoadOp>(loc, flat[i], at));
  }
  unsigned inputs = op.getNumDpsInputs();
  for (auto [k, v] : llvm::enumerate(body(b, args, {})))
    b.create<memref::StoreOp>(loc, v, flat[inputs + k], at);
}

} // namespace locus::gpu_mapping
