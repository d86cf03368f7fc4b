#include "server/rpc/data_service.h"

#include <grpcpp/support/proto_buffer_reader.h>
#include <spdlog/spdlog.h>

#include "common/grpc_status.h"
#include "common/input_limits.h"
#include "server/cluster/request_validation.h"

namespace strata {

DataServiceImpl::DataServiceImpl(const Deps& deps)
    : streams_(deps.streams),
      metrics_(deps.metrics),
      max_streams_(deps.max_streams),
      stream_memory_(deps.stream_buffer_bytes),
      stream_calls_{
          deps.executor,
          deps.lanes,
          deps.active_streams,
          deps.metrics,
          deps.catalog,
          &draining_,
          deps.prefetch_batches,
          &stream_memory_,
          &open_streams_,
          [this](const v1::StreamRequest& request, const std::string& peer, std::unique_ptr<BatchStream>* stream,
                 uint64_t* reserved) { return OpenStream(request, peer, stream, reserved); }},
      ingest_calls_{deps.executor, deps.active_ingests, deps.metrics,     deps.ingests,
                    &draining_,    deps.tokens_checked, deps.max_ingests, deps.ingest_watch} {}

grpc::ServerReadReactor<v1::IngestRequest>* DataServiceImpl::Ingest(grpc::CallbackServerContext* context,
                                                                    v1::IngestReply* reply) {
  return new IngestReactor(&ingest_calls_, reply, context->peer(), context);
}

grpc::ServerUnaryReactor* DataServiceImpl::ReadStratumIndex(grpc::CallbackServerContext* context,
                                                            const v1::StratumIndexRequest* request,
                                                            v1::StratumIndexChunk* reply) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  if (Status valid = ValidateStratumIndexRequest(*request); !valid.ok()) {
    metrics_->CountRejected(Metrics::Reject::kInvalidRequest);
    reactor->Finish(ToGrpcStatus(valid));
    return reactor;
  }
  // A read of the catalog and of up to 4 MiB of a file: off gRPC's threads.
  boost::asio::post(stream_calls_.executor, [this, reactor, request, reply] {
    auto chunk = streams_->ReadStratumIndex(*request);
    if (chunk.ok()) *reply = std::move(chunk).value();
    reactor->Finish(ToGrpcStatus(chunk.status()));
  });
  return reactor;
}

grpc::ServerWriteReactor<grpc::ByteBuffer>* DataServiceImpl::StreamBatches(grpc::CallbackServerContext* context,
                                                                           const grpc::ByteBuffer* raw) {
  v1::StreamRequest parsed;
  {
    grpc::ByteBuffer copy(*raw);  // shares the slices
    grpc::ProtoBufferReader reader(&copy);
    if (!parsed.ParseFromZeroCopyStream(&reader)) {
      metrics_->CountRejected(Metrics::Reject::kInvalidRequest);
      return new RefusedStreamReactor(
          grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "the stream request is not a valid StreamRequest"));
    }
  }
  if (Status valid = ValidateStreamRequest(parsed); !valid.ok()) {
    metrics_->CountRejected(Metrics::Reject::kInvalidRequest);
    return new RefusedStreamReactor(ToGrpcStatus(valid));
  }
  std::unique_ptr<BatchStream> stream;
  uint64_t reserved = 0;
  const grpc::Status opened = OpenStream(parsed, context->peer(), &stream, &reserved);
  if (!opened.ok()) return new RefusedStreamReactor(opened);
  return new StreamReactor(&stream_calls_, std::move(stream), std::move(parsed), context->peer(), reserved);
}

grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>* DataServiceImpl::ServeWork(
    grpc::CallbackServerContext* context) {
  return new WorkReactor(&stream_calls_, context->peer());
}

grpc::Status DataServiceImpl::OpenStream(const v1::StreamRequest& request, const std::string& peer,
                                         std::unique_ptr<BatchStream>* out, uint64_t* reserved) {
  if (draining_) {
    metrics_->CountRejected(Metrics::Reject::kDraining);
    return grpc::Status(grpc::StatusCode::UNAVAILABLE, "stratad is shutting down; retry on another node or later");
  }
  if (stream_calls_.active->count() >= max_streams_) {
    metrics_->CountRejected(Metrics::Reject::kTooManyStreams);
    return grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED,
                        "this node serves its maximum of " + std::to_string(max_streams_) + " streams");
  }
  auto stream = streams_->Open(request);
  if (!stream.ok()) {
    metrics_->CountRejected(stream.status().code() == Code::kInvalidArgument ? Metrics::Reject::kInvalidRequest
                                                                             : Metrics::Reject::kStreamRefused);
    spdlog::warn("stream {} from {} refused: {}", QuotePrefix(request.dataset()), peer, stream.status().ToString());
    return ToGrpcStatus(stream.status());
  }
  const v1::DatasetInfo& info = stream.value()->version().record().info();
  const uint64_t reserve = EstimateStepBytes(info.bytes(), info.samples(), request.batch_size());
  if (!stream_memory_.TryAcquire(reserve)) {
    metrics_->CountRejected(Metrics::Reject::kStreamRefused);
    return grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED,
                        "this node's streams hold " + std::to_string(stream_memory_.used() >> 20) +
                            " MiB of their limit of " + std::to_string(stream_memory_.budget() >> 20) +
                            " MiB (half of memory_budget); a batch of this stream " + "needs about " +
                            std::to_string(reserve >> 10) + " KiB more: retry later or on another node");
  }
  *out = std::move(stream).value();
  *reserved = reserve;
  return grpc::Status::OK;
}

}  // namespace strata
