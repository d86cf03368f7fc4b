#include "client/part_reader.h"

#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/impl/codegen/proto_utils.h>

#include <algorithm>

#include "client/batch_assembler.h"
#include "common/grpc_status.h"
#include "common/mutex.h"
#include "common/steady_clock.h"

namespace strata::client_internal {

uint64_t PartQueue::EventBytes(const PartEvent& e) {
  return e.end ? 0 : e.payload.size() + 64 * static_cast<uint64_t>(e.part.slots_size()) + 256;
}

bool PartQueue::TryPush(PartEvent* e, std::function<void()> when_room) {
  {
    MutexLock lock(&mu_);
    const uint64_t bytes = EventBytes(*e);
    const bool near = e->part.step() < next_step_ + lookahead_;
    if (e->end || (near && (bytes_ == 0 || bytes_ + bytes <= cap_bytes_))) {
      bytes_ += bytes;
      events_.push_back(std::move(*e));
      pushed_.Signal();
      return true;
    }
    (near ? waiting_for_bytes_ : waiting_).push_back(std::move(when_room));
  }
  return false;
}

std::optional<PartEvent> PartQueue::Pop(std::chrono::milliseconds timeout) {
  std::vector<std::function<void()>> waiting;
  std::optional<PartEvent> e;
  {
    MutexLock lock(&mu_);
    if (!pushed_.WaitFor(&mu_, timeout, [&]() REQUIRES(mu_) { return !events_.empty(); })) return std::nullopt;
    e = std::move(events_.front());
    events_.pop_front();
    bytes_ -= EventBytes(*e);
    if (bytes_ <= cap_bytes_ / 2) waiting.swap(waiting_for_bytes_);  // readers held back by the cap go on
  }
  for (auto& w : waiting) w();
  return e;
}

uint64_t PartQueue::lookahead() const {
  MutexLock lock(&mu_);
  return lookahead_;
}

void PartQueue::SetNextStep(uint64_t step, uint64_t lookahead, uint64_t step_bytes) {
  std::vector<std::function<void()>> waiting;
  {
    MutexLock lock(&mu_);
    next_step_ = step;
    if (lookahead != 0) lookahead_ = lookahead;
    if (step_bytes != 0) cap_bytes_ = std::max<uint64_t>(kMinCapBytes, 2 * (lookahead_ + 1) * step_bytes);
    waiting = TakeWaiting();
  }
  for (auto& w : waiting) w();
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

std::vector<std::function<void()>> PartQueue::TakeWaiting() {
  std::vector<std::function<void()>> waiting;
  waiting.swap(waiting_);
  for (auto& w : waiting_for_bytes_) waiting.push_back(std::move(w));
  waiting_for_bytes_.clear();
  return waiting;
}

void PartQueue::WakeAll() {
  std::vector<std::function<void()>> waiting;
  {
    MutexLock lock(&mu_);
    waiting = TakeWaiting();
  }
  for (auto& w : waiting) w();
}

namespace {

// A part that is a whole batch has its payload copied here, on the loop's
// thread, into the buffer its recycled message carries: the stream's thread
// then takes it by swap. Parts of a batch stay where they were received until
// the stream's thread joins them, copying each byte once.
void OwnIfWhole(PartEvent* e) {
  if (BatchAssembler::WholeInOrder(e->part)) e->payload.Own(std::move(*e->part.mutable_payload()));
}

}  // namespace

// One call's state. Its members are the loop's, but those under mu_ and the
// atomics, which the stream's thread touches too. The reader's handle and
// every task posted for the call hold it, so a task that runs after the
// handle is gone finds it, done, and does nothing.
class PartReader::State : public std::enable_shared_from_this<PartReader::State> {
 public:
  State(ReadLoop* loop, std::shared_ptr<grpc::Channel> channel, v1::StreamRequest request, std::string node,
        uint64_t generation, PartQueue* queue, Call call)
      : loop_(loop),
        stub_(std::move(channel)),
        request_(std::move(request)),
        call_kind_(call),
        node_(std::move(node)),
        generation_(generation),
        queue_(queue) {}

  // On the loop: opens the call (or, cancelled already, ends at once).
  void Start();
  // Any thread.
  void Cancel() {
    cancelled_ = true;
    context_.TryCancel();  // before the call starts, it starts cancelled
    queue_->WakeAll();     // a part waiting for room is dropped
  }
  bool Give(const v1::WorkMore& more);
  void Close();
  void WaitDone() {
    MutexLock lock(&mu_);
    done_cv_.Wait(&mu_, [&]() REQUIRES(mu_) { return done_; });
  }
  int64_t reading_since_ns() const { return reading_since_ns_.load(std::memory_order_acquire); }

 private:
  // An operation of this call: its completion runs `on_done` of the state.
  class CallOp final : public ReadLoop::Op {
   public:
    CallOp(State* state, void (State::*on_done)(bool)) : state_(state), on_done_(on_done) {}
    void Done(bool ok) override { (state_->*on_done_)(ok); }

   private:
    State* const state_;
    void (State::*const on_done_)(bool);
  };

  void Started(bool ok);
  void ReadDone(bool ok);
  void WriteDone(bool ok);
  void Finished(bool ok);
  // Queues the parts read and not yet queued, as far as the queue has room;
  // then reads the next message, or, the reading over, finishes the call.
  void Deliver();
  // Starts the next write, if one is due and none is outstanding.
  void PumpWrites();
  // Parses the message received into parts_, or says what the node sent that no node may send.
  Status Split();
  void Post(void (State::*task)()) {
    loop_->Post([self = shared_from_this(), task] { ((*self).*task)(); });
  }

  ReadLoop* const loop_;
  grpc::GenericStub stub_;
  const v1::StreamRequest request_;
  const Call call_kind_;
  const std::string node_;
  const uint64_t generation_;
  PartQueue* const queue_;
  grpc::ClientContext context_;
  std::unique_ptr<grpc::GenericClientAsyncReaderWriter> call_;
  CallOp start_op_{this, &State::Started};
  CallOp read_op_{this, &State::ReadDone};
  CallOp write_op_{this, &State::WriteDone};
  CallOp finish_op_{this, &State::Finished};
  // The loop's.
  grpc::ByteBuffer received_;
  grpc::ByteBuffer writing_buffer_;
  grpc::Status finish_status_;
  std::deque<PartEvent> parts_;  // read, not yet queued
  std::vector<ReceivedPart> joined_;
  std::string scratch_;
  Status refused_;  // set when the node sent what no node may send
  bool started_ = false;
  bool reading_ = false;
  bool read_over_ = false;  // a read failed: the server has sent everything, or the call ended
  bool writing_ = false;
  bool writes_over_ = false;  // the request sent (StreamBatches), half-closed, or a write failed
  bool open_sent_ = false;    // ServeWork: the first message, which opens it
  bool finishing_ = false;
  std::atomic<bool> cancelled_{false};
  std::atomic<int64_t> reading_since_ns_{0};
  // Shared with the stream's thread.
  Mutex mu_;
  CondVar done_cv_;
  std::vector<v1::WorkRequest> outbox_ GUARDED_BY(mu_);
  bool close_ GUARDED_BY(mu_) = false;  // WritesDone is due after the outbox
  bool ended_ GUARDED_BY(mu_) = false;  // the reading is over: Give takes no more
  bool done_ GUARDED_BY(mu_) = false;   // finished, nothing outstanding
};

void PartReader::State::Start() {
  if (cancelled_) {
    MutexLock lock(&mu_);
    ended_ = done_ = true;
    done_cv_.SignalAll();
    return;
  }
  const char* method =
      call_kind_ == Call::kStream ? "/strata.v1.DataService/StreamBatches" : "/strata.v1.DataService/ServeWork";
  call_ = stub_.PrepareCall(&context_, method, loop_->cq());
  call_->StartCall(&start_op_);
}

void PartReader::State::Started(bool ok) {
  started_ = true;
  if (!ok) {  // the call never began: Finish says why
    read_over_ = writes_over_ = true;
    return Deliver();
  }
  PumpWrites();
  Deliver();  // reads the first message
}

void PartReader::State::PumpWrites() {
  // Once the reading is over the call is ending: nothing more is worth sending.
  if (!started_ || writing_ || writes_over_ || read_over_) return;
  bool own = false;
  if (call_kind_ == Call::kStream) {
    grpc::SerializationTraits<v1::StreamRequest>::Serialize(request_, &writing_buffer_, &own);
    writing_ = writes_over_ = true;  // the one message, and the half-close with it
    call_->WriteLast(writing_buffer_, grpc::WriteOptions(), &write_op_);
    return;
  }
  v1::WorkRequest next;
  bool half_close = false;
  if (!open_sent_) {
    open_sent_ = true;
    *next.mutable_open() = request_;
  } else {
    MutexLock lock(&mu_);
    if (!outbox_.empty()) {
      next = std::move(outbox_.front());
      outbox_.erase(outbox_.begin());
    } else if (close_) {
      half_close = true;
    } else {
      return;  // nothing due
    }
  }
  writing_ = true;
  if (half_close) {
    writes_over_ = true;
    call_->WritesDone(&write_op_);
    return;
  }
  grpc::SerializationTraits<v1::WorkRequest>::Serialize(next, &writing_buffer_, &own);
  call_->Write(writing_buffer_, &write_op_);
}

void PartReader::State::WriteDone(bool ok) {
  writing_ = false;
  writing_buffer_.Clear();
  if (!ok) writes_over_ = true;  // the call is ending: the read that fails says how
  PumpWrites();
  if (read_over_) Deliver();  // the finish may have waited for this write
}

bool PartReader::State::Give(const v1::WorkMore& more) {
  {
    MutexLock lock(&mu_);
    if (ended_) return false;
    *outbox_.emplace_back().mutable_more() = more;
  }
  Post(&State::PumpWrites);
  return true;
}

void PartReader::State::Close() {
  {
    MutexLock lock(&mu_);
    close_ = true;
  }
  Post(&State::PumpWrites);
}

Status PartReader::State::Split() {
  PartEvent e;                   // the queue takes it whole, payload and all
  e.part = queue_->TakeSpare();  // parsing reuses its repeated fields' elements
  Status refused = ParsePart(&received_, &e.part, &e.payload, &joined_, &scratch_);
  received_.Clear();  // the parts hold the slices they need
  if (!refused.ok()) return Status::Internal("node " + node_ + " sent a malformed part (" + refused.message() + ")");
  e.node = node_;
  e.generation = generation_;
  OwnIfWhole(&e);
  parts_.push_back(std::move(e));
  // Steps the node joined into one message (Batch.following) go on as parts
  // of their own, in order.
  for (ReceivedPart& step : joined_) {
    if (step.fields.following_size() != 0) return Status::Internal("the node joined steps inside joined steps");
    PartEvent next;
    next.node = node_;
    next.generation = generation_;
    next.part = queue_->TakeSpare();
    next.part.Swap(&step.fields);  // the spare's elements, for the next joined step to parse into
    next.payload = std::move(step.payload);
    OwnIfWhole(&next);
    parts_.push_back(std::move(next));
  }
  return Status::OK();
}

void PartReader::State::ReadDone(bool ok) {
  reading_ = false;
  reading_since_ns_.store(0, std::memory_order_release);
  if (!ok) {
    read_over_ = true;
  } else if (!refused_.ok() || cancelled_) {
    received_.Clear();  // drained: the call is being cancelled
  } else if (Status refused = Split(); !refused.ok()) {
    refused_ = std::move(refused);
    context_.TryCancel();
  }
  Deliver();
}

void PartReader::State::Deliver() {
  if (cancelled_) parts_.clear();
  while (!parts_.empty()) {
    // Kept by the queue until room opens: then delivery goes on, on the loop.
    auto when_room = [self = shared_from_this()] { self->Post(&State::Deliver); };
    if (!queue_->TryPush(&parts_.front(), std::move(when_room))) {
      // A Cancel whose WakeAll ran before the queue kept when_room would never
      // run it, and the call would never finish: cancelled, the parts go here
      // (seen: ~PartReader waiting forever in an ASan run of cluster_test).
      if (!cancelled_) return;
      parts_.clear();
      break;
    }
    parts_.pop_front();
  }
  if (reading_ || finishing_ || !started_) return;
  if (!read_over_) {
    reading_ = true;
    reading_since_ns_.store(std::max<int64_t>(1, SteadyNowNs()), std::memory_order_release);
    call_->Read(&received_, &read_op_);
    return;
  }
  {
    MutexLock lock(&mu_);
    ended_ = true;  // Give takes no more
  }
  if (writing_) return;  // Finish follows the last write's completion
  finishing_ = true;
  call_->Finish(&finish_status_, &finish_op_);
}

void PartReader::State::Finished(bool /*ok: always true for Finish*/) {
  const Status finished = FromGrpcStatus(finish_status_);
  if (!cancelled_) {
    PartEvent end;
    end.node = node_;
    end.generation = generation_;
    end.end = true;
    end.status = refused_.ok() ? finished : refused_;
    queue_->TryPush(&end, nullptr);  // an end is always queued
  }
  MutexLock lock(&mu_);
  done_ = true;
  done_cv_.SignalAll();
}

PartReader::PartReader(ReadLoop* loop, std::shared_ptr<grpc::Channel> channel, v1::StreamRequest request,
                       std::string node, uint64_t generation, PartQueue* queue, Call call)
    : state_(std::make_shared<State>(loop, std::move(channel), std::move(request), std::move(node), generation, queue,
                                     call)) {
  loop->Post([state = state_] { state->Start(); });
}

PartReader::~PartReader() {
  Cancel();
  state_->WaitDone();
}

void PartReader::Cancel() { state_->Cancel(); }

bool PartReader::Give(const v1::WorkMore& more) {
  if (closed_) return false;
  return state_->Give(more);
}

void PartReader::Close() {
  if (closed_) return;
  closed_ = true;
  state_->Close();
}

int64_t PartReader::reading_since_ns() const { return state_->reading_since_ns(); }

}  // namespace strata::client_internal
