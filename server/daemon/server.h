// stratad composed: the composition root. Open() builds every component of
// a node from its config, in dependency order, and wires each to exactly what
// it uses; nothing is served until all of them exist. Serve() then starts
// the metrics exposer and gRPC, joins the cluster under the bound address and
// starts the background loops (repair, scrub). Stop() undoes it in reverse:
// stop accepting, drain streams and ingests, cancel what is left after the
// drain timeout, stop the loops, then close storage.
//
// Thread-safety: Open, Serve and Stop from one thread. The components it
// hands out for tests are safe for concurrent use.
#pragma once

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <boost/asio/thread_pool.hpp>
#include <memory>
#include <string>

#include "server/base/active_work.h"
#include "server/base/config.h"
#include "server/base/metrics.h"
#include "server/base/periodic_task.h"
#include "server/base/security_config.h"
#include "server/base/stream_lanes.h"
#include "server/cluster/cluster_view.h"
#include "server/cluster/ingest_abort.h"
#include "server/cluster/ingest_coordinator.h"
#include "server/cluster/membership.h"
#include "server/cluster/multi_ingest.h"
#include "server/cluster/node_status.h"
#include "server/cluster/peer_clients.h"
#include "server/cluster/peer_disks.h"
#include "server/cluster/peer_records.h"
#include "server/cluster/repairer.h"
#include "server/cluster/replicator.h"
#include "server/cluster/scrubber.h"
#include "server/cluster/version_sync.h"
#include "server/cluster/writer_watch.h"
#include "server/rpc/admin_service.h"
#include "server/rpc/auth.h"
#include "server/rpc/data_service.h"
#include "server/rpc/ingest_watch.h"
#include "server/rpc/peer_service.h"
#include "server/serve/stream_opener.h"
#include "server/storage/block_cache.h"
#include "server/storage/catalog.h"
#include "server/storage/data_dir.h"
#include "server/storage/dataset_cache.h"
#include "server/storage/disk_space.h"
#include "server/storage/kv_store.h"
#include "server/storage/local_files.h"

namespace strata {

class Server {
 public:
  // Creates the data directory, opens RocksDB, recovers from a crash
  // (versions left ingesting are aborted and their files removed, temporary
  // files deleted) and builds every component. Serves nothing. IOError if the
  // directory is unusable or held by another stratad.
  static Result<std::unique_ptr<Server>> Open(const NodeConfig& config, const SecurityConfig& security = {});
  // Checks the security settings, then Open, then Serve. FailedPrecondition
  // for a non-loopback address without TLS and tokens (unless
  // security.insecure); InvalidArgument for tokens without TLS.
  static Result<std::unique_ptr<Server>> Start(const NodeConfig& config, const SecurityConfig& security = {});
  ~Server();

  // Binds metrics and gRPC, joins the cluster, starts the background loops.
  // Unavailable if an address cannot be bound. REQUIRES: called once.
  Status Serve();

  // The bound gRPC address ("127.0.0.1:43121" when the config said port 0).
  const std::string& address() const { return address_; }
  // The bound --peer-listen address, or "" when the peer service is on address().
  const std::string& peer_address() const { return peer_address_; }
  // The bound metrics address, or "" when metrics are off.
  const std::string& metrics_address() const { return metrics_address_; }

  // The core, for tests that drive it without a network.
  IngestCoordinator& ingests() { return *ingest_; }
  const StreamOpener& streams() const { return *streams_; }
  Catalog& catalog() { return *catalog_; }
  const DataDir& data_dir() const { return *dir_; }
  Metrics& metrics() { return *metrics_; }
  BlockCache& blocks() { return *blocks_; }

  // SIGHUP: re-reads the certificate files and the token file, and logs what
  // it re-read (never a token). Each part whose new files are bad keeps the
  // old ones in force, says so in the log, and its error is returned.
  Status Reload();

  // Drains and stops; blocks until storage is closed. Idempotent.
  Status Stop();

  // "" when the node is ready to serve: storage open, this node up in its own
  // cluster map (membership joined), not draining; else why not. Answers
  // /readyz; the gRPC health service (grpc.health.v1.Health, service "") says
  // SERVING from the end of Start until the drain begins.
  std::string NotReadyReason() const;

 private:
  Server(NodeConfig config, SecurityConfig security);
  Status Build();
  Status Recover();
  void SetServerOptions(grpc::ServerBuilder* builder) const;
  std::string AdvertisedPeerAddress() const;

