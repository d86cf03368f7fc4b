#include "server/rpc/data_service.h"

#include <grpcpp/support/proto_buffer_reader.h>
#include <spdlog/spdlog.h>

#include "common/grpc_status.h"

namespace strata {

DataServiceImpl::DataServiceImpl(const Deps& deps)
    : streams_(deps.streams),
      metrics_(deps.metrics),
      max_streams_(deps.max_streams),
      stream_calls_{deps.executor, deps.active_streams, deps.metrics, deps.catalog, &draining_, deps.prefetch_batches},
      ingest_calls_{deps.executor, deps.active_ingests, deps.metrics, deps.ingests, &draining_} {}

grpc::ServerReadReactor<v1::IngestRequest>* DataServiceImpl::Ingest(grpc::CallbackServerContext* context,
                                                                    v1::IngestReply* reply) {
  return new IngestReactor(&ingest_calls_, reply, context->peer());
}

grpc::ServerWriteReactor<grpc::ByteBuffer>* DataServiceImpl::StreamBatches(grpc::CallbackServerContext* context,
                                                                           const grpc::ByteBuffer* raw) {
  v1::StreamRequest parsed;
  {
    grpc::ByteBuffer copy(*raw);  // shares the slices
    grpc::ProtoBufferReader reader(&copy);
    if (!parsed.ParseFromZeroCopyStream(&reader)) {
      metrics_->requests_rejected.Increment();
      return new RefusedStreamReactor(
          grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "the stream request is not a valid StreamRequest"));
    }
  }
  const v1::StreamRequest* request = &parsed;
  if (draining_) {
    return new RefusedStreamReactor(
        grpc::Status(grpc::StatusCode::UNAVAILABLE, "stratad is shutting down; retry on another node or later"));
  }
  if (stream_calls_.active->count() >= max_streams_) {
    return new RefusedStreamReactor(grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED,
                                                 "this node serves its maximum of " + std::to_string(max_streams_) +
                                                     " streams"));
  }
  auto stream = streams_->Open(*request);
  if (!stream.ok()) {
    metrics_->requests_rejected.Increment();
    spdlog::warn("stream {} from {} refused: {}", request->dataset(), context->peer(), stream.status().ToString());
    return new RefusedStreamReactor(ToGrpcStatus(stream.status()));
  }
  return new StreamReactor(&stream_calls_, std::move(stream).value(), *request, context->peer());
}

}  // namespace strata
