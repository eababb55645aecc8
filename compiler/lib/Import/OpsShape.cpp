//===- OpsShape.cpp - ONNX shape and data-movement ops --------------------===//
//
// Reshape, Flatten, Transpose, Concat, Split, Slice, Gather, Squeeze,
// Unsqueeze, Expand, Pad and Trilu, and the ops that make values known
// while importing (Shape, Constant, ConstantOfShape, Range). Each folds on
// the host when its data input is known.
//
//===----------------------------------------------------------------------===//

#include "Importer.h"

#include <cmath>
#include <limits>
#include <numeric>

namespace locus::onnx_import {

namespace {

/// ONNX's Reshape target: 0 copies the input's dimension (unless
/// allowzero), -1 is inferred.
Shape reshapeTarget(const Shape &input, std::vector<int64_t> target,
                    bool allowZero) {
  int64_t known = 1, infer = -1;
  for (size_t d = 0; d < target.size(); ++d) {
    if (target[d] == 0 && !allowZero) {
      if (d >= input.size())
        fail("shape entry 0 at " + std::to_string(d) +
             " copies a dimension the input does not have");
      target[d] = input[d];
    }
    if (target[d] == -1) {
      if (infer >= 0)
        fail("the shape has two -1 entries");
      infer = static_cast<int64_t>(d);
    } else if (target[d] < 0) {
      fail("the shape has the entry " + std::to_string(target[d]));
    } else {
      known *= target[d];
    }
  }
  if (infer >= 0) {
    if (known == 0 || product(input) % known)
      fail("cannot reshape " + shapeText(input) + " to " + shapeText(target));
    target[static_cast<size_t>(infer)] = product(input) / known;
  }
  if (product(target) != product(input))
    fail("cannot reshape " + shapeText(input) + " to " + shapeText(target));
  return target;
}

/// ONNX's clamping of one Slice range to a dimension of `size`: [start,
/// end) for a positive step; for a negative one, start in [0, size - 1]
/// and end in [-1, size - 1], walked down.
std::pair<int64_t, int64_t> sliceRange(int64_t start, int64_t end, int64_t step,
                                       int64_t size) {
  if (size == 0)
    return {0, 0};
  bool down = step < 0;
  auto clampIndex = [&](int64_t i, bool isEnd) {
    if (i < 0)
      i = i < -size ? -size - 1 : i + size; // no overflow at INT64_MIN
    return down ? std::clamp<int64_t>(i, isEnd ? -1 : 0, size - 1)
                : std::clamp<int64_t>(i, 0, size);
  };
  return {clampIndex(start, false), clampIndex(end, true)};
}

/// `c` with its dimensions in the order `perm`.
Const transposeConst(const Const &c, const std::vector<int64_t> &perm) {
  size_t rank = c.shape.size();
  std::vector<bool> seen(rank);
  for (int64_t p : perm) {
    if (p < 0 || static_cast<size_t>(p) >= rank || seen[size_t(p)])
      fail("perm " + shapeText(perm) + " is not a permutation of " +
           std::to_string(rank) + " dimensions");
    seen[size_t(p)] = true;
  }
  if (perm.size() != rank)
    fail("perm " + shapeText(perm) + " is not a permutation of " +
         std::to_string(rank) + " dimensions");
  Const r;
  r.dtype = c.dtype;
  for (int64_t p : perm)
    r.shape.push_back(c.shape[size_t(p)]);
  std::vector<size_t> strides(rank, 1);
  for (size_t d = rank; d-- > 1;)
    strides[d - 1] = strides[d] * size_t(c.shape[d]);
  for (size_t k = 0; k < static_cast<size_t>(c.numel()); ++k) {
    size_t rem = k, index = 0;
    for (size_t d = rank; d-- > 0;) {
      index += (rem % size_t(r.shape[d])) * strides[size_t(perm[d])];
      rem /= size_t(r.shape[d]);
    }
    r.append(c, index);
  }
  r.atBounds = c.dynamic();
  return r;
}

} // namespace

void Importer::reshape(const NodeProto &n) {
  Shape input = shapeOf(n, 0);
  Shape target;
  if (n.op_type() == "Flatten") {
    auto rank = static_cast<int64_t>(input.size());
    int64_t axis = attrInt(n, "axis", 1);
    axis = axis < 0 ? axis + rank : axis;
    if (axis < 0 || axis > rank)
      fail("axis out of range");
    target = {product(input, 0, size_t(axis)), product(input, size_t(axis))};
  } else {
    target = reshapeTarget(input, needConst(n, 1, "the shape").ints(),
                           attrInt(n, "allowzero", 0) != 0);
  }
  if (const Const *c = constOf(n, 0)) {
    Const r = *c;
    r.shape = target;
    if (!r.window.empty() && r.shape != c->shape) { // no longer a window
      r.window.clear();
      r.atBounds = true;
    }
    outConst(n, 0, std::move(r));
    return;
  }
  out(n, 0, locus::reshape(in(n, 0), target));
}

void Importer::slice(const NodeProto &n) {
  Shape shape = shapeOf(n, 0);
  auto rank = static_cast<int64_t>(shape.size());
  std::vector<int64_t> starts, ends, axes, steps;
  if (opset_ >= 10) {
    starts = needConst(n, 1, "starts").ints();
    ends = needConst(n, 2, "ends").ints();
    if (has(n, 3))
      axes = needConst(n, 3, "axes").ints();
    if (has(n, 4))
      steps = needConst(n, 4, "steps").ints();
  } else {
    starts = attrInts(n, "starts").value_or(std::vector<int64_t>{});
    ends = attrInts(n, "ends").value_or(std::vector<int64_t>{});
    axes = attrInts(n, "axes").value_or(std::vector<int64_t>{});
  }
  if (axes.empty())
    for (size_t k = 0; k < starts.size(); ++k)
      axes.push_back(static_cast<int64_t>(k));
  if (steps.empty())
    steps.assign(starts.size(), 1);
  if (ends.size() != starts.size() || axes.size() != starts.size() ||
      steps.size() != starts.size())
    fail("starts, ends, axes and steps differ in length");
  struct Range {
    int64_t axis, start, end, step;
    int64_t givenStart, givenEnd; // as the node gives them
  };
  std::vector<Range> ranges;
  Shape outShape = shape;
  // With dynamic sizes: an axis sliced from 0 to a dynamic size is that
  // size's window (x[:, :seq] of a buffer built for the longest sequence);
  // other ends computed from sizes hold at the bounds only.
  std::vector<std::string> windowOf(shape.size());
  bool atBounds = false;
  const Const *endsConst = opset_ >= 10 ? constOf(n, 2) : nullptr;
  for (size_t k = 0; k < starts.size(); ++k) {
    int64_t axis = normalizeAxis(axes[k], rank);
    if (steps[k] == 0)
      fail("a step of 0");
    int64_t step = steps[k];
    auto [start, end] =
        sliceRange(starts[k], ends[k], step, shape[size_t(axis)]);
    end = step > 0 ? std::max(end, start) : std::min(end, start);
    ranges.push_back({axis, start, end, step, starts[k], ends[k]});
    // The count of start, start + step, ... short of end (either way);
    // |INT64_MIN| as INT64_MAX, which every span is below.
    int64_t span = step > 0 ? end - start : start - end;
    int64_t stride = step > 0 ? step : step == INT64_MIN ? INT64_MAX : -step;
    outShape[size_t(axis)] = span == 0 ? 0 : (span - 1) / stride + 1;
    std::string sym = endsConst ? endsConst->symAt(k) : "";
    if (!sym.empty() && start == 0 && steps[k] == 1 && ends[k] == end)
      windowOf[size_t(axis)] = sym;
    else if (!sym.empty() || (endsConst && endsConst->atBounds))
      atBounds = true;
  }
  if (const Const *startsConst = opset_ >= 10 ? constOf(n, 1) : nullptr)
    atBounds |= startsConst->dynamic();
  bool windowed = std::any_of(windowOf.begin(), windowOf.end(),
                              [](const std::string &w) { return !w.empty(); });
  if (const Const *c = constOf(n, 0)) {
    Const r;
    r.dtype = c->dtype;
    r.shape = outShape;
    for (size_t k = 0; k < static_cast<size_t>(product(outShape)); ++k) {
      // Output coordinates back to input ones.
      size_t index = 0, rem = k;
      std::vector<int64_t> coord(shape.size());
      for (size_t d = shape.size(); d-- > 0;) {
        coord[d] = static_cast<int64_t>(rem % size_t(outShape[d]));
        rem /= size_t(outShape[d]);
      }
      for (const Range &range : ranges)
        coord[size_t(range.axis)] =
            range.start + coord[size_t(range.axis)] * range.step;
      for (size_t d = 0; d < shape.size(); ++d)
        index = index * size_t(shape[d]) + size_t(coord[d]);
      r.append(*c, index);
    }
    // A window of c stays one where the slice keeps the dimension whole.
    for (size_t d = 0; d < shape.size(); ++d) {
      std::string w = c->windowAt(d);
      if (!w.empty() && outShape[d] != shape[d])
        atBounds = true;
      else if (windowOf[d].empty())
        windowOf[d] = w;
    }
    r.atBounds |= atBounds;
    if (std::any_of(windowOf.begin(), windowOf.end(),
                    [](const std::string &w) { return !w.empty(); }))
      r.window = windowOf;
    outConst(n, 0, std::move(r));
    return;
  }
  if (atBounds)
    fail("slices with bounds computed from a dynamic size other than "
         "[0, size); only those are kept dynamic");
  Tensor x = in(n, 0);
  std::vector<InputDim> dims = locus::dynamic_shape(x);
  for (const Range &range : ranges) {
    int64_t size = shape[size_t(range.axis)];
    bool whole =
        range.givenStart == 0 && range.givenEnd >= size && range.step == 1;
    if (range.step < 0) {
      if (dims[size_t(range.axis)].dynamic)
        fail("negative steps along a dynamic size are not supported");
      // Walked down: the picked indices, gathered.
      std::vector<int64_t> picked(
          static_cast<size_t>(outShape[size_t(range.axis)]));
      for (size_t k = 0; k < picked.size(); ++k)
        picked[k] = range.start + static_cast<int64_t>(k) * range.step;
      if (picked.empty())
        fail("the slice along axis " + std::to_string(range.axis) +
             " is empty");
      x = index_select(
          x, range.axis,
          x.graph().constantI64({static_cast<int64_t>(picked.size())}, picked));
    } else if (dims[size_t(range.axis)].dynamic &&
               windowOf[size_t(range.axis)].empty()) {
      if (whole)
        continue;
      // Along a dynamic size, the bounds as given: negative ones count
      // from the run's end (x[:, -1:]), and locus::slice refuses a window
      // whose size would follow the run's.
      x = locus::slice(x, range.axis, std::max(range.givenStart, -size),
                       range.givenEnd >= size
                           ? std::numeric_limits<int64_t>::max()
                           : std::max(range.givenEnd, -size),
                       range.step);
    } else if (range.start != 0 || range.end != size || range.step != 1) {
      x = locus::slice(x, range.axis, range.start, range.end, range.step);
    }
  }
  if (windowed)
    x = windowTo(x, windowOf);
  out(n, 0, x);
}

void Importer::gather(Graph &g, const NodeProto &n) {
  Shape shape = shapeOf(n, 0), indexShape = shapeOf(n, 1);
  int64_t axis =
      normalizeAxis(attrInt(n, "axis", 0), static_cast<int64_t>(shape.size()));
  int64_t size = shape[size_t(axis)];
  Shape outShape(shape.begin(), shape.begin() + axis);
  outShape.insert(outShape.end(), indexShape.begin(), indexShape.end());
  outShape.insert(outShape.end(), shape.begin() + axis + 1, shape.end());
  const Const *data = constOf(n, 0), *index = constOf(n, 1);
  std::vector<int64_t> indices, given;
  if (index) {
    indices = index->ints();
    given = indices;
    for (int64_t &i : indices) {
      if (i < -size || i >= size)
        fail("index " + std::to_string(i) +
             " is out of range for a dimension "
             "of " +
             std::to_string(size));
      i = i < 0 ? i + size : i;
    }
  }
  if (data && index) {
    Const r;
    r.dtype = data->dtype;
    r.shape = outShape;
    int64_t outer = product(shape, 0, size_t(axis)),
            inner = product(shape, size_t(axis) + 1);
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i : indices)
        for (int64_t k = 0; k < inner; ++k) {
          size_t at = size_t((o * size + i) * inner + k);
          r.append(*data, at);
        }
    // The windows of data's other dimensions and of the indices' own;
    // picking along a windowed dimension holds at the bounds only.
    std::vector<std::string> window;
    for (size_t d = 0; d < shape.size(); ++d) {
      if (d != size_t(axis)) {
        window.push_back(data->windowAt(d));
        continue;
      }
      r.atBounds |= !data->windowAt(d).empty() || index->atBounds;
      for (size_t e = 0; e < indexShape.size(); ++e)
        window.push_back(index->windowAt(e));
    }
    if (std::any_of(window.begin(), window.end(),
                    [](const std::string &w) { return !w.empty(); }))
      r.window = std::move(window);
    outConst(n, 0, std::move(r));
    return;
  }
  if (index && index->dynamic() && index->window.empty())
    fail("gathers at indices computed from a dynamic size; only a window "
         "of one (Range(0, size)) is kept dynamic");
  Tensor x = in(n, 0);
  if (index && indexShape.empty()) { // one index: a slice without the axis
    // Along a dynamic size, a negative index counts from the run's end.
    bool fromEnd =
        given[0] < 0 && locus::dynamic_shape(x)[size_t(axis)].dynamic;
    int64_t start = fromEnd ? given[0] : indices[0];
    int64_t end = start == -1 ? std::numeric_limits<int64_t>::max() : start + 1;
    out(n, 0, squeeze(locus::slice(x, axis, start, end), axis));
    return;
  }
  Tensor idx;
  if (index) {
    idx = g.constantI64({static_cast<int64_t>(indices.size())}, indices);
    if (!index->window.empty()) // Range(0, seq): the run's positions
      idx = windowTo(locus::reshape(idx, indexShape), index->window);
  } else {
    idx = in(n, 1);
    if (idx.dtype() != DType::i64 && idx.dtype() != DType::i32)
      fail("indices must be int64 or int32");
    // Negative indices count from the end, as ONNX says (exact in f32 for
    // any dimension below 2^24).
    Tensor f = cast(idx, DType::f32);
    idx = cast(where(lt(f, g.constant(0.0f)), f + static_cast<float>(size), f),
               idx.dtype());
    if (axis == 0 && shape.size() == 2) { // an embedding lookup
      out(n, 0, embedding(idx, x));
      return;
    }
    idx = locus::reshape(idx, {product(indexShape)});
  }
  Tensor picked = index_select(x, axis, idx);
  out(n, 0,
      picked.shape() == outShape ? picked : locus::reshape(picked, outShape));
}

