#include "server/base/metrics.h"

#include <prometheus/collectable.h>
#include <prometheus/metric_family.h>

#include <cctype>
#include <string_view>
#include <utility>
#include <vector>

#include "common/mutex.h"
#include "server/base/health_http.h"

namespace strata {

namespace {

using prometheus::BuildCounter;
using prometheus::BuildGauge;
using prometheus::BuildHistogram;
using prometheus::Registry;

prometheus::Counter& MakeCounter(Registry& r, const std::string& node, const std::string& name,
                                 const std::string& help) {
  return BuildCounter().Name(name).Help(help).Labels({{"node", node}}).Register(r).Add({});
}

prometheus::Gauge& MakeGauge(Registry& r, const std::string& node, const std::string& name, const std::string& help) {
  return BuildGauge().Name(name).Help(help).Labels({{"node", node}}).Register(r).Add({});
}

prometheus::Histogram& MakeLatency(Registry& r, const std::string& node, const std::string& name,
                                   const std::string& help) {
  return BuildHistogram().Name(name).Help(help).Labels({{"node", node}}).Register(r).Add({}, Metrics::LatencyBuckets());
}

prometheus::Histogram& MakeReadLatency(prometheus::Family<prometheus::Histogram>& family, const std::string& source) {
  return family.Add({{"source", source}}, Metrics::LatencyBuckets());
}

constexpr const char* kRejectReasonNames[Metrics::kRejectReasons] = {
    "invalid_request",   // a request that does not parse or asks for the impossible
    "draining",          // the node is shutting down
    "too_many_streams",  // max_streams reached
    "stream_refused",    // the stream's dataset, version or plan was refused
    "ingest_refused",    // an ingest failed validation or storage
    "too_many_ingests",  // max_ingests reached
    "ingest_idle",       // an ingest's client sent nothing for ingest_idle_timeout_s: aborted
};

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
      bytes_served(
          MakeCounter(*registry_, node_id_, "strata_served_bytes_total", "Payload bytes sent to clients in batches")),
      samples_served(MakeCounter(*registry_, node_id_, "strata_served_samples_total", "Samples sent to clients")),
      batches_served(MakeCounter(*registry_, node_id_, "strata_served_batches_total",
                                 "Batches sent to clients (a node's share of a step, however many messages it took)")),
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
      cache_refilled_bytes(MakeCounter(*registry_, node_id_, "strata_cache_refilled_bytes_total",
                                       "Shard bytes the block cache dropped from the page cache, held there in "
                                       "small folios, to read them in again whole")),
      cache_resident_bytes(MakeGauge(*registry_, node_id_, "strata_cache_resident_bytes",
                                     "Shard bytes the block cache holds in memory (at most cache_bytes)")),
      cache_budget_bytes(MakeGauge(*registry_, node_id_, "strata_cache_budget_bytes",
                                   "Shard bytes the block cache may hold now: cache_bytes, or less where "
                                   "memory_budget leaves less")),
      samples_ingested(MakeCounter(*registry_, node_id_, "strata_ingested_samples_total", "Samples written by ingest")),
      bytes_ingested(
          MakeCounter(*registry_, node_id_, "strata_ingested_bytes_total", "Payload bytes written by ingest")),
      shards_written(MakeCounter(*registry_, node_id_, "strata_shards_written_total", "Shard files written")),
      versions_sealed(MakeCounter(*registry_, node_id_, "strata_versions_sealed_total", "Dataset versions sealed")),
      ingests_aborted(
          MakeCounter(*registry_, node_id_, "strata_ingests_aborted_total", "Ingests that ended without a seal")),
      active_ingests(MakeGauge(*registry_, node_id_, "strata_active_ingests", "Ingest sessions open now")),
      checksum_failures(MakeCounter(*registry_, node_id_, "strata_checksum_failures_total",
                                    "Records or files whose checksum did not match")),
      local_read_seconds(MakeReadLatency(
          BuildHistogram()
              .Name("strata_read_seconds")
              .Help("Read latency: source=local is one batch's reads of this node's own records, source=peer one "
                    "fetch of records from a peer")
              .Labels({{"node", node_id_}})
              .Register(*registry_),
          "local")),
      peer_fetch_seconds(MakeReadLatency(
          BuildHistogram().Name("strata_read_seconds").Labels({{"node", node_id_}}).Register(*registry_), "peer")),
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
      scrub_parity_mismatches(MakeCounter(*registry_, node_id_, "strata_scrub_parity_mismatches_total",
                                          "Parity files the scrubber found unlike the parity of their stripe's "
                                          "data shards (quarantined and rebuilt)")),
      proxied_records(MakeCounter(*registry_, node_id_, "strata_proxied_records_total",
                                  "Records served from a peer because the local copy was missing or corrupt")),
      planned_samples(MakeCounter(*registry_, node_id_, "strata_planned_samples_total",
                                  "Sample ids this node computed from epoch plans for its streams (streams "
                                  "whose client plans name their samples and add none)")),
      joined_steps(MakeCounter(*registry_, node_id_, "strata_joined_steps_total",
                               "Steps of one part sent in the message of the step before them, while the "
                               "stream's writes were backed up (Batch.following)")),
      degraded_rebuilds(MakeCounter(*registry_, node_id_, "strata_ec_rebuilds_total",
                                    "Erasure-coded chunks rebuilt here from K others (degraded reads and repair)")),
      map_epoch(MakeGauge(*registry_, node_id_, "strata_cluster_map_epoch", "Epoch of this node's cluster map")),
      nodes_up(MakeGauge(*registry_, node_id_, "strata_cluster_nodes_up", "Nodes up in this node's cluster map")),
      shards_under_replicated(MakeGauge(*registry_, node_id_, "strata_shards_under_replicated",
                                        "Shards with a holder that is not up, or that this node should hold and "
                                        "lacks (this node's view, updated each repair round)")),
      shards_missing(MakeGauge(*registry_, node_id_, "strata_shards_missing",
                               "Shards none of whose holders is up: no copy can be read (this node's view)")),
      repair_files_pending(MakeGauge(*registry_, node_id_, "strata_repair_files_pending",
                                     "Files placement gives this node that it does not hold yet (repair or "
                                     "rebalance to do)")),
      repair_pass_queued(MakeGauge(*registry_, node_id_, "strata_repair_pass_files_queued",
                                   "Files the current (or last) repair pass set out to copy here")),
      repair_pass_done(MakeGauge(*registry_, node_id_, "strata_repair_pass_files_done",
                                 "Files the current (or last) repair pass has copied here")),
      rebalance_pass_queued(MakeGauge(*registry_, node_id_, "strata_rebalance_pass_files_queued",
                                      "Extra copies the current (or last) rebalance pass found here")),
      rebalance_pass_done(MakeGauge(*registry_, node_id_, "strata_rebalance_pass_files_released",
                                    "Extra copies the current (or last) rebalance pass released")),
      scrape_(std::make_shared<ScrapeCollectable>(node_id)) {
  strata_ = std::make_unique<StratumMetrics>(*registry_, node_id_);
  datasets_ = std::make_unique<DatasetMetrics>(*registry_, node_id_);
  auto& rejected = BuildCounter()
                       .Name("strata_requests_rejected_total")
                       .Help("Requests refused, by reason")
                       .Labels({{"node", node_id_}})
                       .Register(*registry_);
  for (int i = 0; i < kRejectReasons; ++i) rejected_[i] = &rejected.Add({{"reason", kRejectReasonNames[i]}});
  peer_up_ = &BuildGauge()
                  .Name("strata_peer_up")
                  .Help("1 if the peer is up in this node's cluster map, 0 if it is a member that is not up")
                  .Labels({{"node", node_id_}})
                  .Register(*registry_);
  BuildGauge()
      .Name("strata_build_info")
      .Help("Always 1; the labels name the build")
      .Labels({{"node", node_id_}})
      .Register(*registry_)
      .Add({{"version", STRATA_VERSION}})
      .Set(1);
}

prometheus::Histogram::BucketBoundaries Metrics::LatencyBuckets() {
  // Literals, not products: 2.5 * 1e-5 is not the double nearest 2.5e-5.
  return {1e-5,   2.5e-5, 5e-5, 1e-4, 2.5e-4, 5e-4, 1e-3, 2.5e-3, 5e-3, 1e-2,
          2.5e-2, 5e-2,   0.1,  0.25, 0.5,    1,    2.5,  5,      10};
}

void Metrics::SetPeersUp(const std::map<std::string, bool>& up) {
  std::lock_guard<std::mutex> lock(peer_mu_);
  for (auto it = peer_up_series_.begin(); it != peer_up_series_.end();) {
    if (up.count(it->first) == 0) {
      peer_up_->Remove(it->second);
      it = peer_up_series_.erase(it);
    } else {
      ++it;
    }
  }
  for (const auto& [peer, is_up] : up) {
    auto [it, added] = peer_up_series_.emplace(peer, nullptr);
    if (added) it->second = &peer_up_->Add({{"peer", peer}});
    it->second->Set(is_up ? 1 : 0);
  }
}

Metrics::~Metrics() {
  if (exposer_) UnregisterReadiness(exposer_port());
}

Status Metrics::StartExposer(const std::string& listen) {
  try {
    exposer_ = std::make_unique<prometheus::Exposer>(listen, /*num_threads=*/2, HealthCallbacks());
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

void Metrics::SetReadiness(std::function<std::string()> not_ready) {
  if (exposer_) RegisterReadiness(exposer_port(), std::move(not_ready));
}

void Metrics::AddScrapeGauges(const std::string& prefix, std::function<std::map<std::string, double>()> fn) {
  scrape_->Add(prefix, std::move(fn));
}

}  // namespace strata
