//===- DynamicKernels.cpp - --locus-dynamic-kernels -----------------------===//
//
// A kernel of a graph with dynamic sizes, lowered to linalg at its bounds,
// computes at the run's sizes: its arguments keep their bound types (the
// calling convention passes bare pointers), are viewed at the run's dims on
// entry, the values inside take dynamic types, and each result is written
// back into its bound-sized buffer, packed from offset 0. See Passes.td.
//
//===----------------------------------------------------------------------===//

#include "locus/Dialect/DynamicDims.h"
#include "locus/Dialect/LocusDialect.h"
#include "locus/Passes/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"

namespace locus {
#define GEN_PASS_DEF_LOCUSDYNAMICKERNELS
#include "locus/Passes/Passes.h.inc"
} // namespace locus

using namespace mlir;
using namespace locus;

namespace {

bool isStatic(ArrayRef<DimExpr> dims) {
  return llvm::all_of(dims, [](const DimExpr &d) { return d.isStatic(); });
}

/// The dims of every tensor value of one kernel function.
class KernelDims {
public:
  KernelDims(func::FuncOp func, SmallVector<DimSymbol> symbols)
      : func(func), symbols(std::move(symbols)) {}

  DimExprs of(Value value) const {
    auto it = dims.find(value);
    if (it != dims.end())
      return it->second;
    auto type = dyn_cast<RankedTensorType>(value.getType());
    return type ? staticDims(type.getShape()) : DimExprs();
  }

  /// Gives `value` dims `next` where they are dynamic; fails on two
  /// different dynamic dims for one dimension.
  LogicalResult update(Value value, ArrayRef<DimExpr> next, Operation *at) {
    DimExprs now = of(value);
    if (now.size() != next.size())
      return at->emitOpError() << "has another rank than its dynamic dims";
    bool grew = false;
    for (auto [old, fresh] : llvm::zip(now, next)) {
      if (fresh.isStatic() || old == fresh)
        continue;
      if (!old.isStatic())
        return at->emitOpError()
               << "has a dimension that is both " << formatDim(old, symbols)
               << " and " << formatDim(fresh, symbols);
      old = fresh;
      grew = true;
    }
    if (grew) {
      dims[value] = now;
      changed = true;
    }
    return success();
  }

  LogicalResult seed();
  LogicalResult propagate();
  LogicalResult rewrite(BlockArgument sizesArg);

private:
  LogicalResult propagateLinalg(linalg::LinalgOp op);
  LogicalResult propagateReshape(Operation *op, Value src, Value result,
                                 ArrayRef<ReassociationIndices> groups,
                                 bool collapse);
  LogicalResult propagateSlice(OffsetSizeAndStrideOpInterface op, Value whole,
                               Value window);
  LogicalResult checkWindow(tensor::ExtractSliceOp op) const;
  Value sizeOf(OpBuilder &b, const DimExpr &dim);
  SmallVector<OpFoldResult> sizesOf(OpBuilder &b, Value value);
  RankedTensorType typeOf(Value value) const;
  Value viewAtRunSizes(OpBuilder &b, Value arg, Operation *&first);
  Value backIntoBounds(OpBuilder &b, Value value, RankedTensorType bound);
  Value packed(OpBuilder &b, Value window);

