// strata.Error: the one exception type the module raises for a failed call,
// with the status code's name as .code and the message as str(e).
#include <string>

#include "client/python/py_common.h"

namespace strata::python {

namespace {

// Created once in BindErrors; module objects live until interpreter exit.
PyObject* error_type = nullptr;

}  // namespace

void Raise(const Status& status) {
  py::object error = py::reinterpret_borrow<py::object>(error_type)(status.ToString());
  error.attr("code") = std::string(CodeName(status.code()));
  PyErr_SetObject(error_type, error.ptr());
  throw py::error_already_set();
}

void BindErrors(py::module_& m) {
  // The creation reference is kept for the life of the process on purpose:
  // Raise may run until interpreter exit, and a static py::object would be
  // released after the interpreter is gone.
  error_type = PyErr_NewExceptionWithDoc(
      "strata.Error",
      "A failed strata call. .code names the status (NotFound, Unavailable, ...); str() has the message.",
      PyExc_RuntimeError, nullptr);
  if (error_type == nullptr) throw py::error_already_set();
  m.add_object("Error", py::reinterpret_borrow<py::object>(error_type));
}

}  // namespace strata::python
