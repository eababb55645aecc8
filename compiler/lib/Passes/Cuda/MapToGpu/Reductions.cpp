//===- Reductions.cpp - reduction strategies
//--------------------------------===//
//
// The reduction strategies of --locus-map-to-gpu (Emitter::choose picks
// one): a thread per output over columns, split over a few lanes of a
// warp or over grid.y when the outputs are few; a block, a warp or several
// blocks per output over rows; a thread per output, looping, for any other
// reduction.
//
//===----------------------------------------------------------------------===//

#include "Emitter.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

namespace locus::gpu_mapping {

bool Emitter::columnWise() const {
  return !parallelDims.empty() &&
         parallelDims.back() == static_cast<unsigned>(ranges.size() - 1);
}

int64_t Emitter::splitsOf() const {
  if (rows >= kFillBlocks || cols < 2 * kMinSplit)
    return 1;
  int64_t byFill = (kFillBlocks + rows - 1) / rows;
  int64_t bySize = cols / kMinSplit;
  return std::min(byFill, bySize);
}

Value Emitter::foldBlock(OpBuilder &b, const Combiner &c, ArrayRef<Value> loops,
                         Value first, Value end, int64_t block) {
  return b
      .create<gpu::AllReduceOp>(
          loc, foldStrided(b, c, loops, first, end, block),
          gpu::AllReduceOperationAttr::get(b.getContext(), c.kind), true)
      .getResult();
}

Value Emitter::foldStrided(OpBuilder &b, const Combiner &c,
                           ArrayRef<Value> loops, Value first, Value end,
                           int64_t step) {
  Value identity = b.create<arith::ConstantOp>(loc, c.identity);
  auto loop = b.create<scf::ForOp>(loc, first, end, index(b, step),
                                   ValueRange{identity});
  {
    OpBuilder::InsertionGuard inner(b);
    b.setInsertionPointToStart(loop.getBody());
    SmallVector<Value> at(loops.begin(), loops.end());
    delinearize(b, loop.getInductionVar(), reductionDims, at);
    SmallVector<Value> args;
    for (unsigned i = 0; i < op.getNumDpsInputs(); ++i)
      args.push_back(
          op.getRegion().getArgument(i).use_empty() ? Value() : load(b, i, at));
    args.push_back(loop.getRegionIterArg(0));
    SmallVector<Value> next = body(b, args, at);
    b.create<scf::YieldOp>(loc, next);
  }
  return loop.getResult(0);
}

Value Emitter::combine(OpBuilder &b, const Combiner &c, Value acc,
                       Value value) {
  return cloneCombiner(b, op, c, acc, value);
}

void Emitter::finish(OpBuilder &b, const Combiner &c, ArrayRef<Value> loops,
                     Value tid, Value value) {
  Value first =
      b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::eq, tid, index(b, 0));
  auto write = b.create<scf::IfOp>(loc, first, false);
  b.setInsertionPointToStart(&write.getThenRegion().front());
  unsigned out = op.getNumDpsInputs();
  store(b, combine(b, c, initial(b, 0, loops), value), out, loops);
}

int64_t Emitter::blockFor(int64_t count) {
  int64_t block = 32;
  while (block < kBlock && block < count)
    block *= 2;
  return block;
}

void Emitter::emitBlockReduction(OpBuilder &b, const Combiner &c) {
  int64_t block = blockFor(cols);
  OpBuilder::InsertionGuard guard(b);
  gpu::LaunchOp l = launch(b, gridFor(b, 1), block);
  Value tid = l.getThreadIds().x;
  // Reduction dimensions are 0 where the output is addressed (its map
  // does not use them).
  SmallVector<Value> loops(ranges.size(), index(b, 0));
  delinearize(b, l.getBlockIds().x, parallelDims, loops);
  Value all = foldBlock(b, c, loops, tid, colsAt(b), block);
  finish(b, c, loops, tid, all);
}

