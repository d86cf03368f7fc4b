#include "server/base/stratum_metrics.h"

#include <algorithm>
#include <cmath>

#include "common/mutex.h"

namespace strata {

namespace {

prometheus::Histogram::BucketBoundaries DeviationBuckets() { return {0.5, 1, 1.5, 2, 3, 4, 6, 8, 12, 16, 24, 32, 64}; }

}  // namespace

StratumMetrics::StratumMetrics(prometheus::Registry& registry, const std::string& node_id)
    : served_family_(prometheus::BuildCounter()
                         .Name("strata_served_samples_by_stratum_total")
                         .Help("Samples served, per stratum key (the first 256 keys; later ones as \"other\")")
                         .Register(registry)),
      deviation_(prometheus::BuildHistogram()
                     .Name("strata_batch_composition_deviation")
                     .Help("Per rank batch served whole: max over strata of |count - batch size x target share|")
                     .Labels({{"node", node_id}})
                     .Register(registry)
                     .Add({}, DeviationBuckets())),
      recent_(prometheus::BuildGauge()
                  .Name("strata_batch_composition_deviation_recent")
                  .Help("Largest batch composition deviation over the last 256 batches served whole")
                  .Labels({{"node", node_id}})
                  .Register(registry)
                  .Add({})),
      node_id_(node_id) {}

void StratumMetrics::AddServed(std::string_view stratum, uint64_t samples) {
  MutexLock lock(&mu_);
  auto it = served_.find(stratum);
  if (it == served_.end()) {
    if (served_.size() < kMaxStrata) {
      std::string key(stratum);
      prometheus::Counter* counter = &served_family_.Add({{"node", node_id_}, {"stratum", key}});
      it = served_.emplace(std::move(key), counter).first;
    } else {
      if (other_ == nullptr) other_ = &served_family_.Add({{"node", node_id_}, {"stratum", "other"}});
      other_->Increment(static_cast<double>(samples));
      return;
    }
  }
  it->second->Increment(static_cast<double>(samples));
}

void StratumMetrics::ObserveDeviation(double deviation) {
  deviation_.Observe(deviation);
  MutexLock lock(&mu_);
  window_[next_++ % kRecent] = deviation;
  recent_.Set(*std::max_element(window_.begin(), window_.end()));
}

}  // namespace strata
