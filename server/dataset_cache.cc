#include "server/dataset_cache.h"

#include <algorithm>

namespace strata {

OpenVersion::OpenVersion(v1::VersionRecord record, std::vector<v1::ShardRecord> shards, const DataDir* dir)
    : record_(std::move(record)), shards_(std::move(shards)), dir_(dir), slots_(shards_.size()) {
  first_ids_.reserve(shards_.size());
  for (const auto& s : shards_) first_ids_.push_back(s.info().first_id());
  const v1::DatasetInfo& info = record_.info();
  shape_.name = info.name();
  shape_.version = info.version();
  shape_.num_samples = info.samples();
  shape_.strata.assign(info.stratum_counts().begin(), info.stratum_counts().end());
}

Result<std::shared_ptr<const ShardReader>> OpenVersion::Reader(size_t shard) const {
  Slot& slot = slots_[shard];
  std::lock_guard<std::mutex> lock(slot.mu);
  if (!slot.reader) {
    auto opened = ShardReader::Open(dir_->Absolute(shards_[shard].path()));
    if (!opened.ok()) return opened.status();
    slot.reader = std::shared_ptr<const ShardReader>(std::move(opened).value());
  }
  return slot.reader;
}

Status OpenVersion::Read(uint64_t id, RecordView* out) const {
  if (id >= shape_.num_samples || first_ids_.empty()) {
    return Status::OutOfRange("sample " + std::to_string(id) + " is past the end of " + shape_.name + "@" +
                              std::to_string(shape_.version));
  }
  const auto it = std::upper_bound(first_ids_.begin(), first_ids_.end(), id);
  const size_t shard = static_cast<size_t>(it - first_ids_.begin()) - 1;
  auto reader = Reader(shard);
  if (!reader.ok()) return reader.status();
  return reader.value()->Read(id - first_ids_[shard], out);
}

Result<std::shared_ptr<const OpenVersion>> DatasetCache::Open(const DatasetRef& ref) {
  Result<v1::VersionRecord> record = ref.version ? catalog_->GetVersion(ref.name, *ref.version)
                                                 : catalog_->LatestSealed(ref.name);
  if (!record.ok()) return record.status();
  const v1::DatasetInfo& info = record->info();
  if (info.state() != v1::VERSION_SEALED) {
    return Status::FailedPrecondition("dataset " + ref.ToString() + " is not sealed (state " +
                                      v1::VersionState_Name(info.state()) + "); only sealed versions can be streamed");
  }
  const auto key = std::make_pair(info.name(), info.version());
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = open_.find(key);
    if (it != open_.end()) return it->second;
  }
  auto shards = catalog_->ListShards(info.name(), info.version());
  if (!shards.ok()) return shards.status();
  auto version = std::make_shared<const OpenVersion>(std::move(record).value(), std::move(shards).value(), dir_);
  std::lock_guard<std::mutex> lock(mu_);
  return open_.try_emplace(key, std::move(version)).first->second;
}

}  // namespace strata
