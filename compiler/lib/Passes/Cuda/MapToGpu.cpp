//===- MapToGpu.cpp - --locus-map-to-gpu ----------------------------------===//
//
// The linalg ops of a kernel placed on a CUDA device become gpu.launch ops;
// see Passes.td. One launch per op: a parallel op runs one thread per
// element of its iteration space, the last loop dimension fastest (so
// neighbouring threads touch neighbouring elements of row-major buffers).
// A reduction with one combiner takes one of these strategies, chosen by
// the rules of choose() from the static shapes:
// - columns (outputs contiguous): a thread per output, split over grid.y
//   into partials when the outputs cannot fill the GPU;
// - rows (reduced elements contiguous): a block per output, each thread
//   striding and the block combining with gpu.all_reduce; a warp per output
//   for short f32 rows; several blocks per output and a second launch over
//   their partials when the outputs cannot fill the GPU.
// Other reductions run one thread per output element.
//
//===----------------------------------------------------------------------===//

#include "locus/Dialect/LocusDialect.h"
#include "locus/Passes/Passes.h"

#include "mlir/Analysis/SliceAnalysis.h"
#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/Support/Debug.h"

#include <limits>

namespace locus {
#define GEN_PASS_DEF_LOCUSMAPTOGPU
#include "locus/Passes/Passes.h.inc"
} // namespace locus

#define DEBUG_TYPE "locus-map-to-gpu"

using namespace mlir;
using namespace locus;

namespace {

/// Threads per block of every launch this pass makes.
constexpr int64_t kBlock = 256;
/// The largest grid.x a launch may have.
constexpr int64_t kMaxGrid = (int64_t{1} << 31) - 1;
/// Blocks that fill a large GPU several times over (an H100 has 132
/// multiprocessors, each running up to 8 blocks of 256 threads): a
/// reduction with fewer outputs than this is split.
constexpr int64_t kFillBlocks = 1056;
/// The fewest elements a split block reduces (16 per thread).
constexpr int64_t kMinSplit = 16 * kBlock;
/// Threads that fill a large GPU several times over.
constexpr int64_t kFillThreads = kFillBlocks * kBlock;
/// The fewest elements a thread of a split column reduction folds.
constexpr int64_t kMinColumnShare = 16;
/// The largest grid.y a launch may have.
constexpr int64_t kMaxGridY = 65535;
/// The longest rows a warp reduces alone (8 elements per lane).
constexpr int64_t kMaxWarpRow = 8 * 32;
/// Consecutive elements each thread of a plain elementwise launch takes:
/// 16 bytes of f32, which the NVPTX backend loads and stores as one vector
/// where the buffers are aligned (plan buffers are 64-byte aligned).
constexpr int64_t kPerThread = 4;

bool onCuda(func::FuncOp func) {
  auto device = func->getAttrOfType<DeviceAttr>(kDeviceAttrName);
  return device && device.getKind() == DeviceKind::cuda;
}

/// How a kernel reads and writes one buffer operand: the memref it indexes
/// and, for a buffer with a strided layout, the offset and strides of the
/// flat view it indexes instead.
struct Access {
  Value memref;
  bool flat = false;
  int64_t offset = 0;
  SmallVector<int64_t> strides;
  memref::GetGlobalOp global; // cloned into the launch instead of captured
  bool scalar = false;        // a scalar operand, passed as it is
};

/// The combiner of a one-output reduction that gpu.all_reduce can do, with
/// the value that starts each thread's partial result.
struct Combiner {
  Operation *op = nullptr;
  gpu::AllReduceOperation kind;
  TypedAttr identity;
};

std::optional<Combiner> matchCombiner(linalg::GenericOp op) {
  if (op.getNumDpsInits() != 1)
    return std::nullopt;
  SmallVector<Operation *> combiners;
  BlockArgument out = op.getRegionOutputArgs().front();
  if (!matchReduction(op.getRegionOutputArgs(), 0, combiners) ||
      combiners.size() != 1)
    return std::nullopt;
  Operation *c = combiners.front();
  if (c->getNumOperands() != 2 || c->getNumResults() != 1 ||
      !llvm::is_contained(c->getOperands(), out))
    return std::nullopt;
  Type type = out.getType();
  Builder b(op.getContext());
  auto f = [&](double v) -> TypedAttr { return b.getFloatAttr(type, v); };
  const double inf = std::numeric_limits<double>::infinity();
  if (isa<arith::AddFOp>(c))
    return Combiner{c, gpu::AllReduceOperation::ADD, f(0.0)};
  if (isa<arith::MulFOp>(c))
    return Combiner{c, gpu::AllReduceOperation::MUL, f(1.0)};
  if (isa<arith::MaximumFOp>(c))
    return Combiner{c, gpu::AllReduceOperation::MAXIMUMF, f(-inf)};
  if (isa<arith::MaxNumFOp>(c))
    return Combiner{c, gpu::AllReduceOperation::MAXNUMF, f(-inf)};
  if (isa<arith::MinimumFOp>(c))
    return Combiner{c, gpu::AllReduceOperation::MINIMUMF, f(inf)};
  if (isa<arith::MinNumFOp>(c))
    return Combiner{c, gpu::AllReduceOperation::MINNUMF, f(inf)};
  if (isa<arith::AddIOp>(c) && type.isInteger(64))
    return Combiner{c, gpu::AllReduceOperation::ADD, b.getI64IntegerAttr(0)};
  return std::nullopt;
}

/// How one linalg op runs on the GPU.
enum class Strategy {
  flatElementwise,  ///< plain elementwise: 4 consecutive elements a thread
  threadPerElement, ///< any other parallel op
  columnThreads,    ///< outputs contiguous: a thread per output
  columnSplit,      ///< the same, the reduced elements split over grid.y
  rowSplit,         ///< reduced elements contiguous, few outputs: several
                    ///< blocks per output, then a launch over the partials
  rowWarp,          ///< short f32 rows: a warp per output
  rowBlock,         ///< a block per output
  threadPerOutput,  ///< any other reduction: a thread per output, looping
};

/// A strategy, its split (shares per output, elements per share), and why.
struct Choice {
  Strategy strategy;
  std::string why;
  int64_t splits = 1, share = 0;
};

class Emitter {
public:
  Emitter(linalg::GenericOp op) : op(op), loc(op.getLoc()) {}

