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
#include <string>

#include "common/status.h"
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
  // Requests refused for bad input, by nothing finer (reasons are in the logs).
  prometheus::Counter& requests_rejected;
  // Cluster: replication, repair, scrubbing.
  prometheus::Gauge& replication_backlog_bytes;
  prometheus::Counter& replicated_bytes;
  prometheus::Counter& repair_files_copied;
  prometheus::Counter& repair_bytes_copied;
  prometheus::Counter& files_released;
  prometheus::Counter& scrubbed_bytes;
  prometheus::Counter& corruptions_found;
  prometheus::Counter& proxied_records;
  prometheus::Gauge& map_epoch;
  prometheus::Gauge& nodes_up;

  std::shared_ptr<prometheus::Registry> registry() const { return registry_; }

  // Per-stratum served samples and batch composition (server/base/stratum_metrics.h).
  StratumMetrics& strata() const { return *strata_; }

 private:
  class ScrapeCollectable;

  std::shared_ptr<ScrapeCollectable> scrape_;
  std::unique_ptr<prometheus::Exposer> exposer_;
  std::unique_ptr<StratumMetrics> strata_;
};

}  // namespace strata
