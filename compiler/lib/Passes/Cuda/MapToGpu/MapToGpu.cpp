//===- MapToGpu.cpp - --locus-map-to-gpu ----------------------------------===//
//
// The linalg ops of a kernel placed on a CUDA device become gpu.launch ops;
// see Passes.td. A run of ops that go row by row over the same rows (a
// softmax) is one launch (Rows.cpp). Otherwise one launch per op: a
// parallel op runs one thread per element of its iteration space, the last
// loop dimension fastest (so neighbouring threads touch neighbouring
// elements of row-major buffers).
// A reduction with one combiner takes one of these strategies, chosen by
// the rules of choose() from the static shapes:
// - columns (outputs contiguous): a thread per output; when the outputs
//   cannot fill the GPU, split over up to 8 lanes of a warp combined by
//   shuffles, or over grid.y into partials when that takes more shares;
// - rows (reduced elements contiguous): a block per output, each thread
//   striding and the block combining with gpu.all_reduce; a warp per output
//   for short f32 rows; several blocks per output and a second launch over
//   their partials when the outputs cannot fill the GPU.
// Other reductions run one thread per output element.
//
//===----------------------------------------------------------------------===//

#include "Emitter.h"

#include "locus/Dialect/DynamicDims.h"
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
using namespace locus::gpu_mapping;

namespace locus::gpu_mapping {

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

/// Whether `type`'s offset and strides are all static.
static bool hasStaticLayout(MemRefType type) {
  SmallVector<int64_t> strides;
  int64_t offset = 0;
  return succeeded(getStridesAndOffset(type, strides, offset)) &&
         !ShapedType::isDynamic(offset) &&
         llvm::none_of(strides, ShapedType::isDynamic);
}

void Emitter::readLoops() {
  ranges = op.getStaticLoopRanges();
  parallelDims.clear();
  reductionDims.clear();
  for (auto [d, type] : llvm::enumerate(op.getIteratorTypesArray()))
    (type == utils::IteratorType::parallel ? parallelDims : reductionDims)
        .push_back(d);
}

bool Emitter::sharesLaunch() {
  readLoops();
  if (llvm::any_of(ranges, ShapedType::isDynamic))
    return false;
  rows = product(parallelDims);
  cols = product(reductionDims);
  if (rows == 0)
    return false;
  if (reductionDims.empty())
    return true;
  if (cols == 0)
    return false;
  switch (sharedChoice().strategy) {
  case Strategy::columnThreads:
  case Strategy::threadPerOutput:
  case Strategy::columnLanes:
  case Strategy::rowWarp:
    return true;
  default:
    return false;
  }
}

const Choice &Emitter::sharedChoice() {
  if (!shared) {
    if (!reductionDims.empty())
      sharedCombiner = matchCombiner(op);
    shared = choose(sharedCombiner);
  }
  return *shared;
}

LogicalResult Emitter::prepare() {
  readLoops();
  OpBuilder b(op);
  if (failed(prepareRunExtents(b)))
    return failure();
  rows = product(parallelDims);
  cols = product(reductionDims);
  runRows = runProduct(b, parallelDims);
  runCols = runProduct(b, reductionDims);
  for (OpOperand &operand : op->getOpOperands())
    if (failed(access(b, operand.get(), accesses.emplace_back())))
      return failure();
  return viewCapturedAtBounds(b);
}

LogicalResult Emitter::viewCapturedAtBounds(OpBuilder &b) {
  SmallVector<Value> captured;
  op.getRegion().walk([&](Operation *inner) {
    for (Value v : inner->getOperands()) {
      auto type = dyn_cast<MemRefType>(v.getType());
      if (type && !type.hasStaticShape() &&
          !op.getRegion().isAncestor(v.getParentRegion()) &&
          !llvm::is_contained(captured, v))
        captured.push_back(v);
    }
  });
  for (Value v : captured) {
    auto type = cast<MemRefType>(v.getType());
    SmallVector<int64_t> shape, strides;
    int64_t offset = 0;
    for (int64_t d = 0; d < type.getRank(); ++d) {
      std::optional<int64_t> bound =
          bounds ? bounds->dimOf(v, static_cast<unsigned>(d)) : std::nullopt;
      if (!bound)
        return op.emitOpError("reads a buffer of dynamic shape (")
               << type << ") with no bound from the graph's dynamic sizes";
      shape.push_back(*bound);
    }
    if (!hasStaticLayout(type) ||
        failed(getStridesAndOffset(type, strides, offset)))
      return op.emitOpError("reads a buffer of dynamic layout (")
             << type << "); CUDA kernels need static strides";
    auto view = MemRefType::get(
        shape, type.getElementType(),
        StridedLayoutAttr::get(b.getContext(), offset, strides));
    boundViews.map(v, b.create<memref::ReinterpretCastOp>(
                          loc, canonicalizeStridedLayout(view), v, offset,
                          shape, strides));
  }
  return success();
}

LogicalResult Emitter::prepareRunExtents(OpBuilder &b) {
  runRanges.assign(ranges.size(), Value());
  for (auto [d, r] : llvm::enumerate(ranges)) {
    if (!ShapedType::isDynamic(r))
      continue;
    if (!bounds)
      return op.emitOpError("has a dynamic loop range; CUDA kernels need "
                            "static shapes or the sizes of a graph with "
                            "dynamic sizes");
    // Every operand dimension that walks the loop has its extent; the
    // least bound among them holds.
    std::optional<int64_t> least;
    for (OpOperand &operand : op->getOpOperands()) {
      AffineMap map = op.getMatchingIndexingMap(&operand);
      for (unsigned k = 0; k < map.getNumResults(); ++k) {
        auto dim = dyn_cast<AffineDimExpr>(map.getResult(k));
        if (!dim || dim.getPosition() != d)
          continue;
        std::optional<int64_t> bound = bounds->dimOf(operand.get(), k);
        if (!runRanges[d])
          runRanges[d] = b.create<memref::DimOp>(loc, operand.get(), k);
        if (bound)
          least = least ? std::min(*least, *bound) : *bound;
      }
    }
    if (!least || !runRanges[d])
      return op.emitOpError("has a dynamic loop range (loop ")
             << d << ") with no bound from the graph's dynamic sizes";
    r = *least;
  }
  return success();
}

Value Emitter::runProduct(OpBuilder &b, ArrayRef<unsigned> dims) {
  if (llvm::none_of(dims, [&](unsigned d) { return bool(runRanges[d]); }))
    return {};
  int64_t fixed = 1;
  for (unsigned d : dims)
    fixed *= runRanges[d] ? 1 : ranges[d];
  Value p = index(b, fixed);
  for (unsigned d : dims)
    if (runRanges[d])
      p = b.create<arith::MulIOp>(loc, p, runRanges[d]);
  return p;
}

Value Emitter::rangeAt(OpBuilder &b, unsigned d) {
  return runRanges.empty() || !runRanges[d] ? index(b, ranges[d])
                                            : runRanges[d];
}

Value Emitter::rowsAt(OpBuilder &b) {
  return runRows ? runRows : index(b, rows);
}

Value Emitter::colsAt(OpBuilder &b) {
  return runCols ? runCols : index(b, cols);
}

Value Emitter::gridFor(OpBuilder &b, int64_t per, int64_t times) {
  if (!runRows)
    return index(b, (rows + per - 1) / per * times);
  Value blocks = b.create<arith::DivUIOp>(
      loc, b.create<arith::AddIOp>(loc, runRows, index(b, per - 1)),
      index(b, per));
  return times == 1 ? blocks
                    : b.create<arith::MulIOp>(loc, blocks, index(b, times));
}

LogicalResult Emitter::run() {
  if (failed(prepare()))
    return failure();
  OpBuilder b(op);
  if (rows == 0 || cols == 0) {
    // Nothing to compute; a reduction over nothing leaves its init.
    op.erase();
    return success();
  }
  std::optional<Combiner> c =
      reductionDims.empty() ? std::nullopt : matchCombiner(op);
  Choice choice = choose(c);
  LLVM_DEBUG(debugStrategy(choice.why));
  if (explain)
    op.emitRemark() << rows << " output(s) x " << cols << " element(s)"
                    << (runRows || runCols ? " at the bounds" : "") << ": "
                    << choice.why;
  // choose() takes the strategies that combine for a one-combiner
  // reduction only.
  Combiner combiner = c.value_or(Combiner{});
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
  case Strategy::columnLanes:
    emitColumnLanes(b, combiner, choice.splits);
    break;
  case Strategy::columnSplit:
    emitColumnSplit(b, combiner, choice.splits, choice.share);
    break;
  case Strategy::rowSplit:
    emitSplitReduction(b, combiner, choice.splits);
    break;
  case Strategy::rowWarp:
    emitWarpReduction(b, combiner);
    break;
  case Strategy::rowBlock:
    emitBlockReduction(b, combiner);
    break;
  }
  op.erase();
  return success();
}

