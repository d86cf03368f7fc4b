#include "client/part_reader.h"

#include <algorithm>

#include "client/batch_assembler.h"
#include "common/grpc_status.h"
#include "common/mutex.h"

namespace strata::client_internal {

bool PartQueue::Push(PartEvent e, const std::atomic<bool>& cancelled) {
  MutexLock lock(&mu_);
  if (!e.end) {
    room_.Wait(&mu_, [&]() REQUIRES(mu_) { return cancelled.load() || e.part.step() < next_step_ + lookahead_; });
    if (cancelled.load()) return false;
  }
  events_.push_back(std::move(e));
  pushed_.Signal();
  return true;
}

std::optional<PartEvent> PartQueue::Pop(std::chrono::milliseconds timeout) {
  MutexLock lock(&mu_);
  if (!pushed_.WaitFor(&mu_, timeout, [&]() REQUIRES(mu_) { return !events_.empty(); })) return std::nullopt;
  PartEvent e = std::move(events_.front());
  events_.pop_front();
  return e;
}

void PartQueue::SetNextStep(uint64_t step) {
  {
    MutexLock lock(&mu_);
    next_step_ = step;
  }
  room_.SignalAll();
}

v1::Batch PartQueue::TakeSpare() {
  MutexLock lock(&mu_);
  if (spares_.empty()) return v1::Batch();
  v1::Batch part = std::move(spares_.back());
  spares_.pop_back();
  return part;
}

void PartQueue::Recycle(v1::Batch part) {
  MutexLock lock(&mu_);
  if (spares_.size() < kSpares) spares_.push_back(std::move(part));
}

void PartQueue::WakeAll() {
  MutexLock lock(&mu_);
  room_.SignalAll();
}

PartReader::PartReader(std::shared_ptr<grpc::Channel> channel, v1::StreamRequest request, std::string node,
                       uint64_t generation, PartQueue* queue, Call call)
    : channel_(channel),
      stream_batches_("/strata.v1.DataService/StreamBatches", grpc::internal::RpcMethod::SERVER_STREAMING, channel),
      serve_work_("/strata.v1.DataService/ServeWork", grpc::internal::RpcMethod::BIDI_STREAMING, channel),
      request_(std::move(request)),
      call_(call),
      node_(std::move(node)),
      generation_(generation),
      queue_(queue) {
  // Owner: this reader (joined by its destructor after Cancel). Purpose: the
  // blocking Read loop of one node's stream, feeding the part queue.
  thread_ = std::thread([this] { Run(); });
}

PartReader::~PartReader() {
  Cancel();
  if (thread_.joinable()) thread_.join();
}

void PartReader::Cancel() {
  cancelled_ = true;
  context_.TryCancel();
  queue_->WakeAll();
}

bool PartReader::Give(const v1::WorkMore& more) {
  if (closed_) return false;
  MutexLock lock(&write_mu_);
  if (stop_) return false;
  v1::WorkRequest& message = outbox_.emplace_back();
  *message.mutable_more() = more;
  wake_writer_.Signal();
  return true;
}

void PartReader::Close() {
  if (closed_) return;
  closed_ = true;
  MutexLock lock(&write_mu_);
  close_ = true;
  wake_writer_.Signal();
}

void PartReader::WriteAll(grpc::ClientReaderWriter<v1::WorkRequest, grpc::ByteBuffer>* stream) {
  v1::WorkRequest open;
  *open.mutable_open() = request_;
  bool ok = stream->Write(open);
  bool half_closed = false;
  for (;;) {
    std::vector<v1::WorkRequest> due;
    bool close = false;
    {
      MutexLock lock(&write_mu_);
      wake_writer_.Wait(&write_mu_,
                        [&]() REQUIRES(write_mu_) { return stop_ || !outbox_.empty() || (close_ && !half_closed); });
      if (stop_) return;
      due.swap(outbox_);
      close = close_;
    }
    // A failed write means the call is ending: the reader reports how.
    for (const v1::WorkRequest& more : due) ok = ok && stream->Write(more);
    if (close && !half_closed) {
      half_closed = true;
      if (ok) ok = stream->WritesDone();
    }
  }
}

namespace {

// A part that is a whole batch has its payload copied here, on the reader's
// thread, into the buffer its recycled message carries: the stream's thread
// then takes it by swap. Parts of a batch stay where they were received until
// the stream's thread joins them, copying each byte once.
void OwnIfWhole(PartEvent* e) {
  if (BatchAssembler::WholeInOrder(e->part)) e->payload.Own(std::move(*e->part.mutable_payload()));
}

}  // namespace

template <typename Reader>
Status PartReader::ReadAll(Reader* reader) {
  Status refused;  // set when the node sent what no node may send
  grpc::ByteBuffer received;
  std::string scratch;
  std::vector<ReceivedPart> joined;
  for (;;) {
    reading_since_ns_.store(std::max<int64_t>(1, std::chrono::duration_cast<std::chrono::nanoseconds>(
                                                     std::chrono::steady_clock::now().time_since_epoch())
                                                     .count()),
                            std::memory_order_release);
    const bool got = reader->Read(&received);
    reading_since_ns_.store(0, std::memory_order_release);
    if (!got) break;
    PartEvent e;                   // the queue takes it whole, payload and all
    e.part = queue_->TakeSpare();  // parsing reuses its repeated fields' elements
    refused = ParsePart(&received, &e.part, &e.payload, &joined, &scratch);
    received.Clear();  // the parts hold the slices they need
    if (!refused.ok()) {
      refused = Status::Internal("node " + node_ + " sent a malformed part (" + refused.message() + ")");
      context_.TryCancel();
      break;
    }
    e.node = node_;
    e.generation = generation_;
    OwnIfWhole(&e);
    // Steps the node joined into one message (Batch.following) go on as
    // parts of their own, in order.
    bool pushed = queue_->Push(std::move(e), cancelled_);
    for (ReceivedPart& step : joined) {
      if (!pushed) break;
      if (step.fields.following_size() != 0) {
        refused = Status::Internal("the node joined steps inside joined steps");
        break;
      }
      PartEvent next;
      next.node = node_;
      next.generation = generation_;
      next.part = queue_->TakeSpare();
      next.part.Swap(&step.fields);  // the spare's elements, for the next joined step to parse into
      next.payload = std::move(step.payload);
      OwnIfWhole(&next);
      pushed = queue_->Push(std::move(next), cancelled_);
    }
    if (!pushed || !refused.ok()) {
      context_.TryCancel();
      break;
    }
  }
  // Finish() must follow the last Read(): drain what a cancelled call still buffers.
  while (reader->Read(&received)) {
  }
  return refused;
}

void PartReader::Run() {
  Status status;
  if (call_ == Call::kStream) {
    std::unique_ptr<grpc::ClientReader<grpc::ByteBuffer>> reader(
        grpc::internal::ClientReaderFactory<grpc::ByteBuffer>::Create(channel_.get(), stream_batches_, &context_,
                                                                      request_));
    const Status refused = ReadAll(reader.get());
    const Status finished = FromGrpcStatus(reader->Finish());
    status = refused.ok() ? finished : refused;
  } else {
    std::unique_ptr<grpc::ClientReaderWriter<v1::WorkRequest, grpc::ByteBuffer>> stream(
        grpc::internal::ClientReaderWriterFactory<v1::WorkRequest, grpc::ByteBuffer>::Create(channel_.get(),
                                                                                             serve_work_, &context_));
    // Owner: this reader's Run, which joins it before Finish (gRPC's rule:
    // no write outstanding then). Purpose: the call's writes, which may wait.
    std::thread writer([this, &stream] { WriteAll(stream.get()); });
    const Status refused = ReadAll(stream.get());
    {
      MutexLock lock(&write_mu_);
      stop_ = true;
      wake_writer_.Signal();
    }
    writer.join();  // a write still waiting fails now that the call has ended
    const Status finished = FromGrpcStatus(stream->Finish());
    status = refused.ok() ? finished : refused;
  }
  PartEvent end;
  end.node = node_;
  end.generation = generation_;
  end.end = true;
  end.status = status;
  if (!cancelled_) queue_->Push(std::move(end), cancelled_);
}

}  // namespace strata::client_internal
