#include "server/serve/composition_recorder.h"

#include <algorithm>
#include <cmath>

namespace strata {

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
    if (p.stratum_index_size() != 0) {  // named once per part: counted by index first
      per_name_.assign(static_cast<size_t>(p.stratum_names_size()), 0);
      for (uint32_t i : p.stratum_index()) {
        if (i < per_name_.size()) ++per_name_[i];
      }
      for (size_t i = 0; i < per_name_.size(); ++i) {
        if (per_name_[i] != 0) counts_[std::string_view(p.stratum_names(static_cast<int>(i)))] += per_name_[i];
      }
      samples += static_cast<uint64_t>(p.stratum_index_size());
      continue;
    }
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
