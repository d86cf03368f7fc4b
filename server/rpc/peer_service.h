// PeerService: what nodes ask of each other. Thin over the cluster components:
// heartbeats, whole-file push and pull (replication, repair), verified record
// reads for a peer that lacks a copy, and version metadata exchange.
#pragma once

#include <atomic>
#include <boost/asio/thread_pool.hpp>

#include "server/base/active_work.h"
#include "server/cluster/cluster_view.h"
#include "server/cluster/ingest_coordinator.h"
#include "server/cluster/multi_ingest.h"
#include "server/cluster/peer_records.h"
#include "server/cluster/repairer.h"
#include "server/cluster/version_sync.h"
#include "server/storage/data_dir.h"
#include "server/storage/disk_space.h"
#include "server/storage/local_files.h"
#include "strata/v1/cluster.grpc.pb.h"

namespace strata {

class PeerServiceImpl final : public v1::PeerService::CallbackService {
 public:
  // What the service reads and changes. Every pointer must outlive the service.
  struct Deps {
    // The node's peer pool: file opens and chunks, record reads, version
    // listings (RocksDB) and PutVersion's confirmation run there; no handler
    // touches the disk or RocksDB on a gRPC callback thread. Not the I/O
    // pool, whose stream builds may be waiting on this node's answers.
    boost::asio::thread_pool::executor_type executor;
    const ClusterView* view = nullptr;
    const DataDir* dir = nullptr;
    LocalFiles* files = nullptr;
    PeerRecords* records = nullptr;
    VersionSync* versions = nullptr;
    Repairer* repairer = nullptr;                 // kicked when an imported version changes the catalog
    PeerClients* peers = nullptr;                 // a PutVersion is confirmed with the version's coordinator
    const DiskSpace* disk = nullptr;              // Ping reports it; PutFile is refused below its low watermark
    MultiIngests* multi = nullptr;                // ingests with several writers, where this node is the home
    IngestCoordinator* coordinator = nullptr;     // joins them (required with multi)
    ActiveWork* active_copies = nullptr;          // PutFile calls in progress (a drain waits for them); optional
    const std::atomic<bool>* draining = nullptr;  // set: new PutFile calls are refused (UNAVAILABLE); optional
  };
  explicit PeerServiceImpl(Deps deps) : d_(std::move(deps)) {}

  grpc::ServerUnaryReactor* Ping(grpc::CallbackServerContext* context, const v1::PingRequest* request,
                                 v1::PingReply* reply) override;
  grpc::ServerReadReactor<v1::FileChunk>* PutFile(grpc::CallbackServerContext* context,
                                                  v1::PutFileReply* reply) override;
  grpc::ServerWriteReactor<v1::FileChunk>* GetFile(grpc::CallbackServerContext* context,
                                                   const v1::GetFileRequest* request) override;
  grpc::ServerUnaryReactor* ReadRecords(grpc::CallbackServerContext* context, const v1::ReadRecordsRequest* request,
                                        v1::ReadRecordsReply* reply) override;
  grpc::ServerUnaryReactor* PutVersion(grpc::CallbackServerContext* context, const v1::PutVersionRequest* request,
                                       v1::PutVersionReply* reply) override;
  grpc::ServerUnaryReactor* JoinIngest(grpc::CallbackServerContext* context, const v1::JoinIngestRequest* request,
                                       v1::JoinIngestReply* reply) override;
  grpc::ServerUnaryReactor* JoinOpenIngest(grpc::CallbackServerContext* context, const v1::JoinIngestRequest* request,
                                           v1::JoinIngestReply* reply) override;
  grpc::ServerUnaryReactor* CommitPart(grpc::CallbackServerContext* context, const v1::IngestPart* request,
                                       v1::CommitPartReply* reply) override;
  grpc::ServerUnaryReactor* FindIngest(grpc::CallbackServerContext* context, const v1::FindIngestRequest* request,
                                       v1::FindIngestReply* reply) override;
  grpc::ServerUnaryReactor* AbortIngest(grpc::CallbackServerContext* context, const v1::AbortIngestRequest* request,
                                        v1::AbortIngestReply* reply) override;
  grpc::ServerUnaryReactor* ListVersions(grpc::CallbackServerContext* context, const v1::ListVersionsRequest* request,
                                         v1::ListVersionsReply* reply) override;
  grpc::ServerUnaryReactor* ListLocalFiles(grpc::CallbackServerContext* context,
                                           const v1::ListLocalFilesRequest* request,
                                           v1::ListLocalFilesReply* reply) override;

 private:
  const Deps d_;
};

}  // namespace strata
