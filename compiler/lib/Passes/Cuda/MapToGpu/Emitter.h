//===- Emitter.h - how --locus-map-to-gpu maps one linalg op ---*- C++ -*-===//
//
// What the files of --locus-map-to-gpu share: the launch geometry, the
// strategies and the rules that choose among them (Emitter::choose), and
// the Emitter that writes one linalg op as gpu.launch ops. MapToGpu.cpp
// holds the rules, the addressing and the pass; Elementwise.cpp the
// parallel ops; Reductions.cpp the reduction strategies; Rows.cpp the
// row groups, several ops in one launch. Private to the pass.
//
//===----------------------------------------------------------------------===//

#ifndef LOCUS_LIB_PASSES_CUDA_MAPTOGPU_EMITTER_H
#define LOCUS_LIB_PASSES_CUDA_MAPTOGPU_EMITTER_H

#include "locus/Dialect/LocusDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"

#include <optional>
#include <string>

namespace locus::gpu_mapping {

// The mapping reads as MLIR code: its names, unqualified, inside this
// namespace only.
using namespace mlir;

/// Threads per block of every launch this pass makes.
inline constexpr int64_t kBlock = 256;
/// The largest grid.x a launch may have.
inline constexpr int64_t kMaxGrid = (int64_t{1} << 31) - 1;
/// Blocks that fill a large GPU several times over (an H100 has 132
/// multiprocessors, each running up to 8 blocks of 256 threads): a
/// reduction with fewer outputs than this is split.
inline constexpr int64_t kFillBlocks = 1056;
/// The fewest elements a split block reduces (16 per thread).
inline constexpr int64_t kMinSplit = 16 * kBlock;
/// Threads that fill a large GPU several times over.
inline constexpr int64_t kFillThreads = kFillBlocks * kBlock;
/// The fewest elements a thread of a split column reduction folds.
inline constexpr int64_t kMinColumnShare = 16;
/// The most lanes of a warp that share one output of a column reduction
/// (emitColumnLanes): with 8, a warp reads 4 neighbouring outputs of 8
/// rows at a time, 16 bytes of each row.
inline constexpr int64_t kMaxColumnLanes = 8;
/// The largest grid.y a launch may have.
inline constexpr int64_t kMaxGridY = 65535;
/// The longest rows a warp reduces alone (8 elements per lane).
inline constexpr int64_t kMaxWarpRow = 8 * 32;
/// Consecutive elements each thread of a plain elementwise launch takes:
/// 16 bytes of f32, which the NVPTX backend loads and stores as one vector
/// where the buffers are aligned (plan buffers are 64-byte aligned).
inline constexpr int64_t kPerThread = 4;

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
  /// A buffer of dynamic shape or layout (a graph with dynamic sizes):
  /// flat, its offset and strides host-side values (the run's), and, with
  /// the identity layout, its elements in the op's row-major order.
  Value runOffset;
  SmallVector<Value> runStrides;
  bool contiguous = false;
};

/// The upper bounds of the dynamic extents of a CUDA kernel of a graph with
/// dynamic sizes (Bounds.cpp): what the host computes from the sizes the
/// kernel reads from its sizes argument, each at most its bound
/// (--locus-dynamic-kernels{keep-bounds} marks the function).
class SizeBounds {
public:
  explicit SizeBounds(func::FuncOp func);

  /// Whether the function has dynamic sizes (and their bounds).
  bool known() const { return bool(sizes); }

  /// Whether `op` reads the run's sizes (host memory: the launcher may).
  bool readsSizes(Operation *op) const;

  /// The upper bound of an index value; none where it is unknown.
  std::optional<int64_t> of(Value value) const;
  std::optional<int64_t> of(OpFoldResult value) const;

  /// The upper bound of dimension `d` of `memref`.
  std::optional<int64_t> dimOf(Value memref, unsigned d) const;

  /// How many elements the buffer that `memref` views can have.
  std::optional<int64_t> elementsBehind(Value memref) const;

private:
  std::optional<int64_t> ofMap(AffineMap map, ValueRange operands) const;

  Value sizes;
  SmallVector<int64_t> bound;
};

/// The combiner of a one-output reduction that gpu.all_reduce can do, with
/// the value that starts each thread's partial result.
struct Combiner {
  Operation *op = nullptr;
  gpu::AllReduceOperation kind;
  TypedAttr identity;
};