  LogicalResult run() {
    ranges = op.getStaticLoopRanges();
    for (int64_t r : ranges)
      if (ShapedType::isDynamic(r))
        return op.emitOpError("has a dynamic loop range; CUDA kernels need "
                              "static shapes");
    for (auto [d, type] : llvm::enumerate(op.getIteratorTypesArray()))
      (type == utils::IteratorType::parallel ? parallelDims : reductionDims)
          .push_back(d);
    rows = product(parallelDims);
    cols = product(reductionDims);
    OpBuilder b(op);
    for (OpOperand &operand : op->getOpOperands())
      if (failed(access(b, operand.get(), accesses.emplace_back())))
        return failure();
    if (rows == 0 || cols == 0) {
      // Nothing to compute; a reduction over nothing leaves its init.
      op.erase();
      return success();
    }
    std::optional<Combiner> c =
        reductionDims.empty() ? std::nullopt : matchCombiner(op);
    Choice choice = choose(c);
    LLVM_DEBUG(debugStrategy(choice.why));
    switch (choice.strategy) {
    case Strategy::flatElementwise:
      emitFlatParallel(b);
      break;
    case Strategy::threadPerElement:
      emitParallel(b);
      break;
    case Strategy::columnThreads:
    case Strategy::threadPerOutput:
      emitThreadPerRow(b);
      break;
    case Strategy::columnSplit:
      emitColumnSplit(b, *c, choice.splits, choice.share);
      break;
    case Strategy::rowSplit:
      emitSplitReduction(b, *c, choice.splits);
      break;
    case Strategy::rowWarp:
      emitWarpReduction(b, *c);
      break;
    case Strategy::rowBlock:
      emitBlockReduction(b, *c);
      break;
    }
    op.erase();
    return success();
  }

  /// The rules, in order: the first that applies decides. `c` is the op's
  /// one combiner, if it has one.
  Choice choose(const std::optional<Combiner> &c) {
    if (reductionDims.empty())
      return plainElementwise()
                 ? Choice{Strategy::flatElementwise,
                          std::to_string(kPerThread) +
                              " consecutive elements per thread, flat"}
                 : Choice{Strategy::threadPerElement, "a thread per element"};
    if (!c)
      return {Strategy::threadPerOutput,
              "a thread per output (no block combiner)"};
    if (columnWise()) {
      int64_t splits = std::min({(kFillThreads + rows - 1) / rows,
                                 cols / kMinColumnShare, kMaxGridY});
      if (splits <= 1 || rows > kMaxGrid)
        return {Strategy::columnThreads, "columns: a thread per output"};
      int64_t share = (cols + splits - 1) / splits;
      splits = (cols + share - 1) / share; // no empty share
      return {Strategy::columnSplit,
              "columns: a thread per output, split over " +
                  std::to_string(splits) + " shares of " +
                  std::to_string(share),
              splits, share};
    }
    if (cols < 32 || rows > kMaxGrid)
      return {Strategy::threadPerOutput,
              "a thread per output (too few columns or too many rows)"};
    if (int64_t splits = splitsOf(); splits > 1)
      return {Strategy::rowSplit,
              "split over " + std::to_string(splits) + " blocks per output",
              splits};
    if (cols <= kMaxWarpRow && c->identity.getType().isF32())
      return {Strategy::rowWarp, "a warp per output, " +
                                     std::to_string(kBlock / 32) +
                                     " per block"};
    return {Strategy::rowBlock, "a block per output"};
  }

private:
  /// The strategy chosen, for -debug-only=locus-map-to-gpu.
  void debugStrategy(const std::string &what) const {
    llvm::dbgs() << "[" DEBUG_TYPE "] " << loc << " " << rows << " output(s) x "
                 << cols << " element(s): " << what << "\n";
  }

