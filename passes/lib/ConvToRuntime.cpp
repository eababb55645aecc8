//===- ConvToRuntime.cpp - --locus-conv-to-runtime, --locus-conv-to-cudnn -===//
//
// Host convolutions, with their residual add and ReLU, become calls to the
// runtime's locus_conv2d, their gradients calls to locus_conv2d_grad; CUDA
// convolutions and their gradients become calls to locus_cuda_conv2d (cuDNN)
// where the runtime has cuDNN, their generated kernels where not. See
// Passes.td.
//
//===----------------------------------------------------------------------===//

#include "locus/Passes/Passes.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"

#include <array>
#include <map>
#include <string>
#include <vector>

namespace locus {
#define GEN_PASS_DEF_LOCUSCONVTORUNTIME
#define GEN_PASS_DEF_LOCUSCONVTOCUDNN
#include "locus/Passes/Passes.h.inc"
} // namespace locus

using namespace mlir;
using namespace locus;

namespace {

/// A convolution and the ops that join its call.
struct Fused {
  Conv2dOp conv;
  Value residual; // null: none
  Operation *add = nullptr, *relu = nullptr;
  /// A max_pool2d or avg_pool2d of the result, or null.
  Operation *pool = nullptr;
  /// The op whose result the call replaces (the last one fused).
  Operation *last() {
    if (pool)
      return pool;
    return relu ? relu : add ? add : conv.getOperation();
  }
};

/// The single user of `value`, in the same block as its definition, or
/// null.
Operation *onlyUser(Value value) {
  if (!value.hasOneUse())
    return nullptr;
  Operation *user = *value.getUsers().begin();
  return user->getBlock() == value.getParentBlock() ? user : nullptr;
}

Fused match(Conv2dOp conv) {
  Fused f;
  f.conv = conv;
  Value result = conv.getResult();
  if (auto add = dyn_cast_or_null<AddOp>(onlyUser(result))) {
    Value other = add.getLhs() == result ? add.getRhs() : add.getLhs();
    // Same type on both sides (no broadcast), and not the convolution twice.
    if (other != result && other.getType() == result.getType() &&
        add.getType() == result.getType()) {
      f.add = add;
      f.residual = other;
      result = add.getResult();
    }
  }
  if (auto relu = dyn_cast_or_null<ReluOp>(onlyUser(result))) {
    f.relu = relu;
    result = relu.getResult();
  }
  Operation *user = onlyUser(result);
  if (isa_and_nonnull<MaxPool2dOp, AvgPool2dOp>(user))
    f.pool = user;
  return f;
}

/// The shapes of a convolution (forward or gradient) in locus_conv2d's
/// parameter order: `in` the input's shape, `w` the weight's, `out` the
/// result's.
std::array<int64_t, LOCUS_CONV_PARAM_COUNT>
convParams(ArrayRef<int64_t> in, ArrayRef<int64_t> w, ArrayRef<int64_t> out,
           ArrayRef<int64_t> stride, ArrayRef<int64_t> padding,
           ArrayRef<int64_t> dilation, int64_t groups, int64_t flags) {
  std::array<int64_t, LOCUS_CONV_PARAM_COUNT> params{};
  params[LOCUS_CONV_N] = in[0];
  params[LOCUS_CONV_C] = in[1];
  params[LOCUS_CONV_H] = in[2];
  params[LOCUS_CONV_W] = in[3];
  params[LOCUS_CONV_O] = out[1];
  params[LOCUS_CONV_KH] = w[2];
  params[LOCUS_CONV_KW] = w[3];
  params[LOCUS_CONV_OH] = out[2];
  params[LOCUS_CONV_OW] = out[3];
  params[LOCUS_CONV_STRIDE_H] = stride[0];
  params[LOCUS_CONV_STRIDE_W] = stride[1];
  params[LOCUS_CONV_PAD_H] = padding[0];
  params[LOCUS_CONV_PAD_W] = padding[1];
  params[LOCUS_CONV_DILATION_H] = dilation[0];
  params[LOCUS_CONV_DILATION_W] = dilation[1];
  params[LOCUS_CONV_GROUPS] = groups;
  params[LOCUS_CONV_FLAGS] = flags;
  return params;
}

/// Private constant globals of convolution parameters, one per distinct
/// set of values (a convolution and its gradients share theirs).
class ParamGlobals {
public:
  memref::GlobalOp get(ModuleOp module, ArrayRef<int64_t> values) {
    std::vector<int64_t> key(values.begin(), values.end());
    if (auto it = made.find(key); it != made.end())
      return it->second;
    OpBuilder b(module.getBodyRegion());
    b.setInsertionPointToStart(module.getBody());
    auto type =
        MemRefType::get({static_cast<int64_t>(values.size())}, b.getI64Type());
    auto data = DenseIntElementsAttr::get(
        RankedTensorType::get(type.getShape(), b.getI64Type()), values);
    std::string name;
    do
      name = "__locus_conv2d_params_" + std::to_string(next++);
    while (module.lookupSymbol(name));
    auto global = b.create<memref::GlobalOp>(
        module.getLoc(), name, b.getStringAttr("private"), type, data,
        /*constant=*/true, /*alignment=*/IntegerAttr());
    made.emplace(std::move(key), global);
    return global;
  }

private:
  std::map<std::vector<int64_t>, memref::GlobalOp> made;
  int64_t next = 0;
};

/// Builds what a call of the runtime reads: buffers' addresses as integers
/// (as with locus_sgemm), tensors' buffers read only.
struct Addresses {
  OpBuilder &b;
  Location loc;
  Value pointer(Value buffer) {
    Value index = b.create<memref::ExtractAlignedPointerAsIndexOp>(loc, buffer);
    return b.create<arith::IndexCastOp>(loc, b.getI64Type(), index);
  }
  Value read(Value tensor) {
    auto type = cast<RankedTensorType>(tensor.getType());
    return pointer(b.create<bufferization::ToMemrefOp>(
        loc, MemRefType::get(type.getShape(), type.getElementType()), tensor,
        /*read_only=*/true));
  }
  Value global(memref::GlobalOp g) {
    return pointer(
        b.create<memref::GetGlobalOp>(loc, g.getType(), g.getName()));
  }
};

/// The window, strides and padding of a pooling op.
template <typename PoolOp>
std::array<ArrayRef<int64_t>, 3> poolingOf(Operation *op) {
  auto pool = cast<PoolOp>(op);
  return {pool.getKernelSize(), pool.getStride(), pool.getPadding()};
}

/// A convolution or gradient as locus_cuda_conv2d and locus_conv2d_grad
/// take it.
struct ConvCall {
  int64_t kind;
  std::array<int64_t, LOCUS_CONV_PARAM_COUNT> params;
  Value a, b, bias; // bias: null when none
};

template <typename Op>
ConvCall describe(Op op, int64_t kind, Value a, Value b, ArrayRef<int64_t> in,
                  ArrayRef<int64_t> w, ArrayRef<int64_t> out, int64_t flags) {
  return {kind,
          convParams(in, w, out, op.getStride(), op.getPadding(),
                     op.getDilation(), op.getGroups(), flags),
          a, b, Value()};
}

/// The call's view of `op`, a conv2d or one of its gradients.
ConvCall describe(Operation *op, int64_t tf32) {
  auto shape = [](Value v) {
    return cast<RankedTensorType>(v.getType()).getShape();
  };
  if (auto c = dyn_cast<Conv2dOp>(op)) {
    ConvCall d = describe(c, LOCUS_CONV_FORWARD, c.getInput(), c.getWeight(),
                          shape(c.getInput()), shape(c.getWeight()),
                          shape(c.getResult()),
                          tf32 | (c.getBias() ? LOCUS_CONV_BIAS : 0));
    d.bias = c.getBias();
    return d;
  }
  if (auto g = dyn_cast<Conv2dInputGradOp>(op))
    return describe(g, LOCUS_CONV_INPUT_GRAD, g.getGrad(), g.getWeight(),
                    shape(g.getResult()), shape(g.getWeight()),
                    shape(g.getGrad()), tf32);
  auto g = cast<Conv2dWeightGradOp>(op);
  return describe(g, LOCUS_CONV_WEIGHT_GRAD, g.getInput(), g.getGrad(),
                  shape(g.getInput()), shape(g.getResult()), shape(g.getGrad()),
                  tf32);
}

class ConvToRuntimePass
    : public locus::impl::LocusConvToRuntimeBase<ConvToRuntimePass> {
public:
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<Conv2dOp> convs;
    SmallVector<Operation *> grads;
    // Kernel functions only: a graph's ops are the plan's.
    for (auto func : module.getOps<func::FuncOp>())
      func.walk([&](Operation *op) {
        if (auto conv = dyn_cast<Conv2dOp>(op))
          convs.push_back(conv);
        else if (isa<Conv2dInputGradOp, Conv2dWeightGradOp>(op))
          grads.push_back(op);
      });
    for (Conv2dOp conv : convs)
      rewrite(module, match(conv));
    for (Operation *grad : grads)
      rewriteGrad(module, grad);
  }

private:
  func::FuncOp declaration(ModuleOp module) {
    Builder b(module.getContext());
    return declareRuntimeFunction(
        module, LOCUS_ABI_CONV2D,
        b.getFunctionType(SmallVector<Type>(6, b.getI64Type()), {}));
  }

