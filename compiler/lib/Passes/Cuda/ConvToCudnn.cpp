//===- ConvToCudnn.cpp - --locus-conv-to-cudnn ----------------------------===//
//
// CUDA convolutions and their gradients become calls to locus_cuda_conv2d
// (cuDNN) where the runtime has cuDNN, their generated kernels where not.
// See Passes.td.
//
//===----------------------------------------------------------------------===//

#include "../ConvCalls.h"

namespace locus {
#define GEN_PASS_DEF_LOCUSCONVTOCUDNN
#include "locus/Passes/Passes.h.inc"
} // namespace locus

using namespace mlir;
using namespace locus;
using namespace locus::conv;

namespace {

class ConvToCudnnPass
    : public locus::impl::LocusConvToCudnnBase<ConvToCudnnPass> {
public:
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    for (auto func : module.getOps<func::FuncOp>()) {
      SmallVector<Operation *> convs;
      func.walk([&](Operation *op) {
        if (isa<Conv2dOp, Conv2dInputGradOp, Conv2dWeightGradOp>(op))
          convs.push_back(op);
      });
      if (convs.empty() || func.isExternal())
        continue;
      RunSizes run;
      if (failed(RunSizes::of(func, run)))
        return signalPassFailure();
      // Asked once per launch: whether this device has cuDNN.
      OpBuilder b = OpBuilder::atBlockBegin(&func.getBody().front());
      Location loc = func.getLoc();
      Value ready =
          b.create<func::CallOp>(loc, readyDeclaration(module), ValueRange{})
              .getResult(0);
      Value zero = b.create<arith::ConstantIntOp>(loc, 0, 32);
      Value yes =
          b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::ne, ready, zero);
      for (Operation *op : convs)
        if (failed(run.isDynamic(describe(op, 0).a)
                       ? rewriteDynamic(module, op, run)
                       : rewrite(module, op, yes)))
          return signalPassFailure();
    }
  }

private:
  func::FuncOp readyDeclaration(ModuleOp module) {
    Builder b(module.getContext());
    return declareRuntimeFunction(module, LOCUS_ABI_CUDA_DNN_READY,
                                  b.getFunctionType({}, {b.getI32Type()}));
  }

  func::FuncOp convDeclaration(ModuleOp module) {
    Builder b(module.getContext());
    return declareRuntimeFunction(
        module, LOCUS_ABI_CUDA_CONV2D,
        b.getFunctionType(SmallVector<Type>(6, b.getI64Type()), {}));
  }

  /// The call of locus_cuda_conv2d for `d` with `params` (an address),
  /// where `addr` builds; its result as a tensor of `yType`.
  Value call(ModuleOp module, Addresses &addr, const ConvCall &d,
             RankedTensorType yType, Value params) {
    OpBuilder &b = addr.b;
    Location loc = addr.loc;
    Value a = addr.read(d.a), w = addr.read(d.b);
    Value bias = d.bias ? addr.read(d.bias) : a; // unread without the flag
    Value y = b.create<memref::AllocOp>(
        loc, MemRefType::get(yType.getShape(), yType.getElementType()));
    Value kind = b.create<arith::ConstantIntOp>(loc, d.kind, 64);
    b.create<func::CallOp>(
        loc, convDeclaration(module),
        ValueRange{kind, params, a, w, bias, addr.pointer(y)});
    return b.create<bufferization::ToTensorOp>(loc, yType, y,
                                               /*restrict=*/true,
                                               /*writable=*/true);
  }

  /// The flags of `op`'s call: TF32 and the element type. An autocast
  /// convolution (bf16 or f16 operands held in f32) may use TF32 tensor
  /// cores without allow-tf32: TF32 holds its operands exactly. One of
  /// 16-bit operands (--locus-gpu-16bit-convs) runs in 16 bits.
  int64_t flagsOf(Operation *op) {
    Type element =
        cast<RankedTensorType>(op->getOperand(0).getType()).getElementType();
    if (element.isBF16())
      return LOCUS_CONV_BF16;
    if (element.isF16())
      return LOCUS_CONV_F16;
    return allowTf32 || op->hasAttr(kAutocastAttrName) ? LOCUS_CONV_TF32 : 0;
  }

  /// cuDNN adds no 16-bit bias here (--locus-gpu-16bit-convs leaves
  /// convolutions with a bias in f32).
  LogicalResult checkBias(Operation *op, const ConvCall &d) {
    if (!d.bias ||
        !(d.params[LOCUS_CONV_FLAGS] & (LOCUS_CONV_BF16 | LOCUS_CONV_F16)))
      return success();
    return op->emitOpError("of 16-bit operands with a bias has no cuDNN call; "
                           "add the bias after the convolution");
  }

  /// `op` as it was, for devices without cuDNN, as an f32 convolution: one
  /// of 16-bit operands computes on them cast up and rounds its result.
  Value generatedPath(OpBuilder &e, Operation *op) {
    if (!isSixteenBit(op))
      return e.clone(*op)->getResult(0);
    return widen(e, op).result;
  }

  /// `op` becomes scf.if (cuDNN) { the call } else { `op` as it was }.
  LogicalResult rewrite(ModuleOp module, Operation *op, Value yes) {
    ConvCall d = describe(op, flagsOf(op));
    if (failed(checkBias(op, d)))
      return failure();
    auto yType = cast<RankedTensorType>(op->getResult(0).getType());
    Location loc = op->getLoc();
    OpBuilder b(op);
    auto callCudnn = [&](OpBuilder &t, Location at) {
      Addresses addr{t, at};
      Value params = addr.global(globals.get(module, d.params));
      t.create<scf::YieldOp>(at, call(module, addr, d, yType, params));
    };
    // The generated path's result is placed in a fresh tensor, so that
    // both branches yield buffers of the identity layout (CUDA kernels
    // need static layouts; a lowering that ends in a slice, as the input
    // gradient's does, would give the scf.if a dynamic one).
    auto generated = [&](OpBuilder &e, Location at) {
      Value result = generatedPath(e, op);
      Value into = e.create<tensor::EmptyOp>(at, yType.getShape(),
                                             yType.getElementType());
      e.create<scf::YieldOp>(
          at,
          e.create<bufferization::MaterializeInDestinationOp>(at, result, into)
              .getResult());
    };
    auto branch = b.create<scf::IfOp>(loc, yes, callCudnn, generated);
    op->getResult(0).replaceAllUsesWith(branch.getResult(0));
    op->erase();
    ++numCalls;
    return success();
  }

  /// `op` over a dynamic batch: the cuDNN call alone, its parameters a
  /// copy with the run's batch, its result bound-sized with the run's
  /// values packed at its start. Generated kernels would compute at the
  /// bounds (a weight gradient over the bound's batch); without cuDNN the
  /// runtime reports the call's failure.
  LogicalResult rewriteDynamic(ModuleOp module, Operation *op,
                               const RunSizes &run) {
    ConvCall d = describe(op, flagsOf(op));
    if (failed(checkBias(op, d)))
      return failure();
    auto yType = cast<RankedTensorType>(op->getResult(0).getType());
    Location loc = op->getLoc();
    OpBuilder b(op);
    Addresses addr{b, loc};
    Value params = paramsAddress(addr, globals.get(module, d.params), run, d.a);
    Value result = call(module, addr, d, yType, params);
    run.mark(result, op->getResult(0));
    op->getResult(0).replaceAllUsesWith(result);
    op->erase();
    ++numCalls;
    return success();
  }

  ParamGlobals globals;
};

} // namespace
