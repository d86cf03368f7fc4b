#include "server/rpc/stream_reactor.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <boost/asio/post.hpp>
#include <chrono>

#include "common/grpc_status.h"
#include "common/mutex.h"
#include "common/wall_clock.h"

namespace strata {

void OpenStreams::Add(Member* stream) {
  MutexLock lock(&mu_);
  members_.insert(stream);
}

void OpenStreams::Remove(Member* stream) {
  MutexLock lock(&mu_);
  members_.erase(stream);
}

void OpenStreams::WakeAll() {
  MutexLock lock(&mu_);
  for (Member* m : members_) m->WakeForDrain();
}

template <typename Base>
BatchSender<Base>::BatchSender(const StreamCalls* calls, std::string peer)
    : calls_(calls),
      lane_(calls->lanes->Acquire()),
      exec_(calls->lanes->executor(lane_)),
      peer_(std::move(peer)),
      prefetch_(calls->prefetch_batches),
      memory_(calls->memory) {}

template <typename Base>
void BatchSender<Base>::Start(std::unique_ptr<BatchStream> stream, v1::StreamRequest request, uint64_t reserved,
                              bool more_work) {
  started_ = true;
  stream_ = std::move(stream);
  request_ = std::move(request);
  joins_ = request_.work_size() != 0 || request_.joined_steps();
  // omit_idle_steps is for calls with work only (data.proto); joins are not.
  omits_idle_ = request_.work_size() != 0 && request_.omit_idle_steps();
  request_.clear_work();  // the stream keeps it
  served_.emplace(calls_->metrics->datasets().For(request_.dataset()));
  reserved_ = reserved;
  calls_->open->Add(this);  // first, so that OnDone's Remove always follows it
  calls_->active->Begin();
  calls_->metrics->active_streams.Increment();
  calls_->metrics->streams_opened.Increment();
  spdlog::info("stream {} rank {}/{} batch {} epoch {} steps [{}, {}){} for {}", request_.dataset(), request_.rank(),
               request_.world(), request_.batch_size(), request_.epoch(), stream_->next_step(), stream_->end_step(),
               more_work ? " and more to come" : "", peer_);
  MutexLock lock(&mu_);
  next_queued_step_ = completed_steps_ = stream_->next_step();
  granted_ = step_estimate_ = reserved;
  more_work_ = starting_read_ = more_work;
  set_up_ = true;  // a drain or a cancel that came before this is seen by the next Pump
  if (AllClaimed()) {
    claimed_all_ = true;  // an empty range: the first Pump finishes the call
    kicking_ = true;      // counted, so that a cancel cannot finish the call under the posted Pump
    boost::asio::post(exec_, [this] { Pump(Wake::kKick); });
  } else {
    MaybeScheduleBuild();
  }
}

template <typename Base>
bool BatchSender<Base>::GiveWork(v1::WorkMore more, const Status& refused) {
  bool goes_on = false;
  {
    MutexLock lock(&mu_);
    if (!final_status_ && !finishing_) {
      const Status s = refused.ok() ? stream_->AddWork(std::move(more)) : refused;
      if (!s.ok()) {
        // Work the plan refuses is an invalid request too (the caller counted what it refused itself).
        if (refused.ok() && s.code() == Code::kInvalidArgument) {
          calls()->metrics->CountRejected(Metrics::Reject::kInvalidRequest);
        }
        spdlog::warn("stream {} rank {} from {}: {}", request_.dataset(), request_.rank(), peer_, s.ToString());
        final_status_ = ToGrpcStatus(s);
      } else {
        goes_on = starting_read_ = true;
        MaybeScheduleBuild();
      }
    }
  }
  if (!goes_on) Pump();
  return goes_on;
}

template <typename Base>
void BatchSender<Base>::InputClosed() {
  {
    MutexLock lock(&mu_);
    more_work_ = false;
    claimed_all_ = claimed_all_ || stream_->done();
  }
  Pump();
}

template <typename Base>
void BatchSender<Base>::WakeForDrain() {
  MutexLock lock(&mu_);
  if (!set_up_ || finishing_ || kicking_) return;
  kicking_ = true;  // counted like the kick after a build: the call cannot finish under it
  boost::asio::post(exec_, [this] { Pump(Wake::kKick); });
}

template <typename Base>
void BatchSender<Base>::ReadStarted() {
  Pump(Wake::kReadStarted);
}

template <typename Base>
bool BatchSender<Base>::CanClaim() {
  if (final_status_ || claimed_all_ || stream_->done() || ready_.size() + in_build_ >= prefetch_) return false;
  // The reservation always covers one step; building further ahead takes
  // more of the shared budget, or waits until a write gives some back.
  if (buffered_ == 0 && in_build_ == 0) return true;
  const uint64_t need = buffered_ + (uint64_t{in_build_} + 1) * step_estimate_;
  if (need <= granted_) return true;
  if (!memory_->TryAcquire(need - granted_)) {
    // A step built or written gives some back, and tries again: building
    // tasks until then would spin (one deferred for a peer's records, say).
    budget_blocked_ = true;
    return false;
  }
  granted_ = need;
  return true;
}

template <typename Base>
void BatchSender<Base>::ShrinkGrant() {
  const uint64_t keep = std::max(reserved_, buffered_ + uint64_t{in_build_} * step_estimate_);
  if (granted_ > keep) {
    memory_->Release(granted_ - keep);
    granted_ = keep;
  }
}

template <typename Base>
void BatchSender<Base>::MaybeScheduleBuild() {
  if (budget_blocked_) return;
  // A builder not yet at its claim counts as a step being built.
  while (builders_ < kBuildersPerStream && !final_status_ && !claimed_all_ && !stream_->done() &&
         ready_.size() + builders_ < prefetch_) {
    ++builders_;
    boost::asio::post(exec_, [this] { BuildTask(); });
  }
}

template <typename Base>
void BatchSender<Base>::BuildTask() {
  // Claims and builds steps while the queue has room, so that a stream whose
  // builds are its bottleneck costs no task hand-off (a thread wake-up) per
  // batch. Up to kBuildersPerStream such tasks build different steps at once;
  // their batches are queued in step order.
  for (;;) {
    BatchStream::StepClaim claim;
    Status s;
    {
      MutexLock lock(&mu_);
      if (!CanClaim()) break;      // still counted in builders_ until Pump(kBuilderEnded) takes it off
      s = stream_->Claim(&claim);  // claims are taken in order, one at a time
      ++in_build_;
      claimed_all_ = AllClaimed();
    }
    const uint64_t step = claim.step;
    std::vector<WirePart> parts;
    if (s.ok()) {
      // Records from other nodes are asked for without holding this thread:
      // the task goes on in ResumeBuild once they have come, still counted in
      // builders_ (so the call cannot finish, and the reactor go, meanwhile).
      const bool built = stream_->BuildOrDefer(std::move(claim), &parts, &s,
                                               [this](std::shared_ptr<BatchStream::DeferredStep> deferred) {
                                                 boost::asio::post(exec_, [this, deferred] { ResumeBuild(*deferred); });
                                               });
      if (!built) return;
    }
    Queue(step, s, parts);
  }
  // Takes this task off builders_ under the same lock that decides whether to
  // finish: had it left builders_ first, another thread's Pump could finish
  // the call, and gRPC delete the reactor, before this Pump ran.
  Pump(Wake::kBuilderEnded);  // may finish the call: no member is touched after
}

template <typename Base>
void BatchSender<Base>::ResumeBuild(BatchStream::DeferredStep& deferred) {
  std::vector<WirePart> parts;
  const Status s = stream_->FinishDeferred(deferred, &parts);
  Queue(BatchStream::DeferredStepNumber(deferred), s, parts);
  BuildTask();  // the task that deferred goes on
}

template <typename Base>
void BatchSender<Base>::Queue(uint64_t step, const Status& s, std::vector<WirePart>& parts) {
  std::vector<grpc::ByteBuffer> wire;  // serialised here, off the lock and off gRPC's threads
  if (s.ok()) {
    for (const WirePart& p : parts) wire.push_back(p.Serialize());
  }
  MutexLock lock(&mu_);
  --in_build_;
  budget_blocked_ = false;
  if (!s.ok()) {
    spdlog::error("stream {} rank {}: {}", request_.dataset(), request_.rank(), s.ToString());
    if (!final_status_) final_status_ = ToGrpcStatus(s);
  } else {
    std::vector<Outgoing>& out = built_[step];
    uint64_t step_bytes = 0;
    for (size_t i = 0; i < parts.size(); ++i) {
      const uint64_t bytes = wire[i].Length();
      step_bytes += bytes;
      out.push_back(Outgoing{std::move(wire[i]), parts[i].payload_bytes(), bytes,
                             static_cast<uint64_t>(parts[i].message().ids_size()), step, step, i + 1 == parts.size()});
    }
    buffered_ += step_bytes;
    step_estimate_ = std::max(step_estimate_, step_bytes);
    // Steps built out of order wait for the ones before them.
    while (!built_.empty() && built_.begin()->first == next_queued_step_) {
      std::vector<Outgoing>& step_out = built_.begin()->second;
      if (omits_idle_ && step_out.size() == 1 && step_out[0].samples == 0) {
        // The client gave this node nothing of the step and wants no part of
        // it: the step is done once what is queued before it is sent.
        buffered_ -= step_out[0].wire_bytes;
        if (!ready_.empty()) {
          ready_.back().through = step_out[0].step;
        } else if (writing_) {
          in_flight_.through = step_out[0].step;
        } else {
          completed_steps_ = step_out[0].step + 1;
        }
      } else if (joins_ && step_out.size() == 1 && !ready_.empty() && ready_.back().last_of_step &&
                 ready_.back().steps < kMaxJoinedSteps &&
                 ready_.back().wire_bytes + step_out[0].wire_bytes <= kMaxJoinedBytes) {
        Outgoing& into = ready_.back();
        Outgoing& next = step_out[0];
        into.wire = WirePart::Follow(into.wire, next.wire);
        const uint64_t joined = into.wire.Length();
        buffered_ += joined - into.wire_bytes - next.wire_bytes;  // the field's key and length
        into.wire_bytes = joined;
        into.payload_bytes += next.payload_bytes;
        into.samples += next.samples;
        into.step = into.through = next.step;
        ++into.steps;
        calls_->metrics->joined_steps.Increment();
      } else {
        for (Outgoing& o : step_out) ready_.push_back(std::move(o));
      }
      built_.erase(built_.begin());
      ++next_queued_step_;
    }
  }
  if (!writing_ && !kicking_ && !ready_.empty()) {
    // The writer is idle: a thread of the I/O pool starts the write, so that
    // this one goes on building while the batch is sent (on two cores the
    // send, the kernel's loopback included, is as long as the build).
    kicking_ = true;
    boost::asio::post(calls_->executor, [this] { Pump(Wake::kKick); });
  }
}

template <typename Base>
void BatchSender<Base>::Pump(Wake wake) {
  enum class Action { kNone, kWrite, kFinish } action = Action::kNone;
  grpc::Status finish_status;
  uint64_t cursor = 0;
  {
    MutexLock lock(&mu_);
    if (wake == Wake::kKick) kicking_ = false;
    if (wake == Wake::kBuilderEnded) --builders_;
    if (wake == Wake::kReadStarted) starting_read_ = false;
    // A cancel before Start has set up the call: the ServeWork reactor's
    // ReadStarted, after Start, pumps again.
    if (!set_up_ || writing_ || finishing_) return;
    if (!final_status_ && calls_->draining->load()) {
      final_status_ =
          grpc::Status(grpc::StatusCode::UNAVAILABLE,
                       "stratad is shutting down; resume this stream at step " + std::to_string(completed_steps_));
    }
    if (final_status_ || (claimed_all_ && ready_.empty())) {
      // The last build task, the kick or the read being started pumps again when it ends.
      if (builders_ > 0 || kicking_ || starting_read_) return;
      finishing_ = true;
      finish_status = final_status_.value_or(grpc::Status::OK);
      cursor = completed_steps_;
      action = Action::kFinish;
    } else if (!ready_.empty()) {
      in_flight_ = std::move(ready_.front());
      ready_.pop_front();
      writing_ = true;
      action = Action::kWrite;
      MaybeScheduleBuild();
    } else {
      MaybeScheduleBuild();
    }
  }
  if (action == Action::kWrite) {
    this->StartWrite(&in_flight_.wire);
  } else if (action == Action::kFinish) {
    RecordCursor(cursor);
    this->Finish(finish_status);
  }
}

template <typename Base>
void BatchSender<Base>::OnWriteDone(bool ok) {
  TakeBackFromGrpc(this);
  {
    MutexLock lock(&mu_);
    writing_ = false;
    if (!ok) {
      if (!final_status_) final_status_ = grpc::Status(grpc::StatusCode::CANCELLED, "the client went away");
    } else {
      Metrics& m = *calls_->metrics;
      m.bytes_served.Increment(static_cast<double>(in_flight_.payload_bytes));
      m.samples_served.Increment(static_cast<double>(in_flight_.samples));
      // A batch is a node's share of a step: counted once, with its last part.
      if (in_flight_.last_of_step) m.batches_served.Increment(static_cast<double>(in_flight_.steps));
      served_->bytes->Increment(static_cast<double>(in_flight_.payload_bytes));
      served_->samples->Increment(static_cast<double>(in_flight_.samples));
      if (in_flight_.last_of_step) completed_steps_ = in_flight_.through + 1;
    }
    buffered_ -= in_flight_.wire_bytes;
    in_flight_ = Outgoing();
    ShrinkGrant();
    budget_blocked_ = false;
  }
  Pump();
}

template <typename Base>
void BatchSender<Base>::OnCancel() {
  TakeBackFromGrpc(this);
  if (!started_) return;  // ServeWork before its first message: its read fails and ends the call
  {
    MutexLock lock(&mu_);
    if (!final_status_) final_status_ = grpc::Status(grpc::StatusCode::CANCELLED, "the client cancelled the stream");
  }
  Pump();
}

template <typename Base>
void BatchSender<Base>::RecordCursor(uint64_t next_step) {
  if (request_.job_id().empty()) return;
  v1::CursorRecord c;
  c.set_dataset(stream_->version().shape().name);
  c.set_version(stream_->version().shape().version);
  c.set_seed(request_.seed());
  c.set_epoch(request_.epoch());
  c.set_step(next_step);
  c.set_spec_hash(stream_->plan().plan_hash());
  c.set_updated_unix_ms(UnixNowMs());
  Status s = calls_->catalog->PutCursor(request_.job_id(), request_.rank(), c);
  if (!s.ok())
    spdlog::warn("job {} rank {}: cannot record cursor: {}", request_.job_id(), request_.rank(), s.ToString());
}

template <typename Base>
void BatchSender<Base>::OnDone() {
  TakeBackFromGrpc(this);
  calls_->lanes->Release(lane_);  // no task of this stream is left on the lane
  if (!started_) {                // refused before it started
    delete this;
    return;
  }
  calls_->open->Remove(this);  // no drain wakes it past here
  calls_->metrics->active_streams.Decrement();
  uint64_t completed = 0;
  {
    MutexLock lock(&mu_);        // no other callback runs now; the lock states what guards the read
    memory_->Release(granted_);  // every write has completed: nothing is buffered
    completed = completed_steps_;
  }
  spdlog::info("stream {} rank {}/{} ended at step {}", request_.dataset(), request_.rank(), request_.world(),
               completed);
  const StreamCalls* calls = calls_;
  delete this;
  calls->active->End();  // last: the drain may go on as soon as this returns
}

template class BatchSender<grpc::ServerWriteReactor<grpc::ByteBuffer>>;
template class BatchSender<grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>>;

}  // namespace strata