  void rewrite(ModuleOp module, Fused f) {
    Conv2dOp conv = f.conv;
    RankedTensorType in = conv.getInput().getType(),
                     w = conv.getWeight().getType(), out = conv.getType();
    ArrayRef<int64_t> stride = conv.getStride(), padding = conv.getPadding(),
                      dilation = conv.getDilation();
    int64_t flags =
        (conv.getBias() ? LOCUS_CONV_BIAS : 0) |
        (f.residual ? LOCUS_CONV_RESIDUAL : 0) |
        (f.relu ? LOCUS_CONV_RELU : 0) |
        (isa_and_nonnull<MaxPool2dOp>(f.pool) ? LOCUS_CONV_MAX_POOL : 0) |
        (isa_and_nonnull<AvgPool2dOp>(f.pool) ? LOCUS_CONV_AVG_POOL : 0);
    std::array<int64_t, LOCUS_CONV_PARAM_COUNT> params =
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

    Operation *last = f.last();
    OpBuilder b(last);
    Location loc = conv.getLoc();
    Addresses at{b, loc};
    Value paramAddress = at.global(globals.get(module, params));
    Value x = at.read(conv.getInput());
    Value weight = at.read(conv.getWeight());
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
    last->getResult(0).replaceAllUsesWith(result);
    if (f.pool)
      f.pool->erase();
    if (f.relu)
      f.relu->erase();
    if (f.add)
      f.add->erase();
    conv.erase();
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
  void rewriteGrad(ModuleOp module, Operation *op) {
    ConvCall d = describe(op, /*tf32=*/0);
    auto yType = cast<RankedTensorType>(op->getResult(0).getType());
    Location loc = op->getLoc();
    OpBuilder b(op);
    Addresses at{b, loc};
    Value params = at.global(globals.get(module, d.params));
    Value x = at.read(d.a), w = at.read(d.b);
    Value y = b.create<memref::AllocOp>(
        loc, MemRefType::get(yType.getShape(), yType.getElementType()),
        b.getI64IntegerAttr(64));
    Value kind = b.create<arith::ConstantIntOp>(loc, d.kind, 64);
    b.create<func::CallOp>(loc, gradDeclaration(module),
                           ValueRange{kind, params, x, w, at.pointer(y)});
    Value result = b.create<bufferization::ToTensorOp>(
        loc, yType, y, /*restrict=*/true, /*writable=*/true);
    op->getResult(0).replaceAllUsesWith(result);
    op->erase();
    ++numGradCalls;
  }

  ParamGlobals globals;
};

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
        rewrite(module, op, yes);
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

