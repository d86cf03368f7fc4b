// An IngestWriter over one client-streaming Ingest call:
//   open, samples..., commit, WritesDone, Finish -> IngestReply.
// Samples are gathered into SampleBatch messages of about 1 MiB. When a Write
// fails the server has ended the call; Finish() then returns its real status
// (the dataset exists, the disk is full...), which is what the caller sees.
#include <grpcpp/client_context.h>

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>

#include "client/client_internal.h"
#include "client/proto_convert.h"
#include "common/call_metadata.h"
#include "common/grpc_status.h"
#include "common/input_limits.h"
#include "common/utf8.h"
#include "strata/v1/admin.grpc.pb.h"
#include "strata/v1/data.grpc.pb.h"

namespace strata::client_internal {

namespace {

constexpr size_t kMessageTargetBytes = size_t{1} << 20;
// A message is also sent once its first sample has waited this long, at the
// next Write: a slow producer keeps the server hearing from it (stratad aborts
// an ingest whose client sends nothing for ingest_idle_timeout_s).
constexpr std::chrono::seconds kMessageMaxAge{5};

// Protobuf string fields must hold UTF-8; say which text is not.
Status CheckUtf8(const Sample& sample) {
  auto bad = [&](const std::string& what) {
    std::string shown;
    for (char c : sample.key.substr(0, 120)) shown += (c & 0x80) ? '?' : c;
    return Status::InvalidArgument("sample '" + shown + "': its " + what +
                                   " is not valid UTF-8 (keys, labels and attributes must be UTF-8 text)");
  };
  if (!IsValidUtf8(sample.key)) return bad("key");
  if (!IsValidUtf8(sample.label)) return bad("label");
  for (const auto& [k, v] : sample.attributes) {
    if (!IsValidUtf8(k) || !IsValidUtf8(v)) return bad("attribute '" + k + "'");
  }
  for (const auto& f : sample.fields) {
    if (!IsValidUtf8(f.name)) return bad("field name");
  }
  return Status::OK();
}

uint64_t PayloadBytes(const Sample& sample) {
  uint64_t bytes = 0;
  for (const Field& field : sample.fields) bytes += field.data.size();
  return bytes;
}

class GrpcIngestWriter final : public IngestWriter {
 public:
  GrpcIngestWriter(std::shared_ptr<grpc::Channel> channel, const v1::IngestOptions& options)
      : stub_(v1::DataService::NewStub(channel)), dataset_(options.dataset()) {
    // Retention deletes versions: the node's token check asks for admin.
    if (options.keep_versions() > 0) context_.AddMetadata(kKeepVersionsMetadataKey, "1");
    writer_ = stub_->Ingest(&context_, &reply_);
    v1::IngestRequest open;
    *open.mutable_open() = options;
    if (!writer_->Write(open)) ServerEnded().IgnoreError();  // kept in error_
  }

  ~GrpcIngestWriter() override {
    if (!ended_) Abort();
  }

  // Waits until the server says it took the ingest (its initial metadata
  // carries kAcceptedKey), at most `timeout`: then the call is cancelled and
  // the node is Unavailable. Otherwise the server's refusal.
  Status AwaitAccepted(std::chrono::milliseconds timeout);

  Status Write(const Sample& sample) override;
  Result<IngestSummary> Commit() override;
  void Abort() override;
  uint64_t samples_written() const override { return samples_; }
  uint64_t bytes_written() const override { return bytes_; }

 private:
  // Sends the gathered samples as one message.
  Status Flush();
  // After a failed Write: the call is over; fetch the server's status.
  Status ServerEnded();
  // Ends the call: waits for the server's status (and reply).
  Status Finished();