/// How one linalg op runs on the GPU.
enum class Strategy {
  flatElementwise,  ///< plain elementwise: 4 consecutive elements a thread
  threadPerElement, ///< any other parallel op
  columnThreads,    ///< outputs contiguous: a thread per output
  columnLanes,      ///< the same, the reduced elements split over a few
                    ///< lanes of a warp, combined by shuffles
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

/// The combiner of a one-output reduction that gpu.all_reduce can do, if
/// the op has one.
std::optional<Combiner> matchCombiner(linalg::GenericOp op);

/// Clones `op`'s body with its block arguments bound to `args` (a null
/// one: unused) on top of `mapping`, and linalg.index ops to `loops`;
/// returns the yielded values.
SmallVector<Value> cloneBody(OpBuilder &b, linalg::GenericOp op,
                             ArrayRef<Value> args, IRMapping mapping,
                             ArrayRef<Value> loops = {});

/// `c`'s combiner of `op` cloned on `acc` (where the output was) and
/// `value`.
Value cloneCombiner(OpBuilder &b, linalg::GenericOp op, const Combiner &c,
                    Value acc, Value value);

/// Writes each row group of `block` (Rows.cpp: a run of ops that go row by
/// row over the same rows, with a reduction among them) as one launch and
/// erases its ops; returns how many launches it made.
int64_t mapRowGroups(Block &block, bool explain);

/// Runs each scatter-add loop of `func` (Scatters.cpp: what
/// --locus-lower-to-linalg makes of locus.gather_grad) as one launch of a
/// thread per element, each adding atomically; returns how many launches.
FailureOr<int64_t> mapScatterAdds(func::FuncOp func, bool explain);

/// Writes one linalg op of a CUDA kernel as gpu.launch ops.
class Emitter {
public:
  /// With `explain`, run() gives the strategy as a remark at the op.
  /// `filled`: the value a fill just wrote over the whole output of this
  /// one-output op (erased by the caller), read instead of the output.
  /// `bounds`: those of the kernel's dynamic sizes, where it has them.
  explicit Emitter(linalg::GenericOp op, bool explain = false,
                   Value filled = {}, const SizeBounds *bounds = nullptr)
      : op(op), loc(op.getLoc()), explain(explain), filled(filled),
        bounds(bounds) {}
  /// Chooses the op's strategy, emits its launches before it and erases
  /// it; fails, saying why at the op, on a dynamic shape or layout that
  /// has no bound. An op with dynamic extents is mapped as at their bounds
  /// (strategy, block size, splits, view types), its grid and every
  /// bounds check and loop end at the run's extents, computed on the host.
  LogicalResult run();

  /// Reads the op's loops and buffers (what run() does first); fails, as
  /// run() does, on a dynamic shape or layout.
  LogicalResult prepare();

  /// Whether the op can share a launch with others: static extents, some
  /// work, and all loops parallel or a reduction whose strategy runs in
  /// one launch of kBlock-thread blocks that each serve their own outputs
  /// (columnThreads, threadPerOutput, columnLanes, rowWarp). Reads only
  /// the op's loops (before prepare()).
  bool sharesLaunch();

  /// After prepare(): how many blocks of kBlock threads the op takes in a
  /// launch it shares.
  int64_t blocksSideBySide();

  /// Host-side views the op's share of a launch reads (the flat buffers of
  /// a plain elementwise op); made before the launch.
  SmallVector<Value> sideBySideViews(OpBuilder &b);

  /// The op's share of a launch it shares with others, in the launch's
  /// body: `blockId` counts the op's own blocks from 0, and every thread
  /// of a block takes the same share (so a warp's shuffles have all its
  /// lanes).
  void emitSideBySide(OpBuilder &b, Value blockId, Value tid,
                      ArrayRef<Value> views);

  /// The rules, in order: the first that applies decides. `c` is the op's
  /// one combiner, if it has one.
  Choice choose(const std::optional<Combiner> &c);

private:
  /// The loops' static extents (ranges), and which are parallel and which
  /// reduced.
  void readLoops();

  /// The strategy of an op that shares a launch (choose(), once).
  const Choice &sharedChoice();

  /// The strategy chosen, for -debug-only=locus-map-to-gpu.
  void debugStrategy(const std::string &what) const;

  int64_t product(ArrayRef<unsigned> dims) const;

  /// With dynamic extents: each loop's run extent (host-side) and bound;
  /// fails where a loop has no bound.
  LogicalResult prepareRunExtents(OpBuilder &b);

  /// The product of the run's extents of `dims` (host-side), or null when
  /// they are all static.
  Value runProduct(OpBuilder &b, ArrayRef<unsigned> dims);

  /// A buffer of dynamic shape or layout as a flat view of the buffer it
  /// views, with its run's offset and strides.
  LogicalResult dynamicAccess(OpBuilder &b, Value value, Access &a);

  /// Views at their bounds of the buffers of dynamic shape the body reads
  /// from above (boundViews); fails on one with a dynamic layout.
  LogicalResult viewCapturedAtBounds(OpBuilder &b);