void Importer::split(const NodeProto &n) {
  Shape shape = shapeOf(n, 0);
  int64_t axis =
      normalizeAxis(attrInt(n, "axis", 0), static_cast<int64_t>(shape.size()));
  auto sizes = intsFromInputOrAttr(n, 1, "split");
  int outputs = n.output_size();
  if (outputs < 1)
    fail("Split has no outputs");
  int64_t dim = shape[size_t(axis)];
  if (!sizes) {
    if (dim % outputs)
      fail("cannot split " + std::to_string(dim) + " into " +
           std::to_string(outputs) + " equal parts");
    sizes = std::vector<int64_t>(size_t(outputs), dim / outputs);
  }
  if (static_cast<int>(sizes->size()) != outputs ||
      std::accumulate(sizes->begin(), sizes->end(), int64_t(0)) != dim)
    fail("split sizes do not match the outputs or the dimension");
  Tensor x = in(n, 0);
  int64_t start = 0;
  for (int k = 0; k < outputs; ++k) {
    int64_t end = start + (*sizes)[size_t(k)];
    out(n, k, locus::slice(x, axis, start, end));
    start = end;
  }
}

void Importer::squeezeOrUnsqueeze(const NodeProto &n, bool isSqueeze) {
  Shape shape = shapeOf(n, 0);
  auto axes = intsFromInputOrAttr(n, 1, "axes");
  Shape result;
  std::vector<int64_t> from; // by result dimension: its input's, or -1
  if (isSqueeze) {
    std::vector<bool> drop(shape.size(), false);
    if (!axes) {
      for (size_t d = 0; d < shape.size(); ++d)
        drop[d] = shape[d] == 1;
    } else {
      for (int64_t a : *axes) {
        int64_t axis = normalizeAxis(a, static_cast<int64_t>(shape.size()));
        if (shape[size_t(axis)] != 1)
          fail("squeezes axis " + std::to_string(a) + " of size " +
               std::to_string(shape[size_t(axis)]));
        drop[size_t(axis)] = true;
      }
    }
    for (size_t d = 0; d < shape.size(); ++d)
      if (!drop[d]) {
        result.push_back(shape[d]);
        from.push_back(static_cast<int64_t>(d));
      }
  } else {
    if (!axes)
      fail("needs axes");
    auto rank = static_cast<int64_t>(shape.size() + axes->size());
    std::vector<bool> added(size_t(rank), false);
    for (int64_t a : *axes)
      added[size_t(normalizeAxis(a, rank))] = true;
    int64_t next = 0;
    for (int64_t d = 0; d < rank; ++d) {
      from.push_back(added[size_t(d)] ? -1 : next);
      result.push_back(added[size_t(d)] ? 1 : shape[size_t(next++)]);
    }
  }
  if (const Const *c = constOf(n, 0)) {
    Const r = *c;
    r.shape = result;
    if (!c->window.empty()) { // the windows of the dimensions kept
      r.window.clear();
      for (int64_t d : from)
        r.window.push_back(d < 0 ? "" : c->windowAt(size_t(d)));
    }
    outConst(n, 0, std::move(r));
    return;
  }
  out(n, 0, locus::reshape(in(n, 0), result));
}

