// The native part of the `strata` Python package (strata/_strata*.so); the
// package's __init__.py re-exports it and adds the pure-Python helpers.
#include "client/python/py_common.h"

PYBIND11_MODULE(_strata, m) {
  m.doc() = "strata: batches from a strata cluster, zero-copy into numpy and PyTorch.";
  strata::python::BindErrors(m);
  strata::python::BindBatch(m);
  strata::python::BindStream(m);
  strata::python::BindClient(m);
}
