//===- Training.cpp - optimizers and random numbers -----------------------===//
//
// The lowerings of --locus-lower-to-linalg for the training ops: the SGD and
// Adam updates (one generic with several results each), BatchNorm in
// training and its gradients (per-channel sums and one elementwise pass),
// and locus.random (Philox4x32-10).
//
//===----------------------------------------------------------------------===//

#include "Lowering.h"

#include <array>
#include <cmath>
#include <limits>

namespace locus::lowering {

namespace {

/// f32 arithmetic inside a generic's body, for the optimizers' formulas.
struct BodyMath {
  OpBuilder &b;
  Location loc;
  Value cst(double v) const {
    return b.create<arith::ConstantOp>(loc, b.getF32FloatAttr(v));
  }
  Value mul(Value x, Value y) const {
    return b.create<arith::MulFOp>(loc, x, y);
  }
  Value add(Value x, Value y) const {
    return b.create<arith::AddFOp>(loc, x, y);
  }
  Value sub(Value x, Value y) const {
    return b.create<arith::SubFOp>(loc, x, y);
  }
  Value div(Value x, Value y) const {
    return b.create<arith::DivFOp>(loc, x, y);
  }
  Value sqrt(Value x) const { return b.create<math::SqrtOp>(loc, x); }
};

/// One elementwise generic with several results (the optimizers): `body`
/// gets the inputs' elements and returns the results' in order.
SmallVector<Value> elementwiseMulti(
    Lowering &l, RankedTensorType type, ValueRange inputs,
    ArrayRef<bool> scalar, unsigned numResults,
    function_ref<SmallVector<Value>(OpBuilder &, Location, ValueRange)> body) {
  OpBuilder &b = l.b;
  unsigned rank = type.getRank();
  AffineMap id = b.getMultiDimIdentityMap(rank);
  SmallVector<AffineMap> maps;
  for (bool s : scalar)
    maps.push_back(s ? AffineMap::get(rank, 0, {}, b.getContext()) : id);
  SmallVector<Value> inits;
  for (unsigned i = 0; i < numResults; ++i) {
    inits.push_back(l.empty(type));
    maps.push_back(id);
  }
  auto op = b.create<linalg::GenericOp>(
      l.loc, SmallVector<Type>(numResults, type), inputs, inits, maps,
      SmallVector<IteratorType>(rank, IteratorType::parallel),
      [&](OpBuilder &nb, Location nl, ValueRange args) {
        nb.create<linalg::YieldOp>(
            nl, body(nb, nl, args.take_front(inputs.size())));
      });
  return SmallVector<Value>(op.getResults());
}

} // namespace

SmallVector<Value> lowerSgd(Lowering &l, SgdOp op) {
  bool hasBuffer = static_cast<bool>(op.getBuffer());
  SmallVector<Value> inputs{op.getParam(), op.getGrad(), op.getLr()};
  if (hasBuffer)
    inputs.push_back(op.getBuffer());
  double momentum = op.getMomentum().convertToDouble(),
         decay = op.getWeightDecay().convertToDouble();
  bool nesterov = op.getNesterov();
  SmallVector<bool> scalar{false, false, true};
  scalar.resize(inputs.size(), false);
  return elementwiseMulti(
      l, op.getParam().getType(), inputs, scalar, hasBuffer ? 2 : 1,
      [&](OpBuilder &nb, Location nl, ValueRange a) {
        BodyMath f{nb, nl};
        Value d = a[1], lr = a[2];
        if (decay != 0)
          d = f.add(d, f.mul(a[0], f.cst(decay)));
        SmallVector<Value> results;
        Value buf;
        if (hasBuffer) {
          buf = f.add(f.mul(a[3], f.cst(momentum)), d);
          d = nesterov ? f.add(d, f.mul(buf, f.cst(momentum))) : buf;
        }
        results.push_back(f.sub(a[0], f.mul(d, lr)));
        if (hasBuffer)
          results.push_back(buf);
        return results;
      });
}

namespace {

/// The loops of a BatchNorm over its [N, C, ...] input: maps and iterators
/// for per-channel sums and for elementwise passes.
struct ChannelLoops {
  RankedTensorType input, perChannel;
  AffineMap all, channel;
  SmallVector<IteratorType> reduceAllButC, parallel;
  SmallVector<int64_t> reduced; // every axis but the channel's

