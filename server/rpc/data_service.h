// DataService: streams of batches and ingests. Thin: each method unpacks the
// request, calls a component (StreamOpener, IngestCoordinator through the
// reactors), and maps the status at the edge (common/grpc_status.h).
#pragma once

#include <atomic>

#include "server/rpc/ingest_reactor.h"
#include "server/rpc/stream_reactor.h"
#include "server/rpc/work_reactor.h"
#include "server/serve/stream_memory.h"
#include "server/serve/stream_opener.h"
#include "strata/v1/data.grpc.pb.h"

namespace strata {

// StreamBatches and ServeWork are raw methods: they answer with byte buffers
// that reference the shard files (server/serve/wire_part.h); clients see
// ordinary Batch messages.
class DataServiceImpl final
    : public v1::DataService::WithCallbackMethod_Ingest<
          v1::DataService::WithRawCallbackMethod_StreamBatches<v1::DataService::WithRawCallbackMethod_ServeWork<
              v1::DataService::WithCallbackMethod_ReadStratumIndex<v1::DataService::Service>>>> {
 public:
  // What the service uses. Every pointer must outlive the service.
  struct Deps {
    boost::asio::thread_pool::executor_type executor;  // the node's I/O pool
    StreamLanes* lanes = nullptr;                      // the threads that build streams' batches
    const StreamOpener* streams = nullptr;
    IngestCoordinator* ingests = nullptr;
    Catalog* catalog = nullptr;  // resume cursors
    Metrics* metrics = nullptr;
    ActiveWork* active_streams = nullptr;
    ActiveWork* active_ingests = nullptr;
    uint32_t max_streams = 0;
    uint32_t max_ingests = 0;             // 0: no limit
    IngestWatch* ingest_watch = nullptr;  // may be null
    uint32_t prefetch_batches = 4;
    // The bytes all streams together may hold built and not yet sent: half of
    // memory_budget when one is set (the block cache adapts to the rest), else
    // 0, unbounded (each stream is still bounded by prefetch_batches).
    uint64_t stream_buffer_bytes = 0;
    bool tokens_checked = false;  // a token file is in force (server/rpc/auth.h)
  };
  explicit DataServiceImpl(const Deps& deps);

  // New calls are refused and open streams end after their current batch
  // (those waiting for their client's work at once).
  void BeginDrain() {
    draining_ = true;
    open_streams_.WakeAll();
  }

  grpc::ServerReadReactor<v1::IngestRequest>* Ingest(grpc::CallbackServerContext* context,
                                                     v1::IngestReply* reply) override;
  grpc::ServerWriteReactor<grpc::ByteBuffer>* StreamBatches(grpc::CallbackServerContext* context,
                                                            const grpc::ByteBuffer* request) override;
  grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>* ServeWork(grpc::CallbackServerContext* context) override;
  grpc::ServerUnaryReactor* ReadStratumIndex(grpc::CallbackServerContext* context,
                                             const v1::StratumIndexRequest* request,
                                             v1::StratumIndexChunk* reply) override;

 private:
  // StreamCalls::open: admits and opens a validated request's stream.
  grpc::Status OpenStream(const v1::StreamRequest& request, const std::string& peer,
                          std::unique_ptr<BatchStream>* stream, uint64_t* reserved);

  std::atomic<bool> draining_{false};
  const StreamOpener* const streams_;
  Metrics* const metrics_;
  const uint32_t max_streams_;
  StreamMemory stream_memory_;
  OpenStreams open_streams_;
  const StreamCalls stream_calls_;
  const IngestCalls ingest_calls_;
};

}  // namespace strata
