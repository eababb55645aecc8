//===- GpuToRuntime.cpp - --locus-gpu-to-runtime --------------------------===//
//
// gpu.launch_func ops become calls to the runtime's locus_cuda_launch, and
// the PTX of the gpu.binary ops moves to a module attribute; see Passes.td.
//
//===----------------------------------------------------------------------===//

#include "locus/Passes/Passes.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"

namespace locus {
#define GEN_PASS_DEF_LOCUSGPUTORUNTIME
#include "locus/Passes/Passes.h.inc"
} // namespace locus

using namespace mlir;
using namespace locus;

namespace {

constexpr llvm::StringLiteral kLaunch = LOCUS_ABI_CUDA_LAUNCH;

class GpuToRuntimePass
    : public locus::impl::LocusGpuToRuntimeBase<GpuToRuntimePass> {
public:
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *context = module.getContext();
    // Kernel numbers in the order of first launch.
    SmallVector<Attribute> kernels;
    llvm::StringMap<int64_t> numbers;
    SmallVector<gpu::LaunchFuncOp> launches;
    module.walk([&](gpu::LaunchFuncOp l) { launches.push_back(l); });
    for (gpu::LaunchFuncOp l : launches) {
      StringRef binaryName = l.getKernelModuleName().getValue();
      StringRef kernelName = l.getKernelName().getValue();
      std::string key = (binaryName + "::" + kernelName).str();
      auto [it, added] = numbers.try_emplace(key, kernels.size());
      if (added) {
        auto binary = module.lookupSymbol<gpu::BinaryOp>(binaryName);
        if (!binary) {
          l.emitOpError("launches a kernel of @")
              << binaryName << ", which is no gpu.binary";
          return signalPassFailure();
        }
        std::optional<StringRef> ptx;
        for (Attribute object : binary.getObjects())
          if (auto o = dyn_cast<gpu::ObjectAttr>(object);
              o && o.getFormat() == gpu::CompilationTarget::Assembly)
            ptx = o.getObject().getValue();
        if (!ptx) {
          binary.emitOpError("has no PTX object; expected "
                             "locus-gpu-modules-to-ptx");
          return signalPassFailure();
        }
        Builder b(context);
        kernels.push_back(b.getDictionaryAttr(
            {b.getNamedAttr("name", b.getStringAttr(kernelName)),
             b.getNamedAttr("ptx", b.getStringAttr(*ptx))}));
      }
      if (failed(rewrite(module, l, it->second)))
        return signalPassFailure();
    }
    for (auto binary :
         llvm::make_early_inc_range(module.getOps<gpu::BinaryOp>()))
      binary.erase();
    numKernels = kernels.size();
    if (!kernels.empty())
      module->setAttr(kCudaKernelsAttrName, ArrayAttr::get(context, kernels));
  }

private:
  func::FuncOp declaration(ModuleOp module) {
    Builder b(module.getContext());
    return declareRuntimeFunction(
        module, kLaunch,
        b.getFunctionType(SmallVector<Type>(10, b.getI64Type()), {}));
  }

  LogicalResult rewrite(ModuleOp module, gpu::LaunchFuncOp l, int64_t number) {
    if (l.getAsyncToken() || !l.getAsyncDependencies().empty())
      return l.emitOpError("is asynchronous; the runtime orders launches on "
                           "its own stream");
    OpBuilder b(l);
    Location loc = l.getLoc();
    Type i64 = b.getI64Type();
    auto constant = [&](int64_t v) -> Value {
      return b.create<arith::ConstantIntOp>(loc, v, 64);
    };
    auto toI64 = [&](Value v) -> Value {
      return b.create<arith::IndexCastOp>(loc, i64, v);
    };
    ValueRange operands = l.getKernelOperands();
    auto slotsType =
        MemRefType::get({std::max<int64_t>(1, operands.size())}, i64);
    Value slots = b.create<memref::AllocaOp>(loc, slotsType);
    for (auto [i, v] : llvm::enumerate(operands)) {
      Type type = v.getType();
      Value slot;
      if (isa<MemRefType>(type))
        slot = toI64(b.create<memref::ExtractAlignedPointerAsIndexOp>(loc, v));
      else if (type.isIndex())
        slot = toI64(v);
      else if (type.isInteger(64))
        slot = v;
      else if (auto it = dyn_cast<IntegerType>(type); it && it.getWidth() < 64)
        slot = b.create<arith::ExtUIOp>(loc, i64, v);
      else if (auto ft = dyn_cast<FloatType>(type); ft && ft.getWidth() < 64)
        // Its bits, from the slot's first bytes: f32, bf16 or f16.
        slot = b.create<arith::ExtUIOp>(
            loc, i64,
            b.create<arith::BitcastOp>(loc, b.getIntegerType(ft.getWidth()),
                                       v));
      else
        return l.emitOpError("passes a kernel argument of type ")
               << type << ", which the runtime cannot pass";
      b.create<memref::StoreOp>(
          loc, slot, slots,
          ValueRange{b.create<arith::ConstantIndexOp>(loc, i)});
    }
    Value kernel = constant(number);
    Value shared =
        l.getDynamicSharedMemorySize()
            ? b.create<arith::ExtUIOp>(loc, i64, l.getDynamicSharedMemorySize())
                  .getResult()
            : constant(0);
    gpu::KernelDim3 grid = l.getGridSizeOperandValues();
    gpu::KernelDim3 block = l.getBlockSizeOperandValues();
    SmallVector<Value> args{
        kernel,
        toI64(grid.x),
        toI64(grid.y),
        toI64(grid.z),
        toI64(block.x),
        toI64(block.y),
        toI64(block.z),
        shared,
        toI64(b.create<memref::ExtractAlignedPointerAsIndexOp>(loc, slots)),
        constant(static_cast<int64_t>(operands.size()))};
    b.create<func::CallOp>(loc, declaration(module), args);
    l.erase();
    return success();
  }
};

} // namespace
