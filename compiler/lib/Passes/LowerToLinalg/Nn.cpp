//===- Nn.cpp - matrix products, convolutions, pooling, losses ------------===//
//
// The lowerings of --locus-lower-to-linalg for the network ops: matrix
// products and linear layers, convolutions (im2col and grouped) and their
// gradients, pooling and its gradient, cross-entropy, one-hot and the
// gradient of a slice.
//
//===----------------------------------------------------------------------===//

#include "Lowering.h"

#include "locus/Passes/Passes.h"

#include "../Permutations.h"

#include <array>
#include <cmath>
#include <limits>

namespace locus::lowering {

namespace {

/// im2col of a padded NCHW input for a convolution with `w`'s kernel giving
/// `out`: cols[c, kh, kw, n, oh, ow] = x[n, c, oh*s + kh*d, ow*s + kw*d].
Value im2col(Lowering &l, Value x, RankedTensorType w, RankedTensorType out,
             ArrayRef<int64_t> stride, ArrayRef<int64_t> dilation) {
  OpBuilder &b = l.b;
  Type f32 = out.getElementType();
  int64_t n = out.getDimSize(0), oh = out.getDimSize(2), ow = out.getDimSize(3),
          c = w.getDimSize(1), kh = w.getDimSize(2), kw = w.getDimSize(3);
  MLIRContext *ctx = b.getContext();
  AffineExpr dc = b.getAffineDimExpr(0), dkh = b.getAffineDimExpr(1),
             dkw = b.getAffineDimExpr(2), dn = b.getAffineDimExpr(3),
             doh = b.getAffineDimExpr(4), dow = b.getAffineDimExpr(5);
  AffineMap gather =
      AffineMap::get(6, 0,
                     {dn, dc, doh * stride[0] + dkh * dilation[0],
                      dow * stride[1] + dkw * dilation[1]},
                     ctx);
  auto colsType = RankedTensorType::get({c, kh, kw, n, oh, ow}, f32);
  return l.generic(colsType, ValueRange{x}, {gather}, l.empty(colsType),
                   b.getMultiDimIdentityMap(6),
                   SmallVector<IteratorType>(6, IteratorType::parallel),
                   [](OpBuilder &, Location, ValueRange a) { return a[0]; });
}

/// groups == 1: im2col, then one matrix product (which the host pipeline
/// sends to BLAS), in the layout that keeps the innermost loops contiguous:
/// cols[c, kh, kw, n, oh, ow] = x[n, c, oh*s + kh*d, ow*s + kw*d] (the gather
/// runs along ow), read as [C*KH*KW, N*OH*OW]; the weight as [O, C*KH*KW]
/// times it gives [O, N*OH*OW], and moving whole rows of OH*OW values (adding
/// the bias) gives NCHW.
Value lowerConvIm2col(Lowering &l, Conv2dOp op, Value x) {
  OpBuilder &b = l.b;
  RankedTensorType out = op.getType();
  RankedTensorType w = op.getWeight().getType();
  Type f32 = out.getElementType();
  int64_t n = out.getDimSize(0), o = out.getDimSize(1), oh = out.getDimSize(2),
          ow = out.getDimSize(3), c = w.getDimSize(1), kh = w.getDimSize(2),
          kw = w.getDimSize(3);
  MLIRContext *ctx = b.getContext();
  Value cols = im2col(l, x, w, out, op.getStride(), op.getDilation());
  auto colsMatrix = RankedTensorType::get({c * kh * kw, n * oh * ow}, f32);
  auto weightType = RankedTensorType::get({o, c * kh * kw}, f32);
  auto productType = RankedTensorType::get({o, n * oh * ow}, f32);
  // Zeros (the BLAS call then needs no initial value at all); the bias is
  // added on the way back to NCHW, where an elementwise epilogue fuses.
  Value product = b.create<linalg::MatmulOp>(
                       l.loc, TypeRange{productType},
                       ValueRange{l.reshape(op.getWeight(), weightType),
                                  l.reshape(cols, colsMatrix)},
                       ValueRange{l.filled(productType, 0.0)})
                      .getResult(0);
  Value onhw = l.reshape(product, RankedTensorType::get({o, n, oh, ow}, f32));
  AffineExpr e0 = b.getAffineDimExpr(0), e1 = b.getAffineDimExpr(1),
             e2 = b.getAffineDimExpr(2), e3 = b.getAffineDimExpr(3);
  SmallVector<Value> inputs{onhw};
  SmallVector<AffineMap> maps{AffineMap::get(4, 0, {e1, e0, e2, e3}, ctx)};
  if (Value bias = op.getBias()) {
    inputs.push_back(bias);
    maps.push_back(AffineMap::get(4, 0, {e1}, ctx));
  }
  return l.generic(out, inputs, maps, l.empty(out), b.getMultiDimIdentityMap(4),
                   SmallVector<IteratorType>(4, IteratorType::parallel),
                   [](OpBuilder &nb, Location nl, ValueRange a) -> Value {
                     if (a.size() == 3)
                       return nb.create<arith::AddFOp>(nl, a[0], a[1]);
                     return a[0];
                   });
}

/// The indexing of a grouped convolution's loop nest, given which loop is
/// which: the padded input at [n, (o floordiv outPerGroup) * inPerGroup + c,
/// oh*s + kh*d, ow*s + kw*d], the weight at [o, c, kh, kw], the result (or
/// its gradient) at [n, o, oh, ow]. The forward pass and the weight
/// gradient run the same nest in different loop orders.
struct GroupedConvMaps {
  AffineMap input, weight, result;
};
GroupedConvMaps groupedConvMaps(MLIRContext *ctx, ArrayRef<unsigned> loopOf,
                                int64_t outPerGroup, int64_t inPerGroup,
                                ArrayRef<int64_t> stride,
                                ArrayRef<int64_t> dilation) {
  // loopOf: the loop of n, o, oh, ow, c, kh, kw.
  auto d = [&](unsigned which) { return getAffineDimExpr(loopOf[which], ctx); };
  AffineExpr n = d(0), o = d(1), oh = d(2), ow = d(3), c = d(4), kh = d(5),
             kw = d(6);
  return {AffineMap::get(7, 0,
                         {n, o.floorDiv(outPerGroup) * inPerGroup + c,
                          oh * stride[0] + kh * dilation[0],
                          ow * stride[1] + kw * dilation[1]},
                         ctx),
          AffineMap::get(7, 0, {o, c, kh, kw}, ctx),
          AffineMap::get(7, 0, {n, o, oh, ow}, ctx)};
}

} // namespace

Value lowerConv(Lowering &l, Conv2dOp op) {
  OpBuilder &b = l.b;
  RankedTensorType out = op.getType();
  Value x = l.padSpatial(op.getInput(), op.getPadding(), 0.0);
  RankedTensorType w = op.getWeight().getType();
  int64_t groups = op.getGroups();
  if (groups == 1)
    return lowerConvIm2col(l, op, x);
  // Grouped: one loop nest over (n, o, oh, ow, c, kh, kw).
  int64_t outPerGroup = w.getDimSize(0) / groups, inPerGroup = w.getDimSize(1);
  ArrayRef<int64_t> stride = op.getStride(), dilation = op.getDilation();
  // Loops (n, o, oh, ow, c, kh, kw).
  GroupedConvMaps maps =
      groupedConvMaps(b.getContext(), {0, 1, 2, 3, 4, 5, 6}, outPerGroup,
                      inPerGroup, stride, dilation);
  Value init =
      op.getBias()
          ? l.broadcast(l.reshape(op.getBias(),
                                  RankedTensorType::get({w.getDimSize(0), 1, 1},
                                                        out.getElementType())),
                        out)
          : l.filled(out, 0.0);
  SmallVector<IteratorType> iters(4, IteratorType::parallel);
  iters.append(3, IteratorType::reduction);
  return l.generic(out, ValueRange{x, op.getWeight()},
                   {maps.input, maps.weight}, init, maps.result, iters,
                   [](OpBuilder &nb, Location nl, ValueRange a) {
                     Value m = nb.create<arith::MulFOp>(nl, a[0], a[1]);
                     return nb.create<arith::AddFOp>(nl, a[2], m);
                   });
}

namespace {

/// The iterators of loops (n, c, kh, kw, oh, ow), the window loops outside:
/// how pooling and its gradient run.
SmallVector<IteratorType> windowOutsideIterators() {
  return {IteratorType::parallel,  IteratorType::parallel,
          IteratorType::reduction, IteratorType::reduction,
          IteratorType::parallel,  IteratorType::parallel};
}

/// Pooling as one generic whose loops run (n, c, kh, kw, oh, ow): the window
/// loops outside, so the innermost loop walks a row of the output (and a
/// strided row of the input) and vectorises; linalg's pooling ops put the
/// window innermost.
template <typename PoolOp> Value lowerPool(Lowering &l, PoolOp op, bool isMax) {
  OpBuilder &b = l.b;
  RankedTensorType out = op.getType();
  ArrayRef<int64_t> stride = op.getStride();
  double pad = isMax ? -std::numeric_limits<double>::infinity() : 0.0;
  Value x = l.padSpatial(op.getInput(), op.getPadding(), pad);
  MLIRContext *ctx = b.getContext();
  AffineExpr dn = b.getAffineDimExpr(0), dc = b.getAffineDimExpr(1),
             dkh = b.getAffineDimExpr(2), dkw = b.getAffineDimExpr(3),
             doh = b.getAffineDimExpr(4), dow = b.getAffineDimExpr(5);
  AffineMap in = AffineMap::get(
      6, 0, {dn, dc, doh * stride[0] + dkh, dow * stride[1] + dkw}, ctx);
  AffineMap outMap = AffineMap::get(6, 0, {dn, dc, doh, dow}, ctx);
  // The window's shape is only there to bound the kh and kw loops (as in
  // linalg's pooling ops); its values are never read.
  ArrayRef<int64_t> k = op.getKernelSize();
  Value window = b.create<tensor::EmptyOp>(l.loc, k, b.getF32Type());
  AffineMap windowMap = AffineMap::get(6, 0, {dkh, dkw}, ctx);
  Value result =
      l.generic(out, ValueRange{x, window}, {in, windowMap}, l.filled(out, pad),
                outMap, windowOutsideIterators(),
                [isMax](OpBuilder &nb, Location nl, ValueRange a) -> Value {
                  if (isMax)
                    return nb.create<arith::MaximumFOp>(nl, a[0], a[2]);
                  return nb.create<arith::AddFOp>(nl, a[0], a[2]);
                });
  if (isMax)
    return result;
  return l.scale(result, 1.0 / static_cast<double>(k[0] * k[1]));
}

/// The type a product of `out`'s operands accumulates in: f32 for 16-bit
/// operands (one rounding at the end, by `rounded`), else `out` itself.
RankedTensorType accumulatorOf(RankedTensorType out) {
  Type element = out.getElementType();
  if (element.getIntOrFloatBitWidth() >= 32)
    return out;
  return out.clone(Float32Type::get(out.getContext()));
}

/// `value` with its elements converted to `out`'s element type.
Value rounded(Lowering &l, Value value, RankedTensorType out) {
  Type from = l.typeOf(value).getElementType(), to = out.getElementType();
  if (from == to)
    return value;
  return l.elementwise(out.clone(l.typeOf(value).getShape()), value,
                       [&](OpBuilder &nb, Location nl, ValueRange a) {
                         return castElement(nb, nl, a[0], from, to);
                       });
}

/// The input of a transpose of the last two axes (of a matrix, or of a
/// batch of them) that nothing else reads, or null: a product can read it
/// transposed instead. The transpose is a locus.transpose (the conversion
/// has lowered it already, but replaces it only when done) or a
/// linalg.transpose.
Value transposedInput(Value v) {
  if (!v.hasOneUse())
    return {};
  if (auto t = v.getDefiningOp<TransposeOp>())
    return swapsLastTwo(t.getPermutation()) ? t.getInput() : Value();
  auto t = v.getDefiningOp<linalg::TransposeOp>();
  if (!t || !swapsLastTwo(t.getPermutation()))
    return {};
  return t.getInput();
}

} // namespace

namespace {

/// A product in `out` (its accumulator type; see lowerMatmul).
Value product(Lowering &l, MatmulOp op, RankedTensorType out) {
  OpBuilder &b = l.b;
  RankedTensorType lhs = op.getLhs().getType(), rhs = op.getRhs().getType();
  if (out.getRank() == 2) {
    // A transpose fused into the product's kernel (a backward pass's
    // g^T x and g W^T): BLAS reads the operand transposed, no copy.
    if (Value a = transposedInput(op.getLhs()))
      return b
          .create<linalg::MatmulTransposeAOp>(l.loc, TypeRange{out},
                                              ValueRange{a, op.getRhs()},
                                              ValueRange{l.filled(out, 0.0)})
          .getResult(0);
    if (Value bt = transposedInput(op.getRhs()))
      return b
          .create<linalg::MatmulTransposeBOp>(l.loc, TypeRange{out},
                                              ValueRange{op.getLhs(), bt},
                                              ValueRange{l.filled(out, 0.0)})
          .getResult(0);
    return b
        .create<linalg::MatmulOp>(l.loc, TypeRange{out},
                                  ValueRange{op.getLhs(), op.getRhs()},
                                  ValueRange{l.filled(out, 0.0)})
        .getResult(0);
  }
  // Batched: fold the leading dimensions into one batch.
  int64_t batch = 1;
  for (int64_t d : out.getShape().drop_back(2))
    batch *= d;
  auto three = [&](RankedTensorType t) {
    return RankedTensorType::get(
        {batch, t.getDimSize(t.getRank() - 2), t.getDimSize(t.getRank() - 1)},
        t.getElementType());
  };
  RankedTensorType out3 = three(out);
  auto operand3 = [&](Value v) {
    return l.reshape(v, three(cast<RankedTensorType>(v.getType())));
  };
  Value init = l.filled(out3, 0.0);
  Value result;
  // As in 2-D: a fused transpose of the last two axes (attention's q k^T
  // and its gradients) is read transposed.
  if (Value a = transposedInput(op.getLhs()))
    result =
        b.create<linalg::BatchMatmulTransposeAOp>(
             l.loc, TypeRange{out3},
             ValueRange{operand3(a), operand3(op.getRhs())}, ValueRange{init})
            .getResult(0);
  else if (Value bt = transposedInput(op.getRhs()))
    result =
        b.create<linalg::BatchMatmulTransposeBOp>(
             l.loc, TypeRange{out3},
             ValueRange{operand3(op.getLhs()), operand3(bt)}, ValueRange{init})
            .getResult(0);
  else
    result = b.create<linalg::BatchMatmulOp>(
                  l.loc, TypeRange{out3},
                  ValueRange{l.reshape(op.getLhs(), three(lhs)),
                             l.reshape(op.getRhs(), three(rhs))},
                  ValueRange{init})
                 .getResult(0);
  return l.reshape(result, out);
}

} // namespace

/// 16-bit operands are read as they are (linalg's named products convert
/// each element to the accumulator's type) and accumulate in f32.
Value lowerMatmul(Lowering &l, MatmulOp op) {
  RankedTensorType out = op.getType();
  return rounded(l, product(l, op, accumulatorOf(out)), out);
}

namespace {

/// Whether a linear layer's bias is better added after its product: when
/// the one reader of its result is an elementwise op, the addition fuses
/// into that reader's loop, where a bias written out for the product to
/// accumulate onto is a pass (on a GPU, a launch) of its own.
bool biasIntoReader(LinearOp op) {
  return op.getBias() && op->hasOneUse() &&
         locus::isElementwise(*op->user_begin());
}

/// `y` [..., out] plus `bias` [out] along its last axis.
Value addBias(Lowering &l, Value y, Value bias) {
  RankedTensorType type = l.typeOf(y);
  unsigned rank = type.getRank();
  AffineMap id = l.b.getMultiDimIdentityMap(rank);
  AffineMap last =
      AffineMap::get(rank, 0, l.b.getAffineDimExpr(rank - 1), l.b.getContext());
  SmallVector<IteratorType> iters(rank, IteratorType::parallel);
  return l.generic(
      type, ValueRange{y, bias}, {id, last}, l.empty(type), id, iters,
      [](OpBuilder &nb, Location nl, ValueRange a) {
        return nb.create<arith::AddFOp>(nl, a[0], a[1]).getResult();
      });
}

} // namespace

Value lowerLinear(Lowering &l, LinearOp op) {
  OpBuilder &b = l.b;
  RankedTensorType out = op.getType(), acc = accumulatorOf(out);
  RankedTensorType w = op.getWeight().getType();
  int64_t in = w.getDimSize(1), outFeatures = w.getDimSize(0);
  int64_t rows = out.getNumElements() / outFeatures;
  auto x2 = RankedTensorType::get({rows, in}, out.getElementType());
  auto y2 = RankedTensorType::get({rows, outFeatures}, acc.getElementType());
  // 16-bit operands accumulate in f32 from the bias (exact in f32), or add
  // it in f32 after the product, in the reader's loop. A 16-bit result adds
  // it where it is rounded: one pass after the product, not a pass writing
  // the bias out before it and one rounding after.
  bool later = biasIntoReader(op) ||
               (op.getBias() && out.getElementType() != acc.getElementType());
  Value bias = op.getBias() ? rounded(l, op.getBias(), acc) : Value();
  Value init = bias && !later ? l.broadcast(bias, y2) : l.filled(y2, 0.0);
  Value y = b.create<linalg::MatmulTransposeBOp>(
                 l.loc, TypeRange{y2},
                 ValueRange{l.reshape(op.getInput(), x2), op.getWeight()},
                 ValueRange{init})
                .getResult(0);
  Value shaped = l.reshape(y, acc);
  return rounded(l, later ? addBias(l, shaped, bias) : shaped, out);
}

Value lowerCrossEntropy(Lowering &l, CrossEntropyOp op) {
  OpBuilder &b = l.b;
  Value logp = l.softmax(op.getLogits(), 1, /*log=*/true);
  RankedTensorType labels = op.getLabels().getType();
  auto picked = RankedTensorType::get(labels.getShape(), b.getF32Type());
  AffineMap id = b.getMultiDimIdentityMap(1);
  Value nll = l.generic(
      picked, ValueRange{op.getLabels()}, {id}, l.empty(picked), id,
      {IteratorType::parallel}, [&](OpBuilder &nb, Location nl, ValueRange a) {
        // A label outside [0, classes) reads class 0 and gives NaN: the
        // kernel never reads outside the row, and the loss says it is wrong.
        Value label = a[0];
        Value zero = nb.create<arith::ConstantOp>(nl, nb.getI64IntegerAttr(0));
        Value inside =
            inRange(nb, nl, label, op.getLogits().getType().getDimSize(1));
        Value safe = nb.create<arith::SelectOp>(nl, inside, label, zero);
        Value row = nb.create<linalg::IndexOp>(nl, 0);
        Value cls = nb.create<arith::IndexCastOp>(nl, nb.getIndexType(), safe);
        Value v = nb.create<tensor::ExtractOp>(nl, logp, ValueRange{row, cls});
        Value nan = nb.create<arith::ConstantOp>(
            nl, nb.getF32FloatAttr(std::numeric_limits<float>::quiet_NaN()));
        return nb.create<arith::SelectOp>(nl, inside,
                                          nb.create<arith::NegFOp>(nl, v), nan);
      });
  return l.total(nll, op.getReduction());
}

/// dW[o, c, kh, kw] = sum over n, oh, ow of g[n, o, oh, ow] *
/// xpad[n, c', oh*s + kh*d, ow*s + kw*d]. One group: im2col and one product
/// g[O, N*OH*OW] * cols[C*KH*KW, N*OH*OW]^T (BLAS); grouped: one loop nest.
Value lowerConvWeightGrad(Lowering &l, Conv2dWeightGradOp op) {
  OpBuilder &b = l.b;
  RankedTensorType w = op.getType(), g = op.getGrad().getType();
  Type f32 = w.getElementType();
  Value x = l.padSpatial(op.getInput(), op.getPadding(), 0.0);
  ArrayRef<int64_t> stride = op.getStride(), dilation = op.getDilation();
  int64_t n = g.getDimSize(0), o = g.getDimSize(1), oh = g.getDimSize(2),
          ow = g.getDimSize(3), c = w.getDimSize(1), kh = w.getDimSize(2),
          kw = w.getDimSize(3), groups = op.getGroups();
  MLIRContext *ctx = b.getContext();
  if (groups == 1) {
    Value cols = im2col(l, x, w, g, stride, dilation);
    auto gT = RankedTensorType::get({o, n, oh, ow}, f32);
    Value onhw = b.create<linalg::TransposeOp>(l.loc, op.getGrad(), l.empty(gT),
                                               ArrayRef<int64_t>{1, 0, 2, 3})
                     .getResult()[0];
    auto product = RankedTensorType::get({o, c * kh * kw}, f32);
    Value dw =
        b.create<linalg::MatmulTransposeBOp>(
             l.loc, TypeRange{product},
             ValueRange{
                 l.reshape(onhw, RankedTensorType::get({o, n * oh * ow}, f32)),
                 l.reshape(cols, RankedTensorType::get(
                                     {c * kh * kw, n * oh * ow}, f32))},
             ValueRange{l.filled(product, 0.0)})
            .getResult(0);
    return l.reshape(dw, w);
  }
  // Loops (o, c, kh, kw, n, oh, ow): the weight's dimensions outside.
  GroupedConvMaps maps = groupedConvMaps(ctx, {4, 0, 5, 6, 1, 2, 3}, o / groups,
                                         c, stride, dilation);
  SmallVector<IteratorType> iters(4, IteratorType::parallel);
  iters.append(3, IteratorType::reduction);
  return l.generic(w, ValueRange{x, op.getGrad()}, {maps.input, maps.result},
                   l.filled(w, 0.0), maps.weight, iters,
                   [](OpBuilder &nb, Location nl, ValueRange a) {
                     Value m = nb.create<arith::MulFOp>(nl, a[0], a[1]);
                     return nb.create<arith::AddFOp>(nl, a[2], m);
                   });
}

namespace {

/// `value` [N, C, H, W] spread out: zeros of [N, C, rows, cols] with
/// value[n, c, i, j] at (offset[0] + i*stride[0], offset[1] + j*stride[1]).
Value spread(Lowering &l, Value value, int64_t rows, int64_t cols,
             ArrayRef<int64_t> offset, ArrayRef<int64_t> stride, double fill) {
  OpBuilder &b = l.b;
  RankedTensorType t = l.typeOf(value);
  auto type = RankedTensorType::get(
      {t.getDimSize(0), t.getDimSize(1), rows, cols}, t.getElementType());
  SmallVector<OpFoldResult> offsets{b.getIndexAttr(0), b.getIndexAttr(0),
                                    b.getIndexAttr(offset[0]),
                                    b.getIndexAttr(offset[1])};
  SmallVector<OpFoldResult> sizes,
      strides{b.getIndexAttr(1), b.getIndexAttr(1), b.getIndexAttr(stride[0]),
              b.getIndexAttr(stride[1])};
  for (int64_t d : t.getShape())
    sizes.push_back(b.getIndexAttr(d));
  return b.create<tensor::InsertSliceOp>(l.loc, value, l.filled(type, fill),
                                         offsets, sizes, strides);
}

/// The [N, C, H, W] window of a padded [N, C, H + 2p, W + 2p] tensor.
Value unpad(Lowering &l, Value padded, RankedTensorType type,
            ArrayRef<int64_t> padding) {
  if (padding[0] == 0 && padding[1] == 0 &&
      l.typeOf(padded).getShape() == type.getShape())
    return padded;
  OpBuilder &b = l.b;
  SmallVector<OpFoldResult> offsets{b.getIndexAttr(0), b.getIndexAttr(0),
                                    b.getIndexAttr(padding[0]),
                                    b.getIndexAttr(padding[1])};
  SmallVector<OpFoldResult> sizes, strides(4, b.getIndexAttr(1));
  for (int64_t d : type.getShape())
    sizes.push_back(b.getIndexAttr(d));
  return b.create<tensor::ExtractSliceOp>(l.loc, type, padded, offsets, sizes,
                                          strides);
}

} // namespace

/// dx of a convolution as a gather: g spread out by the stride with a margin
/// of (K - 1) * dilation, then dxpad[n, c, y, x] = sum over o, kh, kw of
/// gs[n, o', y + (KH-1-kh)*dh, x + (KW-1-kw)*dw] * w[o', c', kh, kw], where
/// o' runs over the outputs of c's group; the padding is cut off last.
Value lowerConvInputGrad(Lowering &l, Conv2dInputGradOp op) {
  OpBuilder &b = l.b;
  RankedTensorType dx = op.getType(), w = op.getWeight().getType();
  Type f32 = dx.getElementType();
  ArrayRef<int64_t> stride = op.getStride(), dilation = op.getDilation(),
                    padding = op.getPadding();
  int64_t c = dx.getDimSize(1), kh = w.getDimSize(2), kw = w.getDimSize(3),
          groups = op.getGroups(), outPerGroup = w.getDimSize(0) / groups,
          inPerGroup = w.getDimSize(1);
  int64_t hp = dx.getDimSize(2) + 2 * padding[0],
          wp = dx.getDimSize(3) + 2 * padding[1];
  int64_t mh = (kh - 1) * dilation[0], mw = (kw - 1) * dilation[1];
  Value gs = spread(l, op.getGrad(), hp + mh, wp + mw, {mh, mw}, stride, 0.0);
  MLIRContext *ctx = b.getContext();
  // Loops (n, c, y, x, o, kh, kw).
  AffineExpr en = b.getAffineDimExpr(0), ec = b.getAffineDimExpr(1),
             ey = b.getAffineDimExpr(2), ex = b.getAffineDimExpr(3),
             eo = b.getAffineDimExpr(4), ekh = b.getAffineDimExpr(5),
             ekw = b.getAffineDimExpr(6);
  AffineExpr og = ec.floorDiv(inPerGroup) * outPerGroup + eo;
  AffineMap gMap = AffineMap::get(7, 0,
                                  {en, og, ey + (kh - 1 - ekh) * dilation[0],
                                   ex + (kw - 1 - ekw) * dilation[1]},
                                  ctx);
  AffineMap wMap = AffineMap::get(7, 0, {og, ec % inPerGroup, ekh, ekw}, ctx);
  AffineMap outMap = AffineMap::get(7, 0, {en, ec, ey, ex}, ctx);
  auto paddedType = RankedTensorType::get({dx.getDimSize(0), c, hp, wp}, f32);
  SmallVector<IteratorType> iters(4, IteratorType::parallel);
  iters.append(3, IteratorType::reduction);
  // The o loop only bounds the group's outputs: a shape-only operand.
  Value outputs =
      b.create<tensor::EmptyOp>(l.loc, ArrayRef<int64_t>{outPerGroup}, f32);
  AffineMap outputsMap = AffineMap::get(7, 0, {eo}, ctx);
  Value padded =
      l.generic(paddedType, ValueRange{gs, op.getWeight(), outputs},
                {gMap, wMap, outputsMap}, l.filled(paddedType, 0.0), outMap,
                iters, [](OpBuilder &nb, Location nl, ValueRange a) {
                  Value m = nb.create<arith::MulFOp>(nl, a[0], a[1]);
                  return nb.create<arith::AddFOp>(nl, a[3], m);
                });
  return unpad(l, padded, dx, padding);
}

namespace {

/// kh * KW + kw as f32, kh and kw being the loops `khDim` and `kwDim` of the
/// enclosing generic.
Value windowIndex(OpBuilder &nb, Location nl, int64_t kwSize, unsigned khDim,
                  unsigned kwDim) {
  Value r = nb.create<linalg::IndexOp>(nl, khDim);
  Value c = nb.create<linalg::IndexOp>(nl, kwDim);
  Value width = nb.create<arith::ConstantIndexOp>(nl, kwSize);
  Value flat =
      nb.create<arith::AddIOp>(nl, nb.create<arith::MulIOp>(nl, r, width), c);
  Value i = nb.create<arith::IndexCastOp>(nl, nb.getI64Type(), flat);
  return nb.create<arith::SIToFPOp>(nl, nb.getF32Type(), i);
}

/// For each window of the padded `x` (one element of `g`, the gradient's
/// type), the index kh * KW + kw of the first position holding its maximum:
/// one pass over each window, row-major, in which a later position replaces
/// the maximum only when strictly greater. `kernel` bounds the window loops.
Value firstMaxima(Lowering &l, Value x, RankedTensorType g, Value kernel,
                  ArrayRef<int64_t> k, ArrayRef<int64_t> stride) {
  OpBuilder &b = l.b;
  double inf = std::numeric_limits<double>::infinity();
  MLIRContext *ctx = b.getContext();
  AffineExpr dn = b.getAffineDimExpr(0), dc = b.getAffineDimExpr(1),
             dkh = b.getAffineDimExpr(2), dkw = b.getAffineDimExpr(3),
             doh = b.getAffineDimExpr(4), dow = b.getAffineDimExpr(5);
  AffineMap window = AffineMap::get(
      6, 0, {dn, dc, doh * stride[0] + dkh, dow * stride[1] + dkw}, ctx);
  AffineMap outMap = AffineMap::get(6, 0, {dn, dc, doh, dow}, ctx);
  AffineMap kernelMap = AffineMap::get(6, 0, {dkh, dkw}, ctx);
  int64_t kwSize = k[1];
  auto argmax = b.create<linalg::GenericOp>(
      l.loc, TypeRange{g, g}, ValueRange{x, kernel},
      ValueRange{l.filled(g, -inf), l.filled(g, -1.0)},
      ArrayRef<AffineMap>{window, kernelMap, outMap, outMap},
      windowOutsideIterators(), [&](OpBuilder &nb, Location nl, ValueRange a) {
        Value here = windowIndex(nb, nl, kwSize, 2, 3);
        Value better =
            nb.create<arith::CmpFOp>(nl, arith::CmpFPredicate::OGT, a[0], a[2]);
        nb.create<linalg::YieldOp>(
            nl, ValueRange{nb.create<arith::SelectOp>(nl, better, a[0], a[2]),
                           nb.create<arith::SelectOp>(nl, better, here, a[3])});
      });
  return argmax.getResult(1);
}

/// dxpad when the windows tile the (padded) input exactly (2x2 stride 2 on
/// even sizes): each position is in one window, (y / KH, x / KW), at
/// (y % KH, x % KW), and takes the window's gradient where that is `first`.
Value tiledMaxPoolGrad(Lowering &l, Value grad, Value first,
                       RankedTensorType paddedType, ArrayRef<int64_t> k) {
  OpBuilder &b = l.b;
  AffineExpr y = b.getAffineDimExpr(2), x = b.getAffineDimExpr(3);
  AffineMap window =
      AffineMap::get(4, 0,
                     {b.getAffineDimExpr(0), b.getAffineDimExpr(1),
                      y.floorDiv(k[0]), x.floorDiv(k[1])},
                     b.getContext());
  return l.generic(
      paddedType, ValueRange{grad, first}, {window, window},
      l.empty(paddedType), b.getMultiDimIdentityMap(4),
      SmallVector<IteratorType>(4, IteratorType::parallel),
      [&](OpBuilder &nb, Location nl, ValueRange a) -> Value {
        Value r = nb.create<arith::RemUIOp>(
            nl, nb.create<linalg::IndexOp>(nl, 2),
            nb.create<arith::ConstantIndexOp>(nl, k[0]));
        Value c = nb.create<arith::RemUIOp>(
            nl, nb.create<linalg::IndexOp>(nl, 3),
            nb.create<arith::ConstantIndexOp>(nl, k[1]));
        Value flat = nb.create<arith::AddIOp>(
            nl,
            nb.create<arith::MulIOp>(
                nl, r, nb.create<arith::ConstantIndexOp>(nl, k[1])),
            c);
        Value here = nb.create<arith::SIToFPOp>(
            nl, nb.getF32Type(),
            nb.create<arith::IndexCastOp>(nl, nb.getI64Type(), flat));
        Value hit =
            nb.create<arith::CmpFOp>(nl, arith::CmpFPredicate::OEQ, a[1], here);
        Value zero = nb.create<arith::ConstantOp>(nl, nb.getF32FloatAttr(0));
        return nb.create<arith::SelectOp>(nl, hit, a[0], zero);
      });
}

/// dxpad for any windows: gradient and index spread out by the stride with
/// a margin of K - 1, then dxpad[y, x] = sum over kh, kw of
/// gs[y + KH-1-kh, x + KW-1-kw] where the spread index there is kh * KW + kw.
Value spreadMaxPoolGrad(Lowering &l, Value grad, Value first, Value kernel,
                        RankedTensorType paddedType, ArrayRef<int64_t> k,
                        ArrayRef<int64_t> stride) {
  OpBuilder &b = l.b;
  int64_t hp = paddedType.getDimSize(2), wp = paddedType.getDimSize(3);
  int64_t mh = k[0] - 1, mw = k[1] - 1, kwSize = k[1];
  Value gs = spread(l, grad, hp + mh, wp + mw, {mh, mw}, stride, 0.0);
  Value is = spread(l, first, hp + mh, wp + mw, {mh, mw}, stride, -1.0);
  MLIRContext *ctx = b.getContext();
  AffineExpr dn = b.getAffineDimExpr(0), dc = b.getAffineDimExpr(1),
             dkh = b.getAffineDimExpr(2), dkw = b.getAffineDimExpr(3),
             doh = b.getAffineDimExpr(4), dow = b.getAffineDimExpr(5);
  AffineMap gather =
      AffineMap::get(6, 0, {dn, dc, doh + (mh - dkh), dow + (mw - dkw)}, ctx);
  AffineMap kernelMap = AffineMap::get(6, 0, {dkh, dkw}, ctx);
  AffineMap outMap = AffineMap::get(6, 0, {dn, dc, doh, dow}, ctx);
  return l.generic(
      paddedType, ValueRange{gs, is, kernel}, {gather, gather, kernelMap},
      l.filled(paddedType, 0.0), outMap, windowOutsideIterators(),
      [&](OpBuilder &nb, Location nl, ValueRange a) -> Value {
        Value here = windowIndex(nb, nl, kwSize, 2, 3);
        Value hit =
            nb.create<arith::CmpFOp>(nl, arith::CmpFPredicate::OEQ, a[1], here);
        Value sum = nb.create<arith::AddFOp>(nl, a[3], a[0]);
        return nb.create<arith::SelectOp>(nl, hit, sum, a[3]);
      });
}

} // namespace

/// PyTorch routes each window's gradient to the first position holding its
/// maximum. First, in one pass, the window's maximum and the index
/// (kh * KW + kw) of its first occurrence; then gradient and index spread
/// out by the stride (or read directly when the windows tile the input), and
/// dxpad[y, x] = sum over kh, kw of gs[y + KH-1-kh, x + KW-1-kw] where the
/// spread index there equals kh * KW + kw.
Value lowerMaxPoolGrad(Lowering &l, MaxPool2dGradOp op) {
  RankedTensorType in = op.getType(), g = op.getGrad().getType();
  Type f32 = in.getElementType();
  ArrayRef<int64_t> k = op.getKernelSize(), stride = op.getStride(),
                    padding = op.getPadding();
  double inf = std::numeric_limits<double>::infinity();
  Value x = l.padSpatial(op.getInput(), padding, -inf);
  Value kernel = l.b.create<tensor::EmptyOp>(l.loc, k, f32);
  Value first = firstMaxima(l, x, g, kernel, k, stride);
  int64_t hp = in.getDimSize(2) + 2 * padding[0],
          wp = in.getDimSize(3) + 2 * padding[1];
  auto paddedType =
      RankedTensorType::get({in.getDimSize(0), in.getDimSize(1), hp, wp}, f32);
  bool tiled = stride == k && hp == g.getDimSize(2) * k[0] &&
               wp == g.getDimSize(3) * k[1];
  Value padded = tiled ? tiledMaxPoolGrad(l, op.getGrad(), first, paddedType, k)
                       : spreadMaxPoolGrad(l, op.getGrad(), first, kernel,
                                           paddedType, k, stride);
  return unpad(l, padded, in, padding);
}

Value lowerOneHot(Lowering &l, OneHotOp op) {
  OpBuilder &b = l.b;
  RankedTensorType out = op.getType();
  unsigned rank = out.getRank();
  SmallVector<AffineExpr> labelDims;
  for (unsigned d = 0; d + 1 < rank; ++d)
    labelDims.push_back(b.getAffineDimExpr(d));
  AffineMap labelMap = AffineMap::get(rank, 0, labelDims, b.getContext());
  return l.generic(
      out, ValueRange{op.getLabels()}, {labelMap}, l.empty(out),
      b.getMultiDimIdentityMap(rank),
      SmallVector<IteratorType>(rank, IteratorType::parallel),
      [&](OpBuilder &nb, Location nl, ValueRange a) -> Value {
        Value cls = nb.create<arith::IndexCastOp>(
            nl, nb.getI64Type(), nb.create<linalg::IndexOp>(nl, rank - 1));
        Value hit =
            nb.create<arith::CmpIOp>(nl, arith::CmpIPredicate::eq, a[0], cls);
        return nb.create<arith::UIToFPOp>(nl, nb.getF32Type(), hit);
      });
}

Value lowerSliceGrad(Lowering &l, SliceGradOp op) {
  OpBuilder &b = l.b;
  Value zeros = l.filled(op.getType(), 0.0);
  SmallVector<OpFoldResult> offsets, sizes, strides;
  for (auto [d, off, size, stride] :
       llvm::enumerate(op.getOffsets(), op.getGrad().getType().getShape(),
                       op.getStrides())) {
    offsets.push_back(l.offsetIn(zeros, d, off));
    sizes.push_back(b.getIndexAttr(size));
    strides.push_back(b.getIndexAttr(stride));
  }
  return b.create<tensor::InsertSliceOp>(l.loc, op.getGrad(), zeros, offsets,
                                         sizes, strides);
}

/// Where the elements of a gradient go back to: the result's `axis` takes
/// the index; an element's index sits at its own position in `indices`
/// (`elementwise`, gather_elements) or at its coordinates
/// `[axis, axis + consumed)` (gather), which the result's one replaces.
struct ScatterBack {
  Value grad, indices;
  RankedTensorType result;
  int64_t axis, consumed, extent;
  bool elementwise;
};

/// With one index nothing adds up: each element of the result is its
/// gradient where the index points, else zero (an index out of range
/// points nowhere). A parallel op: a loop of one iteration would fold
/// away, and with it the mark a GPU needs.
Value selectAtOneIndex(Lowering &l, const ScatterBack &s) {
  OpBuilder &b = l.b;
  unsigned outRank = s.result.getRank();
  int64_t idxRank = cast<RankedTensorType>(s.indices.getType()).getRank();
  SmallVector<AffineExpr> gradExprs;
  for (int64_t d = 0; d < s.axis; ++d)
    gradExprs.push_back(b.getAffineDimExpr(d));
  for (int64_t k = 0; k < s.consumed; ++k)
    gradExprs.push_back(b.getAffineConstantExpr(0));
  for (unsigned d = s.axis + 1; d < outRank; ++d)
    gradExprs.push_back(b.getAffineDimExpr(d));
  SmallVector<AffineExpr> zeros(idxRank, b.getAffineConstantExpr(0));
  MLIRContext *ctx = b.getContext();
  int64_t axis = s.axis;
  return l.generic(
      s.result, ValueRange{s.indices, s.grad},
      {AffineMap::get(outRank, 0, zeros, ctx),
       AffineMap::get(outRank, 0, gradExprs, ctx)},
      l.empty(s.result), b.getMultiDimIdentityMap(outRank),
      SmallVector<IteratorType>(outRank, IteratorType::parallel),
      [&](OpBuilder &nb, Location nl, ValueRange a) -> Value {
        Value here = nb.create<arith::IndexCastOp>(
            nl, nb.getI64Type(), nb.create<linalg::IndexOp>(nl, axis));
        Value hit =
            nb.create<arith::CmpIOp>(nl, arith::CmpIPredicate::eq, a[0], here);
        Value zero = nb.create<arith::ConstantOp>(nl, nb.getF32FloatAttr(0));
        return nb.create<arith::SelectOp>(nl, hit, a[1], zero);
      });
}

/// One loop over the gradient's elements in order, its index split
/// row-major; each element whose index is in range adds into the result
/// at it. A loop and not a linalg op: where an element goes depends on
/// the indices.
Value scatterAdd(Lowering &l, const ScatterBack &s) {
  if (cast<RankedTensorType>(s.indices.getType()).getNumElements() == 1)
    return selectAtOneIndex(l, s);
  OpBuilder &b = l.b;
  Location loc = l.loc;
  auto gradType = cast<RankedTensorType>(s.grad.getType());
  auto index = [&](int64_t v) {
    return b.create<arith::ConstantIndexOp>(loc, v).getResult();
  };
  auto loop =
      b.create<scf::ForOp>(loc, index(0), index(gradType.getNumElements()),
                           index(1), ValueRange{l.filled(s.result, 0.0)});
  loop->setAttr(kScatterAddAttrName, b.getUnitAttr());
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(loop.getBody());
  Value acc = loop.getRegionIterArgs()[0];
  // The element's position in the gradient, last dimension fastest.
  SmallVector<Value> at(gradType.getRank());
  Value rest = loop.getInductionVar();
  for (int64_t d = gradType.getRank() - 1; d > 0; --d) {
    Value size = index(gradType.getDimSize(d));
    at[d] = b.create<arith::RemUIOp>(loc, rest, size);
    rest = b.create<arith::DivUIOp>(loc, rest, size);
  }
  if (!at.empty())
    at[0] = rest;
  ArrayRef<Value> positions(at);
  Value picked = b.create<tensor::ExtractOp>(
      loc, s.indices,
      s.elementwise ? positions : positions.slice(s.axis, s.consumed));
  Value inside = inRange(b, loc, picked, s.extent);
  auto add = b.create<scf::IfOp>(
      loc, inside,
      [&](OpBuilder &tb, Location tl) {
        SmallVector<Value> to(positions.take_front(s.axis));
        to.push_back(
            tb.create<arith::IndexCastOp>(tl, tb.getIndexType(), picked));
        llvm::append_range(to, positions.drop_front(s.axis + s.consumed));
        Value sum = tb.create<arith::AddFOp>(
            tl, tb.create<tensor::ExtractOp>(tl, acc, to),
            tb.create<tensor::ExtractOp>(tl, s.grad, at));
        tb.create<scf::YieldOp>(
            tl, tb.create<tensor::InsertOp>(tl, sum, acc, to).getResult());
      },
      [&](OpBuilder &eb, Location el) { eb.create<scf::YieldOp>(el, acc); });
  b.create<scf::YieldOp>(loc, add.getResult(0));
  return loop.getResult(0);
}

Value lowerGatherGrad(Lowering &l, GatherGradOp op) {
  return scatterAdd(l, {op.getGrad(), op.getIndices(), op.getType(),
                        static_cast<int64_t>(op.getAxis()),
                        op.getIndices().getType().getRank(),
                        static_cast<int64_t>(op.getExtent()),
                        /*elementwise=*/false});
}

Value lowerGatherElementsGrad(Lowering &l, GatherElementsGradOp op) {
  return scatterAdd(l, {op.getGrad(), op.getIndices(), op.getType(),
                        static_cast<int64_t>(op.getAxis()), /*consumed=*/1,
                        static_cast<int64_t>(op.getExtent()),
                        /*elementwise=*/true});
}

Value lowerMaxPool2d(Lowering &l, MaxPool2dOp op) {
  return lowerPool(l, op, /*isMax=*/true);
}

Value lowerAvgPool2d(Lowering &l, AvgPool2dOp op) {
  return lowerPool(l, op, /*isMax=*/false);
}

} // namespace locus::lowering
