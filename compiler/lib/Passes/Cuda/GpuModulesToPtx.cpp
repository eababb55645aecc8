//===- GpuModulesToPtx.cpp - --locus-gpu-modules-to-ptx -------------------===//
//
// Every gpu.module becomes a gpu.binary holding its PTX, the modules
// compiled in parallel; see Passes.td.
//
//===----------------------------------------------------------------------===//

#include "locus/Passes/Passes.h"

#include "mlir/Dialect/GPU/IR/CompilationInterfaces.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Threading.h"

namespace locus {
#define GEN_PASS_DEF_LOCUSGPUMODULESTOPTX
#include "locus/Passes/Passes.h.inc"
} // namespace locus

using namespace mlir;
using namespace locus;

namespace {

/// The one target a module is compiled for, or null after an error.
gpu::TargetAttrInterface targetOf(gpu::GPUModuleOp module) {
  ArrayAttr targets = module.getTargetsAttr();
  if (!targets || targets.size() != 1) {
    module.emitOpError("needs exactly one target attribute (from "
                       "nvvm-attach-target); it has ")
        << (targets ? targets.size() : 0);
    return nullptr;
  }
  auto target = dyn_cast<gpu::TargetAttrInterface>(targets[0]);
  if (!target)
    module.emitOpError("has a target that cannot compile it: ") << targets[0];
  return target;
}

class GpuModulesToPtxPass
    : public locus::impl::LocusGpuModulesToPtxBase<GpuModulesToPtxPass> {
public:
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<gpu::GPUModuleOp> modules(module.getOps<gpu::GPUModuleOp>());
    SmallVector<gpu::TargetAttrInterface> targets;
    for (gpu::GPUModuleOp m : modules) {
      targets.push_back(targetOf(m));
      if (!targets.back())
        return signalPassFailure();
    }
    gpu::TargetOptions options({}, {}, {}, gpu::CompilationTarget::Assembly);
    // Each module is translated and optimized in its own LLVM context, so
    // they compile side by side; errors come out in the modules' order.
    std::vector<std::optional<SmallVector<char, 0>>> ptx(modules.size());
    ParallelDiagnosticHandler diagnostics(&getContext());
    LogicalResult compiled = failableParallelForEachN(
        &getContext(), 0, modules.size(), [&](size_t i) {
          diagnostics.setOrderIDForThread(i);
          ptx[i] = targets[i].serializeToObject(modules[i], options);
          if (!ptx[i])
            modules[i].emitOpError("could not be compiled to PTX");
          diagnostics.eraseOrderIDForThread();
          return success(ptx[i].has_value());
        });
    if (failed(compiled))
      return signalPassFailure();
    // Every object is there: the compile failed otherwise.
    for (auto [m, target, object] : llvm::zip(modules, targets, ptx)) {
      OpBuilder b(m);
      b.create<gpu::BinaryOp>(
          m.getLoc(), m.getName(), /*offloadingHandler=*/nullptr,
          b.getArrayAttr({target.createObject(
              object.value_or(SmallVector<char, 0>{}), options)}));
      m.erase();
    }
    numModules = modules.size();
  }
};

} // namespace