void Emitter::emitSplitReduction(OpBuilder &b, const Combiner &c,
                                 int64_t splits) {
  int64_t share = (cols + splits - 1) / splits;
  splits = (cols + share - 1) / share; // no empty share
  Type element = op.getRegionOutputArgs().front().getType();
  Value partials =
      b.create<memref::AllocOp>(loc, MemRefType::get({rows * splits}, element));
  {
    OpBuilder::InsertionGuard guard(b);
    gpu::LaunchOp l = launch(b, gridFor(b, 1, splits), kBlock);
    Value id = l.getBlockIds().x, tid = l.getThreadIds().x;
    Value row = b.create<arith::DivUIOp>(loc, id, index(b, splits));
    Value part = b.create<arith::RemUIOp>(loc, id, index(b, splits));
    SmallVector<Value> loops(ranges.size(), index(b, 0));
    delinearize(b, row, parallelDims, loops);
    Value begin = b.create<arith::MulIOp>(loc, part, index(b, share));
    Value end = b.create<arith::MinUIOp>(
        loc, b.create<arith::AddIOp>(loc, begin, index(b, share)), colsAt(b));
    Value all = foldBlock(b, c, loops, b.create<arith::AddIOp>(loc, begin, tid),
                          end, kBlock);
    Value first = b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::eq, tid,
                                          index(b, 0));
    auto write = b.create<scf::IfOp>(loc, first, false);
    b.setInsertionPointToStart(&write.getThenRegion().front());
    b.create<memref::StoreOp>(loc, all, partials, id);
  }
  {
    OpBuilder::InsertionGuard guard(b);
    int64_t block = blockFor(splits);
    gpu::LaunchOp l = launch(b, gridFor(b, 1), block);
    Value row = l.getBlockIds().x, tid = l.getThreadIds().x;
    SmallVector<Value> loops(ranges.size(), index(b, 0));
    delinearize(b, row, parallelDims, loops);
    Value identity = b.create<arith::ConstantOp>(loc, c.identity);
    Value base = b.create<arith::MulIOp>(loc, row, index(b, splits));
    auto loop = b.create<scf::ForOp>(loc, tid, index(b, splits),
                                     index(b, block), ValueRange{identity});
    {
      OpBuilder::InsertionGuard inner(b);
      b.setInsertionPointToStart(loop.getBody());
      Value at = b.create<arith::AddIOp>(loc, base, loop.getInductionVar());
      Value p = b.create<memref::LoadOp>(loc, partials, at);
      b.create<scf::YieldOp>(loc, combine(b, c, loop.getRegionIterArg(0), p));
    }
    Value all = b.create<gpu::AllReduceOp>(
        loc, loop.getResult(0),
        gpu::AllReduceOperationAttr::get(b.getContext(), c.kind), true);
    finish(b, c, loops, tid, all);
  }
  b.create<memref::DeallocOp>(loc, partials);
}

void Emitter::emitWarpReduction(OpBuilder &b, const Combiner &c) {
  OpBuilder::InsertionGuard guard(b);
  gpu::LaunchOp l = launch(b, gridFor(b, kBlock / 32), kBlock);
  warpShare(b, c, l.getBlockIds().x, l.getThreadIds().x);
}

void Emitter::warpShare(OpBuilder &b, const Combiner &c, Value blockId,
                        Value tid) {
  constexpr int64_t warps = kBlock / 32;
  Value lane = b.create<arith::RemUIOp>(loc, tid, index(b, 32));
  Value row = b.create<arith::AddIOp>(
      loc, b.create<arith::MulIOp>(loc, blockId, index(b, warps)),
      b.create<arith::DivUIOp>(loc, tid, index(b, 32)));
  guardBelow(b, row, rowsAt(b));
  SmallVector<Value> loops(ranges.size(), index(b, 0));
  delinearize(b, row, parallelDims, loops);
  Value partial = foldStrided(b, c, loops, lane, colsAt(b), 32);
  for (int32_t offset = 16; offset >= 1; offset /= 2) {
    Value other = b.create<gpu::ShuffleOp>(loc, partial, offset, 32,
                                           gpu::ShuffleMode::XOR)
                      .getShuffleResult();
    partial = combine(b, c, partial, other);
  }
  finish(b, c, loops, lane, partial);
}

void Emitter::emitColumnSplit(OpBuilder &b, const Combiner &c, int64_t splits,
                              int64_t share) {
  Type element = op.getRegionOutputArgs().front().getType();
  Value partials =
      b.create<memref::AllocOp>(loc, MemRefType::get({rows * splits}, element));
  {
    OpBuilder::InsertionGuard guard(b);
    gpu::LaunchOp l = launch(b, gridFor(b, kBlock), kBlock, splits);
    Value id = globalId(b, l, kBlock);
    guardBelow(b, id, rowsAt(b));
    SmallVector<Value> loops(ranges.size(), index(b, 0));
    delinearize(b, id, parallelDims, loops);
    Value part = l.getBlockIds().y;
    Value begin = b.create<arith::MulIOp>(loc, part, index(b, share));
    Value end = b.create<arith::MinUIOp>(
        loc, b.create<arith::AddIOp>(loc, begin, index(b, share)), colsAt(b));
    Value folded = foldStrided(b, c, loops, begin, end, 1);
    Value at = b.create<arith::AddIOp>(
        loc, b.create<arith::MulIOp>(loc, part, index(b, rows)), id);
    b.create<memref::StoreOp>(loc, folded, partials, at);
  }
  {
    OpBuilder::InsertionGuard guard(b);
    SmallVector<Value> loops;
    Value id = threadPerRow(b, loops);
    unsigned out = op.getNumDpsInputs();
    auto loop =
        b.create<scf::ForOp>(loc, index(b, 0), index(b, splits), index(b, 1),
                             ValueRange{initial(b, 0, loops)});
    {
      OpBuilder::InsertionGuard inner(b);
      b.setInsertionPointToStart(loop.getBody());
      Value at = b.create<arith::AddIOp>(
          loc,
          b.create<arith::MulIOp>(loc, loop.getInductionVar(), index(b, rows)),
          id);
      Value p = b.create<memref::LoadOp>(loc, partials, at);
      b.create<scf::YieldOp>(loc, combine(b, c, loop.getRegionIterArg(0), p));
    }
    store(b, loop.getResult(0), out, loops);
  }
  b.create<memref::DeallocOp>(loc, partials);
}

