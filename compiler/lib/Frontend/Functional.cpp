//===- Functional.cpp - ops made of other ops -----------------------------===//
//
// Normalisation, attention, shape helpers and activations that PyTorch
// offers as functions, written with the public recording API only (as a
// user could): their gradients are those of the ops they record. Each is one
// transaction: an Error leaves the graph as it was.
//
//===----------------------------------------------------------------------===//

#include "UserText.h"

#include "locus/Frontend/Nn.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>

using namespace locus;
using locus::detail::CallName;
using locus::detail::errorAt;
using locus::detail::numberText;
using locus::detail::shapeText;

namespace {

/// The largest k topk records (k rounds of about ten ops each).
constexpr int64_t kMaxTopK = 64;

/// An Error for an empty handle, before anything reads the tensor.
void requireTensor(const Tensor &x, const Here &loc) { (void)x.graph(loc); }

/// Records `body` as one call: everything or, on an Error, nothing.
template <typename Fn>
auto transaction(const Tensor &anchor, const Here &loc, Fn &&body) {
  detail::Recording recording(anchor, loc);
  auto result = body();
  recording.commit();
  return result;
}

/// The graph a tensor belongs to.
Graph graphOf(const Tensor &x, const Here &loc) { return x.graph(loc); }

/// x * s and x + s, located at the user's line (the operators would take
/// this file's); s takes x's float type, as a Python number does.
Tensor scaled(const Tensor &x, double s, const Here &loc) {
  return mul(x, x.graph(loc).full({}, s, x.dtype(), loc), loc);
}
Tensor shifted(const Tensor &x, double s, const Here &loc) {
  return add(x, x.graph(loc).full({}, s, x.dtype(), loc), loc);
}

int64_t axisOf(const Tensor &x, int64_t axis, int64_t rank, const Here &loc,
               const char *what) {
  if (axis < -rank || axis >= rank)
    throw errorAt(loc, CallName::label(what) + ": axis " +
                           std::to_string(axis) + " is out of range for " +
                           shapeText(x.shape()));
  return axis < 0 ? axis + rank : axis;
}

Tensor scalarLike(const Tensor &x, double value, const Here &loc) {
  return full_like(x, value, loc);
}

} // namespace

//===----------------------------------------------------------------------===//
// Activations
//===----------------------------------------------------------------------===//

Tensor locus::leaky_relu(const Tensor &x, double negativeSlope, Here loc) {
  return transaction(x, loc, [&] {
    Tensor zero = scalarLike(x, 0.0, loc);
    return add(
        maximum(x, zero, loc),
        mul(minimum(x, zero, loc), scalarLike(x, negativeSlope, loc), loc),
        loc);
  });
}

Tensor locus::clamp(const Tensor &x, std::optional<double> lo,
                    std::optional<double> hi, Here loc) {
  if (!lo && !hi)
    throw errorAt(loc, "clamp needs at least one of min and max");
  if (lo && hi && *lo > *hi)
    throw errorAt(loc, "clamp: min " + numberText(*lo) + " is above max " +
                           numberText(*hi));
  return transaction(x, loc, [&] {
    // Masks, not maximum/minimum: the gradient is 1 strictly inside and at
    // the bounds, as PyTorch's clamp_backward.
    Tensor y = x;
    if (lo)
      y = where(lt(x, scalarLike(x, *lo, loc), loc), scalarLike(x, *lo, loc), y,
                loc);
    if (hi)
      y = where(gt(x, scalarLike(x, *hi, loc), loc), scalarLike(x, *hi, loc), y,
                loc);
    return y;
  });
}

Tensor locus::hardtanh(const Tensor &x, double minVal, double maxVal,
                       Here loc) {
  if (minVal > maxVal)
    throw errorAt(loc, "hardtanh: min_val " + numberText(minVal) +
                           " is above max_val " + numberText(maxVal));
  return transaction(x, loc, [&] {
    // At a bound the output is the bound: no gradient reaches x there.
    Tensor lo = scalarLike(x, minVal, loc), hi = scalarLike(x, maxVal, loc);
    return where(le(x, lo, loc), lo, where(ge(x, hi, loc), hi, x, loc), loc);
  });
}

Tensor locus::sign(const Tensor &x, Here loc) {
  return transaction(x, loc, [&] {
    // x * 0 keeps a NaN (and a zero's sign) where neither test holds.
    Tensor zero = scalarLike(x, 0.0, loc);
    return where(gt(x, zero, loc), scalarLike(x, 1.0, loc),
                 where(lt(x, zero, loc), scalarLike(x, -1.0, loc),
                       mul(x, zero, loc), loc),
                 loc);
  });
}

Tensor locus::remainder(const Tensor &a, const Tensor &b, Here loc) {
  return transaction(a, loc, [&] {
    // fmod, moved by b where it is not 0 and its sign is not b's.
    Tensor r = fmod(a, b, loc), zero = scalarLike(r, 0.0, loc);
    Tensor differ = ne(lt(r, zero, loc), lt(b, zero, loc), loc);
    return where(ne(r, zero, loc), where(differ, add(r, b, loc), r, loc), r,
                 loc);
  });
}

Tensor locus::relu6(const Tensor &x, Here loc) {
  return hardtanh(x, 0.0, 6.0, loc);
}

Tensor locus::hardsigmoid(const Tensor &x, Here loc) {
  return transaction(x, loc, [&] {
    return scaled(hardtanh(shifted(x, 3.0, loc), 0.0, 6.0, loc), 1.0 / 6.0,
                  loc);
  });
}

Tensor locus::hardswish(const Tensor &x, Here loc) {
  return transaction(x, loc, [&] {
    Tensor gate = hardtanh(shifted(x, 3.0, loc), 0.0, 6.0, loc);
    return scaled(mul(x, gate, loc), 1.0 / 6.0, loc);
  });
}

Tensor locus::softplus(const Tensor &x, double beta, double threshold,
                       Here loc) {
  if (beta == 0.0 || !std::isfinite(beta))
    throw errorAt(loc, "softplus: beta " + numberText(beta) +
                           " must be a finite number other than 0");
  return transaction(x, loc, [&] {
    Tensor bx = scaled(x, beta, loc);
    Tensor limit = scalarLike(x, threshold, loc);
    // The soft branch sees at most the threshold, so that exp never
    // overflows where the linear branch is taken (an infinite exp would
    // send NaN back through where's other side).
    Tensor soft =
        scaled(log(shifted(exp(minimum(bx, limit, loc), loc), 1.0, loc), loc),
               1.0 / beta, loc);
    return where(gt(bx, limit, loc), x, soft, loc);
  });
}