  ChannelLoops(Lowering &l, Value x) : input(l.typeOf(x)) {
    unsigned rank = input.getRank();
    perChannel =
        RankedTensorType::get({input.getDimSize(1)}, input.getElementType());
    all = l.b.getMultiDimIdentityMap(rank);
    channel =
        AffineMap::get(rank, 0, l.b.getAffineDimExpr(1), l.b.getContext());
    for (unsigned d = 0; d < rank; ++d)
      reduceAllButC.push_back(d == 1 ? IteratorType::parallel
                                     : IteratorType::reduction);
    parallel.assign(rank, IteratorType::parallel);
    for (int64_t d = 0; d < input.getRank(); ++d)
      if (d != 1)
        reduced.push_back(d);
  }

  /// `perChannelValue` divided by the values per channel (the run's count
  /// in a kernel with dynamic sizes).
  Value perValue(Lowering &l, Value perChannelValue, Value x) const {
    return l.divideByCount(perChannelValue, x, reduced);
  }

  /// sum over every axis but 1 of `body(elements...)`, for inputs read
  /// through `maps`.
  Value sum(Lowering &l, ValueRange inputs, ArrayRef<AffineMap> maps,
            function_ref<Value(BodyMath &, ValueRange)> body) const {
    return l.generic(perChannel, inputs, maps, l.filled(perChannel, 0.0),
                     channel, reduceAllButC,
                     [&](OpBuilder &nb, Location nl, ValueRange a) {
                       BodyMath f{nb, nl};
                       return f.add(body(f, a.drop_back()), a.back());
                     });
  }

  /// An elementwise pass over the input's shape.
  Value map(Lowering &l, ValueRange inputs, ArrayRef<AffineMap> maps,
            function_ref<Value(BodyMath &, ValueRange)> body) const {
    return l.generic(input, inputs, maps, l.empty(input), all, parallel,
                     [&](OpBuilder &nb, Location nl, ValueRange a) {
                       BodyMath f{nb, nl};
                       return body(f, a.drop_back());
                     });
  }

