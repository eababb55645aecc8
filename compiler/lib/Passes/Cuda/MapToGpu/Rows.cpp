//===- Rows.cpp - row groups: whole rows in one launch --------------------===//
//
// A run of linalg ops in a CUDA kernel that all go row by row over the same
// rows (a softmax: the row maxima, exp of the differences, the row sums,
// the quotients) becomes one launch: a warp (or a few lanes, or a block)
// per row holds the row in registers from op to op, combines it with
// shuffles or gpu.all_reduce where an op reduces, and writes to memory only
// what is read after the run. One read of the input and one write of the
// output where the ops one by one made a launch and a pass over memory
// each. Ops that do not fit stay with the one-op strategies of Emitter.
//
//===----------------------------------------------------------------------===//

#include "Emitter.h"

#include "mlir/Dialect/SCF/IR/SCF.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/Support/Debug.h"

#define DEBUG_TYPE "locus-map-to-gpu"

namespace locus::gpu_mapping {
namespace {

/// The longest rows a group keeps in registers: 16 elements a thread of a
/// block. Longer rows loop over their columns (see RowEmitter::looped).
constexpr int64_t kMaxGroupRow = 16 * kBlock;
/// The fewest rows a looped group takes (a block each): fewer, long rows
/// are left to the split strategies, which fill the GPU.
constexpr int64_t kMinLoopedRows = 128;
/// The most shorter groups groupAt tries from one start when the longest
/// is not acceptable (each try classifies the group's ops again).
constexpr size_t kMaxShrinks = 64;
/// Rows up to this long go to a warp at most (16 elements a lane).
constexpr int64_t kMaxWarpGroupRow = 16 * 32;

/// How an op of a group addresses one operand, by the row and the column
/// of the group's [rows, cols] space.
enum class Mode { scalar, full, row, column };

/// What an op of a group does with each row.
enum class Kind {
  elementwise, ///< [rows, cols], all loops parallel
  reduce,      ///< [rows, cols] to [rows], the last loop reduced
  rowwise,     ///< [rows], all loops parallel (a fill, a scale of a sum)
};

struct Member {
  mutable linalg::GenericOp op; // an op handle: its methods are not const
  Kind kind;
  SmallVector<Mode> modes; // one per operand
  Combiner combiner;       // for a reduction
};

struct Group {
  int64_t rows = 0, cols = 0;
  SmallVector<Member> members;
};

int64_t product(ArrayRef<int64_t> v) {
  int64_t p = 1;
  for (int64_t x : v)
    p *= x;
  return p;
}

SmallVector<int64_t> rowMajor(ArrayRef<int64_t> shape) {
  SmallVector<int64_t> strides(shape.size(), 1);
  for (int64_t d = static_cast<int64_t>(shape.size()) - 2; d >= 0; --d)
    strides[d] = strides[d + 1] * shape[d + 1];
  return strides;
}

/// The buffer a view was made from, through expand and collapse shapes.
Value rootOf(Value v) {
  while (Operation *def = v.getDefiningOp()) {
    if (auto e = dyn_cast<memref::ExpandShapeOp>(def))
      v = e.getSrc();
    else if (auto c = dyn_cast<memref::CollapseShapeOp>(def))
      v = c.getSrc();
    else
      break;
  }
  return v;
}

/// Per loop, how many elements of `operand`'s buffer one step of that loop
/// moves; none unless the buffer is a static, identity-layout one indexed
/// by loops and zeros.
std::optional<SmallVector<int64_t>> stepsOf(linalg::GenericOp op,
                                            OpOperand &operand) {
  auto type = dyn_cast<MemRefType>(operand.get().getType());
  if (!type || !type.hasStaticShape() || !type.getLayout().isIdentity() ||
      operand.get().getDefiningOp<memref::GetGlobalOp>())
    return std::nullopt;
  AffineMap map = op.getMatchingIndexingMap(&operand);
  SmallVector<int64_t> strides = rowMajor(type.getShape());
  SmallVector<int64_t> steps(map.getNumDims(), 0);
  for (auto [r, e] : llvm::enumerate(map.getResults())) {
    if (auto d = dyn_cast<AffineDimExpr>(e))
      steps[d.getPosition()] += strides[r];
    else if (auto c = dyn_cast<AffineConstantExpr>(e); !c || c.getValue())
      return std::nullopt;
  }
  return steps;
}

/// How `operand` of an op over `ranges` is addressed in a group of `cols`
/// columns: the op's points are [row..., col], or [row...] for a rowwise op.
std::optional<Mode> modeOf(linalg::GenericOp op, OpOperand &operand,
                           ArrayRef<int64_t> ranges, bool rowwise,
                           int64_t cols) {
  if (!isa<MemRefType>(operand.get().getType()))
    return operand.get().getType().isIntOrIndexOrFloat()
               ? std::optional<Mode>(Mode::scalar)
               : std::nullopt;
  std::optional<SmallVector<int64_t>> steps = stepsOf(op, operand);
  if (!steps)
    return std::nullopt;
  int64_t elements = cast<MemRefType>(operand.get().getType()).getNumElements();
  if (rowwise)
    return *steps == rowMajor(ranges) && elements == product(ranges)
               ? std::optional<Mode>(Mode::row)
               : std::nullopt;
  ArrayRef<int64_t> lead = ranges.drop_back();
  SmallVector<int64_t> row = rowMajor(lead), column(ranges.size(), 0);
  row.push_back(0);
  column.back() = 1;
  if (*steps == rowMajor(ranges) && elements == product(ranges))
    return Mode::full;
  if (*steps == row && elements == product(lead))
    return Mode::row;
  if (*steps == column && elements == cols)
    return Mode::column;
  return std::nullopt;
}

/// Whether the body can be cloned into a launch as it is.
bool plainBody(linalg::GenericOp op) {
  WalkResult r = op.getRegion().walk([](Operation *inner) {
    if (isa<linalg::IndexOp>(inner))
      return WalkResult::interrupt();
    for (Value v : inner->getOperands())
      if (v.getDefiningOp<memref::GetGlobalOp>())
        return WalkResult::interrupt();
    return WalkResult::advance();
  });
  return !r.wasInterrupted();
}

/// `op` as a member of a group over [rows, cols], if it can be one.
std::optional<Member> classify(linalg::GenericOp op, int64_t rows,
                               int64_t cols) {
  if (!op.hasPureBufferSemantics() || op.getNumDpsInits() != 1 ||
      !plainBody(op))
    return std::nullopt;
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  if (ranges.empty() || llvm::any_of(ranges, ShapedType::isDynamic))
    return std::nullopt;
  auto iterators = op.getIteratorTypesArray();
  auto parallel = [](utils::IteratorType t) {
    return t == utils::IteratorType::parallel;
  };
  Member m{op, Kind::elementwise, {}, {}};
  if (ranges.back() == cols && product(ArrayRef(ranges).drop_back()) == rows &&
      llvm::all_of(ArrayRef(iterators).drop_back(), parallel)) {
    if (!parallel(iterators.back())) {
      std::optional<Combiner> c = matchCombiner(op);
      if (!c || !c->identity.getType().isF32())
        return std::nullopt;
      m.kind = Kind::reduce;
      m.combiner = *c;
    }
  } else if (llvm::all_of(iterators, parallel) && product(ranges) == rows) {
    m.kind = Kind::rowwise;
  } else {
    return std::nullopt;
  }
  // A parallel op that reads what its output held is not one the group
  // keeps in registers.
  if (m.kind != Kind::reduce && !op.getRegionOutputArgs().front().use_empty())
    return std::nullopt;
  for (OpOperand &operand : op->getOpOperands()) {
    std::optional<Mode> mode =
        modeOf(op, operand, ranges, m.kind == Kind::rowwise, cols);
    if (!mode)
      return std::nullopt;
    m.modes.push_back(*mode);
  }
  Mode out = m.modes.back();
  if (out != (m.kind == Kind::elementwise ? Mode::full : Mode::row))
    return std::nullopt;
  return m;
}

/// Ops that may stand between the members of a group: they only make
/// buffers, views and constants, or free buffers.
bool transparent(Operation *op) {
  return isa<memref::AllocOp, memref::DeallocOp, memref::ExpandShapeOp,
             memref::CollapseShapeOp, arith::ConstantOp>(op);
}

/// Whether a group of rows too long for registers can loop over its
/// columns, computing an elementwise op's values again wherever they are
/// read: rows enough to fill the GPU, an elementwise op (a lone reduction
/// is the split strategies' to run), and nothing an elementwise op reads
/// changed after it (so that computing it again reads what it read): a
/// whole buffer is written once and never read before, and a row buffer an
/// elementwise op reads is not written after it.
bool loopable(const Group &g) {
  if (g.rows < kMinLoopedRows ||
      llvm::none_of(
          g.members,
          [](const Member &m) { return m.kind == Kind::elementwise; }))
    return false;
  llvm::DenseSet<Value> written, readOld, rowsRead;
  for (const Member &m : g.members) {
    for (OpOperand &operand : m.op->getOpOperands()) {
      Mode mode = m.modes[operand.getOperandNumber()];
      Value root = rootOf(operand.get());
      if (m.op.getMatchingBlockArgument(&operand).use_empty() ||
          mode == Mode::scalar)
        continue;
      if (mode == Mode::full && !written.contains(root))
        readOld.insert(root);
      if (mode == Mode::row && m.kind == Kind::elementwise)
        rowsRead.insert(root);
    }
    Value out = rootOf(m.op.getDpsInits().front());
    bool full = m.kind == Kind::elementwise;
    if (rowsRead.contains(out) ||
        (full && (!written.insert(out).second || readOld.contains(out))))
      return false;
  }
  return true;
}

/// Whether the group is worth a launch of its own and safe to run row by
/// row: a reduction and another op, and no buffer that it reads by column
/// (shared by every row) written by one of its ops.
bool acceptable(const Group &g) {
  if (g.members.size() < 2 || llvm::none_of(g.members, [](const Member &m) {
        return m.kind == Kind::reduce;
      }))
    return false;
  llvm::DenseSet<Value> written;
  for (const Member &m : g.members)
    written.insert(rootOf(m.op.getDpsInits().front()));
  for (const Member &m : g.members)
    for (auto [operand, mode] : llvm::zip(m.op->getOperands(), m.modes))
      if (mode == Mode::column && written.contains(rootOf(operand)))
        return false;
  if (g.cols > kMaxGroupRow && !loopable(g))
    return false;
  // A row that a block shares: lane 0 stores a [rows] op's result with no
  // barrier before it, so no other warp of the block may still have to
  // read that buffer's old value from memory.
  if (g.cols <= kMaxWarpGroupRow)
    return true;
  llvm::DenseSet<Value> before, readOld;
  for (const Member &m : g.members) {
    Value out = rootOf(m.op.getDpsInits().front());
    for (OpOperand &operand : m.op->getOpOperands()) {
      bool init = operand.getOperandNumber() == m.op.getNumDpsInputs();
      bool read = init ? m.kind == Kind::reduce
                       : !m.op.getMatchingBlockArgument(&operand).use_empty();
      Value root = rootOf(operand.get());
      if (read && m.modes[operand.getOperandNumber()] == Mode::row &&
          !before.contains(root))
        readOld.insert(root);
    }
    if (m.kind == Kind::rowwise && readOld.contains(out))
      return false;
    before.insert(out);
  }
  return true;
}

/// The longest acceptable group around the first reduction of `run` at or
/// after `from`, if there is one; `from` moves past what it took, or past
/// that reduction when it took nothing.
std::optional<Group> groupAt(MutableArrayRef<linalg::GenericOp> run,
                             size_t &from) {
  size_t r = from;
  while (r < run.size() &&
         (run[r].getNumReductionLoops() != 1 || run[r].getNumDpsInits() != 1))
    ++r;
  if (r == run.size()) {
    from = r;
    return std::nullopt;
  }
  SmallVector<int64_t> ranges = run[r].getStaticLoopRanges();
  Group g;
  g.cols = ranges.back();
  g.rows = product(ArrayRef(ranges).drop_back());
  if (g.cols < 2 || g.rows < 2 || llvm::any_of(ranges, ShapedType::isDynamic) ||
      !classify(run[r], g.rows, g.cols)) {
    from = r + 1;
    return std::nullopt;
  }
  size_t first = r, last = r;
  while (first > from && classify(run[first - 1], g.rows, g.cols))
    --first;
  while (last + 1 < run.size() && classify(run[last + 1], g.rows, g.cols))
    ++last;
  // The longest acceptable group: from `first`, else from the reduction,
  // ending as late as it can. A kernel whose row-by-row ops merged
  // (--locus-fuse-kernels) may hold a run that is not one group but was
  // two kernels' groups; the ops after the one taken form the next.
  SmallVector<size_t, 2> starts{first};
  if (r != first)
    starts.push_back(r);
  for (size_t start : starts)
    for (size_t end = last, tries = 0; tries < kMaxShrinks; --end, ++tries) {
      Group candidate = g;
      for (size_t k = start; k <= end; ++k)
        candidate.members.push_back(*classify(run[k], g.rows, g.cols));
      if (acceptable(candidate)) {
        from = end + 1;
        return candidate;
      }
      if (end == r)
        break;
    }
  // None: the reductions after this one may still lead groups of their
  // own.
  from = r + 1;
  return std::nullopt;
}

/// Writes one group as one launch.
class RowEmitter {
public:
  explicit RowEmitter(Group &g)
      : g(g), loc(g.members.front().op.getLoc()), b(g.members.back().op) {
    // Long rows take a block; others the fewest lanes (a power of two, 4
    // to 32) that leave each lane at most 4 elements, so that every lane
    // has several loads in flight (rows of 32: 8 lanes, 4 elements each).
    width = g.cols > kMaxWarpGroupRow ? kBlock : 4;
    while (g.cols <= kMaxWarpGroupRow && width < 32 && width * 4 < g.cols)
      width *= 2;
    looped = g.cols > kMaxGroupRow;
    perThread = looped ? 1 : (g.cols + width - 1) / width;
  }