Tensor locus::mish(const Tensor &x, Here loc) {
  return transaction(x, loc, [&] {
    return mul(x, tanh(softplus(x, 1.0, 20.0, loc), loc), loc);
  });
}

Tensor locus::prelu(const Tensor &x, const Tensor &weight, Here loc) {
  requireTensor(x, loc);
  requireTensor(weight, loc);
  int64_t channels = x.rank() >= 2 ? x.dim(1) : 1;
  if (weight.rank() != 1 || (weight.dim(0) != 1 && weight.dim(0) != channels))
    throw errorAt(loc, "prelu: weight " + shapeText(weight.shape()) +
                           " must hold 1 slope or one per channel (" +
                           std::to_string(channels) + " for input " +
                           shapeText(x.shape()) + ")");
  return transaction(x, loc, [&] {
    Tensor slope = weight;
    if (weight.dim(0) > 1) { // [C] -> [C, 1, ...] against [N, C, ...]
      Shape perChannel(static_cast<size_t>(x.rank() - 1), 1);
      perChannel[0] = channels;
      slope = reshape(weight, perChannel, loc);
    }
    // PyTorch's derivative: 1 where x > 0, the slope elsewhere.
    Tensor zero = scalarLike(x, 0.0, loc);
    return where(gt(x, zero, loc), x, mul(x, slope, loc), loc);
  });
}

Tensor locus::elu(const Tensor &x, double alpha, Here loc) {
  return transaction(x, loc, [&] {
    Tensor zero = scalarLike(x, 0.0, loc);
    // exp of the negative part only: no overflow where x is taken.
    Tensor negative =
        scaled(shifted(exp(minimum(x, zero, loc), loc), -1.0, loc), alpha, loc);
    return where(gt(x, zero, loc), x, negative, loc);
  });
}

//===----------------------------------------------------------------------===//
// Masks
//===----------------------------------------------------------------------===//

Tensor locus::masked_fill(const Tensor &x, const Tensor &mask, double value,
                          Here loc) {
  CallName call("masked_fill");
  requireTensor(mask, loc);
  if (mask.dtype() != DType::i1)
    throw errorAt(loc, "masked_fill expects i1 tensors, but the mask is " +
                           std::string(dtypeName(mask.dtype())) + " " +
                           shapeText(mask.shape()) +
                           "; cast it to i1 first (locus::cast in C++, "
                           "locus.cast in Python)");
  return transaction(x, loc, [&] {
    Tensor fill = graphOf(x, loc).full({}, value, x.dtype(), loc);
    return where(mask, fill, x, loc);
  });
}

namespace {
Tensor triangle(const Tensor &x, int64_t diagonal, bool upper,
                const Here &loc) {
  const char *name = upper ? "triu" : "tril";
  if (x.rank() < 2)
    throw errorAt(loc, std::string(name) +
                           " needs at least two dimensions, got " +
                           shapeText(x.shape()));
  return transaction(x, loc, [&] {
    int64_t rows = x.dim(-2), cols = x.dim(-1);
    Graph g = graphOf(x, loc);
    std::vector<int64_t> keep(rows * cols);
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < cols; ++c)
        keep[r * cols + c] = upper ? (c - r >= diagonal) : (c - r <= diagonal);
    Tensor mask = cast(g.constantI64({rows, cols}, keep, loc), DType::i1, loc);
    return where(mask, x, g.full({}, 0.0, x.dtype(), loc), loc);
  });
}
} // namespace

Tensor locus::triu(const Tensor &x, int64_t diagonal, Here loc) {
  return triangle(x, diagonal, true, loc);
}

Tensor locus::tril(const Tensor &x, int64_t diagonal, Here loc) {
  return triangle(x, diagonal, false, loc);
}

//===----------------------------------------------------------------------===//
// Shapes
//===----------------------------------------------------------------------===//

Tensor locus::squeeze(const Tensor &x, int64_t axis, Here loc) {
  requireTensor(x, loc);
  int64_t a = axisOf(x, axis, x.rank(), loc, "squeeze");
  if (x.dim(a) != 1)
    throw errorAt(loc, "squeeze: dimension " + std::to_string(axis) + " of " +
                           shapeText(x.shape()) + " has size " +
                           std::to_string(x.dim(a)) + ", not 1");
  Shape shape = x.shape();
  shape.erase(shape.begin() + a);
  return reshape(x, shape, loc);
}

Tensor locus::unsqueeze(const Tensor &x, int64_t axis, Here loc) {
  requireTensor(x, loc);
  int64_t a = axisOf(x, axis, x.rank() + 1, loc, "unsqueeze");
  Shape shape = x.shape();
  shape.insert(shape.begin() + a, 1);
  return reshape(x, shape, loc);
}

Tensor locus::expand(const Tensor &x, const Shape &shape, Here loc) {
  CallName call("expand");
  requireTensor(x, loc);
  Shape in = x.shape(), target = shape;
  if (target.size() < in.size())
    throw errorAt(loc, "expand: " + shapeText(shape) +
                           " has fewer "
                           "dimensions than " +
                           shapeText(in));
  size_t lead = target.size() - in.size();
  for (size_t d = 0; d < target.size(); ++d)
    if (target[d] == -1) {
      if (d < lead)
        throw errorAt(loc, "expand: -1 is not allowed for a new leading "
                           "dimension in " +
                               shapeText(shape));
      target[d] = in[d - lead];
    }
  return broadcast_to(x, target, loc);
}

std::vector<Tensor> locus::split(const Tensor &x, int64_t size, int64_t axis,
                                 Here loc) {
  requireTensor(x, loc);
  int64_t a = axisOf(x, axis, x.rank(), loc, "split");
  if (size < 1)
    throw errorAt(loc,
                  "split: size " + std::to_string(size) + " must be positive");
  return transaction(x, loc, [&] {
    std::vector<Tensor> parts;
    int64_t dim = x.dim(a);
    for (int64_t start = 0; start < dim || (dim == 0 && parts.empty());
         start += size) {
      parts.push_back(slice(x, a, start, std::min(start + size, dim), 1, loc));
      if (dim == 0)
        break;
    }
    return parts;
  });
}