  int64_t product(ArrayRef<unsigned> dims) const {
    int64_t p = 1;
    for (unsigned d : dims)
      p *= ranges[d];
    return p;
  }

  LogicalResult access(OpBuilder &b, Value value, Access &a) {
    auto type = dyn_cast<MemRefType>(value.getType());
    if (!type && value.getType().isIntOrIndexOrFloat()) {
      a.memref = value;
      a.scalar = true;
      return success();
    }
    if (!type)
      return op.emitOpError("has an operand of type ")
             << value.getType() << "; expected buffers and scalars";
    if (auto global = value.getDefiningOp<memref::GetGlobalOp>()) {
      a.global = global;
      a.memref = value;
      return success();
    }
    a.memref = value;
    if (type.getLayout().isIdentity())
      return success();
    if (failed(getStridesAndOffset(type, a.strides, a.offset)) ||
        ShapedType::isDynamic(a.offset) ||
        llvm::any_of(a.strides, ShapedType::isDynamic) ||
        !type.hasStaticShape())
      return op.emitOpError("has a buffer with a dynamic layout; CUDA "
                            "kernels need static ones");
    // A 1-D view from the base pointer covering every element it indexes.
    int64_t span = a.offset + 1;
    for (auto [size, stride] : llvm::zip(type.getShape(), a.strides))
      span += (size - 1) * stride;
    auto meta = b.create<memref::ExtractStridedMetadataOp>(loc, value);
    auto flatType = MemRefType::get({span}, type.getElementType());
    a.memref = b.create<memref::ReinterpretCastOp>(
        loc, flatType, meta.getBaseBuffer(), 0, ArrayRef<int64_t>{span},
        ArrayRef<int64_t>{1});
    a.flat = true;
    return success();
  }

  Value index(OpBuilder &b, int64_t v) {
    return b.create<arith::ConstantIndexOp>(loc, v);
  }

  /// Splits `linear` into indices over `dims` (row-major, last fastest);
  /// writes them into `indices` at those dimensions.
  void delinearize(OpBuilder &b, Value linear, ArrayRef<unsigned> dims,
                   SmallVectorImpl<Value> &indices) {
    for (unsigned d : llvm::reverse(dims)) {
      Value size = index(b, ranges[d]);
      indices[d] = b.create<arith::RemUIOp>(loc, linear, size);
      linear = b.create<arith::DivUIOp>(loc, linear, size);
    }
  }

  /// The memref and the indices of operand `i` at loop indices `loops`.
  std::pair<Value, SmallVector<Value>> address(OpBuilder &b, unsigned i,
                                               ArrayRef<Value> loops) {
    Access &a = accesses[i];
    AffineMap map = op.getMatchingIndexingMap(&op->getOpOperand(i));
    SmallVector<Value> at;
    for (unsigned r = 0; r < map.getNumResults(); ++r)
      at.push_back(
          b.create<affine::AffineApplyOp>(loc, map.getSubMap({r}), loops));
    Value memref = a.global ? globals.lookup(a.memref) : a.memref;
    if (!a.flat)
      return {memref, at};
    Value linear = index(b, a.offset);
    for (auto [v, stride] : llvm::zip(at, a.strides))
      linear = b.create<arith::AddIOp>(
          loc, linear, b.create<arith::MulIOp>(loc, v, index(b, stride)));
    return {memref, {linear}};
  }

  Value load(OpBuilder &b, unsigned i, ArrayRef<Value> loops) {
    if (accesses[i].scalar)
      return accesses[i].memref;
    auto [memref, at] = address(b, i, loops);
    return b.create<memref::LoadOp>(loc, memref, at);
  }