  /// `op` becomes scf.if (cuDNN) { the call } else { `op` as it was }.
  void rewrite(ModuleOp module, Operation *op, Value yes) {
    ConvCall d = describe(op, allowTf32 ? LOCUS_CONV_TF32 : 0);
    auto yType = cast<RankedTensorType>(op->getResult(0).getType());
    Location loc = op->getLoc();
    OpBuilder b(op);
    auto callCudnn = [&](OpBuilder &t, Location at) {
      Addresses addr{t, at};
      Value params = addr.global(globals.get(module, d.params));
      Value a = addr.read(d.a), w = addr.read(d.b);
      Value bias = d.bias ? addr.read(d.bias) : a; // unread without the flag
      Value y = t.create<memref::AllocOp>(
          at, MemRefType::get(yType.getShape(), yType.getElementType()));
      Value kind = t.create<arith::ConstantIntOp>(at, d.kind, 64);
      t.create<func::CallOp>(
          at, convDeclaration(module),
          ValueRange{kind, params, a, w, bias, addr.pointer(y)});
      Value result = t.create<bufferization::ToTensorOp>(
          at, yType, y, /*restrict=*/true, /*writable=*/true);
      t.create<scf::YieldOp>(at, result);
    };
    // The generated path's result is placed in a fresh tensor, so that
    // both branches yield buffers of the identity layout (CUDA kernels
    // need static layouts; a lowering that ends in a slice, as the input
    // gradient's does, would give the scf.if a dynamic one).
    auto generated = [&](OpBuilder &e, Location at) {
      Value result = e.clone(*op)->getResult(0);
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
  }

  ParamGlobals globals;
};

} // namespace
