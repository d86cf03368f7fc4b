// PeerRecords: single records between nodes, and what happens to a damaged
// local copy. It is the serving layer's RecordFetcher: a stream whose shard
// has no intact copy here reads the records from another holder (for an
// erasure-coded version whose shard's holder is down: rebuilds the shard here
// from K chunks of its stripe, server/cluster/ec_rebuild.h, a degraded read); a copy that
// fails its checksum is quarantined so that repair fetches a good one. On the
// other side, ReadLocal answers a peer's ReadRecords.
//
// Thread-safety: safe for concurrent use.
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "server/base/metrics.h"
#include "server/cluster/cluster_view.h"
#include "server/cluster/peer_clients.h"
#include "server/cluster/repairer.h"
#include "server/serve/batch_stream.h"
#include "server/storage/data_dir.h"
#include "server/storage/dataset_cache.h"
#include "server/storage/local_files.h"

namespace strata {

class PeerRecords final : public RecordFetcher {
 public:
  // Every pointer must outlive the PeerRecords, and `rebuilds` the last
  // FetchAsync's callback. `rebuilds` runs the degraded-read rebuilds that
  // FetchAsync starts (blocking: K chunk reads and the decode).
  PeerRecords(const ClusterView* view, PeerClients* peers, DatasetCache* cache, DataDir* dir, LocalFiles* files,
              Repairer* repairer, Metrics* metrics, boost::asio::any_io_executor rebuilds);

  // RecordFetcher: asks the members the view has up one after another, in
  // rank order, with asynchronous calls (10 s deadline each), then those it
  // has down (2 s each: the view may lag); a degraded read's rebuild runs on
  // `rebuilds`. More than InputLimits::kMaxRecordsPerRead records (what a
  // peer reads in one call) are asked in pieces at once. A holder's reply
  // may be a prefix (InputLimits::kMaxReadReplyBytes): the same holder is
  // asked for the rest, and a holder that fails partway leaves the next one
  // only the records still missing.
  void FetchAsync(const v1::FileRef& shard, std::vector<uint64_t> indexes, FetchDone done) override;
  void Quarantine(const v1::FileRef& file) override;

  // Reads record `index` of a local shard, verified, as raw bytes (for a
  // peer). NotFound if this node does not hold the shard; Corruption (and the
  // copy is quarantined) if it is damaged.
  Status ReadLocal(const v1::FileRef& shard, uint64_t index, std::string* raw);

 private:
  struct AsyncFetch;
  // Asks the next holder in f's order, or, past the last, ends f (a
  // degraded read first, for an erasure-coded shard).
  void AskNext(std::shared_ptr<AsyncFetch> f);
  // The holders to ask for `shard`, best first, and whether it is erasure
  // coded; sets *version when the version is open here.
  std::vector<std::string> Ranked(const v1::FileRef& shard, const v1::ClusterMap& map,
                                  std::shared_ptr<const OpenVersion>* version, bool* ec);
  // Rebuilds `shard` here from K chunks of its stripe unless it is here
  // already (one at a time), then reads `indexes` from it.
  Status DegradedRead(const OpenVersion& version, const v1::FileRef& shard, std::span<const uint64_t> indexes,
                      std::vector<std::string>* raw);
  // Reads records `indexes` of a local shard into *raw.
  Status ReadAllLocal(const v1::FileRef& shard, std::span<const uint64_t> indexes, std::vector<std::string>* raw);

  Mutex rebuild_mu_;  // one degraded-read rebuild at a time
  const ClusterView* const view_;
  PeerClients* const peers_;
  DatasetCache* const cache_;
  DataDir* const dir_;
  LocalFiles* const files_;
  Repairer* const repairer_;
  Metrics* const metrics_;
  const boost::asio::any_io_executor rebuilds_;
};

}  // namespace strata
