//===- ExtractKernels.cpp - --locus-extract-kernels -----------------------===//
//
// Drops the graph once the plan is made from it, and keeps the kernel
// functions one code generator compiles; see Passes.td.
//
//===----------------------------------------------------------------------===//

#include "locus/Passes/Passes.h"
#include "locus/abi.h"

#include "mlir/IR/BuiltinOps.h"

namespace locus {
#define GEN_PASS_DEF_LOCUSEXTRACTKERNELS
#include "locus/Passes/Passes.h.inc"
} // namespace locus

using namespace mlir;
using namespace locus;

namespace {

class ExtractKernelsPass
    : public locus::impl::LocusExtractKernelsBase<ExtractKernelsPass> {
public:
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (target != "host" && target != "cuda") {
      module.emitError() << "--locus-extract-kernels: unknown target '"
                         << target << "'; expected host or cuda";
      return signalPassFailure();
    }
    for (GraphOp graph : llvm::make_early_inc_range(module.getOps<GraphOp>()))
      graph.erase();
    if (target == "cuda")
      keepCudaKernels(module);
  }

private:
  static void keepCudaKernels(ModuleOp module) {
    for (auto func :
         llvm::make_early_inc_range(module.getOps<func::FuncOp>())) {
      if (!isCudaKernelFunction(func)) {
        func.erase();
        continue;
      }
      func.setSymName(
          (func.getSymName() + LOCUS_ABI_CUDA_FUNCTION_SUFFIX).str());
    }
  }
};

} // namespace
