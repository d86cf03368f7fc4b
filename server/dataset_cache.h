// Sealed dataset versions opened for reading: their shape (for the epoch plan)
// and lazily opened shard readers, shared by every stream of that version.
//
// Thread-safety: DatasetCache and OpenVersion are safe for concurrent use.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "common/dataset_ref.h"
#include "common/epoch_plan.h"
#include "common/shard_format.h"
#include "server/catalog.h"
#include "server/data_dir.h"

namespace strata {

class OpenVersion {
 public:
  OpenVersion(v1::VersionRecord record, std::vector<v1::ShardRecord> shards, const DataDir* dir);

  const v1::VersionRecord& record() const { return record_; }
  const DatasetShape& shape() const { return shape_; }
  size_t num_shards() const { return shards_.size(); }

  // Reads sample `id`, verifying its record checksum. OutOfRange if id is past
  // the end; Corruption (never the bytes) if the record or shard is damaged;
  // IOError if a shard file cannot be opened.
  Status Read(uint64_t id, RecordView* out) const;

 private:
  struct Slot {
    std::mutex mu;
    std::shared_ptr<const ShardReader> reader;  // GUARDED_BY(mu)
  };
  Result<std::shared_ptr<const ShardReader>> Reader(size_t shard) const;

  v1::VersionRecord record_;
  std::vector<v1::ShardRecord> shards_;
  std::vector<uint64_t> first_ids_;  // ascending; shard i holds ids [first_ids_[i], first_ids_[i+1])
  DatasetShape shape_;
  const DataDir* dir_;
  mutable std::vector<Slot> slots_;
};

class DatasetCache {
 public:
  // `catalog` and `dir` must outlive the cache.
  DatasetCache(const Catalog* catalog, const DataDir* dir) : catalog_(catalog), dir_(dir) {}

  // The sealed version `ref` names (the latest sealed one when it names no
  // version). NotFound if the dataset or version does not exist;
  // FailedPrecondition if the version is not sealed.
  Result<std::shared_ptr<const OpenVersion>> Open(const DatasetRef& ref);

 private:
  const Catalog* catalog_;
  const DataDir* dir_;
  std::mutex mu_;
  // Sealed versions are immutable, so cached entries never go stale.
  std::map<std::pair<std::string, uint64_t>, std::shared_ptr<const OpenVersion>> open_;  // GUARDED_BY(mu_)
};

}  // namespace strata