void Importer::pad(const NodeProto &n) {
  std::string mode = attrString(n, "mode", "constant");
  if (mode != "constant")
    fail("mode '" + mode + "' is not supported (only constant)");
  Shape shape = shapeOf(n, 0);
  std::vector<int64_t> pads =
      opset_ >= 11 ? needConst(n, 1, "pads").ints()
                   : attrInts(n, "pads").value_or(std::vector<int64_t>{});
  double value =
      opset_ >= 11 ? (has(n, 2) ? needConst(n, 2, "constant_value").at(0) : 0.0)
                   : attrFloat(n, "value", 0.0);
  if (pads.size() != 2 * shape.size())
    fail("has " + std::to_string(pads.size()) + " pads for rank " +
         std::to_string(shape.size()));
  std::vector<int64_t> pairs; // from the last dimension, as torch's pad
  for (size_t d = shape.size(); d-- > 0;) {
    if (pads[d] < 0 || pads[d + shape.size()] < 0)
      fail("negative pads are not supported");
    pairs.push_back(pads[d]);
    pairs.push_back(pads[d + shape.size()]);
  }
  out(n, 0, locus::pad(in(n, 0), pairs, value));
}

void Importer::concat(const NodeProto &n) {
  Shape first = shapeOf(n, 0);
  int64_t axis =
      normalizeAxis(attrInt(n, "axis", 0), static_cast<int64_t>(first.size()));
  // One rank, and the same size in every dimension but the axis.
  for (int k = 1; k < n.input_size(); ++k) {
    Shape shape = shapeOf(n, k);
    bool same = shape.size() == first.size();
    for (size_t d = 0; same && d < shape.size(); ++d)
      same = int64_t(d) == axis || shape[d] == first[d];
    if (!same)
      fail("concatenates " + shapeText(first) + " and " + shapeText(shape) +
           " on axis " + std::to_string(axis) +
           ": the other dimensions must match");
  }
  bool known = true;
  for (int k = 0; k < n.input_size(); ++k)
    known &= constOf(n, k) != nullptr;
  if (known) {
    Const r;
    r.dtype = constOf(n, 0)->dtype;
    r.shape = first;
    r.shape[size_t(axis)] = 0;
    int64_t outer = product(first, 0, size_t(axis));
    for (int k = 0; k < n.input_size(); ++k) {
      const Const &c = *constOf(n, k);
      if (c.shape.size() != first.size() || c.dtype != r.dtype)
        fail("concatenates values of different ranks or types");
      r.shape[size_t(axis)] += c.shape[size_t(axis)];
    }
    for (int64_t o = 0; o < outer; ++o)
      for (int k = 0; k < n.input_size(); ++k) {
        const Const &c = *constOf(n, k);
        int64_t chunk = product(c.shape, size_t(axis));
        for (int64_t e = 0; e < chunk; ++e) {
          size_t at = size_t(o * chunk + e);
          r.append(c, at);
        }
      }
    // Windows of the other dimensions carry over; one along the axis is
    // no window of the result.
    std::vector<Const> views(size_t(n.input_size()));
    std::vector<const Const *> parts;
    for (int k = 0; k < n.input_size(); ++k) {
      const Const &c = *constOf(n, k);
      r.atBounds |= !c.windowAt(size_t(axis)).empty();
      Const &view = views[size_t(k)];
      view.shape = r.shape;
      view.window = c.window;
      if (!view.window.empty())
        view.window[size_t(axis)].clear();
      parts.push_back(&view);
    }
    broadcastWindows(r, parts);
    outConst(n, 0, std::move(r));
    return;
  }
  std::vector<Tensor> parts;
  for (int k = 0; k < n.input_size(); ++k)
    if (shapeOf(n, k)[size_t(axis)] != 0)
      parts.push_back(in(n, k));
  out(n, 0, parts.size() == 1 ? parts[0] : locus::concat(parts, axis));
}

