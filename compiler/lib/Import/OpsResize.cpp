//===- OpsResize.cpp - Resize, Upsample and CumSum ------------------------===//
//
// ONNX's Resize (opsets 10-17) and Upsample (7-9), nearest and linear, as
// gathers along each resized axis: shapes and scales are known while
// importing, so each output index's source indices and weights are
// constants, computed here in double precision as ONNX's reference does.
// Linear interpolation is separable: an N-d resize is one 1-d resize per
// axis. Cubic, tf_crop_and_resize and antialiasing are refused by name.
// CumSum is a scan of shifted adds along its axis.
//
//===----------------------------------------------------------------------===//

#include "Importer.h"

#include <algorithm>
#include <cmath>
#include <initializer_list>

using namespace locus;
using namespace locus::onnx_import;

namespace {

/// How an output index maps to an input coordinate
/// (coordinate_transformation_mode). As ONNX's reference, the resized
/// length is the input's times the scale, before the output size is
/// rounded down.
double sourceCoordinate(const std::string &mode, int64_t o, double scale,
                        int64_t in) {
  auto x = static_cast<double>(o);
  double out = static_cast<double>(in) * scale;
  if (mode == "half_pixel")
    return (x + 0.5) / scale - 0.5;
  if (mode == "pytorch_half_pixel")
    return out > 1 ? (x + 0.5) / scale - 0.5 : 0.0;
  if (mode == "align_corners")
    return out == 1 ? 0.0 : x * static_cast<double>(in - 1) / (out - 1);
  if (mode == "asymmetric")
    return x / scale;
  // tf_half_pixel_for_nn (checked by the caller)
  return (x + 0.5) / scale;
}

/// A coordinate rounded to an index as nearest_mode says, then clamped.
int64_t nearestIndex(const std::string &mode, double x, int64_t in) {
  double r;
  if (mode == "floor")
    r = std::floor(x);
  else if (mode == "ceil")
    r = std::ceil(x);
  else if (x - std::floor(x) == 0.5)
    r = mode == "round_prefer_ceil" ? std::ceil(x) : std::floor(x);
  else
    r = std::round(x);
  return std::clamp<int64_t>(static_cast<int64_t>(r), 0, in - 1);
}

/// Whether `s` is one of `names`.
bool oneOf(const std::string &s, std::initializer_list<const char *> names) {
  return std::any_of(names.begin(), names.end(),
                     [&](const char *name) { return s == name; });
}

/// The scale of each axis as floats of constant input `c`.
std::vector<double> floatsOf(const Const &c) {
  std::vector<double> out(static_cast<size_t>(c.numel()));
  for (size_t k = 0; k < out.size(); ++k)
    out[k] = c.at(k);
  return out;
}

} // namespace

