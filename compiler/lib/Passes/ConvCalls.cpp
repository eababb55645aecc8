//===- ConvCalls.cpp - convolutions as runtime calls ----------------------===//
//
// What the host and cuDNN convolution passes share (ConvCalls.h).
//
//===----------------------------------------------------------------------===//

#include "ConvCalls.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/IRMapping.h"

using namespace mlir;
using namespace locus;
using namespace locus::conv;

Params conv::convParams(ArrayRef<int64_t> in, ArrayRef<int64_t> w,
                        ArrayRef<int64_t> out, ArrayRef<int64_t> stride,
                        ArrayRef<int64_t> padding, ArrayRef<int64_t> dilation,
                        int64_t groups, int64_t flags) {
  Params params{};
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

memref::GlobalOp ParamGlobals::get(ModuleOp module, ArrayRef<int64_t> values) {
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

Value Addresses::pointer(Value buffer) {
  Value index = b.create<memref::ExtractAlignedPointerAsIndexOp>(loc, buffer);
  return b.create<arith::IndexCastOp>(loc, b.getI64Type(), index);
}

Value Addresses::read(Value tensor) {
  auto type = cast<RankedTensorType>(tensor.getType());
  return pointer(b.create<bufferization::ToMemrefOp>(
      loc, MemRefType::get(type.getShape(), type.getElementType()), tensor,
      /*read_only=*/true));
}

Value Addresses::global(memref::GlobalOp g) {
  return pointer(b.create<memref::GetGlobalOp>(loc, g.getType(), g.getName()));
}

namespace {

template <typename Op>
ConvCall describeAs(Op op, int64_t kind, Value a, Value b, ArrayRef<int64_t> in,
                    ArrayRef<int64_t> w, ArrayRef<int64_t> out, int64_t flags) {
  return {kind,
          convParams(in, w, out, op.getStride(), op.getPadding(),
                     op.getDilation(), op.getGroups(), flags),
          a, b, Value()};
}

} // namespace

ConvCall conv::describe(Operation *op, int64_t tf32) {
  auto shape = [](Value v) {
    return cast<RankedTensorType>(v.getType()).getShape();
  };
  if (auto c = dyn_cast<Conv2dOp>(op)) {
    ConvCall d = describeAs(c, LOCUS_CONV_FORWARD, c.getInput(), c.getWeight(),
                            shape(c.getInput()), shape(c.getWeight()),
                            shape(c.getResult()),
                            tf32 | (c.getBias() ? LOCUS_CONV_BIAS : 0));
    d.bias = c.getBias();
    return d;
  }
  if (auto g = dyn_cast<Conv2dInputGradOp>(op))
    return describeAs(g, LOCUS_CONV_INPUT_GRAD, g.getGrad(), g.getWeight(),
                      shape(g.getResult()), shape(g.getWeight()),
                      shape(g.getGrad()), tf32);
  auto g = cast<Conv2dWeightGradOp>(op);
  return describeAs(g, LOCUS_CONV_WEIGHT_GRAD, g.getInput(), g.getGrad(),
                    shape(g.getInput()), shape(g.getResult()),
                    shape(g.getGrad()), tf32);
}

bool conv::isSixteenBit(Operation *op) {
  Type element =
      cast<RankedTensorType>(op->getResult(0).getType()).getElementType();
  return element.isBF16() || element.isF16();
}

Widened conv::widen(OpBuilder &b, Operation *op) {
  Location loc = op->getLoc();
  auto type = cast<RankedTensorType>(op->getResult(0).getType());
  IRMapping up;
  for (Value v : op->getOperands())
    up.map(v, b.create<CastOp>(loc, v, TypeAttr::get(b.getF32Type())));
  Operation *wide = b.clone(*op, up);
  wide->getResult(0).setType(type.clone(b.getF32Type()));
  Value down = b.create<CastOp>(loc, wide->getResult(0),
                                TypeAttr::get(type.getElementType()));
  return {wide, down};
}

namespace {

/// The single user of `value`, in the same block as its definition, or
/// null.
Operation *onlyUser(Value value) {
  if (!value.hasOneUse())
    return nullptr;
  Operation *user = *value.getUsers().begin();
  return user->getBlock() == value.getParentBlock() ? user : nullptr;
}

/// The bf16 or f16 value an f32 `v` was cast up from, or null.
Value castUpSource(Value v) {
  auto up = v.getDefiningOp<CastOp>();
  if (!up || !up.getType().getElementType().isF32())
    return {};
  Type from = up.getInput().getType().getElementType();
  return from.isBF16() || from.isF16() ? up.getInput() : Value();
}

} // namespace

Fused locus::conv::matchFused(Conv2dOp conv) {
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
  f.sixteen = sixteenBitReads(conv.getInput(), conv.getWeight(),
                              f.last()->getResult(0));
  return f;
}

SixteenBit locus::conv::sixteenBitReads(Value a, Value b, Value result) {
  SixteenBit reads;
  Value a16 = castUpSource(a), b16 = castUpSource(b);
  auto elementOf = [](Value v) {
    return cast<RankedTensorType>(v.getType()).getElementType();
  };
  if (!a16 || !b16 || elementOf(a16) != elementOf(b16))
    return reads;
  reads.a = a16;
  reads.b = b16;
  auto down = dyn_cast_or_null<CastOp>(onlyUser(result));
  if (down && elementOf(down.getResult()) == elementOf(a16))
    reads.round = down;
  return reads;
}

int64_t locus::conv::sixteenBitFlags(const SixteenBit &reads) {
  if (!reads.a)
    return 0;
  bool f16 = cast<RankedTensorType>(reads.a.getType()).getElementType().isF16();
  return (f16 ? LOCUS_CONV_F16 : LOCUS_CONV_BF16) |
         (reads.round ? LOCUS_CONV_Y_16BIT : 0);
}

LogicalResult RunSizes::of(func::FuncOp func, RunSizes &r) {
  if (!func->hasAttr(kSymbolsAttrName))
    return success();
  FailureOr<SmallVector<DimSymbol>> symbols = readSymbols(func);
  if (failed(symbols))
    return failure();
  // NOLINTNEXTLINE(bugprone-unchecked-optional-access): checked above.
  r.dims = DynamicDims(std::move(*symbols));
  r.dynamic = true;
  for (BlockArgument arg : func.getArguments()) {
    unsigned i = arg.getArgNumber();
    if (func.getArgAttr(i, kSizesArgAttrName))
      r.sizes = arg;
    if (auto map = func.getArgAttrOfType<AffineMapAttr>(i, kDimsAttrName))
      if (std::optional<DimExprs> given = dimsFromMap(map.getValue()))
        r.dims.set(arg, std::move(*given));
  }
  for (Operation &op : func.getBody().front())
    if (failed(r.dims.infer(&op)))
      return failure();
  return success();
}

Value RunSizes::batchOf(OpBuilder &b, Location loc, Value value) const {
  DimExprs d = dims.dimsOf(value);
  Value n = b.create<arith::ConstantIntOp>(loc, d[0].factor, 64);
  for (auto [k, power] : llvm::enumerate(d[0].powers)) {
    Value at = b.create<arith::ConstantIndexOp>(loc, k);
    Value size = b.create<tensor::ExtractOp>(loc, sizes, ValueRange{at});
    for (int64_t i = 0; i < power; ++i)
      n = b.create<arith::MulIOp>(loc, n, size);
  }
  return n;
}

void RunSizes::mark(Value result, Value of) const {
  if (!isDynamic(of))
    return;
  result.getDefiningOp()->setAttr(
      kDimsAttrName,
      AffineMapAttr::get(dimsToMap(dims.dimsOf(of), dims.symbols().size(),
                                   result.getContext())));
}

Value conv::paramsAddress(Addresses &at, memref::GlobalOp global,
                          const RunSizes &run, Value batchOf) {
  if (!run.isDynamic(batchOf))
    return at.global(global);
  Value n = run.batchOf(at.b, at.loc, batchOf);
  Value constant = at.b.create<memref::GetGlobalOp>(at.loc, global.getType(),
                                                    global.getName());
  Value copy = at.b.create<memref::AllocaOp>(at.loc, global.getType());
  UnitAttr host = at.b.getUnitAttr();
  at.b.create<memref::CopyOp>(at.loc, constant, copy)
      ->setAttr(kHostOnlyAttrName, host);
  Value slot = at.b.create<arith::ConstantIndexOp>(at.loc, LOCUS_CONV_N);
  at.b.create<memref::StoreOp>(at.loc, n, copy, ValueRange{slot})
      ->setAttr(kHostOnlyAttrName, host);
  return at.pointer(copy);
}
