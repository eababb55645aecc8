// locus_module.cpp - the `locus` Python module (pybind11) over the C++ API:
// record graphs with the C++ names (snake_case aliases for the camelCase
// ones), import ONNX, compile, look at the placement, run with NumPy arrays,
// save artifacts; `locus.runtime` loads and runs artifacts alone.
//
// Ops recorded from Python are located at the Python caller's file and line
// (an OriginScope around each call), so placement reports, strict-mode
// errors, traces and profiles name the user's Python lines; an error while
// recording is a locus.Error at that line.

#include "locus/Compile.h"
#include "locus/Import/Onnx.h"
#include "locus/half.hpp"
#include "locus/locus.h"
#include "locus/runtime.hpp"

#include "common.h"

#include <pybind11/functional.h>
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace py = pybind11;
using namespace locus;
using namespace locus::python;

namespace {

// ---- NumPy <-> HostTensor ---------------------------------------------------

Shape shapeOf(const py::array &a) {
  return Shape(a.shape(), a.shape() + a.ndim());
}

/// The Locus dtype NumPy's `a` maps to (float64 is taken as float32, as
/// the in-process run does); nullopt for others.
std::optional<locus_dtype_t> locusDTypeOf(const py::array &a) {
  char kind = a.dtype().kind();
  py::ssize_t size = a.dtype().itemsize();
  if (kind == 'f' && (size == 4 || size == 8))
    return LOCUS_DTYPE_F32;
  if (kind == 'f' && size == 2)
    return LOCUS_DTYPE_F16;
  if (kind == 'i' && size == 8)
    return LOCUS_DTYPE_I64;
  if (kind == 'i' && size == 4)
    return LOCUS_DTYPE_I32;
  if (kind == 'b')
    return LOCUS_DTYPE_I1;
  return std::nullopt;
}

HostTensor toHost(const std::string &name, const py::handle &value) {
  py::array a = py::array::ensure(value);
  if (!a)
    throw py::type_error("input '" + name + "' is not an array");
  Shape shape = shapeOf(a);
  auto copy = [&](auto tag) {
    using T = decltype(tag);
    auto c = py::array_t < T, py::array::c_style | py::array::forcecast > (a);
    return std::vector<T>(c.data(), c.data() + c.size());
  };
  switch (locusDTypeOf(a).value_or(LOCUS_DTYPE_MAX_ENUM)) {
  case LOCUS_DTYPE_F32:
    return HostTensor::fromF32(shape, copy(float{}));
  case LOCUS_DTYPE_F16: // exact as f32
    return HostTensor::fromF32(shape, copy(float{}), DType::f16);
  case LOCUS_DTYPE_I64:
    return HostTensor::fromI64(shape, copy(int64_t{}));
  case LOCUS_DTYPE_I32:
    return HostTensor::fromI32(shape, copy(int32_t{}));
  case LOCUS_DTYPE_I1: {
    std::vector<uint8_t> bytes = copy(uint8_t{});
    return HostTensor::fromBool(
        shape, std::vector<int64_t>(bytes.begin(), bytes.end()));
  }
  default:
    break;
  }
  throw py::type_error("input '" + name + "' has dtype " +
                       py::str(a.dtype()).cast<std::string>() +
                       "; Locus takes float32, float16, int64, int32 or bool");
}

py::array toNumpy(const HostTensor &t) {
  std::vector<py::ssize_t> shape(t.shape.begin(), t.shape.end());
  switch (t.dtype) {
  case DType::f16: { // as NumPy's float16; exact
    py::array out(py::dtype("float16"), shape);
    auto *bits = static_cast<uint16_t *>(out.mutable_data());
    for (size_t i = 0; i < t.f32.size(); ++i)
      bits[i] = half::f16Bits(t.f32[i]);
    return out;
  }
  case DType::bf16: // as float32 (NumPy has no bfloat16); exact
  case DType::f32: {
    py::array_t<float> out(shape);
    std::memcpy(out.mutable_data(), t.f32.data(), t.f32.size() * sizeof(float));
    return out;
  }
  case DType::i32: {
    py::array_t<int32_t> out(shape);
    for (size_t i = 0; i < t.i64.size(); ++i)
      out.mutable_data()[i] = static_cast<int32_t>(t.i64[i]);
    return out;
  }
  case DType::i1: {
    py::array_t<bool> out(shape);
    for (size_t i = 0; i < t.i64.size(); ++i)
      out.mutable_data()[i] = t.i64[i] != 0;
    return out;
  }
  case DType::i64:
  default: {
    py::array_t<int64_t> out(shape);
    std::memcpy(out.mutable_data(), t.i64.data(),
                t.i64.size() * sizeof(int64_t));
    return out;
  }
  }
}

std::map<std::string, HostTensor> hostInputs(const py::dict &inputs) {
  std::map<std::string, HostTensor> out;
  for (auto [key, value] : inputs) {
    std::string name = py::str(key);
    out.emplace(name, toHost(name, value));
  }
  return out;
}

py::dict numpyOutputs(const std::map<std::string, HostTensor> &outputs) {
  py::dict out;
  for (const auto &[name, t] : outputs)
    out[py::str(name)] = toNumpy(t);
  return out;
}

// ---- Bindings ---------------------------------------------------------------

using Unary = Tensor (*)(const Tensor &, Here);
using Binary = Tensor (*)(const Tensor &, const Tensor &, Here);

void defUnary(py::module_ &m, const char *name, Unary f) {
  m.def(
      name,
      [f](const Tensor &x) {
        return recorded(graphOf(x), [&] { return f(x, Here::current()); });
      },
      py::arg("x"));
}

/// A binary op whose second operand may be a Python number
/// (locus.maximum(x, 0.0)).
void defBinary(py::module_ &m, const char *name, Binary f) {
  m.def(
      name,
      [f](const Tensor &a, const py::object &b) {
        Tensor other = operand(a, b);
        return recorded(graphOf(a),
                        [&] { return f(a, other, Here::current()); });
      },
      py::arg("a"), py::arg("b"));
}

void bindTensor(py::module_ &m) {
  auto tensor = py::class_<Tensor>(m, "Tensor");
  tensor.def_property_readonly("shape", &Tensor::shape)
      .def_property_readonly(
          "dtype",
          [](const Tensor &t) { return std::string(dtypeName(t.dtype())); })
      .def_property_readonly("rank", [](const Tensor &t) { return t.rank(); })
      .def("numel", [](const Tensor &t) { return t.numel(); })
      .def(
          "to",
          [](const Tensor &t, const std::string &device) {
            return recorded(graphOf(t), [&] {
              return t.to(Device::parse(device), Here::current());
            });
          },
          py::arg("device"))
      .def("__repr__", [](const Tensor &t) {
        std::string shape;
        for (int64_t d : t.shape())
          shape += (shape.empty() ? "" : ", ") + std::to_string(d);
        return "locus.Tensor([" + shape + "], " + dtypeName(t.dtype()) + ")";
      });
  auto binary = [&](const char *name, Binary f, bool reflected) {
    tensor.def(name, [f, reflected](const Tensor &a, const py::object &b) {
      Tensor other = operand(a, b);
      return recorded(graphOf(a), [&] {
        return reflected ? f(other, a, Here::current())
                         : f(a, other, Here::current());
      });
    });
  };
  binary("__add__", &add, false);
  binary("__radd__", &add, true);
  binary("__sub__", &sub, false);
  binary("__rsub__", &sub, true);
  binary("__mul__", &mul, false);
  binary("__rmul__", &mul, true);
  binary("__truediv__", &div, false);
  binary("__rtruediv__", &div, true);
  binary("__matmul__", &matmul, false);
  tensor.def("__neg__", [](const Tensor &x) {
    return recorded(graphOf(x), [&] { return neg(x, Here::current()); });
  });
}

void bindGraph(py::module_ &m) {
  // A dimension of an input: an int, or locus.dyn("batch", 256).
  py::class_<InputDim>(m, "Dim")
      .def(py::init<int64_t>(), py::arg("size"))
      .def_readonly("size", &InputDim::size)
      .def_readonly("symbol", &InputDim::symbol)
      .def("__repr__", [](const InputDim &d) {
        return !d.dynamic ? std::to_string(d.size)
                          : "locus.dyn('" + d.symbol + "', " +
                                std::to_string(d.size) + ")";
      });
  py::implicitly_convertible<int64_t, InputDim>();
  m.def(
      "dyn",
      [](const std::string &symbol, int64_t bound) {
        return dyn(symbol, bound);
      },
      py::arg("symbol"), py::arg("bound"),
      "A dynamic dimension: sizes 1 to `bound`, the same in every "
      "dimension named `symbol`.");
  py::class_<Graph>(m, "Graph")
      .def(py::init([](const std::string &name) { return Graph(name); }),
           py::arg("name") = "graph")
      .def_property_readonly("name", &Graph::name)
      .def(
          "input",
          [](Graph &g, const std::string &name,
             const std::vector<InputDim> &shape, const std::string &dtype,
             std::optional<std::string> device) {
            InputOptions options;
            options.dtype = parseDType(dtype);
            if (device)
              options.device = Device::parse(*device);
            return recorded(g, [&] {
              return g.input(name, shape, options, Here::current());
            });
          },
          py::arg("name"), py::arg("shape"), py::arg("dtype") = "f32",
          py::arg("device") = py::none())
      .def(
          "output",
          [](Graph &g, const std::string &name, const Tensor &value) {
            recorded(g, [&] { g.output(name, value, Here::current()); });
          },
          py::arg("name"), py::arg("value"))
      .def(
          "constant",
          [](Graph &g, const Shape &shape, const std::vector<float> &values) {
            return recorded(
                g, [&] { return g.constant(shape, values, Here::current()); });
          },
          py::arg("shape"), py::arg("values"))
      .def(
          "parameter",
          [](Graph &g, const std::string &name, const Shape &shape,
             std::vector<float> values) {
            return recorded(g, [&] {
              return g.parameter(name, shape, std::move(values), {},
                                 Here::current());
            });
          },
          py::arg("name"), py::arg("shape"), py::arg("values"))
      .def("manual_seed", &Graph::manual_seed, py::arg("seed"))
      .def("manualSeed", &Graph::manual_seed, py::arg("seed"))
      .def("num_ops", &Graph::numOps)
      .def("parameters", &Graph::parameters)
      .def(
          "str",
          [](const Graph &g, bool locations) {
            return g.str({.locations = locations});
          },
          py::arg("locations") = false)
      .def("__str__", [](const Graph &g) { return g.str(); });
}

/// Runs `f`, which records an op on `x`'s graph, as recorded() does.
template <typename F> auto at(const Tensor &x, F f) {
  return recorded(graphOf(x), f);
}

/// Unary and binary arithmetic, activations, casts and where.
void bindElementwiseOps(py::module_ &m) {
  struct U {
    const char *name;
    Unary f;
  };
  for (const U &u : {U{"neg", &neg},
                     U{"exp", &locus::exp},
                     U{"log", &locus::log},
                     U{"sqrt", &locus::sqrt},
                     U{"relu", &relu},
                     U{"sigmoid", &sigmoid},
                     U{"tanh", &locus::tanh},
                     U{"erf", &locus::erf},
                     U{"sin", &locus::sin},
                     U{"cos", &locus::cos},
                     U{"abs", &locus::abs},
                     U{"rsqrt", &rsqrt},
                     U{"floor", &locus::floor},
                     U{"ceil", &locus::ceil},
                     U{"round", &locus::round},
                     U{"sign", &locus::sign},
                     U{"reciprocal", &reciprocal},
                     U{"silu", &silu},
                     U{"relu6", &relu6},
                     U{"hardsigmoid", &hardsigmoid},
                     U{"hardswish", &hardswish},
                     U{"mish", &mish}})
    defUnary(m, u.name, u.f);
  struct B {
    const char *name;
    Binary f;
  };
  for (const B &b :
       {B{"add", &add}, B{"sub", &sub}, B{"mul", &mul}, B{"div", &div},
        B{"maximum", &maximum}, B{"minimum", &minimum}, B{"fmod", &locus::fmod},
        B{"remainder", &locus::remainder}, B{"eq", &eq}, B{"ne", &ne},
        B{"lt", &lt}, B{"le", &le}, B{"gt", &gt}, B{"ge", &ge},
        B{"matmul", &matmul}, B{"bmm", &bmm}})
    defBinary(m, b.name, b.f);

  m.def(
      "gelu",
      [](const Tensor &x, const std::string &approximate) {
        return at(x, [&] { return gelu(x, approximate, Here::current()); });
      },
      py::arg("x"), py::arg("approximate") = "none");
  m.def(
      "pow",
      [](const Tensor &x, double e) {
        return at(x, [&] { return locus::pow(x, e, Here::current()); });
      },
      py::arg("x"), py::arg("exponent"));
  for (const char *name : {"leakyRelu", "leaky_relu"})
    m.def(
        name,
        [](const Tensor &x, double slope) {
          return at(x, [&] { return leaky_relu(x, slope, Here::current()); });
        },
        py::arg("x"), py::arg("negative_slope") = 0.01);
  m.def(
      "hardtanh",
      [](const Tensor &x, double lo, double hi) {
        return at(x, [&] { return hardtanh(x, lo, hi, Here::current()); });
      },
      py::arg("x"), py::arg("min_val") = -1.0, py::arg("max_val") = 1.0);
  m.def(
      "softplus",
      [](const Tensor &x, double beta, double threshold) {
        return at(
            x, [&] { return softplus(x, beta, threshold, Here::current()); });
      },
      py::arg("x"), py::arg("beta") = 1.0, py::arg("threshold") = 20.0);
  m.def(
      "elu",
      [](const Tensor &x, double alpha) {
        return at(x, [&] { return elu(x, alpha, Here::current()); });
      },
      py::arg("x"), py::arg("alpha") = 1.0);
  m.def(
      "cast",
      [](const Tensor &x, const std::string &dtype) {
        return at(x,
                  [&] { return cast(x, parseDType(dtype), Here::current()); });
      },
      py::arg("x"), py::arg("dtype"));
  m.def(
      "where",
      [](const Tensor &c, const Tensor &a, const Tensor &b) {
        return at(c, [&] { return where(c, a, b, Here::current()); });
      },
      py::arg("cond"), py::arg("a"), py::arg("b"));
}

/// Reshapes, permutations and concatenation.
void bindShapeOps(py::module_ &m) {
  m.def(
      "reshape",
      [](const Tensor &x, const Shape &shape) {
        return at(x, [&] { return reshape(x, shape, Here::current()); });
      },
      py::arg("x"), py::arg("shape"));
  m.def(
      "permute",
      [](const Tensor &x, const std::vector<int64_t> &dims) {
        return at(x, [&] { return permute(x, dims, Here::current()); });
      },
      py::arg("x"), py::arg("dims"));
  m.def(
      "transpose",
      [](const Tensor &x, int64_t d0, int64_t d1) {
        return at(x, [&] { return transpose(x, d0, d1, Here::current()); });
      },
      py::arg("x"), py::arg("dim0"), py::arg("dim1"));
  m.def(
      "flatten",
      [](const Tensor &x, int64_t start, int64_t end) {
        return at(x, [&] { return flatten(x, start, end, Here::current()); });
      },
      py::arg("x"), py::arg("start_dim") = 0, py::arg("end_dim") = -1);
  m.def(
      "narrow_to",
      [](const Tensor &x, const std::vector<InputDim> &dims) {
        return at(x, [&] { return narrow_to(x, dims, Here::current()); });
      },
      py::arg("x"), py::arg("dims"),
      "The leading window of x whose extent each run gives: a causal mask "
      "built at the bound, at the run's length, is narrow_to(mask, "
      "[locus.dyn('seq', 16)] * 2).");
  m.def(
      "dynamic_shape",
      [](const Tensor &x) {
        return at(x, [&] { return dynamic_shape(x, Here::current()); });
      },
      py::arg("x"),
      "x's dimensions as the graph knows them: ints and locus.dyn sizes.");
  for (const char *name : {"cat", "concat"})
    m.def(
        name,
        [](const std::vector<Tensor> &xs, int64_t dim) {
          if (xs.empty())
            throw py::value_error("cat needs at least one tensor");
          return recorded(graphOf(xs[0]),
                          [&] { return concat(xs, dim, Here::current()); });
        },
        py::arg("tensors"), py::arg("dim") = 0);
}

/// Reductions over axes, softmax and log-softmax.
void bindReductionOps(py::module_ &m) {
  using Reduce =
      Tensor (*)(const Tensor &, const std::vector<int64_t> &, bool, Here);
  struct R {
    const char *name;
    Reduce f;
  };
  for (const R &r : {R{"sum", &locus::sum}, R{"mean", &locus::mean},
                     R{"max", &locus::max}, R{"min", &locus::min}})
    m.def(
        r.name,
        [f = r.f](const Tensor &x, const std::vector<int64_t> &axes,
                  bool keepdim) {
          return at(x, [&] { return f(x, axes, keepdim, Here::current()); });
        },
        py::arg("x"), py::arg("axes"), py::arg("keepdim") = false);
  using Axis = Tensor (*)(const Tensor &, int64_t, Here);
  for (auto [name, f] : {std::pair<const char *, Axis>{"softmax", &softmax},
                         {"logSoftmax", &log_softmax},
                         {"log_softmax", &log_softmax}})
    m.def(
        name,
        [f = f](const Tensor &x, int64_t axis) {
          return at(x, [&] { return f(x, axis, Here::current()); });
        },
        py::arg("x"), py::arg("axis"));
}

/// Layers' ops (linear, convolution, pooling), losses and gradients.
void bindNnOps(py::module_ &m) {
  m.def(
      "linear",
      [](const Tensor &x, const Tensor &w, std::optional<Tensor> b) {
        return at(x, [&] {
          return linear(x, w, b.value_or(Tensor()), Here::current());
        });
      },
      py::arg("x"), py::arg("weight"), py::arg("bias") = py::none());
  m.def(
      "conv2d",
      [](const Tensor &x, const Tensor &w, std::optional<Tensor> b,
         const py::object &stride, const py::object &padding,
         const py::object &dilation, int64_t groups) {
        Conv2dParams p{pairArg(stride), pairArg(padding), pairArg(dilation),
                       groups};
        return at(x, [&] {
          return conv2d(x, w, b.value_or(Tensor()), p, Here::current());
        });
      },
      py::arg("x"), py::arg("weight"), py::arg("bias") = py::none(),
      py::arg("stride") = 1, py::arg("padding") = 0, py::arg("dilation") = 1,
      py::arg("groups") = 1);
  m.def(
      "conv_transpose2d",
      [](const Tensor &x, const Tensor &w, std::optional<Tensor> b,
         const py::object &stride, const py::object &padding,
         const py::object &outputPadding, int64_t groups,
         const py::object &dilation) {
        ConvTranspose2dParams p{pairArg(stride), pairArg(padding),
                                pairArg(outputPadding), pairArg(dilation),
                                groups};
        return at(x, [&] {
          return conv_transpose2d(x, w, b.value_or(Tensor()), p,
                                  Here::current());
        });
      },
      py::arg("x"), py::arg("weight"), py::arg("bias") = py::none(),
      py::arg("stride") = 1, py::arg("padding") = 0,
      py::arg("output_padding") = 0, py::arg("groups") = 1,
      py::arg("dilation") = 1);
  m.def(
      "conv1d",
      [](const Tensor &x, const Tensor &w, std::optional<Tensor> b,
         int64_t stride, int64_t padding, int64_t dilation, int64_t groups) {
        Conv1dParams p{stride, padding, dilation, groups};
        return at(x, [&] {
          return conv1d(x, w, b.value_or(Tensor()), p, Here::current());
        });
      },
      py::arg("x"), py::arg("weight"), py::arg("bias") = py::none(),
      py::arg("stride") = 1, py::arg("padding") = 0, py::arg("dilation") = 1,
      py::arg("groups") = 1);
  auto poolParams = [](const py::object &kernel, const py::object &stride,
                       const py::object &padding, bool ceilMode,
                       bool countIncludePad) {
    return Pool2dParams{pairArg(kernel),
                        stride.is_none() ? std::vector<int64_t>{}
                                         : pairArg(stride),
                        pairArg(padding), ceilMode, countIncludePad};
  };
  for (const char *name : {"maxPool2d", "max_pool2d"})
    m.def(
        name,
        [poolParams](const Tensor &x, const py::object &kernel,
                     const py::object &stride, const py::object &padding,
                     const py::object &dilation, bool ceilMode,
                     bool returnIndices) {
          requirePlainMaxPool("max_pool2d", dilation, returnIndices);
          Pool2dParams p = poolParams(kernel, stride, padding, ceilMode, true);
          return at(x, [&] { return max_pool2d(x, p, Here::current()); });
        },
        py::arg("x"), py::arg("kernel_size"), py::arg("stride") = py::none(),
        py::arg("padding") = 0, py::arg("dilation") = 1,
        py::arg("ceil_mode") = false, py::arg("return_indices") = false);
  m.def(
      "avg_pool2d",
      [poolParams](const Tensor &x, const py::object &kernel,
                   const py::object &stride, const py::object &padding,
                   bool ceilMode, bool countIncludePad) {
        Pool2dParams p =
            poolParams(kernel, stride, padding, ceilMode, countIncludePad);
        return at(x, [&] { return avg_pool2d(x, p, Here::current()); });
      },
      py::arg("x"), py::arg("kernel_size"), py::arg("stride") = py::none(),
      py::arg("padding") = 0, py::arg("ceil_mode") = false,
      py::arg("count_include_pad") = true);
  m.def(
      "prelu",
      [](const Tensor &x, const Tensor &w) {
        return at(x, [&] { return prelu(x, w, Here::current()); });
      },
      py::arg("x"), py::arg("weight"));
  m.def(
      "one_hot",
      [](const Tensor &labels, int64_t classes, const std::string &dtype) {
        return at(labels, [&] {
          return one_hot(labels, classes, parseDType(dtype), Here::current());
        });
      },
      py::arg("labels"), py::arg("num_classes"), py::arg("dtype") = "i64",
      "torch.nn.functional.one_hot (num_classes must be given).");
  using RandomFn = Tensor (*)(Graph &, const Shape &, Here);
  for (auto [name, fn] :
       {std::pair<const char *, RandomFn>{"rand", rand}, {"randn", randn}})
    m.def(
        name,
        [fn](Graph &g, const Shape &shape) {
          return recorded(g, [&] { return fn(g, shape, Here::current()); });
        },
        py::arg("graph"), py::arg("size"),
        "torch.rand / torch.randn in graph `graph`: a new draw every run.");
  m.def(
      "bernoulli",
      [](const Tensor &p) {
        return at(p, [&] { return bernoulli(p, Here::current()); });
      },
      py::arg("p"));
  using LossFn = Tensor (*)(const Tensor &, const Tensor &, Reduction, Here);
  for (auto [name, fn] :
       {std::pair<const char *, LossFn>{"l1_loss", l1_loss},
        {"binary_cross_entropy", binary_cross_entropy},
        {"binary_cross_entropy_with_logits", binary_cross_entropy_with_logits},
        {"nll_loss", nll_loss}})
    m.def(
        name,
        [fn](const Tensor &x, const Tensor &t, const std::string &reduction) {
          return at(x, [&] {
            return fn(x, t, parseReduction(reduction), Here::current());
          });
        },
        py::arg("input"), py::arg("target"), py::arg("reduction") = "mean");
  m.def(
      "smooth_l1_loss",
      [](const Tensor &x, const Tensor &t, const std::string &reduction,
         double beta) {
        return at(x, [&] {
          return smooth_l1_loss(x, t, parseReduction(reduction), beta,
                                Here::current());
        });
      },
      py::arg("input"), py::arg("target"), py::arg("reduction") = "mean",
      py::arg("beta") = 1.0);
  for (const char *name : {"mseLoss", "mse_loss"})
    m.def(
        name,
        [](const Tensor &x, const Tensor &t, const std::string &reduction) {
          return at(x, [&] {
            return mse_loss(x, t, parseReduction(reduction), Here::current());
          });
        },
        py::arg("input"), py::arg("target"), py::arg("reduction") = "mean");
  m.def(
      "grad",
      [](const Tensor &loss, const std::vector<Tensor> &wrt) {
        return recorded(graphOf(loss), [&] {
          return locus::grad(loss, wrt, Here::current());
        });
      },
      py::arg("loss"), py::arg("wrt"),
      "torch.autograd.grad(loss, wrt): the gradients, recorded in the graph.");
  for (const char *name : {"crossEntropy", "cross_entropy"})
    m.def(
        name,
        [](const Tensor &x, const Tensor &t, const std::string &reduction) {
          return at(x, [&] {
            return cross_entropy(x, t, parseReduction(reduction),
                                 Here::current());
          });
        },
        py::arg("logits"), py::arg("labels"), py::arg("reduction") = "mean");
}

void bindOps(py::module_ &m) {
  bindElementwiseOps(m);
  bindShapeOps(m);
  bindReductionOps(m);
  bindNnOps(m);
}

// ---- compile() and CompiledModel -------------------------------------------

/// One step of `model` (a CompiledModel or a TrainEvalModel) on NumPy
/// inputs, without the GIL while it runs; the outputs as NumPy arrays.
template <typename Model>
py::dict runStep(Model &model, const py::kwargs &inputs) {
  std::map<std::string, HostTensor> host = hostInputs(inputs);
  std::map<std::string, HostTensor> out;
  {
    py::gil_scoped_release release;
    out = model.run(host);
  }
  return numpyOutputs(out);
}

void bindCompile(py::module_ &m) {
  py::class_<CompiledModel>(m, "CompiledModel")
      .def(
          "run",
          [](const CompiledModel &model, const py::kwargs &inputs) {
            return runStep(model, inputs);
          },
          "Runs one step: every input by name (NumPy arrays); returns every "
          "output by name.")
      .def("placement_summary", &CompiledModel::placementSummary)
      .def("runtime_report", &CompiledModel::runtimeReport)
      .def("kernel_count", &CompiledModel::kernelCount)
      .def("estimated_step_ns", &CompiledModel::estimatedStepNs)
      .def_property_readonly("input_names", &CompiledModel::inputNames)
      .def_property_readonly("output_names", &CompiledModel::outputNames)
      .def_property_readonly("state_names", &CompiledModel::stateNames)
      .def(
          "state",
          [](const CompiledModel &model, const std::string &name) {
            return toNumpy(model.state(name));
          },
          py::arg("name"))
      .def("state_dict",
           [](const CompiledModel &model) {
             return numpyOutputs(model.state_dict());
           })
      .def(
          "set_state",
          [](CompiledModel &model, const std::string &name,
             const py::handle &value) {
            model.setState(name, toHost(name, value));
          },
          py::arg("name"), py::arg("value"))
      .def(
          "save",
          [](const CompiledModel &model, const std::string &path,
             const std::string &cpu,
             const std::string &signKey) { model.save(path, cpu, signKey); },
          py::arg("path"), py::arg("cpu") = "x86-64-v3",
          py::arg("sign_key") = "")
      .def("save_state", &CompiledModel::saveState, py::arg("path"))
      .def("load_state", &CompiledModel::loadState, py::arg("path"),
           py::arg("strict") = true)
      .def("write_trace", &CompiledModel::writeTrace, py::arg("path"))
      .def_property_readonly("from_cache", &CompiledModel::fromCache,
                             "Whether compile() took it from the compile "
                             "cache.")
      .def("join_data_parallel", &CompiledModel::joinDataParallel,
           py::arg("comm"),
           "Joins a data-parallel job (compiled with data_parallel=True): "
           "every rank calls it once before its first step; rank 0's state "
           "goes to every rank.");

  py::class_<Communicator>(
      m, "Communicator",
      "This process's place in a data-parallel job, from mpirun or srun "
      "(Open MPI), or world size 1 without a launcher.")
      .def_static("from_environment", &Communicator::fromEnvironment)
      .def_property_readonly("rank", &Communicator::rank)
      .def_property_readonly("size", &Communicator::size)
      .def_property_readonly("local_rank", &Communicator::localRank)
      .def_property_readonly("backend", &Communicator::backend)
      .def("shard", &Communicator::shard, py::arg("count"),
           py::arg("drop_last") = false,
           "This rank's sample indices, as torch's DistributedSampler "
           "(shuffle=False) gives them.");

  // torch.no_grad(): ops recorded inside carry no gradient.
  struct NoGrad {
    std::unique_ptr<NoGradGuard> guard;
  };
  py::class_<NoGrad>(m, "no_grad",
                     "with locus.no_grad(): ops recorded inside carry no "
                     "gradient (autodiff treats them as constants), as "
                     "torch.no_grad().")
      .def(py::init<>())
      .def(
          "__enter__",
          [](NoGrad &self) {
            self.guard = std::make_unique<NoGradGuard>();
            return &self;
          },
          py::return_value_policy::reference)
      .def("__exit__", [](NoGrad &self, const py::args &) {
        self.guard.reset();
        return false;
      });
  m.def("is_grad_enabled", &is_grad_enabled,
        "False inside `with locus.no_grad():`.");

  m.def(
      "compile",
      [](const Graph &graph, const std::string &policy,
         std::optional<std::vector<std::string>> devices,
         const std::string &profile, bool fuse, const std::string &deviceMap,
         const std::string &trace, bool allowSoftPlacement, bool allowTf32,
         bool cache, const std::string &cacheDir, bool dataParallel,
         double bucketMb, bool eval, const std::string &precision) {
        CompileOptions o;
        o.policy = policy;
        if (devices)
          o.devices = *devices;
        o.profile = profile;
        o.fuse = fuse;
        o.deviceMap = deviceMap;
        o.trace = trace;
        o.allowSoftPlacement = allowSoftPlacement;
        o.allowTf32 = allowTf32;
        o.cache = cache;
        o.cacheDir = cacheDir;
        o.dataParallel = dataParallel;
        o.eval = eval;
        o.precision = precision;
        if (!(bucketMb > 0))
          throw py::value_error("bucket_mb must be above 0");
        o.bucketBytes =
            std::max<uint64_t>(1, static_cast<uint64_t>(bucketMb * (1 << 20)));
        PyLine here = callerLine();
        try {
          return compile(graph, o);
        } catch (const Error &e) {
          // Errors at ops carry the Python lines they were recorded at.
          raise(e.file().empty() ? here.file : e.file(),
                e.file().empty() ? here.line : e.line(), e.message(), e.what());
        }
      },
      py::arg("graph"), py::arg("policy") = "auto",
      py::arg("devices") = py::none(), py::arg("profile") = "",
      py::arg("fuse") = true, py::arg("device_map") = "", py::arg("trace") = "",
      py::arg("allow_soft_placement") = false, py::arg("allow_tf32") = false,
      py::arg("cache") = true, py::arg("cache_dir") = "",
      py::arg("data_parallel") = false, py::arg("bucket_mb") = 25.0,
      py::arg("eval") = false, py::arg("precision") = "fp32",
      "Compiles a graph: places it (policy: strict, prefer-gpu, auto, cpu) "
      "on `devices` (default: this machine's), inserts the copies and "
      "compiles the kernels for this CPU. allow_tf32: convolutions and "
      "matrix products on a GPU may round their operands to TF32. cache: "
      "keep the result in the compile cache (cache_dir, else "
      "LOCUS_CACHE_DIR, $XDG_CACHE_HOME/locus or ~/.cache/locus) and take "
      "it from there when the same graph was compiled before with the same "
      "options. data_parallel: average the parameters' gradients over the "
      "ranks of a job (DistributedDataParallel; buckets of bucket_mb MiB). "
      "precision: fp32, tf32, bf16 or f16, as torch.autocast: matrix "
      "products and convolutions in 16 bits with f32 accumulation, the rest "
      "in f32.");

  m.def(
      "import_onnx",
      [](const std::string &path, const std::map<std::string, Shape> &shapes,
         const std::string &name,
         const std::map<std::string, int64_t> &dynamic) {
        OnnxImportOptions o;
        o.shapes = shapes;
        o.graphName = name;
        o.dynamicSizes = dynamic;
        try {
          return importOnnx(path, o);
        } catch (const Error &e) {
          raise(e.file(), e.line(), e.message(), e.what());
        }
      },
      py::arg("path"), py::arg("shapes") = std::map<std::string, Shape>{},
      py::arg("name") = "",
      py::arg("dynamic") = std::map<std::string, int64_t>{},
      "Imports an ONNX model as a Graph; `shapes` gives the whole shape of "
      "each input with symbolic dimensions, `dynamic` keeps symbolic "
      "dimensions dynamic up to a bound ({'batch': 64}).");
  m.def("onnx_supported_ops", &onnxSupportedOps);
  m.def("machine_targets", &machineTargets);
}

/// locus.TrainEvalModel: a training step and its evaluation form, switched
/// with train() / eval() as a torch.nn.Module is.
void bindTrainEval(py::module_ &m) {
  py::class_<TrainEvalModel>(m, "TrainEvalModel")
      .def(py::init<CompiledModel, CompiledModel>(), py::arg("training"),
           py::arg("evaluation"),
           "From compile(g) and compile(g, eval=True) of one graph.")
      .def(
          "train",
          [](py::object self, bool mode) {
            self.cast<TrainEvalModel &>().train(mode);
            return self;
          },
          py::arg("mode") = true)
      .def("eval",
           [](py::object self) {
             self.cast<TrainEvalModel &>().eval();
             return self;
           })
      .def_property_readonly("training", &TrainEvalModel::is_training)
      .def(
          "run",
          [](TrainEvalModel &model, const py::kwargs &inputs) {
            return runStep(model, inputs);
          },
          "One step of the current mode: every input by name (NumPy "
          "arrays); returns every output by name.")
      .def("state_dict",
           [](const TrainEvalModel &model) {
             return numpyOutputs(model.state_dict());
           })
      .def(
          "set_state",
          [](TrainEvalModel &model, const std::string &name,
             const py::handle &value) {
            model.setState(name, toHost(name, value));
          },
          py::arg("name"), py::arg("value"))
      .def_property_readonly("training_model", &TrainEvalModel::trainingModel)
      .def_property_readonly("eval_model", &TrainEvalModel::evaluationModel);
}

// ---- locus.runtime ----------------------------------------------------------

/// A loaded artifact and one context of it.
struct RuntimeModel {
  /// The arrays registered with the model, by address: each is kept
  /// alive while its memory is registered (and past the model, which
  /// unregisters what is left when it goes: declared first, so destroyed
  /// last).
  std::map<const void *, py::object> registered;
  rt::Model model;
  std::unique_ptr<rt::Context> context;
  std::mutex mutex; // one run at a time on the context
  explicit RuntimeModel(rt::Model m)
      : model(std::move(m)), context(std::make_unique<rt::Context>(model)) {}
};

[[noreturn]] void raiseRuntime(const rt::Error &e) {
  std::string text =
      std::string(locus_status_code_name(e.code())) + ": " + e.what();
  raise("", 0, e.what(), text);
}

py::dtype numpyDType(locus_dtype_t dtype) {
  switch (dtype) {
  case LOCUS_DTYPE_I64:
    return py::dtype::of<int64_t>();
  case LOCUS_DTYPE_I32:
    return py::dtype::of<int32_t>();
  case LOCUS_DTYPE_I1:
    return py::dtype::of<bool>();
  case LOCUS_DTYPE_F16:
    return py::dtype("float16");
  case LOCUS_DTYPE_BF16: // its bits: NumPy has no bfloat16
    return py::dtype::of<uint16_t>();
  case LOCUS_DTYPE_F32:
  default:
    return py::dtype::of<float>();
  }
}

/// A shape as Python writes a tuple: (8,), (100, 10).
std::string tupleText(const std::vector<int64_t> &shape) {
  std::string text = "(";
  for (size_t i = 0; i < shape.size(); ++i)
    text += (i ? ", " : "") + std::to_string(shape[i]);
  return text + (shape.size() == 1 ? ",)" : ")");
}

/// Names joined with ", ".
std::string joined(const std::vector<std::string> &names) {
  std::string text;
  for (const std::string &n : names)
    text += (text.empty() ? "" : ", ") + n;
  return text;
}

/// `value` as a C-ordered array of input `info`'s dtype, after checking
/// its dtype and shape as PyTorch checks a tensor's (TypeError, ValueError).
py::array runtimeInput(const rt::TensorInfo &info, const py::handle &value) {
  py::array a = py::array::ensure(value);
  if (!a)
    throw py::type_error("input '" + info.name + "' is not an array");
  std::optional<locus_dtype_t> dtype = locusDTypeOf(a);
  if (!dtype || *dtype != info.dtype)
    throw py::type_error("input '" + info.name + "' has dtype " +
                         py::str(a.dtype()).cast<std::string>() +
                         "; the model takes " +
                         py::str(numpyDType(info.dtype)).cast<std::string>());
  std::vector<int64_t> shape(a.shape(), a.shape() + a.ndim());
  if (shape != info.shape)
    throw py::value_error("input '" + info.name + "' has shape " +
                          tupleText(shape) + "; the model takes " +
                          tupleText(info.shape));
  // No copy where it already is what the model takes (memory the user
  // registered is then read where it lies).
  return py::array::ensure(
      a.attr("astype")(numpyDType(info.dtype), py::arg("copy") = false),
      py::array::c_style);
}

/// Refuses a path with a NUL byte, which C would silently cut short.
std::string checkedPath(const std::string &path, const char *what) {
  if (path.find('\0') != std::string::npos)
    throw py::value_error(std::string(what) + " contains a NUL byte");
  return path;
}

std::vector<std::string> namesOf(const std::vector<rt::TensorInfo> &tensors) {
  std::vector<std::string> names;
  names.reserve(tensors.size());
  for (const auto &t : tensors)
    names.push_back(t.name);
  return names;
}

/// Input (or output) `name` of `r`; a KeyError naming the model's others
/// if it has none of that name.
rt::TensorInfo tensorNamed(const RuntimeModel &r, const std::string &name,
                           bool input) {
  const std::vector<rt::TensorInfo> tensors =
      input ? r.model.inputs() : r.model.outputs();
  auto info = std::find_if(tensors.begin(), tensors.end(),
                           [&](const auto &t) { return t.name == name; });
  if (info == tensors.end())
    throw py::key_error(std::string(input ? "input" : "output") + " '" + name +
                        "' is not the model's; its " +
                        (input ? "inputs: " : "outputs: ") +
                        joined(namesOf(tensors)));
  return *info;
}

/// Input or output `name` of `self` (a RuntimeModel) as a NumPy array over
/// the context's view of it, holding `self` alive; an output's is
/// read-only.
py::array runtimeView(const py::object &self, const std::string &name,
                      bool input) {
  auto &r = self.cast<RuntimeModel &>();
  const rt::TensorInfo info = tensorNamed(r, name, input);
  void *data = nullptr;
  try {
    py::gil_scoped_release release;
    std::lock_guard lock(r.mutex);
    data = input ? r.context->inputView(name)
                 : const_cast<void *>(r.context->outputView(name));
  } catch (const rt::Error &e) {
    raiseRuntime(e);
  }
  std::vector<py::ssize_t> shape(info.shape.begin(), info.shape.end());
  py::array view(numpyDType(info.dtype), shape, data, self);
  if (!input)
    view.attr("setflags")(py::arg("write") = false);
  return view;
}

/// `value` as a C-contiguous NumPy array whose memory the runtime may
/// register: a TypeError for anything but an array, a ValueError for one
/// that is not C-contiguous (a copy would register nothing).
py::array contiguousArray(const py::handle &value, const char *what) {
  if (!py::isinstance<py::array>(value))
    throw py::type_error(std::string(what) + " must be a NumPy array");
  auto a = py::reinterpret_borrow<py::array>(value);
  if (!(a.flags() & py::array::c_style))
    throw py::value_error(std::string(what) +
                          " must be C-contiguous (np.ascontiguousarray)");
  return a;
}

/// Output `name` of the last run read into `out` (a C-contiguous,
/// writable array of the output's dtype and shape), or into a new array.
py::array readRuntimeOutput(RuntimeModel &r, const std::string &name,
                            const py::object &out) {
  const rt::TensorInfo info = tensorNamed(r, name, /*input=*/false);
  std::vector<py::ssize_t> shape(info.shape.begin(), info.shape.end());
  py::array into = out.is_none() ? py::array(numpyDType(info.dtype), shape)
                                 : contiguousArray(out, "out");
  std::vector<int64_t> got(into.shape(), into.shape() + into.ndim());
  if (!into.dtype().equal(numpyDType(info.dtype)) || got != info.shape)
    throw py::value_error(
        "out has dtype " + py::str(into.dtype()).cast<std::string>() +
        " and shape " + tupleText(got) + "; output '" + name + "' is " +
        py::str(numpyDType(info.dtype)).cast<std::string>() + " of shape " +
        tupleText(info.shape));
  if (!into.writeable())
    throw py::value_error("out is read-only");
  void *data = into.mutable_data();
  try {
    py::gil_scoped_release release;
    std::lock_guard lock(r.mutex);
    r.context->readOutput(name, data, info.byteSize);
  } catch (const rt::Error &e) {
    raiseRuntime(e);
  }
  return into;
}

void bindRuntimeMemory(py::class_<RuntimeModel> &model) {
  model
      .def(
          "register_host",
          [](RuntimeModel &r, const py::object &array) {
            py::array a = contiguousArray(array, "register_host's array");
            const void *data = a.data();
            bool pinned = false;
            try {
              py::gil_scoped_release release;
              std::lock_guard lock(r.mutex);
              pinned = r.model.registerHost(const_cast<void *>(data),
                                            static_cast<size_t>(a.nbytes()));
              // Recorded under the model's lock (no thread waits for the
              // lock holding the GIL), so that an unregister between the
              // two cannot drop the array while its memory stays
              // registered.
              py::gil_scoped_acquire gil;
              r.registered[data] = a;
            } catch (const rt::Error &e) {
              raiseRuntime(e);
            }
            return pinned;
          },
          py::arg("array"),
          "Registers a NumPy array's memory with the model: set_input from "
          "it and read_output into it then copy by DMA on a GPU, without "
          "staging. Returns whether the memory is page-locked now (False "
          "on cpu and sim, where nothing needs it). The model keeps the "
          "array until unregister_host or its own end.")
      .def(
          "unregister_host",
          [](RuntimeModel &r, const py::object &array) {
            py::array a = contiguousArray(array, "unregister_host's array");
            const void *data = a.data();
            py::object held; // released after the lock, with the GIL
            try {
              py::gil_scoped_release release;
              std::lock_guard lock(r.mutex);
              r.model.unregisterHost(const_cast<void *>(data));
              py::gil_scoped_acquire gil;
              auto it = r.registered.find(data);
              if (it != r.registered.end()) {
                held = std::move(it->second);
                r.registered.erase(it);
              }
            } catch (const rt::Error &e) {
              raiseRuntime(e);
            }
          },
          py::arg("array"), "Undoes register_host for that array.")
      .def(
          "set_input",
          [](RuntimeModel &r, const std::string &name,
             const py::object &value) {
            const rt::TensorInfo info = tensorNamed(r, name, /*input=*/true);
            py::array a = runtimeInput(info, value);
            try {
              py::gil_scoped_release release;
              std::lock_guard lock(r.mutex);
              r.context->setInput(name, a.data(), info.byteSize);
            } catch (const rt::Error &e) {
              raiseRuntime(e);
            }
          },
          py::arg("name"), py::arg("value"),
          "Copies input `name` in for the next run_in_place (straight from "
          "the array where it is C-contiguous and of the input's dtype).")
      .def(
          "read_output",
          [](RuntimeModel &r, const std::string &name, const py::object &out) {
            return readRuntimeOutput(r, name, out);
          },
          py::arg("name"), py::arg("out") = py::none(),
          "Output `name` of the last run, copied into `out` (C-contiguous, "
          "writable, of the output's dtype and shape) or into a new array.");
}

void bindRuntime(py::module_ &m) {
  py::module_ runtime =
      m.def_submodule("runtime", "loading and running saved artifacts");
  py::class_<RuntimeModel> model(runtime, "Model");
  bindRuntimeMemory(model);
  model
      .def_property_readonly(
          "report", [](const RuntimeModel &r) { return r.model.report(); })
      .def_property_readonly(
          "input_names",
          [](const RuntimeModel &r) { return namesOf(r.model.inputs()); })
      .def_property_readonly(
          "output_names",
          [](const RuntimeModel &r) { return namesOf(r.model.outputs()); })
      .def(
          "run",
          [](RuntimeModel &r, const py::kwargs &inputs) {
            // Inputs are converted with the GIL held; then, with it
            // released, the model's lock covers setting them, the run and
            // reading the outputs (a context belongs to one thread at a
            // time); the NumPy outputs are made with the GIL again.
            std::vector<rt::TensorInfo> ins = r.model.inputs();
            std::vector<rt::TensorInfo> outs = r.model.outputs();
            std::vector<std::string> names = namesOf(ins);
            for (auto [key, value] : inputs) {
              std::string name = py::str(key);
              if (std::find(names.begin(), names.end(), name) == names.end())
                throw py::type_error("run() got an unexpected input '" + name +
                                     "'; the model's inputs: " + joined(names));
            }
            std::vector<py::array> arrays;
            arrays.reserve(ins.size());
            for (const auto &info : ins) {
              if (!inputs.contains(info.name))
                throw py::key_error("input '" + info.name + "' was not given");
              py::array c = runtimeInput(info, inputs[info.name.c_str()]);
              if (!c || static_cast<size_t>(c.nbytes()) != info.byteSize)
                throw py::value_error("input '" + info.name +
                                      "' could not be converted");
              arrays.push_back(std::move(c));
            }
            // The outputs are read straight into their NumPy arrays, made
            // beforehand (their memory stays put without the GIL).
            py::dict out;
            std::vector<void *> into;
            for (const auto &info : outs) {
              std::vector<py::ssize_t> shape(info.shape.begin(),
                                             info.shape.end());
              py::array a(numpyDType(info.dtype), shape);
              into.push_back(a.mutable_data());
              out[py::str(info.name)] = a;
            }
            try {
              py::gil_scoped_release release;
              std::lock_guard lock(r.mutex);
              for (size_t i = 0; i < ins.size(); ++i)
                r.context->setInput(ins[i].name, arrays[i].data(),
                                    ins[i].byteSize);
              r.context->run();
              for (size_t i = 0; i < outs.size(); ++i)
                r.context->readOutput(outs[i].name, into[i], outs[i].byteSize);
            } catch (const rt::Error &e) {
              raiseRuntime(e);
            }
            return out;
          },
          "Runs one step: every input by name; returns every output.")
      .def(
          "input_view",
          [](const py::object &self, const std::string &name) {
            return runtimeView(self, name, /*input=*/true);
          },
          py::arg("name"),
          "Input `name` as a writable NumPy array over the memory the "
          "runtime reads it from (pinned where a GPU is loaded): write the "
          "batch there, then run_in_place(); no copy.")
      .def(
          "output_view",
          [](const py::object &self, const std::string &name) {
            return runtimeView(self, name, /*input=*/false);
          },
          py::arg("name"),
          "Output `name` of the last run as a read-only NumPy array over "
          "the runtime's memory, valid until the next run; no copy into "
          "yours.")
      .def(
          "run_in_place",
          [](RuntimeModel &r) {
            try {
              py::gil_scoped_release release;
              std::lock_guard lock(r.mutex);
              r.context->run();
            } catch (const rt::Error &e) {
              raiseRuntime(e);
            }
          },
          "Runs one step on what the inputs hold (set through input_view "
          "or an earlier run); read the outputs with output_view.")
      .def(
          "write_trace",
          [](const RuntimeModel &r, const std::string &path) {
            try {
              r.model.writeTrace(checkedPath(path, "the trace path"));
            } catch (const rt::Error &e) {
              raiseRuntime(e);
            }
          },
          py::arg("path"));
  runtime.def(
      "load",
      [](const std::string &path, const std::string &deviceMap,
         const std::vector<std::string> &trustedKeys, const std::string &trace,
         uint64_t maxBytes) {
        rt::Model::LoadOptions o;
        o.maxBytes = maxBytes;
        o.deviceMap = checkedPath(deviceMap, "device_map");
        o.trustedKeys = trustedKeys;
        for (const std::string &key : trustedKeys)
          checkedPath(key, "a trusted key's path");
        o.tracePath = checkedPath(trace, "the trace path");
        try {
          return std::make_unique<RuntimeModel>(
              rt::Model::load(checkedPath(path, "the artifact's path"), o));
        } catch (const rt::Error &e) {
          raiseRuntime(e);
        }
      },
      py::arg("path"), py::arg("device_map") = "",
      py::arg("trusted_keys") = std::vector<std::string>{},
      py::arg("trace") = "", py::arg("max_bytes") = 0,
      "Loads an artifact and runs it as the runtime does: its own compiled "
      "code, no compile step.");
  // `import locus.runtime` works too.
  py::module_::import("sys").attr("modules")["locus.runtime"] = runtime;
  py::module_::import("sys").attr("modules")["locus.nn"] = m.attr("nn");
}

} // namespace

