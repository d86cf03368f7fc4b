#include "server/ingest/stratum_key.h"

#include <set>

#include "server/ingest/time_bucket.h"

namespace strata {

Result<StratumKeyer> StratumKeyer::Create(std::vector<std::string> stratify_by, std::string time_field,
                                          uint64_t time_bucket_seconds) {
  if (stratify_by.empty()) stratify_by.push_back("label");
  std::set<std::string> seen;
  for (const auto& k : stratify_by) {
    if (k.empty()) return Status::InvalidArgument("stratify_by holds an empty key");
    if (!seen.insert(k).second) return Status::InvalidArgument("stratify_by names '" + k + "' twice");
  }
  if (time_field.empty() != (time_bucket_seconds == 0)) {
    return Status::InvalidArgument("a time bucket needs both a timestamp field and a width");
  }
  StratumKeyer k;
  k.by_ = std::move(stratify_by);
  k.parts_ = k.by_;
  if (!time_field.empty() && !seen.contains(time_field)) k.parts_.push_back(time_field);
  k.time_field_ = std::move(time_field);
  k.bucket_seconds_ = time_bucket_seconds;
  return k;
}

Result<std::string> StratumKeyer::KeyOf(const v1::Sample& sample) const {
  auto raw = [&](const std::string& name) -> const std::string* {
    if (name == "label") return &sample.label();
    auto it = sample.attributes().find(name);
    return it == sample.attributes().end() ? nullptr : &it->second;
  };
  auto value = [&](const std::string& name) -> Result<std::string> {
    const std::string* v = raw(name);
    if (name != time_field_ || time_field_.empty()) return v ? *v : std::string();
    const std::string who = "sample '" + sample.key().substr(0, 200) + "'";
    if (v == nullptr) return Status::InvalidArgument(who + " has no timestamp attribute '" + name + "'");
    auto ts = ParseTimestampSeconds(*v);
    if (!ts.ok()) return Status::InvalidArgument(who + " attribute '" + name + "': " + ts.status().message());
    return FormatTimeBucket(ts.value(), bucket_seconds_);
  };
  if (parts_.size() == 1) return value(parts_[0]);
  std::string out;
  for (const auto& k : parts_) {
    auto v = value(k);
    if (!v.ok()) return v.status();
    if (!out.empty()) out += '|';
    out += k;
    out += '=';
    out += v.value();
  }
  return out;
}

}  // namespace strata
