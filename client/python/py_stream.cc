// strata.Stream: an iterator of strata.Batch for one rank's epoch, either
// straight from the network (batches own their buffers) or through a staging
// ring (device memory when a GPU is present, with a background prefetch).
//
// Thread-safety: iterate from one thread; cancel() may be called from any.
// close() from another thread while an iteration blocks only cancels it, and
// the stream is closed when that iteration returns.
#include <atomic>
#include <memory>
#include <string>
#include <utility>

#include "client/python/py_common.h"
#include "strata/client.h"
#include "strata/staging.h"

namespace strata::python {

// Exposed to py_client.cc through BindStream's factory functions below.
class PyStream {
 public:
  PyStream(std::shared_ptr<Client> client, std::unique_ptr<Stream> plain)
      : client_(std::move(client)), plain_(std::move(plain)) {}
  PyStream(std::shared_ptr<Client> client, std::unique_ptr<StagedStream> staged)
      : client_(std::move(client)), staged_(std::move(staged)) {}

  ~PyStream() { Close(); }

  std::shared_ptr<BatchHandle> Next() {
    if (closed()) throw py::stop_iteration();
    auto h = std::make_shared<BatchHandle>();
    h->is_staged = staged_ != nullptr;
    Status s;
    busy_ = true;
    {
      py::gil_scoped_release nogil;
      s = staged_ ? staged_->Next(&h->staged) : plain_->Next(&h->plain);
    }
    busy_ = false;
    if (close_requested_) Close();
    if (s.code() == Code::kOutOfRange) throw py::stop_iteration();
    ThrowIfError(s);
    return h;
  }

  std::string ResumeToken() const {
    CheckOpen();
    return (staged_ ? staged_->resume_token() : plain_->resume_token()).Encode();
  }
  uint64_t StepsInEpoch() const {
    CheckOpen();
    return staged_ ? staged_->steps_in_epoch() : plain_->steps_in_epoch();
  }
  uint64_t NextStep() const {
    CheckOpen();
    return staged_ ? staged_->resume_token().step : plain_->next_step();
  }
  std::string Device() const {
    if (staged_ && staged_->memory() == StagingMemory::kDevice) return "cuda:" + std::to_string(staged_->device());
    return "cpu";
  }
  std::string Staging() const {
    return staged_ ? staged_->description() : std::string("none (batches from the network)");
  }

  void Cancel() {
    if (staged_) staged_->Cancel();
    if (plain_) plain_->Cancel();
  }

  void Close() {
    if (closed()) return;
    if (busy_) {  // another thread is in Next(): make it return, and close there
      close_requested_ = true;
      Cancel();
      return;
    }
    // Taken out first, so that no other thread sees a stream being destroyed.
    std::unique_ptr<StagedStream> staged = std::move(staged_);
    std::unique_ptr<Stream> plain = std::move(plain_);
    std::shared_ptr<Client> client = std::move(client_);
    py::gil_scoped_release nogil;  // joins the staging thread, ends the call
    staged.reset();
    plain.reset();
    client.reset();  // after the stream that reads through it
  }

 private:
  bool closed() const { return staged_ == nullptr && plain_ == nullptr; }
  void CheckOpen() const {
    if (closed()) throw py::value_error("the stream is closed");
  }

  // Declared first, destroyed last: the streams read through its channels.
  std::shared_ptr<Client> client_;
  std::unique_ptr<Stream> plain_;
  std::unique_ptr<StagedStream> staged_;
  std::atomic<bool> busy_{false};
  std::atomic<bool> close_requested_{false};
};

// Wraps a stream for Python: straight, or staged when staging is given.
py::object MakePyStream(std::shared_ptr<Client> client, std::unique_ptr<Stream> stream,
                        const StagingOptions* staging) {
  if (staging == nullptr) return py::cast(std::make_unique<PyStream>(std::move(client), std::move(stream)));
  std::unique_ptr<StagedStream> staged;
  Status opened;
  {
    py::gil_scoped_release nogil;
    auto result = StagedStream::Open(std::move(stream), *staging);
    if (result.ok()) {
      staged = std::move(result).value();
    } else {
      opened = result.status();
    }
  }
  ThrowIfError(opened);
  return py::cast(std::make_unique<PyStream>(std::move(client), std::move(staged)));
}

void BindStream(py::module_& m) {
  py::class_<PyStream>(m, "Stream", R"(One rank's batches for one epoch, in step order.

Iterate it for strata.Batch objects; iteration ends after the last step.
resume_token() continues after the last batch returned.)")
      .def("__iter__", [](PyStream& s) -> PyStream& { return s; }, py::return_value_policy::reference_internal)
      .def("__next__", &PyStream::Next)
      .def("resume_token", &PyStream::ResumeToken,
           "A token that continues this stream after the last batch returned: save it with a checkpoint.")
      .def_property_readonly("steps_in_epoch", &PyStream::StepsInEpoch,
                             "Steps in the epoch (0 before the first batch).")
      .def_property_readonly("next_step", &PyStream::NextStep, "The step the next batch will have.")
      .def_property_readonly("device", &PyStream::Device, "'cpu' or 'cuda:N': where batches' tensors live.")
      .def_property_readonly("staging", &PyStream::Staging, "The staging path in words, as logged.")
      .def("cancel", &PyStream::Cancel, "Stops the stream; a blocked iteration raises strata.Error (Cancelled).")
      .def("close", &PyStream::Close, "Cancels and frees the stream; batches already returned stay valid.")
      .def("__enter__", [](PyStream& s) -> PyStream& { return s; }, py::return_value_policy::reference_internal)
      .def("__exit__", [](PyStream& s, const py::args&) { s.Close(); });
}

}  // namespace strata::python