  /// A per-channel elementwise op.
  Value perChannelMap(Lowering &l, ValueRange inputs,
                      function_ref<Value(BodyMath &, ValueRange)> body) const {
    return l.elementwise(perChannel, inputs,
                         [&](OpBuilder &nb, Location nl, ValueRange a) {
                           BodyMath f{nb, nl};
                           return body(f, a.drop_back());
                         });
  }
};

/// 1 / sqrt(var + eps), per channel, as PyTorch's invstd.
Value inverseStd(Lowering &l, const ChannelLoops &c, Value var, double eps) {
  return c.perChannelMap(l, var, [&](BodyMath &f, ValueRange a) {
    return f.div(f.cst(1.0), f.sqrt(f.add(a[0], f.cst(eps))));
  });
}

} // namespace

/// Two passes for the statistics (the mean, then the centred squares, as
/// PyTorch's CPU kernel; no cancellation), one for the result.
SmallVector<Value> lowerBatchNormTrain(Lowering &l, BatchNormTrainOp op) {
  ChannelLoops c(l, op.getInput());
  Value x = op.getInput();
  double eps = op.getEps().convertToDouble();
  Value sum =
      c.sum(l, x, {c.all}, [](BodyMath &, ValueRange a) { return a[0]; });
  Value mean = c.perValue(l, sum, x);
  Value squares =
      c.sum(l, {x, mean}, {c.all, c.channel}, [](BodyMath &f, ValueRange a) {
        Value d = f.sub(a[0], a[1]);
        return f.mul(d, d);
      });
  Value var = c.perValue(l, squares, x);
  Value scale = c.perChannelMap(
      l, {inverseStd(l, c, var, eps), op.getWeight()},
      [](BodyMath &f, ValueRange a) { return f.mul(a[0], a[1]); });
  Value y = c.map(l, {x, mean, scale, op.getBias()},
                  {c.all, c.channel, c.channel, c.channel},
                  [](BodyMath &f, ValueRange a) {
                    return f.add(f.mul(f.sub(a[0], a[1]), a[2]), a[3]);
                  });
  return {y, mean, var};
}

/// Two per-channel sums (of the gradient, and of it times the normalized
/// input, which each reads again rather than keeping), then one pass for
/// the input's gradient.
SmallVector<Value> lowerBatchNormTrainGrad(Lowering &l,
                                           BatchNormTrainGradOp op) {
  ChannelLoops c(l, op.getInput());
  Value g = op.getGrad(), x = op.getInput();
  Value invstd = inverseStd(l, c, op.getVar(), op.getEps().convertToDouble());
  Value biasGrad =
      c.sum(l, g, {c.all}, [](BodyMath &, ValueRange a) { return a[0]; });
  Value weightGrad = c.sum(l, {g, x, op.getMean(), invstd},
                           {c.all, c.all, c.channel, c.channel},
                           [](BodyMath &f, ValueRange a) {
                             return f.mul(a[0], f.mul(f.sub(a[1], a[2]), a[3]));
                           });
  // dx = w * invstd * (g - db / M - xhat * dw / M)
  Value scale = c.perChannelMap(
      l, {invstd, op.getWeight()},
      [](BodyMath &f, ValueRange a) { return f.mul(a[0], a[1]); });
  Value meanGrad = c.perValue(l, biasGrad, x);
  Value meanDot = c.perValue(l, weightGrad, x);
  Value inputGrad = c.map(
      l, {g, x, op.getMean(), invstd, scale, meanGrad, meanDot},
      {c.all, c.all, c.channel, c.channel, c.channel, c.channel, c.channel},
      [](BodyMath &f, ValueRange a) {
        Value xhat = f.mul(f.sub(a[1], a[2]), a[3]);
        Value centred = f.sub(f.sub(a[0], a[5]), f.mul(xhat, a[6]));
        return f.mul(a[4], centred);
      });
  return {inputGrad, weightGrad, biasGrad};
}

/// torch.optim.Adam's (or, `decoupled`, AdamW's) single-tensor update
/// (PyTorch 1.13), in its order of operations. The bias corrections lr / (1 -
/// beta1^t) and sqrt(1 - beta2^t), and AdamW's factor 1 - lr * weight_decay,
/// are scalars: one scalar generic computes them from the step count and the
/// learning rate, once, not per element (PyTorch computes them in double and
/// passes them as f32 scalars; in f32 here they differ by ~1e-7 relative).
SmallVector<Value> lowerAdam(Lowering &l, AdamOp op) {
  OpBuilder &b = l.b;
  double b1 = op.getBetas()[0], b2 = op.getBetas()[1],
         eps = op.getEps().convertToDouble(),
         decay = op.getWeightDecay().convertToDouble();
  bool decoupled = op.getDecoupled();
  auto scalar = RankedTensorType::get({}, b.getF32Type());
  AffineMap none = AffineMap::get(0, 0, {}, b.getContext());
  auto corrections = b.create<linalg::GenericOp>(
      l.loc, TypeRange{scalar, scalar, scalar},
      ValueRange{op.getStep(), op.getLr()},
      ValueRange{l.empty(scalar), l.empty(scalar), l.empty(scalar)},
      ArrayRef<AffineMap>{none, none, none, none, none},
      ArrayRef<IteratorType>{}, [&](OpBuilder &nb, Location nl, ValueRange a) {
        BodyMath f{nb, nl};
        Value t = a[0], lr = a[1];
        Value bc1 = f.sub(f.cst(1), nb.create<math::PowFOp>(nl, f.cst(b1), t));
        Value bc2 = f.sub(f.cst(1), nb.create<math::PowFOp>(nl, f.cst(b2), t));
        // 1 - lr * decay (f32: GPU kernels take no f64 constants).
        Value shrink = f.sub(f.cst(1), f.mul(lr, f.cst(decay)));
        nb.create<linalg::YieldOp>(
            nl, ValueRange{f.div(lr, bc1), f.sqrt(bc2), shrink});
      });
  return elementwiseMulti(
      l, op.getParam().getType(),
      ValueRange{op.getParam(), op.getGrad(), op.getM(), op.getV(),
                 corrections.getResult(0), corrections.getResult(1),
                 corrections.getResult(2)},
      {false, false, false, false, true, true, true}, 3,
      [&](OpBuilder &nb, Location nl, ValueRange a) {
        BodyMath f{nb, nl};
        Value p = a[0], g = a[1], stepSize = a[4], bc2Sqrt = a[5];
        if (decay != 0 && decoupled) // AdamW: param.mul_(1 - lr * decay)
          p = f.mul(p, a[6]);
        else if (decay != 0)
          g = f.add(g, f.mul(p, f.cst(decay)));
        // exp_avg.mul_(beta1).add_(grad, alpha=1 - beta1), and so on.
        Value m = f.add(f.mul(a[2], f.cst(b1)), f.mul(g, f.cst(1 - b1)));
        Value v =
            f.add(f.mul(a[3], f.cst(b2)), f.mul(f.mul(g, g), f.cst(1 - b2)));
        Value denom = f.add(f.div(f.sqrt(v), bc2Sqrt), f.cst(eps));
        // param.addcdiv_(exp_avg, denom, value=-step_size)
        Value newP = f.sub(p, f.mul(stepSize, f.div(m, denom)));
        return SmallVector<Value>{newP, m, v};
      });
}

namespace {

//===----------------------------------------------------------------------===//
// Random numbers: Philox4x32-10
//===----------------------------------------------------------------------===//

/// Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2,
/// 3", SC'11; the generator of cuRAND and of PyTorch on CUDA) in integer
/// arith ops inside a generic's body: 32-bit products are 64-bit multiplies
/// and shifts, so the host and NVVM compute the same bits. The key schedule
/// is folded: the seed is an attribute, so each round's key is a constant.
class Philox {
public:
  Philox(OpBuilder &b, Location loc) : b(b), loc(loc) {}

