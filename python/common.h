// common.h - what the `locus` Python module's files share: the Python
// caller's line, locus.Error raised there, and recording located at it.

#ifndef LOCUS_PYTHON_COMMON_H
#define LOCUS_PYTHON_COMMON_H

#include "locus/locus.h"

#include <pybind11/pybind11.h>

#include <string>
#include <utility>
#include <vector>

namespace locus::python {

namespace py = pybind11;

struct PyLine {
  std::string file = "<python>";
  unsigned line = 0;
};

/// The Python caller's file and line (no frame: "<python>", 0).
PyLine callerLine();

/// locus.Error, made by the module's init; its file, line and message are
/// attributes too.
extern PyObject *errorType;

/// Raises locus.Error with these attributes and `text` as its message.
[[noreturn]] void raise(const std::string &file, unsigned line,
                        const std::string &message, const std::string &text);

/// A recording Error as a locus.Error at the user's Python line.
[[noreturn]] void raiseAt(const PyLine &here, const Error &e);

/// Runs `record` with its ops located at the Python caller's line; an
/// Error becomes a locus.Error at that line.
template <typename F>
auto recorded(const Graph &graph, F record) -> decltype(record()) {
  PyLine here = callerLine();
  try {
    detail::OriginScope origin(graph, here.file, here.line, 0);
    return record();
  } catch (const Error &e) {
    raiseAt(here, e);
  }
}

/// Runs `call`, which records nothing; an Error becomes a locus.Error at
/// the Python caller's line.
template <typename F> auto atCaller(F call) -> decltype(call()) {
  try {
    return call();
  } catch (const Error &e) {
    raiseAt(callerLine(), e);
  }
}

/// The graph of `t`; a locus.Error at the caller's line for a tensor of no
/// graph.
Graph graphOf(const Tensor &t);

/// "f32"/"float32", "i64"/"int64", "i32"/"int32", "i1"/"bool"; else
/// ValueError.
DType parseDType(const std::string &name);
/// "mean" or "sum"; else ValueError.
Reduction parseReduction(const std::string &name);

/// A tensor, or a Python number as a scalar constant of `like`'s graph and
/// dtype (x < 3 on i64 compares with an i64 3).
Tensor operand(const Tensor &like, const py::object &value);

/// An int or a pair (PyTorch's kernel_size=3 or (3, 3)) as two numbers.
std::vector<int64_t> pairArg(const py::object &value);

/// A ValueError from `call` (max_pool2d, MaxPool2d) for a dilation other
/// than 1 or return_indices, which Locus's pools do not take.
void requirePlainMaxPool(const char *call, const py::object &dilation,
                         bool returnIndices);

/// What `module` (locus, locus.nn, ...) answers for a PyTorch name it does
/// not have: an AttributeError that says what to write instead, for the
/// names in `advice` (name, then advice); the usual AttributeError for the
/// rest (PEP 562's module __getattr__).
void adviseMissing(py::module_ &module, const std::string &torchModule,
                   std::vector<std::pair<const char *, const char *>> advice);

/// The bindings of each area, called by the module's init.
void bindFunctional(py::module_ &m);
void bindNn(py::module_ &m);
void bindOptim(py::module_ &m);
/// After the others: what PyTorch names Locus lacks say instead.
void bindAdvice(py::module_ &m);

} // namespace locus::python

#endif // LOCUS_PYTHON_COMMON_H