PYBIND11_MODULE(locus, m) {
  m.doc() = "Locus: record, place, compile and run computation graphs";
  m.attr("__version__") = LOCUS_VERSION;
  // Never destroyed: it must outlive the interpreter's finalisation.
  auto *error = new py::exception<Error>(m, "Error");
  errorType = error->ptr();
  // locus.RunError: a compiled model's run, state or save failed (a
  // RuntimeError, as before it had a type of its own).
  static PyObject *runErrorType =
      (new py::exception<RunError>(m, "RunError", PyExc_RuntimeError))->ptr();
  // An Error no binding turned into one at a Python line (one raised by a
  // call that records nothing) keeps its own location.
  // NOLINTNEXTLINE(performance-unnecessary-value-param): pybind11's type
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p)
        std::rethrow_exception(p);
    } catch (const Error &e) {
      py::object value =
          py::reinterpret_borrow<py::object>(errorType)(e.what());
      value.attr("file") = e.file();
      value.attr("line") = e.line();
      value.attr("message") = e.message();
      PyErr_SetObject(errorType, value.ptr());
    } catch (const RunError &e) {
      PyErr_SetString(runErrorType, e.what());
    }
  });
  bindTensor(m);
  bindGraph(m);
  bindOps(m);
  bindFunctional(m);
  bindNn(m);
  bindCompile(m);
  bindTrainEval(m);
  bindOptim(m);
  bindRuntime(m);
  bindAdvice(m);
}
