// stratad's Prometheus metrics, all named strata_*, served on /metrics by a
// prometheus-cpp exposer. Every node exports the same families; the node id is
// a constant label.
//
// Thread-safety: counters, gauges and histograms are safe to update from any thread.
#pragma once

#include <prometheus/counter.h>
#include <prometheus/exposer.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "common/status.h"
#include "server/base/dataset_metrics.h"
#include "server/base/stratum_metrics.h"

namespace strata {

class Metrics {
 private:
  // Declared first: the metric references below are initialised from it.
  std::shared_ptr<prometheus::Registry> registry_;
  std::string node_id_;

 public:
  explicit Metrics(const std::string& node_id);
  ~Metrics();

  // Serves /metrics on `listen` ("host:port"). Unavailable if the address
  // cannot be bound. Calling it is optional (tests may skip it).
  Status StartExposer(const std::string& listen);
  // The bound port of the exposer (for listen addresses with port 0); 0 if none.
  int exposer_port() const;
  // The same port also answers /healthz (200 while it serves) and /readyz:
  // 200 when `not_ready` returns "", else 503 and its reason
  // (server/base/health_http.h). REQUIRES: StartExposer succeeded. `not_ready`
  // must stay callable until this Metrics is destroyed.
  void SetReadiness(std::function<std::string()> not_ready);

  // Adds gauges computed at scrape time, e.g. RocksDB figures. `fn` returns
  // name suffix -> value; each becomes strata_<prefix>_<suffix>.
  void AddScrapeGauges(const std::string& prefix, std::function<std::map<std::string, double>()> fn);

  // Serving.
  prometheus::Counter& bytes_served;
  prometheus::Counter& samples_served;
  prometheus::Counter& batches_served;
  prometheus::Counter& streams_opened;
  prometheus::Gauge& active_streams;
  prometheus::Histogram& batch_build_seconds;
  // The plan-aware block cache (server/storage/block_cache.h).
  prometheus::Counter& cache_hits;
  prometheus::Counter& cache_misses;
  prometheus::Counter& cache_evictions;
  prometheus::Counter& read_ahead_bytes;
  prometheus::Counter& cache_refilled_bytes;
  prometheus::Gauge& cache_resident_bytes;
  prometheus::Gauge& cache_budget_bytes;
  // Ingest.
  prometheus::Counter& samples_ingested;
  prometheus::Counter& bytes_ingested;
  prometheus::Counter& shards_written;
  prometheus::Counter& versions_sealed;
  prometheus::Counter& ingests_aborted;
  prometheus::Gauge& active_ingests;
  // Integrity.
  prometheus::Counter& checksum_failures;
  // Requests refused, by reason (a fixed set: the label's cardinality is bounded).
  enum class Reject {
    kInvalidRequest,
    kDraining,
    kTooManyStreams,
    kStreamRefused,
    kIngestRefused,
    kTooManyIngests,
    kIngestIdle
  };
  static constexpr int kRejectReasons = 7;
  void CountRejected(Reject reason) { rejected_[static_cast<int>(reason)]->Increment(); }
  double rejected(Reject reason) const { return rejected_[static_cast<int>(reason)]->Value(); }
  // Read latency: `local_read_seconds` is one batch's reads of this node's own
  // records (one observation per batch with local records); `peer_fetch_seconds`
  // is one fetch of records from a peer (one per round trip).
  prometheus::Histogram& local_read_seconds;
  prometheus::Histogram& peer_fetch_seconds;
  // Cluster: replication, repair, scrubbing.
  prometheus::Gauge& replication_backlog_bytes;
  prometheus::Counter& replicated_bytes;
  prometheus::Counter& repair_files_copied;
  prometheus::Counter& repair_bytes_copied;
  prometheus::Counter& files_released;
  prometheus::Counter& scrubbed_bytes;
  prometheus::Counter& corruptions_found;
  prometheus::Counter& scrub_parity_mismatches;  // parity files unlike their stripe's
  prometheus::Counter& proxied_records;
  prometheus::Counter& planned_samples;    // sample ids computed from epoch plans here
  prometheus::Counter& joined_steps;       // steps sent in the message of the step before (Batch.following)
  prometheus::Counter& degraded_rebuilds;  // erasure-coded chunks rebuilt here
  prometheus::Gauge& map_epoch;
  prometheus::Gauge& nodes_up;
  // Shards as this node sees them (set by each repair round):
  // under-replicated: a holder placement gives it is not up, or is this node
  // and lacks the file; missing: no holder is up (no copy can be read).
  prometheus::Gauge& shards_under_replicated;
  prometheus::Gauge& shards_missing;
  // Files placement gives this node that it does not hold yet (repair and
  // rebalance progress: falls to 0 as the repair loop copies them in).
  prometheus::Gauge& repair_files_pending;
  // The current repair pass (one round's pull; the figures stay after it
  // ends, until the next starts): files it set out to copy and has copied;
  // and the rebalance pass: extra copies found and released.
  prometheus::Gauge& repair_pass_queued;
  prometheus::Gauge& repair_pass_done;
  prometheus::Gauge& rebalance_pass_queued;
  prometheus::Gauge& rebalance_pass_done;

  // strata_peer_up{peer}: 1 if the peer is up in this node's map, 0 if it is a
  // member that is not up. Members that left the map lose their series.
  void SetPeersUp(const std::map<std::string, bool>& up);

  // The clean bucket boundaries of every strata latency histogram: 1, 2.5 and
  // 5 times each power of ten from 10 us to 10 s, in seconds.
  static prometheus::Histogram::BucketBoundaries LatencyBuckets();

  std::shared_ptr<prometheus::Registry> registry() const { return registry_; }

  // Per-stratum served samples and batch composition (server/base/stratum_metrics.h).
  StratumMetrics& strata() const { return *strata_; }
  // Served bytes and samples per dataset (server/base/dataset_metrics.h).
  DatasetMetrics& datasets() const { return *datasets_; }

 private:
  class ScrapeCollectable;

  std::shared_ptr<ScrapeCollectable> scrape_;
  std::unique_ptr<prometheus::Exposer> exposer_;
  std::unique_ptr<StratumMetrics> strata_;
  std::unique_ptr<DatasetMetrics> datasets_;
  prometheus::Counter* rejected_[kRejectReasons] = {};
  prometheus::Family<prometheus::Gauge>* peer_up_ = nullptr;
  std::mutex peer_mu_;
  std::map<std::string, prometheus::Gauge*> peer_up_series_;  // GUARDED_BY(peer_mu_)
};

}  // namespace strata
