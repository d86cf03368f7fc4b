#include "server/rpc/work_reactor.h"

#include <grpcpp/support/proto_buffer_reader.h>
#include <spdlog/spdlog.h>

#include "common/grpc_status.h"
#include "server/cluster/request_validation.h"

namespace strata {

namespace {

// Parses a WorkRequest; InvalidArgument if the bytes are not one.
Status ParseWorkRequest(grpc::ByteBuffer* raw, v1::WorkRequest* out) {
  grpc::ProtoBufferReader reader(raw);
  if (!out->ParseFromZeroCopyStream(&reader)) {
    return Status::InvalidArgument("a ServeWork message is not a valid WorkRequest");
  }
  return Status::OK();
}

}  // namespace

WorkReactor::WorkReactor(const StreamCalls* calls, std::string peer) : BatchSender(calls, std::move(peer)) {
  StartRead(&in_);
}

void WorkReactor::Open(bool ok) {
  // Only this reaction runs now: nothing else touches the reactor before Start.
  v1::WorkRequest message;
  Status s =
      ok ? ParseWorkRequest(&in_, &message) : Status::InvalidArgument("ServeWork ended before its first message");
  if (s.ok()) s = ValidateWorkRequest(message, /*first=*/true);
  if (!s.ok()) {
    if (ok) calls()->metrics->CountRejected(Metrics::Reject::kInvalidRequest);
    Finish(ToGrpcStatus(s));
    return;
  }
  std::unique_ptr<BatchStream> stream;
  uint64_t reserved = 0;
  const grpc::Status opened = calls()->admit(message.open(), peer(), &stream, &reserved);
  if (!opened.ok()) {
    Finish(opened);
    return;
  }
  Start(std::move(stream), std::move(*message.mutable_open()), reserved, /*more_work=*/true);
  StartRead(&in_);
  ReadStarted();
}

void WorkReactor::OnReadDone(bool ok) {
  TakeBackFromGrpc(this);
  if (!started()) {
    Open(ok);
    return;
  }
  if (!ok) {  // the client half-closed (or the call ended)
    InputClosed();
    return;
  }
  v1::WorkRequest message;
  Status s = ParseWorkRequest(&in_, &message);
  if (s.ok()) s = ValidateWorkRequest(message, /*first=*/false);
  if (!s.ok()) calls()->metrics->CountRejected(Metrics::Reject::kInvalidRequest);
  if (GiveWork(std::move(*message.mutable_more()), s)) {
    StartRead(&in_);
    ReadStarted();
  }
}

}  // namespace strata