void Importer::constantNode(const NodeProto &n) {
  const auto &a = n.attribute();
  if (a.size() != 1)
    fail("needs exactly one value attribute");
  const auto &v = a[0];
  if (v.name() == "value")
    outConst(n, 0, tensorConst(v.t()));
  else if (v.name() == "value_float")
    outConst(n, 0, Const::ofFloats({}, {v.f()}));
  else if (v.name() == "value_floats")
    outConst(n, 0,
             Const::ofFloats(
                 {v.floats_size()},
                 std::vector<double>(v.floats().begin(), v.floats().end())));
  else if (v.name() == "value_int")
    outConst(n, 0, Const::ofInts(DType::i64, {}, {v.i()}));
  else if (v.name() == "value_ints")
    outConst(
        n, 0,
        Const::ofInts(DType::i64, {v.ints_size()},
                      std::vector<int64_t>(v.ints().begin(), v.ints().end())));
  else
    fail("the value attribute '" + v.name() + "' is not supported");
}

namespace {

/// The rows of data (seen as [indexed dims, the rest]) that GatherND's and
/// ScatterND's known index tuples [..., depth] address, in order; negative
/// indices count from the end, others out of range fail.
std::vector<int64_t> indexedRows(const Const &indices, const Shape &data) {
  if (indices.shape.empty() || indices.shape.back() < 1 ||
      static_cast<size_t>(indices.shape.back()) > data.size())
    fail("indices " + shapeText(indices.shape) + " do not address data " +
         shapeText(data));
  auto depth = static_cast<size_t>(indices.shape.back());
  std::vector<int64_t> rows, at = indices.ints();
  rows.reserve(at.size() / depth);
  for (size_t u = 0; u < at.size() / depth; ++u) {
    int64_t row = 0;
    for (size_t d = 0; d < depth; ++d) {
      int64_t i = at[u * depth + d], size = data[d];
      if (i < -size || i >= size)
        fail("index " + std::to_string(i) + " is out of range for dimension " +
             std::to_string(d) + " of data " + shapeText(data));
      row = row * size + (i < 0 ? i + size : i);
    }
    rows.push_back(row);
  }
  return rows;
}

/// The shape GatherND gives and ScatterND's updates have: the index
/// tuples' leading shape, then data's dimensions past the indexed ones
/// (indexedRows checked the depth).
Shape tupleRowsShape(const Const &indices, const Shape &data) {
  auto depth = static_cast<size_t>(indices.shape.back());
  Shape shape(indices.shape.begin(), indices.shape.end() - 1);
  shape.insert(shape.end(), data.begin() + static_cast<long>(depth),
               data.end());
  return shape;
}

} // namespace