std::vector<Tensor> locus::chunk(const Tensor &x, int64_t chunks, int64_t axis,
                                 Here loc) {
  requireTensor(x, loc);
  int64_t a = axisOf(x, axis, x.rank(), loc, "chunk");
  if (chunks < 1)
    throw errorAt(loc, "chunk: chunks " + std::to_string(chunks) +
                           " must be positive");
  int64_t dim = x.dim(a);
  int64_t size = std::max<int64_t>(1, (dim + chunks - 1) / chunks);
  return split(x, size, a, loc);
}

std::vector<Tensor> locus::unbind(const Tensor &x, int64_t axis, Here loc) {
  requireTensor(x, loc);
  int64_t a = axisOf(x, axis, x.rank(), loc, "unbind");
  return transaction(x, loc, [&] {
    std::vector<Tensor> parts;
    parts.reserve(x.dim(a));
    for (int64_t i = 0; i < x.dim(a); ++i)
      parts.push_back(squeeze(slice(x, a, i, i + 1, 1, loc), a, loc));
    return parts;
  });
}

Tensor locus::stack(const std::vector<Tensor> &xs, int64_t axis, Here loc) {
  if (xs.empty())
    throw errorAt(loc, "stack needs at least one tensor");
  Shape shape = xs.front().shape();
  for (const Tensor &x : xs)
    if (x.shape() != shape)
      throw errorAt(loc, "stack: tensors of shapes " + shapeText(shape) +
                             " and " + shapeText(x.shape()) + " differ");
  int64_t a = axisOf(xs.front(), axis, xs.front().rank() + 1, loc, "stack");
  return transaction(xs.front(), loc, [&] {
    std::vector<Tensor> parts;
    parts.reserve(xs.size());
    for (const Tensor &x : xs)
      parts.push_back(unsqueeze(x, a, loc));
    return concat(parts, a, loc);
  });
}

Tensor locus::pad(const Tensor &x, const std::vector<int64_t> &pads,
                  double value, Here loc) {
  requireTensor(x, loc);
  if (pads.size() % 2 || static_cast<int64_t>(pads.size()) > 2 * x.rank())
    throw errorAt(loc, "pad: " + std::to_string(pads.size()) +
                           " entries; give (before, after) pairs for at "
                           "most the " +
                           std::to_string(x.rank()) + " dimensions of " +
                           shapeText(x.shape()));
  for (int64_t p : pads)
    if (p < 0)
      throw errorAt(loc, "pad: negative padding is not supported; use "
                         "locus::slice to crop");
  return transaction(x, loc, [&] {
    Graph g = graphOf(x, loc);
    Tensor y = x;
    for (size_t pair = 0; pair < pads.size() / 2; ++pair) {
      int64_t axis = x.rank() - 1 - static_cast<int64_t>(pair);
      int64_t before = pads[2 * pair], after = pads[2 * pair + 1];
      std::vector<Tensor> parts;
      Shape side = y.shape();
      if (before) {
        side[axis] = before;
        parts.push_back(g.full(side, value, x.dtype(), loc));
      }
      parts.push_back(y);
      if (after) {
        side[axis] = after;
        parts.push_back(g.full(side, value, x.dtype(), loc));
      }
      if (parts.size() > 1)
        y = concat(parts, axis, loc);
    }
    return y;
  });
}

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

Tensor locus::argmax(const Tensor &x, int64_t axis, bool keepdim, Here loc) {
  requireTensor(x, loc);
  int64_t a = axisOf(x, axis, x.rank(), loc, "argmax");
  return transaction(x, loc, [&] {
    Graph g = graphOf(x, loc);
    int64_t n = x.dim(a);
    Tensor best = max(x, {a}, true, loc);
    Shape along(x.rank(), 1);
    along[a] = n;
    Tensor index = reshape(g.arange(n, DType::f32, loc), along, loc);
    // The first position holding the maximum: other positions count as n.
    Tensor candidate =
        where(eq(x, best, loc), index,
              g.full({}, static_cast<double>(n), DType::f32, loc), loc);
    return cast(min(candidate, {a}, keepdim, loc), DType::i64, loc);
  });
}

TopK locus::topk(const Tensor &x, int64_t k, int64_t axis, bool largest,
                 Here loc) {
  requireTensor(x, loc);
  int64_t a = axisOf(x, axis, x.rank(), loc, "topk");
  if (x.dtype() != DType::f32)
    throw errorAt(loc, std::string("topk takes an f32 input, got ") +
                           dtypeName(x.dtype()) + " " + shapeText(x.shape()));
  int64_t n = x.dim(a);
  if (k < 1 || k > n || k > kMaxTopK)
    throw errorAt(
        loc, "topk: k = " + std::to_string(k) + " must be in [1, " +
                 std::to_string(std::min(n, kMaxTopK)) + "] for input " +
                 shapeText(x.shape()) + " along axis " + std::to_string(a) +
                 (n > kMaxTopK ? " (at most " + std::to_string(kMaxTopK) +
                                     ": k rounds of a masked maximum)"
                               : ""));
  TopK result;
  transaction(x, loc, [&] {
    Graph g = graphOf(x, loc);
    Shape along(x.rank(), 1);
    along[a] = n;
    Tensor index = reshape(g.arange(n, DType::f32, loc), along, loc);
    Tensor past = g.full({}, static_cast<double>(n), DType::f32, loc);
    Tensor lowest =
        g.full({}, -std::numeric_limits<double>::infinity(), DType::f32, loc);
    Tensor work = largest ? x : neg(x, loc);
    Tensor taken = g.full(x.shape(), 0.0, DType::f32, loc);
    std::vector<Tensor> values, indices;
    for (int64_t round = 0; round < k; ++round) {
      // The best value not taken yet, and the first position holding it.
      Tensor open = where(gt(taken, g.full({}, 0.0, DType::f32, loc), loc),
                          lowest, work, loc);
      Tensor best = max(open, {a}, true, loc);
      Tensor candidate = maximum(where(eq(open, best, loc), index, past, loc),
                                 mul(taken, past, loc), loc);
      Tensor at = min(candidate, {a}, true, loc);
      values.push_back(largest ? best : neg(best, loc));
      indices.push_back(at);
      taken = maximum(taken, cast(eq(index, at, loc), DType::f32, loc), loc);
    }
    result.values = values.size() == 1 ? values[0] : concat(values, a, loc);
    result.indices =
        cast(indices.size() == 1 ? indices[0] : concat(indices, a, loc),
             DType::i64, loc);
    return result.values;
  });
  return result;
}

