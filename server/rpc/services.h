// The gRPC services: thin. Each method unpacks the request, calls the node's
// core, and maps the status at the edge (common/grpc_status.h).
#pragma once

#include <atomic>

#include "server/daemon/node.h"
#include "server/serve/stream_memory.h"
#include "strata/v1/admin.grpc.pb.h"
#include "strata/v1/data.grpc.pb.h"

namespace strata {

// StreamBatches is a raw method: it answers with byte buffers that reference
// The bytes all streams together may hold built and not yet sent: half of
// memory_budget when one is set (the block cache adapts to the rest), else
// unbounded (each stream is still bounded by prefetch_batches).
uint64_t StreamBufferBudget(const NodeConfig& config);

// StreamBatches is a raw method: it answers with byte buffers that reference
// the shard files (server/serve/wire_part.h); clients see ordinary Batch messages.
class DataServiceImpl final
    : public v1::DataService::WithRawCallbackMethod_StreamBatches<v1::DataService::CallbackService> {
 public:
  // Streams share StreamBufferBudget(node->config()) bytes of built batches.
  explicit DataServiceImpl(Node* node) : node_(node), stream_memory_(StreamBufferBudget(node->config())) {}

  // New calls are refused and open streams end after their current batch.
  void BeginDrain() { draining_ = true; }

  grpc::ServerReadReactor<v1::IngestRequest>* Ingest(grpc::CallbackServerContext* context,
                                                     v1::IngestReply* reply) override;
  grpc::ServerWriteReactor<grpc::ByteBuffer>* StreamBatches(grpc::CallbackServerContext* context,
                                                            const grpc::ByteBuffer* request) override;

 private:
  Node* const node_;
  std::atomic<bool> draining_{false};
  StreamMemory stream_memory_;
};

class AdminServiceImpl final : public v1::AdminService::CallbackService {
 public:
  explicit AdminServiceImpl(Node* node) : node_(node) {}

  grpc::ServerUnaryReactor* ListDatasets(grpc::CallbackServerContext* context, const v1::ListDatasetsRequest* request,
                                         v1::ListDatasetsReply* reply) override;
  grpc::ServerUnaryReactor* DescribeDataset(grpc::CallbackServerContext* context,
                                            const v1::DescribeDatasetRequest* request,
                                            v1::DescribeDatasetReply* reply) override;
  grpc::ServerUnaryReactor* GetStatus(grpc::CallbackServerContext* context, const v1::StatusRequest* request,
                                      v1::StatusReply* reply) override;
  grpc::ServerUnaryReactor* GetClusterMap(grpc::CallbackServerContext* context,
                                          const v1::GetClusterMapRequest* request, v1::ClusterMap* reply) override;

 private:
  Node* const node_;
};

}  // namespace strata
