#include "server/stratum_metrics.h"

#include <algorithm>
#include <cmath>

#include "common/mutex.h"

namespace strata {

namespace {

prometheus::Histogram::BucketBoundaries DeviationBuckets() {
  return {0.5, 1, 1.5, 2, 3, 4, 6, 8, 12, 16, 24, 32, 64};
}

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

CompositionRecorder::CompositionRecorder(const DatasetShape& shape, const std::vector<double>& shares,
                                         StratumMetrics* metrics)
    : metrics_(metrics) {
  for (size_t i = 0; i < shape.strata.size() && i < shares.size(); ++i) {
    share_[shape.strata[i].key()] = shares[i];
    by_share_.emplace_back(shares[i], shape.strata[i].key());
  }
  std::sort(by_share_.begin(), by_share_.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
}

void CompositionRecorder::Record(const std::vector<WirePart>& parts, uint32_t batch_size) {
  counts_.clear();
  uint64_t samples = 0;
  for (const WirePart& part : parts) {
    const v1::Batch& p = part.message();
    for (const std::string& s : p.strata()) ++counts_[std::string_view(s)];
    samples += static_cast<uint64_t>(p.strata_size());
  }
  for (const auto& [stratum, n] : counts_) metrics_->AddServed(stratum, n);
  if (samples != batch_size || share_.empty()) return;  // only part of the batch came from here
  double worst = 0;
  for (const auto& [stratum, n] : counts_) {
    auto it = share_.find(stratum);
    const double target = it == share_.end() ? 0.0 : it->second * batch_size;
    worst = std::max(worst, std::fabs(static_cast<double>(n) - target));
  }
  // Strata absent from the batch are off by their whole target: the largest is enough.
  for (const auto& [share, stratum] : by_share_) {
    if (!counts_.contains(stratum)) {
      worst = std::max(worst, share * batch_size);
      break;
    }
  }
  metrics_->ObserveDeviation(worst);
}

}  // namespace strata
