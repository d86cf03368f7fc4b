#include "server/rpc/services.h"

#include <grpcpp/support/proto_buffer_reader.h>

#include <spdlog/spdlog.h>

#include "common/grpc_status.h"
#include "common/input_limits.h"
#include "server/rpc/ingest_reactor.h"
#include "server/rpc/request_validation.h"
#include "server/rpc/stream_reactor.h"

namespace strata {

namespace {

// Finishes a unary call with `result`'s status, moving its value into *reply.
template <typename T>
grpc::ServerUnaryReactor* FinishUnary(grpc::CallbackServerContext* context, Result<T> result, T* reply) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  if (result.ok()) {
    *reply = std::move(result).value();
    reactor->Finish(grpc::Status::OK);
  } else {
    reactor->Finish(ToGrpcStatus(result.status()));
  }
  return reactor;
}

}  // namespace

grpc::ServerReadReactor<v1::IngestRequest>* DataServiceImpl::Ingest(grpc::CallbackServerContext* context,
                                                                    v1::IngestReply* reply) {
  return new IngestReactor(node_, &draining_, reply, context->peer(), context);
}

grpc::ServerWriteReactor<grpc::ByteBuffer>* DataServiceImpl::StreamBatches(grpc::CallbackServerContext* context,
                                                                           const grpc::ByteBuffer* raw) {
  v1::StreamRequest parsed;
  {
    grpc::ByteBuffer copy(*raw);  // shares the slices
    grpc::ProtoBufferReader reader(&copy);
    if (!parsed.ParseFromZeroCopyStream(&reader)) {
      node_->metrics().CountRejected(Metrics::Reject::kInvalidRequest);
      return new RefusedStreamReactor(
          grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "the stream request is not a valid StreamRequest"));
    }
  }
  const v1::StreamRequest* request = &parsed;
  if (Status valid = ValidateStreamRequest(parsed); !valid.ok()) {
    node_->metrics().requests_rejected.Increment();
    return new RefusedStreamReactor(ToGrpcStatus(valid));
  }
  if (draining_) {
    node_->metrics().CountRejected(Metrics::Reject::kDraining);
    return new RefusedStreamReactor(
        grpc::Status(grpc::StatusCode::UNAVAILABLE, "stratad is shutting down; retry on another node or later"));
  }
  if (node_->active_streams().load() >= node_->config().max_streams) {
    node_->metrics().CountRejected(Metrics::Reject::kTooManyStreams);
    return new RefusedStreamReactor(grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED,
                                                 "this node serves its maximum of " +
                                                     std::to_string(node_->config().max_streams) + " streams"));
  }
  auto stream = node_->OpenStream(*request);
  if (!stream.ok()) {
    node_->metrics().CountRejected(stream.status().code() == Code::kInvalidArgument
                                       ? Metrics::Reject::kInvalidRequest
                                       : Metrics::Reject::kStreamRefused);
    spdlog::warn("stream {} from {} refused: {}", QuotePrefix(request->dataset()), context->peer(),
                 stream.status().ToString());
    return new RefusedStreamReactor(ToGrpcStatus(stream.status()));
  }
  const v1::DatasetInfo& info = stream.value()->version().record().info();
  const uint64_t reserve = EstimateStepBytes(info.bytes(), info.samples(), request->batch_size());
  if (!stream_memory_.TryAcquire(reserve)) {
    node_->metrics().requests_rejected.Increment();
    return new RefusedStreamReactor(grpc::Status(
        grpc::StatusCode::RESOURCE_EXHAUSTED,
        "this node's streams hold " + std::to_string(stream_memory_.used() >> 20) + " MiB of their limit of " +
            std::to_string(stream_memory_.budget() >> 20) + " MiB (half of memory_budget); a batch of this stream " +
            "needs about " + std::to_string(reserve >> 10) + " KiB more: retry later or on another node"));
  }
  return new StreamReactor(node_, &draining_, std::move(stream).value(), *request, context->peer(), &stream_memory_,
                           reserve);
}

uint64_t StreamBufferBudget(const NodeConfig& config) { return config.memory_budget / 2; }

grpc::ServerUnaryReactor* AdminServiceImpl::ListDatasets(grpc::CallbackServerContext* context,
                                                         const v1::ListDatasetsRequest* request,
                                                         v1::ListDatasetsReply* reply) {
  return FinishUnary(context, node_->ListDatasets(*request), reply);
}

grpc::ServerUnaryReactor* AdminServiceImpl::DescribeDataset(grpc::CallbackServerContext* context,
                                                            const v1::DescribeDatasetRequest* request,
                                                            v1::DescribeDatasetReply* reply) {
  if (Status valid = ValidateDescribeRequest(*request); !valid.ok()) {
    return FinishUnary(context, Result<v1::DescribeDatasetReply>(valid), reply);
  }
  return FinishUnary(context, node_->DescribeDataset(*request), reply);
}

grpc::ServerUnaryReactor* AdminServiceImpl::GetStatus(grpc::CallbackServerContext* context,
                                                      const v1::StatusRequest* /*request*/, v1::StatusReply* reply) {
  return FinishUnary(context, Result<v1::StatusReply>(node_->GetStatus()), reply);
}

grpc::ServerUnaryReactor* AdminServiceImpl::GetClusterMap(grpc::CallbackServerContext* context,
                                                          const v1::GetClusterMapRequest* /*request*/,
                                                          v1::ClusterMap* reply) {
  return FinishUnary(context, Result<v1::ClusterMap>(node_->cluster_map()), reply);
}

}  // namespace strata