  grpc::ClientContext context_;
  std::unique_ptr<v1::DataService::Stub> stub_;
  const std::string dataset_;  // as the open named it
  v1::IngestReply reply_;
  std::unique_ptr<grpc::ClientWriter<v1::IngestRequest>> writer_;
  v1::IngestRequest pending_;  // a `samples` message being filled
  v1::Sample next_;            // the sample being added, swapped into pending_
  size_t pending_bytes_ = 0;
  std::chrono::steady_clock::time_point pending_since_;  // when pending_ got its first sample
  uint64_t samples_ = 0;
  uint64_t bytes_ = 0;
  bool ended_ = false;  // Finish() has been called
  Status error_;        // sticky
};

// Set by stratad's IngestReactor once the ingest is opened (server/rpc/ingest_reactor.h).
constexpr char kAcceptedKey[] = "strata-ingest-accepted";

Status GrpcIngestWriter::AwaitAccepted(std::chrono::milliseconds timeout) {
  if (!error_.ok()) return error_;
  std::mutex mu;
  std::condition_variable cv;
  bool answered = false, timed_out = false;
  // Owner: this call (joined before it returns). Purpose: cancels the call
  // if the server has not accepted the ingest within `timeout`, since the
  // synchronous stream's header wait takes no deadline of its own.
  std::thread watchdog([&] {
    std::unique_lock<std::mutex> lock(mu);
    if (!cv.wait_for(lock, timeout, [&] { return answered; })) {
      timed_out = true;
      context_.TryCancel();
    }
  });
  writer_->WaitForInitialMetadata();
  {
    std::lock_guard<std::mutex> lock(mu);
    answered = true;
  }
  cv.notify_all();
  watchdog.join();
  if (context_.GetServerInitialMetadata().count(kAcceptedKey) > 0) return Status::OK();
  Status s = ServerEnded();
  if (timed_out) {
    error_ =
        Status::DeadlineExceeded("the node did not take the ingest within " + std::to_string(timeout.count()) + " ms");
    return error_;
  }
  return s;
}

Status GrpcIngestWriter::Write(const Sample& sample) {
  if (!error_.ok()) return error_;
  if (ended_) return Status::FailedPrecondition("ingest already committed or aborted");
  STRATA_RETURN_IF_ERROR(CheckUtf8(sample));
  ToProto(sample, &next_);
  const size_t size = next_.ByteSizeLong();
  STRATA_RETURN_IF_ERROR(CheckSampleBytes("sample '" + sample.key + "'", size));
  // Keep messages near the target: a large sample goes alone.
  if (pending_bytes_ > 0 && pending_bytes_ + size > kMessageTargetBytes) STRATA_RETURN_IF_ERROR(Flush());
  // The swap leaves next_ holding a sample that Flush cleared: buffers to reuse.
  const auto now = std::chrono::steady_clock::now();
  if (pending_bytes_ == 0) pending_since_ = now;
  pending_.mutable_samples()->add_samples()->Swap(&next_);
  pending_bytes_ += size;
  ++samples_;
  bytes_ += PayloadBytes(sample);
  if (pending_bytes_ >= kMessageTargetBytes || now - pending_since_ >= kMessageMaxAge) STRATA_RETURN_IF_ERROR(Flush());
  return Status::OK();
}

Status GrpcIngestWriter::Flush() {
  if (pending_.samples().samples_size() == 0) return Status::OK();
  if (!writer_->Write(pending_)) return ServerEnded();
  // Clear() keeps the sample objects for reuse by the next message.
  pending_.mutable_samples()->Clear();
  pending_bytes_ = 0;
  return Status::OK();
}

Result<IngestSummary> GrpcIngestWriter::Commit() {
  if (!error_.ok()) return error_;
  if (ended_) return Status::FailedPrecondition("ingest already committed or aborted");
  STRATA_RETURN_IF_ERROR(Flush());
  v1::IngestRequest commit;
  commit.mutable_commit()->set_expected_samples(samples_);
  if (!writer_->Write(commit)) return ServerEnded();
  writer_->WritesDone();
  Status status = Finished();
  const Code code = status.code();
  // A node that aborted the version says so ("nothing was stored"): an answer.
  const bool answered = status.message().find("nothing was stored") != std::string::npos;
  if (!answered && (code == Code::kUnavailable || code == Code::kCancelled || code == Code::kDeadlineExceeded ||
                    code == Code::kUnknown)) {
    // The commit went out and no answer came back: the node may have sealed
    // the version before the connection or the node went. Retrying blindly
    // would then ingest the data a second time.
    status = Status(code, "no answer to the commit (" + status.message() + "): a version of '" + dataset_ +
                              "' may have been sealed before the connection ended; `strata ls` shows whether it "
                              "was, before you ingest again");
  }
  if (!status.ok()) {
    error_ = status;
    return status;
  }
  return FromProto(reply_);
}

void GrpcIngestWriter::Abort() {
  if (ended_) return;
  // Ending the stream without a commit makes the server abort the version;
  // waiting for its status lets it finish before the caller moves on (or exits).
  writer_->WritesDone();
  Finished().IgnoreError();  // the server's answer to an abort says nothing new
  if (error_.ok()) error_ = Status::Aborted("ingest aborted");
}

Status GrpcIngestWriter::ServerEnded() {
  Status status = Finished();
  if (status.ok()) status = Status::Internal("the server ended the ingest before its commit");
  error_ = status;
  return status;
}

Status GrpcIngestWriter::Finished() {
  ended_ = true;
  return FromGrpcStatus(writer_->Finish());
}

}  // namespace

// Whether the node takes ingests now is learnt in two steps. First its
// cluster map, with `timeout`: a node that is down, unreachable or hung does not
// answer it, and is Unavailable at once (the caller tries the next node). The
// map also says whether the node's build signals that it took an ingest
// (ingest_accept_signal). If it does, the call waits for that signal, so that
// a refusal (not the home, draining) is known before any sample is sent. A
// stratad built before the signal sends no initial metadata until the call
// ends, so waiting for it would time out and cancel an ingest the node had
// taken: with such a node the samples go at once, and a refusal ends the call,
// which the first Write or the Commit reports.
Result<std::unique_ptr<IngestWriter>> StartGrpcIngest(std::shared_ptr<grpc::Channel> channel,
                                                      const v1::IngestOptions& options,
                                                      std::chrono::milliseconds timeout) {
  v1::ClusterMap map;
  {
    auto admin = v1::AdminService::NewStub(channel);
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + timeout);
    Status s = FromGrpcStatus(admin->GetClusterMap(&context, v1::GetClusterMapRequest(), &map));
    if (s.code() == Code::kUnavailable || s.code() == Code::kDeadlineExceeded || s.code() == Code::kCancelled) {
      return Status::Unavailable("the node did not answer within " + std::to_string(timeout.count()) +
                                 " ms: " + s.message());
    }
    STRATA_RETURN_IF_ERROR(s);
  }
  auto writer = std::make_unique<GrpcIngestWriter>(std::move(channel), options);
  if (map.ingest_accept_signal()) STRATA_RETURN_IF_ERROR(writer->AwaitAccepted(timeout));
  return std::unique_ptr<IngestWriter>(std::move(writer));
}

}  // namespace strata::client_internal