void Importer::scatterNd(Graph &g, const NodeProto &n) {
  std::string reduction = attrString(n, "reduction", "none");
  if (reduction != "none")
    fail("reduction '" + reduction + "' is not supported (only 'none')");
  Shape dataShape = shapeOf(n, 0), updateShape = shapeOf(n, 2);
  const Const &indices = needConst(n, 1, "the indices");
  std::vector<int64_t> rows = indexedRows(indices, dataShape);
  auto depth = static_cast<size_t>(indices.shape.back());
  Shape want = tupleRowsShape(indices, dataShape);
  if (want != updateShape)
    fail("updates " + shapeText(updateShape) + " must have shape " +
         shapeText(want) + " for indices " + shapeText(indices.shape) +
         " into data " + shapeText(dataShape));
  // source[k]: which element of the updates lands at data element k, or
  // -1; later updates win, as ONNX's reference writes them in order.
  int64_t slice = product(dataShape, depth);
  std::vector<int64_t> source(static_cast<size_t>(product(dataShape)), -1);
  for (size_t u = 0; u < rows.size(); ++u)
    for (int64_t e = 0; e < slice; ++e)
      source[static_cast<size_t>(rows[u] * slice + e)] =
          static_cast<int64_t>(u) * slice + e;
  const Const *data = constOf(n, 0), *updates = constOf(n, 2);
  if (!data || !updates)
    for (int k : {0, 2})
      for (const InputDim &d : locus::dynamic_shape(in(n, k)))
        if (d.dynamic)
          fail("data and updates with dynamic sizes are not supported");
  if (data && updates && data->dtype == updates->dtype) {
    Const r;
    r.dtype = data->dtype;
    r.shape = dataShape;
    for (size_t k = 0; k < source.size(); ++k)
      if (source[k] < 0)
        r.append(*data, k);
      else
        r.append(*updates, static_cast<size_t>(source[k]));
    r.atBounds |= data->dynamic() || updates->dynamic();
    outConst(n, 0, std::move(r));
    return;
  }
  Tensor x = in(n, 0), u = in(n, 2);
  if (x.dtype() != u.dtype())
    fail("data and updates must have one element type");
  // One gather from the data and the updates side by side.
  auto numel = static_cast<int64_t>(source.size());
  for (size_t k = 0; k < source.size(); ++k)
    source[k] = source[k] < 0 ? static_cast<int64_t>(k) : numel + source[k];
  Tensor both = locus::concat(
      {locus::reshape(x, {numel}), locus::reshape(u, {product(want)})}, 0);
  Tensor picked = index_select(both, 0, g.constantI64({numel}, source));
  out(n, 0, locus::reshape(picked, dataShape));
}

