// A node's core: its storage (data directory, RocksDB catalog), open datasets,
// metrics and I/O thread pool, with the operations the RPC services expose.
// The core is what tests drive without a network; server.h puts gRPC on top.
//
// Thread-safety: safe for concurrent use. Close() must not race with other calls.
#pragma once

#include <atomic>
#include <boost/asio/thread_pool.hpp>
#include <memory>
#include <string>

#include "server/serve/batch_stream.h"
#include "server/storage/block_cache.h"
#include "server/storage/catalog.h"
#include "server/storage/local_files.h"
#include "server/cluster/membership.h"
#include "server/cluster/peer_clients.h"
#include "server/cluster/rate_limiter.h"
#include "server/base/config.h"
#include "server/storage/data_dir.h"
#include "server/storage/dataset_cache.h"
#include "server/ingest/ingest_session.h"
#include "server/storage/kv_store.h"
#include "server/base/metrics.h"
#include "strata/v1/admin.pb.h"
#include "strata/v1/cluster.pb.h"

namespace strata {

class Repairer;
class Replicator;
class Scrubber;

class Node : public RecordFetcher {
 public:
  // Creates the data directory, opens RocksDB, and recovers from a crash:
  // versions left ingesting are aborted and their files removed, temporary
  // files are deleted. IOError if the directory is unusable or held by
  // another stratad.
  static Result<std::unique_ptr<Node>> Open(const NodeConfig& config);
  ~Node() override;

  // Joins the cluster as `self` (its advertised address is known once the
  // gRPC port is bound) and starts the background work: membership,
  // replication, repair and rebalance, scrubbing.
  Status StartCluster(const v1::NodeInfo& self);

  const NodeConfig& config() const { return config_; }
  Metrics& metrics() { return metrics_; }
  Catalog& catalog() { return *catalog_; }
  const DataDir& data_dir() const { return dir_; }
  boost::asio::thread_pool& pool() { return pool_; }
  LocalFiles& local_files() { return files_; }
  PeerClients& peers() { return peers_; }
  DatasetCache& cache() { return cache_; }
  BlockCache& blocks() { return blocks_; }
  Replicator* replicator() { return replicator_.get(); }
  // This node's latest cluster map (this node alone before StartCluster).
  v1::ClusterMap cluster_map() const;

  // Reads record `index` of a local shard, verified, as raw bytes (for a peer).
  // NotFound if this node does not hold the shard; Corruption (and the copy is
  // quarantined) if it is damaged.
  Status ReadLocalRecord(const v1::FileRef& shard, uint64_t index, std::string* raw);
  // Merges version metadata from another node; removes local files of a
  // version that arrives aborted.
  Status ImportVersion(const v1::VersionMeta& meta);
  // This node's versions (sealed and aborted), optionally with shard records.
  Status ExportVersions(const v1::ListVersionsRequest& request, v1::ListVersionsReply* reply);
  // Broadcasts a version's metadata to every other node that is up (best
  // effort: anti-entropy in the repair loop catches up the rest).
  void BroadcastVersion(const std::string& name, uint64_t version);

  // The files placement gives this node (shards of sealed versions it holds,
  // and every sealed version's stratum index), and the local copies it no
  // longer gives it (for the repair loop).
  std::vector<v1::FileRef> DesiredFiles(const v1::ClusterMap& map) const;
  std::vector<v1::FileRef> ExtraFiles(const v1::ClusterMap& map) const;
  uint32_t ReplicationOf(const std::string& name, uint64_t version, const v1::ClusterMap& map) const;
  // Deletes a local copy (the repair loop decided it is extra).
  Status ReleaseFile(const v1::FileRef& file);
  RateLimiter* repair_limiter() { return &repair_limiter_; }

  // RecordFetcher: records from other holders, and quarantine of damaged copies.
  Status Fetch(const v1::FileRef& shard, std::span<const uint64_t> indexes, std::vector<std::string>* raw) override;
  void Quarantine(const v1::FileRef& file) override;

  Result<std::unique_ptr<IngestSession>> StartIngest(const v1::IngestOptions& options);
  Result<std::unique_ptr<BatchStream>> OpenStream(const v1::StreamRequest& request);

  Result<v1::ListDatasetsReply> ListDatasets(const v1::ListDatasetsRequest& request) const;
  Result<v1::DescribeDatasetReply> DescribeDataset(const v1::DescribeDatasetRequest& request) const;
  v1::StatusReply GetStatus() const;

  // Streams currently open, maintained by the RPC layer.
  std::atomic<uint32_t>& active_streams() { return active_streams_; }
  std::atomic<uint32_t>& active_ingests() { return active_ingests_; }

  // Waits for pool work to end and closes RocksDB. Idempotent.
  Status Close();

 private:
  Node(NodeConfig config, std::unique_ptr<KvStore> kv);
  Status Recover();
  void OnMapChange(const v1::ClusterMap& map);

  const NodeConfig config_;
  DataDir dir_;
  Metrics metrics_;
  std::unique_ptr<KvStore> kv_;
  std::unique_ptr<Catalog> catalog_;
  DatasetCache cache_;
  boost::asio::thread_pool pool_;
  BlockCache blocks_;  // after pool_: its read-ahead runs there
  PeerClients peers_;
  LocalFiles files_;
  RateLimiter repair_limiter_;
  std::unique_ptr<Membership> membership_;
  std::unique_ptr<Replicator> replicator_;
  std::unique_ptr<Repairer> repairer_;
  std::unique_ptr<Scrubber> scrubber_;
  mutable std::mutex map_mu_;
  v1::ClusterMap map_;  // GUARDED_BY(map_mu_)
  const int64_t started_unix_ms_;
  std::atomic<uint32_t> active_streams_{0};
  std::atomic<uint32_t> active_ingests_{0};
  std::atomic<bool> closed_{false};
};

}  // namespace strata
