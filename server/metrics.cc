#include "server/metrics.h"

#include <prometheus/collectable.h>
#include <prometheus/metric_family.h>

#include <cctype>
#include <string_view>
#include <utility>
#include <vector>

#include "common/mutex.h"

namespace strata {

namespace {

using prometheus::BuildCounter;
using prometheus::BuildGauge;
using prometheus::BuildHistogram;
using prometheus::Registry;

prometheus::Counter& MakeCounter(Registry& r, const std::string& node, const std::string& name, const std::string& help) {
  return BuildCounter().Name(name).Help(help).Labels({{"node", node}}).Register(r).Add({});
}

prometheus::Gauge& MakeGauge(Registry& r, const std::string& node, const std::string& name, const std::string& help) {
  return BuildGauge().Name(name).Help(help).Labels({{"node", node}}).Register(r).Add({});
}

prometheus::Histogram& MakeLatency(Registry& r, const std::string& node, const std::string& name, const std::string& help) {
  // 10 us .. ~10 s, exponential.
  prometheus::Histogram::BucketBoundaries b;
  for (double v = 1e-5; v < 20; v *= 4) b.push_back(v);
  return BuildHistogram().Name(name).Help(help).Labels({{"node", node}}).Register(r).Add({}, b);
}

// "rocksdb.estimate-num-keys" -> "estimate_num_keys": metric names allow [a-zA-Z0-9_] only.
std::string MetricName(std::string_view raw) {
  if (const size_t dot = raw.find('.'); dot != std::string_view::npos) raw.remove_prefix(dot + 1);
  std::string out;
  for (char c : raw) out += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  return out;
}

}  // namespace

// Gauges whose values are computed when Prometheus scrapes.
class Metrics::ScrapeCollectable : public prometheus::Collectable {
 public:
  explicit ScrapeCollectable(std::string node_id) : node_id_(std::move(node_id)) {}

  void Add(std::string prefix, std::function<std::map<std::string, double>()> fn) {
    MutexLock lock(&mu_);
    sources_.emplace_back(std::move(prefix), std::move(fn));
  }

  std::vector<prometheus::MetricFamily> Collect() const override {
    MutexLock lock(&mu_);
    std::vector<prometheus::MetricFamily> out;
    for (const auto& [prefix, fn] : sources_) {
      for (const auto& [suffix, value] : fn()) {
        prometheus::MetricFamily f;
        f.name = "strata_" + prefix + "_" + MetricName(suffix);
        f.help = "computed at scrape time";
        f.type = prometheus::MetricType::Gauge;
        prometheus::ClientMetric m;
        m.label.push_back({"node", node_id_});
        m.gauge.value = value;
        f.metric.push_back(std::move(m));
        out.push_back(std::move(f));
      }
    }
    return out;
  }

