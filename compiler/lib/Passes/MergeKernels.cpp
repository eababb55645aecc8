//===- MergeKernels.cpp - --locus-merge-kernels ---------------------------===//
//
// Kernel functions that differ only in their source locations are compiled
// once: repeated layers make many. See Passes.td.
//
//===----------------------------------------------------------------------===//

#include "locus/Passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringSet.h"

namespace locus {
#define GEN_PASS_DEF_LOCUSMERGEKERNELS
#include "locus/Passes/Passes.h.inc"
} // namespace locus

using namespace mlir;
using namespace locus;

namespace {

/// What two functions must share besides their bodies: signature,
/// argument and result attributes, visibility and the discardable
/// attributes (device, what may alias, dynamic dims).
bool sameOutside(func::FuncOp a, func::FuncOp b) {
  return a.getFunctionType() == b.getFunctionType() &&
         a.getArgAttrsAttr() == b.getArgAttrsAttr() &&
         a.getResAttrsAttr() == b.getResAttrsAttr() &&
         a.getSymVisibilityAttr() == b.getSymVisibilityAttr() &&
         a->getDiscardableAttrDictionary() == b->getDiscardableAttrDictionary();
}

/// A hash that equal functions share: what sameOutside compares, and each
/// op of the body with its attributes and types, locations aside.
llvm::hash_code hashOf(func::FuncOp func) {
  llvm::hash_code hash = llvm::hash_combine(
      func.getFunctionType().getAsOpaquePointer(),
      func.getArgAttrsAttr().getAsOpaquePointer(),
      func.getResAttrsAttr().getAsOpaquePointer(),
      func->getDiscardableAttrDictionary().getAsOpaquePointer());
  func.getBody().walk([&](Operation *op) {
    hash =
        llvm::hash_combine(hash, OperationEquivalence::computeHash(
                                     op, OperationEquivalence::ignoreHashValue,
                                     OperationEquivalence::ignoreHashValue,
                                     OperationEquivalence::IgnoreLocations));
  });
  return hash;
}

bool equivalent(func::FuncOp a, func::FuncOp b) {
  if (!sameOutside(a, b))
    return false;
  // Values correspond as the walk pairs them (block arguments by position).
  DenseMap<Value, Value> same;
  auto check = [&](Value x, Value y) {
    return success(x == y || same.lookup(x) == y);
  };
  auto mark = [&](Value x, Value y) { same[x] = y; };
  return OperationEquivalence::isRegionEquivalentTo(
      &a.getBody(), &b.getBody(), check, mark,
      OperationEquivalence::IgnoreLocations);
}

class MergeKernelsPass
    : public locus::impl::LocusMergeKernelsBase<MergeKernelsPass> {
public:
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    for (auto graph : module.getOps<GraphOp>()) {
      graph.emitOpError() << "is still in the module: run "
                             "--locus-extract-kernels before "
                             "--locus-merge-kernels";
      return signalPassFailure();
    }
    // Every name an op refers to (a call's callee, a global's user).
    llvm::StringSet<> referenced;
    module.walk([&](Operation *op) {
      op->getAttrDictionary().walk([&](SymbolRefAttr ref) {
        referenced.insert(ref.getRootReference().getValue());
      });
    });

    // Candidates by hash, in module order; the first of equals stays.
    DenseMap<llvm::hash_code, SmallVector<func::FuncOp>> kept;
    NamedAttrList aliases;
    if (auto old =
            module->getAttrOfType<DictionaryAttr>(kKernelAliasesAttrName))
      aliases.append(old.begin(), old.end());
    for (auto func :
         llvm::make_early_inc_range(module.getOps<func::FuncOp>())) {
      if (func.isExternal() || referenced.contains(func.getSymName()))
        continue;
      SmallVector<func::FuncOp> &bucket = kept[hashOf(func)];
      auto *same = llvm::find_if(
          bucket, [&](func::FuncOp k) { return equivalent(k, func); });
      if (same == bucket.end()) {
        bucket.push_back(func);
        continue;
      }
      aliases.set(func.getSymNameAttr(), same->getSymNameAttr());
      func.erase();
    }
    // An earlier alias of a function merged now names where it went.
    NamedAttrList resolved;
    for (NamedAttribute alias : aliases) {
      auto to = dyn_cast<StringAttr>(alias.getValue());
      if (auto again = to ? aliases.get(to) : Attribute())
        resolved.set(alias.getName(), again);
      else
        resolved.set(alias.getName(), alias.getValue());
    }
    if (!resolved.empty())
      module->setAttr(kKernelAliasesAttrName,
                      resolved.getDictionary(module.getContext()));
  }
};

} // namespace