  func::FuncOp func;
  SmallVector<DimSymbol> symbols;
  llvm::DenseMap<Value, DimExprs> dims;
  bool changed = false;
  /// The run's sizes as index values, made at the entry.
  SmallVector<Value> symbolValues;
  /// A runtime call's result seen at the run's dims -> its bound-sized
  /// tensor, which holds it packed already.
  llvm::DenseMap<Value, Value> packedBound;
};

LogicalResult KernelDims::seed() {
  for (BlockArgument arg : func.getArguments())
    if (auto map = func.getArgAttrOfType<AffineMapAttr>(arg.getArgNumber(),
                                                        kDimsAttrName)) {
      std::optional<DimExprs> given = dimsFromMap(map.getValue());
      if (!given)
        return func.emitOpError() << "has malformed " << kDimsAttrName;
      dims[arg] = std::move(*given);
    }
  WalkResult walk = func.walk([&](Operation *op) {
    auto map = op->getAttrOfType<AffineMapAttr>(kDimsAttrName);
    if (!map || op->getNumResults() != 1)
      return WalkResult::advance();
    std::optional<DimExprs> given = dimsFromMap(map.getValue());
    if (!given) {
      op->emitOpError() << "has malformed " << kDimsAttrName;
      return WalkResult::interrupt();
    }
    dims[op->getResult(0)] = std::move(*given);
    return WalkResult::advance();
  });
  return failure(walk.wasInterrupted());
}

/// `fn(value, map)` for each tensor operand and result of `op` with the
/// indexing map it is walked by; stops at the first failure.
LogicalResult forEachWalked(linalg::LinalgOp op,
                            function_ref<LogicalResult(Value, AffineMap)> fn) {
  for (OpOperand &operand : op->getOpOperands())
    if (isa<RankedTensorType>(operand.get().getType()) &&
        failed(fn(operand.get(), op.getMatchingIndexingMap(&operand))))
      return failure();
  for (OpResult result : op->getResults())
    if (failed(fn(result, op.getIndexingMapMatchingResult(result))))
      return failure();
  return success();
}

LogicalResult KernelDims::propagateLinalg(linalg::LinalgOp op) {
  SmallVector<std::optional<DimExpr>> extents(op.getNumLoops());
  // Loop extents from every operand and result whose dims are known.
  auto collect = [&](Value value, AffineMap map) -> LogicalResult {
    DimExprs known = of(value);
    for (auto [r, expr] : llvm::enumerate(map.getResults())) {
      auto dim = dyn_cast<AffineDimExpr>(expr);
      if (!dim || known[r].isStatic())
        continue;
      std::optional<DimExpr> &extent = extents[dim.getPosition()];
      if (extent && *extent != known[r])
        return op->emitOpError()
               << "has a loop that is both " << formatDim(*extent, symbols)
               << " and " << formatDim(known[r], symbols);
      extent = known[r];
    }
    return success();
  };
  if (failed(forEachWalked(op, collect)))
    return failure();
  // Then every operand and result takes the extents it walks.
  auto apply = [&](Value value, AffineMap map) -> LogicalResult {
    DimExprs next = of(value);
    for (auto [r, expr] : llvm::enumerate(map.getResults()))
      if (auto dim = dyn_cast<AffineDimExpr>(expr))
        if (const std::optional<DimExpr> &extent = extents[dim.getPosition()])
          next[r] = *extent;
    return update(value, next, op);
  };
  return forEachWalked(op, apply);
}

LogicalResult
KernelDims::propagateReshape(Operation *op, Value src, Value result,
                             ArrayRef<ReassociationIndices> groups,
                             bool collapse) {
  // `wide` has one dimension per index of a group, `narrow` one per group.
  Value wide = collapse ? src : result, narrow = collapse ? result : src;
  DimExprs wideDims = of(wide), narrowDims = of(narrow);
  auto wideShape = cast<RankedTensorType>(wide.getType()).getShape();
  DimExprs fromWide = narrowDims;
  for (auto [g, group] : llvm::enumerate(groups)) {
    DimExprs members;
    for (int64_t i : group)
      members.push_back(wideDims[i]);
    if (!isStatic(members))
      fromWide[g] = elementCount(members);
  }
  if (failed(update(narrow, fromWide, op)))
    return failure();
  // From the narrow side: a group whose one dimension of more than one
  // element takes the dynamic dim.
  DimExprs fromNarrow = wideDims;
  for (auto [g, group] : llvm::enumerate(groups)) {
    if (narrowDims[g].isStatic())
      continue;
    SmallVector<int64_t> big;
    for (int64_t i : group)
      if (wideShape[i] != 1 || !wideDims[i].isStatic())
        big.push_back(i);
    if (big.size() == 1)
      fromNarrow[big.front()] = narrowDims[g];
  }
  return update(wide, fromNarrow, op);
}

/// A slice or an insertion of one (concatenations, padding removed) takes a
/// dynamic dimension whole, and the window and the whole share its dims;
/// or a window of static size in it (a slice's: the graph's verifier let
/// only those through), at an offset from its start or, computed from the
/// run's size, from its end.
LogicalResult KernelDims::propagateSlice(OffsetSizeAndStrideOpInterface op,
                                         Value whole, Value window) {
  DimExprs wholeDims = of(whole), windowDims = of(window);
  if (isStatic(wholeDims) && isStatic(windowDims))
    return success();
  ArrayRef<int64_t> shape = cast<RankedTensorType>(whole.getType()).getShape();
  if (wholeDims.size() != windowDims.size())
    return op->emitOpError() << "drops dimensions of a value of dynamic shape "
                             << formatDims(wholeDims, symbols);
  for (size_t d = 0; d < wholeDims.size(); ++d) {
    if (wholeDims[d].isStatic() && windowDims[d].isStatic())
      continue;
    if (op.getStaticOffset(d) != 0 || op.getStaticStride(d) != 1 ||
        op.getStaticSize(d) != shape[d]) {
      if (windowDims[d].isStatic() && !wholeDims[d].isStatic())
        continue; // a window of static size
      return op->emitOpError()
             << "takes a window of dimension " << d << " of "
             << formatDims(wholeDims, symbols) << " as "
             << formatDims(windowDims, symbols)
             << ": a window of dynamic size fills its dimension whole";
    }
    DimExpr dim = wholeDims[d].isStatic() ? windowDims[d] : wholeDims[d];
    wholeDims[d] = dim;
    windowDims[d] = dim;
  }
  if (failed(update(whole, wholeDims, op)))
    return failure();
  return update(window, windowDims, op);
}

/// narrow_to's window: its dims are its own (locus.dims), and the source
/// is static wherever they are dynamic, taken from offset 0.
LogicalResult KernelDims::checkWindow(tensor::ExtractSliceOp op) const {
  DimExprs source = of(op.getSource()), window = of(op.getResult());
  ArrayRef<int64_t> shape = op.getSourceType().getShape();
  for (size_t d = 0; d < window.size() && d < source.size(); ++d)
    if (!window[d].isStatic() &&
        (!source[d].isStatic() || op.getStaticOffset(d) != 0 ||
         op.getStaticStride(d) != 1 || op.getStaticSize(d) != shape[d]))
      return op->emitOpError()
             << "takes the window " << formatDims(window, symbols) << " of "
             << formatDims(source, symbols)
             << ", which is not static where the window is dynamic";
  return success();
}

LogicalResult KernelDims::propagate() {
  SmallVector<int64_t> bounds;
  for (const DimSymbol &symbol : symbols)
    bounds.push_back(symbol.bound);
  // An expansion whose result has no dims yet is split by the bounds
  // (reshapeDims) only once nothing else gives them: the op that reads it
  // usually does (a batched product's operand), and the bounds alone can
  // fit more than one way ([32*batch*seq] into [16, 16, 16]).
  bool guess = false;
  for (int round = 0, most = 16; round < most; ++round) {
    changed = false;
    WalkResult walk = func.walk([&](Operation *op) {
      LogicalResult ok = success();
      if (auto linalgOp = dyn_cast<linalg::LinalgOp>(op)) {
        ok = propagateLinalg(linalgOp);
      } else if (auto c = dyn_cast<tensor::CollapseShapeOp>(op)) {
        ok = propagateReshape(op, c.getSrc(), c.getResult(),
                              c.getReassociationIndices(), true);
      } else if (auto e = dyn_cast<tensor::ExpandShapeOp>(op)) {
        ok = propagateReshape(op, e.getSrc(), e.getResult(),
                              e.getReassociationIndices(), false);
        if (succeeded(ok) && guess && !isStatic(of(e.getSrc())) &&
            isStatic(of(e.getResult()))) {
          std::string why;
          FailureOr<DimExprs> split =
              reshapeDims(of(e.getSrc()), e.getSrcType().getShape(),
                          e.getResultType().getShape(), bounds, why);
          ok = succeeded(split)
                   ? update(e.getResult(), *split, op)
                   : op->emitOpError()
                         << "expands " << formatDims(of(e.getSrc()), symbols)
                         << " into "
                         << formatShape(e.getResultType().getShape()) << ": "
                         << why;
        }
      } else if (auto slice = dyn_cast<tensor::ExtractSliceOp>(op)) {
        ok = slice->hasAttr(kWindowAttrName)
                 ? checkWindow(slice)
                 : propagateSlice(slice, slice.getSource(), slice.getResult());
      } else if (auto insert = dyn_cast<tensor::InsertSliceOp>(op)) {
        ok = propagateSlice(insert, insert.getDest(), insert.getSource());
        if (succeeded(ok))
          ok = update(insert.getResult(), of(insert.getDest()), op);
        if (succeeded(ok))
          ok = update(insert.getDest(), of(insert.getResult()), op);
      } else if (auto pad = dyn_cast<tensor::PadOp>(op)) {
        // A padded pooling's input: the batch passes through unpadded.
        DimExprs src = of(pad.getSource()), next = of(pad.getResult());
        for (auto [d, dim] : llvm::enumerate(src)) {
          if (dim.isStatic())
            continue;
          if (pad.getStaticLow()[d] != 0 || pad.getStaticHigh()[d] != 0) {
            ok = op->emitOpError()
                 << "pads dimension " << d << " of " << formatDims(src, symbols)
                 << ", which is dynamic";
            break;
          }
          next[d] = dim;
        }
        if (succeeded(ok))
          ok = update(pad.getResult(), next, op);
      } else if (auto ret = dyn_cast<func::ReturnOp>(op)) {
        for (auto [i, value] : llvm::enumerate(ret.getOperands()))
          if (auto map =
                  func.getResultAttrOfType<AffineMapAttr>(i, kDimsAttrName))
            if (std::optional<DimExprs> given = dimsFromMap(map.getValue()))
              if (failed(update(value, *given, op)))
                return WalkResult::interrupt();
      }
      return failed(ok) ? WalkResult::interrupt() : WalkResult::advance();
    });
    if (walk.wasInterrupted())
      return failure();
    if (!changed && guess)
      return success();
    guess = !changed;
  }
  return func.emitOpError() << "dynamic dims did not settle";
}

RankedTensorType KernelDims::typeOf(Value value) const {
  auto type = cast<RankedTensorType>(value.getType());
  SmallVector<int64_t> shape(type.getShape());
  for (auto [d, dim] : llvm::enumerate(of(value)))
    if (!dim.isStatic())
      shape[d] = ShapedType::kDynamic;
  return RankedTensorType::get(shape, type.getElementType());
}

Value KernelDims::sizeOf(OpBuilder &b, const DimExpr &dim) {
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointAfterValue(symbolValues.back());
  Location loc = func.getLoc();
  Value size = b.create<arith::ConstantIndexOp>(loc, dim.factor);
  for (auto [k, power] : llvm::enumerate(dim.powers))
    for (int64_t i = 0; i < power; ++i)
      size = b.create<arith::MulIOp>(loc, size, symbolValues[k]);
  return size;
}

SmallVector<OpFoldResult> KernelDims::sizesOf(OpBuilder &b, Value value) {
  SmallVector<OpFoldResult> sizes;
  for (const DimExpr &dim : of(value))
    sizes.push_back(dim.isStatic() ? OpFoldResult(b.getIndexAttr(dim.factor))
                                   : OpFoldResult(sizeOf(b, dim)));
  return sizes;
}

/// `src` expanded into `type` (of `sizes`). MLIR 19 cannot bufferize an
/// expand_shape that splits one dimension into two or more dynamic ones
/// (its memref builder infers the sizes and aborts: a [batch*seq] into
/// [batch, seq]); those become a tensor.reshape, whose memref.reshape reads
/// the sizes from a small shape buffer (its source is packed: a prefix of a
/// buffer, or a value the kernel made).
Value expandTo(OpBuilder &b, Location loc, RankedTensorType type, Value src,
               ArrayRef<ReassociationIndices> groups,
               ArrayRef<OpFoldResult> sizes) {
  bool splitsDynamic = llvm::any_of(groups, [&](const ReassociationIndices &g) {
    return llvm::count_if(g, [&](int64_t d) { return type.isDynamicDim(d); }) >
           1;
  });
  if (!splitsDynamic)
    return b.create<tensor::ExpandShapeOp>(loc, type, src, groups, sizes);
  SmallVector<Value> extents;
  for (OpFoldResult size : sizes)
    extents.push_back(getValueOrCreateConstantIndexOp(b, loc, size));
  Value shape = b.create<tensor::FromElementsOp>(loc, extents);
  return b.create<tensor::ReshapeOp>(loc, type, src, shape);
}

/// The bound-sized argument (or a runtime call's result) seen at the run's
/// dims: its first elements, packed.
Value KernelDims::viewAtRunSizes(OpBuilder &b, Value arg, Operation *&first) {
  Location loc = func.getLoc();
  auto bound = cast<RankedTensorType>(arg.getType());
  ReassociationIndices all;
  for (int64_t d = 0; d < bound.getRank(); ++d)
    all.push_back(d);
  Value count = sizeOf(b, elementCount(of(arg)));
  Value flat = arg;
  if (bound.getRank() != 1) {
    flat = b.create<tensor::CollapseShapeOp>(
        loc, arg, SmallVector<ReassociationIndices>{all});
    first = flat.getDefiningOp();
  }
  Value prefix = b.create<tensor::ExtractSliceOp>(
      loc, flat, ArrayRef<OpFoldResult>{b.getIndexAttr(0)},
      ArrayRef<OpFoldResult>{count}, ArrayRef<OpFoldResult>{b.getIndexAttr(1)});
  if (!first)
    first = prefix.getDefiningOp();
  if (bound.getRank() == 1)
    return prefix;
  return expandTo(b, loc, typeOf(arg), prefix, {all}, sizesOf(b, arg));
}

/// `value`, of dynamic type, packed into a tensor of its bound type.
Value KernelDims::backIntoBounds(OpBuilder &b, Value value,
                                 RankedTensorType bound) {
  Location loc = value.getLoc();
  auto type = cast<RankedTensorType>(value.getType());
  ReassociationIndices all;
  for (int64_t d = 0; d < type.getRank(); ++d)
    all.push_back(d);
  Value flat = value;
  if (type.getRank() != 1)
    flat = b.create<tensor::CollapseShapeOp>(
        loc, value, SmallVector<ReassociationIndices>{all});
  Value count = sizeOf(b, elementCount(of(value)));
  Value whole = b.create<tensor::EmptyOp>(
      loc, ArrayRef<int64_t>{bound.getNumElements()}, bound.getElementType());
  Value packed = b.create<tensor::InsertSliceOp>(
      loc, flat, whole, ArrayRef<OpFoldResult>{b.getIndexAttr(0)},
      ArrayRef<OpFoldResult>{count}, ArrayRef<OpFoldResult>{b.getIndexAttr(1)});
  if (bound.getRank() == 1)
    return packed;
  return b.create<tensor::ExpandShapeOp>(
      loc, bound, packed, SmallVector<ReassociationIndices>{all});
}

/// narrow_to's window copied into a packed tensor of its own: the window
/// of a static source is strided by the bounds, and a strided buffer with
/// dynamic sizes cannot be reshaped (MLIR 19's memref.expand_shape builder
/// aborts on it). Windows are masks and position tables: small.
Value KernelDims::packed(OpBuilder &b, Value window) {
  Location loc = window.getLoc();
  auto type = cast<RankedTensorType>(window.getType());
  SmallVector<Value> sizes;
  for (int64_t d = 0; d < type.getRank(); ++d)
    if (type.isDynamicDim(d))
      sizes.push_back(b.create<tensor::DimOp>(loc, window, d));
  Value empty = b.create<tensor::EmptyOp>(loc, type, sizes);
  AffineMap id = b.getMultiDimIdentityMap(type.getRank());
  return b
      .create<linalg::GenericOp>(
          loc, TypeRange{type}, ValueRange{window}, ValueRange{empty},
          ArrayRef<AffineMap>{id, id},
          SmallVector<utils::IteratorType>(type.getRank(),
                                           utils::IteratorType::parallel),
          [](OpBuilder &nb, Location nl, ValueRange args) {
            nb.create<linalg::YieldOp>(nl, args[0]);
          })
      .getResult(0);
}

LogicalResult KernelDims::rewrite(BlockArgument sizesArg) {
  Block &entry = func.getBody().front();
  OpBuilder b = OpBuilder::atBlockBegin(&entry);
  Location loc = func.getLoc();
  for (unsigned k = 0; k < symbols.size(); ++k) {
    Value at = b.create<arith::ConstantIndexOp>(loc, k);
    Value size = b.create<tensor::ExtractOp>(loc, sizesArg, ValueRange{at});
    symbolValues.push_back(
        b.create<arith::IndexCastOp>(loc, b.getIndexType(), size));
  }
  SmallVector<Operation *> ops;
  for (Operation &op : entry)
    ops.push_back(&op);
  for (BlockArgument arg : func.getArguments()) {
    if (isStatic(of(arg)))
      continue;
    Operation *first = nullptr;
    Value view = viewAtRunSizes(b, arg, first);
    dims[view] = of(arg);
    arg.replaceAllUsesExcept(view, first);
  }
  for (Operation *op : ops) {
    bool dynamicResult = llvm::any_of(op->getResults(), [&](Value v) {
      return isa<RankedTensorType>(v.getType()) && !isStatic(of(v));
    });
    if (auto ret = dyn_cast<func::ReturnOp>(op)) {
      b.setInsertionPoint(ret);
      for (OpOperand &operand : ret->getOpOperands())
        if (Value bound = packedBound.lookup(operand.get()))
          operand.set(bound); // already packed into its bounds: no copy
        else if (!isStatic(of(operand.get())))
          operand.set(backIntoBounds(
              b, operand.get(),
              cast<RankedTensorType>(func.getFunctionType().getResult(
                  operand.getOperandNumber()))));
      continue;
    }
    if (auto toMemref = dyn_cast<bufferization::ToMemrefOp>(op)) {
      // A runtime call reads a dynamic value where its run's elements lie.
      auto type = cast<RankedTensorType>(toMemref.getTensor().getType());
      if (type.hasStaticShape())
        continue;
      b.setInsertionPoint(op);
      Value fresh = b.create<bufferization::ToMemrefOp>(
          op->getLoc(), MemRefType::get(type.getShape(), type.getElementType()),
          toMemref.getTensor(), toMemref.getReadOnly());
      toMemref.getResult().replaceAllUsesWith(fresh);
      toMemref.erase();
      continue;
    }
    if (!dynamicResult)
      continue;
    if (isa<bufferization::ToTensorOp>(op)) {
      // A runtime call's result, written packed into its bound-sized
      // buffer (--locus-conv-to-runtime marks its dims): seen at the run's.
      Value bound = op->getResult(0);
      b.setInsertionPointAfter(op);
      Operation *first = nullptr;
      Value view = viewAtRunSizes(b, bound, first);
      dims[view] = of(bound);
      bound.replaceAllUsesExcept(view, first);
      packedBound[view] = bound;
      continue;
    }
    b.setInsertionPoint(op);
    // `op`, rebuilt at the run's sizes as `fresh`, goes (dims are keyed by
    // value: no stale entry stays).
    auto replace = [&](Value fresh) {
      Value old = op->getResult(0);
      dims[fresh] = of(old);
      old.replaceAllUsesWith(fresh);
      dims.erase(old);
      op->erase();
    };
    if (auto empty = dyn_cast<tensor::EmptyOp>(op)) {
      replace(b.create<tensor::EmptyOp>(op->getLoc(),
                                        sizesOf(b, empty.getResult()),
                                        empty.getType().getElementType()));
    } else if (auto expand = dyn_cast<tensor::ExpandShapeOp>(op)) {
      replace(expandTo(b, op->getLoc(), typeOf(expand.getResult()),
                       expand.getSrc(), expand.getReassociationIndices(),
                       sizesOf(b, expand.getResult())));
    } else if (auto slice = dyn_cast<tensor::ExtractSliceOp>(op)) {
      Value fresh = b.create<tensor::ExtractSliceOp>(
          op->getLoc(), typeOf(slice.getResult()), slice.getSource(),
          slice.getMixedOffsets(), sizesOf(b, slice.getResult()),
          slice.getMixedStrides());
      replace(slice->hasAttr(kWindowAttrName) ? packed(b, fresh) : fresh);
    } else if (auto insert = dyn_cast<tensor::InsertSliceOp>(op)) {
      replace(b.create<tensor::InsertSliceOp>(
          op->getLoc(), insert.getSource(), insert.getDest(),
          insert.getMixedOffsets(), sizesOf(b, insert.getSource()),
          insert.getMixedStrides()));
    } else if (isa<linalg::LinalgOp, tensor::CollapseShapeOp, tensor::PadOp>(
                   op)) {
      for (Value result : op->getResults())
        result.setType(typeOf(result));
    } else {
      return op->emitOpError()
             << "computes a value of dynamic shape, which a kernel with "
                "dynamic sizes cannot do yet";
    }
  }
  return success();
}

class DynamicKernelsPass
    : public locus::impl::LocusDynamicKernelsBase<DynamicKernelsPass> {
public:
  using Base::Base;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    BlockArgument sizesArg;
    for (BlockArgument arg : func.getArguments())
      if (func.getArgAttr(arg.getArgNumber(), kSizesArgAttrName))
        sizesArg = arg;
    if (!sizesArg)
      return;
    FailureOr<SmallVector<DimSymbol>> symbols = readSymbols(func);
    if (failed(symbols))
      return signalPassFailure();
    SmallVector<int64_t> bounds;
    // NOLINTNEXTLINE(bugprone-unchecked-optional-access): checked above.
    for (const DimSymbol &s : *symbols)
      bounds.push_back(s.bound);
    // NOLINTNEXTLINE(bugprone-unchecked-optional-access): checked above.
    KernelDims dims(func, std::move(*symbols));
    if (failed(dims.seed()) || failed(dims.propagate()) ||
        failed(dims.rewrite(sizesArg)))
      return signalPassFailure();
    // What said the dims is spent: LLVM would not know the attributes.
    func.walk([](Operation *op) {
      op->removeAttr(kDimsAttrName);
      op->removeAttr(kResultDimsAttrName);
    });
    for (unsigned i = 0; i < func.getNumArguments(); ++i) {
      func.removeArgAttr(i, kDimsAttrName);
      func.removeArgAttr(i, kSizesArgAttrName);
    }
    for (unsigned i = 0; i < func.getNumResults(); ++i)
      func.removeResultAttr(i, StringAttr::get(&getContext(), kDimsAttrName));
    func->removeAttr(kSymbolsAttrName);
    if (keepBounds) {
      Builder b(&getContext());
      func->setAttr(kSizesArgIndexAttrName,
                    b.getI64IntegerAttr(sizesArg.getArgNumber()));
      func->setAttr(kSizeBoundsAttrName, b.getDenseI64ArrayAttr(bounds));
    }
  }
};

} // namespace