  void run();

private:
  Value index(int64_t v) { return b.create<arith::ConstantIndexOp>(loc, v); }
  void gather();
  void hoist();
  Value flat(Value memref);
  Value load(Value operand, Mode mode, int64_t k);
  /// The row values `m` reads that no member has computed yet, from
  /// memory.
  void loadRows(const Member &m);
  SmallVector<Value> args(const Member &m, int64_t k, Value acc);
  SmallVector<Value> body(const Member &m, ArrayRef<Value> values);
  Value combine(const Member &m, Value acc, Value value);
  /// Leaves the builder inside `if (cond)`; with no `cond`, where it is.
  void onlyIf(Value cond);
  void elementwise(const Member &m);
  void reduce(const Member &m);
  void rowwise(const Member &m);
  void storeRow(const Member &m, Value v);
  bool liveOut(Value root);
  /// Whether `m` writes its output to memory: it is read after the group,
  /// and no later member writes it again.
  bool stores(const Member &m) {
    Value root = rootOf(m.op.getDpsInits().front());
    return lastWriter.lookup(root) == m.op && liveOut(root);
  }
  void eraseDead();

  /// Looped rows: sets this lane's column of chunk `k` (cols[0],
  /// readCols[0], valid[0]) inside an scf.for over the chunks, and runs
  /// `each` there with the loop's values; returns them after the loop.
  SmallVector<Value>
  overColumns(ValueRange init,
              llvm::function_ref<SmallVector<Value>(ValueRange)> each);
  void setColumn(Value col, bool whole);