Tensor locus::gather(const Tensor &x, int64_t axis, const Tensor &index,
                     Here loc) {
  requireTensor(x, loc);
  requireTensor(index, loc);
  int64_t a = axisOf(x, axis, x.rank(), loc, "gather");
  if (x.dtype() != DType::f32)
    throw errorAt(loc, std::string("gather takes an f32 input, got ") +
                           dtypeName(x.dtype()) + " " + shapeText(x.shape()));
  if (index.dtype() != DType::i64 && index.dtype() != DType::i32)
    throw errorAt(loc, std::string("gather takes an i64 or i32 index, got ") +
                           dtypeName(index.dtype()) + " " +
                           shapeText(index.shape()));
  if (index.rank() != x.rank())
    throw errorAt(loc, "gather: index " + shapeText(index.shape()) +
                           " must have the rank of input " +
                           shapeText(x.shape()));
  for (int64_t d = 0; d < x.rank(); ++d)
    if (d != a && index.dim(d) > x.dim(d))
      throw errorAt(loc, "gather: index " + shapeText(index.shape()) +
                             " is larger than input " + shapeText(x.shape()) +
                             " in dimension " + std::to_string(d));
  return transaction(x, loc, [&] {
    Graph g = graphOf(x, loc);
    int64_t rank = x.rank(), n = x.dim(a);
    // x cut to the index's extent in every other dimension.
    Tensor picked = x;
    for (int64_t d = 0; d < rank; ++d)
      if (d != a && index.dim(d) < x.dim(d))
        picked = slice(picked, d, 0, index.dim(d), 1, loc);
    Tensor ids = cast(index, DType::i64, loc);
    if (Tensor picks = detail::gatherElements(picked, a, ids, loc))
      return picks;
    // With dynamic sizes, one-hot positions [..index.., n] against x with
    // `axis` moved last and a 1 in its place [..1.., n]: the product summed
    // over n picks x[.., index, ..] (zero for an index outside [0, n)), and
    // its gradient scatters back to the positions picked.
    Tensor positions = g.arange(n, DType::i64, loc);
    Tensor oneHot =
        cast(eq(unsqueeze(ids, rank, loc), positions, loc), DType::f32, loc);
    std::vector<int64_t> axisLast;
    for (int64_t d = 0; d < rank; ++d)
      if (d != a)
        axisLast.push_back(d);
    axisLast.push_back(a);
    Tensor values = unsqueeze(permute(picked, axisLast, loc), a, loc);
    return sum(mul(oneHot, values, loc), {rank}, false, loc);
  });
}

Tensor locus::var(const Tensor &x, const std::vector<int64_t> &axes,
                  bool unbiased, bool keepdim, Here loc) {
  requireTensor(x, loc);
  int64_t count = 1;
  for (int64_t axis : axes)
    count *= x.dim(axisOf(x, axis, x.rank(), loc, "var"));
  return transaction(x, loc, [&] {
    Tensor centred = sub(x, mean(x, axes, true, loc), loc);
    Tensor squares = sum(mul(centred, centred, loc), axes, keepdim, loc);
    double divisor = static_cast<double>(unbiased ? count - 1 : count);
    // n - 1 = 0 gives inf or NaN, as in PyTorch.
    return div(squares, graphOf(x, loc).full({}, divisor, DType::f32, loc),
               loc);
  });
}

Tensor locus::std(const Tensor &x, const std::vector<int64_t> &axes,
                  bool unbiased, bool keepdim, Here loc) {
  CallName call("std");
  return transaction(
      x, loc, [&] { return sqrt(var(x, axes, unbiased, keepdim, loc), loc); });
}

Tensor locus::logsumexp(const Tensor &x, const std::vector<int64_t> &axes,
                        bool keepdim, Here loc) {
  CallName call("logsumexp");
  return transaction(x, loc, [&] {
    Tensor peak = max(x, axes, true, loc);
    Tensor total = sum(exp(sub(x, peak, loc), loc), axes, true, loc);
    Tensor result = add(log(total, loc), peak, loc);
    if (keepdim)
      return result;
    Shape shape;
    for (int64_t d = 0; d < x.rank(); ++d)
      if (std::find_if(axes.begin(), axes.end(), [&](int64_t a) {
            return a == d || a + x.rank() == d;
          }) == axes.end())
        shape.push_back(x.dim(d));
    return reshape(result, shape, loc);
  });
}

//===----------------------------------------------------------------------===//
// Pooling
//===----------------------------------------------------------------------===//

