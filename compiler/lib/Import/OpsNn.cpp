//===- OpsNn.cpp - ONNX neural-network ops --------------------------------===//
//
// Convolution and pooling (2-D, with ONNX's explicit or automatic padding),
// Gemm and MatMul, BatchNormalization and LayerNormalization, Dropout and
// Identity, reductions, Softmax and LogSoftmax, ArgMax, TopK.
//
//===----------------------------------------------------------------------===//

#include "Importer.h"

#include <limits>

namespace locus::onnx_import {

namespace {

/// The begin and end padding of one spatial dimension under `autoPad`.
std::pair<int64_t, int64_t> autoPadding(const std::string &autoPad,
                                        int64_t size, int64_t kernel,
                                        int64_t stride, int64_t dilation) {
  if (autoPad == "VALID")
    return {0, 0};
  int64_t out = (size + stride - 1) / stride;
  int64_t total = std::max<int64_t>(
      (out - 1) * stride + (kernel - 1) * dilation + 1 - size, 0);
  int64_t small = total / 2;
  return autoPad == "SAME_LOWER" ? std::pair{total - small, small}
                                 : std::pair{small, total - small};
}

/// The largest kernel size, stride and dilation a node may give.
constexpr int64_t kMaxWindow = int64_t(1) << 24;

/// Automatic padding divides by the strides and multiplies by the
/// dilations: out of range, they are the model's error, not a crash.
void checkWindows(const std::vector<int64_t> &kernel,
                  const std::vector<int64_t> &strides,
                  const std::vector<int64_t> &dilations) {
  for (const auto *v : {&kernel, &strides, &dilations})
    for (int64_t k : *v)
      if (k < 1 || k > kMaxWindow)
        fail("kernel_shape, strides and dilations must be in [1, " +
             std::to_string(kMaxWindow) + "], got " + std::to_string(k));
}

/// Spatial pads of a conv or pool node over kernel.size() dimensions:
/// [top, left, bottom, right] for 2-D, [begin, end] for 1-D.
std::vector<int64_t> spatialPads(const NodeProto &n, const Shape &input,
                                 const std::vector<int64_t> &kernel,
                                 const std::vector<int64_t> &strides,
                                 const std::vector<int64_t> &dilations) {
  checkWindows(kernel, strides, dilations);
  std::string autoPad;
  for (const auto &a : n.attribute())
    if (a.name() == "auto_pad")
      autoPad = a.s();
  size_t rank = kernel.size();
  std::vector<int64_t> pads(2 * rank, 0);
  if (autoPad == "NOTSET" || autoPad.empty()) {
    for (const auto &a : n.attribute())
      if (a.name() == "pads") {
        if (static_cast<size_t>(a.ints_size()) != 2 * rank)
          fail("has " + std::to_string(a.ints_size()) + " pads; a " +
               std::to_string(rank) + "-D op takes " +
               std::to_string(2 * rank));
        pads.assign(a.ints().begin(), a.ints().end());
      }
  } else {
    for (size_t d = 0; d < rank; ++d) {
      auto [begin, end] = autoPadding(autoPad, input[2 + d], kernel[d],
                                      strides[d], dilations[d]);
      pads[d] = begin;
      pads[rank + d] = end;
    }
  }
  for (int64_t p : pads)
    if (p < 0)
      fail("has negative pads");
  return pads;
}

} // namespace

void Importer::conv(const NodeProto &n) {
  Shape xs = shapeOf(n, 0), ws = shapeOf(n, 1);
  if (xs.size() != 4 || ws.size() != 4)
    fail("Locus imports 2-D convolutions (input rank 4); this one has input " +
         shapeText(xs) + " and weight " + shapeText(ws));
  std::vector<int64_t> kernel =
      attrInts(n, "kernel_shape").value_or(std::vector<int64_t>{ws[2], ws[3]});
  std::vector<int64_t> strides =
      attrInts(n, "strides").value_or(std::vector<int64_t>{1, 1});
  std::vector<int64_t> dilations =
      attrInts(n, "dilations").value_or(std::vector<int64_t>{1, 1});
  if (kernel.size() != 2 || strides.size() != 2 || dilations.size() != 2)
    fail("kernel_shape, strides and dilations must have 2 entries");
  std::vector<int64_t> pads = spatialPads(n, xs, kernel, strides, dilations);
  Tensor x = in(n, 0);
  Conv2dParams params;
  params.stride = strides;
  params.dilation = dilations;
  params.groups = attrInt(n, "group", 1);
  if (pads[0] == pads[2] && pads[1] == pads[3]) {
    params.padding = {pads[0], pads[1]};
  } else {
    x = locus::pad(x, {pads[1], pads[3], pads[0], pads[2]});
    params.padding = {0, 0};
  }
  out(n, 0, conv2d(x, in(n, 1), has(n, 2) ? in(n, 2) : Tensor(), params));
}

void Importer::convTranspose(const NodeProto &n) {
  Shape xs = shapeOf(n, 0), ws = shapeOf(n, 1);
  if ((xs.size() != 3 && xs.size() != 4) || ws.size() != xs.size())
    fail("Locus imports 1-D and 2-D transposed convolutions (input rank 3 "
         "or 4); this one has input " +
         shapeText(xs) + " and weight " + shapeText(ws));
  size_t rank = xs.size() - 2;
  Shape kernelDefault(ws.begin() + 2, ws.end());
  auto sizes = [&](const char *name, int64_t fill) {
    std::vector<int64_t> v =
        attrInts(n, name).value_or(std::vector<int64_t>(rank, fill));
    if (v.size() != rank)
      fail(std::string(name) + " must have " + std::to_string(rank) +
           " entries");
    return v;
  };
  std::vector<int64_t> kernel =
      attrInts(n, "kernel_shape").value_or(kernelDefault);
  std::vector<int64_t> strides = sizes("strides", 1),
                       dilations = sizes("dilations", 1),
                       extra = sizes("output_padding", 0);
  if (kernel != kernelDefault)
    fail("kernel_shape " + shapeText(kernel) + " differs from the weight's " +
         shapeText(kernelDefault));
  checkWindows(kernel, strides, dilations);
  for (int64_t e : extra)
    if (e < 0 || e >= kMaxWindow)
      fail("output_padding must be in [0, " + std::to_string(kMaxWindow) +
           "), got " + std::to_string(e));
  std::vector<int64_t> pads(2 * rank, 0);
  std::string autoPad = attrString(n, "auto_pad", "NOTSET");
  std::optional<std::vector<int64_t>> outShape = attrInts(n, "output_shape");
  // The sizes the padding is computed from, bounded so that it cannot
  // overflow (with windows of at most 2^24).
  constexpr int64_t kMaxExtent = int64_t(1) << 32;
  if (outShape && outShape->size() != rank && outShape->size() != rank + 2)
    fail("output_shape must have " + std::to_string(rank) + " or " +
         std::to_string(rank + 2) + " entries, has " +
         std::to_string(outShape->size()));
  if (outShape || (autoPad != "NOTSET" && autoPad != "VALID")) {
    // The padding that gives the asked size (the input's times the stride
    // for SAME_*), split as ONNX says: the odd one after for SAME_UPPER.
    for (size_t d = 0; d < rank; ++d) {
      int64_t in = xs[2 + d];
      if (in < 0 || in > kMaxExtent)
        fail("input size " + std::to_string(in) + " is out of range [0, " +
             std::to_string(kMaxExtent) + "]");
      int64_t want =
          outShape ? (*outShape)[outShape->size() - rank + d] : in * strides[d];
      if (outShape && (want < 0 || want > kMaxExtent))
        fail("output_shape entry " + std::to_string(want) +
             " is out of range [0, " + std::to_string(kMaxExtent) + "]");
      int64_t total = strides[d] * (in - 1) + extra[d] +
                      (kernel[d] - 1) * dilations[d] + 1 - want;
      if (total < 0) { // rows after the whole result: output padding
        extra[d] -= total;
        total = 0;
      }
      bool lower = autoPad != "SAME_UPPER"; // as the spec: NOTSET too
      pads[d] = lower ? total - total / 2 : total / 2;
      pads[rank + d] = lower ? total / 2 : total - total / 2;
    }
  } else if (auto given = attrInts(n, "pads")) {
    if (given->size() != 2 * rank)
      fail("has " + std::to_string(given->size()) + " pads; takes " +
           std::to_string(2 * rank));
    pads = *given;
  }
  Tensor x = in(n, 0), w = in(n, 1);
  ConvTranspose2dParams params{strides, pads, extra, dilations,
                               attrInt(n, "group", 1)};
  // A 1-D one is a 2-D one over a height of 1.
  if (rank == 1) {
    x = unsqueeze(x, 2);
    w = unsqueeze(w, 2);
    params = {{1, strides[0]},
              {0, pads[0], 0, pads[1]},
              {0, extra[0]},
              {1, dilations[0]},
              params.groups};
  }
  Tensor y = conv_transpose2d(x, w, has(n, 2) ? in(n, 2) : Tensor(), params);
  out(n, 0, rank == 1 ? squeeze(y, 2) : y);
}

void Importer::pool(const NodeProto &n, bool max) {
  Shape xs = shapeOf(n, 0);
  if (xs.size() != 3 && xs.size() != 4)
    fail("Locus imports 1-D and 2-D pooling (input rank 3 or 4); the input "
         "is " +
         shapeText(xs));
  size_t rank = xs.size() - 2;
  if (n.output_size() > 1 && !n.output(1).empty())
    fail("the Indices output is not supported");
  auto kernel = attrInts(n, "kernel_shape");
  if (!kernel || kernel->size() != rank)
    fail("needs a kernel_shape of " + std::to_string(rank) + " entries");
  std::vector<int64_t> strides =
      attrInts(n, "strides").value_or(std::vector<int64_t>(rank, 1));
  std::vector<int64_t> dilations =
      attrInts(n, "dilations").value_or(std::vector<int64_t>(rank, 1));
  if (strides.size() != rank)
    fail("needs " + std::to_string(rank) + " strides");
  if (dilations != std::vector<int64_t>(rank, 1))
    fail("dilations other than 1 are not supported");
  std::vector<int64_t> pads = spatialPads(n, xs, *kernel, strides, dilations);
  Tensor x = in(n, 0);
  Pool2dParams params{*kernel, strides, pads, attrInt(n, "ceil_mode", 0) != 0,
                      max || attrInt(n, "count_include_pad", 0) != 0};
  // A 1-D pool is a 2-D one over a height of 1.
  if (rank == 1) {
    x = unsqueeze(x, 2);
    params.kernelSize.insert(params.kernelSize.begin(), 1);
    params.stride.insert(params.stride.begin(), 1);
    params.padding = {0, pads[0], 0, pads[1]};
  }
  // Symmetric padding of at most half the kernel is the op's own.
  std::vector<int64_t> &p = params.padding;
  if (p[0] == p[2] && p[1] == p[3] && 2 * p[0] <= params.kernelSize[0] &&
      2 * p[1] <= params.kernelSize[1])
    p = {p[0], p[1]};
  Tensor y = max ? max_pool2d(x, params) : avg_pool2d(x, params);
  out(n, 0, rank == 1 ? squeeze(y, 2) : y);
}

void Importer::reduce(const NodeProto &n, const std::string &op) {
  Shape shape = shapeOf(n, 0);
  auto rank = static_cast<int64_t>(shape.size());
  std::optional<std::vector<int64_t>> axes;
  // Axes are an input from opset 13 for ReduceSum, 18 for the others.
  if ((op == "ReduceSum" && opset_ >= 13) || opset_ >= 18)
    axes = has(n, 1) ? std::optional(needConst(n, 1, "axes").ints())
                     : std::nullopt;
  else
    axes = attrInts(n, "axes");
  bool keep = attrInt(n, "keepdims", 1) != 0;
  if (!axes || axes->empty()) {
    if (attrInt(n, "noop_with_empty_axes", 0)) {
      out(n, 0, in(n, 0));
      return;
    }
    axes = std::vector<int64_t>();
    for (int64_t d = 0; d < rank; ++d)
      axes->push_back(d);
  }
  for (int64_t &a : *axes)
    a = normalizeAxis(a, rank);
  Tensor x = in(n, 0);
  if (op == "ReduceL1")
    x = locus::abs(x);
  if (op == "ReduceL2" || op == "ReduceSumSquare")
    x = mul(x, x);
  Tensor y = op == "ReduceMean"        ? mean(x, *axes, keep)
             : op == "ReduceMax"       ? max(x, *axes, keep)
             : op == "ReduceMin"       ? min(x, *axes, keep)
             : op == "ReduceLogSumExp" ? logsumexp(x, *axes, keep)
                                       : sum(x, *axes, keep);
  if (op == "ReduceL2")
    y = locus::sqrt(y);
  if (op == "ReduceLogSum")
    y = locus::log(y);
  out(n, 0, y);
}

void Importer::softmax(const NodeProto &n, bool log) {
  Shape shape = shapeOf(n, 0);
  auto rank = static_cast<int64_t>(shape.size());
  int64_t axis = normalizeAxis(attrInt(n, "axis", opset_ >= 13 ? -1 : 1), rank);
  Tensor x = in(n, 0);
  if (opset_ >= 13 || axis == rank - 1) {
    out(n, 0, log ? log_softmax(x, axis) : locus::softmax(x, axis));
    return;
  }
  // Before opset 13: over all dimensions from `axis` on, as one.
  Tensor flat = locus::reshape(
      x, {product(shape, 0, size_t(axis)), product(shape, size_t(axis))});
  Tensor y = log ? log_softmax(flat, 1) : locus::softmax(flat, 1);
  out(n, 0, locus::reshape(y, shape));
}

void Importer::gemm(const NodeProto &n) {
  double alpha = attrFloat(n, "alpha", 1.0), beta = attrFloat(n, "beta", 1.0);
  bool transA = attrInt(n, "transA", 0) != 0,
       transB = attrInt(n, "transB", 0) != 0;
  Tensor a = in(n, 0), b = in(n, 1);
  if (!transA && transB && alpha == 1.0 && (!has(n, 2) || beta == 1.0) &&
      (!has(n, 2) || shapeOf(n, 2).size() <= 1)) {
    out(n, 0, linear(a, b, has(n, 2) ? in(n, 2) : Tensor())); // nn.Linear
    return;
  }
  Tensor y =
      matmul(transA ? transpose(a, 0, 1) : a, transB ? transpose(b, 0, 1) : b);
  if (alpha != 1.0)
    y = y * static_cast<float>(alpha);
  if (has(n, 2) && beta != 0.0) {
    Tensor c = in(n, 2);
    y = add(y, beta == 1.0 ? c : c * static_cast<float>(beta));
  }
  out(n, 0, y);
}

void Importer::batchNorm(const NodeProto &n) {
  double eps = attrFloat(n, "epsilon", 1e-5);
  double momentum = attrFloat(n, "momentum", 0.9);
  bool training = attrInt(n, "training_mode", 0) != 0;
  for (int k = 1; k < n.output_size(); ++k)
    if (!n.output(k).empty() && !training)
      fail("outputs beyond Y exist only in training mode");
  if (training) {
    if (!constOf(n, 3) || !constOf(n, 4) || !value(n.input(3)).initializer ||
        !value(n.input(4)).initializer)
      fail("training mode updates the running mean and variance, which must "
           "then be initializers (state), not computed values");
    for (int k = 1; k < n.output_size(); ++k)
      if (!n.output(k).empty())
        fail("the running_mean and running_var outputs are not supported; "
             "Locus updates the state in place");
  }
  // ONNX keeps momentum of the old value; PyTorch the new one's weight.
  out(n, 0,
      ::locus::batch_norm(in(n, 0), in(n, 3, true), in(n, 4, true), in(n, 1),
                          in(n, 2), training, 1.0 - momentum, eps));
}

void Importer::addNnHandlers(Handlers &t) {
  t["MatMul"] = [](Importer &im, Graph &, const NodeProto &n) {
    im.out(n, 0, matmul(im.in(n, 0), im.in(n, 1)));
  };
  t["Gemm"] = [](Importer &im, Graph &, const NodeProto &n) { im.gemm(n); };
  t["Conv"] = [](Importer &im, Graph &, const NodeProto &n) { im.conv(n); };
  t["ConvTranspose"] = [](Importer &im, Graph &, const NodeProto &n) {
    im.convTranspose(n);
  };
  t["MaxPool"] = [](Importer &im, Graph &, const NodeProto &n) {
    im.pool(n, true);
  };
  t["AveragePool"] = [](Importer &im, Graph &, const NodeProto &n) {
    im.pool(n, false);
  };
  t["GlobalAveragePool"] = [](Importer &im, Graph &, const NodeProto &n) {
    Shape shape = im.shapeOf(n, 0);
    std::vector<int64_t> axes;
    for (int64_t d = 2; d < static_cast<int64_t>(shape.size()); ++d)
      axes.push_back(d);
    im.out(n, 0,
           shape.size() == 4 ? adaptive_avg_pool2d(im.in(n, 0), {1, 1})
                             : mean(im.in(n, 0), axes, true));
  };
  t["GlobalMaxPool"] = [](Importer &im, Graph &, const NodeProto &n) {
    Shape shape = im.shapeOf(n, 0);
    std::vector<int64_t> axes;
    for (int64_t d = 2; d < static_cast<int64_t>(shape.size()); ++d)
      axes.push_back(d);
    im.out(n, 0, max(im.in(n, 0), axes, true));
  };
  t["BatchNormalization"] = [](Importer &im, Graph &, const NodeProto &n) {
    im.batchNorm(n);
  };
  t["LayerNormalization"] = [](Importer &im, Graph &, const NodeProto &n) {
    Shape shape = im.shapeOf(n, 0);
    int64_t axis = normalizeAxis(attrInt(n, "axis", -1),
                                 static_cast<int64_t>(shape.size()));
    double eps = attrFloat(n, "epsilon", 1e-5);
    Tensor x = im.in(n, 0);
    im.out(n, 0,
           layer_norm(x, Shape(shape.begin() + axis, shape.end()),
                      im.has(n, 1) ? im.in(n, 1) : Tensor(),
                      im.has(n, 2) ? im.in(n, 2) : Tensor(), eps));
    // The statistics, when asked for, kept over the normalised axes.
    std::vector<int64_t> axes;
    for (auto d = axis; d < static_cast<int64_t>(shape.size()); ++d)
      axes.push_back(d);
    if (n.output_size() > 1 && !n.output(1).empty())
      im.out(n, 1, mean(x, axes, true));
    if (n.output_size() > 2 && !n.output(2).empty())
      im.out(n, 2,
             rsqrt(var(x, axes, /*unbiased=*/false, true) +
                   static_cast<float>(eps)));
  };
  auto identity = [](Importer &im, Graph &g, const NodeProto &n) {
    Value v = im.value(n.input(0));
    im.values_[n.output(0)] = v;
    if (n.op_type() == "Dropout" && n.output_size() > 1 && !n.output(1).empty())
      im.out(n, 1, g.full(im.shapeOf(n, 0), 1.0, DType::i1));
  };
  t["Identity"] = identity;
  t["Dropout"] = [identity](Importer &im, Graph &g, const NodeProto &n) {
    // Opset 12 on: ratio and training_mode inputs. Training draws a new
    // mask each run from Locus's generator (not the exporter's).
    bool training =
        im.has(n, 2) && im.needConst(n, 2, "training_mode").at(0) != 0;
    double ratio =
        training && im.has(n, 1) ? im.needConst(n, 1, "ratio").at(0) : 0.5;
    // A ratio of 0 keeps everything (exporters write F.dropout(x, 0.0,
    // training=True) so).
    if (!training || ratio == 0.0) {
      identity(im, g, n);
      return;
    }
    if (n.output_size() > 1 && !n.output(1).empty())
      fail("the mask output of a training-mode Dropout is not supported");
    im.out(n, 0, dropout(im.in(n, 0), ratio, true));
  };
}

void Importer::addReductionHandlers(Handlers &t) {
  for (const char *op :
       {"ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceL1",
        "ReduceL2", "ReduceSumSquare", "ReduceLogSum", "ReduceLogSumExp"})
    t[op] = [op = std::string(op)](Importer &im, Graph &, const NodeProto &n) {
      im.reduce(n, op);
    };
  t["Softmax"] = [](Importer &im, Graph &, const NodeProto &n) {
    im.softmax(n, false);
  };
  t["LogSoftmax"] = [](Importer &im, Graph &, const NodeProto &n) {
    im.softmax(n, true);
  };
  t["TopK"] = [](Importer &im, Graph &, const NodeProto &n) {
    // Opset 10 on: k is a constant input; before, an attribute. The values
    // come sorted whatever `sorted` asks (any order is allowed then).
    int64_t k = im.has(n, 1) ? im.needConst(n, 1, "K").ints().at(0)
                             : attrInt(n, "k", 0);
    TopK top = topk(im.in(n, 0), k, attrInt(n, "axis", -1),
                    attrInt(n, "largest", 1) != 0);
    im.out(n, 0, top.values);
    if (n.output_size() > 1 && !n.output(1).empty())
      im.out(n, 1, top.indices);
  };
  for (bool isMax : {true, false})
    t[isMax ? "ArgMax" : "ArgMin"] = [isMax](Importer &im, Graph &,
                                             const NodeProto &n) {
      if (attrInt(n, "select_last_index", 0))
        fail("select_last_index = 1 is not supported");
      // The first minimum is the first maximum of the negation.
      Tensor x = im.in(n, 0);
      im.out(n, 0,
             argmax(isMax ? x : neg(x), attrInt(n, "axis", 0),
                    attrInt(n, "keepdims", 1) != 0));
    };
}

} // namespace locus::onnx_import