void Importer::gatherNd(Graph &g, const NodeProto &n) {
  if (attrInt(n, "batch_dims", 0) != 0)
    fail("batch_dims other than 0 are not supported");
  Shape dataShape = shapeOf(n, 0);
  const Const &indices = needConst(n, 1, "the indices");
  // Each index tuple picks one row of data seen as [rows, slice].
  std::vector<int64_t> rows = indexedRows(indices, dataShape);
  auto depth = static_cast<size_t>(indices.shape.back());
  Shape outShape = tupleRowsShape(indices, dataShape);
  Tensor flat = locus::reshape(
      in(n, 0), {product(dataShape, 0, depth), product(dataShape, depth)});
  Tensor picked = index_select(
      flat, 0, g.constantI64({static_cast<int64_t>(rows.size())}, rows));
  out(n, 0, locus::reshape(picked, outShape));
}

void Importer::depthToSpace(const NodeProto &n, bool toSpace) {
  Shape s = shapeOf(n, 0);
  int64_t b = attrInt(n, "blocksize", 0);
  if (s.size() != 4 || b < 1)
    fail("needs an NCHW input and a positive blocksize");
  int64_t c = s[1], h = s[2], w = s[3];
  Tensor x = in(n, 0);
  if (toSpace) { // DepthToSpace
    if (c % (b * b))
      fail("channels " + std::to_string(c) + " are not a multiple of " +
           std::to_string(b * b));
    bool crd = attrString(n, "mode", "DCR") == "CRD";
    x = crd ? permute(locus::reshape(x, {s[0], c / (b * b), b, b, h, w}),
                      {0, 1, 4, 2, 5, 3})
            : permute(locus::reshape(x, {s[0], b, b, c / (b * b), h, w}),
                      {0, 3, 4, 1, 5, 2});
    out(n, 0, locus::reshape(x, {s[0], c / (b * b), h * b, w * b}));
    return;
  }
  if (h % b || w % b)
    fail("height and width " + shapeText({h, w}) + " are not multiples of " +
         std::to_string(b));
  x = permute(locus::reshape(x, {s[0], c, h / b, b, w / b, b}),
              {0, 3, 5, 1, 2, 4});
  out(n, 0, locus::reshape(x, {s[0], c * b * b, h / b, w / b}));
}

void Importer::tile(const NodeProto &n) {
  Shape shape = shapeOf(n, 0);
  std::vector<int64_t> repeats = needConst(n, 1, "repeats").ints();
  if (repeats.size() != shape.size())
    fail("repeats " + shapeText(repeats) +
         " must have one entry per "
         "dimension of " +
         shapeText(shape));
  Shape outShape = shape;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (repeats[d] < 1)
      fail("repeats must be positive, got " + shapeText(repeats));
    outShape[d] *= repeats[d];
  }
  if (const Const *c = constOf(n, 0)) {
    Const r;
    r.dtype = c->dtype;
    r.shape = outShape;
    for (size_t k = 0; k < static_cast<size_t>(product(outShape)); ++k) {
      size_t rem = k, index = 0, stride = 1;
      for (size_t d = shape.size(); d-- > 0;) {
        size_t coord = rem % size_t(outShape[d]) % size_t(shape[d]);
        rem /= size_t(outShape[d]);
        index += coord * stride;
        stride *= size_t(shape[d]);
      }
      r.append(*c, index);
    }
    r.atBounds = c->dynamic();
    outConst(n, 0, std::move(r));
    return;
  }
  // Each repeated axis: a new axis of `repeats` before it, broadcast, and
  // the two merged (block after block of the whole axis).
  Tensor x = in(n, 0);
  for (size_t d = 0; d < shape.size(); ++d) {
    if (repeats[d] == 1)
      continue;
    Shape current = x.shape(), wide = current;
    x = unsqueeze(x, static_cast<int64_t>(d));
    wide.insert(wide.begin() + static_cast<long>(d), repeats[d]);
    current[d] *= repeats[d];
    x = locus::reshape(expand(x, wide), current);
  }
  out(n, 0, x);
}

void Importer::oneHot(Graph &g, const NodeProto &n) {
  const Const &depthConst = needConst(n, 1, "the depth");
  if (depthConst.numel() != 1 || depthConst.at(0) < 1)
    fail("the depth must be one positive number");
  auto depth = static_cast<int64_t>(depthConst.at(0));
  Shape shape = shapeOf(n, 0);
  auto rank = static_cast<int64_t>(shape.size()) + 1;
  int64_t axis = normalizeAxis(attrInt(n, "axis", -1), rank);
  // In f32 (exact below 2^24): negative indices count from the end, and an
  // index out of range matches no class (all off), as ONNX says.
  Tensor f = in(n, 0);
  if (f.dtype() != DType::f32)
    f = cast(f, DType::f32);
  f = where(lt(f, g.full({}, 0.0)),
            add(f, g.full({}, static_cast<double>(depth))), f);
  std::vector<float> classes(static_cast<size_t>(depth));
  for (size_t k = 0; k < classes.size(); ++k)
    classes[k] = static_cast<float>(k);
  Shape classShape(static_cast<size_t>(rank), 1);
  classShape[static_cast<size_t>(axis)] = depth;
  Tensor hot = eq(unsqueeze(f, axis), g.constant(classShape, classes));
  Tensor values = in(n, 2);
  if (values.numel() != 2)
    fail("values must hold [off, on]");
  Tensor off = locus::reshape(locus::slice(values, 0, 0, 1), {});
  Tensor on = locus::reshape(locus::slice(values, 0, 1, 2), {});
  out(n, 0, where(hot, on, off));
}

