//===- WriteResultsInPlace.cpp - --locus-write-results-in-place -----------===//
//
// A kernel computes each result straight into its out-parameter instead of
// a temporary that a copy then moves there. See Passes.td.
//
//===----------------------------------------------------------------------===//

#include "locus/Passes/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/Builders.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

namespace locus {
#define GEN_PASS_DEF_LOCUSWRITERESULTSINPLACE
#include "locus/Passes/Passes.h.inc"
} // namespace locus

using namespace mlir;
using namespace locus;

namespace {

/// A buffer of identity layout: elements in row-major order; static unless
/// `dynamic`.
bool rowMajor(Value value, bool dynamic = false) {
  auto type = dyn_cast<MemRefType>(value.getType());
  return type && (dynamic || type.hasStaticShape()) &&
         type.getLayout().isIdentity();
}

/// The allocation `value` is, looking through reshapes of row-major
/// buffers (which keep the order of the elements), or null; `views`
/// collects the reshapes. With `dynamic`, sizes may be dynamic.
memref::AllocOp allocationBehind(Value value,
                                 SmallVectorImpl<Operation *> &views,
                                 bool dynamic = false) {
  while (rowMajor(value, dynamic)) {
    Operation *def = value.getDefiningOp();
    if (auto alloc = dyn_cast_or_null<memref::AllocOp>(def))
      return alloc;
    if (!isa_and_nonnull<memref::ExpandShapeOp, memref::CollapseShapeOp>(def))
      return {};
    views.push_back(def);
    value = def->getOperand(0);
  }
  return {};
}

/// Whether every use of `alloc` and of the reshapes of it is in `copy`'s
/// block before `copy` (or nested in an op that is), or a dealloc of
/// `alloc` after it; collects those deallocs.
bool usedBeforeOnly(memref::AllocOp alloc, memref::CopyOp copy,
                    SmallVectorImpl<Operation *> &deallocs) {
  Block *block = copy->getBlock();
  SmallVector<Value> values{alloc.getResult()};
  while (!values.empty()) {
    Value value = values.pop_back_val();
    for (Operation *user : value.getUsers()) {
      if (user == copy.getOperation())
        continue;
      if (isa<memref::DeallocOp>(user) && value == alloc.getResult() &&
          user->getBlock() == block && copy->isBeforeInBlock(user)) {
        deallocs.push_back(user);
        continue;
      }
      Operation *ancestor = block->findAncestorOpInBlock(*user);
      if (!ancestor || !ancestor->isBeforeInBlock(copy))
        return false;
      if (isa<ViewLikeOpInterface>(user))
        values.push_back(user->getResult(0));
    }
  }
  return true;
}

class WriteResultsInPlacePass
    : public locus::impl::LocusWriteResultsInPlaceBase<
          WriteResultsInPlacePass> {
public:
  using Base::Base;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    auto aliasing =
        func->getAttrOfType<DenseI64ArrayAttr>(kResultsMayAliasAttrName);
    if (!aliasing || func.isExternal())
      return;
    ArrayRef<int64_t> mayAlias = aliasing.asArrayRef();
    Block &entry = func.getBody().front();
    // Buffer results became out-parameters, appended in result order.
    auto results = static_cast<unsigned>(mayAlias.size());
    if (entry.getNumArguments() < results)
      return;
    unsigned firstOut = entry.getNumArguments() - results;
    for (unsigned i = 0; i < results; ++i)
      if (mayAlias[i] < 0) {
        // The packed result at the bounds first becomes the parameter;
        // then the run-size result becomes its prefix.
        writeInPlace(entry.getArgument(firstOut + i));
        writePrefixInPlace(entry.getArgument(firstOut + i));
      }
  }

private:
  /// If `out` is written once, by a copy of a temporary (or a reshape of
  /// one) that nothing uses after the copy, the temporary becomes `out`.
  void writeInPlace(BlockArgument out) {
    if (!out.hasOneUse())
      return;
    auto copy = dyn_cast<memref::CopyOp>(*out.getUsers().begin());
    if (!copy || copy.getTarget() != out || copy->getBlock() != out.getOwner())
      return;
    SmallVector<Operation *> views, deallocs;
    memref::AllocOp alloc = allocationBehind(copy.getSource(), views);
    if (!alloc || alloc->getBlock() != out.getOwner() || !rowMajor(out) ||
        !usedBeforeOnly(alloc, copy, deallocs))
      return;
    auto type = alloc.getType();
    if (type.getNumElements() !=
            cast<MemRefType>(out.getType()).getNumElements() ||
        type.getElementType() !=
            cast<MemRefType>(out.getType()).getElementType())
      return;
    Value replacement = out;
    if (type != out.getType()) {
      // The same elements in the same order, seen with the temporary's
      // shape.
      OpBuilder b(alloc);
      SmallVector<int64_t> strides(type.getRank(), 1);
      for (int64_t d = type.getRank() - 2; d >= 0; --d)
        strides[d] = strides[d + 1] * type.getDimSize(d + 1);
      replacement = b.create<memref::ReinterpretCastOp>(
          alloc.getLoc(), type, out, 0, type.getShape(), strides);
    }
    replace(alloc, copy, deallocs, replacement);
  }