namespace {

/// One spatial dimension of a pool that locus.max_pool2d or avg_pool2d
/// cannot take alone: its output size, the padding ceil mode adds after the
/// input, and each window's divisor for an average.
struct PoolAxis {
  int64_t out = 0, extra = 0;
  std::vector<int64_t> counts;
  bool full = true; // every divisor is the kernel size
};

/// `size` elements padded by `before` and `after`, windows of `kernel`
/// every `stride`, as PyTorch and ONNX count them; nothing when the kernel
/// does not fit or an uncounted average's window would hold padding alone.
std::optional<PoolAxis> poolAxis(int64_t size, int64_t kernel, int64_t stride,
                                 int64_t before, int64_t after,
                                 const Pool2dParams &p, bool max) {
  int64_t padded = size + before + after, span = padded - kernel;
  if (span < 0)
    return std::nullopt;
  PoolAxis a;
  a.out = (p.ceilMode ? (span + stride - 1) / stride : span / stride) + 1;
  // A last window would start in the end padding: both drop it.
  if (p.ceilMode && a.out > 1 && (a.out - 1) * stride >= size + before)
    --a.out;
  a.extra = std::max<int64_t>(0, (a.out - 1) * stride + kernel - padded);
  for (int64_t o = 0; o < a.out; ++o) {
    int64_t start = o * stride, end = start + kernel;
    int64_t covered = std::min(end, size + before) - std::max(start, before);
    // Padding alone: -inf for a max, 0 over the window for a counted
    // average, but nothing to divide by for an uncounted one.
    if (covered <= 0 && !max && !p.countIncludePad)
      return std::nullopt;
    a.counts.push_back(p.countIncludePad ? std::min(end, padded) - start
                                         : covered);
    a.full = a.full && a.counts.back() == kernel;
  }
  return a;
}

/// The pools one locus op records: PyTorch's symmetric padding, floor
/// sizes, and divisors that count the padding (or no padding).
bool plainPool(const Pool2dParams &p, bool max) {
  const std::vector<int64_t> &pad = p.padding;
  bool none =
      std::all_of(pad.begin(), pad.end(), [](int64_t v) { return v == 0; });
  return pad.size() == 2 && !p.ceilMode && (max || p.countIncludePad || none);
}

Tensor pool2d(const Tensor &x, const Pool2dParams &p, bool max,
              const Here &loc) {
  requireTensor(x, loc);
  std::vector<int64_t> stride = p.stride.empty() ? p.kernelSize : p.stride;
  const std::vector<int64_t> &k = p.kernelSize;
  bool wellFormed =
      x.rank() == 4 && k.size() == 2 && stride.size() == 2 &&
      std::all_of(k.begin(), k.end(), [](int64_t v) { return v > 0; }) &&
      std::all_of(stride.begin(), stride.end(),
                  [](int64_t v) { return v > 0; });
  if (plainPool(p, max) || !wellFormed)
    return detail::recordPool2d(x, {k, stride, p.padding}, max, loc);
  std::string name = CallName::label(max ? "max_pool2d" : "avg_pool2d");
  std::vector<int64_t> pad = p.padding;
  if (pad.size() == 2)
    pad = {pad[0], pad[1], pad[0], pad[1]};
  if (pad.size() != 4 ||
      std::any_of(pad.begin(), pad.end(), [](int64_t v) { return v < 0; }))
    throw errorAt(loc, name + ": padding " + shapeText(p.padding) +
                           " must be 2 or 4 sizes of 0 or more");
  std::vector<InputDim> dims = dynamic_shape(x, loc);
  if (dims[2].dynamic || dims[3].dynamic)
    throw errorAt(loc, name + ": ceil_mode and uneven padding need static "
                              "heights and widths");
  std::optional<PoolAxis> axes[2];
  for (size_t d = 0; d < 2; ++d) {
    axes[d] =
        poolAxis(x.dim(2 + d), k[d], stride[d], pad[d], pad[2 + d], p, max);
    if (!axes[d])
      throw errorAt(loc, name + ": kernel_size " + shapeText(k) +
                             " does not fit input " + shapeText(x.shape()) +
                             " with padding " + shapeText(p.padding) +
                             ", or an average's window covers padding alone "
                             "(count_include_pad false)");
  }
  // NOLINTBEGIN(bugprone-unchecked-optional-access): checked above.
  const PoolAxis &h = *axes[0], &w = *axes[1];
  // NOLINTEND(bugprone-unchecked-optional-access)
  return transaction(x, loc, [&] {
    bool scaled = !max && !(h.full && w.full);
    // A scaled 16-bit average rounds once, as PyTorch's: in f32 until then.
    Tensor in =
        scaled && x.dtype() != DType::f32 ? cast(x, DType::f32, loc) : x;
    double fill = max ? -std::numeric_limits<double>::infinity() : 0.0;
    Tensor padded = locus::pad(
        in, {pad[1], pad[3] + w.extra, pad[0], pad[2] + h.extra}, fill, loc);
    Tensor y = detail::recordPool2d(padded, {k, stride, {0, 0}}, max, loc);
    if (!scaled)
      return y;
    // The op divides by the kernel's size; scale to each window's count.
    std::vector<float> scale;
    for (int64_t i = 0; i < h.out; ++i)
      for (int64_t j = 0; j < w.out; ++j)
        scale.push_back(
            static_cast<float>(static_cast<double>(k[0] * k[1]) /
                               static_cast<double>(h.counts[i] * w.counts[j])));
    Tensor s = graphOf(x, loc).constant({1, 1, h.out, w.out}, scale, loc);
    Tensor r = mul(y, s, loc);
    return r.dtype() == x.dtype() ? r : cast(r, x.dtype(), loc);
  });
}

} // namespace

Tensor locus::max_pool2d(const Tensor &x, const Pool2dParams &params,
                         Here loc) {
  return pool2d(x, params, true, loc);
}
Tensor locus::avg_pool2d(const Tensor &x, const Pool2dParams &params,
                         Here loc) {
  return pool2d(x, params, false, loc);
}

Tensor locus::adaptive_avg_pool2d(const Tensor &x, std::vector<int64_t> out,
                                  Here loc) {
  requireTensor(x, loc);
  if (out.size() == 1)
    out.push_back(out[0]);
  if (x.rank() != 4 || out.size() != 2 || out[0] < 1 || out[1] < 1)
    throw errorAt(loc, "adaptive_avg_pool2d takes an NCHW input and one "
                       "or two positive output sizes, got " +
                           shapeText(x.shape()));
  int64_t h = x.dim(2), w = x.dim(3);
  return transaction(x, loc, [&] {
    if (out[0] == 1 && out[1] == 1)
      return mean(x, {2, 3}, true, loc);
    if (h % out[0] == 0 && w % out[1] == 0) {
      std::vector<int64_t> k = {h / out[0], w / out[1]};
      return avg_pool2d(x, Pool2dParams{k, k, {0, 0}}, loc);
    }
    // Windows of varying size: one mean per output cell.
    std::vector<Tensor> rows;
    for (int64_t i = 0; i < out[0]; ++i) {
      int64_t r0 = i * h / out[0], r1 = ((i + 1) * h + out[0] - 1) / out[0];
      std::vector<Tensor> cells;
      for (int64_t j = 0; j < out[1]; ++j) {
        int64_t c0 = j * w / out[1], c1 = ((j + 1) * w + out[1] - 1) / out[1];
        Tensor window = slice(slice(x, 2, r0, r1, 1, loc), 3, c0, c1, 1, loc);
        cells.push_back(mean(window, {2, 3}, true, loc));
      }
      rows.push_back(concat(cells, 3, loc));
    }
    return concat(rows, 2, loc);
  });
}