  void store(OpBuilder &b, Value v, unsigned i, ArrayRef<Value> loops) {
    auto [memref, at] = address(b, i, loops);
    b.create<memref::StoreOp>(loc, v, memref, at);
  }

  /// A launch of grid (x gridY) x block threads; the builder is left
  /// inside its body.
  gpu::LaunchOp launch(OpBuilder &b, int64_t grid, int64_t block,
                       int64_t gridY = 1) {
    Value one = index(b, 1);
    auto launch = b.create<gpu::LaunchOp>(loc, index(b, grid), index(b, gridY),
                                          one, index(b, block), one, one);
    b.setInsertionPointToStart(&launch.getBody().front());
    b.create<gpu::TerminatorOp>(loc);
    b.setInsertionPointToStart(&launch.getBody().front());
    // Constant buffers are globals: the kernel module gets its own copy.
    globals.clear();
    for (Access &a : accesses)
      if (a.global && !globals.contains(a.memref))
        globals.map(a.memref, b.clone(*a.global)->getResult(0));
    op.getRegion().walk([&](Operation *inner) {
      for (Value v : inner->getOperands())
        if (auto global = v.getDefiningOp<memref::GetGlobalOp>();
            global && !globals.contains(v))
          globals.map(global.getResult(), b.clone(*global)->getResult(0));
    });
    return launch;
  }

  /// Clones the body with its block arguments bound to `args`; returns the
  /// yielded values.
  SmallVector<Value> body(OpBuilder &b, ArrayRef<Value> args,
                          ArrayRef<Value> loops) {
    IRMapping mapping = globals;
    Block &block = op.getRegion().front();
    for (auto [arg, v] : llvm::zip(block.getArguments(), args))
      if (v)
        mapping.map(arg, v);
    SmallVector<Value> yielded;
    for (Operation &inner : block) {
      if (auto yield = dyn_cast<linalg::YieldOp>(inner)) {
        for (Value v : yield.getValues())
          yielded.push_back(mapping.lookupOrDefault(v));
        break;
      }
      if (auto idx = dyn_cast<linalg::IndexOp>(inner)) {
        mapping.map(idx.getResult(), loops[idx.getDim()]);
        continue;
      }
      b.clone(inner, mapping);
    }
    return yielded;
  }

  /// Inputs loaded at `loops`; outputs loaded where the body reads them.
  SmallVector<Value> operandsAt(OpBuilder &b, ArrayRef<Value> loops) {
    SmallVector<Value> args;
    for (OpOperand &operand : op->getOpOperands()) {
      unsigned i = operand.getOperandNumber();
      bool used = !op.getMatchingBlockArgument(&operand).use_empty();
      args.push_back(used ? load(b, i, loops) : Value());
    }
    return args;
  }

  /// A launch of one thread per point of the parallel loops (`rows`);
  /// leaves the builder inside the bounds check, with `loops` set at the
  /// parallel dimensions (0 at the others). Returns the thread's point.
  Value threadPerRow(OpBuilder &b, SmallVectorImpl<Value> &loops) {
    int64_t block = std::min(kBlock, (rows + 31) / 32 * 32);
    int64_t grid = (rows + block - 1) / block;
    gpu::LaunchOp l = launch(b, grid, block);
    Value id = b.create<arith::AddIOp>(
        loc, b.create<arith::MulIOp>(loc, l.getBlockIds().x, index(b, block)),
        l.getThreadIds().x);
    Value inside = b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::ult, id,
                                           index(b, rows));
    auto guardIf = b.create<scf::IfOp>(loc, inside, false);
    b.setInsertionPointToStart(&guardIf.getThenRegion().front());
    loops.assign(ranges.size(), index(b, 0));
    delinearize(b, id, parallelDims, loops);
    return id;
  }

  void emitParallel(OpBuilder &b) {
    OpBuilder::InsertionGuard guard(b);
    SmallVector<Value> loops;
    threadPerRow(b, loops);
    SmallVector<Value> results = body(b, operandsAt(b, loops), loops);
    unsigned inputs = op.getNumDpsInputs();
    for (auto [k, v] : llvm::enumerate(results))
      store(b, v, inputs + k, loops);
  }

  /// Whether every buffer is read and written whole and in order (identity
  /// maps, identity layouts, no constant global) by a body that does not
  /// ask for its indices, over at least one dimension: then one flat index
  /// addresses them all, with no division per element.
  bool plainElementwise() {
    if (ranges.empty() || !op.getRegion().getOps<linalg::IndexOp>().empty())
      return false;
    for (OpOperand &operand : op->getOpOperands()) {
      const Access &a = accesses[operand.getOperandNumber()];
      if (a.scalar)
        continue;
      if (a.flat || a.global ||
          !op.getMatchingIndexingMap(&operand).isIdentity())
        return false;
    }
    return true;
  }

