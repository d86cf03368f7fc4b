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

#include "server/batch_stream.h"
#include "server/catalog.h"
#include "server/config.h"
#include "server/data_dir.h"
#include "server/dataset_cache.h"
#include "server/ingest_session.h"
#include "server/kv_store.h"
#include "server/metrics.h"
#include "strata/v1/admin.pb.h"

namespace strata {

class Node {
 public:
  // Creates the data directory, opens RocksDB, and recovers from a crash:
  // versions left ingesting are aborted and their files removed, temporary
  // files are deleted. IOError if the directory is unusable or held by
  // another stratad.
  static Result<std::unique_ptr<Node>> Open(const NodeConfig& config);
  ~Node();

  const NodeConfig& config() const { return config_; }
  Metrics& metrics() { return metrics_; }
  Catalog& catalog() { return *catalog_; }
  const DataDir& data_dir() const { return dir_; }
  boost::asio::thread_pool& pool() { return pool_; }

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

  const NodeConfig config_;
  DataDir dir_;
  Metrics metrics_;
  std::unique_ptr<KvStore> kv_;
  std::unique_ptr<Catalog> catalog_;
  DatasetCache cache_;
  boost::asio::thread_pool pool_;
  const int64_t started_unix_ms_;
  std::atomic<uint32_t> active_streams_{0};
  std::atomic<uint32_t> active_ingests_{0};
  std::atomic<bool> closed_{false};
};

}  // namespace strata