//===----------------------------------------------------------------------===//
// Normalisation
//===----------------------------------------------------------------------===//

namespace {

/// (x - mean) / sqrt(var + eps) over `axes`, biased variance.
Tensor standardize(const Tensor &x, const std::vector<int64_t> &axes,
                   double eps, const Here &loc) {
  Tensor centred = sub(x, mean(x, axes, true, loc), loc);
  Tensor variance = mean(mul(centred, centred, loc), axes, true, loc);
  return mul(centred, rsqrt(shifted(variance, eps, loc), loc), loc);
}

/// weight and bias of shape [C] applied along dimension 1 of y.
Tensor channelAffine(const Tensor &y, const Tensor &weight, const Tensor &bias,
                     const Here &loc) {
  Shape perChannel(y.rank(), 1);
  perChannel[1] = y.dim(1);
  Tensor out = y;
  if (weight)
    out = mul(out, reshape(weight, perChannel, loc), loc);
  if (bias)
    out = add(out, reshape(bias, perChannel, loc), loc);
  return out;
}

void checkChannelParam(const Tensor &t, int64_t channels, const char *what,
                       const char *op, const Here &loc) {
  if (t && t.shape() != Shape{channels})
    throw errorAt(loc, std::string(op) + ": " + what + " " +
                           shapeText(t.shape()) + " does not match " +
                           std::to_string(channels) + " channels");
}

} // namespace

Tensor locus::layer_norm(const Tensor &x, const Shape &normalizedShape,
                         const Tensor &weight, const Tensor &bias, double eps,
                         Here loc) {
  requireTensor(x, loc);
  int64_t k = static_cast<int64_t>(normalizedShape.size());
  Shape in = x.shape();
  if (k == 0 || k > x.rank() ||
      !std::equal(normalizedShape.begin(), normalizedShape.end(), in.end() - k))
    throw errorAt(
        loc, "layer_norm: normalized_shape " + shapeText(normalizedShape) +
                 " is not the trailing dimensions of input " + shapeText(in));
  for (const Tensor *t : {&weight, &bias})
    if (*t && t->shape() != normalizedShape)
      throw errorAt(
          loc, "layer_norm: " + std::string(t == &weight ? "weight" : "bias") +
                   " " + shapeText(t->shape()) +
                   " does not match normalized_shape " +
                   shapeText(normalizedShape));
  return transaction(x, loc, [&] {
    std::vector<int64_t> axes;
    for (int64_t d = x.rank() - k; d < x.rank(); ++d)
      axes.push_back(d);
    Tensor y = standardize(x, axes, eps, loc);
    if (weight)
      y = mul(y, weight, loc);
    if (bias)
      y = add(y, bias, loc);
    return y;
  });
}

Tensor locus::group_norm(const Tensor &x, int64_t groups, const Tensor &weight,
                         const Tensor &bias, double eps, Here loc) {
  requireTensor(x, loc);
  if (x.rank() < 2)
    throw errorAt(loc,
                  "group_norm takes [N, C, ...], got " + shapeText(x.shape()));
  int64_t channels = x.dim(1);
  if (groups < 1 || channels % groups)
    throw errorAt(loc, "group_norm: " + std::to_string(groups) +
                           " groups do not divide " + std::to_string(channels) +
                           " channels");
  checkChannelParam(weight, channels, "weight", "group_norm", loc);
  checkChannelParam(bias, channels, "bias", "group_norm", loc);
  return transaction(x, loc, [&] {
    Tensor grouped = reshape(x, {x.dim(0), groups, -1}, loc);
    Tensor y = reshape(standardize(grouped, {2}, eps, loc), x.shape(), loc);
    return channelAffine(y, weight, bias, loc);
  });
}

Tensor locus::batch_norm(const Tensor &x, const Tensor &runningMean,
                         const Tensor &runningVar, const Tensor &weight,
                         const Tensor &bias, bool training, double momentum,
                         double eps, Here loc) {
  requireTensor(x, loc);
  if (x.rank() < 2)
    throw errorAt(loc,
                  "batch_norm takes [N, C, ...], got " + shapeText(x.shape()));
  int64_t channels = x.dim(1);
  checkChannelParam(weight, channels, "weight", "batch_norm", loc);
  checkChannelParam(bias, channels, "bias", "batch_norm", loc);
  checkChannelParam(runningMean, channels, "running_mean", "batch_norm", loc);
  checkChannelParam(runningVar, channels, "running_var", "batch_norm", loc);
  int64_t count = x.dim(0);
  for (int64_t d = 2; d < x.rank(); ++d)
    count *= x.dim(d);
  if (training && count < 2)
    throw errorAt(loc, "batch_norm in training needs more than one value "
                       "per channel, got input " +
                           shapeText(x.shape()) + " (as PyTorch)");
  if (training && !(momentum >= 0 && momentum <= 1))
    throw errorAt(loc, "batch_norm: momentum must be in [0, 1]");
  return transaction(x, loc, [&] {
    Shape perChannel(x.rank(), 1);
    perChannel[1] = channels;
    // Evaluation: the running statistics instead of the batch's.
    auto evaluated = [&] {
      Tensor scale =
          reshape(rsqrt(shifted(runningVar, eps, loc), loc), perChannel, loc);
      Tensor y =
          mul(sub(x, reshape(runningMean, perChannel, loc), loc), scale, loc);
      return channelAffine(y, weight, bias, loc);
    };
    if (training) {
      // One op, whose gradient is one op too; without an affine transform,
      // a weight of ones and a bias of zeros (constants: no gradient).
      Graph graph = x.graph(loc);
      detail::BatchNormTrainResults batch = detail::batchNormTrain(
          x, weight ? weight : graph.full({channels}, 1.0, DType::f32, loc),
          bias ? bias : graph.full({channels}, 0.0, DType::f32, loc), eps, loc);
      if (runningMean && runningVar) {
        // The unbiased variance, var * n / (n - 1): n is the run's count
        // with dynamic sizes.
        Tensor mean1 = batch.mean, var1;
        if (Tensor n = detail::dynamicChannelCount(x, loc))
          var1 = mul(batch.var, div(n, shifted(n, -1.0, loc), loc), loc);
        else
          var1 = scaled(
              batch.var,
              static_cast<double>(count) / static_cast<double>(count - 1), loc);
        // From the value an earlier call in this graph left (as PyTorch's
        // in-place updates chain), or the state's at the run's start.
        auto blend = [&](const Tensor &running, const Tensor &batch) {
          return add(scaled(assignedValue(running, loc), 1.0 - momentum, loc),
                     scaled(batch, momentum, loc), loc);
        };
        assign(runningMean, blend(runningMean, mean1), loc);
        assign(runningVar, blend(runningVar, var1), loc);
        // The same recording compiles for evaluation too
        // (CompileOptions::eval): its form is recorded beside, marked,
        // and a training compile erases it.
        detail::EvalOnlyGuard evalOnly;
        NoGradGuard noGrad;
        detail::markEvalValue(batch.result, evaluated(), loc);
      }
      return batch.result;
    }
    if (!runningMean || !runningVar)
      throw errorAt(loc, "batch_norm in eval mode needs running_mean and "
                         "running_var");
    return evaluated();
  });
}

