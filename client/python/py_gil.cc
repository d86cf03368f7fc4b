// GilReleased (py_common.h): the GIL given up around a blocking call, and a
// thread that CPython ends on its way back parked instead.
#include <cxxabi.h>

#include <chrono>
#include <thread>

#include "client/python/py_common.h"

namespace strata::python {

GilReleased::GilReleased() : state_(PyEval_SaveThread()) {}

GilReleased::~GilReleased() {
  // CPython before 3.14 ends a thread that waits for the GIL while the
  // interpreter finalizes (a daemon thread back from the network after the
  // main thread returned) with pthread_exit, which unwinds the thread's
  // stack as a forced exception. Through this destructor, which may not
  // throw, that unwinding called std::terminate: the process aborted at exit.
  // The exception is caught here and the thread stays in the handler, holding
  // what it holds, until the process exits (CPython 3.14 parks such threads
  // itself). Leaving the handler without rethrowing would abort too.
  try {
    PyEval_RestoreThread(state_);
  } catch (abi::__forced_unwind&) {
    for (;;) std::this_thread::sleep_for(std::chrono::hours(1));
  }
}

}  // namespace strata::python