  Group &g;
  Location loc;
  OpBuilder b;
  int64_t width = 32, perThread = 1;
  /// Rows longer than registers hold: each lane loops over its columns,
  /// and an elementwise op's values are computed again where they are read
  /// (recipes), not kept: the row's re-reads come from the caches.
  bool looped = false;
  llvm::DenseMap<Value, const Member *> recipes;
  Value row, safeRow, active, lane;
  /// Per element of a lane: its column, the column it reads (the last
  /// one past the row's end, so that every read is in bounds), and whether
  /// it is inside the row (null where every lane's is).
  SmallVector<Value> cols, readCols, valid;
  llvm::DenseMap<Value, Value> views, rowValues;
  llvm::DenseMap<Value, SmallVector<Value>> fullValues, columnValues;
  llvm::DenseSet<Operation *> memberOps;
  /// Each buffer a member writes, and the last member that writes it.
  llvm::DenseMap<Value, Operation *> lastWriter;
};

bool RowEmitter::liveOut(Value root) {
  if (!root.getDefiningOp<memref::AllocOp>())
    return true;
  SmallVector<Value> work{root};
  while (!work.empty()) {
    Value v = work.pop_back_val();
    for (Operation *user : v.getUsers()) {
      if (isa<memref::ExpandShapeOp, memref::CollapseShapeOp>(user))
        work.push_back(user->getResult(0));
      else if (!isa<memref::DeallocOp>(user) && !memberOps.contains(user))
        return true;
    }
  }
  return false;
}

void RowEmitter::hoist() {
  // What stands between the members moves out of the way of one launch
  // where the last member was: buffers, views and constants before the
  // first member, frees after the last.
  Operation *first = g.members.front().op, *last = g.members.back().op;
  SmallVector<Operation *> between;
  for (Operation *op = first->getNextNode(); op != last; op = op->getNextNode())
    if (!memberOps.contains(op))
      between.push_back(op);
  for (Operation *op : between)
    if (!isa<memref::DeallocOp>(op))
      op->moveBefore(first);
  // Each free goes right after the last member: the last one first keeps
  // their order.
  for (Operation *op : llvm::reverse(between))
    if (isa<memref::DeallocOp>(op))
      op->moveAfter(last);
}

Value RowEmitter::flat(Value memref) { return views.lookup(memref); }

void RowEmitter::gather() {
  for (const Member &m : g.members)
    lastWriter[rootOf(m.op.getDpsInits().front())] = m.op;
  // 1-D views of every buffer the launch reads or writes in memory, made
  // on the host side where the launch goes.
  for (const Member &m : g.members)
    for (auto [operand, mode] : llvm::zip(m.op->getOperands(), m.modes)) {
      Value root = rootOf(operand);
      if (mode == Mode::scalar || views.count(operand) ||
          (lastWriter.count(root) && !liveOut(root)))
        continue;
      auto type = cast<MemRefType>(operand.getType());
      SmallVector<ReassociationIndices> all(1);
      for (int64_t d = 0; d < type.getRank(); ++d)
        all.front().push_back(d);
      views[operand] =
          type.getRank() == 1
              ? operand
              : b.create<memref::CollapseShapeOp>(loc, operand, all)
                    .getResult();
    }
}

Value RowEmitter::load(Value operand, Mode mode, int64_t k) {
  Value root = rootOf(operand);
  if (mode == Mode::row)
    return rowValues.lookup(root); // loaded by loadRows
  if (looped) {
    if (const Member *p = recipes.lookup(root); p && mode == Mode::full)
      return body(*p, args(*p, 0, Value())).front();
    Value at =
        mode == Mode::column
            ? readCols[0]
            : b.create<arith::AddIOp>(
                  loc, b.create<arith::MulIOp>(loc, safeRow, index(g.cols)),
                  readCols[0]);
    return b.create<memref::LoadOp>(loc, flat(operand), at);
  }
  // Each element is read from memory once; what a member wrote replaces
  // it.
  auto &values = (mode == Mode::full ? fullValues : columnValues)[root];
  values.resize(perThread);
  if (values[k])
    return values[k];
  Value at =
      mode == Mode::column
          ? readCols[k]
          : b.create<arith::AddIOp>(
                loc, b.create<arith::MulIOp>(loc, safeRow, index(g.cols)),
                readCols[k]);
  return values[k] = b.create<memref::LoadOp>(loc, flat(operand), at);
}

void RowEmitter::loadRows(const Member &m) {
  for (OpOperand &operand : m.op->getOpOperands()) {
    Value root = rootOf(operand.get());
    bool init = m.kind == Kind::reduce &&
                operand.getOperandNumber() == m.op.getNumDpsInputs();
    if (m.modes[operand.getOperandNumber()] != Mode::row ||
        rowValues.count(root) ||
        (m.op.getMatchingBlockArgument(&operand).use_empty() && !init))
      continue;
    // Once per row, outside any branch: every lane uses it.
    rowValues[root] =
        b.create<memref::LoadOp>(loc, flat(operand.get()), safeRow);
  }
}

SmallVector<Value> RowEmitter::args(const Member &m, int64_t k, Value acc) {
  SmallVector<Value> values;
  for (OpOperand &operand : m.op->getOpOperands()) {
    unsigned i = operand.getOperandNumber();
    Mode mode = m.modes[i];
    bool isInit = i == m.op.getNumDpsInputs();
    if (m.op.getMatchingBlockArgument(&operand).use_empty())
      values.push_back(Value());
    else if (isInit && acc)
      values.push_back(acc);
    else if (mode == Mode::scalar)
      values.push_back(operand.get());
    else
      values.push_back(load(operand.get(), mode, k));
  }
  return values;
}

SmallVector<Value> RowEmitter::body(const Member &m, ArrayRef<Value> values) {
  return cloneBody(b, m.op, values, IRMapping()); // no linalg.index here
}

Value RowEmitter::combine(const Member &m, Value acc, Value value) {
  return cloneCombiner(b, m.op, m.combiner, acc, value);
}

void RowEmitter::setColumn(Value col, bool whole) {
  cols.assign({col});
  valid.assign({whole ? Value()
                      : b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::ult,
                                                col, index(g.cols))
                            .getResult()});
  readCols.assign({whole ? col
                         : b.create<arith::MinUIOp>(loc, col, index(g.cols - 1))
                               .getResult()});
}

SmallVector<Value> RowEmitter::overColumns(
    ValueRange init, llvm::function_ref<SmallVector<Value>(ValueRange)> each) {
  int64_t chunks = (g.cols + width - 1) / width;
  auto loop =
      b.create<scf::ForOp>(loc, index(0), index(chunks), index(1), init);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(loop.getBody());
  Value col = b.create<arith::AddIOp>(
      loc, lane,
      b.create<arith::MulIOp>(loc, loop.getInductionVar(), index(width)));
  setColumn(col, g.cols % width == 0);
  SmallVector<Value> next = each(loop.getRegionIterArgs());
  if (!init.empty()) // with none, the builder made the loop's yield
    b.create<scf::YieldOp>(loc, next);
  return loop.getResults();
}

void RowEmitter::onlyIf(Value cond) {
  if (!cond)
    return;
  auto branch = b.create<scf::IfOp>(loc, cond, false);
  b.setInsertionPointToStart(&branch.getThenRegion().front());
}

void RowEmitter::elementwise(const Member &m) {
  if (looped) {
    Value out = m.op.getDpsInits().front();
    if (stores(m))
      overColumns({}, [&](ValueRange) {
        Value v = body(m, args(m, 0, Value())).front();
        OpBuilder::InsertionGuard guard(b);
        onlyIf(valid[0]);
        Value at = b.create<arith::AddIOp>(
            loc, b.create<arith::MulIOp>(loc, row, index(g.cols)), cols[0]);
        b.create<memref::StoreOp>(loc, v, flat(out), at);
        return SmallVector<Value>{};
      });
    recipes[rootOf(out)] = &m;
    return;
  }
  // Lanes past the row's end compute on the last column's values and
  // store nothing.
  SmallVector<Value> values;
  for (int64_t k = 0; k < perThread; ++k)
    values.push_back(body(m, args(m, k, Value())).front());
  Value out = m.op.getDpsInits().front();
  Value root = rootOf(out);
  if (stores(m))
    for (int64_t k = 0; k < perThread; ++k) {
      OpBuilder::InsertionGuard guard(b);
      Value ok =
          valid[k] ? b.create<arith::AndIOp>(loc, active, valid[k]) : active;
      onlyIf(ok);
      Value at = b.create<arith::AddIOp>(
          loc, b.create<arith::MulIOp>(loc, row, index(g.cols)), cols[k]);
      b.create<memref::StoreOp>(loc, values[k], flat(out), at);
    }
  fullValues[root] = values;
}

void RowEmitter::reduce(const Member &m) {
  Value partial = b.create<arith::ConstantOp>(loc, m.combiner.identity);
  if (looped)
    partial =
        overColumns(partial, [&](ValueRange acc) {
          Value next = body(m, args(m, 0, acc[0])).front();
          return SmallVector<Value>{
              valid[0] ? b.create<arith::SelectOp>(loc, valid[0], next, acc[0])
                             .getResult()
                       : next};
        }).front();
  for (int64_t k = 0; !looped && k < perThread; ++k) {
    Value next = body(m, args(m, k, partial)).front();
    partial = valid[k] ? b.create<arith::SelectOp>(loc, valid[k], next, partial)
                             .getResult()
                       : next;
  }
  if (width == kBlock) {
    partial = b.create<gpu::AllReduceOp>(
        loc, partial,
        gpu::AllReduceOperationAttr::get(b.getContext(), m.combiner.kind),
        true);
  } else {
    for (int32_t offset = width / 2; offset >= 1; offset /= 2) {
      Value other = b.create<gpu::ShuffleOp>(loc, partial, offset, 32,
                                             gpu::ShuffleMode::XOR)
                        .getShuffleResult();
      partial = combine(m, partial, other);
    }
  }
  Value root = rootOf(m.op.getDpsInits().front());
  Value total = combine(m, rowValues.lookup(root), partial);
  rowValues[root] = total;
  storeRow(m, total);
}

void RowEmitter::rowwise(const Member &m) {
  Value v = body(m, args(m, 0, Value())).front();
  rowValues[rootOf(m.op.getDpsInits().front())] = v;
  storeRow(m, v);
}

void RowEmitter::storeRow(const Member &m, Value v) {
  Value out = m.op.getDpsInits().front();
  if (!stores(m))
    return;
  OpBuilder::InsertionGuard guard(b);
  Value first =
      b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::eq, lane, index(0));
  onlyIf(b.create<arith::AndIOp>(loc, active, first));
  b.create<memref::StoreOp>(loc, v, flat(out), row);
}