//===----------------------------------------------------------------------===//
// Losses built from elementwise ops
//===----------------------------------------------------------------------===//

namespace {

/// The checks every elementwise loss makes: f32 tensors of one shape.
void checkLossOperands(const Tensor &input, const Tensor &target,
                       const char *name, const Here &loc) {
  requireTensor(input, loc);
  requireTensor(target, loc);
  for (const Tensor *t : {&input, &target})
    if (t->dtype() != DType::f32)
      throw errorAt(loc, std::string(name) + " takes f32 tensors, but " +
                             (t == &input ? "input" : "target") + " is " +
                             dtypeName(t->dtype()) + " " +
                             shapeText(t->shape()));
  if (input.shape() != target.shape())
    throw errorAt(loc, std::string(name) + ": input " +
                           shapeText(input.shape()) + " and target " +
                           shapeText(target.shape()) +
                           " have different shapes");
}

/// The mean or the sum of every element of `losses`.
Tensor reduceLoss(const Tensor &losses, Reduction reduction, const Here &loc) {
  std::vector<int64_t> all(static_cast<size_t>(losses.rank()));
  for (size_t d = 0; d < all.size(); ++d)
    all[d] = static_cast<int64_t>(d);
  return reduction == Reduction::mean ? mean(losses, all, false, loc)
                                      : sum(losses, all, false, loc);
}

} // namespace

Tensor locus::l1_loss(const Tensor &input, const Tensor &target,
                      Reduction reduction, Here loc) {
  CallName call("l1_loss");
  checkLossOperands(input, target, "l1_loss", loc);
  return transaction(input, loc, [&] {
    return reduceLoss(abs(sub(input, target, loc), loc), reduction, loc);
  });
}

Tensor locus::smooth_l1_loss(const Tensor &input, const Tensor &target,
                             Reduction reduction, double beta, Here loc) {
  CallName call("smooth_l1_loss");
  checkLossOperands(input, target, "smooth_l1_loss", loc);
  if (!(beta >= 0) || !std::isfinite(beta))
    throw errorAt(loc, "smooth_l1_loss: beta must be a finite number >= 0, "
                       "got " +
                           numberText(beta));
  if (beta == 0)
    return l1_loss(input, target, reduction, loc);
  return transaction(input, loc, [&] {
    Tensor d = abs(sub(input, target, loc), loc);
    Tensor quadratic = scaled(mul(d, d, loc), 0.5 / beta, loc);
    Tensor linear = shifted(d, -0.5 * beta, loc);
    Tensor losses =
        where(lt(d, scalarLike(d, beta, loc), loc), quadratic, linear, loc);
    return reduceLoss(losses, reduction, loc);
  });
}

Tensor locus::binary_cross_entropy(const Tensor &input, const Tensor &target,
                                   Reduction reduction, Here loc) {
  CallName call("binary_cross_entropy");
  checkLossOperands(input, target, "binary_cross_entropy", loc);
  return transaction(input, loc, [&] {
    // PyTorch clamps each log at -100, so p = 0 or 1 gives a finite loss.
    auto clampedLog = [&](const Tensor &p) {
      return clamp(log(p, loc), -100.0, std::nullopt, loc);
    };
    Tensor one = scalarLike(input, 1.0, loc);
    Tensor losses = neg(
        add(mul(target, clampedLog(input), loc),
            mul(sub(one, target, loc), clampedLog(sub(one, input, loc)), loc),
            loc),
        loc);
    return reduceLoss(losses, reduction, loc);
  });
}

Tensor locus::binary_cross_entropy_with_logits(const Tensor &input,
                                               const Tensor &target,
                                               Reduction reduction, Here loc) {
  CallName call("binary_cross_entropy_with_logits");
  checkLossOperands(input, target, "binary_cross_entropy_with_logits", loc);
  return transaction(input, loc, [&] {
    Tensor zero = scalarLike(input, 0.0, loc);
    Tensor softplusOfMinusAbs =
        log(shifted(exp(neg(abs(input, loc), loc), loc), 1.0, loc), loc);
    Tensor losses =
        add(sub(maximum(input, zero, loc), mul(input, target, loc), loc),
            softplusOfMinusAbs, loc);
    return reduceLoss(losses, reduction, loc);
  });
}

//===----------------------------------------------------------------------===//
// Attention
//===----------------------------------------------------------------------===//