  /// A buffer of identity layout as its 1-D view (built on the host side).
  Value flatView(OpBuilder &b, Value memref) {
    auto type = cast<MemRefType>(memref.getType());
    if (type.getRank() == 1)
      return memref;
    SmallVector<ReassociationIndices> all(1);
    for (int64_t d = 0; d < type.getRank(); ++d)
      all.front().push_back(d);
    return b.create<memref::CollapseShapeOp>(loc, memref, all);
  }

  /// A plain elementwise op: each thread takes kPerThread consecutive
  /// elements of the flat buffers, unchecked when all of them are in range
  /// (every thread but the last), one by one with a check otherwise.
  void emitFlatParallel(OpBuilder &b) {
    SmallVector<Value> flat;
    for (const Access &a : accesses)
      flat.push_back(a.scalar ? a.memref : flatView(b, a.memref));
    OpBuilder::InsertionGuard guard(b);
    int64_t threads = (rows + kPerThread - 1) / kPerThread;
    gpu::LaunchOp l = launch(b, (threads + kBlock - 1) / kBlock, kBlock);
    for (auto [a, v] : llvm::zip(accesses, flat))
      if (!a.scalar)
        b.create<memref::AssumeAlignmentOp>(loc, v, 16);
    Value id = b.create<arith::AddIOp>(
        loc, b.create<arith::MulIOp>(loc, l.getBlockIds().x, index(b, kBlock)),
        l.getThreadIds().x);
    Value base = b.create<arith::MulIOp>(loc, id, index(b, kPerThread));
    Value whole = b.create<arith::CmpIOp>(
        loc, arith::CmpIPredicate::ule,
        b.create<arith::AddIOp>(loc, base, index(b, kPerThread)),
        index(b, rows));
    auto branch = b.create<scf::IfOp>(loc, whole, /*withElseRegion=*/true);
    b.setInsertionPointToStart(&branch.getThenRegion().front());
    wholeElements(b, flat, base);
    b.setInsertionPointToStart(&branch.getElseRegion().front());
    flatElements(b, flat, base, /*checked=*/true);
  }

  /// The body at elements base .. base + kPerThread - 1, all in range,
  /// written out: every load first, then the bodies, then every store, so
  /// that the backend can merge each buffer's accesses into one vector.
  void wholeElements(OpBuilder &b, ArrayRef<Value> flat, Value base) {
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

  /// The body at elements base .. base + kPerThread - 1 of the flat
  /// buffers, one after the other; with `checked`, only those below
  /// `rows`.
  void flatElements(OpBuilder &b, ArrayRef<Value> flat, Value base,
                    bool checked) {
    OpBuilder::InsertionGuard guard(b);
    auto loop = b.create<scf::ForOp>(loc, index(b, 0), index(b, kPerThread),
                                     index(b, 1));
    b.setInsertionPointToStart(loop.getBody());
    Value at = b.create<arith::AddIOp>(loc, base, loop.getInductionVar());
    if (checked) {
      Value inside = b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::ult, at,
                                             index(b, rows));
      auto guardIf = b.create<scf::IfOp>(loc, inside, false);
      b.setInsertionPointToStart(&guardIf.getThenRegion().front());
    }
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

  /// Whether the outputs, not the reduced elements, lie next to each other
  /// in memory: the innermost loop is parallel (a bias gradient, a sum over
  /// the rows of a row-major matrix). Then neighbouring threads must take
  /// neighbouring outputs, each folding its own column.
  bool columnWise() const {
    return !parallelDims.empty() &&
           parallelDims.back() == static_cast<unsigned>(ranges.size() - 1);
  }

  /// How many blocks share each output of a one-combiner reduction: 1
  /// when there are outputs enough to fill the GPU or too few elements.
  int64_t splitsOf() const {
    if (rows >= kFillBlocks || cols < 2 * kMinSplit)
      return 1;
    int64_t byFill = (kFillBlocks + rows - 1) / rows;
    int64_t bySize = cols / kMinSplit;
    return std::min(byFill, bySize);
  }

  /// Folds the reduced elements [first, end) of the output at `loops`,
  /// every `block`th (first: this thread's), into a partial result, then
  /// combines the block's partials with gpu.all_reduce.
  Value foldBlock(OpBuilder &b, const Combiner &c, ArrayRef<Value> loops,
                  Value first, Value end, int64_t block) {
    return b
        .create<gpu::AllReduceOp>(
            loc, foldStrided(b, c, loops, first, end, block),
            gpu::AllReduceOperationAttr::get(b.getContext(), c.kind), true)
        .getResult();
  }

  /// Folds the reduced elements [first, end) of the output at `loops`,
  /// every `step`th, into a partial result that starts at the identity.
  Value foldStrided(OpBuilder &b, const Combiner &c, ArrayRef<Value> loops,
                    Value first, Value end, int64_t step) {
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
        args.push_back(op.getRegion().getArgument(i).use_empty()
                           ? Value()
                           : load(b, i, at));
      args.push_back(loop.getRegionIterArg(0));
      SmallVector<Value> next = body(b, args, at);
      b.create<scf::YieldOp>(loc, next);
    }
    return loop.getResult(0);
  }