  /// The extent of loop `d`, of the parallel loops (rows) and of the
  /// reduced ones (cols) in this run: constants where static.
  Value rangeAt(OpBuilder &b, unsigned d);
  Value rowsAt(OpBuilder &b);
  Value colsAt(OpBuilder &b);

  /// Blocks for the run's rows at `per` rows a block, times `times`:
  /// computed on the host (before a launch) where rows are dynamic.
  Value gridFor(OpBuilder &b, int64_t per, int64_t times = 1);

  LogicalResult access(OpBuilder &b, Value value, Access &a);

  Value index(OpBuilder &b, int64_t v);

  /// Splits `linear` into indices over `dims` (row-major, last fastest);
  /// writes them into `indices` at those dimensions.
  void delinearize(OpBuilder &b, Value linear, ArrayRef<unsigned> dims,
                   SmallVectorImpl<Value> &indices);

  /// The memref and the indices of operand `i` at loop indices `loops`.
  std::pair<Value, SmallVector<Value>> address(OpBuilder &b, unsigned i,
                                               ArrayRef<Value> loops);

  Value load(OpBuilder &b, unsigned i, ArrayRef<Value> loops);

  /// What output `k` holds at `loops` before the op: the fill's value when
  /// a fill was folded in, else a load.
  Value initial(OpBuilder &b, unsigned k, ArrayRef<Value> loops);

  void store(OpBuilder &b, Value v, unsigned i, ArrayRef<Value> loops);

  /// A launch of grid (x gridY) x block threads; the builder is left
  /// inside its body.
  gpu::LaunchOp launch(OpBuilder &b, int64_t grid, int64_t block,
                       int64_t gridY = 1);
  gpu::LaunchOp launch(OpBuilder &b, Value grid, int64_t block,
                       int64_t gridY = 1);

  /// Clones the constant globals the op reads where the builder is (in a
  /// launch's body) and maps them for body().
  void cloneGlobals(OpBuilder &b);

  /// Clones the body with its block arguments bound to `args`; returns the
  /// yielded values.
  SmallVector<Value> body(OpBuilder &b, ArrayRef<Value> args,
                          ArrayRef<Value> loops);

  /// Inputs loaded at `loops`; outputs loaded where the body reads them.
  SmallVector<Value> operandsAt(OpBuilder &b, ArrayRef<Value> loops);

  /// blockIdx.x * `block` + threadIdx.x in launch `l`.
  Value globalId(OpBuilder &b, gpu::LaunchOp l, int64_t block);

  /// Leaves the builder inside `if (value < limit)`.
  void guardBelow(OpBuilder &b, Value value, int64_t limit);
  void guardBelow(OpBuilder &b, Value value, Value limit);

  /// A launch of one thread per point of the parallel loops (`rows`);
  /// leaves the builder inside the bounds check, with `loops` set at the
  /// parallel dimensions (0 at the others). Returns the thread's point.
  Value threadPerRow(OpBuilder &b, SmallVectorImpl<Value> &loops);

  void emitParallel(OpBuilder &b);

  /// Whether every buffer is read and written whole and in order (identity
  /// maps, identity layouts, no constant global) by a body that does not
  /// ask for its indices, over at least one dimension: then one flat index
  /// addresses them all, with no division per element.
  bool plainElementwise();

  /// A buffer of identity layout as its 1-D view (built on the host side).
  Value flatView(OpBuilder &b, Value memref);

  /// A plain elementwise op: each thread takes kPerThread consecutive
  /// elements of the flat buffers, unchecked when all of them are in range
  /// (every thread but the last), one by one with a check otherwise.
  void emitFlatParallel(OpBuilder &b);

  /// The flat buffers of a plain elementwise op (host-side views).
  SmallVector<Value> flatViews(OpBuilder &b);

  /// The flat buffers declared 16-byte aligned (plan buffers are 64-byte
  /// aligned, temporaries come from the driver's allocator).
  void assumeAligned(OpBuilder &b, ArrayRef<Value> flat);

  /// The elements of global thread `id` of a plain elementwise op.
  void flatThread(OpBuilder &b, ArrayRef<Value> flat, Value id);

  /// The body at elements base .. base + kPerThread - 1, all in range,
  /// written out: every load first, then the bodies, then every store, so
  /// that the backend can merge each buffer's accesses into one vector.
  void wholeElements(OpBuilder &b, ArrayRef<Value> flat, Value base);

  /// The body at elements base .. base + kPerThread - 1 of the flat
  /// buffers, one after the other; with `checked`, only those below
  /// `rows`.
  void flatElements(OpBuilder &b, ArrayRef<Value> flat, Value base,
                    bool checked);

  /// Whether the outputs, not the reduced elements, lie next to each other
  /// in memory: the innermost loop is parallel (a bias gradient, a sum over
  /// the rows of a row-major matrix). Then neighbouring threads must take
  /// neighbouring outputs, each folding its own column.
  bool columnWise() const;

