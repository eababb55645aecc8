//===- ConvToRuntime.cpp - --locus-conv-to-runtime -----------------------===//
//
// Host convolutions, with their residual add, ReLU and pooling, become calls
// to the runtime's locus_conv2d, their gradients calls to locus_conv2d_grad.
// See Passes.td.
//
//===----------------------------------------------------------------------===//

#include "ConvCalls.h"

#include "locus/Dialect/DynamicDims.h"

#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "llvm/Support/Debug.h"

#include <array>
#include <optional>

#define DEBUG_TYPE "locus-conv-to-runtime"

namespace locus {
#define GEN_PASS_DEF_LOCUSCONVTORUNTIME
#include "locus/Passes/Passes.h.inc"
} // namespace locus

using namespace mlir;
using namespace locus;
using namespace locus::conv;

namespace {

/// The window, strides and padding of a pooling op.
template <typename PoolOp>
std::array<ArrayRef<int64_t>, 3> poolingOf(Operation *op) {
  auto pool = cast<PoolOp>(op);
  return {pool.getKernelSize(), pool.getStride(), pool.getPadding()};
}

class ConvToRuntimePass
    : public locus::impl::LocusConvToRuntimeBase<ConvToRuntimePass> {
public:
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    // Kernel functions only: a graph's ops are the plan's.
    for (auto func :
         llvm::make_early_inc_range(module.getOps<func::FuncOp>())) {
      SmallVector<Conv2dOp> convs;
      SmallVector<Operation *> grads;
      widenSixteenBit(func);
      func.walk([&](Operation *op) {
        if (auto conv = dyn_cast<Conv2dOp>(op))
          convs.push_back(conv);
        else if (isa<Conv2dInputGradOp, Conv2dWeightGradOp>(op))
          grads.push_back(op);
      });
      if (convs.empty() && grads.empty())
        continue;
      RunSizes run;
      if (failed(RunSizes::of(func, run)))
        return signalPassFailure();
      for (Conv2dOp conv : convs)
        rewrite(module, matchFused(conv), run);
      for (Operation *grad : grads)
        rewriteGrad(module, grad, run);
    }
  }

private:
  /// The host version of a CUDA kernel may hold convolutions of 16-bit
  /// operands (--locus-gpu-16bit-convs); locus_conv2d takes f32, exactly
  /// the same values cast up.
  static void widenSixteenBit(func::FuncOp func) {
    SmallVector<Operation *> sixteen;
    func.walk([&](Operation *op) {
      if (isa<Conv2dOp, Conv2dInputGradOp, Conv2dWeightGradOp>(op) &&
          isSixteenBit(op))
        sixteen.push_back(op);
    });
    for (Operation *op : sixteen) {
      OpBuilder b(op);
      op->getResult(0).replaceAllUsesWith(widen(b, op).result);
      op->erase();
    }
  }

  /// The address of `params`: their constant global, or a copy with the
  /// run's batch (paramsAddress).
  Value paramsAddress(ModuleOp module, Addresses &at, const Params &params,
                      const RunSizes &run, Value batchOf) {
    return conv::paramsAddress(at, globals.get(module, params), run, batchOf);
  }

  func::FuncOp declaration(ModuleOp module) {
    Builder b(module.getContext());
    return declareRuntimeFunction(
        module, LOCUS_ABI_CONV2D,
        b.getFunctionType(SmallVector<Type>(6, b.getI64Type()), {}));
  }