void Emitter::emitColumnLanes(OpBuilder &b, const Combiner &c, int64_t lanes) {
  OpBuilder::InsertionGuard guard(b);
  gpu::LaunchOp l = launch(b, gridFor(b, kBlock / lanes), kBlock);
  columnLanesShare(b, c, lanes, l.getBlockIds().x, l.getThreadIds().x);
}

void Emitter::columnLanesShare(OpBuilder &b, const Combiner &c, int64_t lanes,
                               Value blockId, Value tid) {
  int64_t perWarp = 32 / lanes, perBlock = kBlock / lanes;
  Value lane = b.create<arith::RemUIOp>(loc, tid, index(b, 32));
  Value share = b.create<arith::DivUIOp>(loc, lane, index(b, perWarp));
  Value inWarp = b.create<arith::AddIOp>(
      loc,
      b.create<arith::MulIOp>(loc,
                              b.create<arith::DivUIOp>(loc, tid, index(b, 32)),
                              index(b, perWarp)),
      b.create<arith::RemUIOp>(loc, lane, index(b, perWarp)));
  Value output = b.create<arith::AddIOp>(
      loc, b.create<arith::MulIOp>(loc, blockId, index(b, perBlock)), inWarp);
  Value last = b.create<arith::SubIOp>(loc, rowsAt(b), index(b, 1));
  SmallVector<Value> loops(ranges.size(), index(b, 0));
  delinearize(b, b.create<arith::MinUIOp>(loc, output, last), parallelDims,
              loops);
  Value partial = foldStrided(b, c, loops, share, colsAt(b), lanes);
  for (int64_t offset = perWarp; offset < 32; offset *= 2) {
    Value other = b.create<gpu::ShuffleOp>(loc, partial, offset, 32,
                                           gpu::ShuffleMode::XOR)
                      .getShuffleResult();
    partial = combine(b, c, partial, other);
  }
  Value stores = b.create<arith::AndIOp>(
      loc,
      b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::eq, share,
                              index(b, 0)),
      b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::ult, output,
                              rowsAt(b)));
  auto write = b.create<scf::IfOp>(loc, stores, false);
  b.setInsertionPointToStart(&write.getThenRegion().front());
  unsigned out = op.getNumDpsInputs();
  store(b, combine(b, c, initial(b, 0, loops), partial), out, loops);
}

void Emitter::emitThreadPerRow(OpBuilder &b) {
  OpBuilder::InsertionGuard guard(b);
  SmallVector<Value> loops;
  threadPerRow(b, loops);
  foldRow(b, loops);
}

void Emitter::foldRow(OpBuilder &b, ArrayRef<Value> loops) {
  unsigned inputs = op.getNumDpsInputs();
  SmallVector<Value> inits;
  for (unsigned k = 0; k < op.getNumDpsInits(); ++k)
    inits.push_back(initial(b, k, loops));
  auto loop =
      b.create<scf::ForOp>(loc, index(b, 0), colsAt(b), index(b, 1), inits);
  {
    OpBuilder::InsertionGuard inner(b);
    b.setInsertionPointToStart(loop.getBody());
    SmallVector<Value> at(loops.begin(), loops.end());
    delinearize(b, loop.getInductionVar(), reductionDims, at);
    SmallVector<Value> args;
    for (unsigned i = 0; i < inputs; ++i)
      args.push_back(
          op.getRegion().getArgument(i).use_empty() ? Value() : load(b, i, at));
    for (Value v : loop.getRegionIterArgs())
      args.push_back(v);
    b.create<scf::YieldOp>(loc, body(b, args, at));
  }
  for (unsigned k = 0; k < op.getNumDpsInits(); ++k)
    store(b, loop.getResult(k), inputs + k, loops);
}

} // namespace locus::gpu_mapping