  /// A kernel with dynamic sizes computes a result at the run's sizes and
  /// packs it into the first elements of its out-parameter (sized at the
  /// bounds, --locus-dynamic-kernels): a copy into a prefix of the
  /// parameter seen flat. If that copy is all that writes `out`, and what
  /// it copies is a row-major temporary (or reshapes of one) that nothing
  /// uses after it, the temporary becomes that prefix, seen with its own
  /// run-time shape.
  void writePrefixInPlace(BlockArgument out) {
    if (!out.hasOneUse() || !rowMajor(out))
      return;
    auto flat = dyn_cast<memref::ReinterpretCastOp>(*out.getUsers().begin());
    memref::SubViewOp prefix = flat ? onlyPrefixOf(flat) : nullptr;
    if (!prefix || !prefix->hasOneUse())
      return;
    auto copy = dyn_cast<memref::CopyOp>(*prefix->getUsers().begin());
    if (!copy || copy.getTarget() != prefix.getResult() ||
        copy->getBlock() != out.getOwner())
      return;
    SmallVector<Operation *> views, deallocs;
    memref::AllocOp alloc = allocationBehind(copy.getSource(), views, true);
    if (!alloc || alloc->getBlock() != out.getOwner() ||
        alloc.getType().getElementType() !=
            cast<MemRefType>(out.getType()).getElementType() ||
        !usedBeforeOnly(alloc, copy, deallocs))
      return;
    OpBuilder b(alloc);
    replace(alloc, copy, deallocs, prefixAs(b, alloc, out));
  }

  /// The subview of offset 0 and stride 1 that is the only live reader of
  /// `flat`, `out` seen as one contiguous dimension; else null.
  static memref::SubViewOp onlyPrefixOf(memref::ReinterpretCastOp flat) {
    auto type = cast<MemRefType>(flat.getType());
    if (type.getRank() != 1 || !type.getLayout().isIdentity() ||
        flat.getStaticOffsets() != ArrayRef<int64_t>{0})
      return nullptr;
    memref::SubViewOp prefix;
    for (Operation *user : flat->getUsers()) {
      auto sub = dyn_cast<memref::SubViewOp>(user);
      if (sub && !prefix && sub.getStaticOffsets() == ArrayRef<int64_t>{0} &&
          sub.getStaticStrides() == ArrayRef<int64_t>{1}) {
        prefix = sub;
        continue;
      }
      // A view nothing reads (the packed result seen at the bounds).
      if (!isa<ViewLikeOpInterface>(user) || !user->use_empty())
        return nullptr;
    }
    return prefix;
  }

  /// The first elements of `out`, seen as `alloc`'s buffer: its sizes,
  /// row-major strides.
  static Value prefixAs(OpBuilder &b, memref::AllocOp alloc, Value out) {
    MemRefType type = alloc.getType();
    Location loc = alloc.getLoc();
    SmallVector<OpFoldResult> sizes, strides(type.getRank());
    unsigned dynamic = 0;
    for (int64_t d = 0; d < type.getRank(); ++d)
      sizes.push_back(type.isDynamicDim(d)
                          ? OpFoldResult(alloc.getDynamicSizes()[dynamic++])
                          : OpFoldResult(b.getIndexAttr(type.getDimSize(d))));
    OpFoldResult stride = b.getIndexAttr(1);
    for (int64_t d = type.getRank() - 1; d >= 0; --d) {
      strides[d] = stride;
      if (d > 0)
        stride = multiply(b, loc, stride, sizes[d]);
    }
    return b.create<memref::ReinterpretCastOp>(
        loc, type, out, b.getIndexAttr(0), sizes, strides);
  }

  static OpFoldResult multiply(OpBuilder &b, Location loc, OpFoldResult x,
                               OpFoldResult y) {
    std::optional<int64_t> cx = getConstantIntValue(x),
                           cy = getConstantIntValue(y);
    if (cx && cy)
      return b.getIndexAttr(*cx * *cy);
    auto value = [&](OpFoldResult v) -> Value {
      if (auto attr = dyn_cast<Attribute>(v))
        return b.create<arith::ConstantIndexOp>(
            loc, cast<IntegerAttr>(attr).getInt());
      return cast<Value>(v);
    };
    return b.create<arith::MulIOp>(loc, value(x), value(y)).getResult();
  }

  /// `alloc` becomes `replacement`; the copy out of it and its deallocs go.
  void replace(memref::AllocOp alloc, memref::CopyOp copy,
               ArrayRef<Operation *> deallocs, Value replacement) {
    copy->erase();
    for (Operation *dealloc : deallocs)
      dealloc->erase();
    alloc.replaceAllUsesWith(replacement);
    alloc->erase();
    ++numWritten;
  }
};

} // namespace