void Importer::addShapeHandlers(Handlers &t) {
  t["Flatten"] = [](Importer &im, Graph &, const NodeProto &n) {
    im.reshape(n);
  };
  t["Reshape"] = [](Importer &im, Graph &, const NodeProto &n) {
    im.reshape(n);
  };
  t["Transpose"] = [](Importer &im, Graph &, const NodeProto &n) {
    Shape shape = im.shapeOf(n, 0);
    auto rank = static_cast<int64_t>(shape.size());
    std::vector<int64_t> perm;
    for (int64_t d = rank - 1; d >= 0; --d)
      perm.push_back(d);
    perm = attrInts(n, "perm").value_or(perm);
    if (const Const *c = im.constOf(n, 0)) {
      im.outConst(n, 0, transposeConst(*c, perm));
      return;
    }
    im.out(n, 0, permute(im.in(n, 0), perm));
  };
  t["Concat"] = [](Importer &im, Graph &, const NodeProto &n) { im.concat(n); };
  t["Split"] = [](Importer &im, Graph &, const NodeProto &n) { im.split(n); };
  t["Slice"] = [](Importer &im, Graph &, const NodeProto &n) { im.slice(n); };
  t["Gather"] = [](Importer &im, Graph &g, const NodeProto &n) {
    im.gather(g, n);
  };
  t["ScatterND"] = [](Importer &im, Graph &g, const NodeProto &n) {
    im.scatterNd(g, n);
  };
  t["GatherND"] = [](Importer &im, Graph &g, const NodeProto &n) {
    im.gatherNd(g, n);
  };
  t["DepthToSpace"] = [](Importer &im, Graph &, const NodeProto &n) {
    im.depthToSpace(n, true);
  };
  t["SpaceToDepth"] = [](Importer &im, Graph &, const NodeProto &n) {
    im.depthToSpace(n, false);
  };
  t["Tile"] = [](Importer &im, Graph &, const NodeProto &n) { im.tile(n); };
  t["OneHot"] = [](Importer &im, Graph &g, const NodeProto &n) {
    im.oneHot(g, n);
  };
  t["GatherElements"] = [](Importer &im, Graph &g, const NodeProto &n) {
    // torch.gather, once negative indices (ONNX allows [-n, n)) count from
    // the end.
    Shape shape = im.shapeOf(n, 0);
    int64_t axis = normalizeAxis(attrInt(n, "axis", 0),
                                 static_cast<int64_t>(shape.size()));
    int64_t extent = shape[static_cast<size_t>(axis)];
    Tensor index;
    if (const Const *c = im.constOf(n, 1)) {
      std::vector<int64_t> values = c->ints();
      for (int64_t &v : values)
        v = v < 0 ? v + extent : v;
      index = g.constantI64(c->shape, values);
    } else {
      // In f32 (exact below 2^24), where the arithmetic is.
      Tensor f = cast(im.in(n, 1), DType::f32);
      index = cast(where(lt(f, g.full({}, 0.0)),
                         add(f, g.full({}, static_cast<double>(extent))), f),
                   DType::i64);
    }
    im.out(n, 0, locus::gather(im.in(n, 0), axis, index));
  };
  t["Squeeze"] = [](Importer &im, Graph &, const NodeProto &n) {
    im.squeezeOrUnsqueeze(n, true);
  };
  t["Unsqueeze"] = [](Importer &im, Graph &, const NodeProto &n) {
    im.squeezeOrUnsqueeze(n, false);
  };
  t["Expand"] = [](Importer &im, Graph &, const NodeProto &n) {
    const Const &to = im.needConst(n, 1, "the shape");
    Shape in = im.shapeOf(n, 0);
    Shape target = broadcastShapes(in, to.ints());
    // Where the input is broadcast to a dynamic size, a run takes the
    // window of the expansion at the bound.
    std::vector<std::string> window(target.size());
    for (size_t d = 0; d < target.size(); ++d) {
      size_t fromEnd = target.size() - 1 - d;
      bool broadcast = fromEnd >= in.size() || in[in.size() - 1 - fromEnd] == 1;
      if (broadcast && fromEnd < size_t(to.numel()))
        window[d] = to.symAt(size_t(to.numel()) - 1 - fromEnd);
    }
    bool windowed =
        std::any_of(window.begin(), window.end(),
                    [](const std::string &w) { return !w.empty(); });
    if (const Const *c = im.constOf(n, 0)) {
      Const r;
      r.dtype = c->dtype;
      r.shape = target;
      for (size_t k = 0; k < static_cast<size_t>(product(target)); ++k) {
        size_t at = c->broadcastIndex(target, k);
        r.append(*c, at);
      }
      broadcastWindows(r, {c});
      r.atBounds |= to.atBounds;
      if (windowed) {
        r.window.resize(target.size());
        for (size_t d = 0; d < target.size(); ++d)
          if (!window[d].empty())
            r.window[d] = window[d];
      }
      im.outConst(n, 0, std::move(r));
      return;
    }
    if (to.atBounds)
      fail("expands to a shape computed from a dynamic size other than "
           "the size itself");
    Tensor x = expand(im.in(n, 0), target);
    im.out(n, 0, windowed ? im.windowTo(x, window) : x);
  };
  t["Trilu"] = [](Importer &im, Graph &, const NodeProto &n) {
    int64_t k = im.has(n, 1) ? im.needConst(n, 1, "k").ints()[0] : 0;
    bool upper = attrInt(n, "upper", 1) != 0;
    if (const Const *c = im.constOf(n, 0)) {
      // Folded, windows kept: the top-left block of a triangle is the
      // triangle of the block (a causal mask built at the bound).
      if (c->shape.size() < 2)
        fail("Trilu needs a matrix");
      Const r = *c;
      int64_t rows = c->shape[c->shape.size() - 2], cols = c->shape.back();
      for (int64_t e = 0; e < c->numel(); ++e) {
        int64_t i = (e / cols) % rows, j = e % cols;
        if (upper ? j - i >= k : j - i <= k)
          continue;
        if (r.isFloat())
          r.f[size_t(e)] = 0;
        else
          r.i[size_t(e)] = 0;
      }
      im.outConst(n, 0, std::move(r));
      return;
    }
    Tensor x = im.in(n, 0);
    im.out(n, 0, upper ? triu(x, k) : tril(x, k));
  };
  t["Pad"] = [](Importer &im, Graph &, const NodeProto &n) { im.pad(n); };
  t["Resize"] = [](Importer &im, Graph &g, const NodeProto &n) {
    im.resize(g, n, /*upsample=*/false);
  };
  t["Upsample"] = [](Importer &im, Graph &g, const NodeProto &n) {
    im.resize(g, n, /*upsample=*/true);
  };
  t["CumSum"] = [](Importer &im, Graph &g, const NodeProto &n) {
    im.cumsum(g, n);
  };
}