Tensor locus::scaled_dot_product_attention(const Tensor &q, const Tensor &k,
                                           const Tensor &v,
                                           const AttentionOptions &options,
                                           Here loc) {
  requireTensor(q, loc);
  if (q.rank() < 2 || k.rank() < 2 || v.rank() < 2 || q.dim(-1) != k.dim(-1) ||
      k.dim(-2) != v.dim(-2))
    throw errorAt(loc, "scaled_dot_product_attention takes q [..., L, E], "
                       "k [..., S, E] and v [..., S, Ev], got " +
                           shapeText(q.shape()) + ", " + shapeText(k.shape()) +
                           ", " + shapeText(v.shape()));
  if (options.attnMask && options.isCausal)
    throw errorAt(loc, "scaled_dot_product_attention: give attn_mask or "
                       "is_causal, not both (as PyTorch)");
  double scale = options.scale
                     ? *options.scale
                     : 1.0 / std::sqrt(static_cast<double>(q.dim(-1)));
  return transaction(q, loc, [&] {
    Graph g = graphOf(q, loc);
    Tensor scores =
        scaled(matmul(q, transpose(k, -2, -1, loc), loc), scale, loc);
    int64_t l = q.dim(-2), s = k.dim(-2);
    Tensor minusInf =
        g.full({}, -std::numeric_limits<double>::infinity(), DType::f32, loc);
    if (options.isCausal) {
      Tensor allowed = tril(g.ones({l, s}, DType::i1, loc), 0, loc);
      scores = where(allowed, scores, minusInf, loc);
    } else if (options.attnMask) {
      if (options.attnMask.dtype() == DType::i1)
        scores = where(options.attnMask, scores, minusInf, loc);
      else
        scores = add(scores, options.attnMask, loc);
    }
    return matmul(softmax(scores, -1, loc), v, loc);
  });
}

//===----------------------------------------------------------------------===//
// Gradient clipping
//===----------------------------------------------------------------------===//

namespace {

/// Every axis of x, for a full reduction.
std::vector<int64_t> allAxes(const Tensor &x) {
  std::vector<int64_t> axes(static_cast<size_t>(x.rank()));
  for (size_t i = 0; i < axes.size(); ++i)
    axes[i] = static_cast<int64_t>(i);
  return axes;
}

/// sum |g|^p over g (the largest |g| for p = infinity), a scalar.
Tensor normPart(const Tensor &g, double p, const Here &loc) {
  Tensor magnitude = p == 2.0 ? mul(g, g, loc) : abs(g, loc);
  if (std::isinf(p))
    return g.rank() ? max(magnitude, allAxes(g), false, loc) : magnitude;
  if (p != 2.0 && p != 1.0)
    magnitude = locus::pow(magnitude, p, loc);
  return g.rank() ? sum(magnitude, allAxes(g), false, loc) : magnitude;
}

} // namespace

Tensor locus::nn::utils::clip_grad_norm_(std::vector<Tensor> &grads,
                                         double maxNorm, double normType,
                                         Here loc) {
  if (grads.empty())
    throw errorAt(loc, "clip_grad_norm_ needs at least one gradient");
  if (!(normType > 0.0))
    throw errorAt(loc, "clip_grad_norm_: norm_type " + numberText(normType) +
                           " must be positive (or infinity)");
  if (!std::isfinite(maxNorm) || maxNorm < 0.0)
    throw errorAt(loc, "clip_grad_norm_: max_norm " + numberText(maxNorm) +
                           " must be a finite number, 0 or more");
  for (const Tensor &g : grads)
    if (g.dtype() != DType::f32)
      throw errorAt(loc, std::string("clip_grad_norm_ takes f32 gradients, "
                                     "got ") +
                             dtypeName(g.dtype()) + " " + shapeText(g.shape()));
  std::vector<Tensor> clipped;
  clipped.reserve(grads.size());
  Tensor norm = transaction(grads.front(), loc, [&] {
    Tensor total;
    for (const Tensor &g : grads) {
      Tensor part = normPart(g, normType, loc);
      if (!total)
        total = part;
      else
        total = std::isinf(normType) ? maximum(total, part, loc)
                                     : add(total, part, loc);
    }
    if (normType == 2.0)
      total = sqrt(total, loc);
    else if (!std::isinf(normType) && normType != 1.0)
      total = locus::pow(total, 1.0 / normType, loc);
    // PyTorch's: max_norm / (total + 1e-6), at most 1.
    Graph g = graphOf(total, loc);
    Tensor coef = minimum(div(g.full({}, maxNorm, DType::f32, loc),
                              shifted(total, 1e-6, loc), loc),
                          g.full({}, 1.0, DType::f32, loc), loc);
    for (const Tensor &grad : grads)
      clipped.push_back(mul(grad, coef, loc));
    return total;
  });
  grads = std::move(clipped);
  return norm;
}

void locus::nn::utils::clip_grad_value_(std::vector<Tensor> &grads,
                                        double clipValue, Here loc) {
  if (!(clipValue >= 0.0))
    throw errorAt(loc, "clip_grad_value_: clip_value " + numberText(clipValue) +
                           " must be 0 or more");
  if (grads.empty())
    return;
  std::vector<Tensor> clipped = transaction(grads.front(), loc, [&] {
    std::vector<Tensor> out;
    out.reserve(grads.size());
    for (const Tensor &g : grads)
      out.push_back(clamp(g, -clipValue, clipValue, loc));
    return out;
  });
  grads = std::move(clipped);
}

Tensor locus::nll_loss(const Tensor &input, const Tensor &target,
                       Reduction reduction, Here loc) {
  CallName call("nll_loss");
  requireTensor(input, loc);
  requireTensor(target, loc);
  Shape in = input.shape(), t = target.shape();
  bool fits = input.dtype() == DType::f32 && target.dtype() == DType::i64 &&
              in.size() >= 2 && t.size() + 1 == in.size() && t[0] == in[0] &&
              std::equal(t.begin() + 1, t.end(), in.begin() + 2);
  if (!fits)
    throw errorAt(loc, "nll_loss takes f32 log-probabilities [N, C, ...] and "
                       "i64 targets [N, ...], not " +
                           std::string(dtypeName(input.dtype())) + " " +
                           shapeText(in) + " and " + dtypeName(target.dtype()) +
                           " " + shapeText(t));
  return transaction(input, loc, [&] {
    // Classes last, against one-hot targets [N, ..., C].
    Tensor classesLast = input;
    if (input.rank() > 2) {
      std::vector<int64_t> order{0};
      for (int64_t d = 2; d < input.rank(); ++d)
        order.push_back(d);
      order.push_back(1);
      classesLast = permute(input, order, loc);
    }
    Tensor hot = one_hot(target, in[1], DType::f32, loc);
    Tensor picked = sum(mul(classesLast, hot, loc), {-1}, false, loc);
    return reduceLoss(neg(picked, loc), reduction, loc);
  });
}
