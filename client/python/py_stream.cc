// strata.Stream: an iterator of strata.Batch for one rank's epoch, either
// straight from the network (batches own their buffers; a background thread
// assembles up to prefetch_depth batches ahead, so that assembling overlaps the
// Python loop's own work) or through a staging ring (device memory when a GPU
// is present, with a background prefetch).
//
// Thread-safety: iterate from one thread; cancel() may be called from any.
// close() from another thread while an iteration blocks only cancels it, and
// the stream is closed when that iteration returns.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>

#include "client/python/py_common.h"
#include "strata/client.h"
#include "strata/staging.h"

namespace strata::python {

// Pulls batches from a plain Stream on a thread of its own, up to `depth`
// ahead of the consumer, each with the stream's position after it (so that
// resume_token() describes what the consumer has, not what was pulled). No
// copies: a Batch owns its buffers and is moved through the queue.
//
// Thread-safety: Next() from one thread at a time; Stop() from any.
class Prefetcher {
 public:
  struct Item {
    Status status;
    Batch batch;
    std::string token;  // after this batch
    uint64_t next_step = 0;
    uint64_t steps_in_epoch = 0;
  };

  // REQUIRES: depth >= 1; `stream` and `pool` outlive this object.
  Prefetcher(Stream* stream, int depth, BatchPool* pool)
      : stream_(stream), depth_(static_cast<size_t>(depth)), pool_(pool) {
    thread_ = std::thread([this] { Run(); });
  }
  ~Prefetcher() { Stop(); }

  // Waits up to `wait` for the next item: false if none came in time. After
  // the stream's end or an error (or Stop), keeps returning that status.
  bool NextFor(std::chrono::milliseconds wait, Item* out) {
    std::unique_lock<std::mutex> lock(mu_);
    if (!ready_cv_.wait_for(lock, wait, [&] { return !ready_.empty() || finished_; })) return false;
    *out = Take();
    return true;
  }

  // Ends the thread (cancelling a pull in progress) and joins it.
  void Stop() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    room_cv_.notify_all();
    stream_->Cancel();
    if (thread_.joinable()) thread_.join();
  }

 private:
  // REQUIRES: mu_ held, an item ready or the thread finished.
  Item Take() {
    if (ready_.empty()) return Item{Status::Cancelled("the stream was closed"), {}, {}, 0, 0};
    Item item = std::move(ready_.front());
    ready_.pop_front();
    if (!item.status.ok()) ready_.push_front(Item{item.status, {}, {}, 0, 0});  // sticky
    room_cv_.notify_one();
    return item;
  }

  void Run() {
    for (;;) {
      {
        std::unique_lock<std::mutex> lock(mu_);
        room_cv_.wait(lock, [&] { return stop_ || ready_.size() < depth_; });
        if (stop_) break;
      }
      Item item;
      item.batch = pool_->Take();
      item.status = stream_->Next(&item.batch);
      const bool last = !item.status.ok();
      if (!last) {
        item.token = stream_->resume_token().Encode();
        item.next_step = stream_->next_step();
        item.steps_in_epoch = stream_->steps_in_epoch();
      }
      {
        std::lock_guard<std::mutex> lock(mu_);
        ready_.push_back(std::move(item));
      }
      ready_cv_.notify_all();
      if (last) break;
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      finished_ = true;
    }
    ready_cv_.notify_all();
  }

  Stream* const stream_;
  const size_t depth_;
  BatchPool* const pool_;
  std::mutex mu_;
  std::condition_variable ready_cv_;  // an item is ready, or the thread finished
  std::condition_variable room_cv_;   // the queue has room, or stop
  std::deque<Item> ready_;
  bool stop_ = false;
  bool finished_ = false;
  std::thread thread_;  // last: started after the members it uses
};

// Exposed to py_client.cc through BindStream's factory functions below.
class PyStream {
 public:
  // prefetch_depth 0: Next() pulls from the stream itself.
  PyStream(std::shared_ptr<Client> client, std::unique_ptr<Stream> plain, int prefetch_depth)
      : client_(std::move(client)),
        plain_(std::move(plain)),
        // Enough for the batches in the queue, the one being assembled and
        // the one or two a training loop holds.
        pool_(std::make_shared<BatchPool>(static_cast<size_t>(prefetch_depth) + 3)) {
    Record();
    if (prefetch_depth > 0) prefetch_ = std::make_unique<Prefetcher>(plain_.get(), prefetch_depth, pool_.get());
  }
  PyStream(std::shared_ptr<Client> client, std::unique_ptr<StagedStream> staged)
      : client_(std::move(client)), staged_(std::move(staged)) {
    Record();
  }

  ~PyStream() { Close(); }