  /// The combiner applied to `acc` (where the output was) and `value`.
  Value combine(OpBuilder &b, const Combiner &c, Value acc, Value value) {
    IRMapping mapping;
    BlockArgument outArg = op.getRegionOutputArgs().front();
    for (Value operand : c.op->getOperands())
      mapping.map(operand, operand == outArg ? acc : value);
    return b.clone(*c.op, mapping)->getResult(0);
  }

  /// In thread 0: the output at `loops` combined with `value`, stored.
  void finish(OpBuilder &b, const Combiner &c, ArrayRef<Value> loops, Value tid,
              Value value) {
    Value first = b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::eq, tid,
                                          index(b, 0));
    auto write = b.create<scf::IfOp>(loc, first, false);
    b.setInsertionPointToStart(&write.getThenRegion().front());
    unsigned out = op.getNumDpsInputs();
    store(b, combine(b, c, load(b, out, loops), value), out, loops);
  }

  static int64_t blockFor(int64_t count) {
    int64_t block = 32;
    while (block < kBlock && block < count)
      block *= 2;
    return block;
  }

  void emitBlockReduction(OpBuilder &b, const Combiner &c) {
    int64_t block = blockFor(cols);
    OpBuilder::InsertionGuard guard(b);
    gpu::LaunchOp l = launch(b, rows, block);
    Value tid = l.getThreadIds().x;
    // Reduction dimensions are 0 where the output is addressed (its map
    // does not use them).
    SmallVector<Value> loops(ranges.size(), index(b, 0));
    delinearize(b, l.getBlockIds().x, parallelDims, loops);
    Value all = foldBlock(b, c, loops, tid, index(b, cols), block);
    finish(b, c, loops, tid, all);
  }

  /// Few outputs, many elements each: `splits` blocks per output each fold
  /// a contiguous share into a partial (a temporary buffer), then one block
  /// per output combines its partials in order. Deterministic: no atomics,
  /// the same order every run.
  void emitSplitReduction(OpBuilder &b, const Combiner &c, int64_t splits) {
    int64_t share = (cols + splits - 1) / splits;
    splits = (cols + share - 1) / share; // no empty share
    Type element = op.getRegionOutputArgs().front().getType();
    Value partials = b.create<memref::AllocOp>(
        loc, MemRefType::get({rows * splits}, element));
    {
      OpBuilder::InsertionGuard guard(b);
      gpu::LaunchOp l = launch(b, rows * splits, kBlock);
      Value id = l.getBlockIds().x, tid = l.getThreadIds().x;
      Value row = b.create<arith::DivUIOp>(loc, id, index(b, splits));
      Value part = b.create<arith::RemUIOp>(loc, id, index(b, splits));
      SmallVector<Value> loops(ranges.size(), index(b, 0));
      delinearize(b, row, parallelDims, loops);
      Value begin = b.create<arith::MulIOp>(loc, part, index(b, share));
      Value end = b.create<arith::MinUIOp>(
          loc, b.create<arith::AddIOp>(loc, begin, index(b, share)),
          index(b, cols));
      Value all = foldBlock(
          b, c, loops, b.create<arith::AddIOp>(loc, begin, tid), end, kBlock);
      Value first = b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::eq, tid,
                                            index(b, 0));
      auto write = b.create<scf::IfOp>(loc, first, false);
      b.setInsertionPointToStart(&write.getThenRegion().front());
      b.create<memref::StoreOp>(loc, all, partials, id);
    }
    {
      OpBuilder::InsertionGuard guard(b);
      int64_t block = blockFor(splits);
      gpu::LaunchOp l = launch(b, rows, block);
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

  /// A warp per output, kBlock / 32 outputs per block: each lane folds
  /// every 32nd element, then five butterfly shuffles combine the lanes and
  /// lane 0 stores. The bounds check is the same for a whole warp, so every
  /// lane of a warp that shuffles is there.
  void emitWarpReduction(OpBuilder &b, const Combiner &c) {
    constexpr int64_t warps = kBlock / 32;
    OpBuilder::InsertionGuard guard(b);
    gpu::LaunchOp l = launch(b, (rows + warps - 1) / warps, kBlock);
    Value tid = l.getThreadIds().x;
    Value lane = b.create<arith::RemUIOp>(loc, tid, index(b, 32));
    Value row = b.create<arith::AddIOp>(
        loc, b.create<arith::MulIOp>(loc, l.getBlockIds().x, index(b, warps)),
        b.create<arith::DivUIOp>(loc, tid, index(b, 32)));
    Value inside = b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::ult, row,
                                           index(b, rows));
    auto guardIf = b.create<scf::IfOp>(loc, inside, false);
    b.setInsertionPointToStart(&guardIf.getThenRegion().front());
    SmallVector<Value> loops(ranges.size(), index(b, 0));
    delinearize(b, row, parallelDims, loops);
    Value partial = foldStrided(b, c, loops, lane, index(b, cols), 32);
    for (int32_t offset = 16; offset >= 1; offset /= 2) {
      Value other = b.create<gpu::ShuffleOp>(loc, partial, offset, 32,
                                             gpu::ShuffleMode::XOR)
                        .getShuffleResult();
      partial = combine(b, c, partial, other);
    }
    finish(b, c, loops, lane, partial);
  }

  /// The split of a column reduction: launch (rows / kBlock) x `splits`
  /// threads fold their share of their output's column into partials
  /// ([splits][rows], so neighbouring threads write neighbours), then a
  /// thread per output folds its partials in order into the output.
  void emitColumnSplit(OpBuilder &b, const Combiner &c, int64_t splits,
                       int64_t share) {
    Type element = op.getRegionOutputArgs().front().getType();
    Value partials = b.create<memref::AllocOp>(
        loc, MemRefType::get({rows * splits}, element));
    int64_t grid = (rows + kBlock - 1) / kBlock;
    {
      OpBuilder::InsertionGuard guard(b);
      gpu::LaunchOp l = launch(b, grid, kBlock, splits);
      Value id = b.create<arith::AddIOp>(
          loc,
          b.create<arith::MulIOp>(loc, l.getBlockIds().x, index(b, kBlock)),
          l.getThreadIds().x);
      Value inside = b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::ult, id,
                                             index(b, rows));
      auto guardIf = b.create<scf::IfOp>(loc, inside, false);
      b.setInsertionPointToStart(&guardIf.getThenRegion().front());
      SmallVector<Value> loops(ranges.size(), index(b, 0));
      delinearize(b, id, parallelDims, loops);
      Value part = l.getBlockIds().y;
      Value begin = b.create<arith::MulIOp>(loc, part, index(b, share));
      Value end = b.create<arith::MinUIOp>(
          loc, b.create<arith::AddIOp>(loc, begin, index(b, share)),
          index(b, cols));
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
                               ValueRange{load(b, out, loops)});
      {
        OpBuilder::InsertionGuard inner(b);
        b.setInsertionPointToStart(loop.getBody());
        Value at = b.create<arith::AddIOp>(
            loc,
            b.create<arith::MulIOp>(loc, loop.getInductionVar(),
                                    index(b, rows)),
            id);
        Value p = b.create<memref::LoadOp>(loc, partials, at);
        b.create<scf::YieldOp>(loc, combine(b, c, loop.getRegionIterArg(0), p));
      }
      store(b, loop.getResult(0), out, loops);
    }
    b.create<memref::DeallocOp>(loc, partials);
  }

  void emitThreadPerRow(OpBuilder &b) {
    OpBuilder::InsertionGuard guard(b);
    SmallVector<Value> loops;
    threadPerRow(b, loops);
    unsigned inputs = op.getNumDpsInputs();
    SmallVector<Value> inits;
    for (unsigned k = 0; k < op.getNumDpsInits(); ++k)
      inits.push_back(load(b, inputs + k, loops));
    auto loop = b.create<scf::ForOp>(loc, index(b, 0), index(b, cols),
                                     index(b, 1), inits);
    {
      OpBuilder::InsertionGuard inner(b);
      b.setInsertionPointToStart(loop.getBody());
      SmallVector<Value> at = loops;
      delinearize(b, loop.getInductionVar(), reductionDims, at);
      SmallVector<Value> args;
      for (unsigned i = 0; i < inputs; ++i)
        args.push_back(op.getRegion().getArgument(i).use_empty()
                           ? Value()
                           : load(b, i, at));
      for (Value v : loop.getRegionIterArgs())
        args.push_back(v);
      b.create<scf::YieldOp>(loc, body(b, args, at));
    }
    for (unsigned k = 0; k < op.getNumDpsInits(); ++k)
      store(b, loop.getResult(k), inputs + k, loops);
  }

  linalg::GenericOp op;
  Location loc;
  SmallVector<int64_t> ranges;
  SmallVector<unsigned> parallelDims, reductionDims;
  int64_t rows = 1, cols = 1;
  SmallVector<Access> accesses;
  IRMapping globals;
};