Choice Emitter::choose(const std::optional<Combiner> &c) {
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
    int64_t splits = std::min(
        {(kFillThreads + rows - 1) / rows, cols / kMinColumnShare, kMaxGridY});
    if (splits <= 1 || rows > kMaxGrid)
      return {Strategy::columnThreads, "columns: a thread per output"};
    int64_t share = (cols + splits - 1) / splits;
    splits = (cols + share - 1) / share; // no empty share
    if (int64_t lanes = static_cast<int64_t>(llvm::PowerOf2Ceil(splits));
        lanes <= kMaxColumnLanes && c->identity.getType().isF32())
      return {Strategy::columnLanes,
              "columns: " + std::to_string(lanes) +
                  " lanes per output, combined by shuffles",
              lanes};
    return {Strategy::columnSplit,
            "columns: a thread per output, split over " +
                std::to_string(splits) + " shares of " + std::to_string(share),
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
    return {Strategy::rowWarp,
            "a warp per output, " + std::to_string(kBlock / 32) + " per block"};
  return {Strategy::rowBlock, "a block per output"};
}

void Emitter::debugStrategy(const std::string &what) const {
  llvm::dbgs() << "[" DEBUG_TYPE "] " << loc << " " << rows << " output(s) x "
               << cols << " element(s): " << what << "\n";
}

int64_t Emitter::product(ArrayRef<unsigned> dims) const {
  int64_t p = 1;
  for (unsigned d : dims)
    p *= ranges[d];
  return p;
}

LogicalResult Emitter::access(OpBuilder &b, Value value, Access &a) {
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
  if (!type.hasStaticShape() || (bounds && !hasStaticLayout(type)))
    return dynamicAccess(b, value, a);
  if (type.getLayout().isIdentity())
    return success();
  if (failed(getStridesAndOffset(type, a.strides, a.offset)) ||
      ShapedType::isDynamic(a.offset) ||
      llvm::any_of(a.strides, ShapedType::isDynamic) || !type.hasStaticShape())
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

LogicalResult Emitter::dynamicAccess(OpBuilder &b, Value value, Access &a) {
  auto type = cast<MemRefType>(value.getType());
  std::optional<int64_t> span =
      bounds ? bounds->elementsBehind(value) : std::optional<int64_t>();
  if (!span || failed(getStridesAndOffset(type, a.strides, a.offset)))
    return op.emitOpError("has a buffer of dynamic shape (")
           << type << ") with no bound from the graph's dynamic sizes";
  // The buffer it views, from its start: every element it indexes lies
  // there, at its run's offset and strides.
  auto meta = b.create<memref::ExtractStridedMetadataOp>(loc, value);
  int64_t elements = std::max<int64_t>(*span, 1);
  auto flatType = MemRefType::get({elements}, type.getElementType());
  a.memref = b.create<memref::ReinterpretCastOp>(
      loc, flatType, meta.getBaseBuffer(), 0, ArrayRef<int64_t>{elements},
      ArrayRef<int64_t>{1});
  a.flat = true;
  a.contiguous = type.getLayout().isIdentity();
  if (ShapedType::isDynamic(a.offset))
    a.runOffset = meta.getOffset();
  for (auto [k, stride] : llvm::enumerate(a.strides))
    a.runStrides.push_back(ShapedType::isDynamic(stride) ? meta.getStrides()[k]
                                                         : Value());
  return success();
}

Value Emitter::index(OpBuilder &b, int64_t v) {
  return b.create<arith::ConstantIndexOp>(loc, v);
}

void Emitter::delinearize(OpBuilder &b, Value linear, ArrayRef<unsigned> dims,
                          SmallVectorImpl<Value> &indices) {
  for (unsigned d : llvm::reverse(dims)) {
    Value size = rangeAt(b, d);
    indices[d] = b.create<arith::RemUIOp>(loc, linear, size);
    linear = b.create<arith::DivUIOp>(loc, linear, size);
  }
}

std::pair<Value, SmallVector<Value>> Emitter::address(OpBuilder &b, unsigned i,
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
  Value linear = a.runOffset ? a.runOffset : index(b, a.offset);
  for (auto [k, v] : llvm::enumerate(at)) {
    Value stride = k < a.runStrides.size() && a.runStrides[k]
                       ? a.runStrides[k]
                       : index(b, a.strides[k]);
    linear = b.create<arith::AddIOp>(loc, linear,
                                     b.create<arith::MulIOp>(loc, v, stride));
  }
  return {memref, {linear}};
}

Value Emitter::load(OpBuilder &b, unsigned i, ArrayRef<Value> loops) {
  if (accesses[i].scalar)
    return accesses[i].memref;
  auto [memref, at] = address(b, i, loops);
  return b.create<memref::LoadOp>(loc, memref, at);
}

Value Emitter::initial(OpBuilder &b, unsigned k, ArrayRef<Value> loops) {
  if (filled && k == 0)
    return filled;
  return load(b, op.getNumDpsInputs() + k, loops);
}

void Emitter::store(OpBuilder &b, Value v, unsigned i, ArrayRef<Value> loops) {
  auto [memref, at] = address(b, i, loops);
  b.create<memref::StoreOp>(loc, v, memref, at);
}

gpu::LaunchOp Emitter::launch(OpBuilder &b, int64_t grid, int64_t block,
                              int64_t gridY) {
  return launch(b, index(b, grid), block, gridY);
}

gpu::LaunchOp Emitter::launch(OpBuilder &b, Value grid, int64_t block,
                              int64_t gridY) {
  Value one = index(b, 1);
  auto launch = b.create<gpu::LaunchOp>(loc, grid, index(b, gridY), one,
                                        index(b, block), one, one);
  b.setInsertionPointToStart(&launch.getBody().front());
  b.create<gpu::TerminatorOp>(loc);
  b.setInsertionPointToStart(&launch.getBody().front());
  cloneGlobals(b);
  return launch;
}

void Emitter::cloneGlobals(OpBuilder &b) {
  // Constant buffers are globals: the kernel module gets its own copy.
  globals.clear();
  for (auto [from, to] : boundViews.getValueMap())
    globals.map(from, to);
  for (Access &a : accesses)
    if (a.global && !globals.contains(a.memref))
      globals.map(a.memref, b.clone(*a.global)->getResult(0));
  op.getRegion().walk([&](Operation *inner) {
    for (Value v : inner->getOperands())
      if (auto global = v.getDefiningOp<memref::GetGlobalOp>();
          global && !globals.contains(v))
        globals.map(global.getResult(), b.clone(*global)->getResult(0));
  });
}

SmallVector<Value> cloneBody(OpBuilder &b, linalg::GenericOp op,
                             ArrayRef<Value> args, IRMapping mapping,
                             ArrayRef<Value> loops) {
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

Value cloneCombiner(OpBuilder &b, linalg::GenericOp op, const Combiner &c,
                    Value acc, Value value) {
  IRMapping mapping;
  BlockArgument outArg = op.getRegionOutputArgs().front();
  for (Value operand : c.op->getOperands())
    mapping.map(operand, operand == outArg ? acc : value);
  return b.clone(*c.op, mapping)->getResult(0);
}

SmallVector<Value> Emitter::body(OpBuilder &b, ArrayRef<Value> args,
                                 ArrayRef<Value> loops) {
  return cloneBody(b, op, args, globals, loops);
}

SmallVector<Value> Emitter::operandsAt(OpBuilder &b, ArrayRef<Value> loops) {
  SmallVector<Value> args;
  for (OpOperand &operand : op->getOpOperands()) {
    unsigned i = operand.getOperandNumber();
    bool used = !op.getMatchingBlockArgument(&operand).use_empty();
    args.push_back(used ? load(b, i, loops) : Value());
  }
  return args;
}

Value Emitter::globalId(OpBuilder &b, gpu::LaunchOp l, int64_t block) {
  return b.create<arith::AddIOp>(
      loc, b.create<arith::MulIOp>(loc, l.getBlockIds().x, index(b, block)),
      l.getThreadIds().x);
}

void Emitter::guardBelow(OpBuilder &b, Value value, int64_t limit) {
  guardBelow(b, value, index(b, limit));
}

void Emitter::guardBelow(OpBuilder &b, Value value, Value limit) {
  Value inside =
      b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::ult, value, limit);
  auto guardIf = b.create<scf::IfOp>(loc, inside, false);
  b.setInsertionPointToStart(&guardIf.getThenRegion().front());
}

Value Emitter::threadPerRow(OpBuilder &b, SmallVectorImpl<Value> &loops) {
  int64_t block = std::min(kBlock, (rows + 31) / 32 * 32);
  Value grid = gridFor(b, block);
  Value id = globalId(b, launch(b, grid, block), block);
  guardBelow(b, id, rowsAt(b));
  loops.assign(ranges.size(), index(b, 0));
  delinearize(b, id, parallelDims, loops);
  return id;
}

} // namespace locus::gpu_mapping

namespace {

bool onCuda(func::FuncOp func) {
  auto device = func->getAttrOfType<DeviceAttr>(kDeviceAttrName);
  return device && device.getKind() == DeviceKind::cuda;
}

/// Whether `op` reads or writes a buffer: what must not stay on the host
/// in a CUDA kernel.
bool touchesMemory(Operation *op) {
  auto effects = dyn_cast<MemoryEffectOpInterface>(op);
  if (!effects)
    return false;
  return effects.hasEffect<MemoryEffects::Read>() ||
         effects.hasEffect<MemoryEffects::Write>();
}

/// The scalar a generalized linalg.fill writes over its whole output, if
/// `op` is one: a scalar input, one output, parallel loops, a body that
/// yields the input.
Value filledValue(linalg::GenericOp op) {
  if (op.getNumDpsInputs() != 1 || op.getNumDpsInits() != 1 ||
      op.getNumReductionLoops() != 0)
    return {};
  Value value = op.getDpsInputOperand(0)->get();
  if (!value.getType().isIntOrIndexOrFloat())
    return {};
  auto yield = cast<linalg::YieldOp>(op.getRegion().front().getTerminator());
  if (yield.getNumOperands() != 1 ||
      yield.getOperand(0) != op.getRegion().front().getArgument(0))
    return {};
  return value;
}

/// The number of points of `op`'s iteration space (0: an empty buffer;
/// -1 for a dynamic one, whose size the run gives).
int64_t rowsOf(linalg::GenericOp op) {
  int64_t points = 1;
  for (int64_t r : op.getStaticLoopRanges()) {
    if (ShapedType::isDynamic(r))
      return -1;
    points *= r;
  }
  return points;
}

/// Whether `op` takes or reads a buffer of dynamic shape or layout: such
/// an op needs the kernel's size bounds, and takes a launch of its own.
bool readsDynamicBuffers(linalg::GenericOp op) {
  auto dynamicBuffer = [](Value v) {
    auto type = dyn_cast<MemRefType>(v.getType());
    return type && (!type.hasStaticShape() || !hasStaticLayout(type));
  };
  if (llvm::any_of(op->getOperands(), dynamicBuffer))
    return true;
  WalkResult inner = op.getRegion().walk([&](Operation *nested) {
    return llvm::any_of(nested->getOperands(), dynamicBuffer)
               ? WalkResult::interrupt()
               : WalkResult::advance();
  });
  return inner.wasInterrupted();
}

/// A fill followed by a one-output reduction into the same buffer is one
/// launch: the reduction starts from the filled value instead of loading
/// it (a sum's zeros, a max's -inf). Only memory-effect-free ops may stand
/// between the two, and the reduction must not read the buffer as an
/// input. Erases such fills; returns each reduction's filled value.
DenseMap<Operation *, Value> foldFills(Block &block) {
  DenseMap<Operation *, Value> filled;
  for (Operation &op : llvm::make_early_inc_range(block)) {
    auto fill = dyn_cast<linalg::GenericOp>(op);
    Value value = fill ? filledValue(fill) : Value();
    if (!value)
      continue;
    Operation *next = fill->getNextNode();
    while (next && isMemoryEffectFree(next))
      next = next->getNextNode();
    auto reduction = dyn_cast_or_null<linalg::GenericOp>(next);
    Value buffer = fill.getDpsInitOperand(0)->get();
    if (!reduction || reduction.getNumReductionLoops() == 0 ||
        reduction.getNumDpsInits() != 1 ||
        reduction.getDpsInitOperand(0)->get() != buffer ||
        llvm::is_contained(reduction.getDpsInputs(), buffer) ||
        llvm::is_contained(reduction.getStaticLoopRanges(), 0) ||
        !reduction.getMatchingIndexingMap(reduction.getDpsInitOperand(0))
             .isProjectedPermutation())
      continue;
    filled[reduction] = value;
    fill->erase();
  }
  return filled;
}

/// The window of a copy into a static, non-rank-reducing subview of
/// `buffer`, and the copy's source, if `op` is one: one input, all loops
/// parallel, identity maps, a body that yields the input.
memref::SubViewOp copiedWindow(linalg::GenericOp op, Value buffer,
                               Value &source) {
  if (op.getNumDpsInputs() != 1 || op.getNumDpsInits() != 1 ||
      op.getNumReductionLoops() != 0 ||
      !llvm::all_of(op.getIndexingMapsArray(),
                    [](AffineMap m) { return m.isIdentity(); }))
    return {};
  auto yield = cast<linalg::YieldOp>(op.getRegion().front().getTerminator());
  auto window =
      op.getDpsInitOperand(0)->get().getDefiningOp<memref::SubViewOp>();
  source = op.getDpsInputOperand(0)->get();
  // The source must not be a view of the buffer the fill overwrites.
  auto root = [](Value v) {
    while (auto view = v.getDefiningOp<ViewLikeOpInterface>())
      v = view.getViewSource();
    return v;
  };
  if (yield.getNumOperands() != 1 ||
      yield.getOperand(0) != op.getRegion().front().getArgument(0) || !window ||
      window.getSource() != buffer || root(source) == root(buffer) ||
      !isa<MemRefType>(source.getType()) ||
      window.getType().getRank() != window.getSourceType().getRank() ||
      ShapedType::isDynamicShape(window.getStaticOffsets()) ||
      ShapedType::isDynamicShape(window.getStaticSizes()) ||
      ShapedType::isDynamicShape(window.getStaticStrides()))
    return {};
  return window;
}

/// One op for a fill of `buffer` with `value` and a copy of `source` into
/// `window` of it: each element takes the source's inside the window, the
/// filled value outside.
void fillWithWindow(OpBuilder &b, Location loc, Value buffer, Value value,
                    memref::SubViewOp window, Value source) {
  auto type = cast<MemRefType>(buffer.getType());
  unsigned rank = type.getRank();
  SmallVector<AffineMap> maps{b.getMultiDimIdentityMap(rank)};
  SmallVector<utils::IteratorType> loops(rank, utils::IteratorType::parallel);
  b.create<linalg::GenericOp>(
      loc, TypeRange{}, ValueRange{}, ValueRange{buffer}, maps, loops,
      [&](OpBuilder &nb, Location nl, ValueRange) {
        auto index = [&](int64_t v) -> Value {
          return nb.create<arith::ConstantIndexOp>(nl, v);
        };
        Value inside = nb.create<arith::ConstantIntOp>(nl, 1, 1);
        SmallVector<Value> at;
        for (unsigned d = 0; d < rank; ++d) {
          int64_t offset = window.getStaticOffsets()[d],
                  size = window.getStaticSizes()[d],
                  stride = window.getStaticStrides()[d];
          Value i = nb.create<linalg::IndexOp>(nl, d);
          // Unsigned: an index before the window wraps around, past it.
          Value from = nb.create<arith::SubIOp>(nl, i, index(offset));
          Value in = nb.create<arith::AndIOp>(
              nl,
              nb.create<arith::CmpIOp>(nl, arith::CmpIPredicate::ult, from,
                                       index((size - 1) * stride + 1)),
              nb.create<arith::CmpIOp>(
                  nl, arith::CmpIPredicate::eq,
                  nb.create<arith::RemUIOp>(nl, from, index(stride)),
                  index(0)));
          inside = nb.create<arith::AndIOp>(nl, inside, in);
          at.push_back(nb.create<arith::DivUIOp>(nl, from, index(stride)));
        }
        auto pick = nb.create<scf::IfOp>(
            nl, inside,
            [&](OpBuilder &tb, Location tl) {
              tb.create<scf::YieldOp>(
                  tl, ValueRange{tb.create<memref::LoadOp>(tl, source, at)});
            },
            [&](OpBuilder &eb, Location el) {
              eb.create<scf::YieldOp>(el, value);
            });
        nb.create<linalg::YieldOp>(nl, pick.getResult(0));
      });
}

/// A fill followed by a copy into a window of the same buffer (a slice's
/// gradient, a pad), with only memory-effect-free ops between them, is
/// one launch instead of two: each element of the buffer takes the
/// source's value inside the window and the filled value outside.
void foldFilledCopies(Block &block) {
  for (Operation &op : llvm::make_early_inc_range(block)) {
    auto fill = dyn_cast<linalg::GenericOp>(op);
    Value value = fill ? filledValue(fill) : Value();
    if (!value || rowsOf(fill) == 0)
      continue;
    Operation *next = fill->getNextNode();
    while (next && isMemoryEffectFree(next))
      next = next->getNextNode();
    auto copy = dyn_cast_or_null<linalg::GenericOp>(next);
    Value buffer = fill.getDpsInitOperand(0)->get(), source;
    memref::SubViewOp window =
        copy ? copiedWindow(copy, buffer, source) : memref::SubViewOp();
    if (!window || !isa<MemRefType>(buffer.getType()))
      continue;
    OpBuilder b(copy);
    fillWithWindow(b, copy.getLoc(), buffer, value, window, source);
    copy->erase();
    fill->erase();
  }
}

/// The buffers behind `value`: the block argument or allocation it views,
/// and, for an out-parameter that the plan may give an argument's buffer
/// (an update in place, `mayAlias`), that argument too.
SmallVector<Value, 2> buffersBehind(Value value, ArrayRef<int64_t> mayAlias) {
  while (Operation *def = value.getDefiningOp()) {
    auto view = dyn_cast<ViewLikeOpInterface>(def);
    if (!view)
      break;
    value = view.getViewSource();
  }
  SmallVector<Value, 2> buffers{value};
  auto arg = dyn_cast<BlockArgument>(value);
  if (!arg || !isa<func::FuncOp>(arg.getOwner()->getParentOp()))
    return buffers;
  Block *entry = arg.getOwner();
  auto results = static_cast<unsigned>(mayAlias.size());
  unsigned firstOut = entry->getNumArguments() - results;
  if (arg.getArgNumber() >= firstOut &&
      mayAlias[arg.getArgNumber() - firstOut] >= 0)
    buffers.push_back(entry->getArgument(
        static_cast<unsigned>(mayAlias[arg.getArgNumber() - firstOut])));
  return buffers;
}

/// The elements of a buffer that an access may touch: [first, last] of
/// its flat index space (the whole buffer where the view's layout is not
/// static).
struct Span {
  Value buffer;
  int64_t first = 0, last = std::numeric_limits<int64_t>::max();
};

/// The spans `value` views: in the buffers behind it (buffersBehind), the
/// elements its static strided layout reaches (a copy into one window of
/// a concatenation), or all of them.
SmallVector<Span, 2> spansBehind(Value value, ArrayRef<int64_t> mayAlias) {
  SmallVector<Value, 2> buffers = buffersBehind(value, mayAlias);
  SmallVector<Span, 2> spans;
  for (Value buffer : buffers)
    spans.push_back({buffer});
  auto type = dyn_cast<MemRefType>(value.getType());
  SmallVector<int64_t> strides;
  int64_t offset = 0;
  if (!type || !type.hasStaticShape() || type.getNumElements() == 0 ||
      failed(getStridesAndOffset(type, strides, offset)) ||
      ShapedType::isDynamic(offset) || llvm::any_of(strides, [](int64_t s) {
        return ShapedType::isDynamic(s) || s < 0;
      }))
    return spans;
  int64_t last = offset;
  for (auto [size, stride] : llvm::zip(type.getShape(), strides))
    last += (size - 1) * stride;
  // The view's own buffer; an aliased argument stays whole.
  spans.front().first = offset;
  spans.front().last = last;
  return spans;
}

/// What a linalg op reads and what it writes, as spans of buffers.
struct Touches {
  SmallVector<Span, 4> reads, writes;
};

Touches touchesOf(linalg::GenericOp op, ArrayRef<int64_t> mayAlias) {
  Touches t;
  for (OpOperand *in : op.getDpsInputOperands())
    if (isa<MemRefType>(in->get().getType()))
      llvm::append_range(t.reads, spansBehind(in->get(), mayAlias));
  for (OpOperand &out : op.getDpsInitsMutable()) {
    SmallVector<Span, 2> spans = spansBehind(out.get(), mayAlias);
    llvm::append_range(t.writes, spans);
    if (op.payloadUsesValueFromOperand(&out))
      llvm::append_range(t.reads, spans);
  }
  // Buffers the body uses besides its operands (a gather's table, the
  // source of a fill and its window), memrefs defined outside the op: read
  // by a load, taken as read and written by anything else.
  op.getRegion().walk([&](Operation *inner) {
    for (Value v : inner->getOperands()) {
      if (!isa<MemRefType>(v.getType()) ||
          op->isAncestor(v.getParentRegion()->getParentOp()))
        continue;
      SmallVector<Span, 2> spans = spansBehind(v, mayAlias);
      llvm::append_range(t.reads, spans);
      if (!isa<memref::LoadOp>(inner))
        llvm::append_range(t.writes, spans);
    }
  });
  return t;
}

/// Whether no span of `a` shares an element with one of `b`.
bool disjoint(ArrayRef<Span> a, ArrayRef<Span> b) {
  return llvm::none_of(a, [&](const Span &x) {
    return llvm::any_of(b, [&](const Span &y) {
      return x.buffer == y.buffer && x.first <= y.last && y.first <= x.last;
    });
  });
}

/// Runs of linalg ops that can share a launch (Emitter::sharesLaunch: all
/// loops parallel, or a reduction whose blocks each serve their own
/// outputs), next to each other in `body` (nothing between them that
/// touches memory), none of which reads or writes an element another
/// writes (copies into separate windows of one buffer may share a run);
/// `mayAlias`: the function's `locus.results_may_alias`.
SmallVector<SmallVector<linalg::GenericOp>>
independentRuns(Block &body, ArrayRef<int64_t> mayAlias) {
  SmallVector<SmallVector<linalg::GenericOp>> runs(1);
  SmallVector<Touches> touched;
  auto restart = [&] {
    runs.emplace_back();
    touched.clear();
  };
  for (Operation &op : body) {
    auto generic = dyn_cast<linalg::GenericOp>(op);
    // An op with dynamic extents or buffers takes a launch of its own.
    if (!generic || !Emitter(generic).sharesLaunch() ||
        readsDynamicBuffers(generic)) {
      if (!isMemoryEffectFree(&op))
        restart();
      continue;
    }
    Touches t = touchesOf(generic, mayAlias);
    if (!llvm::all_of(touched, [&](const Touches &other) {
          return disjoint(other.writes, t.reads) &&
                 disjoint(other.writes, t.writes) &&
                 disjoint(other.reads, t.writes);
        }))
      restart();
    runs.back().push_back(generic);
    touched.push_back(std::move(t));
  }
  return runs;
}

/// One launch for `run` where its last op stood (what the ops read is
/// defined by then, and nothing between them touches memory): each op
/// takes its own range of blocks, chosen by the block's index. Erases the
/// ops.
LogicalResult launchSideBySide(MutableArrayRef<linalg::GenericOp> run,
                               const DenseMap<Operation *, Value> &filled,
                               bool explain) {
  std::vector<Emitter> emitters;
  emitters.reserve(run.size());
  int64_t reductions = 0;
  for (linalg::GenericOp op : run) {
    reductions += op.getNumReductionLoops() != 0;
    if (failed(emitters.emplace_back(op, explain, filled.lookup(op)).prepare()))
      return failure();
  }
  OpBuilder b(run.back());
  Location loc = run.front().getLoc();
  SmallVector<SmallVector<Value>> views;
  SmallVector<int64_t> first;
  int64_t blocks = 0;
  for (Emitter &e : emitters) {
    views.push_back(e.sideBySideViews(b));
    first.push_back(blocks);
    blocks += e.blocksSideBySide();
  }
  auto index = [&](int64_t v) -> Value {
    return b.create<arith::ConstantIndexOp>(loc, v);
  };
  Value one = index(1);
  auto l = b.create<gpu::LaunchOp>(loc, index(std::max<int64_t>(blocks, 1)),
                                   one, one, index(kBlock), one, one);
  b.setInsertionPointToStart(&l.getBody().front());
  b.create<gpu::TerminatorOp>(loc);
  b.setInsertionPointToStart(&l.getBody().front());
  Value bid = l.getBlockIds().x, tid = l.getThreadIds().x;
  for (auto [k, e] : llvm::enumerate(emitters)) {
    OpBuilder::InsertionGuard guard(b);
    Value local = b.create<arith::SubIOp>(loc, bid, index(first[k]));
    // Unsigned: a block before the op's range wraps around, above it.
    Value mine = b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::ult, local,
                                         index(e.blocksSideBySide()));
    auto share = b.create<scf::IfOp>(loc, mine, false);
    b.setInsertionPointToStart(&share.getThenRegion().front());
    e.emitSideBySide(b, local, tid, views[k]);
  }
  if (explain)
    run.front().emitRemark()
        << run.size() << " independent ops side by side in one launch of "
        << blocks << " blocks"
        << (reductions ? " (" + std::to_string(reductions) + " reductions)"
                       : std::string());
  for (linalg::GenericOp op : run)
    op.erase();
  return success();
}

/// In a function with `locus.results_may_alias` (an update in place
/// shares a buffer with an argument), each run of two or more independent
/// ops that can share a launch (an optimizer's steps, one per parameter;
/// the bias gradients of a layer's backward pass) becomes one launch;
/// counts the launches it makes in `launches`. `filled`: what foldFills
/// found.
LogicalResult mapSideBySide(func::FuncOp func,
                            const DenseMap<Operation *, Value> &filled,
                            bool explain, int64_t &launches) {
  auto aliasing =
      func->getAttrOfType<DenseI64ArrayAttr>(kResultsMayAliasAttrName);
  Block &body = func.getBody().front();
  if (!aliasing || body.getNumArguments() < aliasing.size())
    return success();
  for (auto &run : independentRuns(body, aliasing.asArrayRef())) {
    if (run.size() < 2)
      continue;
    if (failed(launchSideBySide(run, filled, explain)))
      return failure();
    ++launches;
  }
  return success();
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

/// The values stored at constant indices 0 .. rank-1 of the shape buffer
/// `shape` of a reshape (an allocation the host fills just before), if
/// every element is stored once.
std::optional<SmallVector<Value>> storedShape(Value shape, int64_t rank) {
  if (!shape.getDefiningOp<memref::AllocOp>())
    return std::nullopt;
  SmallVector<Value> extents(rank);
  for (Operation *user : shape.getUsers()) {
    auto store = dyn_cast<memref::StoreOp>(user);
    if (!store)
      continue;
    std::optional<int64_t> at =
        store.getIndices().size() == 1
            ? getConstantIntValue(store.getIndices().front())
            : std::nullopt;
    if (!at || *at < 0 || *at >= rank || extents[*at])
      return std::nullopt;
    extents[*at] = store.getValueToStore();
  }
  if (llvm::any_of(extents, [](Value v) { return !v; }))
    return std::nullopt;
  return extents;
}

/// A reshape of a packed buffer into dims the host computed (a dynamic
/// dimension split into several, which --locus-dynamic-kernels writes as
/// a shape buffer MLIR's expand_shape cannot take) becomes a cast with
/// those sizes and row-major strides: on a GPU the shape buffer would be
/// device memory, which the host cannot fill or read.
void reshapesToCasts(func::FuncOp func) {
  SmallVector<memref::ReshapeOp> reshapes;
  func.walk([&](memref::ReshapeOp r) { reshapes.push_back(r); });
  for (memref::ReshapeOp reshape : reshapes) {
    auto type = dyn_cast<MemRefType>(reshape.getResult().getType());
    auto source = dyn_cast<MemRefType>(reshape.getSource().getType());
    if (!type || !source)
      continue;
    SmallVector<int64_t> strides;
    int64_t offset = 0;
    std::optional<SmallVector<Value>> extents =
        storedShape(reshape.getShape(), type.getRank());
    // A packed source: of the identity layout, or 1-D of stride 1 from 0.
    bool packed = source.getLayout().isIdentity() ||
                  (source.getRank() == 1 &&
                   succeeded(getStridesAndOffset(source, strides, offset)) &&
                   offset == 0 && strides.front() == 1);
    if (!extents || !type.getLayout().isIdentity() || !packed)
      continue;
    OpBuilder b(reshape);
    Location loc = reshape.getLoc();
    SmallVector<OpFoldResult> sizes(extents->begin(), extents->end());
    SmallVector<OpFoldResult> steps(type.getRank());
    Value step = b.create<arith::ConstantIndexOp>(loc, 1);
    for (int64_t d = type.getRank() - 1; d >= 0; --d) {
      steps[d] = step;
      step = b.create<arith::MulIOp>(loc, step, (*extents)[d]);
    }
    Value cast = b.create<memref::ReinterpretCastOp>(
        loc, type, reshape.getSource(), b.getIndexAttr(0), sizes, steps);
    Value shape = reshape.getShape();
    reshape.getResult().replaceAllUsesWith(cast);
    reshape.erase();
    // Its dims, which canonicalization reads back from the shape buffer.
    for (Operation *user : llvm::make_early_inc_range(shape.getUsers()))
      if (auto load = dyn_cast<memref::LoadOp>(user)) {
        std::optional<int64_t> at =
            load.getIndices().size() == 1
                ? getConstantIntValue(load.getIndices().front())
                : std::nullopt;
        if (at && *at >= 0 && *at < type.getRank()) {
          load.getResult().replaceAllUsesWith((*extents)[*at]);
          load.erase();
        }
      }
    if (llvm::all_of(shape.getUsers(), [](Operation *user) {
          return isa<memref::StoreOp, memref::DeallocOp>(user);
        })) {
      for (Operation *user : llvm::make_early_inc_range(shape.getUsers()))
        user->erase();
      shape.getDefiningOp()->erase();
    }
  }
}

/// A scalar the host stores into a buffer (a count of a dynamic size,
/// computed from the run's sizes) is stored by a launch of one thread;
/// returns how many such launches it made.
int64_t launchHostStores(func::FuncOp func) {
  SmallVector<memref::StoreOp> stores;
  func.walk<WalkOrder::PreOrder>([&](Operation *op) {
    if (isa<gpu::LaunchOp>(op))
      return WalkResult::skip();
    if (auto store = dyn_cast<memref::StoreOp>(op);
        store && !store->hasAttr(kHostOnlyAttrName))
      stores.push_back(store);
    return WalkResult::advance();
  });
  for (memref::StoreOp store : stores) {
    OpBuilder b(store);
    Location loc = store.getLoc();
    Value one = b.create<arith::ConstantIndexOp>(loc, 1);
    auto launch = b.create<gpu::LaunchOp>(loc, one, one, one, one, one, one);
    b.setInsertionPointToStart(&launch.getBody().front());
    b.create<gpu::TerminatorOp>(loc);
    store->moveBefore(&launch.getBody().front().front());
  }
  return static_cast<int64_t>(stores.size());
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
    reshapesToCasts(func);
    // Copies become linalg copies, named ops generic ones.
    SmallVector<memref::CopyOp> copies;
    func.walk([&](memref::CopyOp copy) {
      if (!copy->hasAttr(kHostOnlyAttrName))
        copies.push_back(copy);
    });
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
    FailureOr<int64_t> scatters = mapScatterAdds(func, explain);
    if (failed(scatters))
      return failure();
    numLaunches += scatters.value_or(0);
    numLaunches += mapRowGroups(func.getBody().front(), explain);
    foldFilledCopies(func.getBody().front());
    DenseMap<Operation *, Value> filled = foldFills(func.getBody().front());
    int64_t sideBySide = 0;
    if (failed(mapSideBySide(func, filled, explain, sideBySide)))
      return failure();
    numLaunches += sideBySide;
    SizeBounds bounds(func);
    SmallVector<linalg::GenericOp> generics;
    func.walk([&](linalg::GenericOp op) { generics.push_back(op); });
    for (linalg::GenericOp op : generics) {
      if (!op.hasPureBufferSemantics())
        return op.emitOpError("expected bufferized IR");
      if (failed(Emitter(op, explain, filled.lookup(op),
                         bounds.known() ? &bounds : nullptr)
                     .run()))
        return failure();
      ++numLaunches;
    }
    numLaunches += launchHostStores(func);
    func->removeAttr(kSizesArgIndexAttrName);
    func->removeAttr(kSizeBoundsAttrName);
    // What is left on the host may compute addresses, allocate, call the
    // runtime and read the run's sizes (host memory), but never touch a
    // buffer: those are device pointers.
    WalkResult left = func.walk<WalkOrder::PreOrder>([&](Operation *op) {
      if (isa<gpu::LaunchOp>(op) || bounds.readsSizes(op) ||
          op->hasAttr(kHostOnlyAttrName))
        return WalkResult::skip();
      // A reshape into dynamic dims: its host lowering reads the shape
      // buffer, device memory here (reshapesToCasts takes those it can).
      // One into static dims takes its sizes from its type.
      if (auto reshape = dyn_cast<memref::ReshapeOp>(op);
          reshape && !cast<MemRefType>(reshape.getType()).hasStaticShape()) {
        reshape.emitOpError("reads its shape from a buffer the host cannot "
                            "read on a GPU; it has no CUDA lowering");
        return WalkResult::interrupt();
      }
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
