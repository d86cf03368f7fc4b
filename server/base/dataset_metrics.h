// Served counters by dataset, with bounded cardinality:
//
//   strata_served_bytes_by_dataset_total{node, dataset}
//   strata_served_samples_by_dataset_total{node, dataset}
//       Payload bytes and samples a node streamed, per dataset name (not per
//       version). The first `limit` distinct names a node serves get their own
//       series (config `metrics_max_datasets`); later names are counted under
//       dataset="other", so a user who makes many datasets cannot make the
//       node export unboundedly many series.
//
// Thread-safety: safe for concurrent use. For() takes a lock; the counters it
// returns are updated lock-free, so a stream resolves its dataset once.
#pragma once

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/registry.h>

#include <map>
#include <string>
#include <string_view>

#include "common/mutex.h"

namespace strata {

class DatasetMetrics {
 public:
  static constexpr size_t kDefaultLimit = 64;

  struct Served {
    prometheus::Counter* bytes = nullptr;
    prometheus::Counter* samples = nullptr;
  };

  DatasetMetrics(prometheus::Registry& registry, const std::string& node_id);

  // How many names get their own series. Names that already have one keep it.
  void SetLimit(size_t limit);
  // The counters of `dataset` ("name" or "name@version": the version is not a label).
  Served For(std::string_view dataset);

 private:
  prometheus::Family<prometheus::Counter>& bytes_family_;
  prometheus::Family<prometheus::Counter>& samples_family_;
  const std::string node_id_;
  Mutex mu_;
  size_t limit_ GUARDED_BY(mu_) = kDefaultLimit;
  std::map<std::string, Served, std::less<>> series_ GUARDED_BY(mu_);
  Served other_ GUARDED_BY(mu_);
};

}  // namespace strata
