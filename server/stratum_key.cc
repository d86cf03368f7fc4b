#include "server/stratum_key.h"

#include <set>

namespace strata {

Result<StratumKeyer> StratumKeyer::Create(std::vector<std::string> stratify_by, std::string time_field,
                                          uint64_t time_bucket_seconds) {
  if (stratify_by.empty()) stratify_by.push_back("label");
  std::set<std::string> seen;
  for (const auto& k : stratify_by) {
    if (k.empty()) return Status::InvalidArgument("stratify_by holds an empty key");
    if (!seen.insert(k).second) return Status::InvalidArgument("stratify_by names '" + k + "' twice");
  }
  if (!time_field.empty() || time_bucket_seconds != 0) {
    return Status::Unimplemented("time buckets are not supported by this server yet");
  }
  StratumKeyer k;
  k.by_ = std::move(stratify_by);
  k.time_field_ = std::move(time_field);
  k.bucket_seconds_ = time_bucket_seconds;
  return k;
}

Result<std::string> StratumKeyer::KeyOf(const v1::Sample& sample) const {
  auto value = [&](const std::string& key) -> std::string {
    if (key == "label") return sample.label();
    auto it = sample.attributes().find(key);
    return it == sample.attributes().end() ? std::string() : it->second;
  };
  if (by_.size() == 1) return value(by_[0]);
  std::string out;
  for (const auto& k : by_) {
    if (!out.empty()) out += '|';
    out += k;
    out += '=';
    out += value(k);
  }
  return out;
}

}  // namespace strata