void RowEmitter::eraseDead() {
  llvm::DenseSet<Value> dead;
  for (auto &[root, writer] : lastWriter)
    if (!liveOut(root))
      dead.insert(root);
  for (const Member &m : g.members)
    m.op.erase();
  memberOps.clear();
  // A buffer only this launch used, through registers: its views, its
  // free and itself go.
  for (Value root : dead) {
    SmallVector<Operation *> users;
    SmallVector<Value> work{root};
    while (!work.empty()) {
      Value v = work.pop_back_val();
      for (Operation *user : v.getUsers()) {
        users.push_back(user);
        if (isa<memref::ExpandShapeOp, memref::CollapseShapeOp>(user))
          work.push_back(user->getResult(0));
      }
    }
    for (Operation *user : llvm::reverse(users))
      user->erase();
    root.getDefiningOp()->erase();
  }
}

void RowEmitter::run() {
  memberOps.clear();
  for (const Member &m : g.members)
    memberOps.insert(m.op);
  hoist();
  b.setInsertionPoint(g.members.back().op);
  gather();
  int64_t perBlock = kBlock / width;
  Value one = index(1);
  auto l =
      b.create<gpu::LaunchOp>(loc, index((g.rows + perBlock - 1) / perBlock),
                              one, one, index(kBlock), one, one);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(&l.getBody().front());
    b.create<gpu::TerminatorOp>(loc);
    b.setInsertionPointToStart(&l.getBody().front());
    Value tid = l.getThreadIds().x;
    lane = b.create<arith::RemUIOp>(loc, tid, index(width));
    row = b.create<arith::AddIOp>(
        loc, b.create<arith::MulIOp>(loc, l.getBlockIds().x, index(perBlock)),
        b.create<arith::DivUIOp>(loc, tid, index(width)));
    // Every lane takes part in the shuffles; those past the last row read
    // the last row again and write nothing.
    active = b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::ult, row,
                                     index(g.rows));
    safeRow = b.create<arith::MinUIOp>(loc, row, index(g.rows - 1));
    for (int64_t k = 0; !looped && k < perThread; ++k) {
      cols.push_back(b.create<arith::AddIOp>(loc, lane, index(k * width)));
      bool whole = (k + 1) * width <= g.cols;
      valid.push_back(
          whole ? Value()
                : b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::ult,
                                          cols.back(), index(g.cols))
                      .getResult());
      readCols.push_back(
          whole ? cols.back()
                : b.create<arith::MinUIOp>(loc, cols.back(), index(g.cols - 1))
                      .getResult());
    }
    for (const Member &m : g.members) {
      loadRows(m);
      if (m.kind == Kind::elementwise)
        elementwise(m);
      else if (m.kind == Kind::reduce)
        reduce(m);
      else
        rowwise(m);
    }
  }
  LLVM_DEBUG(llvm::dbgs() << "[" DEBUG_TYPE "] " << loc << " " << g.rows
                          << " row(s) x " << g.cols << ": " << g.members.size()
                          << " ops in one launch, " << width
                          << " lanes per row\n");
  eraseDead();
}

} // namespace

int64_t mapRowGroups(Block &block, bool explain) {
  SmallVector<SmallVector<linalg::GenericOp>> runs(1);
  for (Operation &op : block) {
    if (auto generic = dyn_cast<linalg::GenericOp>(op))
      runs.back().push_back(generic);
    else if (!transparent(&op) && !runs.back().empty())
      runs.emplace_back();
  }
  SmallVector<Group> groups;
  for (MutableArrayRef<linalg::GenericOp> run : runs)
    for (size_t from = 0; from < run.size();)
      if (std::optional<Group> g = groupAt(run, from))
        groups.push_back(std::move(*g));
  for (Group &g : groups) {
    if (explain)
      g.members.front().op.emitRemark()
          << "a row group: " << g.members.size() << " ops over " << g.rows
          << " row(s) of " << g.cols << " in one launch, "
          << (g.cols > kMaxWarpGroupRow ? "a block" : "a few lanes")
          << " per row"
          << (g.cols > kMaxGroupRow ? ", looping over its columns" : "");
    RowEmitter(g).run();
  }
  return static_cast<int64_t>(groups.size());
}

} // namespace locus::gpu_mapping
