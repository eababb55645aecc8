//===- Parallelize.cpp - --locus-parallelize ------------------------------===//
//
// The outermost parallel loop of a kernel, when it does enough work, runs on
// all cores through the runtime's locus_parallel_for. See Passes.td.
//
//===----------------------------------------------------------------------===//

#include "locus/Passes/Passes.h"

#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Transforms/RegionUtils.h"
#include "llvm/Support/Debug.h"

namespace locus {
#define GEN_PASS_DEF_LOCUSPARALLELIZE
#include "locus/Passes/Passes.h.inc"
} // namespace locus

#define DEBUG_TYPE "locus-parallelize"

using namespace mlir;
using namespace locus;

namespace {

std::optional<int64_t> constantIndex(Value v) {
  if (auto c = v.getDefiningOp<arith::ConstantIndexOp>())
    return c.value();
  return std::nullopt;
}

/// Iterations of the loop nest under `op` (statically bounded loops only;
/// other ops count one).
int64_t work(Operation *op) {
  int64_t inner = 0;
  for (Region &region : op->getRegions())
    for (Operation &child : region.getOps())
      inner += work(&child);
  inner = std::max<int64_t>(inner, 1);
  int64_t trips = 1;
  if (auto loop = dyn_cast<scf::ParallelOp>(op)) {
    for (auto [lb, ub, step] : llvm::zip(
             loop.getLowerBound(), loop.getUpperBound(), loop.getStep())) {
      auto l = constantIndex(lb), u = constantIndex(ub),
           s = constantIndex(step);
      if (!l || !u || !s || *s <= 0)
        return inner;
      trips *= std::max<int64_t>(0, (*u - *l + *s - 1) / *s);
    }
  } else if (auto loop = dyn_cast<scf::ForOp>(op)) {
    auto l = constantIndex(loop.getLowerBound()),
         u = constantIndex(loop.getUpperBound()),
         s = constantIndex(loop.getStep());
    if (l && u && s && *s > 0)
      trips = std::max<int64_t>(0, (*u - *l + *s - 1) / *s);
  } else {
    return op->getNumRegions() ? inner : 1;
  }
  return std::min<int64_t>(trips * inner, int64_t(1) << 40);
}

/// Values a body may take as arguments: buffers that bare-pointer calls can
/// pass (static shape, identity layout) and scalars.
bool passable(Type type) {
  if (auto memref = dyn_cast<MemRefType>(type))
    return memref.hasStaticShape() && memref.getLayout().isIdentity();
  return type.isIntOrIndexOrFloat();
}

class ParallelizePass
    : public locus::impl::LocusParallelizeBase<ParallelizePass> {
public:
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<std::pair<func::FuncOp, scf::ParallelOp>> loops;
    for (func::FuncOp func : module.getOps<func::FuncOp>())
      if (!func.isDeclaration())
        for (Operation &op : func.getBody().getOps())
          if (auto loop = dyn_cast<scf::ParallelOp>(op))
            loops.emplace_back(func, loop);
    SmallVector<Attribute> outlined;
    unsigned index = 0;
    for (auto [func, loop] : loops)
      if (std::optional<std::string> name = outline(module, func, loop, index))
        outlined.push_back(StringAttr::get(&getContext(), *name)), ++index;
    if (!outlined.empty())
      module->setAttr(kParallelBodiesAttrName,
                      ArrayAttr::get(&getContext(), outlined));
  }

private:
  std::optional<std::string> outline(ModuleOp module, func::FuncOp func,
                                     scf::ParallelOp loop, unsigned index) {
    auto lb = constantIndex(loop.getLowerBound()[0]),
         ub = constantIndex(loop.getUpperBound()[0]),
         step = constantIndex(loop.getStep()[0]);
    if (!lb || !ub || !step || *lb != 0 || *step != 1 || *ub < 2 ||
        loop.getNumResults() != 0)
      return std::nullopt;
    if (work(loop) < minWork) {
      LLVM_DEBUG(llvm::dbgs()
                 << "[" DEBUG_TYPE "] " << func.getName() << ": " << *ub
                 << " iterations stay serial (work " << work(loop)
                 << " < min-work " << minWork << ")\n");
      return std::nullopt;
    }
    llvm::SetVector<Value> captured;
    getUsedValuesDefinedAbove(loop->getRegions(), captured);
    for (Value bound : loop->getOperands())
      captured.insert(bound);
    SmallVector<Value> arguments;
    for (Value value : captured) {
      if (matchPattern(value, m_Constant()))
        continue; // cloned into the body
      if (!passable(value.getType()))
        return std::nullopt;
      arguments.push_back(value);
    }

    // The body: the same loop over [lo, hi) of its first dimension.
    OpBuilder b(module.getContext());
    b.setInsertionPointToEnd(module.getBody());
    std::string name = (func.getSymName() + "_par" + Twine(index)).str();
    SmallVector<Type> types(ValueRange(arguments).getTypes());
    types.append({b.getIndexType(), b.getIndexType()});
    auto body = b.create<func::FuncOp>(loop.getLoc(), name,
                                       b.getFunctionType(types, {}));
    body.setPrivate();
    Block *entry = body.addEntryBlock();
    b.setInsertionPointToStart(entry);
    IRMapping mapping;
    for (auto [value, arg] : llvm::zip(arguments, entry->getArguments()))
      mapping.map(value, arg);
    for (Value value : captured)
      if (!mapping.contains(value))
        mapping.map(value, b.clone(*value.getDefiningOp())->getResult(0));
    auto copy = cast<scf::ParallelOp>(b.clone(*loop, mapping));
    unsigned n = arguments.size();
    copy.getLowerBoundMutable()[0].assign(entry->getArgument(n));
    copy.getUpperBoundMutable()[0].assign(entry->getArgument(n + 1));
    b.create<func::ReturnOp>(loop.getLoc());

    // The dispatch: declared here, defined with the LLVM IR (it packs the
    // arguments and calls locus_parallel_for).
    SmallVector<Type> dispatchTypes(ValueRange(arguments).getTypes());
    dispatchTypes.push_back(b.getIndexType());
    b.setInsertionPointToEnd(module.getBody());
    auto dispatch =
        b.create<func::FuncOp>(loop.getLoc(), name + "__dispatch",
                               b.getFunctionType(dispatchTypes, {}));
    dispatch.setPrivate();
    b.setInsertionPoint(loop);
    SmallVector<Value> operands(arguments);
    operands.push_back(loop.getUpperBound()[0]);
    b.create<func::CallOp>(loop.getLoc(), dispatch, operands);
    loop.erase();
    return name;
  }
};

} // namespace