 private:
  const std::string node_id_;
  mutable Mutex mu_;
  std::vector<std::pair<std::string, std::function<std::map<std::string, double>()>>> sources_ GUARDED_BY(mu_);
};

Metrics::Metrics(const std::string& node_id)
    : registry_(std::make_shared<Registry>()),
      node_id_(node_id),
      bytes_served(MakeCounter(*registry_, node_id_, "strata_served_bytes_total", "Payload bytes sent to clients in batches")),
      samples_served(MakeCounter(*registry_, node_id_, "strata_served_samples_total", "Samples sent to clients")),
      batches_served(MakeCounter(*registry_, node_id_, "strata_served_batches_total", "Batch messages sent to clients")),
      streams_opened(MakeCounter(*registry_, node_id_, "strata_streams_opened_total", "Batch streams accepted")),
      active_streams(MakeGauge(*registry_, node_id_, "strata_active_streams", "Batch streams open now")),
      batch_build_seconds(MakeLatency(*registry_, node_id_, "strata_batch_build_seconds",
                                      "Time to read and assemble one batch message")),
      cache_hits(MakeCounter(*registry_, node_id_, "strata_cache_hits_total",
                             "Block uses by streams that found the block resident (read ahead or kept)")),
      cache_misses(MakeCounter(*registry_, node_id_, "strata_cache_misses_total",
                               "Block uses by streams that had to map the block in themselves")),
      cache_evictions(MakeCounter(*registry_, node_id_, "strata_cache_evictions_total",
                                  "Blocks dropped from memory to stay within the cache budget")),
      read_ahead_bytes(MakeCounter(*registry_, node_id_, "strata_read_ahead_bytes_total",
                                   "Shard bytes read in ahead of the streams that need them")),
      cache_resident_bytes(MakeGauge(*registry_, node_id_, "strata_cache_resident_bytes",
                                     "Shard bytes the block cache holds in memory (at most cache_bytes)")),
      cache_budget_bytes(MakeGauge(*registry_, node_id_, "strata_cache_budget_bytes",
                                   "Shard bytes the block cache may hold now: cache_bytes, or less where "
                                   "memory_budget leaves less")),
      samples_ingested(MakeCounter(*registry_, node_id_, "strata_ingested_samples_total", "Samples written by ingest")),
      bytes_ingested(MakeCounter(*registry_, node_id_, "strata_ingested_bytes_total", "Payload bytes written by ingest")),
      shards_written(MakeCounter(*registry_, node_id_, "strata_shards_written_total", "Shard files written")),
      versions_sealed(MakeCounter(*registry_, node_id_, "strata_versions_sealed_total", "Dataset versions sealed")),
      ingests_aborted(MakeCounter(*registry_, node_id_, "strata_ingests_aborted_total", "Ingests that ended without a seal")),
      active_ingests(MakeGauge(*registry_, node_id_, "strata_active_ingests", "Ingest sessions open now")),
      checksum_failures(MakeCounter(*registry_, node_id_, "strata_checksum_failures_total",
                                    "Records or files whose checksum did not match")),
      requests_rejected(MakeCounter(*registry_, node_id_, "strata_requests_rejected_total",
                                    "Requests refused for invalid input or state")),
      replication_backlog_bytes(MakeGauge(*registry_, node_id_, "strata_replication_backlog_bytes",
                                          "Shard bytes an async ingest has yet to copy to their holders")),
      replicated_bytes(MakeCounter(*registry_, node_id_, "strata_replicated_bytes_total",
                                   "Shard bytes pushed to holders at ingest")),
      repair_files_copied(MakeCounter(*registry_, node_id_, "strata_repair_files_copied_total",
                                      "Files copied here by repair or rebalance (repairs done)")),
      repair_bytes_copied(MakeCounter(*registry_, node_id_, "strata_repair_bytes_copied_total",
                                      "Bytes copied here by repair or rebalance")),
      files_released(MakeCounter(*registry_, node_id_, "strata_files_released_total",
                                 "Extra copies deleted once their holders had them")),
      scrubbed_bytes(MakeCounter(*registry_, node_id_, "strata_scrubbed_bytes_total",
                                 "Bytes re-verified by the background scrubber")),
      corruptions_found(MakeCounter(*registry_, node_id_, "strata_corruptions_found_total",
                                    "Local copies found corrupt (by the scrubber or a read) and quarantined")),
      proxied_records(MakeCounter(*registry_, node_id_, "strata_proxied_records_total",
                                  "Records served from a peer because the local copy was missing or corrupt")),
      map_epoch(MakeGauge(*registry_, node_id_, "strata_cluster_map_epoch", "Epoch of this node's cluster map")),
      nodes_up(MakeGauge(*registry_, node_id_, "strata_cluster_nodes_up", "Nodes up in this node's cluster map")),
      scrape_(std::make_shared<ScrapeCollectable>(node_id)) {
  strata_ = std::make_unique<StratumMetrics>(*registry_, node_id_);
}

Metrics::~Metrics() = default;

Status Metrics::StartExposer(const std::string& listen) {
  try {
    exposer_ = std::make_unique<prometheus::Exposer>(listen);
  } catch (const std::exception& e) {
    return Status::Unavailable("cannot serve metrics on " + listen + ": " + e.what());
  }
  exposer_->RegisterCollectable(registry_);
  exposer_->RegisterCollectable(scrape_);
  return Status::OK();
}

int Metrics::exposer_port() const {
  if (!exposer_) return 0;
  auto ports = exposer_->GetListeningPorts();
  return ports.empty() ? 0 : ports.front();
}

void Metrics::AddScrapeGauges(const std::string& prefix, std::function<std::map<std::string, double>()> fn) {
  scrape_->Add(prefix, std::move(fn));
}

}  // namespace strata
