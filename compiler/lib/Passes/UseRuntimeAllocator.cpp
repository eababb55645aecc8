//===- UseRuntimeAllocator.cpp - --locus-use-runtime-allocator ------------===//
//
// MLIR's generic allocation functions become the runtime's allocator; see
// Passes.td.
//
//===----------------------------------------------------------------------===//

#include "locus/Passes/Passes.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/SymbolTable.h"

namespace locus {
#define GEN_PASS_DEF_LOCUSUSERUNTIMEALLOCATOR
#include "locus/Passes/Passes.h.inc"
} // namespace locus

using namespace mlir;

namespace {

class UseRuntimeAllocatorPass
    : public locus::impl::LocusUseRuntimeAllocatorBase<
          UseRuntimeAllocatorPass> {
public:
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (alloc.empty() || free.empty() || alloc == free) {
      module.emitError("--locus-use-runtime-allocator needs two different "
                       "function names, alloc and free");
      return signalPassFailure();
    }
    const std::pair<StringRef, StringRef> renames[] = {
        {"_mlir_memref_to_llvm_alloc", alloc},
        {"_mlir_memref_to_llvm_free", free}};
    for (auto [generic, runtime] : renames) {
      Operation *func = SymbolTable::lookupSymbolIn(module, generic);
      if (!func)
        continue;
      if (Operation *clash = SymbolTable::lookupSymbolIn(module, runtime)) {
        clash->emitOpError() << "is named '" << runtime
                             << "', the runtime's allocation function that "
                             << "'" << generic << "' is to become";
        return signalPassFailure();
      }
      auto name = StringAttr::get(module.getContext(), runtime);
      if (failed(SymbolTable::replaceAllSymbolUses(func, name, module))) {
        func->emitOpError() << "has uses that cannot be renamed";
        return signalPassFailure();
      }
      SymbolTable::setSymbolName(func, name);
      ++numRenamed;
    }
  }
};

} // namespace