/// Whether `op` reads or writes a buffer: what must not stay on the host
/// in a CUDA kernel.
bool touchesMemory(Operation *op) {
  auto effects = dyn_cast<MemoryEffectOpInterface>(op);
  if (!effects)
    return false;
  return effects.hasEffect<MemoryEffects::Read>() ||
         effects.hasEffect<MemoryEffects::Write>();
}

/// linalg.map as the generic op it is (generalizeNamedOp does not take
/// it): identity maps, all loops parallel, the output as an unused
/// block argument.
void generalizeMap(IRRewriter &rewriter, linalg::MapOp map) {
  Value init = map.getInit();
  auto type = cast<ShapedType>(init.getType());
  unsigned rank = type.getRank();
  SmallVector<AffineMap> maps(map.getInputs().size() + 1,
                              rewriter.getMultiDimIdentityMap(rank));
  SmallVector<utils::IteratorType> iterators(rank,
                                             utils::IteratorType::parallel);
  auto generic = rewriter.create<linalg::GenericOp>(
      map.getLoc(), TypeRange{}, map.getInputs(), ValueRange{init}, maps,
      iterators);
  Region &region = generic.getRegion();
  rewriter.inlineRegionBefore(map.getMapper(), region, region.end());
  Block &body = region.front();
  body.addArgument(type.getElementType(), map.getLoc());
  Operation *yield = body.getTerminator();
  rewriter.setInsertionPoint(yield);
  rewriter.replaceOpWithNewOp<linalg::YieldOp>(yield, yield->getOperands());
  rewriter.eraseOp(map);
}