  Value i32(uint32_t v) {
    return b.create<arith::ConstantOp>(
        loc, b.getI32IntegerAttr(static_cast<int32_t>(v)));
  }
  Value i64(uint64_t v) {
    return b.create<arith::ConstantOp>(
        loc, b.getI64IntegerAttr(static_cast<int64_t>(v)));
  }
  /// The low and high 32 bits of a 64-bit value.
  std::pair<Value, Value> split(Value v) {
    Type t = b.getI32Type();
    Value lo = b.create<arith::TruncIOp>(loc, t, v);
    Value hi = b.create<arith::TruncIOp>(
        loc, t, b.create<arith::ShRUIOp>(loc, v, i64(32)));
    return {lo, hi};
  }
  Value bitXor(Value x, Value y) { return b.create<arith::XOrIOp>(loc, x, y); }

  /// The four outputs for a counter and a key.
  std::array<Value, 4> run(std::array<Value, 4> c, uint64_t key) {
    auto k0 = static_cast<uint32_t>(key), k1 = static_cast<uint32_t>(key >> 32);
    for (int round = 0; round < 10; ++round) {
      auto [lo0, hi0] = mulhilo(0xD2511F53u, c[0]);
      auto [lo1, hi1] = mulhilo(0xCD9E8D57u, c[2]);
      c = {bitXor(bitXor(hi1, c[1]), i32(k0)), lo1,
           bitXor(bitXor(hi0, c[3]), i32(k1)), lo0};
      k0 += 0x9E3779B9u;
      k1 += 0xBB67AE85u;
    }
    return c;
  }

