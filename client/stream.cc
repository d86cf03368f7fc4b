// A Stream over one StreamBatches call. Parts are read with the synchronous
// ClientReader and joined into complete batches; a part that breaks the
// protocol (a step out of order, a different epoch or rank, inconsistent
// arrays) ends the stream with Internal rather than yielding a wrong batch.
#include <grpcpp/client_context.h>

#include <atomic>
#include <memory>
#include <string>
#include <utility>

#include "client/client_internal.h"
#include "common/grpc_status.h"
#include "strata/v1/data.grpc.pb.h"

namespace strata::client_internal {

namespace {

class GrpcStream final : public Stream {
 public:
  GrpcStream(std::shared_ptr<grpc::Channel> channel, const v1::StreamRequest& request, const ResumeToken& position)
      : stub_(v1::DataService::NewStub(channel)), rank_(request.rank()), position_(position) {
    reader_ = stub_->StreamBatches(&context_, request);
  }

  ~GrpcStream() override { EndCall().IgnoreError(); }

  Status Next(Batch* batch) override;
  uint64_t steps_in_epoch() const override { return steps_in_epoch_; }
  uint64_t next_step() const override { return position_.step; }
  ResumeToken resume_token() const override { return position_; }

  // The one method another thread may call while Next() blocks.
  void Cancel() override {
    cancelled_ = true;
    context_.TryCancel();
  }

 private:
  // Checks the first part of a step against what the stream has seen so far.
  Status CheckStepStart(const v1::Batch& part) const;
  // Makes `status` the stream's final answer and ends the call.
  Status Fail(Status status);
  // Ends the call if it is still open (cancelling it) and returns its status.
  Status EndCall();

  grpc::ClientContext context_;
  std::unique_ptr<v1::DataService::Stub> stub_;
  std::unique_ptr<grpc::ClientReader<v1::Batch>> reader_;
  v1::Batch part_;  // reused for every read
  const uint32_t rank_;
  ResumeToken position_;  // step: the next step to deliver
  uint64_t steps_in_epoch_ = 0;
  bool reads_done_ = false;  // Read() has returned false
  bool call_ended_ = false;  // Finish() has been called
  Status final_;             // once not OK, every Next() returns it
  std::atomic<bool> cancelled_{false};
};

Status GrpcStream::Next(Batch* batch) {
  if (!final_.ok()) return final_;
  if (cancelled_) return Fail(Status::Cancelled("stream cancelled"));
  bool in_step = false;
  for (;;) {
    if (!reader_->Read(&part_)) {
      reads_done_ = true;
      const Status end = EndCall();
      if (cancelled_) return Fail(Status::Cancelled("stream cancelled"));
      if (!end.ok()) return Fail(end);
      if (in_step) {
        return Fail(Status::Internal("stream ended in the middle of step " + std::to_string(batch->step())));
      }
      std::string where = "end of stream at step " + std::to_string(position_.step);
      if (steps_in_epoch_ != 0) where += " of " + std::to_string(steps_in_epoch_);
      return Fail(Status::OutOfRange(std::move(where)));
    }
    if (!in_step) {
      Status ok = CheckStepStart(part_);
      if (!ok.ok()) return Fail(std::move(ok));
      batch->Reset(part_.epoch(), part_.step(), part_.rank(), part_.dataset_version(), part_.steps_in_epoch(),
                   part_.batch_size());
      in_step = true;
    } else if (part_.step() != batch->step()) {
      return Fail(Status::Internal("server sent step " + std::to_string(part_.step()) + " before step " +
                                   std::to_string(batch->step()) + " was complete"));
    }
    if (!batch->AddPart(&part_)) {
      return Fail(Status::Internal("server sent an inconsistent part of step " + std::to_string(batch->step())));
    }
    if (batch->Complete()) break;
  }
  position_.version = batch->dataset_version();
  position_.plan_hash = part_.plan_hash();
  position_.step = batch->step() + 1;
  steps_in_epoch_ = batch->steps_in_epoch();
  return Status::OK();
}

Status GrpcStream::CheckStepStart(const v1::Batch& part) const {
  auto bad = [&](const std::string& what) {
    return Status::Internal("server sent " + what + " at step " + std::to_string(part.step()));
  };
  if (part.step() < position_.step) {
    return bad("a step out of order (expected " + std::to_string(position_.step) + " or later)");
  }
  if (part.epoch() != position_.epoch) return bad("epoch " + std::to_string(part.epoch()));
  if (part.rank() != rank_) return bad("rank " + std::to_string(part.rank()));
  if (position_.version != 0 && part.dataset_version() != position_.version) {
    return bad("dataset version " + std::to_string(part.dataset_version()));
  }
  if (position_.plan_hash != 0 && part.plan_hash() != position_.plan_hash) return bad("a different plan hash");
  if (part.steps_in_epoch() != 0 && part.step() >= part.steps_in_epoch()) {
    return bad("a step beyond the epoch's " + std::to_string(part.steps_in_epoch()));
  }
  return Status::OK();
}

Status GrpcStream::Fail(Status status) {
  EndCall().IgnoreError();  // `status` already says what went wrong
  final_ = std::move(status);
  return final_;
}

Status GrpcStream::EndCall() {
  if (call_ended_) return Status::OK();
  call_ended_ = true;
  // Finish() must follow the last Read(): if the server may still be sending,
  // cancel the call and drain what is buffered first.
  if (!reads_done_) {
    context_.TryCancel();
    v1::Batch ignored;
    while (reader_->Read(&ignored)) {
    }
  }
  return FromGrpcStatus(reader_->Finish());
}

}  // namespace

std::unique_ptr<Stream> NewGrpcStream(std::shared_ptr<grpc::Channel> channel, const v1::StreamRequest& request,
                                      const ResumeToken& position) {
  return std::make_unique<GrpcStream>(std::move(channel), request, position);
}

}  // namespace strata::client_internal
