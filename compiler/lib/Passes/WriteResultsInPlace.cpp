//===- WriteResultsInPlace.cpp - --locus-write-results-in-place -----------===//
//
// A kernel computes each result straight into its out-parameter instead of
// a temporary that a copy then moves there. See Passes.td.
//
//===----------------------------------------------------------------------===//

#include "locus/Passes/Passes.h"

#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/Builders.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

namespace locus {
#define GEN_PASS_DEF_LOCUSWRITERESULTSINPLACE
#include "locus/Passes/Passes.h.inc"
} // namespace locus

using namespace mlir;
using namespace locus;

namespace {

/// A static buffer of identity layout: elements in row-major order.
bool rowMajor(Value value) {
  auto type = dyn_cast<MemRefType>(value.getType());
  return type && type.hasStaticShape() && type.getLayout().isIdentity();
}

/// The allocation `value` is, looking through reshapes of row-major
/// buffers (which keep the order of the elements), or null; `views`
/// collects the reshapes.
memref::AllocOp allocationBehind(Value value,
                                 SmallVectorImpl<Operation *> &views) {
  while (rowMajor(value)) {
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
      if (mayAlias[i] < 0)
        writeInPlace(entry.getArgument(firstOut + i));
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
    copy->erase();
    for (Operation *dealloc : deallocs)
      dealloc->erase();
    alloc.replaceAllUsesWith(replacement);
    alloc->erase();
    ++numWritten;
  }
};

} // namespace
