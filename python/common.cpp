// common.cpp - the Python caller's line and locus.Error (common.h).

#include "common.h"

#include <pybind11/stl.h>

#include <cmath>

using namespace locus;

PyObject *locus::python::errorType = nullptr;

python::PyLine python::callerLine() {
  PyLine here;
  PyFrameObject *frame = PyEval_GetFrame(); // borrowed
  if (!frame)
    return here;
  here.line = static_cast<unsigned>(PyFrame_GetLineNumber(frame));
  PyCodeObject *code = PyFrame_GetCode(frame); // new reference
  py::object name = py::reinterpret_steal<py::object>(PyObject_GetAttrString(
      reinterpret_cast<PyObject *>(code), "co_filename"));
  Py_DECREF(code);
  if (name && py::isinstance<py::str>(name))
    here.file = name.cast<std::string>();
  else
    PyErr_Clear();
  return here;
}

void python::raise(const std::string &file, unsigned line,
                   const std::string &message, const std::string &text) {
  py::object error = py::reinterpret_borrow<py::object>(errorType)(text);
  error.attr("file") = file;
  error.attr("line") = line;
  error.attr("message") = message;
  PyErr_SetObject(errorType, error.ptr());
  throw py::error_already_set();
}

void python::raiseAt(const PyLine &here, const Error &e) {
  raise(here.file, here.line, e.message(),
        here.file + ":" + std::to_string(here.line) +
            ": error: " + e.message());
}

Graph python::graphOf(const Tensor &t) {
  try {
    return t.graph();
  } catch (const Error &e) {
    raiseAt(callerLine(), e);
  }
}

DType python::parseDType(const std::string &name) {
  if (name == "f32" || name == "float32")
    return DType::f32;
  if (name == "i64" || name == "int64")
    return DType::i64;
  if (name == "i32" || name == "int32")
    return DType::i32;
  if (name == "i1" || name == "bool")
    return DType::i1;
  if (name == "bf16" || name == "bfloat16")
    return DType::bf16;
  if (name == "f16" || name == "float16" || name == "half")
    return DType::f16;
  throw py::value_error("unknown dtype '" + name +
                        "'; expected f32, bf16, f16, i64, i32 or bool");
}

Reduction python::parseReduction(const std::string &name) {
  if (name == "mean")
    return Reduction::mean;
  if (name == "sum")
    return Reduction::sum;
  throw py::value_error("unknown reduction '" + name +
                        "'; expected mean or sum");
}

std::vector<int64_t> python::pairArg(const py::object &value) {
  if (py::isinstance<py::int_>(value))
    return {value.cast<int64_t>(), value.cast<int64_t>()};
  auto pair = value.cast<std::vector<int64_t>>();
  if (pair.size() == 1)
    pair.push_back(pair[0]);
  if (pair.size() != 2)
    throw py::value_error("expected an int or a pair of ints, got " +
                          std::to_string(pair.size()) + " numbers");
  return pair;
}

void python::requirePlainMaxPool(const char *call, const py::object &dilation,
                                 bool returnIndices) {
  if (pairArg(dilation) != std::vector<int64_t>{1, 1})
    throw py::value_error(std::string(call) +
                          ": dilation other than 1 is not supported");
  if (returnIndices)
    throw py::value_error(std::string(call) +
                          ": return_indices=True is not supported");
}

void python::adviseMissing(
    py::module_ &module, const std::string &torchModule,
    std::vector<std::pair<const char *, const char *>> advice) {
  std::string name = module.attr("__name__").cast<std::string>();
  module.def("__getattr__",
             [name, torchModule, advice = std::move(advice)](
                 const std::string &key) -> py::object {
               std::string text;
               for (const auto &[missing, instead] : advice)
                 if (key == missing) {
                   text.append(name).append(" has no ").append(key);
                   text.append(" (").append(torchModule).append(".");
                   text.append(key).append("): ").append(instead);
                   throw py::attribute_error(text);
                 }
               text.append("module '").append(name);
               text.append("' has no attribute '").append(key).append("'");
               throw py::attribute_error(text);
             });
}

Tensor python::operand(const Tensor &like, const py::object &value) {
  if (py::isinstance<Tensor>(value))
    return value.cast<Tensor>();
  Graph g = graphOf(like);
  DType dtype = like.dtype();
  auto number = value.cast<double>();
  // An integer tensor takes only an integral number that fits: ids < 2.5
  // must not silently compare with 2.
  bool isFloat =
      dtype == DType::f32 || dtype == DType::bf16 || dtype == DType::f16;
  if (!isFloat && (std::floor(number) != number || std::fabs(number) > 9.0e15))
    throw py::type_error("a " + std::string(dtypeName(dtype)) +
                         " tensor takes an integral number here, got " +
                         py::str(value).cast<std::string>());
  return recorded(g, [&] {
    if (dtype == DType::f32)
      return g.constant(static_cast<float>(number), Here::current());
    return g.full({}, number, dtype, Here::current());
  });
}