  const NodeConfig config_;
  const SecurityConfig security_;
  // In the order they are built; each uses only those above it.
  std::unique_ptr<DataDir> dir_;
  std::unique_ptr<DiskSpace> disk_;
  std::unique_ptr<Metrics> metrics_;
  std::unique_ptr<KvStore> kv_;
  std::unique_ptr<Catalog> catalog_;
  std::unique_ptr<DatasetCache> cache_;
  std::unique_ptr<LocalFiles> files_;
  // The node's I/O pool (io_threads): shard reads and writes, ingest
  // messages, file chunks from peers, block read-ahead, and the start of a
  // stream's write when its writer is idle.
  std::unique_ptr<boost::asio::thread_pool> pool_;
  // The stream lanes (io_threads, one thread each): each stream's batch
  // builds, all on one lane (server/base/stream_lanes.h).
  std::unique_ptr<StreamLanes> lanes_;
  std::unique_ptr<BlockCache> blocks_;
  // The background pool (2 threads): the repair loop, whose rounds block on
  // peer calls and copies, paced by its timer.
  std::unique_ptr<boost::asio::thread_pool> background_;
  // The scrub executor (1 thread): the scrubber's file verification, which
  // blocks on the disk and its rate limit for a whole file at a time; its own
  // thread, so that no timer or other work waits behind it. The thread is
  // named strata-scrub and runs at background priority (nice 19,
  // server/base/thread_priority.h): it takes what serving leaves.
  std::unique_ptr<boost::asio::thread_pool> scrub_pool_;
  // The peer pool (2 threads): the peer service's disk and RocksDB work
  // (file chunks, record reads, version listings, PutVersion's import once
  // its asynchronous confirmation came). Apart from the I/O pool: a node
  // whose I/O threads are all busy (degraded-read rebuilds) still answers the
  // reads another node's builds wait on.
  std::unique_ptr<boost::asio::thread_pool> peer_pool_;
  // The admin pool (1 thread): deletes (`strata rm`), which block on the
  // broadcast of the tombstone to the other nodes.
  std::unique_ptr<boost::asio::thread_pool> admin_pool_;
  // The rebuild executor (1 thread): degraded reads' rebuilds of
  // erasure-coded shards (PeerRecords::FetchAsync), which block on K chunk
  // reads and the decode; one at a time anyway (PeerRecords' rebuild lock),
  // and off the I/O pool so that no stream's build waits behind one.
  std::unique_ptr<boost::asio::thread_pool> rebuild_pool_;
  std::unique_ptr<ClusterView> view_;
  std::unique_ptr<PeerClients> peers_;
  std::unique_ptr<PeerDisks> peer_disks_;
  std::unique_ptr<VersionSync> versions_;
  std::unique_ptr<VersionDeleter> deleter_;
  std::unique_ptr<Replicator> replicator_;
  std::unique_ptr<Repairer> repairer_;
  std::unique_ptr<PeerRecords> records_;
  std::unique_ptr<Scrubber> scrubber_;
  std::unique_ptr<ActiveWork> active_streams_;
  std::unique_ptr<ActiveWork> active_ingests_;
  std::unique_ptr<ActiveWork> active_copies_;  // replicas other nodes send here (PutFile)
  std::unique_ptr<NodeStatus> status_;
  std::unique_ptr<VersionNumbers> numbers_;  // before ingest_, which uses it
  std::unique_ptr<IngestCoordinator> ingest_;
  std::unique_ptr<MultiIngests> multi_ingests_;  // the home's side of ingests with several writers
  std::unique_ptr<WriterWatch> writer_watch_;    // ... and its watch over the writers' nodes
  std::unique_ptr<IngestAborter> aborter_;       // ... and an operator's abort (strata rm --abort)
  std::unique_ptr<PeriodicTask> heap_trim_;      // with a memory budget: free heap given back while over it
  std::unique_ptr<IngestWatch> ingest_watch_;    // ingest calls whose client went quiet; before data_
  std::unique_ptr<PeriodicTask> ingest_sweep_;   // ... swept for them
  std::unique_ptr<StreamOpener> streams_;
  std::unique_ptr<DataServiceImpl> data_;
  std::unique_ptr<AdminServiceImpl> admin_;
  std::unique_ptr<PeerServiceImpl> peer_;
  std::shared_ptr<AuthProcessor> auth_;
  std::unique_ptr<class TlsReloader> tls_;  // with TLS: the copies gRPC serves
  // Built in Serve(): membership needs the address gRPC bound.
  std::unique_ptr<Membership> membership_;
  std::unique_ptr<grpc::Server> grpc_;
  std::unique_ptr<grpc::Server> peer_grpc_;  // with --peer-listen: the peer service alone
  std::string address_;
  std::string peer_address_;  // bound --peer-listen address; empty without it
  std::string metrics_address_;
  bool stopped_ = false;
  std::atomic<bool> draining_{false};
};

// stratad's main: flags, config, logging, serve until SIGTERM or SIGINT.
// Returns the process exit status (0 after a clean shutdown).
int RunStratad(int argc, char** argv);

}  // namespace strata
