// The native part of the `strata` Python package (strata/_strata*.so); the
// package's __init__.py re-exports it and adds the pure-Python helpers.
#include "client/python/py_common.h"
#include "common/allocator.h"
#include "strata/version.h"

PYBIND11_MODULE(_strata, m) {
  m.doc() = "strata: batches from a strata cluster, zero-copy into numpy and PyTorch.";
  strata::python::InitNumpy();
  strata::python::BindErrors(m);
  strata::python::BindBatch(m);
  strata::python::BindStream(m);
  strata::python::BindClient(m);
  m.def("tune_allocator", &strata::TuneAllocatorForStreaming,
        "Keep freed memory for reuse instead of returning it to the kernel after every batch "
        "(glibc mallopt; process-wide). Call once at start-up; about 2x on 1 MiB samples. "
        "Returns False if the C library refused.");
  m.attr("HAVE_NUMPY") = strata::python::HaveNumpy();
  m.attr("__version__") = strata::Version();
}