void Importer::addConstantHandlers(Handlers &t) {
  t["Shape"] = [](Importer &im, Graph &, const NodeProto &n) {
    Shape shape = im.shapeOf(n, 0);
    auto rank = static_cast<int64_t>(shape.size());
    auto clampAxis = [&](int64_t a) {
      return std::clamp<int64_t>(a < 0 ? a + rank : a, 0, rank);
    };
    int64_t start = clampAxis(attrInt(n, "start", 0));
    int64_t end = clampAxis(attrInt(n, "end", rank));
    std::vector<int64_t> dims(shape.begin() + start,
                              shape.begin() + std::max(start, end));
    Const r = Const::ofInts(DType::i64, {int64_t(dims.size())}, dims);
    // Which dimensions are dynamic sizes: a run's Shape gives its sizes.
    std::vector<std::string> names = im.dimNames(n, 0);
    for (int64_t d = start; d < std::max(start, end); ++d) {
      const std::string &name = names[size_t(d)];
      if (name.find('*') != std::string::npos) // a product of sizes
        r.atBounds = true;
      else
        r.setSym(size_t(d - start), name);
    }
    im.outConst(n, 0, std::move(r));
  };
  t["Size"] = [](Importer &im, Graph &, const NodeProto &n) {
    im.outConst(n, 0,
                Const::ofInts(DType::i64, {}, {product(im.shapeOf(n, 0))}));
  };
  t["Constant"] = [](Importer &im, Graph &, const NodeProto &n) {
    im.constantNode(n);
  };
  t["ConstantOfShape"] = [](Importer &im, Graph &, const NodeProto &n) {
    const Const &shapeConst = im.needConst(n, 0, "the shape");
    if (shapeConst.atBounds)
      fail("the shape is computed from a dynamic size other than the size "
           "itself");
    Shape shape = shapeConst.ints();
    Const fill = Const::ofFloats({}, {0.0});
    if (const auto *v = attr(n, "value"))
      fill = im.tensorConst(v->t());
    if (fill.numel() != 1)
      fail("value must hold one element");
    Const r;
    r.dtype = fill.dtype;
    r.shape = shape;
    auto count = static_cast<size_t>(product(shape));
    if (r.isFloat())
      r.f.assign(count, fill.f[0]);
    else
      r.i.assign(count, fill.i[0]);
    // Built at the bounds; a run takes its sizes' window.
    if (shapeConst.dynamic()) {
      r.window.assign(shape.size(), "");
      for (size_t d = 0; d < shape.size(); ++d)
        r.window[d] = shapeConst.symAt(d);
    }
    im.outConst(n, 0, std::move(r));
  };
  t["Range"] = [](Importer &im, Graph &, const NodeProto &n) {
    const Const &start = im.needConst(n, 0, "start"),
                &limit = im.needConst(n, 1, "limit"),
                &delta = im.needConst(n, 2, "delta");
    double s = start.at(0), l = limit.at(0), d = delta.at(0);
    if (d == 0)
      fail("delta is 0");
    // Range(0, size, 1) of a dynamic size: 0..bound-1, whose window of the
    // size a run takes (the positions of a sequence).
    std::string size = limit.symAt(0);
    if (start.dynamic() || delta.dynamic() || limit.atBounds ||
        (!size.empty() && (s != 0 || d != 1)))
      fail("a Range over a dynamic size other than Range(0, size, 1)");
    auto count = static_cast<int64_t>(std::max(std::ceil((l - s) / d), 0.0));
    Const r;
    r.dtype = start.dtype;
    r.shape = {count};
    for (int64_t k = 0; k < count; ++k) {
      double v = s + static_cast<double>(k) * d;
      if (r.isFloat())
        r.f.push_back(static_cast<float>(v));
      else
        r.i.push_back(static_cast<int64_t>(v));
    }
    if (!size.empty())
      r.window = {size};
    im.outConst(n, 0, std::move(r));
  };
}

} // namespace locus::onnx_import
