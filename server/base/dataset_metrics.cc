#include "server/base/dataset_metrics.h"

namespace strata {

DatasetMetrics::DatasetMetrics(prometheus::Registry& registry, const std::string& node_id)
    : bytes_family_(prometheus::BuildCounter()
                        .Name("strata_served_bytes_by_dataset_total")
                        .Help("Payload bytes streamed, per dataset name (the first metrics_max_datasets names; "
                              "later ones as \"other\")")
                        .Register(registry)),
      samples_family_(prometheus::BuildCounter()
                          .Name("strata_served_samples_by_dataset_total")
                          .Help("Samples streamed, per dataset name (the first metrics_max_datasets names; later "
                                "ones as \"other\")")
                          .Register(registry)),
      node_id_(node_id) {}

void DatasetMetrics::SetLimit(size_t limit) {
  MutexLock lock(&mu_);
  limit_ = limit;
}

DatasetMetrics::Served DatasetMetrics::For(std::string_view dataset) {
  const std::string_view name = dataset.substr(0, dataset.find('@'));
  MutexLock lock(&mu_);
  if (auto it = series_.find(name); it != series_.end()) return it->second;
  if (series_.size() < limit_ && name != "other") {
    std::string key(name);
    Served s{&bytes_family_.Add({{"node", node_id_}, {"dataset", key}}),
             &samples_family_.Add({{"node", node_id_}, {"dataset", key}})};
    series_.emplace(std::move(key), s);
    return s;
  }
  if (other_.bytes == nullptr) {
    other_ = {&bytes_family_.Add({{"node", node_id_}, {"dataset", "other"}}),
              &samples_family_.Add({{"node", node_id_}, {"dataset", "other"}})};
  }
  return other_;
}

}  // namespace strata