  void rewrite(ModuleOp module, Fused f, const RunSizes &run) {
    Conv2dOp conv = f.conv;
    LLVM_DEBUG(llvm::dbgs() << "[" DEBUG_TYPE "] conv2d at " << conv.getLoc()
                            << ": a runtime call"
                            << (f.residual ? ", residual add fused" : "")
                            << (f.relu ? ", relu fused" : "")
                            << (f.pool ? ", pooling fused" : "")
                            << (f.sixteen.a ? ", 16-bit x and w" : "")
                            << (f.sixteen.round ? ", 16-bit y" : "") << "\n");
    RankedTensorType in = conv.getInput().getType(),
                     w = conv.getWeight().getType(), out = conv.getType();
    ArrayRef<int64_t> stride = conv.getStride(), padding = conv.getPadding(),
                      dilation = conv.getDilation();
    int64_t flags =
        (conv.getBias() ? LOCUS_CONV_BIAS : 0) |
        (f.residual ? LOCUS_CONV_RESIDUAL : 0) |
        (f.relu ? LOCUS_CONV_RELU : 0) |
        (isa_and_nonnull<MaxPool2dOp>(f.pool) ? LOCUS_CONV_MAX_POOL : 0) |
        (isa_and_nonnull<AvgPool2dOp>(f.pool) ? LOCUS_CONV_AVG_POOL : 0) |
        (conv->hasAttr(kNhwcInputAttr) ? LOCUS_CONV_X_NHWC : 0) |
        (f.residual && conv->hasAttr(kNhwcResidualAttr)
             ? LOCUS_CONV_RESIDUAL_NHWC
             : 0) |
        (conv->hasAttr(kNhwcResultAttr) ? LOCUS_CONV_Y_NHWC : 0) |
        sixteenBitFlags(f.sixteen);
    Params params =
        convParams(in.getShape(), w.getShape(), out.getShape(), stride, padding,
                   dilation, conv.getGroups(), flags);
    if (f.pool) {
      auto [window, poolStride, poolPadding] =
          isa<MaxPool2dOp>(f.pool) ? poolingOf<MaxPool2dOp>(f.pool)
                                   : poolingOf<AvgPool2dOp>(f.pool);
      auto pooled = cast<RankedTensorType>(f.pool->getResult(0).getType());
      params[LOCUS_CONV_POOL_KH] = window[0];
      params[LOCUS_CONV_POOL_KW] = window[1];
      params[LOCUS_CONV_POOL_STRIDE_H] = poolStride[0];
      params[LOCUS_CONV_POOL_STRIDE_W] = poolStride[1];
      params[LOCUS_CONV_POOL_PAD_H] = poolPadding[0];
      params[LOCUS_CONV_POOL_PAD_W] = poolPadding[1];
      params[LOCUS_CONV_POOL_OH] = pooled.getDimSize(2);
      params[LOCUS_CONV_POOL_OW] = pooled.getDimSize(3);
    }

    Operation *last = f.output();
    OpBuilder b(last);
    Location loc = conv.getLoc();
    Addresses at{b, loc};
    Value paramAddress =
        paramsAddress(module, at, params, run, conv.getInput());
    Value x = at.read(f.sixteen.a ? f.sixteen.a : conv.getInput());
    Value weight = at.read(f.sixteen.b ? f.sixteen.b : conv.getWeight());
    // Absent operands: the input's pointer, which the flags say not to read.
    Value bias = conv.getBias() ? at.read(conv.getBias()) : x;
    Value residual = f.residual ? at.read(f.residual) : x;
    // The call's result: the pooling's when one is fused.
    auto yType = cast<RankedTensorType>(last->getResult(0).getType());
    auto resultType = MemRefType::get(yType.getShape(), yType.getElementType());
    Value y =
        b.create<memref::AllocOp>(loc, resultType, b.getI64IntegerAttr(64));
    b.create<func::CallOp>(
        loc, declaration(module),
        ValueRange{paramAddress, x, weight, bias, residual, at.pointer(y)});
    Value result = b.create<bufferization::ToTensorOp>(
        loc, yType, y, /*restrict=*/true, /*writable=*/true);
    run.mark(result, last->getResult(0));
    last->getResult(0).replaceAllUsesWith(result);
    if (f.sixteen.round)
      f.sixteen.round->erase();
    if (f.pool)
      f.pool->erase();
    if (f.relu)
      f.relu->erase();
    if (f.add)
      f.add->erase();
    // Casts up that only the convolution read go with it.
    Operation *xUp = f.sixteen.a ? conv.getInput().getDefiningOp() : nullptr;
    Operation *wUp = f.sixteen.b ? conv.getWeight().getDefiningOp() : nullptr;
    conv.erase();
    eraseIfUnused(xUp, wUp);
    ++numCalls;
    numEpilogues += (f.add ? 1 : 0) + (f.relu ? 1 : 0) + (f.pool ? 1 : 0);
  }

  func::FuncOp gradDeclaration(ModuleOp module) {
    Builder b(module.getContext());
    return declareRuntimeFunction(
        module, LOCUS_ABI_CONV2D_GRAD,
        b.getFunctionType(SmallVector<Type>(5, b.getI64Type()), {}));
  }

  /// A gradient becomes locus_conv2d_grad(kind, params, a, b, y).
  void rewriteGrad(ModuleOp module, Operation *op, const RunSizes &run) {
    ConvCall d = describe(op, /*tf32=*/0);
    // 16-bit operands cast up: the call reads them, and rounds its result
    // when a cast down is all that reads it.
    SixteenBit reads = sixteenBitReads(d.a, d.b, op->getResult(0));
    d.params[LOCUS_CONV_FLAGS] |= sixteenBitFlags(reads);
    LLVM_DEBUG(llvm::dbgs()
               << "[" DEBUG_TYPE "] " << op->getName() << " at " << op->getLoc()
               << ": a runtime call" << (reads.a ? ", 16-bit operands" : "")
               << (reads.round ? ", 16-bit result" : "") << "\n");
    Operation *out = reads.round ? reads.round.getOperation() : op;
    auto yType = cast<RankedTensorType>(out->getResult(0).getType());
    Location loc = op->getLoc();
    OpBuilder b(out);
    Addresses at{b, loc};
    // The batch: dy's for the input gradient, x's for the weights'.
    Value params = paramsAddress(module, at, d.params, run, d.a);
    Value x = at.read(reads.a ? reads.a : d.a),
          w = at.read(reads.b ? reads.b : d.b);
    Value y = b.create<memref::AllocOp>(
        loc, MemRefType::get(yType.getShape(), yType.getElementType()),
        b.getI64IntegerAttr(64));
    Value kind = b.create<arith::ConstantIntOp>(loc, d.kind, 64);
    b.create<func::CallOp>(loc, gradDeclaration(module),
                           ValueRange{kind, params, x, w, at.pointer(y)});
    Value result = b.create<bufferization::ToTensorOp>(
        loc, yType, y, /*restrict=*/true, /*writable=*/true);
    run.mark(result, out->getResult(0));
    out->getResult(0).replaceAllUsesWith(result);
    if (reads.round)
      reads.round->erase();
    Operation *aUp = reads.a ? d.a.getDefiningOp() : nullptr;
    Operation *bUp = reads.b ? d.b.getDefiningOp() : nullptr;
    op->erase();
    eraseIfUnused(aUp, bUp);
    ++numGradCalls;
  }

  /// Erases the casts up a call took the 16-bit values of, where nothing
  /// else reads them (`b` may be `a`).
  static void eraseIfUnused(Operation *a, Operation *b) {
    if (a && a->use_empty())
      a->erase();
    if (b && b != a && b->use_empty())
      b->erase();
  }

  ParamGlobals globals;
};

} // namespace