void Importer::resize(Graph &g, const NodeProto &n, bool upsample) {
  Shape shape = shapeOf(n, 0);
  size_t rank = shape.size();
  std::string mode = attrString(n, "mode", "nearest");
  if (mode != "nearest" && mode != "linear")
    fail("mode '" + mode + "' is not supported (nearest and linear are)");
  bool legacy = upsample || opset_ < 11; // Upsample and Resize-10
  std::vector<double> scales;
  Shape outShape;
  if (upsample && opset_ < 9) {
    const auto *a = attr(n, "scales");
    if (!a)
      fail("Upsample needs its scales attribute");
    scales.assign(a->floats().begin(), a->floats().end());
  } else if (legacy) {
    scales = floatsOf(needConst(n, 1, "the scales"));
  } else if (has(n, 3) && needConst(n, 3, "the sizes").numel() > 0) {
    outShape = needConst(n, 3, "the sizes").ints();
  } else {
    scales = floatsOf(needConst(n, 2, "the scales"));
  }
  if (outShape.empty()) {
    if (scales.size() != rank)
      fail("scales has " + std::to_string(scales.size()) +
           " entries for an input of rank " + std::to_string(rank));
    for (size_t d = 0; d < rank; ++d) {
      if (!(scales[d] > 0))
        fail("scales must be positive");
      outShape.push_back(static_cast<int64_t>(
          std::floor(static_cast<double>(shape[d]) * scales[d])));
    }
  } else {
    if (outShape.size() != rank)
      fail("sizes has " + std::to_string(outShape.size()) +
           " entries for an input of rank " + std::to_string(rank));
    for (size_t d = 0; d < rank; ++d)
      scales.push_back(static_cast<double>(outShape[d]) /
                       static_cast<double>(shape[d]));
  }
  std::string coordinates =
      legacy ? "asymmetric"
             : attrString(n, "coordinate_transformation_mode", "half_pixel");
  if (coordinates == "tf_crop_and_resize")
    fail("coordinate_transformation_mode 'tf_crop_and_resize' is not "
         "supported");
  if (!oneOf(coordinates, {"half_pixel", "pytorch_half_pixel", "align_corners",
                           "asymmetric", "tf_half_pixel_for_nn"}))
    fail("unknown coordinate_transformation_mode '" + coordinates + "'");
  std::string rounding =
      legacy ? "floor" : attrString(n, "nearest_mode", "round_prefer_floor");
  if (!oneOf(rounding,
             {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"}))
    fail("unknown nearest_mode '" + rounding + "'");
  Tensor x = in(n, 0);
  if (mode == "linear" && x.dtype() != DType::f32)
    fail("linear resize needs a float input");
  Shape current = shape;
  for (size_t d = 0; d < rank; ++d) {
    int64_t inSize = shape[d], outSize = outShape[d];
    if (outSize <= 0)
      fail("the output would have no elements along axis " + std::to_string(d));
    if (inSize == outSize && scales[d] == 1.0)
      continue;
    auto axis = static_cast<int64_t>(d);
    current[d] = outSize;
    std::vector<int64_t> lo, hi;
    std::vector<float> wLo, wHi;
    for (int64_t o = 0; o < outSize; ++o) {
      double c = sourceCoordinate(coordinates, o, scales[d], inSize);
      if (mode == "nearest") {
        lo.push_back(nearestIndex(rounding, c, inSize));
        continue;
      }
      double f = std::floor(c);
      auto i0 = static_cast<int64_t>(f);
      lo.push_back(std::clamp<int64_t>(i0, 0, inSize - 1));
      hi.push_back(std::clamp<int64_t>(i0 + 1, 0, inSize - 1));
      wHi.push_back(static_cast<float>(c - f));
      wLo.push_back(static_cast<float>(1.0 - (c - f)));
    }
    Tensor a = index_select(x, axis, g.constantI64({outSize}, lo));
    if (mode == "nearest") {
      x = a;
      continue;
    }
    Tensor b = index_select(x, axis, g.constantI64({outSize}, hi));
    Shape weightShape(rank, 1);
    weightShape[d] = outSize;
    x = a * expand(g.constant(weightShape, wLo), current) +
        b * expand(g.constant(weightShape, wHi), current);
  }
  out(n, 0, x);
}

void Importer::cumsum(Graph &g, const NodeProto &n) {
  Tensor x = in(n, 0);
  Shape shape = shapeOf(n, 0);
  auto rank = static_cast<int64_t>(shape.size());
  const Const &axisConst = needConst(n, 1, "the axis");
  if (axisConst.numel() != 1)
    fail("the axis must hold one value");
  int64_t axis = normalizeAxis(axisConst.ints()[0], rank);
  bool exclusive = attrInt(n, "exclusive", 0) != 0;
  bool reverse = attrInt(n, "reverse", 0) != 0;
  int64_t length = shape[static_cast<size_t>(axis)];
  // `t` moved `by` places along the axis (toward its end, or its start
  // when reversed), zeros where nothing moved in.
  auto shifted = [&](const Tensor &t, int64_t by) {
    Shape zeroShape = shape;
    zeroShape[static_cast<size_t>(axis)] = std::min(by, length);
    Tensor zeros = g.full(zeroShape, 0.0, t.dtype());
    if (by >= length)
      return zeros;
    return reverse
               ? locus::concat({locus::slice(t, axis, by, length), zeros}, axis)
               : locus::concat({zeros, locus::slice(t, axis, 0, length - by)},
                               axis);
  };
  // Hillis and Steele's scan: log2(length) shifted adds, each element the
  // sum of the 2^k before it after step k.
  for (int64_t by = 1; by < length; by *= 2)
    x = x + shifted(x, by);
  out(n, 0, exclusive ? shifted(x, 1) : x);
}
