// Metrics of balanced minibatches: what each stratum gets, and how far served
// batches stray from the plan's target composition.
//
//   strata_served_samples_by_stratum_total{node, stratum}
//       Samples served, per stratum key. Cardinality is capped: the first 256
//       distinct keys a node serves get a series each; later keys are counted
//       under stratum="other".
//   strata_batch_composition_deviation{node}  (histogram, samples)
//       Per rank batch this node served whole: the largest |count - target|
//       over the dataset's strata, target = batch size x the plan's share of
//       the stratum (natural shares for shuffle and stratified, the weights for
//       weighted). A stratified plan keeps it below 1; shuffle shows binomial
//       noise. In a cluster where a rank's batch comes from several nodes, a
//       node observes only the batches it served whole.
//   strata_batch_composition_deviation_recent{node}  (gauge, samples)
//       The largest of those deviations over the last 256 such batches.
//
// Thread-safety: safe for concurrent use. What one stream's batches hold is
// counted by its CompositionRecorder (server/serve/composition_recorder.h).
#pragma once

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/mutex.h"

namespace strata {

class StratumMetrics {
 public:
  static constexpr size_t kMaxStrata = 256;
  static constexpr size_t kRecent = 256;

  StratumMetrics(prometheus::Registry& registry, const std::string& node_id);

  void AddServed(std::string_view stratum, uint64_t samples);
  void ObserveDeviation(double deviation);

 private:
  prometheus::Family<prometheus::Counter>& served_family_;
  prometheus::Histogram& deviation_;
  prometheus::Gauge& recent_;
  const std::string node_id_;
  Mutex mu_;
  std::map<std::string, prometheus::Counter*, std::less<>> served_ GUARDED_BY(mu_);
  prometheus::Counter* other_ GUARDED_BY(mu_) = nullptr;
  std::array<double, kRecent> window_ GUARDED_BY(mu_){};
  size_t next_ GUARDED_BY(mu_) = 0;
};

}  // namespace strata