  /// How many blocks share each output of a one-combiner reduction: 1
  /// when there are outputs enough to fill the GPU or too few elements.
  int64_t splitsOf() const;

  /// Folds the reduced elements [first, end) of the output at `loops`,
  /// every `block`th (first: this thread's), into a partial result, then
  /// combines the block's partials with gpu.all_reduce.
  Value foldBlock(OpBuilder &b, const Combiner &c, ArrayRef<Value> loops,
                  Value first, Value end, int64_t block);

  /// Folds the reduced elements [first, end) of the output at `loops`,
  /// every `step`th, into a partial result that starts at the identity.
  Value foldStrided(OpBuilder &b, const Combiner &c, ArrayRef<Value> loops,
                    Value first, Value end, int64_t step);

  /// The combiner applied to `acc` (where the output was) and `value`.
  Value combine(OpBuilder &b, const Combiner &c, Value acc, Value value);

  /// In thread 0: the output at `loops` combined with `value`, stored.
  void finish(OpBuilder &b, const Combiner &c, ArrayRef<Value> loops, Value tid,
              Value value);

  static int64_t blockFor(int64_t count);

  void emitBlockReduction(OpBuilder &b, const Combiner &c);

  /// Few outputs, many elements each: `splits` blocks per output each fold
  /// a contiguous share into a partial (a temporary buffer), then one block
  /// per output combines its partials in order. Deterministic: no atomics,
  /// the same order every run.
  void emitSplitReduction(OpBuilder &b, const Combiner &c, int64_t splits);

  /// A warp per output, kBlock / 32 outputs per block: each lane folds
  /// every 32nd element, then five butterfly shuffles combine the lanes and
  /// lane 0 stores. The bounds check is the same for a whole warp, so every
  /// lane of a warp that shuffles is there.
  void emitWarpReduction(OpBuilder &b, const Combiner &c);
  /// The same in a launch's body, from block `blockId` and thread `tid`.
  void warpShare(OpBuilder &b, const Combiner &c, Value blockId, Value tid);

  /// The split of a column reduction: launch (rows / kBlock) x `splits`
  /// threads fold their share of their output's column into partials
  /// ([splits][rows], so neighbouring threads write neighbours), then a
  /// thread per output folds its partials in order into the output.
  void emitColumnSplit(OpBuilder &b, const Combiner &c, int64_t splits,
                       int64_t share);

  /// A column reduction with few shares per output, in one launch: a
  /// warp holds 32 / `lanes` neighbouring outputs, each folded by `lanes`
  /// lanes (lane l: output l % (32 / lanes), share l / (32 / lanes)), a
  /// share taking every `lanes`-th reduced element, so that a warp reads
  /// neighbouring outputs of `lanes` neighbouring rows at a time. Then
  /// butterfly shuffles combine the shares and the lanes of share 0
  /// store. Lanes past the last output fold the last one (every lane of a
  /// warp takes part in the shuffles) and do not store.
  void emitColumnLanes(OpBuilder &b, const Combiner &c, int64_t lanes);
  /// The same in a launch's body, from block `blockId` and thread `tid`.
  void columnLanesShare(OpBuilder &b, const Combiner &c, int64_t lanes,
                        Value blockId, Value tid);

  /// A thread per output folding all its elements in order (any
  /// reduction, several outputs too).
  void emitThreadPerRow(OpBuilder &b);
  /// The same for the output at `loops`, inside its thread's bounds check.
  void foldRow(OpBuilder &b, ArrayRef<Value> loops);

  linalg::GenericOp op;
  Location loc;
  bool explain = false;
  Value filled;
  const SizeBounds *bounds = nullptr;
  /// The loops' extents: static, or the bound of a dynamic one.
  SmallVector<int64_t> ranges;
  /// With dynamic extents: each loop's extent in this run (host-side; null
  /// where static), and the products over the parallel and the reduced
  /// loops (null where all of them are static).
  SmallVector<Value> runRanges;
  Value runRows, runCols;
  SmallVector<unsigned> parallelDims, reductionDims;
  int64_t rows = 1, cols = 1;
  SmallVector<Access> accesses;
  /// sharedChoice()'s strategy and the combiner it folds with.
  std::optional<Choice> shared;
  std::optional<Combiner> sharedCombiner;
  IRMapping globals;
  /// Buffers of dynamic shape the body reads from above (a gather's
  /// table), as host-side views at their bounds: a kernel takes buffers of
  /// static shape.
  IRMapping boundViews;
};

} // namespace locus::gpu_mapping

#endif // LOCUS_LIB_PASSES_CUDA_MAPTOGPU_EMITTER_H
