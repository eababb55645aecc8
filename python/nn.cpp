// nn.cpp - locus.nn: torch.nn's layers, losses and gradient clipping over
// the C++ modules (locus/Frontend/Nn.h), each recorded at the Python line
// that builds or calls it.

#include "common.h"

#include <pybind11/stl.h>

#include <memory>
#include <string>
#include <vector>

using namespace locus;
using namespace locus::python;

namespace {

/// An int or a list of ints as a shape.
Shape shapeArg(const py::object &value) {
  if (py::isinstance<py::int_>(value))
    return {value.cast<int64_t>()};
  return value.cast<Shape>();
}

/// A layer made at the Python caller's line in `g`.
template <typename M, typename... Args>
std::shared_ptr<M> made(Graph &g, Args &&...args) {
  return recorded(g, [&] {
    return std::make_shared<M>(g, std::forward<Args>(args)..., Here::current());
  });
}

void bindNormsAndPools(py::module_ &nn) {
  py::class_<nn::MaxPool2d, nn::Module, std::shared_ptr<nn::MaxPool2d>>(
      nn, "MaxPool2d")
      .def(py::init([](const py::object &kernel, const py::object &stride,
                       const py::object &padding, const py::object &dilation,
                       bool returnIndices, bool ceilMode) {
             requirePlainMaxPool("MaxPool2d", dilation, returnIndices);
             std::vector<int64_t> pads = pairArg(padding);
             return atCaller([&] {
               return std::make_shared<nn::MaxPool2d>(
                   pairArg(kernel),
                   stride.is_none() ? std::vector<int64_t>{} : pairArg(stride),
                   pads, ceilMode, Here::current());
             });
           }),
           py::arg("kernel_size"), py::arg("stride") = py::none(),
           py::arg("padding") = 0, py::arg("dilation") = 1,
           py::arg("return_indices") = false, py::arg("ceil_mode") = false);
  py::class_<nn::AvgPool2d, nn::Module, std::shared_ptr<nn::AvgPool2d>>(
      nn, "AvgPool2d")
      .def(py::init([](const py::object &kernel, const py::object &stride,
                       const py::object &padding, bool ceilMode,
                       bool countIncludePad) {
             std::vector<int64_t> pads = pairArg(padding);
             return atCaller([&] {
               return std::make_shared<nn::AvgPool2d>(
                   pairArg(kernel),
                   stride.is_none() ? std::vector<int64_t>{} : pairArg(stride),
                   pads, ceilMode, countIncludePad, Here::current());
             });
           }),
           py::arg("kernel_size"), py::arg("stride") = py::none(),
           py::arg("padding") = 0, py::arg("ceil_mode") = false,
           py::arg("count_include_pad") = true);
  py::class_<nn::AdaptiveAvgPool2d, nn::Module,
             std::shared_ptr<nn::AdaptiveAvgPool2d>>(nn, "AdaptiveAvgPool2d")
      .def(py::init([](const py::object &size) {
             return std::make_shared<nn::AdaptiveAvgPool2d>(pairArg(size));
           }),
           py::arg("output_size"));
  auto batchNormOptions = [](double eps, double momentum, bool affine,
                             bool track, const std::string &name) {
    return nn::BatchNormOptions{eps,   momentum, affine,
                                track, name,     std::nullopt};
  };
  py::class_<nn::BatchNorm, nn::Module, std::shared_ptr<nn::BatchNorm>>(
      nn, "_BatchNorm")
      .def_property_readonly("weight", &nn::BatchNorm::weight)
      .def_property_readonly("bias", &nn::BatchNorm::bias)
      .def_property_readonly("running_mean", &nn::BatchNorm::runningMean)
      .def_property_readonly("running_var", &nn::BatchNorm::runningVar)
      .def("buffers", &nn::BatchNorm::buffers);
  py::class_<nn::BatchNorm1d, nn::BatchNorm, std::shared_ptr<nn::BatchNorm1d>>(
      nn, "BatchNorm1d")
      .def(py::init([batchNormOptions](Graph &g, int64_t n, double eps,
                                       double m, bool affine, bool track,
                                       const std::string &name) {
             return made<nn::BatchNorm1d>(
                 g, n, batchNormOptions(eps, m, affine, track, name));
           }),
           py::arg("graph"), py::arg("num_features"), py::arg("eps") = 1e-5,
           py::arg("momentum") = 0.1, py::arg("affine") = true,
           py::arg("track_running_stats") = true, py::arg("name") = "");
  py::class_<nn::BatchNorm2d, nn::BatchNorm, std::shared_ptr<nn::BatchNorm2d>>(
      nn, "BatchNorm2d")
      .def(py::init([batchNormOptions](Graph &g, int64_t n, double eps,
                                       double m, bool affine, bool track,
                                       const std::string &name) {
             return made<nn::BatchNorm2d>(
                 g, n, batchNormOptions(eps, m, affine, track, name));
           }),
           py::arg("graph"), py::arg("num_features"), py::arg("eps") = 1e-5,
           py::arg("momentum") = 0.1, py::arg("affine") = true,
           py::arg("track_running_stats") = true, py::arg("name") = "");
  py::class_<nn::LayerNorm, nn::Module, std::shared_ptr<nn::LayerNorm>>(
      nn, "LayerNorm")
      .def(py::init([](Graph &g, const py::object &shape, double eps,
                       bool affine, bool bias, const std::string &name) {
             nn::LayerNormOptions o{eps, affine, bias, name};
             return made<nn::LayerNorm>(g, shapeArg(shape), o);
           }),
           py::arg("graph"), py::arg("normalized_shape"), py::arg("eps") = 1e-5,
           py::arg("elementwise_affine") = true, py::arg("bias") = true,
           py::arg("name") = "");
  py::class_<nn::GroupNorm, nn::Module, std::shared_ptr<nn::GroupNorm>>(
      nn, "GroupNorm")
      .def(py::init([](Graph &g, int64_t groups, int64_t channels, double eps,
                       bool affine, const std::string &name) {
             nn::LayerNormOptions o{eps, affine, true, name};
             return made<nn::GroupNorm>(g, groups, channels, o);
           }),
           py::arg("graph"), py::arg("num_groups"), py::arg("num_channels"),
           py::arg("eps") = 1e-5, py::arg("affine") = true,
           py::arg("name") = "");
  py::class_<nn::Dropout, nn::Module, std::shared_ptr<nn::Dropout>>(nn,
                                                                    "Dropout")
      .def(py::init([](double p) {
             return atCaller([&] {
               return std::make_shared<nn::Dropout>(p, Here::current());
             });
           }),
           py::arg("p") = 0.5)
      .def_property_readonly("p", &nn::Dropout::p);
}

/// torch.nn.LSTM's and GRU's constructor, for `Layer`.
template <typename Layer, typename Class> void defRecurrentInit(Class &cls) {
  cls.def(py::init([](Graph &g, int64_t in, int64_t hidden, int64_t layers,
                      bool bias, bool batchFirst, double dropout,
                      bool bidirectional, const std::string &name) {
            return made<Layer>(g, in, hidden,
                               nn::RecurrentOptions{layers, bias, batchFirst,
                                                    dropout, bidirectional,
                                                    name, std::nullopt});
          }),
          py::arg("graph"), py::arg("input_size"), py::arg("hidden_size"),
          py::arg("num_layers") = 1, py::arg("bias") = true,
          py::arg("batch_first") = false, py::arg("dropout") = 0.0,
          py::arg("bidirectional") = false, py::arg("name") = "");
}

void bindSequenceLayers(py::module_ &nn) {
  py::class_<nn::Embedding, nn::Module, std::shared_ptr<nn::Embedding>>(
      nn, "Embedding")
      .def(py::init([](Graph &g, int64_t num, int64_t dim,
                       const std::string &name) {
             return made<nn::Embedding>(g, num, dim,
                                        nn::LayerOptions{name, std::nullopt});
           }),
           py::arg("graph"), py::arg("num_embeddings"),
           py::arg("embedding_dim"), py::arg("name") = "")
      .def_property_readonly("weight", &nn::Embedding::weight);
  py::class_<nn::MultiheadAttention, nn::Module,
             std::shared_ptr<nn::MultiheadAttention>>(nn, "MultiheadAttention")
      .def(py::init([](Graph &g, int64_t dim, int64_t heads, bool bias,
                       bool batchFirst, const std::string &name) {
             nn::MultiheadAttentionOptions o{bias, batchFirst, name,
                                             std::nullopt};
             return made<nn::MultiheadAttention>(g, dim, heads, o);
           }),
           py::arg("graph"), py::arg("embed_dim"), py::arg("num_heads"),
           py::arg("bias") = true, py::arg("batch_first") = false,
           py::arg("name") = "")
      .def(
          "__call__",
          [](const nn::MultiheadAttention &a, const Tensor &q, const Tensor &k,
             const Tensor &v, const std::optional<Tensor> &mask, bool causal,
             bool needWeights) {
            if (needWeights)
              throw py::value_error("MultiheadAttention returns no attention "
                                    "weights; pass need_weights=False");
            nn::AttentionMasks masks{mask.value_or(Tensor()), causal};
            Tensor out = recorded(
                graphOf(q), [&] { return a(q, k, v, masks, Here::current()); });
            return py::make_tuple(out, py::none());
          },
          py::arg("query"), py::arg("key"), py::arg("value"), py::kw_only(),
          py::arg("attn_mask") = py::none(), py::arg("is_causal") = false,
          py::arg("need_weights") = false,
          "(output, None), as PyTorch's with need_weights=False: Locus "
          "returns no attention weights.");
  py::class_<nn::TransformerEncoderLayer, nn::Module,
             std::shared_ptr<nn::TransformerEncoderLayer>>(
      nn, "TransformerEncoderLayer")
      .def(py::init([](Graph &g, int64_t dModel, int64_t nhead, int64_t ff,
                       double dropout, const std::string &activation,
                       double eps, bool batchFirst, bool normFirst,
                       const std::string &name) {
             nn::TransformerEncoderLayerOptions o{ff,   dropout,     activation,
                                                  eps,  batchFirst,  normFirst,
                                                  name, std::nullopt};
             return made<nn::TransformerEncoderLayer>(g, dModel, nhead, o);
           }),
           py::arg("graph"), py::arg("d_model"), py::arg("nhead"),
           py::arg("dim_feedforward") = 2048, py::arg("dropout") = 0.1,
           py::arg("activation") = "relu", py::arg("layer_norm_eps") = 1e-5,
           py::arg("batch_first") = false, py::arg("norm_first") = false,
           py::arg("name") = "")
      .def(
          "__call__",
          [](const nn::TransformerEncoderLayer &layer, const Tensor &src,
             const std::optional<Tensor> &mask, bool causal) {
            nn::AttentionMasks masks{mask.value_or(Tensor()), causal};
            return recorded(graphOf(src),
                            [&] { return layer(src, masks, Here::current()); });
          },
          py::arg("src"), py::arg("src_mask") = py::none(),
          py::arg("is_causal") = false);
  py::class_<nn::Recurrent, nn::Module, std::shared_ptr<nn::Recurrent>>(
      nn, "_Recurrent")
      .def("parameters", &nn::Recurrent::parameters);
  auto lstm = py::class_<nn::LSTM, nn::Recurrent, std::shared_ptr<nn::LSTM>>(
      nn, "LSTM");
  defRecurrentInit<nn::LSTM>(lstm);
  lstm.def(
      "__call__",
      [](const nn::LSTM &lstm, const Tensor &x,
         const std::optional<std::pair<Tensor, Tensor>> &hx) {
        nn::RecurrentOutput out = recorded(graphOf(x), [&] {
          return lstm(x, hx ? hx->first : Tensor(), hx ? hx->second : Tensor(),
                      Here::current());
        });
        return py::make_tuple(out.output, py::make_tuple(out.h, out.c));
      },
      py::arg("x"), py::arg("hx") = py::none(),
      "(output, (h_n, c_n)), as torch.nn.LSTM.");
  auto gru =
      py::class_<nn::GRU, nn::Recurrent, std::shared_ptr<nn::GRU>>(nn, "GRU");
  defRecurrentInit<nn::GRU>(gru);
  gru.def(
      "__call__",
      [](const nn::GRU &gru, const Tensor &x, const std::optional<Tensor> &hx) {
        nn::RecurrentOutput out = recorded(graphOf(x), [&] {
          return gru(x, hx.value_or(Tensor()), Tensor(), Here::current());
        });
        return py::make_tuple(out.output, out.h);
      },
      py::arg("x"), py::arg("hx") = py::none(),
      "(output, h_n), as torch.nn.GRU.");
  py::class_<nn::Sequential, nn::Module, std::shared_ptr<nn::Sequential>>(
      nn, "Sequential")
      .def(py::init([](const py::args &layers) {
        std::vector<nn::AnyModule> list;
        for (const py::handle &layer : layers)
          list.emplace_back(layer.cast<std::shared_ptr<nn::Module>>());
        return atCaller([&] {
          return std::make_shared<nn::Sequential>(std::move(list),
                                                  Here::current());
        });
      }))
      .def("__len__", &nn::Sequential::size);
}

/// A loss layer of (reduction) taking (input, target): nn::ReducedLoss.
template <typename L> void bindReducedLoss(py::module_ &nn, const char *name) {
  py::class_<L>(nn, name)
      .def(py::init([](const std::string &reduction) {
             return L(parseReduction(reduction));
           }),
           py::arg("reduction") = "mean")
      .def("__call__", [](const L &l, const Tensor &x, const Tensor &target) {
        return recorded(graphOf(x),
                        [&] { return l(x, target, Here::current()); });
      });
}

void bindLosses(py::module_ &nn) {
  bindReducedLoss<nn::L1Loss>(nn, "L1Loss");
  bindReducedLoss<nn::BCELoss>(nn, "BCELoss");
  bindReducedLoss<nn::BCEWithLogitsLoss>(nn, "BCEWithLogitsLoss");
  py::class_<nn::SmoothL1Loss>(nn, "SmoothL1Loss")
      .def(py::init([](const std::string &reduction, double beta) {
             return nn::SmoothL1Loss(parseReduction(reduction), beta);
           }),
           py::arg("reduction") = "mean", py::arg("beta") = 1.0)
      .def("__call__", [](const nn::SmoothL1Loss &l, const Tensor &x,
                          const Tensor &target) {
        return recorded(graphOf(x),
                        [&] { return l(x, target, Here::current()); });
      });
  bindReducedLoss<nn::MSELoss>(nn, "MSELoss");
  bindReducedLoss<nn::CrossEntropyLoss>(nn, "CrossEntropyLoss");
  bindReducedLoss<nn::NLLLoss>(nn, "NLLLoss");
}

template <typename Layer>
void defPlainLayer(py::module_ &nn, const char *name) {
  py::class_<Layer, nn::Module, std::shared_ptr<Layer>>(nn, name).def(
      py::init([] { return std::make_shared<Layer>(); }));
}

/// torch.nn's activation layers.
void bindActivationLayers(py::module_ &nn) {
  defPlainLayer<nn::Tanh>(nn, "Tanh");
  defPlainLayer<nn::Sigmoid>(nn, "Sigmoid");
  defPlainLayer<nn::SiLU>(nn, "SiLU");
  defPlainLayer<nn::ReLU6>(nn, "ReLU6");
  defPlainLayer<nn::Hardsigmoid>(nn, "Hardsigmoid");
  defPlainLayer<nn::Hardswish>(nn, "Hardswish");
  defPlainLayer<nn::Mish>(nn, "Mish");
  py::class_<nn::GELU, nn::Module, std::shared_ptr<nn::GELU>>(nn, "GELU")
      .def(py::init([](const std::string &approximate) {
             return std::make_shared<nn::GELU>(approximate);
           }),
           py::arg("approximate") = "none");
  py::class_<nn::LeakyReLU, nn::Module, std::shared_ptr<nn::LeakyReLU>>(
      nn, "LeakyReLU")
      .def(py::init([](double slope) {
             return std::make_shared<nn::LeakyReLU>(slope);
           }),
           py::arg("negative_slope") = 0.01);
  py::class_<nn::Hardtanh, nn::Module, std::shared_ptr<nn::Hardtanh>>(
      nn, "Hardtanh")
      .def(py::init([](double lo, double hi) {
             return std::make_shared<nn::Hardtanh>(lo, hi);
           }),
           py::arg("min_val") = -1.0, py::arg("max_val") = 1.0);
  py::class_<nn::Softplus, nn::Module, std::shared_ptr<nn::Softplus>>(
      nn, "Softplus")
      .def(py::init([](double beta, double threshold) {
             return std::make_shared<nn::Softplus>(beta, threshold);
           }),
           py::arg("beta") = 1.0, py::arg("threshold") = 20.0);
  defPlainLayer<nn::Identity>(nn, "Identity");
  py::class_<nn::Softmax, nn::Module, std::shared_ptr<nn::Softmax>>(nn,
                                                                    "Softmax")
      .def(py::init(
               [](int64_t dim) { return std::make_shared<nn::Softmax>(dim); }),
           py::arg("dim"));
  py::class_<nn::LogSoftmax, nn::Module, std::shared_ptr<nn::LogSoftmax>>(
      nn, "LogSoftmax")
      .def(py::init([](int64_t dim) {
             return std::make_shared<nn::LogSoftmax>(dim);
           }),
           py::arg("dim"));
  py::class_<nn::PReLU, nn::Module, std::shared_ptr<nn::PReLU>>(nn, "PReLU")
      .def(py::init(
               [](Graph &g, int64_t n, double init, const std::string &name) {
                 return made<nn::PReLU>(g, n, init,
                                        nn::LayerOptions{name, std::nullopt});
               }),
           py::arg("graph"), py::arg("num_parameters") = 1,
           py::arg("init") = 0.25, py::arg("name") = "")
      .def_property_readonly("weight", &nn::PReLU::weight);
  py::class_<nn::ELU, nn::Module, std::shared_ptr<nn::ELU>>(nn, "ELU").def(
      py::init([](double alpha) { return std::make_shared<nn::ELU>(alpha); }),
      py::arg("alpha") = 1.0);
}

/// The tensors of a Python list of gradients.
std::vector<Tensor> gradsOf(const py::list &grads) {
  if (grads.empty())
    throw py::value_error("expected a list of gradients, got an empty one");
  std::vector<Tensor> out;
  for (const py::handle &g : grads)
    out.push_back(g.cast<Tensor>());
  return out;
}

/// Writes clipped gradients back into the caller's list, as PyTorch's
/// in-place clipping changes .grad.
void writeBack(py::list &grads, const std::vector<Tensor> &clipped) {
  for (size_t i = 0; i < clipped.size(); ++i)
    grads[i] = py::cast(clipped[i]);
}

/// torch.nn.utils' clip_grad_norm_ and clip_grad_value_ on locus.grad's
/// gradients.
void bindClipping(py::module_ &nn) {
  py::module_ utils = nn.def_submodule("utils", "gradient clipping");
  utils.def(
      "clip_grad_norm_",
      [](py::list grads, double maxNorm, double normType) {
        std::vector<Tensor> g = gradsOf(grads);
        Tensor norm = recorded(graphOf(g[0]), [&] {
          return nn::utils::clip_grad_norm_(g, maxNorm, normType,
                                            Here::current());
        });
        writeBack(grads, g);
        return norm;
      },
      py::arg("grads"), py::arg("max_norm"), py::arg("norm_type") = 2.0,
      "Scales the gradients in the list (locus.grad's) so that their total "
      "norm is at most max_norm, in place; returns the total norm.");
  utils.def(
      "clip_grad_value_",
      [](py::list grads, double clipValue) {
        std::vector<Tensor> g = gradsOf(grads);
        recorded(graphOf(g[0]), [&] {
          nn::utils::clip_grad_value_(g, clipValue, Here::current());
        });
        writeBack(grads, g);
      },
      py::arg("grads"), py::arg("clip_value"),
      "Clamps each gradient in the list to [-clip_value, clip_value], in "
      "place.");
}

void bindNnLayers(py::module_ &m) {
  py::module_ nn = m.def_submodule("nn", "layers and losses");
  py::class_<nn::Module, std::shared_ptr<nn::Module>>(nn, "Module")
      .def("__call__",
           [](const nn::Module &layer, const Tensor &x) {
             return recorded(graphOf(x),
                             [&] { return layer(x, Here::current()); });
           })
      .def("parameters", &nn::Module::parameters)
      .def("train", &nn::Module::train, py::arg("on") = true)
      .def("eval", &nn::Module::eval);
  py::class_<nn::Linear, nn::Module, std::shared_ptr<nn::Linear>>(nn, "Linear")
      .def(py::init([](Graph &g, int64_t in, int64_t out, bool bias,
                       const std::string &name) {
             nn::LinearOptions o;
             o.bias = bias;
             o.name = name;
             return recorded(g, [&] {
               return std::make_shared<nn::Linear>(g, in, out, o,
                                                   Here::current());
             });
           }),
           py::arg("graph"), py::arg("in_features"), py::arg("out_features"),
           py::arg("bias") = true, py::arg("name") = "")
      .def_property_readonly("weight", &nn::Linear::weight)
      .def_property_readonly("bias", &nn::Linear::bias);
  py::class_<nn::Conv2d, nn::Module, std::shared_ptr<nn::Conv2d>>(nn, "Conv2d")
      .def(py::init([](Graph &g, int64_t in, int64_t out,
                       const py::object &kernel, const py::object &stride,
                       const py::object &padding, const py::object &dilation,
                       int64_t groups, bool bias, const std::string &name) {
             nn::Conv2dOptions o;
             o.stride = pairArg(stride);
             o.padding = pairArg(padding);
             o.dilation = pairArg(dilation);
             o.groups = groups;
             o.bias = bias;
             o.name = name;
             return recorded(g, [&] {
               return std::make_shared<nn::Conv2d>(g, in, out, pairArg(kernel),
                                                   o, Here::current());
             });
           }),
           py::arg("graph"), py::arg("in_channels"), py::arg("out_channels"),
           py::arg("kernel_size"), py::arg("stride") = 1,
           py::arg("padding") = 0, py::arg("dilation") = 1,
           py::arg("groups") = 1, py::arg("bias") = true, py::arg("name") = "")
      .def_property_readonly("weight", &nn::Conv2d::weight)
      .def_property_readonly("bias", &nn::Conv2d::bias);
  py::class_<nn::ConvTranspose2d, nn::Module,
             std::shared_ptr<nn::ConvTranspose2d>>(nn, "ConvTranspose2d")
      .def(py::init(
               [](Graph &g, int64_t in, int64_t out, const py::object &kernel,
                  const py::object &stride, const py::object &padding,
                  const py::object &outputPadding, int64_t groups, bool bias,
                  const py::object &dilation, const std::string &name) {
                 nn::ConvTranspose2dOptions o;
                 o.stride = pairArg(stride);
                 o.padding = pairArg(padding);
                 o.outputPadding = pairArg(outputPadding);
                 o.dilation = pairArg(dilation);
                 o.groups = groups;
                 o.bias = bias;
                 o.name = name;
                 return recorded(g, [&] {
                   return std::make_shared<nn::ConvTranspose2d>(
                       g, in, out, pairArg(kernel), o, Here::current());
                 });
               }),
           py::arg("graph"), py::arg("in_channels"), py::arg("out_channels"),
           py::arg("kernel_size"), py::arg("stride") = 1,
           py::arg("padding") = 0, py::arg("output_padding") = 0,
           py::arg("groups") = 1, py::arg("bias") = true,
           py::arg("dilation") = 1, py::arg("name") = "")
      .def_property_readonly("weight", &nn::ConvTranspose2d::weight)
      .def_property_readonly("bias", &nn::ConvTranspose2d::bias);
  py::class_<nn::Conv1d, nn::Module, std::shared_ptr<nn::Conv1d>>(nn, "Conv1d")
      .def(py::init([](Graph &g, int64_t in, int64_t out, int64_t kernel,
                       int64_t stride, int64_t padding, int64_t dilation,
                       int64_t groups, bool bias, const std::string &name) {
             nn::Conv1dOptions o{stride, padding, dilation,    groups,
                                 bias,   name,    std::nullopt};
             return recorded(g, [&] {
               return std::make_shared<nn::Conv1d>(g, in, out, kernel, o,
                                                   Here::current());
             });
           }),
           py::arg("graph"), py::arg("in_channels"), py::arg("out_channels"),
           py::arg("kernel_size"), py::arg("stride") = 1,
           py::arg("padding") = 0, py::arg("dilation") = 1,
           py::arg("groups") = 1, py::arg("bias") = true, py::arg("name") = "")
      .def_property_readonly("weight", &nn::Conv1d::weight)
      .def_property_readonly("bias", &nn::Conv1d::bias);
  py::class_<nn::ReLU, nn::Module, std::shared_ptr<nn::ReLU>>(nn, "ReLU")
      .def(py::init([] { return std::make_shared<nn::ReLU>(); }));
  py::class_<nn::Flatten, nn::Module, std::shared_ptr<nn::Flatten>>(nn,
                                                                    "Flatten")
      .def(py::init([] { return std::make_shared<nn::Flatten>(); }));
  bindActivationLayers(nn);
  bindClipping(nn);
  bindNormsAndPools(nn);
  bindSequenceLayers(nn);
  bindLosses(nn);
}

} // namespace

void python::bindNn(py::module_ &m) { bindNnLayers(m); }
