// common.cpp - the Python caller's line and locus.Error (common.h).

#include "common.h"

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