  std::shared_ptr<BatchHandle> Next() {
    if (closed()) throw py::stop_iteration();
    // Checked and set with the GIL held: a second thread in Next() would
    // assemble into the batch the first one is filling.
    if (busy_) {
      Raise(Status::FailedPrecondition(
          "this stream is being iterated by another thread: iterate a stream from one thread at a time"));
    }
    auto h = std::make_shared<BatchHandle>();
    h->is_staged = staged_ != nullptr;
    if (!h->is_staged && !prefetch_) h->plain = pool_->Take();  // Next() assembles into it
    Status s;
    busy_ = true;
    if (prefetch_) {
      // Waited for in slices, so that a signal (Ctrl-C) raises within one:
      // the batch it interrupted stays queued for the next call.
      Prefetcher::Item item;
      for (;;) {
        bool got = false;
        {
          GilReleased nogil;
          got = prefetch_->NextFor(kSignalCheck, &item);
        }
        if (got) break;
        if (PyErr_CheckSignals() != 0) {
          busy_ = false;
          if (close_requested_) Close();
          throw py::error_already_set();
        }
      }
      s = item.status;
      if (s.ok()) {
        h->plain = std::move(item.batch);
        // Set here, with the GIL held, where resume_token() reads them.
        position_ = {std::move(item.token), item.next_step, item.steps_in_epoch};
      }
    } else {
      {
        GilReleased nogil;
        s = staged_ ? staged_->Next(&h->staged) : plain_->Next(&h->plain);
      }
      Record();
    }
    busy_ = false;
    if (close_requested_) Close();
    if (s.code() == Code::kOutOfRange) throw py::stop_iteration();
    ThrowIfError(s);
    if (!h->is_staged) h->pool = pool_;  // from here on, Python owns the batch
    return h;
  }

  // Before the first batch of a stream opened on a name without @N, the
  // version is not known yet, and a token would name version 0, which no
  // resume takes: refused here, saying so, rather than handed out.
  std::string ResumeToken() const {
    CheckOpen();
    const std::string& text = position_.token;
    if (!strata::ResumeToken::Decode(text).ok()) {
      Raise(Status::FailedPrecondition(
          "no batch has come yet, so this stream's dataset version is not known: take the token after a batch, "
          "or open the stream on NAME@N"));
    }
    return text;
  }
  uint64_t StepsInEpoch() const {
    CheckOpen();
    return position_.steps_in_epoch;
  }
  uint64_t NextStep() const {
    CheckOpen();
    return position_.next_step;
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
    std::unique_ptr<Prefetcher> prefetch = std::move(prefetch_);
    std::unique_ptr<Stream> plain = std::move(plain_);
    std::shared_ptr<Client> client = std::move(client_);
    GilReleased nogil;  // joins the staging or prefetch thread, ends the call
    staged.reset();
    prefetch.reset();  // before the stream it pulls from
    plain.reset();
    client.reset();  // after the stream that reads through it
  }

 private:
  // How often a prefetching Next() that waits checks for a signal.
  static constexpr std::chrono::milliseconds kSignalCheck{100};

  bool closed() const { return staged_ == nullptr && plain_ == nullptr; }
  // Takes the position after the last batch Next() returned from the stream.
  // REQUIRES: the GIL held, no Next() of the stream in progress.
  void Record() {
    if (staged_) {
      const strata::ResumeToken token = staged_->resume_token();
      position_ = {token.Encode(), token.step, staged_->steps_in_epoch()};
    } else {
      position_ = {plain_->resume_token().Encode(), plain_->next_step(), plain_->steps_in_epoch()};
    }
  }
  void CheckOpen() const {
    if (closed()) throw py::value_error("the stream is closed");
  }

  // Declared first, destroyed last: the streams read through its channels.
  std::shared_ptr<Client> client_;
  std::unique_ptr<Stream> plain_;
  std::unique_ptr<StagedStream> staged_;
  // Plain streams: batches Python dropped, to assemble the next ones into.
  // Shared with the handles, which may outlive the stream.
  std::shared_ptr<BatchPool> pool_;
  // Plain streams with prefetch: the thread pulling ahead of Next().
  std::unique_ptr<Prefetcher> prefetch_;
  // The position after the last batch Next() returned, read and written with
  // the GIL held: resume_token() from another thread never reads a stream
  // that Next() is moving (nor a prefetching one, which is ahead).
  struct Position {
    std::string token;
    uint64_t next_step = 0;
    uint64_t steps_in_epoch = 0;
  };
  Position position_;
  std::atomic<bool> busy_{false};
  std::atomic<bool> close_requested_{false};
};

// Wraps a stream for Python: straight, or staged when staging is given.
py::object MakePyStream(std::shared_ptr<Client> client, std::unique_ptr<Stream> stream, const StagingOptions* staging,
                        int prefetch_depth) {
  if (staging == nullptr) {
    return py::cast(std::make_unique<PyStream>(std::move(client), std::move(stream), prefetch_depth));
  }
  std::unique_ptr<StagedStream> staged;
  Status opened;
  {
    GilReleased nogil;
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
      .def(
          "__iter__", [](PyStream& s) -> PyStream& { return s; }, py::return_value_policy::reference_internal)
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
      .def(
          "__enter__", [](PyStream& s) -> PyStream& { return s; }, py::return_value_policy::reference_internal)
      .def("__exit__", [](PyStream& s, const py::args&) { s.Close(); });
}

}  // namespace strata::python
