// functional.cpp - the torch-style surface beyond the basic ops: shape and
// indexing functions (slice, chunk, split, stack, masked_fill, triu, ...),
// normalisations and attention as functions, state updates, the graph's
// tensor factories, and Tensor methods (x.relu(), x.reshape(8, -1),
// x[:, 0], x.sum(1)), each recorded at the Python line that calls it.

#include "common.h"

#include <pybind11/stl.h>

#include <limits>
#include <optional>
#include <string>
#include <vector>

using namespace locus;
using namespace locus::python;

namespace {

/// `f(x, ...)` recorded at the caller's line in x's graph.
template <typename F> auto on(const Tensor &x, F f) {
  return recorded(graphOf(x), f);
}

/// An int or a list of ints (PyTorch's dim=1 or dim=(0, 1)); None is every
/// dimension of `x`.
std::vector<int64_t> dims(const Tensor &x, const py::object &value) {
  if (value.is_none()) {
    std::vector<int64_t> all(x.rank());
    for (size_t i = 0; i < all.size(); ++i)
      all[i] = static_cast<int64_t>(i);
    return all;
  }
  if (py::isinstance<py::int_>(value))
    return {value.cast<int64_t>()};
  return value.cast<std::vector<int64_t>>();
}

/// Shape arguments as PyTorch takes them: x.reshape(8, -1) or
/// x.reshape((8, -1)).
Shape shapeArgs(const py::args &args) {
  if (args.size() == 1 && !py::isinstance<py::int_>(args[0]))
    return args[0].cast<Shape>();
  return args.cast<Shape>();
}

void bindShapeFunctions(py::module_ &m) {
  m.def(
      "clamp",
      [](const Tensor &x, std::optional<double> lo, std::optional<double> hi) {
        return on(x, [&] { return clamp(x, lo, hi, Here::current()); });
      },
      py::arg("x"), py::arg("min") = py::none(), py::arg("max") = py::none());
  m.def(
      "masked_fill",
      [](const Tensor &x, const Tensor &mask, double value) {
        return on(x,
                  [&] { return masked_fill(x, mask, value, Here::current()); });
      },
      py::arg("x"), py::arg("mask"), py::arg("value"));
  m.def(
      "triu",
      [](const Tensor &x, int64_t d) {
        return on(x, [&] { return triu(x, d, Here::current()); });
      },
      py::arg("x"), py::arg("diagonal") = 0);
  m.def(
      "tril",
      [](const Tensor &x, int64_t d) {
        return on(x, [&] { return tril(x, d, Here::current()); });
      },
      py::arg("x"), py::arg("diagonal") = 0);
  m.def(
      "slice",
      [](const Tensor &x, int64_t dim, int64_t start, int64_t end,
         int64_t step) {
        return on(x, [&] {
          return slice(x, dim, start, end, step, Here::current());
        });
      },
      py::arg("x"), py::arg("dim"), py::arg("start"), py::arg("end"),
      py::arg("step") = 1);
  m.def(
      "squeeze",
      [](const Tensor &x, int64_t dim) {
        return on(x, [&] { return squeeze(x, dim, Here::current()); });
      },
      py::arg("x"), py::arg("dim"));
  m.def(
      "unsqueeze",
      [](const Tensor &x, int64_t dim) {
        return on(x, [&] { return unsqueeze(x, dim, Here::current()); });
      },
      py::arg("x"), py::arg("dim"));
  m.def(
      "expand",
      [](const Tensor &x, const Shape &shape) {
        return on(x, [&] { return expand(x, shape, Here::current()); });
      },
      py::arg("x"), py::arg("shape"));
  m.def(
      "broadcast_to",
      [](const Tensor &x, const Shape &shape) {
        return on(x, [&] { return broadcast_to(x, shape, Here::current()); });
      },
      py::arg("x"), py::arg("shape"));
  m.def(
      "split",
      [](const Tensor &x, int64_t size, int64_t dim) {
        return on(x, [&] { return split(x, size, dim, Here::current()); });
      },
      py::arg("x"), py::arg("split_size"), py::arg("dim") = 0);
  m.def(
      "chunk",
      [](const Tensor &x, int64_t chunks, int64_t dim) {
        return on(x, [&] { return chunk(x, chunks, dim, Here::current()); });
      },
      py::arg("x"), py::arg("chunks"), py::arg("dim") = 0);
  m.def(
      "unbind",
      [](const Tensor &x, int64_t dim) {
        return on(x, [&] { return unbind(x, dim, Here::current()); });
      },
      py::arg("x"), py::arg("dim") = 0);
  m.def(
      "stack",
      [](const std::vector<Tensor> &xs, int64_t dim) {
        if (xs.empty())
          throw py::value_error("stack() takes at least one tensor");
        return on(xs[0], [&] { return stack(xs, dim, Here::current()); });
      },
      py::arg("xs"), py::arg("dim") = 0);
  m.def(
      "pad",
      [](const Tensor &x, const std::vector<int64_t> &pads, double value) {
        return on(x, [&] { return pad(x, pads, value, Here::current()); });
      },
      py::arg("x"), py::arg("pad"), py::arg("value") = 0.0);
}

/// torch.topk: (values, indices) as a named tuple; always sorted, which
/// sorted=False also allows.
py::object topkTuple(const Tensor &x, int64_t k, int64_t dim, bool largest,
                     bool /*sorted*/) {
  TopK top = on(x, [&] { return topk(x, k, dim, largest, Here::current()); });
  // Never destroyed: a py::object must not outlive the interpreter.
  static auto *type =
      new py::object(py::module_::import("collections")
                         .attr("namedtuple")("topk", "values indices"));
  return (*type)(top.values, top.indices);
}

void bindIndexFunctions(py::module_ &m) {
  m.def(
      "embedding",
      [](const Tensor &indices, const Tensor &weight) {
        return on(weight,
                  [&] { return embedding(indices, weight, Here::current()); });
      },
      py::arg("indices"), py::arg("weight"));
  m.def(
      "index_select",
      [](const Tensor &x, int64_t dim, const Tensor &index) {
        return on(x,
                  [&] { return index_select(x, dim, index, Here::current()); });
      },
      py::arg("x"), py::arg("dim"), py::arg("index"));
  m.def(
      "gather",
      [](const Tensor &x, int64_t dim, const Tensor &index) {
        return on(x, [&] { return gather(x, dim, index, Here::current()); });
      },
      py::arg("x"), py::arg("dim"), py::arg("index"));
  m.def(
      "argmax",
      [](const Tensor &x, int64_t dim, bool keepdim) {
        return on(x, [&] { return argmax(x, dim, keepdim, Here::current()); });
      },
      py::arg("x"), py::arg("dim"), py::arg("keepdim") = false);
  m.def("topk", &topkTuple, py::arg("x"), py::arg("k"), py::arg("dim") = -1,
        py::arg("largest") = true, py::arg("sorted") = true);
  m.def(
      "var",
      [](const Tensor &x, const py::object &d, bool unbiased, bool keepdim) {
        return on(x, [&] {
          return var(x, dims(x, d), unbiased, keepdim, Here::current());
        });
      },
      py::arg("x"), py::arg("dim") = py::none(), py::arg("unbiased") = true,
      py::arg("keepdim") = false);
  m.def(
      "std",
      [](const Tensor &x, const py::object &d, bool unbiased, bool keepdim) {
        return on(x, [&] {
          return locus::std(x, dims(x, d), unbiased, keepdim, Here::current());
        });
      },
      py::arg("x"), py::arg("dim") = py::none(), py::arg("unbiased") = true,
      py::arg("keepdim") = false);
  m.def(
      "logsumexp",
      [](const Tensor &x, const py::object &d, bool keepdim) {
        return on(x, [&] {
          return logsumexp(x, dims(x, d), keepdim, Here::current());
        });
      },
      py::arg("x"), py::arg("dim"), py::arg("keepdim") = false);
}

void bindLayerFunctions(py::module_ &m) {
  m.def(
      "layer_norm",
      [](const Tensor &x, const Shape &shape, const std::optional<Tensor> &w,
         const std::optional<Tensor> &b, double eps) {
        return on(x, [&] {
          return layer_norm(x, shape, w.value_or(Tensor()),
                            b.value_or(Tensor()), eps, Here::current());
        });
      },
      py::arg("x"), py::arg("normalized_shape"), py::arg("weight") = py::none(),
      py::arg("bias") = py::none(), py::arg("eps") = 1e-5);
  m.def(
      "group_norm",
      [](const Tensor &x, int64_t groups, const std::optional<Tensor> &w,
         const std::optional<Tensor> &b, double eps) {
        return on(x, [&] {
          return group_norm(x, groups, w.value_or(Tensor()),
                            b.value_or(Tensor()), eps, Here::current());
        });
      },
      py::arg("x"), py::arg("num_groups"), py::arg("weight") = py::none(),
      py::arg("bias") = py::none(), py::arg("eps") = 1e-5);
  m.def(
      "scaled_dot_product_attention",
      [](const Tensor &q, const Tensor &k, const Tensor &v,
         const std::optional<Tensor> &mask, bool causal,
         std::optional<double> scale) {
        AttentionOptions o{mask.value_or(Tensor()), causal, scale};
        return on(q, [&] {
          return scaled_dot_product_attention(q, k, v, o, Here::current());
        });
      },
      py::arg("query"), py::arg("key"), py::arg("value"),
      py::arg("attn_mask") = py::none(), py::arg("is_causal") = false,
      py::arg("scale") = py::none());
  m.def(
      "dropout",
      [](const Tensor &x, double p, bool training) {
        return on(x, [&] { return dropout(x, p, training, Here::current()); });
      },
      py::arg("x"), py::arg("p") = 0.5, py::arg("training") = true);
  m.def(
      "assign",
      [](const Tensor &state, const Tensor &value) {
        on(state, [&] { assign(state, value, Here::current()); });
      },
      py::arg("state"), py::arg("value"),
      "Each run ends by writing `value` into `state` (a parameter or "
      "buffer).");
  m.def(
      "assigned_value",
      [](const Tensor &state) {
        return on(state, [&] { return assignedValue(state, Here::current()); });
      },
      py::arg("state"));
}

void bindFactories(py::module_ &m) {
  auto graph = py::class_<Graph>(m.attr("Graph"));
  graph
      .def(
          "zeros",
          [](Graph &g, const Shape &shape, const std::string &dtype) {
            return recorded(g, [&] {
              return g.zeros(shape, parseDType(dtype), Here::current());
            });
          },
          py::arg("shape"), py::arg("dtype") = "f32")
      .def(
          "ones",
          [](Graph &g, const Shape &shape, const std::string &dtype) {
            return recorded(g, [&] {
              return g.ones(shape, parseDType(dtype), Here::current());
            });
          },
          py::arg("shape"), py::arg("dtype") = "f32")
      .def(
          "full",
          [](Graph &g, const Shape &shape, double value,
             const std::string &dtype) {
            return recorded(g, [&] {
              return g.full(shape, value, parseDType(dtype), Here::current());
            });
          },
          py::arg("shape"), py::arg("fill_value"), py::arg("dtype") = "f32")
      .def(
          "arange",
          [](Graph &g, int64_t start, std::optional<int64_t> end, int64_t step,
             const std::string &dtype) {
            return recorded(g, [&] {
              if (!end)
                return g.arange(0, start, step, parseDType(dtype),
                                Here::current());
              return g.arange(start, *end, step, parseDType(dtype),
                              Here::current());
            });
          },
          py::arg("start"), py::arg("end") = py::none(), py::arg("step") = 1,
          py::arg("dtype") = "i64")
      .def(
          "buffer",
          [](Graph &g, const std::string &name, const Shape &shape,
             std::optional<std::vector<float>> values) {
            return recorded(g, [&] {
              if (!values)
                return g.buffer(name, shape, Init::full(0.0), {},
                                Here::current());
              return g.buffer(name, shape, std::move(*values), {},
                              Here::current());
            });
          },
          py::arg("name"), py::arg("shape"), py::arg("values") = py::none(),
          "Persistent state no optimizer updates (running statistics), "
          "zeros unless `values` are given.")
      .def(
          "output_value",
          [](const Graph &g, const std::string &name) {
            return atCaller(
                [&] { return g.outputValue(name, Here::current()); });
          },
          py::arg("name"),
          "The tensor of output `name` (an imported ONNX graph's logits, "
          "to put a loss on).");
}

/// One index of x[...] on one dimension: an integer picks (and drops the
/// dimension), a slice keeps [start, start + step * length). On a dynamic
/// dimension (`raw`) the bounds stay as given, [start, end) with negative
/// ones counted from the run's end, for locus::slice to place.
struct IndexStep {
  int64_t dim, start, length, step;
  bool drop;
  bool raw = false;
  int64_t end = 0;
};

/// A slice's field as an integer, or `otherwise` for None.
int64_t sliceField(const py::handle &k, const char *name, int64_t otherwise) {
  py::object v = k.attr(name);
  return v.is_none() ? otherwise : py::int_(v).cast<int64_t>();
}

/// `k` (a slice or an integer) on dimension `dim` of x, which is dynamic
/// with `bound` as its largest size.
IndexStep dynamicStep(const py::handle &k, int64_t dim, int64_t bound) {
  constexpr int64_t toEnd = std::numeric_limits<int64_t>::max();
  if (py::isinstance<py::slice>(k)) {
    int64_t step = sliceField(k, "step", 1);
    if (step < 1)
      throw py::index_error("a slice's step must be positive");
    return {dim,  sliceField(k, "start", 0),   0, step, false,
            true, sliceField(k, "stop", toEnd)};
  }
  auto i = py::int_(py::reinterpret_borrow<py::object>(k)).cast<int64_t>();
  if (i < -bound || i >= bound)
    throw py::index_error(
        "index " + std::to_string(i) + " is out of bounds for dimension " +
        std::to_string(dim) + " of bound " + std::to_string(bound));
  return {dim, i, 1, 1, true, true, i == -1 ? toEnd : i + 1};
}

/// The steps of x[key], all checked before anything is recorded: integers
/// (Python's or NumPy's), slices with a positive step and at most one
/// Ellipsis, as PyTorch indexes.
std::vector<IndexStep> indexSteps(const Tensor &x, const py::object &key) {
  py::tuple keys =
      py::isinstance<py::tuple>(key) ? py::tuple(key) : py::make_tuple(key);
  size_t given = 0, ellipses = 0;
  for (const py::handle &k : keys)
    (k.is(py::ellipsis()) ? ellipses : given) += 1;
  if (ellipses > 1)
    throw py::index_error("an index can only have a single ellipsis");
  if (given > static_cast<size_t>(x.rank()))
    throw py::index_error("too many indices for a tensor of rank " +
                          std::to_string(x.rank()));
  std::vector<IndexStep> steps;
  std::vector<InputDim> dims = dynamic_shape(x, Here::current());
  int64_t dim = 0;
  for (const py::handle &k : keys) {
    if (k.is(py::ellipsis())) {
      dim += x.rank() - static_cast<int64_t>(given);
      continue;
    }
    int64_t size = x.shape()[dim];
    bool index = !py::isinstance<py::bool_>(k) && PyIndex_Check(k.ptr());
    if (dims[dim].dynamic && (index || py::isinstance<py::slice>(k))) {
      steps.push_back(dynamicStep(k, dim, size));
    } else if (py::isinstance<py::slice>(k)) {
      py::ssize_t start = 0, stop = 0, step = 0, length = 0;
      if (!py::reinterpret_borrow<py::slice>(k).compute(size, &start, &stop,
                                                        &step, &length))
        throw py::error_already_set();
      if (step < 1)
        throw py::index_error("a slice's step must be positive");
      steps.push_back({dim, start, length, step, false});
    } else if (index) {
      auto i = py::int_(py::reinterpret_borrow<py::object>(k)).cast<int64_t>();
      if (i < -size || i >= size)
        throw py::index_error(
            "index " + std::to_string(i) + " is out of bounds for dimension " +
            std::to_string(dim) + " of size " + std::to_string(size));
      steps.push_back({dim, i < 0 ? i + size : i, 1, 1, true});
    } else {
      throw py::type_error("a tensor is indexed by integers, slices and "
                           "... only");
    }
    ++dim;
  }
  return steps;
}

/// x[key], recorded once every index is checked.
Tensor index(const Tensor &x, const py::object &key) {
  std::vector<IndexStep> steps = indexSteps(x, key);
  return on(x, [&] {
    Tensor y = x;
    constexpr int64_t toEnd = std::numeric_limits<int64_t>::max();
    for (const IndexStep &s : steps)
      if (s.raw && (s.drop || s.start != 0 || s.end != toEnd || s.step != 1))
        y = slice(y, s.dim, s.start, s.end, s.step, Here::current());
      else if (!s.raw && (s.length != y.shape()[s.dim] || s.drop))
        y = slice(y, s.dim, s.start, s.start + s.step * s.length, s.step,
                  Here::current());
    for (auto it = steps.rbegin(); it != steps.rend(); ++it)
      if (it->drop)
        y = squeeze(y, it->dim, Here::current());
    return y;
  });
}

void bindTensorMethods(py::module_ &m) {
  auto tensor = py::class_<Tensor>(m.attr("Tensor"));
  auto power = [](const Tensor &x, double e) {
    return on(x, [&] { return pow(x, e, Here::current()); });
  };
  using Unary = Tensor (*)(const Tensor &, Here);
  auto unary = [&](const char *name, Unary f) {
    tensor.def(name, [f](const Tensor &x) {
      return on(x, [&] { return f(x, Here::current()); });
    });
  };
  unary("relu", &relu);
  unary("sigmoid", &sigmoid);
  unary("tanh", &tanh);
  unary("exp", &exp);
  unary("log", &log);
  unary("sqrt", &sqrt);
  unary("rsqrt", &rsqrt);
  unary("abs", &abs);
  unary("neg", &neg);
  unary("sin", &sin);
  unary("cos", &cos);
  tensor.def("topk", &topkTuple, py::arg("k"), py::arg("dim") = -1,
             py::arg("largest") = true, py::arg("sorted") = true);
  tensor
      .def(
          "softmax",
          [](const Tensor &x, int64_t dim) {
            return on(x, [&] { return softmax(x, dim, Here::current()); });
          },
          py::arg("dim"))
      .def(
          "log_softmax",
          [](const Tensor &x, int64_t dim) {
            return on(x, [&] { return log_softmax(x, dim, Here::current()); });
          },
          py::arg("dim"))
      .def("reshape",
           [](const Tensor &x, const py::args &shape) {
             Shape s = shapeArgs(shape);
             return on(x, [&] { return reshape(x, s, Here::current()); });
           })
      .def("view",
           [](const Tensor &x, const py::args &shape) {
             Shape s = shapeArgs(shape);
             return on(x, [&] { return reshape(x, s, Here::current()); });
           })
      .def("permute",
           [](const Tensor &x, const py::args &order) {
             std::vector<int64_t> p = shapeArgs(order);
             return on(x, [&] { return permute(x, p, Here::current()); });
           })
      .def("expand",
           [](const Tensor &x, const py::args &shape) {
             Shape s = shapeArgs(shape);
             return on(x, [&] { return expand(x, s, Here::current()); });
           })
      .def("transpose",
           [](const Tensor &x, int64_t a, int64_t b) {
             return on(x, [&] { return transpose(x, a, b, Here::current()); });
           })
      .def(
          "flatten",
          [](const Tensor &x, int64_t start, int64_t end) {
            return on(x,
                      [&] { return flatten(x, start, end, Here::current()); });
          },
          py::arg("start_dim") = 0, py::arg("end_dim") = -1)
      .def("unsqueeze",
           [](const Tensor &x, int64_t dim) {
             return on(x, [&] { return unsqueeze(x, dim, Here::current()); });
           })
      .def("squeeze",
           [](const Tensor &x, int64_t dim) {
             return on(x, [&] { return squeeze(x, dim, Here::current()); });
           })
      .def(
          "sum",
          [](const Tensor &x, const py::object &d, bool keepdim) {
            return on(x, [&] {
              return sum(x, dims(x, d), keepdim, Here::current());
            });
          },
          py::arg("dim") = py::none(), py::arg("keepdim") = false)
      .def(
          "mean",
          [](const Tensor &x, const py::object &d, bool keepdim) {
            return on(x, [&] {
              return mean(x, dims(x, d), keepdim, Here::current());
            });
          },
          py::arg("dim") = py::none(), py::arg("keepdim") = false)
      .def("masked_fill",
           [](const Tensor &x, const Tensor &mask, double value) {
             return on(x, [&] {
               return masked_fill(x, mask, value, Here::current());
             });
           })
      .def(
          "clamp",
          [](const Tensor &x, std::optional<double> lo,
             std::optional<double> hi) {
            return on(x, [&] { return clamp(x, lo, hi, Here::current()); });
          },
          py::arg("min") = py::none(), py::arg("max") = py::none())
      .def("float",
           [](const Tensor &x) {
             return on(x, [&] { return cast(x, DType::f32, Here::current()); });
           })
      .def("long",
           [](const Tensor &x) {
             return on(x, [&] { return cast(x, DType::i64, Here::current()); });
           })
      .def("bfloat16",
           [](const Tensor &x) {
             return on(x,
                       [&] { return cast(x, DType::bf16, Here::current()); });
           })
      .def("half",
           [](const Tensor &x) {
             return on(x, [&] { return cast(x, DType::f16, Here::current()); });
           })
      .def(
          "size",
          [](const Tensor &x, std::optional<int64_t> dim) -> py::object {
            if (!dim)
              return py::cast(x.shape());
            int64_t d = *dim < 0 ? *dim + x.rank() : *dim;
            if (d < 0 || d >= x.rank())
              throw py::index_error("dimension out of range");
            return py::cast(x.shape()[d]);
          },
          py::arg("dim") = py::none())
      .def("dim", [](const Tensor &x) { return x.rank(); })
      .def("__getitem__", &index)
      .def("__pow__", power)
      .def("pow", power)
      .def("__abs__",
           [](const Tensor &x) {
             return on(x, [&] { return abs(x, Here::current()); });
           })
      // torch.Tensor.t() and .T: a matrix's transpose (a 0-d or 1-d tensor
      // is itself, as in PyTorch; .T of more dimensions reverses them).
      .def("t",
           [](const Tensor &x) {
             if (x.rank() > 2)
               throw py::value_error("t() expects a tensor with at most 2 "
                                     "dimensions; use transpose(a, b)");
             return x.rank() < 2
                        ? x
                        : on(
                              x,
                              [&] {
                                return transpose(x, 0, 1, Here::current());
                              });
           })
      .def_property_readonly("T", [](const Tensor &x) {
        if (x.rank() < 2)
          return x;
        std::vector<int64_t> order;
        for (int64_t d = x.rank() - 1; d >= 0; --d)
          order.push_back(d);
        return on(x, [&] { return permute(x, order, Here::current()); });
      });
  using Binary = Tensor (*)(const Tensor &, const Tensor &, Here);
  auto compare = [&](const char *name, Binary f) {
    tensor.def(name, [f](const Tensor &a, const py::object &b) {
      Tensor other = operand(a, b);
      return on(a, [&] { return f(a, other, Here::current()); });
    });
  };
  compare("__lt__", &lt);
  compare("__le__", &le);
  compare("__gt__", &gt);
  compare("__ge__", &ge);
}

} // namespace

void python::bindFunctional(py::module_ &m) {
  bindShapeFunctions(m);
  bindIndexFunctions(m);
  bindLayerFunctions(m);
  bindFactories(m);
  bindTensorMethods(m);
}