class MapToGpuPass : public locus::impl::LocusMapToGpuBase<MapToGpuPass> {
public:
  using Base::Base;

  void runOnOperation() override {
    for (auto func : getOperation().getOps<func::FuncOp>())
      if (onCuda(func) && !func.isExternal() && failed(map(func)))
        return signalPassFailure();
  }

private:
  LogicalResult map(func::FuncOp func) {
    IRRewriter rewriter(func.getContext());
    // Copies become linalg copies, named ops generic ones.
    SmallVector<memref::CopyOp> copies;
    func.walk([&](memref::CopyOp copy) { copies.push_back(copy); });
    for (memref::CopyOp copy : copies) {
      rewriter.setInsertionPoint(copy);
      rewriter.replaceOpWithNewOp<linalg::CopyOp>(copy, copy.getSource(),
                                                  copy.getTarget());
    }
    SmallVector<linalg::LinalgOp> named;
    func.walk([&](linalg::LinalgOp op) {
      if (!isa<linalg::GenericOp>(op))
        named.push_back(op);
    });
    for (linalg::LinalgOp op : named) {
      rewriter.setInsertionPoint(op);
      if (auto map = dyn_cast<linalg::MapOp>(op.getOperation())) {
        generalizeMap(rewriter, map);
        continue;
      }
      if (failed(linalg::generalizeNamedOp(rewriter, op)))
        return op.emitOpError("has no CUDA lowering");
    }
    SmallVector<linalg::GenericOp> generics;
    func.walk([&](linalg::GenericOp op) { generics.push_back(op); });
    for (linalg::GenericOp op : generics) {
      if (!op.hasPureBufferSemantics())
        return op.emitOpError("expected bufferized IR");
      if (failed(Emitter(op).run()))
        return failure();
      ++numLaunches;
    }
    // What is left on the host may compute addresses, allocate and call the
    // runtime, but never touch a buffer: those are device pointers.
    WalkResult left = func.walk<WalkOrder::PreOrder>([&](Operation *op) {
      if (isa<gpu::LaunchOp>(op))
        return WalkResult::skip();
      if (touchesMemory(op)) {
        op->emitOpError("would read or write device memory on the host; it "
                        "has no CUDA lowering");
        return WalkResult::interrupt();
      }
      return WalkResult::advance();
    });
    return failure(left.wasInterrupted());
  }
};

} // namespace
