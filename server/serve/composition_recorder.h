// CompositionRecorder: counts the strata of each batch one stream serves and
// records them in the node's StratumMetrics (served samples per stratum, and
// the batch's deviation from the plan's target composition).
//
// Thread-safety: belongs to one stream.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "plan/epoch_plan.h"
#include "server/base/stratum_metrics.h"
#include "server/serve/wire_part.h"

namespace strata {

// The composition side of one stream: counts the strata of each step's batch
// and records them.
class CompositionRecorder {
 public:
  // `shares` as from Sampler::TargetShares() for `shape`.
  CompositionRecorder(const DatasetShape& shape, const std::vector<double>& shares, StratumMetrics* metrics);

  // The parts one server built for a step of `batch_size` samples.
  void Record(const std::vector<WirePart>& parts, uint32_t batch_size);

 private:
  StratumMetrics* metrics_;
  std::map<std::string, double, std::less<>> share_;       // by stratum key
  std::vector<std::pair<double, std::string>> by_share_;   // descending
  std::unordered_map<std::string_view, uint64_t> counts_;  // scratch: views of the parts' strata
  std::vector<uint64_t> per_name_;                         // scratch: one part's count per stratum_names entry
};

}  // namespace strata