  /// (x >> 8) * 2^-24: the top 24 bits as an f32 in [0, 1), exactly.
  Value unit(Value x) {
    Value top = b.create<arith::ShRUIOp>(loc, x, i32(8));
    Value f = b.create<arith::UIToFPOp>(loc, b.getF32Type(), top);
    return b.create<arith::MulFOp>(
        loc, f, b.create<arith::ConstantOp>(loc, b.getF32FloatAttr(0x1p-24)));
  }

private:
  /// The low and high halves of m * x (x a 32-bit value).
  std::pair<Value, Value> mulhilo(uint32_t m, Value x) {
    Value wide = b.create<arith::ExtUIOp>(loc, b.getI64Type(), x);
    return split(b.create<arith::MulIOp>(loc, wide, i64(m)));
  }

  OpBuilder &b;
  Location loc;
};

} // namespace

/// One generic over the result: each element's row-major index and the
/// step make the counter; see locus.random.
Value lowerRandom(Lowering &l, RandomOp op) {
  OpBuilder &b = l.b;
  RankedTensorType type = op.getType();
  unsigned rank = type.getRank();
  auto seed = static_cast<uint64_t>(op.getSeed());
  bool normal = op.getDistribution() == Distribution::normal;
  AffineMap scalar = AffineMap::get(rank, 0, {}, b.getContext());
  Value out = l.empty(type);
  // The row-major index at the run's shape: in a kernel with dynamic sizes
  // the extents are read from the result (tensor.dim, which
  // --locus-dynamic-kernels makes the run's), so each run draws what a
  // static compile of its shape draws.
  SmallVector<Value> extents;
  if (l.inDynamicKernel())
    for (unsigned d = 0; d < rank; ++d)
      extents.push_back(b.create<arith::IndexCastUIOp>(
          l.loc, b.getI64Type(), b.create<tensor::DimOp>(l.loc, out, d)));
  return l.generic(
      type, ValueRange{op.getStep()}, {scalar}, out,
      b.getMultiDimIdentityMap(rank),
      SmallVector<IteratorType>(rank, IteratorType::parallel),
      [&](OpBuilder &nb, Location nl, ValueRange a) -> Value {
        Philox p(nb, nl);
        Value flat = p.i64(0);
        for (unsigned d = 0; d < rank; ++d) {
          Value i = nb.create<arith::IndexCastUIOp>(
              nl, nb.getI64Type(), nb.create<linalg::IndexOp>(nl, d));
          Value extent =
              extents.empty() ? p.i64(type.getDimSize(d)) : extents[d];
          flat = nb.create<arith::AddIOp>(
              nl, nb.create<arith::MulIOp>(nl, flat, extent), i);
        }
        Value step = nb.create<arith::FPToSIOp>(nl, nb.getI64Type(), a[0]);
        auto [i0, i1] = p.split(flat);
        auto [s0, s1] = p.split(step);
        std::array<Value, 4> x = p.run({i0, i1, s0, s1}, seed);
        if (!normal)
          return p.unit(x[0]);
        // Box-Muller: sqrt(-2 ln(1 - u0)) cos(2 pi u1).
        BodyMath f{nb, nl};
        Value radius = f.sqrt(
            f.mul(f.cst(-2.0),
                  nb.create<math::LogOp>(nl, f.sub(f.cst(1.0), p.unit(x[0])))));
        Value angle = f.mul(f.cst(2 * M_PI), p.unit(x[1]));
        return f.mul(radius, nb.create<math::CosOp>(nl, angle));
      });
}

} // namespace locus::lowering
